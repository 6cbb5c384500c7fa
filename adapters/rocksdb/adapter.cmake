mw_adapter(rocksdb ORDER 100 SPEC rocksdb_adapter_spec HEADER rocksdb.h
  PACKAGES librocksdb-dev
  MODULES rocksdb)
