mw_optional_adapter(postgres libpq-dev libpq)
