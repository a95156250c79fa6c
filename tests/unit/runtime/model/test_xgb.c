/* test_xgb.c — XGBoost's model.json served (rt_xgb_json.c, rt_xgb_model.c,
 * rt_model_open): a hand-written two-tree model answers the margins worked
 * out by hand for XGBoost's rules (x < split_condition goes left, a
 * category in the set goes right, missing and unknown categories go
 * default_left, codes beyond the model's categories go left), read as
 * codes and as serving.json's strings; base_score becomes a margin in
 * float; and hostile or unsupported files are refused naming the file and
 * the field. The models trained by XGBoost itself are
 * tests/integration/test_daemon_xgboost's. */
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
#include "support_models.h"

/* tree 0: f0 < 1.5 (missing left) ? 0.25 : -0.5
 * tree 1: f1 in {1, 3} (missing right) ? 1.0 (right) : -1.0 (left) */
static const char model_fmt[] =
    "{\"learner\": {\"attributes\": {}, \"feature_names\": [], \"feature_types\": [\"float\", "
    "\"c\"],"
    " \"gradient_booster\": {\"model\": {\"gbtree_model_param\": {\"num_parallel_tree\": \"1\", "
    "\"num_trees\": \"2\"},"
    "  \"tree_info\": [0, 0], \"trees\": ["
    "   {\"base_weights\": [0, 0, 0], \"default_left\": [1, 0, 0], \"id\": 0,"
    "    \"left_children\": [1, -1, -1], \"right_children\": [2, -1, -1],"
    "    \"loss_changes\": [1, 0, 0], \"parents\": [2147483647, 0, 0],"
    "    \"split_conditions\": [1.5, 0.25, -0.5], \"split_indices\": [0, 0, 0],"
    "    \"split_type\": [0, 0, 0], \"sum_hessian\": [4, 1, 3],"
    "    \"categories\": [], \"categories_nodes\": [], \"categories_segments\": [], "
    "\"categories_sizes\": [],"
    "    \"tree_param\": {\"num_deleted\": \"0\", \"num_feature\": \"2\", \"num_nodes\": \"3\", "
    "\"size_leaf_vector\": \"0\"}},"
    "   {\"base_weights\": [0, 0, 0], \"default_left\": [0, 0, 0], \"id\": 1,"
    "    \"left_children\": [1, -1, -1], \"right_children\": [2, -1, -1],"
    "    \"loss_changes\": [1, 0, 0], \"parents\": [2147483647, 0, 0],"
    "    \"split_conditions\": [NaN, -1.0, 1.0], \"split_indices\": [1, 0, 0],"
    "    \"split_type\": [1, 0, 0], \"sum_hessian\": [4, 2, 2],"
    "    \"categories\": [3, 1], \"categories_nodes\": [0], \"categories_segments\": [0], "
    "\"categories_sizes\": [2],"
    "    \"tree_param\": {\"num_deleted\": \"0\", \"num_feature\": \"2\", \"num_nodes\": \"3\", "
    "\"size_leaf_vector\": \"0\"}}]},"
    "  \"name\": \"gbtree\"},"
    " \"learner_model_param\": {\"base_score\": \"%s\", \"num_class\": \"0\", \"num_feature\": "
    "\"2\", \"num_target\": \"1\"},"
    " \"objective\": {\"name\": \"%s\", \"reg_loss_param\": {\"scale_pos_weight\": \"1\"}}},"
    " \"version\": [1, 7, 4]}";

typedef struct fixture {
    char dir[256];
} fixture;

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *model_text(const char *base_score, const char *objective)
{
    size_t n = sizeof model_fmt + 128;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, model_fmt, base_score, objective);
    return s;
}

/* model.json (and serving.json when given) into a fresh directory, opened. */
static rt_status open_dir(fixture *fx, const char *model, const char *serving, rt_model **m,
                          rt_err *err)
{
    assert_int_equal(support_mkdtemp(fx->dir, sizeof fx->dir), 0);
    if (model)
        put(fx->dir, "model.json", model);
    if (serving)
        put(fx->dir, "serving.json", serving);
    return rt_model_open(fx->dir, m, err);
}

/* The logits :predict answers for body, into out[0..n). */
static void predict_logits(const rt_model *m, const char *body, float *out, size_t n)
{
    rt_ctx *c = rt_ctx_new();
    rt_buf b;
    rt_buf_init(&b);
    rt_err err = {{0}};
    rt_status st = rt_json_handle(m, RT_METHOD_PREDICT, body, strlen(body), NULL, c, &b, &err);
    if (st != RT_OK)
        fail_msg("predict: %s", err.msg);
    cJSON *doc = cJSON_Parse(b.data);
    assert_non_null(doc);
    const cJSON *preds = cJSON_GetObjectItem(doc, "predictions");
    assert_int_equal(cJSON_GetArraySize(preds), (int)n);
    for (size_t i = 0; i < n; i++) {
        const cJSON *p = cJSON_GetArrayItem(preds, (int)i);
        out[i] = (float)cJSON_GetArrayItem(cJSON_GetObjectItem(p, "logits"), 0)->valuedouble;
    }
    cJSON_Delete(doc);
    rt_buf_free(&b);
    rt_ctx_free(c);
}

static void test_rules_as_codes(void **state)
{
    (void)state;
    fixture fx;
    rt_model *m = NULL;
    rt_err err = {{0}};
    char *model = model_text("5E-1", "binary:logistic");
    if (open_dir(&fx, model, NULL, &m, &err) != RT_OK)
        fail_msg("open: %s", err.msg);
    const char *body =
        "{\"instances\": [{\"f0\": 1.4999999, \"f1\": 1}, {\"f0\": 1.5, \"f1\": 2},"
        " {\"f0\": null, \"f1\": null}, {\"f1\": 3}, {\"f0\": 0, \"f1\": 7}, {\"f0\": 2}]}";
    float got[6];
    predict_logits(m, body, got, 6);
    /* margin(0.5) = 0 exactly */
    const float want[6] = {0.25f + 1.0f, -0.5f - 1.0f, 0.25f + 1.0f,
                           0.25f + 1.0f, 0.25f - 1.0f, -0.5f + 1.0f};
    for (size_t i = 0; i < 6; i++)
        if (got[i] != want[i])
            fail_msg("instance %zu: logit %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    const rt_graph *g = rt_model_graph(m);
    assert_true(rt_graph_has_trees(g));
    assert_true(rt_xgb_graph_absent_is_missing(g));
    assert_string_equal(rt_graph_input_name(g, 0), "f0");
    assert_string_equal(rt_graph_input_name(g, 1), "f1");
    assert_string_equal(rt_model_def(m)->training->producer, "xgboost 1.7.4");
    rt_model_close(m);
    free(model);
    support_rmtree(fx.dir);
}

static void test_rules_as_strings(void **state)
{
    (void)state;
    fixture fx;
    rt_model *m = NULL;
    rt_err err = {{0}};
    char *model = model_text("5E-1", "binary:logistic");
    if (open_dir(&fx, model,
                 "{\"categories\": {\"f1\": [\"a\", \"b\", \"c\", \"d\"]}, \"classes\": [\"no\", "
                 "\"yes\"], \"feature_names\": [\"x\", \"f1\"]}",
                 &m, &err) != RT_OK)
        fail_msg("open: %s", err.msg);
    /* "b" (1) and "d" (3) right; "c" left; an unknown string missing (right) */
    const char *body = "{\"instances\": [{\"x\": 1, \"f1\": \"b\"}, {\"x\": 1, \"f1\": \"c\"},"
                       " {\"x\": 1, \"f1\": \"zz\"}, {\"x\": 1, \"f1\": \"d\"}]}";
    float got[4];
    predict_logits(m, body, got, 4);
    const float want[4] = {1.25f, -0.75f, 1.25f, 1.25f};
    for (size_t i = 0; i < 4; i++)
        if (got[i] != want[i])
            fail_msg("instance %zu: logit %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    assert_string_equal(rt_graph_class_name(rt_model_graph(m), 1), "yes");
    rt_model_close(m);
    free(model);
    support_rmtree(fx.dir);
}

/* base_score as the objective's margin, in float as XGBoost computes it. */
static char *replace(const char *text, const char *from, const char *to);

/* serving.json's feature_names rename the model's (here names predictd
 * refuses as input names). */
static void test_rename(void **state)
{
    (void)state;
    fixture fx;
    rt_model *m = NULL;
    rt_err err = {{0}};
    char *model0 = model_text("5E-1", "binary:logistic");
    char *model = replace(model0, "\"feature_names\": []",
                          "\"feature_names\": [\"sepal length (cm)\", \"kind\"]");
    if (open_dir(&fx, model, "{\"feature_names\": [\"sepal_length_cm\", \"kind\"]}", &m,
                 &err) != RT_OK)
        fail_msg("open: %s", err.msg);
    assert_string_equal(rt_graph_input_name(rt_model_graph(m), 0), "sepal_length_cm");
    float got[1];
    predict_logits(m, "{\"instances\": [{\"sepal_length_cm\": 1, \"kind\": 2}]}", got, 1);
    assert_true(got[0] == 0.25f - 1.0f);
    rt_model_close(m);
    free(model);
    free(model0);
    support_rmtree(fx.dir);
}

static void test_base_score_margin(void **state)
{
    (void)state;
    static const struct {
        const char *obj, *score;
        float margin;
    } cases[] = {
        {"binary:logistic", "2.5E-1", 0}, {"reg:squarederror", "3.5E0", 3.5f},
        {"count:poisson", "2E0", 0},      {"binary:logitraw", "5E-1", 0.5f},
        {"reg:squarederror", "[3.5E0]", 3.5f}, /* XGBoost 2 and later: a list */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fixture fx;
        rt_model *m = NULL;
        rt_err err = {{0}};
        char *model = model_text(cases[k].score, cases[k].obj);
        if (open_dir(&fx, model, NULL, &m, &err) != RT_OK)
            fail_msg("%s: open: %s", cases[k].obj, err.msg);
        float want = cases[k].margin;
        if (k == 0)
            want = -logf(1.0f / 0.25f - 1.0f);
        if (k == 2)
            want = logf(2.0f);
        const float *bias = rt_model_def(m)->graph->trees->bias;
        if (bias[0] != want)
            fail_msg("%s: bias %.9g, want %.9g", cases[k].obj, (double)bias[0], (double)want);
        rt_model_close(m);
        free(model);
        support_rmtree(fx.dir);
    }
}

/* text with the first `from` replaced by `to` (malloc'd). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        fail_msg("no \"%s\" in the model", from);
    size_t a = (size_t)(at - text), fl = strlen(from), tl = strlen(to), n = strlen(text);
    char *out = malloc(n - fl + tl + 1);
    assert_non_null(out);
    memcpy(out, text, a);
    memcpy(out + a, to, tl);
    memcpy(out + a + tl, at + fl, n - a - fl + 1);
    return out;
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *serving, *want;
    } cases[] = {
        {"\"left_children\": [1, -1, -1]", "\"left_children\": [1, 2, -1]", NULL,
         "trees[0]: node 1 has one child"},
        {"\"left_children\": [1, -1, -1]", "\"left_children\": [2, -1, -1]", NULL,
         "trees[0]: node 2 is reached twice"},
        {"\"right_children\": [2, -1, -1]", "\"right_children\": [3, -1, -1]", NULL,
         "trees[0].right_children[0]: 3 is not an integer in [-1, 2]"},
        {"\"split_type\": [0, 0, 0]", "\"split_type\": [1, 0, 0]", NULL,
         "split_type[0]: a categorical split on feature f0"},
        {"\"split_conditions\": [1.5,", "\"split_conditions\": [NaN,", NULL,
         "trees[0].split_conditions[0]: inf is not a finite float"},
        {"\"split_conditions\": [1.5, 0.25", "\"split_conditions\": [1.5, -Infinity", NULL,
         "trees[0].split_conditions[1]: -inf is not a finite float"},
        {"\"num_nodes\": \"3\"", "\"num_nodes\": \"4\"", NULL,
         "trees[0].left_children: 3 values, num_nodes says 4"},
        {"\"categories_sizes\": [2]", "\"categories_sizes\": [9]", NULL,
         "trees[1].categories_sizes[0]: 9 is not an integer in [0, 2]"},
        {"\"categories_segments\": [0]", "\"categories_segments\": [1]", NULL,
         "trees[1].categories_segments[0]: node 0's set [1, +2) is outside categories"},
        {"\"categories_nodes\": [0]", "\"categories_nodes\": []", NULL,
         "categories_nodes: categorical node 0 has no set"},
        {"\"tree_info\": [0, 0]", "\"tree_info\": [0, 1]", NULL, "tree_info[1]: expected a class"},
        {"\"5E-1\"", "\"1E0\"", NULL, "base_score: 1 is not in (0, 1)"},
        {"\"binary:logistic\"", "\"rank:ndcg\"", NULL,
         "learner.objective.name: \"rank:ndcg\" is not served"},
        {"\"binary:logistic\"", "\"multi:softprob\"", NULL, "num_class: 0 with objective"},
        {"\"name\": \"gbtree\"", "\"name\": \"gblinear\"", NULL,
         "gradient_booster.name: \"gblinear\" is not served yet"},
        {"\"version\": [1, 7, 4]", "\"version\": [0, 90, 0]", NULL, "version: XGBoost 0.9"},
        {"\"learner\"", "\"learnr\"", NULL, "model.json: learner: missing (required)"},
        {"\"num_feature\": \"2\", \"num_target\"", "\"num_feature\": \"1\", \"num_target\"", NULL,
         "feature_types: 2 types, the model has 1"},
        {"{", "{", "{\"categories\": {\"f1\": [\"a\", \"b\"]}}",
         "serving.json: categories.f1: 2 categories, the model splits on category 3"},
        {"{", "{", "{\"categories\": {\"f0\": [\"a\"]}}",
         "serving.json: categories.f0: the model's feature f0 is not categorical"},
        {"{", "{", "{\"categories\": {\"f1\": [\"a\", \"a\", \"b\", \"c\"]}}",
         "serving.json: categories.f1[1]: \"a\" is listed twice"},
        {"{", "{", "{\"classes\": [\"a\"]}", "serving.json: classes: 1 names for 2 classes"},
        {"{", "{", "{\"clases\": [\"a\", \"b\"]}", "serving.json: clases: unknown key"},
        {"{", "{", "{\"feature_names\": [\"a\"]}",
         "serving.json: feature_names: 1 names, the model has 2"},
        {"{", "{", "{\"categories\": ", "serving.json: not valid JSON"},
        {"\"5E-1\"", "\"[5E-1, 5E-1]\"", NULL, "base_score: \"[5E-1, 5E-1]\" is not a list of 1"},
        {"\"5E-1\"", "\"[5E-1\"", NULL, "base_score: \"[5E-1\" is not a list of numbers"},
        {"\"size_leaf_vector\": \"0\"", "\"size_leaf_vector\": \"3\"", NULL,
         "trees[0].tree_param.size_leaf_vector: 3 (vector-leaf"},
        {"\"feature_names\": []", "\"feature_names\": [\"sepal length (cm)\", \"b\"]", NULL,
         "model.json: feature_names[0]: \"sepal length (cm)\" is not a valid input name"},
    };
    char *model = model_text("5E-1", "binary:logistic");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fixture fx;
        rt_model *m = NULL;
        rt_err err = {{0}};
        char *text = replace(model, cases[k].from, cases[k].to);
        rt_status st = open_dir(&fx, text, cases[k].serving, &m, &err);
        if (st == RT_OK || !strstr(err.msg, cases[k].want) ||
            !strstr(err.msg, cases[k].serving ? "serving.json" : "model.json"))
            fail_msg("case %zu: status %d, \"%s\", want \"%s\"", k, (int)st, err.msg,
                     cases[k].want);
        free(text);
        support_rmtree(fx.dir);
    }
    free(model);
    /* the legacy binary format by name; UBJSON read, and checked */
    fixture fx;
    rt_model *m = NULL;
    rt_err err = {{0}};
    assert_int_equal(support_mkdtemp(fx.dir, sizeof fx.dir), 0);
    put(fx.dir, "model.bst", "binf");
    assert_int_equal(rt_model_open(fx.dir, &m, &err), RT_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "model.bst: XGBoost's legacy binary format is not read yet"));
    put(fx.dir, "model.ubj", "{L");
    assert_int_equal(rt_model_open(fx.dir, &m, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "model.ubj: not valid UBJSON: it ends early"));
    support_rmtree(fx.dir);
}

/* The fixture as a dart booster with weight_drop `weights` (the trees under
 * gradient_booster.gbtree). */
static char *dart_text(const char *weights)
{
    char *m0 = model_text("5E-1", "binary:logistic");
    char head[160];
    snprintf(head, sizeof head, "\"gradient_booster\": {\"name\": \"dart\", \"weight_drop\": %s,"
             " \"gbtree\": {\"model\":", weights);
    char *m1 = replace(m0, "\"gradient_booster\": {\"model\":", head);
    char *m2 = replace(m1, "\"name\": \"gbtree\"}", "\"name\": \"gbtree\"}}");
    free(m0);
    free(m1);
    return m2;
}

/* dart: each tree's leaf times its weight, added in float in tree order. */
static void test_dart(void **state)
{
    (void)state;
    fixture fx;
    rt_model *m = NULL;
    rt_err err = {{0}};
    char *model = dart_text("[0.3, 0.7]");
    if (open_dir(&fx, model, NULL, &m, &err) != RT_OK)
        fail_msg("open: %s", err.msg);
    float got[2];
    predict_logits(m, "{\"instances\": [{\"f0\": 1, \"f1\": 1}, {\"f0\": 2, \"f1\": 2}]}", got,
                   2);
    volatile float w0 = 0.3f, w1 = 0.7f, a = 0.25f, b = -0.5f, one = 1.0f;
    const float want[2] = {(0.0f + a * w0) + one * w1, (0.0f + b * w0) + (-one) * w1};
    for (size_t i = 0; i < 2; i++)
        if (got[i] != want[i])
            fail_msg("instance %zu: logit %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    rt_model_close(m);
    support_rmtree(fx.dir);
    free(model);
    static const struct {
        const char *weights, *want;
    } bad[] = {
        {"[0.3]", "learner.gradient_booster.weight_drop: 1 weights for 2 trees"},
        {"[0.3, 0.7, 1]", "weight_drop: 3 weights for 2 trees"},
        {"[0.3, NaN]", "weight_drop[1]: not a finite number"},
        {"[1e300, 0.7]", "weight_drop[0]: not a finite number"},
        {"[0.3, \"x\"]", "weight_drop[1]: not a finite number"},
        {"{}", "weight_drop: expected"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *text = dart_text(bad[k].weights);
        rt_status st = open_dir(&fx, text, NULL, &m, &err);
        if (st == RT_OK || !strstr(err.msg, bad[k].want) || !strstr(err.msg, "model.json"))
            fail_msg("case %zu: status %d, \"%s\", want \"%s\"", k, (int)st, err.msg,
                     bad[k].want);
        free(text);
        support_rmtree(fx.dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_as_codes),
        cmocka_unit_test(test_rules_as_strings),
        cmocka_unit_test(test_rename),
        cmocka_unit_test(test_base_score_margin),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_dart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
