/*
 * srv_monitor.c — skew and drift monitoring of served instances
 * (docs/data-validation.md, "Monitoring in predictd").
 *
 * Per served version, each raw input with training statistics has a fixed
 * set of counters: a numeric input one per bucket of the training's
 * equal-width histogram plus below/above its range, NaN, -Infinity,
 * +Infinity and missing; a string input one per training value (at most
 * RT_STATS_RANK_MAX) plus unseen and missing. The request path adds to them
 * with relaxed atomic adds in one of SHARDS copies (picked by the thread),
 * so threads rarely share a cache line, under that copy's own mutex (held
 * for one request's instances; threads of one shard rarely meet). The
 * counters only grow; a window is the difference of two snapshots of their
 * sums, taken when a window ends (window_instances counted, or
 * window_seconds passed, noticed by a request or a reader). A snapshot holds
 * every shard's mutex while it sums, so it sees each request's instances
 * whole or not at all: a window's instance count (each shard's slot after
 * the features' counters) equals every feature's counts added up, also
 * while requests are counted (issue 35, item 10: 341 of 3,000 reads tore).
 * When a window ends, under the monitor's
 * mutex, each feature's skew (the window against the training statistics)
 * and drift (against the window before) are computed with rt_stats_jsd /
 * rt_stats_linf_counts; crossing a threshold logs one WARN line, coming
 * back one INFO line. A monitor's start logs one INFO line saying what it
 * counts (the instances of :predict, :classify, :regress, v2 infer and
 * :explain requests: counted_methods in the status) and where to read it.
 */
#include "srv.h"

#include <cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS 8
#define UNSEEN_LABEL "(values not seen in training)"

/* ----------------------------------------------------------- the conf */

void srv_monitor_conf_clear(srv_monitor_conf *c)
{
    for (size_t i = 0; i < c->n_thresholds; i++)
        free(c->feature[i]);
    free(c->feature);
    free(c->threshold);
    memset(c, 0, sizeof *c);
}

bool srv_monitor_conf_copy(srv_monitor_conf *d, const srv_monitor_conf *s)
{
    *d = *s;
    d->feature = NULL;
    d->threshold = NULL;
    d->n_thresholds = 0;
    if (!s->n_thresholds)
        return true;
    d->feature = calloc(s->n_thresholds, sizeof *d->feature);
    d->threshold = calloc(s->n_thresholds, sizeof *d->threshold);
    if (!d->feature || !d->threshold) {
        srv_monitor_conf_clear(d);
        return false;
    }
    for (size_t i = 0; i < s->n_thresholds; i++) {
        d->n_thresholds = i + 1;
        d->threshold[i] = s->threshold[i];
        if (!(d->feature[i] = strdup(s->feature[i]))) {
            srv_monitor_conf_clear(d);
            return false;
        }
    }
    return true;
}

rt_status srv_monitor_parse(const cJSON *it, const char *path, srv_monitor_conf *c, rt_err *err)
{
    static const char *const keys[] = {"sample_rate", "window_seconds", "window_instances",
                                       "default_threshold", "thresholds", NULL};
    srv_monitor_conf_clear(c);
    if (cJSON_IsNull(it))
        return RT_OK;
    rt_status st = rt_cfg_check_keys(it, path, keys, NULL, err);
    if (st != RT_OK)
        return st;
    c->on = true;
    c->sample_rate = 1;
    c->window_seconds = 3600;
    c->default_threshold = 0.3;
    int64_t ws = c->window_seconds, wi = 0;
    if ((st = rt_cfg_num(it, path, "sample_rate", 0, 1e-9, 1, &c->sample_rate, err)) ||
        (st = rt_cfg_int(it, path, "window_seconds", 0, 1, 31536000, &ws, err)) ||
        (st = rt_cfg_int(it, path, "window_instances", 0, 0, INT64_C(1) << 40, &wi, err)) ||
        (st = rt_cfg_num(it, path, "default_threshold", 0, 0, 1, &c->default_threshold, err)))
        return st;
    c->window_seconds = (int)ws;
    c->window_instances = (uint64_t)wi;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "thresholds");
    if (!t || cJSON_IsNull(t))
        return RT_OK;
    if (!cJSON_IsObject(t))
        return rt_cfg_fail(err, path, "thresholds", "expected an object {\"feature\": threshold}");
    size_t n = (size_t)cJSON_GetArraySize(t);
    c->feature = calloc(n ? n : 1, sizeof *c->feature);
    c->threshold = calloc(n ? n : 1, sizeof *c->threshold);
    if (!c->feature || !c->threshold)
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    const cJSON *x;
    char tp[256];
    snprintf(tp, sizeof tp, "%s.thresholds", path);
    cJSON_ArrayForEach(x, t)
    {
        for (size_t k = 0; k < c->n_thresholds; k++)
            if (!strcmp(c->feature[k], x->string))
                return rt_cfg_fail(err, tp, x->string, "given twice");
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || x->valuedouble > 1)
            return rt_cfg_fail(err, tp, x->string, "expected a number in [0, 1]");
        if (!(c->feature[c->n_thresholds] = strdup(x->string)))
            return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
        c->threshold[c->n_thresholds++] = x->valuedouble;
    }
    return RT_OK;
}

/* ------------------------------------------------------------ monitor */

typedef struct mfeat {
    const rt_feature_stats *tr;
    long input;          /* graph input index */
    int numeric;
    size_t off, n;       /* counters [off, off + n) */
    /* numeric: training's finite buckets b[0..nb) */
    const rt_stats_bucket *b;
    size_t nb;
    double lo, hi, w;
    /* string: training values, open addressing by fingerprint */
    size_t nv, vcap;
    uint64_t *vh;
    uint32_t *vi;
    double thr;
    double skew, drift;  /* of the last completed window; -1: not defined */
    bool skew_bad, drift_bad;
} mfeat;

/* counter slots after a numeric feature's buckets */
enum { N_BELOW, N_ABOVE, N_NAN, N_MISSING, N_NINF, N_PINF, N_EXTRA };
/* after a string feature's values */
enum { S_UNSEEN, S_MISSING, S_EXTRA };

struct srv_monitor {
    char *name;
    int64_t version;
    double sample_rate;
    uint64_t sample_cut; /* draw < cut: counted */
    int window_seconds;
    uint64_t window_instances;
    bool trim;
    mfeat *f;
    size_t nf, ncount, stride;
    _Atomic uint64_t *cnt;   /* [SHARDS * stride]: ncount counters, then instances counted */
    pthread_mutex_t shard_mu[SHARDS]; /* a request adds to a shard under its mutex */
    _Atomic uint64_t counted; /* instances counted (for the window's end: may run ahead of
                                 the shards' counts, which snapshots read) */
    _Atomic uint64_t draws;
    _Atomic uint64_t next_at; /* counted at which the window ends (UINT64_MAX: never) */
    _Atomic int64_t deadline_ms;
    pthread_mutex_t mu;
    uint64_t *s0, *s1, *s2;  /* sums at the current, last and the one before window starts
                                [ncount + 1]: the counters, then instances counted */
    uint64_t c0, c1, c2;     /* counted at those starts */
    uint64_t windows;        /* completed */
};

static uint64_t str_hash(const char *s, size_t len)
{
    return rt_hash_fingerprint64(s, len) | 1; /* 0 = empty slot */
}

static int build_values(mfeat *f)
{
    f->nv = f->tr->n_values;
    f->vcap = 16;
    while (f->vcap < 2 * f->nv)
        f->vcap *= 2;
    f->vh = calloc(f->vcap, sizeof *f->vh);
    f->vi = calloc(f->vcap, sizeof *f->vi);
    if (!f->vh || !f->vi)
        return -1;
    for (size_t k = 0; k < f->nv; k++) {
        const char *v = f->tr->values[k].value;
        uint64_t h = str_hash(v, strlen(v));
        size_t j = (size_t)h & (f->vcap - 1);
        while (f->vh[j])
            j = (j + 1) & (f->vcap - 1);
        f->vh[j] = h;
        f->vi[j] = (uint32_t)k;
    }
    return 0;
}

static void plan_numeric(mfeat *f)
{
    const rt_stats_hist *h = &f->tr->standard;
    size_t first = 0;
    while (first < h->n && (!isfinite(h->b[first].low) || !isfinite(h->b[first].high)))
        first++;
    size_t k = first;
    while (k < h->n && isfinite(h->b[k].low) && isfinite(h->b[k].high))
        k++;
    f->b = h->b + first;
    f->nb = k - first;
    if (f->nb) {
        f->lo = f->b[0].low;
        f->hi = f->b[f->nb - 1].high;
        f->w = f->nb > 1 ? (f->hi - f->lo) / (double)f->nb : 0;
    }
}

/* The requests whose instances are counted, as the status and the start
 * line name them: an :explain's instances are served predictions (its
 * answer holds :predict's), its coalition and baseline rows are not. */
static const char *const COUNTED[] = {"predict", "classify", "regress", "infer", "explain"};
#define N_COUNTED (sizeof COUNTED / sizeof *COUNTED)

/* The INFO line of a monitor's start: what it counts, and where to read it. */
static void log_start(const srv_monitor *m)
{
    size_t numeric = 0;
    for (size_t i = 0; i < m->nf; i++)
        numeric += m->f[i].numeric;
    char win[64] = "";
    if (m->window_instances)
        snprintf(win, sizeof win, " or %llu instances", (unsigned long long)m->window_instances);
    srv_log(SRV_LOG_INFO,
            "model %s version %lld: monitoring %zu inputs (%zu numeric, %zu string) against the "
            "export's training statistics: the instances of every answered :predict, "
            ":classify, :regress, v2 infer and :explain request (an :explain's instances, not "
            "its coalitions), sample rate %g, a window every %d s%s; skew and drift at GET "
            "/v1/models/%s/versions/%lld/monitoring and as predictd_feature_skew and "
            "predictd_feature_drift at the metrics path",
            m->name, (long long)m->version, m->nf, numeric, m->nf - numeric, m->sample_rate,
            m->window_seconds, win, m->name, (long long)m->version);
}

srv_monitor *srv_monitor_new(const srv_monitor_conf *c, const rt_model *model, const char *name,
                             int64_t version, rt_err *err)
{
    const rt_stats *st = rt_model_stats(model);
    if (!st) {
        rt_err_set(err, RT_ERR_NOTFOUND, "the export has no training statistics "
                                         "(statistics.json): not monitored");
        return NULL;
    }
    const rt_graph *g = rt_model_graph(model);
    srv_monitor *m = calloc(1, sizeof *m);
    if (!m || !(m->name = strdup(name)) || !(m->f = calloc(st->n ? st->n : 1, sizeof *m->f)))
        goto nomem;
    pthread_mutex_init(&m->mu, NULL);
    for (int sh = 0; sh < SHARDS; sh++)
        pthread_mutex_init(&m->shard_mu[sh], NULL);
    m->version = version;
    m->sample_rate = c->sample_rate;
    m->sample_cut = c->sample_rate >= 1 ? UINT64_MAX : (uint64_t)(c->sample_rate * 18446744073709551615.0);
    m->window_seconds = c->window_seconds;
    m->window_instances = c->window_instances;
    m->trim = rt_model_def(model)->trim_strings;
    for (size_t i = 0; i < st->n; i++) {
        const rt_feature_stats *tr = &st->f[i];
        long in = rt_graph_find_input(g, tr->name, strlen(tr->name));
        if (in < 0)
            continue;
        mfeat *f = &m->f[m->nf++];
        f->tr = tr;
        f->input = in;
        f->numeric = tr->type != RT_STATS_STRING;
        f->skew = f->drift = -1;
        f->thr = c->default_threshold;
        for (size_t k = 0; k < c->n_thresholds; k++)
            if (!strcmp(c->feature[k], tr->name))
                f->thr = c->threshold[k];
        f->off = m->ncount;
        if (f->numeric) {
            plan_numeric(f);
            f->n = f->nb + N_EXTRA;
        } else {
            if (build_values(f))
                goto nomem;
            f->n = f->nv + S_EXTRA;
        }
        m->ncount += f->n;
    }
    for (size_t k = 0; k < c->n_thresholds; k++) {
        bool found = false;
        for (size_t i = 0; i < m->nf && !found; i++)
            found = !strcmp(m->f[i].tr->name, c->feature[k]);
        if (!found)
            srv_log(SRV_LOG_WARN, "model %s version %lld: monitoring.thresholds.%s: no such "
                    "input in the training statistics (ignored)", name, (long long)version,
                    c->feature[k]);
    }
    m->stride = (m->ncount + 1 + 7) / 8 * 8;
    m->cnt = aligned_alloc(64, SHARDS * m->stride * sizeof *m->cnt);
    m->s0 = calloc(m->ncount + 1, sizeof *m->s0);
    m->s1 = calloc(m->ncount + 1, sizeof *m->s1);
    m->s2 = calloc(m->ncount + 1, sizeof *m->s2);
    if (!m->cnt || !m->s0 || !m->s1 || !m->s2)
        goto nomem;
    for (size_t k = 0; k < SHARDS * m->stride; k++)
        atomic_init(&m->cnt[k], 0);
    atomic_init(&m->counted, 0);
    atomic_init(&m->draws, 0);
    atomic_init(&m->next_at, m->window_instances ? m->window_instances : UINT64_MAX);
    atomic_init(&m->deadline_ms, rt_time_now_ms() + (int64_t)m->window_seconds * 1000);
    log_start(m);
    return m;
nomem:
    rt_err_set(err, RT_ERR_NOMEM, "monitoring: out of memory");
    srv_monitor_free(m);
    return NULL;
}

void srv_monitor_free(srv_monitor *m)
{
    if (!m)
        return;
    for (size_t i = 0; m->f && i < m->nf; i++) {
        free(m->f[i].vh);
        free(m->f[i].vi);
    }
    if (m->f) {
        pthread_mutex_destroy(&m->mu);
        for (int sh = 0; sh < SHARDS; sh++)
            pthread_mutex_destroy(&m->shard_mu[sh]);
    }
    free(m->f);
    free(m->name);
    free(m->cnt);
    free(m->s0);
    free(m->s1);
    free(m->s2);
    free(m);
}

/* ------------------------------------------------------- request path */

static size_t num_slot(const mfeat *f, double v)
{
    if (isnan(v))
        return f->nb + N_NAN;
    if (v == -INFINITY)
        return f->nb + N_NINF;
    if (v == INFINITY)
        return f->nb + N_PINF;
    if (!f->nb || v < f->lo)
        return f->nb + N_BELOW;
    if (v > f->hi)
        return f->nb + N_ABOVE;
    size_t k = f->w > 0 ? (size_t)((v - f->lo) / f->w) : 0;
    if (k >= f->nb)
        k = f->nb - 1;
    while (k > 0 && v < f->b[k].low) /* the training's own boundaries decide */
        k--;
    while (k + 1 < f->nb && v >= f->b[k + 1].low)
        k++;
    return k;
}

static size_t str_slot(const mfeat *f, const char *s, size_t len, bool trim)
{
    if (trim)
        s = rt_buf_trim_span(s, &len);
    uint64_t h = str_hash(s, len);
    size_t j = (size_t)h & (f->vcap - 1);
    while (f->vh[j]) {
        if (f->vh[j] == h) {
            const char *v = f->tr->values[f->vi[j]].value;
            if (strlen(v) == len && !memcmp(v, s, len))
                return f->vi[j];
        }
        j = (j + 1) & (f->vcap - 1);
    }
    return f->nv + S_UNSEEN;
}

static void rotate(srv_monitor *m, bool wait);

void srv_monitor_observe(srv_monitor *m, const rt_batch *b)
{
    if (!m || !b)
        return;
    size_t n = rt_batch_size(b), counted = 0;
    size_t shard = rt_hash_mix64((uint64_t)(uintptr_t)pthread_self()) % SHARDS;
    _Atomic uint64_t *c = m->cnt + shard * m->stride;
    pthread_mutex_lock(&m->shard_mu[shard]);
    for (size_t i = 0; i < n; i++) {
        if (m->sample_cut != UINT64_MAX &&
            rt_hash_mix64(atomic_fetch_add_explicit(&m->draws, 1, memory_order_relaxed)) >=
                m->sample_cut)
            continue;
        counted++;
        for (size_t k = 0; k < m->nf; k++) {
            const mfeat *f = &m->f[k];
            size_t nv = 0;
            const rt_value *v = rt_batch_cell(b, i, (size_t)f->input, &nv);
            if (nv == 0) {
                atomic_fetch_add_explicit(&c[f->off + (f->numeric ? f->nb + N_MISSING
                                                                  : f->nv + S_MISSING)],
                                          1, memory_order_relaxed);
                continue;
            }
            for (size_t j = 0; j < nv; j++) {
                size_t slot;
                if (f->numeric)
                    slot = v[j].str ? f->nb + N_MISSING : num_slot(f, v[j].num);
                else
                    slot = v[j].str ? str_slot(f, v[j].str, v[j].len, m->trim)
                                    : f->nv + S_UNSEEN;
                atomic_fetch_add_explicit(&c[f->off + slot], 1, memory_order_relaxed);
            }
        }
    }
    atomic_fetch_add_explicit(&c[m->ncount], counted, memory_order_relaxed);
    pthread_mutex_unlock(&m->shard_mu[shard]);
    if (!counted)
        return;
    uint64_t total = atomic_fetch_add_explicit(&m->counted, counted, memory_order_relaxed) + counted;
    if (total >= atomic_load_explicit(&m->next_at, memory_order_relaxed) ||
        rt_time_now_ms() >= atomic_load_explicit(&m->deadline_ms, memory_order_relaxed))
        rotate(m, false);
}

/* ------------------------------------------------------------ windows */

/* The counters' sums and the instances counted, into out[ncount + 1], with
 * every shard's mutex held: no request is half counted in them. */
static void sums(srv_monitor *m, uint64_t *out)
{
    for (int sh = 0; sh < SHARDS; sh++)
        pthread_mutex_lock(&m->shard_mu[sh]);
    for (size_t k = 0; k <= m->ncount; k++) {
        uint64_t s = 0;
        for (int sh = 0; sh < SHARDS; sh++)
            s += atomic_load_explicit(&m->cnt[(size_t)sh * m->stride + k], memory_order_relaxed);
        out[k] = s;
    }
    for (int sh = SHARDS - 1; sh >= 0; sh--)
        pthread_mutex_unlock(&m->shard_mu[sh]);
}

/* The window a - b of numeric feature f as a histogram on the training's
 * boundaries (b may be NULL: a alone); bk has room for nb + 4 buckets. */
static rt_stats_hist window_hist(const mfeat *f, const uint64_t *a, const uint64_t *b,
                                 rt_stats_bucket *bk)
{
    rt_stats_hist h = {0, 0, bk};
#define W(k) ((double)(a[f->off + (k)] - (b ? b[f->off + (k)] : 0)))
    double pad = f->w > 0 ? f->w : fmax(1, fabs(f->lo) * 0.1);
    if (W(f->nb + N_NINF) > 0)
        bk[h.n++] = (rt_stats_bucket){-INFINITY, -INFINITY, W(f->nb + N_NINF)};
    if (W(f->nb + N_BELOW) > 0)
        bk[h.n++] = (rt_stats_bucket){f->nb ? f->lo - pad : -1, f->nb ? f->lo : 0,
                                      W(f->nb + N_BELOW)};
    for (size_t k = 0; k < f->nb; k++)
        bk[h.n++] = (rt_stats_bucket){f->b[k].low, f->b[k].high, W(k)};
    if (W(f->nb + N_ABOVE) > 0)
        bk[h.n++] = (rt_stats_bucket){f->nb ? f->hi : 0, f->nb ? f->hi + pad : 1,
                                      W(f->nb + N_ABOVE)};
    if (W(f->nb + N_PINF) > 0)
        bk[h.n++] = (rt_stats_bucket){INFINITY, INFINITY, W(f->nb + N_PINF)};
    h.num_nan = (uint64_t)W(f->nb + N_NAN);
#undef W
    return h;
}

static double total_values(const mfeat *f, const uint64_t *a, const uint64_t *b)
{
    double t = 0;
    size_t skip = f->numeric ? f->nb + N_MISSING : f->nv + S_MISSING;
    for (size_t k = 0; k < f->n; k++)
        if (k != skip)
            t += (double)(a[f->off + k] - (b ? b[f->off + k] : 0));
    return t;
}

/* Distance of window a - b against window c - d (c NULL: the training). */
static double distance(const mfeat *f, const uint64_t *a, const uint64_t *b, const uint64_t *c,
                       const uint64_t *d)
{
    if (total_values(f, a, b) <= 0 || (c && total_values(f, c, d) <= 0))
        return -1;
    double r = -1;
    if (f->numeric) {
        rt_stats_bucket *x = malloc((f->nb + 4) * sizeof *x), *y = malloc((f->nb + 4) * sizeof *y);
        if (x && y) {
            rt_stats_hist hw = window_hist(f, a, b, x);
            rt_stats_hist hc = c ? window_hist(f, c, d, y) : f->tr->standard;
            r = rt_stats_jsd(&hc, &hw);
        }
        free(x);
        free(y);
        return r;
    }
    size_t n = f->nv + 1;
    const char **names = malloc(n * sizeof *names);
    double *pa = malloc(n * sizeof *pa), *pb = malloc(n * sizeof *pb);
    if (names && pa && pb) {
        for (size_t k = 0; k < n; k++) {
            names[k] = k < f->nv ? f->tr->values[k].value : UNSEEN_LABEL;
            pb[k] = (double)(a[f->off + k] - (b ? b[f->off + k] : 0));
            pa[k] = c ? (double)(c[f->off + k] - (d ? d[f->off + k] : 0))
                      : (k < f->nv ? (double)f->tr->values[k].count : 0);
        }
        r = rt_stats_linf_counts(names, pa, pb, n, NULL);
    }
    free(names);
    free(pa);
    free(pb);
    return r;
}

static void judge(srv_monitor *m, mfeat *f, const char *what, double dist, bool *bad)
{
    bool now = dist > f->thr;
    if (now && !*bad)
        srv_log(SRV_LOG_WARN, "model %s version %lld: feature %s: %s %.6g is above its threshold "
                "%.6g (%s, window %llu)", m->name, (long long)m->version, f->tr->name, what,
                dist, f->thr, f->numeric ? "Jensen-Shannon divergence" : "L-infinity distance",
                (unsigned long long)m->windows);
    else if (!now && *bad)
        srv_log(SRV_LOG_WARN, "model %s version %lld: feature %s: %s %.6g is back within its "
                "threshold %.6g (window %llu)", m->name, (long long)m->version, f->tr->name,
                what, dist, f->thr, (unsigned long long)m->windows);
    *bad = now;
}

/* Ends the current window when it is due (wait: lock, else only try). */
static void rotate(srv_monitor *m, bool wait)
{
    if (wait)
        pthread_mutex_lock(&m->mu);
    else if (pthread_mutex_trylock(&m->mu) != 0)
        return;
    uint64_t counted = atomic_load(&m->counted);
    int64_t now = rt_time_now_ms();
    bool due = counted >= atomic_load(&m->next_at) || now >= atomic_load(&m->deadline_ms);
    if (!due) {
        pthread_mutex_unlock(&m->mu);
        return;
    }
    uint64_t *t = m->s2; /* the oldest snapshot becomes the newest */
    m->s2 = m->s1;
    m->s1 = m->s0;
    m->s0 = t;
    sums(m, m->s0);
    m->c2 = m->c1;
    m->c1 = m->c0;
    m->c0 = m->s0[m->ncount]; /* the instances the snapshot holds */
    m->windows++;
    atomic_store(&m->next_at, m->window_instances ? m->c0 + m->window_instances : UINT64_MAX);
    atomic_store(&m->deadline_ms, now + (int64_t)m->window_seconds * 1000);
    for (size_t i = 0; i < m->nf; i++) {
        mfeat *f = &m->f[i];
        f->skew = distance(f, m->s0, m->s1, NULL, NULL);
        f->drift = m->windows >= 2 ? distance(f, m->s0, m->s1, m->s1, m->s2) : -1;
        if (f->skew >= 0)
            judge(m, f, "skew", f->skew, &f->skew_bad);
        if (f->drift >= 0)
            judge(m, f, "drift", f->drift, &f->drift_bad);
    }
    pthread_mutex_unlock(&m->mu);
}

/* -------------------------------------------------------------- status */

static void jnum(rt_buf *b, double v)
{
    if (v < 0 || !isfinite(v))
        rt_buf_puts(b, "null");
    else
        rt_buf_json_double(b, v);
}

/* Counts of window a - b of f as JSON members. */
static void window_json(rt_buf *o, const mfeat *f, const uint64_t *a, const uint64_t *b)
{
#define W(k) ((unsigned long long)(a[f->off + (k)] - (b ? b[f->off + (k)] : 0)))
    if (f->numeric) {
        rt_buf_printf(o, "{\"missing\": %llu, \"nan\": %llu, \"out_of_range\": %llu, "
                         "\"below_range\": %llu, \"above_range\": %llu, \"histogram\": [",
                      W(f->nb + N_MISSING), W(f->nb + N_NAN),
                      W(f->nb + N_BELOW) + W(f->nb + N_ABOVE) + W(f->nb + N_NINF) +
                          W(f->nb + N_PINF),
                      W(f->nb + N_BELOW) + W(f->nb + N_NINF), W(f->nb + N_ABOVE) + W(f->nb + N_PINF));
        for (size_t k = 0; k < f->nb; k++) {
            rt_buf_puts(o, k ? ", {\"low\": " : "{\"low\": ");
            rt_buf_json_double(o, f->b[k].low);
            rt_buf_puts(o, ", \"high\": ");
            rt_buf_json_double(o, f->b[k].high);
            rt_buf_printf(o, ", \"count\": %llu, \"training_count\": ", W(k));
            rt_buf_json_double(o, f->b[k].count);
            rt_buf_puts(o, "}");
        }
        rt_buf_puts(o, "]}");
    } else {
        rt_buf_printf(o, "{\"missing\": %llu, \"unseen\": %llu, \"values\": [",
                      W(f->nv + S_MISSING), W(f->nv + S_UNSEEN));
        for (size_t k = 0; k < f->nv; k++) {
            rt_buf_puts(o, k ? ", {\"value\": " : "{\"value\": ");
            rt_buf_json_string(o, f->tr->values[k].value, strlen(f->tr->values[k].value));
            rt_buf_printf(o, ", \"count\": %llu, \"training_count\": %llu}", W(k),
                          (unsigned long long)f->tr->values[k].count);
        }
        rt_buf_puts(o, "]}");
    }
#undef W
}

rt_status srv_monitor_json(srv_monitor *m, rt_buf *o)
{
    rotate(m, true); /* a window whose time is up ends now */
    uint64_t *cur = malloc((m->ncount + 1) * sizeof *cur);
    if (!cur)
        return RT_ERR_NOMEM;
    pthread_mutex_lock(&m->mu);
    sums(m, cur);
    uint64_t counted = cur[m->ncount];
    rt_buf_puts(o, "{\"model\": ");
    rt_buf_json_string(o, m->name, strlen(m->name));
    rt_buf_printf(o, ", \"version\": %lld, \"counted_methods\": [", (long long)m->version);
    for (size_t k = 0; k < N_COUNTED; k++)
        rt_buf_printf(o, "%s\"%s\"", k ? ", " : "", COUNTED[k]);
    rt_buf_puts(o, "], \"sample_rate\": ");
    rt_buf_json_double(o, m->sample_rate);
    rt_buf_printf(o, ", \"window_seconds\": %d, \"window_instances\": %llu, \"windows\": %llu, "
                     "\"instances\": %llu, \"window\": {\"instances\": %llu}, "
                     "\"current_window\": {\"instances\": %llu}, \"anomalous\": ",
                  m->window_seconds, (unsigned long long)m->window_instances,
                  (unsigned long long)m->windows, (unsigned long long)counted,
                  (unsigned long long)(m->windows ? m->c0 - m->c1 : 0),
                  (unsigned long long)(counted - m->c0));
    bool any = false;
    for (size_t i = 0; i < m->nf; i++)
        any = any || m->f[i].skew_bad || m->f[i].drift_bad;
    rt_buf_puts(o, any ? "true" : "false");
    rt_buf_puts(o, ", \"features\": [");
    for (size_t i = 0; i < m->nf; i++) {
        const mfeat *f = &m->f[i];
        rt_buf_puts(o, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        rt_buf_json_string(o, f->tr->name, strlen(f->tr->name));
        rt_buf_printf(o, ", \"type\": \"%s\", \"distance\": \"%s\", \"threshold\": ",
                      f->numeric ? "numeric" : "string",
                      f->numeric ? "jensen_shannon_divergence" : "l_infinity");
        rt_buf_json_double(o, f->thr);
        rt_buf_puts(o, ", \"skew\": ");
        jnum(o, f->skew);
        rt_buf_puts(o, ", \"drift\": ");
        jnum(o, f->drift);
        rt_buf_printf(o, ", \"skew_anomalous\": %s, \"drift_anomalous\": %s, \"anomalous\": %s, "
                         "\"window\": ",
                      f->skew_bad ? "true" : "false", f->drift_bad ? "true" : "false",
                      f->skew_bad || f->drift_bad ? "true" : "false");
        if (m->windows)
            window_json(o, f, m->s0, m->s1);
        else
            rt_buf_puts(o, "null");
        rt_buf_puts(o, ", \"current_window\": ");
        window_json(o, f, cur, m->s0);
        rt_buf_puts(o, "}");
    }
    rt_buf_puts(o, "]}\n");
    pthread_mutex_unlock(&m->mu);
    free(cur);
    return rt_buf_failed(o) ? RT_ERR_NOMEM : RT_OK;
}

int srv_monitor_prometheus_help(rt_buf *o)
{
    return rt_buf_puts(
        o, "# HELP predictd_feature_skew Distance of the last completed monitoring window's "
           "values of a raw input from the training statistics (Jensen-Shannon divergence for "
           "numbers, L-infinity for strings; NaN before the first window).\n"
           "# TYPE predictd_feature_skew gauge\n"
           "# HELP predictd_feature_drift Distance of the last completed window from the one "
           "before (NaN before the second window).\n"
           "# TYPE predictd_feature_drift gauge\n"
           "# HELP predictd_feature_threshold The threshold of the feature's skew and drift.\n"
           "# TYPE predictd_feature_threshold gauge\n"
           "# HELP predictd_feature_unseen_values_total String values not seen in training.\n"
           "# TYPE predictd_feature_unseen_values_total counter\n"
           "# HELP predictd_feature_out_of_range_total Numbers outside the training range "
           "(+-Infinity included).\n"
           "# TYPE predictd_feature_out_of_range_total counter\n"
           "# HELP predictd_monitored_instances_total Instances counted by monitoring.\n"
           "# TYPE predictd_monitored_instances_total counter\n");
}

/* A label value with \, " and newline escaped. */
static void label(rt_buf *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            rt_buf_printf(o, "\\%c", *s);
        else if (*s == '\n')
            rt_buf_puts(o, "\\n");
        else
            rt_buf_append(o, s, 1);
    }
}

int srv_monitor_prometheus(srv_monitor *m, rt_buf *o)
{
    rotate(m, true);
    uint64_t *cur = malloc((m->ncount + 1) * sizeof *cur);
    if (!cur)
        return -1;
    pthread_mutex_lock(&m->mu);
    sums(m, cur);
    rt_buf_printf(o, "predictd_monitored_instances_total{model=\"%s\",version=\"%lld\"} %llu\n",
                  m->name, (long long)m->version, (unsigned long long)cur[m->ncount]);
    static const char *const series[] = {"predictd_feature_skew", "predictd_feature_drift",
                                         "predictd_feature_threshold",
                                         "predictd_feature_unseen_values_total",
                                         "predictd_feature_out_of_range_total"};
    for (size_t s = 0; s < sizeof series / sizeof *series; s++)
        for (size_t i = 0; i < m->nf; i++) {
            const mfeat *f = &m->f[i];
            if ((s == 3 && f->numeric) || (s == 4 && !f->numeric))
                continue;
            rt_buf_printf(o, "%s{model=\"%s\",version=\"%lld\",feature=\"", series[s], m->name,
                          (long long)m->version);
            label(o, f->tr->name);
            rt_buf_puts(o, "\"} ");
            double v = s == 0 ? f->skew : s == 1 ? f->drift : f->thr;
            if (s == 3)
                rt_buf_printf(o, "%llu\n", (unsigned long long)cur[f->off + f->nv + S_UNSEEN]);
            else if (s == 4)
                rt_buf_printf(o, "%llu\n",
                              (unsigned long long)(cur[f->off + f->nb + N_BELOW] +
                                                   cur[f->off + f->nb + N_ABOVE] +
                                                   cur[f->off + f->nb + N_NINF] +
                                                   cur[f->off + f->nb + N_PINF]));
            else if (v < 0)
                rt_buf_puts(o, "NaN\n");
            else
                rt_buf_printf(o, "%.9g\n", v);
        }
    pthread_mutex_unlock(&m->mu);
    free(cur);
    return rt_buf_failed(o) ? -1 : 0;
}
