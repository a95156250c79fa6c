/* test_trn_grad.c — backprop against finite differences.
 *
 * For each model kind (linear, DNN, wide & deep; binary, multi-class,
 * regression; relu, tanh, sigmoid, elu) and each column kind (numeric with
 * shape and normalizer, bucketized, vocabulary list with OOV buckets, hash
 * bucket, crossed on raw keys and on a column, indicator in the linear and
 * the DNN part, embeddings with the mean, sum and sqrtn combiners over
 * multi-valued cells), every gradient element of every tensor the batch
 * touches (and a sample of untouched ones) is compared with the central
 * difference (L(w + h) - L(w - h)) / 2h of the loss computed by the serving
 * forward pass. Parameters are randomized first so no gradient is trivially
 * zero. */
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

#include "trn_internal.h"

#define N 12

static const char *words[] = {"red", "green", "blue", "cyan", "unknown-word", "x", "yy"};

static const char *COLUMNS =
    "\"columns\": [{\"name\": \"a\", \"type\": \"float\", \"default\": 0},"
    "{\"name\": \"b\", \"type\": \"float\", \"default\": 0},"
    "{\"name\": \"color\", \"type\": \"string\", \"default\": \"\"},"
    "{\"name\": \"tag\", \"type\": \"string\", \"default\": \"\"},"
    "{\"name\": \"y\", \"type\": \"%s\", \"default\": %s}],";

static const char *FEATURES =
    "\"feature_columns\": ["
    "{\"type\": \"numeric_column\", \"key\": \"a\"},"
    "{\"type\": \"numeric_column\", \"key\": \"b\", \"normalizer\": {\"mean\": 0.5, \"std\": 2}},"
    "{\"type\": \"bucketized_column\", \"name\": \"a_b\", \"source\": \"a\","
    " \"boundaries\": [-1, 0, 1]},"
    "{\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"color\","
    " \"vocabulary_list\": [\"red\", \"green\", \"blue\"], \"num_oov_buckets\": 2},"
    "{\"type\": \"categorical_column_with_hash_bucket\", \"key\": \"tag\","
    " \"hash_bucket_size\": 7},"
    "{\"type\": \"crossed_column\", \"name\": \"cx\", \"keys\": [\"color\", \"tag\"],"
    " \"hash_bucket_size\": 13},"
    "{\"type\": \"crossed_column\", \"name\": \"cy\", \"keys\": [{\"column\": \"a_b\"}, \"tag\"],"
    " \"hash_bucket_size\": 11},"
    "{\"type\": \"indicator_column\", \"name\": \"color_ind\", \"categorical_column\": \"color\"},"
    "{\"type\": \"indicator_column\", \"name\": \"tag_ind\", \"categorical_column\": \"tag\"},"
    "{\"type\": \"embedding_column\", \"name\": \"tag_mean\", \"categorical_column\": \"tag\","
    " \"dimension\": 3, \"combiner\": \"mean\"},"
    "{\"type\": \"embedding_column\", \"name\": \"tag_sum\", \"categorical_column\": \"tag\","
    " \"dimension\": 2, \"combiner\": \"sum\"},"
    "{\"type\": \"embedding_column\", \"name\": \"color_sqrtn\", \"categorical_column\": \"color\","
    " \"dimension\": 4, \"combiner\": \"sqrtn\"}],";

/* Columns and features for the identity, weighted and shared kinds: an int
 * k (values -1..4: -1 dropped, 4 out of range -> default 3) and weights w
 * in [-2, 2] (those <= 0 pruned from the linear part and embeddings, kept
 * in the indicator); a_b (4 buckets) weighted by w; two shared tables. */
static const char *KIND_COLUMNS =
    "\"columns\": [{\"name\": \"a\", \"type\": \"float\", \"default\": 0},"
    "{\"name\": \"k\", \"type\": \"int\", \"default\": 0},"
    "{\"name\": \"w\", \"type\": \"float\", \"default\": 1},"
    "{\"name\": \"y\", \"type\": \"string\", \"default\": \"\"}],";
static const char *KIND_FEATURES =
    "\"feature_columns\": ["
    "{\"type\": \"numeric_column\", \"key\": \"a\"},"
    "{\"type\": \"bucketized_column\", \"name\": \"a_b\", \"source\": \"a\","
    " \"boundaries\": [-1, 0, 1]},"
    "{\"type\": \"categorical_column_with_identity\", \"key\": \"k\", \"num_buckets\": 4,"
    " \"default_value\": 3},"
    "{\"type\": \"weighted_categorical_column\", \"categorical_column\": \"k\","
    " \"weight_feature_key\": \"w\"},"
    "{\"type\": \"weighted_categorical_column\", \"categorical_column\": \"a_b\","
    " \"weight_feature_key\": \"w\"},"
    "{\"type\": \"indicator_column\", \"categorical_column\": \"k_weighted_by_w\"},"
    "{\"type\": \"shared_embedding_columns\", \"categorical_columns\": [\"k\","
    " \"k_weighted_by_w\"], \"dimension\": 3},"
    "{\"type\": \"shared_embedding_columns\", \"categorical_columns\": [\"a_b\","
    " \"a_b_weighted_by_w\"], \"dimension\": 2, \"combiner\": \"sqrtn\","
    " \"shared_embedding_collection_name\": \"ab_shared\"}],";

/* Builds a spec from the shared columns/features and an estimator. */
static cJSON *make_spec(int regression, const char *label, const char *estimator)
{
    char buf[8192];
    char cols[1024];
    snprintf(cols, sizeof cols, COLUMNS, regression ? "float" : "string",
             regression ? "0" : "\"\"");
    snprintf(buf, sizeof buf, "{%s \"label\": %s, %s \"estimator\": %s}", cols, label, FEATURES,
             estimator);
    cJSON *s = cJSON_Parse(buf);
    if (!s)
        fail_msg("bad test spec JSON: %s", buf);
    return s;
}

typedef struct fixture {
    cJSON *spec;
    Predictd__ModelDef *def;
    trn_model *m;
    rt_batch *b;
    float labels[N * 4]; /* N x label values */
    float *weights;      /* NULL, or wbuf: example weights */
    float wbuf[N];
    int train;           /* the loss of the training forward (batch norm, dropout) */
} fixture;

static void fixture_free(fixture *fx)
{
    rt_batch_free(fx->b);
    trn_model_free(fx->m);
    rt_spec_modeldef_free(fx->def);
    cJSON_Delete(fx->spec);
}

/* The model of spec with random parameters (from seed) and rows [lo, hi)
 * of a random batch of N rows (the same rows for the same seed). */
static void build_rows(fixture *fx, cJSON *spec, uint64_t seed, size_t lo, size_t hi)
{
    static const char *const mine[] = {"train", "eval", NULL};
    rt_err err;
    memset(fx, 0, sizeof *fx);
    fx->spec = spec;
    rt_status st = rt_spec_to_modeldef(spec, mine, &fx->def, &err);
    if (st)
        fail_msg("spec: %s", err.msg);
    trn_config c;
    trn_config_init(&c);
    assert_int_equal(trn_config_from_spec(spec, &c, &err), RT_OK);
    assert_int_equal(trn_config_resolve(&c, fx->def, &err), RT_OK);
    st = trn_model_new(fx->def, &c, seed, &fx->m, &err);
    if (st)
        fail_msg("model: %s", err.msg);
    trn_config_free(&c);

    /* random parameters, a random batch with multi-valued string cells */
    trn_rng r;
    trn_rng_seed(&r, seed + 1);
    for (size_t i = 0; i < trn_model_num_params(fx->m); i++) {
        trn_param_view v;
        trn_model_param(fx->m, i, &v);
        for (uint64_t k = 0; k < v.count; k++)
            v.data[k] = (float)(trn_rng_uniform(&r) - 0.5);
        if (strstr(v.name, "moving_variance")) /* a variance is >= 0 */
            for (uint64_t k = 0; k < v.count; k++)
                v.data[k] += 1.0f;
    }
    const rt_graph *g = trn_model_graph(fx->m);
    long k_input = rt_graph_find_input(g, "k", 1);
    fx->b = rt_batch_new(g);
    assert_non_null(fx->b);
    size_t nclass = fx->def->head->n_classes;
    for (size_t i = 0; i < N; i++) {
        int keep = i >= lo && i < hi;
        size_t idx = 0;
        if (keep)
            assert_int_equal(rt_batch_add(fx->b, &idx), RT_OK);
        for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
            if (rt_graph_input_dtype(g, in) == PREDICTD__DTYPE__DT_FLOAT) {
                double x = 4.0 * trn_rng_uniform(&r) - 2.0;
                if ((long)in == k_input) /* identity ids: -1..4 */
                    x = (double)trn_rng_below(&r, 6) - 1.0;
                if (keep)
                    assert_int_equal(rt_batch_push_num(fx->b, idx, in, x), RT_OK);
            } else {
                size_t nv = 1 + (size_t)trn_rng_below(&r, 3); /* 1..3 values */
                for (size_t k = 0; k < nv; k++) {
                    const char *w = words[trn_rng_below(&r, 7)];
                    if (keep)
                        assert_int_equal(rt_batch_push_str(fx->b, idx, in, w, strlen(w)),
                                         RT_OK);
                }
            }
        }
        int regression = fx->def->head->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
        size_t ls = regression ? fx->def->head->label_dimension : 1;
        assert_true(ls <= 4);
        for (size_t j = 0; j < ls; j++) {
            float y = regression ? (float)(3.0 * trn_rng_uniform(&r) - 1.0)
                                 : (float)trn_rng_below(&r, nclass);
            if (keep)
                fx->labels[(i - lo) * ls + j] = y;
        }
    }
}

static void build(fixture *fx, cJSON *spec, uint64_t seed)
{
    build_rows(fx, spec, seed, 0, N);
}

static double loss_at(fixture *fx)
{
    double l;
    rt_err err;
    rt_status st = fx->train
                       ? trn_model_train_loss(fx->m, fx->b, fx->labels, fx->weights, &l, &err)
                       : trn_model_loss(fx->m, fx->b, fx->labels, fx->weights, &l, NULL, &err);
    if (st)
        fail_msg("loss: %s", err.msg);
    return l;
}

/* Compares every nonzero gradient element, and a sample of zero ones, with
 * central differences. Returns the number of elements checked. */
static size_t check_gradients(fixture *fx, double h, double atol, double rtol)
{
    rt_err err;
    double l0;
    rt_status st = trn_model_gradients(fx->m, fx->b, fx->labels, fx->weights, &l0, &err);
    if (st)
        fail_msg("gradients: %s", err.msg);
    if (fx->m->dropout > 0 || fx->m->n_nodes > 0)
        fx->m->drop_reuse = 1; /* the finite differences use the same masks */
    size_t checked = 0, nonzero = 0;
    for (size_t i = 0; i < trn_model_num_params(fx->m); i++) {
        trn_param_view v;
        trn_model_param(fx->m, i, &v);
        if (fx->m->p[i].kind == TP_BN_MOVING)
            continue; /* not a function of the loss: moved by the forward pass */
        float *g = malloc(v.count * sizeof(float));
        assert_non_null(g);
        memcpy(g, v.grad, v.count * sizeof(float));
        size_t tensor_nonzero = 0;
        for (uint64_t k = 0; k < v.count; k++) {
            int sample = g[k] != 0.0f || k % 17 == 0;
            if (!sample)
                continue;
            float w = v.data[k];
            v.data[k] = (float)(w + h);
            double lp = loss_at(fx);
            v.data[k] = (float)(w - h);
            double lm = loss_at(fx);
            v.data[k] = w;
            double fd = (lp - lm) / (2.0 * h);
            if (fabs(fd - g[k]) > atol + rtol * fabs(fd))
                fail_msg("%s[%llu]: backprop %.6g, finite difference %.6g", v.name,
                         (unsigned long long)k, (double)g[k], fd);
            checked++;
            tensor_nonzero += g[k] != 0.0f;
        }
        if (tensor_nonzero == 0)
            fail_msg("%s: no nonzero gradient (test batch too small?)", v.name);
        nonzero += tensor_nonzero;
        free(g);
    }
    assert_true(nonzero > 0);
    return checked;
}

static const char *BIN_LABEL = "{\"column\": \"y\", \"vocabulary\": [\"red\", \"blue\"]}";
static const char *MULTI_LABEL =
    "{\"column\": \"y\", \"vocabulary\": [\"red\", \"green\", \"blue\"]}";
static const char *REG_LABEL = "{\"column\": \"y\"}";

static void test_linear_binary(void **state)
{
    (void)state;
    fixture fx;
    build(&fx,
          make_spec(0, BIN_LABEL,
                    "{\"type\": \"LinearClassifier\", \"feature_columns\": [\"a\", \"b\", "
                    "\"a_b\", \"color\", \"tag\", \"cx\", \"cy\", \"color_ind\"]}"),
          11);
    assert_true(check_gradients(&fx, 1e-2, 2e-4, 1e-2) > 10);
    fixture_free(&fx);
}

static void test_linear_multiclass(void **state)
{
    (void)state;
    fixture fx;
    build(&fx,
          make_spec(0, MULTI_LABEL,
                    "{\"type\": \"LinearClassifier\", \"n_classes\": 3, \"feature_columns\": "
                    "[\"a\", \"a_b\", \"color\", \"tag\", \"cx\", \"tag_ind\"]}"),
          12);
    assert_true(check_gradients(&fx, 1e-2, 2e-4, 1e-2) > 10);
    fixture_free(&fx);
}

static void test_dnn_multiclass_tanh(void **state)
{
    (void)state;
    fixture fx;
    build(&fx,
          make_spec(0, MULTI_LABEL,
                    "{\"type\": \"DNNClassifier\", \"n_classes\": 3, \"hidden_units\": [6, 5],"
                    " \"activation_fn\": \"tanh\", \"feature_columns\": [\"a\", \"b\", "
                    "\"color_ind\", \"tag_ind\", \"tag_mean\", \"tag_sum\", \"color_sqrtn\"]}"),
          13);
    assert_true(check_gradients(&fx, 1e-2, 2e-4, 2e-2) > 50);
    fixture_free(&fx);
}

static void test_dnn_binary_sigmoid(void **state)
{
    (void)state;
    fixture fx;
    build(&fx,
          make_spec(0, BIN_LABEL,
                    "{\"type\": \"DNNClassifier\", \"hidden_units\": [5],"
                    " \"activation_fn\": \"sigmoid\", \"feature_columns\": [\"b\", "
                    "\"tag_mean\", \"color_sqrtn\"]}"),
          14);
    assert_true(check_gradients(&fx, 1e-2, 2e-4, 2e-2) > 20);
    fixture_free(&fx);
}

static void test_wide_deep_regression_relu(void **state)
{
    (void)state;
    fixture fx;
    /* relu has kinks: a small step keeps the central difference on one side */
    build(&fx,
          make_spec(1, REG_LABEL,
                    "{\"type\": \"DNNLinearCombinedRegressor\", \"dnn_hidden_units\": [7, 4],"
                    " \"linear_feature_columns\": [\"a_b\", \"color\", \"cx\", \"cy\", \"b\"],"
                    " \"dnn_feature_columns\": [\"a\", \"b\", \"color_ind\", \"tag_mean\","
                    " \"tag_sum\", \"color_sqrtn\"]}"),
          15);
    assert_true(check_gradients(&fx, 2e-3, 1e-3, 2e-2) > 50);
    fixture_free(&fx);
}

static void test_wide_deep_binary_elu(void **state)
{
    (void)state;
    fixture fx;
    build(&fx,
          make_spec(0, BIN_LABEL,
                    "{\"type\": \"DNNLinearCombinedClassifier\", \"dnn_hidden_units\": [5, 3],"
                    " \"dnn_activation_fn\": \"elu\","
                    " \"linear_feature_columns\": [\"tag\", \"cx\", \"tag_ind\"],"
                    " \"dnn_feature_columns\": [\"a\", \"tag_ind\", \"tag_sum\"]}"),
          16);
    assert_true(check_gradients(&fx, 2e-3, 5e-4, 2e-2) > 30);
    fixture_free(&fx);
}

/* label_dimension 3: three label columns, the loss averaged over the values
 * (and summed under loss_reduction SUM), with weights. */
static void test_regression_label_dimension(void **state)
{
    (void)state;
    for (int sum = 0; sum < 2; sum++) {
        cJSON *spec = make_spec(1, "{\"columns\": [\"y\", \"z\", \"v\"]}",
                                "{\"type\": \"DNNLinearCombinedRegressor\", \"label_dimension\": 3,"
                                " \"dnn_hidden_units\": [5], \"dnn_activation_fn\": \"tanh\","
                                " \"linear_feature_columns\": [\"color\", \"cx\", \"b\"],"
                                " \"dnn_feature_columns\": [\"a\", \"tag_mean\"]}");
        cJSON *cols = cJSON_GetObjectItemCaseSensitive(spec, "columns");
        cJSON_AddItemToArray(cols, cJSON_Parse("{\"name\": \"z\", \"type\": \"float\"}"));
        cJSON_AddItemToArray(cols, cJSON_Parse("{\"name\": \"v\", \"type\": \"int\"}"));
        if (sum)
            cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(spec, "estimator"),
                                    "loss_reduction", "SUM");
        fixture fx;
        build(&fx, spec, 51 + sum);
        assert_int_equal(fx.m->ld, 3);
        for (size_t i = 0; i < N; i++)
            fx.wbuf[i] = (float)(i % 4) * 0.5f;
        fx.weights = fx.wbuf;
        assert_true(check_gradients(&fx, 2e-3, 5e-4, 2e-2) > 30);
        /* the loss by hand from the logits: sum w (1/3) sum_j e^2 / N (SUM: sum w e^2) */
        float logits[N * 3];
        double l, want = 0;
        rt_err err;
        assert_int_equal(trn_model_loss(fx.m, fx.b, fx.labels, fx.weights, &l, logits, &err),
                         RT_OK);
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < 3; j++) {
                double e = (double)logits[i * 3 + j] - fx.labels[i * 3 + j];
                want += fx.wbuf[i] * e * e;
            }
        want = sum ? want : want / (3.0 * N);
        assert_true(fabs(l - want) < 1e-6 * fabs(want));
        fixture_free(&fx);
    }
}

/* batch_norm: the training loss (batch statistics, after the activation and
 * the dropout mask) against finite differences, gamma and beta included;
 * the moving statistics move by momentum 0.999 in a training step only;
 * serving (rt_forward) uses the moving statistics, checked against a forward
 * pass written out here in double. */
/* A custom model graph (estimator "Estimator", trainer/trn_graph.c) with
 * every node kind: the whole model's gradients (the linear block, the
 * embedding tables under input and embedding nodes, dense kernels and
 * biases with L2, batch_norm's gamma and beta through the batch
 * statistics) against finite differences of the training loss (dropout's
 * masks kept), for a binary head, a 3-class head and regression heads with
 * the squared, huber, pinball, absolute and poisson losses (poisson's labels
 * made counts >= 0: |y|). */
static void test_custom_graph(void **state)
{
    (void)state;
    static const char *GRAPH =
        "{\"type\": \"Estimator\", \"model\": {"
        " \"inputs\": [{\"name\": \"deep\", \"columns\": [\"a\", \"b\", \"color_ind\","
        "                                            \"tag_mean\"]},"
        "  {\"name\": \"wide\", \"type\": \"linear\", \"units\": %d,"
        "   \"columns\": [\"color\", \"cx\", \"a\"]}],"
        " \"layers\": ["
        "  {\"name\": \"sum\", \"type\": \"embedding\", \"column\": \"tag_sum\"},"
        "  {\"name\": \"x\", \"type\": \"concat\", \"inputs\": [\"deep\", \"sum\"]},"
        "  {\"name\": \"h1\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 6,"
        "   \"activation\": \"%s\", \"l2\": 0.01, \"l1\": 0.001},"
        "  {\"name\": \"bn\", \"type\": \"batch_norm\", \"inputs\": [\"h1\"]},"
        "  {\"name\": \"d1\", \"type\": \"dropout\", \"inputs\": [\"bn\"], \"rate\": 0.3},"
        "  {\"name\": \"h2\", \"type\": \"dense\", \"inputs\": [\"d1\"], \"units\": 6},"
        "  {\"name\": \"a2\", \"type\": \"activation\", \"inputs\": [\"h2\"],"
        "   \"activation\": \"%s\"},"
        "  {\"name\": \"res\", \"type\": \"add\", \"inputs\": [\"h1\", \"a2\"]},"
        "  {\"name\": \"gate\", \"type\": \"multiply\", \"inputs\": [\"res\", \"res\"]},"
        "  {\"name\": \"d0\", \"type\": \"dense\", \"inputs\": [\"deep\"], \"units\": 6,"
        "   \"activation\": \"tanh\"},"
        "  {\"name\": \"both\", \"type\": \"add\", \"inputs\": [\"gate\", \"d0\"]},"
        "  {\"name\": \"dnn_logits\", \"type\": \"dense\", \"inputs\": [\"both\"],"
        "   \"units\": %d},"
        "  {\"name\": \"logits\", \"type\": \"add\", \"inputs\": [\"wide\", \"dnn_logits\"]}],"
        " \"heads\": [{\"type\": \"%s\", \"logits\": \"logits\"%s}]}}";
    static const struct {
        const char *act1, *act2, *head, *extra, *label;
        int ld;
        int regression;
    } cases[] = {
        {"gelu", "selu", "binary_classification", "", NULL, 1, 0},
        {"swish", "softplus", "multi_class_classification", ", \"n_classes\": 3", NULL, 3, 0},
        {"elu", "leaky_relu", "regression", "", NULL, 1, 1},
        {"softplus", "sigmoid", "regression", ", \"loss\": \"huber\", \"delta\": 0.5", NULL, 1, 1},
        {"tanh", "relu", "regression", ", \"loss\": \"pinball\", \"tau\": 0.3", NULL, 1, 1},
        {"linear", "gelu", "regression", ", \"loss\": \"absolute\"", NULL, 1, 1},
        {"tanh", "elu", "regression", ", \"loss\": \"poisson\"", NULL, 1, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char est[4096];
        snprintf(est, sizeof est, GRAPH, cases[c].ld, cases[c].act1, cases[c].act2, cases[c].ld,
                 cases[c].head, cases[c].extra);
        print_message("custom graph case %zu: %s %s %s%s\n", c, cases[c].act1, cases[c].act2,
                      cases[c].head, cases[c].extra);
        fixture fx;
        build(&fx, make_spec(cases[c].regression,
                             cases[c].regression ? REG_LABEL : c ? MULTI_LABEL : BIN_LABEL, est),
              71 + c);
        if (strstr(cases[c].extra, "poisson"))
            for (size_t i = 0; i < N; i++)
                fx.labels[i] = fabsf(fx.labels[i]);
        assert_true(fx.m->n_nodes == 15 && fx.m->batch_norm);
        fx.train = 1;
        size_t k = check_gradients(&fx, 2e-3, 5e-4, 2e-2);
        assert_true(k > 80);
        fixture_free(&fx);
    }
}

static void test_batch_norm(void **state)
{
    (void)state;
    static const char *ests[] = {
        "{\"type\": \"DNNClassifier\", \"n_classes\": 3, \"hidden_units\": [6, 5],"
        " \"activation_fn\": \"tanh\", \"batch_norm\": true, \"feature_columns\": [\"a\","
        " \"b\", \"color_ind\", \"tag_mean\"]}",
        "{\"type\": \"DNNLinearCombinedClassifier\", \"dnn_hidden_units\": [7, 4],"
        " \"dnn_activation_fn\": \"sigmoid\", \"batch_norm\": true, \"dnn_dropout\": 0.3,"
        " \"linear_feature_columns\": [\"color\"],"
        " \"dnn_feature_columns\": [\"a\", \"b\", \"tag_sum\"]}",
    };
    for (size_t c = 0; c < 2; c++) {
        fixture fx;
        build(&fx, make_spec(0, c ? BIN_LABEL : MULTI_LABEL, ests[c]), 61 + c);
        assert_true(fx.m->batch_norm);
        fx.train = 1;
        assert_true(check_gradients(&fx, 2e-3, 5e-4, 2e-2) > 40);
        fixture_free(&fx);
    }

    /* the moving statistics: a training step moves them, a loss does not */
    fixture fx;
    build(&fx, make_spec(0, BIN_LABEL,
                         "{\"type\": \"DNNClassifier\", \"hidden_units\": [4],"
                         " \"activation_fn\": \"relu\", \"batch_norm\": true,"
                         " \"feature_columns\": [\"a\", \"b\"]}"),
          63);
    const dnn_layer *D = &fx.m->layers[0];
    assert_true(D->bn_gamma >= 0 && fabsf(D->bn_eps - 0.001f) < 1e-9f &&
                fabsf(D->bn_momentum - 0.999f) < 1e-9f);
    assert_string_equal(fx.m->p[D->bn_mean].name, "dnn/hiddenlayer_0/batchnorm_0/moving_mean");
    float mm0[4], mv0[4];
    memcpy(mm0, fx.m->p[D->bn_mean].data, sizeof mm0);
    memcpy(mv0, fx.m->p[D->bn_var].data, sizeof mv0);
    double l;
    rt_err err;
    assert_int_equal(trn_model_train_loss(fx.m, fx.b, fx.labels, NULL, &l, &err), RT_OK);
    assert_memory_equal(mm0, fx.m->p[D->bn_mean].data, sizeof mm0);
    assert_int_equal(trn_model_gradients(fx.m, fx.b, fx.labels, NULL, &l, &err), RT_OK);
    for (size_t j = 0; j < 4; j++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < N; i++)
            mean += fx.m->dy[0][i * 4 + j] / (double)N;
        for (size_t i = 0; i < N; i++)
            var += pow(fx.m->dy[0][i * 4 + j] - mean, 2) / (double)N;
        assert_true(fabs(fx.m->p[D->bn_mean].data[j] - (0.999 * mm0[j] + 0.001 * mean)) < 1e-6);
        assert_true(fabs(fx.m->p[D->bn_var].data[j] - (0.999 * mv0[j] + 0.001 * var)) < 1e-6);
    }
    /* serving: moving statistics, by hand */
    float logits[N];
    assert_int_equal(trn_model_loss(fx.m, fx.b, fx.labels, NULL, &l, logits, &err), RT_OK);
    const float *x = fx.m->f.dnn_input;
    const float *W1 = fx.m->p[D->kernel].data, *b1 = fx.m->p[D->bias].data;
    const float *ga = fx.m->p[D->bn_gamma].data, *be = fx.m->p[D->bn_beta].data;
    const float *mm = fx.m->p[D->bn_mean].data, *mv = fx.m->p[D->bn_var].data;
    const dnn_layer *O = &fx.m->layers[1];
    const float *W2 = fx.m->p[O->kernel].data, *b2 = fx.m->p[O->bias].data;
    for (size_t i = 0; i < N; i++) {
        double z = b2[0];
        for (size_t j = 0; j < 4; j++) {
            double h = b1[j];
            for (size_t k = 0; k < D->in; k++)
                h += (double)x[i * D->in + k] * W1[k * 4 + j];
            h = h > 0 ? h : 0;
            h = ga[j] * (h - mm[j]) / sqrt(mv[j] + 0.001) + be[j];
            z += h * W2[j];
        }
        if (fabs(z - logits[i]) > 1e-5 * (1 + fabs(z)))
            fail_msg("row %zu: serving logit %g, by hand %g", i, (double)logits[i], z);
    }
    fixture_free(&fx);
}

/* A wrong gradient must fail the check: scale one tensor's gradient and
 * confirm the comparison notices (guards against a vacuous test). */
/* Identity, weighted (linear, indicator, embeddings with mean and sqrtn)
 * and shared tables (the gradients of both users summed into one tensor). */
static void test_fc_kinds_gradients(void **state)
{
    (void)state;
    char buf[8192];
    snprintf(buf, sizeof buf,
             "{%s \"label\": %s, %s \"estimator\": {\"type\": \"DNNLinearCombinedClassifier\","
             " \"linear_feature_columns\": [\"k\", \"k_weighted_by_w\", \"a_b_weighted_by_w\","
             " \"k_weighted_by_w_indicator\"], \"dnn_feature_columns\": [\"k_shared_embedding\","
             " \"k_weighted_by_w_shared_embedding\", \"a_b_shared_embedding\","
             " \"a_b_weighted_by_w_shared_embedding\", \"k_weighted_by_w_indicator\"],"
             " \"dnn_hidden_units\": [5], \"dnn_activation_fn\": \"tanh\"}}",
             KIND_COLUMNS, BIN_LABEL, KIND_FEATURES);
    cJSON *spec = cJSON_Parse(buf);
    assert_non_null(spec);
    fixture fx;
    build(&fx, spec, 29);
    /* two tables, not four */
    size_t tables = 0;
    for (size_t i = 0; i < trn_model_num_params(fx.m); i++) {
        trn_param_view v;
        trn_model_param(fx.m, i, &v);
        tables += strstr(v.name, "embedding_weights") != NULL;
    }
    assert_int_equal(tables, 2);
    assert_true(check_gradients(&fx, 1e-2, 2e-4, 1e-2) > 10);
    fixture_free(&fx);
}

static void test_check_detects_wrong_gradient(void **state)
{
    (void)state;
    fixture fx;
    build(&fx,
          make_spec(0, BIN_LABEL,
                    "{\"type\": \"DNNClassifier\", \"hidden_units\": [4],"
                    " \"feature_columns\": [\"a\", \"tag_mean\"]}"),
          17);
    rt_err err;
    double l0;
    assert_int_equal(trn_model_gradients(fx.m, fx.b, fx.labels, fx.weights, &l0, &err), RT_OK);
    size_t bad = 0;
    for (size_t i = 0; i < trn_model_num_params(fx.m); i++) {
        trn_param_view v;
        trn_model_param(fx.m, i, &v);
        for (uint64_t k = 0; k < v.count; k++) {
            if (v.grad[k] == 0.0f)
                continue;
            float w = v.data[k];
            v.data[k] = w + 1e-2f;
            double lp = loss_at(&fx);
            v.data[k] = w - 1e-2f;
            double lm = loss_at(&fx);
            v.data[k] = w;
            double fd = (lp - lm) / 2e-2;
            double wrong = 1.5 * v.grad[k]; /* e.g. a mean combiner taken as sum */
            if (fabs(fd - wrong) > 2e-4 + 2e-2 * fabs(fd))
                bad++;
        }
    }
    assert_true(bad > 10);
    fixture_free(&fx);
}

/* Dropout: the masks of the gradient pass are kept and the finite
 * differences use the same training-time forward pass. */
static void test_dropout_gradients(void **state)
{
    (void)state;
    fixture fx;
    build(&fx,
          make_spec(0, BIN_LABEL,
                    "{\"type\": \"DNNLinearCombinedClassifier\", \"dnn_hidden_units\": [8, 6],"
                    " \"dnn_activation_fn\": \"tanh\", \"dnn_dropout\": 0.4,"
                    " \"linear_feature_columns\": [\"color\"],"
                    " \"dnn_feature_columns\": [\"a\", \"b\", \"tag_mean\"]}"),
          18);
    rt_err err;
    double l0;
    assert_true(fx.m->dropout > 0.39 && fx.m->dropout < 0.41);
    assert_int_equal(trn_model_gradients(fx.m, fx.b, fx.labels, fx.weights, &l0, &err), RT_OK);
    assert_true(fx.m->drop_active);
    /* some units are dropped, some kept */
    size_t zeros = 0;
    for (size_t k = 0; k < N * 8; k++)
        zeros += fx.m->dmask[0][k] == 0.0f;
    assert_true(zeros > 5 && zeros < N * 8 - 5);
    fx.m->drop_reuse = 1;
    size_t checked = 0;
    for (size_t i = 0; i < trn_model_num_params(fx.m); i++) {
        trn_param_view v;
        trn_model_param(fx.m, i, &v);
        float *g = malloc(v.count * sizeof(float));
        memcpy(g, v.grad, v.count * sizeof(float));
        for (uint64_t k = 0; k < v.count; k++) {
            if (g[k] == 0.0f && k % 13)
                continue;
            float w = v.data[k];
            double lp, lm;
            v.data[k] = w + 1e-2f;
            assert_int_equal(trn_model_train_loss(fx.m, fx.b, fx.labels, fx.weights, &lp, &err), RT_OK);
            v.data[k] = w - 1e-2f;
            assert_int_equal(trn_model_train_loss(fx.m, fx.b, fx.labels, fx.weights, &lm, &err), RT_OK);
            v.data[k] = w;
            double fd = (lp - lm) / 2e-2;
            if (fabs(fd - g[k]) > 2e-4 + 2e-2 * fabs(fd))
                fail_msg("%s[%llu]: backprop %.6g, finite difference %.6g (dropout)", v.name,
                         (unsigned long long)k, (double)g[k], fd);
            checked++;
        }
        free(g);
    }
    assert_true(checked > 50);
    /* the loss with dropout differs from the plain one */
    double plain;
    assert_int_equal(trn_model_loss(fx.m, fx.b, fx.labels, fx.weights, &plain, NULL, &err), RT_OK);
    assert_true(fabs(plain - l0) > 1e-6);
    fixture_free(&fx);
}

/* ------------------------------------------------- the distributed step */

/* A trn_comm of two ranks inside one process: "rank 1" records what it
 * sends, "rank 0" then receives it as the peer's contribution. */
typedef struct fake_peer {
    int record;          /* 1: this is rank 1, keep what it sends */
    float *dense;        /* rank 1's dense buffer */
    size_t n_dense;
    unsigned char *rows; /* rank 1's touched-row message */
    uint64_t len;
    int corrupt;         /* allgather: rank 1's value differs by one bit */
} fake_peer;

static int fake_sum_f32(void *ctx, float *buf, size_t n)
{
    fake_peer *f = ctx;
    if (f->record) { /* rank 1 (its result is not used): rank 0 sent nothing */
        f->dense = malloc(n * sizeof *buf);
        memcpy(f->dense, buf, n * sizeof *buf);
        f->n_dense = n;
        return 0;
    }
    assert_int_equal(n, f->n_dense);
    for (size_t i = 0; i < n; i++)
        buf[i] += f->dense[i];
    return 0;
}

static int fake_allgather(void *ctx, const void *send, size_t len, void *recv)
{
    fake_peer *f = ctx;
    unsigned char *r = recv;
    memcpy(r, send, len); /* checksums: rank 1's differs by a bit when corrupt */
    memcpy(r + len, send, len);
    r[len] ^= (unsigned char)f->corrupt;
    return 0;
}

static int fake_allgatherv(void *ctx, const void *send, size_t len, void *recv,
                           const size_t *lens)
{
    fake_peer *f = ctx;
    if (f->record) {
        f->rows = malloc(len ? len : 1);
        f->len = len;
        memcpy(f->rows, send, len);
        memcpy(recv, send, len); /* lens[0] == 0 */
        return 0;
    }
    assert_int_equal(lens[0], len);
    assert_int_equal(lens[1], f->len);
    memcpy(recv, send, len);
    memcpy((unsigned char *)recv + len, f->rows, f->len);
    return 0;
}

static trn_comm fake_comm(fake_peer *f, int rank)
{
    trn_comm c;
    memset(&c, 0, sizeof c);
    c.rank = rank;
    c.size = 2;
    c.ctx = f;
    c.sum_f32 = fake_sum_f32;
    c.allgather = fake_allgather;
    c.allgatherv = fake_allgatherv;
    return c;
}

/* Gradients of rows [lo, hi) as one rank of two, reduced over fake comm c. */
static void rank_step(fixture *fx, trn_comm *c, double *loss)
{
    rt_err err;
    trn_dist *d = NULL;
    assert_int_equal(trn_dist_new(c, &d, &err), RT_OK);
    assert_non_null(d);
    fx->m->grad_denom = 1;
    size_t n = rt_batch_size(fx->b), n_global = 0;
    float flags[1] = {(float)c->rank + 1};
    assert_int_equal(trn_model_gradients(fx->m, fx->b, fx->labels, fx->weights, loss, &err), RT_OK);
    assert_int_equal(trn_dist_step(d, fx->m, loss, n, flags, 1, &n_global, &err), RT_OK);
    if (c->rank == 0) { /* the peer's count and flag arrived */
        assert_int_equal(n_global, N);
        assert_true(flags[0] == 3.0f);
    }
    trn_dist_free(d);
}

#define WD_SPEC                                                                            \
    "{\"type\": \"DNNLinearCombinedClassifier\", \"dnn_hidden_units\": [5, 3],"            \
    " \"linear_feature_columns\": [\"a_b\", \"color\", \"cx\", \"cy\", \"b\", \"tag_ind\"]," \
    " \"dnn_feature_columns\": [\"a\", \"color_ind\", \"tag_mean\", \"tag_sum\","           \
    " \"color_sqrtn\"]}"

/* Two ranks' halves, dense gradients summed and touched rows exchanged,
 * give every tensor the gradient of the whole batch (up to float summation
 * order) and the whole batch's mean loss. */
static void test_dist_reduce_equals_whole_batch(void **state)
{
    (void)state;
    fixture whole, r0, r1;
    build(&whole, make_spec(0, BIN_LABEL, WD_SPEC), 21);
    build_rows(&r0, make_spec(0, BIN_LABEL, WD_SPEC), 21, 0, N / 2);
    build_rows(&r1, make_spec(0, BIN_LABEL, WD_SPEC), 21, N / 2, N);
    rt_err err;
    double lw, l0, l1;
    assert_int_equal(trn_model_gradients(whole.m, whole.b, whole.labels, whole.weights, &lw, &err), RT_OK);
    fake_peer f;
    memset(&f, 0, sizeof f);
    f.record = 1;
    trn_comm c1 = fake_comm(&f, 1), c0 = fake_comm(&f, 0);
    rank_step(&r1, &c1, &l1);
    f.record = 0;
    rank_step(&r0, &c0, &l0);
    assert_true(fabs(l0 - lw) < 1e-6 * fabs(lw) + 1e-7);
    size_t compared = 0, sparse_rows = 0;
    for (size_t i = 0; i < trn_model_num_params(whole.m); i++) {
        trn_param_view a, b;
        trn_model_param(whole.m, i, &a);
        trn_model_param(r0.m, i, &b);
        for (uint64_t k = 0; k < a.count; k++) {
            double tol = 1e-6 * fabs(a.grad[k]) + 1e-7;
            if (fabs(a.grad[k] - b.grad[k]) > tol)
                fail_msg("%s[%llu]: whole batch %g, two ranks %g", a.name,
                         (unsigned long long)k, a.grad[k], b.grad[k]);
            compared += a.grad[k] != 0.0f;
        }
        if (a.sparse)
            sparse_rows += r0.m->p[i].n_touched;
        if (a.sparse)
            assert_int_equal(r0.m->p[i].n_touched, whole.m->p[i].n_touched);
    }
    assert_true(compared > 100);
    assert_true(sparse_rows > 10);
    free(f.dense);
    free(f.rows);
    fixture_free(&whole);
    fixture_free(&r0);
    fixture_free(&r1);
}

/* ------------------------------------------------- example weights */

/* Every gradient of the batch, concatenated (malloc'd), after a gradients
 * pass with weights w (NULL: none); *n the count, *loss the loss. */
static float *all_grads(fixture *fx, float *w, size_t *n, double *loss)
{
    rt_err err;
    fx->weights = w;
    assert_int_equal(trn_model_gradients(fx->m, fx->b, fx->labels, fx->weights, loss, &err),
                     RT_OK);
    size_t total = 0;
    for (size_t i = 0; i < trn_model_num_params(fx->m); i++) {
        trn_param_view v;
        trn_model_param(fx->m, i, &v);
        total += v.count;
    }
    float *g = malloc(total * sizeof *g), *at = g;
    assert_non_null(g);
    for (size_t i = 0; i < trn_model_num_params(fx->m); i++) {
        trn_param_view v;
        trn_model_param(fx->m, i, &v);
        memcpy(at, v.grad, v.count * sizeof *g);
        at += v.count;
    }
    *n = total;
    return g;
}

/* Weighted loss (weights in [0, 3), one of them 0) against finite
 * differences, for the three heads. */
static void test_weighted_gradients(void **state)
{
    (void)state;
    static const struct {
        int regression;
        const char **label;
        const char *est;
    } cases[] = {
        {0, &BIN_LABEL, WD_SPEC},
        {0, &MULTI_LABEL,
         "{\"type\": \"DNNClassifier\", \"n_classes\": 3, \"hidden_units\": [5],"
         " \"activation_fn\": \"tanh\", \"feature_columns\": [\"a\", \"tag_mean\"]}"},
        {1, &REG_LABEL,
         "{\"type\": \"DNNLinearCombinedRegressor\", \"dnn_hidden_units\": [4],"
         " \"dnn_activation_fn\": \"tanh\", \"linear_feature_columns\": [\"color\", \"b\"],"
         " \"dnn_feature_columns\": [\"a\", \"tag_sum\"]}"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fixture fx;
        build(&fx, make_spec(cases[c].regression, *cases[c].label, cases[c].est), 31 + c);
        trn_rng r;
        trn_rng_seed(&r, 5 + c);
        for (size_t i = 0; i < N; i++)
            fx.wbuf[i] = i == 3 ? 0.0f : (float)(3.0 * trn_rng_uniform(&r));
        fx.weights = fx.wbuf;
        assert_true(check_gradients(&fx, 2e-3, 5e-4, 2e-2) > 20);
        fixture_free(&fx);
    }
}

/* Weights all 1 are no weights, bit for bit; with loss_reduction SUM a
 * weight of 2 is the row counted twice: the gradient of the unweighted batch
 * plus that row's own. */
static void test_weights_one_and_two(void **state)
{
    (void)state;
    fixture fx;
    build(&fx, make_spec(0, BIN_LABEL, WD_SPEC), 41);
    size_t n0, n1;
    double l0, l1;
    float ones[N];
    for (size_t i = 0; i < N; i++)
        ones[i] = 1.0f;
    float *g0 = all_grads(&fx, NULL, &n0, &l0), *g1 = all_grads(&fx, ones, &n1, &l1);
    assert_int_equal(n0, n1);
    assert_memory_equal(&l0, &l1, sizeof l0);
    assert_memory_equal(g0, g1, n0 * sizeof *g0);
    free(g0);
    free(g1);
    fixture_free(&fx);

    cJSON *spec = make_spec(0, BIN_LABEL, WD_SPEC);
    cJSON *est = cJSON_GetObjectItemCaseSensitive(spec, "estimator");
    cJSON_AddStringToObject(est, "loss_reduction", "SUM");
    build(&fx, spec, 42);
    float two[N], only[N];
    for (size_t i = 0; i < N; i++) {
        two[i] = i == 5 ? 2.0f : 1.0f;
        only[i] = i == 5 ? 1.0f : 0.0f;
    }
    double lb, lt, lo;
    size_t n;
    float *gb = all_grads(&fx, NULL, &n, &lb), *gt = all_grads(&fx, two, &n, &lt);
    float *go = all_grads(&fx, only, &n, &lo);
    assert_true(fabs(lt - (lb + lo)) < 1e-9 * fabs(lt));
    size_t nonzero = 0;
    for (size_t k = 0; k < n; k++) {
        double want = (double)gb[k] + go[k];
        if (fabs(gt[k] - want) > 1e-5 * fabs(want) + 1e-7)
            fail_msg("gradient %zu: weight 2 %g, batch + row %g", k, (double)gt[k], want);
        nonzero += go[k] != 0.0f;
    }
    assert_true(nonzero > 10);
    free(gb);
    free(gt);
    free(go);
    fixture_free(&fx);
}

/* A replica whose parameters differ is named at the checkpoint check. */
static void test_dist_replica_mismatch(void **state)
{
    (void)state;
    fixture fx;
    build(&fx, make_spec(0, BIN_LABEL, WD_SPEC), 22);
    fake_peer f;
    memset(&f, 0, sizeof f);
    trn_comm c = fake_comm(&f, 0);
    trn_dist *d = NULL;
    rt_err err;
    assert_int_equal(trn_dist_new(&c, &d, &err), RT_OK);
    assert_int_equal(trn_dist_check_replicas(d, fx.m, &err), RT_OK);
    f.corrupt = 1;
    assert_int_equal(trn_dist_check_replicas(d, fx.m, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "replicas diverged"));
    assert_non_null(strstr(err.msg, "rank 1's parameters"));
    trn_dist_free(d);
    /* one process: no trn_dist, nothing to check */
    assert_int_equal(trn_dist_new(NULL, &d, &err), RT_OK);
    assert_null(d);
    assert_int_equal(trn_dist_check_replicas(NULL, fx.m, &err), RT_OK);
    fixture_free(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_binary),
        cmocka_unit_test(test_linear_multiclass),
        cmocka_unit_test(test_dnn_multiclass_tanh),
        cmocka_unit_test(test_dnn_binary_sigmoid),
        cmocka_unit_test(test_wide_deep_regression_relu),
        cmocka_unit_test(test_wide_deep_binary_elu),
        cmocka_unit_test(test_fc_kinds_gradients),
        cmocka_unit_test(test_check_detects_wrong_gradient),
        cmocka_unit_test(test_dropout_gradients),
        cmocka_unit_test(test_dist_reduce_equals_whole_batch),
        cmocka_unit_test(test_dist_replica_mismatch),
        cmocka_unit_test(test_weighted_gradients),
        cmocka_unit_test(test_regression_label_dimension),
        cmocka_unit_test(test_batch_norm),
        cmocka_unit_test(test_custom_graph),
        cmocka_unit_test(test_weights_one_and_two),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
