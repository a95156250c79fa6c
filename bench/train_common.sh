# train_common.sh — what the training benches share (sourced, not run):
# ROOT, BUILD (default build, made absolute), RUNS ($1, default 3), TRAIN,
# a temporary TMP removed on exit, and census_run, one timed census run.
# The caller sets BENCH (its name, for messages) before sourcing it; a bench
# whose predict-train is not built prints why and exits 0 (figures, never
# pass/fail).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
RUNS=${1:-3}
TRAIN="$BUILD/predict-train"
if [ ! -x "$TRAIN" ]; then
    echo "$BENCH: $TRAIN not built (make BUILD=$BUILD)" >&2
    exit 0
fi
TMP=$(mktemp -d "/tmp/$BENCH.XXXXXX") || exit 0
trap 'rm -rf "$TMP"' EXIT INT TERM

# census_run SPEC N [FLAG...]: trains SPEC on adult.data.csv (predict-train's
# FLAGs after its own, e.g. --batch-size 256), evaluates on the whole
# adult.test.csv into $TMP/jobN with its log in $TMP/logN; sets wall (seconds),
# acc and auc ("accuracy = ...", "auc = ..."). Returns predict-train's status
# after printing the log's tail when it failed.
census_run() {
    cr_spec=$1
    cr_n=$2
    shift 2
    start=$(date +%s.%N)
    "$TRAIN" --spec "$cr_spec" \
        --train-files "$ROOT/data/census/adult.data.csv" \
        --eval-files "$ROOT/data/census/adult.test.csv" \
        --job-dir "$TMP/job$cr_n" --progress quiet "$@" >"$TMP/log$cr_n" 2>&1
    rc=$?
    end=$(date +%s.%N)
    if [ "$rc" -ne 0 ]; then
        echo "  run $cr_n: predict-train failed (exit $rc):"
        tail -n 5 "$TMP/log$cr_n" | sed 's/^/    /'
        return "$rc"
    fi
    acc=$(grep -o 'accuracy = [0-9.]*' "$TMP/log$cr_n" | head -n 1)
    auc=$(grep -o ', auc = [0-9.]*' "$TMP/log$cr_n" | head -n 1 | sed 's/^, //')
    wall=$(echo "$start $end" | awk '{printf "%.2f", $2 - $1}')
    return 0
}
