mw_optional_adapter(lmdb liblmdb-dev lmdb)
