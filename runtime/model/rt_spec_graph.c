/*
 * rt_spec_graph.c — the "estimator" part of a spec: head (classifier or
 * regressor), linear and DNN column lists, hidden layers, the tensor names
 * of TensorFlow's canned estimators, the inputs of a BoostedTrees ensemble
 * (Graph.trees, no trees yet: the trainer grows them), and the signatures
 * they export (serving_default, predict, classification / regression).
 */
#include "rt_model.h"
#include "rt_spec_internal.h"
#include "rt_model_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")

typedef struct est_kind {
    const char *name;
    bool classifier;
    bool linear; /* has a linear part */
    bool dnn;    /* has a DNN part */
    bool combined;
    bool trees;  /* BoostedTrees: a TreeEnsemble over feature_columns */
} est_kind;

static const est_kind est_kinds[] = {
    {"LinearClassifier", true, true, false, false, false},
    {"LinearRegressor", false, true, false, false, false},
    {"DNNClassifier", true, false, true, false, false},
    {"DNNRegressor", false, false, true, false, false},
    {"DNNLinearCombinedClassifier", true, true, true, true, false},
    {"DNNLinearCombinedRegressor", false, true, true, true, false},
    {"BoostedTreesClassifier", true, false, false, false, true},
    {"BoostedTreesRegressor", false, false, false, false, true},
};

/* BoostedTrees' training parameters (TensorFlow's names): the trainer reads
 * and checks them (trainer/trn_config.c); the model part only lets them by. */
static const char *const trees_train_keys[] = {
    "n_trees",        "max_depth",     "learning_rate",           "l1_regularization",
    "l2_regularization", "tree_complexity", "min_node_weight",    "center_bias",
    "pruning_mode",   "quantile_sketch_epsilon", "n_batches_per_layer", NULL};

/* Categories a tree input may have (category-set splits and the trainer's
 * histograms are per category). */

static char *fmt_dup(const char *fmt, const char *a)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, fmt, a);
    if (n < 0 || (size_t)n >= sizeof buf)
        return NULL;
    return rt_spec_strndup(buf, (size_t)n);
}

static bool linear_ok(Predictd__ColumnType t)
{
    const rt_fc_kind *k = rt_fc_kind_of(t);
    return k && k->linear_ok;
}

static bool dnn_ok(Predictd__ColumnType t)
{
    const rt_fc_kind *k = rt_fc_kind_of(t);
    return k && k->dnn_ok;
}

/* Does feature column `name` (of the DNN part) have an embedding table? */
static bool has_table(const Predictd__ModelDef *def, const char *name)
{
    const rt_fc_kind *k = rt_fc_kind_of(def->feature_columns[rt_spec_find_fc(def, name)]->type);
    return k && k->table;
}

/* Reads a list of feature column names into *names / *n. */
static rt_status parse_col_list(spec_ctx *s, const cJSON *est, const char *key, bool dnn,
                                char ***names, size_t *n)
{
    rt_err *err = s->err;
    const cJSON *arr = NULL;
    rt_status st = rt_cfg_array(est, "estimator", key, 0, &arr, err);
    if (st || !arr)
        return st;
    int cnt = cJSON_GetArraySize(arr);
    if (cnt > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(err, "estimator", key, "too many columns");
    if (cnt == 0)
        return RT_OK;
    if (!(*names = calloc((size_t)cnt, sizeof(char *))))
        return NOMEM(err);
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "estimator.%s[%d]", key, i);
        if (!cJSON_IsString(c))
            return rt_cfg_fail(err, path, "", "expected a feature column name, got %s",
                               rt_cfg_type_name(c));
        long r = rt_spec_find_fc(s->def, c->valuestring);
        if (r < 0)
            return rt_cfg_fail(err, path, "", "\"%.64s\" is not one of the feature_columns",
                               c->valuestring);
        Predictd__ColumnType t = s->def->feature_columns[r]->type;
        if (dnn && !dnn_ok(t))
            return rt_cfg_fail(err, path, "",
                               "\"%.64s\" is a %s, a categorical column: the DNN part takes "
                               "dense columns; wrap it in an indicator_column or an "
                               "embedding_column",
                               c->valuestring, rt_spec_fc_kind_name(t));
        if (!dnn && !linear_ok(t))
            return rt_cfg_fail(err, path, "",
                               "\"%.64s\" is an %s: the linear part takes "
                               "categorical, numeric and indicator columns",
                               c->valuestring, rt_spec_fc_kind_name(t));
        for (size_t k = 0; k < *n; k++)
            if (strcmp((*names)[k], c->valuestring) == 0)
                return rt_cfg_fail(err, path, "", "\"%.64s\" is listed twice", c->valuestring);
        if (!((*names)[*n] = rt_spec_strndup(c->valuestring, strlen(c->valuestring))))
            return NOMEM(err);
        (*n)++;
    }
    return RT_OK;
}

static rt_status parse_activation(spec_ctx *s, const cJSON *est, const char *key,
                                  Predictd__Activation *out)
{
    const char *a = "relu";
    rt_status st = rt_cfg_str(est, "estimator", key, 0, &a, s->err);
    if (st)
        return st;
    static const struct {
        const char *name;
        Predictd__Activation act;
    } acts[] = {
        {"relu", PREDICTD__ACTIVATION__ACT_RELU},       {"tanh", PREDICTD__ACTIVATION__ACT_TANH},
        {"sigmoid", PREDICTD__ACTIVATION__ACT_SIGMOID}, {"elu", PREDICTD__ACTIVATION__ACT_ELU},
        {"linear", PREDICTD__ACTIVATION__ACT_LINEAR},
    };
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++)
        if (strcmp(acts[k].name, a) == 0) {
            *out = acts[k].act;
            return RT_OK;
        }
    return rt_cfg_fail(s->err, "estimator", key,
                       "\"%.32s\" is not one of relu, tanh, sigmoid, elu, linear", a);
}

static Predictd__DenseLayer *new_layer(uint32_t units, Predictd__Activation act,
                                       const char *scope)
{
    Predictd__DenseLayer *l = malloc(sizeof *l);
    if (!l)
        return NULL;
    predictd__dense_layer__init(l);
    l->units = units;
    l->activation = act;
    l->kernel = fmt_dup("%s/kernel", scope);
    l->bias = fmt_dup("%s/bias", scope);
    if (!l->kernel || !l->bias) {
        predictd__dense_layer__free_unpacked(l, NULL);
        return NULL;
    }
    return l;
}

static rt_status parse_dropout(spec_ctx *s, const cJSON *est, const char *key)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(est, key);
    if (!d || cJSON_IsNull(d))
        return RT_OK;
    if (!cJSON_IsNumber(d) || !(d->valuedouble >= 0 && d->valuedouble < 1))
        return rt_cfg_fail(s->err, "estimator", key, "expected a number in [0, 1) or null");
    return RT_OK;
}

static rt_status parse_head(spec_ctx *s, const cJSON *est, const est_kind *k)
{
    rt_err *err = s->err;
    Predictd__ModelDef *def = s->def;
    Predictd__Head *h = def->head;
    const Predictd__RawColumn *label = NULL;
    size_t n_labels = 0;
    for (size_t i = 0; i < def->n_raw_columns; i++)
        if (def->raw_columns[i]->is_label) {
            if (!label || label->dtype == PREDICTD__DTYPE__DT_FLOAT)
                label = def->raw_columns[i]; /* a string one if any */
            n_labels++;
        }
    rt_status st;
    if (k->classifier && n_labels > 1)
        return rt_cfg_fail(err, "label", "columns",
                           "a classifier has one label column (\"column\"); several are a "
                           "regressor's label_dimension values");
    if (k->classifier) {
        int64_t n = 2;
        if ((st = rt_cfg_int(est, "estimator", "n_classes", 0, 2, RT_SPEC_MAX_ITEMS, &n,
                             err)))
            return st;
        if (h->n_label_vocabulary && h->n_label_vocabulary != (size_t)n)
            return rt_cfg_fail(err, "label", "vocabulary",
                               "lists %zu classes but estimator.n_classes is %lld",
                               h->n_label_vocabulary, (long long)n);
        if (!h->n_label_vocabulary && label && label->dtype == PREDICTD__DTYPE__DT_STRING)
            return rt_cfg_fail(err, "label", "vocabulary",
                               "missing: the label column \"%s\" holds strings, so the classes "
                               "must be listed",
                               label->name);
        h->type = n == 2 ? PREDICTD__HEAD_TYPE__HEAD_BINARY : PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS;
        h->n_classes = (uint32_t)n;
        def->graph->logits_dimension = n == 2 ? 1 : (uint32_t)n;
    } else {
        int64_t dim = 1;
        if ((st = rt_cfg_int(est, "estimator", "label_dimension", 0, 1, RT_SPEC_MAX_WIDTH,
                             &dim, err)))
            return st;
        if (h->n_label_vocabulary)
            return rt_cfg_fail(err, "label", "vocabulary", "a regressor has no label vocabulary");
        if (label && label->dtype != PREDICTD__DTYPE__DT_FLOAT)
            return rt_cfg_fail(err, "label", n_labels > 1 ? "columns" : "column",
                               "\"%s\" is a string column; a regressor needs an int or float label",
                               label->name);
        if (n_labels != (size_t)dim && !(k->trees && dim != 1)) /* trees: refused below */
            return rt_cfg_fail(err, "label", n_labels > 1 ? "columns" : "column",
                               "%zu label column%s for estimator.label_dimension %lld (list "
                               "label_dimension columns in label.columns)",
                               n_labels, n_labels == 1 ? "" : "s", (long long)dim);
        h->type = PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
        h->label_dimension = (uint32_t)dim;
        def->graph->logits_dimension = (uint32_t)dim;
    }
    return RT_OK;
}

rt_status rt_spec_build_linear(spec_ctx *s)
{
    Predictd__Graph *g = s->def->graph;
    if (!g->n_linear_columns)
        return RT_OK;
    g->linear_weights = calloc(g->n_linear_columns, sizeof *g->linear_weights);
    if (!g->linear_weights)
        return NOMEM(s->err);
    for (size_t i = 0; i < g->n_linear_columns; i++) {
        Predictd__LinearWeight *w = malloc(sizeof *w);
        if (!w)
            return NOMEM(s->err);
        predictd__linear_weight__init(w);
        g->linear_weights[g->n_linear_weights++] = w;
        w->column = rt_spec_strndup(g->linear_columns[i], strlen(g->linear_columns[i]));
        w->tensor = fmt_dup("linear/linear_model/%s/weights", g->linear_columns[i]);
        if (!w->column || !w->tensor)
            return NOMEM(s->err);
    }
    if (g->linear_bias != protobuf_c_empty_string)
        free(g->linear_bias);
    if (!(g->linear_bias = rt_spec_strndup("linear/linear_model/bias_weights", 32)))
        return NOMEM(s->err);
    return RT_OK;
}

/* TF's canned DNN batch_norm=True: tf.layers.BatchNormalization named
 * batchnorm_<i> in hiddenlayer_<i>'s scope, momentum 0.999, epsilon 0.001. */
static Predictd__BatchNorm *new_batch_norm(int i)
{
    Predictd__BatchNorm *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    predictd__batch_norm__init(b);
    char scope[64];
    snprintf(scope, sizeof scope, "dnn/hiddenlayer_%d/batchnorm_%d", i, i);
    b->gamma = fmt_dup("%s/gamma", scope);
    b->beta = fmt_dup("%s/beta", scope);
    b->moving_mean = fmt_dup("%s/moving_mean", scope);
    b->moving_variance = fmt_dup("%s/moving_variance", scope);
    b->epsilon = 0.001f;
    b->momentum = 0.999f;
    if (!b->gamma || !b->beta || !b->moving_mean || !b->moving_variance) {
        predictd__batch_norm__free_unpacked(b, NULL);
        return NULL;
    }
    return b;
}

/* The embedding tables of the DNN columns (Graph.embeddings), in their
 * order: TensorFlow's names, a shared table named by its collection. */
rt_status rt_spec_build_embeddings(spec_ctx *s)
{
    rt_err *err = s->err;
    Predictd__Graph *g = s->def->graph;
    /* Embedding tables of the DNN part. */
    size_t n_emb = 0;
    for (size_t i = 0; i < g->n_dnn_columns; i++)
        n_emb += has_table(s->def, g->dnn_columns[i]);
    if (n_emb && !(g->embeddings = calloc(n_emb, sizeof *g->embeddings)))
        return NOMEM(err);
    for (size_t i = 0; i < g->n_dnn_columns; i++) {
        const char *name = g->dnn_columns[i];
        if (!has_table(s->def, name))
            continue;
        Predictd__EmbeddingWeight *e = malloc(sizeof *e);
        if (!e)
            return NOMEM(err);
        predictd__embedding_weight__init(e);
        g->embeddings[g->n_embeddings++] = e;
        /* A shared table's scope is its collection (TensorFlow's
         * _SharedEmbeddingColumn._var_scope_name), so its users name one
         * tensor. */
        const Predictd__FeatureColumn *fc = s->def->feature_columns[rt_spec_find_fc(s->def, name)];
        const char *scope = fc->shared_embedding_collection_name &&
                                    *fc->shared_embedding_collection_name
                                ? fc->shared_embedding_collection_name
                                : name;
        e->column = rt_spec_strndup(name, strlen(name));
        e->tensor = fmt_dup("dnn/input_from_feature_columns/%s/embedding_weights", scope);
        if (!e->column || !e->tensor)
            return NOMEM(err);
    }
    return RT_OK;
}

static rt_status build_dnn(spec_ctx *s, const cJSON *units, Predictd__Activation act,
                           const char *units_key, bool batch_norm)
{
    rt_err *err = s->err;
    Predictd__Graph *g = s->def->graph;
    if (!g->n_dnn_columns) {
        if (units && cJSON_GetArraySize(units) > 0)
            return rt_cfg_fail(err, "estimator", units_key, "given, but there are no DNN columns");
        return RT_OK;
    }
    if (!units)
        return rt_cfg_fail(err, "estimator", units_key, "missing (required for the DNN part)");
    int n = cJSON_GetArraySize(units);
    if (n > RT_SPEC_MAX_LAYERS)
        return rt_cfg_fail(err, "estimator", units_key, "too many layers (%d, limit %d)", n,
                           RT_SPEC_MAX_LAYERS);
    rt_status st = rt_spec_build_embeddings(s);
    if (st)
        return st;
    if (n && !(g->hidden_layers = calloc((size_t)n, sizeof *g->hidden_layers)))
        return NOMEM(err);
    int i = 0;
    for (const cJSON *u = units->child; u; u = u->next, i++) {
        char key[48];
        int64_t v = 0;
        snprintf(key, sizeof key, "%s[%d]", units_key, i);
        if (!cJSON_IsNumber(u))
            return rt_cfg_fail(err, "estimator", key, "expected a positive integer, got %s",
                               rt_cfg_type_name(u));
        if (!(u->valuedouble >= 1 && u->valuedouble <= RT_SPEC_MAX_WIDTH) ||
            u->valuedouble != (double)(int64_t)u->valuedouble)
            return rt_cfg_fail(err, "estimator", key, "must be an integer in [1, %d], got %g",
                               RT_SPEC_MAX_WIDTH, u->valuedouble);
        v = (int64_t)u->valuedouble;
        char scope[48];
        snprintf(scope, sizeof scope, "dnn/hiddenlayer_%d", i);
        Predictd__DenseLayer *l = new_layer((uint32_t)v, act, scope);
        if (!l)
            return NOMEM(err);
        g->hidden_layers[g->n_hidden_layers++] = l;
        if (batch_norm && !(l->batch_norm = new_batch_norm(i)))
            return NOMEM(err);
    }
    if (!(g->logits_layer =
              new_layer(g->logits_dimension, PREDICTD__ACTIVATION__ACT_LINEAR, "dnn/logits")))
        return NOMEM(err);
    return RT_OK;
}

/* The id space a tree input splits on: 0 for a numeric column (thresholds on
 * its value), else its categories; -1 with *why set when trees cannot read
 * the column. */
static int64_t tree_categories(const Predictd__ModelDef *def, const Predictd__FeatureColumn *fc,
                               const char **why)
{
    switch (fc->type) {
    case PREDICTD__COLUMN_TYPE__NUMERIC:
        if (fc->shape > 1) {
            *why = "a numeric_column of shape > 1: trees split on one value (give each value "
                   "its own numeric_column)";
            return -1;
        }
        return 0;
    case PREDICTD__COLUMN_TYPE__BUCKETIZED: {
        long r = rt_spec_find_fc(def, fc->source);
        if (r >= 0 && def->feature_columns[r]->shape > 1) {
            *why = "a bucketized_column of a numeric_column of shape > 1: trees split on one "
                   "bucket id";
            return -1;
        }
        return (int64_t)fc->n_boundaries + 1;
    }
    case PREDICTD__COLUMN_TYPE__VOCABULARY_LIST:
        return (int64_t)fc->n_vocabulary + fc->num_oov_buckets;
    case PREDICTD__COLUMN_TYPE__VOCABULARY_FILE:
        return fc->vocabulary_size + fc->num_oov_buckets;
    case PREDICTD__COLUMN_TYPE__HASH_BUCKET:
        return fc->hash_bucket_size;
    case PREDICTD__COLUMN_TYPE__INDICATOR: {
        long r = rt_spec_find_fc(def, fc->categorical_column);
        if (r < 0 || def->feature_columns[r]->type == PREDICTD__COLUMN_TYPE__INDICATOR)
            return -1;
        return tree_categories(def, def->feature_columns[r], why);
    }
    case PREDICTD__COLUMN_TYPE__CROSSED:
        *why = "a crossed_column: BoostedTrees do not take crossed columns (the trees find "
               "interactions themselves); list the columns it crosses instead";
        return -1;
    case PREDICTD__COLUMN_TYPE__EMBEDDING:
        *why = "an embedding_column: BoostedTrees take numeric, bucketized, indicator and "
               "categorical columns; list its categorical column instead";
        return -1;
    default:
        *why = "of an unknown kind";
        return -1;
    }
}

/* BoostedTrees*: estimator.feature_columns -> Graph.trees (one input per
 * column, in spec order, no trees yet; bias zeros). The trainer fills the
 * numeric inputs' bin_upper and grows the trees. */
static rt_status build_trees(spec_ctx *s, const cJSON *est)
{
    rt_err *err = s->err;
    Predictd__ModelDef *def = s->def;
    Predictd__Graph *g = def->graph;
    const cJSON *arr = NULL;
    rt_status st = rt_cfg_array(est, "estimator", "feature_columns", RT_CFG_REQUIRED, &arr, err);
    if (st)
        return st;
    int cnt = cJSON_GetArraySize(arr);
    if (cnt == 0)
        return rt_cfg_fail(err, "estimator", "feature_columns",
                           "must list at least one feature column");
    if (cnt > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(err, "estimator", "feature_columns", "too many columns");
    Predictd__TreeEnsemble *te = malloc(sizeof *te);
    if (!te)
        return NOMEM(err);
    predictd__tree_ensemble__init(te);
    g->trees = te;
    if (!(te->inputs = calloc((size_t)cnt, sizeof *te->inputs)) ||
        !(te->bias = calloc(g->logits_dimension, sizeof *te->bias)))
        return NOMEM(err);
    te->n_bias = g->logits_dimension;
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "estimator.feature_columns[%d]", i);
        if (!cJSON_IsString(c))
            return rt_cfg_fail(err, path, "", "expected a feature column name, got %s",
                               rt_cfg_type_name(c));
        long r = rt_spec_find_fc(def, c->valuestring);
        if (r < 0)
            return rt_cfg_fail(err, path, "", "\"%.64s\" is not one of the feature_columns",
                               c->valuestring);
        const char *why = "of an unknown kind";
        int64_t cats = tree_categories(def, def->feature_columns[r], &why);
        if (cats < 0)
            return rt_cfg_fail(err, path, "", "\"%.64s\" is %s", c->valuestring, why);
        if (cats > RT_SPEC_MAX_TREE_CATEGORIES)
            return rt_cfg_fail(err, path, "",
                               "\"%.64s\" has %lld categories; BoostedTrees take at most %d",
                               c->valuestring, (long long)cats, RT_SPEC_MAX_TREE_CATEGORIES);
        for (size_t k = 0; k < te->n_inputs; k++)
            if (strcmp(te->inputs[k]->column, c->valuestring) == 0)
                return rt_cfg_fail(err, path, "", "\"%.64s\" is listed twice", c->valuestring);
        Predictd__TreeInput *in = malloc(sizeof *in);
        if (!in)
            return NOMEM(err);
        predictd__tree_input__init(in);
        te->inputs[te->n_inputs++] = in;
        in->num_categories = (uint32_t)cats;
        if (!(in->column = rt_spec_strndup(c->valuestring, strlen(c->valuestring))))
            return NOMEM(err);
    }
    return RT_OK;
}

rt_status rt_spec_parse_estimator(spec_ctx *s, const cJSON *est)
{
    rt_err *err = s->err;
    if (!cJSON_IsObject(est))
        return rt_cfg_fail(err, "", "estimator", "expected an object, got %s",
                           rt_cfg_type_name(est));
    const char *type = NULL;
    rt_status st = rt_cfg_str(est, "estimator", "type", RT_CFG_REQUIRED, &type, err);
    if (st)
        return st;
    const est_kind *k = NULL;
    for (size_t i = 0; i < sizeof est_kinds / sizeof est_kinds[0]; i++)
        if (strcmp(est_kinds[i].name, type) == 0)
            k = &est_kinds[i];
    if (!k)
        return rt_cfg_fail(err, "estimator", "type",
                           "\"%.64s\" is not one of Estimator, LinearClassifier, LinearRegressor, "
                           "DNNClassifier, DNNRegressor, DNNLinearCombinedClassifier, "
                           "DNNLinearCombinedRegressor, BoostedTreesClassifier, "
                           "BoostedTreesRegressor",
                           type);
    const char *keys[16];
    size_t nk = 0;
    keys[nk++] = "type";
    keys[nk++] = k->classifier ? "n_classes" : "label_dimension";
    if (k->trees) {
        keys[nk++] = "feature_columns";
    } else if (k->combined) {
        keys[nk++] = "loss_reduction";
        keys[nk++] = "weight_column"; /* read by rt_spec.c, before the feature columns */
        keys[nk++] = "linear_feature_columns";
        keys[nk++] = "dnn_feature_columns";
        keys[nk++] = "dnn_hidden_units";
        keys[nk++] = "dnn_activation_fn";
        keys[nk++] = "linear_optimizer";
        keys[nk++] = "dnn_optimizer";
        keys[nk++] = "dnn_dropout";
    } else {
        keys[nk++] = "loss_reduction";
        keys[nk++] = "weight_column";
        keys[nk++] = "feature_columns";
        keys[nk++] = "optimizer";
        if (k->dnn) {
            keys[nk++] = "hidden_units";
            keys[nk++] = "activation_fn";
            keys[nk++] = "dropout";
        }
    }
    if (k->dnn)
        keys[nk++] = "batch_norm";
    keys[nk] = NULL;
    if ((st = rt_cfg_check_keys(est, "estimator", keys, k->trees ? trees_train_keys : NULL,
                                err)))
        return st;
    Predictd__Graph *g = s->def->graph;
    if (g->estimator != protobuf_c_empty_string)
        free(g->estimator);
    if (!(g->estimator = rt_spec_strndup(type, strlen(type))))
        return NOMEM(err);
    if ((st = parse_head(s, est, k)))
        return st;
    if (k->trees) {
        if (!k->classifier && g->logits_dimension != 1)
            return rt_cfg_fail(err, "estimator", "label_dimension",
                               "BoostedTreesRegressor takes one target (label_dimension 1), as "
                               "TensorFlow's");
        return build_trees(s, est);
    }

    const char *lin_key = k->combined ? "linear_feature_columns" : "feature_columns";
    const char *dnn_key = k->combined ? "dnn_feature_columns" : "feature_columns";
    const char *units_key = k->combined ? "dnn_hidden_units" : "hidden_units";
    const char *act_key = k->combined ? "dnn_activation_fn" : "activation_fn";
    const char *drop_key = k->combined ? "dnn_dropout" : "dropout";
    if (k->linear && (st = parse_col_list(s, est, lin_key, false, &g->linear_columns,
                                          &g->n_linear_columns)))
        return st;
    if (k->dnn &&
        (st = parse_col_list(s, est, dnn_key, true, &g->dnn_columns, &g->n_dnn_columns)))
        return st;
    if (!g->n_linear_columns && !g->n_dnn_columns)
        return rt_cfg_fail(err, "estimator",
                           k->combined ? "linear_feature_columns" : "feature_columns",
                           k->combined ? "at least one of linear_feature_columns and "
                                       "dnn_feature_columns must list a column"
                                     : "must list at least one feature column");
    Predictd__Activation act = PREDICTD__ACTIVATION__ACT_RELU;
    const cJSON *units = NULL;
    bool batch_norm = false;
    if (k->dnn && (st = rt_cfg_bool(est, "estimator", "batch_norm", 0, &batch_norm, err)))
        return st;
    if (k->dnn) {
        if ((st = parse_activation(s, est, act_key, &act)) ||
            (st = rt_cfg_array(est, "estimator", units_key, 0, &units, err)) ||
            (st = parse_dropout(s, est, drop_key)))
            return st;
        if (!k->combined && !units)
            return rt_cfg_fail(err, "estimator", units_key, "missing (required)");
    }
    if ((st = rt_spec_build_linear(s)) || (st = build_dnn(s, units, act, units_key, batch_norm)))
        return st;
    return RT_OK;
}

/* ------------------------------------------------------------ signatures */

static Predictd__TensorSpec *tspec(const char *name, Predictd__DType dt, int64_t d1)
{
    Predictd__TensorSpec *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    predictd__tensor_spec__init(t);
    t->dtype = dt;
    t->name = rt_spec_strndup(name, strlen(name));
    t->shape = malloc(2 * sizeof(int64_t));
    if (!t->name || !t->shape) {
        predictd__tensor_spec__free_unpacked(t, NULL);
        return NULL;
    }
    t->shape[t->n_shape++] = -1;
    if (d1 > 0)
        t->shape[t->n_shape++] = d1;
    return t;
}

/* Appends a tensor spec to an array with room (caller sized it). */
static rt_status add_spec(Predictd__TensorSpec **arr, size_t *n, const char *name,
                          Predictd__DType dt, int64_t d1, rt_err *err)
{
    Predictd__TensorSpec *t = tspec(name, dt, d1);
    if (!t)
        return NOMEM(err);
    arr[(*n)++] = t;
    return RT_OK;
}

/* Does some feature column read raw column `name`? Returns the numeric
 * shape it is read with (1 when only categorical columns read it), 0 if none. */
static uint32_t raw_read_shape(const Predictd__ModelDef *def, const char *name)
{
    uint32_t shape = 0;
    for (size_t i = 0; i < def->n_feature_columns; i++) {
        const rt_fc_kind *k = rt_fc_kind_of(def->feature_columns[i]->type);
        uint32_t s = k ? k->raw_shape(def->feature_columns[i], name) : 0;
        if (s > shape)
            shape = s;
    }
    return shape;
}

static rt_status signature_inputs(spec_ctx *s, Predictd__SignatureDef *sig)
{
    const Predictd__ModelDef *def = s->def;
    size_t cap = def->n_raw_columns + 1;
    if (!(sig->inputs = calloc(cap, sizeof *sig->inputs)))
        return NOMEM(s->err);
    if (def->receiver == PREDICTD__RECEIVER__RECEIVER_CSV)
        return add_spec(sig->inputs, &sig->n_inputs, "csv_row", PREDICTD__DTYPE__DT_STRING, 0,
                        s->err);
    if (def->receiver == PREDICTD__RECEIVER__RECEIVER_EXAMPLE)
        return add_spec(sig->inputs, &sig->n_inputs, "example_proto",
                        PREDICTD__DTYPE__DT_STRING, 0, s->err);
    for (size_t i = 0; i < def->n_raw_columns; i++) {
        const Predictd__RawColumn *rc = def->raw_columns[i];
        if (rc->is_label || rc->unused || rc->is_weight)
            continue;
        uint32_t shape = raw_read_shape(def, rc->name);
        if (!shape)
            continue;
        rt_status st = add_spec(sig->inputs, &sig->n_inputs, rc->name, rc->dtype,
                                shape > 1 ? (int64_t)shape : 0, s->err);
        if (st)
            return st;
    }
    return RT_OK;
}

/* One head's predict outputs into o (at most 7), each name prefix + its own. */
static rt_status head_outputs(const Predictd__Head *h, int64_t ld, const char *prefix,
                              Predictd__TensorSpec **o, size_t *n, rt_err *err);

static rt_status predict_outputs(spec_ctx *s, Predictd__SignatureDef *sig, bool merged)
{
    const Predictd__Graph *gd = s->def->graph;
    size_t nh = gd->n_heads > 1 ? gd->n_heads : 1;
    rt_err *err = s->err;
    if (!(sig->outputs = calloc(8 * nh, sizeof *sig->outputs)))
        return NOMEM(err);
    if (nh == 1 || !merged) /* serving_default: the first head's, as TF's MultiHead */
        return head_outputs(nh == 1 ? s->def->head : gd->heads[0]->head,
                            nh == 1 ? (int64_t)gd->logits_dimension : 0, "", sig->outputs,
                            &sig->n_outputs, err);
    /* TF's MultiHead predict signature: every head's, as "<head>/<output>" */
    for (size_t k = 0; k < nh; k++) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s/", gd->heads[k]->name);
        rt_status st = head_outputs(gd->heads[k]->head, 0, prefix, sig->outputs,
                                    &sig->n_outputs, err);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

/* add_spec under prefix + name. */
static rt_status add_named(Predictd__TensorSpec **o, size_t *n, const char *prefix,
                           const char *name, Predictd__DType dt, int64_t d1, rt_err *err)
{
    char full[320];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    return add_spec(o, n, full, dt, d1, err);
}

static rt_status head_outputs(const Predictd__Head *h, int64_t ld, const char *prefix,
                              Predictd__TensorSpec **o, size_t *n, rt_err *err)
{
    rt_status st = RT_OK;
    if (ld == 0) /* one of several heads: its own width */
        ld = h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ||
                     h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL
                 ? h->n_classes
                 : 1;
    if (h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION)
        return add_named(o, n, prefix, "predictions", PREDICTD__DTYPE__DT_FLOAT, ld, err);
    int64_t nc = h->n_classes;
    if (h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL) /* TF's MultiLabelHead.predictions */
        return (st = add_named(o, n, prefix, "logits", PREDICTD__DTYPE__DT_FLOAT, nc, err))
                   ? st
                   : add_named(o, n, prefix, "probabilities", PREDICTD__DTYPE__DT_FLOAT, nc, err);
    if ((st = add_named(o, n, prefix, "all_class_ids", PREDICTD__DTYPE__DT_INT32, nc, err)) ||
        (st = add_named(o, n, prefix, "all_classes", PREDICTD__DTYPE__DT_STRING, nc, err)) ||
        (st = add_named(o, n, prefix, "class_ids", PREDICTD__DTYPE__DT_INT64, 1, err)) ||
        (st = add_named(o, n, prefix, "classes", PREDICTD__DTYPE__DT_STRING, 1, err)))
        return st;
    if (h->type == PREDICTD__HEAD_TYPE__HEAD_BINARY &&
        (st = add_named(o, n, prefix, "logistic", PREDICTD__DTYPE__DT_FLOAT, 1, err)))
        return st;
    if ((st = add_named(o, n, prefix, "logits", PREDICTD__DTYPE__DT_FLOAT, ld, err)) ||
        (st = add_named(o, n, prefix, "probabilities", PREDICTD__DTYPE__DT_FLOAT, nc, err)))
        return st;
    return RT_OK;
}

static Predictd__SignatureDef *new_sig(Predictd__ModelDef *def, const char *name,
                                       const char *method)
{
    Predictd__SignatureDef *sig = malloc(sizeof *sig);
    if (!sig)
        return NULL;
    predictd__signature_def__init(sig);
    def->signatures[def->n_signatures++] = sig;
    sig->name = rt_spec_strndup(name, strlen(name));
    sig->method_name = rt_spec_strndup(method, strlen(method));
    if (!sig->name || !sig->method_name)
        return NULL;
    return sig;
}

/* A classification ("classes", "scores": nc each) or regression ("outputs")
 * signature named name, reading serialized examples ("inputs"). */
static rt_status examples_sig(Predictd__ModelDef *def, const char *name, bool regress,
                              int64_t nc, rt_err *err)
{
    Predictd__SignatureDef *sig =
        regress ? new_sig(def, name, "tensorflow/serving/regress")
                : new_sig(def, name, "tensorflow/serving/classify");
    if (!sig || !(sig->inputs = calloc(1, sizeof *sig->inputs)) ||
        !(sig->outputs = calloc(2, sizeof *sig->outputs)))
        return NOMEM(err);
    rt_status st;
    if ((st = add_spec(sig->inputs, &sig->n_inputs, "inputs", PREDICTD__DTYPE__DT_STRING, 0,
                       err)))
        return st;
    if (regress)
        return add_spec(sig->outputs, &sig->n_outputs, "outputs", PREDICTD__DTYPE__DT_FLOAT, 1,
                        err);
    if ((st = add_spec(sig->outputs, &sig->n_outputs, "classes", PREDICTD__DTYPE__DT_STRING, nc,
                       err)))
        return st;
    return add_spec(sig->outputs, &sig->n_outputs, "scores", PREDICTD__DTYPE__DT_FLOAT, nc, err);
}

/* A predict signature `name` over head h's outputs (unprefixed) and the
 * model's inputs. */
static rt_status head_predict_sig(spec_ctx *s, const Predictd__Head *h, const char *name)
{
    Predictd__SignatureDef *sig = new_sig(s->def, name, "tensorflow/serving/predict");
    if (!sig)
        return NOMEM(s->err);
    rt_status st = signature_inputs(s, sig);
    if (st || !(sig->outputs = calloc(8, sizeof *sig->outputs)))
        return st ? st : NOMEM(s->err);
    return head_outputs(h, 0, "", sig->outputs, &sig->n_outputs, s->err);
}

/* One of several heads' own signatures, as TF's MultiHead exports them (its
 * export_outputs: the head's own under "<head>/<key>", its default under
 * "<head>"): "<head>/classification" (classifiers), "<head>/regression"
 * (binary classifiers, one-value regressors), "<head>/predict" (its outputs,
 * unprefixed) and "<head>" (its default: classification for a classifier,
 * regression for a one-value regressor, else predict). */
static rt_status head_signatures(spec_ctx *s, size_t k)
{
    Predictd__ModelDef *def = s->def;
    const Predictd__Head *h = def->graph->heads[k]->head;
    const char *hn = def->graph->heads[k]->name;
    bool regression = h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    bool classifies = !regression;
    bool regresses = h->type == PREDICTD__HEAD_TYPE__HEAD_BINARY ||
                     (regression && h->label_dimension <= 1);
    char name[320];
    rt_status st;
    if (classifies) {
        snprintf(name, sizeof name, "%s/classification", hn);
        if ((st = examples_sig(def, name, false, h->n_classes, s->err)) ||
            (st = examples_sig(def, hn, false, h->n_classes, s->err)))
            return st;
    }
    snprintf(name, sizeof name, "%s/predict", hn);
    if ((st = head_predict_sig(s, h, name)))
        return st;
    if (regresses) {
        snprintf(name, sizeof name, "%s/regression", hn);
        if ((st = examples_sig(def, name, true, 0, s->err)) ||
            (regression && (st = examples_sig(def, hn, true, 0, s->err))))
            return st;
    } else if (regression) { /* several values: its default is its predict */
        return head_predict_sig(s, h, hn);
    }
    return RT_OK;
}

static int cmp_sig(const void *a, const void *b)
{
    const char *x = (*(Predictd__SignatureDef *const *)a)->name;
    const char *y = (*(Predictd__SignatureDef *const *)b)->name;
    return strcmp(x ? x : "", y ? y : "");
}

rt_status rt_spec_build_signatures(spec_ctx *s)
{
    Predictd__ModelDef *def = s->def;
    rt_err *err = s->err;
    bool regress = def->head->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    bool multi = def->graph && def->graph->n_heads > 1;
    size_t nh = multi ? def->graph->n_heads : 0;
    if (!(def->signatures = calloc(3 + 4 * nh, sizeof *def->signatures)))
        return NOMEM(err);
    rt_status st;
    /* several heads: each head's own signatures (head_signatures); no bare
     * classification / regression one (TF's MultiHead has none) */
    for (size_t k = 0; k < nh; k++)
        if ((st = head_signatures(s, k)))
            return st;
    if (!multi && (!regress || def->head->label_dimension == 1) &&
        (st = examples_sig(def, regress ? "regression" : "classification", regress,
                           def->head->n_classes, err)))
        return st;
    static const char *const names[] = {"predict", "serving_default"};
    for (size_t i = 0; i < 2; i++) {
        Predictd__SignatureDef *sig = new_sig(def, names[i], "tensorflow/serving/predict");
        if (!sig)
            return NOMEM(err);
        if ((st = signature_inputs(s, sig)) || (st = predict_outputs(s, sig, i == 0)))
            return st;
    }
    if (!multi)
        return rt_spec_add_regression_signature(def, err);
    /* several heads: sorted by name, as saved_model_cli lists them */
    qsort(def->signatures, def->n_signatures, sizeof *def->signatures, cmp_sig);
    return RT_OK;
}

rt_status rt_spec_add_regression_signature(Predictd__ModelDef *def, rt_err *err)
{
    bool classification = false;
    if (!def->head || def->head->type != PREDICTD__HEAD_TYPE__HEAD_BINARY)
        return RT_OK;
    for (size_t k = 0; k < def->n_signatures; k++) {
        const char *name = def->signatures[k]->name ? def->signatures[k]->name : "";
        if (!strcmp(name, "regression"))
            return RT_OK;
        classification |= !strcmp(name, "classification");
    }
    if (!classification)
        return RT_OK; /* it reads the same serialized examples ("inputs") */
    Predictd__SignatureDef **grown =
        realloc(def->signatures, (def->n_signatures + 1) * sizeof *grown);
    if (!grown)
        return NOMEM(err);
    def->signatures = grown;
    Predictd__SignatureDef *sig = new_sig(def, "regression", "tensorflow/serving/regress");
    if (!sig || !(sig->inputs = calloc(1, sizeof *sig->inputs)) ||
        !(sig->outputs = calloc(1, sizeof *sig->outputs)))
        return NOMEM(err);
    rt_status st;
    if ((st = add_spec(sig->inputs, &sig->n_inputs, "inputs", PREDICTD__DTYPE__DT_STRING, 0,
                       err)) ||
        (st = add_spec(sig->outputs, &sig->n_outputs, "outputs", PREDICTD__DTYPE__DT_FLOAT, 1,
                       err)))
        return st;
    /* new_sig appended it: move it to its place by name */
    size_t at = def->n_signatures - 1;
    while (at > 0 && strcmp(def->signatures[at - 1]->name ? def->signatures[at - 1]->name : "",
                            "regression") > 0) {
        def->signatures[at] = def->signatures[at - 1];
        def->signatures[at - 1] = sig;
        at--;
    }
    return RT_OK;
}
