// The crash hooks of a server mwbench manages (src/services/services.h), for adapters whose check is
// their own: kill the server's process group, restart it on the same directory, read back.
// A server whose children leave its process group (PostgreSQL's backends) names how they die too;
// an adapter's own kind adds what its server can do besides (adapters/postgres: pause, failover).
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "services/services.h"

namespace mw {

class ServiceCrash : public Crashable, public KeyedReadBack {
 public:
  // `restarted`: told the server's port once it answers again; `check`: reads the writes back;
  // `kill_first`: given the server's pid before its process group is killed (SIGKILLs what runs
  // outside that group).
  ServiceCrash(std::shared_ptr<Service> svc, std::function<void(int port)> restarted,
               std::function<std::vector<WriteState>(std::span<const uint64_t>)> check, std::string note,
               std::function<void(pid_t)> kill_first = {})
      : svc_(std::move(svc)),
        restarted_(std::move(restarted)),
        check_(std::move(check)),
        note_(std::move(note)),
        kill_first_(std::move(kill_first)) {}
  std::string victim() const override { return svc_->name(); }
  void kill() override {
    if (kill_first_) kill_first_(svc_->pid());
    svc_->kill_now();
  }
  void restart() override {
    svc_->restart();
    restarted_(svc_->port());
  }
  bool pause(bool on) override { return svc_->pause(on); }
  std::vector<WriteState> check(std::span<const uint64_t> seqs) override { return check_(seqs); }
  std::string note() const override { return note_; }
  // A workload's writes (Crashable::keyed): what each key holds, instead of check(); `distinct`:
  // the writes it tells apart (distinct_by_value).
  void set_held(std::function<std::vector<Held>(std::span<const uint64_t>)> held, uint64_t distinct) {
    held_ = std::move(held);
    distinct_ = distinct;
    reads_keys(held_ ? this : nullptr);
  }
  std::vector<Held> held(std::span<const uint64_t> keys) override { return held_(keys); }
  uint64_t distinct_writes() const override { return distinct_; }

 private:
  std::function<std::vector<Held>(std::span<const uint64_t>)> held_;
  uint64_t distinct_ = UINT64_MAX;
  std::shared_ptr<Service> svc_;
  std::function<void(int)> restarted_;
  std::function<std::vector<WriteState>(std::span<const uint64_t>)> check_;
  std::string note_;
  std::function<void(pid_t)> kill_first_;
};

}  // namespace mw
