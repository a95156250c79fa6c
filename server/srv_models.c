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
 * only for lookups and pointer swaps, never while a model loads. Loading,
 * warm-up and directory scans run on the loader thread (srv_manager_start)
 * or the caller of srv_manager_poll, serialised by poll_mu.
 *
 * Besides polling, a watcher thread listens to inotify events on the base
 * paths (a version renamed in or removed) and wakes the loader at once, so a
 * new export is usually served within milliseconds; the poll remains the
 * safety net (NFS, files changed inside a version directory).
 *
 * A version whose load or warm-up fails becomes END with its error, and is
 * retried only when its files change (a signature of inode, size and mtime
 * of the directory, model.pb, variables.bin, assets/ and the warm-up file).
 * Policies choose among the versions that are not refused, and old versions
 * are unloaded only after new ones are AVAILABLE, so a broken export never
 * takes down the version that serves.
 */
#include "srv.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WARMUP_FILE "assets.extra/warmup.json"
#define WARMUP_MAX_BYTES (64u << 20)
#define MAX_VERSIONS_SCANNED 100000

struct srv_version {
    atomic_int refs;
    int64_t version;
    srv_state state;          /* guarded by the manager's mutex */
    rt_status err_code;       /* END after a failure: why */
    char error[RT_ERR_MAX];
    uint64_t sig;             /* files' signature when loading was tried */
    rt_model *model;          /* set once AVAILABLE; closed on the last release */
    double load_seconds;
};

typedef struct mmodel {
    srv_model_conf conf; /* deep copy */
    srv_version **vers;  /* ascending by version */
    size_t n_vers, cap;
    char scan_error[RT_ERR_MAX]; /* last base path error, logged once */
} mmodel;

struct srv_manager {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    mmodel **models;
    size_t n_models;
    bool stop, wake, started;
    int poll_seconds;
    pthread_t thread;
    pthread_t watcher;       /* inotify on the base paths */
    bool watcher_started;
    pthread_mutex_t poll_mu; /* one poll at a time; guards warm_ctx */
    rt_ctx *warm_ctx;
    uint64_t reload_generation; /* reload attempts */
    int last_reload;            /* 0 none, 1 ok, -1 refused */
    char last_error[RT_ERR_MAX];
};

typedef struct found {
    int64_t version;
    uint64_t sig;
} found;

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

static char *dup_str(const char *s)
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
    rt_model_close(v->model);
    free(v);
}

void srv_version_release(srv_version *v)
{
    if (v && atomic_fetch_sub(&v->refs, 1) == 1)
        version_free(v);
}

const rt_model *srv_version_model(const srv_version *v)
{
    return v->model;
}

int64_t srv_version_number(const srv_version *v)
{
    return v->version;
}

static void conf_clear(srv_model_conf *c)
{
    free(c->name);
    free(c->base_path);
    free(c->specific);
    for (size_t i = 0; i < c->n_labels; i++)
        free(c->labels[i].name);
    free(c->labels);
    free(c->default_label);
    memset(c, 0, sizeof *c);
}

static bool conf_copy(srv_model_conf *d, const srv_model_conf *s)
{
    memset(d, 0, sizeof *d);
    d->policy = s->policy;
    d->latest_n = s->latest_n;
    d->default_version = s->default_version;
    d->name = dup_str(s->name);
    d->base_path = dup_str(s->base_path);
    if (!d->name || !d->base_path)
        goto fail;
    if (s->default_label && !(d->default_label = dup_str(s->default_label)))
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
            if (!(d->labels[i].name = dup_str(s->labels[i].name)))
                goto fail;
            d->n_labels = i + 1;
        }
    }
    return true;
fail:
    conf_clear(d);
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
    conf_clear(&mm->conf);
    free(mm);
}

static mmodel *find_model(const srv_manager *m, const char *name)
{
    for (size_t i = 0; i < m->n_models; i++)
        if (!strcmp(m->models[i]->conf.name, name))
            return m->models[i];
    return NULL;
}

static srv_version *find_rec(const mmodel *mm, int64_t version)
{
    for (size_t i = 0; i < mm->n_vers; i++)
        if (mm->vers[i]->version == version)
            return mm->vers[i];
    return NULL;
}

static bool rec_insert(mmodel *mm, srv_version *v)
{
    if (mm->n_vers == mm->cap) {
        size_t cap = mm->cap ? mm->cap * 2 : 4;
        srv_version **p = realloc(mm->vers, cap * sizeof *p);
        if (!p)
            return false;
        mm->vers = p;
        mm->cap = cap;
    }
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
static bool rec_remove(mmodel *mm, srv_version *v)
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
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->poll_mu, NULL);
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
        pthread_join(m->thread, NULL);
        if (m->watcher_started)
            pthread_join(m->watcher, NULL);
    }
    for (size_t i = 0; i < m->n_models; i++)
        mmodel_free(m->models[i]);
    free(m->models);
    rt_ctx_free(m->warm_ctx);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->poll_mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

static rt_status check_locked(srv_manager *m, const srv_config *c, rt_err *err)
{
    for (size_t i = 0; i < c->n_models; i++) {
        const srv_model_conf *nc = &c->models[i];
        mmodel *mm = find_model(m, nc->name);
        if (!mm)
            continue; /* a new model may name versions that are not loaded yet */
        for (size_t j = 0; j < nc->n_labels; j++) {
            const srv_label *old = find_label(&mm->conf, nc->labels[j].name);
            if (old && old->version == nc->labels[j].version)
                continue; /* unchanged */
            srv_version *v = find_rec(mm, nc->labels[j].version);
            if (!v || v->state != SRV_STATE_AVAILABLE)
                return rt_err_set(err, RT_ERR_INVALID,
                                  "models[%zu].version_labels.%s: version %lld of model '%s' "
                                  "is not AVAILABLE (%s); a label may only point at an "
                                  "AVAILABLE version",
                                  i, nc->labels[j].name, (long long)nc->labels[j].version,
                                  nc->name, v ? srv_state_name(v->state) : "not loaded");
        }
    }
    return RT_OK;
}

rt_status srv_manager_check(srv_manager *m, const srv_config *c, rt_err *err)
{
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
    mmodel **gone = NULL;
    size_t n_gone = 0;
    if (!next || !confs) {
        st = rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
        goto out;
    }
    /* Copies first, so nothing can fail half-way through the switch. */
    for (size_t i = 0; i < c->n_models; i++)
        if (!conf_copy(&confs[i], &c->models[i])) {
            for (size_t j = 0; j < i; j++)
                conf_clear(&confs[j]);
            st = rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
            goto out;
        }
    pthread_mutex_lock(&m->mu);
    if ((st = check_locked(m, c, err)) != RT_OK) {
        pthread_mutex_unlock(&m->mu);
        for (size_t i = 0; i < c->n_models; i++)
            conf_clear(&confs[i]);
        goto out;
    }
    gone = calloc(m->n_models ? m->n_models : 1, sizeof *gone);
    mmodel **fresh = calloc(c->n_models ? c->n_models : 1, sizeof *fresh);
    bool ok = gone && fresh;
    for (size_t i = 0; ok && i < c->n_models; i++)
        if (!find_model(m, confs[i].name))
            ok = (fresh[i] = calloc(1, sizeof **fresh)) != NULL;
    if (!ok) {
        pthread_mutex_unlock(&m->mu);
        for (size_t i = 0; i < c->n_models; i++) {
            free(fresh ? fresh[i] : NULL);
            conf_clear(&confs[i]);
        }
        free(fresh);
        st = rt_err_set(err, RT_ERR_NOMEM, "model manager: out of memory");
        goto out;
    }
    for (size_t i = 0; i < c->n_models; i++) {
        mmodel *mm = find_model(m, confs[i].name);
        if (mm) {
            conf_clear(&mm->conf);
        } else {
            mm = fresh[i];
            srv_log(SRV_LOG_INFO, "model %s: added (base path %s)", confs[i].name,
                    confs[i].base_path);
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
    next = NULL;
    m->wake = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < n_gone; i++) {
        srv_log(SRV_LOG_INFO, "model %s: removed from the config; unloading its versions",
                gone[i]->conf.name);
        mmodel_free(gone[i]); /* requests in flight keep their versions alive */
    }
out:
    free(gone);
    free(next);
    free(confs);
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
    srv_version *v = find_rec(mm, l->version);
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
static rt_status resolve(srv_manager *m, const char *model, int64_t version, const char *label,
                         bool require_available, srv_version **out, rt_err *err)
{
    mmodel *mm = find_model(m, model);
    *out = NULL;
    if (!mm)
        return rt_err_set(err, RT_ERR_NOTFOUND, "model '%s' not found", model);
    if (label && label[0]) {
        const srv_label *l = find_label(&mm->conf, label);
        if (!l)
            return rt_err_set(err, RT_ERR_INVALID, "model '%s' has no version label '%s'",
                              model, label);
        if (!require_available) {
            srv_version *v = find_rec(mm, l->version);
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
        srv_version *v = find_rec(mm, version);
        if (!v || (require_available && v->state != SRV_STATE_AVAILABLE))
            return rt_err_set(err, RT_ERR_NOTFOUND,
                              "version %lld of model '%s' is not available (%s)",
                              (long long)version, model,
                              v ? srv_state_name(v->state) : "no such version");
        *out = v;
        return RT_OK;
    }
    /* The default version. */
    if (mm->conf.default_label)
        return resolve_label(mm, mm->conf.default_label, RT_ERR_UNSUPPORTED, out, err);
    if (mm->conf.default_version >= 0) {
        srv_version *v = find_rec(mm, mm->conf.default_version);
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
        mmodel *mm = find_model(m, model);
        if (!mm) {
            st = rt_err_set(err, RT_ERR_NOTFOUND, "model '%s' not found", model);
            goto out;
        }
        r |= rt_buf_puts(out, "{\"model_version_status\": [");
        for (size_t i = mm->n_vers; i > 0; i--)
            r |= put_version_status(out, mm->vers[i - 1], i == mm->n_vers);
        r |= rt_buf_puts(out, "]}");
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
        if (resolve(m, mm->conf.name, -1, NULL, true, &dv, NULL) == RT_OK)
            r |= rt_buf_printf(out, "\"%lld\"}", (long long)dv->version);
        else
            r |= rt_buf_puts(out, "null}");
    }
    r |= rt_buf_printf(out, "], \"config\": {\"generation\": %llu, \"last_reload\": \"%s\", "
                            "\"last_error\": ",
                       (unsigned long long)m->reload_generation,
                       m->last_reload == 0 ? "none" : m->last_reload > 0 ? "ok" : "refused");
    r |= rt_buf_json_string(out, m->last_error, strlen(m->last_error));
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

bool srv_manager_ready(srv_manager *m, char *why, size_t why_len)
{
    bool ready = true;
    pthread_mutex_lock(&m->mu);
    if (m->n_models == 0) {
        ready = false;
        if (why)
            snprintf(why, why_len, "no model is configured");
    }
    for (size_t i = 0; ready && i < m->n_models; i++)
        if (!newest_available(m->models[i])) {
            ready = false;
            if (why)
                snprintf(why, why_len, "model '%s' has no AVAILABLE version",
                         m->models[i]->conf.name);
        }
    pthread_mutex_unlock(&m->mu);
    return ready;
}

bool srv_manager_has_model(srv_manager *m, const char *model)
{
    pthread_mutex_lock(&m->mu);
    bool r = find_model(m, model) != NULL;
    pthread_mutex_unlock(&m->mu);
    return r;
}

size_t srv_manager_available(srv_manager *m, const char *model)
{
    size_t n = 0;
    pthread_mutex_lock(&m->mu);
    mmodel *mm = find_model(m, model);
    for (size_t i = 0; mm && i < mm->n_vers; i++)
        n += mm->vers[i]->state == SRV_STATE_AVAILABLE;
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* ------------------------------------------------------------ loading */

/* Mixes the identity and times of path into *h; missing files count too. */
static void sig_add(uint64_t *h, const char *dir, const char *rel)
{
    char path[4096];
    struct stat sb;
    uint64_t parts[6] = {0};
    snprintf(path, sizeof path, "%s%s%s", dir, rel[0] ? "/" : "", rel);
    if (stat(path, &sb) == 0) {
        parts[0] = (uint64_t)sb.st_dev;
        parts[1] = (uint64_t)sb.st_ino;
        parts[2] = (uint64_t)sb.st_size;
        parts[3] = (uint64_t)sb.st_mtim.tv_sec;
        parts[4] = (uint64_t)sb.st_mtim.tv_nsec;
        parts[5] = (uint64_t)sb.st_ctim.tv_nsec;
    }
    *h = rt_fingerprint_cat64(*h, rt_fingerprint64(parts, sizeof parts));
}

static uint64_t dir_signature(const char *dir)
{
    uint64_t h = 1;
    sig_add(&h, dir, "");
    sig_add(&h, dir, "model.pb");
    sig_add(&h, dir, "variables.bin");
    sig_add(&h, dir, "assets");
    sig_add(&h, dir, WARMUP_FILE);
    return h;
}

/* Integer-named directories of base_path. OUT: *fs malloc'd. */
static rt_status scan_base(const char *base, found **fs, size_t *n, rt_err *err)
{
    *fs = NULL;
    *n = 0;
    DIR *d = opendir(base);
    if (!d)
        return rt_err_set(err, RT_ERR_IO, "base path %s: %s", base, strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    rt_status st = RT_OK;
    while ((e = readdir(d)) != NULL) {
        int64_t v = srv_parse_version(e->d_name, strlen(e->d_name));
        if (v < 0)
            continue; /* temporary and other non-integer names are ignored */
        char path[4096];
        struct stat sb;
        int pn = snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        if (pn < 0 || (size_t)pn >= sizeof path || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        if (*n == cap) {
            if (cap >= MAX_VERSIONS_SCANNED) {
                st = rt_err_set(err, RT_ERR_LIMIT, "base path %s: more than %d versions", base,
                                MAX_VERSIONS_SCANNED);
                break;
            }
            cap = cap ? cap * 2 : 16;
            found *p = realloc(*fs, cap * sizeof *p);
            if (!p) {
                st = rt_err_set(err, RT_ERR_NOMEM, "base path %s: out of memory", base);
                break;
            }
            *fs = p;
        }
        (*fs)[*n].version = v;
        (*fs)[*n].sig = dir_signature(path);
        (*n)++;
    }
    closedir(d);
    return st;
}

/* Runs the requests of assets.extra/warmup.json: an array of request bodies
 * (predict) or of {"method": "predict|classify|regress", "body": {...}}. */
static rt_status warmup_file(const rt_model *model, const char *path, rt_ctx *ctx, rt_err *err)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    rt_buf out;
    rt_buf_init(&out);
    rt_json_params jp = rt_json_default_params();
    rt_status st = rt_read_file(AT_FDCWD, path, WARMUP_MAX_BYTES, 0, &text, &len, err);
    if (st != RT_OK)
        goto out;
    root = cJSON_ParseWithLength(text, len);
    if (!root || !(cJSON_IsArray(root) || cJSON_IsObject(root))) {
        st = rt_err_set(err, RT_ERR_FORMAT, "not a JSON array or object of requests");
        goto out;
    }
    size_t n = cJSON_IsArray(root) ? (size_t)cJSON_GetArraySize(root) : 1;
    for (size_t i = 0; i < n; i++) {
        const cJSON *req = cJSON_IsArray(root) ? cJSON_GetArrayItem(root, (int)i) : root;
        const cJSON *body = req;
        rt_method method = RT_METHOD_PREDICT;
        const cJSON *jm = cJSON_GetObjectItemCaseSensitive(req, "method");
        if (jm) {
            const char *s = cJSON_GetStringValue(jm);
            if (s && !strcmp(s, "classify"))
                method = RT_METHOD_CLASSIFY;
            else if (s && !strcmp(s, "regress"))
                method = RT_METHOD_REGRESS;
            else if (!s || strcmp(s, "predict") != 0) {
                st = rt_err_set(err, RT_ERR_FORMAT,
                                "request %zu: method must be predict, classify or regress", i);
                goto out;
            }
            body = cJSON_GetObjectItemCaseSensitive(req, "body");
        }
        char *txt = body ? cJSON_PrintUnformatted(body) : NULL;
        if (!txt) {
            st = rt_err_set(err, RT_ERR_FORMAT, "request %zu: no body", i);
            goto out;
        }
        rt_buf_reset(&out);
        st = rt_json_handle(model, method, txt, strlen(txt), &jp, ctx, &out, err);
        cJSON_free(txt);
        if (st != RT_OK) {
            rt_err_prefix(err, "request %zu", i);
            goto out;
        }
    }
out:
    if (st != RT_OK)
        rt_err_prefix(err, "%s", WARMUP_FILE);
    cJSON_Delete(root);
    free(text);
    rt_buf_free(&out);
    return st;
}

/* One dummy prediction: every raw input at its default value. */
static rt_status warmup_dummy(const rt_model *model, rt_ctx *ctx, rt_err *err)
{
    const Predictd__ModelDef *def = rt_model_def(model);
    if (def && def->receiver != PREDICTD__RECEIVER__RECEIVER_JSON)
        return RT_OK; /* CSV / tf.Example receivers: nothing generic to send */
    const rt_graph *g = rt_model_graph(model);
    rt_buf body, out;
    rt_buf_init(&body);
    rt_buf_init(&out);
    int r = rt_buf_puts(&body, "{\"instances\": [{");
    size_t n = rt_graph_num_inputs(g);
    for (size_t i = 0; i < n; i++) {
        const char *name = rt_graph_input_name(g, i);
        const Predictd__RawColumn *rc = NULL;
        for (size_t k = 0; def && k < def->n_raw_columns; k++)
            if (!strcmp(def->raw_columns[k]->name, name))
                rc = def->raw_columns[k];
        r |= rt_buf_puts(&body, i ? ", " : "");
        r |= rt_buf_json_string(&body, name, strlen(name));
        r |= rt_buf_puts(&body, ": ");
        if (rt_graph_input_dtype(g, i) == PREDICTD__DTYPE__DT_STRING) {
            const char *s = rc && rc->default_string ? rc->default_string : "";
            r |= rt_buf_json_string(&body, s, strlen(s));
        } else {
            r |= rt_buf_json_double(&body, rc ? rc->default_number : 0.0);
        }
    }
    r |= rt_buf_puts(&body, "}]}");
    rt_status st;
    if (r) {
        st = rt_err_set(err, RT_ERR_NOMEM, "warm-up: out of memory");
    } else {
        rt_json_params jp = rt_json_default_params();
        st = rt_json_handle(model, RT_METHOD_PREDICT, body.data, body.len, &jp, ctx, &out, err);
        if (st != RT_OK)
            rt_err_prefix(err, "warm-up prediction");
    }
    rt_buf_free(&body);
    rt_buf_free(&out);
    return st;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Loads one version off the request path and publishes it. poll_mu held. */
static void load_one(srv_manager *m, const char *name, const char *base, int64_t version,
                     uint64_t sig)
{
    srv_version *old = NULL;
    srv_version *v = calloc(1, sizeof *v);
    if (!v) {
        srv_log(SRV_LOG_ERROR, "model %s version %lld: out of memory", name, (long long)version);
        return;
    }
    atomic_init(&v->refs, 2); /* the list's and ours */
    v->version = version;
    v->state = SRV_STATE_LOADING;
    v->sig = sig;
    pthread_mutex_lock(&m->mu);
    mmodel *mm = find_model(m, name);
    if (mm && (old = find_rec(mm, version)) != NULL)
        rec_remove(mm, old); /* a refused record being retried */
    bool inserted = mm && rec_insert(mm, v);
    pthread_mutex_unlock(&m->mu);
    srv_version_release(old);
    if (!inserted) {
        free(v);
        return;
    }

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%lld", base, (long long)version);
    srv_log(SRV_LOG_INFO, "model %s version %lld: LOADING from %s", name, (long long)version,
            dir);
    double t0 = now_seconds();
    rt_err err = {{0}};
    rt_model *model = NULL;
    rt_status st = rt_model_open(dir, &model, &err);
    if (st == RT_OK) {
        if (!m->warm_ctx)
            m->warm_ctx = rt_ctx_new();
        char wpath[4200];
        struct stat sb;
        snprintf(wpath, sizeof wpath, "%s/%s", dir, WARMUP_FILE);
        if (!m->warm_ctx) {
            st = rt_err_set(&err, RT_ERR_NOMEM, "warm-up: out of memory");
        } else if (stat(wpath, &sb) == 0) {
            st = warmup_file(model, wpath, m->warm_ctx, &err);
        } else {
            rt_err derr = {{0}};
            rt_status ds = warmup_dummy(model, m->warm_ctx, &derr);
            if (ds == RT_ERR_INVALID || ds == RT_ERR_LIMIT)
                srv_log(SRV_LOG_WARN, "model %s version %lld: %s (serving it anyway)", name,
                        (long long)version, derr.msg);
            else if (ds != RT_OK) {
                st = ds;
                err = derr;
            }
        }
    }
    double secs = now_seconds() - t0;

    pthread_mutex_lock(&m->mu);
    mm = find_model(m, name);
    bool listed = false;
    for (size_t i = 0; mm && i < mm->n_vers; i++)
        listed = listed || mm->vers[i] == v;
    v->load_seconds = secs;
    if (st == RT_OK) {
        v->model = model; /* freed with v from now on */
        model = NULL;
        v->state = listed ? SRV_STATE_AVAILABLE : SRV_STATE_END;
    } else {
        v->state = SRV_STATE_END;
        v->err_code = st;
        memcpy(v->error, err.msg, sizeof v->error);
        v->error[sizeof v->error - 1] = '\0';
    }
    pthread_mutex_unlock(&m->mu);
    rt_model_close(model);
    if (st == RT_OK && listed)
        srv_log(SRV_LOG_INFO, "model %s version %lld: AVAILABLE (loaded and warmed up in %.3f s)",
                name, (long long)version, secs);
    else if (st != RT_OK)
        srv_log(SRV_LOG_ERROR,
                "model %s version %lld: refused, state END: %s (retried when its files change)",
                name, (long long)version, err.msg);
    srv_version_release(v);
}

static int cmp_found_desc(const void *a, const void *b)
{
    int64_t x = ((const found *)a)->version, y = ((const found *)b)->version;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Marks fs[i].version aspired (want[i]) per the policy, among the versions
 * not refused. fs is sorted newest first. Locked (reads records). */
static void choose(const mmodel *mm, const found *fs, size_t n, bool *want)
{
    uint32_t taken = 0;
    for (size_t i = 0; i < n; i++) {
        want[i] = false;
        const srv_version *v = find_rec(mm, fs[i].version);
        bool refused = v && v->state == SRV_STATE_END && v->err_code != RT_OK &&
                       v->sig == fs[i].sig;
        if (refused)
            continue;
        switch (mm->conf.policy) {
        case SRV_POLICY_LATEST:
            if (taken < mm->conf.latest_n) {
                want[i] = true;
                taken++;
            }
            break;
        case SRV_POLICY_ALL:
            want[i] = true;
            break;
        case SRV_POLICY_SPECIFIC:
            for (size_t k = 0; k < mm->conf.n_specific; k++)
                want[i] = want[i] || mm->conf.specific[k] == fs[i].version;
            break;
        }
    }
}

static void poll_model(srv_manager *m, const char *name)
{
    found *fs = NULL;
    size_t n = 0;
    bool *want = NULL;
    srv_version **drop = NULL;
    size_t n_drop = 0;
    char *base = NULL;
    rt_err err = {{0}};

    pthread_mutex_lock(&m->mu);
    mmodel *mm = find_model(m, name);
    if (mm)
        base = dup_str(mm->conf.base_path);
    pthread_mutex_unlock(&m->mu);
    if (!base)
        return;

    rt_status st = scan_base(base, &fs, &n, &err);
    pthread_mutex_lock(&m->mu);
    mm = find_model(m, name);
    if (mm && st != RT_OK && strcmp(mm->scan_error, err.msg) != 0) {
        snprintf(mm->scan_error, sizeof mm->scan_error, "%s", err.msg);
        srv_log(SRV_LOG_WARN, "model %s: %s", name, err.msg);
    } else if (mm && st == RT_OK) {
        mm->scan_error[0] = '\0';
    }
    pthread_mutex_unlock(&m->mu);
    if (st != RT_OK && st != RT_ERR_IO)
        goto out; /* partial listing: change nothing */
    if (n)
        qsort(fs, n, sizeof *fs, cmp_found_desc);
    want = calloc(n ? n : 1, sizeof *want);
    if (!want)
        goto out;

    /* 1. Load what the policy wants and is not loaded (newest first). */
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&m->mu);
        mm = find_model(m, name);
        bool load = false;
        if (mm) {
            choose(mm, fs, n, want);
            const srv_version *v = find_rec(mm, fs[i].version);
            load = want[i] && (!v || v->state == SRV_STATE_END);
        }
        pthread_mutex_unlock(&m->mu);
        if (!mm)
            goto out;
        if (load)
            load_one(m, name, base, fs[i].version, fs[i].sig);
    }

    /* 2. Unload what is no longer wanted or whose directory vanished; only
     * now, so a new version is AVAILABLE before the old one goes. */
    pthread_mutex_lock(&m->mu);
    mm = find_model(m, name);
    if (mm) {
        choose(mm, fs, n, want);
        drop = calloc(mm->n_vers ? mm->n_vers : 1, sizeof *drop);
        for (size_t i = 0; drop && i < mm->n_vers;) {
            srv_version *v = mm->vers[i];
            long at = -1;
            for (size_t k = 0; k < n; k++)
                if (fs[k].version == v->version)
                    at = (long)k;
            bool keep;
            if (v->state == SRV_STATE_LOADING)
                keep = true;
            else if (v->state == SRV_STATE_END)
                keep = at >= 0; /* refused: reported while its directory exists */
            else
                keep = at >= 0 && want[at];
            if (keep) {
                i++;
                continue;
            }
            if (v->state == SRV_STATE_AVAILABLE) {
                srv_log(SRV_LOG_INFO, "model %s version %lld: UNLOADING (%s)", name,
                        (long long)v->version,
                        at < 0 ? "its directory is gone" : "not wanted by the version policy");
                v->state = SRV_STATE_UNLOADING;
            }
            rec_remove(mm, v);
            drop[n_drop++] = v;
        }
    }
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < n_drop; i++) {
        /* Freed now, or when the last request holding it finishes. */
        if (drop[i]->state == SRV_STATE_UNLOADING)
            srv_log(SRV_LOG_INFO, "model %s version %lld: END (unloaded)", name,
                    (long long)drop[i]->version);
        pthread_mutex_lock(&m->mu);
        drop[i]->state = SRV_STATE_END;
        pthread_mutex_unlock(&m->mu);
        srv_version_release(drop[i]);
    }
out:
    free(drop);
    free(want);
    free(fs);
    free(base);
}

void srv_manager_poll(srv_manager *m)
{
    pthread_mutex_lock(&m->poll_mu);
    pthread_mutex_lock(&m->mu);
    size_t n = m->n_models;
    char **names = calloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; names && i < n; i++)
        names[i] = dup_str(m->models[i]->conf.name);
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; names && i < n; i++) {
        if (names[i])
            poll_model(m, names[i]);
        free(names[i]);
    }
    free(names);
    pthread_mutex_unlock(&m->poll_mu);
}

static void *loader_main(void *arg)
{
    srv_manager *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        m->wake = false;
        pthread_mutex_unlock(&m->mu);
        srv_manager_poll(m);
        pthread_mutex_lock(&m->mu);
        if (m->stop || m->wake)
            continue;
        if (m->poll_seconds > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += m->poll_seconds;
            while (!m->stop && !m->wake &&
                   pthread_cond_timedwait(&m->cv, &m->mu, &ts) != ETIMEDOUT) {
            }
        } else {
            while (!m->stop && !m->wake)
                pthread_cond_wait(&m->cv, &m->mu);
        }
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* Watches the base paths with inotify and wakes the loader on any change
 * of their entries. Re-reads the set of base paths every half second (a
 * reload may change it; a missing base path is retried). */
static void *watcher_main(void *arg)
{
    srv_manager *m = arg;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
        srv_log(SRV_LOG_WARN, "inotify: %s; relying on polling", strerror(errno));
        return NULL;
    }
    enum { MAX_WATCH = 256 };
    char *paths[MAX_WATCH];
    int wds[MAX_WATCH];
    size_t n = 0;
    for (;;) {
        /* The current base paths, once per round. */
        char *want[MAX_WATCH];
        size_t nw = 0;
        pthread_mutex_lock(&m->mu);
        bool stop = m->stop;
        for (size_t i = 0; i < m->n_models && nw < MAX_WATCH; i++)
            if ((want[nw] = dup_str(m->models[i]->conf.base_path)) != NULL)
                nw++;
        pthread_mutex_unlock(&m->mu);
        if (stop) {
            for (size_t i = 0; i < nw; i++)
                free(want[i]);
            break;
        }
        bool same = nw == n;
        for (size_t i = 0; same && i < n; i++)
            same = !strcmp(want[i], paths[i]) && wds[i] >= 0;
        if (same) {
            for (size_t i = 0; i < nw; i++)
                free(want[i]);
        } else {
            for (size_t i = 0; i < n; i++) {
                if (wds[i] >= 0)
                    inotify_rm_watch(fd, wds[i]);
                free(paths[i]);
            }
            for (size_t i = 0; i < nw; i++) {
                paths[i] = want[i];
                wds[i] = inotify_add_watch(fd, want[i],
                                           IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                                               IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
            }
            n = nw;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 500) > 0) {
            char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
            while (read(fd, buf, sizeof buf) > 0) {
            }
            pthread_mutex_lock(&m->mu);
            m->wake = true;
            pthread_cond_broadcast(&m->cv);
            pthread_mutex_unlock(&m->mu);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    close(fd);
    return NULL;
}

void srv_manager_set_poll(srv_manager *m, int poll_seconds)
{
    pthread_mutex_lock(&m->mu);
    m->poll_seconds = poll_seconds;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

rt_status srv_manager_start(srv_manager *m, int poll_seconds, rt_err *err)
{
    if (m->started)
        return RT_OK;
    m->poll_seconds = poll_seconds;
    int e = pthread_create(&m->thread, NULL, loader_main, m);
    if (e != 0)
        return rt_err_set(err, RT_ERR_IO, "loader thread: %s", strerror(e));
    m->started = true;
    if (poll_seconds > 0)
        m->watcher_started = pthread_create(&m->watcher, NULL, watcher_main, m) == 0;
    return RT_OK;
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
    pthread_mutex_unlock(&m->mu);
    return r ? RT_ERR_NOMEM : RT_OK;
}
