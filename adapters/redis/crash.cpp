#include "adapters/redis/crash.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace mw::redis {

std::vector<std::string> persistence_args(const std::string& p) {
  if (p == "none") return {"--save", "", "--appendonly", "no"};
  if (p == "rdb") return {"--save", "3600 1 300 100 60 10000", "--appendonly", "no"};
  const std::string fsync = p == "aof-always" ? "always" : p == "aof-no" ? "no" : "everysec";
  return {"--save", "", "--appendonly", "yes", "--appendfsync", fsync};
}

Contract contract_of(const std::string& p) {
  if (p == "none") return {ContractKind::Memory, 0, "no persistence"};
  if (p == "rdb")
    return {ContractKind::Memory, 0,
            "RDB snapshots (save 3600 1 300 100 60 10000): writes since the last one are in "
            "memory only"};
  if (p == "aof-always") return {ContractKind::FsyncPerAck, 0, "appendfsync always"};
  if (p == "aof-no") return {ContractKind::OsBuffer, 0, "appendfsync no"};
  return {ContractKind::PeriodicFsync, 1, "appendfsync everysec"};
}

namespace {

class RedisCrash final : public Crashable, public KeyedReadBack, public Replication {
 public:
  RedisCrash(std::shared_ptr<Service> svc, Endpoint& ep, const KeySpace& keys, std::string persistence,
             const Workload* mix, uint64_t distinct, std::shared_ptr<ReplicaSet> set)
      : set_(std::move(set)),
        svc_(std::move(svc)),
        ep_(ep),
        keys_(keys),
        persistence_(std::move(persistence)),
        mix_(mix),
        distinct_(distinct) {
    reads_keys(this);
    if ((set_ && set_->sentinels()) || (!svc_ && ep_.sentinels)) replicates(this);  // Sentinels fail it over
  }

  std::string victim() const override { return svc_ ? "redis-server" : "the primary the Sentinels name"; }
  void kill() override { own().kill_now(); }
  void restart() override {
    own().restart();
    ep_.port = svc_->port();
  }
  bool pause(bool on) override { return svc_ && svc_->pause(on); }
  void kill_primary() override {
    if (!set_) throw SetupError("redis: kill-primary needs the replicated set-up mwbench starts");
    set_->kill_primary();
  }
  // Returns once the Sentinels name another primary (10 s or --timeout at most: a Sentinel's
  // failover takes a second or more).
  void switchover() override {
    if (!ep_.sentinels) throw SetupError("redis: switchover needs Sentinels (--sentinel or --sentinels)");
    switch_over(*ep_.sentinels, now_ns() + static_cast<int64_t>(std::max(10.0, ep_.timeout_s) * 1e9));
  }
  // The node the Sentinels name primary: one mwbench started by its name, an external one by its
  // address ("" when none answers).
  std::string primary() override {
    if (set_) return set_->primary();
    if (!ep_.sentinels) return {};
    try {
      const auto [host, port] = ep_.sentinels->primary(now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9));
      return printable(host, 100) + ":" + std::to_string(port);
    } catch (const SetupError&) {
      return {};
    }
  }

  // A native SET of `seq` wrote key_of(seq); a workload's keys are the core's own.
  void keys_of(uint64_t seq, std::vector<KeyWrite>& out) const override {
    if (!mix_) out.push_back({seq, keys_.key_of(seq)});
  }
  // GET of every key, pipelined in batches: absent, a value of the key (its version when it is
  // long enough to carry one), or anything else (corrupt).
  std::vector<Held> held(std::span<const uint64_t> keys) override {
    std::vector<Held> out;
    out.reserve(keys.size());
    Conn c = connect();
    std::string batch;
    for (size_t base = 0; base < keys.size(); base += 1000) {
      const size_t end = std::min(keys.size(), base + 1000);
      batch.clear();
      for (size_t i = base; i < end; ++i)
        append_command(batch, {"GET", mix_ ? workload_key(keys_, keys[i]) : keys_.key(keys[i])});
      size_t i = base;
      c.pipeline(batch, end - base, [&](const Reply& r) {
        const uint64_t k = keys[i++];
        Held h;
        uint32_t version = 0;
        if (r.type == '$' && !r.nil) {
          h.kind = check_value(k, r.str.data(), r.str.size(), &version) == ValueCheck::Ok ? Held::Kind::Value
                                                                                          : Held::Kind::Corrupt;
          if (r.str.size() >= kVersionedValue) h.version = version;
        } else if (r.type != '$') {
          h.kind = Held::Kind::Corrupt;
        }
        out.push_back(h);
      });
    }
    return out;
  }

  // The server, or the primary the Sentinels name: a failover the phase's end cut short is waited
  // for, up to --timeout (the Sentinels name the dead primary until they agree it is down).
  Conn connect() const {
    const int64_t deadline = now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9);
    for (;;) {
      try {
        return Conn(ep_, deadline);
      } catch (const SetupError&) {
        if (!set_ || now_ns() + 100'000'000 >= deadline) throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  uint64_t distinct_writes() const override { return distinct_; }
  Service& own() const {  // the server mwbench started (an external set-up's cannot be signalled)
    if (!svc_) throw SetupError("redis: an external set-up (--sentinels) cannot be signalled");
    return *svc_;
  }
  std::string note() const override {
    if (persistence_ == "none") return "no persistence: nothing survives a restart";
    if (persistence_ == "rdb")
      return "RDB snapshots (save 3600 1 300 100 60 10000): writes since the last one are lost";
    if (persistence_ == "aof-always") return "appendfsync always: fsync before each reply";
    if (persistence_ == "aof-no")
      return "appendfsync no: written before each reply, never fsynced (the OS writes it back when it likes: a kill "
             "keeps it, a power cut may not)";
    return "appendfsync everysec: written before each reply, fsync once a second (a power cut loses up to ~1 s)";
  }

 private:
  std::shared_ptr<ReplicaSet> set_;
  std::shared_ptr<Service> svc_;
  Endpoint& ep_;
  const KeySpace& keys_;
  std::string persistence_;
  const Workload* mix_;
  uint64_t distinct_;
};

}  // namespace

std::unique_ptr<Crashable> make_crashable(std::shared_ptr<Service> svc, Endpoint& ep, const KeySpace& keys,
                                          const std::string& persistence, const Workload* mix, uint64_t distinct,
                                          std::shared_ptr<ReplicaSet> set) {
  return std::make_unique<RedisCrash>(std::move(svc), ep, keys, persistence, mix, distinct, std::move(set));
}

}  // namespace mw::redis
