// The redaction rule (redact.h) applied to every field of a run's result its tables mark as free
// text, and the secret values the jobs were given masked wherever a server echoed them back.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/adapter.h"
#include "results/decision.h"
#include "results/result.h"
#include "results/tables.h"
#include "util/redact.h"

namespace mw {

namespace {

constexpr std::string_view kMask = "***";

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
bool env_option(const std::string& k) { return ends_with(k, "-env") || ends_with(k, "_env"); }

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    if (i + 2 < in.size()) v |= static_cast<uint8_t>(in[i + 2]);
    for (size_t k = 0; k < 4; ++k) out += k <= in.size() - i ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string url_encoded(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~')
      out += c;
    else
      out += '%', out += kHex[u >> 4], out += kHex[u & 15];
  }
  return out;
}

// The secret values a job was given: secret options' values (those redact() masks whole), the
// variables *-env options name (their defaults too: $PGPASSWORD), the passwords in URLs; and
// "user:password" pairs (HTTP Basic) from a user option or a URL.
void job_secrets(const Job& job, std::vector<std::string>& out) {
  std::vector<std::string> users, values;
  if (const AdapterSpec* spec = find_adapter(job.adapter))
    for (const OptionSpec& o : spec->options)
      if (env_option(o.name) && !job.has(o.name) && !o.def.empty())
        if (const char* e = std::getenv(o.def.c_str()); e && *e) values.push_back(e);
  for (const auto& [key, v] : job.opts) {
    std::string k = key;
    for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!v.empty() && redact(k, v) == kMask) values.push_back(v);
    if (k.find("conninfo") != std::string::npos)
      for (std::string& c : conninfo_secrets(v)) values.push_back(std::move(c));
    if (env_option(k))
      if (const char* e = std::getenv(v.c_str()); e && *e) values.push_back(e);
    if (k == "user" || k == "username" || ends_with(k, "-user")) users.push_back(v);
    for (size_t p = v.find("://"); p != std::string::npos; p = v.find("://", p + 3)) {  // scheme://user:pass@
      const size_t at = v.find('@', p), end = v.find_first_of("/ ", p + 3);
      if (at == std::string::npos || (end != std::string::npos && end < at)) continue;
      const std::string info = v.substr(p + 3, at - p - 3);
      out.push_back(info);
      if (size_t c = info.find(':'); c != std::string::npos) values.push_back(info.substr(c + 1));
    }
  }
  for (const std::string& v : values) {
    out.push_back(v);
    for (const std::string& u : users) out.push_back(u + ":" + v);
  }
}

// Every known secret value, its base64 and URL-encoded forms, replaced by *** in `s`. Values
// shorter than 4 bytes are left to the patterns (masking every "ab" would garble the text).
void mask_known(std::string& s, const std::vector<std::string>& secrets) {
  for (const std::string& raw : secrets)
    for (const std::string& form : {raw, base64(raw), url_encoded(raw)}) {
      if (form.size() < 4) continue;
      for (size_t p = s.find(form); p != std::string::npos; p = s.find(form, p + kMask.size()))
        s.replace(p, form.size(), kMask);
    }
}

// Longest first (a pair before its password), once each.
void order(std::vector<std::string>& secrets) {
  std::sort(secrets.begin(), secrets.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  secrets.erase(std::unique(secrets.begin(), secrets.end()), secrets.end());
}

// The one rule for a string shown anywhere: the patterns, then the known secret values.
void redact_string(std::string& s, const std::vector<std::string>& secrets) {
  s = redact_text(s);
  mask_known(s, secrets);
}

}  // namespace

void redact_result(RunResult& run) {
  std::vector<std::string> secrets;  // collected before any job's options are masked
  for (auto& j : run.jobs) job_secrets(j.job, secrets);
  order(secrets);
  // Every field the tables mark as free text (tables.cpp): the rule, then the secrets masked.
  fields::Redactor r;
  r.text = [&](std::string& s) { redact_string(s, secrets); };
  r.keyed = [&](const std::string& key, std::string& v) {
    v = redact(key, v);
    mask_known(v, secrets);
  };
  run_table().redact(run, r);
  if (run.decide) {  // the alternatives' names (a job's, or a command line as given) and why a run failed
    std::vector<std::string*> texts{&run.decide->stop_detail};
    for (auto& a : run.decide->alternatives) texts.push_back(&a.name);
    for (auto& k : run.decide->rounds)
      for (auto& x : k.runs) texts.push_back(&x.why);
    for (std::string* t : texts) redact_string(*t, secrets);
  }
}

std::string redact_for(const Job& job, const std::string& text) {
  std::vector<std::string> secrets;
  job_secrets(job, secrets);
  order(secrets);
  std::string s = text;
  redact_string(s, secrets);
  return s;
}

}  // namespace mw
