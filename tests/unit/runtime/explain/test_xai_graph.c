/* test_xai_graph.c — integrated gradients through a custom model graph
 * (runtime/explain/rt_xai_graph.c, rt_xai_ig.c).
 *
 * 1. A graph over conf/census.json's columns using every node kind (input
 *    layer, linear block, embedding, concat, dense with each of the eleven
 *    activations, activation, batch_norm, dropout, add, multiply): its
 *    path forward (rt_xai_graph_forward) gives rt_forward's logits bit for
 *    bit on real census rows, and the input gradients of rt_xai_graph_backward
 *    (at the DNN input and at the linear node) match central finite
 *    differences of that forward, for a loss L = sum c * logits with random
 *    c. float32 forward: h = 1e-2, checked also at h / 2; a coordinate
 *    whose two quotients disagree straddles a kink (relu's 0, relu6's 6)
 *    and is skipped (at most 2%); otherwise |fd - g| <= 2e-3 (1 + |g|).
 * 2. Integrated gradients of that graph on a census instance against
 *    another: the attributions sum to f(x) - f(baseline) within the canned
 *    IG test's tolerance (approximationError < 0.05 at 100 steps), equal the
 *    reported gap, and an input equal in both gets exactly 0.
 * 3. conf/census_custom.json (the canned wide & deep as a graph) with the
 *    canned conf/census.json model's random tensors: the same
 *    integrated-gradients attributions, within float tolerance.
 * 4. Several heads (TF's MultiHead): conf/census_multitask.json with random
 *    tensors (and with a third, multi-class head over workclass's 9
 *    classes, its two highest explained), each head explained
 *    (rt_xai_params.head) by integrated gradients, exact and sampled
 *    Shapley, on its probabilities or predictions and on its logits, gives
 *    bit for bit what the same spec with that head alone (the other heads
 *    and their logits nodes removed, the same tensors) gives: the values,
 *    output indices and attributions; a head past the last is refused.
 * 5. A multi-label head (TF's MultiLabelHead) over two one-unit logits
 *    nodes with random tensors: class k explained (outputIndices [k]) by
 *    integrated gradients, exact and sampled Shapley, on its probability
 *    and on its logit, gives bit for bit what the same graph with a binary
 *    head on logit k alone gives (its class 1's probability, its logit).
 * Prints the largest relative gradient error and the IG gaps. */
#include <fcntl.h>
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
#include "rt_explain_internal.h"
#include "support_models.h"

/* Every node kind and every activation (the dense a_* nodes). */
static const char *const EVERY =
    "{\"type\": \"Estimator\", \"model\": {"
    " \"inputs\": ["
    "  {\"name\": \"deep\", \"columns\": [\"age\", \"education_num\", \"gender_indicator\","
    "                                \"race_indicator\"]},"
    "  {\"name\": \"wide\", \"type\": \"linear\", \"columns\": [\"gender\", \"age_buckets\","
    "   \"education_x_occupation\"]}],"
    " \"layers\": ["
    "  {\"name\": \"occ\", \"type\": \"embedding\", \"column\": \"occupation_embedding\"},"
    "  {\"name\": \"x\", \"type\": \"concat\", \"inputs\": [\"deep\", \"occ\"]},"
    "  {\"name\": \"a_relu\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"relu\"},"
    "  {\"name\": \"a_relu6\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"relu6\"},"
    "  {\"name\": \"a_elu\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"elu\"},"
    "  {\"name\": \"a_selu\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"selu\"},"
    "  {\"name\": \"a_tanh\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"tanh\"},"
    "  {\"name\": \"a_sigmoid\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"sigmoid\"},"
    "  {\"name\": \"a_softplus\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"softplus\"},"
    "  {\"name\": \"a_leaky\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"leaky_relu\"},"
    "  {\"name\": \"a_gelu\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"gelu\"},"
    "  {\"name\": \"a_swish\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3,"
    "   \"activation\": \"swish\"},"
    "  {\"name\": \"a_linear\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 3},"
    "  {\"name\": \"cat\", \"type\": \"concat\", \"inputs\": [\"a_relu\", \"a_relu6\","
    "   \"a_elu\", \"a_selu\", \"a_tanh\", \"a_sigmoid\", \"a_softplus\", \"a_leaky\","
    "   \"a_gelu\", \"a_swish\", \"a_linear\"]},"
    "  {\"name\": \"h\", \"type\": \"dense\", \"inputs\": [\"cat\"], \"units\": 6},"
    "  {\"name\": \"act\", \"type\": \"activation\", \"inputs\": [\"h\"],"
    "   \"activation\": \"tanh\"},"
    "  {\"name\": \"bn\", \"type\": \"batch_norm\", \"inputs\": [\"act\"]},"
    "  {\"name\": \"drop\", \"type\": \"dropout\", \"inputs\": [\"bn\"], \"rate\": 0.2},"
    "  {\"name\": \"res\", \"type\": \"add\", \"inputs\": [\"drop\", \"h\"]},"
    "  {\"name\": \"gate\", \"type\": \"multiply\", \"inputs\": [\"res\", \"act\", \"h\"]},"
    "  {\"name\": \"dnn_logits\", \"type\": \"dense\", \"inputs\": [\"gate\"], \"units\": 1},"
    "  {\"name\": \"logits\", \"type\": \"add\", \"inputs\": [\"wide\", \"dnn_logits\"]}],"
    " \"heads\": [{\"type\": \"binary_classification\", \"logits\": \"logits\"}]}}";

static const char *root(void)
{
    const char *r = getenv("PREDICTD_ROOT");
    return r ? r : ".";
}

static char *slurp(const char *rel)
{
    char path[4096], *text = NULL;
    snprintf(path, sizeof path, "%s/%s", root(), rel);
    if (rt_file_read(AT_FDCWD, path, 1u << 24, 0, &text, NULL, NULL) != RT_OK)
        fail_msg("cannot read %s", path);
    return text;
}

/* The ModelDef of spec file rel, its estimator replaced by est (NULL: kept). */
static Predictd__ModelDef *modeldef(const char *rel, const char *est)
{
    char *text = slurp(rel);
    cJSON *spec = cJSON_Parse(text);
    free(text);
    assert_non_null(spec);
    if (est) {
        cJSON *e = cJSON_Parse(est);
        assert_non_null(e);
        cJSON_ReplaceItemInObjectCaseSensitive(spec, "estimator", e);
    }
    static const char *const other[] = {"train", "eval", NULL};
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    if (rt_spec_to_modeldef(spec, other, &def, &err) != RT_OK)
        fail_msg("rt_spec_to_modeldef(%s): %s", rel, err.msg);
    cJSON_Delete(spec);
    return def;
}

static rt_graph *build(Predictd__ModelDef *def, support_tensors *st)
{
    rt_graph *g = NULL;
    rt_err err = {{0}};
    if (rt_graph_build(def, support_tensor_lookup, st, NULL, &g, &err) != RT_OK)
        fail_msg("rt_graph_build: %s", err.msg);
    return g;
}

/* Rows of data/census/adult.test.csv (every 31st from the first), as the
 * JSON receiver takes them. */
static const char *const ROWS[] = {
    "{\"age\":38,\"workclass\":\"Private\",\"education\":\"HS-grad\",\"education_num\":9,\"marital_status\":\"Married-civ-spouse\",\"occupation\":\"Farming-fishing\",\"relationship\":\"Husband\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":50,\"native_country\":\"United-States\"}",
    "{\"age\":24,\"workclass\":\"Self-emp-not-inc\",\"education\":\"Bachelors\",\"education_num\":13,\"marital_status\":\"Never-married\",\"occupation\":\"Sales\",\"relationship\":\"Not-in-family\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":50,\"native_country\":\"United-States\"}",
    "{\"age\":33,\"workclass\":\"Private\",\"education\":\"HS-grad\",\"education_num\":9,\"marital_status\":\"Never-married\",\"occupation\":\"Machine-op-inspct\",\"relationship\":\"Own-child\",\"race\":\"White\",\"gender\":\"Female\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"United-States\"}",
    "{\"age\":34,\"workclass\":\"Private\",\"education\":\"Masters\",\"education_num\":14,\"marital_status\":\"Never-married\",\"occupation\":\"Other-service\",\"relationship\":\"Not-in-family\",\"race\":\"Amer-Indian-Eskimo\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"United-States\"}",
    "{\"age\":69,\"workclass\":\"Private\",\"education\":\"HS-grad\",\"education_num\":9,\"marital_status\":\"Divorced\",\"occupation\":\"Adm-clerical\",\"relationship\":\"Not-in-family\",\"race\":\"White\",\"gender\":\"Female\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":25,\"native_country\":\"United-States\"}",
    "{\"age\":26,\"workclass\":\"Local-gov\",\"education\":\"HS-grad\",\"education_num\":9,\"marital_status\":\"Never-married\",\"occupation\":\"Craft-repair\",\"relationship\":\"Not-in-family\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"United-States\"}",
    "{\"age\":23,\"workclass\":\"Private\",\"education\":\"HS-grad\",\"education_num\":9,\"marital_status\":\"Never-married\",\"occupation\":\"Machine-op-inspct\",\"relationship\":\"Not-in-family\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":50,\"native_country\":\"United-States\"}",
    "{\"age\":31,\"workclass\":\"Private\",\"education\":\"Assoc-voc\",\"education_num\":11,\"marital_status\":\"Separated\",\"occupation\":\"Craft-repair\",\"relationship\":\"Not-in-family\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"United-States\"}",
    "{\"age\":44,\"workclass\":\"State-gov\",\"education\":\"HS-grad\",\"education_num\":9,\"marital_status\":\"Married-civ-spouse\",\"occupation\":\"Machine-op-inspct\",\"relationship\":\"Husband\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"United-States\"}",
    "{\"age\":35,\"workclass\":\"Federal-gov\",\"education\":\"HS-grad\",\"education_num\":9,\"marital_status\":\"Married-civ-spouse\",\"occupation\":\"Craft-repair\",\"relationship\":\"Husband\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"United-States\"}",
    "{\"age\":22,\"workclass\":\"Private\",\"education\":\"Some-college\",\"education_num\":10,\"marital_status\":\"Never-married\",\"occupation\":\"Handlers-cleaners\",\"relationship\":\"Own-child\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"United-States\"}",
    "{\"age\":31,\"workclass\":\"Private\",\"education\":\"5th-6th\",\"education_num\":3,\"marital_status\":\"Married-civ-spouse\",\"occupation\":\"Other-service\",\"relationship\":\"Husband\",\"race\":\"White\",\"gender\":\"Male\",\"capital_gain\":0,\"capital_loss\":0,\"hours_per_week\":40,\"native_country\":\"Mexico\"}",
};
#define N_ROWS (sizeof ROWS / sizeof *ROWS)

/* ROWS[k0 .. k0 + n) as a batch; skip: leaving out the columns g does not
 * read (a label of several heads), else each must be an input. */
static rt_batch *census_rows_of(const rt_graph *g, size_t k0, size_t n, bool skip)
{
    rt_batch *bt = rt_batch_new(g);
    assert_non_null(bt);
    assert_true(k0 + n <= N_ROWS);
    for (size_t k = k0; k < k0 + n; k++) {
        cJSON *o = cJSON_Parse(ROWS[k]);
        size_t idx;
        assert_non_null(o);
        assert_int_equal(rt_batch_add(bt, &idx), RT_OK);
        for (cJSON *it = o->child; it; it = it->next) {
            long in = rt_graph_find_input(g, it->string, strlen(it->string));
            if (in < 0 && skip)
                continue;
            assert_true(in >= 0);
            if (cJSON_IsNumber(it))
                assert_int_equal(rt_batch_push_num(bt, idx, (size_t)in, it->valuedouble), RT_OK);
            else
                assert_int_equal(rt_batch_push_str(bt, idx, (size_t)in, it->valuestring,
                                                   strlen(it->valuestring)),
                                 RT_OK);
        }
        cJSON_Delete(o);
    }
    return bt;
}

static rt_batch *census_rows(const rt_graph *g, size_t k0, size_t n)
{
    return census_rows_of(g, k0, n, false);
}

/* Random tensors for def, batch normalization's moving variances made
 * positive (|v| + 0.5). */
static void random_tensors(const Predictd__ModelDef *def, uint64_t seed, float scale,
                           support_tensors *st)
{
    assert_int_equal(support_random_tensors(def, seed, scale, st), 0);
    for (size_t i = 0; i < st->n; i++)
        if (strstr(st->t[i].name, "moving_variance")) {
            float *v = (float *)st->t[i].data;
            for (uint64_t k = 0; k < st->t[i].shape[0]; k++)
                v[k] = fabsf(v[k]) + 0.5f;
        }
}

static long find_node(const rt_graph *g, const char *name)
{
    for (size_t k = 0; k < rt_graph_num_nodes(g); k++) {
        const char *nm;
        rt_graph_node(g, k, NULL, &nm);
        if (strcmp(nm, name) == 0)
            return (long)k;
    }
    return -1;
}

/* ------------------------------------------------- 1. finite differences */

#define P 4
static uint64_t rs = 0x2545F4914F6CDD1Du;

static double urand(double lo, double hi)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return lo + (hi - lo) * ((double)(rs >> 11) / 9007199254740992.0);
}

/* L = sum c * logits of the path forward at z, lin (double). */
static double loss(const rt_graph *g, const float *z, const float *lin, const double *c)
{
    xai_gpath t;
    rt_err err = {{0}};
    assert_int_equal(rt_xai_graph_forward(g, z, lin, P, &t, &err), RT_OK);
    double s = 0.0;
    for (size_t e = 0; e < P * g->logits_dim; e++)
        s += c[e] * (double)t.logits[e];
    rt_xai_graph_free(&t);
    return s;
}

static double worst;
static size_t checked, skipped;

/* Central differences of loss in v[j] (v is z or lin) at h and h / 2
 * against the analytic g. */
static void fd(const rt_graph *g, float *z, float *lin, float *v, size_t n, const double *c,
               const double *an, const char *what)
{
    for (size_t j = 0; j < n; j++) {
        float v0 = v[j];
        double q[2];
        for (int s = 0; s < 2; s++) {
            float h = s ? 5e-3f : 1e-2f;
            v[j] = v0 + h;
            double up = loss(g, z, lin, c);
            v[j] = v0 - h;
            double dn = loss(g, z, lin, c);
            v[j] = v0;
            q[s] = (up - dn) / (double)((v0 + h) - (v0 - h));
        }
        double tol = 2e-3 * (1.0 + fabs(an[j]));
        if (fabs(q[0] - q[1]) > tol) {
            skipped++;
            continue;
        }
        checked++;
        double rel = fabs(q[1] - an[j]) / (1.0 + fabs(an[j]));
        worst = rel > worst ? rel : worst;
        if (fabs(q[1] - an[j]) > tol)
            fail_msg("%s[%zu]: finite difference %.9g, backward %.9g", what, j, q[1], an[j]);
    }
}

static void test_gradients_every_node(void **state)
{
    (void)state;
    Predictd__ModelDef *def = modeldef("conf/census.json", EVERY);
    support_tensors st;
    random_tensors(def, 7, 0.6f, &st);
    rt_graph *g = build(def, &st);
    size_t D = g->dnn_dim, ld = g->logits_dim;
    assert_true(D > 0 && ld == 1 && g->n_linear == 3);

    /* the path forward is rt_forward's arithmetic, bit for bit */
    rt_batch *rows = census_rows(g, 0, P);
    rt_features f;
    rt_workspace *ws = rt_workspace_new();
    float logits[P];
    rt_err err = {{0}};
    rt_transform_features_init(&f);
    assert_int_equal(rt_transform(g, rows, &f, &err), RT_OK);
    assert_int_equal(rt_forward(g, &f, ws, logits, &err), RT_OK);
    long wide = find_node(g, "wide");
    assert_true(wide >= 0);
    const float *lin = rt_workspace_node(ws, (size_t)wide, NULL, NULL);
    xai_gpath t;
    assert_int_equal(rt_xai_graph_forward(g, f.dnn_input, lin, P, &t, &err), RT_OK);
    assert_memory_equal(t.logits, logits, sizeof logits);
    rt_xai_graph_free(&t);

    /* gradients at random points (and at the census rows' DNN inputs) */
    float z[P * 64], l[P];
    double c[P], gz[P * 64], gl[P];
    assert_true(D <= 64);
    for (int round = 0; round < 6; round++) {
        for (size_t e = 0; e < P * D; e++)
            z[e] = round == 0 ? f.dnn_input[e] : (float)urand(-1.5, 1.5);
        for (size_t e = 0; e < P; e++) {
            l[e] = round == 0 ? lin[e] : (float)urand(-1.0, 1.0);
            c[e] = urand(-1.0, 1.0);
        }
        assert_int_equal(rt_xai_graph_forward(g, z, l, P, &t, &err), RT_OK);
        assert_int_equal(rt_xai_graph_backward(&t, c, gz, gl, &err), RT_OK);
        rt_xai_graph_free(&t);
        fd(g, z, l, z, P * D, c, gz, "d L / d DNN input");
        fd(g, z, l, l, P * ld, c, gl, "d L / d linear node");
    }
    print_message("gradients: %zu checked, %zu skipped at kinks, worst relative error %.3g\n",
                  checked, skipped, worst);
    assert_true(skipped * 50 <= checked + skipped);
    rt_workspace_free(ws);
    rt_transform_features_free(&f);
    rt_batch_free(rows);
    rt_graph_free(g);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
}

/* --------------------------------------------------------- 2. completeness */

#define MAXIN 32
typedef struct answer {
    rt_xai_result r[2];
    double attr[2][MAXIN];
    size_t n;
} answer;

static void explain_ig(const rt_graph *g, rt_batch *x, rt_batch *b, answer *a)
{
    memset(a, 0, sizeof *a);
    for (size_t j = 0; j < 2; j++)
        a->r[j].attr = a->attr[j];
    rt_xai_params p = rt_xai_default_params();
    p.method = RT_XAI_IG;
    p.step_count = 100;
    p.top_k = -1;
    rt_err err = {{0}};
    assert_true(rt_graph_num_inputs(g) <= MAXIN);
    if (rt_xai_explain(g, x, 0, b, 0, &p, a->r, 2, &a->n, &err) != RT_OK)
        fail_msg("rt_xai_explain: %s", err.msg);
}

static void check_complete(const rt_graph *g, const answer *a, const char *what)
{
    size_t n_in = rt_graph_num_inputs(g);
    assert_int_equal(a->n, 2);
    for (size_t j = 0; j < a->n; j++) {
        double s = 0.0;
        for (size_t i = 0; i < n_in; i++)
            s += a->attr[j][i];
        double delta = (double)a->r[j].instance_value - (double)a->r[j].baseline_value;
        double gap = fabs(s - delta);
        print_message("%s: output %zu: sum %.6f, f(x) - f(b) %.6f, approximationError %.3g\n",
                      what, a->r[j].output_index, s, delta, a->r[j].approx_error);
        assert_true(fabs(delta) > 1e-3);
        assert_true(fabs(gap / fabs(delta) - a->r[j].approx_error) < 1e-9);
        assert_true(a->r[j].approx_error < 0.05);
    }
}

static void test_ig_complete_every_node(void **state)
{
    (void)state;
    Predictd__ModelDef *def = modeldef("conf/census.json", EVERY);
    support_tensors st;
    random_tensors(def, 7, 0.6f, &st);
    rt_graph *g = build(def, &st);
    rt_batch *x = census_rows(g, 1, 1), *b = census_rows(g, 4, 1);
    answer a;
    explain_ig(g, x, b, &a);
    check_complete(g, &a, "every node kind");
    /* dummy: capital_gain is 0 in both rows, native_country equal (and not read) */
    long cg = rt_graph_find_input(g, "capital_gain", 12);
    long nc = rt_graph_find_input(g, "native_country", 14);
    assert_true(cg >= 0 && nc >= 0);
    for (size_t j = 0; j < 2; j++)
        assert_true(a.attr[j][cg] == 0.0 && a.attr[j][nc] == 0.0);
    rt_batch_free(x);
    rt_batch_free(b);
    rt_graph_free(g);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
}

/* ------------------------------- 3. the canned wide & deep as a graph */

static void test_custom_equals_canned(void **state)
{
    (void)state;
    Predictd__ModelDef *cdef = modeldef("conf/census.json", NULL);
    Predictd__ModelDef *gdef = modeldef("conf/census_custom.json", NULL);
    support_tensors st;
    random_tensors(cdef, 3, 0.3f, &st);
    rt_graph *canned = build(cdef, &st), *graph = build(gdef, &st); /* the same tensors */
    assert_true(rt_graph_num_nodes(graph) > 0 && rt_graph_num_nodes(canned) == 0);
    size_t n_in = rt_graph_num_inputs(canned);
    assert_int_equal(n_in, rt_graph_num_inputs(graph));
    double worst_diff = 0.0;
    for (size_t k = 0; k < 3; k++) {
        rt_batch *xc = census_rows(canned, 5 + k, 1), *bc = census_rows(canned, 9 + k, 1);
        rt_batch *xg = census_rows(graph, 5 + k, 1), *bg = census_rows(graph, 9 + k, 1);
        answer ac, ag;
        explain_ig(canned, xc, bc, &ac);
        explain_ig(graph, xg, bg, &ag);
        check_complete(graph, &ag, "census_custom.json");
        assert_int_equal(ac.n, ag.n);
        for (size_t j = 0; j < ac.n; j++) {
            assert_int_equal(ac.r[j].output_index, ag.r[j].output_index);
            assert_true(ac.r[j].instance_value == ag.r[j].instance_value);
            assert_true(ac.r[j].baseline_value == ag.r[j].baseline_value);
            for (size_t i = 0; i < n_in; i++) {
                const char *nm = rt_graph_input_name(canned, i);
                long gi = rt_graph_find_input(graph, nm, strlen(nm));
                assert_true(gi >= 0);
                double d = fabs(ac.attr[j][i] - ag.attr[j][gi]);
                worst_diff = d > worst_diff ? d : worst_diff;
                if (d > 1e-6 * (1.0 + fabs(ac.attr[j][i])))
                    fail_msg("%s: canned %.9g, graph %.9g", nm, ac.attr[j][i], ag.attr[j][gi]);
            }
        }
        rt_batch_free(xc);
        rt_batch_free(bc);
        rt_batch_free(xg);
        rt_batch_free(bg);
    }
    print_message("census_custom.json against the canned wide & deep: largest attribution "
                  "difference %.3g\n",
                  worst_diff);
    rt_graph_free(canned);
    rt_graph_free(graph);
    support_tensors_free(&st);
    rt_spec_modeldef_free(cdef);
    rt_spec_modeldef_free(gdef);
}

/* ------------------------------------------------------ 4. several heads */

/* Deletes the items of array a whose member key (NULL: the item itself, a
 * string) is the string v. */
static void drop_items(cJSON *a, const char *key, const char *v)
{
    for (int k = cJSON_GetArraySize(a); k-- > 0;) {
        cJSON *it = cJSON_GetArrayItem(a, k);
        const char *s = cJSON_GetStringValue(key ? cJSON_GetObjectItem(it, key) : it);
        if (s && strcmp(s, v) == 0)
            cJSON_DeleteItemFromArray(a, k);
    }
}

/* A third head, multi-class: workclass's 9 classes from its own dense node
 * over h3 (workclass then no feature: a head's label is not read). */
static void add_workclass_head(cJSON *spec, cJSON *model)
{
    cJSON *fcs = cJSON_GetObjectItem(spec, "feature_columns");
    drop_items(fcs, "key", "workclass");
    drop_items(fcs, "name", "workclass_indicator");
    drop_items(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(model, "inputs"), 0),
                                   "columns"),
               NULL, "workclass_indicator");
    cJSON_AddItemToArray(cJSON_GetObjectItem(model, "layers"),
                         cJSON_Parse("{\"name\": \"wc_logits\", \"type\": \"dense\", "
                                     "\"inputs\": [\"h3\"], \"units\": 9}"));
    cJSON_AddItemToArray(
        cJSON_GetObjectItem(model, "heads"),
        cJSON_Parse("{\"name\": \"workclass\", \"type\": \"multi_class_classification\", "
                    "\"n_classes\": 9, \"logits\": \"wc_logits\", \"label\": {\"column\": "
                    "\"workclass\", \"vocabulary\": [\"Self-emp-not-inc\", \"Private\", "
                    "\"State-gov\", \"Federal-gov\", \"Local-gov\", \"?\", \"Self-emp-inc\", "
                    "\"Without-pay\", \"Never-worked\"]}}"));
}

/* conf/census_multitask.json's ModelDef (three: with a third, multi-class
 * head, add_workclass_head), or with only head `only` (the other heads and
 * their logits nodes removed, their label columns unused, the kept head's
 * label the spec's as one head has it). */
static Predictd__ModelDef *multitask_def(bool three, int only)
{
    char *text = slurp("conf/census_multitask.json");
    cJSON *spec = cJSON_Parse(text);
    free(text);
    assert_non_null(spec);
    cJSON *model = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "estimator"), "model");
    cJSON *heads = cJSON_GetObjectItem(model, "heads");
    cJSON *layers = cJSON_GetObjectItem(model, "layers");
    if (three)
        add_workclass_head(spec, model);
    if (only >= 0) {
        for (int h = cJSON_GetArraySize(heads); h-- > 0;) {
            if (h == only)
                continue;
            cJSON *other = cJSON_GetArrayItem(heads, h);
            const char *node = cJSON_GetStringValue(cJSON_GetObjectItem(other, "logits"));
            const char *label = cJSON_GetStringValue(
                cJSON_GetObjectItem(cJSON_GetObjectItem(other, "label"), "column"));
            assert_non_null(node);
            assert_non_null(label);
            cJSON_AddItemToArray(cJSON_GetObjectItem(spec, "unused_columns"),
                                 cJSON_CreateString(label));
            drop_items(layers, "name", node);
            cJSON_DeleteItemFromArray(heads, h);
        }
        /* one head: its label the spec's, no name or loss weight (several heads' fields) */
        cJSON *kept = cJSON_GetArrayItem(heads, 0);
        cJSON_AddItemToObject(spec, "label", cJSON_DetachItemFromObject(kept, "label"));
        cJSON_DeleteItemFromObject(kept, "name");
        cJSON_DeleteItemFromObject(kept, "loss_weight");
    }
    static const char *const other[] = {"train", "eval", NULL};
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    if (rt_spec_to_modeldef(spec, other, &def, &err) != RT_OK)
        fail_msg("rt_spec_to_modeldef(census_multitask, head %d): %s", only, err.msg);
    cJSON_Delete(spec);
    return def;
}

/* Head h of multi (p.head = h) and the one-head graph one explained alike:
 * the same bits. */
static void same_as_one_head(const rt_graph *multi, size_t h, const rt_graph *one,
                             rt_xai_params p, const char *what)
{
    size_t n_in = rt_graph_num_inputs(one);
    assert_int_equal(n_in, rt_graph_num_inputs(multi));
    assert_true(n_in <= MAXIN);
    for (size_t k = 0; k < 3; k++) {
        rt_batch *xm = census_rows_of(multi, 1 + k, 1, true), *bm = census_rows_of(multi, 6 + k, 1, true);
        rt_batch *xo = census_rows_of(one, 1 + k, 1, true), *bo = census_rows_of(one, 6 + k, 1, true);
        answer am, ao;
        memset(&am, 0, sizeof am);
        memset(&ao, 0, sizeof ao);
        for (size_t j = 0; j < 2; j++) {
            am.r[j].attr = am.attr[j];
            ao.r[j].attr = ao.attr[j];
        }
        rt_err err = {{0}};
        rt_xai_params pm = p, po = p;
        pm.head = h;
        po.head = 0;
        if (rt_xai_explain(multi, xm, 0, bm, 0, &pm, am.r, 2, &am.n, &err) != RT_OK ||
            rt_xai_explain(one, xo, 0, bo, 0, &po, ao.r, 2, &ao.n, &err) != RT_OK)
            fail_msg("%s: rt_xai_explain: %s", what, err.msg);
        assert_int_equal(am.n, ao.n);
        assert_true(am.n >= 1);
        for (size_t j = 0; j < am.n; j++) {
            assert_int_equal(am.r[j].output_index, ao.r[j].output_index);
            assert_true(am.r[j].instance_value == ao.r[j].instance_value);
            assert_true(am.r[j].baseline_value == ao.r[j].baseline_value);
            for (size_t i = 0; i < n_in; i++)
                if (am.attr[j][i] != ao.attr[j][i])
                    fail_msg("%s: instance %zu output %zu input %s: several heads %.17g, one "
                             "head %.17g", what, k, am.r[j].output_index,
                             rt_graph_input_name(one, i), am.attr[j][i], ao.attr[j][i]);
            if (k == 0 && j == 0)
                print_message("%s: output %zu, %.7g at the instance, %.7g at the baseline, "
                              "approximationError %.3g\n", what, am.r[j].output_index,
                              (double)am.r[j].instance_value, (double)am.r[j].baseline_value,
                              am.r[j].approx_error);
        }
        rt_batch_free(xm);
        rt_batch_free(bm);
        rt_batch_free(xo);
        rt_batch_free(bo);
    }
}

/* Each head of conf/census_multitask.json (three: and a multi-class third)
 * explained as its one-head spec. */
static void several_heads(bool three)
{
    Predictd__ModelDef *mdef = multitask_def(three, -1);
    support_tensors st;
    random_tensors(mdef, 11, 0.4f, &st);
    rt_graph *multi = build(mdef, &st);
    assert_non_null(rt_graph_head_view(multi, 1, NULL));
    static const char *const names[] = {"income_bracket", "hours_per_week", "workclass"};
    size_t nh = three ? 3 : 2;
    assert_null(rt_graph_head_view(multi, nh, NULL));
    for (size_t h = 0; h < nh; h++) {
        Predictd__ModelDef *odef = multitask_def(three, (int)h);
        rt_graph *one = build(odef, &st); /* the same tensors, by name */
        assert_null(rt_graph_head_view(one, 0, NULL));
        const char *hn = NULL;
        assert_non_null(rt_graph_head_view(multi, h, &hn));
        assert_string_equal(hn, names[h]);
        static const rt_xai_method methods[] = {RT_XAI_IG, RT_XAI_EXACT, RT_XAI_SAMPLED};
        static const char *const mnames[] = {"integrated gradients", "exact Shapley",
                                             "sampled Shapley"};
        for (size_t m = 0; m < 3; m++)
            for (int logits = 0; logits < 2; logits++) {
                rt_xai_params p = rt_xai_default_params();
                p.method = methods[m];
                p.step_count = 100;
                p.top_k = -1;
                p.output = logits ? RT_XAI_OUT_LOGITS : RT_XAI_OUT_DEFAULT;
                char what[160];
                snprintf(what, sizeof what, "head %s, %s of its %s", names[h], mnames[m],
                         logits ? "logits" : h == 1 ? "predictions" : "probabilities");
                same_as_one_head(multi, h, one, p, what);
            }
        rt_graph_free(one);
        rt_spec_modeldef_free(odef);
    }
    /* a head past the last, and a head of a one-head model, are refused by name */
    rt_batch *x = census_rows_of(multi, 1, 1, true), *b = census_rows_of(multi, 6, 1, true);
    answer a;
    memset(&a, 0, sizeof a);
    a.r[0].attr = a.attr[0];
    rt_xai_params p = rt_xai_default_params();
    p.head = nh;
    rt_err err = {{0}};
    char want[64];
    snprintf(want, sizeof want, "head: %zu is out of range [0, %zu)", nh, nh);
    assert_int_equal(rt_xai_explain(multi, x, 0, b, 0, &p, a.r, 1, &a.n, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, want));
    rt_batch_free(x);
    rt_batch_free(b);
    rt_graph_free(multi);
    support_tensors_free(&st);
    rt_spec_modeldef_free(mdef);
}

static void test_several_heads(void **state)
{
    (void)state;
    several_heads(false);
}

static void test_several_heads_multi_class(void **state)
{
    (void)state;
    several_heads(true);
}

/* -------------------------------------------------- 5. a multi-label head */

/* A multi-label head (TF's MultiLabelHead) over the logits node "ml", the
 * concat of two one-unit dense nodes z0 and z1 (the label's 2 classes);
 * mlabel_spec(k) is the same graph with a binary head on z<k> alone (ml and
 * the other z removed). */
static const char *mlabel_spec(int k)
{
    static char buf[2048];
    snprintf(
        buf, sizeof buf,
        "{\"type\": \"Estimator\", \"model\": {"
        " \"inputs\": [{\"name\": \"deep\", \"columns\": [\"age\", \"education_num\","
        "  \"gender_indicator\", \"race_indicator\"]}],"
        " \"layers\": ["
        "  {\"name\": \"occ\", \"type\": \"embedding\", \"column\": \"occupation_embedding\"},"
        "  {\"name\": \"x\", \"type\": \"concat\", \"inputs\": [\"deep\", \"occ\"]},"
        "  {\"name\": \"h\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 8,"
        "   \"activation\": \"tanh\"}%s%s%s],"
        " \"heads\": [{\"type\": \"%s\"%s, \"logits\": \"%s\"}]}}",
        k != 1 ? ", {\"name\": \"z0\", \"type\": \"dense\", \"inputs\": [\"h\"], \"units\": 1}"
               : "",
        k != 0 ? ", {\"name\": \"z1\", \"type\": \"dense\", \"inputs\": [\"h\"], \"units\": 1}"
               : "",
        k < 0 ? ", {\"name\": \"ml\", \"type\": \"concat\", \"inputs\": [\"z0\", \"z1\"]}" : "",
        k < 0 ? "multi_label_classification" : "binary_classification",
        k < 0 ? ", \"n_classes\": 2" : "", k < 0 ? "ml" : k ? "z1" : "z0");
    return buf;
}

/* Class k of the multi-label graph ml (outputIndices [k]) and the binary
 * graph bin of logit k (its class 1, or its one logit) explained alike: the
 * same bits. */
static void mlabel_as_binary(const rt_graph *ml, const rt_graph *bin, size_t k, rt_xai_params p,
                             bool logits, const char *what)
{
    size_t n_in = rt_graph_num_inputs(ml);
    assert_int_equal(n_in, rt_graph_num_inputs(bin));
    assert_true(n_in <= MAXIN);
    for (size_t i = 0; i < 3; i++) {
        rt_batch *x = census_rows(ml, 1 + i, 1), *b = census_rows(ml, 6 + i, 1);
        answer am, ab;
        memset(&am, 0, sizeof am);
        memset(&ab, 0, sizeof ab);
        am.r[0].attr = am.attr[0];
        ab.r[0].attr = ab.attr[0];
        rt_xai_params pm = p, pb = p;
        pm.n_output_indices = pb.n_output_indices = 1;
        pm.output_indices[0] = k;
        pb.output_indices[0] = logits ? 0 : 1;
        rt_err err = {{0}};
        if (rt_xai_explain(ml, x, 0, b, 0, &pm, am.r, 1, &am.n, &err) != RT_OK ||
            rt_xai_explain(bin, x, 0, b, 0, &pb, ab.r, 1, &ab.n, &err) != RT_OK)
            fail_msg("%s: rt_xai_explain: %s", what, err.msg);
        assert_int_equal(am.n, 1);
        assert_int_equal(ab.n, 1);
        assert_int_equal(am.r[0].output_index, k);
        assert_true(am.r[0].instance_value == ab.r[0].instance_value);
        assert_true(am.r[0].baseline_value == ab.r[0].baseline_value);
        assert_true(am.r[0].instance_value != am.r[0].baseline_value);
        for (size_t j = 0; j < n_in; j++)
            if (am.attr[0][j] != ab.attr[0][j])
                fail_msg("%s: instance %zu input %s: multi-label %.17g, binary %.17g", what, i,
                         rt_graph_input_name(ml, j), am.attr[0][j], ab.attr[0][j]);
        if (i == 0)
            print_message("%s: %.7g at the instance, %.7g at the baseline, "
                          "approximationError %.3g\n", what, (double)am.r[0].instance_value,
                          (double)am.r[0].baseline_value, am.r[0].approx_error);
        rt_batch_free(x);
        rt_batch_free(b);
    }
}

static void test_multi_label(void **state)
{
    (void)state;
    Predictd__ModelDef *mdef = modeldef("conf/census.json", mlabel_spec(-1));
    support_tensors st;
    random_tensors(mdef, 13, 0.6f, &st);
    rt_graph *ml = build(mdef, &st);
    assert_int_equal(rt_graph_head(ml), PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL);
    static const rt_xai_method methods[] = {RT_XAI_IG, RT_XAI_EXACT, RT_XAI_SAMPLED};
    static const char *const mnames[] = {"integrated gradients", "exact Shapley",
                                         "sampled Shapley"};
    for (size_t k = 0; k < 2; k++) {
        Predictd__ModelDef *bdef = modeldef("conf/census.json", mlabel_spec((int)k));
        rt_graph *bin = build(bdef, &st); /* the same tensors, by name */
        assert_int_equal(rt_graph_head(bin), PREDICTD__HEAD_TYPE__HEAD_BINARY);
        for (size_t m = 0; m < 3; m++)
            for (int logits = 0; logits < 2; logits++) {
                rt_xai_params p = rt_xai_default_params();
                p.method = methods[m];
                p.step_count = 100;
                p.output = logits ? RT_XAI_OUT_LOGITS : RT_XAI_OUT_PROBABILITIES;
                char what[160];
                snprintf(what, sizeof what, "multi-label class %zu, %s of its %s", k,
                         mnames[m], logits ? "logit" : "probability");
                mlabel_as_binary(ml, bin, k, p, logits, what);
            }
        rt_graph_free(bin);
        rt_spec_modeldef_free(bdef);
    }
    rt_graph_free(ml);
    support_tensors_free(&st);
    rt_spec_modeldef_free(mdef);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients_every_node),
        cmocka_unit_test(test_ig_complete_every_node),
        cmocka_unit_test(test_custom_equals_canned),
        cmocka_unit_test(test_several_heads),
        cmocka_unit_test(test_several_heads_multi_class),
        cmocka_unit_test(test_multi_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
