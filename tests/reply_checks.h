// What the reply-parser tests share (redis, memcached): a hostile reply either ends the
// connection with the expected reason or completes its one op with the expected status, and
// every failure detail that reaches a result is printable ASCII.
#pragma once
#include <doctest/doctest.h>

#include <string>

namespace mw::test {

// FED: a parser's outcome (fatal, done[].result.status, details); FATAL "" when none is expected.
template <class Fed, class Status>
void check_hostile_outcome(const Fed& f, const std::string& fatal, Status first) {
  if (fatal.empty()) {
    CHECK(f.fatal == "");
    REQUIRE(f.done.size() == 1);
    CHECK(f.done[0].result.status == first);
  } else {
    CHECK(f.fatal.find(fatal) != std::string::npos);
  }
  for (auto& d : f.details)
    for (unsigned char ch : d) CHECK((ch >= 0x20 && ch < 0x7f));  // printable ASCII only
}

}  // namespace mw::test
