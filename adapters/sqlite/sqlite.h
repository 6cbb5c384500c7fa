#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <atomic>

#include "api/adapter.h"
struct sqlite3;
namespace mw {
AdapterSpec sqlite_adapter_spec();

// The adapter's options (options.h); defaults are the member initialisers.
struct SqliteOptions {
  std::string path = "/var/tmp";
  int64_t rows = 10000;
  int64_t batch = 100;
  std::string journal_mode = "delete";
  std::string synchronous = "full";
  size_t description_size = 100;
  bool keep = false;
};

// What a committed transaction means under journal_mode and synchronous (contract.h).
Contract sqlite_contract(const std::string& journal_mode, const std::string& synchronous);

// Descriptors one connection may hold: the database, its -wal and -shm (WAL) or -journal.
inline constexpr int kFilesPerConnection = 3;

// Removes a database file and what SQLite keeps beside it (-journal, -wal, -shm).
void remove_database(const std::string& file);

// The busy handler of the clients' connections: the schedule of SQLite's own busy_timeout (sleeps
// of 1, 2, 5, 10 ... 100 ms until the timeout), counting each retry and the time it slept.
class BusyWaits {
 public:
  explicit BusyWaits(double timeout_s);
  void install(sqlite3* db);  // in place of sqlite3_busy_timeout
  LockWaits read() const;

 private:
  static int on_busy(void* self, int count);
  int timeout_ms_;
  std::atomic<uint64_t> retries_{0}, slept_ms_{0};
};

// queue.cpp: a table as a queue, for the queue ops (produce, consume, roundtrip).
std::unique_ptr<Adapter> make_sqlite_queue_adapter(const Job& job);
}  // namespace mw
