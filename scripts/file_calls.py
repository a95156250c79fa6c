#!/usr/bin/env python3
"""Who calls whom between the files of each module, from the object files.

    scripts/file_calls.py [BUILD] [--edges]

For each module (runtime, exporter, trainer, server, tuner, pmodel) reads
BUILD/obj/<module>/**/*.o (a module's folders too: server/http, ...) with
nm: an edge a -> b when a uses a symbol b defines. Prints the groups of
files that reach each other (strongly connected: a pair that calls each
other, or a longer cycle) with the
symbols of each edge inside the group; with --edges, every edge. A
function pointer in a table counts as an edge like a call (docs/design.md,
"Who calls whom inside a module"). Exit status 0 whatever it finds.
"""
import glob
import os
import subprocess
import sys

MODULES = ["runtime", "exporter", "trainer", "server", "tuner", "pmodel"]


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def groups(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main():
    args = [a for a in sys.argv[1:] if a != "--edges"]
    build = args[0] if args else "build"
    sys.setrecursionlimit(10000)
    for mod in MODULES:
        defs, uses = {}, {}
        # a module's folders too (server/http, server/sec, ...: one module)
        for obj in sorted(glob.glob(os.path.join(build, "obj", mod, "**", "*.o"), recursive=True)):
            name = os.path.basename(obj)[:-2]
            defs[name], uses[name] = symbols(obj)
        edges = {a: {b for b in defs if b != a and uses[a] & defs[b]} for a in defs}
        if "--edges" in sys.argv:
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    print(f"{mod}: {a} -> {b}")
        for comp in groups(edges):
            print(f"{mod}: group {' '.join(comp)}")
            for a in comp:
                for b in sorted(edges[a] & set(comp)):
                    print(f"    {a} -> {b}: {' '.join(sorted(uses[a] & defs[b]))}")


if __name__ == "__main__":
    main()
