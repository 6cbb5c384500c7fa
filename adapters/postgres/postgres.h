#pragma once
#include <memory>

#include "api/adapter.h"

namespace mw {
AdapterSpec postgres_adapter_spec();
namespace pg {
// queue.cpp: a table as a queue (produce INSERT; consume FOR UPDATE SKIP LOCKED + DELETE).
std::unique_ptr<Adapter> make_queue_adapter(const Job& job);
}  // namespace pg
}  // namespace mw
