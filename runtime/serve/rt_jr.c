/*
 * rt_jr.c — the strict, streaming JSON reader under every request
 * body (rt_json_internal.h describes the interface); the limits a body is
 * read under are rt_json_params.c's (rt_json_default_params).
 *
 * It reads straight from the body's bytes: no pre-scan copy, no tree. The
 * callers pull values one at a time (rt_jr_value, rt_jr_member,
 * rt_jr_element) and put them where they belong; what they do not want
 * they skip (rt_jr_skip), which checks it all the same, so a body is
 * accepted only when all of it is JSON. Strings without escapes are handed
 * out in place; plain bytes are scanned eight at a time.
 *
 * Hard errors (not JSON, or beyond the nesting limit) carry the member
 * (rt_json_locate) and the byte offset: "instances[0].age: number 025 has a
 * leading zero at byte 23: not valid JSON".
 */
#include "rt_serve.h"
#include "rt_json_internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ errors */

/* Marks r failed; every later call returns the same status at once. */
static rt_status fail(rt_jr *r, rt_status st)
{
    r->hard = st;
    return st;
}

static rt_status syntax_error(rt_jr *r, const char *at, const char *what)
{
    char where[200];
    size_t off = (size_t)(at - r->body);
    rt_json_locate(r->body, (size_t)(r->end - r->body), off, where, sizeof where);
    int outside = strcmp(where, "request body") == 0;
    rt_err_set(r->err, RT_ERR_INVALID, "request body is not valid JSON: %s at byte %zu%s%s%s",
               what, off, outside ? "" : " (in ", outside ? "" : where, outside ? "" : ")");
    return fail(r, RT_ERR_INVALID);
}

/* The message for the end of the body, or for the byte at `at`. */
static rt_status unexpected(rt_jr *r, const char *at, const char *expected)
{
    char what[96];
    if (at >= r->end)
        snprintf(what, sizeof what, "the body ends where %s should be", expected);
    else if ((unsigned char)*at >= 0x20 && (unsigned char)*at < 0x7f)
        snprintf(what, sizeof what, "expected %s, found '%c'", expected, *at);
    else
        snprintf(what, sizeof what, "expected %s, found byte 0x%02X", expected,
                 (unsigned)(unsigned char)*at);
    return syntax_error(r, at, what);
}

static int is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

/* A byte that may continue a number literal in the eyes of a lenient parser. */
static int is_number_byte(char ch)
{
    return is_digit(ch) || ch == '.' || ch == 'e' || ch == 'E' || ch == '+' || ch == '-';
}

static rt_status utf8_error(rt_jr *r, const char *at, const char *why)
{
    char where[200];
    size_t off = (size_t)(at - r->body);
    rt_json_locate(r->body, (size_t)(r->end - r->body), off, where, sizeof where);
    rt_err_set(r->err, RT_ERR_INVALID, "%s: invalid UTF-8 at byte %zu (%s)", where, off, why);
    return fail(r, RT_ERR_INVALID);
}

static rt_status control_error(rt_jr *r, const char *at)
{
    char where[200];
    size_t off = (size_t)(at - r->body);
    unsigned ch = (unsigned char)*at;
    rt_json_locate(r->body, (size_t)(r->end - r->body), off, where, sizeof where);
    rt_err_set(r->err, RT_ERR_INVALID, "%s: raw control character U+%04X in a string at byte "
               "%zu: not valid JSON (escape it, as \\u%04x)", where, ch, off, ch);
    return fail(r, RT_ERR_INVALID);
}

static rt_status number_error(rt_jr *r, const char *at, const char *why)
{
    char where[200];
    size_t off = (size_t)(at - r->body), n = 0;
    rt_json_locate(r->body, (size_t)(r->end - r->body), off, where, sizeof where);
    while (at + n < r->end && n < 24 && is_number_byte(at[n]))
        n++;
    rt_err_set(r->err, RT_ERR_INVALID, "%s: number %.*s%s %s at byte %zu: not valid JSON",
               where, (int)n, at, at + n < r->end && is_number_byte(at[n]) ? "..." : "", why,
               off);
    return fail(r, RT_ERR_INVALID);
}

/* ------------------------------------------------------------- set-up */

void rt_jr_init(rt_jr *r, const char *body, size_t len, int max_depth, rt_buf *sbuf,
                rt_buf *kbuf, rt_err *err)
{
    r->body = body;
    r->p = body;
    r->end = body + len;
    r->depth = 0;
    r->max_depth = max_depth > 0 ? max_depth : 1;
    r->state = RT_JR_VALUE;
    r->hard = 0;
    r->key_nul = 0;
    r->err = err;
    r->sbuf = sbuf;
    r->kbuf = kbuf;
    r->stack = r->local;
    if (len >= 3 && memcmp(body, "\xef\xbb\xbf", 3) == 0)
        r->p += 3; /* a UTF-8 byte order mark, as cJSON skipped it */
}

void rt_jr_done(rt_jr *r)
{
    if (r->stack != r->local)
        free(r->stack);
    r->stack = r->local;
}

/* ------------------------------------------------------------ scanning */

static inline void skip_ws(rt_jr *r)
{
    const char *p = r->p, *e = r->end;
    if (p < e && (unsigned char)*p > ' ')
        return;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    r->p = p;
}

int rt_jr_peek(rt_jr *r)
{
    skip_ws(r);
    return r->p < r->end ? (unsigned char)*r->p : -1;
}

static int hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4)
        return 0;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int d = rt_buf_hex_digit(p[k]);
        if (d < 0)
            return 0;
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 1;
}

/* The escape at q (a backslash): its bytes into out (up to 4), *used the
 * escape's length in the body. */
static rt_status read_escape(rt_jr *r, const char *q, char *out, size_t *outn, size_t *used)
{
    if (q + 1 >= r->end)
        return unexpected(r, r->end, "the rest of an escape");
    unsigned char e = (unsigned char)q[1];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = e ? memchr(from, e, sizeof from - 1) : NULL;
    if (hit) {
        out[0] = to[hit - from];
        *outn = 1;
        *used = 2;
        return RT_OK;
    }
    if (e < 0x20)
        return control_error(r, q + 1);
    if (e != 'u')
        return syntax_error(r, q, e < 0x7f ? "invalid escape in a string (JSON has \\\" \\\\ "
                            "\\/ \\b \\f \\n \\r \\t \\uXXXX)" : "invalid escape in a string");
    unsigned cp, lo;
    if (!hex4(q + 2, r->end, &cp))
        return syntax_error(r, q, "invalid \\u escape (four hex digits expected)");
    *used = 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return syntax_error(r, q, "invalid \\u escape (a lone low surrogate)");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (r->end - q < 12 || q[6] != '\\' || q[7] != 'u' || !hex4(q + 8, r->end, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
            return syntax_error(r, q, "invalid \\u escape (a high surrogate without its low "
                                "half)");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        *used = 12;
    }
    *outn = rt_buf_utf8_put(out, cp);
    return RT_OK;
}

/* The string whose opening quote is at r->p. Escaped strings are unescaped
 * into buf (when buf is NULL they are only checked). All strings can take
 * this way; read_string below takes the plain ones without it. */
static __attribute__((noinline)) rt_status read_string_any(rt_jr *r, rt_buf *buf,
                                                           const char **s, size_t *n)
{
    const char *start = r->p + 1, *q = start, *end = r->end, *seg = start;
    int copying = 0;
    for (;;) {
        while (end - q >= 8) {
            uint64_t m = rt_jr_special_in_word(q);
            if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                q += (unsigned)__builtin_ctzll(m) >> 3;
#endif
                break;
            }
            q += 8;
        }
        while (q < end && rt_jr_plain_ascii(*q))
            q++;
        if (q >= end)
            return unexpected(r, end, "the closing '\"' of a string");
        unsigned char ch = (unsigned char)*q;
        if (ch == '"')
            break;
        if (ch >= 0x80) {
            const char *why = NULL;
            size_t k = rt_buf_utf8_seq(q, (size_t)(end - q), &why);
            if (!k)
                return utf8_error(r, q, why);
            q += k;
            continue;
        }
        if (ch < 0x20)
            return control_error(r, q);
        /* a backslash */
        char dec[4];
        size_t dn = 0, used = 0;
        rt_status st = read_escape(r, q, dec, &dn, &used);
        if (st != RT_OK)
            return st;
        if (buf) {
            if (!copying) {
                rt_buf_reset(buf);
                copying = 1;
            }
            if (rt_buf_append(buf, seg, (size_t)(q - seg)) != 0 || rt_buf_append(buf, dec, dn))
                return fail(r, rt_err_set(r->err, RT_ERR_NOMEM, "request body: out of memory"));
        }
        q += used;
        seg = q;
    }
    if (copying) {
        if (rt_buf_append(buf, seg, (size_t)(q - seg)) != 0)
            return fail(r, rt_err_set(r->err, RT_ERR_NOMEM, "request body: out of memory"));
        *s = buf->data;
        *n = buf->len;
    } else {
        *s = start;
        *n = (size_t)(q - start);
    }
    r->p = q + 1;
    return RT_OK;
}

/* read_string_any for the common string: printable ASCII up to the closing
 * quote, handed out in place. Anything else (an escape, UTF-8, a control
 * byte, the end of the body) goes to read_string_any, which reads it from
 * the start. Kept small (no locals in memory) so that the plain case costs
 * a few instructions per eight bytes. */
static inline rt_status read_string(rt_jr *r, rt_buf *buf, const char **s, size_t *n)
{
    const char *start = r->p + 1, *q = start, *end = r->end;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (end - q >= 8) {
        uint64_t m = rt_jr_special_in_word(q);
        if (m) {
            q += (unsigned)__builtin_ctzll(m) >> 3;
            goto found;
        }
        q += 8;
    }
#endif
    while (q < end && rt_jr_plain_ascii(*q))
        q++;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
found:
#endif
    if (q < end && *q == '"') {
        *s = start;
        *n = (size_t)(q - start);
        r->p = q + 1;
        return RT_OK;
    }
    return read_string_any(r, buf, s, n);
}

/* Clinger's fast path: the literal s..e (already checked against JSON's
 * grammar) as strtod reads it, when that can be had exactly: at most 15
 * significant digits (exact in a double) and a power of ten of at most 22
 * (exact too), so one IEEE multiplication or division rounds correctly, as
 * strtod does. Returns 0 (and leaves *out alone) for anything else. Locale
 * free; the daemon never calls setlocale, so strtod reads '.' as here. */
static int fast_decimal(const char *s, const char *e, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *q = s;
    int neg = *q == '-';
    q += neg;
    uint64_t m = 0;
    int sig = 0, scale = 0;
    for (; q < e && is_digit(*q); q++) {
        if (m || *q != '0') {
            if (++sig > 15)
                return 0;
            m = m * 10 + (uint64_t)(*q - '0');
        }
    }
    if (q < e && *q == '.') {
        for (q++; q < e && is_digit(*q); q++) {
            scale--;
            if (m || *q != '0') {
                if (++sig > 15)
                    return 0;
                m = m * 10 + (uint64_t)(*q - '0');
            }
        }
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        int eneg = *q == '-', x = 0;
        if (*q == '+' || *q == '-')
            q++;
        for (; q < e; q++) {
            if (x > 9999)
                return 0;
            x = x * 10 + (*q - '0');
        }
        scale += eneg ? -x : x;
    }
    double d = (double)m;
    if (m == 0)
        d = 0;
    else if (scale >= 0 && scale <= 22)
        d *= pow10[scale];
    else if (scale < 0 && scale >= -22)
        d /= pow10[-scale];
    else
        return 0;
    *out = neg ? -d : d;
    return 1;
#else
    (void)s, (void)e, (void)out;
    return 0;
#endif
}

/* The number literal at r->p (a '-' or a digit), in JSON's grammar. */
static rt_status read_number(rt_jr *r, rt_jv *v)
{
    const char *s = r->p, *q = s, *e = r->end;
    int frac = 0, digits = 0;
    if (*q == '-')
        q++;
    if (q >= e || !is_digit(*q))
        return number_error(r, s, "is malformed");
    double ival = 0;
    if (*q == '0') {
        q++;
        digits = 1;
        if (q < e && is_digit(*q))
            return number_error(r, s, "has a leading zero");
    } else {
        while (q < e && is_digit(*q)) {
            ival = ival * 10 + (*q - '0');
            q++;
            digits++;
        }
    }
    if (q < e && *q == '.') {
        frac = 1;
        if (++q >= e || !is_digit(*q))
            return number_error(r, s, "is malformed");
        while (q < e && is_digit(*q))
            q++;
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        frac = 1;
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        if (q >= e || !is_digit(*q))
            return number_error(r, s, "is malformed");
        while (q < e && is_digit(*q))
            q++;
    }
    if (q < e && is_number_byte(*q))
        return number_error(r, s, "is malformed");
    size_t n = (size_t)(q - s);
    if (!frac && digits <= 15) {
        v->num = *s == '-' ? -ival : ival; /* exact: below 2^53 */
    } else if (!fast_decimal(s, q, &v->num)) {
        char local[64], *tmp = n < sizeof local ? local : malloc(n + 1);
        if (!tmp)
            return fail(r, rt_err_set(r->err, RT_ERR_NOMEM, "request body: out of memory"));
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        v->num = strtod(tmp, NULL);
        if (tmp != local)
            free(tmp);
    }
    v->kind = RT_JV_NUMBER;
    v->s = s;
    v->n = n;
    v->token = 0;
    r->p = q;
    return RT_OK;
}

static rt_status open_container(rt_jr *r, int is_obj)
{
    if (r->depth + 1 > r->max_depth)
        return fail(r, rt_err_set(r->err, RT_ERR_LIMIT, "request body: JSON nested deeper "
                                  "than %d levels", r->max_depth));
    if (r->stack == r->local && r->max_depth >= RT_JR_LOCAL_DEPTH &&
        r->depth + 1 >= RT_JR_LOCAL_DEPTH) {
        unsigned char *s = malloc((size_t)r->max_depth + 1);
        if (!s)
            return fail(r, rt_err_set(r->err, RT_ERR_NOMEM, "request body: out of memory"));
        memcpy(s, r->local, sizeof r->local);
        r->stack = s;
    }
    r->depth++;
    r->stack[r->depth] = (unsigned char)is_obj;
    r->state = is_obj ? RT_JR_FIRST_KEY : RT_JR_FIRST_ELEM;
    r->p++;
    return RT_OK;
}

static void close_container(rt_jr *r)
{
    r->p++;
    r->depth--;
    r->state = r->depth == 0 ? RT_JR_DONE : RT_JR_AFTER;
}

static void after_scalar(rt_jr *r)
{
    r->state = r->depth == 0 ? RT_JR_DONE : RT_JR_AFTER;
}

/* The words JSON allows as values (true, false, null) and the number
 * tokens :predict accepts (NaN, Infinity, -Infinity) at p; kept out of
 * read_value so that its common cases stay small. */
static __attribute__((noinline)) rt_status read_word(rt_jr *r, rt_jv *v, const char *p)
{
    static const struct {
        const char *text;
        size_t n;
        rt_jv_kind kind;
        double num;
    } words[] = {
        {"true", 4, RT_JV_TRUE, 0},        {"false", 5, RT_JV_FALSE, 0},
        {"null", 4, RT_JV_NULL, 0},        {"NaN", 3, RT_JV_NUMBER, NAN},
        {"Infinity", 8, RT_JV_NUMBER, INFINITY}, {"-Infinity", 9, RT_JV_NUMBER, -INFINITY},
    };
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        if ((size_t)(r->end - p) >= words[w].n && memcmp(p, words[w].text, words[w].n) == 0) {
            v->kind = words[w].kind;
            v->num = words[w].num;
            v->token = words[w].kind == RT_JV_NUMBER;
            v->s = p;
            v->n = words[w].n;
            r->p = p + words[w].n;
            after_scalar(r);
            return RT_OK;
        }
    }
    return unexpected(r, p, "a value");
}

/* A value; strings unescaped into buf (or only checked when buf is NULL). */
static rt_status read_value(rt_jr *r, rt_jv *v, rt_buf *buf)
{
    if (r->hard)
        return r->hard;
    int ch = rt_jr_peek(r);
    const char *p = r->p;
    v->at = (size_t)(p - r->body);
    v->token = 0;
    rt_status st;
    if (ch == '"') {
        v->kind = RT_JV_STRING;
        if ((st = read_string(r, buf, &v->s, &v->n)) != RT_OK)
            return st;
        after_scalar(r);
        return RT_OK;
    }
    if (ch == '{' || ch == '[') {
        v->kind = ch == '{' ? RT_JV_OBJECT : RT_JV_LIST;
        return open_container(r, ch == '{');
    }
    if (is_digit(ch) || (ch == '-' && !(r->end - p >= 2 && p[1] == 'I'))) {
        if ((st = read_number(r, v)) != RT_OK)
            return st;
        after_scalar(r);
        return RT_OK;
    }
    if (ch < 0 && r->depth == 0)
        return syntax_error(r, p, "the body is empty (JSON Parse error: The document is "
                            "empty)");
    return read_word(r, v, p);
}

rt_status rt_jr_value(rt_jr *r, rt_jv *v)
{
    if (r->hard)
        return r->hard;
    if (r->state != RT_JR_VALUE)
        return unexpected(r, r->p, "a value (reader misuse)");
    return read_value(r, v, r->sbuf);
}

rt_status rt_jr_want_type(rt_jr *r, rt_jv *v, rt_jv_kind kind, rt_err *sem, const char *where,
                          const char *want)
{
    rt_status st = rt_jr_value(r, v);
    if (st != RT_OK || v->kind == kind)
        return st;
    char got[64];
    rt_json_describe(v, got, sizeof got);
    return rt_err_set(sem, RT_ERR_INVALID, "%s: expected %s, got %s", where, want, got);
}

rt_status rt_jr_scalar_at(rt_jr *r, size_t at, rt_jv *v)
{
    if (r->hard)
        return r->hard;
    if (at > (size_t)(r->end - r->body))
        return RT_ERR_INVALID;
    r->p = r->body + at;
    r->depth = 1; /* as in a list: a scalar leaves the state RT_JR_AFTER */
    r->state = RT_JR_VALUE;
    rt_status st = read_value(r, v, r->sbuf);
    if (st == RT_OK && (v->kind == RT_JV_OBJECT || v->kind == RT_JV_LIST))
        return RT_ERR_INVALID;
    return st;
}

/* A key at r->p (after white space), and its ':'. */
static rt_status read_key(rt_jr *r, rt_buf *buf, const char **key, size_t *klen)
{
    if (rt_jr_peek(r) != '"')
        return unexpected(r, r->p, "a key (a string in double quotes)");
    rt_status st = read_string(r, buf, key, klen);
    if (st != RT_OK)
        return st;
    r->key_nul = buf && *key == buf->data && memchr(*key, '\0', *klen) != NULL;
    if (rt_jr_peek(r) != ':')
        return unexpected(r, r->p, "':' after the key");
    r->p++;
    r->state = RT_JR_VALUE;
    return RT_OK;
}

static rt_status member(rt_jr *r, int *more, const char **key, size_t *klen, rt_buf *buf)
{
    if (r->hard)
        return r->hard;
    int ch = rt_jr_peek(r);
    if (r->state == RT_JR_FIRST_KEY) {
        if (ch == '}') {
            *more = 0;
            close_container(r);
            return RT_OK;
        }
    } else if (r->state == RT_JR_AFTER && r->stack[r->depth] == 1) {
        if (ch == '}') {
            *more = 0;
            close_container(r);
            return RT_OK;
        }
        if (ch != ',')
            return unexpected(r, r->p, "',' or '}'");
        r->p++;
    } else {
        return unexpected(r, r->p, "a member (reader misuse)");
    }
    *more = 1;
    return read_key(r, buf, key, klen);
}

rt_status rt_jr_member(rt_jr *r, int *more, const char **key, size_t *klen)
{
    return member(r, more, key, klen, r->kbuf);
}

rt_status rt_jr_member_in(rt_jr *r, const char *const *keys, int *k, const char **key,
                          size_t *klen)
{
    int more;
    *k = RT_JR_CLOSED;
    rt_status st = rt_jr_member(r, &more, key, klen);
    if (st != RT_OK || !more)
        return st;
    for (*k = 0; keys[*k]; (*k)++)
        if (rt_jr_key_is(*key, *klen, keys[*k]))
            return RT_OK;
    *k = -1;
    return RT_OK;
}

rt_status rt_jr_member_is(rt_jr *r, int *more, const char *name, int *match)
{
    rt_buf lb; /* only an escaped key is copied */
    const char *key = NULL;
    size_t klen = 0;
    rt_buf_init(&lb);
    rt_status st = member(r, more, &key, &klen, &lb);
    *match = st == RT_OK && *more && klen == strlen(name) && memcmp(key, name, klen) == 0;
    rt_buf_free(&lb);
    return st;
}

rt_status rt_jr_element(rt_jr *r, int *more)
{
    if (r->hard)
        return r->hard;
    int ch = rt_jr_peek(r);
    if (r->state == RT_JR_FIRST_ELEM) {
        if (ch == ']') {
            *more = 0;
            close_container(r);
            return RT_OK;
        }
    } else if (r->state == RT_JR_AFTER && r->stack[r->depth] == 0) {
        if (ch == ']') {
            *more = 0;
            close_container(r);
            return RT_OK;
        }
        if (ch != ',')
            return unexpected(r, r->p, "',' or ']'");
        r->p++;
    } else {
        return unexpected(r, r->p, "an element (reader misuse)");
    }
    *more = 1;
    r->state = RT_JR_VALUE;
    return RT_OK;
}

rt_status rt_jr_skip_to(rt_jr *r, int depth)
{
    rt_jv v;
    const char *key;
    size_t klen;
    int more;
    rt_status st = RT_OK;
    for (;;) {
        if (r->hard)
            return r->hard;
        if (r->state == RT_JR_DONE || (r->state == RT_JR_AFTER && r->depth <= depth))
            return RT_OK;
        switch (r->state) {
        case RT_JR_VALUE:
            st = read_value(r, &v, NULL);
            break;
        case RT_JR_FIRST_ELEM:
            st = rt_jr_element(r, &more);
            break;
        case RT_JR_FIRST_KEY:
            st = member(r, &more, &key, &klen, NULL);
            break;
        default: /* after a value inside a container */
            st = r->stack[r->depth] ? member(r, &more, &key, &klen, NULL)
                                    : rt_jr_element(r, &more);
            break;
        }
        if (st != RT_OK)
            return st;
    }
}

rt_status rt_jr_skip(rt_jr *r)
{
    if (r->hard)
        return r->hard;
    if (r->state != RT_JR_VALUE)
        return unexpected(r, r->p, "a value (reader misuse)");
    return rt_jr_skip_to(r, r->depth);
}

rt_status rt_jr_count_rest(rt_jr *r, size_t *n)
{
    rt_status st = rt_jr_skip(r);
    int more = 1;
    if (st == RT_OK)
        ++*n;
    while (st == RT_OK && (st = rt_jr_element(r, &more)) == RT_OK && more)
        if ((st = rt_jr_skip(r)) == RT_OK)
            ++*n;
    return st;
}

rt_status rt_jr_end(rt_jr *r)
{
    if (r->hard)
        return r->hard;
    rt_status st = rt_jr_skip_to(r, 0);
    if (st != RT_OK)
        return st;
    skip_ws(r);
    if (r->p != r->end) {
        rt_err_set(r->err, RT_ERR_INVALID, "request body: text after the JSON value (byte %zu)",
                   (size_t)(r->p - r->body));
        return fail(r, RT_ERR_INVALID);
    }
    return RT_OK;
}

