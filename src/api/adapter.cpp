// Client's defaults kept out of line (adapter.h says why).
#include "api/adapter.h"

namespace mw {

OpResult Client::run_request(const Request& r) { return run(r.seq); }

}  // namespace mw
