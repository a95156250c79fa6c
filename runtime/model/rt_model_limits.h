/*
 * rt_model_limits.h — the hard limits of the model layer, one place, each
 * with what it bounds (SQLite's sqliteLimit.h). Input past a limit is refused
 * with a message naming it, never truncated. Limits that are part of a
 * public contract stay in the layer's public header (rt_model.h).
 */
#ifndef PREDICTD_RT_MODEL_LIMITS_H
#define PREDICTD_RT_MODEL_LIMITS_H

/* crossed ids of one instance (the product of its columns' value counts) */
#define RT_MAX_CROSS_PRODUCT (1u << 20)
/* columns one crossed column combines */
#define RT_MAX_CROSS_PARTS 64
/* categories of one BoostedTrees input in a spec */
#define RT_SPEC_MAX_TREE_CATEGORIES 1000000
/* inputs of a tree ensemble */
#define RT_TREES_MAX_INPUTS 4096u
/* nodes of one tree */
#define RT_TREES_MAX_TREE_NODES (1u << 20)
/* nodes of all the trees of an ensemble */
#define RT_TREES_MAX_NODES (1u << 26)
/* ids of one categorical input (exact as floats) */
#define RT_TREES_MAX_CATEGORIES (1u << 24)
/* bucket boundaries (bin_upper) of one input */
#define RT_TREES_MAX_BINS 65536u
/* 32-bit words of all categorical id sets (128 MiB) */
#define RT_TREES_MAX_SET_WORDS (1u << 25)
/* instances of one batch */
#define RT_BATCH_MAX_INSTANCES (1u << 26)
/* a numeric column's shape, an embedding's dimension */
#define RT_GRAPH_MAX_SHAPE 65536u

/* nodes (inputs and layers) of a custom model graph */
#define RT_SPEC_MAX_NODES 1024
/* inputs one node of a custom model graph reads */
#define RT_SPEC_MAX_NODE_INPUTS 64
/* heads of a custom model graph */
#define RT_SPEC_MAX_HEADS 16
/* model.onnx: its size, nodes, values, a tensor's elements, a row's elements,
 * all constants' elements, a node's inputs */
#define RT_ONNX_MAX_BYTES ((size_t)1 << 30)
#define RT_ONNX_MAX_NODES 100000u
#define RT_ONNX_MAX_ELEMS ((size_t)1 << 28)
#define RT_ONNX_MAX_ROW ((size_t)1 << 22)
#define RT_ONNX_MAX_CONST ((size_t)1 << 29)
#define RT_ONNX_MAX_INPUTS 64u
/* model.onnx: the values one instance's forward pass keeps, summed over the
 * computed values (each has its own buffer: 1 MiB per instance) */
#define RT_ONNX_MAX_ACTIVATIONS ((size_t)1 << 18)

#endif /* PREDICTD_RT_MODEL_LIMITS_H */
