#include "adapters/couchdb/kv.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace mw::couchdb {
namespace {

using nlohmann::json;

enum class Step : uint8_t { Get, Put, Delete };

// Conflicts in a row an update, rmw or delete answers by reading the current revision and trying
// again: with several writers of one key in flight, the revision read can be stale again at once.
constexpr int kRereads = 3;

struct OpState {
  Request r;
  Step step = Step::Get;
  std::string rev;
  int rereads = 0;    // conflicts answered by reading the current revision (at most kRereads)
  bool more = false;  // the op goes on with another request
};

std::string string_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// {"_rev":"...","v":"..."}: values are printable ASCII; '"' and '\' are escaped.
void put_doc(std::string& out, const Request& r, const std::string& rev) {
  out = "{";
  if (!rev.empty()) out += "\"_rev\":\"" + rev + "\",";
  out += "\"v\":\"";
  std::string v = make_value(r.key, r.version, r.value_size);
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += "\"}";
}

class KvExchange final : public http::Exchange {
 public:
  KvExchange(std::string db, RevTable* revs) : db_(std::move(db)), revs_(revs) {}

  void begin(const Request& r) override {
    if (ops_.size() > 4096)  // ops that failed mid-way (timeouts, lost connections) leave state behind
      std::erase_if(ops_, [&](const auto& e) { return e.first + 4096 < r.seq; });
    OpState& o = ops_[r.seq];
    o = OpState{};
    o.r = r;
    switch (r.op) {
      case KvOp::Insert: o.step = Step::Put; break;
      case KvOp::Update:
      case KvOp::Delete:
        o.rev = revs_->get(r.key);  // unknown: read the current revision first
        o.step = o.rev.empty() ? Step::Get : r.op == KvOp::Update ? Step::Put : Step::Delete;
        break;
      default: o.step = Step::Get;  // read; rmw reads first
    }
  }

  void request(uint64_t seq, std::string& method, std::string& url, std::string& body) override {
    OpState& o = ops_[seq];
    url = db_ + "/" + kv_id(o.r.key);
    switch (o.step) {
      case Step::Get: method = "GET"; break;
      case Step::Put:
        method = "PUT";
        put_doc(body, o.r, o.rev);
        break;
      case Step::Delete:
        method = "DELETE";
        url += "?rev=" + o.rev;
        break;
    }
  }

  bool again(uint64_t seq) override {
    auto it = ops_.find(seq);
    if (it == ops_.end()) return false;
    if (it->second.more) return true;
    ops_.erase(it);
    return false;
  }

  OpResult check(uint64_t seq, long status, const std::string& body, int64_t, std::string& detail) override {
    OpState& o = ops_[seq];
    o.more = false;
    const std::string id = kv_id(o.r.key);
    try {
      switch (o.step) {
        case Step::Get: return got(o, status, body, id, detail);
        case Step::Put:
        case Step::Delete: return wrote(o, status, body, id, detail);
      }
    } catch (const std::exception& e) {  // an answer nobody foresaw is a failure, not a crash
      detail = id + ": unexpected answer (" + http::printable(e.what(), 60) + ")";
    }
    return {Status::Error, 0, detail};
  }

 private:
  OpResult failure(long status, const std::string& body, const std::string& what, std::string& detail) {
    detail = what + ": HTTP " + std::to_string(status) + " " + http::printable(body, 80);
    return {status == 401 || status == 403 ? Status::Refused : Status::Error, 0, detail};
  }

  OpResult got(OpState& o, long status, const std::string& body, const std::string& id, std::string& detail) {
    if (status == 404) {
      detail = "GET " + id + ": no such document";
      return {Status::NotFound, 0, detail};
    }
    if (status != 200) return failure(status, body, "GET " + id, detail);
    std::string v, rev, why;
    if (!value_of(body, v, rev, why)) {
      detail = "GET " + id + ": " + why;
      return {Status::Error, 0, detail};
    }
    if (!rev.empty()) revs_->set(o.r.key, rev);
    switch (check_value(o.r.key, v.data(), v.size())) {
      case ValueCheck::Ok: break;
      case ValueCheck::OtherKey: detail = id + " holds another key's value"; return {Status::Mismatch, 0, detail};
      case ValueCheck::Corrupt: detail = id + " holds a corrupt value (checksum)"; return {Status::Mismatch, 0, detail};
    }
    if (o.r.op == KvOp::Read) return {Status::Ok, static_cast<uint32_t>(v.size()), {}};
    if (rev.empty()) {
      detail = "GET " + id + ": no _rev in the answer";
      return {Status::Error, 0, detail};
    }
    o.rev = rev;  // update, rmw, delete: the write follows with this revision
    o.step = o.r.op == KvOp::Delete ? Step::Delete : Step::Put;
    o.more = true;
    return {};
  }

  OpResult wrote(OpState& o, long status, const std::string& body, const std::string& id, std::string& detail) {
    const bool del = o.step == Step::Delete;
    const std::string what = (del ? "DELETE " : "PUT ") + id;
    if (status == 201 || status == 202 || (del && status == 200)) {
      json j = json::parse(body, nullptr, false);
      std::string rev = j.is_object() ? string_field(j, "rev") : "";
      auto ok = j.is_object() ? j.find("ok") : j.end();
      if (rev.empty() || !j.is_object() || ok == j.end() || !ok->is_boolean() || !ok->get<bool>()) {
        detail = what + ": HTTP " + std::to_string(status) + " without ok:true and rev: " + http::printable(body, 60);
        return {Status::Mismatch, 0, detail};
      }
      if (del)
        revs_->erase(o.r.key);
      else
        revs_->set(o.r.key, rev);
      return {Status::Ok, del ? 0u : o.r.value_size, {}};
    }
    if (status == 404 && o.r.op != KvOp::Insert) {
      detail = what + ": no such document";
      return {Status::NotFound, 0, detail};
    }
    if (status == 409 && o.r.op != KvOp::Insert && o.rereads < kRereads) {  // a stale revision: read the current one
      ++o.rereads;
      o.step = Step::Get;
      o.more = true;
      return {};
    }
    if (status == 409) {
      detail = what + (o.r.op == KvOp::Insert ? ": conflict, the document exists already"
                                              : ": conflict again after reading the current revision " +
                                                    std::to_string(kRereads) + " times");
      return {Status::Mismatch, 0, detail};
    }
    return failure(status, body, what, detail);
  }

  std::string db_;
  RevTable* revs_;
  std::unordered_map<uint64_t, OpState> ops_;
};

}  // namespace

std::string RevTable::get(uint64_t key) {
  std::lock_guard lk(mu_);
  auto it = revs_.find(key);
  return it == revs_.end() ? "" : it->second;
}

void RevTable::set(uint64_t key, std::string rev) {
  std::lock_guard lk(mu_);
  revs_[key] = std::move(rev);
}

void RevTable::erase(uint64_t key) {
  std::lock_guard lk(mu_);
  revs_.erase(key);
}

std::string kv_id(uint64_t key) {
  char b[32];
  std::snprintf(b, sizeof b, "k%020llu", static_cast<unsigned long long>(key));
  return b;
}

std::unique_ptr<http::Exchange> kv_exchange(const std::string& db_url, RevTable* revs) {
  return std::make_unique<KvExchange>(db_url, revs);
}

bool value_of(const std::string& body, std::string& value, std::string& rev, std::string& why) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) {
    why = "the answer is not a JSON object: " + http::printable(body, 60);
    return false;
  }
  auto v = j.find("v");
  if (v == j.end() || !v->is_string()) {
    why = "the document has no string v: " + http::printable(body, 60);
    return false;
  }
  value = v->get<std::string>();
  rev = string_field(j, "_rev");
  return true;
}

}  // namespace mw::couchdb
