#!/usr/bin/env python3
"""Prints the public headers under DIR (lib/include), one per line, relative to
DIR and sorted: heartwheel/x.h. For tests/headers/meson.build."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
for header in sorted(root.glob("heartwheel/**/*.h")):
    print(header.relative_to(root).as_posix())
