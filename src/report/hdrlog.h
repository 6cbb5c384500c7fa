// `--hdr-log FILE`: the jobs' time series as an HdrHistogram interval log (format version 1.3,
// V2 compressed histograms in base64), the format HdrHistogram's own tools (HistogramLogReader,
// HistogramLogProcessor, hdr-histogram-js) read. One tagged line per job and interval.
#pragma once
#include <string>

#include "results/result.h"

namespace mw {

// One interval's histogram, V2-encoded (2 significant figures, 1 ns to 1 h), zlib-compressed,
// base64: the last field of a log line.
std::string hdr_compressed_base64(const SeriesInterval& iv);
// The whole log: header, then each job's intervals (tag: the job's name, characters outside
// [A-Za-z0-9._-] as '_'), timestamps in seconds relative to the first job's start.
std::string hdr_log_text(const RunResult& r);

}  // namespace mw
