// gearmand started by mwbench, once per queue backend: a free loopback port, a temp dir, a
// fresh empty store, readiness by a real round trip, SIGTERM then SIGKILL, store removed.
#include <libgearman/gearman.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "adapters/gearman/gearman.h"
#include "api/stop.h"
#include "api/wait.h"
#include "util/clock.h"
#include "util/conninfo.h"
#include "util/files.h"
#include "util/net.h"
#include "util/redact.h"

namespace mw::gearman {

const std::vector<std::string>& queue_names() {
  static const std::vector<std::string> names = {"builtin",
                                                 "libsqlite3",
                                                 "libmemcached",
                                                 "redis",
                                                 "postgres",
                                                 "mysql",
                                                 "libtokyocabinet:tcb",
                                                 "libtokyocabinet:tch",
                                                 "libtokyocabinet:mem"};
  return names;
}

std::vector<std::string> supported_queue_types(const std::string& gearmand) {
  std::vector<std::string> out{"builtin"};
  std::string help = capture_output({gearmand, "--help"});
  // Each queue module has its own section: "libsqlite3:", "Postgres:", "redis:", ...
  for (auto [section, type] :
       std::vector<std::pair<std::string, std::string>>{{"\nlibmemcached:", "libmemcached"},
                                                        {"\nlibsqlite3:", "libsqlite3"},
                                                        {"\nPostgres:", "postgres"},
                                                        {"\nredis:", "redis"},
                                                        {"\nMySQL:", "mysql"},
                                                        {"\nlibtokyocabinet:", "libtokyocabinet"}})
    if (help.find(section) != std::string::npos) out.push_back(type);
  return out;
}

namespace {

std::string pg_bin(const std::string& tool) {
  for (int v = 20; v >= 9; --v) {
    std::string p = "/usr/lib/postgresql/" + std::to_string(v) + "/bin/" + tool;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string type_of(const std::string& queue) { return queue.substr(0, queue.find(':')); }

// A conninfo that holds a secret as gearmand's --config-file can carry it: that file is split at
// spaces and line breaks, so keyword = value pairs become one URI (percent-encoded) and a URI
// must have none. Throws SetupError naming --pg-conninfo (never its value) when libpq would
// refuse it.
std::string conninfo_without_spaces(const std::string& conninfo) {
  if (is_conninfo_uri(conninfo)) {
    std::string uri = conninfo;
    while (!uri.empty() && std::isspace(static_cast<unsigned char>(uri.back()))) uri.pop_back();
    uri.erase(0, uri.find_first_not_of(" \t\r\n"));
    if (uri.find_first_of(" \t\r\n") != std::string::npos)
      throw SetupError("gearman: --pg-conninfo: a postgresql:// URI with a space or a line break in it (write it %20)");
    return uri;
  }
  const Conninfo c = parse_conninfo(conninfo);
  if (!c.error.empty())
    throw SetupError("gearman: --pg-conninfo is not a libpq conninfo (" + c.error + " at byte " +
                     std::to_string(c.error_at + 1) + "): quote a value that holds a space: password='a b'");
  return conninfo_uri(c.pairs);
}

// A real round trip through gearmand's protocol handler (an ECHO request), not a TCP connect:
// gearmand binds before it has replayed its queue.
std::string echo_probe(int port) { return echo("127.0.0.1", port, 1000); }

}  // namespace

std::string payload_for(uint64_t seq, size_t size) {
  std::string p = std::to_string(seq) + ":";
  p.resize(std::max(size, p.size()), 'p');
  return p;
}

std::string echo(const std::string& host, int port, int timeout_ms) {
  gearman_client_st* c = gearman_client_create(nullptr);
  if (!c) return "libgearman could not create a client";
  gearman_client_add_server(c, host.c_str(), static_cast<in_port_t>(port));
  gearman_client_set_timeout(c, std::max(1, timeout_ms));
  gearman_return_t rc = gearman_client_echo(c, "ready", 5);
  std::string why = rc == GEARMAN_SUCCESS     ? ""
                    : gearman_client_error(c) ? gearman_client_error(c)
                                              : gearman_strerror(rc);
  gearman_client_free(c);
  return why;
}

std::string queue_unavailable(const std::string& queue, const GearmanOptions& o) {
  std::string bin = find_binary(o.gearmand);
  if (bin.empty()) return o.gearmand + " is not installed (scripts/setup installs gearman-job-server)";
  if (std::find(queue_names().begin(), queue_names().end(), queue) == queue_names().end())
    return "unknown queue " + queue;
  auto types = supported_queue_types(bin);
  std::string t = type_of(queue);
  if (std::find(types.begin(), types.end(), t) == types.end())
    return bin + " has no " + t +
           " queue (see adapters/gearman/README.md, Tokyo Cabinet queues; --gearmand PATH selects it)";
  if (t == "libmemcached" && find_binary("memcached").empty()) return "memcached is not installed";
  if (t == "redis" && find_binary("redis-server").empty()) return "redis-server is not installed";
  if (t == "postgres" && o.pg_conninfo.empty() && (pg_bin("postgres").empty() || pg_bin("initdb").empty()))
    return "PostgreSQL is not installed (apt-get install postgresql), and no --pg-conninfo was given";
  if (t == "mysql" && o.mysql_host.empty())
    return "MySQL needs a running server: give --mysql-host (and --mysql-user, --mysql-password, --mysql-db)";
  return "";
}

namespace {
std::string printable_line(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 120; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\r') break;
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  return out;
}
}  // namespace

std::string admin(const std::string& host, int port, const std::string& command, double timeout_s) {
  std::string where = host + ":" + std::to_string(port);
  std::string err;
  int fd = tcp_connect(host, port, timeout_s, &err);
  if (fd < 0) throw SetupError("gearmand " + where + ": cannot connect: " + err);
  // One deadline for the whole exchange: a server that trickles its answer a byte at a time
  // cannot stretch it, and the answer is capped.
  // A stop ends the wait: at once while opening, within half a second in a clean-up.
  const int64_t deadline = now_ns() + std::max<int64_t>(1000000, static_cast<int64_t>(timeout_s * 1e9));
  auto wait = [&](short events) { return poll_until(fd, events, deadline) > 0; };
  auto fail = [&](const std::string& why) {
    close(fd);
    throw_if_stopped_opening("gearmand " + where + ": " + command);
    throw SetupError("gearmand " + where + ": " + why);
  };
  std::string req = command + "\n";
  for (size_t sent = 0; sent < req.size();) {
    if (!wait(POLLOUT)) fail("cannot send " + command + " within the timeout");
    ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) fail("cannot send " + command);
    sent += static_cast<size_t>(n);
  }
  // "status" ends with a line ".", "version" is one line. Each read looks for the end in what it
  // added (and the two bytes before, where "\n.\n" may begin): searching the whole answer again
  // made the 16M cap cost 4096 searches of up to 16M, seconds of CPU.
  std::string out;
  char buf[4096];
  for (;;) {
    if (!wait(POLLIN)) fail("no answer to " + command + " within the timeout");
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    const size_t from = out.size() < 2 ? 0 : out.size() - 2;
    out.append(buf, static_cast<size_t>(n));
    if (command == "status" ? (out == ".\n" || out.find("\n.\n", from) != std::string::npos)
                            : out.find('\n', from) != std::string::npos)
      break;
    if (out.size() > kMaxAdminReply) fail("the answer to " + command + " is larger than 16M");
  }
  close(fd);
  if (out.rfind("ERR", 0) == 0) throw SetupError("gearmand " + where + ": " + command + ": " + printable_line(out));
  return out;
}

Gearmand::~Gearmand() {
  server.reset();
  std::error_code ec;
  if (!store.empty() && store != "*") {
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) std::filesystem::remove(store + suffix, ec);
  }
  while (!backing.empty()) backing.pop_back();
  if (!pg_data.empty()) std::filesystem::remove_all(pg_data, ec);
}

std::string server_version(const std::string& host, int port, double timeout_s) {
  std::string v = printable_line(admin(host, port, "version", timeout_s));
  return v.rfind("OK ", 0) == 0 ? v.substr(3) : v;
}

std::unique_ptr<Gearmand> start_gearmand(const std::string& queue, const GearmanOptions& o, double timeout_s) {
  auto g = std::make_unique<Gearmand>();
  std::string t = type_of(queue);
  std::string kind = queue.find(':') == std::string::npos ? "" : queue.substr(queue.find(':') + 1);
  const std::string& dir = o.store_dir;
  std::string name = unique_name("mwbench-gearmand");

  ServiceSpec s;
  std::vector<std::string> secret_args;  // gearmand's arguments that hold a password
  s.name = "gearmand (" + queue + ")";
  s.binary = o.gearmand;
  s.args = {"--port",     "{port}",
            "--listen",   "127.0.0.1",
            "--log-file", "{dir}/gearmand.log",
            "--pid-file", "{dir}/gearmand.pid",
            "--verbose",  "WARNING",
            "--threads",  "1",
            "-q",         t};
  s.probe = echo_probe;
  if (t == "libsqlite3") {
    g->store = (dir.empty() ? "{dir}" : dir) + "/" + name + ".sqlite3";
    s.args.push_back("--libsqlite3-db=" + g->store);
  } else if (t == "libtokyocabinet") {
    g->store = kind == "mem" ? "*" : (dir.empty() ? "{dir}" : dir) + "/" + name + "." + kind;
    s.args.push_back("--libtokyocabinet-file=" + g->store);
  } else if (t == "libmemcached") {
    ServiceSpec m{"memcached", "memcached", {"-l", "127.0.0.1", "-p", "{port}", "-U", "0", "-u", "root"}, nullptr};
    m.probe = [](int port) { return tcp_probe("127.0.0.1", port, "version\r\n", "VERSION"); };
    g->backing.push_back(std::make_unique<Service>(m));
    s.args.push_back("--libmemcached-servers=127.0.0.1:" + std::to_string(g->backing.back()->port()));
    g->info["backing"] = "memcached 127.0.0.1:" + std::to_string(g->backing.back()->port());
  } else if (t == "redis") {
    ServiceSpec r{"redis-server",
                  "redis-server",
                  {"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--save", "", "--appendonly", "no",
                   "--logfile", "redis.log"},
                  nullptr};
    r.probe = [](int port) { return tcp_probe("127.0.0.1", port, "PING\r\n", "+PONG"); };
    g->backing.push_back(std::make_unique<Service>(r));
    s.args.push_back("--redis-server=127.0.0.1");
    s.args.push_back("--redis-port=" + std::to_string(g->backing.back()->port()));
    g->info["backing"] = "redis-server 127.0.0.1:" + std::to_string(g->backing.back()->port());
  } else if (t == "postgres") {
    std::string conninfo = o.pg_conninfo;
    if (conninfo.empty()) {
      ServiceSpec p{"postgres",
                    pg_bin("postgres"),
                    {"-D", "{dir}/data", "-p", "{port}", "-k", "{dir}", "-c", "listen_addresses=127.0.0.1"},
                    nullptr};
      p.user = "postgres";
      p.setup = {{pg_bin("initdb"), "-D", "{dir}/data", "-U", "postgres", "--auth=trust", "--no-sync"}};
      p.start_timeout_s = 30;
      p.probe = [](int port) -> std::string {
        std::string out = capture_output({pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", std::to_string(port)});
        return out.find("accepting connections") != std::string::npos ? "" : out;
      };
      if (!dir.empty()) {  // --store-dir (the page-cache layer's, --crash power): its data directory there
        g->pg_data = dir + "/" + name + "-pgdata";
        move_data_dir(p, "{dir}/data", g->pg_data);
      }
      g->backing.push_back(std::make_unique<Service>(p));
      conninfo = "host=127.0.0.1 port=" + std::to_string(g->backing.back()->port()) + " user=postgres dbname=postgres";
      g->info["backing"] = "postgres 127.0.0.1:" + std::to_string(g->backing.back()->port());
    }
    if (redact_conninfo(conninfo) == conninfo)
      s.args.push_back("--libpq-conninfo=" + conninfo);
    else
      secret_args.push_back("--libpq-conninfo=" + conninfo_without_spaces(conninfo));
    s.args.push_back("--libpq-table=" + unique_name("q", '_'));
  } else if (t == "mysql") {
    for (auto& [k, v] : {std::pair<std::string, std::string>{"host", o.mysql_host},
                         {"port", o.mysql_port ? std::to_string(*o.mysql_port) : ""},
                         {"user", o.mysql_user},
                         {"db", o.mysql_db}})
      if (!v.empty()) s.args.push_back("--mysql-" + k + "=" + v);
    if (!o.mysql_password.empty()) {
      if (o.mysql_password.find_first_of(" \r\n") != std::string::npos)
        throw SetupError(
            "gearman: --mysql-password holds a space or a line break, which gearmand's --config-file "
            "cannot carry (and its command line would show it to every user)");
      secret_args.push_back("--mysql-password=" + o.mysql_password);
    }
    s.args.push_back("--mysql-table=" + unique_name("q", '_'));
  }
  if (!secret_args.empty()) {  // never on its command line: a file of its own, there only while it starts
    std::string conf;
    for (auto& a : secret_args) conf += a + "\n";
    s.secret_files.emplace_back("{dir}/gearmand-secrets.conf", conf);
    s.args.push_back("--config-file={dir}/gearmand-secrets.conf");
  }
  g->server = std::make_unique<Service>(s);
  if (g->store.find("{dir}") == 0) g->store.replace(0, 5, g->server->dir());
  g->info["server"] = "gearmand";
  g->info["version"] = server_version("127.0.0.1", g->server->port(), timeout_s);
  g->info["queue"] = queue;
  g->info["managed"] = "yes";
  if (!g->store.empty()) g->info["store"] = g->store;
  return g;
}

}  // namespace mw::gearman
