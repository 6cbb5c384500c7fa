// libFuzzer target: the native HTTP engine's answer framing (adapters/http/wire.h), fed what a
// hostile server can send on a keep-alive connection: any bytes, in pieces of any size, ended
// by the connection closing. Input: byte 0 picks the piece size, byte 1 the body cap, the rest
// is the stream. The answers must not depend on how the stream was cut, bodies never pass the
// cap, errors are one printable line, and the fast path frames exactly as http_parser alone.
// Any crash or broken invariant is a finding.
// Run longer: scripts/fuzz 600 fuzz_http_wire
#include <cstdint>
#include <string>
#include <vector>

#include "adapters/http/client.h"
#include "adapters/http/wire.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

struct Record : mw::http::ResponseParser::Sink {
  std::vector<std::string> seen;  // status, length, keep-alive and body of every answer
  int begins = 0;
  void on_first_byte() override { ++begins; }
  void on_answer(const mw::http::Answer& a, std::string& body) override {
    require(a.body_len >= 0 && static_cast<size_t>(a.body_len) == body.size());
    seen.push_back(std::to_string(a.status) + " " + std::to_string(a.body_len) + (a.keep_alive ? " k " : " c ") + body);
  }
};

struct Outcome {
  std::vector<std::string> answers;
  bool ok;
  std::string error;
};

Outcome run(const std::string& stream, size_t piece, int64_t cap, bool fast = true) {
  Record r;
  mw::http::ResponseParser p(cap, mw::http::kMaxHeaderBytes, true, &r);
  p.set_fast_path(fast);
  bool ok = true;
  for (size_t at = 0; at < stream.size() && ok; at += piece)
    ok = p.feed(stream.data() + at, std::min(piece, stream.size() - at));
  if (ok) ok = p.finish();
  require(!ok || p.error().empty());
  require(ok || !p.error().empty());
  for (char c : p.error()) require(c >= 0x20 && c < 0x7f);
  require(r.begins >= static_cast<int>(r.seen.size()));
  for (auto& s : r.seen) require(s.size() < stream.size() + 40);
  return {r.seen, ok, p.error()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t piece = 1 + data[0] % 97;
  const int64_t cap = 1 + static_cast<int64_t>(data[1]) * 7;
  const std::string stream(reinterpret_cast<const char*>(data + 2), size - 2);
  Outcome whole = run(stream, stream.size() + 1, cap);
  Outcome cut = run(stream, piece, cap);
  require(whole.answers == cut.answers);
  require(whole.ok == cut.ok);
  // The fast path (whole plain answers framed without http_parser) changes nothing.
  Outcome slow = run(stream, piece, cap, false);
  require(slow.answers == cut.answers);
  require(slow.ok == cut.ok);
  require(slow.error == cut.error);
  for (auto& a : whole.answers) require(static_cast<int64_t>(a.size()) <= cap + 40);
  return 0;
}
