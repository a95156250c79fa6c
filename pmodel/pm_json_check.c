/*
 * pm_json_check.c — whether a text is exactly one JSON value as RFC 8259
 * writes it (and every strict reader, Python's json.loads among them, reads
 * it): objects, arrays, strings with valid escapes, no raw control bytes and
 * valid UTF-8, numbers in JSON's grammar, true, false, null, white space
 * around. batch-predict checks each JSONL line with it, so that an instance
 * it copies into a predictions or errors file as JSON text is JSON, and a
 * line that is not becomes an error whose instance is the line as a string.
 */
#include "pm.h"

#include <string.h>

typedef struct checker {
    const unsigned char *s;
    size_t n, i;
    const char *why;
    int depth;
} checker;

#define MAX_DEPTH 512 /* deeper nesting is refused (the request reader's own bound is lower) */

static int fail(checker *c, const char *why)
{
    c->why = why;
    return -1;
}

static void ws(checker *c)
{
    while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\r' ||
                           c->s[c->i] == '\n'))
        c->i++;
}

/* The length of the UTF-8 sequence at s[0..n) (shortest form, no surrogates,
 * at most U+10FFFF), 0 when it is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (k == 0 || c > 0xF4 || n < k)
        return 0;
    for (size_t j = 1; j < k; j++)
        if ((s[j] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0) ||
        (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
        return 0;
    return k;
}

static int hex4(const unsigned char *p)
{
    for (int k = 0; k < 4; k++)
        if (!strchr("0123456789abcdefABCDEF", p[k]) || !p[k])
            return 0;
    return 1;
}

static int string(checker *c)
{
    c->i++; /* the opening quote */
    while (c->i < c->n) {
        unsigned ch = c->s[c->i];
        if (ch == '"') {
            c->i++;
            return 0;
        }
        if (ch < 0x20)
            return fail(c, "a control character inside a string");
        if (ch == '\\') {
            if (c->i + 1 >= c->n)
                return fail(c, "an unterminated string");
            unsigned e = c->s[c->i + 1];
            if (e == 'u') {
                if (c->i + 6 > c->n || !hex4(c->s + c->i + 2))
                    return fail(c, "a \\u escape without four hex digits");
                c->i += 6;
            } else if (strchr("\"\\/bfnrt", (int)e) && e) {
                c->i += 2;
            } else {
                return fail(c, "an invalid escape in a string");
            }
            continue;
        }
        if (ch >= 0x80) {
            size_t k = utf8_len(c->s + c->i, c->n - c->i);
            if (!k)
                return fail(c, "invalid UTF-8 in a string");
            c->i += k;
            continue;
        }
        c->i++;
    }
    return fail(c, "an unterminated string");
}

static int digits(checker *c)
{
    size_t st = c->i;
    while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9')
        c->i++;
    return c->i > st ? 0 : -1;
}

static int number(checker *c)
{
    if (c->s[c->i] == '-')
        c->i++;
    if (c->i < c->n && c->s[c->i] == '0')
        c->i++;
    else if (digits(c) != 0)
        return fail(c, "not a JSON value");
    if (c->i < c->n && c->s[c->i] == '.') {
        c->i++;
        if (digits(c) != 0)
            return fail(c, "a number without digits after its point");
    }
    if (c->i < c->n && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
        c->i++;
        if (c->i < c->n && (c->s[c->i] == '+' || c->s[c->i] == '-'))
            c->i++;
        if (digits(c) != 0)
            return fail(c, "a number without digits in its exponent");
    }
    return 0;
}

static int word(checker *c, const char *w)
{
    size_t k = strlen(w);
    if (c->n - c->i < k || memcmp(c->s + c->i, w, k) != 0)
        return fail(c, "not a JSON value");
    c->i += k;
    return 0;
}

static int value(checker *c);

/* The members of an object (obj 1) or the elements of an array, after the
 * opening bracket. */
static int items(checker *c, int obj)
{
    char close = obj ? '}' : ']';
    c->i++;
    ws(c);
    if (c->i < c->n && c->s[c->i] == (unsigned char)close) {
        c->i++;
        return 0;
    }
    for (;;) {
        if (obj) {
            if (c->i >= c->n || c->s[c->i] != '"')
                return fail(c, "an object key that is not a string");
            if (string(c) != 0)
                return -1;
            ws(c);
            if (c->i >= c->n || c->s[c->i] != ':')
                return fail(c, "a missing ':' after an object key");
            c->i++;
        }
        if (value(c) != 0)
            return -1;
        ws(c);
        if (c->i < c->n && c->s[c->i] == ',') {
            c->i++;
            ws(c);
            continue;
        }
        if (c->i < c->n && c->s[c->i] == (unsigned char)close) {
            c->i++;
            return 0;
        }
        return fail(c, obj ? "a missing ',' or '}' in an object"
                           : "a missing ',' or ']' in an array");
    }
}

static int value(checker *c)
{
    ws(c);
    if (c->i >= c->n)
        return fail(c, "a missing value");
    switch (c->s[c->i]) {
    case '{':
    case '[': {
        if (++c->depth > MAX_DEPTH)
            return fail(c, "nested too deeply");
        int rc = items(c, c->s[c->i] == '{');
        c->depth--;
        return rc;
    }
    case '"': return string(c);
    case 't': return word(c, "true");
    case 'f': return word(c, "false");
    case 'n': return word(c, "null");
    default: return number(c);
    }
}

int pm_json_check(const char *s, size_t n, size_t *at, const char **why)
{
    checker c = {(const unsigned char *)s, n, 0, NULL, 0};
    int rc = value(&c);
    if (rc == 0) {
        ws(&c);
        if (c.i < c.n)
            rc = fail(&c, "more text after the value");
    }
    if (at)
        *at = c.i;
    if (why)
        *why = rc ? c.why : NULL;
    return rc;
}
