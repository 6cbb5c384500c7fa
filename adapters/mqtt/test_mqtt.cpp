// MQTT as a queue (adapters/mqtt) against a real mosquitto, one managed broker per setting shared
// by the cases.
#if MWBENCH_WITH_MQTT
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "adapters/mqtt/client.h"
#include "adapters/mqtt/mqtt.h"
#include "core/driver.h"
#include "core/runner.h"
#include "queue/queue.h"
#include "services/services.h"
#include "tests/fake_server.h"
#include "tests/helpers.h"
#include "tests/queue_checks.h"

using namespace mw;
using test::check_exactly_once;
using test::exit_of;

namespace {

// The broker the adapter starts for its default settings (the same shared service: same key).
std::shared_ptr<Service> broker() {
  mqtt::BrokerSettings s;
  return shared_service(s.key(), mqtt::broker_spec(s));
}

Job mqtt_job(const std::string& op, uint64_t n, int clients) {
  Job j = test::make_job("mqtt", op, n, clients);
  j.timeout_s = 2;
  j.pipeline = 8;
  return j;
}

// A fake MQTT 3.1.1 broker (test::FakeServer): CONNACK, PUBACK, PINGRESP, and a SUBACK followed by
// a PUBLISH whose remaining length declares `declared` bytes, of which it sends `sent`.
void hostile_broker(int fd, const std::atomic<bool>& done, uint64_t declared, uint64_t sent) {
  std::string in;
  auto say = [&](std::string_view bytes) { return test::FakeServer::send_all(fd, bytes, done); };
  while (test::FakeServer::read_some(fd, in, done)) {
    for (;;) {  // each whole packet from the client
      size_t at = 1;
      uint64_t length = 0, mult = 1;
      bool whole = false;
      for (; at < in.size() && at <= 4; ++at, mult *= 128) {
        length += (static_cast<uint8_t>(in[at]) & 127u) * mult;
        if (!(static_cast<uint8_t>(in[at]) & 128u)) {
          whole = in.size() >= ++at + length;
          break;
        }
      }
      if (!whole) break;
      const uint8_t type = static_cast<uint8_t>(in[0]) >> 4;
      const std::string body = in.substr(at, length);
      in.erase(0, at + length);
      if (type == 1 && !say(std::string("\x20\x02\x00\x00", 4))) return;  // CONNECT: CONNACK, accepted
      if (type == 3 && body.size() >= 4) {                                // PUBLISH at QoS 1: PUBACK its packet id
        const size_t topic = (static_cast<uint8_t>(body[0]) << 8 | static_cast<uint8_t>(body[1])) + 2u;
        if (!say(std::string("\x40\x02", 2) + body.substr(topic, 2))) return;
      }
      if (type == 12 && !say(std::string("\xd0\x00", 2))) return;  // PINGREQ: PINGRESP
      if (type == 14) return;                                      // DISCONNECT
      if (type != 8) continue;
      // SUBSCRIBE: SUBACK at QoS 1, then the hostile PUBLISH
      std::string header = "\x30";
      for (uint64_t left = declared; left || header.size() == 1; left /= 128)
        header += static_cast<char>((left % 128) | (left >= 128 ? 128 : 0));
      if (!say(std::string("\x90\x03", 2) + body.substr(0, 2) + "\x01") || !say(header) ||
          !test::FakeServer::send_filler(fd, sent, done))
        return;
    }
  }
}

}  // namespace

TEST_CASE("mqtt: produce and roundtrip exactly once at QoS 0, 1 and 2, persistent and clean sessions") {
  for (std::string qos : {"0", "1", "2"}) {
    for (std::string op : {"produce", "roundtrip"}) {
      for (std::string clean : {"false", "true"}) {
        if (op == "produce" && clean == "true") continue;  // refused: below
        CAPTURE(qos);
        CAPTURE(op);
        CAPTURE(clean);
        Job j = mqtt_job(op, 1000, 2);
        j.opts["qos"] = qos;
        j.opts["queues"] = "3";
        j.opts["consumers"] = "2";
        j.opts["clean-session"] = clean;
        JobResult r = run_one(j);
        check_exactly_once(r, 1000);
        CHECK(r.server.at("qos") == qos);
        if (op == "roundtrip") CHECK(r.queue->roundtrip);
        if (op == "produce") CHECK(r.queue->drained == 1000);  // kept for the session while it was away
      }
    }
  }
}

TEST_CASE("mqtt: consume takes a prefilled backlog exactly once at QoS 0, 1 and 2, a session per client") {
  for (std::string qos : {"0", "1", "2"}) {
    CAPTURE(qos);
    Job j = mqtt_job("consume", 999, 3);
    j.warmup_ops = 7;  // shares of -n and of the warm-up both uneven across the 3 sessions
    j.opts["qos"] = qos;
    j.opts["queues"] = "2";
    JobResult r = run_one(j);
    check_exactly_once(r, 999);
    // Every session ended in order (its acknowledgements read before its close): nothing came back.
    CHECK(r.queue->redelivered == 0);
    CHECK(r.queue->prefilled == 999 + 7 + 3);  // a spare message per session, drained by the end check
    CHECK(r.queue->drained == 3);
  }
}

TEST_CASE("mqtt: --crash kill loses what the broker kept in memory, keeps what --persistence saved") {
  Job j = mqtt_job("produce", 2000, 2);
  j.opts["crash"] = "kill";
  JobResult r = run_one(j);
  CAPTURE(r.message);
  REQUIRE(r.durability.ran);
  CHECK(r.durability.acked > 0);
  CHECK(r.durability.acked + r.durability.in_doubt >= 1000);  // killed at 50% of the ops done (a timeout is done)
  CHECK(r.durability.lost == r.durability.acked);
  Job p = mqtt_job("produce", 0, 2);
  // Killed 4.5 s in: after the first save, which mosquitto makes once a whole second passed, and on a
  // loaded machine later (a clean CI killed it earlier, before any save, and lost every message).
  p.duration_s = 6;
  p.opts["crash"] = "kill";
  p.opts["crash-at"] = "75%";
  p.opts["persistence"] = "true";
  p.opts["autosave-interval"] = "1";
  JobResult q = run_one(p);
  CAPTURE(q.message);
  CAPTURE(q.durability.detail);
  REQUIRE(q.durability.ran);
  CHECK(q.durability.acked > 0);
  CHECK(q.durability.lost < q.durability.acked);
  CHECK(q.durability.corrupt == 0);
  for (const char* op : {"consume", "roundtrip"})
    for (const char* crash : {"kill", "power"}) {  // the refusal names the crash asked for
      Job k = mqtt_job(op, 10, 1);
      k.opts["crash"] = crash;
      JobResult bad = run_one(k);
      CHECK(bad.state == JobResult::State::SetupFailed);
      CHECK(bad.message.find(std::string("mqtt: --crash ") + crash + " needs op produce") != std::string::npos);
    }
}

// mosquitto acknowledges a QoS 1 publish from memory and saves its whole state every
// autosave_interval (mosquitto.db.new, fsynced, then renamed over mosquitto.db): a power cut keeps what the
// last save held and loses what came after it.
TEST_CASE("mqtt: --crash power keeps what mosquitto's last save held, loses what came after") {
  Job p = mqtt_job("produce", 0, 2);
  p.duration_s = 6;  // cut 4.5 s in: after the first save (once a whole second passed; later on a loaded machine)
  p.opts["crash-at"] = "75%";
  p.opts["persistence"] = "true";
  p.opts["autosave-interval"] = "1";
  const DurabilityResult d = test::power_cut(p);
  CHECK(d.victim == "mosquitto");
  CHECK(d.acked > 0);
  CHECK(d.lost > 0);
  CHECK(d.lost < d.acked);
  // mosquitto saves when more than autosave_interval whole seconds passed (every 2 s here, seen with
  // strace), so up to 2 s are lost, plus slack for a loaded machine.
  CHECK(d.loss_window_s <= 2.0 + 1.0);
}

TEST_CASE("mqtt: more QoS 2 publishes in flight than mosquitto takes (20) wait in libmosquitto") {
  Job j = mqtt_job("produce", 2000, 1);
  j.pipeline = 64;  // mosquitto drops a 3.1.1 client with more than 20 QoS 2 publishes awaiting PUBREL
  j.opts["qos"] = "2";
  check_exactly_once(run_one(j), 2000);
}

TEST_CASE("mqtt: each setting's contract, and bad input") {
  struct Row {
    const char *qos, *persistence, *autosave;
    ContractKind kind;
    double interval;
  };
  for (Row row :
       {Row{"0", "true", nullptr, ContractKind::Memory, 0}, Row{"1", "false", nullptr, ContractKind::Memory, 0},
        Row{"2", "true", nullptr, ContractKind::PeriodicFsync, 1800},
        Row{"1", "true", "1", ContractKind::PeriodicFsync, 1}}) {
    Job k = mqtt_job("produce", 1, 1);
    k.opts["qos"] = row.qos;
    k.opts["persistence"] = row.persistence;
    if (row.autosave) k.opts["autosave-interval"] = row.autosave;
    auto c = test::make_adapter("mqtt", k)->abilities(k).contract;
    CAPTURE(std::string(row.qos));
    REQUIRE(c);
    CHECK(c->kind == row.kind);
    CHECK(c->interval_s == doctest::Approx(row.interval));
  }
  struct Bad {
    const char *op, *name, *value, *why;
  };
  for (Bad b : {Bad{"produce", "clean-session", "true", "mqtt: --clean-session true keeps nothing"},
                Bad{"roundtrip", "autosave-interval", "5", "mqtt: --autosave-interval needs --persistence true"}}) {
    Job j = mqtt_job(b.op, 10, 1);
    j.opts[b.name] = b.value;
    JobResult r = run_one(j);
    CAPTURE(r.message);
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK(r.message.find(b.why) != std::string::npos);
  }
}

TEST_CASE("mqtt: a message taken by a foreign session is lost, one altered by a foreign publisher corrupt") {
  Job j = mqtt_job("produce", 200, 1);
  j.opts["qos"] = "1";
  auto a = test::make_adapter("mqtt", j);
  a->prepare(j);
  JobResult r = measure(j, *a);
  REQUIRE(r.ops_ok == 200);
  const std::string topic = a->describe().at("key");  // mwbench/<job>/0
  const std::string stem = topic.substr(8, topic.rfind('/') - 8);
  mqtt::Endpoint ep;
  ep.port = broker()->port();
  ep.timeout_s = 2;
  {
    mqtt::Session thief(ep, stem + "-c0", false);  // the job's own session, taken over
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (thief.messages.empty() && std::chrono::steady_clock::now() < until) REQUIRE(thief.loop(50) == "");
    REQUIRE(!thief.messages.empty());
    std::string body = thief.messages.front();
    body[body.size() - 1] = 'y';  // the same message, one byte changed, published by someone else
    mqtt::Session forger(ep, "", true);
    REQUIRE(mosquitto_publish(forger.get(), nullptr, topic.c_str(), static_cast<int>(body.size()), body.data(), 1,
                              false) == MOSQ_ERR_SUCCESS);
    for (int i = 0; i < 10; ++i) forger.loop(10);
    // the thief leaves at once: what it was handed beyond the first message comes back to the session
    const size_t taken = thief.messages.size();
    thief.messages.clear();
    Verdict v = a->verify(j, {r.ops_ok, 0, 0, 0});
    auto* qa = dynamic_cast<QueueAdapter*>(a.get());
    CAPTURE(v.detail);
    CHECK(!v.ok);
    CHECK(qa->figures().lost == taken);
    CHECK(qa->figures().corrupt == 1);
  }
  a->teardown();
}

TEST_CASE("mqtt: a SIGSTOPped broker ends the run in about two timeouts") {
  Job j = mqtt_job("roundtrip", 0, 2);
  j.duration_s = 20;
  j.timeout_s = 1;
  test::check_sigstop_ends_run(j, broker());
}

TEST_CASE("mqtt: a broker killed mid-run fails what was in flight; restarted, it serves again") {
  auto svc = broker();
  Job j = mqtt_job("produce", 0, 2);
  j.duration_s = 20;
  j.timeout_s = 1;
  test::check_kill_fails_run(j, svc);
  svc->restart();
  check_exactly_once(run_one(mqtt_job("roundtrip", 100, 1)), 100);
}
// A roundtrip at -c 2 (one consumer) for `duration_s` under `faults`, the clients reconnecting
// every 0.2 s at most.
Job fault_job(const std::string& faults, double duration_s) {
  Job j = mqtt_job("roundtrip", 0, 2);
  j.duration_s = duration_s;
  j.timeout_s = 3;
  j.faults = parse_faults(faults);
  j.reconnect_backoff_s = 0.2;
  return j;
}

// --fault restart on the mosquitto mwbench starts (the job's own, not the shared one): SIGKILLed at
// 40% of a 5 s roundtrip and started again on its temp dir. The producers and the consumer connect
// again (the consumer subscribes again: without --persistence the restarted broker knows no
// session), and the run goes on. mosquitto acknowledges from memory and saves every
// autosave_interval at best, so no setting keeps every acknowledged message across a kill: the
// job is held to at most once, and the messages lost are counted, never failed. With
// --persistence the sessions come back from the last save.
TEST_CASE("mqtt: --fault restart on the managed broker: clients reconnect, the losses counted") {
  for (std::string persistence : {"false", "true"}) {
    CAPTURE(persistence);
    Job j = fault_job("restart@40%", 5);
    j.opts["persistence"] = persistence;
    if (persistence == "true") j.opts["autosave-interval"] = "1";
    JobResult r = run_one(j);
    const FaultResult& f = test::check_fault_came_back(r, "restart", 4);
    CAPTURE(r.verify.detail);
    CHECK(f.lost == -1);  // a queue's messages are the ledger's, not a read-back's
    CHECK(f.messages_lost >= 0);
    REQUIRE(r.queue);
    CHECK(r.queue->produced > 0);
    CHECK(static_cast<int64_t>(r.queue->lost) == f.messages_lost);
    CHECK(r.queue->corrupt == 0);
    // The consumer came back: the messages after the fault came out, not only those before it.
    CHECK(r.queue->consumed > 0);
    CHECK(r.queue->lost < r.queue->produced / 2);
    CHECK(r.verify.checked);
    CHECK_MESSAGE(r.verify.ok, r.verify.detail);
    CHECK(exit_of(r) == 0);
  }
}

// --fault stop: mosquitto SIGSTOPped for 1 s at 40% and continued; the connections stay open, the
// clients wait, and the window covers the stop. Nothing is lost: the job stays exactly once.
TEST_CASE("mqtt: --fault stop on the managed broker: the window covers the stop, every message once") {
  JobResult r = run_one(fault_job("stop@40%/1s", 5));
  const FaultResult& f = test::check_fault_ridden_out(r, "stop", 4);
  CHECK(f.window_s() >= 0.9);
  CHECK(f.window_start_s <= f.at_s + 0.05);  // the last success before the SIGSTOP
  CHECK(f.window_end_s >= f.done_s - 0.05);  // the first success after the SIGCONT
  CHECK(r.queue->exactly_once());
}

// Without reconnecting (--reconnect-backoff 0: a lost client stops) a restart ends the job's
// clients: no op after the fault, never back. The checks above would see a broken reconnect.
TEST_CASE("mqtt: --fault restart with --reconnect-backoff 0: no op after the fault") {
  Job j = fault_job("restart@40%", 4);
  j.reconnect_backoff_s = 0;
  JobResult r = run_one(j);
  REQUIRE(r.faults.size() == 1);
  CHECK(r.faults[0].ops_after == 0);
  CHECK(!r.faults[0].back);
}

TEST_CASE("mqtt: --fault with --host is refused: an external broker cannot be signalled") {
  Job j = fault_job("kill@40%", 4);
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(broker()->port());
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(exit_of(r) == 2);
  CAPTURE(r.message);
  CHECK(r.message.find("--fault kill@40%") != std::string::npos);
  CHECK(r.message.find('\n') == std::string::npos);
}

TEST_CASE("mqtt: a wrong or missing password is a set-up error naming the login, never showing the password") {
  mqtt::BrokerSettings settings;
  ServiceSpec spec = mqtt::broker_spec(settings);
  // The same broker with logins: anonymous clients refused, bob's password in a password file.
  std::string& script = spec.args[1];
  const std::string anon = "allow_anonymous true";
  script.replace(script.find(anon), anon.size(), "allow_anonymous false\\npassword_file {dir}/pw");
  spec.setup = {{"mosquitto_passwd", "-b", "-c", "{dir}/pw", "bob", "right"}};
  spec.probe = [](int port) -> std::string {
    try {
      mqtt::Endpoint ep;
      ep.port = port;
      ep.timeout_s = 1;
      ep.user = "bob";
      ep.password = "right";
      mqtt::Session c(ep, "", true);
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  Service srv(spec);
  Job j = mqtt_job("roundtrip", 50, 1);
  JobResult r = test::run_with_wrong_password(j, srv.port(), "MWBENCH_TEST_MQTT_PW");
  CAPTURE(r.message);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "mqtt 127.0.0.1:" + std::to_string(srv.port()) +
                         ": connection refused: Connection Refused: "
                         "not authorised. (login as bob: are --user and the password in --password-env right?)");
  unsetenv("MWBENCH_TEST_MQTT_PW");
  CHECK(run_one(j).state == JobResult::State::SetupFailed);  // no password at all
  setenv("MWBENCH_TEST_MQTT_PW", "right", 1);
  check_exactly_once(run_one(j), 50);
  unsetenv("MWBENCH_TEST_MQTT_PW");
  Job managed = mqtt_job("roundtrip", 5, 1);
  managed.opts["user"] = "bob";
  CHECK(run_one(managed).message == "mqtt: --user needs --host (the mosquitto mwbench starts takes anonymous clients)");
}

// libmosquitto allocated the remaining length a packet declared and filled it as the bytes came
// (256 MB declared took the process's memory with it). A packet longer than the job's largest
// message and 64 KiB now ends the connection before libmosquitto reads its length's last byte.
TEST_CASE("mqtt: a PUBLISH declaring 256 MB fails its consumer as a protocol error naming the size, memory bounded") {
  test::FakeServer fake([](int fd, const std::atomic<bool>& done) { hostile_broker(fd, done, 268435455, 200 << 20); });
  Job j = mqtt_job("roundtrip", 20, 1);
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(fake.port());
  j.timeout_s = 1;
  JobResult r;
  const int64_t grew_kb = test::peak_growth_kb([&] { r = run_one(j); });
  CAPTURE(grew_kb);
  CAPTURE(r.message);
  CAPTURE(r.verify.detail);
  CHECK(grew_kb < 64 << 10);  // of the 200 MB sent, next to nothing held
  CHECK(r.failed());
  CHECK(r.verify.detail.find("consume calls failed (protocol error: a PUBLISH packet declares 268435455 bytes, more "
                             "than the 65600 this job can take (mqtt 127.0.0.1:") != std::string::npos);
}

TEST_CASE("mqtt: the packets libmosquitto reads, split anywhere: a long one refused at its length's last byte") {
  // CONNACK, a PUBLISH of 5 bytes, PINGRESP, a PUBLISH of 1 byte but its byte
  const std::string ok("\x20\x02\x00\x00\x30\x05\x00\x01tab\xd0\x00\x30\x01", 15);
  for (size_t cut = 0; cut <= ok.size(); ++cut) {
    mqtt::Packets p(100);
    const auto* b = reinterpret_cast<const unsigned char*>(ok.data());
    CHECK(p.feed(b, cut) == cut);
    CHECK(p.feed(b + cut, ok.size() - cut) == ok.size() - cut);
    CHECK(p.why().empty());
    const std::string bad("\x01\x30\xe5\x00", 4);  // that byte, then a PUBLISH declaring 101
    CHECK(p.feed(reinterpret_cast<const unsigned char*>(bad.data()), bad.size()) == 3);
    CHECK(p.why() == "protocol error: a PUBLISH packet declares 101 bytes, more than the 100 this job can take");
  }
  mqtt::Packets endless(1 << 30);
  const std::string five("\x30\xff\xff\xff\xff", 5);
  CHECK(endless.feed(reinterpret_cast<const unsigned char*>(five.data()), five.size()) == 4);
  CHECK(endless.why() == "protocol error: a PUBLISH packet's length runs past 4 bytes");
}
#endif
