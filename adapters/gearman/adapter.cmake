mw_adapter(gearman ORDER 50 SPEC gearman_adapter_spec HEADER gearman.h
  PACKAGES libgearman-dev
  MODULES gearmand
  SERVERS gearman-job-server
  TOOLS gearman-tools
  SERVICES gearman-job-server
  TESTS_COST 62)
