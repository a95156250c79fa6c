/*
 * pm.h — predict-model, the local tool: inspect an export, predict,
 * transform and evaluate without a daemon. The module's one header: the
 * commands and their dispatch (pm_commands.c), the command line
 * (pm_args.c), opening the export and reading instance files
 * (pm_io.c), one file per command (pm_show.c, pm_predict.c,
 * pm_transform.c, pm_evaluate.c, pm_explain.c, pm_stats.c, pm_validate.c)
 * and the evaluation with its HTML report and global feature importance
 * (pm_eval.c, pm_report.c, pm_importance.c). It reaches the runtime through
 * rt.h only.
 */
#ifndef PREDICTD_PM_H
#define PREDICTD_PM_H

#include "rt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PM_EXIT_USAGE 2 /* bad arguments; 1 is a failed run */
#define PM_MAX_LIST 64  /* --data, --slice and --input given at most this often */

/* ------------------------------- command line (pm_commands.c, pm_args.c) */

/* A command's command line: its usage lines ("predict-model NAME ...",
 * continuation lines indented; usage(1) prefixes "usage: " and "       "),
 * what it does, its flags as a settings table (rt_settings.c: the flags,
 * --help and the man page come from the rows) and notes after them. */
typedef struct pm_command {
    const char *name;
    const char *synopsis;
    const char *about;
    const char *notes;        /* NULL: none */
    const rt_setting *flags;
    size_t n_flags;
} pm_command;

/* What the command line asked for (show, predict, transform, evaluate,
 * explain, stats, validate): the fields of the command's table (owned;
 * pm_opts_free), the rest zero. */
typedef struct pm_opts {
    const char *cmd;
    const pm_command *command;
    char *dir;
    char *instances;
    char *format;
    char *signature;
    char *report;
    char *batch_size;
    char *skip_header;
    char *v2_request;  /* predict --v2-request */
    char *v2_header;   /* predict --v2-header-length */
    char *model_name;  /* predict --model-name */
    char *spec;        /* stats --spec */
    char *thresholds;  /* validate --thresholds */
    rt_setting_list data;   /* --data, repeatable */
    rt_setting_list slices; /* evaluate --slice, repeatable */
    bool all;
    bool help;
    bool leaves;       /* transform --leaves */
    char *json_request; /* explain --json-request */
    char *xai_override; /* explain --explanation-spec-override */
    char *xai_method;  /* explain --method */
    char *xai_head;    /* explain --head: of several heads, the one explained */
    bool timing;       /* explain --timing */
    char *importance;  /* evaluate --importance */
} pm_opts;

/* predict-model's main (pm_commands.c): argv[1] names the command (or is
 * --help: the usage of every command), which runs on the rest. Returns
 * the exit status; a usage error is printed with the usage to stderr. */
int pm_main(int argc, char **argv);
/* The command called name (every command, convert and batch-predict too),
 * or NULL. pm_commands.c. */
const pm_command *pm_command_find(const char *name);

/* Below the commands (pm_args.c): */
/* Parses the flags of command c (one of show ... validate; argv[1] its
 * name) into *o by c's table (--flag VALUE or --flag=VALUE; --help sets
 * o->help), then the checks between them. Returns 0, or an exit status
 * after printing the error and c's usage to stderr (o freed). */
int pm_opts_read(const pm_command *c, int argc, char **argv, pm_opts *o);
void pm_opts_free(pm_opts *o);
/* Reads a command's flags, argv[0] its name, into dst by c's table (after
 * rt_settings_defaults; a flag given twice is refused; *help set by
 * --help or -h). 0, or PM_EXIT_USAGE after printing "predict-model NAME:
 * error" and c's usage to stderr (dst freed). */
int pm_args_read(const pm_command *c, int argc, char **argv, void *dst, bool *help);
/* Prints "predict-model NAME: msg" (msg a printf format of one string)
 * and c's usage to stderr (c not NULL); returns PM_EXIT_USAGE. */
int pm_usage_error(const pm_command *c, const char *fmt, const char *arg);
/* Prints c's --help (usage, about, flags, notes) to stdout. */
void pm_command_help(const pm_command *c);
/* Appends c's usage lines to b, the first after first, the others after
 * seven spaces; nonzero when out of memory. */
int pm_put_synopsis(rt_buf *b, const pm_command *c, const char *first);
/* The commands' tables. */
extern const pm_command pm_show_command, pm_predict_command, pm_transform_command,
    pm_evaluate_command, pm_explain_command, pm_stats_command,
    pm_validate_command;                    /* pm_args.c */
extern const pm_command pm_convert_command; /* pm_convert.c */
extern const pm_command pm_batch_command;   /* pm_batch.c */
extern const pm_command pm_import_command;  /* pm_import.c */

/* ----------------------------------------- exports, instance files (pm_io.c) */

/* dir itself when it holds model.pb (or a SavedModel's saved_model.pb),
 * else its newest version subdirectory. OUT: *path malloc'd. */
rt_status pm_resolve_export(const char *dir, char **path, rt_err *err);
/* Opens the export dir names (pm_resolve_export), printing the error on
 * failure; with where != NULL, *where gets the version directory opened
 * (malloc'd) when it succeeds. NULL on failure. */
rt_model *pm_open_model(const char *dir, char **where);

/* The instances of a --json-instances file: the request body and, per
 * instance, its line number in the file. */
typedef struct pm_instances {
    rt_buf body;     /* {"signature_name"?, "instances": [line, line, ...]} */
    size_t count;
    size_t *lineno;  /* [count] */
    size_t *start;   /* [count] offset of the instance in body */
    size_t *len;     /* [count] */
} pm_instances;

/* Reads FILE (one JSON instance per line, blank lines skipped; "-" is
 * stdin) into *in, naming signature in the body when not NULL. Returns 0 or
 * -1 (message printed); pm_instances_free(in) either way. */
int pm_read_instances(const char *file, const char *signature, pm_instances *in);
void pm_instances_free(pm_instances *in);
/* Prints a request error as FILE:LINE: message, finding the line from the
 * message's instances[k], or (for a JSON syntax error) by parsing each line
 * on its own. */
void pm_report_error(const char *file, const rt_graph *g, const pm_instances *in,
                     const char *msg);

/* ------------------------------------------- input files (pm_input.c) */

/* The instance formats of batch-predict and convert: Vertex AI's
 * instancesFormat names, CMLE's data formats (TEXT, TF_RECORD,
 * TF_RECORD_GZIP) accepted too. */
typedef enum {
    PM_IN_JSONL,
    PM_IN_CSV,
    PM_IN_TFRECORD,
    PM_IN_TFRECORD_GZIP,
    PM_IN_FILE_LIST,
} pm_in_format;
/* 0, or -1 for an unknown name. */
int pm_in_format_parse(const char *s, pm_in_format *f);
const char *pm_in_format_name(pm_in_format f);
/* Every file the patterns name (each a comma list of paths and globs), in
 * order: *files malloc'd (free each and the array). Errors name the pattern
 * ("--input data-*.csv: no file matches"). */
rt_status pm_expand_inputs(const char *const *pats, size_t n_pats, char ***files, size_t *n,
                           rt_err *err);
/* A reader of the rows of one file, or of those that begin in its byte range
 * [start, end) (end 0: to the end): lines (blank ones skipped, skip_header
 * lines skipped at the top of the file) or TFRecord records. path must
 * outlive it. One thread. */
typedef struct pm_in pm_in;
rt_status pm_in_open(const char *path, pm_in_format f, uint64_t start, uint64_t end,
                     size_t skip_header, pm_in **out, rt_err *err);
/* The next row: *data and *len (valid until the next call; a line NUL-terminated,
 * without its line end), *where its line or record number in the file.
 * RT_ERR_NOTFOUND at the end; a corrupt record RT_ERR_FORMAT (the reader
 * goes on with the next record when it can, rt_tfrecord_next); a line longer
 * than the line limit RT_ERR_LIMIT ("FILE:LINE: the line is longer than N
 * bytes ...", *where its number; its bytes are skipped, never held whole, and
 * the next call reads the next line). */
rt_status pm_in_next(pm_in *in, const uint8_t **data, size_t *len, uint64_t *where, rt_err *err);
/* The line limit of in's lines, in bytes without the line end
 * (PM_MAX_LINE_DEFAULT unless set: batch-predict's --max-line-bytes). */
#define PM_MAX_LINE_DEFAULT ((size_t)16 << 20)
void pm_in_set_max_line(pm_in *in, size_t max_line);
/* After pm_in_next refused a record: 1 when the reader cannot go on (a
 * corrupt length, a truncated file or gzip stream: TensorFlow's reader raises
 * DataLossError there), with *offset the record's stream offset, *bytes the
 * bytes of the range left unread (of the compressed file when *compressed);
 * 0 when it goes on with the next record (corrupt data) or for lines. */
int pm_in_lost(const pm_in *in, uint64_t *offset, uint64_t *bytes, int *compressed);
/* 1 when the rows are records ("record N" in messages), 0 for lines. */
int pm_in_records(const pm_in *in);
void pm_in_close(pm_in *in);

/* 0 when s[0..n) is exactly one JSON value as RFC 8259 writes it (strict:
 * valid escapes and UTF-8, no raw control bytes, JSON's number grammar, white
 * space only around it); else -1 with *at the byte offset where it stops
 * being one and *why what is wrong there (a static string). at, why may be
 * NULL. pm_json_check.c. */
int pm_json_check(const char *s, size_t n, size_t *at, const char **why);

/* ------------------------ batch-predict (pm_batch.c, pm_batch_unit.c) */

/* What every unit of a batch-prediction job shares (read-only while the
 * units run). */
typedef struct pm_batch_job {
    const rt_model *m;
    pm_in_format format;
    size_t skip_header;
    const char *key_field;        /* NULL: none */
    const char *const *fields;    /* --included-fields or --excluded-fields, or NULL */
    size_t n_fields;
    int excluded;                 /* fields are the excluded ones */
    int as_array;                 /* --instance-type array */
    int csv_out;                  /* --predictions-format csv: CSV lines with a header */
    size_t batch_size;
    size_t max_line;              /* --max-line-bytes: a longer line is an error record */
} pm_batch_job;

/* One unit of work: a file, or the rows that begin in a byte range of it. */
typedef struct pm_batch_unit {
    const char *path;
    uint64_t start, end;          /* end 0: to the end of the file */
} pm_batch_unit;

/* What a unit gave: the lines of its predictions and errors files and
 * their counts. */
typedef struct pm_batch_out {
    rt_buf predictions, errors;
    uint64_t ok, failed;
} pm_batch_out;

/* What a job read (pm_batch_inputs.c). pm_batch_inputs_json appends to b
 * the member "inputs": [{"file", "start", "end", "size", "mtime"}, ...] of
 * job.json, one per unit (a FIFO {"file", "start", "end", "fifo": true}).
 * pm_batch_shard_record writes DIR/.shard_NNNN.json (NNNN: k + 1 in width
 * digits) with the digest of unit u's bytes (one read of them; nothing for
 * a FIFO), before the shard's predictions file. pm_batch_inputs_check:
 * RT_OK when job.json's text (job_json) records units[0..n) at their sizes
 * now and every shard k of this rank (k % size == rank) that recorded a
 * digest still has it; else an error naming the file and what changed (the
 * job is not to be resumed). */
rt_status pm_batch_inputs_json(const pm_batch_unit *units, size_t n, rt_buf *b, rt_err *err);
rt_status pm_batch_shard_record(const char *dir, int width, size_t k, const pm_batch_unit *u,
                                rt_err *err);
rt_status pm_batch_inputs_check(const char *job_json, size_t len, const char *dir, int width,
                                const pm_batch_unit *units, size_t n, long rank, long size,
                                rt_err *err);

/* Scores unit u: each row becomes an instance (as docs/batch-prediction.md
 * says per format), batches of job->batch_size go through rt_json_handle
 * (predictd's :predict path; a batch that fails is run instance by
 * instance), every prediction is appended to out->predictions as
 * {"instance"|"key": ..., "prediction": ...} and every failure to
 * out->errors as {["key": ..., ]"instance": ..., "error": {"code", "message"}}
 * (every line JSON: an instance that is not is its text as a string; the
 * message begins with FILE:LINE or FILE: record N; in input order); with
 * job->csv_out, CSV lines instead, each buffer's first line its header
 * (docs/batch-prediction.md, "CSV predictions"). RT_OK
 * unless the unit cannot be read at all (an I/O error) or memory runs out;
 * a bad row or record never stops it. c: the calling thread's. */
rt_status pm_batch_unit_run(const pm_batch_job *job, const pm_batch_unit *u, rt_ctx *c,
                            pm_batch_out *out, rt_err *err);

/* ------------------------------------------------------------- the commands */

/* Each returns the exit status: 0, 1 (model or instance error, message
 * printed) or PM_EXIT_USAGE. Output goes to stdout, errors to stderr. */
int pm_cmd_show(const pm_opts *o);      /* pm_show.c */
int pm_cmd_predict(const pm_opts *o);   /* pm_predict.c */
int pm_cmd_transform(const pm_opts *o); /* pm_transform.c */
int pm_cmd_evaluate(const pm_opts *o);  /* pm_evaluate.c */
int pm_cmd_explain(const pm_opts *o);   /* pm_explain.c */
/* convert and batch-predict read their own flags (argv from the command's
 * name on) by their own tables (pm_args_read) and print their own help. */
int pm_cmd_convert(int argc, char **argv);       /* pm_convert.c */
int pm_cmd_batch_predict(int argc, char **argv); /* pm_batch.c */
int pm_cmd_import(int argc, char **argv);        /* pm_import.c */
int pm_cmd_stats(const pm_opts *o);     /* pm_stats.c */
int pm_cmd_validate(const pm_opts *o);  /* pm_validate.c */

/* ------------------------------------ data statistics (pm_stats.c) */
/* The statistics (rt_stats) of CSV files in def's raw columns (skip lines
 * at the top of each): errors name FILE:LINE. With train (may be NULL), also
 * per input (rt_stats_acc_new(def) order) the numbers outside train's range
 * into oor[] and an INT input's non-integers into nonint[] (both zeroed by
 * the caller). *out: rt_stats_free. */
rt_status pm_stats_of_files(const Predictd__ModelDef *def, const char *const *files, size_t n,
                            size_t skip, const rt_stats *train, uint64_t *oor, uint64_t *nonint,
                            rt_stats **out, rt_err *err);
/* pm_stats_of_files for files of nf fields whose raw column c of def is
 * field[c] (-1: not in the files, every cell missing); field NULL: the
 * fields are def's raw columns (nf of them). */
rt_status pm_stats_of_fields(const Predictd__ModelDef *def, const long *field, size_t nf,
                             const char *const *files, size_t n, size_t skip,
                             const rt_stats *train, uint64_t *oor, uint64_t *nonint,
                             rt_stats **out, rt_err *err);
/* stats' and validate's --skip-header-lines (s may be NULL: 0) into *skip:
 * 0, or PM_EXIT_USAGE after saying on stderr that s is not a count. */
int pm_stats_skip_lines(const char *s, size_t *skip);
/* Prints s as tables (numeric, string features, histograms). */
void pm_stats_table(const rt_stats *s, FILE *o);
/* The HTML of data-set statistics (pm_stats_report.c). pm_stats_html: the
 * self-contained page of s (stats --report), title and what in its header.
 * pm_html_hist: an SVG of t's equal-width histogram, with d's overlaid
 * (validate: training blue, data orange; d NULL: t alone); pm_html_values:
 * a table of the most frequent values, t's and d's shares side by side (d
 * NULL: t's counts and shares). */
void pm_stats_html(const rt_stats *s, const char *title, const char *what, rt_buf *b);
void pm_html_hist(rt_buf *b, const rt_feature_stats *t, const rt_feature_stats *d);
void pm_html_values(rt_buf *b, const rt_feature_stats *t, const rt_feature_stats *d);
/* pm_report.c's page style and HTML escaping, for the validate report. */
const char *pm_report_css(void);
int pm_html_esc(rt_buf *b, const char *s);

/* The longest feature column name of g, at most 64 (for aligned listings:
 * show --all, transform). pm_show.c. */
int pm_name_width(const rt_graph *g);

/* ------------------------------------ evaluating an export (pm_eval.c) */
/* What to evaluate: labelled CSV files of the spec's columns (the export's
 * raw columns, in order) and the slices. */
typedef struct pm_eval_opts {
    const char *const *files;
    size_t n_files;
    /* slice specs: a column name ("gender") or crossed columns
     * ("gender,race": one slice per combination of values) */
    const char *const *slices;
    size_t n_slices;
    size_t batch_size;        /* rows per batch ("loss" is a mean of batch
                                 losses); 0 = the export's spec's
                                 eval.batch_size, else 256 (the trainer's
                                 default) */
    size_t skip_header_lines; /* per file, as eval.skip_header_lines */
    int importance;           /* global feature importance (pm_importance.c) */
    rt_xai_method importance_method; /* its attributions' method */
} pm_eval_opts;

#define PM_EVAL_MAX_SLICES 10000
#define PM_EVAL_BINS 10       /* calibration bins */
#define PM_EVAL_THRESHOLDS 9  /* threshold table: 0.1, 0.2, ..., 0.9 */

typedef struct pm_eval_spec {
    char *name;           /* as given: "gender,race" */
    const char **columns; /* [n_columns], into the model's ModelDef */
    size_t n_columns;
} pm_eval_spec;

typedef struct pm_eval_slice {
    size_t spec;          /* index into specs */
    char **values;        /* [specs[spec].n_columns] trimmed cell texts */
    char *key;            /* private */
    size_t count;
    rt_metric_list metrics;
    int worst;            /* the worst slice of its spec: lowest accuracy
                             (classifiers), highest average_loss (regression) */
    double *importance;   /* [pm_eval.n_inputs] mean |attribution|, or NULL */
} pm_eval_slice;

typedef struct pm_eval_point {
    double x, y, threshold;
} pm_eval_point;

typedef struct pm_eval_curve {
    pm_eval_point *p;
    size_t n, cap;
} pm_eval_curve;

typedef struct pm_eval_bin {
    double lower, upper;  /* predicted probability in [lower, upper) */
    uint64_t count;
    double mean_prediction, mean_label; /* NAN when count is 0 */
} pm_eval_bin;

typedef struct pm_eval_threshold {
    double threshold;     /* predicted positive when logistic > threshold */
    uint64_t tp, fp, tn, fn;
    double precision, recall, f1, accuracy; /* NAN when undefined */
} pm_eval_threshold;

/* The result. Plots (roc, pr, calibration, ece, thresholds) only for a
 * binary classifier (has_plots); confusion for classifiers. */
typedef struct pm_eval {
    Predictd__HeadType head;
    size_t n_classes;             /* 0 for regression */
    char **class_names;           /* [n_classes] */
    int64_t global_step;          /* the export's training step */
    size_t batch_size;
    uint64_t examples;
    size_t n_heads;               /* several heads (TF's MultiHead): their count, else 0 */
    rt_metric_list metrics;       /* as the trainer's evaluation names them (several
                                     heads: <metric>/<head> and the merged loss) */
    pm_eval_spec *specs;
    size_t n_specs;
    pm_eval_slice *slices;        /* by spec, then larger count first */
    size_t n_slices;
    uint64_t *confusion;          /* [label * n_classes + predicted] */
    int has_plots;
    pm_eval_curve roc;            /* x = false positive rate, y = true positive rate */
    pm_eval_curve pr;             /* x = recall, y = precision */
    pm_eval_bin calibration[PM_EVAL_BINS];
    double ece;                   /* expected calibration error */
    pm_eval_threshold thresholds[PM_EVAL_THRESHOLDS];
    /* global feature importance (--importance): per raw input, the mean of
     * |attribution| over the examples (and per slice); NULL when not asked */
    double *importance;           /* [n_inputs] */
    size_t n_inputs;
    const char **inputs;          /* [n_inputs] names, into the ModelDef */
    const char *importance_method; /* "exactShapleyAttribution", ... */
    size_t *importance_order;     /* [n_inputs] input indexes, most important first */
    /* several heads (n_heads > 1): each head's own result as a one-head
     * model of its type gets it (head, classes, metrics without the
     * /<head> suffix, confusion, plots; no slices), named head_names[k] */
    struct pm_eval **head_evals;  /* [n_heads] */
    const char **head_names;      /* [n_heads] into the ModelDef */
    char **slice_metrics;         /* NULL-terminated <metric>/<head> slice columns */
} pm_eval;

/*
 * Evaluates model m on o's files. Errors name FILE:LINE and what is wrong
 * (field count, label, a cell), or the slice spec. *out is the caller's
 * (pm_eval_free); its column names point into m's ModelDef: keep m open
 * while using it. One thread.
 */
rt_status pm_eval_run(const rt_model *m, const pm_eval_opts *o, pm_eval **out, rt_err *err);
/* pm_eval_run of a model of several heads (pm_eval_heads.c): each head's
 * metrics over its own label and weight columns, named <metric>/<head>,
 * and "loss" (sum of loss_weight x loss/<head>) into e->metrics, with
 * e->examples, e->batch_size (bs), e->n_heads and e->head_evals; per
 * slice the same names (o's --slice specs); loss_sum: the spec's
 * loss_reduction SUM. --importance and TFRecord files are refused (not
 * implemented yet for several heads). */
rt_status pm_eval_heads_run(const rt_model *m, const pm_eval_opts *o, size_t bs, int loss_sum,
                            pm_eval *e, rt_err *err);
void pm_eval_free(pm_eval *e);
/* o's --slice specs into e->specs, each spec's raw column indexes into
 * *spec_cols ([o->n_slices] arrays, the caller's to free); errors name an
 * unknown or repeated column. */
rt_status pm_eval_parse_specs(pm_eval *e, const pm_eval_opts *o,
                              const Predictd__ModelDef *def, size_t ***spec_cols, rt_err *err);
/* The slices found so far by their key (the spec's index and its trimmed
 * cells, joined by a unit separator): an open-addressing table of slice
 * index + 1 (pm_eval_specs.c). Zero-initialized is empty. */
typedef struct pm_eval_keys {
    size_t *table, cap; /* cap a power of 2, at most half full */
    size_t slices_cap;  /* e->slices' room */
    rt_buf key;         /* the row's key being looked up */
} pm_eval_keys;
/* The slice of spec s that the row whose cells are at spans of buf falls in
 * (cols: spec s's raw column indexes), found in e->slices or added to it
 * (key, spec and values set, the rest zero; *added = 1): *out its index.
 * More than PM_EVAL_MAX_SLICES slices is an RT_ERR_LIMIT naming the spec. */
rt_status pm_eval_keys_slice(pm_eval_keys *k, pm_eval *e, size_t s, const size_t *cols,
                             const char *buf, const rt_csv_span *spans, size_t *out,
                             int *added, rt_err *err);
void pm_eval_keys_free(pm_eval_keys *k);
/* One CSV row for an evaluator (pm_eval_read_csv): line[0..len) without its
 * line end, buf room for len + 1 bytes, spans room for the row's cells,
 * lineno its line in the file. Returns what the row's reading says. */
typedef rt_status (*pm_eval_row_fn)(void *ctx, const char *line, size_t len, char *buf,
                                    rt_csv_span *spans, uint64_t lineno, rt_err *err);
/* Reads CSV file path for an evaluator: opens it (a missing file
 * RT_ERR_NOTFOUND, others RT_ERR_IO, named), skips its first skip lines and
 * every blank line (as the trainer's reader), and hands each other line to
 * row with buffers for n_cols cells; stops at row's first error. */
rt_status pm_eval_read_csv(const char *path, size_t skip, size_t n_cols, pm_eval_row_fn row,
                           void *ctx, rt_err *err);
/* Sorts e's slices by spec, larger first (then by key), and marks each
 * spec's worst: the highest `metric` when higher_worse, else the lowest (a
 * NaN is never the worst). */
void pm_eval_order_slices(pm_eval *e, const char *metric, bool higher_worse);
/* A binary classifier's curves, calibration and threshold table from its
 * n logistic scores and 0/1 labels into e (e->has_plots is the caller's). */
rt_status pm_eval_binary_plots(pm_eval *e, const float *scores, const float *labels, size_t n);
/* ------------------------------ global feature importance (pm_importance.c) */

/* Attributions of evaluated rows, for their mean |attribution| per raw
 * input: each row explained against the model's baseline
 * (rt_xai_model_baseline), on the predicted class's probability
 * (classifiers) or the prediction (regressors). */
typedef struct pm_importance pm_importance;
rt_status pm_importance_new(const rt_model *m, rt_xai_method method, pm_importance **out,
                            rt_err *err);
void pm_importance_free(pm_importance *im);
/* |attribution| of each raw input for instance i of b, in *abs_attr
 * (rt_graph_num_inputs values, valid until the next call). */
rt_status pm_importance_row(pm_importance *im, const rt_batch *b, size_t i,
                            const double **abs_attr, rt_err *err);

/* The metrics the slices tables show for e's head (NULL-terminated). */
const char *const *pm_eval_slice_metrics(const pm_eval *e);
/* Appends the result as one JSON object (docs/evaluation.md). */
int pm_eval_json(const pm_eval *e, rt_buf *b);
/* Appends a self-contained HTML report (inline CSS and SVG, no script,
 * nothing fetched) titled by model and data (pm_report.c). */
int pm_eval_html(const pm_eval *e, const char *model, const char *data, rt_buf *b);

#endif /* PREDICTD_PM_H */
