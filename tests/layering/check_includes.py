#!/usr/bin/env python3
"""The layering at include level: every #include of a layer's sources
(lib/src/LAYER) and public headers (lib/include/heartwheel/LAYER) names only
that layer or a layer below it.

The link-time check (check_layers.cmake) cannot see an edge that is only a
header: a layer that includes an inline struct or template of a layer above
it links fine and still drags that layer's headers (and their dependencies)
into every consumer. This one reads the same declared table: the build
passes each layer and the layers it links, as CMake's targets
(tests/CMakeLists.txt, the specs it also gives check_layers.cmake) or Meson's
heartwheel_layers (tests/meson.build) declare them; the layers below are the
transitive closure.

An include counts when it is a preprocessor line outside comments (a
conditional one too: the check is conservative) and names
<heartwheel/X/...> or "heartwheel/X/..." or a quoted relative path that
leaves the layer's folder (resolved against the including file).

Before the tree, the script checks itself: a copy of the tree with planted
upward includes (an angle include in a source, a relative one in a private
header, one in a public header) must give exactly those violations, and an
include inside a comment none. A check that cannot fail is worse than none.

Usage: check_includes.py REPO_ROOT LAYER:BELOW[,BELOW...][:...] ...
  (a spec as tests/CMakeLists.txt writes them for check_layers.cmake:
  "net:timer,common:-luv", the third field ignored; "-" for none)
Exit status 0 when clean, 1 with one line per offending include."""
import pathlib
import re
import shutil
import sys
import tempfile

from net_names_no_protocol import strip_comments  # comments blanked, line numbers kept

SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".c", ".inc"}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)


def parse_specs(specs):
    """{layer: set of layers it links directly} from "layer:a,b[:external]"."""
    table = {}
    for spec in specs:
        parts = spec.split(":")
        if len(parts) < 2 or not parts[0]:
            raise ValueError(f"bad layer spec '{spec}' (want LAYER:BELOW,BELOW...)")
        below = {b for b in parts[1].split(",") if b and b != "-"}
        table[parts[0]] = below
    for layer, below in table.items():
        unknown = below - table.keys()
        if unknown:
            raise ValueError(f"layer {layer} links {sorted(unknown)}, which are no layers here")
    return table


def closure(table):
    """{layer: every layer below it, transitively}."""
    result = {}
    for layer in table:
        seen, todo = set(), list(table[layer])
        while todo:
            b = todo.pop()
            if b not in seen:
                seen.add(b)
                todo.extend(table[b])
        result[layer] = seen
    return result


def layer_of(path, root, layers):
    """The layer a file under lib/ belongs to, or None."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    parts = rel.parts
    if len(parts) >= 3 and parts[:2] == ("lib", "src") and parts[2] in layers:
        return parts[2]
    if len(parts) >= 4 and parts[:3] == ("lib", "include", "heartwheel") and parts[3] in layers:
        return parts[3]
    return None


def included_layer(kind, name, including, root, layers):
    """The layer an include names, or None (the layer's own, or not ours)."""
    m = re.match(r"(?:\./)?heartwheel/([A-Za-z0-9_]+)/", name)
    if m and m.group(1) in layers:
        return m.group(1)
    if kind == '"':
        target = including.parent / name
        if target.exists() or ".." in pathlib.PurePath(name).parts:
            return layer_of(target, root, layers)
    return None


def violations(root, table):
    """(file, line, layer, included layer, include text) for every include of
    a layer that is neither the file's own nor below it."""
    layers = set(table)
    below = closure(table)
    found = []
    for layer in sorted(layers):
        folders = [root / "lib/src" / layer, root / "lib/include/heartwheel" / layer]
        for folder in folders:
            if not folder.is_dir():
                continue
            for path in sorted(folder.rglob("*")):
                if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                    continue
                code = strip_comments(path.read_text(errors="replace"))
                for m in INCLUDE.finditer(code):
                    target = included_layer(m.group(1), m.group(2), path, root, layers)
                    if target is None or target == layer or target in below[layer]:
                        continue
                    line = code.count("\n", 0, m.start()) + 1
                    found.append((path.relative_to(root), line, layer, target, m.group(2)))
    return found


def self_test(root, table, baseline):
    """Plants upward includes in a copy of the tree; the check must find
    exactly them besides what it found in the tree (`baseline`)."""
    layers = sorted(table, key=lambda layer: len(closure(table)[layer]))
    bottom, top = layers[0], layers[-1]
    if not closure(table)[top] or bottom == top:
        print("self-test: the table needs a layer above another", file=sys.stderr)
        return False
    top_header = next((root / "lib/include/heartwheel" / top).glob("*.h"), None)
    if top_header is None:
        print(f"self-test: no public header of layer {top}", file=sys.stderr)
        return False
    top_include = f"heartwheel/{top}/{top_header.name}"
    with tempfile.TemporaryDirectory() as d:
        copy = pathlib.Path(d)
        shutil.copytree(root / "lib", copy / "lib")
        planted = []

        def plant(rel, text):
            path = copy / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            old = path.read_text() if path.exists() else ""
            lines = old.count("\n")
            path.write_text(old + text)
            return path, lines

        # An angle include of the top layer in a source of the bottom layer.
        src = next((root / "lib/src" / bottom).glob("*.cpp"))
        p, n = plant(src.relative_to(root), f"#include <{top_include}>\n")
        planted.append((p.relative_to(copy), n + 1, bottom, top))
        # A relative include that leaves the folder, in a private header.
        p, n = plant(f"lib/src/{bottom}/planted_detail.h",
                     f'#pragma once\n#include "../{top}/{next((root / "lib/src" / top).glob("*.cpp")).name}"\n')
        planted.append((p.relative_to(copy), n + 2, bottom, top))
        # One in a public header, and one in comments that must not count.
        hdr = next((root / "lib/include/heartwheel" / bottom).glob("*.h"))
        p, n = plant(hdr.relative_to(root),
                     f"// #include <{top_include}>\n/*\n#include <{top_include}>\n*/\n"
                     f"  #  include \"{top_include}\"\n")
        planted.append((p.relative_to(copy), n + 5, bottom, top))
        found = [(f, line, layer, target) for f, line, layer, target, _ in violations(copy, table)]
    expected = planted + [(f, line, layer, target) for f, line, layer, target, _ in baseline]
    if sorted(found) != sorted(expected):
        print(f"self-test failed: planted {planted}, found {found}", file=sys.stderr)
        return False
    print(f"self-test: {len(planted)} planted upward includes ({bottom} -> {top}) found, "
          "the commented one ignored")
    return True


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    try:
        table = parse_specs(argv[2:])
    except ValueError as e:
        print(f"check_includes: {e}", file=sys.stderr)
        return 2
    found = violations(root, table)
    if not self_test(root, table, found):
        return 1
    below = closure(table)
    for f, line, layer, target, name in found:
        allowed = ", ".join(sorted(below[layer])) or "none"
        print(f"{f}:{line}: layer {layer} includes <{name}> of layer {target}, "
              f"which is not below it (below {layer}: {allowed})")
    files = sum(1 for layer in table for folder in ("lib/src/" + layer, "lib/include/heartwheel/" + layer)
                for p in (root / folder).rglob("*") if p.suffix in SOURCE_SUFFIXES)
    print(f"{len(table)} layers, {files} files checked, {len(found)} upward includes")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
