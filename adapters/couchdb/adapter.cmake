# The CouchDB adapter runs on the http adapter's engine (adapters/http): it is built with it.
include(${CMAKE_SOURCE_DIR}/adapters/http/libs.cmake)
if(MWBENCH_HTTP_FOUND AND NOT "couchdb" IN_LIST MWBENCH_WITHOUT)
  mw_adapter_on(couchdb)
else()
  mw_adapter_off(couchdb "${MWBENCH_HTTP_PACKAGES}")
endif()
