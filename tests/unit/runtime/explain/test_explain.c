/* test_explain.c — feature attributions (rt_xai_explain, runtime/explain/rt_xai*.c).
 *
 * Known answers: a linear model explained on its logits gives w (x - b) per
 * numeric input and the weight difference per categorical one, by every
 * method; the integrated-gradients example of the paper (f(x) = 1 - relu(1 -
 * x), x = 2, baseline 0) gives 1 - 1/m for m trapezoid steps (relu's
 * derivative is 0 at 0, as TensorFlow's); a two-tree ensemble worked out by
 * hand; TreeSHAP against enumeration on random ensembles. Axioms: completeness of the exact methods, dummy (an input equal to
 * its baseline gets exactly 0), symmetry. Exact enumeration against a
 * brute-force Shapley computation over the same model's answers, with an
 * independent permutation formula. Sampled Shapley converges on the exact
 * values and is reproducible. Several baselines per input: the mean of the
 * attributions over them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cJSON.h>

#include "rt_serve_internal.h"
#include "rt_data_internal.h"
#include "support_models.h"
#include "support_trees.h"

typedef struct built {
    Predictd__ModelDef *def;
    support_tensors st;
    rt_graph *g;
} built;

static void build(built *b, Predictd__ModelDef *def, uint64_t seed, float scale)
{
    memset(b, 0, sizeof *b);
    b->def = def;
    assert_non_null(b->def);
    assert_int_equal(support_random_tensors(b->def, seed, scale, &b->st), 0);
    rt_err err = {{0}};
    rt_status st = rt_graph_build(b->def, support_tensor_lookup, &b->st, NULL, &b->g, &err);
    if (st != RT_OK)
        fail_msg("rt_graph_build: %s", err.msg);
}

static void unbuild(built *b)
{
    rt_graph_free(b->g);
    support_tensors_free(&b->st);
    rt_spec_modeldef_free(b->def);
}

static float *tensor(built *b, const char *name)
{
    const exp_tensor *t = support_tensors_find(&b->st, name);
    if (!t)
        fail_msg("no tensor %s", name);
    return (float *)t->data;
}

/* Pushes "name=value" pairs: a value starting with a digit or '-' is a number. */
static void push(rt_batch *bt, size_t idx, const rt_graph *g, const char *name, const char *v)
{
    long in = rt_graph_find_input(g, name, strlen(name));
    assert_true(in >= 0);
    if ((v[0] >= '0' && v[0] <= '9') || v[0] == '-')
        assert_int_equal(rt_batch_push_num(bt, idx, (size_t)in, atof(v)), RT_OK);
    else
        assert_int_equal(rt_batch_push_str(bt, idx, (size_t)in, v, strlen(v)), RT_OK);
}

/* A batch of one instance from n name/value pairs. */
static rt_batch *one(const rt_graph *g, size_t n, const char *const *kv)
{
    rt_batch *bt = rt_batch_new(g);
    size_t idx;
    assert_non_null(bt);
    assert_int_equal(rt_batch_add(bt, &idx), RT_OK);
    for (size_t k = 0; k < n; k++)
        push(bt, idx, g, kv[2 * k], kv[2 * k + 1]);
    return bt;
}

#define MAXIN 16
typedef struct answer {
    rt_xai_result r[8];
    double attr[8][MAXIN];
    size_t n;
} answer;

static void explain(const rt_graph *g, rt_batch *x, rt_batch *b, rt_xai_params *p, answer *a)
{
    memset(a, 0, sizeof *a);
    for (size_t j = 0; j < 8; j++)
        a->r[j].attr = a->attr[j];
    rt_err err = {{0}};
    rt_status st = rt_xai_explain(g, x, 0, b, 0, p, a->r, 8, &a->n, &err);
    if (st != RT_OK)
        fail_msg("rt_xai_explain: %s", err.msg);
}

static double sum_attr(const answer *a, size_t j, size_t n_in)
{
    double s = 0.0;
    for (size_t i = 0; i < n_in; i++)
        s += a->attr[j][i];
    return s;
}

/* ------------------------------------------------------------ linear */

static void test_linear_known_answer_every_method(void **state)
{
    (void)state;
    built b;
    build(&b, support_spec_modeldef(SUPPORT_SPEC_LINEAR), 7, 1.0f);
    const rt_graph *g = b.g;
    const float *wx = tensor(&b, "linear/linear_model/x/weights");     /* [1 x 3] */
    const float *wc = tensor(&b, "linear/linear_model/color/weights"); /* [4 x 3] */
    const char *xkv[] = {"x", "2.5", "color", "blue"}, *bkv[] = {"x", "-0.5", "color", "red"};
    rt_batch *x = one(g, 2, xkv), *base = one(g, 2, bkv);
    long ix = rt_graph_find_input(g, "x", 1), ic = rt_graph_find_input(g, "color", 5);
    rt_xai_method methods[] = {RT_XAI_EXACT, RT_XAI_SAMPLED, RT_XAI_IG};
    for (size_t m = 0; m < 3; m++) {
        rt_xai_params p = rt_xai_default_params();
        p.method = methods[m];
        p.output = RT_XAI_OUT_LOGITS;
        p.top_k = -1;
        p.path_count = 3;
        p.step_count = 7;
        answer a;
        explain(g, x, base, &p, &a);
        assert_int_equal(a.n, 3);
        for (size_t j = 0; j < 3; j++) {
            size_t k = a.r[j].output_index;
            double want_x = (double)wx[k] * (2.5 - -0.5);
            double want_c = (double)wc[2 * 3 + k] - (double)wc[0 * 3 + k]; /* blue - red */
            assert_true(fabs(a.attr[j][ix] - want_x) < 1e-5 * (1 + fabs(want_x)));
            assert_true(fabs(a.attr[j][ic] - want_c) < 1e-5 * (1 + fabs(want_c)));
            assert_true(a.r[j].approx_error < 1e-5);
            assert_int_equal(a.r[j].method, methods[m]);
        }
    }
    rt_batch_free(x);
    rt_batch_free(base);
    unbuild(&b);
}

/* Past 16 differing inputs: the closed form of a linear regressor (18
 * inputs) is exact; a DNN is refused by name. */
static void test_closed_form_past_16(void **state)
{
    (void)state;
    char spec[8192], cols[3000] = "", fcs[3000] = "", names[1000] = "";
    for (int i = 0; i < 18; i++) {
        size_t n = strlen(cols), m = strlen(fcs), q = strlen(names);
        snprintf(cols + n, sizeof cols - n, "{\"name\": \"x%d\", \"type\": \"float\"}, ", i);
        snprintf(fcs + m, sizeof fcs - m, "%s{\"type\": \"numeric_column\", \"key\": \"x%d\"}",
                 i ? ", " : "", i);
        snprintf(names + q, sizeof names - q, "%s\"x%d\"", i ? ", " : "", i);
    }
    const char *kinds[2] = {"\"LinearRegressor\"", "\"DNNRegressor\", \"hidden_units\": [3]"};
    for (int kind = 0; kind < 2; kind++) {
        snprintf(spec, sizeof spec,
                 "{\"columns\": [%s{\"name\": \"t\", \"type\": \"float\"}], \"label\": "
                 "{\"column\": \"t\"}, \"feature_columns\": [%s], \"estimator\": {\"type\": %s, "
                 "\"feature_columns\": [%s]}, \"export\": {\"name\": \"wide\"}}",
                 cols, fcs, kinds[kind], names);
        built b;
        build(&b, support_spec_modeldef(spec), 9, 1.0f);
        rt_batch *x = rt_batch_new(b.g), *base = rt_batch_new(b.g);
        size_t ix, ib;
        assert_int_equal(rt_batch_add(x, &ix), RT_OK);
        assert_int_equal(rt_batch_add(base, &ib), RT_OK);
        for (size_t i = 0; i < 18; i++) {
            assert_int_equal(rt_batch_push_num(x, 0, i, 1.0 + (double)i), RT_OK);
            assert_int_equal(rt_batch_push_num(base, 0, i, -0.5), RT_OK);
        }
        rt_xai_params p = rt_xai_default_params();
        p.method = RT_XAI_EXACT;
        rt_xai_result r;
        double attr[18];
        r.attr = attr;
        size_t n = 0;
        rt_err err = {{0}};
        rt_status st = rt_xai_explain(b.g, x, 0, base, 0, &p, &r, 1, &n, &err);
        if (kind == 0) {
            assert_int_equal(st, RT_OK);
            for (size_t i = 0; i < 18; i++) {
                char name[32];
                snprintf(name, sizeof name, "linear/linear_model/x%zu/weights", i);
                double want = (double)tensor(&b, name)[0] * (1.0 + (double)i + 0.5);
                long in = rt_graph_find_input(b.g, name + 20, strlen(name + 20) - 8);
                assert_true(in >= 0);
                assert_true(fabs(attr[in] - want) < 1e-5 * (1 + fabs(want)));
            }
            assert_int_equal(r.evaluations, 2 + 19); /* the ends, then d + 1 rows */
        } else {
            assert_int_equal(st, RT_ERR_LIMIT);
            assert_non_null(strstr(err.msg, "exactShapleyAttribution: 18 inputs differ"));
        }
        rt_batch_free(x);
        rt_batch_free(base);
        unbuild(&b);
    }
}

/* ------------------------------------------------ the paper's IG example */

#define SPEC_RELU                                                                               \
    "{\"columns\": [{\"name\": \"a\", \"type\": \"float\", \"default\": 0},"                    \
    "  {\"name\": \"t\", \"type\": \"float\", \"default\": 0}],"                                \
    " \"label\": {\"column\": \"t\"},"                                                          \
    " \"feature_columns\": [{\"type\": \"numeric_column\", \"key\": \"a\"}],"                   \
    " \"estimator\": {\"type\": \"DNNRegressor\", \"hidden_units\": [1],"                       \
    "  \"feature_columns\": [\"a\"]},"                                                          \
    " \"export\": {\"name\": \"relu\", \"format\": \"JSON\"}}"

static void test_ig_paper_example(void **state)
{
    (void)state;
    built b;
    build(&b, support_spec_modeldef(SPEC_RELU), 1, 1.0f);
    /* f(a) = 1 - relu(1 - a): hidden = relu(-a + 1), output = -hidden + 1 */
    tensor(&b, "dnn/hiddenlayer_0/kernel")[0] = -1.0f;
    tensor(&b, "dnn/hiddenlayer_0/bias")[0] = 1.0f;
    tensor(&b, "dnn/logits/kernel")[0] = -1.0f;
    tensor(&b, "dnn/logits/bias")[0] = 1.0f;
    const char *xkv[] = {"a", "2"}, *bkv[] = {"a", "0"};
    rt_batch *x = one(b.g, 1, xkv), *base = one(b.g, 1, bkv);
    int steps[] = {2, 10, 50, 100};
    for (size_t s = 0; s < 4; s++) {
        rt_xai_params p = rt_xai_default_params();
        p.method = RT_XAI_IG;
        p.step_count = steps[s];
        answer a;
        explain(b.g, x, base, &p, &a);
        assert_int_equal(a.n, 1);
        assert_true(fabs(a.r[0].instance_value - 1.0f) < 1e-7);
        assert_true(fabs(a.r[0].baseline_value - 0.0f) < 1e-7);
        double want = 1.0 - 1.0 / steps[s];
        assert_true(fabs(a.attr[0][0] - want) < 1e-6);
        assert_true(fabs(a.r[0].approx_error - 1.0 / steps[s]) < 1e-6);
        /* Shapley of one input is the whole difference */
        p.method = RT_XAI_EXACT;
        explain(b.g, x, base, &p, &a);
        assert_true(fabs(a.attr[0][0] - 1.0) < 1e-7);
    }
    rt_batch_free(x);
    rt_batch_free(base);
    unbuild(&b);
}

/* ------------------------------------------------------------ trees */

static void test_trees_by_hand(void **state)
{
    (void)state;
    Predictd__ModelDef *def = support_trees_tiny();
    assert_non_null(def);
    rt_graph *g = NULL;
    rt_err err = {{0}};
    support_tensors none = {0};
    assert_int_equal(rt_graph_build(def, support_tensor_lookup, &none, NULL, &g, &err), RT_OK);
    const char *xkv[] = {"age", "45", "hours", "10", "gender", "Male", "occupation", "x"};
    const char *bkv[] = {"age", "25", "hours", "10", "gender", "Female", "occupation", "x"};
    rt_batch *x = one(g, 4, xkv), *base = one(g, 4, bkv);
    rt_xai_params p = rt_xai_default_params();
    p.method = RT_XAI_EXACT;
    p.output = RT_XAI_OUT_LOGITS;
    answer a;
    explain(g, x, base, &p, &a);
    long age = rt_graph_find_input(g, "age", 3), gender = rt_graph_find_input(g, "gender", 6);
    long hours = rt_graph_find_input(g, "hours", 5);
    /* v({}) = 0.225, v({age}) = -0.275, v({gender}) = 0.225, v(all) = 1.225 */
    assert_true(fabs(a.r[0].baseline_value - 0.225f) < 1e-6);
    assert_true(fabs(a.r[0].instance_value - 1.225f) < 1e-6);
    assert_true(fabs(a.attr[0][age] - 0.25) < 1e-6);
    assert_true(fabs(a.attr[0][gender] - 0.75) < 1e-6);
    assert_true(a.attr[0][hours] == 0.0); /* dummy: the same in both */
    assert_int_equal(a.r[0].evaluations, 2); /* the ends; TreeSHAP walks the trees */
    /* enumeration gives the same */
    p.enumerate = true;
    explain(g, x, base, &p, &a);
    assert_int_equal(a.r[0].evaluations, 2 + 4); /* the ends, then 2^2 coalitions */
    assert_true(fabs(a.attr[0][age] - 0.25) < 1e-6);
    assert_true(fabs(a.attr[0][gender] - 0.75) < 1e-6);
    p.enumerate = false;
    /* integrated gradients refuse trees by name */
    p.method = RT_XAI_IG;
    size_t n = 0;
    rt_status st = rt_xai_explain(g, x, 0, base, 0, &p, a.r, 8, &n, &err);
    assert_int_equal(st, RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "integratedGradientsAttribution"));
    rt_batch_free(x);
    rt_batch_free(base);
    rt_graph_free(g);
    rt_spec_modeldef_free(def);
}

/* TreeSHAP against enumeration on random ensembles. */
static void test_treeshap_random_ensembles(void **state)
{
    (void)state;
    const char *ages[] = {"17", "29", "31", "44", "63", "-3"};
    const char *genders[] = {"Male", "Female", "Other", ""};
    const char *occs[] = {"Sales", "Tech-support", "Farming", "x"};
    for (uint64_t seed = 1; seed <= 6; seed++) {
        Predictd__ModelDef *def = support_spec_modeldef(SUPPORT_SPEC_TREES);
        assert_non_null(def);
        assert_int_equal(support_random_trees(def, seed, 30, 1 + seed % 5), 0);
        rt_graph *g = NULL;
        rt_err err = {{0}};
        support_tensors none = {0};
        assert_int_equal(rt_graph_build(def, support_tensor_lookup, &none, NULL, &g, &err),
                         RT_OK);
        uint64_t r = seed * 77;
        for (int k = 0; k < 5; k++) {
            const char *xkv[] = {"age", ages[support_rand(&r) % 6], "hours", "1", "gender",
                                 genders[support_rand(&r) % 4], "occupation",
                                 occs[support_rand(&r) % 4]};
            const char *bkv[] = {"age", ages[support_rand(&r) % 6], "hours", "2", "gender",
                                 genders[support_rand(&r) % 4], "occupation",
                                 occs[support_rand(&r) % 4]};
            rt_batch *x = one(g, 4, xkv), *base = one(g, 4, bkv);
            rt_xai_params p = rt_xai_default_params();
            p.method = RT_XAI_EXACT;
            p.output = RT_XAI_OUT_LOGITS;
            answer ts, en;
            explain(g, x, base, &p, &ts);
            p.enumerate = true;
            explain(g, x, base, &p, &en);
            double delta = (double)ts.r[0].instance_value - (double)ts.r[0].baseline_value;
            assert_true(fabs(sum_attr(&ts, 0, 4) - delta) < 1e-5);
            for (size_t i = 0; i < 4; i++)
                if (fabs(ts.attr[0][i] - en.attr[0][i]) > 1e-5)
                    fail_msg("seed %llu instance %d input %zu: TreeSHAP %.9g, enumeration %.9g",
                             (unsigned long long)seed, k, i, ts.attr[0][i], en.attr[0][i]);
            /* hours: read by no tree, though it differs: exactly 0 */
            assert_true(ts.attr[0][rt_graph_find_input(g, "hours", 5)] == 0.0);
            rt_batch_free(x);
            rt_batch_free(base);
        }
        rt_graph_free(g);
        rt_spec_modeldef_free(def);
    }
}

/* ------------------------------------------- wide & deep: the axioms */

/* Brute force: phi_i = mean over all d! orders of the marginal contribution,
 * v read off rt_xai_explain's own model through single-row batches. */
static double model_value(const rt_graph *g, rt_batch *row, size_t k)
{
    rt_features f;
    rt_outputs o;
    rt_workspace *ws = rt_workspace_new();
    float logit[4];
    rt_err err = {{0}};
    rt_transform_features_init(&f);
    rt_head_outputs_init(&o);
    assert_int_equal(rt_transform(g, row, &f, &err), RT_OK);
    assert_int_equal(rt_forward(g, &f, ws, logit, &err), RT_OK);
    assert_int_equal(rt_head_compute(g, logit, 1, &o, &err), RT_OK);
    double v = o.probabilities[k];
    rt_transform_features_free(&f);
    rt_head_outputs_free(&o);
    rt_workspace_free(ws);
    return v;
}

static void test_wide_deep_axioms_and_brute_force(void **state)
{
    (void)state;
    built b;
    build(&b, support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP), 11, 1.0f);
    const rt_graph *g = b.g;
    const char *xv[] = {"age", "47", "hours", "40", "gender", "Female", "occupation", "Sales"};
    const char *bv[] = {"age", "23", "hours", "12", "gender", "Male", "occupation", "Sales"};
    rt_batch *x = one(g, 4, xv), *base = one(g, 4, bv);
    size_t n_in = rt_graph_num_inputs(g);
    assert_int_equal(n_in, 4);
    rt_xai_params p = rt_xai_default_params();
    p.method = RT_XAI_EXACT;
    p.top_k = -1;
    answer ex;
    explain(g, x, base, &p, &ex);
    assert_int_equal(ex.n, 2);
    long occ = rt_graph_find_input(g, "occupation", 10);
    for (size_t j = 0; j < 2; j++) {
        double delta = (double)ex.r[j].instance_value - (double)ex.r[j].baseline_value;
        assert_true(fabs(sum_attr(&ex, j, n_in) - delta) < 1e-6);
        assert_true(ex.attr[j][occ] == 0.0);
    }
    /* brute force over the 3! orders of the 3 players (age, hours, gender) */
    const char *names[3] = {"age", "hours", "gender"};
    int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (size_t j = 0; j < 2; j++) {
        size_t k = ex.r[j].output_index;
        double phi[3] = {0, 0, 0};
        for (int q = 0; q < 6; q++) {
            int in_set[3] = {0, 0, 0};
            double prev = NAN;
            for (int s = 0; s <= 3; s++) {
                if (s > 0)
                    in_set[perms[q][s - 1]] = 1;
                const char *kv[8];
                for (int i = 0; i < 3; i++) {
                    kv[2 * i] = names[i];
                    kv[2 * i + 1] = in_set[i] ? xv[2 * i + 1] : bv[2 * i + 1];
                }
                kv[6] = "occupation";
                kv[7] = "Sales";
                rt_batch *row = one(g, 4, kv);
                double v = model_value(g, row, k);
                rt_batch_free(row);
                if (s > 0)
                    phi[perms[q][s - 1]] += (v - prev) / 6.0;
                prev = v;
            }
        }
        for (int i = 0; i < 3; i++) {
            long in = rt_graph_find_input(g, names[i], strlen(names[i]));
            assert_true(fabs(ex.attr[j][in] - phi[i]) < 1e-9);
        }
        /* instanceOutputValue: the model's answer for the instance itself */
        assert_true(ex.r[j].instance_value == (float)model_value(g, x, k));
    }
    /* integrated gradients: completeness within the reported error */
    p.method = RT_XAI_IG;
    p.step_count = 100;
    answer ig;
    explain(g, x, base, &p, &ig);
    for (size_t j = 0; j < 2; j++) {
        double delta = (double)ig.r[j].instance_value - (double)ig.r[j].baseline_value;
        double gap = fabs(sum_attr(&ig, j, n_in) - delta);
        assert_true(fabs(gap / fabs(delta) - ig.r[j].approx_error) < 1e-9);
        print_message("IG 100 steps: approximationError %g\n", ig.r[j].approx_error);
        assert_true(ig.r[j].approx_error < 0.05);
        assert_true(ig.attr[j][occ] == 0.0);
    }
    /* sampled Shapley: reproducible, complete, and nearer the exact values
     * with more paths */
    p.method = RT_XAI_SAMPLED;
    double err_small = 0, err_large = 0;
    answer s1, s2;
    p.path_count = 2;
    explain(g, x, base, &p, &s1);
    explain(g, x, base, &p, &s2);
    assert_memory_equal(s1.attr, s2.attr, sizeof s1.attr);
    for (size_t i = 0; i < n_in; i++)
        err_small += fabs(s1.attr[0][i] - ex.attr[0][i]);
    p.path_count = 50;
    explain(g, x, base, &p, &s2);
    for (size_t i = 0; i < n_in; i++)
        err_large += fabs(s2.attr[0][i] - ex.attr[0][i]);
    assert_true(err_large <= err_small);
    assert_true(s2.r[0].approx_error < 1e-6);
    rt_batch_free(x);
    rt_batch_free(base);
    unbuild(&b);
}

static void test_symmetry(void **state)
{
    (void)state;
    built b;
    build(&b, support_spec_modeldef(SUPPORT_SPEC_DNN_REGRESSOR), 3, 1.0f);
    /* make a and b interchangeable: the kernel's two input rows equal */
    float *k = tensor(&b, "dnn/hiddenlayer_0/kernel"); /* [2 x 4] */
    memcpy(k + 4, k, 4 * sizeof *k);
    const char *xkv[] = {"a", "1.5", "b", "1.5"}, *bkv[] = {"a", "0", "b", "0"};
    rt_batch *x = one(b.g, 2, xkv), *base = one(b.g, 2, bkv);
    rt_xai_method methods[] = {RT_XAI_EXACT, RT_XAI_IG};
    for (size_t m = 0; m < 2; m++) {
        rt_xai_params p = rt_xai_default_params();
        p.method = methods[m];
        answer a;
        explain(b.g, x, base, &p, &a);
        assert_true(fabs(a.attr[0][0] - a.attr[0][1]) < 1e-12);
    }
    rt_batch_free(x);
    rt_batch_free(base);
    unbuild(&b);
}

static void test_refusals(void **state)
{
    (void)state;
    built b;
    build(&b, support_spec_modeldef(SUPPORT_SPEC_DNN_REGRESSOR), 3, 1.0f);
    const char *xkv[] = {"a", "1", "b", "2"}, *bkv[] = {"a", "0", "b", "0"};
    rt_batch *x = one(b.g, 2, xkv), *base = one(b.g, 2, bkv);
    rt_xai_result r[2];
    double attr[2][2];
    r[0].attr = attr[0];
    r[1].attr = attr[1];
    size_t n;
    rt_err err = {{0}};
    rt_xai_params p = rt_xai_default_params();
    p.method = RT_XAI_SAMPLED;
    p.path_count = 51;
    assert_int_equal(rt_xai_explain(b.g, x, 0, base, 0, &p, r, 2, &n, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "pathCount: 51 is out of range [1, 50]"));
    p = rt_xai_default_params();
    p.method = RT_XAI_IG;
    p.step_count = 0;
    assert_int_equal(rt_xai_explain(b.g, x, 0, base, 0, &p, r, 2, &n, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "stepCount: 0 is out of range [1, 100]"));
    p = rt_xai_default_params();
    p.output = RT_XAI_OUT_PROBABILITIES;
    assert_int_equal(rt_xai_explain(b.g, x, 0, base, 0, &p, r, 2, &n, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "no probabilities"));
    p = rt_xai_default_params();
    p.n_output_indices = 1;
    p.output_indices[0] = 1;
    assert_int_equal(rt_xai_explain(b.g, x, 0, base, 0, &p, r, 2, &n, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "outputIndices[0]: 1 is out of range [0, 1)"));
    rt_batch_free(x);
    rt_batch_free(base);
    unbuild(&b);
}

/* Baselines: the spec's export.explanation.baselines (read back from the
 * export's training.spec_json), else the CSV default; and the spec check. */
#define SPEC_BASELINES                                                                          \
    "{\"columns\": [{\"name\": \"x\", \"type\": \"float\", \"default\": 4},"                     \
    "  {\"name\": \"z\", \"type\": \"float\"},"                                                \
    "  {\"name\": \"color\", \"type\": \"string\", \"default\": \"green\"},"                \
    "  {\"name\": \"y\", \"type\": \"string\", \"default\": \"\"}],"                           \
    " \"label\": {\"column\": \"y\", \"vocabulary\": [\"a\", \"b\"]},"                         \
    " \"feature_columns\": ["                                                                   \
    "  {\"type\": \"numeric_column\", \"key\": \"x\"}, {\"type\": \"numeric_column\", \"key\": \"z\"},"\
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"color\","             \
    "   \"vocabulary_list\": [\"red\", \"green\", \"blue\"]}],"                                \
    " \"estimator\": {\"type\": \"LinearClassifier\", \"n_classes\": 2,"                        \
    "  \"feature_columns\": [\"x\", \"z\", \"color\"]},"                                          \
    " \"export\": {\"name\": \"b\", \"explanation\": {\"baselines\": {\"color\": \"blue\"}}}}"

static void test_baselines(void **state)
{
    (void)state;
    Predictd__ModelDef *def = support_spec_modeldef(SPEC_BASELINES);
    assert_non_null(def);
    def->training = malloc(sizeof *def->training);
    assert_non_null(def->training);
    predictd__training_info__init(def->training);
    def->training->spec_json = strdup(SPEC_BASELINES);
    support_tensors st;
    assert_int_equal(support_random_tensors(def, 5, 1.0f, &st), 0);
    char dir[128], path[1024];
    assert_int_equal(support_mkdtemp(dir, sizeof dir), 0);
    assert_true(support_write_export(dir, def, &st, 1, path, sizeof path) > 0);
    rt_model *m = NULL;
    rt_err err = {{0}};
    assert_int_equal(rt_model_open(path, &m, &err), RT_OK);
    rt_batch *b = NULL;
    assert_int_equal(rt_xai_model_baseline(m, &b, &err), RT_OK);
    const rt_graph *g = rt_model_graph(m);
    size_t n;
    const rt_value *v = rt_batch_cell(b, 0, (size_t)rt_graph_find_input(g, "x", 1), &n);
    assert_int_equal(n, 1);
    assert_true(v[0].num == 4.0); /* the CSV default */
    v = rt_batch_cell(b, 0, (size_t)rt_graph_find_input(g, "z", 1), &n);
    assert_true(n == 1 && v[0].str == NULL && v[0].num == 0.0); /* no default: 0 */
    v = rt_batch_cell(b, 0, (size_t)rt_graph_find_input(g, "color", 5), &n);
    assert_true(n == 1 && v[0].len == 4 && memcmp(v[0].str, "blue", 4) == 0); /* the spec's */
    rt_batch_free(b);
    rt_model_close(m);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
    support_rmtree(dir);

    /* the spec check names the key */
    static const char *const bad[][2] = {
        {"{\"colour\": \"red\"}", "export.explanation.baselines.colour: not an input column"},
        {"{\"color\": 3}", "export.explanation.baselines.color: expected a string, got a number"},
        {"{\"x\": \"3\"}", "export.explanation.baselines.x: expected a number, got a string"},
        {"{\"y\": \"a\"}", "export.explanation.baselines.y: not an input column"},
    };
    for (size_t k = 0; k < 4; k++) {
        char spec[4096];
        const char *cut = strstr(SPEC_BASELINES, "{\"color\": \"blue\"}");
        assert_non_null(cut);
        snprintf(spec, sizeof spec, "%.*s%s}}}", (int)(cut - SPEC_BASELINES), SPEC_BASELINES,
                 bad[k][0]);
        struct cJSON *j = NULL;
        assert_int_equal(rt_cfg_parse_json(spec, strlen(spec), &j, &err), RT_OK);
        Predictd__ModelDef *d2 = NULL;
        rt_status s2 = rt_spec_to_modeldef(j, NULL, &d2, &err);
        cJSON_Delete(j);
        rt_spec_modeldef_free(d2);
        assert_int_equal(s2, RT_ERR_INVALID);
        if (!strstr(err.msg, bad[k][1]))
            fail_msg("got \"%s\", want \"%s\"", err.msg, bad[k][1]);
    }
}

/* Several baselines per input (Vertex AI averages the attributions over
 * them): a linear classifier explained on its logit through rt_json_explain
 * gives the mean of w (x - b_k) per numeric input and of the weight
 * differences per categorical one; an input given one value keeps it in
 * every baseline; the baseline output is the mean; counts that differ
 * between inputs are refused by name. */
static double attr_of(const cJSON *a, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(a, "featureAttributions"), name);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_several_baselines_average(void **state)
{
    (void)state;
    Predictd__ModelDef *def = support_spec_modeldef(SPEC_BASELINES);
    assert_non_null(def);
    support_tensors st;
    assert_int_equal(support_random_tensors(def, 9, 1.0f, &st), 0);
    char dir[128], path[1024];
    assert_int_equal(support_mkdtemp(dir, sizeof dir), 0);
    assert_true(support_write_export(dir, def, &st, 1, path, sizeof path) > 0);
    rt_model *m = NULL;
    rt_err err = {{0}};
    assert_int_equal(rt_model_open(path, &m, &err), RT_OK);
    const exp_tensor *tx = support_tensors_find(&st, "linear/linear_model/x/weights");
    const exp_tensor *tz = support_tensors_find(&st, "linear/linear_model/z/weights");
    const exp_tensor *tc = support_tensors_find(&st, "linear/linear_model/color/weights");
    assert_true(tx && tz && tc);
    double wx = ((const float *)tx->data)[0], wz = ((const float *)tz->data)[0];
    const float *wc = (const float *)tc->data; /* red, green, blue */
    const char *body =
        "{\"instances\": [{\"x\": 2, \"z\": 1, \"color\": \"blue\"}],"
        " \"explanationSpecOverride\": {\"metadata\": {\"outputs\": {\"logits\": {}},"
        " \"inputs\": {\"x\": {\"inputBaselines\": [1, -3, 5]},"
        " \"z\": {\"inputBaselines\": [0.5]},"
        " \"color\": {\"inputBaselines\": [\"red\", \"green\", \"red\"]}}}}}";
    rt_json_params jp = rt_json_default_params();
    rt_ctx *c = rt_ctx_new();
    rt_buf out;
    rt_buf_init(&out);
    size_t evals = 0;
    rt_status s = rt_json_explain(m, body, strlen(body), &jp, c, &out, &evals, &err);
    if (s != RT_OK)
        fail_msg("rt_json_explain: %s", err.msg);
    cJSON *doc = cJSON_ParseWithLength(out.data, out.len);
    assert_non_null(doc);
    const cJSON *a = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "explanations"), 0),
            "attributions"),
        0);
    assert_non_null(a);
    double want_x = (wx * (2 - 1) + wx * (2 - -3) + wx * (2 - 5)) / 3;
    double want_z = wz * (1 - 0.5);
    double want_c = ((double)wc[2] - wc[0] + (double)wc[2] - wc[1] + (double)wc[2] - wc[0]) / 3;
    assert_true(fabs(attr_of(a, "x") - want_x) < 1e-5 * (1 + fabs(want_x)));
    assert_true(fabs(attr_of(a, "z") - want_z) < 1e-5 * (1 + fabs(want_z)));
    assert_true(fabs(attr_of(a, "color") - want_c) < 1e-5 * (1 + fabs(want_c)));
    double inst = cJSON_GetObjectItemCaseSensitive(a, "instanceOutputValue")->valuedouble;
    double bout = cJSON_GetObjectItemCaseSensitive(a, "baselineOutputValue")->valuedouble;
    /* complete against the mean baseline output */
    assert_true(fabs(attr_of(a, "x") + attr_of(a, "z") + attr_of(a, "color") - (inst - bout)) <
                1e-5);
    assert_true(cJSON_GetObjectItemCaseSensitive(a, "approximationError")->valuedouble < 1e-5);
    assert_int_equal(evals, 3 * (2 + 8)); /* 3 baselines x (2 ends + 2^3 coalitions) */
    cJSON_Delete(doc);
    /* the cost estimate counts the baselines too */
    size_t rows = 0;
    assert_int_equal(rt_json_explain_rows(m, body, strlen(body), &jp, c, &rows, &err), RT_OK);
    assert_int_equal(rows, 3 * (2 + 8));

    static const char *const bad[][2] = {
        {"{\"x\": {\"inputBaselines\": [1, 2]}, \"color\": {\"inputBaselines\": "
         "[\"red\", \"green\", \"blue\"]}}",
         "explanationSpecOverride.metadata.inputs.color.inputBaselines: 3 values where another "
         "input gives 2"},
        {"{\"x\": {\"inputBaselines\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}}",
         "explanationSpecOverride.metadata.inputs.x.inputBaselines: more than 16 baselines"},
        {"{\"x\": {\"inputBaselines\": []}}",
         "explanationSpecOverride.metadata.inputs.x.inputBaselines: empty list"},
        {"{\"x\": {\"inputBaselines\": [1, \"a\"]}}",
         "explanationSpecOverride.metadata.inputs.x.inputBaselines[1]: expected a finite number"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char b2[1024];
        snprintf(b2, sizeof b2,
                 "{\"instances\": [{\"x\": 2, \"z\": 1, \"color\": \"blue\"}],"
                 " \"explanationSpecOverride\": {\"metadata\": {\"inputs\": %s}}}",
                 bad[k][0]);
        rt_buf_reset(&out);
        assert_int_equal(rt_json_explain(m, b2, strlen(b2), &jp, c, &out, NULL, &err),
                         RT_ERR_INVALID);
        if (!strstr(err.msg, bad[k][1]))
            fail_msg("got \"%s\", want \"%s\"", err.msg, bad[k][1]);
    }
    /* a refused key is named by its path (cut at 40 bytes), every level */
    static const char *const refused[][2] = {
        {"{\"metadata\": {\"inputs\": {\"x\": {\"baselines\": [1]}}}}",
         "explanationSpecOverride.metadata.inputs.x.baselines: unknown key (predictd reads "
         "inputBaselines)"},
        {"{\"parameters\": {\"sampledShapleyAttribution\": {\"pathcount\": 3}}}",
         "explanationSpecOverride.parameters.sampledShapleyAttribution.pathcount: unknown key "
         "(predictd reads pathCount"},
        {"{\"parameters\": {\"exactShapleyAttribution\": {\"pathCount\": 3}}}",
         "explanationSpecOverride.parameters.exactShapleyAttribution.pathCount: unknown key "
         "(predictd reads no key here"},
        {"{\"parameters\": {\"xraiAttribution\": {}}}",
         "explanationSpecOverride.parameters.xraiAttribution: not supported (predictd explains "
         "tabular models: sampledShapleyAttribution, integratedGradientsAttribution, "
         "exactShapleyAttribution, treeShapAttribution)"},
        {"{\"parameters\": {\"topk_with_a_name_longer_than_forty_bytes_indeed\": 1}}",
         "explanationSpecOverride.parameters.topk_with_a_name_longer_than_forty_bytes: unknown key"},
        {"{\"metadata\": {\"output\": {}}}",
         "explanationSpecOverride.metadata.output: unknown key (predictd reads inputs, outputs)"},
        {"{\"metdata\": {}}",
         "explanationSpecOverride.metdata: unknown key (predictd reads parameters, metadata)"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        char b2[1024];
        snprintf(b2, sizeof b2,
                 "{\"instances\": [{\"x\": 2, \"z\": 1, \"color\": \"blue\"}],"
                 " \"explanationSpecOverride\": %s}",
                 refused[k][0]);
        rt_buf_reset(&out);
        assert_int_equal(rt_json_explain(m, b2, strlen(b2), &jp, c, &out, NULL, &err),
                         RT_ERR_INVALID);
        if (strcmp(err.msg, refused[k][1]) != 0)
            fail_msg("got \"%s\", want \"%s\"", err.msg, refused[k][1]);
    }
    rt_buf_free(&out);
    rt_ctx_free(c);
    rt_model_close(m);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
    support_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_known_answer_every_method),
        cmocka_unit_test(test_closed_form_past_16),
        cmocka_unit_test(test_ig_paper_example),
        cmocka_unit_test(test_trees_by_hand),
        cmocka_unit_test(test_treeshap_random_ensembles),
        cmocka_unit_test(test_wide_deep_axioms_and_brute_force),
        cmocka_unit_test(test_symmetry),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_baselines),
        cmocka_unit_test(test_several_baselines_average),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
