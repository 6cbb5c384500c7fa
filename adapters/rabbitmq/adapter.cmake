# RabbitMQ over AMQP 0-9-1 (rabbitmq-c); the managed broker is Debian's rabbitmq-server.
mw_adapter(rabbitmq ORDER 150 SPEC rabbitmq_adapter_spec HEADER rabbitmq.h
  PACKAGES librabbitmq-dev
  MODULES librabbitmq
  SERVERS rabbitmq-server
  SERVICES rabbitmq-server
  TESTS_COST 530
  # The --crash cases' time is the broker's restart and recovery, the 3-node cluster's its
  # nodes' starts and the election; the client's reconnect runs under the sanitizers in the
  # broker's restart.
  SANITIZER_SKIP "rabbitmq: --crash*" "rabbitmq cluster: 3 nodes*")
