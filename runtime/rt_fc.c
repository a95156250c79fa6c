/*
 * rt_fc.c — the feature-column kinds, one row each: the spec's name and
 * keys, whether the kind produces ids, its passes, and its functions to
 * parse the spec, resolve references, name itself, compile and transform
 * (rt_internal.h, struct rt_fc_kind). The spec reader, rt_graph_build and
 * rt_transform dispatch through this table and nothing else, so a new kind
 * is its functions plus one row here. The trainer needs nothing per kind: it
 * asks rt_column_is_categorical and handles dense and categorical columns,
 * indicators and embeddings generically.
 */
#include "rt_spec_internal.h"

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

/* In the order the spec's messages list them. Passes: compile after the
 * kinds a column references; transform after the kinds whose output it reads. */
static const rt_fc_kind kinds[] = {
    {PREDICTD__COLUMN_TYPE__NUMERIC, "numeric_column", numeric_keys, false, 0, 0,
     spec_fc_numeric, spec_resolve_numeric, spec_name_key, rt_fc_compile_numeric,
     rt_fc_run_numeric},
    {PREDICTD__COLUMN_TYPE__BUCKETIZED, "bucketized_column", bucketized_keys, true, 1, 1,
     spec_fc_bucketized, spec_resolve_bucketized, spec_name_bucketized,
     rt_fc_compile_bucketized, rt_fc_run_bucketized},
    {PREDICTD__COLUMN_TYPE__VOCABULARY_LIST, "categorical_column_with_vocabulary_list",
     vocab_list_keys, true, 0, 1, spec_fc_vocab_list, NULL, spec_name_key,
     rt_fc_compile_lookup, rt_fc_run_lookup},
    {PREDICTD__COLUMN_TYPE__VOCABULARY_FILE, "categorical_column_with_vocabulary_file",
     vocab_file_keys, true, 0, 1, spec_fc_vocab_file, NULL, spec_name_key,
     rt_fc_compile_lookup, rt_fc_run_lookup},
    {PREDICTD__COLUMN_TYPE__HASH_BUCKET, "categorical_column_with_hash_bucket", hash_keys, true,
     0, 1, spec_fc_hash, NULL, spec_name_key, rt_fc_compile_lookup, rt_fc_run_lookup},
    {PREDICTD__COLUMN_TYPE__CROSSED, "crossed_column", crossed_keys, true, 2, 2, spec_fc_crossed,
     spec_resolve_crossed, spec_name_crossed, rt_fc_compile_crossed, rt_fc_run_crossed},
    {PREDICTD__COLUMN_TYPE__EMBEDDING, "embedding_column", embedding_keys, false, 3, 3,
     spec_fc_embedding, spec_resolve_of_categorical, spec_name_embedding, rt_fc_compile_of_ids,
     rt_fc_run_of_ids},
    {PREDICTD__COLUMN_TYPE__INDICATOR, "indicator_column", indicator_keys, false, 3, 3,
     spec_fc_indicator, spec_resolve_of_categorical, spec_name_indicator, rt_fc_compile_of_ids,
     rt_fc_run_of_ids},
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

bool rt_column_is_categorical(Predictd__ColumnType t)
{
    const rt_fc_kind *k = rt_fc_kind_of(t);
    return k && k->categorical;
}
