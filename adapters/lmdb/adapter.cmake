mw_adapter(lmdb ORDER 90 SPEC lmdb_adapter_spec HEADER lmdb.h
  PACKAGES liblmdb-dev
  MODULES lmdb
  TOOLS lmdb-utils)
