# What the HTTP engine links (the http and couchdb adapters): libcurl (https, proxies) and
# Debian's http-parser, which has no pkg-config file. MWBENCH_HTTP_FOUND is their adapter.cmake's IF.
if(NOT DEFINED MWBENCH_HTTP_FOUND)
  pkg_check_modules(MWA_CURL QUIET IMPORTED_TARGET libcurl)
  find_path(HTTP_PARSER_INCLUDE http_parser.h)
  find_library(HTTP_PARSER_LIB http_parser)
  if(MWA_CURL_FOUND AND HTTP_PARSER_INCLUDE AND HTTP_PARSER_LIB AND NOT "http" IN_LIST MWBENCH_WITHOUT)
    set(MWBENCH_HTTP_FOUND TRUE)
    target_include_directories(mw_adapters PUBLIC ${HTTP_PARSER_INCLUDE})
    target_link_libraries(mw_adapters PUBLIC PkgConfig::MWA_CURL ${HTTP_PARSER_LIB})
  else()
    set(MWBENCH_HTTP_FOUND FALSE)
  endif()
endif()
