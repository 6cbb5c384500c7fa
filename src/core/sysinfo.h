// The context every result carries: machine, build, filesystems, and warnings that make a
// figure suspect.
#pragma once
#include <string>
#include <utility>

#include "results/result.h"
#include "util/files.h"  // what adapters used to find here

namespace mw {

Context machine_context();
// Adds paths, libraries and warnings that depend on what the jobs used.
void finish_context(RunResult& run);

}  // namespace mw
