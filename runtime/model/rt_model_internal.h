/*
 * rt_model_internal.h — the compiled graph's structures (vocabularies, raw inputs,
 * feature columns, layers, trees), the feature-column kind table, batch
 * internals and the dense kernels. The model layer's files include it; so do
 * the explanations (rt_explain_internal.h: Shapley and integrated gradients
 * walk the graph's inputs, columns and layers) and, of the serving layer,
 * rt_serve_internal.h (the request context holds a graph's features and
 * workspace; the renderers read its outputs' layout).
 */
#ifndef PREDICTD_RT_MODEL_INTERNAL_H
#define PREDICTD_RT_MODEL_INTERNAL_H

/* The build defines PREDICTD_LAYER_<layer> for each runtime source (Makefile). */
#if !defined(PREDICTD_LAYER_model) && !defined(PREDICTD_LAYER_explain) && \
    !defined(PREDICTD_LAYER_serve) && \
    !defined(PREDICTD_MODULE_tests) && !defined(PREDICTD_MODULE_bench)
#error "rt_model_internal.h is the model layer's own (docs/design.md, \"The runtime's layers\")"
#endif

#include "rt_model.h"
#include "rt_core_internal.h"
#include "rt_model_limits.h"

#include <stdbool.h>
#include <string.h>

/* Open-addressing string -> id table for vocabularies (built once). */
typedef struct rt_vocab {
    uint64_t *hashes;   /* [cap] fingerprint of the word, 0 = empty slot */
    uint32_t *lens;     /* [cap] */
    const char **words; /* [cap] points into the ModelDef (or assets) */
    int64_t *ids;       /* [cap] */
    size_t cap;         /* power of two */
    size_t count;
} rt_vocab;

/* Returns the id of word (len bytes) or -1. */
int64_t rt_vocab_find(const rt_vocab *v, const char *word, size_t len);
/* The same with the word's rt_hash_fingerprint64 already known (fp). */
int64_t rt_vocab_find_fp(const rt_vocab *v, const char *word, size_t len, uint64_t fp);

/* A raw input (a CSV/JSON feature). */
typedef struct rt_input {
    const char *name;       /* points into the ModelDef */
    size_t name_len;        /* strlen(name) */
    Predictd__DType dtype;  /* DT_FLOAT or DT_STRING */
    const Predictd__RawColumn *raw;
} rt_input;

/* One compiled feature column. */
typedef struct rt_fcol {
    const Predictd__FeatureColumn *def;
    Predictd__ColumnType type;
    const struct rt_fc_kind *kind; /* rt_fc_kind_of(type), kept when compiled
                                      (NULL: look it up) */
    long input;          /* raw input index (numeric, vocabulary, identity,
                            hash; weighted: its weights); -1 */
    long source;         /* feature column index: bucketized -> numeric,
                            embedding/indicator/weighted -> categorical; -1 */
    int64_t num_buckets; /* id space of a categorical column */
    size_t width;        /* values per instance: numeric shape, indicator
                            buckets, embedding dimension; 0 categorical */
    rt_vocab vocab;      /* vocabulary columns */
    size_t n_cross;      /* crossed: parts */
    long *cross_input;   /* [n_cross] raw input index, or -1 */
    long *cross_col;     /* [n_cross] feature column index, or -1 */
    const float *embedding; /* embedding: [source buckets x width] (a shared
                               table: the same memory for every user) */
    char **file_vocab;   /* vocabulary_file words (owned), or NULL */
    size_t n_file_vocab;
} rt_fcol;

typedef struct rt_layer {
    size_t in, out;
    Predictd__Activation act;
    const float *kernel; /* [in x out], row-major */
    const float *bias;   /* [out] */
    /* batch normalization after the activation (NULL gamma: none) */
    const float *bn_gamma, *bn_beta, *bn_mean, *bn_var; /* [out] each */
    float bn_eps;
} rt_layer;

/* A compiled node of a custom model graph (Graph.nodes, rt_graph_nodes.c). */
typedef struct rt_gnode {
    const Predictd__Node *def;
    rt_node_op op;       /* kind, widths, settings; tensors bound by rt_graph.c */
    size_t *in;          /* [op.n_in] indexes of earlier nodes */
    size_t *in_width;    /* [op.n_in] (op.in_width points here) */
    size_t n_slices;     /* input, embedding: the DNN input's column slices */
    size_t *slice_off, *slice_w;
} rt_gnode;

/* A compiled tree ensemble (rt_trees.c); NULL in a graph without trees. */
typedef struct rt_trees rt_trees;
#define RT_TREES_MAX_DEPTH 32 /* deepest leaf of a tree */

/* The kinds' transform passes (rt_fc_kind.transform_pass, rt_fc.c): those
 * below RT_FC_PASS_OF_IDS read the batch; the last one reads only other
 * columns' ids (and the weights). */
#define RT_FC_PASS_OF_IDS 3
#define RT_FC_PASSES 4

struct rt_graph {
    const Predictd__ModelDef *def;
    size_t n_inputs;
    rt_input *inputs;
    size_t n_fcols;
    rt_fcol *fcols;
    size_t *fc_order;    /* [n_fcols] the columns by transform pass, in column
                            order within one (rt_transform.c's run order) */
    size_t fc_pass_at[RT_FC_PASSES + 1]; /* fc_order[fc_pass_at[p]..[p+1]): pass p */
    size_t logits_dim;

    /* linear part */
    size_t n_linear;
    size_t *linear_cols;     /* feature column indexes */
    const float **linear_w;  /* [n_linear] each [dim x logits_dim] */
    const float *linear_bias;/* [logits_dim] or NULL when no linear part */

    /* DNN part */
    size_t n_dnn;
    size_t *dnn_cols;        /* sorted by name */
    size_t *dnn_offset;
    size_t *dnn_width;
    size_t dnn_dim;
    size_t n_layers;         /* hidden layers + the logits layer; 0 = no DNN */
    rt_layer *layers;

    /* custom model graph (graph.nodes): the linear part and the DNN input
     * above are its linear block and its input and embedding nodes' columns */
    size_t n_nodes;          /* 0 = a canned estimator */
    rt_gnode *nodes;
    size_t logits_node;      /* the head's (the first head's with several) */
    size_t n_heads;          /* several heads (MultiHead): their logits nodes, and their
                              * columns' offsets in the logits, in head order */
    size_t *head_node, *head_off, *head_w;
    size_t n_head_views;     /* = n_heads: each head as a one-head graph (its type,
                              * logits_dim, n_classes, class_names; nothing else) */
    struct rt_graph *head_views;

    /* BoostedTrees (graph.trees), instead of the linear and DNN parts */
    rt_trees *trees;

    /* head */
    Predictd__HeadType head;
    size_t n_classes;
    char **class_names;      /* [n_classes] owned */

    uint64_t serial;         /* unique among the graphs this process made */

    /* an XGBoost model's (rt_xgb_graph_set) */
    int xgb_link;            /* rt_xgb_link of the regression head */
    bool absent_missing;     /* an absent or null input is a missing value */

    /* an ONNX model's network (rt_graph_set_onnx): rt_forward runs it in
     * place of the linear part the ModelDef describes; owned by the model */
    const struct rt_onnx *onnx;
};

/* g's serial number: never the same for two graphs of one process, even
 * when one is made at a freed one's address (a key for per-graph caches). */
uint64_t rt_graph_serial(const rt_graph *g);

/* ------------------------------------------------ trees (rt_trees.c) */

/* Checks g->def->graph->trees against g's compiled columns and head and lays
 * it out for serving into *out (NULL when the graph has no trees). Messages
 * name the input, or the tree and node ("trees: tree 3 node 7: ..."). */
RT_WUR rt_status rt_trees_compile(const rt_graph *g, rt_trees **out, rt_err *err);
void rt_trees_free(rt_trees *t); /* accepts NULL */
/* Floats of scratch per instance that rt_trees_forward / _leaves need. */
size_t rt_trees_gather_width(const rt_trees *t);
/* logits (f->n x logits_dim) += bias + the leaves f's instances reach;
 * x is scratch of f->n * rt_trees_gather_width floats. Thread-safe (g is
 * only read). */
RT_WUR rt_status rt_trees_forward(const rt_graph *g, const rt_features *f, float *x, float *logits,
                           rt_err *err);

/* Exact Shapley values of g's ensemble's logits (TreeSHAP with one
 * reference, polynomial in the trees' size): f holds 2 rows, the baseline
 * (row 0) and the instance (row 1); raw[k] is the raw input tree input k
 * reads (-1: none), n_raw the raw inputs; phi (n_raw x logits_dim) gets
 * each raw input's value per logit, in double. rt_xai.c. */
RT_WUR rt_status rt_trees_shap(const rt_graph *g, const rt_features *f, const long *raw, size_t n_raw,
                        double *phi, rt_err *err);
/* Path-dependent TreeSHAP (Lundberg et al. 2018, Algorithm 2) of g's
 * logits for the one instance of f, with the trees' node weights as covers,
 * in float as XGBoost computes it: phi (n_inputs x logits_dim, by tree
 * input) and bias (logits_dim: the expected logits, the ensemble's bias
 * plus each tree's mean under the covers). RT_ERR_INVALID when a node has
 * no weight. */
RT_WUR rt_status rt_trees_shap_path(const rt_graph *g, const rt_features *f, float *phi, float *bias,
                             rt_err *err);
/* Tests: on false, g's trees walk with the scalar code only; on true (the
 * default), the AVX2 walk takes the trees it can where the CPU has AVX2.
 * Returns the number of trees the AVX2 walk now takes. Not thread-safe. */
size_t rt_trees_use_simd(rt_graph *g, bool on);
/* The feature column tree input k reads (its ids or values), or -1. */
long rt_trees_input_column(const rt_graph *g, size_t k);
/* Inputs of g's ensemble (0 without one). */
size_t rt_trees_num_inputs(const rt_graph *g);

/* struct rt_batch is private to rt_batch.c; other files use rt_batch_cell(). */

/* ------------------------------- feature-column helpers (rt_graph.c etc.) */

/* crossed_column's default hash_key (used when a ModelDef says 0). */
#define RT_CROSS_HASH_KEY UINT64_C(0xDECAFCAFFE)

/* Builds v over words[0..n) (ids = positions); words must outlive v.
 * RT_ERR_INVALID naming the word when one is listed twice. */
RT_WUR rt_status rt_vocab_build(rt_vocab *v, const char *const *words, size_t n, rt_err *err);
void rt_vocab_free(rt_vocab *v); /* v may be zeroed; keeps nothing */
/* Reads the first `want` lines of the file at path (trimmed when trim,
 * else without a trailing CR) into *words (n_words, owned by the caller:
 * free each and the array, also on failure) and builds v over them.
 * RT_ERR_IO / RT_ERR_FORMAT (fewer lines) naming the file. */
/* rt_file_read for a regular file (never a pipe) into memory aligned to
 * align bytes (a power of two), of the exact size the file had when opened
 * (a file that shrinks while read is refused: RT_ERR_FORMAT). For tensors
 * read into memory at load. OUT: *data (free it), *len. Thread-safe. */
RT_WUR rt_status rt_file_read_aligned(int dfd, const char *path, size_t max, size_t align,
                                      void **data, size_t *len, rt_err *err);
RT_WUR rt_status rt_vocab_load_file(rt_vocab *v, const char *path, size_t want, bool trim,
                             char ***words, size_t *n_words, rt_err *err);

/* True when path is a safe relative path inside assets/ (no "..", no
 * leading '/', no empty component). */
bool rt_vocab_asset_path_ok(const char *path);

/*
 * One feature-column kind: everything the runtime does for it, as one row of
 * the table in rt_fc.c. A new kind is its functions plus one row there (and,
 * in the trainer, one row of trn_fc.c's gradient table).
 *   parse       spec keys -> the FeatureColumn (rt_spec_columns.c)
 *   resolve     spec, second pass: references to other columns (may be NULL)
 *   default_name  malloc'd name when the spec gives none (rt_spec_columns.c)
 *   raw_shape   values per instance it reads from raw column `raw`, 0 when
 *               it does not read it (the JSON signature's inputs)
 *   compile     FeatureColumn -> rt_fcol: sources, id space, width (rt_graph.c)
 *   transform   raw values or earlier columns -> ids or values (rt_transform.c)
 *   describe    its settings as "key=value ..." text (predict-model show)
 * compile_pass and transform_pass order the kinds so that a column runs after
 * the kinds it reads (0 raw inputs, 1 bucketized, 2 crossed, 3 of ids).
 */
/* A kind's compile and transform functions (see below). */
typedef rt_status rt_fc_compile_fn(rt_graph *g, size_t c, bool *read, long *raw, rt_err *err);
typedef rt_status rt_fc_run_fn(const rt_graph *g, const rt_batch *b, rt_features *f, size_t c,
                               rt_err *err);
struct spec_ctx;
struct cJSON;
typedef struct rt_fc_kind {
    Predictd__ColumnType type;
    const char *spec_name;         /* the spec's "type" (TensorFlow's function) */
    const char *const *spec_keys;  /* keys it takes, NULL-terminated */
    const char *size_key;          /* the spec key that sets its ids or width */
    const char *group_key;         /* one spec item makes a column per item of
                                      this list (shared_embedding_columns);
                                      parse sees the item's index in
                                      spec_ctx.group_item */
    bool categorical;              /* produces ids (else dense values) */
    bool linear_ok, dnn_ok;        /* may be listed in the linear / DNN part */
    bool table;                    /* has an embedding table (DNN part) */
    int compile_pass, transform_pass;
    rt_status (*parse)(struct spec_ctx *s, const struct cJSON *c, const char *path,
                       Predictd__FeatureColumn *fc);
    rt_status (*resolve)(struct spec_ctx *s, size_t i, const char *path);
    char *(*default_name)(const Predictd__FeatureColumn *fc);
    uint32_t (*raw_shape)(const Predictd__FeatureColumn *fc, const char *raw);
    rt_fc_compile_fn *compile;
    rt_fc_run_fn *transform;
    void (*describe)(const Predictd__FeatureColumn *fc, char *buf, size_t n);
} rt_fc_kind;

/* The kind of type t / named spec_name in a spec; NULL when unknown. */
const rt_fc_kind *rt_fc_kind_of(Predictd__ColumnType t);
const rt_fc_kind *rt_fc_kind_named(const char *spec_name);
/* Kind number i (0, 1, ...), NULL past the last: to list them. */
const rt_fc_kind *rt_fc_kind_at(size_t i);

/* The kinds' compile functions (rt_graph.c) and transforms (rt_transform.c),
 * each of rt_fc_kind's compile and transform type. */
rt_fc_compile_fn rt_graph_compile_numeric, rt_graph_compile_lookup, rt_graph_compile_bucketized,
    rt_graph_compile_crossed, rt_graph_compile_of_ids, rt_graph_compile_identity,
    rt_graph_compile_weighted;
rt_fc_run_fn rt_transform_run_numeric, rt_transform_run_lookup, rt_transform_run_bucketized,
    rt_transform_run_crossed, rt_transform_run_of_ids, rt_transform_run_weighted;
/* Whether instance i of b lacks raw input `input` where the transform needs
 * it: no values, no default under the batch's missing-input policy, and some
 * column reads it without a default of its own (a numeric column's
 * default_value; a weighted column's weights only where its values are
 * given). The inputs for which this is true are exactly those the transform
 * refuses as "instances[i].NAME: missing input". For error messages. */
bool rt_transform_needs(const rt_graph *g, const rt_batch *b, size_t i, size_t input);

/* TensorFlow's binary classifier head exports a "regression" signature
 * (method regress, the serialized examples "inputs" in, the logistic as
 * "outputs") beside "classification": adds it to a binary classifier's def
 * that has "classification" and lacks it (exports written before predictd
 * listed it), keeping the signatures sorted by name. Others: unchanged. */
RT_WUR rt_status rt_spec_add_regression_signature(Predictd__ModelDef *def, rt_err *err);

/* The index of raw column `name` in def (exact match), or -1. Pure. */
long rt_graph_find_raw(const Predictd__ModelDef *def, const char *name);

/* Checks that def compiles into a graph (everything rt_graph_build checks
 * except tensor data and vocabulary files). */
RT_WUR rt_status rt_graph_check(const Predictd__ModelDef *def, rt_err *err);

/* What the transform needs of a string value, computed once when the value
 * enters the batch: where its text starts and how long it is once trimmed
 * as the model says (def->trim_strings): value.str + skip, len bytes; and
 * the rt_hash_fingerprint64 of that text (vocabulary lookups, hash buckets and
 * crosses all start from it). skip is RT_SKEY_NONE for a number (and for a
 * string too long to describe so: the transform then works it out itself). */
#define RT_SKEY_NONE UINT32_MAX
typedef struct rt_skey {
    uint64_t fp;
    uint32_t skip, len;
} rt_skey;

/* rt_batch_cell with the cell's keys (parallel to its values; NULL when
 * the cell is empty) in *keys. Valid until the batch changes. */
const rt_value *rt_batch_cell_keys(const rt_batch *b, size_t idx, size_t input, size_t *n,
                                   const rt_skey **keys);

/* Clears b and makes it hold instances for graph g (reuses its memory). */
RT_WUR rt_status rt_batch_rebind(rt_batch *b, const rt_graph *g);

/* Empties every cell of instance idx (the values pushed to them are left
 * unused): a reader that gave up on an instance half-way reads it again. */
void rt_batch_clear_instance(rt_batch *b, size_t idx);

/* The graph batch b was created for (rt_batch_new's argument); the receivers
 * need it to map CSV columns and tf.Example features to raw inputs. */
const rt_graph *rt_batch_graph(const rt_batch *b);

/* ---------------------------------- custom graph nodes (rt_graph_nodes.c) */

/* Compiles g->def->graph's nodes (after its linear part and DNN columns):
 * inputs resolved to earlier nodes, widths checked, input and embedding
 * nodes' slices of the DNN input, the head's logits node. No tensors yet.
 * RT_ERR_FORMAT naming the node. */
RT_WUR rt_status rt_graph_nodes_compile(rt_graph *g, rt_err *err);
/* Frees what rt_graph_nodes_compile made (g->nodes); accepts none. */
void rt_graph_nodes_free(rt_graph *g);

/* ------------------------------------------- dense layers (rt_dense.c) */

/* Instruction sets of the dense kernel, in increasing width. */
typedef enum { RT_DENSE_BASE, RT_DENSE_AVX2, RT_DENSE_AVX512 } rt_dense_isa;

/* y (m x out) = bias + x (m x in) W (in x out), all row-major, with every
 * output summed from bias[j] + 0 in increasing input order, each product and
 * sum rounded to float: each row's bits depend only on that row, the
 * weights and bias, never on m, the other rows or the instruction set
 * (rt_dense.c explains why skipping zero inputs keeps that true). W must
 * be finite. x and y must not overlap. Thread-safe (no shared state). */
void rt_dense_rows(const float *x, size_t m, size_t in, const float *w, const float *bias,
                   size_t out, float *y);
/* The widest instruction set this CPU runs. */
rt_dense_isa rt_dense_best_isa(void);
/* rt_dense_rows with a chosen instruction set (a wider one than the CPU runs
 * falls back to rt_dense_best_isa()): for the tests that compare them. */
void rt_dense_rows_isa(rt_dense_isa isa, const float *x, size_t m, size_t in, const float *w,
                       const float *bias, size_t out, float *y);

/* ------------------------------------- XGBoost's JSON (rt_xgb_json.c) */

/* Reads of model.json / serving.json; every refusal starts "FILE: PATH.KEY:".
 * parse: the document (an object) into *out (cJSON_Delete it). member: obj's
 * KEY of cJSON type want (cJSON_True for a boolean) into *out, NULL when
 * absent or null and not required. strnum / strfloat: a number written as a
 * number or as a string ("5E-1"), strfloat read with strtof. numbers: a list
 * of numbers (booleans as 0 / 1): exactly n of them, or with got at most n
 * (*got of them). type: "a string", "a list", ... for messages. */
struct cJSON;
RT_WUR rt_status rt_xgb_json_parse(const char *file, const char *text, size_t len, struct cJSON **out,
                        rt_err *err);
/* parse_ubj: the same from XGBoost's UBJSON (model.ubj). */
RT_WUR rt_status rt_xgb_json_parse_ubj(const char *file, const void *data, size_t len, struct cJSON **out,
                            rt_err *err);
const char *rt_xgb_json_type(const struct cJSON *v);
RT_WUR rt_status rt_xgb_json_member(const char *file, const struct cJSON *obj, const char *path,
                         const char *key, int want, bool required, const struct cJSON **out,
                         rt_err *err);
RT_WUR rt_status rt_xgb_json_strnum(const char *file, const struct cJSON *obj, const char *path,
                         const char *key, bool required, double dflt, double *out, rt_err *err);
RT_WUR rt_status rt_xgb_json_strfloat(const char *file, const struct cJSON *obj, const char *path,
                           const char *key, float *out, rt_err *err);
RT_WUR rt_status rt_xgb_json_numbers(const char *file, const struct cJSON *obj, const char *path,
                          const char *key, bool required, size_t n, double *out, size_t *got,
                          rt_err *err);

/* ------------------------------------------ ONNX models (rt_onnx_*.c) */

/* Scratch matrix k of ws (n x width floats, kept for the next call), for a
 * forward pass that is not the DNN's (rt_onnx_run.c). NULL: out of memory. */
float *rt_workspace_scratch(rt_workspace *ws, size_t k, size_t n, size_t width);

/* The workspace behind rt_workspace (rt_workspace.c); rt_forward.c and the
 * executors fill its matrices. One stored activation matrix (n x width). */
typedef struct ws_mat {
    float *data;
    size_t cap;   /* floats allocated */
    size_t width;
} ws_mat;

struct rt_workspace {
    ws_mat *mats;    /* [n_mats]: 0 = DNN input, 1..H hidden, H+1 DNN logits */
    size_t n_mats;
    size_t mats_cap;
    size_t n;        /* batch size of the last call */
    size_t used;     /* matrices valid after the last call */
    const float *in; /* the last call's DNN input (f->dnn_input, not copied:
                        layer 0), or NULL (mats[0] then) */
    size_t in_width;
    float *bn;       /* batch normalization's scale and shift, 2 x units */
    size_t bn_cap;
};

/* Makes room for `count` matrices; the old ones are kept. RT_ERR_NOMEM. */
RT_WUR rt_status rt_workspace_reserve(rt_workspace *ws, size_t count);
/* Sizes matrix k (< the count reserved) to n x width, contents undefined.
 * RT_ERR_LIMIT when n x width floats overflow, RT_ERR_NOMEM. */
RT_WUR rt_status rt_workspace_mat_size(rt_workspace *ws, size_t k, size_t n, size_t width);

#define RT_ONNX_MAX_RANK 8

/* A value of an ONNX graph: a constant (initializer, Constant node), or a
 * batch value whose leading dimension is the batch (dims[0] unused). */
typedef struct rt_onnx_val {
    const char *name;                /* points into the ModelProto */
    uint32_t rank;
    int64_t dims[RT_ONNX_MAX_RANK];
    bool batch;
    size_t row;                      /* elements per instance (batch) or in all (constant) */
    float *cdata;                    /* a float constant's values (owned), else NULL */
    int64_t *idata;                  /* an integer constant's values (owned), else NULL */
    long alias;                      /* a batch value that is another's bytes, or -1 */
    long producer;                   /* the step that computes it, or -1 */
    /* ai.onnx.ml: a classifier's label output holds the class's index (as a
     * float) into names; a ZipMap's output is its input's scores keyed by
     * names. NULL for every other value. */
    char **names;                    /* [n_names] owned */
    size_t n_names;
    bool names_int;                  /* the labels are int64s (written as numbers) */
    bool zipmap;                     /* the value is a ZipMap's map */
    /* a tensor(string): each element is the index (as a float) of its text
     * in names, the value's vocabulary (a string graph input's: every text
     * its readers know; a LabelEncoder's: its values and default), or -1
     * for a text not among them; rt_onnx_str.c interns into names through
     * vslots (open addressing, index + 1, n_vslots a power of two) */
    bool strings;
    uint32_t *vslots;
    size_t n_vslots;
} rt_onnx_val;

typedef enum rt_onnx_op {
    RT_ONNX_DENSE,      /* Gemm, MatMul: rt_dense_rows */
    RT_ONNX_BINARY,     /* Add, Sub, Mul, Div with broadcasting */
    RT_ONNX_RELU, RT_ONNX_LEAKY, RT_ONNX_SIGMOID, RT_ONNX_TANH,
    RT_ONNX_SOFTMAX, RT_ONNX_LOGSOFTMAX,
    RT_ONNX_CONCAT,
    RT_ONNX_AFFINE,     /* BatchNormalization (inference): y = x s + t per channel */
    RT_ONNX_SCALER,     /* ai.onnx.ml Scaler: y = (x - w[c]) * b[c] per column */
    RT_ONNX_ALIAS,      /* Identity, Dropout, Flatten, Reshape, Squeeze, Unsqueeze, Cast, ZipMap */
    RT_ONNX_TREES,      /* ai.onnx.ml TreeEnsembleClassifier / TreeEnsembleRegressor (rt_onnx_ml.c) */
    RT_ONNX_LINCLS,     /* ai.onnx.ml LinearClassifier: a dense step, then its scores and label */
    RT_ONNX_NORMALIZER, /* ai.onnx.ml Normalizer: sub = 'M' (MAX), '1' (L1), '2' (L2) */
    RT_ONNX_IMPUTER,    /* ai.onnx.ml Imputer: x == alpha (or both NaN) -> w[c] */
    RT_ONNX_ONEHOT,     /* ai.onnx.ml OneHotEncoder of integer categories w[0..m) */
    RT_ONNX_LABELENC,   /* ai.onnx.ml LabelEncoder of numbers: sorted keys w[0..m) -> b[], else alpha */
} rt_onnx_op;

struct rt_onnx_trees; /* rt_onnx_ml.c */

/* One step of the plan, in an order where every input is computed first. */
typedef struct rt_onnx_step {
    rt_onnx_op op;
    int sub;                         /* BINARY: '+', '-', '*', '/' */
    size_t n_in;
    size_t in[RT_ONNX_MAX_INPUTS];   /* value indexes */
    size_t out;
    float alpha;                     /* LeakyRelu */
    size_t k, m;                     /* DENSE: x is k wide, y m wide */
    float *w, *b;                    /* DENSE: [k x m], [m]; AFFINE: s, t [channels] (owned) */
    uint32_t *map[2];                /* BINARY: per output element of a row, the input's offset */
    size_t outer, axis, inner;       /* SOFTMAX: per row outer x axis x inner; AFFINE: channels x inner */
    size_t out2;                     /* TREES (classifier), LINCLS: the label value; else SIZE_MAX */
    struct rt_onnx_trees *trees;     /* TREES (owned) */
    int post;                        /* LINCLS: post_transform (RT_ONNX_POST_*) */
    bool strict;                     /* ONEHOT: zeros = 0 (an unknown category is refused) */
    const char *node;                /* the node's name (into the ModelProto), or NULL */
} rt_onnx_step;

/* ai.onnx.ml's post_transform values */
enum { RT_ONNX_POST_NONE, RT_ONNX_POST_LOGISTIC, RT_ONNX_POST_SOFTMAX, RT_ONNX_POST_SOFTMAX_ZERO,
       RT_ONNX_POST_PROBIT };

/* Frees a tree ensemble of a plan step (NULL accepted). rt_onnx_ml.c */
void rt_onnx_trees_free(struct rt_onnx_trees *t);
/* Runs step s (TREES, LINCLS, NORMALIZER, IMPUTER, ONEHOT) for n rows:
 * x is its input (n x in_row), y its output (n x out_row), label the label
 * output (n floats) or NULL (and LABELENC). Each row from that row alone. RT_ERR_NOMEM
 * (scratch). rt_onnx_ml.c */
RT_WUR rt_status rt_onnx_ml_run(const rt_onnx_step *s, size_t n, const float *x, size_t in_row,
                                float *y, size_t out_row, float *label);

/* A loaded and checked ONNX graph, ready to run for any batch. */
typedef struct rt_onnx {
    struct Onnx__ModelProto *proto; /* names point into it */
    size_t n_vals;
    rt_onnx_val *vals;
    size_t n_steps;
    rt_onnx_step *steps;
    size_t n_inputs;                 /* graph inputs (not initializers) */
    size_t *inputs;                  /* value indexes */
    size_t n_outputs;
    size_t *outputs;                 /* value indexes */
    size_t out_width;                /* the outputs' widths summed: the logits */
    /* where each input comes from: fcols[i] lists the feature columns whose values,
       in order, make up input i's row (n_fcols[i] of them; set by rt_onnx_bind) */
    size_t *n_fcols;
    size_t **fcols;
    float *zeros;                    /* the ModelDef's placeholder weights */
    size_t n_zeros;
    int64_t opset;
    int64_t ml_opset;                /* ai.onnx.ml's version, or -1 */
    /* a classifier: the graph's one output is a softmax over the last axis of
     * [N, C], C >= 2; served by a classifier head whose logits are the
     * softmax's input (C >= 3) or, binary, z1 - z0; NO_VALUE otherwise */
    size_t classifier_logits;        /* value index of the softmax's input */
    size_t n_classes;                /* C, or 0 */
    /* an ai.onnx.ml classifier (TreeEnsembleClassifier, LinearClassifier)
     * among the outputs: served by a classifier head whose probabilities
     * are the scores as computed (ml_probs), class_ids their argmax, the
     * class names its labels; ml_scores is the scores' value, ml_label the
     * label's (SIZE_MAX: none) */
    bool ml_probs;
    size_t ml_scores, ml_label;
} rt_onnx;

/* Reads model.onnx (data, len bytes) into a checked plan; refusals name
 * file, node and field. */
RT_WUR rt_status rt_onnx_read(const char *file, const void *data, size_t len, rt_onnx **out,
                              rt_err *err);
void rt_onnx_free(rt_onnx *o);
/* The ModelDef serving o: one float input per graph input (a list of its
 * k numbers), or the named features serving.json's "inputs" gives it; a
 * regressor whose predictions are the graph's outputs side by side. */
RT_WUR rt_status rt_onnx_to_modeldef(rt_onnx *o, const char *serving_json, size_t serving_len,
                                     Predictd__ModelDef **out, rt_err *err);
/* The placeholder weights rt_graph_build asks for (zeros: unused). */
const float *rt_onnx_lookup(void *ctx, const char *name, uint64_t count, rt_err *err);
/* Binds o to the graph built from its ModelDef (the columns of each input). */
RT_WUR rt_status rt_onnx_bind(rt_onnx *o, rt_graph *g, rt_err *err);
/* logits (f->n x o->out_width) = the graph's outputs for the features f. */
RT_WUR rt_status rt_onnx_forward(const rt_onnx *o, const rt_features *f, rt_workspace *ws,
                                 float *logits, rt_err *err);
/* Copies each graph input's rows from the feature columns f (its fcols,
 * side by side; a string input each column's id in its list of known
 * strings, -1 for none) into ptr[input] (f->n x row). RT_ERR_INVALID when
 * the columns do not fill the input's row. */
RT_WUR rt_status rt_onnx_run_inputs(const rt_onnx *o, const rt_features *f, float *const *ptr,
                                    rt_err *err);
/* Runs o's steps for n rows over ptr (one pointer per value: a batch
 * value's n x row floats, the graph inputs filled, a constant's cdata, an
 * alias its target's). RT_ERR_NOMEM (an ai.onnx.ml step's scratch);
 * RT_ERR_INVALID naming the instance when a OneHotEncoder of zeros = 0
 * meets an unknown category. */
RT_WUR rt_status rt_onnx_run_steps(const rt_onnx *o, size_t n, float *const *ptr, rt_err *err);
/* The logits of n rows rt_onnx_run_steps computed in ptr, as the head reads
 * them (n x logits width): an ai.onnx.ml classifier's scores, a softmax
 * classifier's input (binary: z1 - z0), else the outputs side by side. */
void rt_onnx_run_logits(const rt_onnx *o, size_t n, float *const *ptr, float *logits);
/* The label of each of the n instances rt_onnx_forward last ran in ws (the
 * class's index, as a float), or NULL when o has no classifier label. */
const float *rt_onnx_run_labels(const rt_onnx *o, rt_workspace *ws, size_t n);

#endif /* PREDICTD_RT_MODEL_INTERNAL_H */
