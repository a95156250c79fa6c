/*
 * srv_loader.c — the model manager's loader: scans each base path for
 * version directories, loads and warms up what the version policy (and the
 * versions labels pin) want, unloads the rest. What it scans: every model
 * at start, reload, SIGHUP and lost events; the models the watcher
 * (srv_watch.c) marked dirty at once; at each tick of poll_seconds the
 * models whose base path is not watched, those holding a refused version,
 * and the next SRV_SAFETY_SCANS_PER_TICK models in turn (a safety net for what
 * inotify does not report). So the idle cost does not grow with the number
 * of models.
 *
 * Scans, loads and warm-ups run on the loader thread (srv_manager_start) or
 * the caller of srv_manager_poll, serialised by poll_mu, never under the
 * manager's mutex: it is taken per version for lookups and pointer swaps
 * only, so requests are answered while 10,000 directories are scanned. A
 * scan is linear in the directories (sorted once, records found by binary
 * search) and checks the stop flag between versions, so SIGTERM is prompt.
 *
 * A base path that cannot be read (moved away, EACCES, EIO) changes
 * nothing: what is loaded keeps serving (as TF Serving does), the error is
 * logged once with its errno, and scanning resumes when it is back. Only
 * canonical integer names are versions (rt_model_version_parse: no sign, no
 * leading zero, no spaces, within int64); other names are ignored with one
 * log line per new name set, hidden names (.tmp-*) silently.
 *
 * A version whose load or warm-up fails becomes END with its error, and is
 * retried only when its files change (a signature of inode, size and mtime
 * of the directory, model.pb, variables.bin, assets/ and the warm-up file).
 * Policies choose among the versions that are not refused, and old versions
 * are unloaded only after new ones are AVAILABLE, so a broken export never
 * takes down the version that serves. A served version's files changed on
 * disk change nothing (its tensors were read into memory at load): a
 * warning is logged once per change.
 */
#include "srv_models_internal.h"
#include "srv_limits.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WARMUP_FILE "assets.extra/warmup.json"
#define NAMES_QUOTED 5 /* names quoted in one log line or hint */

typedef struct found {
    int64_t version;
    uint64_t sig;
} found;

/* What one scan of a base path saw. */
typedef struct scan {
    found *fs; /* canonical integer directories */
    size_t n, cap;
    char **odd; /* other names, not hidden: ignored */
    size_t n_odd, cap_odd;
} scan;

static void scan_free(scan *s)
{
    for (size_t i = 0; i < s->n_odd; i++)
        free(s->odd[i]);
    free(s->odd);
    free(s->fs);
    memset(s, 0, sizeof *s);
}

static bool add_odd(scan *s, const char *name, bool dir)
{
    if (rt_grow(&s->odd, &s->cap_odd, s->n_odd + 1, sizeof *s->odd) != 0)
        return false;
    size_t n = strlen(name);
    char *c = malloc(n + 2);
    if (!c)
        return false;
    memcpy(c, name, n);
    c[n] = dir ? '/' : '\0';
    c[n + 1] = '\0';
    s->odd[s->n_odd++] = c;
    return true;
}

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
    *h = rt_hash_fingerprint_cat64(*h, rt_hash_fingerprint64(parts, sizeof parts));
}

static uint64_t dir_signature(const char *dir)
{
    uint64_t h = 1;
    sig_add(&h, dir, "");
    sig_add(&h, dir, "model.pb");
    sig_add(&h, dir, "variables.bin");
    sig_add(&h, dir, "model.json");   /* an XGBoost model (rt_model_open) */
    sig_add(&h, dir, "model.ubj");
    sig_add(&h, dir, "model.onnx");   /* an ONNX model */
    sig_add(&h, dir, "serving.json");
    sig_add(&h, dir, "assets");
    sig_add(&h, dir, WARMUP_FILE);
    return h;
}

/* Reads base: canonical integer-named directories into s->fs (with their
 * signatures), other names (not hidden) into s->odd. Any error (the
 * directory cannot be opened or read, too many versions, no memory) is
 * returned with errno's text: the caller then changes nothing. */
static rt_status scan_base(const char *base, scan *s, rt_err *err)
{
    DIR *d = opendir(base);
    if (!d) {
        int e = errno;
        return rt_err_set(err, RT_ERR_IO, "base path %s cannot be read: %s (errno %d)", base,
                          strerror(e), e);
    }
    struct dirent *e;
    rt_status st = RT_OK;
    for (;;) {
        errno = 0;
        if (!(e = readdir(d))) {
            if (errno) {
                int en = errno;
                st = rt_err_set(err, RT_ERR_IO, "base path %s: readdir: %s (errno %d)", base,
                                strerror(en), en);
            }
            break;
        }
        if (e->d_name[0] == '.')
            continue; /* ".", "..", the exporter's .tmp-* and other hidden names */
        char path[4096];
        struct stat sb;
        int pn = snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        bool dir = pn > 0 && (size_t)pn < sizeof path && stat(path, &sb) == 0 &&
                   S_ISDIR(sb.st_mode);
        int64_t v = -1;
        if (!dir || !rt_model_version_parse(e->d_name, &v)) {
            if (!add_odd(s, e->d_name, dir)) {
                st = rt_err_set(err, RT_ERR_NOMEM, "base path %s: out of memory", base);
                break;
            }
            continue;
        }
        if (s->n == s->cap) {
            if (s->cap >= SRV_MAX_VERSIONS_SCANNED) {
                st = rt_err_set(err, RT_ERR_LIMIT, "base path %s: more than %d versions", base,
                                SRV_MAX_VERSIONS_SCANNED);
                break;
            }
            if (rt_grow(&s->fs, &s->cap, s->n + 1, sizeof *s->fs) != 0) {
                st = rt_err_set(err, RT_ERR_NOMEM, "base path %s: out of memory", base);
                break;
            }
        }
        s->fs[s->n].version = v;
        s->fs[s->n].sig = dir_signature(path);
        s->n++;
    }
    closedir(d);
    return st;
}

/* A version-named directory somewhere in dir (the first of at most 4096
 * entries), for the hint: -1 if none. */
static int64_t first_version_in(const char *dir)
{
    DIR *d = opendir(dir);
    int64_t found_v = -1, v;
    struct dirent *e;
    for (int i = 0; d && i < 4096 && found_v < 0 && (e = readdir(d)) != NULL; i++)
        if (rt_model_version_parse(e->d_name, &v))
            found_v = v;
    if (d)
        closedir(d);
    return found_v;
}

/* TF Serving's hint for a base path without versions, with what is there:
 * a version directory given as the base path, a directory one level up,
 * or the names found. Cut to cap bytes. */
static void make_hint(const char *base, const scan *s, char *out, size_t cap)
{
    char path[4200];
    struct stat sb;
    rt_buf b;
    rt_buf_init(&b);
    int r = rt_buf_printf(&b, "no versions found under base path %s (version directories are "
                              "named by integers, e.g. %s/1700000000/model.pb)", base, base);
    snprintf(path, sizeof path, "%s/model.pb", base);
    if (stat(path, &sb) == 0) {
        r |= rt_buf_puts(&b, "; it holds model.pb itself: it is a version directory, give its "
                             "parent as the base path");
    } else if (snprintf(path, sizeof path, "%s/saved_model.pb", base) > 0 &&
               stat(path, &sb) == 0) {
        r |= rt_buf_puts(&b, "; it holds saved_model.pb: it is a TensorFlow SavedModel, which "
                             "predictd does not serve: it serves the exports predict-train "
                             "writes (model.pb + variables.bin, docs/export-format.md)");
    } else if (s->n_odd == 0) {
        r |= rt_buf_puts(&b, "; the directory is empty");
    } else {
        r |= rt_buf_printf(&b, "; found %zu entr%s:", s->n_odd, s->n_odd == 1 ? "y" : "ies");
        for (size_t i = 0; i < s->n_odd && i < NAMES_QUOTED; i++)
            r |= rt_buf_printf(&b, " '%s'", s->odd[i]);
        if (s->n_odd > NAMES_QUOTED)
            r |= rt_buf_puts(&b, " ...");
        for (size_t i = 0, tried = 0; i < s->n_odd && tried < 16; i++) {
            size_t len = strlen(s->odd[i]);
            if (!len || s->odd[i][len - 1] != '/')
                continue;
            tried++;
            snprintf(path, sizeof path, "%s/%.*s", base, (int)(len - 1), s->odd[i]);
            int64_t v = first_version_in(path);
            if (v >= 0) {
                r |= rt_buf_printf(&b, "; %s holds version %lld: is it the base path you meant?",
                                   path, (long long)v);
                break;
            }
        }
    }
    size_t n = r || !b.data ? 0 : b.len < cap ? b.len : cap - 1;
    if (n)
        memcpy(out, b.data, n);
    out[n] = '\0';
    rt_buf_free(&b);
}

/* Logs what changed since the last scan of mm: the base path became
 * unreadable or readable again, new ignored names, a new hint. Locked. */
static void note_scan(mmodel *mm, rt_status st, const rt_err *err, const scan *s,
                      const char *hint)
{
    const char *name = mm->conf.name;
    if (st != RT_OK) {
        if (strcmp(mm->scan_error, err->msg) != 0) {
            snprintf(mm->scan_error, sizeof mm->scan_error, "%s", err->msg);
            srv_log(SRV_LOG_ERROR, "model %s: %s; what is loaded keeps serving, scans go on",
                    name, err->msg);
        }
        return;
    }
    if (mm->scan_error[0]) {
        srv_log(SRV_LOG_INFO, "model %s: base path %s can be read again; scanning resumed", name,
                mm->conf.base_path);
        mm->scan_error[0] = '\0';
    }
    if (strcmp(mm->hint, hint) != 0) {
        snprintf(mm->hint, sizeof mm->hint, "%s", hint);
        if (hint[0])
            srv_log(SRV_LOG_WARN, "model %s: %s", name, hint);
    }
    uint64_t *now = calloc(s->n_odd ? s->n_odd : 1, sizeof *now);
    if (!now)
        return;
    size_t fresh = 0;
    char line[1024];
    size_t used = 0;
    line[0] = '\0';
    for (size_t i = 0; i < s->n_odd; i++) {
        now[i] = rt_hash_fingerprint64(s->odd[i], strlen(s->odd[i]));
        if (mm->n_ignored &&
            bsearch(&now[i], mm->ignored, mm->n_ignored, sizeof *now, rt_cmp_u64))
            continue;
        if (fresh++ < NAMES_QUOTED && used < sizeof line) {
            int w = snprintf(line + used, sizeof line - used, " '%s'", s->odd[i]);
            used = w < 0 ? used : used + (size_t)w;
        }
    }
    if (fresh && !hint[0])
        srv_log(SRV_LOG_WARN, "model %s: ignoring %zu entr%s of base path %s that %s not "
                              "version director%s (only canonical integers name versions: no "
                              "sign, leading zero or space):%s%s",
                name, fresh, fresh == 1 ? "y" : "ies", mm->conf.base_path,
                fresh == 1 ? "is" : "are", fresh == 1 ? "y" : "ies", line,
                fresh > NAMES_QUOTED ? " ..." : "");
    qsort(now, s->n_odd, sizeof *now, rt_cmp_u64);
    free(mm->ignored);
    mm->ignored = now;
    mm->n_ignored = s->n_odd;
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
    rt_status st = rt_file_read(AT_FDCWD, path, SRV_WARMUP_MAX_BYTES, 0, &text, &len, err);
    if (st != RT_OK)
        return st; /* the message names the file */
    if ((st = rt_cfg_parse_json(text, len, &root, err)) != RT_OK) {
        st = RT_ERR_FORMAT;
        goto out;
    }
    if (!(cJSON_IsArray(root) || cJSON_IsObject(root))) {
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

/* Loads one version off the request path and publishes it; true when it is
 * AVAILABLE. poll_mu held. */
static bool load_one(srv_manager *m, const char *name, const char *base, int64_t version,
                     uint64_t sig)
{
    srv_version *old = NULL;
    srv_version *v = calloc(1, sizeof *v);
    if (!v) {
        srv_log(SRV_LOG_ERROR, "model %s version %lld: out of memory", name, (long long)version);
        return false;
    }
    atomic_init(&v->refs, 2); /* the list's and ours */
    v->version = version;
    v->state = SRV_STATE_LOADING;
    v->sig = sig;
    srv_monitor_conf mon_conf; /* the model's monitoring settings as loading starts */
    memset(&mon_conf, 0, sizeof mon_conf);
    pthread_mutex_lock(&m->mu);
    mmodel *mm = srv_mm_find(m, name);
    if (mm && mm->conf.monitor.on && !srv_monitor_conf_copy(&mon_conf, &mm->conf.monitor))
        mon_conf.on = false;
    if (mm && (old = srv_mm_version(mm, version)) != NULL)
        srv_mm_remove(mm, old); /* a refused record being retried */
    bool inserted = mm && srv_mm_insert(mm, v);
    pthread_mutex_unlock(&m->mu);
    srv_version_release(old);
    if (!inserted) {
        free(v);
        srv_monitor_conf_clear(&mon_conf);
        return false;
    }

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%lld", base, (long long)version);
    srv_log(SRV_LOG_INFO, "model %s version %lld: LOADING from %s", name, (long long)version,
            dir);
    double t0 = rt_time_seconds(0);
    rt_err err = {{0}};
    rt_model *model = NULL;
    rt_status st = rt_model_open(dir, &model, &err);
    bool warm = atomic_load(&m->warmup); /* enable_model_warmup */
    if (st == RT_OK && warm) {
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
    double secs = rt_time_seconds(0) - t0;
    srv_monitor *mon = NULL;
    if (st == RT_OK && mon_conf.on) {
        rt_err merr = {{0}};
        if (!(mon = srv_monitor_new(&mon_conf, model, name, version, &merr)))
            srv_log(SRV_LOG_WARN, "model %s version %lld: monitoring: %s", name,
                    (long long)version, merr.msg);
    }
    srv_monitor_conf_clear(&mon_conf);

    pthread_mutex_lock(&m->mu);
    mm = srv_mm_find(m, name);
    bool listed = mm && srv_mm_version(mm, version) == v;
    v->load_seconds = secs;
    if (st == RT_OK) {
        v->model = model; /* freed with v from now on */
        model = NULL;
        v->monitor = mon;
        mon = NULL;
        v->state = listed ? SRV_STATE_AVAILABLE : SRV_STATE_END;
    } else {
        v->state = SRV_STATE_END;
        v->err_code = st;
        memcpy(v->error, err.msg, sizeof v->error);
        v->error[sizeof v->error - 1] = '\0';
    }
    pthread_mutex_unlock(&m->mu);
    srv_monitor_free(mon);
    rt_model_close(model);
    if (st == RT_OK && listed)
        srv_log(SRV_LOG_INFO, "model %s version %lld: AVAILABLE (loaded %s in %.3f s)", name,
                (long long)version, warm ? "and warmed up" : "without warm-up", secs);
    else if (st != RT_OK)
        srv_log(SRV_LOG_ERROR,
                "model %s version %lld: refused, state END: %s (retried when its files change)",
                name, (long long)version, err.msg);
    srv_version_release(v);
    return st == RT_OK && listed;
}

static int cmp_found_desc(const void *a, const void *b)
{
    int64_t x = ((const found *)a)->version, y = ((const found *)b)->version;
    return x < y ? 1 : x > y ? -1 : 0;
}

static const found *find_found(const found *fs, size_t n, int64_t version)
{
    size_t lo = 0, hi = n; /* fs is newest first */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fs[mid].version == version)
            return &fs[mid];
        if (fs[mid].version > version)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool specific_has(const srv_model_conf *c, int64_t version)
{
    size_t lo = 0, hi = c->n_specific; /* sorted, unique */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->specific[mid] == version)
            return true;
        if (c->specific[mid] < version)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

enum { WANTED = 1, COUNTED = 2 };

/* Whether f (the next version, newest first) is wanted: not refused with
 * these very files, and chosen by the policy or pinned by a label or
 * default_version. *taken counts the versions `latest` took so far. Locked. */
static int wanted(const mmodel *mm, const found *f, uint32_t *taken)
{
    const srv_version *v = srv_mm_version(mm, f->version);
    if (v && v->state == SRV_STATE_END && v->err_code != RT_OK && v->sig == f->sig)
        return 0; /* refused; retried when its files change */
    bool by_policy = false;
    switch (mm->conf.policy) {
    case SRV_POLICY_LATEST: by_policy = *taken < mm->conf.latest_n; break;
    case SRV_POLICY_ALL: by_policy = true; break;
    case SRV_POLICY_SPECIFIC: by_policy = specific_has(&mm->conf, f->version); break;
    }
    if (by_policy && mm->conf.policy == SRV_POLICY_LATEST) {
        (*taken)++;
        return WANTED | COUNTED;
    }
    return by_policy || srv_mm_pinned(mm, f->version) ? WANTED : 0;
}

/* A served version whose files changed on disk: it keeps serving what was
 * validated at load; said once per change. Locked. */
static void note_changed(srv_version *v, const found *f, const char *name)
{
    if (!v || v->state != SRV_STATE_AVAILABLE || v->sig == f->sig)
        return;
    v->sig = f->sig;
    srv_log(SRV_LOG_WARN, "model %s version %lld: its files changed on disk after it was "
                          "loaded; it keeps serving what was validated at load (a new version "
                          "directory is the way to change a model)",
            name, (long long)v->version);
}

static void poll_model(srv_manager *m, const char *name)
{
    scan sc;
    bool *want = NULL;
    srv_version **drop = NULL;
    size_t n_drop = 0;
    char *base = NULL;
    char hint[RT_ERR_MAX] = "";
    rt_err err = {{0}};
    memset(&sc, 0, sizeof sc);

    pthread_mutex_lock(&m->mu);
    mmodel *mm = srv_mm_find(m, name);
    if (mm)
        base = srv_dup_str(mm->conf.base_path);
    pthread_mutex_unlock(&m->mu);
    if (!base)
        return;

    rt_status st = scan_base(base, &sc, &err);
    if (st == RT_OK && sc.n == 0)
        make_hint(base, &sc, hint, sizeof hint);
    pthread_mutex_lock(&m->mu);
    m->scans++;
    if ((mm = srv_mm_find(m, name)) != NULL)
        note_scan(mm, st, &err, &sc, hint);
    pthread_mutex_unlock(&m->mu);
    if (st != RT_OK)
        goto out; /* unreadable or a partial listing: change nothing */
    if (sc.n)
        qsort(sc.fs, sc.n, sizeof *sc.fs, cmp_found_desc);
    want = calloc(sc.n ? sc.n : 1, sizeof *want);
    if (!want)
        goto out;

    /* 1. Load what is wanted and not loaded, newest first. */
    uint32_t taken = 0;
    for (size_t i = 0; i < sc.n; i++) {
        pthread_mutex_lock(&m->mu);
        bool stop = m->stop, load = false;
        int w = 0;
        mm = srv_mm_find(m, name);
        if (mm && !stop) {
            srv_version *v = srv_mm_version(mm, sc.fs[i].version);
            w = wanted(mm, &sc.fs[i], &taken);
            load = (w & WANTED) && (!v || v->state == SRV_STATE_END);
            note_changed(v, &sc.fs[i], name);
        }
        pthread_mutex_unlock(&m->mu);
        if (!mm || stop)
            goto out;
        if (load && !load_one(m, name, base, sc.fs[i].version, sc.fs[i].sig) && (w & COUNTED))
            taken--; /* refused: an older version may take its place */
    }

    /* 2. Unload what is no longer wanted or whose directory vanished; only
     * now, so a new version is AVAILABLE before the old one goes. */
    pthread_mutex_lock(&m->mu);
    mm = srv_mm_find(m, name);
    if (mm) {
        taken = 0;
        for (size_t i = 0; i < sc.n; i++)
            want[i] = wanted(mm, &sc.fs[i], &taken) & WANTED;
        drop = calloc(mm->n_vers ? mm->n_vers : 1, sizeof *drop);
        for (size_t i = 0; drop && i < mm->n_vers;) {
            srv_version *v = mm->vers[i];
            const found *f = find_found(sc.fs, sc.n, v->version);
            bool keep;
            if (v->state == SRV_STATE_LOADING)
                keep = true;
            else if (v->state == SRV_STATE_END)
                keep = f != NULL; /* refused: reported while its directory exists */
            else
                keep = f && want[f - sc.fs];
            if (keep) {
                i++;
                continue;
            }
            if (v->state == SRV_STATE_AVAILABLE) {
                srv_log(SRV_LOG_INFO, "model %s version %lld: UNLOADING (%s)", name,
                        (long long)v->version,
                        !f ? "its directory is gone" : "not wanted by the version policy");
                v->state = SRV_STATE_UNLOADING;
            }
            srv_mm_remove(mm, v);
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
    scan_free(&sc);
    free(base);
}

/* Scans the named models (poll_mu held by the caller); frees names. */
static void scan_names(srv_manager *m, char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++) {
        pthread_mutex_lock(&m->mu);
        bool stop = m->stop;
        pthread_mutex_unlock(&m->mu);
        if (names[i] && !stop)
            poll_model(m, names[i]);
        free(names[i]);
    }
    free(names);
}

void srv_manager_poll(srv_manager *m)
{
    pthread_mutex_lock(&m->poll_mu);
    pthread_mutex_lock(&m->mu);
    size_t n = m->n_models;
    char **names = calloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; names && i < n; i++) {
        names[i] = srv_dup_str(m->models[i]->conf.name);
        m->models[i]->dirty = false;
    }
    m->dirty = false;
    pthread_mutex_unlock(&m->mu);
    scan_names(m, names, n);
    pthread_mutex_unlock(&m->poll_mu);
}

/* Whether mm holds a refused version (END with an error): its directory may
 * be repaired in place, which no event on the base path tells. Locked. */
static bool has_refused(const mmodel *mm)
{
    for (size_t i = 0; i < mm->n_vers; i++)
        if (mm->vers[i]->state == SRV_STATE_END && mm->vers[i]->err_code != RT_OK)
            return true;
    return false;
}

static bool push_name(char ***names, size_t *n, size_t *cap, const char *name)
{
    if (rt_grow(names, cap, *n + 1, sizeof **names) != 0)
        return false;
    return ((*names)[*n] = srv_dup_str(name)) != NULL && ++*n;
}

/* The models to scan now, their dirty flags cleared: the dirty ones, and at
 * a tick the polled ones, those holding a refused version, and the safety
 * rescan's next SRV_SAFETY_SCANS_PER_TICK models. Without a working watcher
 * every model is polled. Locked. */
static char **pick(srv_manager *m, bool tick, size_t *n_out)
{
    char **names = NULL;
    size_t n = 0, cap = 0, n_models = m->n_models;
    bool all = !m->watching;
    for (size_t i = 0; i < n_models; i++) {
        mmodel *mm = m->models[i];
        if (mm->dirty || (tick && (all || mm->polled || has_refused(mm))))
            push_name(&names, &n, &cap, mm->conf.name);
        mm->dirty = false;
    }
    m->dirty = false;
    if (tick && !all && n_models) {
        size_t k = n_models < SRV_SAFETY_SCANS_PER_TICK ? n_models : SRV_SAFETY_SCANS_PER_TICK;
        for (size_t j = 0; j < k; j++) {
            mmodel *mm = m->models[(m->rescan_at + j) % n_models];
            if (!mm->polled)
                push_name(&names, &n, &cap, mm->conf.name);
        }
        m->rescan_at = (m->rescan_at + k) % n_models;
    }
    *n_out = n;
    return names;
}

/* The loader thread. A wake (start, reload, SIGHUP, lost inotify events)
 * scans every model; otherwise it scans what pick() says: dirty models at
 * once, the rest at each tick of poll_seconds. Idle, a tick costs one pass
 * over the model table and at most SRV_SAFETY_SCANS_PER_TICK scans (plus the
 * polled base paths), whatever the number of models. */
static void *loader_main(void *arg)
{
    srv_manager *m = arg;
    pthread_mutex_lock(&m->mu);
    /* Watches first, so that nothing changes unseen between them and the
     * first scan. */
    while (m->watcher_started && !m->watch_ready && !m->stop)
        pthread_cond_wait(&m->cv, &m->mu);
    double next_tick = rt_time_seconds(0) + m->poll_seconds;
    while (!m->stop) {
        if (m->wake) {
            m->wake = false;
            pthread_mutex_unlock(&m->mu);
            srv_manager_poll(m);
            pthread_mutex_lock(&m->mu);
            next_tick = rt_time_seconds(0) + m->poll_seconds;
            continue;
        }
        double now = rt_time_seconds(0);
        if (m->poll_seconds > 0 && next_tick > now + m->poll_seconds)
            next_tick = now + m->poll_seconds; /* the interval was shortened */
        bool tick = m->poll_seconds > 0 && now >= next_tick;
        if (m->dirty || tick) {
            if (tick)
                next_tick = now + m->poll_seconds;
            size_t n = 0;
            char **names = pick(m, tick, &n);
            pthread_mutex_unlock(&m->mu);
            pthread_mutex_lock(&m->poll_mu);
            scan_names(m, names, n);
            pthread_mutex_unlock(&m->poll_mu);
            pthread_mutex_lock(&m->mu);
            continue;
        }
        if (m->poll_seconds > 0) {
            struct timespec ts;
            double at = next_tick;
            ts.tv_sec = (time_t)at;
            ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
        } else {
            pthread_cond_wait(&m->cv, &m->mu);
        }
    }
    pthread_mutex_unlock(&m->mu);
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
    if (poll_seconds > 0)
        m->watcher_started = srv_watcher_start(m);
    int e = pthread_create(&m->thread, NULL, loader_main, m);
    if (e != 0) {
        pthread_mutex_lock(&m->mu);
        m->stop = true;
        pthread_mutex_unlock(&m->mu);
        srv_watcher_kick(m);
        if (m->watcher_started)
            pthread_join(m->watcher, NULL);
        m->watcher_started = false;
        return rt_err_set(err, RT_ERR_IO, "loader thread: %s", strerror(e));
    }
    m->started = true;
    return RT_OK;
}
