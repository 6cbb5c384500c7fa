// Set-up and end checks shared by the embedded ordered stores (lmdb, rocksdb).
#include "adapters/embedded_kv.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "api/stop.h"
#include "config/workload_spec.h"
#include "util/files.h"

namespace mw {

EmbeddedKeys embedded_keys(const Job& job, EmbeddedOp op, uint32_t batch) {
  EmbeddedKeys keys;
  const WorkloadOptions w = workload_options_of(job);
  const uint64_t total = (job.n + job.warmup_ops) * batch;
  keys.kv.space = w.keyspace.value_or(op == EmbeddedOp::Del ? total : 100000);
  if (op == EmbeddedOp::Del) keys.kv.space = std::max<uint64_t>(keys.kv.space, total);
  keys.kv.sizes = SizeDist::parse(w.value_size, "--value-size");
  keys.batch = batch;
  keys.scan_len = w.scan_length;
  return keys;
}

std::string make_store_dir(const std::string& store, const std::string& parent, const std::string& ext) {
  const std::string p = trim_dir(parent);
  if (std::string why = unusable_dir(p); !why.empty()) throw SetupError(store + ": " + why + " (--path)");
  const std::string dir = temp_file(p, ext);
  if (mkdir(dir.c_str(), 0700) != 0)
    throw SetupError(store + ": cannot make " + dir + ": " + std::strerror(errno) + " (--path)");
  return dir;
}

void check_db_dir(const std::string& store, const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 && mkdir(dir.c_str(), 0700) != 0)
    throw SetupError(store + ": cannot make " + dir + ": " + std::strerror(errno) + " (--db)");
  if (stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw SetupError(store + ": " + dir + " is not a directory (--db)");
}

void remove_store_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

Verdict verify_native(const EmbeddedKeys& keys, EmbeddedOp op, const Counts& c, uint64_t loaded, uint64_t count,
                      bool fresh, const KvGet& get) {
  const uint64_t done = (c.ok + c.warmup_ok) * keys.batch;
  uint64_t want = loaded;
  if (op == EmbeddedOp::Del) want = loaded - std::min(loaded, done);
  // put: keys seq*batch+i over the key space, so the distinct keys are min(keyspace, keys put)
  if (op == EmbeddedOp::Put) want = std::max(fresh ? 0 : loaded, std::min<uint64_t>(keys.kv.space, done));
  std::string bad, v;
  if (op == EmbeddedOp::Put)  // read a sample back: each holds what was put
    for (uint64_t k = 0; k < std::min<uint64_t>(std::min<uint64_t>(keys.kv.space, done), 100); ++k)
      if (!get(k, v) || v != keys.kv.value(k)) bad = KeyValues::key(k);
  const bool count_ok = fresh || op == EmbeddedOp::Del ? count == want : count >= want;
  std::string detail =
      std::to_string(count) + " records, expected " + (fresh ? "" : "at least ") + std::to_string(want);
  if (!bad.empty()) detail += "; " + bad + " does not hold what was put";
  return {true, count_ok && bad.empty(), detail};
}

void native_put_keys(const EmbeddedKeys& keys, uint64_t seq, std::vector<KeyWrite>& out) {
  for (uint32_t i = 0; i < keys.batch; ++i) out.push_back({seq, keys.key_of(seq, i), false});
}

void load_native(const std::string& store, const EmbeddedKeys& keys,
                 const std::function<std::string(uint64_t, uint64_t)>& put_batch) {
  const uint64_t step = std::max<uint64_t>(keys.batch, 1000);
  for (uint64_t k = 0; k < keys.kv.space; k += step) {
    throw_if_stopped("the " + store + " preload");
    if (std::string why = put_batch(k, std::min(step, keys.kv.space - k)); !why.empty())
      throw SetupError(store + ": loading keys failed: " + why);
  }
}

}  // namespace mw
