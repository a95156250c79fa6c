/*
 * rt_stats.h — numbers about data and predictions (runtime/stats/): the
 * evaluation metrics (AUC, accuracy, losses of a head over logits) and the
 * data statistics of TFDV's DatasetFeatureStatistics (histograms, top
 * values, skew and drift distances, their JSON).
 *
 * May use: core, data (raw cells and the raw-column schema). It sits under
 * model because an export carries its training statistics (rt_model_stats).
 */
#ifndef PREDICTD_RT_STATS_H
#define PREDICTD_RT_STATS_H

#include "rt_data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ metrics (rt_metrics.c) */

/* The head's loss over n rows as TF's SUM_OVER_BATCH_SIZE reduces it:
 * sum_i w_i l_i / n, with l_i the example's loss (regression: the squared
 * error averaged over its ld values). labels: a class id per row, or ld
 * values per row for regression; weights: one per row, NULL for all 1.
 * When dlogits is not NULL it receives d (sum_i w_i l_i) / d logits scaled
 * by 1/denom (denom = n for the batch mean). Thread-safe. */
double rt_metrics_head_loss(Predictd__HeadType head, size_t ld, const float *logits,
                    const float *labels, const float *weights, size_t n, size_t denom,
                    float *dlogits);

/* A regression head's loss (the custom estimator's heads; the canned
 * regressors' is squared): per value e = logit - label,
 *   squared   e^2 (rt_metrics_head_loss's)
 *   absolute  |e|
 *   huber     e^2 / 2 for |e| <= param (delta), else param (|e| - param / 2)
 *   pinball   the quantile loss at tau = param: tau (-e) for e <= 0, else (1 - tau) e
 *   poisson   tf.nn.log_poisson_loss(label, logit) without the Stirling term
 *             (compute_full_loss False, TF's default): exp(z) - y z, z the logit;
 *             the head predicts exp(z) (TF's PoissonRegressionHead)
 * averaged over the ld values as rt_metrics_head_loss averages the squared one. */
typedef enum {
    RT_LOSS_SQUARED = 0,
    RT_LOSS_ABSOLUTE,
    RT_LOSS_HUBER,
    RT_LOSS_PINBALL,
    RT_LOSS_POISSON,
} rt_loss_kind;
typedef struct rt_loss {
    rt_loss_kind kind;
    double param;
} rt_loss;
/* The loss kind named name ("squared", ...), or -1. */
int rt_metrics_loss_named(const char *name);
/* rt_metrics_head_loss with loss for a regression head (NULL or RT_LOSS_SQUARED:
 * exactly rt_metrics_head_loss); other heads ignore it. Thread-safe. */
double rt_metrics_head_loss_with(Predictd__HeadType head, const rt_loss *loss, size_t ld,
                         const float *logits, const float *labels, const float *weights,
                         size_t n, size_t denom, float *dlogits);

/* ------------------------------------------ several heads (rt_metrics_multi.c) */

/* One of several heads (TF's MultiHead) in the concatenated layout: its
 * logits are values [off, off + ld) of each row's logits, its labels values
 * [label_off, label_off + (regression or multi-label ? ld : 1)) of each
 * row's labels (a multi-label head's: its ld multi-hot values). */
typedef struct rt_head_slice {
    Predictd__HeadType head;
    rt_loss loss;          /* a regression head's (see rt_metrics_head_loss_with) */
    size_t off, ld;        /* its logits */
    size_t label_off;      /* its labels */
    double loss_weight;    /* its loss's weight in the total (TF's head_weights) */
    const float *weights;  /* its example weights (row i's at weights[i * weight_stride]),
                              NULL for all 1 */
    size_t weight_stride;  /* 0 or 1: one weight a row, contiguous */
    int reduce_sum;        /* loss_reduction SUM: the head's loss is the weighted sum over
                              the batch (and over a regression head's ld values) */
} rt_head_slice;

/* TF's MultiHead training loss over n rows: sum_k loss_weight_k x head k's
 * rt_metrics_head_loss_with over its slice with its own weights (each head
 * reduced as one head is: SUM_OVER_BATCH_SIZE sum_i w_i l_i / n, or with
 * reduce_sum that times n x values, values = ld for regression, else 1),
 * into *total. Rows hold ld_total logits and label_w label values.
 * When dlogits (n x ld_total) is not NULL it receives d total / d logits,
 * each head's denom-scaled gradient times its loss_weight in its columns.
 * One head at off 0 with loss_weight 1 gives exactly
 * rt_metrics_head_loss_with's loss and gradient. Thread-safe. */
rt_status rt_metrics_multi_loss(const rt_head_slice *heads, size_t n_heads, size_t ld_total,
                                size_t label_w, const float *logits, const float *labels,
                                size_t n, size_t denom, float *dlogits, double *total);

/* ------------------------------- multi-label head (rt_metrics_mlabel.c) */

/* TF's MultiLabelHead loss over n rows of n_classes logits and n_classes
 * multi-hot labels (0 or 1): l_i = the mean over the classes of
 * sigmoid_cross_entropy_with_logits, reduced as SUM_OVER_BATCH_SIZE:
 * sum_i w_i l_i / n (weights NULL for all 1; 0 for n = 0). When dlogits is
 * not NULL it receives d (sum_i w_i l_i) / d logits scaled by 1/denom:
 * w_i (sigmoid(z) - y) / n_classes / denom. Thread-safe. */
double rt_metrics_mlabel_loss(size_t n_classes, const float *logits, const float *labels,
                              const float *weights, size_t n, size_t denom, float *dlogits);

/* The head's "probabilities": sigmoid of each of the n x n_classes logits,
 * row by row (probs may be logits). Thread-safe. */
void rt_metrics_mlabel_probabilities(size_t n_classes, const float *logits, size_t n,
                                     float *probs);

/* One row's labels from one cell: class names separated by delim (by the
 * vocabulary vocab[0..n_classes), or class ids in [0, n_classes) when vocab
 * is NULL), into multihot[0..n_classes) (1 for a listed class, else 0); an
 * empty cell (or NULL) lists none. An unknown name or id, an empty name
 * ("a||b") and a name listed twice are RT_ERR_INVALID with err naming it
 * (the caller prefixes FILE:LINE). Thread-safe. */
rt_status rt_metrics_mlabel_parse(const char *cell, char delim, const char *const *vocab,
                                  size_t n_classes, float *multihot, rt_err *err);

/* Head h's label delimiter (Head.label_delimiter; "" in a ModelDef is '|'). */
char rt_metrics_mlabel_delimiter(const Predictd__Head *h);

/* rt_metrics_mlabel_parse of one CSV cell s[0, len) (not NUL-terminated) by
 * head h (a HEAD_MULTI_LABEL: its n_classes, label_vocabulary or ids, and
 * delimiter); with trim each name loses its leading and trailing blanks
 * (the spec's trim_strings). Errors as rt_metrics_mlabel_parse's. Thread-safe. */
rt_status rt_metrics_mlabel_cell(const Predictd__Head *h, int trim, const char *s, size_t len,
                                 float *multihot, rt_err *err);

/* The head's "auc" and "auc_precision_recall" as TF's MultiLabelHead reports
 * them: one curve over the n x n_classes (row, class) pairs flattened, pair
 * (i, j) scored probs[i * n_classes + j] against its multi-hot label and
 * weighted by its row's weight (weights NULL for all 1), exact as
 * rt_metrics_auc_roc / rt_metrics_auc_pr compute them. RT_ERR_NOMEM when the
 * flattened weights cannot be allocated. Thread-safe. */
rt_status rt_metrics_mlabel_auc(size_t n_classes, const float *probs, const float *labels,
                                const float *weights, size_t n, double *auc, double *auc_pr,
                                rt_err *err);

#define RT_METRIC_NAME_MAX 64

typedef struct rt_metric {
    char name[RT_METRIC_NAME_MAX];
    double value;
} rt_metric;

#define RT_MAX_METRICS 24

typedef struct rt_metric_list {
    size_t n;
    rt_metric m[RT_MAX_METRICS];
} rt_metric_list;

typedef struct rt_metrics rt_metrics;

/* head: HEAD_BINARY, HEAD_MULTI_CLASS, HEAD_MULTI_LABEL or HEAD_REGRESSION;
 * n: the number of classes of a classifier, the label_dimension of a
 * regressor (0 = 1). */
rt_metrics *rt_metrics_new(Predictd__HeadType head, size_t n);
/* Sets the regression loss the metrics' loss and average_loss use
 * (squared unless set). */
void rt_metrics_set_loss(rt_metrics *mt, const rt_loss *loss);
void rt_metrics_free(rt_metrics *mt);
/* Adds a batch: logits (n x logits_dim), labels (class ids, or
 * label_dimension values per row for regression), example weights (NULL:
 * all 1; estimator.weight_column) and the batch's loss. Every metric but
 * "loss" (the mean of the batch losses) is weighted as TF weights it. */
RT_WUR rt_status rt_metrics_add(rt_metrics *mt, const float *logits, const float *labels,
                         const float *weights, size_t n, double batch_loss);
/*
 * Binary: accuracy, accuracy_baseline, auc (exact ROC AUC, ties averaged),
 * auc_precision_recall (exact, step-wise average precision), average_loss,
 * label/mean, loss, precision, prediction/mean, recall, global_step.
 * Multi-class: accuracy, average_loss, loss, global_step.
 * Regression: average_loss, label/mean, loss, prediction/mean, global_step.
 * Multi-label (labels: n_classes multi-hot values per row): auc,
 * auc_precision_recall (over the flattened (row, class) pairs, as
 * rt_metrics_mlabel_auc), average_loss, loss, global_step.
 * Names sorted as TensorFlow prints them.
 */
RT_WUR rt_status rt_metrics_result(const rt_metrics *mt, int64_t global_step, rt_metric_list *out);
/* The examples added so far: per example its score (binary: the logistic;
 * multi-class: the predicted class id; regression: the prediction's first
 * value; multi-label: one example per (row, class) pair, its probability
 * and 0/1 label), its label (first value) and, when weights is not NULL, its weight
 * (*weights NULL when no batch had weights); pointers valid until the next
 * rt_metrics_add. Returns the count. */
size_t rt_metrics_data(const rt_metrics *mt, const float **scores, const float **labels,
                       const float **weights);
/* Value of metric `name` or NAN. */
double rt_metric_get(const rt_metric_list *l, const char *name);
/* "accuracy = 0.85, auc = 0.9, ..." appended to b; and the JSON object. */
int rt_metrics_format(const rt_metric_list *l, rt_buf *b);
int rt_metrics_json(const rt_metric_list *l, rt_buf *b);

/* ------------------------------------------- curves (rt_metrics_auc.c) */

/* Exact ROC AUC of scores against 0/1 labels (ties count one half), each
 * example counting its weight (NULL: all 1). */
double rt_metrics_auc_roc(const float *scores, const float *labels, const float *weights, size_t n);
/* Exact area under the precision-recall curve (average precision),
 * weighted likewise. */
double rt_metrics_auc_pr(const float *scores, const float *labels, const float *weights, size_t n);

/* One example for the curves: its score, label and weight. */
typedef struct rt_scored {
    float s, y; /* score; label as 0 or 1 */
    float w;    /* example weight (1 without weights) */
} rt_scored;

/* scores, labels (positive when > 0.5) and weights (NULL: all 1) paired and
 * sorted by score, highest first (the order the AUCs and an evaluation's
 * ROC and precision-recall curves walk); malloc'd (free it), NULL when out
 * of memory. Thread-safe. */
rt_scored *rt_metrics_sorted_desc(const float *scores, const float *labels, const float *weights,
                          size_t n);

/* ------------------------------------------- data statistics (rt_stats*.c) */

/*
 * Statistics of a data set's raw inputs as TensorFlow Data Validation's
 * DatasetFeatureStatistics defines them (docs/data-validation.md): per
 * numeric input count, missing, NaN, zeros, min, max, mean, std, median, a
 * 10-bucket equal-width histogram and a 10-bucket quantiles histogram; per
 * string input count, missing, unique, average length and the value counts
 * (the most frequent RT_STATS_RANK_MAX values, the rest counted together).
 * The trainer writes them into every export (statistics.json, covered by
 * model.pb's statistics_crc32c); predict-model stats/validate/show and
 * predictd's monitoring read them. An rt_stats is immutable once made.
 */
#define RT_STATS_BUCKETS 10      /* standard and quantiles histograms */
#define RT_STATS_RANK_MAX 1000   /* values kept in a rank histogram (TFDV's default) */
#define RT_STATS_TOP 20          /* top_values (TFDV's num_top_values) */

typedef enum { RT_STATS_INT = 0, RT_STATS_FLOAT = 1, RT_STATS_STRING = 2 } rt_stats_type;

typedef struct rt_stats_bucket {
    double low, high; /* [low, high); the last finite bucket includes high; low == high:
                         a point bucket (all values equal, or +-Infinity) */
    double count;
} rt_stats_bucket;

typedef struct rt_stats_hist {
    uint64_t num_nan;
    size_t n;
    rt_stats_bucket *b; /* [n] */
} rt_stats_hist;

typedef struct rt_stats_value {
    char *value; /* NUL-terminated (values with a NUL byte are cut there) */
    uint64_t count;
} rt_stats_value;

typedef struct rt_feature_stats {
    char *name;
    rt_stats_type type;
    uint64_t num_non_missing, num_missing;
    /* numeric (type INT or FLOAT); min..median over the non-NaN values */
    uint64_t num_nan, num_zeros;
    double min, max, mean, std_dev, median;
    double quantiles[RT_STATS_BUCKETS + 1]; /* cut points 0, 0.1, ..., 1 */
    rt_stats_hist standard, quantile_hist;
    int approximate;  /* 1: more distinct values than the exact table holds: median,
                         quantiles and histogram counts are within 1% of the value */
    /* strings (type STRING) */
    uint64_t unique;
    int unique_at_least; /* 1: too many distinct values to count: unique is a lower bound */
    double avg_length;
    size_t n_values;
    rt_stats_value *values; /* [n_values] by count, highest first (ties by value) */
    uint64_t other_count;   /* values beyond the list */
} rt_feature_stats;

typedef struct rt_stats {
    uint64_t num_examples;
    size_t n;
    rt_feature_stats *f; /* [n] */
} rt_stats;


void rt_stats_free(rt_stats *s);
/* The feature called name, or NULL. */
const rt_feature_stats *rt_stats_find(const rt_stats *s, const char *name);
/* Baselines (predict-model explain, :explain): a numeric input's median, a
 * string input's most frequent value. RT_ERR_NOTFOUND when s has no such
 * input, no value of it or it is of the other kind. *value lives as long as s. */
RT_WUR rt_status rt_stats_median(const rt_stats *s, const char *name, double *median);
RT_WUR rt_status rt_stats_top_value(const rt_stats *s, const char *name, const char **value);

/* An accumulator of statistics over rows of raw inputs; one thread at a time.
 * Exact integer counts; min, max, histograms and quantiles exact and
 * independent of the order of the rows while a numeric input has at most
 * RT_STATS_EXACT_MAX distinct values (mean and std then too: summed from the
 * sorted distinct values); past that the input switches to a logarithmic
 * sketch (1% relative accuracy) and mean/std are running sums (order may move
 * their last bits). */
#define RT_STATS_EXACT_MAX 65536
typedef struct rt_stats_acc rt_stats_acc;
/* An accumulator for the raw inputs of def's serving signature (the inputs
 * the feature columns read, rt_graph_num_inputs order). NULL: out of memory. */
rt_stats_acc *rt_stats_acc_new(const Predictd__ModelDef *def);
/* One accumulator for explicitly named inputs (types as rt_stats_type). */
rt_stats_acc *rt_stats_acc_new_named(const char *const *names, const rt_stats_type *types,
                                     size_t n);
void rt_stats_acc_free(rt_stats_acc *a);
size_t rt_stats_acc_inputs(const rt_stats_acc *a);
/* Input i's raw column index in def (rt_stats_acc_new), its name and type. */
long rt_stats_acc_column(const rt_stats_acc *a, size_t i);
const char *rt_stats_acc_name(const rt_stats_acc *a, size_t i);
rt_stats_type rt_stats_acc_type(const rt_stats_acc *a, size_t i);
/* One example (call once per row), then its cells: a missing cell, a number
 * (numeric inputs; NaN and +-Infinity counted as such), a string (string
 * inputs; trimmed by the caller as the model would). -1 out of memory. */
int rt_stats_acc_example(rt_stats_acc *a);
int rt_stats_acc_missing(rt_stats_acc *a, size_t i);
int rt_stats_acc_number(rt_stats_acc *a, size_t i, double v);
int rt_stats_acc_string(rt_stats_acc *a, size_t i, const char *s, size_t len);
/* A CSV cell of input i as the trainer reads it: empty or blank = missing;
 * numeric inputs through rt_raw_number (a bad number: RT_ERR_INVALID). */
RT_WUR rt_status rt_stats_acc_cell(rt_stats_acc *a, size_t i, const char *s, size_t len, int trim,
                            rt_err *err);
/* Serialized state (to merge another process's, MPI ranks), and merging one in
 * (same inputs; RT_ERR_FORMAT on bytes that are not). The merged result is
 * the same as one accumulator over both sets of rows (see above for mean/std). */
RT_WUR rt_status rt_stats_acc_save(const rt_stats_acc *a, rt_buf *out);
RT_WUR rt_status rt_stats_acc_merge(rt_stats_acc *a, const void *bytes, size_t len, rt_err *err);
/* The statistics so far (*out malloc-owned: rt_stats_free). */
RT_WUR rt_status rt_stats_acc_finish(const rt_stats_acc *a, rt_stats **out, rt_err *err);

/* statistics.json: TFDV's DatasetFeatureStatisticsList in proto3 JSON
 * (field names as statistics.proto spells them; our extras in custom_stats). */
RT_WUR rt_status rt_stats_write_json(const rt_stats *s, const char *dataset_name, rt_buf *out);
RT_WUR rt_status rt_stats_parse_json(const char *text, size_t len, rt_stats **out, rt_err *err);

/* Distances as TFDV's anomalies/metrics.cc defines them. L-infinity: the
 * largest absolute difference of the two value distributions, each
 * normalised by its own total; *which (may be NULL) the value where it is
 * (a value of a or b, or "" when both are empty). Jensen-Shannon divergence
 * (log base 2, capped at 1): the histograms aligned on the union of their
 * boundaries with counts spread evenly in a bucket, point and infinite
 * buckets and NaN as buckets of their own. -1 when a histogram is empty. */
double rt_stats_linf(const rt_stats_value *a, size_t na, const rt_stats_value *b, size_t nb,
                     const char **which);
double rt_stats_linf_counts(const char *const *names, const double *pa, const double *pb,
                            size_t n, const char **which);
double rt_stats_jsd(const rt_stats_hist *a, const rt_stats_hist *b);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_RT_STATS_H */
