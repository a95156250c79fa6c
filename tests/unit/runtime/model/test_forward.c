/* test_forward.c — the forward pass and the heads.
 *
 * Graphs and features are filled by hand (rt_internal.h), so these tests do
 * not depend on the spec compiler or the transforms. Known answers on a tiny
 * model computed on paper; random models compared with an independent naive
 * computation in double precision (tolerance 1e-5 * (1 + |expected|)); heads
 * at logits of +-1000. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_serve_internal.h"
#include "rt_data_internal.h"

#define TOL 1e-5

static int close_enough(double got, double want)
{
    return fabs(got - want) <= TOL * (1.0 + fabs(want));
}

/* ------------------------------------------------------------ tiny model */

/*
 * Linear: column 0 categorical (3 buckets), column 1 numeric (width 2).
 *   W0 = [[1], [2], [4]], W1 = [[0.5], [-1]], bias = [0.25]
 * DNN: input = column 1's 2 values; hidden 2 units relu, logits 1 unit.
 *   K1 = [[1, -1], [2, 1]] (in x out), b1 = [0, 1]; K2 = [[1], [3]], b2 = [-2]
 * Instance 0: ids {0, 2}, x = (1, 2)
 *   linear = 0.25 + 1 + 4 + 0.5 - 2 = 3.75
 *   h = relu((1*1 + 2*2 + 0, 1*-1 + 2*1 + 1)) = (5, 2); dnn = 5 + 6 - 2 = 9
 *   logit = 12.75
 * Instance 1: ids {} , x = (-1, 0)
 *   linear = 0.25 - 0.5 = -0.25
 *   h = relu((-1, 1 + 1)) = (0, 2); dnn = 0 + 6 - 2 = 4
 *   logit = 3.75
 */
static const float W0[] = {1, 2, 4}, W1[] = {0.5f, -1}, BIAS[] = {0.25f};
static const float K1[] = {1, -1, 2, 1}, KB1[] = {0, 1}, K2[] = {1, 3}, KB2[] = {-2};

typedef struct tiny {
    rt_graph g;
    rt_fcol fcols[2];
    size_t lin_cols[2];
    const float *lin_w[2];
    rt_layer layers[2];
    rt_features f;
    rt_ids ids[2];
    float *values[2];
    size_t width[2];
    uint32_t offsets[3];
    int64_t idv[2];
    float x[4];
    char *class_names[2];
} tiny;

static void tiny_init(tiny *t)
{
    memset(t, 0, sizeof *t);
    t->fcols[0].type = PREDICTD__COLUMN_TYPE__VOCABULARY_LIST;
    t->fcols[0].num_buckets = 3;
    t->fcols[0].input = -1;
    t->fcols[0].source = -1;
    t->fcols[1].type = PREDICTD__COLUMN_TYPE__NUMERIC;
    t->fcols[1].width = 2;
    t->fcols[1].input = -1;
    t->fcols[1].source = -1;
    t->lin_cols[0] = 0;
    t->lin_cols[1] = 1;
    t->lin_w[0] = W0;
    t->lin_w[1] = W1;
    t->layers[0] = (rt_layer){
        .in = 2, .out = 2, .act = PREDICTD__ACTIVATION__ACT_RELU, .kernel = K1, .bias = KB1};
    /* The stored activation of the logits layer is ignored (proto default RELU). */
    t->layers[1] = (rt_layer){
        .in = 2, .out = 1, .act = PREDICTD__ACTIVATION__ACT_RELU, .kernel = K2, .bias = KB2};
    t->class_names[0] = "<=50K";
    t->class_names[1] = ">50K";

    rt_graph *g = &t->g;
    g->n_fcols = 2;
    g->fcols = t->fcols;
    g->logits_dim = 1;
    g->n_linear = 2;
    g->linear_cols = t->lin_cols;
    g->linear_w = t->lin_w;
    g->linear_bias = BIAS;
    g->dnn_dim = 2;
    g->n_layers = 2;
    g->layers = t->layers;
    g->head = PREDICTD__HEAD_TYPE__HEAD_BINARY;
    g->n_classes = 2;
    g->class_names = t->class_names;

    t->offsets[0] = 0;
    t->offsets[1] = 2;
    t->offsets[2] = 2;
    t->idv[0] = 0;
    t->idv[1] = 2;
    t->ids[0] = (rt_ids){t->offsets, t->idv, NULL};
    t->x[0] = 1;
    t->x[1] = 2;
    t->x[2] = -1;
    t->x[3] = 0;
    t->values[1] = t->x;
    t->width[1] = 2;
    t->f.n = 2;
    t->f.n_columns = 2;
    t->f.ids = t->ids;
    t->f.values = t->values;
    t->f.width = t->width;
    t->f.dnn_input = t->x;
    t->f.dnn_dim = 2;
}

static void test_tiny_model_known_answer(void **state)
{
    (void)state;
    tiny t;
    tiny_init(&t);
    rt_workspace *ws = rt_workspace_new();
    float logits[2];
    rt_err err = {{0}};
    assert_int_equal(rt_forward(&t.g, &t.f, ws, logits, &err), RT_OK);
    assert_float_equal(logits[0], 12.75f, 1e-6);
    assert_float_equal(logits[1], 3.75f, 1e-6);

    size_t w = 0;
    const float *h = rt_workspace_layer(ws, 1, &w);
    assert_non_null(h);
    assert_int_equal(w, 2);
    assert_float_equal(h[0], 5.0f, 1e-6);
    assert_float_equal(h[1], 2.0f, 1e-6);
    assert_float_equal(h[2], 0.0f, 1e-6);
    assert_float_equal(h[3], 2.0f, 1e-6);
    const float *in = rt_workspace_layer(ws, 0, &w);
    assert_int_equal(w, 2);
    assert_float_equal(in[2], -1.0f, 0);
    const float *out = rt_workspace_layer(ws, 2, &w);
    assert_int_equal(w, 1);
    assert_float_equal(out[0], 9.0f, 1e-6);
    assert_float_equal(out[1], 4.0f, 1e-6);
    assert_null(rt_workspace_layer(ws, 3, &w));

    /* Linear part only (no DNN). */
    t.g.n_layers = 0;
    assert_int_equal(rt_forward(&t.g, &t.f, ws, logits, &err), RT_OK);
    assert_float_equal(logits[0], 3.75f, 1e-6);
    assert_float_equal(logits[1], -0.25f, 1e-6);
    rt_workspace_free(ws);
}

static void test_tiny_model_head(void **state)
{
    (void)state;
    tiny t;
    tiny_init(&t);
    const float logits[] = {12.75f, -0.5f, 0.0f};
    rt_outputs o;
    rt_head_outputs_init(&o);
    rt_err err = {{0}};
    assert_int_equal(rt_head_compute(&t.g, logits, 3, &o, &err), RT_OK);
    assert_int_equal(o.n, 3);
    assert_int_equal(o.n_classes, 2);
    assert_null(o.predictions);
    double s = 1.0 / (1.0 + exp(0.5));
    assert_true(close_enough(o.logistic[1], s));
    assert_true(close_enough(o.probabilities[2], 1.0 - s));
    assert_true(close_enough(o.probabilities[3], s));
    assert_int_equal(o.class_ids[0], 1);
    assert_int_equal(o.class_ids[1], 0);
    assert_int_equal(o.class_ids[2], 0); /* tie: argmax takes the first */
    assert_float_equal(o.logistic[2], 0.5f, 0);
    assert_float_equal(o.logits[0], 12.75f, 0);
    assert_string_equal(rt_graph_class_name(&t.g, 1), ">50K");
    rt_head_outputs_free(&o);
    rt_head_outputs_free(NULL);
}

static void test_out_of_range_id_refused(void **state)
{
    (void)state;
    tiny t;
    tiny_init(&t);
    t.idv[1] = 3; /* 3 buckets: ids 0..2 */
    rt_workspace *ws = rt_workspace_new();
    float logits[2];
    rt_err err = {{0}};
    assert_int_equal(rt_forward(&t.g, &t.f, ws, logits, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "out of range"));
    /* A negative id (TF's default_id -1) is dropped, not an error. */
    t.idv[1] = -1;
    assert_int_equal(rt_forward(&t.g, &t.f, ws, logits, &err), RT_OK);
    assert_float_equal(logits[0], 12.75f - 4.0f, 1e-6);
    /* Wrong DNN width. */
    t.f.dnn_dim = 3;
    assert_int_equal(rt_forward(&t.g, &t.f, ws, logits, &err), RT_ERR_INVALID);
    rt_workspace_free(ws);
}

/* ------------------------------------------------------------ heads */

static void test_heads_extreme_logits(void **state)
{
    (void)state;
    tiny t;
    tiny_init(&t);
    rt_outputs o;
    rt_head_outputs_init(&o);
    const float bl[] = {1000.0f, -1000.0f, 88.0f, -104.0f};
    assert_int_equal(rt_head_compute(&t.g, bl, 4, &o, NULL), RT_OK);
    for (size_t i = 0; i < 4; i++) {
        assert_true(isfinite(o.logistic[i]));
        assert_true(isfinite(o.probabilities[2 * i]) && isfinite(o.probabilities[2 * i + 1]));
        assert_true(fabs(o.probabilities[2 * i] + o.probabilities[2 * i + 1] - 1.0) < 1e-6);
    }
    assert_float_equal(o.logistic[0], 1.0f, 0);
    assert_float_equal(o.probabilities[0], 0.0f, 0);
    assert_float_equal(o.logistic[1], 0.0f, 0);
    assert_float_equal(o.probabilities[3], 0.0f, 0);
    assert_int_equal(o.class_ids[0], 1);
    assert_int_equal(o.class_ids[1], 0);

    /* Multi-class with 3 classes. */
    t.g.head = PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS;
    t.g.logits_dim = 3;
    t.g.n_classes = 3;
    const float ml[] = {1000.0f, -1000.0f, 0.0f, 1.0f, 2.0f, 3.0f, -1000.0f, -1000.0f, -999.0f};
    assert_int_equal(rt_head_compute(&t.g, ml, 3, &o, NULL), RT_OK);
    assert_null(o.logistic);
    assert_int_equal(o.n_classes, 3);
    assert_int_equal(o.class_ids[0], 0);
    assert_int_equal(o.class_ids[1], 2);
    assert_int_equal(o.class_ids[2], 2);
    assert_float_equal(o.probabilities[0], 1.0f, 0);
    double z = exp(1.0) + exp(2.0) + exp(3.0);
    assert_true(close_enough(o.probabilities[3], exp(1.0) / z));
    assert_true(close_enough(o.probabilities[5], exp(3.0) / z));
    double z2 = 2.0 + exp(1.0);
    assert_true(close_enough(o.probabilities[8], exp(1.0) / z2));
    for (size_t k = 0; k < 9; k++)
        assert_true(isfinite(o.probabilities[k]));

    /* Regression: predictions = logits. */
    t.g.head = PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    t.g.logits_dim = 1;
    t.g.n_classes = 0;
    const float rl[] = {-3.5f, 1e30f};
    assert_int_equal(rt_head_compute(&t.g, rl, 2, &o, NULL), RT_OK);
    assert_null(o.probabilities);
    assert_null(o.class_ids);
    assert_float_equal(o.predictions[0], -3.5f, 0);
    assert_float_equal(o.predictions[1], 1e30f, 0);
    rt_head_outputs_free(&o);
}

/* ------------------------------------------------------------ random models */

/* A small deterministic generator (64-bit LCG); *s is its state. */
static double frand(uint64_t *s) /* uniform in [-1, 1) */
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}
static size_t irand(uint64_t *s, size_t n)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (size_t)((*s >> 33) % n);
}

static double act_ref(Predictd__Activation a, double x)
{
    switch (a) {
    case PREDICTD__ACTIVATION__ACT_RELU: return x > 0 ? x : 0;
    case PREDICTD__ACTIVATION__ACT_TANH: return tanh(x);
    case PREDICTD__ACTIVATION__ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PREDICTD__ACTIVATION__ACT_ELU: return x > 0 ? x : exp(x) - 1.0;
    default: return x;
    }
}

static float *rand_floats(uint64_t *rs, size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)frand(rs);
    return p;
}

/* A stop hook that counts its questions and says stop at the stop_at-th. */
typedef struct stop_state {
    size_t *asks, *stop_at;
} stop_state;
static bool ask_stop(void *arg)
{
    stop_state *s = arg;
    return ++*s->asks == *s->stop_at;
}

/*
 * Columns: 0 categorical (B0 buckets), 1 categorical (B1), 2 numeric (width
 * 3), 3 indicator of column 1 (values = counts of ids). Linear part over all
 * four; DNN input = [col 2 values (3), col 3 values (B1)].
 */
static void run_random_model(uint64_t *rs, size_t n, size_t ld, size_t n_hidden)
{
    const size_t B0 = 7, B1 = 5, NW = 3;
    rt_fcol fc[4];
    memset(fc, 0, sizeof fc);
    fc[0].type = PREDICTD__COLUMN_TYPE__HASH_BUCKET;
    fc[0].num_buckets = (int64_t)B0;
    fc[1].type = PREDICTD__COLUMN_TYPE__CROSSED;
    fc[1].num_buckets = (int64_t)B1;
    fc[2].type = PREDICTD__COLUMN_TYPE__NUMERIC;
    fc[2].width = NW;
    fc[3].type = PREDICTD__COLUMN_TYPE__INDICATOR;
    fc[3].width = B1;
    fc[3].source = 1;
    for (int c = 0; c < 4; c++)
        fc[c].input = -1;
    fc[0].source = fc[1].source = fc[2].source = -1;

    size_t lin_cols[4] = {0, 1, 2, 3};
    size_t dims[4] = {B0, B1, NW, B1};
    const float *lin_w[4];
    for (int c = 0; c < 4; c++)
        lin_w[c] = rand_floats(rs, dims[c] * ld);
    float *bias = rand_floats(rs, ld);

    size_t dnn_dim = NW + B1;
    rt_layer layers[5] = {{0}};
    size_t in = dnn_dim;
    static const Predictd__Activation acts[] = {
        PREDICTD__ACTIVATION__ACT_RELU, PREDICTD__ACTIVATION__ACT_TANH,
        PREDICTD__ACTIVATION__ACT_SIGMOID, PREDICTD__ACTIVATION__ACT_ELU,
        PREDICTD__ACTIVATION__ACT_LINEAR};
    for (size_t l = 0; l <= n_hidden; l++) {
        size_t out = l == n_hidden ? ld : 1 + irand(rs, 40);
        layers[l].in = in;
        layers[l].out = out;
        layers[l].act = acts[(l + n) % 5];
        layers[l].kernel = rand_floats(rs, in * out);
        layers[l].bias = rand_floats(rs, out);
        in = out;
    }

    rt_graph g;
    memset(&g, 0, sizeof g);
    g.n_fcols = 4;
    g.fcols = fc;
    g.logits_dim = ld;
    g.n_linear = 4;
    g.linear_cols = lin_cols;
    g.linear_w = lin_w;
    g.linear_bias = bias;
    g.dnn_dim = dnn_dim;
    g.n_layers = n_hidden + 1;
    g.layers = layers;
    g.head = ld == 1 ? PREDICTD__HEAD_TYPE__HEAD_BINARY : PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS;
    g.n_classes = ld == 1 ? 2 : ld;

    /* Features: up to 3 ids per categorical column, numeric values. */
    rt_ids ids[4];
    memset(ids, 0, sizeof ids);
    float *values[4] = {NULL, NULL, NULL, NULL};
    size_t width[4] = {0, 0, NW, B1};
    for (int c = 0; c < 2; c++) {
        ids[c].offsets = calloc(n + 1, sizeof(uint32_t));
        ids[c].ids = calloc(3 * n + 1, sizeof(int64_t));
        assert_non_null(ids[c].offsets);
        assert_non_null(ids[c].ids);
        uint32_t k = 0;
        for (size_t i = 0; i < n; i++) {
            size_t cnt = irand(rs, 4);
            for (size_t j = 0; j < cnt; j++)
                ids[c].ids[k++] = (int64_t)irand(rs, c == 0 ? B0 : B1);
            ids[c].offsets[i + 1] = k;
        }
    }
    values[2] = rand_floats(rs, n * NW);
    values[3] = calloc(n * B1 + 1, sizeof(float));
    assert_non_null(values[3]);
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = ids[1].offsets[i]; k < ids[1].offsets[i + 1]; k++)
            values[3][i * B1 + (size_t)ids[1].ids[k]] += 1.0f;
    float *dnn_in = calloc(n * dnn_dim + 1, sizeof(float));
    assert_non_null(dnn_in);
    for (size_t i = 0; i < n; i++) {
        memcpy(dnn_in + i * dnn_dim, values[2] + i * NW, NW * sizeof(float));
        memcpy(dnn_in + i * dnn_dim + NW, values[3] + i * B1, B1 * sizeof(float));
    }
    rt_features f;
    memset(&f, 0, sizeof f);
    f.n = n;
    f.n_columns = 4;
    f.ids = ids;
    f.values = values;
    f.width = width;
    f.dnn_input = dnn_in;
    f.dnn_dim = dnn_dim;

    float *logits = calloc(n * ld + 1, sizeof(float));
    assert_non_null(logits);
    rt_workspace *ws = rt_workspace_new();
    rt_err err = {{0}};
    assert_int_equal(rt_forward(&g, &f, ws, logits, &err), RT_OK);

    /* rt_forward_stoppable in chunks of 3 rows: the same bits when not
     * stopped; stopped at its k-th question, the rows of the chunks before
     * it are the same and the rest untouched. */
    float *chunked = calloc(n * ld + 1, sizeof(float));
    assert_non_null(chunked);
    size_t asks = 0, stop_at = (size_t)-1;
    stop_state ss = {&asks, &stop_at};
    assert_int_equal(rt_forward_stoppable(&g, &f, ws, chunked, 3, ask_stop, &ss, &err), RT_OK);
    assert_memory_equal(chunked, logits, n * ld * sizeof(float));
    assert_int_equal(asks, n > 3 ? (n + 2) / 3 : 1); /* before it, between chunks */
    if (n > 3) {
        memset(chunked, 0x7f, n * ld * sizeof(float));
        asks = 0;
        stop_at = 2; /* the question after the first chunk */
        assert_int_equal(rt_forward_stoppable(&g, &f, ws, chunked, 3, ask_stop, &ss, &err),
                         RT_ERR_LIMIT);
        assert_memory_equal(chunked, logits, 3 * ld * sizeof(float));
        float untouched;
        memset(&untouched, 0x7f, sizeof untouched);
        assert_memory_equal(&chunked[3 * ld], &untouched, sizeof untouched);
    }
    free(chunked);

    /* Naive reference, double precision, triple loops. */
    for (size_t i = 0; i < n; i++) {
        double *x = malloc(sizeof(double) * 64);
        double *y = malloc(sizeof(double) * 64);
        assert_non_null(x);
        assert_non_null(y);
        for (size_t k = 0; k < dnn_dim; k++)
            x[k] = dnn_in[i * dnn_dim + k];
        size_t xin = dnn_dim;
        for (size_t l = 0; l <= n_hidden; l++) {
            for (size_t o = 0; o < layers[l].out; o++) {
                double s = layers[l].bias[o];
                for (size_t k = 0; k < xin; k++)
                    s += x[k] * layers[l].kernel[k * layers[l].out + o];
                y[o] = l == n_hidden ? s : act_ref(layers[l].act, s);
            }
            /* Hidden activations kept in the workspace match. */
            size_t w = 0;
            const float *h = rt_workspace_layer(ws, l + 1, &w);
            assert_int_equal(w, layers[l].out);
            for (size_t o = 0; o < w; o++)
                assert_true(close_enough(h[i * w + o], y[o]));
            xin = layers[l].out;
            double *tmp = x;
            x = y;
            y = tmp;
        }
        for (size_t j = 0; j < ld; j++) {
            double want = bias[j] + x[j];
            for (int c = 0; c < 2; c++)
                for (uint32_t k = ids[c].offsets[i]; k < ids[c].offsets[i + 1]; k++)
                    want += lin_w[c][(size_t)ids[c].ids[k] * ld + j];
            for (size_t k = 0; k < NW; k++)
                want += (double)values[2][i * NW + k] * lin_w[2][k * ld + j];
            for (size_t k = 0; k < B1; k++)
                want += (double)values[3][i * B1 + k] * lin_w[3][k * ld + j];
            if (!close_enough(logits[i * ld + j], want))
                fail_msg("instance %zu logit %zu: got %.9g want %.9g", i, j,
                         (double)logits[i * ld + j], want);
        }
        free(x);
        free(y);
    }

    rt_workspace_free(ws);
    free(logits);
    free(dnn_in);
    free(values[2]);
    free(values[3]);
    for (int c = 0; c < 2; c++) {
        free(ids[c].offsets);
        free(ids[c].ids);
    }
    for (size_t l = 0; l <= n_hidden; l++) {
        free((void *)layers[l].kernel);
        free((void *)layers[l].bias);
    }
    for (int c = 0; c < 4; c++)
        free((void *)lin_w[c]);
    free(bias);
}

static void test_random_models_match_naive(void **state)
{
    (void)state;
    uint64_t rs = 12345;
    static const size_t ns[] = {1, 2, 17, 64, 200};
    for (size_t t = 0; t < 20; t++) {
        size_t n = ns[t % 5];
        size_t ld = (t % 3 == 0) ? 3 : 1;
        size_t hidden = t % 5; /* 0..4 hidden layers */
        run_random_model(&rs, n, ld, hidden);
    }
}

static void test_empty_batch(void **state)
{
    (void)state;
    tiny t;
    tiny_init(&t);
    t.f.n = 0;
    rt_workspace *ws = rt_workspace_new();
    float logit = 42.0f;
    assert_int_equal(rt_forward(&t.g, &t.f, ws, &logit, NULL), RT_OK);
    assert_float_equal(logit, 42.0f, 0);
    rt_outputs o;
    rt_head_outputs_init(&o);
    assert_int_equal(rt_head_compute(&t.g, &logit, 0, &o, NULL), RT_OK);
    assert_int_equal(o.n, 0);
    rt_head_outputs_free(&o);
    rt_workspace_free(ws);
    rt_workspace_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_model_known_answer),
        cmocka_unit_test(test_tiny_model_head),
        cmocka_unit_test(test_out_of_range_id_refused),
        cmocka_unit_test(test_heads_extreme_logits),
        cmocka_unit_test(test_random_models_match_naive),
        cmocka_unit_test(test_empty_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
