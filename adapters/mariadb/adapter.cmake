mw_adapter(mariadb ORDER 140 SPEC mariadb_adapter_spec HEADER mariadb.h
  PACKAGES libmariadb-dev
  MODULES libmariadb
  SERVERS mariadb-server
  SERVICES mariadb
  TESTS_COST 98
  # The --crash cases' time is the server's restart and recovery (see adapters/postgres).
  SANITIZER_SKIP "mariadb: --crash*")
