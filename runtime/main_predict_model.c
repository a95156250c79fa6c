/*
 * main_predict_model.c — build/predict-model: inspect an export and predict
 * locally, without a daemon.
 *
 *   predict-model show --dir EXPORT [--all | --signature_def NAME]
 *       a summary (name, version, inputs, signatures, sizes); --all like
 *       `saved_model_cli show --all` plus the feature columns, the graph and
 *       the training metadata; or one signature.
 *   predict-model predict --dir EXPORT --json-instances FILE
 *   predict-model predict --dir EXPORT --v2-request FILE (an Open Inference
 *       Protocol body: prints the answer predictd sends for it)
 *                         [--format table|json] [--signature_def NAME]
 *       like `gcloud ml-engine local predict`: one JSON instance per line.
 *   predict-model transform --dir EXPORT --json-instances FILE
 *                           [--format text|json] [--leaves]
 *       what the serving input function produced for each instance (and,
 *       with --leaves, the leaf it reaches in each tree).
 *   predict-model evaluate --dir EXPORT --data FILE.csv [--slice COLUMN]...
 *                          [--report REPORT.html] [--format table|json]
 *       TensorFlow Model Analysis's report: metrics overall and per slice,
 *       curves, calibration, confusion matrix (runtime/rt_eval.c, rt_report.c).
 * --model-dir is another name of --dir in every command.
 *
 * EXPORT is a version directory (holding model.pb) or a base directory
 * holding versions, in which case the newest version is used.
 * Exit status: 0 ok, 1 model or instance error, 2 bad arguments.
 */
#include "rt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cJSON.h>

#define EXIT_USAGE 2

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
    "                              [--skip-header-lines N]\n"
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
    "                              [--skip-header-lines N]\n"
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
    "--model-dir is another name of --dir. docs/evaluation.md defines every\n"
    "metric.\n";

#define MAX_LIST 64

typedef struct opts {
    const char *cmd;
    const char *dir;
    const char *instances;
    const char *format;
    const char *signature;
    const char *report;
    const char *batch_size;
    const char *skip_header;
    const char *v2_request;  /* predict --v2-request */
    const char *v2_header;   /* predict --v2-header-length */
    const char *model_name;  /* predict --model-name */
    const char *data[MAX_LIST];
    size_t n_data;
    const char *slices[MAX_LIST];
    size_t n_slices;
    int all;
    int help;
    int leaves; /* transform --leaves */
} opts;

/* ------------------------------------------------------------ arguments */

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "predict-model: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", USAGE);
    return EXIT_USAGE;
}

/* Parses argv into o; returns 0, or an exit code (usage printed). */
static int parse_args(int argc, char **argv, opts *o)
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
        transform = strcmp(o->cmd, "transform") == 0, evaluate = strcmp(o->cmd, "evaluate") == 0;
    if (!show && !predict && !transform && !evaluate)
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
        else if ((predict || transform) && KEY("--json-instances"))
            slot = &o->instances;
        else if (predict && KEY("--v2-request"))
            slot = &o->v2_request;
        else if (predict && KEY("--v2-header-length"))
            slot = &o->v2_header;
        else if (predict && KEY("--model-name"))
            slot = &o->model_name;
        else if (!show && KEY("--format"))
            slot = &o->format;
        else if ((show || predict) && KEY("--signature_def"))
            slot = &o->signature;
        else if (evaluate && KEY("--report"))
            slot = &o->report;
        else if (evaluate && KEY("--batch-size"))
            slot = &o->batch_size;
        else if (evaluate && KEY("--skip-header-lines"))
            slot = &o->skip_header;
        else if (evaluate && KEY("--data"))
            list = o->data, count = &o->n_data;
        else if (evaluate && KEY("--slice"))
            list = o->slices, count = &o->n_slices;
#undef KEY
        if (!slot && !list)
            return usage_error("unknown option \"%s\"", a);
        if (!val)
            return usage_error("option \"%s\" needs a value", a);
        if (list) {
            if (*count == MAX_LIST)
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
    if (!o->dir)
        return usage_error("%s", "missing --dir EXPORT (or --model-dir EXPORT)");
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
    if (evaluate && !o->n_data)
        return usage_error("%s", "missing --data FILE.csv");
    if (show && o->all && o->signature)
        return usage_error("%s", "--all and --signature_def: give one of them");
    if (o->format) {
        int ok = strcmp(o->format, "json") == 0 ||
                 ((predict || evaluate) && strcmp(o->format, "table") == 0) ||
                 (transform && strcmp(o->format, "text") == 0);
        if (!ok)
            return usage_error("unknown --format \"%s\"", o->format);
    }
    return 0;
}

/* ---------------------------------------------------------- model, file */

/* dir itself when it holds model.pb, else its newest version subdirectory.
 * OUT: *path malloc'd. */
static rt_status resolve_export(const char *dir, char **path, rt_err *err)
{
    struct stat sb;
    rt_buf b;
    rt_buf_init(&b);
    if (rt_buf_printf(&b, "%s/model.pb", dir) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    int direct = stat(b.data, &sb) == 0;
    rt_buf_free(&b);
    /* a TensorFlow SavedModel's version directory: rt_model_open says what it is */
    rt_buf_init(&b);
    if (!direct && rt_buf_printf(&b, "%s/saved_model.pb", dir) == 0)
        direct = stat(b.data, &sb) == 0;
    rt_buf_free(&b);
    if (direct) {
        *path = strdup(dir);
        return *path ? RT_OK : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    DIR *d = opendir(dir);
    if (!d)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", dir, strerror(errno));
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t v;
        if (rt_version_parse(e->d_name, &v) && v > best)
            best = v;
    }
    closedir(d);
    if (best < 0)
        return rt_err_set(err, RT_ERR_NOTFOUND, "%s: no model.pb and no version directory",
                          dir);
    rt_buf_init(&b);
    if (rt_buf_printf(&b, "%s/%lld", dir, (long long)best) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    *path = b.data;
    return RT_OK;
}

/* Opens the export dir names (resolve_export); with where != NULL, *where
 * gets the version directory opened (malloc'd) when it succeeds. */
static rt_model *open_model_at(const char *dir, char **where)
{
    rt_err err = {{0}};
    char *path = NULL;
    rt_model *m = NULL;
    rt_status st = resolve_export(dir, &path, &err);
    if (st == RT_OK)
        st = rt_model_open(path, &m, &err);
    if (st != RT_OK)
        fprintf(stderr, "predict-model: %s\n", err.msg);
    if (m && where) {
        *where = path;
        path = NULL;
    }
    free(path);
    return m;
}

static rt_model *open_model(const char *dir)
{
    return open_model_at(dir, NULL);
}

/* The instances of a --json-instances file: the request body and, per
 * instance, its line number in the file. */
typedef struct instances {
    rt_buf body;     /* {"signature_name"?, "instances": [line, line, ...]} */
    size_t count;
    size_t *lineno;  /* [count] */
    size_t *start;   /* [count] offset of the instance in body */
    size_t *len;     /* [count] */
} instances;

static void instances_free(instances *in)
{
    rt_buf_free(&in->body);
    free(in->lineno);
    free(in->start);
    free(in->len);
}

static int instances_push(instances *in, size_t cap_needed, size_t lineno, size_t start,
                          size_t len)
{
    size_t *a = realloc(in->lineno, cap_needed * sizeof *a);
    if (!a)
        return -1;
    in->lineno = a;
    size_t *b = realloc(in->start, cap_needed * sizeof *b);
    if (!b)
        return -1;
    in->start = b;
    size_t *c = realloc(in->len, cap_needed * sizeof *c);
    if (!c)
        return -1;
    in->len = c;
    in->lineno[in->count] = lineno;
    in->start[in->count] = start;
    in->len[in->count] = len;
    in->count++;
    return 0;
}

/* Reads FILE (one JSON instance per line, blank lines skipped; "-" is
 * stdin) into *in. Returns 0 or -1 (message printed). */
static int read_instances(const char *file, const char *signature, instances *in)
{
    memset(in, 0, sizeof *in);
    rt_buf_init(&in->body);
    FILE *fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!fp) {
        fprintf(stderr, "predict-model: %s: %s\n", file, strerror(errno));
        return -1;
    }
    rt_buf *body = &in->body;
    int rc = rt_buf_puts(body, "{");
    if (signature) {
        rc |= rt_buf_puts(body, "\"signature_name\": ");
        rc |= rt_buf_json_string(body, signature, strlen(signature));
        rc |= rt_buf_puts(body, ", ");
    }
    rc |= rt_buf_puts(body, "\"instances\": [");
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    while (rc == 0 && (n = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        size_t k = 0;
        while (k < (size_t)n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\n' ||
                                 line[k] == '\r'))
            k++;
        if (k == (size_t)n)
            continue;
        if (in->count)
            rc |= rt_buf_puts(body, ",\n");
        size_t start = body->len;
        rc |= rt_buf_append(body, line, (size_t)n);
        rc |= instances_push(in, in->count + 1, lineno, start, (size_t)n);
    }
    int read_err = ferror(fp);
    free(line);
    if (fp != stdin)
        fclose(fp);
    rc |= rt_buf_puts(body, "]}");
    if (read_err) {
        fprintf(stderr, "predict-model: %s: read error\n", file);
        return -1;
    }
    if (rc) {
        fprintf(stderr, "predict-model: out of memory\n");
        return -1;
    }
    return 0;
}

/* Prints a request error as FILE:LINE: message, finding the line from the
 * message's instances[k], or (for a JSON syntax error) by parsing each line
 * on its own. */
static void report_error(const char *file, const rt_graph *g, const instances *in,
                         const char *msg)
{
    unsigned long k = 0;
    if (sscanf(msg, "instances[%lu]", &k) == 1 && k < in->count) {
        fprintf(stderr, "predict-model: %s:%zu: %s\n", file, in->lineno[k], msg);
        return;
    }
    rt_ctx *c = rt_ctx_new();
    for (size_t i = 0; c && i < in->count; i++) {
        rt_buf one;
        rt_buf_init(&one);
        rt_buf_puts(&one, "{\"instances\": [");
        rt_buf_append(&one, in->body.data + in->start[i], in->len[i]);
        rt_buf_puts(&one, "]}");
        rt_err err = {{0}};
        int columnar = 0;
        const Predictd__SignatureDef *sig = NULL;
        rt_status st = one.data ? rt_json_parse_predict(g, one.data, one.len, NULL, c,
                                                        &columnar, &sig, &err)
                                : RT_ERR_NOMEM;
        rt_buf_free(&one);
        if (st != RT_OK && strstr(err.msg, "not valid JSON")) {
            fprintf(stderr, "predict-model: %s:%zu: not valid JSON\n", file, in->lineno[i]);
            rt_ctx_free(c);
            return;
        }
    }
    rt_ctx_free(c);
    fprintf(stderr, "predict-model: %s: %s\n", file, msg);
}

/* ------------------------------------------------------------------ show */

/* Indentation as saved_model_cli's: `ind` spaces before the headers. */
static void print_tensor(int ind, const char *kind, const Predictd__TensorSpec *t)
{
    printf("%*s%s['%s'] tensor_info:\n", ind + 2, "", kind, t->name);
    printf("%*sdtype: %s\n", ind + 6, "", rt_dtype_name(t->dtype));
    printf("%*sshape: (", ind + 6, "");
    for (size_t d = 0; d < t->n_shape; d++)
        printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    printf(")\n");
    printf("%*sname: %s:0\n", ind + 6, "", t->name);
}

static void print_signature(int ind, const Predictd__SignatureDef *s)
{
    printf("%*sThe given SavedModel SignatureDef contains the following input(s):\n", ind, "");
    for (size_t k = 0; k < s->n_inputs; k++)
        print_tensor(ind, "inputs", s->inputs[k]);
    printf("%*sThe given SavedModel SignatureDef contains the following output(s):\n", ind, "");
    for (size_t k = 0; k < s->n_outputs; k++)
        print_tensor(ind, "outputs", s->outputs[k]);
    printf("%*sMethod name is: %s\n", ind, "", s->method_name);
}

/* The longest feature column name (for aligned listings). */
static int name_width(const rt_graph *g)
{
    size_t w = 0;
    for (size_t c = 0; c < g->n_fcols; c++)
        if (strlen(g->fcols[c].def->name) > w)
            w = strlen(g->fcols[c].def->name);
    return w > 64 ? 64 : (int)w;
}

static void print_column(const rt_graph *g, size_t c)
{
    const rt_fcol *f = &g->fcols[c];
    const rt_fc_kind *k = rt_fc_kind_of(f->type);
    char about[1024] = "";
    if (k)
        k->describe(f->def, about, sizeof about);
    printf("  %-*s  %s %s", name_width(g), f->def->name, rt_column_kind_name(f->type), about);
    if (f->num_buckets > 0)
        printf(" buckets=%lld", (long long)f->num_buckets);
    printf("\n");
}

/* The ensemble's shape, inputs and feature importances. */
static int print_trees(const rt_graph *g)
{
    const Predictd__TreeEnsemble *te = g->def->graph->trees;
    rt_trees_shape sh;
    rt_trees_importance *imp = NULL;
    rt_err err = {{0}};
    if (rt_trees_describe(g, &sh, &imp, &err) != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        return 1;
    }
    printf("  trees: %zu, nodes %zu (%zu leaves), depth at most %zu, bias [", sh.trees, sh.nodes,
           sh.leaves, sh.max_depth);
    for (size_t k = 0; k < te->n_bias; k++)
        printf("%s%.9g", k ? ", " : "", te->bias[k]);
    printf("]\n  inputs:");
    for (size_t k = 0; k < te->n_inputs; k++) {
        const Predictd__TreeInput *in = te->inputs[k];
        if (in->num_categories)
            printf(" %s(%u categories)", in->column, in->num_categories);
        else
            printf(" %s(numeric, %zu bins)", in->column, in->n_bin_upper);
    }
    int w = 6;
    for (size_t k = 0; k < te->n_inputs; k++)
        if ((int)strlen(imp[k].column) > w)
            w = (int)strlen(imp[k].column);
    printf("\n  feature importances (by total gain):\n    %-*s  %8s  %14s\n", w, "input",
           "splits", "gain");
    for (size_t k = 0; k < te->n_inputs; k++)
        printf("    %-*s  %8llu  %14.6g\n", w, imp[k].column, (unsigned long long)imp[k].splits,
               imp[k].gain);
    free(imp);
    return 0;
}

static const char *const RECEIVERS[] = {"JSON features", "CSV row (csv_row)",
                                         "serialized tf.Example (example_proto)"};
static const char *const HEADS[] = {"binary classification", "multi-class classification",
                                    "regression"};

/* A byte count as "4163588 bytes (4.0 MiB)". */
static void print_bytes(unsigned long long n)
{
    if (n >= 1024ull * 1024)
        printf("%llu bytes (%.1f MiB)", n, (double)n / (1024.0 * 1024.0));
    else if (n >= 1024)
        printf("%llu bytes (%.1f KiB)", n, (double)n / 1024.0);
    else
        printf("%llu bytes", n);
}

/* show without --all: what a user needs to call the model and to know which
 * one it is, one line per item; --all prints everything. */
static int show_summary(const rt_model *m, const char *path)
{
    const Predictd__ModelDef *def = rt_model_def(m);
    const rt_graph *g = rt_model_graph(m);
    const Predictd__Graph *gd = def->graph;
    const char *slash = strrchr(path, '/');
    const char *version = slash && slash[1] ? slash + 1 : path;
    printf("Model: %s, version %s (%s)\n", def->model_name, version, path);
    printf("Estimator: %s\n", gd->estimator);
    printf("Head: %s", g->head <= 2 ? HEADS[g->head] : "unknown");
    if (g->n_classes) {
        printf(", classes [");
        for (size_t k = 0; k < g->n_classes; k++)
            printf("%s\"%s\"", k ? ", " : "", rt_graph_class_name(g, k));
        printf("]");
    }
    printf("\nServing input function: %s\n",
           def->receiver <= 2 ? RECEIVERS[def->receiver] : "unknown");
    printf("Inputs (%zu):", rt_graph_num_inputs(g));
    for (size_t i = 0; i < rt_graph_num_inputs(g); i++)
        printf(" %s(%s)", rt_graph_input_name(g, i), rt_dtype_name(rt_graph_input_dtype(g, i)));
    printf("\nSignatures (%zu):\n", def->n_signatures);
    for (size_t k = 0; k < def->n_signatures; k++) {
        const Predictd__SignatureDef *sg = def->signatures[k];
        printf("  %-16s %s, %zu input(s) -> ", sg->name, sg->method_name, sg->n_inputs);
        for (size_t j = 0; j < sg->n_outputs; j++)
            printf("%s%s", j ? " " : "", sg->outputs[j]->name);
        printf("\n");
    }
    printf("Feature columns: %zu", g->n_fcols);
    if (gd->n_linear_columns || gd->n_dnn_columns)
        printf(" (linear part %zu, dnn part %zu)", gd->n_linear_columns, gd->n_dnn_columns);
    printf("\n");
    if (g->n_layers) {
        printf("DNN: input dimension %zu, layers", g->dnn_dim);
        for (size_t l = 0; l < g->n_layers; l++)
            printf(" %zu", g->layers[l].out);
        printf(" (last = logits)\n");
    }
    if (g->trees) {
        rt_trees_shape sh;
        rt_trees_importance *imp = NULL;
        rt_err err = {{0}};
        if (rt_trees_describe(g, &sh, &imp, &err) != RT_OK) {
            fprintf(stderr, "predict-model: %s\n", err.msg);
            return 1;
        }
        free(imp);
        printf("Ensemble: trees: %zu, nodes %zu (%zu leaves), depth at most %zu\n", sh.trees,
               sh.nodes, sh.leaves, sh.max_depth);
    }
    const Predictd__TrainingInfo *t = def->training;
    if (t) {
        printf("Training: global_step: %lld", (long long)t->global_step);
        if (t->export_time) {
            time_t et = (time_t)t->export_time;
            struct tm tm;
            char when[64];
            if (gmtime_r(&et, &tm) && strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm))
                printf(", exported %s", when);
        }
        if (t->producer && *t->producer)
            printf(" by %s", t->producer);
        printf("\n");
        if (t->n_eval_metrics) {
            printf("Last evaluation:");
            for (size_t k = 0; k < t->n_eval_metrics; k++)
                if (strcmp(t->eval_metrics[k]->name, "global_step") != 0)
                    printf(" %s %.6g", t->eval_metrics[k]->name, t->eval_metrics[k]->value);
            printf("\n");
        }
    }
    unsigned long long params = 0;
    for (size_t k = 0; k < def->n_tensors; k++)
        params += def->tensors[k]->length / 4;
    struct stat sb;
    char pb[4200];
    snprintf(pb, sizeof pb, "%s/model.pb", path);
    printf("Size: %zu tensors, %llu parameters; variables.bin ", def->n_tensors, params);
    print_bytes((unsigned long long)def->variables_size);
    if (stat(pb, &sb) == 0) {
        printf(", model.pb ");
        print_bytes((unsigned long long)sb.st_size);
    }
    printf("\n(predict-model show --all: every signature's tensors, the feature columns, the "
           "graph and all metadata)\n");
    return 0;
}

static int cmd_show(const opts *o)
{
    char *path = NULL;
    rt_model *m = open_model_at(o->dir, &path);
    if (!m)
        return 1;
    if (!o->all && !o->signature) {
        int rc = show_summary(m, path);
        free(path);
        rt_model_close(m);
        return rc;
    }
    free(path);
    const Predictd__ModelDef *def = rt_model_def(m);
    const rt_graph *g = rt_model_graph(m);
    if (o->signature) {
        const Predictd__SignatureDef *sig = NULL;
        rt_err err = {{0}};
        rt_status st = rt_json_find_signature(def, o->signature, &sig, &err);
        if (st != RT_OK || !sig) {
            fprintf(stderr, "predict-model: %s\n",
                    st != RT_OK ? err.msg : "the model lists no signatures");
            rt_model_close(m);
            return 1;
        }
        print_signature(0, sig);
        rt_model_close(m);
        return 0;
    }
    printf("MetaGraphDef with tag-set: 'serve' contains the following SignatureDefs:\n");
    for (size_t k = 0; k < def->n_signatures; k++) {
        printf("\nsignature_def['%s']:\n", def->signatures[k]->name);
        print_signature(2, def->signatures[k]);
    }
    printf("\nModel: %s (export format %u)\n", def->model_name, def->format_version);
    printf("Serving input function: %s\n",
           def->receiver <= 2 ? RECEIVERS[def->receiver] : "unknown");
    printf("Raw inputs:");
    for (size_t i = 0; i < rt_graph_num_inputs(g); i++)
        printf(" %s(%s)", rt_graph_input_name(g, i), rt_dtype_name(rt_graph_input_dtype(g, i)));
    printf("\nFeature columns:\n");
    for (size_t c = 0; c < g->n_fcols; c++)
        print_column(g, c);
    const Predictd__Graph *gd = def->graph;
    printf("Estimator: %s, logits_dimension %u\n", gd->estimator, gd->logits_dimension);
    if (gd->n_linear_columns) {
        printf("  linear_feature_columns:");
        for (size_t k = 0; k < gd->n_linear_columns; k++)
            printf(" %s", gd->linear_columns[k]);
        printf("\n");
    }
    if (g->n_layers) {
        printf("  dnn_feature_columns:");
        for (size_t k = 0; k < gd->n_dnn_columns; k++)
            printf(" %s", gd->dnn_columns[k]);
        printf("\n  dnn input dimension %zu, layers:", g->dnn_dim);
        for (size_t l = 0; l < g->n_layers; l++)
            printf(" %zu", g->layers[l].out);
        printf(" (last = logits)\n");
    }
    if (g->trees && print_trees(g) != 0) {
        rt_model_close(m);
        return 1;
    }
    printf("Head: %s", g->head <= 2 ? HEADS[g->head] : "unknown");
    if (g->n_classes) {
        printf(", classes [");
        for (size_t k = 0; k < g->n_classes; k++)
            printf("%s\"%s\"", k ? ", " : "", rt_graph_class_name(g, k));
        printf("]");
    }
    printf("\n");
    const Predictd__TrainingInfo *t = def->training;
    if (t) {
        printf("Training:\n  global_step: %lld\n", (long long)t->global_step);
        if (t->export_time)
            printf("  export_time: %lld\n", (long long)t->export_time);
        if (t->producer && *t->producer)
            printf("  producer: %s\n", t->producer);
        for (size_t k = 0; k < t->n_eval_metrics; k++)
            printf("  eval %s: %.9g\n", t->eval_metrics[k]->name, t->eval_metrics[k]->value);
    }
    printf("Tensors: %zu, variables.bin %llu bytes\n", def->n_tensors,
           (unsigned long long)def->variables_size);
    rt_model_close(m);
    return 0;
}

/* --------------------------------------------------------------- predict */

/* Appends v as compact JSON text: numbers shortest, strings quoted. */
static int put_cell(rt_buf *b, const cJSON *v)
{
    if (cJSON_IsArray(v)) {
        int rc = rt_buf_puts(b, "[");
        for (const cJSON *e = v->child; e; e = e->next) {
            rc |= put_cell(b, e);
            if (e->next)
                rc |= rt_buf_puts(b, ", ");
        }
        return rc | rt_buf_puts(b, "]");
    }
    if (cJSON_IsNumber(v))
        return rt_buf_json_double(b, v->valuedouble);
    if (cJSON_IsString(v))
        return rt_buf_json_string(b, v->valuestring, strlen(v->valuestring));
    char *s = cJSON_PrintUnformatted(v);
    int rc = rt_buf_puts(b, s ? s : "?");
    free(s);
    return rc;
}

/* Prints {"predictions": [...]} as a table: one upper-case column per
 * output, one row per instance. */
static int print_table(const char *answer)
{
    cJSON *j = cJSON_Parse(answer);
    const cJSON *preds = cJSON_GetObjectItemCaseSensitive(j, "predictions");
    if (!cJSON_IsArray(preds)) {
        /* NaN tokens are not JSON cJSON reads: fall back to the JSON text. */
        printf("%s\n", answer);
        cJSON_Delete(j);
        return 0;
    }
    size_t n = (size_t)cJSON_GetArraySize(preds);
    const cJSON *first = preds->child;
    size_t ncol = 0;
    int bare = first && !cJSON_IsObject(first);
    if (bare)
        ncol = 1;
    else if (first)
        ncol = (size_t)cJSON_GetArraySize(first);
    rt_buf *cells = calloc((n + 1) * (ncol ? ncol : 1), sizeof *cells);
    size_t *w = calloc(ncol ? ncol : 1, sizeof *w);
    int rc = (!cells || !w) ? -1 : 0;
    for (size_t k = 0; rc == 0 && k < ncol; k++) {
        rt_buf *h = &cells[k];
        rt_buf_init(h);
        const char *name = bare ? "PREDICTIONS" : cJSON_GetArrayItem(first, (int)k)->string;
        for (const char *p = name; *p; p++) {
            char ch = (*p >= 'a' && *p <= 'z') ? (char)(*p - 'a' + 'A') : *p;
            rc |= rt_buf_append(h, &ch, 1);
        }
    }
    size_t i = 0;
    for (const cJSON *row = preds->child; rc == 0 && row; row = row->next, i++) {
        for (size_t k = 0; k < ncol; k++) {
            rt_buf *c = &cells[(i + 1) * ncol + k];
            rt_buf_init(c);
            const cJSON *v = bare ? row : cJSON_GetArrayItem(row, (int)k);
            rc |= v ? put_cell(c, v) : rt_buf_puts(c, "");
        }
    }
    for (size_t r = 0; rc == 0 && r <= n; r++)
        for (size_t k = 0; k < ncol; k++)
            if (cells[r * ncol + k].len > w[k])
                w[k] = cells[r * ncol + k].len;
    for (size_t r = 0; rc == 0 && r <= n; r++) {
        for (size_t k = 0; k < ncol; k++) {
            const rt_buf *c = &cells[r * ncol + k];
            if (k + 1 < ncol)
                printf("%-*s  ", (int)w[k], c->data ? c->data : "");
            else
                printf("%s", c->data ? c->data : "");
        }
        printf("\n");
    }
    if (cells)
        for (size_t r = 0; r < (n + 1) * ncol; r++)
            rt_buf_free(&cells[r]);
    free(cells);
    free(w);
    cJSON_Delete(j);
    if (rc)
        fprintf(stderr, "predict-model: out of memory\n");
    return rc ? 1 : 0;
}

/* predict --v2-request: the answer predictd sends for an infer body. */
static int cmd_predict_v2(const opts *o)
{
    int ret = 1;
    char *body = NULL, *path = NULL;
    size_t len = 0, hlen = RT_V2_NO_HEADER;
    rt_buf out;
    rt_buf_init(&out);
    rt_ctx *c = NULL;
    rt_model *m = NULL;
    rt_err err = {{0}};
    if (o->v2_header) {
        char *end = NULL;
        unsigned long long n = strtoull(o->v2_header, &end, 10);
        if (!*o->v2_header || *end || o->v2_header[0] == '-' || n >= RT_V2_FIND_HEADER) {
            fprintf(stderr, "predict-model: --v2-header-length \"%s\" is not a number of "
                            "bytes\n", o->v2_header);
            return EXIT_USAGE;
        }
        hlen = (size_t)n;
    }
    rt_status st = resolve_export(o->dir, &path, &err);
    if (st == RT_OK)
        st = rt_model_open(path, &m, &err);
    if (st != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        goto out;
    }
    /* the version predictd would report: the export directory's name */
    const char *base = strrchr(path, '/');
    int64_t version = -1;
    if (!rt_version_parse(base ? base + 1 : path, &version))
        version = -1;
    if ((st = rt_read_file(AT_FDCWD, o->v2_request, (size_t)1 << 31, RT_READ_ANY_FILE, &body,
                           &len, &err)) != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        goto out;
    }
    if (!(c = rt_ctx_new())) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    st = rt_v2_handle(m, o->model_name, version, body, len, hlen, NULL, c, &out, &err);
    if (st != RT_OK) {
        fprintf(stderr, "predict-model: %s: %s\n", o->v2_request, err.msg);
        goto out;
    }
    if (rt_v2_answer_header_len(c))
        fprintf(stderr, "Inference-Header-Content-Length: %zu\n", rt_v2_answer_header_len(c));
    if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(stderr, "predict-model: writing the answer: %s\n", strerror(errno));
        goto out;
    }
    ret = 0;
out:
    rt_buf_free(&out);
    rt_ctx_free(c);
    rt_model_close(m);
    free(body);
    free(path);
    return ret;
}

static int cmd_predict(const opts *o)
{
    if (o->v2_request)
        return cmd_predict_v2(o);
    int ret = 1;
    rt_buf out;
    rt_buf_init(&out);
    instances in;
    memset(&in, 0, sizeof in);
    rt_ctx *c = NULL;
    rt_model *m = open_model(o->dir);
    if (!m)
        goto out;
    if (read_instances(o->instances, o->signature, &in) != 0)
        goto out;
    c = rt_ctx_new();
    if (!c) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    rt_err err = {{0}};
    rt_json_params p = rt_json_default_params();
    if (in.count > p.max_instances)
        p.max_instances = in.count;
    rt_status st = rt_json_handle(m, RT_METHOD_PREDICT, in.body.data, in.body.len, &p, c, &out,
                                  &err);
    if (st != RT_OK) {
        report_error(o->instances, rt_model_graph(m), &in, err.msg);
        goto out;
    }
    if (o->format && strcmp(o->format, "json") == 0) {
        printf("%s\n", out.data);
        ret = 0;
    } else {
        ret = print_table(out.data);
    }
out:
    rt_ctx_free(c);
    rt_model_close(m);
    instances_free(&in);
    rt_buf_free(&out);
    return ret;
}

/* ------------------------------------------------------------- transform */

static void print_floats(rt_buf *b, const float *v, size_t n)
{
    rt_buf_puts(b, "[");
    for (size_t k = 0; k < n; k++) {
        if (k)
            rt_buf_puts(b, ", ");
        rt_buf_json_float(b, v[k]);
    }
    rt_buf_puts(b, "]");
}

/* [id, ...], or [[id, weight], ...] for a weighted column's ids. */
static void print_ids(rt_buf *b, const rt_ids *ids, size_t i)
{
    rt_buf_puts(b, "[");
    for (uint32_t k = ids->offsets[i]; k < ids->offsets[i + 1]; k++) {
        if (k > ids->offsets[i])
            rt_buf_puts(b, ", ");
        if (!ids->weights) {
            rt_buf_printf(b, "%lld", (long long)ids->ids[k]);
            continue;
        }
        rt_buf_printf(b, "[%lld, ", (long long)ids->ids[k]);
        rt_buf_json_float(b, ids->weights[k]);
        rt_buf_puts(b, "]");
    }
    rt_buf_puts(b, "]");
}

static int cmd_transform(const opts *o)
{
    int ret = 1;
    rt_buf line;
    rt_buf_init(&line);
    instances in;
    memset(&in, 0, sizeof in);
    rt_ctx *c = NULL;
    float *x = NULL;
    uint32_t *leaves = NULL;
    rt_model *m = open_model(o->dir);
    if (!m)
        goto out;
    if (read_instances(o->instances, NULL, &in) != 0)
        goto out;
    if (!(c = rt_ctx_new())) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    const rt_graph *g = rt_model_graph(m);
    rt_err err = {{0}};
    rt_json_params p = rt_json_default_params();
    if (in.count > p.max_instances)
        p.max_instances = in.count;
    int columnar = 0;
    const Predictd__SignatureDef *sig = NULL;
    rt_status st = rt_json_parse_predict(g, in.body.data, in.body.len, &p, c, &columnar, &sig,
                                         &err);
    if (st == RT_OK)
        st = rt_transform(g, c->batch, &c->features, &err);
    if (st != RT_OK) {
        report_error(o->instances, g, &in, err.msg);
        goto out;
    }
    int json = o->format && strcmp(o->format, "json") == 0;
    const rt_features *f = &c->features;
    size_t n_trees = rt_trees_count(g);
    if (o->leaves) {
        if (!n_trees) {
            fprintf(stderr, "predict-model: --leaves: the model has no trees\n");
            goto out;
        }
        x = malloc(f->n * rt_trees_gather_width(g->trees) * sizeof *x + 1);
        leaves = malloc(f->n * n_trees * sizeof *leaves + 1);
        if (!x || !leaves) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        if (rt_trees_leaves(g, f, x, leaves, &err) != RT_OK) {
            fprintf(stderr, "predict-model: %s\n", err.msg);
            goto out;
        }
    }
    if (!json && f->dnn_input) {
        /* Where each DNN column sits in dnn_input: name@offset(+width). */
        const size_t *cols, *off, *wid;
        size_t total = 0, nd = rt_graph_dnn_layout(g, &cols, &off, &wid, &total);
        printf("dnn_input layout (%zu values, columns sorted by name):", total);
        for (size_t k = 0; k < nd; k++) {
            printf(" %s@%zu", g->fcols[cols[k]].def->name, off[k]);
            if (wid[k] > 1)
                printf("+%zu", wid[k]);
        }
        printf("\n");
    }
    for (size_t i = 0; i < f->n; i++) {
        rt_buf_reset(&line);
        if (json)
            rt_buf_puts(&line, "{");
        else
            rt_buf_printf(&line, "instance %zu:\n", i);
        for (size_t col = 0; col < g->n_fcols && col < f->n_columns; col++) {
            const char *name = g->fcols[col].def->name;
            int is_ids = f->ids && f->ids[col].offsets;
            if (json) {
                if (col)
                    rt_buf_puts(&line, ", ");
                rt_buf_json_string(&line, name, strlen(name));
                rt_buf_puts(&line, is_ids ? ": {\"ids\": " : ": {\"values\": ");
            } else {
                rt_buf_printf(&line, "  %-*s  %-6s ", name_width(g), name,
                              is_ids ? "ids" : "values");
            }
            if (is_ids)
                print_ids(&line, &f->ids[col], i);
            else if (f->values && f->values[col])
                print_floats(&line, f->values[col] + i * f->width[col], f->width[col]);
            else
                rt_buf_puts(&line, "[]");
            rt_buf_puts(&line, json ? "}" : "\n");
        }
        if (f->dnn_input) {
            rt_buf_puts(&line, json ? ", \"dnn_input\": " : "  dnn_input ");
            if (!json)
                rt_buf_printf(&line, "(dim %zu) ", f->dnn_dim);
            print_floats(&line, f->dnn_input + i * f->dnn_dim, f->dnn_dim);
            if (!json)
                rt_buf_puts(&line, "\n");
        }
        if (o->leaves) {
            rt_buf_puts(&line, json ? ", \"leaves\": [" : "  leaves [");
            for (size_t t = 0; t < n_trees; t++)
                rt_buf_printf(&line, t ? ", %u" : "%u", leaves[i * n_trees + t]);
            rt_buf_puts(&line, json ? "]" : "]\n");
        }
        if (json)
            rt_buf_puts(&line, "}");
        if (!line.data) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        printf("%s\n", line.data);
    }
    ret = 0;
out:
    free(x);
    free(leaves);
    rt_ctx_free(c);
    rt_model_close(m);
    instances_free(&in);
    rt_buf_free(&line);
    return ret;
}

/* -------------------------------------------------------------- evaluate */

/* Parses a count flag ("--batch-size 256"); 0 ok, else prints the error. */
static int parse_count(const char *flag, const char *s, size_t min, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = s ? strtoull(s, &end, 10) : 0;
    if (!s) {
        *out = 0;
        return 0;
    }
    if (errno || end == s || *end || *s == '-' || v < min || v > (1u << 24)) {
        fprintf(stderr, "predict-model: %s: expected an integer in [%zu, %u], got \"%s\"\n",
                flag, min, 1u << 24, s);
        return EXIT_USAGE;
    }
    *out = (size_t)v;
    return 0;
}

static void print_num(double v, int w)
{
    if (isfinite(v))
        printf(" %*.4f", w, v);
    else
        printf(" %*s", w, "-");
}

static int col_width(const char *name)
{
    int n = (int)strlen(name);
    return n > 9 ? n : 9;
}

static void print_eval_table(const rt_eval *e, const char *dir)
{
    printf("model %s at global step %lld: %llu examples\n\n", dir, (long long)e->global_step,
           (unsigned long long)e->examples);
    for (size_t k = 0; k < e->metrics.n; k++) {
        const rt_metric *m = &e->metrics.m[k];
        if (strcmp(m->name, "global_step") == 0)
            continue;
        printf("  %-26s", m->name);
        print_num(m->value, 9);
        printf("\n");
    }
    if (e->has_plots)
        printf("  %-26s %9.4f\n", "expected_calibration_error", e->ece);
    const char *const *names = rt_eval_slice_metrics(e);
    for (size_t s = 0; s < e->n_specs; s++) {
        const rt_eval_spec *sp = &e->specs[s];
        int w = 5;
        for (size_t k = 0; k < e->n_slices; k++) {
            if (e->slices[k].spec != s)
                continue;
            int len = 0;
            for (size_t q = 0; q < sp->n_columns; q++)
                len += (int)strlen(e->slices[k].values[q]) + (q ? 1 : 0);
            if (len > w)
                w = len;
        }
        if ((int)strlen(sp->name) > w)
            w = (int)strlen(sp->name);
        printf("\nslices by %s (* worst %s)\n  %-*s %8s", sp->name,
               e->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? "average_loss" : "accuracy", w,
               sp->name, "count");
        for (size_t m = 0; names[m]; m++)
            printf(" %*s", col_width(names[m]), names[m]);
        printf("\n");
        for (size_t k = 0; k < e->n_slices; k++) {
            const rt_eval_slice *sl = &e->slices[k];
            if (sl->spec != s)
                continue;
            rt_buf v;
            rt_buf_init(&v);
            for (size_t q = 0; q < sp->n_columns; q++)
                rt_buf_printf(&v, "%s%s", q ? "," : "", sl->values[q]);
            printf("%c %-*s %8zu", sl->worst ? '*' : ' ', w, v.data ? v.data : "", sl->count);
            rt_buf_free(&v);
            for (size_t m = 0; names[m]; m++)
                print_num(rt_metric_get(&sl->metrics, names[m]), col_width(names[m]));
            printf("\n");
        }
    }
    if (e->confusion) {
        printf("\nconfusion matrix (rows: label, columns: predicted)\n  %12s", "");
        for (size_t j = 0; j < e->n_classes; j++)
            printf(" %12.12s", e->class_names[j]);
        printf("\n");
        for (size_t i = 0; i < e->n_classes; i++) {
            printf("  %12.12s", e->class_names[i]);
            for (size_t j = 0; j < e->n_classes; j++)
                printf(" %12llu", (unsigned long long)e->confusion[i * e->n_classes + j]);
            printf("\n");
        }
    }
    if (e->has_plots) {
        printf("\nthresholds (positive when logistic > threshold)\n  %9s %8s %8s %8s %8s "
               "%9s %9s %9s %9s\n",
               "threshold", "tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy");
        for (size_t k = 0; k < RT_EVAL_THRESHOLDS; k++) {
            const rt_eval_threshold *t = &e->thresholds[k];
            printf("  %9.1f %8llu %8llu %8llu %8llu", t->threshold, (unsigned long long)t->tp,
                   (unsigned long long)t->fp, (unsigned long long)t->tn,
                   (unsigned long long)t->fn);
            print_num(t->precision, 9);
            print_num(t->recall, 9);
            print_num(t->f1, 9);
            print_num(t->accuracy, 9);
            printf("\n");
        }
    }
}

static int cmd_evaluate(const opts *o)
{
    rt_eval_opts eo = {0};
    eo.files = o->data;
    eo.n_files = o->n_data;
    eo.slices = o->slices;
    eo.n_slices = o->n_slices;
    if (parse_count("--batch-size", o->batch_size, 1, &eo.batch_size) ||
        parse_count("--skip-header-lines", o->skip_header, 0, &eo.skip_header_lines))
        return EXIT_USAGE;
    rt_model *m = open_model(o->dir);
    if (!m)
        return 1;
    rt_err err = {{0}};
    rt_eval *e = NULL;
    rt_buf b;
    rt_buf_init(&b);
    int ret = 1;
    rt_status st = rt_eval_run(m, &eo, &e, &err);
    if (st) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        goto out;
    }
    if (o->report) {
        rt_buf data;
        rt_buf_init(&data);
        for (size_t i = 0; i < o->n_data; i++)
            rt_buf_printf(&data, "%s%s", i ? ", " : "", o->data[i]);
        int rc = rt_eval_html(e, o->dir, data.data ? data.data : "", &b);
        rt_buf_free(&data);
        if (rc) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        if ((st = rt_write_file(o->report, b.data, b.len, &err))) {
            fprintf(stderr, "predict-model: --report: %s\n", err.msg);
            goto out;
        }
        rt_buf_reset(&b);
    }
    if (o->format && strcmp(o->format, "json") == 0) {
        if (rt_eval_json(e, &b) || rt_buf_puts(&b, "\n")) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        fwrite(b.data, 1, b.len, stdout);
    } else {
        print_eval_table(e, o->dir);
    }
    if (o->report)
        fprintf(stderr, "predict-model: report written to %s\n", o->report);
    ret = fflush(stdout) == 0 ? 0 : 1;
out:
    rt_buf_free(&b);
    rt_eval_free(e);
    rt_model_close(m);
    return ret;
}

int main(int argc, char **argv)
{
    opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    if (o.help) {
        if (!o.cmd)
            fputs(USAGE, stdout);
        else if (strcmp(o.cmd, "show") == 0)
            fputs(HELP_SHOW, stdout);
        else if (strcmp(o.cmd, "predict") == 0)
            fputs(HELP_PREDICT, stdout);
        else if (strcmp(o.cmd, "evaluate") == 0)
            fputs(HELP_EVALUATE, stdout);
        else
            fputs(HELP_TRANSFORM, stdout);
        return 0;
    }
    if (strcmp(o.cmd, "show") == 0)
        return cmd_show(&o);
    if (strcmp(o.cmd, "predict") == 0)
        return cmd_predict(&o);
    if (strcmp(o.cmd, "evaluate") == 0)
        return cmd_evaluate(&o);
    return cmd_transform(&o);
}
