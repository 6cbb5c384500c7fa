// Queues: the ops every queue backend maps (produce, consume, roundtrip), the message every
// backend carries (an id, a timestamp on this host's monotonic clock, a checksum), and the
// ledger that proves every message produced came out exactly once. A backend (adapters/redis
// lists and streams, adapters/gearman) only moves bytes: QueueAdapter runs the phases, the
// consumers of a round trip, the end check and the figures.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/adapter.h"
#include "util/clock.h"  // now_ns: the clock of the stamps
#include "util/histogram.h"
#include "workload/workload.h"  // SizeDist, size_of_key

namespace mw {

enum class QueueOp { Produce, Consume, Roundtrip };
// {"produce", "consume", "roundtrip"}, for an adapter's op table.
std::vector<OpSpec> queue_op_specs();
bool is_queue_op(const std::string& op);

// What an acknowledged message is promised (a broker's delivery guarantee, QueueAdapter::delivery)
// or demanded (--expect): at most once (it may be lost, never delivered twice), at least once
// (never lost, perhaps delivered twice), exactly once (neither; a redelivery the broker marks is
// counted apart, as a consumer can tell it).
enum class Delivery : uint8_t { AtMostOnce, AtLeastOnce, ExactlyOnce };
const char* delivery_name(Delivery d);  // "at-most-once", ...
std::optional<Delivery> parse_delivery(const std::string& s);

// The options every queue adapter takes (options.h): appended to its own.
struct QueueOptions {
  int consumers = 1;                // roundtrip: consumers running beside the -c producers
  std::string message_size = "64";  // bytes per message (queue::message_sizes), id, stamp and checksum included
  std::string expect = "any";       // a Delivery's name; any: the broker's own guarantee
};
std::vector<OptionSpec> queue_option_specs();

namespace queue {

// "mwq1 <id:16 hex> <stamp ns:16 hex> <checksum:8 hex> " then 'x' up to `size` bytes. The
// checksum covers the id, the stamp and the message's length: a message cut short or lengthened
// fails it as a changed byte does.
constexpr size_t kHeader = 5 + 17 + 17 + 9;
constexpr size_t kMaxMessage = size_t{16} << 20;
// --message-size as --value-size reads it (SizeDist: 100, 100-1000, 32:50,1024:40; its errors name
// --message-size), each size from kHeader to kMaxMessage bytes.
SizeDist message_sizes(const std::string& text);
// The size of message `id`, drawn from its id alone (as a keyed value's from its key).
inline size_t size_of(const SizeDist& sizes, uint64_t id) { return size_of_key(sizes, id); }
std::string encode(uint64_t id, int64_t stamp_ns, size_t size);
// The same bytes into `m` (resized, no allocation once it has grown): the hot path's encoding.
void encode_into(std::string& m, uint64_t id, int64_t stamp_ns, size_t size);
struct Decoded {
  bool ok = false;      // false: not a message of ours, or its checksum does not match
  bool header = false;  // its id, stamp and length match the checksum (ok: and the padding is intact)
  uint64_t id = 0;
  int64_t stamp_ns = 0;
};
Decoded decode(std::string_view msg);
// The id of a message whose header is ours and intact, at the message's own length or at the size
// its id was put at (`sizes`), whatever follows it: a message cut short or lengthened (whose
// checksum, covering the length, decode() fails) still names the write it came from. Empty when
// the header is not ours or fails at both lengths (its id or stamp altered): no write can be named.
std::optional<uint64_t> id_of(std::string_view msg, const SizeDist& sizes);

// A crash check's read-back, after the restart: the messages read back, then each write's state.
// Present when its message came out intact; Corrupt when its id can be told (id_of) but the rest
// is not what was put (cut short, lengthened, its padding changed, or served in a frame its
// protocol does not allow: `damaged`); else Missing. An id that came out intact once is Present.
class ReadBack {
 public:
  explicit ReadBack(SizeDist sizes) : sizes_(std::move(sizes)) {}
  void add(std::string_view msg, bool damaged = false);
  std::vector<WriteState> states(std::span<const uint64_t> seqs) const;

 private:
  SizeDist sizes_;
  std::unordered_set<uint64_t> intact_, damaged_;
};

// --queues N: the queue of N message i goes to, i mod N (i read from its header; a message that is
// not ours goes to the first).
size_t queue_of(std::string_view msg, size_t n);

// What the ledger found, and the figures of the job's messages.
struct Figures {
  uint64_t prefilled = 0;    // produced before the measured phase (consume's untimed load)
  uint64_t produced = 0;     // acknowledged by the server, prefill included
  uint64_t consumed = 0;     // messages taken off the queue, duplicates included
  uint64_t duplicates = 0;   // consumed more than once (each extra time) and not marked as a redelivery
  uint64_t redelivered = 0;  // consumed again, marked by the broker as a redelivery (at least once allows it)
  uint64_t reordered = 0;    // consumed by a consumer after a later message of the same producer (Order)
  uint64_t lost = 0;         // acknowledged, never consumed, and not on the server either
  uint64_t undrained = 0;    // acknowledged, not consumed, still held by the server (an interrupted drain)
  uint64_t unexpected = 0;   // consumed, never acknowledged (a produce that failed but landed)
  uint64_t corrupt = 0;      // not a message of ours, or a bad checksum
  uint64_t drained = 0;      // consumed by the end check, after the measured phase
  uint64_t dropped = 0;      // dropped by the consumers' client library (a slow consumer's buffer full)
  uint64_t stranded = 0;     // kept by the server after the drain, passed by its consumers: never handed out
  uint64_t sum_produced = 0, sum_consumed = 0;  // checksums of ids (equal when exactly once)
  std::shared_ptr<Histogram> roundtrip;         // produce -> consume latency (roundtrip op)
  std::vector<int64_t> backlog;                 // per second of the run: produced - consumed
  std::string message_size;                     // the messages' sizes (SizeDist::text): "64", "48-4096"
  // Nothing lost, duplicated, unexpected or corrupt (messages not drained may remain).
  bool consistent() const { return lost == 0 && duplicates == 0 && unexpected == 0 && corrupt == 0; }
  bool exactly_once() const { return consistent() && undrained == 0; }
};

// One consumer's view of the order: a producer's ids (the driver's seqs, a range of 2^40 per
// client) rise in the order it sent them, and one consumer of a queue that keeps order takes a
// producer's messages in that order. late(): `id` comes after a higher id of its producer this
// consumer already took (a redelivery marked as one is not asked about).
class Order {
 public:
  bool late(uint64_t id) {
    uint64_t& top = top_[id >> 40];
    if (id < top) return true;
    top = id;
    return false;
  }

 private:
  std::unordered_map<uint64_t, uint64_t> top_;
};

// Every message's fate: sent by mwbench, acknowledged by the producer, consumed (how many times).
// Thread-safe. Its memory is bounded by what mwbench itself sent: one byte per id it sent (ids
// are the driver's seqs, disjoint ranges per client) plus one entry per id consumed more than 63
// times. A consumed id mwbench never sent (another client's, a forged one) is counted as never
// acknowledged, never stored per id; counts are exact however often an id comes back.
class Ledger {
 public:
  void start(int64_t t0) { t0_ = t0; }
  // Before the message goes out: a consumer may take it before its acknowledgement is read.
  void sent(uint64_t id);
  void produced(uint64_t id);  // acknowledged by the server (sent, if sent() was not called)
  // A message taken off the queue; its id and stamp when it is ours (corrupt counted otherwise).
  // One stamped before this ledger was made or later than now (a leftover of another run, a
  // forged one) is not matched to an id: it counts as never acknowledged, its stamp unused.
  // `redelivery`: the broker marked it as delivered before (AMQP's redelivered flag): a second
  // consumption of it is a redelivery an at-least-once broker may make, not a duplicate.
  // `damaged`: the broker served it damaged whatever its bytes (QueueConn::damaged): corrupt.
  // `order`: the consumer's, which counts the message reordered when it is late.
  queue::Decoded consumed(std::string_view msg, bool timed, bool draining = false, bool redelivery = false,
                          bool damaged = false, Order* order = nullptr);
  void prefilled(uint64_t n) { figures_.prefilled = n; }
  uint64_t produced_count() const { return n_produced_.load(); }
  uint64_t consumed_count() const { return n_consumed_.load(); }
  // Bytes the ledger holds per id (its slots and its overflow counts), what the bound is about.
  size_t footprint();
  // Tallies lost and duplicated messages (call once, after every consumer stopped).
  Figures finish();

  // --find-max on a queue (core/capacity.cpp), read while the consumers run: the counts so far
  // (the backlog is produced - consumed, prefill and drain included) and what went wrong so far.
  struct Live {
    uint64_t produced = 0, consumed = 0, duplicates = 0, corrupt = 0, unexpected = 0;
    int64_t backlog() const { return static_cast<int64_t>(produced) - static_cast<int64_t>(consumed); }
  };
  Live live();
  // The round trips recorded since the last call (one step's); the job's own histogram is kept
  // whole. Before the first call none are kept apart.
  Histogram take_window();

 private:
  uint8_t& slot(uint64_t id);                    // under mu_; made when missing
  uint8_t* find(uint64_t id);                    // under mu_; null when mwbench never sent `id`
  uint64_t times(uint64_t id, uint8_t s) const;  // how often `id` was consumed
  void count(std::vector<uint64_t>& per_s, int64_t t);
  std::mutex mu_;
  // [id >> 40][id & (2^40 - 1)]: bit 7 acknowledged, bit 6 sent, low 6 bits consumed (63: see more_)
  std::vector<std::vector<uint8_t>> buckets_;
  std::unordered_map<uint64_t, uint64_t> more_;  // consumptions beyond 63 of a sent id
  Figures figures_;
  std::vector<uint64_t> prod_s_, cons_s_;
  Histogram roundtrip_;
  Histogram window_;  // take_window()'s, once asked for
  bool windowed_ = false;
  uint64_t dup_live_ = 0;  // consumptions of an id already consumed, not marked as redeliveries
  uint64_t stray_ = 0;     // consumptions of ids mwbench never sent (never given a slot)
  int64_t t0_ = 0;
  const int64_t born_ = now_ns();  // stamps of this run's messages are later
  std::atomic<uint64_t> n_produced_{0}, n_consumed_{0};
};

}  // namespace queue

// One blocking connection to a queue, bounded by the job's timeout.
class QueueConn {
 public:
  virtual ~QueueConn() = default;
  // Ok once the server acknowledged the message.
  virtual OpResult produce(std::string_view msg) = 0;
  // Takes one message off the queue and acknowledges it, waiting up to wait_s: Ok with `msg`
  // filled, NotFound when the queue stayed empty, another status when the backend failed.
  virtual OpResult consume(std::string& msg, double wait_s) = 0;
  virtual bool alive() const { return true; }
  // The last message consume() returned was marked by the broker as a redelivery.
  virtual bool redelivered() const { return false; }
  // The last message consume() returned came in a frame its protocol does not allow, framed by its
  // byte count (a beanstalkd data block not ended by CRLF): the job the broker held is damaged.
  virtual bool damaged() const { return false; }
  // Messages the client library dropped before consume() could take them (its buffer for a slow
  // consumer full: core NATS's pending limits), so far.
  virtual uint64_t dropped() const { return 0; }
};

// A connection that keeps produce acknowledgements in flight (pipelined LPUSH, publisher
// confirms, JetStream's asynchronous publish): the driver's event loop polls it as any Client
// (fd, flush, reap, wants_write, alive, abort), but the core owns the messages: it encodes each
// one, hands it to send(), and enters it in the ledger when its completion is Ok. A sender only
// moves bytes and matches acknowledgements to seqs; Ok means the broker acknowledged the message.
class QueueSender : public Client {
 public:
  // Queues `msg` as request `seq` without waiting (the bytes may go out on flush()).
  virtual void send(uint64_t seq, std::string_view msg) = 0;
  OpResult run(uint64_t) final { return {Status::Unsupported, 0, "a sender is driven by the core's producer"}; }
};

// --crash kill on a queue (the check after the restart): the messages a consumer takes off the
// queue, added to `into` (with the consumer's damaged()), until it stays empty for wait_s (or
// `cap` messages); throws SetupError naming the failure of a consume. Then into.states(seqs).
void read_back(QueueConn& c, uint64_t cap, double wait_s, queue::ReadBack& into);

// The figures shown under a queue job's row: consumed, the ledger's faults, the round trip's
// p50/p99/max and the backlog's max (a search's row: its own step's, from a Figures of that step).
Metrics queue_metrics(const queue::Figures& f);

// The adapter of a queue backend: the backend gives start() and connect(); this class runs the
// untimed prefill of consume, the consumers of a round trip, the end check (wait for the
// consumers, drain the rest, exactly-once) and the figures.
class QueueAdapter : public Adapter {
 public:
  explicit QueueAdapter(const Job& job);
  ~QueueAdapter() override;
  void prepare(const Job& job) final;
  std::unique_ptr<Client> open(const Job& job, int client) override;
  Verdict verify(const Job& job, const Counts& c) final;
  Metrics metrics(double elapsed_s) override;
  void teardown() override;
  QueueOp op() const { return op_; }
  queue::Ledger& ledger() { return ledger_; }
  // Consume calls of the round trip's consumers that failed so far.
  uint64_t consumer_failures();
  // After verify(): what the ledger found.
  const queue::Figures& figures() const { return figures_; }
  // The backend's abilities (backend_abilities) and the queue's figures.
  Abilities abilities(const Job& job) final {
    Abilities a = backend_abilities(job);
    a.queue = &figures_;
    return a;
  }

 protected:
  virtual void start(const Job& job) = 0;  // the server, the queue: untimed
  // What the backend can do for the job besides (Adapter::abilities: crash hooks, contract, events).
  virtual Abilities backend_abilities(const Job&) { return {}; }
  virtual std::unique_ptr<QueueConn> connect(const Job& job) = 0;
  // A pipelined produce (-P acknowledgements in flight), or null: produce and roundtrip then
  // run on connect()'s blocking produce, one message at a time.
  virtual std::unique_ptr<QueueSender> sender(const Job&) { return nullptr; }
  // Messages still held by the server (a list's length, pending entries), or -1 if it cannot say
  // (core NATS stores nothing). A count that fails throws: the probe names it, the end check fails.
  virtual int64_t remaining(const Job&) { return -1; }
  // Messages the server keeps that its consumers have passed and will never hand out (a
  // JetStream work queue's messages whose acks a crash half-lost): not in remaining(), which
  // counts what a consumer still takes. 0 when it cannot say; a count that fails throws.
  virtual int64_t stranded(const Job&) { return 0; }
  virtual void stop_backend() {}
  // Messages one consumer may hold unacknowledged beyond the one it takes (AMQP's prefetch): the
  // consume op's prefill adds that many per client, so no client waits for messages another
  // client holds once its own share is done; the end check drains them.
  virtual uint64_t held_per_consumer(const Job&) const { return 0; }
  // What the broker promises each acknowledged message under the job's settings: the end check
  // judges the ledger against it, or against --expect when given.
  virtual Delivery delivery(const Job&) const { return Delivery::ExactlyOnce; }
  const QueueOptions& queue_options() const { return qo_; }
  // --message-size, read: an adapter's limits (a broker's largest message) are checked against max().
  const SizeDist& message_sizes() const { return sizes_; }

 private:
  void prefill(const Job& job);
  void prefill_pipelined(const Job& job, std::unique_ptr<QueueSender> s, uint64_t n);
  void stop_consumers();
  void drain(const Job& job);
  int64_t held_after_drain(const Job& job, std::string& why);
  // After an op waited out the timeout: "" when the server answers a round trip (remaining())
  // within the timeout, else why not. One verdict shared by the job's clients for one timeout,
  // so a stopped server costs one probe, not one per client.
  std::string probe(const Job& job);

  QueueOp op_;
  QueueOptions qo_;
  SizeDist sizes_;
  queue::Ledger ledger_;
  queue::Figures figures_;
  std::vector<std::thread> consumers_;
  std::atomic<bool> stop_{false};
  std::mutex err_mu_;
  std::vector<std::string> consumer_errors_;
  uint64_t consumer_failed_ = 0;
  std::optional<Delivery> expect_;    // --expect; none: delivery()
  std::atomic<uint64_t> dropped_{0};  // the round trip's consumers' QueueConn::dropped(), as each stops
  std::mutex probe_mu_;
  std::string probe_why_;
  int64_t probe_failed_at_ = 0;
};

}  // namespace mw
