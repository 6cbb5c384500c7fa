// Durability contracts: what an acknowledgement means for a setting of a persistent adapter, in one
// vocabulary shared by every adapter, the result file, the reports and compare. Rows whose
// contracts differ are never compared silently.
#pragma once
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace mw {

enum class ContractKind : uint8_t {
  Memory,         // acknowledged once in the server's or library's memory: a crash loses it
  OsBuffer,       // written to the OS (page cache), not synced: a kill keeps it, a power cut may not
  PeriodicFsync,  // synced every interval_s: a power cut loses up to about that much
  FsyncPerAck,    // synced before each acknowledgement (group commit included)
  Replicated,     // acknowledged once copies exist on other nodes
};

struct Contract {
  ContractKind kind = ContractKind::Memory;
  double interval_s = 0;    // PeriodicFsync only
  std::string detail = {};  // the setting that gives it: "appendfsync everysec", "synchronous=full"
};

inline const char* contract_name(ContractKind k) {
  switch (k) {
    case ContractKind::Memory: return "memory";
    case ContractKind::OsBuffer: return "os-buffer";
    case ContractKind::PeriodicFsync: return "periodic-fsync";
    case ContractKind::FsyncPerAck: return "fsync-per-ack";
    case ContractKind::Replicated: return "replicated";
  }
  return "?";
}

// "periodic-fsync 1 s", "fsync-per-ack".
inline std::string contract_label(const Contract& c) {
  std::string s = contract_name(c.kind);
  if (c.kind == ContractKind::PeriodicFsync) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %g s", c.interval_s);
    s += buf;
  }
  return s;
}

inline std::optional<ContractKind> parse_contract(const std::string& s) {
  for (auto k : {ContractKind::Memory, ContractKind::OsBuffer, ContractKind::PeriodicFsync, ContractKind::FsyncPerAck,
                 ContractKind::Replicated})
    if (s == contract_name(k)) return k;
  return std::nullopt;
}

}  // namespace mw
