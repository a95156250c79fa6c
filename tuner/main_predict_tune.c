/*
 * main_predict_tune.c — build/predict-tune: Cloud ML Engine's hyperparameter
 * tuning for any command that takes --name=value flags (docs/tuning.md).
 *
 *   predict-tune --config conf/hptuning_census.yaml --job-dir /tmp/tune -- \
 *       build/predict-train --spec conf/census.json --train-files ... --eval-files ...
 *
 * Under mpirun (mpirun -np K predict-tune ...) rank 0 runs the study and
 * ranks 1..K-1 run the trials, each as a child on its own machine; MPI is
 * initialised only under a launcher (rt_mpi_launched).
 *
 * Exit status: 0 at least one trial succeeded; 1 no trial succeeded or I/O
 * failed; 2 bad command line or config; 130 interrupted (the study resumes
 * when the same command runs again).
 */
#include "tun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fputs("usage: predict-tune --config FILE --job-dir DIR [--seed N] [--quiet] -- COMMAND [ARGS...]\n"
          "  --config FILE   trainingInput.hyperparameters, YAML or JSON (Cloud ML Engine's)\n"
          "  --job-dir DIR   the study: DIR/<trial id>/, DIR/trials.jsonl, DIR/study.json;\n"
          "                  running again with the same DIR resumes the study\n"
          "  --seed N        suggestions are a function of the seed and the results (default 1)\n"
          "  --quiet         no progress lines or table\n"
          "  each trial runs COMMAND ARGS... --job-dir DIR/<id> --<parameterName>=<value>...\n"
          "Under mpirun -np K: rank 0 runs the study, ranks 1..K-1 the trials (docs/tuning.md)\n",
          fp);
}

static int run_main(int argc, char **argv, const tun_comm *comm);

int main(int argc, char **argv)
{
    if (!rt_mpi_launched())
        return run_main(argc, argv, NULL);
    tun_comm comm;
    rt_err err;
    if (tun_comm_mpi_open(&argc, &argv, &comm, &err) != RT_OK) {
        fprintf(stderr, "predict-tune: %s\n", err.msg);
        return 1;
    }
    int code = run_main(argc, argv, comm.size > 1 ? &comm : NULL);
    tun_comm_mpi_close(&comm);
    return code;
}

/* main's work; comm is the MPI world of 2 ranks or more, or NULL. */
static int run_main(int argc, char **argv, const tun_comm *comm)
{
    const char *config = NULL, *job_dir = NULL;
    tun_run_params p = {0};
    p.seed = 1;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--quiet") == 0) {
            p.quiet = 1;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t fl = eq ? (size_t)(eq - a) : strlen(a);
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        int is_config = fl == 8 && strncmp(a, "--config", fl) == 0;
        int is_dir = fl == 9 && strncmp(a, "--job-dir", fl) == 0;
        int is_seed = fl == 6 && strncmp(a, "--seed", fl) == 0;
        if (!is_config && !is_dir && !is_seed) {
            fprintf(stderr, "predict-tune: unknown argument \"%s\" (the command goes after --)\n",
                    a);
            usage(stderr);
            return 2;
        }
        if (!val) {
            fprintf(stderr, "predict-tune: %.*s needs a value\n", (int)fl, a);
            return 2;
        }
        if (!eq)
            i++;
        if (is_config)
            config = val;
        else if (is_dir)
            job_dir = val;
        else {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(val, &end, 10);
            if (errno || end == val || *end || val[0] == '-') {
                fprintf(stderr, "predict-tune: --seed: \"%s\" is not an integer >= 0\n", val);
                return 2;
            }
            p.seed = v;
        }
    }
    if (!config || !job_dir || i >= argc) {
        fprintf(stderr, "predict-tune: --config, --job-dir and a command after -- are required\n");
        usage(stderr);
        return 2;
    }
    p.job_dir = job_dir;
    p.command = argv + i;

    rt_err err;
    err.msg[0] = '\0';
    tun_spec s;
    tun_spec_init(&s);
    if (tun_spec_load(config, &s, &err) != RT_OK) {
        fprintf(stderr, "predict-tune: %s\n", err.msg);
        return 2;
    }
    int64_t ok = 0;
    int interrupted = 0;
    p.comm = comm;
    if (comm && comm->rank > 0) { /* a trial rank: rank 0 runs the study */
        rt_status ws = tun_worker(&s, &p, &interrupted, &err);
        if (ws != RT_OK)
            fprintf(stderr, "predict-tune: rank %d: %s\n", comm->rank, err.msg);
        tun_spec_free(&s);
        return ws != RT_OK ? 1 : interrupted ? 130 : 0;
    }
    rt_status st = tun_run(&s, &p, &ok, &interrupted, &err);
    int code;
    if (st != RT_OK) {
        fprintf(stderr, "predict-tune: %s\n", err.msg);
        code = st == RT_ERR_INVALID || st == RT_ERR_NOTFOUND ? 2 : 1;
    } else if (interrupted) {
        code = 130;
    } else if (ok == 0) {
        fprintf(stderr, "predict-tune: no trial succeeded (see DIR/trials.jsonl and each "
                        "trial's trial.log)\n");
        code = 1;
    } else {
        code = 0;
    }
    tun_spec_free(&s);
    return code;
}
