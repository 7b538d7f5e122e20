#!/usr/bin/env bash
# Installs heartwheel into temporary prefixes and builds tests/install/consumer.cpp
# against each, the ways a user would, running every result (it prints "ok"):
#   1. static library: `cmake --install --prefix`, then the consumer with CMake
#      find_package, with plain pkg-config, and with Meson dependency(); and
#      tests/install/net (one layer: net) with find_package(... COMPONENTS
#      net), pkg-config heartwheel-net and dependency('heartwheel-net'), whose
#      link lines must name neither hiredis nor libcrypto nor libssl; and
#      tests/install/metrics (the metrics layer: an Endpoint scraped once) with
#      COMPONENTS metrics and pkg-config heartwheel-metrics, whose link lines
#      must name no layer but metrics, http, net, timer, common; and README.md's
#      quick start (tests/quick_start/extract.py) with heartwheel-runtime's flags,
#      run until it listens, then drained with SIGTERM;
#   2. shared libraries (BUILD_SHARED_LIBS=ON): the consumer with find_package,
#      checked to load libheartwheel-*.so from the prefix;
#   3. Meson: heartwheel as a subproject of the consumer (only its library is
#      built), then `meson install` of that, consumed with pkg-config.
# The library builds have examples, tools and tests off (40-60 s each on 2 idle
# cores without ccache); with HEARTWHEEL_INSTALL_FROM_BUILD=DIR (as ctest runs
# it) step 1 installs the already built DIR instead of building the library
# again. HEARTWHEEL_INSTALL_QUICK=1 runs step 1 only (tools/run-tests sets it
# unless --all: steps 2 and 3 build the library twice more). Exits 0 only if every
# way worked.
#
# Usage: check_install.sh SOURCE_DIR WORK_DIR [CMAKE_ARG...]
#   WORK_DIR is emptied first, and removed after a run where everything worked
#   (unless HEARTWHEEL_KEEP_INSTALL_CHECK=1); CMAKE_ARGs go to the library
#   configure (the ctest entry passes its compilers and compiler launcher).
# Registered as ctest test "install" (label install) by tests/CMakeLists.txt.
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 SOURCE_DIR WORK_DIR [CMAKE_ARG...]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
work=$2
shift 2
consumer=$src/tests/install
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)

step() { echo; echo "=== install test: $*"; }
fail() { echo "install test FAILED: $*" >&2; exit 1; }
# Runs a built consumer; it must print exactly "ok".
run_consumer() {
  local out
  out=$("$1") || fail "$1 exited with status $?"
  [[ $out == ok ]] || fail "$1 printed '$out', not 'ok'"
  echo "$1: ok"
}
# Builds and installs the library with the given extra CMake arguments.
install_library() {
  local name=$1; shift
  cmake -S "$src" -B "$work/build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DHEARTWHEEL_BUILD_TESTS=OFF -DHEARTWHEEL_BUILD_PROGRAMS=OFF -DHEARTWHEEL_BUILD_EXAMPLES=OFF -DHEARTWHEEL_BUILD_TOOLS=OFF \
    "$@" >/dev/null || fail "configure ($name)"
  cmake --build "$work/build-$name" >/dev/null || fail "build ($name)"
  cmake --install "$work/build-$name" --prefix "$work/$name" >/dev/null || fail "install ($name)"
}
# cmake_consumer PREFIX BUILD_DIR [SOURCE_DIR]: configures and builds a consumer.
cmake_consumer() {
  local prefix=$1 dir=$2 source=${3:-$consumer}
  cmake -S "$source" -B "$dir" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null ||
    fail "find_package(heartwheel) against $prefix ($source)"
  cmake --build "$dir" >/dev/null || fail "building the CMake consumer $source against $prefix"
}
# only_layers WHAT "LAYER..." LINE: fails if the link line names a
# heartwheel layer outside the list, or hiredis, libcrypto or libssl (which
# no layer that may be listed here needs).
only_layers() {
  local what=$1 allowed=$2 line=$3 lib
  if grep -qE 'hiredis|crypto|ssl' <<<"$line"; then
    fail "$what links hiredis, libcrypto or libssl: $line"
  fi
  for lib in $(grep -oE 'heartwheel-[a-z_]+' <<<"$line" | sort -u); do
    [[ " $allowed " == *" ${lib#heartwheel-} "* ]] || fail "$what links $lib (only $allowed): $line"
  done
  echo "$what (only $allowed): $line"
}
only_net() { only_layers "$1" "net timer common" "$2"; }

step "static library: build and install"
if [[ -n ${HEARTWHEEL_INSTALL_FROM_BUILD:-} ]]; then
  # The build this test belongs to, installed as its user would after building
  # it (ctest sets this): one library build fewer, and its flags (-Werror,
  # warnings) must not leak into the package files either.
  cmake --install "$HEARTWHEEL_INSTALL_FROM_BUILD" --prefix "$work/static" >/dev/null ||
    fail "cmake --install $HEARTWHEEL_INSTALL_FROM_BUILD"
else
  install_library static "$@"
fi
prefix=$work/static
[[ -f $prefix/include/heartwheel/timer/loop_wheel.h ]] || fail "headers not installed"
ls "$prefix"/lib*/libheartwheel-net.a >/dev/null || fail "libheartwheel-net.a not installed"
pc_dir=$(dirname "$(find "$prefix" -name heartwheel.pc)")
[[ -f $pc_dir/heartwheel.pc ]] || fail "heartwheel.pc not installed"
private_include='#\s*include\s*[<"](llhttp|nlohmann/|CLI/)'
if grep -rqE "$private_include" "$prefix/include"; then
  fail "a public header includes a private dependency: $(grep -rlE "$private_include" "$prefix/include")"
fi
if grep -qE -- '-W[a-z]|-fsanitize|llhttp|nlohmann|CLI11' "$prefix"/lib*/cmake/heartwheel/*.cmake "$pc_dir"/heartwheel*.pc; then
  fail "build-only flags or private dependencies leak into the installed package files"
fi

step "static library: CMake find_package"
cmake_consumer "$prefix" "$work/consumer-cmake"
run_consumer "$work/consumer-cmake/consumer"

step "static library: pkg-config"
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs heartwheel) || fail "pkg-config heartwheel"
echo "pkg-config --cflags --libs heartwheel: $flags"
# shellcheck disable=SC2086  # the flags are words
"${CXX:-c++}" -std=c++20 "$consumer/consumer.cpp" -o "$work/consumer-pkgconfig" $flags ||
  fail "compiling with pkg-config's flags"
run_consumer "$work/consumer-pkgconfig"

step "static library: Meson dependency('heartwheel')"
PKG_CONFIG_PATH=$pc_dir meson setup "$work/consumer-meson" "$consumer" --wrap-mode=nofallback >/dev/null ||
  fail "meson setup of the consumer (dependency('heartwheel') via pkg-config)"
meson compile -C "$work/consumer-meson" >/dev/null || fail "building the Meson consumer"
run_consumer "$work/consumer-meson/consumer"

step "one layer: find_package(heartwheel COMPONENTS net)"
cmake_consumer "$prefix" "$work/net-cmake" "$consumer/net"
only_net "CMake's link line" "$(ninja -C "$work/net-cmake" -t commands consumer | tail -1)"
run_consumer "$work/net-cmake/consumer"

step "one layer: pkg-config heartwheel-net"
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs heartwheel-net) || fail "pkg-config heartwheel-net"
only_net "pkg-config --cflags --libs heartwheel-net" "$flags"
# shellcheck disable=SC2086
"${CXX:-c++}" -std=c++20 "$consumer/net/consumer.cpp" -o "$work/net-pkgconfig" $flags ||
  fail "compiling with heartwheel-net's flags"
run_consumer "$work/net-pkgconfig"

step "one layer: find_package(heartwheel COMPONENTS metrics)"
# The metrics layer writes any layer's families without linking them: its
# consumer links its endpoint's layers (http, net) and those below, no more.
metrics_layers="metrics http net timer common"
cmake_consumer "$prefix" "$work/metrics-cmake" "$consumer/metrics"
only_layers "CMake's link line" "$metrics_layers" "$(ninja -C "$work/metrics-cmake" -t commands consumer | tail -1)"
run_consumer "$work/metrics-cmake/consumer"

step "one layer: pkg-config heartwheel-metrics"
metrics_flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs heartwheel-metrics) ||
  fail "pkg-config heartwheel-metrics"
only_layers "pkg-config --cflags --libs heartwheel-metrics" "$metrics_layers" "$metrics_flags"
# shellcheck disable=SC2086
"${CXX:-c++}" -std=c++20 "$consumer/metrics/consumer.cpp" -o "$work/metrics-pkgconfig" $metrics_flags ||
  fail "compiling with heartwheel-metrics' flags"
run_consumer "$work/metrics-pkgconfig"

step "README.md's quick start against heartwheel-runtime"
# The snippet a user copies first: compiled with nothing but pkg-config's
# flags, then run: it must listen, drain on SIGTERM and exit 0. It needs net
# and the runtime on it, nothing else.
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs heartwheel-runtime) ||
  fail "pkg-config heartwheel-runtime"
only_layers "pkg-config --cflags --libs heartwheel-runtime" "runtime net timer common" "$flags"
python3 "$src/tests/quick_start/extract.py" "$src/README.md" "$work/quick_start.cpp" ||
  fail "extracting README.md's quick start"
# shellcheck disable=SC2086
"${CXX:-c++}" -std=c++20 "$work/quick_start.cpp" -o "$work/quick-start" $flags ||
  fail "compiling README.md's quick start with heartwheel-runtime's flags"
"$work/quick-start" 0 >"$work/quick-start.out" 2>&1 &
quick_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on 127.0.0.1:' "$work/quick-start.out" && break
  sleep 0.1
done
grep -q '^listening on 127.0.0.1:' "$work/quick-start.out" ||
  { kill -KILL $quick_pid; fail "the quick start did not listen: $(cat "$work/quick-start.out")"; }
kill -TERM $quick_pid
quick_status=0
wait $quick_pid || quick_status=$?
[[ $quick_status == 0 ]] && grep -q '^served 0 connections$' "$work/quick-start.out" ||
  fail "the quick start did not drain and exit 0 (status $quick_status): $(cat "$work/quick-start.out")"
echo "README.md's quick start: built with heartwheel-runtime's flags, listened, drained"

step "one layer: Meson dependency('heartwheel-net')"
PKG_CONFIG_PATH=$pc_dir meson setup "$work/net-meson" "$consumer/net" --wrap-mode=nofallback >/dev/null ||
  fail "meson setup of the net consumer"
meson compile -C "$work/net-meson" >/dev/null || fail "building the Meson net consumer"
run_consumer "$work/net-meson/consumer"

if [[ ${HEARTWHEEL_INSTALL_QUICK:-0} == 1 ]]; then
  echo
  echo "install test: every way of step 1 works (HEARTWHEEL_INSTALL_QUICK=1: shared and Meson-subproject steps skipped)"
  if [[ ${HEARTWHEEL_KEEP_INSTALL_CHECK:-0} != 1 ]]; then rm -rf "$work"; fi
  exit 0
fi

step "shared library: build, install, CMake find_package"
install_library shared -DBUILD_SHARED_LIBS=ON "$@"
prefix=$work/shared
cmake_consumer "$prefix" "$work/consumer-shared"
readelf -d "$work/consumer-shared/consumer" | grep -q 'NEEDED.*libheartwheel-net\.so' ||
  fail "the consumer does not link libheartwheel-net.so"
if ldd "$work/consumer-shared/consumer" | grep 'libheartwheel-.*not found'; then
  fail "a layer's shared library is not found at run time"
fi
for lib in $(ldd "$work/consumer-shared/consumer" | awk '/libheartwheel-/ {print $3}'); do
  [[ $lib == "$prefix"/* ]] || fail "the consumer loads $lib, not from $prefix"
  echo "consumer loads $lib"
done
run_consumer "$work/consumer-shared/consumer"

step "Meson: heartwheel as a subproject, then meson install"
msub=$work/meson-subproject
mkdir -p "$msub/subprojects"
cp "$consumer/meson.build" "$consumer/consumer.cpp" "$consumer/ask_server.h" "$msub/"
ln -s "$src" "$msub/subprojects/heartwheel"
meson setup "$msub/build" "$msub" --prefix "$work/meson" --buildtype debug \
  --wrap-mode=forcefallback >/dev/null || fail "meson setup with subprojects/heartwheel"
targets=$(meson introspect --targets "$msub/build") || fail "meson introspect"
for program in timer_tests heartwheel-echo heartwheel-load heartwheel_header_check; do
  [[ $targets != *"\"name\": \"$program\""* ]] || fail "$program is built although heartwheel is a subproject"
done
meson compile -C "$msub/build" >/dev/null || fail "building the consumer with the subproject"
run_consumer "$msub/build/consumer"
meson install -C "$msub/build" >/dev/null || fail "meson install"
prefix=$work/meson
[[ -f $prefix/include/heartwheel/net/server.h ]] || fail "meson install: headers missing"
pc=$(find "$prefix" -name heartwheel.pc)
[[ -n $pc ]] || fail "meson install: heartwheel.pc missing"
ls "$(dirname "$(dirname "$pc")")"/libheartwheel-net.a >/dev/null || fail "meson install: libheartwheel-net.a missing"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs heartwheel) ||
  fail "pkg-config heartwheel (Meson's file)"
echo "pkg-config --cflags --libs heartwheel (Meson's file): $flags"
# shellcheck disable=SC2086
"${CXX:-c++}" -std=c++20 "$consumer/consumer.cpp" -o "$work/consumer-meson-pkgconfig" $flags ||
  fail "compiling with the flags of Meson's pkg-config file"
run_consumer "$work/consumer-meson-pkgconfig"

echo
echo "install test: every way works (CMake find_package, pkg-config and Meson dependency()"
echo "against CMake's install; static and shared; Meson subproject and meson install)"
if [[ ${HEARTWHEEL_KEEP_INSTALL_CHECK:-0} != 1 ]]; then rm -rf "$work"; fi
