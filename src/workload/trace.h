// Request traces (issue 43, --trace): a file of requests read as a stream, a line at a time,
// never loaded whole. Formats: Twitter's cache-trace CSV (timestamp s, anonymized key, key size,
// value size, client id, op, TTL), plain or zstd-compressed; Redis MONITOR output; a generic CSV
// with a header `time,op,key,value_size`. A line becomes a TraceRecord: the workload's op, a key
// id (a hash of the trace's key), a value size, a client id and a TTL.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "workload/workload.h"

namespace mw {

enum class TraceFormat : uint8_t { Twitter, Monitor, Csv };
TraceFormat parse_trace_format(const std::string& v);  // twitter, monitor, csv; throws SetupError
const char* trace_format_name(TraceFormat f);

// The trace's own op, before it is mapped to a store's: what `model` counts and replay maps.
enum class TraceOp : uint8_t { Get, Gets, Set, Add, Replace, Cas, Append, Prepend, Delete, Incr, Decr, Count };
constexpr int kTraceOpCount = static_cast<int>(TraceOp::Count);
std::string_view trace_op_name(TraceOp op);
KvOp kv_op_of(TraceOp op);  // get/gets read; set/add/replace/cas/append/prepend update; delete; incr/decr rmw
// A write's condition (workload.h's Cond): set, cas, append and prepend write whether the key is
// there or not (Upsert: their values are whole, of the trace's size); with `conds` (the store has
// conditional writes) add only a key not there, replace only a key there, else both as set.
// None for the ops that do not write.
Cond cond_of(TraceOp op, bool conds);

struct TraceRecord {
  double t = 0;           // seconds, as the trace gives them
  uint64_t key = 0;       // the key's id: a hash of its bytes
  uint32_t key_size = 0;  // the trace's key size (its bytes when it gives none)
  uint32_t value_size = 0;
  uint64_t client = 0;  // the trace's client id (0 when it has none)
  uint32_t ttl = 0;     // seconds; 0: none
  TraceOp op = TraceOp::Get;
};

constexpr uint32_t kMaxTraceValue = 1 << 20;  // a value larger than this is refused (1 MiB)

// One line of a format into `r`; false with `why` (what was expected) when it is malformed.
// A CSV header, a comment or an empty line: `skip` set, nothing else.
bool parse_trace_line(TraceFormat f, std::string_view line, TraceRecord& r, bool& skip, std::string& why);

// A trace file read as a stream: plain, or zstd (by its magic number). Malformed lines stop the
// read with "FILE:LINE: what was expected", or with skip_bad are counted and the first few kept.
class TraceReader {
 public:
  // The format detected from the first lines when `format` is null.
  TraceReader(const std::string& path, const TraceFormat* format, bool skip_bad);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;
  bool next(TraceRecord& r);  // false at the end; throws SetupError (file:line) on bad input
  TraceFormat format() const { return format_; }
  uint64_t line() const { return line_; }
  uint64_t skipped() const { return skipped_; }
  const std::string& first_bad() const { return first_bad_; }

 private:
  bool next_line(std::string_view& line);
  bool fill();
  std::string path_;
  TraceFormat format_ = TraceFormat::Twitter;
  bool skip_bad_ = false;
  int fd_ = -1;
  struct Zstd;
  std::unique_ptr<Zstd> zstd_;
  std::string buf_;  // bytes read (decompressed), not yet cut into lines
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t line_ = 0, skipped_ = 0;
  std::string first_bad_;
  double last_t_ = -1;
};

// A key id from a trace's key bytes (FNV-1a, then splitmix64: spread over 64 bits).
uint64_t trace_key_id(std::string_view key);

}  // namespace mw

namespace mw {

// One client's share of a trace, read from the file as a stream of its own: the requests of the
// trace clients it plays (client id modulo `clients`; a trace without client ids deals its lines
// round-robin) and when each is due: its time since the trace's first request, divided by
// `speed`. A Twitter trace's whole-second timestamps are spread evenly within their second (the
// k-th of the second's n requests at k/n): one second's own requests are held at a time.
// Requests of ops the store cannot run (`runs` false) are counted per op and left out.
class TraceFeed {
 public:
  static constexpr int64_t kNever = INT64_MAX / 4;  // advance_ns() at the trace's end
  // `ttls`: a write takes the trace's TTL (at most kMaxTtl). `conds`: add and replace take their
  // conditions (cond_of).
  TraceFeed(const std::string& path, const TraceFormat* format, bool skip_bad, int client, int clients, double speed,
            const std::array<bool, kKvOpCount>& runs, bool ttls = false, bool conds = false);
  // The next request: its due time (ns after the replay's start), or kNever at the end.
  int64_t advance_ns();
  // The request advance_ns() last reached, as the workload's request `seq`.
  Request request(uint64_t seq) const {
    Request q;
    q.seq = seq;
    q.op = kv_op_of(cur_.op);
    q.key = cur_.key;
    if (q.op == KvOp::Update || q.op == KvOp::Rmw) {
      q.value_size = std::max<uint32_t>(1, cur_.value_size);
      q.version = static_cast<uint32_t>(seq) | 1u;
      if (ttls_) q.ttl = std::min(cur_.ttl, kMaxTtl);
      q.cond = conds_[static_cast<int>(cur_.op)];
    }
    return q;
  }
  const std::array<uint64_t, kTraceOpCount>& left_out() const { return left_out_; }
  const TraceReader& reader() const { return reader_; }

 private:
  bool mine(const TraceRecord& r);
  bool read_second();
  TraceReader reader_;
  const uint64_t client_, clients_;
  const double speed_;
  const std::array<bool, kKvOpCount> runs_;
  const bool spread_;  // whole seconds spread within them (Twitter)
  const bool ttls_;
  std::array<Cond, kTraceOpCount> conds_;  // each op's (cond_of)
  TraceRecord cur_, ahead_;
  bool have_ahead_ = false, started_ = false;
  double t0_ = 0;
  uint64_t dealt_ = 0;  // records seen (the round-robin deal)
  // the current second's own requests, with their place among all of the second's
  std::vector<std::pair<TraceRecord, uint64_t>> second_;
  size_t at_ = 0;
  uint64_t second_n_ = 0;
  std::array<uint64_t, kTraceOpCount> left_out_{};
};

}  // namespace mw
