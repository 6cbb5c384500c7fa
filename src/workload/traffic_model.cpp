#include "workload/traffic_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "util/parse.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr size_t kMinSlots = size_t{1} << 16;
constexpr size_t kMaxTtls = 4096;  // distinct TTLs counted; writes of others are counted apart

uint64_t ppm(uint64_t part, uint64_t total) {  // a weight in parts per million, at least 1
  return std::max<uint64_t>(
      1, static_cast<uint64_t>(std::llround(1e6 * static_cast<double>(part) / static_cast<double>(total))));
}

bool is_write(TraceOp op) { return kv_op_of(op) == KvOp::Update; }

}  // namespace

std::string TrafficModel::mix_text() const {
  std::string s;
  for (int i = 0; i < kKvOpCount; ++i) {
    const auto w = static_cast<uint64_t>(std::llround(mix[i] * 1e6));
    if (w > 0) s += (s.empty() ? "" : ",") + std::string(kKvOpNames[i]) + ":" + std::to_string(w);
  }
  return s;
}

ModelFit::ModelFit(uint64_t max_keys)
    : max_keys_(std::max<uint64_t>(max_keys, 16)),
      keys_(kMinSlots, 0),
      counts_(kMinSlots, 0),
      value_hist_(kMaxTraceValue + 1, 0),
      key_hist_(kMaxTraceValue + 1, 0) {}

void ModelFit::grow() {
  std::vector<uint64_t> keys(keys_.size() * 2, 0);
  std::vector<uint32_t> counts(keys.size(), 0);
  const size_t mask = keys.size() - 1;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (!keys_[i]) continue;
    size_t s = keys_[i] & mask;
    while (keys[s]) s = (s + 1) & mask;
    keys[s] = keys_[i], counts[s] = counts_[i];
  }
  keys_.swap(keys);
  counts_.swap(counts);
}

void ModelFit::halve() {
  ++level_;
  std::vector<std::pair<uint64_t, uint32_t>> kept;
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] && (keys_[i] >> (64 - level_)) == 0) kept.emplace_back(keys_[i], counts_[i]);
  std::fill(keys_.begin(), keys_.end(), 0);
  std::fill(counts_.begin(), counts_.end(), 0);
  const size_t mask = keys_.size() - 1;
  for (auto& [k, c] : kept) {
    size_t s = k & mask;
    while (keys_[s]) s = (s + 1) & mask;
    keys_[s] = k, counts_[s] = c;
  }
  used_ = kept.size();
}

void ModelFit::count_key(uint64_t key) {
  const uint64_t k = key ? key : 1;
  if (level_ > 0 && (k >> (64 - level_)) != 0) return;  // not in the sample
  const size_t mask = keys_.size() - 1;
  size_t s = k & mask;
  while (keys_[s] && keys_[s] != k) s = (s + 1) & mask;
  if (keys_[s]) {
    if (counts_[s] != UINT32_MAX) ++counts_[s];
    return;
  }
  keys_[s] = k, counts_[s] = 1;
  ++used_;
  while (used_ > max_keys_ && level_ < 63) halve();
  // Load at most 3/4; the table stops growing at the size that holds max_keys_ at that load.
  if (used_ * 4 > keys_.size() * 3 && keys_.size() * 3 < max_keys_ * 4) grow();
}

void ModelFit::add(const TraceRecord& r) {
  ++requests_;
  ++ops_[static_cast<int>(r.op)];
  count_key(r.key);
  if (r.value_size > 0) ++value_hist_[std::min(r.value_size, kMaxTraceValue)];
  if (r.key_size > 0) ++key_hist_[std::min(r.key_size, kMaxTraceValue)];
  if (is_write(r.op)) {
    ++ttl_writes_;
    if (auto it = ttls_.find(r.ttl); it != ttls_.end())
      ++it->second;
    else if (ttls_.size() < kMaxTtls)
      ttls_.emplace(r.ttl, 1);
    else
      ++ttl_dropped_;
  }
  const auto sec = static_cast<int64_t>(std::floor(std::min(r.t, 9e15)));
  if (!started_) started_ = true, second_ = sec, first_t_ = r.t;
  last_t_ = std::max(last_t_, r.t);
  whole_ &= r.t == std::floor(r.t);
  if (sec > second_) {  // the second closes; seconds without a request count as 0
    const auto c = static_cast<double>(in_second_);
    sum_ += c, sum_sq_ += c * c;
    seconds_ += 1 + static_cast<uint64_t>(sec - second_ - 1);
    second_ = sec, in_second_ = 0;
  }
  ++in_second_;
}

double fit_zipf_alpha(const std::vector<uint32_t>& counts, bool* capped) {
  if (capped) *capped = false;
  if (counts.size() < 2) return 0;
  double n = 0, s = 0;  // requests; sum of count * ln(rank)
  for (size_t i = 0; i < counts.size(); ++i) {
    n += counts[i];
    s += counts[i] * std::log(static_cast<double>(i + 1));
  }
  const uint64_t k = counts.size();
  // log L(a) = -a S - N ln zeta(K, a): concave in a (ln zeta is a log-sum-exp of lines in a).
  auto ll = [&](double a) { return -a * s - n * std::log(Zipfian::zeta(k, a)); };
  const double g = (std::sqrt(5.0) - 1) / 2;
  double lo = 0, hi = kMaxTheta, x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = ll(x1), f2 = ll(x2);
  for (int i = 0; i < 80 && hi - lo > 1e-9; ++i) {
    if (f1 < f2) {
      lo = x1, x1 = x2, f1 = f2;
      x2 = lo + g * (hi - lo), f2 = ll(x2);
    } else {
      hi = x2, x2 = x1, f2 = f1;
      x1 = hi - g * (hi - lo), f1 = ll(x1);
    }
  }
  const double a = (lo + hi) / 2;
  if (capped) *capped = a > kMaxTheta - 1e-6;
  return a;
}

std::string size_list(const std::vector<uint64_t>& hist, int buckets, double* mean) {
  uint64_t total = 0;
  double sum = 0;
  for (size_t s = 1; s < hist.size(); ++s) total += hist[s], sum += static_cast<double>(s) * hist[s];
  if (mean) *mean = total ? sum / static_cast<double>(total) : 0;
  if (total == 0) return "";
  std::string out;
  uint64_t cum = 0, in = 0, closed = 0;  // closed: quantiles passed
  double in_sum = 0;
  size_t lo = 0;
  for (size_t s = 1; s < hist.size(); ++s) {
    if (!hist[s]) continue;
    if (!in) lo = s;
    in += hist[s], cum += hist[s], in_sum += static_cast<double>(s) * hist[s];
    // Close the bucket at the next quantile (i/buckets of the requests) or at the end.
    const auto q = static_cast<uint64_t>(static_cast<unsigned __int128>(cum) * buckets / total);
    if (q > closed || cum == total) {
      const auto rep = std::clamp<size_t>(static_cast<size_t>(std::llround(in_sum / static_cast<double>(in))), lo, s);
      out += (out.empty() ? "" : ",") + std::to_string(rep) + ":" + std::to_string(ppm(in, total));
      closed = q, in = 0, in_sum = 0;
    }
  }
  return out;
}

TrafficModel ModelFit::finish(const std::string& name, const std::string& format) const {
  TrafficModel m;
  m.name = name;
  m.format = format;
  m.requests = requests_;
  m.ops = ops_;
  if (requests_ == 0) return m;
  std::array<uint64_t, kKvOpCount> kv{};
  for (int i = 0; i < kTraceOpCount; ++i) kv[static_cast<int>(kv_op_of(static_cast<TraceOp>(i)))] += ops_[i];
  for (int i = 0; i < kKvOpCount; ++i) m.mix[i] = static_cast<double>(kv[i]) / static_cast<double>(requests_);

  std::vector<uint32_t> counts;
  counts.reserve(used_);
  for (uint32_t c : counts_)
    if (c) counts.push_back(c);
  std::sort(counts.begin(), counts.end(), std::greater<>());
  m.distinct = counts.size();
  m.key_sample = std::ldexp(1.0, -level_);
  m.working_set = static_cast<uint64_t>(std::llround(static_cast<double>(m.distinct) / m.key_sample));
  m.one_hit = m.distinct
                  ? static_cast<double>(std::count(counts.begin(), counts.end(), 1u)) / static_cast<double>(m.distinct)
                  : 0;
  // The keys seen at least kR2MinCount times: below, a count is mostly noise, and where the trace
  // saw a small part of the key space the tail's ranks are not its keys' (a 300k-request trace over
  // 10^6 keys at alpha 0.6 fits 0.45 over every rank, 0.57 over these).
  m.r2_ranks = static_cast<uint64_t>(std::lower_bound(counts.begin(), counts.end(), kR2MinCount, std::greater<>()) -
                                     counts.begin());
  m.fit_ranks = m.r2_ranks >= kMinFitRanks ? m.r2_ranks : counts.size();
  m.alpha = fit_zipf_alpha(std::vector<uint32_t>(counts.begin(), counts.begin() + static_cast<ptrdiff_t>(m.fit_ranks)),
                           &m.alpha_capped);
  // Fit quality: log count against log rank at log-spaced ranks (each decade weighs alike).
  if (m.r2_ranks >= 3) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0, np = 0;
    for (uint64_t r = 1; r <= m.r2_ranks; r = std::max(r + 1, static_cast<uint64_t>(static_cast<double>(r) * 1.05))) {
      const double x = std::log(static_cast<double>(r)), y = std::log(static_cast<double>(counts[r - 1]));
      sx += x, sy += y, sxx += x * x, sxy += x * y, syy += y * y, ++np;
    }
    const double vx = sxx - sx * sx / np, vy = syy - sy * sy / np, cxy = sxy - sx * sy / np;
    m.alpha_ls = vx > 0 ? -cxy / vx : 0;
    m.r2 = vx > 0 && vy > 0 ? std::clamp(cxy * cxy / (vx * vy), 0.0, 1.0) : 0;
  }

  m.value_size = size_list(value_hist_, kModelSizeBuckets, &m.value_mean);
  m.key_size = size_list(key_hist_, kModelSizeBuckets, &m.key_mean);

  const auto last = static_cast<double>(in_second_);
  const double sum = sum_ + last, sum_sq = sum_sq_ + last * last;
  m.seconds = seconds_ + 1;
  const double n = static_cast<double>(m.seconds);
  // Whole-second timestamps (Twitter's): each second counts whole. Finer ones: from the first
  // request to the last, when they are apart.
  const double span = last_t_ - first_t_;
  m.rate = whole_ || !(span > 0) ? static_cast<double>(requests_) / n : static_cast<double>(requests_ - 1) / span;
  const double var = std::max(0.0, sum_sq / n - (sum / n) * (sum / n));
  m.dispersion = m.seconds >= 2 && m.rate > 0 ? var / m.rate : 0;

  if (ttl_writes_) {
    std::vector<std::pair<uint32_t, uint64_t>> t(ttls_.begin(), ttls_.end());
    std::sort(t.begin(), t.end(),
              [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    if (t.size() > static_cast<size_t>(kModelTtls)) t.resize(kModelTtls);
    std::sort(t.begin(), t.end());
    uint64_t listed = 0;
    for (auto& [ttl, c] : t) {
      m.ttl += (m.ttl.empty() ? "" : ",") + std::to_string(ttl) + ":" + std::to_string(ppm(c, ttl_writes_));
      listed += c;
    }
    m.ttl_other = static_cast<double>(ttl_writes_ - listed) / static_cast<double>(ttl_writes_);
  }
  return m;
}

namespace {

using json = nlohmann::ordered_json;

double finite(double v) { return std::isfinite(v) ? v : 0; }

}  // namespace

std::string model_json(const TrafficModel& m) {
  json j;
  j["mwbench_model"] = kModelVersion;
  j["name"] = m.name;
  j["trace"] = {{"format", m.format}, {"requests", m.requests}, {"skipped_lines", m.skipped}};
  json ops = json::object();
  for (int i = 0; i < kTraceOpCount; ++i)
    if (m.ops[i]) ops[std::string(trace_op_name(static_cast<TraceOp>(i)))] = m.ops[i];
  j["ops"] = ops;
  json mix = json::object();
  for (int i = 0; i < kKvOpCount; ++i)
    if (m.mix[i] > 0) mix[std::string(kKvOpNames[i])] = finite(m.mix[i]);
  j["mix"] = mix;
  j["keys"] = {{"alpha", finite(m.alpha)},
               {"fit", "mle-ranks"},
               {"alpha_capped", m.alpha_capped},
               {"fit_ranks", m.fit_ranks},
               {"r2", finite(m.r2)},
               {"r2_ranks", m.r2_ranks},
               {"alpha_ls", finite(m.alpha_ls)},
               {"distinct", m.distinct},
               {"sample", finite(m.key_sample)},
               {"working_set", m.working_set},
               {"one_hit_wonders", finite(m.one_hit)}};
  j["value_size"] = m.value_size;
  j["value_size_mean"] = finite(m.value_mean);
  j["key_size"] = m.key_size;
  j["key_size_mean"] = finite(m.key_mean);
  j["rate"] = {{"mean", finite(m.rate)}, {"dispersion", finite(m.dispersion)}, {"seconds", m.seconds}};
  j["ttl"] = m.ttl;
  j["ttl_other"] = finite(m.ttl_other);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::vector<std::string> model_summary(const TrafficModel& m) {
  std::vector<std::string> out;
  std::string ops;
  for (int i = 0; i < kTraceOpCount; ++i)
    if (m.ops[i])
      ops += (ops.empty() ? "" : " ") + std::string(trace_op_name(static_cast<TraceOp>(i))) + ":" +
             fmt(100.0 * static_cast<double>(m.ops[i]) / static_cast<double>(m.requests), 2) + "%";
  out.push_back("model of " + printable(m.name) + " (" + m.format + "): " + grouped(static_cast<double>(m.requests)) +
                " requests" + (m.skipped ? ", " + grouped(static_cast<double>(m.skipped)) + " bad lines skipped" : ""));
  out.push_back("ops:        " + ops);
  out.push_back("mix:        " + m.mix_text() + " (parts per million)");
  const std::string seen = std::to_string(kR2MinCount) + "+ times";
  out.push_back("keys:       zipf alpha " + fmt(m.alpha, 3) + (m.alpha_capped ? " (the search's cap)" : "") +
                " by maximum likelihood over ranks 1.." + grouped(static_cast<double>(m.fit_ranks)) +
                (m.fit_ranks == m.r2_ranks ? " (the keys seen " + seen + ")" : " (every key)") + "; fit R^2 " +
                (m.r2_ranks >= 3
                     ? fmt(m.r2, 3) + " (log count vs log rank over the " + grouped(static_cast<double>(m.r2_ranks)) +
                           " keys seen " + seen + ", slope " + fmt(m.alpha_ls, 3) + ")"
                     : "n/a (fewer than 3 keys seen " + seen + ")"));
  std::string ws = "working set " + grouped(static_cast<double>(m.working_set)) + " keys, one-hit wonders " +
                   fmt(100 * m.one_hit, 1) + "%";
  if (m.key_sample < 1)
    ws += "; keys sampled: the fit used the 1/" + grouped(std::round(1 / m.key_sample)) + " of the keys kept by " +
          "their hash (" + grouped(static_cast<double>(m.distinct)) + " keys) when the distinct keys passed the " +
          "table's cap; the working set is estimated from the sample";
  out.push_back("            " + ws);
  out.push_back("values:     " + (m.value_size.empty() ? std::string("none") : m.value_size) + " (mean " +
                fmt(m.value_mean, 1) + " B)");
  out.push_back("key sizes:  " + (m.key_size.empty() ? std::string("none") : m.key_size) + " (mean " +
                fmt(m.key_mean, 1) + " B)");
  out.push_back("rate:       " + fmt(m.rate, 1) + " req/s over " + grouped(static_cast<double>(m.seconds)) +
                " s; index of dispersion of the per-second counts " +
                (m.seconds >= 2 ? fmt(m.dispersion, 2) : std::string("n/a (under 2 s)")));
  out.push_back("TTLs:       " + (m.ttl.empty() ? std::string("no writes") : m.ttl) +
                (m.ttl_other > 0 ? " (others: " + fmt(100 * m.ttl_other, 2) + "% of the writes)" : ""));
  return out;
}

// ---- the model file, read back: untrusted ----

namespace {

class ModelReader {
 public:
  explicit ModelReader(std::string label) : label_(std::move(label)) {}
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw SetupError(label_ + ": " + (field.empty() ? "" : field + ": ") + what);
  }
  std::string shown(const json& v) const {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return printable(s);
  }
  // An object's fields must be among `known`.
  void fields(const json& o, const std::string& where, std::initializer_list<const char*> known) const {
    if (!o.is_object()) fail(where, "expected an object, got " + shown(o));
    for (auto& item : o.items()) {
      const std::string& k = item.key();  // not a binding: clang 14 cannot capture one in a lambda
      if (std::none_of(known.begin(), known.end(), [&](const char* n) { return k == n; })) {
        std::string names;
        for (const char* n : known) names += (names.empty() ? "" : ", ") + std::string(n);
        fail(where, "unknown field '" + printable(k.substr(0, 40)) + "'; expected " + names);
      }
    }
  }
  double number(const json& o, const char* key, const std::string& where, double lo, double hi, bool required,
                double def = 0) const {
    if (!o.contains(key)) {
      if (required) fail(where, "expected a field '" + std::string(key) + "'");
      return def;
    }
    const json& v = o.at(key);
    const std::string f = where.empty() ? key : where + "." + key;
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
      fail(f, "expected a number from " + fmt_g(lo) + " to " + fmt_g(hi) + ", got " + shown(v));
    return v.get<double>();
  }
  uint64_t count(const json& o, const char* key, const std::string& where, uint64_t lo, uint64_t hi,
                 bool required) const {
    if (!o.contains(key)) {
      if (required) fail(where, "expected a field '" + std::string(key) + "'");
      return 0;
    }
    const json& v = o.at(key);
    const std::string f = where.empty() ? key : where + "." + key;
    if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi)
      fail(f, "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + shown(v));
    return v.get<uint64_t>();
  }
  std::string text(const json& o, const char* key, const std::string& where, size_t max, bool required) const {
    if (!o.contains(key)) {
      if (required) fail(where, "expected a field '" + std::string(key) + "'");
      return "";
    }
    const json& v = o.at(key);
    const std::string f = where.empty() ? key : where + "." + key;
    if (!v.is_string() || v.get_ref<const std::string&>().size() > max)
      fail(f, "expected a string of at most " + std::to_string(max) + " bytes, got " + shown(v));
    return v.get<std::string>();
  }
  bool flag(const json& o, const char* key, const std::string& where) const {
    if (!o.contains(key)) return false;
    if (!o.at(key).is_boolean()) fail(where + "." + key, "expected true or false, got " + shown(o.at(key)));
    return o.at(key).get<bool>();
  }

 private:
  std::string label_;
};

// A SIZE:WEIGHT list as the model writes it (at most `max_items` entries); "" allowed.
void check_list(const ModelReader& rd, const std::string& field, const std::string& v, uint64_t min_size,
                uint64_t max_size, size_t max_items) {
  if (v.empty()) return;
  const std::string form = field == "ttl" ? "TTL:WEIGHT" : "SIZE:WEIGHT";
  const auto items = split_list(v);
  if (items.size() > max_items)
    rd.fail(field, "expected at most " + std::to_string(max_items) + " " + form + " entries, got " +
                       std::to_string(items.size()));
  for (const std::string& item : items) {
    const size_t colon = item.find(':');
    uint64_t a = 0, w = 0;
    auto num = [](std::string_view s, uint64_t& out) {
      if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
      out = std::stoull(std::string(s));
      return true;
    };
    if (colon == std::string::npos || !num(std::string_view(item).substr(0, colon), a) ||
        !num(std::string_view(item).substr(colon + 1), w) || a < min_size || a > max_size || w < 1 || w > 1000000)
      rd.fail(field, "expected " + form + " entries (" + (field == "ttl" ? "TTL " : "size ") +
                         std::to_string(min_size) + " to " + std::to_string(max_size) +
                         ", weight 1 to 1000000), got '" + printable(item.substr(0, 40)) + "'");
  }
}

void read_trace(const ModelReader& rd, const json& t, TrafficModel& m) {
  rd.fields(t, "trace", {"format", "requests", "skipped_lines"});
  m.format = rd.text(t, "format", "trace", 16, false);
  if (!m.format.empty() && m.format != "twitter" && m.format != "monitor" && m.format != "csv")
    rd.fail("trace.format", "expected twitter, monitor or csv, got " + rd.shown(t["format"]));
  m.requests = rd.count(t, "requests", "trace", 0, uint64_t{1} << 60, false);
  m.skipped = rd.count(t, "skipped_lines", "trace", 0, uint64_t{1} << 60, false);
}

void read_trace_ops(const ModelReader& rd, const json& o, TrafficModel& m) {
  if (!o.is_object()) rd.fail("ops", "expected an object of trace op counts, got " + rd.shown(o));
  for (auto& [k, v] : o.items()) {
    (void)v;
    int op = -1;
    for (int i = 0; i < kTraceOpCount; ++i)
      if (trace_op_name(static_cast<TraceOp>(i)) == k) op = i;
    if (op < 0)
      rd.fail("ops", "unknown op '" + printable(k.substr(0, 40)) +
                         "'; expected get, gets, set, add, replace, cas, append, prepend, delete, incr or decr");
    m.ops[op] = rd.count(o, k.c_str(), "ops", 0, uint64_t{1} << 60, true);
  }
}

void read_mix(const ModelReader& rd, const json& o, TrafficModel& m) {
  if (!o.is_object()) rd.fail("mix", "expected an object of op shares, e.g. {\"read\": 0.9}, got " + rd.shown(o));
  double sum = 0;
  for (auto& [k, v] : o.items()) {
    (void)v;
    int op = -1;
    for (int i = 0; i < kKvOpCount; ++i)
      if (kKvOpNames[i] == k) op = i;
    if (op < 0)
      rd.fail("mix",
              "unknown op '" + printable(k.substr(0, 40)) + "'; expected read, update, insert, delete, rmw or scan");
    m.mix[op] = rd.number(o, k.c_str(), "mix", 0, 1, true);
    sum += m.mix[op];
  }
  if (!(sum > 0.999 && sum < 1.001)) rd.fail("mix", "expected shares that add up to 1, got a sum of " + fmt_g(sum));
  if (m.mix_text().empty()) rd.fail("mix", "expected at least one op with a share of 1e-6 or more");
}

void read_keys(const ModelReader& rd, const json& k, TrafficModel& m) {
  rd.fields(k, "keys",
            {"alpha", "fit", "alpha_capped", "fit_ranks", "r2", "r2_ranks", "alpha_ls", "distinct", "sample",
             "working_set", "one_hit_wonders"});
  m.alpha = rd.number(k, "alpha", "keys", 0, kMaxTheta, true);
  if (k.contains("fit") && k["fit"] != "mle-ranks")
    rd.fail("keys.fit", "expected \"mle-ranks\", got " + rd.shown(k["fit"]));
  m.alpha_capped = rd.flag(k, "alpha_capped", "keys");
  m.fit_ranks = rd.count(k, "fit_ranks", "keys", 0, uint64_t{1} << 60, false);
  m.r2 = rd.number(k, "r2", "keys", 0, 1, false);
  m.r2_ranks = rd.count(k, "r2_ranks", "keys", 0, uint64_t{1} << 60, false);
  m.alpha_ls = rd.number(k, "alpha_ls", "keys", -1000, 1000, false);
  m.distinct = rd.count(k, "distinct", "keys", 0, uint64_t{1} << 60, false);
  m.key_sample = rd.number(k, "sample", "keys", 1e-19, 1, false, 1);
  m.working_set = rd.count(k, "working_set", "keys", 1, uint64_t{1} << 60, true);
  m.one_hit = rd.number(k, "one_hit_wonders", "keys", 0, 1, false);
}

// The sizes (value and key: a SIZE:WEIGHT list and a mean), the rate and the TTLs.
void read_sizes_rate_ttl(const ModelReader& rd, const json& doc, TrafficModel& m) {
  m.value_size = rd.text(doc, "value_size", "", 1024, false);
  check_list(rd, "value_size", m.value_size, 1, kMaxTraceValue, kModelSizeBuckets);
  if (!m.value_size.empty()) {
    try {
      SizeDist::parse(m.value_size, "value_size");
    } catch (const SetupError& e) {
      rd.fail("", e.what());  // "value_size: ... expected ..."
    }
  }
  m.value_mean = rd.number(doc, "value_size_mean", "", 0, kMaxTraceValue, false);
  m.key_size = rd.text(doc, "key_size", "", 1024, false);
  check_list(rd, "key_size", m.key_size, 1, kMaxTraceValue, kModelSizeBuckets);
  m.key_mean = rd.number(doc, "key_size_mean", "", 0, kMaxTraceValue, false);
  if (doc.contains("rate")) {
    const json& r = doc["rate"];
    rd.fields(r, "rate", {"mean", "dispersion", "seconds"});
    m.rate = rd.number(r, "mean", "rate", 0, 1e9, false);
    m.dispersion = rd.number(r, "dispersion", "rate", 0, 1e15, false);
    m.seconds = rd.count(r, "seconds", "rate", 0, uint64_t{1} << 60, false);
  }
  m.ttl = rd.text(doc, "ttl", "", 1024, false);
  check_list(rd, "ttl", m.ttl, 0, UINT32_MAX, kModelTtls);
  m.ttl_other = rd.number(doc, "ttl_other", "", 0, 1, false);
}

}  // namespace

TrafficModel parse_model(std::string_view text, const std::string& label) {
  const ModelReader rd(label);
  if (text.size() > kMaxModelBytes)
    rd.fail("", "larger than 1 MiB: not a model file (mwbench model --json writes one)");
  if (json_depth(text) > 4)
    rd.fail("", "nested deeper than 4 levels: not a model file (mwbench model --json writes one)");
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    rd.fail("", "expected a model file (a JSON object that mwbench model --json writes)");
  rd.fields(doc, "",
            {"mwbench_model", "name", "trace", "ops", "mix", "keys", "value_size", "value_size_mean", "key_size",
             "key_size_mean", "rate", "ttl", "ttl_other"});
  if (!doc.contains("mwbench_model")) rd.fail("", "expected a field 'mwbench_model' (not a model file)");
  if (doc["mwbench_model"] != kModelVersion)
    rd.fail("mwbench_model", "expected " + std::to_string(kModelVersion) +
                                 " (the model file version this mwbench reads), got " + rd.shown(doc["mwbench_model"]));
  TrafficModel m;
  m.name = rd.text(doc, "name", "", 200, true);
  if (m.name.empty()) rd.fail("name", "expected a name, got an empty one");
  if (doc.contains("trace")) read_trace(rd, doc["trace"], m);
  if (doc.contains("ops")) read_trace_ops(rd, doc["ops"], m);
  if (!doc.contains("mix")) rd.fail("", "expected a field 'mix' (the op mix: {\"read\": 0.9, \"update\": 0.1})");
  read_mix(rd, doc["mix"], m);
  if (!doc.contains("keys")) rd.fail("", "expected a field 'keys' (alpha, working_set)");
  read_keys(rd, doc["keys"], m);
  read_sizes_rate_ttl(rd, doc, m);
  return m;
}

TrafficModel load_model(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw SetupError(path + ": cannot read the model file: " + std::strerror(errno));
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw SetupError(path + ": cannot read the model file: " + std::strerror(e));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxModelBytes) break;
  }
  ::close(fd);
  return parse_model(text, path);
}

}  // namespace mw
