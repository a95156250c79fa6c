/*
 * trn_config.c — the trainer's parts of a spec ("train", "eval",
 * "export.exporters", the estimator's optimizers), the canned estimators'
 * optimizer defaults, and the task.py-style command-line overrides, which are
 * written into the spec tree itself. The "train" and "eval" sections and the
 * command-line flags are two tables (TRN_SPEC, TRN_FLAGS) that the runtime's
 * rt_settings.c turns into defaults, key checks, getters with ranges, flags
 * and --help: a setting is one row there.
 */
#include "trn.h"

#include <cJSON.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

void trn_config_free(trn_config *c)
{
    if (!c)
        return;
    free_list(c->train_files, c->n_train_files);
    free_list(c->eval_files, c->n_eval_files);
    free(c->job_dir);
    free(c->assets_dir);
    free(c->warm.from);
    free(c->warm.vars);
    for (size_t i = 0; i < c->warm.n_vocab; i++) {
        trn_vocab_info *v = &c->warm.vocab[i];
        free(v->var);
        free_list(v->new_vocab.words, v->new_vocab.n);
        free(v->new_vocab.file);
        free_list(v->old_vocab.words, v->old_vocab.n);
        free(v->old_vocab.file);
    }
    free(c->warm.vocab);
    memset(&c->warm, 0, sizeof c->warm);
    c->assets_dir = NULL;
    c->train_files = c->eval_files = NULL;
    c->n_train_files = c->n_eval_files = 0;
    c->job_dir = NULL;
}

/* ------------------------------------------------------------ JSON helpers */

/* v, a string or an array of strings (member key of path) -> a malloc'd
 * list that replaces *list. */
static rt_status files_of(const cJSON *v, const char *key, const char *path, char ***list,
                          size_t *n, rt_err *err)
{
    size_t cnt = cJSON_IsString(v) ? 1 : cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;
    if (!cJSON_IsString(v) && !cJSON_IsArray(v))
        return rt_cfg_fail(err, path, key, "expected a string or a list of strings, got %s",
                           rt_cfg_type_name(v));
    free_list(*list, *n);
    *list = NULL;
    *n = 0;
    if (cnt == 0)
        return RT_OK;
    char **l = calloc(cnt, sizeof *l);
    if (!l)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t i = 0;
    const cJSON *it = cJSON_IsString(v) ? v : v->child;
    for (; it && i < cnt; it = cJSON_IsString(v) ? NULL : it->next, i++) {
        if (!cJSON_IsString(it) || it->valuestring[0] == '\0') {
            free_list(l, i);
            char at[256];
            return rt_cfg_fail(err, rt_cfg_path(at, sizeof at, path, key, (long)i), NULL,
                               "expected a non-empty string, got %s",
                               cJSON_IsString(it) ? "\"\"" : rt_cfg_type_name(it));
        }
        l[i] = strdup(it->valuestring);
        if (!l[i]) {
            free_list(l, i);
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    *list = l;
    *n = cnt;
    return RT_OK;
}

/* The member key of obj as files_of reads it (absent or null: as it is). */
static rt_status get_files(const cJSON *obj, const char *key, const char *path, char ***list,
                           size_t *n, rt_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return RT_OK;
    return files_of(v, key, path, list, n, err);
}

static rt_status get_name(const cJSON *obj, const char *key, const char *path, char *dst,
                          size_t cap, rt_err *err)
{
    const char *name = NULL;
    rt_status st = rt_cfg_str(obj, path, key, 0, &name, err);
    if (st || !name)
        return st;
    size_t len = strlen(name);
    if (len == 0 || len >= cap)
        return rt_cfg_fail(err, path, key, "must be 1 to %zu characters", cap - 1);
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.' || ch == '/';
        if (!ok || (ch == '.' && i == 0))
            return rt_cfg_fail(err, path, key, "\"%s\" may hold only letters, digits, _ - . /",
                               name);
    }
    if (strstr(name, "..") || strchr(name, '/'))
        return rt_cfg_fail(err, path, key, "\"%s\" must be a plain name", name);
    memcpy(dst, name, len + 1);
    return RT_OK;
}

/* ------------------------------------------------------------- sections */

/* "learning_rate_decay": {"type": "exponential_decay" | "cosine_decay" |
 * "polynomial_decay", and that function's parameters (TF's names)}. */
static rt_status parse_lr_decay(const cJSON *v, const char *opath, trn_lr_decay *d, rt_err *err)
{
    static const char *const keys[] = {"type", "decay_steps", "decay_rate", "staircase",
                                       "alpha", "end_learning_rate", "power", "cycle", NULL};
    static const char *const exp_keys[] = {"decay_rate", "staircase", NULL};
    static const char *const cos_keys[] = {"alpha", NULL};
    static const char *const poly_keys[] = {"end_learning_rate", "power", "cycle", NULL};
    char path[160];
    snprintf(path, sizeof path, "%s.learning_rate_decay", opath);
    if (!cJSON_IsObject(v))
        return rt_cfg_fail(err, path, NULL, "expected an object, got %s", rt_cfg_type_name(v));
    rt_status st = rt_cfg_check_keys(v, path, keys, NULL, err);
    if (st)
        return st;
    const char *type = NULL;
    if ((st = rt_cfg_str(v, path, "type", RT_CFG_REQUIRED, &type, err)))
        return st;
    const char *const *own;
    memset(d, 0, sizeof *d);
    d->end_learning_rate = 0.0001;
    d->power = 1.0;
    if (strcmp(type, "exponential_decay") == 0) {
        d->type = TRN_LR_EXPONENTIAL;
        own = exp_keys;
    } else if (strcmp(type, "cosine_decay") == 0) {
        d->type = TRN_LR_COSINE;
        own = cos_keys;
    } else if (strcmp(type, "polynomial_decay") == 0) {
        d->type = TRN_LR_POLYNOMIAL;
        own = poly_keys;
    } else
        return rt_cfg_fail(err, path, "type",
                           "\"%s\" is not exponential_decay, cosine_decay or polynomial_decay",
                           type);
    /* a parameter of another schedule is a mistake, not something to ignore */
    for (size_t i = 3; keys[i]; i++) {
        int mine = 0;
        for (size_t j = 0; own[j]; j++)
            mine |= strcmp(own[j], keys[i]) == 0;
        if (!mine && cJSON_GetObjectItemCaseSensitive(v, keys[i]))
            return rt_cfg_fail(err, path, keys[i], "is not a parameter of %s", type);
    }
    bool staircase = false, cycle = false;
    if ((st = rt_cfg_int(v, path, "decay_steps", RT_CFG_REQUIRED, 1, INT64_C(1) << 50,
                         &d->decay_steps, err)) ||
        (st = rt_cfg_num(v, path, "decay_rate", d->type == TRN_LR_EXPONENTIAL ? RT_CFG_REQUIRED : 0,
                         1e-12, 1e6, &d->decay_rate, err)) ||
        (st = rt_cfg_bool(v, path, "staircase", 0, &staircase, err)) ||
        (st = rt_cfg_num(v, path, "alpha", 0, 0, 1, &d->alpha, err)) ||
        (st = rt_cfg_num(v, path, "end_learning_rate", 0, 0, 1e6, &d->end_learning_rate, err)) ||
        (st = rt_cfg_num(v, path, "power", 0, 1e-6, 1e3, &d->power, err)) ||
        (st = rt_cfg_bool(v, path, "cycle", 0, &cycle, err)))
        return st;
    d->staircase = staircase;
    d->cycle = cycle;
    return RT_OK;
}

/* offsetof(T, f), refused at compile time unless f has type FT. */
#define OFS(T, f, FT) \
    (offsetof(T, f) + 0 * sizeof(char[_Generic(((T *)0)->f, FT: 1, default: -1)]))
#define ONUM(key, f, l, h, d) \
    {.name = #key, .type = RT_SET_NUM, .where = RT_SET_JSON, .dlo = l, .dhi = h, .ddef = d, \
     .offset = OFS(trn_optimizer, f, double)}

/* An optimizer object's parameters (TF's names and defaults; "type" and
 * "learning_rate_decay" are read apart). */
static const rt_setting OPT[] = {
    ONUM(learning_rate, learning_rate, 1e-12, 1e6, -1), /* < 0: the estimator's */
    ONUM(l1_regularization_strength, l1, 0, 1e9, 0),
    ONUM(l2_regularization_strength, l2, 0, 1e9, 0),
    ONUM(learning_rate_power, lr_power, -1e3, 0, -0.5),
    ONUM(initial_accumulator_value, initial_accumulator, 0, 1e9, 0.1),
    ONUM(beta1, beta1, 0, 0.999999, 0.9),
    ONUM(beta2, beta2, 0, 0.999999999, 0.999),
    ONUM(epsilon, epsilon, 1e-30, 1, 1e-8),
    ONUM(decay, decay, 0, 1, 0.9),
    ONUM(momentum, momentum, 0, 1, 0),
    ONUM(clip_norm, clip_norm, 0, 1e300, 0), /* 0 (absent): no clipping; > 0 checked below */
    {.name = "centered", .type = RT_SET_BOOL, .where = RT_SET_JSON,
     .offset = OFS(trn_optimizer, centered, bool)},
};
#define N_OPT (sizeof OPT / sizeof OPT[0])

static rt_status parse_optimizer(const cJSON *v, const char *path, trn_optimizer *o,
                                 rt_err *err)
{
    static const char *const other[] = {"type", "learning_rate_decay", NULL};
    const char *type = NULL;
    rt_status st;
    if (cJSON_IsString(v))
        type = v->valuestring;
    else if (cJSON_IsObject(v)) {
        if ((st = rt_settings_json(OPT, N_OPT, v, path, NULL, other, o, err)) ||
            (st = rt_cfg_str(v, path, "type", RT_CFG_REQUIRED, &type, err)))
            return st;
    } else
        return rt_cfg_fail(err, path, NULL, "expected a name or an object, got %s",
                           rt_cfg_type_name(v));

    if (strcmp(type, "Ftrl") == 0)
        o->type = TRN_OPT_FTRL;
    else if (strcmp(type, "Adagrad") == 0)
        o->type = TRN_OPT_ADAGRAD;
    else if (strcmp(type, "Adam") == 0)
        o->type = TRN_OPT_ADAM;
    else if (strcmp(type, "SGD") == 0 || strcmp(type, "GradientDescent") == 0)
        o->type = TRN_OPT_SGD;
    else if (strcmp(type, "RMSProp") == 0) {
        o->type = TRN_OPT_RMSPROP;
        if (!cJSON_IsObject(v) || !cJSON_GetObjectItemCaseSensitive(v, "epsilon") ||
            cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(v, "epsilon")))
            o->epsilon = 1e-10; /* RMSPropOptimizer's default (Adam's is 1e-8) */
    } else if (strcmp(type, "ProximalAdagrad") == 0)
        o->type = TRN_OPT_PROXIMAL_ADAGRAD;
    else
        return rt_cfg_fail(err, path, "type",
                           "\"%s\" is not Ftrl, Adagrad, Adam, SGD, RMSProp or ProximalAdagrad",
                           type);
    if (!cJSON_IsObject(v))
        return RT_OK;
    if (cJSON_GetObjectItemCaseSensitive(v, "clip_norm") && !(o->clip_norm > 0))
        return rt_cfg_fail(err, path, "clip_norm", "must be > 0 (tf.clip_by_global_norm's "
                           "clip_norm; leave it out for no clipping)");
    const cJSON *lrd = cJSON_GetObjectItemCaseSensitive(v, "learning_rate_decay");
    if (lrd && !cJSON_IsNull(lrd)) {
        if ((st = parse_lr_decay(lrd, path, &o->lr_decay, err)))
            return st;
        /* TF's ApplyFtrl refuses a rate of 0, which these schedules reach */
        if (o->type == TRN_OPT_FTRL &&
            ((o->lr_decay.type == TRN_LR_COSINE && o->lr_decay.alpha == 0) ||
             (o->lr_decay.type == TRN_LR_POLYNOMIAL && o->lr_decay.end_learning_rate == 0)))
            return rt_cfg_fail(err, path, "learning_rate_decay",
                               "Ftrl needs a learning rate > 0, and this schedule reaches 0 "
                               "(give %s > 0)",
                               o->lr_decay.type == TRN_LR_COSINE ? "alpha" : "end_learning_rate");
    }
    if ((o->type == TRN_OPT_ADAGRAD || o->type == TRN_OPT_PROXIMAL_ADAGRAD) &&
        cJSON_GetObjectItemCaseSensitive(v, "initial_accumulator_value") &&
        o->initial_accumulator <= 0)
        return rt_cfg_fail(err, path, "initial_accumulator_value", "must be > 0");
    return RT_OK;
}

static void optimizer_defaults(trn_optimizer *o)
{
    rt_ignore(rt_settings_defaults(OPT, N_OPT, o, NULL)); /* no strings: cannot fail */
}

#define GINT(key, f, l, h, d) \
    {.name = #key, .type = RT_SET_I64, .where = RT_SET_JSON, .lo = l, .hi = h, .def = d, \
     .offset = OFS(trn_gbdt_params, f, int64_t)}
#define GNUM(key, f, l, h, d) \
    {.name = #key, .type = RT_SET_NUM, .where = RT_SET_JSON, .dlo = l, .dhi = h, .ddef = d, \
     .offset = OFS(trn_gbdt_params, f, double)}

static const rt_setting_choice PRUNING[] = {
    {"none", TRN_PRUNE_NONE}, {"pre", TRN_PRUNE_PRE}, {"post", TRN_PRUNE_POST}, {NULL, 0}};

/* BoostedTrees*: the tree parameters of the estimator object (TF's names
 * and defaults; the spec parser checks which keys an estimator takes). */
static const rt_setting GBDT[] = {
    GINT(n_trees, n_trees, 1, 1000000, 100),
    GINT(max_depth, max_depth, 1, TRN_GBDT_MAX_DEPTH, 6),
    GNUM(learning_rate, learning_rate, 1e-12, 1e6, 0.1),
    GNUM(l1_regularization, l1, 0, 1e12, 0),
    GNUM(l2_regularization, l2, 0, 1e12, 0),
    GNUM(tree_complexity, tree_complexity, 0, 1e12, 0),
    GNUM(min_node_weight, min_node_weight, 0, 1e12, 0),
    GNUM(quantile_sketch_epsilon, quantile_sketch_epsilon, 1e-6, 1, 0.01),
    GINT(n_batches_per_layer, n_batches_per_layer, 1, INT64_C(1) << 40, 1),
    {.name = "center_bias", .type = RT_SET_BOOL, .where = RT_SET_JSON,
     .offset = OFS(trn_gbdt_params, center_bias, bool)},
    {.name = "pruning_mode", .type = RT_SET_ENUM, .where = RT_SET_JSON, .choices = PRUNING,
     .def = TRN_PRUNE_NONE, .offset = OFS(trn_gbdt_params, pruning, trn_pruning_mode)},
};
#define N_GBDT (sizeof GBDT / sizeof GBDT[0])

static rt_status parse_gbdt(const cJSON *est, trn_gbdt_params *g, rt_err *err)
{
    const char *p = "estimator";
    for (size_t i = 0; i < N_GBDT; i++) {
        rt_status st = rt_setting_json(&GBDT[i], est, p, g, err);
        if (st)
            return st;
    }
    /* as TF: pruning compares gains with the per-split penalty */
    if (g->pruning != TRN_PRUNE_NONE && !(g->tree_complexity > 0))
        return rt_cfg_fail(err, p, "tree_complexity", "must be > 0 with pruning_mode \"%s\"",
                           g->pruning == TRN_PRUNE_PRE ? "pre" : "post");
    return RT_OK;
}

/* A list of strings, or one string naming a file of words. */
static rt_status get_words(const cJSON *obj, const char *key, const char *path, trn_words *w,
                           rt_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return RT_OK;
    if (cJSON_IsString(v)) {
        if (!v->valuestring[0])
            return rt_cfg_fail(err, path, key, "expected a file name or a list of words");
        w->file = strdup(v->valuestring);
        return w->file ? RT_OK : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
        return rt_cfg_fail(err, path, key, "expected a file name or a list of words, got %s",
                           rt_cfg_type_name(v));
    return get_files(obj, key, path, &w->words, &w->n, err);
}

/* "train.warm_start_from": "PATH" or {"ckpt_to_initialize_from": PATH,
 * "vars_to_warm_start": REGEX, "var_name_to_vocab_info": {TENSOR: {...}}} */
static rt_status parse_warm(const cJSON *v, trn_warm_start *w, rt_err *err)
{
    static const char *const keys[] = {"ckpt_to_initialize_from", "vars_to_warm_start",
                                       "var_name_to_vocab_info", NULL};
    static const char *const vkeys[] = {"new_vocab", "old_vocab", "old_vocab_size", NULL};
    const char *p = "train.warm_start_from";
    const char *from = NULL, *vars = NULL;
    rt_status st;
    if (cJSON_IsString(v))
        from = v->valuestring;
    else if (cJSON_IsObject(v)) {
        if ((st = rt_cfg_check_keys(v, p, keys, NULL, err)) ||
            (st = rt_cfg_str(v, p, "ckpt_to_initialize_from", RT_CFG_REQUIRED, &from, err)) ||
            (st = rt_cfg_str(v, p, "vars_to_warm_start", 0, &vars, err)))
            return st;
    } else
        return rt_cfg_fail(err, p, NULL, "expected a path or an object, got %s",
                           rt_cfg_type_name(v));
    if (!from[0])
        return rt_cfg_fail(err, p, NULL, "expected a path, got \"\"");
    w->from = strdup(from);
    w->vars = vars ? strdup(vars) : NULL;
    if (!w->from || (vars && !w->vars))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    const cJSON *vi = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v,
                                                                           "var_name_to_vocab_info")
                                        : NULL;
    if (!vi || cJSON_IsNull(vi))
        return RT_OK;
    if (!cJSON_IsObject(vi))
        return rt_cfg_fail(err, p, "var_name_to_vocab_info", "expected an object, got %s",
                           rt_cfg_type_name(vi));
    size_t n = (size_t)cJSON_GetArraySize(vi);
    w->vocab = calloc(n ? n : 1, sizeof *w->vocab);
    if (!w->vocab)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (const cJSON *it = vi->child; it; it = it->next) {
        char vp[512];
        snprintf(vp, sizeof vp, "%s.var_name_to_vocab_info.%.300s", p, it->string);
        trn_vocab_info *x = &w->vocab[w->n_vocab++];
        x->old_vocab_size = -1;
        if (!(x->var = strdup(it->string)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        if ((st = rt_cfg_check_keys(it, vp, vkeys, NULL, err)) ||
            (st = get_words(it, "new_vocab", vp, &x->new_vocab, err)) ||
            (st = get_words(it, "old_vocab", vp, &x->old_vocab, err)) ||
            (st = rt_cfg_int(it, vp, "old_vocab_size", 0, -1, INT64_C(1) << 40,
                             &x->old_vocab_size, err)))
            return st;
        if (x->old_vocab_size == 0)
            return rt_cfg_fail(err, vp, "old_vocab_size", "must be -1 (all) or >= 1");
    }
    return RT_OK;
}

/* "train.hooks": [{"type": "stop_if_no_increase_hook" | "stop_if_no_decrease_hook",
 * "metric_name", "max_steps_without_increase" | "max_steps_without_decrease",
 * "min_steps", "run_every_steps" | "run_every_secs"}] */
static rt_status parse_hooks(const cJSON *hooks, trn_config *c, rt_err *err)
{
    static const char *const keys[] = {"type", "metric_name", "max_steps_without_increase",
                                       "max_steps_without_decrease", "min_steps",
                                       "run_every_steps", "run_every_secs", NULL};
    if (!cJSON_IsArray(hooks))
        return rt_cfg_fail(err, "train", "hooks", "expected a list, got %s",
                           rt_cfg_type_name(hooks));
    size_t i = 0;
    for (const cJSON *it = hooks->child; it; it = it->next, i++) {
        char p[64];
        snprintf(p, sizeof p, "train.hooks[%zu]", i);
        if (i >= TRN_MAX_HOOKS)
            return rt_err_set(err, RT_ERR_LIMIT, "%s: at most %d hooks", p, TRN_MAX_HOOKS);
        rt_status st = rt_cfg_check_keys(it, p, keys, NULL, err);
        if (st)
            return st;
        trn_stop_hook *h = &c->hooks[i];
        memset(h, 0, sizeof *h);
        const char *type = NULL, *metric = NULL;
        if ((st = rt_cfg_str(it, p, "type", RT_CFG_REQUIRED, &type, err)))
            return st;
        if (strcmp(type, "stop_if_no_increase_hook") == 0)
            h->increase = 1;
        else if (strcmp(type, "stop_if_no_decrease_hook") != 0)
            return rt_cfg_fail(err, p, "type", "\"%s\" is not stop_if_no_increase_hook or "
                               "stop_if_no_decrease_hook", type);
        const char *max_key = h->increase ? "max_steps_without_increase"
                                          : "max_steps_without_decrease";
        const char *other = h->increase ? "max_steps_without_decrease"
                                        : "max_steps_without_increase";
        if (cJSON_GetObjectItemCaseSensitive(it, other))
            return rt_cfg_fail(err, p, other, "is not a parameter of %s (%s is)", type, max_key);
        if ((st = rt_cfg_str(it, p, "metric_name", RT_CFG_REQUIRED, &metric, err)))
            return st;
        if (!metric[0] || strlen(metric) >= sizeof h->metric)
            return rt_cfg_fail(err, p, "metric_name", "must be a metric name");
        snprintf(h->metric, sizeof h->metric, "%s", metric);
        h->run_every_secs = 60;
        if ((st = rt_cfg_int(it, p, max_key, RT_CFG_REQUIRED, 0, INT64_C(1) << 50,
                             &h->max_steps, err)) ||
            (st = rt_cfg_int(it, p, "min_steps", 0, 0, INT64_C(1) << 50, &h->min_steps, err)) ||
            (st = rt_cfg_int(it, p, "run_every_steps", 0, 1, INT64_C(1) << 50,
                             &h->run_every_steps, err)) ||
            (st = rt_cfg_num(it, p, "run_every_secs", 0, 0, 1e9, &h->run_every_secs, err)))
            return st;
        if (cJSON_GetObjectItemCaseSensitive(it, "run_every_steps") &&
            cJSON_GetObjectItemCaseSensitive(it, "run_every_secs"))
            return rt_cfg_fail(err, p, "run_every_secs",
                               "give either it or run_every_steps, not both");
        if (h->run_every_steps > 0)
            h->run_every_secs = 0;
    }
    c->n_hooks = i;
    return RT_OK;
}

/* ----------------------------------------------- the "train" and "eval" rows */

static rt_status custom_train_files(const cJSON *j, const char *path, const rt_setting *s,
                                    void *dst, rt_err *err)
{
    trn_config *c = dst;
    return files_of(j, s->name, path, &c->train_files, &c->n_train_files, err);
}

static rt_status custom_eval_files(const cJSON *j, const char *path, const rt_setting *s,
                                   void *dst, rt_err *err)
{
    trn_config *c = dst;
    return files_of(j, s->name, path, &c->eval_files, &c->n_eval_files, err);
}

static rt_status custom_hooks(const cJSON *j, const char *path, const rt_setting *s, void *dst,
                              rt_err *err)
{
    (void)path;
    (void)s;
    return parse_hooks(j, dst, err);
}

/* c's warm start is replaced only by a complete parse. */
static rt_status custom_warm(const cJSON *j, const char *path, const rt_setting *s, void *dst,
                             rt_err *err)
{
    trn_config *c = dst, tmp;
    (void)path;
    (void)s;
    memset(&tmp, 0, sizeof tmp);
    rt_status st = parse_warm(j, &tmp.warm, err);
    if (st) {
        trn_config_free(&tmp);
        return st;
    }
    trn_warm_start old = c->warm;
    c->warm = tmp.warm;
    memset(&tmp, 0, sizeof tmp);
    tmp.warm = old;
    trn_config_free(&tmp);
    return RT_OK;
}

static const rt_setting_choice BAD_ROWS[] = {
    {"skip", TRN_BAD_ROW_SKIP}, {"stop", TRN_BAD_ROW_STOP}, {NULL, 0}};
static const rt_setting_choice INPUT_FORMATS[] = {
    {"AUTO", RT_INPUT_AUTO}, {"CSV", RT_INPUT_CSV}, {"TFRECORD", RT_INPUT_TFRECORD},
    {"TFRECORD_GZIP", RT_INPUT_TFRECORD_GZIP}, {NULL, 0}};
static const rt_setting_choice SHARDS[] = {
    {"AUTO", TRN_SHARD_AUTO}, {"BATCH", TRN_SHARD_BATCH}, {NULL, 0}};

/* offsetof(trn_config, f), refused at compile time unless f has type T. */
#define CF(f, T)                                                                                   \
    (offsetof(trn_config, f) +                                                                     \
     0 * sizeof(char[_Generic(((trn_config *)0)->f, T: 1, default: -1)]))
#define TINT(sec, key, f, T, ty, l, h, d) \
    {.name = #key, .section = sec, .type = ty, .where = RT_SET_JSON, .lo = l, .hi = h, .def = d, \
     .offset = CF(f, T)}
#define TINT_ND(sec, key, f, T, ty, l, h, d) /* --help shows no default */ \
    {.name = #key, .section = sec, .type = ty, .where = RT_SET_JSON | RT_SET_NODEFAULT, .lo = l, \
     .hi = h, .def = d, .offset = CF(f, T)}
#define TNUM(sec, key, f, l, h, d) \
    {.name = #key, .section = sec, .type = RT_SET_NUM, .where = RT_SET_JSON, .dlo = l, .dhi = h, \
     .ddef = d, .offset = CF(f, double)}
#define TENUM(sec, key, f, T, ch, d) \
    {.name = #key, .section = sec, .type = RT_SET_ENUM, .where = RT_SET_JSON, .choices = ch,    \
     .def = d, .offset = CF(f, T)}
#define TCUSTOM(sec, key, fn) \
    {.name = #key, .section = sec, .type = RT_SET_CUSTOM, .where = RT_SET_JSON, .custom = fn}
#define P50 (INT64_C(1) << 50)
#define P40 (INT64_C(1) << 40)

/* The spec's "train" and "eval" keys: name, field, range, default (TF's
 * names and defaults; the reader's defaults are these too). */
static const rt_setting TRN_SPEC[] = {
    TCUSTOM("train", files, custom_train_files),
    TINT("train", max_steps, max_steps, int64_t, RT_SET_I64, 0, P50, 0),
    TINT("train", num_epochs, num_epochs, int64_t, RT_SET_I64, 0, INT64_C(1) << 30, 0),
    TINT("train", batch_size, batch_size, size_t, RT_SET_SIZE, 1, 1 << 20, 40),
    TINT("train", shuffle_buffer_size, shuffle_buffer_size, size_t, RT_SET_SIZE, 0, 1 << 26, 1000),
    TINT("train", seed, seed, uint64_t, RT_SET_U64, 0, INT64_C(1) << 53, 42),
    TINT("train", save_checkpoints_steps, save_checkpoints_steps, int64_t, RT_SET_I64, 0, P50, 0),
    TNUM("train", save_checkpoints_secs, save_checkpoints_secs, 0, 1e9, 600),
    TINT("train", keep_checkpoint_max, keep_checkpoint_max, int, RT_SET_INT, 0, 1000000, 5),
    TINT("train", log_step_count_steps, log_step_count_steps, int64_t, RT_SET_I64, 1, P40, 100),
    TINT("train", save_summary_steps, save_summary_steps, int64_t, RT_SET_I64, 0, P40, 100),
    TINT("train", skip_header_lines, skip_header_lines, size_t, RT_SET_SIZE, 0, 1000000, 0),
    TINT_ND("train", memory_limit_mb, memory_limit_mb, int64_t, RT_SET_I64, 0, P40, -1),
    TNUM("train", mpi_stall_warn_secs, mpi_stall_warn_secs, 0, 1e7, 60),
    TNUM("train", mpi_stall_abort_secs, mpi_stall_abort_secs, 0, 1e7, 0),
    TENUM("train", on_bad_row, bad_rows, trn_bad_row_policy, BAD_ROWS, TRN_BAD_ROW_STOP),
    TENUM("train", input_format, input_format, rt_input_format, INPUT_FORMATS, RT_INPUT_AUTO),
    TCUSTOM("train", hooks, custom_hooks),
    TCUSTOM("train", warm_start_from, custom_warm),
    TENUM("train", shard_policy, shard_policy, trn_shard_policy, SHARDS, TRN_SHARD_AUTO),
    TCUSTOM("eval", files, custom_eval_files),
    TINT("eval", steps, eval_steps, int64_t, RT_SET_I64, 0, P40, 0),
    TINT_ND("eval", batch_size, eval_batch_size, size_t, RT_SET_SIZE, 1, 1 << 20, 0),
    TNUM("eval", throttle_secs, throttle_secs, 0, 1e9, 600),
    TNUM("eval", start_delay_secs, eval_start_delay_secs, 0, 1e9, 0),
    TINT("eval", skip_header_lines, eval_skip_header_lines, size_t, RT_SET_SIZE, 0, 1000000, 0),
};
#define N_SPEC (sizeof TRN_SPEC / sizeof TRN_SPEC[0])

void trn_config_init(trn_config *c)
{
    memset(c, 0, sizeof *c);
    rt_ignore(rt_settings_defaults(TRN_SPEC, N_SPEC, c, NULL)); /* no strings: cannot fail */
    c->progress = TRN_PROGRESS_AUTO;
    snprintf(c->export_name, sizeof c->export_name, "%s", "model");
    c->linear_opt.type = TRN_OPT_DEFAULT;
    c->linear_opt.learning_rate = -1;
    c->dnn_opt.type = TRN_OPT_DEFAULT;
    c->dnn_opt.learning_rate = -1;
    c->log_level = 1;
    rt_ignore(rt_settings_defaults(GBDT, N_GBDT, &c->gbdt, NULL)); /* no strings: cannot fail */
}

int64_t trn_spec_default(const char *section, const char *key)
{
    const rt_setting *s = rt_settings_find_key(TRN_SPEC, N_SPEC, section, key);
    return s ? s->def : 0;
}

const rt_setting *trn_spec_settings(size_t *n)
{
    *n = N_SPEC;
    return TRN_SPEC;
}

static rt_status parse_train(const cJSON *t, trn_config *c, rt_err *err)
{
    const char *p = "train";
    rt_status st = rt_settings_json(TRN_SPEC, N_SPEC, t, p, "train", NULL, c, err);
    if (st)
        return st;
    if (cJSON_GetObjectItemCaseSensitive(t, "save_checkpoints_steps") &&
        cJSON_GetObjectItemCaseSensitive(t, "save_checkpoints_secs"))
        return rt_cfg_fail(err, p, "save_checkpoints_secs",
                           "give either it or save_checkpoints_steps, not both");
    if (c->save_checkpoints_steps > 0)
        c->save_checkpoints_secs = 0;
    return RT_OK;
}

static rt_status parse_eval(const cJSON *e, trn_config *c, rt_err *err)
{
    return rt_settings_json(TRN_SPEC, N_SPEC, e, "eval", "eval", NULL, c, err);
}

static rt_status parse_exporters(const cJSON *ex, trn_config *c, rt_err *err)
{
    static const char *const keys[] = {"type", "name", "exports_to_keep", "metric",
                                       "higher_is_better", NULL};
    if (!cJSON_IsArray(ex))
        return rt_cfg_fail(err, "export", "exporters", "expected a list, got %s",
                           rt_cfg_type_name(ex));
    size_t i = 0;
    for (const cJSON *it = ex->child; it; it = it->next, i++) {
        char p[64];
        snprintf(p, sizeof p, "export.exporters[%zu]", i);
        if (i >= TRN_MAX_EXPORTERS)
            return rt_err_set(err, RT_ERR_LIMIT, "%s: at most %d exporters", p,
                              TRN_MAX_EXPORTERS);
        rt_status st = rt_cfg_check_keys(it, p, keys, NULL, err);
        if (st)
            return st;
        trn_exporter_conf *x = &c->exporters[i];
        memset(x, 0, sizeof *x);
        const char *type = NULL;
        if ((st = rt_cfg_str(it, p, "type", RT_CFG_REQUIRED, &type, err)))
            return st;
        if (strcmp(type, "FinalExporter") == 0) {
            x->type = TRN_EXPORTER_FINAL;
            snprintf(x->name, sizeof x->name, "%s", c->export_name);
        } else if (strcmp(type, "LatestExporter") == 0) {
            x->type = TRN_EXPORTER_LATEST;
            snprintf(x->name, sizeof x->name, "latest");
        } else if (strcmp(type, "BestExporter") == 0) {
            x->type = TRN_EXPORTER_BEST;
            snprintf(x->name, sizeof x->name, "best");
        } else
            return rt_cfg_fail(err, p, "type",
                               "\"%s\" is not FinalExporter, LatestExporter or BestExporter",
                               type);
        x->exports_to_keep = 5;
        snprintf(x->metric, sizeof x->metric, "loss");
        if ((st = get_name(it, "name", p, x->name, sizeof x->name, err)))
            return st;
        int64_t k = x->exports_to_keep;
        if ((st = rt_cfg_int(it, p, "exports_to_keep", 0, 0, 1000000, &k, err)))
            return st;
        x->exports_to_keep = (int)k;
        const char *metric = NULL;
        if ((st = rt_cfg_str(it, p, "metric", 0, &metric, err)))
            return st;
        if (metric) {
            if (x->type != TRN_EXPORTER_BEST)
                return rt_cfg_fail(err, p, "metric", "only for BestExporter");
            if (!metric[0] || strlen(metric) >= sizeof x->metric)
                return rt_cfg_fail(err, p, "metric", "must be a metric name");
            snprintf(x->metric, sizeof x->metric, "%s", metric);
            /* loss-like metrics go down, the others up */
            x->higher_is_better = !(strstr(x->metric, "loss") != NULL);
        }
        bool hib = x->higher_is_better;
        if ((st = rt_cfg_bool(it, p, "higher_is_better", 0, &hib, err)))
            return st;
        x->higher_is_better = hib;
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->exporters[j].name, x->name) == 0)
                return rt_cfg_fail(err, p, "name", "\"%s\" is used by exporters[%zu] too", x->name,
                                   j);
    }
    c->n_exporters = i;
    return RT_OK;
}

rt_status trn_config_from_spec(const cJSON *spec, trn_config *c, rt_err *err)
{
    rt_status st;
    if (!cJSON_IsObject(spec))
        return rt_err_set(err, RT_ERR_INVALID, "spec: must be a JSON object");
    const cJSON *t = NULL, *e = NULL;
    if ((st = rt_cfg_object(spec, "", "train", 0, &t, err)) ||
        (t && (st = parse_train(t, c, err))))
        return st;
    if ((st = rt_cfg_object(spec, "", "eval", 0, &e, err)) || (e && (st = parse_eval(e, c, err))))
        return st;
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(spec, "export");
    if (x && !cJSON_IsNull(x)) {
        if (!cJSON_IsObject(x))
            return rt_cfg_fail(err, "export", NULL, "expected an object, got %s",
                               rt_cfg_type_name(x));
        if ((st = get_name(x, "name", "export", c->export_name, sizeof c->export_name, err)))
            return st;
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(x, "exporters");
        if (ex && (st = parse_exporters(ex, c, err)))
            return st;
    }
    const cJSON *est = cJSON_GetObjectItemCaseSensitive(spec, "estimator");
    optimizer_defaults(&c->linear_opt);
    optimizer_defaults(&c->dnn_opt);
    if (cJSON_IsObject(est)) {
        const cJSON *t_ = cJSON_GetObjectItemCaseSensitive(est, "type");
        const char *type = cJSON_IsString(t_) ? t_->valuestring : "";
        int linear_only = strncmp(type, "Linear", 6) == 0;
        int dnn_only = strncmp(type, "DNN", 3) == 0 && strncmp(type, "DNNLinear", 9) != 0;
        if (strstr(type, "BoostedTrees") == type && (st = parse_gbdt(est, &c->gbdt, err)))
            return st;
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(est, "optimizer");
        const cJSON *lo = cJSON_GetObjectItemCaseSensitive(est, "linear_optimizer");
        const cJSON *dop = cJSON_GetObjectItemCaseSensitive(est, "dnn_optimizer");
        if (o && !linear_only && !dnn_only)
            return rt_err_set(err, RT_ERR_INVALID,
                              "estimator.optimizer: %s takes linear_optimizer and dnn_optimizer",
                              type);
        if (lo && dnn_only)
            return rt_err_set(err, RT_ERR_INVALID, "estimator.linear_optimizer: %s has no "
                              "linear part (use optimizer)", type);
        if (dop && linear_only)
            return rt_err_set(err, RT_ERR_INVALID, "estimator.dnn_optimizer: %s has no DNN "
                              "part (use optimizer)", type);
        if (o && (st = parse_optimizer(o, "estimator.optimizer",
                                       linear_only ? &c->linear_opt : &c->dnn_opt, err)))
            return st;
        if (lo && (st = parse_optimizer(lo, "estimator.linear_optimizer", &c->linear_opt, err)))
            return st;
        if (dop && (st = parse_optimizer(dop, "estimator.dnn_optimizer", &c->dnn_opt, err)))
            return st;
        const char *lr = NULL;
        if ((st = rt_cfg_str(est, "estimator", "loss_reduction", 0, &lr, err)))
            return st;
        if (lr) {
            if (strcmp(lr, "SUM") == 0)
                c->loss_sum = 1;
            else if (strcmp(lr, "SUM_OVER_BATCH_SIZE") == 0)
                c->loss_sum = 0;
            else
                return rt_cfg_fail(err, "estimator", "loss_reduction",
                                   "must be \"SUM_OVER_BATCH_SIZE\" or \"SUM\"");
        }
        const cJSON *dr = cJSON_GetObjectItemCaseSensitive(est, "dnn_dropout");
        if (!dr)
            dr = cJSON_GetObjectItemCaseSensitive(est, "dropout");
        if (cJSON_IsNumber(dr))
            c->dropout = dr->valuedouble;
    }
    if (c->n_exporters == 0) {
        c->n_exporters = 1;
        memset(&c->exporters[0], 0, sizeof c->exporters[0]);
        c->exporters[0].type = TRN_EXPORTER_FINAL;
        snprintf(c->exporters[0].name, sizeof c->exporters[0].name, "%s", c->export_name);
        c->exporters[0].exports_to_keep = 0;
        snprintf(c->exporters[0].metric, sizeof c->exporters[0].metric, "loss");
    }
    return RT_OK;
}

rt_status trn_config_resolve(trn_config *c, const Predictd__ModelDef *def, rt_err *err)
{
    if (!def || !def->graph)
        return rt_err_set(err, RT_ERR_INVALID, "model: no graph");
    const char *est = def->graph->estimator ? def->graph->estimator : "";
    size_t n_lin = def->graph->n_linear_columns;
    int has_linear = n_lin > 0;
    int has_dnn = def->graph->n_hidden_layers > 0 || def->graph->logits_layer != NULL;
    int combined = has_linear && has_dnn;
    double inv = n_lin ? 1.0 / sqrt((double)n_lin) : 1.0;
    trn_optimizer *lo = &c->linear_opt, *dop = &c->dnn_opt;
    (void)est;
    if (lo->type == TRN_OPT_DEFAULT)
        lo->type = TRN_OPT_FTRL;
    if (lo->learning_rate < 0) {
        if (lo->type == TRN_OPT_FTRL)
            lo->learning_rate = fmin(combined ? 0.005 : 0.2, inv);
        else
            lo->learning_rate = combined ? 0.001 : 0.05;
    }
    if (dop->type == TRN_OPT_DEFAULT)
        dop->type = TRN_OPT_ADAGRAD;
    if (dop->learning_rate < 0)
        dop->learning_rate = combined ? 0.001 : 0.05;
    if ((lo->type == TRN_OPT_ADAGRAD || lo->type == TRN_OPT_PROXIMAL_ADAGRAD) &&
        lo->initial_accumulator <= 0)
        return rt_err_set(err, RT_ERR_INVALID,
                          "estimator.linear_optimizer.initial_accumulator_value: must be > 0");
    if (c->eval_batch_size == 0)
        c->eval_batch_size = c->batch_size < 256 ? 256 : c->batch_size;
    if (c->save_checkpoints_steps <= 0 && c->save_checkpoints_secs <= 0)
        c->save_checkpoints_secs = 600;
    return RT_OK;
}

/* -------------------------------------------------------------- overrides */

/* offsetof(trn_overrides, f), refused at compile time unless f has type T. */
#define OF(f, T)                                                                                   \
    (offsetof(trn_overrides, f) +                                                                  \
     0 * sizeof(char[_Generic(((trn_overrides *)0)->f, T: 1, default: -1)]))
/* A flag: its spelling, aliases, the spec key it writes (section, key; NULL
 * for none), field, type, lowest value (the spec checks the rest), value
 * name and help. Unset is NULL / -1. */
#define FSTR(fl, al, sec, key, f, a, hl)                                                           \
    {.name = key, .section = sec, .flag = fl, .aliases = al, .type = RT_SET_STR,                 \
     .where = RT_SET_FLAG, .offset = OF(f, const char *), .arg = a, .help = hl}
#define FINT(fl, al, sec, key, f, l, a, hl)                                                        \
    {.name = key, .section = sec, .flag = fl, .aliases = al, .type = RT_SET_I64,                 \
     .where = RT_SET_FLAG | RT_SET_NODEFAULT, .lo = l, .hi = INT64_MAX, .def = -1,               \
     .offset = OF(f, int64_t), .arg = a, .help = hl}
#define FNUM(fl, sec, key, f, l, h, wh, a, hl)                                                     \
    {.name = key, .section = sec, .flag = fl, .type = RT_SET_NUM,                                \
     .where = RT_SET_FLAG | RT_SET_NODEFAULT, .dlo = l, .dhi = h, .ddef = -1, .what = wh,        \
     .offset = OF(f, double), .arg = a, .help = hl}
#define FENUM(fl, f, ch, hl)                                                                       \
    {.name = fl, .flag = fl, .type = RT_SET_ENUM, .where = RT_SET_FLAG | RT_SET_NODEFAULT,       \
     .choices = ch, .def = -1, .offset = OF(f, int), .help = hl}

static const rt_setting_choice PROGRESS[] = {{"auto", TRN_PROGRESS_AUTO},
                                             {"bar", TRN_PROGRESS_BAR},
                                             {"lines", TRN_PROGRESS_LINES},
                                             {"quiet", TRN_PROGRESS_QUIET},
                                             {NULL, 0}};
static const rt_setting_choice LEVELS[] = {{"DEBUG", 0}, {"INFO", 1}, {"WARN", 2},
                                           {"ERROR", 3}, {"FATAL", 4}, {NULL, 0}};
static const rt_setting_choice FORMATS[] = {{"JSON", 0}, {"CSV", 1}, {"EXAMPLE", 2}, {NULL, 0}};

/* predict-train's flags, in --help order. */
static const rt_setting TRN_FLAGS[] = {
    FSTR("spec", NULL, NULL, "spec", spec, "FILE",
         "the JSON spec: feature columns, estimator, train, eval, export (required)"),
    FSTR("train-files", NULL, "train", "files", train_files, "LIST",
         "training files, CSV or TFRecord (comma-separated, globs allowed)"),
    FSTR("eval-files", NULL, "eval", "files", eval_files, "LIST", "evaluation files, CSV or TFRecord"),
    FSTR("job-dir", "model-dir", NULL, "job_dir", job_dir, "DIR",
         "checkpoints, eval/metrics.jsonl, export/<name>/<version>/; without it a temporary "
         "directory is used (its path is printed)"),
    FINT("train-steps", "max-steps", "train", "max_steps", train_steps, 0, "N",
         "max_steps (absolute global step)"),
    FINT("num-epochs", NULL, "train", "num_epochs", num_epochs, 0, "N",
         "passes over the training files (0 = until max_steps)"),
    FINT("eval-steps", NULL, "eval", "steps", eval_steps, 0, "N",
         "evaluation batches (0 = the whole eval set)"),
    FINT("batch-size", "train-batch-size", "train", "batch_size", batch_size, 1, "N",
         "training batch size"),
    FINT("eval-batch-size", NULL, "eval", "batch_size", eval_batch_size, 1, "N",
         "evaluation batch size (default: the training batch size, at least 256)"),
    {.name = "format", .section = "export", .flag = "export-format", .type = RT_SET_STR,
     .where = RT_SET_FLAG, .offset = OF(export_format, const char *), .arg = "JSON|CSV|EXAMPLE",
     .help = "the serving input function of the export", .choices = FORMATS},
    FINT("seed", NULL, "train", "seed", seed, 0, "N",
         "seed of the initial weights and of shuffling"),
    FINT("first-layer-size", NULL, NULL, "first_layer_size", first_layer_size, 1, "N",
         "DNN hidden units max(2, int(N * X^i)), i < --num-layers (task.py's)"),
    FINT("num-layers", NULL, NULL, "num_layers", num_layers, 1, "N",
         "with --first-layer-size: the number of hidden layers, 1 to 64 (default 4)"),
    FNUM("scale-factor", NULL, "scale_factor", scale_factor, DBL_TRUE_MIN, DBL_MAX,
         "a number > 0", "X",
         "with --first-layer-size: each hidden layer is X times the one before, in (0, 10] "
         "(default 0.7)"),
    FINT("embedding-size", NULL, NULL, "embedding_size", embedding_size, 1, "N",
         "dimension of every embedding_column and shared_embedding_columns, 1 to 4096"),
    FINT("memory-limit-mb", NULL, "train", "memory_limit_mb", memory_limit_mb, 0, "N",
         "refuse a model needing more than N MiB (0 = no check; default: the memory this "
         "machine can give)"),
    FENUM("on-bad-row", on_bad_row, BAD_ROWS,
          "malformed CSV rows: skip and count, or stop with FILE:LINE (default stop)"),
    FENUM("input-format", input_format, INPUT_FORMATS,
          "train.input_format: CSV or TFRecord files of tf.Example, plain or gzip; AUTO "
          "(default) tells each file by its content"),
    FNUM("mpi-stall-warn-secs", "train", "mpi_stall_warn_secs", mpi_stall_warn_secs, 0, 1e7,
         "a number of seconds in [0, 1e7]", "S",
         "distributed: rank 0 names the ranks it has waited for S seconds in one exchange "
         "(0 = never)"),
    FNUM("mpi-stall-abort-secs", "train", "mpi_stall_abort_secs", mpi_stall_abort_secs, 0, 1e7,
         "a number of seconds in [0, 1e7]", "S",
         "distributed: rank 0 ends the job with an error naming them after S seconds (0 = "
         "never: synchronous training waits)"),
    FSTR("trace-endpoint", NULL, NULL, "trace_endpoint", trace_endpoint, "URL",
         "send OpenTelemetry spans of the run (the job, its training, each evaluation and "
         "export) as OTLP/HTTP JSON to this http:// collector URL when it ends; TRACEPARENT "
         "in the environment makes them part of that trace (docs/trainer.md, \"Traces\")"),
    FENUM("progress", progress, PROGRESS,
          "a bar on a terminal, log lines otherwise (default auto)"),
    FENUM("verbosity", verbosity, LEVELS,
          "INFO lines and progress only up to INFO (TF's logging verbosity; default INFO)"),
};
#define N_FLAGS (sizeof TRN_FLAGS / sizeof TRN_FLAGS[0])

const rt_setting *trn_flag_settings(size_t *n)
{
    *n = N_FLAGS;
    return TRN_FLAGS;
}

void trn_overrides_init(trn_overrides *o)
{
    memset(o, 0, sizeof *o);
    rt_ignore(rt_settings_defaults(TRN_FLAGS, N_FLAGS, o, NULL)); /* strings: NULL */
}

void trn_overrides_free(trn_overrides *o)
{
    rt_settings_free(TRN_FLAGS, N_FLAGS, o);
    trn_spec_set_free(o);
}

typedef struct flags_ctx {
    bool *help;
    trn_overrides *o;
} flags_ctx;

/* The flags outside the table: --help, --spec.PATH=VALUE. */
static int other_flag(void *ctx, const char *name, size_t len, const char *eq, const char *next,
                      rt_err *err)
{
    flags_ctx *c = ctx;
    int r = rt_settings_argv_help(c->help, name, len, eq, next, err);
    return r ? r : trn_spec_set_flag(c->o, name, len, eq, next, err);
}

rt_status trn_flags_parse(int argc, char **argv, trn_overrides *o, bool *help, int *next,
                          rt_err *err)
{
    *help = false;
    flags_ctx c = {help, o};
    rt_argv a = {.rows = TRN_FLAGS,
                 .n = N_FLAGS,
                 .dash_underscore = true,
                 .unknown_flag_last = true,
                 .extra = rt_argv_help_names,
                 .other = other_flag,
                 .ctx = &c};
    /* --help ends the reading: what follows it is not looked at */
    return rt_settings_argv(&a, rt_settings_argv_help_end(argc, argv, NULL), argv, o, NULL, next,
                            err);
}

char *trn_usage(void)
{
    size_t n_spec;
    const rt_setting *spec = trn_spec_settings(&n_spec);
    rt_buf b;
    rt_buf_init(&b);
    int r = rt_buf_puts(&b, "usage: predict-train --spec FILE [options]\n");
    r |= rt_settings_help(&b, TRN_FLAGS, N_FLAGS, 28, spec, n_spec);
    r |= rt_buf_puts(
        &b,
        "  --spec.PATH=VALUE         set one field of the spec: PATH's dot-separated parts\n"
        "                            are keys, array indexes or elements' \"name\"s\n"
        "                            (--spec.estimator.model.layers.h1.units=64); the\n"
        "                            value keeps the field's type (predict-tune's\n"
        "                            parameterName spec.PATH tunes it)\n"
        "  -h, --help                this text\n"
        "Flags may be spelled with underscores (task.py's --train_files); TensorFlow's\n"
        "--max_steps is --train-steps and --model_dir is --job-dir.\n"
        "SIGINT/SIGTERM: the current step ends, a checkpoint is written, exit 130/143.\n"
        "Distributed: mpirun -np N predict-train ... (the same flags; docs/distributed.md)\n");
    if (r) {
        rt_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* Returns spec[key], creating an empty object when missing. */
static cJSON *section(cJSON *spec, const char *key)
{
    cJSON *s = cJSON_GetObjectItemCaseSensitive(spec, key);
    if (s)
        return cJSON_IsObject(s) ? s : NULL;
    return cJSON_AddObjectToObject(spec, key);
}

/* obj[key] = item (in place when there, else appended); item is obj's or,
 * on failure, freed. */
static rt_status put_item(cJSON *obj, const char *key, cJSON *item, rt_err *err)
{
    bool ok = item && (cJSON_GetObjectItemCaseSensitive(obj, key)
                           ? cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)
                           : cJSON_AddItemToObject(obj, key, item));
    if (!ok) {
        cJSON_Delete(item);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    return RT_OK;
}

static rt_status set_num(cJSON *obj, const char *key, double v, rt_err *err)
{
    return put_item(obj, key, cJSON_CreateNumber(v), err);
}

static rt_status set_files(cJSON *obj, const char *key, const char *list, rt_err *err)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0) {
            char *s = strndup(p, len);
            cJSON *it = s ? cJSON_CreateString(s) : NULL;
            free(s);
            if (!it) {
                cJSON_Delete(arr);
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            }
            cJSON_AddItemToArray(arr, it);
        }
        if (!e)
            break;
        p = e + 1;
    }
    if (cJSON_GetArraySize(arr) == 0) {
        cJSON_Delete(arr);
        return rt_err_set(err, RT_ERR_INVALID, "--%s: no file given",
                          strcmp(key, "files") == 0 ? "files" : key);
    }
    return put_item(obj, key, arr, err);
}

rt_status trn_spec_apply_overrides(cJSON *spec, const trn_overrides *o, rt_err *err)
{
    rt_status st = RT_OK;
    if (!cJSON_IsObject(spec))
        return rt_err_set(err, RT_ERR_INVALID, "spec: must be a JSON object");
    cJSON *train = section(spec, "train");
    cJSON *eval = section(spec, "eval");
    if (!train || !eval)
        return rt_err_set(err, RT_ERR_INVALID, "spec: \"train\" and \"eval\" must be objects");
    if (o->train_files && (st = set_files(train, "files", o->train_files, err)))
        return st;
    if (o->eval_files && (st = set_files(eval, "files", o->eval_files, err)))
        return st;
    /* every flag that stands for a number of "train" or "eval" */
    for (size_t i = 0; i < N_FLAGS; i++) {
        const rt_setting *f = &TRN_FLAGS[i];
        const void *v = (const char *)o + f->offset;
        double x;
        if (!f->section || (f->type != RT_SET_I64 && f->type != RT_SET_NUM))
            continue;
        if (f->type == RT_SET_I64) {
            if (*(const int64_t *)v < 0)
                continue; /* not given */
            if (*(const int64_t *)v < f->lo)
                return rt_err_set(err, RT_ERR_INVALID, "--%s: must be >= %lld", f->flag,
                                  (long long)f->lo);
            x = (double)*(const int64_t *)v;
        } else if ((x = *(const double *)v) < 0) {
            continue;
        }
        if ((st = set_num(strcmp(f->section, "train") == 0 ? train : eval, f->name, x, err)))
            return st;
    }
    if (o->export_format) {
        bool known = false;
        for (const rt_setting_choice *k = FORMATS; k->name; k++)
            known |= strcmp(k->name, o->export_format) == 0;
        if (!known)
            return rt_err_set(err, RT_ERR_INVALID,
                              "--export-format: \"%s\" is not JSON, CSV or EXAMPLE",
                              o->export_format);
        cJSON *x = section(spec, "export");
        cJSON *s = cJSON_CreateString(o->export_format);
        if (!x || !s) {
            cJSON_Delete(s);
            return rt_err_set(err, RT_ERR_INVALID, "export: must be an object");
        }
        if (cJSON_GetObjectItemCaseSensitive(x, "format"))
            cJSON_ReplaceItemInObjectCaseSensitive(x, "format", s);
        else
            cJSON_AddItemToObject(x, "format", s);
    }
    cJSON *est = cJSON_GetObjectItemCaseSensitive(spec, "estimator");
    if (o->first_layer_size >= 0 || o->num_layers >= 0 || o->scale_factor >= 0) {
        if (o->first_layer_size < 1)
            return rt_err_set(err, RT_ERR_INVALID,
                              "--first-layer-size: required (>= 1) with --num-layers and "
                              "--scale-factor");
        int64_t layers = o->num_layers >= 0 ? o->num_layers : 4;
        double scale = o->scale_factor >= 0 ? o->scale_factor : 0.7;
        if (layers < 1 || layers > 64)
            return rt_err_set(err, RT_ERR_INVALID, "--num-layers: must be 1 to 64");
        if (scale <= 0 || scale > 10)
            return rt_err_set(err, RT_ERR_INVALID, "--scale-factor: must be in (0, 10]");
        if (!cJSON_IsObject(est))
            return rt_err_set(err, RT_ERR_INVALID, "estimator: missing");
        cJSON *arr = cJSON_CreateArray();
        if (!arr)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < layers; i++) {
            double u = (double)o->first_layer_size * pow(scale, (double)i);
            int64_t units = (int64_t)u;
            if (units < 2)
                units = 2;
            cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)units));
        }
        if (cJSON_GetObjectItemCaseSensitive(est, "dnn_hidden_units"))
            cJSON_ReplaceItemInObjectCaseSensitive(est, "dnn_hidden_units", arr);
        else if (cJSON_GetObjectItemCaseSensitive(est, "hidden_units"))
            cJSON_ReplaceItemInObjectCaseSensitive(est, "hidden_units", arr);
        else
            cJSON_AddItemToObject(est, "dnn_hidden_units", arr);
    }
    if (o->embedding_size >= 0) {
        if (o->embedding_size < 1 || o->embedding_size > 4096)
            return rt_err_set(err, RT_ERR_INVALID, "--embedding-size: must be 1 to 4096");
        cJSON *fc = cJSON_GetObjectItemCaseSensitive(spec, "feature_columns");
        cJSON *it;
        cJSON_ArrayForEach(it, fc)
        {
            cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "type");
            if (cJSON_IsString(t) && (strcmp(t->valuestring, "embedding_column") == 0 ||
                                      strcmp(t->valuestring, "shared_embedding_columns") == 0) &&
                (st = set_num(it, "dimension", (double)o->embedding_size, err)))
                return st;
        }
    }
    return trn_spec_set_apply(spec, o, err); /* last: the field named wins */
}

/* ----------------------------------------------------------------- random */

void trn_rng_seed(trn_rng *r, uint64_t seed)
{
    rt_rng_seed(r, seed ^ 0x5eed5eed12345678ULL);
}
