/*
 * trn_config.c — the trainer's parts of a spec ("train", "eval",
 * "export.exporters", the estimator's optimizers), the canned estimators'
 * optimizer defaults, and the task.py-style command-line overrides, which are
 * written into the spec tree itself.
 */
#include "trn.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trn_config_init(trn_config *c)
{
    memset(c, 0, sizeof *c);
    c->max_steps = 0;
    c->num_epochs = 0;
    c->batch_size = 40;
    c->shuffle_buffer_size = 1000;
    c->seed = 42;
    c->save_checkpoints_steps = 0;
    c->save_checkpoints_secs = 600;
    c->keep_checkpoint_max = 5;
    c->log_step_count_steps = 100;
    c->save_summary_steps = 100;
    c->bad_rows = TRN_BAD_ROW_STOP;
    c->progress = TRN_PROGRESS_AUTO;
    c->eval_batch_size = 0;
    c->eval_steps = 0;
    c->throttle_secs = 600;
    snprintf(c->export_name, sizeof c->export_name, "%s", "model");
    c->linear_opt.type = TRN_OPT_DEFAULT;
    c->linear_opt.learning_rate = -1;
    c->dnn_opt.type = TRN_OPT_DEFAULT;
    c->dnn_opt.learning_rate = -1;
    c->memory_limit_mb = -1;
    c->mpi_stall_warn_secs = 60;
    c->mpi_stall_abort_secs = 0;
    c->log_level = 1;
    c->gbdt.n_trees = 100;
    c->gbdt.max_depth = 6;
    c->gbdt.learning_rate = 0.1;
    c->gbdt.quantile_sketch_epsilon = 0.01;
    c->gbdt.n_batches_per_layer = 1;
    c->gbdt.pruning = TRN_PRUNE_NONE;
}

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

/* A string or an array of strings -> a malloc'd list (appended). */
static rt_status get_files(const cJSON *obj, const char *key, const char *path, char ***list,
                           size_t *n, rt_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return RT_OK;
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

static rt_status parse_optimizer(const cJSON *v, const char *path, trn_optimizer *o,
                                 rt_err *err)
{
    static const char *const keys[] = {"type", "learning_rate", "l1_regularization_strength",
                                       "l2_regularization_strength", "learning_rate_power",
                                       "initial_accumulator_value", "beta1", "beta2",
                                       "epsilon", "decay", "momentum", "centered",
                                       "learning_rate_decay", NULL};
    const char *type = NULL;
    rt_status st;
    if (cJSON_IsString(v))
        type = v->valuestring;
    else if (cJSON_IsObject(v)) {
        st = rt_cfg_check_keys(v, path, keys, NULL, err);
        if (st)
            return st;
        if ((st = rt_cfg_str(v, path, "type", RT_CFG_REQUIRED, &type, err)))
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
        o->epsilon = 1e-10; /* RMSPropOptimizer's default (Adam's is 1e-8) */
    } else if (strcmp(type, "ProximalAdagrad") == 0)
        o->type = TRN_OPT_PROXIMAL_ADAGRAD;
    else
        return rt_cfg_fail(err, path, "type",
                           "\"%s\" is not Ftrl, Adagrad, Adam, SGD, RMSProp or ProximalAdagrad",
                           type);
    if (!cJSON_IsObject(v))
        return RT_OK;
    bool centered = o->centered;
    if ((st = rt_cfg_num(v, path, "learning_rate", 0, 1e-12, 1e6, &o->learning_rate, err)) ||
        (st = rt_cfg_num(v, path, "l1_regularization_strength", 0, 0, 1e9, &o->l1, err)) ||
        (st = rt_cfg_num(v, path, "l2_regularization_strength", 0, 0, 1e9, &o->l2, err)) ||
        (st = rt_cfg_num(v, path, "learning_rate_power", 0, -1e3, 0, &o->lr_power, err)) ||
        (st = rt_cfg_num(v, path, "initial_accumulator_value", 0, 0, 1e9, &o->initial_accumulator,
                         err)) ||
        (st = rt_cfg_num(v, path, "beta1", 0, 0, 0.999999, &o->beta1, err)) ||
        (st = rt_cfg_num(v, path, "beta2", 0, 0, 0.999999999, &o->beta2, err)) ||
        (st = rt_cfg_num(v, path, "epsilon", 0, 1e-30, 1, &o->epsilon, err)) ||
        (st = rt_cfg_num(v, path, "decay", 0, 0, 1, &o->decay, err)) ||
        (st = rt_cfg_num(v, path, "momentum", 0, 0, 1, &o->momentum, err)) ||
        (st = rt_cfg_bool(v, path, "centered", 0, &centered, err)))
        return st;
    o->centered = centered;
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
    o->learning_rate = -1;
    o->l1 = 0;
    o->l2 = 0;
    o->lr_power = -0.5;
    o->initial_accumulator = 0.1;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->epsilon = 1e-8;
    o->decay = 0.9;
    o->momentum = 0;
    o->centered = 0;
}

/* BoostedTrees*: the tree parameters of the estimator object (TF's names;
 * the spec parser checks which keys an estimator takes). */
static rt_status parse_gbdt(const cJSON *est, trn_gbdt_params *g, rt_err *err)
{
    const char *p = "estimator";
    rt_status st;
    if ((st = rt_cfg_int(est, p, "n_trees", 0, 1, 1000000, &g->n_trees, err)) ||
        (st = rt_cfg_int(est, p, "max_depth", 0, 1, TRN_GBDT_MAX_DEPTH, &g->max_depth, err)) ||
        (st = rt_cfg_num(est, p, "learning_rate", 0, 1e-12, 1e6, &g->learning_rate, err)) ||
        (st = rt_cfg_num(est, p, "l1_regularization", 0, 0, 1e12, &g->l1, err)) ||
        (st = rt_cfg_num(est, p, "l2_regularization", 0, 0, 1e12, &g->l2, err)) ||
        (st = rt_cfg_num(est, p, "tree_complexity", 0, 0, 1e12, &g->tree_complexity, err)) ||
        (st = rt_cfg_num(est, p, "min_node_weight", 0, 0, 1e12, &g->min_node_weight, err)) ||
        (st = rt_cfg_num(est, p, "quantile_sketch_epsilon", 0, 1e-6, 1,
                         &g->quantile_sketch_epsilon, err)) ||
        (st = rt_cfg_int(est, p, "n_batches_per_layer", 0, 1, INT64_C(1) << 40,
                         &g->n_batches_per_layer, err)))
        return st;
    if (cJSON_GetObjectItemCaseSensitive(est, "learning_rate") &&
        !(g->learning_rate > 0))
        return rt_cfg_fail(err, p, "learning_rate", "must be > 0");
    bool cb = g->center_bias != 0;
    if ((st = rt_cfg_bool(est, p, "center_bias", 0, &cb, err)))
        return st;
    g->center_bias = cb;
    const char *pm = NULL;
    if ((st = rt_cfg_str(est, p, "pruning_mode", 0, &pm, err)))
        return st;
    if (pm) {
        if (strcmp(pm, "none") == 0)
            g->pruning = TRN_PRUNE_NONE;
        else if (strcmp(pm, "pre") == 0)
            g->pruning = TRN_PRUNE_PRE;
        else if (strcmp(pm, "post") == 0)
            g->pruning = TRN_PRUNE_POST;
        else
            return rt_cfg_fail(err, p, "pruning_mode", "\"%.32s\" is not \"none\", \"pre\" "
                               "or \"post\"", pm);
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

static rt_status parse_train(const cJSON *t, trn_config *c, rt_err *err)
{
    static const char *const keys[] = {"files", "max_steps", "num_epochs", "batch_size",
                                       "shuffle_buffer_size", "seed", "save_checkpoints_steps",
                                       "save_checkpoints_secs", "keep_checkpoint_max",
                                       "log_step_count_steps", "save_summary_steps",
                                       "on_bad_row", "skip_header_lines", "memory_limit_mb",
                                       "shard_policy", "hooks", "warm_start_from",
                                       "mpi_stall_warn_secs", "mpi_stall_abort_secs", NULL};
    const char *p = "train";
    rt_status st = rt_cfg_check_keys(t, p, keys, NULL, err);
    if (st)
        return st;
    int64_t v;
    if ((st = get_files(t, "files", p, &c->train_files, &c->n_train_files, err)))
        return st;
    v = c->max_steps;
    if ((st = rt_cfg_int(t, p, "max_steps", 0, 0, INT64_C(1) << 50, &v, err)))
        return st;
    c->max_steps = v;
    v = c->num_epochs;
    if ((st = rt_cfg_int(t, p, "num_epochs", 0, 0, INT64_C(1) << 30, &v, err)))
        return st;
    c->num_epochs = v;
    v = (int64_t)c->batch_size;
    if ((st = rt_cfg_int(t, p, "batch_size", 0, 1, 1 << 20, &v, err)))
        return st;
    c->batch_size = (size_t)v;
    v = (int64_t)c->shuffle_buffer_size;
    if ((st = rt_cfg_int(t, p, "shuffle_buffer_size", 0, 0, 1 << 26, &v, err)))
        return st;
    c->shuffle_buffer_size = (size_t)v;
    v = (int64_t)c->seed;
    if ((st = rt_cfg_int(t, p, "seed", 0, 0, INT64_C(1) << 53, &v, err)))
        return st;
    c->seed = (uint64_t)v;
    v = c->save_checkpoints_steps;
    if ((st = rt_cfg_int(t, p, "save_checkpoints_steps", 0, 0, INT64_C(1) << 50, &v, err)))
        return st;
    c->save_checkpoints_steps = v;
    if ((st = rt_cfg_num(t, p, "save_checkpoints_secs", 0, 0, 1e9, &c->save_checkpoints_secs,
                         err)))
        return st;
    if (cJSON_GetObjectItemCaseSensitive(t, "save_checkpoints_steps") &&
        cJSON_GetObjectItemCaseSensitive(t, "save_checkpoints_secs"))
        return rt_cfg_fail(err, p, "save_checkpoints_secs",
                           "give either it or save_checkpoints_steps, not both");
    if (c->save_checkpoints_steps > 0)
        c->save_checkpoints_secs = 0;
    v = c->keep_checkpoint_max;
    if ((st = rt_cfg_int(t, p, "keep_checkpoint_max", 0, 0, 1000000, &v, err)))
        return st;
    c->keep_checkpoint_max = (int)v;
    v = c->log_step_count_steps;
    if ((st = rt_cfg_int(t, p, "log_step_count_steps", 0, 1, INT64_C(1) << 40, &v, err)))
        return st;
    c->log_step_count_steps = v;
    v = c->save_summary_steps;
    if ((st = rt_cfg_int(t, p, "save_summary_steps", 0, 0, INT64_C(1) << 40, &v, err)))
        return st;
    c->save_summary_steps = v;
    v = (int64_t)c->skip_header_lines;
    if ((st = rt_cfg_int(t, p, "skip_header_lines", 0, 0, 1000000, &v, err)))
        return st;
    c->skip_header_lines = (size_t)v;
    if ((st = rt_cfg_int(t, p, "memory_limit_mb", 0, 0, INT64_C(1) << 40, &c->memory_limit_mb,
                         err)))
        return st;
    if ((st = rt_cfg_num(t, p, "mpi_stall_warn_secs", 0, 0, 1e7, &c->mpi_stall_warn_secs,
                         err)) ||
        (st = rt_cfg_num(t, p, "mpi_stall_abort_secs", 0, 0, 1e7, &c->mpi_stall_abort_secs,
                         err)))
        return st;
    const char *bad = NULL;
    if ((st = rt_cfg_str(t, p, "on_bad_row", 0, &bad, err)))
        return st;
    if (bad) {
        if (strcmp(bad, "skip") == 0)
            c->bad_rows = TRN_BAD_ROW_SKIP;
        else if (strcmp(bad, "stop") == 0)
            c->bad_rows = TRN_BAD_ROW_STOP;
        else
            return rt_cfg_fail(err, p, "on_bad_row", "must be \"skip\" or \"stop\"");
    }
    const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(t, "hooks");
    if (hooks && !cJSON_IsNull(hooks) && (st = parse_hooks(hooks, c, err)))
        return st;
    const cJSON *warm = cJSON_GetObjectItemCaseSensitive(t, "warm_start_from");
    if (warm && !cJSON_IsNull(warm)) {
        trn_config tmp; /* c's warm start replaced only by a complete parse */
        memset(&tmp, 0, sizeof tmp);
        st = parse_warm(warm, &tmp.warm, err);
        if (st) {
            trn_config_free(&tmp);
            return st;
        }
        trn_warm_start old = c->warm;
        c->warm = tmp.warm;
        memset(&tmp, 0, sizeof tmp);
        tmp.warm = old;
        trn_config_free(&tmp);
    }
    const char *sp = NULL;
    if ((st = rt_cfg_str(t, p, "shard_policy", 0, &sp, err)))
        return st;
    if (sp) {
        if (strcmp(sp, "AUTO") == 0)
            c->shard_policy = TRN_SHARD_AUTO;
        else if (strcmp(sp, "BATCH") == 0)
            c->shard_policy = TRN_SHARD_BATCH;
        else
            return rt_cfg_fail(err, p, "shard_policy", "must be \"AUTO\" or \"BATCH\"");
    }
    return RT_OK;
}

static rt_status parse_eval(const cJSON *e, trn_config *c, rt_err *err)
{
    static const char *const keys[] = {"files", "steps", "batch_size", "throttle_secs",
                                       "start_delay_secs", "skip_header_lines", NULL};
    const char *p = "eval";
    rt_status st = rt_cfg_check_keys(e, p, keys, NULL, err);
    if (st)
        return st;
    if ((st = get_files(e, "files", p, &c->eval_files, &c->n_eval_files, err)))
        return st;
    int64_t v = c->eval_steps;
    if ((st = rt_cfg_int(e, p, "steps", 0, 0, INT64_C(1) << 40, &v, err)))
        return st;
    c->eval_steps = v;
    v = (int64_t)c->eval_batch_size;
    if ((st = rt_cfg_int(e, p, "batch_size", 0, 1, 1 << 20, &v, err)))
        return st;
    c->eval_batch_size = (size_t)v;
    v = (int64_t)c->eval_skip_header_lines;
    if ((st = rt_cfg_int(e, p, "skip_header_lines", 0, 0, 1000000, &v, err)))
        return st;
    c->eval_skip_header_lines = (size_t)v;
    double d = 0;
    if ((st = rt_cfg_num(e, p, "throttle_secs", 0, 0, 1e9, &c->throttle_secs, err)) ||
        (st = rt_cfg_num(e, p, "start_delay_secs", 0, 0, 1e9, &d, err)))
        return st;
    return RT_OK;
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

void trn_overrides_init(trn_overrides *o)
{
    memset(o, 0, sizeof *o);
    o->train_steps = -1;
    o->num_epochs = -1;
    o->eval_steps = -1;
    o->batch_size = -1;
    o->eval_batch_size = -1;
    o->seed = -1;
    o->first_layer_size = -1;
    o->num_layers = -1;
    o->scale_factor = -1;
    o->embedding_size = -1;
    o->memory_limit_mb = -1;
    o->mpi_stall_warn_secs = -1;
    o->mpi_stall_abort_secs = -1;
}

/* Returns spec[key], creating an empty object when missing. */
static cJSON *section(cJSON *spec, const char *key)
{
    cJSON *s = cJSON_GetObjectItemCaseSensitive(spec, key);
    if (s)
        return cJSON_IsObject(s) ? s : NULL;
    return cJSON_AddObjectToObject(spec, key);
}

/* obj[key] = item, replacing one there; item is obj's, or freed when it
 * cannot be put (out of memory: the key's copy). */
static rt_status put_item(cJSON *obj, const char *key, cJSON *item, rt_err *err)
{
    if (!item)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    cJSON_bool ok = cJSON_GetObjectItemCaseSensitive(obj, key)
                        ? cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)
                        : cJSON_AddItemToObject(obj, key, item);
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
    if (o->train_steps >= 0 && (st = set_num(train, "max_steps", (double)o->train_steps, err)))
        return st;
    if (o->num_epochs >= 0 && (st = set_num(train, "num_epochs", (double)o->num_epochs, err)))
        return st;
    if (o->batch_size >= 0) {
        if (o->batch_size < 1)
            return rt_err_set(err, RT_ERR_INVALID, "--batch-size: must be >= 1");
        if ((st = set_num(train, "batch_size", (double)o->batch_size, err)))
            return st;
    }
    if (o->seed >= 0 && (st = set_num(train, "seed", (double)o->seed, err)))
        return st;
    if (o->memory_limit_mb >= 0 &&
        (st = set_num(train, "memory_limit_mb", (double)o->memory_limit_mb, err)))
        return st;
    if (o->mpi_stall_warn_secs >= 0 &&
        (st = set_num(train, "mpi_stall_warn_secs", o->mpi_stall_warn_secs, err)))
        return st;
    if (o->mpi_stall_abort_secs >= 0 &&
        (st = set_num(train, "mpi_stall_abort_secs", o->mpi_stall_abort_secs, err)))
        return st;
    if (o->eval_steps >= 0 && (st = set_num(eval, "steps", (double)o->eval_steps, err)))
        return st;
    if (o->eval_batch_size >= 0) {
        if (o->eval_batch_size < 1)
            return rt_err_set(err, RT_ERR_INVALID, "--eval-batch-size: must be >= 1");
        if ((st = set_num(eval, "batch_size", (double)o->eval_batch_size, err)))
            return st;
    }
    if (o->export_format) {
        if (strcmp(o->export_format, "JSON") != 0 && strcmp(o->export_format, "CSV") != 0 &&
            strcmp(o->export_format, "EXAMPLE") != 0)
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
    return RT_OK;
}

/* ----------------------------------------------------------------- random */

void trn_rng_seed(trn_rng *r, uint64_t seed)
{
    rt_rng_seed(r, seed ^ 0x5eed5eed12345678ULL);
}
