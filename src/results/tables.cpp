// The field tables of a run, its context and ranks, and its jobs (their parts: tables_parts.cpp).
#include "results/tables.h"

#include <algorithm>

#include "queue/queue.h"
#include "results/decision.h"
#include "results/decision_json.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/table_parts.h"
#include "results/writer.h"
#include "util/redact.h"

namespace mw {

using namespace tables;
using fields::boolean;
using fields::choice;
using fields::count;
using fields::figure;
using fields::Merging;
using fields::object;
using fields::text;
using fields::whole;

namespace {

// A job's settings as the file has them ("params"): the common ones, and the adapter's options as
// the strings they were (redacted).
const Table<Job>& params_table() {
  static const Table<Job> table = [] {
    using F = Fields<Job>;
    const int64_t most = Reader::kMaxClients;
    Table<Job> t{.name = "params",
                 .doc =
                     "the job's settings: the common ones, then the adapter's options (strings, numbers or "
                     "true/false, redacted)"};
    auto& f = t.fields;
    f.push_back(F::field("clients", &Job::clients, whole<int>(1, most)).doc("-c"));
    f.push_back(F::field("pipeline", &Job::pipeline, whole<int>(1, most)).doc("-P: requests in flight per client"));
    f.push_back(F::field("threads", &Job::threads, whole<int>(0, most)));
    f.push_back(F::field("n", &Job::n, count()).doc("ops in the measured phase"));
    f.push_back(F::field("duration_s", &Job::duration_s, figure()));
    f.push_back(F::field("warmup_ops", &Job::warmup_ops, count()));
    f.push_back(F::field("warmup_s", &Job::warmup_s, figure()));
    f.push_back(F::field("rate", &Job::rate, figure()).doc("ops/s across all clients; 0: closed loop"));
    f.push_back(F::field("timeout_s", &Job::timeout_s, figure()));
    f.push_back(F::custom(
        "poll", {{"type", "string"}, {"description", "--poll: off, auto, or a window (50us)"}},
        [](const Job& j, const Up&) { return json(j.poll.text()); },
        [](const Reader& rd, const json& o, const std::string& w, Job& j, const Up&) {
          const std::string kw = Reader::at(w, "poll"), v = rd.string(o["poll"], kw);
          try {
            j.poll = parse_poll(v);
          } catch (const SetupError&) {
            rd.fail(kw, "'" + printable(v.substr(0, 40)) + "' is not off, auto or a time from 1us to 10ms");
          }
        }));
    f.push_back(F::field("find_max", &Job::find_max, text())
                    .when([](const Job& j) { return !j.find_max.empty(); })
                    .doc("--find-max: the SLO whose highest rate was searched"));
    f.push_back(F::custom(
        "server_events", {{"const", "off"}, {"description", "--server-events off: no timeline read"}},
        [](const Job&, const Up&) { return json("off"); },
        [](const Reader& rd, const json& o, const std::string& w, Job& j, const Up&) {
          j.server_events = rd.string(o["server_events"], Reader::at(w, "server_events")) != "off";
        }));
    f.back().written = [](const Job& j) { return !j.server_events; };
    t.extra = {{"additionalProperties", {{"type", {"string", "number", "boolean"}}}}};
    return t;
  }();
  return table;
}

Codec<Job> params_codec() {
  Codec<Job> c = object(params_table());
  c.put = [](const Job& j, const Up&, size_t) { return job_params(j); };
  c.redact = [](Job& j, const fields::Redactor& r) {
    for (auto& [k, v] : j.opts) r.keyed(k, v);
  };
  c.get = [](const Reader& rd, const json& v, const std::string& w, Job& j, const Up& owner, size_t) {
    for (auto& [k, p] : rd.object(v, w).items())
      if (p.is_structured())
        rd.fail(w + "." + printable(k), std::string("expected a string, number or true/false, got ") + p.type_name());
    params_table().read(rd, v, w, j, Up{&owner, &j, 0});
    for (auto& [k, p] : v.items()) {
      bool common = false;
      for (auto& f : params_table().fields) common |= f.key == k;
      if (!common) j.opts[k] = p.is_string() ? p.get<std::string>() : p.dump();
    }
  };
  return c;
}

const Table<Verdict>& verify_table() {
  static const Table<Verdict> table = [] {
    using F = Fields<Verdict>;
    Table<Verdict> t{.name = "verify",
                     .doc = "the end check: whether the adapter has one for the op, whether it passed, and what"};
    t.fields.push_back(F::field("checked", &Verdict::checked, boolean()).need());
    t.fields.push_back(F::field("ok", &Verdict::ok, boolean()).need());
    t.fields.push_back(F::field("detail", &Verdict::detail, text()).need().free_text());
    return t;
  }();
  return table;
}

// One abstract op of a workload's mix: the same figures as a job's.
const Table<OpFigures>& op_table() {
  static const Table<OpFigures> table = [] {
    using F = Fields<OpFigures>;
    Table<OpFigures> t{.name = "op", .doc = "one op of a workload's mix (--mix): its figures"};
    auto& f = t.fields;
    f.push_back(F::field("ops_ok", &OpFigures::ops_ok, count()).need().sum());
    f.push_back(F::field("ops_failed", &OpFigures::ops_failed, count()).need().sum());
    f.push_back(F::field("misses", &OpFigures::misses, count()).sum().doc("reads of a key that was not there"));
    f.push_back(F::field("not_stored", &OpFigures::not_stored, count())
                    .when([](const OpFigures& o) { return o.not_stored > 0; })
                    .sum()
                    .doc("writes that stored nothing: a trace's add of a key that was there, its replace of one "
                         "that was not, an update that found no key (counted in ops_ok)"));
    f.push_back(F::made<double>(
        "rps", [](const OpFigures& o, const Up& self) { return op_rps(self.up->as<JobResult>(), o); }, figure(), true));
    histogram_pair<OpFigures>(
        f, "latency_ns", "histogram", [](auto& o) -> auto& { return o.latency; }, "its successful ops' latency");
    t.after = [](const Reader& rd, const json&, const std::string& w, OpFigures& o, const Up&) {
      if (o.misses > o.ops_ok) rd.fail(Reader::at(w, "misses"), "is above ops_ok (a miss is a completed op)");
      if (o.not_stored > o.ops_ok)
        rd.fail(Reader::at(w, "not_stored"), "is above ops_ok (a write not stored is a completed op)");
      if (!o.latency) o.latency = std::make_shared<Histogram>();
    };
    return t;
  }();
  return table;
}

// One side of a job whose adapter has sides (a disk's read and write): fio's shape.
const Table<SideResult>& side_table() {
  static const Table<SideResult> table = [] {
    using F = Fields<SideResult>;
    Table<SideResult> t{.name = "side", .doc = "one side of a job (a disk's read or write): fio's jobs[].read"};
    auto& f = t.fields;
    auto secs = [](const Up& self) {
      const double e = self.up->as<JobResult>().elapsed_s;
      return e > 0 ? e : 1;
    };
    f.push_back(F::field("ops_ok", &SideResult::ops_ok, count()).need().sum());
    f.push_back(F::field("bytes", &SideResult::bytes, count()).sum());
    f.push_back(F::made<double>(
        "iops",
        [secs](const SideResult& s, const Up& self) {
          return self.up->as<JobResult>().elapsed_s > 0 ? static_cast<double>(s.ops_ok) / secs(self) : 0;
        },
        figure()));
    f.push_back(F::made<double>(
        "mb_per_s",
        [secs](const SideResult& s, const Up& self) {
          return self.up->as<JobResult>().elapsed_s > 0 ? static_cast<double>(s.bytes) / 1e6 / secs(self) : 0;
        },
        figure()));
    histogram_pair<SideResult>(
        f, "latency_ns", "histogram", [](auto& s) -> auto& { return s.latency; }, "its ops' latency", nullptr, true);
    return t;
  }();
  return table;
}

// Counts of failed ops by status: {"Timeout": 2, ...}, every status but Ok.
Codec<uint64_t[kStatusCount]> errors_codec();

// Elements of a list matched by their name across the parts and merged by their table's rules,
// in the order `order` gives (a workload's ops in the driver's order, sides by name).
template <class T>
std::function<void(JobResult&, const JobResult&, const Merging&)> merge_named(std::vector<T> JobResult::*list,
                                                                              std::string T::*name, const Table<T>& t) {
  return [list, name, &t](JobResult& into, const JobResult& part, const Merging& m) {
    for (const T& x : part.*list) {
      auto it = std::find_if((into.*list).begin(), (into.*list).end(), [&](const T& y) { return y.*name == x.*name; });
      if (it == (into.*list).end()) {
        (into.*list).push_back(T{});
        it = std::prev((into.*list).end());
        (*it).*name = x.*name;
      }
      t.merge(*it, x, m);
    }
  };
}

// NOLINTNEXTLINE(readability-function-size): a table, one entry per field
Table<JobResult> make_job_table(bool repeat) {
  using F = Fields<JobResult>;
  using J = JobResult;
  Table<J> t{.name = repeat ? "repeat" : "job",
             .doc = repeat ? "one run of a job repeated (--repeat): the same figures as the job's"
                           : "one job: one op on one target, its figures, and what they mean"};
  auto& f = t.fields;
  auto job = [](auto m) {
    return [m](auto& j) -> auto& { return j.job.*m; };
  };
  f.push_back(F::field("name", job(&Job::name), text()).need().free_text());
  f.push_back(F::field("adapter", job(&Job::adapter), text()).need());
  f.push_back(F::field("op", job(&Job::op), text()).need());
  f.push_back(F::field("latency_is", &J::latency_is, choice(latency_kind_names))
                  .first()
                  .doc("the latency its op measures, as its adapter declares it (the stores guidance)"));
  // a file of before lacks it and "baseline": the reading build's registry says them
  f.back().always = true;
  f.back().read = [r = f.back().read](const Reader& rd, const json& o, const std::string& w, J& j, const Up& self) {
    if (!o.contains("latency_is")) return adapter_facts(j);
    r(rd, o, w, j, self);
  };
  f.push_back(F::field("baseline", &J::baseline, boolean())
                  .when([](const J& j) { return j.baseline; })
                  .first()
                  .doc("true: the driver alone, drawn beside the stores as their baseline, never ranked"));
  f.push_back(F::field("target", &J::target, text()).need().free_text().first());
  f.push_back(F::field("state", &J::state, choice(state_names)).need());
  f.push_back(F::field("message", &J::message, text())
                  .when([](const J& j) { return !j.message.empty(); })
                  .free_text()
                  .doc("why it was skipped, or its set-up error"));
  f.push_back(F::field("params", &J::job, params_codec()).need().merge([](J& into, const J& part, const Merging& m) {
    if (m.part == 0) into.job = part.job, into.job.clients = into.job.threads = 0, into.job.n = 0;
    if (m.part == 0) into.job.warmup_ops = 0, into.job.rate = 0;
    m.add(into.job.clients, part.job.clients, "clients");
    m.add(into.job.threads, part.job.threads, "threads");
    m.add(into.job.n, part.job.n, "n");
    into.job.rate += part.job.rate;
    m.add(into.job.warmup_ops, part.job.warmup_ops, "warmup_ops");
  }));
  f.push_back(F::field("ops_ok", &J::ops_ok, count()).need().sum());
  f.push_back(F::field("ops_failed", &J::ops_failed, count()).need().sum());
  f.push_back(F::field("ops_not_run", &J::ops_not_run, count()).need().sum());
  f.push_back(F::field("ops_not_sent", &J::ops_not_sent, count())
                  .sum()
                  .doc("open loop by --duration: ops due before its end that were not sent by then"));
  f.push_back(F::field("elapsed_s", &J::elapsed_s, figure()).need().max().doc("the measured phase"));
  f.push_back(F::field("rps", &J::rps, figure()).need().doc("ops_ok / elapsed_s; --repeat: the median run's"));
  // --repeat: the range, written from the repeats
  f.push_back(F::made<double>(
      "rps_min", [](const J& j, const Up&) { return rps_range(j)->min; }, figure()));
  f.back().written = [](const J& j) { return rps_range(j).has_value(); };
  f.push_back(F::custom(
      "rps_max", figure().schema, [](const J& j, const Up&) { return json(rps_range(j)->max); },
      [](const Reader& rd, const json& o, const std::string& w, J&, const Up&) {
        const double hi = rd.figure(o["rps_max"], Reader::at(w, "rps_max"));
        if (o.contains("rps_min") && rd.figure(o["rps_min"], Reader::at(w, "rps_min")) > hi)
          rd.fail(Reader::at(w, "rps_min"), "is above rps_max");
      }));
  f.back().written = f[f.size() - 2].written;
  f.push_back(F::made<double>(
      "rps_median", [](const J& j, const Up&) { return j.rps; }, figure()));
  f.back().written = f[f.size() - 2].written;
  histogram_pair<J>(
      f, "latency_ns", "histogram", [](auto& j) -> auto& { return j.latency; },
      "its successful ops' latency (from when each op was due, in open loop)");
  f.push_back(F::field("verify", &J::verify, object(verify_table())).need());
  warning_pair<J>(
      f, [](auto& j) -> auto& { return j.warnings; });
  f[f.size() - 2].merge = [](J& into, const J& part, const Merging&) {
    for (const Warning& w : part.warnings)
      if (std::find(into.warnings.begin(), into.warnings.end(), w) == into.warnings.end()) into.warnings.push_back(w);
  };
  f.push_back(
      F::field("contract", &J::contract, contract_codec()).when([](const J& j) { return j.contract.has_value(); }));
  f.push_back(
      F::field("profile", &J::profile, object(profile_table())).when([](const J& j) { return j.profile.taken; }));
  f.back().read = [r = f.back().read](const Reader& rd, const json& o, const std::string& w, J& j, const Up& self) {
    r(rd, o, w, j, self);
    j.profile.taken = true;
  };
  // made of the job's figures (store_guidance): checked, then made again from them
  static const Table<StoreGuidance> stores = [] {
    Table<StoreGuidance> s{"stores", "what the job's sync or round-trip latency means for the stores people run"};
    s.fields.push_back(Fields<StoreGuidance>::field("figure", &StoreGuidance::figure, text()).need());
    s.fields.push_back(Fields<StoreGuidance>::field("rules", &StoreGuidance::rules, fields::strings()).need());
    return s;
  }();
  f.push_back(F::made<StoreGuidance>(
      "stores", [](const J& j, const Up&) { return store_guidance(j); }, object(stores)));
  f.back().written = [](const J& j) { return !store_guidance(j).figure.empty(); };
  f.push_back(F::field("per_op", &J::per_op, fields::keyed(&OpFigures::op, object(op_table())))
                  .when([](const J& j) { return !j.per_op.empty(); })
                  .merge(merge_named(&J::per_op, &OpFigures::op, op_table()))
                  .doc("a workload job (--mix): each op's figures"));
  f.push_back(F::field("slo", &J::slo, object(slo_table())).when([](const J& j) { return !j.slo.spec.empty(); }));
  f.push_back(F::field("source", job(&Job::source), text()).doc("the suite's file:line that declared it, or cli"));
  f.push_back(F::field("workload", &J::workload, text())
                  .when([](const J& j) { return !j.workload.empty(); })
                  .first()
                  .doc("what the mix was, in words"));
  f.push_back(F::field("server", &J::server, fields::texts())
                  .free_text()
                  .first()
                  .doc("facts about the target: server name and version, settings"));
  f.push_back(F::field("metrics", &J::metrics, metrics_codec()));
  f.push_back(F::field("paths", &J::paths, fields::strings()).free_text().unique());
  f.push_back(F::field("error_samples", &J::error_samples, fields::strings())
                  .free_text()
                  .unique(5)
                  .doc("the first few distinct failures"));
  f.push_back(F::field(
                  "errors", [](auto& j) -> auto& { return j.errors; }, errors_codec())
                  .merge([](J& into, const J& part, const Merging& m) {
                    for (int s = 1; s < kStatusCount; ++s) m.add(into.errors[s], part.errors[s], "error counts");
                  }));
  f.push_back(F::field("warmup_ops_ok", &J::warmup_ok, count()).sum());
  f.push_back(F::field("bytes", &J::bytes, count()).sum());
  f.push_back(F::field("misses", &J::misses, count())
                  .when([](const J& j) { return !j.per_op.empty(); })
                  .sum()
                  .doc("a workload's reads of a key that was not there (counted in ops_ok)"));
  f.push_back(F::field("per_second", &J::per_second, fields::array(count()))
                  .merge([](J& into, const J& part, const Merging& m) {
                    if (part.per_second.size() > into.per_second.size()) into.per_second.resize(part.per_second.size());
                    for (size_t s = 0; s < part.per_second.size(); ++s)
                      m.add(into.per_second[s], part.per_second[s], "per_second");
                  })
                  .doc("successful ops completed in each second"));
  f.push_back(F::field(
                  "series", [](auto& j) -> auto& { return j; }, object(series_table()))
                  .when([](const J& j) { return j.series_interval_s > 0; }));
  f.push_back(F::field("episodes", &J::episodes, fields::array(object(episode_table())))
                  .when([](const J& j) { return j.episodes_judged; })
                  .doc("the episodes found over the series (empty: a quiet run)"));
  f.back().read = [r = f.back().read](const Reader& rd, const json& o, const std::string& w, J& j, const Up& self) {
    r(rd, o, w, j, self);
    j.episodes_judged = true;
  };
  f.push_back(F::field("queue", &J::queue, fields::shared(object(queue_table()))).when([](const J& j) {
    return j.queue != nullptr;
  }));
  histogram_pair<J>(
      f, "latency_failed_ns", "histogram_failed", [](auto& j) -> auto& { return j.latency_failed; },
      "its failed ops' latency", [](const J& j) { return j.latency_failed && j.latency_failed->count(); });
  histogram_pair<J>(
      f, "latency_uncorrected_ns", "histogram_uncorrected", [](auto& j) -> auto& { return j.latency_uncorrected; },
      "open loop: its successful ops' latency from their actual send");
  f.push_back(F::field(
                  "connect", [](auto& j) -> auto& { return j; }, object(connect_table()))
                  .when([](const J& j) { return j.job.reconnect_every > 0; })
                  .nested());
  f.push_back(F::field("sides", &J::sides, fields::keyed(&SideResult::name, object(side_table())))
                  .when([](const J& j) { return !j.sides.empty(); })
                  .merge(merge_named(&J::sides, &SideResult::name, side_table())));
  f.push_back(F::field("durability", &J::durability, object(durability_table())).when([](const J& j) {
    return j.durability.ran;
  }));
  f.push_back(F::field("capacity", &J::capacity, fields::shared(object(capacity_table()))).when([](const J& j) {
    return j.capacity != nullptr;
  }));
  f.push_back(F::field("faults", &J::faults, fields::array(object(fault_table())))
                  .when([](const J& j) { return !j.faults.empty(); })
                  .doc("--fault: one per fault, in the order they fell"));
  if (!repeat) {
    // --decide: this alternative's verdict, written and read with the run's "decide" (decision_json.h)
    f.push_back(F::custom("decision",
                          {{"type", "object"}, {"description", "--decide: this job's alternative's verdict"}}, nullptr,
                          nullptr));
    static const Table<J> runs = make_job_table(true);
    f.push_back(F::field("repeats", &J::repeats, fields::array(object(runs)))
                    .when([](const J& j) { return !j.repeats.empty(); })
                    .doc("--repeat: every run of the job (this one is the median's)"));
    f.back().merge = nullptr;
  }
  note_pair<J>(
      f, [](auto& j) -> auto& { return j.notes; });
  f.push_back(F::made<double>(
      "mb_per_s", [](const J& j, const Up&) { return j.mbps(); }, figure()));
  t.after = [repeat](const Reader&, const json& o, const std::string&, J& j, const Up&) {
    if (!j.slo.spec.empty()) j.job.slo = j.slo.spec;
    if (repeat) return;
    // the notes as written; a file of before notes gets them from its figures, here alone (a
    // repeat's are not shown: it has none)
    if (!o.contains("notes")) j.notes = job_notes(j);
    // the warnings of its figures as a whole (too short, not confirmed): a file holds those that
    // apply since they were made with the run; one of before gets them from its figures, here alone
    if (std::none_of(j.warnings.begin(), j.warnings.end(), of_figures))
      for (Warning& x : figure_warnings(j)) j.warnings.push_back(std::move(x));
  };
  return t;
}

Codec<uint64_t[kStatusCount]> errors_codec() {
  Codec<uint64_t[kStatusCount]> c;
  json props = json::object();
  for (int k = 1; k < kStatusCount; ++k) props[std::string(status_name(static_cast<Status>(k)))] = count().schema;
  c.schema = {{"type", "object"},
              {"description", "failed ops by status"},
              {"properties", props},
              {"additionalProperties", false}};
  c.put = [](const uint64_t(&errors)[kStatusCount], const Up&, size_t) {
    json o = json::object();
    for (int k = 1; k < kStatusCount; ++k) o[std::string(status_name(static_cast<Status>(k)))] = errors[k];
    return o;
  };
  c.get = [](const Reader& rd, const json& v, const std::string& w, uint64_t(&errors)[kStatusCount], const Up&,
             size_t) {
    for (auto& [k, n] : rd.object(v, w).items()) {
      int known = 0;
      for (int s = 1; s < kStatusCount; ++s)
        if (k == status_name(static_cast<Status>(s))) known = s;
      if (!known) rd.fail(w + "." + printable(k), "not a status mwbench counts");
      errors[known] = rd.count(n, w + "." + printable(k));
    }
  };
  return c;
}

const Table<Context>& context_table() {
  static const Table<Context> table = [] {
    using F = Fields<Context>;
    using P = std::pair<std::string, std::string>;
    static const Table<P> path = [] {
      Table<P> p{"path", "the filesystem and device behind a path the jobs used"};
      p.fields.push_back(Fields<P>::field("fs", &P::first, text()).need());
      p.fields.push_back(Fields<P>::field("device", &P::second, text()).need());
      return p;
    }();
    Table<Context> t{.name = "context", .doc = "the machine the run measured on, and what makes its figures suspect"};
    auto& f = t.fields;
    for (auto [key, m] : {std::pair{"host", &Context::host},
                          {"cpu", &Context::cpu},
                          {"kernel", &Context::kernel},
                          {"os", &Context::os},
                          {"virtualization", &Context::virtualization},
                          {"build_type", &Context::build_type}})
      f.push_back(F::field(key, m, text()).need());
    f.push_back(F::field("cores", &Context::cores, whole<int>(0, Reader::kMaxClients)).need());
    f.push_back(F::field("memory_bytes", &Context::memory_bytes, count()).need());
    f.push_back(F::field("libraries", &Context::libraries, fields::texts()).doc("client libraries and versions"));
    f.push_back(F::field("paths", &Context::paths, fields::map_of(object(path))));
    warning_pair<Context>(
        f, [](auto& c) -> auto& { return c.warnings; });
    return t;
  }();
  return table;
}

const Table<RankContext>& rank_table() {
  static const Table<RankContext> table = [] {
    using F = Fields<RankContext>;
    using R = RankContext;
    Table<R> t{.name = "rank",
               .doc = "one process of a run spread over several (an MPI rank), or one run `mwbench merge` took"};
    auto& f = t.fields;
    f.push_back(F::field("rank", &R::rank, whole<int>(0, Reader::kMaxClients)).need());
    for (auto [key, m] : {std::pair{"host", &R::host},
                          {"cpu", &R::cpu},
                          {"kernel", &R::kernel},
                          {"started_at", &R::started_at},
                          {"source", &R::source}})
      f.push_back(F::field(key, m, text()).need());
    f.back() = F::field("source", &R::source, text()).need().doc("the result file it came from (merge), or \"\"");
    f.push_back(F::field("cores", &R::cores, whole<int>(0, Reader::kMaxClients)).need());
    f.push_back(F::field("memory_bytes", &R::memory_bytes, count()).need());
    f.push_back(F::field("clients", &R::clients, fields::array(whole<int64_t>(0, Reader::kMaxClients)))
                    .need()
                    .doc("per job, in the order of jobs"));
    warning_pair<R>(
        f, [](auto& r) -> auto& { return r.warnings; });
    return t;
  }();
  return table;
}

struct Tool {
  std::string name = "mwbench", version = MWBENCH_VERSION;
};

}  // namespace

json job_params(const Job& job) {
  json params = params_table().write(job, Up{});
  for (auto& [k, v] : job.opts) params[k] = redact(k, v);
  return params;
}

const Table<JobResult>& job_table() {
  static const Table<JobResult> t = make_job_table(false);
  return t;
}

// NOLINTNEXTLINE(readability-function-size): a table, one entry per field
const Table<RunResult>& run_table() {
  static const Table<RunResult> table = [] {
    using F = Fields<RunResult>;
    using R = RunResult;
    static const Table<Tool> tool = [] {
      Table<Tool> x{"tool", "what wrote the file"};
      x.fields.push_back(Fields<Tool>::field("name", &Tool::name, text()));
      x.fields.push_back(Fields<Tool>::field("version", &Tool::version, text()));
      return x;
    }();
    Table<R> t{.name = "run", .doc = "one run of mwbench: its jobs, the machine, and how it ended"};
    auto& f = t.fields;
    f.push_back(F::custom(
        "schema_version",
        {{"enum", {1, kSchemaVersion}},
         {"description", "2 added jobs[].per_op, misses, durability, series and ranks; readers accept 1"}},
        [](const R&, const Up&) { return json(kSchemaVersion); },
        [](const Reader& rd, const json& o, const std::string&, R&, const Up&) {
          const json& version = o["schema_version"];
          if (version != 1 && version != kSchemaVersion) {
            std::string v = version.dump();
            if (v.size() > 40) v = v.substr(0, 40) + "...";
            rd.fail("", "schema_version " + printable(v) +
                            " is not one this mwbench reads (1 or 2): written by a newer mwbench?");
          }
        }));
    f.back().required = true;
    f.push_back(F::made<Tool>(
        "tool", [](const R&, const Up&) { return Tool{}; }, object(tool)));
    f.push_back(F::field("suite", &R::suite, text()).need().free_text().first().doc("\"quick\", \"cli-redis\"..."));
    f.push_back(F::field("started_at", &R::started_at, text()).need().doc("ISO 8601 UTC"));
    f.push_back(F::field("command", &R::command, text()).need().free_text().doc("how it was invoked (redacted)"));
    f.back().put = [](const R& r, const Up&) { return json(redact_text(r.command)); };
    f.push_back(F::field("interrupted", &R::interrupted, boolean()).any());
    f.push_back(F::custom(
        "exit_code",
        {{"type", "integer"}, {"minimum", 0}, {"maximum", 255}, {"description", "how the run ended (see exit codes)"}},
        [](const R& r, const Up&) { return json(exit_code(r)); },
        [](const Reader& rd, const json& o, const std::string&, R& r, const Up&) {
          if (!r.interrupted) return;  // 128 + the signal that stopped it
          int64_t code = rd.whole(o["exit_code"], std::string("exit_code"), 0, 255);
          if (code > 128) r.signal = static_cast<int>(code - 128);
        }));
    f.push_back(F::field("context", &R::context, object(context_table())).need());
    f.push_back(F::field("jobs", &R::jobs, fields::array(object(job_table()))).need());
    f.push_back(F::field("ranks", &R::ranks, fields::array(object(rank_table())))
                    .when([](const R& r) { return !r.ranks.empty(); })
                    .doc("more than one process measured it (MPI, merge)"));
    note_pair<R>(
        f, [](auto& r) -> auto& { return r.notes; });
    f.push_back(F::custom(
        "gate",
        {{"type", "object"},
         {"description", "`run --baseline`: the gate's verdict per row"},
         {"properties", {{"passed", {{"type", "boolean"}}}, {"text", {{"type", "string"}}}}},
         {"required", {"passed", "text"}},
         {"additionalProperties", false}},
        [](const R& r, const Up&) {
          return json{{"passed", !r.gate_failed}, {"text", r.gate}};
        },
        [](const Reader& rd, const json& o, const std::string&, R& r, const Up&) {
          const json& g = rd.object(o["gate"], "gate");
          r.gate_failed = !rd.boolean(rd.need(g, "passed", "gate"), "gate.passed");
          r.gate = rd.string(rd.need(g, "text", "gate"), "gate.text");
        }));
    f.back().written = [](const R& r) { return !r.gate.empty(); };
    // --decide, `mwbench decide`: the rounds; each verdict in its job's row ("decision"), or, for
    // commands, the top-level "decisions" (and "decision" when there is one). Written by to_json
    // (json.cpp), which places the verdicts; read here, with every verdict where it was written.
    f.push_back(F::custom(
        "decide", {{"type", "object"}, {"description", "--decide: what was asked, the alternatives, every round"}},
        nullptr, [](const Reader& rd, const json& o, const std::string&, R& r, const Up&) {
          std::vector<const json*> decisions;
          if (o.contains("decisions"))
            for (const json& d : rd.array(o["decisions"], "decisions")) decisions.push_back(&d);
          for (const json& j : o["jobs"])
            if (j.is_object() && j.contains("decision")) decisions.push_back(&j["decision"]);
          r.decide = std::make_shared<DecideResult>(read_decide(o["decide"], decisions, rd.label()));
        }));
    f.push_back(F::custom("decisions",
                          {{"type", "array"},
                           {"items", {{"type", "object"}}},
                           {"description", "`mwbench decide`: each alternative's verdict (commands, not jobs)"}},
                          nullptr, nullptr));
    f.push_back(F::custom("decision",
                          {{"type", "object"}, {"description", "`mwbench decide`: the one verdict, when there is one"}},
                          nullptr, nullptr));
    t.after = [](const Reader&, const json& o, const std::string&, R& r, const Up&) {
      if (!o.contains("notes")) r.notes = run_notes(r);  // a file of before notes
      // A run with a crash job has a caveat among its notes since the durability table's notes
      // were made with the run; a file of before gets them (and each crash job's lines) here alone.
      auto crashed = [](const JobResult& j) { return j.durability.ran; };
      auto caveat = [](const Note& n) { return n.kind == NoteKind::CrashModel; };
      if (std::any_of(r.jobs.begin(), r.jobs.end(), crashed) && std::none_of(r.notes.begin(), r.notes.end(), caveat))
        make_durability_notes(r);
    };
    return t;
  }();
  return table;
}

json result_schema() {
  json defs = json::object();
  json run = object(run_table()).schema;
  object(run_table()).define(defs);
  json out = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
              {"title", "mwbench result file"},
              {"description",
               "A result file of mwbench (results/<timestamp>-<suite>.json, --json FILE): schema_version 2, which "
               "readers accept with 1. Made from the field tables of src/results/ (mwbench help --schema)."},
              {"$ref", run["$ref"]},
              {"$defs", defs}};
  return out;
}

}  // namespace mw
