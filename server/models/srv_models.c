/*
 * srv_models.c — the model manager: which versions of which models are
 * loaded, and the loader that keeps that in line with the base paths.
 *
 * Each model has a list of version records (sorted by version). A record is
 * reference counted: the list holds one reference, every request in flight
 * holds one (srv_manager_acquire / srv_version_release), the loader holds
 * one while it loads. A version taken out of the list (unloaded, directory
 * gone, model removed from the config) is freed — and its rt_model closed —
 * when the last request using it finishes, like nginx's old cycles.
 *
 * One mutex guards the model table and every record's state; it is held
 * only for lookups and pointer swaps, never while a model loads. Scans,
 * loading and warm-up are srv_loader.c's, watching srv_watch.c's; both
 * threads call this file and it calls neither: the loader and the watcher
 * are woken through the manager's own state (srv_manager_wake: a flag and
 * the condition variable; srv_watcher_kick: the eventfd), defined here. Models
 * are found by name (requests, status) and by base path (the watcher) in
 * two sorted indexes rebuilt at each apply: lookups stay logarithmic with
 * 10,000 models.
 *
 * Pinning: a version that a label or default_version names is loaded and
 * kept whatever the version policy says, until the label moves.
 *
 * Readiness (srv_manager_ready): every model that readiness counts has a
 * default route that answers. It counts the models of the first config, and
 * a model added by a reload from the moment its default route first
 * answers: an operator's mistake in a new model (a wrong path, a broken
 * export) never takes a serving instance out of its load balancer. A reload
 * that adds a model whose base path cannot be read at all is refused.
 */
#include "srv_models_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- basics */

const char *srv_state_name(srv_state s)
{
    switch (s) {
    case SRV_STATE_START: return "START";
    case SRV_STATE_LOADING: return "LOADING";
    case SRV_STATE_AVAILABLE: return "AVAILABLE";
    case SRV_STATE_UNLOADING: return "UNLOADING";
    case SRV_STATE_END: return "END";
    }
    return "UNKNOWN";
}

/* TensorFlow's canonical error code names for a status. */
static const char *code_name(rt_status s)
{
    switch (s) {
    case RT_OK: return "OK";
    case RT_ERR_INVALID: return "INVALID_ARGUMENT";
    case RT_ERR_NOMEM: return "RESOURCE_EXHAUSTED";
    case RT_ERR_IO: return "UNAVAILABLE";
    case RT_ERR_NOTFOUND: return "NOT_FOUND";
    case RT_ERR_FORMAT: return "DATA_LOSS";
    case RT_ERR_LIMIT: return "RESOURCE_EXHAUSTED";
    case RT_ERR_UNSUPPORTED: return "UNIMPLEMENTED";
    case RT_ERR_EXISTS: return "ALREADY_EXISTS";
    }
    return "UNKNOWN";
}

char *srv_dup_str(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

static void version_free(srv_version *v)
{
    srv_monitor_free(v->monitor); /* before the model its features point into */
    rt_model_close(v->model);
    free(v);
}

void srv_version_release(srv_version *v)
{
    if (!v)
        return;
    int held = atomic_fetch_sub(&v->refs, 1);
    RT_ASSERT(held >= 1); /* a release without its acquire */
    if (held == 1)
        version_free(v);
}

const rt_model *srv_version_model(const srv_version *v)
{
    return v->model;
}

srv_monitor *srv_version_monitor(const srv_version *v)
{
    return v ? v->monitor : NULL;
}

int64_t srv_version_number(const srv_version *v)
{
    return v->version;
}


static bool conf_copy(srv_model_conf *d, const srv_model_conf *s)
{
    memset(d, 0, sizeof *d);
    d->policy = s->policy;
    d->latest_n = s->latest_n;
    d->default_version = s->default_version;
    d->name = srv_dup_str(s->name);
    d->base_path = srv_dup_str(s->base_path);
    if (!d->name || !d->base_path)
        goto fail;
    if (s->default_label && !(d->default_label = srv_dup_str(s->default_label)))
        goto fail;
    if (!srv_rollout_copy(&d->rollout, &s->rollout) ||
        !srv_monitor_conf_copy(&d->monitor, &s->monitor))
        goto fail;
    if (s->n_specific) {
        d->specific = malloc(s->n_specific * sizeof *d->specific);
        if (!d->specific)
            goto fail;
        memcpy(d->specific, s->specific, s->n_specific * sizeof *d->specific);
        d->n_specific = s->n_specific;
    }
    if (s->n_labels) {
        d->labels = calloc(s->n_labels, sizeof *d->labels);
        if (!d->labels)
            goto fail;
        for (size_t i = 0; i < s->n_labels; i++) {
            d->labels[i].version = s->labels[i].version;
            if (!(d->labels[i].name = srv_dup_str(s->labels[i].name)))
                goto fail;
            d->n_labels = i + 1;
        }
    }
    return true;
fail:
    srv_model_conf_clear(d);
    return false;
}

/* Frees a model record; its versions' list references are released. */
static void mmodel_free(mmodel *mm)
{
    if (!mm)
        return;
    for (size_t i = 0; i < mm->n_vers; i++)
        srv_version_release(mm->vers[i]);
    free(mm->vers);
    free(mm->ignored);
    srv_model_conf_clear(&mm->conf);
    free(mm);
}

mmodel *srv_mm_find(const srv_manager *m, const char *name)
{
    size_t lo = 0, hi = m->n_models; /* by_name: sorted by name, unique */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->by_name[mid]->conf.name, name);
        if (c == 0)
            return m->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int cmp_mm_name(const void *a, const void *b)
{
    return strcmp((*(mmodel *const *)a)->conf.name, (*(mmodel *const *)b)->conf.name);
}

static int cmp_mm_path(const void *a, const void *b)
{
    return strcmp((*(mmodel *const *)a)->conf.base_path, (*(mmodel *const *)b)->conf.base_path);
}

size_t srv_mm_by_path(const srv_manager *m, const char *base_path, mmodel ***first)
{
    size_t lo = 0, hi = m->n_models; /* the first model whose base path is >= base_path */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(m->by_path[mid]->conf.base_path, base_path) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t n = 0;
    while (lo + n < m->n_models && !strcmp(m->by_path[lo + n]->conf.base_path, base_path))
        n++;
    *first = m->by_path + lo;
    return n;
}

srv_version *srv_mm_version(const mmodel *mm, int64_t version)
{
    size_t lo = 0, hi = mm->n_vers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mm->vers[mid]->version == version)
            return mm->vers[mid];
        if (mm->vers[mid]->version < version)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool srv_mm_insert(mmodel *mm, srv_version *v)
{
    if (rt_grow(&mm->vers, &mm->cap, mm->n_vers + 1, sizeof *mm->vers) != 0)
        return false;
    size_t i = mm->n_vers;
    while (i > 0 && mm->vers[i - 1]->version > v->version) {
        mm->vers[i] = mm->vers[i - 1];
        i--;
    }
    mm->vers[i] = v;
    mm->n_vers++;
    return true;
}

/* Takes v out of the list; the caller releases the list's reference. */
bool srv_mm_remove(mmodel *mm, srv_version *v)
{
    for (size_t i = 0; i < mm->n_vers; i++)
        if (mm->vers[i] == v) {
            memmove(&mm->vers[i], &mm->vers[i + 1], (mm->n_vers - i - 1) * sizeof *mm->vers);
            mm->n_vers--;
            return true;
        }
    return false;
}

static const srv_label *find_label(const srv_model_conf *c, const char *label)
{
    for (size_t i = 0; i < c->n_labels; i++)
        if (!strcmp(c->labels[i].name, label))
            return &c->labels[i];
    return NULL;
}

bool srv_mm_pinned(const mmodel *mm, int64_t version)
{
    if (mm->conf.default_version == version)
        return true;
    for (size_t i = 0; i < mm->conf.n_labels; i++)
        if (mm->conf.labels[i].version == version)
            return true;
    const srv_rollout_conf *r = &mm->conf.rollout;
    for (size_t i = 0; i < r->n_split; i++)
        if (!r->split[i].to.label && r->split[i].to.version == version)
            return true;
    return r->shadow && !r->shadow_to.label && r->shadow_to.version == version;
}

static srv_version *newest_available(const mmodel *mm)
{
    for (size_t i = mm->n_vers; i > 0; i--)
        if (mm->vers[i - 1]->state == SRV_STATE_AVAILABLE)
            return mm->vers[i - 1];
    return NULL;
}

/* ------------------------------------------------------------ manager */

rt_status srv_manager_new(srv_manager **out, rt_err *err)
{
    *out = NULL;
    srv_manager *m = calloc(1, sizeof *m);
    if (!m)
        return rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
    rt_time_cond_init(&m->cv);
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->poll_mu, NULL);
    atomic_init(&m->warmup, true);
    m->watch_efd = -1;
    *out = m;
    return RT_OK;
}

void srv_manager_free(srv_manager *m)
{
    if (!m)
        return;
    if (m->started) {
        pthread_mutex_lock(&m->mu);
        m->stop = true;
        pthread_cond_broadcast(&m->cv);
        pthread_mutex_unlock(&m->mu);
        srv_watcher_kick(m);
        pthread_join(m->thread, NULL);
        if (m->watcher_started)
            pthread_join(m->watcher, NULL);
    }
    if (m->watch_efd >= 0)
        close(m->watch_efd);
    for (size_t i = 0; i < m->n_models; i++)
        mmodel_free(m->models[i]);
    free(m->models);
    free(m->by_name);
    free(m->by_path);
    rt_ctx_free(m->warm_ctx);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->poll_mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

/* A reload may not add a model (or move one to a base path) that cannot be
 * read: one mistyped path would otherwise hold a model that can never
 * serve. Checked outside the mutex (a slow file system must not stall
 * requests); the first config is not checked (a base path may appear after
 * the start: the model then waits, and readiness with it). */
static rt_status check_paths(srv_manager *m, const srv_config *c, rt_err *err)
{
    bool *fresh = calloc(c->n_models ? c->n_models : 1, sizeof *fresh);
    bool *added = calloc(c->n_models ? c->n_models : 1, sizeof *added);
    if (!fresh || !added) {
        free(fresh);
        free(added);
        return rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
    }
    pthread_mutex_lock(&m->mu);
    bool reload = m->applied;
    for (size_t i = 0; i < c->n_models; i++) {
        const mmodel *mm = srv_mm_find(m, c->models[i].name);
        added[i] = !mm;
        fresh[i] = reload && (!mm || strcmp(mm->conf.base_path, c->models[i].base_path) != 0);
    }
    pthread_mutex_unlock(&m->mu);
    rt_status st = RT_OK;
    for (size_t i = 0; st == RT_OK && i < c->n_models; i++) {
        struct stat sb;
        const char *bp = c->models[i].base_path;
        if (!fresh[i])
            continue;
        if (stat(bp, &sb) != 0)
            st = rt_err_set(err, RT_ERR_INVALID,
                            "models[%zu].base_path: %s: %s; a reload may not add a model "
                            "whose base path cannot be read (the running config stays)",
                            i, bp, strerror(errno));
        else if (!S_ISDIR(sb.st_mode))
            st = rt_err_set(err, RT_ERR_INVALID,
                            "models[%zu].base_path: %s is not a directory; a reload may not "
                            "add a model whose base path cannot be read (the running config "
                            "stays)", i, bp);
    }
    /* A model not running yet (every model at start): its labels name
     * versions that are loaded once found, so a label on a version missing
     * from the base path is what TF Serving refuses at start. */
    for (size_t i = 0; st == RT_OK && i < c->n_models; i++)
        for (size_t j = 0; st == RT_OK && added[i] && j < c->models[i].n_labels; j++) {
            const srv_model_conf *mc = &c->models[i];
            const srv_label *l = &mc->labels[j];
            char dir[4200];
            struct stat sb;
            snprintf(dir, sizeof dir, "%s/%lld", mc->base_path, (long long)l->version);
            if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
                continue;
            if (c->allow_version_labels_for_unavailable_models)
                srv_log(SRV_LOG_WARN,
                        "models[%zu].version_labels.%s: version %lld of model '%s' is not "
                        "available (no directory %s); accepted under "
                        "--allow_version_labels_for_unavailable_models",
                        i, l->name, (long long)l->version, mc->name, dir);
            else
                st = rt_err_set(err, RT_ERR_INVALID,
                                "models[%zu].version_labels.%s: version %lld of model '%s' is "
                                "not available (no directory %s); a label may only point at "
                                "an available version unless "
                                "--allow_version_labels_for_unavailable_models is given",
                                i, l->name, (long long)l->version, mc->name, dir);
        }
    free(fresh);
    free(added);
    return st;
}

/* True when the running conf old already sent split or shadow traffic to
 * version (so a reload that keeps it is not refused if it went away). */
static bool rollout_had(const srv_model_conf *old, int64_t version)
{
    const srv_rollout_conf *r = &old->rollout;
    for (size_t i = 0; i < r->n_split; i++)
        if (srv_target_version(old, &r->split[i].to) == version)
            return true;
    return r->shadow && srv_target_version(old, &r->shadow_to) == version;
}

/* A traffic split or shadow of a running model may only send requests to
 * AVAILABLE versions; with allow (TF Serving's
 * allow_version_labels_for_unavailable_models) a new target on a version
 * that is not AVAILABLE is accepted with a warning (its share is answered
 * by the default version until it is). */
static rt_status check_rollout(const mmodel *mm, const srv_model_conf *nc, size_t idx,
                               bool allow, rt_err *err)
{
    const srv_rollout_conf *r = &nc->rollout;
    for (size_t j = 0; j <= r->n_split; j++) {
        const srv_target *t = j < r->n_split ? &r->split[j].to
                                             : r->shadow ? &r->shadow_to : NULL;
        if (!t)
            break;
        int64_t want = srv_target_version(nc, t);
        if (rollout_had(&mm->conf, want))
            continue; /* unchanged */
        srv_version *v = srv_mm_version(mm, want);
        if (v && v->state == SRV_STATE_AVAILABLE)
            continue;
        char path[200];
        if (j < r->n_split && t->label)
            snprintf(path, sizeof path, "models[%zu].traffic_split.%s", idx, t->label);
        else if (j < r->n_split)
            snprintf(path, sizeof path, "models[%zu].traffic_split.%lld", idx, (long long)want);
        else
            snprintf(path, sizeof path, "models[%zu].shadow.version", idx);
        const char *state = v ? srv_state_name(v->state) : "not loaded";
        if (allow) {
            srv_log(SRV_LOG_WARN,
                    "%s: version %lld of model '%s' is not AVAILABLE (%s); accepted under "
                    "--allow_version_labels_for_unavailable_models (the default version "
                    "answers its share until it is)",
                    path, (long long)want, nc->name, state);
            continue;
        }
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: version %lld of model '%s' is not AVAILABLE (%s); traffic may "
                          "only be sent to an AVAILABLE version unless "
                          "--allow_version_labels_for_unavailable_models is given",
                          path, (long long)want, nc->name, state);
    }
    return RT_OK;
}

static rt_status check_locked(srv_manager *m, const srv_config *c, rt_err *err)
{
    for (size_t i = 0; i < c->n_models; i++) {
        const srv_model_conf *nc = &c->models[i];
        mmodel *mm = srv_mm_find(m, nc->name);
        if (!mm)
            continue; /* a new model may name versions that are not loaded yet */
        for (size_t j = 0; j < nc->n_labels; j++) {
            const srv_label *old = find_label(&mm->conf, nc->labels[j].name);
            if (old && old->version == nc->labels[j].version)
                continue; /* unchanged */
            srv_version *v = srv_mm_version(mm, nc->labels[j].version);
            if (v && v->state == SRV_STATE_AVAILABLE)
                continue;
            const char *state = v ? srv_state_name(v->state) : "not loaded";
            /* TF Serving's rule: only a label not assigned yet may be put on
             * a version that is not available, and only when allowed (a
             * label moved early would fail its requests while it loads). */
            if (!old && c->allow_version_labels_for_unavailable_models) {
                srv_log(SRV_LOG_WARN,
                        "models[%zu].version_labels.%s: version %lld of model '%s' is not "
                        "AVAILABLE (%s); accepted under "
                        "--allow_version_labels_for_unavailable_models",
                        i, nc->labels[j].name, (long long)nc->labels[j].version, nc->name,
                        state);
                continue;
            }
            return rt_err_set(err, RT_ERR_INVALID,
                              "models[%zu].version_labels.%s: version %lld of model '%s' "
                              "is not AVAILABLE (%s); a label may only point at an "
                              "AVAILABLE version%s",
                              i, nc->labels[j].name, (long long)nc->labels[j].version,
                              nc->name, state,
                              old ? " (a label in use moves only onto an AVAILABLE version)"
                                  : " unless --allow_version_labels_for_unavailable_models "
                                    "is given");
        }
        if (check_rollout(mm, nc, i, c->allow_version_labels_for_unavailable_models, err) !=
            RT_OK)
            return RT_ERR_INVALID;
    }
    return RT_OK;
}

rt_status srv_manager_check(srv_manager *m, const srv_config *c, rt_err *err)
{
    if (check_paths(m, c, err) != RT_OK)
        return RT_ERR_INVALID;
    pthread_mutex_lock(&m->mu);
    rt_status st = check_locked(m, c, err);
    pthread_mutex_unlock(&m->mu);
    return st;
}

rt_status srv_manager_apply(srv_manager *m, const srv_config *c, rt_err *err)
{
    rt_status st = RT_OK;
    mmodel **next = calloc(c->n_models ? c->n_models : 1, sizeof *next);
    srv_model_conf *confs = calloc(c->n_models ? c->n_models : 1, sizeof *confs);
    mmodel **by_name = calloc(c->n_models ? c->n_models : 1, sizeof *by_name);
    mmodel **by_path = calloc(c->n_models ? c->n_models : 1, sizeof *by_path);
    mmodel **gone = NULL;
    size_t n_gone = 0;
    if (!next || !confs || !by_name || !by_path) {
        st = rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
        goto out;
    }
    if ((st = check_paths(m, c, err)) != RT_OK)
        goto out;
    /* Copies first, so nothing can fail half-way through the switch. */
    for (size_t i = 0; i < c->n_models; i++)
        if (!conf_copy(&confs[i], &c->models[i])) {
            for (size_t j = 0; j < i; j++)
                srv_model_conf_clear(&confs[j]);
            st = rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
            goto out;
        }
    pthread_mutex_lock(&m->mu);
    if ((st = check_locked(m, c, err)) != RT_OK) {
        pthread_mutex_unlock(&m->mu);
        for (size_t i = 0; i < c->n_models; i++)
            srv_model_conf_clear(&confs[i]);
        goto out;
    }
    gone = calloc(m->n_models ? m->n_models : 1, sizeof *gone);
    mmodel **fresh = calloc(c->n_models ? c->n_models : 1, sizeof *fresh);
    bool ok = gone && fresh;
    snprintf(m->config_file, sizeof m->config_file, "%s",
             c->model_config_file ? c->model_config_file : "");
    for (size_t i = 0; ok && i < c->n_models; i++)
        if (!srv_mm_find(m, confs[i].name))
            ok = (fresh[i] = calloc(1, sizeof **fresh)) != NULL;
    if (!ok) {
        pthread_mutex_unlock(&m->mu);
        for (size_t i = 0; i < c->n_models; i++) {
            free(fresh ? fresh[i] : NULL);
            srv_model_conf_clear(&confs[i]);
        }
        free(fresh);
        st = rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
        goto out;
    }
    for (size_t i = 0; i < c->n_models; i++) {
        mmodel *mm = srv_mm_find(m, confs[i].name);
        if (mm) {
            srv_model_conf_clear(&mm->conf);
        } else {
            mm = fresh[i];
            mm->required = !m->applied;
            srv_log(SRV_LOG_INFO, "model %s: added (base path %s)%s", confs[i].name,
                    confs[i].base_path,
                    m->applied ? "; readiness counts it once its default version answers" : "");
        }
        mm->conf = confs[i];
        next[i] = mm;
    }
    free(fresh);
    for (size_t i = 0; i < m->n_models; i++) {
        bool kept = false;
        for (size_t j = 0; j < c->n_models; j++)
            kept = kept || next[j] == m->models[i];
        if (!kept)
            gone[n_gone++] = m->models[i];
    }
    free(m->models);
    m->models = next;
    m->n_models = c->n_models;
    memcpy(by_name, next, c->n_models * sizeof *by_name);
    memcpy(by_path, next, c->n_models * sizeof *by_path);
    qsort(by_name, c->n_models, sizeof *by_name, cmp_mm_name);
    qsort(by_path, c->n_models, sizeof *by_path, cmp_mm_path);
    free(m->by_name);
    free(m->by_path);
    m->by_name = by_name;
    m->by_path = by_path;
    by_name = by_path = NULL;
    m->applied = true;
    atomic_store(&m->warmup, c->enable_model_warmup);
    next = NULL;
    m->wake = true;
    m->watch_gen++; /* the watcher follows the new set of base paths */
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    srv_watcher_kick(m);
    for (size_t i = 0; i < n_gone; i++) {
        srv_log(SRV_LOG_INFO, "model %s: removed from the config; unloading its versions",
                gone[i]->conf.name);
        mmodel_free(gone[i]); /* requests in flight keep their versions alive */
    }
out:
    free(gone);
    free(next);
    free(confs);
    free(by_name);
    free(by_path);
    return st;
}

/* ------------------------------------------------------------ lookups */

/* The record answering for label in mm, or an error. Locked. */
static rt_status resolve_label(const mmodel *mm, const char *label, rt_status missing_code,
                               srv_version **out, rt_err *err)
{
    const srv_label *l = find_label(&mm->conf, label);
    if (!l)
        return rt_err_set(err, RT_ERR_INVALID, "model '%s' has no version label '%s'",
                          mm->conf.name, label);
    srv_version *v = srv_mm_version(mm, l->version);
    if (!v || v->state != SRV_STATE_AVAILABLE)
        return rt_err_set(err, missing_code,
                          "label '%s' of model '%s' points at version %lld, which is not "
                          "available",
                          label, mm->conf.name, (long long)l->version);
    *out = v;
    return RT_OK;
}

/* Resolves model/version/label to a record. require_available: the record
 * must be AVAILABLE (requests); else any known record (status). Locked. */
static rt_status resolve_mm(const mmodel *mm, int64_t version, const char *label,
                            bool require_available, srv_version **out, rt_err *err)
{
    const char *model = mm->conf.name;
    *out = NULL;
    if (label && label[0]) {
        const srv_label *l = find_label(&mm->conf, label);
        if (!l)
            return rt_err_set(err, RT_ERR_INVALID, "model '%s' has no version label '%s'",
                              model, label);
        if (!require_available) {
            srv_version *v = srv_mm_version(mm, l->version);
            if (!v)
                return rt_err_set(err, RT_ERR_NOTFOUND,
                                  "label '%s' of model '%s' points at version %lld, which is "
                                  "not loaded",
                                  label, model, (long long)l->version);
            *out = v;
            return RT_OK;
        }
        return resolve_label(mm, label, RT_ERR_NOTFOUND, out, err);
    }
    if (version >= 0) {
        srv_version *v = srv_mm_version(mm, version);
        if (!v || (require_available && v->state != SRV_STATE_AVAILABLE))
            return rt_err_set(err, RT_ERR_NOTFOUND,
                              "version %lld of model '%s' is not available (%s)",
                              (long long)version, model,
                              v ? srv_state_name(v->state) : "no such version");
        *out = v;
        return RT_OK;
    }
    /* The default version. No version at all under a base path that has
     * none, or that cannot be read: 404 with TF Serving's hint. */
    if (mm->n_vers == 0 && (mm->hint[0] || mm->scan_error[0]))
        return rt_err_set(err, RT_ERR_NOTFOUND, "model '%s': %s", model,
                          mm->hint[0] ? mm->hint : mm->scan_error);
    if (mm->conf.default_label)
        return resolve_label(mm, mm->conf.default_label, RT_ERR_UNSUPPORTED, out, err);
    if (mm->conf.default_version >= 0) {
        srv_version *v = srv_mm_version(mm, mm->conf.default_version);
        if (!v || v->state != SRV_STATE_AVAILABLE)
            return rt_err_set(err, RT_ERR_UNSUPPORTED,
                              "default version %lld of model '%s' is not available",
                              (long long)mm->conf.default_version, model);
        *out = v;
        return RT_OK;
    }
    srv_version *v = newest_available(mm);
    if (!v)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "model '%s' has no AVAILABLE version yet",
                          model);
    *out = v;
    return RT_OK;
}

static rt_status resolve(srv_manager *m, const char *model, int64_t version, const char *label,
                         bool require_available, srv_version **out, rt_err *err)
{
    const mmodel *mm = srv_mm_find(m, model);
    *out = NULL;
    if (!mm)
        return rt_err_set(err, RT_ERR_NOTFOUND, "model '%s' not found", model);
    return resolve_mm(mm, version, label, require_available, out, err);
}

/* The version the split sends a request with draw to, when AVAILABLE;
 * else the default version. Locked. */
static rt_status resolve_split(const mmodel *mm, uint64_t draw, srv_version **out,
                               rt_err *err)
{
    const srv_split_arm *arm = srv_split_pick(&mm->conf.rollout, draw);
    srv_version *v = srv_mm_version(mm, srv_target_version(&mm->conf, &arm->to));
    if (v && v->state == SRV_STATE_AVAILABLE) {
        *out = v;
        return RT_OK;
    }
    return resolve_mm(mm, -1, NULL, true, out, err);
}

/* Whether this request is shadowed and logged (pick->sample's low 32 bits
 * for the shadow, its high 32 bits for the log). Locked. */
static void sample(const mmodel *mm, const srv_version *served, srv_pick *pick)
{
    const srv_rollout_conf *r = &mm->conf.rollout;
    if (r->shadow && (uint32_t)pick->sample % 100 < r->shadow_percent) {
        srv_version *v = srv_mm_version(mm, srv_target_version(&mm->conf, &r->shadow_to));
        if (v && v != served && v->state == SRV_STATE_AVAILABLE) {
            atomic_fetch_add(&v->refs, 1);
            pick->shadow = v;
        }
    }
    pick->log = r->logging && (double)(pick->sample >> 32) < r->log_rate * 4294967296.0;
}

rt_status srv_manager_acquire_routed(srv_manager *m, const char *model, int64_t version,
                                     const char *label, srv_pick *pick, srv_version **out,
                                     rt_err *err)
{
    if (!pick)
        return srv_manager_acquire(m, model, version, label, out, err);
    pick->shadow = NULL;
    pick->log = false;
    pthread_mutex_lock(&m->mu);
    rt_status st;
    const mmodel *mm = srv_mm_find(m, model);
    if (mm && mm->conf.rollout.n_split && version < 0 && !(label && label[0]))
        st = resolve_split(mm, pick->draw, out, err);
    else
        st = resolve(m, model, version, label, true, out, err);
    if (st == RT_OK) {
        atomic_fetch_add(&(*out)->refs, 1);
        sample(mm, *out, pick);
    }
    pthread_mutex_unlock(&m->mu);
    return st;
}

rt_status srv_manager_acquire(srv_manager *m, const char *model, int64_t version,
                              const char *label, srv_version **out, rt_err *err)
{
    pthread_mutex_lock(&m->mu);
    rt_status st = resolve(m, model, version, label, true, out, err);
    if (st == RT_OK)
        atomic_fetch_add(&(*out)->refs, 1);
    pthread_mutex_unlock(&m->mu);
    return st;
}

static int put_version_status(rt_buf *out, const srv_version *v, bool first)
{
    const char *code = v->state == SRV_STATE_END && v->err_code != RT_OK ? code_name(v->err_code)
                                                                          : "OK";
    const char *msg = v->state == SRV_STATE_END && v->err_code != RT_OK ? v->error : "";
    int r = rt_buf_printf(out, "%s{\"version\": \"%lld\", \"state\": \"%s\", \"status\": "
                               "{\"error_code\": \"%s\", \"error_message\": ",
                          first ? "" : ", ", (long long)v->version, srv_state_name(v->state),
                          code);
    r |= rt_buf_json_string(out, msg, strlen(msg));
    r |= rt_buf_puts(out, "}}");
    return r;
}

rt_status srv_manager_status_json(srv_manager *m, const char *model, int64_t version,
                                  const char *label, rt_buf *out, rt_err *err)
{
    rt_status st = RT_OK;
    int r = 0;
    pthread_mutex_lock(&m->mu);
    if ((version >= 0) || (label && label[0])) {
        srv_version *v = NULL;
        if ((st = resolve(m, model, version, label, false, &v, err)) != RT_OK)
            goto out;
        r |= rt_buf_puts(out, "{\"model_version_status\": [");
        r |= put_version_status(out, v, true);
        r |= rt_buf_puts(out, "]}");
    } else {
        mmodel *mm = srv_mm_find(m, model);
        if (!mm) {
            st = rt_err_set(err, RT_ERR_NOTFOUND, "model '%s' not found", model);
            goto out;
        }
        r |= rt_buf_puts(out, "{\"model_version_status\": [");
        for (size_t i = mm->n_vers; i > 0; i--)
            r |= put_version_status(out, mm->vers[i - 1], i == mm->n_vers);
        r |= rt_buf_puts(out, "]");
        r |= srv_rollout_json(out, &mm->conf);
        r |= rt_buf_puts(out, "}");
    }
    if (r)
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
out:
    pthread_mutex_unlock(&m->mu);
    return st;
}

rt_status srv_manager_list_json(srv_manager *m, rt_buf *out)
{
    int r = 0;
    pthread_mutex_lock(&m->mu);
    r |= rt_buf_puts(out, "{\"models\": [");
    for (size_t i = 0; i < m->n_models; i++) {
        const mmodel *mm = m->models[i];
        r |= rt_buf_puts(out, i ? ", {\"name\": " : "{\"name\": ");
        r |= rt_buf_json_string(out, mm->conf.name, strlen(mm->conf.name));
        r |= rt_buf_puts(out, ", \"versions\": [");
        for (size_t j = mm->n_vers; j > 0; j--) {
            const srv_version *v = mm->vers[j - 1];
            r |= rt_buf_printf(out, "%s{\"version\": \"%lld\", \"state\": \"%s\"}",
                               j == mm->n_vers ? "" : ", ", (long long)v->version,
                               srv_state_name(v->state));
        }
        r |= rt_buf_puts(out, "], \"labels\": {");
        for (size_t j = 0; j < mm->conf.n_labels; j++) {
            r |= rt_buf_puts(out, j ? ", " : "");
            r |= rt_buf_json_string(out, mm->conf.labels[j].name,
                                    strlen(mm->conf.labels[j].name));
            r |= rt_buf_printf(out, ": \"%lld\"", (long long)mm->conf.labels[j].version);
        }
        r |= rt_buf_puts(out, "}, \"default_version\": ");
        srv_version *dv = NULL;
        if (resolve_mm(mm, -1, NULL, true, &dv, NULL) == RT_OK)
            r |= rt_buf_printf(out, "\"%lld\"", (long long)dv->version);
        else
            r |= rt_buf_puts(out, "null");
        r |= srv_rollout_json(out, &mm->conf);
        r |= rt_buf_puts(out, "}");
    }
    r |= rt_buf_printf(out, "], \"config\": {\"generation\": %llu, \"last_reload\": \"%s\", "
                            "\"last_error\": ",
                       (unsigned long long)m->reload_generation,
                       m->last_reload == 0 ? "none" : m->last_reload > 0 ? "ok" : "refused");
    r |= rt_buf_json_string(out, m->last_error, strlen(m->last_error));
    r |= rt_buf_puts(out, ", \"model_config_file\": ");
    if (m->config_file[0])
        r |= rt_buf_json_string(out, m->config_file, strlen(m->config_file));
    else
        r |= rt_buf_puts(out, "null");
    r |= rt_buf_puts(out, "}}");
    pthread_mutex_unlock(&m->mu);
    return r ? RT_ERR_NOMEM : RT_OK;
}

void srv_manager_note_reload(srv_manager *m, bool ok, const char *msg)
{
    pthread_mutex_lock(&m->mu);
    m->reload_generation++;
    m->last_reload = ok ? 1 : -1;
    snprintf(m->last_error, sizeof m->last_error, "%s", ok || !msg ? "" : msg);
    pthread_mutex_unlock(&m->mu);
}

void srv_manager_set_starting(srv_manager *m, const char *what)
{
    pthread_mutex_lock(&m->mu);
    m->starting = what;
    pthread_mutex_unlock(&m->mu);
}

bool srv_manager_ready(srv_manager *m, char *why, size_t why_len)
{
    bool ready = true;
    size_t counted = 0;
    pthread_mutex_lock(&m->mu);
    if (m->starting) {
        if (why)
            snprintf(why, why_len, "starting: %s is not up yet", m->starting);
        pthread_mutex_unlock(&m->mu);
        return false;
    }
    for (size_t i = 0; i < m->n_models; i++) {
        mmodel *mm = m->models[i];
        srv_version *v = NULL;
        rt_err e = {{0}};
        if (resolve_mm(mm, -1, NULL, true, &v, &e) == RT_OK) {
            mm->required = true; /* it served: from now on readiness waits for it */
            mm->not_serving_logged = false;
            counted++;
        } else if (!mm->required) {
            if (!mm->not_serving_logged)
                srv_log(SRV_LOG_WARN, "model %s: not serving (%s); it was added by a reload "
                                      "and has never served, so readiness does not wait for it",
                        mm->conf.name, e.msg);
            mm->not_serving_logged = true;
        } else if (ready) {
            ready = false;
            if (why)
                snprintf(why, why_len, "model '%s': the default version cannot answer: %s",
                         mm->conf.name, e.msg);
        }
    }
    if (ready && counted == 0) {
        ready = false;
        if (why)
            snprintf(why, why_len, "%s", m->n_models ? "no model is serving"
                                                     : "no model is configured");
    }
    pthread_mutex_unlock(&m->mu);
    return ready;
}

bool srv_manager_has_model(srv_manager *m, const char *model)
{
    pthread_mutex_lock(&m->mu);
    bool r = srv_mm_find(m, model) != NULL;
    pthread_mutex_unlock(&m->mu);
    return r;
}

size_t srv_manager_available(srv_manager *m, const char *model)
{
    size_t n = 0;
    pthread_mutex_lock(&m->mu);
    mmodel *mm = srv_mm_find(m, model);
    for (size_t i = 0; mm && i < mm->n_vers; i++)
        n += mm->vers[i]->state == SRV_STATE_AVAILABLE;
    pthread_mutex_unlock(&m->mu);
    return n;
}

size_t srv_manager_versions(srv_manager *m, const char *model, int64_t *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&m->mu);
    mmodel *mm = srv_mm_find(m, model);
    for (size_t i = 0; mm && i < mm->n_vers; i++) {
        if (mm->vers[i]->state != SRV_STATE_AVAILABLE)
            continue;
        int64_t v = mm->vers[i]->version;
        size_t j = n < max ? n : max;
        for (; j > 0 && out[j - 1] > v; j--)
            if (j < max)
                out[j] = out[j - 1];
        if (j < max)
            out[j] = v;
        n++;
    }
    pthread_mutex_unlock(&m->mu);
    return n;
}

bool srv_manager_log_conf(srv_manager *m, const char *model, char *dir, size_t dir_len,
                          uint64_t *max_bytes, uint32_t *max_files)
{
    pthread_mutex_lock(&m->mu);
    const mmodel *mm = srv_mm_find(m, model);
    const srv_rollout_conf *r = mm ? &mm->conf.rollout : NULL;
    bool on = r && r->logging;
    if (on) {
        snprintf(dir, dir_len, "%s", r->log_dir);
        *max_bytes = r->log_max_bytes;
        *max_files = r->log_max_files;
    }
    pthread_mutex_unlock(&m->mu);
    return on;
}

rt_status srv_manager_metrics(srv_manager *m, rt_buf *out)
{
    int r = 0;
    pthread_mutex_lock(&m->mu);
    r |= rt_buf_puts(out, "# HELP predictd_model_versions Versions of each model by state.\n"
                          "# TYPE predictd_model_versions gauge\n");
    for (size_t i = 0; i < m->n_models; i++) {
        const mmodel *mm = m->models[i];
        size_t by_state[SRV_STATE_END + 1] = {0};
        for (size_t j = 0; j < mm->n_vers; j++)
            by_state[mm->vers[j]->state]++;
        for (int s = SRV_STATE_LOADING; s <= SRV_STATE_END; s++)
            r |= rt_buf_printf(out, "predictd_model_versions{model=\"%s\",state=\"%s\"} %zu\n",
                               mm->conf.name, srv_state_name((srv_state)s), by_state[s]);
    }
    r |= rt_buf_printf(out, "# HELP predictd_base_path_scans_total Scans of a model's base "
                            "path (at start and reload, on an inotify event, at the safety "
                            "rescan, and every poll for base paths that are not watched).\n"
                            "# TYPE predictd_base_path_scans_total counter\n"
                            "predictd_base_path_scans_total %llu\n",
                       (unsigned long long)m->scans);
    r |= rt_buf_puts(out, "# HELP predictd_model_ready 1 when the model's default version "
                          "answers.\n# TYPE predictd_model_ready gauge\n");
    for (size_t i = 0; i < m->n_models; i++) {
        srv_version *v = NULL;
        bool ok = resolve_mm(m->models[i], -1, NULL, true, &v, NULL) == RT_OK;
        r |= rt_buf_printf(out, "predictd_model_ready{model=\"%s\"} %d\n",
                           m->models[i]->conf.name, ok);
    }
    bool help = false;
    for (size_t i = 0; i < m->n_models; i++) {
        const mmodel *mm = m->models[i];
        for (size_t j = 0; j < mm->n_vers; j++) {
            srv_monitor *mon = mm->vers[j]->state == SRV_STATE_AVAILABLE ? mm->vers[j]->monitor
                                                                          : NULL;
            if (!mon)
                continue;
            if (!help)
                r |= srv_monitor_prometheus_help(out);
            help = true;
            r |= srv_monitor_prometheus(mon, out);
        }
    }
    r |= rt_buf_puts(out, "# HELP predictd_version_load_seconds Time to load and warm up "
                          "each AVAILABLE version.\n"
                          "# TYPE predictd_version_load_seconds gauge\n");
    for (size_t i = 0; i < m->n_models; i++) {
        const mmodel *mm = m->models[i];
        for (size_t j = 0; j < mm->n_vers; j++)
            if (mm->vers[j]->state == SRV_STATE_AVAILABLE)
                r |= rt_buf_printf(out,
                                   "predictd_version_load_seconds{model=\"%s\",version=\"%lld\"}"
                                   " %.6f\n",
                                   mm->conf.name, (long long)mm->vers[j]->version,
                                   mm->vers[j]->load_seconds);
    }
    r |= rt_buf_puts(out, "# HELP predictd_traffic_split_percent Configured share of the "
                          "requests naming no version that each split target gets.\n"
                          "# TYPE predictd_traffic_split_percent gauge\n");
    for (size_t i = 0; i < m->n_models; i++)
        r |= srv_rollout_metrics(out, &m->models[i]->conf, false);
    r |= rt_buf_puts(out, "# HELP predictd_shadow_percent Configured share of the requests "
                          "also run on the shadow version.\n"
                          "# TYPE predictd_shadow_percent gauge\n");
    for (size_t i = 0; i < m->n_models; i++)
        r |= srv_rollout_metrics(out, &m->models[i]->conf, true);
    pthread_mutex_unlock(&m->mu);
    return r ? RT_ERR_NOMEM : RT_OK;
}

/* ------------------------------------------------- waking the threads */

void srv_manager_wake(srv_manager *m)
{
    pthread_mutex_lock(&m->mu);
    m->wake = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

void srv_watcher_kick(srv_manager *m)
{
    uint64_t one = 1;
    if (m->watch_efd >= 0 && write(m->watch_efd, &one, sizeof one) < 0) {
        /* the counter is full: the watcher has a wake-up pending anyway */
    }
}
