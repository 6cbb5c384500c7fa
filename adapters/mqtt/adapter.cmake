# MQTT through libmosquitto; the managed broker is Debian's mosquitto.
mw_optional_adapter(mqtt libmosquitto-dev libmosquitto)
