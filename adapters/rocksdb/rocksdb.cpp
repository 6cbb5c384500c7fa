// RocksDB through its C API (rocksdb/c.h): one database (a directory) per job, shared by its
// clients. Native ops put, get, delete, scan (an iterator) and the workload's abstract ops; writes
// go in write batches of --batch ops with WriteOptions.sync (--sync) or without the WAL
// (--disable-wal); --block-cache sizes the LRU block cache.
#include "adapters/rocksdb/rocksdb.h"

#include <rocksdb/c.h>
#include <rocksdb/version.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "adapters/embedded_kv.h"
#include "api/options.h"
#include "config/workload_spec.h"
#include "durability/durability.h"
#include "durability/writer_child.h"
#include "util/files.h"

namespace mw {
namespace {

struct RocksOptions {
  std::string path = "/var/tmp";
  std::string db;  // a given database directory, opened as it is and kept
  bool sync = false;
  bool disable_wal = false;
  int64_t block_cache = 32 << 20;
  int64_t batch = 1;
  bool keep = false;
  // db_bench's names; 0: RocksDB's default (64 MiB, 20 and 36 files)
  int64_t write_buffer_size = 0;
  int64_t level0_slowdown = 0, level0_stop = 0;
};

// Takes the error a C API call left in `err` (and frees it): "" when there was none.
std::string take(char*& err) {
  if (!err) return {};
  std::string s = err;
  rocksdb_free(err);
  err = nullptr;
  return s;
}

// "Cumulative stall: 00:00:1.234 H:M:S" and "Cumulative WAL: N writes, M syncs" of the
// rocksdb.dbstats property: the time writes stalled (ms) and the WAL's syncs, as counters.
std::vector<EventReading> dbstats_events(const std::string& stats) {
  std::vector<EventReading> out;
  int h = 0, m = 0;
  double sec = 0;
  if (size_t at = stats.find("Cumulative stall: ");
      at != std::string::npos && std::sscanf(stats.c_str() + at + 18, "%d:%d:%lf", &h, &m, &sec) == 3)
    out.push_back({"stall_ms", ((h * 60.0 + m) * 60 + sec) * 1000, EventReading::Kind::Counter,
                   "time writes stalled (RocksDB's cumulative stall)", "ms"});
  unsigned long long writes = 0, syncs = 0;
  if (size_t at = stats.find("Cumulative WAL: ");
      at != std::string::npos && std::sscanf(stats.c_str() + at + 16, "%llu writes, %llu syncs", &writes, &syncs) == 2)
    out.push_back({"wal_syncs", static_cast<double>(syncs), EventReading::Kind::Counter, "WAL syncs"});
  return out;
}

class Db {
 public:
  // `child_bytes` > 0: the writer child of --crash kill (writer_child.h), which runs without
  // background flushes or compactions: RocksDB's thread pool does not survive fork(), so its
  // memtable holds every write of the job.
  Db(const RocksOptions& o, const std::string& dir, uint64_t child_bytes = 0) : dir_(dir) {
    opts_ = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(opts_, 1);
    rocksdb_options_set_paranoid_checks(opts_, 1);
    table_ = rocksdb_block_based_options_create();
    if (o.block_cache > 0) {
      cache_ = rocksdb_cache_create_lru(static_cast<size_t>(o.block_cache));
      rocksdb_block_based_options_set_block_cache(table_, cache_);
    } else {
      rocksdb_block_based_options_set_no_block_cache(table_, 1);
    }
    rocksdb_options_set_block_based_table_factory(opts_, table_);
    if (child_bytes > 0) {
      rocksdb_options_set_write_buffer_size(opts_, child_bytes);
      rocksdb_options_set_disable_auto_compactions(opts_, 1);
    } else {
      if (o.write_buffer_size > 0)
        rocksdb_options_set_write_buffer_size(opts_, static_cast<size_t>(o.write_buffer_size));
      if (o.level0_slowdown > 0)
        rocksdb_options_set_level0_slowdown_writes_trigger(opts_, static_cast<int>(o.level0_slowdown));
      if (o.level0_stop > 0) rocksdb_options_set_level0_stop_writes_trigger(opts_, static_cast<int>(o.level0_stop));
    }
    char* err = nullptr;
    db_ = rocksdb_open(opts_, dir.c_str(), &err);
    if (std::string why = take(err); !db_) {
      free_options();
      throw SetupError("rocksdb: cannot open " + dir + ": " + why);
    }
    ropts_ = rocksdb_readoptions_create();
    wopts_ = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(wopts_, o.sync);
    rocksdb_writeoptions_disable_WAL(wopts_, o.disable_wal);
  }
  ~Db() {
    rocksdb_close(db_);
    rocksdb_readoptions_destroy(ropts_);
    rocksdb_writeoptions_destroy(wopts_);
    free_options();
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  rocksdb_t* db() const { return db_; }
  const rocksdb_readoptions_t* ropts() const { return ropts_; }
  const rocksdb_writeoptions_t* wopts() const { return wopts_; }
  // Records, counted by an iterator (RocksDB keeps only an estimate); -1 on an error.
  int64_t count() const {
    rocksdb_iterator_t* it = rocksdb_create_iterator(db_, ropts_);
    int64_t n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) ++n;
    char* err = nullptr;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    return take(err).empty() ? n : -1;
  }

 private:
  void free_options() {
    rocksdb_options_destroy(opts_);
    rocksdb_block_based_options_destroy(table_);
    if (cache_) rocksdb_cache_destroy(cache_);
  }
  std::string dir_;
  rocksdb_options_t* opts_ = nullptr;
  rocksdb_block_based_table_options_t* table_ = nullptr;
  rocksdb_cache_t* cache_ = nullptr;
  rocksdb_t* db_ = nullptr;
  rocksdb_readoptions_t* ropts_ = nullptr;
  rocksdb_writeoptions_t* wopts_ = nullptr;
};

// One client's write batch and last value (embedded_kv.h's handle).
class RocksHandle {
 public:
  explicit RocksHandle(const Db& d) : d_(d), batch_(rocksdb_writebatch_create()) {}
  ~RocksHandle() {
    release();
    rocksdb_writebatch_destroy(batch_);
  }
  RocksHandle(const RocksHandle&) = delete;
  RocksHandle& operator=(const RocksHandle&) = delete;

  int get(std::string_view k, std::string_view* v) {
    char* err = nullptr;
    pinned_ = rocksdb_get_pinned(d_.db(), d_.ropts(), k.data(), k.size(), &err);
    if (err) return error_ = take(err), -1;
    if (!pinned_) return 0;
    size_t n = 0;
    const char* p = rocksdb_pinnableslice_value(pinned_, &n);
    *v = {p, n};
    return 1;
  }
  void release() {
    if (pinned_) rocksdb_pinnableslice_destroy(pinned_);
    pinned_ = nullptr;
  }
  bool begin() {
    rocksdb_writebatch_clear(batch_);
    return true;
  }
  bool put(std::string_view k, std::string_view v) {
    rocksdb_writebatch_put(batch_, k.data(), k.size(), v.data(), v.size());
    return true;
  }
  int del(std::string_view k) {  // a blind delete: RocksDB does not say whether the key existed
    rocksdb_writebatch_delete(batch_, k.data(), k.size());
    return 1;
  }
  bool commit() {
    char* err = nullptr;
    rocksdb_write(d_.db(), d_.wopts(), batch_, &err);
    error_ = take(err);
    return error_.empty();
  }
  void abort() { rocksdb_writebatch_clear(batch_); }
  template <class F>
  int scan(std::string_view from, uint32_t n, F&& each) {
    rocksdb_iterator_t* it = rocksdb_create_iterator(d_.db(), d_.ropts());
    int got = 0;
    for (rocksdb_iter_seek(it, from.data(), from.size()); rocksdb_iter_valid(it) && got < static_cast<int>(n);
         rocksdb_iter_next(it)) {
      size_t kn = 0, vn = 0;
      const char* kp = rocksdb_iter_key(it, &kn);
      const char* vp = rocksdb_iter_value(it, &vn);
      ++got;
      if (!each(std::string_view(kp, kn), std::string_view(vp, vn))) break;
    }
    char* err = nullptr;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    error_ = take(err);
    return error_.empty() ? got : -1;
  }
  std::string error() const { return "rocksdb: " + error_; }

 private:
  const Db& d_;
  rocksdb_writebatch_t* batch_;
  rocksdb_pinnableslice_t* pinned_ = nullptr;
  std::string error_;
};

using RocksClient = EmbeddedClient<RocksHandle>;

// RocksDB's own events for the timeline (api/events.h), from its properties: writes stopped or
// slowed down, the time they stalled and the WAL's syncs (rocksdb.dbstats), flushes and compactions
// running, files at level 0. Read from the probe's thread: the properties are thread-safe.
class RocksEvents final : public EventProbe {
 public:
  explicit RocksEvents(const Db& d) : d_(d) {}
  std::string source() const override { return "rocksdb"; }
  std::vector<EventReading> sample(int64_t) override {
    using K = EventReading::Kind;
    std::vector<EventReading> out;
    auto level = [&](const char* property, const char* name, const char* what, bool flag = false) {
      uint64_t v = 0;
      if (rocksdb_property_int(d_.db(), property, &v) == 0)
        out.push_back({name, flag ? (v > 0 ? 1.0 : 0.0) : static_cast<double>(v), K::Level, what});
    };
    level("rocksdb.is-write-stopped", "write_stopped",
          "writes stopped (a write stall: too many level-0 files or compaction debt)");
    level("rocksdb.actual-delayed-write-rate", "write_delayed", "writes slowed down (RocksDB's delayed write rate)",
          true);
    level("rocksdb.num-running-flushes", "flushes_running", "memtable flushes running");
    level("rocksdb.num-running-compactions", "compactions_running", "compactions running");
    level("rocksdb.num-files-at-level0", "level0_files", "files at level 0");
    if (char* text = rocksdb_property_value(d_.db(), "rocksdb.dbstats")) {
      const std::string stats = text;
      rocksdb_free(text);
      for (auto& e : dbstats_events(stats)) out.push_back(std::move(e));
    }
    return out;
  }

 private:
  const Db& d_;
};

KvGet db_get(const Db& d) {
  return [&d](uint64_t k, std::string& out) {
    RocksHandle h(d);
    std::string_view v;
    if (h.get(KeyValues::key(k), &v) != 1) return false;
    out.assign(v);
    return true;
  };
}

class RocksAdapter final : public Adapter {
 public:
  RocksAdapter(const Job& job, WorkloadPtr mix) : o_(options_of<RocksOptions>(job)), mix_(std::move(mix)) {
    op_ = is_mix(job) ? EmbeddedOp::Mix : op_of<EmbeddedOp>(job);
    keys_ = embedded_keys(job, op_, static_cast<uint32_t>(o_.batch));
    if (mix_) keys_.kv.space = mix_->keys.spec().keyspace, keys_.kv.sizes = mix_->sizes;
  }
  ~RocksAdapter() override { teardown(); }

  void prepare(const Job& job) override {
    if (mix_ && o_.batch != 1)
      throw SetupError(
          "rocksdb: --batch groups native put and delete; the workload (--mix) writes each op: drop --batch");
    if (o_.sync && o_.disable_wal)
      throw SetupError("rocksdb: --sync syncs the WAL, which --disable-wal turns off: give one");
    fresh_ = o_.db.empty();
    if (fresh_ && (layer_ = power_layer(job, trim_dir(o_.path))))  // --crash power, torn: on the page-cache layer
      dir_ = make_store_dir("rocksdb", layer_->path(), ".rocksdb");
    else if (fresh_)
      dir_ = make_store_dir("rocksdb", o_.path, ".rocksdb");
    else
      check_db_dir("rocksdb", dir_ = trim_dir(o_.db));
    db_ = std::make_unique<Db>(o_, dir_);
    if (op_ == EmbeddedOp::Get || op_ == EmbeddedOp::Del || op_ == EmbeddedOp::Scan)
      load_native("rocksdb", keys_, [this](uint64_t first, uint64_t count) { return load(first, count); });
    loaded_ = count();
    info_ = {{"rocksdb", std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                             std::to_string(ROCKSDB_PATCH)},
             {"sync", o_.sync ? "on" : "off"},
             {"wal", o_.disable_wal ? "off" : "on"},
             {"block_cache", std::to_string(o_.block_cache)},
             {"keyspace", std::to_string(keys_.kv.space)},
             {"value_size", keys_.kv.sizes.text()},
             {"batch", std::to_string(o_.batch)},
             {"dir", dir_}};
    for (auto [key, v] : {std::pair{"write_buffer_size", o_.write_buffer_size},
                          {"level0_slowdown", o_.level0_slowdown},
                          {"level0_stop", o_.level0_stop}})
      if (v > 0) info_[key] = std::to_string(v);
    if (auto c = contract(job)) info_["contract"] = contract_label(*c) + " (" + c->detail + ")";
    if (durability_options_of(job).crash != CrashKind::None && (op_ == EmbeddedOp::Put || op_ == EmbeddedOp::Mix))
      arm_crash(job);
  }
  std::unique_ptr<Client> open(const Job& job, int) override {
    if (crash_) {
      return writers_.spawn(
          [this] {
            struct Owned final : Client {  // in the child: its own database handle, owned with the client
              Db d;
              RocksClient c;
              Owned(const RocksAdapter& a) : d(a.o_, a.dir_, a.child_bytes_), c(a.keys_, a.op_, d) {}
              OpResult run(uint64_t seq) override { return c.run(seq); }
              OpResult run_request(const Request& r) override { return c.run_request(r); }
            };
            return std::make_unique<Owned>(*this);
          },
          job.timeout_s);
    }
    return std::make_unique<RocksClient>(keys_, op_, *db_);
  }
  Abilities abilities(const Job& job) override {
    return {.crash = crash_.get(), .contract = contract(job), .events = [this]() -> std::unique_ptr<EventProbe> {
              // none for a crash job's writer child
              return db_ ? std::make_unique<RocksEvents>(*db_) : nullptr;
            }};
  }

  Verdict verify(const Job&, const Counts& c) override {
    if (mix_) return verify_workload(*mix_, count(), db_get(*db_));
    return verify_native(keys_, op_, c, loaded_, count(), fresh_, db_get(*db_));
  }
  std::optional<Contract> contract(const Job&) const {
    if (op_ == EmbeddedOp::Get || op_ == EmbeddedOp::Scan) return std::nullopt;
    if (o_.disable_wal) return Contract{ContractKind::Memory, 0, "WAL off: writes live in the memtable until a flush"};
    if (o_.sync)
      return Contract{ContractKind::FsyncPerAck, 0, "WriteOptions.sync: the WAL is synced before each write returns"};
    return Contract{ContractKind::OsBuffer, 0, "WAL written to the OS, not synced"};
  }
  Info describe() override { return info_; }
  std::string target() const override { return o_.db.empty() ? trim_dir(o_.path) : trim_dir(o_.db); }
  std::vector<std::string> paths() const override { return {target()}; }
  void teardown() override {
    writers_.kill_all();
    db_.reset();
    if (fresh_ && !dir_.empty() && !o_.keep) remove_store_dir(dir_);
    dir_.clear();
    layer_.reset();
  }

 private:
  uint64_t count() const {
    const int64_t n = db_->count();
    if (n < 0) throw SetupError("rocksdb: counting the records of " + dir_ + " failed");
    return static_cast<uint64_t>(n);
  }
  std::string load(uint64_t first, uint64_t count) {
    RocksHandle h(*db_);
    h.begin();
    for (uint64_t k = first; k < first + count; ++k) h.put(KeyValues::key(k), keys_.kv.value(k));
    return h.commit() ? "" : h.error();
  }
  void arm_crash(const Job& job) {
    // The child's memtable holds every put of the job (no flush there): bounded here.
    const double bytes = static_cast<double>(job.n + job.warmup_ops) * static_cast<double>(o_.batch) *
                         (keys_.kv.sizes.max() + 64.0) * 1.5;
    if (bytes > (1 << 30))
      throw SetupError(
          "rocksdb: --crash runs the puts in a child that holds them all in its memtable: at most 1 GiB "
          "(-n x --batch x --value-size): lower -n");
    if (job.clients != 1) throw SetupError("rocksdb: --crash runs the puts in one writer process: give -c 1");
    child_bytes_ = std::max<uint64_t>(static_cast<uint64_t>(bytes), 4 << 20);
    db_.reset();
    keys_.stamped = true;  // each put's value names it: an older one that survived is told apart
    crash_ = std::make_unique<EmbeddedCrash>(
        writers_, "rocksdb", [this] { db_ = std::make_unique<Db>(o_, dir_); },
        KeyedCheck{native_keys(), [this](std::span<const uint64_t> keys) { return held_values(keys, db_get(*db_)); }},
        contract(job)->detail,
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

  RocksOptions o_;
  EmbeddedOp op_;
  EmbeddedKeys keys_;
  std::shared_ptr<const Workload> mix_;
  std::string dir_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the writers (teardown)
  bool fresh_ = true;
  uint64_t loaded_ = 0, child_bytes_ = 0;
  std::unique_ptr<Db> db_;
  Info info_;
  WriterChildren writers_;
  std::unique_ptr<Crashable> crash_;
};

}  // namespace

AdapterSpec rocksdb_adapter_spec() {
  return {
      .name = "rocksdb",
      .summary = "RocksDB databases (C API): put, get, delete, scan (iterator); write batches of --batch ops",
      .ops = {{"put", EmbeddedOp::Put},
              {"get", EmbeddedOp::Get},
              {"delete", EmbeddedOp::Del},
              {"scan", EmbeddedOp::Scan}},
      .default_ops = "put,get",
      .options =
          {opt(&RocksOptions::path, {.name = "path",
                                     .help = "directory the job's database is made in; a list runs side by side",
                                     .list = true}),
           opt(&RocksOptions::db, {.name = "db", .help = "a database directory to open as it is (kept afterwards)"}),
           opt(&RocksOptions::sync,
               {.name = "sync", .help = "WriteOptions.sync: sync the WAL before each write returns", .list = true}),
           opt(&RocksOptions::disable_wal,
               {.name = "disable-wal", .help = "write without the WAL (memtable only)", .list = true}),
           opt(&RocksOptions::block_cache,
               {.name = "block-cache", .help = "LRU block cache in bytes (0: none)", .list = true, .max = 1e12}),
           opt(&RocksOptions::batch, {.name = "batch",
                                      .help = "keys per write batch of put and delete",
                                      .list = true,
                                      .min = 1,
                                      .max = 100000}),
           opt(&RocksOptions::keep, {.name = "keep", .help = "keep the database directory afterwards"}),
           opt(&RocksOptions::write_buffer_size, {.name = "write-buffer-size",
                                                  .help = "memtable size in bytes before a flush (0: RocksDB's 64 MiB)",
                                                  .list = true,
                                                  .max = 1e12}),
           opt(&RocksOptions::level0_slowdown, {.name = "level0-slowdown",
                                                .help = "level-0 files that slow writes down (0: RocksDB's 20)",
                                                .list = true,
                                                .max = 1000000}),
           opt(&RocksOptions::level0_stop, {.name = "level0-stop",
                                            .help = "level-0 files that stop writes (0: RocksDB's 36)",
                                            .list = true,
                                            .max = 1000000})},
      .unavailable = nullptr,
      .make = [](const Job& j, WorkloadPtr w) { return std::make_unique<RocksAdapter>(j, std::move(w)); },
      .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw, KvOp::Scan},
      .families = {Family::KeyedStore},
      .libraries = {"rocksdb"},
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"put", kMixOp},
      .durability_settings = {"sync", "disable-wal"},
      .reset = "a new database directory in --path each run (--db: that one, as it is)"};
}

}  // namespace mw
