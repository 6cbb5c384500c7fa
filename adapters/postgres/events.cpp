// PostgreSQL's own events for the timeline (api/events.h): checkpoints (pg_stat_bgwriter, or
// pg_stat_checkpointer from 17), the WAL's syncs and full buffers (pg_stat_wal, 14 to 17),
// autovacuum workers, backends waiting on a lock and the checkpointer at work (pg_stat_activity),
// in one query a reading over a connection of the probe's own.
#include <libpq-fe.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "adapters/events.h"
#include "adapters/postgres/pg.h"

namespace mw::pg {

namespace {

using K = EventReading::Kind;

struct Column {
  const char* name;
  K kind;
  const char* what;
};
const Column kColumns[] = {
    {"checkpoints_timed", K::Counter, "checkpoints started by checkpoint_timeout"},
    {"checkpoints_requested", K::Counter, "checkpoints requested (max_wal_size reached, or CHECKPOINT)"},
    {"checkpoint_buffers", K::Counter, "buffers a checkpoint wrote"},
    {"checkpoint_active", K::Level, "the checkpointer writing a checkpoint (pg_stat_activity)"},
    {"wal_syncs", K::Counter, "WAL syncs (pg_stat_wal)"},
    {"wal_buffers_full", K::Counter, "WAL written because its buffers were full"},
    {"autovacuum_workers", K::Level, "autovacuum workers running"},
    {"lock_waits", K::Level, "backends waiting on a lock"},
};

// The query of a server's version: NULL where it has no such figure.
std::string query_of(int version) {
  const std::string checkpoints =
      version >= 170000 ? "(SELECT num_timed FROM pg_stat_checkpointer), (SELECT num_requested FROM "
                          "pg_stat_checkpointer), (SELECT buffers_written FROM pg_stat_checkpointer)"
                        : "(SELECT checkpoints_timed FROM pg_stat_bgwriter), (SELECT checkpoints_req FROM "
                          "pg_stat_bgwriter), (SELECT buffers_checkpoint FROM pg_stat_bgwriter)";
  const std::string wal = version >= 180000   ? "NULL, (SELECT wal_buffers_full FROM pg_stat_wal)"
                          : version >= 140000 ? "(SELECT wal_sync FROM pg_stat_wal), (SELECT wal_buffers_full FROM "
                                                "pg_stat_wal)"
                                              : "NULL, NULL";
  return "SELECT " + checkpoints +
         ", (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'checkpointer' AND "
         "coalesce(wait_event, 'CheckpointerMain') <> 'CheckpointerMain'), " +
         wal +
         ", (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'), "
         "(SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock')";
}

class Probe final : public ConnProbe<Conn> {
 public:
  explicit Probe(const Endpoint& ep) : ep_(ep) { ep_.timeout_s = std::min(ep_.timeout_s, 1.0); }
  std::string source() const override { return "postgres"; }

 private:
  std::unique_ptr<Conn> connect(int64_t deadline) override {
    auto c = std::make_unique<Conn>(ep_, deadline);
    query_ = query_of(PQserverVersion(c->get()));
    return c;
  }
  std::vector<EventReading> read(Conn& c, int64_t deadline) override {
    Result r(nullptr, PQclear);
    try {
      r = c.exec(query_, deadline);
    } catch (const SetupError& e) {  // a role that may not read the views: no use asking again
      const std::string why = e.what();
      if (why.find("permission denied") != std::string::npos) throw ProbeRefused(why);
      throw;
    }
    std::vector<EventReading> out;
    if (PQntuples(r.get()) != 1) return out;
    for (int i = 0; i < PQnfields(r.get()) && i < static_cast<int>(std::size(kColumns)); ++i)
      if (!PQgetisnull(r.get(), 0, i))
        if (double v = stat_number(PQgetvalue(r.get(), 0, i)); std::isfinite(v))
          out.push_back({kColumns[i].name, v, kColumns[i].kind, kColumns[i].what});
    return out;
  }
  Endpoint ep_;
  std::string query_;
};

}  // namespace

std::unique_ptr<EventProbe> event_probe(const Endpoint& ep) { return std::make_unique<Probe>(ep); }

}  // namespace mw::pg
