# MQTT through libmosquitto; the managed broker is Debian's mosquitto.
mw_adapter(mqtt ORDER 180 SPEC mqtt_adapter_spec HEADER mqtt.h
  PACKAGES libmosquitto-dev
  MODULES libmosquitto
  SERVERS mosquitto
  SERVICES mosquitto
  TESTS_COST 35)
