// Crash-and-restart of a managed gearmand (--crash kill on submit-bg): SIGKILL gearmand while
// background jobs are being queued, start it again with the same queue backend and store (the
// same SQLite or Tokyo Cabinet file, the same memcached, redis-server or PostgreSQL table), and
// take every queued job of the run's function back with a worker: each job's payload names its
// seq and must be the payload that was sent.
#pragma once
#include <memory>
#include <string>

#include "adapters/gearman/gearman.h"
#include "api/adapter.h"

namespace mw::gearman {

// What an acknowledged background job means on a queue backend (contract.h); none for a backend
// mwbench does not start (mysql) or does not know.
std::optional<Contract> contract_of(const std::string& queue);

// What the crash kills. Gearmand: gearmand alone. Store: the server behind the queue (memcached,
// redis-server, PostgreSQL) instead, restarted on its directory, then gearmand is restarted too,
// so that the queue it serves is the store's alone. All (a power cut): gearmand and every server
// behind it, each restarted, the store's first.
enum class CrashTarget { Gearmand, Store, All };

// `g` outlives the hooks (the adapter's); `fn` is the run's function name. Throws SetupError when
// `target` is Store and the queue has no server behind it.
std::unique_ptr<Crashable> make_crashable(Gearmand& g, const std::string& queue, const std::string& fn,
                                          size_t payload_size, double timeout_s, CrashTarget target);

}  // namespace mw::gearman
