#pragma once
#include <atomic>
#include <string>

#include "api/adapter.h"
namespace mw {
AdapterSpec http_adapter_spec();
namespace http {
// ab's check of one answer: a 2xx whose length is the first response's (`first` holds it, -1
// until the first answer). Callable without a socket (tests, adapters/couchdb/fuzz_http_reply.cpp).
OpResult check_ab_reply(long status, const std::string& body, bool check_length, std::atomic<int64_t>& first,
                        std::string& detail);
// The same check on the body's length alone (the native engine does not keep ab's bodies).
OpResult check_ab_length(long status, int64_t length, bool check_length, std::atomic<int64_t>& first,
                         std::string& detail);
}  // namespace http
}  // namespace mw
