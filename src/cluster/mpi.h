// The few MPI calls mwbench makes, behind plain types. src/cluster/mpi.cpp when the build found MPI,
// src/cluster/mpi_none.cpp otherwise: the rest of the code has no #ifdef.
//
// No collective is waited on without a way out: every rank runs a watch thread that sends a
// beat to rank 0 (and rank 0 to every rank) every 200 ms, so a wait for a message or a barrier
// notices a rank that died (no beat for kGraceS) instead of waiting for ever.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mw::mpi {

constexpr double kGraceS = 10;  // a rank silent this long is taken for dead

// True when this binary was built with MPI.
bool built();
// How many processes mpirun (or srun) started this one among, from their environment;
// 0 when it was not started by one.
int launched_size();

// MPI_Init_thread (MPI_THREAD_MULTIPLE: the watch thread) with MPI_ERRORS_RETURN, and the watch
// thread. Throws SetupError when MPI cannot start that way.
void start(int& argc, char**& argv);
bool started();
int rank();
int size();

// Ranks taken for dead so far (no beat for kGraceS, or a message could not be sent).
std::vector<int> lost();
bool alive(int rank);
// Takes `rank` for dead because another rank (rank 0) said so: this rank may not watch it.
void forget(int rank);

// Every rank waits until all have arrived (MPI_Ibarrier). False when a rank died meanwhile
// (`lost()` says which); every rank that is alive returns.
bool barrier();
// Rank 0 sends `text` to every rank; other ranks receive it into `text`. False when the sender
// died (on other ranks) or a receiver did (on rank 0).
bool send_all(std::string& text, int tag);
// Every rank but 0 sends `mine` to rank 0; rank 0 receives one text from every rank (its own
// is `mine`), nullopt for a rank that died before sending.
std::vector<std::optional<std::string>> gather(const std::string& mine, int tag);

// Beats that carry data (--metrics-listen's counters): on a rank other than 0, `make()` is sent
// to rank 0 with each beat (every 200 ms); on rank 0, `take(rank, text)` receives each, on the
// watch thread. Empty functions (the default): beats carry nothing.
void on_beats(std::function<std::string()> make, std::function<void(int, const std::string&)> take);

// Kills every rank (MPI_Abort); mpirun exits with `code`.
[[noreturn]] void abort(int code);
// Stops the watch thread and ends MPI (MPI_Finalize; skipped when a rank died, since it would
// wait for that rank).
void finish();

}  // namespace mw::mpi
