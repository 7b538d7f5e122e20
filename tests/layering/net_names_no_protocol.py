#!/usr/bin/env python3
"""net knows no protocol above it: with comments stripped, no identifier in
net's public headers (lib/include/heartwheel/net, detail/ included) is or
contains body, keep_alive / keepalive, http or websocket, in any case.
Comments may still name them as examples. Every word outside comments counts
(string literals and #include paths too: net includes no protocol's header).

Usage: net_names_no_protocol.py [REPO_ROOT]   (default: two levels up)
Exit status 0 when clean, 1 with one line per offending identifier."""
import pathlib
import re
import sys

BANNED = ("body", "keep_alive", "keepalive", "http", "websocket")


def strip_comments(text):
    """The text with // and /* */ comments blanked (string and character
    literals kept, so a "//" inside one is not a comment)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            end = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, end))  # keep line numbers
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def offenders(path):
    code = strip_comments(path.read_text())
    for lineno, line in enumerate(code.split("\n"), 1):
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", line):
            low = word.lower()
            if any(b in low for b in BANNED):
                yield lineno, word


def self_test():
    """The check finds what it must and nothing in comments (a check that
    cannot fail is worse than none)."""
    import tempfile
    sample = ('// an http example, keep_alive in a comment\n'
              '/* websocket\n body */ int port;\n'
              'const char* s = "a // b"; int keepAliveMs; void send(int Body_len);\n'
              '#include <heartwheel/http/session.h>\n')
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "sample.h"
        p.write_text(sample)
        found = list(offenders(p))
    expected = [(4, "keepAliveMs"), (4, "Body_len"), (5, "http")]
    if found != expected:
        print(f"self-test failed: found {found}, expected {expected}", file=sys.stderr)
        return False
    return True


def main():
    if not self_test():
        return 1
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
    headers = sorted((root / "lib/include/heartwheel/net").rglob("*.h"))
    if not headers:
        print(f"no headers under {root}/lib/include/heartwheel/net", file=sys.stderr)
        return 1
    bad = 0
    for h in headers:
        for lineno, word in offenders(h):
            print(f"{h.relative_to(root)}:{lineno}: identifier '{word}' names a protocol above net")
            bad += 1
    print(f"{len(headers)} headers checked, {bad} offending identifiers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
