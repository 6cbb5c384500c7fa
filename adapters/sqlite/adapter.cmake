mw_adapter(sqlite ORDER 20 SPEC sqlite_adapter_spec HEADER sqlite.h
  PACKAGES libsqlite3-dev
  MODULES sqlite3
  TOOLS sqlite3)
