/*
 * trn_internal.h — structures shared between the trainer's own files
 * (model, backprop, optimizers, checkpoints). Other modules use trn.h.
 */
#ifndef PREDICTD_TRN_INTERNAL_H
#define PREDICTD_TRN_INTERNAL_H

/* The build defines PREDICTD_MODULE_<folder> for each source (Makefile). */
#if !defined(PREDICTD_MODULE_trainer) && !defined(PREDICTD_MODULE_tests) && \
    !defined(PREDICTD_MODULE_bench)
#error "trn_internal.h is trainer's own; other modules include trn.h (docs/design.md)"
#endif

#include "trn.h"

typedef struct trn_dist trn_dist;

/* What a parameter tensor is in the graph. */
typedef enum {
    TP_LINEAR_W = 0,  /* linear weights of one feature column */
    TP_LINEAR_BIAS,
    TP_EMBEDDING,
    TP_KERNEL,
    TP_BIAS,
    TP_BN_GAMMA,      /* batch normalization's scale (starts at 1) */
    TP_BN_BETA,       /* and offset (0): trained by the DNN optimizer */
    TP_BN_MOVING,     /* moving mean (0) / variance (1): moved by the training
                         forward pass, never by an optimizer (no slots) */
} tp_kind;

/* One parameter tensor with its gradient and optimizer slots. */
typedef struct tparam {
    const char *name;   /* points into the ModelDef */
    tp_kind kind;
    uint64_t count, rows, cols;
    float *data;
    float *grad;        /* dense buffer, zero between steps */
    float *slot[TRN_OPT_SLOTS_MAX]; /* Ftrl: accum, linear; Adagrad: accum; Adam: m, v;
                                       RMSProp: rms, momentum (, mg when centered);
                                       ProximalAdagrad: accum */
    size_t n_slots;
    int sparse;         /* updated by touched rows */
    int dnn;            /* DNN optimizer */
    uint8_t *mark;      /* [rows] sparse: row touched this step */
    uint32_t *touched;  /* [rows] sparse: touched rows */
    size_t n_touched;
} tparam;

typedef struct lin_col lin_col;
typedef struct emb_col emb_col;

/*
 * One feature-column kind's gradients, as one row of trn_fc.c's table (the
 * trainer's side of runtime/model/rt_fc.c's kinds): a new kind is its row there
 * and, when it needs new arithmetic, its functions in trn_backprop.c.
 *   linear   d loss / d its linear weights (NULL: the kind is not in the
 *            linear part), with lin->src set to `via_source` columns' source
 *   table    d loss / d its embedding table, from the gradient of its DNN
 *            input slice (NULL: no table)
 */
typedef struct trn_fc_grad {
    Predictd__ColumnType type;
    int via_source; /* the linear gradient reads its categorical_column's ids */
    rt_status (*linear)(trn_model *m, const lin_col *lc, size_t n, rt_err *err);
    rt_status (*table)(trn_model *m, const emb_col *ec, size_t n, rt_err *err);
} trn_fc_grad;

/* The gradient row of kind t; NULL when the trainer does not know it. */
const trn_fc_grad *trn_fc_grad_of(Predictd__ColumnType t);

/* The gradient functions the rows point at (trn_backprop.c). */
rt_status trn_grad_linear_ids(trn_model *m, const lin_col *lc, size_t n, rt_err *err);
rt_status trn_grad_linear_src_ids(trn_model *m, const lin_col *lc, size_t n, rt_err *err);
rt_status trn_grad_linear_dense(trn_model *m, const lin_col *lc, size_t n, rt_err *err);
rt_status trn_grad_table(trn_model *m, const emb_col *ec, size_t n, rt_err *err);

/* A linear column and its gradient function (from its kind's row). */
struct lin_col {
    size_t fc;     /* feature column index */
    size_t param;  /* weight tensor */
    size_t src;    /* via_source kinds: the source feature column */
    const trn_fc_grad *grad;
};

/* An embedding column (one table may serve several: shared tables). */
struct emb_col {
    size_t fc;     /* the embedding feature column */
    size_t src;    /* its categorical column */
    size_t param;  /* table [buckets x dim] */
    size_t dim;
    Predictd__Combiner combiner;
    const trn_fc_grad *grad;
};

typedef struct dnn_layer {
    size_t in, out;
    size_t kernel, bias; /* params */
    Predictd__Activation act; /* after this layer (the last one: linear) */
    /* batch normalization after the activation and dropout (bn_gamma < 0:
     * none): params, epsilon, momentum */
    long bn_gamma, bn_beta, bn_mean, bn_var;
    float bn_eps, bn_momentum;
} dnn_layer;

struct trn_model {
    const Predictd__ModelDef *def;
    Predictd__TreeEnsemble *trees; /* BoostedTrees: def's ensemble (set by the run,
                                      checkpointed and broadcast with the model) */
    char *assets_dir;     /* for graph rebuilds */
    trn_optimizer linear_opt, dnn_opt;
    rt_tensor_spec *specs;
    size_t n_params;
    tparam *p;
    rt_graph *g;
    size_t ld;            /* logits dimension */
    Predictd__HeadType head;
    rt_loss loss;         /* the head's (squared but for a custom graph's regression) */
    int64_t step;
    int loss_sum;         /* loss_reduction SUM: batch loss = sum, not mean */
    size_t n_heads;       /* several heads (MultiHead; 0 for one): each its columns */
    size_t label_w;       /* several heads: label values per row (a multi-label head n_classes) */
    rt_head_slice *heads; /* of the logits and labels, loss and loss_weight */
    size_t head_weights;  /* several heads with a weight_column: n_heads weights a
                             row (head k's at k), else 0 */
    size_t grad_denom;    /* > 0: d loss / d logits are scaled by 1/grad_denom
                             instead of 1/n (1: sums, for a distributed step) */
    trn_dist *dist;       /* distributed run (not owned); NULL = one process */

    size_t n_lin;
    lin_col *lin;
    long lin_bias;        /* param or -1 */
    size_t n_emb;
    emb_col *emb;
    size_t n_layers;
    dnn_layer *layers;
    size_t dnn_dim;

    /* scratch */
    rt_features f;
    rt_workspace *ws;
    float *logits, *dlogits;
    size_t cap_n;         /* rows the logits buffers hold */
    float *d0, *d1;       /* DNN deltas, n x max width */
    size_t cap_d;
    float **emb_grad_in;  /* [n_emb] n x dim: d loss / d embedding values */
    size_t cap_emb;       /* rows */

    /* dropout and batch normalization (training only): the DNN is
     * recomputed with masks and batch statistics */
    double dropout;       /* rate; 0 = off */
    int batch_norm;       /* some hidden layer has batch normalization */
    trn_rng drop_rng;
    int drop_active;      /* the last gradients used the training forward */
    int drop_reuse;       /* tests: keep the last masks */
    float **dx;           /* [n_layers] input of layer l (l = 0: dnn_input) */
    float **dy;           /* [n_layers] hidden layer l output before the mask */
    float **dmask;        /* [n_layers] 0 or 1/keep (dropout) */
    float **bn_xhat;      /* [n_layers] normalized output (batch normalization) */
    float **bn_istd;      /* [n_layers] 1 / sqrt(batch variance + epsilon) per unit */
    size_t cap_drop;      /* rows */

    /* custom model graph (graph.nodes, trn_nodes.c): per node its
     * parameters, the training forward's outputs (ny: its own buffer nbuf
     * or the serving workspace's for input, embedding and linear nodes), a
     * dense node's pre-activation, dropout's mask, and backprop's deltas */
    size_t n_nodes;
    struct trn_node_par *np;
    const float **ny, **npv;  /* outputs, dense pre-activations (views) */
    float **nbuf, **npre, **nmask, **nd;
    int n_dropout;            /* dropout and batch_norm nodes: else the serving
                                 forward's values are the training ones (reused) */
    size_t cap_nodes;     /* rows */
    size_t *sum_node;     /* [graph->n_summaries] node index of each */
};

/* A custom graph node's parameters (indexes into trn_model.p, -1: none). */
typedef struct trn_node_par {
    long kernel, bias;
    long gamma, beta, mean, var; /* batch_norm */
    float eps, momentum;
    size_t readers;       /* nodes that read this one (an input read twice: 2) */
    unsigned char dset;   /* backprop: its delta written this step */
    float l1, l2;         /* the dense kernel's regularization */
} trn_node_par;

/* A reader over files with f's CSV schema (trn_input.c): batch rows a batch,
 * shuffle buffer, epochs, seed, bad-row policy, header lines per file,
 * shards > 0: this reader's share (shard of shards) of the files or rows, and
 * cache_bytes (trn_reader_params): the first epoch's rows kept for the others,
 * whose replayed rows then come without fields until trn_reader_fill_fields
 * (defer_replay_fields: trn_cache_fill calls it when it feeds them);
 * fmt: train.input_format (CSV or TFRecord files, AUTO: each by content). */
rt_status trn_open_reader(const trn_feeder *f, char *const *files, size_t n_files, size_t batch,
                          size_t shuffle, int64_t epochs, uint64_t seed, trn_bad_row_policy bad,
                          size_t skip_header, size_t shards, size_t shard, uint64_t cache_bytes,
                          rt_input_format fmt, trn_reader **r, rt_err *err);

/* Rebuilds m's graph from its ModelDef (a BoostedTrees model's after trees
 * were added: the runtime compiles them into the graph). */
rt_status trn_model_rebuild_graph(trn_model *m, rt_err *err);

/* Optimizer update of elements [lo, hi) of p (trn_optim.c). */
void trn_optim_update(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi,
                      int64_t step);
/*
 * tf.clip_by_global_norm's factor: clip_norm / max(global_norm, clip_norm)
 * (1 when the norm is within clip_norm). Pure.
 */
double trn_optim_clip_scale(double global_norm, double clip_norm);
/*
 * Clips the gradients of the tensors of ps[0..n_params) that optimizer dnn
 * (p->dnn == dnn; the moving statistics are no one's) trains by their global
 * norm, as tf.clip_by_global_norm: every element times
 * trn_optim_clip_scale(norm, clip_norm), sparse tensors over their touched
 * rows. Untouched (bit for bit) when the norm is <= clip_norm. Returns the
 * global norm before clipping (sqrt of the sum of squares, in double).
 */
double trn_optim_clip(tparam *ps, size_t n_params, int dnn, double clip_norm);
/* The optimizer's spec name ("Ftrl", "RMSProp", ...); static storage. */
const char *trn_optim_name(trn_opt_type t);
/* Number of slots the optimizer keeps and their initial values. */
size_t trn_optim_slots(const trn_optimizer *o, float init[TRN_OPT_SLOTS_MAX]);

/* Backprop of dlogits through the model into the gradient buffers, after a
 * forward pass over m->f (trn_backprop.c). */
rt_status trn_backprop(trn_model *m, size_t n, rt_err *err);

/* A batch normalization's parameters and moving statistics. */
typedef struct trn_bn {
    const float *gamma, *beta;
    float *mean, *var;   /* moving statistics, moved when trn_bn_train updates */
    float eps, momentum;
} trn_bn;
/* Batch normalization in training (trn_batchnorm.c): each of the w columns of
 * x (n x w) normalized with its batch mean and variance (in double) into xh,
 * y = gamma xh + beta (y may be x), 1/std into istd; the moving statistics
 * move when update. The canned DNN's layers and the custom graph's nodes
 * both run it, so their bits agree. */
void trn_bn_train(const trn_bn *b, const float *x, float *y, float *xh, float *istd, size_t n,
                  size_t w, int update);
/* Backprop through a batch normalization trained with the batch's statistics
 * (trn_batchnorm.c): dx = gamma istd / n (n dy - sum dy - xhat sum dy xhat)
 * for the n x w delta dy, with xh and istd as trn_bn_train kept them;
 * gamma's and beta's gradients (m->p[gamma], m->p[beta]) added to; dx
 * assigned when assign, else added to (dx may be dy; NULL: the parameters'
 * gradients only). The canned DNN's layers and the graph's nodes both run it. */
void trn_bn_backward(trn_model *m, long gamma, long beta, const float *dy, const float *xh,
                     const float *istd, float *dx, bool assign, size_t n, size_t w);

/* Replaces the DNN part of m->logits by the training forward pass: dropout
 * masks (new ones unless m->drop_reuse) and batch normalization with the
 * batch's statistics, keeping the activations for backprop; a no-op for a
 * DNN with neither. update_moving: also move the batch normalization's
 * moving statistics toward the batch's (a training step; not for tests'
 * finite differences). */
rt_status trn_dropout_forward(trn_model *m, size_t n, int update_moving, rt_err *err);
void trn_dropout_free(trn_model *m);

/* Loss of a batch with the training-time forward pass (dropout with the
 * current masks when m->drop_reuse); for tests. */
rt_status trn_model_train_loss(trn_model *m, const rt_batch *b, const float *labels,
                               const float *weights, double *loss, rt_err *err);

/* Zeroes the gradient buffers (touched rows only for sparse tensors). */
void trn_model_clear_grads(trn_model *m);

/* CRC-32C of the step, every tensor and its optimizer slots. */
uint32_t trn_model_checksum(const trn_model *m);

/*
 * The progress line's ETA in seconds (-1 unknown), trn_progress.c: with max_steps
 * from the steps per second of this run (steps step0..step in elapsed s);
 * otherwise from the reader's position in the epochs, efrac (0..1), of which
 * only efrac - efrac0 was read by this run (efrac0 > 0 after a resume).
 */
double trn_eta(int64_t step0, int64_t step, int64_t max_steps, double efrac0, double efrac,
               double elapsed);

/* ------------------------------------------- checkpoint contents (trn_ckpt.c) */

/* One tensor of a checkpoint read whole (weights only; data unaligned). */
typedef struct trn_ckpt_tensor {
    const char *name;           /* not NUL-terminated */
    size_t name_len;
    uint64_t count;
    const unsigned char *data;  /* count floats, little-endian as written */
} trn_ckpt_tensor;

typedef struct trn_ckpt_view {
    char *img;
    int64_t step;
    trn_ckpt_tensor *t;
    size_t n;
    size_t trees_bytes; /* > 0: a BoostedTrees model's checkpoint (its packed trees) */
    char path[4096];
} trn_ckpt_view;

/* Reads job_dir's newest checkpoint that passes its CRC and format checks,
 * for any model. RT_ERR_NOTFOUND when there is none, RT_ERR_FORMAT naming
 * each file and why when none passes. Free with trn_ckpt_view_free. */
rt_status trn_ckpt_view_newest(const char *job_dir, trn_ckpt_view *v, rt_err *err);
void trn_ckpt_view_free(trn_ckpt_view *v);

/* ------------------------------------------------ warm start (trn_warm.c) */

/*
 * Initializes m's tensors that c->warm.vars selects from c->warm.from (an
 * export directory, or a job dir's newest checkpoint), by name: same-sized
 * tensors copied, tensors of vocabulary columns whose vocabulary changed
 * remapped row by row (words in both keep their rows, new words keep m's
 * fresh initialization). Optimizer slots and the step are left alone.
 * Appends a one-line summary to log. Errors name the key and the tensor.
 */
rt_status trn_warm_start_apply(trn_model *m, const trn_config *c, rt_buf *log, rt_err *err);

/* ------------------------------------------- early stopping (trn_hooks.c) */

/* The early-stopping hooks of c ("train.hooks") and the evaluations they
 * judge. One per run, used by its thread only. */
typedef struct trn_early_stop trn_early_stop;
/* *out = NULL when c has no hooks; fails when it has some but no evaluation
 * files. Reads earlier runs' evaluations from JOB_DIR/eval/metrics.jsonl.
 * c must outlive *out. */
rt_status trn_early_stop_new(const trn_config *c, trn_early_stop **out, rt_err *err);
void trn_early_stop_free(trn_early_stop *e);
/* Adds an evaluation at step; a hook's metric not among ml is an error
 * naming train.hooks[i].metric_name and the metrics there are. NULL e: no-op. */
rt_status trn_early_stop_record(trn_early_stop *e, const rt_metric_list *ml, int64_t step,
                                rt_err *err);
/* 1 when a hook timed by run_every_secs is due at now (the chief's clock). */
int trn_early_stop_secs_due(const trn_early_stop *e, double now);
/* After the update that reached step: runs the hooks whose timer triggers
 * (secs_due: trn_early_stop_secs_due's answer for this step). -1 none ran,
 * 0 ran and training goes on, 1 a hook asks to stop (reason filled). */
int trn_early_stop_check(trn_early_stop *e, int64_t step, int secs_due, double now,
                         char *reason, size_t len);
/* Appends {"global_step": step, "early_stopping": reason} to
 * JOB_DIR/train/metrics.jsonl (fsynced). No job dir: nothing. */
rt_status trn_early_stop_report(const trn_early_stop *e, int64_t step, const char *reason,
                                rt_err *err);

/* ------------------------------------------- distributed steps (trn_dist.c) */

/* Exists only for two ranks or more; every function accepts NULL (one
 * process: nothing to do). Collective: every rank calls in the same order. */
rt_status trn_dist_new(const trn_comm *c, trn_dist **out, rt_err *err);
void trn_dist_free(trn_dist *d);
int trn_dist_rank(const trn_dist *d);
int trn_dist_size(const trn_dist *d);
/* This rank's rows [lo, hi) of n (contiguous, in rank order). */
void trn_dist_slice(const trn_dist *d, size_t n, size_t *lo, size_t *hi);
/* The global step the comm's stall messages name (trn_comm.set_step);
 * trn_dist_step sets it itself. */
void trn_dist_at_step(trn_dist *d, int64_t step);
/* v[0..n) summed over the ranks. */
rt_status trn_dist_sum(trn_dist *d, double *v, size_t n, rt_err *err);
/* Rank 0's len bytes at buf onto every rank. */
rt_status trn_dist_bcast(trn_dist *d, void *buf, size_t len, rt_err *err);
/* v[0..n) the element-wise maximum over the ranks. */
rt_status trn_dist_max(trn_dist *d, double *v, size_t n, rt_err *err);
/*
 * One distributed step's communication, after this rank's gradients were
 * computed with grad_denom = 1 (sums over its n_local examples): one
 * allreduce carries the dense gradients, the loss, the example counts, the
 * caller's flags (each rank's n_flags values, summed on return) and the
 * sparse message lengths; one allgatherv the touched rows, added in rank
 * order. Leaves every rank's buffers holding the gradient of the mean over
 * the n_global examples of all ranks (the sum for loss_reduction SUM) and
 * *loss (this rank's mean over n_local) the global mean. When *n_global is 0
 * nothing was exchanged and nothing is to be applied.
 */
rt_status trn_dist_step(trn_dist *d, trn_model *m, double *loss, size_t n_local,
                        float *flags, size_t n_flags, size_t *n_global, rt_err *err);
/* Rank 0's step, parameters and optimizer slots onto every rank. */
rt_status trn_dist_bcast_model(trn_dist *d, trn_model *m, rt_err *err);
/* Fails (naming the rank) unless every replica has rank 0's checksum. */
rt_status trn_dist_check_replicas(trn_dist *d, const trn_model *m, rt_err *err);
/* Every rank's len bytes, in rank order, into *recv on rank 0; (*lens)[r]
 * is rank r's length (both owned by d, valid until the next call). Not for
 * NULL d. */
rt_status trn_dist_gather(trn_dist *d, const void *send, size_t len, void **recv,
                          const size_t **lens, rt_err *err);
/* Where a distributed run's time went, this rank's view. A step's time is
 * measured from the end of one gradient exchange to the end of the next:
 * compute (reading, the forward and backward passes, applying the update)
 * then the exchange, split into waiting for the slowest rank (its compute
 * time minus this rank's, sent along with the gradients) and the exchange
 * proper. */
typedef struct trn_dist_timing {
    double comm_s;       /* every collective (evaluation, checkpoints too) */
    uint64_t rounds;     /* gradient exchanges */
    uint64_t steps;      /* steps measured whole (all but the first) */
    double compute_s;    /* this rank's compute */
    double slowest_s;    /* the slowest rank's compute, step by step */
    double wait_s;       /* waiting for the slowest rank */
    double exchange_s;   /* the exchange itself (in_collective - wait) */
} trn_dist_timing;
/* Fills *t (zeros for NULL d). */
void trn_dist_stats(const trn_dist *d, trn_dist_timing *t);

/* ------------------------------------------ boosted trees (trn_gbdt_*.c) */

/* How the trees read an input's bins. */
typedef enum {
    TG_NUMERIC = 0,     /* quantile bins of a numeric column: value <= edge */
    TG_ORDINAL = 1,     /* bucketized ids: id <= threshold */
    TG_CATEGORICAL = 2, /* vocabulary / hash / identity / indicator ids: sets */
} tg_kind;

/* The binned training set of this process (its shard under MPI). Input j
 * of row i is bins[j][i] in [0, n_bins[j]); the last bin, n_bins[j] - 1,
 * holds the missing values (NaN, no id, an id out of range). A numeric
 * input's value bins are edges[j][0..n_bins[j] - 1) (TreeInput.bin_upper);
 * a categorical or ordinal input's value bins are its ids. */
typedef struct tg_data {
    size_t n_rows, n_inputs;
    tg_kind *kind;
    uint32_t *n_bins;
    float **edges;       /* numeric inputs; NULL for the others */
    uint16_t **bins;
} tg_data;

/* At most this many bins of values per input (and categories per input). */
#define TG_MAX_BINS 255
#define TG_MAX_CATEGORIES 65534
/* At most this many logits (classes of a multi-class head). */
#define TG_MAX_LD 1024

/*
 * The bin edges of a numeric input from its non-missing values v[0..n)
 * (sorted in place): every distinct value when there are at most
 * q = min(255, round(1 / epsilon)) of them, else the values at the q
 * quantile ranks ceil(k n / q) - 1, k = 1..q, without repeats. The last edge
 * is the largest value. *edges is malloc'd (NULL and 0 for n = 0).
 */
rt_status trn_gbdt_edges(float *v, size_t n, double epsilon, float **edges, size_t *n_edges,
                         rt_err *err);
/* The bin of value x for edges e[0..n): the first edge >= x; NaN and x above
 * the last edge are missing (n). */
uint32_t trn_gbdt_bin(const float *e, size_t n, float x);

/* The split search's view of a histogram and the regularization. A node's
 * histogram holds, for input j from off[j], n_bins[j] slots of stride =
 * 2 ld + 1 doubles: the gradient sums [ld], hessian sums [ld], the count.
 * The sums are integers (quantized gradients, so sums are exact and their
 * order does not matter); gk and hk turn them into the mean gradient and
 * hessian over the n examples of the layer (TF averages over the batch). */
typedef struct tg_ctx {
    size_t ld, n_inputs, stride, hist_len;
    const tg_kind *kind;
    const uint32_t *n_bins;
    const size_t *off;
    double gk, hk;
    const trn_gbdt_params *p;
} tg_ctx;

/* A candidate split of a node. */
typedef struct tg_split {
    long input;          /* -1: no valid split */
    uint32_t threshold;  /* numeric / ordinal: bins <= threshold go left */
    uint8_t *left;       /* categorical: [n_bins - 1] 1 = goes left (malloc'd,
                            owned by the split; free with tg_split_clear) */
    int default_left;    /* missing values go left */
    double gain;
    double count_left, count_right;
} tg_split;

void tg_split_clear(tg_split *s);

/* The score of a node's sums (histogram units): sum over the logits of
 * T(G)^2 / (H + l2), T the L1 soft threshold max(|G| - l1, 0). */
double trn_gbdt_score(const tg_ctx *c, const double *g, const double *h);
/* The leaf values of sums g, h: learning_rate * -T(G) / (H + l2) each. */
void trn_gbdt_leaf(const tg_ctx *c, const double *g, const double *h, float *out);
/* The node's totals (stride doubles) from its histogram. */
void trn_gbdt_totals(const tg_ctx *c, const double *hist, double *tot);
/* The best split of a node with histogram hist and totals tot (the best gain
 * wins; ties go to the lower input, then the lower threshold or the first
 * prefix, then missing-right). Candidates leave both children non-empty and
 * each child's mean hessian at least min_node_weight. */
rt_status trn_gbdt_best_split(const tg_ctx *c, const double *hist, const double *tot,
                              tg_split *best, rt_err *err);

/* One boosting run over a binned data set (trn_gbdt_boost.c). */
typedef struct tg_booster tg_booster;

/*
 * A booster for d (not owned; must outlive it) with labels[n_rows *
 * label_dim] (copied): head type decides the loss (binary: logistic,
 * multi-class: softmax with one leaf vector of ld values a tree, diagonal
 * hessian; regression: squared error / 2). dist (may be NULL) sums the
 * histograms and counts across the ranks. ens (not owned; must outlive b)
 * receives the bias and the trees: without trees it gets a bias of zeros,
 * or the label mean's logits with center_bias; with trees (a checkpoint's)
 * they are checked against d and walked over its bins to give the training
 * logits, so the run continues exactly as the one that wrote them
 * (RT_ERR_FORMAT when they do not fit).
 */
rt_status trn_gbdt_new(const tg_data *d, const float *labels, Predictd__HeadType head,
                       size_t ld, const trn_gbdt_params *p, trn_dist *dist,
                       Predictd__TreeEnsemble *ens, tg_booster **out, rt_err *err);
void trn_gbdt_free(tg_booster *b);
/* Grows one more tree and appends it to the ensemble and the training
 * logits. */
rt_status trn_gbdt_step(tg_booster *b, rt_err *err);
/*
 * Reads the training files (c->train_files, one pass, unshuffled; under MPI
 * this rank's shard as train.shard_policy says) through g's feeder and
 * transform into a binned data set for ens's inputs: numeric inputs by
 * quantile edges of every rank's values (stored in ens's bin_upper; a
 * checkpoint's bin_upper must equal them), the others by their ids (a
 * missing or out-of-range id in its own bin). *labels receives n_rows x
 * label dim labels. Collective under MPI. Free with trn_gbdt_data_free.
 */
struct trn_stats;
rt_status trn_gbdt_load(const rt_graph *g, Predictd__TreeEnsemble *ens, const trn_config *c,
                        trn_dist *dist, struct trn_stats *stats, tg_data **out, float **labels,
                        rt_err *err);
void trn_gbdt_data_free(tg_data *d);

/* The training logits (n_rows x ld) and the mean training loss. */
const float *trn_gbdt_logits(const tg_booster *b);
double trn_gbdt_train_loss(const tg_booster *b);
/* TF's ensemble/num_attempted_layers for the trees of e grown to at most
 * max_depth: a tree of depth d attempted d + 1 layers (the last found no
 * split), or max_depth when it reached it. */
int64_t trn_gbdt_attempted_layers(const Predictd__TreeEnsemble *e, int64_t max_depth);
/* The leaf row i of d reaches in tree t of e, walking the bins (numeric:
 * edges[bin] <= threshold). */
uint32_t trn_gbdt_walk(const Predictd__TreeEnsemble *e, const Predictd__Tree *t,
                       const tg_data *d, size_t i);

/* ------------------------------------------ summaries (trn_events.c) */

/* Appends data to DIR/NAME (mkdir DIR) with one write (and an fsync when
 * sync); a failed write is cut off again and is RT_ERR_IO
 * "DIR/NAME: what: reason". */
rt_status trn_append_file(const char *dir, const char *name, const void *data, size_t len,
                          int sync, const char *what, rt_err *err);

/* TensorBoard event files of one run (a new file per run, as TF writes). */
typedef struct trn_summary trn_summary;

/* Starts JOB_DIR/events.out.tfevents.<secs>.<host> (TFRecords of
 * tensorflow.Event, first file_version "brain.Event:2"); step is the global
 * step the run starts at (for global_step/sec). Not thread-safe. */
rt_status trn_summary_open(const char *job_dir, int64_t step, trn_summary **out, rt_err *err);
/* A summary point at m's global step: `loss` (of the last batch, `rows`
 * rows on this process) and `global_step/sec` (since the last point), and
 * per hidden layer TF's dnn/hiddenlayer_N/fraction_of_zero_values and
 * .../activation (a histogram) of that batch, and the same pair as
 * NODE/fraction_of_zero_values and NODE/activation for every node of a
 * custom graph's summaries, to the event file; step,
 * loss, global_step/sec, examples/sec (from `examples`, the run's running
 * count) and wall time as a line of JOB_DIR/train/metrics.jsonl. */
rt_status trn_summary_train(trn_summary *s, const trn_model *m, size_t rows, double loss,
                            uint64_t examples, rt_err *err);
/* A summary point at step as trn_summary_train writes it (loss,
 * global_step/sec; examples/sec and wall time in the JSON line) with the n
 * scalars tags[i] = values[i] instead of a DNN's layers and learning rates,
 * in the event and in the JSON line: BoostedTrees' ensemble/num_trees, ... */
rt_status trn_summary_scalars(trn_summary *s, int64_t step, double loss, uint64_t examples,
                              const char *const *tags, const double *values, size_t n,
                              rt_err *err);
/* Every metric but global_step at step to JOB_DIR/eval/events.out.tfevents.*
 * (created at the first evaluation of the run). */
rt_status trn_summary_eval(trn_summary *s, const rt_metric_list *ml, int64_t step,
                           rt_err *err);
/* Syncs and closes the files; NULL is a no-op. */
void trn_summary_close(trn_summary *s);

/* ------------------------------------ custom graph nodes (trn_nodes.c) */

/* One node's tensors for trn_node_backward (n instances): x[k] its inputs
 * (n x in_width[k]), pre a dense node's value before the activation, y its
 * output, dy d loss / d y; the gradients are added to dx[k] (NULL or a NULL
 * entry: not wanted), dkernel / dbias (dense), dgamma / dbeta (batch_norm).
 * mask: dropout's training mask (NULL: the identity). */
typedef struct trn_node_io {
    const float *const *x;
    const float *pre, *y, *dy, *mask;
    float *const *dx;
    unsigned char *const *dx_set; /* NULL, or per input the flag of its node's
                                     delta: 0 = not written yet (assign) */
    float *dpre;        /* dense: receives d loss / d pre-activation (n x units;
                           NULL: a buffer of its own for the time of the call);
                           may be dy's buffer (computed in place, dy overwritten) */
    float *dkernel, *dbias, *dgamma, *dbeta;
} trn_node_io;

/* d (cnt values of d loss / d act(x)) *= act'(x), from the pre-activation
 * x and the output y, for every activation rt_node_activate computes. */
void trn_act_grad(Predictd__Activation act, float alpha, const float *x, const float *y, float *d,
                  size_t cnt);
/* Dropout's training mask: each of cnt values 0 with probability rate, else
 * 1 / (1 - rate) (TensorFlow's inverted dropout); rate in [0, 1). */
void trn_dropout_mask(rt_rng *r, float rate, float *mask, size_t cnt);
/* y = x mask, element by element. */
void trn_dropout_apply(const float *mask, const float *x, float *y, size_t cnt);
/* g[j] += the sum over the n rows of d (n x w) of d[i][j], row after row:
 * the plain loop's order of additions per element, vectorized over j (a
 * bias's gradient over a batch). */
void trn_node_add_rows(const float *restrict d, size_t n, size_t w, float *restrict g);
/* Backprop through op (checked by rt_node_check) for n instances: adds the
 * gradients of io (see trn_node_io). RT_ERR_NOMEM, or RT_ERR_UNSUPPORTED for
 * a kind rt_node_forward does not compute. */
RT_WUR rt_status trn_node_backward(const rt_node_op *op, const trn_node_io *io, size_t n,
                                   rt_err *err);
/* The custom graph's part of trn_model_new (m->def->graph->n_nodes > 0):
 * each node's tensors given their role (after the linear part's and the
 * embeddings'); RT_ERR_UNSUPPORTED for what is not trained yet. */
RT_WUR rt_status trn_nodes_classify(trn_model *m, rt_err *err);
/* Initializes the nodes' tensors other than glorot_uniform kernels and zero
 * biases (init_params does those): the spec's kernel_initializer and
 * bias_initializer, from a stream of its own (seed). */
void trn_nodes_init(trn_model *m, uint64_t seed);
/* The training forward of a custom graph after rt_forward (the serving
 * forward) over the same n instances: dropout with fresh masks (kept with
 * m->drop_reuse), batch_norm with the batch's statistics (the moving ones
 * moved when update), m->logits replaced by the head node's output. */
RT_WUR rt_status trn_nodes_forward(trn_model *m, size_t n, int update, rt_err *err);
/* Backprop through the nodes from m->dlogits (n x ld): the dense nodes'
 * gradients (with their L1 / L2 terms), the embedding slices' into
 * m->emb_grad_in (zeroed by the caller), and the linear node's delta left
 * in m->dlogits for the linear part's backprop (zeros without one). */
RT_WUR rt_status trn_nodes_backprop(trn_model *m, size_t n, rt_err *err);
/* The dense kernels' regularization, sum of l1 |w| + l2 w^2 (Keras's
 * kernel_regularizer), added to the training loss (not the evaluation's). */
double trn_nodes_reg_loss(const trn_model *m);
/* Graph.summaries[i]'s node (i < m->def->graph->n_summaries): its name
 * and its output of the last training forward, *width values per row of
 * that batch (after dropout's mask, batch_norm with the batch's
 * statistics: what the backprop saw); NULL before a forward. */
const float *trn_nodes_summary(const trn_model *m, size_t i, const char **name, size_t *width);
void trn_nodes_free(trn_model *m);
/* Several heads: points each of heads[0..m->n_heads) (a copy of m->heads)
 * at its own example weights in weights (the feeder's n x head_weights
 * layout; NULL or no head weights: all 1). */
void trn_model_head_weights(const trn_model *m, rt_head_slice *heads, const float *weights);

#endif /* PREDICTD_TRN_INTERNAL_H */
