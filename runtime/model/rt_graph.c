/*
 * rt_graph.c — compiles a ModelDef into an rt_graph: raw inputs, feature
 * columns resolved (sources, id spaces, widths, cross plans, vocabulary hash
 * tables), the linear part, the DNN input layout and layers, and the head;
 * then binds tensors through the caller's lookup. The ModelDef may come from
 * an untrusted model.pb, so every reference, kind, size and product is
 * checked here, with a message naming the column or tensor.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"
#include "rt_model_limits.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")

#define G_MAX_BUCKETS (INT64_C(1) << 40) /* id space of a categorical column */
#define G_MAX_WIDTH (UINT64_C(1) << 24)  /* dense values per column, DNN input */

/* ------------------------------------------------------------- compile */

static long find_fcol(const rt_graph *g, const char *name)
{
    for (size_t i = 0; i < g->n_fcols; i++)
        if (strcmp(g->fcols[i].def->name, name) == 0)
            return (long)i;
    return -1;
}

long rt_graph_find_raw(const Predictd__ModelDef *def, const char *name)
{
    for (size_t i = 0; i < def->n_raw_columns; i++)
        if (strcmp(def->raw_columns[i]->name, name) == 0)
            return (long)i;
    return -1;
}

/* Raw column `name` read by a feature column: must exist and not be the
 * label or unused. Marks it in `read`; returns its raw index. */
static rt_status use_raw(const Predictd__ModelDef *def, const char *col, const char *name,
                         bool *read, long *raw, rt_err *err)
{
    long r = rt_graph_find_raw(def, name);
    if (r < 0)
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: reads \"%.64s\", not a column",
                          col, name);
    const Predictd__RawColumn *rc = def->raw_columns[r];
    if (rc->is_label || rc->unused || rc->is_weight)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "feature column %s: reads \"%.64s\", the label, the weight or an unused "
                          "column",
                          col, name);
    read[r] = true;
    *raw = r;
    return RT_OK;
}

/* Raw column `key` read as column c's numbers (use_raw, raw[c] set): refused
 * when it holds strings, the message saying how c `uses` it ("reads"). */
static rt_status use_number_raw(rt_graph *g, size_t c, const char *key, const char *uses,
                                bool *read, long *raw, rt_err *err)
{
    const Predictd__ModelDef *def = g->def;
    const char *nm = g->fcols[c].def->name;
    rt_status st = use_raw(def, nm, key, read, &raw[c], err);
    if (st)
        return st;
    if (def->raw_columns[raw[c]]->dtype != PREDICTD__DTYPE__DT_FLOAT)
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: %s string column %s", nm,
                          uses, key);
    return RT_OK;
}

/* The kinds' compile functions (rt_fc.c's table runs them in their passes;
 * references only point at kinds compiled in an earlier pass, so no cycle
 * is possible): sources, id spaces and widths. raw[c] is the raw index of
 * column c's key; cross parts' raw indexes are kept in cross_input until
 * inputs are numbered. */

/* numeric_column: reads an int or float raw column. */
rt_status rt_graph_compile_numeric(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err)
{
    rt_fcol *f = &g->fcols[c];
    const Predictd__FeatureColumn *d = f->def;
    const char *nm = d->name;
    rt_status st = use_number_raw(g, c, d->key, "reads", read, raw, err);
    if (st)
        return st;
    if (d->shape == 0 || d->shape > RT_GRAPH_MAX_SHAPE)
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: shape %u out of range",
                          nm, d->shape);
    if (d->n_default_value && d->n_default_value != d->shape)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "feature column %s: %zu default values for shape %u", nm,
                          d->n_default_value, d->shape);
    if (d->has_normalizer && !(d->norm_std > 0 && isfinite(d->norm_std) &&
                               isfinite(d->norm_mean)))
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: bad normalizer", nm);
    f->width = d->shape;
    return RT_OK;
}

/* Vocabulary list/file and hash bucket columns: read a raw column. */
rt_status rt_graph_compile_lookup(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err)
{
    const Predictd__ModelDef *def = g->def;
    rt_fcol *f = &g->fcols[c];
    const Predictd__FeatureColumn *d = f->def;
    const char *nm = d->name;
    rt_status st = RT_OK;
    if ((st = use_raw(def, nm, d->key, read, &raw[c], err)))
        return st;
    int64_t size;
    if (d->type == PREDICTD__COLUMN_TYPE__HASH_BUCKET) {
        if (d->hash_bucket_size < 1 || d->hash_bucket_size > G_MAX_BUCKETS)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "feature column %s: hash_bucket_size %lld out of range", nm,
                              (long long)d->hash_bucket_size);
        f->num_buckets = d->hash_bucket_size;
        return RT_OK;
    }
    if (d->type == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST) {
        size = (int64_t)d->n_vocabulary;
    } else {
        size = d->vocabulary_size;
        if (!rt_vocab_asset_path_ok(d->vocabulary_file))
            return rt_err_set(err, RT_ERR_FORMAT,
                              "feature column %s: vocabulary_file \"%.64s\" is not a path "
                              "inside assets/",
                              nm, d->vocabulary_file);
    }
    if (size < 1 || size > G_MAX_BUCKETS || d->num_oov_buckets < 0 ||
        d->num_oov_buckets > G_MAX_BUCKETS)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "feature column %s: vocabulary size %lld or num_oov_buckets %lld "
                          "out of range",
                          nm, (long long)size, (long long)d->num_oov_buckets);
    if (d->default_id < -1 || d->default_id >= size ||
        (d->default_id != -1 && d->num_oov_buckets > 0))
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: bad default_value %lld",
                          nm, (long long)d->default_id);
    f->num_buckets = size + d->num_oov_buckets;
    return RT_OK;
}

/* bucketized_column: buckets of a numeric column. */
rt_status rt_graph_compile_bucketized(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err)
{
    (void)read;
    (void)raw;
    rt_fcol *f = &g->fcols[c];
    const Predictd__FeatureColumn *d = f->def;
    const char *nm = d->name;
    long s = find_fcol(g, d->source);
    if (s < 0 || g->fcols[s].type != PREDICTD__COLUMN_TYPE__NUMERIC)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "feature column %s: source \"%.64s\" is not a numeric column", nm,
                          d->source);
    for (size_t k = 0; k < d->n_boundaries; k++)
        if (!isfinite(d->boundaries[k]) || (k && !(d->boundaries[k] > d->boundaries[k - 1])))
            return rt_err_set(err, RT_ERR_FORMAT,
                              "feature column %s: boundaries must be strictly increasing",
                              nm);
    f->source = s;
    f->num_buckets = (int64_t)(d->n_boundaries + 1) * (int64_t)g->fcols[s].width;
    if (d->n_boundaries > (size_t)G_MAX_BUCKETS || f->num_buckets > G_MAX_BUCKETS)
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: too many buckets", nm);
    return RT_OK;
}

/* crossed_column: parts are raw inputs or vocabulary/bucketized columns. */
rt_status rt_graph_compile_crossed(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err)
{
    (void)raw;
    const Predictd__ModelDef *def = g->def;
    rt_fcol *f = &g->fcols[c];
    const Predictd__FeatureColumn *d = f->def;
    const char *nm = d->name;
    rt_status st = RT_OK;
    if (d->n_cross_keys < 1 || d->n_cross_keys > 64)
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: %zu cross keys", nm,
                          d->n_cross_keys);
    if (d->hash_bucket_size < 1 || d->hash_bucket_size > G_MAX_BUCKETS)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "feature column %s: hash_bucket_size %lld out of range", nm,
                          (long long)d->hash_bucket_size);
    f->n_cross = d->n_cross_keys;
    f->cross_input = malloc(f->n_cross * sizeof *f->cross_input);
    f->cross_col = malloc(f->n_cross * sizeof *f->cross_col);
    if (!f->cross_input || !f->cross_col)
        return NOMEM(err);
    for (size_t k = 0; k < f->n_cross; k++) {
        const Predictd__CrossKey *ck = d->cross_keys[k];
        f->cross_input[k] = -1;
        f->cross_col[k] = -1;
        if (!ck || (*ck->raw_key != '\0') == (*ck->column != '\0'))
            return rt_err_set(err, RT_ERR_FORMAT,
                              "feature column %s: cross key %zu must name a column or a "
                              "raw input",
                              nm, k);
        if (*ck->raw_key) {
            long r;
            if ((st = use_raw(def, nm, ck->raw_key, read, &r, err)))
                return st;
            f->cross_input[k] = r; /* raw index for now */
            continue;
        }
        long s = find_fcol(g, ck->column);
        if (s < 0 || !rt_fc_column_is_categorical(g->fcols[s].type) ||
            g->fcols[s].type == PREDICTD__COLUMN_TYPE__CROSSED ||
            g->fcols[s].type == PREDICTD__COLUMN_TYPE__WEIGHTED)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "feature column %s: cross key \"%.64s\" is not a "
                              "vocabulary, hash or bucketized column",
                              nm, ck->column);
        f->cross_col[k] = s;
    }
    /* TensorFlow's sparse_cross hashes its sparse inputs (the
     * categorical columns' ids) before its dense ones (raw inputs),
     * each group in key order: keep the parts in that order. */
    size_t at = 0;
    for (int group = 0; group < 2; group++)
        for (size_t k = 0; k < f->n_cross; k++) {
            bool is_col = *d->cross_keys[k]->column != '\0';
            if (is_col != (group == 0))
                continue;
            long r = -1, s = -1;
            if (is_col)
                s = find_fcol(g, d->cross_keys[k]->column);
            else
                r = rt_graph_find_raw(def, d->cross_keys[k]->raw_key);
            f->cross_input[at] = r;
            f->cross_col[at] = s;
            at++;
        }
    f->num_buckets = d->hash_bucket_size;
    return RT_OK;
}

/* categorical_column_with_identity: an int raw column, ids its values. */
rt_status rt_graph_compile_identity(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err)
{
    rt_fcol *f = &g->fcols[c];
    const Predictd__FeatureColumn *d = f->def;
    const char *nm = d->name;
    rt_status st = use_number_raw(g, c, d->key, "reads", read, raw, err);
    if (st)
        return st;
    if (d->num_buckets < 1 || d->num_buckets > G_MAX_BUCKETS)
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: num_buckets %lld out of range",
                          nm, (long long)d->num_buckets);
    if (d->default_id < -1 || d->default_id >= d->num_buckets)
        return rt_err_set(err, RT_ERR_FORMAT, "feature column %s: bad default_value %lld", nm,
                          (long long)d->default_id);
    f->num_buckets = d->num_buckets;
    return RT_OK;
}

/* weighted_categorical_column: a keyed or bucketized column's ids and a
 * numeric raw column of weights (f->input). */
rt_status rt_graph_compile_weighted(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err)
{
    rt_fcol *f = &g->fcols[c];
    const Predictd__FeatureColumn *d = f->def;
    const char *nm = d->name;
    long s = find_fcol(g, d->categorical_column);
    Predictd__ColumnType t = s >= 0 ? g->fcols[s].type : PREDICTD__COLUMN_TYPE__NUMERIC;
    if (t != PREDICTD__COLUMN_TYPE__IDENTITY && t != PREDICTD__COLUMN_TYPE__VOCABULARY_LIST &&
        t != PREDICTD__COLUMN_TYPE__VOCABULARY_FILE && t != PREDICTD__COLUMN_TYPE__HASH_BUCKET &&
        t != PREDICTD__COLUMN_TYPE__BUCKETIZED)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "feature column %s: categorical_column \"%.64s\" is not an identity, "
                          "vocabulary, hash bucket or bucketized column",
                          nm, d->categorical_column);
    rt_status st = use_number_raw(g, c, d->weight_feature_key, "weights in", read, raw, err);
    if (st)
        return st;
    f->source = s;
    f->num_buckets = g->fcols[s].num_buckets;
    return RT_OK;
}

/* Embedding and indicator columns: dense values of a categorical column. */
rt_status rt_graph_compile_of_ids(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err)
{
    (void)read;
    (void)raw;
    rt_fcol *f = &g->fcols[c];
    const Predictd__FeatureColumn *d = f->def;
    const char *nm = d->name;
    long s = find_fcol(g, d->categorical_column);
    if (s < 0 || !rt_fc_column_is_categorical(g->fcols[s].type))
        return rt_err_set(err, RT_ERR_FORMAT,
                          "feature column %s: categorical_column \"%.64s\" is not a "
                          "categorical column",
                          nm, d->categorical_column);
    f->source = s;
    if (d->type == PREDICTD__COLUMN_TYPE__INDICATOR) {
        if ((uint64_t)g->fcols[s].num_buckets > G_MAX_WIDTH)
            return rt_err_set(err, RT_ERR_LIMIT,
                              "feature column %s: indicator of %lld buckets is too wide", nm,
                              (long long)g->fcols[s].num_buckets);
        f->width = (size_t)g->fcols[s].num_buckets;
    } else {
        if (d->dimension == 0 || d->dimension > RT_GRAPH_MAX_SHAPE ||
            (d->combiner != PREDICTD__COMBINER__COMBINER_MEAN &&
             d->combiner != PREDICTD__COMBINER__COMBINER_SUM &&
             d->combiner != PREDICTD__COMBINER__COMBINER_SQRTN))
            return rt_err_set(err, RT_ERR_FORMAT,
                              "feature column %s: bad dimension %u or combiner", nm,
                              d->dimension);
        f->width = d->dimension;
    }
    return RT_OK;
}

static rt_status compile_columns(rt_graph *g, rt_err *err)
{
    const Predictd__ModelDef *def = g->def;
    rt_status st = RT_OK;
    bool *read = calloc(def->n_raw_columns + 1, sizeof *read);
    long *raw = calloc(def->n_feature_columns + 1, sizeof *raw);
    long *raw_to_input = calloc(def->n_raw_columns + 1, sizeof *raw_to_input);
    if (!read || !raw || !raw_to_input) {
        st = NOMEM(err);
        goto out;
    }
    size_t n_labels = 0, n_weights = 0;
    for (size_t i = 0; i < def->n_raw_columns; i++) {
        const Predictd__RawColumn *rc = def->raw_columns[i];
        if (!rc || !rc->name || !*rc->name || rt_graph_find_raw(def, rc->name) != (long)i) {
            st = rt_err_set(err, RT_ERR_FORMAT, "raw column %zu: empty or repeated name", i);
            goto out;
        }
        if (rc->dtype != PREDICTD__DTYPE__DT_FLOAT && rc->dtype != PREDICTD__DTYPE__DT_STRING) {
            st = rt_err_set(err, RT_ERR_FORMAT, "raw column %s: bad dtype %d", rc->name,
                            (int)rc->dtype);
            goto out;
        }
        n_labels += rc->is_label;
        n_weights += rc->is_weight;
        if (rc->is_weight && (rc->is_label || rc->dtype != PREDICTD__DTYPE__DT_FLOAT)) {
            st = rt_err_set(err, RT_ERR_FORMAT, "raw column %s: a weight column must be a "
                            "numeric column other than the label", rc->name);
            goto out;
        }
    }
    size_t n_heads = def->graph ? def->graph->n_heads : 0; /* several: one label each */
    if (n_weights > (n_heads > 1 ? n_heads : 1)) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%zu weight columns", n_weights);
        goto out;
    }
    if (n_labels > 1 && !(n_heads > 1 && n_labels == n_heads) &&
        !(def->head && def->head->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION &&
          n_labels == def->head->label_dimension)) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%zu label columns", n_labels);
        goto out;
    }
    g->n_fcols = def->n_feature_columns;
    if (g->n_fcols == 0) {
        st = rt_err_set(err, RT_ERR_FORMAT, "no feature columns");
        goto out;
    }
    if (!(g->fcols = calloc(g->n_fcols, sizeof *g->fcols))) {
        st = NOMEM(err);
        goto out;
    }
    for (size_t c = 0; c < g->n_fcols; c++) {
        rt_fcol *f = &g->fcols[c];
        f->def = def->feature_columns[c];
        if (!f->def || !f->def->name || !*f->def->name) {
            st = rt_err_set(err, RT_ERR_FORMAT, "feature column %zu: no name", c);
            goto out;
        }
        f->type = f->def->type;
        f->kind = rt_fc_kind_of(f->type);
        f->input = -1;
        f->source = -1;
        raw[c] = -1;
        if (find_fcol(g, f->def->name) != (long)c) {
            st = rt_err_set(err, RT_ERR_FORMAT, "feature column %s: defined twice",
                            f->def->name);
            goto out;
        }
    }
    for (int pass = 0; pass < 4; pass++)
        for (size_t c = 0; c < g->n_fcols; c++) {
            const rt_fc_kind *k = rt_fc_kind_of(g->fcols[c].type);
            if (!k) {
                st = rt_err_set(err, RT_ERR_FORMAT, "feature column %s: unknown type %d",
                                g->fcols[c].def->name, (int)g->fcols[c].type);
                goto out;
            }
            if (k->compile_pass == pass && (st = k->compile(g, c, read, raw, err)))
                goto out;
        }
    /* The transform's run order: by pass, in column order within one. */
    if (!(g->fc_order = malloc((g->n_fcols ? g->n_fcols : 1) * sizeof *g->fc_order))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int pass = 0, j = 0; pass < RT_FC_PASSES; pass++) {
        g->fc_pass_at[pass] = (size_t)j;
        for (size_t c = 0; c < g->n_fcols; c++)
            if (g->fcols[c].kind->transform_pass == pass)
                g->fc_order[j++] = c;
        g->fc_pass_at[pass + 1] = (size_t)j;
    }
    /* Number the inputs in raw column order. */
    for (size_t i = 0; i < def->n_raw_columns; i++)
        g->n_inputs += read[i];
    if (g->n_inputs && !(g->inputs = calloc(g->n_inputs, sizeof *g->inputs))) {
        st = NOMEM(err);
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < def->n_raw_columns; i++) {
        raw_to_input[i] = -1;
        if (!read[i])
            continue;
        g->inputs[k].name = def->raw_columns[i]->name;
        g->inputs[k].name_len = g->inputs[k].name ? strlen(g->inputs[k].name) : 0;
        g->inputs[k].dtype = def->raw_columns[i]->dtype;
        g->inputs[k].raw = def->raw_columns[i];
        raw_to_input[i] = (long)k++;
    }
    for (size_t c = 0; c < g->n_fcols; c++) {
        rt_fcol *f = &g->fcols[c];
        if (raw[c] >= 0)
            f->input = raw_to_input[raw[c]];
        for (size_t p = 0; p < f->n_cross; p++)
            if (f->cross_input[p] >= 0)
                f->cross_input[p] = raw_to_input[f->cross_input[p]];
    }
out:
    free(read);
    free(raw);
    free(raw_to_input);
    return st;
}

/* The kind of compiled column c (compile_columns checked it is known). */
static const rt_fc_kind *kind_of(const rt_graph *g, size_t c)
{
    return g->fcols[c].kind;
}

/* Values per instance a column contributes to the linear part. */
static size_t linear_dim(const rt_fcol *f)
{
    return f->width ? f->width : (size_t)f->num_buckets;
}

static int g_cmp_ctx_names(const rt_graph *g, size_t a, size_t b)
{
    return strcmp(g->fcols[a].def->name, g->fcols[b].def->name);
}

static rt_status set_class_names(rt_graph *g, const Predictd__Head *h, rt_err *err);

/* Several heads (MultiHead): the logits are theirs side by side; g->head is
 * the first head's type (TF serves the first head by default). Each head
 * gets a view (g->head_views[k]): a graph holding only that head's type,
 * width, classes and class names (and a poisson head's exp link), which rt_head_compute and the answers'
 * renderers read as if it were a one-head model. */
static rt_status compile_heads(rt_graph *g, rt_err *err)
{
    const Predictd__Graph *gd = g->def->graph;
    size_t ld = 0;
    for (size_t k = 0; k < gd->n_heads; k++) {
        const Predictd__Head *h = gd->heads[k] ? gd->heads[k]->head : NULL;
        if (!h)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: head %zu has no type", k);
        if (h->type == PREDICTD__HEAD_TYPE__HEAD_BINARY && h->n_classes == 2)
            ld += 1;
        else if (h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS && h->n_classes >= 3 &&
                 h->n_classes <= 1000000)
            ld += h->n_classes;
        else if (h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION && h->label_dimension == 1)
            ld += 1;
        else if (h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL && h->n_classes >= 2 &&
                 h->n_classes <= 1000000)
            ld += h->n_classes;
        else
            return rt_err_set(err, RT_ERR_FORMAT, "graph: head %zu: bad type or shape", k);
    }
    if (!(g->head_views = calloc(gd->n_heads, sizeof *g->head_views)))
        return NOMEM(err);
    g->n_head_views = gd->n_heads;
    for (size_t k = 0; k < gd->n_heads; k++) {
        const Predictd__Head *h = gd->heads[k]->head;
        rt_graph *v = &g->head_views[k];
        v->def = g->def;
        v->head = h->type;
        v->n_classes = h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? 0 : h->n_classes;
        v->logits_dim = h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ||
                                h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL
                            ? h->n_classes
                            : 1;
        rt_loss hl;
        rt_graph_node_head_loss(gd->heads[k], &hl);
        if (h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION && hl.kind == RT_LOSS_POISSON)
            v->xgb_link = RT_XGB_LINK_EXP; /* as one poisson head serves: exp(logits) */
        rt_status st = set_class_names(v, h, err);
        if (st != RT_OK)
            return st;
    }
    if (g->def->graph->logits_dimension != ld)
        return rt_err_set(err, RT_ERR_FORMAT, "graph.logits_dimension %u, the heads need %zu",
                          g->def->graph->logits_dimension, ld);
    g->head = g->def->head->type;
    g->logits_dim = ld;
    return RT_OK;
}

static rt_status compile_head(rt_graph *g, rt_err *err)
{
    const Predictd__ModelDef *def = g->def;
    const Predictd__Head *h = def->head;
    if (!h || !def->graph)
        return rt_err_set(err, RT_ERR_FORMAT, "the model has no head or graph");
    if (def->graph->n_heads > 1)
        return compile_heads(g, err);
    g->head = h->type;
    rt_loss hl;
    rt_graph_head_loss(def, &hl);
    if (h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION && hl.kind == RT_LOSS_POISSON)
        g->xgb_link = RT_XGB_LINK_EXP; /* TF's PoissonRegressionHead serves exp(logits) */
    size_t ld;
    switch (h->type) {
    case PREDICTD__HEAD_TYPE__HEAD_BINARY:
        if (h->n_classes != 2)
            return rt_err_set(err, RT_ERR_FORMAT, "binary head with %u classes", h->n_classes);
        g->n_classes = 2;
        ld = 1;
        break;
    case PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS:
        if (h->n_classes < 3 || h->n_classes > 1000000)
            return rt_err_set(err, RT_ERR_FORMAT, "multi-class head with %u classes",
                              h->n_classes);
        g->n_classes = h->n_classes;
        ld = h->n_classes;
        break;
    case PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL: /* TF's MultiLabelHead: a logit per class */
        if (h->n_classes < 2 || h->n_classes > 1000000)
            return rt_err_set(err, RT_ERR_FORMAT, "multi-label head with %u classes",
                              h->n_classes);
        g->n_classes = h->n_classes;
        ld = h->n_classes;
        break;
    case PREDICTD__HEAD_TYPE__HEAD_REGRESSION:
        if (h->label_dimension < 1 || h->label_dimension > RT_GRAPH_MAX_SHAPE)
            return rt_err_set(err, RT_ERR_FORMAT, "regression head with label_dimension %u",
                              h->label_dimension);
        ld = h->label_dimension;
        break;
    default:
        return rt_err_set(err, RT_ERR_FORMAT, "unknown head type %d", (int)h->type);
    }
    if (def->graph->logits_dimension != ld)
        return rt_err_set(err, RT_ERR_FORMAT, "graph.logits_dimension %u, head needs %zu",
                          def->graph->logits_dimension, ld);
    g->logits_dim = ld;
    return set_class_names(g, h, err);
}

/* g's class names from head h's label vocabulary ("0", "1", ... without). */
static rt_status set_class_names(rt_graph *g, const Predictd__Head *h, rt_err *err)
{
    if (!g->n_classes)
        return RT_OK;
    if (h->n_label_vocabulary && h->n_label_vocabulary != g->n_classes)
        return rt_err_set(err, RT_ERR_FORMAT, "label vocabulary has %zu words for %zu classes",
                          h->n_label_vocabulary, g->n_classes);
    if (!(g->class_names = calloc(g->n_classes, sizeof *g->class_names)))
        return NOMEM(err);
    for (size_t k = 0; k < g->n_classes; k++) {
        char num[24];
        const char *s = num;
        if (h->n_label_vocabulary)
            s = h->label_vocabulary[k];
        else
            snprintf(num, sizeof num, "%zu", k);
        size_t n = strlen(s);
        if (!(g->class_names[k] = malloc(n + 1)))
            return NOMEM(err);
        memcpy(g->class_names[k], s, n + 1);
    }
    return RT_OK;
}

static rt_status compile_parts(rt_graph *g, rt_err *err)
{
    const Predictd__Graph *gd = g->def->graph;
    if (gd->trees) {
        if (gd->n_linear_columns || gd->n_dnn_columns || gd->n_hidden_layers ||
            gd->logits_layer || gd->n_embeddings || gd->n_linear_weights)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "a tree ensemble cannot have linear or DNN parts too");
        return rt_trees_compile(g, &g->trees, err);
    }
    g->n_linear = gd->n_linear_columns;
    if (g->n_linear) {
        g->linear_cols = calloc(g->n_linear, sizeof *g->linear_cols);
        g->linear_w = calloc(g->n_linear, sizeof *g->linear_w);
        if (!g->linear_cols || !g->linear_w)
            return NOMEM(err);
        if (!gd->linear_bias || !*gd->linear_bias)
            return rt_err_set(err, RT_ERR_FORMAT, "linear part without linear_bias tensor");
    }
    for (size_t i = 0; i < g->n_linear; i++) {
        long c = find_fcol(g, gd->linear_columns[i]);
        if (c < 0 || !kind_of(g, (size_t)c)->linear_ok)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "linear column \"%.64s\": unknown or not for the linear part",
                              gd->linear_columns[i]);
        for (size_t k = 0; k < i; k++)
            if (g->linear_cols[k] == (size_t)c)
                return rt_err_set(err, RT_ERR_FORMAT, "linear column %s listed twice",
                                  gd->linear_columns[i]);
        g->linear_cols[i] = (size_t)c;
    }
    g->n_dnn = gd->n_dnn_columns;
    if (!g->n_dnn) {
        if (gd->n_hidden_layers || gd->n_embeddings)
            return rt_err_set(err, RT_ERR_FORMAT, "DNN layers without DNN columns");
        if (!g->n_linear)
            return rt_err_set(err, RT_ERR_FORMAT, "the model has neither linear nor DNN columns");
        return gd->n_nodes ? rt_graph_nodes_compile(g, err) : RT_OK;
    }
    g->dnn_cols = calloc(g->n_dnn, sizeof *g->dnn_cols);
    g->dnn_offset = calloc(g->n_dnn, sizeof *g->dnn_offset);
    g->dnn_width = calloc(g->n_dnn, sizeof *g->dnn_width);
    if (!g->dnn_cols || !g->dnn_offset || !g->dnn_width)
        return NOMEM(err);
    for (size_t i = 0; i < g->n_dnn; i++) {
        long c = find_fcol(g, gd->dnn_columns[i]);
        if (c < 0 || !kind_of(g, (size_t)c)->dnn_ok)
            return rt_err_set(err, RT_ERR_FORMAT, "DNN column \"%.64s\": unknown or not dense",
                              gd->dnn_columns[i]);
        /* Insertion sort by name (TensorFlow's input_layer order). */
        size_t at = i;
        while (at > 0 && g_cmp_ctx_names(g, g->dnn_cols[at - 1], (size_t)c) > 0) {
            g->dnn_cols[at] = g->dnn_cols[at - 1];
            at--;
        }
        if (at > 0 && g->dnn_cols[at - 1] == (size_t)c)
            return rt_err_set(err, RT_ERR_FORMAT, "DNN column %s listed twice",
                              gd->dnn_columns[i]);
        g->dnn_cols[at] = (size_t)c;
    }
    for (size_t i = 0; i + 1 < g->n_dnn; i++)
        if (g->dnn_cols[i] == g->dnn_cols[i + 1])
            return rt_err_set(err, RT_ERR_FORMAT, "DNN column listed twice");
    size_t off = 0;
    for (size_t i = 0; i < g->n_dnn; i++) {
        g->dnn_offset[i] = off;
        g->dnn_width[i] = g->fcols[g->dnn_cols[i]].width;
        off += g->dnn_width[i];
        if (off > G_MAX_WIDTH)
            return rt_err_set(err, RT_ERR_LIMIT, "DNN input is too wide");
    }
    g->dnn_dim = off;
    /* Every embedding column of the DNN part has exactly one table. */
    for (size_t i = 0; i < gd->n_embeddings; i++) {
        const Predictd__EmbeddingWeight *e = gd->embeddings[i];
        long c = e ? find_fcol(g, e->column) : -1;
        if (c < 0 || !kind_of(g, (size_t)c)->table || !*e->tensor)
            return rt_err_set(err, RT_ERR_FORMAT, "embedding table %zu: bad column or tensor", i);
    }
    for (size_t i = 0; i < g->n_dnn; i++) {
        const rt_fcol *f = &g->fcols[g->dnn_cols[i]];
        if (!kind_of(g, g->dnn_cols[i])->table)
            continue;
        size_t found = 0;
        for (size_t k = 0; k < gd->n_embeddings; k++)
            found += strcmp(gd->embeddings[k]->column, f->def->name) == 0;
        if (found != 1)
            return rt_err_set(err, RT_ERR_FORMAT, "embedding column %s: %zu tables",
                              f->def->name, found);
    }
    if (gd->n_nodes) /* a custom graph: nodes instead of the layers */
        return rt_graph_nodes_compile(g, err);
    if (!gd->logits_layer)
        return rt_err_set(err, RT_ERR_FORMAT, "DNN part without a logits layer");
    if (gd->n_hidden_layers > 1024)
        return rt_err_set(err, RT_ERR_LIMIT, "too many hidden layers");
    g->n_layers = gd->n_hidden_layers + 1;
    if (!(g->layers = calloc(g->n_layers, sizeof *g->layers)))
        return NOMEM(err);
    size_t in = g->dnn_dim;
    for (size_t i = 0; i < g->n_layers; i++) {
        const Predictd__DenseLayer *l = i < gd->n_hidden_layers ? gd->hidden_layers[i]
                                                                : gd->logits_layer;
        if (!l || l->units == 0 || l->units > RT_GRAPH_MAX_SHAPE || !l->kernel || !*l->kernel ||
            !l->bias || !*l->bias || (int)l->activation < 0 || l->activation > 4)
            return rt_err_set(err, RT_ERR_FORMAT, "DNN layer %zu: bad units, activation or names",
                              i);
        if (i + 1 == g->n_layers && l->units != g->logits_dim)
            return rt_err_set(err, RT_ERR_FORMAT, "logits layer has %u units, head needs %zu",
                              l->units, g->logits_dim);
        g->layers[i].in = in;
        g->layers[i].out = l->units;
        g->layers[i].act = l->activation;
        const Predictd__BatchNorm *bn = l->batch_norm;
        if (bn && (i + 1 == g->n_layers || !bn->gamma || !*bn->gamma || !bn->beta ||
                   !*bn->beta || !bn->moving_mean || !*bn->moving_mean ||
                   !bn->moving_variance || !*bn->moving_variance ||
                   !(bn->epsilon > 0 && bn->epsilon < 1) ||
                   !(bn->momentum >= 0 && bn->momentum < 1)))
            return rt_err_set(err, RT_ERR_FORMAT, "DNN layer %zu: bad batch_norm (tensor names, "
                              "epsilon in (0, 1), momentum in [0, 1); hidden layers only)", i);
        g->layers[i].bn_eps = bn ? bn->epsilon : 0.0f;
        in = l->units;
    }
    return RT_OK;
}

static const char *linear_tensor(const Predictd__Graph *gd, const char *col)
{
    for (size_t k = 0; k < gd->n_linear_weights; k++)
        if (gd->linear_weights[k] && strcmp(gd->linear_weights[k]->column, col) == 0)
            return gd->linear_weights[k]->tensor;
    return NULL;
}

static const char *embedding_tensor(const Predictd__Graph *gd, const char *col)
{
    for (size_t k = 0; k < gd->n_embeddings; k++)
        if (strcmp(gd->embeddings[k]->column, col) == 0)
            return gd->embeddings[k]->tensor;
    return NULL;
}

/* The first DNN column (index into dnn_cols, <= i) whose embedding table
 * is the tensor of DNN column i's: i itself unless the table is shared. */
static size_t shared_with(const rt_graph *g, size_t i)
{
    const Predictd__Graph *gd = g->def->graph;
    const char *t = embedding_tensor(gd, g->fcols[g->dnn_cols[i]].def->name);
    for (size_t k = 0; k < i; k++)
        if (kind_of(g, g->dnn_cols[k])->table &&
            strcmp(embedding_tensor(gd, g->fcols[g->dnn_cols[k]].def->name), t) == 0)
            return k;
    return i;
}

/* Columns may share a table only as shared_embedding_columns do: all of
 * them SHARED_EMBEDDING with one collection name, the same dimension and
 * categorical columns with the same number of buckets. */
static rt_status check_shared_tables(const rt_graph *g, rt_err *err)
{
    for (size_t i = 0; i < g->n_dnn; i++) {
        if (!kind_of(g, g->dnn_cols[i])->table)
            continue;
        size_t k = shared_with(g, i);
        if (k == i)
            continue;
        const rt_fcol *a = &g->fcols[g->dnn_cols[k]], *b = &g->fcols[g->dnn_cols[i]];
        bool shared = a->type == PREDICTD__COLUMN_TYPE__SHARED_EMBEDDING &&
                      b->type == PREDICTD__COLUMN_TYPE__SHARED_EMBEDDING &&
                      strcmp(a->def->shared_embedding_collection_name,
                             b->def->shared_embedding_collection_name) == 0;
        if (!shared)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "embedding columns %s and %s use one table but are not "
                              "shared_embedding_columns of one collection",
                              a->def->name, b->def->name);
        if (a->width != b->width ||
            g->fcols[a->source].num_buckets != g->fcols[b->source].num_buckets)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "shared embedding columns %s and %s: their categorical columns "
                              "have %lld and %lld buckets, dimensions %zu and %zu (a shared "
                              "table needs the same)",
                              a->def->name, b->def->name,
                              (long long)g->fcols[a->source].num_buckets,
                              (long long)g->fcols[b->source].num_buckets, a->width, b->width);
    }
    return RT_OK;
}

/* Compiles def without binding tensors or reading vocabulary files. */
static rt_status compile(const Predictd__ModelDef *def, rt_graph **out, rt_err *err)
{
    *out = NULL;
    if (!def)
        return rt_err_set(err, RT_ERR_INVALID, "no ModelDef");
    rt_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NOMEM(err);
    g->def = def;
    static _Atomic uint64_t made;
    g->serial = atomic_fetch_add(&made, 1) + 1;
    rt_status st = compile_columns(g, err);
    if (!st)
        st = compile_head(g, err);
    if (!st)
        st = compile_parts(g, err);
    if (!st)
        st = check_shared_tables(g, err);
    if (!st) {
        const Predictd__Graph *gd = def->graph;
        for (size_t i = 0; i < g->n_linear && !st; i++) {
            const char *t = linear_tensor(gd, g->fcols[g->linear_cols[i]].def->name);
            if (!t || !*t)
                st = rt_err_set(err, RT_ERR_FORMAT, "linear column %s has no weights tensor",
                                g->fcols[g->linear_cols[i]].def->name);
        }
    }
    if (st) {
        rt_graph_free(g);
        return st;
    }
    *out = g;
    return RT_OK;
}

rt_status rt_graph_check(const Predictd__ModelDef *def, rt_err *err)
{
    rt_graph *g = NULL;
    rt_status st = compile(def, &g, err);
    rt_graph_free(g);
    return st;
}

/* ------------------------------------------------------------- tensors */

static rt_status push_spec(rt_tensor_spec *s, size_t *n, const char *name, uint64_t d0,
                           uint64_t d1, uint32_t rank)
{
    rt_tensor_spec *t = &s[(*n)++];
    t->name = name;
    t->shape[0] = d0;
    t->shape[1] = rank == 2 ? d1 : 0;
    t->rank = rank;
    t->count = rank == 2 ? d0 * d1 : d0;
    return RT_OK;
}

/* Tensor specs of the graph, at most this many. */
static size_t graph_specs_cap(const rt_graph *g)
{
    return g->n_linear + 1 + g->n_dnn + 6 * g->n_layers + 6 * g->n_nodes;
}

/* Fills specs (room for graph_specs_cap(g)): the linear weights and bias,
 * the embeddings, then per layer its kernel, bias and batch normalization's
 * gamma, beta, moving_mean, moving_variance. */
static size_t graph_specs(const rt_graph *g, rt_tensor_spec *s)
{
    const Predictd__Graph *gd = g->def->graph;
    size_t n = 0;
    for (size_t i = 0; i < g->n_linear; i++) {
        const rt_fcol *f = &g->fcols[g->linear_cols[i]];
        push_spec(s, &n, linear_tensor(gd, f->def->name), linear_dim(f), g->logits_dim, 2);
    }
    if (g->n_linear)
        push_spec(s, &n, gd->linear_bias, g->logits_dim, 0, 1);
    for (size_t i = 0; i < g->n_dnn; i++) {
        const rt_fcol *f = &g->fcols[g->dnn_cols[i]];
        if (kind_of(g, g->dnn_cols[i])->table && shared_with(g, i) == i)
            push_spec(s, &n, embedding_tensor(gd, f->def->name),
                      (uint64_t)g->fcols[f->source].num_buckets, f->width, 2);
    }
    for (size_t i = 0; i < g->n_layers; i++) {
        const Predictd__DenseLayer *l = i < gd->n_hidden_layers ? gd->hidden_layers[i]
                                                                : gd->logits_layer;
        push_spec(s, &n, l->kernel, g->layers[i].in, g->layers[i].out, 2);
        push_spec(s, &n, l->bias, g->layers[i].out, 0, 1);
        if (l->batch_norm) {
            const Predictd__BatchNorm *bn = l->batch_norm;
            const char *names[4] = {bn->gamma, bn->beta, bn->moving_mean, bn->moving_variance};
            for (size_t k = 0; k < 4; k++)
                push_spec(s, &n, names[k], g->layers[i].out, 0, 1);
        }
    }
    for (size_t i = 0; i < g->n_nodes; i++) { /* a custom graph's, in node order */
        const rt_gnode *gn = &g->nodes[i];
        const Predictd__Node *nd = gn->def;
        if (nd->kind == PREDICTD__NODE_KIND__NODE_DENSE) {
            push_spec(s, &n, nd->kernel, gn->in_width[0], gn->op.out, 2);
            push_spec(s, &n, nd->bias, gn->op.out, 0, 1);
        } else if (nd->kind == PREDICTD__NODE_KIND__NODE_BATCH_NORM) {
            const Predictd__BatchNorm *bn = nd->batch_norm;
            const char *names[4] = {bn->gamma, bn->beta, bn->moving_mean, bn->moving_variance};
            for (size_t k = 0; k < 4; k++)
                push_spec(s, &n, names[k], gn->op.out, 0, 1);
        }
    }
    return n;
}

rt_status rt_graph_tensor_specs(const Predictd__ModelDef *def, rt_tensor_spec **specs,
                                   size_t *n, rt_err *err)
{
    rt_graph *g = NULL;
    *specs = NULL;
    *n = 0;
    rt_status st = compile(def, &g, err);
    if (st)
        return st;
    rt_tensor_spec *s = calloc(graph_specs_cap(g), sizeof *s);
    if (!s) {
        rt_graph_free(g);
        return NOMEM(err);
    }
    *n = graph_specs(g, s);
    *specs = s;
    rt_graph_free(g);
    return RT_OK;
}

/* ------------------------------------------------------------- binding */

static rt_status read_vocab_file(rt_fcol *f, const char *assets_dir, bool trim, rt_err *err)
{
    const Predictd__FeatureColumn *d = f->def;
    char path[4096];
    if (!assets_dir)
        return rt_err_set(err, RT_ERR_INVALID,
                          "feature column %s: vocabulary_file %s needs an assets directory",
                          d->name, d->vocabulary_file);
    int pn = snprintf(path, sizeof path, "%s/%s", assets_dir, d->vocabulary_file);
    if (pn < 0 || (size_t)pn >= sizeof path)
        return rt_err_set(err, RT_ERR_LIMIT, "feature column %s: path too long", d->name);
    return rt_vocab_load_file(&f->vocab, path, (size_t)d->vocabulary_size, trim, &f->file_vocab,
                              &f->n_file_vocab, err);
}

static const float *get_tensor(rt_tensor_lookup_fn lookup, void *ctx, const rt_tensor_spec *s,
                               rt_err *err)
{
    const float *p = lookup(ctx, s->name, s->count, err);
    if (!p && err && !err->msg[0])
        rt_err_set(err, RT_ERR_NOTFOUND, "tensor %s is missing", s->name);
    return p;
}

static rt_status bind(rt_graph *g, rt_tensor_lookup_fn lookup, void *ctx,
                      const char *assets_dir, rt_err *err)
{
    rt_status st = RT_OK;
    for (size_t c = 0; c < g->n_fcols; c++) {
        rt_fcol *f = &g->fcols[c];
        if (f->type == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST) {
            if ((st = rt_vocab_build(&f->vocab, (const char *const *)f->def->vocabulary,
                                     f->def->n_vocabulary, err))) {
                rt_err_prefix(err, "feature column %s: vocabulary", f->def->name);
                return st;
            }
        } else if (f->type == PREDICTD__COLUMN_TYPE__VOCABULARY_FILE) {
            if ((st = read_vocab_file(f, assets_dir, g->def->trim_strings, err)))
                return st;
        }
    }
    rt_tensor_spec *s = calloc(graph_specs_cap(g), sizeof *s);
    if (!s)
        return NOMEM(err);
    size_t n = graph_specs(g, s), k = 0;
    if (err)
        err->msg[0] = '\0';
    const float *p;
    for (size_t i = 0; i < g->n_linear; i++, k++) {
        if (!(p = get_tensor(lookup, ctx, &s[k], err)))
            goto fail;
        g->linear_w[i] = p;
    }
    if (g->n_linear) {
        if (!(p = get_tensor(lookup, ctx, &s[k++], err)))
            goto fail;
        g->linear_bias = p;
    }
    for (size_t i = 0; i < g->n_dnn; i++) {
        rt_fcol *f = &g->fcols[g->dnn_cols[i]];
        if (!kind_of(g, g->dnn_cols[i])->table)
            continue;
        size_t first = shared_with(g, i);
        if (first != i) { /* a shared table: bound with its first user */
            f->embedding = g->fcols[g->dnn_cols[first]].embedding;
            continue;
        }
        if (!(p = get_tensor(lookup, ctx, &s[k++], err)))
            goto fail;
        f->embedding = p;
    }
    for (size_t i = 0; i < g->n_layers; i++) {
        if (!(p = get_tensor(lookup, ctx, &s[k++], err)))
            goto fail;
        /* rt_dense_rows skips zero inputs, which is exact only for finite
         * weights (0 * Inf = NaN). */
        for (size_t q = 0; q < g->layers[i].in * g->layers[i].out; q++)
            if (!isfinite(p[q])) {
                rt_err_set(err, RT_ERR_FORMAT, "DNN layer %zu: kernel value %zu is not finite",
                           i, q);
                free(s);
                return RT_ERR_FORMAT;
            }
        g->layers[i].kernel = p;
        if (!(p = get_tensor(lookup, ctx, &s[k++], err)))
            goto fail;
        g->layers[i].bias = p;
        const Predictd__DenseLayer *l = i < g->def->graph->n_hidden_layers
                                            ? g->def->graph->hidden_layers[i]
                                            : g->def->graph->logits_layer;
        if (!l->batch_norm)
            continue;
        const float *bn[4];
        for (size_t q = 0; q < 4; q++)
            if (!(bn[q] = get_tensor(lookup, ctx, &s[k++], err)))
                goto fail;
        for (size_t j = 0; j < g->layers[i].out; j++)
            if (!isfinite(bn[0][j]) || !isfinite(bn[1][j]) || !isfinite(bn[2][j]) ||
                !(bn[3][j] >= 0.0f) || !isfinite(bn[3][j])) {
                rt_err_set(err, RT_ERR_FORMAT, "DNN layer %zu: batch normalization value %zu "
                           "is not finite or a moving variance is negative", i, j);
                free(s);
                return RT_ERR_FORMAT;
            }
        g->layers[i].bn_gamma = bn[0];
        g->layers[i].bn_beta = bn[1];
        g->layers[i].bn_mean = bn[2];
        g->layers[i].bn_var = bn[3];
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        rt_gnode *gn = &g->nodes[i];
        if (gn->op.kind == PREDICTD__NODE_KIND__NODE_DENSE) {
            if (!(p = get_tensor(lookup, ctx, &s[k++], err)))
                goto fail;
            for (size_t q = 0; q < gn->in_width[0] * gn->op.out; q++)
                if (!isfinite(p[q])) { /* as the layers' (rt_dense_rows) */
                    rt_err_set(err, RT_ERR_FORMAT, "graph node %s: kernel value %zu is not "
                               "finite", gn->def->name, q);
                    free(s);
                    return RT_ERR_FORMAT;
                }
            gn->op.kernel = p;
            if (!(p = get_tensor(lookup, ctx, &s[k++], err)))
                goto fail;
            gn->op.bias = p;
        } else if (gn->op.kind == PREDICTD__NODE_KIND__NODE_BATCH_NORM) {
            const float *bn[4];
            for (size_t q = 0; q < 4; q++)
                if (!(bn[q] = get_tensor(lookup, ctx, &s[k++], err)))
                    goto fail;
            for (size_t j = 0; j < gn->op.out; j++)
                if (!isfinite(bn[0][j]) || !isfinite(bn[1][j]) || !isfinite(bn[2][j]) ||
                    !(bn[3][j] >= 0.0f) || !isfinite(bn[3][j])) {
                    rt_err_set(err, RT_ERR_FORMAT, "graph node %s: batch normalization value "
                               "%zu is not finite or a moving variance is negative",
                               gn->def->name, j);
                    free(s);
                    return RT_ERR_FORMAT;
                }
            gn->op.bn_gamma = bn[0];
            gn->op.bn_beta = bn[1];
            gn->op.bn_mean = bn[2];
            gn->op.bn_var = bn[3];
        }
    }
    free(s);
    return k == n ? RT_OK : rt_err_set(err, RT_ERR_FORMAT, "internal: tensor count");
fail:
    free(s);
    return RT_ERR_NOTFOUND;
}

rt_status rt_graph_build(const Predictd__ModelDef *def, rt_tensor_lookup_fn lookup,
                         void *lookup_ctx, const char *assets_dir, rt_graph **out, rt_err *err)
{
    if (!out)
        return rt_err_set(err, RT_ERR_INVALID, "rt_graph_build: out is NULL");
    *out = NULL;
    if (!lookup)
        return rt_err_set(err, RT_ERR_INVALID, "rt_graph_build: no tensor lookup");
    rt_graph *g = NULL;
    rt_status st = compile(def, &g, err);
    if (st)
        return st;
    if ((st = bind(g, lookup, lookup_ctx, assets_dir, err))) {
        rt_graph_free(g);
        return st;
    }
    *out = g;
    return RT_OK;
}

void rt_graph_free(rt_graph *g)
{
    if (!g)
        return;
    for (size_t c = 0; g->fcols && c < g->n_fcols; c++) {
        rt_fcol *f = &g->fcols[c];
        rt_vocab_free(&f->vocab);
        free(f->cross_input);
        free(f->cross_col);
        for (size_t k = 0; k < f->n_file_vocab; k++)
            free(f->file_vocab[k]);
        free(f->file_vocab);
    }
    free(g->fcols);
    free(g->fc_order);
    free(g->inputs);
    free(g->linear_cols);
    free(g->linear_w);
    free(g->dnn_cols);
    free(g->dnn_offset);
    free(g->dnn_width);
    free(g->layers);
    rt_graph_nodes_free(g);
    rt_trees_free(g->trees);
    for (size_t k = 0; g->class_names && k < g->n_classes; k++)
        free(g->class_names[k]);
    free(g->class_names);
    for (size_t h = 0; h < g->n_head_views; h++) {
        rt_graph *v = &g->head_views[h];
        for (size_t k = 0; v->class_names && k < v->n_classes; k++)
            free(v->class_names[k]);
        free(v->class_names);
    }
    free(g->head_views);
    free(g);
}

/* ------------------------------------------------------------- accessors */

const Predictd__ModelDef *rt_graph_def(const rt_graph *g)
{
    return g ? g->def : NULL;
}

uint64_t rt_graph_serial(const rt_graph *g)
{
    return g ? g->serial : 0;
}

size_t rt_graph_logits_dim(const rt_graph *g)
{
    return g ? g->logits_dim : 0;
}

size_t rt_graph_num_inputs(const rt_graph *g)
{
    return g ? g->n_inputs : 0;
}

const char *rt_graph_input_name(const rt_graph *g, size_t i)
{
    return g && i < g->n_inputs ? g->inputs[i].name : NULL;
}

Predictd__DType rt_graph_input_dtype(const rt_graph *g, size_t i)
{
    return g && i < g->n_inputs ? g->inputs[i].dtype : PREDICTD__DTYPE__DT_INVALID;
}

long rt_graph_find_input(const rt_graph *g, const char *name, size_t len)
{
    if (!g || !name)
        return -1;
    for (size_t i = 0; i < g->n_inputs; i++)
        if (g->inputs[i].name_len == len && memcmp(g->inputs[i].name, name, len) == 0)
            return (long)i;
    return -1;
}

size_t rt_graph_dnn_layout(const rt_graph *g, const size_t **cols, const size_t **offset,
                           const size_t **width, size_t *total_dim)
{
    if (cols)
        *cols = g ? g->dnn_cols : NULL;
    if (offset)
        *offset = g ? g->dnn_offset : NULL;
    if (width)
        *width = g ? g->dnn_width : NULL;
    if (total_dim)
        *total_dim = g ? g->dnn_dim : 0;
    return g ? g->n_dnn : 0;
}

const rt_graph *rt_graph_head_view(const rt_graph *g, size_t k, const char **name)
{
    if (!g || k >= g->n_head_views)
        return NULL;
    if (name)
        *name = g->def->graph->heads[k]->name;
    return &g->head_views[k];
}

const char *rt_graph_class_name(const rt_graph *g, size_t k)
{
    return g && k < g->n_classes && g->class_names ? g->class_names[k] : NULL;
}

Predictd__HeadType rt_graph_head(const rt_graph *g)
{
    return g ? g->head : PREDICTD__HEAD_TYPE__HEAD_BINARY;
}

size_t rt_graph_num_classes(const rt_graph *g)
{
    return g ? g->n_classes : 0;
}

size_t rt_graph_num_columns(const rt_graph *g)
{
    return g ? g->n_fcols : 0;
}

const Predictd__FeatureColumn *rt_graph_column(const rt_graph *g, size_t c)
{
    return g && c < g->n_fcols ? g->fcols[c].def : NULL;
}

int64_t rt_graph_column_buckets(const rt_graph *g, size_t c)
{
    return g && c < g->n_fcols ? g->fcols[c].num_buckets : 0;
}

size_t rt_graph_num_layers(const rt_graph *g)
{
    return g ? g->n_layers : 0;
}

size_t rt_graph_layer_width(const rt_graph *g, size_t l)
{
    return g && l < g->n_layers ? g->layers[l].out : 0;
}

size_t rt_graph_dnn_dim(const rt_graph *g)
{
    return g ? g->dnn_dim : 0;
}

bool rt_graph_has_trees(const rt_graph *g)
{
    return g && g->trees;
}
