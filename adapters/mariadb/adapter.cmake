mw_optional_adapter(mariadb libmariadb-dev libmariadb)
