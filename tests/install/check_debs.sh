#!/bin/bash
# The Debian packages (issue 39; cmake/Debian.cmake): `cpack -G DEB` on this
# build makes heartwheel and libheartwheel-dev; their contents and control
# fields are checked with dpkg-deb, and lintian's verdict may hold only the
# tags CONTRIBUTING.md ("Packages") explains.
#
# usage: check_debs.sh BUILD_DIR OUT_DIR
# tools/run-tests --all runs it (ctest label install); the default run sets
# HEARTWHEEL_INSTALL_QUICK=1, and then it exits 77 (skipped): packaging
# strips and compresses every binary again, which the 15 minutes do not fit.
set -euo pipefail
build=$1 out=$2
if [ "${HEARTWHEEL_INSTALL_QUICK:-0}" = 1 ]; then
  echo "skipped: the packages are tools/run-tests --all's (HEARTWHEEL_INSTALL_QUICK=1)"
  exit 77
fi
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "skipped: no $tool"; exit 77; }
done
rm -rf "$out" && mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
fail() { echo "check_debs: $*" >&2; exit 1; }
prog=$(ls "$out"/heartwheel_*.deb) dev=$(ls "$out"/libheartwheel-dev_*.deb)
contents=$(dpkg-deb -c "$prog")
for p in chat push echo; do
  for f in ./usr/bin/heartwheel-$p ./lib/systemd/system/heartwheel-$p.service \
           ./usr/share/man/man1/heartwheel-$p.1.gz ./etc/heartwheel/$p.toml; do
    grep -q " $f\$" <<<"$contents" || fail "heartwheel lacks $f"
  done
  dpkg-deb -I "$prog" conffiles | grep -qx "/etc/heartwheel/$p.toml" ||
    fail "/etc/heartwheel/$p.toml is not a conffile"
done
for f in ./usr/share/doc/heartwheel/copyright ./usr/share/doc/heartwheel/changelog.Debian.gz; do
  grep -q " $f\$" <<<"$contents" || fail "heartwheel lacks $f"
done
dpkg-deb -I "$prog" postinst | grep -q deb-systemd-helper || fail "no postinst for the units"
depends=$(dpkg-deb -f "$prog" Depends)
for lib in libuv1 libssl3 libhiredis libsodium23 zlib1g; do
  grep -q "$lib" <<<"$depends" || fail "heartwheel's Depends (dpkg-shlibdeps) lacks $lib: $depends"
done
devc=$(dpkg-deb -c "$dev")
for re in '/include/heartwheel/net/server\.h$' '/libheartwheel-net\.(a|so)$' \
          '/cmake/heartwheel/heartwheelConfig\.cmake$' '/pkgconfig/heartwheel-net\.pc$'; do
  grep -Eq "$re" <<<"$devc" || fail "libheartwheel-dev lacks $re"
done
if grep -q "/usr/bin/" <<<"$devc"; then fail "libheartwheel-dev ships programs"; fi
echo "ok: $(basename "$prog") ($(grep -c . <<<"$contents") entries), $(basename "$dev") ($(grep -c . <<<"$devc") entries)"
if command -v lintian >/dev/null; then
  # Explained in CONTRIBUTING.md ("Packages"): no Debian bug to close; the
  # multiarch pkg-config directory needs -DCMAKE_INSTALL_PREFIX=/usr.
  allowed='initial-upload-closes-no-bugs|pkg-config-unavailable-for-cross-compilation'
  tags=$(lintian --tag-display-limit 0 "$prog" "$dev" 2>/dev/null | grep -E '^[EWI]: ' || true)
  unexpected=$(grep -Ev ": ($allowed)( |$)" <<<"$tags" || true)
  [ -z "$unexpected" ] || fail "lintian: $unexpected"
  echo "lintian: only the explained tags ($(grep -c . <<<"$tags" || true) lines)"
fi
