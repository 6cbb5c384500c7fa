// Local servers that mwbench starts for a job: a free loopback port, a temp dir, readiness by
// a real round trip, the version and log recorded, SIGTERM then SIGKILL at the end.
#pragma once
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mw {

struct ServiceSpec {
  std::string name;                 // "redis-server"
  std::string binary;               // path or name looked up in PATH and the sbin folders
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
};

class Service {
 public:
  // Starts the server and waits until `probe` answers; throws SetupError with the log's tail
  // when it exits or does not answer in time.
  explicit Service(const ServiceSpec& spec);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  const std::string& name() const { return spec_.name; }
  bool running();
  void stop();
  std::string log_tail(size_t max_bytes = 2000) const;

 private:
  ServiceSpec spec_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string dir_, log_;
};

// A service shared by the jobs of a run that ask for the same key (one redis-server for
// SET, GET and PING); restarted when it died. Stopped by stop_shared_services() or at exit.
std::shared_ptr<Service> shared_service(const std::string& key, const ServiceSpec& spec);
void stop_shared_services();

// A free TCP port on 127.0.0.1 (bound once, then released).
int free_port();
// Full path of a server binary (PATH, /usr/sbin, /usr/local/sbin, /sbin), or "".
std::string find_binary(const std::string& name);
// Runs a command and returns its standard output (for `gearmand --help`, `--version`).
std::string capture_output(const std::vector<std::string>& argv, double timeout_s = 5);

}  // namespace mw
