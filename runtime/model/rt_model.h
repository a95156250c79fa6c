/*
 * rt_model.h — the model (runtime/model/): a spec turned into a ModelDef, the
 * compiled graph (feature-column table, vocabularies, tree ensembles), raw
 * input batches and the receivers that fill them, the transform (the serving
 * input function), the forward pass and its dense kernels, the heads, and
 * exported models (model.pb + variables.bin, mapped read-only).
 *
 * Pipeline of one batch:
 *   rt_batch (raw inputs per instance)
 *        --rt_transform-->   rt_features (ids / values per feature column, dnn input)
 *        --rt_forward-->     logits
 *        --rt_head_compute-> outputs
 *
 * Thread safety: an open rt_model / rt_graph is immutable and may be shared
 * by any number of threads; an rt_batch belongs to one thread at a time.
 *
 * May use: core, data, stats.
 */
#ifndef PREDICTD_RT_MODEL_H
#define PREDICTD_RT_MODEL_H

#include "rt_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------- spec -> ModelDef */

/*
 * The parts of a trainer spec (docs/trainer.md) that describe the model:
 * "columns", "unused_columns", "label", "feature_columns", "estimator" (model
 * shape only; optimizer keys are accepted and left to the trainer),
 * "trim_strings" (default true) and "export" ("name", "format" JSON|CSV|EXAMPLE).
 * Produces a ModelDef with raw columns, feature columns, graph (with tensor
 * names), head and signatures; no tensor index. Keys listed in other_keys are
 * the caller's (e.g. "train", "eval") and are not checked here; any other
 * unknown key, wrong type or impossible value is refused with a message that
 * names the key (e.g. "feature_columns[3].boundaries: must increase").
 * OUT: *out is malloc-owned; free it with rt_spec_modeldef_free().
 */
struct cJSON;
RT_WUR rt_status rt_spec_to_modeldef(const struct cJSON *spec, const char *const *other_keys,
                              Predictd__ModelDef **out, rt_err *err);

/* ------------------------------------------------- ModelDef helpers */

/* Frees a ModelDef built by rt_spec_to_modeldef, unpacked from model.pb, or
 * built by hand with malloc'd fields. NULL is fine. */
void rt_spec_modeldef_free(Predictd__ModelDef *def);

/* The name, shape and count of one float32 tensor the graph needs. */
typedef struct rt_tensor_spec {
    const char *name;     /* points into the ModelDef */
    uint64_t shape[2];
    uint32_t rank;        /* 1 or 2 */
    uint64_t count;       /* product of shape */
} rt_tensor_spec;

/* Lists every tensor the ModelDef's graph needs, with its expected shape.
 * OUT: *specs is malloc'd (free()); names point into def. */
RT_WUR rt_status rt_graph_tensor_specs(const Predictd__ModelDef *def, rt_tensor_spec **specs,
                                   size_t *n, rt_err *err);

/* ----------------------------------------------------------------- graph */

/*
 * A compiled model: feature columns resolved (vocabulary hash tables, cross
 * plans, bucket boundaries), raw inputs, linear and DNN parts bound to tensor
 * data, and the head. Built from a ModelDef plus a lookup of tensor data, so
 * the runtime binds it to mapped variables.bin and the trainer to its own
 * mutable parameters. The graph keeps pointers into def and the tensor data:
 * both must outlive it.
 */
typedef struct rt_graph rt_graph;

/* Returns the data of tensor `name` holding `count` floats, or NULL (and an
 * error in err) if it is missing or has the wrong size. */
typedef const float *(*rt_tensor_lookup_fn)(void *ctx, const char *name, uint64_t count,
                                            rt_err *err);

/* assets_dir: directory holding vocabulary files (may be NULL if none used). */
RT_WUR rt_status rt_graph_build(const Predictd__ModelDef *def, rt_tensor_lookup_fn lookup,
                         void *lookup_ctx, const char *assets_dir, rt_graph **out,
                         rt_err *err);
void rt_graph_free(rt_graph *g);

const Predictd__ModelDef *rt_graph_def(const rt_graph *g);
size_t rt_graph_logits_dim(const rt_graph *g);

/* True for the feature-column kinds that produce ids (bucketized, vocabulary
 * list/file, identity, hash bucket, crossed, weighted); the others produce
 * dense values.
 * Thread-safe (reads rt_fc.c's constant table of kinds). */
bool rt_fc_column_is_categorical(Predictd__ColumnType t);
/* The spec's name of kind t ("numeric_column", ...), "?" when unknown. */
const char *rt_fc_column_kind_name(Predictd__ColumnType t);
/* The spec key of kind t that sets its number of ids or values
 * ("hash_bucket_size", "boundaries", "shape", ...); NULL for the kinds that
 * take it from their categorical_column (embedding, indicator). */
const char *rt_fc_column_size_key(Predictd__ColumnType t);

/* The raw inputs the feature columns read (the JSON receiver's inputs), in
 * ModelDef raw_columns order, skipping the label and unused columns. */
size_t rt_graph_num_inputs(const rt_graph *g);
const char *rt_graph_input_name(const rt_graph *g, size_t i);
Predictd__DType rt_graph_input_dtype(const rt_graph *g, size_t i);
/* Index of the raw input called name (len bytes), or -1. */
long rt_graph_find_input(const rt_graph *g, const char *name, size_t len);

/* Layout of the DNN input vector: columns sorted by name (as TensorFlow's
 * input_layer does); column k occupies [offset[k], offset[k] + width[k]).
 * Returns the number of DNN columns; *cols are feature column indexes. */
size_t rt_graph_dnn_layout(const rt_graph *g, const size_t **cols, const size_t **offset,
                           const size_t **width, size_t *total_dim);

/* What a tool that lists a compiled graph needs (predict-model show and
 * transform). All read g only: thread-safe, no allocation. Indexes past the
 * end give 0 / NULL. */
/* The head's type (the ModelDef's graph.head.type). */
Predictd__HeadType rt_graph_head(const rt_graph *g);
/* Classes of a classifier (2 for a binary one), 0 for a regressor. */
size_t rt_graph_num_classes(const rt_graph *g);
/* Feature columns, in ModelDef order; column c's definition (points into the
 * ModelDef) and the id space of a categorical column (0 for dense ones). */
size_t rt_graph_num_columns(const rt_graph *g);
const Predictd__FeatureColumn *rt_graph_column(const rt_graph *g, size_t c);
int64_t rt_graph_column_buckets(const rt_graph *g, size_t c);
/* Column fc's settings as "key=value ..." text into buf (n bytes,
 * NUL-terminated; "" for an unknown kind). */
void rt_fc_column_describe(const Predictd__FeatureColumn *fc, char *buf, size_t n);
/* The DNN: its layers (hidden layers and the logits layer; 0 without a DNN
 * part), layer l's output width, and the input vector's width. */
size_t rt_graph_num_layers(const rt_graph *g);
size_t rt_graph_layer_width(const rt_graph *g, size_t l);
size_t rt_graph_dnn_dim(const rt_graph *g);
/* True when g is a BoostedTrees graph (the ModelDef's graph.trees), whose
 * ensemble the rt_trees_* functions below describe. */
bool rt_graph_has_trees(const rt_graph *g);

/* ------------------------------------------------------ raw input batches */

/* One raw value: a number or a string (not NUL-terminated). */
typedef struct rt_value {
    const char *str;  /* NULL for a number */
    size_t len;
    double num;
} rt_value;

/* A batch of instances; for each instance and raw input, zero or more values
 * (zero = missing: the column's default applies, or it is an error). Strings
 * are copied into the batch's arena. */
typedef struct rt_batch rt_batch;

rt_batch *rt_batch_new(const rt_graph *g);
void rt_batch_free(rt_batch *b);
/* Forget all instances; keeps memory for reuse. */
void rt_batch_clear(rt_batch *b);
size_t rt_batch_size(const rt_batch *b);
/* Appends an empty instance; returns its index in *idx. */
RT_WUR rt_status rt_batch_add(rt_batch *b, size_t *idx);
/* Appends one value to input `input` of instance `idx` (multi-valued when
 * called more than once). */
RT_WUR rt_status rt_batch_push_num(rt_batch *b, size_t idx, size_t input, double v);
RT_WUR rt_status rt_batch_push_str(rt_batch *b, size_t idx, size_t input, const char *s, size_t len);
/* The values of one cell. */
const rt_value *rt_batch_cell(const rt_batch *b, size_t idx, size_t input, size_t *n);

/* What a missing input (a cell with no values) means when the batch is
 * transformed; set by whoever fills the batch. A numeric column's
 * default_value always applies first. */
typedef enum {
    RT_MISSING_ERROR = 0,   /* an error: JSON instances carry every input, as
                               TF's placeholders require (the default) */
    RT_MISSING_EMPTY,       /* string inputs: no values (tf.Example, as
                               tf.parse_example's VarLenFeature) */
    RT_MISSING_CSV_DEFAULT, /* the spec's CSV column "default" (CSV rows) */
} rt_missing_policy;

/* rt_batch_clear resets the policy to RT_MISSING_ERROR. */
void rt_batch_set_missing(rt_batch *b, rt_missing_policy policy);
rt_missing_policy rt_batch_missing(const rt_batch *b);

/* Serving input functions other than JSON features: parse one CSV row (the
 * training schema without the label) or one serialized tf.Example into
 * instance idx. Errors name the column. */
RT_WUR rt_status rt_receiver_csv_row(rt_batch *b, size_t idx, const char *row, size_t len, rt_err *err);
RT_WUR rt_status rt_receiver_example(rt_batch *b, size_t idx, const uint8_t *bytes, size_t len,
                              rt_err *err);

/* ---------------------------------- CSV cells into batches (rt_batch.c) */

/*
 * Pushes CSV cell s[0..len), field number `field` (0-based, for messages),
 * of raw column rc into input `input` of instance idx of b: a DT_FLOAT
 * column's cell is read by rt_raw_number (a bad number is refused even when
 * input < 0, i.e. no feature column reads it: rows are checked whole, as
 * tf.decode_csv does); an empty or all-blank cell pushes the column's default
 * (tf.decode_csv's record_defaults) when the spec gave one, else nothing (the
 * transform decides: a numeric column's default_value, or "missing input");
 * a string is pushed as it is (the transform trims by trim_strings).
 */
RT_WUR rt_status rt_batch_push_cell(rt_batch *b, size_t idx, long input, const Predictd__RawColumn *rc,
                           size_t field, const char *s, size_t len, rt_err *err);

/*
 * rt_batch_push_cell's second half for a numeric cell already read with
 * rt_raw_number (parsed: its RT_OK with v, or RT_ERR_NOTFOUND for an empty
 * cell): pushes v, or the column's default, or nothing, exactly as
 * rt_batch_push_cell would for that cell. For a reader that checked the cell
 * on another thread and keeps the value, so it is not parsed twice.
 */
RT_WUR rt_status rt_batch_push_number(rt_batch *b, size_t idx, long input, const Predictd__RawColumn *rc,
                             rt_status parsed, double v);

/* ------------------------------------------------------------- transform */

/* Ids of a categorical feature column in CSR form: instance i has ids
 * ids[offsets[i] .. offsets[i+1]). A weighted_categorical_column also has
 * weights[k] beside ids[k] (never 0: TensorFlow drops zero weights); the
 * linear part and embeddings use only the pairs with a weight > 0 (its
 * safe_embedding_lookup_sparse), an indicator adds every weight. */
typedef struct rt_ids {
    uint32_t *offsets; /* n + 1 */
    int64_t *ids;
    float *weights;    /* NULL: every id weighs 1 */
} rt_ids;

/*
 * The serving input function's output for a batch. For feature column c:
 * categorical kinds (bucketized, vocabulary, identity, hash, crossed,
 * weighted) fill ids[c]; dense kinds (numeric, indicator, embedding, shared
 * embedding) fill values[c], n x width.
 * dnn_input is n x dnn_dim (rt_graph_dnn_layout). Memory is owned by the
 * rt_features and reused across calls.
 */
typedef struct rt_features {
    size_t n;
    size_t n_columns;
    rt_ids *ids;         /* [n_columns]; offsets NULL for dense columns */
    float **values;      /* [n_columns]; NULL for categorical columns */
    size_t *width;       /* [n_columns]; values per instance (0 categorical) */
    float *dnn_input;    /* n x dnn_dim, NULL when the model has no DNN part */
    size_t dnn_dim;
    /* private: capacity bookkeeping */
    void *priv;
} rt_features;

void rt_transform_features_init(rt_features *f);
void rt_transform_features_free(rt_features *f);

/* Runs the feature columns on batch b. Fails (RT_ERR_INVALID) on a missing
 * required input or a wrong type, naming the instance and input
 * ("instances[3].age: ..."). */
RT_WUR rt_status rt_transform(const rt_graph *g, const rt_batch *b, rt_features *f, rt_err *err);

/*
 * rt_transform in two halves, for a caller that keeps each instance's first
 * half across calls (the trainer's rows, seen once per epoch):
 * rt_transform_inputs runs the columns that read the batch (numeric,
 * bucketized, vocabulary, hash, crossed); rt_transform_finish the ones that
 * read only other columns and the weights (indicator, embedding) and builds
 * dnn_input. inputs + finish = rt_transform, bit for bit.
 * rt_transform_features_row_size / _row_save copy instance i's first-half results
 * into a record (an opaque byte string, row_size bytes, any alignment);
 * rt_transform_features_rows_load makes f the batch of n saved records (as
 * rt_transform_inputs would have made it for their instances), ready for
 * rt_transform_finish. Records belong to the graph that made them.
 */
RT_WUR rt_status rt_transform_inputs(const rt_graph *g, const rt_batch *b, rt_features *f, rt_err *err);
RT_WUR rt_status rt_transform_finish(const rt_graph *g, rt_features *f, rt_err *err);
size_t rt_transform_features_row_size(const rt_graph *g, const rt_features *f, size_t i);
void rt_transform_features_row_save(const rt_graph *g, const rt_features *f, size_t i, void *out);
RT_WUR rt_status rt_transform_features_rows_load(const rt_graph *g, rt_features *f,
                                                 const void *const *rows, size_t n, rt_err *err);

/* ---------------------------------------------------------- forward pass */

/* Per-thread scratch for forward passes (layer activations). */
typedef struct rt_workspace rt_workspace;
rt_workspace *rt_workspace_new(void);
void rt_workspace_free(rt_workspace *ws);

/* logits (n x logits_dim, caller-allocated) = linear(f) + dnn(f.dnn_input),
 * or for a BoostedTrees graph bias + the sum of the leaves reached.
 * Hidden activations stay in ws until the next call (for backprop). */
RT_WUR rt_status rt_forward(const rt_graph *g, const rt_features *f, rt_workspace *ws, float *logits,
                     rt_err *err);
/* rt_forward, asking stop(arg) (NULL: never) before it and between chunks
 * of `chunk` rows (0: one chunk; an ONNX graph is one chunk): true stops it
 * with RT_ERR_LIMIT, the logits partly written. Each row's logits have the
 * bits rt_forward gives (the forward pass works row by row); the
 * activations left in ws are the last chunk's. */
RT_WUR rt_status rt_forward_stoppable(const rt_graph *g, const rt_features *f, rt_workspace *ws,
                                      float *logits, size_t chunk, bool (*stop)(void *arg),
                                      void *arg, rt_err *err);
/* Activations of layer k after the last rt_forward: k = 0 is the DNN input
 * (the features' dnn_input itself, not a copy: valid while they are
 * unchanged), 1..H the hidden layers (after activation), H+1 the DNN logits.
 * n x width. */
const float *rt_workspace_layer(const rt_workspace *ws, size_t k, size_t *width);

/* Applies a hidden layer's activation to y[0..n) in place: relu
 * max(x, 0) with NaN kept NaN (as TensorFlow's Relu), tanh, sigmoid, elu
 * (x > 0 ? x : e^x - 1), linear (nothing). Serving and training both. */
void rt_activate(Predictd__Activation act, float *y, size_t n);

/* ------------------------------------------ custom graph nodes (rt_nodes.c) */

/* leaky_relu's slope when a node gives none (TensorFlow's 0.2). */
#define RT_NODE_LEAKY_ALPHA 0.2f

/* One computing node of a custom model graph (Graph.nodes: dense,
 * activation, concat, add, multiply, dropout, batch_norm), bound to its
 * tensors: what rt_node_forward needs and the trainer's backprop reads. */
typedef struct rt_node_op {
    Predictd__NodeKind kind;
    size_t n_in;             /* inputs, in the node's order */
    const size_t *in_width;  /* [n_in] values per instance of each input */
    size_t out;              /* values per instance of the output */
    Predictd__Activation act;/* dense, activation */
    float alpha;             /* leaky_relu's slope (0: RT_NODE_LEAKY_ALPHA) */
    const float *kernel;     /* dense: [in_width[0] x out], row-major */
    const float *bias;       /* dense: [out] */
    const float *bn_gamma, *bn_beta, *bn_mean, *bn_var; /* batch_norm: [out] */
    float bn_eps;
    float rate;              /* dropout (training only) */
} rt_node_op;

/* Checks op's widths and tensors: dense one input and a kernel and bias,
 * activation / dropout / batch_norm one input of width out, concat inputs
 * whose widths sum to out, add / multiply two or more inputs of width out,
 * an activation the nodes know. RT_ERR_INVALID naming `name` otherwise.
 * Pure. */
RT_WUR rt_status rt_node_check(const rt_node_op *op, const char *name, rt_err *err);
/* All the activations of Predictd__Activation on y[0..n) in place: the
 * canned five as rt_activate (the same bits), relu6, selu, softplus,
 * leaky_relu (slope alpha, 0 = RT_NODE_LEAKY_ALPHA), gelu (erf), swish. */
void rt_node_activate(Predictd__Activation act, float alpha, float *y, size_t n);
/* The serving forward of a checked op over n instances: x[k] is input k
 * (n x in_width[k]), y the output (n x out). pre, when not NULL, receives a
 * dense node's value before its activation (n x out; the trainer's backprop
 * reads it). Dropout is the identity here; batch_norm uses the moving
 * statistics as rt_forward's canned batch normalization (the same bits).
 * Each row's bits depend only on that row (rt_dense_rows for dense, element
 * loops in a fixed order otherwise, no fused multiply-add): the same alone
 * or in any batch, on every CPU. y must not overlap any x. */
void rt_node_forward(const rt_node_op *op, const float *const *x, size_t n, float *pre, float *y);

/* A compiled custom graph's nodes (rt_graph_nodes.c), for the trainer's
 * backprop: their number (0 for a canned estimator), the head's logits
 * node, node k's op with its inputs' node indexes (op->n_in) and name
 * (NULL past the end), an input or embedding node's slices of the DNN
 * input (rt_graph_dnn_layout's offsets), in input_layer's order. The kinds
 * input, embedding and linear have ops without tensors (rt_forward fills
 * them from the features and the linear part). Read-only, thread-safe. */
size_t rt_graph_num_nodes(const rt_graph *g);
size_t rt_graph_logits_node(const rt_graph *g);
/* Several heads (MultiHead): their number (0 for one head), and per head
 * its logits node, the offset and width of its columns in the logits (TF's
 * _split_logits order: the heads' logits side by side, in head order). */
size_t rt_graph_heads(const rt_graph *g, const size_t **node, const size_t **off,
                      const size_t **w);
const rt_node_op *rt_graph_node(const rt_graph *g, size_t k, const size_t **in,
                                const char **name);
size_t rt_graph_node_slices(const rt_graph *g, size_t k, const size_t **off, const size_t **w);
/* The loss of def's head: a custom graph's regression head's (its
 * NodeHead.loss and loss_param), squared for everything else. Pure. */
void rt_graph_head_loss(const Predictd__ModelDef *def, rt_loss *out);
/* The loss of one graph head nh (NULL: none): its loss and loss_param when
 * named, squared otherwise. Pure. */
void rt_graph_node_head_loss(const Predictd__NodeHead *nh, rt_loss *out);
/* Node k's output after the last rt_forward of a custom graph (n x width),
 * and a dense node's value before its activation (pre; NULL for others). */
const float *rt_workspace_node(const rt_workspace *ws, size_t k, const float **pre,
                               size_t *width);

/* ------------------------------------------------------------------ head */

/* Outputs of a head for n instances. Arrays not used by the head are NULL. */
typedef struct rt_outputs {
    size_t n;
    size_t n_classes;      /* classifiers; 0 for regression */
    float *logits;         /* n x logits_dim */
    float *logistic;       /* n (binary only) */
    float *probabilities;  /* n x n_classes */
    int64_t *class_ids;    /* n */
    float *predictions;    /* n x label_dimension (regression) */
    /* several heads (MultiHead): head k's outputs, computed from its slice
     * of the logits by its view (rt_graph_head_view); the arrays above are
     * then NULL but logits (all heads' side by side) */
    size_t n_heads;
    struct rt_outputs *heads;
    void *priv;
} rt_outputs;

void rt_head_outputs_init(rt_outputs *o);
void rt_head_outputs_free(rt_outputs *o);
RT_WUR rt_status rt_head_compute(const rt_graph *g, const float *logits, size_t n, rt_outputs *o,
                          rt_err *err);
/* rt_head_compute after rt_forward ran in ws (may be NULL): an ai.onnx.ml
 * classifier's class_ids (and so classes and its label output) are then the
 * operator's own label from the forward pass (ONNX Runtime's two-class
 * rules), not the first highest score. */
RT_WUR rt_status rt_head_compute_ws(const rt_graph *g, const float *logits, rt_workspace *ws,
                                    size_t n, rt_outputs *o, rt_err *err);
/* Several heads (MultiHead): head k as a one-head graph (its type, width,
 * classes and class names) and its name (*name, may be NULL); NULL when k
 * is not one of g's heads (a one-head model has none). Read-only. */
const rt_graph *rt_graph_head_view(const rt_graph *g, size_t k, const char **name);
/* The class string for class id k ("0", "1", ... without a vocabulary). */
const char *rt_graph_class_name(const rt_graph *g, size_t k);

/* ------------------------------------------- tree ensembles (rt_trees.c) */

/* Trees of g's ensemble (0 without one). */
size_t rt_trees_count(const rt_graph *g);
/* Floats of scratch per instance that rt_trees_leaves needs (0 without an
 * ensemble). */
size_t rt_trees_scratch(const rt_graph *g);
/* The leaf each instance of f reaches in each tree, as the node's index in
 * its tree of the ModelDef: leaves[i * trees + t] (f->n x rt_trees_count).
 * x is scratch of f->n * rt_trees_scratch(g) floats. Thread-safe (g is only
 * read). */
RT_WUR rt_status rt_trees_leaves(const rt_graph *g, const rt_features *f, float *x, uint32_t *leaves,
                          rt_err *err);

/* The shape of g's ensemble and, per input, its split count and the sum of
 * its splits' gain (TensorFlow's gain-based feature importances, unscaled),
 * sorted by gain, then splits, highest first: *imp has one entry per input
 * (free() it; column points into g's ModelDef). RT_ERR_INVALID without
 * trees. */
typedef struct rt_trees_shape {
    size_t trees, nodes, leaves, max_depth;
} rt_trees_shape;
typedef struct rt_trees_importance {
    size_t input;       /* index in TreeEnsemble.inputs */
    const char *column;
    uint64_t splits;
    double gain;
} rt_trees_importance;
RT_WUR rt_status rt_trees_describe(const rt_graph *g, rt_trees_shape *shape, rt_trees_importance **imp,
                            rt_err *err);

/* ------------------------------------------------------- exported models */

/* An opened export directory: ModelDef, variables.bin mapped read-only, and
 * the compiled graph. Immutable; share it between threads. */
typedef struct rt_model rt_model;

/* Beside the statistics.json of a model trained elsewhere (no model.pb to
 * record it), predict-model import writes this record of its size and
 * CRC-32C, {"file": "statistics.json", "size": N, "crc32c": C}; rt_model_open
 * refuses a statistics.json that does not match it. */
#define RT_STATS_RECORD "statistics.crc32c.json"

/*
 * Opens and validates EXPORT_DIR (model.pb, variables.bin, assets/): magic,
 * format versions, every offset and length against the file size, checksums,
 * tensor shapes against the graph. Refuses a bad export with a message that
 * names the file and what is wrong.
 */
RT_WUR rt_status rt_model_open(const char *dir, rt_model **out, rt_err *err);
/* The same from memory (for fuzzing and tests); buffers are copied. */
RT_WUR rt_status rt_model_open_buffers(const void *model_pb, size_t pb_len, const void *vars,
                                size_t vars_len, rt_model **out, rt_err *err);
void rt_model_close(rt_model *m);
const rt_graph *rt_model_graph(const rt_model *m);
const Predictd__ModelDef *rt_model_def(const rt_model *m);
/* The validated data of tensor `name` in the export (read-only, lives as long
 * as m), its number of floats in *count (may be NULL); NULL if absent. */
const float *rt_model_tensor(const rt_model *m, const char *name, uint64_t *count);

/* Parses an export version directory name: a canonical decimal integer (no
 * sign, no leading zero unless "0", fits int64). Returns 1 and sets *version
 * (may be NULL), else 0. The exporter and the daemon agree on it; any other
 * name in a base path (e.g. the exporter's hidden .tmp-*) is not a version. */
int rt_model_version_parse(const char *name, int64_t *version);

/* ------------------------------------ version directories (rt_publish.c) */

/* Hidden temp names in a base directory: ".tmp-<version>-<pid>-<rand>". */
#define RT_PUBLISH_TMP_PREFIX ".tmp-"

/* One file of a new version directory. name is relative to the version
 * directory ('/' separates subdirectories, made as needed; the caller vets
 * names that come from users); its bytes are data (len bytes), or, with
 * data NULL and src_path set, a copy of the regular file src_path. */
typedef struct rt_publish_file {
    const char *name;
    const void *data;
    size_t len;
    const char *src_path;
} rt_publish_file;

/* Called on the complete (fsynced) temp directory at tmp_path before it is
 * published; a status other than RT_OK (with err set) refuses the version.
 * It may add files to the directory, durably (rt_file_write: temp file,
 * fsync, rename, fsync of the directory), as predict-model import --data
 * adds statistics.json. */
typedef rt_status (*rt_publish_check_fn)(const char *tmp_path, void *arg, rt_err *err);

typedef struct rt_publish_params {
    int64_t version;           /* 0: the Unix time, or one past the newest if not older */
    bool sync;                 /* fsync files and directories (false only for tests) */
    rt_publish_check_fn check; /* NULL: none */
    void *check_arg;
} rt_publish_params;

/*
 * Writes a new version directory of export base `base` (created with mkdir
 * -p when missing): files[0..n) into a hidden BASE/.tmp-<v>-<pid>-<rand>
 * directory, each file, each made subdirectory and the directory fsynced,
 * p->check run on it, then renamed to "<v>" with RENAME_NOREPLACE (the next
 * integer when taken, 1000 tries at most: RT_ERR_EXISTS) and BASE fsynced
 * (a failed fsync takes the version back out). p NULL: version 0, sync.
 * On any failure nothing is left in BASE. *version (may be NULL) gets the
 * version written. Errors name the base or the file ("NAME: write: ...").
 */
RT_WUR rt_status rt_publish_version(const char *base, const rt_publish_file *files, size_t n,
                                    const rt_publish_params *p, int64_t *version, rt_err *err);
/* The versions in the open base directory dfd (names rt_model_version_parse
 * accepts that are directories), ascending; *versions malloc-owned (NULL
 * when none). base names the directory in messages. */
RT_WUR rt_status rt_publish_list(int dfd, const char *base, int64_t **versions, size_t *n,
                                 rt_err *err);
/* Writes a fresh hidden temp name for version v into buf. 0 ok, -1 too small. */
int rt_publish_temp_name(char *buf, size_t cap, int64_t v);
/* The writer's pid in a temp name ".tmp-<version>-<pid>-<rand>", or -1 when
 * name has another form. */
long rt_publish_temp_pid(const char *name);
/* Removes base's leftover temp directories (.tmp-<version>-<pid>-<rand>) of
 * interrupted writes: those whose writer no longer runs on this host (its
 * pid gone: SIGKILL, a crash); with max_age_secs >= 0 also other .tmp-*
 * entries older than it, and a live pid's only when older than 24 times it
 * (a slow writer keeps its directory; a reused pid does not keep a leftover
 * forever). max_age_secs < 0: dead writers' only. A missing base is no
 * error. Best effort: the first removal error is reported, naming the base
 * and the directory; *removed (may be NULL) counts those removed. */
RT_WUR rt_status rt_publish_clean_temps(const char *base, int64_t max_age_secs,
                                        size_t *removed, rt_err *err);

/* Layout of variables.bin (all little-endian):
 *   0  char[8]  magic "PDVARS\0\0"
 *   8  u32      format version (1)
 *  12  u32      tensor count
 *  16  u64      file size in bytes
 *  24  u32      CRC-32C of bytes 0..23
 *  28..63       zero
 *  64..         tensors, each at a 64-byte aligned offset, zero padding between */
#define RT_VARS_MAGIC "PDVARS\0\0"
#define RT_VARS_VERSION 1u
#define RT_VARS_HEADER 64u
#define RT_VARS_ALIGN 64u
#define RT_FORMAT_VERSION 1u

/* The training statistics of an export (statistics.json), or NULL when the
 * export has none (written before they existed, or a model trained
 * elsewhere imported without predict-model import --data). Lives as long as m. */
const rt_stats *rt_model_stats(const rt_model *m);

/* ------------------------------- models trained elsewhere (rt_xgb_*.c) */

/*
 * XGBoost's JSON model (Booster.save_model("model.json"), or "model.ubj"; 1.0 and
 * later; docs/models-from-elsewhere.md) as the ModelDef of a BoostedTrees
 * ensemble, so the one tree runtime serves it: numeric splits "x <
 * split_condition" become "x <= the float below it", categorical splits
 * (category in the set goes right) sets of the ids going left, leaves summed
 * in float in tree order from bias = base_score as a margin, as XGBoost sums
 * them. Inputs are the model's feature_names (f0..fN without them;
 * serving.json's feature_names, when given, name them instead); a "c" feature is read as its category's string when
 * serving.json lists its categories, else as its integer code. serving_json
 * (may be NULL) is the optional file beside the model:
 * {"categories": {"feat": ["A", ...]}, "classes": [...], "feature_names": [...]}.
 * Everything is checked (the file may be hostile): refusals name the file
 * and the field ("model.json: learner.gradient_booster.model.trees[3].
 * left_children[5]: ..."). file is "model.json" (model is its text) or
 * "model.ubj" (its UBJSON bytes, read into the same document).
 * OUT: *out as rt_spec_to_modeldef's; *link the
 * objective's output transform (rt_xgb_link), for rt_graph_set_link.
 */
typedef enum rt_xgb_link {
    RT_XGB_LINK_NONE = 0, /* predictions = the margin (or a classifier's head) */
    RT_XGB_LINK_EXP,      /* count:poisson, reg:gamma, reg:tweedie */
    RT_XGB_LINK_SIGMOID,  /* reg:logistic */
} rt_xgb_link;
RT_WUR rt_status rt_xgb_to_modeldef(const char *file, const char *model, size_t len,
                             const char *serving_json, size_t serving_len,
                             Predictd__ModelDef **out, rt_xgb_link *link, rt_err *err);

/* What an XGBoost model's graph does beyond a predict-train ensemble's, set
 * by rt_model_open on the graph it built: the regression head's output
 * transform (rt_xgb_link), and inputs that may be absent or JSON null (a
 * missing value: NaN, no id, as XGBoost reads them). */
void rt_xgb_graph_set(rt_graph *g, rt_xgb_link link);
rt_xgb_link rt_xgb_graph_link(const rt_graph *g);
bool rt_xgb_graph_absent_is_missing(const rt_graph *g);

/* ---------------------------------------- ONNX models (rt_onnx_*.c) */

/* True when g runs an ONNX network (model.onnx, docs/models-from-elsewhere.md)
 * in place of the linear part its ModelDef describes; *steps (may be NULL)
 * the operators it runs, *classes (may be NULL) the classes of a network
 * served as a classifier (its one output a softmax), else 0. */
bool rt_onnx_in_graph(const rt_graph *g, size_t *steps, size_t *classes);

/* True when g's ONNX graph ends in an ai.onnx.ml classifier
 * (TreeEnsembleClassifier, LinearClassifier): its scores are served as the
 * probabilities (and the logits) as the operator computes them. */
bool rt_onnx_run_scores(const rt_graph *g);

/* What an ONNX graph's output holds, for answers under its own name. */
typedef enum rt_onnx_out_kind {
    RT_ONNX_OUT_NONE,   /* not served under its name */
    RT_ONNX_OUT_FLOATS, /* a regressor's: predictions[off .. off + width) of each instance */
    RT_ONNX_OUT_LABEL,  /* a classifier's label: the class name of class_ids (labels_int: a number) */
    RT_ONNX_OUT_SCORES, /* a classifier's scores: the probabilities */
    RT_ONNX_OUT_MAP,    /* a ZipMap: {class name: probability} */
} rt_onnx_out_kind;

typedef struct rt_onnx_output {
    const char *name;   /* the graph output's name (points into the model) */
    rt_onnx_out_kind kind;
    size_t off, width;
    bool labels_int;    /* LABEL, MAP: the class labels are int64s */
    const char *const *names; /* MAP: its keys, LABEL: the graph's labels (an int64
                                 label's digits), one per class (n_names) */
    size_t n_names;
    uint32_t rank;      /* the value's shape as the graph declares it: rank, and */
    const int64_t *dims; /* dims[1 .. rank) after the batch (dims[0] unused) */
} rt_onnx_output;

/* Output q (< the count returned for q = 0..) of g's ONNX graph into *out;
 * the graph's output count (0 for a graph that is not ONNX). Thread-safe. */
size_t rt_onnx_run_output(const rt_graph *g, size_t q, rt_onnx_output *out);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_RT_MODEL_H */
