/* test_trn_gbdt.c — the boosted trees' trainer core: quantile edges and
 * bins, hand-checked gains and leaf values (L1, L2, learning rate,
 * tree_complexity), the histogram split search against a brute-force search
 * over every threshold and every category subset computed from the rows,
 * pruning modes, center_bias, multi-class leaf vectors, resuming from a
 * checkpointed ensemble to the same bytes, and the tree parameters of the
 * spec (defaults, refusals). */
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

/* ---------------------------------------------------------------- helpers */

/* A data set of up to 4 inputs and 512 rows held in the test. */
typedef struct tdata {
    tg_data d;
    tg_kind kind[4];
    uint32_t n_bins[4];
    float *edges[4];
    uint16_t *bins[4];
    uint16_t store[4][512];
} tdata;

static void tdata_init(tdata *t, size_t n_rows, size_t n_inputs)
{
    memset(t, 0, sizeof *t);
    t->d.n_rows = n_rows;
    t->d.n_inputs = n_inputs;
    t->d.kind = t->kind;
    t->d.n_bins = t->n_bins;
    t->d.edges = t->edges;
    t->d.bins = t->bins;
    for (size_t j = 0; j < 4; j++)
        t->bins[j] = t->store[j];
}

static trn_gbdt_params params(void)
{
    trn_config c;
    trn_config_init(&c);
    return c.gbdt;
}

/* An empty ensemble the test owns (the trainer's is the ModelDef's). */
static Predictd__TreeEnsemble *ens_new(void)
{
    Predictd__TreeEnsemble *e = malloc(sizeof *e);
    assert_non_null(e);
    predictd__tree_ensemble__init(e);
    return e;
}

static void ens_free(Predictd__TreeEnsemble *e)
{
    predictd__tree_ensemble__free_unpacked(e, NULL);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* ------------------------------------------------------------ edges, bins */

static void test_edges(void **state)
{
    (void)state;
    float v[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    float *e;
    size_t n;
    /* q = 1 / 0.2 = 5 quantiles: ranks ceil(k 10 / 5) - 1 = 1, 3, 5, 7, 9 */
    assert_int_equal(trn_gbdt_edges(v, 10, 0.2, &e, &n, NULL), RT_OK);
    assert_int_equal(n, 5);
    float want[5] = {2, 4, 6, 8, 10};
    for (size_t i = 0; i < 5; i++)
        assert_true(e[i] == want[i]);
    /* value v is in bin b when e[b-1] < v <= e[b]; NaN and above: missing */
    assert_int_equal(trn_gbdt_bin(e, n, 1), 0);
    assert_int_equal(trn_gbdt_bin(e, n, 2), 0);
    assert_int_equal(trn_gbdt_bin(e, n, 2.5f), 1);
    assert_int_equal(trn_gbdt_bin(e, n, 10), 4);
    assert_int_equal(trn_gbdt_bin(e, n, 11), 5);
    assert_int_equal(trn_gbdt_bin(e, n, NAN), 5);
    free(e);
    /* few distinct values: one bin each, whatever epsilon */
    float w[6] = {3, 1, 3, 1, 2, 3};
    assert_int_equal(trn_gbdt_edges(w, 6, 0.01, &e, &n, NULL), RT_OK);
    assert_int_equal(n, 3);
    assert_true(e[0] == 1 && e[1] == 2 && e[2] == 3);
    free(e);
    /* at most 255 bins however small epsilon is */
    float *many = malloc(1000 * sizeof *many);
    for (int i = 0; i < 1000; i++)
        many[i] = (float)i;
    assert_int_equal(trn_gbdt_edges(many, 1000, 1e-6, &e, &n, NULL), RT_OK);
    assert_true(n >= 250 && n <= 255);
    assert_true(e[n - 1] == 999);
    free(e);
    /* a heavy value (90 % zeros) takes one bin; the others share the rest:
     * 10 bins for 100 values, 90 zeros, then 1..10: zeros, then 9 bins for
     * 10 values (1 and 2 share one: a share is 10 / 9 rows) */
    for (int i = 0; i < 100; i++)
        many[i] = i < 90 ? 0.0f : (float)(i - 89);
    assert_int_equal(trn_gbdt_edges(many, 100, 0.1, &e, &n, NULL), RT_OK);
    assert_int_equal(n, 10);
    assert_true(e[0] == 0 && e[1] == 2 && e[2] == 3 && e[9] == 10);
    free(e);
    free(many);
}

/* ------------------------------------------------- hand-checked one split */

/* x = 1, 2, 3, 4 (numeric, 4 bins), y = 0, 0, 10, 10, squared error: with
 * logits 0, g = -y, h = 1 and the means over the 4 rows are: left (x <= 2)
 * G = 0, H = 0.5; right G = -5, H = 0.5; parent G = -5, H = 1. */
static void setup_four(tdata *t, float *edges)
{
    tdata_init(t, 4, 1);
    t->kind[0] = TG_NUMERIC;
    t->n_bins[0] = 5;
    for (int i = 0; i < 4; i++) {
        edges[i] = (float)(i + 1);
        t->store[0][i] = (uint16_t)i;
    }
    t->edges[0] = edges;
}

static Predictd__TreeEnsemble *ens;

static const Predictd__Tree *one_tree(tdata *t, const float *y, trn_gbdt_params p,
                                      tg_booster **bo)
{
    if (ens)
        ens_free(ens);
    ens = ens_new();
    assert_int_equal(trn_gbdt_new(&t->d, y, PREDICTD__HEAD_TYPE__HEAD_REGRESSION, 1, &p, NULL,
                                  ens, bo, NULL),
                     RT_OK);
    assert_int_equal(trn_gbdt_step(*bo, NULL), RT_OK);
    assert_int_equal(ens->n_trees, 1);
    return ens->trees[0];
}

static void test_hand_gain(void **state)
{
    (void)state;
    tdata t;
    float edges[4], y[4] = {0, 0, 10, 10};
    setup_four(&t, edges);
    trn_gbdt_params p = params();
    p.max_depth = 1;
    p.learning_rate = 1;
    tg_booster *bo;
    /* no regularization: gain = 25 / 0.5 - 25 / 1 = 25, leaves 0 and 10 */
    const Predictd__Tree *tr = one_tree(&t, y, p, &bo);
    assert_int_equal(tr->n_nodes, 3);
    assert_int_equal(tr->nodes[0]->input, 0);
    assert_true(tr->nodes[0]->threshold == 2.0f);
    assert_true(fabs(tr->nodes[0]->gain - 25.0) < 1e-5);
    assert_true(fabs(tr->nodes[tr->nodes[0]->left]->leaf_value[0] - 0.0) < 1e-6);
    assert_true(fabs(tr->nodes[tr->nodes[0]->right]->leaf_value[0] - 10.0) < 1e-5);
    assert_true(fabs(tr->nodes[0]->node_weight - 4.0) < 1e-9); /* sum of hessians */
    const float *f = trn_gbdt_logits(bo);
    assert_true(fabs(f[0]) < 1e-6 && fabs(f[3] - 10) < 1e-5);
    trn_gbdt_free(bo);

    /* l2 = 1: gain = 25 / 1.5 - 25 / 2; right leaf 5 / 1.5, times lr 0.1 */
    p.l2 = 1;
    p.learning_rate = 0.1;
    tr = one_tree(&t, y, p, &bo);
    assert_true(fabs(tr->nodes[0]->gain - (25.0 / 1.5 - 12.5)) < 1e-5);
    assert_true(fabs(tr->nodes[tr->nodes[0]->right]->leaf_value[0] - 0.1 * 5 / 1.5) < 1e-6);
    trn_gbdt_free(bo);

    /* l1 = 1 (l2 = 0): G shrinks by 1 towards 0: right T(-5) = -4, parent
     * T(-5) = -4: gain = 16 / 0.5 - 16 / 1 = 16, right leaf 4 / 0.5 = 8;
     * tree_complexity 3 is taken off the gain */
    p.l2 = 0;
    p.l1 = 1;
    p.learning_rate = 1;
    p.tree_complexity = 3;
    tr = one_tree(&t, y, p, &bo);
    assert_true(fabs(tr->nodes[0]->gain - 13.0) < 1e-5);
    assert_true(fabs(tr->nodes[tr->nodes[0]->right]->leaf_value[0] - 8.0) < 1e-5);
    trn_gbdt_free(bo);

    /* min_node_weight 0.6 > each child's mean hessian 0.5: no split */
    p = params();
    p.max_depth = 1;
    p.min_node_weight = 0.6;
    tr = one_tree(&t, y, p, &bo);
    assert_int_equal(tr->n_nodes, 1);
    assert_true(fabs(tr->nodes[0]->leaf_value[0] - 0.1 * 5.0) < 1e-6); /* -G/H = 5 */
    trn_gbdt_free(bo);
}

/* A missing value learns its direction: rows 0, 1 missing with y = 10 join
 * the right (x > 2) rows of y = 10. */
static void test_missing_direction(void **state)
{
    (void)state;
    tdata t;
    float edges[4], y[6] = {10, 10, 0, 0, 10, 10};
    tdata_init(&t, 6, 1);
    t.kind[0] = TG_NUMERIC;
    t.n_bins[0] = 5;
    for (int i = 0; i < 4; i++)
        edges[i] = (float)(i + 1);
    t.edges[0] = edges;
    uint16_t b[6] = {4, 4, 0, 1, 2, 3};
    memcpy(t.store[0], b, sizeof b);
    trn_gbdt_params p = params();
    p.max_depth = 1;
    tg_booster *bo;
    const Predictd__Tree *tr = one_tree(&t, y, p, &bo);
    assert_int_equal(tr->n_nodes, 3);
    assert_true(tr->nodes[0]->threshold == 2.0f);
    assert_false(tr->nodes[0]->default_left);
    trn_gbdt_free(bo);
}

/* ------------------------------------------- brute force vs. histograms */

/* The best gain over every split computed from the rows: thresholds and
 * both directions of missing values for ordered inputs, every subset of
 * the present categories for categorical ones. */
static double brute_best(const tdata *t, const double *g, const double *h,
                         const trn_gbdt_params *p, long *input)
{
    size_t n = t->d.n_rows;
    double N = (double)n, G = 0, H = 0;
    for (size_t i = 0; i < n; i++) {
        G += g[i];
        H += h[i];
    }
#define SC(a, b) ((b) / N + p->l2 > 0 ? ((a) / N) * ((a) / N) / ((b) / N + p->l2) : 0.0)
    double parent = SC(G, H), best = -INFINITY;
    *input = -1;
    for (size_t j = 0; j < t->d.n_inputs; j++) {
        uint32_t nv = t->n_bins[j] - 1;
        uint32_t n_sets = t->kind[j] == TG_CATEGORICAL ? (1u << nv) : nv;
        for (uint32_t s = 0; s < n_sets; s++) {
            for (int ml = 0; ml < 2; ml++) {
                double gl = 0, hl = 0, cl = 0;
                for (size_t i = 0; i < n; i++) {
                    uint32_t b = t->bins[j][i];
                    int left = b == nv ? ml
                               : t->kind[j] == TG_CATEGORICAL ? (int)((s >> b) & 1)
                                                              : b <= s;
                    if (left) {
                        gl += g[i];
                        hl += h[i];
                        cl += 1;
                    }
                }
                if (cl == 0 || cl == N)
                    continue;
                if (hl / N < p->min_node_weight || (H - hl) / N < p->min_node_weight)
                    continue;
                double gain = SC(gl, hl) + SC(G - gl, H - hl) - parent - p->tree_complexity;
                if (gain > best + 1e-12) {
                    best = gain;
                    *input = (long)j;
                }
            }
        }
    }
#undef SC
    return best;
}

static void random_data(tdata *t, uint64_t seed, size_t n, float *y, float *edges)
{
    tdata_init(t, n, 3);
    t->kind[0] = TG_NUMERIC;
    t->n_bins[0] = 9; /* 8 value bins + missing */
    for (int i = 0; i < 8; i++)
        edges[i] = (float)i * 0.5f;
    t->edges[0] = edges;
    t->kind[1] = TG_CATEGORICAL;
    t->n_bins[1] = 6; /* 5 categories + missing */
    t->kind[2] = TG_ORDINAL;
    t->n_bins[2] = 5;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        t->store[0][i] = (uint16_t)(lcg(&s) % 9);
        t->store[1][i] = (uint16_t)(lcg(&s) % 6);
        t->store[2][i] = (uint16_t)(lcg(&s) % 4); /* no missing values */
        /* a label that depends on every input, with noise */
        int c = t->store[1][i];
        double z = (t->store[0][i] == 8 ? 1.0 : 0.3 * t->store[0][i] - 1.0) +
                   (c == 1 || c == 3 ? 1.2 : c == 5 ? 0.8 : -0.7) + 0.2 * t->store[2][i] +
                   ((double)(lcg(&s) % 1000) / 500.0 - 1.0);
        y[i] = z > 0 ? 1.0f : 0.0f;
    }
}

static void test_brute_force(void **state)
{
    (void)state;
    static tdata t;
    float y[300], edges[8];
    double g[300], h[300];
    for (uint64_t seed = 1; seed <= 6; seed++) {
        random_data(&t, seed, 300, y, edges);
        trn_gbdt_params p = params();
        p.max_depth = 1;
        p.learning_rate = 0.7;
        p.l2 = 0;
        p.tree_complexity = seed % 2 ? 0.0 : 0.001;
        p.min_node_weight = seed == 3 ? 0.05 : 0;
        tg_booster *bo;
        Predictd__TreeEnsemble *e = ens_new();
        assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, &p, NULL, e,
                                      &bo, NULL),
                         RT_OK);
        /* two trees: the second one's gradients have hessians that differ
         * from row to row */
        for (int k = 0; k < 2; k++) {
            const float *f = trn_gbdt_logits(bo);
            for (size_t i = 0; i < 300; i++) {
                double pr = 1 / (1 + exp(-(double)f[i]));
                g[i] = pr - y[i];
                h[i] = pr * (1 - pr);
            }
            long want_input;
            double want = brute_best(&t, g, h, &p, &want_input);
            assert_int_equal(trn_gbdt_step(bo, NULL), RT_OK);
            const Predictd__TreeNode *root = e->trees[k]->nodes[0];
            assert_int_equal(root->input, want_input);
            assert_true(fabs(root->gain - want) <= 1e-5 * fabs(want) + 1e-7);
        }
        trn_gbdt_free(bo);
        ens_free(e);
    }
}

/* ------------------------------------------------- trees, pruning, resume */

static size_t count_splits(const Predictd__TreeEnsemble *e, int negative_leaf_parents)
{
    size_t n = 0;
    for (size_t t = 0; t < e->n_trees; t++)
        for (size_t k = 0; k < e->trees[t]->n_nodes; k++) {
            const Predictd__TreeNode *nd = e->trees[t]->nodes[k];
            if (nd->input < 0)
                continue;
            const Predictd__TreeNode *l = e->trees[t]->nodes[nd->left];
            const Predictd__TreeNode *r = e->trees[t]->nodes[nd->right];
            if (!negative_leaf_parents)
                n++;
            else if (nd->gain < 0 && l->input < 0 && r->input < 0)
                n++;
        }
    return n;
}

static size_t count_negative(const Predictd__TreeEnsemble *e)
{
    size_t n = 0;
    for (size_t t = 0; t < e->n_trees; t++)
        for (size_t k = 0; k < e->trees[t]->n_nodes; k++)
            n += e->trees[t]->nodes[k]->input >= 0 && e->trees[t]->nodes[k]->gain < 0;
    return n;
}

static void test_pruning(void **state)
{
    (void)state;
    static tdata t;
    float y[400], edges[8];
    random_data(&t, 11, 400, y, edges);
    trn_gbdt_params p = params();
    p.max_depth = 4;
    p.n_trees = 3;
    p.tree_complexity = 0.004;
    size_t splits[3];
    for (int mode = 0; mode < 3; mode++) {
        p.pruning = (trn_pruning_mode)mode;
        tg_booster *bo;
        Predictd__TreeEnsemble *e = ens_new();
        assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, &p, NULL, e,
                                      &bo, NULL),
                         RT_OK);
        for (int k = 0; k < 3; k++)
            assert_int_equal(trn_gbdt_step(bo, NULL), RT_OK);
        splits[mode] = count_splits(e, 0);
        if (mode == TRN_PRUNE_NONE)
            assert_true(count_negative(e) > 0); /* the test needs some */
        if (mode == TRN_PRUNE_PRE)
            assert_int_equal(count_negative(e), 0);
        if (mode == TRN_PRUNE_POST)
            assert_int_equal(count_splits(e, 1), 0);
        /* every tree's nodes: children after their parent, leaves valued */
        for (size_t tt = 0; tt < e->n_trees; tt++)
            for (size_t k = 0; k < e->trees[tt]->n_nodes; k++) {
                const Predictd__TreeNode *nd = e->trees[tt]->nodes[k];
                if (nd->input >= 0)
                    assert_true(nd->left > k && nd->right > k);
                else
                    assert_int_equal(nd->n_leaf_value, 1);
            }
        trn_gbdt_free(bo);
        ens_free(e);
    }
    assert_true(splits[TRN_PRUNE_PRE] < splits[TRN_PRUNE_NONE]);
    assert_true(splits[TRN_PRUNE_POST] < splits[TRN_PRUNE_NONE]);
}

static uint8_t *pack(const Predictd__TreeEnsemble *e, size_t *len)
{
    *len = predictd__tree_ensemble__get_packed_size(e);
    uint8_t *buf = malloc(*len ? *len : 1);
    predictd__tree_ensemble__pack(e, buf);
    return buf;
}

static void test_resume_same_bytes(void **state)
{
    (void)state;
    static tdata t;
    float y[300], edges[8];
    random_data(&t, 5, 300, y, edges);
    trn_gbdt_params p = params();
    p.center_bias = 1;
    tg_booster *full, *part, *resumed;
    Predictd__TreeEnsemble *ef = ens_new(), *ep = ens_new();
    assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, &p, NULL, ef,
                                  &full, NULL),
                     RT_OK);
    assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, &p, NULL, ep,
                                  &part, NULL),
                     RT_OK);
    double loss0 = trn_gbdt_train_loss(full);
    for (int k = 0; k < 6; k++)
        assert_int_equal(trn_gbdt_step(full, NULL), RT_OK);
    assert_true(trn_gbdt_train_loss(full) < loss0);
    for (int k = 0; k < 3; k++)
        assert_int_equal(trn_gbdt_step(part, NULL), RT_OK);
    /* the checkpoint: the partial ensemble's bytes, read back */
    size_t len;
    uint8_t *buf = pack(ep, &len);
    Predictd__TreeEnsemble *ck = predictd__tree_ensemble__unpack(NULL, len, buf);
    free(buf);
    assert_non_null(ck);
    trn_gbdt_free(part);
    ens_free(ep);
    assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, &p, NULL, ck,
                                  &resumed, NULL),
                     RT_OK);
    for (int k = 0; k < 3; k++)
        assert_int_equal(trn_gbdt_step(resumed, NULL), RT_OK);
    size_t la, lb;
    uint8_t *a = pack(ef, &la);
    uint8_t *b = pack(ck, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    assert_memory_equal(trn_gbdt_logits(full), trn_gbdt_logits(resumed), 300 * sizeof(float));
    /* walking the trees gives the training logits */
    for (size_t i = 0; i < 300; i++) {
        float f = ef->bias[0];
        for (size_t k = 0; k < ef->n_trees; k++)
            f += ef->trees[k]->nodes[trn_gbdt_walk(ef, ef->trees[k], &t.d, i)]->leaf_value[0];
        assert_true(f == trn_gbdt_logits(full)[i]);
    }
    /* a tree that does not fit the data is refused */
    ck->trees[0]->nodes[0]->input = 7;
    rt_err err;
    assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, &p, NULL, ck,
                                  &part, &err),
                     RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "tree 0 node 0"));
    free(a);
    free(b);
    trn_gbdt_free(full);
    trn_gbdt_free(resumed);
    ens_free(ef);
    ens_free(ck);
}

static void test_center_bias_multiclass(void **state)
{
    (void)state;
    static tdata t;
    float y[300], edges[8];
    random_data(&t, 9, 300, y, edges);
    /* binary: bias = log(p / (1 - p)) of the label mean */
    double pos = 0;
    for (int i = 0; i < 300; i++)
        pos += y[i];
    trn_gbdt_params p = params();
    p.center_bias = 1;
    tg_booster *bo;
    Predictd__TreeEnsemble *e = ens_new();
    assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, &p, NULL, e, &bo,
                                  NULL),
                     RT_OK);
    double m = pos / 300;
    assert_true(fabs(e->bias[0] - log(m / (1 - m))) < 1e-6);
    assert_true(trn_gbdt_logits(bo)[7] == e->bias[0]);
    trn_gbdt_free(bo);
    ens_free(e);
    e = ens_new();
    /* three classes from the categorical input: one leaf vector a tree */
    for (int i = 0; i < 300; i++)
        y[i] = (float)(t.store[1][i] % 3);
    assert_int_equal(trn_gbdt_new(&t.d, y, PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS, 3, &p, NULL,
                                  e, &bo, NULL),
                     RT_OK);
    double l0 = trn_gbdt_train_loss(bo);
    for (int k = 0; k < 10; k++)
        assert_int_equal(trn_gbdt_step(bo, NULL), RT_OK);
    assert_int_equal(e->n_trees, 10);
    assert_int_equal(e->n_bias, 3);
    const Predictd__Tree *t0 = e->trees[0];
    assert_int_equal(t0->nodes[0]->input, 1);
    assert_int_equal(t0->nodes[0]->kind, PREDICTD__TREE_SPLIT_KIND__SPLIT_CATEGORY_SET);
    for (size_t k = 0; k < t0->n_nodes; k++)
        if (t0->nodes[k]->input < 0)
            assert_int_equal(t0->nodes[k]->n_leaf_value, 3);
    assert_true(trn_gbdt_train_loss(bo) < 0.5 * l0);
    trn_gbdt_free(bo);
    ens_free(e);
}

/* ------------------------------------------------------------ the spec */

static rt_status conf(const char *est, trn_config *c, rt_err *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"estimator\": {\"type\": \"BoostedTreesClassifier\"%s}}", est);
    cJSON *spec = cJSON_Parse(buf);
    assert_non_null(spec);
    trn_config_init(c);
    rt_status st = trn_config_from_spec(spec, c, err);
    cJSON_Delete(spec);
    return st;
}

static void test_spec_params(void **state)
{
    (void)state;
    trn_config c;
    rt_err err;
    assert_int_equal(conf("", &c, &err), RT_OK);
    assert_int_equal(c.gbdt.n_trees, 100);
    assert_int_equal(c.gbdt.max_depth, 6);
    assert_true(c.gbdt.learning_rate == 0.1);
    assert_true(c.gbdt.l1 == 0 && c.gbdt.l2 == 0 && c.gbdt.tree_complexity == 0);
    assert_true(c.gbdt.min_node_weight == 0 && c.gbdt.center_bias == 0);
    assert_int_equal(c.gbdt.pruning, TRN_PRUNE_NONE);
    assert_true(c.gbdt.quantile_sketch_epsilon == 0.01);
    assert_int_equal(c.gbdt.n_batches_per_layer, 1);
    trn_config_free(&c);
    assert_int_equal(conf(", \"n_trees\": 7, \"max_depth\": 3, \"learning_rate\": 0.3, "
                          "\"l1_regularization\": 0.5, \"l2_regularization\": 2, "
                          "\"tree_complexity\": 0.01, \"min_node_weight\": 0.1, "
                          "\"center_bias\": true, \"pruning_mode\": \"post\", "
                          "\"quantile_sketch_epsilon\": 0.005, \"n_batches_per_layer\": 4",
                          &c, &err),
                     RT_OK);
    assert_int_equal(c.gbdt.n_trees, 7);
    assert_int_equal(c.gbdt.max_depth, 3);
    assert_true(c.gbdt.learning_rate == 0.3 && c.gbdt.l1 == 0.5 && c.gbdt.l2 == 2);
    assert_true(c.gbdt.tree_complexity == 0.01 && c.gbdt.min_node_weight == 0.1);
    assert_true(c.gbdt.center_bias == 1 && c.gbdt.pruning == TRN_PRUNE_POST);
    assert_true(c.gbdt.quantile_sketch_epsilon == 0.005 && c.gbdt.n_batches_per_layer == 4);
    trn_config_free(&c);
    static const struct {
        const char *est, *msg;
    } bad[] = {
        {", \"n_trees\": 0", "estimator.n_trees"},
        {", \"n_trees\": 2.5", "estimator.n_trees"},
        {", \"max_depth\": 0", "estimator.max_depth"},
        {", \"max_depth\": 17", "estimator.max_depth"},
        {", \"learning_rate\": 0", "estimator.learning_rate"},
        {", \"learning_rate\": \"fast\"", "estimator.learning_rate"},
        {", \"l1_regularization\": -1", "estimator.l1_regularization"},
        {", \"l2_regularization\": -0.5", "estimator.l2_regularization"},
        {", \"tree_complexity\": -1", "estimator.tree_complexity"},
        {", \"min_node_weight\": -1", "estimator.min_node_weight"},
        {", \"center_bias\": 1", "estimator.center_bias"},
        {", \"pruning_mode\": \"sometimes\"", "estimator.pruning_mode"},
        {", \"pruning_mode\": \"pre\"", "estimator.tree_complexity: must be > 0 with "
                                        "pruning_mode \"pre\""},
        {", \"pruning_mode\": \"post\", \"tree_complexity\": 0", "estimator.tree_complexity"},
        {", \"quantile_sketch_epsilon\": 0", "estimator.quantile_sketch_epsilon"},
        {", \"quantile_sketch_epsilon\": 2", "estimator.quantile_sketch_epsilon"},
        {", \"n_batches_per_layer\": 0", "estimator.n_batches_per_layer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        rt_status st = conf(bad[i].est, &c, &err);
        if (st != RT_ERR_INVALID || !strstr(err.msg, bad[i].msg))
            fail_msg("%s: got %d \"%s\", expected \"%s\"", bad[i].est, st, err.msg, bad[i].msg);
        trn_config_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_hand_gain),
        cmocka_unit_test(test_missing_direction),
        cmocka_unit_test(test_brute_force),
        cmocka_unit_test(test_pruning),
        cmocka_unit_test(test_resume_same_bytes),
        cmocka_unit_test(test_center_bias_multiclass),
        cmocka_unit_test(test_spec_params),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (ens)
        ens_free(ens);
    return rc;
}
