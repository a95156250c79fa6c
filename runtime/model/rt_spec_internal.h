/*
 * rt_spec_internal.h — private to rt_spec.c and rt_spec_graph.c (the spec
 * reader): the parse context, limits and shared helpers.
 */
#ifndef PREDICTD_RT_SPEC_INTERNAL_H
#define PREDICTD_RT_SPEC_INTERNAL_H

#include "rt_model_internal.h"
#include "rt_data_internal.h"

#include <stdbool.h>

struct cJSON;

#define RT_SPEC_MAX_NAME 128          /* column and model names */
#define RT_SPEC_MAX_ITEMS 4096        /* columns, feature columns, boundaries, classes */
#define RT_SPEC_MAX_VOCAB 10000000    /* vocabulary words */
#define RT_SPEC_MAX_BUCKETS 1000000000 /* hash buckets, oov buckets */
#define RT_SPEC_MAX_WIDTH 65536       /* numeric shape, embedding dimension, layer units */
#define RT_SPEC_MAX_CROSS 16          /* keys of a crossed column */
#define RT_SPEC_MAX_LAYERS 64         /* hidden layers */
#define RT_SPEC_MAX_F32 3.4e38        /* numbers stored as float32 */

typedef struct spec_ctx {
    Predictd__ModelDef *def; /* being built */
    rt_err *err;
    bool trim;               /* trim_strings */
    int group_item;          /* a group kind's parse: which item of its list */
} spec_ctx;

/* ---- rt_spec_util.c */

char *rt_spec_strndup(const char *s, size_t n);
/* Replaces the protobuf string *dst (freed unless it is protobuf-c's empty
 * default) by a copy of src; RT_ERR_NOMEM leaves *dst as it was. */
rt_status rt_spec_set_str(char **dst, const char *src, rt_err *err);
/* Copies s, without leading/trailing white space when trim is set. */
char *rt_spec_dup_trimmed(const char *s, bool trim);
bool rt_spec_valid_name(const char *s);
rt_status rt_spec_check_name(const char *s, const char *path, const char *key, rt_err *err);
long rt_spec_find_fc(const Predictd__ModelDef *def, const char *name);

/* ---- rt_spec_columns.c: each kind's spec keys, references and default
 * name (the kinds' table, rt_fc.c, points at them) */

typedef rt_status spec_parse_fn(spec_ctx *s, const struct cJSON *c, const char *path,
                               Predictd__FeatureColumn *fc);
typedef rt_status spec_resolve_fn(spec_ctx *s, size_t i, const char *path);
typedef char *spec_name_fn(const Predictd__FeatureColumn *fc);
spec_parse_fn rt_spec_fc_numeric, rt_spec_fc_bucketized, rt_spec_fc_vocab_list,
    rt_spec_fc_vocab_file, rt_spec_fc_hash, rt_spec_fc_crossed, rt_spec_fc_embedding,
    rt_spec_fc_indicator, rt_spec_fc_identity, rt_spec_fc_weighted, rt_spec_fc_shared_embedding;
spec_resolve_fn rt_spec_resolve_weighted, rt_spec_resolve_shared, rt_spec_resolve_numeric,
    rt_spec_resolve_bucketized, rt_spec_resolve_crossed, rt_spec_resolve_of_categorical;
spec_name_fn rt_spec_name_weighted, rt_spec_name_shared_embedding, rt_spec_name_key,
    rt_spec_name_bucketized, rt_spec_name_crossed, rt_spec_name_embedding, rt_spec_name_indicator;

bool rt_spec_is_categorical(Predictd__ColumnType t);
const char *rt_spec_fc_kind_name(Predictd__ColumnType t);
/* "feature_columns" -> def->feature_columns, references checked. */
rt_status rt_spec_parse_feature_columns(spec_ctx *s, const struct cJSON *arr);
/* Values per instance feature column i gives an input layer (0: categorical). */
uint64_t rt_spec_fc_dense_width(const Predictd__ModelDef *def, long i);

/* ---- rt_spec_graph.c */

/* rt_spec_graph.c: "estimator" of a canned type (or none, or a wrong one:
 * refused naming it) -> head and graph (tensor names). */
rt_status rt_spec_parse_estimator(spec_ctx *s, const struct cJSON *est);
/* rt_spec_graph.c: the signatures TensorFlow's canned estimators export. */
rt_status rt_spec_build_signatures(spec_ctx *s);

/* rt_spec_graph.c: Graph.linear_weights and linear_bias for linear_columns
 * (TensorFlow's names); Graph.embeddings for the dnn_columns with tables. */
rt_status rt_spec_build_linear(spec_ctx *s);
rt_status rt_spec_build_embeddings(spec_ctx *s);

/* ---- rt_spec_custom.c */

/* "estimator" of type "Estimator" (rt_spec.c tells it from the canned
 * types; its keys are checked here) -> the graph's
 * nodes and heads, def->head and logits_dimension; every refusal names the
 * field's path (estimator.model.layers[2].units). */
rt_status rt_spec_parse_custom(spec_ctx *s, const struct cJSON *est);

/* ---- rt_spec_heads.c: the custom estimator's heads */

/* How many heads estimator.model.heads lists (0 unless est is an
 * "Estimator" with a heads array). */
int rt_spec_heads_count(const struct cJSON *est);
/* Several heads, before the feature columns: Graph.heads with each head's
 * name (required, unique), label column (marked is_label) and vocabulary. */
rt_status rt_spec_heads_labels(spec_ctx *s, const struct cJSON *est);
/* Several heads, after unused_columns: each head's weight_column (marked
 * is_weight); estimator.weight_column is refused. */
rt_status rt_spec_heads_weights(spec_ctx *s, const struct cJSON *est);
/* After the nodes: each head's type, logits node, loss and loss_weight;
 * Graph.logits_dimension (the widths summed) and def->head (the first
 * head's type and shape with several). */
rt_status rt_spec_heads_parse(spec_ctx *s, const struct cJSON *model);
/* The spec's label.vocabulary (or a head's, at path) into h->label_vocabulary:
 * 2.. classes, strings trimmed as the spec trims, none empty or twice. */
rt_status rt_spec_heads_vocabulary(spec_ctx *s, const struct cJSON *voc, const char *path,
                                   Predictd__Head *h);

#endif /* PREDICTD_RT_SPEC_INTERNAL_H */
