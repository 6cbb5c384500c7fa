// libFuzzer target: arbitrary bytes as a Redis server's replies, fed to the client's reply
// handling (redis::ReplyChecker, the same code the event loop uses) and to the set-up parser.
// The first byte picks the op (a native one, or workload requests) and the chunk size.
// Checked: no crash, no read past the input, replies complete in order, details printable,
// buffering bounded by --max-reply.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "adapters/redis/reply.h"

using namespace mw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const redis::KeySpace keys("mwbench:", 1000, false, 8);
  const auto op = static_cast<redis::Op>(data[0] % 4);  // Mix: workload requests of every kind
  const size_t chunk = 1 + (data[0] >> 2) % 64;
  const char* in = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;

  redis::Limits lim;
  lim.max_reply = 4096;  // small, so inputs can reach the cap
  redis::ReplyChecker rc(keys, op, lim);
  uint64_t next = 0, expected = 0;
  auto expect = [&] {
    const uint64_t seq = next++;
    if (op != redis::Op::Mix) return rc.expect(seq);
    rc.expect({.seq = seq,
               .key = seq * 7 % 1500,
               .size = 10,
               .kind = static_cast<redis::Kind>(3 + seq % 4),
               .must_exist = (seq & 4) != 0});
  };
  for (int i = 0; i < 32; ++i) expect();
  std::vector<Completion> out(64);
  for (size_t at = 0; at < n && rc.fatal().empty(); at += chunk) {
    rc.feed(in + at, std::min(chunk, n - at));
    rc.clear_details();
    size_t k = rc.take(out, 0);
    for (size_t i = 0; i < k; ++i) {
      if (out[i].seq != expected++) abort();  // replies complete their requests in order
      for (char c : out[i].result.detail)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) abort();
      expect();  // keep requests in flight
    }
    if (rc.buffered() > lim.max_reply + redis::Limits::kMaxLine + 64 + chunk) abort();
  }

  // The blocking set-up path parses the same bytes with array items collected.
  redis::Reply r;
  size_t used = 0;
  std::string err;
  redis::Parse p = redis::parse_reply(std::string_view(in, n), lim, r, used, err, true);
  if (p == redis::Parse::Done && (used == 0 || used > n)) abort();
  if (p == redis::Parse::Error && err.empty()) abort();
  return 0;
}
