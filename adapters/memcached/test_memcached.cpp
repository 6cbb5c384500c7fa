// memcached adapter against real memcached servers started here on free loopback ports, and its
// reply checker fed hostile bytes.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "adapters/memcached/conn.h"
#include "adapters/memcached/reply.h"
#include "core/driver.h"
#include "core/runner.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "tests/reply_checks.h"
#include "tests/store_checks.h"
#include "util/net.h"

using namespace mw;

namespace {

ServiceSpec plain_memcached(std::vector<std::string> extra = {}) {
  ServiceSpec s;
  s.name = "memcached";
  s.binary = "memcached";
  s.args = {"-l", "127.0.0.1", "-p", "{port}", "-U", "0", "-m", "256"};
  if (geteuid() == 0) s.args.insert(s.args.end(), {"-u", "root"});
  s.args.insert(s.args.end(), extra.begin(), extra.end());
  s.probe = [](int port) { return tcp_probe("127.0.0.1", port, "version\r\n", "VERSION"); };
  return s;
}

Job mc_job(const std::string& op, uint64_t n, int clients = 1, int pipeline = 1) {
  Job j = test::make_job("memcached", op, n, clients);
  j.pipeline = pipeline;
  j.opts["keyspace"] = "1000";
  return j;
}

Job external(Job j, int port) {
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(port);
  return j;
}

Job mix_job(const std::string& mix, uint64_t n, int clients, int pipeline) {
  Job j = test::make_job("memcached", "mix", n, clients);
  j.pipeline = pipeline;
  j.opts["mix"] = mix;
  j.opts["keyspace"] = "2000";
  j.opts["keys"] = "zipfian";
  j.opts["value-size"] = "100-1000";
  return j;
}

// A raw command on a server, through the adapter's own connection.
memcached::Reply raw(memcached::Conn& c, const std::string& request) {
  return c.call(request, memcached::now_ns() + 2'000'000'000, "test");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("memcached: set, get and delete on a managed server, every reply checked, in both protocols") {
  for (auto cp : {std::pair{1, 1}, std::pair{4, 16}}) {
    const int c = cp.first, p = cp.second;  // not bindings: CAPTURE under clang 14
    for (const char* proto : {"text", "meta"})
      for (const char* op : {"set", "get", "delete"}) {
        CAPTURE(proto);
        CAPTURE(op);
        CAPTURE(c);
        CAPTURE(p);
        Job j = mc_job(op, 5000, c, p);
        j.opts["value-size"] = "10-300";
        j.opts["protocol"] = proto;
        j.warmup_ops = 100;
        JobResult r = run_one(j);
        CHECK(r.state == JobResult::State::Done);
        CHECK(r.message == "");
        CHECK(r.ops_ok == 5000);
        CHECK(r.ops_failed == 0);
        CHECK(r.ops_not_run == 0);
        CHECK(r.server.at("managed") == "yes");
        CHECK(r.server.at("version").rfind("1.", 0) == 0);
        CHECK(r.server.at("protocol") ==
              (std::string(proto) == "text" ? "text (get/gets/set/cas/delete)" : "meta (mg/ms/md)"));
        CHECK(test::metric(r, "evictions") == 0);
        if (std::string(op) != "get") {
          CHECK(r.verify.checked);
          CHECK(r.verify.ok);
          CHECK(r.verify.detail.find(std::string(op) == "set" ? " keys read back hold the value that was set"
                                                              : " deleted keys are gone") != std::string::npos);
        }
      }
  }
  stop_shared_services();
}

TEST_CASE("memcached: the shared workload, every op, pipelined; nothing is lost when nothing is deleted") {
  Job j = mix_job("read:40,update:15,insert:15,delete:10,rmw:20", 20000, 4, 16);
  JobResult r;
  for (const char* proto : {"text", "meta"}) {  // meta (the default) last: its result is checked below too
    CAPTURE(proto);
    j.opts["protocol"] = proto;
    r = run_one(j);
    CHECK(r.ops_ok == 20000);
    CHECK(r.ops_failed == 0);
    CHECK(r.verify.ok);
  }
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 20000);  // misses (reads of deleted keys) included
  CHECK(r.ops_failed == 0);
  CHECK(r.misses > 0);
  REQUIRE(r.per_op.size() == 5);
  for (auto& f : r.per_op) {
    CAPTURE(f.op);
    CHECK(f.ops_ok > 0);
    CHECK(f.ops_failed == 0);
  }
  REQUIRE(r.load);
  CHECK(r.load->ops_ok == 2000);
  CHECK(r.verify.ok);

  // Without deletes every key of the key space must be found, at every read, and at the end.
  j = mix_job("read:90,update:5,rmw:5", 20000, 4, 16);
  r = run_one(j);
  CHECK(r.ops_ok == 20000);
  CHECK(r.ops_failed == 0);
  CHECK(r.misses == 0);
  CHECK(r.verify.ok);
  CHECK(r.verify.detail.find("at least 2000 expected; 1000 keys read back") != std::string::npos);
  CHECK(r.server.at("protocol") == "meta (mg/ms/md)");  // the default
  CHECK(test::metric(r, "evictions") == 0);
  stop_shared_services();
}

TEST_CASE("memcached: a value changed behind mwbench's back is a Mismatch, a deleted one NotFound") {
  Service srv(plain_memcached());
  for (const char* proto : {"text", "meta"}) {
    CAPTURE(proto);
    Job j = external(mc_job("get", 1000), srv.port());
    j.opts["protocol"] = proto;
    auto a = test::make_adapter("memcached", j);
    a->prepare(j);  // loads keys 0..999
    {
      memcached::Endpoint ep;
      ep.host = "127.0.0.1";
      ep.port = srv.port();
      ep.protocol = memcached::Protocol::Meta;
      memcached::Conn c(ep, memcached::now_ns() + 2'000'000'000);
      CHECK(raw(c, "ms mwbench:0 5\r\nother\r\n").code == memcached::Reply::Code::Stored);
      std::string v = make_value(2, 0, 100);  // key 2's value under key 1
      CHECK(raw(c, "ms mwbench:1 100\r\n" + v + "\r\n").code == memcached::Reply::Code::Stored);
      memcached::Reply got = raw(c, "mg mwbench:3 v\r\n");
      std::string bad(got.data);
      bad[40] = bad[40] == 'a' ? 'b' : 'a';  // one byte of the filler
      CHECK(raw(c, "ms mwbench:3 " + std::to_string(bad.size()) + "\r\n" + bad + "\r\n").code ==
            memcached::Reply::Code::Stored);
      CHECK(raw(c, "md mwbench:999\r\n").code == memcached::Reply::Code::Stored);
    }
    JobResult r;
    r = measure(j, *a);
    const std::string get = std::string(proto) == "text" ? "get" : "mg";
    CHECK(r.errors[static_cast<int>(Status::Mismatch)] == 3);
    CHECK(r.errors[static_cast<int>(Status::NotFound)] == 1);
    CHECK(r.ops_ok == 996);
    REQUIRE(r.error_samples.size() >= 4);
    CHECK(r.error_samples[0] == "Mismatch: " + get + " mwbench:0 returned another key's value");  // "other"
    CHECK(r.error_samples[1] == "Mismatch: " + get + " mwbench:1 returned another key's value");
    CHECK(r.error_samples[2] == "Mismatch: " + get + " mwbench:3 returned a corrupt value");
    CHECK(r.error_samples[3] == "NotFound: " + get + " mwbench:999: no such key");
  }
}

TEST_CASE("memcached: an unreachable port is a clear set-up error naming host:port") {
  int port = free_port();
  JobResult r = run_one(external(mc_job("get", 10), port));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "memcached 127.0.0.1:" + std::to_string(port) + ": cannot connect: Connection refused");
}

TEST_CASE("memcached: a server killed mid-run: failures counted, the rest not run, no hang") {
  Service srv(plain_memcached());
  Job j = external(mc_job("set", 50'000'000, 4, 8), srv.port());
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(srv.pid(), SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  killer.join();
  CHECK(seconds_since(t0) < 10);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed <= 32);  // at most the requests in flight
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 50'000'000);
  CHECK(r.ops_not_run > 0);
  CHECK(r.failed());
  CHECK(!r.verify.ok);  // nothing to read back from
  bool named = false;
  for (auto& s : r.error_samples) named |= s.find("127.0.0.1:" + std::to_string(srv.port())) != std::string::npos;
  CHECK((r.ops_failed == 0 || named));
}

TEST_CASE("memcached: a server that stops answering: requests time out, no hang") {
  Service srv(plain_memcached());
  Job j = external(mc_job("get", 1'000'000, 2, 4), srv.port());
  j.timeout_s = 0.5;
  std::thread freezer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(srv.pid(), SIGSTOP);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  freezer.join();
  kill(srv.pid(), SIGCONT);
  CHECK(seconds_since(t0) < 8);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] <= 8);
  CHECK(r.ops_not_run > 0);
}

TEST_CASE("memcached: a value over the item size limit fails with the reason; the managed server takes -I") {
  Service srv(plain_memcached());  // -I 1m, the default
  Job j;
  JobResult r;
  for (const char* proto : {"text", "meta"}) {  // text: the server swallows the refused value's bytes
    CAPTURE(proto);
    j = external(mc_job("set", 20, 1, 4), srv.port());
    j.opts["value-size"] = "2000000";
    j.opts["protocol"] = proto;
    j.timeout_s = 60;  // 8 MB in flight: on a loaded 2-core machine a set took over a second
    r = run_one(j);
    CHECK(r.ops_failed == 20);
    CHECK(r.errors[static_cast<int>(Status::Error)] == 20);
    REQUIRE(!r.error_samples.empty());
    CHECK(r.error_samples[0] ==
          "Error: SERVER_ERROR object too large for cache (a value of 2000000 bytes is over the "
          "server's item size limit, memcached -I)");
    bool warned = false;
    for (auto& w : r.warnings)
      warned |= w.kind == WarningKind::OverServerLimit &&
                w.text.find("over the server's item size limit (1048576 bytes") != std::string::npos;
    CHECK(warned);
  }

  // Managed: started with -I large enough (and -m to match).
  j = mc_job("set", 20, 1, 4);
  j.timeout_s = 60;
  j.opts["value-size"] = "2000000";
  j.opts["keyspace"] = "10";
  r = run_one(j);
  CHECK(r.ops_ok == 20);
  CHECK(r.verify.ok);
  CHECK(r.server.at("item_size_max") == std::to_string(2 << 20));

  // A value over --max-reply is refused before anything runs.
  j.opts["max-reply"] = "1000";
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("over --max-reply (1000)") != std::string::npos);
  stop_shared_services();
}

// ---- Replies without a socket: the bounded parser and the checker (hostile bytes) ----

namespace {

struct Fed {
  std::vector<Completion> done;
  std::vector<std::string> details;
  std::string fatal, followups;
  uint64_t cas_retries = 0;
};

// Feeds `bytes` (in chunks of `chunk`) as the replies to the requests `expect`.
Fed feed(const std::vector<memcached::Expect>& expect, const std::string& bytes, size_t max_reply = 512 << 20,
         size_t chunk = 7, memcached::Protocol proto = memcached::Protocol::Meta) {
  static memcached::Keys keys;
  memcached::Limits lim;
  lim.max_reply = max_reply;
  memcached::ReplyChecker rc(keys, lim, proto);
  for (auto& e : expect) rc.expect(e);
  Fed f;
  std::vector<Completion> out(64);
  for (size_t at = 0; at < bytes.size() && rc.fatal().empty(); at += chunk) {
    rc.feed(bytes.data() + at, std::min(chunk, bytes.size() - at));
    size_t k = rc.take(out, 0);
    for (size_t i = 0; i < k; ++i) {
      f.done.push_back(out[i]);
      f.details.emplace_back(out[i].result.detail);
    }
  }
  f.fatal = rc.fatal();
  f.followups = rc.followups();
  f.cas_retries = rc.cas_retries();
  return f;
}

std::vector<memcached::Expect> gets(size_t n) {
  std::vector<memcached::Expect> v;
  for (uint64_t i = 0; i < n; ++i) v.push_back({.seq = i, .key = i, .kind = memcached::Expect::Kind::Get});
  return v;
}

std::string va(uint64_t k, size_t size, const std::string& tag) {
  return "VA " + std::to_string(size) + " O" + tag + "\r\n" + make_value(k, 0, size) + "\r\n";
}

// The text protocol's reply to "get mwbench:<k>" (with `cas`: to "gets") holding `value_of`'s value.
std::string value(uint64_t k, size_t size, uint64_t value_of, const std::string& cas = "") {
  return "VALUE mwbench:" + std::to_string(k) + " 0 " + std::to_string(size) + (cas.empty() ? "" : " " + cas) + "\r\n" +
         make_value(value_of, 0, size) + "\r\nEND\r\n";
}

// Bytes a hostile server sends in reply to one request: a fatal reason, or one completion with
// `first`; the details printable either way.
struct Hostile {
  const char* name;
  std::string bytes;
  std::string fatal;
  Status first = Status::Ok;
  memcached::Expect::Kind kind = memcached::Expect::Kind::Get;
};

void check_hostile(const std::vector<Hostile>& cases, memcached::Protocol proto) {
  for (auto& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    size_t cap = name == "value over a small cap" ? 1024 : 512 << 20;
    test::check_hostile_outcome(feed({{.seq = 0, .key = 0, .size = 40, .kind = c.kind}}, c.bytes, cap, 4096, proto),
                                c.fatal, c.first);
  }
}

Fed feed_text(const std::vector<memcached::Expect>& expect, const std::string& bytes, size_t max_reply = 512 << 20,
              size_t chunk = 7) {
  return feed(expect, bytes, max_reply, chunk, memcached::Protocol::Text);
}

}  // namespace

TEST_CASE("memcached replies: valid replies in any chunking complete their requests") {
  for (size_t chunk : {1, 3, 7, 1000}) {
    CAPTURE(chunk);
    Fed f = feed(gets(3), va(0, 100, "0") + "EN O1\r\n" + va(5, 50, "2"), 512 << 20, chunk);
    REQUIRE(f.done.size() == 3);
    CHECK(f.done[0].result.status == Status::Ok);
    CHECK(f.done[0].result.bytes == 100);
    CHECK(f.done[1].result.status == Status::NotFound);
    CHECK(f.details[1] == "mg mwbench:1: no such key");
    CHECK(f.done[2].result.status == Status::Mismatch);  // key 5's value is not key 2's
    CHECK(f.fatal == "");
  }
  using K = memcached::Expect::Kind;
  Fed f = feed({{.seq = 7, .key = 1, .size = 300, .kind = K::Set},
                {.seq = 8, .key = 2, .kind = K::Delete},
                {.seq = 9, .key = 3, .kind = K::Delete},
                {.seq = 10, .key = 4, .size = 300, .kind = K::Set}},
               "HD O7\r\nHD O8\r\nNF O9\r\nSERVER_ERROR out of memory storing object\r\n");
  REQUIRE(f.done.size() == 4);
  CHECK(f.done[0].result.status == Status::Ok);
  CHECK(f.done[0].result.bytes == 300);
  CHECK(f.done[1].result.status == Status::Ok);
  CHECK(f.done[2].result.status == Status::NotFound);
  CHECK(f.done[3].result.status == Status::Error);
  CHECK(f.details[3] == "SERVER_ERROR out of memory storing object");
}

TEST_CASE("memcached replies: an rmw reads with its cas, writes back guarded by it, and reads again on EX") {
  using K = memcached::Expect::Kind;
  Fed f = feed({{.seq = 5, .key = 1, .size = 64, .version = 9, .kind = K::RmwRead}},
               "VA 100 c77 O5\r\n" + make_value(1, 0, 100) + "\r\n");
  CHECK(f.done.empty());  // not complete: its write goes out
  CHECK(f.followups.rfind("ms mwbench:1 64 C77 O5\r\n", 0) == 0);
  CHECK(f.followups.size() == std::string("ms mwbench:1 64 C77 O5\r\n").size() + 64 + 2);
  // The write lost the race (EX): read again; stored (HD): done.
  std::string bytes = "VA 100 c77 O5\r\n" + make_value(1, 0, 100) + "\r\nEX O5\r\nVA 64 c78 O5\r\n" +
                      make_value(1, 3, 64) + "\r\nHD O5\r\n";
  f = feed({{.seq = 5, .key = 1, .size = 64, .version = 9, .kind = K::RmwRead}}, bytes);
  REQUIRE(f.done.size() == 1);
  CHECK(f.done[0].seq == 5);
  CHECK(f.done[0].result.status == Status::Ok);
  CHECK(f.fatal == "");
  CHECK(f.cas_retries == 1);
}

TEST_CASE("memcached replies: an rmw that keeps losing its cas race retries within the timeout, then fails") {
  using K = memcached::Expect::Kind;
  std::string read = "VA 64 c77 O5\r\n" + make_value(1, 0, 64) + "\r\n";
  std::string lost;
  for (int i = 0; i < 200; ++i) lost += read + "EX O5\r\n";  // 64 tries used to be the end
  Fed f = feed({{.seq = 5, .key = 1, .size = 64, .version = 9, .kind = K::RmwRead}}, lost + read + "HD O5\r\n",
               512 << 20, 4096);
  REQUIRE(f.done.size() == 1);
  CHECK(f.done[0].result.status == Status::Ok);
  CHECK(f.cas_retries == 200);
  // Past the timeout, the op fails with the count: a checker with a timeout of 0 gives up at once.
  static memcached::Keys keys;
  memcached::Limits lim;
  lim.timeout_ns = 0;
  memcached::ReplyChecker rc(keys, lim, memcached::Protocol::Meta);
  rc.expect({.seq = 5, .key = 1, .size = 64, .version = 9, .kind = K::RmwRead});
  const std::string once = read + "EX O5\r\n";
  rc.feed(once.data(), once.size());
  std::vector<Completion> out(4);
  REQUIRE(rc.take(out, 0) == 1);
  CHECK(out[0].result.status == Status::Error);
  CHECK(std::string(out[0].result.detail) ==
        "ms mwbench:1: another client wrote it between the read and the write 1 time within the timeout (cas EX)");
}

TEST_CASE("memcached replies: large replies in progress share one budget (--max-reply), given back when parsed") {
  using K = memcached::Expect::Kind;
  static memcached::Keys keys;
  memcached::Limits lim;
  lim.max_reply = 6 << 20;
  lim.budget = std::make_shared<conn::ReplyBudget>(lim.max_reply);
  // Six clients, each answered a declared 5 MiB value that the server then streams slowly.
  std::vector<std::unique_ptr<memcached::ReplyChecker>> clients;
  const std::string head = "VA 5242880 O0\r\n", part(1 << 20, 'x');
  int refused = 0;
  for (int c = 0; c < 6; ++c) {
    clients.push_back(std::make_unique<memcached::ReplyChecker>(keys, lim, memcached::Protocol::Meta));
    clients.back()->expect({.seq = 0, .key = 0, .size = 0, .kind = K::Get});
    clients.back()->feed(head.data(), head.size());
    for (int i = 0; i < 4; ++i) clients.back()->feed(part.data(), part.size());
    if (!clients.back()->fatal().empty()) {
      ++refused;
      CHECK(clients.back()->fatal().find("the replies in progress of all clients passed --max-reply (6291456 bytes) "
                                         "together") == 0);
    }
  }
  CHECK(refused >= 4);  // 6 x 4 MiB buffered without the budget
  CHECK(lim.budget->used() <= lim.max_reply);
  clients.clear();
  CHECK(lim.budget->used() == 0);  // given back
  CHECK(conn::budget_short(100, 1000, 512 << 20) == "");
  CHECK(conn::budget_short(1 << 20, 300, 512 << 20)
            .find("-c 300 clients reading values of up to 1048576 bytes "
                  "need --max-reply of at least 629145600") == 0);
}

TEST_CASE("memcached replies: hostile bytes end in a counted failure or a fatal reason, never growth or a crash") {
  std::vector<Hostile> cases = {
      {"huge value", "VA 2000000000 O0\r\n" + std::string(100000, 'x'),
       "reply larger than --max-reply (536870912 bytes): a value of 2000000000 bytes"},
      {"value over a small cap", "VA 2048 O0\r\n" + std::string(2050, 'x'), "a value of 2048 bytes"},
      {"size too long", "VA 99999999999999999999 O0\r\n", "bad value size '99999999999999999999'"},
      {"negative size", "VA -1 O0\r\n", "bad value size '-1'"},
      {"no size", "VA\r\n", "a VA reply without a size"},
      {"value without CRLF", "VA 3 O0\r\nabcXY", "a value not ended by CRLF"},
      {"endless line", "VA " + std::string(70000, '1'), "a reply line longer than 8192 bytes"},
      {"bare LF", "HD O0\n", "not ended by CRLF"},
      {"unknown reply", "VALUE mwbench:0 0 3\r\nabc\r\nEND\r\n", "unexpected reply 'VALUE mwbench:0 0 3'"},
      {"NUL byte", std::string("\0\1\2\r\n", 5), "unexpected reply '\\x00\\x01\\x02'"},
      {"bad cas", "VA 1 cxyz O0\r\nx\r\n", "bad cas token 'cxyz'"},
      {"another request's reply", "EN O1\r\n", "reply 'EN O1' does not answer the request in flight (opaque O0)"},
      {"no opaque", "EN\r\n", "reply 'EN' does not answer the request in flight"},
      {"extra reply", "EN O0\r\nEN O1\r\n", "unexpected reply 'EN O1' with no request waiting"},
      {"escaped error", "SERVER_ERROR \xff\xfe\r\n", "", Status::Error},
      {"wrong code", "HD O0\r\n", "", Status::Mismatch},
      {"short value", "VA 3 O0\r\nabc\r\n", "", Status::Mismatch},
  };
  check_hostile(cases, memcached::Protocol::Meta);
  CHECK(feed(gets(1), "SERVER_ERROR \xff\xfe\r\n").details.at(0) == "SERVER_ERROR \\xff\\xfe");
}

TEST_CASE("memcached text replies: each request's reply by order, kind and key; a VALUE ends with END") {
  using K = memcached::Expect::Kind;
  for (size_t chunk : {1, 3, 7, 1000}) {
    CAPTURE(chunk);
    Fed f = feed_text(gets(3), value(0, 100, 0) + "END\r\n" + value(2, 50, 5), 512 << 20, chunk);
    REQUIRE(f.done.size() == 3);
    CHECK(f.done[0].result.status == Status::Ok);
    CHECK(f.done[0].result.bytes == 100);
    CHECK(f.done[1].result.status == Status::NotFound);
    CHECK(f.details[1] == "get mwbench:1: no such key");
    CHECK(f.done[2].result.status == Status::Mismatch);  // key 5's value under key 2
    CHECK(f.details[2] == "get mwbench:2 returned another key's value");
    CHECK(f.fatal == "");
  }
  Fed f = feed_text({{.seq = 7, .key = 1, .size = 300, .kind = K::Set},
                     {.seq = 8, .key = 2, .kind = K::Delete},
                     {.seq = 9, .key = 3, .kind = K::Delete},
                     {.seq = 10, .key = 4, .size = 300, .kind = K::Set},
                     {.seq = 11, .key = 4, .size = 300, .kind = K::Set}},
                    "STORED\r\nDELETED\r\nNOT_FOUND\r\nSERVER_ERROR out of memory storing object\r\nNOT_STORED\r\n");
  REQUIRE(f.done.size() == 5);
  CHECK(f.done[0].result.status == Status::Ok);
  CHECK(f.done[0].result.bytes == 300);
  CHECK(f.done[1].result.status == Status::Ok);
  CHECK(f.done[2].result.status == Status::NotFound);
  CHECK(f.details[2] == "delete mwbench:3: no such key");
  CHECK(f.done[3].result.status == Status::Error);
  CHECK(f.details[3] == "SERVER_ERROR out of memory storing object");
  CHECK(f.done[4].result.status == Status::Error);
  CHECK(f.details[4] == "set mwbench:4: not stored (NOT_STORED)");
  CHECK(f.fatal == "");
}

TEST_CASE("memcached text replies: an rmw reads with gets, writes back with cas, and reads again on EXISTS") {
  using K = memcached::Expect::Kind;
  const memcached::Expect rmw{.seq = 5, .key = 1, .size = 64, .version = 9, .kind = K::RmwRead};
  Fed f = feed_text({rmw}, value(1, 100, 1, "77"));
  CHECK(f.done.empty());  // not complete: its write goes out
  CHECK(f.followups.rfind("cas mwbench:1 0 0 64 77\r\n", 0) == 0);
  CHECK(f.followups.size() == std::string("cas mwbench:1 0 0 64 77\r\n").size() + 64 + 2);
  f = feed_text({rmw}, value(1, 100, 1, "77") + "EXISTS\r\n" + value(1, 64, 1, "78") + "STORED\r\n");
  REQUIRE(f.done.size() == 1);
  CHECK(f.done[0].result.status == Status::Ok);
  CHECK(f.fatal == "");
  CHECK(f.cas_retries == 1);
  CHECK(f.followups.find("gets mwbench:1\r\n") != std::string::npos);
  f = feed_text({rmw}, value(1, 100, 1, "77") + "NOT_FOUND\r\n");
  REQUIRE(f.done.size() == 1);
  CHECK(f.done[0].result.status == Status::NotFound);
  CHECK(f.details[0] == "cas mwbench:1: deleted between the read and the write");
  f = feed_text({rmw}, value(1, 100, 1));  // a VALUE without the cas asked for
  REQUIRE(f.done.size() == 1);
  CHECK(f.done[0].result.status == Status::Mismatch);
}

TEST_CASE("memcached text replies: hostile bytes end in a counted failure or a fatal reason, never growth") {
  using K = memcached::Expect::Kind;
  std::vector<Hostile> cases = {
      {"huge value", "VALUE mwbench:0 0 2000000000\r\n" + std::string(100000, 'x'),
       "reply larger than --max-reply (536870912 bytes): a value of 2000000000 bytes"},
      {"value over a small cap", "VALUE mwbench:0 0 2048\r\n" + std::string(2060, 'x'), "a value of 2048 bytes"},
      {"size too long", "VALUE mwbench:0 0 99999999999999999999\r\n", "bad value size '99999999999999999999'"},
      {"negative size", "VALUE mwbench:0 0 -1\r\n", "bad value size '-1'"},
      {"no size", "VALUE mwbench:0 0\r\n", "a malformed VALUE line"},
      {"too many tokens", "VALUE mwbench:0 0 1 2 3\r\nx\r\nEND\r\n", "a malformed VALUE line"},
      {"two spaces", "VALUE  mwbench:0 0 1\r\nx\r\nEND\r\n", "a malformed VALUE line"},
      {"bad flags", "VALUE mwbench:0 x 1\r\nx\r\nEND\r\n", "a malformed VALUE line"},
      {"bad cas", "VALUE mwbench:0 0 1 xyz\r\nx\r\nEND\r\n", "bad cas token 'xyz'"},
      {"value without CRLF", "VALUE mwbench:0 0 3\r\nabcXYEND\r\n", "a value not ended by CRLF"},
      {"value without END", "VALUE mwbench:0 0 3\r\nabc\r\nVALUE mwbench:1 0 3\r\nabc\r\nEND\r\n",
       "a VALUE not followed by END"},
      {"endless line", "VALUE " + std::string(70000, '1'), "a reply line longer than 8192 bytes"},
      {"bare LF", "END\n", "not ended by CRLF"},
      {"meta reply", "EN O0\r\n", "unexpected reply 'EN O0'"},
      {"NUL byte", std::string("\0\1\2\r\n", 5), "unexpected reply '\\x00\\x01\\x02'"},
      {"another key's VALUE", "VALUE mwbench:01 0 1\r\nx\r\nEND\r\n",
       "reply 'VALUE mwbench:01 0 1' does not answer the request in flight (get mwbench:0)"},
      {"a set's reply to a get", "STORED\r\n", "reply 'STORED' does not answer the request in flight (get mwbench:0)"},
      {"a get's reply to a set", "END\r\n", "reply 'END' does not answer the request in flight (set mwbench:0)",
       Status::Ok, K::Set},
      {"a delete's reply to a set", "DELETED\r\n", "does not answer the request in flight (set mwbench:0)", Status::Ok,
       K::Set},
      {"a set's reply to a delete", "STORED\r\n", "does not answer the request in flight (delete mwbench:0)",
       Status::Ok, K::Delete},
      {"a cas reply to a set", "EXISTS\r\n", "does not answer the request in flight (set mwbench:0)", Status::Ok,
       K::Set},
      {"extra reply", "END\r\nEND\r\n", "unexpected reply 'END' with no request waiting"},
      {"escaped error", "SERVER_ERROR \xff\xfe\r\n", "", Status::Error},
      {"plain ERROR", "ERROR\r\n", "", Status::Error},
      {"short value", "VALUE mwbench:0 0 3\r\nabc\r\nEND\r\n", "", Status::Mismatch},
  };
  check_hostile(cases, memcached::Protocol::Text);
}

namespace {
void raw_flush(int port) {
  memcached::Endpoint ep;
  ep.host = "127.0.0.1";
  ep.port = port;
  ep.protocol = memcached::Protocol::Text;
  memcached::Conn c(ep, memcached::now_ns() + 2'000'000'000);
  CHECK(c.line("flush_all\r\n", memcached::now_ns() + 2'000'000'000) == "OK");
}
}  // namespace

TEST_CASE("memcached --ttl: each write of the mix takes its TTL, in both protocols; the keys then expire") {
  Service srv(plain_memcached());
  for (const char* proto : {"text", "meta"}) {
    CAPTURE(proto);
    raw_flush(srv.port());
    // written with a TTL of 1 h: read back at once, the keys are there
    Job w = external(mix_job("update:80,rmw:20", 3000, 2, 8), srv.port());
    w.opts["protocol"] = proto;
    w.opts["load"] = "false";  // only the run's own writes
    w.opts["ttl"] = "1h";
    JobResult r = run_one(w);
    CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK(r.ops_failed == 0);
    CHECK(r.workload.find("keys expire after 3600 s") != std::string::npos);
    Job rd = external(mix_job("read:100", 2000, 2, 8), srv.port());
    rd.opts["protocol"] = proto;
    rd.opts["load"] = "false";
    r = run_one(rd);
    CHECK(r.ops_ok == 2000);
    CHECK(r.misses < 1000);  // the hot keys were written
    // written with a TTL of 1 s: three seconds later, every read misses
    raw_flush(srv.port());
    w.opts["ttl"] = "1";
    r = run_one(w);
    CHECK(r.ops_failed == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    r = run_one(rd);
    CHECK(r.ops_ok == 2000);
    CHECK(r.misses == 2000);
  }
}

// A trace's add and replace (text add / replace, meta ms ... ME / MR): NOT_STORED and NS are "not
// stored", never an error; its set writes whether the key is there or not. Both protocols.
TEST_CASE("memcached: a trace's add and replace store only where their condition holds") {
  test::TempDir d;
  for (std::string proto : {"text", "meta"}) {
    CAPTURE(proto);
    Job j = test::make_job("memcached", "mix", 10000);
    test::cond_trace(j, d.path);
    j.opts["protocol"] = proto;
    j.opts["key-prefix"] = "cond-" + proto + ":";
    j.opts["memory"] = "64";  // a trace's values may be up to 1 MiB: the sizing would ask for more
    test::check_cond_replay(run_one(j));
  }
}
