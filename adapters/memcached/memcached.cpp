// memcached as a cache: get / set / delete and the shared workload (--mix: read, update,
// insert, delete, rmw as a read of the cas and a write guarded by it) over the text or the meta
// protocol (--protocol, reply.h) on our own non-blocking sockets (client.h), -P requests in
// flight per client, every reply checked.
// Starts its own memcached on a free port unless --host, sized so that the job's keys fit:
// memcached evicts when -m is full, and a read of an evicted key would count as lost data.
#include "adapters/memcached/memcached.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "adapters/conn/server.h"
#include "adapters/events.h"
#include "adapters/memcached/client.h"
#include "api/options.h"
#include "api/stop.h"
#include "config/workload_spec.h"
#include "services/services.h"

namespace mw {
namespace {

using memcached::Conn;
using memcached::Endpoint;
using memcached::McClient;
using memcached::Native;
using memcached::now_ns;
using memcached::Op;
using memcached::Protocol;
using memcached::Reply;

// The options of `mwbench memcached`, typed (options.h); the member initialisers are the defaults.
// The native ops take the workload's --keyspace, --keys and --value-size too.
struct McOptions {
  std::string host;  // "": start a memcached on a free port
  int port = 11211;
  Protocol protocol = Protocol::Meta;
  int64_t max_reply = int64_t{512} << 20;
  std::string key_prefix = "mwbench:";
  std::optional<uint64_t> memory;     // MB; default: sized for the job's keys
  std::optional<int> server_threads;  // memcached -t; default: server_threads_default()
  std::string server_binary = "memcached";
};

// The managed server's worker threads: half this machine's cores (1 to 4, memcached's own
// default being 4), the other half being the client's. Redis answers on one thread; memcached's
// four workers on a 2-core machine that also runs the client spend the cores on switching
// (docs/measurements/peers.md, memcached against redis).
int server_threads_default() { return std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 1, 4); }

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kDefaultItemMax = kMiB;  // memcached's -I default
constexpr uint64_t kItemOverhead = 96;      // item header, cas, key and "\r\n", rounded up

int64_t deadline_of(const Endpoint& ep) { return now_ns() + static_cast<int64_t>(ep.timeout_s * 1e9); }

// The managed server's size: -m (MB) for every key the job can hold at its largest value size
// (slab classes waste up to a quarter of an item), -I when a value is over 1 MB.
struct Sizing {
  uint64_t memory_mb = 64;
  uint64_t item_max = kDefaultItemMax;  // bytes; a multiple of 1 MB
  uint64_t items = 0;
};

Sizing size_for(uint64_t items, uint64_t max_value, const std::string& prefix) {
  Sizing s;
  s.items = items;
  const uint64_t item = max_value + prefix.size() + 20 + kItemOverhead;
  if (item > kDefaultItemMax) s.item_max = (item + kMiB - 1) / kMiB * kMiB;
  if (s.item_max > 1024 * kMiB)
    throw SetupError("memcached: a value of " + std::to_string(max_value) +
                     " bytes is over the largest item memcached can store (-I 1024m)");
  const double bytes = static_cast<double>(items) * static_cast<double>(item) * 1.25;
  // One 1 MB page (or -I) per slab class in use, plus room for the hash table and buffers.
  s.memory_mb = static_cast<uint64_t>(std::ceil(bytes / kMiB)) + 64;
  s.memory_mb = std::max(s.memory_mb, 2 * s.item_max / kMiB + 64);  // memcached: -I at most -m / 2
  return s;
}

int max_conns(const Job& job) { return std::max(1024, job.clients + 64); }  // memcached -c

ServiceSpec memcached_service(const Job& job, const std::string& binary, const Sizing& sz, int threads) {
  ServiceSpec s;
  s.name = "memcached";
  s.binary = binary;
  s.args = {"-l", "127.0.0.1",
            "-p", "{port}",
            "-U", "0",
            "-m", std::to_string(sz.memory_mb),
            "-c", std::to_string(max_conns(job)),
            "-t", std::to_string(threads)};
  if (sz.item_max != kDefaultItemMax) s.args.insert(s.args.end(), {"-I", std::to_string(sz.item_max / kMiB) + "m"});
  if (geteuid() == 0) s.args.insert(s.args.end(), {"-u", "root"});  // memcached refuses root without -u
  s.probe = conn::handshake_probe<Conn, Endpoint>();
  return s;
}

uint64_t to_u64(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
}

// memcached's own events for the timeline (api/events.h): "stats" over a connection of the probe's.
class McEvents final : public ConnProbe<Conn> {
 public:
  explicit McEvents(const Endpoint& ep) : ep_(ep) {}
  std::string source() const override { return "memcached"; }

 private:
  std::unique_ptr<Conn> connect(int64_t deadline) override { return std::make_unique<Conn>(ep_, deadline); }
  std::vector<EventReading> read(Conn& c, int64_t deadline) override {
    using K = EventReading::Kind;
    static const std::vector<StatEvent> table = {
        {"evictions", K::Counter, "items evicted to make room (the cache is full)"},
        {"reclaimed", K::Counter, "expired items' memory reused"},
        {"conn_yields", K::Counter, "connections made to yield (a client past -R requests per event)"},
        {"listen_disabled_num", K::Counter, "times memcached stopped accepting connections (its limit reached)"},
        {"rejected_connections", K::Counter, "connections refused (over the limit)"},
    };
    return stat_events(c.stats("", deadline), table);
  }
  Endpoint ep_;
};

class McAdapter final : public Adapter {
 public:
  McAdapter(const Job& job, WorkloadPtr mix) : o_(options_of<McOptions>(job)), wl_(std::move(mix)) {
    op_ = wl_ ? Op::Mix : op_of<Op>(job);
    managed_ = o_.host.empty();
    ep_.host = managed_ ? "127.0.0.1" : o_.host;
    ep_.port = o_.port;
    ep_.timeout_s = job.timeout_s;
    ep_.reconnect_max_s = job.reconnect_backoff_s;
    ep_.limits.max_reply = static_cast<size_t>(o_.max_reply);
    ep_.limits.timeout_ns = static_cast<int64_t>(job.timeout_s * 1e9);
    ep_.limits.budget = std::make_shared<conn::ReplyBudget>(ep_.limits.max_reply);
    ep_.protocol = o_.protocol;
    keys_.prefix = o_.key_prefix;
    if (keys_.prefix.empty() || keys_.prefix.size() > 200 ||
        std::any_of(keys_.prefix.begin(), keys_.prefix.end(), [](char c) { return c <= ' ' || c == 0x7f; }))
      throw SetupError("memcached: --key-prefix must be 1 to 200 printable bytes without spaces (memcached keys)");
    const WorkloadOptions w = workload_options_of(job);
    native_.keyspace = w.keyspace.value_or(100000);
    // The native ops' keys are sequential unless --keys random (or uniform) is given.
    native_.random = job.has("keys") && (w.keys == "random" || w.keys == "uniform");
    native_.sizes = SizeDist::parse(w.value_size, "--value-size");
    if (!wl_) keys_.values.resize(native_.sizes.max());
    if (op_ == Op::Delete) {
      if (job.duration_s > 0) throw SetupError("memcached: delete removes -n loaded keys: give -n, not --duration");
      native_.keyspace = std::max<uint64_t>(native_.keyspace, job.n + job.warmup_ops);
    }
  }

  void prepare(const Job& job) override {
    const uint64_t max_value = wl_ ? wl_->sizes.max() : native_.sizes.max();
    if (max_value > ep_.limits.max_reply)
      throw SetupError("memcached: --value-size up to " + std::to_string(max_value) + " bytes is over --max-reply (" +
                       std::to_string(ep_.limits.max_reply) + "): the values read back would be refused");
    if (std::string why = conn::budget_short(max_value, job.clients, ep_.limits.max_reply); !why.empty())
      throw SetupError("memcached: " + why);
    if (managed_) {
      sizing_ = size_for(items(job), max_value, keys_.prefix);
      if (o_.memory) sizing_.memory_mb = std::max<uint64_t>(*o_.memory, 2 * sizing_.item_max / kMiB);
      const uint64_t ram_mb =
          static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / kMiB;
      if (sizing_.memory_mb > ram_mb * 3 / 4)
        throw SetupError("memcached: " + std::to_string(sizing_.items) + " keys of up to " + std::to_string(max_value) +
                         " bytes need memcached -m " + std::to_string(sizing_.memory_mb) +
                         " (MB), more than 3/4 of this machine's " + std::to_string(ram_mb) +
                         " MB; lower --keyspace or --value-size, or give --memory");
      const int threads = o_.server_threads.value_or(server_threads_default());
      svc_ = shared_service("memcached:" + std::to_string(sizing_.memory_mb) + ":" + std::to_string(sizing_.item_max) +
                                ":" + std::to_string(max_conns(job)) + ":" + std::to_string(threads) + ":" +
                                o_.server_binary,
                            memcached_service(job, o_.server_binary, sizing_, threads));
      ep_.port = svc_->port();
    }
    Conn c(ep_, deadline_of(ep_));
    auto settings = c.stats("settings", deadline_of(ep_));
    const uint64_t item_max = to_u64(settings, "item_size_max");
    info_["server"] = "memcached";
    info_["version"] = c.version();
    info_["managed"] = managed_ ? "yes" : "no";
    info_["memory_mb"] = std::to_string(to_u64(settings, "maxbytes") / kMiB);
    info_["threads"] = std::to_string(to_u64(settings, "num_threads"));
    info_["item_size_max"] = std::to_string(item_max);
    info_["threads"] = settings.count("num_threads") ? settings["num_threads"] : "";
    info_["protocol"] = ep_.protocol == Protocol::Text ? "text (get/gets/set/cas/delete)" : "meta (mg/ms/md)";
    info_["value_size"] = wl_ ? wl_->sizes.text() : native_.sizes.text();
    if (!wl_) info_["keyspace"] = std::to_string(native_.keyspace);
    if (item_max && max_value + keys_.prefix.size() + 20 + kItemOverhead > item_max)
      warnings_.push_back({WarningKind::OverServerLimit,
                           "values of up to " + std::to_string(max_value) +
                               " bytes are over the server's item size limit (" + std::to_string(item_max) +
                               " bytes, memcached -I): those sets fail with SERVER_ERROR object too large"});
    if (managed_) {  // our own server starts each job empty (a flushed item is reclaimed, never evicted)
      std::string ok = c.line("flush_all\r\n", deadline_of(ep_));
      if (ok != "OK")
        throw SetupError("memcached " + ep_.where() + ": flush_all answered '" + memcached::printable(ok) + "'");
    }
    if (op_ == Op::Get || op_ == Op::Delete) preload(c);
    evictions_ = to_u64(c.stats("", deadline_of(ep_)), "evictions");
  }

  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<McClient>(ep_, keys_, native_, op_, &health_, &shared_);
  }

  Verdict verify(const Job&, const Counts&) override {
    if (op_ == Op::Get) return {};
    // A server given up during the run is not waited for once more.
    if (std::string why = health_.lost(); !why.empty())
      return {true, false, "keys were not read back: the server stopped answering during the run (" + why + ")"};
    try {
      Conn c(ep_, deadline_of(ep_));
      auto stats = c.stats("", deadline_of(ep_));
      evicted_ = to_u64(stats, "evictions") - std::min(evictions_, to_u64(stats, "evictions"));
      const std::string evict_note =
          evicted_ ? "; memcached evicted " + std::to_string(evicted_) + " items (its -m is full: give --memory)" : "";
      std::string got;
      auto get = [&](uint64_t k, std::string& v) {
        Reply r = c.call(mg(k), deadline_of(ep_), "a get");
        if (r.code == Reply::Code::Value)
          v.assign(r.data);
        else if (r.code != Reply::Code::Miss)
          throw SetupError("a get answered '" + memcached::printable(r.line) + "'");
        return r.code == Reply::Code::Value;
      };
      if (wl_) {
        Verdict v = verify_workload(*wl_, to_u64(stats, "curr_items"), get);
        v.detail += evict_note;
        return v;
      }
      size_t bad = 0;
      const auto& keys = op_ == Op::Set ? shared_.written : shared_.deleted;
      for (uint64_t k : keys) {
        bool found = get(k, got);
        if (op_ == Op::Delete ? found
                              : !found || got.size() != native_.size_of(k) ||
                                    keys_.values.check(k, got.data(), got.size()) != ValueCheck::Ok)
          ++bad;
      }
      const char* what = op_ == Op::Set ? " keys read back hold the value that was set" : " deleted keys are gone";
      return {true, bad == 0,
              std::to_string(keys.size() - bad) + " of " + std::to_string(keys.size()) + what + evict_note};
    } catch (const SetupError& e) {
      return {true, false, std::string("keys could not be read back: ") + e.what()};
    }
  }

  Metrics metrics(double) override {
    if (op_ == Op::Get || !health_.lost().empty()) {
      try {  // a get job's evictions are read here (verify reads back nothing)
        Conn c(ep_, deadline_of(ep_));
        uint64_t now = to_u64(c.stats("", deadline_of(ep_)), "evictions");
        evicted_ = now - std::min(now, evictions_);
      } catch (const SetupError&) {
        return {};
      }
    }
    Metrics m = {count_metric("evictions", evicted_)};
    if (wl_ && wl_->mix.has(KvOp::Rmw))
      m.push_back(count_metric("rmw_cas_retries", shared_.cas_retries));  // reads again after another client's write
    return m;
  }

  Info describe() override { return info_; }
  std::string target() const override { return ep_.where(); }
  std::vector<Warning> warnings() const override { return warnings_; }
  Abilities abilities(const Job&) override {
    return {.events = [this]() -> std::unique_ptr<EventProbe> { return std::make_unique<McEvents>(ep_); }};
  }

 private:
  std::string mg(uint64_t k) const {
    std::string s;
    memcached::append_get(s, ep_.protocol, keys_, k, k);
    return s;
  }
  // Keys the job can hold at once: its key space, plus what a mix inserts.
  uint64_t items(const Job& job) const {
    if (!wl_) return native_.keyspace;
    const uint64_t n = wl_->keys.spec().keyspace;
    if (!wl_->mix.has(KvOp::Insert)) return n;
    if (job.duration_s > 0) return 2 * n;  // unknown ahead: room for as many again (evictions are reported)
    return n + static_cast<uint64_t>(static_cast<double>(job.n + job.warmup_ops) * wl_->mix.share(KvOp::Insert) * 1.1) +
           static_cast<uint64_t>(job.clients) * 16;
  }

  void preload(Conn& c) {
    // get and delete must find every key: set the key space first, pipelined, every reply checked.
    std::string batch;
    for (uint64_t base = 0; base < native_.keyspace;) {
      throw_if_stopped("the memcached preload");
      batch.clear();
      uint64_t k = base;
      for (; k < native_.keyspace && k - base < 1000 && batch.size() < (4 << 20); ++k)
        memcached::append_set_native(batch, ep_.protocol, keys_, k, native_.size_of(k), k);
      c.pipeline(batch, k - base, [&](const Reply& r) {
        if (r.code != Reply::Code::Stored)
          throw SetupError("memcached " + target() + ": preload set answered '" + memcached::printable(r.line, 100) +
                           "'");
      });
      base = k;
    }
  }

  McOptions o_;
  std::shared_ptr<const Workload> wl_;
  Op op_ = Op::Set;
  bool managed_ = true;
  Endpoint ep_;
  memcached::Keys keys_;
  Native native_;
  Health<Conn> health_;
  memcached::Shared shared_;
  Sizing sizing_;
  std::shared_ptr<Service> svc_;
  Info info_;
  std::vector<Warning> warnings_;
  uint64_t evictions_ = 0, evicted_ = 0;
};

}  // namespace

AdapterSpec memcached_adapter_spec() {
  using O = McOptions;
  return {
      .name = "memcached",
      .summary =
          "memcached get / set / delete and --mix (text or meta protocol), every reply checked; starts its "
          "own memcached unless --host",
      .ops = {{"set", memcached::Op::Set}, {"get", memcached::Op::Get}, {"delete", memcached::Op::Delete}},
      .default_ops = "set,get",
      .options = {conn::host_option<O>("memcached"), conn::port_option<O>(),
                  opt(&O::protocol,
                      {.name = "protocol",
                       .help = "text (get/set/cas/delete, each reply matched by order, kind and key) or meta "
                               "(mg/ms/md, each reply matched by its opaque token; memcached answers pipelined gets in "
                               "batches, text gets with a system call each)"},
                      {{"text", Protocol::Text}, {"meta", Protocol::Meta}}),
                  opt(&O::max_reply,
                      {.name = "max-reply",
                       .help = "largest value accepted in a reply, and the budget of all clients' replies in progress "
                               "together (1 MiB each aside); past either the op fails and the connection drops",
                       .min = 1,
                       .max = 4294967296.0}),
                  conn::key_prefix_option<O>(),
                  opt(&O::memory, {.name = "memory",
                                   .help = "memory of the managed server, MB (memcached -m; default: the job's keys at "
                                           "their largest value, so that nothing is evicted)",
                                   .min = 1,
                                   .max = 1 << 24}),
                  opt(&O::server_threads, {.name = "server-threads",
                                           .help = "worker threads of the managed server (memcached -t; default: half "
                                                   "the cores, 1 to 4, the other half being the client's)",
                                           .min = 1,
                                           .max = 256}),
                  conn::server_binary_option<O>("memcached")},
      .unavailable = conn::unavailable_without<O>("memcached"),
      .make = [](const Job& j, WorkloadPtr w) { return std::make_unique<McAdapter>(j, std::move(w)); },
      .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw},
      .expiry = true,
      .conditional_writes = true,
      .families = {Family::KeyedStore},
      .target = TargetKind::External,
      .target_option = "host",
      .fault_kinds = {"slow", "cut"},
      .connects = true,
      .reset =
          "flush_all on the memcached it starts (an external one keeps its items); get and delete preload their keys"};
}

}  // namespace mw
