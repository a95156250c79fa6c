/*
 * srv_router.c — maps an HTTP method and path to a row of the route table
 * (srv_routes.c: TensorFlow Serving's REST paths, Cloud ML Engine's predict
 * path, the model list, health and readiness probes, the Open Inference
 * Protocol's (KServe v2) paths): the rows are tried in order, each path
 * pattern read segment by segment against the request's (the patterns'
 * form: srv_http_internal.h, srv_route_row). Pure: it knows no models, so
 * it is tested on its own (tests/unit/server/test_srv_router.c).
 */
#include "srv_http_internal.h"
#include "srv_limits.h"

#include <stdio.h>
#include <string.h>

/* Placeholders of one row checked after its whole path matched, at most. */
#define MAX_LATE 4

typedef struct seg {
    const char *p;
    size_t n;
} seg;

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

/* A request's path: its segments and the ":verb" that ended the last. */
typedef struct path {
    seg s[SRV_ROUTE_MAX_SEGS];
    size_t ns;
    const char *verb; /* NULL: none */
    size_t verb_len;
} path;

/* How far one row got. */
typedef enum { M_FAIL, M_OK, M_STOP } mres; /* another row / matched / r is BAD */

/* A row's match in progress. */
typedef struct match {
    const srv_route_row *row;
    const path *in;
    size_t i; /* the request's next segment */
    struct {
        const char *name; /* the placeholder, "{...}" */
        size_t n;
        const seg *s;
    } late[MAX_LATE];
    size_t n_late;
    srv_route *r;
} match;

/* The characters that end a pattern's word (a table: every request walks
 * the patterns). */
static const bool DELIM[256] = {
    ['\0'] = true, ['/'] = true, ['['] = true, [']'] = true, ['|'] = true, [':'] = true};

static bool is_delim(char c)
{
    return DELIM[(unsigned char)c];
}

/* The end of the pattern word that starts at p. */
static const char *pat_end(const char *p)
{
    while (!is_delim(*p))
        p++;
    return p;
}

static bool pat_is(const char *p, size_t n, const char *lit)
{
    return strlen(lit) == n && !memcmp(p, lit, n);
}

/* The length of the pattern word at p when request segment s is that word,
 * else 0. Every request walks the table, so the loop compares bytes alone
 * (a segment holds no '\0', so it stops at the pattern's end) and the
 * word's end is checked after: a segment may hold '[', ']' or '|'. */
static size_t word_is(const char *p, const seg *s)
{
    for (size_t k = 0; k < s->n; k++)
        if (p[k] != s->p[k])
            return 0;
    return pat_end(p) == p + s->n ? s->n : 0;
}

/* Takes segment s as the placeholder name (with its braces, n bytes) into
 * r; false when s is not one (r is BAD then). The patterns' placeholders
 * differ in their first letter and length. */
static bool take(srv_route *r, const char *name, size_t n, const seg *s)
{
    switch (name[1]) {
    case 'm': return take_model(r, s); /* {model} */
    case 'l': return take_label(r, s); /* {label} */
    case 'v':
        if (n == sizeof "{version}" - 1)
            return take_version(r, s);
        /* {version_or_label} */
        return srv_parse_version(s->p, s->n) >= 0 ? take_version(r, s) : take_label(r, s);
    default: return true; /* {project}: any segment */
    }
}

/* The pattern word at *pp (after its '/') against the request's next
 * segment; *pp moves past the word. */
static mres match_seg(match *m, const char **pp)
{
    const char *p = *pp;
    if (m->i >= m->in->ns)
        return M_FAIL;
    const seg *s = &m->in->s[m->i];
    if (p[0] != '{') {
        size_t n = word_is(p, s);
        if (!n)
            return M_FAIL;
        *pp = p + n;
    } else {
        const char *e = pat_end(p);
        size_t n = (size_t)(e - p);
        if (m->row->strict) {
            if (!take(m->r, p, n, s))
                return M_STOP;
        } else {
            if (m->n_late == MAX_LATE)
                return M_FAIL; /* a pattern with more placeholders than MAX_LATE */
            m->late[m->n_late].name = p;
            m->late[m->n_late].n = n;
            m->late[m->n_late++].s = s;
        }
        *pp = e;
    }
    m->i++;
    return M_OK;
}

/* Whether the alternative at p ("/a/{b}", up to '|' or ']') fits the
 * request's segments from i: as many left, its words the same. */
static bool alt_fits(const match *m, const char *p, size_t i)
{
    while (*p == '/') {
        if (i >= m->in->ns)
            return false;
        const seg *s = &m->in->s[i++];
        if (p[1] != '{' && !word_is(p + 1, s))
            return false;
        p = pat_end(p + 1);
    }
    return true;
}

/* The most alternatives of a group. */
#define MAX_ALTS 4

/* An optional group "[alt|alt]" at p (after '['): the first alternative
 * that fits is taken. *end is set past the group's ']'. */
static mres match_group(match *m, const char *p, const char **end)
{
    const char *close = strchr(p, ']');
    *end = close ? close + 1 : p + strlen(p);
    if (m->i >= m->in->ns)
        return M_OK; /* nothing left to take */
    const char *alt[MAX_ALTS];
    size_t n = 0;
    for (const char *a = p; a && n < MAX_ALTS; a = memchr(a, '|', (size_t)(*end - a))) {
        if (*a == '|')
            a++;
        alt[n++] = a;
    }
    for (size_t k = 0; k < n; k++) {
        const char *a = alt[k];
        if (!alt_fits(m, a, m->i))
            continue;
        while (*a == '/') {
            a++;
            mres res = match_seg(m, &a);
            if (res != M_OK)
                return res;
        }
        if (!m->row->strict)
            return M_OK;
        /* TF Serving's paths: one version or label */
        for (size_t j = 0; j < n; j++)
            if (alt_fits(m, alt[j], m->i)) {
                bad(m->r, 400, "%.*sgive a version or a label, not both", "", 0);
                return M_STOP;
            }
        return M_OK;
    }
    return M_OK;
}

/* The verb of "{predict|classify}" at p (after ":{") named [v, v + n), or
 * -1 when the row does not take it. */
static int find_verb(const char *p, const char *v, size_t n)
{
    static const struct {
        const char *name;
        rt_method method;
    } VERBS[] = {{"predict", RT_METHOD_PREDICT},
                 {"classify", RT_METHOD_CLASSIFY},
                 {"regress", RT_METHOD_REGRESS},
                 {"explain", RT_METHOD_EXPLAIN}};
    while (*p && *p != '}') {
        size_t k = strcspn(p, "|}");
        if (k == n && !memcmp(p, v, n))
            for (size_t i = 0; i < sizeof VERBS / sizeof VERBS[0]; i++)
                if (pat_is(p, k, VERBS[i].name))
                    return (int)VERBS[i].method;
        p += k + (p[k] == '|');
    }
    return -1;
}

/* The 405 of a row whose method is not the request's. */
static void wrong_method(srv_route *r, const srv_route_row *row, const char *method, const path *in)
{
    r->kind = SRV_ROUTE_BAD;
    r->http_code = 405;
    if (!strcmp(row->method, "GET")) {
        snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed here; use GET", method);
    } else if (in && in->verb) {
        snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed for :%.*s; use %s", method,
                 (int)in->verb_len, in->verb, row->method);
    } else { /* its last word: "/infer" */
        const char *w = row->path, *last = row->path;
        while ((w = strchr(w, '/')) != NULL)
            if (*++w != '{')
                last = w;
        snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed for /%.*s; use %s", method,
                 (int)(pat_end(last) - last), last, row->method);
    }
}

/* Whether the row takes the request's method: a GET row takes HEAD too. */
static bool method_ok(const srv_route_row *row, const char *method)
{
    if (row->method[0] == 'G' && !strcmp(row->method, "GET"))
        return is_get(method);
    return !strcmp(method, row->method);
}

/* The checks once a row's whole path matched: its placeholders (unless
 * strict: checked as read), its verb, the method. */
static mres match_end(match *m, const char *method, const char *verbs)
{
    srv_route *r = m->r;
    const path *in = m->in;
    if (m->i != in->ns || (!verbs && in->verb))
        return M_FAIL;
    for (size_t k = 0; k < m->n_late; k++)
        if (!take(r, m->late[k].name, m->late[k].n, m->late[k].s))
            return M_STOP;
    r->method = m->row->run;
    if (verbs) {
        if (!in->verb)
            return M_FAIL;
        int v = find_verb(verbs + 2, in->verb, in->verb_len);
        if (v < 0) {
            r->kind = SRV_ROUTE_BAD;
            r->http_code = 404;
            snprintf(r->msg, sizeof r->msg, "unknown method ':%.*s' (%s)",
                     (int)(in->verb_len > 100 ? 100 : in->verb_len), in->verb,
                     m->row->verb_help ? m->row->verb_help : "see docs/daemon.md");
            return M_STOP;
        }
        r->method = (rt_method)v;
    }
    if (!method_ok(m->row, method)) {
        wrong_method(r, m->row, method, in);
        return M_STOP;
    }
    r->kind = m->row->kind;
    r->row = m->row;
    return M_OK;
}

/* Row against the request's path; r holds what it took. */
static mres match_row(const srv_route_row *row, const char *method, const path *in, srv_route *r)
{
    /* most rows fail on their first word's first letter */
    if (row->path[1] != in->s[0].p[0])
        return M_FAIL;
    match m; /* late[] is filled as it is used */
    m.row = row;
    m.in = in;
    m.i = 0;
    m.n_late = 0;
    m.r = r;
    r->model[0] = r->label[0] = '\0';
    r->version = -1;
    const char *p = row->path;
    while (*p && *p != ':') {
        mres res;
        if (*p == '[') {
            res = match_group(&m, p + 1, &p);
        } else {
            p++;
            res = match_seg(&m, &p);
        }
        if (res != M_OK)
            return res;
    }
    return match_end(&m, method, *p == ':' ? p : NULL);
}

static void no_route(srv_route *r)
{
    memset(r, 0, sizeof *r);
    r->version = -1;
    r->kind = SRV_ROUTE_NONE;
}

void srv_route_as(srv_route_kind kind, const char *method, srv_route *r)
{
    no_route(r);
    size_t n;
    const srv_route_row *rows = srv_routes(&n);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].kind != kind)
            continue;
        if (!method_ok(&rows[i], method)) {
            wrong_method(r, &rows[i], method, NULL);
            return;
        }
        r->kind = kind;
        r->row = &rows[i];
        return;
    }
}

void srv_route_request(const char *method, const char *url, srv_route *r)
{
    no_route(r);
    if (!method || !url || url[0] != '/')
        return;
    size_t len = strlen(url);
    if (len >= SRV_ROUTE_MAX_PATH)
        return;
    char buf[SRV_ROUTE_MAX_PATH];
    memcpy(buf, url, len + 1);
    if (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';

    path in = {.ns = 0};
    const char *p = buf + 1;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || in.ns == SRV_ROUTE_MAX_SEGS)
            return; /* "//" or too deep: no such path */
        in.s[in.ns].p = p;
        in.s[in.ns].n = n;
        in.ns++;
        p += n;
        if (*p == '/')
            p++;
    }
    if (in.ns == 0)
        return;
    /* A ":verb" ends the last segment (model names cannot hold ':'). */
    seg *last = &in.s[in.ns - 1];
    const char *colon = memchr(last->p, ':', last->n);
    if (colon) {
        in.verb = colon + 1;
        in.verb_len = last->n - (size_t)(colon + 1 - last->p);
        last->n = (size_t)(colon - last->p);
        if (last->n == 0)
            return;
    }
    for (size_t i = 0; i < in.ns; i++)
        if (memchr(in.s[i].p, ':', in.s[i].n))
            return;

    size_t n;
    const srv_route_row *rows = srv_routes(&n);
    for (size_t i = 0; i < n; i++) {
        mres res = match_row(&rows[i], method, &in, r);
        if (res != M_FAIL) { /* matched, or refused by this row */
            r->v2 = !strcmp(rows[i].protocol, "v2");
            r->cmle = !strcmp(rows[i].protocol, "cmle");
            return;
        }
    }
    no_route(r);
}
