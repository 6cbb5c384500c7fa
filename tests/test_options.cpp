// The typed adapter spec (options.h): options filled into each adapter's struct with the
// struct's defaults, ops as {name, enum} tables, and capabilities checked when jobs expand.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "adapters/gearman/gearman.h"
#include "api/options.h"
#include "config/config.h"
#include "config/workload_spec.h"
#include "queue/queue.h"
#include "tests/helpers.h"

using namespace mw;

namespace {
const OptionSpec& option(const AdapterSpec& a, const std::string& name) {
  for (auto& o : a.options)
    if (o.name == name) return o;
  FAIL("no option " << name);
  throw 0;
}
enum class Other { A };
}  // namespace

TEST_CASE("options: the struct's member initialisers are the defaults, the job's values fill it") {
  Job j = test::make_job("gearman", "submit-bg", 10);
  auto d = options_of<GearmanOptions>(j);
  CHECK(d.queue == "builtin");
  CHECK(d.payload_size == 64);
  CHECK_FALSE(d.per_job);
  CHECK_FALSE(d.workers.has_value());  // no default: one per client, decided by the adapter
  j.opts = {{"payload-size", "1k"},
            {"connection", "per-job"},
            {"workers", "3"},
            {"queue", "libsqlite3"},
            {"mysql-port", "3307"}};
  auto o = options_of<GearmanOptions>(j);
  CHECK(o.payload_size == 1024);
  CHECK(o.per_job);
  CHECK(o.workers == 3);
  CHECK(o.queue == "libsqlite3");
  CHECK(o.mysql_port == 3307);
  j.opts = {{"payload-size", "many"}};
  CHECK_THROWS_WITH_AS(options_of<GearmanOptions>(j),
                       doctest::Contains("--payload-size: payload-size expects a whole number"), SetupError);
}

TEST_CASE("options: help shows the struct's defaults, the kind comes from the member's type") {
  const AdapterSpec& g = *find_adapter("gearman");
  CHECK(option(g, "payload-size").def == "64");
  CHECK(option(g, "payload-size").kind == OptionSpec::Kind::Int);
  CHECK(option(g, "connection").def == "persistent");
  CHECK(option(g, "connection").choices == std::vector<std::string>{"persistent", "per-job"});
  CHECK(option(g, "workers").def.empty());
  const AdapterSpec& d = *find_adapter("disk");
  CHECK(option(d, "direct").kind == OptionSpec::Kind::Bool);
  CHECK(option(d, "direct").def == "true");
  CHECK(option(d, "size").def == "256M");
  const AdapterSpec& t = *find_adapter("tc");
  CHECK(option(t, "kind").choices == std::vector<std::string>{"hash", "btree", "memory", "memtree"});
  CHECK(option(t, "kind").def == "hash");
  CHECK(option(t, "zipf-theta").kind == OptionSpec::Kind::Num);
  CHECK(option(t, "zipf-theta").def == "0.99");
}

TEST_CASE("options: every adapter's options are typed, named once, and its ops are a table of one enum (+ queue ops)") {
  for (const AdapterSpec& a : adapters()) {
    CAPTURE(a.name);
    std::set<std::string> names;
    for (const OptionSpec& o : a.options) {
      CAPTURE(o.name);
      CHECK(names.insert(o.name).second);
      CHECK(o.store != nullptr);
      CHECK(o.owner != nullptr);
    }
    REQUIRE_FALSE(a.ops.empty());
    // one enum of the adapter's own, and the queue ops every queue backend shares (queue.h)
    for (const OpSpec& op : a.ops) CHECK((*op.type == *a.ops[0].type || *op.type == typeid(QueueOp)));
  }
}

TEST_CASE("options: the workload's scan-length only on adapters that scan") {
  for (const AdapterSpec& a : adapters()) {
    CAPTURE(a.name);
    bool scans = std::find(a.kv_ops.begin(), a.kv_ops.end(), KvOp::Scan) != a.kv_ops.end();
    bool shown = std::any_of(a.options.begin(), a.options.end(), [](auto& o) { return o.name == "scan-length"; });
    CHECK(shown == scans);
  }
}

TEST_CASE("options: redis, memcached, http and couchdb fill their structs; help shows the struct's defaults") {
  const AdapterSpec& r = *find_adapter("redis");
  CHECK(option(r, "port").def == "6379");
  CHECK(option(r, "max-reply").def == "512M");
  CHECK(option(r, "persistence").choices ==
        std::vector<std::string>{"none", "rdb", "aof", "aof-no", "aof-everysec", "aof-always"});
  CHECK(option(r, "keyspace").def == "10000");
  CHECK(option(r, "value-size").max == 512 << 20);
  const AdapterSpec& m = *find_adapter("memcached");
  CHECK(option(m, "port").def == "11211");
  CHECK(option(m, "memory").def.empty());
  CHECK(option(m, "memory").kind == OptionSpec::Kind::Int);
  const AdapterSpec& h = *find_adapter("http");
  CHECK(option(h, "keepalive").def == "false");
  CHECK(option(h, "max-body").def == "64M");
  CHECK(option(h, "header").repeat);
  CHECK(option(h, "credentials-env").def == "MWBENCH_HTTP_CREDENTIALS");
  const AdapterSpec& c = *find_adapter("couchdb");
  CHECK(option(c, "keepalive").def == "true");
  CHECK(option(c, "credentials-env").def == "COUCHDB_CREDENTIALS");
  CHECK(option(c, "server-binary").def == "pouchdb-server");
  CHECK(option(c, "engine").choices == option(h, "engine").choices);
  // A value reaches the struct checked: a non-number for an Int is refused naming the option.
  CHECK_THROWS_WITH_AS(expand_jobs("couchdb", {{"batch", {"lots"}, "cli"}}, "cli", 0), doctest::Contains("batch"),
                       SetupError);
}

TEST_CASE("options: op_of maps the job's op through the table; an unknown op is no silent default") {
  Job j = test::make_job("gearman", "drain", 10);
  CHECK_THROWS_AS(op_of<Other>(j), std::logic_error);  // another adapter's enum
  j.op = "read-by-id";  // not an op of gearman: once mapped to the last op by a ternary chain
  CHECK_THROWS_WITH_AS(op_of<Other>(j), doctest::Contains("has no op 'read-by-id'"), std::logic_error);
  CHECK_THROWS_WITH_AS(expand_jobs("sqlite", {{"ops", {"read-by-id"}, "cli"}}, "cli", 0),
                       doctest::Contains("sqlite has no op 'read-by-id'; expected one of read-all, select-by-id"),
                       SetupError);
}

TEST_CASE("options: workload options are the core's, filled into WorkloadOptions for every keyed adapter") {
  Job j = test::make_job("tc", "put", 10);
  CHECK_FALSE(workload_options_of(j).keyspace.has_value());
  j.opts = {{"keyspace", "1k"}, {"value-size", "10-20"}, {"zipf-theta", "0.5"}, {"load", "false"}};
  auto w = workload_options_of(j);
  CHECK(w.keyspace == 1024);
  CHECK(w.value_size == "10-20");
  CHECK(w.zipf_theta == doctest::Approx(0.5));
  CHECK(w.load == false);
}

TEST_CASE("options: a secret option takes env:VAR and file:PATH, read when the jobs expand; errors name no value") {
  test::TempDir tmp;
  const std::string pw = tmp.path + "/pw";
  std::ofstream(pw) << "file-pass word\n";  // one trailing newline dropped, a space kept
  setenv("MWBENCH_TEST_SECRET_OPT", "env-pass", 1);
  auto expand = [](const std::string& key, const std::string& v) {
    return expand_jobs("gearman", {{key, {v}, "--" + key}}, "cli").at(0).opts.at(key);
  };
  CHECK(expand("mysql-password", "file:" + pw) == "file-pass word");
  CHECK(expand("mysql-password", "env:MWBENCH_TEST_SECRET_OPT") == "env-pass");
  CHECK(expand("mysql-password", "plain") == "plain");
  CHECK(expand("pg-conninfo", "env:MWBENCH_TEST_SECRET_OPT") == "env-pass");
  Job h = expand_jobs("http", {{"url", {"env:MWBENCH_TEST_SECRET_OPT", "http://h/"}, "--url"}}, "cli").at(0);
  CHECK(h.opts.at("url") == "env-pass");  // each value of a list on its own
  Job hd = expand_jobs("http", {{"header", {"Accept: x", "file:" + pw}, "--header"}}, "cli").at(0);
  CHECK(hd.opts.at("header") == "Accept: x\nfile-pass word");  // each line of a repeated option
  CHECK(expand("mysql-user", "env:MWBENCH_TEST_SECRET_OPT") == "env:MWBENCH_TEST_SECRET_OPT");  // not a secret option
  auto refused = [&](const std::string& v) {
    try {
      expand("mysql-password", v);
    } catch (const SetupError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(
      refused("env:MWBENCH_TEST_UNSET_VAR") ==
      "--mysql-password: mysql-password: the variable MWBENCH_TEST_UNSET_VAR (env:MWBENCH_TEST_UNSET_VAR) is not set");
  CHECK(refused("file:" + tmp.path + "/missing") ==
        "--mysql-password: mysql-password: cannot read file:" + tmp.path + "/missing: No such file or directory");
  CHECK(refused("file:" + tmp.path) == "--mysql-password: mysql-password: file:" + tmp.path + " is not a regular file");
  std::ofstream(tmp.path + "/empty").flush();
  CHECK(refused("file:" + tmp.path + "/empty") ==
        "--mysql-password: mysql-password: file:" + tmp.path + "/empty is empty");
  setenv("MWBENCH_TEST_SECRET_OPT", "", 1);
  CHECK(refused("env:MWBENCH_TEST_SECRET_OPT").find("is empty") != std::string::npos);
  unsetenv("MWBENCH_TEST_SECRET_OPT");
  for (const AdapterSpec& a : adapters())  // every option that takes a password, or a string holding one
    for (const OptionSpec& o : a.options)
      if ((o.name.find("password") != std::string::npos && o.name.find("-env") == std::string::npos) ||
          o.name.find("conninfo") != std::string::npos || o.name == "url" || o.name == "header")
        CHECK_MESSAGE(o.secret, a.name << " --" << o.name);
}
