/*
 * rt_spec_columns.c — the spec's "feature_columns": each column type with its
 * keys and checks (TensorFlow's argument names and rules), default names,
 * and the references between columns (sources, crossed keys, categorical
 * columns of embeddings and indicators).
 */
#include "rt_model.h"
#include "rt_spec_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* ------------------------------------------------------ feature columns */

const char *rt_spec_fc_kind_name(Predictd__ColumnType t)
{
    const rt_fc_kind *k = rt_fc_kind_of(t);
    return k ? k->spec_name : "unknown column";
}

/* Raw column `key` read by feature column at path; checks it is usable. */
static rt_status fc_raw_key(spec_ctx *s, const cJSON *c, const char *path, const char *key,
                            Predictd__FeatureColumn *fc)
{
    const char *k = NULL;
    rt_status st = rt_cfg_str(c, path, key, RT_CFG_REQUIRED, &k, s->err);
    if (st)
        return st;
    long r = rt_graph_find_raw(s->def, k);
    if (r < 0)
        return rt_cfg_fail(s->err, path, key, "\"%.64s\" is not one of the columns", k);
    const Predictd__RawColumn *rc = s->def->raw_columns[r];
    if (rc->is_label)
        return rt_cfg_fail(s->err, path, key, "\"%.64s\" is the label column", k);
    if (rc->unused)
        return rt_cfg_fail(s->err, path, key, "\"%.64s\" is listed in unused_columns", k);
    if (rc->is_weight)
        return rt_cfg_fail(s->err, path, key,
                           "\"%.64s\" is the estimator's weight_column, not a model input", k);
    if (!(fc->key = rt_spec_strndup(k, strlen(k))))
        return rt_err_set(s->err, RT_ERR_NOMEM, "out of memory");
    return RT_OK;
}

static rt_status fc_categorical_ref(spec_ctx *s, const cJSON *c, const char *path,
                                    Predictd__FeatureColumn *fc)
{
    const char *k = NULL;
    rt_status st = rt_cfg_str(c, path, "categorical_column", RT_CFG_REQUIRED, &k, s->err);
    if (st)
        return st;
    if (!(fc->categorical_column = rt_spec_strndup(k, strlen(k))))
        return rt_err_set(s->err, RT_ERR_NOMEM, "out of memory");
    return RT_OK;
}

rt_status rt_spec_fc_numeric(spec_ctx *s, const cJSON *c, const char *path,
                          Predictd__FeatureColumn *fc)
{
    rt_err *err = s->err;
    rt_status st = fc_raw_key(s, c, path, "key", fc);
    if (st)
        return st;
    const Predictd__RawColumn *rc = s->def->raw_columns[rt_graph_find_raw(s->def, fc->key)];
    if (rc->dtype != PREDICTD__DTYPE__DT_FLOAT)
        return rt_cfg_fail(err, path, "key",
                           "\"%.64s\" is a string column; numeric_column needs an int or float "
                           "column",
                           fc->key);
    int64_t shape = 1;
    if ((st = rt_cfg_int(c, path, "shape", 0, 1, RT_SPEC_MAX_WIDTH, &shape, err)))
        return st;
    fc->shape = (uint32_t)shape;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "default_value");
    if (d && !cJSON_IsNull(d)) {
        if (!(fc->default_value = calloc((size_t)shape, sizeof(float))))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        fc->n_default_value = (size_t)shape;
        if (cJSON_IsNumber(d)) {
            double v = 0;
            if ((st = rt_cfg_num(c, path, "default_value", RT_CFG_REQUIRED, -RT_SPEC_MAX_F32,
                                 RT_SPEC_MAX_F32, &v, err)))
                return st;
            for (int64_t k = 0; k < shape; k++)
                fc->default_value[k] = (float)v;
        } else if (cJSON_IsArray(d)) {
            if (cJSON_GetArraySize(d) != shape)
                return rt_cfg_fail(err, path, "default_value", "has %d values but shape is %lld",
                                   cJSON_GetArraySize(d), (long long)shape);
            int k = 0;
            for (const cJSON *v = d->child; v; v = v->next, k++) {
                if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
                    return rt_cfg_fail(err, path, "default_value",
                                       "item %d: expected a finite number, got %s", k,
                                       rt_cfg_type_name(v));
                fc->default_value[k] = (float)v->valuedouble;
            }
        } else {
            return rt_cfg_fail(err, path, "default_value", "expected a number or a list, got %s",
                               rt_cfg_type_name(d));
        }
    }
    const cJSON *nz = cJSON_GetObjectItemCaseSensitive(c, "normalizer");
    if (nz) {
        char npath[96];
        snprintf(npath, sizeof npath, "%s.normalizer", path);
        static const char *const nkeys[] = {"mean", "std", NULL};
        if (!cJSON_IsObject(nz))
            return rt_cfg_fail(err, path, "normalizer", "expected an object {\"mean\", \"std\"}");
        double mean = 0, sd = 1;
        if ((st = rt_cfg_check_keys(nz, npath, nkeys, NULL, err)) ||
            (st = rt_cfg_num(nz, npath, "mean", RT_CFG_REQUIRED, -RT_SPEC_MAX_F32, RT_SPEC_MAX_F32,
                             &mean, err)) ||
            (st = rt_cfg_num(nz, npath, "std", RT_CFG_REQUIRED, -RT_SPEC_MAX_F32, RT_SPEC_MAX_F32,
                             &sd, err)))
            return st;
        if (!(sd > 0))
            return rt_cfg_fail(err, npath, "std", "must be greater than 0");
        fc->has_normalizer = true;
        fc->norm_mean = (float)mean;
        fc->norm_std = (float)sd;
    }
    return RT_OK;
}

/* The number of items of list, the array at path.key: refused unless 1..max,
 * the message naming them as what ("numbers", "words"). */
static rt_status list_count(const cJSON *list, const char *path, const char *key, int max,
                            const char *what, int *n, rt_err *err)
{
    *n = cJSON_GetArraySize(list);
    if (*n < 1 || *n > max)
        return rt_cfg_fail(err, path, key, "must list 1..%d %s, got %d", max, what, *n);
    return RT_OK;
}

rt_status rt_spec_fc_bucketized(spec_ctx *s, const cJSON *c, const char *path,
                             Predictd__FeatureColumn *fc)
{
    rt_err *err = s->err;
    const char *src = NULL;
    const cJSON *b = NULL;
    rt_status st = rt_cfg_str(c, path, "source", RT_CFG_REQUIRED, &src, err);
    if (!st)
        st = rt_cfg_array(c, path, "boundaries", RT_CFG_REQUIRED, &b, err);
    if (st)
        return st;
    if (!(fc->source = rt_spec_strndup(src, strlen(src))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    int n;
    if ((st = list_count(b, path, "boundaries", RT_SPEC_MAX_ITEMS, "numbers", &n, err)))
        return st;
    if (!(fc->boundaries = calloc((size_t)n, sizeof(float))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    int i = 0;
    for (const cJSON *v = b->child; v; v = v->next, i++) {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
            fabs(v->valuedouble) > RT_SPEC_MAX_F32)
            return rt_cfg_fail(err, path, "boundaries", "item %d: expected a finite number, got %s",
                               i, rt_cfg_type_name(v));
        float f = (float)v->valuedouble;
        if (i > 0 && !(f > fc->boundaries[i - 1]))
            return rt_cfg_fail(err, path, "boundaries",
                               "must be strictly increasing (item %d, %g, follows %g)", i,
                               (double)f, (double)fc->boundaries[i - 1]);
        fc->boundaries[fc->n_boundaries++] = f;
    }
    return RT_OK;
}

/* num_oov_buckets and default_value of the vocabulary kinds. */
static rt_status fc_vocab_common(spec_ctx *s, const cJSON *c, const char *path,
                                 Predictd__FeatureColumn *fc, int64_t vocab_size)
{
    int64_t oov = 0, dflt = -1;
    rt_status st = rt_cfg_int(c, path, "num_oov_buckets", 0, 0, RT_SPEC_MAX_BUCKETS, &oov,
                              s->err);
    if (!st)
        st = rt_cfg_int(c, path, "default_value", 0, -1, vocab_size - 1, &dflt, s->err);
    if (st)
        return st;
    if (oov > 0 && dflt != -1)
        return rt_cfg_fail(s->err, path, "default_value",
                           "can't be given together with num_oov_buckets > 0");
    fc->num_oov_buckets = oov;
    fc->default_id = dflt;
    return RT_OK;
}

rt_status rt_spec_fc_vocab_list(spec_ctx *s, const cJSON *c, const char *path,
                             Predictd__FeatureColumn *fc)
{
    rt_err *err = s->err;
    const cJSON *voc = NULL;
    rt_status st = fc_raw_key(s, c, path, "key", fc);
    if (!st)
        st = rt_cfg_array(c, path, "vocabulary_list", RT_CFG_REQUIRED, &voc, err);
    if (st)
        return st;
    int n;
    if ((st = list_count(voc, path, "vocabulary_list", RT_SPEC_MAX_VOCAB, "words", &n, err)))
        return st;
    if (!(fc->vocabulary = calloc((size_t)n, sizeof(char *))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_vocab seen = {0};
    int i = 0;
    for (const cJSON *w = voc->child; w; w = w->next, i++) {
        char *t = NULL;
        if (cJSON_IsString(w)) {
            t = rt_spec_dup_trimmed(w->valuestring, s->trim);
        } else if (cJSON_IsNumber(w) && w->valuedouble == floor(w->valuedouble) &&
                   fabs(w->valuedouble) < 9.2e18) {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)w->valuedouble);
            t = rt_spec_strndup(num, strlen(num));
        } else {
            st = rt_cfg_fail(err, path, "vocabulary_list",
                             "item %d: expected a string or an integer, got %s", i,
                             rt_cfg_type_name(w));
            goto out;
        }
        if (!t) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        fc->vocabulary[fc->n_vocabulary++] = t;
    }
    /* Duplicates: TensorFlow refuses them; check through a hash table. */
    if ((st = rt_vocab_build(&seen, (const char *const *)fc->vocabulary, fc->n_vocabulary,
                             err))) {
        rt_err_prefix(err, "%s.vocabulary_list", path);
        goto out;
    }
    st = fc_vocab_common(s, c, path, fc, (int64_t)n);
out:
    rt_vocab_free(&seen);
    return st;
}

rt_status rt_spec_fc_vocab_file(spec_ctx *s, const cJSON *c, const char *path,
                             Predictd__FeatureColumn *fc)
{
    rt_err *err = s->err;
    const char *file = NULL;
    int64_t size = 0;
    rt_status st = fc_raw_key(s, c, path, "key", fc);
    if (!st)
        st = rt_cfg_str(c, path, "vocabulary_file", RT_CFG_REQUIRED, &file, err);
    if (!st)
        st = rt_cfg_int(c, path, "vocabulary_size", RT_CFG_REQUIRED, 1, RT_SPEC_MAX_VOCAB, &size,
                        err);
    if (st)
        return st;
    if (!rt_vocab_asset_path_ok(file))
        return rt_cfg_fail(err, path, "vocabulary_file",
                           "\"%.64s\" must be a relative path inside assets/ (no \"..\", no "
                           "leading /)",
                           file);
    if (!(fc->vocabulary_file = rt_spec_strndup(file, strlen(file))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    fc->vocabulary_size = size;
    return fc_vocab_common(s, c, path, fc, size);
}

rt_status rt_spec_fc_hash(spec_ctx *s, const cJSON *c, const char *path,
                       Predictd__FeatureColumn *fc)
{
    int64_t size = 0;
    rt_status st = fc_raw_key(s, c, path, "key", fc);
    if (!st)
        st = rt_cfg_int(c, path, "hash_bucket_size", RT_CFG_REQUIRED, 1, RT_SPEC_MAX_BUCKETS,
                        &size, s->err);
    if (st)
        return st;
    const Predictd__RawColumn *rc = s->def->raw_columns[rt_graph_find_raw(s->def, fc->key)];
    if (rc->dtype == PREDICTD__DTYPE__DT_FLOAT && !rc->is_int)
        return rt_cfg_fail(s->err, path, "key",
                           "\"%.64s\" is a float column; hash buckets need a string or int column",
                           fc->key);
    fc->hash_bucket_size = size;
    return RT_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The default crossed name: the keys' names sorted, joined by "_X_"
 * (TensorFlow's CrossedColumn.name). */
char *rt_spec_name_crossed(const Predictd__FeatureColumn *fc)
{
    const char *names[RT_SPEC_MAX_CROSS];
    size_t len = 0;
    for (size_t k = 0; k < fc->n_cross_keys; k++) {
        const Predictd__CrossKey *ck = fc->cross_keys[k];
        names[k] = *ck->raw_key ? ck->raw_key : ck->column;
        len += strlen(names[k]) + 3;
    }
    qsort(names, fc->n_cross_keys, sizeof names[0], cmp_str);
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t at = 0;
    for (size_t k = 0; k < fc->n_cross_keys; k++) {
        if (k) {
            memcpy(out + at, "_X_", 3);
            at += 3;
        }
        size_t n = strlen(names[k]);
        memcpy(out + at, names[k], n);
        at += n;
    }
    out[at] = '\0';
    return out;
}

rt_status rt_spec_fc_crossed(spec_ctx *s, const cJSON *c, const char *path,
                          Predictd__FeatureColumn *fc)
{
    rt_err *err = s->err;
    const cJSON *keys = NULL;
    int64_t size = 0;
    rt_status st = rt_cfg_array(c, path, "keys", RT_CFG_REQUIRED, &keys, err);
    if (!st)
        st = rt_cfg_int(c, path, "hash_bucket_size", RT_CFG_REQUIRED, 1, RT_SPEC_MAX_BUCKETS,
                        &size, err);
    if (st)
        return st;
    fc->hash_bucket_size = size;
    fc->hash_key = RT_CROSS_HASH_KEY;
    const cJSON *hk = cJSON_GetObjectItemCaseSensitive(c, "hash_key");
    if (hk) {
        uint64_t v = 0;
        if (cJSON_IsString(hk)) {
            char *end = NULL;
            v = strtoull(hk->valuestring, &end, 0);
            if (!*hk->valuestring || *end)
                return rt_cfg_fail(err, path, "hash_key", "\"%.64s\" is not an integer",
                                   hk->valuestring);
        } else {
            int64_t iv = 0;
            if ((st = rt_cfg_to_int(hk, path, "hash_key", 0, INT64_C(1) << 53, &iv, err)))
                return st;
            v = (uint64_t)iv;
        }
        if (v == 0)
            return rt_cfg_fail(err, path, "hash_key", "must not be 0");
        fc->hash_key = v;
    }
    int n = cJSON_GetArraySize(keys);
    if (n < 2 || n > RT_SPEC_MAX_CROSS)
        return rt_cfg_fail(err, path, "keys", "must list 2..%d keys, got %d", RT_SPEC_MAX_CROSS,
                           n);
    if (!(fc->cross_keys = calloc((size_t)n, sizeof *fc->cross_keys)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    int i = 0;
    for (const cJSON *k = keys->child; k; k = k->next, i++) {
        char kp[160];
        snprintf(kp, sizeof kp, "%s.keys[%d]", path, i);
        Predictd__CrossKey *ck = malloc(sizeof *ck);
        if (!ck)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        predictd__cross_key__init(ck);
        fc->cross_keys[fc->n_cross_keys++] = ck;
        if (cJSON_IsString(k)) {
            long r = rt_graph_find_raw(s->def, k->valuestring);
            if (r < 0)
                return rt_cfg_fail(err, kp, "", "\"%.64s\" is not one of the columns",
                                   k->valuestring);
            const Predictd__RawColumn *rc = s->def->raw_columns[r];
            if (rc->is_label || rc->unused || rc->is_weight)
                return rt_cfg_fail(err, kp, "",
                                   "\"%.64s\" is the label, the weight or an unused column",
                                   k->valuestring);
            if (rc->dtype == PREDICTD__DTYPE__DT_FLOAT && !rc->is_int)
                return rt_cfg_fail(err, kp, "",
                                   "\"%.64s\" is a float column; bucketize it and cross "
                                   "{\"column\": ...}",
                                   k->valuestring);
            if (!(ck->raw_key = rt_spec_strndup(k->valuestring, strlen(k->valuestring))))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        } else if (cJSON_IsObject(k)) {
            static const char *const ckeys[] = {"column", NULL};
            const char *col = NULL;
            if ((st = rt_cfg_check_keys(k, kp, ckeys, NULL, err)) ||
                (st = rt_cfg_str(k, kp, "column", RT_CFG_REQUIRED, &col, err)))
                return st;
            if (!(ck->column = rt_spec_strndup(col, strlen(col))))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        } else {
            return rt_cfg_fail(err, kp, "",
                               "expected a column name or {\"column\": \"<feature column>\"}, "
                               "got %s",
                               rt_cfg_type_name(k));
        }
    }
    return RT_OK;
}

/* dimension, combiner and max_norm of the embedding kinds. */
static rt_status fc_embedding_common(spec_ctx *s, const cJSON *c, const char *path,
                                     Predictd__FeatureColumn *fc)
{
    rt_err *err = s->err;
    int64_t dim = 0;
    const char *comb = "mean";
    double max_norm = 0;
    rt_status st = rt_cfg_int(c, path, "dimension", RT_CFG_REQUIRED, 1, RT_SPEC_MAX_WIDTH, &dim,
                              err);
    if (!st)
        st = rt_cfg_str(c, path, "combiner", 0, &comb, err);
    if (!st)
        st = rt_cfg_num(c, path, "max_norm", 0, -RT_SPEC_MAX_F32, RT_SPEC_MAX_F32, &max_norm, err);
    if (st)
        return st;
    fc->dimension = (uint32_t)dim;
    if (strcmp(comb, "mean") == 0)
        fc->combiner = PREDICTD__COMBINER__COMBINER_MEAN;
    else if (strcmp(comb, "sum") == 0)
        fc->combiner = PREDICTD__COMBINER__COMBINER_SUM;
    else if (strcmp(comb, "sqrtn") == 0)
        fc->combiner = PREDICTD__COMBINER__COMBINER_SQRTN;
    else
        return rt_cfg_fail(err, path, "combiner", "\"%.32s\" is not one of mean, sum, sqrtn", comb);
    if (max_norm < 0)
        return rt_cfg_fail(err, path, "max_norm", "must be greater than 0");
    fc->max_norm = (float)max_norm;
    return RT_OK;
}

rt_status rt_spec_fc_embedding(spec_ctx *s, const cJSON *c, const char *path,
                            Predictd__FeatureColumn *fc)
{
    rt_status st = fc_categorical_ref(s, c, path, fc);
    return st ? st : fc_embedding_common(s, c, path, fc);
}

rt_status rt_spec_fc_identity(spec_ctx *s, const cJSON *c, const char *path,
                           Predictd__FeatureColumn *fc)
{
    int64_t size = 0, dflt = -1;
    rt_status st = fc_raw_key(s, c, path, "key", fc);
    if (!st)
        st = rt_cfg_int(c, path, "num_buckets", RT_CFG_REQUIRED, 1, RT_SPEC_MAX_BUCKETS, &size,
                        s->err);
    if (!st)
        st = rt_cfg_int(c, path, "default_value", 0, 0, size - 1, &dflt, s->err);
    if (st)
        return st;
    const Predictd__RawColumn *rc = s->def->raw_columns[rt_graph_find_raw(s->def, fc->key)];
    if (rc->dtype != PREDICTD__DTYPE__DT_FLOAT || !rc->is_int)
        return rt_cfg_fail(s->err, path, "key",
                           "\"%.64s\" is a %s column; categorical_column_with_identity needs "
                           "an int column",
                           fc->key, rc->dtype == PREDICTD__DTYPE__DT_STRING ? "string" : "float");
    fc->num_buckets = size;
    fc->default_id = dflt;
    return RT_OK;
}

rt_status rt_spec_fc_weighted(spec_ctx *s, const cJSON *c, const char *path,
                           Predictd__FeatureColumn *fc)
{
    const char *k = NULL;
    rt_status st = fc_categorical_ref(s, c, path, fc);
    if (!st)
        st = rt_cfg_str(c, path, "weight_feature_key", RT_CFG_REQUIRED, &k, s->err);
    if (st)
        return st;
    long r = rt_graph_find_raw(s->def, k);
    if (r < 0)
        return rt_cfg_fail(s->err, path, "weight_feature_key",
                           "\"%.64s\" is not one of the columns", k);
    const Predictd__RawColumn *rc = s->def->raw_columns[r];
    if (rc->is_label || rc->unused)
        return rt_cfg_fail(s->err, path, "weight_feature_key",
                           "\"%.64s\" is the label or an unused column", k);
    if (rc->dtype != PREDICTD__DTYPE__DT_FLOAT)
        return rt_cfg_fail(s->err, path, "weight_feature_key",
                           "\"%.64s\" is a string column; weights need an int or float column",
                           k);
    if (!(fc->weight_feature_key = rt_spec_strndup(k, strlen(k))))
        return rt_err_set(s->err, RT_ERR_NOMEM, "out of memory");
    return RT_OK;
}

/* The names in a shared_embedding_columns item's categorical_columns,
 * sorted, joined by "_", then "_shared_embedding": TensorFlow's default
 * shared_embedding_collection_name. Malloc'd; NULL out of memory. */
static char *default_collection(const cJSON *list)
{
    const char *names[RT_SPEC_MAX_ITEMS];
    size_t n = 0, len = strlen("_shared_embedding") + 1;
    for (const cJSON *v = list->child; v && n < RT_SPEC_MAX_ITEMS; v = v->next) {
        names[n++] = v->valuestring;
        len += strlen(v->valuestring) + 1;
    }
    qsort(names, n, sizeof names[0], cmp_str);
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        size_t l = strlen(names[k]);
        if (k)
            out[at++] = '_';
        memcpy(out + at, names[k], l);
        at += l;
    }
    memcpy(out + at, "_shared_embedding", strlen("_shared_embedding") + 1);
    return out;
}

/* One column of a shared_embedding_columns item: the one for item
 * s->group_item of its categorical_columns. */
rt_status rt_spec_fc_shared_embedding(spec_ctx *s, const cJSON *c, const char *path,
                                   Predictd__FeatureColumn *fc)
{
    rt_err *err = s->err;
    const cJSON *list = NULL;
    const char *coll = NULL;
    rt_status st = rt_cfg_array(c, path, "categorical_columns", RT_CFG_REQUIRED, &list, err);
    if (!st)
        st = rt_cfg_str(c, path, "shared_embedding_collection_name", 0, &coll, err);
    if (st)
        return st;
    int n;
    if ((st = list_count(list, path, "categorical_columns", RT_SPEC_MAX_ITEMS,
                         "categorical columns", &n, err)))
        return st;
    int k = 0;
    for (const cJSON *v = list->child; v; v = v->next, k++)
        if (!cJSON_IsString(v))
            return rt_cfg_fail(err, path, "categorical_columns",
                               "item %d: expected a feature column name, got %s", k,
                               rt_cfg_type_name(v));
    const cJSON *item = cJSON_GetArrayItem(list, s->group_item);
    if (!item)
        return rt_err_set(err, RT_ERR_INVALID, "%s: internal: no item %d", path, s->group_item);
    if (!(fc->categorical_column = rt_spec_strndup(item->valuestring, strlen(item->valuestring))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if (coll) {
        if ((st = rt_spec_check_name(coll, path, "shared_embedding_collection_name", err)))
            return st;
        fc->shared_embedding_collection_name = rt_spec_strndup(coll, strlen(coll));
    } else {
        fc->shared_embedding_collection_name = default_collection(list);
    }
    if (!fc->shared_embedding_collection_name)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    return fc_embedding_common(s, c, path, fc);
}

rt_status rt_spec_fc_indicator(spec_ctx *s, const cJSON *c, const char *path,
                            Predictd__FeatureColumn *fc)
{
    return fc_categorical_ref(s, c, path, fc);
}

/* Default names: the key; the source's or categorical column's name with
 * the kind's suffix (TensorFlow's names). Malloc'd, NULL out of memory. */
static char *name_of(const char *base, const char *suffix)
{
    size_t a = strlen(base), b = strlen(suffix);
    char *out = malloc(a + b + 1);
    if (out) {
        memcpy(out, base, a);
        memcpy(out + a, suffix, b + 1);
    }
    return out;
}

char *rt_spec_name_key(const Predictd__FeatureColumn *fc)
{
    return name_of(fc->key, "");
}

char *rt_spec_name_bucketized(const Predictd__FeatureColumn *fc)
{
    return name_of(fc->source, "_bucketized");
}

char *rt_spec_name_embedding(const Predictd__FeatureColumn *fc)
{
    return name_of(fc->categorical_column, "_embedding");
}

char *rt_spec_name_indicator(const Predictd__FeatureColumn *fc)
{
    return name_of(fc->categorical_column, "_indicator");
}

char *rt_spec_name_shared_embedding(const Predictd__FeatureColumn *fc)
{
    return name_of(fc->categorical_column, "_shared_embedding");
}

/* TensorFlow's WeightedCategoricalColumn.name. */
char *rt_spec_name_weighted(const Predictd__FeatureColumn *fc)
{
    size_t a = strlen(fc->categorical_column), b = strlen(fc->weight_feature_key);
    char *out = malloc(a + strlen("_weighted_by_") + b + 1);
    if (out) {
        memcpy(out, fc->categorical_column, a);
        memcpy(out + a, "_weighted_by_", strlen("_weighted_by_"));
        memcpy(out + a + strlen("_weighted_by_"), fc->weight_feature_key, b + 1);
    }
    return out;
}

/* Fills in the name of fc (after its kind-specific keys): the spec's, else
 * the kind's default. */
static rt_status fc_name(spec_ctx *s, const rt_fc_kind *k, const cJSON *c, const char *path,
                         Predictd__FeatureColumn *fc)
{
    const char *name = NULL;
    rt_status st = rt_cfg_str(c, path, "name", 0, &name, s->err);
    if (st)
        return st;
    char *owned = NULL;
    if (!name && !(name = owned = k->default_name(fc)))
        return rt_err_set(s->err, RT_ERR_NOMEM, "out of memory");
    st = rt_spec_check_name(name, path, "name", s->err);
    if (!st && rt_spec_find_fc(s->def, name) >= 0)
        st = rt_cfg_fail(s->err, path, "name", "feature column \"%s\" is defined twice", name);
    if (!st && !(fc->name = rt_spec_strndup(name, strlen(name))))
        st = rt_err_set(s->err, RT_ERR_NOMEM, "out of memory");
    free(owned);
    return st;
}

/* Feature columns spec item c makes (a group kind: one per list item). */
static size_t columns_of(const cJSON *c)
{
    const cJSON *t = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "type") : NULL;
    const rt_fc_kind *k = cJSON_IsString(t) ? rt_fc_kind_named(t->valuestring) : NULL;
    if (!k || !k->group_key)
        return 1;
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, k->group_key));
    return n > 1 && n <= RT_SPEC_MAX_ITEMS ? (size_t)n : 1;
}

static rt_status parse_feature_column(spec_ctx *s, const cJSON *c, const char *path)
{
    rt_err *err = s->err;
    Predictd__ModelDef *def = s->def;
    if (!cJSON_IsObject(c))
        return rt_cfg_fail(err, path, "", "expected an object, got %s", rt_cfg_type_name(c));
    const char *type = NULL;
    rt_status st = rt_cfg_str(c, path, "type", RT_CFG_REQUIRED, &type, err);
    if (st)
        return st;
    const rt_fc_kind *k = rt_fc_kind_named(type);
    if (!k) {
        char names[512];
        size_t at = 0;
        for (size_t i = 0; rt_fc_kind_at(i) && at < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "",
                                   rt_fc_kind_at(i)->spec_name);
        return rt_cfg_fail(err, path, "type", "\"%.64s\" is not a feature column type (%s)",
                           type, names);
    }
    if ((st = rt_cfg_check_keys(c, path, k->spec_keys, NULL, err)))
        return st;
    /* A group kind makes one column per item of its list (at least one:
     * its parse refuses an empty list). */
    size_t items = columns_of(c);
    for (size_t j = 0; j < items && !st; j++) {
        Predictd__FeatureColumn *fc = malloc(sizeof *fc);
        if (!fc)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        predictd__feature_column__init(fc);
        fc->type = k->type;
        fc->default_id = -1;
        /* Owned by def from here on, even when incomplete (freed as a whole). */
        def->feature_columns[def->n_feature_columns] = fc;
        s->group_item = (int)j;
        st = k->parse(s, c, path, fc);
        if (!st)
            st = fc_name(s, k, c, path, fc);
        def->n_feature_columns++;
    }
    return st;
}


bool rt_spec_is_categorical(Predictd__ColumnType t)
{
    return rt_fc_column_is_categorical(t);
}

/* Second pass, per kind: references between feature columns exist and fit. */

rt_status rt_spec_resolve_bucketized(spec_ctx *s, size_t i, const char *path)
{
    rt_err *err = s->err;
    const Predictd__ModelDef *def = s->def;
    Predictd__FeatureColumn *fc = def->feature_columns[i];
    long r = rt_spec_find_fc(def, fc->source);
    if (r < 0 || def->feature_columns[r]->type != PREDICTD__COLUMN_TYPE__NUMERIC)
        return rt_cfg_fail(err, path, "source",
                           "\"%.64s\" must name a numeric_column feature column", fc->source);
    const char *key = def->feature_columns[r]->key;
    if (!(fc->key = rt_spec_strndup(key, strlen(key))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    return RT_OK;
}

/* Feature column i's categorical_column names a categorical column; key
 * is the spec key that named it. */
static rt_status check_categorical(spec_ctx *s, size_t i, const char *path, const char *key)
{
    const Predictd__ModelDef *def = s->def;
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    long r = rt_spec_find_fc(def, fc->categorical_column);
    if (r < 0 || !rt_spec_is_categorical(def->feature_columns[r]->type))
        return rt_cfg_fail(s->err, path, key,
                           "\"%.64s\" must name a categorical feature column (vocabulary, "
                           "identity, hash bucket, bucketized, crossed or weighted)",
                           fc->categorical_column);
    return RT_OK;
}

rt_status rt_spec_resolve_of_categorical(spec_ctx *s, size_t i, const char *path)
{
    return check_categorical(s, i, path, "categorical_column");
}

rt_status rt_spec_resolve_weighted(spec_ctx *s, size_t i, const char *path)
{
    const Predictd__ModelDef *def = s->def;
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    long r = rt_spec_find_fc(def, fc->categorical_column);
    Predictd__ColumnType t = r >= 0 ? def->feature_columns[r]->type : PREDICTD__COLUMN_TYPE__NUMERIC;
    if (t != PREDICTD__COLUMN_TYPE__IDENTITY && t != PREDICTD__COLUMN_TYPE__VOCABULARY_LIST &&
        t != PREDICTD__COLUMN_TYPE__VOCABULARY_FILE && t != PREDICTD__COLUMN_TYPE__HASH_BUCKET &&
        t != PREDICTD__COLUMN_TYPE__BUCKETIZED)
        return rt_cfg_fail(s->err, path, "categorical_column",
                           "\"%.64s\" must name an identity, vocabulary, hash bucket or "
                           "bucketized column (one id per value, to pair with a weight)",
                           fc->categorical_column);
    const char *key = def->feature_columns[r]->key;
    if (key && strcmp(key, fc->weight_feature_key) == 0)
        return rt_cfg_fail(s->err, path, "weight_feature_key",
                           "\"%.64s\" is the column the ids come from; the weights need a "
                           "column of their own",
                           fc->weight_feature_key);
    return RT_OK;
}

/* Ids of categorical feature column i as the spec defines them. */
static int64_t spec_buckets(const Predictd__ModelDef *def, long i)
{
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    switch (fc->type) {
    case PREDICTD__COLUMN_TYPE__VOCABULARY_LIST:
        return (int64_t)fc->n_vocabulary + fc->num_oov_buckets;
    case PREDICTD__COLUMN_TYPE__VOCABULARY_FILE:
        return fc->vocabulary_size + fc->num_oov_buckets;
    case PREDICTD__COLUMN_TYPE__IDENTITY:
        return fc->num_buckets;
    case PREDICTD__COLUMN_TYPE__BUCKETIZED: {
        long src = rt_spec_find_fc(def, fc->source);
        uint32_t shape = src >= 0 && def->feature_columns[src]->shape ? def->feature_columns[src]->shape : 1;
        return (int64_t)(fc->n_boundaries + 1) * shape;
    }
    case PREDICTD__COLUMN_TYPE__WEIGHTED: {
        long src = rt_spec_find_fc(def, fc->categorical_column);
        return src >= 0 && src != i ? spec_buckets(def, src) : 0;
    }
    default:
        return fc->hash_bucket_size;
    }
}

/* The kind a shared table's user reads, a weighted column's own source
 * counting as that kind (TensorFlow's rule for shared_embedding_columns). */
static Predictd__ColumnType unweighted_kind(const Predictd__ModelDef *def, long i)
{
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    long src = rt_spec_find_fc(def, fc->categorical_column);
    if (fc->type == PREDICTD__COLUMN_TYPE__WEIGHTED && src >= 0)
        return def->feature_columns[src]->type;
    return fc->type;
}

/* shared_embedding_columns: a categorical column each, and every column of
 * one collection reads the same kind with the same number of buckets. */
rt_status rt_spec_resolve_shared(spec_ctx *s, size_t i, const char *path)
{
    rt_status st = check_categorical(s, i, path, "categorical_columns");
    if (st)
        return st;
    const Predictd__ModelDef *def = s->def;
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    long r = rt_spec_find_fc(def, fc->categorical_column);
    for (size_t k = 0; k < i; k++) {
        const Predictd__FeatureColumn *o = def->feature_columns[k];
        if (o->type != PREDICTD__COLUMN_TYPE__SHARED_EMBEDDING ||
            strcmp(o->shared_embedding_collection_name, fc->shared_embedding_collection_name))
            continue;
        long q = rt_spec_find_fc(def, o->categorical_column);
        if (unweighted_kind(def, q) != unweighted_kind(def, r))
            return rt_cfg_fail(s->err, path, "categorical_columns",
                               "\"%.64s\" is a %s and \"%.64s\" a %s: the columns of a "
                               "shared embedding must be of the same kind",
                               o->categorical_column, rt_spec_fc_kind_name(unweighted_kind(def, q)),
                               fc->categorical_column,
                               rt_spec_fc_kind_name(unweighted_kind(def, r)));
        if (spec_buckets(def, q) != spec_buckets(def, r))
            return rt_cfg_fail(s->err, path, "categorical_columns",
                               "\"%.64s\" has %lld buckets and \"%.64s\" %lld: the columns of "
                               "a shared embedding must have the same number of buckets",
                               o->categorical_column, (long long)spec_buckets(def, q),
                               fc->categorical_column, (long long)spec_buckets(def, r));
        if (o->dimension != fc->dimension)
            return rt_cfg_fail(s->err, path, "dimension",
                               "collection \"%.64s\" has dimension %u already, %u here",
                               fc->shared_embedding_collection_name, o->dimension,
                               fc->dimension);
    }
    return RT_OK;
}

rt_status rt_spec_resolve_crossed(spec_ctx *s, size_t i, const char *path)
{
    rt_err *err = s->err;
    const Predictd__ModelDef *def = s->def;
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    for (size_t k = 0; k < fc->n_cross_keys; k++) {
        const char *col = fc->cross_keys[k]->column;
        if (!*col)
            continue;
        char kp[160];
        snprintf(kp, sizeof kp, "%s.keys[%zu].column", path, k);
        long r = rt_spec_find_fc(def, col);
        if (r < 0)
            return rt_cfg_fail(err, kp, "", "\"%.64s\" is not a feature column", col);
        Predictd__ColumnType t = def->feature_columns[r]->type;
        if (t == PREDICTD__COLUMN_TYPE__HASH_BUCKET)
            return rt_cfg_fail(err, kp, "",
                               "\"%.64s\" is a hash bucket column: hashing before crossing "
                               "increases collisions; cross the raw column name instead",
                               col);
        if (t != PREDICTD__COLUMN_TYPE__BUCKETIZED &&
            t != PREDICTD__COLUMN_TYPE__VOCABULARY_LIST &&
            t != PREDICTD__COLUMN_TYPE__VOCABULARY_FILE && t != PREDICTD__COLUMN_TYPE__IDENTITY)
            return rt_cfg_fail(err, kp, "",
                               "\"%.64s\" must be a vocabulary, identity or bucketized column",
                               col);
    }
    return RT_OK;
}

rt_status rt_spec_resolve_numeric(spec_ctx *s, size_t i, const char *path)
{
    const Predictd__ModelDef *def = s->def;
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    /* Every numeric column reading one raw column must agree on its shape. */
    for (size_t k = 0; k < i; k++) {
        const Predictd__FeatureColumn *o = def->feature_columns[k];
        if (o->type == PREDICTD__COLUMN_TYPE__NUMERIC && strcmp(o->key, fc->key) == 0 &&
            o->shape != fc->shape)
            return rt_cfg_fail(s->err, path, "shape",
                               "column \"%.64s\" is read with shape %u by \"%.64s\" and %u "
                               "here",
                               fc->key, o->shape, o->name, fc->shape);
    }
    return RT_OK;
}

rt_status rt_spec_parse_feature_columns(spec_ctx *s, const cJSON *arr)
{
    int n = cJSON_GetArraySize(arr);
    if (n <= 0)
        return rt_cfg_fail(s->err, "", "feature_columns", "must list at least one column");
    if (n > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(s->err, "", "feature_columns", "too many (%d, limit %d)", n,
                           RT_SPEC_MAX_ITEMS);
    size_t cap = 0;
    for (const cJSON *c = arr->child; c; c = c->next)
        cap += columns_of(c);
    if (cap > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(s->err, "", "feature_columns", "too many (%zu, limit %d)", cap,
                           RT_SPEC_MAX_ITEMS);
    s->def->feature_columns = calloc(cap, sizeof *s->def->feature_columns);
    if (!s->def->feature_columns)
        return rt_err_set(s->err, RT_ERR_NOMEM, "out of memory");
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "feature_columns[%d]", i);
        rt_status st = parse_feature_column(s, c, path);
        if (st)
            return st;
    }
    for (size_t k = 0; k < s->def->n_feature_columns; k++) {
        const rt_fc_kind *kind = rt_fc_kind_of(s->def->feature_columns[k]->type);
        char path[64];
        snprintf(path, sizeof path, "feature_columns[%zu]", k);
        rt_status st = kind && kind->resolve ? kind->resolve(s, k, path) : RT_OK;
        if (st)
            return st;
    }
    return RT_OK;
}


/* Values per instance feature column i puts in an input layer (numeric:
 * shape; indicator: its categorical column's ids; embedding: dimension),
 * 0 for a categorical column. */
uint64_t rt_spec_fc_dense_width(const Predictd__ModelDef *def, long i)
{
    const Predictd__FeatureColumn *fc = def->feature_columns[i];
    switch (fc->type) {
    case PREDICTD__COLUMN_TYPE__NUMERIC:
        return fc->shape ? fc->shape : 1;
    case PREDICTD__COLUMN_TYPE__EMBEDDING:
    case PREDICTD__COLUMN_TYPE__SHARED_EMBEDDING:
        return fc->dimension;
    case PREDICTD__COLUMN_TYPE__INDICATOR: {
        long src = rt_spec_find_fc(def, fc->categorical_column);
        return src >= 0 && src != i ? (uint64_t)spec_buckets(def, src) : 0;
    }
    default:
        return 0;
    }
}
