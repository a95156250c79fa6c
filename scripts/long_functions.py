#!/usr/bin/env python3
"""Lists C functions longer than a limit.

    scripts/long_functions.py [LIMIT] [FILE...]

LIMIT defaults to 150 (docs/design.md: no function over 150 lines outside
tests and benches); without files, every .c and .h file git tracks outside
tests/ and bench/. A function's length runs from the line of its name to
its closing brace. Comments and string literals are blanked first, then
braces are matched at file level: a '{' at depth 0 after a ')' opens a
function body. Prints "LINES FILE:FIRST-LAST NAME", longest first; exit
status 0 whatever it finds.
"""
import re
import subprocess
import sys


def blank(src):
    """src with comments and the insides of literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src[i] in "\"'":
            q, j = src[i], i + 1
            while j < n and src[j] != q:
                j += 2 if src[j] == "\\" else 1
            out.append(q + re.sub(r"[^\n]", " ", src[i + 1:j]) + q)
            i = j + 1
            continue
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", src[i:j]))
        i = j
    return "".join(out)


def functions(path):
    s = blank(open(path, encoding="utf-8", errors="replace").read())
    depth, last, name, start, found = 0, 0, None, 0, []
    for m in re.finditer(r"[{};]", s):
        c = m.group()
        if c == "{":
            if depth == 0:
                head = s[last:m.start()]
                hm = re.search(r"([A-Za-z_]\w*)\s*\((?:[^()]|\([^()]*\))*\)\s*$", head)
                name = hm.group(1) if hm and not re.search(r"=\s*$", head) else None
                if name:
                    start = s.count("\n", 0, last + hm.start(1)) + 1
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if name:
                    end = s.count("\n", 0, m.start()) + 1
                    found.append((end - start + 1, start, end, name))
                name, last = None, m.end()
        elif depth == 0:
            last = m.end()
    return found


def main():
    args = sys.argv[1:]
    limit = int(args.pop(0)) if args and args[0].isdigit() else 150
    if not args:
        files = subprocess.run(["git", "ls-files", "*.c", "*.h"], capture_output=True,
                               text=True, check=True).stdout.split()
        args = [f for f in files if not f.startswith(("tests/", "bench/"))]
    rows = [(n, f, a, b, name) for f in args for n, a, b, name in functions(f) if n > limit]
    for n, f, a, b, name in sorted(rows, reverse=True):
        print(f"{n:5d} {f}:{a}-{b} {name}")


if __name__ == "__main__":
    main()
