/* test_spec.c — spec -> ModelDef: the census spec gives the expected raw
 * columns, feature columns, head, signatures and tensor specs; small specs
 * with one thing wrong are each refused with the key path named; the graph
 * compiled from a ModelDef refuses broken references. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cJSON.h>

#include "rt_serve_internal.h"
#include "rt_data_internal.h"

/* ------------------------------------------------------------ helpers */

static char *read_text(const char *rel)
{
    const char *root = getenv("PREDICTD_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    char *s = NULL;
    return rt_file_read(AT_FDCWD, path, 1u << 26, 0, &s, NULL, NULL) == RT_OK ? s : NULL;
}

static const char *const train_eval[] = {"train", "eval", NULL};

static Predictd__ModelDef *parse_ok(const char *text, const char *const *other)
{
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    rt_status st = rt_spec_to_modeldef(j, other, &def, &err);
    if (st)
        print_error("unexpected error: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_non_null(def);
    cJSON_Delete(j);
    return def;
}

/* Parses text expecting a refusal whose message contains want. */
static void parse_bad(const char *text, const char *want)
{
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    Predictd__ModelDef *def = (Predictd__ModelDef *)1;
    rt_err err = {{0}};
    rt_status st = rt_spec_to_modeldef(j, train_eval, &def, &err);
    if (st == RT_OK || !strstr(err.msg, want))
        print_error("want error containing \"%s\", got %d \"%s\"\n", want, st, err.msg);
    if (getenv("SHOW_ERRORS"))
        print_message("%s\n", err.msg);
    assert_int_not_equal(st, RT_OK);
    assert_null(def);
    assert_non_null(strstr(err.msg, want));
    cJSON_Delete(j);
}

/* Returns text with the first `from` replaced by `to` (malloc'd). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t a = (size_t)(at - text), fl = strlen(from), tl = strlen(to), n = strlen(text);
    char *out = malloc(n - fl + tl + 1);
    memcpy(out, text, a);
    memcpy(out + a, to, tl);
    memcpy(out + a + tl, at + fl, n - a - fl + 1);
    return out;
}

static const rt_tensor_spec *find_spec(const rt_tensor_spec *s, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0)
            return &s[i];
    return NULL;
}

static void expect_tensor(const rt_tensor_spec *s, size_t n, const char *name, uint64_t d0,
                          uint64_t d1)
{
    const rt_tensor_spec *t = find_spec(s, n, name);
    if (!t)
        print_error("tensor %s missing\n", name);
    assert_non_null(t);
    assert_int_equal(t->shape[0], d0);
    assert_int_equal(t->rank, d1 ? 2 : 1);
    if (d1)
        assert_int_equal(t->shape[1], d1);
    assert_int_equal(t->count, d1 ? d0 * d1 : d0);
}

static const Predictd__SignatureDef *find_sig(const Predictd__ModelDef *def, const char *name)
{
    for (size_t i = 0; i < def->n_signatures; i++)
        if (strcmp(def->signatures[i]->name, name) == 0)
            return def->signatures[i];
    return NULL;
}

static void expect_tspec(const Predictd__TensorSpec *t, const char *name, Predictd__DType dt,
                         int64_t d1)
{
    assert_string_equal(t->name, name);
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->n_shape, d1 ? 2 : 1);
    assert_int_equal(t->shape[0], -1);
    if (d1)
        assert_int_equal(t->shape[1], d1);
}

/* ------------------------------------------------------------ census */

static void test_census_spec(void **state)
{
    (void)state;
    char *text = read_text("tests/data/specs/census.json");
    assert_non_null(text);
    Predictd__ModelDef *def = parse_ok(text, train_eval);

    assert_string_equal(def->model_name, "census");
    assert_int_equal(def->receiver, PREDICTD__RECEIVER__RECEIVER_JSON);
    assert_true(def->trim_strings);
    assert_int_equal(def->n_raw_columns, 15);
    assert_string_equal(def->raw_columns[2]->name, "fnlwgt");
    assert_true(def->raw_columns[2]->unused);
    assert_true(def->raw_columns[14]->is_label);
    assert_true(def->raw_columns[0]->is_int);
    assert_true(def->raw_columns[0]->has_default);
    assert_int_equal(def->raw_columns[1]->dtype, PREDICTD__DTYPE__DT_STRING);

    /* Head: binary, the label vocabulary trimmed of the data's leading space. */
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_BINARY);
    assert_int_equal(def->head->n_classes, 2);
    assert_int_equal(def->head->n_label_vocabulary, 2);
    assert_string_equal(def->head->label_vocabulary[0], "<=50K");
    assert_string_equal(def->head->label_vocabulary[1], ">50K");

    /* Feature columns and default names. */
    assert_int_equal(def->n_feature_columns, 25);
    assert_string_equal(def->feature_columns[0]->name, "age");
    assert_string_equal(def->feature_columns[5]->name, "age_buckets");
    assert_int_equal(def->feature_columns[5]->n_boundaries, 10);
    assert_string_equal(def->feature_columns[15]->name, "age_buckets_X_occupation_X_race");
    assert_string_equal(def->feature_columns[15]->cross_keys[0]->column, "age_buckets");
    assert_string_equal(def->feature_columns[15]->cross_keys[1]->raw_key, "race");
    assert_int_equal(def->feature_columns[15]->hash_key, UINT64_C(0xDECAFCAFFE));
    assert_string_equal(def->feature_columns[16]->name, "native_country_X_occupation");
    assert_string_equal(def->feature_columns[17]->name, "workclass_indicator");
    assert_string_equal(def->feature_columns[23]->name, "native_country_embedding");
    assert_int_equal(def->feature_columns[23]->dimension, 8);
    assert_int_equal(def->feature_columns[6]->default_id, -1);

    /* Graph. */
    const Predictd__Graph *g = def->graph;
    assert_string_equal(g->estimator, "DNNLinearCombinedClassifier");
    assert_int_equal(g->logits_dimension, 1);
    assert_int_equal(g->n_linear_columns, 11);
    assert_int_equal(g->n_dnn_columns, 13);
    assert_int_equal(g->n_embeddings, 2);
    assert_int_equal(g->n_hidden_layers, 4);
    assert_string_equal(g->linear_bias, "linear/linear_model/bias_weights");
    assert_string_equal(g->hidden_layers[2]->kernel, "dnn/hiddenlayer_2/kernel");
    assert_int_equal(g->hidden_layers[3]->units, 34);
    assert_int_equal(g->hidden_layers[0]->activation, PREDICTD__ACTIVATION__ACT_RELU);
    assert_string_equal(g->logits_layer->bias, "dnn/logits/bias");
    assert_int_equal(g->logits_layer->units, 1);

    /* Signatures, sorted by name: a binary classifier's are TF's binary
     * head's, regression (the logistic, for :regress) included. */
    assert_int_equal(def->n_signatures, 4);
    assert_string_equal(def->signatures[0]->name, "classification");
    assert_string_equal(def->signatures[1]->name, "predict");
    assert_string_equal(def->signatures[2]->name, "regression");
    assert_string_equal(def->signatures[3]->name, "serving_default");
    const Predictd__SignatureDef *rg = find_sig(def, "regression");
    assert_string_equal(rg->method_name, "tensorflow/serving/regress");
    assert_int_equal(rg->n_inputs, 1);
    expect_tspec(rg->inputs[0], "inputs", PREDICTD__DTYPE__DT_STRING, 0);
    assert_int_equal(rg->n_outputs, 1);
    expect_tspec(rg->outputs[0], "outputs", PREDICTD__DTYPE__DT_FLOAT, 1);
    const Predictd__SignatureDef *cl = find_sig(def, "classification");
    assert_string_equal(cl->method_name, "tensorflow/serving/classify");
    assert_int_equal(cl->n_inputs, 1);
    expect_tspec(cl->inputs[0], "inputs", PREDICTD__DTYPE__DT_STRING, 0);
    assert_int_equal(cl->n_outputs, 2);
    expect_tspec(cl->outputs[0], "classes", PREDICTD__DTYPE__DT_STRING, 2);
    expect_tspec(cl->outputs[1], "scores", PREDICTD__DTYPE__DT_FLOAT, 2);
    const Predictd__SignatureDef *sd = find_sig(def, "serving_default");
    assert_string_equal(sd->method_name, "tensorflow/serving/predict");
    static const char *const inputs[] = {
        "age",          "workclass", "education", "education_num", "marital_status",
        "occupation",   "relationship", "race",   "gender",        "capital_gain",
        "capital_loss", "hours_per_week", "native_country"};
    assert_int_equal(sd->n_inputs, 13);
    for (size_t i = 0; i < 13; i++) {
        Predictd__DType want = (i == 0 || i == 3 || (i >= 9 && i <= 11))
                                   ? PREDICTD__DTYPE__DT_FLOAT
                                   : PREDICTD__DTYPE__DT_STRING;
        expect_tspec(sd->inputs[i], inputs[i], want, 0);
    }
    assert_int_equal(sd->n_outputs, 7);
    expect_tspec(sd->outputs[0], "all_class_ids", PREDICTD__DTYPE__DT_INT32, 2);
    expect_tspec(sd->outputs[1], "all_classes", PREDICTD__DTYPE__DT_STRING, 2);
    expect_tspec(sd->outputs[2], "class_ids", PREDICTD__DTYPE__DT_INT64, 1);
    expect_tspec(sd->outputs[3], "classes", PREDICTD__DTYPE__DT_STRING, 1);
    expect_tspec(sd->outputs[4], "logistic", PREDICTD__DTYPE__DT_FLOAT, 1);
    expect_tspec(sd->outputs[5], "logits", PREDICTD__DTYPE__DT_FLOAT, 1);
    expect_tspec(sd->outputs[6], "probabilities", PREDICTD__DTYPE__DT_FLOAT, 2);
    assert_int_equal(find_sig(def, "predict")->n_outputs, 7);

    /* Tensor specs: 11 linear + bias + 2 embeddings + 5 layers x 2. The DNN
     * input is 9+16+7+2+6+5 (indicators) + 8+8 (embeddings) + 5 numerics. */
    rt_tensor_spec *specs = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_OK);
    assert_int_equal(n, 24);
    expect_tensor(specs, n, "linear/linear_model/gender/weights", 2, 1);
    expect_tensor(specs, n, "linear/linear_model/native_country/weights", 100, 1);
    expect_tensor(specs, n, "linear/linear_model/education/weights", 16, 1);
    expect_tensor(specs, n, "linear/linear_model/workclass/weights", 9, 1);
    expect_tensor(specs, n, "linear/linear_model/age_buckets/weights", 11, 1);
    expect_tensor(specs, n, "linear/linear_model/education_x_occupation/weights", 10000, 1);
    expect_tensor(specs, n, "linear/linear_model/age_buckets_X_occupation_X_race/weights",
                  10000, 1);
    expect_tensor(specs, n, "linear/linear_model/bias_weights", 1, 0);
    expect_tensor(specs, n, "dnn/input_from_feature_columns/occupation_embedding/embedding_weights",
                  100, 8);
    expect_tensor(specs, n, "dnn/hiddenlayer_0/kernel", 66, 100);
    expect_tensor(specs, n, "dnn/hiddenlayer_0/bias", 100, 0);
    expect_tensor(specs, n, "dnn/hiddenlayer_1/kernel", 100, 70);
    expect_tensor(specs, n, "dnn/hiddenlayer_3/kernel", 48, 34);
    expect_tensor(specs, n, "dnn/logits/kernel", 34, 1);
    expect_tensor(specs, n, "dnn/logits/bias", 1, 0);
    free(specs);

    /* A ModelDef survives pack/unpack and still compiles to the same specs. */
    size_t len = predictd__model_def__get_packed_size(def);
    uint8_t *buf = malloc(len);
    predictd__model_def__pack(def, buf);
    Predictd__ModelDef *back = predictd__model_def__unpack(NULL, len, buf);
    assert_non_null(back);
    assert_int_equal(rt_graph_tensor_specs(back, &specs, &n, &err), RT_OK);
    assert_int_equal(n, 24);
    free(specs);
    rt_spec_modeldef_free(back);
    free(buf);
    rt_spec_modeldef_free(def);
    free(text);
}

/* ------------------------------------------------------------ small spec */

static const char base_spec[] =
    "{\"columns\":[{\"name\":\"age\",\"type\":\"int\",\"default\":0},"
    "{\"name\":\"city\",\"type\":\"string\"},{\"name\":\"tags\",\"type\":\"string\"},"
    "{\"name\":\"y\",\"type\":\"string\"}],"
    "\"label\":{\"column\":\"y\",\"vocabulary\":[\"no\",\"yes\"]},"
    "\"feature_columns\":["
    "{\"type\":\"numeric_column\",\"key\":\"age\"},"
    "{\"type\":\"bucketized_column\",\"source\":\"age\",\"boundaries\":[10,20,30]},"
    "{\"type\":\"categorical_column_with_vocabulary_list\",\"key\":\"city\","
    "\"vocabulary_list\":[\"a\",\"b\"]},"
    "{\"type\":\"categorical_column_with_hash_bucket\",\"key\":\"tags\",\"hash_bucket_size\":10},"
    "{\"type\":\"crossed_column\",\"keys\":[\"city\",{\"column\":\"age_bucketized\"}],"
    "\"hash_bucket_size\":50},"
    "{\"type\":\"embedding_column\",\"categorical_column\":\"tags\",\"dimension\":2},"
    "{\"type\":\"indicator_column\",\"categorical_column\":\"city\"}],"
    "\"estimator\":{\"type\":\"DNNLinearCombinedClassifier\","
    "\"linear_feature_columns\":[\"city\",\"age_bucketized\",\"age_bucketized_X_city\"],"
    "\"dnn_feature_columns\":[\"age\",\"tags_embedding\",\"city_indicator\"],"
    "\"dnn_hidden_units\":[4]},"
    "\"export\":{\"name\":\"m\"}}";

static void test_small_spec_ok(void **state)
{
    (void)state;
    Predictd__ModelDef *def = parse_ok(base_spec, NULL);
    assert_string_equal(def->model_name, "m");
    assert_string_equal(def->feature_columns[1]->name, "age_bucketized");
    assert_string_equal(def->feature_columns[4]->name, "age_bucketized_X_city");
    assert_string_equal(def->feature_columns[5]->name, "tags_embedding");
    assert_string_equal(def->feature_columns[6]->name, "city_indicator");
    /* JSON receiver: age (float), city, tags (strings); y is the label. */
    const Predictd__SignatureDef *sd = find_sig(def, "serving_default");
    assert_int_equal(sd->n_inputs, 3);
    expect_tspec(sd->inputs[0], "age", PREDICTD__DTYPE__DT_FLOAT, 0);
    expect_tspec(sd->inputs[1], "city", PREDICTD__DTYPE__DT_STRING, 0);
    expect_tspec(sd->inputs[2], "tags", PREDICTD__DTYPE__DT_STRING, 0);
    rt_spec_modeldef_free(def);

    /* Optimizer keys and the caller's keys are accepted. */
    char *t = replace(base_spec, "\"dnn_hidden_units\":[4]",
                      "\"dnn_hidden_units\":[4],\"dnn_optimizer\":{\"type\":\"Adagrad\"},"
                      "\"linear_optimizer\":\"Ftrl\",\"dnn_dropout\":0.5");
    char *t2 = replace(t, "\"export\":{", "\"train\":{\"max_steps\":3},\"export\":{");
    def = parse_ok(t2, train_eval);
    rt_spec_modeldef_free(def);
    /* ...but "train" is refused when the caller does not own it. */
    cJSON *j = cJSON_Parse(t2);
    rt_err err = {{0}};
    assert_int_equal(rt_spec_to_modeldef(j, NULL, &def, &err), RT_ERR_INVALID);
    assert_null(def);
    assert_string_equal(err.msg, "train: unknown key");
    cJSON_Delete(j);
    free(t);
    free(t2);
}

static void test_receivers_and_heads(void **state)
{
    (void)state;
    /* CSV receiver: one string input csv_row. */
    char *t = replace(base_spec, "{\"name\":\"m\"}", "{\"name\":\"m\",\"format\":\"CSV\"}");
    Predictd__ModelDef *def = parse_ok(t, NULL);
    assert_int_equal(def->receiver, PREDICTD__RECEIVER__RECEIVER_CSV);
    const Predictd__SignatureDef *sd = find_sig(def, "predict");
    assert_int_equal(sd->n_inputs, 1);
    expect_tspec(sd->inputs[0], "csv_row", PREDICTD__DTYPE__DT_STRING, 0);
    rt_spec_modeldef_free(def);
    free(t);

    /* EXAMPLE receiver. */
    t = replace(base_spec, "{\"name\":\"m\"}", "{\"format\":\"EXAMPLE\"}");
    def = parse_ok(t, NULL);
    assert_string_equal(def->model_name, "model");
    expect_tspec(find_sig(def, "serving_default")->inputs[0], "example_proto",
                 PREDICTD__DTYPE__DT_STRING, 0);
    rt_spec_modeldef_free(def);
    free(t);

    /* Multi-class without a vocabulary: classes "0".."2", no logistic. */
    t = replace(base_spec, "{\"name\":\"y\",\"type\":\"string\"}",
                "{\"name\":\"y\",\"type\":\"int\"}");
    char *t2 = replace(t, ",\"vocabulary\":[\"no\",\"yes\"]", "");
    char *t3 = replace(t2, "\"type\":\"DNNLinearCombinedClassifier\",",
                       "\"type\":\"DNNLinearCombinedClassifier\",\"n_classes\":3,");
    def = parse_ok(t3, NULL);
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS);
    assert_int_equal(def->graph->logits_dimension, 3);
    sd = find_sig(def, "serving_default");
    assert_int_equal(sd->n_outputs, 6);
    for (size_t i = 0; i < sd->n_outputs; i++)
        assert_string_not_equal(sd->outputs[i]->name, "logistic");
    rt_tensor_spec *specs = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_OK);
    expect_tensor(specs, n, "linear/linear_model/city/weights", 2, 3);
    expect_tensor(specs, n, "linear/linear_model/age_bucketized/weights", 4, 3);
    expect_tensor(specs, n, "linear/linear_model/age_bucketized_X_city/weights", 50, 3);
    /* DNN input: age (1) + city_indicator (2) + tags_embedding (2). */
    expect_tensor(specs, n, "dnn/hiddenlayer_0/kernel", 5, 4);
    expect_tensor(specs, n, "dnn/input_from_feature_columns/tags_embedding/embedding_weights",
                  10, 2);
    expect_tensor(specs, n, "dnn/logits/kernel", 4, 3);
    free(specs);
    rt_spec_modeldef_free(def);
    free(t3);

    /* Regressor: predictions and a regression signature. */
    t3 = replace(t2, "\"type\":\"DNNLinearCombinedClassifier\"",
                 "\"type\":\"DNNLinearCombinedRegressor\"");
    def = parse_ok(t3, NULL);
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_REGRESSION);
    assert_int_equal(def->head->label_dimension, 1);
    assert_string_equal(def->signatures[0]->name, "regression");
    assert_string_equal(def->signatures[0]->method_name, "tensorflow/serving/regress");
    expect_tspec(def->signatures[0]->outputs[0], "outputs", PREDICTD__DTYPE__DT_FLOAT, 1);
    sd = find_sig(def, "predict");
    assert_int_equal(sd->n_outputs, 1);
    expect_tspec(sd->outputs[0], "predictions", PREDICTD__DTYPE__DT_FLOAT, 1);
    rt_spec_modeldef_free(def);
    free(t3);
    free(t2);
    free(t);

    /* Linear-only: no DNN layers, no embeddings. */
    t = replace(base_spec,
                "\"estimator\":{\"type\":\"DNNLinearCombinedClassifier\","
                "\"linear_feature_columns\"",
                "\"estimator\":{\"type\":\"LinearClassifier\",\"feature_columns\"");
    t2 = replace(t, ",\"dnn_feature_columns\":[\"age\",\"tags_embedding\",\"city_indicator\"],"
                    "\"dnn_hidden_units\":[4]",
                 "");
    def = parse_ok(t2, NULL);
    assert_int_equal(def->graph->n_hidden_layers, 0);
    assert_null(def->graph->logits_layer);
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_OK);
    assert_int_equal(n, 4);
    free(specs);
    rt_spec_modeldef_free(def);
    free(t2);
    free(t);
}

/* estimator.weight_column: a numeric column marked is_weight, not an input
 * of any signature; each canned estimator takes it. */
static void test_weight_column(void **state)
{
    (void)state;
    char *t = replace(base_spec, "{\"name\":\"y\",\"type\":\"string\"}",
                      "{\"name\":\"y\",\"type\":\"string\"},{\"name\":\"w\",\"type\":\"float\"}");
    char *t2 = replace(t, "{\"type\":\"DNNLinearCombinedClassifier\",",
                       "{\"type\":\"DNNLinearCombinedClassifier\",\"weight_column\":\"w\",");
    Predictd__ModelDef *def = parse_ok(t2, NULL);
    assert_true(def->raw_columns[4]->is_weight);
    assert_false(def->raw_columns[3]->is_weight);
    const Predictd__SignatureDef *sd = find_sig(def, "serving_default");
    assert_int_equal(sd->n_inputs, 3); /* age, city, tags: not w */
    for (size_t i = 0; i < sd->n_inputs; i++)
        assert_string_not_equal(sd->inputs[i]->name, "w");
    rt_spec_modeldef_free(def);
    /* the other canned estimators take it too */
    char *t3 = replace(t2, "\"type\":\"DNNLinearCombinedClassifier\"",
                       "\"type\":\"DNNLinearCombinedRegressor\"");
    char *t4 = replace(t3, ",\"vocabulary\":[\"no\",\"yes\"]", "");
    char *t5 = replace(t4, "{\"name\":\"y\",\"type\":\"string\"}", "{\"name\":\"y\",\"type\":\"float\"}");
    def = parse_ok(t5, NULL);
    assert_true(def->raw_columns[4]->is_weight);
    rt_spec_modeldef_free(def);
    free(t5);
    free(t4);
    free(t3);
    free(t2);
    free(t);
}

/* label.columns (a regressor's label_dimension values) and batch_norm. */
static void test_label_columns_and_batch_norm(void **state)
{
    (void)state;
    /* a regressor of y and z (floats; z after y in the CSV) */
    char *t = replace(base_spec, "{\"name\":\"y\",\"type\":\"string\"}",
                      "{\"name\":\"y\",\"type\":\"float\"},{\"name\":\"z\",\"type\":\"int\"}");
    char *t2 = replace(t, "\"label\":{\"column\":\"y\",\"vocabulary\":[\"no\",\"yes\"]}",
                       "\"label\":{\"columns\":[\"y\",\"z\"]}");
    char *t3 = replace(t2, "\"type\":\"DNNLinearCombinedClassifier\",",
                       "\"type\":\"DNNLinearCombinedRegressor\",\"label_dimension\":2,"
                       "\"batch_norm\":true,");
    Predictd__ModelDef *def = parse_ok(t3, NULL);
    assert_int_equal(def->head->label_dimension, 2);
    assert_true(def->raw_columns[3]->is_label && def->raw_columns[4]->is_label);
    for (size_t i = 0; i < def->n_signatures; i++) /* no regression signature */
        assert_string_not_equal(def->signatures[i]->name, "regression");
    const Predictd__SignatureDef *sd = find_sig(def, "predict");
    expect_tspec(sd->outputs[0], "predictions", PREDICTD__DTYPE__DT_FLOAT, 2);
    const Predictd__BatchNorm *bn = def->graph->hidden_layers[0]->batch_norm;
    assert_non_null(bn);
    assert_null(def->graph->logits_layer->batch_norm);
    assert_string_equal(bn->moving_variance, "dnn/hiddenlayer_0/batchnorm_0/moving_variance");
    assert_true(bn->epsilon == 0.001f && bn->momentum == 0.999f);
    rt_tensor_spec *specs = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_OK);
    expect_tensor(specs, n, "dnn/hiddenlayer_0/batchnorm_0/gamma", 4, 0);
    expect_tensor(specs, n, "dnn/hiddenlayer_0/batchnorm_0/moving_mean", 4, 0);
    expect_tensor(specs, n, "dnn/logits/kernel", 4, 2);
    free(specs);
    rt_spec_modeldef_free(def);
    static const struct {
        const char *from, *to, *want;
    } bad[] = {
        {"\"columns\":[\"y\",\"z\"]", "\"columns\":[\"z\",\"y\"]",
         "label.columns[1]: \"y\" comes before \"z\" in \"columns\""},
        {"\"label_dimension\":2,", "\"label_dimension\":3,",
         "label.columns: 2 label columns for estimator.label_dimension 3"},
        {"\"columns\":[\"y\",\"z\"]", "\"columns\":[\"y\",\"y\"]",
         "label.columns[1]: \"y\" is listed twice"},
        {"\"columns\":[\"y\",\"z\"]", "\"columns\":[\"y\",\"z\"],\"column\":\"y\"",
         "label.columns: give \"column\" or \"columns\", not both"},
        {"\"DNNLinearCombinedRegressor\",\"label_dimension\":2,",
         "\"DNNLinearCombinedClassifier\",", "label.columns: a classifier has one label column"},
        {"\"batch_norm\":true", "\"batch_norm\":\"yes\"", "estimator.batch_norm"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *b = replace(t3, bad[i].from, bad[i].to);
        parse_bad(b, bad[i].want);
        free(b);
    }
    /* batch_norm belongs to the DNN types */
    char *lin = replace(base_spec,
                        "\"estimator\":{\"type\":\"DNNLinearCombinedClassifier\","
                        "\"linear_feature_columns\"",
                        "\"estimator\":{\"type\":\"LinearClassifier\",\"batch_norm\":true,"
                        "\"feature_columns\"");
    char *lin2 = replace(lin, ",\"dnn_feature_columns\":[\"age\",\"tags_embedding\",\"city_indicator\"],"
                              "\"dnn_hidden_units\":[4]",
                         "");
    parse_bad(lin2, "estimator.batch_norm: unknown key");
    free(lin2);
    free(lin);
    free(t3);
    free(t2);
    free(t);
}

/* One thing wrong each; the message must name the key path. */
static void test_bad_specs(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *want;
    } cases[] = {
        {"[10,20,30]", "[10,30,20]", "feature_columns[1].boundaries: must be strictly increasing"},
        {"[10,20,30]", "[10,10]", "feature_columns[1].boundaries: must be strictly increasing"},
        {"\"hash_bucket_size\":10}", "\"hash_bucket_size\":-1}",
         "feature_columns[3].hash_bucket_size"},
        {"\"dimension\":2", "\"dimension\":0", "feature_columns[5].dimension"},
        {"\"export\":{\"name\":\"m\"}", "\"export\":{\"name\":\"m\"},\"bogus\":1",
         "bogus: unknown key"},
        {"\"dnn_feature_columns\":[\"age\",", "\"dnn_feature_columns\":[\"city\",\"age\",",
         "estimator.dnn_feature_columns[0]: \"city\" is a categorical_column_with_vocabulary_list"},
        {"\"dnn_feature_columns\":[\"age\",", "\"dnn_feature_columns\":[\"city\",\"age\",",
         "wrap it in an indicator_column or an embedding_column"},
        {"\"source\":\"age\"", "\"source\":\"agee\"", "feature_columns[1].source"},
        {"\"vocabulary_list\":[\"a\",\"b\"]", "\"vocabulary_list\":\"a\"",
         "feature_columns[2].vocabulary_list: expected a list"},
        {"\"vocabulary_list\":[\"a\",\"b\"]", "\"vocabulary_list\":[\"a\",\" a\"]",
         "feature_columns[2].vocabulary_list: \"a\" is listed twice"},
        {"\"DNNLinearCombinedClassifier\"", "\"BoostedTrees\"", "estimator.type"},
        {"\"column\":\"y\"", "\"column\":\"z\"", "label.column"},
        {"{\"type\":\"numeric_column\",\"key\":\"age\"}",
         "{\"type\":\"numeric_column\",\"key\":\"city\"}", "feature_columns[0].key"},
        {"\"dimension\":2", "\"dimension\":2,\"dims\":3", "feature_columns[5].dims: unknown key"},
        {"{\"name\":\"m\"}", "{\"name\":\"m\",\"format\":\"XML\"}", "export.format"},
        {"{\"name\":\"m\"}", "{\"name\":\"../m\"}", "export.name"},
        {"\"categorical_column\":\"city\"}", "\"categorical_column\":\"city\",\"name\":\"age\"}",
         "feature_columns[6].name: feature column \"age\" is defined twice"},
        {"\"dnn_hidden_units\":[4]", "\"dnn_hidden_units\":[0]", "estimator.dnn_hidden_units[0]"},
        {"\"dnn_hidden_units\":[4]", "\"dnn_hidden_units\":[4.5]",
         "estimator.dnn_hidden_units[0]"},
        {"\"type\":\"DNNLinearCombinedClassifier\",",
         "\"type\":\"DNNLinearCombinedClassifier\",\"n_classes\":3,", "label.vocabulary"},
        {"\"age_bucketized_X_city\"]", "\"age_bucketized_X_city\",\"tags_embedding\"]",
         "estimator.linear_feature_columns[3]"},
        {"{\"column\":\"age_bucketized\"}", "{\"column\":\"tags\"}",
         "feature_columns[4].keys[1].column: \"tags\" is a hash bucket column"},
        {"\"vocabulary_list\":[\"a\",\"b\"]",
         "\"vocabulary_list\":[\"a\",\"b\"],\"num_oov_buckets\":2,\"default_value\":0",
         "feature_columns[2].default_value"},
        {"\"vocabulary_list\":[\"a\",\"b\"]", "\"vocabulary_list\":[\"a\",\"b\"],\"default_value\":2",
         "feature_columns[2].default_value"},
        {"\"key\":\"tags\"", "\"key\":\"y\"", "feature_columns[3].key: \"y\" is the label column"},
        {"{\"type\":\"numeric_column\",\"key\":\"age\"}",
         "{\"type\":\"numeric_column\",\"key\":\"age\",\"normalizer\":{\"mean\":1,\"std\":0}}",
         "feature_columns[0].normalizer.std"},
        {"{\"type\":\"numeric_column\",\"key\":\"age\"}",
         "{\"type\":\"numeric_column\",\"key\":\"age\",\"shape\":2,\"default_value\":[1]}",
         "feature_columns[0].default_value: has 1 values but shape is 2"},
        {"\"type\":\"embedding_column\"", "\"type\":\"embedding\"", "feature_columns[5].type"},
        {"\"dimension\":2", "\"dimension\":2,\"combiner\":\"max\"", "feature_columns[5].combiner"},
        {"\"keys\":[\"city\",{\"column\":\"age_bucketized\"}]", "\"keys\":[\"city\"]",
         "feature_columns[4].keys: must list 2..16 keys"},
        {"{\"name\":\"tags\",\"type\":\"string\"}", "{\"name\":\"tags\",\"type\":\"text\"}",
         "columns[2].type"},
        {"{\"name\":\"tags\",\"type\":\"string\"}", "{\"name\":\"age\",\"type\":\"string\"}",
         "columns[2].name: column \"age\" is listed twice"},
        {"{\"name\":\"age\",\"type\":\"int\",\"default\":0}",
         "{\"name\":\"age\",\"type\":\"int\",\"default\":0.5}", "columns[0].default"},
        {"\"label\":{\"column\":\"y\",", "\"unused_columns\":[\"tags\"],\"label\":{\"column\":\"y\",",
         "feature_columns[3].key: \"tags\" is listed in unused_columns"},
        {"\"dnn_hidden_units\":[4]", "\"dnn_hidden_units\":[4],\"activation_fn\":\"relu\"",
         "estimator.activation_fn: unknown key"},
        {"\"dnn_hidden_units\":[4]", "\"dnn_hidden_units\":[4],\"dnn_activation_fn\":\"swish\"",
         "estimator.dnn_activation_fn"},
        {"\"export\":{\"name\":\"m\"}", "\"trim_strings\":\"yes\",\"export\":{\"name\":\"m\"}",
         "trim_strings: expected true or false"},
        {"\"feature_columns\":[", "\"feature_columns\":[{\"type\":\"numeric_column\"},",
         "feature_columns[0].key: missing"},
        {"{\"type\":\"DNNLinearCombinedClassifier\",",
         "{\"type\":\"DNNLinearCombinedClassifier\",\"weight_column\":\"city\",",
         "estimator.weight_column: \"city\" is a string column"},
        {"{\"type\":\"DNNLinearCombinedClassifier\",",
         "{\"type\":\"DNNLinearCombinedClassifier\",\"weight_column\":\"y\",",
         "estimator.weight_column: \"y\" is the label column"},
        {"{\"type\":\"DNNLinearCombinedClassifier\",",
         "{\"type\":\"DNNLinearCombinedClassifier\",\"weight_column\":\"w\",",
         "estimator.weight_column: \"w\" is not one of the columns"},
        {"{\"type\":\"DNNLinearCombinedClassifier\",",
         "{\"type\":\"DNNLinearCombinedClassifier\",\"weight_column\":\"age\",",
         "feature_columns[0].key: \"age\" is the estimator's weight_column, not a model input"},
        {"{\"type\":\"DNNLinearCombinedClassifier\",",
         "{\"type\":\"DNNLinearCombinedClassifier\",\"weight_column\":1,",
         "estimator.weight_column"},
    };
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        char *t = replace(base_spec, cases[i].from, cases[i].to);
        parse_bad(t, cases[i].want);
        free(t);
    }
    /* Not JSON objects at all. */
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    cJSON *arr = cJSON_Parse("[1]");
    assert_int_equal(rt_spec_to_modeldef(arr, NULL, &def, &err), RT_ERR_INVALID);
    cJSON_Delete(arr);
    assert_int_equal(rt_spec_to_modeldef(NULL, NULL, &def, &err), RT_ERR_INVALID);
    /* Missing top-level sections. */
    parse_bad("{\"columns\":[{\"name\":\"a\",\"type\":\"int\"}]}", "label: missing");
    rt_spec_modeldef_free(NULL);
}

/* A hand-broken ModelDef (as from an untrusted model.pb) is refused. */
static void test_modeldef_refs_checked(void **state)
{
    (void)state;
    Predictd__ModelDef *def = parse_ok(base_spec, NULL);
    rt_tensor_spec *specs = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    /* Embedding points at a column that is not categorical. */
    free(def->feature_columns[5]->categorical_column);
    def->feature_columns[5]->categorical_column = strdup("age");
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "tags_embedding"));
    free(def->feature_columns[5]->categorical_column);
    def->feature_columns[5]->categorical_column = strdup("tags");
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_OK);
    free(specs);
    /* Logits layer of the wrong width. */
    def->graph->logits_layer->units = 2;
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "logits layer"));
    def->graph->logits_layer->units = 1;
    /* Boundaries out of order. */
    def->feature_columns[1]->boundaries[1] = 5;
    assert_int_equal(rt_graph_check(def, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "age_bucketized"));
    def->feature_columns[1]->boundaries[1] = 20;
    /* Vocabulary default id out of range. */
    def->feature_columns[2]->default_id = 7;
    assert_int_equal(rt_graph_check(def, &err), RT_ERR_FORMAT);
    def->feature_columns[2]->default_id = -1;
    assert_int_equal(rt_graph_check(def, &err), RT_OK);
    rt_spec_modeldef_free(def);
}

/* Tensor data for mutated models: zeros, refusing absurd sizes. */
static const float *zero_lookup(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    (void)name;
    float **keep = ctx;
    if (count > (1u << 22))
        return NULL;
    for (size_t k = 0; k < 256; k++)
        if (!keep[k]) {
            keep[k] = calloc(count + 1, sizeof(float));
            return keep[k];
        }
    rt_err_set(err, RT_ERR_LIMIT, "too many tensors");
    return NULL;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* model.pb is untrusted: mutated ModelDefs must be refused or compiled,
 * and a compiled one must transform instances without crashing (run under
 * make asan to check memory). */
static void test_mutated_modeldefs(void **state)
{
    (void)state;
    char *text = read_text("tests/data/specs/transform.json");
    assert_non_null(text);
    Predictd__ModelDef *def = parse_ok(text, NULL);
    size_t len = predictd__model_def__get_packed_size(def);
    uint8_t *orig = malloc(len), *buf = malloc(len);
    predictd__model_def__pack(def, orig);
    rt_spec_modeldef_free(def);
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    size_t unpacked = 0, compiled = 0, built = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, orig, len);
        int flips = 1 + (int)(xorshift(&seed) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(xorshift(&seed) % len);
            buf[at] ^= (uint8_t)(1u << (xorshift(&seed) % 8));
        }
        Predictd__ModelDef *m = predictd__model_def__unpack(NULL, len, buf);
        if (!m)
            continue;
        unpacked++;
        rt_err err = {{0}};
        rt_tensor_spec *specs = NULL;
        size_t n = 0;
        if (rt_graph_tensor_specs(m, &specs, &n, &err) == RT_OK) {
            compiled++;
            free(specs);
        }
        float *keep[256] = {0};
        rt_graph *g = NULL;
        if (rt_graph_build(m, zero_lookup, keep, NULL, &g, &err) == RT_OK) {
            built++;
            rt_batch *b = rt_batch_new(g);
            rt_features f;
            rt_transform_features_init(&f);
            for (int i = 0; i < 3; i++) {
                size_t idx;
                assert_int_equal(rt_batch_add(b, &idx), RT_OK);
                for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
                    if (rt_graph_input_dtype(g, in) == PREDICTD__DTYPE__DT_STRING)
                        assert_int_equal(rt_batch_push_str(b, idx, in, "Rome", 4), RT_OK);
                    else
                        assert_int_equal(rt_batch_push_num(b, idx, in, (double)(i * 7) - 3), RT_OK);
                }
            }
            rt_ignore(rt_transform(g, b, &f, &err)); /* any outcome; no crash */
            rt_transform_features_free(&f);
            rt_batch_free(b);
            rt_graph_free(g);
        }
        for (size_t k = 0; k < 256; k++)
            free(keep[k]);
        rt_spec_modeldef_free(m);
    }
    print_message("mutated ModelDefs: %zu unpacked, %zu compiled, %zu built\n", unpacked,
                  compiled, built);
    assert_true(unpacked > 100 && built > 10);
    free(orig);
    free(buf);
    free(text);
}

/* Mutated specs: refused with a message, or accepted and compilable. */
static void test_mutated_specs(void **state)
{
    (void)state;
    char *text = read_text("tests/data/specs/census.json");
    assert_non_null(text);
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    static const char alphabet[] = "0123456789-.,:[]{}\"aeXx_ ";
    uint64_t seed = 42;
    size_t parsed = 0, accepted = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, text, len + 1);
        int edits = 1 + (int)(xorshift(&seed) % 3);
        for (int k = 0; k < edits; k++)
            buf[xorshift(&seed) % len] = alphabet[xorshift(&seed) % (sizeof alphabet - 1)];
        cJSON *j = cJSON_Parse(buf);
        if (!j)
            continue;
        parsed++;
        Predictd__ModelDef *def = NULL;
        rt_err err = {{0}};
        rt_status st = rt_spec_to_modeldef(j, train_eval, &def, &err);
        if (st == RT_OK) {
            accepted++;
            rt_tensor_spec *specs = NULL;
            size_t n = 0;
            assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_OK);
            free(specs);
            rt_spec_modeldef_free(def);
        } else {
            assert_null(def);
            assert_true(err.msg[0] != '\0');
            assert_null(strstr(err.msg, "internal check"));
        }
        cJSON_Delete(j);
    }
    print_message("mutated specs: %zu parsed, %zu accepted\n", parsed, accepted);
    assert_true(parsed > 100);
    free(buf);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_census_spec),
        cmocka_unit_test(test_small_spec_ok),
        cmocka_unit_test(test_receivers_and_heads),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_weight_column),
        cmocka_unit_test(test_label_columns_and_batch_norm),
        cmocka_unit_test(test_modeldef_refs_checked),
        cmocka_unit_test(test_mutated_modeldefs),
        cmocka_unit_test(test_mutated_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
