#include "config.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <toml++/toml.h>

#include "workload_spec.h"

namespace mw {

using Kind = OptionSpec::Kind;

const std::vector<OptionSpec>& common_options() {
  static const std::vector<OptionSpec> opts = {
      {"ops", "operations to run, one job each", "", true},
      {"n", "operations per job (split across clients)", "10000", false, Kind::Int},
      {"clients", "concurrent clients (a list runs one job per value)", "1", true, Kind::Int},
      {"pipeline", "requests in flight per client", "1", true, Kind::Int},
      {"threads", "threads for pollable clients (blocking clients get one each)", "1", false, Kind::Int},
      {"duration", "run for this long instead of n ops (10s, 2m)", "", false},
      {"warmup", "untimed warm-up: ops (1000) or time (2s)", "0", false},
      {"rate", "open loop: ops/s across all clients (latency from each op's intended start)", "0", false, Kind::Num},
      {"timeout", "per-request timeout", "5s", false},
      {"name", "job name shown in tables", "", false},
  };
  return opts;
}

namespace {

void check_value(const OptionSpec& o, const std::string& v, const std::string& where) {
  auto bad = [&](const std::string& expected) {
    throw SetupError(where + ": " + o.name + " expects " + expected + ", got '" + v + "'");
  };
  switch (o.kind) {
    case Kind::Int:
      try {
        parse_size(v, o.name);
      } catch (const SetupError&) {
        bad("a whole number (k, M, G suffixes allowed)");
      }
      break;
    case Kind::Num: {
      char* end = nullptr;
      std::strtod(v.c_str(), &end);
      if (v.empty() || *end) bad("a number");
      break;
    }
    case Kind::Bool:
      if (v != "true" && v != "false" && v != "1" && v != "0" && v != "yes" && v != "no") bad("true or false");
      break;
    case Kind::Str: break;
  }
  if (!o.choices.empty() && std::find(o.choices.begin(), o.choices.end(), v) == o.choices.end()) {
    std::string c;
    for (auto& x : o.choices) c += (c.empty() ? "" : ", ") + x;
    bad("one of " + c);
  }
}

void apply_common(Job& j, const std::string& key, const std::string& v, const std::string& where) {
  try {
    if (key == "n") j.n = static_cast<uint64_t>(parse_size(v, "n"));
    else if (key == "clients") j.clients = static_cast<int>(parse_size(v, "clients"));
    else if (key == "pipeline") j.pipeline = static_cast<int>(parse_size(v, "pipeline"));
    else if (key == "threads") j.threads = static_cast<int>(parse_size(v, "threads"));
    else if (key == "duration") j.duration_s = parse_duration(v, "duration");
    else if (key == "rate") j.rate = std::stod(v);
    else if (key == "timeout") j.timeout_s = parse_duration(v, "timeout");
    else if (key == "name") j.name = v;
    else if (key == "warmup") {
      bool has_unit = !v.empty() && std::isalpha(static_cast<unsigned char>(v.back())) && v.back() != 'k' &&
                      v.back() != 'K' && v.back() != 'M';
      if (has_unit) j.warmup_s = parse_duration(v, "warmup");
      else j.warmup_ops = static_cast<uint64_t>(parse_size(v, "warmup"));
    }
  } catch (const SetupError& e) {
    throw SetupError(where + ": " + e.what());
  }
  if (j.clients < 1 || j.clients > 10000) throw SetupError(where + ": clients must be between 1 and 10000");
  if (j.pipeline < 1 || j.pipeline > 100000) throw SetupError(where + ": pipeline must be between 1 and 100000");
  if (j.timeout_s <= 0) throw SetupError(where + ": timeout must be above 0");
}

const OptionSpec* find_option(const std::vector<OptionSpec>& v, const std::string& k) {
  for (auto& o : v)
    if (o.name == k) return &o;
  return nullptr;
}

}  // namespace

std::vector<Job> expand_jobs(const std::string& adapter, const std::vector<Setting>& settings,
                             const std::string& source) {
  const AdapterSpec* spec = find_adapter(adapter);
  if (!spec) {
    std::string names;
    for (auto& a : adapters()) names += (names.empty() ? "" : ", ") + a.name;
    throw SetupError(source + ": unknown adapter '" + adapter + "'; expected one of " + names);
  }
  // Order the axes: ops outermost, then the other lists, the adapter's first list option last.
  std::vector<Setting> axes;
  std::vector<std::string> op_values;
  std::string side_axis;
  for (auto& o : spec->options) {
    bool shared = std::any_of(workload_options().begin(), workload_options().end(),
                              [&](const OptionSpec& w) { return w.name == o.name; });
    if (o.list && !shared) {  // the workload's lists are labelled, not the target
      side_axis = o.name;
      break;
    }
  }
  Job base;
  base.adapter = adapter;
  base.source = source;
  std::vector<Setting> lists;
  for (Setting s : settings) {
    if (auto alias = spec->aliases.find(s.key); alias != spec->aliases.end()) s.key = alias->second;
    const OptionSpec* o = find_option(common_options(), s.key);
    bool common = o != nullptr;
    if (!o) o = find_option(spec->options, s.key);
    if (o && o->repeat && s.values.size() > 1) {  // several values of one option, one per line
      std::string joined;
      for (auto& x : s.values) joined += (joined.empty() ? "" : "\n") + x;
      s.values = {joined};
    }
    if (!o) {
      std::string keys;
      for (auto& c : common_options()) keys += (keys.empty() ? "" : ", ") + c.name;
      for (auto& c : spec->options) keys += ", " + c.name;
      throw SetupError(s.where + ": unknown option '" + s.key + "' for " + adapter + "; expected one of " + keys);
    }
    if (s.values.empty()) throw SetupError(s.where + ": " + s.key + " needs a value");
    if (s.values.size() > 1 && !o->list) throw SetupError(s.where + ": " + s.key + " takes one value, not a list");
    if (s.key == "ops") {
      for (auto& v : s.values)
        if (std::find(spec->ops.begin(), spec->ops.end(), v) == spec->ops.end()) {
          std::string all;
          for (auto& x : spec->ops) all += (all.empty() ? "" : ", ") + x;
          throw SetupError(s.where + ": " + adapter + " has no op '" + v + "'; expected one of " + all);
        }
      op_values = s.values;
      continue;
    }
    for (auto& v : s.values) check_value(*o, v, s.where);
    if (s.values.size() > 1 || o->list) {
      lists.push_back(s);
    } else if (common) {
      apply_common(base, s.key, s.values[0], s.where);
    } else {
      base.opts[s.key] = s.values[0];
    }
  }
  Setting op_axis{"ops", op_values.empty() ? split_list(spec->default_ops) : op_values, "ops"};
  auto mix = std::find_if(settings.begin(), settings.end(), [](const Setting& s) { return s.key == "mix"; });
  if (spec->kv_ops.empty()) mix = settings.end();  // disk's --mix is its own (% reads)
  if (mix != settings.end()) {  // a workload is one job: the mix is its op
    if (!op_values.empty()) throw SetupError(mix->where + ": give --ops or --mix, not both");
    op_axis.values = {"mix"};
  }
  axes.push_back(op_axis);
  for (auto& l : lists)
    if (l.key != side_axis) axes.push_back(l);
  for (auto& l : lists)
    if (l.key == side_axis) axes.push_back(l);

  std::vector<Job> jobs{base};
  for (const Setting& ax : axes) {
    std::vector<Job> next;
    for (const Job& j : jobs)
      for (const std::string& v : ax.values) {
        Job k = j;
        if (ax.key == "ops") k.op = v;
        else if (find_option(common_options(), ax.key)) apply_common(k, ax.key, v, ax.where);
        else k.opts[ax.key] = v;
        if (ax.values.size() > 1 && ax.key != "ops" && ax.key != side_axis && ax.key != "name")
          k.opts["~label"] += " " + ax.key + "=" + v;
        next.push_back(std::move(k));
      }
    jobs = std::move(next);
  }
  for (Job& j : jobs) {
    try {  // a bad workload is an error before anything runs
      workload_of(j, *spec);
    } catch (const SetupError& e) {  // in a suite, where the mix was given; the CLI's message names the option
      std::string at = mix != settings.end() ? mix->where : source;
      if (at.rfind("--", 0) == 0 || at == "cli") throw;
      throw SetupError(at + ": " + e.what());
    }
    std::string label = j.opts["~label"];
    j.opts.erase("~label");
    if (j.name.empty()) j.name = adapter + " " + j.op + label;
    else if (!label.empty() || jobs.size() > 1) j.name += " " + j.op + label;
  }
  return jobs;
}

namespace {

std::string where(const std::string& file, const toml::node& n) {
  return file + ":" + std::to_string(n.source().begin.line);
}

std::string scalar(const toml::node& n, const std::string& at, const std::string& key) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto f = n.as_floating_point()) {
    double d = f->get();
    std::string s = std::to_string(d);
    if (d == std::floor(d)) s = std::to_string(static_cast<int64_t>(d));
    return s;
  }
  throw SetupError(at + ": " + key + " expects a string, number or boolean");
}

std::vector<Setting> settings_of(const toml::table& t, const std::string& file) {
  std::vector<Setting> out;
  for (auto&& [k, v] : t) {
    std::string key(k.str());
    std::replace(key.begin(), key.end(), '_', '-');
    if (key == "op") key = "ops";
    if (key == "adapter") continue;
    Setting s{key, {}, where(file, v)};
    if (auto arr = v.as_array()) {
      for (auto& e : *arr) s.values.push_back(scalar(e, where(file, e), key));
      if (s.values.empty()) throw SetupError(s.where + ": " + key + " is an empty list");

    } else if (v.is_table()) {
      throw SetupError(s.where + ": " + key + " expects a value or a list, not a table");
    } else {
      s.values.push_back(scalar(v, s.where, key));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Suite load_suite(const std::string& file) {
  if (access(file.c_str(), R_OK) != 0) throw SetupError(file + ": cannot read the suite file");
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw SetupError(file + ": cannot read the suite file");
  return parse_suite(text, file);
}

Suite parse_suite(std::string_view text, const std::string& file) {
  Suite suite;
  suite.file = file;
  suite.name = std::filesystem::path(file).stem().string();
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw SetupError(file + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  for (auto&& [k, v] : root) {
    std::string key(k.str());
    if (key != "suite" && key != "defaults" && key != "job")
      throw SetupError(where(file, v) + ": unknown section '" + key + "'; expected [suite], [defaults] or [[job]]");
  }
  if (auto s = root["suite"].as_table()) {
    for (auto&& [k, v] : *s) {
      std::string key(k.str());
      if (key == "name") suite.name = scalar(v, where(file, v), key);
      else if (key == "description") suite.description = scalar(v, where(file, v), key);
      else throw SetupError(where(file, v) + ": unknown key '" + key + "' in [suite]; expected name or description");
    }
  }
  std::vector<Setting> defaults;
  if (auto d = root["defaults"].as_table()) defaults = settings_of(*d, file);
  auto jobs = root["job"].as_array();
  if (!jobs || jobs->empty()) throw SetupError(file + ":1: no [[job]] tables: a suite needs at least one job");
  for (auto& node : *jobs) {
    auto t = node.as_table();
    if (!t) throw SetupError(where(file, node) + ": job must be a table ([[job]])");
    auto adapter = (*t)["adapter"].value<std::string>();
    if (!adapter) throw SetupError(where(file, node) + ": job has no adapter = \"...\"");
    std::vector<Setting> own = settings_of(*t, file);
    std::vector<Setting> all;
    const AdapterSpec* spec = find_adapter(*adapter);
    for (auto& d : defaults) {  // defaults apply where the job does not set the key and the adapter has it
      bool set = std::any_of(own.begin(), own.end(), [&](const Setting& s) { return s.key == d.key; });
      bool known = find_option(common_options(), d.key) || (spec && find_option(spec->options, d.key));
      if (!set && known) all.push_back(d);
    }
    all.insert(all.end(), own.begin(), own.end());
    std::string at = where(file, *(*t)["adapter"].node());
    for (Job& j : expand_jobs(*adapter, all, at)) suite.jobs.push_back(std::move(j));
  }
  return suite;
}

std::string default_suite_path() {
  namespace fs = std::filesystem;
  std::vector<fs::path> tries;
  if (const char* d = std::getenv("MWBENCH_CONFIGS")) tries.push_back(fs::path(d) / "quick.toml");
  tries.push_back("configs/quick.toml");
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    tries.push_back(exe.parent_path() / "../configs/quick.toml");
    tries.push_back(exe.parent_path() / "../share/mwbench/configs/quick.toml");
  }
  tries.push_back(fs::path(MWBENCH_SOURCE_DIR) / "configs/quick.toml");
  for (auto& p : tries)
    if (fs::exists(p)) return fs::weakly_canonical(p).string();
  return "configs/quick.toml";
}

}  // namespace mw
