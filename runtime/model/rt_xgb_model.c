/*
 * rt_xgb_model.c — an XGBoost JSON or UBJSON model (and its optional
 * serving.json)
 * as the ModelDef of a BoostedTrees ensemble (rt_model.h, "models trained
 * elsewhere"), so predict-train's tree runtime (rt_trees.c) serves it.
 *
 * The translation, each part as XGBoost 1.x computes it (src/predictor,
 * src/tree/tree_model.cc, src/common/categorical.h, doc/model.schema):
 * - feature k of learner.feature_names (serving.json's feature_names when
 *   given, which rename them) / feature_types is raw input k:
 *   float, int, q, i: a numeric_column (an absent or null value is NaN,
 *   XGBoost's missing); c: a vocabulary list, of serving.json's category
 *   strings in code order (an unknown string: missing), else of the codes
 *   "0".."K-1" (K = the largest category split on + 1) over an int input
 *   with one OOV id for any other code (XGBoost: not in a set, left);
 * - a numeric split "x < split_condition goes left" is predictd's
 *   "x <= threshold" with threshold the float just below split_condition;
 *   missing goes default_left either way;
 * - a categorical split sends the categories of its set right: predictd's
 *   left set is every other id;
 * - dart (learner.gradient_booster.gbtree, weight_drop): each leaf is
 *   leaf * weight_drop[tree] in float, which XGBoost adds to the sum;
 * - leaves (split_conditions of a leaf) are added in tree order, in float,
 *   from bias = base_score as a margin (the objective's ProbToMargin, in
 *   float: -logf(1/b - 1) for the logistic ones, logf(b) for the exp ones);
 *   a multi-class tree adds to its tree_info class only (its other leaf
 *   values are 0, and x + 0 = x);
 * - the nodes are renumbered breadth-first from the root: a node reached
 *   twice (a cycle, a shared child) or past depth RT_TREES_MAX_DEPTH is
 *   refused, as is an index out of range, a non-finite number, a list whose
 *   length is not num_nodes, more than 2^20 nodes a tree or 2^26 in all.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"
#include "rt_spec_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>

#define FILE_M "model.json"
#define FILE_S "serving.json"
#define MAX_FEATURES 4096u
#define MAX_TREE_NODES (1u << 20)
#define MAX_NODES (1u << 26)
#define MAX_CATEGORY (1u << 24)
#define MAX_CLASSES 4096u
#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")

typedef enum { MARGIN_ID, MARGIN_LOGIT, MARGIN_LOG } margin_kind;

typedef struct xobjective {
    const char *name;
    Predictd__HeadType head;
    rt_xgb_link link;
    margin_kind margin;
} xobjective;

static const xobjective objectives[] = {
    {"binary:logistic", PREDICTD__HEAD_TYPE__HEAD_BINARY, RT_XGB_LINK_NONE, MARGIN_LOGIT},
    {"binary:logitraw", PREDICTD__HEAD_TYPE__HEAD_BINARY, RT_XGB_LINK_NONE, MARGIN_ID},
    {"multi:softprob", PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS, RT_XGB_LINK_NONE, MARGIN_ID},
    {"multi:softmax", PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS, RT_XGB_LINK_NONE, MARGIN_ID},
    {"reg:squarederror", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_NONE, MARGIN_ID},
    {"reg:logistic", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_SIGMOID, MARGIN_LOGIT},
    {"reg:absoluteerror", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_NONE, MARGIN_ID},
    {"count:poisson", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_EXP, MARGIN_LOG},
    {"reg:gamma", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_EXP, MARGIN_LOG},
    {"reg:tweedie", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_EXP, MARGIN_LOG},
    /* predict() is exp(margin): Cox's hazard ratio, AFT's survival time */
    {"survival:cox", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_EXP, MARGIN_LOG},
    {"survival:aft", PREDICTD__HEAD_TYPE__HEAD_REGRESSION, RT_XGB_LINK_EXP, MARGIN_LOG},
};

typedef struct xfeat {
    char name[256];
    bool cat;
    const cJSON *strings; /* serving.json's categories of a "c" feature, or NULL */
    uint32_t known;       /* categories with an id of their own (K) */
    int64_t max_cat;      /* the largest category any split names, -1 */
} xfeat;

typedef struct xtree {
    size_t n;
    int32_t *left, *right, *feat;
    float *cond, *hess, *gain;
    unsigned char *dleft, *is_cat;
    int64_t *cat_off, *cat_len; /* per node: its set in cats, -1 none */
    uint32_t *cats;
    size_t n_cats;
    uint32_t group;
    float weight; /* dart's weight_drop entry (1 for gbtree), folded into the leaves */
} xtree;

typedef struct xmodel {
    size_t n_feat;
    xfeat *feat;
    size_t n_trees;
    xtree *trees;
    const xobjective *obj;
    size_t n_classes; /* 0 regression */
    float margin[MAX_CLASSES]; /* base_score as read (one, or one per class) */
    float bias[MAX_CLASSES];   /* ... as margins, per logit */
    const cJSON *classes;
    char producer[64];
    char trees_path[64]; /* learner.gradient_booster[.gbtree].model */
} xmodel;

static void xtree_free(xtree *t)
{
    free(t->left);
    free(t->right);
    free(t->feat);
    free(t->cond);
    free(t->hess);
    free(t->gain);
    free(t->dleft);
    free(t->is_cat);
    free(t->cat_off);
    free(t->cat_len);
    free(t->cats);
}

static void xmodel_free(xmodel *x)
{
    for (size_t i = 0; i < x->n_trees; i++)
        xtree_free(&x->trees[i]);
    free(x->trees);
    free(x->feat);
}

/* ------------------------------------------------------------ features */

static rt_status read_features(xmodel *x, const cJSON *learner, const cJSON *serving,
                               size_t n_feat, rt_err *err)
{
    const cJSON *names = NULL, *types = NULL, *snames = NULL, *scats = NULL;
    rt_status st;
    if ((st = rt_xgb_json_member(FILE_M, learner, "learner", "feature_names", cJSON_Array, false,
                             &names, err)) ||
        (st = rt_xgb_json_member(FILE_M, learner, "learner", "feature_types", cJSON_Array, false,
                             &types, err)))
        return st;
    if (serving &&
        ((st = rt_xgb_json_member(FILE_S, serving, "", "feature_names", cJSON_Array, false, &snames,
                              err)) ||
         (st = rt_xgb_json_member(FILE_S, serving, "", "categories", cJSON_Object, false, &scats,
                              err))))
        return st;
    if (names && cJSON_GetArraySize(names) == 0)
        names = NULL;
    if (types && cJSON_GetArraySize(types) == 0)
        types = NULL;
    if (snames) /* serving.json names (or renames) the inputs */
        names = snames;
    const char *nfile = names == snames ? FILE_S : FILE_M;
    if (names && (size_t)cJSON_GetArraySize(names) != n_feat)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: feature_names: %d names, the model has %zu "
                          "features (learner_model_param.num_feature)",
                          nfile, cJSON_GetArraySize(names), n_feat);
    if (types && (size_t)cJSON_GetArraySize(types) != n_feat)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: learner.feature_types: %d types, the model has "
                          "%zu features", FILE_M, cJSON_GetArraySize(types), n_feat);
    if (!(x->feat = calloc(n_feat ? n_feat : 1, sizeof *x->feat)))
        return NOMEM(err);
    x->n_feat = n_feat;
    const cJSON *nm = names ? names->child : NULL, *ty = types ? types->child : NULL;
    for (size_t k = 0; k < n_feat; k++) {
        xfeat *f = &x->feat[k];
        f->max_cat = -1;
        if (nm) {
            if (!cJSON_IsString(nm))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: feature_names[%zu]: expected a "
                                  "string, got %s", nfile, k, rt_xgb_json_type(nm));
            if (!rt_spec_valid_name(nm->valuestring))
                return rt_err_set(err, RT_ERR_FORMAT,
                                  "%s: feature_names[%zu]: \"%.64s\" is not a valid input name "
                                  "(1..%d characters of A-Z a-z 0-9 _ . -, not starting with . "
                                  "or -): give the inputs names in serving.json's "
                                  "\"feature_names\"",
                                  nfile, k, nm->valuestring, RT_SPEC_MAX_NAME);
            snprintf(f->name, sizeof f->name, "%s", nm->valuestring);
            nm = nm->next;
        } else {
            snprintf(f->name, sizeof f->name, "f%zu", k);
        }
        for (size_t j = 0; j < k; j++)
            if (strcmp(x->feat[j].name, f->name) == 0)
                return rt_err_set(err, RT_ERR_FORMAT, "%s: feature_names[%zu]: \"%s\" is listed "
                                  "twice", nfile, k, f->name);
        if (ty) {
            if (!cJSON_IsString(ty))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: learner.feature_types[%zu]: expected "
                                  "a string, got %s", FILE_M, k, rt_xgb_json_type(ty));
            const char *t = ty->valuestring;
            if (strcmp(t, "c") == 0)
                f->cat = true;
            else if (strcmp(t, "float") && strcmp(t, "int") && strcmp(t, "q") && strcmp(t, "i"))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: learner.feature_types[%zu]: \"%.32s\" "
                                  "is not one of float, int, q, i, c", FILE_M, k, t);
            ty = ty->next;
        }
        const cJSON *list = scats ? cJSON_GetObjectItemCaseSensitive(scats, f->name) : NULL;
        if (list && !f->cat)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: categories.%s: the model's feature %s is "
                              "not categorical (feature_types \"c\")", FILE_S, f->name, f->name);
        if (list) {
            if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 ||
                (unsigned)cJSON_GetArraySize(list) > MAX_CATEGORY)
                return rt_err_set(err, RT_ERR_FORMAT, "%s: categories.%s: expected a list of 1.."
                                  "%u category strings in code order", FILE_S, f->name,
                                  MAX_CATEGORY);
            int i = 0;
            for (const cJSON *c = list->child; c; c = c->next, i++) {
                if (!cJSON_IsString(c) || !c->valuestring[0])
                    return rt_err_set(err, RT_ERR_FORMAT, "%s: categories.%s[%d]: expected a "
                                      "non-empty string", FILE_S, f->name, i);
                for (const cJSON *d = list->child; d != c; d = d->next)
                    if (strcmp(d->valuestring, c->valuestring) == 0)
                        return rt_err_set(err, RT_ERR_FORMAT, "%s: categories.%s[%d]: \"%.64s\" "
                                          "is listed twice", FILE_S, f->name, i, c->valuestring);
            }
            f->strings = list;
            f->known = (uint32_t)i;
        }
    }
    if (scats)
        for (const cJSON *c = scats->child; c; c = c->next) {
            size_t k = 0;
            while (k < n_feat && strcmp(x->feat[k].name, c->string) != 0)
                k++;
            if (k == n_feat)
                return rt_err_set(err, RT_ERR_FORMAT, "%s: categories.%.64s: the model has no "
                                  "feature called so", FILE_S, c->string);
        }
    return RT_OK;
}

/* --------------------------------------------------------------- trees */

static rt_status alloc_tree(xtree *t, size_t n, rt_err *err)
{
    t->n = n;
    if (!(t->left = malloc(n * sizeof *t->left)) || !(t->right = malloc(n * sizeof *t->right)) ||
        !(t->feat = malloc(n * sizeof *t->feat)) || !(t->cond = malloc(n * sizeof *t->cond)) ||
        !(t->hess = calloc(n, sizeof *t->hess)) || !(t->gain = calloc(n, sizeof *t->gain)) ||
        !(t->dleft = calloc(n, 1)) || !(t->is_cat = calloc(n, 1)) ||
        !(t->cat_off = malloc(n * sizeof *t->cat_off)) ||
        !(t->cat_len = malloc(n * sizeof *t->cat_len)))
        return NOMEM(err);
    for (size_t i = 0; i < n; i++)
        t->cat_off[i] = t->cat_len[i] = -1;
    return RT_OK;
}

/* A list of n integers in [lo, hi] into out (with got: at most n). */
static rt_status ints(const cJSON *o, const char *path, const char *key, bool required, size_t n,
                      double lo, double hi, double *buf, int64_t *out, size_t *got, rt_err *err)
{
    rt_status st = rt_xgb_json_numbers(FILE_M, o, path, key, required, n, buf, got, err);
    if (st)
        return st;
    size_t m = got ? *got : n;
    if (!required && !cJSON_GetObjectItemCaseSensitive(o, key))
        m = 0;
    for (size_t i = 0; i < m; i++) {
        if (!(buf[i] >= lo && buf[i] <= hi) || buf[i] != floor(buf[i]))
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s[%zu]: %g is not an integer in "
                              "[%.0f, %.0f]", FILE_M, path, key, i, buf[i], lo, hi);
        out[i] = (int64_t)buf[i];
    }
    return RT_OK;
}

static rt_status read_categories(xmodel *x, xtree *t, const cJSON *o, const char *path,
                                 double *buf, rt_err *err)
{
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(o, "categories_nodes");
    if (!nodes || !cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) == 0)
        return RT_OK;
    size_t m = 0, ms = 0, mz = 0, nc = 0, n = t->n;
    int64_t *cn = malloc(n * sizeof *cn), *seg = malloc(n * sizeof *seg),
            *sz = malloc(n * sizeof *sz), *cv = NULL;
    rt_status st = RT_OK;
    if (!cn || !seg || !sz) {
        st = NOMEM(err);
        goto out;
    }
    const cJSON *ca = cJSON_GetObjectItemCaseSensitive(o, "categories");
    size_t cap = cJSON_IsArray(ca) ? (size_t)cJSON_GetArraySize(ca) : 0;
    double *cbuf = NULL;
    if ((st = ints(o, path, "categories_nodes", true, n, 0, (double)n - 1, buf, cn, &m, err)) ||
        (st = ints(o, path, "categories_segments", true, n, 0, (double)cap, buf, seg, &ms, err)) ||
        (st = ints(o, path, "categories_sizes", true, n, 0, (double)cap, buf, sz, &mz, err)))
        goto out;
    if (ms != m || mz != m) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: %s: categories_nodes, _segments and _sizes "
                        "have %zu, %zu and %zu entries", FILE_M, path, m, ms, mz);
        goto out;
    }
    if (!(cv = malloc((cap ? cap : 1) * sizeof *cv)) ||
        !(cbuf = malloc((cap ? cap : 1) * sizeof *cbuf)) ||
        !(t->cats = malloc((cap ? cap : 1) * sizeof *t->cats))) {
        free(cbuf);
        st = NOMEM(err);
        goto out;
    }
    st = ints(o, path, "categories", true, cap, 0, MAX_CATEGORY - 1, cbuf, cv, &nc, err);
    free(cbuf);
    if (st)
        goto out;
    t->n_cats = nc;
    for (size_t i = 0; i < nc; i++)
        t->cats[i] = (uint32_t)cv[i];
    for (size_t j = 0; j < m; j++) {
        size_t node = (size_t)cn[j];
        if (seg[j] + sz[j] > (int64_t)nc || t->cat_off[node] >= 0) {
            st = rt_err_set(err, RT_ERR_FORMAT, "%s: %s.categories_segments[%zu]: node %zu's "
                            "set [%lld, +%lld) is outside categories (%zu) or given twice",
                            FILE_M, path, j, node, (long long)seg[j], (long long)sz[j], nc);
            goto out;
        }
        t->cat_off[node] = seg[j];
        t->cat_len[node] = sz[j];
        int32_t f = t->feat[node];
        for (int64_t q = 0; q < sz[j]; q++)
            if (f >= 0 && (size_t)f < x->n_feat && (int64_t)t->cats[seg[j] + q] > x->feat[f].max_cat)
                x->feat[f].max_cat = t->cats[seg[j] + q];
    }
out:
    free(cn);
    free(seg);
    free(sz);
    free(cv);
    return st;
}

static rt_status read_tree(xmodel *x, xtree *t, const cJSON *o, const char *path, size_t *total,
                           rt_err *err)
{
    const cJSON *tp = NULL;
    rt_status st;
    double nn = 0;
    if (!cJSON_IsObject(o))
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s: expected an object, got %s", FILE_M, path,
                          rt_xgb_json_type(o));
    if ((st = rt_xgb_json_member(FILE_M, o, path, "tree_param", cJSON_Object, true, &tp, err)))
        return st;
    char tpath[200];
    snprintf(tpath, sizeof tpath, "%s.tree_param", path);
    if ((st = rt_xgb_json_strnum(FILE_M, tp, tpath, "num_nodes", true, 0, &nn, err)))
        return st;
    if (!(nn >= 1 && nn <= MAX_TREE_NODES) || nn != floor(nn))
        return rt_err_set(err, RT_ERR_LIMIT, "%s: %s.num_nodes: %g is not in 1..%u (the limit of "
                          "nodes a tree)", FILE_M, tpath, nn, MAX_TREE_NODES);
    double slv = 0;
    if ((st = rt_xgb_json_strnum(FILE_M, tp, tpath, "size_leaf_vector", false, 0, &slv, err)))
        return st;
    if (slv > 1)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "%s: %s.size_leaf_vector: %g (vector-leaf, "
                          "multi-target trees are not served)", FILE_M, tpath, slv);
    size_t n = (size_t)nn;
    if (*total + n > MAX_NODES)
        return rt_err_set(err, RT_ERR_LIMIT, "%s: %s.num_nodes: more than %u nodes in all trees",
                          FILE_M, tpath, MAX_NODES);
    *total += n;
    double *buf = malloc(n * sizeof *buf);
    int64_t *iv = malloc(n * sizeof *iv);
    if (!buf || !iv) {
        free(buf);
        free(iv);
        return NOMEM(err);
    }
    if ((st = alloc_tree(t, n, err)))
        goto out;
    double nf = (double)x->n_feat - 1;
    if ((st = ints(o, path, "left_children", true, n, -1, (double)n - 1, buf, iv, NULL, err)))
        goto out;
    for (size_t i = 0; i < n; i++)
        t->left[i] = (int32_t)iv[i];
    if ((st = ints(o, path, "right_children", true, n, -1, (double)n - 1, buf, iv, NULL, err)))
        goto out;
    for (size_t i = 0; i < n; i++)
        t->right[i] = (int32_t)iv[i];
    if ((st = ints(o, path, "split_indices", true, n, 0, nf < 0 ? 0 : nf, buf, iv, NULL, err)))
        goto out;
    for (size_t i = 0; i < n; i++)
        t->feat[i] = (int32_t)iv[i];
    if ((st = ints(o, path, "default_left", true, n, 0, 1, buf, iv, NULL, err)))
        goto out;
    for (size_t i = 0; i < n; i++)
        t->dleft[i] = (unsigned char)iv[i];
    if ((st = ints(o, path, "split_type", false, n, 0, 1, buf, iv, NULL, err)))
        goto out;
    if (cJSON_GetObjectItemCaseSensitive(o, "split_type"))
        for (size_t i = 0; i < n; i++)
            t->is_cat[i] = (unsigned char)iv[i];
    if ((st = rt_xgb_json_numbers(FILE_M, o, path, "split_conditions", true, n, buf, NULL, err)))
        goto out;
    for (size_t i = 0; i < n; i++) {
        t->cond[i] = (float)buf[i];
        if (!isfinite(t->cond[i]) && !t->is_cat[i]) {
            st = rt_err_set(err, RT_ERR_FORMAT, "%s: %s.split_conditions[%zu]: %g is not a finite "
                            "float", FILE_M, path, i, buf[i]);
            goto out;
        }
    }
    if (cJSON_GetObjectItemCaseSensitive(o, "sum_hessian")) {
        if ((st = rt_xgb_json_numbers(FILE_M, o, path, "sum_hessian", true, n, buf, NULL, err)))
            goto out;
        for (size_t i = 0; i < n; i++)
            t->hess[i] = (float)buf[i];
    }
    if (cJSON_GetObjectItemCaseSensitive(o, "loss_changes")) {
        if ((st = rt_xgb_json_numbers(FILE_M, o, path, "loss_changes", true, n, buf, NULL, err)))
            goto out;
        for (size_t i = 0; i < n; i++)
            t->gain[i] = isfinite(buf[i]) ? (float)buf[i] : 0.0f;
    }
    st = read_categories(x, t, o, path, buf, err);
out:
    free(buf);
    free(iv);
    return st;
}

/* Node by node: leaves, splits, their features and sets. */
static rt_status check_nodes(const xmodel *x, const xtree *t, const char *path, rt_err *err)
{
    for (size_t i = 0; i < t->n; i++) {
        bool leaf = t->left[i] == -1;
        if (leaf != (t->right[i] == -1))
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s: node %zu has one child (left %d, "
                              "right %d)", FILE_M, path, i, t->left[i], t->right[i]);
        if (leaf) {
            if (!isfinite(t->cond[i]))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.split_conditions[%zu]: the leaf "
                                  "value is not finite", FILE_M, path, i);
            continue;
        }
        const xfeat *f = &x->feat[t->feat[i]];
        if (t->is_cat[i]) {
            if (!f->cat)
                return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.split_type[%zu]: a categorical "
                                  "split on feature %s, whose feature_types is not \"c\"",
                                  FILE_M, path, i, f->name);
            if (t->cat_off[i] < 0)
                return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.categories_nodes: categorical "
                                  "node %zu has no set", FILE_M, path, i);
        } else if (f->cat) {
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.split_type[%zu]: a numeric split on "
                              "categorical feature %s", FILE_M, path, i, f->name);
        }
    }
    return RT_OK;
}

/* The trees of gb (a gbtree object at path p0) into x. */
static rt_status read_trees(xmodel *x, const cJSON *gb, const char *p0, rt_err *err)
{
    const cJSON *model = NULL, *trees = NULL, *info = NULL;
    rt_status st;
    if ((st = rt_xgb_json_member(FILE_M, gb, p0, "model", cJSON_Object, true, &model, err)))
        return st;
    snprintf(x->trees_path, sizeof x->trees_path, "%s.model", p0);
    const char *p1 = x->trees_path;
    if ((st = rt_xgb_json_member(FILE_M, model, p1, "trees", cJSON_Array, true, &trees, err)) ||
        (st = rt_xgb_json_member(FILE_M, model, p1, "tree_info", cJSON_Array, true, &info, err)))
        return st;
    size_t nt = (size_t)cJSON_GetArraySize(trees);
    if ((size_t)cJSON_GetArraySize(info) != nt)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.tree_info: %d entries for %zu trees",
                          FILE_M, p1, cJSON_GetArraySize(info), nt);
    if (nt > MAX_NODES)
        return rt_err_set(err, RT_ERR_LIMIT, "%s: %s.trees: %zu trees", FILE_M, p1, nt);
    if (!(x->trees = calloc(nt ? nt : 1, sizeof *x->trees)))
        return NOMEM(err);
    size_t total = 0, groups = x->n_classes > 2 ? x->n_classes : 1;
    const cJSON *tr = trees->child, *ti = info->child;
    for (size_t k = 0; k < nt; k++, tr = tr->next, ti = ti->next) {
        char path[160];
        snprintf(path, sizeof path, "%s.trees[%zu]", p1, k);
        xtree *t = &x->trees[k];
        x->n_trees = k + 1;
        if (!cJSON_IsNumber(ti) || !(ti->valuedouble >= 0 && ti->valuedouble < (double)groups) ||
            ti->valuedouble != floor(ti->valuedouble))
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.tree_info[%zu]: expected a class in "
                              "0..%zu", FILE_M, p1, k, groups - 1);
        t->group = (uint32_t)ti->valuedouble;
        t->weight = 1.0f;
        if ((st = read_tree(x, t, tr, path, &total, err)) || (st = check_nodes(x, t, path, err)))
            return st;
    }
    return RT_OK;
}

/* dart's weight_drop (gb at learner.gradient_booster): one finite float per
 * tree, kept as XGBoost keeps it (a float), to scale that tree's leaves. */
static rt_status read_dart_weights(xmodel *x, const cJSON *gb, rt_err *err)
{
    const char *p0 = "learner.gradient_booster";
    const cJSON *wd = NULL;
    rt_status st = rt_xgb_json_member(FILE_M, gb, p0, "weight_drop", cJSON_Array, true, &wd, err);
    if (st)
        return st;
    if ((size_t)cJSON_GetArraySize(wd) != x->n_trees)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.weight_drop: %d weights for %zu trees",
                          FILE_M, p0, cJSON_GetArraySize(wd), x->n_trees);
    size_t k = 0;
    for (const cJSON *w = wd->child; w; w = w->next, k++) {
        float f = cJSON_IsNumber(w) ? (float)w->valuedouble : NAN;
        if (!isfinite(f))
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.weight_drop[%zu]: not a finite number",
                              FILE_M, p0, k);
        x->trees[k].weight = f;
    }
    return RT_OK;
}

/* ----------------------------------------------------- the model spec */

static rt_status add_str(cJSON *o, const char *k, const char *v, rt_err *err)
{
    return cJSON_AddStringToObject(o, k, v) ? RT_OK : NOMEM(err);
}

/* A predict-train spec for x's inputs and head (rt_spec_to_modeldef). */
static rt_status make_spec(const xmodel *x, cJSON **out, rt_err *err)
{
    cJSON *spec = cJSON_CreateObject(), *cols = cJSON_AddArrayToObject(spec, "columns"),
          *fcs = cJSON_AddArrayToObject(spec, "feature_columns"),
          *est = cJSON_AddObjectToObject(spec, "estimator"),
          *label = cJSON_AddObjectToObject(spec, "label"), *names = NULL;
    *out = spec;
    if (!spec || !cols || !fcs || !est || !label)
        return NOMEM(err);
    char lab[300] = "xgboost_label";
    for (bool clash = true; clash;) {
        clash = false;
        for (size_t k = 0; k < x->n_feat; k++)
            if (strcmp(x->feat[k].name, lab) == 0) {
                clash = true;
                strcat(lab, "_");
            }
    }
    if (!(names = cJSON_AddArrayToObject(est, "feature_columns")))
        return NOMEM(err);
    for (size_t k = 0; k < x->n_feat; k++) {
        const xfeat *f = &x->feat[k];
        cJSON *c = cJSON_CreateObject(), *fc = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(cols, c) || !fc || !cJSON_AddItemToArray(fcs, fc) ||
            !cJSON_AddItemToArray(names, cJSON_CreateString(f->name)))
            return NOMEM(err);
        rt_status st = add_str(c, "name", f->name, err);
        if (!st)
            st = add_str(c, "type", !f->cat ? "float" : f->strings ? "string" : "int", err);
        if (!st)
            st = add_str(fc, "key", f->name, err);
        if (!st)
            st = add_str(fc, "type", f->cat ? "categorical_column_with_vocabulary_list"
                                            : "numeric_column", err);
        if (st)
            return st;
        if (!f->cat)
            continue;
        cJSON *voc = cJSON_AddArrayToObject(fc, "vocabulary_list");
        if (!voc)
            return NOMEM(err);
        if (f->strings) {
            for (const cJSON *s = f->strings->child; s; s = s->next)
                if (!cJSON_AddItemToArray(voc, cJSON_CreateString(s->valuestring)))
                    return NOMEM(err);
            continue;
        }
        for (uint32_t i = 0; i < f->known; i++) {
            char b[16];
            snprintf(b, sizeof b, "%u", i);
            if (!cJSON_AddItemToArray(voc, cJSON_CreateString(b)))
                return NOMEM(err);
        }
        if (!cJSON_AddNumberToObject(fc, "num_oov_buckets", 1))
            return NOMEM(err);
    }
    cJSON *lc = cJSON_CreateObject();
    if (!lc || !cJSON_AddItemToArray(cols, lc))
        return NOMEM(err);
    rt_status st = add_str(lc, "name", lab, err);
    if (!st)
        st = add_str(lc, "type", "float", err);
    if (!st)
        st = add_str(label, "column", lab, err);
    if (!st)
        st = add_str(est, "type", x->n_classes ? "BoostedTreesClassifier"
                                               : "BoostedTreesRegressor", err);
    if (st)
        return st;
    if (x->n_classes) {
        if (!cJSON_AddNumberToObject(est, "n_classes", (double)x->n_classes))
            return NOMEM(err);
        if (x->classes) {
            cJSON *v = cJSON_Duplicate(x->classes, 1);
            if (!v || !cJSON_AddItemToObject(label, "vocabulary", v))
                return NOMEM(err);
        }
    }
    return RT_OK;
}

/* ----------------------------------------------------- trees -> proto */

static float below(float c)
{
    float b = nextafterf(c, -INFINITY);
    return isfinite(b) ? b : -FLT_MAX;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Tree k breadth-first into a Predictd__Tree: children after their parent;
 * a node reached twice, or deeper than RT_TREES_MAX_DEPTH, refused. */
static rt_status build_tree(const xmodel *x, size_t k, size_t ld, Predictd__Tree **out,
                            rt_err *err)
{
    const xtree *t = &x->trees[k];
    size_t n = t->n, head = 0, tail = 0;
    uint32_t *order = malloc(n * sizeof *order), *depth = malloc(n * sizeof *depth),
             *newid = malloc(n * sizeof *newid);
    Predictd__Tree *tr = malloc(sizeof *tr);
    rt_status st = RT_OK;
    *out = tr;
    if (!order || !depth || !newid || !tr) {
        st = NOMEM(err);
        goto out;
    }
    predictd__tree__init(tr);
    for (size_t i = 0; i < n; i++)
        newid[i] = UINT32_MAX;
    order[tail++] = 0;
    newid[0] = 0;
    depth[0] = 0;
    while (head < tail) {
        uint32_t o = order[head++];
        if (t->left[o] < 0)
            continue;
        int32_t kids[2] = {t->left[o], t->right[o]};
        for (int s = 0; s < 2; s++) {
            uint32_t c = (uint32_t)kids[s];
            if (newid[c] != UINT32_MAX || c == 0) {
                st = rt_err_set(err, RT_ERR_FORMAT, "%s: %s.trees[%zu]: node %u is "
                                "reached twice (from node %u: a cycle or a shared child)", FILE_M,
                                x->trees_path, k, c, o);
                goto out;
            }
            if (depth[o] + 1 > RT_TREES_MAX_DEPTH) {
                st = rt_err_set(err, RT_ERR_LIMIT, "%s: %s.trees[%zu]: node %u is deeper "
                                "than %d", FILE_M, x->trees_path, k, c, RT_TREES_MAX_DEPTH);
                goto out;
            }
            depth[c] = depth[o] + 1;
            newid[c] = (uint32_t)tail;
            order[tail++] = c;
        }
    }
    if (!(tr->nodes = calloc(tail, sizeof *tr->nodes))) {
        st = NOMEM(err);
        goto out;
    }
    for (size_t p = 0; p < tail; p++) {
        uint32_t o = order[p];
        Predictd__TreeNode *nd = malloc(sizeof *nd);
        if (!nd) {
            st = NOMEM(err);
            goto out;
        }
        predictd__tree_node__init(nd);
        tr->nodes[tr->n_nodes++] = nd;
        nd->node_weight = t->hess[o];
        if (t->left[o] < 0) {
            nd->input = -1;
            if (!(nd->leaf_value = calloc(ld, sizeof(float)))) {
                st = NOMEM(err);
                goto out;
            }
            nd->n_leaf_value = ld;
            /* dart: XGBoost adds leaf * weight, in float, to the sum */
            nd->leaf_value[ld > 1 ? t->group : 0] = t->cond[o] * t->weight;
            continue;
        }
        const xfeat *f = &x->feat[t->feat[o]];
        nd->input = t->feat[o];
        nd->default_left = t->dleft[o] != 0;
        nd->left = newid[t->left[o]];
        nd->right = newid[t->right[o]];
        nd->gain = t->gain[o];
        if (!t->is_cat[o]) {
            nd->kind = PREDICTD__TREE_SPLIT_KIND__SPLIT_THRESHOLD;
            nd->threshold = below(t->cond[o]);
            continue;
        }
        /* ids: category c is id c (c < known); with codes, id known is every
         * other code (not in a set: left) */
        nd->kind = PREDICTD__TREE_SPLIT_KIND__SPLIT_CATEGORY_SET;
        uint32_t ids = f->known + (f->strings ? 0 : 1), nr = (uint32_t)t->cat_len[o];
        uint32_t *right = malloc((nr ? nr : 1) * sizeof *right);
        if (!right || !(nd->left_categories = malloc(ids * sizeof(uint32_t)))) {
            free(right);
            st = NOMEM(err);
            goto out;
        }
        memcpy(right, t->cats + t->cat_off[o], nr * sizeof *right);
        qsort(right, nr, sizeof *right, cmp_u32);
        for (uint32_t id = 0, r = 0; id < ids; id++) {
            while (r < nr && right[r] < id)
                r++;
            bool in = id < f->known && r < nr && right[r] == id;
            if (!in)
                nd->left_categories[nd->n_left_categories++] = id;
        }
        free(right);
    }
out:
    free(order);
    free(depth);
    free(newid);
    return st;
}

static rt_status fill_def(const xmodel *x, Predictd__ModelDef *def, rt_err *err)
{
    Predictd__TreeEnsemble *te = def->graph ? def->graph->trees : NULL;
    size_t ld = def->graph ? def->graph->logits_dimension : 0;
    if (!te || te->n_inputs != x->n_feat || te->n_bias != ld)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: the ensemble's spec did not come out as "
                          "expected", FILE_M);
    for (size_t j = 0; j < ld; j++)
        te->bias[j] = x->bias[j];
    for (size_t c = 0; c < def->n_feature_columns; c++) {
        Predictd__FeatureColumn *fc = def->feature_columns[c];
        if (fc->type != PREDICTD__COLUMN_TYPE__NUMERIC)
            continue;
        free(fc->default_value);
        if (!(fc->default_value = malloc(sizeof(float))))
            return NOMEM(err);
        fc->default_value[0] = NAN;
        fc->n_default_value = 1;
    }
    if (!(te->trees = calloc(x->n_trees ? x->n_trees : 1, sizeof *te->trees)))
        return NOMEM(err);
    for (size_t k = 0; k < x->n_trees; k++) {
        rt_status st = build_tree(x, k, ld, &te->trees[k], err);
        if (te->trees[k])
            te->n_trees = k + 1;
        if (st)
            return st;
    }
    Predictd__TrainingInfo *ti = def->training;
    if (!ti) {
        if (!(ti = malloc(sizeof *ti)))
            return NOMEM(err);
        predictd__training_info__init(ti);
        def->training = ti;
    }
    if (!(ti->producer = strdup(x->producer)))
        return NOMEM(err);
    return RT_OK;
}

/* ----------------------------------------------------------- the model */

/* base_score as the objective's margin, per logit: XGBoost 1.x writes one
 * number as a string ("5E-1"); later versions a list in the string
 * ("[5E-1]", or one value per class), read here as one value for every logit
 * or one each. */
static rt_status read_base_score(xmodel *x, const cJSON *mp, rt_err *err)
{
    const char *path = "learner.learner_model_param";
    size_t ld = x->n_classes > 2 ? x->n_classes : 1, k = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(mp, "base_score");
    if (!cJSON_IsString(v) || v->valuestring[0] != '[') {
        rt_status st = rt_xgb_json_strfloat(FILE_M, mp, path, "base_score", &x->margin[0], err);
        if (st)
            return st;
        k = 1;
    } else {
        const char *q = v->valuestring + 1;
        for (;;) {
            while (*q == ' ')
                q++;
            char *e = NULL;
            float f = strtof(q, &e);
            if (e == q || !isfinite(f) || k >= ld)
                return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.base_score: \"%.40s\" is not a "
                                  "list of 1 or %zu finite numbers", FILE_M, path,
                                  v->valuestring, ld);
            x->margin[k++] = f;
            q = e;
            while (*q == ' ')
                q++;
            if (*q == ',') {
                q++;
                continue;
            }
            if (*q == ']' && q[1] == '\0')
                break;
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.base_score: \"%.40s\" is not a list "
                              "of numbers", FILE_M, path, v->valuestring);
        }
    }
    if (k != 1 && k != ld)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.base_score: %zu values for %zu logits",
                          FILE_M, path, k, ld);
    for (size_t j = 0; j < ld; j++) {
        float b = x->margin[k == 1 ? 0 : j], m = b;
        if (x->obj->margin == MARGIN_LOGIT) {
            if (!(b > 0.0f && b < 1.0f))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.base_score: %g is not in (0, 1), "
                                  "as %s needs", FILE_M, path, (double)b, x->obj->name);
            m = -logf(1.0f / b - 1.0f);
        } else if (x->obj->margin == MARGIN_LOG) {
            if (!(b > 0.0f))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.base_score: %g is not positive, "
                                  "as %s needs", FILE_M, path, (double)b, x->obj->name);
            m = logf(b);
        }
        if (!isfinite(m))
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.base_score: %g gives a margin that is "
                              "not finite (%s)", FILE_M, path, (double)b, x->obj->name);
        x->bias[j] = m;
    }
    return RT_OK;
}

static rt_status read_learner(xmodel *x, const cJSON *doc, const cJSON *serving,
                              rt_xgb_link *link, rt_err *err)
{
    const cJSON *learner = NULL, *mp = NULL, *obj = NULL, *oname = NULL, *gb = NULL,
                *gname = NULL, *ver = NULL;
    rt_status st;
    if ((st = rt_xgb_json_member(FILE_M, doc, "", "learner", cJSON_Object, true, &learner, err)) ||
        (st = rt_xgb_json_member(FILE_M, doc, "", "version", cJSON_Array, false, &ver, err)) ||
        (st = rt_xgb_json_member(FILE_M, learner, "learner", "learner_model_param", cJSON_Object,
                             true, &mp, err)) ||
        (st = rt_xgb_json_member(FILE_M, learner, "learner", "objective", cJSON_Object, true, &obj,
                             err)) ||
        (st = rt_xgb_json_member(FILE_M, obj, "learner.objective", "name", cJSON_String, true,
                             &oname, err)) ||
        (st = rt_xgb_json_member(FILE_M, learner, "learner", "gradient_booster", cJSON_Object, true,
                             &gb, err)) ||
        (st = rt_xgb_json_member(FILE_M, gb, "learner.gradient_booster", "name", cJSON_String, true,
                             &gname, err)))
        return st;
    snprintf(x->producer, sizeof x->producer, "xgboost");
    if (ver && cJSON_GetArraySize(ver) >= 3) {
        const cJSON *a = cJSON_GetArrayItem(ver, 0), *b = cJSON_GetArrayItem(ver, 1),
                    *c = cJSON_GetArrayItem(ver, 2);
        if (cJSON_IsNumber(a) && cJSON_IsNumber(b) && cJSON_IsNumber(c)) {
            if (a->valuedouble < 1)
                return rt_err_set(err, RT_ERR_UNSUPPORTED, "%s: version: XGBoost %g.%g models "
                                  "are not read (1.0 and later are)", FILE_M, a->valuedouble,
                                  b->valuedouble);
            snprintf(x->producer, sizeof x->producer, "xgboost %d.%d.%d", (int)a->valuedouble,
                     (int)b->valuedouble, (int)c->valuedouble);
        }
    }
    for (size_t i = 0; i < sizeof objectives / sizeof objectives[0]; i++)
        if (strcmp(objectives[i].name, oname->valuestring) == 0)
            x->obj = &objectives[i];
    if (!x->obj)
        return rt_err_set(err, RT_ERR_UNSUPPORTED,
                          "%s: learner.objective.name: \"%.64s\" is not served (predictd serves "
                          "binary:logistic, binary:logitraw, multi:softprob, multi:softmax, "
                          "reg:squarederror, reg:logistic, reg:absoluteerror, count:poisson, "
                          "reg:gamma, reg:tweedie, survival:cox, survival:aft)",
                          FILE_M, oname->valuestring);
    bool dart = strcmp(gname->valuestring, "dart") == 0;
    if (!dart && strcmp(gname->valuestring, "gbtree") != 0)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "%s: learner.gradient_booster.name: \"%.32s\" "
                          "is not served yet (predictd serves gbtree and dart)", FILE_M,
                          gname->valuestring);
    *link = x->obj->link;
    double nf = 0, nc = 0, ntarget = 1;
    if ((st = rt_xgb_json_strnum(FILE_M, mp, "learner.learner_model_param", "num_feature", true, 0,
                             &nf, err)) ||
        (st = rt_xgb_json_strnum(FILE_M, mp, "learner.learner_model_param", "num_class", false, 0,
                             &nc, err)) ||
        (st = rt_xgb_json_strnum(FILE_M, mp, "learner.learner_model_param", "num_target", false, 1,
                             &ntarget, err)))
        return st;
    if (!(nf >= 1 && nf <= MAX_FEATURES) || nf != floor(nf))
        return rt_err_set(err, RT_ERR_LIMIT, "%s: learner.learner_model_param.num_feature: %g is "
                          "not in 1..%u", FILE_M, nf, MAX_FEATURES);
    if (!(nc >= 0 && nc <= MAX_CLASSES) || nc != floor(nc) || nc == 1)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: learner.learner_model_param.num_class: %g is "
                          "not 0 or 2..%u", FILE_M, nc, MAX_CLASSES);
    if (ntarget > 1)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "%s: learner.learner_model_param.num_target: "
                          "%g targets (multi-output models are not served)", FILE_M, ntarget);
    bool multi = x->obj->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS;
    if (multi != (nc >= 2))
        return rt_err_set(err, RT_ERR_FORMAT, "%s: learner.learner_model_param.num_class: %g "
                          "with objective %s", FILE_M, nc, x->obj->name);
    x->n_classes = multi ? (size_t)nc
                   : x->obj->head == PREDICTD__HEAD_TYPE__HEAD_BINARY ? 2 : 0;
    if ((st = read_base_score(x, mp, err)))
        return st;
    if (serving) {
        const cJSON *cl = NULL;
        if ((st = rt_xgb_json_member(FILE_S, serving, "", "classes", cJSON_Array, false, &cl, err)))
            return st;
        for (const cJSON *c = serving->child; c; c = c->next)
            if (strcmp(c->string, "classes") && strcmp(c->string, "categories") &&
                strcmp(c->string, "feature_names"))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: %.64s: unknown key (predictd reads "
                                  "categories, classes, feature_names)", FILE_S, c->string);
        if (cl && !x->n_classes)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: classes: the model is a regression (%s)",
                              FILE_S, x->obj->name);
        if (cl && (size_t)cJSON_GetArraySize(cl) != x->n_classes)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: classes: %d names for %zu classes", FILE_S,
                              cJSON_GetArraySize(cl), x->n_classes);
        x->classes = cl;
    }
    const cJSON *trees_gb = gb;
    if (dart && (st = rt_xgb_json_member(FILE_M, gb, "learner.gradient_booster", "gbtree",
                                         cJSON_Object, true, &trees_gb, err)))
        return st;
    if ((st = read_features(x, learner, serving, (size_t)nf, err)) ||
        (st = read_trees(x, trees_gb, dart ? "learner.gradient_booster.gbtree"
                                           : "learner.gradient_booster", err)) ||
        (dart && (st = read_dart_weights(x, gb, err))))
        return st;
    for (size_t k = 0; k < x->n_feat; k++) {
        xfeat *f = &x->feat[k];
        if (!f->cat)
            continue;
        if (f->strings && f->max_cat >= (int64_t)f->known)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: categories.%s: %u categories, the model "
                              "splits on category %lld", FILE_S, f->name, f->known,
                              (long long)f->max_cat);
        if (!f->strings)
            f->known = f->max_cat >= 0 ? (uint32_t)(f->max_cat + 1) : 1;
    }
    return RT_OK;
}

/* A message about model.json as one about model.ubj (the reads after the
 * parse are the same). */
static void as_ubj(rt_err *err)
{
    char *m = err->msg, *at = strstr(m, FILE_M);
    if (at == m) {
        memmove(m + 9, m + 10, strlen(m + 10) + 1);
        memcpy(m, "model.ubj", 9);
    }
}

rt_status rt_xgb_to_modeldef(const char *file, const char *model_json, size_t len,
                             const char *serving_json, size_t serving_len,
                             Predictd__ModelDef **out, rt_xgb_link *link, rt_err *err)
{
    bool ubj = file && strcmp(file, "model.ubj") == 0;
    cJSON *doc = NULL, *serving = NULL, *spec = NULL;
    xmodel x;
    memset(&x, 0, sizeof x);
    *out = NULL;
    *link = RT_XGB_LINK_NONE;
    Predictd__ModelDef *def = NULL;
    rt_status st = ubj ? rt_xgb_json_parse_ubj("model.ubj", model_json, len, &doc, err)
                       : rt_xgb_json_parse(FILE_M, model_json, len, &doc, err);
    if (!st && serving_json)
        st = rt_xgb_json_parse(FILE_S, serving_json, serving_len, &serving, err);
    if (!st)
        st = read_learner(&x, doc, serving, link, err);
    if (!st)
        st = make_spec(&x, &spec, err);
    if (!st && (st = rt_spec_to_modeldef(spec, NULL, &def, err)) != RT_OK)
        rt_err_prefix(err, "%s%s: its inputs as a model spec", FILE_M,
                      serving ? " with " FILE_S : "");
    if (!st)
        st = fill_def(&x, def, err);
    cJSON_Delete(spec);
    cJSON_Delete(doc);
    cJSON_Delete(serving);
    xmodel_free(&x);
    if (st) {
        if (ubj)
            as_ubj(err);
        rt_spec_modeldef_free(def);
        return st;
    }
    *out = def;
    return RT_OK;
}

/* ------------------------------------------------------ the graph's part */

void rt_xgb_graph_set(rt_graph *g, rt_xgb_link link)
{
    if (!g)
        return;
    g->xgb_link = (int)link;
    g->absent_missing = true;
}

rt_xgb_link rt_xgb_graph_link(const rt_graph *g)
{
    return g ? (rt_xgb_link)g->xgb_link : RT_XGB_LINK_NONE;
}

bool rt_xgb_graph_absent_is_missing(const rt_graph *g)
{
    return g && g->absent_missing;
}
