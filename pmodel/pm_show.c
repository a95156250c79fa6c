/*
 * pm_show.c — predict-model show: what an export is. Without a flag a
 * summary (model, head, inputs, signatures, sizes, last evaluation); --all
 * the signatures as saved_model_cli show --all prints them, then the
 * receiver, feature columns, graph, head and training metadata (a
 * BoostedTrees model also its ensemble and feature importances);
 * --signature_def NAME one signature.
 */
#include "pm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Indentation as saved_model_cli's: `ind` spaces before the headers. */
static void print_tensor(int ind, const char *kind, const Predictd__TensorSpec *t)
{
    printf("%*s%s['%s'] tensor_info:\n", ind + 2, "", kind, t->name);
    printf("%*sdtype: %s\n", ind + 6, "", rt_json_dtype_name(t->dtype));
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

int pm_name_width(const rt_graph *g)
{
    size_t w = 0;
    for (size_t c = 0; c < rt_graph_num_columns(g); c++)
        if (strlen(rt_graph_column(g, c)->name) > w)
            w = strlen(rt_graph_column(g, c)->name);
    return w > 64 ? 64 : (int)w;
}

static void print_column(const rt_graph *g, size_t c)
{
    const Predictd__FeatureColumn *f = rt_graph_column(g, c);
    char about[1024];
    rt_fc_column_describe(f, about, sizeof about);
    printf("  %-*s  %s %s", pm_name_width(g), f->name, rt_fc_column_kind_name(f->type), about);
    if (rt_graph_column_buckets(g, c) > 0)
        printf(" buckets=%lld", (long long)rt_graph_column_buckets(g, c));
    printf("\n");
}

/* rt_trees_describe, its error on stderr: 0, or 1 after the message. */
static int describe_trees(const rt_graph *g, rt_trees_shape *sh, rt_trees_importance **imp)
{
    rt_err err = {{0}};
    if (rt_trees_describe(g, sh, imp, &err) != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* The ensemble's shape, inputs and feature importances. */
static int print_trees(const rt_graph *g)
{
    const Predictd__TreeEnsemble *te = rt_graph_def(g)->graph->trees;
    rt_trees_shape sh;
    rt_trees_importance *imp = NULL;
    if (describe_trees(g, &sh, &imp))
        return 1;
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
                                    "regression", "multi-label classification"};

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

/* "Head: <kind>, classes [...]" without the line's end. */
static void print_head(const rt_graph *g, Predictd__HeadType head)
{
    printf("Head: %s", head <= 3 ? HEADS[head] : "unknown");
    if (rt_graph_num_classes(g)) {
        printf(", classes [");
        for (size_t k = 0; k < rt_graph_num_classes(g); k++)
            printf("%s\"%s\"", k ? ", " : "", rt_graph_class_name(g, k));
        printf("]");
    }
}

/* show without --all: what a user needs to call the model and to know which
 * one it is, one line per item; --all prints everything. */
static int show_summary(const rt_model *m, const char *path)
{
    const Predictd__ModelDef *def = rt_model_def(m);
    const rt_graph *g = rt_model_graph(m);
    const Predictd__Graph *gd = def->graph;
    Predictd__HeadType head = rt_graph_head(g);
    const char *slash = strrchr(path, '/');
    const char *version = slash && slash[1] ? slash + 1 : path;
    printf("Model: %s, version %s (%s)\n", def->model_name, version, path);
    size_t onnx_nodes = 0, onnx_classes = 0;
    bool onnx = rt_onnx_in_graph(g, &onnx_nodes, &onnx_classes);
    if (onnx)
        printf("Estimator: an ONNX network (model.onnx: %zu operators run%s)\n", onnx_nodes,
               rt_onnx_run_scores(g) ? "; an ai.onnx.ml classifier: its scores as the "
                                         "probabilities"
               : onnx_classes ? "; a classifier: its softmax's input as the logits"
                              : "; its outputs side by side as predictions");
    else
        printf("Estimator: %s\n", gd->estimator);
    print_head(g, head);
    printf("\nServing input function: %s\n",
           def->receiver <= 2 ? RECEIVERS[def->receiver] : "unknown");
    printf("Inputs (%zu):", rt_graph_num_inputs(g));
    for (size_t i = 0; i < rt_graph_num_inputs(g); i++)
        printf(" %s(%s)", rt_graph_input_name(g, i),
               rt_json_dtype_name(rt_graph_input_dtype(g, i)));
    printf("\nSignatures (%zu):\n", def->n_signatures);
    for (size_t k = 0; k < def->n_signatures; k++) {
        const Predictd__SignatureDef *sg = def->signatures[k];
        printf("  %-16s %s, %zu input(s) -> ", sg->name, sg->method_name, sg->n_inputs);
        for (size_t j = 0; j < sg->n_outputs; j++)
            printf("%s%s", j ? " " : "", sg->outputs[j]->name);
        printf("\n");
    }
    printf("Feature columns: %zu", rt_graph_num_columns(g));
    if ((gd->n_linear_columns || gd->n_dnn_columns) && !onnx)
        printf(" (linear part %zu, dnn part %zu)", gd->n_linear_columns, gd->n_dnn_columns);
    printf("\n");
    if (rt_graph_num_layers(g)) {
        printf("DNN: input dimension %zu, layers", rt_graph_dnn_dim(g));
        for (size_t l = 0; l < rt_graph_num_layers(g); l++)
            printf(" %zu", rt_graph_layer_width(g, l));
        printf(" (last = logits)\n");
    }
    if (rt_graph_has_trees(g)) {
        rt_trees_shape sh;
        rt_trees_importance *imp = NULL;
        if (describe_trees(g, &sh, &imp))
            return 1;
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
    const rt_stats *ts = rt_model_stats(m);
    if (ts)
        printf("\nTraining statistics: %llu examples, %zu inputs (statistics.json; predict-model "
               "stats --dir EXPORT)", (unsigned long long)ts->num_examples, ts->n);
    else
        printf("\nTraining statistics: none (exported before statistics.json)");
    printf("\n(predict-model show --all: every signature's tensors, the feature columns, the "
           "graph and all metadata)\n");
    return 0;
}

int pm_cmd_show(const pm_opts *o)
{
    char *path = NULL;
    rt_model *m = pm_open_model(o->dir, &path);
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
        printf(" %s(%s)", rt_graph_input_name(g, i),
               rt_json_dtype_name(rt_graph_input_dtype(g, i)));
    printf("\nFeature columns:\n");
    for (size_t c = 0; c < rt_graph_num_columns(g); c++)
        print_column(g, c);
    const Predictd__Graph *gd = def->graph;
    printf("Estimator: %s, logits_dimension %u\n", gd->estimator, gd->logits_dimension);
    if (gd->n_linear_columns) {
        printf("  linear_feature_columns:");
        for (size_t k = 0; k < gd->n_linear_columns; k++)
            printf(" %s", gd->linear_columns[k]);
        printf("\n");
    }
    if (rt_graph_num_layers(g)) {
        printf("  dnn_feature_columns:");
        for (size_t k = 0; k < gd->n_dnn_columns; k++)
            printf(" %s", gd->dnn_columns[k]);
        printf("\n  dnn input dimension %zu, layers:", rt_graph_dnn_dim(g));
        for (size_t l = 0; l < rt_graph_num_layers(g); l++)
            printf(" %zu", rt_graph_layer_width(g, l));
        printf(" (last = logits)\n");
    }
    if (rt_graph_has_trees(g) && print_trees(g) != 0) {
        rt_model_close(m);
        return 1;
    }
    Predictd__HeadType head = rt_graph_head(g);
    print_head(g, head);
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
    if (rt_model_stats(m)) {
        printf("Training statistics (statistics.json):\n");
        pm_stats_table(rt_model_stats(m), stdout);
    }
    rt_model_close(m);
    return 0;
}

