# RabbitMQ over AMQP 0-9-1 (rabbitmq-c); the managed broker is Debian's rabbitmq-server.
mw_optional_adapter(rabbitmq librabbitmq-dev librabbitmq)
# The server it starts: the .deb recommends it when the adapter is built (cmake/install.cmake).
set_property(GLOBAL PROPERTY MWBENCH_SERVER_PACKAGE_rabbitmq rabbitmq-server)
