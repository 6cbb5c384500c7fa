// libFuzzer target: arbitrary bytes as a memcached server's replies to text or meta requests,
// fed to the client's reply handling (memcached::ReplyChecker, the same code the event loop uses)
// and to the set-up parser. The first byte picks the kind of requests in flight and the chunk
// size, the second the protocol (its low bit: text, meta).
// Checked: no crash, no read past the input, each request completes once, details printable,
// buffering bounded by --max-reply, rmw follow-ups bounded.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

#include "adapters/memcached/reply.h"

using namespace mw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const memcached::Keys keys;
  using K = memcached::Expect::Kind;
  const auto kind = static_cast<K>(data[0] % 5);
  const size_t chunk = 1 + (data[0] >> 3) % 32;
  const auto proto = data[1] & 1 ? memcached::Protocol::Meta : memcached::Protocol::Text;
  const char* in = reinterpret_cast<const char*>(data + 2);
  const size_t n = size - 2;

  memcached::Limits lim;
  lim.max_reply = 4096;  // small, so inputs can reach the cap
  memcached::ReplyChecker rc(keys, lim, proto);
  uint64_t next = 0;
  std::set<uint64_t> open;
  auto expect = [&] {
    rc.expect({.seq = next, .key = next % 16, .size = 40, .version = 1, .kind = kind});
    open.insert(next++);
  };
  for (int i = 0; i < 32; ++i) expect();
  std::vector<Completion> out(64);
  for (size_t at = 0; at < n && rc.fatal().empty(); at += chunk) {
    rc.feed(in + at, std::min(chunk, n - at));
    rc.clear_details();
    size_t k = rc.take(out, 0);
    for (size_t i = 0; i < k; ++i) {
      if (open.erase(out[i].seq) != 1) abort();  // every request completes once
      for (char c : out[i].result.detail)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) abort();
      expect();  // keep requests in flight
    }
    // one reply line, or a value, its line (and END), is all a reply may buffer
    if (rc.buffered() > lim.max_reply + memcached::Limits::kMaxLine + 64 + chunk) abort();
    if (rc.pending().size() > 32) abort();  // an rmw's next step replaces its first
    if (rc.followups().size() > 64 * 1024) abort();
    rc.followups().clear();
  }
  if (!rc.fatal().empty())
    for (char c : rc.fatal())
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) abort();

  // The blocking set-up path parses the same bytes.
  memcached::Reply r;
  size_t used = 0;
  std::string err;
  memcached::Parse p = memcached::parse_reply(std::string_view(in, n), lim, proto, r, used, err);
  if (p == memcached::Parse::Done && (used == 0 || used > n)) abort();
  if (p == memcached::Parse::Error && err.empty()) abort();
  return 0;
}
