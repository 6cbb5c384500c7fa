// Crash-and-restart of the managed redis-server (--crash kill, --persistence): the server's
// persistence arguments, and the hooks that kill it, restart it on the same --dir, and read
// every SET back.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "adapters/redis/conn.h"
#include "adapters/redis/reply.h"
#include "adapters/redis/sentinel.h"
#include "api/adapter.h"
#include "services/services.h"

namespace mw::redis {

// --persistence none|rdb|aof-no|aof-everysec|aof-always (aof: aof-everysec) as redis-server arguments.
std::vector<std::string> persistence_args(const std::string& persistence);
// What an acknowledged write means under --persistence (contract.h).
Contract contract_of(const std::string& persistence);

// `svc` is the job's own server (not shared: it starts empty and is killed); `ep`, `keys` and
// `mix` outlive the hooks (the adapter's). The endpoint's port follows the restarted server. A
// keyed check (Crashable::keyed): native SETs write key_of(seq); a workload's (`mix`) keys are
// its own; `distinct`: Crashable::distinct_writes. `set`: a replicated set-up's (--replicas), whose
// primary kill_primary() ends (`svc` is its first); the read-back reads the primary `ep` follows.
// `svc` null: an external set-up (--sentinels), which takes switchover alone. With Sentinels to
// fail the primary over, the hooks are a Replication too (Crashable::replication).
std::unique_ptr<Crashable> make_crashable(std::shared_ptr<Service> svc, Endpoint& ep, const KeySpace& keys,
                                          const std::string& persistence, const Workload* mix, uint64_t distinct,
                                          std::shared_ptr<ReplicaSet> set = nullptr);

}  // namespace mw::redis
