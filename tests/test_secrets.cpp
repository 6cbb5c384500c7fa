// Secrets kept out of other processes (issue 39): a managed server's environment is built for it,
// never mwbench's own ($PGPASSWORD, tokens).
#include <doctest/doctest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "services/services.h"
#include "tests/helpers.h"
#include "util/net.h"

using namespace mw;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// /proc/PID/environ (or any NUL-separated file) as its strings.
std::vector<std::string> nul_split(const std::string& raw) {
  std::vector<std::string> out;
  for (size_t start = 0; start < raw.size();) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    out.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A variable of mwbench's environment, set for one case and removed after it.
struct EnvVar {
  std::string name;
  EnvVar(std::string n, const std::string& value) : name(std::move(n)) { setenv(name.c_str(), value.c_str(), 1); }
  ~EnvVar() { unsetenv(name.c_str()); }
};

// A managed server (memcached: it leaves its environment where /proc shows it; redis-server and
// postgres write their process titles there) with a set-up step that saves its own environment,
// as user `user` ("": mwbench's).
void check_own_environment(const std::string& user) {
  EnvVar pg("PGPASSWORD", "pg-SECRET-env-1"), token("MWBENCH_TEST_API_TOKEN", "token-SECRET-env-2");
  ServiceSpec s;
  s.name = "memcached";
  s.binary = "memcached";
  s.args = {"-l", "127.0.0.1", "-p", "{port}", "-U", "0"};
  if (user.empty() && geteuid() == 0) s.args.insert(s.args.end(), {"-u", "root"});
  s.user = user;
  s.setup = {{"/bin/sh", "-c", "cat /proc/self/environ > setup.env"}};  // what initdb would have had
  s.probe = [](int port) { return tcp_probe("127.0.0.1", port, "version\r\n", "VERSION"); };
  Service svc(s);
  const std::vector<std::string> server = nul_split(slurp("/proc/" + std::to_string(svc.pid()) + "/environ"));
  const std::vector<std::string> setup = nul_split(slurp(svc.dir() + "/setup.env"));
  for (const auto* env : {&server, &setup}) {
    CAPTURE(env->size());
    REQUIRE(!env->empty());
    for (const std::string& e : *env) {
      CAPTURE(e);
      CHECK(e.find("SECRET") == std::string::npos);
      CHECK(e.rfind("PGPASSWORD=", 0) != 0);
    }
    CHECK(has(*env, "HOME=" + svc.dir()));
    CHECK(std::any_of(env->begin(), env->end(), [](const std::string& e) { return e.rfind("PATH=", 0) == 0; }));
  }
  CHECK(server.size() <= 6);  // PATH, HOME, TMPDIR, LANG, LC_ALL: nothing else
}

}  // namespace

TEST_CASE("secrets: a managed server and its set-up get an environment of their own, none of mwbench's") {
  check_own_environment("");
}

TEST_CASE("secrets: a server run as another user (as PostgreSQL's initdb and postgres are) gets none either") {
  if (geteuid() != 0 || !getpwnam("postgres")) {
    MESSAGE("as root, with a postgres user, only (as PostgreSQL's managed servers run)");
    return;
  }
  check_own_environment("postgres");
}
