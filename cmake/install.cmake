# `cmake --install` and `cpack -G DEB` (included from the top CMakeLists.txt, after mwbench).
#   bin/mwbench, share/mwbench/configs/*.toml (the suites `mwbench run NAME` finds beside the
#   binary), share/man/man1/mwbench.1.gz and share/doc/mwbench/ (the README and the docs).
include(GNUInstallDirs)

# The manual page is written by the binary just built, from the option tables its --help prints
# (`mwbench help --man`), so it documents exactly the adapters and options of this build. It is
# installed gzipped (-9n: no name or time stamp, the same bytes each build), as Debian policy and
# lintian want; build/mwbench.1 stays readable with `man -l`.
set(MWBENCH_MAN_PAGE ${CMAKE_BINARY_DIR}/mwbench.1)
add_custom_command(OUTPUT ${MWBENCH_MAN_PAGE} ${MWBENCH_MAN_PAGE}.gz
  COMMAND sh -c "\"$1\" help --man >\"$2.tmp\" && gzip -9nc \"$2.tmp\" >\"$2.gz.tmp\""
    man $<TARGET_FILE:mwbench> ${MWBENCH_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -E rename ${MWBENCH_MAN_PAGE}.gz.tmp ${MWBENCH_MAN_PAGE}.gz
  COMMAND ${CMAKE_COMMAND} -E rename ${MWBENCH_MAN_PAGE}.tmp ${MWBENCH_MAN_PAGE}
  DEPENDS mwbench
  COMMENT "Writing the manual page mwbench.1 and mwbench.1.gz (mwbench help --man)"
  VERBATIM)
add_custom_target(manpage ALL DEPENDS ${MWBENCH_MAN_PAGE} ${MWBENCH_MAN_PAGE}.gz)

install(TARGETS mwbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET mwbench-pagecache)  # --crash power's FUSE layer, found beside mwbench
  install(TARGETS mwbench-pagecache RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set(mwbench_recommends fuse3)  # fusermount3
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mwbench/configs
  FILES_MATCHING PATTERN "*.toml")
install(FILES ${MWBENCH_MAN_PAGE}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# The docs keep the source tree's layout under share/doc/mwbench/ (README.md, CONTRIBUTING.md,
# docs/, adapters/NAME/README.md), so the links between the pages resolve there too.
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/CONTRIBUTING.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
  FILES_MATCHING PATTERN "*.md" PATTERN "*.json")
file(GLOB mwbench_adapter_readmes CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/adapters/*/README.md)
foreach(readme ${mwbench_adapter_readmes})
  get_filename_component(dir ${readme} DIRECTORY)
  get_filename_component(name ${dir} NAME)
  install(FILES ${readme} DESTINATION ${CMAKE_INSTALL_DOCDIR}/adapters/${name})
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/results/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME results.md)

# The .deb: dpkg-shlibdeps names the library packages the binary links (Depends); the servers
# the built adapters start are Recommends, so `mwbench list` says what is missing instead of apt
# pulling every server onto a machine that needs one. An adapter's adapter.cmake names its servers
# (mw_adapter's SERVERS, cmake/adapters.cmake).
get_property(mwbench_built GLOBAL PROPERTY MWBENCH_ADAPTERS_ON)
foreach(name ${mwbench_built})
  get_property(servers GLOBAL PROPERTY MWBENCH_ADAPTER_${name}_SERVERS)
  list(APPEND mwbench_recommends ${servers})
endforeach()
list(REMOVE_DUPLICATES mwbench_recommends)
list(SORT mwbench_recommends)
string(REPLACE ";" ", " mwbench_recommends "${mwbench_recommends}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mwbench)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "benchmarks queues, caches, databases and disks with checked replies")
set(CPACK_PACKAGE_DESCRIPTION "mwbench runs the same N-operation loop through adapters for queues, caches,
 databases, disks and HTTP servers, checks every reply and reports req/s and latency percentiles;
 `mwbench run vm-sanity` checks a new machine in about 15 seconds. See man mwbench.")
set(CPACK_PACKAGE_CONTACT "mwbench maintainers <maintainers@users.noreply.a-seed-380cd63e.example>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${mwbench_recommends}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # mwbench_0.1.0_amd64.deb
set(CPACK_STRIP_FILES ON)
include(CPack)
