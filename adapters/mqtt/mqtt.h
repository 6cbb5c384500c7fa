// MQTT as a queue (libmosquitto): produce, consume and roundtrip of src/queue/queue.h over topics of
// the job's own, QoS 0, 1 or 2, consumers in a shared subscription, clean or persistent sessions;
// a managed mosquitto with its persistence settings as options.
#pragma once
#include <string>

#include "api/adapter.h"
#include "services/services.h"

namespace mw {
AdapterSpec mqtt_adapter_spec();

namespace mqtt {
// The managed broker's settings: persistence (a mosquitto.db in its temp dir, saved every
// autosave_s seconds) or none.
struct BrokerSettings {
  bool persistence = false;
  int64_t autosave_s = 1800;
  std::string binary = "mosquitto";
  std::string key() const;  // the shared service's key: one broker per distinct settings
};
ServiceSpec broker_spec(const BrokerSettings& s);
}  // namespace mqtt

}  // namespace mw
