# HEARTWHEEL_FUZZ=ON: libFuzzer builds (clang only). Every object of the
# library and llhttp gets coverage instrumentation plus ASan and UBSan
# (-fsanitize=fuzzer-no-link,address,undefined); the fuzz targets in
# tests/fuzz link libFuzzer's main (-fsanitize=fuzzer). tools/fuzz configures
# build-fuzz/ this way; see tests/fuzz/README.md.
if(NOT HEARTWHEEL_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "HEARTWHEEL_FUZZ=ON needs clang (libFuzzer): configure with "
                      "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "
                      "(tools/install-deps fuzz installs them), or just run tools/fuzz")
endif()
if(HEARTWHEEL_SANITIZE)
  message(FATAL_ERROR "HEARTWHEEL_FUZZ=ON already builds with address,undefined: "
                      "leave HEARTWHEEL_SANITIZE empty")
endif()
set(HEARTWHEEL_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
target_compile_options(heartwheel_options INTERFACE ${HEARTWHEEL_FUZZ_FLAGS})
target_link_options(heartwheel_options INTERFACE -fsanitize=address,undefined)
# llhttp too: coverage inside the parser is what guides the HTTP target.
target_compile_options(llhttp PRIVATE ${HEARTWHEEL_FUZZ_FLAGS})
