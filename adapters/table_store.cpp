#include "adapters/table_store.h"

#include "config/workload_spec.h"

namespace mw::table {

Request native_request(KvOp op, uint64_t seq, const KeyValues& keys) {
  Request r;
  r.seq = seq;
  if (op == KvOp::Insert) {
    r.op = KvOp::Insert, r.key = seq, r.value_size = keys.size_of(seq);
    return r;
  }
  r.key = native_key(seq, keys.space, true);
  r.must_exist = true;
  r.op = op;
  if (op == KvOp::Update) r.value_size = keys.size_of(r.key), r.version = write_version(seq);
  return r;
}

Verdict verify_native(KvOp op, const KeyValues& keys, uint64_t count, const Counts& counts, bool own_table,
                      const std::function<bool(uint64_t, std::string&)>& get) {
  if (op != KvOp::Insert) {
    Workload w;  // the native ops' rows as a workload's: keys [0, space) loaded, never deleted
    w.keys = KeyChooser(KeySpec{.keyspace = keys.space}, 1);
    w.mix = OpMix::parse("read:1");
    return verify_workload(w, count, get);
  }
  const uint64_t want = counts.ok + counts.warmup_ok;
  if (own_table && count != want)
    return {true, false, "row count " + std::to_string(count) + ", expected " + std::to_string(want)};
  return {true, true, "row count " + std::to_string(count) + " (one row per acknowledged insert)"};
}

std::vector<Held> held_rows(std::span<const uint64_t> keys, const std::unordered_map<uint64_t, std::string>& rows) {
  return held_values(keys, [&](uint64_t k, std::string& v) {
    const auto it = rows.find(k);
    if (it == rows.end()) return false;
    v = it->second;
    return true;
  });
}

std::vector<WriteState> write_states(std::span<const uint64_t> seqs,
                                     const std::unordered_map<uint64_t, std::string>& rows, const KeyValues& keys) {
  std::vector<WriteState> out;
  out.reserve(seqs.size());
  for (uint64_t q : seqs) {
    auto it = rows.find(q);
    out.push_back(it == rows.end()              ? WriteState::Missing
                  : it->second == keys.value(q) ? WriteState::Present
                                                : WriteState::Corrupt);
  }
  return out;
}

}  // namespace mw::table
