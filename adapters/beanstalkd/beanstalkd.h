// beanstalkd as a queue (its text protocol, adapters/beanstalkd/reply.h): produce, consume and
// roundtrip of src/queue/queue.h over put / reserve-with-timeout / delete, one tube per queue, with
// the binlog and its fsync interval as options of the managed server.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "adapters/beanstalkd/conn.h"
#include "api/adapter.h"
#include "services/services.h"
#include "workload/workload.h"  // SizeDist

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

// --crash kill and power, after the restart: every job of `tubes` reserved and deleted. A seq is
// Present when its message came out intact, Corrupt when its id did but the rest of the job did
// not (its bytes, its length against the size `sizes` drew for it, or a data block not ended by
// CRLF), else Missing (queue::ReadBack). Throws SetupError when a reserve fails.
std::vector<WriteState> read_back(const Endpoint& ep, const std::vector<std::string>& tubes, const SizeDist& sizes,
                                  std::span<const uint64_t> seqs);
}  // namespace beanstalkd

}  // namespace mw
