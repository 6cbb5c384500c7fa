# Its own protocol client (adapters/beanstalkd, on adapters/conn): no library.
mw_adapter(beanstalkd ORDER 170 SPEC beanstalkd_adapter_spec HEADER beanstalkd.h
  SERVERS beanstalkd
  SERVICES beanstalkd
  TESTS_COST 77)
