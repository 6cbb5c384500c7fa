// What a job's sync or round-trip latency means for the stores people run: each rule compares
// the figure with a store's published guidance or derives a ceiling from it. The sources are
// in docs/guide/vm-checks.md. An adapter says which of
// its ops measure such a latency (AdapterSpec::latency_is); this file never names an adapter.
// A pure function of the job's figures: the writer puts it in the file (jobs[].stores), and a
// file read back gives the same words (the loader reads every figure they are made of).
#include "results/writer.h"
#include "util/text.h"

namespace mw {

namespace {

std::string ms(double ns) { return fmt(ns / 1e6, ns < 1e7 ? 2 : 1) + " ms"; }
std::string us(double ns) { return fmt(ns / 1e3, ns < 1e5 ? 1 : 0) + " us"; }
std::string per_s(double ns) { return ns > 0 ? grouped(1e9 / ns) + "/s" : "-"; }

// etcd: its WAL's syncs (fdatasync) should stay under 10 ms at p99; 50 sequential synced
// writes per second are the minimum, 500 what heavily loaded clusters need.
void etcd(std::vector<std::string>& out, double p99, double mean) {
  out.push_back("etcd: p99 " + ms(p99) + (p99 < 1e7 ? ": under" : ": over") +
                " the 10 ms its WAL syncs should stay under (etcd_disk_wal_fsync_duration_seconds p99)");
  const double seq = mean > 0 ? 1e9 / mean : 0;
  std::string where = seq >= 500  ? "at least the 500 it recommends for heavily loaded clusters"
                      : seq >= 50 ? "at least the 50 it needs, under the 500 for heavily loaded clusters"
                                  : "under the 50 sequential IOPS it needs";
  out.push_back("etcd: " + grouped(seq) + " sequential synced writes per second (1 / mean): " + where);
}

// PostgreSQL with synchronous_commit=on: a commit returns once its WAL is flushed, so one
// connection commits at most once per flush (more connections share a flush: group commit).
void postgres(std::vector<std::string>& out, double p50, const std::string& method) {
  out.push_back("PostgreSQL: one connection with synchronous_commit=on (wal_sync_method=" + method +
                ") commits at most about " + per_s(p50) + " (1 / p50)");
}

// ZooKeeper logs a warning for every sync of its transaction log slower than
// fsync.warningthresholdms (1000 ms by default).
void zookeeper(std::vector<std::string>& out, double max) {
  out.push_back("ZooKeeper: max " + ms(max) + (max < 1e9 ? ": under" : ": over") +
                " fsync.warningthresholdms (1000 ms), beyond which it logs each slow log sync");
}

}  // namespace

void adapter_facts(JobResult& j) {
  j.latency_is = LatencyKind::None, j.baseline = false;
  const AdapterSpec* spec = find_adapter(j.job.adapter);
  if (!spec) return;
  if (auto it = spec->latency_is.find(j.job.op); it != spec->latency_is.end()) j.latency_is = it->second;
  j.baseline = spec->baseline;
}

StoreGuidance store_guidance(const JobResult& j) {
  if (j.latency_is == LatencyKind::None || j.state != JobResult::State::Done || !j.latency || j.latency->count() == 0)
    return {};
  const Histogram& h = *j.latency;
  const double p50 = static_cast<double>(h.percentile(50)), p99 = static_cast<double>(h.percentile(99));
  const double max = static_cast<double>(h.max()), mean = h.mean();
  StoreGuidance out;
  const LatencyKind kind = j.latency_is;
  if (kind == LatencyKind::RoundTrip) {
    out.figure = "round trip p50 " + us(p50) + ", p99 " + us(p99);
    out.rules.push_back("a client that waits for each reply (no pipelining) makes at most " + grouped(1e9 / p50) +
                        " requests per second over this path (1 / p50), whatever its server");
    return out;
  }
  out.figure = "a write and its " + std::string(latency_kind_name(kind)) + ": p50 " + ms(p50) + ", p99 " + ms(p99) +
               ", max " + ms(max);
  for (auto& d : j.profile.disks)  // tmpfs, overlay: the sync reaches memory, no store would run on it
    if (!d.missing.empty()) {
      out.rules.push_back("no store rule: " + d.path + " has no disk behind it (" + d.missing +
                          "): the sync reaches memory");
      return out;
    }
  if (kind == LatencyKind::Fdatasync) {
    etcd(out.rules, p99, mean);
    postgres(out.rules, p50, "fdatasync, its default on Linux");
    zookeeper(out.rules, max);
  } else {
    postgres(out.rules, p50, "fsync");
  }
  return out;
}

}  // namespace mw
