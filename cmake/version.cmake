# The toolkit's git commit, refreshed on every build (not only at configure time) so that a manifest
# never names a stale commit. Generates ${CMAKE_BINARY_DIR}/generated/version.cpp.
set(SADDLESCOPE_VERSION_CPP ${CMAKE_BINARY_DIR}/generated/version.cpp)
add_custom_target(saddlescope_version_stamp
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DOUT=${SADDLESCOPE_VERSION_CPP}
          -DVERSION=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/cmake/write_version.cmake
  BYPRODUCTS ${SADDLESCOPE_VERSION_CPP}
  COMMENT "" VERBATIM)
