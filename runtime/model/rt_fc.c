/*
 * rt_fc.c — the feature-column kinds, one row each: the spec's name and
 * keys, whether the kind produces ids, where it may be used (linear part,
 * DNN part), its passes, and its functions to parse the spec, resolve
 * references, name itself, list the raw columns it reads, compile,
 * transform and describe itself (rt_internal.h, struct rt_fc_kind). The spec
 * reader, rt_graph_build, rt_transform, rt_forward and predict-model
 * dispatch through this table and nothing else, so a new kind is its
 * functions plus one row here (and one row of the trainer's gradient table,
 * trainer/trn_fc.c).
 */
#include "rt_model.h"
#include "rt_spec_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const numeric_keys[] = {"type", "name", "key", "shape", "default_value",
                                           "normalizer", NULL};
static const char *const bucketized_keys[] = {"type", "name", "source", "boundaries", NULL};
static const char *const vocab_list_keys[] = {"type", "name", "key", "vocabulary_list",
                                              "num_oov_buckets", "default_value", NULL};
static const char *const vocab_file_keys[] = {"type", "name", "key", "vocabulary_file",
                                              "vocabulary_size", "num_oov_buckets",
                                              "default_value", NULL};
static const char *const hash_keys[] = {"type", "name", "key", "hash_bucket_size", NULL};
static const char *const crossed_keys[] = {"type", "name", "keys", "hash_bucket_size",
                                           "hash_key", NULL};
static const char *const embedding_keys[] = {"type", "name", "categorical_column", "dimension",
                                             "combiner", "max_norm", NULL};
static const char *const indicator_keys[] = {"type", "name", "categorical_column", NULL};
static const char *const identity_keys[] = {"type", "name", "key", "num_buckets",
                                            "default_value", NULL};
static const char *const weighted_keys[] = {"type", "name", "categorical_column",
                                            "weight_feature_key", NULL};
static const char *const shared_keys[] = {"type", "categorical_columns", "dimension",
                                          "combiner", "shared_embedding_collection_name",
                                          "max_norm", NULL};

/* ------------------------------------------------ raw columns read */

static uint32_t reads_key(const Predictd__FeatureColumn *fc, const char *raw)
{
    return fc->key && strcmp(fc->key, raw) == 0 ? 1 : 0;
}

static uint32_t reads_numeric(const Predictd__FeatureColumn *fc, const char *raw)
{
    return reads_key(fc, raw) ? (fc->shape > 0 ? fc->shape : 1) : 0;
}

static uint32_t reads_cross(const Predictd__FeatureColumn *fc, const char *raw)
{
    for (size_t k = 0; k < fc->n_cross_keys; k++)
        if (fc->cross_keys[k]->raw_key && strcmp(fc->cross_keys[k]->raw_key, raw) == 0)
            return 1;
    return 0;
}

static uint32_t reads_weights(const Predictd__FeatureColumn *fc, const char *raw)
{
    return fc->weight_feature_key && strcmp(fc->weight_feature_key, raw) == 0 ? 1 : 0;
}

/* Kinds that read other feature columns, not raw ones. */
static uint32_t reads_none(const Predictd__FeatureColumn *fc, const char *raw)
{
    (void)fc;
    (void)raw;
    return 0;
}

/* ------------------------------------------------ descriptions */

/* Appends printf text to buf (n bytes, NUL-terminated, cut when full). */
__attribute__((format(printf, 3, 4))) static void put(char *buf, size_t n, const char *fmt, ...)
{
    size_t at = strnlen(buf, n);
    if (at + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, n - at, fmt, ap);
    va_end(ap);
}

static const char *combiner_name(Predictd__Combiner c)
{
    return c == PREDICTD__COMBINER__COMBINER_SUM     ? "sum"
           : c == PREDICTD__COMBINER__COMBINER_SQRTN ? "sqrtn"
                                                      : "mean";
}

static void describe_numeric(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "key=%s shape=%u", d->key, d->shape ? d->shape : 1);
    if (d->n_default_value)
        put(buf, n, " default=%g", (double)d->default_value[0]);
    if (d->has_normalizer)
        put(buf, n, " normalizer=(x-%g)/%g", (double)d->norm_mean, (double)d->norm_std);
}

static void describe_bucketized(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "source=%s boundaries=[", d->source);
    for (size_t k = 0; k < d->n_boundaries; k++)
        put(buf, n, "%s%g", k ? ", " : "", (double)d->boundaries[k]);
    put(buf, n, "]");
}

static void describe_vocab_list(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "key=%s vocabulary_size=%zu num_oov_buckets=%lld", d->key, d->n_vocabulary,
        (long long)d->num_oov_buckets);
}

static void describe_vocab_file(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "key=%s vocabulary_file=%s num_oov_buckets=%lld", d->key, d->vocabulary_file,
        (long long)d->num_oov_buckets);
}

static void describe_key(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "key=%s", d->key);
}

static void describe_crossed(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "keys=[");
    for (size_t k = 0; k < d->n_cross_keys; k++) {
        const Predictd__CrossKey *ck = d->cross_keys[k];
        if (ck->column && *ck->column)
            put(buf, n, "%s{column: %s}", k ? ", " : "", ck->column);
        else
            put(buf, n, "%s%s", k ? ", " : "", ck->raw_key);
    }
    put(buf, n, "]");
}

static void describe_embedding(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "categorical_column=%s dimension=%u combiner=%s", d->categorical_column,
        d->dimension, combiner_name(d->combiner));
}

static void describe_indicator(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "categorical_column=%s", d->categorical_column);
}

static void describe_identity(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "key=%s num_buckets=%lld", d->key, (long long)d->num_buckets);
    if (d->default_id >= 0)
        put(buf, n, " default_value=%lld", (long long)d->default_id);
}

static void describe_weighted(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    put(buf, n, "categorical_column=%s weight_feature_key=%s", d->categorical_column,
        d->weight_feature_key);
}

static void describe_shared(const Predictd__FeatureColumn *d, char *buf, size_t n)
{
    describe_embedding(d, buf, n);
    put(buf, n, " shared_embedding_collection_name=%s", d->shared_embedding_collection_name);
}

/* ------------------------------------------------ the table */

/* In the order the spec's messages list them. Passes: compile after the
 * kinds a column references; transform after the kinds whose output it reads. */
static const rt_fc_kind kinds[] = {
    {.type = PREDICTD__COLUMN_TYPE__NUMERIC,
     .spec_name = "numeric_column",
     .spec_keys = numeric_keys,
     .size_key = "shape",
     .linear_ok = true,
     .dnn_ok = true,
     .parse = rt_spec_fc_numeric,
     .resolve = rt_spec_resolve_numeric,
     .default_name = rt_spec_name_key,
     .raw_shape = reads_numeric,
     .compile = rt_graph_compile_numeric,
     .transform = rt_transform_run_numeric,
     .describe = describe_numeric},
    {.type = PREDICTD__COLUMN_TYPE__BUCKETIZED,
     .spec_name = "bucketized_column",
     .spec_keys = bucketized_keys,
     .size_key = "boundaries",
     .categorical = true,
     .linear_ok = true,
     .compile_pass = 1,
     .transform_pass = 1,
     .parse = rt_spec_fc_bucketized,
     .resolve = rt_spec_resolve_bucketized,
     .default_name = rt_spec_name_bucketized,
     .raw_shape = reads_none, /* its numeric source reads the raw column */
     .compile = rt_graph_compile_bucketized,
     .transform = rt_transform_run_bucketized,
     .describe = describe_bucketized},
    {.type = PREDICTD__COLUMN_TYPE__VOCABULARY_LIST,
     .spec_name = "categorical_column_with_vocabulary_list",
     .spec_keys = vocab_list_keys,
     .size_key = "vocabulary_list",
     .categorical = true,
     .linear_ok = true,
     .transform_pass = 1,
     .parse = rt_spec_fc_vocab_list,
     .default_name = rt_spec_name_key,
     .raw_shape = reads_key,
     .compile = rt_graph_compile_lookup,
     .transform = rt_transform_run_lookup,
     .describe = describe_vocab_list},
    {.type = PREDICTD__COLUMN_TYPE__VOCABULARY_FILE,
     .spec_name = "categorical_column_with_vocabulary_file",
     .spec_keys = vocab_file_keys,
     .size_key = "vocabulary_size",
     .categorical = true,
     .linear_ok = true,
     .transform_pass = 1,
     .parse = rt_spec_fc_vocab_file,
     .default_name = rt_spec_name_key,
     .raw_shape = reads_key,
     .compile = rt_graph_compile_lookup,
     .transform = rt_transform_run_lookup,
     .describe = describe_vocab_file},
    {.type = PREDICTD__COLUMN_TYPE__HASH_BUCKET,
     .spec_name = "categorical_column_with_hash_bucket",
     .spec_keys = hash_keys,
     .size_key = "hash_bucket_size",
     .categorical = true,
     .linear_ok = true,
     .transform_pass = 1,
     .parse = rt_spec_fc_hash,
     .default_name = rt_spec_name_key,
     .raw_shape = reads_key,
     .compile = rt_graph_compile_lookup,
     .transform = rt_transform_run_lookup,
     .describe = describe_key},
    {.type = PREDICTD__COLUMN_TYPE__CROSSED,
     .spec_name = "crossed_column",
     .spec_keys = crossed_keys,
     .size_key = "hash_bucket_size",
     .categorical = true,
     .linear_ok = true,
     .compile_pass = 2,
     .transform_pass = 2,
     .parse = rt_spec_fc_crossed,
     .resolve = rt_spec_resolve_crossed,
     .default_name = rt_spec_name_crossed,
     .raw_shape = reads_cross,
     .compile = rt_graph_compile_crossed,
     .transform = rt_transform_run_crossed,
     .describe = describe_crossed},
    {.type = PREDICTD__COLUMN_TYPE__EMBEDDING,
     .spec_name = "embedding_column",
     .spec_keys = embedding_keys,
     .dnn_ok = true,
     .table = true,
     .compile_pass = 3,
     .transform_pass = 3,
     .parse = rt_spec_fc_embedding,
     .resolve = rt_spec_resolve_of_categorical,
     .default_name = rt_spec_name_embedding,
     .raw_shape = reads_none,
     .compile = rt_graph_compile_of_ids,
     .transform = rt_transform_run_of_ids,
     .describe = describe_embedding},
    {.type = PREDICTD__COLUMN_TYPE__INDICATOR,
     .spec_name = "indicator_column",
     .spec_keys = indicator_keys,
     .linear_ok = true,
     .dnn_ok = true,
     .compile_pass = 3,
     .transform_pass = 3,
     .parse = rt_spec_fc_indicator,
     .resolve = rt_spec_resolve_of_categorical,
     .default_name = rt_spec_name_indicator,
     .raw_shape = reads_none,
     .compile = rt_graph_compile_of_ids,
     .transform = rt_transform_run_of_ids,
     .describe = describe_indicator},
    {.type = PREDICTD__COLUMN_TYPE__IDENTITY,
     .spec_name = "categorical_column_with_identity",
     .spec_keys = identity_keys,
     .size_key = "num_buckets",
     .categorical = true,
     .linear_ok = true,
     .transform_pass = 1,
     .parse = rt_spec_fc_identity,
     .default_name = rt_spec_name_key,
     .raw_shape = reads_key,
     .compile = rt_graph_compile_identity,
     .transform = rt_transform_run_lookup,
     .describe = describe_identity},
    {.type = PREDICTD__COLUMN_TYPE__WEIGHTED,
     .spec_name = "weighted_categorical_column",
     .spec_keys = weighted_keys,
     .categorical = true,
     .linear_ok = true,
     .compile_pass = 2,
     .transform_pass = 2,
     .parse = rt_spec_fc_weighted,
     .resolve = rt_spec_resolve_weighted,
     .default_name = rt_spec_name_weighted,
     .raw_shape = reads_weights,
     .compile = rt_graph_compile_weighted,
     .transform = rt_transform_run_weighted,
     .describe = describe_weighted},
    {.type = PREDICTD__COLUMN_TYPE__SHARED_EMBEDDING,
     .spec_name = "shared_embedding_columns",
     .spec_keys = shared_keys,
     .group_key = "categorical_columns",
     .dnn_ok = true,
     .table = true,
     .compile_pass = 3,
     .transform_pass = 3,
     .parse = rt_spec_fc_shared_embedding,
     .resolve = rt_spec_resolve_shared,
     .default_name = rt_spec_name_shared_embedding,
     .raw_shape = reads_none,
     .compile = rt_graph_compile_of_ids,
     .transform = rt_transform_run_of_ids,
     .describe = describe_shared},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

const rt_fc_kind *rt_fc_kind_of(Predictd__ColumnType t)
{
    for (size_t k = 0; k < N_KINDS; k++)
        if (kinds[k].type == t)
            return &kinds[k];
    return NULL;
}

const rt_fc_kind *rt_fc_kind_named(const char *spec_name)
{
    for (size_t k = 0; k < N_KINDS; k++)
        if (strcmp(kinds[k].spec_name, spec_name) == 0)
            return &kinds[k];
    return NULL;
}

const rt_fc_kind *rt_fc_kind_at(size_t i)
{
    return i < N_KINDS ? &kinds[i] : NULL;
}

bool rt_fc_column_is_categorical(Predictd__ColumnType t)
{
    const rt_fc_kind *k = rt_fc_kind_of(t);
    return k && k->categorical;
}

const char *rt_fc_column_kind_name(Predictd__ColumnType t)
{
    const rt_fc_kind *k = rt_fc_kind_of(t);
    return k ? k->spec_name : "?";
}

void rt_fc_column_describe(const Predictd__FeatureColumn *fc, char *buf, size_t n)
{
    if (!buf || !n)
        return;
    buf[0] = '\0';
    const rt_fc_kind *k = fc ? rt_fc_kind_of(fc->type) : NULL;
    if (k)
        k->describe(fc, buf, n);
}

const char *rt_fc_column_size_key(Predictd__ColumnType t)
{
    const rt_fc_kind *k = rt_fc_kind_of(t);
    return k ? k->size_key : NULL;
}
