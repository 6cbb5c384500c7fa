// Local servers that mwbench starts for a job: a free loopback port, a temp dir, readiness by
// a real round trip, the version and log recorded, SIGTERM then SIGKILL at the end.
//
// No server outlives mwbench: each runs in its own process group under a small supervisor
// (a forked copy of mwbench) that holds a pipe from mwbench; when mwbench is gone, however it
// died (SIGKILL included), the supervisor stops the server's whole group and removes its temp
// dir. The server itself dies with its supervisor (PR_SET_PDEATHSIG). A temp dir whose owner
// (recorded in owner.pid) is gone is cleaned up when the next Service is created.
#pragma once
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mw {

struct ServiceSpec {
  std::string name;    // "redis-server"
  std::string binary;  // path or name looked up in PATH and the sbin folders
  // Arguments; "{port}" and "{dir}" are replaced by the chosen port and the temp dir.
  std::vector<std::string> args;
  // A real round trip that says the server answers (not just a TCP connect). Returns "" when
  // ready, else what went wrong.
  std::function<std::string(int port)> probe;
  double start_timeout_s = 15;
  // Run the server (and `setup`) as this user, for servers that refuse root (PostgreSQL).
  std::string user = {};
  // Commands run once in the temp dir before the server starts (initdb), same placeholders.
  std::vector<std::vector<std::string>> setup = {};
  // Variables of the server's (and set-up commands') environment beyond the minimal one
  // (server_environment()), same placeholders.
  std::vector<std::pair<std::string, std::string>> env = {};
  // Files the server reads at start-up that hold secrets ({"{dir}/gearmand.conf", "--x=..."}),
  // kept out of its command line, which every user reads: written mode 0600 (the spec's user's)
  // before each start, removed once it answers, or fails to.
  std::vector<std::pair<std::string, std::string>> secret_files = {};
};

// What a managed server, its set-up commands and the helpers mwbench runs (capture_output) get
// as their environment, never mwbench's own (which holds $PGPASSWORD, $MYSQL_PWD, tokens):
// PATH, HOME and TMPDIR set to `dir` when given (else /tmp), LANG and LC_ALL C.UTF-8 (C where
// it is missing), then the spec's `env`. "NAME=value" strings.
std::vector<std::string> server_environment(const std::string& dir,
                                            const std::vector<std::pair<std::string, std::string>>& extra = {});

// Every "from" in the spec's arguments and set-up commands replaced by "to": a data directory
// moved out of the temp dir ("{dir}/data" to a page-cache layer's, --crash power).
void relocate(ServiceSpec& spec, const std::string& from, const std::string& to);
// relocate(), and `to` made first (mode 0700) and given to the spec's user (PostgreSQL's data
// directory). Throws SetupError naming `to` when it cannot be made or given.
void move_data_dir(ServiceSpec& spec, const std::string& from, const std::string& to);

class Service {
 public:
  // Starts the server and waits until `probe` answers; throws SetupError with the log's tail
  // when it exits or does not answer in time, Interrupted when a stop is requested meanwhile.
  explicit Service(const ServiceSpec& spec);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // The port its clients connect to: the server's, or under a ProxyRoute (proxy.h) the relay's.
  int port() const { return client_port_ ? client_port_ : port_; }
  int server_port() const { return port_; }  // the server's own
  pid_t pid() const { return pid_; }         // the server (and its process group)
  const std::string& dir() const { return dir_; }
  const std::string& name() const { return spec_.name; }
  bool running();
  void stop();
  // Crash-and-restart (--crash kill): SIGKILL to the server, its children (in its process group
  // or not) and its process group, returns once it is gone; then start it again in the same directory with the same
  // arguments and port, and wait until it answers. restart() throws SetupError when the directory is gone or the server
  // does not come back within start_timeout_s (with the log's tail).
  void kill_now();
  void restart();
  // --fault stop: SIGSTOP (true) or SIGCONT (false) to the server's process group. False when it
  // does not run.
  bool pause(bool on);
  // The end of what the server logged since its last start (every *.log file in its dir).
  std::string log_tail(size_t max_bytes = 2000) const;

 private:
  void launch(bool same_port);
  void mark_logs();  // where each log ends before a start

  ServiceSpec spec_;
  int port_ = 0;
  int client_port_ = 0;  // a ProxyRoute's relay to port_; 0: none
  pid_t pid_ = -1;       // the server, leader of its own process group
  pid_t sup_ = -1;       // its supervisor, mwbench's child
  // The process that started it: only it stops the server and removes its dir. A forked child's
  // copy (a test's child that clears the shared services, or exits through exit()) leaves both alone.
  pid_t owner_ = -1;
  std::string dir_, log_;
  std::map<std::string, uintmax_t> log_marks_;  // log file -> its size when the last start began
};

// A service shared by the jobs of a run that ask for the same key (one redis-server for
// SET, GET and PING); restarted when it died. Stopped by stop_shared_services() or at exit.
// Under a ProxyRoute (proxy.h) the job's own instead: started anew, relayed, never shared.
std::shared_ptr<Service> shared_service(const std::string& key, const ServiceSpec& spec);
void stop_shared_services();
// The servers a job uses, for its resource profile: every Service started, and every one
// shared_service() handed out, since the last begin_service_claims() (the runner calls it before
// each job's set-up), that still runs. The core learns a job's servers here, never by name.
struct ServerProcess {
  std::string name;
  pid_t pid = -1;  // the server, leader of its own process group
  int port = 0;
};
void begin_service_claims();
std::vector<ServerProcess> claimed_servers();
// Sends `sig` to every managed server's process group. Async-signal-safe: for a signal
// handler that is about to _exit (the supervisors then finish the clean-up).
void stop_services_now(int sig);

// A free TCP port on 127.0.0.1 (bound once, then released).
int free_port();
// Full path of a server binary (PATH, /usr/sbin, /usr/local/sbin, /sbin), or "".
std::string find_binary(const std::string& name);
// Runs a command and returns its standard output (for `gearmand --help`, `--version`).
std::string capture_output(const std::vector<std::string>& argv, double timeout_s = 5);

}  // namespace mw
