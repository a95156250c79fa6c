/* test_trees.c — BoostedTrees on the runtime side: the spec gives a ModelDef
 * with one tree input per listed column (and the same head and signatures as
 * the other estimators), refuses columns trees cannot read; tiny hand-built
 * ensembles written as real exports answer exact, hand-computed logits
 * (missing values, category sets, multi-class, regression) through the JSON
 * path; every kind of broken tree export is refused on load, naming the
 * tree and node; the AVX2 walk answers the scalar walk's bits at any
 * batch size. */
#include <math.h>
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
#include "support_models.h"
#include "support_trees.h"

static const char trees_spec[] = SUPPORT_SPEC_TREES;

/* The same columns under a LinearClassifier: what a client sees must not
 * differ. */
static const char linear_spec[] =
    "{" SUPPORT_SPEC_WIDE_DEEP_COLUMNS
    " \"estimator\": {\"type\": \"LinearClassifier\", \"n_classes\": 2,"
    "  \"feature_columns\": [\"age\", \"age_buckets\", \"gender_indicator\", \"occupation\"]},"
    " \"export\": {\"name\": \"trees\", \"format\": \"JSON\"}}";

/* Returns text with the first `from` replaced by `to` (malloc'd). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t a = (size_t)(at - text), fl = strlen(from), tl = strlen(to), n = strlen(text);
    char *out = malloc(n - fl + tl + 1);
    assert_non_null(out);
    memcpy(out, text, a);
    memcpy(out + a, to, tl);
    memcpy(out + a + tl, at + fl, n - a - fl + 1);
    return out;
}

/* trees_spec as a BoostedTreesRegressor of hours (label_dimension 1 when
 * dim1, else the key is left out). malloc'd. */
static char *regressor_spec(bool dim1)
{
    char *t = replace(trees_spec,
                      "\"label\": {\"column\": \"label\", \"vocabulary\": [\"no\", \"yes\"]}",
                      "\"label\": {\"column\": \"hours\"}");
    char *t2 = replace(t, "\"type\": \"BoostedTreesClassifier\", \"n_classes\": 2",
                       dim1 ? "\"type\": \"BoostedTreesRegressor\", \"label_dimension\": 1"
                            : "\"type\": \"BoostedTreesRegressor\"");
    char *t3 = replace(t2, "{\"type\": \"numeric_column\", \"key\": \"hours\"},", "");
    free(t);
    free(t2);
    return t3;
}

/* Parses text expecting a refusal whose message contains want. */
static void spec_bad(const char *text, const char *want)
{
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    rt_status st = rt_spec_to_modeldef(j, NULL, &def, &err);
    if (st == RT_OK || !strstr(err.msg, want))
        print_error("want an error containing \"%s\", got %d \"%s\"\n", want, st, err.msg);
    assert_int_not_equal(st, RT_OK);
    assert_null(def);
    assert_non_null(strstr(err.msg, want));
    cJSON_Delete(j);
}

static void spec_bad_replaced(const char *from, const char *to, const char *want)
{
    char *t = replace(trees_spec, from, to);
    spec_bad(t, want);
    free(t);
}

/* ------------------------------------------------------------ spec */

static void test_spec_modeldef(void **state)
{
    (void)state;
    Predictd__ModelDef *def = support_spec_modeldef(trees_spec);
    assert_non_null(def);
    const Predictd__Graph *g = def->graph;
    assert_string_equal(g->estimator, "BoostedTreesClassifier");
    assert_int_equal(g->logits_dimension, 1);
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_BINARY);
    assert_int_equal(def->head->n_classes, 2);
    assert_int_equal(g->n_linear_columns + g->n_dnn_columns + g->n_hidden_layers, 0);
    assert_null(g->logits_layer);
    assert_non_null(g->trees);
    const Predictd__TreeEnsemble *te = g->trees;
    assert_int_equal(te->n_inputs, 4);
    static const char *const names[] = {"age", "age_buckets", "gender_indicator", "occupation"};
    static const uint32_t cats[] = {0, 5, 2, 20};
    for (size_t k = 0; k < 4; k++) {
        assert_string_equal(te->inputs[k]->column, names[k]);
        assert_int_equal(te->inputs[k]->num_categories, cats[k]);
        assert_int_equal(te->inputs[k]->n_bin_upper, 0);
    }
    assert_int_equal(te->n_trees, 0);
    assert_int_equal(te->n_bias, 1);
    assert_true(te->bias[0] == 0.0f);
    /* No tensors: the export holds the trees in model.pb. */
    rt_tensor_spec *specs = NULL;
    size_t n = 9;
    rt_err err = {{0}};
    assert_int_equal(rt_graph_tensor_specs(def, &specs, &n, &err), RT_OK);
    assert_int_equal(n, 0);
    free(specs);

    /* Head and signatures are byte for byte those of a linear model over the
     * same columns: a client cannot tell the kinds apart. */
    Predictd__ModelDef *lin = support_spec_modeldef(linear_spec);
    assert_non_null(lin);
    assert_int_equal(def->n_signatures, lin->n_signatures);
    assert_int_equal(def->n_signatures, 4); /* a binary head's: regression too */
    for (size_t i = 0; i < def->n_signatures; i++) {
        size_t a = predictd__signature_def__get_packed_size(def->signatures[i]);
        size_t b = predictd__signature_def__get_packed_size(lin->signatures[i]);
        assert_int_equal(a, b);
        uint8_t *pa = malloc(a), *pb = malloc(b);
        predictd__signature_def__pack(def->signatures[i], pa);
        predictd__signature_def__pack(lin->signatures[i], pb);
        assert_memory_equal(pa, pb, a);
        free(pa);
        free(pb);
    }
    size_t a = predictd__head__get_packed_size(def->head);
    assert_int_equal(a, predictd__head__get_packed_size(lin->head));
    rt_spec_modeldef_free(lin);
    rt_spec_modeldef_free(def);

    /* Multi-class and regression heads as the other estimators'. */
    char *t = replace(trees_spec, "\"vocabulary\": [\"no\", \"yes\"]",
                      "\"vocabulary\": [\"a\", \"b\", \"c\"]");
    char *t2 = replace(t, "\"n_classes\": 2", "\"n_classes\": 3");
    def = support_spec_modeldef(t2);
    assert_non_null(def);
    assert_int_equal(def->graph->logits_dimension, 3);
    assert_int_equal(def->graph->trees->n_bias, 3);
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS);
    rt_spec_modeldef_free(def);
    free(t);
    free(t2);
    char *t3 = regressor_spec(true);
    def = support_spec_modeldef(t3);
    assert_non_null(def);
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_REGRESSION);
    assert_string_equal(def->graph->estimator, "BoostedTreesRegressor");
    assert_int_equal(def->graph->logits_dimension, 1);
    rt_spec_modeldef_free(def);
    char *t4 = replace(t3, "\"label_dimension\": 1", "\"label_dimension\": 2");
    spec_bad(t4, "estimator.label_dimension: BoostedTreesRegressor takes one target");
    free(t3);
    free(t4);
}

static void test_spec_refusals(void **state)
{
    (void)state;
    const char *list = "[\"age\", \"age_buckets\", \"gender_indicator\", \"occupation\"]";
    spec_bad_replaced(list, "[\"age\", \"occupation_embedding\"]",
                      "estimator.feature_columns[1]: \"occupation_embedding\" is an "
                      "embedding_column");
    spec_bad_replaced(list, "[\"age_x_gender\"]",
                      "estimator.feature_columns[0]: \"age_x_gender\" is a crossed_column");
    char *h = replace(trees_spec, "\"key\": \"hours\"}", "\"key\": \"hours\", \"shape\": 2}");
    char *h2 = replace(h, list, "[\"hours\"]");
    spec_bad(h2, "estimator.feature_columns[0]: \"hours\" is a numeric_column of shape > 1");
    free(h);
    free(h2);
    spec_bad_replaced(list, "[\"age\", \"nope\"]",
                      "estimator.feature_columns[1]: \"nope\" is not one of the feature_columns");
    spec_bad_replaced(list, "[\"age\", \"age\"]",
                      "estimator.feature_columns[1]: \"age\" is listed twice");
    spec_bad_replaced(list, "[]", "estimator.feature_columns: must list at least one");
    spec_bad_replaced(list, "[3]", "estimator.feature_columns[0]: expected a feature column name");
    spec_bad_replaced("\"feature_columns\": [\"age\", \"age_buckets\", \"gender_indicator\", "
                      "\"occupation\"],",
                      "", "estimator.feature_columns: missing");
    /* The DNN and linear estimators' keys are not BoostedTrees' ... */
    spec_bad_replaced("\"n_trees\": 2", "\"hidden_units\": [3]",
                      "estimator.hidden_units: unknown key");
    spec_bad_replaced("\"n_trees\": 2", "\"optimizer\": \"Adagrad\"",
                      "estimator.optimizer: unknown key");
    spec_bad_replaced("\"n_trees\": 2", "\"n_tree\": 3", "estimator.n_tree: unknown key");
    /* ... and the training parameters stay off the DNN estimators. */
    char *t = replace(linear_spec, "\"n_classes\": 2", "\"n_classes\": 2, \"max_depth\": 3");
    spec_bad(t, "estimator.max_depth: unknown key");
    free(t);
    spec_bad_replaced("BoostedTreesClassifier", "BoostedTreeClassifier",
                      "BoostedTreesClassifier, BoostedTreesRegressor");
}

/* ------------------------------------------------------------ ensembles */

#define leaf support_tree_leaf
#define split support_tree_split
#define add_tree support_tree_add

static Predictd__ModelDef *binary_model(void)
{
    Predictd__ModelDef *def = support_trees_tiny();
    assert_non_null(def);
    return def;
}

typedef struct fixture {
    char dir[64];
    rt_ctx *c;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || support_mkdtemp(f->dir, sizeof f->dir))
        return -1;
    f->c = rt_ctx_new();
    *state = f;
    return f->c ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rt_ctx_free(f->c);
    support_rmtree(f->dir);
    free(f);
    return 0;
}

/* Writes def as a real export (exporter) under dir/name and opens it. */
static rt_model *export_and_open(fixture *f, const char *name, Predictd__ModelDef *def,
                                 rt_err *err)
{
    char base[256], path[4096];
    snprintf(base, sizeof base, "%s/%s", f->dir, name);
    support_tensors none = {0};
    if (support_write_export(base, def, &none, 1, path, sizeof path) < 0)
        return NULL;
    rt_model *m = NULL;
    rt_status st = rt_model_open(path, &m, err);
    return st == RT_OK ? m : NULL;
}

static cJSON *answer(fixture *f, const rt_model *m, rt_method method, const char *body)
{
    rt_buf out;
    rt_buf_init(&out);
    rt_err err = {{0}};
    rt_status st = rt_json_handle(m, method, body, strlen(body), NULL, f->c, &out, &err);
    if (st)
        print_error("%s: %s\n", body, err.msg);
    assert_int_equal(st, RT_OK);
    cJSON *j = cJSON_Parse(out.data);
    assert_non_null(j);
    rt_buf_free(&out);
    return j;
}

static float num_at(const cJSON *arr, int i)
{
    const cJSON *v = cJSON_GetArrayItem(arr, i);
    assert_true(cJSON_IsNumber(v));
    return (float)v->valuedouble;
}

static void test_binary_ensemble(void **state)
{
    fixture *f = *state;
    Predictd__ModelDef *def = binary_model();
    rt_err err = {{0}};
    rt_model *m = export_and_open(f, "bin", def, &err);
    if (!m)
        print_error("%s\n", err.msg);
    assert_non_null(m);
    /* Instances and their logits, summed as the runtime does: bias, tree 0,
     * tree 1. "Other" is no gender of the vocabulary: missing. */
    const char *body = "{\"instances\": ["
                       "{\"age\": 25, \"gender\": \"Male\", \"occupation\": \"x\", \"hours\": 1},"
                       "{\"age\": 45, \"gender\": \"Male\", \"occupation\": \"x\", \"hours\": 1},"
                       "{\"age\": 45, \"gender\": \"Other\", \"occupation\": \"x\", \"hours\": 1},"
                       "{\"age\": 30, \"gender\": \"Female\", \"occupation\": \"x\", \"hours\": 1},"
                       "{\"age\": 60, \"gender\": \"Female\", \"occupation\": \"x\", \"hours\": 1}]}";
    float want[5];
    want[0] = 0.1f + 0.25f + -0.125f;  /* age 25: left; bucket 1 <= 2: left */
    want[1] = 0.1f + 1.0f + 0.125f;    /* 45: right, Male in set; bucket 3: right */
    want[2] = 0.1f + -0.5f + 0.125f;   /* gender missing: default right */
    want[3] = 0.1f + 0.25f + -0.125f;  /* 30 <= 30: left; bucket 2 <= 2: left */
    want[4] = 0.1f + -0.5f + 0.125f;   /* Female not in {Male}: right */
    cJSON *j = answer(f, m, RT_METHOD_PREDICT, body);
    const cJSON *preds = cJSON_GetObjectItem(j, "predictions");
    assert_int_equal(cJSON_GetArraySize(preds), 5);
    for (int i = 0; i < 5; i++) {
        const cJSON *p = cJSON_GetArrayItem(preds, i);
        float lg = num_at(cJSON_GetObjectItem(p, "logits"), 0);
        assert_true(lg == want[i]);
        float lo = num_at(cJSON_GetObjectItem(p, "logistic"), 0);
        assert_float_equal(lo, 1.0 / (1.0 + exp(-(double)want[i])), 1e-6);
        /* The same keys as any binary classifier's. */
        static const char *const keys[] = {"all_class_ids", "all_classes", "class_ids", "classes",
                                           "logistic", "logits", "probabilities"};
        int nk = 0;
        for (const cJSON *k = p->child; k; k = k->next, nk++)
            assert_string_equal(k->string, keys[nk]);
        assert_int_equal(nk, 7);
        const char *cls = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "classes"), 0)->valuestring;
        assert_string_equal(cls, want[i] > 0 ? "yes" : "no");
    }
    cJSON_Delete(j);

    /* A missing number (NaN) goes the node's default way: tree 0's root
     * sends it left. Through the features directly (JSON has no NaN). */
    const rt_graph *g = rt_model_graph(m);
    const char *one = "{\"instances\": [{\"age\": 45, \"gender\": \"Male\", "
                      "\"occupation\": \"x\", \"hours\": 1}, {\"age\": 45, \"gender\": \"Male\", "
                      "\"occupation\": \"x\", \"hours\": 1}]}";
    int columnar = 0;
    const Predictd__SignatureDef *sig = NULL;
    assert_int_equal(rt_ctx_prepare(f->c, g, &err), RT_OK);
    assert_int_equal(rt_json_parse_predict(g, one, strlen(one), NULL, f->c, &columnar, &sig, &err),
                     RT_OK);
    rt_features feat;
    rt_transform_features_init(&feat);
    assert_int_equal(rt_transform(g, f->c->batch, &feat, &err), RT_OK);
    feat.values[0][1] = NAN; /* column 0 is age */
    rt_workspace *ws = rt_workspace_new();
    float lg[2];
    assert_int_equal(rt_forward(g, &feat, ws, lg, &err), RT_OK);
    assert_true(lg[0] == want[1]);
    assert_true(lg[1] == 0.1f + 0.25f + 0.125f); /* age NaN: left; its bucket 3: right */
    /* The leaves reached, as node numbers of the ModelDef's trees. */
    float *x = malloc(2 * rt_trees_gather_width(g->trees) * sizeof *x);
    uint32_t leaves[4];
    assert_int_equal(rt_trees_count(g), 2);
    assert_int_equal(rt_trees_leaves(g, &feat, x, leaves, &err), RT_OK);
    assert_int_equal(leaves[0], 3);
    assert_int_equal(leaves[1], 1);
    assert_int_equal(leaves[2], 1);
    assert_int_equal(leaves[3], 1);
    free(x);
    rt_workspace_free(ws);
    rt_transform_features_free(&feat);
    cJSON *j2 = answer(f, m, RT_METHOD_CLASSIFY,
                       "{\"examples\": [{\"age\": 45, \"gender\": \"Male\", "
                       "\"occupation\": \"x\", \"hours\": 1}]}");
    const cJSON *res = cJSON_GetArrayItem(cJSON_GetObjectItem(j2, "results"), 0);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(res, 1), 0)->valuestring, "yes");
    assert_float_equal(num_at(cJSON_GetArrayItem(res, 1), 1),
                       1.0 / (1.0 + exp(-(double)want[1])), 1e-6);
    cJSON_Delete(j2);
    rt_model_close(m);
    rt_spec_modeldef_free(def);
}


/* A 3-class model (one tree, three leaf values) and a regressor: logits and
 * heads exactly as hand-computed. */
static void test_multiclass_and_regression(void **state)
{
    fixture *f = *state;
    char *t = replace(trees_spec, "\"vocabulary\": [\"no\", \"yes\"]",
                      "\"vocabulary\": [\"a\", \"b\", \"c\"]");
    char *t2 = replace(t, "\"n_classes\": 2", "\"n_classes\": 3");
    Predictd__ModelDef *def = support_spec_modeldef(t2);
    assert_non_null(def);
    Predictd__TreeEnsemble *te = def->graph->trees;
    te->bias[0] = 0.5f;
    te->bias[1] = 0.0f;
    te->bias[2] = -0.5f;
    /* occupation (hash id) <= 9 (missing: left) ? [1, 0, 0] : [0, 0, 2] */
    const float l[] = {1, 0, 0}, r[] = {0, 0, 2};
    Predictd__TreeNode *t0[] = {split(3, 9.0f, true, 1, 2), leaf(3, l), leaf(3, r)};
    add_tree(te, t0, 3);
    rt_err err = {{0}};
    rt_model *m = export_and_open(f, "multi", def, &err);
    assert_non_null(m);
    /* Where does "x" hash? Ask the transform, then pick the side by hand. */
    const rt_graph *g = rt_model_graph(m);
    const char *body = "{\"instances\": [{\"age\": 1, \"hours\": 1, \"gender\": \"Male\", "
                       "\"occupation\": \"x\"}]}";
    int columnar = 0;
    const Predictd__SignatureDef *sig = NULL;
    assert_int_equal(rt_ctx_prepare(f->c, g, &err), RT_OK);
    assert_int_equal(rt_json_parse_predict(g, body, strlen(body), NULL, f->c, &columnar, &sig,
                                           &err),
                     RT_OK);
    rt_features feat;
    rt_transform_features_init(&feat);
    assert_int_equal(rt_transform(g, f->c->batch, &feat, &err), RT_OK);
    int64_t id = feat.ids[4].ids[0]; /* column 4 is occupation */
    rt_transform_features_free(&feat);
    const float *leafv = id <= 9 ? l : r;
    cJSON *j = answer(f, m, RT_METHOD_PREDICT, body);
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "predictions"), 0);
    const cJSON *lg = cJSON_GetObjectItem(p, "logits");
    double z[3], sum = 0;
    for (int k = 0; k < 3; k++) {
        assert_true(num_at(lg, k) == te->bias[k] + leafv[k]);
        z[k] = exp((double)(te->bias[k] + leafv[k]));
        sum += z[k];
    }
    const cJSON *pr = cJSON_GetObjectItem(p, "probabilities");
    for (int k = 0; k < 3; k++)
        assert_float_equal(num_at(pr, k), z[k] / sum, 1e-6);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "classes"), 0)->valuestring,
                        id <= 9 ? "a" : "c");
    assert_null(cJSON_GetObjectItem(p, "logistic"));
    cJSON_Delete(j);
    rt_model_close(m);
    rt_spec_modeldef_free(def);
    free(t);
    free(t2);

    /* Regression on hours: age <= 40 (missing: right) ? 10 : 20, bias 1. */
    char *t3 = regressor_spec(false);
    def = support_spec_modeldef(t3);
    assert_non_null(def);
    te = def->graph->trees;
    te->bias[0] = 1.0f;
    const float ten = 10, twenty = 20;
    Predictd__TreeNode *r0[] = {split(0, 40.0f, false, 1, 2), leaf(1, &ten), leaf(1, &twenty)};
    add_tree(te, r0, 3);
    m = export_and_open(f, "reg", def, &err);
    assert_non_null(m);
    j = answer(f, m, RT_METHOD_PREDICT,
               "{\"instances\": [{\"age\": 40, \"gender\": \"Male\", \"occupation\": \"x\"},"
               "{\"age\": 41, \"gender\": \"Male\", \"occupation\": \"x\"}]}");
    const cJSON *preds = cJSON_GetObjectItem(j, "predictions");
    assert_true(num_at(cJSON_GetArrayItem(preds, 0), 0) == 11.0f);
    assert_true(num_at(cJSON_GetArrayItem(preds, 1), 0) == 21.0f);
    cJSON_Delete(j);
    j = answer(f, m, RT_METHOD_REGRESS,
               "{\"examples\": [{\"age\": 12, \"gender\": \"Male\", \"occupation\": \"x\"}]}");
    assert_true(num_at(cJSON_GetObjectItem(j, "results"), 0) == 11.0f);
    cJSON_Delete(j);
    rt_model_close(m);
    rt_spec_modeldef_free(def);
    free(t3);
}

/* show's figures: shape and importances from the ModelDef. */
static void test_describe(void **state)
{
    fixture *f = *state;
    Predictd__ModelDef *def = binary_model();
    rt_err err = {{0}};
    rt_model *m = export_and_open(f, "describe", def, &err);
    assert_non_null(m);
    rt_trees_shape sh;
    rt_trees_importance *imp = NULL;
    assert_int_equal(rt_trees_describe(rt_model_graph(m), &sh, &imp, &err), RT_OK);
    assert_int_equal(sh.trees, 2);
    assert_int_equal(sh.nodes, 8);
    assert_int_equal(sh.leaves, 5);
    assert_int_equal(sh.max_depth, 2);
    /* Gains are 2 (input + 1) per split: gender_indicator 6, age_buckets 4,
     * age 2, occupation 0 (no split). */
    static const char *const order[] = {"gender_indicator", "age_buckets", "age", "occupation"};
    static const double gain[] = {6, 4, 2, 0};
    for (int k = 0; k < 4; k++) {
        assert_string_equal(imp[k].column, order[k]);
        assert_true(imp[k].gain == gain[k]);
        assert_int_equal(imp[k].splits, k < 3 ? 1 : 0);
    }
    free(imp);
    rt_model_close(m);
    rt_spec_modeldef_free(def);
}

/* ------------------------------------------------------------ refusals */

static char *dup_str(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    assert_non_null(d);
    memcpy(d, s, strlen(s) + 1);
    return d;
}

static void set_column(Predictd__TreeInput *in, const char *name)
{
    free(in->column);
    in->column = dup_str(name);
}

static Predictd__TreeNode *nd(Predictd__ModelDef *d, size_t t, size_t n)
{
    return d->graph->trees->trees[t]->nodes[n];
}

static void m_unknown_column(Predictd__ModelDef *d) { set_column(d->graph->trees->inputs[0], "nope"); }
static void m_embedding(Predictd__ModelDef *d)
{
    set_column(d->graph->trees->inputs[3], "occupation_embedding");
}
static void m_crossed(Predictd__ModelDef *d)
{
    set_column(d->graph->trees->inputs[3], "age_x_gender");
    d->graph->trees->inputs[3]->num_categories = 50;
}
static void m_shape2(Predictd__ModelDef *d)
{
    set_column(d->graph->trees->inputs[0], "hours");
    d->feature_columns[1]->shape = 2;
}
static void m_categories(Predictd__ModelDef *d) { d->graph->trees->inputs[1]->num_categories = 4; }
static void m_twice(Predictd__ModelDef *d)
{
    set_column(d->graph->trees->inputs[3], "gender");
    d->graph->trees->inputs[3]->num_categories = 2;
}
static void set_bins(Predictd__TreeInput *in, float a, float b)
{
    in->bin_upper = malloc(2 * sizeof(float));
    in->bin_upper[0] = a;
    in->bin_upper[1] = b;
    in->n_bin_upper = 2;
}
static void m_bins_order(Predictd__ModelDef *d) { set_bins(d->graph->trees->inputs[0], 3, 3); }
static void m_bins_nan(Predictd__ModelDef *d) { set_bins(d->graph->trees->inputs[0], 3, NAN); }
static void m_bins_categorical(Predictd__ModelDef *d) { set_bins(d->graph->trees->inputs[1], 1, 2); }
static void m_bias_count(Predictd__ModelDef *d)
{
    d->graph->trees->bias = realloc(d->graph->trees->bias, 2 * sizeof(float));
    d->graph->trees->n_bias = 2;
}
static void m_bias_inf(Predictd__ModelDef *d) { d->graph->trees->bias[0] = INFINITY; }
static void m_no_nodes(Predictd__ModelDef *d)
{
    Predictd__Tree *t = d->graph->trees->trees[1];
    for (size_t i = 0; i < t->n_nodes; i++)
        predictd__tree_node__free_unpacked(t->nodes[i], NULL);
    t->n_nodes = 0;
}
static void m_child_back(Predictd__ModelDef *d) { nd(d, 0, 2)->left = 1; }
static void m_child_self(Predictd__ModelDef *d) { nd(d, 0, 0)->left = 0; }
static void m_child_range(Predictd__ModelDef *d) { nd(d, 0, 2)->right = 9; }
static void m_child_same(Predictd__ModelDef *d) { nd(d, 1, 0)->right = 2; }
static void m_child_shared(Predictd__ModelDef *d)
{
    /* node 2's children become 3 and 4 of a tree where node 1 splits into
     * them too: node 1 turns into a split whose children are taken. */
    Predictd__TreeNode *n1 = nd(d, 0, 1);
    n1->input = 0;
    n1->n_leaf_value = 0;
    n1->left = 3;
    n1->right = 4;
}
static void m_unreachable(Predictd__ModelDef *d)
{
    Predictd__Tree *t = d->graph->trees->trees[1];
    const float v = 1;
    t->nodes = realloc(t->nodes, 4 * sizeof *t->nodes);
    t->nodes[3] = leaf(1, &v);
    t->n_nodes = 4;
}
static void m_leaf_count(Predictd__ModelDef *d)
{
    Predictd__TreeNode *n = nd(d, 0, 3);
    n->leaf_value = realloc(n->leaf_value, 2 * sizeof(float));
    n->n_leaf_value = 2;
}
static void m_leaf_nan(Predictd__ModelDef *d) { nd(d, 1, 2)->leaf_value[0] = NAN; }
static void m_threshold_inf(Predictd__ModelDef *d) { nd(d, 1, 0)->threshold = -INFINITY; }
static void m_input_range(Predictd__ModelDef *d) { nd(d, 1, 0)->input = 4; }
static void m_input_neg(Predictd__ModelDef *d) { nd(d, 0, 1)->input = -2; }
static void m_kind(Predictd__ModelDef *d) { nd(d, 1, 0)->kind = (Predictd__TreeSplitKind)5; }
static void m_set_numeric(Predictd__ModelDef *d)
{
    nd(d, 0, 2)->input = 0;
}
static void m_set_range(Predictd__ModelDef *d) { nd(d, 0, 2)->left_categories[0] = 2; }
static void m_set_order(Predictd__ModelDef *d)
{
    Predictd__TreeNode *n = nd(d, 0, 2);
    n->left_categories = realloc(n->left_categories, 2 * sizeof(uint32_t));
    n->left_categories[0] = 1;
    n->left_categories[1] = 0;
    n->n_left_categories = 2;
}
static void m_set_on_threshold(Predictd__ModelDef *d)
{
    nd(d, 0, 2)->kind = PREDICTD__TREE_SPLIT_KIND__SPLIT_THRESHOLD;
}
static void m_split_values(Predictd__ModelDef *d)
{
    Predictd__TreeNode *n = nd(d, 1, 0);
    n->leaf_value = malloc(sizeof(float));
    n->leaf_value[0] = 1;
    n->n_leaf_value = 1;
}
static void m_deep(Predictd__ModelDef *d)
{
    /* A chain of 34 splits: leaves at depth 1..34. */
    Predictd__TreeNode *nodes[69];
    const float v = 0.5f;
    for (uint32_t i = 0; i < 34; i++) {
        nodes[2 * i] = split(0, (float)i, false, 2 * i + 1, 2 * i + 2);
        nodes[2 * i + 1] = leaf(1, &v);
    }
    nodes[68] = leaf(1, &v);
    add_tree(d->graph->trees, nodes, 69);
}
static void m_with_linear(Predictd__ModelDef *d)
{
    Predictd__Graph *g = d->graph;
    g->linear_columns = malloc(sizeof(char *));
    g->linear_columns[0] = dup_str("age");
    g->n_linear_columns = 1;
}

static void test_broken_exports_refused(void **state)
{
    (void)state;
    static const struct {
        void (*mutate)(Predictd__ModelDef *d);
        const char *want;
    } cases[] = {
        {m_unknown_column, "trees: input 0: \"nope\" is not a feature column"},
        {m_embedding, "trees: input 3: occupation_embedding (embedding_column): trees read"},
        {m_crossed, "trees: input 3: age_x_gender (crossed_column): trees read"},
        {m_shape2, "trees: input 0: numeric column hours has shape 2, trees read 1"},
        {m_categories, "trees: input 1: age_buckets has num_categories 4, the column has 5"},
        {m_twice, "trees: input 3: gender is read twice"},
        {m_bins_order, "trees: input 0: age: bin_upper must be finite and increasing (at 1)"},
        {m_bins_nan, "trees: input 0: age: bin_upper must be finite and increasing (at 1)"},
        {m_bins_categorical, "trees: input 1: age_buckets is categorical but has bins"},
        {m_bias_count, "trees: 2 bias values, the head needs 1"},
        {m_bias_inf, "trees: bias 0 is not finite"},
        {m_no_nodes, "trees: tree 1 has no nodes"},
        {m_child_back, "trees: tree 0 node 2: children 1 and 4 must be two nodes after it"},
        {m_child_self, "trees: tree 0 node 0: children 0 and 2 must be two nodes after it"},
        {m_child_range, "trees: tree 0 node 2: children 3 and 9 must be two nodes after it "
                        "(the tree has 5)"},
        {m_child_same, "trees: tree 1 node 0: children 2 and 2 must be two nodes after it"},
        {m_child_shared, "trees: tree 0 node 2: child 3 is also node 1's child"},
        {m_unreachable, "trees: tree 1 node 3 is no node's child (unreachable)"},
        {m_leaf_count, "trees: tree 0 node 3 (leaf): 2 leaf values, the head needs 1"},
        {m_leaf_nan, "trees: tree 1 node 2 (leaf): leaf value 0 is not finite"},
        {m_threshold_inf, "trees: tree 1 node 0: threshold is not finite"},
        {m_input_range, "trees: tree 1 node 0: input 4 out of range (4 inputs)"},
        {m_input_neg, "trees: tree 0 node 1: input -2"},
        {m_kind, "trees: tree 1 node 0: unknown split kind 5"},
        {m_set_numeric, "trees: tree 0 node 2: a category set on numeric input 0"},
        {m_set_range, "trees: tree 0 node 2: left_categories must be increasing and below 2 "
                      "(at 0)"},
        {m_set_order, "trees: tree 0 node 2: left_categories must be increasing and below 2 "
                      "(at 1)"},
        {m_set_on_threshold, "trees: tree 0 node 2: a threshold split with a category set"},
        {m_split_values, "trees: tree 1 node 0 (split) has leaf values"},
        {m_deep, "trees: tree 2 node 65 is deeper than 32"},
        {m_with_linear, "a tree ensemble cannot have linear or DNN parts too"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Predictd__ModelDef *def = binary_model();
        /* The intact model loads: each refusal below is the mutation's. */
        exp_params p = exp_default_params();
        p.check_graph = 0;
        exp_blobs blobs = {0};
        rt_err err = {{0}};
        rt_model *m = NULL;
        assert_int_equal(exp_serialize(def, NULL, 0, &p, &blobs, &err), RT_OK);
        assert_int_equal(rt_model_open_buffers(blobs.model_pb, blobs.model_pb_len, blobs.vars,
                                               blobs.vars_len, &m, &err),
                         RT_OK);
        rt_model_close(m);
        exp_blobs_free(&blobs);
        cases[k].mutate(def);
        assert_int_equal(exp_serialize(def, NULL, 0, &p, &blobs, &err), RT_OK);
        m = NULL;
        rt_status st = rt_model_open_buffers(blobs.model_pb, blobs.model_pb_len, blobs.vars,
                                             blobs.vars_len, &m, &err);
        if (st == RT_OK || !strstr(err.msg, cases[k].want))
            print_error("case %zu: want \"%s\", got %d \"%s\"\n", k, cases[k].want, st,
                        err.msg);
        assert_int_not_equal(st, RT_OK);
        assert_null(m);
        assert_non_null(strstr(err.msg, cases[k].want));
        exp_blobs_free(&blobs);
        rt_spec_modeldef_free(def);
    }
}

/* The AVX2 walk of the trees' complete copies against the scalar walk, and
 * every batch against the whole: random complete and ragged ensembles of
 * depth 1 to 9 (ragged ones have leaves at every depth: the copy's
 * always-left splits), 300 random instances with missing numbers (NaN, to
 * either default) and categories among them; logits and leaves bit-equal
 * for batches of 1 to 300 rows (rows the AVX2 walk leaves to the scalar one
 * included). Where the CPU has no AVX2 both runs are the scalar walk. */
static void test_simd_walk_matches_scalar(void **state)
{
    fixture *f = *state;
    static const char *const genders[] = {"Male", "Female", "Other"};
    static const char *const occs[] = {"Sales", "Tech-support", "Farming", "x", "Craft-repair"};
    static const size_t depths[] = {1, 3, 5, 6, 6, 8, 9};
    static const size_t sizes[] = {1, 7, 8, 9, 31, 32, 33, 100, 257, 300};
    enum { N = 300 };
    size_t cap = 128 * N, len = 0;
    char *body = malloc(cap);
    assert_non_null(body);
    uint64_t r = 2024;
    len += (size_t)snprintf(body + len, cap - len, "{\"instances\": [");
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(body + len, cap - len,
                                "%s{\"age\": %.3f, \"gender\": \"%s\", \"occupation\": \"%s\", "
                                "\"hours\": %d}",
                                i ? ", " : "", support_uniform(&r) * 110 - 5,
                                genders[support_rand(&r) % 3], occs[support_rand(&r) % 5],
                                (int)(support_rand(&r) % 80));
    len += (size_t)snprintf(body + len, cap - len, "]}");
    assert_true(len < cap);
    for (size_t e = 0; e < sizeof depths / sizeof *depths; e++) {
        Predictd__ModelDef *def = support_spec_modeldef(SUPPORT_SPEC_TREES);
        assert_non_null(def);
        int rc = e % 2 ? support_random_ragged_trees(def, 40 + e, 25, depths[e])
                       : support_random_trees(def, 40 + e, 25, depths[e]);
        assert_int_equal(rc, 0);
        rt_graph *g = NULL;
        rt_err err = {{0}};
        support_tensors none = {0};
        assert_int_equal(rt_graph_build(def, support_tensor_lookup, &none, NULL, &g, &err), RT_OK);
        int columnar = 0;
        const Predictd__SignatureDef *sig = NULL;
        assert_int_equal(rt_ctx_prepare(f->c, g, &err), RT_OK);
        assert_int_equal(rt_json_parse_predict(g, body, len, NULL, f->c, &columnar, &sig, &err),
                         RT_OK);
        rt_features feat;
        rt_transform_features_init(&feat);
        assert_int_equal(rt_transform(g, f->c->batch, &feat, &err), RT_OK);
        assert_int_equal(feat.n, N);
        for (size_t i = 0; i < N; i += 7)
            feat.values[0][i] = NAN; /* column 0 is age */
        size_t simd = rt_trees_use_simd(g, true);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        if (__builtin_cpu_supports("avx2"))
            assert_true(simd > 0);
        else
            print_message("no AVX2: the scalar walk only\n");
#endif
        rt_workspace *ws = rt_workspace_new();
        float want[N], got[N];
        uint32_t lw[N * 25], lg[N * 25];
        float *x = malloc(N * rt_trees_gather_width(g->trees) * sizeof *x);
        assert_non_null(x);
        assert_int_equal(rt_trees_use_simd(g, false), 0);
        assert_int_equal(rt_forward(g, &feat, ws, want, &err), RT_OK);
        assert_int_equal(rt_trees_leaves(g, &feat, x, lw, &err), RT_OK);
        assert_int_equal(rt_trees_use_simd(g, true), simd);
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            feat.n = sizes[k];
            memset(got, 0xff, sizeof got);
            assert_int_equal(rt_forward(g, &feat, ws, got, &err), RT_OK);
            for (size_t i = 0; i < sizes[k]; i++)
                if (memcmp(&got[i], &want[i], sizeof got[i]))
                    fail_msg("depth %zu%s, batch %zu, row %zu: %.9g, alone scalar %.9g",
                             depths[e], e % 2 ? " ragged" : "", sizes[k], i, got[i], want[i]);
        }
        feat.n = N;
        assert_int_equal(rt_trees_leaves(g, &feat, x, lg, &err), RT_OK);
        assert_memory_equal(lg, lw, sizeof lw);
        free(x);
        rt_workspace_free(ws);
        rt_transform_features_free(&feat);
        rt_graph_free(g);
        rt_spec_modeldef_free(def);
    }
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_modeldef),
        cmocka_unit_test(test_spec_refusals),
        cmocka_unit_test_setup_teardown(test_binary_ensemble, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multiclass_and_regression, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_simd_walk_matches_scalar, setup, teardown),
        cmocka_unit_test(test_broken_exports_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
