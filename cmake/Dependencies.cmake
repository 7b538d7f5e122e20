# Third-party dependencies, all from Debian 12 packages (see README.md):
#   libuv1-dev (pkg-config), node-llhttp (C sources, compiled here), catch2 2.13,
#   libcli11-dev (command lines), nlohmann-json3-dev (JSON output), libssl-dev
#   (libcrypto: SHA-1 and base64 for the WebSocket handshake, Redis script
#   SHA-1s; libssl: the tls layer), libhiredis-dev (the Redis link's RESP reader and encoder),
#   zlib1g-dev (permessage-deflate's DEFLATE streams in the ws layer).
# What a consumer of the installed library needs is only libuv and threads, and
# libssl, libcrypto, hiredis, libsodium and zlib when the library is static
# (cmake/heartwheelConfig.cmake.in); the rest is private to this build.

# llhttp ships as C sources without a library; build it once, as C99, with its
# own warnings left alone. An object library: its objects are compiled into
# the http layer (lib/src/http/CMakeLists.txt), so an installed heartwheel needs no llhttp.
set(LLHTTP_SRC_DIR "/usr/share/llhttp" CACHE PATH "llhttp C sources (api.c, http.c, llhttp.c)")
set(LLHTTP_INCLUDE_DIR "/usr/share/include/llhttp" CACHE PATH "directory containing llhttp.h")
if(NOT EXISTS ${LLHTTP_SRC_DIR}/llhttp.c OR NOT EXISTS ${LLHTTP_INCLUDE_DIR}/llhttp.h)
  message(FATAL_ERROR "llhttp not found in ${LLHTTP_SRC_DIR} / ${LLHTTP_INCLUDE_DIR}: "
                      "apt-get install node-llhttp, or set LLHTTP_SRC_DIR and LLHTTP_INCLUDE_DIR")
endif()
add_library(llhttp OBJECT ${LLHTTP_SRC_DIR}/api.c ${LLHTTP_SRC_DIR}/http.c ${LLHTTP_SRC_DIR}/llhttp.c)
target_include_directories(llhttp SYSTEM PUBLIC ${LLHTTP_INCLUDE_DIR})
set_target_properties(llhttp PROPERTIES C_STANDARD 99 POSITION_INDEPENDENT_CODE ON)
target_compile_options(llhttp PRIVATE -w ${HEARTWHEEL_LIBRARY_FLAG_LIST})

# The minimum libuv is also written into the installed package (cmake/Package.cmake).
set(HEARTWHEEL_LIBUV_VERSION 1.44)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv>=${HEARTWHEEL_LIBUV_VERSION})
# Private to the library: lib/src/ws/handshake_key.cpp, lib/src/redis/script.cpp
# (libcrypto) and lib/src/tls (libssl and libcrypto) include OpenSSL.
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto>=3.0)
pkg_check_modules(LIBSSL REQUIRED IMPORTED_TARGET libssl>=3.0)
# Private to the library: lib/src/redis/reader.cpp and command.cpp use
# hiredis's RESP reader and command encoder (never its connections).
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis>=0.14)
# Private to the library: lib/src/pubsub/keyed_hash.cpp (SipHash-2-4 of
# channel names, crypto_shorthash).
pkg_check_modules(LIBSODIUM REQUIRED IMPORTED_TARGET libsodium>=1.0.18)
# Private to the library: lib/src/ws/zstream.cpp (raw DEFLATE streams for
# permessage-deflate); no public header of ours includes zlib.h.
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib>=1.2.11)
find_package(Threads REQUIRED)
# nlohmann-json is header-only and used privately by the library; CLI11 only by
# the programs (programs, examples, tools, tests).
find_package(nlohmann_json 3.11 CONFIG REQUIRED)
if(HEARTWHEEL_BUILD_PROGRAMS OR HEARTWHEEL_BUILD_EXAMPLES OR HEARTWHEEL_BUILD_TOOLS
   OR HEARTWHEEL_BUILD_TESTS)
  find_package(CLI11 2.1 CONFIG REQUIRED)
endif()
# Optional: liburing-dev gives the net layer its io_uring batches of shared
# sends (lib/src/net/send_batch.h: a fan-out's frames, 256 sends per system
# call) and heartwheel-fanout-floor its io_uring modes. Without it a fan-out
# writes one write() per socket (said once on stderr at run time).
pkg_check_modules(LIBURING QUIET IMPORTED_TARGET liburing>=2.3)
if(NOT LIBURING_FOUND)
  message(STATUS "liburing not found: fan-outs write one write() per socket, no io_uring in heartwheel-fanout-floor")
endif()
if(HEARTWHEEL_BUILD_TESTS)
  find_package(Catch2 2.13 REQUIRED)
  include(Catch)
endif()
