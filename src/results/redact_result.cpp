// The redaction rule (redact.h) applied to every string of a run's result.
#include "redact.h"
#include "result.h"

namespace mw {

namespace {

void redact_job(JobResult& j) {
  for (auto& [k, v] : j.job.opts) v = redact(k, v);
  j.job.name = redact_text(j.job.name);
  j.target = redact_text(j.target);
  j.message = redact_text(j.message);
  j.verify.detail = redact_text(j.verify.detail);
  for (auto* list : {&j.error_samples, &j.warnings, &j.paths})
    for (auto& s : *list) s = redact_text(s);
  for (auto& [k, v] : j.server) v = redact(k, v);
  for (auto& m : j.metrics) m.name = redact_text(m.name);
  for (auto& r : j.repeats) redact_job(r);
}

}  // namespace

void redact_result(RunResult& run) {
  run.command = redact_text(run.command);
  run.suite = redact_text(run.suite);
  for (auto& w : run.context.warnings) w = redact_text(w);
  for (auto& j : run.jobs) redact_job(j);
}

}  // namespace mw
