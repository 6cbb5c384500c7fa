// MariaDB as a keyed store: a table (k bigint primary key, v mediumblob) on InnoDB, read,
// updated, inserted, deleted, read-modified-written (a transaction: SELECT ... FOR UPDATE, then
// UPDATE) and scanned by prepared statements (client.h); native ops select / update / insert (the
// sysbench oltp_point_select comparison, and the writes a --crash kill checks). Starts its own
// mariadbd unless --host.
#include <unordered_map>

#include "adapters/mariadb/client.h"
#include "adapters/mariadb/mariadb.h"
#include "adapters/table_store.h"
#include "api/options.h"
#include "api/stop.h"
#include "config/workload_spec.h"
#include "durability/durability.h"

namespace mw {
namespace {

using mdb::Conn;
using mdb::MyOptions;

enum class Op { Select, Update, Insert, Mix };

// After a kill: every acknowledged insert (key = its seq) read back, its value checked; a
// workload's keys (`mix`: Crashable::keyed), each value naming its write.
class MyCrash final : public Crashable, public KeyedReadBack {
 public:
  MyCrash(mdb::Server& s, std::string table, const KeyValues& keys, Contract c, const Workload* mix)
      : s_(s), table_(std::move(table)), keys_(keys), contract_(std::move(c)), mix_(mix) {
    if (mix_) reads_keys(this);
  }
  std::string victim() const override { return "mariadbd"; }
  void kill() override { s_.svc->kill_now(); }
  void restart() override {
    s_.svc->restart();
    mdb::point_at(s_.ep, *s_.svc);
  }
  std::vector<WriteState> check(std::span<const uint64_t> seqs) override {
    return table::write_states(seqs, rows(), keys_);
  }
  std::vector<Held> held(std::span<const uint64_t> keys) override { return table::held_rows(keys, rows()); }
  uint64_t distinct_writes() const override { return mix_ ? distinct_by_value(mix_->sizes, 0) : UINT64_MAX; }
  std::string note() const override { return contract_.detail; }

 private:
  std::unordered_map<uint64_t, std::string> rows() {
    mdb::Endpoint ep = s_.ep;
    ep.timeout_s = std::max(30.0, ep.timeout_s);
    Conn c(ep);
    std::unordered_map<uint64_t, std::string> rows;
    for (auto& row : c.rows("SELECT k, v FROM " + table_)) rows[std::stoull(row[0])] = std::move(row[1]);
    return rows;
  }

  mdb::Server& s_;
  std::string table_;
  const KeyValues& keys_;
  Contract contract_;
  const Workload* mix_;
};

class MyStore final : public Adapter {
 public:
  MyStore(const Job& job, WorkloadPtr mix)
      : o_(options_of<MyOptions>(job)),
        mix_(std::move(mix)),
        table_(mdb::table_name(o_, "mwbench_kv")),
        sql_(table_, mix_ && mix_->trace) {
    op_ = mix_ ? Op::Mix : op_of<Op>(job);
    const WorkloadOptions w = workload_options_of(job);
    keys_.space = w.keyspace.value_or(op_ == Op::Insert ? 1 : 100000);
    keys_.sizes = SizeDist::parse(w.value_size, "--value-size");
  }
  ~MyStore() override { teardown(); }

  void prepare(const Job& job) override {
    const bool crash = durability_options_of(job).crash != CrashKind::None;
    if (crash && op_ != Op::Insert && op_ != Op::Mix)
      throw SetupError("mariadb: --crash needs op insert or a --mix (its writes are read back)");
    if (crash) layer_ = power_layer(job, "/tmp");  // --crash power, torn: its data and binlog on the layer
    s_ = mdb::server_of(job, crash, layer_ ? layer_->path() : "");
    Conn c(s_.ep);
    info_ = {{"server", "mariadb"},
             {"version", c.server_version()},
             {"managed", s_.managed() ? "yes" : "no"},
             {"table", table_}};
    for (auto& row : c.rows("SELECT LOWER(variable_name), variable_value FROM information_schema.global_variables "
                            "WHERE variable_name IN ('innodb_flush_log_at_trx_commit', 'log_bin', 'sync_binlog', "
                            "'innodb_flush_log_at_timeout', 'innodb_doublewrite')"))
      info_[row[0]] = mdb::one_line(row[1].c_str());
    // A --table that exists is used as it is (a read-only user can run its reads on it).
    const bool exists = !o_.table.empty() && !c.rows("SHOW TABLES LIKE '" + table_ + "'").empty();
    if (!exists)  // a --table of that name is created, loaded and kept
      c.exec("CREATE TABLE " + table_ + " (k BIGINT NOT NULL PRIMARY KEY, v MEDIUMBLOB NOT NULL) ENGINE=InnoDB");
    created_ = o_.table.empty();
    if (op_ == Op::Select || op_ == Op::Update) preload(c, job, exists);
    if (crash) crash_ = std::make_unique<MyCrash>(s_, table_, keys_, *contract(job), mix_.get());
    if (layer_) {  // the installed server and the table are on disk before the power can go
      sync_layer(*layer_);
      crash_->set_pagecache(layer_.get());
    }
  }

  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<mdb::StoreClient>(s_.ep, sql_, &health_, [this](uint64_t seq) { return native(seq); });
  }

  Verdict verify(const Job& job, const Counts& counts) override {
    if (std::string why = health_.lost(); !why.empty())
      return {true, false, "rows were not read back: the server stopped answering during the run (" + why + ")"};
    try {
      mdb::Endpoint ep = s_.ep;
      ep.timeout_s = std::max(30.0, job.timeout_s);
      Conn c(ep);
      const uint64_t count = std::stoull(c.rows("SELECT COUNT(*) FROM " + table_).at(0).at(0));
      auto get = [&](uint64_t k, std::string& v) {
        auto rows = c.rows("SELECT v FROM " + table_ + " WHERE k = " + std::to_string(k));
        if (rows.size() != 1) return false;
        v = std::move(rows[0][0]);
        return true;
      };
      if (mix_) return verify_workload(*mix_, count, get);
      return table::verify_native(native_op(), keys_, count, counts, created_, get);
    } catch (const std::exception& e) {
      return {true, false, std::string("rows could not be read back: ") + e.what()};
    }
  }

  // InnoDB's redo log decides what a commit survives (the binary log, when on, is written
  // before the commit and synced per sync_binlog; recovery keeps what InnoDB committed).
  std::optional<Contract> contract(const Job&) const {
    auto var = [&](const char* k, const std::string& managed) {
      auto it = info_.find(k);
      return it != info_.end() ? it->second : managed;
    };
    const std::string flush = var("innodb_flush_log_at_trx_commit", std::to_string(o_.flush_log_at_trx_commit));
    const double every = std::atof(var("innodb_flush_log_at_timeout", "1").c_str());
    const std::string s = "innodb_flush_log_at_trx_commit=" + flush;
    if (flush == "1") return Contract{ContractKind::FsyncPerAck, 0, s + ": the redo log is flushed at each commit"};
    if (flush == "2")
      return Contract{ContractKind::PeriodicFsync, every,
                      s + ": the redo log is written to the OS at each commit "
                          "(a kill keeps it) and flushed each second"};
    return Contract{ContractKind::PeriodicFsync, every,
                    s + ": the redo log is written and flushed each second "
                        "(a kill can lose those commits too)"};
  }

  Info describe() override { return info_; }
  std::string target() const override { return s_.ep.where; }
  Abilities abilities(const Job& job) override {
    return {.crash = crash_.get(), .contract = contract(job), .events = [this] { return mdb::event_probe(s_.ep); }};
  }
  std::vector<std::string> paths() const override {
    return s_.managed() ? std::vector<std::string>{s_.svc->dir()} : std::vector<std::string>{};
  }

  void teardown() override {
    if (!created_) return;
    created_ = false;
    try {
      Conn(s_.ep).exec("DROP TABLE IF EXISTS " + table_);
    } catch (const SetupError&) {  // a server gone: its table goes with its temp dir, or stays behind
    }
  }

 private:
  KvOp native_op() const { return op_ == Op::Insert ? KvOp::Insert : op_ == Op::Update ? KvOp::Update : KvOp::Read; }
  Request native(uint64_t seq) const { return table::native_request(native_op(), seq, keys_); }

  // The keys select and update work on, version 0, by multi-row INSERTs (untimed); a --table that
  // already holds them is used as it is (a kept table, loaded once: no background work of a fresh
  // load under the measured phase).
  void preload(Conn& c, const Job& job, bool exists) {
    if (exists) {
      const std::string n =
          c.rows("SELECT COUNT(*) FROM " + table_ + " WHERE k < " + std::to_string(keys_.space)).at(0).at(0);
      if (std::stoull(n) == keys_.space) return;
      throw SetupError("mariadb: --table " + table_ + " holds " + n + " of the " + std::to_string(keys_.space) +
                       " keys " + job.op + " works on (--keyspace); drop it to have it loaded");
    }
    static const char* hex = "0123456789abcdef";
    std::string sql;
    for (uint64_t k = 0; k < keys_.space; ++k) {
      if (k % 4096 == 0) throw_if_stopped("the mariadb preload");
      sql += sql.empty() ? "INSERT INTO " + table_ + " (k, v) VALUES " : ",";
      sql += "(" + std::to_string(k) + ",X'";
      for (unsigned char ch : keys_.value(k)) sql += hex[ch >> 4], sql += hex[ch & 15];
      sql += "')";
      if (sql.size() > (4u << 20) || k + 1 == keys_.space) c.exec(sql), sql.clear();
    }
    c.exec("ANALYZE TABLE " + table_);
  }

  MyOptions o_;
  std::shared_ptr<const Workload> mix_;
  std::string table_;
  mdb::Statements sql_;
  Op op_;
  KeyValues keys_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the server on it
  mdb::Server s_;
  Health<mdb::Session> health_;
  std::unique_ptr<Crashable> crash_;
  Info info_;
  bool created_ = false;
};

}  // namespace

AdapterSpec mariadb_adapter_spec() {
  return {.name = "mariadb",
          .summary =
              "MariaDB: a (k, v) InnoDB table by prepared statements (select, update, insert, the --mix "
              "workload); every reply checked; starts its own mariadbd unless --host",
          .ops = {{"select", Op::Select}, {"update", Op::Update}, {"insert", Op::Insert}},
          .default_ops = "insert,select,update",
          .options = mdb::option_specs(),
          .unavailable = mdb::unavailable,
          .make = [](const Job& j, WorkloadPtr w) -> std::unique_ptr<Adapter> {
            return std::make_unique<MyStore>(j, std::move(w));
          },
          .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw, KvOp::Scan},
          .conditional_writes = true,
          .max_in_flight = 1,
          .in_flight_note = "libmariadb answers one statement at a time per connection: more in flight is -c",
          .families = {Family::KeyedStore},
          .target = TargetKind::External,
          .target_option = "host",
          .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
          .crash_ops = {"insert", kMixOp},
          .connects = true,
          .durability_settings = {"flush-log-at-trx-commit", "sync-binlog"},
          .reset = "its table made for the run and dropped after it (a --table that exists is used as it is)"};
}

}  // namespace mw
