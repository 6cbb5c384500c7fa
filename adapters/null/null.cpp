// The null adapter does nothing, so `mwbench null -n 50000000` shows the driver's own cost
// per op. `--fail-every K` makes every K-th op fail, to see how failures are reported;
// `--throw-every K` makes it throw instead, as a broken adapter would.
#include "adapters/null/null.h"

#include <stdexcept>

#include "api/options.h"
#include "config/workload_spec.h"

namespace mw {
namespace {

enum class Op { Nop };

struct NullOptions {
  uint64_t fail_every = 0;
  uint64_t throw_every = 0;
};

class NullClient final : public Client {
 public:
  NullClient(uint64_t fail_every, uint64_t throw_every) : fail_every_(fail_every), throw_every_(throw_every) {}
  OpResult run(uint64_t seq) override {
    if (throw_every_ && (seq + 1) % throw_every_ == 0) throw std::runtime_error("thrown on purpose (--throw-every)");
    if (fail_every_ && (seq + 1) % fail_every_ == 0) return {Status::Error, 0, "failed on purpose (--fail-every)"};
    return {};
  }
  // The workload's requests: nothing stored, so nothing is read back; the value bytes are not
  // made either (the figure is the driver's and the workload's own cost).
  OpResult run_request(const Request& r) override { return run(r.seq); }

 private:
  uint64_t fail_every_, throw_every_;
};

class NullAdapter final : public Adapter {
 public:
  explicit NullAdapter(const Job& j) : o_(options_of<NullOptions>(j)) {}
  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<NullClient>(o_.fail_every, o_.throw_every);
  }
  std::string target() const override { return "-"; }

 private:
  NullOptions o_;
};

}  // namespace

AdapterSpec null_adapter_spec() {
  return {.name = "null",
          .summary = "does nothing: the driver's own cost per op",
          .ops = {{"nop", Op::Nop}},
          .default_ops = "nop",
          .options = {opt(&NullOptions::fail_every,
                          {.name = "fail-every", .help = "make every K-th op fail (0: never)", .max = 1e12}),
                      opt(&NullOptions::throw_every,
                          {.name = "throw-every",
                           .help = "make every K-th op throw, as a broken adapter would (0: never)",
                           .max = 1e12})},
          .unavailable = nullptr,
          .make = [](const Job& j, WorkloadPtr) { return std::make_unique<NullAdapter>(j); },
          .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw, KvOp::Scan},
          .families = {Family::KeyedStore},
          .target = TargetKind::None,
          .baseline = true,
          .reset = "nothing to reset: no target"};
}

}  // namespace mw
