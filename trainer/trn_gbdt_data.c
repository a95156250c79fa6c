/*
 * trn_gbdt_data.c — the BoostedTrees training set: the training files read
 * once through the CSV pipeline (reader, feeder and the serving transform,
 * so training sees the values serving will), each tree input's value
 * (numeric) or id (the others) kept per row, numeric inputs cut into
 * quantile bins whose edges every rank agrees on, as a tg_data in memory.
 */
#include "trn_run_internal.h" /* trn_stats_rows */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One input's column values while reading. */
typedef struct col_buf {
    long fc;           /* feature column whose values / ids are read */
    tg_kind kind;
    uint32_t cats;     /* id space (categorical, ordinal) */
    float *vals;       /* numeric */
    uint16_t *ids;     /* the others: id, or cats when missing */
} col_buf;

static long find_fc(const Predictd__ModelDef *def, const char *name)
{
    for (size_t i = 0; i < def->n_feature_columns; i++)
        if (strcmp(def->feature_columns[i]->name, name) == 0)
            return (long)i;
    return -1;
}

void trn_gbdt_data_free(tg_data *d)
{
    if (!d)
        return;
    for (size_t j = 0; j < d->n_inputs; j++) {
        if (d->edges)
            free(d->edges[j]);
        if (d->bins)
            free(d->bins[j]);
    }
    free(d->edges);
    free(d->bins);
    free(d->kind);
    free(d->n_bins);
    free(d);
}

/* The inputs of the ensemble: which feature column each reads and how. */
static rt_status plan_inputs(const Predictd__ModelDef *def, const Predictd__TreeEnsemble *e,
                             col_buf *cb, rt_err *err)
{
    for (size_t j = 0; j < e->n_inputs; j++) {
        const Predictd__TreeInput *in = e->inputs[j];
        long fc = find_fc(def, in->column);
        if (fc < 0)
            return rt_err_set(err, RT_ERR_INVALID, "trees: input %s is not a feature column",
                              in->column);
        const Predictd__FeatureColumn *f = def->feature_columns[fc];
        if (f->type == PREDICTD__COLUMN_TYPE__INDICATOR) {
            fc = find_fc(def, f->categorical_column);
            if (fc < 0)
                return rt_err_set(err, RT_ERR_INVALID, "trees: input %s: no column %s",
                                  in->column, f->categorical_column);
        }
        Predictd__ColumnType t = def->feature_columns[fc]->type;
        cb[j].fc = fc;
        cb[j].cats = in->num_categories;
        cb[j].kind = t == PREDICTD__COLUMN_TYPE__NUMERIC      ? TG_NUMERIC
                     : t == PREDICTD__COLUMN_TYPE__BUCKETIZED ? TG_ORDINAL
                                                              : TG_CATEGORICAL;
        if (cb[j].kind != TG_NUMERIC && cb[j].cats > TG_MAX_CATEGORIES)
            return rt_err_set(err, RT_ERR_LIMIT, "trees: input %s has %u categories; the "
                              "trainer bins at most %d (a smaller hash_bucket_size or "
                              "vocabulary)", in->column, cb[j].cats, TG_MAX_CATEGORIES);
    }
    return RT_OK;
}

/* Appends the transformed batch's inputs at rows [at, at + n). */
static void take_batch(const rt_features *f, col_buf *cb, size_t n_inputs, size_t at)
{
    size_t n = f->n;
    for (size_t j = 0; j < n_inputs; j++) {
        col_buf *c = &cb[j];
        size_t k = (size_t)c->fc;
        if (c->kind == TG_NUMERIC) {
            for (size_t i = 0; i < n; i++)
                c->vals[at + i] = f->values[k][i * f->width[k]];
            continue;
        }
        const rt_ids *ids = &f->ids[k];
        for (size_t i = 0; i < n; i++) {
            uint16_t v = (uint16_t)c->cats; /* missing: no id, or out of range */
            if (ids->offsets[i + 1] > ids->offsets[i]) {
                int64_t id = ids->ids[ids->offsets[i]];
                if (id >= 0 && (uint64_t)id < c->cats)
                    v = (uint16_t)id;
            }
            c->ids[at + i] = v;
        }
    }
}

static int grow_to(col_buf *cb, size_t n_inputs, float **labels, size_t ldim, size_t cap)
{
    for (size_t j = 0; j < n_inputs; j++) {
        if (cb[j].kind == TG_NUMERIC) {
            float *q = realloc(cb[j].vals, cap * sizeof *q);
            if (!q)
                return -1;
            cb[j].vals = q;
        } else {
            uint16_t *q = realloc(cb[j].ids, cap * sizeof *q);
            if (!q)
                return -1;
            cb[j].ids = q;
        }
    }
    float *l = realloc(*labels, cap * ldim * sizeof *l);
    if (!l)
        return -1;
    *labels = l;
    return 0;
}

/*
 * The edges of numeric input j from every rank's non-missing values: rank 0
 * gathers them, cuts the quantiles and sends the edges to all (the exact
 * quantiles of the whole training set, so any number of ranks bins as one
 * process does).
 */
static rt_status agree_edges(trn_dist *dist, const float *vals, size_t n, double eps,
                             float **edges, size_t *n_edges, rt_err *err)
{
    float *mine = malloc((n ? n : 1) * sizeof *mine);
    if (!mine)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(vals[i]))
            mine[k++] = vals[i];
    rt_status st;
    if (!dist) {
        st = trn_gbdt_edges(mine, k, eps, edges, n_edges, err);
        free(mine);
        return st;
    }
    void *recv = NULL;
    const size_t *lens = NULL;
    st = trn_dist_gather(dist, mine, k * sizeof *mine, &recv, &lens, err);
    free(mine);
    if (st)
        return st;
    uint64_t ne = 0;
    float *e = NULL;
    if (trn_dist_rank(dist) == 0) {
        size_t total = 0;
        for (int r = 0; r < trn_dist_size(dist); r++)
            total += lens[r] / sizeof(float);
        size_t m = 0;
        if ((st = trn_gbdt_edges(recv, total, eps, &e, &m, err)))
            return st;
        ne = m;
    }
    if ((st = trn_dist_bcast(dist, &ne, sizeof ne, err)))
        goto out;
    if (trn_dist_rank(dist) != 0 && ne && !(e = malloc(ne * sizeof *e))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (ne && (st = trn_dist_bcast(dist, e, ne * sizeof *e, err)))
        goto out;
    *edges = e;
    *n_edges = (size_t)ne;
    e = NULL;
out:
    free(e);
    return st;
}

/*
 * Reads the training files (this rank's files or rows) through the feeder
 * and the serving transform into the inputs' columns cb and the labels
 * (*labels, ldim a row; *n rows; both grown here, freed by the caller).
 */
static rt_status read_inputs(const rt_graph *g, const trn_config *c, trn_dist *dist,
                             trn_stats *stats, col_buf *cb, size_t ni, float **labels,
                             size_t *n_out, rt_err *err)
{
    trn_feeder *fd = NULL;
    trn_reader *rd = NULL;
    rt_batch *b = NULL;
    rt_features f;
    rt_transform_features_init(&f);
    float *bl = NULL;
    size_t *row_of = NULL; /* each instance's row (FILE:LINE in errors) */
    size_t n = 0, cap = 0;
    rt_status st;
    if ((st = trn_feeder_new(g, &fd, err)))
        goto out;
    size_t ldim = trn_feeder_label_dim(fd), bs = 4096;
    /* AUTO: this rank's files or rows; BATCH: every batch, this rank's slice */
    int by_rows = dist && c->shard_policy == TRN_SHARD_AUTO;
    if (stats)
        stats->merge = by_rows;
    if ((st = trn_open_reader(fd, c->train_files, c->n_train_files, bs, 0, 1, c->seed,
                              c->bad_rows, c->skip_header_lines,
                              by_rows ? (size_t)trn_dist_size(dist) : 0,
                              (size_t)trn_dist_rank(dist), 0, c->input_format, &rd, err)))
        goto out;
    b = rt_batch_new(g);
    bl = malloc(bs * ldim * sizeof *bl);
    row_of = malloc(bs * sizeof *row_of);
    if (!b || !bl || !row_of) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    uint64_t bad_labels = 0;
    for (;;) {
        const trn_rows *rows;
        st = trn_reader_next(rd, &rows, err);
        if (st == RT_ERR_NOTFOUND) {
            st = RT_OK;
            break;
        }
        if (st == RT_OK && stats)
            st = trn_stats_rows(stats, rows, err);
        if (st)
            goto out;
        trn_rows part = *rows;
        if (dist && !by_rows) {
            size_t lo, hi;
            trn_dist_slice(dist, rows->n, &lo, &hi);
            part.n = hi - lo;
            part.fields = rows->fields + lo * rows->n_fields;
            part.src_file = rows->src_file + lo;
            part.src_line = rows->src_line + lo;
        }
        st = trn_feeder_fill_rows(fd, &part, b, bl, NULL, row_of, c->bad_rows, &bad_labels,
                                  err);
        if (st)
            goto out;
        size_t nb = rt_batch_size(b);
        if (nb == 0)
            continue;
        if ((st = rt_transform(g, b, &f, err))) {
            st = trn_err_at_row(st == RT_ERR_INVALID ? RT_ERR_FORMAT : st, &part, row_of, nb,
                                err);
            goto out;
        }
        if (n + nb > cap) {
            size_t nc = cap ? cap * 2 : 65536;
            while (nc < n + nb)
                nc *= 2;
            if (nc > UINT32_MAX || grow_to(cb, ni, labels, ldim, nc) != 0) {
                st = rt_err_set(err, RT_ERR_NOMEM, "trees: out of memory holding %zu "
                                "training rows", n + nb);
                goto out;
            }
            cap = nc;
        }
        take_batch(&f, cb, ni, n);
        memcpy(*labels + n * ldim, bl, nb * ldim * sizeof *bl);
        n += nb;
    }
    *n_out = n;
out:
    free(bl);
    free(row_of);
    rt_transform_features_free(&f);
    rt_batch_free(b);
    trn_reader_close(rd);
    trn_feeder_free(fd);
    return st;
}

/*
 * The binned training set of the n rows read into cb: ids as they are,
 * numeric values cut at the edges every rank agrees on (which must be a
 * restored checkpoint's, and are recorded in ens's inputs else).
 */
static rt_status bin_inputs(Predictd__TreeEnsemble *ens, const col_buf *cb, size_t n,
                            const trn_config *c, trn_dist *dist, tg_data **out, rt_err *err)
{
    size_t ni = ens->n_inputs;
    rt_status st = RT_OK;
    tg_data *d = calloc(1, sizeof *d);
    if (!d || !(d->kind = calloc(ni, sizeof *d->kind)) ||
        !(d->n_bins = calloc(ni, sizeof *d->n_bins)) ||
        !(d->edges = calloc(ni, sizeof *d->edges)) || !(d->bins = calloc(ni, sizeof *d->bins))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    d->n_rows = n;
    d->n_inputs = ni;
    for (size_t j = 0; j < ni; j++) {
        Predictd__TreeInput *in = ens->inputs[j];
        d->kind[j] = cb[j].kind;
        if (!(d->bins[j] = malloc((n ? n : 1) * sizeof *d->bins[j]))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (cb[j].kind != TG_NUMERIC) {
            d->n_bins[j] = cb[j].cats + 1;
            if (n)
                memcpy(d->bins[j], cb[j].ids, n * sizeof *d->bins[j]);
            continue;
        }
        size_t ne = 0;
        if ((st = agree_edges(dist, cb[j].vals, n, c->gbdt.quantile_sketch_epsilon,
                              &d->edges[j], &ne, err)))
            goto out;
        d->n_bins[j] = (uint32_t)ne + 1;
        for (size_t i = 0; i < n; i++)
            d->bins[j][i] = (uint16_t)trn_gbdt_bin(d->edges[j], ne, cb[j].vals[i]);
        /* a checkpoint's edges must be these (same data, same epsilon) */
        if (in->n_bin_upper) {
            if (in->n_bin_upper != ne ||
                memcmp(in->bin_upper, d->edges[j], ne * sizeof *d->edges[j]) != 0) {
                st = rt_err_set(err, RT_ERR_INVALID, "trees: input %s: the training data's "
                                "bins differ from the checkpoint's (the files or "
                                "quantile_sketch_epsilon changed? use a new --job-dir)",
                                in->column);
                goto out;
            }
            continue;
        }
        if (ne && !(in->bin_upper = malloc(ne * sizeof *in->bin_upper))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (ne)
            memcpy(in->bin_upper, d->edges[j], ne * sizeof *in->bin_upper);
        in->n_bin_upper = ne;
    }
    *out = d;
    d = NULL;
out:
    trn_gbdt_data_free(d);
    return st;
}

rt_status trn_gbdt_load(const rt_graph *g, Predictd__TreeEnsemble *ens, const trn_config *c,
                        trn_dist *dist, struct trn_stats *stats, tg_data **out,
                        float **labels_out, rt_err *err)
{
    const Predictd__ModelDef *def = rt_graph_def(g);
    size_t ni = ens->n_inputs, n = 0;
    *out = NULL;
    *labels_out = NULL;
    if (ni == 0)
        return rt_err_set(err, RT_ERR_INVALID, "estimator.feature_columns: the trees read no "
                          "column");
    float *labels = NULL;
    col_buf *cb = calloc(ni, sizeof *cb);
    rt_status st = RT_OK;
    if (!cb) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((st = plan_inputs(def, ens, cb, err)) ||
        (st = read_inputs(g, c, dist, stats, cb, ni, &labels, &n, err)) ||
        (st = bin_inputs(ens, cb, n, c, dist, out, err)))
        goto out;
    *labels_out = labels;
    labels = NULL;
out:
    if (cb)
        for (size_t j = 0; j < ni; j++) {
            free(cb[j].vals);
            free(cb[j].ids);
        }
    free(cb);
    free(labels);
    return st;
}
