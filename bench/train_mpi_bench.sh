#!/bin/sh
# train_mpi_bench.sh — distributed census training throughput (figures, never
# pass/fail; docs/distributed.md). For batch 40 (the tutorial's) and 512, trains
# conf/census.json (4 epochs, no evaluation) alone and with
# `mpirun -np 2` (AUTO sharding), RUNS times each, interleaved, and prints the
# median examples/s of the training loop, the speed-up, and the communication
# time per step rank 0 reports (allreduce and row exchange, waiting for the
# slower rank included) and its split of a step into compute, waiting for the
# slower rank and the exchange itself. Run from anywhere: BUILD (default build).
#   bench/train_mpi_bench.sh [RUNS]   (default 3)
set -u
BENCH=train_mpi_bench
. "$(dirname "$0")/train_common.sh"
if ! command -v mpirun >/dev/null 2>&1; then
    echo "train_mpi_bench: needs mpirun (scripts/install-deps.sh)" >&2
    exit 0
fi
MPIRUN="mpirun --allow-run-as-root --oversubscribe"

median() { sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print 0}'; }

echo "distributed census training (conf/census.json, 4 epochs, adult.data.csv), $RUNS runs each, load $(cut -d' ' -f1-3 /proc/loadavg):"
for bs in 40 512; do
    : >"$TMP/eps1"
    : >"$TMP/eps2"
    : >"$TMP/comm"
    : >"$TMP/split"
    i=1
    while [ "$i" -le "$RUNS" ]; do
        for np in 1 2; do
            job="$TMP/job-$bs-$np-$i"
            if [ "$np" = 1 ]; then
                "$TRAIN" --spec "$ROOT/conf/census.json" --train-files "$ROOT/data/census/adult.data.csv" \
                    --job-dir "$job" --batch-size "$bs" --progress quiet >"$job.log" 2>&1
            else
                $MPIRUN -np 2 "$TRAIN" --spec "$ROOT/conf/census.json" \
                    --train-files "$ROOT/data/census/adult.data.csv" \
                    --job-dir "$job" --batch-size "$bs" --progress quiet >"$job.log" 2>&1
            fi
            eps=$(sed -n 's/.*trained .* (\([0-9]*\) examples\/s).*/\1/p' "$job.log")
            if [ -z "$eps" ]; then
                echo "  batch $bs, $np rank(s), run $i failed:"
                tail -n 3 "$job.log" | sed 's/^/    /'
                continue
            fi
            echo "$eps" >>"$TMP/eps$np"
            if [ "$np" = 2 ]; then
                sed -n 's/.*communication \([0-9.]*\)s (\([0-9.]*\) us per step, \([0-9]*\)%.*/\2 \3/p' \
                    "$job.log" >>"$TMP/comm"
                # a step = compute + waiting for the slowest rank + exchange (rank 0's view)
                sed -n 's/.*a step \([0-9.]*\) us = compute \([0-9.]*\) us (slowest rank \([0-9.]*\) us) + waiting for the slowest rank \([0-9.]*\) us + exchange \([0-9.]*\) us.*/\1 \2 \4 \5/p' \
                    "$job.log" >>"$TMP/split"
            fi
            rm -rf "$job"
        done
        i=$((i + 1))
    done
    e1=$(median <"$TMP/eps1")
    e2=$(median <"$TMP/eps2")
    cus=$(cut -d' ' -f1 "$TMP/comm" | median)
    cpct=$(cut -d' ' -f2 "$TMP/comm" | median)
    sp=$(echo "$e1 $e2" | awk '{if ($1 > 0) printf "%.2f", $2 / $1; else print "?"}')
    echo "  batch $bs: 1 rank $e1 examples/s ($(tr '\n' ' ' <"$TMP/eps1")); 2 ranks $e2 examples/s ($(tr '\n' ' ' <"$TMP/eps2")); speed-up ${sp}x; communication ${cus} us per step (${cpct}% of the time)"
    sstep=$(cut -d' ' -f1 "$TMP/split" | median)
    scomp=$(cut -d' ' -f2 "$TMP/split" | median)
    swait=$(cut -d' ' -f3 "$TMP/split" | median)
    sexch=$(cut -d' ' -f4 "$TMP/split" | median)
    echo "  batch $bs, 2 ranks, a step (medians, rank 0): ${sstep} us = compute ${scomp} us + waiting for the slower rank ${swait} us + exchange ${sexch} us"
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit 0
