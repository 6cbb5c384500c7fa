// Crash jobs on embedded stores (SQLite, Tokyo Cabinet): each client's ops run in a child
// process of mwbench, so that --crash kill has a process to SIGKILL while writes are in flight;
// the parent then opens the same files and checks them.
#pragma once
#include <sys/types.h>

#include <functional>
#include <span>
#include <string>
#include <memory>
#include <mutex>
#include <vector>

#include "adapter.h"

namespace mw {

class WriterChildren {
 public:
  ~WriterChildren() { kill_all(); }
  // Forks a child that builds its client with `make` and runs each op the returned proxy is
  // given; the proxy waits at most timeout_s for each answer. A child that is gone fails the op
  // (Status::Error) and the proxy stops. Call from the driver's thread that opens clients
  // (before the phase's threads start): fork() copies only the calling thread.
  std::unique_ptr<Client> spawn(std::function<std::unique_ptr<Client>()> make, double timeout_s);
  // SIGKILL to every child; returns once all are reaped.
  void kill_all();

 private:
  std::mutex mu_;
  std::vector<pid_t> pids_;
};

}  // namespace mw

namespace mw {

// The crash hooks of an embedded store whose writes run in WriterChildren: kill() ends them;
// restart() is the parent opening the same files (`reopen`: returns once the store answers,
// throws SetupError when it cannot); check() reads the writes back (`check`).
class EmbeddedCrash final : public Crashable {
 public:
  // `distinct`: writes check() tells apart (Crashable::distinct_writes): a key space's size.
  EmbeddedCrash(WriterChildren& children, std::string store, std::function<void()> reopen,
                std::function<std::vector<WriteState>(std::span<const uint64_t>)> check, std::string note,
                uint64_t distinct = UINT64_MAX)
      : children_(children), store_(std::move(store)), reopen_(std::move(reopen)), check_(std::move(check)),
        note_(std::move(note)), distinct_(distinct) {}
  std::string victim() const override { return "writer process (" + store_ + ")"; }
  void kill() override { children_.kill_all(); }
  void restart() override { reopen_(); }
  std::vector<WriteState> check(std::span<const uint64_t> seqs) override { return check_(seqs); }
  std::string note() const override { return note_; }
  uint64_t distinct_writes() const override { return distinct_; }

 private:
  WriterChildren& children_;
  std::string store_;
  std::function<void()> reopen_;
  std::function<std::vector<WriteState>(std::span<const uint64_t>)> check_;
  std::string note_;
  uint64_t distinct_;
};

}  // namespace mw
