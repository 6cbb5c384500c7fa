// CouchDB on the shared workload (--mix): one document per key, {"v": value}, id k<key> (zero
// padded, so ids sort as keys do). read = GET, insert = PUT, update = PUT with the document's
// revision, rmw = GET then PUT with the revision just read, delete = DELETE ?rev=.
//
// Revisions (CouchDB's optimistic concurrency): a job keeps the last revision it saw of each key
// (RevTable, shared by its clients), so an update is one round trip, as a real application that
// holds its documents would do it. A revision the table does not have, or one that is stale (409
// conflict: another client wrote the key in between) costs one GET for the current one, then the
// write is tried once more; a second conflict is a failure (Mismatch). YCSB's couchdb binding
// reads before every write instead: two round trips per update; the table measures the store,
// not the binding's extra read.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "adapters/http/client.h"

namespace mw::couchdb {

class RevTable {
 public:
  std::string get(uint64_t key);
  void set(uint64_t key, std::string rev);
  void erase(uint64_t key);

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::string> revs_;
};

std::string kv_id(uint64_t key);  // "k00000000000000000042"

// The exchange of one client; `db_url` is http://host:port/db.
std::unique_ptr<http::Exchange> kv_exchange(const std::string& db_url, RevTable* revs);

// A document's value as GET answers it: {"v": "..."} -> the value; false when the answer is not
// such a document (why says what it is).
bool value_of(const std::string& body, std::string& value, std::string& rev, std::string& why);

}  // namespace mw::couchdb
