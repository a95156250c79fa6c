/*
 * trn_run.c — train_and_evaluate: the training loop with its input
 * pipeline, progress reporting, checkpoints (by steps or seconds, resume from
 * the newest), throttled evaluation, and the exporters (Final, Latest, Best)
 * writing through the exporter API into JOB_DIR/export/<name>/<version>/.
 */
#include "trn_internal.h"

#include "exp.h"

#include <cblas.h>
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    return rt_seconds(0);
}

/* CPU seconds of the whole process (every thread) or of the calling thread. */
static double cpu_s(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* OpenBLAS's pthread build starts a pool of worker threads when it loads;
 * an idle worker spins (sched_yield) for about 2^28 cycles before it
 * sleeps: ~0.1 s of the other core in every trainer process, which computes
 * on one thread. So after choosing one thread the pool is stopped with
 * blas_thread_shutdown_, what OpenBLAS's own fork handler calls (a weak
 * reference: absent from other BLAS builds, then nothing happens). */
extern int blas_thread_shutdown_(void) __attribute__((weak));

static void blas_one_thread(void)
{
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_)
        blas_thread_shutdown_();
}

static int is_chief(const trn_config *c)
{
    return !c || !c->comm || c->comm->rank == 0;
}

/* An INFO line, from the chief (rank 0) only. */
static void logf_(const trn_config *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(const trn_config *c, const char *fmt, ...)
{
    if (!is_chief(c) || (c && c->log_level > 1))
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("INFO: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ------------------------------------------------------------- data errors */

/*
 * A data file's first line that fails to parse (rd stopped on it) and holds
 * the columns' names (at least half its fields, split as the reader splits
 * a row, blanks around them dropped) is a CSV header: err's message gets
 * the spec key that skips it.
 */
static void hint_header(const trn_feeder *fd, trn_reader *rd, const char *key, rt_err *err)
{
    uint64_t lineno;
    const char *path = trn_reader_failed_at(rd, &lineno);
    FILE *fp = path && lineno == 1 ? fopen(path, "r") : NULL;
    if (!fp)
        return;
    char *line = NULL, *text = NULL;
    size_t cap = 0;
    ssize_t len = getline(&line, &cap, fp);
    fclose(fp);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    rt_csv_span span[256];
    long nf = len > 0 && (text = malloc((size_t)len + 1))
                  ? rt_csv_split(line, (size_t)len, text, span, 256, NULL)
                  : -1;
    size_t ncol, names = 0;
    (void)trn_feeder_numeric(fd, &ncol);
    const char *const *cols = trn_feeder_names(fd);
    for (long f = 0; f < nf && f < 256; f++) {
        const char *tok = text + span[f].off;
        size_t n = span[f].len;
        while (n && (*tok == ' ' || *tok == '\t'))
            tok++, n--;
        while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
            n--;
        for (size_t i = 0; cols && i < ncol; i++)
            if (strlen(cols[i]) == n && memcmp(cols[i], tok, n) == 0) {
                names++;
                break;
            }
    }
    free(line);
    free(text);
    if (names == 0 || names * 2 < (size_t)nf)
        return;
    char msg[RT_ERR_MAX];
    if (snprintf(msg, sizeof msg, "%s (line 1 holds column names: a header row? set \"%s\": 1 "
             "in the spec to skip it)", err->msg, key) < 0)
        return;
    snprintf(err->msg, sizeof err->msg, "%s", msg);
}

/* A batch's targets: labels (ls per row) and, with a weight column, weights. */
typedef struct targets {
    float *labels;
    float *weights; /* NULL: no estimator.weight_column */
    size_t *row_of; /* each instance's row (for FILE:LINE in errors) */
    size_t ls;
} targets;

static int targets_alloc(targets *t, const trn_feeder *fd, size_t rows)
{
    t->ls = trn_feeder_label_dim(fd);
    t->labels = malloc((rows ? rows : 1) * t->ls * sizeof *t->labels);
    t->weights = trn_feeder_weighted(fd) ? malloc((rows ? rows : 1) * sizeof *t->weights) : NULL;
    t->row_of = malloc((rows ? rows : 1) * sizeof *t->row_of);
    return t->labels && t->row_of && (t->weights || !trn_feeder_weighted(fd)) ? 0 : -1;
}

static void targets_free(targets *t)
{
    free(t->labels);
    free(t->weights);
    free(t->row_of);
    t->labels = t->weights = NULL;
    t->row_of = NULL;
}

/* A row the feeder refused (a label outside label.vocabulary, ...) is a data
 * error like the reader's malformed rows: FILE:LINE, exit status 1. */
static rt_status feed(const trn_feeder *fd, const trn_rows *rows, rt_batch *b, targets *t,
                      trn_bad_row_policy bad, uint64_t *skipped, rt_err *err)
{
    rt_status st = trn_feeder_fill_rows(fd, rows, b, t->labels, t->weights, t->row_of, bad,
                                        skipped, err);
    return st == RT_ERR_INVALID ? RT_ERR_FORMAT : st;
}

/* ------------------------------------------------------------ evaluation */

rt_status trn_open_reader(const trn_feeder *fd, char *const *files, size_t n_files,
                          size_t batch, size_t shuffle, int64_t epochs, uint64_t seed,
                          trn_bad_row_policy bad, size_t skip_header, size_t shards,
                          size_t shard, uint64_t cache_bytes, trn_reader **r, rt_err *err)
{
    trn_reader_params p = trn_reader_default_params();
    size_t ncol;
    p.numeric = trn_feeder_numeric(fd, &ncol);
    p.names = trn_feeder_names(fd);
    p.n_fields = ncol;
    p.files = (const char *const *)files;
    p.n_files = n_files;
    p.batch_size = batch;
    p.shuffle_buffer_size = shuffle;
    p.num_epochs = epochs;
    p.seed = seed;
    p.bad_rows = bad;
    p.skip_header_lines = skip_header;
    p.shard_count = shards;
    p.shard_index = shard;
    p.cache_bytes = cache_bytes;
    return trn_reader_open(&p, r, err);
}

/* Rows [lo, hi) of rows as a trn_rows of their own (no copy). */
static trn_rows rows_slice(const trn_rows *rows, size_t lo, size_t hi)
{
    trn_rows v = *rows;
    v.n = hi - lo;
    v.fields = rows->fields + lo * rows->n_fields;
    v.src_file = rows->src_file + lo;
    v.src_line = rows->src_line + lo;
    v.ordinal = rows->ordinal ? rows->ordinal + lo : NULL;
    return v;
}

/*
 * Distributed evaluation: every rank reads the eval stream (unshuffled) and
 * runs the model on its slice of each batch; rank 0 gathers the slices'
 * labels and logits in rank order, which is exactly the single-process batch,
 * and adds it to the metrics. So every metric (the exact AUC and the mean of
 * the batch losses too) is the one a single process computes. On rank 0,
 * labels/logits (room for the whole batch) receive the batch and *nb its size.
 */
static rt_status eval_gather(trn_model *m, size_t *nb, targets *t, float *logits, rt_err *err)
{
    size_t ld = m->ld, ls = t->ls, nw = t->weights ? 1 : 0, n = *nb;
    size_t per = ls + nw + ld, row = per * sizeof(float);
    float *send = malloc(n ? n * row : 1);
    if (!send)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    memcpy(send, t->labels, n * ls * sizeof(float));
    if (nw)
        memcpy(send + n * ls, t->weights, n * sizeof(float));
    memcpy(send + n * (ls + nw), logits, n * ld * sizeof(float));
    void *recv;
    const size_t *lens;
    rt_status st = trn_dist_gather(m->dist, send, n * row, &recv, &lens, err);
    free(send);
    if (st || trn_dist_rank(m->dist) != 0)
        return st;
    const float *in = recv;
    size_t at = 0;
    for (int r = 0; r < trn_dist_size(m->dist); r++) {
        size_t k = lens[r] / row;
        memcpy(t->labels + at * ls, in, k * ls * sizeof(float));
        if (nw)
            memcpy(t->weights + at, in + k * ls, k * sizeof(float));
        memcpy(logits + at * ld, in + k * (ls + nw), k * ld * sizeof(float));
        in += k * per;
        at += k;
    }
    *nb = at;
    return RT_OK;
}

rt_status trn_evaluate(trn_model *m, const trn_config *c, rt_metric_list *out, rt_err *err)
{
    const Predictd__ModelDef *def = m->def;
    trn_feeder *fd = NULL;
    trn_reader *r = NULL;
    rt_batch *b = NULL;
    targets t = {0};
    float *logits = NULL;
    rt_metrics *mt = NULL;
    uint64_t bad_labels = 0;
    int chief = trn_dist_rank(m->dist) == 0;
    rt_status st;
    if (c->n_eval_files == 0)
        return rt_err_set(err, RT_ERR_INVALID, "eval.files: no evaluation files given "
                          "(--eval-files)");
    size_t bs = c->eval_batch_size ? c->eval_batch_size : 256;
    if ((st = trn_feeder_new(m->g, &fd, err)))
        goto out;
    if ((st = trn_open_reader(fd, c->eval_files, c->n_eval_files, bs, 0, 1, c->seed, c->bad_rows,
                              c->eval_skip_header_lines, 0, 0, 0, &r, err)))
        goto out;
    b = rt_batch_new(m->g);
    int t_bad = targets_alloc(&t, fd, bs);
    logits = malloc(bs * m->ld * sizeof *logits);
    mt = rt_metrics_new(def->head->type, m->ld > 1 ? m->ld : def->head->n_classes);
    if (!b || t_bad || !logits || !mt) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int64_t steps = 0; c->eval_steps == 0 || steps < c->eval_steps; steps++) {
        const trn_rows *rows;
        st = trn_reader_next(r, &rows, err);
        if (st == RT_ERR_NOTFOUND)
            break;
        if (st == RT_ERR_FORMAT)
            hint_header(fd, r, "eval.skip_header_lines", err);
        if (st)
            goto out;
        size_t lo, hi;
        trn_dist_slice(m->dist, rows->n, &lo, &hi);
        trn_rows mine = rows_slice(rows, lo, hi);
        if ((st = feed(fd, &mine, b, &t, c->bad_rows, &bad_labels, err)))
            goto out;
        size_t nb = rt_batch_size(b);
        double loss = 0;
        if (nb && (st = trn_model_loss(m, b, t.labels, t.weights, &loss, logits, err))) {
            st = trn_err_at_row(st == RT_ERR_INVALID ? RT_ERR_FORMAT : st, &mine, t.row_of, nb,
                                err);
            goto out;
        }
        if (m->dist) {
            if ((st = eval_gather(m, &nb, &t, logits, err)))
                goto out;
            if (!chief)
                continue;
            /* trn_model_loss's batch_loss over the gathered batch */
            loss = rt_head_loss(m->head, m->ld, logits, t.labels, t.weights, nb, nb, NULL);
            if (m->loss_sum && nb * t.ls > 1)
                loss *= (double)(nb * t.ls);
        }
        if (nb == 0)
            continue;
        if ((st = rt_metrics_add(mt, logits, t.labels, t.weights, nb, loss))) {
            rt_err_set(err, st, "metrics: out of memory");
            goto out;
        }
    }
    if (!chief) {
        memset(out, 0, sizeof *out);
        st = RT_OK;
        goto out;
    }
    st = rt_metrics_result(mt, m->step, out);
    if (st == RT_ERR_NOTFOUND)
        rt_err_set(err, st, "evaluation: the eval files hold no rows");
    {
        trn_reader_stats rs;
        trn_reader_get_stats(r, &rs);
        if (rs.bad_rows)
            logf_(c, "evaluation skipped %llu malformed rows (first: %s)",
                  (unsigned long long)rs.bad_rows, rs.first_bad);
        if (bad_labels)
            logf_(c, "evaluation skipped %llu rows with an unknown label",
                  (unsigned long long)bad_labels);
    }
out:
    rt_metrics_free(mt);
    targets_free(&t);
    free(logits);
    rt_batch_free(b);
    trn_reader_close(r);
    trn_feeder_free(fd);
    return st;
}

/* ---------------------------------------------------------------- exports */

typedef struct run {
    const cJSON *spec;
    const trn_config *c;
    Predictd__ModelDef *def;
    trn_model *m;
    double best[TRN_MAX_EXPORTERS];
    int have_best[TRN_MAX_EXPORTERS];
    char *spec_json;
    trn_summary *sum;   /* TensorBoard event files (with a job dir) */
    trn_early_stop *es; /* train.hooks; NULL without */
    int stopped_early;  /* a hook ended training */
    rt_metric_list last_ml; /* the last evaluation (valid when last_ml_step >= 0) */
    int64_t last_ml_step;
    trn_ckpt_writer *ckw; /* checkpoints written in the background (the chief's) */
} run;

/* Records step and metrics in def->training (malloc'd, freed with def). */
static rt_status set_training_info(run *R, const rt_metric_list *ml, rt_err *err)
{
    Predictd__ModelDef *def = R->def;
    if (!def->training) {
        def->training = malloc(sizeof *def->training);
        if (!def->training)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        predictd__training_info__init(def->training);
    }
    Predictd__TrainingInfo *t = def->training;
    for (size_t i = 0; i < t->n_eval_metrics; i++) {
        free(t->eval_metrics[i]->name);
        free(t->eval_metrics[i]);
    }
    free(t->eval_metrics);
    t->eval_metrics = NULL;
    t->n_eval_metrics = 0;
    t->global_step = R->m->step;
    t->export_time = (int64_t)time(NULL);
    if (!t->spec_json || t->spec_json == protobuf_c_empty_string) {
        t->spec_json = strdup(R->spec_json ? R->spec_json : "");
        if (!t->spec_json)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (!t->producer || t->producer == protobuf_c_empty_string) {
        t->producer = strdup("predict-train 0.1");
        if (!t->producer)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (ml && ml->n) {
        t->eval_metrics = calloc(ml->n, sizeof *t->eval_metrics);
        if (!t->eval_metrics)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < ml->n; i++) {
            Predictd__Metric *mm = malloc(sizeof *mm);
            if (!mm)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            predictd__metric__init(mm);
            mm->name = strdup(ml->m[i].name);
            mm->value = ml->m[i].value;
            t->eval_metrics[t->n_eval_metrics++] = mm;
            if (!mm->name)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    return RT_OK;
}

static rt_status do_export(run *R, const trn_exporter_conf *x, const rt_metric_list *ml,
                           rt_err *err)
{
    char base[4096];
    if (snprintf(base, sizeof base, "%s/export/%s", R->c->job_dir, x->name) >=
        (int)sizeof base)
        return rt_err_set(err, RT_ERR_LIMIT, "export path too long");
    rt_status st = set_training_info(R, ml, err);
    if (st)
        return st;
    trn_model *m = R->m;
    exp_tensor *ts = calloc(m->n_params ? m->n_params : 1, sizeof *ts);
    if (!ts)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < m->n_params; i++) {
        ts[i].name = m->p[i].name;
        ts[i].data = m->p[i].data;
        ts[i].rank = m->specs[i].rank;
        ts[i].shape[0] = m->specs[i].shape[0];
        ts[i].shape[1] = m->specs[i].shape[1];
    }
    /* vocabulary files travel with the export (assets/) */
    const Predictd__ModelDef *def = R->def;
    exp_asset *as = calloc(def->n_feature_columns ? def->n_feature_columns : 1, sizeof *as);
    char (*paths)[4096] = calloc(def->n_feature_columns ? def->n_feature_columns : 1,
                                 sizeof *paths);
    size_t na = 0;
    if (!as || !paths) {
        free(as);
        free(paths);
        free(ts);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < def->n_feature_columns; i++) {
        const Predictd__FeatureColumn *fc = def->feature_columns[i];
        if (fc->type != PREDICTD__COLUMN_TYPE__VOCABULARY_FILE || !fc->vocabulary_file)
            continue;
        int dup = 0;
        for (size_t k = 0; k < na; k++)
            dup |= strcmp(as[k].name, fc->vocabulary_file) == 0;
        if (dup)
            continue;
        snprintf(paths[na], sizeof paths[na], "%s/%s",
                 R->c->assets_dir ? R->c->assets_dir : ".", fc->vocabulary_file);
        as[na].name = fc->vocabulary_file;
        as[na].src_path = paths[na];
        na++;
    }
    exp_params p = exp_default_params();
    p.assets = as;
    p.n_assets = na;
    /* Versions must grow with every export of a base even when several
     * exports fall in one second (the exporter then takes time + 1, + 2, ...
     * and a later export must not get an older number, or retention would
     * remove the newest): max(now, newest existing + 1). */
    {
        int64_t *vers = NULL;
        size_t nv = 0;
        int64_t now = (int64_t)time(NULL);
        p.version = now > 0 ? now : 1;
        if (exp_list_versions(base, &vers, &nv, NULL) == RT_OK && nv > 0 &&
            vers[nv - 1] >= p.version)
            p.version = vers[nv - 1] + 1;
        free(vers);
    }
    exp_result res;
    st = exp_write(base, R->def, ts, m->n_params, &p, &res, err);
    free(as);
    free(paths);
    free(ts);
    if (st)
        return st;
    logf_(R->c, "%s: exported global step %lld to %s", x->name, (long long)m->step, res.path);
    if (x->type != TRN_EXPORTER_FINAL && x->exports_to_keep > 0) {
        rt_err e;
        size_t removed = 0;
        if (exp_retain_latest(base, (size_t)x->exports_to_keep, &removed, &e) != RT_OK)
            logf_(R->c, "%s: retention: %s", x->name, e.msg);
    }
    return RT_OK;
}

/* Latest and Best exporters after an evaluation; Final too when final. */
/* final: 0 after an evaluation while training, 1 at the end, 2 at the end
 * with only the FinalExporters (the others ran on these metrics already). */
static rt_status run_exporters(run *R, const rt_metric_list *ml, int final, rt_err *err)
{
    if (!R->c->job_dir)
        return RT_OK;
    for (size_t i = 0; i < R->c->n_exporters; i++) {
        const trn_exporter_conf *x = &R->c->exporters[i];
        rt_status st = RT_OK;
        if (final == 2 && x->type != TRN_EXPORTER_FINAL)
            continue;
        if (x->type == TRN_EXPORTER_FINAL) {
            if (final)
                st = do_export(R, x, ml, err);
        } else if (x->type == TRN_EXPORTER_LATEST) {
            st = do_export(R, x, ml, err);
        } else {
            double v = rt_metric_get(ml, x->metric);
            if (isnan(v)) {
                logf_(R->c, "%s: metric %s not computed for this head; not exporting", x->name,
                      x->metric);
                continue;
            }
            int better = !R->have_best[i] ||
                         (x->higher_is_better ? v > R->best[i] : v < R->best[i]);
            if (better) {
                st = do_export(R, x, ml, err);
                R->best[i] = v;
                R->have_best[i] = 1;
            }
        }
        if (st)
            return st;
    }
    return RT_OK;
}

/* BestExporter: the best value among earlier exports (their training info). */
static void load_best(run *R)
{
    for (size_t i = 0; i < R->c->n_exporters; i++) {
        const trn_exporter_conf *x = &R->c->exporters[i];
        if (x->type != TRN_EXPORTER_BEST || !R->c->job_dir)
            continue;
        char base[4096];
        if (snprintf(base, sizeof base, "%s/export/%s", R->c->job_dir, x->name) >=
            (int)sizeof base)
            continue;
        int64_t *vers = NULL;
        size_t nv = 0;
        if (exp_list_versions(base, &vers, &nv, NULL) != RT_OK)
            continue;
        for (size_t k = 0; k < nv; k++) {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%lld", base, (long long)vers[k]);
            rt_model *om = NULL;
            if (rt_model_open(dir, &om, NULL) != RT_OK)
                continue;
            const Predictd__ModelDef *od = rt_model_def(om);
            for (size_t j = 0; od->training && j < od->training->n_eval_metrics; j++) {
                const Predictd__Metric *mm = od->training->eval_metrics[j];
                if (strcmp(mm->name, x->metric) != 0)
                    continue;
                int better = !R->have_best[i] || (x->higher_is_better ? mm->value > R->best[i]
                                                                      : mm->value < R->best[i]);
                if (better) {
                    R->best[i] = mm->value;
                    R->have_best[i] = 1;
                }
            }
            rt_model_close(om);
        }
        free(vers);
    }
}

/*
 * Logs the TF-style line, appends the JSON to JOB_DIR/eval/metrics.jsonl
 * (one write and an fsync; a failed write is an error and is cut off again,
 * so the file stays one JSON object a line) and writes the metrics to the
 * run's evaluation event file.
 */
static rt_status report_eval(const run *R, const rt_metric_list *ml, int64_t step,
                             rt_err *err)
{
    const trn_config *c = R->c;
    rt_buf b;
    rt_buf_init(&b);
    rt_status st = RT_OK;
    if (rt_metrics_format(ml, &b) == 0)
        logf_(c, "Saving dict for global step %lld: %s", (long long)step, b.data);
    rt_buf_reset(&b);
    if (!c->job_dir) {
        st = trn_early_stop_record(R->es, ml, step, err);
        goto out;
    }
    if (rt_metrics_json(ml, &b) != 0 || rt_buf_puts(&b, "\n") != 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "eval metrics: out of memory");
        goto out;
    }
    char dir[4096], what[96];
    snprintf(dir, sizeof dir, "%s/eval", c->job_dir);
    snprintf(what, sizeof what, "cannot write the metrics of global step %lld", (long long)step);
    if ((st = trn_append_file(dir, "metrics.jsonl", b.data, b.len, 1, what, err)))
        goto out;
    if (R->sum && (st = trn_summary_eval(R->sum, ml, step, err)))
        goto out;
    st = trn_early_stop_record(R->es, ml, step, err);
out:
    rt_buf_free(&b);
    return st;
}

static rt_status evaluate_and_export(run *R, int final, rt_metric_list *out, rt_err *err)
{
    rt_metric_list ml;
    rt_status st = RT_OK;
    if (final && R->stopped_early && R->last_ml_step == R->m->step) {
        /* stopped right after evaluating this step: the final exporters
         * take that evaluation (the others already ran on it) */
        if (out)
            *out = R->last_ml;
        return is_chief(R->c) ? run_exporters(R, &R->last_ml, 2, err) : RT_OK;
    }
    /* a tree ensemble is compiled into the graph: evaluate what serves */
    if (R->m->trees && (st = trn_model_rebuild_graph(R->m, err)))
        return st;
    if (R->c->n_eval_files > 0) {
        logf_(R->c, "Starting evaluation at global step %lld", (long long)R->m->step);
        if ((st = trn_evaluate(R->m, R->c, &ml, err)))
            return st;
        R->last_ml = ml;
        R->last_ml_step = R->m->step;
        if (!is_chief(R->c)) /* rank 0 alone reports and exports */
            return RT_OK;
        if ((st = report_eval(R, &ml, R->m->step, err)))
            return st;
        if (out)
            *out = ml;
    } else {
        memset(&ml, 0, sizeof ml);
        if (out)
            memset(out, 0, sizeof *out);
    }
    return is_chief(R->c) ? run_exporters(R, &ml, final, err) : RT_OK;
}

/* -------------------------------------------------------------- progress */

typedef struct progress {
    trn_progress_mode mode;
    double t0, last;
    int64_t step0, last_step;
    double efrac0;    /* the reader's position when this run started (after a resume's replay) */
    double loss_sum;
    double last_loss; /* shown again when no step ran since the last show */
    int64_t loss_n;
    size_t batch;
} progress;

/* Fraction of the epochs done (reader position), or -1 when unknown. */
static double epoch_fraction(trn_reader *rd, int64_t num_epochs)
{
    if (!rd || num_epochs <= 0)
        return -1;
    trn_reader_stats rs;
    trn_reader_get_stats(rd, &rs);
    if (rs.epoch_bytes == 0)
        return -1;
    double f = ((double)rs.epochs + (double)rs.bytes / (double)rs.epoch_bytes) /
               (double)num_epochs;
    return f > 1 ? 1 : f;
}

double trn_eta(int64_t step0, int64_t step, int64_t max_steps, double efrac0, double efrac,
               double elapsed)
{
    if (!(elapsed > 0))
        return -1;
    if (max_steps > 0) { /* the run goes to max_steps (the input restarts when it ends) */
        double sps = (double)(step - step0) / elapsed;
        return sps > 0 && step <= max_steps ? (double)(max_steps - step) / sps : -1;
    }
    /* by the reader's position: only the part this run read counts */
    if (efrac0 >= 0 && efrac > efrac0)
        return elapsed * (1.0 - efrac) / (efrac - efrac0);
    return -1;
}

static void progress_show(progress *p, int64_t step, int64_t max_steps, double efrac,
                          int force)
{
    double t = now_s();
    if (p->mode == TRN_PROGRESS_QUIET)
        return;
    if (!force && p->mode == TRN_PROGRESS_BAR && t - p->last < 0.2)
        return;
    if (force && p->mode != TRN_PROGRESS_BAR && p->loss_n == 0)
        return; /* the last line already said it all (no "loss = nan" line) */
    double el = t - p->t0;
    double sps = el > 0 ? (double)(step - p->step0) / el : 0;
    double loss = p->loss_n ? p->loss_sum / (double)p->loss_n : p->last_loss;
    p->last_loss = loss;
    double eta = force ? 0 : trn_eta(p->step0, step, max_steps, p->efrac0, efrac, el);
    char etas[32] = "?";
    if (eta >= 0)
        snprintf(etas, sizeof etas, "%.0fs", eta);
    if (p->mode == TRN_PROGRESS_BAR) {
        char bar[31];
        double frac = max_steps > 0 ? (double)step / (double)max_steps : efrac;
        if (force)
            frac = 1;
        int fill = frac > 0 ? (int)(frac * 30) : 0;
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '=' : ' ';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] step %lld loss %.4f %.0f steps/s %.0f examples/s ETA %s ",
                bar, (long long)step, loss, sps, sps * (double)p->batch, etas);
        if (force)
            fputc('\n', stderr);
    } else {
        logf_(NULL, "global_step %lld: loss = %.5f, %.1f steps/s, %.0f examples/s, ETA %s",
              (long long)step, loss, sps, sps * (double)p->batch, etas);
    }
    fflush(stderr);
    p->last = t;
    p->loss_sum = 0;
    p->loss_n = 0;
}

/* Checks that every replica holds the same parameters, then rank 0 writes
 * the checkpoint (collective under MPI). */
/* The loop's checkpoints are written in the background (the copy of the
 * state is made here); wait: return once this one is on disk. */
static rt_status save_checkpoint(run *R, trn_dist *dist, int wait, rt_err *err)
{
    rt_status st = trn_dist_check_replicas(dist, R->m, err);
    if (st == RT_OK && is_chief(R->c)) {
        if (!R->ckw && !(R->ckw = trn_ckpt_writer_new()))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        st = trn_ckpt_save_async(R->ckw, R->m, R->c->job_dir, R->c->keep_checkpoint_max, err);
        if (st == RT_OK && wait)
            st = trn_ckpt_wait(R->ckw, err);
    }
    return st;
}

/* --------------------------------------------------------------- helpers */

/* 1 when an exporter's newest export holds the model at global step step
 * (a re-run with nothing to train then writes no second copy). */
static int exported_at(const run *R, int64_t step)
{
    int found = 0;
    for (size_t i = 0; !found && R->c->job_dir && i < R->c->n_exporters; i++) {
        char base[4096];
        if (snprintf(base, sizeof base, "%s/export/%s", R->c->job_dir,
                     R->c->exporters[i].name) >= (int)sizeof base)
            continue;
        int64_t *vers = NULL;
        size_t nv = 0;
        if (exp_list_versions(base, &vers, &nv, NULL) == RT_OK && nv > 0) {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%lld", base, (long long)vers[nv - 1]);
            rt_model *om = NULL;
            if (rt_model_open(dir, &om, NULL) == RT_OK) {
                const Predictd__ModelDef *od = rt_model_def(om);
                found = od->training && od->training->global_step == step;
                rt_model_close(om);
            }
        }
        free(vers);
    }
    return found;
}

/* --------------------------------------------------------------- the run */

/* The training input: every rank's reader with the run's parameters. */
typedef struct input {
    trn_feeder *fd;
    char *const *files;
    size_t n_files, batch, shards, shard;
    const trn_config *c;
    trn_cache *cache;     /* the rows' features across epochs (numbered by the reader) */
    uint64_t cache_bytes; /* the reader's kept rows, and the cache's, each at most */
} input;

static rt_status input_open(const input *in, trn_reader **rd, rt_err *err)
{
    const trn_config *c = in->c;
    trn_reader_close(*rd);
    *rd = NULL;
    trn_cache_clear(in->cache); /* the new reader numbers its rows again */
    rt_status st = trn_open_reader(in->fd, in->files, in->n_files, in->batch,
                                   c->shuffle_buffer_size, c->num_epochs, c->seed, c->bad_rows,
                                   c->skip_header_lines, in->shards, in->shard, in->cache_bytes,
                                   rd, err);
    return st;
}

/* The next training batch (RT_ERR_NOTFOUND at the end of a pass). */
static rt_status input_next(const input *in, trn_reader *rd, const trn_rows **rows, rt_err *err)
{
    rt_status st = trn_reader_next(rd, rows, err);
    if (st == RT_ERR_FORMAT)
        hint_header(in->fd, rd, "train.skip_header_lines", err);
    return st;
}

/*
 * A resumed run replays the (seeded, deterministic) input stream up to the
 * restored step without doing any math, so it continues exactly where the
 * interrupted run was: same seed, files and batch size give the model an
 * uninterrupted run would have given. With num_epochs the stream is a
 * sequence of passes of num_epochs epochs each (the input restarts when a
 * run with a larger max_steps reaches its end): whole passes are skipped
 * after the first one has told how many batches a pass holds.
 */
static rt_status input_replay(const input *in, trn_reader **rd, int64_t step, int64_t *pass,
                              rt_err *err)
{
    int64_t skipped = 0, in_pass = 0;
    *pass = 0;
    while (skipped < step) {
        const trn_rows *rows;
        rt_status st = input_next(in, *rd, &rows, err);
        if (st == RT_OK) {
            skipped++;
            in_pass++;
            continue;
        }
        if (st != RT_ERR_NOTFOUND)
            return st;
        if (in_pass == 0) /* no data at all */
            break;
        *pass = in_pass;
        if ((st = input_open(in, rd, err)))
            return st;
        /* whole passes, but the last one is read: a step at the end of a
         * pass leaves the reader at its end, as the run that stopped there */
        skipped += (step - skipped - 1) / in_pass * in_pass;
        in_pass = 0;
    }
    return RT_OK;
}

/* "skipped 1 malformed row (first: ...)", or with rows skipped again in later
 * epochs "skipped 1 row with an unknown label (3 times over 3 epochs)":
 * distinct rows, then how many times. */
static void skip_report(const trn_config *c, uint64_t distinct, uint64_t times, int64_t epochs,
                        const char *noun, const char *tail, const char *first)
{
    if (distinct == 0 || distinct > times)
        distinct = times;
    char again[128] = "";
    if (times > distinct)
        snprintf(again, sizeof again, "%llu times over %lld epochs", (unsigned long long)times,
                 (long long)(epochs > 1 ? epochs : 1));
    logf_(c, "skipped %llu %s%s%s%s%s%s%s%s", (unsigned long long)distinct, noun,
          distinct == 1 ? "" : "s", tail, again[0] || first ? " (" : "", again,
          again[0] && first ? "; " : "", first ? first : "", again[0] || first ? ")" : "");
}

/*
 * The newest checkpoints were damaged and an older one, of step `step`, was
 * restored (warn: a line "PATH: why" per damaged file): the steps after it
 * are lost and trained again. Says so in one ERROR line and in
 * JOB_DIR/train/metrics.jsonl, and renames each damaged file to
 * model.ckpt-N.damaged, out of the checkpoints' names, so neither the
 * retention of keep_checkpoint_max nor the new checkpoint of step N removes
 * it.
 */
static rt_status damaged_fallback(const trn_config *c, int64_t step, const rt_buf *warn,
                                  rt_err *err)
{
    int64_t *steps = NULL;
    size_t n = 0;
    rt_status st = trn_ckpt_list(c->job_dir, &steps, &n, err);
    if (st)
        return st;
    rt_buf why, kept, line;
    rt_buf_init(&why);
    rt_buf_init(&kept);
    rt_buf_init(&line);
    for (size_t i = 0; i < warn->len;) { /* the reasons, one line */
        size_t e = i;
        while (e < warn->len && warn->data[e] != '\n')
            e++;
        rt_buf_printf(&why, "%s%.*s", why.len ? "; " : "", (int)(e - i), warn->data + i);
        i = e + 1;
    }
    int64_t lost_to = step;
    for (size_t i = 0; i < n; i++) {
        if (steps[i] <= step)
            continue;
        lost_to = steps[i] > lost_to ? steps[i] : lost_to;
        char from[4200], to[4300];
        snprintf(from, sizeof from, "%s/model.ckpt-%lld", c->job_dir, (long long)steps[i]);
        for (int k = 0; k < 100; k++) { /* never over an earlier .damaged file */
            if (k)
                snprintf(to, sizeof to, "%s.damaged.%d", from, k);
            else
                snprintf(to, sizeof to, "%s.damaged", from);
            if (access(to, F_OK) != 0)
                break;
        }
        if (rename(from, to) != 0) {
            st = rt_err_set(err, RT_ERR_IO, "cannot set the damaged checkpoint %s aside: %s",
                            from, strerror(errno));
            goto out;
        }
        const char *base = strrchr(to, '/');
        rt_buf_printf(&kept, "%s%s", kept.len ? ", " : "", base ? base + 1 : to);
    }
    if (c->log_level <= 3)
        fprintf(stderr, "ERROR: global steps %lld to %lld are lost: damaged checkpoint (%s); "
                "restored model.ckpt-%lld and training them again (the damaged file is kept "
                "as %s)\n", (long long)step + 1, (long long)lost_to, why.data ? why.data : "",
                (long long)step, kept.data ? kept.data : "");
    rt_buf_printf(&line, "{\"global_step\": %lld, \"lost_steps\": [%lld, %lld], "
                  "\"damaged_checkpoints\": \"", (long long)step, (long long)step + 1,
                  (long long)lost_to);
    for (const char *p = kept.data ? kept.data : ""; *p; p++) /* file names: no quotes */
        rt_buf_printf(&line, "%c", *p == '"' || *p == '\\' || (unsigned char)*p < 0x20 ? '?' : *p);
    rt_buf_printf(&line, "\", \"wall_time\": ");
    rt_buf_json_double(&line, rt_seconds(1));
    rt_buf_puts(&line, "}\n");
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/train", c->job_dir);
    st = trn_append_file(dir, "metrics.jsonl", line.data, line.len, 1,
                         "cannot record the lost steps", err);
out:
    rt_buf_free(&why);
    rt_buf_free(&kept);
    rt_buf_free(&line);
    free(steps);
    return st;
}

/* Runs the early-stopping hooks due after the update that reached step (on
 * rank 0, which holds the evaluations; its answer goes to every rank) and,
 * when one asks to stop, logs and records it and sets R->stopped_early. */
static rt_status early_stop(run *R, trn_dist *dist, int64_t step, int secs_due, rt_err *err)
{
    char reason[512] = "";
    int r = trn_early_stop_check(R->es, step, secs_due, now_s(), reason, sizeof reason);
    if (r < 0)
        return RT_OK;
    double stop = is_chief(R->c) && r > 0;
    rt_status st = trn_dist_sum(dist, &stop, 1, err);
    if (st || stop == 0)
        return st;
    R->stopped_early = 1;
    if (!is_chief(R->c))
        return RT_OK;
    logf_(R->c, "Requesting early stopping at global step %lld: %s", (long long)step, reason);
    return trn_early_stop_report(R->es, step, reason, err);
}

/* The global step a BoostedTrees run ends at: n_trees, or train.max_steps
 * (--train-steps) when it is given and smaller (a step is a tree). */
static int64_t trees_target(const trn_config *c)
{
    return c->max_steps > 0 && c->max_steps < c->gbdt.n_trees ? c->max_steps : c->gbdt.n_trees;
}

/* A run stopped by signal sig after its checkpoint: the other ranks end once
 * rank 0's checkpoint is on disk (under mpirun the first rank to exit
 * non-zero ends the job); the message, and sig for predict-train's exit
 * status. */
static rt_status interrupted(const run *R, trn_dist *dist, int sig, rt_err *err)
{
    const trn_config *c = R->c;
    double one = 1;
    rt_status st = trn_ckpt_wait(R->ckw, err); /* "saved": on disk, a background one too */
    if (st == RT_OK)
        st = trn_dist_sum(dist, &one, 1, err);
    if (st)
        return st;
    if (c->job_dir && is_chief(c))
        fprintf(stderr, "interrupted at step %lld, checkpoint saved; re-run to resume\n",
                (long long)R->m->step);
    else if (is_chief(c))
        fprintf(stderr, "interrupted at step %lld (no job dir: nothing saved)\n",
                (long long)R->m->step);
    if (c->stop_signal)
        *c->stop_signal = sig;
    return RT_OK;
}

/* A BoostedTrees summary point at the model's step: the training set's loss
 * (the rows of rank 0 under MPI) and TF's ensemble/num_trees,
 * ensemble/num_finalized_trees (every tree is grown whole in its step) and
 * ensemble/num_attempted_layers; examples: rows x trees grown this run. */
static rt_status tree_summary(run *R, const tg_booster *bo, uint64_t examples, rt_err *err)
{
    static const char *const tags[] = {"ensemble/num_trees", "ensemble/num_finalized_trees",
                                       "ensemble/num_attempted_layers"};
    const Predictd__TreeEnsemble *e = R->m->trees;
    int64_t layers = trn_gbdt_attempted_layers(e, R->c->gbdt.max_depth);
    if (layers < 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    double v[3] = {(double)e->n_trees, (double)e->n_trees, (double)layers};
    return trn_summary_scalars(R->sum, R->m->step, trn_gbdt_train_loss(bo), examples, tags, v,
                               3, err);
}

/*
 * BoostedTrees: the training set is read and binned once (trn_gbdt_load),
 * then one tree is a step: global_step counts the trees. Checkpoints (the
 * ensemble so far) every save_checkpoints_steps trees or
 * save_checkpoints_secs, evaluation after a checkpoint once throttle_secs
 * passed, SIGINT/SIGTERM after the current tree with a checkpoint, the
 * early-stopping hooks after each tree but the last, as the other
 * estimators. *sig receives the signal that stopped the run, 0 else.
 */
static rt_status train_trees(run *R, trn_dist *dist, int *sig, rt_err *err)
{
    const trn_config *c = R->c;
    trn_model *m = R->m;
    tg_data *d = NULL;
    float *labels = NULL;
    tg_booster *bo = NULL;
    rt_stops stops; /* SIGINT/SIGTERM blocked while training */
    int masked = 0;
    rt_status st;
    *sig = 0;
    if (c->stop_signal) {
        rt_stops_block(&stops, 0);
        masked = 1;
    }
    double t0 = now_s();
    if ((st = trn_gbdt_load(m->g, R->def->graph->trees, c, dist, &d, &labels, err)))
        goto out;
    double nall = (double)d->n_rows;
    if ((st = trn_dist_sum(dist, &nall, 1, err)))
        goto out;
    if (nall == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "train.files: no usable rows to grow trees from");
        goto out;
    }
    logf_(c, "BoostedTrees: %.0f examples, %zu inputs binned in %.2fs", nall, d->n_inputs,
          now_s() - t0);
    if ((st = trn_gbdt_new(d, labels, R->def->head->type, m->ld, &c->gbdt, dist,
                           R->def->graph->trees, &bo, err)))
        goto out;
    int64_t start = m->step, last_ckpt_step = m->step;
    int64_t last = trees_target(c);
    int64_t every = last >= 10 ? last / 10 : 1;
    double last_ckpt = now_s(), last_eval = now_s(), t1 = now_s();
    double cpu1 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    while (m->step < last) {
        trn_dist_at_step(dist, m->step);
        if ((st = trn_gbdt_step(bo, err))) {
            rt_err_prefix(err, "tree %lld", (long long)m->step);
            goto out;
        }
        m->step++;
        /* rank 0's clocks and any rank's stop signal decide for all */
        double flags[4] = {is_chief(c) && c->save_checkpoints_secs > 0 &&
                               now_s() - last_ckpt >= c->save_checkpoints_secs,
                           is_chief(c) && now_s() - last_eval >= c->throttle_secs,
                           masked && rt_stops_pending() ? 1.0 : 0.0,
                           is_chief(c) && trn_early_stop_secs_due(R->es, now_s())};
        if ((st = trn_dist_sum(dist, flags, 4, err)))
            goto out;
        if (m->step % every == 0 || m->step == last)
            logf_(c, "tree %lld of %lld: loss = %.6g (training set), %.2fs", (long long)m->step,
                  (long long)last, trn_gbdt_train_loss(bo), now_s() - t1);
        if (R->sum && c->save_summary_steps > 0 &&
            (m->step % c->save_summary_steps == 0 || m->step == last) &&
            (st = tree_summary(R, bo, (uint64_t)(nall * (double)(m->step - start)), err)))
            goto out;
        if (flags[2] > 0) {
            *sig = masked ? rt_stops_take() : 0;
            if (!*sig)
                *sig = SIGTERM; /* another rank's */
            break;
        }
        int due = c->job_dir && ((c->save_checkpoints_steps > 0 &&
                                  m->step - last_ckpt_step >= c->save_checkpoints_steps) ||
                                 flags[0] > 0);
        if (due && m->step < last) {
            if ((st = save_checkpoint(R, dist, 0, err)))
                goto out;
            logf_(c, "Saving checkpoints for %lld into %s/model.ckpt-%lld", (long long)m->step,
                  c->job_dir, (long long)m->step);
            last_ckpt = now_s();
            last_ckpt_step = m->step;
            if (flags[1] > 0) {
                if ((st = evaluate_and_export(R, 0, NULL, err)))
                    goto out;
                last_eval = now_s();
            }
        }
        /* the hooks as in the other loop: after the tree's checkpoint and
         * evaluation; the tree that reached the stop step is kept */
        if (R->es && m->step < last && (st = early_stop(R, dist, m->step, flags[3] > 0, err)))
            goto out;
        if (R->stopped_early)
            break;
    }
    double el = now_s() - t1, cpu = cpu_s(CLOCK_THREAD_CPUTIME_ID) - cpu1;
    logf_(c, "grew %lld trees from %.0f examples in %.2fs, cpu %.2fs (%.0f examples/s per "
          "tree and cpu second)", (long long)(m->step - start), nall, el, cpu,
          cpu > 0 ? nall * (double)(m->step - start) / cpu : 0.0);
    if (c->job_dir && last_ckpt_step != m->step) {
        if ((st = save_checkpoint(R, dist, 1, err)))
            goto out;
        logf_(c, "Saving checkpoints for %lld into %s/model.ckpt-%lld", (long long)m->step,
              c->job_dir, (long long)m->step);
    }
    if (masked && !*sig)
        *sig = rt_stops_take();
out:
    if (masked)
        rt_stops_restore(&stops);
    trn_gbdt_free(bo);
    trn_gbdt_data_free(d);
    free(labels);
    return st;
}

rt_status trn_train_and_evaluate(const cJSON *spec, const trn_config *cfg,
                                 rt_metric_list *final, rt_err *err)
{
    static const char *const mine[] = {"train", "eval", NULL};
    run R;
    memset(&R, 0, sizeof R);
    trn_config c = *cfg; /* shallow: strings stay cfg's */
    trn_feeder *fd = NULL;
    trn_reader *rd = NULL;
    trn_cache *cache = NULL;
    rt_batch *b = NULL;
    targets tg = {0};
    trn_dist *dist = NULL;
    int lock = -1, masked = 0, sig = 0;
    rt_stops stops; /* SIGINT/SIGTERM blocked while training */
    rt_status st;
    if (final)
        memset(final, 0, sizeof *final);
    if (c.stop_signal)
        *c.stop_signal = 0;
    blas_one_thread();
    if ((st = rt_spec_to_modeldef(spec, mine, &R.def, err)))
        goto out;
    if ((st = trn_config_resolve(&c, R.def, err)))
        goto out;
    /* every input file opens before anything is trained (a wrong eval path
     * is not found only after training); a path that names nothing is a
     * bad argument (exit 2), one that cannot be opened an I/O error */
    for (int k = 0; k < 2; k++) {
        char *const *files = k ? c.eval_files : c.train_files;
        size_t n = k ? c.n_eval_files : c.n_train_files;
        if (n && (st = trn_files_check((const char *const *)files, n, err))) {
            rt_err_prefix(err, "%s", k ? "eval.files (--eval-files)" : "train.files (--train-files)");
            if (st == RT_ERR_NOTFOUND)
                st = RT_ERR_INVALID;
            goto out;
        }
    }
    if (c.job_dir && is_chief(&c) &&
        ((st = trn_job_dir_check(c.job_dir, err)) || (st = trn_job_dir_lock(c.job_dir, &lock, err))))
        goto out;
    R.spec = spec;
    R.c = &c;
    R.last_ml_step = -1;
    if (R.def->graph->trees && c.warm.from) {
        st = rt_err_set(err, RT_ERR_UNSUPPORTED, "train.warm_start_from: warm starting is not "
                        "implemented for %s", R.def->graph->estimator);
        goto out;
    }
    if ((st = trn_early_stop_new(&c, &R.es, err)))
        goto out;
    R.spec_json = cJSON_PrintUnformatted(spec);
    if ((st = trn_model_new(R.def, &c, c.seed, &R.m, err)))
        goto out;
    R.m->trees = R.def->graph->trees; /* BoostedTrees: checkpointed with the model */
    if ((st = trn_dist_new(c.comm, &dist, err)))
        goto out;
    R.m->dist = dist;
    if (dist && R.m->batch_norm) {
        st = rt_err_set(err, RT_ERR_UNSUPPORTED, "estimator.batch_norm: not supported under "
                        "mpirun (each rank's batch statistics would move its own moving "
                        "mean and variance, and the replicas would differ); train it in one "
                        "process");
        goto out;
    }
    if (dist && trn_dist_rank(dist) > 0) /* dropout masks differ by rank */
        trn_rng_seed(&R.m->drop_rng, c.seed ^ 0xd0d0d0d0ULL ^
                                         ((uint64_t)trn_dist_rank(dist) * 0x9e3779b97f4a7c15ULL));
    int restored = 0;
    if (c.job_dir && is_chief(&c)) {
        rt_buf warn;
        rt_buf_init(&warn);
        int64_t step = 0;
        st = trn_ckpt_restore(R.m, c.job_dir, &step, &warn, err);
        if (st == RT_OK && warn.len)
            st = damaged_fallback(&c, step, &warn, err);
        rt_buf_free(&warn);
        if (st == RT_ERR_FORMAT && !strstr(err->msg, "changed?"))
            rt_err_prefix(err, "refusing to train from step 0 over damaged checkpoints "
                          "(TF's DataLossError; nothing was changed: restore a good copy, or "
                          "move them away to start again)");
        if (st == RT_OK)
            logf_(&c, "Restoring parameters from %s/model.ckpt-%lld", c.job_dir, (long long)step);
        else if (st != RT_ERR_NOTFOUND)
            goto out;
        restored = st == RT_OK;
        st = RT_OK;
        load_best(&R);
    }
    if (!restored && c.warm.from && is_chief(&c)) { /* a fresh start only, as TF */
        rt_buf msg;
        rt_buf_init(&msg);
        st = trn_warm_start_apply(R.m, &c, &msg, err);
        if (st == RT_OK && msg.len)
            logf_(&c, "%s", msg.data);
        rt_buf_free(&msg);
        if (st)
            goto out;
    }
    /* every replica starts from rank 0's parameters (restored or initial) */
    if ((st = trn_dist_bcast_model(dist, R.m, err)))
        goto out;
    if (R.m->trees)
        logf_(&c, "%s: %lld trees of depth %lld, learning rate %g, l1 %g, l2 %g, "
              "tree_complexity %g, pruning %s", R.def->graph->estimator,
              (long long)c.gbdt.n_trees, (long long)c.gbdt.max_depth, c.gbdt.learning_rate,
              c.gbdt.l1, c.gbdt.l2, c.gbdt.tree_complexity,
              c.gbdt.pruning == TRN_PRUNE_PRE ? "pre" : c.gbdt.pruning == TRN_PRUNE_POST ? "post"
                                                                                 : "none");
    else
    logf_(&c, "%s: %zu parameter tensors; linear optimizer %s lr %g, DNN optimizer %s lr %g",
          R.def->graph->estimator, R.m->n_params, trn_optim_name(c.linear_opt.type),
          c.linear_opt.learning_rate, trn_optim_name(c.dnn_opt.type), c.dnn_opt.learning_rate);
    int64_t start_step = R.m->step;
    int done = c.max_steps > 0 && R.m->step >= c.max_steps;
    if (R.m->trees) {
        done = R.m->step >= trees_target(&c);
        if (done)
            logf_(&c, "Skipping training: global step %lld has grown the %lld trees of %s "
                  "(a larger one grows on)", (long long)R.m->step,
                  (long long)trees_target(&c),
                  trees_target(&c) < c.gbdt.n_trees ? "train.max_steps" : "estimator.n_trees");
    } else if (done)
        logf_(&c, "Skipping training since max_steps has already saved: global step %lld "
              "has reached max_steps %lld (a larger --train-steps trains on)",
              (long long)R.m->step, (long long)c.max_steps);
    if (!done && c.n_train_files == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "train.files: no training files given "
                        "(--train-files)");
        goto out;
    }
    if (!done && R.m->trees) {
        if (c.job_dir && is_chief(&c) &&
            (st = trn_summary_open(c.job_dir, R.m->step, &R.sum, err)))
            goto out;
        st = train_trees(&R, dist, &sig, err);
        if (st)
            goto out;
        if (sig) {
            st = interrupted(&R, dist, sig, err);
            goto out;
        }
        done = 2; /* trained: evaluate and export below */
    }
    if (!done && c.max_steps == 0 && c.num_epochs == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "train: give max_steps (--train-steps) or "
                        "num_epochs (--num-epochs), or training never ends");
        goto out;
    }
    if (!done) {
        /* AUTO: this rank reads its files or rows, batches of its share of
         * batch_size; BATCH (or one process): the whole stream, global
         * batches, of which this rank takes its slice */
        int nr = trn_dist_size(dist), rank = trn_dist_rank(dist);
        int by_rows = dist && c.shard_policy == TRN_SHARD_AUTO;
        size_t local_bs = c.batch_size;
        if (by_rows) {
            if (c.batch_size < (size_t)nr) {
                st = rt_err_set(err, RT_ERR_INVALID, "train.batch_size: %zu is smaller than "
                                "the number of ranks (%d)", c.batch_size, nr);
                goto out;
            }
            local_bs = c.batch_size / (size_t)nr + ((size_t)rank < c.batch_size % (size_t)nr);
        }
        if (c.stop_signal) {
            /* blocked before the reader threads start, so they inherit it: a
             * signal stays pending until the loop looks, after a step */
            rt_stops_block(&stops, 0);
            masked = 1;
        }
        if ((st = trn_feeder_new(R.m->g, &fd, err)))
            goto out;
        /* rows kept across epochs: a quarter of the memory the model leaves, for
         * the reader's rows and as much for their features, at most 512 MiB each */
        uint64_t spare = trn_memory_spare(R.def, &c) / 4;
        input in = {fd, c.train_files, c.n_train_files, local_bs, by_rows ? (size_t)nr : 0,
                    (size_t)rank, &c, NULL, spare < (UINT64_C(512) << 20) ? spare
                                                                          : UINT64_C(512) << 20};
        if (!(cache = trn_cache_new(R.m->g, in.cache_bytes))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        in.cache = cache;
        if ((st = input_open(&in, &rd, err)))
            goto out;
        int64_t pass = 0; /* batches in one pass of num_epochs epochs, once known */
        if (R.m->step > 0) {
            if ((st = input_replay(&in, &rd, R.m->step, &pass, err)))
                goto out;
            logf_(&c, "Input position restored: global step %lld is batch %lld of a pass "
                  "over the input%s", (long long)R.m->step,
                  (long long)(pass ? R.m->step % pass : R.m->step),
                  pass ? " (the input restarted: the steps trained so far went past "
                         "num_epochs)" : "");
        }
        if (c.job_dir && is_chief(&c) &&
            (st = trn_summary_open(c.job_dir, R.m->step, &R.sum, err)))
            goto out;
        b = rt_batch_new(R.m->g);
        if (!b || targets_alloc(&tg, fd, c.batch_size)) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        progress pg;
        memset(&pg, 0, sizeof pg);
        pg.mode = c.progress;
        if (pg.mode == TRN_PROGRESS_AUTO)
            pg.mode = isatty(2) ? TRN_PROGRESS_BAR : TRN_PROGRESS_LINES;
        if (!is_chief(&c))
            pg.mode = TRN_PROGRESS_QUIET;
        pg.t0 = pg.last = now_s();
        double cpu0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), tcpu0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
        pg.step0 = R.m->step;
        pg.efrac0 = epoch_fraction(rd, c.num_epochs);
        pg.batch = c.batch_size;
        pg.last_loss = NAN;
        double last_ckpt = now_s(), last_eval = now_s();
        int64_t last_ckpt_step = R.m->step, in_pass = 0, epochs = 0;
        uint64_t bad_before = 0, bad_distinct = 0; /* the readers' before the restarts */
        uint64_t examples = 0, bad_labels = 0;
        int local_end = 0, restarted = 0;
        while (c.max_steps == 0 || R.m->step < c.max_steps) {
            const trn_rows *rows;
            size_t n_local = 0;
            if (!local_end) {
                st = input_next(&in, rd, &rows, err);
                if (st == RT_ERR_NOTFOUND) {
                    st = RT_OK;
                    local_end = 1;
                } else if (st) {
                    goto out;
                } else {
                    trn_rows part = *rows;
                    if (dist && !by_rows) {
                        size_t lo, hi;
                        trn_dist_slice(dist, rows->n, &lo, &hi);
                        part = rows_slice(rows, lo, hi);
                    }
                    /* the features of the step (b NULL below); a row refused is a
                     * data error, as feed() says */
                    if ((st = trn_cache_fill(cache, fd, &part, b, trn_model_features(R.m),
                                             tg.labels, tg.weights, c.bad_rows, &bad_labels,
                                             &n_local, err))) {
                        if (st == RT_ERR_INVALID)
                            st = RT_ERR_FORMAT;
                        goto out;
                    }
                }
            }
            /* flags: this rank still reads; the clock-based decisions (rank
             * 0's, under MPI: summed with the gradients, every rank learns
             * them); a stop signal seen by any rank */
            float flags[5] = {local_end ? 0.0f : 1.0f,
                              is_chief(&c) && c.save_checkpoints_secs > 0 &&
                                  now_s() - last_ckpt >= c.save_checkpoints_secs,
                              is_chief(&c) && now_s() - last_eval >= c.throttle_secs,
                              masked && rt_stops_pending() ? 1.0f : 0.0f,
                              is_chief(&c) && trn_early_stop_secs_due(R.es, now_s())};
            double loss = 0;
            size_t n_global = n_local;
            int ended = 0;
            if (!dist) {
                ended = local_end;
                if (!ended && n_local > 0) /* features made by trn_cache_fill */
                    st = trn_model_train_step(R.m, NULL, tg.labels, tg.weights, &loss, err);
            } else {
                R.m->grad_denom = 1; /* sums: scaled once the global count is known */
                if (n_local)
                    st = trn_model_gradients(R.m, NULL, tg.labels, tg.weights, &loss, err);
                else
                    trn_model_clear_grads(R.m);
                if (st == RT_OK)
                    st = trn_dist_step(dist, R.m, &loss, n_local, flags, 5, &n_global, err);
                ended = st == RT_OK && flags[0] == 0; /* every rank's data has ended */
                if (st == RT_OK && !ended && n_global > 0)
                    trn_model_apply(R.m);
            }
            if (st) {
                rt_err_prefix(err, "step %lld", (long long)R.m->step);
                goto out;
            }
            if (flags[3] > 0) { /* after this step (if it was one): checkpoint and stop */
                sig = masked ? rt_stops_take() : 0;
                if (!sig)
                    sig = SIGTERM; /* another rank's */
                if (!ended && n_global > 0)
                    examples += n_global;
                break;
            }
            if (ended) {
                /* the end of a pass over the input (num_epochs epochs); with
                 * max_steps not reached, the input restarts from the beginning,
                 * as estimator.train(max_steps) calls input_fn again */
                if (c.max_steps == 0 || (in_pass == 0 && restarted))
                    break; /* no max_steps, or a whole pass without a step */
                trn_reader_stats rs;
                trn_reader_get_stats(rd, &rs);
                epochs += rs.epochs;
                bad_before += rs.bad_rows;
                bad_distinct = rs.bad_rows_distinct > bad_distinct ? rs.bad_rows_distinct
                                                                    : bad_distinct;
                restarted = 1;
                logf_(&c, "Input exhausted at global step %lld (%lld epochs); restarting it "
                      "to reach max_steps %lld", (long long)R.m->step,
                      (long long)c.num_epochs, (long long)c.max_steps);
                if ((st = input_open(&in, &rd, err)))
                    goto out;
                local_end = 0;
                in_pass = 0;
                continue;
            }
            if (n_global == 0) /* every row skipped: not a step */
                continue;
            in_pass++;
            examples += n_global;
            pg.loss_sum += loss;
            pg.loss_n++;
            int64_t step = R.m->step;
            if (R.sum && c.save_summary_steps > 0 && step % c.save_summary_steps == 0 &&
                (st = trn_summary_train(R.sum, R.m, n_local, loss, examples, err)))
                goto out;
            if (step % c.log_step_count_steps == 0 || pg.mode == TRN_PROGRESS_BAR)
                progress_show(&pg, step, c.max_steps, epoch_fraction(rd, c.num_epochs), 0);
            int ckpt_due = c.job_dir && ((c.save_checkpoints_steps > 0 &&
                                          step - last_ckpt_step >= c.save_checkpoints_steps) ||
                                         flags[1] > 0);
            if (ckpt_due) {
                if ((st = save_checkpoint(&R, dist, 0, err)))
                    goto out;
                if (pg.mode != TRN_PROGRESS_BAR && pg.mode != TRN_PROGRESS_QUIET)
                    logf_(&c, "Saving checkpoints for %lld into %s/model.ckpt-%lld",
                          (long long)step, c.job_dir, (long long)step);
                last_ckpt = now_s();
                last_ckpt_step = step;
                if (flags[2] > 0 && (c.max_steps == 0 || step < c.max_steps)) {
                    if ((st = evaluate_and_export(&R, 0, NULL, err)))
                        goto out;
                    last_eval = now_s();
                }
            }
            if (R.es && (st = early_stop(&R, dist, step, flags[4] > 0, err)))
                goto out;
            if (R.stopped_early)
                break;
        }
        if (R.m->step > start_step || sig) {
            progress_show(&pg, R.m->step, c.max_steps, epoch_fraction(rd, c.num_epochs), 1);
            double el = now_s() - pg.t0;
            double cpu = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
            double tcpu = cpu_s(CLOCK_THREAD_CPUTIME_ID) - tcpu0;
            trn_reader_stats rs;
            trn_reader_get_stats(rd, &rs);
            logf_(&c, "trained %lld steps, %llu examples in %.2fs (%.0f examples/s), %lld "
                  "epochs; CPU %.2fs (%.0f examples per CPU-second; training thread %.2fs, "
                  "other threads %.2fs)", (long long)(R.m->step - pg.step0),
                  (unsigned long long)examples, el, el > 0 ? (double)examples / el : 0.0,
                  (long long)(epochs + rs.epochs), cpu, cpu > 0 ? (double)examples / cpu : 0.0,
                  tcpu, cpu - tcpu);
            if (dist) {
                trn_dist_timing tm;
                trn_dist_stats(dist, &tm);
                double k = tm.steps ? 1e6 / (double)tm.steps : 0.0;
                double stp = (tm.compute_s + tm.wait_s + tm.exchange_s) * k;
                logf_(&c, "distributed: %d ranks, communication %.3fs (%.1f us per step, %.0f%% "
                      "of the time; includes waiting for the slowest rank)", nr, tm.comm_s,
                      tm.rounds ? tm.comm_s * 1e6 / (double)tm.rounds : 0.0,
                      el > 0 ? 100.0 * tm.comm_s / el : 0.0);
                logf_(&c, "distributed: a step %.1f us = compute %.1f us (slowest rank %.1f us) "
                      "+ waiting for the slowest rank %.1f us + exchange %.1f us", stp,
                      tm.compute_s * k, tm.slowest_s * k, tm.wait_s * k, tm.exchange_s * k);
            }
            /* every epoch skips the same rows again: the distinct rows, and how
             * many times over how many epochs (all ranks') */
            if (rs.bad_rows_distinct > bad_distinct)
                bad_distinct = rs.bad_rows_distinct;
            double skips[4] = {(double)(bad_before + rs.bad_rows), (double)bad_labels,
                               (double)bad_distinct, (double)trn_cache_distinct_skips(cache)};
            if ((st = trn_dist_sum(dist, skips, 4, err)))
                goto out;
            int64_t ep = epochs + rs.epochs + (rs.bytes > 0);
            char first[RT_ERR_MAX + 64];
            snprintf(first, sizeof first, "first%s: %s", dist ? " of rank 0's" : "",
                     rs.first_bad[0] ? rs.first_bad : "none, all on other ranks");
            if (skips[0] > 0)
                skip_report(&c, (uint64_t)skips[2], (uint64_t)skips[0], ep, "malformed row",
                            "", first);
            if (skips[1] > 0)
                skip_report(&c, (uint64_t)skips[3], (uint64_t)skips[1], ep, "row",
                            " with an unknown label", NULL);
        } else if (R.m->step > 0) {
            done = 1;
            logf_(&c, "Skipping training: the input (num_epochs %lld) was trained through at "
                  "global step %lld; give --train-steps above it to train on",
                  (long long)c.num_epochs, (long long)R.m->step);
        } else {
            logf_(&c, "the training files hold no usable rows: nothing trained");
        }
        if (c.job_dir && last_ckpt_step != R.m->step) {
            if ((st = save_checkpoint(&R, dist, 1, err)))
                goto out;
            logf_(&c, "Saving checkpoints for %lld into %s/model.ckpt-%lld", (long long)R.m->step,
                  c.job_dir, (long long)R.m->step);
        }
        /* the loop's last checkpoint may still be on its way to the disk */
        if ((st = trn_ckpt_wait(R.ckw, err)))
            goto out;
        if (masked) {
            if (!sig)
                sig = rt_stops_take(); /* came during the last checkpoint */
            rt_stops_restore(&stops);
            masked = 0;
        }
        if (sig) {
            st = interrupted(&R, dist, sig, err);
            goto out;
        }
    }
    if (done == 1) {
        /* nothing trained: as TF, no new evaluation or export, unless the
         * run that reached this step ended before exporting it */
        double have = is_chief(&c) && exported_at(&R, R.m->step);
        if ((st = trn_dist_sum(dist, &have, 1, err)))
            goto out;
        if (have > 0) {
            logf_(&c, "global step %lld is already exported: nothing to do",
                  (long long)R.m->step);
            goto out;
        }
        if (!R.sum && c.job_dir && is_chief(&c) &&
            (st = trn_summary_open(c.job_dir, R.m->step, &R.sum, err)))
            goto out;
    }
    st = evaluate_and_export(&R, 1, final, err);
out:
    if (R.ckw) { /* a save in flight ends before the job dir is unlocked */
        rt_status cst = trn_ckpt_wait(R.ckw, st ? NULL : err);
        if (st == RT_OK)
            st = cst;
        trn_ckpt_writer_free(R.ckw);
    }
    if (masked)
        rt_stops_restore(&stops);
    trn_summary_close(R.sum);
    trn_early_stop_free(R.es);
    targets_free(&tg);
    rt_batch_free(b);
    trn_reader_close(rd);
    trn_cache_free(cache);
    trn_feeder_free(fd);
    trn_model_free(R.m);
    trn_dist_free(dist);
    rt_modeldef_free(R.def);
    free(R.spec_json);
    trn_job_dir_unlock(lock);
    return st;
}
