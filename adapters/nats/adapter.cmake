# NATS core and JetStream through the NATS C client (nats.c); the managed server is Debian's nats-server.
mw_optional_adapter(nats libnats-dev libnats)
# The server it starts: the .deb recommends it when the adapter is built (cmake/install.cmake).
set_property(GLOBAL PROPERTY MWBENCH_SERVER_PACKAGE_nats nats-server)
