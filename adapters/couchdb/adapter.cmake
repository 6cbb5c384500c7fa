# The CouchDB adapter runs on the http adapter's engine (adapters/http): it is built with it. Its
# server, pouchdb-server, is not packaged for Debian: adapters/couchdb/setup.sh installs it (npm).
include(${CMAKE_SOURCE_DIR}/adapters/http/libs.cmake)
mw_adapter(couchdb ORDER 60 SPEC couchdb_adapter_spec HEADER couchdb.h
  PACKAGES libcurl4-openssl-dev libhttp-parser-dev
  IF MWBENCH_HTTP_FOUND
  TESTS_COST 147)
# The source tree's path only where it is read (pouchdb-server in .deps/): a definition on every
# file would make ccache miss between two checkouts.
set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/couchdb.cpp APPEND PROPERTY
  COMPILE_DEFINITIONS MWBENCH_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
