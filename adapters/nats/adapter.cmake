# NATS core and JetStream through the NATS C client (nats.c); the managed server is Debian's nats-server.
mw_adapter(nats ORDER 160 SPEC nats_adapter_spec HEADER nats_spec.h
  PACKAGES libnats-dev
  MODULES libnats
  SERVERS nats-server
  SERVICES nats-server
  # Core NATS's at-most-once subscriber must keep up with the publishers.
  TESTS_ALONE)
