#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "registry.h"

int main(int argc, char** argv) {
  mw::install_registered_adapters();  // as mwbench's main() does
  return doctest::Context(argc, argv).run();
}
