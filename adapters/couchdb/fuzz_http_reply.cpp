// libFuzzer target: the reply handling of the HTTP clients (http and couchdb adapters), fed
// what a hostile server can send once libcurl has framed it: any status code, any body, in
// pieces of any size. Input: byte 0 picks the status, byte 1 the piece size and cap, the rest
// is the body. Any exception, crash or broken invariant is a finding.
// Run longer: fuzz_http_reply adapters/couchdb/corpus/http_reply -max_total_time=600 (new finds go into the
// corpus directory; commit the small, interesting ones).
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "adapters/couchdb/couchdb.h"
#include "adapters/http/client.h"
#include "adapters/http/http.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

bool printable_line(const std::string& s) {
  for (char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mw;
  if (size < 2) return 0;
  static const long statuses[] = {200, 201, 202, 400, 401, 404, 409, 500, 0, -1, 99999};
  const long status = statuses[data[0] % (sizeof statuses / sizeof statuses[0])];
  const size_t piece = 1 + data[1] % 64;
  const std::string body(reinterpret_cast<const char*>(data + 2), size - 2);

  // CouchDB's answers to every op: a result with a printable detail, never an exception
  couchdb::Expect want;
  want.id = "doc-1";
  want.payload = "abc";
  want.docs = 1 + data[1] % 4;
  for (auto op : {couchdb::Op::Insert, couchdb::Op::Put, couchdb::Op::Bulk, couchdb::Op::Get}) {
    std::string detail;
    OpResult r = couchdb::check_reply(op, status, body, want, detail);
    require(r.status < Status::Count);
    require(r.status == Status::Ok ? r.detail.empty() : !r.detail.empty());
    require(printable_line(std::string(r.detail)));
    require(r.detail.size() < 400);
  }
  std::string why;
  int64_t count = couchdb::doc_count_of(body, why);
  require(count >= 0 ? why.empty() : printable_line(why) && !why.empty());

  // ab's check: a 2xx is success only with the first answer's length
  std::atomic<int64_t> first{-1};
  std::string detail;
  OpResult a = http::check_ab_reply(status, body, true, first, detail);
  require((a.status == Status::Ok) == (status >= 200 && status <= 299));
  OpResult b = http::check_ab_reply(status, body + "x", true, first, detail);
  require(a.status != Status::Ok || b.status == Status::Mismatch);

  // the body cap: pieces are kept until the cap, the transfer stops at the first one past it
  const int64_t cap = static_cast<int64_t>(data[1]) * 3;
  std::string kept;
  bool stopped = false;
  for (size_t at = 0; at < body.size() && !stopped; at += piece) {
    size_t n = std::min(piece, body.size() - at);
    stopped = !http::append_capped(kept, body.data() + at, n, cap);
  }
  require(static_cast<int64_t>(kept.size()) <= cap);
  require(body.compare(0, kept.size(), kept) == 0);
  require(stopped == (static_cast<int64_t>(body.size()) > cap) || kept.size() == body.size());

  // header lines counted against their cap
  int64_t total = 0;
  bool within = true;
  for (size_t at = 0; at < body.size() && within; at += piece) within = http::count_header(total, piece, cap);
  require(!within || total <= cap);

  std::string shown = http::printable(body, piece);
  require(printable_line(shown) && shown.size() <= piece + 3);
  return 0;
}
