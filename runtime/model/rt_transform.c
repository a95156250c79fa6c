/*
 * rt_transform.c — the serving input function's transforms: runs a graph's
 * feature columns over a batch of raw instances, with TensorFlow's
 * semantics (bit-exact ids): numeric (defaults, normalizer), bucketized,
 * vocabulary (list/file, OOV buckets, default id), identity, hash bucket,
 * crossed (sparse_cross_hashed), weighted, embedding (mean/sum/sqrtn,
 * shared tables too) and indicator, then
 * the DNN input vector in rt_graph_dnn_layout order. Memory lives in the
 * rt_features and is reused from call to call.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"
#include "rt_model_limits.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")

/* Storage behind rt_features, per feature column slot. */
typedef struct feat_priv {
    size_t slots;        /* length of the per-column arrays below */
    uint32_t **offs;     /* CSR offsets */
    size_t *offs_cap;
    int64_t **ids;
    size_t *ids_cap;
    float **wts;         /* weighted columns: a weight per id */
    size_t *wts_cap;
    float **vals;
    size_t *vals_cap;
    float *dnn;          /* n x dnn_dim */
    size_t dnn_cap;
    uint64_t *cross;     /* crossed: part hashes of one instance */
    size_t cross_cap;
    const struct rt_fc_kind **kinds; /* [slots] each column's kind (prepare) */
    size_t *first;       /* the columns of the passes that read the batch, in order: */
    size_t n_first;      /* what a record holds (rt_transform_features_row_save) */
    uint64_t serial;     /* the graph the arrays were last laid out for (its */
    size_t room;         /* rt_graph_serial; 0: none), for up to room instances */
} feat_priv;

void rt_transform_features_init(rt_features *f)
{
    if (f)
        memset(f, 0, sizeof *f);
}

void rt_transform_features_free(rt_features *f)
{
    if (!f)
        return;
    feat_priv *p = f->priv;
    if (p) {
        for (size_t c = 0; c < p->slots; c++) {
            free(p->offs[c]);
            free(p->ids[c]);
            free(p->wts[c]);
            free(p->vals[c]);
        }
        free(p->offs);
        free(p->offs_cap);
        free(p->ids);
        free(p->ids_cap);
        free(p->wts);
        free(p->wts_cap);
        free(p->vals);
        free(p->vals_cap);
        free(p->cross);
        free(p->kinds);
        free(p->first);
        free(p->dnn);
        free(p);
    }
    free(f->ids);
    free(f->values);
    free(f->width);
    memset(f, 0, sizeof *f);
}

/* Reallocates *arr to n items of size sz; on failure *arr is left as it
 * was. 0 ok, -1 out of memory. */
static int resize(void **arr, size_t n, size_t sz)
{
    void *q = realloc(*arr, n * sz);
    if (!q)
        return -1;
    *arr = q;
    return 0;
}

/* True when f is laid out for g already (the last prepare was for the
 * graph of g's serial number: a graph made at a freed one's address has
 * another) with room for n instances. Then only f->n changes: the passes
 * only grow a column's own arrays and point the column at them, and set
 * weights only on the weighted columns, so the pointers prepare set are
 * still the ones it would set. */
static bool laid_out(const feat_priv *p, const rt_graph *g, size_t n)
{
    return p->serial != 0 && p->serial == g->serial && n <= p->room;
}

/* Sizes f for graph g and n instances. */
static rt_status prepare(rt_features *f, const rt_graph *g, size_t n, rt_err *err)
{
    feat_priv *p = f->priv;
    if (p && laid_out(p, g, n)) {
        f->n = n;
        return RT_OK;
    }
    if (p)
        p->serial = 0; /* until this layout is complete */
    if (!p) {
        if (!(p = calloc(1, sizeof *p)))
            return NOMEM(err);
        f->priv = p;
    }
    size_t nc = g->n_fcols;
    if (nc > p->slots) {
        size_t old = p->slots;
        /* Each array keeps its old prefix valid even if a later one fails. */
        if (resize((void **)&p->offs, nc, sizeof *p->offs) ||
            resize((void **)&p->ids, nc, sizeof *p->ids) ||
            resize((void **)&p->vals, nc, sizeof *p->vals) ||
            resize((void **)&p->wts, nc, sizeof *p->wts) ||
            resize((void **)&p->wts_cap, nc, sizeof *p->wts_cap) ||
            resize((void **)&p->offs_cap, nc, sizeof *p->offs_cap) ||
            resize((void **)&p->ids_cap, nc, sizeof *p->ids_cap) ||
            resize((void **)&p->vals_cap, nc, sizeof *p->vals_cap) ||
            resize((void **)&f->ids, nc, sizeof *f->ids) ||
            resize((void **)&f->values, nc, sizeof *f->values) ||
            resize((void **)&f->width, nc, sizeof *f->width) ||
            resize((void **)&p->kinds, nc, sizeof *p->kinds) ||
            resize((void **)&p->first, nc, sizeof *p->first))
            return NOMEM(err);
        for (size_t c = old; c < nc; c++) {
            p->offs[c] = NULL;
            p->ids[c] = NULL;
            p->vals[c] = NULL;
            p->wts[c] = NULL;
            p->offs_cap[c] = p->ids_cap[c] = p->vals_cap[c] = p->wts_cap[c] = 0;
        }
        p->slots = nc;
    }
    f->n = n;
    f->n_columns = nc;
    p->n_first = 0;
    for (size_t c = 0; c < nc; c++) {
        const rt_fcol *fc = &g->fcols[c];
        const rt_fc_kind *k = fc->kind ? fc->kind : rt_fc_kind_of(fc->type);
        p->kinds[c] = k;
        if (k && k->transform_pass < RT_FC_PASS_OF_IDS)
            p->first[p->n_first++] = c;
        f->width[c] = fc->width;
        f->ids[c].offsets = NULL;
        f->ids[c].ids = NULL;
        f->ids[c].weights = NULL;
        f->values[c] = NULL;
        if (fc->width == 0) {
            if (rt_grow(&p->offs[c], &p->offs_cap[c], n + 1, sizeof(uint32_t)) ||
                rt_grow(&p->ids[c], &p->ids_cap[c], 1, sizeof(int64_t)))
                return NOMEM(err);
            p->offs[c][0] = 0;
            f->ids[c].offsets = p->offs[c];
            f->ids[c].ids = p->ids[c];
        } else {
            if (n && fc->width > SIZE_MAX / sizeof(float) / n)
                return rt_err_set(err, RT_ERR_LIMIT, "batch too large");
            if (rt_grow(&p->vals[c], &p->vals_cap[c], n * fc->width + 1, sizeof(float)))
                return NOMEM(err);
            f->values[c] = p->vals[c];
        }
    }
    f->dnn_dim = g->dnn_dim;
    if (g->n_dnn) {
        if (n && g->dnn_dim > SIZE_MAX / sizeof(float) / n)
            return rt_err_set(err, RT_ERR_LIMIT, "batch too large");
        if (rt_grow(&p->dnn, &p->dnn_cap, n * g->dnn_dim + 1, sizeof(float)))
            return NOMEM(err);
    }
    f->dnn_input = g->n_dnn ? p->dnn : NULL;
    p->serial = g->serial;
    p->room = n;
    return RT_OK;
}

/* Appends id to column c of instance being built (count so far in *cnt). */
static rt_status push_id_slow(rt_features *f, size_t c, size_t *cnt, int64_t id, rt_err *err)
{
    feat_priv *p = f->priv;
    if (*cnt >= UINT32_MAX)
        return rt_err_set(err, RT_ERR_LIMIT, "feature column %zu: too many ids", c);
    if (rt_grow(&p->ids[c], &p->ids_cap[c], *cnt + 1, sizeof(int64_t)))
        return NOMEM(err);
    f->ids[c].ids = p->ids[c];
    p->ids[c][(*cnt)++] = id;
    return RT_OK;
}

static inline rt_status push_id(rt_features *f, size_t c, size_t *cnt, int64_t id, rt_err *err)
{
    feat_priv *p = f->priv;
    if (*cnt < p->ids_cap[c] && *cnt < UINT32_MAX) { /* room: the common case */
        p->ids[c][(*cnt)++] = id;
        return RT_OK;
    }
    return push_id_slow(f, c, cnt, id, err);
}

/* ------------------------------------------------------------- raw values */

/* double -> float without undefined behaviour for values out of range. */
static float to_float(double v)
{
    if (v > FLT_MAX)
        return INFINITY;
    if (v < -FLT_MAX)
        return -INFINITY;
    return (float)v;
}

static const char *input_name(const rt_graph *g, long input)
{
    return g->inputs[input].name;
}

/* The CSV default of raw input `input` as one value in *dflt, if the batch's
 * missing-input policy uses CSV defaults and the spec gave one. */
static bool csv_default(const rt_graph *g, const rt_batch *b, long input, rt_value *dflt)
{
    const Predictd__RawColumn *rc = g->inputs[input].raw;
    if (rt_batch_missing(b) != RT_MISSING_CSV_DEFAULT || !rc->has_default)
        return false;
    if (rc->dtype == PREDICTD__DTYPE__DT_STRING) {
        dflt->str = rc->default_string ? rc->default_string : "";
        dflt->len = strlen(dflt->str);
        dflt->num = 0;
    } else {
        dflt->str = NULL;
        dflt->len = 0;
        dflt->num = rc->default_number;
    }
    return true;
}

/* The values of (i, input) and their keys (NULL for a default); a missing
 * input follows the batch's policy (rt_missing_policy): an error, no
 * values, or the CSV default. */
static rt_status get_cell_missing(const rt_graph *g, const rt_batch *b, size_t i, long input,
                                  rt_value *dflt, const rt_value **vals, size_t *n,
                                  rt_err *err)
{
    if ((g->inputs[input].dtype == PREDICTD__DTYPE__DT_STRING &&
         rt_batch_missing(b) == RT_MISSING_EMPTY) ||
        g->absent_missing) /* an XGBoost model's: no values, no id */
        return RT_OK;
    if (csv_default(g, b, input, dflt)) {
        *vals = dflt;
        *n = 1;
        return RT_OK;
    }
    return rt_err_set(err, RT_ERR_INVALID, "instances[%zu].%s: missing input", i,
                      input_name(g, input));
}

/* get_cell's verdict on a cell without values: true when it is an error. */
static bool missing_fails(const rt_graph *g, const rt_batch *b, long input)
{
    rt_value dflt;
    if ((g->inputs[input].dtype == PREDICTD__DTYPE__DT_STRING &&
         rt_batch_missing(b) == RT_MISSING_EMPTY) ||
        g->absent_missing)
        return false;
    return !csv_default(g, b, input, &dflt);
}

static bool has_values(const rt_batch *b, size_t i, long input)
{
    size_t n = 0;
    rt_batch_cell(b, i, (size_t)input, &n);
    return n > 0;
}

bool rt_transform_needs(const rt_graph *g, const rt_batch *b, size_t i, size_t input)
{
    long in = (long)input;
    if (input >= g->n_inputs || i >= rt_batch_size(b) || has_values(b, i, in) ||
        !missing_fails(g, b, in))
        return false;
    for (size_t c = 0; c < g->n_fcols; c++) {
        const rt_fcol *fc = &g->fcols[c];
        switch (fc->type) {
        case PREDICTD__COLUMN_TYPE__NUMERIC:
            if (fc->input == in && fc->def->n_default_value != fc->width)
                return true;
            break;
        case PREDICTD__COLUMN_TYPE__VOCABULARY_LIST:
        case PREDICTD__COLUMN_TYPE__VOCABULARY_FILE:
        case PREDICTD__COLUMN_TYPE__HASH_BUCKET:
        case PREDICTD__COLUMN_TYPE__IDENTITY:
            if (fc->input == in)
                return true;
            break;
        case PREDICTD__COLUMN_TYPE__CROSSED:
            for (size_t part = 0; part < fc->n_cross; part++) {
                long col = fc->cross_col[part];
                if (col < 0 ? fc->cross_input[part] == in
                            : ((g->fcols[col].type == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST ||
                                g->fcols[col].type == PREDICTD__COLUMN_TYPE__VOCABULARY_FILE) &&
                               g->fcols[col].input == in))
                    return true;
            }
            break;
        case PREDICTD__COLUMN_TYPE__WEIGHTED: {
            /* the weights are read where the categorical column has values */
            const rt_fcol *src = &g->fcols[fc->source];
            if (fc->input == in && (src->type == PREDICTD__COLUMN_TYPE__BUCKETIZED ||
                                    has_values(b, i, src->input)))
                return true;
            break;
        }
        default:
            break; /* reads other columns, not raw inputs */
        }
    }
    return false;
}

/* One cell as a feature column reads it: its n values and their lookup
 * keys, or the raw column's CSV default (held in dflt) for a missing one. */
typedef struct cell {
    const rt_value *v;
    size_t n;
    const rt_skey *keys;
    rt_value dflt;
} cell;

static inline rt_status get_cell(const rt_graph *g, const rt_batch *b, size_t i, long input,
                                 cell *cv, rt_err *err)
{
    cv->v = rt_batch_cell_keys(b, i, (size_t)input, &cv->n, &cv->keys);
    if (cv->n)
        return RT_OK;
    return get_cell_missing(g, b, i, input, &cv->dflt, &cv->v, &cv->n, err);
}

static rt_status not_a_number(const rt_graph *g, size_t i, long input, const rt_value *v,
                              rt_err *err)
{
    return rt_err_set(err, RT_ERR_INVALID,
                      "instances[%zu].%s: expected a number, got a string (\"%.*s\")", i,
                      input_name(g, input), (int)(v->len > 40 ? 40 : v->len), v->str);
}

/* The text of value v: a string (trimmed when the model says so) or a
 * number written as a decimal integer when integral, else with %g (an ONNX
 * model's string input refuses a number: its graph reads only strings). */
static rt_status value_text(const rt_graph *g, size_t i, long input, const rt_value *v,
                            char buf[40], const char **s, size_t *len, rt_err *err)
{
    if (v->str) {
        if (g->inputs[input].dtype != PREDICTD__DTYPE__DT_STRING)
            return not_a_number(g, i, input, v, err);
        *len = v->len;
        *s = g->def->trim_strings ? rt_buf_trim_span(v->str, len) : v->str;
        return RT_OK;
    }
    if (g->onnx) /* an ONNX tensor(string): a number is refused, as ONNX Runtime does */
        return rt_err_set(err, RT_ERR_INVALID, "instances[%zu].%s: expected a string (the "
                          "ONNX graph's input is a tensor(string)), got the number %g", i,
                          input_name(g, input), v->num);
    int k;
    if (isfinite(v->num) && v->num == floor(v->num) && fabs(v->num) < 9.2e18)
        k = snprintf(buf, 40, "%lld", (long long)v->num);
    else
        k = snprintf(buf, 40, "%g", v->num);
    *s = buf;
    *len = k > 0 ? (size_t)k : 0;
    return RT_OK;
}

/* ------------------------------------------------------------- columns */

rt_status rt_transform_run_numeric(const rt_graph *g, const rt_batch *b, rt_features *f, size_t c,
                            rt_err *err)
{
    const rt_fcol *fc = &g->fcols[c];
    const Predictd__FeatureColumn *d = fc->def;
    size_t w = fc->width;
    for (size_t i = 0; i < f->n; i++) {
        float *out = &f->values[c][i * w];
        size_t n = 0;
        const rt_value *v = rt_batch_cell(b, i, (size_t)fc->input, &n);
        if (n == 0) {
            rt_value dflt;
            if (d->n_default_value == w) {
                memcpy(out, d->default_value, w * sizeof(float));
            } else if (csv_default(g, b, fc->input, &dflt)) {
                for (size_t k = 0; k < w; k++)
                    out[k] = to_float(dflt.num);
            } else {
                return rt_err_set(err, RT_ERR_INVALID,
                                  "instances[%zu].%s: missing input",
                                  i, input_name(g, fc->input));
            }
        } else {
            if (n != w)
                return rt_err_set(err, RT_ERR_INVALID,
                                  "instances[%zu].%s: expected %zu value%s, got %zu", i,
                                  input_name(g, fc->input), w, w == 1 ? "" : "s", n);
            for (size_t k = 0; k < w; k++) {
                if (v[k].str)
                    return not_a_number(g, i, fc->input, &v[k], err);
                out[k] = to_float(v[k].num);
            }
        }
        if (d->has_normalizer)
            for (size_t k = 0; k < w; k++)
                out[k] = (out[k] - d->norm_mean) / d->norm_std;
    }
    return RT_OK;
}

rt_status rt_transform_run_bucketized(const rt_graph *g, const rt_batch *b, rt_features *f,
                                      size_t c, rt_err *err)
{
    (void)b; /* reads its numeric source column */
    const rt_fcol *fc = &g->fcols[c];
    const Predictd__FeatureColumn *d = fc->def;
    size_t w = g->fcols[fc->source].width, nb = d->n_boundaries, cnt = 0;
    for (size_t i = 0; i < f->n; i++) {
        const float *x = &f->values[fc->source][i * w];
        for (size_t j = 0; j < w; j++) {
            /* Number of boundaries <= x: std::upper_bound as TensorFlow's
             * Bucketize kernel (so NaN, never below a boundary, goes last). */
            size_t lo = 0, hi = nb;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (!(x[j] < d->boundaries[mid]))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            rt_status st = push_id(f, c, &cnt, (int64_t)(j * (nb + 1) + lo), err);
            if (st)
                return st;
        }
        f->ids[c].offsets[i + 1] = (uint32_t)cnt;
    }
    return RT_OK;
}

/* TensorFlow's categorical columns drop their input's "ignore value" before
 * any lookup (_to_sparse_input_and_drop_ignore_values): "" for a string
 * input, -1 for an integer one. Such a value gives no id at all (not an OOV
 * bucket, not a hash). An ONNX graph's string input has no ignore value: ""
 * is a text like any other, matched as an encoder's "" (ONNX Runtime
 * compares the strings). */
static bool ignored_value(const rt_graph *g, long input, const rt_value *v, size_t len)
{
    if (g->inputs[input].dtype == PREDICTD__DTYPE__DT_STRING)
        return len == 0 && !g->onnx;
    return !v->str && v->num == -1.0;
}

/* The id of text s (fingerprint fp) in vocabulary or hash column fc; -1 =
 * no id. */
static int64_t lookup_id(const rt_fcol *fc, const char *s, size_t len, uint64_t fp)
{
    const Predictd__FeatureColumn *d = fc->def;
    if (fc->type == PREDICTD__COLUMN_TYPE__HASH_BUCKET)
        return (int64_t)(fp % (uint64_t)fc->num_buckets);
    int64_t id = rt_vocab_find_fp(&fc->vocab, s, len, fp);
    if (id >= 0)
        return id;
    if (d->num_oov_buckets > 0)
        return fc->num_buckets - d->num_oov_buckets +
               (int64_t)(fp % (uint64_t)d->num_oov_buckets);
    return d->default_id;
}

/* Value k of a cell of a string input read as text: its trimmed text and
 * fingerprint, from the batch's key when it has one (a string value), else
 * (a number, a default) from value_text. */
static inline rt_status value_key(const rt_graph *g, size_t i, long input, const rt_value *v,
                                  const rt_skey *keys, size_t k, char buf[40], const char **s,
                                  size_t *len, uint64_t *fp, rt_err *err)
{
    if (keys && v[k].str && keys[k].skip != RT_SKEY_NONE &&
        g->inputs[input].dtype == PREDICTD__DTYPE__DT_STRING) {
        *s = v[k].str + keys[k].skip;
        *len = keys[k].len;
        *fp = keys[k].fp;
        return RT_OK;
    }
    rt_status st = value_text(g, i, input, &v[k], buf, s, len, err);
    if (st == RT_OK)
        *fp = rt_hash_fingerprint64(*s, *len);
    return st;
}

/* categorical_column_with_identity: value v of instance i -> *id (-1: no
 * id). As TensorFlow: an integer in [0, num_buckets) is the id; -1 is the
 * ignore value (dropped); another value takes default_value, or is refused
 * when the column has none (TF's assert on the bucket index). */
static rt_status identity_id(const rt_graph *g, const rt_fcol *fc, size_t i, const rt_value *v,
                             int64_t *id, rt_err *err)
{
    if (v->str)
        return not_a_number(g, i, fc->input, v, err);
    double x = v->num;
    if (!(x == floor(x) && fabs(x) < 9.2e18))
        return rt_err_set(err, RT_ERR_INVALID, "instances[%zu].%s: expected an integer, got %g",
                          i, input_name(g, fc->input), x);
    if (x == -1.0)
        *id = -1;
    else if (x >= 0.0 && x < (double)fc->num_buckets)
        *id = (int64_t)x;
    else if (fc->def->default_id >= 0)
        *id = fc->def->default_id;
    else
        return rt_err_set(err, RT_ERR_INVALID,
                          "instances[%zu].%s: %lld is out of range [0, %lld) of "
                          "categorical_column_with_identity %s, which has no default_value",
                          i, input_name(g, fc->input), (long long)x,
                          (long long)fc->num_buckets, fc->def->name);
    return RT_OK;
}

/* The id value k of a keyed column's input gets (-1: none), as that
 * column's own transform computes it (identity, vocabulary, hash). */
#if defined(__GNUC__)
__attribute__((always_inline)) /* the vocabulary transform's inner loop */
#endif
static inline rt_status keyed_id(const rt_graph *g, const rt_fcol *src, size_t i,
                                 const rt_value *v, const rt_skey *keys, size_t k, int64_t *id,
                                 rt_err *err)
{
    if (src->type == PREDICTD__COLUMN_TYPE__IDENTITY)
        return identity_id(g, src, i, &v[k], id, err);
    char buf[40];
    const char *s;
    size_t len;
    uint64_t fp;
    rt_status st = value_key(g, i, src->input, v, keys, k, buf, &s, &len, &fp, err);
    if (st)
        return st;
    *id = ignored_value(g, src->input, &v[k], len) ? -1 : lookup_id(src, s, len, fp);
    return RT_OK;
}

/* Vocabulary, identity and hash bucket columns: an id per value of the
 * raw input (keyed_id). */
rt_status rt_transform_run_lookup(const rt_graph *g, const rt_batch *b, rt_features *f, size_t c,
                           rt_err *err)
{
    const rt_fcol *fc = &g->fcols[c];
    size_t cnt = 0;
    for (size_t i = 0; i < f->n; i++) {
        cell cv;
        rt_status st = get_cell(g, b, i, fc->input, &cv, err);
        if (st)
            return st;
        for (size_t k = 0; k < cv.n; k++) {
            int64_t id;
            if ((st = keyed_id(g, fc, i, cv.v, cv.keys, k, &id, err)))
                return st;
            if (id < 0)
                continue; /* TensorFlow's -1: pruned by linear, embedding, indicator */
            if ((st = push_id(f, c, &cnt, id, err)))
                return st;
        }
        f->ids[c].offsets[i + 1] = (uint32_t)cnt;
    }
    return RT_OK;
}

/* weighted_categorical_column: its categorical column's ids, each with the
 * weight input's value at the same position (TensorFlow pairs the two
 * tensors by index). A value that gives no id drops its weight; a zero
 * weight drops its id (TF's _to_sparse_input_and_drop_ignore_values with
 * 0.0). The weights must be as many as the values. */
rt_status rt_transform_run_weighted(const rt_graph *g, const rt_batch *b, rt_features *f, size_t c,
                             rt_err *err)
{
    const rt_fcol *fc = &g->fcols[c];
    const rt_fcol *src = &g->fcols[fc->source];
    const rt_ids *sids = &f->ids[fc->source];
    feat_priv *p = f->priv;
    bool bucketized = src->type == PREDICTD__COLUMN_TYPE__BUCKETIZED;
    long key_input = bucketized ? g->fcols[src->source].input : src->input;
    size_t cnt = 0;
    rt_status st;
    for (size_t i = 0; i < f->n; i++) {
        cell cv = {0}, wt = {0}; /* the values, the weights */
        if (bucketized)
            cv.n = sids->offsets[i + 1] - sids->offsets[i]; /* one id per value */
        else if ((st = get_cell(g, b, i, src->input, &cv, err)))
            return st;
        if (cv.n > 0 && (st = get_cell(g, b, i, fc->input, &wt, err)))
            return st;
        size_t n = cv.n, wn = wt.n;
        if (wn != n)
            return rt_err_set(err, RT_ERR_INVALID,
                              "instances[%zu].%s: %zu weight%s for %zu value%s of %s "
                              "(weighted_categorical_column %s takes one weight per value)",
                              i, input_name(g, fc->input), wn, wn == 1 ? "" : "s", n,
                              n == 1 ? "" : "s", input_name(g, key_input), fc->def->name);
        for (size_t k = 0; k < n; k++) {
            if (wt.v[k].str)
                return not_a_number(g, i, fc->input, &wt.v[k], err);
            float x = to_float(wt.v[k].num);
            int64_t id;
            if (bucketized)
                id = sids->ids[sids->offsets[i] + k];
            else if ((st = keyed_id(g, src, i, cv.v, cv.keys, k, &id, err)))
                return st;
            if (id < 0 || x == 0.0f)
                continue;
            if ((st = push_id(f, c, &cnt, id, err)))
                return st;
            if (rt_grow(&p->wts[c], &p->wts_cap[c], cnt, sizeof(float)))
                return NOMEM(err);
            p->wts[c][cnt - 1] = x;
        }
        f->ids[c].offsets[i + 1] = (uint32_t)cnt;
    }
    if (rt_grow(&p->wts[c], &p->wts_cap[c], cnt + 1, sizeof(float)))
        return NOMEM(err);
    f->ids[c].weights = p->wts[c];
    return RT_OK;
}

/* Part hashes of one crossed key for instance i, appended to p->cross. */
static rt_status cross_part(const rt_graph *g, const rt_batch *b, rt_features *f,
                            const rt_fcol *fc, size_t part, size_t i, size_t *at, rt_err *err)
{
    feat_priv *p = f->priv;
    long col = fc->cross_col[part];
    if (col >= 0 && (g->fcols[col].type == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST ||
                     g->fcols[col].type == PREDICTD__COLUMN_TYPE__VOCABULARY_FILE)) {
        /* A vocabulary column: its ids again, with TensorFlow's -1 for a
         * miss kept (crossed as 0xffffffffffffffff, as TensorFlow does). */
        const rt_fcol *src = &g->fcols[col];
        cell cv;
        rt_status st = get_cell(g, b, i, src->input, &cv, err);
        if (st)
            return st;
        if (rt_grow(&p->cross, &p->cross_cap, *at + cv.n + 1, sizeof(uint64_t)))
            return NOMEM(err);
        for (size_t k = 0; k < cv.n; k++) {
            char buf[40];
            const char *s;
            size_t len;
            uint64_t fp;
            if ((st = value_key(g, i, src->input, cv.v, cv.keys, k, buf, &s, &len, &fp, err)))
                return st;
            if (!ignored_value(g, src->input, &cv.v[k], len))
                p->cross[(*at)++] = (uint64_t)lookup_id(src, s, len, fp);
        }
        return RT_OK;
    }
    if (col >= 0) {
        const rt_ids *src = &f->ids[col];
        uint32_t s = src->offsets[i], e = src->offsets[i + 1];
        if (rt_grow(&p->cross, &p->cross_cap, *at + (e - s) + 1, sizeof(uint64_t)))
            return NOMEM(err);
        for (uint32_t k = s; k < e; k++)
            p->cross[(*at)++] = (uint64_t)src->ids[k];
        return RT_OK;
    }
    long input = fc->cross_input[part];
    cell cv;
    rt_status st = get_cell(g, b, i, input, &cv, err);
    if (st)
        return st;
    if (rt_grow(&p->cross, &p->cross_cap, *at + cv.n + 1, sizeof(uint64_t)))
        return NOMEM(err);
    const rt_value *v = cv.v;
    for (size_t k = 0; k < cv.n; k++) {
        if (g->inputs[input].dtype == PREDICTD__DTYPE__DT_STRING) {
            char buf[40];
            const char *s;
            size_t len;
            uint64_t fp;
            if ((st = value_key(g, i, input, v, cv.keys, k, buf, &s, &len, &fp, err)))
                return st;
            p->cross[(*at)++] = fp;
        } else {
            if (v[k].str)
                return not_a_number(g, i, input, &v[k], err);
            double x = v[k].num;
            if (!(x == floor(x) && fabs(x) < 9.2e18))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "instances[%zu].%s: expected an integer, got %g", i,
                                  input_name(g, input), x);
            p->cross[(*at)++] = (uint64_t)(int64_t)x;
        }
    }
    return RT_OK;
}

rt_status rt_transform_run_crossed(const rt_graph *g, const rt_batch *b, rt_features *f, size_t c,
                            rt_err *err)
{
    const rt_fcol *fc = &g->fcols[c];
    size_t np = fc->n_cross, cnt = 0;
    uint64_t key = fc->def->hash_key ? fc->def->hash_key : RT_CROSS_HASH_KEY;
    uint64_t size = (uint64_t)fc->num_buckets;
    size_t start[RT_MAX_CROSS_PARTS], len[RT_MAX_CROSS_PARTS], pos[RT_MAX_CROSS_PARTS];
    if (np > RT_MAX_CROSS_PARTS)
        return rt_err_set(err, RT_ERR_LIMIT, "crossed column %s: too many keys",
                          fc->def->name);
    for (size_t i = 0; i < f->n; i++) {
        size_t at = 0, total = 1;
        for (size_t k = 0; k < np; k++) {
            start[k] = at;
            rt_status st = cross_part(g, b, f, fc, k, i, &at, err);
            if (st)
                return st;
            len[k] = at - start[k];
            pos[k] = 0;
            if (len[k] == 0)
                total = 0; /* a key without values: no crossed id */
            else if (total > RT_MAX_CROSS_PRODUCT)
                continue;
            else
                total *= len[k];
        }
        if (total > RT_MAX_CROSS_PRODUCT)
            return rt_err_set(err, RT_ERR_LIMIT,
                              "instances[%zu]: crossed column %s would make more than %u ids",
                              i, fc->def->name, RT_MAX_CROSS_PRODUCT);
        const uint64_t *h = ((feat_priv *)f->priv)->cross;
        for (size_t t = 0; t < total; t++) {
            uint64_t x = key;
            for (size_t k = 0; k < np; k++)
                x = rt_hash_fingerprint_cat64(x, h[start[k] + pos[k]]);
            rt_status st = push_id(f, c, &cnt, (int64_t)(x % size), err);
            if (st)
                return st;
            /* Next combination: the last key varies fastest. */
            for (size_t k = np; k-- > 0;) {
                if (++pos[k] < len[k])
                    break;
                pos[k] = 0;
            }
        }
        f->ids[c].offsets[i + 1] = (uint32_t)cnt;
    }
    return RT_OK;
}

rt_status rt_transform_run_of_ids(const rt_graph *g, const rt_batch *b, rt_features *f, size_t c,
                           rt_err *err)
{
    (void)b; /* reads its categorical source column */
    (void)err;
    const rt_fcol *fc = &g->fcols[c];
    const rt_ids *src = &f->ids[fc->source];
    const float *wt = src->weights; /* NULL: every id weighs 1 */
    bool indicator = fc->type == PREDICTD__COLUMN_TYPE__INDICATOR;
    size_t w = fc->width;
    int64_t buckets = g->fcols[fc->source].num_buckets;
    memset(f->values[c], 0, f->n * w * sizeof(float));
    for (size_t i = 0; i < f->n; i++) {
        float *out = &f->values[c][i * w];
        uint32_t s = src->offsets[i], e = src->offsets[i + 1];
        float sum = 0.0f, squares = 0.0f; /* of the weights used */
        for (uint32_t k = s; k < e; k++) {
            int64_t id = src->ids[k];
            if (id < 0 || id >= buckets)
                continue;
            float x = wt ? wt[k] : 1.0f;
            if (indicator) {
                out[id] += x; /* every weight, as TensorFlow's scatter_nd */
                continue;
            }
            if (!(x > 0.0f))
                continue; /* safe_embedding_lookup_sparse prunes weights <= 0 */
            sum += x;
            squares += x * x;
            if (fc->embedding) {
                const float *row = &fc->embedding[(size_t)id * w];
                if (wt)
                    for (size_t j = 0; j < w; j++)
                        out[j] += x * row[j];
                else
                    for (size_t j = 0; j < w; j++)
                        out[j] += row[j];
            }
        }
        if (indicator || sum == 0.0f)
            continue;
        float scale = 1.0f;
        if (fc->def->combiner == PREDICTD__COMBINER__COMBINER_MEAN)
            scale = 1.0f / sum;
        else if (fc->def->combiner == PREDICTD__COMBINER__COMBINER_SQRTN)
            scale = 1.0f / sqrtf(squares);
        if (scale != 1.0f)
            for (size_t j = 0; j < w; j++)
                out[j] *= scale;
    }
    return RT_OK;
}

/* The kinds of transform passes [from, to) in their order, so every source
 * is ready (the kinds as prepare found them). */
static rt_status run_passes(const rt_graph *g, const rt_batch *b, rt_features *f, int from,
                            int to, rt_err *err)
{
    const feat_priv *p = f->priv;
    if (g->fc_order) { /* the graph's pass order (rt_graph.c), every kind known */
        for (size_t j = g->fc_pass_at[from]; j < g->fc_pass_at[to]; j++) {
            size_t c = g->fc_order[j];
            rt_status st = p->kinds[c]->transform(g, b, f, c, err);
            if (st)
                return st;
        }
        return RT_OK;
    }
    for (int pass = from; pass < to; pass++) {
        for (size_t c = 0; c < g->n_fcols; c++) {
            const rt_fc_kind *k = p->kinds[c];
            if (!k)
                return rt_err_set(err, RT_ERR_FORMAT, "unknown feature column type %d",
                                  (int)g->fcols[c].type);
            rt_status st;
            if (k->transform_pass == pass && (st = k->transform(g, b, f, c, err)))
                return st;
        }
    }
    return RT_OK;
}

rt_status rt_transform_inputs(const rt_graph *g, const rt_batch *b, rt_features *f, rt_err *err)
{
    if (!g || !b || !f)
        return rt_err_set(err, RT_ERR_INVALID, "rt_transform: NULL argument");
    if (rt_batch_graph(b) != g)
        return rt_err_set(err, RT_ERR_INVALID, "rt_transform: the batch belongs to another graph");
    rt_status st = prepare(f, g, rt_batch_size(b), err);
    if (st)
        return st;
    return run_passes(g, b, f, 0, RT_FC_PASS_OF_IDS, err);
}

rt_status rt_transform_finish(const rt_graph *g, rt_features *f, rt_err *err)
{
    rt_status st = run_passes(g, NULL, f, RT_FC_PASS_OF_IDS, RT_FC_PASSES, err);
    if (st || !g->n_dnn)
        return st;
    for (size_t i = 0; i < f->n; i++) {
        float *row = &f->dnn_input[i * g->dnn_dim];
        for (size_t k = 0; k < g->n_dnn; k++) {
            size_t w = g->dnn_width[k];
            memcpy(row + g->dnn_offset[k], &f->values[g->dnn_cols[k]][i * w], w * sizeof(float));
        }
    }
    return RT_OK;
}

rt_status rt_transform(const rt_graph *g, const rt_batch *b, rt_features *f, rt_err *err)
{
    rt_status st = rt_transform_inputs(g, b, f, err);
    return st ? st : rt_transform_finish(g, f, err);
}

/* A record: per column of the first passes, in column order, a categorical
 * column's id count (u32; its top bit set when the ids carry weights), ids
 * (i64 each) and weights (f32 each, weighted columns), a dense one's width
 * floats. f was made for g by rt_transform_inputs (prepare listed the
 * columns). */
#define REC_WEIGHTED 0x80000000u

size_t rt_transform_features_row_size(const rt_graph *g, const rt_features *f, size_t i)
{
    const feat_priv *p = f->priv;
    size_t len = 0;
    for (size_t j = 0; j < p->n_first; j++) {
        size_t c = p->first[j];
        size_t k = (size_t)(f->ids[c].offsets ? f->ids[c].offsets[i + 1] - f->ids[c].offsets[i]
                                              : 0);
        if (g->fcols[c].width == 0)
            len += 4 + (f->ids[c].weights ? 12 : 8) * k;
        else
            len += 4 * g->fcols[c].width;
    }
    return len;
}

void rt_transform_features_row_save(const rt_graph *g, const rt_features *f, size_t i, void *out)
{
    const feat_priv *p = f->priv;
    unsigned char *o = out;
    for (size_t j = 0; j < p->n_first; j++) {
        size_t c = p->first[j], w = g->fcols[c].width;
        if (w == 0) {
            uint32_t s = f->ids[c].offsets[i], k = f->ids[c].offsets[i + 1] - s;
            const float *wt = f->ids[c].weights;
            uint32_t tag = k | (wt ? REC_WEIGHTED : 0);
            memcpy(o, &tag, 4);
            memcpy(o + 4, f->ids[c].ids + s, 8 * (size_t)k);
            o += 4 + 8 * (size_t)k;
            if (wt) {
                memcpy(o, wt + s, 4 * (size_t)k);
                o += 4 * (size_t)k;
            }
        } else {
            memcpy(o, f->values[c] + i * w, 4 * w);
            o += 4 * w;
        }
    }
}

rt_status rt_transform_features_rows_load(const rt_graph *g, rt_features *f,
                                          const void *const *rows, size_t n, rt_err *err)
{
    rt_status st = prepare(f, g, n, err);
    if (st)
        return st;
    feat_priv *p = f->priv;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *o = rows[i];
        for (size_t j = 0; j < p->n_first; j++) {
            size_t c = p->first[j], w = g->fcols[c].width;
            if (w > 0) {
                memcpy(f->values[c] + i * w, o, 4 * w);
                o += 4 * w;
                continue;
            }
            uint32_t tag, k;
            memcpy(&tag, o, 4);
            k = tag & ~REC_WEIGHTED;
            size_t cnt = f->ids[c].offsets[i], at = cnt;
            for (uint32_t q = 0; q < k; q++) {
                int64_t id;
                memcpy(&id, o + 4 + 8 * (size_t)q, 8);
                if ((st = push_id(f, c, &cnt, id, err)))
                    return st;
            }
            o += 4 + 8 * (size_t)k;
            f->ids[c].offsets[i + 1] = (uint32_t)cnt;
            if (tag & REC_WEIGHTED) {
                if (rt_grow(&p->wts[c], &p->wts_cap[c], cnt + 1, sizeof(float)))
                    return NOMEM(err);
                memcpy(p->wts[c] + at, o, 4 * (size_t)k);
                o += 4 * (size_t)k;
                f->ids[c].weights = p->wts[c];
            }
        }
    }
    return RT_OK;
}
