#!/bin/sh
# train_bench.sh — census training throughput of predict-train next to
# scikit-learn's MLPClassifier (figures, never pass/fail; issue 37 goal 3).
# Each round trains conf/census.json on data/census/adult.data.csv (its 4
# epochs, batch 40; the trainer sets OpenBLAS to one thread) and evaluates on
# the whole adult.test.csv, then the same at --batch-size 256 (the baseline's
# batch), then, when Debian's python3-sklearn is installed, runs
# bench/mlp_baseline.py (MLPClassifier((100, 70, 48, 34)), batch 256, 4
# epochs, one thread; its float64 inputs, then cast to float32) on the same
# files: rounds interleaved, nothing pinned
# (the trainer's reader thread runs beside its training thread; the figures
# compared are examples per CPU-second, the trainer's of its whole process).
# Prints per round the trainer's examples/s, examples per CPU-second, the
# training thread's CPU, wall time and the evaluation; the baseline's line;
# and the ratio of examples per CPU-second (goal >= 2.5x). Run from
# anywhere: BUILD (default build) names the build dir.
#   bench/train_bench.sh [RUNS]   (default 3 runs; the best is reported too)
set -u
BENCH=train_bench
. "$(dirname "$0")/train_common.sh"
PY=/usr/bin/python3
if [ -x "$PY" ] && "$PY" -c 'import sklearn' 2>/dev/null; then
    sk=1
else
    sk=0
fi
TRAINED='trained [0-9]* steps, [0-9]* examples in [0-9.]*s ([0-9]* examples/s)'
PERCPU='[0-9]* examples per CPU-second; training thread [0-9.]*s'
best=0
i=1
echo "census training (conf/census.json, adult.data.csv -> adult.test.csv), $RUNS runs, load $(cut -d' ' -f1-3 /proc/loadavg):"
echo "  trainer: DNNLinearCombinedClassifier, DNN 66 inputs (6 indicators 45, 2 embeddings of" \
    "dimension 8, 5 numerics) -> 100-70-48-34 -> 1 (18,879 weights; Adagrad) plus a linear" \
    "part of 11 sparse columns (3 crosses; FTRL), 4 epochs"
while [ "$i" -le "$RUNS" ]; do
    if ! census_run "$ROOT/conf/census.json" "$i"; then
        i=$((i + 1))
        continue
    fi
    line=$(grep -o "$TRAINED" "$TMP/log$i")
    cpu=$(grep -o "$PERCPU" "$TMP/log$i")
    eps=$(echo "$line" | sed 's/.*(\([0-9]*\) examples\/s).*/\1/')
    echo "  run $i: $line; $cpu; whole run (train + eval + export) ${wall}s; $acc, $auc"
    if [ "${eps:-0}" -gt "$best" ]; then best=$eps; fi
    c40=$(echo "$cpu" | cut -d' ' -f1)
    c256=
    if census_run "$ROOT/conf/census.json" "${i}b" --batch-size 256; then
        cpu=$(grep -o "$PERCPU" "$TMP/log${i}b")
        echo "  run $i, batch 256: $(grep -o "$TRAINED" "$TMP/log${i}b"); $cpu; $acc, $auc"
        c256=$(echo "$cpu" | cut -d' ' -f1)
    fi
    rm -rf "$TMP/job$i" "$TMP/job${i}b"
    if [ "$sk" = 1 ]; then
        base=$("$PY" "$ROOT/bench/mlp_baseline.py" "$ROOT/data/census/adult.data.csv" \
            "$ROOT/data/census/adult.test.csv" 4 2>&1 | tail -n 1)
        echo "  run $i, baseline: $base"
        csk=$(echo "$base" | sed -n 's/.*(\([0-9]*\) examples per CPU-second).*/\1/p')
        b32=$("$PY" "$ROOT/bench/mlp_baseline.py" "$ROOT/data/census/adult.data.csv" \
            "$ROOT/data/census/adult.test.csv" 4 float32 2>&1 | tail -n 1)
        echo "  run $i, baseline float32: $b32"
        c32=$(echo "$b32" | sed -n 's/.*(\([0-9]*\) examples per CPU-second).*/\1/p')
        echo "$c40 ${c256:-0} ${csk:-0} ${c32:-0}" | awk -v i="$i" '$3 > 0 && $4 > 0 {
            printf "  run %d, ratio (examples per CPU-second, trainer / sklearn): batch 40 %.2fx, batch 256 %.2fx (goal 2.5x); over float32 sklearn %.2fx and %.2fx\n", i, $1 / $3, $2 / $3, $1 / $4, $2 / $4 }'
    fi
    i=$((i + 1))
done
if [ "$sk" = 0 ]; then
    echo "  baseline: python3-sklearn not installed (bench/mlp_baseline.py; docs/performance.md" \
        "has the figures of a run)"
fi
echo "train examples/s (best of $RUNS): $best"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit 0
