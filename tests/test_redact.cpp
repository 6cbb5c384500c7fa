// Issue 10, class 9: one redaction rule for everything written or printed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "results/result.h"
#include "util/conninfo.h"
#include "util/redact.h"

using namespace mw;

namespace {
bool leaks(const std::string& s) { return s.find("SECRET") != std::string::npos; }
}  // namespace

TEST_CASE("redact: URLs lose their credentials, with or without a scheme") {
  CHECK(redact_url("http://admin:pw@127.0.0.1:5984/db") == "http://127.0.0.1:5984/db");
  CHECK(redact_url("http://127.0.0.1:5984/a@b") == "http://127.0.0.1:5984/a@b");
  CHECK(redact_url("http://h:80/a@b") == "http://h:80/a@b");
  CHECK(redact_url("mwbench couchdb --url http://u:p@h:1/x -n 5") == "mwbench couchdb --url http://h:1/x -n 5");
  CHECK(redact_url("u:SECRET@127.0.0.1:1/db") == "127.0.0.1:1/db");
  CHECK(redact_url("--url=u:SECRET@127.0.0.1:1/db") == "--url=127.0.0.1:1/db");
  CHECK(redact_url("got 'u:SECRET@h:1/db'") == "got 'h:1/db'");
  CHECK(redact_url("http://u:p@SECRET@h/") == "http://h/");   // '@' in the password
  CHECK(redact_url("http://u:pa/SECRET@h/") == "http://h/");  // '/' in the password
  CHECK(redact_url("postgresql://u:SECRET@h:5432/db") == "postgresql://h:5432/db");
  CHECK(redact_url("root@localhost and a@b.c") == "root@localhost and a@b.c");  // no password: unchanged
}

TEST_CASE("redact: free text masks password=, token= and secret headers") {
  CHECK(redact_text("host=127.0.0.1 port=1 password=SECRET dbname=x") == "host=127.0.0.1 port=1 password=*** dbname=x");
  CHECK(redact_text("host=h password = 'SECRET with space' user=u") == "host=h password = *** user=u");
  CHECK(redact_text("gearmand --mysql-password=SECRET --mysql-db=x") == "gearmand --mysql-password=*** --mysql-db=x");
  CHECK(redact_text("GET http://h/?access_token=SECRET&x=1") == "GET http://h/?access_token=***&x=1");
  CHECK(redact_text("postgresql://h/db?sslpassword=SECRET") == "postgresql://h/db?sslpassword=***");
  CHECK(redact_text("header 'Authorization: Bearer SECRET' rejected") == "header 'Authorization: ***' rejected");
  CHECK(redact_text("Cookie: a=SECRET; b=SECRET\nnext line") == "Cookie: ***\nnext line");
  CHECK(redact_text("--password-env=REDISCLI_AUTH") == "--password-env=REDISCLI_AUTH");  // names a variable
  CHECK(redact_text("redis set 127.0.0.1:6379 keyspace=10 clients=4") ==
        "redis set 127.0.0.1:6379 keyspace=10 clients=4");
  CHECK(redact_text("WRONGPASS invalid username-password pair") == "WRONGPASS invalid username-password pair");
}

TEST_CASE("redact: option values by key") {
  CHECK(redact("mysql-password", "SECRET") == "***");
  CHECK(redact("--mysql-password", "SECRET") == "***");
  CHECK(redact("api-token", "SECRET") == "***");
  CHECK(redact("password-env", "MY_VAR") == "MY_VAR");
  CHECK(redact("url", "https://u:SECRET@h/") == "https://h/");
  CHECK(redact("url", "u:SECRET@h:1/db") == "h:1/db");
  CHECK(redact("pg-conninfo", "host=h password=SECRET") == "host=h password=***");
  CHECK(redact("pg-conninfo", "postgresql://u:SECRET@h/db") == "postgresql://h/db");
  CHECK(redact("header",
               "Authorization: Bearer SECRET\nAccept: text/plain\nX-Api-Key: SECRET\nProxy-Authorization: SECRET\n"
               "Cookie: s=SECRET\nX-Session-Id: SECRET") ==
        "Authorization: ***\nAccept: text/plain\nX-Api-Key: ***\nProxy-Authorization: ***\nCookie: ***\nX-Session-Id: "
        "***");
  CHECK(redact("path", "/var/tmp") == "/var/tmp");
  CHECK(redact("key-prefix", "mwbench:") == "mwbench:");
  CHECK(redact("keyspace", "1000") == "1000");
}

TEST_CASE("redact: the command line, in the = form and the separate form") {
  CHECK(redact_command_line({"gearman", "--mysql-password=SECRET", "--queue", "mysql"}) ==
        "gearman --mysql-password=*** --queue mysql");  // the next option is not masked instead
  CHECK(redact_command_line({"gearman", "--mysql-password", "SECRET", "-n", "5"}) ==
        "gearman --mysql-password *** -n 5");
  CHECK(redact_command_line({"http", "--header", "Authorization: Bearer SECRET", "--url", "u:SECRET@h:1/"}) ==
        "http --header 'Authorization: ***' --url h:1/");
  CHECK(redact_command_line({"http", "--header=X-Api-Key: SECRET"}) == "http '--header=X-Api-Key: ***'");
  CHECK(redact_command_line({"gearman", "--pg-conninfo", "host=h password=SECRET"}) ==
        "gearman --pg-conninfo 'host=h password=***'");
  CHECK(redact_command_line({"null", "--rate", "-5", "-c", "4"}) == "null --rate -5 -c 4");
  CHECK(redact_command_line({"run", "it's.toml"}) == "run 'it'\\''s.toml'");
}

TEST_CASE("redact: every string of a result") {
  RunResult run;
  run.command = "http --url http://u:SECRET@h/";
  JobResult j;
  j.job.name = "http get url=u:SECRET@h:1/";
  j.job.opts = {
      {"mysql-password", "SECRET"}, {"header", "Authorization: Basic SECRET"}, {"pg-conninfo", "password=SECRET"}};
  j.target = "u:SECRET@h:1/db";
  j.message = "couchdb: --url expects http://host:port[/db], got 'u:SECRET@h:1/db'";
  j.error_samples = {"Couldn't connect (http://u:SECRET@h/)"};
  j.verify.detail = "token=SECRET";
  j.warnings = {{WarningKind::Other, "password=SECRET"}};
  j.server = {{"url", "http://u:SECRET@h/"}};
  j.metrics = {count_metric("conninfo password=SECRET", 1)};
  JobResult rep = j;
  j.repeats = {rep};
  run.jobs = {j};
  redact_result(run);
  CHECK(!leaks(run.command));
  const JobResult& r = run.jobs[0];
  for (auto& s : {r.job.name, r.target, r.message, r.error_samples[0], r.verify.detail, r.warnings[0].text,
                  r.server.at("url"), r.metrics.at(0).name, r.repeats[0].target, r.repeats[0].job.opts.at("header")}) {
    CAPTURE(s);
    CHECK(!leaks(s));
  }
  for (auto& [k, v] : r.job.opts) CHECK(!leaks(v));
  CHECK(r.target == "h:1/db");
}

TEST_CASE("redact: secret values a server echoes back are masked, as they are, base64- and URL-encoded") {
  setenv("MWBENCH_TEST_SECRET", "env-pass-77", 1);
  RunResult run;
  JobResult j;
  j.job.opts = {{"password", "hunter2 p@ss/w"},
                {"user", "admin"},
                {"password-env", "MWBENCH_TEST_SECRET"},
                {"url", "http://bob:pw-1234@127.0.0.1:5984/db"}};
  // What hostile servers sent back, in every field a reply can reach.
  const std::vector<std::string> echoes = {
      "WRONGPASS invalid hunter2 p@ss/w",                            // the password as it is
      "requirepass:hunter2 p@ss/w",                                  // INFO / CONFIG GET output
      "Authorization: Basic YWRtaW46aHVudGVyMiBwQHNzL3c= rejected",  // base64("admin:hunter2 p@ss/w")
      "echo: aHVudGVyMiBwQHNzL3c=",                                  // base64 of the password alone
      "GET /?pw=hunter2%20p%40ss%2Fw",                               // URL-encoded
      "env: env-pass-77",                                            // a *-env option's variable
      "couchdb body {\"auth\":\"Ym9iOnB3LTEyMzQ=\"}",                // base64("bob:pw-1234")
      "the password pw-1234 is wrong",                               // a URL's password alone
  };
  j.message = echoes[0];
  j.verify.detail = echoes[1];
  j.error_samples = {echoes[2], echoes[3], echoes[4]};
  j.warnings = {{WarningKind::Other, echoes[5]}};
  j.server = {{"info", echoes[6]}};
  j.metrics = {count_metric(echoes[7], 1)};
  run.jobs = {j};
  redact_result(run);
  const JobResult& r = run.jobs[0];
  std::vector<std::string> out = {r.message, r.verify.detail, r.warnings[0].text, r.server.at("info"),
                                  r.metrics[0].name};
  out.insert(out.end(), r.error_samples.begin(), r.error_samples.end());
  for (const std::string& s : out) {
    CAPTURE(s);
    for (const char* secret :
         {"hunter2", "YWRtaW46aHVudGVy", "aHVudGVyMiBwQHNz", "p%40ss", "env-pass-77", "Ym9iOnB3", "pw-1234"})
      CHECK(s.find(secret) == std::string::npos);
    CHECK(s.find("***") != std::string::npos);
  }
  CHECK(r.message == "WRONGPASS invalid ***");
  unsetenv("MWBENCH_TEST_SECRET");
}

TEST_CASE("redact: a conninfo by libpq's grammar: a value ends at whitespace unless quoted or escaped") {
  CHECK(redact("pg-conninfo", "host=h password='SECRET with space' user=u") == "host=h password=*** user=u");
  CHECK(redact("pg-conninfo", "host=h password = 'it\\'s SECRET' dbname=x") == "host=h password = *** dbname=x");
  CHECK(redact("conninfo", "password=SECRET\\ word port=5432") == "password=*** port=5432");  // an escaped space
  CHECK(redact("pg-conninfo", "host=h sslpassword=SECRET sslmode=require") == "host=h sslpassword=*** sslmode=require");
  CHECK(redact("pg-conninfo", "host=h port=5432 dbname=x") == "host=h port=5432 dbname=x");
}

TEST_CASE("redact: a conninfo libpq would refuse after a secret is masked to its end: a second word never shows") {
  // libpq: password "abc", then `missing "=" after "SECRET"`; what did the user mean?
  CHECK(redact("pg-conninfo", "host=h password=abc SECRET") == "host=h password=***");
  CHECK(redact("pg-conninfo", "host=h password=abc SECRET port=5432") == "host=h password=***");
  CHECK(redact("pg-conninfo", "password=abc SECRET=x host=h") == "password=***");        // not a keyword of libpq's
  CHECK(redact("pg-conninfo", "host=h password='abc SECRET") == "host=h password=***");  // unterminated
  CHECK(redact("pg-conninfo", "host=h dbname=my db password=SECRET") == "host=h dbname=my db password=***");
  CHECK(redact_command_line({"gearman", "--pg-conninfo", "host=h password=abc SECRET", "-n", "5"}) ==
        "gearman --pg-conninfo 'host=h password=***' -n 5");
  CHECK(redact_command_line({"gearman", "--pg-conninfo=password=abc SECRET"}) == "gearman --pg-conninfo=password=***");
}

TEST_CASE("redact: free text: a password= value followed by a word that is no pair is masked to the line's end") {
  CHECK(redact_text("set-up: host=h password=abc SECRET is wrong\nnext") == "set-up: host=h password=***\nnext");
  CHECK(redact_text("got 'host=h password=abc SECRET'") == "got 'host=h password=***");
  CHECK(redact_text("password=SECRET user=u") == "password=*** user=u");  // another pair: the value ended
  CHECK(redact_text("a password=SECRET") == "a password=***");
  CHECK(redact_text("GET /?token=SECRET&x=1 HTTP/1.1") == "GET /?token=***&x=1 HTTP/1.1");
  CHECK(redact_text("password=pa'SECRET x") == "password=***");
  CHECK(redact_text("password=\"unterminated SECRET") == "password=***");
}

TEST_CASE("redact: a conninfo's words after the fault are masked wherever a server quotes them") {
  RunResult run;
  JobResult j;
  j.job.opts = {{"conninfo", "host=h password=abc SECRET-word"}};
  j.message = "postgres conninfo: missing \"=\" after \"SECRET-word\" in connection info string";
  run.jobs = {j};
  redact_result(run);
  CHECK(run.jobs[0].message == "postgres conninfo: missing \"=\" after \"***\" in connection info string");
  CHECK(run.jobs[0].job.opts.at("conninfo") == "host=h password=***");
}

TEST_CASE("conninfo: libpq's grammar, and a URI without whitespace for gearmand's --config-file") {
  Conninfo c = parse_conninfo(" host = h password='a b\\'c' port=5\\ 4 ");
  REQUIRE(c.error.empty());
  REQUIRE(c.pairs.size() == 3);
  CHECK(c.pairs[1].key == "password");
  CHECK(c.pairs[1].value == "a b'c");
  CHECK(c.pairs[2].value == "5 4");
  CHECK(conninfo_uri(c.pairs) == "postgresql://?host=h&password=a%20b%27c&port=5%204");
  c = parse_conninfo("host=h password=abc def");
  CHECK(c.error == "missing \"=\" after a word");
  CHECK(c.error_at == 20);
  CHECK(parse_conninfo("host=h password='abc").error == "unterminated quoted string");
  CHECK(parse_conninfo("host=h nonsense=1").error == "unknown keyword");
  CHECK(is_conninfo_uri("  postgresql://h/db"));
  CHECK(!is_conninfo_uri("host=postgresql://"));
}

TEST_CASE("redact: env:VAR and file:PATH say where a secret is: shown as they are, never warned about") {
  CHECK(redact("mysql-password", "env:MY_PW") == "env:MY_PW");
  CHECK(redact("mysql-password", "file:/run/secrets/pw") == "file:/run/secrets/pw");
  CHECK(redact("mysql-password", "env:") == "***");
  CHECK(redact("mysql-password", "env:not a name") == "***");
  CHECK(redact_args({"mwbench", "gearman", "--mysql-password", "file:pw.txt", "--pg-conninfo=env:CI"}) ==
        std::vector<std::string>{"mwbench", "gearman", "--mysql-password", "file:pw.txt", "--pg-conninfo=env:CI"});
  CHECK(redact_args({"mwbench", "gearman", "--mysql-password", "SECRET"}) ==
        std::vector<std::string>{"mwbench", "gearman", "--mysql-password", "***"});
}
