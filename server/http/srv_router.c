/*
 * srv_router.c — maps an HTTP method and path to a route: TensorFlow
 * Serving's REST paths, Cloud ML Engine's predict path, the model list,
 * health and readiness probes, and the Open Inference Protocol's (KServe
 * v2) paths. Pure: it knows no
 * models, so it is tested on its own (tests/unit/test_srv_router.c).
 */
#include "srv.h"

#include <stdio.h>
#include <string.h>

#define MAX_SEGS 12
#define MAX_PATH 1024

typedef struct seg {
    const char *p;
    size_t n;
} seg;

static bool seg_is(const seg *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->n == n && !memcmp(s->p, lit, n);
}

static void bad(srv_route *r, int code, const char *fmt, const char *a, size_t an)
{
    r->kind = SRV_ROUTE_BAD;
    r->http_code = code;
    snprintf(r->msg, sizeof r->msg, fmt, (int)(an > 100 ? 100 : an), a);
}

/* Copies a model name into r->model; false (with the route set to 404) if
 * the name cannot be a model's. */
static bool take_model(srv_route *r, const seg *s)
{
    if (!srv_name_valid(s->p, s->n)) {
        bad(r, 404, "model '%.*s' not found (model names are [A-Za-z0-9_.-]+)", s->p, s->n);
        return false;
    }
    memcpy(r->model, s->p, s->n);
    r->model[s->n] = '\0';
    return true;
}

static bool take_version(srv_route *r, const seg *s)
{
    int64_t v = srv_parse_version(s->p, s->n);
    if (v < 0) {
        bad(r, 400, "version '%.*s' is not a version number (use digits, or /labels/NAME)", s->p,
            s->n);
        return false;
    }
    r->version = v;
    return true;
}

static bool take_label(srv_route *r, const seg *s)
{
    if (!srv_name_valid(s->p, s->n)) {
        bad(r, 400, "label '%.*s' is not a valid label name ([A-Za-z0-9_.-]+)", s->p, s->n);
        return false;
    }
    memcpy(r->label, s->p, s->n);
    r->label[s->n] = '\0';
    return true;
}

static bool is_get(const char *m)
{
    return !strcmp(m, "GET") || !strcmp(m, "HEAD");
}

/* Sets the route to kind if the method is GET/HEAD, else 405. */
static void want_get(srv_route *r, const char *method, srv_route_kind kind)
{
    if (is_get(method)) {
        r->kind = kind;
        return;
    }
    r->kind = SRV_ROUTE_BAD;
    r->http_code = 405;
    snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed here; use GET", method);
}

/* /v1/models/{m}[/versions/{v}|/labels/{l}][/metadata][:verb] */
static void route_models(srv_route *r, const char *method, const seg *s, size_t ns,
                         const char *verb, size_t verb_len)
{
    if (!take_model(r, &s[0]))
        return;
    bool metadata = false, monitoring = false;
    size_t i = 1;
    while (i < ns) {
        if (seg_is(&s[i], "versions") && i + 1 < ns) {
            if (r->version >= 0 || r->label[0]) {
                bad(r, 400, "%.*sgive a version or a label, not both", "", 0);
                return;
            }
            if (!take_version(r, &s[i + 1]))
                return;
            i += 2;
        } else if (seg_is(&s[i], "labels") && i + 1 < ns) {
            if (r->version >= 0 || r->label[0]) {
                bad(r, 400, "%.*sgive a version or a label, not both", "", 0);
                return;
            }
            if (!take_label(r, &s[i + 1]))
                return;
            i += 2;
        } else if (seg_is(&s[i], "metadata") && i + 1 == ns) {
            metadata = true;
            i++;
        } else if (seg_is(&s[i], "monitoring") && i + 1 == ns) {
            monitoring = true;
            i++;
        } else {
            r->kind = SRV_ROUTE_NONE;
            return;
        }
    }
    if (verb) {
        if (metadata || monitoring) {
            r->kind = SRV_ROUTE_NONE;
            return;
        }
        if (verb_len == 7 && !memcmp(verb, "predict", 7))
            r->method = RT_METHOD_PREDICT;
        else if (verb_len == 8 && !memcmp(verb, "classify", 8))
            r->method = RT_METHOD_CLASSIFY;
        else if (verb_len == 7 && !memcmp(verb, "regress", 7))
            r->method = RT_METHOD_REGRESS;
        else if (verb_len == 7 && !memcmp(verb, "explain", 7))
            r->method = RT_METHOD_EXPLAIN;
        else {
            bad(r, 404, "unknown method ':%.*s' (use :predict, :classify, :regress or :explain)",
                verb, verb_len);
            return;
        }
        if (strcmp(method, "POST") != 0) {
            r->kind = SRV_ROUTE_BAD;
            r->http_code = 405;
            snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed for :%.*s; use POST",
                     method, (int)verb_len, verb);
            return;
        }
        r->kind = SRV_ROUTE_INFER;
        return;
    }
    want_get(r, method,
             metadata ? SRV_ROUTE_METADATA : monitoring ? SRV_ROUTE_MONITORING : SRV_ROUTE_STATUS);
}

/* /v1/projects/{p}/models/{m}[/versions/{v}]:predict — {v} a number or label */
static void route_cmle(srv_route *r, const char *method, const seg *s, size_t ns,
                       const char *verb, size_t verb_len)
{
    r->cmle = true;
    if (ns != 3 && ns != 5) {
        r->kind = SRV_ROUTE_NONE;
        return;
    }
    if (!seg_is(&s[1], "models") || (ns == 5 && !seg_is(&s[3], "versions"))) {
        r->kind = SRV_ROUTE_NONE;
        return;
    }
    if (!take_model(r, &s[2]))
        return;
    if (ns == 5) {
        const seg *v = &s[4];
        if (srv_parse_version(v->p, v->n) >= 0) {
            if (!take_version(r, v))
                return;
        } else if (!take_label(r, v)) {
            return;
        }
    }
    bool explain = verb && verb_len == 7 && memcmp(verb, "explain", 7) == 0;
    if (!verb || (!explain && (verb_len != 7 || memcmp(verb, "predict", 7) != 0))) {
        if (!verb) {
            r->kind = SRV_ROUTE_NONE;
            return;
        }
        bad(r, 404, "unknown method ':%.*s' (this path supports :predict and :explain)", verb,
            verb_len);
        return;
    }
    if (strcmp(method, "POST") != 0) {
        r->kind = SRV_ROUTE_BAD;
        r->http_code = 405;
        snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed for :%s; use POST", method,
                 explain ? "explain" : "predict");
        return;
    }
    r->method = explain ? RT_METHOD_EXPLAIN : RT_METHOD_PREDICT;
    r->kind = SRV_ROUTE_INFER;
}

/* The Open Inference Protocol (KServe v2): /v2, /v2/health/{live,ready},
 * /v2/models/{m}[/versions/{v}][/ready|/infer]; {v} a version number or a
 * label. */
static void route_v2(srv_route *r, const char *method, const seg *s, size_t ns)
{
    if (ns == 1) {
        want_get(r, method, SRV_ROUTE_V2_SERVER);
        return;
    }
    if (ns == 3 && seg_is(&s[1], "health") && seg_is(&s[2], "live")) {
        want_get(r, method, SRV_ROUTE_HEALTHZ);
        return;
    }
    if (ns == 3 && seg_is(&s[1], "health") && seg_is(&s[2], "ready")) {
        want_get(r, method, SRV_ROUTE_V2_READY);
        return;
    }
    if (ns < 3 || !seg_is(&s[1], "models"))
        return;
    size_t i = 3;
    bool versioned = ns >= 5 && seg_is(&s[3], "versions");
    if (versioned)
        i = 5;
    if (ns > i + 1 || (ns == 4 && !versioned && !seg_is(&s[3], "ready") &&
                       !seg_is(&s[3], "infer")))
        return;
    const seg *tail = ns == i + 1 ? &s[i] : NULL;
    if (tail && !seg_is(tail, "ready") && !seg_is(tail, "infer"))
        return;
    if (!take_model(r, &s[2]))
        return;
    if (versioned) {
        if (srv_parse_version(s[4].p, s[4].n) >= 0) {
            if (!take_version(r, &s[4]))
                return;
        } else if (!take_label(r, &s[4])) {
            return;
        }
    }
    if (!tail) {
        want_get(r, method, SRV_ROUTE_V2_METADATA);
    } else if (seg_is(tail, "ready")) {
        want_get(r, method, SRV_ROUTE_V2_MODEL_READY);
    } else if (strcmp(method, "POST") != 0) {
        r->kind = SRV_ROUTE_BAD;
        r->http_code = 405;
        snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed for /infer; use POST",
                 method);
    } else {
        r->method = RT_METHOD_INFER;
        r->kind = SRV_ROUTE_INFER;
    }
}

void srv_route_request(const char *method, const char *url, srv_route *r)
{
    memset(r, 0, sizeof *r);
    r->version = -1;
    r->kind = SRV_ROUTE_NONE;
    if (!method || !url || url[0] != '/')
        return;
    size_t len = strlen(url);
    if (len >= MAX_PATH)
        return;
    char path[MAX_PATH];
    memcpy(path, url, len + 1);
    if (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';

    seg s[MAX_SEGS];
    size_t ns = 0;
    const char *p = path + 1;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || ns == MAX_SEGS)
            return; /* "//" or too deep: no such path */
        s[ns].p = p;
        s[ns].n = n;
        ns++;
        p += n;
        if (*p == '/')
            p++;
    }
    if (ns == 0)
        return;
    /* A ":verb" ends the last segment (model names cannot hold ':'). */
    const char *verb = NULL;
    size_t verb_len = 0;
    const char *colon = memchr(s[ns - 1].p, ':', s[ns - 1].n);
    if (colon) {
        verb = colon + 1;
        verb_len = s[ns - 1].n - (size_t)(colon + 1 - s[ns - 1].p);
        s[ns - 1].n = (size_t)(colon - s[ns - 1].p);
        if (s[ns - 1].n == 0)
            return;
    }
    for (size_t i = 0; i < ns; i++)
        if (memchr(s[i].p, ':', s[i].n))
            return;

    if (!verb && ns == 1 && seg_is(&s[0], "healthz")) {
        want_get(r, method, SRV_ROUTE_HEALTHZ);
    } else if (!verb && ns == 1 && seg_is(&s[0], "readyz")) {
        want_get(r, method, SRV_ROUTE_READYZ);
    } else if (!verb && ns == 3 && seg_is(&s[0], "monitoring") && seg_is(&s[1], "prometheus") &&
               seg_is(&s[2], "metrics")) {
        want_get(r, method, SRV_ROUTE_METRICS);
    } else if (seg_is(&s[0], "v2")) {
        r->v2 = true;
        if (!verb)
            route_v2(r, method, s, ns);
    } else if (seg_is(&s[0], "v1") && ns >= 2) {
        if (seg_is(&s[1], "models")) {
            if (ns == 2) {
                if (!verb)
                    want_get(r, method, SRV_ROUTE_LIST);
                return;
            }
            route_models(r, method, s + 2, ns - 2, verb, verb_len);
        } else if (seg_is(&s[1], "projects") && ns >= 3) {
            route_cmle(r, method, s + 2, ns - 2, verb, verb_len);
        }
    }
}
