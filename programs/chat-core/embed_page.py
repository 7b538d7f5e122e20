#!/usr/bin/env python3
"""Embeds a file served by heartwheel-chat into the binary: writes a C++
file defining chat::<SYMBOL> (a std::string_view over a raw string literal
holding the file). One source of truth: the page is chat.html, the client
library is clients/js/heartwheel.js, both read from the source tree.

For the page (--csp-hashes), it also defines chat::kPageScriptHashes: the
CSP sources ('sha256-...', space separated) of the page's inline scripts, so
its Content-Security-Policy allows exactly those and no other inline script
(no 'unsafe-inline').

Usage: embed_page.py INPUT OUTPUT.cpp [--symbol NAME] [--csp-hashes]
  (run by the CMake and Meson builds; NAME defaults to kPage)."""
import argparse
import base64
import hashlib
import os
import re

DELIMITER = "HWCHATPAGE"
# An inline script: the text between <script ...> (no src) and </script>,
# hashed exactly as the browser does (CSP Level 3, UTF-8 bytes).
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S)


def script_hashes(page):
    return " ".join("'sha256-%s'" % base64.b64encode(
        hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")
        for body in INLINE_SCRIPT.findall(page))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--symbol", default="kPage")
    parser.add_argument("--csp-hashes", action="store_true")
    args = parser.parse_args()
    with open(args.input, encoding="utf-8") as f:
        text = f.read()
    if ")" + DELIMITER + '"' in text:
        parser.exit(1, "embed_page.py: %s contains the raw-string delimiter )%s\"\n" %
                    (args.input, DELIMITER))
    out = ("// Generated from %s by embed_page.py: do not edit.\n"
           "#include <string_view>\n\n"
           "namespace chat {\n"
           "extern const std::string_view %s;\n"
           'const std::string_view %s = R"%s(%s)%s";\n' %
           (os.path.basename(args.input), args.symbol, args.symbol, DELIMITER, text, DELIMITER))
    if args.csp_hashes:
        out += ("extern const std::string_view kPageScriptHashes;\n"
                'const std::string_view kPageScriptHashes = "%s";\n' % script_hashes(text))
    out += "}  // namespace chat\n"
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(out)


if __name__ == "__main__":
    main()
