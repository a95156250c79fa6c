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
BENCH=train_bench
. "$(dirname "$0")/train_common.sh"
best=0
i=1
echo "census training (conf/census.json, adult.data.csv -> adult.test.csv), $RUNS runs:"
while [ "$i" -le "$RUNS" ]; do
    if ! census_run "$ROOT/conf/census.json" "$i"; then
        i=$((i + 1))
        continue
    fi
    line=$(grep -o 'trained [0-9]* steps, [0-9]* examples in [0-9.]*s ([0-9]* examples/s)' "$TMP/log$i")
    cpu=$(grep -o '[0-9]* examples per CPU-second; training thread [0-9.]*s' "$TMP/log$i")
    eps=$(echo "$line" | sed 's/.*(\([0-9]*\) examples\/s).*/\1/')
    echo "  run $i: $line; $cpu; whole run (train + eval + export) ${wall}s; $acc, $auc"
    if [ "${eps:-0}" -gt "$best" ]; then best=$eps; fi
    i=$((i + 1))
done
echo "train examples/s (best of $RUNS): $best"
exit 0
