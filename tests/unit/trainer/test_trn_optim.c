/* test_trn_optim.c — the RMSProp and ProximalAdagrad updates against known
 * answers (three steps on five elements, one gradient always zero), computed
 * independently by tests/unit/support/optim_ref.py from TensorFlow's kernel formulas
 * in float32; their sparse semantics in a model (rows a batch does not touch
 * keep their weights and slots: no decay, no momentum); the learning-rate
 * schedules (exponential, cosine, polynomial decay) against known answers of
 * the same script and applied by global step in a model's update; and the
 * spec keys with TensorFlow's defaults and refusals; gradient clipping by
 * global norm (tf.clip_by_global_norm) against hand-computed answers. */
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

#define K 5

static const float W0[K] = {0.5f, -0.25f, 0.0f, 1.0f, 0.02f};
static const float GRADS[3][K] = {{0.1f, -0.2f, 0.0f, 0.4f, 0.01f},
                                  {0.3f, 0.0f, 0.0f, -0.1f, 0.0f},
                                  {-0.2f, 0.05f, 0.0f, 0.4f, -0.01f}};

/* Runs the three steps of o on a fresh tensor; slots (n_slots x K) out. */
static void run_steps(const trn_optimizer *o, float w[K], float slots[TRN_OPT_SLOTS_MAX][K],
                      size_t *n_slots)
{
    float g[K], init[TRN_OPT_SLOTS_MAX];
    tparam p;
    memset(&p, 0, sizeof p);
    p.count = p.rows = K;
    p.cols = 1;
    p.data = w;
    p.grad = g;
    p.n_slots = trn_optim_slots(o, init);
    for (size_t s = 0; s < p.n_slots; s++) {
        p.slot[s] = slots[s];
        for (size_t k = 0; k < K; k++)
            slots[s][k] = init[s];
    }
    memcpy(w, W0, sizeof W0);
    for (int t = 0; t < 3; t++) {
        memcpy(g, GRADS[t], sizeof g);
        trn_optim_update(o, &p, 0, K, t);
    }
    *n_slots = p.n_slots;
}

static void assert_close(const char *what, const float *got, const double *want)
{
    for (size_t k = 0; k < K; k++)
        if (fabs((double)got[k] - want[k]) > 2e-7 * fmax(1.0, fabs(want[k])))
            fail_msg("%s[%zu]: %.9g, want %.9g", what, k, (double)got[k], want[k]);
}

static trn_optimizer base(trn_opt_type type, double lr)
{
    trn_optimizer o;
    memset(&o, 0, sizeof o);
    o.type = type;
    o.learning_rate = lr;
    o.initial_accumulator = 0.1;
    o.decay = 0.9;
    o.epsilon = 1e-10;
    return o;
}

static void test_rmsprop_known_answers(void **state)
{
    (void)state;
    float w[K], sl[TRN_OPT_SLOTS_MAX][K];
    size_t ns;
    trn_optimizer o = base(TRN_OPT_RMSPROP, 0.01);
    run_steps(&o, w, sl, &ns);
    assert_int_equal(ns, 2); /* rms, momentum */
    static const double w1[K] = {0.497955292, -0.248480693, 0, 0.992329597, 0.02001171};
    static const double rms1[K] = {0.741909921, 0.732489944, 0.728999913, 0.758859992,
                                   0.729018092};
    static const double mom1[K] = {-0.00232195831, 0.000584210269, 0, 0.00459176023,
                                   -0.00011711994};
    assert_close("w", w, w1);
    assert_close("rms", sl[0], rms1);
    assert_close("momentum", sl[1], mom1);

    o.decay = 0.8;
    o.momentum = 0.5;
    o.centered = 1;
    run_steps(&o, w, sl, &ns);
    assert_int_equal(ns, 3); /* rms, momentum, mg */
    static const double w2[K] = {0.495213866, -0.246797577, 0, 0.98875463, 0.019944096};
    static const double rms2[K] = {0.535680056, 0.517620027, 0.511999965, 0.566080034,
                                   0.512032747};
    static const double mom2[K] = {-0.000599410152, 0.000138336618, 0, 0.00586760882,
                                   -0.000111799287};
    static const double mg2[K] = {0.0208000019, -0.0155999977, 0, 0.115199998,
                                  -0.000719999894};
    assert_close("w", w, w2);
    assert_close("rms", sl[0], rms2);
    assert_close("momentum", sl[1], mom2);
    assert_close("mg", sl[2], mg2);
}

static void test_proximal_adagrad_known_answers(void **state)
{
    (void)state;
    float w[K], sl[TRN_OPT_SLOTS_MAX][K];
    size_t ns;
    trn_optimizer o = base(TRN_OPT_PROXIMAL_ADAGRAD, 0.1);
    run_steps(&o, w, sl, &ns);
    assert_int_equal(ns, 1);
    static const double acc[K] = {0.24000001, 0.142499998, 0.100000001, 0.430000007,
                                  0.100200005};
    static const double w1[K] = {0.443591654, -0.209793076, 0, 0.879799128, 0.0199984219};
    assert_close("w", w, w1);
    assert_close("accumulator", sl[0], acc);
    o.l1 = 0.05;
    o.l2 = 0.2;
    run_steps(&o, w, sl, &ns);
    /* the last element is shrunk to exactly 0 by l1 */
    static const double w2[K] = {0.351889461, -0.144714519, 0, 0.762212992, 0};
    assert_close("w", w, w2);
    assert_true(w[4] == 0.0f);
    assert_close("accumulator", sl[0], acc);
}

static const char *SPARSE_SPEC =
    "{\"columns\": [{\"name\": \"x\", \"type\": \"float\", \"default\": 0},"
    " {\"name\": \"c\", \"type\": \"string\", \"default\": \"\"},"
    " {\"name\": \"y\", \"type\": \"string\", \"default\": \"\"}],"
    " \"label\": {\"column\": \"y\", \"vocabulary\": [\"no\", \"yes\"]},"
    " \"feature_columns\": [{\"type\": \"numeric_column\", \"key\": \"x\"},"
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"c\","
    "   \"vocabulary_list\": [\"p\", \"q\", \"r\"]}],"
    " \"estimator\": {\"type\": \"LinearClassifier\", \"feature_columns\": [\"x\", \"c\"],"
    "  \"optimizer\": %s}}";

/* SPARSE_SPEC's model with optimizer opt and a batch of n rows, x = xs[i]
 * and c = word. */
typedef struct small {
    cJSON *spec;
    Predictd__ModelDef *def;
    trn_config c;
    trn_model *m;
    rt_batch *b;
} small;

static void small_new(small *s, const char *opt, const double *xs, size_t n, const char *word)
{
    char text[2048];
    snprintf(text, sizeof text, SPARSE_SPEC, opt);
    memset(s, 0, sizeof *s);
    s->spec = cJSON_Parse(text);
    assert_non_null(s->spec);
    static const char *const mine[] = {"train", "eval", NULL};
    rt_err err;
    if (rt_spec_to_modeldef(s->spec, mine, &s->def, &err))
        fail_msg("spec: %s", err.msg);
    trn_config_init(&s->c);
    assert_int_equal(trn_config_from_spec(s->spec, &s->c, &err), RT_OK);
    assert_int_equal(trn_config_resolve(&s->c, s->def, &err), RT_OK);
    if (trn_model_new(s->def, &s->c, 1, &s->m, &err))
        fail_msg("model: %s", err.msg);
    const rt_graph *g = trn_model_graph(s->m);
    s->b = rt_batch_new(g);
    assert_non_null(s->b);
    for (size_t i = 0; i < n; i++) {
        size_t idx;
        assert_int_equal(rt_batch_add(s->b, &idx), RT_OK);
        for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
            if (rt_graph_input_dtype(g, in) == PREDICTD__DTYPE__DT_FLOAT)
                assert_int_equal(rt_batch_push_num(s->b, idx, in, xs[i]), RT_OK);
            else
                assert_int_equal(rt_batch_push_str(s->b, idx, in, word, strlen(word)), RT_OK);
        }
    }
}

static void small_free(small *s)
{
    rt_batch_free(s->b);
    trn_model_free(s->m);
    trn_config_free(&s->c);
    rt_spec_modeldef_free(s->def);
    cJSON_Delete(s->spec);
}

/* One step of a linear model touching only row "q" of c's weights: the other
 * rows keep weight 0 and their initial slots (TF's sparse kernels), the
 * dense tensors (x's weight, the bias) move. */
static void sparse_step(const char *opt, float rms0)
{
    small sm;
    static const double xs[2] = {2.0, -1.0};
    small_new(&sm, opt, xs, 2, "q");
    trn_model *m = sm.m;
    rt_err err;
    float labels[2] = {1, 1};
    double loss;
    assert_int_equal(trn_model_train_step(m, sm.b, labels, NULL, &loss, &err), RT_OK);
    int seen_sparse = 0, seen_dense = 0;
    for (size_t i = 0; i < trn_model_num_params(m); i++) {
        trn_param_view v;
        float *sl[TRN_OPT_SLOTS_MAX];
        trn_model_param(m, i, &v);
        size_t ns = trn_model_slots(m, i, sl);
        assert_true(ns >= 1);
        if (v.sparse) {
            assert_int_equal(v.rows, 3);
            seen_sparse = 1;
            for (uint64_t r = 0; r < v.rows; r++) {
                int touched = r == 1; /* "q" */
                assert_int_equal(v.data[r] != 0.0f, touched);
                assert_int_equal(sl[0][r] != rms0, touched);
            }
        } else {
            seen_dense = 1;
            for (uint64_t k = 0; k < v.count; k++)
                assert_true(sl[0][k] != rms0);
        }
    }
    assert_true(seen_sparse && seen_dense);
    small_free(&sm);
}

static void test_sparse_rows_untouched(void **state)
{
    (void)state;
    sparse_step("{\"type\": \"RMSProp\", \"learning_rate\": 0.1, \"momentum\": 0.9,"
                " \"centered\": true}", 1.0f);
    sparse_step("{\"type\": \"ProximalAdagrad\", \"learning_rate\": 0.1,"
                " \"l1_regularization_strength\": 0.001}", 0.1f);
}

static double lr_at(trn_lr_decay d, int64_t step)
{
    trn_optimizer o;
    memset(&o, 0, sizeof o);
    o.learning_rate = 0.1;
    o.lr_decay = d;
    return trn_optim_lr(&o, step);
}

static void expect_lr(trn_lr_decay d, const int64_t *steps, const double *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double got = lr_at(d, steps[i]);
        if (fabs(got - want[i]) > 1e-9 * fmax(1e-3, fabs(want[i])))
            fail_msg("schedule %d at step %lld: %.12g, want %.12g", (int)d.type,
                     (long long)steps[i], got, want[i]);
    }
}

static void test_decay_known_answers(void **state)
{
    (void)state;
    trn_lr_decay d;
    memset(&d, 0, sizeof d);
    assert_true(lr_at(d, 123456) == 0.1); /* no schedule */
    d.type = TRN_LR_EXPONENTIAL;
    d.decay_steps = 100;
    d.decay_rate = 0.96;
    static const int64_t es[] = {0, 50, 150, 1000};
    static const double smooth[] = {0.1, 0.0979795897, 0.0940604061, 0.0664832636};
    static const double stair[] = {0.1, 0.1, 0.096, 0.0664832636};
    expect_lr(d, es, smooth, 4);
    d.staircase = 1;
    expect_lr(d, es, stair, 4);

    memset(&d, 0, sizeof d);
    d.type = TRN_LR_COSINE;
    d.decay_steps = 1000;
    static const int64_t cs[] = {0, 250, 500, 1000, 2000};
    static const double a0[] = {0.1, 0.0853553391, 0.05, 0, 0};
    static const double a1[] = {0.1, 0.0868198052, 0.055, 0.01, 0.01};
    expect_lr(d, cs, a0, 5);
    d.alpha = 0.1;
    expect_lr(d, cs, a1, 5);

    memset(&d, 0, sizeof d);
    d.type = TRN_LR_POLYNOMIAL;
    d.decay_steps = 1000;
    d.end_learning_rate = 0.01;
    d.power = 2;
    static const int64_t ps[] = {0, 500, 1000, 1500};
    static const double nc[] = {0.1, 0.0325, 0.01, 0.01};
    static const double cy[] = {0.1, 0.0325, 0.01, 0.015625};
    expect_lr(d, ps, nc, 4);
    d.cycle = 1;
    expect_lr(d, ps, cy, 4);
}

/* The model's update uses the rate of its global step: SGD with
 * exponential_decay(rate 0.5, 1 step, staircase) moves the bias by
 * -0.1 * 0.5^step * gradient. */
static void test_decay_applied_by_step(void **state)
{
    (void)state;
    small sm;
    static const double xs[1] = {1.0};
    small_new(&sm, "{\"type\": \"SGD\", \"learning_rate\": 0.1, \"learning_rate_decay\":"
                   " {\"type\": \"exponential_decay\", \"decay_steps\": 1, \"decay_rate\": 0.5,"
                   " \"staircase\": true}}",
              xs, 1, "p");
    trn_model *m = sm.m;
    rt_err err;
    float label = 1;
    static const int64_t steps[] = {0, 1, 2, 10};
    for (size_t t = 0; t < 4; t++) {
        trn_model_set_step(m, steps[t]);
        double loss;
        assert_int_equal(trn_model_gradients(m, sm.b, &label, NULL, &loss, &err), RT_OK);
        float w[8], gr[8];
        size_t n = trn_model_num_params(m), checked = 0;
        assert_true(n <= 8);
        for (size_t i = 0; i < n; i++) {
            trn_param_view v;
            trn_model_param(m, i, &v);
            w[i] = v.data[0];
            gr[i] = v.grad[0];
        }
        trn_model_apply(m);
        float lr = (float)(0.1 * pow(0.5, (double)steps[t]));
        for (size_t i = 0; i < n; i++) {
            trn_param_view v;
            trn_model_param(m, i, &v);
            if (v.sparse)
                continue; /* x's weight and the bias */
            assert_true(gr[i] != 0.0f);
            assert_true(v.data[0] == w[i] - lr * gr[i]);
            checked++;
        }
        assert_int_equal(checked, 2);
    }
    small_free(&sm);
}

static rt_status parse_opt(const char *opt, trn_config *c, rt_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, SPARSE_SPEC, opt);
    cJSON *spec = cJSON_Parse(text);
    assert_non_null(spec);
    trn_config_init(c);
    rt_status st = trn_config_from_spec(spec, c, err);
    cJSON_Delete(spec);
    return st;
}

static void test_spec_defaults_and_refusals(void **state)
{
    (void)state;
    trn_config c;
    rt_err err;
    assert_int_equal(parse_opt("\"RMSProp\"", &c, &err), RT_OK);
    assert_int_equal(c.linear_opt.type, TRN_OPT_RMSPROP);
    assert_true(c.linear_opt.decay == 0.9 && c.linear_opt.momentum == 0 &&
                c.linear_opt.epsilon == 1e-10 && !c.linear_opt.centered);
    trn_config_free(&c);
    assert_int_equal(parse_opt("{\"type\": \"RMSProp\", \"decay\": 0.5, \"momentum\": 0.25,"
                               " \"epsilon\": 0.001, \"centered\": true}", &c, &err), RT_OK);
    assert_true(c.linear_opt.decay == 0.5 && c.linear_opt.momentum == 0.25 &&
                c.linear_opt.epsilon == 0.001 && c.linear_opt.centered);
    trn_config_free(&c);
    assert_int_equal(parse_opt("\"ProximalAdagrad\"", &c, &err), RT_OK);
    assert_int_equal(c.linear_opt.type, TRN_OPT_PROXIMAL_ADAGRAD);
    assert_true(c.linear_opt.initial_accumulator == 0.1 && c.linear_opt.l1 == 0 &&
                c.linear_opt.l2 == 0);
    trn_config_free(&c);
    assert_int_equal(parse_opt("{\"type\": \"ProximalAdagrad\", \"initial_accumulator_value\": 0}",
                               &c, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "estimator.optimizer.initial_accumulator_value"));
    trn_config_free(&c);
    assert_int_equal(parse_opt("{\"type\": \"RMSProp\", \"centered\": 1}", &c, &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "estimator.optimizer.centered"));
    trn_config_free(&c);
    assert_int_equal(parse_opt("{\"type\": \"Adam\", \"learning_rate_decay\": {\"type\":"
                               " \"polynomial_decay\", \"decay_steps\": 10}}", &c, &err), RT_OK);
    assert_int_equal(c.linear_opt.lr_decay.type, TRN_LR_POLYNOMIAL);
    assert_true(c.linear_opt.lr_decay.end_learning_rate == 0.0001 &&
                c.linear_opt.lr_decay.power == 1 && !c.linear_opt.lr_decay.cycle);
    trn_config_free(&c);
    static const char *const bad[][2] = {
        {"{\"type\": \"Adam\", \"learning_rate_decay\": {\"type\": \"exponential_decay\","
         " \"decay_steps\": 10}}", "learning_rate_decay.decay_rate: missing"},
        {"{\"type\": \"Adam\", \"learning_rate_decay\": {\"type\": \"cosine_decay\"}}",
         "learning_rate_decay.decay_steps: missing"},
        {"{\"type\": \"Adam\", \"learning_rate_decay\": {\"type\": \"cosine_decay\","
         " \"decay_steps\": 0}}", "learning_rate_decay.decay_steps"},
        {"{\"type\": \"Adam\", \"learning_rate_decay\": {\"type\": \"cosine_decay\","
         " \"decay_steps\": 5, \"staircase\": true}}",
         "learning_rate_decay.staircase: is not a parameter of cosine_decay"},
        {"{\"type\": \"Adam\", \"learning_rate_decay\": {\"type\": \"linear_decay\","
         " \"decay_steps\": 5}}", "learning_rate_decay.type"},
        {"{\"type\": \"Ftrl\", \"learning_rate_decay\": {\"type\": \"cosine_decay\","
         " \"decay_steps\": 5}}", "Ftrl needs a learning rate > 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse_opt(bad[i][0], &c, &err), RT_ERR_INVALID);
        if (!strstr(err.msg, bad[i][1]))
            fail_msg("%s: got \"%s\", want \"%s\"", bad[i][0], err.msg, bad[i][1]);
        trn_config_free(&c);
    }
    assert_int_equal(parse_opt("{\"type\": \"RMSprop\"}", &c, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "RMSProp or ProximalAdagrad"));
    trn_config_free(&c);
}

/* tf.clip_by_global_norm: factor clip / max(norm, clip), over the tensors of
 * one optimizer (dense ones whole, sparse ones their touched rows), the
 * moving statistics and the other optimizer's tensors left alone. */
static void test_clip_by_global_norm(void **state)
{
    (void)state;
    assert_true(trn_optim_clip_scale(13.0, 6.5) == 0.5);
    assert_true(trn_optim_clip_scale(2.0, 5.0) == 1.0);
    assert_true(trn_optim_clip_scale(5.0, 5.0) == 1.0);
    float lin_g[2] = {3, 4}, dense_g[3] = {1, 2, 2}, bn_g[1] = {7};
    float sp_g[8] = {0, 0, 2, 0, 100, 100, 0, 4}; /* row 2 untouched: not counted */
    uint32_t touched[2] = {1, 3};
    tparam ps[4];
    memset(ps, 0, sizeof ps);
    ps[0] = (tparam){.name = "lin", .count = 2, .rows = 2, .cols = 1, .grad = lin_g};
    ps[1] = (tparam){.name = "k", .count = 3, .rows = 3, .cols = 1, .grad = dense_g, .dnn = 1};
    ps[2] = (tparam){.name = "mv", .kind = TP_BN_MOVING, .count = 1, .rows = 1, .cols = 1,
                     .grad = bn_g, .dnn = 1};
    ps[3] = (tparam){.name = "emb", .count = 8, .rows = 4, .cols = 2, .grad = sp_g, .dnn = 1,
                     .sparse = 1, .touched = touched, .n_touched = 2};
    /* a clip above the norm: nothing moves, bit for bit */
    float before[8];
    memcpy(before, sp_g, sizeof sp_g);
    double norm = trn_optim_clip(ps, 4, 1, 100.0);
    assert_true(fabs(norm - sqrt(29.0)) < 1e-12); /* 1 + 4 + 4 (dense) + 4 + 16 (touched) */
    assert_memory_equal(before, sp_g, sizeof sp_g);
    assert_true(dense_g[0] == 1 && dense_g[1] == 2 && dense_g[2] == 2);
    /* clip 2: everything of the DNN optimizer times 2 / sqrt(29) */
    norm = trn_optim_clip(ps, 4, 1, 2.0);
    assert_true(fabs(norm - sqrt(29.0)) < 1e-12);
    double f = 2.0 / sqrt(29.0);
    const double want_dense[3] = {1 * f, 2 * f, 2 * f};
    const double want_sp[8] = {0, 0, 2 * f, 0, 100, 100, 0, 4 * f};
    for (size_t k = 0; k < 3; k++)
        assert_true(fabs(dense_g[k] - want_dense[k]) < 1e-6);
    for (size_t k = 0; k < 8; k++)
        assert_true(fabs(sp_g[k] - want_sp[k]) < 1e-6);
    double after = 0;
    for (size_t k = 0; k < 3; k++)
        after += (double)dense_g[k] * dense_g[k];
    after += (double)sp_g[2] * sp_g[2] + (double)sp_g[7] * sp_g[7];
    assert_true(fabs(sqrt(after) - 2.0) < 1e-6); /* the clipped global norm is clip_norm */
    assert_true(bn_g[0] == 7 && lin_g[0] == 3 && lin_g[1] == 4);
    /* the linear optimizer's: norm 5, clip 2.5 halves */
    norm = trn_optim_clip(ps, 4, 0, 2.5);
    assert_true(norm == 5.0 && lin_g[0] == 1.5f && lin_g[1] == 2.0f);
}

static void test_clip_norm_spec(void **state)
{
    (void)state;
    trn_config c;
    rt_err err;
    assert_int_equal(parse_opt("\"Adam\"", &c, &err), RT_OK);
    assert_true(c.linear_opt.clip_norm == 0); /* no clipping by default */
    trn_config_free(&c);
    assert_int_equal(parse_opt("{\"type\": \"Adam\", \"clip_norm\": 1.5}", &c, &err), RT_OK);
    assert_true(c.linear_opt.clip_norm == 1.5);
    trn_config_free(&c);
    static const char *const bad[] = {"0", "-1", "1e999", "\"big\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char opt[128];
        snprintf(opt, sizeof opt, "{\"type\": \"SGD\", \"clip_norm\": %s}", bad[i]);
        assert_int_equal(parse_opt(opt, &c, &err), RT_ERR_INVALID);
        if (!strstr(err.msg, "estimator.optimizer.clip_norm"))
            fail_msg("%s: \"%s\" does not name the key", bad[i], err.msg);
        trn_config_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsprop_known_answers),
        cmocka_unit_test(test_proximal_adagrad_known_answers),
        cmocka_unit_test(test_sparse_rows_untouched),
        cmocka_unit_test(test_decay_known_answers),
        cmocka_unit_test(test_decay_applied_by_step),
        cmocka_unit_test(test_spec_defaults_and_refusals),
        cmocka_unit_test(test_clip_by_global_norm),
        cmocka_unit_test(test_clip_norm_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
