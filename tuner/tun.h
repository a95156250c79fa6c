/*
 * tun.h — the hyperparameter tuner (predict-tune): the one public header of tuner/.
 *
 * A study follows Cloud ML Engine's hyperparameter tuning: a config
 * (trainingInput.hyperparameters, YAML or JSON) names the metric, the goal, the
 * budget and the parameter ranges; trials are child processes called with
 * --name=value flags; their objective comes from eval/metrics.jsonl or the
 * hypertune metric file. docs/tuning.md describes the contract.
 *
 * Pieces:
 *   tun_config.c  config file (libyaml or cJSON) -> tun_spec, validated
 *   tun_gp.c      Gaussian process (Matern 5/2, marginal likelihood, LAPACK Cholesky), EI
 *   tun_search.c  parameter encoding, grid / random / Bayesian suggestions
 *   tun_study.c   trial records: metric files, trials.jsonl, study.json, the table
 *   tun_run.c     the study loop: child processes, early stopping, signals
 *
 * Conventions (DESIGN.md section 7): rt_status plus a caller's rt_err; objects
 * are plain structs with init/free pairs; nothing here exits. Nothing is shared
 * between threads (the tuner is single-threaded).
 */
#ifndef PREDICTD_TUN_H
#define PREDICTD_TUN_H

#include "rt_core.h"

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* ------------------------------------------------------------------ config */

typedef enum { TUN_DOUBLE, TUN_INTEGER, TUN_CATEGORICAL, TUN_DISCRETE } tun_type;
typedef enum { TUN_SCALE_NONE, TUN_SCALE_LINEAR, TUN_SCALE_LOG, TUN_SCALE_REVERSE_LOG } tun_scale;
typedef enum { TUN_BAYESIAN, TUN_GRID, TUN_RANDOM } tun_algorithm;

typedef struct tun_param {
    char *name;          /* parameterName: the flag is --<name>=<value> */
    tun_type type;
    tun_scale scale;
    double min, max;     /* DOUBLE / INTEGER: the range; DISCRETE: first and last value */
    double *values;      /* DISCRETE: increasing values */
    char **cats;         /* CATEGORICAL: the values */
    size_t n_values;     /* count of values or cats */
} tun_param;

typedef struct tun_spec {
    int maximize;              /* goal MAXIMIZE (1) or MINIMIZE (0) */
    char *metric_tag;          /* hyperparameterMetricTag (default training/hptuning/metric) */
    int64_t max_trials;        /* default 1 */
    int64_t max_parallel;      /* maxParallelTrials, default 1 */
    int64_t max_failed;        /* maxFailedTrials; 0 = the default (maxTrials) */
    int early_stopping;        /* enableTrialEarlyStopping */
    tun_algorithm algorithm;
    char *resume_job;          /* resumePreviousJobId or NULL */
    tun_param *params;
    size_t n_params;
} tun_spec;

#define TUN_DEFAULT_TAG "training/hptuning/metric"

void tun_spec_init(tun_spec *s);
void tun_spec_free(tun_spec *s);

/* Reads a config file: YAML (libyaml) or JSON, recognised by its first
 * non-blank byte ('{' = JSON). The document is
 * {"trainingInput": {"hyperparameters": {...}}}; unknown keys, wrong types and
 * impossible ranges are refused with the key's path in err
 * ("trainingInput.hyperparameters.params[1].minValue: ..."). */
rt_status tun_spec_load(const char *path, tun_spec *s, rt_err *err);

/* The same from a parsed tree (JSON or converted YAML). Does not keep tree. */
rt_status tun_spec_from_json(const struct cJSON *root, tun_spec *s, rt_err *err);
/* A finite number, or a string holding one (proto3 JSON writes int64 as
 * strings) into *v: 0, else -1. The tuner's one number reader (the config
 * and DIR/trials.jsonl). */
int tun_json_number(const struct cJSON *c, double *v);

/* predict-tune's command line before "--" (tun_flag_settings' fields). */
typedef struct tun_cli {
    char *config;  /* --config FILE */
    char *job_dir; /* --job-dir DIR */
    uint64_t seed; /* --seed N (1) */
    bool quiet;    /* --quiet */
} tun_cli;
/* Its flags as a settings table (rt_settings.c), in --help order. */
const rt_setting *tun_flag_settings(size_t *n);

/* A YAML document as a cJSON tree (mappings -> objects, sequences -> arrays,
 * plain scalars that read as numbers / true / false / null -> those, the rest
 * strings). Returns a new tree the caller frees with cJSON_Delete, or NULL
 * with err set (with line and column). */
struct cJSON *tun_yaml_parse(const char *text, size_t len, rt_err *err);

/* ------------------------------------------------------- Gaussian process */

/* A Gaussian process with an ARD Matern 5/2 kernel
 *   k(a, b) = s2 (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r),  r^2 = sum_d ((a_d - b_d) / l_d)^2
 * plus noise on the diagonal, on standardised targets. */
typedef struct tun_gp {
    size_t n, d;
    double *x;      /* n x d, row-major (owned copy) */
    double *chol;   /* n x n Cholesky factor L (column-major, lower) */
    double *alpha;  /* K^-1 y */
    double *ls;     /* d length scales */
    double s2;      /* signal variance */
    double noise;   /* noise variance */
    double y_mean, y_std; /* standardisation of the targets */
    double lml;     /* log marginal likelihood at the fitted hyperparameters */
} tun_gp;

/* Kernel value between two points of dimension d with length scales ls. */
double tun_matern52(const double *a, const double *b, size_t d, const double *ls, double s2);

/* Log marginal likelihood of standardised targets y (n) at points x (n x d)
 * for the given hyperparameters; -INFINITY when K is not positive definite. */
double tun_gp_lml(const double *x, const double *y, size_t n, size_t d, const double *ls,
                  double s2, double noise);

/* Fits a GP: standardises y (finite, with a finite variance: else
 * RT_ERR_INVALID; the search scales objectives of any magnitude first),
 * chooses (ls, s2, noise) by maximum marginal
 * likelihood (Nelder-Mead on their logs from a few deterministic starts within
 * bounds) and factors K. With fixed != NULL, uses fixed->ls/s2/noise instead of
 * fitting (fixed is another fitted GP of the same d). g is overwritten. */
rt_status tun_gp_fit(tun_gp *g, const double *x, const double *y, size_t n, size_t d,
                     const tun_gp *fixed, rt_err *err);

/* Posterior mean and standard deviation at point p, in the units of y. */
void tun_gp_predict(const tun_gp *g, const double *p, double *mean, double *sd);

/* Expected improvement below best (minimisation) at mean, sd. */
double tun_expected_improvement(double mean, double sd, double best);

void tun_gp_free(tun_gp *g);

/* ------------------------------------------------------------ search */

/* A trial as the search sees it: values per parameter (DOUBLE/INTEGER/DISCRETE
 * the number, CATEGORICAL the index), and its objective when done. */
typedef struct tun_point {
    double *v;        /* n_params values */
    double objective;
    int done;         /* 1 = objective valid (a succeeded trial), 0 = pending */
} tun_point;

/* Number of grid points (product of INTEGER ranges, CATEGORICAL and DISCRETE
 * counts), capped at INT64_MAX; 0 when a DOUBLE parameter makes it infinite. */
int64_t tun_grid_size(const tun_spec *s);

/* Suggests trial number `index` (0-based) of the study: grid point `index`,
 * a random point, or the Bayesian choice given the completed and pending
 * points. Deterministic in (seed, index, points). out gets n_params values.
 * Completed objectives may be any finite numbers (1e-300, 1e200, DBL_MAX,
 * mixed): the GP sees them centred, scaled and with far outliers brought
 * near the others, in the same order; a non-finite one is RT_ERR_INVALID.
 * out is always a point the search chose: when no candidate has a usable
 * expected improvement, an unseen random point. Running (pending) points
 * enter the GP at its mean there (kriging believer). In a long study the GP
 * sees a subset of the completed points (the best half and the latest), so a
 * suggestion's cost stops growing (tun_search.c: GP_MAX, FIT_MAX). */
rt_status tun_suggest(const tun_spec *s, uint64_t seed, int64_t index, const tun_point *pts,
                      size_t n_pts, double *out, rt_err *err);

/* Value <-> [0,1] coordinate of one numeric parameter by its scale type. */
double tun_to_unit(const tun_param *p, double v);
double tun_from_unit(const tun_param *p, double u);

/* A parameter value as the flag's text ("0.25", "12", "relu"). */
int tun_format_value(const tun_param *p, double v, char *buf, size_t cap);
/* Parses text written by tun_format_value back; -1 if it is not a value of p. */
int tun_parse_value(const tun_param *p, const char *text, double *v);

/* ------------------------------------------------------------ study */

typedef enum { TUN_SUCCEEDED, TUN_FAILED } tun_state;

typedef struct tun_trial {
    int64_t id;            /* 1-based trial id, its directory DIR/<id> */
    double *v;             /* n_params values */
    tun_state state;
    int stopped_early;
    int has_objective;
    double objective;
    int64_t step;
    double start_time, end_time; /* Unix seconds */
    double *curve_step, *curve_value; /* every reported value, in order */
    size_t n_curve;
    char *error;           /* FAILED: the reason and the line of the log saying why */
    int rank;              /* under mpirun: the rank that ran it (>= 1); 0 = this process */
} tun_trial;

void tun_trial_free(tun_trial *t, int free_struct);

/* Reads the objective curve of a trial: the metric file (hypertune's JSON
 * lines, values as strings or numbers) if it exists, else
 * <trial dir>/eval/metrics.jsonl. Fills curve_* (replacing), and
 * objective/step with the last report. While the trial runs (ended = 0) a
 * last line without its newline is still being written and is not read;
 * once it has ended (ended = 1) that line counts. A global_step that is not
 * a finite integer >= 0 ("nan", 1e300, 2.5) is RT_ERR_FORMAT naming
 * FILE:LINE; a line without global_step gets its report's number. Returns
 * RT_ERR_NOTFOUND when nothing reports the tag (not an error while a trial
 * runs). */
rt_status tun_read_metrics(const char *metric_file, const char *trial_dir, const char *tag,
                           int ended, tun_trial *t, rt_err *err);

/* One trial as a trials.jsonl line (no newline) / back. */
rt_status tun_trial_to_json(const tun_spec *s, const tun_trial *t, rt_buf *out);
rt_status tun_trial_from_json(const tun_spec *s, const char *line, tun_trial *t, rt_err *err);

/* Loads DIR/trials.jsonl (missing file = no trials). *trials is a new array
 * of *n records the caller frees with tun_trial_free(.., 0) and free(). */
rt_status tun_trials_load(const tun_spec *s, const char *path, tun_trial **trials, size_t *n,
                          rt_err *err);

/* Writes all trials to path atomically (temp, fsync, rename). */
rt_status tun_trials_save(const tun_spec *s, const char *path, const tun_trial *trials, size_t n,
                          rt_err *err);

/* Writes study.json (Cloud ML Engine's trainingOutput) atomically. */
rt_status tun_study_save(const tun_spec *s, const char *path, const tun_trial *trials, size_t n,
                         rt_err *err);

/* Prints the best `top` succeeded trials as a table. */
void tun_print_table(const tun_spec *s, const tun_trial *trials, size_t n, size_t top, void *fp);

/* Whether a is better than b for the spec's goal. */
int tun_better(const tun_spec *s, double a, double b);

/* The median stopping rule: should a running trial with this curve stop,
 * given the completed (succeeded, not stopped) trials? */
int tun_median_stop(const tun_spec *s, const tun_trial *running, const tun_trial *trials,
                    size_t n);

/* ------------------------------------------------------------ the loop */

/*
 * How the ranks of predict-tune under mpirun talk (tun_comm_mpi.c over MPI;
 * docs/tuning.md): point-to-point messages of bytes with a tag, in order
 * between two ranks. Each returns 0, or -1 when the transport failed.
 */
typedef struct tun_comm {
    int rank, size;
    void *ctx;
    int (*send)(void *ctx, int to, int tag, const void *buf, size_t len);
    /* 1 and the next message's sender, tag and length when one is waiting,
     * 0 when none is, -1 on failure; does not block */
    int (*poll)(void *ctx, int *from, int *tag, size_t *len);
    /* receives the message poll announced into buf (len bytes) */
    int (*recv)(void *ctx, int from, int tag, void *buf, size_t len);
} tun_comm;

typedef struct tun_run_params {
    const char *job_dir;     /* DIR */
    char *const *command;    /* COMMAND ARGS..., NULL-terminated */
    uint64_t seed;
    int quiet;               /* no progress lines */
    const tun_comm *comm;    /* mpirun with 2 ranks or more: rank 0 runs the study
                                (tun_run), the others run trials (tun_worker); NULL:
                                trials are this process's children */
} tun_run_params;

/* Runs (or resumes) the study. Returns RT_OK when it ran to the end (see
 * *succeeded for the count of succeeded trials); RT_ERR_INVALID for a bad
 * config/directory; *interrupted = 1 when SIGINT/SIGTERM stopped it (running
 * trials were terminated and are not recorded; the study resumes). Blocks
 * SIGINT, SIGTERM and SIGCHLD in the calling thread while it runs. */
rt_status tun_run(const tun_spec *s, const tun_run_params *p, int64_t *succeeded,
                  int *interrupted, rt_err *err);

/*
 * A rank > 0 of a distributed study: runs the trials rank 0 sends, one at a
 * time, as its children (DIR/<id> on this rank's machine), reports each
 * one's metrics while it runs and its record when it ends, stops it when
 * rank 0 says so, and returns when rank 0 says the study is over.
 * *interrupted = 1 when SIGINT/SIGTERM reached this rank (rank 0 then stops
 * the whole study). Blocks SIGINT, SIGTERM and SIGCHLD while it runs.
 */
rt_status tun_worker(const tun_spec *s, const tun_run_params *p, int *interrupted,
                     rt_err *err);

/*
 * Under an MPI launcher (rt_mpi_launched): initialises MPI and fills *c for
 * MPI_COMM_WORLD (tun_comm_mpi.c, the one file of predict-tune that includes
 * mpi.h); tun_comm_mpi_close finalises. Main's thread only.
 */
rt_status tun_comm_mpi_open(int *argc, char ***argv, tun_comm *c, rt_err *err);
void tun_comm_mpi_close(tun_comm *c);

#endif
