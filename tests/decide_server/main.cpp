// The decision's end-to-end test's synthetic server and noisy neighbour (tests/decide_test.sh):
// a server whose per-request cost is calibrated busy CPU scaled by a known factor, so that a
// server of factor 1.25 is 1.25 times slower than one of factor 1.0 by construction.
//   decide_server calibrate MICROS        the spin iterations that take MICROS of CPU (the fastest
//                                         of several trials), printed
//   decide_server serve ITERATIONS FACTOR HTTP/1.1 on 127.0.0.1, a free port printed first; each
//                                         request spins ITERATIONS x FACTOR, then answers 200 "ok"
//                                         (a thread per connection, keep-alive)
//   decide_server burn ITERATIONS FACTOR  spins ITERATIONS x FACTOR once, prints "cpu: SECONDS s" (the CPU
//                                         time it took) and exits (a command)
//   decide_server noise SEED PID...       a noisy neighbour until killed: a CPU hog in random bursts
//                                         (5-40 ms on, 5-60 ms off), and every few ms one of the PIDs
//                                         stopped (SIGSTOP) for 1-6 ms
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile uint64_t sink;

void spin(uint64_t n) {
  uint64_t x = sink;
  for (uint64_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink = x;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

int calibrate(double micros) {
  const uint64_t trial = 2'000'000;
  double best = 1e9;
  for (int i = 0; i < 7; ++i) {
    double t0 = cpu_seconds();
    spin(trial);
    best = std::min(best, cpu_seconds() - t0);
  }
  std::printf("%llu\n", static_cast<unsigned long long>(static_cast<double>(trial) * micros / 1e6 / best));
  return 0;
}

void serve_connection(int c, uint64_t cost) {
  static const char kReply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";
  std::string in;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(c, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    for (size_t end; (end = in.find("\r\n\r\n")) != std::string::npos;) {  // GETs: no bodies
      in.erase(0, end + 4);
      spin(cost);
      if (send(c, kReply, sizeof kReply - 1, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof kReply - 1)) {
        close(c);
        return;
      }
    }
  }
  close(c);
}

int serve(uint64_t cost) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("decide_server: listen");
    return 2;
  }
  std::printf("%d\n", ntohs(a.sin_port));
  std::fflush(stdout);
  for (;;) {
    int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread(serve_connection, c, cost).detach();
  }
}

int noise(uint32_t seed, const std::vector<pid_t>& pids) {
  std::mt19937 rng(seed);
  auto ms = [&](int lo, int hi) { return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  std::atomic<bool> hog{false};
  std::thread hogger([&] {  // the CPU hog: spins while on
    for (;;) {
      if (hog.load(std::memory_order_relaxed))
        spin(100'000);
      else
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  hogger.detach();
  auto next_burst = std::chrono::steady_clock::now() + ms(5, 60);
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next_burst) {
      hog = !hog.load();
      next_burst = now + (hog ? ms(5, 40) : ms(5, 60));
    }
    if (!pids.empty()) {  // a pause of one of them, as a hypervisor's steal would
      pid_t p = pids[std::uniform_int_distribution<size_t>(0, pids.size() - 1)(rng)];
      kill(p, SIGSTOP);
      std::this_thread::sleep_for(ms(1, 6));
      kill(p, SIGCONT);
    }
    std::this_thread::sleep_for(ms(2, 10));
  }
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "calibrate" && argc == 3) return calibrate(std::atof(argv[2]));
  if ((mode == "serve" || mode == "burn") && argc == 4) {
    const auto cost = static_cast<uint64_t>(std::strtod(argv[2], nullptr) * std::atof(argv[3]));
    if (mode == "burn") {  // and the CPU time it took
      const double t0 = cpu_seconds();
      spin(cost);
      std::printf("cpu: %.6f s\n", cpu_seconds() - t0);
      return 0;
    }
    return serve(cost);
  }
  if (mode == "noise" && argc >= 3) {
    std::vector<pid_t> pids;
    for (int i = 3; i < argc; ++i) pids.push_back(static_cast<pid_t>(std::atoi(argv[i])));
    return noise(static_cast<uint32_t>(std::atoi(argv[2])), pids);
  }
  std::fprintf(stderr,
               "usage: decide_server calibrate MICROS | serve ITERATIONS FACTOR | burn ITERATIONS FACTOR | "
               "noise SEED PID...\n");
  return 2;
}
