#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <csignal>

#include "adapters/registry.h"

int main(int argc, char** argv) {
  mw::install_registered_adapters();  // as mwbench's main() does
  // As mwbench's main() does: a peer that closed its end fails a write with EPIPE, never kills the
  // process (a fake server's reply to a client mwbench had dropped killed the ASan run, SIGPIPE).
  std::signal(SIGPIPE, SIG_IGN);
  return doctest::Context(argc, argv).run();
}
