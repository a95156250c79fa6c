/*
 * pm_eval_specs.c — predict-model evaluate's slice specs: parsing --slice
 * ("gender", crossed "gender,race") against the export's raw columns, the
 * slices found by their key (a row's spec index and trimmed cells), their
 * order, the metrics a slices table shows for a head's type, and the CSV
 * file loop (pm_eval.c and pm_eval_heads.c both use them).
 */
#include "pm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_SEP '\x1f'

rt_status pm_eval_parse_specs(pm_eval *e, const pm_eval_opts *o,
                              const Predictd__ModelDef *def, size_t ***spec_cols, rt_err *err)
{
    size_t n_cols = def->n_raw_columns;
    e->specs = calloc(o->n_slices ? o->n_slices : 1, sizeof *e->specs);
    *spec_cols = calloc(o->n_slices ? o->n_slices : 1, sizeof **spec_cols);
    if (!e->specs || !*spec_cols)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t **cols = *spec_cols;
    for (size_t s = 0; s < o->n_slices; s++) {
        const char *spec = o->slices[s];
        pm_eval_spec *sp = &e->specs[e->n_specs];
        sp->name = strdup(spec);
        size_t n = 1;
        for (const char *p = spec; *p; p++)
            n += *p == ',';
        sp->columns = calloc(n, sizeof *sp->columns);
        cols[e->n_specs] = calloc(n, sizeof **cols);
        e->n_specs++;
        if (!sp->name || !sp->columns || !cols[e->n_specs - 1])
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        const char *p = spec;
        for (size_t k = 0; k < n; k++) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            size_t tl = len;
            const char *t = rt_buf_trim_span(p, &tl);
            long col = -1;
            for (size_t j = 0; j < n_cols; j++) {
                const char *name = def->raw_columns[j]->name;
                if (strlen(name) == tl && memcmp(name, t, tl) == 0)
                    col = (long)j;
            }
            if (col < 0) {
                rt_buf names;
                rt_buf_init(&names);
                int rc = 0;
                for (size_t j = 0; j < n_cols; j++)
                    rc |= rt_buf_printf(&names, "%s%s", j ? ", " : "",
                                        def->raw_columns[j]->name);
                if (rc) {
                    rt_buf_free(&names);
                    return rt_err_set(err, RT_ERR_NOMEM, "--slice %s: out of memory", spec);
                }
                rt_status st = rt_err_set(err, RT_ERR_INVALID,
                                          "--slice %s: no column \"%.*s\" in the spec (columns: "
                                          "%s)", spec, (int)tl, t, names.data ? names.data : "");
                rt_buf_free(&names);
                return st;
            }
            for (size_t q = 0; q < sp->n_columns; q++)
                if (sp->columns[q] == def->raw_columns[col]->name)
                    return rt_err_set(err, RT_ERR_INVALID, "--slice %s: column \"%.*s\" twice",
                                      spec, (int)tl, t);
            sp->columns[sp->n_columns] = def->raw_columns[col]->name;
            cols[e->n_specs - 1][sp->n_columns++] = (size_t)col;
            p = end ? end + 1 : p + len;
        }
    }
    return RT_OK;
}

const char *const *pm_eval_slice_metrics(const pm_eval *e)
{
    static const char *const binary[] = {"accuracy", "auc", "precision", "recall",
                                         "average_loss", "label/mean", "prediction/mean",
                                         NULL};
    static const char *const multi[] = {"accuracy", "average_loss", NULL};
    static const char *const regression[] = {"average_loss", "label/mean", "prediction/mean",
                                             NULL};
    static const char *const mlabel[] = {"auc", "auc_precision_recall", "average_loss", NULL};
    if (e->slice_metrics) /* several heads */
        return (const char *const *)e->slice_metrics;
    return e->head == PREDICTD__HEAD_TYPE__HEAD_BINARY        ? binary
           : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ? multi
           : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? mlabel
                                                              : regression;
}

/* ------------------------------------------------------------- slice keys */

/* Doubles k's table (64 slots at first), every slice put back. */
static int keys_grow(pm_eval_keys *k, const pm_eval *e)
{
    size_t cap = k->cap ? k->cap * 2 : 64;
    size_t *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < k->cap; i++) {
        size_t x = k->table[i];
        if (!x)
            continue;
        const char *key = e->slices[x - 1].key;
        size_t h = (size_t)rt_hash_fingerprint64(key, strlen(key)) & (cap - 1);
        while (t[h])
            h = (h + 1) & (cap - 1);
        t[h] = x;
    }
    free(k->table);
    k->table = t;
    k->cap = cap;
    return 0;
}

/* A new slice of spec s for the key in k->key: its key and its values (the
 * key's parts after the spec's index). */
static rt_status keys_add(pm_eval_keys *k, pm_eval *e, size_t s, rt_err *err)
{
    if (rt_grow(&e->slices, &k->slices_cap, e->n_slices + 1, sizeof *e->slices) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    pm_eval_slice *sl = &e->slices[e->n_slices];
    memset(sl, 0, sizeof *sl);
    e->n_slices++;
    sl->spec = s;
    size_t nv = e->specs[s].n_columns;
    sl->key = strdup(k->key.data);
    sl->values = calloc(nv ? nv : 1, sizeof *sl->values);
    if (!sl->key || !sl->values)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    const char *p = strchr(sl->key, KEY_SEP) + 1;
    for (size_t q = 0; q < nv; q++) {
        const char *end = strchr(p, KEY_SEP);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!(sl->values[q] = strndup(p, len)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        p = end ? end + 1 : p + len;
    }
    return RT_OK;
}

rt_status pm_eval_keys_slice(pm_eval_keys *k, pm_eval *e, size_t s, const size_t *cols,
                             const char *buf, const rt_csv_span *spans, size_t *out,
                             int *added, rt_err *err)
{
    *added = 0;
    rt_buf_reset(&k->key);
    if (rt_buf_printf(&k->key, "%zu", s))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t q = 0; q < e->specs[s].n_columns; q++) {
        rt_csv_span sp = spans[cols[q]];
        size_t cl = sp.len;
        const char *c = rt_buf_trim_span(buf + sp.off, &cl);
        char sep = KEY_SEP;
        if (rt_buf_append(&k->key, &sep, 1) || rt_buf_append(&k->key, c, cl))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (2 * (e->n_slices + 1) > k->cap && keys_grow(k, e))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t mask = k->cap - 1;
    size_t h = (size_t)rt_hash_fingerprint64(k->key.data, k->key.len) & mask;
    while (k->table[h] && strcmp(e->slices[k->table[h] - 1].key, k->key.data) != 0)
        h = (h + 1) & mask;
    if (!k->table[h]) {
        if (e->n_slices >= PM_EVAL_MAX_SLICES)
            return rt_err_set(err, RT_ERR_LIMIT, "--slice %s: more than %d slices in all",
                              e->specs[s].name, PM_EVAL_MAX_SLICES);
        rt_status st = keys_add(k, e, s, err);
        if (st)
            return st;
        k->table[h] = e->n_slices;
        *added = 1;
    }
    *out = k->table[h] - 1;
    return RT_OK;
}

void pm_eval_keys_free(pm_eval_keys *k)
{
    free(k->table);
    rt_buf_free(&k->key);
    memset(k, 0, sizeof *k);
}

static int by_spec_count(const void *a, const void *b)
{
    const pm_eval_slice *x = a, *y = b;
    if (x->spec != y->spec)
        return (x->spec > y->spec) - (x->spec < y->spec);
    if (x->count != y->count)
        return (x->count < y->count) - (x->count > y->count);
    return strcmp(x->key, y->key);
}

void pm_eval_order_slices(pm_eval *e, const char *metric, bool higher_worse)
{
    if (e->n_slices)
        qsort(e->slices, e->n_slices, sizeof *e->slices, by_spec_count);
    double sign = higher_worse ? 1.0 : -1.0;
    for (size_t s = 0; s < e->n_specs; s++) {
        long worst = -1;
        double wb = 0;
        for (size_t k = 0; k < e->n_slices; k++) {
            double b = sign * rt_metric_get(&e->slices[k].metrics, metric);
            if (e->slices[k].spec != s || isnan(b))
                continue;
            if (worst < 0 || b > wb) {
                worst = (long)k;
                wb = b;
            }
        }
        if (worst >= 0)
            e->slices[worst].worst = 1;
    }
}

/* --------------------------------------------------------------- CSV files */

rt_status pm_eval_read_csv(const char *path, size_t skip, size_t n_cols, pm_eval_row_fn row,
                           void *ctx, rt_err *err)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                          "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL, *buf = NULL;
    size_t cap = 0, buf_cap = 0;
    rt_csv_span *spans = calloc(n_cols + 1, sizeof *spans);
    ssize_t got;
    uint64_t lineno = 0;
    rt_status st = spans ? RT_OK : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    while (!st && (got = getline(&line, &cap, fp)) >= 0) {
        if (++lineno <= skip)
            continue;
        size_t len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        size_t tl = len;
        rt_buf_trim_span(line, &tl);
        if (tl == 0)
            continue; /* blank line, as the trainer's reader skips it */
        if (len + 1 > buf_cap) {
            char *nb = realloc(buf, len + 1);
            if (!nb) {
                st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                break;
            }
            buf = nb;
            buf_cap = len + 1;
        }
        st = row(ctx, line, len, buf, spans, lineno, err);
    }
    if (!st && ferror(fp))
        st = rt_err_set(err, RT_ERR_IO, "%s: read error: %s", path, strerror(errno));
    free(spans);
    free(buf);
    free(line);
    fclose(fp);
    return st;
}
