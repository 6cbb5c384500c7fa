# NATS core and JetStream through the NATS C client (nats.c); the managed server is Debian's nats-server.
mw_optional_adapter(nats libnats-dev libnats)
