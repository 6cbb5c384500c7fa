// The checks of the result file's reader: each value read is checked against what it must be,
// and whatever is wrong is one SetupError "FILE: FIELD: what is wrong" (the field as a path:
// jobs[0].latency_ns.p99). The field tables (fields.h) read every value through these.
#pragma once
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/names.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

class Reader {
 public:
  using json = nlohmann::json;
  static constexpr double kMaxFigure = 1e15;       // counts, req/s, seconds, nanoseconds, bytes
  static constexpr int64_t kMaxClients = 1000000;  // clients, pipeline, cores

  explicit Reader(const std::string& label) : label_(printable(label)) {}
  const std::string& label() const { return label_; }

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw SetupError(label_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  // `key` of the object at `where`: "jobs[0]" and "rps" make "jobs[0].rps".
  static std::string at(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }
  static std::string item(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

  const json& need(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(where, std::string("missing \"") + key + "\"");
    return *it;
  }
  const json& object(const json& v, const std::string& where) const {
    if (!v.is_object()) fail(where, std::string("expected an object, got ") + v.type_name());
    return v;
  }
  const json& array(const json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, std::string("expected an array, got ") + v.type_name());
    return v;
  }
  std::string string(const json& v, const std::string& where) const {
    if (!v.is_string()) fail(where, std::string("expected a string, got ") + v.type_name());
    return v.get<std::string>();
  }
  bool boolean(const json& v, const std::string& where) const {
    if (!v.is_boolean()) fail(where, std::string("expected true or false, got ") + v.type_name());
    return v.get<bool>();
  }
  // One of an enum's names (names.h).
  template <class E>
  E choice(const json& v, const std::string& where, const Names<E>& names) const {
    const std::string text = string(v, where);
    std::optional<E> e = names.parse(text);
    if (!e) fail(where, "\"" + printable(text.substr(0, 40)) + "\" is not " + names.alternatives());
    return *e;
  }
  // A whole number in [lo, hi]. `where` is only read on failure (buckets pass a callable that
  // builds it then).
  template <class Where>
  int64_t whole(const json& v, const Where& where, int64_t lo, int64_t hi) const {
    auto range = [&] { return std::to_string(lo) + " to " + std::to_string(hi); };
    auto w = [&] { return std::string(where_text(where)); };
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo)
        fail(w(), std::to_string(u) + " is out of range (" + range() + ")");
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) {
      int64_t i = v.get<int64_t>();
      if (i < lo) fail(w(), std::to_string(i) + (i < 0 ? " is negative" : " is out of range") + " (" + range() + ")");
      if (i > hi) fail(w(), std::to_string(i) + " is out of range (" + range() + ")");
      return i;
    }
    fail(w(), std::string("expected a whole number (") + range() + "), got " +
                  (v.is_number() ? "a fraction or an overflow" : v.type_name()));
  }
  template <class Where>
  uint64_t count(const json& v, const Where& where) const {
    return static_cast<uint64_t>(whole(v, where, 0, static_cast<int64_t>(kMaxFigure)));
  }
  // A non-negative finite figure up to kMaxFigure.
  double figure(const json& v, const std::string& where) const {
    if (!v.is_number()) fail(where, std::string("expected a number, got ") + v.type_name());
    double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || d > kMaxFigure) fail(where, v.dump() + " is out of range (0 to 1e15)");
    return d;
  }
  // Any unsigned 64-bit word (the queue's checksums of ids).
  uint64_t word(const json& v, const std::string& where) const {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
    fail(where, std::string("expected a whole number of at least 0, got ") + v.type_name());
  }
  std::vector<std::string> strings(const json& v, const std::string& where) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < array(v, where).size(); ++i) out.push_back(string(v[i], item(where, i)));
    return out;
  }

  // Histograms rebuilt so far: a file that holds more than a run of mwbench does is refused.
  void count_histogram(const std::string& where, size_t most) const {
    if (++histograms_ > most)
      fail(where, "more than " + std::to_string(most) + " histograms: not a file mwbench wrote");
  }

 private:
  static const std::string& where_text(const std::string& w) { return w; }
  template <class F>
  static std::string where_text(const F& f) {
    return f();
  }

  std::string label_;
  mutable size_t histograms_ = 0;
};

}  // namespace mw
