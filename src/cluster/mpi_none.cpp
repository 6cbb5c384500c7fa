// mwbench built without MPI: one process, rank 0 of 1. launched_size() (mpi_env.cpp) still
// tells when mpirun started it, so that main() can say this binary cannot take part.
#include <cstdlib>

#include "cluster/mpi.h"
#include "util/status.h"

namespace mw::mpi {

bool built() { return false; }
void start(int&, char**&) {
  throw SetupError(
      "this mwbench was built without MPI (install libopenmpi-dev and rebuild: scripts/setup, scripts/build)");
}
bool started() { return false; }
int rank() { return 0; }
int size() { return 1; }
std::vector<int> lost() { return {}; }
bool alive(int) { return true; }
void forget(int) {}
bool barrier() { return true; }
bool send_all(std::string&, int) { return true; }
std::vector<std::optional<std::string>> gather(const std::string& mine, int) { return {mine}; }
void on_beats(std::function<std::string()>, std::function<void(int, const std::string&)>) {}
void abort(int code) { std::exit(code); }
void finish() {}

}  // namespace mw::mpi
