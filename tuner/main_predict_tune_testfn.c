/*
 * main_predict_tune_testfn.c — build/predict-tune-testfn: a trial command for
 * the tuner's tests and benchmark. Evaluates a standard test function at the
 * --x1=... flags and reports it the way hypertune does: JSON lines in the file
 * named by CLOUD_ML_HP_METRIC_FILE (else DIR/eval/metrics.jsonl), the tag from
 * CLOUD_ML_HP_METRIC_TAG.
 *
 *   predict-tune-testfn --function branin|hartmann6|sphere [--steps N]
 *       [--fail-above X] [--linger-above X] [--sleep S] --job-dir DIR --x1=V ...
 *
 * branin: x1 in [-5, 10], x2 in [0, 15], minimum 0.397887 (three places).
 * hartmann6: x1..x6 in [0, 1], minimum -3.32237 at
 *   (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
 * sphere: sum of x_i^2 over the given flags (any count), minimum 0.
 * --steps N reports N values at global steps 1..N converging to f (the last
 * one is f); --fail-above X exits 1 without a report when f > X;
 * --linger-above X: when f > X, reports steps 1..N-1, sleeps 120 s, then
 * reports step N (a slow trial for the median stopping rule to stop);
 * --sleep S waits S seconds (fractions allowed) before reporting, so trials
 * last longer than a suggestion and really run side by side
 * (bench/tune_bench.py's maxParallelTrials 4 studies).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double branin(const double *x)
{
    double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10,
           t = 1 / (8 * M_PI);
    double u = x[1] - b * x[0] * x[0] + c * x[0] - r;
    return a * u * u + s * (1 - t) * cos(x[0]) + s;
}

static double hartmann6(const double *x)
{
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                   {2329, 4135, 8307, 3736, 1004, 9991},
                                   {2348, 1451, 3522, 2883, 3047, 6650},
                                   {4047, 8828, 8732, 5743, 1091, 381}};
    double sum = 0;
    for (int i = 0; i < 4; i++) {
        double e = 0;
        for (int j = 0; j < 6; j++) {
            double d = x[j] - P[i][j] * 1e-4;
            e += A[i][j] * d * d;
        }
        sum += alpha[i] * exp(-e);
    }
    return -sum;
}

int main(int argc, char **argv)
{
    const char *fn = NULL, *job_dir = NULL;
    double x[16] = {0};
    int have[16] = {0}, nx = 0;
    long steps = 1;
    double fail_above = INFINITY, linger_above = INFINITY, sleep_s = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(a, "--function") == 0 && i + 1 < argc) {
            fn = val;
            i++;
        } else if (strcmp(a, "--job-dir") == 0 && i + 1 < argc) {
            job_dir = val;
            i++;
        } else if (strcmp(a, "--steps") == 0 && i + 1 < argc) {
            steps = strtol(val, NULL, 10);
            i++;
        } else if (strcmp(a, "--fail-above") == 0 && i + 1 < argc) {
            fail_above = strtod(val, NULL);
            i++;
        } else if (strcmp(a, "--linger-above") == 0 && i + 1 < argc) {
            linger_above = strtod(val, NULL);
            i++;
        } else if (strcmp(a, "--sleep") == 0 && i + 1 < argc) {
            char *end;
            sleep_s = strtod(val, &end);
            if (end == val || *end || !(sleep_s >= 0 && sleep_s <= 3600)) {
                fprintf(stderr, "testfn: --sleep %s: not a number of seconds in [0, 3600]\n",
                        val);
                return 2;
            }
            i++;
        } else if (strncmp(a, "--x", 3) == 0 && strchr(a, '=')) {
            char *end;
            long k = strtol(a + 3, &end, 10);
            if (k < 1 || k > 16 || *end != '=') {
                fprintf(stderr, "testfn: bad flag %s\n", a);
                return 2;
            }
            x[k - 1] = strtod(end + 1, NULL);
            have[k - 1] = 1;
            nx = (int)k > nx ? (int)k : nx;
        } else {
            fprintf(stderr, "testfn: unknown argument %s\n", a);
            return 2;
        }
    }
    double f;
    if (!fn || steps < 1) {
        fprintf(stderr, "testfn: --function branin|hartmann6|sphere is required\n");
        return 2;
    }
    if (strcmp(fn, "branin") == 0 && have[0] && have[1])
        f = branin(x);
    else if (strcmp(fn, "hartmann6") == 0 && nx == 6)
        f = hartmann6(x);
    else if (strcmp(fn, "sphere") == 0) {
        f = 0;
        for (int k = 0; k < nx; k++)
            f += x[k] * x[k];
    } else {
        fprintf(stderr, "testfn: unknown function %s or missing --xN flags\n", fn);
        return 2;
    }
    if (sleep_s > 0) {
        struct timespec ts = {(time_t)sleep_s, (long)((sleep_s - floor(sleep_s)) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    printf("testfn: %s = %.9g\n", fn, f);
    if (f > fail_above) {
        fprintf(stderr, "testfn: %.9g > %g: failing as asked\n", f, fail_above);
        return 1;
    }
    const char *path = getenv("CLOUD_ML_HP_METRIC_FILE");
    const char *tag = getenv("CLOUD_ML_HP_METRIC_TAG");
    const char *trial = getenv("CLOUD_ML_TRIAL_ID");
    char buf[4200];
    if (!path) {
        if (!job_dir) {
            fprintf(stderr, "testfn: no CLOUD_ML_HP_METRIC_FILE and no --job-dir\n");
            return 2;
        }
        snprintf(buf, sizeof buf, "%s/eval", job_dir);
        mkdir(job_dir, 0755);
        mkdir(buf, 0755);
        snprintf(buf, sizeof buf, "%s/eval/metrics.jsonl", job_dir);
        path = buf;
    }
    FILE *fp = fopen(path, "a");
    if (!fp) {
        fprintf(stderr, "testfn: %s: %s\n", path, strerror(errno));
        return 1;
    }
    int linger = f > linger_above;
    for (long s = 1; s <= steps; s++) {
        if (linger && s == steps) {
            fflush(fp);
            sleep(120);
        }
        /* a curve that starts worse and ends at f */
        double v = f + fabs(f + 1) * (double)(steps - s) / (double)steps;
        fprintf(fp, "{\"global_step\": \"%ld\", \"%s\": \"%.17g\", \"timestamp\": %ld, "
                    "\"trial\": \"%s\"}\n",
                s, tag ? tag : "training/hptuning/metric", v, (long)time(NULL),
                trial ? trial : "0");
        fflush(fp);
    }
    fclose(fp);
    return 0;
}
