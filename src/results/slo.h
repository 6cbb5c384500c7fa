// Service-level objectives a job must meet: `--slo 'p99<2ms,rps>10000,errors=0'` on the command
// line, `slo = "..."` in a suite. A violated SLO makes the run exit 3.
#pragma once
#include <string>
#include <vector>

namespace mw {

struct JobResult;

// One term: METRIC OP VALUE. Metrics: rps (req/s; k, M, G suffixes are 10^3, 10^6, 10^9),
// mbps (MB/s), min, mean, p50, p90, p99, p999, max (latency of successful ops; the value needs
// a unit: ns, us, ms, s), errors (failed plus not-run ops of every run of the job; a value
// with % is their share of all ops). Ops: <, <=, >, >=, =.
struct SloTerm {
  enum class Op { Lt, Le, Gt, Ge, Eq };
  std::string metric;
  Op op = Op::Lt;
  double value = 0;      // ns for latencies, a fraction for errors in %
  bool percent = false;  // errors only
  std::string text;      // as written, trimmed
};

// A latency term's upper bound in ns (p99<1ms: 1e6), or 0 when the term bounds no latency from above.
double slo_latency_bound(const SloTerm& t);

// Parses a comma list of terms. Throws SetupError naming the bad term and what was
// expected.
std::vector<SloTerm> parse_slo(const std::string& spec);

struct SloViolation {
  std::string metric;  // which figure (the table marks its cell)
  std::string text;    // "p99 2.310 ms, wanted < 2ms"
};

struct SloOutcome {
  std::string spec;      // "" when the job has none
  bool checked = false;  // false when the job did not run (skipped, set-up failed)
  bool passed = true;
  std::vector<SloViolation> violations;
  bool violated(const std::string& metric) const;
};

// The job's figures (the reported run's; errors of every run) against its SLO.
SloOutcome check_slo(const std::string& spec, const JobResult& j);

}  // namespace mw
