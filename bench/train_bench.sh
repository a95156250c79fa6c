#!/bin/sh
# train_bench.sh — census training throughput of predict-train (figures,
# never pass/fail). Trains conf/census.json on data/census/adult.data.csv
# (its 4 epochs, one core: the trainer sets OpenBLAS to one thread) and
# evaluates on the whole adult.test.csv; prints examples/s, examples per
# CPU-second of the whole process (the reader and checkpoint threads too) and
# the training thread's CPU time, wall time and the evaluation. Run from
# anywhere: BUILD (default build) names the build dir.
#   bench/train_bench.sh [RUNS]   (default 3 runs; the best is reported too)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
RUNS=${1:-3}
TRAIN="$BUILD/predict-train"
if [ ! -x "$TRAIN" ]; then
    echo "train_bench: $TRAIN not built (make BUILD=$BUILD)" >&2
    exit 0
fi
TMP=$(mktemp -d /tmp/train_bench.XXXXXX) || exit 0
trap 'rm -rf "$TMP"' EXIT INT TERM
best=0
i=1
echo "census training (conf/census.json, adult.data.csv -> adult.test.csv), $RUNS runs:"
while [ "$i" -le "$RUNS" ]; do
    start=$(date +%s.%N)
    "$TRAIN" --spec "$ROOT/conf/census.json" \
        --train-files "$ROOT/data/census/adult.data.csv" \
        --eval-files "$ROOT/data/census/adult.test.csv" \
        --job-dir "$TMP/job$i" --progress quiet >"$TMP/log$i" 2>&1
    rc=$?
    end=$(date +%s.%N)
    if [ "$rc" -ne 0 ]; then
        echo "  run $i: predict-train failed (exit $rc):"
        tail -n 5 "$TMP/log$i" | sed 's/^/    /'
        i=$((i + 1))
        continue
    fi
    line=$(grep -o 'trained [0-9]* steps, [0-9]* examples in [0-9.]*s ([0-9]* examples/s)' "$TMP/log$i")
    cpu=$(grep -o '[0-9]* examples per CPU-second; training thread [0-9.]*s' "$TMP/log$i")
    eps=$(echo "$line" | sed 's/.*(\([0-9]*\) examples\/s).*/\1/')
    acc=$(grep -o 'accuracy = [0-9.]*' "$TMP/log$i" | head -n 1)
    auc=$(grep -o ', auc = [0-9.]*' "$TMP/log$i" | head -n 1 | sed 's/^, //')
    wall=$(echo "$start $end" | awk '{printf "%.2f", $2 - $1}')
    echo "  run $i: $line; $cpu; whole run (train + eval + export) ${wall}s; $acc, $auc"
    if [ "${eps:-0}" -gt "$best" ]; then best=$eps; fi
    i=$((i + 1))
done
echo "train examples/s (best of $RUNS): $best"
exit 0
