#pragma once
#include <cstdint>
#include <string>

#include "api/adapter.h"
namespace mw {
AdapterSpec couchdb_adapter_spec();

// CouchDB's answers, checked without a socket (tests, adapters/couchdb/fuzz_http_reply.cpp). Any body is
// accepted as input: wrong JSON types, cut or invalid UTF-8, huge numbers are failures with a
// reason, never exceptions. Details are short and printable.
namespace couchdb {
enum class Op { Insert, Put, Bulk, Get };
struct Expect {
  std::string id;       // put: the id sent; get: the id asked for
  std::string payload;  // get: the payload stored
  int64_t docs = 1;     // bulk: documents sent
};
OpResult check_reply(Op op, long status, const std::string& body, const Expect& want, std::string& detail);
// The doc_count of a database's info (GET /db), or -1 with `why`.
int64_t doc_count_of(const std::string& body, std::string& why);
}  // namespace couchdb
}  // namespace mw
