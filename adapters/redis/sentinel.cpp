#include "adapters/redis/sentinel.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <thread>

#include "adapters/conn/hostport.h"
#include "adapters/conn/server.h"
#include "api/stop.h"
#include "util/status.h"

namespace mw::redis {

namespace {

std::string said(const Reply& r) { return "'" + std::string(1, r.type) + printable(r.str, 100) + "'"; }

// A field of INFO's text ("master_link_status"), or "".
std::string info_field(const Reply& r, const std::string& key) {
  const std::string_view s = r.str;
  const size_t at = s.find(key + ":");
  if (r.type != '$' || at == std::string_view::npos) return {};
  const size_t end = s.find('\r', at);
  return std::string(s.substr(at + key.size() + 1, end - at - key.size() - 1));
}

// A field of a flat array of names and values (SENTINEL MASTER), or -1.
int64_t pair_field(const Reply& r, const std::string& key) {
  for (size_t i = 0; r.type == '*' && i + 1 < r.items.size(); i += 2)
    if (r.items[i] == key) {
      int64_t v = -1;
      std::from_chars(r.items[i + 1].data(), r.items[i + 1].data() + r.items[i + 1].size(), v);
      return v;
    }
  return -1;
}

Endpoint at(const std::string& host, int port, double timeout_s) {
  Endpoint ep;
  ep.host = host;
  ep.port = port;
  ep.timeout_s = timeout_s;
  return ep;
}

}  // namespace

Sentinels Sentinels::parse(const std::string& list, const std::string& name, double timeout_s) {
  Sentinels s;
  s.name = name;
  s.timeout_s = timeout_s;
  for (conn::HostPort& a : conn::parse_addresses(list, 0, "redis: --sentinels"))
    s.at.emplace_back(std::move(a.host), a.port);
  if (name.empty() || name.size() > 255)
    throw SetupError("redis: --master-name expects a name, got '" + printable(name, 100) + "'");
  return s;
}

std::string Sentinels::describe() const {
  std::string s = std::to_string(at.size()) + (at.size() == 1 ? " Sentinel (" : " Sentinels (");
  for (size_t i = 0; i < at.size(); ++i)
    s += (i ? ", " : "") + printable(at[i].first, 100) + ":" + std::to_string(at[i].second);
  return s + ") of " + printable(name, 100);
}

namespace {

// Each Sentinel asked `command` in turn, a second at most each, all within `deadline`: the first
// reply `take` accepts ends it (true); what every one answered otherwise goes into `why`.
bool ask_each(const Sentinels& s, const std::vector<std::string>& command, int64_t deadline,
              const std::function<bool(const Reply&)>& take, std::string& why) {
  for (const auto& [host, port] : s.at) {
    const int64_t until = std::min(deadline, now_ns() + 1'000'000'000);
    try {
      Conn c(redis::at(host, port, s.timeout_s), until);
      const Reply r = c.command(command, until);
      if (take(r)) return true;
      why += (why.empty() ? "" : "; ") + printable(host, 100) + ":" + std::to_string(port) + " answered " + said(r);
    } catch (const SetupError& e) {
      why += (why.empty() ? "" : "; ") + std::string(e.what());
    }
    if (now_ns() >= deadline) break;
  }
  return false;
}

}  // namespace

std::pair<std::string, int> Sentinels::primary(int64_t deadline) const {
  std::pair<std::string, int> named;
  std::string why;
  auto take = [&named](const Reply& r) {
    if (r.type != '*' || r.items.size() != 2 || r.items[0].empty() || r.items[0].size() > 255) return false;
    int p = 0;
    const std::string_view ps = r.items[1];
    const auto [end, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
    if (ec != std::errc() || end != ps.data() + ps.size() || p <= 0 || p >= 65536) return false;
    named = {std::string(r.items[0]), p};
    return true;
  };
  if (!ask_each(*this, {"SENTINEL", "get-master-addr-by-name", name}, deadline, take, why))
    throw SetupError("redis: no Sentinel named the primary of " + printable(name, 100) + " (" + why + ")");
  return named;
}

void Sentinels::failover(int64_t deadline) const {
  std::string why;
  auto ok = [](const Reply& r) { return r.type == '+' && r.str == "OK"; };
  if (!ask_each(*this, {"SENTINEL", "FAILOVER", name}, deadline, ok, why))
    throw SetupError("redis: no Sentinel started a failover of " + printable(name, 100) + " (" + why + ")");
}

void switch_over(const Sentinels& s, int64_t deadline) {
  const std::pair<std::string, int> old = s.primary(deadline);
  s.failover(deadline);
  std::string last =
      "the Sentinels still name " + printable(old.first, 100) + ":" + std::to_string(old.second) + " primary";
  for (;;) {
    try {
      if (s.primary(deadline) != old) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2 * kWatchMs));
        return;
      }
    } catch (const SetupError& e) {
      last = e.what();
    }
    if (now_ns() >= deadline) throw SetupError("redis: switchover of " + printable(s.name, 100) + ": " + last);
    throw_if_stopped("the switchover");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

PrimaryWatch::PrimaryWatch(std::shared_ptr<const Sentinels> s) : s_(std::move(s)) {
  thread_ = std::thread([this] {
    std::pair<std::string, int> last;
    while (!quit_.load()) {
      try {
        const auto now = s_->primary(now_ns() + 1'000'000'000);
        if (last.second != 0 && now != last) gen_.fetch_add(1, std::memory_order_release);
        last = now;
      } catch (const SetupError&) {  // none answers now: asked again next time
      }
      for (int i = 0; i < kWatchMs / 10 && !quit_.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

PrimaryWatch::~PrimaryWatch() {
  quit_ = true;
  if (thread_.joinable()) thread_.join();
}

ReplicaSet::ReplicaSet(std::shared_ptr<Service> primary, const ServiceSpec& spec, int replicas, bool sentinel,
                       double timeout_s) {
  const std::string pport = std::to_string(primary->server_port());
  nodes_.push_back(std::move(primary));
  for (int i = 0; i < replicas; ++i) {
    ServiceSpec r = spec;
    for (const char* a : {"--replicaof", "127.0.0.1"}) r.args.push_back(a);
    r.args.push_back(pport);
    nodes_.push_back(std::make_shared<Service>(r));
  }
  if (sentinel) {
    sentinels_ = std::make_shared<Sentinels>();
    sentinels_->timeout_s = timeout_s;
    for (int i = 0; i < kSentinels; ++i) {
      ServiceSpec s;
      s.name = "redis-sentinel";
      s.binary = spec.binary;
      // A Sentinel rewrites its configuration file: an empty one of its own, in its temp dir.
      s.setup = {{"touch", "{dir}/sentinel.conf"}};
      s.args = {"{dir}/sentinel.conf",
                "--sentinel",
                "--port",
                "{port}",
                "--bind",
                "127.0.0.1",
                "--dir",
                "{dir}",
                "--logfile",
                "{dir}/sentinel.log",
                "--daemonize",
                "no",
                "--protected-mode",
                "no",
                "--sentinel",
                "monitor",
                kMasterName,
                "127.0.0.1",
                pport,
                std::to_string(kQuorum),
                "--sentinel",
                "down-after-milliseconds",
                kMasterName,
                std::to_string(kDownAfterMs),
                "--sentinel",
                "failover-timeout",
                kMasterName,
                std::to_string(kFailoverTimeoutMs)};
      s.probe = conn::handshake_probe<Conn, Endpoint>();
      watchers_.push_back(std::make_unique<Service>(s));
      sentinels_->at.emplace_back("127.0.0.1", watchers_.back()->server_port());
    }
  }
  wait_ready(timeout_s);
}

ReplicaSet::~ReplicaSet() = default;

// Each replica's link to the primary up; each Sentinel knowing every replica and the other
// Sentinels (they find each other through the primary, every 2 s): a failover can then be agreed.
void ReplicaSet::wait_ready(double timeout_s) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(std::max(timeout_s, 10.0) * 3e9);
  const auto replicas = static_cast<int64_t>(nodes_.size() - 1);
  std::string last;
  auto ready = [&]() -> bool {
    for (size_t i = 1; i < nodes_.size(); ++i) {
      Conn c(at("127.0.0.1", nodes_[i]->server_port(), timeout_s), deadline);
      const Reply r = c.command({"INFO", "replication"}, deadline);
      if (info_field(r, "master_link_status") != "up") {
        last = "replica " + std::to_string(i) + "'s link to the primary is not up";
        return false;
      }
    }
    for (const auto& w : watchers_) {
      Conn c(at("127.0.0.1", w->server_port(), timeout_s), deadline);
      const Reply r = c.command({"SENTINEL", "MASTER", kMasterName}, deadline);
      const int64_t known = pair_field(r, "num-slaves"), others = pair_field(r, "num-other-sentinels");
      if (known < replicas || others < kSentinels - 1) {
        last = "Sentinel " + std::to_string(w->server_port()) + " knows " +
               std::to_string(std::max<int64_t>(0, known)) + " replicas and " +
               std::to_string(std::max<int64_t>(0, others)) + " other Sentinels";
        return false;
      }
    }
    return true;
  };
  for (;;) {
    throw_if_stopped("the redis replicated set-up");
    try {
      if (ready()) return;
    } catch (const SetupError& e) {
      last = e.what();
    }
    if (now_ns() >= deadline) throw SetupError("redis: the replicated set-up was not ready in time: " + last);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string ReplicaSet::node_name(int port) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->server_port() == port)
      return (i == 0 ? std::string("the first primary") : "replica " + std::to_string(i)) +
             " (127.0.0.1:" + std::to_string(port) + ")";
  return {};
}

void ReplicaSet::kill_primary() {
  if (!sentinels_) throw SetupError("redis: kill-primary needs --sentinel (a replica the Sentinels promote)");
  const auto [host, port] = sentinels_->primary(now_ns() + static_cast<int64_t>(sentinels_->timeout_s * 1e9));
  for (const auto& n : nodes_)
    if (n->server_port() == port && host == "127.0.0.1") return n->kill_now();
  throw SetupError("redis: the Sentinels name " + printable(host, 100) + ":" + std::to_string(port) +
                   " primary, not a node mwbench started");
}

std::string ReplicaSet::primary() const {
  if (!sentinels_) return {};
  try {
    const auto [host, port] = sentinels_->primary(now_ns() + static_cast<int64_t>(sentinels_->timeout_s * 1e9));
    const std::string name = host == "127.0.0.1" ? node_name(port) : "";
    return name.empty() ? printable(host, 100) + ":" + std::to_string(port) : name;
  } catch (const SetupError&) {
    return {};
  }
}

std::string ReplicaSet::describe() const {
  const size_t n = nodes_.size() - 1;
  std::string s = std::to_string(n) + (n == 1 ? " replica" : " replicas") + " (asynchronous)";
  if (sentinels_)
    s += ", " + std::to_string(kSentinels) + " Sentinels (quorum " + std::to_string(kQuorum) + ", down-after " +
         std::to_string(kDownAfterMs) + " ms, failover-timeout " + std::to_string(kFailoverTimeoutMs) + " ms)";
  return s;
}

}  // namespace mw::redis
