// CouchDB document inserts over HTTP (through the shared HTTP engines, http/engine.h): POST with server ids,
// PUT with our ids, _bulk_docs with B docs per request (our ids too), GET of a loaded doc. Every answer is
// checked (201/202 with ok:true; every doc of a bulk request); the database is created fresh
// for the job, its doc_count verified at the end, and dropped afterwards.
#include "adapters/couchdb/couchdb.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "adapters/conn/server.h"
#include "adapters/couchdb/kv.h"
#include "adapters/http/client.h"
#include "adapters/http/engine.h"
#include "adapters/http/http_options.h"
#include "api/stop.h"
#include "config/workload_spec.h"
#include "durability/durability.h"
#include "durability/service_crash.h"
#include "services/services.h"

namespace mw {
namespace {

using couchdb::Op;
using nlohmann::json;

// The options of `mwbench couchdb`, typed (options.h); the member initialisers are the defaults.
struct CouchOptions {
  std::string url;  // "": start pouchdb-server
  size_t doc_size = 100;
  int64_t batch = 100;
  bool keepalive = true;
  int64_t max_body = http::kDefaultMaxBody;
  bool create = true;
  bool keep = false;
  std::string credentials_env = "COUCHDB_CREDENTIALS";
  std::optional<std::string> server_binary;  // default: $MWBENCH_POUCHDB_SERVER, then pouchdb-server
  std::string engine = "auto";
};

// The native ops' documents: id "doc-<k>" and, as payload, the core's self-checking value of
// version 0 (workload.h; printable, so it goes into JSON as it is), unique per document.
std::string payload_of(uint64_t seq, size_t size) { return make_value(seq, 0, size); }

std::string doc_id(uint64_t k) { return make_key("doc-", k); }

std::string doc_json(uint64_t seq, size_t size, bool with_id) {
  json d = {{"seq", seq}, {"payload", payload_of(seq, size)}};
  if (with_id) d["_id"] = doc_id(seq);
  return d.dump();
}

// Typed access to a parsed answer: a field of the wrong type reads as absent, never throws.
const json* field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}
std::string text(const json& j, const char* key) {
  const json* f = field(j, key);
  return f && f->is_string() ? f->get<std::string>() : "";
}
bool is_string_or_absent(const json& j, const char* key) {
  const json* f = field(j, key);
  return !f || f->is_string();
}
// A short printable rendering of any value or body, for details.
std::string shown(const json& j) { return http::printable(j.dump(-1, ' ', false, json::error_handler_t::replace), 60); }
std::string shown(const std::string& body) { return http::printable(body, 60); }
uint32_t bytes_of(const std::string& body) { return static_cast<uint32_t>(std::min<size_t>(body.size(), UINT32_MAX)); }

// A failed HTTP answer: its status decides the kind, CouchDB's error/reason the detail.
OpResult http_failure(long status, const std::string& body, std::string& detail) {
  json j = json::parse(body, nullptr, false);
  std::string why;
  if (const json* e = field(j, "error")) {
    why = shown(*e);
    std::string reason = text(j, "reason");
    if (!reason.empty()) why += " " + http::printable(reason, 80);
  }
  detail = "HTTP " + std::to_string(status) + (why.empty() ? "" : ": " + why);
  Status s = status == 409                      ? Status::Mismatch
             : status == 404                    ? Status::NotFound
             : (status == 401 || status == 403) ? Status::Refused
                                                : Status::Error;
  return {s, 0, detail};
}

OpResult wrong_reply(const std::string& what, const std::string& body, std::string& detail) {
  detail = what + ": " + shown(body);
  return {Status::Error, 0, detail};
}

}  // namespace

OpResult couchdb::check_reply(Op op, long status, const std::string& body, const Expect& want, std::string& detail) {
  try {
    bool written = status == 201 || status == 202;
    if (op == Op::Get ? status != 200 : !written) return http_failure(status, body, detail);
    const std::string code = "HTTP " + std::to_string(status);
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded()) return wrong_reply(code + " answer is not JSON", body, detail);
    if (op == Op::Get) {
      if (!j.is_object()) return wrong_reply("GET " + want.id + " answered no JSON object", body, detail);
      if (!is_string_or_absent(j, "_id") || !is_string_or_absent(j, "payload"))
        return wrong_reply("GET " + want.id + " answered the wrong JSON types", body, detail);
      if (text(j, "_id") != want.id || text(j, "payload") != want.payload) {
        detail = "GET " + want.id + " did not return the document that was stored";
        return {Status::Mismatch, 0, detail};
      }
      return {Status::Ok, bytes_of(body), {}};
    }
    if (op == Op::Bulk) {
      if (!j.is_array()) return wrong_reply("_bulk_docs answered no JSON array", body, detail);
      if (j.size() != static_cast<uint64_t>(want.docs)) {
        detail =
            "_bulk_docs answered " + std::to_string(j.size()) + " results for " + std::to_string(want.docs) + " docs";
        return {Status::Mismatch, 0, detail};
      }
      size_t bad = 0;
      std::string first;
      for (auto& d : j) {
        if (!d.is_object() || !is_string_or_absent(d, "rev") || !is_string_or_absent(d, "reason"))
          return wrong_reply("_bulk_docs answered the wrong JSON types", body, detail);
        if (field(d, "error") || !field(d, "rev")) {
          if (!bad++) {
            const json* e = field(d, "error");
            first = e ? (e->is_string() ? http::printable(e->get<std::string>(), 60) : shown(*e)) : "no rev";
            std::string reason = text(d, "reason");
            if (!reason.empty()) first += " " + http::printable(reason, 80);
          }
        }
      }
      if (bad) {
        detail = std::to_string(bad) + " of " + std::to_string(want.docs) + " docs failed: " + first;
        return {Status::Mismatch, 0, detail};
      }
      return {Status::Ok, bytes_of(body), {}};
    }
    if (!j.is_object()) return wrong_reply(code + " answered no JSON object", body, detail);
    const json* okf = field(j, "ok");
    if ((okf && !okf->is_boolean()) || !is_string_or_absent(j, "id") || !is_string_or_absent(j, "rev"))
      return wrong_reply(code + " answered the wrong JSON types (ok must be true, id and rev strings)", body, detail);
    bool ok = okf && okf->get<bool>() && field(j, "id") && field(j, "rev");
    if (ok && op == Op::Put) ok = text(j, "id") == want.id;
    if (!ok) {
      detail = code + " without ok:true, id and rev: " + shown(body);
      return {Status::Mismatch, 0, detail};
    }
    return {Status::Ok, bytes_of(body), {}};
  } catch (const std::exception& e) {  // an answer nobody foresaw is a failure, not a crash
    detail = std::string("unexpected answer (") + http::printable(e.what(), 60) + ")";
    return {Status::Error, 0, detail};
  }
}

int64_t couchdb::doc_count_of(const std::string& body, std::string& why) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) {
    why = "the answer is not a JSON object: " + shown(body);
    return -1;
  }
  const json* c = field(j, "doc_count");
  if (!c) {
    why = "the answer has no doc_count: " + shown(body);
    return -1;
  }
  if (!c->is_number_unsigned() && !(c->is_number_integer() && c->get<int64_t>() >= 0)) {
    why = "doc_count is not a whole number: " + shown(*c);
    return -1;
  }
  if (c->is_number_unsigned() && c->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    why = "doc_count is out of range: " + shown(*c);
    return -1;
  }
  return c->get<int64_t>();
}

namespace {

class DocExchange final : public http::Exchange {
 public:
  DocExchange(Op op, std::string db_url, size_t doc_size, int64_t batch, uint64_t keyspace)
      : op_(op), db_(std::move(db_url)), size_(doc_size), batch_(batch), keyspace_(keyspace) {}

  void request(uint64_t seq, std::string& method, std::string& url, std::string& body) override {
    switch (op_) {
      case Op::Insert: method = "POST", url = db_, body = doc_json(seq, size_, false); break;
      case Op::Put: method = "PUT", url = db_ + "/" + doc_id(seq), body = doc_json(seq, size_, false); break;
      case Op::Get: method = "GET", url = db_ + "/" + doc_id(seq % keyspace_); break;
      case Op::Bulk: {
        method = "POST", url = db_ + "/_bulk_docs";
        body = "{\"docs\":[";
        for (int64_t i = 0; i < batch_; ++i)
          body +=
              (i ? "," : "") + doc_json(seq * static_cast<uint64_t>(batch_) + static_cast<uint64_t>(i), size_, true);
        body += "]}";
        break;
      }
    }
  }

  OpResult check(uint64_t seq, long status, const std::string& body, int64_t, std::string& detail) override {
    couchdb::Expect want;
    if (op_ == Op::Put) want.id = doc_id(seq);
    if (op_ == Op::Get) want.id = doc_id(seq % keyspace_), want.payload = payload_of(seq % keyspace_, size_);
    if (op_ == Op::Bulk) want.docs = batch_;
    return couchdb::check_reply(op_, status, body, want, detail);
  }

 private:
  Op op_;
  std::string db_;
  size_t size_;
  int64_t batch_;
  uint64_t keyspace_;
};

std::string pouchdb_binary(const CouchOptions& o) {
  std::vector<std::string> tries;
  if (o.server_binary) tries.push_back(*o.server_binary);
  if (const char* e = std::getenv("MWBENCH_POUCHDB_SERVER")) tries.push_back(e);
  tries.push_back("pouchdb-server");
  tries.push_back("/opt/mwbench-node/node_modules/.bin/pouchdb-server");
  tries.push_back(std::string(MWBENCH_SOURCE_DIR) + "/.deps/node_modules/.bin/pouchdb-server");
  for (auto& t : tries) {
    std::string p = find_binary(t);
    if (!p.empty()) return p;
  }
  return "";
}

ServiceSpec pouchdb_service(const std::string& binary) {
  ServiceSpec s;
  s.name = "pouchdb-server";
  s.binary = binary;
  s.setup = {{"sh", "-c", "mkdir -p data && printf '{\"log\":{\"level\":\"warning\"}}' > config.json"}};
  s.args = {
      "--port",           "{port}",    "--host", "127.0.0.1", "--dir", "{dir}/data", "--config", "{dir}/config.json",
      "--no-stdout-logs", "--no-color"};
  s.start_timeout_s = 60;
  s.probe = [](int port) -> std::string {
    try {
      http::Options o;
      o.timeout_s = 1;
      auto r = http::fetch("GET", "http://127.0.0.1:" + std::to_string(port) + "/", "", o);
      return r.status == 200 ? "" : "GET / answered " + std::to_string(r.status);
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return s;
}

class CouchAdapter final : public Adapter {
 public:
  CouchAdapter(const Job& job, WorkloadPtr mix)
      : o_(options_of<CouchOptions>(job)),
        op_(is_mix(job) ? Op::Get : op_of<Op>(job)),  // a mix: not used
        size_(o_.doc_size),
        batch_(o_.batch),
        keyspace_(workload_options_of(job).keyspace.value_or(1000)),
        mix_(std::move(mix)) {
    static std::atomic<int> counter{0};
    db_ = "mwbench-" + std::to_string(run_id()) + "-" + std::to_string(counter++);
    opts_.keepalive = o_.keepalive;
    opts_.timeout_s = job.timeout_s;
    opts_.max_body = o_.max_body;
    opts_.headers = {"Content-Type: application/json", "Accept: application/json"};
    if (const char* cred = std::getenv(o_.credentials_env.c_str())) opts_.userpwd = cred;
    if (!o_.url.empty()) {
      const std::string& url = o_.url;
      auto scheme = url.find("://");
      if (scheme == std::string::npos)
        throw SetupError("couchdb: --url expects http://host:port[/db], got '" + redact_url(url) + "'");
      auto slash = url.find('/', scheme + 3);
      base_ = url.substr(0, slash);
      if (slash != std::string::npos) {
        std::string path = url.substr(slash + 1);
        while (!path.empty() && path.back() == '/') path.pop_back();
        if (!path.empty()) db_ = path;
      }
    }
  }
  ~CouchAdapter() override { teardown(); }

  void prepare(const Job& job) override {
    const bool crash = durability_options_of(job).crash != CrashKind::None;
    if (crash && (!base_.empty() || op_ != Op::Insert || mix_))
      throw SetupError("couchdb: --crash needs op insert on the pouchdb-server mwbench starts (no --url)");
    if (base_.empty()) {  // a crash job's server is its own: it is killed
      ServiceSpec spec = pouchdb_service(pouchdb_binary(o_));
      if (crash && (layer_ = power_layer(job, "/tmp"))) {  // --crash power, torn: its LevelDB dir on the layer
        const std::string data = layer_->path() + "/data";
        if (mkdir(data.c_str(), 0700) != 0)
          throw SetupError("couchdb: cannot make " + data + ": " + std::strerror(errno));
        relocate(spec, "{dir}/data", data);
      }
      svc_ = crash ? std::make_shared<Service>(spec) : shared_service("pouchdb-server", spec);
      base_ = "http://127.0.0.1:" + std::to_string(svc_->port());
      info_["managed"] = "yes";
    }
    if (crash)
      crash_ = std::make_unique<ServiceCrash>(
          svc_, [this](int port) { base_ = "http://127.0.0.1:" + std::to_string(port); },
          [this](std::span<const uint64_t> seqs) { return check_inserts(seqs); },
          "pouchdb-server (LevelDB): writes reach the OS before the reply, fsync is LevelDB's choice");
    http::Target t = http::parse_target(db_url());
    if (http::use_native(o_.engine, t, "couchdb")) {
      http::resolve(t);
      target_ = std::make_shared<http::Target>(std::move(t));
    }
    if (mix_ && !target_)
      throw SetupError("couchdb: --mix needs the native engine (http:// URLs, --engine auto or native)");
    if (job.pipeline > 1 && !target_)
      throw SetupError("couchdb: -P > 1 (pipelining) needs the native engine (http:// URLs, --engine auto or native)");
    if (job.pipeline > 1 && !opts_.keepalive) throw SetupError("couchdb: -P > 1 (pipelining) needs --keepalive");
    // libcurl: an epoll set, a timerfd, a socket, a probe's socket (native: fewer)
    ensure_open_files("couchdb", job.clients, 4);
    opts_.probe_url = base_ + "/";  // after a timeout: does the server still answer GET /?
    auto hello = http::fetch("GET", base_ + "/", "", opts_);
    json h = json::parse(hello.body, nullptr, false);
    if (hello.status != 200 || !h.is_object())
      throw SetupError("couchdb " + redact_url(base_) + ": GET / answered HTTP " + std::to_string(hello.status) +
                       (hello.status == 200 ? " without a JSON object: " + shown(hello.body) : ""));
    info_["server"] = h.contains("couchdb") ? "couchdb" : h.contains("express-pouchdb") ? "pouchdb-server" : "unknown";
    info_["version"] = http::printable(text(h, "version"), 40);
    info_["engine"] = http::engine_name(target_ != nullptr);
    info_["database"] = db_;
    if (o_.create) {
      auto r = http::fetch("PUT", db_url(), "", opts_);
      if (r.status == 412)
        throw SetupError(
            "couchdb " + redact_url(db_url()) +
            ": the database already exists; mwbench creates a fresh one (name another, or --create false to use it)");
      if (r.status == 401 || r.status == 403)
        throw SetupError("couchdb " + redact_url(db_url()) + ": not allowed to create the database (HTTP " +
                         std::to_string(r.status) + "): set credentials in the URL or $COUCHDB_CREDENTIALS");
      if (r.status != 201 && r.status != 202)
        throw SetupError("couchdb " + redact_url(db_url()) + ": creating the database answered HTTP " +
                         std::to_string(r.status));
      created_ = true;
    } else {
      auto r = http::fetch("GET", db_url(), "", opts_);
      if (r.status == 404)
        throw SetupError("couchdb " + redact_url(db_url()) + ": the database does not exist (HTTP 404)");
      if (r.status != 200)
        throw SetupError("couchdb " + redact_url(db_url()) + ": answered HTTP " + std::to_string(r.status));
    }
    start_count_ = doc_count();
    if (op_ == Op::Get && !mix_) preload();
    if (crash_ && layer_) {  // the database as created is on disk before the power can go
      sync_layer(*layer_);
      crash_->set_pagecache(layer_.get());
    }
  }

  std::unique_ptr<Client> open(const Job&, int) override {
    if (mix_) return http::make_client(couchdb::kv_exchange(db_url(), &revs_), opts_, target_, &stats_);
    return http::make_client(std::make_unique<DocExchange>(op_, db_url(), size_, batch_, keyspace_), opts_, target_,
                             &stats_);
  }

  Verdict verify(const Job&, const Counts& c) override {
    ok_ops_ = c.ok;
    if (mix_) return verify_mix();
    int64_t per_op = op_ == Op::Bulk ? batch_ : op_ == Op::Get ? 0 : 1;
    int64_t want = start_count_ + per_op * static_cast<int64_t>(c.ok + c.warmup_ok);
    int64_t got = 0;
    try {
      got = doc_count();
    } catch (const SetupError& e) {  // the server stopped answering: the check failed, it was not set-up
      return {true, false, "doc_count not read: " + std::string(e.what()) + "; expected " + std::to_string(want)};
    }
    return {true, got == want, "doc_count " + std::to_string(got) + ", expected " + std::to_string(want)};
  }

  Metrics metrics(double elapsed_s) override { return report(stats_, ok_ops_, elapsed_s); }
  std::optional<Metrics> take_metrics(double elapsed_s, const Counts& c) override {
    http::Stats step;
    stats_.take(step);
    return report(step, c.ok, elapsed_s);
  }

  Info describe() override { return info_; }
  std::string target() const override { return redact_url(db_url()); }
  Abilities abilities(const Job& job) override { return {.crash = crash_.get(), .contract = contract(job)}; }
  // The managed pouchdb-server's (LevelDB writes without sync); an external CouchDB's is its own.
  std::optional<Contract> contract(const Job&) const {
    if (info_.count("managed") == 0 || op_ == Op::Get || (mix_ && !mix_->mix.writes())) return std::nullopt;
    return Contract{ContractKind::OsBuffer, 0, "pouchdb-server on LevelDB: written before the reply, not synced"};
  }

  void teardown() override {
    if (created_ && !o_.keep) {
      try {
        http::fetch("DELETE", db_url(), "", opts_);
      } catch (const SetupError&) {  // the server is gone: nothing to drop
      }
    }
    created_ = false;
  }

 private:
  std::string db_url() const { return (base_.empty() ? std::string("http://127.0.0.1:?") : base_) + "/" + db_; }
  int64_t doc_count() {
    auto r = http::fetch("GET", db_url(), "", opts_);
    if (r.status != 200)
      throw SetupError("couchdb " + redact_url(db_url()) + ": GET answered HTTP " + std::to_string(r.status));
    std::string why;
    int64_t n = couchdb::doc_count_of(r.body, why);
    if (n < 0) throw SetupError("couchdb " + redact_url(db_url()) + ": GET answered HTTP 200, but " + why);
    return n;
  }
  Verdict verify_mix() {
    try {
      uint64_t count = static_cast<uint64_t>(doc_count());
      return verify_workload(*mix_, count, [&](uint64_t k, std::string& v) {
        auto r = http::fetch("GET", db_url() + "/" + couchdb::kv_id(k), "", opts_);
        std::string rev, why;
        if (r.status == 404) return false;
        if (r.status != 200 || !couchdb::value_of(r.body, v, rev, why)) v = "(HTTP " + std::to_string(r.status) + ")";
        return true;
      });
    } catch (const SetupError& e) {  // the server stopped answering: the check failed, it was not set-up
      return {true, false, std::string("not read back: ") + e.what()};
    }
  }
  // After a crash: every document of the database (_all_docs), by the seq it holds; its
  // payload must be the one inserted.
  std::vector<WriteState> check_inserts(std::span<const uint64_t> seqs) {
    http::Options o = opts_;
    o.max_body = std::max<int64_t>(o.max_body, static_cast<int64_t>((seqs.size() + 1000) * (size_ + 300)));
    auto r = http::fetch("GET", db_url() + "/_all_docs?include_docs=true", "", o);
    if (r.status != 200)
      throw SetupError("couchdb " + redact_url(db_url()) + ": _all_docs answered HTTP " + std::to_string(r.status));
    json all = json::parse(r.body, nullptr, false);
    const json* rows = field(all, "rows");
    if (!rows || !rows->is_array())
      throw SetupError("couchdb " + redact_url(db_url()) + ": _all_docs answered without rows");
    std::unordered_map<uint64_t, std::string> found;
    for (const json& row : *rows) {
      const json* doc = field(row, "doc");
      const json* seq = doc ? field(*doc, "seq") : nullptr;
      if (seq && seq->is_number_unsigned()) found[seq->get<uint64_t>()] = text(*doc, "payload");
    }
    std::vector<WriteState> out;
    for (uint64_t q : seqs) {
      auto it = found.find(q);
      if (it == found.end())
        out.push_back(WriteState::Missing);
      else
        out.push_back(it->second == payload_of(q, size_) ? WriteState::Present : WriteState::Corrupt);
    }
    return out;
  }

  // ab's figures of `st`, the documents `ok` bulk ops wrote per second, the 202s.
  Metrics report(const http::Stats& st, uint64_t ok, double elapsed_s) const {
    Metrics m = st.report(elapsed_s);
    if (op_ == Op::Bulk && elapsed_s > 0)
      m.push_back({"documents written", static_cast<double>(ok) * static_cast<double>(batch_) / elapsed_s, "docs/s",
                   Metric::Merge::Sum});
    if (auto it = st.statuses.find(202); it != st.statuses.end())
      m.push_back(count_metric("accepted, not yet durable (202)", it->second));
    return m;
  }

  void preload() {  // GET reads docs doc-0 .. doc-(keyspace-1), loaded here untimed
    // Batches of 200: big enough to load fast, small enough that a stop request waits for at
    // most one short request.
    constexpr uint64_t kBatch = 200;
    for (uint64_t base = 0; base < keyspace_; base += kBatch) {
      throw_if_stopped("the couchdb preload");
      json docs = json::array();
      for (uint64_t k = base; k < std::min(keyspace_, base + kBatch); ++k)
        docs.push_back({{"_id", doc_id(k)}, {"seq", k}, {"payload", payload_of(k, size_)}});
      auto r = http::fetch("POST", db_url() + "/_bulk_docs", json{{"docs", docs}}.dump(), opts_);
      if (r.status != 201 && r.status != 202)
        throw SetupError("couchdb " + redact_url(db_url()) + ": loading docs answered HTTP " +
                         std::to_string(r.status));
    }
    start_count_ = doc_count();
  }

  CouchOptions o_;
  Op op_;
  size_t size_;
  int64_t batch_;
  uint64_t keyspace_;
  std::string base_, db_;
  http::Options opts_;
  std::shared_ptr<http::Target> target_;  // the native engine's; null: libcurl
  http::Stats stats_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the server on it
  std::shared_ptr<Service> svc_;
  std::unique_ptr<Crashable> crash_;
  std::shared_ptr<const Workload> mix_;  // --mix: the shared workload, one document per key
  couchdb::RevTable revs_;
  Info info_;
  bool created_ = false;
  int64_t start_count_ = 0;
  uint64_t ok_ops_ = 0;
};

}  // namespace

AdapterSpec couchdb_adapter_spec() {
  using O = CouchOptions;
  return {
      .name = "couchdb",
      .summary = "CouchDB document inserts over HTTP (POST, PUT, _bulk_docs, GET); starts pouchdb-server unless --url",
      .ops = {{"insert", Op::Insert}, {"put", Op::Put}, {"bulk", Op::Bulk}, {"get", Op::Get}},
      .default_ops = "insert",
      .options = {opt(&O::url, {.name = "url",
                                .help = "a CouchDB: http://[user:pass@]host:port[/db], or env:VAR, file:PATH holding "
                                        "it (default: start pouchdb-server)",
                                .list = true,
                                .secret = true}),
                  opt(&O::doc_size, {.name = "doc-size", .help = "payload bytes per document", .max = 1 << 20}),
                  opt(&O::batch, {.name = "batch", .help = "documents per _bulk_docs request", .min = 1, .max = 10000}),
                  opt(&O::keepalive, {.name = "keepalive", .help = "keep connections open", .list = true}),
                  http::max_body_option<O>(),
                  opt(&O::create, {.name = "create", .help = "create a fresh database (false: use an existing one)"}),
                  opt(&O::keep, {.name = "keep", .help = "keep the database afterwards"}),
                  http::credentials_option<O>(),
                  opt(&O::server_binary, {.name = "server-binary",
                                          .help = "pouchdb-server for the managed server",
                                          .def = "pouchdb-server"}),
                  http::engine_option<O>()},
      .unavailable = conn::unavailable_unless<CouchOptions>(
          [](const CouchOptions& o) { return !o.url.empty(); }, pouchdb_binary,
          [](const CouchOptions&) -> std::string {
            return "pouchdb-server is not installed (scripts/setup installs it from npm), and no --url was given";
          }),
      .make = [](const Job& j, WorkloadPtr w) { return std::make_unique<CouchAdapter>(j, std::move(w)); },
      .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw},
      .families = {Family::KeyedStore},
      .target = TargetKind::External,
      .target_option = "url",
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"insert"},
      .connects_note = "connects inside its requests (its HTTP client opens a connection when a request needs one)"};
}

}  // namespace mw
