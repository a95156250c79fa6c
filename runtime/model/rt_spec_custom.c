/*
 * rt_spec_custom.c — the custom estimator's spec (estimator type
 * "Estimator", docs/trainer.md "Custom estimator"): estimator.model's named
 * inputs (input_layer groups of dense feature columns, linear "wide"
 * blocks), its layers (a DAG of named nodes listed after the nodes they
 * read) and the nodes its TensorBoard summaries show, into Graph.nodes and
 * Graph.summaries; its heads are rt_spec_heads.c's.
 *
 * Everything is checked here, before training, and every refusal names the
 * path of the offending field: unknown names, a node read before it exists,
 * cycles (told apart from a mere ordering mistake), widths that do not fit
 * (add and multiply of different widths, a head's logits node of the wrong
 * width for its label), units 0, unknown activations and initializers.
 */
#include "rt_model.h"
#include "rt_spec_internal.h"
#include "rt_model_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")

static const struct {
    const char *name;
    Predictd__Activation act;
} acts[] = {
    {"linear", PREDICTD__ACTIVATION__ACT_LINEAR},   {"relu", PREDICTD__ACTIVATION__ACT_RELU},
    {"relu6", PREDICTD__ACTIVATION__ACT_RELU6},     {"elu", PREDICTD__ACTIVATION__ACT_ELU},
    {"selu", PREDICTD__ACTIVATION__ACT_SELU},       {"tanh", PREDICTD__ACTIVATION__ACT_TANH},
    {"sigmoid", PREDICTD__ACTIVATION__ACT_SIGMOID}, {"softplus", PREDICTD__ACTIVATION__ACT_SOFTPLUS},
    {"leaky_relu", PREDICTD__ACTIVATION__ACT_LEAKY_RELU}, {"gelu", PREDICTD__ACTIVATION__ACT_GELU},
    {"swish", PREDICTD__ACTIVATION__ACT_SWISH},     {"silu", PREDICTD__ACTIVATION__ACT_SWISH},
};

static const char *const initializers[] = {"glorot_uniform", "glorot_normal", "he_uniform",
                                           "he_normal",      "lecun_uniform", "lecun_normal",
                                           "zeros",          "ones",          NULL};

static const struct {
    const char *name;
    Predictd__NodeKind kind;
    const char *const *keys;
} layer_kinds[] = {
#define K(...) (const char *const[]){"name", "type", __VA_ARGS__, NULL}
    {"dense", PREDICTD__NODE_KIND__NODE_DENSE,
     K("inputs", "units", "activation", "alpha", "kernel_initializer", "bias_initializer", "l1",
       "l2", "scope")},
    {"activation", PREDICTD__NODE_KIND__NODE_ACTIVATION, K("inputs", "activation", "alpha")},
    {"concat", PREDICTD__NODE_KIND__NODE_CONCAT, K("inputs")},
    {"add", PREDICTD__NODE_KIND__NODE_ADD, K("inputs")},
    {"multiply", PREDICTD__NODE_KIND__NODE_MULTIPLY, K("inputs")},
    {"dropout", PREDICTD__NODE_KIND__NODE_DROPOUT, K("inputs", "rate")},
    {"batch_norm", PREDICTD__NODE_KIND__NODE_BATCH_NORM, K("inputs", "epsilon", "momentum")},
    {"embedding", PREDICTD__NODE_KIND__NODE_EMBEDDING, K("column")},
#undef K
};

/* The parse's view of every node (inputs first, then layers). */
typedef struct cnode {
    const char *name;
    const cJSON *json;
    char path[64];     /* estimator.model.layers[3] */
    Predictd__Node *nd;
} cnode;

typedef struct cgraph {
    spec_ctx *s;
    cnode *v;
    size_t n, done; /* nodes; nodes parsed so far */
} cgraph;

static long find_node(const cgraph *g, const char *name)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->v[i].name, name) == 0)
            return (long)i;
    return -1;
}

/* Does node `from` read node `to`, directly or through others (by the
 * spec's names, before they are checked)? seen: [n] scratch. */
static bool reaches(const cgraph *g, size_t from, size_t to, unsigned char *seen)
{
    if (from == to)
        return true;
    if (seen[from])
        return false;
    seen[from] = 1;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(g->v[from].json, "inputs");
    for (const cJSON *c = cJSON_IsArray(in) ? in->child : NULL; c; c = c->next) {
        long j = cJSON_IsString(c) ? find_node(g, c->valuestring) : -1;
        if (j >= 0 && reaches(g, (size_t)j, to, seen))
            return true;
    }
    return false;
}

static rt_status tensor_name(char **dst, const char *node, const char *what, rt_err *err)
{
    char buf[RT_SPEC_MAX_NAME + 64];
    snprintf(buf, sizeof buf, "%s/%s", node, what);
    return rt_spec_set_str(dst, buf, err);
}

/* A list of feature column names (key of o at path) into nd->columns:
 * dense ones (input_layer) or those the linear part takes. */
static rt_status parse_columns(cgraph *g, const cJSON *o, const char *path, bool linear,
                               Predictd__Node *nd)
{
    spec_ctx *s = g->s;
    const cJSON *arr = NULL;
    rt_status st = rt_cfg_array(o, path, "columns", RT_CFG_REQUIRED, &arr, s->err);
    if (st)
        return st;
    int cnt = cJSON_GetArraySize(arr);
    if (cnt == 0 || cnt > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(s->err, path, "columns", "must list 1..%d feature columns",
                           RT_SPEC_MAX_ITEMS);
    if (!(nd->columns = calloc((size_t)cnt, sizeof(char *))))
        return NOMEM(s->err);
    uint64_t width = 0;
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char key[32];
        snprintf(key, sizeof key, "columns[%d]", i);
        if (!cJSON_IsString(c))
            return rt_cfg_fail(s->err, path, key, "expected a feature column name, got %s",
                               rt_cfg_type_name(c));
        long r = rt_spec_find_fc(s->def, c->valuestring);
        if (r < 0)
            return rt_cfg_fail(s->err, path, key, "\"%.64s\" is not one of the feature_columns",
                               c->valuestring);
        const rt_fc_kind *k = rt_fc_kind_of(s->def->feature_columns[r]->type);
        if (!k || (linear ? !k->linear_ok : !k->dnn_ok))
            return rt_cfg_fail(s->err, path, key,
                               linear ? "\"%.64s\" is a %s: a linear block takes categorical, "
                                        "numeric and indicator columns"
                                      : "\"%.64s\" is a %s, a categorical column: an "
                                        "input_layer takes dense columns; wrap it in an "
                                        "indicator_column or an embedding_column",
                               c->valuestring, k ? k->spec_name : "?");
        for (size_t q = 0; q < nd->n_columns; q++)
            if (strcmp(nd->columns[q], c->valuestring) == 0)
                return rt_cfg_fail(s->err, path, key, "\"%.64s\" is listed twice",
                                   c->valuestring);
        if ((st = rt_spec_set_str(&nd->columns[nd->n_columns], c->valuestring, s->err)))
            return st;
        nd->n_columns++;
        width += rt_spec_fc_dense_width(s->def, r);
    }
    if (!linear) {
        if (width == 0 || width > RT_SPEC_MAX_WIDTH)
            return rt_cfg_fail(s->err, path, "columns", "input width %llu is out of range "
                               "[1, %d]", (unsigned long long)width, RT_SPEC_MAX_WIDTH);
        nd->units = (uint32_t)width;
    }
    return RT_OK;
}

static rt_status parse_activation(cgraph *g, const cJSON *o, const char *path, int flags,
                                  Predictd__Node *nd)
{
    const char *a = "linear";
    rt_status st = rt_cfg_str(o, path, "activation", flags, &a, g->s->err);
    if (st)
        return st;
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (strcmp(acts[i].name, a) == 0) {
            nd->activation = acts[i].act;
            double alpha = 0.0;
            if ((st = rt_cfg_num(o, path, "alpha", 0, 0.0, 1.0, &alpha, g->s->err)))
                return st;
            if (alpha != 0.0 && nd->activation != PREDICTD__ACTIVATION__ACT_LEAKY_RELU)
                return rt_cfg_fail(g->s->err, path, "alpha", "only leaky_relu takes alpha");
            nd->alpha = (float)alpha;
            return RT_OK;
        }
    return rt_cfg_fail(g->s->err, path, "activation",
                       "\"%.64s\" is not one of linear, relu, relu6, elu, selu, tanh, sigmoid, "
                       "softplus, leaky_relu, gelu, swish, silu",
                       a);
}

static rt_status parse_initializer(cgraph *g, const cJSON *o, const char *path, const char *key,
                                   const char *dflt, char **out)
{
    const char *v = dflt;
    rt_status st = rt_cfg_str(o, path, key, 0, &v, g->s->err);
    if (st)
        return st;
    for (size_t i = 0; initializers[i]; i++)
        if (strcmp(initializers[i], v) == 0)
            return rt_spec_set_str(out, v, g->s->err);
    return rt_cfg_fail(g->s->err, path, key,
                       "\"%.64s\" is not one of glorot_uniform, glorot_normal, he_uniform, "
                       "he_normal, lecun_uniform, lecun_normal, zeros, ones",
                       v);
}

/* Node i's "inputs": earlier nodes; cycles and forward reads refused. */
static rt_status parse_inputs(cgraph *g, size_t i, Predictd__Node *nd, uint32_t *widths)
{
    spec_ctx *s = g->s;
    cnode *c = &g->v[i];
    const cJSON *arr = NULL;
    rt_status st = rt_cfg_array(c->json, c->path, "inputs", RT_CFG_REQUIRED, &arr, s->err);
    if (st)
        return st;
    int cnt = cJSON_GetArraySize(arr);
    if (cnt == 0 || cnt > RT_SPEC_MAX_NODE_INPUTS)
        return rt_cfg_fail(s->err, c->path, "inputs", "must list 1..%d nodes",
                           RT_SPEC_MAX_NODE_INPUTS);
    if (!(nd->inputs = calloc((size_t)cnt, sizeof(char *))))
        return NOMEM(s->err);
    int k = 0;
    for (const cJSON *e = arr->child; e; e = e->next, k++) {
        char key[32];
        snprintf(key, sizeof key, "inputs[%d]", k);
        if (!cJSON_IsString(e))
            return rt_cfg_fail(s->err, c->path, key, "expected a node name, got %s",
                               rt_cfg_type_name(e));
        long j = find_node(g, e->valuestring);
        if (j < 0)
            return rt_cfg_fail(s->err, c->path, key,
                               "\"%.64s\" is not a node (an input or a layer's name)",
                               e->valuestring);
        if ((size_t)j >= i) {
            unsigned char *seen = calloc(g->n, 1);
            if (!seen)
                return NOMEM(s->err);
            bool cyc = reaches(g, (size_t)j, i, seen);
            free(seen);
            if (cyc)
                return rt_cfg_fail(s->err, c->path, key,
                                   "\"%.64s\" makes a cycle: it reads \"%.64s\", directly or "
                                   "through other nodes; a model graph is acyclic",
                                   e->valuestring, c->name);
            return rt_cfg_fail(s->err, c->path, key,
                               "\"%.64s\" is read before it exists (it is %s); list every "
                               "node after the nodes it reads",
                               e->valuestring, g->v[j].path + strlen("estimator.model."));
        }
        widths[k] = g->v[j].nd->units;
        if ((st = rt_spec_set_str(&nd->inputs[nd->n_inputs], e->valuestring, s->err)))
            return st;
        nd->n_inputs++;
    }
    return RT_OK;
}

/* A dense node's "scope" (its tensors' names' prefix, the node's name by
 * default; "dnn/hiddenlayer_0" names them as the canned DNN's): letters,
 * digits, _ . - and / between non-empty parts, used by no earlier node. */
static rt_status check_scope(cgraph *g, size_t i, const char *scope)
{
    const char *path = g->v[i].path;
    size_t len = strlen(scope);
    bool ok = len > 0 && len <= RT_SPEC_MAX_NAME && scope[0] != '/' && scope[len - 1] != '/' &&
              !strstr(scope, "//");
    for (size_t k = 0; ok && k < len; k++) {
        char ch = scope[k];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_' || ch == '.' || ch == '-' || ch == '/';
    }
    if (!ok)
        return rt_cfg_fail(g->s->err, path, "scope", "\"%.64s\" is not a tensor scope "
                           "(letters, digits, _ . - and / between non-empty parts)", scope);
    for (size_t k = 0; k < i; k++) {
        const Predictd__Node *o = g->v[k].nd;
        size_t ol = o->kernel ? strlen(o->kernel) : 0;
        if (o->kernel && ol == len + 7 && strncmp(o->kernel, scope, len) == 0)
            return rt_cfg_fail(g->s->err, path, "scope", "\"%.64s\" is %s's already: "
                               "tensors would share names", scope, o->name);
    }
    return RT_OK;
}

/* Layer i: its kind's keys, inputs, width and tensors. */
static rt_status parse_layer(cgraph *g, size_t i)
{
    spec_ctx *s = g->s;
    rt_err *err = s->err;
    cnode *c = &g->v[i];
    Predictd__Node *nd = c->nd;
    const char *type = NULL;
    rt_status st = rt_cfg_str(c->json, c->path, "type", RT_CFG_REQUIRED, &type, err);
    if (st)
        return st;
    size_t kx = 0;
    while (kx < sizeof layer_kinds / sizeof layer_kinds[0] && strcmp(layer_kinds[kx].name, type))
        kx++;
    if (kx == sizeof layer_kinds / sizeof layer_kinds[0])
        return rt_cfg_fail(err, c->path, "type",
                           "\"%.64s\" is not one of dense, activation, concat, add, multiply, "
                           "dropout, batch_norm, embedding",
                           type);
    if ((st = rt_cfg_check_keys(c->json, c->path, layer_kinds[kx].keys, NULL, err)))
        return st;
    nd->kind = layer_kinds[kx].kind;
    uint32_t w[RT_SPEC_MAX_NODE_INPUTS];
    if (nd->kind == PREDICTD__NODE_KIND__NODE_EMBEDDING) {
        const char *col = NULL;
        if ((st = rt_cfg_str(c->json, c->path, "column", RT_CFG_REQUIRED, &col, err)))
            return st;
        long r = rt_spec_find_fc(s->def, col);
        if (r < 0)
            return rt_cfg_fail(err, c->path, "column", "\"%.64s\" is not one of the "
                               "feature_columns", col);
        Predictd__ColumnType t = s->def->feature_columns[r]->type;
        if (t != PREDICTD__COLUMN_TYPE__EMBEDDING && t != PREDICTD__COLUMN_TYPE__SHARED_EMBEDDING)
            return rt_cfg_fail(err, c->path, "column", "\"%.64s\" is a %s: an embedding node "
                               "reads an embedding_column", col, rt_spec_fc_kind_name(t));
        if (!(nd->columns = calloc(1, sizeof(char *))) || (st = rt_spec_set_str(&nd->columns[0], col, err)))
            return st ? st : NOMEM(err);
        nd->n_columns = 1;
        nd->units = (uint32_t)rt_spec_fc_dense_width(s->def, r);
        return RT_OK;
    }
    if ((st = parse_inputs(g, i, nd, w)))
        return st;
    size_t n_in = nd->n_inputs;
    bool one = nd->kind != PREDICTD__NODE_KIND__NODE_CONCAT &&
               nd->kind != PREDICTD__NODE_KIND__NODE_ADD &&
               nd->kind != PREDICTD__NODE_KIND__NODE_MULTIPLY;
    if (one && n_in != 1)
        return rt_cfg_fail(err, c->path, "inputs", "a %s node reads one node, got %zu", type,
                           n_in);
    if (!one && nd->kind != PREDICTD__NODE_KIND__NODE_CONCAT && n_in < 2)
        return rt_cfg_fail(err, c->path, "inputs", "a %s node reads two or more nodes", type);
    switch (nd->kind) {
    case PREDICTD__NODE_KIND__NODE_DENSE: {
        int64_t units = 0;
        double l1 = 0, l2 = 0;
        if ((st = rt_cfg_int(c->json, c->path, "units", RT_CFG_REQUIRED, 1, RT_SPEC_MAX_WIDTH,
                             &units, err)) ||
            (st = parse_activation(g, c->json, c->path, 0, nd)) ||
            (st = parse_initializer(g, c->json, c->path, "kernel_initializer", "glorot_uniform",
                                    &nd->kernel_initializer)) ||
            (st = parse_initializer(g, c->json, c->path, "bias_initializer", "zeros",
                                    &nd->bias_initializer)) ||
            (st = rt_cfg_num(c->json, c->path, "l1", 0, 0.0, RT_SPEC_MAX_F32, &l1, err)) ||
            (st = rt_cfg_num(c->json, c->path, "l2", 0, 0.0, RT_SPEC_MAX_F32, &l2, err)))
            return st;
        nd->units = (uint32_t)units;
        nd->l1 = (float)l1;
        nd->l2 = (float)l2;
        const char *scope = c->name;
        if ((st = rt_cfg_str(c->json, c->path, "scope", 0, &scope, err)) ||
            (st = check_scope(g, i, scope)) ||
            (st = tensor_name(&nd->kernel, scope, "kernel", err)) ||
            (st = tensor_name(&nd->bias, scope, "bias", err)))
            return st;
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_ACTIVATION:
        nd->units = w[0];
        return parse_activation(g, c->json, c->path, RT_CFG_REQUIRED, nd);
    case PREDICTD__NODE_KIND__NODE_DROPOUT: {
        double rate = 0;
        if ((st = rt_cfg_num(c->json, c->path, "rate", RT_CFG_REQUIRED, 0.0, 0.99, &rate, err)))
            return st;
        nd->rate = (float)rate;
        nd->units = w[0];
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_BATCH_NORM: {
        double eps = 0.001, mom = 0.99;
        if ((st = rt_cfg_num(c->json, c->path, "epsilon", 0, 1e-12, 1.0, &eps, err)) ||
            (st = rt_cfg_num(c->json, c->path, "momentum", 0, 0.0, 1.0, &mom, err)))
            return st;
        nd->units = w[0];
        Predictd__BatchNorm *bn = malloc(sizeof *bn);
        if (!bn)
            return NOMEM(err);
        predictd__batch_norm__init(bn);
        nd->batch_norm = bn;
        bn->epsilon = (float)eps;
        bn->momentum = (float)mom;
        if ((st = tensor_name(&bn->gamma, c->name, "gamma", err)) ||
            (st = tensor_name(&bn->beta, c->name, "beta", err)) ||
            (st = tensor_name(&bn->moving_mean, c->name, "moving_mean", err)) ||
            (st = tensor_name(&bn->moving_variance, c->name, "moving_variance", err)))
            return st;
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_CONCAT: {
        uint64_t sum = 0;
        for (size_t k = 0; k < n_in; k++)
            sum += w[k];
        if (sum > RT_SPEC_MAX_WIDTH)
            return rt_cfg_fail(err, c->path, "inputs", "width %llu is out of range [1, %d]",
                               (unsigned long long)sum, RT_SPEC_MAX_WIDTH);
        nd->units = (uint32_t)sum;
        return RT_OK;
    }
    default: /* add, multiply */
        for (size_t k = 1; k < n_in; k++)
            if (w[k] != w[0]) {
                char key[32];
                snprintf(key, sizeof key, "inputs[%zu]", k);
                return rt_cfg_fail(err, c->path, key,
                                   "\"%.64s\" is %u wide, \"%.64s\" %u: a %s node reads nodes "
                                   "of one width",
                                   nd->inputs[k], w[k], nd->inputs[0], w[0], type);
            }
        nd->units = w[0];
        return RT_OK;
    }
}

/* Input group i ("inputs"[k]): input_layer (default) or linear. */
static rt_status parse_input(cgraph *g, size_t i)
{
    static const char *const keys[] = {"name", "type", "columns", "units", NULL};
    spec_ctx *s = g->s;
    cnode *c = &g->v[i];
    const char *type = "input_layer";
    rt_status st = rt_cfg_check_keys(c->json, c->path, keys, NULL, s->err);
    if (!st)
        st = rt_cfg_str(c->json, c->path, "type", 0, &type, s->err);
    if (st)
        return st;
    bool linear = strcmp(type, "linear") == 0;
    if (!linear && strcmp(type, "input_layer") != 0)
        return rt_cfg_fail(s->err, c->path, "type", "\"%.64s\" is not input_layer or linear",
                           type);
    c->nd->kind = linear ? PREDICTD__NODE_KIND__NODE_LINEAR : PREDICTD__NODE_KIND__NODE_INPUT;
    if ((st = parse_columns(g, c->json, c->path, linear, c->nd)))
        return st;
    if (!linear) {
        if (cJSON_GetObjectItemCaseSensitive(c->json, "units"))
            return rt_cfg_fail(s->err, c->path, "units", "an input_layer's width is its columns'");
        return RT_OK;
    }
    int64_t units = 1;
    if ((st = rt_cfg_int(c->json, c->path, "units", 0, 1, RT_SPEC_MAX_WIDTH, &units, s->err)))
        return st;
    c->nd->units = (uint32_t)units;
    return tensor_name(&c->nd->bias, c->name, "bias", s->err);
}

/* The canned parts the nodes stand on: the linear block's columns as
 * Graph.linear_columns (its weights named as the canned linear part's), the
 * input and embedding nodes' columns as Graph.dnn_columns (the one input
 * vector the runtime builds, its embedding tables named as the canned
 * DNN's); each input node reads its columns' slices of that vector. */
static rt_status build_parts(cgraph *g)
{
    spec_ctx *s = g->s;
    Predictd__Graph *gr = s->def->graph;
    size_t total = 0;
    long lin = -1;
    for (size_t i = 0; i < g->n; i++) {
        const Predictd__Node *nd = g->v[i].nd;
        if (nd->kind == PREDICTD__NODE_KIND__NODE_LINEAR) {
            if (lin >= 0)
                return rt_cfg_fail(s->err, g->v[i].path, "type", "a second linear block: "
                                   "one is implemented (give it all the wide columns)");
            lin = (long)i;
            if (gr->n_heads > 1)
                return rt_cfg_fail(s->err, g->v[i].path, "type", "a linear block under "
                                   "several heads is not implemented yet");
            if (nd->units != gr->logits_dimension)
                return rt_cfg_fail(s->err, g->v[i].path, "units", "%u, but the head reads %u "
                                   "logit%s: a linear block is as wide as the logits",
                                   nd->units, gr->logits_dimension,
                                   gr->logits_dimension == 1 ? "" : "s");
        } else if (nd->kind == PREDICTD__NODE_KIND__NODE_INPUT ||
                   nd->kind == PREDICTD__NODE_KIND__NODE_EMBEDDING) {
            total += nd->n_columns;
        }
    }
    rt_status st;
    if (lin >= 0) {
        const Predictd__Node *nd = g->v[lin].nd;
        if (!(gr->linear_columns = calloc(nd->n_columns, sizeof(char *))))
            return NOMEM(s->err);
        for (size_t k = 0; k < nd->n_columns; k++) {
            if ((st = rt_spec_set_str(&gr->linear_columns[k], nd->columns[k], s->err)))
                return st;
            gr->n_linear_columns++;
        }
        if ((st = rt_spec_build_linear(s)))
            return st;
    }
    if (total && !(gr->dnn_columns = calloc(total, sizeof(char *))))
        return NOMEM(s->err);
    for (size_t i = 0; i < g->n; i++) {
        const Predictd__Node *nd = g->v[i].nd;
        if (nd->kind != PREDICTD__NODE_KIND__NODE_INPUT &&
            nd->kind != PREDICTD__NODE_KIND__NODE_EMBEDDING)
            continue;
        for (size_t k = 0; k < nd->n_columns; k++) {
            bool seen = false;
            for (size_t q = 0; q < gr->n_dnn_columns && !seen; q++)
                seen = strcmp(gr->dnn_columns[q], nd->columns[k]) == 0;
            if (!seen) {
                if ((st = rt_spec_set_str(&gr->dnn_columns[gr->n_dnn_columns], nd->columns[k], s->err)))
                    return st;
                gr->n_dnn_columns++;
            }
        }
    }
    return rt_spec_build_embeddings(s);
}

/* summaries: names of nodes (each once) whose batch outputs the trainer
 * writes to TensorBoard, into Graph.summaries. */
static rt_status parse_summaries(cgraph *g, const cJSON *model)
{
    spec_ctx *s = g->s;
    rt_err *err = s->err;
    const cJSON *arr = NULL;
    rt_status st = rt_cfg_array(model, "estimator.model", "summaries", 0, &arr, err);
    int cnt = arr ? cJSON_GetArraySize(arr) : 0;
    if (st || cnt == 0)
        return st;
    if ((size_t)cnt > g->n)
        return rt_cfg_fail(err, "estimator.model", "summaries", "lists %d nodes; the graph has "
                           "%zu", cnt, g->n);
    Predictd__Graph *gr = s->def->graph;
    if (!(gr->summaries = calloc((size_t)cnt, sizeof *gr->summaries)))
        return NOMEM(err);
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char key[32];
        snprintf(key, sizeof key, "summaries[%d]", i);
        if (!cJSON_IsString(c))
            return rt_cfg_fail(err, "estimator.model", key, "expected a node name, got %s",
                               rt_cfg_type_name(c));
        if (find_node(g, c->valuestring) < 0)
            return rt_cfg_fail(err, "estimator.model", key, "no node named \"%.64s\"",
                               c->valuestring);
        for (size_t k = 0; k < gr->n_summaries; k++)
            if (strcmp(gr->summaries[k], c->valuestring) == 0)
                return rt_cfg_fail(err, "estimator.model", key, "\"%.64s\" is already listed "
                                   "(summaries[%zu])", c->valuestring, k);
        if ((st = rt_spec_set_str(&gr->summaries[gr->n_summaries], c->valuestring, err)))
            return st;
        gr->n_summaries++;
    }
    return RT_OK;
}

/* Collects the nodes of list `key` (inputs or layers) into g->v. */
static rt_status collect(cgraph *g, const cJSON *arr, const char *key)
{
    spec_ctx *s = g->s;
    int i = 0;
    for (const cJSON *c = arr ? arr->child : NULL; c; c = c->next, i++) {
        cnode *v = &g->v[g->n];
        snprintf(v->path, sizeof v->path, "estimator.model.%s[%d]", key, i);
        if (!cJSON_IsObject(c))
            return rt_cfg_fail(s->err, v->path, "", "expected an object, got %s",
                               rt_cfg_type_name(c));
        const char *name = NULL;
        rt_status st = rt_cfg_str(c, v->path, "name", RT_CFG_REQUIRED, &name, s->err);
        if (st || (st = rt_spec_check_name(name, v->path, "name", s->err)))
            return st;
        long dup = find_node(g, name);
        if (dup >= 0)
            return rt_cfg_fail(s->err, v->path, "name", "\"%.64s\" is already a node (%s)", name,
                               g->v[dup].path + strlen("estimator.model."));
        v->name = name;
        v->json = c;
        Predictd__Node *nd = malloc(sizeof *nd);
        if (!nd)
            return NOMEM(s->err);
        predictd__node__init(nd);
        v->nd = nd;
        Predictd__Graph *gr = s->def->graph;
        gr->nodes[gr->n_nodes++] = nd;
        if ((st = rt_spec_set_str(&nd->name, name, s->err)))
            return st;
        g->n++;
    }
    return RT_OK;
}

rt_status rt_spec_parse_custom(spec_ctx *s, const cJSON *est)
{
    static const char *const ckeys[] = {"type", "model", "weight_column", "loss_reduction",
                                        "linear_optimizer", "dnn_optimizer", NULL};
    static const char *const keys[] = {"inputs", "layers", "heads", "summaries", NULL};
    rt_err *err = s->err;
    Predictd__Graph *cg = s->def->graph;
    rt_status st = rt_cfg_check_keys(est, "estimator", ckeys, NULL, err);
    if (st)
        return st;
    if (cg->estimator != protobuf_c_empty_string)
        free(cg->estimator);
    if (!(cg->estimator = rt_spec_strndup("Estimator", strlen("Estimator"))))
        return NOMEM(err);
    const cJSON *model = NULL, *inputs = NULL, *layers = NULL;
    st = rt_cfg_object(est, "estimator", "model", RT_CFG_REQUIRED, &model, err);
    if (st || (st = rt_cfg_check_keys(model, "estimator.model", keys, NULL, err)) ||
        (st = rt_cfg_array(model, "estimator.model", "inputs", RT_CFG_REQUIRED, &inputs, err)) ||
        (st = rt_cfg_array(model, "estimator.model", "layers", 0, &layers, err)))
        return st;
    int ni = cJSON_GetArraySize(inputs), nl = layers ? cJSON_GetArraySize(layers) : 0;
    if (ni == 0)
        return rt_cfg_fail(err, "estimator.model", "inputs", "must list an input");
    if (ni + nl > RT_SPEC_MAX_NODES)
        return rt_cfg_fail(err, "estimator.model", "layers", "more than %d nodes",
                           RT_SPEC_MAX_NODES);
    Predictd__Graph *gr = s->def->graph;
    cgraph g = {.s = s};
    g.v = calloc((size_t)(ni + nl), sizeof *g.v);
    gr->nodes = calloc((size_t)(ni + nl), sizeof *gr->nodes);
    if (!g.v || !gr->nodes) {
        free(g.v);
        return NOMEM(err);
    }
    if ((st = collect(&g, inputs, "inputs")) || (st = collect(&g, layers, "layers")))
        goto out;
    for (size_t i = 0; i < g.n && !st; i++)
        st = i < (size_t)ni ? parse_input(&g, i) : parse_layer(&g, i);
    if (!st)
        st = rt_spec_heads_parse(s, model);
    if (!st)
        st = parse_summaries(&g, model);
    if (!st)
        st = build_parts(&g);
out:
    free(g.v);
    return st;
}
