/*
 * trn.h — the predictd trainer: the one public header of trainer/.
 *
 * What tf.estimator.train_and_evaluate does for the canned linear, DNN and
 * wide & deep estimators, from a JSON spec, in C:
 *
 *   trn_config   the spec's "train", "eval", "export.exporters" sections and
 *                the estimator's optimizers (trn_config.c)
 *   trn_reader   streaming CSV input: a reader thread that prefetches rows,
 *                a shuffle buffer, batches, epochs, malformed-row policy
 *                (trn_reader.c)
 *   trn_feeder   CSV rows -> rt_batch + labels (trn_feed.c)
 *   trn_cache    each training row's label and input-side features, kept
 *                across epochs (trn_cache.c)
 *   trn_model    parameters shaped by rt_graph_tensor_specs, bound to an
 *                rt_graph so the forward pass is the serving code; loss,
 *                backprop and optimizers (trn_model.c, trn_backprop.c,
 *                trn_optim.c)
 *   (metrics)    evaluation metrics: rt_metrics in runtime/stats/rt_metrics.c,
 *                shared with predict-model evaluate
 *   trn_ckpt     atomic checkpoints with retention and resume (trn_ckpt.c)
 *   trn_run      train_and_evaluate: the run object (trn_run.c), its loop
 *                (trn_loop.c), evaluation (trn_eval_run.c), exporters
 *                (trn_exporters.c); early-stopping hooks (trn_hooks.c)
 *
 * Conventions as the runtime's (rt.h): rt_status returns, a caller's rt_err,
 * free functions accept NULL, nothing exits. Objects belong to one thread at
 * a time unless said otherwise (a trn_reader owns one internal thread).
 */
#ifndef PREDICTD_TRN_H
#define PREDICTD_TRN_H

#include <stddef.h>
#include <stdint.h>

#include "rt_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- configuration */

typedef enum {
    TRN_OPT_DEFAULT = 0, /* not given: the canned estimator's default applies */
    TRN_OPT_FTRL,
    TRN_OPT_ADAGRAD,
    TRN_OPT_ADAM,
    TRN_OPT_SGD,
    TRN_OPT_RMSPROP,           /* tf.compat.v1.train.RMSPropOptimizer */
    TRN_OPT_PROXIMAL_ADAGRAD,  /* tf.compat.v1.train.ProximalAdagradOptimizer */
} trn_opt_type;

/* Most optimizer slots a tensor can have (RMSProp centered: rms, momentum, mg). */
#define TRN_OPT_SLOTS_MAX 3

/* A learning-rate schedule by global step (tf.compat.v1.train's functions). */
typedef enum {
    TRN_LR_CONSTANT = 0,
    TRN_LR_EXPONENTIAL,   /* exponential_decay */
    TRN_LR_COSINE,        /* cosine_decay */
    TRN_LR_POLYNOMIAL,    /* polynomial_decay */
} trn_lr_decay_type;

typedef struct trn_lr_decay {
    trn_lr_decay_type type;
    int64_t decay_steps;      /* all three: required, >= 1 */
    double decay_rate;        /* exponential: required */
    int staircase;            /* exponential (0) */
    double alpha;             /* cosine: the floor, a fraction of the rate (0) */
    double end_learning_rate; /* polynomial (0.0001) */
    double power;             /* polynomial (1) */
    int cycle;                /* polynomial (0) */
} trn_lr_decay;

/* An optimizer and its hyperparameters (TensorFlow's names and defaults). */
typedef struct trn_optimizer {
    trn_opt_type type;
    double learning_rate;       /* < 0: the estimator's default */
    double l1, l2;              /* Ftrl, ProximalAdagrad: l1/l2_regularization_strength */
    double lr_power;            /* Ftrl: learning_rate_power (-0.5) */
    double initial_accumulator; /* Ftrl, Adagrad, ProximalAdagrad (0.1) */
    double beta1, beta2, epsilon; /* Adam (0.9, 0.999, 1e-8); RMSProp epsilon (1e-10) */
    double decay, momentum;     /* RMSProp (0.9, 0) */
    bool centered;              /* RMSProp (false) */
    double clip_norm;           /* > 0: tf.clip_by_global_norm over this optimizer's
                                   gradients before each update; 0: none (default) */
    trn_lr_decay lr_decay;      /* "learning_rate_decay": none by default */
} trn_optimizer;

/*
 * The learning rate o applies in the update at global step `step` (the
 * step counted before that update, as TF's schedules read global_step):
 * o->learning_rate decayed by o->lr_decay. Pure; thread-safe.
 */
double trn_optim_lr(const trn_optimizer *o, int64_t step);

typedef enum {
    TRN_EXPORTER_FINAL = 0,  /* once, at the end */
    TRN_EXPORTER_LATEST = 1, /* after every evaluation, keep the newest N */
    TRN_EXPORTER_BEST = 2,   /* after an evaluation that improves the metric */
} trn_exporter_type;

#define TRN_NAME_MAX 64
#define TRN_MAX_EXPORTERS 8

typedef struct trn_exporter_conf {
    trn_exporter_type type;
    char name[TRN_NAME_MAX];   /* directory under JOB_DIR/export/ */
    int exports_to_keep;       /* Latest/Best: newest N kept (5); 0 = all */
    char metric[TRN_NAME_MAX]; /* Best: metric compared ("loss") */
    int higher_is_better;      /* Best: 1 for auc/accuracy-like metrics */
} trn_exporter_conf;

/*
 * An early-stopping hook (tf.estimator.experimental.stop_if_no_increase_hook
 * / stop_if_no_decrease_hook) in "train.hooks": stop when the evaluations at
 * global steps >= min_steps show no increase (decrease) of the metric for
 * max_steps steps, checked every run_every_steps steps or run_every_secs.
 */
typedef struct trn_stop_hook {
    int increase;               /* 1: stop_if_no_increase_hook */
    char metric[TRN_NAME_MAX];  /* metric_name */
    int64_t max_steps;          /* max_steps_without_increase / _decrease */
    int64_t min_steps;          /* 0 */
    int64_t run_every_steps;    /* 0: by seconds */
    double run_every_secs;      /* 60 when run_every_steps is not given (TF) */
} trn_stop_hook;

#define TRN_MAX_HOOKS 4

/* A list of words: given in the spec (words) or a file of one word a line
 * (file, relative to the spec's directory unless absolute). */
typedef struct trn_words {
    char **words;
    size_t n;
    char *file;
} trn_words;

/* TF's VocabInfo for one tensor of "var_name_to_vocab_info". */
typedef struct trn_vocab_info {
    char *var;          /* tensor name */
    trn_words new_vocab; /* none given: the column's vocabulary_list */
    trn_words old_vocab; /* none given: the source export's column's */
    int64_t old_vocab_size; /* -1: all of old_vocab */
} trn_vocab_info;

/* "train.warm_start_from" (TF's WarmStartSettings). */
typedef struct trn_warm_start {
    char *from;         /* export dir or job dir (its newest checkpoint); NULL = none */
    char *vars;         /* vars_to_warm_start, a POSIX extended regex matched at the
                           start of tensor names (TF's re.match); NULL = ".*" */
    trn_vocab_info *vocab;
    size_t n_vocab;
} trn_warm_start;

typedef enum {
    TRN_BAD_ROW_STOP = 0, /* a malformed row fails the run with file:line */
    TRN_BAD_ROW_SKIP = 1, /* skipped, counted and reported */
} trn_bad_row_policy;

typedef enum {
    TRN_PROGRESS_AUTO = 0, /* a bar on a terminal, log lines otherwise */
    TRN_PROGRESS_BAR = 1,
    TRN_PROGRESS_LINES = 2,
    TRN_PROGRESS_QUIET = 3,
} trn_progress_mode;

/*
 * How the ranks of a distributed run talk (trn_comm_mpi.c implements it over
 * MPI; docs/distributed.md). A run without one (trn_config.comm == NULL) is a
 * single process and never calls it. Every operation is collective: all
 * ranks call it in the same order. Each returns 0, or -1 when the transport
 * failed. Lengths are bytes unless said otherwise.
 */
typedef struct trn_comm {
    int rank, size;
    void *ctx;
    /* buf[0..n) = element-wise sum over the ranks, on every rank */
    int (*sum_f32)(void *ctx, float *buf, size_t n);
    int (*sum_f64)(void *ctx, double *buf, size_t n);
    /* every rank's len bytes, in rank order, into recv (size * len bytes) */
    int (*allgather)(void *ctx, const void *send, size_t len, void *recv);
    /* rank r's lens[r] bytes at recv + sum(lens[< r]); lens known to all */
    int (*allgatherv)(void *ctx, const void *send, size_t len, void *recv,
                      const size_t *lens);
    /* rank r's lens[r] bytes at recv + sum(lens[< r]) on root only */
    int (*gatherv)(void *ctx, const void *send, size_t len, void *recv, const size_t *lens,
                   int root);
    /* root's len bytes into buf on every rank */
    int (*bcast)(void *ctx, void *buf, size_t len, int root);
    /* ends every rank of the job with exit status code; does not return */
    void (*abort)(void *ctx, int code);
    /* Optional (NULL: the transport has no stall watch). How long a rank
     * may wait in one collective before rank 0 names, in a WARNING line
     * (log_level <= 2), the ranks that have not reached it (warn_s, then
     * again at 2, 4, 8... times it), and before the job is ended with an
     * ERROR line naming them (abort_s: rank 0; 2 * abort_s: any other rank,
     * for a rank 0 that stopped). 0 = never. Call on every rank alike. */
    void (*set_stall)(void *ctx, double warn_s, double abort_s, int log_level);
    /* Optional: the global step those messages name. */
    void (*set_step)(void *ctx, int64_t step);
} trn_comm;

/*
 * Initialises MPI and fills *c for MPI_COMM_WORLD (c->ctx is MPI's). Call
 * once, from main's thread, when rt_mpi_launched(); trn_comm_mpi_close
 * finalises. Thread safety: only the calling thread may use c.
 */
rt_status trn_comm_mpi_open(int *argc, char ***argv, trn_comm *c, rt_err *err);
void trn_comm_mpi_close(trn_comm *c);

/*
 * Compares the spec (after the command-line overrides) and the flags that
 * are not in it (job dir, bad-row policy) across the ranks, by a hash. When
 * they differ, every rank fails with RT_ERR_INVALID; rank 0's err names the
 * first difference ("rank 1 has train.batch_size = 512, rank 0 has
 * train.batch_size = 40"), the others' err is empty. Collective; a no-op
 * without c or with one rank.
 */
struct trn_config;
rt_status trn_dist_check_spec(const trn_comm *c, const struct cJSON *spec,
                              const struct trn_config *cfg, rt_err *err);

typedef enum {
    TRN_SHARD_AUTO = 0,  /* each rank reads its files (>= N files) or rows */
    TRN_SHARD_BATCH = 1, /* each rank reads everything and takes its slice of
                            every global batch: the single-process model */
} trn_shard_policy;

/* BoostedTreesClassifier / BoostedTreesRegressor training parameters, with
 * TensorFlow's names and defaults (docs/trainer.md, "BoostedTrees"). */
typedef enum {
    TRN_PRUNE_NONE = 0, /* "none": grow every layer to max_depth */
    TRN_PRUNE_PRE = 1,  /* "pre": a split with negative gain is not made */
    TRN_PRUNE_POST = 2, /* "post": grow, then prune back negative-gain splits */
} trn_pruning_mode;

#define TRN_GBDT_MAX_DEPTH 16

typedef struct trn_gbdt_params {
    int64_t n_trees;              /* 100 */
    int64_t max_depth;            /* 6 */
    double learning_rate;         /* 0.1: shrinkage, included in leaf values */
    double l1, l2;                /* l1_regularization, l2_regularization (0) */
    double tree_complexity;       /* 0: gain penalty per split (one more leaf) */
    double min_node_weight;       /* 0: least mean hessian of a child */
    bool center_bias;             /* false: bias from the label mean when true */
    trn_pruning_mode pruning;     /* none */
    double quantile_sketch_epsilon; /* 0.01: numeric inputs get up to
                                       min(255, 1/epsilon) quantile bins */
    int64_t n_batches_per_layer;  /* 1 (every layer sees the whole data) */
} trn_gbdt_params;

/* Everything a run needs besides the model. Strings are malloc-owned; free
 * with trn_config_free(). */
typedef struct trn_config {
    char **train_files; /* patterns as given (globs expanded by the reader) */
    size_t n_train_files;
    char **eval_files;
    size_t n_eval_files;
    char *job_dir;           /* NULL = no checkpoints or exports */
    const char *trace_endpoint; /* http://.../v1/traces: the run's spans (rt_otlp), or NULL;
                                   the caller's string */

    int64_t max_steps;       /* absolute global step to stop at; 0 = no limit */
    int64_t num_epochs;      /* 0 = repeat until max_steps */
    size_t batch_size;       /* 40 */
    size_t shuffle_buffer_size; /* 1000; 0 or 1 = no shuffling */
    uint64_t seed;           /* 42 */
    int64_t save_checkpoints_steps; /* 0 = by seconds */
    double save_checkpoints_secs;   /* 600 when neither is given */
    int keep_checkpoint_max; /* 5; 0 = keep all */
    int64_t log_step_count_steps;   /* 100 */
    int64_t save_summary_steps;     /* 100: TensorBoard loss, global_step/sec; 0 = none */
    size_t skip_header_lines;       /* train.skip_header_lines: per file (0) */
    size_t eval_skip_header_lines;  /* eval.skip_header_lines (0) */
    double eval_start_delay_secs;   /* eval.start_delay_secs: TF's, accepted (no delay:
                                       evaluation runs between training steps) */
    trn_bad_row_policy bad_rows;
    rt_input_format input_format;   /* train.input_format: AUTO (by content), CSV,
                                       TFRECORD, TFRECORD_GZIP (train and eval files) */
    trn_progress_mode progress;

    size_t eval_batch_size;  /* defaults to batch_size, at least 256 */
    int64_t eval_steps;      /* 0 = the whole eval set */
    double throttle_secs;    /* 600 */

    char export_name[TRN_NAME_MAX]; /* "export.name", "model" by default */
    trn_exporter_conf exporters[TRN_MAX_EXPORTERS];
    size_t n_exporters;      /* none given: one FinalExporter */
    trn_stop_hook hooks[TRN_MAX_HOOKS]; /* train.hooks: early stopping */
    size_t n_hooks;
    trn_warm_start warm;     /* train.warm_start_from */

    trn_optimizer linear_opt; /* Linear* and the linear part of wide & deep */
    trn_optimizer dnn_opt;    /* DNN* and the DNN part (embeddings included) */
    int loss_sum;            /* estimator.loss_reduction "SUM" (else the mean,
                                SUM_OVER_BATCH_SIZE) */
    double dropout;          /* estimator.(dnn_)dropout: rate after each hidden
                                layer while training (inverted dropout) */
    char *assets_dir;        /* where vocabulary_file columns' files are (the
                                spec's directory); copied into exports' assets/ */
    int64_t memory_limit_mb; /* train.memory_limit_mb: -1 (default) the memory this
                                machine can give (trn_memory_available), 0 no check,
                                N a limit of N MiB */
    trn_shard_policy shard_policy; /* train.shard_policy: "AUTO" or "BATCH" */
    const trn_comm *comm;    /* distributed run (not owned); NULL = one process */
    double mpi_stall_warn_secs;  /* train.mpi_stall_warn_secs: rank 0 names the ranks it
                                    has waited for this long in one exchange (60; 0 off) */
    double mpi_stall_abort_secs; /* train.mpi_stall_abort_secs: and ends the job (0, the
                                    default: never, synchronous training waits) */
    int log_level;           /* TF's verbosity: 0 DEBUG, 1 INFO (default), 2 WARN,
                                3 ERROR, 4 FATAL; INFO lines only up to INFO */
    trn_gbdt_params gbdt;    /* BoostedTrees* estimators: estimator.n_trees, ... */
    int *stop_signal;        /* non-NULL (predict-train's main): SIGINT and SIGTERM are
                                blocked while training and end it after the current
                                step with a checkpoint; *stop_signal receives the
                                signal, 0 when none came */
} trn_config;

void trn_config_init(trn_config *c);
/* The spec's "train" and "eval" keys as a settings table (rt_settings.c):
 * the rows, and the default of section.key (integers; 0 if no such row). */
const rt_setting *trn_spec_settings(size_t *n);
int64_t trn_spec_default(const char *section, const char *key);
void trn_config_free(trn_config *c);

/*
 * Reads the trainer's parts of a spec: "train", "eval", "export.exporters"
 * and the estimator's "optimizer", "linear_optimizer", "dnn_optimizer".
 * Unknown keys, wrong types and impossible values are refused with a message
 * naming the key ("train.batch_size: must be >= 1"). Fields not in the spec
 * keep their trn_config_init() values; c->job_dir is left alone.
 */
rt_status trn_config_from_spec(const struct cJSON *spec, trn_config *c, rt_err *err);

/*
 * Fills in what depends on the model: the canned estimators' optimizer
 * defaults (Linear: Ftrl min(0.2, 1/sqrt(n)); DNN: Adagrad 0.05; wide & deep:
 * Ftrl min(0.005, 1/sqrt(n)) and Adagrad 0.001, n = linear columns).
 */
rt_status trn_config_resolve(trn_config *c, const Predictd__ModelDef *def, rt_err *err);

/* Command-line overrides in the style of the census tutorial's task.py.
 * Unset fields are NULL / < 0. The flags are a table (trn_flag_settings):
 * a flag whose row names a spec key (.section, .name) is written there by
 * trn_spec_apply_overrides. */
typedef struct trn_overrides {
    const char *spec;          /* --spec FILE */
    const char *job_dir;       /* --job-dir (TF's --model_dir) */
    const char *train_files;   /* comma-separated, globs allowed */
    const char *eval_files;
    int64_t train_steps;
    int64_t num_epochs;
    int64_t eval_steps;
    int64_t batch_size;        /* --batch-size, --train-batch-size */
    int64_t eval_batch_size;   /* --eval-batch-size: eval.batch_size */
    const char *export_format; /* JSON | CSV | EXAMPLE */
    int64_t seed;
    int64_t first_layer_size;
    int64_t num_layers;
    double scale_factor;       /* default 0.7 (task.py), num_layers 4 */
    int64_t embedding_size;
    int64_t memory_limit_mb;   /* train.memory_limit_mb */
    int on_bad_row;            /* a trn_bad_row_policy (not written into the spec) */
    int input_format;          /* an rt_input_format: train.input_format (-1: the spec's) */
    double mpi_stall_warn_secs;  /* train.mpi_stall_warn_secs */
    double mpi_stall_abort_secs; /* train.mpi_stall_abort_secs */
    int progress;              /* a trn_progress_mode */
    int verbosity;             /* 0 DEBUG .. 4 FATAL */
    const char *trace_endpoint; /* --trace-endpoint: OTLP/HTTP spans of the run */
    char **spec_sets;          /* --spec.PATH=VALUE, each "PATH\0VALUE" (trn_spec_set.c) */
    size_t n_spec_sets;
} trn_overrides;

void trn_overrides_init(trn_overrides *o);
/* Frees the strings trn_flags_parse copied (set to NULL). */
void trn_overrides_free(trn_overrides *o);
/* predict-train's flags (the table) and their --help text (malloc'd, NULL
 * when out of memory). */
const rt_setting *trn_flag_settings(size_t *n);
char *trn_usage(void);
/* Reads argv into o (trn_overrides_init first): --flag=value or --flag
 * value, '-' and '_' alike (task.py's --train_files), TF's --max_steps and
 * --model_dir as aliases. *help is set by -h/--help; *next is the first
 * argument that is not a flag (argc: none). Errors name the flag; an
 * unknown one is RT_ERR_NOTFOUND "unknown flag --x (did you mean --y?)". */
rt_status trn_flags_parse(int argc, char **argv, trn_overrides *o, bool *help, int *next,
                          rt_err *err);

/*
 * Writes the overrides into the spec tree (train.files, train.max_steps,
 * estimator.dnn_hidden_units = max(2, int(first * scale^i)), every
 * embedding_column's dimension, export.format, ...), so the spec stored with
 * the export is the one that was really trained.
 */
rt_status trn_spec_apply_overrides(struct cJSON *spec, const trn_overrides *o, rt_err *err);

/* --spec.PATH=VALUE (trn_spec_set.c), an rt_argv.other for name (len bytes,
 * "--" stripped; eq the text after '=' or NULL, next the argument after):
 * 0 when name is not "spec.<PATH>", else the flag is kept in o and 1 (the
 * value after '=') or 2 (the next argument) is returned; -1 refused (err). */
int trn_spec_set_flag(trn_overrides *o, const char *name, size_t len, const char *eq,
                      const char *next, rt_err *err);
/* Frees what trn_spec_set_flag kept. */
void trn_spec_set_free(trn_overrides *o);
/* Sets every --spec.PATH=VALUE of o in spec, in the order given: PATH's
 * segments are keys, indexes or array elements' "name"s; the value keeps
 * the type of the field it replaces (refused by the flag's name otherwise),
 * a new field takes the value's JSON reading, else the text. */
rt_status trn_spec_set_apply(struct cJSON *spec, const trn_overrides *o, rt_err *err);

/* ------------------------------------------------------------------ memory */

#define TRN_MEM_KEY_MAX 160

/* A run's peak memory in bytes, by kind (sums saturate at UINT64_MAX). */
typedef struct trn_memory {
    uint64_t weights;     /* parameter tensors, 4 bytes a value */
    uint64_t gradients;   /* one dense gradient buffer per tensor */
    uint64_t slots;       /* optimizer state (Ftrl 2, Adagrad 1, Adam 2, RMSProp 2 or 3,
                             ProximalAdagrad 1, SGD 0 per value) */
    uint64_t sparse;      /* touched-row marks and lists of sparsely updated tensors */
    uint64_t checkpoint;  /* with a job dir: a checkpoint read whole on resume */
    uint64_t activations; /* the largest batch's DNN input, layer outputs, deltas */
    uint64_t input;       /* the reader's shuffle buffer and queued batches */
    uint64_t total;
    char key[TRN_MEM_KEY_MAX];  /* the spec key behind the largest share, e.g.
                                   "feature_columns[16].hash_bucket_size" */
    char what[TRN_MEM_KEY_MAX]; /* what it sizes ("column x, 1000000000 ids") */
    uint64_t key_bytes;         /* that share of total */
} trn_memory;

/*
 * Estimates what training def with c will need at its peak, before anything
 * is allocated. c's optimizers must be resolved (trn_config_resolve).
 */
rt_status trn_memory_estimate(const Predictd__ModelDef *def, const trn_config *c,
                              trn_memory *out, rt_err *err);

/*
 * Bytes this process can still get: the smallest of /proc/meminfo's
 * MemAvailable and, on every level of its cgroup v2 path, memory.max minus
 * memory.current. source (len bytes) names the bound that won. UINT64_MAX
 * when none can be read. root prefixes the paths (NULL or "" for the real
 * ones; tests pass a fake tree).
 */
uint64_t trn_memory_available(const char *root, char *source, size_t len);

/* "1.5 GiB" into out; returns out. */
const char *trn_memory_format(uint64_t bytes, char *out, size_t len);

/*
 * Refuses (RT_ERR_LIMIT) a model whose estimate exceeds c->memory_limit_mb,
 * or what the machine can give when that is -1, with the figure, its parts,
 * the limit and the spec key to lower. 0 turns the check off.
 */
rt_status trn_memory_check(const Predictd__ModelDef *def, const trn_config *c, rt_err *err);

/* What the limit trn_memory_check applies (what the machine can give when
 * the check is off) leaves beyond the estimate: room for caches. */
uint64_t trn_memory_spare(const Predictd__ModelDef *def, const trn_config *c);

/* ------------------------------------------------------------------ reader */

/* One CSV field (not NUL-terminated; points into the row block). The reader
 * checks the numeric columns' fields with rt_raw_number and keeps what it
 * read, so the feeder does not parse them again. */
typedef struct trn_field {
    const char *s;
    size_t len;
    double num;       /* num_state 1: the value */
    int num_state;    /* 0: not read (parse s); 1: num holds it; 2: an empty cell */
} trn_field;

/* A block of rows handed out by the reader. Row r has fields
 * fields[r * n_fields .. (r + 1) * n_fields). */
typedef struct trn_rows {
    size_t n;
    size_t n_fields;
    trn_field *fields;
    const char **src_file;  /* [n] the file each row came from */
    uint64_t *src_line;     /* [n] its line number (1-based) */
    const uint64_t *ordinal; /* [n] or NULL: the row's number in a pass over the
                                input, the same in every epoch (TRN_NO_ORDINAL: none) */
    const uint8_t *first;    /* [n] or NULL: 1 when the row comes from the reader's
                                first epoch (each data row once: training statistics) */
    void *priv;
} trn_rows;

#define TRN_NO_ORDINAL UINT64_MAX

typedef struct trn_reader_params {
    const char *const *files; /* patterns; each may be a glob or a comma list */
    size_t n_files;
    size_t n_fields;          /* fields per row (the spec's columns) */
    const uint8_t *numeric;   /* [n_fields] 1 = must parse as a number */
    const char *const *names; /* [n_fields] column names for messages, or NULL;
                                 must outlive the reader */
    size_t batch_size;
    size_t shuffle_buffer_size; /* <= 1: file order */
    int64_t num_epochs;       /* 0 = forever */
    uint64_t seed;
    trn_bad_row_policy bad_rows;
    size_t prefetch_batches;  /* batches queued ahead (4) */
    size_t skip_header_lines; /* first lines of every file ignored (0) */
    size_t shard_count;       /* > 1: read one shard of the data: with at least */
    size_t shard_index;       /* shard_count files, files i with i % count == index;
                                 otherwise data rows j (per epoch, in file order)
                                 with j % count == index (0 = everything) */
    rt_input_format input_format; /* AUTO (each file by content), CSV, TFRECORD,
                                     TFRECORD_GZIP: records of tf.Example parsed
                                     against def's raw columns (rt_example_to_row) */
    const Predictd__ModelDef *def; /* for TFRecord input; must outlive the reader */
    uint64_t cache_bytes;     /* > 0 with num_epochs != 1: the first epoch's rows are
                                 kept in memory (up to this many bytes) and later
                                 epochs replay them instead of reading the files
                                 again; the rows then carry ordinals. 0: off */
    int defer_replay_fields;  /* 1: a replayed row's fields (first 0) are not filled
                                 in by the reader thread; a consumer that reads them
                                 calls trn_reader_fill_fields first (the training
                                 loop, whose cache mostly needs only ordinals) */
} trn_reader_params;

typedef struct trn_reader trn_reader;

trn_reader_params trn_reader_default_params(void);

/* Expands the patterns as trn_reader_open does and opens every regular file
 * named (and closes it again): RT_ERR_NOTFOUND "PATH: No such file or
 * directory" / "GLOB: no file matches" / "no file named" (patterns that
 * name nothing), RT_ERR_IO "PATH: cannot open: reason", RT_ERR_INVALID "PATH:
 * not a regular file". Pipes are only stat'ed. So a run refuses a wrong path
 * before its first step, not when it reaches the file. */
rt_status trn_files_check(const char *const *patterns, size_t n_patterns, rt_err *err);

/* Expands the patterns (comma lists and globs) and starts the reader thread.
 * Fails when a pattern matches no file. */
rt_status trn_reader_open(const trn_reader_params *p, trn_reader **out, rt_err *err);

/*
 * The next batch (the last one of the data may be short). Returns RT_OK with
 * *rows set, RT_ERR_NOTFOUND at the end of the data (no rows), or an error
 * (I/O, or a malformed row under TRN_BAD_ROW_STOP: "FILE:LINE: ...").
 * The rows stay valid until the next call or trn_reader_close().
 */
rt_status trn_reader_next(trn_reader *r, const trn_rows **rows, rt_err *err);

/* With params.defer_replay_fields: fills in the fields of every row of the
 * batch rows is (or is a slice of), in the caller's thread, so that they are
 * what the reader would have written; once per batch, a no-op otherwise. */
void trn_reader_fill_fields(const trn_rows *rows);

/* After trn_reader_next returned RT_ERR_FORMAT (a malformed row under
 * TRN_BAD_ROW_STOP): the row's file (owned by r) and *line, its line number;
 * otherwise NULL and 0. */
const char *trn_reader_failed_at(trn_reader *r, uint64_t *line);

typedef struct trn_reader_stats {
    uint64_t rows;      /* good rows read */
    uint64_t bytes;     /* bytes read in the current epoch */
    uint64_t epoch_bytes; /* total size of the files (one epoch) */
    uint64_t bad_rows;  /* skipped */
    uint64_t bad_rows_distinct; /* skipped in the first epoch: distinct rows (later
                                   epochs skip the same rows again) */
    int64_t epochs;     /* completed passes */
    char first_bad[RT_ERR_MAX]; /* the first skipped row's reason */
} trn_reader_stats;

void trn_reader_get_stats(trn_reader *r, trn_reader_stats *s);
/* Stops the thread and frees everything. NULL is fine. */
void trn_reader_close(trn_reader *r);

/* ------------------------------------------------------------------ feeder */

/* Maps CSV rows of the spec's columns onto an rt_batch and a label vector. */
typedef struct trn_feeder trn_feeder;

rt_status trn_feeder_new(const rt_graph *g, trn_feeder **out, rt_err *err);
void trn_feeder_free(trn_feeder *f);
/* Which CSV columns must parse as numbers ([n_columns], owned by f). */
const uint8_t *trn_feeder_numeric(const trn_feeder *f, size_t *n_columns);
/* The CSV columns' names ([n_columns], owned by f: the reader's names). */
const char *const *trn_feeder_names(const trn_feeder *f);
/* The ModelDef the feeder reads rows of (the graph's). */
const Predictd__ModelDef *trn_feeder_def(const trn_feeder *f);
/*
 * Clears b and appends the rows; labels gets trn_feeder_label_dim floats per
 * appended row (class id for classifiers, the label_dimension values for
 * regressors) and must hold that many times rows->n; weights (when the model
 * has example weights, else it may be NULL and is not written)
 * trn_feeder_weighted floats per appended row, that many times rows->n. A row whose label is not in the
 * vocabulary (or not a number), or whose weight is not a number >= 0, is
 * malformed: with TRN_BAD_ROW_STOP the call fails with "FILE:LINE: label y:
 * ..." / "FILE:LINE: weight w: ..."; with TRN_BAD_ROW_SKIP the row is left out
 * and counted in *skipped (may be NULL). rt_batch_size(b) tells how many rows
 * were appended.
 */
rt_status trn_feeder_fill(const trn_feeder *f, const trn_rows *rows, rt_batch *b, float *labels,
                          float *weights, trn_bad_row_policy bad, uint64_t *skipped, rt_err *err);
/* The same; row_of (NULL, or room for rows->n) gets each appended row's
 * index in rows. */
rt_status trn_feeder_fill_rows(const trn_feeder *f, const trn_rows *rows, rt_batch *b,
                               float *labels, float *weights, size_t *row_of,
                               trn_bad_row_policy bad, uint64_t *skipped, rt_err *err);
/* A runtime error about one instance of a batch filled from rows
 * ("instances[34].education_num: 17 is out of range ...": instance i is row
 * row_of[i], or row i when row_of is NULL; n instances) is rewritten to name
 * the row's file and line, as the reader's errors do ("adult.data.csv:1207:
 * education_num: 17 is out of range ..."). Returns st; other errors are left
 * as they are. */
rt_status trn_err_at_row(rt_status st, const trn_rows *rows, const size_t *row_of, size_t n,
                         rt_err *err);
/* Label values per row: label_dimension for regressors, 1 for classifiers. */
size_t trn_feeder_label_dim(const trn_feeder *f);
/* Example weights per row fill writes: 1 with an estimator.weight_column;
 * several heads with any head's weight_column: n_heads (weight k head k's,
 * 1 for a head without one); else 0. */
size_t trn_feeder_weighted(const trn_feeder *f);

/* -------------------------------------------------------------- row cache */

/*
 * The training rows' transformed features kept across epochs (trn_cache.c):
 * a row the reader numbers (trn_rows.ordinal) is fed and transformed the
 * first time only; its labels, its weight (with a weight column) and the
 * input half of rt_transform are kept, up to max_bytes. trn_cache_fill makes
 * f (the model's features, for a training step with b NULL), labels and
 * weights (as trn_feeder_fill writes them) from rows: from the kept records
 * when every row is known, else with the feeder fd (the same every call; b is
 * its scratch, after trn_reader_fill_fields) and rt_transform, keeping the new rows. Skipped rows and
 * errors as trn_feeder_fill; *n instances. trn_cache_clear forgets every row (a new
 * reader numbers them again). One thread at a time.
 */
typedef struct trn_cache trn_cache;
trn_cache *trn_cache_new(const rt_graph *g, uint64_t max_bytes);
void trn_cache_clear(trn_cache *c);
void trn_cache_free(trn_cache *c);
rt_status trn_cache_fill(trn_cache *c, const trn_feeder *fd, const trn_rows *rows, rt_batch *b,
                         rt_features *f, float *labels, float *weights, trn_bad_row_policy bad,
                         uint64_t *skipped, size_t *n, rt_err *err);
/* How many distinct rows (by file and line) the fills of c skipped, however
 * many times each (*skipped counts every time); trn_cache_clear keeps it. */
uint64_t trn_cache_distinct_skips(const trn_cache *c);

/* ------------------------------------------------------------------- model */

typedef struct trn_model trn_model;

/*
 * Checks the memory the run will need (trn_memory_check: RT_ERR_LIMIT with
 * the figure and the spec key), then allocates the parameters the ModelDef's
 * graph needs, initializes them as TensorFlow's canned estimators do
 * (glorot-uniform kernels, zero biases and linear weights, embeddings
 * truncated normal with stddev 1/sqrt(dim)) from seed, builds the rt_graph
 * over them and the optimizer state.
 * def must outlive the model; c is copied.
 */
rt_status trn_model_new(const Predictd__ModelDef *def, const trn_config *c, uint64_t seed,
                        trn_model **out, rt_err *err);
void trn_model_free(trn_model *m);

const rt_graph *trn_model_graph(const trn_model *m);
int64_t trn_model_step(const trn_model *m);
void trn_model_set_step(trn_model *m, int64_t step);

/* Loss of a batch as estimator.loss_reduction reduces it (the weighted mean
 * over instances, SUM_OVER_BATCH_SIZE, or the sum). labels: as
 * trn_feeder_fill writes them; weights: one per instance (the weight column),
 * NULL for all 1. Fills logits (n x logits_dim) when not NULL. Forward only,
 * no state change. */
rt_status trn_model_loss(trn_model *m, const rt_batch *b, const float *labels,
                         const float *weights, double *loss, float *logits, rt_err *err);

/* The model's rt_features: the batch the next trn_model_gradients /
 * trn_model_train_step with b NULL trains on, filled by the caller
 * (rt_transform, or trn_cache_fill from its rows kept across epochs). */
rt_features *trn_model_features(trn_model *m);

/* Loss and gradients of a batch into the model's gradient buffers
 * (trn_model_param's grad), without updating anything. b NULL: the batch is
 * already transformed in trn_model_features. */
rt_status trn_model_gradients(trn_model *m, const rt_batch *b, const float *labels,
                              const float *weights, double *loss, rt_err *err);

/* Applies the gradients with the optimizers (dense tensors whole, sparse
 * ones on the rows the batch touched), step += 1. */
void trn_model_apply(trn_model *m);

/* One training step: gradients + apply. */
rt_status trn_model_train_step(trn_model *m, const rt_batch *b, const float *labels,
                               const float *weights, double *loss, rt_err *err);

/* The parameter tensors (in rt_graph_tensor_specs order). */
size_t trn_model_num_params(const trn_model *m);
typedef struct trn_param_view {
    const char *name;
    uint64_t count;
    uint64_t rows, cols; /* shape (rows x cols; cols = 1 for rank 1) */
    float *data;
    float *grad;         /* dense gradient buffer (valid after gradients) */
    int sparse;          /* updated by rows (linear weights of categorical
                            columns, embeddings) */
    int dnn;             /* uses the DNN optimizer */
} trn_param_view;
void trn_model_param(const trn_model *m, size_t i, trn_param_view *v);

/* Optimizer state (slots) of parameter i: up to TRN_OPT_SLOTS_MAX arrays of
 * count floats into slots[], their number returned. */
size_t trn_model_slots(const trn_model *m, size_t i, float **slots);

/* ------------------------------------------------------------- checkpoints */

/*
 * Writes JOB_DIR/model.ckpt-STEP (weights, optimizer state, global step;
 * CRC-32C over the file) through a temporary file, fsync and rename, fsyncs
 * the directory, then removes all but the newest keep_max (0 = keep all).
 */
rt_status trn_ckpt_save(const trn_model *m, const char *job_dir, int keep_max, rt_err *err);

/*
 * The same in the background (the training loop's checkpoints):
 * trn_ckpt_save_async copies m's state into the writer's image of the file
 * (the exact bytes trn_ckpt_save writes) and returns while a thread writes,
 * fsyncs and renames it; the training thread goes on at once. It first waits
 * for the writer's previous save and returns that save's error, if any,
 * starting nothing. trn_ckpt_wait waits for the save in flight and returns
 * its status (the file is then on disk). trn_ckpt_writer_free waits too.
 * A writer belongs to one thread at a time; NULL from _new: out of memory.
 */
typedef struct trn_ckpt_writer trn_ckpt_writer;
trn_ckpt_writer *trn_ckpt_writer_new(void);
rt_status trn_ckpt_save_async(trn_ckpt_writer *w, const trn_model *m, const char *job_dir,
                              int keep_max, rt_err *err);
rt_status trn_ckpt_wait(trn_ckpt_writer *w, rt_err *err);
void trn_ckpt_writer_free(trn_ckpt_writer *w);

/*
 * Loads the newest valid checkpoint of job_dir into m (a damaged newer one
 * is skipped with a line "PATH: why" in warn, when not NULL; the steps above
 * *step are those lost). RT_ERR_NOTFOUND when there is none; RT_ERR_FORMAT
 * when a checkpoint does not match the model ("changed?"), or when there
 * are checkpoints and none restores ("JOB: none of its 2 checkpoints
 * restores (model.ckpt-100: checksum mismatch; ...)"). Changes no file.
 */
rt_status trn_ckpt_restore(trn_model *m, const char *job_dir, int64_t *step, rt_buf *warn,
                           rt_err *err);

/*
 * Makes job_dir ready before any work: creates it with its parents when
 * missing and proves it writable by writing, syncing and removing a probe
 * file. RT_ERR_IO with a message naming --job-dir and the reason otherwise.
 */
rt_status trn_job_dir_check(const char *job_dir, rt_err *err);

/*
 * Locks job_dir for this process: flock on JOB_DIR/.predict-train.lock,
 * which then holds this process's PID. A second trainer gets RT_ERR_EXISTS
 * with a message naming the holder's PID. *fd is the lock (released by
 * trn_job_dir_unlock, or when the process ends, however it ends).
 */
rt_status trn_job_dir_lock(const char *job_dir, int *fd, rt_err *err);
void trn_job_dir_unlock(int fd);

/* Steps of the checkpoints in job_dir, ascending. *steps is malloc'd. */
rt_status trn_ckpt_list(const char *job_dir, int64_t **steps, size_t *n, rt_err *err);

/* ---------------------------------------------------------- train_and_eval */

/*
 * train_and_evaluate: resumes from the newest checkpoint in c->job_dir
 * (locked for the run: trn_job_dir_lock), trains until max_steps (the input
 * restarts, num_epochs more, when it ends before) or, without max_steps, to
 * the end of the epochs; a run with nothing left to train evaluates and
 * exports only when no export of that step exists yet (TF: "Skipping
 * training"). It checkpoints, evaluates after a
 * checkpoint when throttle_secs have passed and always at the end (logging
 * "Saving dict for global step N: ..." and appending to
 * JOB_DIR/eval/metrics.jsonl), runs the exporters into
 * JOB_DIR/export/<name>/<version>/. spec is the (overridden) spec, stored
 * with exports. final (optional) receives the last evaluation's metrics.
 */
rt_status trn_train_and_evaluate(const struct cJSON *spec, const trn_config *c,
                                 rt_metric_list *final, rt_err *err);

/* Evaluates m on files (c's eval settings). */
rt_status trn_evaluate(trn_model *m, const trn_config *c, rt_metric_list *out, rt_err *err);

/* ----------------------------------------------------------------- random */

/* The runtime's generator (rt_rng); trn_rng_seed mixes the seed as the
 * trainer always has, so a seed trains the same model as before. */
typedef rt_rng trn_rng;

void trn_rng_seed(trn_rng *r, uint64_t seed);
static inline uint64_t trn_rng_next(trn_rng *r) { return rt_rng_next(r); }
static inline double trn_rng_uniform(trn_rng *r) { return rt_rng_uniform(r); }
static inline double trn_rng_normal(trn_rng *r) { return rt_rng_normal(r); }
static inline uint64_t trn_rng_below(trn_rng *r, uint64_t n) { return rt_rng_below(r, n); }

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_TRN_H */
