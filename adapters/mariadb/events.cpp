// MariaDB's own events for the timeline (api/events.h), from SHOW GLOBAL STATUS over a connection
// of the probe's own: InnoDB's log waits, waits for a free page, row lock waits, its checkpoint's
// age and its fsyncs.
#include <map>

#include "adapters/events.h"
#include "adapters/mariadb/my.h"

namespace mw::mdb {

namespace {

using K = EventReading::Kind;

const std::vector<StatEvent> kStatus = {
    {"Innodb_log_waits", K::Counter, "waits for room in InnoDB's log buffer", "log_waits"},
    {"Innodb_buffer_pool_wait_free", K::Counter, "waits for a free page in InnoDB's buffer pool (a flush first)",
     "buffer_pool_wait_free"},
    {"Innodb_row_lock_waits", K::Counter, "row lock waits", "row_lock_waits"},
    {"Innodb_row_lock_current_waits", K::Level, "transactions waiting on a row lock", "row_lock_current_waits"},
    {"Innodb_checkpoint_age", K::Level, "InnoDB's checkpoint age (redo log not yet checkpointed)", "checkpoint_age"},
    {"Innodb_data_fsyncs", K::Counter, "InnoDB's fsyncs", "data_fsyncs"},
};

class Probe final : public ConnProbe<Conn> {
 public:
  explicit Probe(const Endpoint& ep) : ep_(ep) { ep_.timeout_s = 1; }  // libmariadb's unit: a second
  std::string source() const override { return "mariadbd"; }

 private:
  std::unique_ptr<Conn> connect(int64_t) override { return std::make_unique<Conn>(ep_); }
  std::vector<EventReading> read(Conn& c, int64_t) override {
    std::string names;
    for (const StatEvent& s : kStatus) names += std::string(names.empty() ? "'" : ", '") + s.key + "'";
    std::map<std::string, std::string> status;
    try {
      for (auto& row : c.rows("SHOW GLOBAL STATUS WHERE Variable_name IN (" + names + ")"))
        if (row.size() == 2) status[row[0]] = row[1];
    } catch (const SetupError& e) {
      const std::string why = e.what();
      if (why.find("denied") != std::string::npos) throw ProbeRefused(why);
      throw;
    }
    std::vector<EventReading> out = stat_events(status, kStatus);
    for (auto& r : out)
      if (r.name == "checkpoint_age") r.unit = "bytes";
    return out;
  }
  Endpoint ep_;
};

}  // namespace

std::unique_ptr<EventProbe> event_probe(const Endpoint& ep) { return std::make_unique<Probe>(ep); }

}  // namespace mw::mdb
