// The typed vocabulary of crash jobs (--crash, --expect) and of what an op's latency is
// (AdapterSpec::latency_is): adapters declare them, options parse them, results carry them, and
// the result file spells them by these names.
#pragma once
#include <cstdint>

#include "util/names.h"

namespace mw {

// --crash: none; kill (SIGKILL the server or the writing process, the page cache survives);
// power (the store on mwbench's page-cache layer, every byte not fsynced dropped); torn (as power,
// and the last unsynced write of each file survives in part).
enum class CrashKind : uint8_t { None, Kill, Power, Torn };
inline constexpr const char* kCrashKindNames[] = {"none", "kill", "power", "torn"};
inline constexpr Names<CrashKind> crash_names{kCrashKindNames};
inline const char* crash_name(CrashKind k) { return crash_names(k); }
// --crash power and torn: the store on the page-cache layer.
inline bool cuts_power(CrashKind k) { return k == CrashKind::Power || k == CrashKind::Torn; }

// --expect: any (a loss is a finding), durable (a lost acknowledged write fails the job).
enum class Expectation : uint8_t { Any, Durable };
inline constexpr const char* kExpectationNames[] = {"any", "durable"};
inline constexpr Names<Expectation> expectation_names{kExpectationNames};
inline const char* expectation_name(Expectation e) { return expectation_names(e); }

// What an op's latency is, when it is a figure the store rules under the table read
// (results/stores.cpp): none; one small write and its fsync or fdatasync; one request and its
// reply over the network, nothing served.
enum class LatencyKind : uint8_t { None, Fsync, Fdatasync, RoundTrip };
inline constexpr const char* kLatencyKindNames[] = {"none", "fsync", "fdatasync", "round trip"};
inline constexpr Names<LatencyKind> latency_kind_names{kLatencyKindNames};
inline const char* latency_kind_name(LatencyKind k) { return latency_kind_names(k); }

}  // namespace mw
