# Precompiled headers for the programs and tests (never the library).
#
# Why: three third-party headers dominate the build. <CLI/CLI.hpp> (CLI11 2.1,
# header-only) takes seconds to parse in each of the ~30 program sources that
# define flags, <nlohmann/json.hpp> takes seconds in ~40, and Catch2's single
# header in each of ~80 test sources. Each is parsed once into a precompiled
# header here and reused; tools/run-tests' default run is minutes shorter.
#
# How: one host target per header set compiles it (with the flags every
# program gets from heartwheel_options), and every program and test target
# reuses the host's precompiled header (REUSE_FROM). A source gets the header
# only if it includes one of the three itself (it is force-included first, so
# a source that never asked for CLI11 must not be handed it); the others are
# marked SKIP_PRECOMPILE_HEADERS. GCC only: GCC falls back to the plain header
# when a target's flags do not match the host's (slower, never wrong), clang
# refuses the build instead.
#
# HEARTWHEEL_PCH=OFF turns it off (the build is the same, only slower). With
# ccache, set `sloppiness = pch_defines,time_macros` (CONTRIBUTING.md) or the
# sources that use a precompiled header are compiled uncached.
include_guard(GLOBAL)

if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(heartwheel_pch_default ON)
else()
  set(heartwheel_pch_default OFF)
endif()
option(HEARTWHEEL_PCH "Precompile CLI11, nlohmann-json and Catch2 for the programs and tests (GCC)"
       ${heartwheel_pch_default})

# Sets `out` to the kinds of heavy header `source` includes: cli, catch, json.
function(heartwheel_heavy_includes source out)
  file(STRINGS "${source}" lines REGEX "^#include <(CLI/CLI|catch2/catch|nlohmann/json)\\.hpp>")
  set(kinds "")
  foreach(line IN LISTS lines)
    if(line MATCHES "CLI/CLI")
      list(APPEND kinds cli)
    elseif(line MATCHES "catch2/catch")
      list(APPEND kinds catch)
    else()
      list(APPEND kinds json)
    endif()
  endforeach()
  set(${out} "${kinds}" PARENT_SCOPE)
endfunction()

# One host per header set: an object library with one empty source whose only
# job is to compile the precompiled header with the programs' flags.
function(heartwheel_pch_host kind)
  set(host heartwheel_pch_${kind})
  file(CONFIGURE OUTPUT "${CMAKE_BINARY_DIR}/pch/${kind}.cpp"
       CONTENT "// The host of the ${kind} precompiled header.\n")
  add_library(${host} OBJECT "${CMAKE_BINARY_DIR}/pch/${kind}.cpp")
  target_link_libraries(${host} PRIVATE heartwheel_options nlohmann_json::nlohmann_json ${ARGN})
  set(headers <nlohmann/json.hpp> <string> <vector> <map> <memory> <functional> <chrono> <iostream>)
  if(kind STREQUAL "cli")
    list(PREPEND headers <CLI/CLI.hpp>)
  elseif(kind STREQUAL "catch")
    list(PREPEND headers <catch2/catch.hpp>)
  endif()
  target_precompile_headers(${host} PRIVATE ${headers})
endfunction()

# Gives `target` the precompiled header of its heaviest header set (catch
# before cli before json: one per target) and skips the sources that do not
# include that set's main header.
function(heartwheel_use_pch target)
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$" OR target MATCHES "^heartwheel_pch_")
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(per_source "")
  set(all_kinds "")
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    if(NOT EXISTS "${path}")
      continue()
    endif()
    # A source with flags of its own (the model tests' -O1) cannot use a
    # header precompiled with the others' (GCC refuses it: -Winvalid-pch).
    get_source_file_property(own_flags "${path}" TARGET_DIRECTORY ${target} COMPILE_OPTIONS)
    if(own_flags)
      set(kinds "")
    else()
      heartwheel_heavy_includes("${path}" kinds)
    endif()
    list(APPEND all_kinds ${kinds})
    list(APPEND per_source "${path}=${kinds}")
  endforeach()
  set(chosen "")
  foreach(kind IN ITEMS catch cli json)
    if(kind IN_LIST all_kinds AND TARGET heartwheel_pch_${kind})
      set(chosen ${kind})
      break()
    endif()
  endforeach()
  if(NOT chosen)
    return()
  endif()
  target_precompile_headers(${target} REUSE_FROM heartwheel_pch_${chosen})
  foreach(entry IN LISTS per_source)
    string(REGEX REPLACE "=.*" "" path "${entry}")
    string(REGEX REPLACE "^[^=]*=" "" kinds "${entry}")
    if(NOT kinds MATCHES "${chosen}")
      set_source_files_properties("${path}" TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

# Walks `dir` and its subdirectories and gives every target there its
# precompiled header (not the fuzzers, built by clang with their own flags,
# nor the header check, whose point is each header compiled alone).
function(heartwheel_use_pch_under dir)
  if(dir MATCHES "/tests/(fuzz|headers)$")
    return()
  endif()
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    heartwheel_use_pch(${target})
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    heartwheel_use_pch_under("${subdir}")
  endforeach()
endfunction()

# Called once at the end of the top-level CMakeLists.txt, when every target
# exists: the programs (programs/, examples/, tools/) and the tests, never lib/.
function(heartwheel_apply_pch)
  if(NOT HEARTWHEEL_PCH)
    return()
  endif()
  heartwheel_pch_host(json)
  if(TARGET CLI11::CLI11)
    heartwheel_pch_host(cli CLI11::CLI11)
  endif()
  if(TARGET Catch2::Catch2)
    heartwheel_pch_host(catch Catch2::Catch2)
  endif()
  get_property(top_subdirs DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS top_subdirs)
    if(subdir MATCHES "/(programs|examples|tools|tests)(/|$)")
      heartwheel_use_pch_under("${subdir}")
    endif()
  endforeach()
endfunction()
