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

static void usage(FILE *fp)
{
    fputs("usage: predict-train --spec FILE [options]\n"
          "  --train-files LIST     training CSV files (comma-separated, globs allowed)\n"
          "  --eval-files LIST      evaluation CSV files\n"
          "  --job-dir DIR          checkpoints, eval/metrics.jsonl, export/<name>/<version>/\n"
          "  --train-steps N        max_steps (absolute global step)\n"
          "  --num-epochs N         passes over the training files (0 = until max_steps)\n"
          "  --eval-steps N         evaluation batches (0 = the whole eval set)\n"
          "  --batch-size N         (also --train-batch-size, task.py's name)\n"
          "  --eval-batch-size N    evaluation batch size (eval.batch_size)\n"
          "  --export-format F      JSON | CSV | EXAMPLE (the serving input function)\n"
          "  --seed N\n"
          "  --first-layer-size N --num-layers N --scale-factor X\n"
          "                         DNN hidden units max(2, int(N * X^i)), i < num-layers\n"
          "  --embedding-size N     dimension of every embedding_column and\n"
          "                         shared_embedding_columns\n"
          "  --memory-limit-mb N    refuse a model needing more than N MiB (0 = no check;\n"
          "                         default: the memory this machine can give)\n"
          "  --on-bad-row skip|stop malformed CSV rows: skip and count, or stop (default)\n"
          "  --mpi-stall-warn-secs S   distributed: rank 0 names the ranks it has waited\n"
          "                         for S seconds in one exchange (default 60; 0 = never)\n"
          "  --mpi-stall-abort-secs S  distributed: rank 0 ends the job with an error\n"
          "                         naming them after S seconds (default 0 = never:\n"
          "                         synchronous training waits)\n"
          "  --progress auto|bar|lines|quiet\n"
          "  --verbosity LEVEL      DEBUG | INFO (default) | WARN | ERROR | FATAL: INFO lines\n"
          "                         and progress only up to INFO (TF's logging verbosity)\n"
          "Flags may be spelled with underscores (task.py's --train_files); TensorFlow's\n"
          "--max_steps is --train-steps and --model_dir is --job-dir.\n"
          "Without --job-dir a temporary directory is used (its path is printed).\n"
          "SIGINT/SIGTERM: the current step ends, a checkpoint is written, exit 130/143.\n"
          "  -h, --help\n"
          "Distributed: mpirun -np N predict-train ... (the same flags; docs/distributed.md)\n",
          fp);
}

/* The flags (without "--"), as --help lists them. */
static const char *const FLAGS[] = {
    "spec", "train-files", "eval-files", "job-dir", "train-steps", "num-epochs", "eval-steps",
    "batch-size", "train-batch-size", "eval-batch-size", "export-format", "seed",
    "first-layer-size", "num-layers", "scale-factor", "embedding-size", "memory-limit-mb",
    "on-bad-row", "progress", "verbosity", "mpi-stall-warn-secs", "mpi-stall-abort-secs",
    "help"};

/*
 * The flag arg names ("--name", no value), as FLAGS spells it, or NULL.
 * Underscores are dashes (task.py's and TF's --train_files, --num_epochs),
 * and TensorFlow's names of the same settings are aliases: --max_steps is
 * --train-steps (an absolute global step in both), --model_dir is --job-dir.
 */
/* TensorFlow's names of the same settings: --max_steps is --train-steps (an
 * absolute global step in both), --model_dir is --job-dir. */
static const char *const ALIASES[][2] = {{"max-steps", "train-steps"}, {"model-dir", "job-dir"}};

/*
 * The flag arg names ("--name", no value), as FLAGS spells it, or NULL.
 * Underscores are dashes (task.py's and TF's --train_files, --num_epochs),
 * and ALIASES are their flags.
 */
static const char *canonical_flag(const char *arg)
{
    char n[64];
    size_t len = strlen(arg);
    if (len < 3 || len - 2 >= sizeof n || strncmp(arg, "--", 2) != 0)
        return strcmp(arg, "-h") == 0 ? "help" : NULL;
    for (size_t i = 0; i + 2 <= len; i++)
        n[i] = arg[2 + i] == '_' ? '-' : arg[2 + i];
    for (size_t i = 0; i < sizeof ALIASES / sizeof *ALIASES; i++)
        if (strcmp(n, ALIASES[i][0]) == 0)
            return ALIASES[i][1];
    for (size_t i = 0; i < sizeof FLAGS / sizeof *FLAGS; i++)
        if (strcmp(n, FLAGS[i]) == 0)
            return FLAGS[i];
    return NULL;
}

/* The flag an unknown "--name" probably meant (an alias's flag when the
 * alias is nearest), or NULL. */
static const char *suggest_flag(const char *arg)
{
    enum { NF = sizeof FLAGS / sizeof *FLAGS, NA = sizeof ALIASES / sizeof *ALIASES };
    const char *names[NF + NA];
    for (size_t i = 0; i < NF; i++)
        names[i] = FLAGS[i];
    for (size_t i = 0; i < NA; i++)
        names[NF + i] = ALIASES[i][0];
    const char *near = rt_nearest_name(arg + 2, names, NF + NA);
    for (size_t i = 0; near && i < NA; i++)
        if (near == ALIASES[i][0])
            near = ALIASES[i][1];
    return near;
}

static int parse_i64(const char *flag, const char *s, int64_t lo, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo) {
        fprintf(stderr, "predict-train: %s: \"%s\" is not an integer >= %lld\n", flag, s,
                (long long)lo);
        return -1;
    }
    *out = v;
    return 0;
}

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
static int train_main(const char *spec_path, const char *job_dir, const trn_overrides *ov,
                      const char *bad_row, const char *progress, const char *verbosity,
                      const trn_comm *comm);

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
    const char *spec_path = NULL, *job_dir = NULL, *bad_row = NULL, *progress = NULL,
               *verbosity = NULL;
    trn_overrides o;
    trn_overrides_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            fprintf(stderr, "predict-train: unexpected argument \"%s\" (flags start with --; "
                            "see --help)\n", a);
            return 2;
        }
        /* --flag=value or --flag value; TF's and task.py's spellings too */
        char flag[64];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        size_t fl = eq ? (size_t)(eq - a) : strlen(a);
        if (fl >= sizeof flag) {
            fprintf(stderr, "predict-train: unknown flag %.*s (see --help)\n", (int)fl, a);
            return 2;
        }
        memcpy(flag, a, fl);
        flag[fl] = '\0';
        const char *known = canonical_flag(flag);
        if (!known) {
            const char *near = suggest_flag(flag);
            if (near)
                fprintf(stderr, "predict-train: unknown flag %s (did you mean --%s?)\n", flag,
                        near);
            else
                fprintf(stderr, "predict-train: unknown flag %s (see --help)\n", flag);
            return 2;
        }
        if (strcmp(known, "help") == 0) {
            usage(stdout);
            return 0;
        }
        snprintf(flag, sizeof flag, "--%s", known);
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            fprintf(stderr, "predict-train: %s needs a value\n", flag);
            return 2;
        }
        int rc = 0;
        if (strcmp(flag, "--spec") == 0)
            spec_path = val;
        else if (strcmp(flag, "--train-files") == 0)
            o.train_files = val;
        else if (strcmp(flag, "--eval-files") == 0)
            o.eval_files = val;
        else if (strcmp(flag, "--job-dir") == 0)
            job_dir = val;
        else if (strcmp(flag, "--train-steps") == 0)
            rc = parse_i64(flag, val, 0, &o.train_steps);
        else if (strcmp(flag, "--num-epochs") == 0)
            rc = parse_i64(flag, val, 0, &o.num_epochs);
        else if (strcmp(flag, "--eval-steps") == 0)
            rc = parse_i64(flag, val, 0, &o.eval_steps);
        else if (strcmp(flag, "--batch-size") == 0 || strcmp(flag, "--train-batch-size") == 0)
            rc = parse_i64(flag, val, 1, &o.batch_size);
        else if (strcmp(flag, "--eval-batch-size") == 0)
            rc = parse_i64(flag, val, 1, &o.eval_batch_size);
        else if (strcmp(flag, "--verbosity") == 0)
            verbosity = val;
        else if (strcmp(flag, "--export-format") == 0)
            o.export_format = val;
        else if (strcmp(flag, "--seed") == 0)
            rc = parse_i64(flag, val, 0, &o.seed);
        else if (strcmp(flag, "--first-layer-size") == 0)
            rc = parse_i64(flag, val, 1, &o.first_layer_size);
        else if (strcmp(flag, "--num-layers") == 0)
            rc = parse_i64(flag, val, 1, &o.num_layers);
        else if (strcmp(flag, "--embedding-size") == 0)
            rc = parse_i64(flag, val, 1, &o.embedding_size);
        else if (strcmp(flag, "--memory-limit-mb") == 0)
            rc = parse_i64(flag, val, 0, &o.memory_limit_mb);
        else if (strcmp(flag, "--scale-factor") == 0) {
            char *end;
            o.scale_factor = strtod(val, &end);
            if (end == val || *end || !(o.scale_factor > 0)) {
                fprintf(stderr, "predict-train: --scale-factor: \"%s\" is not a number > 0\n",
                        val);
                rc = -1;
            }
        } else if (strcmp(flag, "--mpi-stall-warn-secs") == 0 ||
                   strcmp(flag, "--mpi-stall-abort-secs") == 0) {
            char *end;
            double v = strtod(val, &end);
            if (end == val || *end || !(v >= 0 && v <= 1e7)) {
                fprintf(stderr, "predict-train: %s: \"%s\" is not a number of seconds in "
                                "[0, 1e7]\n", flag, val);
                rc = -1;
            } else if (strstr(flag, "warn"))
                o.mpi_stall_warn_secs = v;
            else
                o.mpi_stall_abort_secs = v;
        } else if (strcmp(flag, "--on-bad-row") == 0)
            bad_row = val;
        else if (strcmp(flag, "--progress") == 0)
            progress = val;
        /* every name of FLAGS is handled above */
        if (rc)
            return 2;
    }
    if (!spec_path) {
        fprintf(stderr, "predict-train: --spec FILE is required (see --help)\n");
        return 2;
    }
    if (o.first_layer_size < 0 && (o.num_layers >= 0 || o.scale_factor >= 0)) {
        fprintf(stderr, "predict-train: --num-layers and --scale-factor need "
                        "--first-layer-size\n");
        return 2;
    }

    return train_main(spec_path, job_dir, &o, bad_row, progress, verbosity, comm);
}

/* The choices given by name on the command line (--on-bad-row, --progress,
 * --verbosity; NULL: not given) into c; -1 after saying which is wrong. */
static int apply_choices(trn_config *c, const char *bad_row, const char *progress,
                         const char *verbosity)
{
    if (bad_row) {
        if (strcmp(bad_row, "skip") == 0)
            c->bad_rows = TRN_BAD_ROW_SKIP;
        else if (strcmp(bad_row, "stop") == 0)
            c->bad_rows = TRN_BAD_ROW_STOP;
        else {
            fprintf(stderr, "predict-train: --on-bad-row: \"%s\" is not skip or stop\n",
                    bad_row);
            return -1;
        }
    }
    if (progress) {
        if (strcmp(progress, "auto") == 0)
            c->progress = TRN_PROGRESS_AUTO;
        else if (strcmp(progress, "bar") == 0)
            c->progress = TRN_PROGRESS_BAR;
        else if (strcmp(progress, "lines") == 0)
            c->progress = TRN_PROGRESS_LINES;
        else if (strcmp(progress, "quiet") == 0)
            c->progress = TRN_PROGRESS_QUIET;
        else {
            fprintf(stderr, "predict-train: --progress: \"%s\" is not auto, bar, lines or "
                            "quiet\n", progress);
            return -1;
        }
    }
    if (verbosity) {
        static const char *const levels[] = {"DEBUG", "INFO", "WARN", "ERROR", "FATAL", NULL};
        int lv = -1;
        for (int k = 0; levels[k]; k++)
            if (strcmp(verbosity, levels[k]) == 0)
                lv = k;
        if (lv < 0) {
            fprintf(stderr, "predict-train: --verbosity: \"%s\" is not DEBUG, INFO, WARN, "
                            "ERROR or FATAL\n", verbosity);
            return -1;
        }
        c->log_level = lv;
        if (lv > 1 && (!progress || c->progress == TRN_PROGRESS_LINES))
            c->progress = TRN_PROGRESS_QUIET; /* the progress lines are INFO lines */
    }
    return 0;
}

/* main's work once the flags are read: the spec with its overrides, the
 * config, the job dir (a temporary one without --job-dir, removed again
 * when the run is refused before it writes), then trn_train_and_evaluate.
 * Returns the exit status as run_main does. */
static int train_main(const char *spec_path, const char *job_dir, const trn_overrides *ov,
                      const char *bad_row, const char *progress, const char *verbosity,
                      const trn_comm *comm)
{
    rt_err err;
    err.msg[0] = '\0';
    int code = 2, sig = 0;
    trn_config c;
    trn_config_init(&c);
    cJSON *spec = NULL;
    char *text = NULL; /* a pipe is fine too: --spec <(...) */
    if (rt_read_file(AT_FDCWD, spec_path, 64u << 20, RT_READ_ANY_FILE, &text, NULL, &err)) {
        fprintf(stderr, "predict-train: %s\n", err.msg);
        goto out;
    }
    if (rt_cfg_parse_json(text, strlen(text), &spec, &err) != RT_OK) {
        fprintf(stderr, "predict-train: %s: %s\n", spec_path, err.msg);
        goto out;
    }
    if (trn_spec_apply_overrides(spec, ov, &err) != RT_OK ||
        trn_config_from_spec(spec, &c, &err) != RT_OK) {
        fprintf(stderr, "predict-train: %s: %s\n", spec_path, err.msg);
        goto out;
    }
    if (apply_choices(&c, bad_row, progress, verbosity) != 0)
        goto out;
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
    return code;
}
