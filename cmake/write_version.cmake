# cmake -DSRC=... -DOUT=... -DVERSION=... -P write_version.cmake
execute_process(COMMAND git -C ${SRC} describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  # A copy of the tree without .git (e.g. sent to a GPU host) can name its commit in the environment.
  if(DEFINED ENV{SADDLESCOPE_COMMIT})
    set(commit "$ENV{SADDLESCOPE_COMMIT}")
  else()
    set(commit "unknown")
  endif()
endif()
set(text "#include \"saddlescope/base/version.h\"\nnamespace saddlescope {\nconst char* toolkit_version() { return \"${VERSION}\"; }\nconst char* toolkit_commit() { return \"${commit}\"; }\n}  // namespace saddlescope\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
