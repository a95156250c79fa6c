#!/usr/bin/env python3
"""Who calls whom between the files of each module, from the object files.

    scripts/file_calls.py [BUILD] [--edges | --names [MODULE ...]]

For each module (runtime, exporter, trainer, server, tuner, pmodel) reads
BUILD/obj/<module>/**/*.o (a module's folders too: server/http, ...) with
nm: an edge a -> b when a uses a symbol b defines. Prints the groups of
files that reach each other (strongly connected: a pair that calls each
other, or a longer cycle) with the
symbols of each edge inside the group; with --edges, every edge. A
function pointer in a table counts as an edge like a call (docs/design.md,
"Who calls whom inside a module"). A module's files may sit in subfolders
(runtime/<layer>/, server/<room>/): they are read recursively.

For the runtime it also checks the layers (docs/design.md, "The runtime's
layers"): each file's layer is its first folder under runtime/, and an edge
from a file to one of a higher layer prints a line
"runtime: upward call a (core) -> b (model): symbols".
With --names, lists instead the runtime's exported functions (nm's "T") not
named for their file, as "file symbol" (docs/design.md, "A function's name"):
a function of rt_<stem>.c is rt_<stem>_*, rt_<first word of stem>_* or
rt_<first word>, and a file named in the plural also holds its singular
(rt_settings.c: rt_setting_*, one row; rt_nodes.c: rt_node_*).
--names MODULE ... checks those modules instead (runtime, server, trainer,
exporter, tuner, pmodel; their prefixes rt_, srv_, trn_, exp_, tun_, pm_;
main_*.o aside); test_build requires the runtime's list to be empty.
Exit status 0 whatever it finds.
"""
import glob
import os
import subprocess
import sys

MODULES = ["runtime", "exporter", "trainer", "server", "tuner", "pmodel"]
# The runtime's layers, bottom first (the Makefile's RT_LAYERS).
RT_LAYERS = ["core", "data", "stats", "model", "explain", "serve"]


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


def objects(build, mod):
    """BUILD/obj/<mod>/**/*.o, but for an object whose source is gone (a file
    moved or deleted since that build dir last built: its object stays)."""
    top = os.path.join(build, "obj", mod)
    found = sorted(glob.glob(os.path.join(top, "**", "*.o"), recursive=True))
    if not os.path.isdir(mod):  # not run from the source tree: take them all
        return found
    return [o for o in found
            if os.path.exists(os.path.join(mod, os.path.relpath(o, top))[:-2] + ".c")]


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


PREFIXES = {"runtime": "rt_", "exporter": "exp_", "trainer": "trn_", "server": "srv_",
            "tuner": "tun_", "pmodel": "pm_"}


def fits(name, prefix, stem):
    """Whether function name is named for the file prefix+stem (the rule above)."""
    first = stem.split("_")[0]
    stems = [stem, first]
    if stem.endswith("s"):
        stems.append(stem[:-1])
    if first.endswith("s"):
        stems.append(first[:-1])
    return name.startswith(prefix + stem) or any(
        name == prefix + s or name.startswith(prefix + s + "_") for s in stems)


def misnamed(build, mod="runtime"):
    """Exported functions of module mod not named for their file."""
    prefix = PREFIXES[mod]
    for obj in objects(build, mod):
        base = os.path.basename(obj)[:-2]
        if base.startswith("main_") or not base.startswith(prefix):
            continue
        stem = base[len(prefix):]
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "T" and not fits(parts[2], prefix, stem):
                print(f"{base} {parts[2]}" if mod == "runtime" else f"{mod}: {base} {parts[2]}")


def main():
    args = [a for a in sys.argv[1:] if a not in ("--edges", "--names")]
    mods = [a for a in args if a in PREFIXES]
    args = [a for a in args if a not in PREFIXES]
    build = args[0] if args else "build"
    if "--names" in sys.argv:
        for mod in mods or ["runtime"]:
            misnamed(build, mod)
        return
    sys.setrecursionlimit(10000)
    for mod in MODULES:
        defs, uses = {}, {}
        layer = {}
        top = os.path.join(build, "obj", mod)
        for obj in objects(build, mod):
            name = os.path.basename(obj)[:-2]
            defs[name], uses[name] = symbols(obj)
            layer[name] = os.path.relpath(obj, top).split(os.sep)[0]
        edges = {a: {b for b in defs if b != a and uses[a] & defs[b]} for a in defs}
        if "--edges" in sys.argv:
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    print(f"{mod}: {a} -> {b}")
        if mod == "runtime":
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    la, lb = layer[a], layer[b]
                    if la in RT_LAYERS and lb in RT_LAYERS and \
                            RT_LAYERS.index(lb) > RT_LAYERS.index(la):
                        print(f"runtime: upward call {a} ({la}) -> {b} ({lb}): "
                              f"{' '.join(sorted(uses[a] & defs[b]))}")
        for comp in groups(edges):
            print(f"{mod}: group {' '.join(comp)}")
            for a in comp:
                for b in sorted(edges[a] & set(comp)):
                    print(f"    {a} -> {b}: {' '.join(sorted(uses[a] & defs[b]))}")


if __name__ == "__main__":
    main()
