// The core's side of AdapterSpec's capabilities: what they imply, filled in once for the registry.
#pragma once
#include "api/adapter.h"

namespace mw {

// An adapter's declaration completed: after its own options, those its capabilities imply (the
// workload's for kv_ops, --scan-length only when it maps Scan; the queue ops' for a Queue; the
// crash options, --crash offering its crash_kinds). Throws std::logic_error for a spec that
// contradicts itself (an External target without its option, a durability setting or library it
// does not declare, kv_ops without the KeyedStore family).
AdapterSpec complete_spec(AdapterSpec spec);

// Its capabilities in words, for `mwbench list`: "keyed store (read, update, ...), queue; target:
// --host (else local); crash: kill (persistence)".
std::string capabilities_text(const AdapterSpec& spec);

}  // namespace mw
