/* rt_buf.c — growable byte buffer with JSON string and float writers, the
 * UTF-8 check they (and the request parsers) share, rt_grow, the one
 * way every module grows an array, and rt_buf_trim_span, the one meaning of
 * "white space around a string" (raw inputs, the batch's string keys,
 * vocabularies, labels). */
#include "rt_core.h"
#include "rt_core_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_buf_init(rt_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = 0;
}

void rt_buf_free(rt_buf *b)
{
    if (!b)
        return;
    free(b->data);
    rt_buf_init(b);
}

void rt_buf_reset(rt_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data)
        b->data[0] = '\0';
}

int rt_buf_failed(const rt_buf *b)
{
    return b->failed ? -1 : 0;
}

int rt_buf_reserve(rt_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra > SIZE_MAX - b->len - 1) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int rt_buf_grow_slow(void *arrp, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    if (elem == 0 || need > SIZE_MAX / elem)
        return -1;
    size_t n = *cap ? *cap : RT_GROW_FIRST;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    if (n > SIZE_MAX / elem)
        n = need; /* doubling would overflow; need itself fits */
    void *old;
    memcpy(&old, arrp, sizeof old);
    void *p = realloc(old, n * elem);
    if (!p)
        return -1;
    memcpy(arrp, &p, sizeof p);
    *cap = n;
    return 0;
}

int rt_buf_append(rt_buf *b, const void *p, size_t n)
{
    if (rt_buf_reserve(b, n) != 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    RT_ASSERT(b->len < b->cap); /* room for the NUL, as rt_buf_reserve made */
    b->data[b->len] = '\0';
    return 0;
}

int rt_buf_puts(rt_buf *b, const char *s)
{
    return rt_buf_append(b, s, strlen(s));
}

int rt_buf_printf(rt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        b->failed = 1;
    if (n < 0 || rt_buf_reserve(b, (size_t)n) != 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    RT_ASSERT(b->len < b->cap);
    return 0;
}

size_t rt_buf_utf8_seq(const char *s, size_t n, const char **why)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0], lo = 0x80, hi = 0xBF; /* lo..hi: the second byte */
    const char *fault;
    size_t len;
    if (c < 0x80)
        return 1;
    if (c < 0xC2) {
        fault = c < 0xC0 ? "a continuation byte without a lead byte" : "an overlong encoding";
        goto bad;
    }
    if (c < 0xE0) {
        len = 2;
    } else if (c < 0xF0) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* E0 80..9F: overlong */
        hi = c == 0xED ? 0x9F : 0xBF; /* ED A0..BF: surrogates */
    } else if (c < 0xF5) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80; /* F0 80..8F: overlong */
        hi = c == 0xF4 ? 0x8F : 0xBF; /* F4 90..: above U+10FFFF */
    } else {
        fault = c < 0xF8 ? "a code point above U+10FFFF" : "a byte that UTF-8 never uses";
        goto bad;
    }
    for (size_t k = 1; k < len; k++) {
        if (k >= n || u[k] < 0x80 || u[k] > 0xBF) {
            fault = "a truncated sequence";
            goto bad;
        }
        if (k == 1 && (u[k] < lo || u[k] > hi)) {
            fault = c == 0xED   ? "a UTF-16 surrogate"
                    : c == 0xF4 ? "a code point above U+10FFFF"
                                : "an overlong encoding";
            goto bad;
        }
    }
    return len;
bad:
    if (why)
        *why = fault;
    return 0;
}

int rt_buf_json_string(rt_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    /* Worst case: every byte becomes \u00XX or \ufffd (six bytes). */
    if (n > (SIZE_MAX - 3) / 6)
        b->failed = 1;
    if (n > (SIZE_MAX - 3) / 6 || rt_buf_reserve(b, n * 6 + 2) != 0)
        return -1;
    char *o = b->data + b->len;
    *o++ = '"';
    size_t run = 0; /* start of the bytes not yet copied */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')
            continue;
        if (c >= 0x80) {
            /* valid UTF-8 is copied as it is; each byte of anything else
             * becomes U+FFFD, so the text is always valid UTF-8 JSON */
            size_t k = rt_buf_utf8_seq(s + i, n - i, NULL);
            if (k) {
                i += k - 1;
                continue;
            }
        }
        memcpy(o, s + run, i - run);
        o += i - run;
        run = i + 1;
        if (c >= 0x80) {
            memcpy(o, "\\ufffd", 6);
            o += 6;
            continue;
        }
        char esc = 0;
        switch (c) {
        case '"': esc = '"'; break;
        case '\\': esc = '\\'; break;
        case '\n': esc = 'n'; break;
        case '\r': esc = 'r'; break;
        case '\t': esc = 't'; break;
        case '\b': esc = 'b'; break;
        case '\f': esc = 'f'; break;
        default: break;
        }
        *o++ = '\\';
        if (esc) {
            *o++ = esc;
        } else {
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    memcpy(o, s + run, n - run);
    o += n - run;
    *o++ = '"';
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
    return 0;
}

/* Shortest %.*g text (precision lo..hi) that reads back exactly, into out
 * (40 bytes), returning its length: the reference algorithm, used for
 * doubles and whenever the fast float path below is unsure. */
static size_t shortest_text(double v, int lo, int hi, int is_float, char *out)
{
    const char *word = isnan(v) ? "NaN" : !isinf(v) ? NULL : v > 0 ? "Infinity" : "-Infinity";
    if (word) {
        size_t n = strlen(word);
        memcpy(out, word, n + 1);
        return n;
    }
    int k = 0;
    for (int prec = lo; prec <= hi; prec++) {
        k = snprintf(out, 40, "%.*g", prec, v);
        int same = is_float ? (strtof(out, NULL) == (float)v) : (strtod(out, NULL) == v);
        if (same)
            break;
    }
    return k > 0 ? (size_t)k : 0;
}

/* Powers of ten that a double holds exactly. */
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define POW10_MAX 22

/* Writes what printf("%.*g", p, x) writes for x = sign * digits * 10^(x10 -
 * p + 1), where digits has exactly p decimal digits (the first non-zero):
 * fixed notation when -4 <= x10 < p, else d.ddde+XX; trailing zeros of the
 * fraction dropped. Returns the length (out holds at least 32 bytes: digits
 * are copied in fixed blocks, the bytes past the length are scratch);
 * *whole = 1 when the text is a whole number (no point, no exponent). */
static size_t format_g(char *out, int neg, uint64_t digits, int p, int x10, int *whole)
{
    static const char PAIRS[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    char d[32] = {0};
    int left = p;
    for (; left >= 2; left -= 2) { /* two digits per division */
        memcpy(d + left - 2, PAIRS + 2 * (digits % 100), 2);
        digits /= 100;
    }
    if (left)
        d[0] = (char)('0' + digits);
    int nd = p;
    size_t n = 0;
    *whole = 0;
    if (neg)
        out[n++] = '-';
    if (x10 < -4 || x10 >= p) {
        while (nd > 1 && d[nd - 1] == '0')
            nd--;
        out[n++] = d[0];
        if (nd > 1) {
            out[n++] = '.';
            memcpy(out + n, d + 1, 16);
            n += (size_t)nd - 1;
        }
        int e = x10;
        out[n++] = 'e';
        out[n++] = e < 0 ? '-' : '+';
        if (e < 0)
            e = -e;
        if (e >= 100)
            out[n++] = (char)('0' + e / 100);
        out[n++] = (char)('0' + e / 10 % 10);
        out[n++] = (char)('0' + e % 10);
        return n;
    }
    if (x10 >= 0) {
        /* x10 + 1 integer digits, then the fraction without trailing zeros */
        int ip = x10 + 1;
        memcpy(out + n, d, 16);
        n += (size_t)ip;
        while (nd > ip && d[nd - 1] == '0')
            nd--;
        if (nd > ip) {
            out[n++] = '.';
            memcpy(out + n, d + ip, 16);
            n += (size_t)(nd - ip);
        } else {
            *whole = 1;
        }
        return n;
    }
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    memcpy(out + n, "0.000", 5); /* -4 <= x10 <= -1: "0." and -x10 - 1 zeros */
    n += (size_t)(1 - x10);
    memcpy(out + n, d, 16);
    return n + (size_t)nd;
}

/* floor(x) as an int for |x| well inside int range, without libm. */
static int floor_int(double x)
{
    int i = (int)x;
    return i - (x < (double)i);
}

/* x * 10^k in one correctly rounded operation (|k| <= POW10_MAX). */
static double scale10(double x, int k)
{
    return k >= 0 ? x * POW10[k] : x / POW10[-k];
}

/* Distance from a computed value to the exact one it stands for, and more:
 * every scaled value below is under 2^30, where a double's rounding error
 * is at most 2^-24 (6e-8). Anything closer than this to a decision point is
 * left to the printf loop. */
#define NEAR 1e-6

/*
 * The same text as shortest_text(v, 1, 9, float) without printf or strtof.
 * v, and the midpoints lo / hi between v and its float neighbours (exact in
 * double), are scaled by one power of ten so that v has nine digits before
 * the point: y = v * 10^k in [1e8, 1e9), each a single correctly rounded
 * operation, so within 2^-24 of the exact value. For p = 9, 8, ... digits,
 * the p-digit rounding of v is then an integer rounding of y to a multiple
 * of 10^(9-p) (exact in integers, unless y is within NEAR of a tie), and it
 * reads back as v when that multiple lies strictly between the scaled lo and
 * hi (unless within NEAR of one: strtof's ties). Reading back is monotonic
 * in p (the nearest p+1 digit number is never farther than the nearest p
 * digit one), so the first p that fails ends the search. Returns the length
 * written to out (32 bytes at least), or 0 when too close to call or out of
 * the range handled (NaN, Inf, zero is handled, below 1e-14 or from 1e30):
 * the caller then uses shortest_text.
 */
static size_t float_shortest_fast(float f, char *out, int *whole)
{
    static const uint32_t P10[] = {1,      10,      100,      1000,      10000,
                                   100000, 1000000, 10000000, 100000000, 1000000000};
    double a = fabs((double)f);
    int neg = signbit(f) != 0;
    if (a == 0.0) {
        size_t n = 0;
        if (neg)
            out[n++] = '-';
        out[n++] = '0';
        *whole = 1;
        return n;
    }
    if (!(a >= 1e-14 && a < 1e30))
        return 0;
    /* neighbours of a positive normal float: its bit pattern +- 1 */
    float af = (float)a, up, dn;
    uint32_t bits;
    memcpy(&bits, &af, sizeof bits);
    uint32_t ub = bits + 1, db = bits - 1;
    memcpy(&up, &ub, sizeof up);
    memcpy(&dn, &db, sizeof dn);
    double hi = (a + (double)up) / 2, lo = (a + (double)dn) / 2;
    int e2 = (int)((bits >> 23) & 0xFF) - 127;
    int x10 = floor_int((double)e2 * 0.30102999566398120); /* floor(log10 a), or one low */
    int k = 8 - x10;
    if (k > POW10_MAX || k < -POW10_MAX)
        return 0;
    double y = scale10(a, k);
    if (y >= 1e9) {
        x10++;
        if (--k < -POW10_MAX)
            return 0;
        y = scale10(a, k);
    }
    if (!(y >= 1e8 && y < 1e9))
        return 0; /* at the edge of a decade: let printf decide */
    double L = scale10(lo, k), H = scale10(hi, k);
    uint64_t Y = (uint64_t)y;   /* 0 < y < 2^30: truncation is floor */
    double fr = y - (double)Y;  /* exact */
    uint64_t best = 0, q = Y; /* q = Y / 10^j, one constant division per step */
    int best_j = -1;
    for (int j = 0; j <= 8; j++, q /= 10) {
        uint64_t P = P10[j];
        double r = (double)(Y - q * P) + fr, half = 0.5 * (double)P; /* both exact */
        if (fabs(r - half) < NEAR)
            return 0; /* near a tie: let printf decide */
        uint64_t d = q + (r > half);
        double c = (double)(d * P);
        if (fabs(c - L) < NEAR || fabs(c - H) < NEAR)
            return 0; /* on a midpoint: strtof's tie rule decides */
        if (!(c > L && c < H))
            break;
        best = d;
        best_j = j;
    }
    if (best_j < 0)
        return 0; /* nine digits always read back; be safe */
    int p = 9 - best_j;
    if (best == P10[p]) { /* rounded up to the next power of ten */
        best /= 10;
        x10++;
    }
    return format_g(out, neg, best, p, x10, whole);
}

/* 1 when the number text s[0..n) has neither a fraction nor an exponent
 * (nor is a NaN / Infinity token): "42", "-0". */
static int whole_number_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '.' || s[i] == 'e' || s[i] == 'N' || s[i] == 'I')
            return 0;
    return 1;
}

size_t rt_buf_json_float_text(float v, char *out)
{
    int whole = 0;
    size_t n = float_shortest_fast(v, out, &whole);
    if (n == 0) {
        n = shortest_text((double)v, 1, 9, 1, out);
        whole = whole_number_text(out, n);
    }
    if (whole) {
        memcpy(out + n, ".0", 2); /* a float stays a float: TF Serving's 42.0 */
        n += 2;
    }
    return n;
}

int rt_buf_json_float(rt_buf *b, float v)
{
    char tmp[RT_JSON_FLOAT_MAX];
    return rt_buf_append(b, tmp, rt_buf_json_float_text(v, tmp));
}

int rt_buf_json_double(rt_buf *b, double v)
{
    char tmp[40];
    return rt_buf_append(b, tmp, shortest_text(v, 1, 17, 0, tmp));
}

int rt_buf_put_int(rt_buf *b, int64_t v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--n] = '-';
    return rt_buf_append(b, tmp + n, sizeof tmp - n);
}

const char *rt_buf_trim_span(const char *s, size_t *len)
{
    size_t n = *len;
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' ||
                 *s == '\f')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r' ||
                 s[n - 1] == '\v' || s[n - 1] == '\f'))
        n--;
    *len = n;
    return s;
}

int rt_buf_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t rt_buf_utf8_put(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
