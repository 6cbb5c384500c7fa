// Whether mpirun or srun started this process: their environment, read with or without MPI.
#include <cstdlib>

#include "cluster/mpi.h"

namespace mw::mpi {

int launched_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* s = std::getenv(v)) {
      int n = std::atoi(s);
      if (n > 0) return n;
    }
  return 0;
}

}  // namespace mw::mpi
