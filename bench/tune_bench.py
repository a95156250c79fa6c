#!/usr/bin/env python3
"""tune_bench.py — predict-tune's search on standard test functions.

For Branin (2-d, 30 trials) and Hartmann-6 (6-d, 60 trials), runs
predict-tune with the Bayesian search (the default algorithm) one trial at a
time and 4 at a time (maxParallelTrials 4), and with RANDOM_SEARCH, for seeds
1..5, with build/predict-tune-testfn as the trial command; prints the median
regret (best objective found minus the known minimum) per function and
algorithm, the ratio random / Bayesian and the ratio 4-parallel / sequential
(issue 37 goal 5: at most 2). With 4 at a time each trial sleeps 0.5 s so
that 4 really run together; the order they finish in is still the
machine's, so the parallel figure varies from run to run (the unit test
test_bayesian_parallel_as_good_as_sequential runs a fixed order). Then the
CPU time of one suggestion after 500 completed trials (build/bench/
bench_suggest; goal <= 0.1 s). Prints one JSON object as its last line
(bench.py reads it). Figures, never pass/fail.

    BUILD=build bench/tune_bench.py [--seeds 5] [--trials N (both functions)]
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

SUGGEST = os.path.join(BUILD, "bench", "bench_suggest")

FUNCTIONS = {  # minimum, parameters, trials
    "branin": (0.397887, [("x1", -5, 10), ("x2", 0, 15)], 30),
    "hartmann6": (-3.32237, [("x%d" % i, 0, 1) for i in range(1, 7)], 60),
}


def config(params, algorithm, trials, parallel):
    hp = {"goal": "MINIMIZE", "maxTrials": trials, "maxParallelTrials": parallel,
          "params": [{"parameterName": n, "type": "DOUBLE", "minValue": lo, "maxValue": hi,
                      "scaleType": "UNIT_LINEAR_SCALE"} for n, lo, hi in params]}
    if algorithm:
        hp["algorithm"] = algorithm
    return {"trainingInput": {"hyperparameters": hp}}


def study(tmp, fn, algorithm, seed, trials, parallel):
    fmin, params, _ = FUNCTIONS[fn]
    d = os.path.join(tmp, "%s-%s-%d-p%d" % (fn, algorithm or "BAYESIAN", seed, parallel))
    cfg = d + ".json"
    with open(cfg, "w") as f:
        json.dump(config(params, algorithm, trials, parallel), f)
    # 4 at a time: each trial lasts 0.5 s, longer than a suggestion, so 4 really run together
    # (a trial of a few milliseconds ends before the next suggestion and the study is nearly
    # sequential); one at a time the order is fixed and the sleep would change nothing
    sleep = ["--sleep", "0.5"] if parallel > 1 else []
    r = subprocess.run([TUNE, "--config", cfg, "--job-dir", d, "--seed", str(seed), "--quiet",
                        "--", TESTFN, "--function", fn] + sleep, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("predict-tune failed: " + r.stderr[-500:])
    with open(os.path.join(d, "study.json")) as f:
        best = json.load(f)["trainingOutput"]["trials"][0]["finalMetric"]["objectiveValue"]
    return best - fmin


def suggest_time():
    """CPU seconds of one suggestion after 500 completed trials, or None."""
    if not os.path.exists(SUGGEST):
        return None
    r = subprocess.run([SUGGEST, "500", "5"], capture_output=True, text=True,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if r.returncode != 0:
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])["cpu_seconds"]


def main():
    seeds = 5
    trials = None
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a == "--seeds":
            seeds = int(args[i + 1])
        if a == "--trials":
            trials = int(args[i + 1])
    tmp = tempfile.mkdtemp(prefix="tune_bench.")
    out = {"seeds": seeds, "trials": {}}
    try:
        for fn in FUNCTIONS:
            n = trials or FUNCTIONS[fn][2]
            out["trials"][fn] = n
            row = {}
            for name, algo, par in (("bayesian", "", 1), ("bayesian_parallel4", "", 4),
                                    ("random", "RANDOM_SEARCH", 1)):
                t0 = time.monotonic()
                regrets = [study(tmp, fn, algo, s, n, par) for s in range(1, seeds + 1)]
                row[name] = {"median_regret": statistics.median(regrets),
                             "regrets": [round(x, 6) for x in regrets],
                             "seconds": round(time.monotonic() - t0, 1)}
            seq = max(row["bayesian"]["median_regret"], 1e-12)
            row["ratio_random_over_bayesian"] = row["random"]["median_regret"] / seq
            row["ratio_parallel4_over_sequential"] = (
                row["bayesian_parallel4"]["median_regret"] / seq)
            out[fn] = row
            print("%-10s median regret at %d trials over %d seeds: Bayesian %.4g, 4 in parallel "
                  "%.4g (%.2fx), random %.4g (%.1fx)" % (
                      fn, n, seeds, row["bayesian"]["median_regret"],
                      row["bayesian_parallel4"]["median_regret"],
                      row["ratio_parallel4_over_sequential"], row["random"]["median_regret"],
                      row["ratio_random_over_bayesian"]))
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["suggest_cpu_seconds_at_500"] = suggest_time()
    if out["suggest_cpu_seconds_at_500"] is not None:
        print("one suggestion after 500 completed trials: %.3f CPU s (goal <= 0.1)"
              % out["suggest_cpu_seconds_at_500"])
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
