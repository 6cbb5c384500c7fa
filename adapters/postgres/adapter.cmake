mw_adapter(postgres ORDER 130 SPEC postgres_adapter_spec HEADER postgres.h
  PACKAGES libpq-dev
  MODULES libpq
  SERVERS postgresql
  TOOLS postgresql-contrib
  SERVICES postgresql
  TESTS_COST 131
  # The --crash cases' minute is the server's restart and recovery, the replica's kill-primary
  # cases' (tests/test_faults.cpp) its start and promotion: their client code (the crash plan, the
  # ledger's check, the failover) runs under the sanitizers in the redis, sqlite and fake-store
  # crash cases and the switchover case.
  SANITIZER_SKIP "postgres: --crash*" "faults postgres replica: asynchronous*"
    "faults postgres replica: remote_apply*")
