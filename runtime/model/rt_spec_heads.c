/*
 * rt_spec_heads.c — the custom estimator's heads (estimator.model.heads,
 * docs/trainer.md "Custom estimator"), into Graph.heads: one head reading
 * the spec's `label` (its type, n_classes and label_dimension are also
 * def->head's, as for the canned estimators), or several (TensorFlow's
 * MultiHead), each with a `name` (its metrics' suffix and its outputs'
 * prefix), its own `label` column (and vocabulary), `weight_column` and
 * `loss_weight`. def->head is then the first head's (the head TF serves by
 * default) and Graph.logits_dimension the heads' widths summed.
 *
 * The heads' label and weight columns are read before the feature columns
 * (rt_spec_heads_labels, rt_spec_heads_weights), so that a feature column
 * reading one is refused by name, as the spec's label; the rest
 * (rt_spec_heads_parse) after the nodes. Every refusal names the path of
 * the field (estimator.model.heads[1].label.column).
 */
#include "rt_model.h"
#include "rt_spec_internal.h"
#include "rt_model_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")

static const cJSON *heads_of(const cJSON *est)
{
    const cJSON *t = cJSON_IsObject(est) ? cJSON_GetObjectItemCaseSensitive(est, "type") : NULL;
    if (!cJSON_IsString(t) || strcmp(t->valuestring, "Estimator") != 0)
        return NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(est, "model");
    const cJSON *h = cJSON_IsObject(m) ? cJSON_GetObjectItemCaseSensitive(m, "heads") : NULL;
    return cJSON_IsArray(h) ? h : NULL;
}

int rt_spec_heads_count(const cJSON *est)
{
    const cJSON *h = heads_of(est);
    return h ? cJSON_GetArraySize(h) : 0;
}

static void head_path(char *buf, size_t cap, size_t k)
{
    snprintf(buf, cap, "estimator.model.heads[%zu]", k);
}

rt_status rt_spec_heads_vocabulary(spec_ctx *s, const cJSON *voc, const char *path,
                                   Predictd__Head *h)
{
    rt_err *err = s->err;
    int n = cJSON_GetArraySize(voc);
    if (n < 2 || n > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(err, path, "vocabulary", "must list 2..%d classes, got %d",
                           RT_SPEC_MAX_ITEMS, n);
    if (!(h->label_vocabulary = calloc((size_t)n, sizeof(char *))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    int i = 0;
    for (const cJSON *w = voc->child; w; w = w->next, i++) {
        char key[48];
        snprintf(key, sizeof key, "vocabulary[%d]", i);
        if (!cJSON_IsString(w))
            return rt_cfg_fail(err, path, key, "expected a string, got %s", rt_cfg_type_name(w));
        char *t = rt_spec_dup_trimmed(w->valuestring, s->trim);
        if (!t)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        h->label_vocabulary[h->n_label_vocabulary++] = t;
        if (*t == '\0')
            return rt_cfg_fail(err, path, key, "must not be empty");
        for (size_t k = 0; k + 1 < h->n_label_vocabulary; k++)
            if (strcmp(h->label_vocabulary[k], t) == 0)
                return rt_cfg_fail(err, path, key, "\"%.64s\" is listed twice", t);
    }
    return RT_OK;
}

/* Head k's name (required with several heads: TF's MultiHead requires
 * them), told apart from the earlier heads'. */
static rt_status head_name(spec_ctx *s, const cJSON *h, const char *path, size_t k,
                           Predictd__NodeHead *nh)
{
    rt_err *err = s->err;
    const char *name = NULL;
    rt_status st = rt_cfg_str(h, path, "name", 0, &name, err);
    if (st)
        return st;
    if (!name)
        return rt_cfg_fail(err, path, "name", "missing: with several heads each head has a "
                           "name (its metrics' suffix, its outputs' prefix)");
    if ((st = rt_spec_check_name(name, path, "name", err)))
        return st;
    /* its signatures are <name> and <name>/...: a name that is a whole
     * model's signature key would give two signatures one key */
    if (strcmp(name, "serving_default") == 0 || strcmp(name, "predict") == 0)
            return rt_cfg_fail(err, path, "name", "\"%s\" is a signature name of the whole "
                               "model: a head's own signatures are named after it", name);
    const Predictd__Graph *gr = s->def->graph;
    for (size_t q = 0; q < k; q++)
        if (strcmp(gr->heads[q]->name, name) == 0)
            return rt_cfg_fail(err, path, "name", "\"%.64s\" is heads[%zu]'s already: head "
                               "names must be unique", name, q);
    return rt_spec_set_str(&nh->name, name, err);
}

/* Head k's "label": {"column": C, "vocabulary": [...]}, as the spec's label
 * (one column: a head with label_dimension > 1 is not implemented yet). */
static rt_status head_label(spec_ctx *s, const cJSON *h, const char *path, Predictd__NodeHead *nh)
{
    static const char *const keys[] = {"column", "vocabulary", NULL};
    rt_err *err = s->err;
    char lpath[80];
    snprintf(lpath, sizeof lpath, "%s.label", path);
    const cJSON *lab = NULL, *voc = NULL;
    const char *col = NULL;
    rt_status st = rt_cfg_object(h, path, "label", RT_CFG_REQUIRED, &lab, err);
    if (st || (st = rt_cfg_check_keys(lab, lpath, keys, NULL, err)) ||
        (st = rt_cfg_str(lab, lpath, "column", RT_CFG_REQUIRED, &col, err)) ||
        (st = rt_cfg_array(lab, lpath, "vocabulary", 0, &voc, err)))
        return st;
    long r = rt_graph_find_raw(s->def, col);
    if (r < 0)
        return rt_cfg_fail(err, lpath, "column", "\"%.64s\" is not one of the columns", col);
    Predictd__RawColumn *rc = s->def->raw_columns[r];
    if (rc->is_label)
        return rt_cfg_fail(err, lpath, "column", "\"%.64s\" is another head's label already",
                           col);
    rc->is_label = true;
    if ((st = rt_spec_set_str(&nh->label, col, err)))
        return st;
    return voc ? rt_spec_heads_vocabulary(s, voc, lpath, nh->head) : RT_OK;
}

rt_status rt_spec_heads_labels(spec_ctx *s, const cJSON *est)
{
    const cJSON *arr = heads_of(est);
    size_t n = (size_t)cJSON_GetArraySize(arr);
    Predictd__Graph *gr = s->def->graph;
    if (n > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(s->err, "estimator.model", "heads", "more than %d heads",
                           RT_SPEC_MAX_ITEMS);
    if (!(gr->heads = calloc(n, sizeof *gr->heads)))
        return NOMEM(s->err);
    size_t k = 0;
    for (const cJSON *h = arr->child; h; h = h->next, k++) {
        char path[64];
        head_path(path, sizeof path, k);
        if (!cJSON_IsObject(h))
            return rt_cfg_fail(s->err, path, "", "expected an object, got %s",
                               rt_cfg_type_name(h));
        Predictd__NodeHead *nh = malloc(sizeof *nh);
        Predictd__Head *hd = malloc(sizeof *hd);
        if (!nh || !hd) {
            free(nh);
            free(hd);
            return NOMEM(s->err);
        }
        predictd__node_head__init(nh);
        predictd__head__init(hd);
        nh->head = hd;
        gr->heads[gr->n_heads++] = nh;
        rt_status st = head_name(s, h, path, k, nh);
        if (st || (st = head_label(s, h, path, nh)))
            return st;
    }
    return RT_OK;
}

rt_status rt_spec_heads_weights(spec_ctx *s, const cJSON *est)
{
    rt_err *err = s->err;
    if (cJSON_GetObjectItemCaseSensitive(est, "weight_column"))
        return rt_cfg_fail(err, "estimator", "weight_column", "with several heads each head "
                           "names its weight_column (estimator.model.heads[k].weight_column)");
    Predictd__Graph *gr = s->def->graph;
    size_t k = 0;
    for (const cJSON *h = heads_of(est)->child; h; h = h->next, k++) {
        char path[64];
        head_path(path, sizeof path, k);
        const char *name = NULL;
        rt_status st = rt_cfg_str(h, path, "weight_column", 0, &name, err);
        if (st)
            return st;
        if (!name)
            continue;
        long r = rt_graph_find_raw(s->def, name);
        if (r < 0)
            return rt_cfg_fail(err, path, "weight_column", "\"%.64s\" is not one of the columns",
                               name);
        Predictd__RawColumn *rc = s->def->raw_columns[r];
        if (rc->is_label)
            return rt_cfg_fail(err, path, "weight_column", "\"%.64s\" is a head's label column",
                               name);
        if (rc->unused)
            return rt_cfg_fail(err, path, "weight_column", "\"%.64s\" is listed in "
                               "unused_columns", name);
        if (rc->dtype != PREDICTD__DTYPE__DT_FLOAT)
            return rt_cfg_fail(err, path, "weight_column", "\"%.64s\" is a string column; "
                               "example weights are numbers (an int or float column)", name);
        rc->is_weight = true;
        if ((st = rt_spec_set_str(&gr->heads[k]->weight_column, name, err)))
            return st;
    }
    return RT_OK;
}

/* Where head k's label is: the spec's label (one head) or its own. */
typedef struct label_at {
    const Predictd__RawColumn *col; /* a string one if any */
    size_t n;                       /* label columns */
    char path[80];                  /* "label" or estimator.model.heads[1].label */
} label_at;

static void find_label(const Predictd__ModelDef *def, const Predictd__NodeHead *nh, size_t k,
                       bool several, label_at *out)
{
    out->col = NULL;
    out->n = 0;
    if (several) {
        head_path(out->path, sizeof out->path, k);
        strcat(out->path, ".label");
        out->col = def->raw_columns[rt_graph_find_raw(def, nh->label)];
        out->n = 1;
        return;
    }
    snprintf(out->path, sizeof out->path, "label");
    for (size_t i = 0; i < def->n_raw_columns; i++)
        if (def->raw_columns[i]->is_label) {
            if (!out->col || out->col->dtype == PREDICTD__DTYPE__DT_FLOAT)
                out->col = def->raw_columns[i];
            out->n++;
        }
}

static long node_named(const Predictd__Graph *gr, const char *name)
{
    for (size_t i = 0; i < gr->n_nodes; i++)
        if (strcmp(gr->nodes[i]->name, name) == 0)
            return (long)i;
    return -1;
}

static rt_status regression_loss(spec_ctx *s, const cJSON *h, const char *path,
                                 Predictd__NodeHead *nh)
{
    rt_err *err = s->err;
    const char *loss = "squared";
    rt_status st = rt_cfg_str(h, path, "loss", 0, &loss, err);
    if (st)
        return st;
    int kind = rt_metrics_loss_named(loss);
    if (kind < 0)
        return rt_cfg_fail(err, path, "loss", "\"%.64s\" is not one of squared, absolute, "
                           "huber, pinball, poisson", loss);
    double param = 0.0;
    if (kind == RT_LOSS_HUBER) {
        param = 1.0;
        if ((st = rt_cfg_num(h, path, "delta", 0, 1e-9, RT_SPEC_MAX_F32, &param, err)))
            return st;
    } else if (cJSON_GetObjectItemCaseSensitive(h, "delta")) {
        return rt_cfg_fail(err, path, "delta", "only the huber loss takes delta");
    }
    if (kind == RT_LOSS_PINBALL) {
        param = 0.5;
        if ((st = rt_cfg_num(h, path, "tau", 0, 1e-6, 1.0 - 1e-6, &param, err)))
            return st;
    } else if (cJSON_GetObjectItemCaseSensitive(h, "tau")) {
        return rt_cfg_fail(err, path, "tau", "only the pinball loss takes tau");
    }
    if ((st = rt_spec_set_str(&nh->loss, loss, err)))
        return st;
    nh->loss_param = (float)param;
    return RT_OK;
}

/* Head k (hd: def->head for one head, its own for several): type, logits
 * node and its width (*width), loss, loss_weight. */
static rt_status parse_head(spec_ctx *s, const cJSON *h, size_t k, bool several,
                            Predictd__NodeHead *nh, Predictd__Head *hd, uint32_t *width)
{
    static const char *const keys[] = {"name", "type", "logits", "n_classes", "label_dimension",
                                       "loss", "delta", "tau", "loss_weight", "label_delimiter",
                                       NULL};
    static const char *const own[] = {"label", "weight_column", NULL};
    rt_err *err = s->err;
    Predictd__ModelDef *def = s->def;
    char path[64];
    head_path(path, sizeof path, k);
    if (cJSON_GetObjectItemCaseSensitive(h, "loss_reduction"))
        return rt_cfg_fail(err, path, "loss_reduction", "one loss_reduction for every head, as "
                           "TF's MultiHead requires: give estimator.loss_reduction");
    rt_status st = rt_cfg_check_keys(h, path, keys, several ? own : NULL, err);
    if (st)
        return st;
    const char *type = NULL, *logits = NULL, *name = "";
    if ((st = rt_cfg_str(h, path, "type", RT_CFG_REQUIRED, &type, err)) ||
        (st = rt_cfg_str(h, path, "logits", RT_CFG_REQUIRED, &logits, err)) ||
        (!several && (st = rt_cfg_str(h, path, "name", 0, &name, err))))
        return st;
    if (!several && ((*name && (st = rt_spec_check_name(name, path, "name", err))) ||
                     (st = rt_spec_set_str(&nh->name, name, err))))
        return st;
    long j = node_named(def->graph, logits);
    if (j < 0)
        return rt_cfg_fail(err, path, "logits", "\"%.64s\" is not a node", logits);
    uint32_t w = def->graph->nodes[j]->units;
    for (size_t q = 0; q < k; q++)
        if (strcmp(def->graph->heads[q]->logits, logits) == 0)
            return rt_cfg_fail(err, path, "logits", "\"%.64s\" is heads[%zu]'s logits "
                               "already: each head reads its own node", logits, q);
    if ((st = rt_spec_set_str(&nh->logits, logits, err)))
        return st;
    if (several) {
        double lw = 1.0;
        if ((st = rt_cfg_num(h, path, "loss_weight", 0, 1e-6, RT_SPEC_MAX_F32, &lw, err)))
            return st;
        nh->loss_weight = (float)lw;
    } else if (cJSON_GetObjectItemCaseSensitive(h, "loss_weight")) {
        return rt_cfg_fail(err, path, "loss_weight", "weights the losses of several heads "
                           "(TF's MultiHead); one head's loss is not weighted");
    }
    label_at lab;
    find_label(def, nh, k, several, &lab);
    bool binary = strcmp(type, "binary_classification") == 0;
    bool multi = strcmp(type, "multi_class_classification") == 0;
    bool mlabel = strcmp(type, "multi_label_classification") == 0;
    if (!mlabel && cJSON_GetObjectItemCaseSensitive(h, "label_delimiter"))
        return rt_cfg_fail(err, path, "label_delimiter", "only a multi_label_classification "
                           "head takes label_delimiter");
    if (binary || multi) {
        int64_t n = 2;
        if (multi && (st = rt_cfg_int(h, path, "n_classes", RT_CFG_REQUIRED, 3, RT_SPEC_MAX_ITEMS,
                                      &n, err)))
            return st;
        if (binary && cJSON_GetObjectItemCaseSensitive(h, "n_classes"))
            return rt_cfg_fail(err, path, "n_classes", "a binary_classification head has 2");
        if (lab.n != 1)
            return rt_cfg_fail(err, lab.path, "columns", "a classification head reads one label "
                               "column (\"column\")");
        if (hd->n_label_vocabulary && hd->n_label_vocabulary != (size_t)n)
            return rt_cfg_fail(err, lab.path, "vocabulary", "lists %zu classes but the head %s "
                               "has %lld", hd->n_label_vocabulary, path, (long long)n);
        if (!hd->n_label_vocabulary && lab.col->dtype == PREDICTD__DTYPE__DT_STRING)
            return rt_cfg_fail(err, lab.path, "vocabulary", "missing: the label column \"%s\" "
                               "holds strings, so the classes must be listed", lab.col->name);
        uint32_t want = binary ? 1 : (uint32_t)n;
        if (w != want)
            return rt_cfg_fail(err, path, "logits",
                               "\"%.64s\" is %u wide; a %s head with %lld classes reads %u "
                               "logit%s",
                               logits, w, type, (long long)n, want, want == 1 ? "" : "s");
        hd->type = binary ? PREDICTD__HEAD_TYPE__HEAD_BINARY : PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS;
        hd->n_classes = (uint32_t)n;
        for (size_t q = 4; q <= 7; q++)
            if (cJSON_GetObjectItemCaseSensitive(h, keys[q]))
                return rt_cfg_fail(err, path, keys[q], "a classification head takes no %s",
                                   keys[q]);
    } else if (strcmp(type, "regression") == 0) {
        int64_t dim = 1;
        if ((st = rt_cfg_int(h, path, "label_dimension", 0, 1, RT_SPEC_MAX_WIDTH, &dim, err)))
            return st;
        if (hd->n_label_vocabulary)
            return rt_cfg_fail(err, lab.path, "vocabulary", "a regression head has no "
                               "vocabulary");
        if (lab.col && lab.col->dtype != PREDICTD__DTYPE__DT_FLOAT)
            return rt_cfg_fail(err, lab.path, "column", "\"%s\" is a string column; a "
                               "regression head needs a number", lab.col->name);
        if (lab.n != (size_t)dim)
            return rt_cfg_fail(err, path, "label_dimension", "%lld, but the label lists %zu "
                               "column%s", (long long)dim, lab.n, lab.n == 1 ? "" : "s");
        if (w != (uint32_t)dim)
            return rt_cfg_fail(err, path, "logits", "\"%.64s\" is %u wide; a regression head "
                               "with label_dimension %lld reads %lld", logits, w,
                               (long long)dim, (long long)dim);
        if ((st = regression_loss(s, h, path, nh)))
            return st;
        hd->type = PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
        hd->label_dimension = (uint32_t)dim;
    } else if (mlabel) {
        /* TF's MultiLabelHead: n_classes > 1, a label cell listing the row's
         * classes (by label_vocabulary, or as ids) split by label_delimiter
         * (rt_metrics_mlabel_parse), read by the trainer's feeder (trn_feed.c). */
        int64_t n = 2;
        const char *delim = "|";
        if ((st = rt_cfg_int(h, path, "n_classes", RT_CFG_REQUIRED, 2, RT_SPEC_MAX_ITEMS, &n,
                             err)) ||
            (st = rt_cfg_str(h, path, "label_delimiter", 0, &delim, err)))
            return st;
        if (strlen(delim) != 1)
            return rt_cfg_fail(err, path, "label_delimiter", "\"%.16s\" is not one character",
                               delim);
        if (lab.n != 1)
            return rt_cfg_fail(err, lab.path, "columns", "a multi_label_classification head "
                               "reads one label column (\"column\"): the row's classes "
                               "separated by label_delimiter");
        if (lab.col && lab.col->dtype != PREDICTD__DTYPE__DT_STRING)
            return rt_cfg_fail(err, lab.path, "column", "\"%s\" is a number column; a "
                               "multi_label_classification head reads a string column listing "
                               "the row's classes separated by \"%s\"", lab.col->name, delim);
        if (hd->n_label_vocabulary && hd->n_label_vocabulary != (size_t)n)
            return rt_cfg_fail(err, lab.path, "vocabulary", "lists %zu classes but the head %s "
                               "has %lld", hd->n_label_vocabulary, path, (long long)n);
        for (size_t v = 0; v < hd->n_label_vocabulary; v++)
            if (strchr(hd->label_vocabulary[v], delim[0]))
                return rt_cfg_fail(err, lab.path, "vocabulary", "\"%.64s\" holds the "
                                   "label_delimiter \"%s\"", hd->label_vocabulary[v], delim);
        if (w != (uint32_t)n)
            return rt_cfg_fail(err, path, "logits", "\"%.64s\" is %u wide; a "
                               "multi_label_classification head with %lld classes reads %lld "
                               "logits", logits, w, (long long)n, (long long)n);
        if ((st = rt_spec_set_str(&hd->label_delimiter, delim, err)))
            return st;
        hd->type = PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL;
        hd->n_classes = (uint32_t)n;
    } else {
        return rt_cfg_fail(err, path, "type", "\"%.64s\" is not one of binary_classification, "
                           "multi_class_classification, multi_label_classification, "
                           "regression", type);
    }
    *width = w;
    return RT_OK;
}

/* def->head as the first head (several heads) or nh->head as def->head's
 * type and shape (one head: the vocabulary stays def->head's). */
static rt_status copy_head(const Predictd__Head *from, Predictd__Head **to, rt_err *err)
{
    if (!*to) {
        if (!(*to = malloc(sizeof **to)))
            return NOMEM(err);
        predictd__head__init(*to);
    }
    (*to)->type = from->type;
    (*to)->n_classes = from->n_classes;
    (*to)->label_dimension = from->label_dimension;
    return RT_OK;
}

rt_status rt_spec_heads_parse(spec_ctx *s, const cJSON *model)
{
    rt_err *err = s->err;
    Predictd__ModelDef *def = s->def;
    Predictd__Graph *gr = def->graph;
    const cJSON *arr = NULL;
    rt_status st = rt_cfg_array(model, "estimator.model", "heads", RT_CFG_REQUIRED, &arr, err);
    if (st)
        return st;
    int cnt = cJSON_GetArraySize(arr);
    if (cnt == 0)
        return rt_cfg_fail(err, "estimator.model", "heads", "must list a head");
    bool several = cnt > 1;
    if (!several) { /* rt_spec_heads_labels made several heads' NodeHeads */
        Predictd__NodeHead *nh = malloc(sizeof *nh);
        if (!nh || !(gr->heads = calloc(1, sizeof *gr->heads))) {
            free(nh);
            return NOMEM(err);
        }
        predictd__node_head__init(nh);
        gr->heads[gr->n_heads++] = nh;
    }
    if (gr->n_heads != (size_t)cnt)
        return rt_err_set(err, RT_ERR_INVALID, "heads: %zu parsed of %d", gr->n_heads, cnt);
    uint64_t total = 0;
    size_t k = 0;
    for (const cJSON *h = arr->child; h; h = h->next, k++) {
        Predictd__NodeHead *nh = gr->heads[k];
        uint32_t w = 0;
        if ((st = parse_head(s, h, k, several, nh, several ? nh->head : def->head, &w)))
            return st;
        total += w;
    }
    if (total > RT_SPEC_MAX_WIDTH)
        return rt_cfg_fail(err, "estimator.model", "heads", "their logits are %llu wide, more "
                           "than %d", (unsigned long long)total, RT_SPEC_MAX_WIDTH);
    gr->logits_dimension = (uint32_t)total;
    return several ? copy_head(gr->heads[0]->head, &def->head, err)
                   : copy_head(def->head, &gr->heads[0]->head, err);
}
