#!/bin/sh
# train_trees_bench.sh — BoostedTrees training speed of predict-train next to
# scikit-learn's HistGradientBoostingClassifier (figures, never pass/fail).
# Trains conf/census_trees.json (100 trees of depth 6) on adult.data.csv and
# evaluates on the whole adult.test.csv; prints, per run, the trainer's
# "grew 100 trees ... cpu" line (growing only; reading and binning apart),
# the whole run's wall time and the evaluation; then the baseline, when
# Debian's python3-sklearn is installed (bench/hgb_baseline.py on one core,
# OMP_NUM_THREADS=1; not in scripts/install-deps.sh: docs/trainer.md has the
# figure measured once). BUILD (default build) names the build dir.
#   bench/train_trees_bench.sh [RUNS]   (default 3)
set -u
BENCH=train_trees_bench
. "$(dirname "$0")/train_common.sh"
echo "BoostedTrees (conf/census_trees.json, adult.data.csv -> adult.test.csv), $RUNS runs:"
i=1
while [ "$i" -le "$RUNS" ]; do
    if ! census_run "$ROOT/conf/census_trees.json" "$i"; then
        i=$((i + 1))
        continue
    fi
    grew=$(grep -o 'grew [0-9]* trees from [0-9]* examples in [0-9.]*s, cpu [0-9.]*s ([0-9]* examples/s per tree and cpu second)' "$TMP/log$i")
    binned=$(grep -o 'binned in [0-9.]*s' "$TMP/log$i")
    echo "  trees run $i: $grew; read and $binned; whole run ${wall}s; $acc, $auc"
    i=$((i + 1))
done
PY=/usr/bin/python3
if [ -x "$PY" ] && "$PY" -c 'import sklearn' 2>/dev/null; then
    i=1
    while [ "$i" -le "$RUNS" ]; do
        echo "  baseline run $i: $(OMP_NUM_THREADS=1 "$PY" "$ROOT/bench/hgb_baseline.py" \
            "$ROOT/data/census/adult.data.csv" "$ROOT/data/census/adult.test.csv" 2>&1 | tail -n 1)"
        i=$((i + 1))
    done
else
    echo "  baseline: python3-sklearn not installed (measured once: 0.56-0.59 cpu s for 100" \
        "trees, docs/trainer.md)"
fi
exit 0
