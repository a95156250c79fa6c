/*
 * bench_suggest.c — the CPU time of one Bayesian suggestion late in a long
 * study: Branin's 2-d box, N completed trials at seeded random points and 3
 * running ones (4 in parallel), suggestion number N+3. Prints the median CPU
 * seconds of R suggestions (each from the same points, so the same work) and
 * one JSON line (bench/tune_bench.py reads it). A figure, never pass/fail.
 *
 *   build/bench/bench_suggest [N=500] [R=5]
 */
#include "tun.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double branin(const double *x)
{
    double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
    double u = x[1] - b * x[0] * x[0] + c * x[0] - 6;
    return u * u + 10 * (1 - t) * cos(x[0]) + 10;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 500, reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 10 || reps < 1 || reps > 99) {
        fprintf(stderr, "usage: bench_suggest [N >= 10] [R in 1..99]\n");
        return 2;
    }
    static const char cfg[] =
        "{\"trainingInput\": {\"hyperparameters\": {\"goal\": \"MINIMIZE\", \"maxTrials\": 100000,"
        " \"maxParallelTrials\": 4, \"params\": ["
        "{\"parameterName\": \"x1\", \"type\": \"DOUBLE\", \"minValue\": -5, \"maxValue\": 10},"
        "{\"parameterName\": \"x2\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 15}]}}}";
    cJSON *root = cJSON_Parse(cfg);
    tun_spec s;
    tun_spec_init(&s);
    rt_err err;
    if (!root || tun_spec_from_json(root, &s, &err) != RT_OK) {
        fprintf(stderr, "bench_suggest: the spec: %s\n", root ? err.msg : "not JSON");
        return 1;
    }
    size_t total = (size_t)n + 3;
    double *v = calloc(2 * (total + 1), sizeof *v), t[99];
    tun_point *pts = calloc(total, sizeof *pts);
    if (!v || !pts)
        return 1;
    rt_rng r;
    rt_rng_seed(&r, 1);
    for (size_t i = 0; i < total; i++) {
        v[2 * i] = -5 + 15 * rt_rng_uniform(&r);
        v[2 * i + 1] = 15 * rt_rng_uniform(&r);
        pts[i] = (tun_point){v + 2 * i, branin(v + 2 * i), i < (size_t)n};
    }
    for (int k = 0; k < reps; k++) {
        double t0 = cpu_seconds();
        if (tun_suggest(&s, 1, (int64_t)total, pts, total, v + 2 * total, &err) != RT_OK) {
            fprintf(stderr, "bench_suggest: %s\n", err.msg);
            return 1;
        }
        t[k] = cpu_seconds() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, dcmp);
    printf("suggestion %zu (%d completed, 3 running): %.4f CPU s (median of %d)\n", total + 1, n,
           t[reps / 2], reps);
    printf("{\"completed\": %d, \"running\": 3, \"cpu_seconds\": %.6f}\n", n, t[reps / 2]);
    free(v);
    free(pts);
    tun_spec_free(&s);
    cJSON_Delete(root);
    return 0;
}
