/*
 * support_trees.h — test helpers for BoostedTrees models (linked into every
 * unit test with the other support_*.c): a small trees spec, a hand-built
 * two-tree ensemble whose answers a test can work out by hand, random
 * complete or ragged ensembles (for the daemon's tests, the walks' and the
 * bench), and node builders. Helpers abort the test's process on out of memory only.
 */
#ifndef PREDICTD_SUPPORT_TREES_H
#define PREDICTD_SUPPORT_TREES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"
#include "support_models.h"

/* A binary BoostedTreesClassifier over SUPPORT_SPEC_WIDE_DEEP_COLUMNS
 * (support_models.h) reading age (numeric), age_buckets (bucketized,
 * boundaries 20 30 40 50), gender_indicator (of gender: Female, Male) and
 * occupation (20 hash buckets): inputs 0..3 of its trees. */
#define SUPPORT_SPEC_TREES                                                                      \
    "{" SUPPORT_SPEC_WIDE_DEEP_COLUMNS                                                          \
    " \"estimator\": {\"type\": \"BoostedTreesClassifier\", \"n_classes\": 2,"                  \
    "  \"feature_columns\": [\"age\", \"age_buckets\", \"gender_indicator\", \"occupation\"],"  \
    "  \"n_trees\": 2, \"max_depth\": 2, \"learning_rate\": 0.1, \"l1_regularization\": 0,"     \
    "  \"l2_regularization\": 1, \"tree_complexity\": 0, \"min_node_weight\": 0,"               \
    "  \"center_bias\": false, \"pruning_mode\": \"none\", \"quantile_sketch_epsilon\": 0.01,"  \
    "  \"n_batches_per_layer\": 1},"                                                            \
    " \"export\": {\"name\": \"trees\", \"format\": \"JSON\"}}"

/* SUPPORT_SPEC_TREES with two trees (bias 0.1):
 *   tree 0: age <= 30 (missing: left) ? 0.25
 *           : gender in {Male} (missing: right) ? 1.0 : -0.5
 *   tree 1: age_buckets <= 2 (missing: right) ? -0.125 : 0.125
 *           (stored as node 0, right = 1, left = 2)
 * Node numbers: tree 0: 0 root, 1 leaf 0.25, 2 gender split, 3 leaf 1.0,
 * 4 leaf -0.5. NULL on error (printed). Free with rt_spec_modeldef_free(). */
Predictd__ModelDef *support_trees_tiny(void);

/* Adds n_trees complete trees of depth `depth` to def->graph->trees (def
 * from a BoostedTrees spec): random inputs; numeric thresholds in [-2, 2]
 * (normalized values) or, for columns without a normalizer, [0, 100];
 * categorical splits half thresholds on the id, half random category sets;
 * leaf values in [-0.1, 0.1]; random default directions. Same seed, same
 * trees. 0 ok, -1 on error (printed). */
int support_random_trees(Predictd__ModelDef *def, uint64_t seed, size_t n_trees, size_t depth);
/* The same but ragged: below the root each node is a leaf with
 * probability 1/4, so leaves sit at every depth up to `depth`. */
int support_random_ragged_trees(Predictd__ModelDef *def, uint64_t seed, size_t n_trees,
                                size_t depth);

/* Node builders (calloc'd, owned by the tree they are added to). */
Predictd__TreeNode *support_tree_leaf(size_t ld, const float *values);
Predictd__TreeNode *support_tree_split(int input, float threshold, bool default_left,
                                       uint32_t left, uint32_t right);
Predictd__TreeNode *support_tree_set(int input, const uint32_t *ids, size_t n_ids,
                                     bool default_left, uint32_t left, uint32_t right);
/* Appends a tree of nodes[0..n) (the nodes move into it) to te. */
void support_tree_add(Predictd__TreeEnsemble *te, Predictd__TreeNode **nodes, size_t n);

#endif /* PREDICTD_SUPPORT_TREES_H */
