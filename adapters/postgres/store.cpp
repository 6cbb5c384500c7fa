// PostgreSQL as a keyed store: a table (k bigint primary key, v bytea) read, updated, inserted,
// deleted, read-modified-written and scanned by prepared statements (client.h), -P requests in
// flight per connection through libpq's pipeline mode; native ops select / update / insert (the
// pgbench -S and -N comparisons, and the writes a --crash kill checks). Starts its own
// PostgreSQL unless --host or --conninfo.

#include <unordered_map>

#include "adapters/postgres/client.h"
#include "adapters/postgres/postgres.h"
#include "adapters/postgres/replicas.h"
#include "adapters/table_store.h"
#include "api/options.h"
#include "api/stop.h"
#include "config/workload_spec.h"
#include "durability/durability.h"
#include "queue/queue.h"

namespace mw {
namespace {

using pg::Conn;
using pg::PgOptions;

enum class Op { Select, Update, Insert, Mix };

class PgStore final : public Adapter {
 public:
  PgStore(const Job& job, WorkloadPtr mix)
      : o_(options_of<PgOptions>(job)),
        mix_(std::move(mix)),
        table_(pg::table_name(o_, "mwbench_kv")),
        sql_(table_, mix_ && mix_->trace) {
    op_ = mix_ ? Op::Mix : op_of<Op>(job);
    const WorkloadOptions w = workload_options_of(job);
    keys_.space = w.keyspace.value_or(op_ == Op::Insert ? 1 : 100000);
    keys_.sizes = SizeDist::parse(w.value_size, "--value-size");
  }
  ~PgStore() override { teardown(); }

  void prepare(const Job& job) override {
    const bool crash = durability_options_of(job).crash != CrashKind::None, faults = !job.faults.empty();
    if (crash && op_ != Op::Insert && op_ != Op::Mix) throw SetupError(pg::kCrashOps);
    if (crash) layer_ = power_layer(job, "/tmp");  // --crash power, torn: its data directory on the layer
    // A crash or fault job's server is its own: it starts empty and is killed.
    s_ = pg::server_of(job, crash || faults, layer_ ? layer_->path() + "/data" : "");
    if (crash && !s_.managed())
      throw SetupError("postgres: --crash kills the server mwbench starts: drop --host/--conninfo");
    Conn c(s_.ep, until(job));
    info_ = {{"server", "postgres"},
             {"version", c.server_version()},
             {"managed", s_.managed() ? "yes" : "no"},
             {"synchronous_commit", o_.synchronous_commit},
             {"table", table_}};
    pg::show_durability(c, info_, until(job));
    if (o_.unlogged) info_["unlogged"] = "yes";
    if (s_.set) info_["replication"] = s_.set->describe();
    // A --table that exists is used as it is (a read-only role can run its reads on it).
    const bool exists =
        !o_.table.empty() && !PQgetisnull(c.exec("SELECT to_regclass($1)", until(job), {table_}).get(), 0, 0);
    if (!exists)
      c.exec(std::string("CREATE ") + (o_.unlogged ? "UNLOGGED " : "") + "TABLE " + table_ +
                 "(k bigint PRIMARY KEY, v bytea NOT NULL)",
             until(job));
    created_ = o_.table.empty();
    if (op_ == Op::Select || op_ == Op::Update) preload(c, job, exists);
    if (crash || (faults && s_.managed())) {  // after a kill: every acknowledged insert (key = its seq) read back
      auto crash_hooks = pg::crash_of(
          s_, [this](std::span<const uint64_t> seqs) { return read_back(seqs); }, contract(job)->detail);
      if (mix_)
        crash_hooks->set_held([this](std::span<const uint64_t> keys) { return held_rows(keys); },
                              distinct_by_value(mix_->sizes, 0));
      crash_ = std::move(crash_hooks);
    }
    if (layer_) {  // initdb and the table are on disk before the power can go
      sync_layer(*layer_);
      crash_->set_pagecache(layer_.get());
    }
  }

  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<pg::StoreClient>(s_.ep, sql_, &health_, [this](uint64_t seq) { return native(seq); });
  }

  Verdict verify(const Job& job, const Counts& counts) override {
    if (std::string why = health_.lost(); !why.empty())
      return {true, false, "rows were not read back: the server stopped answering during the run (" + why + ")"};
    try {
      Conn c(s_.ep, until(job));
      const auto count = static_cast<uint64_t>(std::stoll(PQgetvalue(
          c.exec("SELECT count(*) FROM " + table_, pg::deadline(std::max(30.0, job.timeout_s))).get(), 0, 0)));
      auto get = [&](uint64_t k, std::string& v) {
        pg::Result r = c.exec("SELECT v FROM " + table_ + " WHERE k = $1", until(job), {std::to_string(k)}, true);
        if (PQntuples(r.get()) != 1) return false;
        v.assign(PQgetvalue(r.get(), 0, 0), static_cast<size_t>(PQgetlength(r.get(), 0, 0)));
        return true;
      };
      if (mix_) return verify_workload(*mix_, count, get);
      return table::verify_native(native_op(), keys_, count, counts, created_, get);
    } catch (const std::exception& e) {
      return {true, false, std::string("rows could not be read back: ") + e.what()};
    }
  }

  std::optional<Contract> contract(const Job&) const { return pg::contract_of(o_, info_); }

  Info describe() override { return info_; }
  std::string target() const override { return s_.ep.where; }
  Abilities abilities(const Job& job) override {
    return {.crash = crash_.get(), .contract = contract(job), .events = [this] { return pg::event_probe(s_.ep); }};
  }
  std::vector<std::string> paths() const override {
    return s_.managed() ? std::vector<std::string>{s_.svc->dir()} : std::vector<std::string>{};
  }

  void teardown() override {
    if (!created_) return;
    created_ = false;
    try {
      Conn c(s_.ep, pg::deadline(s_.ep.timeout_s));
      c.exec("DROP TABLE IF EXISTS " + table_, pg::deadline(s_.ep.timeout_s));
    } catch (const SetupError&) {  // a server gone: its table goes with its temp dir, or stays behind
    }
  }

 private:
  static int64_t until(const Job& job) { return pg::deadline(job.timeout_s); }

  KvOp native_op() const { return op_ == Op::Insert ? KvOp::Insert : op_ == Op::Update ? KvOp::Update : KvOp::Read; }
  Request native(uint64_t seq) const { return table::native_request(native_op(), seq, keys_); }

  std::vector<WriteState> read_back(std::span<const uint64_t> seqs) { return table::write_states(seqs, rows(), keys_); }
  // A workload's (Crashable::keyed): what each of its keys holds, each value naming its write.
  std::vector<Held> held_rows(std::span<const uint64_t> keys) { return table::held_rows(keys, rows()); }
  // Every row of the table, after the restart.
  std::unordered_map<uint64_t, std::string> rows() {
    const std::unique_ptr<Conn> c = pg::connect_settled(s_);  // the promoted replica, after a failover
    pg::Result r = c->exec("SELECT k, v FROM " + table_, pg::deadline(std::max(30.0, s_.ep.timeout_s)), {}, true);
    std::unordered_map<uint64_t, std::string> rows;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      rows[static_cast<uint64_t>(pg::int8_of(PQgetvalue(r.get(), i, 0)))] =
          std::string(PQgetvalue(r.get(), i, 1), static_cast<size_t>(PQgetlength(r.get(), i, 1)));
    return rows;
  }

  // The keys select and update work on, version 0, by COPY (untimed); a --table that already
  // holds them is used as it is.
  void preload(Conn& c, const Job& job, bool exists) {
    if (exists) {
      // The count is copied before the result is freed (the temporary owning it dies at the ';').
      const std::string n = PQgetvalue(
          c.exec("SELECT count(*) FROM " + table_ + " WHERE k < $1", until(job), {std::to_string(keys_.space)}).get(),
          0, 0);
      if (std::stoull(n) == keys_.space) return;
      throw SetupError("postgres: --table " + table_ + " holds " + n + " of the " + std::to_string(keys_.space) +
                       " keys " + job.op + " works on (--keyspace); drop it to have it loaded");
    }
    std::string data;
    static const char* hex = "0123456789abcdef";
    for (uint64_t k = 0; k < keys_.space; ++k) {
      if (k % 4096 == 0) throw_if_stopped("the postgres preload");
      const std::string v = keys_.value(k);
      data += std::to_string(k) + "\t\\\\x";
      for (unsigned char ch : v) data += hex[ch >> 4], data += hex[ch & 15];
      data += '\n';
      if (data.size() > (8u << 20) || k + 1 == keys_.space) {
        c.copy_in("COPY " + table_ + "(k, v) FROM STDIN", data, pg::deadline(std::max(60.0, job.timeout_s)));
        data.clear();
      }
    }
    c.exec("ANALYZE " + table_, pg::deadline(std::max(60.0, job.timeout_s)));
  }

  PgOptions o_;
  std::shared_ptr<const Workload> mix_;
  std::string table_;
  pg::Statements sql_;
  Op op_;
  KeyValues keys_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the server on it
  pg::Server s_;
  Health<Conn> health_;
  std::unique_ptr<Crashable> crash_;
  Info info_;
  bool created_ = false;
};

}  // namespace

AdapterSpec postgres_adapter_spec() {
  return {.name = "postgres",
          .summary =
              "PostgreSQL: a (k, v) table by prepared statements (select, update, insert, the --mix "
              "workload; -P > 1 in libpq's pipeline mode), and a table as a queue (produce, consume with "
              "FOR UPDATE SKIP LOCKED, roundtrip); every reply checked; starts its own PostgreSQL unless "
              "--host or --conninfo",
          .ops = {{"select", Op::Select},
                  {"update", Op::Update},
                  {"insert", Op::Insert},
                  {"produce", QueueOp::Produce},
                  {"consume", QueueOp::Consume},
                  {"roundtrip", QueueOp::Roundtrip}},
          .default_ops = "insert,select,update",
          .options = pg::option_specs(),
          .unavailable = pg::unavailable,
          .make = [](const Job& j, WorkloadPtr w) -> std::unique_ptr<Adapter> {
            pg::check_replicated(j);
            if (is_queue_op(j.op)) return pg::make_queue_adapter(j);
            return std::make_unique<PgStore>(j, std::move(w));
          },
          .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw, KvOp::Scan},
          .conditional_writes = true,
          .families = {Family::KeyedStore, Family::Queue},
          .target = TargetKind::External,
          .target_option = "host",
          .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
          .crash_ops = {"insert", "produce", kMixOp},
          .fault_kinds = {"kill", "restart", "stop", "slow", "cut", "kill-primary", "switchover"},
          .connects = true,
          .durability_settings = {"synchronous-commit", "unlogged", "fsync", "replicas", "sync-replicas"},
          .reset = "its table made for the run and dropped after it (a --table that exists is used as it is)"};
}

}  // namespace mw
