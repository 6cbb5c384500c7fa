// The null adapter does nothing, so `mwbench null -n 50000000` shows the driver's own cost
// per op. `--fail-every K` makes every K-th op fail, to see how failures are reported.
#include "null.h"

namespace mw {
namespace {

class NullClient final : public Client {
 public:
  explicit NullClient(uint64_t fail_every) : fail_every_(fail_every) {}
  OpResult run(uint64_t seq) override {
    if (fail_every_ && (seq + 1) % fail_every_ == 0) return {Status::Error, 0, "failed on purpose (--fail-every)"};
    return {};
  }

 private:
  uint64_t fail_every_;
};

class NullAdapter final : public Adapter {
 public:
  explicit NullAdapter(const Job& j) : fail_every_(static_cast<uint64_t>(j.integer("fail-every", 0))) {}
  std::unique_ptr<Client> open(const Job&, int) override { return std::make_unique<NullClient>(fail_every_); }
  std::string target() const override { return "-"; }

 private:
  uint64_t fail_every_;
};

}  // namespace

AdapterSpec null_adapter_spec() {
  return {.name = "null",
          .summary = "does nothing: the driver's own cost per op",
          .ops = {"nop"},
          .default_ops = "nop",
          .options = {{"fail-every", "make every K-th op fail (0: never)", "0", false, OptionSpec::Kind::Int, {}, false, 0, 1000000000000}},
          .unavailable = nullptr,
          .make = [](const Job& j) { return std::make_unique<NullAdapter>(j); }};
}

}  // namespace mw
