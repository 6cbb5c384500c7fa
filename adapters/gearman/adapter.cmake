mw_optional_adapter(gearman libgearman-dev gearmand)
# The server it starts: the .deb recommends it when the adapter is built (cmake/install.cmake).
set_property(GLOBAL PROPERTY MWBENCH_SERVER_PACKAGE_gearman gearman-job-server)
