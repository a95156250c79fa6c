/*
 * pm_args.c — predict-model's command line: the usage and each command's
 * --help text (also the man page's, scripts/man.sh), and the parser that
 * turns argv into a pm_opts (command, flags with --flag VALUE or
 * --flag=VALUE, the checks between them).
 */
#include "pm.h"

#include <stdio.h>
#include <string.h>

static const char USAGE[] =
    "usage: predict-model show --dir EXPORT [--all | --signature_def NAME]\n"
    "       predict-model predict --dir EXPORT --json-instances FILE\n"
    "                             [--format table|json] [--signature_def NAME]\n"
    "       predict-model predict --dir EXPORT --v2-request FILE\n"
    "                             [--v2-header-length N] [--model-name NAME]\n"
    "       predict-model transform --dir EXPORT --json-instances FILE\n"
    "                               [--format text|json] [--leaves]\n"
    "       predict-model evaluate --dir EXPORT --data FILE.csv [--data FILE.csv]...\n"
    "                              [--slice COLUMN[,COLUMN]...]... [--report REPORT.html]\n"
    "                              [--format table|json] [--batch-size N]\n"
    "                              [--skip-header-lines N] [--importance METHOD]\n"
    "       predict-model explain --dir EXPORT --json-instances FILE\n"
    "                             [--explanation-spec-override FILE]\n"
    "       predict-model explain --dir EXPORT --json-request FILE\n"
    "       predict-model convert (--dir EXPORT | --spec SPEC.json) --input FILE...\n"
    "                             --to tfrecord|tfrecord-gzip|csv --output FILE\n"
    "       predict-model batch-predict --dir EXPORT --input FILE... --output-dir DIR\n"
    "                             [--instances-format FMT] [flags: batch-predict --help]\n"
    "       predict-model stats (--dir EXPORT | --spec SPEC) [--data FILE.csv]...\n"
    "                           [--format table|json] [--skip-header-lines N]\n"
    "       predict-model validate --dir EXPORT --data FILE.csv [--data FILE.csv]...\n"
    "                              [--thresholds FILE.json] [--report REPORT.html]\n"
    "                              [--format table|json] [--skip-header-lines N]\n"
    "       predict-model COMMAND --help\n"
    "--model-dir is another name of --dir in every command.\n";

static const char HELP_SHOW[] =
    "usage: predict-model show --dir EXPORT [--all | --signature_def NAME]\n"
    "\n"
    "Prints the export's signatures (inputs and outputs with dtype, shape and\n"
    "Without a flag, a summary: model name and version, estimator, head and\n"
    "classes, serving input function, inputs with their types, signatures\n"
    "(method, outputs), feature column count, DNN layers or ensemble shape,\n"
    "global step, export time, last evaluation, tensor and file sizes.\n"
    "--all prints everything: the signatures (inputs and outputs with dtype,\n"
    "shape and tensor name, method name) as saved_model_cli show --all does,\n"
    "then the receiver, feature columns, graph, head and training metadata;\n"
    "a BoostedTrees model also its ensemble (trees, nodes, leaves, depth,\n"
    "inputs) and the feature importances: per input, its split count and the\n"
    "total gain of its splits, by gain. With --signature_def only that\n"
    "signature is printed.\n"
    "EXPORT is a version directory or a base directory (newest version);\n"
    "--model-dir is another name of --dir.\n";

static const char HELP_PREDICT[] =
    "usage: predict-model predict --dir EXPORT --json-instances FILE\n"
    "                             [--format table|json] [--signature_def NAME]\n"
    "       predict-model predict --dir EXPORT --v2-request FILE\n"
    "                             [--v2-header-length N] [--model-name NAME]\n"
    "\n"
    "Runs the model on FILE, one JSON instance per line (as gcloud ml-engine\n"
    "local predict takes them; blank lines are skipped). --format table\n"
    "(default) prints one upper-case column per output (CLASS_IDS CLASSES\n"
    "LOGISTIC LOGITS PROBABILITIES ...), one row per instance; --format json\n"
    "prints TensorFlow Serving's answer {\"predictions\": [...]}.\n"
    "--v2-request FILE reads an Open Inference Protocol (KServe v2) infer\n"
    "body instead and prints the answer predictd sends for it, byte for byte\n"
    "(docs/v2-protocol.md): --v2-header-length N is the request's\n"
    "Inference-Header-Content-Length (binary tensors follow the first N\n"
    "bytes; without it the whole file is JSON), --model-name the model_name\n"
    "to answer with (the export's name by default). A binary answer's JSON\n"
    "length goes to stderr as \"Inference-Header-Content-Length: N\".\n"
    "--model-dir is another name of --dir.\n";

static const char HELP_EXPLAIN[] =
    "usage: predict-model explain --dir EXPORT --json-instances FILE\n"
    "                             [--explanation-spec-override FILE] [--timing]\n"
    "       predict-model explain --dir EXPORT --json-request FILE [--timing]\n"
    "\n"
    "Explains the model's predictions for the instances of FILE (one JSON\n"
    "instance per line) and prints the answer predictd's :explain gives,\n"
    "byte for byte: Vertex AI's {\"explanations\": [...], \"predictions\":\n"
    "[...]}. --explanation-spec-override FILE holds a Vertex AI\n"
    "explanationSpecOverride object (method, pathCount or stepCount, topK,\n"
    "outputIndices, inputBaselines); --json-request FILE is a whole :explain\n"
    "body instead (\"-\" is stdin). --timing prints the time taken and the\n"
    "model rows evaluated to stderr. docs/explanations.md describes the\n"
    "methods. --model-dir is another name of --dir.\n";

static const char HELP_TRANSFORM[] =
    "usage: predict-model transform --dir EXPORT --json-instances FILE\n"
    "                               [--format text|json] [--leaves]\n"
    "\n"
    "Prints, per instance, what the serving input function produced: the ids\n"
    "of each categorical column (vocabulary, hash, bucketized, crossed), the\n"
    "values of each dense column (numeric, embedding, indicator) and the DNN\n"
    "input vector. --format json prints one object per line keyed by feature\n"
    "column name: {\"ids\": [...]} or {\"values\": [...]}, plus \"dnn_input\".\n"
    "--leaves (BoostedTrees models) adds the leaf each instance reaches in each\n"
    "tree, as node numbers of model.pb's trees (\"leaves\": [...] in json).\n"
    "--model-dir is another name of --dir.\n";

static const char HELP_EVALUATE[] =
    "usage: predict-model evaluate --dir EXPORT --data FILE.csv [--data FILE.csv]...\n"
    "                              [--slice COLUMN[,COLUMN]...]... [--report REPORT.html]\n"
    "                              [--format table|json] [--batch-size N]\n"
    "                              [--skip-header-lines N] [--importance METHOD]\n"
    "\n"
    "Evaluates the export on labelled CSV files of the spec's columns (the\n"
    "training data's format, label included), as TensorFlow Model Analysis\n"
    "does: the trainer's evaluation metrics (the same code: accuracy, auc,\n"
    "auc_precision_recall, precision, recall, loss, average_loss, label/mean,\n"
    "prediction/mean, accuracy_baseline, ...) overall and per slice: --slice\n"
    "gender gives the metrics of each value of column gender, --slice\n"
    "gender,race of each combination; repeat --slice for more. A binary\n"
    "classifier also gets the ROC and precision-recall curves, a calibration\n"
    "plot with the expected calibration error, the confusion matrix and a\n"
    "threshold table; a multi-class one the confusion matrix.\n"
    "  --format table  (default) metrics, slices (worst marked *) and tables\n"
    "  --format json   everything as one JSON object, curves included\n"
    "  --report FILE   also writes a self-contained HTML report (no scripts)\n"
    "  --batch-size N  rows per batch (\"loss\" is the mean of batch losses);\n"
    "                  by default the spec's eval.batch_size, else 256\n"
    "  --skip-header-lines N  lines skipped at the top of each file\n"
    "  --importance METHOD  global feature importance: the mean |attribution|\n"
    "                  of each input over the examples and per slice, each\n"
    "                  example explained by METHOD (exact, sampled or\n"
    "                  gradients; docs/explanations.md)\n"
    "--model-dir is another name of --dir. docs/evaluation.md defines every\n"
    "metric.\n";

static const char HELP_STATS[] =
    "usage: predict-model stats (--dir EXPORT | --spec SPEC) [--data FILE.csv]...\n"
    "                           [--format table|json] [--skip-header-lines N]\n"
    "\n"
    "Prints the statistics of a data set's raw inputs as TensorFlow Data\n"
    "Validation defines them (docs/data-validation.md): per numeric input\n"
    "count, missing, NaN, zeros, mean, std_dev, min, median, max, a 10-bucket\n"
    "equal-width histogram and the deciles; per string input count, missing,\n"
    "unique, average length and the most frequent values. Without --data, the\n"
    "export's training statistics (statistics.json, written by the trainer);\n"
    "with --data, those of the CSV files, in the export's columns or in the\n"
    "columns of the trainer spec SPEC.\n"
    "  --format table  (default) tables and histograms\n"
    "  --format json   statistics.json: TFDV's DatasetFeatureStatisticsList\n"
    "  --skip-header-lines N  lines skipped at the top of each file\n"
    "--model-dir is another name of --dir.\n";

static const char HELP_VALIDATE[] =
    "usage: predict-model validate --dir EXPORT --data FILE.csv [--data FILE.csv]...\n"
    "                              [--thresholds FILE.json] [--report REPORT.html]\n"
    "                              [--format table|json] [--skip-header-lines N]\n"
    "\n"
    "Compares the data set with the export's training statistics, as TensorFlow\n"
    "Data Validation does (docs/data-validation.md): anomalies by TFDV's names\n"
    "(ENUM_TYPE_UNEXPECTED_STRING_VALUES, INT_TYPE_BIG_INT, FLOAT_TYPE_SMALL_FLOAT,\n"
    "FEATURE_TYPE_NOT_PRESENT, SCHEMA_NEW_COLUMN, UNEXPECTED_DATA_TYPE,\n"
    "FEATURE_TYPE_LOW_FRACTION_PRESENT, FLOAT_TYPE_HAS_NAN, ...) and per feature a\n"
    "distance against its threshold: L-infinity for string features,\n"
    "Jensen-Shannon divergence for numeric ones (COMPARATOR_L_INFTY_HIGH,\n"
    "COMPARATOR_JENSEN_SHANNON_DIVERGENCE_HIGH above it).\n"
    "  --thresholds FILE  {\"default_threshold\": 0.3, \"thresholds\": {\"age\": 0.1}}\n"
    "                     (every threshold is 0.3 without it)\n"
    "  --report FILE      also writes a self-contained HTML report (no scripts)\n"
    "  --format table|json  the anomalies and distances as text or one JSON object\n"
    "  --skip-header-lines N  lines skipped at the top of each file\n"
    "Exit status: 0 nothing anomalous, 3 an anomaly (a distance above its\n"
    "threshold is one), 1 an error, 2 bad arguments.\n"
    "--model-dir is another name of --dir.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "predict-model: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", USAGE);
    return PM_EXIT_USAGE;
}

int pm_parse_args(int argc, char **argv, pm_opts *o)
{
    memset(o, 0, sizeof *o);
    if (argc < 2)
        return usage_error("%s", "missing command");
    o->cmd = argv[1];
    if (strcmp(o->cmd, "--help") == 0 || strcmp(o->cmd, "-h") == 0) {
        o->help = 1;
        o->cmd = NULL;
        return 0;
    }
    int show = strcmp(o->cmd, "show") == 0, predict = strcmp(o->cmd, "predict") == 0,
        transform = strcmp(o->cmd, "transform") == 0, evaluate = strcmp(o->cmd, "evaluate") == 0,
        explain = strcmp(o->cmd, "explain") == 0;
    int stats = strcmp(o->cmd, "stats") == 0, validate = strcmp(o->cmd, "validate") == 0;
    int reads_csv = evaluate || stats || validate;
    if (!show && !predict && !transform && !evaluate && !explain && !stats && !validate)
        return usage_error("unknown command \"%s\"", o->cmd);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->help = 1;
            return 0;
        }
        if (show && strcmp(a, "--all") == 0) {
            o->all = 1;
            continue;
        }
        if (transform && strcmp(a, "--leaves") == 0) {
            o->leaves = 1;
            continue;
        }
        if (explain && strcmp(a, "--timing") == 0) {
            o->timing = 1;
            continue;
        }
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        size_t klen = eq ? (size_t)(eq - a) : strlen(a);
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[i + 1];
        const char **slot = NULL;
        const char **list = NULL;
        size_t *count = NULL;
#define KEY(s) (klen == strlen(s) && strncmp(a, s, klen) == 0)
        if (KEY("--dir") || KEY("--model-dir"))
            slot = &o->dir;
        else if ((predict || transform || explain) && KEY("--json-instances"))
            slot = &o->instances;
        else if (predict && KEY("--v2-request"))
            slot = &o->v2_request;
        else if (predict && KEY("--v2-header-length"))
            slot = &o->v2_header;
        else if (predict && KEY("--model-name"))
            slot = &o->model_name;
        else if (!show && !explain && KEY("--format"))
            slot = &o->format;
        else if ((show || predict) && KEY("--signature_def"))
            slot = &o->signature;
        else if ((evaluate || validate) && KEY("--report"))
            slot = &o->report;
        else if (evaluate && KEY("--batch-size"))
            slot = &o->batch_size;
        else if (evaluate && KEY("--importance"))
            slot = &o->importance;
        else if (reads_csv && KEY("--skip-header-lines"))
            slot = &o->skip_header;
        else if (explain && KEY("--json-request"))
            slot = &o->json_request;
        else if (explain && KEY("--explanation-spec-override"))
            slot = &o->xai_override;
        else if (stats && KEY("--spec"))
            slot = &o->spec;
        else if (validate && KEY("--thresholds"))
            slot = &o->thresholds;
        else if (reads_csv && KEY("--data"))
            list = o->data, count = &o->n_data;
        else if (evaluate && KEY("--slice"))
            list = o->slices, count = &o->n_slices;
#undef KEY
        if (!slot && !list)
            return usage_error("unknown option \"%s\"", a);
        if (!val)
            return usage_error("option \"%s\" needs a value", a);
        if (list) {
            if (*count == PM_MAX_LIST)
                return usage_error("option \"%s\" given more than 64 times", a);
            if (!*val)
                return usage_error("option \"%s\" needs a value", a);
            list[(*count)++] = val;
        } else {
            if (*slot)
                return usage_error("option \"%s\" given twice (--model-dir is --dir)", a);
            *slot = val;
        }
        if (!eq)
            i++;
    }
    if (stats && o->dir && o->spec)
        return usage_error("%s", "--dir and --spec: give one of them");
    if (stats && o->spec && !o->n_data)
        return usage_error("%s", "--spec SPEC needs --data FILE.csv");
    if (!o->dir && !(stats && o->spec))
        return usage_error("%s", stats ? "missing --dir EXPORT (or --spec SPEC)"
                                       : "missing --dir EXPORT (or --model-dir EXPORT)");
    if (predict && o->v2_request && o->instances)
        return usage_error("%s", "--json-instances and --v2-request: give one of them");
    if (predict && !o->v2_request && (o->v2_header || o->model_name))
        return usage_error("%s", "--v2-header-length and --model-name go with --v2-request");
    if (predict && o->v2_request && (o->format || o->signature))
        return usage_error("%s", "--v2-request prints the v2 answer: no --format or "
                                 "--signature_def");
    if ((predict && !o->instances && !o->v2_request) || (transform && !o->instances))
        return usage_error("%s", predict ? "missing --json-instances FILE (or --v2-request FILE)"
                                         : "missing --json-instances FILE");
    if (explain && !!o->instances == !!o->json_request)
        return usage_error("%s", "give one of --json-instances FILE and --json-request FILE");
    if (explain && o->json_request && o->xai_override)
        return usage_error("%s", "--explanation-spec-override goes with --json-instances (a "
                                 "--json-request body holds its own)");
    if ((evaluate || validate) && !o->n_data)
        return usage_error("%s", "missing --data FILE.csv");
    if (show && o->all && o->signature)
        return usage_error("%s", "--all and --signature_def: give one of them");
    if (o->format) {
        int ok = strcmp(o->format, "json") == 0 ||
                 ((predict || reads_csv) && strcmp(o->format, "table") == 0) ||
                 (transform && strcmp(o->format, "text") == 0);
        if (!ok)
            return usage_error("unknown --format \"%s\"", o->format);
    }
    return 0;
}

void pm_print_help(const char *cmd)
{
    if (!cmd)
        fputs(USAGE, stdout);
    else if (strcmp(cmd, "show") == 0)
        fputs(HELP_SHOW, stdout);
    else if (strcmp(cmd, "predict") == 0)
        fputs(HELP_PREDICT, stdout);
    else if (strcmp(cmd, "evaluate") == 0)
        fputs(HELP_EVALUATE, stdout);
    else if (strcmp(cmd, "explain") == 0)
        fputs(HELP_EXPLAIN, stdout);
    else if (strcmp(cmd, "stats") == 0)
        fputs(HELP_STATS, stdout);
    else if (strcmp(cmd, "validate") == 0)
        fputs(HELP_VALIDATE, stdout);
    else
        fputs(HELP_TRANSFORM, stdout);
}
