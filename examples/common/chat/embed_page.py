#!/usr/bin/env python3
"""Embeds chat.html into the binary: writes a C++ file defining
chat::kPage (a std::string_view over a raw string literal holding the page).
Usage: embed_page.py INPUT.html OUTPUT.cpp   (run by the CMake and Meson builds)."""
import sys

DELIMITER = "HWCHATPAGE"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: embed_page.py INPUT.html OUTPUT.cpp")
    with open(sys.argv[1], encoding="utf-8") as f:
        page = f.read()
    if ")" + DELIMITER + '"' in page:
        sys.exit("embed_page.py: the page contains the raw-string delimiter )%s\"" % DELIMITER)
    out = (
        "// Generated from examples/common/chat/chat.html by embed_page.py: do not edit.\n"
        "#include <string_view>\n\n"
        "namespace chat {\n"
        "extern const std::string_view kPage;\n"
        'const std::string_view kPage = R"%s(%s)%s";\n'
        "}  // namespace chat\n" % (DELIMITER, page, DELIMITER))
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(out)


if __name__ == "__main__":
    main()
