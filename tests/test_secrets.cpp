// Secrets kept out of other processes (issue 39): a managed server's environment is built for it,
// never mwbench's own ($PGPASSWORD, tokens); gearmand's queue passwords reach it through a file
// that is gone once it answers, never its command line; env:VAR and file:PATH values work end to
// end against real servers (PostgreSQL and MariaDB started here).
#include <doctest/doctest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "adapters/gearman/gearman.h"
#include "api/options.h"
#include "config/config.h"
#include "core/runner.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "util/net.h"
#if MWBENCH_WITH_POSTGRES
#include "adapters/postgres/pg.h"
#endif
#if MWBENCH_WITH_MARIADB
#include "adapters/mariadb/my.h"
#endif

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

// Every file under `dir` holding `needle` (its name, or "" when none does).
std::string file_holding(const std::string& dir, const std::string& needle) {
  std::error_code ec;
  for (auto& f : std::filesystem::recursive_directory_iterator(dir, ec))
    if (f.is_regular_file(ec) && slurp(f.path().string()).find(needle) != std::string::npos) return f.path().string();
  return "";
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

// The gearman job of `queue` as the command line gives it: through expand_jobs, where env:VAR and
// file:PATH are read.
Job gearman_cli_job(const std::vector<Setting>& own) {
  std::vector<Setting> settings = {{"n", {"50"}, "-n"}, {"timeout", {"5s"}, "--timeout"}};
  settings.insert(settings.end(), own.begin(), own.end());
  std::vector<Job> jobs = expand_jobs("gearman", settings, "cli");
  REQUIRE(jobs.size() == 1);
  return jobs[0];
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

#if MWBENCH_WITH_POSTGRES
TEST_CASE("secrets: gearmand's postgres queue password is never on its command line; file:PATH works end to end") {
  pg::Server pgs = pg::server_of(test::make_job("postgres", "select", 1), true);
  {
    pg::Conn c(pgs.ep, pg::deadline(10));
    c.exec("CREATE ROLE mw_gq LOGIN PASSWORD 'pw SECRET-pg-1''s'; GRANT CREATE ON SCHEMA public TO mw_gq",
           pg::deadline(10));
  }
  const std::string base = "host=127.0.0.1 port=" + std::to_string(pgs.svc->port()) + " user=mw_gq dbname=postgres";
  test::TempDir tmp;
  const std::string file = tmp.path + "/conninfo";
  std::ofstream(file) << base << " password='pw SECRET-pg-1\\'s'\n";

  GearmanOptions o = options_of<GearmanOptions>(
      gearman_cli_job({{"queue", {"postgres"}, "--queue"}, {"pg-conninfo", {"file:" + file}, "--pg-conninfo"}}));
  CHECK(o.pg_conninfo == base + " password='pw SECRET-pg-1\\'s'");  // read from the file
  auto g = gearman::start_gearmand("postgres", o, 5);               // its queue logged in: the password reached it
  const pid_t pid = g->server->pid();
  const std::string cmdline = slurp("/proc/" + std::to_string(pid) + "/cmdline");
  CAPTURE(cmdline);
  CHECK(cmdline.find("SECRET") == std::string::npos);
  CHECK(cmdline.find("--config-file=") != std::string::npos);
  CHECK(cmdline.find("--libpq-table=") != std::string::npos);
  CHECK(slurp("/proc/" + std::to_string(pid) + "/environ").find("SECRET") == std::string::npos);
  CHECK(file_holding(g->server->dir(), "SECRET") == "");  // the file it read is gone
  g.reset();

  // The whole job, its conninfo from the file: every job queued in PostgreSQL and verified.
  Job j = gearman_cli_job({{"queue", {"postgres"}, "--queue"}, {"pg-conninfo", {"file:" + file}, "--pg-conninfo"}});
  JobResult r = run_one(j);
  CAPTURE(r.message);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 50);
  CHECK(r.verify.ok);

  // A wrong password: a set-up error, which names neither password.
  std::ofstream(file) << base << " password='wrong SECRET-pg-2'\n";
  r = run_one(
      gearman_cli_job({{"queue", {"postgres"}, "--queue"}, {"pg-conninfo", {"file:" + file}, "--pg-conninfo"}}));
  RunResult run;
  run.jobs = {r};
  redact_result(run);
  CAPTURE(run.jobs[0].message);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(run.jobs[0].message.find("SECRET") == std::string::npos);
  CHECK(run.jobs[0].job.opts.at("pg-conninfo").find("SECRET") == std::string::npos);
}

TEST_CASE("secrets: a conninfo password with an unquoted space is a set-up error that shows neither word") {
  // libpq reads "password=abc SECRET-word-2" as the password abc, then a word without '='.
  Job j = gearman_cli_job(
      {{"queue", {"postgres"}, "--queue"},
       {"pg-conninfo", {"host=127.0.0.1 port=1 password=first-SECRET-1 SECRET-word-2"}, "--pg-conninfo"}});
  JobResult r = run_one(j);
  RunResult run;
  run.command = "gearman --pg-conninfo 'host=127.0.0.1 port=1 password=first-SECRET-1 SECRET-word-2'";
  run.jobs = {r};
  redact_result(run);
  const JobResult& shown = run.jobs[0];
  CAPTURE(shown.message);
  CHECK(shown.state == JobResult::State::SetupFailed);
  CHECK(shown.message.find("SECRET") == std::string::npos);
  CHECK(shown.job.opts.at("pg-conninfo") == "host=127.0.0.1 port=1 password=***");
  CHECK(run.command.find("SECRET") == std::string::npos);
  // The postgres adapter hands it to libpq, whose own message quotes the second word.
  Job p = test::make_job("postgres", "select", 10);
  p.opts["conninfo"] = "host=127.0.0.1 port=1 password=first-SECRET-3 SECRET-word-4";
  run.jobs = {run_one(p)};
  CAPTURE(run.jobs[0].message);
  CHECK(run.jobs[0].state == JobResult::State::SetupFailed);
  CHECK(run.jobs[0].message.find("missing \"=\"") != std::string::npos);
  redact_result(run);
  CHECK(run.jobs[0].message.find("SECRET") == std::string::npos);
}
#endif

#if MWBENCH_WITH_MARIADB
TEST_CASE("secrets: gearmand's mysql queue password (env:VAR) is never on its command line, and logs in") {
  mdb::Server my = mdb::server_of(test::make_job("mariadb", "select", 1), true);
  {
    mdb::Conn c(my.ep);
    c.exec("CREATE DATABASE mwgq");
    c.exec("CREATE USER 'mw_gq'@'127.0.0.1' IDENTIFIED BY 'pw-SECRET-my-1'");
    c.exec("GRANT ALL ON mwgq.* TO 'mw_gq'@'127.0.0.1'");
  }
  EnvVar pw("MWBENCH_TEST_GQ_PW", "pw-SECRET-my-1");
  Job j = gearman_cli_job({{"queue", {"mysql"}, "--queue"},
                           {"mysql-host", {"127.0.0.1"}, "--mysql-host"},
                           {"mysql-port", {std::to_string(my.svc->port())}, "--mysql-port"},
                           {"mysql-user", {"mw_gq"}, "--mysql-user"},
                           {"mysql-db", {"mwgq"}, "--mysql-db"},
                           {"mysql-password", {"env:MWBENCH_TEST_GQ_PW"}, "--mysql-password"}});
  GearmanOptions o = options_of<GearmanOptions>(j);
  CHECK(o.mysql_password == "pw-SECRET-my-1");
  auto g = gearman::start_gearmand("mysql", o, 5);  // its queue logged in: the password reached it
  const std::string cmdline = slurp("/proc/" + std::to_string(g->server->pid()) + "/cmdline");
  CAPTURE(cmdline);
  CHECK(cmdline.find("SECRET") == std::string::npos);
  CHECK(cmdline.find("--mysql-user=mw_gq") != std::string::npos);
  CHECK(file_holding(g->server->dir(), "SECRET") == "");
  g.reset();
  JobResult r = run_one(j);
  CAPTURE(r.message);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 50);
}
#endif
