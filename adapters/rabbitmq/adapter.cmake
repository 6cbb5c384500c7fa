# RabbitMQ over AMQP 0-9-1 (rabbitmq-c); the managed broker is Debian's rabbitmq-server.
mw_optional_adapter(rabbitmq librabbitmq-dev librabbitmq)
# The server it starts, recommended by the .deb (cmake/install.cmake).
set_property(GLOBAL APPEND PROPERTY MWBENCH_RECOMMENDS rabbitmq-server)
