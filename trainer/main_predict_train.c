/*
 * main_predict_train.c — build/predict-train: train_and_evaluate from a JSON
 * spec, with command-line flags in the style of the census tutorial's
 * task.py overriding the spec.
 *
 *   predict-train --spec conf/census.json --train-files data/census/adult.data.csv \
 *       --eval-files data/census/adult.test.csv --job-dir /tmp/census
 *
 * Under an MPI launcher (mpirun -np N predict-train ..., srun --mpi=pmix)
 * the same command trains data-parallel on N ranks (docs/distributed.md);
 * MPI is initialised only then.
 *
 * Exit status: 0 done, 1 training, data or I/O failed, 2 bad command line or
 * spec, 130 / 143 stopped by SIGINT / SIGTERM (after a checkpoint).
 */
#include "trn.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * TF_CONFIG (TensorFlow's and Cloud ML Engine's cluster spec) is not how
 * predict-train distributes: with more than one task in it, say so and show
 * the mpirun line that trains on that many ranks instead of training alone.
 * Returns the number of tasks (0 when TF_CONFIG is unset or unreadable).
 */
static int tf_config_tasks(void)
{
    const char *s = getenv("TF_CONFIG");
    if (!s)
        return 0;
    cJSON *j = cJSON_Parse(s);
    int n = 0;
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(j, "cluster");
    static const char *const roles[] = {"chief", "master", "worker", NULL};
    for (size_t i = 0; roles[i]; i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(cl, roles[i]);
        if (cJSON_IsArray(a))
            n += cJSON_GetArraySize(a);
    }
    cJSON_Delete(j);
    return n;
}

static void print_mpirun_line(FILE *fp, int tasks, int argc, char **argv)
{
    fprintf(fp, "  mpirun -np %d", tasks);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int plain = *a != '\0';
        for (const char *p = a; *p; p++)
            plain &= strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                             "-_./=,:@%+", *p) != NULL;
        if (plain) {
            fprintf(fp, " %s", a);
            continue;
        }
        fputs(" '", fp);
        for (const char *p = a; *p; p++)
            fputs(*p == '\'' ? "'\\''" : (char[2]){*p, 0}, fp);
        fputc('\'', fp);
    }
    fputc('\n', fp);
}

/*
 * No --job-dir: as TensorFlow's Estimator, a temporary directory
 * (mkdtemp under $TMPDIR or /tmp), named on stderr so the run's checkpoints
 * and exports are not lost. Under MPI rank 0 makes it and every rank gets
 * its path. Returns it malloc'd, or NULL after saying why.
 */
static char *temp_job_dir(const trn_comm *comm, int log_level)
{
    char path[4096] = "";
    if (!comm || comm->rank == 0) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp)
            tmp = "/tmp";
        if (snprintf(path, sizeof path, "%s/predict-train-XXXXXX", tmp) >= (int)sizeof path ||
            !mkdtemp(path)) {
            fprintf(stderr, "predict-train: no --job-dir given and no temporary directory "
                            "under %s: %s\n", tmp, strerror(errno));
            path[0] = '\0';
        } else if (log_level <= 2) {
            fprintf(stderr, "WARNING: no --job-dir given: using the temporary directory %s "
                            "(checkpoints, metrics, exports)\n", path);
        }
    }
    if (comm && comm->size > 1 && comm->bcast(comm->ctx, path, sizeof path, 0) != 0) {
        fprintf(stderr, "predict-train: rank %d: MPI broadcast failed\n", comm->rank);
        return NULL;
    }
    return path[0] ? strdup(path) : NULL;
}

static int run_main(int argc, char **argv, const trn_comm *comm);

int main(int argc, char **argv)
{
    if (!rt_mpi_launched()) {
        int tasks = tf_config_tasks();
        if (tasks > 1) {
            fprintf(stderr, "predict-train: TF_CONFIG describes a cluster of %d tasks, but "
                            "predict-train trains with MPI, not TensorFlow's cluster spec.\n"
                            "Start it on %d ranks with the same flags instead "
                            "(docs/distributed.md):\n", tasks, tasks);
            print_mpirun_line(stderr, tasks, argc, argv);
            return 2;
        }
        if (tasks == 1)
            fprintf(stderr, "INFO: TF_CONFIG names one task: training in this process "
                            "(predict-train distributes with MPI: docs/distributed.md)\n");
        return run_main(argc, argv, NULL);
    }
    trn_comm comm;
    rt_err err;
    if (trn_comm_mpi_open(&argc, &argv, &comm, &err) != RT_OK) {
        fprintf(stderr, "predict-train: %s\n", err.msg);
        return 1;
    }
    int code = run_main(argc, argv, &comm);
    if (code != 0 && code != 3 && code != 130 && code != 143 && comm.size > 1)
        comm.abort(comm.ctx, code); /* a failed rank ends the whole job */
    trn_comm_mpi_close(&comm);
    return code == 3 ? 2 : code;
}

/* main's work; comm is the MPI world or NULL. Returns the exit status, or 3
 * for a refusal every rank makes alike (the ranks then finish together). */
static int run_main(int argc, char **argv, const trn_comm *comm)
{
    trn_overrides o;
    trn_overrides_init(&o);
    rt_err err;
    err.msg[0] = '\0';
    bool help = false;
    int next = argc, code = 2, sig = 0;
    trn_config c;
    trn_config_init(&c);
    cJSON *spec = NULL;
    char *text = NULL; /* a pipe is fine too: --spec <(...) */
    rt_status fst = trn_flags_parse(argc, argv, &o, &help, &next, &err);
    const char *spec_path = o.spec, *job_dir = o.job_dir;
    if (fst == RT_OK && help) {
        char *u = trn_usage();
        fputs(u ? u : "predict-train: out of memory\n", u ? stdout : stderr);
        free(u);
        code = u ? 0 : 1;
        goto out;
    }
    if (fst != RT_OK) {
        fprintf(stderr, "predict-train: %s\n", err.msg);
        goto out;
    }
    if (next < argc) {
        fprintf(stderr, "predict-train: unexpected argument \"%s\" (flags start with --; "
                        "see --help)\n", argv[next]);
        goto out;
    }
    if (!spec_path) {
        fprintf(stderr, "predict-train: --spec FILE is required (see --help)\n");
        goto out;
    }
    if (o.first_layer_size < 0 && (o.num_layers >= 0 || o.scale_factor >= 0)) {
        fprintf(stderr, "predict-train: --num-layers and --scale-factor need "
                        "--first-layer-size\n");
        goto out;
    }
    if (rt_file_read(AT_FDCWD, spec_path, 64u << 20, RT_READ_ANY_FILE, &text, NULL, &err)) {
        fprintf(stderr, "predict-train: %s\n", err.msg);
        goto out;
    }
    if (rt_cfg_parse_json(text, strlen(text), &spec, &err) != RT_OK) {
        fprintf(stderr, "predict-train: %s: %s\n", spec_path, err.msg);
        goto out;
    }
    if (trn_spec_apply_overrides(spec, &o, &err) != RT_OK ||
        trn_config_from_spec(spec, &c, &err) != RT_OK) {
        fprintf(stderr, "predict-train: %s: %s\n", spec_path, err.msg);
        goto out;
    }
    if (o.on_bad_row >= 0)
        c.bad_rows = (trn_bad_row_policy)o.on_bad_row;
    if (o.input_format >= 0)
        c.input_format = (rt_input_format)o.input_format;
    if (o.progress >= 0)
        c.progress = (trn_progress_mode)o.progress;
    if (o.verbosity >= 0) {
        c.log_level = o.verbosity;
        if (o.verbosity > 1 && (o.progress < 0 || c.progress == TRN_PROGRESS_LINES))
            c.progress = TRN_PROGRESS_QUIET; /* the progress lines are INFO lines */
    }
    {
        /* vocabulary_file columns name files next to the spec */
        const char *slash = strrchr(spec_path, '/');
        c.assets_dir = slash ? strndup(spec_path, (size_t)(slash - spec_path == 0 ? 1 : slash - spec_path))
                             : strdup(".");
        if (!c.assets_dir) {
            fprintf(stderr, "predict-train: out of memory\n");
            goto out;
        }
    }
    if (job_dir && !(c.job_dir = strdup(job_dir))) {
        fprintf(stderr, "predict-train: out of memory\n");
        goto out;
    }
    if (!job_dir && !(c.job_dir = temp_job_dir(comm, c.log_level))) {
        code = 1;
        goto out;
    }
    c.comm = comm;
    c.stop_signal = &sig;
    c.trace_endpoint = o.trace_endpoint;
    if (comm && comm->set_stall)
        comm->set_stall(comm->ctx, c.mpi_stall_warn_secs, c.mpi_stall_abort_secs, c.log_level);
    if (trn_dist_check_spec(comm, spec, &c, &err) != RT_OK) {
        if (err.msg[0])
            fprintf(stderr, "predict-train: %s\n", err.msg);
        code = 3;
        goto out;
    }
    rt_status st = trn_train_and_evaluate(spec, &c, NULL, &err);
    if (st != RT_OK) {
        if (comm && comm->size > 1 && comm->rank > 0)
            fprintf(stderr, "predict-train: rank %d: %s\n", comm->rank, err.msg);
        else
            fprintf(stderr, "predict-train: %s\n", err.msg);
        code = st == RT_ERR_INVALID ? 2 : 1;
        goto out;
    }
    code = sig == SIGINT ? 130 : sig ? 143 : 0;
out:
    if (code != 0 && !job_dir && c.job_dir && (!comm || comm->rank == 0)) {
        /* a temporary job dir of a run refused before it wrote anything goes
         * again (rmdir fails, and the directory stays, when it holds more) */
        char lock[4200];
        snprintf(lock, sizeof lock, "%s/.predict-train.lock", c.job_dir);
        unlink(lock);
        if (rmdir(c.job_dir) != 0)
            fprintf(stderr, "predict-train: the run's files are in %s\n", c.job_dir);
    }
    cJSON_Delete(spec);
    free(text);
    trn_config_free(&c);
    trn_overrides_free(&o);
    return code;
}
