// LMDB: one environment (a directory: data.mdb, lock.mdb) per job, shared by its clients, each with
// its own read transaction (MDB_NOTLS) and write transactions of --batch ops. Native ops put, get,
// del, scan (a cursor) and the workload's abstract ops; --sync full|nometasync|nosync, --writemap,
// and a map sized from the key space and value sizes.
#include "adapters/lmdb/lmdb.h"

#include <fcntl.h>
#include <lmdb.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "adapters/embedded_kv.h"
#include "adapters/events.h"
#include "api/options.h"
#include "config/workload_spec.h"
#include "durability/durability.h"
#include "durability/writer_child.h"
#include "util/files.h"

namespace mw {
namespace {

enum class Sync { Full, NoMetaSync, NoSync };
const std::vector<std::pair<std::string, Sync>> kSyncs = {
    {"full", Sync::Full}, {"nometasync", Sync::NoMetaSync}, {"nosync", Sync::NoSync}};

struct LmdbOptions {
  std::string path = "/var/tmp";
  std::string db;  // a given environment directory, opened as it is and kept
  Sync sync = Sync::Full;
  bool writemap = false;
  std::optional<int64_t> map_size;
  int64_t batch = 1;
  bool keep = false;
};

constexpr uint64_t kMaxMap = uint64_t{1} << 46;  // 64 TiB: mapped, not allocated (but --writemap)

std::string mib(uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

// The map the job's records need: each record's leaf node (8-byte header, key, value) in pages
// about half full after random inserts, or its overflow pages when the node is larger than
// LMDB's 2,040-byte maximum; twice that for copy-on-write and the free list; plus 64 MiB.
uint64_t map_need(uint64_t records, uint32_t value_max) {
  const uint64_t node = 8 + 16 + uint64_t{value_max};
  const uint64_t per = node <= 2040 ? 2 * (node + 2) : (uint64_t{value_max} + 16 + 4095) / 4096 * 4096 + 64;
  const double need = static_cast<double>(records) * static_cast<double>(per) * 2 + (64 << 20);
  return need > static_cast<double>(kMaxMap) * 4 ? kMaxMap * 4 : static_cast<uint64_t>(need);
}

class Env {
 public:
  Env(const LmdbOptions& o, const std::string& dir, uint64_t map, unsigned readers)
      : dir_(dir), syncing_(o.sync != Sync::NoSync) {
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
    if (o.sync == Sync::NoMetaSync) flags |= MDB_NOMETASYNC;
    if (o.sync == Sync::NoSync) flags |= MDB_NOSYNC;
    if (o.writemap) flags |= MDB_WRITEMAP;
    int rc = mdb_env_create(&env_);
    if (rc == 0) rc = mdb_env_set_mapsize(env_, map);
    if (rc == 0) rc = mdb_env_set_maxreaders(env_, readers);
    if (rc == 0) rc = mdb_env_open(env_, dir.c_str(), flags, 0644);
    MDB_txn* txn = nullptr;
    if (rc == 0) rc = mdb_txn_begin(env_, nullptr, 0, &txn);
    if (rc == 0) rc = mdb_dbi_open(txn, nullptr, 0, &dbi_);
    if (rc == 0)
      rc = mdb_txn_commit(txn);
    else if (txn)
      mdb_txn_abort(txn);
    if (rc != 0) {
      mdb_env_close(env_);
      throw SetupError(
          "lmdb: cannot open " + dir + ": " + mdb_strerror(rc) +
          (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH ? " (not an LMDB environment, or a corrupt one)" : ""));
    }
  }
  ~Env() { mdb_env_close(env_); }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  MDB_env* env() const { return env_; }
  // A write transaction committed: a sync, unless MDB_NOSYNC (the timeline's events).
  void committed() const {
    if (syncing_) syncs_.fetch_add(1, std::memory_order_relaxed);
  }
  const std::atomic<uint64_t>& syncs() const { return syncs_; }
  MDB_dbi dbi() const { return dbi_; }
  uint64_t count() const {
    MDB_stat st{};
    return mdb_env_stat(env_, &st) == 0 ? st.ms_entries : 0;
  }
  // With --writemap LMDB writes through the map: a page the filesystem cannot back would be a
  // SIGBUS, so the whole map is allocated up front (or the job fails here, naming the sizes).
  void allocate(uint64_t map) const {
    const std::string file = dir_ + "/data.mdb";
    int fd = open(file.c_str(), O_RDWR | O_CLOEXEC);
    int rc = fd < 0 ? errno : posix_fallocate(fd, 0, static_cast<off_t>(map));
    if (fd >= 0) close(fd);
    if (rc != 0)
      throw SetupError("lmdb: --writemap writes through the map, so its " + mib(map) + " are allocated in " + dir_ +
                       ": " + std::strerror(rc) + " (lower --keyspace or --map-size, or drop --writemap)");
  }

 private:
  std::string dir_;
  MDB_env* env_ = nullptr;
  bool syncing_;
  mutable std::atomic<uint64_t> syncs_{0};
  MDB_dbi dbi_ = 0;
};

MDB_val val(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }
std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

// One client's transactions (embedded_kv.h's handle).
class LmdbHandle {
 public:
  explicit LmdbHandle(const Env& e) : e_(e) {}
  ~LmdbHandle() {
    if (cur_) mdb_cursor_close(cur_);
    if (w_) mdb_txn_abort(w_);
    if (r_) mdb_txn_abort(r_);
  }
  LmdbHandle(const LmdbHandle&) = delete;
  LmdbHandle& operator=(const LmdbHandle&) = delete;

  int get(std::string_view k, std::string_view* v) {
    MDB_txn* t = w_;
    if (!t && !(t = read_txn())) return -1;
    MDB_val key = val(k), data{};
    rc_ = mdb_get(t, e_.dbi(), &key, &data);
    if (rc_ == 0) return *v = view(data), 1;
    release();
    return rc_ == MDB_NOTFOUND ? 0 : -1;
  }
  void release() {  // the value read is no longer used
    if (!w_ && r_) mdb_txn_reset(r_);
  }
  bool begin() { return (rc_ = mdb_txn_begin(e_.env(), nullptr, 0, &w_)) == 0; }
  bool put(std::string_view k, std::string_view v) {
    MDB_val key = val(k), data = val(v);
    return (rc_ = mdb_put(w_, e_.dbi(), &key, &data, 0)) == 0;
  }
  int del(std::string_view k) {
    MDB_val key = val(k);
    rc_ = mdb_del(w_, e_.dbi(), &key, nullptr);
    return rc_ == 0 ? 1 : rc_ == MDB_NOTFOUND ? 0 : -1;
  }
  bool commit() {
    rc_ = mdb_txn_commit(w_);
    w_ = nullptr;
    if (rc_ == 0) e_.committed();
    return rc_ == 0;
  }
  void abort() {
    if (w_) mdb_txn_abort(w_);
    w_ = nullptr;
  }
  template <class F>
  int scan(std::string_view from, uint32_t n, F&& each) {
    if (!read_txn()) return -1;
    if (cur_ ? (rc_ = mdb_cursor_renew(r_, cur_)) != 0 : (rc_ = mdb_cursor_open(r_, e_.dbi(), &cur_)) != 0) {
      release();
      return -1;
    }
    MDB_val key = val(from), data{};
    int got = 0;
    for (rc_ = mdb_cursor_get(cur_, &key, &data, MDB_SET_RANGE); rc_ == 0 && got < static_cast<int>(n);
         rc_ = mdb_cursor_get(cur_, &key, &data, MDB_NEXT)) {
      ++got;
      if (!each(view(key), view(data))) break;
    }
    const bool ok = rc_ == 0 || rc_ == MDB_NOTFOUND;
    release();
    return ok ? got : -1;
  }
  std::string error() const { return std::string("lmdb: ") + mdb_strerror(rc_); }

 private:
  MDB_txn* read_txn() {
    rc_ = r_ ? mdb_txn_renew(r_) : mdb_txn_begin(e_.env(), nullptr, MDB_RDONLY, &r_);
    return rc_ == 0 ? r_ : nullptr;
  }
  const Env& e_;
  MDB_txn *r_ = nullptr, *w_ = nullptr;
  MDB_cursor* cur_ = nullptr;
  int rc_ = 0;
};

using LmdbClient = EmbeddedClient<LmdbHandle>;

// Reads for the end checks and after a crash.
KvGet env_get(const Env& e) {
  return [&e](uint64_t k, std::string& out) {
    LmdbHandle h(e);
    std::string_view v;
    if (h.get(KeyValues::key(k), &v) != 1) return false;
    out.assign(v);
    h.release();
    return true;
  };
}

class LmdbAdapter final : public Adapter {
 public:
  LmdbAdapter(const Job& job, WorkloadPtr mix) : o_(options_of<LmdbOptions>(job)), mix_(std::move(mix)) {
    op_ = is_mix(job) ? EmbeddedOp::Mix : op_of<EmbeddedOp>(job);
    keys_ = embedded_keys(job, op_, static_cast<uint32_t>(o_.batch));
    if (mix_) keys_.kv.space = mix_->keys.spec().keyspace, keys_.kv.sizes = mix_->sizes;
    readers_ = static_cast<unsigned>(std::max(126, job.clients + 16));
  }
  ~LmdbAdapter() override { teardown(); }

  void prepare(const Job& job) override {
    if (mix_ && o_.batch != 1)
      throw SetupError(
          "lmdb: --batch groups native put and del; the workload (--mix) commits each write: drop --batch");
    const bool inserts = mix_ && mix_->mix.has(KvOp::Insert);
    map_ = map_size(keys_.kv.space + (inserts ? job.n + job.warmup_ops : 0));
    fresh_ = o_.db.empty();
    if (fresh_ && (layer_ = power_layer(job, trim_dir(o_.path))))  // --crash power, torn: on the page-cache layer
      dir_ = make_store_dir("lmdb", layer_->path(), ".lmdb");
    else if (fresh_)
      dir_ = make_store_dir("lmdb", o_.path, ".lmdb");
    else
      check_db_dir("lmdb", dir_ = trim_dir(o_.db));
    env_ = std::make_unique<Env>(o_, dir_, map_, readers_);
    if (o_.writemap) env_->allocate(map_);
    if (op_ == EmbeddedOp::Get || op_ == EmbeddedOp::Del || op_ == EmbeddedOp::Scan)
      load_native("lmdb", keys_, [this](uint64_t first, uint64_t count) { return load(first, count); });
    loaded_ = env_->count();
    int maj = 0, min = 0, patch = 0;
    mdb_version(&maj, &min, &patch);
    info_ = {{"lmdb", std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(patch)},
             {"sync", sync_name()},
             {"writemap", o_.writemap ? "on" : "off"},
             {"map_size", mib(map_)},
             {"keyspace", std::to_string(keys_.kv.space)},
             {"value_size", keys_.kv.sizes.text()},
             {"batch", std::to_string(o_.batch)},
             {"dir", dir_}};
    if (auto c = contract(job)) info_["contract"] = contract_label(*c) + " (" + c->detail + ")";
    if (durability_options_of(job).crash != CrashKind::None && (op_ == EmbeddedOp::Put || op_ == EmbeddedOp::Mix))
      arm_crash();
  }
  std::unique_ptr<Client> open(const Job& job, int) override {
    if (crash_) {
      return writers_.spawn(
          [this] {
            // In the child: its own environment on the directory (LMDB's lock file serialises the
            // writers of several processes), owned with the client.
            struct Owned final : Client {
              Env e;
              LmdbClient c;
              Owned(const LmdbAdapter& a) : e(a.o_, a.dir_, a.map_, a.readers_), c(a.keys_, a.op_, e) {}
              OpResult run(uint64_t seq) override { return c.run(seq); }
              OpResult run_request(const Request& r) override { return c.run_request(r); }
            };
            return std::make_unique<Owned>(*this);
          },
          job.timeout_s);
    }
    return std::make_unique<LmdbClient>(keys_, op_, *env_);
  }

  Verdict verify(const Job&, const Counts& c) override {
    if (mix_) return verify_workload(*mix_, env_->count(), env_get(*env_));
    return verify_native(keys_, op_, c, loaded_, env_->count(), fresh_, env_get(*env_));
  }
  std::optional<Contract> contract(const Job&) const {
    if (op_ == EmbeddedOp::Get || op_ == EmbeddedOp::Scan || (mix_ && !writes(*mix_))) return std::nullopt;
    switch (o_.sync) {
      case Sync::Full:
        return Contract{ContractKind::FsyncPerAck, 0,
                        o_.writemap ? "sync full: msync at each commit" : "sync full: fdatasync at each commit"};
      case Sync::NoMetaSync:
        return Contract{
            ContractKind::OsBuffer, 0,
            "MDB_NOMETASYNC: data synced at each commit, the meta page not: a power cut may undo the last commit"};
      case Sync::NoSync:
        return Contract{ContractKind::OsBuffer, 0, "MDB_NOSYNC: no sync; the OS writes back when it will"};
    }
    return std::nullopt;
  }
  Info describe() override { return info_; }
  std::string target() const override { return (o_.db.empty() ? trim_dir(o_.path) : trim_dir(o_.db)); }
  std::vector<std::string> paths() const override { return {target()}; }
  Abilities abilities(const Job& job) override {
    return {.crash = crash_.get(), .contract = contract(job), .events = [this]() -> std::unique_ptr<EventProbe> {
              if (!env_) return nullptr;  // a crash job's writer child
              return in_process_events("lmdb", &env_->syncs(), "LMDB's syncs (a write transaction's commit)");
            }};
  }
  void teardown() override {
    writers_.kill_all();
    env_.reset();
    if (fresh_ && !dir_.empty() && !o_.keep) remove_store_dir(dir_);
    dir_.clear();
    layer_.reset();
  }

 private:
  static bool writes(const Workload& w) { return w.mix.writes(); }
  std::string sync_name() const {
    for (auto& [n, s] : kSyncs)
      if (s == o_.sync) return n;
    return "?";
  }
  // The map for `records` records: computed, or --map-size checked against what they need.
  uint64_t map_size(uint64_t records) const {
    const uint64_t need = map_need(records, keys_.kv.sizes.max());
    const std::string what = "--keyspace " + std::to_string(keys_.kv.space) + " of values up to " +
                             std::to_string(keys_.kv.sizes.max()) + " B needs a map of about " + mib(need);
    if (o_.map_size) {
      if (static_cast<uint64_t>(*o_.map_size) < need)
        throw SetupError("lmdb: " + what + ", more than --map-size " + mib(*o_.map_size) +
                         ": raise --map-size or lower --keyspace");
      return static_cast<uint64_t>(*o_.map_size);
    }
    if (need > kMaxMap) throw SetupError("lmdb: " + what + ", more than the 64 TiB mwbench maps: lower --keyspace");
    return (need + (1 << 20) - 1) >> 20 << 20;
  }
  std::string load(uint64_t first, uint64_t count) {
    LmdbHandle h(*env_);
    if (!h.begin()) return h.error();
    std::string v;
    for (uint64_t k = first; k < first + count; ++k) {
      v = keys_.kv.value(k);
      if (!h.put(KeyValues::key(k), v)) return h.abort(), h.error();
    }
    return h.commit() ? "" : h.error();
  }
  void arm_crash() {
    env_.reset();          // the puts run in child processes, each with its own environment
    keys_.stamped = true;  // each put's value names it: an older one that survived is told apart
    crash_ = std::make_unique<EmbeddedCrash>(
        writers_, "lmdb", [this] { env_ = std::make_unique<Env>(o_, dir_, map_, readers_); },
        KeyedCheck{native_keys(), [this](std::span<const uint64_t> keys) { return held_values(keys, env_get(*env_)); }},
        contract(Job{})->detail,
        distinct_by_value(keys_.kv.sizes, op_ == EmbeddedOp::Mix ? 0 : keys_.kv.space / keys_.batch));
    if (layer_) {  // the store as set up is on disk before the power can go
      sync_layer(*layer_);
      crash_->set_pagecache(layer_.get());
    }
  }

  // A native put's keys; none for a workload (its requests are the core's).
  std::function<void(uint64_t, std::vector<KeyWrite>&)> native_keys() const {
    if (op_ == EmbeddedOp::Mix) return nullptr;
    return [this](uint64_t seq, std::vector<KeyWrite>& out) { native_put_keys(keys_, seq, out); };
  }

  LmdbOptions o_;
  EmbeddedOp op_;
  EmbeddedKeys keys_;
  std::shared_ptr<const Workload> mix_;
  std::string dir_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the writers (teardown)
  bool fresh_ = true;
  uint64_t map_ = 0, loaded_ = 0;
  unsigned readers_ = 126;
  std::unique_ptr<Env> env_;
  Info info_;
  WriterChildren writers_;
  std::unique_ptr<Crashable> crash_;
};

}  // namespace

AdapterSpec lmdb_adapter_spec() {
  return {
      .name = "lmdb",
      .summary = "LMDB environments: put, get, del, scan (cursor); write transactions of --batch ops",
      .ops = {{"put", EmbeddedOp::Put}, {"get", EmbeddedOp::Get}, {"del", EmbeddedOp::Del}, {"scan", EmbeddedOp::Scan}},
      .default_ops = "put,get",
      .options =
          {opt(&LmdbOptions::path, {.name = "path",
                                    .help = "directory the job's environment is made in; a list runs side by side",
                                    .list = true}),
           opt(&LmdbOptions::db, {.name = "db", .help = "an environment directory to open as it is (kept afterwards)"}),
           opt(&LmdbOptions::sync,
               {.name = "sync", .help = "commit durability: fdatasync, data only, or none", .list = true}, kSyncs),
           opt(&LmdbOptions::writemap, {.name = "writemap", .help = "write through the map (MDB_WRITEMAP)"}),
           opt(&LmdbOptions::map_size, {.name = "map-size",
                                        .help = "map size in bytes (default: from --keyspace and --value-size)",
                                        .min = 1 << 20,
                                        .max = static_cast<double>(kMaxMap)}),
           opt(&LmdbOptions::batch, {.name = "batch",
                                     .help = "keys per write transaction of put and del",
                                     .list = true,
                                     .min = 1,
                                     .max = 100000}),
           opt(&LmdbOptions::keep, {.name = "keep", .help = "keep the environment directory afterwards"})},
      .unavailable = nullptr,
      .make = [](const Job& j, WorkloadPtr w) { return std::make_unique<LmdbAdapter>(j, std::move(w)); },
      .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw, KvOp::Scan},
      .families = {Family::KeyedStore},
      .libraries = {"lmdb"},
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"put", kMixOp},
      .durability_settings = {"sync", "writemap"},
      .reset = "a new environment directory in --path each run (--db: that one, as it is)"};
}

}  // namespace mw
