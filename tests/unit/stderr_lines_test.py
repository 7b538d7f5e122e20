"""No stray stderr line in the library or the servers: every warning and
message goes through the process log (heartwheel/common/log.h), so
--log-format json gives a log pipeline nothing it cannot parse (issue 39).

Scans lib/, programs/ and tools/echo-server/ for writes to stderr that bypass
the log. The exceptions are listed with their reason: they are not logs.

usage: stderr_lines_test.py SOURCE_DIR"""
import os
import re
import sys

SCANNED = ["lib", "programs", os.path.join("tools", "echo-server")]
PATTERN = re.compile(r"fprintf\s*\(\s*stderr|std::cerr|\bperror\s*\(|"
                     r"fputs\s*\([^;]*,\s*stderr\s*\)|fwrite\s*\([^;]*,\s*stderr\s*\)")
ALLOWED = {
    # "NAME: error: WHAT (see NAME --help)", exit 2, and runtime failures with
    # exit 1: the command line's contract, which scripts and tests read.
    os.path.join("programs", "cli", "cli_program.cpp"): 2,
    # --stats-every: the program's output (a JSON line of counters), not a log.
    os.path.join("tools", "echo-server", "main.cpp"): 1,
}


def offending(root):
    found = {}
    for top in SCANNED:
        for base, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".cpp", ".h", ".c")):
                    continue
                path = os.path.join(base, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                # Comments say "stderr" freely; only code counts.
                code = re.sub(r"//[^\n]*", "", text)
                hits = [m.group(0) for m in PATTERN.finditer(code)]
                if hits:
                    found[rel] = hits
    return found


def main():
    root = sys.argv[1]
    found = offending(root)
    bad = []
    for rel, hits in sorted(found.items()):
        if len(hits) > ALLOWED.get(rel, 0):
            bad.append("%s: %d write(s) to stderr outside the log (allowed: %d): %s"
                       % (rel, len(hits), ALLOWED.get(rel, 0), ", ".join(hits)))
    for rel in ALLOWED:
        if rel not in found:
            bad.append("%s: listed as an exception but writes nothing to stderr: "
                       "drop it from ALLOWED" % rel)
    if bad:
        print("\n".join(bad))
        print("write through heartwheel::log (heartwheel/common/log.h) instead")
        sys.exit(1)
    print("ok: no stray stderr writes in %s" % ", ".join(SCANNED))


if __name__ == "__main__":
    main()
