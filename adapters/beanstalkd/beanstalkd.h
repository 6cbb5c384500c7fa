// beanstalkd as a queue (its text protocol, adapters/beanstalkd/reply.h): produce, consume and
// roundtrip of src/queue/queue.h over put / reserve-with-timeout / delete, one tube per queue, with
// the binlog and its fsync interval as options of the managed server.
#pragma once
#include <memory>
#include <string>

#include "adapter.h"
#include "services.h"

namespace mw {
AdapterSpec beanstalkd_adapter_spec();

namespace beanstalkd {
// The managed server's settings: no binlog, or a binlog in the temp dir fsynced every
// fsync_ms (0: on each write; negative: never, beanstalkd -F). max_job: beanstalkd -z.
struct ServerSettings {
  bool binlog = false;
  int64_t fsync_ms = 50;
  size_t max_job = 65535;
  std::string binary = "beanstalkd";
  std::string key() const;  // the shared service's key: one server per distinct settings
};
ServiceSpec server_spec(const ServerSettings& s);
}  // namespace beanstalkd

}  // namespace mw
