#include "report/hdrlog.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "report/report.h"

namespace mw {

namespace {

constexpr int32_t kEncodingCookie = 0x1c849303 | 0x10;    // V2, LEB128 ZigZag words
constexpr int32_t kCompressedCookie = 0x1c849304 | 0x10;  // V2, zlib-compressed

void put32(std::string& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((v >> s) & 0xff));
}
void put64(std::string& b, uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) b.push_back(static_cast<char>((v >> s) & 0xff));
}
// ZigZag, then LEB128 (HdrHistogram's ZigZagEncoding: the 9th byte, if any, holds 8 bits).
void put_zigzag(std::string& b, int64_t v) {
  uint64_t u = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  for (int i = 0; i < 8; ++i) {
    if (u < 0x80) {
      b.push_back(static_cast<char>(u));
      return;
    }
    b.push_back(static_cast<char>((u & 0x7f) | 0x80));
    u >>= 7;
  }
  b.push_back(static_cast<char>(u));
}

std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v =
        (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(t[(v >> s) & 63]);
  }
  if (i + 1 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += std::string{t[(v >> 18) & 63], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8);
    out += std::string{t[(v >> 18) & 63], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

std::string tag_of(const std::string& name) {
  std::string tag = name;
  for (char& c : tag)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return tag.empty() ? "job" : tag;
}

}  // namespace

std::string hdr_compressed_base64(const SeriesInterval& iv) {
  // The counts up to the last non-empty one; a run of zeros is one negative word.
  std::string payload;
  int next = 0;
  for (auto& [index, count] : iv.buckets) {
    int zeros = index - next;
    if (zeros == 1)
      put_zigzag(payload, 0);
    else if (zeros > 1)
      put_zigzag(payload, -zeros);
    put_zigzag(payload, static_cast<int64_t>(count));
    next = index + 1;
  }
  std::string raw;
  put32(raw, static_cast<uint32_t>(kEncodingCookie));
  put32(raw, static_cast<uint32_t>(payload.size()));
  put32(raw, 0);  // normalizing index offset
  put32(raw, 2);  // significant figures (CompactLayout)
  put64(raw, 1);  // lowest discernible value: 1 ns
  put64(raw, static_cast<uint64_t>(CompactLayout::kMaxValue));
  double ratio = 1.0;  // integer to double conversion ratio
  uint64_t bits = 0;
  std::memcpy(&bits, &ratio, sizeof bits);
  put64(raw, bits);
  raw += payload;
  uLongf len = compressBound(static_cast<uLong>(raw.size()));
  std::string z(len, '\0');
  if (compress2(reinterpret_cast<Bytef*>(z.data()), &len, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), Z_DEFAULT_COMPRESSION) != Z_OK)
    throw SetupError("--hdr-log: zlib could not compress a histogram");
  z.resize(len);
  std::string out;
  put32(out, static_cast<uint32_t>(kCompressedCookie));
  put32(out, static_cast<uint32_t>(z.size()));
  return base64(out + z);
}

std::string hdr_log_text(const RunResult& r) {
  double base = 0;
  for (auto& j : r.jobs)
    if (j.started_epoch_s > 0 && (base == 0 || j.started_epoch_s < base)) base = j.started_epoch_s;
  std::time_t secs = static_cast<std::time_t>(base);
  char when[64] = "";
  std::strftime(when, sizeof when, "%a %b %d %H:%M:%S UTC %Y", std::gmtime(&secs));
  char line[128];
  std::snprintf(line, sizeof line, "#[StartTime: %.3f (seconds since epoch), %s]\n", base, when);
  std::string out = "#[Histogram log format version 1.3]\n" + std::string(line);
  std::snprintf(line, sizeof line, "#[BaseTime: %.3f (seconds since epoch)]\n", base);
  out += line;
  out += "#[mwbench " MWBENCH_VERSION ": latency of successful ops in ns; Interval_Max in ms]\n";
  out += "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";
  for (auto& j : r.jobs) {
    if (j.series_interval_s <= 0 || j.started_epoch_s <= 0) continue;
    std::string tag = "Tag=" + tag_of(j.job.name) + ",";
    for (size_t k = 0; k < j.series.size(); ++k) {
      const SeriesInterval& iv = j.series[k];
      double start = j.started_epoch_s - base + static_cast<double>(k) * j.series_interval_s;
      double len = std::min(j.series_interval_s, j.elapsed_s - static_cast<double>(k) * j.series_interval_s);
      if (len <= 0) len = j.series_interval_s;
      std::snprintf(line, sizeof line, "%.3f,%.3f,%.3f,", start, len, static_cast<double>(iv.max) / 1e6);
      out += tag + line + hdr_compressed_base64(iv) + "\n";
    }
  }
  return out;
}

}  // namespace mw
