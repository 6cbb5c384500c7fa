// What the queue tests share (redis, gearman, sqlite, rabbitmq, nats, beanstalkd): a job whose every message
// came out exactly once.
#pragma once
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/driver.h"
#include "core/runner.h"
#include "queue/queue.h"
#include "results/result.h"
#include "services/services.h"
#include "tests/helpers.h"

namespace mw::test {

// J pointed at the server at PORT as user "bob" with its password in the environment variable
// ENV (--password-env), and run once with a wrong one there; ENV is unset afterwards.
inline JobResult run_with_wrong_password(Job& j, int port, const char* env) {
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(port);
  j.opts["user"] = "bob";
  j.opts["password-env"] = env;
  setenv(env, "wr0ng-pw", 1);
  JobResult r = run_one(j);
  unsetenv(env);
  return r;
}

// An external cluster taken by its nodes' addresses (--host HOST:PORT,...): `j` (n ops) pointed at
// a node that is down (a port nothing listens on) and the live one at `live`, run: the dead node
// passed over, every op done exactly once, the target naming both. Then with `bad` as the second
// entry: one line, exit 2, "<adapter>: --host expects ... got '<bad>'".
inline void check_host_list(Job j, int live, const std::string& bad) {
  const int dead = free_port();
  const std::string at = "127.0.0.1:" + std::to_string(live);
  j.opts["host"] = "127.0.0.1:" + std::to_string(dead) + "," + at;
  JobResult r = run_one(j);
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok == j.n);
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
  CHECK(r.target.rfind("127.0.0.1:" + std::to_string(dead) + "," + std::to_string(live), 0) == 0);
  j.opts["host"] = at + "," + bad;
  JobResult b = run_one(j);
  CHECK(b.state == JobResult::State::SetupFailed);
  CHECK(exit_of(b) == 2);
  CHECK(b.message == j.adapter + ": --host expects HOST[:PORT][,HOST[:PORT]...] (port 1 to 65535), got '" + bad + "'");
}

inline void check_exactly_once(const JobResult& r, uint64_t n) {
  CAPTURE(r.message);
  CAPTURE(r.verify.detail);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == n);
  CHECK(r.ops_failed == 0);
  CHECK(r.ops_not_run == 0);
  CHECK(r.verify.checked);
  CHECK(r.verify.ok);
  REQUIRE(r.queue);
  CHECK(r.queue->exactly_once());
  CHECK(r.queue->consumed == r.queue->produced);
  CHECK(r.queue->sum_consumed == r.queue->sum_produced);
  CHECK(r.verify.detail.find("every message exactly once") != std::string::npos);
}

// A job with one fault the clients came back from: the fault of `kind` ran without an error, its
// window is reported (over 0, under `max_window_s`), and ops ran after it. The fault.
inline const FaultResult& check_fault_came_back(const JobResult& r, const std::string& kind, double max_window_s) {
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CAPTURE(r.verify.detail);
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK(f.kind == kind);
  CHECK(f.back);
  CHECK(f.window_s() > 0);
  CHECK(f.window_s() < max_window_s);
  CHECK(f.ops_after > 0);
  return f;
}

// A queue job with one fault the service came back from: check_fault_came_back, and the end check
// passed (what the ledger found judged against the delivery promised) and the job exits 0. The
// fault, for the caller's own checks.
inline const FaultResult& check_fault_back(const JobResult& r, const std::string& kind, double max_window_s) {
  const FaultResult& f = check_fault_came_back(r, kind, max_window_s);
  CAPTURE(r.verify.detail);
  REQUIRE(r.queue);
  CHECK(r.queue->produced > 0);
  CHECK(r.verify.checked);
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
  RunResult run;
  run.jobs.push_back(r);
  CHECK(exit_code(run) == 0);
  return f;
}

// check_fault_back, and the ledger found no acknowledged message lost: the set-up rode it out.
inline const FaultResult& check_fault_ridden_out(const JobResult& r, const std::string& kind, double max_window_s) {
  const FaultResult& f = check_fault_back(r, kind, max_window_s);
  CHECK(f.messages_lost == 0);
  CHECK(r.queue->lost == 0);
  return f;
}

// The end check of prepared job `j` after its run `r`, which must pass; the adapter is torn down.
inline void check_end_passes(Adapter& a, const Job& j, const JobResult& r) {
  Verdict v = a.verify(j, {r.ops_ok, 0, 0, 0});
  CAPTURE(v.detail);
  CHECK(v.ok);
  a.teardown();
}

// Consume (`consume_clients` clients) and roundtrip (2 clients) of `n` messages, `j`'s adapter and
// options with 2 consumers: each exactly once; `more` checks more of each run (its job, its result).
inline void check_consume_and_roundtrip(const Job& j, uint64_t n, int consume_clients,
                                        const std::function<void(const Job&, const JobResult&)>& more = {}) {
  for (const char* op : {"consume", "roundtrip"}) {
    CAPTURE(op);
    Job q = j;
    q.op = op;
    q.n = n;
    q.clients = q.op == "consume" ? consume_clients : 2;
    q.opts["consumers"] = "2";
    const JobResult r = run_one(q);
    check_exactly_once(r, n);
    if (more) more(q, r);
  }
}

// --queues 3 on a queue backend: a produce of 300 messages (`j`'s adapter and options), then
// `look` at each queue k (named as describe()'s `first`, the first queue's name, with its last
// character k) before the end check, which must pass; then consume (j's clients) and roundtrip (2
// clients, 2 consumers) of 600, each exactly once.
inline void check_three_queues(Job j, const std::string& first,
                               const std::function<void(Adapter&, const std::string& name, int k)>& look) {
  j.op = "produce";
  j.n = 300;
  j.opts["queues"] = "3";
  auto a = make_adapter(j.adapter, j);
  a->prepare(j);
  JobResult r = measure(j, *a);
  REQUIRE(r.ops_ok == 300);
  const std::string name0 = a->describe().at(first);
  REQUIRE(name0.size() > 2);
  CHECK(name0.back() == '0');
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k);
    look(*a, name0.substr(0, name0.size() - 1) + std::to_string(k), k);
  }
  check_end_passes(*a, j, r);
  check_consume_and_roundtrip(j, 600, j.clients);
}

// --message-size `dist` on a queue backend (`j`'s adapter and options): a produce of 300 messages,
// whose bytes on the server `held` reads (another client's look, before the end check): each one
// intact and of the size drawn for its id, the sizes varied, the job's bytes their sum; the end
// check passes. Then consume (its clients took the bytes of every message prefilled) and roundtrip
// (2 clients, 2 consumers) of 300, each exactly once, their figures keeping the distribution.
inline void check_message_sizes(Job j, const std::string& dist,
                                const std::function<std::vector<std::string>(Adapter&)>& held) {
  const SizeDist sizes = queue::message_sizes(dist);
  j.opts["message-size"] = dist;
  j.op = "produce";
  j.n = 300;
  auto a = make_adapter(j.adapter, j);
  a->prepare(j);
  JobResult r = measure(j, *a);
  REQUIRE(r.ops_ok == 300);
  const std::vector<std::string> msgs = held(*a);
  CHECK(msgs.size() == 300);
  std::set<size_t> seen;
  size_t wrong = 0;
  uint64_t bytes = 0;
  for (const std::string& m : msgs) {
    const queue::Decoded d = queue::decode(m);
    if (!d.ok || m.size() != queue::size_of(sizes, d.id)) ++wrong;
    seen.insert(m.size());
    bytes += m.size();
  }
  CHECK(wrong == 0);
  CHECK(seen.size() > 1);
  CHECK(*seen.begin() >= sizes.min());
  CHECK(*seen.rbegin() <= sizes.max());
  CHECK(r.bytes == bytes);
  check_end_passes(*a, j, r);
  check_consume_and_roundtrip(j, 300, 2, [&](const Job& q, const JobResult& k) {
    CHECK(k.queue->message_size == sizes.text());
    if (q.op != "consume") return;
    uint64_t prefilled = 0;  // messages 0 to 299, each taken by a client
    for (uint64_t id = 0; id < 300; ++id) prefilled += queue::size_of(sizes, id);
    CHECK(k.bytes == prefilled);
  });
}

// Measures the prepared job while `act` (deleting its queue, stopping the server) runs once,
// `after_ms` into it.
inline JobResult measure_while(const Job& j, Adapter& a, int after_ms, const std::function<void()>& act) {
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    act();
  });
  JobResult r = measure(j, a);
  t.join();
  return r;
}

// A job of --duration 20 s whose managed server is SIGSTOPped (its whole group) 0.7 s in: the
// run must end in about two timeouts, with ops done and the job failed. Acknowledged produce
// counts its timeouts; a fire-and-forget one (core NATS) has none to wait for, and the ledger
// charges what the stopped server never delivered as lost.
inline void check_sigstop_ends_run(const Job& j, const std::shared_ptr<Service>& svc, bool acknowledged = true) {
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    kill(-svc->pid(), SIGSTOP);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stopper.join();
  kill(-svc->pid(), SIGCONT);
  CAPTURE(r.message);
  CAPTURE(r.verify.detail);
  CHECK(took < 8);  // not the 20 s of --duration
  CHECK(r.ops_ok > 0);
  if (acknowledged)
    CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  else
    CHECK(r.verify.detail.find(" lost") != std::string::npos);
  CHECK(r.failed());
}

// The same with the server SIGKILLed 0.7 s in: what was in flight fails, the run ends early.
inline void check_kill_fails_run(const Job& j, const std::shared_ptr<Service>& svc) {
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    svc->kill_now();
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  killer.join();
  CAPTURE(r.message);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(8));
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed > 0);
  CHECK(r.failed());
}

// A broker's --crash power job (produce, cut at 50% of -n or of --duration): it ran through the page-cache model,
// was checked, its counts add up, nothing came back altered, and a loss is a finding (expect any).
// Returns the durability result for the verdict the broker documents.
inline DurabilityResult power_cut(Job j) {
  j.opts["crash"] = "power";
  JobResult r = run_one(j);
  REQUIRE_MESSAGE(r.durability.ran, r.message);
  const DurabilityResult& d = r.durability;
  CAPTURE(d.detail);
  CHECK(d.checked);
  CHECK(d.model == "mwbench-pagecache-1");
  CHECK(d.acked > 0);
  if (j.n) {                                 // a --duration job has no -n to add up to
    CHECK(d.acked + d.in_doubt >= j.n / 2);  // cut at half the ops done: a timed-out one is done, in doubt
    CHECK(d.acked + d.in_doubt + d.never_sent == j.n);
  }
  CHECK(d.corrupt == 0);
  CHECK(!r.failed());
  return d;
}

}  // namespace mw::test
