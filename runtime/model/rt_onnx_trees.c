/*
 * rt_onnx_trees.c — ai.onnx.ml's TreeEnsembleClassifier and
 * TreeEnsembleRegressor (ml opsets 1-3): read into a checked array of nodes
 * and run row by row.
 *
 * Read as ONNX's operator definition (docs/Operators-ml.md) gives them: the
 * nodes_* attributes are tuples of one node each (tree id, node id, feature,
 * mode, threshold, true and false child ids, missing_value_tracks_true); the
 * class_* / target_* tuples are the leaves' weights. A node is found by its
 * (tree id, node id); every tree must be a tree: one root (a node no other
 * node names as a child), every other node the child of exactly one branch,
 * every node reached from the root (so no cycle), children and weights
 * naming nodes of the same tree, features inside the input's width, class
 * or target ids inside the outputs, a known mode, a finite threshold, and
 * weights only on LEAF nodes. nodes_values, the weights, base_values and
 * nodes_hitrates may come in ml opset 3's double form (<name>_as_tensor, read
 * by rt_onnx_plan_reals; both forms at once are refused); thresholds are kept
 * as doubles either way. A refusal names the node attribute, the tree
 * and node ids: "model.onnx: node \"te\" (TreeEnsembleClassifier): tree 0
 * node 3: nodes_truenodeids: 9 is not a node of tree 0".
 *
 * Evaluation, the float input widened to double against the threshold (as
 * ONNX Runtime compares under double thresholds; a float threshold compares
 * as in float): a branch goes to its true child when x <= t (BRANCH_LEQ),
 * x < t, x >= t, x > t, x == t, x != t, or when x is NaN and the node's
 * missing_value_tracks_true is 1; else to the false child (a NaN compares
 * false, so it goes false unless tracked, except for BRANCH_NEQ, where NaN
 * != t is true). Leaf weights are summed per class / target in double in
 * tree order (each instance from its own row: the same bits alone or in a
 * batch) and rounded to float once.
 *
 * Scores, as ONNX Runtime computes them (docs/models-from-elsewhere.md):
 * - regressor: aggregate_function SUM, AVERAGE (the sum over the trees'
 *   count), MIN, MAX (a target no leaf reached: 0), then + base_values
 *   (when they are one per target; one value for one target), then
 *   post_transform;
 * - classifier of 3+ classes: sum + base_values, post_transform over the
 *   classes, label the first highest score;
 * - classifier of 2 classes: ONNX Runtime's binary rules: when the weights
 *   name one class only (the usual export) the one score s becomes
 *   [1 - s, s] (all weights >= 0: label 1 when s > 0.5) or [-s, s] /
 *   [logistic(-s), logistic(s)] under LOGISTIC (mixed signs: label 1 when
 *   s > 0); when both classes carry weights, both scores go through
 *   post_transform and the label is the higher.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_onnx_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M_LEAF, M_LEQ, M_LT, M_GTE, M_GT, M_EQ, M_NEQ };
enum { AGG_SUM, AGG_AVERAGE, AGG_MIN, AGG_MAX };

typedef struct tnode {
    double value;    /* threshold: a float, or a double (nodes_values_as_tensor) */
    uint32_t feature;
    uint32_t t, f;   /* branch: children (node indexes) */
    uint32_t w0, nw; /* leaf: its weights [w0, w0 + nw) */
    uint8_t mode;
    uint8_t track;   /* missing_value_tracks_true */
} tnode;

struct rt_onnx_trees {
    size_t n_nodes, n_trees, n_out;
    tnode *nodes;
    uint32_t *roots;
    uint32_t *wid;   /* per weight: class / target */
    double *w;       /* per weight: value */
    double *base;
    size_t n_base;
    int agg, post;
    bool classifier, one_class, all_pos;
};

void rt_onnx_trees_free(struct rt_onnx_trees *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t->roots);
    free(t->wid);
    free(t->w);
    free(t->base);
    free(t);
}

/* ------------------------------------------------------- reading */

typedef struct key {
    int64_t tree, node;
    uint32_t idx;
} key;

static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->tree != y->tree)
        return x->tree < y->tree ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node ? 1 : 0;
}

/* The node index of (tree, node), or -1. */
static long key_find(const key *keys, size_t n, int64_t tree, int64_t node)
{
    key k = {tree, node, 0};
    const key *p = bsearch(&k, keys, n, sizeof *keys, key_cmp);
    return p ? (long)p->idx : -1;
}

static int mode_of(const ProtobufCBinaryData *s)
{
    static const char *const names[] = {"LEAF", "BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
                                        "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"};
    for (int k = 0; k < 7; k++)
        if (s->len == strlen(names[k]) && memcmp(s->data, names[k], s->len) == 0)
            return k;
    return -1;
}

typedef struct attrs {
    const int64_t *treeids, *nodeids, *featureids, *trueids, *falseids, *track;
    const ProtobufCBinaryData *modes;
    double *values, *w_val; /* malloc'd: float attributes or their _as_tensor doubles */
    const char *values_name, *w_val_name;
    size_t n, n_track;
    const int64_t *w_tree, *w_node, *w_id;
    size_t nw;
} attrs;

static rt_status read_attrs(reader *r, const Onnx__NodeProto *nd, bool cls, attrs *a)
{
    static const char *const ok_c[] = {
        "base_values", "base_values_as_tensor", "class_ids", "class_nodeids", "class_treeids",
        "class_weights", "class_weights_as_tensor", "classlabels_int64s",
        "classlabels_strings", "nodes_falsenodeids", "nodes_featureids", "nodes_hitrates",
        "nodes_hitrates_as_tensor", "nodes_missing_value_tracks_true", "nodes_modes",
        "nodes_nodeids", "nodes_treeids", "nodes_truenodeids", "nodes_values",
        "nodes_values_as_tensor", "post_transform", NULL};
    static const char *const ok_r[] = {
        "aggregate_function", "base_values", "base_values_as_tensor", "n_targets",
        "nodes_falsenodeids", "nodes_featureids", "nodes_hitrates", "nodes_hitrates_as_tensor",
        "nodes_missing_value_tracks_true", "nodes_modes", "nodes_nodeids", "nodes_treeids",
        "nodes_truenodeids", "nodes_values", "nodes_values_as_tensor", "post_transform",
        "target_ids", "target_nodeids", "target_treeids", "target_weights",
        "target_weights_as_tensor", NULL};
    size_t n[6], m[3], nv, nm, nwv, nh;
    double *hit;
    const char *hit_name;
    rt_status st;
    if ((st = rt_onnx_plan_only_attrs(r, nd, cls ? ok_c : ok_r)) ||
        (st = rt_onnx_plan_ints(r, nd, "nodes_treeids", &a->treeids, &n[0])) ||
        (st = rt_onnx_plan_ints(r, nd, "nodes_nodeids", &a->nodeids, &n[1])) ||
        (st = rt_onnx_plan_ints(r, nd, "nodes_featureids", &a->featureids, &n[2])) ||
        (st = rt_onnx_plan_ints(r, nd, "nodes_truenodeids", &a->trueids, &n[3])) ||
        (st = rt_onnx_plan_ints(r, nd, "nodes_falsenodeids", &a->falseids, &n[4])) ||
        (st = rt_onnx_plan_ints(r, nd, "nodes_missing_value_tracks_true", &a->track,
                                &a->n_track)) ||
        (st = rt_onnx_plan_strings(r, nd, "nodes_modes", &a->modes, &nm)) ||
        (st = rt_onnx_plan_reals(r, nd, "nodes_values", &a->values, &nv, &a->values_name)) ||
        (st = rt_onnx_plan_ints(r, nd, cls ? "class_treeids" : "target_treeids", &a->w_tree,
                                &m[0])) ||
        (st = rt_onnx_plan_ints(r, nd, cls ? "class_nodeids" : "target_nodeids", &a->w_node,
                                &m[1])) ||
        (st = rt_onnx_plan_ints(r, nd, cls ? "class_ids" : "target_ids", &a->w_id, &m[2])) ||
        (st = rt_onnx_plan_reals(r, nd, cls ? "class_weights" : "target_weights", &a->w_val,
                                 &nwv, &a->w_val_name)) ||
        (st = rt_onnx_plan_reals(r, nd, "nodes_hitrates", &hit, &nh, &hit_name)))
        return st;
    free(hit); /* only checked: hit rates do not change an answer */
    a->n = nm;
    n[5] = nv;
    const char *const nn[] = {"nodes_treeids", "nodes_nodeids", "nodes_featureids",
                              "nodes_truenodeids", "nodes_falsenodeids", a->values_name};
    if (nm == 0)
        return rt_onnx_plan_fail(r, nd, "attribute nodes_modes: no nodes");
    if (nm > UINT32_MAX / 2)
        return rt_onnx_plan_fail(r, nd, "%zu nodes: too many", nm);
    for (int k = 0; k < 6; k++)
        if (n[k] != nm)
            return rt_onnx_plan_fail(r, nd, "attribute %s: %zu values for %zu nodes "
                                     "(nodes_modes)", nn[k], n[k], nm);
    if (a->n_track && a->n_track != nm)
        return rt_onnx_plan_fail(r, nd, "attribute nodes_missing_value_tracks_true: %zu values "
                                 "for %zu nodes", a->n_track, nm);
    if (nh && nh != nm)
        return rt_onnx_plan_fail(r, nd, "attribute %s: %zu values for %zu nodes", hit_name, nh,
                                 nm);
    a->nw = m[0];
    if (m[1] != m[0] || m[2] != m[0] || nwv != m[0] || m[0] > UINT32_MAX / 2)
        return rt_onnx_plan_fail(r, nd, "attributes %s_treeids, _nodeids, _ids and %s: "
                                 "%zu, %zu, %zu and %zu values (one each per weight)",
                                 cls ? "class" : "target", a->w_val_name, m[0], m[1], m[2], nwv);
    return RT_OK;
}

/* The nodes in t, checked: every child and weight found, each tree a tree. */
static rt_status build_nodes(reader *r, const Onnx__NodeProto *nd, const attrs *a, size_t width,
                             struct rt_onnx_trees *t, key *keys, uint32_t *parents)
{
    size_t n = a->n;
    for (size_t i = 0; i < n; i++)
        keys[i] = (key){a->treeids[i], a->nodeids[i], (uint32_t)i};
    qsort(keys, n, sizeof *keys, key_cmp);
    for (size_t i = 1; i < n; i++)
        if (key_cmp(&keys[i - 1], &keys[i]) == 0)
            return rt_onnx_plan_fail(r, nd, "tree %" PRId64 " node %" PRId64 ": defined twice "
                                     "(nodes_treeids, nodes_nodeids)", keys[i].tree,
                                     keys[i].node);
    for (size_t i = 0; i < n; i++) {
        tnode *x = &t->nodes[i];
        int64_t tr = a->treeids[i], id = a->nodeids[i];
        int mode = mode_of(&a->modes[i]);
        if (mode < 0)
            return rt_onnx_plan_fail(r, nd, "tree %" PRId64 " node %" PRId64 ": nodes_modes: "
                                     "\"%.*s\" is not LEAF, BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, "
                                     "BRANCH_GT, BRANCH_EQ or BRANCH_NEQ", tr, id,
                                     (int)(a->modes[i].len < 40 ? a->modes[i].len : 40),
                                     (const char *)a->modes[i].data);
        x->mode = (uint8_t)mode;
        x->track = a->n_track && a->track[i] != 0;
        x->value = a->values[i];
        if (mode == M_LEAF)
            continue;
        if (a->featureids[i] < 0 || (uint64_t)a->featureids[i] >= width)
            return rt_onnx_plan_fail(r, nd, "tree %" PRId64 " node %" PRId64 ": "
                                     "nodes_featureids: %" PRId64 " is outside the input's %zu "
                                     "features", tr, id, a->featureids[i], width);
        x->feature = (uint32_t)a->featureids[i];
        long c[2] = {key_find(keys, n, tr, a->trueids[i]), key_find(keys, n, tr, a->falseids[i])};
        for (int s = 0; s < 2; s++) {
            if (c[s] < 0)
                return rt_onnx_plan_fail(r, nd, "tree %" PRId64 " node %" PRId64 ": %s: %" PRId64
                                         " is not a node of tree %" PRId64, tr, id,
                                         s ? "nodes_falsenodeids" : "nodes_truenodeids",
                                         s ? a->falseids[i] : a->trueids[i], tr);
            if (parents[c[s]]++ > 0 || (size_t)c[s] == i)
                return rt_onnx_plan_fail(r, nd, "tree %" PRId64 " node %" PRId64 ": %s: node %"
                                         PRId64 " is a child twice (not a tree: a cycle or a "
                                         "shared node)", tr, id,
                                         s ? "nodes_falsenodeids" : "nodes_truenodeids",
                                         s ? a->falseids[i] : a->trueids[i]);
        }
        x->t = (uint32_t)c[0];
        x->f = (uint32_t)c[1];
    }
    return RT_OK;
}

/* One root per tree id; every node reached from its root (stack: n slots). */
#define REACHED 0x80000000u /* a mark in parents[]: the walk from the root came here */

static rt_status check_trees(reader *r, const Onnx__NodeProto *nd, const attrs *a,
                             struct rt_onnx_trees *t, const key *keys, uint32_t *parents,
                             uint32_t *stack)
{
    size_t n = a->n, reached = 0;
    for (size_t i = 0; i < n;) { /* keys are sorted by tree: one run per tree */
        size_t j = i;
        long root = -1;
        for (; j < n && keys[j].tree == keys[i].tree; j++) {
            if (parents[keys[j].idx] == 0) {
                if (root >= 0)
                    return rt_onnx_plan_fail(r, nd, "tree %" PRId64 ": nodes %" PRId64 " and %"
                                             PRId64 " are both roots (no branch leads to them)",
                                             keys[j].tree, a->nodeids[root], keys[j].node);
                root = keys[j].idx;
            }
        }
        if (root < 0)
            return rt_onnx_plan_fail(r, nd, "tree %" PRId64 ": no root (every node is a child: "
                                     "a cycle)", keys[i].tree);
        t->roots[t->n_trees++] = (uint32_t)root;
        size_t sp = 0;
        stack[sp++] = (uint32_t)root;
        while (sp) {
            uint32_t k = stack[--sp];
            const tnode *x = &t->nodes[k];
            parents[k] |= REACHED;
            reached++;
            if (x->mode != M_LEAF) {
                stack[sp++] = x->t;
                stack[sp++] = x->f;
            }
        }
        i = j;
    }
    for (size_t i = 0; i < n && reached != n; i++)
        if (!(parents[i] & REACHED))
            return rt_onnx_plan_fail(r, nd, "tree %" PRId64 " node %" PRId64 ": not reached "
                                     "from the tree's root (on a cycle; %zu of %zu nodes are "
                                     "not reached)", a->treeids[i], a->nodeids[i], n - reached, n);
    return RT_OK;
}

/* The weights, grouped by leaf (in file order within a leaf). */
static rt_status build_weights(reader *r, const Onnx__NodeProto *nd, const attrs *a,
                               struct rt_onnx_trees *t, const key *keys, uint32_t *leaf_of)
{
    bool cls = t->classifier;
    for (size_t k = 0; k < a->nw; k++) {
        long i = key_find(keys, a->n, a->w_tree[k], a->w_node[k]);
        if (i < 0)
            return rt_onnx_plan_fail(r, nd, "%s weight %zu: tree %" PRId64 " node %" PRId64
                                     " is not a node", cls ? "class" : "target", k,
                                     a->w_tree[k], a->w_node[k]);
        if (t->nodes[i].mode != M_LEAF)
            return rt_onnx_plan_fail(r, nd, "%s weight %zu: tree %" PRId64 " node %" PRId64
                                     " is not a LEAF", cls ? "class" : "target", k,
                                     a->w_tree[k], a->w_node[k]);
        if (a->w_id[k] < 0 || (uint64_t)a->w_id[k] >= t->n_out)
            return rt_onnx_plan_fail(r, nd, "%s_ids[%zu]: %" PRId64 " is outside the %zu %s",
                                     cls ? "class" : "target", k, a->w_id[k], t->n_out,
                                     cls ? "classes" : "targets");
        leaf_of[k] = (uint32_t)i;
        t->nodes[i].nw++;
    }
    uint32_t pos = 0;
    for (size_t i = 0; i < a->n; i++) {
        t->nodes[i].w0 = pos;
        pos += t->nodes[i].nw;
        t->nodes[i].nw = 0;
    }
    t->one_class = true;
    t->all_pos = true;
    for (size_t k = 0; k < a->nw; k++) {
        tnode *x = &t->nodes[leaf_of[k]];
        uint32_t at = x->w0 + x->nw++;
        t->wid[at] = (uint32_t)a->w_id[k];
        t->w[at] = a->w_val[k];
        t->one_class = t->one_class && a->w_id[k] == a->w_id[0];
        t->all_pos = t->all_pos && a->w_val[k] >= 0;
    }
    return RT_OK;
}

static rt_status read_kind(reader *r, const Onnx__NodeProto *nd, struct rt_onnx_trees *t)
{
    char buf[16];
    rt_status st;
    const char *bname;
    size_t nb;
    if ((st = rt_onnx_plan_post(r, nd, &t->post)) ||
        (st = rt_onnx_plan_reals(r, nd, "base_values", &t->base, &nb, &bname)))
        return st;
    if (nb && nb != t->n_out && !(t->classifier && t->n_out == 2 && nb == 1))
        return rt_onnx_plan_fail(r, nd, "attribute %s: %zu values for %zu %s", bname, nb,
                                 t->n_out, t->classifier ? "classes" : "targets");
    t->n_base = nb;
    if (t->classifier)
        return RT_OK;
    if ((st = rt_onnx_plan_string(r, nd, "aggregate_function", "SUM", buf, sizeof buf)))
        return st;
    static const char *const aggs[] = {"SUM", "AVERAGE", "MIN", "MAX"};
    t->agg = -1;
    for (int k = 0; k < 4; k++)
        if (strcmp(buf, aggs[k]) == 0)
            t->agg = k;
    if (t->agg < 0)
        return rt_onnx_plan_fail(r, nd, "attribute aggregate_function: \"%s\" is not SUM, "
                                 "AVERAGE, MIN or MAX", buf);
    return RT_OK;
}

/* The plan of nd from its read attributes a. */
static rt_status plan_trees(reader *r, const Onnx__NodeProto *nd, bool cls, const rt_onnx_val *x,
                            const attrs *a)
{
    rt_onnx *o = r->o;
    rt_status st;
    struct rt_onnx_trees *t = calloc(1, sizeof *t);
    if (!t)
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    rt_onnx_step *s;
    if ((st = rt_onnx_plan_step(r, &s))) {
        rt_onnx_trees_free(t);
        return st;
    }
    s->op = RT_ONNX_TREES;
    s->trees = t;
    s->out2 = SIZE_MAX;
    t->classifier = cls;
    rt_onnx_val *scores = &o->vals[cls ? r->out[1] : r->out[0]];
    if (cls) {
        rt_onnx_val *label = &o->vals[r->out[0]];
        if ((st = rt_onnx_plan_labels(r, nd, "classlabels_int64s", label, &t->n_out)))
            return st;
        if (t->n_out < 2 && (st = rt_onnx_plan_fail(r, nd, "%zu class labels (2 or more "
                                                    "needed)", t->n_out)))
            return st;
    } else {
        int64_t nt;
        if ((st = rt_onnx_plan_int(r, nd, "n_targets", 1, &nt)))
            return st;
        if (nt < 1 || (uint64_t)nt > RT_ONNX_MAX_ROW)
            return rt_onnx_plan_fail(r, nd, "attribute n_targets: %" PRId64, nt);
        t->n_out = (size_t)nt;
    }
    if ((st = read_kind(r, nd, t)))
        return st;
    size_t n = a->n, width = (size_t)x->dims[1];
    key *keys = malloc(n * sizeof *keys);
    uint32_t *parents = calloc(n, sizeof *parents), *stack = malloc((n + 1) * sizeof *stack),
             *leaf_of = malloc((a->nw ? a->nw : 1) * sizeof *leaf_of);
    t->nodes = calloc(n, sizeof *t->nodes);
    t->roots = malloc(n * sizeof *t->roots);
    t->wid = malloc((a->nw ? a->nw : 1) * sizeof *t->wid);
    t->w = malloc((a->nw ? a->nw : 1) * sizeof *t->w);
    t->n_nodes = n;
    if (!keys || !parents || !stack || !leaf_of || !t->nodes || !t->roots || !t->wid || !t->w)
        st = rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    if (!st)
        st = build_nodes(r, nd, a, width, t, keys, parents);
    if (!st)
        st = check_trees(r, nd, a, t, keys, parents, stack);
    if (!st)
        st = build_weights(r, nd, a, t, keys, leaf_of);
    free(keys);
    free(parents);
    free(stack);
    free(leaf_of);
    if (st)
        return st;
    int64_t dims[2] = {0, (int64_t)t->n_out};
    if ((st = rt_onnx_plan_batch_shape(r, nd, scores, 2, dims)))
        return st;
    if (cls) {
        int64_t d1[2] = {0, 1};
        if ((st = rt_onnx_plan_batch_shape(r, nd, &o->vals[r->out[0]], 2, d1)))
            return st;
        o->vals[r->out[0]].rank = 1; /* [N]: one label per instance */
        s->out2 = r->out[0];
    }
    return RT_OK;
}

rt_status rt_onnx_trees_plan(reader *r, const Onnx__NodeProto *nd, bool cls, const rt_onnx_val *x)
{
    attrs a = {0};
    char sb[96];
    if (x->rank != 2)
        return rt_onnx_plan_fail(r, nd, "input 0 \"%.80s\": shape %s: a [N, F] input is needed",
                                 x->name, rt_onnx_plan_shape_str(x, sb, sizeof sb));
    rt_status st = read_attrs(r, nd, cls, &a);
    if (!st)
        st = plan_trees(r, nd, cls, x, &a);
    free(a.values);
    free(a.w_val);
    return st;
}

/* ------------------------------------------------------- running */

static float logistic(float v)
{
    float e = 1.0f / (1.0f + expf(-fabsf(v)));
    return v < 0 ? 1.0f - e : e;
}

/* sqrt(2) erfinv(2p - 1): the normal distribution's quantile, by Newton
 * steps on erf from a closed-form first guess, in double. */
static float probit(float p)
{
    double y = 2.0 * (double)p - 1.0;
    if (!(y > -1.0 && y < 1.0))
        return y <= -1.0 ? -INFINITY : y >= 1.0 ? INFINITY : NAN;
    double l = log((1.0 - y) * (1.0 + y)), a = 0.147;
    double t1 = 2.0 / (M_PI * a) + l / 2.0;
    double x = copysign(sqrt(sqrt(t1 * t1 - l / a) - t1), y);
    for (int k = 0; k < 3; k++) /* erf(x) - y = 0; erf'(x) = 2/sqrt(pi) exp(-x^2) */
        x -= (erf(x) - y) / (2.0 / sqrt(M_PI) * exp(-x * x));
    return (float)(M_SQRT2 * x);
}

void rt_onnx_trees_post(int post, float *z, size_t n)
{
    switch (post) {
    case RT_ONNX_POST_LOGISTIC:
        for (size_t k = 0; k < n; k++)
            z[k] = logistic(z[k]);
        break;
    case RT_ONNX_POST_PROBIT:
        for (size_t k = 0; k < n; k++)
            z[k] = probit(z[k]);
        break;
    case RT_ONNX_POST_SOFTMAX:
    case RT_ONNX_POST_SOFTMAX_ZERO: { /* SOFTMAX_ZERO: a zero score stays zero */
        bool zero = post == RT_ONNX_POST_SOFTMAX_ZERO;
        float mx = -INFINITY;
        for (size_t k = 0; k < n; k++)
            mx = z[k] > mx ? z[k] : mx;
        double sum = 0;
        for (size_t k = 0; k < n; k++) {
            if (zero && fabsf(z[k]) <= 1e-7f) {
                z[k] = z[k] * expf(-mx);
                continue;
            }
            z[k] = expf(z[k] - mx);
            sum += z[k];
        }
        for (size_t k = 0; k < n; k++)
            z[k] = (float)(z[k] / sum);
        break;
    }
    default:
        break;
    }
}

static size_t first_max(const float *z, size_t n)
{
    size_t best = 0;
    for (size_t k = 1; k < n; k++)
        if (z[k] > z[best])
            best = k;
    return best;
}

/* A classifier's scores (acc: the sums, has: whether a leaf scored the
 * class) into z, and its label's index. */
static size_t classify(const struct rt_onnx_trees *t, double *acc, const bool *has, float *z)
{
    size_t c = t->n_out;
    if (c > 2) {
        for (size_t k = 0; k < c; k++)
            z[k] = (float)(acc[k] + (k < t->n_base ? t->base[k] : 0.0));
        rt_onnx_trees_post(t->post, z, c);
        return first_max(z, c);
    }
    bool h0 = has[0], h1 = has[1];
    if (t->n_base == 2) {
        if (h1) { /* ONNX Runtime: the score of class 1 is base 1 + class 0's */
            acc[1] = t->base[1] + acc[0];
            acc[0] = -acc[1];
        } else {
            acc[1] += t->base[1];
            acc[0] += t->base[0];
        }
    } else if (t->n_base == 1) {
        acc[0] += t->base[0];
    }
    bool single = !h1 && t->n_base != 2; /* one score: the positive class's */
    double pos = h1 || t->n_base == 2 ? acc[1] : h0 ? acc[0] : 0.0;
    if (!single) {
        z[0] = (float)acc[0];
        z[1] = (float)acc[1];
        rt_onnx_trees_post(t->post, z, 2);
        if (t->one_class)
            return t->all_pos ? (pos > 0.5) : (pos > 0);
        return first_max(z, 2);
    }
    float s = (float)acc[0];
    if (t->post == RT_ONNX_POST_PROBIT) {
        z[0] = probit(s);
        z[1] = 0.0f;
    } else if (t->one_class && t->all_pos) {
        z[0] = 1.0f - s;
        z[1] = s;
    } else if (t->post == RT_ONNX_POST_LOGISTIC) {
        z[0] = logistic(-s);
        z[1] = logistic(s);
    } else {
        z[0] = -s;
        z[1] = s;
    }
    if (t->one_class)
        return t->all_pos ? (pos > 0.5) : (pos > 0);
    return first_max(z, 2);
}

static void regress(const struct rt_onnx_trees *t, const double *acc, const bool *has, float *z)
{
    size_t c = t->n_out;
    for (size_t k = 0; k < c; k++) {
        double v = acc[k];
        if (t->agg == AGG_AVERAGE)
            v /= (double)t->n_trees;
        else if (t->agg != AGG_SUM && !has[k])
            v = 0;
        if (t->n_base == c)
            v += t->base[k];
        z[k] = (float)v;
    }
    rt_onnx_trees_post(t->post, z, c);
}

static uint32_t leaf(const struct rt_onnx_trees *t, uint32_t k, const float *row)
{
    for (;;) {
        const tnode *x = &t->nodes[k];
        double v = row[x->feature], th = x->value; /* a float input, compared in double */
        bool go;
        switch (x->mode) {
        case M_LEAF: return k;
        case M_LEQ: go = v <= th; break;
        case M_LT: go = v < th; break;
        case M_GTE: go = v >= th; break;
        case M_GT: go = v > th; break;
        case M_EQ: go = v == th; break;
        default: go = v != th; break;
        }
        if (x->track && isnan(v))
            go = true;
        k = go ? x->t : x->f;
    }
}

/* Scores of n rows x (in_row wide) into y (out_row = classes / targets
 * wide), labels (classifier) into label; acc, has: n_out each of scratch. */
static void trees_run(const struct rt_onnx_trees *t, size_t n, const float *x, size_t in_row,
                      float *y, float *label, double *acc, bool *has)
{
    size_t c = t->n_out;
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * in_row;
        for (size_t k = 0; k < c; k++) {
            acc[k] = 0;
            has[k] = false;
        }
        for (size_t tr = 0; tr < t->n_trees; tr++) {
            const tnode *lf = &t->nodes[leaf(t, t->roots[tr], row)];
            for (uint32_t w = lf->w0; w < lf->w0 + lf->nw; w++) {
                uint32_t id = t->wid[w];
                double v = t->w[w];
                if (t->agg == AGG_MIN && !t->classifier)
                    acc[id] = !has[id] || v < acc[id] ? v : acc[id];
                else if (t->agg == AGG_MAX && !t->classifier)
                    acc[id] = !has[id] || v > acc[id] ? v : acc[id];
                else
                    acc[id] += v;
                has[id] = true;
            }
        }
        float *z = y + i * c;
        if (t->classifier) {
            size_t lab = classify(t, acc, has, z);
            if (label)
                label[i] = (float)lab;
        } else {
            regress(t, acc, has, z);
        }
    }
}

rt_status rt_onnx_trees_run(const struct rt_onnx_trees *t, size_t n, const float *x,
                            size_t in_row, float *y, float *label)
{
    double *acc = malloc(t->n_out * sizeof *acc);
    bool *has = malloc(t->n_out * sizeof *has);
    rt_status st = RT_OK;
    if (acc && has)
        trees_run(t, n, x, in_row, y, label, acc, has);
    else
        st = RT_ERR_NOMEM;
    free(acc);
    free(has);
    return st;
}
