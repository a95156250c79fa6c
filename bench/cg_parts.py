#!/usr/bin/env python3
"""cg_parts.py — instructions per request by part, from two callgrind runs of
the same loop with different counts (docs/performance.md, "One census
instance in process"):

    python3 bench/cg_parts.py cg.200 cg.1200 1000 [--self] [--all]

subtracts each function's count in the first run from the second's (inclusive
counts unless --self: callgrind_annotate --inclusive) and divides by the
number of extra requests, so start-up and model loading cancel out. Prints
the runtime's parts (parse, transform, forward and its pieces, head, render,
the whole handle call); --all prints every function above 20 instead."""
import re
import subprocess
import sys

PARTS = [("parse", "rt_json_parse_predict"), ("transform", "rt_transform"),
         ("forward", "rt_forward"), ("  dense layers", "rt_dense_rows"),
         ("  linear part", "forward_linear"), ("  activations", "rt_activate"),
         ("head", "rt_head_compute_ws"), ("render", "rt_json_render_predict"),
         ("whole rt_json_handle", "rt_json_handle"), ("whole v2 handle", "rt_v2_handle")]


def counts(path, inclusive):
    out = subprocess.run(["callgrind_annotate", "--inclusive=" + ("yes" if inclusive else "no"),
                          "--threshold=100", "--auto=no", path],
                         capture_output=True, text=True, check=True,
                         cwd="/").stdout  # not a source tree: one line per function
    per = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(\S.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r"\s*\[.*\]$", "", m.group(2)).split(":")[-1]
        per[name] = per.get(name, 0) + int(m.group(1).replace(",", ""))
    return per


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 3:
        sys.exit(__doc__)
    inclusive = "--self" not in sys.argv
    a, b, n = counts(args[0], inclusive), counts(args[1], inclusive), float(args[2])
    diff = {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}
    if "--all" in sys.argv:
        for k, v in sorted(diff.items(), key=lambda kv: -kv[1]):
            if v >= 20:
                print("%10.0f  %s" % (v, k))
        return
    for label, fn in PARTS:
        if fn in diff and diff[fn] > 0:
            print("%-22s %8.0f" % (label, diff[fn]))


main()
