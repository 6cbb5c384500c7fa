// Status of one operation: a value, never an exception, on the hot path.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mw {

enum class Status : uint8_t { Ok, NotFound, Mismatch, Error, Timeout, Refused, Unsupported, Count };
constexpr int kStatusCount = static_cast<int>(Status::Count);

constexpr std::string_view status_name(Status s) {
  constexpr std::string_view names[] = {"Ok", "NotFound", "Mismatch", "Error", "Timeout", "Refused", "Unsupported"};
  return names[static_cast<int>(s)];
}

// What an adapter reports for one operation. `detail` must stay valid until the next call
// on the same client (a static string, or a buffer the client owns).
struct OpResult {
  Status status = Status::Ok;
  uint32_t bytes = 0;
  std::string_view detail = {};
  uint8_t side = 0;  // for adapters with sides (a disk's read and write): which one
};

struct Completion {
  uint64_t seq;
  OpResult result;
};

// A set-up error: cannot connect, bad option, missing binary. One clear line; exit 2.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A set-up step (preload, file layout, server start-up) gave up because a stop was requested
// (Ctrl-C, SIGTERM, SIGHUP): the job is interrupted, not a set-up error.
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace mw
