// What the keyed stores on a SQL table (postgres, mariadb) share: the native ops' requests
// (select and update on the loaded keys, insert of new keys), their end check, and the state of
// each acknowledged insert of a crash job, read back from the table.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/adapter.h"
#include "workload/workload.h"

namespace mw::table {

// A native op's request: `op` Read (select) and Update work on the loaded keys [0, keys.space),
// Insert writes key `seq`.
Request native_request(KvOp op, uint64_t seq, const KeyValues& keys);

// The end check of a native op's job. Read and update: the loaded keys read back (`get` returns
// false for a missing one). Insert: `count` rows, one per acknowledged insert, when the table was
// the job's own (`own_table`).
Verdict verify_native(KvOp op, const KeyValues& keys, uint64_t count, const Counts& counts, bool own_table,
                      const std::function<bool(uint64_t, std::string&)>& get);

// What each key holds given the table's rows after a restart (a workload's crash check,
// KeyedReadBack::held).
std::vector<Held> held_rows(std::span<const uint64_t> keys, const std::unordered_map<uint64_t, std::string>& rows);

// The state of each insert (key = its seq) given the table's rows after a restart.
std::vector<WriteState> write_states(std::span<const uint64_t> seqs,
                                     const std::unordered_map<uint64_t, std::string>& rows, const KeyValues& keys);

}  // namespace mw::table
