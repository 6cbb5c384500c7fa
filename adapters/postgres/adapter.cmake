mw_optional_adapter(postgres libpq-dev libpq)
# The server it starts, recommended by the .deb (cmake/install.cmake).
set_property(GLOBAL APPEND PROPERTY MWBENCH_RECOMMENDS postgresql)
