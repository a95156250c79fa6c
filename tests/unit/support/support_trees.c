/*
 * support_trees.c — BoostedTrees test helpers: the hand-built ensemble,
 * random complete ensembles, node builders. See support_trees.h.
 */
#include "support_trees.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_models.h"

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "support_trees: out of memory\n");
        abort();
    }
    return p;
}

Predictd__TreeNode *support_tree_leaf(size_t ld, const float *values)
{
    Predictd__TreeNode *n = xcalloc(1, sizeof *n);
    predictd__tree_node__init(n);
    n->input = -1;
    n->leaf_value = xcalloc(ld, sizeof(float));
    memcpy(n->leaf_value, values, ld * sizeof(float));
    n->n_leaf_value = ld;
    return n;
}

Predictd__TreeNode *support_tree_split(int input, float threshold, bool default_left,
                                       uint32_t left, uint32_t right)
{
    Predictd__TreeNode *n = xcalloc(1, sizeof *n);
    predictd__tree_node__init(n);
    n->input = input;
    n->kind = PREDICTD__TREE_SPLIT_KIND__SPLIT_THRESHOLD;
    n->threshold = threshold;
    n->default_left = default_left;
    n->left = left;
    n->right = right;
    n->gain = 2.0f * (float)(input + 1); /* known importances */
    return n;
}

Predictd__TreeNode *support_tree_set(int input, const uint32_t *ids, size_t n_ids,
                                     bool default_left, uint32_t left, uint32_t right)
{
    Predictd__TreeNode *n = support_tree_split(input, 0, default_left, left, right);
    n->kind = PREDICTD__TREE_SPLIT_KIND__SPLIT_CATEGORY_SET;
    n->left_categories = xcalloc(n_ids, sizeof(uint32_t));
    memcpy(n->left_categories, ids, n_ids * sizeof(uint32_t));
    n->n_left_categories = n_ids;
    return n;
}

void support_tree_add(Predictd__TreeEnsemble *te, Predictd__TreeNode **nodes, size_t n)
{
    Predictd__Tree *t = xcalloc(1, sizeof *t);
    predictd__tree__init(t);
    t->nodes = xcalloc(n, sizeof *nodes);
    memcpy(t->nodes, nodes, n * sizeof *nodes);
    t->n_nodes = n;
    Predictd__Tree **trees = realloc(te->trees, (te->n_trees + 1) * sizeof *te->trees);
    if (!trees) {
        fprintf(stderr, "support_trees: out of memory\n");
        abort();
    }
    te->trees = trees;
    te->trees[te->n_trees++] = t;
}

Predictd__ModelDef *support_trees_tiny(void)
{
    Predictd__ModelDef *def = support_spec_modeldef(SUPPORT_SPEC_TREES);
    if (!def)
        return NULL;
    Predictd__TreeEnsemble *te = def->graph->trees;
    te->bias[0] = 0.1f;
    static const uint32_t male[] = {1};
    const float a = 0.25f, b = 1.0f, c = -0.5f, d = 0.125f, e = -0.125f;
    Predictd__TreeNode *t0[] = {support_tree_split(0, 30.0f, true, 1, 2),
                                support_tree_leaf(1, &a),
                                support_tree_set(2, male, 1, false, 3, 4),
                                support_tree_leaf(1, &b), support_tree_leaf(1, &c)};
    support_tree_add(te, t0, 5);
    Predictd__TreeNode *t1[] = {support_tree_split(1, 2.0f, false, 2, 1),
                                support_tree_leaf(1, &d), support_tree_leaf(1, &e)};
    support_tree_add(te, t1, 3);
    return def;
}

static const Predictd__FeatureColumn *column_named(const Predictd__ModelDef *def,
                                                   const char *name)
{
    for (size_t i = 0; i < def->n_feature_columns; i++)
        if (strcmp(def->feature_columns[i]->name, name) == 0)
            return def->feature_columns[i];
    return NULL;
}

/* A random split node on a random input of te, children l and r, as
 * support_random_trees describes them. */
static Predictd__TreeNode *random_split(const Predictd__ModelDef *def,
                                        const Predictd__TreeEnsemble *te, uint64_t *s,
                                        uint32_t l, uint32_t r)
{
    size_t k = (size_t)(support_rand(s) % te->n_inputs);
    const Predictd__TreeInput *in = te->inputs[k];
    bool dl = support_rand(s) & 1;
    uint32_t cats = in->num_categories;
    Predictd__TreeNode *nd;
    if (!cats) {
        const Predictd__FeatureColumn *fc = column_named(def, in->column);
        float thr = fc && fc->has_normalizer ? (float)(support_uniform(s) * 4 - 2)
                                             : (float)(support_uniform(s) * 100);
        nd = support_tree_split((int)k, thr, dl, l, r);
    } else if (support_rand(s) & 1) {
        nd = support_tree_split((int)k, (float)(support_rand(s) % cats), dl, l, r);
    } else {
        uint32_t *ids = xcalloc(cats, sizeof *ids);
        size_t m = 0;
        for (uint32_t c = 0; c < cats; c++)
            if (support_rand(s) & 1)
                ids[m++] = c;
        nd = support_tree_set((int)k, ids, m, dl, l, r);
        free(ids);
    }
    nd->gain = (float)support_uniform(s);
    return nd;
}

static Predictd__TreeNode *random_leaf(size_t ld, float *v, uint64_t *s)
{
    for (size_t j = 0; j < ld; j++)
        v[j] = (float)(support_uniform(s) * 0.2 - 0.1);
    return support_tree_leaf(ld, v);
}

/* n_trees trees of depth at most depth into def; ragged: below the root a
 * node is a leaf with probability 1/4 (else every path has depth nodes). */
static int random_trees(Predictd__ModelDef *def, uint64_t seed, size_t n_trees, size_t depth,
                        bool ragged, const char *who)
{
    Predictd__TreeEnsemble *te = def->graph ? def->graph->trees : NULL;
    if (!te || !te->n_inputs || depth < 1 || depth > 20) {
        fprintf(stderr, "%s: no tree inputs, or depth %zu not in 1..20\n", who, depth);
        return -1;
    }
    size_t ld = def->graph->logits_dimension, n = ((size_t)2 << depth) - 1;
    Predictd__TreeNode **nodes = xcalloc(n, sizeof *nodes);
    uint32_t *level = xcalloc(n, sizeof *level);
    float *v = xcalloc(ld, sizeof *v);
    uint64_t s = seed;
    for (size_t t = 0; t < n_trees; t++) {
        /* breadth first: node i's children are the next two free numbers */
        size_t used = 1;
        level[0] = 0;
        for (size_t i = 0; i < used; i++) {
            bool leaf = level[i] == depth || (ragged && level[i] && support_rand(&s) % 4 == 0);
            if (leaf) {
                nodes[i] = random_leaf(ld, v, &s);
                continue;
            }
            nodes[i] = random_split(def, te, &s, (uint32_t)used, (uint32_t)used + 1);
            level[used] = level[used + 1] = level[i] + 1;
            used += 2;
        }
        support_tree_add(te, nodes, used);
    }
    free(level);
    free(v);
    free(nodes);
    return 0;
}

int support_random_trees(Predictd__ModelDef *def, uint64_t seed, size_t n_trees, size_t depth)
{
    return random_trees(def, seed, n_trees, depth, false, "support_random_trees");
}

int support_random_ragged_trees(Predictd__ModelDef *def, uint64_t seed, size_t n_trees,
                                size_t depth)
{
    return random_trees(def, seed, n_trees, depth, true, "support_random_ragged_trees");
}
