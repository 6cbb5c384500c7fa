#include "api/options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "util/redact.h"

namespace mw {

std::string show_count(double v) {  // 64M rather than 67108864; 0.999 as it is
  if (v != std::floor(v) || std::abs(v) >= 9e18) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
  auto i = static_cast<int64_t>(v);
  if (i >= (1ll << 30) && i % (1ll << 30) == 0) return std::to_string(i >> 30) + "G";
  if (i >= (1ll << 20) && i % (1ll << 20) == 0) return std::to_string(i >> 20) + "M";
  return std::to_string(i);
}

std::string range_text(const OptionSpec& o) { return show_count(o.min) + " to " + show_count(o.max); }

void check_option_value(const OptionSpec& o, const std::string& v, const std::string& where) {
  using Kind = OptionSpec::Kind;
  auto bad = [&](const std::string& expected) {
    throw SetupError(where + ": " + o.name + " expects " + expected + ", got '" + redact(o.name, v) + "'");
  };
  std::string range = "from " + range_text(o);
  switch (o.kind) {
    case Kind::Int: {
      int64_t x = -1;
      try {
        x = parse_size(v, o.name);
      } catch (const SetupError&) {}
      if (static_cast<double>(x) < o.min || static_cast<double>(x) > o.max || x < 0)
        bad("a whole number " + range + " (k, M, G suffixes allowed)");
      break;
    }
    case Kind::Num: {
      char* end = nullptr;
      errno = 0;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || errno == ERANGE || !std::isfinite(x) || x < o.min || x > o.max) bad("a number " + range);
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

namespace {

constexpr size_t kMaxSecretFile = 64 << 10;

// A file:PATH's contents, without one trailing newline; throws the reason (no value) otherwise.
std::string read_secret_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) throw SetupError(std::string("cannot read file:") + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw SetupError("file:" + path + " is not a regular file");
  }
  std::string out;
  char b[4096];
  for (ssize_t n; (n = read(fd, b, sizeof b)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || out.size() + static_cast<size_t>(n) > kMaxSecretFile) {
      const int err = errno;
      close(fd);
      throw SetupError("file:" + path + (n < 0 ? std::string(": ") + std::strerror(err) : " is larger than 64 KiB"));
    }
    out.append(b, static_cast<size_t>(n));
  }
  close(fd);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  if (!out.empty() && out.back() == '\r') out.pop_back();
  if (out.empty()) throw SetupError("file:" + path + " is empty");
  return out;
}

std::string resolve_one(const std::string& v) {
  if (!is_secret_reference(v)) return v;
  std::string out;
  if (v.rfind("file:", 0) == 0) {
    out = read_secret_file(v.substr(5));
  } else {
    const char* e = std::getenv(v.substr(4).c_str());
    if (!e) throw SetupError("the variable " + v.substr(4) + " (" + v + ") is not set");
    if (!*e) throw SetupError("the variable " + v.substr(4) + " (" + v + ") is empty");
    out = e;
  }
  if (out.find('\0') != std::string::npos) throw SetupError(v + " holds a NUL byte");
  return out;
}

}  // namespace

std::string resolve_secret(const OptionSpec& o, const std::string& v, const std::string& where) {
  if (!o.secret) return v;
  try {
    if (!o.repeat) return resolve_one(v);
    std::string out;
    for (size_t start = 0; start <= v.size();) {
      size_t nl = std::min(v.find('\n', start), v.size());
      out += (start ? "\n" : "") + resolve_one(v.substr(start, nl - start));
      start = nl + 1;
    }
    return out;
  } catch (const SetupError& e) {
    throw SetupError(where + ": " + o.name + ": " + e.what());
  }
}

bool parse_bool_word(const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on" || v.empty()) return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw SetupError("expected true or false, got '" + v + "'");
}

namespace detail {

int64_t parse_int(const std::string& v) {
  try {
    return parse_size(v, "value");
  } catch (const SetupError&) {
    throw SetupError("expected a whole number, optionally with k, M or G, got '" + v + "'");
  }
}

double parse_num(const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x)) throw SetupError("expected a number, got '" + v + "'");
  return x;
}

const AdapterSpec& spec_of(const Job& job) {
  const AdapterSpec* s = find_adapter(job.adapter);
  if (!s) throw std::logic_error("no adapter '" + job.adapter + "'");
  return *s;
}

void fill_options(const Job& job, const std::vector<OptionSpec>& options, const std::type_info& owner, void* into) {
  for (const OptionSpec& o : options) {
    if (!o.store || *o.owner != owner) continue;  // the core's options (the workload's) are not the adapter's
    auto it = job.opts.find(o.name);
    if (it == job.opts.end()) continue;
    // Numbers are checked again here, for jobs built without the command line or a suite (tests,
    // the runner's own jobs): no value reaches an adapter's arithmetic out of its range.
    if (o.kind == OptionSpec::Kind::Int || o.kind == OptionSpec::Kind::Num)
      check_option_value(o, it->second, "--" + o.name);
    try {
      o.store(into, it->second);
    } catch (const SetupError& e) {
      throw SetupError("--" + o.name + ": " + e.what());
    }
  }
}

}  // namespace detail
}  // namespace mw
