/*
 * pm_batch.c — predict-model batch-predict: scores data files offline as
 * Vertex AI's batch prediction jobs (and CMLE's `jobs submit prediction`) do,
 * on one core, several threads, or the ranks of an MPI job.
 *
 * The job: the input files are cut into units (a file, or for a large plain
 * file byte ranges of --shard-bytes cut at row boundaries); unit k writes
 * DIR/prediction-<model>-<UTC time>/predictions_<k>.jsonl (and
 * errors_<k>.jsonl when some of its rows failed), each atomically, the
 * predictions file last: a unit whose predictions file exists is done. A
 * re-run of the same job (same model version, inputs and options: the
 * fingerprint in job.json) finds the unfinished job directory and does only
 * the missing units, once it has checked that the input is what the job
 * read (sizes in job.json, each scored shard's digest: pm_batch_inputs.c).
 * When every unit is done, rank 0 writes completion.json (state and
 * successful, failed and incomplete counts).
 *
 * Ranks: under mpirun (or srun, any PMI launcher) each rank takes the units
 * k with k % size == rank, from the launcher's environment
 * (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE); there are no MPI calls and
 * no MPI library in predict-model: rank 0 makes the job directory, the
 * others wait for it; rank 0 waits for every unit's predictions file before
 * it writes the completion record. A killed rank ends the job (mpirun stops
 * the others); the re-run finishes only what is missing. Threads (--threads)
 * take units in turn within a rank.
 */
#include "pm.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* batch-predict's flags (pm_args_read) */
typedef struct batch_flags {
    char *dir, *label, *config, *fmt, *out_dir, *key, *incl, *excl, *itype, *trace;
    rt_setting_list input;
    int64_t version; /* -1: none */
    int pfmt;
    int batch_size, threads;
    size_t skip;
    uint64_t shard_bytes, max_line;
    int progress; /* -1 auto, 0 quiet, 1 lines, 2 bar */
} batch_flags;

#define BF(f, T)                                                                               \
    (offsetof(batch_flags, f) +                                                                \
     0 * sizeof(char[_Generic(((batch_flags *)0)->f, T: 1, default: -1)]))
#define BSTR(n, f, a, h)                                                                       \
    {.name = n, .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = BF(f, char *), .arg = a,    \
     .help = h}

static const rt_setting_choice PREDICTIONS_FORMATS[] = {{"jsonl", 0}, {"csv", 1}, {NULL, 0}};
static const rt_setting_choice PROGRESS[] = {
    {"auto", -1}, {"bar", 2}, {"lines", 1}, {"quiet", 0}, {NULL, 0}};

static const rt_setting FLAGS[] = {
    {.name = "dir", .aliases = "model-dir", .type = RT_SET_STR, .where = RT_SET_FLAG,
     .offset = BF(dir, char *), .arg = "EXPORT_BASE",
     .help = "the model's base directory (its newest version), or a version directory"},
    {.name = "version", .type = RT_SET_I64, .where = RT_SET_FLAG | RT_SET_NODEFAULT, .lo = 0,
     .hi = INT64_MAX, .def = -1, .offset = BF(version, int64_t), .arg = "N",
     .help = "the version N of --dir"},
    BSTR("label", label, "L",
         "the version predictd's config labels L (with --config: models[].version_labels of "
         "the model whose base_path is --dir)"),
    BSTR("config", config, "PREDICTD_JSON", "predictd's JSON config, read for --label only"),
    {.name = "input", .type = RT_SET_LIST, .where = RT_SET_FLAG, .hi = PM_MAX_LIST,
     .offset = BF(input, rt_setting_list), .arg = "FILES",
     .help = "input files (repeatable; comma lists and globs)"},
    {.name = "instances-format", .aliases = "data-format", .type = RT_SET_STR,
     .where = RT_SET_FLAG, .offset = BF(fmt, char *), .arg = "F", .help =
         "jsonl (the default; TEXT, JSON), csv, tf-record (TF_RECORD), tf-record-gzip "
         "(TF_RECORD_GZIP), file-list"},
    {.name = "predictions-format", .type = RT_SET_ENUM, .where = RT_SET_FLAG,
     .choices = PREDICTIONS_FORMATS, .offset = BF(pfmt, int),
     .help = "jsonl (the default) or csv (predictions_0001.csv ...)"},
    {.name = "output-dir", .aliases = "output-path", .type = RT_SET_STR, .where = RT_SET_FLAG,
     .offset = BF(out_dir, char *), .arg = "DIR", .help = "where the job's directory is made"},
    BSTR("key-field", key, "NAME",
         "output {\"key\": the instance's NAME, ...}; NAME is not sent"),
    BSTR("included-fields", incl, "A,B", "send only these fields (in this order)"),
    BSTR("excluded-fields", excl, "A,B", "send every field but these"),
    BSTR("instance-type", itype, "T",
         "object (the default) or array (the values, in order)"),
    {.name = "batch-size", .type = RT_SET_INT, .where = RT_SET_FLAG, .lo = 1, .hi = 100000,
     .def = 64, .offset = BF(batch_size, int), .arg = "N",
     .help = "instances per request to the model"},
    {.name = "threads", .type = RT_SET_INT, .where = RT_SET_FLAG, .lo = 1, .hi = 256, .def = 1,
     .offset = BF(threads, int), .arg = "N", .help = "shards scored at once in this process"},
    {.name = "skip-header-lines", .type = RT_SET_SIZE, .where = RT_SET_FLAG, .lo = 0,
     .hi = 1000000, .offset = BF(skip, size_t), .arg = "N",
     .help = "lines skipped at the top of each CSV file"},
    {.name = "shard-bytes", .type = RT_SET_U64, .where = RT_SET_FLAG, .lo = 1,
     .hi = INT64_MAX, .def = 64 << 20, .offset = BF(shard_bytes, uint64_t), .arg = "N",
     .help = "cut plain files larger than N bytes into shards"},
    {.name = "max-line-bytes", .type = RT_SET_U64, .where = RT_SET_FLAG, .lo = 1,
     .hi = 1u << 30, .def = 16 << 20, .offset = BF(max_line, uint64_t), .arg = "N",
     .help = "a longer input line is an error record (not read into memory); the next line "
             "is read"},
    BSTR("trace-endpoint", trace, "URL",
         "send OpenTelemetry spans of the job (batch-predict, a shard span per unit scored) as "
         "OTLP/HTTP JSON to this http:// collector URL when it ends"),
    {.name = "progress", .type = RT_SET_ENUM, .where = RT_SET_FLAG, .choices = PROGRESS,
     .def = -1, .offset = BF(progress, int),
     .help = "auto: a bar on a terminal, lines otherwise"},
};

/* The comma list s as a malloc'd array of malloc'd strings. */
static const char **split_list(const char *s, size_t *n)
{
    char *copy = strdup(s), *save = NULL;
    const char **v = NULL;
    size_t cap = 0;
    *n = 0;
    if (!copy)
        return NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (rt_grow(&v, &cap, *n + 1, sizeof *v) != 0)
            break;
        v[(*n)++] = strdup(t);
    }
    free(copy);
    return v;
}

/* -------------------------------------------------------------- ranks */

static long env_long(const char *a, const char *b)
{
    const char *s = getenv(a);
    if (!s)
        s = getenv(b);
    return s ? strtol(s, NULL, 10) : -1;
}

/* ------------------------------------------------------ --label, --config */

/* The version that label names for the model whose base_path is dir in
 * predictd's JSON config file cfg_path (models[].version_labels; a relative
 * base_path is relative to the config file's directory, as predictd reads
 * it). OUT: *version (malloc'd digits). Errors name the file and the JSON
 * path. Only the JSON config is read: TF Serving's text format is refused. */
/* err's message, prefixed "--config CFG: " (and suffixed with more). */
static rt_status cfg_err(rt_err *err, rt_status st, const char *cfg, const char *more)
{
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    return rt_err_set(err, st, "--config %s: %s%s", cfg, m, more);
}

static rt_status label_version(const char *cfg_path, const char *dir, const char *label,
                               char **version, rt_err *err)
{
    char *text = NULL, want[PATH_MAX], have[PATH_MAX], cfg_dir[PATH_MAX];
    size_t len = 0;
    cJSON *root = NULL;
    rt_status st = rt_file_read(AT_FDCWD, cfg_path, 16u << 20, 0, &text, &len, err);
    if (st)
        return st;
    if (!realpath(dir, want)) {
        st = rt_err_set(err, RT_ERR_NOTFOUND, "--dir %s: %s", dir, strerror(errno));
        goto out;
    }
    if ((st = rt_cfg_parse_json(text, len, &root, err))) {
        cfg_err(err, st, cfg_path, " (only predictd's JSON config is read, not TF Serving's "
                "text format: give --version N)");
        goto out;
    }
    snprintf(cfg_dir, sizeof cfg_dir, "%s", cfg_path);
    char *slash = strrchr(cfg_dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(cfg_dir, sizeof cfg_dir, ".");
    const cJSON *models = NULL, *m;
    if ((st = rt_cfg_array(root, "", "models", RT_CFG_REQUIRED, &models, err))) {
        cfg_err(err, st, cfg_path, "");
        goto out;
    }
    long i = 0;
    cJSON_ArrayForEach(m, models)
    {
        char path[64];
        snprintf(path, sizeof path, "models[%ld]", i++);
        const char *bp = NULL;
        if (rt_cfg_str(m, path, "base_path", 0, &bp, err) != RT_OK || !bp)
            continue;
        char full[PATH_MAX * 2];
        snprintf(full, sizeof full, "%s%s%s", bp[0] == '/' ? "" : cfg_dir,
                 bp[0] == '/' ? "" : "/", bp);
        if (!realpath(full, have) || strcmp(have, want) != 0)
            continue;
        const cJSON *labels = NULL, *l;
        if ((st = rt_cfg_object(m, path, "version_labels", 0, &labels, err))) {
            cfg_err(err, st, cfg_path, "");
            goto out;
        }
        l = labels ? cJSON_GetObjectItemCaseSensitive(labels, label) : NULL;
        if (!l) {
            st = rt_err_set(err, RT_ERR_NOTFOUND, "--config %s: %s.version_labels has no "
                            "label \"%s\"", cfg_path, path, label);
            goto out;
        }
        int64_t v = -1;
        char key[300];
        snprintf(key, sizeof key, "version_labels.%s", label);
        if (cJSON_IsString(l) && l->valuestring[0] &&
            strspn(l->valuestring, "0123456789") == strlen(l->valuestring) &&
            strlen(l->valuestring) < 19)
            v = strtoll(l->valuestring, NULL, 10);
        else if ((st = rt_cfg_to_int(l, path, key, 0, INT64_MAX, &v, err))) {
            cfg_err(err, st, cfg_path, "");
            goto out;
        }
        if (!(*version = malloc(24))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        snprintf(*version, 24, "%lld", (long long)v);
        goto out;
    }
    st = rt_err_set(err, RT_ERR_NOTFOUND, "--config %s: no model in models[] whose base_path "
                    "is --dir %s", cfg_path, dir);
out:
    cJSON_Delete(root);
    free(text);
    return st;
}

/* ------------------------------------------------------------- the job */

typedef struct run {
    pm_batch_job job;
    pm_batch_unit *units;
    size_t n_units;
    char *dir;          /* the job's directory */
    int width;          /* digits of shard numbers */
    size_t next;        /* the next unit index to try (threads, under mu) */
    long rank, size;
    pthread_mutex_t mu;
    rt_status st;
    rt_err err;
    uint64_t done_units, ok, failed;
    uint64_t lost;      /* data losses completion.json reports */
    int progress;       /* 0 quiet, 1 lines, 2 bar */
    double t0;
    rt_otlp *trace;     /* --trace-endpoint's spans (under mu), or NULL */
    int trace_root;
} run;

static void shard_path(const run *r, const char *what, size_t k, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s_%0*zu.%s", r->dir, what, r->width, k + 1,
             r->job.csv_out ? "csv" : "jsonl");
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void show_progress(run *r, size_t k, const pm_batch_out *o)
{
    if (!r->progress)
        return;
    double secs = rt_time_seconds(0) - r->t0;
    if (r->progress == 2) {
        size_t mine = (r->n_units + (size_t)r->size - 1 - (size_t)r->rank) / (size_t)r->size;
        int w = 30, fill = mine ? (int)(w * r->done_units / mine) : w;
        fprintf(stderr, "\r[%.*s%*s] %llu/%zu shards, %llu instances, %llu failed, %.0fs",
                fill, "##############################", w - fill, "",
                (unsigned long long)r->done_units, mine, (unsigned long long)r->ok,
                (unsigned long long)r->failed, secs);
        fflush(stderr);
        return;
    }
    fprintf(stderr, "INFO: batch-predict: rank %ld: shard %zu done: %llu predictions, %llu "
            "errors (%.1fs)\n", r->rank, k + 1, (unsigned long long)o->ok,
            (unsigned long long)o->failed, secs);
}

/* Scores the units of this rank that are not done yet; threads share them. */
static void *worker(void *arg)
{
    run *r = arg;
    rt_ctx *c = rt_ctx_new();
    pm_batch_out o;
    rt_buf_init(&o.predictions);
    rt_buf_init(&o.errors);
    for (;;) {
        pthread_mutex_lock(&r->mu);
        size_t k = r->next;
        while (k < r->n_units && (long)(k % (size_t)r->size) != r->rank)
            k++;
        r->next = k + 1;
        int stop = r->st != RT_OK || k >= r->n_units || !c;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        char pp[PATH_MAX], ep[PATH_MAX];
        shard_path(r, "predictions", k, pp, sizeof pp);
        shard_path(r, "errors", k, ep, sizeof ep);
        if (exists(pp))
            continue; /* done by an earlier run of the job */
        rt_buf_reset(&o.predictions);
        rt_buf_reset(&o.errors);
        o.ok = o.failed = 0;
        pthread_mutex_lock(&r->mu);
        int span = rt_otlp_begin(r->trace, "shard", r->trace_root);
        rt_otlp_attr(r->trace, span, "predictd.shard", (long long)k + 1);
        pthread_mutex_unlock(&r->mu);
        rt_err err;
        rt_status st = pm_batch_unit_run(&r->job, &r->units[k], c, &o, &err);
        if (st == RT_OK && o.errors.len > 0)
            st = rt_file_write(ep, o.errors.data, o.errors.len, &err);
        if (st == RT_OK) /* what it read, checked before a resume */
            st = pm_batch_shard_record(r->dir, r->width, k, &r->units[k], &err);
        if (st == RT_OK) /* last: the shard is done */
            st = rt_file_write(pp, o.predictions.data ? o.predictions.data : "",
                               o.predictions.len, &err);
        pthread_mutex_lock(&r->mu);
        rt_otlp_attr(r->trace, span, "predictd.instances", (long long)o.ok);
        rt_otlp_attr(r->trace, span, "predictd.failed_instances", (long long)o.failed);
        rt_otlp_end(r->trace, span, st != RT_OK);
        if (st != RT_OK && r->st == RT_OK) {
            r->st = st;
            r->err = err;
        }
        if (st == RT_OK) {
            r->done_units++;
            r->ok += o.ok;
            r->failed += o.failed;
            show_progress(r, k, &o);
        }
        pthread_mutex_unlock(&r->mu);
    }
    if (!c) {
        pthread_mutex_lock(&r->mu);
        if (r->st == RT_OK)
            r->st = rt_err_set(&r->err, RT_ERR_NOMEM, "out of memory");
        pthread_mutex_unlock(&r->mu);
    }
    rt_ctx_free(c);
    rt_buf_free(&o.predictions);
    rt_buf_free(&o.errors);
    return NULL;
}

/* The units: each file whole, or plain files above shard_bytes in ranges. */
static rt_status make_units(run *r, char **files, size_t n_files, uint64_t shard_bytes,
                            rt_err *err)
{
    size_t cap = 0;
    for (size_t i = 0; i < n_files; i++) {
        struct stat sb;
        if (stat(files[i], &sb) != 0)
            return rt_err_set(err, RT_ERR_IO, "%s: %s", files[i], strerror(errno));
        uint64_t size = (uint64_t)sb.st_size;
        uint64_t *cuts = NULL;
        size_t n = 1;
        int gz = 0;
        if (r->job.format == PM_IN_TFRECORD || r->job.format == PM_IN_TFRECORD_GZIP) {
            rt_input_format f;
            rt_status st = rt_tfrecord_sniff(files[i], &f, err);
            if (st == RT_OK && f == RT_INPUT_CSV)
                st = rt_err_set(err, RT_ERR_FORMAT, "%s: not a TFRecord file (its first 12 "
                                "bytes are no record header)", files[i]);
            if (st)
                return st;
            gz = f == RT_INPUT_TFRECORD_GZIP;
            if (!gz && size > shard_bytes) {
                if ((st = rt_tfrecord_cuts(files[i], shard_bytes, &cuts, &n, err)))
                    return st;
            }
        } else if (size > shard_bytes) {
            n = (size_t)((size + shard_bytes - 1) / shard_bytes);
        }
        for (size_t k = 0; k < n; k++) {
            if (rt_grow(&r->units, &cap, r->n_units + 1, sizeof *r->units) != 0) {
                free(cuts);
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            }
            pm_batch_unit *u = &r->units[r->n_units++];
            u->path = files[i];
            if (cuts) {
                u->start = cuts[k];
                u->end = k + 1 < n ? cuts[k + 1] : 0;
            } else {
                u->start = n > 1 ? k * shard_bytes : 0;
                u->end = n > 1 && k + 1 < n ? (k + 1) * shard_bytes : 0;
            }
        }
        free(cuts);
    }
    return RT_OK;
}

/* The job's fingerprint: what makes a re-run the same job — the model
 * version's path, the input files' paths and the options. Their contents
 * are not in it: job.json records what each unit read and a resume over
 * changed input is refused (pm_batch_inputs.c). */
static uint64_t fingerprint(const char *version_dir, char **files, size_t n_files,
                            const char *const *opts, size_t n_opts)
{
    rt_buf b;
    rt_buf_init(&b);
    char real[PATH_MAX];
    rt_buf_puts(&b, realpath(version_dir, real) ? real : version_dir);
    for (size_t i = 0; i < n_files; i++)
        rt_buf_printf(&b, "\n%s", realpath(files[i], real) ? real : files[i]);
    for (size_t i = 0; i < n_opts; i++)
        rt_buf_printf(&b, "\n%s", opts[i] ? opts[i] : "-");
    uint64_t fp = rt_hash_fingerprint64(b.data ? b.data : "", b.len);
    rt_buf_free(&b);
    return fp;
}

/* The launch (mpirun, srun) this process is a rank of, from the launcher's
 * environment, into buf; "" when none is known. */
static void launch_id(char *buf, size_t n)
{
    const char *v = getenv("PMIX_NAMESPACE"), *step = getenv("SLURM_STEP_ID");
    if (v && *v)
        snprintf(buf, n, "pmix:%s", v);
    else if ((v = getenv("OMPI_MCA_ess_base_jobid")) && *v)
        snprintf(buf, n, "ompi:%s", v);
    else if ((v = getenv("SLURM_JOB_ID")) && *v)
        snprintf(buf, n, "slurm:%s.%s", v, step ? step : "");
    else
        buf[0] = '\0';
}

/* 1 when the job directory dir (under out_dir) was opened by rank 0 of the
 * launch launch (its .launch file, which rank 0 writes before it scores). */
static int same_launch(const char *out_dir, const char *dir, const char *launch)
{
    char p[PATH_MAX], *text = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/%s/.launch", out_dir, dir);
    if (!launch || !*launch || rt_file_read(AT_FDCWD, p, 4096, 0, &text, &len, NULL) != RT_OK)
        return 0;
    int same = len == strlen(launch) && memcmp(text, launch, len) == 0;
    free(text);
    return same;
}

/* An unfinished job directory of this fingerprint under out_dir (the newest
 * name), or NULL; with launch (ranks above 0), a finished one too when rank 0
 * of the same launch opened it: rank 0 may finish before another rank looks
 * (a rank without shards, or whose shards were done). */
static char *find_job(const char *out_dir, const char *prefix, uint64_t fp, const char *launch)
{
    DIR *d = opendir(out_dir);
    if (!d)
        return NULL;
    char *best = NULL;
    struct dirent *e;
    char want[64];
    snprintf(want, sizeof want, "\"fingerprint\": \"%016llx\"", (unsigned long long)fp);
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s/completion.json", out_dir, e->d_name);
        if (exists(p) && !same_launch(out_dir, e->d_name, launch))
            continue;
        snprintf(p, sizeof p, "%s/%s/job.json", out_dir, e->d_name);
        char *text = NULL;
        size_t len = 0;
        if (rt_file_read(AT_FDCWD, p, 64u << 20, 0, &text, &len, NULL) != RT_OK)
            continue;
        int match = strstr(text, want) != NULL;
        free(text);
        if (match && (!best || strcmp(e->d_name, best) > 0)) {
            free(best);
            best = strdup(e->d_name);
        }
    }
    closedir(d);
    return best;
}

/* The DATA_LOSS lines (google.rpc.Code 15) of an errors file's text: their
 * count, each message appended to losses as a JSON string (", "-separated). */
static uint64_t data_losses(const char *text, size_t len, int csv, rt_buf *losses)
{
    const char *mark = csv ? "{\"\"code\"\": 15, \"\"message\"\": " : "\"error\": {\"code\": 15, ";
    uint64_t n = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *line = strndup(p, ll);
        const char *at = line ? strstr(line, mark) : NULL;
        if (at) {
            cJSON *j = NULL;
            if (csv) { /* the errors field: quoted, its quotes doubled */
                rt_buf un;
                rt_buf_init(&un);
                for (const char *q = at; *q && !(q[0] == '"' && q[1] != '"'); q++) {
                    rt_buf_append(&un, q, 1);
                    if (q[0] == '"')
                        q++;
                }
                j = un.data ? cJSON_ParseWithLength(un.data, un.len) : NULL;
                rt_buf_free(&un);
            } else {
                cJSON *whole = cJSON_Parse(line);
                j = cJSON_DetachItemFromObjectCaseSensitive(whole, "error");
                cJSON_Delete(whole);
            }
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
            if (cJSON_IsString(m)) {
                rt_buf_puts(losses, losses->len ? ", " : "");
                rt_buf_json_string(losses, m->valuestring, strlen(m->valuestring));
            }
            cJSON_Delete(j);
            n++;
        }
        free(line);
        p += ll + 1;
    }
    return n;
}

/* completion.json: Vertex's completionStats, with the job's output. A data
 * loss (a TFRecord file that could not be read to its end) makes the state
 * JOB_STATE_PARTIALLY_SUCCEEDED, counts once in incompleteCount (the records
 * after it cannot be counted) and is named in "dataLoss"; r->lost counts them. */
static rt_status write_completion(run *r, rt_err *err)
{
    uint64_t ok = 0, failed = 0, incomplete = 0;
    rt_buf losses;
    rt_buf_init(&losses);
    for (size_t k = 0; k < r->n_units; k++) {
        char p[PATH_MAX];
        for (int which = 0; which < 2; which++) {
            shard_path(r, which ? "errors" : "predictions", k, p, sizeof p);
            char *text = NULL;
            size_t len = 0;
            rt_status st = rt_file_read(AT_FDCWD, p, SIZE_MAX - 1, 0, &text, &len, err);
            if (st == RT_ERR_NOTFOUND && which == 1)
                continue;
            if (st) {
                rt_buf_free(&losses);
                return st;
            }
            uint64_t lines = 0;
            for (size_t i = 0; i < len; i++)
                lines += text[i] == '\n';
            if (r->job.csv_out && lines > 0)
                lines--; /* the header */
            if (which == 1) {
                uint64_t lost = data_losses(text, len, r->job.csv_out, &losses);
                lines -= lost;
                incomplete += lost;
            }
            free(text);
            *(which ? &failed : &ok) += lines;
        }
    }
    rt_buf b;
    rt_buf_init(&b);
    rt_buf_printf(&b, "{\"state\": \"%s\", \"completionStats\": "
                  "{\"successfulCount\": %llu, \"failedCount\": %llu, \"incompleteCount\": "
                  "%llu}, \"shards\": %zu, \"outputInfo\": {\"outputDirectory\": ",
                  incomplete ? "JOB_STATE_PARTIALLY_SUCCEEDED" : "JOB_STATE_SUCCEEDED",
                  (unsigned long long)ok, (unsigned long long)failed,
                  (unsigned long long)incomplete, r->n_units);
    rt_buf_json_string(&b, r->dir, strlen(r->dir));
    rt_buf_puts(&b, "}");
    if (incomplete) {
        rt_buf_puts(&b, ", \"dataLoss\": [");
        rt_buf_append(&b, losses.data ? losses.data : "", losses.len);
        rt_buf_puts(&b, "]");
    }
    rt_buf_puts(&b, "}\n");
    r->lost = incomplete;
    rt_buf_free(&losses);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/completion.json", r->dir);
    rt_status st = rt_buf_failed(&b) ? rt_err_set(err, RT_ERR_NOMEM, "out of memory")
                                     : rt_file_write(p, b.data, b.len, err);
    rt_buf_free(&b);
    if (st == RT_OK && r->progress)
        fprintf(stderr, "%sINFO: batch-predict: %s: %llu predictions, %llu errors in %zu "
                "shards\n", r->progress == 2 ? "\n" : "", r->dir, (unsigned long long)ok,
                (unsigned long long)failed, r->n_units);
    return st;
}

/* The shared rank-0 work around the units: the job directory. */
static rt_status open_job(run *r, const char *out_dir, const char *model, uint64_t fp,
                          const char *version_dir, rt_err *err)
{
    char prefix[300];
    snprintf(prefix, sizeof prefix, "prediction-%s-", model);
    rt_status st = rt_file_mkdirs(out_dir, err);
    if (st)
        return st;
    char launch[300];
    launch_id(launch, sizeof launch);
    const char *mine = r->rank > 0 ? launch : NULL;
    char *name = find_job(out_dir, prefix, fp, mine);
    int found = name != NULL || r->rank > 0;
    if (!name && r->rank > 0) { /* rank 0 makes it: wait for it */
        for (int i = 0; i < 6000 && !name; i++) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            name = find_job(out_dir, prefix, fp, mine);
        }
        if (!name)
            return rt_err_set(err, RT_ERR_IO, "%s: rank 0 made no job directory in 300 s",
                              out_dir);
    }
    if (!name) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        struct tm tm;
        gmtime_r(&now.tv_sec, &tm);
        char when[64], tmp[PATH_MAX], fin[PATH_MAX];
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        size_t nl = strlen(prefix) + strlen(when) + 16;
        if (!(name = malloc(nl)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        snprintf(name, nl, "%s%s.%03dZ", prefix, when, (int)(now.tv_nsec / 1000000 % 1000));
        /* made whole under a hidden name, then renamed: the other ranks see
         * the directory only with its job.json */
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp-%ld", out_dir, name, (long)getpid());
        snprintf(fin, sizeof fin, "%s/%s", out_dir, name);
        if (mkdir(tmp, 0755) != 0) {
            free(name);
            return rt_err_set(err, RT_ERR_IO, "mkdir %s: %s", tmp, strerror(errno));
        }
        rt_buf b;
        rt_buf_init(&b);
        rt_buf_printf(&b, "{\"fingerprint\": \"%016llx\", \"model\": ", (unsigned long long)fp);
        rt_buf_json_string(&b, version_dir, strlen(version_dir));
        rt_buf_printf(&b, ", \"instancesFormat\": \"%s\", \"predictionsFormat\": \"%s\", "
                      "\"shards\": %zu, ", pm_in_format_name(r->job.format),
                      r->job.csv_out ? "csv" : "jsonl", r->n_units);
        st = pm_batch_inputs_json(r->units, r->n_units, &b, err);
        rt_buf_puts(&b, "}\n");
        char jp[PATH_MAX + 16];
        snprintf(jp, sizeof jp, "%s/job.json", tmp);
        if (st == RT_OK)
            st = rt_file_write(jp, b.data, b.len, err);
        snprintf(jp, sizeof jp, "%s/.launch", tmp);
        if (st == RT_OK && launch[0])
            st = rt_file_write(jp, launch, strlen(launch), err);
        rt_buf_free(&b);
        if (st == RT_OK)
            st = rt_file_rename_durable(tmp, fin, err);
        if (st) {
            rt_file_rmtree_at(AT_FDCWD, tmp);
            free(name);
            return st;
        }
    }
    size_t dl = strlen(out_dir) + strlen(name) + 2;
    r->dir = malloc(dl);
    if (r->dir)
        snprintf(r->dir, dl, "%s/%s", out_dir, name);
    free(name);
    if (!r->dir)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if (found && r->rank == 0 && launch[0]) { /* this launch's, before a shard is scored */
        char lp[PATH_MAX + 16];
        snprintf(lp, sizeof lp, "%s/.launch", r->dir);
        if ((st = rt_file_write(lp, launch, strlen(launch), err)))
            return st;
    }
    if (found) { /* a resume: only over the input the job read */
        char jp[PATH_MAX + 16], *text = NULL;
        size_t len = 0;
        snprintf(jp, sizeof jp, "%s/job.json", r->dir);
        if ((st = rt_file_read(AT_FDCWD, jp, 64u << 20, 0, &text, &len, err)))
            return st;
        st = pm_batch_inputs_check(text, len, r->dir, r->width, r->units, r->n_units, r->rank,
                                   r->size, err);
        free(text);
    }
    return st;
}

const pm_command pm_batch_command = {
    "batch-predict",
    "predict-model batch-predict (--dir EXPORT_BASE [--version N | --label L --config F]\n"
    "                            | --model-dir VERSION)\n"
    "                            --input FILE[,GLOB]... --output-dir DIR [flags]",
    "Scores data files offline as Vertex AI's batch prediction does: every instance's "
    "prediction is predictd's :predict answer for it, byte for byte. Output: "
    "DIR/prediction-<model>-<UTC time>/predictions_0001.jsonl ... with one {\"instance\": "
    "..., \"prediction\": ...} (or {\"key\": ..., \"prediction\": ...}) per line, "
    "errors_0001.jsonl ... with {\"instance\": ..., \"error\": {\"code\", \"message\"}} for "
    "the rows that failed (a bad row never stops the job), and completion.json when every "
    "shard is done. Each shard is written atomically; running the same job again resumes "
    "it, skipping finished shards. Under mpirun -np N the shards are shared among the ranks.",
    "docs/batch-prediction.md says how rows become instances.",
    FLAGS,
    sizeof FLAGS / sizeof FLAGS[0],
};

/* Checks flags f together (each was read alone by the table) and sets r's
 * job options and progress from them; *fields gets the malloc'd
 * --included-fields or --excluded-fields list (NULL without one). 0, or the
 * usage error's exit status. */
static int job_options(const batch_flags *f, run *r, const char ***fields)
{
    const pm_command *c = &pm_batch_command;
    const char *fmt = f->fmt, *incl = f->incl, *excl = f->excl, *itype = f->itype;
    *fields = NULL;
    if (!f->dir)
        return pm_usage_error(c, "%s", "missing --dir EXPORT_BASE (or --model-dir VERSION_DIR)");
    if (f->label && f->version >= 0)
        return pm_usage_error(c, "%s", "--label and --version: give one of them");
    if (f->label && !f->config)
        return pm_usage_error(c, "--label %s: version labels live in predictd's config: give "
                                 "--config PREDICTD_JSON too, or --version N", f->label);
    if (f->config && !f->label)
        return pm_usage_error(c, "%s", "--config is read only for --label");
    if (!f->input.n)
        return pm_usage_error(c, "%s", "missing --input FILE");
    if (!f->out_dir)
        return pm_usage_error(c, "%s", "missing --output-dir DIR");
    r->job.format = PM_IN_JSONL;
    if (fmt && pm_in_format_parse(fmt, &r->job.format) != 0)
        return pm_usage_error(c, "--instances-format \"%s\": expected jsonl, csv, tf-record, "
                                 "tf-record-gzip or file-list", fmt);
    r->job.csv_out = f->pfmt == 1;
    if (incl && excl)
        return pm_usage_error(c, "%s", "--included-fields and --excluded-fields: give one of "
                                       "them");
    if (itype && strcmp(itype, "object") != 0 && strcmp(itype, "array") != 0)
        return pm_usage_error(c, "--instance-type \"%s\": expected object or array", itype);
    r->progress = f->progress >= 0 ? f->progress : isatty(2) ? 2 : 1;
    r->job.batch_size = (size_t)(uint64_t)f->batch_size;
    r->job.skip_header = (size_t)(uint64_t)f->skip;
    r->job.max_line = (size_t)f->max_line;
    r->job.key_field = f->key;
    r->job.as_array = itype && strcmp(itype, "array") == 0;
    r->job.excluded = excl != NULL;
    if (incl || excl) {
        *fields = split_list(incl ? incl : excl, &r->job.n_fields);
        if (!*fields || r->job.n_fields == 0)
            return pm_usage_error(c, "%s", "--included-fields / --excluded-fields: give field "
                                           "names");
        r->job.fields = *fields;
    }
    return 0;
}

/* This process's rank among size from the launcher's environment (0 of 1
 * outside one); only rank 0 draws a progress bar. */
static void job_ranks(run *r)
{
    r->rank = env_long("OMPI_COMM_WORLD_RANK", "PMI_RANK");
    r->size = env_long("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
    if (r->rank < 0 || r->size < 1 || r->rank >= r->size)
        r->rank = 0, r->size = 1;
    if (r->rank > 0 && r->progress == 2)
        r->progress = 1;
}

/* Cuts files into r's units and finds or makes the job directory of this
 * job (its fingerprint: the version directory vdir, the files and the
 * options of f that change the output). */
static rt_status start_job(run *r, const batch_flags *f, const char *vdir, char **files,
                           size_t n_files, const Predictd__ModelDef *def, rt_err *err)
{
    uint64_t skip_h = f->skip, shard_bytes = f->shard_bytes;
    rt_status st = make_units(r, files, n_files, shard_bytes, err);
    if (st)
        return st;
    if (r->n_units < (size_t)r->size) { /* fewer shards than ranks: cut finer */
        uint64_t total = 0;
        for (size_t i = 0; i < n_files; i++) {
            struct stat sb;
            if (stat(files[i], &sb) == 0 && S_ISREG(sb.st_mode))
                total += (uint64_t)sb.st_size;
        }
        uint64_t finer = total / (uint64_t)r->size;
        if (finer > 0 && finer < shard_bytes) {
            free(r->units);
            r->units = NULL;
            r->n_units = 0;
            if ((st = make_units(r, files, n_files, finer, err)))
                return st;
            if (r->rank == 0 && r->progress)
                fprintf(stderr, "INFO: batch-predict: the input (%llu bytes) is less than one "
                        "shard (--shard-bytes %llu) for each of the %ld ranks: cut into shards "
                        "of %llu bytes (%zu shards)\n", (unsigned long long)total,
                        (unsigned long long)shard_bytes, r->size, (unsigned long long)finer,
                        r->n_units);
            shard_bytes = finer;
        }
    }
    if ((size_t)r->rank >= r->n_units && r->progress)
        fprintf(stderr, "INFO: batch-predict: rank %ld of %ld has no shard to score: the job "
                "has %zu shard%s (a gzip file is never cut, a TFRecord file only at its "
                "records)\n", r->rank, r->size, r->n_units, r->n_units == 1 ? "" : "s");
    r->width = 4;
    for (size_t n = r->n_units; n >= 10000; n /= 10)
        r->width++;
    char opts_num[128];
    snprintf(opts_num, sizeof opts_num, "%s %llu %llu %d%s %zu", pm_in_format_name(r->job.format),
             (unsigned long long)skip_h, (unsigned long long)shard_bytes, r->job.as_array,
             r->job.csv_out ? " csv" : "", r->job.max_line);
    const char *opts[] = {opts_num, f->key, f->incl, f->excl};
    uint64_t fp = fingerprint(vdir, files, n_files, opts, 4);
    const char *model = def->model_name && *def->model_name ? def->model_name : "model";
    return open_job(r, f->out_dir, model, fp, vdir, err);
}

/* Scores this rank's units on threads threads; then rank 0 waits for every
 * shard's predictions file, writes completion.json and prints the job's
 * directory. */
static rt_status run_units(run *r, uint64_t threads, rt_err *err)
{
    pthread_t tids[256];
    size_t started = 0;
    for (size_t t = 1; t < threads; t++)
        if (pthread_create(&tids[started], NULL, worker, r) == 0)
            started++;
    worker(r);
    for (size_t t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    if (r->st) {
        *err = r->err;
        return r->st;
    }
    if (r->rank == 0) { /* every shard's predictions file, then the record */
        for (size_t k = 0; k < r->n_units; k++) {
            char pp[PATH_MAX];
            shard_path(r, "predictions", k, pp, sizeof pp);
            while (!exists(pp)) {
                struct timespec ts = {0, 100 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
        rt_status st = write_completion(r, err);
        if (st)
            return st;
        printf("%s\n", r->dir);
    } else if (r->progress == 2) {
        fputc('\n', stderr);
    }
    return RT_OK;
}

/* The job's span ended and every span sent (a collector that does not
 * take them costs a WARNING line, not the job). */
static void trace_close(run *r, int rc)
{
    if (!r->trace)
        return;
    rt_otlp_attr(r->trace, r->trace_root, "predictd.shards", (long long)r->n_units);
    rt_otlp_attr(r->trace, r->trace_root, "predictd.instances", (long long)r->ok);
    rt_otlp_attr(r->trace, r->trace_root, "predictd.failed_instances", (long long)r->failed);
    rt_otlp_end(r->trace, r->trace_root, rc != 0);
    rt_err e = {{0}};
    if (rt_otlp_flush(r->trace, &e) != RT_OK)
        fprintf(stderr, "WARNING predict-model batch-predict: %s\n", e.msg);
    rt_otlp_close(r->trace);
    r->trace = NULL;
}

/* Runs the job of flags f: the options, the model version, the job
 * directory, the units. */
static int batch_predict(const batch_flags *f)
{
    const char *dir = f->dir;
    const char **fields = NULL;
    run r;
    memset(&r, 0, sizeof r);
    int rc = job_options(f, &r, &fields);
    if (rc)
        return rc;
    job_ranks(&r);
    pthread_mutex_init(&r.mu, NULL);
    r.t0 = rt_time_seconds(0);

    rc = 1;
    rt_err err = {{0}};

    char **files = NULL, *vdir = NULL, *base = NULL, *labelled = NULL;
    size_t n_files = 0;
    rt_model *m = NULL;
    rt_status st = RT_OK;
    int64_t version = f->version; /* -1: the newest */
    if (f->trace && rt_otlp_open(f->trace, "batch-predict", "--trace-endpoint", &r.trace, &err)) {
        rc = PM_EXIT_USAGE;
        goto fail;
    }
    r.trace_root = rt_otlp_begin(r.trace, "batch-predict", -1);
    if (f->label) {
        if ((st = label_version(f->config, dir, f->label, &labelled, &err)))
            goto fail;
        version = strtoll(labelled, NULL, 10); /* digits: label_version checked */
    }
    if (version >= 0) {
        size_t n = strlen(dir) + 24;
        if ((base = malloc(n)))
            snprintf(base, n, "%s/%lld", dir, (long long)version);
    }
    if (!(m = pm_open_model(base ? base : dir, &vdir)))
        goto out;
    r.job.m = m;
    const Predictd__ModelDef *def = rt_model_def(m);
    if (def->receiver != PREDICTD__RECEIVER__RECEIVER_JSON && r.job.format != PM_IN_JSONL &&
        (f->key || f->incl || f->excl || f->itype)) {
        fprintf(stderr, "predict-model batch-predict: this export's serving input function "
                "reads %s: --key-field, --included-fields, --excluded-fields and "
                "--instance-type need jsonl instances\n",
                def->receiver == PREDICTD__RECEIVER__RECEIVER_CSV ? "CSV rows" : "tf.Examples");
        rc = PM_EXIT_USAGE;
        goto out;
    }
    if ((st = pm_expand_inputs((const char *const *)f->input.v, f->input.n, &files, &n_files,
                               &err)) ||
        (st = start_job(&r, f, vdir, files, n_files, def, &err)) ||
        (st = run_units(&r, (uint64_t)f->threads, &err)))
        goto fail;
    rc = 0;
    if (r.lost) { /* never success over lost data */
        fprintf(stderr, "%spredict-model batch-predict: JOB_STATE_PARTIALLY_SUCCEEDED: %llu "
                "data loss%s (TFRecord files not read to their end): see %s/completion.json "
                "and the errors files (code 15)\n", r.progress == 2 ? "\n" : "",
                (unsigned long long)r.lost, r.lost == 1 ? "" : "es", r.dir);
        rc = 1;
    }
    goto out;
fail:
    fprintf(stderr, "%spredict-model batch-predict: %s\n", r.progress == 2 ? "\n" : "",
            err.msg);
out:
    for (size_t i = 0; i < n_files; i++)
        free(files[i]);
    free(files);
    for (size_t i = 0; fields && i < r.job.n_fields; i++)
        free((char *)fields[i]);
    free(fields);
    free(r.units);
    free(r.dir);
    free(vdir);
    free(base);
    free(labelled);
    rt_model_close(m);
    pthread_mutex_destroy(&r.mu);
    trace_close(&r, rc);
    return rc;
}

int pm_cmd_batch_predict(int argc, char **argv)
{
    const pm_command *c = &pm_batch_command;
    batch_flags f;
    bool help = false;
    int rc = pm_args_read(c, argc - 1, argv + 1, &f, &help);
    if (rc)
        return rc;
    if (help)
        pm_command_help(c);
    else
        rc = batch_predict(&f);
    rt_settings_free(FLAGS, c->n_flags, &f);
    return rc;
}
