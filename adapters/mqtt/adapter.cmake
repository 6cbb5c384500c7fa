# MQTT through libmosquitto; the managed broker is Debian's mosquitto.
mw_optional_adapter(mqtt libmosquitto-dev libmosquitto)
# The server it starts: the .deb recommends it when the adapter is built (cmake/install.cmake).
set_property(GLOBAL PROPERTY MWBENCH_SERVER_PACKAGE_mqtt mosquitto)
