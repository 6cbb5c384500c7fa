// QueueAdapter: the phases every queue backend shares. produce: the clients enqueue; consume:
// an untimed prefill of -n (+ warm-up) messages, then the clients dequeue; roundtrip: the -c
// clients produce while --consumers threads consume, each message's latency taken from its
// stamp. The end check waits for the consumers, drains what is left (untimed) and asks the
// ledger whether every acknowledged message came out exactly once.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "api/options.h"
#include "api/stop.h"
#include "queue/queue.h"
#include "util/text.h"

namespace mw {
namespace {

// A driver client over one blocking queue connection. Every op that waited out the timeout
// (a produce, a consume that got nothing) asks `probe` whether the server still answers; when it
// does not, the client is lost and its other ops are not run (the rule of every adapter).
class QueueClient final : public Client {
 public:
  QueueClient(std::unique_ptr<QueueConn> conn, QueueOp op, queue::Ledger& ledger, const SizeDist& sizes,
              double timeout_s, std::function<std::string()> probe)
      : conn_(std::move(conn)),
        op_(op),
        ledger_(ledger),
        sizes_(sizes),
        timeout_s_(timeout_s),
        probe_(std::move(probe)) {}

  bool alive() const override { return !empty_ && !lost_ && conn_->alive(); }

  OpResult run(uint64_t seq) override {
    if (op_ == QueueOp::Consume) {
      OpResult r = conn_->consume(buf_, timeout_s_);
      if (r.status == Status::NotFound) {  // nothing came: this client stops, its other ops are not run
        empty_ = true;
        if (std::string why = probe_(); !why.empty())
          return {Status::Timeout, 0, keep("no message within the timeout, and the server did not answer: " + why)};
        return {Status::Timeout, 0, "the queue stayed empty for the timeout: no message to consume"};
      }
      if (r.status == Status::Timeout) return probed(r);
      if (r.status != Status::Ok) return r;
      if (!ledger_.consumed(buf_, false, false, conn_->redelivered(), conn_->damaged()).ok)
        return {Status::Mismatch, 0,
                conn_->damaged() ? "the broker served a damaged message (its frame broke the protocol)"
                                 : "a message that is not mwbench's, or whose checksum does not match"};
      return {Status::Ok, static_cast<uint32_t>(buf_.size()), {}};
    }
    const int64_t stamp = due_ns() > 0 ? due_ns() : now_ns();  // due, under a rate
    queue::encode_into(buf_, seq, stamp, queue::size_of(sizes_, seq));
    ledger_.sent(seq);
    OpResult r = conn_->produce(buf_);
    if (r.status == Status::Ok) {
      ledger_.produced(seq);
      r.bytes = static_cast<uint32_t>(buf_.size());
    }
    return r.status == Status::Timeout ? probed(r) : r;
  }

 private:
  OpResult probed(OpResult r) {
    if (std::string why = probe_(); !why.empty()) {
      lost_ = true;
      r.detail = keep(std::string(r.detail) + "; the server did not answer a probe: " + why);
    }
    return r;
  }
  std::string_view keep(std::string s) {
    detail_ = std::move(s);
    return detail_;
  }

  std::unique_ptr<QueueConn> conn_;
  QueueOp op_;
  queue::Ledger& ledger_;
  const SizeDist& sizes_;  // the adapter's, which outlives its clients
  double timeout_s_;
  std::function<std::string()> probe_;
  bool empty_ = false, lost_ = false;
  std::string buf_, detail_;
};

// The core's asynchronous produce over a broker's QueueSender: each message encoded at submit
// (stamped then), up to -P acknowledgements in flight on the driver's event loop, each message
// entered in the ledger when the broker acknowledged it.
class QueueProducer final : public Client {
 public:
  QueueProducer(std::unique_ptr<QueueSender> s, queue::Ledger& ledger, const SizeDist& sizes, double timeout_s)
      : s_(std::move(s)), ledger_(ledger), sizes_(sizes), timeout_s_(timeout_s) {}

  int fd() const override { return s_->fd(); }
  bool alive() const override { return s_->alive(); }
  bool wants_write() const override { return s_->wants_write(); }
  void flush() override { s_->flush(); }
  void abort(std::string_view why) override { s_->abort(why); }

  void submit(uint64_t seq) override {
    const int64_t stamp = due_ns() > 0 ? due_ns() : now_ns();  // due, under a rate
    queue::encode_into(msg_, seq, stamp, queue::size_of(sizes_, seq));
    ledger_.sent(seq);
    s_->send(seq, msg_);
  }

  size_t reap(std::span<Completion> out) override {
    const size_t k = s_->reap(out);
    for (size_t i = 0; i < k; ++i) {
      if (out[i].result.status != Status::Ok) continue;
      ledger_.produced(out[i].seq);
      out[i].result.bytes = static_cast<uint32_t>(queue::size_of(sizes_, out[i].seq));
    }
    return k;
  }

  // Blocking use (the prefill, a driver without an event loop): one message, its acknowledgement
  // within the timeout; a sender that does not answer is aborted and fails the message.
  OpResult run(uint64_t seq) override {
    submit(seq);
    flush();
    Completion c[1];
    int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s_ * 1e9);
    for (bool aborted = false;;) {
      if (reap(c) == 1) return c[0].result;
      if (aborted || fd() < 0) return {Status::Error, 0, "the broker's connection is lost"};
      if (now_ns() >= deadline) {
        abort("no acknowledgement within the timeout");
        aborted = true;
        continue;
      }
      pollfd p{fd(), static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
      if (poll(&p, 1, 100) > 0 && (p.revents & POLLOUT)) flush();
    }
  }

 private:
  std::unique_ptr<QueueSender> s_;
  queue::Ledger& ledger_;
  const SizeDist& sizes_;
  double timeout_s_;
  std::string msg_;
};

}  // namespace

void read_back(QueueConn& c, uint64_t cap, double wait_s, queue::ReadBack& into) {
  std::string m;
  for (uint64_t i = 0; i < cap; ++i) {
    OpResult r = c.consume(m, wait_s);
    if (r.status == Status::NotFound) return;
    if (r.status != Status::Ok) throw SetupError("reading the queue back: " + std::string(r.detail));
    into.add(m, c.damaged());
  }
}

QueueAdapter::QueueAdapter(const Job& job) : op_(op_of<QueueOp>(job)) {
  detail::fill_options(job, queue_option_specs(), typeid(QueueOptions), &qo_);
  sizes_ = queue::message_sizes(qo_.message_size);
  if (qo_.expect != "any" && qo_.expect != "durable" && !(expect_ = parse_delivery(qo_.expect)))
    throw SetupError("--expect " + qo_.expect + ": expected exactly-once, at-least-once, at-most-once or any");
}

QueueAdapter::~QueueAdapter() { stop_consumers(); }

void QueueAdapter::prepare(const Job& job) {
  if (op_ == QueueOp::Consume && job.duration_s > 0)
    throw SetupError(job.adapter + " consume takes the messages of a prefilled queue: give -n, not --duration");
  start(job);
  if (op_ == QueueOp::Consume) prefill(job);
  ledger_.start(now_ns());
  if (op_ != QueueOp::Roundtrip) return;
  // Every consumer connected before any polls (a poll loop would slow the next connect down), a
  // stop checked between two; a set-up error here, not in a thread.
  std::vector<std::shared_ptr<QueueConn>> conns;
  for (int k = 0; k < qo_.consumers; ++k) {
    throw_if_stopped("opening consumer " + std::to_string(k + 1) + " of " + std::to_string(qo_.consumers));
    conns.push_back(connect(job));
  }
  // --reconnect-backoff (a fault job): a consumer whose connection is lost connects again after
  // 10 ms, then twice as long after each try that fails (a failed consume call), up to the option.
  const auto backoff_max = static_cast<int64_t>(job.reconnect_backoff_s * 1e9);
  for (auto& c0 : conns) {
    consumers_.emplace_back([this, c0, backoff_max, job] {
      std::shared_ptr<QueueConn> c = c0;
      struct Dropped {  // what its libraries dropped, however the thread ends
        QueueAdapter& a;
        std::shared_ptr<QueueConn>& c;
        ~Dropped() {
          if (c) a.dropped_ += c->dropped();
        }
      } dropped{*this, c};
      auto failed = [this](std::string_view why) {
        std::lock_guard lk(err_mu_);
        ++consumer_failed_;
        if (consumer_errors_.size() < 3) consumer_errors_.emplace_back(why);
      };
      queue::Order order;
      std::string m;
      int64_t backoff = 0;
      try {
        while (!stop_.load(std::memory_order_relaxed)) {
          if (!c) {  // lost: a new connection, after the back-off
            const int64_t until = now_ns() + backoff;
            while (now_ns() < until && !stop_.load(std::memory_order_relaxed))
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
            if (stop_.load(std::memory_order_relaxed)) return;
            try {
              c = connect(job);
              backoff = 0;
            } catch (const SetupError& e) {
              failed(std::string("reconnect failed: ") + e.what());
              backoff = std::min(backoff_max, backoff > 0 ? backoff * 2 : int64_t{10'000'000});
            }
            continue;
          }
          OpResult r = c->consume(m, 0.1);
          if (r.status == Status::Ok)
            ledger_.consumed(m, true, false, c->redelivered(), c->damaged(), &order);
          else if (r.status == Status::NotFound)
            continue;
          else {
            failed(r.detail);
            if (c->alive()) continue;
            if (backoff_max <= 0) return;
            dropped_ += c->dropped();
            c.reset();
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard lk(err_mu_);
        ++consumer_failed_;
        consumer_errors_.emplace_back(e.what());
      } catch (...) {
        std::lock_guard lk(err_mu_);
        ++consumer_failed_;
        consumer_errors_.emplace_back("unknown exception");
      }
    });
  }
}

// The prefill through the broker's pipelined produce: up to 64 messages in flight, each
// acknowledged within the timeout of the last progress.
void QueueAdapter::prefill_pipelined(const Job& job, std::unique_ptr<QueueSender> s, uint64_t n) {
  QueueProducer p(std::move(s), ledger_, sizes_, job.timeout_s);
  uint64_t next = 0, acked = 0;
  std::vector<Completion> done(64);
  int64_t progress = now_ns();
  while (acked < n) {
    throw_if_stopped("the queue's prefill");
    for (; next < n && next - acked < done.size(); ++next) p.submit(next);
    p.flush();
    const size_t k = p.reap(done);
    for (size_t i = 0; i < k; ++i)
      if (done[i].result.status != Status::Ok)
        throw SetupError(job.adapter + " " + target() + ": prefilling the queue failed at message " +
                         std::to_string(done[i].seq) + ": " + std::string(done[i].result.detail));
    acked += k;
    if (k > 0)
      progress = now_ns();
    else if (now_ns() - progress > static_cast<int64_t>(job.timeout_s * 1e9))
      throw SetupError(job.adapter + " " + target() + ": prefilling the queue: no acknowledgement within the timeout");
    if (k == 0) {  // (poll ignores a negative fd and waits)
      pollfd pf{p.fd(), static_cast<short>(POLLIN | (p.wants_write() ? POLLOUT : 0)), 0};
      poll(&pf, 1, 10);
    }
  }
  ledger_.prefilled(n);
}

void QueueAdapter::prefill(const Job& job) {
  const uint64_t n = job.n + job.warmup_ops + static_cast<uint64_t>(job.clients) * held_per_consumer(job);
  if (auto s = sender(job)) return prefill_pipelined(job, std::move(s), n);
  auto c = connect(job);
  for (uint64_t id = 0; id < n; ++id) {
    if (id % 256 == 0) throw_if_stopped("the queue's prefill");
    OpResult r = c->produce(queue::encode(id, now_ns(), queue::size_of(sizes_, id)));
    if (r.status != Status::Ok)
      throw SetupError(job.adapter + " " + target() + ": prefilling the queue failed at message " + std::to_string(id) +
                       ": " + std::string(r.detail));
    ledger_.produced(id);
  }
  ledger_.prefilled(n);
}

std::unique_ptr<Client> QueueAdapter::open(const Job& job, int) {
  if (op_ != QueueOp::Consume)
    if (auto s = sender(job)) return std::make_unique<QueueProducer>(std::move(s), ledger_, sizes_, job.timeout_s);
  return std::make_unique<QueueClient>(connect(job), op_, ledger_, sizes_, job.timeout_s,
                                       [this, j = job] { return probe(j); });
}

std::string QueueAdapter::probe(const Job& job) {
  std::lock_guard lk(probe_mu_);
  const int64_t now = now_ns();
  if (!probe_why_.empty() && now - probe_failed_at_ < static_cast<int64_t>(job.timeout_s * 1e9)) return probe_why_;
  try {
    remaining(job);  // a real round trip on a fresh connection, bounded by the timeout
    probe_why_.clear();
  } catch (const std::exception& e) {
    probe_why_ = e.what();
    probe_failed_at_ = now_ns();
  }
  return probe_why_;
}

uint64_t QueueAdapter::consumer_failures() {
  std::lock_guard lk(err_mu_);
  return consumer_failed_;
}

void QueueAdapter::stop_consumers() {
  stop_ = true;
  for (auto& t : consumers_) t.join();
  consumers_.clear();
}

// What the measured phase left on the queue, consumed untimed so that the ledger sees every
// message. At most twice what was produced: a server that hands out messages forever cannot
// keep the check going.
// A wait that finds nothing ends the drain only when the server says it holds nothing more (a
// slow persistent backend can take longer than the wait to hand out a job); a server that holds
// messages and hands out none within the job's timeout ends it too.
void QueueAdapter::drain(const Job& job) {
  auto c = connect(job);
  queue::Order order;
  std::string m;
  const uint64_t cap = 2 * ledger_.produced_count() + 1000;
  int64_t progress = now_ns();
  for (uint64_t i = 0; i < cap && !stop_requested().load(); ++i) {
    OpResult r = c->consume(m, 0.2);
    if (r.status == Status::NotFound) {
      int64_t held = 0;
      try {
        held = remaining(job);
      } catch (const std::exception& e) {
        throw SetupError("draining the queue: what the server holds could not be read: " + std::string(e.what()));
      }
      if (held <= 0) return;
      if (now_ns() - progress > static_cast<int64_t>(job.timeout_s * 1e9))
        throw SetupError("draining the queue: the server holds " + std::to_string(held) +
                         " messages but handed out none within the timeout");
      continue;
    }
    if (r.status != Status::Ok) throw SetupError("draining the queue failed: " + std::string(r.detail));
    ledger_.consumed(m, false, true, c->redelivered(), c->damaged(), &order);
    progress = now_ns();
  }
}

// What the server still holds once the drain ended, -1 when it cannot say; -1 and `why` when
// the count failed (the server did not answer, its count was an error).
int64_t QueueAdapter::held_after_drain(const Job& job, std::string& why) {
  try {
    return remaining(job);
  } catch (const std::exception& e) {
    why = e.what();
    return -1;
  }
}

namespace {

// A round trip's end: the consumers catch up, or make no progress for the timeout.
void wait_for_consumers(const queue::Ledger& ledger, double timeout_s) {
  uint64_t seen = ledger.consumed_count();
  int64_t since = now_ns();
  while (ledger.consumed_count() < ledger.produced_count() && !stop_requested().load() &&
         now_ns() - since < static_cast<int64_t>(timeout_s * 1e9)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (uint64_t now_seen = ledger.consumed_count(); now_seen != seen) seen = now_seen, since = now_ns();
  }
}

// What the end check found besides the ledger's figures, and what it judges them against.
struct EndCheck {
  int64_t held = -1;  // what the server still holds after the drain (-1: it cannot say)
  bool interrupted = false;
  std::string drain_error, count_error;
  Delivery wanted = Delivery::ExactlyOnce;  // promised, or demanded by --expect
  bool expected = false;                    // by --expect
  uint64_t in_doubt = 0;                    // a fault job's produces that failed
  uint64_t consumer_failed = 0;
  const std::string* consumer_error = nullptr;  // the first, if any
};

// The ledger's figures in words: what was produced and consumed, and what went wrong.
std::string ledger_text(const Job& job, const queue::Figures& f, const EndCheck& e) {
  const bool may_lose = e.wanted == Delivery::AtMostOnce, may_repeat = e.wanted == Delivery::AtLeastOnce;
  std::string d = "produced " + std::to_string(f.produced);
  if (f.prefilled) d += " (" + std::to_string(f.prefilled) + " prefilled)";
  d += ", consumed " + std::to_string(f.consumed);
  if (f.drained) d += " (" + std::to_string(f.drained) + " drained after the run)";
  if (f.consistent()) {
    d += f.undrained ? ": no message lost or duplicated, checksums not compared (not drained)"
                     : ": every message exactly once, checksums of ids match";
  } else {
    d += ": " + std::to_string(f.lost) + " lost, " + std::to_string(f.duplicates) + " duplicated, " +
         std::to_string(f.unexpected) + " never acknowledged, " + std::to_string(f.corrupt) + " corrupt";
    d += f.sum_produced == f.sum_consumed || f.undrained ? "" : "; checksums of ids differ";
    if (f.unexpected && f.unexpected <= e.in_doubt)
      d += "; the never acknowledged are produces that failed in the fault (in doubt) and landed";
    const std::string by = std::string(delivery_name(e.wanted)) +
                           (e.expected ? " (--expect)" : " (what " + job.adapter + " promises under its settings)");
    if (f.lost) {
      d += "; lost " +
           fmt(100.0 * static_cast<double>(f.lost) / static_cast<double>(std::max<uint64_t>(1, f.produced)), 2) +
           "% of the acknowledged, " + (may_lose ? "allowed" : "not allowed") + " by " + by;
      if (f.dropped) d += "; the consumers' client library dropped " + std::to_string(f.dropped) + " (a slow consumer)";
      if (may_lose) d += " (--expect exactly-once or at-least-once fails on it)";
    }
    if (f.duplicates) d += std::string("; duplicates ") + (may_repeat ? "allowed" : "not allowed") + " by " + by;
  }
  if (f.redelivered) d += "; " + std::to_string(f.redelivered) + " redelivered (at least once: the broker may)";
  if (f.reordered) d += "; " + std::to_string(f.reordered) + " consumed after a later message of their producer";
  return d;
}

// The end check's verdict. Judged against the delivery promised (or demanded by --expect): at most
// once lets the broker lose messages (a figure, with what the consumers' library dropped), at least
// once deliver them twice; nothing lets it hand out a message never acknowledged or a corrupt one.
Verdict judge_end_check(const Job& job, const queue::Figures& f, const EndCheck& e) {
  const bool may_lose = e.wanted == Delivery::AtMostOnce, may_repeat = e.wanted == Delivery::AtLeastOnce;
  const bool kept =
      (f.lost == 0 || may_lose) && (f.duplicates == 0 || may_repeat) && f.unexpected <= e.in_doubt && f.corrupt == 0;
  // A fault job's consumers fail while the server is gone, and reconnect: its faults' lines say so.
  bool ok = kept && e.drain_error.empty() && e.count_error.empty() && (e.consumer_failed == 0 || !job.faults.empty());
  std::string d = ledger_text(job, f, e);
  if (!e.drain_error.empty()) d += "; " + e.drain_error;
  if (!e.count_error.empty()) d += "; what the server still holds could not be read after the drain: " + e.count_error;
  if (e.consumer_failed) {
    d += "; " + std::to_string(e.consumer_failed) + " consume calls failed";
    if (e.consumer_error) d += " (" + *e.consumer_error + ")";
  }
  if (e.interrupted && f.undrained) {
    d += "; not drained: the server still holds " + (e.held >= 0 ? std::to_string(e.held) : std::string("some")) +
         " messages (the run was interrupted before the end check took them)";
  } else if (!e.interrupted && e.drain_error.empty() && e.held > 0) {
    ok = false;
    d += "; the server still holds " + std::to_string(e.held) + " messages";
  }
  // Every message came out (or is counted lost): what the server keeps beyond that is its own
  // leftover, which a crash of a fault job may leave and nothing else should.
  if (f.stranded) {
    d += "; the server keeps " + std::to_string(f.stranded) +
         " messages its consumers have passed and will never hand out";
    if (job.faults.empty())
      ok = false;
    else
      d += " (left by the fault: their acknowledgements reached it, their removal did not)";
  }
  return {true, ok, d};
}

}  // namespace

Verdict QueueAdapter::verify(const Job& job, const Counts& counts) {
  if (op_ == QueueOp::Roundtrip) wait_for_consumers(ledger_, job.timeout_s);
  stop_consumers();
  EndCheck e;
  try {
    drain(job);
  } catch (const std::exception& ex) {
    e.drain_error = ex.what();
  }
  figures_ = ledger_.finish();
  figures_.message_size = sizes_.text();
  figures_.dropped = dropped_.load();
  e.held = e.drain_error.empty() ? held_after_drain(job, e.count_error) : -1;
  if (e.held >= 0) try {
      figures_.stranded = static_cast<uint64_t>(std::max<int64_t>(0, stranded(job)));
    } catch (const std::exception& ex) {
      e.count_error = ex.what();
    }
  e.interrupted = stop_requested().load();
  auto& f = figures_;
  // Interrupted before the drain took them, messages still on the server are not drained, never a
  // loss: only what neither came out nor stayed is lost (on a server that cannot say what it
  // holds, nothing is proven lost). A drain that ran to its end and left messages fails below.
  if (e.interrupted)
    f.undrained = e.held > 0 ? std::min(static_cast<uint64_t>(e.held), f.lost) : e.held < 0 ? f.lost : 0;
  f.lost -= f.undrained;
  e.wanted = expect_.value_or(delivery(job));
  e.expected = expect_.has_value();
  // A fault job's produces that failed are in doubt: one the broker stored before the fault cut its
  // acknowledgement off comes out never acknowledged, as many as failed at most.
  e.in_doubt = job.faults.empty() ? 0 : counts.failed;
  e.consumer_failed = consumer_failed_;
  if (!consumer_errors_.empty()) e.consumer_error = &consumer_errors_.front();
  return judge_end_check(job, f, e);
}

Metrics QueueAdapter::metrics(double) { return queue_metrics(figures_); }

Metrics queue_metrics(const queue::Figures& f) {
  Metrics m;
  m.push_back(count_metric("consumed", f.consumed - f.drained));
  if (f.lost || f.duplicates) {
    m.push_back(count_metric("messages lost", f.lost));
    m.push_back(count_metric("messages duplicated", f.duplicates));
  }
  if (f.redelivered) m.push_back(count_metric("messages redelivered", f.redelivered));
  if (f.reordered) m.push_back(count_metric("messages reordered", f.reordered));
  if (f.undrained) m.push_back(count_metric("messages not drained", f.undrained));
  if (f.stranded) m.push_back(count_metric("messages stranded", f.stranded));
  if (f.roundtrip) {  // from the message's stamp to its consumer, on one host's clock
    const Histogram& h = *f.roundtrip;
    auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
    m.push_back({"roundtrip p50", ms(h.percentile(50)), "ms", Metric::Merge::Same});
    m.push_back({"roundtrip p99", ms(h.percentile(99)), "ms", Metric::Merge::Same});
    m.push_back({"roundtrip max", ms(h.max()), "ms", Metric::Merge::Same});
  }
  if (!f.backlog.empty())
    m.push_back({"backlog max", static_cast<double>(*std::max_element(f.backlog.begin(), f.backlog.end())), "messages",
                 Metric::Merge::Same});
  return m;
}

void QueueAdapter::teardown() {
  stop_consumers();
  stop_backend();
}

}  // namespace mw
