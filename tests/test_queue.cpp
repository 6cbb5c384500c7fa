// Queues (src/queue/queue.h): the message format, the exactly-once ledger, and produce, consume and
// roundtrip on every queue backend against real servers started here (redis-server, gearmand).
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/fault.h"
#include "core/driver.h"
#include "core/runner.h"
#include "queue/queue.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "tests/queue_checks.h"

using namespace mw;
using mw::test::check_exactly_once;

namespace {

Job queue_job(const std::string& adapter, const std::string& op, const std::string& queue, uint64_t n, int clients) {
  Job j = test::make_job(adapter, op, n, clients);
  j.opts["queue"] = queue;
  j.timeout_s = 2;
  return j;
}

// A queue in this process (a deque): its count of what it holds answers `counts` times, then fails,
// as a server that stops answering does; it keeps `stranded` messages it never hands out, as
// nats-server's work queue can after a kill (a fault the real server shows only by chance).
class MemQueue final : public QueueAdapter {
 public:
  MemQueue(const Job& j, int counts, int64_t stranded = 0) : QueueAdapter(j), counts_(counts), stranded_(stranded) {}
  ~MemQueue() override { teardown(); }
  std::string target() const override { return "memory"; }

 protected:
  void start(const Job&) override {}
  std::unique_ptr<QueueConn> connect(const Job&) override { return std::make_unique<Conn>(*this); }
  int64_t remaining(const Job&) override {
    std::lock_guard lk(mu_);
    if (counts_-- <= 0) throw SetupError("memory: the count did not answer");
    return static_cast<int64_t>(q_.size());
  }
  int64_t stranded(const Job&) override { return stranded_; }

 private:
  struct Conn final : QueueConn {
    explicit Conn(MemQueue& m) : m_(m) {}
    OpResult produce(std::string_view msg) override {
      std::lock_guard lk(m_.mu_);
      m_.q_.emplace_back(msg);
      return {Status::Ok, 0, {}};
    }
    OpResult consume(std::string& msg, double) override {
      std::lock_guard lk(m_.mu_);
      if (m_.q_.empty()) return {Status::NotFound, 0, {}};
      msg = std::move(m_.q_.front());
      m_.q_.pop_front();
      return {Status::Ok, 0, {}};
    }
    MemQueue& m_;
  };
  std::mutex mu_;
  std::deque<std::string> q_;
  int counts_;
  int64_t stranded_;
};

}  // namespace

TEST_CASE("queue: a message carries its id and stamp, and a changed byte is caught") {
  std::string m = queue::encode(123456789, 42, 100);
  CHECK(m.size() == 100);
  queue::Decoded d = queue::decode(m);
  CHECK(d.ok);
  CHECK(d.id == 123456789);
  CHECK(d.stamp_ns == 42);
  CHECK(queue::encode(1, 2, 1).size() == queue::kHeader);  // never shorter than its header
  for (size_t at : {size_t{0}, size_t{7}, size_t{25}, size_t{40}, size_t{60}}) {
    std::string bad = m;
    bad[at] = bad[at] == '1' ? '2' : '1';
    CAPTURE(at);
    CHECK(!queue::decode(bad).ok);
  }
  CHECK(!queue::decode("hello").ok);
  // Its length is checksummed: one padding byte cut off or added is caught, as a changed one is.
  CHECK(!queue::decode(m.substr(0, 99)).ok);
  CHECK(!queue::decode(m + "x").ok);
  CHECK(!queue::decode(queue::encode(5, 6, 49).substr(0, 48)).ok);
  std::string reused;  // the hot path's encoding: the same bytes in a reused buffer, any size in turn
  for (size_t size : {size_t{100}, size_t{100}, size_t{48}, size_t{1}, size_t{300}, size_t{60}, size_t{4096}}) {
    queue::encode_into(reused, size * 7, 99, size);
    CHECK(reused == queue::encode(size * 7, 99, size));
  }
}

// --message-size takes --value-size's sizes (one, LO-HI, SIZE:WEIGHT,...) and its errors, naming
// --message-size; a message holds at least its header, at most 16M. Each id's size is drawn from it.
TEST_CASE("queue: --message-size: a size, a range or weighted sizes, each message's drawn from its id") {
  CHECK(queue::message_sizes("64").text() == "64");
  CHECK(queue::message_sizes("48-4k").text() == "48-4096");
  const SizeDist w = queue::message_sizes("64:90,64k:10");
  CHECK(w.text() == "64:90,65536:10");
  size_t big = 0;
  for (uint64_t id = 0; id < 10000; ++id) {
    const size_t n = queue::size_of(w, id);
    CHECK((n == 64 || n == 65536));
    big += n == 65536;
    if (id < 100) CHECK(queue::size_of(w, id) == n);  // the same id, the same size
  }
  CHECK(big > 800);  // 10% of 10,000
  CHECK(big < 1200);
  struct Bad {
    const char* text;
    const char* why;
  };
  for (const Bad& b :
       {Bad{"1000-100", "--message-size: inverted range '1000-100'"},
        Bad{"abc", "--message-size: expected a whole number"}, Bad{"64:50,x", "--message-size: 'x': expected a size"},
        Bad{"64:0", "--message-size weight of 64: expected a whole number"},
        Bad{"10-100",
            "--message-size: a message is 48 (its id, stamp and checksum) to 16777216 bytes "
            "(16M); '10-100' has a size of 10"},
        Bad{"17M", "'17M' has a size of 17825792"}}) {
    CAPTURE(b.text);
    try {
      queue::message_sizes(b.text);
      FAIL("no error");
    } catch (const SetupError& e) {
      CHECK(std::string(e.what()).find(b.why) != std::string::npos);
    }
  }
}

// A crash check's read-back: a message intact is Present; one whose id can still be told but whose
// bytes are not what was put is Corrupt: cut short or lengthened (its checksum covers the length,
// so decode() finds no intact header: such a job was once counted Missing), its padding changed,
// or served in a frame its protocol does not allow; one whose header is altered, cut within, or
// none at all names no write: Missing. The sizes as --message-size drew them, 64 or 100 bytes.
TEST_CASE("queue: a crash read-back counts a message cut short or lengthened corrupt, an unreadable one missing") {
  const SizeDist sizes = queue::message_sizes("64:50,100:50");
  const int64_t t = now_ns();
  auto msg = [&](uint64_t id) { return queue::encode(id, t, queue::size_of(sizes, id)); };
  const std::string cut = msg(2).substr(0, msg(2).size() - 3), longer = msg(3) + "xxxx";
  for (const std::string& m : {cut, longer}) {
    CAPTURE(m);
    CHECK(!queue::decode(m).header);  // the length is checksummed
    CHECK(queue::id_of(m, sizes) == std::optional<uint64_t>(m == cut ? 2 : 3));
  }
  std::string padding = msg(4), stamp = msg(6);
  padding.back() = 'y';
  stamp[30] = stamp[30] == '0' ? '1' : '0';
  CHECK(!queue::id_of(stamp, sizes));
  queue::ReadBack got(sizes);
  for (const std::string& m :
       {msg(1), cut, longer, padding, stamp, msg(7).substr(0, 40), std::string("hello"), msg(8), msg(8) + "x"})
    got.add(m);
  got.add(msg(5), true);  // served in a damaged frame
  const std::vector<uint64_t> seqs = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<WriteState> st = got.states(seqs);
  REQUIRE(st.size() == 9);
  const WriteState P = WriteState::Present, C = WriteState::Corrupt, M = WriteState::Missing;
  const WriteState want[] = {P, C, C, C, C, M, M, P, M};  // 8: intact once, lengthened once; 9: never read
  for (size_t i = 0; i < 9; ++i) {
    CAPTURE(seqs[i]);
    CHECK(st[i] == want[i]);
  }
}

TEST_CASE("queue: the ledger counts lost, duplicated and unexpected messages") {
  queue::Ledger l;
  l.start(now_ns());
  for (uint64_t id = 0; id < 100; ++id) l.produced(id);
  l.produced((uint64_t{3} << 40) + 5);                                                      // another client's range
  for (uint64_t id = 1; id < 100; ++id) l.consumed(queue::encode(id, now_ns(), 64), true);  // 0 is lost
  l.consumed(queue::encode(7, now_ns(), 64), true);                                         // 7 twice
  l.consumed(queue::encode(500, now_ns(), 64), false);                                      // never produced
  l.consumed(queue::encode((uint64_t{3} << 40) + 5, now_ns(), 64), false);
  l.consumed("garbage", false);
  l.consumed(queue::encode(uint64_t{1} << 38, now_ns(), 64), false);  // far away: no slot made
  queue::Figures f = l.finish();
  CHECK(f.produced == 101);
  CHECK(f.consumed == 104);
  CHECK(f.lost == 1);
  CHECK(f.duplicates == 1);
  CHECK(f.unexpected == 2);
  CHECK(f.corrupt == 1);
  CHECK(!f.exactly_once());
  REQUIRE(f.roundtrip);
  CHECK(f.roundtrip->count() == 100);
  REQUIRE(!f.backlog.empty());
  CHECK(f.backlog.back() == 101 - 104);  // produced minus consumed (the corrupt one counted too)
}

TEST_CASE("queue: a redelivery the broker marks is counted apart from a duplicate") {
  queue::Ledger l;
  l.start(now_ns());
  for (uint64_t id = 0; id < 3; ++id) l.produced(id);
  const int64_t at = now_ns();
  for (uint64_t id = 0; id < 3; ++id) l.consumed(queue::encode(id, at, 64), false);
  l.consumed(queue::encode(1, at, 64), false, false, true);  // handed out again, marked redelivered
  l.consumed(queue::encode(2, at, 64), false);               // again, unmarked: a duplicate
  queue::Figures f = l.finish();
  CHECK(f.redelivered == 1);
  CHECK(f.duplicates == 1);
  CHECK(f.lost == 0);
}

// Out of order: one consumer taking a producer's message after a later one of the same producer
// (a producer's ids are a range of 2^40, rising in its send order). Another producer's, another
// consumer's view, a marked redelivery and a duplicate are not counted.
TEST_CASE("queue: the ledger counts a message a consumer took after a later one of its producer") {
  queue::Ledger l;
  l.start(now_ns());
  const uint64_t b = uint64_t{1} << 40;  // the second producer's first id
  for (uint64_t id : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, b, b + 1}) l.produced(id);
  const int64_t at = now_ns();
  queue::Order one, two;
  auto take = [&](queue::Order& o, uint64_t id, bool redelivery = false) {
    l.consumed(queue::encode(id, at, 64), true, false, redelivery, false, &o);
  };
  take(one, 0);
  take(one, 2);
  take(one, 1);  // after 2: out of order
  take(one, b + 1);
  take(one, b);        // after b + 1: out of order
  take(two, 3);        // another consumer: its own view
  take(one, 2);        // a duplicate, not a reordering
  take(two, 0, true);  // a marked redelivery
  queue::Figures f = l.finish();
  CHECK(f.reordered == 2);
  CHECK(f.duplicates == 1);
  CHECK(f.redelivered == 1);
  CHECK(f.lost == 0);
}

TEST_CASE("queue: the ledger's memory is bounded by what mwbench sent, whatever arrives") {
  queue::Ledger l;
  l.start(now_ns());
  for (uint64_t id = 0; id < 1000; ++id) l.produced(id);
  const size_t before = l.footprint();
  // Forged messages (the checksum is public) with ids spread over the id space: each client's
  // range, far ends of the first one, and ids just past what was sent (where a slot used to grow).
  uint64_t forged = 0;
  for (uint64_t b = 0; b < 65536; b += 97, ++forged)
    l.consumed(queue::encode((b << 40) | ((uint64_t{1} << 40) - 1), now_ns(), 64), false);
  for (uint64_t i = 1; i <= 12; ++i, ++forged)
    l.consumed(queue::encode((uint64_t{1} << 20) * (1ull << i) + 999, now_ns(), 64), true);
  for (uint64_t i = 0; i < 200; ++i, ++forged) l.consumed(queue::encode(1000 + i, now_ns(), 64), false);
  CAPTURE(before);
  CHECK(l.footprint() == before);  // not one byte per foreign id
  queue::Figures f = l.finish();
  CHECK(f.unexpected == forged);
  CHECK(f.lost == 1000);
  CHECK(f.corrupt == 0);
}

TEST_CASE("queue: the ledger's counts are exact past 127, and a hostile stamp is never subtracted") {
  queue::Ledger l;
  l.start(now_ns());
  l.produced(1);
  l.sent(2);  // sent, never acknowledged
  l.produced(3);
  for (int k = 0; k < 300; ++k) l.consumed(queue::encode(1, now_ns(), 64), false);
  for (int k = 0; k < 200; ++k) l.consumed(queue::encode(2, now_ns(), 64), false);
  for (int k = 0; k < 500; ++k) l.consumed(queue::encode(77777, now_ns(), 64), false);  // never sent
  // Forged stamps on an id mwbench sent: the extremes, before this ledger, in the future. Each is
  // not this run's message (never acknowledged), its stamp never enters the round-trip latency.
  int stamps = 0;
  for (int64_t st :
       {INT64_MAX, INT64_MAX - 1, int64_t{1}, int64_t{0}, now_ns() + 3600'000'000'000, now_ns() - 1000'000'000}) {
    ++stamps;
    CHECK(l.consumed(queue::encode(3, st, 64), true).ok);
  }
  std::string neg = queue::encode(3, INT64_MIN, 64);  // a stamp with its top bit set
  CHECK(!queue::decode(neg).ok);
  l.consumed(neg, true);
  queue::Figures f = l.finish();
  CHECK(f.duplicates == 299);
  CHECK(f.unexpected == 200 + 500 + stamps);
  CHECK(f.lost == 1);  // 3: only forged copies came
  CHECK(f.corrupt == 1);
  CHECK(f.consumed == 300 + 200 + 500 + stamps + 1);
  CHECK(!f.roundtrip);
}

TEST_CASE("queue: redis lists, reliable lists and streams: produce, consume, roundtrip exactly once") {
  for (const char* kind : {"list", "reliable", "stream"}) {
    for (const char* op : {"produce", "consume", "roundtrip"}) {
      CAPTURE(kind);
      CAPTURE(op);
      Job j = queue_job("redis", op, kind, 2000, 4);
      j.warmup_ops = 20;
      j.opts["consumers"] = "3";
      JobResult r = run_one(j);
      check_exactly_once(r, 2000);
      CHECK(r.server.at("queue") == kind);
      if (std::string(op) == "consume") CHECK(r.queue->prefilled == 2020);
      if (std::string(op) == "roundtrip") {
        REQUIRE(r.queue->roundtrip);
        CHECK(r.queue->roundtrip->count() > 0);
        CHECK(r.queue->roundtrip->percentile(50) > 0);
        CHECK(test::metric(r, "roundtrip p99") >= test::metric(r, "roundtrip p50"));
        CHECK(test::metric(r, "roundtrip p50") > 0);
      }
      CHECK(!r.queue->backlog.empty());
    }
  }
  stop_shared_services();
}

// Message i goes to key i mod N: each key holds only its ids (read with LRANGE / XRANGE from
// another client), and consume and roundtrip take from every key.
TEST_CASE("queue: redis --queues 3: message i on key i mod 3, every kind exactly once") {
  for (const char* kind : {"list", "reliable", "stream"}) {
    CAPTURE(kind);
    const bool stream = std::string(kind) == "stream";
    test::check_three_queues(
        queue_job("redis", "produce", kind, 300, 2), "key", [stream](Adapter& a, const std::string& key, int k) {
          CHECK(a.describe().at("keys") == "3");
          const std::string host_port = a.target();
          redisContext* c = redisConnect("127.0.0.1", std::stoi(host_port.substr(host_port.find(':') + 1)));
          REQUIRE(c);
          auto* reply = static_cast<redisReply*>(stream ? redisCommand(c, "XRANGE %s - +", key.c_str())
                                                        : redisCommand(c, "LRANGE %s 0 -1", key.c_str()));
          REQUIRE(reply);
          REQUIRE(reply->type == REDIS_REPLY_ARRAY);
          CHECK(reply->elements == 100);
          size_t wrong = 0;
          for (size_t i = 0; i < reply->elements; ++i) {
            const redisReply* e = reply->element[i];  // a stream entry: [id, [field, message]]
            const redisReply* m = stream ? e->element[1]->element[1] : e;
            queue::Decoded d = queue::decode(std::string_view(m->str, m->len));
            if (!d.ok || d.id % 3 != static_cast<uint64_t>(k)) ++wrong;
          }
          CHECK(wrong == 0);
          freeReplyObject(reply);
          redisFree(c);
        });
  }
  stop_shared_services();
}

// Messages of 48 to 3000 bytes: the list holds each one intact at the size drawn for its id, and
// produce, consume and roundtrip take every one exactly once.
TEST_CASE("queue: redis --message-size 48-3000: each message at its own size, exactly once") {
  test::check_message_sizes(queue_job("redis", "produce", "list", 300, 2), "48-3000", [](Adapter& a) {
    const std::string t = a.target();
    redisContext* c = redisConnect("127.0.0.1", std::stoi(t.substr(t.find(':') + 1)));
    REQUIRE(c);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "LRANGE %s 0 -1", a.describe().at("key").c_str()));
    REQUIRE(reply);
    std::vector<std::string> out;
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i < reply->elements; ++i)
      out.emplace_back(reply->element[i]->str, reply->element[i]->len);
    freeReplyObject(reply);
    redisFree(c);
    return out;
  });
  stop_shared_services();
}

TEST_CASE("queue: a message lost on the server fails the check, by count") {
  for (const char* kind : {"list", "stream"}) {
    CAPTURE(kind);
    Job j = queue_job("redis", "produce", kind, 500, 2);
    auto a = test::make_adapter("redis", j);
    a->prepare(j);
    JobResult r = measure(j, *a);
    CHECK(r.ops_ok == 500);
    // Another client takes one message away before the end check.
    const std::string key = a->describe().at("key");
    const std::string host_port = a->target();
    const int port = std::stoi(host_port.substr(host_port.find(':') + 1));
    redisContext* c = redisConnect("127.0.0.1", port);
    REQUIRE(c);
    auto* reply =
        static_cast<redisReply*>(std::string(kind) == "list" ? redisCommand(c, "RPOP %s", key.c_str())
                                                             : redisCommand(c, "XTRIM %s MAXLEN 499", key.c_str()));
    REQUIRE(reply);
    freeReplyObject(reply);
    redisFree(c);
    Verdict v = a->verify(j, {r.ops_ok, 0, 0, 0});
    auto* q = dynamic_cast<QueueAdapter*>(a.get());
    REQUIRE(q);
    CAPTURE(v.detail);
    CHECK(v.checked);
    CHECK(!v.ok);
    CHECK(q->figures().lost == 1);
    CHECK(q->figures().duplicates == 0);
    CHECK(v.detail.find("1 lost, 0 duplicated") != std::string::npos);
    a->teardown();
  }
  stop_shared_services();
}

TEST_CASE("queue: messages an interrupted run left on the server are not drained, never lost") {
  for (const char* kind : {"list", "stream"}) {
    for (int taken : {0, 1}) {  // 1: another client really takes one away: that one is lost
      CAPTURE(kind);
      CAPTURE(taken);
      Job j = queue_job("redis", "produce", kind, 400, 2);
      auto a = test::make_adapter("redis", j);
      a->prepare(j);
      JobResult r = measure(j, *a);
      CHECK(r.ops_ok == 400);
      if (taken) {
        const std::string t = a->target(), key = a->describe().at("key");
        redisContext* c = redisConnect("127.0.0.1", std::stoi(t.substr(t.find(':') + 1)));
        REQUIRE(c);
        freeReplyObject(std::string(kind) == "list" ? redisCommand(c, "RPOP %s", key.c_str())
                                                    : redisCommand(c, "XTRIM %s MAXLEN 399", key.c_str()));
        redisFree(c);
      }
      stop_requested() = true;  // Ctrl-C before the end check drained the queue
      Verdict v = a->verify(j, {r.ops_ok, 0, 0, 0});
      stop_requested() = false;
      auto* q = dynamic_cast<QueueAdapter*>(a.get());
      REQUIRE(q);
      CAPTURE(v.detail);
      CHECK(v.checked);
      CHECK(v.ok == !taken);
      CHECK(q->figures().lost == static_cast<uint64_t>(taken));
      CHECK(q->figures().undrained == 400 - taken);
      CHECK(!q->figures().exactly_once());
      CHECK(v.detail.find("not drained: the server still holds " + std::to_string(400 - taken) +
                          " messages (the run was interrupted") != std::string::npos);
      a->teardown();
    }
  }
  stop_shared_services();
}

TEST_CASE("queue: consuming an empty queue times out cleanly, the rest not run") {
  Job j = queue_job("redis", "consume", "list", 10, 1);
  j.timeout_s = 0.5;
  auto a = test::make_adapter("redis", j);
  a->prepare(j);  // 10 messages
  {               // someone else empties the queue first
    const std::string t = a->target();
    redisContext* c = redisConnect("127.0.0.1", std::stoi(t.substr(t.find(':') + 1)));
    freeReplyObject(redisCommand(c, "DEL %s", a->describe().at("key").c_str()));
    redisFree(c);
  }
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = measure(j, *a);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  CHECK(r.ops_ok == 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 1);
  CHECK(r.ops_not_run == 9);
  Verdict v = a->verify(j, {0, 1, 9, 0});
  CHECK(!v.ok);  // the ten acknowledged messages are gone
  CHECK(dynamic_cast<QueueAdapter*>(a.get())->figures().lost == 10);
  a->teardown();
  stop_shared_services();
}

// The end check asks the server what it still holds: a count that fails is said, and fails the
// check (a server that cannot say may still hold messages), never taken for an empty queue.
TEST_CASE("queue: a count of what the server holds that fails is said by the end check, which fails") {
  for (int counts : {0, 1}) {  // 0: the drain's own count fails; 1: the count after the drain
    CAPTURE(counts);
    Job j = test::make_job("redis", "produce", 50, 1);
    MemQueue q(j, counts);
    q.prepare(j);
    JobResult r = measure(j, q);
    REQUIRE(r.ops_ok == 50);
    Verdict v = q.verify(j, {r.ops_ok, 0, 0, 0});
    CAPTURE(v.detail);
    CHECK(v.checked);
    CHECK(!v.ok);
    CHECK(q.figures().consumed == 50);  // every message came out: only the count failed
    CHECK(v.detail.find(counts ? "what the server still holds could not be read after the drain: memory: the count "
                                 "did not answer"
                               : "draining the queue: what the server holds could not be read: memory: the count did "
                                 "not answer") != std::string::npos);
  }
}

// Every message came out once, and the server keeps messages its consumers have passed: said, with
// their count; a failure of a job without faults, a figure of a fault job (a kill may leave them).
TEST_CASE("queue: messages the server keeps but never hands out: a failure, or under a fault a figure") {
  for (bool fault : {false, true}) {
    CAPTURE(fault);
    Job j = test::make_job("redis", "produce", 50, 1);
    MemQueue q(j, 1000, 7);
    q.prepare(j);
    JobResult r = measure(j, q);
    REQUIRE(r.ops_ok == 50);
    if (fault) j.faults = parse_faults("restart@50%/1s");
    Verdict v = q.verify(j, {r.ops_ok, 0, 0, 0});
    CAPTURE(v.detail);
    CHECK(q.figures().consumed == 50);
    CHECK(q.figures().lost == 0);
    CHECK(q.figures().stranded == 7);
    CHECK(v.detail.find("the server keeps 7 messages its consumers have passed and will never hand out") !=
          std::string::npos);
    CHECK(v.ok == fault);
    const Metrics m = q.metrics(1);
    CHECK(
        std::any_of(m.begin(), m.end(), [](const Metric& x) { return x.name == "messages stranded" && x.value == 7; }));
  }
}

TEST_CASE("queue: gearman produce, consume and roundtrip exactly once on every backend") {
  for (const char* backend : {"builtin", "libsqlite3", "libmemcached", "redis"}) {
    for (const char* op : {"produce", "consume", "roundtrip"}) {
      CAPTURE(backend);
      CAPTURE(op);
      Job j = queue_job("gearman", op, backend, 300, 2);
      j.opts["consumers"] = "2";
      JobResult r = run_one(j);
      check_exactly_once(r, 300);
      if (std::string(op) == "roundtrip") REQUIRE(r.queue->roundtrip);
    }
  }
}

TEST_CASE("queue: a SQLite table as a queue, in delete and wal mode, exactly once") {
  for (const char* mode : {"delete", "wal"}) {
    for (const char* op : {"produce", "consume", "roundtrip"}) {
      CAPTURE(mode);
      CAPTURE(op);
      Job j = test::make_job("sqlite", op, 500, 2);
      j.opts["path"] = "/dev/shm";
      j.opts["journal-mode"] = mode;
      j.opts["consumers"] = "2";
      j.timeout_s = 2;
      JobResult r = run_one(j);
      check_exactly_once(r, 500);
      if (std::string(op) == "roundtrip") REQUIRE(r.queue->roundtrip);
    }
  }
}

// A producer that waited out the timeout (its INSERT on a database another connection holds
// locked) asks whether the database answers: a count of the queue's rows on a connection of its
// own, waiting for the lock up to the timeout. The count fails, the probe names it, and the run
// ends in about two timeouts, not at --duration. The count's failure was once taken for "cannot
// say": the probe found nothing wrong, and every op waited out its timeout to the end of the run.
TEST_CASE("queue: a SQLite queue locked by another connection mid-run: the probe's count says so, the run ends") {
  Job j = test::make_job("sqlite", "produce", 0, 2);
  j.duration_s = 8;
  j.timeout_s = 0.5;
  j.opts["path"] = "/dev/shm";
  j.opts["journal-mode"] = "delete";  // an exclusive lock keeps readers out too
  j.opts["synchronous"] = "off";
  auto a = test::make_adapter("sqlite", j);
  a->prepare(j);
  const std::string file = a->describe().at("file");
  sqlite3* lock = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &lock) == SQLITE_OK);
  int locked = -1;
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = test::measure_while(j, *a, 700, [&] {
    // Between two INSERTs: SQLite may refuse the lock at once (BUSY without waiting) while the
    // producers come and go; each try waits up to 10 ms.
    sqlite3_busy_timeout(lock, 10);
    for (int i = 0; i < 200 && locked != SQLITE_OK; ++i)
      locked = sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr);
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(lock);
  a->teardown();
  REQUIRE(locked == SQLITE_OK);
  std::string samples;
  for (auto& e : r.error_samples) samples += e + "\n";
  CAPTURE(samples);
  CHECK(took < 4);
  CHECK(r.ops_ok > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  CHECK(samples.find("; the server did not answer a probe: sqlite " + file +
                     ": counting the queue's rows: database is locked") != std::string::npos);
}
