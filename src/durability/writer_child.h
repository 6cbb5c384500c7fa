// Crash jobs on embedded stores (SQLite, Tokyo Cabinet, LMDB, RocksDB): each client's ops run in
// a child process of mwbench, so that --crash kill has a process to SIGKILL while writes are in
// flight; the parent then opens the same files and checks them. In a closed loop the child runs
// the driver's next ops ahead of its calls (Client::run_ahead), so an op costs no round trip
// between the processes; each answer, with the op's end, is written to memory the two share
// after the store returned, and the parent books it from there, before or after the kill.
#pragma once
#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "api/adapter.h"

namespace mw {

// A blocking client that runs a closed loop's ops ahead of the driver's calls (the writer
// child's proxy). The driver (loops.cpp) looks for it with dynamic_cast before each phase.
class RunsAhead {
 public:
  virtual ~RunsAhead() = default;
  // Before each phase's first op: in a closed loop (end > 0) the driver will ask for every seq
  // from the first up to `end` (exclusive) in order, until an op ends at or after `deadline`
  // (steady-clock ns, INT64_MAX: none), so the client may run them ahead of its run() calls;
  // each run() still returns its own seq's answer. end 0 (an open loop): not ahead.
  virtual void run_ahead(uint64_t end, int64_t deadline) = 0;
  // When the op of the last run() ended, by the client's own clock read (steady clock, ns);
  // 0 when it does not know (a writer process that is gone).
  virtual int64_t last_end_ns() const = 0;
  // True when the op of `seq` went to the store ahead of the driver's call: the driver books it
  // even after a halt or a stop, so every write that may have reached the store is counted as sent.
  virtual bool handed_over(uint64_t seq) = 0;
};

class WriterChildren {
 public:
  ~WriterChildren() { kill_all(); }
  // Forks a child that builds its client with `make` and runs each op the returned proxy is
  // given (and, running ahead, the ops it will be given); the proxy waits at most timeout_s for
  // each answer. A child that is gone fails the op it had not answered (Status::Error) and the
  // proxy stops. Call from the driver's thread that opens clients
  // (before the phase's threads start): fork() copies only the calling thread.
  std::unique_ptr<Client> spawn(const std::function<std::unique_ptr<Client>()>& make, double timeout_s);
  // SIGKILL to every child; returns once all are reaped.
  void kill_all();

 private:
  std::mutex mu_;
  std::vector<pid_t> pids_;
};

}  // namespace mw

namespace mw {

// A keyed store's check (Crashable::keyed): the keys a native op wrote (empty for a workload's,
// whose requests are the core's own) and what each key holds after the restart.
struct KeyedCheck {
  std::function<void(uint64_t, std::vector<KeyWrite>&)> keys_of;
  std::function<std::vector<Held>(std::span<const uint64_t>)> held;
};

// The crash hooks of an embedded store whose writes run in WriterChildren: kill() ends them;
// restart() is the parent opening the same files (`reopen`: returns once the store answers,
// throws SetupError when it cannot); check() reads the writes back (`check`), or a keyed store's
// keys are read (KeyedCheck).
class EmbeddedCrash final : public Crashable, public KeyedReadBack {
 public:
  // `distinct`: writes check() tells apart (Crashable::distinct_writes).
  EmbeddedCrash(WriterChildren& children, std::string store, std::function<void()> reopen,
                std::function<std::vector<WriteState>(std::span<const uint64_t>)> check, std::string note,
                uint64_t distinct = UINT64_MAX)
      : children_(children),
        store_(std::move(store)),
        reopen_(std::move(reopen)),
        check_(std::move(check)),
        note_(std::move(note)),
        distinct_(distinct) {}
  EmbeddedCrash(WriterChildren& children, std::string store, std::function<void()> reopen, KeyedCheck keyed,
                std::string note, uint64_t distinct = UINT64_MAX)
      : children_(children),
        store_(std::move(store)),
        reopen_(std::move(reopen)),
        keyed_(std::move(keyed)),
        note_(std::move(note)),
        distinct_(distinct) {
    if (keyed_.held) reads_keys(this);
  }
  std::string victim() const override { return "writer process (" + store_ + ")"; }
  void kill() override { children_.kill_all(); }
  void restart() override { reopen_(); }
  std::vector<WriteState> check(std::span<const uint64_t> seqs) override { return check_(seqs); }
  std::string note() const override { return note_; }
  uint64_t distinct_writes() const override { return distinct_; }
  void keys_of(uint64_t seq, std::vector<KeyWrite>& out) const override {
    if (keyed_.keys_of) keyed_.keys_of(seq, out);
  }
  std::vector<Held> held(std::span<const uint64_t> keys) override { return keyed_.held(keys); }

 private:
  WriterChildren& children_;
  std::string store_;
  std::function<void()> reopen_;
  std::function<std::vector<WriteState>(std::span<const uint64_t>)> check_;
  KeyedCheck keyed_;
  std::string note_;
  uint64_t distinct_;
};

}  // namespace mw
