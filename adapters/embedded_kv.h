// What the embedded ordered stores (lmdb, rocksdb) share: one client that maps their native ops
// (put, get, delete, scan) and the workload's abstract ops onto a store handle, every value read
// checked (workload.h's self-checking values), and the end checks of the native ops.
//
// A handle H (one per client) offers:
//   int  get(std::string_view key, std::string_view* value)  1 found, 0 absent, -1 error; the view
//        stays valid until the next call on the handle; inside begin()..commit() it reads the write
//        transaction where the store has one
//   bool begin(); bool put(key, value); int del(key) (1, 0 absent, -1); bool commit(); void abort()
//   int  scan(std::string_view from, uint32_t n, F each)  records read (each(key, value) false
//        stops), -1 on an error
//   void release()                                          the value of the last get is no longer used
//   std::string error() const                               why the last call failed
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "api/adapter.h"
#include "workload/workload.h"

namespace mw {

// The native ops of lmdb and rocksdb. Put and Del write `batch` keys in one transaction (one op).
enum class EmbeddedOp { Put, Get, Del, Scan, Mix };

// The keys native op `seq` writes or reads: seq*batch .. seq*batch+batch-1, over the key space
// for put (del deletes loaded keys once each: its key space covers every op).
struct EmbeddedKeys {
  KeyValues kv{};
  uint32_t batch = 1;
  uint32_t scan_len = 100;
  bool stamped = false;  // a crash job's native puts: each value carries its write's version (write_version)
  uint64_t key_of(uint64_t seq, uint32_t i) const { return (seq * batch + i) % kv.space; }
};

// Checks a value read for key k against the workload's layout; `version0`: it must be the value
// native put wrote (version 0, the size drawn from the key).
inline OpResult check_kv(const EmbeddedKeys& keys, uint64_t k, std::string_view v, bool version0, std::string& detail) {
  uint32_t version = 0;
  switch (check_value(k, v.data(), v.size(), &version)) {
    case ValueCheck::Ok:
      if (!version0 || (version == 0 && v.size() == keys.kv.size_of(k)))
        return {Status::Ok, static_cast<uint32_t>(v.size()), {}};
      detail = KeyValues::key(k) + " holds a value that was not put";
      break;
    case ValueCheck::OtherKey: detail = KeyValues::key(k) + " holds another key's value"; break;
    case ValueCheck::Corrupt: detail = KeyValues::key(k) + " holds a corrupt value (checksum)"; break;
  }
  return {Status::Mismatch, 0, detail};
}

template <class H>
class EmbeddedClient final : public Client {
 public:
  template <class... A>
  EmbeddedClient(const EmbeddedKeys& keys, EmbeddedOp op, A&&... handle_args)
      : h_(std::forward<A>(handle_args)...), keys_(keys), op_(op) {}

  OpResult run(uint64_t seq) override {
    switch (op_) {
      case EmbeddedOp::Put: return write_batch(seq, false);
      case EmbeddedOp::Del: return write_batch(seq, true);
      case EmbeddedOp::Get: {
        const uint64_t k = keys_.key_of(seq, 0);
        std::string_view v;
        const int got = h_.get(key(k), &v);
        if (got <= 0) return fail(got, k);
        OpResult res = check_kv(keys_, k, v, true, detail_);
        h_.release();
        return res;
      }
      case EmbeddedOp::Scan: return scan(seq % keys_.kv.space, keys_.scan_len, true);
      case EmbeddedOp::Mix: break;
    }
    return {Status::Unsupported, 0, "the mix runs through run_request"};
  }

  // The shared workload; each write is its own transaction (an acknowledged op is committed).
  OpResult run_request(const Request& r) override {
    const std::string_view k = key(r.key);
    std::string_view v;
    switch (r.op) {
      case KvOp::Read: {
        const int got = h_.get(k, &v);
        if (got <= 0) return fail(got, r.key);
        OpResult res = check_kv(keys_, r.key, v, false, detail_);
        h_.release();
        return res;
      }
      case KvOp::Rmw: {  // read and write back in one write transaction where the store has one
        if (!h_.begin()) return fail(-1, r.key);
        const int got = h_.get(k, &v);
        OpResult res = got <= 0 ? fail(got, r.key) : check_kv(keys_, r.key, v, false, detail_);
        if (got > 0) h_.release();
        if (res.status == Status::Ok) res = put_value(r.key, r.version, r.value_size);
        if (res.status != Status::Ok) return h_.abort(), res;
        return h_.commit() ? res : fail(-1, r.key);
      }
      case KvOp::Update:
      case KvOp::Insert: {
        if (!h_.begin()) return fail(-1, r.key);
        OpResult res = put_value(r.key, r.version, r.value_size);
        if (res.status != Status::Ok) return h_.abort(), res;
        return h_.commit() ? res : fail(-1, r.key);
      }
      case KvOp::Delete: {
        if (!h_.begin()) return fail(-1, r.key);
        const int got = h_.del(k);
        if (got <= 0) return h_.abort(), fail(got, r.key);
        return h_.commit() ? OpResult{} : fail(-1, r.key);
      }
      case KvOp::Scan: return scan(r.key, r.scan_len, false);
      default: return {Status::Unsupported, 0, "not an op of this store"};
    }
  }

  H& handle() { return h_; }

 private:
  std::string_view key(uint64_t k) { return {key_buf_, write_key("key-", k, 12, key_buf_)}; }

  OpResult put_value(uint64_t k, uint32_t version, uint32_t size) {
    value_.resize(size);
    write_value(k, version, value_.data(), value_.size());
    if (!h_.put(key(k), value_)) return fail(-1, k);
    return {Status::Ok, size, {}};
  }

  // Native put / del: `batch` keys in one transaction.
  OpResult write_batch(uint64_t seq, bool del) {
    if (!h_.begin()) return fail(-1, seq);
    uint32_t bytes = 0;
    for (uint32_t i = 0; i < keys_.batch; ++i) {
      const uint64_t k = keys_.key_of(seq, i);
      OpResult res;
      if (del) {
        if (int got = h_.del(key(k)); got <= 0) res = fail(got, k);
      } else {
        res = put_value(k, keys_.stamped ? write_version(seq) : 0, keys_.kv.size_of(k));
      }
      if (res.status != Status::Ok) return h_.abort(), res;
      bytes += res.bytes;
    }
    if (!h_.commit()) return fail(-1, seq);
    return {Status::Ok, bytes, {}};
  }

  // Up to n records from key `from` on, each checked; the native scan (every key loaded) must
  // also read exactly the keys that exist from there: min(n, keyspace - from).
  OpResult scan(uint64_t from, uint32_t n, bool native) {
    OpResult bad;
    uint32_t bytes = 0;
    uint64_t expect_id = from;
    const int got = h_.scan(key(from), n, [&](std::string_view k, std::string_view v) {
      uint64_t id = 0;
      if (!KeyValues::key_of(k, &id) || (native && id != expect_id)) {
        detail_ = "scan from " + KeyValues::key(from) + " found a key out of order or never written";
        bad = {Status::Mismatch, 0, detail_};
        return false;
      }
      ++expect_id;
      bad = check_kv(keys_, id, v, native, detail_);
      bytes += static_cast<uint32_t>(v.size());
      return bad.status == Status::Ok;
    });
    if (got < 0) return fail(-1, from);
    if (bad.status != Status::Ok) return bad;
    if (native && static_cast<uint64_t>(got) != std::min<uint64_t>(n, keys_.kv.space - from)) {
      detail_ = "scan from " + KeyValues::key(from) + " read " + std::to_string(got) + " records, expected " +
                std::to_string(std::min<uint64_t>(n, keys_.kv.space - from));
      return {Status::Mismatch, 0, detail_};
    }
    return {Status::Ok, bytes, {}};
  }

  // got 0: the key is absent (NotFound); -1: the store's error.
  OpResult fail(int got, uint64_t k) {
    if (got == 0) {
      detail_ = KeyValues::key(k) + " not found";
      return {Status::NotFound, 0, detail_};
    }
    detail_ = h_.error();
    return {Status::Error, 0, detail_};
  }

  H h_;
  const EmbeddedKeys& keys_;
  EmbeddedOp op_;
  char key_buf_[48];
  std::string value_, detail_;
};

}  // namespace mw

// Set-up and end checks of the embedded stores (embedded_kv.cpp).
namespace mw {

// A read of key k for the end checks: false when absent (or on an error); `out` gets the value.
using KvGet = std::function<bool(uint64_t k, std::string& out)>;

// The job's keys: the key space (100,000 by default; for del at least every key the ops delete),
// value sizes, the batch and the native scan's length.
EmbeddedKeys embedded_keys(const Job& job, EmbeddedOp op, uint32_t batch);
// A new, empty directory for the store under `parent`: "<parent>/mwbench-<pid>-<n>.<ext>". Throws
// SetupError naming --path when it cannot be made.
std::string make_store_dir(const std::string& store, const std::string& parent, const std::string& ext);
// Checks a given store directory (--db): made when missing; throws SetupError naming --db.
void check_db_dir(const std::string& store, const std::string& dir);
void remove_store_dir(const std::string& dir);
// The end check of a native op: the store's record count (`fresh`: exactly what the op leaves;
// a given --db may hold other keys too: at least that) and, after puts, 100 keys read back.
Verdict verify_native(const EmbeddedKeys& keys, EmbeddedOp op, const Counts& c, uint64_t loaded, uint64_t count,
                      bool fresh, const KvGet& get);
// After a crash (a keyed check, durability.h's resolve_keyed): the keys native put `seq` wrote.
void native_put_keys(const EmbeddedKeys& keys, uint64_t seq, std::vector<KeyWrite>& out);
// The untimed load of get, del and scan: every key of the key space, `batch` keys a transaction;
// `put_batch(first, count)` writes keys [first, first + count) and returns "" or why it failed.
void load_native(const std::string& store, const EmbeddedKeys& keys,
                 const std::function<std::string(uint64_t, uint64_t)>& put_batch);

}  // namespace mw
