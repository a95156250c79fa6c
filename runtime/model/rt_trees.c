/*
 * rt_trees.c — a BoostedTrees ensemble (Graph.trees, model.proto): checked
 * when a graph compiles, laid out for serving, and evaluated batch-wise.
 *
 * Checks (the export may be untrusted): every input names a feature column
 * trees can read (numeric of shape 1, bucketized, vocabulary, hash bucket,
 * indicator of one of those) once, with that column's id space; every node
 * reads an input in range, its children are greater than itself and in
 * range, every node but the root is some node's child exactly once (so the
 * nodes form one tree, all reachable, no cycle), depth <= RT_TREES_MAX_DEPTH,
 * thresholds and leaf values finite, category sets increasing and inside the
 * input's id space, bins increasing. Messages name the tree and the node.
 *
 * Layout: the nodes of all trees in one array, renumbered breadth-first so
 * that a node's children are adjacent (right = left + 1); per node the 16
 * bytes a step reads (slot, threshold, next, set), the rest (leaf rows,
 * node numbers of the ModelDef) in arrays of their own, leaf values apart
 * ([leaf row x logits_dim]). A categorical split, threshold or set, becomes
 * a bitset of the ids going left, with one more bit (id num_categories) for
 * a missing id: the node's default.
 *
 * Evaluation: the inputs of a batch are gathered once into rows of slots
 * (gather): a numeric input twice, its NaN as -inf in one slot and +inf in
 * the other, and each node reads the slot whose NaN goes its default way,
 * so "left when value <= threshold" needs no NaN test; a categorical input
 * as an id. A leaf reads a slot that is always 0 against +inf and points at
 * itself, so a walk of exactly the tree's depth steps ends at the leaf from
 * any path: then per tree, 8 instances walk in lock step without a branch
 * (independent chains of loads the CPU overlaps), over blocks of 256
 * instances whose rows stay in cache. A tree whose categorical nodes all
 * read inputs of at most 31 ids (XGBoost's census models) walks a copy of
 * its nodes with the one bitset word inline and the id read from the float
 * slot's bits (step_small): one row load per step, no bitset load.
 * Where the CPU has AVX2 (checked at run time; the build is generic
 * x86-64), such trees and numeric-only ones of depth <= 10 also get a
 * complete copy (lay_out_heap: level k's splits at 2^k - 1, a leaf above
 * the last level as splits that always go left) that 32 rows walk in four
 * vectors of 8 (walk_heap_avx2): the split tables by permutes up to level 5,
 * the rows' slots by gathers, and the leaf values added to each row's logit
 * in tree order, as the scalar path adds them, so the bits are the same.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"
#include "rt_model_limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")



/* What one step reads of a node, together (16 bytes: a quarter of a cache
 * line; a depth-6 tree's 127 nodes are 2 KiB). */
typedef struct tnode {
    uint32_t slot;  /* gathered slot read (gather) */
    float thr;      /* left when the slot's value <= thr (+inf at leaves,
                       -inf at categorical nodes) */
    uint32_t next;  /* left child (right = left + 1); leaf: itself */
    uint32_t set;   /* categorical nodes: word offset of the ids going left
                       (bit num_categories: the default); else 0, zero words */
} tnode;

struct rt_trees {
    size_t n_inputs;
    long *col;           /* [n_inputs] feature column whose ids / values are read */
    bool *numeric;       /* [n_inputs] values, else ids */
    uint32_t *cats;      /* [n_inputs] id space (0 numeric) */
    size_t n_trees;
    uint32_t *root;      /* [n_trees] node index of each root */
    uint32_t *depth;     /* [n_trees] steps from the root to the deepest leaf */
    uint32_t *orig;      /* [n_nodes] index of the node in its tree's proto */
    size_t n_nodes;
    tnode *node;         /* [n_nodes] what a step reads */
    uint32_t *leaf;      /* [n_nodes] leaf row (leaves only) */
    size_t n_bits;
    uint32_t *bits;      /* category-set bitsets */
    size_t ld;
    float *values;       /* [leaf rows x ld] */
    float *bias;         /* [ld] */
    bool *sets;          /* [n_trees] the tree has category-set nodes */
    bool *small;         /* [n_trees] ... all of them on inputs of <= 31 ids */
    tnode *fast;         /* [n_nodes] node, but in small trees set is the
                            node's one bitset word itself (walk) */
    uint32_t max_depth;
    /* Trees walked as complete trees (lay_out_heap, walk_heap_avx2). */
    bool heap_isa;       /* the CPU has AVX2 (and the build is x86-64) */
    bool heap_on;        /* walk the copies (heap_isa unless a test said no) */
    bool *heap;          /* [n_trees] the tree has a complete copy */
    size_t *hoff;        /* [n_trees] its entries in hslot, hparam, hleaf, hval */
    uint32_t *hslot;     /* split at level k, place q: entry 2^k - 1 + q: the
                            slot read, bit 31 set at a categorical split */
    uint32_t *hparam;    /* ... threshold's bits, or the set word's complement
                            (the ids going right) */
    uint32_t *hleaf;     /* leaf place q: node index of the leaf */
    float *hval;         /* ... its value (ld == 1) */
};

void rt_trees_free(rt_trees *t)
{
    if (!t)
        return;
    free(t->col);
    free(t->numeric);
    free(t->cats);
    free(t->root);
    free(t->depth);
    free(t->sets);
    free(t->small);
    free(t->fast);
    free(t->heap);
    free(t->hoff);
    free(t->hslot);
    free(t->hparam);
    free(t->hleaf);
    free(t->hval);
    free(t->orig);
    free(t->node);
    free(t->leaf);
    free(t->bits);
    free(t->values);
    free(t->bias);
    free(t);
}

/* ------------------------------------------------------------- checks */

static long find_col(const rt_graph *g, const char *name)
{
    for (size_t i = 0; i < g->n_fcols; i++)
        if (strcmp(g->fcols[i].def->name, name) == 0)
            return (long)i;
    return -1;
}

static bool one_id_kind(Predictd__ColumnType t)
{
    return t == PREDICTD__COLUMN_TYPE__BUCKETIZED || t == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST ||
           t == PREDICTD__COLUMN_TYPE__VOCABULARY_FILE || t == PREDICTD__COLUMN_TYPE__HASH_BUCKET;
}

/* Input k: the column it reads, its kind and id space. */
static rt_status check_input(const rt_graph *g, rt_trees *t, size_t k,
                             const Predictd__TreeInput *in, rt_err *err)
{
    if (!in || !in->column)
        return rt_err_set(err, RT_ERR_FORMAT, "trees: input %zu is empty", k);
    long c = find_col(g, in->column);
    if (c < 0)
        return rt_err_set(err, RT_ERR_FORMAT, "trees: input %zu: \"%.64s\" is not a feature column",
                          k, in->column);
    const rt_fcol *f = &g->fcols[c];
    uint64_t cats = 0;
    long read = c;
    if (f->type == PREDICTD__COLUMN_TYPE__NUMERIC) {
        if (f->width != 1)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "trees: input %zu: numeric column %s has shape %zu, trees read 1",
                              k, in->column, f->width);
    } else if (f->type == PREDICTD__COLUMN_TYPE__INDICATOR &&
               one_id_kind(g->fcols[f->source].type)) {
        read = f->source;
        cats = (uint64_t)g->fcols[read].num_buckets;
    } else if (one_id_kind(f->type)) {
        cats = (uint64_t)f->num_buckets;
    } else {
        return rt_err_set(err, RT_ERR_FORMAT,
                          "trees: input %zu: %s (%s): trees read numeric, bucketized, "
                          "vocabulary, hash bucket and indicator columns",
                          k, in->column, rt_fc_kind_of(f->type)->spec_name);
    }
    if (g->fcols[read].type == PREDICTD__COLUMN_TYPE__BUCKETIZED &&
        g->fcols[g->fcols[read].source].width != 1)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "trees: input %zu: %s buckets a numeric column of shape > 1", k,
                          in->column);
    if (cats > RT_TREES_MAX_CATEGORIES)
        return rt_err_set(err, RT_ERR_LIMIT, "trees: input %zu: %s has %llu categories (limit %u)",
                          k, in->column, (unsigned long long)cats, RT_TREES_MAX_CATEGORIES);
    if (in->num_categories != cats)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "trees: input %zu: %s has num_categories %u, the column has %llu", k,
                          in->column, in->num_categories, (unsigned long long)cats);
    if (in->n_bin_upper && cats)
        return rt_err_set(err, RT_ERR_FORMAT, "trees: input %zu: %s is categorical but has bins",
                          k, in->column);
    if (in->n_bin_upper > RT_TREES_MAX_BINS)
        return rt_err_set(err, RT_ERR_LIMIT, "trees: input %zu: %s has %zu bins (limit %u)", k,
                          in->column, in->n_bin_upper, RT_TREES_MAX_BINS);
    for (size_t b = 0; b < in->n_bin_upper; b++)
        if (!isfinite(in->bin_upper[b]) || (b && !(in->bin_upper[b] > in->bin_upper[b - 1])))
            return rt_err_set(err, RT_ERR_FORMAT,
                              "trees: input %zu: %s: bin_upper must be finite and increasing "
                              "(at %zu)",
                              k, in->column, b);
    for (size_t j = 0; j < k; j++)
        if (t->col[j] == read)
            return rt_err_set(err, RT_ERR_FORMAT, "trees: input %zu: %s is read twice", k,
                              in->column);
    t->col[k] = read;
    t->numeric[k] = cats == 0;
    t->cats[k] = (uint32_t)cats;
    return RT_OK;
}

/* Tree ti: node by node. parent[] (scratch, n entries) gets each node's
 * parent, depth[] its depth; counts leaves and set words into *leaves,
 * *words. */
static rt_status check_tree(const rt_trees *t, size_t ti, const Predictd__Tree *tr, size_t ld,
                            uint32_t *parent, uint32_t *depth, size_t *leaves, size_t *words,
                            uint32_t *tree_depth, rt_err *err)
{
    if (!tr || tr->n_nodes == 0)
        return rt_err_set(err, RT_ERR_FORMAT, "trees: tree %zu has no nodes", ti);
    size_t n = tr->n_nodes;
    if (n > RT_TREES_MAX_TREE_NODES)
        return rt_err_set(err, RT_ERR_LIMIT, "trees: tree %zu has %zu nodes (limit %u)", ti, n,
                          RT_TREES_MAX_TREE_NODES);
    for (size_t i = 0; i < n; i++)
        parent[i] = UINT32_MAX;
    depth[0] = 0;
    *tree_depth = 0;
    for (size_t i = 0; i < n; i++) {
        const Predictd__TreeNode *nd = tr->nodes[i];
        if (!nd)
            return rt_err_set(err, RT_ERR_FORMAT, "trees: tree %zu node %zu is empty", ti, i);
        if (i && parent[i] == UINT32_MAX)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "trees: tree %zu node %zu is no node's child (unreachable)", ti, i);
        if (nd->input < 0) {
            if (nd->input != -1)
                return rt_err_set(err, RT_ERR_FORMAT, "trees: tree %zu node %zu: input %d", ti, i,
                                  (int)nd->input);
            if (nd->n_leaf_value != ld)
                return rt_err_set(err, RT_ERR_FORMAT,
                                  "trees: tree %zu node %zu (leaf): %zu leaf values, the head "
                                  "needs %zu",
                                  ti, i, nd->n_leaf_value, ld);
            for (size_t j = 0; j < ld; j++)
                if (!isfinite(nd->leaf_value[j]))
                    return rt_err_set(err, RT_ERR_FORMAT,
                                      "trees: tree %zu node %zu (leaf): leaf value %zu is not "
                                      "finite",
                                      ti, i, j);
            if (nd->n_left_categories)
                return rt_err_set(err, RT_ERR_FORMAT,
                                  "trees: tree %zu node %zu (leaf) has a category set", ti, i);
            (*leaves)++;
            continue;
        }
        if ((size_t)nd->input >= t->n_inputs)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "trees: tree %zu node %zu: input %d out of range (%zu inputs)", ti,
                              i, (int)nd->input, t->n_inputs);
        if (nd->n_leaf_value)
            return rt_err_set(err, RT_ERR_FORMAT, "trees: tree %zu node %zu (split) has leaf "
                              "values", ti, i);
        if (nd->left <= i || nd->right <= i || nd->left >= n || nd->right >= n ||
            nd->left == nd->right)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "trees: tree %zu node %zu: children %u and %u must be two nodes "
                              "after it (the tree has %zu)",
                              ti, i, nd->left, nd->right, n);
        uint32_t kids[2] = {nd->left, nd->right};
        for (int s = 0; s < 2; s++) {
            if (parent[kids[s]] != UINT32_MAX)
                return rt_err_set(err, RT_ERR_FORMAT,
                                  "trees: tree %zu node %zu: child %u is also node %u's child",
                                  ti, i, kids[s], parent[kids[s]]);
            parent[kids[s]] = (uint32_t)i;
            depth[kids[s]] = depth[i] + 1;
            if (depth[kids[s]] > RT_TREES_MAX_DEPTH)
                return rt_err_set(err, RT_ERR_LIMIT,
                                  "trees: tree %zu node %u is deeper than %d", ti, kids[s],
                                  RT_TREES_MAX_DEPTH);
            if (depth[kids[s]] > *tree_depth)
                *tree_depth = depth[kids[s]];
        }
        uint32_t cats = t->cats[nd->input];
        if (cats) /* served as a set, a threshold on ids too (lay_out) */
            *words += cats / 32 + 1;
        if (nd->kind == PREDICTD__TREE_SPLIT_KIND__SPLIT_THRESHOLD) {
            if (!isfinite(nd->threshold))
                return rt_err_set(err, RT_ERR_FORMAT,
                                  "trees: tree %zu node %zu: threshold is not finite", ti, i);
            if (nd->n_left_categories)
                return rt_err_set(err, RT_ERR_FORMAT,
                                  "trees: tree %zu node %zu: a threshold split with a category "
                                  "set",
                                  ti, i);
        } else if (nd->kind == PREDICTD__TREE_SPLIT_KIND__SPLIT_CATEGORY_SET) {
            if (!cats)
                return rt_err_set(err, RT_ERR_FORMAT,
                                  "trees: tree %zu node %zu: a category set on numeric input %d",
                                  ti, i, (int)nd->input);
            for (size_t j = 0; j < nd->n_left_categories; j++)
                if (nd->left_categories[j] >= cats ||
                    (j && nd->left_categories[j] <= nd->left_categories[j - 1]))
                    return rt_err_set(err, RT_ERR_FORMAT,
                                      "trees: tree %zu node %zu: left_categories must be "
                                      "increasing and below %u (at %zu)",
                                      ti, i, cats, j);
        } else {
            return rt_err_set(err, RT_ERR_FORMAT, "trees: tree %zu node %zu: unknown split kind %d",
                              ti, i, (int)nd->kind);
        }
    }
    return RT_OK;
}

/* Tree ti into t's arrays from node *at on (breadth-first: children
 * adjacent). queue (n entries) is scratch. */
static void lay_out(rt_trees *t, size_t ti, const Predictd__Tree *tr, uint32_t *queue,
                    size_t *at, size_t *leaf_row, size_t *word)
{
    size_t ld = t->ld, base = *at, head = 0, tail = 0;
    queue[tail++] = 0;
    t->root[ti] = (uint32_t)base;
    size_t next_free = base + 1;
    while (head < tail) {
        uint32_t o = queue[head];
        size_t me = base + head++;
        const Predictd__TreeNode *nd = tr->nodes[o];
        tnode *n = &t->node[me];
        t->orig[me] = o;
        t->leaf[me] = 0;
        n->set = 0;
        if (nd->input < 0) { /* 0 <= +inf: left, to itself */
            n->slot = (uint32_t)(2 * t->n_inputs);
            n->thr = INFINITY;
            n->next = (uint32_t)me;
            t->leaf[me] = (uint32_t)*leaf_row;
            memcpy(t->values + *leaf_row * ld, nd->leaf_value, ld * sizeof(float));
            (*leaf_row)++;
            continue;
        }
        uint32_t k = (uint32_t)nd->input, cats = t->cats[k];
        if (!cats) { /* the slot whose NaN goes the node's default way */
            n->slot = 2 * k + (nd->default_left ? 0 : 1);
            n->thr = nd->threshold;
        } else { /* a set of ids (a threshold on ids: those <= it) */
            n->slot = 2 * k;
            n->thr = -INFINITY; /* a categorical slot's float is 0: never left */
            n->set = (uint32_t)*word;
            uint32_t *bits = t->bits + *word;
            if (nd->kind == PREDICTD__TREE_SPLIT_KIND__SPLIT_CATEGORY_SET) {
                for (size_t j = 0; j < nd->n_left_categories; j++) {
                    uint32_t id = nd->left_categories[j];
                    bits[id / 32] |= UINT32_C(1) << (id % 32);
                }
            } else {
                for (uint32_t id = 0; id < cats && (double)id <= nd->threshold; id++)
                    bits[id / 32] |= UINT32_C(1) << (id % 32);
            }
            if (nd->default_left) /* a missing id reads as id cats */
                bits[cats / 32] |= UINT32_C(1) << (cats % 32);
            *word += cats / 32 + 1;
            t->sets[ti] = true;
        }
        n->next = (uint32_t)next_free;
        next_free += 2;
        queue[tail++] = nd->left;
        queue[tail++] = nd->right;
    }
    *at = base + tr->n_nodes;
}

/* Tree ti's n nodes (from root[ti]) copied into fast; when every
 * categorical node of the tree reads an input of at most 31 ids (so an id,
 * the missing one included, indexes one 32-bit word), the tree is small and
 * its nodes' set is that word itself: a numeric node's the zero word. */
static void lay_out_fast(rt_trees *t, size_t ti, size_t n)
{
    const tnode *src = t->node + t->root[ti];
    tnode *dst = t->fast + t->root[ti];
    bool small = t->sets[ti];
    for (size_t j = 0; j < n; j++) {
        uint32_t k = src[j].slot / 2;
        if (k < t->n_inputs && t->cats[k] > 31)
            small = false;
    }
    t->small[ti] = small;
    for (size_t j = 0; j < n; j++) {
        dst[j] = src[j];
        if (small)
            dst[j].set = t->bits[src[j].set];
    }
}

#define HEAP_MAX_DEPTH 10u /* 1,023 splits, 1,024 leaves a tree at most */
#define HEAP_PAD 8u        /* entries after a tree's: level tables load 8 */

/* Does tree ti (n nodes) get a complete copy? Small or without sets (one
 * row load a step), not deeper than HEAP_MAX_DEPTH, and either at most 64
 * leaves complete or not much larger complete than it is (2^(depth+1) <=
 * 4 n + 16). */
static bool heap_fits(const rt_trees *t, size_t ti, size_t n)
{
    uint32_t d = t->depth[ti];
    return (!t->sets[ti] || t->small[ti]) && d <= HEAP_MAX_DEPTH &&
           (d <= 6 || ((size_t)2 << d) <= 4 * n + 16);
}

/* Node j (fast layout) at level k, place q of the complete copy at base:
 * a split there; a leaf above the last level becomes splits that always
 * go left (the zero slot against +inf) down to the last level, where
 * every leaf place below it holds it. */
static void heap_fill(rt_trees *t, size_t base, uint32_t d, uint32_t k, uint32_t q, uint32_t j)
{
    const tnode *n = &t->fast[j];
    if (k == d) {
        t->hleaf[base + q] = j;
        if (t->ld == 1)
            t->hval[base + q] = t->values[t->leaf[j]];
        return;
    }
    size_t e = base + ((size_t)1 << k) - 1 + q;
    if (n->next == j) { /* a leaf: 0 <= +inf, left */
        float inf = INFINITY;
        t->hslot[e] = (uint32_t)(2 * t->n_inputs);
        memcpy(&t->hparam[e], &inf, sizeof inf);
        heap_fill(t, base, d, k + 1, 2 * q, j);
        heap_fill(t, base, d, k + 1, 2 * q + 1, j);
        return;
    }
    if (t->cats[n->slot / 2]) { /* small: set is the one word; its complement */
        t->hslot[e] = n->slot | UINT32_C(1) << 31;
        t->hparam[e] = ~n->set;
    } else {
        t->hslot[e] = n->slot;
        memcpy(&t->hparam[e], &n->thr, sizeof n->thr);
    }
    heap_fill(t, base, d, k + 1, 2 * q, n->next);
    heap_fill(t, base, d, k + 1, 2 * q + 1, n->next + 1);
}

/* The complete copies of the trees heap_fits, when the CPU can walk them
 * (heap_isa). Each tree has 2^depth + HEAP_PAD entries in each array. */
static rt_status lay_out_heap(rt_trees *t, const Predictd__TreeEnsemble *te, rt_err *err)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    t->heap_isa = __builtin_cpu_supports("avx2");
#endif
    if (!(t->heap = calloc(t->n_trees + 1, sizeof *t->heap)) ||
        !(t->hoff = calloc(t->n_trees + 1, sizeof *t->hoff)))
        return NOMEM(err);
    t->heap_on = t->heap_isa;
    if (!t->heap_isa)
        return RT_OK;
    /* at most 8 entries a node (plus some): an export of many tiny trees
     * keeps the rest of them scalar rather than grow 9 entries a tree */
    size_t total = 0, cap = 8 * t->n_nodes + 4096;
    for (size_t ti = 0; ti < t->n_trees; ti++) {
        size_t need = ((size_t)1 << t->depth[ti]) + HEAP_PAD;
        t->heap[ti] = heap_fits(t, ti, te->trees[ti]->n_nodes) && total + need <= cap;
        t->hoff[ti] = total;
        if (t->heap[ti])
            total += need;
    }
    if (!total)
        return RT_OK;
    if (!(t->hslot = calloc(total, sizeof *t->hslot)) ||
        !(t->hparam = calloc(total, sizeof *t->hparam)) ||
        !(t->hleaf = calloc(total, sizeof *t->hleaf)) ||
        !(t->hval = calloc(total, sizeof *t->hval)))
        return NOMEM(err);
    for (size_t ti = 0; ti < t->n_trees; ti++)
        if (t->heap[ti])
            heap_fill(t, t->hoff[ti], t->depth[ti], 0, 0, t->root[ti]);
    return RT_OK;
}

rt_status rt_trees_compile(const rt_graph *g, rt_trees **out, rt_err *err)
{
    *out = NULL;
    const Predictd__TreeEnsemble *te = g->def->graph->trees;
    if (!te)
        return RT_OK;
    rt_status st = RT_OK;
    uint32_t *parent = NULL, *depth = NULL;
    rt_trees *t = calloc(1, sizeof *t);
    if (!t)
        return NOMEM(err);
    t->ld = g->logits_dim;
    if (te->n_inputs == 0 || te->n_inputs > RT_TREES_MAX_INPUTS) {
        st = rt_err_set(err, RT_ERR_FORMAT, "trees: %zu inputs (1 to %u)", te->n_inputs,
                        RT_TREES_MAX_INPUTS);
        goto out;
    }
    if (te->n_bias && te->n_bias != t->ld) {
        st = rt_err_set(err, RT_ERR_FORMAT, "trees: %zu bias values, the head needs %zu",
                        te->n_bias, t->ld);
        goto out;
    }
    t->n_inputs = te->n_inputs;
    t->n_trees = te->n_trees;
    if (!(t->col = calloc(t->n_inputs, sizeof *t->col)) ||
        !(t->numeric = calloc(t->n_inputs, sizeof *t->numeric)) ||
        !(t->cats = calloc(t->n_inputs, sizeof *t->cats)) ||
        !(t->bias = calloc(t->ld, sizeof *t->bias)) ||
        !(t->root = calloc(t->n_trees + 1, sizeof *t->root)) ||
        !(t->depth = calloc(t->n_trees + 1, sizeof *t->depth)) ||
        !(t->sets = calloc(t->n_trees + 1, sizeof *t->sets)) ||
        !(t->small = calloc(t->n_trees + 1, sizeof *t->small))) {
        st = NOMEM(err);
        goto out;
    }
    for (size_t k = 0; k < t->n_inputs; k++)
        if ((st = check_input(g, t, k, te->inputs[k], err)))
            goto out;
    for (size_t j = 0; j < te->n_bias; j++) {
        if (!isfinite(te->bias[j])) {
            st = rt_err_set(err, RT_ERR_FORMAT, "trees: bias %zu is not finite", j);
            goto out;
        }
        t->bias[j] = te->bias[j];
    }
    /* The bits start with zero words that any id (missing: cats) of any
     * input reads as "not in the set" at a threshold node (set offset 0). */
    size_t zero_words = 1;
    for (size_t k = 0; k < t->n_inputs; k++)
        if (t->cats[k] / 32 + 1 > zero_words)
            zero_words = t->cats[k] / 32 + 1;
    size_t max_n = 1, leaves = 0, words = zero_words;
    for (size_t ti = 0; ti < t->n_trees; ti++) {
        size_t n = te->trees[ti] ? te->trees[ti]->n_nodes : 0;
        if (n > max_n)
            max_n = n;
        t->n_nodes += n;
        if (t->n_nodes > RT_TREES_MAX_NODES) {
            st = rt_err_set(err, RT_ERR_LIMIT, "trees: more than %u nodes", RT_TREES_MAX_NODES);
            goto out;
        }
    }
    parent = malloc(max_n * sizeof *parent);
    depth = malloc(max_n * sizeof *depth);
    if (!parent || !depth) {
        st = NOMEM(err);
        goto out;
    }
    for (size_t ti = 0; ti < t->n_trees; ti++) {
        if ((st = check_tree(t, ti, te->trees[ti], t->ld, parent, depth, &leaves, &words,
                             &t->depth[ti], err)))
            goto out;
        if (t->depth[ti] > t->max_depth)
            t->max_depth = t->depth[ti];
    }
    if (words > RT_TREES_MAX_SET_WORDS) {
        st = rt_err_set(err, RT_ERR_LIMIT,
                        "trees: the categorical splits need %zu MiB of id sets (limit %u MiB)",
                        words / (1u << 18), RT_TREES_MAX_SET_WORDS / (1u << 18));
        goto out;
    }
    size_t nn = t->n_nodes ? t->n_nodes : 1;
    t->n_bits = words;
    if (!(t->orig = malloc(nn * sizeof *t->orig)) || !(t->node = malloc(nn * sizeof *t->node)) ||
        !(t->leaf = malloc(nn * sizeof *t->leaf)) ||
        !(t->fast = malloc(nn * sizeof *t->fast)) ||
        !(t->bits = calloc(words, sizeof *t->bits)) ||
        !(t->values = malloc((leaves ? leaves : 1) * t->ld * sizeof *t->values))) {
        st = NOMEM(err);
        goto out;
    }
    size_t at = 0, leaf_row = 0, word = zero_words;
    for (size_t ti = 0; ti < t->n_trees; ti++)
        lay_out(t, ti, te->trees[ti], parent, &at, &leaf_row, &word);
    for (size_t ti = 0; ti < t->n_trees; ti++)
        lay_out_fast(t, ti, te->trees[ti] ? te->trees[ti]->n_nodes : 0);
    st = lay_out_heap(t, te, err);
out:
    free(parent);
    free(depth);
    if (st) {
        rt_trees_free(t);
        return st;
    }
    *out = t;
    return RT_OK;
}

/* ------------------------------------------------------------- serving */

size_t rt_trees_gather_width(const rt_trees *t)
{
    return t ? 2 * (2 * t->n_inputs + 1) : 0;
}

/* The inputs of f's instances into x, one row per instance of w = 2 n + 1
 * float slots then w uint32 id slots (n inputs). Input k has slots 2k and
 * 2k+1: numeric, its value with NaN as -inf in 2k (for nodes whose default
 * is left) and +inf in 2k+1 (default right), ids 0; categorical, the id
 * in both id slots and its bits in both float slots (a float >= 0, so never
 * <= a categorical node's -inf; step_small reads them), num_categories when missing or out of range. Slot
 * 2n is 0, id 0 (leaves read it). */
static rt_status gather(const rt_graph *g, const rt_trees *t, const rt_features *f, float *x,
                        rt_err *err)
{
    size_t n = f->n, w = 2 * t->n_inputs + 1, stride = 2 * w;
    for (size_t k = 0; k < t->n_inputs; k++) {
        size_t c = (size_t)t->col[k];
        if (t->numeric[k]) {
            if (!f->values || !f->values[c] || f->width[c] != 1)
                return rt_err_set(err, RT_ERR_INVALID, "trees: column %s has no values",
                                  g->fcols[c].def->name);
            const float *v = f->values[c];
            for (size_t i = 0; i < n; i++) {
                float *row = x + i * stride;
                uint32_t *ids = (uint32_t *)(row + w);
                bool nan = v[i] != v[i];
                row[2 * k] = nan ? -INFINITY : v[i];
                row[2 * k + 1] = nan ? INFINITY : v[i];
                ids[2 * k] = ids[2 * k + 1] = 0;
            }
            continue;
        }
        if (!f->ids || !f->ids[c].offsets)
            return rt_err_set(err, RT_ERR_INVALID, "trees: column %s has no ids",
                              g->fcols[c].def->name);
        const rt_ids *idc = &f->ids[c];
        uint32_t cats = t->cats[k];
        for (size_t i = 0; i < n; i++) {
            float *row = x + i * stride;
            uint32_t *ids = (uint32_t *)(row + w);
            uint32_t id = cats;
            if (idc->offsets[i + 1] > idc->offsets[i]) {
                int64_t v = idc->ids[idc->offsets[i]];
                if (v >= 0 && (uint64_t)v < cats)
                    id = (uint32_t)v;
            }
            memcpy(&row[2 * k], &id, sizeof id); /* the id's bits: a float >= 0 */
            memcpy(&row[2 * k + 1], &id, sizeof id);
            ids[2 * k] = ids[2 * k + 1] = id;
        }
    }
    for (size_t i = 0; i < n; i++) {
        x[i * stride + w - 1] = 0.0f;
        ((uint32_t *)(x + i * stride + w))[w - 1] = 0;
    }
    return RT_OK;
}

/* One step from node j for the instance whose slots are row: left when
 * the slot's value <= threshold (NaN became -inf or +inf as the node's
 * default says). No branch. For trees without categorical nodes. */
static inline uint32_t step_thr(const tnode *nodes, uint32_t j, const float *row)
{
    const tnode *n = &nodes[j];
    return n->next + 1 - (uint32_t)(row[n->slot] <= n->thr);
}

/* The same in a tree with categorical nodes: also left when the slot's id
 * is in the node's set. A numeric node's set is the zero words (its ids are
 * 0); a categorical node's threshold is -inf (its floats are 0). No branch
 * either. ids is row's id half. */
static inline uint32_t step_any(const tnode *nodes, const uint32_t *bits, uint32_t j,
                                const float *row, const uint32_t *ids)
{
    const tnode *n = &nodes[j];
    uint32_t id = ids[n->slot];
    uint32_t left = (uint32_t)(row[n->slot] <= n->thr) |
                    ((bits[n->set + id / 32] >> (id % 32)) & 1u);
    return n->next + 1 - left;
}

/* The same in a small tree (lay_out_fast): the node's set is its word of
 * ids going left (0 at numeric nodes), and the id is read from the float
 * slot's bits (gather), so one load of the row serves both tests: a
 * numeric node's slot bits shift the zero word, a categorical node's float
 * (a float >= 0 from the id's bits) is never <= -inf. */
static inline uint32_t step_small(const tnode *nodes, uint32_t j, const float *row)
{
    const tnode *n = &nodes[j];
    float v = row[n->slot];
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    uint32_t left = (uint32_t)(v <= n->thr) | ((n->set >> (b & 31u)) & 1u);
    return n->next + 1 - left;
}

#define LANES 8

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HEAP_X86 1
#ifndef HEAP_GROUPS
#define HEAP_GROUPS 4 /* groups of 8 rows walking together */
#endif

/* One step of 8 rows (x: the first; rows: each row's offset) from places q
 * of a level whose splits read slots s (bit 31: categorical) against
 * parameters p: a numeric split goes right when the slot's float is not <=
 * the threshold, a categorical one when bit (the slot's id) of the word p,
 * the set's complement, is set (shifted up to the sign bit); blendv picks
 * by s's bit 31. Left goes to place 2q, right to 2q + 1. */
#define HEAP_STEP(q, x, s, p)                                                                   \
    do {                                                                                        \
        __m256i v_ = _mm256_i32gather_epi32((const int *)(x),                                   \
                                            _mm256_add_epi32(rows, _mm256_and_si256(s, slots)), \
                                            4);                                                 \
        __m256 num_ = _mm256_cmp_ps(_mm256_castsi256_ps(v_), _mm256_castsi256_ps(p),           \
                                    _CMP_NLE_UQ);                                               \
        __m256i cat_ = _mm256_sllv_epi32(p, _mm256_andnot_si256(v_, low5));                    \
        __m256i right_ = _mm256_castps_si256(                                                   \
            _mm256_blendv_ps(num_, _mm256_castsi256_ps(cat_), _mm256_castsi256_ps(s)));        \
        q = _mm256_sub_epi32(_mm256_add_epi32(q, q), _mm256_srai_epi32(right_, 31));          \
    } while (0)

/* The entries at places q of a level of 2^k (tab: its first): up to 32 by
 * permutes of 8-entry loads (bits 3 and 4 of q pick the load), deeper ones
 * by a gather. Entries past a level's are read (HEAP_PAD) but not used. */
__attribute__((target("avx2"), always_inline)) static inline __m256i
heap_level(const int *tab, __m256i q, uint32_t k)
{
    if (k < 4)
        return _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)tab), q);
    if (k > 5)
        return _mm256_i32gather_epi32(tab, q, 4);
    __m256 b3 = _mm256_castsi256_ps(_mm256_slli_epi32(q, 28));
    __m256 lo = _mm256_castsi256_ps(
        _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)tab), q));
    __m256 hi = _mm256_castsi256_ps(
        _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(tab + 8)), q));
    __m256 r = _mm256_blendv_ps(lo, hi, b3);
    if (k == 5) {
        __m256 lo2 = _mm256_castsi256_ps(
            _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(tab + 16)), q));
        __m256 hi2 = _mm256_castsi256_ps(
            _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(tab + 24)), q));
        r = _mm256_blendv_ps(r, _mm256_blendv_ps(lo2, hi2, b3),
                             _mm256_castsi256_ps(_mm256_slli_epi32(q, 27)));
    }
    return _mm256_castps_si256(r);
}

/* Tree ti (t->heap[ti]) for the rows [i0, i1) of x (stride w) in groups of
 * 8, two groups at a time, down its complete copy: levels of up to 8
 * splits are a permute of one 8-entry load, deeper ones gathers. Each
 * group's leaves go to out[i - i0] (node indexes, as walk's), or, when
 * logits is not NULL (ld == 1), their values are added to logits[i], one
 * float add a row as the scalar path's. Returns the first row not walked
 * (fewer than 8 remain). */
__attribute__((target("avx2"))) static size_t walk_heap_avx2(const rt_trees *t, size_t ti,
                                                             const float *x, size_t w, size_t i0,
                                                             size_t i1, uint32_t *out,
                                                             float *logits)
{
    uint32_t d = t->depth[ti];
    size_t off = t->hoff[ti];
    const int *sl = (const int *)t->hslot + off, *pm = (const int *)t->hparam + off;
    const int *lf = (const int *)t->hleaf + off;
    const float *lv = t->hval + off;
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32((int)w));
    const __m256i low5 = _mm256_set1_epi32(31), slots = _mm256_set1_epi32(0x7fffffff);
    size_t i = i0;
    for (; i + 8 * HEAP_GROUPS <= i1; i += 8 * HEAP_GROUPS) {
        __m256i q[HEAP_GROUPS];
        _Pragma("GCC unroll 8") for (int g = 0; g < HEAP_GROUPS; g++) q[g] =
            _mm256_setzero_si256();
        for (uint32_t k = 0; k < d; k++) {
            const int *ls = sl + ((size_t)1 << k) - 1, *lp = pm + ((size_t)1 << k) - 1;
            _Pragma("GCC unroll 8") for (int g = 0; g < HEAP_GROUPS; g++)
            {
                __m256i sg = heap_level(ls, q[g], k), pg = heap_level(lp, q[g], k);
                HEAP_STEP(q[g], x + (i + 8 * (size_t)g) * w, sg, pg);
            }
        }
        _Pragma("GCC unroll 8") for (int g = 0; g < HEAP_GROUPS; g++)
        {
            size_t r = i + 8 * (size_t)g;
            if (logits)
                _mm256_storeu_ps(logits + r, _mm256_add_ps(_mm256_loadu_ps(logits + r),
                                                           _mm256_i32gather_ps(lv, q[g], 4)));
            else
                _mm256_storeu_si256((__m256i *)(out + (r - i0)),
                                    _mm256_i32gather_epi32(lf, q[g], 4));
        }
    }
    for (; i + 8 <= i1; i += 8) {
        const float *xa = x + i * w;
        __m256i qa = _mm256_setzero_si256();
        for (uint32_t k = 0; k < d; k++) {
            const int *ls = sl + ((size_t)1 << k) - 1, *lp = pm + ((size_t)1 << k) - 1;
            __m256i sa = heap_level(ls, qa, k), pa = heap_level(lp, qa, k);
            HEAP_STEP(qa, xa, sa, pa);
        }
        if (logits)
            _mm256_storeu_ps(logits + i, _mm256_add_ps(_mm256_loadu_ps(logits + i),
                                                       _mm256_i32gather_ps(lv, qa, 4)));
        else
            _mm256_storeu_si256((__m256i *)(out + (i - i0)), _mm256_i32gather_epi32(lf, qa, 4));
    }
    return i;
}
#undef HEAP_STEP
#endif

/* The rows of [i0, i1) the complete copy of tree ti walks (all but fewer
 * than 8, or none: no copy, no AVX2), as walk_heap_avx2; returns the first
 * row left to the scalar walk. */
static size_t walk_heap(const rt_trees *t, size_t ti, const float *x, size_t w, size_t i0,
                        size_t i1, uint32_t *out, float *logits)
{
#ifdef HEAP_X86
    if (t->heap_on && t->heap[ti])
        return walk_heap_avx2(t, ti, x, w, i0, i1, out, logits);
#else
    (void)t, (void)ti, (void)x, (void)w, (void)i1, (void)out, (void)logits;
#endif
    return i0;
}

/* The leaf node of each instance [i0, i1) in tree ti into out[i - i0]:
 * LANES instances walk together (independent chains of loads for the CPU
 * to overlap), exactly depth steps each. */
static void walk(const rt_trees *t, size_t ti, const float *x, size_t w, size_t i0, size_t i1,
                 uint32_t *out)
{
    uint32_t r = t->root[ti], d = t->depth[ti];
    const tnode *nodes = t->node;
    const uint32_t *bits = t->bits;
    size_t hw = w / 2; /* w: the row stride; ids after hw floats */
    size_t i = walk_heap(t, ti, x, w, i0, i1, out, NULL);
#define WALK(STEP)                                                                              \
    for (; i + LANES <= i1; i += LANES) {                                                       \
        uint32_t j[LANES];                                                                      \
        const float *row[LANES];                                                                \
        _Pragma("GCC unroll 8") for (int l = 0; l < LANES; l++)                                 \
        {                                                                                       \
            j[l] = r;                                                                           \
            row[l] = x + (i + (size_t)l) * w;                                                   \
        }                                                                                       \
        for (uint32_t s = 0; s < d; s++)                                                        \
            _Pragma("GCC unroll 8") for (int l = 0; l < LANES; l++) j[l] = STEP(j[l], row[l]);  \
        _Pragma("GCC unroll 8") for (int l = 0; l < LANES; l++) out[i - i0 + (size_t)l] = j[l]; \
    }                                                                                           \
    for (; i < i1; i++) {                                                                       \
        uint32_t j = r;                                                                         \
        for (uint32_t s = 0; s < d; s++)                                                        \
            j = STEP(j, x + i * w);                                                             \
        out[i - i0] = j;                                                                        \
    }
#define STEP_THR(j, row) step_thr(nodes, (j), (row))
#define STEP_ANY(j, row) step_any(nodes, bits, (j), (row), (const uint32_t *)((row) + hw))
#define STEP_SMALL(j, row) step_small(fast, (j), (row))
    const tnode *fast = t->fast;
    if (!t->sets[ti]) {
        WALK(STEP_THR)
    } else if (t->small[ti]) {
        WALK(STEP_SMALL)
    } else {
        WALK(STEP_ANY)
    }
#undef STEP_THR
#undef STEP_ANY
#undef STEP_SMALL
#undef WALK
}

#define BLOCK 256 /* instances per block: their inputs stay in L1/L2 */

rt_status rt_trees_forward(const rt_graph *g, const rt_features *f, float *x, float *logits,
                           rt_err *err)
{
    const rt_trees *t = g->trees;
    size_t n = f->n, ld = t->ld, w = rt_trees_gather_width(t);
    rt_status st = gather(g, t, f, x, err);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < ld; j++)
            logits[i * ld + j] += t->bias[j];
    uint32_t at[BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
        size_t i1 = i0 + BLOCK < n ? i0 + BLOCK : n;
        for (size_t ti = 0; ti < t->n_trees; ti++) {
            if (ld == 1) { /* the complete copy adds its leaves itself */
                size_t i2 = walk_heap(t, ti, x, w, i0, i1, NULL, logits);
                walk(t, ti, x, w, i2, i1, at);
                for (size_t i = i2; i < i1; i++)
                    logits[i] += t->values[t->leaf[at[i - i2]]];
            } else {
                walk(t, ti, x, w, i0, i1, at);
                for (size_t i = i0; i < i1; i++) {
                    const float *v = t->values + (size_t)t->leaf[at[i - i0]] * ld;
                    for (size_t j = 0; j < ld; j++)
                        logits[i * ld + j] += v[j];
                }
            }
        }
    }
    return RT_OK;
}

rt_status rt_trees_leaves(const rt_graph *g, const rt_features *f, float *x, uint32_t *leaves,
                          rt_err *err)
{
    const rt_trees *t = g->trees;
    if (!t)
        return rt_err_set(err, RT_ERR_INVALID, "the model has no trees");
    size_t n = f->n, w = rt_trees_gather_width(t);
    rt_status st = gather(g, t, f, x, err);
    if (st)
        return st;
    uint32_t at[BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
        size_t i1 = i0 + BLOCK < n ? i0 + BLOCK : n;
        for (size_t ti = 0; ti < t->n_trees; ti++) {
            walk(t, ti, x, w, i0, i1, at);
            for (size_t i = i0; i < i1; i++)
                leaves[i * t->n_trees + ti] = t->orig[at[i - i0]];
        }
    }
    return RT_OK;
}

size_t rt_trees_use_simd(rt_graph *g, bool on)
{
    rt_trees *t = g ? g->trees : NULL;
    if (!t)
        return 0;
    t->heap_on = on && t->heap_isa;
    size_t n = 0;
    for (size_t ti = 0; ti < t->n_trees; ti++)
        n += t->heap_on && t->heap[ti];
    return n;
}

size_t rt_trees_count(const rt_graph *g)
{
    return g && g->trees ? g->trees->n_trees : 0;
}

size_t rt_trees_scratch(const rt_graph *g)
{
    return g ? rt_trees_gather_width(g->trees) : 0;
}

/* ------------------------------------------------------------- inspection */

static int cmp_importance(const void *a, const void *b)
{
    const rt_trees_importance *x = a, *y = b;
    if (x->gain != y->gain)
        return x->gain < y->gain ? 1 : -1;
    if (x->splits != y->splits)
        return x->splits < y->splits ? 1 : -1;
    return strcmp(x->column, y->column);
}

rt_status rt_trees_describe(const rt_graph *g, rt_trees_shape *shape, rt_trees_importance **imp,
                            rt_err *err)
{
    *imp = NULL;
    memset(shape, 0, sizeof *shape);
    const rt_trees *t = g ? g->trees : NULL;
    if (!t)
        return rt_err_set(err, RT_ERR_INVALID, "the model has no trees");
    const Predictd__TreeEnsemble *te = g->def->graph->trees;
    rt_trees_importance *v = calloc(t->n_inputs, sizeof *v);
    if (!v)
        return NOMEM(err);
    for (size_t k = 0; k < t->n_inputs; k++) {
        v[k].input = k;
        v[k].column = te->inputs[k]->column;
    }
    shape->trees = t->n_trees;
    shape->nodes = t->n_nodes;
    shape->max_depth = t->max_depth;
    for (size_t ti = 0; ti < t->n_trees; ti++) {
        const Predictd__Tree *tr = te->trees[ti];
        for (size_t i = 0; i < tr->n_nodes; i++) {
            const Predictd__TreeNode *n = tr->nodes[i];
            if (n->input < 0) {
                shape->leaves++;
                continue;
            }
            v[n->input].splits++;
            v[n->input].gain += n->gain;
        }
    }
    qsort(v, t->n_inputs, sizeof *v, cmp_importance);
    *imp = v;
    return RT_OK;
}

/* ------------------------------------------------- exact Shapley values */

/* TreeSHAP with one reference (interventional, the baseline): a walk of
 * each tree with the instance (row x) and the baseline (row b). At a split
 * on raw input r: if r is already on the path's instance side, the
 * instance's way; on its baseline side, the baseline's way; else, when the
 * two go the same way, that way, and when they part, both, r joining the
 * instance side on one and the baseline side on the other. A leaf reached
 * with instance side X and baseline side B (disjoint) is the coalition game
 * v [X within S, S without B], whose Shapley values are v (|X|-1)! |B|! /
 * (|X|+|B|)! for each input of X and -v |X|! (|B|-1)! / (|X|+|B|)! for each
 * of B; summed over leaves and trees. */
typedef struct shap_walk {
    const rt_trees *t;
    const float *rx, *rb;      /* gathered rows */
    const uint32_t *ix, *ib;   /* their id halves */
    const long *raw;           /* [n_inputs] raw input of each tree input */
    unsigned char *side;       /* [n_raw] 0 none, 1 instance, 2 baseline */
    size_t *xs, *bs, nx, nb;   /* the two sides, as stacks */
    const double *fact;        /* factorials */
    double *phi;               /* [n_raw x ld] */
} shap_walk;

static uint32_t shap_step(const rt_trees *t, uint32_t j, const float *row, const uint32_t *ids)
{
    const tnode *n = &t->node[j];
    uint32_t id = ids[n->slot];
    uint32_t left = (uint32_t)(row[n->slot] <= n->thr) |
                    ((t->bits[n->set + id / 32] >> (id % 32)) & 1u);
    return n->next + 1 - left;
}

static void shap_node(shap_walk *s, uint32_t j, uint32_t depth)
{
    const rt_trees *t = s->t;
    const tnode *n = &t->node[j];
    if (n->next == j || depth > RT_TREES_MAX_DEPTH) { /* a leaf points at itself */
        size_t nx = s->nx, nb = s->nb, ld = t->ld;
        if (nx + nb == 0)
            return;
        const float *v = t->values + (size_t)t->leaf[j] * ld;
        double wx = nx ? s->fact[nx - 1] * s->fact[nb] / s->fact[nx + nb] : 0.0;
        double wb = nb ? s->fact[nx] * s->fact[nb - 1] / s->fact[nx + nb] : 0.0;
        for (size_t q = 0; q < ld; q++) {
            for (size_t k = 0; k < nx; k++)
                s->phi[s->xs[k] * ld + q] += wx * (double)v[q];
            for (size_t k = 0; k < nb; k++)
                s->phi[s->bs[k] * ld + q] -= wb * (double)v[q];
        }
        return;
    }
    uint32_t gx = shap_step(t, j, s->rx, s->ix), gb = shap_step(t, j, s->rb, s->ib);
    long r = s->raw[n->slot / 2];
    if (gx == gb || r < 0) {
        shap_node(s, gx, depth + 1);
        return;
    }
    if (s->side[r] == 1) {
        shap_node(s, gx, depth + 1);
    } else if (s->side[r] == 2) {
        shap_node(s, gb, depth + 1);
    } else {
        s->side[r] = 1;
        s->xs[s->nx++] = (size_t)r;
        shap_node(s, gx, depth + 1);
        s->nx--;
        s->side[r] = 2;
        s->bs[s->nb++] = (size_t)r;
        shap_node(s, gb, depth + 1);
        s->nb--;
        s->side[r] = 0;
    }
}

rt_status rt_trees_shap(const rt_graph *g, const rt_features *f, const long *raw, size_t n_raw,
                        double *phi, rt_err *err)
{
    const rt_trees *t = g->trees;
    if (!t || f->n != 2)
        return rt_err_set(err, RT_ERR_INVALID, "rt_trees_shap: no trees, or not 2 rows");
    size_t w = rt_trees_gather_width(t), hw = w / 2;
    float *x = malloc(2 * w * sizeof *x);
    unsigned char *side = calloc(n_raw + 1, 1);
    size_t *xs = malloc((n_raw + 1) * sizeof *xs), *bs = malloc((n_raw + 1) * sizeof *bs);
    double *fact = malloc((n_raw + 2) * sizeof *fact);
    rt_status st = RT_OK;
    if (!x || !side || !xs || !bs || !fact) {
        st = NOMEM(err);
        goto out;
    }
    if ((st = gather(g, t, f, x, err)) != RT_OK)
        goto out;
    fact[0] = 1.0;
    for (size_t k = 1; k <= n_raw + 1; k++)
        fact[k] = fact[k - 1] * (double)k;
    for (size_t k = 0; k < n_raw * t->ld; k++)
        phi[k] = 0.0;
    shap_walk s = {t,    x + w, x, (const uint32_t *)(x + w + hw), (const uint32_t *)(x + hw),
                   raw,  side,  xs, bs, 0, 0, fact, phi};
    for (size_t ti = 0; ti < t->n_trees; ti++)
        shap_node(&s, t->root[ti], 0);
out:
    free(x);
    free(side);
    free(xs);
    free(bs);
    free(fact);
    return st;
}

/* ------------------------------------ path-dependent TreeSHAP (Alg. 2) */

/* Lundberg, Erion and Lee 2018 (Consistent individualized feature
 * attribution for tree ensembles), Algorithm 2: the conditional
 * expectations E[f(x) | x_S] estimated from the trees' covers (the node
 * weights: XGBoost's sum_hessian), each tree walked once with the subsets of
 * the path's features kept as permutation weights. In float, in the order
 * XGBoost's RegTree::TreeShap computes it (hot child first, the weights
 * extended, unwound and summed term by term as it does), so its answers are
 * Booster.predict(pred_contribs=True)'s to the float. */
typedef struct pelem {
    int feat;    /* tree input; -1 for the root's pseudo-element */
    float zero;  /* fraction of the paths through here without the feature */
    float one;   /* 1 when the instance goes this way, else 0 */
    float pw;    /* permutation weight */
} pelem;

static void path_extend(pelem *m, unsigned d, float zero, float one, int feat)
{
    m[d].feat = feat;
    m[d].zero = zero;
    m[d].one = one;
    m[d].pw = d == 0 ? 1.0f : 0.0f;
    for (int i = (int)d - 1; i >= 0; i--) {
        m[i + 1].pw += one * m[i].pw * (float)(i + 1) / (float)(d + 1);
        m[i].pw = zero * m[i].pw * (float)(d - (unsigned)i) / (float)(d + 1);
    }
}

static void path_unwind(pelem *m, unsigned d, unsigned k)
{
    float one = m[k].one, zero = m[k].zero, next = m[d].pw;
    for (int i = (int)d - 1; i >= 0; i--) {
        if (one != 0.0f) {
            float tmp = m[i].pw;
            m[i].pw = next * (float)(d + 1) / ((float)(i + 1) * one);
            next = tmp - m[i].pw * zero * (float)(d - (unsigned)i) / (float)(d + 1);
        } else {
            m[i].pw = m[i].pw * (float)(d + 1) / (zero * (float)(d - (unsigned)i));
        }
    }
    for (unsigned i = k; i < d; i++) {
        m[i].feat = m[i + 1].feat;
        m[i].zero = m[i + 1].zero;
        m[i].one = m[i + 1].one;
    }
}

static float path_unwound_sum(const pelem *m, unsigned d, unsigned k)
{
    float one = m[k].one, zero = m[k].zero, next = m[d].pw, total = 0.0f;
    for (int i = (int)d - 1; i >= 0; i--) {
        if (one != 0.0f) {
            float tmp = next * (float)(d + 1) / ((float)(i + 1) * one);
            total += tmp;
            next = m[i].pw - tmp * zero * ((float)(d - (unsigned)i) / (float)(d + 1));
        } else if (zero != 0.0f) {
            total += (m[i].pw / zero) / ((float)(d - (unsigned)i) / (float)(d + 1));
        }
    }
    return total;
}

typedef struct pshap {
    const rt_trees *t;
    const Predictd__Tree *tr; /* the tree's nodes in the ModelDef (covers) */
    const float *row;
    const uint32_t *ids;
    float *phi;               /* [n_inputs x ld] this tree's */
    size_t q0, q1;            /* the outputs the tree's leaves feed */
} pshap;

static float cover(const pshap *s, uint32_t j)
{
    return (float)s->tr->nodes[s->t->orig[j]]->node_weight;
}

static void pshap_node(pshap *s, uint32_t j, unsigned d, pelem *parent, float zero, float one,
                       int feat)
{
    const rt_trees *t = s->t;
    const tnode *n = &t->node[j];
    pelem *m = parent + d + 1;
    memcpy(m, parent, (d + 1) * sizeof *m);
    path_extend(m, d, zero, one, feat);
    if (n->next == j) { /* a leaf */
        const float *v = t->values + (size_t)t->leaf[j] * t->ld;
        for (unsigned i = 1; i <= d; i++) {
            float w = path_unwound_sum(m, d, i);
            for (size_t q = s->q0; q < s->q1; q++)
                s->phi[(size_t)m[i].feat * t->ld + q] += w * (m[i].one - m[i].zero) * v[q];
        }
        return;
    }
    uint32_t hot = shap_step(t, j, s->row, s->ids), cold = hot == n->next ? n->next + 1 : n->next;
    int k = (int)(n->slot / 2);
    float w = cover(s, j), hz = cover(s, hot) / w, cz = cover(s, cold) / w;
    float in_zero = 1.0f, in_one = 1.0f;
    unsigned pi = 0;
    while (pi <= d && m[pi].feat != k)
        pi++;
    if (pi <= d) {
        in_zero = m[pi].zero;
        in_one = m[pi].one;
        path_unwind(m, d, pi);
        d--;
    }
    pshap_node(s, hot, d + 1, m, hz * in_zero, in_one, k);
    pshap_node(s, cold, d + 1, m, cz * in_zero, 0.0f, k);
}

/* The expected value of the subtree at j under the covers (XGBoost's node
 * mean value), for output q. */
static float pshap_mean(const pshap *s, uint32_t j, size_t q)
{
    const tnode *n = &s->t->node[j];
    if (n->next == j)
        return s->t->values[(size_t)s->t->leaf[j] * s->t->ld + q];
    float r = pshap_mean(s, n->next, q) * cover(s, n->next);
    r += pshap_mean(s, n->next + 1, q) * cover(s, n->next + 1);
    return r / cover(s, j);
}

rt_status rt_trees_shap_path(const rt_graph *g, const rt_features *f, float *phi, float *bias,
                             rt_err *err)
{
    const rt_trees *t = g->trees;
    if (!t || f->n != 1)
        return rt_err_set(err, RT_ERR_INVALID, "rt_trees_shap_path: no trees, or not 1 row");
    const Predictd__TreeEnsemble *te = g->def->graph->trees;
    size_t ni = t->n_inputs, ld = t->ld, w = rt_trees_gather_width(t), md = t->max_depth + 2;
    for (size_t ti = 0; ti < t->n_trees; ti++)
        for (size_t i = 0; i < te->trees[ti]->n_nodes; i++)
            if (!(te->trees[ti]->nodes[i]->node_weight > 0.0))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "treeShapAttribution: tree %zu node %zu has no cover (node "
                                  "weight, the sum of hessians): path-dependent TreeSHAP needs "
                                  "them (use exactShapleyAttribution)",
                                  ti, i);
    float *x = malloc(w * sizeof *x), *tp = malloc((ni * ld + 1) * sizeof *tp);
    pelem *path = malloc((md * (md + 1) / 2 + 1) * sizeof *path);
    rt_status st = RT_OK;
    if (!x || !tp || !path) {
        st = NOMEM(err);
        goto out;
    }
    if ((st = gather(g, t, f, x, err)) != RT_OK)
        goto out;
    for (size_t k = 0; k < ni * ld; k++)
        phi[k] = 0.0f;
    for (size_t q = 0; q < ld; q++)
        bias[q] = 0.0f;
    for (size_t ti = 0; ti < t->n_trees; ti++) {
        pshap s = {t, te->trees[ti], x, (const uint32_t *)(x + w / 2), tp, 0, ld};
        /* the outputs the tree feeds: a multi-class XGBoost tree one */
        size_t lo = ld, hi = 0;
        for (size_t i = 0; i < te->trees[ti]->n_nodes; i++) {
            const Predictd__TreeNode *nd = te->trees[ti]->nodes[i];
            for (size_t q = 0; q < nd->n_leaf_value; q++)
                if (nd->leaf_value[q] != 0.0f) {
                    lo = q < lo ? q : lo;
                    hi = q + 1 > hi ? q + 1 : hi;
                }
        }
        if (lo >= hi)
            continue; /* every leaf 0: adds nothing */
        s.q0 = lo;
        s.q1 = hi;
        for (size_t k = 0; k < ni * ld; k++)
            tp[k] = 0.0f;
        pshap_node(&s, t->root[ti], 0, path, 1.0f, 1.0f, -1);
        for (size_t q = lo; q < hi; q++) {
            for (size_t k = 0; k < ni; k++)
                phi[k * ld + q] += tp[k * ld + q];
            bias[q] += pshap_mean(&s, t->root[ti], q);
        }
    }
    for (size_t q = 0; q < ld; q++)
        bias[q] += t->bias[q];
out:
    free(x);
    free(tp);
    free(path);
    return st;
}

long rt_trees_input_column(const rt_graph *g, size_t k)
{
    return g && g->trees && k < g->trees->n_inputs ? g->trees->col[k] : -1;
}

size_t rt_trees_num_inputs(const rt_graph *g)
{
    return g && g->trees ? g->trees->n_inputs : 0;
}
