#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "queue/queue.h"
#include "results/decision_json.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/tables.h"
#include "results/writer.h"
#include "util/text.h"

namespace mw {

using nlohmann::json;

double series_rps(const JobResult& j, size_t k) {
  double start = static_cast<double>(k) * j.series_interval_s, elapsed = j.elapsed_s;
  // the last one may be partial; one past the job's end (ops that completed after the last
  // client's end was taken) has its whole length, not a sliver that would make its rate absurd
  double len = elapsed - start > 1e-6 ? std::min(elapsed - start, j.series_interval_s) : j.series_interval_s;
  return static_cast<double>(j.series[k].ok) / len;
}

double op_rps(const JobResult& j, const OpFigures& op) {
  return j.elapsed_s > 0 ? static_cast<double>(op.ops_ok) / j.elapsed_s : 0;
}

std::optional<RpsRange> rps_range(const JobResult& j) {
  if (j.repeats.empty()) return std::nullopt;
  RpsRange r{j.rps, j.rps};
  for (auto& k : j.repeats) r.min = std::min(r.min, k.rps), r.max = std::max(r.max, k.rps);
  return r;
}

namespace {

// A decision: its rounds at the top, each alternative's verdict in its job's row (jobs[].decision),
// or, for commands (`mwbench decide`), as the top-level "decisions" (and "decision" when there is
// one).
void put_decide(json& out, const DecideResult& d) {
  out["decide"] = decide_json(d);
  json decisions = json::array();
  for (const Decision& x : d.decisions) {
    const int job = d.alternatives.at(static_cast<size_t>(x.alternative)).job;
    if (job >= 0 && static_cast<size_t>(job) < out["jobs"].size())
      out["jobs"][static_cast<size_t>(job)]["decision"] = decision_json(d, x);
    else
      decisions.push_back(decision_json(d, x));
  }
  if (decisions.empty()) return;
  if (decisions.size() == 1) out["decision"] = decisions[0];
  out["decisions"] = std::move(decisions);
}

}  // namespace

json to_json(const RunResult& r) {
  json out = run_table().write(r, fields::Up{});
  if (r.decide) put_decide(out, *r.decide);
  sanitize_json(out);  // names, replies and server info may hold bytes that are not UTF-8
  return out;
}

std::string result_text(const RunResult& r) {
  json j = to_json(r);
  std::string out = "{\n";
  bool first = true;
  for (auto& [k, v] : j.items()) {
    out += std::string(first ? "" : ",\n") + "  " + json(k).dump() + ": ";
    first = false;
    if (k != "jobs") {
      out += v.dump();
      continue;
    }
    out += "[";
    for (size_t i = 0; i < v.size(); ++i) out += std::string(i ? "," : "") + "\n    " + v[i].dump();
    out += "\n  ]";
  }
  out += "\n}\n";
  // Tests set MWBENCH_CHECK_RESULTS=1 (tests/CMakeLists.txt): every result any of them writes is
  // read back by the loader first (report and compare would read it), and one it refuses is a bug.
  if (const char* check = std::getenv("MWBENCH_CHECK_RESULTS"); check && std::string_view(check) == "1") {
    try {
      (void)parse_result(out, "the result being written");
    } catch (const SetupError& e) {
      throw std::logic_error(std::string("mwbench wrote a result its own loader refuses: ") + e.what());
    }
  }
  return out;
}

namespace {

// What is at `path` when it is there and is not a regular file ("" otherwise).
std::string not_regular(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  return S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
}

// One identity for a path: its device and inode when it is there, else its absolute form.
std::string identity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  std::error_code ec;
  return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec).string();
}

}  // namespace

void check_output_targets(const std::vector<std::pair<std::string, std::string>>& outputs,
                          const std::vector<std::string>& inputs) {
  std::vector<std::string> seen;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    const std::string head = option + " " + printable(path) + ": ";
    if (path.empty()) throw SetupError(option + ": an empty path");
    if (std::string what = not_regular(path); !what.empty())
      throw SetupError(head + "is " + what + ", not a regular file: give the path of a file to write");
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw SetupError(head + "its directory " + printable(dir.string()) + " does not exist");
    if (access(dir.c_str(), W_OK) != 0)
      throw SetupError(head + "its directory " + printable(dir.string()) + " cannot be written");
    const std::string id = identity(path);
    for (const std::string& in : inputs)
      if (identity(in) == id) throw SetupError(head + "is an input of this command: it would be overwritten");
    for (size_t k = 0; k < i; ++k)
      if (seen[k] == id)
        throw SetupError(head + "the same file as " + outputs[k].first + ": give each output its own file");
    seen.push_back(id);
  }
}

namespace {
// `text` in a temporary file beside `path` (removed if the write fails); returns its name.
std::string write_temp(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) {
    const int e = errno;
    unlink(tmp.c_str());
    throw SetupError("cannot write " + path + ": " + std::strerror(e));
  }
  return tmp;
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& text) {
  if (std::string what = not_regular(path); !what.empty())
    throw SetupError("cannot write " + path + ": it is " + what + ", not a regular file");
  const std::string tmp = write_temp(path, text);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    throw SetupError("cannot write " + path + ": " + std::strerror(e));
  }
}

void write_file_new(const std::string& path, const std::string& text) {
  const std::string tmp = write_temp(path, text);
  // link() fails with EEXIST instead of replacing: an earlier file is never overwritten.
  const int rc = link(tmp.c_str(), path.c_str()), e = errno;
  unlink(tmp.c_str());
  if (rc != 0 && e == EEXIST) throw SetupError(path + " exists: give --force to replace it, or another file");
  if (rc != 0) throw SetupError("cannot write " + path + ": " + std::strerror(e));
}

std::string write_result_file(const RunResult& r, const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw SetupError("cannot create results directory " + dir + ": " + std::strerror(errno));
  std::string stamp = r.started_at;
  for (char& ch : stamp)
    if (ch == ':') ch = '-';
  std::string suite;
  for (char ch : r.suite) suite += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_') ? ch : '_';
  std::string base = dir + "/" + stamp + "-" + suite;
  const std::string text = result_text(r);  // before the temp file exists: nothing left behind
  std::string tmp = base + ".json.tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      unlink(tmp.c_str());
      throw SetupError("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  // link() fails with EEXIST instead of replacing: an earlier file is never overwritten.
  for (int k = 0; k < 1000; ++k) {
    std::string path = base + (k ? "-" + std::to_string(k) : "") + ".json";
    if (link(tmp.c_str(), path.c_str()) == 0) {
      unlink(tmp.c_str());
      return path;
    }
    if (errno != EEXIST) break;
  }
  int e = errno;
  unlink(tmp.c_str());
  throw SetupError("cannot write result file in " + dir + ": " + std::strerror(e));
}

}  // namespace mw
