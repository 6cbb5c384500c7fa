#include "adapters/postgres/replicas.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>

#include "api/stop.h"
#include "util/clock.h"
#include "util/status.h"

namespace mw::pg {

namespace {

// An LSN as pg_lsn prints it ("16/B374D848"), as a number; 0 when it is not one.
uint64_t lsn_of(const char* s) {
  if (!s) return 0;
  char* end = nullptr;
  const uint64_t hi = std::strtoull(s, &end, 16);
  if (!end || *end != '/') return 0;
  return hi << 32 | std::strtoull(end + 1, nullptr, 16);
}

void nap(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string sync_names(int sync) { return "ANY " + std::to_string(sync) + " (*)"; }

// Waits until `done` is true or `until` passes: false then.
bool wait_for(const std::function<bool()>& done, int64_t until, const char* what) {
  while (!done()) {
    if (now_ns() >= until) return false;
    throw_if_stopped(what);
    nap(50);
  }
  return true;
}

}  // namespace

std::vector<std::string> ReplicaSet::primary_args(int sync) {
  // WAL kept for a replica that falls behind a checkpoint (no slots: a replica killed with the
  // set must not hold the primary's WAL forever).
  std::vector<std::string> a = {"-c", "wal_level=replica", "-c", "max_wal_senders=10", "-c", "wal_keep_size=512MB"};
  if (sync > 0) a.insert(a.end(), {"-c", "synchronous_standby_names=" + sync_names(sync)});
  return a;
}

ReplicaSet::ReplicaSet(std::shared_ptr<Service> primary, bool fsync, int replicas, int sync, double timeout_s)
    : sync_(sync) {
  nodes_.push_back(std::move(primary));
  const int from = nodes_[0]->server_port();
  for (int i = 1; i <= replicas; ++i) {
    ServiceSpec spec = service_spec(fsync);
    spec.name = "postgres replica " + std::to_string(i);
    spec.args.insert(spec.args.end(), {"-c", "hot_standby=on", "-c", "wal_keep_size=512MB"});
    // A copy of the primary as it is (its pg_hba.conf too), standby.signal and primary_conninfo
    // written (-R), the WAL of the copy streamed beside it (-X stream).
    spec.setup = {{binary("pg_basebackup"), "-h", "127.0.0.1", "-p", std::to_string(from), "-U", "postgres", "-D",
                   "{dir}/data", "-X", "stream", "-R", "-c", "fast", "--no-sync"}};
    spec.start_timeout_s = std::max(30.0, timeout_s);
    nodes_.push_back(std::make_shared<Service>(spec));
  }
  wait_ready(std::max(30.0, timeout_s));
  watcher_ = std::thread([this] { watch(); });
}

ReplicaSet::~ReplicaSet() {
  quit_ = true;
  if (watcher_.joinable()) watcher_.join();
}

Endpoint ReplicaSet::node(size_t i, double timeout_s) const {
  Endpoint ep;
  ep.params = {{"host", "127.0.0.1"},
               {"port", std::to_string(nodes_[i]->server_port())},
               {"user", "postgres"},
               {"dbname", "postgres"}};
  ep.where = node_name(i);
  ep.timeout_s = timeout_s;
  return ep;
}

std::string ReplicaSet::conninfo_of(size_t i) const {
  return "host=127.0.0.1 port=" + std::to_string(nodes_[i]->server_port()) + " user=postgres";
}

std::string ReplicaSet::node_name(size_t i) const {
  const std::string at = "(127.0.0.1:" + std::to_string(nodes_[i]->server_port()) + ")";
  return i == 0 ? "primary " + at : "replica " + std::to_string(i) + " " + at;
}

void ReplicaSet::wait_ready(double timeout_s) {
  const int64_t until = deadline(timeout_s);
  const int want = static_cast<int>(nodes_.size()) - 1, want_sync = std::min(sync_, want);
  std::string last;
  for (;;) {
    throw_if_stopped("waiting for the PostgreSQL replicas");
    try {
      Conn c(node(0, 2), deadline(2));
      Result r = c.exec(
          "SELECT count(*) FILTER (WHERE state = 'streaming'), count(*) FILTER (WHERE sync_state IN ('sync', "
          "'quorum')) FROM pg_stat_replication",
          deadline(2));
      const int streaming = std::atoi(PQgetvalue(r.get(), 0, 0)), synced = std::atoi(PQgetvalue(r.get(), 0, 1));
      if (streaming >= want && synced >= want_sync) return;
      last = std::to_string(streaming) + " of " + std::to_string(want) + " replicas streaming, " +
             std::to_string(synced) + " synchronous";
    } catch (const SetupError& e) {
      last = e.what();
    }
    if (now_ns() >= until)
      throw SetupError("postgres: the replicas were not ready within " + std::to_string(static_cast<int>(timeout_s)) +
                       " s: " + last);
    nap(100);
  }
}

void ReplicaSet::point(Endpoint& ep) const {
  std::string hosts, ports;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    hosts += (i ? "," : "") + std::string("127.0.0.1");
    ports += (i ? "," : "") + std::to_string(nodes_[i]->server_port());
  }
  ep.params = {{"host", hosts},
               {"port", ports},
               {"user", "postgres"},
               {"dbname", "postgres"},
               {"target_session_attrs", "read-write"}};
  ep.where = "127.0.0.1:" + ports + " (managed, the read-write one)";
}

void ReplicaSet::kill_primary() {
  const int p = primary_.load();
  if (p < 0) throw SetupError("postgres: no node is primary (an earlier failover did not end)");
  const std::shared_ptr<Service>& s = nodes_[static_cast<size_t>(p)];
  const pid_t pid = s->pid();
  if (pid <= 0) throw SetupError("postgres: " + node_name(static_cast<size_t>(p)) + " is not running");
  signal_server(pid, SIGKILL);  // the backends run outside the postmaster's process group
  s->kill_now();
  if (::kill(pid, 0) == 0)
    throw SetupError("postgres: " + node_name(static_cast<size_t>(p)) + " (pid " + std::to_string(pid) +
                     ") still runs after SIGKILL");
}

std::string ReplicaSet::primary() const {
  const int p = primary_.load();
  return p < 0 ? "" : node_name(static_cast<size_t>(p));
}

std::string ReplicaSet::failover_error() const {
  std::lock_guard lk(mu_);
  return error_;
}

std::string ReplicaSet::describe() const {
  const size_t n = nodes_.size() - 1;
  std::string s = std::to_string(n) + (n == 1 ? " replica" : " replicas") + ", streaming, ";
  s += sync_ > 0 ? std::to_string(sync_) + " synchronous (synchronous_standby_names '" + sync_names(sync_) + "')"
                 : "asynchronous";
  return s + "; failover by mwbench after " + std::to_string(kFailoverAfterMs) +
         " ms without an answer: the replica with the most WAL promoted";
}

// Asks the primary every kWatchMs over a connection of its own (SELECT 1, half a second at most);
// kFailoverAfterMs without an answer fails it over.
void ReplicaSet::watch() {
  std::unique_ptr<Conn> c;
  int64_t silent_since = 0;
  while (!quit_.load()) {
    nap(kWatchMs);
    const int p = primary_.load();
    if (p < 0) continue;
    try {
      if (!c) c = std::make_unique<Conn>(node(static_cast<size_t>(p), 0.5), deadline(0.5));
      c->exec("SELECT 1", deadline(0.5));
      silent_since = 0;
      continue;
    } catch (const SetupError&) {
      c.reset();
    }
    if (silent_since == 0) silent_since = now_ns();
    if (now_ns() - silent_since < int64_t{kFailoverAfterMs} * 1'000'000) continue;
    // A switchover under way stopped the primary on purpose: it promotes a replica itself.
    std::unique_lock lk(manage_mu_, std::try_to_lock);
    if (lk && primary_.load() == p) fail_over(static_cast<size_t>(p));
    silent_since = 0;
  }
}

// The live replica that received the most WAL promoted (pg_promote, waiting until it is done);
// the others then stream from it, and with --sync-replicas it asks as many of them as are left.
void ReplicaSet::fail_over(size_t dead) {
  primary_ = -1;
  size_t best = 0;
  uint64_t most = 0;
  bool found = false, promoted = false;
  std::string why;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (i == dead) continue;
    try {
      Conn c(node(i, 1), deadline(1));
      const uint64_t lsn = lsn_of(PQgetvalue(
          c.exec("SELECT coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())", deadline(1)).get(), 0, 0));
      if (!found || lsn > most) best = i, most = lsn, found = true;
    } catch (const SetupError& e) {
      why += std::string(why.empty() ? "" : "; ") + e.what();
    }
  }
  try {
    if (!found) throw SetupError("no replica answered" + (why.empty() ? "" : ": " + why));
    const Endpoint ep = node(best, 30);
    Conn c(ep, deadline(30));
    // Named before it is promoted: a client may write to it the moment pg_promote is done, and who
    // the primary is is read then (kill-primary's `promoted`). Unnamed again if it fails.
    primary_ = static_cast<int>(best);
    if (std::string(PQgetvalue(c.exec("SELECT pg_promote(true, 30)", deadline(35)).get(), 0, 0)) != "t")
      throw SetupError(node_name(best) + " was not promoted within 30 s");
    promoted = true;
    int left = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (i == best || i == dead || !nodes_[i]->running()) continue;  // a node killed by an earlier fault
      Conn r(node(i, 5), deadline(5));
      r.exec("ALTER SYSTEM SET primary_conninfo = '" + conninfo_of(best) + "'", deadline(5));
      r.exec("SELECT pg_reload_conf()", deadline(5));
      ++left;
    }
    if (sync_ > 0 && left >= sync_) {
      c.exec("ALTER SYSTEM SET synchronous_standby_names = '" + sync_names(sync_) + "'", deadline(5));
      c.exec("SELECT pg_reload_conf()", deadline(5));
    }
  } catch (const SetupError& e) {
    if (!promoted) primary_ = -1;
    std::lock_guard lk(mu_);
    error_ = std::string("failover: ") + e.what();
  }
}

void ReplicaSet::switch_over(double timeout_s) {
  std::lock_guard lk(manage_mu_);
  const int p = primary_.load();
  if (p < 0) throw SetupError("postgres: switchover: no node is primary (an earlier failover did not end)");
  const auto old = static_cast<size_t>(p);
  const std::shared_ptr<Service>& s = nodes_[old];
  const int64_t until = deadline(timeout_s);
  if (s->pid() <= 0 || ::kill(s->pid(), SIGINT) != 0)  // fast shutdown: sessions ended, WAL shipped
    throw SetupError("postgres: switchover: " + node_name(old) + " is not running");
  if (!wait_for([&s] { return !s->running(); }, until, "the switchover"))
    throw SetupError("postgres: switchover: " + node_name(old) + " did not shut down within " +
                     std::to_string(static_cast<int>(timeout_s)) + " s");
  fail_over(old);
  if (primary_.load() < 0) throw SetupError("postgres: switchover: " + failover_error());
  rejoin(old, std::max(0.0, static_cast<double>(until - now_ns()) / 1e9));
}

// The old primary, shut down cleanly, started again as a standby of the new one: its WAL ends at
// its shutdown checkpoint, which the new primary has, so it follows the new timeline without
// pg_rewind (recovery_target_timeline is 'latest' by default).
void ReplicaSet::rejoin(size_t old, double timeout_s) {
  const int now = primary_.load();
  const std::string data = nodes_[old]->dir() + "/data";
  {
    std::ofstream(data + "/standby.signal").flush();
    std::ofstream conf(data + "/postgresql.auto.conf", std::ios::app);
    conf << "primary_conninfo = '" << conninfo_of(static_cast<size_t>(now)) << "'\n";
    if (!conf.flush()) throw SetupError("postgres: switchover: cannot write " + data + "/postgresql.auto.conf");
  }
  nodes_[old]->restart();
  const int64_t until = deadline(timeout_s);
  std::string last;
  auto streaming = [&] {
    try {
      Conn c(node(old, 2), deadline(2));
      const Result r = c.exec("SELECT status FROM pg_stat_wal_receiver", deadline(2));
      if (PQntuples(r.get()) == 1 && std::string(PQgetvalue(r.get(), 0, 0)) == "streaming") return true;
      last = "its WAL receiver is not streaming";
    } catch (const SetupError& e) {
      last = e.what();
    }
    return false;
  };
  if (!wait_for(streaming, until, "the old primary rejoining"))
    throw SetupError("postgres: switchover: " + node_name(old) + " did not stream from " +
                     node_name(static_cast<size_t>(now)) + ": " + last);
}

}  // namespace mw::pg
