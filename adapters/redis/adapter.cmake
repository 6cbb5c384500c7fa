# Its own RESP client (adapters/redis, on adapters/conn): no library beyond the core's. Its tests
# check what it wrote through hiredis, an independent client (the core's tests use it too, so
# libhiredis-dev is the core's package: scripts/setup, CMakeLists.txt).
mw_adapter(redis ORDER 30 SPEC redis_adapter_spec HEADER redis.h
  SERVERS redis-server
  TOOLS redis-tools
  SERVICES redis-server
  # A 1 ms p99 and a SIGSTOPped server judged against the wall clock.
  TESTS_COST 46 TESTS_ALONE
  # Sentinel's kill-primary cases (tests/test_faults.cpp): their time is the servers' starts and
  # elections; the client's failover code runs under the sanitizers in the switchover case.
  SANITIZER_SKIP "faults redis sentinel: kill-primary*" "faults redis sentinel: with WAIT*")
