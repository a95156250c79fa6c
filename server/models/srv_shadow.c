/*
 * srv_shadow.c — shadow traffic: a sampled request that a version answered
 * is run again on the model's shadow version, after the client's answer was
 * sent, on a thread of its own fed by a bounded queue (srv_pool: at most
 * max_queue runs and max_bytes bytes of copied requests and answers wait;
 * what does not fit is dropped and counted, never waited for). The shadow's
 * answer is compared with the served one instance by instance: the class
 * (class_ids, classes, or the best label of :classify) and the score
 * (logistic, predictions, or :regress's value), and the divergence goes to
 * the metrics per model, served version and shadow version. A /v2 infer
 * request is replayed as one (its JSON header ends where its value ends)
 * and compared by its class_ids / classes and logistic / predictions
 * tensors.
 *
 * Answers are parsed with cJSON here, on the shadow thread: never on the
 * request path.
 */
#include "srv.h"
#include "srv_limits.h"

#include <cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pair {
    char model[SRV_NAME_MAX + 1];
    int64_t version, shadow;
    uint64_t compared, errors;         /* requests */
    uint64_t instances, class_diff;    /* instances compared, classes that differ */
    uint64_t scored;                   /* instances with a score on both sides */
    double abs_diff;                   /* sum of |served score - shadow score| */
    double seconds;                    /* shadow run time, summed */
} pair;

typedef struct job {
    srv_shadow *s;
    size_t held;                       /* bytes of s->queued it holds */
    srv_version *shadow;               /* its reference */
    char model[SRV_NAME_MAX + 1];
    int64_t version;
    rt_method method;
    srv_proto proto;                   /* the door the request came in by */
    char *body, *answer;
    size_t body_len, answer_len;
} job;

struct srv_shadow {
    srv_pool *pool;
    rt_json_params json;
    rt_ctx *ctx;                       /* the shadow thread's */
    size_t max_bytes;                  /* budget of the queued jobs' bytes */
    atomic_size_t queued;              /* bytes the queued (and running) jobs hold */
    pthread_mutex_t mu;                /* guards the counters below */
    pair pairs[SRV_SHADOW_MAX_PAIRS];
    size_t n_pairs;
    uint64_t dropped, lost;            /* queue full; series cap reached */
    uint64_t by_proto[2];              /* requests compared, by srv_proto */
};

/* One instance's class (-1: none) and score (NAN: none) from an answer. */
typedef struct verdict {
    double cls, score;
} verdict;

static double first_number(const cJSON *x)
{
    if (cJSON_IsArray(x))
        x = cJSON_GetArrayItem(x, 0);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* Class as a number: class_ids' value, or a hash of the class name. */
static double class_of(const cJSON *x)
{
    if (cJSON_IsArray(x))
        x = cJSON_GetArrayItem(x, 0);
    if (cJSON_IsNumber(x))
        return x->valuedouble;
    const char *s = cJSON_GetStringValue(x);
    return s ? (double)srv_route_key_hash(s, strlen(s)) : NAN;
}

/* An Open Inference Protocol answer: "outputs" is a list of tensors. */
static bool is_v2(const cJSON *o)
{
    return cJSON_IsArray(o) && cJSON_IsObject(o->child) &&
           cJSON_GetObjectItemCaseSensitive(o->child, "datatype") != NULL;
}

/* Element i * width of output tensor `name` of a v2 answer (NULL: none, or
 * sent as binary data). */
static const cJSON *v2_element(const cJSON *o, const char *name, size_t i)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, o)
    {
        const char *tn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        if (!tn || strcmp(tn, name) != 0)
            continue;
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
        double w = cJSON_GetArraySize(shape) == 2
                       ? cJSON_GetArrayItem(shape, 1)->valuedouble
                       : 1;
        return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, "data"),
                                  (int)(i * (size_t)(w > 0 ? w : 1)));
    }
    return NULL;
}

/* Instance i of a :predict answer (rows or columns), of :classify /
 * :regress results, or of a /v2 infer answer. */
static verdict instance(const cJSON *doc, size_t i)
{
    verdict v = {NAN, NAN};
    const cJSON *o2 = cJSON_GetObjectItemCaseSensitive(doc, "outputs");
    if (is_v2(o2)) {
        const cJSON *c = v2_element(o2, "class_ids", i);
        v.cls = class_of(c ? c : v2_element(o2, "classes", i));
        const cJSON *s = v2_element(o2, "logistic", i);
        v.score = first_number(s ? s : v2_element(o2, "predictions", i));
        return v;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "predictions");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, "outputs");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(doc, "results");
    if (p || (o && !cJSON_IsObject(o))) { /* rows, or one columnar output */
        const cJSON *it = cJSON_GetArrayItem(p ? p : o, (int)i);
        if (!cJSON_IsObject(it)) {
            v.score = first_number(it);
            return v;
        }
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "class_ids");
        v.cls = class_of(c ? c : cJSON_GetObjectItemCaseSensitive(it, "classes"));
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "logistic");
        v.score = first_number(s ? s : cJSON_GetObjectItemCaseSensitive(it, "predictions"));
    } else if (o) { /* columns: name -> one value per instance */
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "class_ids");
        v.cls = class_of(cJSON_GetArrayItem(c ? c : cJSON_GetObjectItemCaseSensitive(o, "classes"),
                                            (int)i));
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "logistic");
        v.score = first_number(
            cJSON_GetArrayItem(s ? s : cJSON_GetObjectItemCaseSensitive(o, "predictions"), (int)i));
    } else if (r) {
        const cJSON *it = cJSON_GetArrayItem(r, (int)i);
        if (!cJSON_IsArray(it)) { /* regress: the value */
            v.score = first_number(it);
            return v;
        }
        /* classify: [[label, score], ...]: the best label; the last score */
        double best = -INFINITY;
        const cJSON *ls;
        cJSON_ArrayForEach(ls, it)
        {
            double sc = first_number(cJSON_GetArrayItem(ls, 1));
            if (sc > best) {
                best = sc;
                v.cls = class_of(cJSON_GetArrayItem(ls, 0));
            }
            v.score = sc;
        }
    }
    return v;
}

static size_t instances(const cJSON *doc)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "predictions");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, "outputs");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(doc, "results");
    if (p || r)
        return (size_t)cJSON_GetArraySize(p ? p : r);
    if (is_v2(o)) { /* the first dimension of its first output */
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o->child, "shape");
        return cJSON_IsNumber(cJSON_GetArrayItem(shape, 0))
                   ? (size_t)cJSON_GetArrayItem(shape, 0)->valuedouble
                   : 0;
    }
    if (cJSON_IsObject(o))
        return o->child ? (size_t)cJSON_GetArraySize(o->child) : 0;
    return (size_t)cJSON_GetArraySize(o);
}

static pair *find_pair(srv_shadow *s, const job *j, int64_t shadow)
{
    for (size_t i = 0; i < s->n_pairs; i++)
        if (s->pairs[i].version == j->version && s->pairs[i].shadow == shadow &&
            !strcmp(s->pairs[i].model, j->model))
            return &s->pairs[i];
    if (s->n_pairs == SRV_SHADOW_MAX_PAIRS)
        return NULL;
    pair *p = &s->pairs[s->n_pairs++];
    memset(p, 0, sizeof *p);
    memcpy(p->model, j->model, sizeof p->model);
    p->version = j->version;
    p->shadow = shadow;
    return p;
}

static void job_free(job *j)
{
    if (!j)
        return;
    srv_version_release(j->shadow);
    atomic_fetch_sub(&j->s->queued, j->held);
    free(j->body);
    free(j->answer);
    free(j);
}

/* The shadow thread: run, compare, count. */
static void run_job(void *fn_ctx, void *arg, int worker)
{
    (void)worker;
    srv_shadow *s = fn_ctx;
    job *j = arg;
    rt_buf out;
    rt_buf_init(&out);
    rt_err err = {{0}};
    int64_t t0 = rt_time_now_ns();
    rt_status st = s->ctx ? rt_json_handle(srv_version_model(j->shadow), j->method, j->body,
                                           j->body_len, &s->json, s->ctx, &out, &err)
                          : RT_ERR_NOMEM;
    double secs = (double)(rt_time_now_ns() - t0) / 1e9;
    cJSON *a = cJSON_ParseWithLength(j->answer, j->answer_len);
    cJSON *b = st == RT_OK ? cJSON_ParseWithLength(out.data, out.len) : NULL;
    size_t n = instances(a);
    bool ok = st == RT_OK && b && n == instances(b);
    uint64_t diff = 0, scored = 0;
    double abs_diff = 0;
    for (size_t i = 0; ok && i < n; i++) {
        verdict x = instance(a, i), y = instance(b, i);
        if (!isnan(x.cls) || !isnan(y.cls))
            diff += !(x.cls == y.cls);
        if (!isnan(x.score) && !isnan(y.score)) {
            abs_diff += fabs(x.score - y.score);
            scored++;
        }
    }
    pthread_mutex_lock(&s->mu);
    pair *p = find_pair(s, j, srv_version_number(j->shadow));
    if (!p) {
        s->lost++;
    } else if (!ok) {
        p->errors++;
    } else {
        p->compared++;
        s->by_proto[j->proto == SRV_PROTO_GRPC]++;
        p->instances += n;
        p->class_diff += diff;
        p->scored += scored;
        p->abs_diff += abs_diff;
    }
    if (p)
        p->seconds += secs;
    pthread_mutex_unlock(&s->mu);
    if (!ok && st != RT_OK)
        srv_log(SRV_LOG_DEBUG, "shadow: model %s version %lld failed a request version %lld "
                               "answered: %s",
                j->model, (long long)srv_version_number(j->shadow), (long long)j->version,
                err.msg);
    cJSON_Delete(a);
    cJSON_Delete(b);
    rt_buf_free(&out);
    job_free(j);
}

rt_status srv_shadow_new(size_t max_queue, size_t max_bytes, const rt_json_params *json,
                         srv_shadow **out, rt_err *err)
{
    *out = NULL;
    srv_shadow *s = calloc(1, sizeof *s);
    if (!s || !(s->ctx = rt_ctx_new())) {
        free(s);
        return rt_err_set(err, RT_ERR_NOMEM, "shadow: out of memory");
    }
    s->json = *json;
    s->max_bytes = max_bytes;
    atomic_init(&s->queued, 0);
    pthread_mutex_init(&s->mu, NULL);
    rt_status st = srv_pool_new(1, max_queue, run_job, s, &s->pool, err);
    if (st != RT_OK) {
        rt_ctx_free(s->ctx);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return st;
    }
    *out = s;
    return RT_OK;
}

void srv_shadow_free(srv_shadow *s)
{
    if (!s)
        return;
    srv_pool_free(s->pool); /* runs what is queued, then joins */
    rt_ctx_free(s->ctx);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

bool srv_shadow_submit(srv_shadow *s, const srv_served *r, srv_version *shadow)
{
    /* the budget first: nothing is copied for a run that does not fit */
    size_t need = sizeof(job) + r->body_len + r->answer_len;
    size_t was = atomic_fetch_add(&s->queued, need);
    job *j = NULL;
    if (need <= s->max_bytes && was <= s->max_bytes - need)
        j = calloc(1, sizeof *j);
    if (!j)
        atomic_fetch_sub(&s->queued, need);
    if (j) {
        j->s = s;
        j->held = need;
        j->shadow = shadow;
        snprintf(j->model, sizeof j->model, "%s", r->model);
        j->version = r->version;
        j->method = r->method;
        j->proto = r->proto;
        j->body = srv_copy_bytes(r->body, r->body_len);
        j->body_len = r->body_len;
        j->answer = srv_copy_bytes(r->answer, r->answer_len);
        j->answer_len = r->answer_len;
    }
    if (j && j->body && j->answer && srv_pool_submit(s->pool, j))
        return true;
    if (j)
        job_free(j);
    else
        srv_version_release(shadow);
    pthread_mutex_lock(&s->mu);
    s->dropped++;
    pthread_mutex_unlock(&s->mu);
    return false;
}

rt_status srv_shadow_metrics(srv_shadow *s, rt_buf *o)
{
    if (!s)
        return RT_OK;
    pthread_mutex_lock(&s->mu);
    rt_buf_printf(o, "# HELP predictd_shadow_dropped_total Shadow runs dropped: the shadow "
                     "queue was full (256 runs or shadow_queue_bytes).\n"
                     "# TYPE predictd_shadow_dropped_total counter\n"
                     "predictd_shadow_dropped_total %llu\n"
                     "# HELP predictd_shadow_queued_bytes Bytes of requests and answers "
                     "waiting for their shadow run (at most shadow_queue_bytes).\n"
                     "# TYPE predictd_shadow_queued_bytes gauge\n"
                     "predictd_shadow_queued_bytes %zu\n",
                  (unsigned long long)(s->dropped + s->lost), (size_t)atomic_load(&s->queued));
    rt_buf_printf(o, "# HELP predictd_shadow_protocol_requests_total Requests run on a shadow "
                     "version and compared, by the door they came in by.\n"
                     "# TYPE predictd_shadow_protocol_requests_total counter\n"
                     "predictd_shadow_protocol_requests_total{protocol=\"rest\"} %llu\n"
                     "predictd_shadow_protocol_requests_total{protocol=\"grpc\"} %llu\n",
                  (unsigned long long)s->by_proto[0], (unsigned long long)s->by_proto[1]);
    static const char *const names[] = {
        "requests_total", "errors_total", "instances_total", "class_differs_total",
        "abs_diff_sum", "scored_instances_total", "seconds_total", "class_differs_ratio",
        "abs_diff_mean"};
    static const char *const helps[] = {
        "Requests run on the shadow version and compared.",
        "Requests the shadow version failed (the served version answered 200).",
        "Instances compared.",
        "Instances whose class differs between the served and the shadow answer.",
        "Sum of |served - shadow| of logistic (classifiers) or predictions (regressors).",
        "Instances with a score on both sides.",
        "Time the shadow runs took.",
        "Share of compared instances whose class differs.",
        "Mean absolute difference of logistic / predictions."};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        bool gauge = k >= 7;
        rt_buf_printf(o, "# HELP predictd_shadow_%s %s\n# TYPE predictd_shadow_%s %s\n", names[k],
                      helps[k], names[k], gauge ? "gauge" : "counter");
        for (size_t i = 0; i < s->n_pairs; i++) {
            const pair *p = &s->pairs[i];
            double v[] = {(double)p->compared, (double)p->errors, (double)p->instances,
                          (double)p->class_diff, p->abs_diff, (double)p->scored, p->seconds,
                          p->instances ? (double)p->class_diff / (double)p->instances : 0,
                          p->scored ? p->abs_diff / (double)p->scored : 0};
            rt_buf_printf(o, "predictd_shadow_%s{model=\"%s\",version=\"%lld\","
                             "shadow_version=\"%lld\"} %.9g\n",
                          names[k], p->model, (long long)p->version, (long long)p->shadow, v[k]);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rt_buf_failed(o) ? RT_ERR_NOMEM : RT_OK; /* its errors stick: checked once */
}
