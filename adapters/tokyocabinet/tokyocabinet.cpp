// Tokyo Cabinet: hash (.tch) and B+tree (.tcb) files in a chosen directory, and the on-memory
// hash and tree. Ops: put, get (the value must be the one put), out, and put-sync (put, then
// sync to the device: what gearmand's Tokyo Cabinet queue does for every job).
#include "adapters/tokyocabinet/tokyocabinet.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <tcbdb.h>
#include <tchdb.h>
#include <tcutil.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <shared_mutex>

#include "adapters/embedded_kv.h"
#include "adapters/events.h"
#include "api/options.h"
#include "api/stop.h"
#include "config/workload_spec.h"
#include "durability/durability.h"
#include "durability/writer_child.h"
#include "util/files.h"
#include "util/keys.h"

namespace mw {
namespace {

enum class Kind { Hash, Btree, Memory, MemTree };
enum class Op { Put, Get, Out, PutSync, Mix };

struct TcOptions {
  Kind kind = Kind::Hash;
  std::string path = "/var/tmp";
  int64_t bnum = 0;
  int32_t cache = 0;
  bool keep = false;
};
const std::vector<std::pair<std::string, Kind>> kKinds = {
    {"hash", Kind::Hash}, {"btree", Kind::Btree}, {"memory", Kind::Memory}, {"memtree", Kind::MemTree}};

// One store, shared by the job's clients (Tokyo Cabinet locks a file per process; the handle
// is made thread-safe with its own mutex).
class Store {
 public:
  // `truncate`: a fresh store; false: open what is there (after a crash).
  Store(const TcOptions& o, const std::string& file, bool truncate = true) : kind_(o.kind) {
    const int trunc_h = truncate ? HDBOTRUNC : 0, trunc_b = truncate ? BDBOTRUNC : 0;
    switch (kind_) {
      case Kind::Hash: {
        h_ = tchdbnew();
        tchdbsetmutex(h_);
        if (o.bnum > 0) tchdbtune(h_, o.bnum, -1, -1, 0);
        if (o.cache > 0) tchdbsetcache(h_, o.cache);
        if (!tchdbopen(h_, file.c_str(), HDBOWRITER | HDBOCREAT | trunc_h))
          throw SetupError("tokyocabinet: cannot open " + file + ": " + tchdberrmsg(tchdbecode(h_)));
        break;
      }
      case Kind::Btree: {
        b_ = tcbdbnew();
        tcbdbsetmutex(b_);
        if (o.bnum > 0) tcbdbtune(b_, 0, 0, o.bnum, -1, -1, 0);
        if (o.cache > 0) tcbdbsetcache(b_, o.cache, 0);
        if (!tcbdbopen(b_, file.c_str(), BDBOWRITER | BDBOCREAT | trunc_b))
          throw SetupError("tokyocabinet: cannot open " + file + ": " + tcbdberrmsg(tcbdbecode(b_)));
        break;
      }
      case Kind::Memory: m_ = tcmdbnew(); break;
      case Kind::MemTree: n_ = tcndbnew(); break;
    }
  }
  ~Store() {
    if (h_) tchdbclose(h_), tchdbdel(h_);
    if (b_) tcbdbclose(b_), tcbdbdel(b_);
    if (m_) tcmdbdel(m_);
    if (n_) tcndbdel(n_);
  }
  bool put(const std::string& k, const std::string& v) {
    std::shared_lock lk(scan_mu_);
    int ks = static_cast<int>(k.size()), vs = static_cast<int>(v.size());
    switch (kind_) {
      case Kind::Hash: return tchdbput(h_, k.data(), ks, v.data(), vs);
      case Kind::Btree: return tcbdbput(b_, k.data(), ks, v.data(), vs);
      case Kind::Memory: tcmdbput(m_, k.data(), ks, v.data(), vs); return true;
      case Kind::MemTree: tcndbput(n_, k.data(), ks, v.data(), vs); return true;
    }
    return false;
  }
  // The value, or false when absent; `out` is filled.
  bool get(const std::string& k, std::string& out) {
    std::shared_lock lk(scan_mu_);
    int ks = static_cast<int>(k.size()), sz = 0;
    void* p = nullptr;
    switch (kind_) {
      case Kind::Hash: p = tchdbget(h_, k.data(), ks, &sz); break;
      case Kind::Btree: p = tcbdbget(b_, k.data(), ks, &sz); break;
      case Kind::Memory: p = tcmdbget(m_, k.data(), ks, &sz); break;
      case Kind::MemTree: p = tcndbget(n_, k.data(), ks, &sz); break;
    }
    if (!p) return false;
    out.assign(static_cast<const char*>(p), static_cast<size_t>(sz));
    tcfree(p);
    return true;
  }
  bool out(const std::string& k) {
    std::shared_lock lk(scan_mu_);
    int ks = static_cast<int>(k.size());
    switch (kind_) {
      case Kind::Hash: return tchdbout(h_, k.data(), ks);
      case Kind::Btree: return tcbdbout(b_, k.data(), ks);
      case Kind::Memory: return tcmdbout(m_, k.data(), ks);
      case Kind::MemTree: return tcndbout(n_, k.data(), ks);
    }
    return false;
  }
  // Up to `n` records from key `k` on, in key order (B+tree and on-memory tree only); each value
  // is handed to `check`. Returns how many were read, or -1 on an error.
  template <class F>
  int scan(const std::string& k, uint32_t n, F&& check) {
    // A cursor walks records while other clients' writes move them (and the on-memory tree has
    // one iterator per store): a scan runs alone.
    std::unique_lock lk(scan_mu_);
    int got = 0;
    if (b_) {
      BDBCUR* cur = tcbdbcurnew(b_);
      if (tcbdbcurjump(cur, k.data(), static_cast<int>(k.size())))
        for (; got < static_cast<int>(n); ++got) {
          int ks = 0, vs = 0;
          const char* kp = static_cast<const char*>(tcbdbcurkey3(cur, &ks));
          const char* vp = kp ? static_cast<const char*>(tcbdbcurval3(cur, &vs)) : nullptr;
          if (!vp ||
              !check(std::string_view(kp, static_cast<size_t>(ks)), std::string_view(vp, static_cast<size_t>(vs))))
            break;
          if (!tcbdbcurnext(cur)) {
            ++got;
            break;
          }
        }
      tcbdbcurdel(cur);
      return got;
    }
    if (n_) {
      tcndbiterinit2(n_, k.data(), static_cast<int>(k.size()));
      for (; got < static_cast<int>(n); ++got) {
        int ks = 0, vs = 0;
        char* kp = static_cast<char*>(tcndbiternext(n_, &ks));
        if (!kp) break;
        char* vp = static_cast<char*>(tcndbget(n_, kp, ks, &vs));
        bool ok =
            vp && check(std::string_view(kp, static_cast<size_t>(ks)), std::string_view(vp, static_cast<size_t>(vs)));
        tcfree(kp);
        if (vp) tcfree(vp);
        if (!ok) break;
      }
      return got;
    }
    return -1;
  }
  bool sync() {
    syncs_.fetch_add(1, std::memory_order_relaxed);
    if (h_) return tchdbsync(h_);
    if (b_) return tcbdbsync(b_);
    return true;
  }
  uint64_t count() {
    switch (kind_) {
      case Kind::Hash: return tchdbrnum(h_);
      case Kind::Btree: return tcbdbrnum(b_);
      case Kind::Memory: return tcmdbrnum(m_);
      case Kind::MemTree: return tcndbrnum(n_);
    }
    return 0;
  }
  // Why the last call failed; "record not found" counts as NotFound.
  std::pair<Status, std::string> error() {
    int code = h_ ? tchdbecode(h_) : b_ ? tcbdbecode(b_) : TCENOREC;
    const char* msg = h_ ? tchdberrmsg(code) : b_ ? tcbdberrmsg(code) : "no record found";
    return {code == TCENOREC ? Status::NotFound : Status::Error, msg};
  }
  const std::atomic<uint64_t>& syncs() const { return syncs_; }  // sync() calls (the timeline's events)

 private:
  Kind kind_;
  std::atomic<uint64_t> syncs_{0};
  std::shared_mutex scan_mu_;
  TCHDB* h_ = nullptr;
  TCBDB* b_ = nullptr;
  TCMDB* m_ = nullptr;
  TCNDB* n_ = nullptr;
};

class TcClient final : public Client {
 public:
  // `stamped`: a crash job's puts, each value carrying its write's version (write_version).
  TcClient(Store& s, const KeyValues& keys, Op op, bool stamped = false)
      : s_(s), keys_(keys), op_(op), stamped_(stamped) {}
  // The shared workload: read, update, insert, delete, rmw, and scan on the ordered kinds.
  OpResult run_request(const Request& r) override {
    key_ = KeyValues::key(r.key);
    switch (r.op) {
      case KvOp::Read:
      case KvOp::Rmw: {
        if (!s_.get(key_, value_)) return fail();
        if (OpResult bad = check(r.key, value_); bad.status != Status::Ok) return bad;
        if (r.op == KvOp::Read) return {Status::Ok, static_cast<uint32_t>(value_.size()), {}};
        [[fallthrough]];
      }
      case KvOp::Update:
      case KvOp::Insert:
        value_.resize(r.value_size);
        write_value(r.key, r.version, value_.data(), value_.size());
        if (!s_.put(key_, value_)) return fail();
        return {Status::Ok, r.value_size, {}};
      case KvOp::Delete:
        if (!s_.out(key_)) return fail();
        return {};
      case KvOp::Scan: {
        OpResult bad;
        uint32_t bytes = 0;
        int got = s_.scan(key_, r.scan_len, [&](std::string_view k, std::string_view v) {
          uint64_t id = 0;
          if (!KeyValues::key_of(k, &id)) {
            detail_ = "scan found a key that was never written";
            bad = {Status::Mismatch, 0, detail_};
            return false;
          }
          bad = check(id, v);
          bytes += static_cast<uint32_t>(v.size());
          return bad.status == Status::Ok;
        });
        if (got < 0) return fail();
        if (bad.status != Status::Ok) return bad;
        return {Status::Ok, bytes, {}};
      }
      default: return {Status::Unsupported, 0, "not an op of tc"};
    }
  }
  OpResult run(uint64_t seq) override {
    uint64_t k = op_ == Op::Out ? seq : seq % keys_.space;
    std::string key = keys_.key(k);
    switch (op_) {
      case Op::Put:
      case Op::PutSync:
        value_ = stamped_ ? make_value(k, write_version(seq), keys_.size_of(k)) : keys_.value(k);
        if (!s_.put(key, value_)) return fail();
        if (op_ == Op::PutSync && !s_.sync()) return fail();
        return {Status::Ok, static_cast<uint32_t>(value_.size()), {}};
      case Op::Get:
        if (!s_.get(key, value_)) return fail();
        if (value_ != keys_.value(k)) {
          detail_ = "get " + key + " returned a value that was not put";
          return {Status::Mismatch, 0, detail_};
        }
        return {Status::Ok, static_cast<uint32_t>(value_.size()), {}};
      case Op::Out:
        if (!s_.out(key)) return fail();
        return {};
      case Op::Mix: break;
    }
    return {Status::Unsupported, 0, "the mix runs through run_request"};
  }

 private:
  OpResult check(uint64_t k, std::string_view v) {
    switch (check_value(k, v.data(), v.size())) {
      case ValueCheck::Ok: return {};
      case ValueCheck::OtherKey: detail_ = KeyValues::key(k) + " holds another key's value"; break;
      case ValueCheck::Corrupt: detail_ = KeyValues::key(k) + " holds a corrupt value (checksum)"; break;
    }
    return {Status::Mismatch, 0, detail_};
  }
  OpResult fail() {
    auto [st, msg] = s_.error();
    detail_ = msg;
    return {st, 0, detail_};
  }
  Store& s_;
  const KeyValues& keys_;
  Op op_;
  bool stamped_;
  std::string value_, detail_, key_;
};

class TcAdapter final : public Adapter {
 public:
  TcAdapter(const Job& job, WorkloadPtr mix)
      : o_(options_of<TcOptions>(job)), dir_(o_.path), kind_(o_.kind), mix_(std::move(mix)) {
    for (auto& [name, k] : kKinds)
      if (k == kind_) kind_name_ = name;
    op_ = is_mix(job) ? Op::Mix : op_of<Op>(job);
    dir_ = trim_dir(dir_);
    if (kind_ == Kind::Hash || kind_ == Kind::Btree) file_ = temp_file(dir_, kind_ == Kind::Hash ? ".tch" : ".tcb");
    uint64_t total = job.n + job.warmup_ops;
    const WorkloadOptions w = workload_options_of(job);
    keys_.space = w.keyspace.value_or(op_ == Op::Out ? total : 100000);
    if (op_ == Op::Out) keys_.space = std::max<uint64_t>(keys_.space, total);
    keys_.sizes = SizeDist::parse(w.value_size, "--value-size");
  }
  ~TcAdapter() override { teardown(); }

  void prepare(const Job& job) override {
    if (op_ == Op::PutSync && file_.empty())
      throw SetupError("tokyocabinet: put-sync needs a file (--kind hash or btree), not " + kind_name_);
    if (!file_.empty()) {
      if (std::string why = unusable_dir(dir_); !why.empty()) throw SetupError("tokyocabinet: " + why + " (--path)");
    }
    if (op_ == Op::Out && job.duration_s > 0)
      throw SetupError("tokyocabinet: out deletes -n loaded keys: give -n, not --duration");
    if (mix_ && mix_->mix.has(KvOp::Scan) && kind_ != Kind::Btree && kind_ != Kind::MemTree)
      throw SetupError("tc: scan needs an ordered store (--kind btree or memtree), not " + kind_name_);
    if (!file_.empty() && (layer_ = power_layer(job, dir_)))  // --crash power: the file on the page-cache layer
      file_ = layer_->path() + "/" + std::filesystem::path(file_).filename().string();
    store_ = std::make_unique<Store>(o_, file_);
    if (op_ == Op::Get || op_ == Op::Out) {  // load the keys that get reads and out deletes (untimed)
      for (uint64_t k = 0; k < keys_.space; ++k) {
        if (k % 4096 == 4095) throw_if_stopped("the tokyocabinet preload");
        if (!store_->put(keys_.key(k), keys_.value(k)))
          throw SetupError("tokyocabinet: loading keys failed: " + store_->error().second);
      }
      store_->sync();
    }
    loaded_ = store_->count();
    info_ = {{"tokyocabinet", tcversion},
             {"kind", kind_name_},
             {"keyspace", std::to_string(keys_.space)},
             {"value_size", keys_.sizes.text()}};
    if (!file_.empty()) info_["file"] = file_;
    if (durability_options_of(job).crash != CrashKind::None && !file_.empty() &&
        (op_ == Op::Put || op_ == Op::PutSync || op_ == Op::Mix)) {
      // The puts run in a child process (Tokyo Cabinet locks its file per process: one client).
      if (job.clients != 1) throw SetupError("tokyocabinet: --crash runs the puts in one writer process: give -c 1");
      store_.reset();
      // Each put's value names it (its version): an older one that survived is told apart. A
      // native put writes key seq over the key space; a workload's writes are the core's own.
      KeyedCheck keyed{nullptr, [this](std::span<const uint64_t> keys) {
                         Store st(o_, file_, false);
                         return held_values(keys,
                                            [&](uint64_t k, std::string& v) { return st.get(KeyValues::key(k), v); });
                       }};
      if (!mix_)
        keyed.keys_of = [this](uint64_t seq, std::vector<KeyWrite>& out) { out.push_back({seq, seq % keys_.space}); };
      crash_ = std::make_unique<EmbeddedCrash>(
          writers_, "tokyocabinet", [this] { Store(o_, file_, false).count(); }, std::move(keyed),
          op_ == Op::PutSync ? "put-sync: fsync after each put"
          : mix_             ? "no fsync; a kill keeps what the page cache holds, a power cut may not"
                             : "put: no fsync; a kill keeps what the page cache holds, a power cut may not",
          distinct_by_value(mix_ ? mix_->sizes : keys_.sizes, mix_ ? 0 : keys_.space));
      if (layer_) {  // the empty store is on disk before the power can go
        sync_layer(*layer_);
        crash_->set_pagecache(layer_.get());
      }
    }
  }
  std::unique_ptr<Client> open(const Job& job, int) override {
    if (crash_) {
      return writers_.spawn(
          [this] {
            // In the child: its own handle on the file, owned with the client.
            struct Owned final : Client {
              Store s;
              TcClient c;
              Owned(const TcOptions& o, const std::string& f, const KeyValues& k, Op op)
                  : s(o, f, false), c(s, k, op, true) {}
              OpResult run(uint64_t seq) override { return c.run(seq); }
              OpResult run_request(const Request& r) override { return c.run_request(r); }
            };
            return std::make_unique<Owned>(o_, file_, keys_, op_);
          },
          job.timeout_s);
    }
    return std::make_unique<TcClient>(*store_, keys_, op_);
  }
  Abilities abilities(const Job& job) override {
    return {.crash = crash_.get(), .contract = contract(job), .events = [this]() -> std::unique_ptr<EventProbe> {
              if (!store_) return nullptr;  // a crash job's writer child
              return in_process_events("tokyocabinet", &store_->syncs(), "Tokyo Cabinet's syncs (put-sync)");
            }};
  }
  std::optional<Contract> contract(const Job&) const {
    if (op_ == Op::Get || (mix_ && !mix_->mix.writes())) return std::nullopt;
    if (file_.empty()) return Contract{ContractKind::Memory, 0, kind_name_ + ": an on-memory store"};
    if (op_ == Op::PutSync) return Contract{ContractKind::FsyncPerAck, 0, "put-sync: a sync after each put"};
    return Contract{ContractKind::OsBuffer, 0, "no sync: the OS writes the file back when it will"};
  }

  Verdict verify(const Job&, const Counts& c) override {
    if (mix_) return verify_mix();
    uint64_t done = c.ok + c.warmup_ok, got = store_->count(), want = loaded_;
    if (op_ == Op::Out) want = loaded_ - done;
    // put: seqs 0, 1, 2... over the key space, so the distinct keys are min(keyspace, puts)
    if (op_ == Op::Put || op_ == Op::PutSync) want = std::min<uint64_t>(keys_.space, done);
    std::string bad;
    if (op_ == Op::Put || op_ == Op::PutSync)  // read a sample back: each holds what was put
      for (uint64_t k = 0; k < std::min<uint64_t>(want, 100); ++k) {
        std::string v;
        if (!store_->get(keys_.key(k), v) || v != keys_.value(k)) bad = keys_.key(k);
      }
    std::string detail = std::to_string(got) + " records, expected " + std::to_string(want);
    if (!bad.empty()) detail += "; " + bad + " does not hold what was put";
    return {true, got == want && bad.empty(), detail};
  }
  Verdict verify_mix() {
    return verify_workload(*mix_, store_->count(),
                           [&](uint64_t k, std::string& v) { return store_->get(KeyValues::key(k), v); });
  }
  Info describe() override { return info_; }
  std::string target() const override { return file_.empty() ? kind_name_ + " in memory" : kind_name_ + " " + dir_; }
  std::vector<std::string> paths() const override {
    return file_.empty() ? std::vector<std::string>{} : std::vector<std::string>{dir_};
  }
  void teardown() override {
    writers_.kill_all();
    store_.reset();
    if (!file_.empty() && !o_.keep) unlink(file_.c_str());
  }

 private:
  TcOptions o_;
  std::string dir_, kind_name_, file_;
  Kind kind_;
  Op op_;
  KeyValues keys_{};
  uint64_t loaded_ = 0;
  std::unique_ptr<Store> store_;
  Info info_;
  std::shared_ptr<const Workload> mix_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power; outlives the writers
  WriterChildren writers_;
  std::unique_ptr<Crashable> crash_;
};

}  // namespace

AdapterSpec tokyocabinet_adapter_spec() {
  return {
      .name = "tc",
      .summary = "Tokyo Cabinet hash / B+tree files and on-memory stores: put, get, out, put-sync",
      .ops = {{"put", Op::Put}, {"get", Op::Get}, {"out", Op::Out}, {"put-sync", Op::PutSync}},
      .default_ops = "put,get",
      .options =
          {opt(&TcOptions::kind, {.name = "kind", .help = "store kind(s), side by side", .list = true}, kKinds),
           opt(&TcOptions::path,
               {.name = "path", .help = "directory of the .tch / .tcb file; a list runs side by side", .list = true}),
           opt(&TcOptions::bnum,
               {.name = "bnum", .help = "bucket number (hash) or of the B+tree's hash index", .max = 1 << 30}),
           opt(&TcOptions::cache,
               {.name = "cache", .help = "records cached (hash) or leaf nodes cached (B+tree)", .max = 2147483647}),
           opt(&TcOptions::keep, {.name = "keep", .help = "keep the file afterwards"})},
      .unavailable = nullptr,
      .make = [](const Job& j, WorkloadPtr w) { return std::make_unique<TcAdapter>(j, std::move(w)); },
      .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw, KvOp::Scan},
      .families = {Family::KeyedStore},
      .libraries = {"tokyocabinet"},
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"put", "put-sync", kMixOp},
      .durability_settings = {"kind"},
      .reset = "a new store each run (a file in --path, or memory)"};
}

}  // namespace mw
