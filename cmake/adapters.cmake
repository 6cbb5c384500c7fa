# The adapters (included from the top CMakeLists.txt, after the core's layers). Each folder
# adapters/NAME/ with an adapter.cmake is one adapter, and that file's one mw_adapter() call says
# all the tree needs to know of it; nothing outside the folder names it (the adapter_folders test,
# tests/adapter_folders_test.sh, checks it):
#   - the registry: build/adapters/registry_list.cpp, generated here from the adapters built, in
#     their ORDER (the order of `mwbench list`); adapters/registry.cpp keeps what is not a list;
#   - its tests adapters/NAME/test_*.cpp, in the one unit_tests binary (tests/CMakeLists.txt), a
#     CTest test unit_<file> each, with its COST, RUN_SERIAL and sanitizer-run skips from here;
#   - its fuzz targets adapters/NAME/fuzz_*.cpp and their corpora adapters/NAME/corpus/<target>/
#     (fuzz/CMakeLists.txt, scripts/fuzz);
#   - its Debian packages, for scripts/setup (which runs before CMake is installed, so it reads the
#     keyword lines as text: see below) and the .deb's Recommends (cmake/install.cmake).
# The shared client pieces (adapters/conn/, adapters/*.cpp) have no adapter.cmake: always built.
#
# mw_adapter(NAME ORDER n SPEC function HEADER file
#            [PACKAGES debian-package...]  the -dev packages its code builds with; a build without
#                                          them leaves the adapter out ("not built: ... was missing")
#            [MODULES pkg-config-module...] what it links: all found, or the adapter is off
#            [IF variable]                 or: on when the variable is true (a library without a
#                                          pkg-config file, found by the adapter.cmake itself)
#            [SERVERS debian-package...]   the servers it starts: setup installs them, the .deb
#                                          recommends them when the adapter is built
#            [TOOLS debian-package...]     what its tests and peer comparisons run besides (setup)
#            [SERVICES unit...]            system services those packages start, which setup stops
#                                          (the tests start their own servers)
#            [TESTS_COST seconds]          CTest's COST of its test files' tests (see tests/)
#            [TESTS_ALONE]                 they judge the wall clock or load both cores: RUN_SERIAL
#            [SANITIZER_SKIP pattern...])  test cases (doctest -tce patterns, no commas) the
#                                          sanitizer run leaves to the Release run
# ORDER places it in `mwbench list` (unique; gaps of 10 leave room). SPEC is the function that
# returns its AdapterSpec, HEADER (in the folder) declares it. An adapter without PACKAGES is
# always built (it links only what the core does).
#
# The line format scripts/setup reads: PACKAGES, SERVERS, TOOLS and SERVICES each begin a line of
# their own, their values on that same line (up to a `)` or a `#`). mw_adapter checks it: a list
# setup would read otherwise stops configure.

set_property(GLOBAL PROPERTY MWBENCH_ADAPTERS_OFF "")
set_property(GLOBAL PROPERTY MWBENCH_ADAPTERS_ON "")

# The adapter folders' sources that are adapter code (not its test or fuzz files).
function(mw_adapter_sources out dir)
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cpp)
  list(FILTER srcs EXCLUDE REGEX "/(test|fuzz)_[^/]*\\.cpp$")
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()

# The shared pieces: adapters/*.cpp and the folders without an adapter.cmake (adapters/conn/).
file(GLOB ADAPTER_SOURCES CONFIGURE_DEPENDS adapters/*.cpp)
file(GLOB adapter_dirs LIST_DIRECTORIES true CONFIGURE_DEPENDS adapters/*)
file(GLOB adapter_cmake_files CONFIGURE_DEPENDS adapters/*/adapter.cmake)  # a new one reconfigures
set(ADAPTER_CMAKE_FILES "")
foreach(d ${adapter_dirs})
  if(EXISTS ${d}/adapter.cmake)
    list(APPEND ADAPTER_CMAKE_FILES ${d}/adapter.cmake)
  elseif(IS_DIRECTORY ${d})
    mw_adapter_sources(shared ${d})
    list(APPEND ADAPTER_SOURCES ${shared})
  endif()
endforeach()
add_library(mw_adapters STATIC ${ADAPTER_SOURCES})
target_link_libraries(mw_adapters PUBLIC mw_config PkgConfig::OPENSSL)
# MWBENCH_WITH_<NAME> for the tests, the fuzz targets and bench/ (not for the core: a build
# without an adapter recompiles only what names it).
add_library(mw_adapter_set INTERFACE)

# The values of KEY's lines in FILE as scripts/setup reads them (the line format above).
function(mw_adapter_lines out file key)
  file(STRINGS ${file} lines REGEX "^[ \t]*${key}[ \t]")
  set(values "")
  foreach(line ${lines})
    if(line MATCHES "^[ \t]*${key}[ \t]+([^#)]*)")
      string(STRIP "${CMAKE_MATCH_1}" v)
      separate_arguments(v UNIX_COMMAND "${v}")
      list(APPEND values ${v})
    endif()
  endforeach()
  set(${out} "${values}" PARENT_SCOPE)
endfunction()

function(mw_adapter name)
  cmake_parse_arguments(PARSE_ARGV 1 A "TESTS_ALONE" "ORDER;SPEC;HEADER;IF;TESTS_COST"
    "PACKAGES;MODULES;SERVERS;TOOLS;SERVICES;SANITIZER_SKIP")
  set(dir ${CMAKE_SOURCE_DIR}/adapters/${name})
  set(where "adapters/${name}/adapter.cmake")
  if(NOT CMAKE_CURRENT_LIST_FILE STREQUAL "${dir}/adapter.cmake")
    message(FATAL_ERROR "mw_adapter(${name}) belongs in ${where}, not ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  if(A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: mw_adapter: unknown arguments: ${A_UNPARSED_ARGUMENTS}")
  endif()
  foreach(key ORDER SPEC HEADER)
    if(NOT A_${key})
      message(FATAL_ERROR "${where}: mw_adapter needs ${key}")
    endif()
  endforeach()
  if(NOT EXISTS ${dir}/${A_HEADER})
    message(FATAL_ERROR "${where}: HEADER ${A_HEADER} is not a file of adapters/${name}/")
  endif()
  if(NOT A_ORDER MATCHES "^[0-9]+$" OR (A_TESTS_COST AND NOT A_TESTS_COST MATCHES "^[0-9]+$"))
    message(FATAL_ERROR "${where}: ORDER and TESTS_COST are whole numbers")
  endif()
  get_property(taken GLOBAL PROPERTY MWBENCH_ADAPTER_AT_${A_ORDER})
  if(taken)
    message(FATAL_ERROR "${where}: ORDER ${A_ORDER} is adapters/${taken}'s too "
      "(each place in `mwbench list` is one adapter's)")
  endif()
  set_property(GLOBAL PROPERTY MWBENCH_ADAPTER_AT_${A_ORDER} ${name})
  if((A_MODULES OR A_IF) AND NOT A_PACKAGES)
    message(FATAL_ERROR "${where}: MODULES or IF without PACKAGES (what a build that lacks them should install)")
  endif()
  if(A_PACKAGES AND NOT A_MODULES AND NOT A_IF)
    message(FATAL_ERROR "${where}: PACKAGES without MODULES or IF (how configure tells whether they are there)")
  endif()
  foreach(p ${A_SANITIZER_SKIP})
    if(p MATCHES ",")
      message(FATAL_ERROR "${where}: SANITIZER_SKIP '${p}': a comma separates doctest's patterns; use * or ?")
    endif()
  endforeach()
  # scripts/setup reads these lists as text: they must read the same there.
  foreach(key PACKAGES SERVERS TOOLS SERVICES)
    mw_adapter_lines(as_text ${CMAKE_CURRENT_LIST_FILE} ${key})
    if(NOT "${as_text}" STREQUAL "${A_${key}}")
      message(FATAL_ERROR "${where}: ${key} and its values go on one line of their own (scripts/setup "
        "reads '${as_text}', CMake '${A_${key}}'; cmake/adapters.cmake)")
    endif()
  endforeach()

  string(TOUPPER "${name}" upper)
  set(built TRUE)
  set(links "")
  if(A_PACKAGES AND "${name}" IN_LIST MWBENCH_WITHOUT)
    set(built FALSE)
  elseif(A_MODULES)
    pkg_check_modules(MWA_${upper} QUIET IMPORTED_TARGET ${A_MODULES})
    if(MWA_${upper}_FOUND)
      set(links PkgConfig::MWA_${upper})
    else()
      set(built FALSE)
    endif()
  endif()
  if(built AND A_IF AND NOT ${A_IF})
    set(built FALSE)
  endif()
  if(NOT built)
    list(JOIN A_PACKAGES " " packages)
    message(STATUS "adapter ${name}: not built: ${packages} was missing (apt-get install ${packages})")
    set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTERS_OFF "${name}=${packages}")
    return()
  endif()

  mw_adapter_sources(srcs ${dir})
  target_sources(mw_adapters PRIVATE ${srcs})
  if(links)
    target_link_libraries(mw_adapters PUBLIC ${links})
  endif()
  target_compile_definitions(mw_adapter_set INTERFACE MWBENCH_WITH_${upper}=1)
  set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTERS_ON ${name})
  set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTER_ORDERS "${A_ORDER}=${name}")
  set_property(GLOBAL PROPERTY MWBENCH_ADAPTER_${name}_REGISTER "${A_HEADER};${A_SPEC}")
  set_property(GLOBAL PROPERTY MWBENCH_ADAPTER_${name}_SERVERS "${A_SERVERS}")
  # Its tests (tests/CMakeLists.txt makes unit_<file> of each test_<file>.cpp) and fuzz targets.
  file(GLOB tests CONFIGURE_DEPENDS ${dir}/test_*.cpp)
  foreach(t ${tests})
    get_filename_component(file ${t} NAME_WE)
    string(REGEX REPLACE "^test_" "unit_" test ${file})
    set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTER_TEST_SOURCES ${t})
    if(A_TESTS_COST)
      set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTER_TEST_COSTS "${test}=${A_TESTS_COST}")
    endif()
    if(A_TESTS_ALONE)
      set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTER_TESTS_ALONE ${test})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTER_SANITIZER_SKIPS ${A_SANITIZER_SKIP})
  file(GLOB fuzz CONFIGURE_DEPENDS ${dir}/fuzz_*.cpp)
  set_property(GLOBAL APPEND PROPERTY MWBENCH_ADAPTER_FUZZ_SOURCES ${fuzz})
  message(STATUS "adapter ${name}: built")
endfunction()

foreach(f ${ADAPTER_CMAKE_FILES})
  include(${f})
  get_filename_component(d ${f} DIRECTORY)
  get_filename_component(name ${d} NAME)
  get_property(built GLOBAL PROPERTY MWBENCH_ADAPTERS_ON)
  get_property(left_out GLOBAL PROPERTY MWBENCH_ADAPTERS_OFF)
  if(NOT name IN_LIST built AND NOT left_out MATCHES "(^|;)${name}=")
    message(FATAL_ERROR "adapters/${name}/adapter.cmake calls no mw_adapter(${name} ...)")
  endif()
endforeach()

# The registry's list: the adapters built, in their ORDER.
get_property(orders GLOBAL PROPERTY MWBENCH_ADAPTER_ORDERS)
list(SORT orders COMPARE NATURAL)
set(includes "")
set(calls "")
foreach(entry ${orders})
  string(REGEX REPLACE "^[0-9]+=" "" name ${entry})
  get_property(register GLOBAL PROPERTY MWBENCH_ADAPTER_${name}_REGISTER)
  list(GET register 0 header)
  list(GET register 1 spec)
  string(APPEND includes "#include \"adapters/${name}/${header}\"\n")
  string(APPEND calls "      ${spec}(),\n")
endforeach()
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/adapters/registry_list.cpp CONTENT
"// Generated by CMake (cmake/adapters.cmake) from adapters/*/adapter.cmake: the adapters this build
// has, in their ORDER, which is the order of `mwbench list`. Edit the adapter.cmake files, not this.
#include \"adapters/registry.h\"
${includes}
namespace mw {

std::vector<AdapterSpec> built_adapter_specs() {
  return {
${calls}  };
}

}  // namespace mw
" @ONLY)
target_sources(mw_adapters PRIVATE ${CMAKE_BINARY_DIR}/adapters/registry_list.cpp)

get_property(MWBENCH_ADAPTERS_OFF_LIST GLOBAL PROPERTY MWBENCH_ADAPTERS_OFF)
string(REPLACE ";" "," MWBENCH_ADAPTERS_OFF_STR "${MWBENCH_ADAPTERS_OFF_LIST}")
set_property(SOURCE adapters/registry.cpp APPEND PROPERTY
  COMPILE_DEFINITIONS MWBENCH_ADAPTERS_OFF="${MWBENCH_ADAPTERS_OFF_STR}")
target_link_libraries(mw_adapters PRIVATE mw_adapter_set)
