// `mwbench model` and --workload-model (issue 43): a trace drawn from a known workload is fitted
// back to it, and the model, run, draws what the trace had.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include "adapters/registry.h"
#include "config/config.h"
#include "config/workload_spec.h"
#include "core/runner.h"
#include "tests/helpers.h"
#include "util/status.h"
#include "workload/trace.h"
#include "workload/traffic_model.h"

using namespace mw;

namespace {

// A Twitter-format trace of `n` requests over `seconds` seconds: keys zipfian with `alpha` over
// `keyspace` keys (mwbench's exact sampler, ranks scrambled), ops get 0.70, set 0.20, delete
// 0.05, incr 0.05; value sizes 100:50,1000:30,4000:20; sets' TTL 3600 (80%) or none.
struct DrawnTrace {
  std::string path;
  std::array<uint64_t, kKvOpCount> kv{};
  std::map<uint32_t, uint64_t> sizes;  // value sizes of every request
  std::unordered_map<uint64_t, uint64_t> keys;
  uint64_t n = 0;
};

DrawnTrace draw_trace(const std::string& dir, double alpha, uint64_t keyspace, uint64_t n, int seconds, uint64_t seed) {
  DrawnTrace d;
  d.path = dir + "/trace-" + std::to_string(seed) + ".csv";
  d.n = n;
  KeySpec ks;
  ks.dist = KeyDist::Zipfian;
  ks.keyspace = keyspace;
  ks.theta = alpha;
  KeyChooser keys(ks, seed);
  const SizeDist sizes = SizeDist::parse("100:50,1000:30,4000:20");
  Rng rng(seed);
  std::ofstream out(d.path);
  std::string line;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t k = keys.next(rng, i, keyspace);
    const double u = rng.unit();
    const char* op = u < 0.70 ? "get" : u < 0.90 ? "set" : u < 0.95 ? "delete" : "incr";
    const KvOp kv = u < 0.70 ? KvOp::Read : u < 0.90 ? KvOp::Update : u < 0.95 ? KvOp::Delete : KvOp::Rmw;
    const uint32_t size = sizes.next(rng);
    const int ttl = kv == KvOp::Update && rng.unit() < 0.8 ? 3600 : 0;
    const uint64_t t = 1000 + i * static_cast<uint64_t>(seconds) / n;
    line = std::to_string(t) + ",key" + std::to_string(k) + "," + std::to_string(3 + decimal_digits(k)) + "," +
           std::to_string(size) + ",1," + op + "," + std::to_string(ttl) + "\n";
    out << line;
    ++d.kv[static_cast<int>(kv)];
    ++d.sizes[size];
    ++d.keys[k];
  }
  return d;
}

TrafficModel fit_file(const std::string& path, uint64_t max_keys = kMaxModelKeys) {
  TraceReader reader(path, nullptr, false);
  ModelFit fit(max_keys);
  TraceRecord r;
  while (reader.next(r)) fit.add(r);
  return fit.finish("drawn", trace_format_name(reader.format()));
}

// Pearson's two-sample chi-square statistic of counts a and b over the same bins.
double chi2_two_samples(const std::vector<double>& a, const std::vector<double>& b) {
  double na = 0, nb = 0, x = 0;
  for (size_t i = 0; i < a.size(); ++i) na += a[i], nb += b[i];
  for (size_t i = 0; i < a.size(); ++i) {
    const double t = a[i] + b[i];
    if (t == 0) continue;
    const double ea = t * na / (na + nb), eb = t * nb / (na + nb);
    x += (a[i] - ea) * (a[i] - ea) / ea + (b[i] - eb) * (b[i] - eb) / eb;
  }
  return x;
}

// Chi-square's critical values at a significance of 0.001, by degrees of freedom.
double chi2_critical_001(size_t df) {
  static const double v[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52};
  REQUIRE(df >= 1);
  REQUIRE(df <= 5);
  return v[df];
}

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("model: a 300k-request trace drawn with a known alpha and op mix is fitted back to them") {
  test::TempDir dir;
  for (double alpha : {0.9, 1.2}) {
    CAPTURE(alpha);
    const DrawnTrace d = draw_trace(dir.path, alpha, 10000, 300000, 100, alpha == 0.9 ? 7 : 8);
    const TrafficModel m = fit_file(d.path);
    CHECK(m.requests == 300000);
    CHECK(m.format == "twitter");
    MESSAGE("alpha ", alpha, ": fitted ", m.alpha, ", least squares ", m.alpha_ls, ", R^2 ", m.r2);
    CHECK(std::abs(m.alpha - alpha) < 0.07);
    CHECK_FALSE(m.alpha_capped);
    CHECK(m.r2 > 0.95);  // a power law fits
    CHECK(std::abs(m.alpha_ls - alpha) < 0.15);
    for (int i = 0; i < kKvOpCount; ++i) {
      CAPTURE(kKvOpNames[i]);
      CHECK(std::abs(m.mix[i] - static_cast<double>(d.kv[i]) / 300000) < 1e-12);  // counted, not estimated
      const double want = std::array{0.70, 0.20, 0.0, 0.05, 0.05, 0.0}[i];
      CHECK(std::abs(m.mix[i] - want) < 0.01);
    }
    CHECK(m.ops[static_cast<int>(TraceOp::Get)] == d.kv[static_cast<int>(KvOp::Read)]);
    CHECK(m.ops[static_cast<int>(TraceOp::Incr)] == d.kv[static_cast<int>(KvOp::Rmw)]);
    // The working set and the one-hit wonders as the test counts them.
    CHECK(m.working_set == d.keys.size());
    CHECK(m.key_sample == 1);
    uint64_t once = 0;
    for (auto& [k, c] : d.keys) once += c == 1;
    CHECK(m.one_hit == doctest::Approx(static_cast<double>(once) / static_cast<double>(d.keys.size())));
    // Three sizes, each more than 1/16 of the requests: a bucket each, weighed as the trace has them.
    CHECK(m.value_size == "100:" + std::to_string(std::llround(d.sizes.at(100) / 0.3)) +
                              ",1000:" + std::to_string(std::llround(d.sizes.at(1000) / 0.3)) +
                              ",4000:" + std::to_string(std::llround(d.sizes.at(4000) / 0.3)));
    CHECK(m.rate == doctest::Approx(3000));  // 300k requests over 100 whole seconds
    CHECK(m.seconds == 100);
    CHECK(m.dispersion < 0.01);  // an even 3,000 a second
    CHECK(m.ttl.rfind("0:", 0) == 0);
    CHECK(m.ttl.find(",3600:") != std::string::npos);
    CHECK(m.ttl_other == 0);
  }
}

TEST_CASE("model: past --max-keys the keys are sampled by hash; alpha and the working set still come out") {
  test::TempDir dir;
  const DrawnTrace d = draw_trace(dir.path, 0.9, 10000, 300000, 100, 11);
  const TrafficModel m = fit_file(d.path, 2000);
  CHECK(m.key_sample < 1);
  CHECK(m.distinct <= 2000);
  CHECK(std::abs(m.alpha - 0.9) < 0.1);
  CHECK(std::abs(static_cast<double>(m.working_set) / static_cast<double>(d.keys.size()) - 1) < 0.15);
  bool said = false;
  for (auto& l : model_summary(m)) said |= l.find("keys sampled") != std::string::npos;
  CHECK(said);
}

TEST_CASE("model: size lists are quantile buckets, each the mean of its range") {
  std::vector<uint64_t> h(2001, 0);
  for (size_t s = 1; s <= 2000; ++s) h[s] = 1;  // uniform 1..2000
  double mean = 0;
  const std::string l = size_list(h, 16, &mean);
  CHECK(mean == doctest::Approx(1000.5));
  const SizeDist d = SizeDist::parse(l);
  CHECK(d.sizes.size() == 16);
  CHECK(d.sizes.front() == 63);  // sizes 1..125: mean 63
  CHECK(std::abs(d.mean() - 1000.5) < 2);
  CHECK(size_list(std::vector<uint64_t>(10, 0), 16).empty());
  std::vector<uint64_t> one(100, 0);
  one[42] = 5;
  CHECK(size_list(one, 16) == "42:1000000");
}

TEST_CASE("model: alpha by maximum likelihood of exact power-law counts") {
  for (double a : {0.0, 0.5, 1.0, 1.7}) {
    std::vector<uint32_t> c;
    for (int r = 1; r <= 5000; ++r) c.push_back(static_cast<uint32_t>(std::llround(1e6 * std::pow(r, -a))));
    CAPTURE(a);
    CHECK(fit_zipf_alpha(c) == doctest::Approx(a).epsilon(0.01));
  }
  bool capped = false;
  CHECK(fit_zipf_alpha({1000000, 1, 1}, &capped) == doctest::Approx(kMaxTheta).epsilon(1e-6));
  CHECK(capped);
  CHECK(fit_zipf_alpha({5}) == 0);
}

TEST_CASE("--workload-model: the model replayed draws the trace's op mix and value sizes (chi-square, 0.001)") {
  test::TempDir dir;
  const DrawnTrace d = draw_trace(dir.path, 0.9, 10000, 300000, 100, 21);
  const TrafficModel m = fit_file(d.path);
  const std::string file = write(dir.path + "/m.json", model_json(m));
  const TrafficModel back = parse_model(model_json(m), "m.json");
  CHECK(back.mix_text() == m.mix_text());
  CHECK(back.alpha == m.alpha);
  CHECK(back.value_size == m.value_size);
  CHECK(back.working_set == m.working_set);
  CHECK(back.rate == m.rate);
  CHECK(back.ttl == m.ttl);

  Job j = test::make_job("null", "mix", 200000, 2);
  j.opts = {{"workload-model", file}};
  auto w = workload_of(j, *find_adapter("null"));
  REQUIRE(w);
  CHECK(w->mix.text() == m.mix_text());
  CHECK(w->keys.spec().dist == KeyDist::Zipfian);
  CHECK(w->keys.spec().theta == doctest::Approx(m.alpha));
  CHECK(w->keys.spec().keyspace == m.working_set);
  CHECK(w->sizes.text() == SizeDist::parse(m.value_size).text());
  CHECK(w->text().find("from model drawn (" + file) != std::string::npos);

  // The requests the model's workload draws against the trace's: op mix and value sizes of the
  // writes (the trace's sizes are those of every request, drawn independently of the op).
  const uint64_t N = 300000;
  RequestGen gen(*w, 0, 1);
  std::array<double, kKvOpCount> ops{};
  std::map<uint32_t, double> sizes;
  for (uint64_t i = 0; i < N; ++i) {
    const Request q = gen.next(i);
    ++ops[static_cast<int>(q.op)];
    if (q.op == KvOp::Update || q.op == KvOp::Rmw) ++sizes[q.value_size];
  }
  std::vector<double> a, b;
  for (int i : {0, 1, 3, 4}) a.push_back(static_cast<double>(d.kv[i])), b.push_back(ops[i]);
  CHECK(ops[static_cast<int>(KvOp::Insert)] == 0);
  CHECK(ops[static_cast<int>(KvOp::Scan)] == 0);
  const double x_ops = chi2_two_samples(a, b);
  CAPTURE(x_ops);
  CHECK(x_ops < chi2_critical_001(3));
  a.clear(), b.clear();
  for (auto& [s, c] : d.sizes) a.push_back(static_cast<double>(c)), b.push_back(sizes[s]);
  CHECK(sizes.size() == d.sizes.size());  // no size the trace did not have
  const double x_sizes = chi2_two_samples(a, b);
  CAPTURE(x_sizes);
  CHECK(x_sizes < chi2_critical_001(2));

  SUBCASE("the run on the null adapter says the model's name") {
    j.n = 20000;
    JobResult r = run_one(j);
    CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK(r.workload.find("from model drawn") != std::string::npos);
  }
  SUBCASE("on a store with expiry the model's TTLs go with the writes; elsewhere they are left out, and said") {
    CHECK_FALSE(w->expires());  // null keeps nothing, so nothing expires
    CHECK(w->text().find("its TTL not applied: null's keys do not expire") != std::string::npos);
    AdapterSpec expiring = *find_adapter("null");
    expiring.expiry = true;
    auto e = workload_of(j, expiring);
    REQUIRE(e->expires());
    RequestGen gen(*e, 0, 1);
    uint64_t writes = 0, hour = 0;
    for (uint64_t i = 0; i < 200000; ++i) {
      const Request r = gen.next(i);
      if (r.op != KvOp::Update) continue;
      ++writes;
      CHECK((r.ttl == 0 || r.ttl == 3600));
      hour += r.ttl == 3600;
    }
    REQUIRE(writes > 10000);
    CHECK(std::abs(static_cast<double>(hour) / writes - 0.8) < 0.02);  // the trace gave 80% of its sets 3600 s
  }
  SUBCASE("flags beside it win") {
    j.opts["mix"] = "read:1";
    j.opts["zipf-theta"] = "0.5";
    j.opts["value-size"] = "10";
    j.opts["keyspace"] = "77";
    auto own = workload_of(j, *find_adapter("null"));
    CHECK(own->mix.text() == "read:1");
    CHECK(own->keys.spec().theta == doctest::Approx(0.5));
    CHECK(own->sizes.text() == "10");
    CHECK(own->keys.spec().keyspace == 77);
  }
  SUBCASE("--rate model takes the model's mean rate; without a model it is refused") {
    auto jobs =
        expand_jobs("null", {{"workload-model", {file}, "--workload-model"}, {"rate", {"model"}, "--rate"}}, "test");
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].rate == doctest::Approx(3000));
    CHECK(jobs[0].op == kMixOp);
    CHECK_THROWS_WITH_AS(expand_jobs("null", {{"rate", {"model"}, "--rate"}}, "test"),
                         doctest::Contains("--rate: rate model takes the mean rate of --workload-model FILE"),
                         SetupError);
  }
  SUBCASE("a model with alpha 0 is uniform; a working set past 10M keys is capped") {
    TrafficModel u = m;
    u.alpha = 0;
    u.working_set = 50'000'000;
    j.opts["workload-model"] = write(dir.path + "/u.json", model_json(u));
    auto uw = workload_of(j, *find_adapter("null"));
    CHECK(uw->keys.spec().dist == KeyDist::Uniform);
    CHECK(uw->keys.spec().keyspace == kMaxModelKeyspace);
    CHECK(uw->text().find("capped at 10000000") != std::string::npos);
  }
}

TEST_CASE("--workload-model: a bad model file is one line naming the file and what was expected") {
  test::TempDir dir;
  TrafficModel good;
  good.name = "x";
  good.mix[0] = 1;
  good.working_set = 10;
  good.value_size = "100:1";
  const std::string ok = model_json(good);
  CHECK_NOTHROW(parse_model(ok, "f.json"));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = ok;
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "f.json: expected a model file"},
      {"[1,2]", "f.json: expected a model file"},
      {"{\"a\":", "f.json: expected a model file"},
      {std::string(100, '[') + std::string(100, ']'), "f.json: nested deeper than 4 levels"},
      {with("\"mwbench_model\": 1", "\"mwbench_model\": 2"), "f.json: mwbench_model: expected 1"},
      {with("\"name\": \"x\"", "\"name\": 5"), "f.json: name: expected a string"},
      {with("\"alpha\": 0.0", "\"alpha\": 7"), "f.json: keys.alpha: expected a number from 0 to 3"},
      {with("\"alpha\": 0.0", "\"alpha\": \"1\""), "f.json: keys.alpha: expected a number"},
      {with("\"working_set\": 10", "\"working_set\": 0"), "f.json: keys.working_set: expected a whole number from 1"},
      {with("\"working_set\": 10", "\"working_set\": -3"), "f.json: keys.working_set: expected a whole number"},
      {with("\"read\": 1.0", "\"read\": 0.5"), "f.json: mix: expected shares that add up to 1"},
      {with("\"read\": 1.0", "\"fly\": 1.0"), "f.json: mix: unknown op 'fly'"},
      {with("\"value_size\": \"100:1\"", "\"value_size\": \"100:0\""), "f.json: value_size: expected SIZE:WEIGHT"},
      {with("\"value_size\": \"100:1\"", "\"value_size\": \"99999999:1\""), "f.json: value_size: expected SIZE:WEIGHT"},
      {with("\"ttl\": \"\"", "\"ttl\": \"x\""), "f.json: ttl: expected TTL:WEIGHT"},
      {with("\"mwbench_model\": 1", "\"mwbench_model\": 1, \"extra\": 1"), "f.json: unknown field 'extra'"},
      {with("\"mean\": 0.0", "\"mean\": 1e300"), "f.json: rate.mean: expected a number from 0 to 1e+09"},
      {with("\"format\": \"\"", "\"format\": \"tar\""), "f.json: trace.format: expected twitter, monitor or csv"},
  };
  for (auto& one : bad) {  // not a binding: clang 14 cannot capture one in CAPTURE's lambda
    const std::string& text = one.first;
    const auto& want = one.second;
    CAPTURE(text.substr(0, 200));
    try {
      parse_model(text, "f.json");
      FAIL("accepted");
    } catch (const SetupError& e) {
      const std::string got = e.what();
      CHECK(got.rfind(want, 0) == 0);
      CHECK(got.find('\n') == std::string::npos);
    }
  }
  const std::string file = write(dir.path + "/bad.json", with("\"alpha\": 0.0", "\"alpha\": -1"));
  Job j = test::make_job("null", "mix", 100, 1);
  j.opts = {{"workload-model", file}};
  CHECK_THROWS_WITH_AS(workload_of(j, *find_adapter("null")),
                       doctest::Contains((file + ": keys.alpha: expected a number from 0 to 3").c_str()), SetupError);
  j.opts["workload-model"] = dir.path + "/none.json";
  CHECK_THROWS_WITH_AS(workload_of(j, *find_adapter("null")), doctest::Contains("cannot read the model file"),
                       SetupError);
  j.opts = {{"workload-model", write(dir.path + "/g.json", ok)}, {"workload", "twitter:4"}};
  CHECK_THROWS_WITH_AS(workload_of(j, *find_adapter("null")),
                       doctest::Contains("give --workload or --workload-model, not both"), SetupError);
}
TEST_CASE("model: a trace that saw a small part of a large key space still gives its alpha") {
  // 300k requests over 10^6 keys: most keys are seen once or not at all, and the tail's ranks are
  // not its keys' (a fit over every rank gave 0.45 for 0.6 and 0.81 for 0.9).
  test::TempDir dir;
  for (double alpha : {0.6, 0.9}) {
    CAPTURE(alpha);
    const DrawnTrace d = draw_trace(dir.path, alpha, 1000000, 300000, 100, 5);
    const TrafficModel m = fit_file(d.path);
    CHECK(m.fit_ranks < m.distinct);
    CHECK(std::abs(m.alpha - alpha) < 0.07);
  }
}
