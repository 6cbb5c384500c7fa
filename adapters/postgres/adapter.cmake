mw_optional_adapter(postgres libpq-dev libpq)
# The server it starts: the .deb recommends it when the adapter is built (cmake/install.cmake).
set_property(GLOBAL PROPERTY MWBENCH_SERVER_PACKAGE_postgres postgresql)
