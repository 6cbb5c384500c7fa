// RabbitMQ as a queue (adapters/rabbitmq) against a real rabbitmq-server, started once for this
// test binary (an Erlang boot takes seconds) and stopped by the last case, which then looks for
// anything left behind: epmd, beam.smp, the Mnesia dir.
#if MWBENCH_WITH_RABBITMQ
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <dirent.h>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "adapters/rabbitmq/amqp.h"
#include "adapters/rabbitmq/server.h"
#include "core/driver.h"
#include "core/runner.h"
#include "queue/queue.h"
#include "services/services.h"
#include "tests/fault_checks.h"
#include "tests/helpers.h"
#include "tests/queue_checks.h"
#include "tests/store_checks.h"

using namespace mw;
using mw::test::check_exactly_once;
using mw::test::exit_of;

namespace {

constexpr const char* kBinary = "/usr/lib/rabbitmq/bin/rabbitmq-server";

// The broker the adapter starts (the same shared service: same key).
std::shared_ptr<Service> broker() {
  return shared_service(std::string("rabbitmq:") + kBinary, rabbitmq::server_spec(kBinary));
}

Job rabbit_job(const std::string& op, uint64_t n, int clients) {
  Job j = test::make_job("rabbitmq", op, n, clients);
  j.timeout_s = 2;
  j.pipeline = 8;
  return j;
}

rabbitmq::Endpoint endpoint() {
  rabbitmq::Endpoint ep;
  ep.port = broker()->port();
  ep.timeout_s = 2;
  return ep;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Processes whose command line contains `needle` (NULs between arguments).
int processes_with(const std::string& needle) {
  int n = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (slurp(std::string("/proc/") + e->d_name + "/cmdline").find(needle) != std::string::npos) ++n;
  }
  if (d) closedir(d);
  return n;
}

}  // namespace

TEST_CASE("rabbitmq: produce, consume, roundtrip exactly once on classic and quorum queues") {
  for (const char* type : {"classic", "quorum"}) {
    for (const char* op : {"produce", "consume", "roundtrip"}) {
      CAPTURE(type);
      CAPTURE(op);
      Job j = rabbit_job(op, 1000, 2);
      j.opts["queue-type"] = type;
      j.opts["consumers"] = "2";
      j.opts["queues"] = "2";
      j.opts["prefetch"] = "20";
      JobResult r = run_one(j);
      check_exactly_once(r, 1000);
      CHECK(r.server.at("queue-type") == type);
      if (std::string(op) == "consume") CHECK(r.queue->prefilled == 1000 + 2 * 20);  // + what each may hold
      if (std::string(op) == "roundtrip") REQUIRE(r.queue->roundtrip);
    }
  }
}

TEST_CASE("rabbitmq: fire and forget, transient messages, and each setting's contract") {
  Job j = rabbit_job("roundtrip", 500, 2);
  j.opts["confirm"] = "false";
  j.opts["persistent"] = "false";
  check_exactly_once(run_one(j), 500);
  struct Row {
    const char *type, *confirm, *persistent;
    ContractKind kind;
  };
  for (Row row : {Row{"classic", "true", "true", ContractKind::FsyncPerAck},
                  Row{"classic", "true", "false", ContractKind::Memory},
                  Row{"quorum", "true", "false", ContractKind::FsyncPerAck},
                  Row{"quorum", "false", "true", ContractKind::Memory}}) {
    Job k = rabbit_job("produce", 1, 1);
    k.opts["queue-type"] = row.type;
    k.opts["confirm"] = row.confirm;
    k.opts["persistent"] = row.persistent;
    auto c = test::make_adapter("rabbitmq", k)->abilities(k).contract;
    CAPTURE(row.type);
    REQUIRE(c);
    CHECK(c->kind == row.kind);
  }
}

TEST_CASE("rabbitmq: a foreign consumer's message is lost, a foreign producer's altered one corrupt") {
  Job j = rabbit_job("produce", 200, 1);
  auto a = test::make_adapter("rabbitmq", j);
  a->prepare(j);
  JobResult r = measure(j, *a);
  REQUIRE(r.ops_ok == 200);
  const std::string q = a->describe().at("key");
  {
    rabbitmq::Amqp thief(endpoint());
    amqp_rpc_reply_t g = amqp_basic_get(thief.get(), 1, rabbitmq::bytes_of(q), 1);  // no-ack: taken for good
    REQUIRE(g.reply_type == AMQP_RESPONSE_NORMAL);
    REQUIRE(g.reply.id == AMQP_BASIC_GET_OK_METHOD);
    amqp_message_t m;
    REQUIRE(amqp_read_message(thief.get(), 1, &m, 0).reply_type == AMQP_RESPONSE_NORMAL);
    std::string body(static_cast<const char*>(m.body.bytes), m.body.len);
    amqp_destroy_message(&m);
    body[body.size() - 1] = 'y';  // the same message, one byte changed, put back by someone else
    REQUIRE(amqp_basic_publish(thief.get(), 1, amqp_empty_bytes, rabbitmq::bytes_of(q), 0, 0, nullptr,
                               rabbitmq::bytes_of(body)) == AMQP_STATUS_OK);
  }
  Verdict v = a->verify(j, {r.ops_ok, 0, 0, 0});
  auto* qa = dynamic_cast<QueueAdapter*>(a.get());
  CAPTURE(v.detail);
  CHECK(!v.ok);
  CHECK(qa->figures().lost == 1);
  CHECK(qa->figures().corrupt == 1);
  CHECK(v.detail.find("1 lost, 0 duplicated, 0 never acknowledged, 1 corrupt") != std::string::npos);
  a->teardown();
}

// An external cluster taken by its nodes' addresses (--host HOST[:PORT],...): each connection starts
// at the next node and passes over one that refuses (a port nothing listens on); a bad entry is one
// line and exit 2.
TEST_CASE("rabbitmq: --host takes a cluster's nodes, a dead one passed over; a bad address is one line") {
  test::check_host_list(rabbit_job("roundtrip", 500, 4), broker()->port(), ":5672");
}

TEST_CASE("rabbitmq: a queue deleted mid-run fails the publishes that follow") {
  Job j = rabbit_job("produce", 0, 1);
  j.duration_s = 2;
  j.timeout_s = 1;
  auto a = test::make_adapter("rabbitmq", j);
  a->prepare(j);
  const std::string q = a->describe().at("key");
  JobResult r = test::measure_while(j, *a, 500, [&] { rabbitmq::Amqp(endpoint()).remove(q); });
  a->teardown();
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed > 0);
  CHECK(r.failed());
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples.front().find("was the queue deleted?") != std::string::npos);
}

TEST_CASE("rabbitmq: --crash kill: every confirmed persistent message on a durable queue survives") {
  Job j = rabbit_job("produce", 4000, 2);
  j.pipeline = 16;
  j.opts["crash"] = "kill";
  JobResult r = run_one(j);
  CAPTURE(r.message);
  REQUIRE(r.durability.ran);
  CHECK(r.durability.victim == "rabbitmq-server");
  CHECK(r.durability.acked > 0);
  CHECK(r.durability.lost == 0);
  Job c = rabbit_job("consume", 10, 1);
  c.opts["crash"] = "kill";
  CHECK(run_one(c).message ==
        "rabbitmq: --crash kill needs op produce on the rabbitmq-server mwbench starts (no --host)");
  for (const char* crash : {"kill", "power"}) {  // the refusal names the crash asked for
    c.opts["crash"] = crash;
    CHECK(run_one(c).message.find(std::string("rabbitmq: --crash ") + crash + " needs op produce") == 0);
  }
}

// RabbitMQ confirms a persistent message on a durable classic queue once it is fsynced to disk
// (the publisher confirms guide): a power cut keeps every confirmed one.
TEST_CASE("rabbitmq: --crash power: every confirmed persistent message on a durable queue survives") {
  Job j = rabbit_job("produce", 4000, 2);
  j.pipeline = 16;
  const DurabilityResult d = test::power_cut(j);
  CHECK(d.victim == "rabbitmq-server");
  CHECK(d.acked > 0);
  CHECK(d.lost == 0);
}

// A quorum queue confirms a message once a majority (one node: this one) has fsynced it to its
// Raft log (the quorum queues guide). Killed within 3 s of its declaration, RabbitMQ 3.10 lost the
// queue's Raft member ("leader not known" after the restart): the crash job waits that out.
TEST_CASE("rabbitmq: --crash kill and power: a quorum queue keeps every confirmed message") {
  Job j = rabbit_job("produce", 4000, 2);
  j.pipeline = 16;
  j.opts["queue-type"] = "quorum";
  const DurabilityResult p = test::power_cut(j);
  CHECK(p.victim == "rabbitmq-server");
  CHECK(p.acked > 0);
  CHECK(p.lost == 0);
  j.opts["crash"] = "kill";
  JobResult r = run_one(j);
  CAPTURE(r.message);
  CAPTURE(r.durability.detail);
  REQUIRE(r.durability.ran);
  CHECK(r.durability.checked);
  CHECK(r.durability.acked > 0);
  CHECK(r.durability.lost == 0);
}

// --fault restart on the rabbitmq-server mwbench starts (the job's own, not the shared one): a
// roundtrip at -c 2 on a quorum queue with confirms, the broker SIGKILLed early in the run and started
// again on its node dir. The restart is a cold Erlang boot, most of the run on a loaded machine (a
// fault at 40% of a few seconds would leave no run after it): the fault comes at 10% of 18 s, and
// --timeout waits for the boot. The producers and the consumer connect again, and
// every confirmed message comes out (a quorum queue's confirm: fsynced to its Raft log). An ack in
// flight at the kill may be lost: a message delivered again is allowed (at least once), counted.
TEST_CASE("rabbitmq: --fault restart on the managed broker: clients reconnect, no confirmed message lost") {
  Job j = rabbit_job("roundtrip", 0, 2);
  j.duration_s = 18;
  j.timeout_s = 30;  // the restart's boot, within the run's patience
  j.faults = parse_faults("restart@10%");
  j.reconnect_backoff_s = 0.2;
  j.opts["queue-type"] = "quorum";
  const JobResult r = run_one(j);
  const FaultResult& f = test::check_fault_ridden_out(r, "restart", j.timeout_s);
  CHECK(f.lost == -1);  // a queue's messages are the ledger's, not a read-back's
}

// --cluster 3 --queue-type quorum: three rabbitmq-server nodes mwbench starts (three cold Erlang
// boots, the two joining ones side by side), a quorum queue with a member on each; a roundtrip at
// -c 2 (one consumer), the queue's leader SIGKILLed at 3 s (it stays down): the two left elect a
// leader, the clients reconnect to them, and the ledger finds every confirmed message consumed (a
// quorum queue's confirm means a majority, two nodes, fsynced it).
TEST_CASE("rabbitmq cluster: 3 nodes, the quorum queue's leader killed mid-run: window, ops after, nothing lost") {
  Job j = rabbit_job("roundtrip", 0, 2);
  j.duration_s = 12;
  j.timeout_s = 10;
  j.interval_s = 0.2;
  j.faults = parse_faults("kill-node@3s");
  j.reconnect_backoff_s = 0.2;
  j.opts["cluster"] = "3";
  j.opts["queue-type"] = "quorum";
  const JobResult r = run_one(j);
  // The window: the election, or a confirm lost with the leader (its publish waits --timeout).
  const FaultResult& f = test::check_fault_ridden_out(r, "kill-node", j.timeout_s + 2);
  CAPTURE(r.verify.detail);
  CHECK_MESSAGE(f.node.find(", the queue's leader") != std::string::npos, f.node);
  CHECK(f.node.rfind("node-", 0) == 0);
  CHECK_MESSAGE(f.promoted.rfind("node-", 0) == 0, f.promoted);  // another node leads the queue
  CHECK(f.promoted.substr(0, 6) != f.node.substr(0, 6));
  CHECK(f.queue_contract.rfind("replicated: quorum queue on 3 nodes", 0) == 0);
  // The publishers are back for good: a channel whose queue lost its leader went on refusing
  // (basic.nack) about every other publish to the run's end until the publisher took a new
  // connection; the failures are the window's few now.
  CHECK_MESSAGE(r.ops_failed * 10 < r.ops_ok, r.ops_failed << " failed, " << r.ops_ok << " ok");
  CHECK(r.target.find(" quorum on 3 nodes") != std::string::npos);
}

TEST_CASE("rabbitmq cluster: bad --cluster and kill-node input is one line and exit 2, before any server") {
  auto refused = [](std::map<std::string, std::string> opts, const std::string& faults) {
    return test::refused_fault_job(rabbit_job("produce", 0, 1), opts, faults);
  };
  CHECK(refused({{"cluster", "3"}, {"queue-type", "quorum"}, {"host", "10.0.0.1"}}, "") ==
        "rabbitmq: --cluster starts its own nodes on 127.0.0.1: drop --host");
  CHECK(refused({{"cluster", "3"}}, "") ==
        "rabbitmq: --cluster replicates quorum queues (a classic queue lives on one node): add --queue-type quorum");
  CHECK(refused({{"cluster", "2"}, {"queue-type", "quorum"}}, "").find("--cluster 2: a cluster takes 3 to 5 nodes") !=
        std::string::npos);
  CHECK(refused({}, "kill-node@40%") ==
        "--fault kill-node@40%: kill-node needs a cluster: add --cluster 3 --queue-type quorum");
  CHECK(refused({{"cluster", "3"}, {"queue-type", "quorum"}}, "kill@40%") ==
        "--fault kill@40%: a cluster takes kill-node (one node SIGKILLed), not kill");
  CHECK(refused({{"cluster", "3"}, {"queue-type", "quorum"}, {"crash", "kill"}}, "") ==
        "rabbitmq: --crash needs the one rabbitmq-server mwbench starts (no --cluster)");
}

TEST_CASE("rabbitmq: wrong credentials are a set-up error naming the login") {
  Job j = rabbit_job("produce", 10, 1);
  j.opts["user"] = "nobody";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("rabbitmq 127.0.0.1:" + std::to_string(broker()->port()) + ": login as nobody") == 0);
  CHECK(r.message.find("ACCESS_REFUSED") != std::string::npos);
  Job w = rabbit_job("produce", 10, 1);  // the right user, a wrong password: refused, never shown
  w.opts["password-env"] = "MWBENCH_TEST_RABBIT_PW";
  setenv("MWBENCH_TEST_RABBIT_PW", "wr0ng-pw", 1);
  JobResult wr = run_one(w);
  unsetenv("MWBENCH_TEST_RABBIT_PW");
  CAPTURE(wr.message);
  CHECK(wr.state == JobResult::State::SetupFailed);
  CHECK(wr.message.find("login as guest") != std::string::npos);
  CHECK(wr.message.find("ACCESS_REFUSED") != std::string::npos);
  CHECK(wr.message.find("wr0ng-pw") == std::string::npos);
  CHECK(wr.message.find('\n') == std::string::npos);
}

TEST_CASE("rabbitmq: a SIGSTOPped broker ends the run in about two timeouts") {
  Job j = rabbit_job("roundtrip", 0, 2);
  j.duration_s = 20;
  j.timeout_s = 1;
  test::check_sigstop_ends_run(j, broker());
}

TEST_CASE("rabbitmq: a broker killed mid-run fails what was in flight; stopped, it leaves nothing behind") {
  auto svc = broker();
  const std::string dir = svc->dir();
  const std::string env = slurp("/proc/" + std::to_string(svc->pid()) + "/environ");
  const size_t at = env.find("ERL_EPMD_PORT=");
  REQUIRE(at != std::string::npos);
  const std::string epmd =
      std::string("epmd") + '\0' + "-port" + '\0' + env.substr(at + 14, env.find('\0', at) - at - 14);
  CHECK(processes_with(epmd) == 1);
  CHECK(processes_with(dir) >= 1);  // beam.smp's arguments name its Mnesia and log dirs

  Job j = rabbit_job("produce", 0, 2);
  j.duration_s = 20;
  j.timeout_s = 1;
  test::check_kill_fails_run(j, svc);

  svc->restart();  // the same node on its own dir: the broker answers again
  check_exactly_once(run_one(rabbit_job("roundtrip", 100, 1)), 100);
  svc.reset();
  stop_shared_services();
  struct stat st;
  CHECK(stat(dir.c_str(), &st) != 0);  // the temp dir, Mnesia inside it, is gone
  CHECK(processes_with(dir) == 0);     // no beam.smp
  CHECK(processes_with(epmd) == 0);    // no epmd
}
#endif
