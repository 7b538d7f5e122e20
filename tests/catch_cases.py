#!/usr/bin/env python3
"""Lists the Catch2 test cases of C++ test sources, for Meson's per-case tests.

CMake's catch_discover_tests asks the built binary (--list-test-names-only);
Meson cannot run anything it has not built yet at setup time, so tests/meson.build
reads the names from the sources with this script instead.

  catch_cases.py list SOURCE...
      One line per test case: "<name>\t<test spec>", where <test spec> is the
      name escaped for Catch2's command line (\\ , [ ] and a leading ~ or ").
      Exits 1 with the file and line when a case cannot be read statically
      (a name built by a macro, an unsupported registration macro, ...).

  catch_cases.py check BINARY SOURCE...
      Compares the names found in the sources with what BINARY itself lists;
      exits 1 and prints the difference when they disagree, so a test case
      the parser missed fails loudly instead of silently not running.

Supported: TEST_CASE("name", ...), TEST_CASE_METHOD(Fixture, "name", ...),
SCENARIO("name", ...), TEMPLATE_TEST_CASE("name", "tags", Type, ...) (one
case per type, named "name - Type" as Catch2 names them); adjacent string
literals are joined; cases tagged
hidden ([.], [.tag], [!hide]) are skipped, as Catch2 does not run them by default.
"""
import re
import subprocess
import sys

MACRO = re.compile(r"\b(TEST_CASE_METHOD|TEST_CASE|SCENARIO|TEMPLATE_\w*TEST_CASE\w*|"
                   r"METHOD_AS_TEST_CASE|REGISTER_TEST_CASE)\s*\(")
ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "?": "?", "0": "\0"}


class ParseError(Exception):
    pass


def strip_comments(text):
    """Blanks out // and /* */ comments (keeping newlines), leaving literals alone."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or (c == "'" and not (i and text[i - 1].isalnum())):  # not 1'000
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read_strings(text, i):
    """Reads adjacent string literals from text[i:]; returns (value, end) or (None, i)."""
    value = None
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text) or text[i] != '"':
            return value, i
        i += 1
        part = []
        while i < len(text) and text[i] != '"':
            if text[i] == "\\":
                nxt = text[i + 1]
                if nxt not in ESCAPES:
                    raise ParseError(f"escape \\{nxt} in a test name")
                part.append(ESCAPES[nxt])
                i += 2
            else:
                part.append(text[i])
                i += 1
        value = (value or "") + "".join(part)
        i += 1


def cases_in(path):
    text = strip_comments(open(path, encoding="utf-8").read())
    found = []
    for m in MACRO.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        where = f"{path}:{line}"
        macro = m.group(1)
        if macro not in ("TEST_CASE", "TEST_CASE_METHOD", "SCENARIO", "TEMPLATE_TEST_CASE"):
            raise ParseError(f"{where}: {macro} is not supported by tests/catch_cases.py")
        i = m.end()
        if macro == "TEST_CASE_METHOD":
            comma = text.find(",", i)
            if comma < 0:
                raise ParseError(f"{where}: TEST_CASE_METHOD without a name")
            i = comma + 1
        types = [None]
        try:
            name, i = read_strings(text, i)
            tags = ""
            rest = text[i:].lstrip()
            if rest.startswith(","):
                tags, i = read_strings(text, text.index(",", i) + 1)
                tags = tags or ""
            if macro == "TEMPLATE_TEST_CASE":
                # The types: plain names up to the closing parenthesis.
                close = text.find(")", i)
                types = [t.strip() for t in text[i:close].split(",") if t.strip()]
                if close < 0 or not types or \
                        any(not re.fullmatch(r"[A-Za-z_][\w:]*", t) for t in types):
                    raise ParseError("TEMPLATE_TEST_CASE types must be plain names")
        except ParseError as e:
            raise ParseError(f"{where}: {e}") from None
        if name is None:
            raise ParseError(f"{where}: {macro} needs a string literal name to be listed")
        if macro == "SCENARIO":
            name = "Scenario: " + name
        if "[." in tags or "[!hide]" in tags:
            continue
        if ";" in name:
            raise ParseError(f"{where}: test name {name!r} has a ';', where CMake's "
                             "catch_discover_tests would split it into two tests that run "
                             "nothing: use ',' or ':'")
        if "\t" in name or "\n" in name or name != name.strip() or name.startswith("*") or \
                name.endswith("*"):
            raise ParseError(f"{where}: test name {name!r} cannot be passed to Catch2 as a spec")
        found += [name if t is None else f"{name} - {t}" for t in types]
    return found


def spec_of(name):
    spec = "".join("\\" + c if c in "\\,[]" else c for c in name)
    return "\\" + spec if spec[0] in '~"' else spec


def all_cases(sources):
    names = []
    for src in sources:
        names += cases_in(src)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ParseError("test cases with the same name: " + ", ".join(dupes))
    return names


def main(argv):
    if len(argv) < 3 or argv[1] not in ("list", "check"):
        sys.stderr.write(__doc__)
        return 2
    try:
        if argv[1] == "list":
            for name in all_cases(argv[2:]):
                print(f"{name}\t{spec_of(name)}")
            return 0
        binary, sources = argv[2], argv[3:]
        parsed = set(all_cases(sources))
        out = subprocess.run([binary, "--list-test-names-only"], capture_output=True, text=True,
                             check=False).stdout
        listed = {l[1:-1] if l.startswith('"#') else l for l in out.splitlines() if l}
    except ParseError as e:
        print(f"catch_cases.py: {e}", file=sys.stderr)
        return 1
    missing, extra = sorted(listed - parsed), sorted(parsed - listed)
    for n in missing:
        print(f"{binary} has a test case the sources do not show (Meson would not run it): {n}")
    for n in extra:
        print(f"the sources show a test case {binary} does not list: {n}")
    if not missing and not extra:
        print(f"{len(parsed)} test cases, each registered as its own Meson test")
    return 1 if missing or extra else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
