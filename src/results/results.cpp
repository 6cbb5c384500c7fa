// The one reader of result files: bounded (size, depth), validated field by field into the
// typed model. Whatever is wrong is one SetupError naming the file and the field.
#include "results/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "queue/queue.h"
#include "results/decision_json.h"
#include "results/notes.h"
#include "results/reader.h"
#include "results/table_parts.h"
#include "results/tables.h"
#include "util/names.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

const char* state_name(JobResult::State s) { return state_names(s); }

std::optional<JobResult::State> parse_state(std::string_view name) { return state_names.parse(name); }

namespace {
constexpr const char* kWarningKindNames[kWarningKinds] = {
    "other",     "debug-build",      "cpu-scaling",      "shared-cores",   "rank-lost",    "merge",
    "adapter",   "pipeline-ignored", "load-failed",      "warmup-failed",  "client-bound", "steal",
    "unsettled", "teardown",         "not-simultaneous", "not-the-device", "page-cache",   "over-server-limit",
    "too-short", "not-confirmed",    "behind-schedule",  "server-events"};

constexpr Names<WarningKind> warning_kind_names{kWarningKindNames};
}  // namespace

const char* warning_kind_name(WarningKind k) { return warning_kind_names(k); }

std::optional<WarningKind> parse_warning_kind(std::string_view name) { return warning_kind_names.parse(name); }

namespace {
constexpr const char* kNoteKindNames[kNoteKinds] = {
    "other",      "skipped", "setup-error", "interrupted", "failed",  "error-sample", "verify-failed", "capacity",
    "slo-missed", "slo-met", "side",        "workload",    "per-op",  "metrics",      "contract",      "profile",
    "stores",     "repeats", "durability",  "crash-model", "episode", "fault",        "connect"};
constexpr Names<NoteKind> note_kind_names{kNoteKindNames};
}  // namespace

const char* note_kind_name(NoteKind k) { return note_kind_names(k); }

std::optional<NoteKind> parse_note_kind(std::string_view name) { return note_kind_names.parse(name); }

using nlohmann::json;

namespace tables {

// Files written before warnings had kinds: each kind by the words its warning started with then.
// The one place that reads a warning's text; the rest of mwbench reads its kind.
WarningKind legacy_warning_kind(std::string_view text) {
  static const std::pair<std::string_view, WarningKind> starts[] = {
      {"server and client share", WarningKind::SharedCores},
      {"mwbench was built as", WarningKind::DebugBuild},
      {"CPU frequency scaling", WarningKind::CpuScaling},
      {"limited by the client: ", WarningKind::ClientBound},
      {"the hypervisor took ", WarningKind::Steal},
      {"teardown: ", WarningKind::Teardown},
      {"warm-up: ", WarningKind::WarmupFailed},
      {"load: ", WarningKind::LoadFailed},
      {"-P ", WarningKind::PipelineIgnored},
  };
  for (auto [start, kind] : starts)
    if (text.substr(0, start.size()) == start) return kind;
  if (text.substr(0, 5) == "rank " && text.find(" stopped answering") != std::string_view::npos)
    return WarningKind::RankLost;
  if (text.find("the run never settled") != std::string_view::npos) return WarningKind::Unsettled;
  return WarningKind::Other;
}

}  // namespace tables

bool ran(const JobResult& j) { return j.state == JobResult::State::Done || j.state == JobResult::State::Interrupted; }

bool unverified(const JobResult& j) {
  bool bad = j.verify.checked && !j.verify.ok;
  for (auto& r : j.repeats) bad |= r.verify.checked && !r.verify.ok;
  return bad;
}

std::string failure_mark(const JobResult& j) {
  if (!j.failed()) return "";
  bool ops_bad = !ran(j) || j.ops_failed || j.ops_not_run;
  for (auto& k : j.repeats) ops_bad |= k.ops_failed || k.ops_not_run || !ran(k);
  return ops_bad || !unverified(j) ? "FAILED" : "unverified";
}

bool managed_server(const JobResult& j) {
  auto managed = j.server.find("managed");
  return managed != j.server.end() && managed->second == "yes";
}

double latency_at(const JobResult& j, double p) {
  return j.latency ? static_cast<double>(j.latency->percentile(p)) : 0;
}

namespace {

// A job's successful ops are the samples of its histogram: one rule for every reader (merge,
// compare, report, gate), the same merge applies to the sum of several files. (A job that did not
// run shows no figure; merge checks the sum of what it adds.)
void check_job_counts(const Reader& rd, const JobResult& j, const std::string& where) {
  if (j.latency && ran(j) && j.latency->count() != j.ops_ok)
    rd.fail(where, "the histogram holds " + std::to_string(j.latency->count()) + " successful ops, ops_ok says " +
                       std::to_string(j.ops_ok) + ": not a file mwbench wrote, or one changed since");
  for (size_t k = 0; k < j.repeats.size(); ++k)
    check_job_counts(rd, j.repeats[k], where + ".repeats[" + std::to_string(k) + "]");
}

json parse_text(std::string_view text, const std::string& label) {
  Reader rd(label);
  if (text.size() > kMaxResultBytes) rd.fail("", "larger than 256 MiB: not a result file mwbench wrote");
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) rd.fail("", "empty file, not JSON");
  if (json_depth(text) > kMaxResultDepth)  // refused before the parser builds it
    rd.fail("", "nested deeper than " + std::to_string(kMaxResultDepth) + " levels: not an mwbench result file");
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), nullptr, false);
  } catch (const std::exception& e) {
    rd.fail("", std::string("not JSON: ") + e.what());
  }
  if (doc.is_discarded()) rd.fail("", "not JSON");
  return doc;
}

}  // namespace

RunResult parse_result_json(const json& doc, const std::string& label) {
  Reader rd(label);
  if (!doc.is_object() || !doc.contains("schema_version") || !doc.contains("jobs") || !doc["jobs"].is_array())
    rd.fail("", "not an mwbench result file (no schema_version and jobs)");
  RunResult run;
  try {
    run_table().read(rd, doc, "", run, fields::Up{});
  } catch (const SetupError&) {
    throw;
  } catch (const std::exception& e) {  // not expected: the model reads only what it checked
    rd.fail("", e.what());
  }
  run.label = valid_utf8(label);
  for (size_t i = 0; i < run.jobs.size(); ++i) check_job_counts(rd, run.jobs[i], "jobs[" + std::to_string(i) + "]");
  return run;
}

RunResult parse_result(std::string_view text, const std::string& label) {
  return parse_result_json(parse_text(text, label), label);
}

RunResult load_result(const std::string& file) {
  Reader rd(file);
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) rd.fail("", "cannot read the file");
  if (S_ISDIR(st.st_mode)) rd.fail("", "is a directory, not a result file");
  if (!S_ISREG(st.st_mode)) rd.fail("", "not a regular file (a FIFO, socket or device), not a result file");
  if (static_cast<uint64_t>(st.st_size) > kMaxResultBytes)
    rd.fail("", "larger than 256 MiB: not a result file mwbench wrote");
  // O_NONBLOCK: should a FIFO take the file's place meanwhile, open() does not wait for a writer.
  int fd = open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) rd.fail("", "cannot read the file");
  std::string text;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    rd.fail("", "not a regular file, not a result file");
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      rd.fail("", std::string("cannot read the file: ") + std::strerror(e));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxResultBytes) {
      close(fd);
      rd.fail("", "larger than 256 MiB: not a result file mwbench wrote");
    }
  }
  close(fd);
  RunResult run = parse_result(text, file);
  run.label = valid_utf8(std::filesystem::path(file).filename().string());
  return run;
}

}  // namespace mw
