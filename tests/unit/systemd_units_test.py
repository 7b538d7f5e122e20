"""The systemd units of packaging/systemd (issue 39): `systemd-analyze verify`
says nothing about them, and each keeps the hardening and the lines the
restart and a million connections need.

usage: systemd_units_test.py SOURCE_DIR BIN_DIR
Exits 77 (skipped) without systemd-analyze (Debian's systemd package)."""
import os
import shutil
import subprocess
import sys
import tempfile

UNITS = ["heartwheel-chat", "heartwheel-push", "heartwheel-echo"]
REQUIRED = [
    "Type=notify", "NotifyAccess=all", "ExecReload=/bin/kill -USR2 $MAINPID",
    "Restart=on-failure", "LimitNOFILE=1048576", "DynamicUser=yes", "NoNewPrivileges=yes",
    "CapabilityBoundingSet=\n", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
]


def main():
    source, bindir = sys.argv[1], sys.argv[2]
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("skipped: no systemd-analyze (apt-get install systemd)")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        for unit in UNITS:
            with open(os.path.join(source, "packaging", "systemd", unit + ".service")) as f:
                text = f.read()
            for line in REQUIRED:
                assert line in text, (unit, line)
            # verify checks that ExecStart's program exists: the one just built.
            binary = os.path.join(bindir, unit)
            assert os.path.exists(binary), binary
            with open(os.path.join(d, unit + ".service"), "w") as f:
                f.write(text.replace("/usr/bin/" + unit, binary))
        r = subprocess.run([analyze, "verify", "--man=no"] +
                           [os.path.join(d, u + ".service") for u in UNITS],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stderr.strip() == "" and r.stdout.strip() == "", (
            r.returncode, r.stdout, r.stderr)
    print("ok: %d units verified" % len(UNITS))


if __name__ == "__main__":
    main()
