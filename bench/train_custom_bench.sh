#!/bin/sh
# train_custom_bench.sh — the custom estimator's training speed next to the
# canned one's (issue 36: a graph equal to the canned model trains at >=
# 0.95x its examples/s). conf/census.json (DNNLinearCombinedClassifier) and
# conf/census_custom.json (the same model as a graph: same seed, same
# checkpoint bytes; with "summaries" on h1..h4, so its event file carries
# the histograms the canned one writes per hidden layer: the same work)
# train on adult.data.csv in alternating rounds (the
# order flips every round, so neither always runs first); per round both
# examples/s, examples per CPU-second, the training thread's CPU time and
# the ratios custom / canned; then the medians of the rounds' ratios (goal
# >= 0.95). Figures, never pass/fail. BUILD (default build) names the build
# dir.
#   bench/train_custom_bench.sh [ROUNDS]   (default 3)
set -u
BENCH=train_custom_bench
. "$(dirname "$0")/train_common.sh"

# figures N: examples/s, examples per CPU-second and training-thread CPU
# seconds of run N's log, space-separated (empty when the line is missing).
figures() {
    grep -o '([0-9]* examples/s), [0-9]* epochs; CPU [0-9.]*s ([0-9]* examples per CPU-second; training thread [0-9.]*s' "$TMP/log$1" |
        sed 's/(\([0-9]*\) examples\/s).*(\([0-9]*\) examples per CPU-second; training thread \([0-9.]*\)s/\1 \2 \3/'
}

CUSTOM="$TMP/census_custom.json"
if ! python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
s["estimator"]["model"]["summaries"] = ["h1", "h2", "h3", "h4"]
json.dump(s, open(sys.argv[2], "w"))' "$ROOT/conf/census_custom.json" "$CUSTOM"; then
    echo "$BENCH: cannot write $CUSTOM (python3)" >&2
    exit 0
fi
echo "census training, canned (conf/census.json) vs custom graph (conf/census_custom.json" \
    "with summaries on h1..h4, as the canned hidden layers')," \
    "$RUNS alternating rounds:"
ratios=""
cpu_ratios=""
i=1
while [ "$i" -le "$RUNS" ]; do
    if [ $((i % 2)) -eq 1 ]; then order="canned custom"; else order="custom canned"; fi
    okr=1
    for which in $order; do
        if [ "$which" = canned ]; then spec="$ROOT/conf/census.json"; else
            spec="$CUSTOM"; fi
        census_run "$spec" "$i$which" || okr=0
    done
    a=$(figures "${i}canned")
    b=$(figures "${i}custom")
    if [ "$okr" -eq 1 ] && [ -n "$a" ] && [ -n "$b" ]; then
        echo "$a $b" | awk -v i="$i" -v o="$order" '{
            printf "  round %d (%s): canned %d examples/s, %d per CPU-second, training thread %.2fs; custom %d examples/s, %d per CPU-second, training thread %.2fs; ratio %.3f, per CPU-second %.3f\n",
                i, o, $1, $2, $3, $4, $5, $6, $4 / $1, $5 / $2 }'
        ratios="$ratios $(echo "$a $b" | awk '{printf "%.4f", $4 / $1}')"
        cpu_ratios="$cpu_ratios $(echo "$a $b" | awk '{printf "%.4f", $5 / $2}')"
    fi
    i=$((i + 1))
done
median() {
    echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {
        if (NR == 0) print "none"; else if (NR % 2) print v[(NR + 1) / 2];
        else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "custom/canned examples/s ratio (median of rounds): $(median "$ratios") (goal >= 0.95)"
echo "custom/canned examples per CPU-second ratio (median of rounds): $(median "$cpu_ratios")"
exit 0
