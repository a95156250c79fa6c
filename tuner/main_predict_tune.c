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

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void usage(FILE *fp)
{
    size_t n_flags;
    const rt_setting *flags = tun_flag_settings(&n_flags);
    rt_buf b;
    rt_buf_init(&b);
    int r = rt_buf_puts(&b, "usage: predict-tune --config FILE --job-dir DIR [--seed N] "
                            "[--quiet] -- COMMAND [ARGS...]\n");
    r |= rt_settings_help(&b, flags, n_flags, 20, NULL, 0);
    r |= rt_buf_puts(&b, "  -h, --help        this text\n"
                         "Each trial runs COMMAND ARGS... --job-dir DIR/<id> "
                         "--<parameterName>=<value>...\n"
                         "Under mpirun -np K: rank 0 runs the study, ranks 1..K-1 the trials "
                         "(docs/tuning.md)\n");
    fputs(r ? "predict-tune: out of memory\n" : b.data, fp);
    rt_buf_free(&b);
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
    tun_cli cli;
    size_t n_flags;
    const rt_setting *flags = tun_flag_settings(&n_flags);
    memset(&cli, 0, sizeof cli);
    rt_err err;
    err.msg[0] = '\0';
    bool help = false;
    int i = argc, code = 2;
    rt_argv spec = {.rows = flags, .n = n_flags, .dashdash = true, .extra = rt_argv_help_names,
                    .other = rt_settings_argv_help, .ctx = &help};
    if (rt_settings_defaults(flags, n_flags, &cli, &err) != RT_OK) {
        fprintf(stderr, "predict-tune: %s\n", err.msg);
        return 1;
    }
    /* --help before "--" ends the reading */
    rt_status st0 = rt_settings_argv(&spec, rt_settings_argv_help_end(argc, argv, "--"), argv, &cli,
                                     NULL, &i, &err);
    if (st0 == RT_OK && help) {
        usage(stdout);
        code = 0;
        goto done;
    }
    if (st0 != RT_OK) {
        fprintf(stderr, "predict-tune: %s%s\n", err.msg,
                st0 == RT_ERR_NOTFOUND ? "; the command goes after --" : "");
        if (st0 == RT_ERR_NOTFOUND)
            usage(stderr);
        goto done;
    }
    if (i < argc && strcmp(argv[i - 1], "--") != 0) {
        fprintf(stderr, "predict-tune: unknown argument \"%s\" (the command goes after --)\n",
                argv[i]);
        usage(stderr);
        goto done;
    }
    if (!cli.config || !cli.job_dir || i >= argc) {
        fprintf(stderr, "predict-tune: --config, --job-dir and a command after -- are required\n");
        usage(stderr);
        goto done;
    }
    tun_run_params p = {0};
    p.seed = cli.seed;
    p.quiet = cli.quiet;
    const char *config = cli.config, *job_dir = cli.job_dir;
    p.job_dir = job_dir;
    p.command = argv + i;

    tun_spec s;
    tun_spec_init(&s);
    if (tun_spec_load(config, &s, &err) != RT_OK) {
        fprintf(stderr, "predict-tune: %s\n", err.msg);
        code = 2;
        goto done;
    }
    int64_t ok = 0;
    int interrupted = 0;
    p.comm = comm;
    if (comm && comm->rank > 0) { /* a trial rank: rank 0 runs the study */
        rt_status ws = tun_worker(&s, &p, &interrupted, &err);
        if (ws != RT_OK)
            fprintf(stderr, "predict-tune: rank %d: %s\n", comm->rank, err.msg);
        tun_spec_free(&s);
        code = ws != RT_OK ? 1 : interrupted ? 130 : 0;
        goto done;
    }
    rt_status st = tun_run(&s, &p, &ok, &interrupted, &err);
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
done:
    rt_settings_free(flags, n_flags, &cli);
    return code;
}
