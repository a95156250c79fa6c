/*
 * trn_run_internal.h — the pieces of train_and_evaluate shared by its files:
 * the run object (trn_run.c), the step loop (trn_loop.c), what the ranks
 * do after a step (trn_after_step.c), the input (trn_input.c), evaluation
 * (trn_eval_run.c), the exporters (trn_exporters.c), progress and the INFO
 * lines (trn_progress.c) and the BoostedTrees run (trn_gbdt_run.c).
 */
#ifndef PREDICTD_TRN_RUN_INTERNAL_H
#define PREDICTD_TRN_RUN_INTERNAL_H

/* The build defines PREDICTD_MODULE_<folder> for each source (Makefile). */
#if !defined(PREDICTD_MODULE_trainer) && !defined(PREDICTD_MODULE_tests) && \
    !defined(PREDICTD_MODULE_bench)
#error "trn_run_internal.h is trainer's own; other modules include trn.h (docs/design.md)"
#endif

#include "trn_internal.h"

#include <signal.h>
#include <time.h>

struct cJSON;

/* ------------------------------------------------ the run (trn_run.c) */

/* Where a run is: what it does next (trn_run.c's trn_train_and_evaluate). */
typedef enum trn_run_state {
    TRN_RUN_TO_TRAIN = 0,   /* steps are left to train */
    TRN_RUN_TRAINED_BEFORE, /* nothing was left to train: an earlier run reached this
                               step; evaluate and export unless it exported it */
    TRN_RUN_TRAINED,        /* training is over: evaluate and export */
    TRN_RUN_STOPPED,        /* a stop signal ended it after its checkpoint */
} trn_run_state;

/* One train_and_evaluate: the spec, the resolved config, the model and what
 * the run keeps between its steps, evaluations and exports. */
typedef struct trn_run {
    rt_otlp *trace;      /* --trace-endpoint's spans (the chief's), or NULL */
    int trace_root;      /* the run's span in it */
    const struct cJSON *spec;
    const trn_config *c; /* &cfg */
    trn_config cfg;      /* the caller's, resolved against the model (strings the caller's) */
    Predictd__ModelDef *def;
    trn_model *m;
    trn_dist *dist;      /* the ranks (NULL: one process) */
    int lock;            /* the job dir's lock (-1: none) */
    trn_run_state state;
    int64_t start_step;  /* the global step the run started at (restored) */
    double best[TRN_MAX_EXPORTERS];
    int have_best[TRN_MAX_EXPORTERS];
    char *spec_json;
    trn_summary *sum;   /* TensorBoard event files (with a job dir) */
    trn_early_stop *es; /* train.hooks; NULL without */
    int stopped_early;  /* a hook ended training */
    rt_metric_list last_ml; /* the last evaluation (valid when last_ml_step >= 0) */
    int64_t last_ml_step;
    trn_ckpt_writer *ckw; /* checkpoints written in the background (the chief's) */
    struct trn_stats *stats; /* the training data's statistics (trn_stats.c) */
} trn_run;

/* ------------------------------------ training statistics (trn_stats.c) */

/*
 * The statistics of the training rows (rt_stats_acc over the serving
 * signature's raw inputs), each row counted once: rows the reader marks as
 * its first epoch's, until the input restarts (done). With rows split
 * between MPI ranks (merge) the ranks' accumulators are gathered and merged
 * at each export; otherwise rank 0 saw every row.
 */
typedef struct trn_stats {
    rt_stats_acc *acc;
    const Predictd__ModelDef *def;
    int done;
    int merge;
    rt_buf json; /* statistics.json of the last trn_stats_snapshot (chief) */
} trn_stats;

trn_stats *trn_stats_new(const Predictd__ModelDef *def);
void trn_stats_free(trn_stats *s);
/* Counts the rows of a batch the reader marked as first readings. */
rt_status trn_stats_rows(trn_stats *s, const trn_rows *rows, rt_err *err);
/* statistics.json of every row counted so far into s->json (rank 0); every
 * rank calls it at the same point (a collective when s->merge). */
rt_status trn_stats_snapshot(trn_stats *s, trn_dist *dist, rt_err *err);

/* ------------------------------------- after a step (trn_after_step.c) */

/*
 * What the ranks decide together after a step (under MPI summed over the
 * ranks: a vote of any rank carries; reading: some rank still reads). The
 * clock-based ones are rank 0's, so every rank checkpoints, evaluates and
 * runs the hooks at the same step.
 */
typedef struct trn_votes {
    int reading;   /* this rank's input has not ended (this pass) */
    int ckpt_due;  /* save_checkpoints_secs passed since the last checkpoint */
    int eval_due;  /* throttle_secs passed since the last evaluation */
    int stop;      /* SIGINT/SIGTERM pending (blocked while training) */
    int hooks_due; /* an early-stopping hook's every_secs passed */
} trn_votes;

/* This rank's votes: masked (the stop signals are blocked), reading, and
 * the times of the last checkpoint and evaluation (trn_now_s). */
void trn_votes_cast(const trn_run *R, int masked, int reading, double last_ckpt,
                    double last_eval, trn_votes *v);
/* Sums v over the ranks (all but reading; nothing without MPI). */
rt_status trn_votes_sum(trn_dist *dist, trn_votes *v, rt_err *err);
/* trn_dist_step with the votes exchanged along with the gradients. */
rt_status trn_votes_step(trn_dist *dist, trn_model *m, double *loss, size_t n_local,
                         trn_votes *v, size_t *n_global, rt_err *err);

/* Writes a checkpoint of R's model: every replica is checked to hold the
 * same parameters, then rank 0 saves in the background (collective under
 * MPI); wait: return once it is on disk. */
rt_status trn_run_checkpoint(trn_run *R, trn_dist *dist, int wait, rt_err *err);

/* Runs the early-stopping hooks due after the update that reached step
 * (rank 0 decides for all) and sets R->stopped_early when one stops. */
rt_status trn_run_early_stop(trn_run *R, trn_dist *dist, int64_t step, int secs_due,
                             rt_err *err);

/* After a stop signal sig and its checkpoint: waits for the save, lets the
 * ranks end together, says so, and stores sig in c->stop_signal. */
rt_status trn_run_interrupted(const trn_run *R, trn_dist *dist, int sig, rt_err *err);

/* SIGINT/SIGTERM while training: rt_stops (rt.h) blocks them, the loop looks
 * for a pending one after each step. */

/* --------------------------------------------------- input (trn_input.c) */

/* A batch's targets: labels (ls per row) and, with weight columns, weights
 * (nw per row, trn_feeder_weighted). */
typedef struct trn_targets {
    float *labels;
    float *weights; /* NULL: no weight column */
    size_t *row_of; /* each instance's row (for FILE:LINE in errors) */
    size_t ls;
    size_t nw;      /* weights per row: 0, 1, or a weight per head */
} trn_targets;

/* Allocates t for batches of rows (-1: out of memory); trn_targets_free
 * frees it (and accepts a zeroed one). */
int trn_targets_alloc(trn_targets *t, const trn_feeder *fd, size_t rows);
void trn_targets_free(trn_targets *t);

/* Fills b and t from rows; a row the feeder refuses is RT_ERR_FORMAT. */
rt_status trn_feed_targets(const trn_feeder *fd, const trn_rows *rows, rt_batch *b,
                           trn_targets *t, trn_bad_row_policy bad, uint64_t *skipped,
                           rt_err *err);

/* Rows [lo, hi) of rows as a trn_rows of their own (no copy). */
trn_rows trn_rows_slice(const trn_rows *rows, size_t lo, size_t hi);

/* err holds "FILE:1: ..." of a row that failed to parse: when that line
 * holds the columns' names, adds which spec key (key) skips a header. */
void trn_hint_header(const trn_feeder *fd, trn_reader *rd, const char *key, rt_err *err);

/* The training input: every rank's reader with the run's parameters. */
typedef struct trn_input {
    trn_feeder *fd;
    char *const *files;
    size_t n_files, batch, shards, shard;
    const trn_config *c;
    trn_cache *cache;     /* the rows' features across epochs (numbered by the reader) */
    uint64_t cache_bytes; /* the reader's kept rows, and the cache's, each at most */
    struct trn_stats *stats; /* the training statistics (each row once), or NULL */
} trn_input;

/* (Re)opens the training reader *rd (closing the old one, clearing the
 * cache); trn_input_next gives the next batch (RT_ERR_NOTFOUND at the end of
 * a pass); trn_input_replay skips the batches of the first step steps
 * (*pass: batches in a pass once known, else 0). */
rt_status trn_input_open(const trn_input *in, trn_reader **rd, rt_err *err);
rt_status trn_input_next(const trn_input *in, trn_reader *rd, const trn_rows **rows,
                         rt_err *err);
rt_status trn_input_replay(const trn_input *in, trn_reader **rd, int64_t step, int64_t *pass,
                           rt_err *err);

/* ------------------------------------------- evaluation (trn_eval_run.c) */

/* Evaluates R's model (a tree ensemble is compiled into the graph first),
 * reports and runs the exporters (final: as trn_run_exporters); out
 * (optional) receives the metrics. With hooks that stopped training right
 * after evaluating this step, the final exporters take that evaluation. */
rt_status trn_evaluate_and_export(trn_run *R, int final, rt_metric_list *out, rt_err *err);

/* ------------------------------------------- exporters (trn_exporters.c) */

/* Latest and Best exporters after an evaluation with metrics ml; final: 0
 * while training, 1 at the end (Final too), 2 at the end with only the
 * FinalExporters. Rank 0 only. */
rt_status trn_run_exporters(trn_run *R, const rt_metric_list *ml, int final, rt_err *err);

/* Each BestExporter's best value among its earlier exports. */
void trn_load_best(trn_run *R);

/* 1 when an exporter's newest export holds the model at global step step. */
int trn_exported_at(const trn_run *R, int64_t step);

/* --------------------------------------------- progress (trn_progress.c) */

/* Wall-clock seconds (monotonic); CPU seconds of clock (0 on failure). */
double trn_now_s(void);
double trn_cpu_s(clockid_t clock);

/* 1 on rank 0 (or without MPI, or c NULL). */
int trn_is_chief(const trn_config *c);

/* An INFO line on stderr, from the chief only and below --verbosity WARN. */
void trn_logf(const trn_config *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The progress bar or lines of a run. */
typedef struct trn_progress {
    trn_progress_mode mode;
    double t0, last;
    int64_t step0, last_step;
    double efrac0;    /* the reader's position when this run started (after a resume's replay) */
    double loss_sum;
    double last_loss; /* shown again when no step ran since the last show */
    int64_t loss_n;
    size_t batch;
} trn_progress;

/* Fraction of the epochs the reader has done, or -1 when unknown. */
double trn_epoch_fraction(trn_reader *rd, int64_t num_epochs);

/* Shows p's line (or bar) at step; force: the last one, whatever the time. */
void trn_progress_show(trn_progress *p, int64_t step, int64_t max_steps, double efrac,
                       int force);

/* Logs "skipped N <noun>s<tail> (T times over E epochs; first)". */
void trn_skip_report(const trn_config *c, uint64_t distinct, uint64_t times, int64_t epochs,
                     const char *noun, const char *tail, const char *first);

/* ------------------------------------------------ the step loop (trn_loop.c) */

/* Trains R by gradient steps from its restored step until max_steps, the
 * end of the input or a hook, then writes the last checkpoint; sets
 * R->state to TRN_RUN_TRAINED_BEFORE when the input had been trained
 * through. *sig receives the stop signal that ended it, 0 else. */
rt_status trn_train_steps(trn_run *R, int *sig, rt_err *err);

/* ------------------------------------------ BoostedTrees (trn_gbdt_run.c) */

/* The global step a BoostedTrees run ends at: n_trees, or a smaller
 * train.max_steps. */
int64_t trn_trees_target(const trn_config *c);

/* Grows R's trees up to trn_trees_target; *sig receives the signal that
 * stopped the run, 0 else. */
rt_status trn_train_trees(trn_run *R, trn_dist *dist, int *sig, rt_err *err);

#endif /* PREDICTD_TRN_RUN_INTERNAL_H */
