#!/usr/bin/env python3
"""Writes the C++ program of README.md's "Quick start" to a file, so the build
compiles it and a test runs it (tests/CMakeLists.txt, tests/meson.build;
tests/integration/echo_example_test.py). The program is the one ```cpp block
between the lines `<!-- quick-start:begin ...-->` and `<!-- quick-start:end -->`.

Usage: extract.py README.md OUTPUT.cpp   (exit 1 naming what is missing)."""
import re
import sys


def snippet(text):
    m = re.search(r"^<!-- quick-start:begin\b.*?-->\n```cpp\n(.*?)^```\n<!-- quick-start:end -->",
                  text, re.S | re.M)
    if not m:
        raise ValueError("no ```cpp block between <!-- quick-start:begin --> and "
                         "<!-- quick-start:end -->")
    return m.group(1)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: extract.py README.md OUTPUT.cpp")
    with open(sys.argv[1], encoding="utf-8") as f:
        try:
            code = snippet(f.read())
        except ValueError as e:
            sys.exit("extract.py: %s: %s" % (sys.argv[1], e))
    text = "// Generated from README.md (Quick start) by tests/quick_start/extract.py.\n" + code
    # Rewrite only on change: the program is not rebuilt for edits elsewhere.
    try:
        with open(sys.argv[2], encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
