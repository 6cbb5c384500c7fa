// What several test files need: a temp dir removed afterwards, and a job to run.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "job.h"

namespace mw::test {

struct TempDir {
  std::string path;
  explicit TempDir(const char* base = "/var/tmp") {
    std::string tmpl = std::string(base) + "/mwbench-test-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

inline Job make_job(const std::string& adapter, const std::string& op, uint64_t n, int clients = 1) {
  Job j;
  j.adapter = adapter;
  j.op = op;
  j.name = adapter + " " + op;
  j.n = n;
  j.clients = clients;
  return j;
}

}  // namespace mw::test
