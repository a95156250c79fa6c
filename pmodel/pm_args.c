/*
 * pm_args.c — predict-model's command line below the commands: the
 * settings tables of show, predict, transform, evaluate, explain, stats and
 * validate (rt_settings.c rows: the flags, their --help lines and so the man
 * page, scripts/man.sh, and "did you mean" for a mistyped flag) with the
 * checks between their flags (pm_opts_read), and the helpers every command's
 * flags go through: the reader (pm_args_read), a command's usage error and
 * its --help. convert and batch-predict keep their tables in their own
 * files; the list of every command, the top-level usage and the dispatch
 * are pm_commands.c's, above this file.
 */
#include "pm.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* offsetof(pm_opts, f), refused at compile time unless f has type T */
#define OF(f, T)                                                                               \
    (offsetof(pm_opts, f) + 0 * sizeof(char[_Generic(((pm_opts *)0)->f, T: 1, default: -1)]))

#define STR_ROW(n, f, a, h)                                                                    \
    {.name = n, .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = OF(f, char *), .arg = a,    \
     .help = h}
#define BOOL_ROW(n, f, h)                                                                      \
    {.name = n, .type = RT_SET_BOOL, .where = RT_SET_FLAG | RT_SET_NODEFAULT,                   \
     .offset = OF(f, bool), .help = h}
#define LIST_ROW(n, f, a, h)                                                                   \
    {.name = n, .type = RT_SET_LIST, .where = RT_SET_FLAG, .hi = PM_MAX_LIST,                   \
     .offset = OF(f, rt_setting_list), .arg = a, .help = h}

#define DIR_ROW                                                                                \
    {.name = "dir", .aliases = "model-dir", .type = RT_SET_STR, .where = RT_SET_FLAG,           \
     .offset = OF(dir, char *), .arg = "EXPORT",                                                \
     .help = "the export: a version directory (holding model.pb) or a base directory (its "     \
             "newest version)"}
#define INSTANCES_ROW                                                                          \
    STR_ROW("json-instances", instances, "FILE",                                               \
            "one JSON instance per line, as gcloud ml-engine local predict takes them (blank "  \
            "lines are skipped)")
#define SIGNATURE_ROW(h) STR_ROW("signature_def", signature, "NAME", h)
#define FORMAT_ROW(a, h) STR_ROW("format", format, a, h)
#define DATA_ROW(h) LIST_ROW("data", data, "FILE.csv", h)
#define SKIP_ROW                                                                               \
    STR_ROW("skip-header-lines", skip_header, "N", "lines skipped at the top of each file "    \
                                                   "(default 0)")
#define REPORT_ROW                                                                             \
    STR_ROW("report", report, "REPORT.html",                                                   \
            "also writes a self-contained HTML report (no scripts)")

static const rt_setting SHOW[] = {
    DIR_ROW,
    BOOL_ROW("all", all, "everything (below)"),
    SIGNATURE_ROW("only the signature NAME"),
};

static const rt_setting PREDICT[] = {
    DIR_ROW,
    INSTANCES_ROW,
    FORMAT_ROW("table|json", "table (default): one upper-case column per output (CLASS_IDS "
                             "CLASSES LOGISTIC LOGITS PROBABILITIES ...), one row per instance; "
                             "json: TensorFlow Serving's answer {\"predictions\": [...]}"),
    SIGNATURE_ROW("the signature to run (the default one's otherwise)"),
    STR_ROW("v2-request", v2_request, "FILE",
            "an Open Inference Protocol (KServe v2) infer body instead of --json-instances: "
            "prints the answer predictd sends for it, byte for byte (docs/v2-protocol.md)"),
    STR_ROW("v2-header-length", v2_header, "N",
            "the request's Inference-Header-Content-Length: binary tensors follow the first N "
            "bytes (without it the whole file is JSON)"),
    STR_ROW("model-name", model_name, "NAME",
            "the model_name to answer a --v2-request with (the export's name by default)"),
};

static const rt_setting TRANSFORM[] = {
    DIR_ROW,
    INSTANCES_ROW,
    FORMAT_ROW("text|json", "text (default), or json: one object per line keyed by feature "
                            "column name, {\"ids\": [...]} or {\"values\": [...]}, plus "
                            "\"dnn_input\""),
    BOOL_ROW("leaves", leaves,
             "(BoostedTrees models) adds the leaf each instance reaches in each tree, as node "
             "numbers of model.pb's trees (\"leaves\": [...] in json)"),
};

static const rt_setting EVALUATE[] = {
    DIR_ROW,
    DATA_ROW("a labelled CSV file of the spec's columns (repeatable)"),
    LIST_ROW("slice", slices, "COLUMN[,COLUMN]",
             "metrics per value of COLUMN, or per combination of the COLUMNs (repeatable)"),
    REPORT_ROW,
    FORMAT_ROW("table|json", "table (default): metrics, slices (worst marked *) and tables; "
                             "json: everything as one JSON object, curves included"),
    STR_ROW("batch-size", batch_size, "N",
            "rows per batch (\"loss\" is the mean of batch losses); by default the spec's "
            "eval.batch_size, else 256"),
    SKIP_ROW,
    STR_ROW("importance", importance, "METHOD",
            "global feature importance: the mean |attribution| of each input over the "
            "examples and per slice, each example explained by METHOD (exact, sampled or "
            "gradients; docs/explanations.md)"),
};

static const rt_setting EXPLAIN[] = {
    DIR_ROW,
    INSTANCES_ROW,
    STR_ROW("explanation-spec-override", xai_override, "FILE",
            "a Vertex AI explanationSpecOverride object (method, pathCount or stepCount, "
            "topK, outputIndices, inputBaselines)"),
    STR_ROW("method", xai_method, "METHOD",
            "the method, as an override naming only it: exact, sampled, gradients or tree-shap "
            "(path-dependent TreeSHAP of a tree ensemble's logits: XGBoost's pred_contribs)"),
    STR_ROW("head", xai_head, "NAME",
            "of a model with several heads (TF's MultiHead), the head explained, as the "
            "body's \"head\" (default: the first head)"),
    STR_ROW("json-request", json_request, "FILE",
            "a whole :explain body instead of --json-instances (\"-\" is stdin)"),
    BOOL_ROW("timing", timing, "prints the time taken and the model rows evaluated to stderr"),
    FORMAT_ROW("json|table", "json (default): predictd's :explain answer, byte for byte; "
                             "table: per instance and output, the feature attributions from "
                             "the largest |attribution| down, with the output's value and "
                             "baseline"),
};

static const rt_setting STATS[] = {
    DIR_ROW,
    STR_ROW("spec", spec, "SPEC", "a trainer spec whose columns --data is read in, instead "
                                  "of --dir"),
    DATA_ROW("a CSV file of the model's columns, the trailing label optional (repeatable)"),
    FORMAT_ROW("table|json", "table (default): tables and histograms; json: statistics.json, "
                             "TFDV's DatasetFeatureStatisticsList"),
    SKIP_ROW,
    REPORT_ROW,
};

static const rt_setting VALIDATE[] = {
    DIR_ROW,
    DATA_ROW("a CSV file of the export's columns, the trailing label optional (repeatable)"),
    STR_ROW("thresholds", thresholds, "FILE.json",
            "{\"default_threshold\": 0.3, \"thresholds\": {\"age\": 0.1}} (every threshold is "
            "0.3 without it)"),
    REPORT_ROW,
    FORMAT_ROW("table|json", "the anomalies and distances as text (default) or one JSON "
                             "object"),
    SKIP_ROW,
};

#define N(t) (sizeof t / sizeof t[0])

const pm_command pm_show_command = {
    "show",
    "predict-model show --dir EXPORT [--all | --signature_def NAME]",
    "Without a flag, a summary: model name and version, estimator, head and classes, "
    "serving input function, inputs with their types, signatures (method, outputs), feature "
    "column count, DNN layers or ensemble shape, global step, export time, last evaluation, "
    "tensor and file sizes. --all prints everything: the signatures (inputs and outputs "
    "with dtype, shape and tensor name, method name) as saved_model_cli show --all does, "
    "then the receiver, feature columns, graph, head and training metadata; a BoostedTrees "
    "model also its ensemble (trees, nodes, leaves, depth, inputs) and the feature "
    "importances: per input, its split count and the total gain of its splits, by gain. "
    "With --signature_def only that signature is printed.",
    NULL,
    SHOW,
    N(SHOW),
};

const pm_command pm_predict_command = {
    "predict",
    "predict-model predict --dir EXPORT --json-instances FILE\n"
    "                      [--format table|json] [--signature_def NAME]\n"
    "predict-model predict --dir EXPORT --v2-request FILE\n"
    "                      [--v2-header-length N] [--model-name NAME]",
    "Runs the model on FILE, one JSON instance per line, and prints the predictions; or "
    "answers an Open Inference Protocol request as predictd does. A binary answer's JSON "
    "length goes to stderr as \"Inference-Header-Content-Length: N\".",
    NULL,
    PREDICT,
    N(PREDICT),
};

const pm_command pm_transform_command = {
    "transform",
    "predict-model transform --dir EXPORT --json-instances FILE\n"
    "                        [--format text|json] [--leaves]",
    "Prints, per instance, what the serving input function produced: the ids of each "
    "categorical column (vocabulary, hash, bucketized, crossed), the values of each dense "
    "column (numeric, embedding, indicator) and the DNN input vector.",
    NULL,
    TRANSFORM,
    N(TRANSFORM),
};

const pm_command pm_evaluate_command = {
    "evaluate",
    "predict-model evaluate --dir EXPORT --data FILE.csv [--data FILE.csv]...\n"
    "                       [--slice COLUMN[,COLUMN]...]... [--report REPORT.html]\n"
    "                       [--format table|json] [--batch-size N]\n"
    "                       [--skip-header-lines N] [--importance METHOD]",
    "Evaluates the export on labelled CSV files of the spec's columns (the training data's "
    "format, label included), as TensorFlow Model Analysis does: the trainer's evaluation "
    "metrics (the same code: accuracy, auc, auc_precision_recall, precision, recall, loss, "
    "average_loss, label/mean, prediction/mean, accuracy_baseline, ...) overall and per "
    "slice: --slice gender gives the metrics of each value of column gender, --slice "
    "gender,race of each combination; repeat --slice for more. A binary classifier also "
    "gets the ROC and precision-recall curves, a calibration plot with the expected "
    "calibration error, the confusion matrix and a threshold table; a multi-class one the "
    "confusion matrix. A model of several heads gets each head's metrics over its own label "
    "and weight columns, named <metric>/<head>, and the merged loss, per slice too; its "
    "report has a section per head (no --importance for several heads yet).",
    "docs/evaluation.md defines every metric.",
    EVALUATE,
    N(EVALUATE),
};

const pm_command pm_explain_command = {
    "explain",
    "predict-model explain --dir EXPORT --json-instances FILE\n"
    "                      [--explanation-spec-override FILE | --method METHOD]\n"
    "                      [--head NAME] [--timing] [--format json|table]\n"
    "predict-model explain --dir EXPORT --json-request FILE [--timing]\n"
    "                      [--format json|table]",
    "Explains the model's predictions for the instances of FILE (one JSON instance per "
    "line) and prints the answer predictd's :explain gives, byte for byte: Vertex AI's "
    "{\"explanations\": [...], \"predictions\": [...]}. docs/explanations.md describes the "
    "methods.",
    NULL,
    EXPLAIN,
    N(EXPLAIN),
};

const pm_command pm_stats_command = {
    "stats",
    "predict-model stats (--dir EXPORT | --spec SPEC) [--data FILE.csv]...\n"
    "                    [--format table|json] [--skip-header-lines N]\n"
    "                    [--report REPORT.html]",
    "Prints the statistics of a data set's raw inputs as TensorFlow Data Validation defines "
    "them (docs/data-validation.md): per numeric input count, missing, NaN, zeros, mean, "
    "std_dev, min, median, max, a 10-bucket equal-width histogram and the deciles; per "
    "string input count, missing, unique, average length and the most frequent values. "
    "Without --data, the export's training statistics (statistics.json, written by the "
    "trainer); with --data, those of the CSV files, in the export's columns or in the "
    "columns of the trainer spec SPEC.",
    NULL,
    STATS,
    N(STATS),
};

const pm_command pm_validate_command = {
    "validate",
    "predict-model validate --dir EXPORT --data FILE.csv [--data FILE.csv]...\n"
    "                       [--thresholds FILE.json] [--report REPORT.html]\n"
    "                       [--format table|json] [--skip-header-lines N]",
    "Compares the data set with the export's training statistics, as TensorFlow Data "
    "Validation does (docs/data-validation.md): anomalies by TFDV's names "
    "(ENUM_TYPE_UNEXPECTED_STRING_VALUES, INT_TYPE_BIG_INT, FLOAT_TYPE_SMALL_FLOAT, "
    "FEATURE_TYPE_NOT_PRESENT, SCHEMA_NEW_COLUMN, UNEXPECTED_DATA_TYPE, "
    "FEATURE_TYPE_LOW_FRACTION_PRESENT, FLOAT_TYPE_HAS_NAN, ...) and per feature a distance "
    "against its threshold: L-infinity for string features, Jensen-Shannon divergence for "
    "numeric ones (COMPARATOR_L_INFTY_HIGH, COMPARATOR_JENSEN_SHANNON_DIVERGENCE_HIGH above "
    "it).",
    "Exit status: 0 nothing anomalous, 3 an anomaly (a distance above its threshold is one), "
    "1 an error, 2 bad arguments.",
    VALIDATE,
    N(VALIDATE),
};

/* Appends c's usage lines, the first after first, the others after
 * "       ". */
int pm_put_synopsis(rt_buf *b, const pm_command *c, const char *first)
{
    int r = 0;
    const char *p = c->synopsis;
    for (bool one = true; *p; one = false) {
        size_t w = strcspn(p, "\n");
        r |= rt_buf_printf(b, "%s%.*s\n", one ? first : "       ", (int)w, p);
        p += w + (p[w] == '\n');
    }
    return r;
}

int pm_usage_error(const pm_command *c, const char *fmt, const char *arg)
{
    rt_buf b;
    rt_buf_init(&b);
    int r = rt_buf_printf(&b, "predict-model %s: ", c->name);
    r |= rt_buf_printf(&b, fmt, arg);
    r |= rt_buf_puts(&b, "\n");
    r |= pm_put_synopsis(&b, c, "usage: ") |
         rt_buf_printf(&b, "(predict-model %s --help: every flag)\n", c->name);
    fputs(r ? "predict-model: out of memory\n" : b.data, stderr);
    rt_buf_free(&b);
    return PM_EXIT_USAGE;
}

void pm_command_help(const pm_command *c)
{
    rt_buf b;
    rt_buf_init(&b);
    int r = pm_put_synopsis(&b, c, "usage: ");
    r |= rt_buf_puts(&b, "\n");
    r |= rt_settings_wrap(&b, c->about, 0, 0);
    r |= rt_buf_puts(&b, "flags:\n");
    r |= rt_settings_help(&b, c->flags, c->n_flags, 24, NULL, 0);
    r |= rt_buf_puts(&b, "  -h, --help            this text\n");
    if (c->notes)
        r |= rt_settings_wrap(&b, c->notes, 0, 0);
    fputs(r ? "predict-model: out of memory\n" : b.data, stdout);
    rt_buf_free(&b);
}

int pm_args_read(const pm_command *c, int argc, char **argv, void *dst, bool *help)
{
    rt_err err = {{0}};
    rt_argv a = {.rows = c->flags, .n = c->n_flags, .once = true, .other = rt_settings_argv_help,
                 .ctx = help};
    int next = argc;
    *help = false;
    if (rt_settings_defaults(c->flags, c->n_flags, dst, &err) != RT_OK ||
        rt_settings_argv(&a, argc, argv, dst, NULL, &next, &err) != RT_OK) {
        rt_settings_free(c->flags, c->n_flags, dst);
        return pm_usage_error(c, "%s", err.msg);
    }
    if (next < argc) {
        rt_settings_free(c->flags, c->n_flags, dst);
        return pm_usage_error(c, "unexpected argument \"%s\"", argv[next]);
    }
    return 0;
}

void pm_opts_free(pm_opts *o)
{
    if (o->command)
        rt_settings_free(o->command->flags, o->command->n_flags, o);
}

/* The checks between flags (the table checked each flag alone). */
static const char *check(const pm_opts *o)
{
    const char *cmd = o->cmd;
    int show = !strcmp(cmd, "show"), predict = !strcmp(cmd, "predict"),
        transform = !strcmp(cmd, "transform"), evaluate = !strcmp(cmd, "evaluate"),
        explain = !strcmp(cmd, "explain"), stats = !strcmp(cmd, "stats"),
        validate = !strcmp(cmd, "validate");
    int reads_csv = evaluate || stats || validate;
    if (stats && o->dir && o->spec)
        return "--dir and --spec: give one of them";
    if (stats && o->spec && !o->data.n)
        return "--spec SPEC needs --data FILE.csv";
    if (!o->dir && !(stats && o->spec))
        return stats ? "missing --dir EXPORT (or --spec SPEC)"
                     : "missing --dir EXPORT (or --model-dir EXPORT)";
    if (predict && o->v2_request && o->instances)
        return "--json-instances and --v2-request: give one of them";
    if (predict && !o->v2_request && (o->v2_header || o->model_name))
        return "--v2-header-length and --model-name go with --v2-request";
    if (predict && o->v2_request && (o->format || o->signature))
        return "--v2-request prints the v2 answer: no --format or --signature_def";
    if (predict && !o->instances && !o->v2_request)
        return "missing --json-instances FILE (or --v2-request FILE)";
    if (transform && !o->instances)
        return "missing --json-instances FILE";
    if (explain && !!o->instances == !!o->json_request)
        return "give one of --json-instances FILE and --json-request FILE";
    if (explain && o->xai_method && (o->xai_override || o->json_request))
        return "--method goes with --json-instances and without --explanation-spec-override "
               "(which names the method itself)";
    if (explain && o->xai_method && strcmp(o->xai_method, "exact") &&
        strcmp(o->xai_method, "sampled") && strcmp(o->xai_method, "gradients") &&
        strcmp(o->xai_method, "tree-shap"))
        return "--method: give exact, sampled, gradients or tree-shap";
    if (explain && o->json_request && o->xai_head)
        return "--head goes with --json-instances (a --json-request body names its own "
               "\"head\")";
    if (explain && o->json_request && o->xai_override)
        return "--explanation-spec-override goes with --json-instances (a --json-request body "
               "holds its own)";
    if ((evaluate || validate) && !o->data.n)
        return "missing --data FILE.csv";
    if (show && o->all && o->signature)
        return "--all and --signature_def: give one of them";
    if (o->format && strcmp(o->format, "json") != 0 &&
        !((predict || reads_csv || explain) && !strcmp(o->format, "table")) &&
        !(transform && !strcmp(o->format, "text")))
        return "";
    return NULL;
}

int pm_opts_read(const pm_command *c, int argc, char **argv, pm_opts *o)
{
    memset(o, 0, sizeof *o);
    o->cmd = argv[1];
    bool help = false;
    int rc = pm_args_read(c, argc - 1, argv + 1, o, &help);
    if (rc)
        return rc;
    o->command = c;
    o->help = help;
    if (help)
        return 0;
    const char *bad = check(o);
    if (bad) {
        rc = *bad ? pm_usage_error(c, "%s", bad)
                  : pm_usage_error(c, "unknown --format \"%s\"", o->format);
        pm_opts_free(o);
        return rc;
    }
    return 0;
}
