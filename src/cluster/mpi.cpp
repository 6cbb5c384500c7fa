// The MPI calls (Open MPI): point-to-point messages and one barrier, each waited on with
// MPI_Test/MPI_Iprobe polls that give up when the rank waited for died.
#include "cluster/mpi.h"

#define OMPI_SKIP_MPICXX 1  // the C API alone: no link to the deprecated C++ bindings
#define MPICH_SKIP_MPICXX 1
#include MWBENCH_MPI_HEADER  // MPI's mpi.h (CMakeLists.txt): src/cluster/mpi.h has the same name
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "util/status.h"

namespace mw::mpi {
namespace {

constexpr int kBeatTag = 1;
constexpr auto kBeatEvery = std::chrono::milliseconds(200);

struct State {
  int rank = 0, size = 1;
  bool started = false;
  std::unique_ptr<std::atomic<int64_t>[]> last_seen;  // ms on the steady clock, per rank
  std::unique_ptr<std::atomic<bool>[]> dead;
  std::atomic<bool> stop{false};
  std::thread watch;
  std::mutex beats;  // guards the two below (set while the watch thread runs)
  std::function<std::string()> make;
  std::function<void(int, const std::string&)> take;
};

State& st() {
  static State s;
  return s;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Polls start every 50 us and back off to every 1 ms: a barrier releases every rank within about
// a millisecond, and ranks waiting long (for a slower rank's result) leave the CPU to the others.
struct Backoff {
  int us = 50;
  void pause() {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    us = std::min(us * 2, 1000);
  }
};

// Rank 0 hears every rank and is heard by every rank; the others hear rank 0 alone.
bool watched(int r) { return r != st().rank && (st().rank == 0 || r == 0); }

void mark_silent() {
  State& s = st();
  int64_t t = now_ms();
  for (int r = 0; r < s.size; ++r)
    if (watched(r) && t - s.last_seen[r].load() > static_cast<int64_t>(kGraceS * 1000)) s.dead[r] = true;
}

void watch_loop() {
  State& s = st();
  std::vector<MPI_Request> out(static_cast<size_t>(s.size), MPI_REQUEST_NULL);
  std::vector<std::string> sent(static_cast<size_t>(s.size));  // each beat's data, kept until it is sent
  auto next_beat = std::chrono::steady_clock::now();
  while (!s.stop.load()) {
    if (std::chrono::steady_clock::now() >= next_beat) {
      next_beat += kBeatEvery;
      for (int r = 0; r < s.size; ++r) {
        if (!watched(r) || s.dead[r].load()) continue;
        int done = 1;
        if (out[r] != MPI_REQUEST_NULL && MPI_Test(&out[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) s.dead[r] = true;
        // One beat in flight per rank: a rank that stopped receiving does not fill a queue.
        if (!done || s.dead[r].load()) continue;
        {
          std::lock_guard lk(s.beats);
          sent[r] = s.make ? s.make() : std::string();
        }
        if (MPI_Isend(sent[r].data(), static_cast<int>(std::min<size_t>(sent[r].size(), INT_MAX)), MPI_BYTE, r,
                      kBeatTag, MPI_COMM_WORLD, &out[r]) != MPI_SUCCESS)
          s.dead[r] = true;
      }
    }
    for (;;) {
      int flag = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kBeatTag, MPI_COMM_WORLD, &flag, &status) != MPI_SUCCESS || !flag) break;
      int n = 0;
      MPI_Get_count(&status, MPI_BYTE, &n);
      std::string text(static_cast<size_t>(std::max(n, 0)), '\0');
      MPI_Recv(text.data(), n, MPI_BYTE, status.MPI_SOURCE, kBeatTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      s.last_seen[status.MPI_SOURCE] = now_ms();
      std::lock_guard lk(s.beats);
      if (!text.empty() && s.take) s.take(status.MPI_SOURCE, text);
    }
    mark_silent();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Beats still in flight go to ranks that may be gone: let them go.
  for (auto& q : out)
    if (q != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Test(&q, &done, MPI_STATUS_IGNORE);
      if (!done) {
        MPI_Cancel(&q);
        MPI_Request_free(&q);
      }
    }
}

// Waits for `q` while `peer` (or, for -1, every watched rank) is alive.
bool wait_for(MPI_Request& q, int peer) {
  Backoff b;
  for (;;) {
    int done = 0;
    if (MPI_Test(&q, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (peer >= 0 ? !alive(peer) : !lost().empty()) return false;
    b.pause();
  }
}

bool receive(int from, int tag, std::string& text) {
  Backoff b;
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &status) != MPI_SUCCESS) return false;
    if (flag) {
      int n = 0;
      MPI_Get_count(&status, MPI_CHAR, &n);
      text.assign(static_cast<size_t>(std::max(n, 0)), '\0');
      return MPI_Recv(text.data(), n, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
             MPI_SUCCESS;
    }
    if (!alive(from)) return false;
    b.pause();
  }
}

int length_of(const std::string& text) {
  if (text.size() > static_cast<size_t>(INT_MAX)) throw SetupError("a message between ranks is larger than 2 GiB");
  return static_cast<int>(text.size());
}

}  // namespace

bool built() { return true; }

void start(int& argc, char**& argv) {
  State& s = st();
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    throw SetupError("MPI_Init_thread failed");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  s.started = true;
  if (provided < MPI_THREAD_MULTIPLE)
    throw SetupError("this MPI library does not offer MPI_THREAD_MULTIPLE, which mwbench's watch of the ranks needs");
  // Rank 0 alone prepares targets (and raises its open-file limit for them); every rank opens
  // its own clients: the same limit everywhere.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  s.last_seen = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(s.size));
  s.dead = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(s.size));
  for (int r = 0; r < s.size; ++r) s.last_seen[r] = now_ms(), s.dead[r] = false;
  s.watch = std::thread(watch_loop);
}

bool started() { return st().started; }
int rank() { return st().rank; }
int size() { return st().size; }

std::vector<int> lost() {
  std::vector<int> out;
  for (int r = 0; st().dead && r < st().size; ++r)
    if (st().dead[r].load()) out.push_back(r);
  return out;
}

bool alive(int r) { return !st().dead || r < 0 || r >= st().size || !st().dead[r].load(); }

void forget(int r) {
  if (st().dead && r > 0 && r < st().size && r != st().rank) st().dead[r] = true;
}

bool barrier() {
  MPI_Request q;
  if (MPI_Ibarrier(MPI_COMM_WORLD, &q) != MPI_SUCCESS) return false;
  return wait_for(q, rank() == 0 ? -1 : 0);
}

bool send_all(std::string& text, int tag) {
  if (rank() != 0) return receive(0, tag, text);
  std::vector<MPI_Request> qs(static_cast<size_t>(size()), MPI_REQUEST_NULL);
  for (int r = 1; r < size(); ++r)
    if (alive(r) && MPI_Isend(text.data(), length_of(text), MPI_CHAR, r, tag, MPI_COMM_WORLD, &qs[r]) != MPI_SUCCESS)
      st().dead[r] = true;
  bool all = true;
  for (int r = 1; r < size(); ++r)
    if (qs[r] != MPI_REQUEST_NULL && !wait_for(qs[r], r)) all = false;
  return all && lost().empty();
}

std::vector<std::optional<std::string>> gather(const std::string& mine, int tag) {
  if (rank() != 0) {
    MPI_Request q;
    std::string copy = mine;
    if (alive(0) && MPI_Isend(copy.data(), length_of(copy), MPI_CHAR, 0, tag, MPI_COMM_WORLD, &q) == MPI_SUCCESS)
      wait_for(q, 0);
    return {};
  }
  std::vector<std::optional<std::string>> out(static_cast<size_t>(size()));
  out[0] = mine;
  for (int r = 1; r < size(); ++r) {
    std::string text;
    if (receive(r, tag, text)) out[r] = std::move(text);
  }
  return out;
}

void on_beats(std::function<std::string()> make, std::function<void(int, const std::string&)> take) {
  std::lock_guard lk(st().beats);
  st().make = std::move(make);
  st().take = std::move(take);
}

void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void finish() {
  State& s = st();
  if (!s.started) return;
  s.stop = true;
  if (s.watch.joinable()) s.watch.join();
  if (lost().empty()) MPI_Finalize();
  s.started = false;
}

}  // namespace mw::mpi
