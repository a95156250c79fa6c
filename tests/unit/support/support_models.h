/*
 * support_models.h — test helpers shared by every unit test (the Makefile
 * links tests/unit/support/support_*.c into each test program): small specs, a
 * ModelDef from a spec, random tensors that fit it, and writing it as an
 * export. Helpers print what went wrong to stderr and return NULL / -1, so a
 * test only asserts the return value.
 */
#ifndef PREDICTD_SUPPORT_MODELS_H
#define PREDICTD_SUPPORT_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "exp.h"
#include "rt.h"

/* Columns, label (no, yes) and one feature column of every kind over the
 * inputs age, hours (numbers), gender, occupation (strings): the model part
 * of SUPPORT_SPEC_WIDE_DEEP and SUPPORT_SPEC_TREES (support_trees.h). */
#define SUPPORT_SPEC_WIDE_DEEP_COLUMNS                                                          \
    "\"columns\": ["                                                                            \
    "  {\"name\": \"age\", \"type\": \"int\", \"default\": 0},"                                 \
    "  {\"name\": \"hours\", \"type\": \"float\", \"default\": 0},"                             \
    "  {\"name\": \"gender\", \"type\": \"string\", \"default\": \"\"},"                        \
    "  {\"name\": \"occupation\", \"type\": \"string\", \"default\": \"\"},"                    \
    "  {\"name\": \"label\", \"type\": \"string\", \"default\": \"\"}],"                        \
    " \"label\": {\"column\": \"label\", \"vocabulary\": [\"no\", \"yes\"]},"                   \
    " \"feature_columns\": ["                                                                   \
    "  {\"type\": \"numeric_column\", \"key\": \"age\"},"                                       \
    "  {\"type\": \"numeric_column\", \"key\": \"hours\"},"                                     \
    "  {\"type\": \"bucketized_column\", \"name\": \"age_buckets\", \"source\": \"age\","       \
    "   \"boundaries\": [20, 30, 40, 50]},"                                                     \
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"gender\","            \
    "   \"vocabulary_list\": [\"Female\", \"Male\"]},"                                          \
    "  {\"type\": \"categorical_column_with_hash_bucket\", \"key\": \"occupation\","            \
    "   \"hash_bucket_size\": 20},"                                                             \
    "  {\"type\": \"crossed_column\", \"name\": \"age_x_gender\","                              \
    "   \"keys\": [{\"column\": \"age_buckets\"}, \"gender\"], \"hash_bucket_size\": 50},"      \
    "  {\"type\": \"embedding_column\", \"name\": \"occupation_embedding\","                    \
    "   \"categorical_column\": \"occupation\", \"dimension\": 3, \"combiner\": \"mean\"},"     \
    "  {\"type\": \"indicator_column\", \"name\": \"gender_indicator\","                        \
    "   \"categorical_column\": \"gender\"}],"                                                  \

/* A small wide & deep binary classifier over every feature column kind. */
#define SUPPORT_SPEC_WIDE_DEEP                                                                  \
    "{" SUPPORT_SPEC_WIDE_DEEP_COLUMNS                                                          \
    " \"estimator\": {\"type\": \"DNNLinearCombinedClassifier\", \"n_classes\": 2,"             \
    "  \"linear_feature_columns\": [\"age_buckets\", \"gender\", \"occupation\","               \
    "                              \"age_x_gender\"],"                                          \
    "  \"dnn_feature_columns\": [\"age\", \"hours\", \"occupation_embedding\","                 \
    "                           \"gender_indicator\"],"                                         \
    "  \"dnn_hidden_units\": [5, 3]},"                                                          \
    " \"export\": {\"name\": \"tiny\", \"format\": \"JSON\"}}"

/* A linear 3-class classifier (no DNN part): inputs x (number), color (string). */
#define SUPPORT_SPEC_LINEAR                                                                     \
    "{\"columns\": ["                                                                           \
    "  {\"name\": \"x\", \"type\": \"float\", \"default\": 0},"                                 \
    "  {\"name\": \"color\", \"type\": \"string\", \"default\": \"\"},"                         \
    "  {\"name\": \"y\", \"type\": \"string\", \"default\": \"\"}],"                            \
    " \"label\": {\"column\": \"y\", \"vocabulary\": [\"a\", \"b\", \"c\"]},"                   \
    " \"feature_columns\": ["                                                                   \
    "  {\"type\": \"numeric_column\", \"key\": \"x\"},"                                         \
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"color\","             \
    "   \"vocabulary_list\": [\"red\", \"green\", \"blue\"], \"num_oov_buckets\": 1}],"         \
    " \"estimator\": {\"type\": \"LinearClassifier\", \"n_classes\": 3,"                        \
    "  \"feature_columns\": [\"x\", \"color\"]},"                                               \
    " \"export\": {\"name\": \"lin\", \"format\": \"JSON\"}}"

/* A DNN regressor (no linear part): inputs a, b (numbers). */
#define SUPPORT_SPEC_DNN_REGRESSOR                                                              \
    "{\"columns\": ["                                                                           \
    "  {\"name\": \"a\", \"type\": \"float\", \"default\": 0},"                                 \
    "  {\"name\": \"b\", \"type\": \"float\", \"default\": 0},"                                 \
    "  {\"name\": \"t\", \"type\": \"float\", \"default\": 0}],"                                \
    " \"label\": {\"column\": \"t\"},"                                                          \
    " \"feature_columns\": ["                                                                   \
    "  {\"type\": \"numeric_column\", \"key\": \"a\"},"                                         \
    "  {\"type\": \"numeric_column\", \"key\": \"b\"}],"                                        \
    " \"estimator\": {\"type\": \"DNNRegressor\", \"hidden_units\": [4],"                       \
    "  \"feature_columns\": [\"a\", \"b\"]},"                                                   \
    " \"export\": {\"name\": \"reg\", \"format\": \"JSON\"}}"

/* Parses spec_json and compiles it with rt_spec_to_modeldef (other keys
 * "train", "eval" allowed). NULL on any error (printed). Free with
 * rt_spec_modeldef_free(). */
Predictd__ModelDef *support_spec_modeldef(const char *spec_json);

/* A set of tensors; names and data are owned by the set. */
typedef struct support_tensors {
    exp_tensor *t; /* [n] */
    size_t n;
} support_tensors;

/* Fills *out with one tensor per rt_graph_tensor_specs(def) entry (same
 * names, shapes, order), values uniform in [-scale, scale) from a generator
 * seeded by seed (same seed, same values). 0 ok, -1 on error (printed).
 * Free with support_tensors_free(). */
int support_random_tensors(const Predictd__ModelDef *def, uint64_t seed, float scale,
                           support_tensors *out);
void support_tensors_free(support_tensors *st); /* NULL ok; *st reset */

/* The tensor called name, or NULL. */
const exp_tensor *support_tensors_find(const support_tensors *st, const char *name);

/* An rt_tensor_lookup_fn over a support_tensors (ctx), for rt_graph_build
 * without an export (reference graphs, trainer tests). */
const float *support_tensor_lookup(void *ctx, const char *name, uint64_t count, rt_err *err);

/* Writes def + st as an export into base with exp_write (version 0 = now;
 * assets none). Returns the version and copies BASE/<version> into path
 * (path may be NULL), or -1 on error (printed). */
int64_t support_write_export(const char *base, Predictd__ModelDef *def, const support_tensors *st,
                             int64_t version, char *path, size_t path_cap);

/* A model made from spec_json with random weights (seed, scale 0.8),
 * exported as version `version` under a fresh temporary directory and
 * opened: what most serving tests start from. */
typedef struct support_model {
    Predictd__ModelDef *def;
    support_tensors st;
    char dir[256];   /* the export's base (removed by support_model_close) */
    char path[1024]; /* the version directory */
    rt_model *m;
} support_model;

/* Fills *sm. 0 ok, -1 error (printed; support_model_close still frees). */
int support_model_open(const char *spec_json, uint64_t seed, int64_t version, support_model *sm);
/* Closes, frees and removes what support_model_open made; *sm zeroed. */
void support_model_close(support_model *sm);

/* A fresh directory /tmp/predictd-test-XXXXXX into buf. 0 ok, -1 error. */
int support_mkdtemp(char *buf, size_t cap);

/* rm -rf path (symlinks not followed). 0 ok, -1 error. */
int support_rmtree(const char *path);

/* splitmix64: next value of the generator whose state is *s. */
uint64_t support_rand(uint64_t *s);
/* Uniform in [0, 1). */
double support_uniform(uint64_t *s);

#endif /* PREDICTD_SUPPORT_MODELS_H */
