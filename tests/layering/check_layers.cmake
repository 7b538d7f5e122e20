# The layering, checked at link time: every layer's static archive is linked
# whole into a shared object with only the layers below it and its own
# external libraries, with --no-undefined. A layer that calls into a layer
# above it (or into one it does not list) leaves an undefined symbol and fails
# here, even though a program linking every layer would build.
# Run by ctest (test "layering"): cmake -DCXX=... -DLIB_DIR=... -DLAYERS="net:timer,common:-luv ..." -P
separate_arguments(layers UNIX_COMMAND "${LAYERS}")
set(failed "")
foreach(entry IN LISTS layers)
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 layer)
  list(GET parts 1 below)
  list(GET parts 2 external)
  if(below STREQUAL "-")
    set(below "")
  endif()
  string(REPLACE "," ";" below "${below}")
  string(REPLACE "," ";" external "${external}")
  set(args -shared -o ${OUT_DIR}/libcheck-${layer}.so -Wl,--no-undefined
      -Wl,--whole-archive ${LIB_DIR}/libheartwheel-${layer}.a -Wl,--no-whole-archive
      -Wl,--start-group)  # the layers below in any order
  foreach(b IN LISTS below)
    if(b)
      list(APPEND args ${LIB_DIR}/libheartwheel-${b}.a)
    endif()
  endforeach()
  list(APPEND args -Wl,--end-group)
  foreach(e IN LISTS external)
    if(e)
      list(APPEND args ${e})
    endif()
  endforeach()
  list(APPEND args ${SANITIZER_FLAGS})
  execute_process(COMMAND ${CXX} ${args} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(rc EQUAL 0)
    message(STATUS "layer ${layer}: links with only [${below}] below it")
  else()
    string(REGEX MATCHALL "undefined reference to `[^']*'" missing "${err}")
    list(REMOVE_DUPLICATES missing)
    list(SUBLIST missing 0 5 missing)
    message(SEND_ERROR "layer ${layer} needs more than [${below}] [${external}]:\n  ${missing}")
    list(APPEND failed ${layer})
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "layering broken: ${failed}")
endif()
