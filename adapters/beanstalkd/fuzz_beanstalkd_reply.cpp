// libFuzzer target: arbitrary bytes as a beanstalkd server's replies to a producer's pipelined
// use/put (beanstalkd::PutChecker, the same code the event loop uses) and to the blocking
// parser of set-up and consumers. The first byte picks how many tubes are used and the chunk
// size. Checked: no crash, no read past the input, each put completes once, details printable,
// buffering bounded by --max-reply, a Done reply uses some of the input and no more.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "adapters/beanstalkd/reply.h"

using namespace mw;

namespace {
void check_printable(const std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::vector<std::string> tubes = {"t0", "t1", "t2"};
  const int ntubes = 1 + data[0] % 3;
  const size_t chunk = 1 + (data[0] >> 2) % 32;
  const char* in = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;

  beanstalkd::Limits lim;
  lim.max_reply = 4096;  // small, so inputs can reach the cap
  beanstalkd::PutChecker pc(lim);
  pc.set_tubes(&tubes);
  uint64_t next = 0;
  std::set<uint64_t> open;
  auto put = [&] {  // as the sender does: a use when the tube changes, then the put
    const int t = static_cast<int>(next % static_cast<uint64_t>(ntubes));
    if (t != pc.tube()) {
      pc.expect_use(t);
      pc.using_tube(t);
    }
    pc.expect_put(next);
    open.insert(next++);
  };
  for (int i = 0; i < 32; ++i) put();
  std::vector<Completion> out(64);
  for (size_t at = 0; at < n && pc.fatal().empty(); at += chunk) {
    pc.feed(in + at, std::min(chunk, n - at));
    pc.clear_details();
    const size_t k = pc.take(out, 0);
    for (size_t i = 0; i < k; ++i) {
      if (open.erase(out[i].seq) != 1) abort();  // every put completes once
      check_printable(out[i].result.detail);
      put();  // keep requests in flight
    }
    if (pc.pending().size() > 64) abort();  // 32 puts and their uses at most
  }
  check_printable(pc.fatal());

  // The blocking path parses the same bytes.
  beanstalkd::Reply r;
  size_t used = 0;
  std::string err;
  const beanstalkd::Parse p = beanstalkd::parse_reply(std::string_view(in, n), lim, r, used, err);
  if (p == beanstalkd::Parse::Done && (used == 0 || used > n || r.data.size() > lim.max_reply)) abort();
  if (p == beanstalkd::Parse::Error && err.empty()) abort();
  if (p == beanstalkd::Parse::Incomplete && n > lim.max_reply + beanstalkd::Limits::kMaxLine + 2 + 64) abort();
  check_printable(err);
  return 0;
}
