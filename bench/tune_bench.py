#!/usr/bin/env python3
"""tune_bench.py — predict-tune's search on standard test functions.

For Branin (2-d) and Hartmann-6 (6-d), runs predict-tune with the Bayesian
search (the default algorithm) and with RANDOM_SEARCH, 30 trials each, for
seeds 1..10, with build/predict-tune-testfn as the trial command; prints the
median regret (best objective found minus the known minimum) per function and
algorithm and the ratio random / Bayesian. Prints one JSON object as its last
line (bench.py reads it). Figures, never pass/fail.

    BUILD=build bench/tune_bench.py [--seeds 10] [--trials 30]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
TUNE = os.path.join(BUILD, "predict-tune")
TESTFN = os.path.join(BUILD, "predict-tune-testfn")

FUNCTIONS = {
    "branin": (0.397887, [("x1", -5, 10), ("x2", 0, 15)]),
    "hartmann6": (-3.32237, [("x%d" % i, 0, 1) for i in range(1, 7)]),
}


def config(params, algorithm, trials):
    hp = {"goal": "MINIMIZE", "maxTrials": trials, "maxParallelTrials": 1,
          "params": [{"parameterName": n, "type": "DOUBLE", "minValue": lo, "maxValue": hi,
                      "scaleType": "UNIT_LINEAR_SCALE"} for n, lo, hi in params]}
    if algorithm:
        hp["algorithm"] = algorithm
    return {"trainingInput": {"hyperparameters": hp}}


def study(tmp, fn, algorithm, seed, trials):
    fmin, params = FUNCTIONS[fn]
    d = os.path.join(tmp, "%s-%s-%d" % (fn, algorithm or "BAYESIAN", seed))
    cfg = d + ".json"
    with open(cfg, "w") as f:
        json.dump(config(params, algorithm, trials), f)
    r = subprocess.run([TUNE, "--config", cfg, "--job-dir", d, "--seed", str(seed), "--quiet",
                        "--", TESTFN, "--function", fn], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("predict-tune failed: " + r.stderr[-500:])
    with open(os.path.join(d, "study.json")) as f:
        best = json.load(f)["trainingOutput"]["trials"][0]["finalMetric"]["objectiveValue"]
    return best - fmin


def main():
    seeds = 10
    trials = 30
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a == "--seeds":
            seeds = int(args[i + 1])
        if a == "--trials":
            trials = int(args[i + 1])
    tmp = tempfile.mkdtemp(prefix="tune_bench.")
    out = {"trials": trials, "seeds": seeds}
    try:
        for fn in FUNCTIONS:
            row = {}
            for algo in ("", "RANDOM_SEARCH"):
                t0 = time.monotonic()
                regrets = [study(tmp, fn, algo, s, trials) for s in range(1, seeds + 1)]
                name = "bayesian" if not algo else "random"
                row[name] = {"median_regret": statistics.median(regrets),
                             "regrets": [round(x, 6) for x in regrets],
                             "seconds": round(time.monotonic() - t0, 1)}
            row["ratio_random_over_bayesian"] = (
                row["random"]["median_regret"] / max(row["bayesian"]["median_regret"], 1e-12))
            out[fn] = row
            print("%-10s median regret at %d trials over %d seeds: Bayesian %.4g  random %.4g  "
                  "ratio %.1fx  (%.1f s + %.1f s)" % (
                      fn, trials, seeds, row["bayesian"]["median_regret"],
                      row["random"]["median_regret"], row["ratio_random_over_bayesian"],
                      row["bayesian"]["seconds"], row["random"]["seconds"]))
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
