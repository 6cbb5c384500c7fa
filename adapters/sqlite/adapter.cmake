mw_optional_adapter(sqlite libsqlite3-dev sqlite3)
