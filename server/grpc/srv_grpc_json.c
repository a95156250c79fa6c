/*
 * srv_grpc_json.c — REST's JSON answer header read into a small tree whose
 * nodes and strings come from the call's arena (srv_grpc_arena.c): nothing
 * to free, given back with the request message after the call. It stands
 * where cJSON stood for ModelInfer's answer, whose parse and delete (a
 * malloc and a free per node) were some 115,000 of a one-instance call's
 * 290,000 instructions (docs/performance.md, "gRPC CPU per call").
 *
 * Strict JSON (RFC 8259): objects, arrays, strings (every escape, \u with
 * surrogate pairs to UTF-8), numbers (read with strtod), true, false,
 * null; bounded by len (the text need not end in NUL: binary tensors follow
 * a v2 header) and by SRV_GRPC_JSON_DEPTH. Anything else is NULL: the text
 * is predictd's own answer, so that is an internal error for the caller.
 */
#include "srv_grpc_internal.h"

#include <stdlib.h>
#include <string.h>

#define SRV_GRPC_JSON_DEPTH 64

typedef struct reader {
    const char *p, *end;
    srv_grpc_arena *a;
    int depth;
} reader;

static void ws(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* A string at r->p (its opening quote), unescaped, NUL-terminated, in the
 * arena (an escape never writes more bytes than it reads). */
static const char *string(reader *r)
{
    const char *s = ++r->p;
    while (r->p < r->end && *r->p != '"') {
        if (*r->p == '\\')
            r->p++;
        else if ((unsigned char)*r->p < 0x20)
            return NULL;
        r->p++;
    }
    if (r->p >= r->end)
        return NULL;
    size_t n = (size_t)(r->p - s);
    r->p++; /* the closing quote */
    char *out = r->a->alloc.alloc(r->a, n + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *q = s, *e = s + n; q < e;) {
        if (*q != '\\') {
            *o++ = *q++;
            continue;
        }
        q++;
        switch (*q++) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (e - q < 4 || hex4(q, &cp) != 0)
                return NULL;
            q += 4;
            if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its low one follows */
                if (e - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, &lo) != 0 ||
                    lo < 0xdc00 || lo >= 0xe000)
                    return NULL;
                q += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                return NULL;
            }
            o = put_utf8(o, cp);
            break;
        }
        default: return NULL;
        }
    }
    *o = '\0';
    return out;
}

static bool word(reader *r, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
        return false;
    r->p += n;
    return true;
}

static srv_grpc_json *value(reader *r);

static srv_grpc_json *node(reader *r, int kind)
{
    srv_grpc_json *j = r->a->alloc.alloc(r->a, sizeof *j);
    if (j) {
        memset(j, 0, sizeof *j);
        j->kind = kind;
    }
    return j;
}

/* An object's members or an array's elements, after its opening bracket. */
static srv_grpc_json *container(reader *r, int kind, char close)
{
    srv_grpc_json *j = node(r, kind), **tail = j ? &j->child : NULL;
    if (!j || ++r->depth > SRV_GRPC_JSON_DEPTH)
        return NULL;
    r->p++;
    ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        r->depth--;
        return j;
    }
    for (;;) {
        const char *key = NULL;
        ws(r);
        if (kind == SRV_GRPC_JSON_OBJECT) {
            if (r->p >= r->end || *r->p != '"' || !(key = string(r)))
                return NULL;
            ws(r);
            if (r->p >= r->end || *r->p++ != ':')
                return NULL;
        }
        srv_grpc_json *v = value(r);
        if (!v)
            return NULL;
        v->key = key;
        *tail = v;
        tail = &v->next;
        j->n++;
        ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            r->depth--;
            return j;
        }
        return NULL;
    }
}

static srv_grpc_json *value(reader *r)
{
    ws(r);
    if (r->p >= r->end)
        return NULL;
    char c = *r->p;
    if (c == '{')
        return container(r, SRV_GRPC_JSON_OBJECT, '}');
    if (c == '[')
        return container(r, SRV_GRPC_JSON_ARRAY, ']');
    if (c == '"') {
        srv_grpc_json *j = node(r, SRV_GRPC_JSON_STRING);
        return j && (j->str = string(r)) ? j : NULL;
    }
    bool t = word(r, "true");
    if (t || word(r, "false")) {
        srv_grpc_json *j = node(r, SRV_GRPC_JSON_BOOL);
        if (j)
            j->num = t;
        return j;
    }
    if (word(r, "null"))
        return node(r, SRV_GRPC_JSON_NULL);
    /* a number: its JSON characters copied out (the text may not end in NUL) */
    const char *s = r->p;
    if (r->p < r->end && *r->p == '-')
        r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9')
        return NULL;
    while (r->p < r->end && ((*r->p >= '0' && *r->p <= '9') || *r->p == '.' || *r->p == 'e' ||
                             *r->p == 'E' || *r->p == '+' || *r->p == '-'))
        r->p++;
    char buf[64];
    size_t n = (size_t)(r->p - s);
    if (n >= sizeof buf)
        return NULL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *endp;
    srv_grpc_json *j = node(r, SRV_GRPC_JSON_NUMBER);
    if (!j)
        return NULL;
    j->num = strtod(buf, &endp);
    return *endp ? NULL : j;
}

const srv_grpc_json *srv_grpc_json_parse(srv_grpc_arena *a, const char *text, size_t len)
{
    reader r = {text, text + len, a, 0};
    srv_grpc_json *j = value(&r);
    ws(&r);
    return j && r.p == r.end ? j : NULL;
}

const srv_grpc_json *srv_grpc_json_get(const srv_grpc_json *obj, const char *key)
{
    if (!obj || obj->kind != SRV_GRPC_JSON_OBJECT)
        return NULL;
    for (const srv_grpc_json *m = obj->child; m; m = m->next)
        if (!strcmp(m->key, key))
            return m;
    return NULL;
}

const char *srv_grpc_json_str(const srv_grpc_json *j)
{
    return j && j->kind == SRV_GRPC_JSON_STRING ? j->str : NULL;
}
