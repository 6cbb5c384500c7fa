include(${CMAKE_CURRENT_LIST_DIR}/libs.cmake)
# Its tests run against nginx (nginx-light), started by them.
mw_adapter(http ORDER 70 SPEC http_adapter_spec HEADER http.h
  PACKAGES libcurl4-openssl-dev libhttp-parser-dev
  IF MWBENCH_HTTP_FOUND
  TOOLS nginx-light)
