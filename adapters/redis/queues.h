// Redis as a queue (queue.cpp): lists (LPUSH + BRPOP), reliable lists (LPUSH + BLMOVE to a
// processing list, LREM as the acknowledgement) and streams (XADD + XREADGROUP + XACK), on the
// produce, consume and roundtrip ops of src/queue/queue.h.
#pragma once
#include <memory>
#include <vector>

#include "adapters/redis/conn.h"
#include "api/adapter.h"
#include "services/services.h"

namespace mw::redis {

// redis.cpp: the job's endpoint and managed server, shared with the key-value ops.
Endpoint endpoint_of(const Job& job);
ServiceSpec service_of(const Job& job);

// queue.cpp: `own` and the option of redis's queue kind (--queue; the core adds the other queue
// options to every Queue adapter); the adapter of a queue op.
std::vector<OptionSpec> with_queue_options(std::vector<OptionSpec> own);
std::unique_ptr<Adapter> make_queue_adapter(const Job& job);

}  // namespace mw::redis
