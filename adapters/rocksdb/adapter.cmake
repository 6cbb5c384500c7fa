mw_optional_adapter(rocksdb librocksdb-dev rocksdb)
