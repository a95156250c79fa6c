/*
 * support_json_ref.c — the reference request parser for differential
 * testing (test_fastpath, fuzz_json_request): the request rules of
 * docs/serving-json.md implemented a second, independent way, against which
 * the runtime's streaming parser (runtime/rt_json_*.c) is compared. It
 * pre-scans the body (strict UTF-8 with its own decoder, control bytes,
 * number grammar, depth; NaN / Infinity / -Infinity rewritten as strings
 * marked by a 0xFF byte), parses it with cJSON and walks the tree into the
 * batch. Where cJSON is laxer than JSON it is held to JSON: white space is
 * JSON's four bytes (cJSON skips every byte up to 0x20), and \u takes four
 * hex digits (cJSON reads a bad one as 0). Unknown top-level keys and
 * columns the signature lacks are ignored, a number beyond float32 is taken
 * (the transform makes it ±inf), :classify / :regress check the method of a
 * named signature. How a signature's inputs are read (features, CSV,
 * tf.Example) is decided here by its own code; signatures are looked up by
 * the runtime's rt_json_signature.c (not the parser's business). Messages
 * are not compared, only accept / refuse and values; the runtime's refusals
 * must be valid UTF-8 text, checked with this file's decoder.
 */
#include "support_json_ref.h"

#include "rt_json_internal.h"

#include <cJSON.h>
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL '\xff'

/* The length of the UTF-8 sequence (RFC 3629) at s[0..n), or 0 when it is
 * not one: decoded to its code point, which must need that many bytes and
 * be neither a UTF-16 surrogate nor above U+10FFFF. Written apart from the
 * runtime's rt_buf_utf8_seq (a table of byte ranges) so that the comparison
 * checks it. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    static const unsigned MIN[] = {0, 0, 0x80, 0x800, 0x10000};
    unsigned c = s[0], len, cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (unsigned k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    if (cp < MIN[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* Whether the text s is valid UTF-8: the runtime's refusals must be, though
 * they quote the client's names cut to a length. */
static int utf8_valid(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_len((const unsigned char *)s + i, n - i)))
            return 0;
    return 1;
}

/* A path for error messages: "instances[3].age". */
typedef struct jpath {
    char s[160];
} jpath;

/* printf into a path or a short buffer; long names are cut (messages only). */
static void fmt_into(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fmt_into(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(dst, cap, fmt, ap) < 0 && cap > 0)
        dst[0] = '\0';
    va_end(ap);
}

/* ------------------------------------------------------------ pre-scan */

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* A byte that may continue a number literal in the eyes of a lenient parser. */
static int is_number_byte(char ch)
{
    return is_digit(ch) || ch == '.' || ch == 'e' || ch == 'E' || ch == '+' || ch == '-';
}

/* Checks the number literal at body[i] (a '-' or a digit) against JSON's
 * grammar; returns the index after it, or 0 with *leading_zero telling why. */
static size_t scan_number(const char *body, size_t len, size_t i, int *leading_zero)
{
    size_t j = i;
    *leading_zero = 0;
    if (body[j] == '-')
        j++;
    if (j >= len || !is_digit(body[j]))
        return 0;
    if (body[j] == '0') {
        j++;
        if (j < len && is_digit(body[j])) {
            *leading_zero = 1;
            return 0;
        }
    } else {
        while (j < len && is_digit(body[j]))
            j++;
    }
    if (j < len && body[j] == '.') {
        if (++j >= len || !is_digit(body[j]))
            return 0;
        while (j < len && is_digit(body[j]))
            j++;
    }
    if (j < len && (body[j] == 'e' || body[j] == 'E')) {
        j++;
        if (j < len && (body[j] == '+' || body[j] == '-'))
            j++;
        if (j >= len || !is_digit(body[j]))
            return 0;
        while (j < len && is_digit(body[j]))
            j++;
    }
    if (j < len && is_number_byte(body[j]))
        return 0;
    return j;
}

/* The lexical faults cJSON lets through, refused with where they are. */
typedef enum { LEX_UTF8, LEX_CONTROL, LEX_NUMBER } lex_fault;

static rt_status lex_error(const char *body, size_t len, size_t at, lex_fault kind,
                           const char *why, rt_err *err)
{
    const char *where = "request body"; /* the runtime's messages name the member */
    unsigned char ch = (unsigned char)body[at];
    if (kind == LEX_UTF8)
        return rt_err_set(err, RT_ERR_INVALID, "%s: invalid UTF-8 at byte %zu (%s)", where, at,
                          why);
    if (kind == LEX_CONTROL)
        return rt_err_set(err, RT_ERR_INVALID, "%s: raw control character U+%04X in a string "
                          "at byte %zu: not valid JSON (escape it, as \\u%04x)", where, ch, at,
                          ch);
    size_t n = 0;
    while (at + n < len && n < 24 && is_number_byte(body[at + n]))
        n++;
    return rt_err_set(err, RT_ERR_INVALID, "%s: number %.*s%s %s at byte %zu: not valid JSON",
                      where, (int)n, body + at, at + n < len && is_number_byte(body[at + n])
                      ? "..." : "", why, at);
}

/*
 * Copies body into out, checking what cJSON does not: strict UTF-8 (no
 * overlong forms, surrogates, truncated sequences, nothing above U+10FFFF),
 * no raw control byte inside a string, number literals in JSON's grammar
 * (no leading zero, no "1." or "-.5"), and the nesting depth. NaN, Infinity
 * and -Infinity in a value's place become sentinel strings (SENTINEL and
 * the token); anywhere else they are left for cJSON to refuse.
 */
static rt_status prescan(const char *body, size_t len, int max_depth, rt_buf *out, rt_err *err)
{
    static const struct { const char *tok, *rep; size_t tl; } toks[] = {
        {"NaN", "\"\xffNaN\"", 3},
        {"Infinity", "\"\xffInfinity\"", 8},
        {"-Infinity", "\"\xff-Infinity\"", 9},
    };
    rt_status st = RT_OK;
    unsigned char local[256], *is_obj = local; /* per depth: object (1) or list */
    rt_buf_reset(out);
    if (rt_buf_reserve(out, len + 16) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "request body: out of memory");
    if (max_depth >= (int)sizeof local && !(is_obj = malloc((size_t)max_depth + 1)))
        return rt_err_set(err, RT_ERR_NOMEM, "request body: out of memory");
    is_obj[0] = 0;
    int depth = 0, in_str = 0;
    char prev = '\0'; /* the last significant byte outside strings */
    size_t i = 0, run = 0; /* body[run..i) not copied yet */
    while (i < len) {
        unsigned char ch = (unsigned char)body[i];
        if (in_str) {
            if (ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\') {
                i++;
            } else if (ch == '"') {
                in_str = 0;
                i++;
            } else if (ch == '\\') {
                /* an escape: cJSON checks it; a raw byte after the
                 * backslash is checked like any other */
                unsigned char nx = i + 1 < len ? (unsigned char)body[i + 1] : 0;
                if (nx == 'u') { /* cJSON reads a bad hex digit as 0 */
                    for (size_t h = i + 2; h < i + 6; h++) {
                        if (h >= len || !isxdigit((unsigned char)body[h])) {
                            st = rt_err_set(err, RT_ERR_INVALID, "request body: bad \\u escape");
                            goto out;
                        }
                    }
                }
                i += nx >= 0x20 && nx < 0x80 ? 2 : 1;
            } else if (ch < 0x20) {
                st = lex_error(body, len, i, LEX_CONTROL, NULL, err);
                goto out;
            } else {
                size_t k = utf8_len((const unsigned char *)body + i, len - i);
                if (!k) {
                    st = lex_error(body, len, i, LEX_UTF8, "not a UTF-8 sequence", err);
                    goto out;
                }
                i += k;
            }
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            i++;
            continue;
        }
        if (ch < 0x20) {
            st = rt_err_set(err, RT_ERR_INVALID, "request body: byte %u outside a string",
                            (unsigned)ch);
            goto out;
        }
        char sig = (char)ch;
        if (ch == '"') {
            in_str = 1;
        } else if (ch == '[' || ch == '{') {
            if (++depth > max_depth) {
                st = rt_err_set(err, RT_ERR_LIMIT, "request body: JSON nested deeper than %d "
                                "levels", max_depth);
                goto out;
            }
            is_obj[depth] = ch == '{';
        } else if (ch == ']' || ch == '}') {
            if (depth > 0)
                depth--;
        } else if (ch == 'N' || ch == 'I' || ch == '-' || is_digit((char)ch)) {
            int value_place = depth == 0 || prev == ':' || prev == '[' ||
                              (prev == ',' && !is_obj[depth]);
            size_t t = 0;
            while (t < sizeof toks / sizeof toks[0] &&
                   !(value_place && len - i >= toks[t].tl &&
                     memcmp(body + i, toks[t].tok, toks[t].tl) == 0))
                t++;
            if (t < sizeof toks / sizeof toks[0]) {
                if (rt_buf_append(out, body + run, i - run) != 0 ||
                    rt_buf_puts(out, toks[t].rep) != 0) {
                    st = rt_err_set(err, RT_ERR_NOMEM, "request body: out of memory");
                    goto out;
                }
                i += toks[t].tl;
                run = i;
                prev = '0';
                continue;
            }
            if (ch == '-' || is_digit((char)ch)) {
                int lz;
                size_t end = scan_number(body, len, i, &lz);
                if (!end) {
                    st = lex_error(body, len, i, LEX_NUMBER,
                                   lz ? "has a leading zero" : "is malformed", err);
                    goto out;
                }
                i = end;
                prev = '0';
                continue;
            }
        } else if (ch >= 0x80) {
            size_t k = utf8_len((const unsigned char *)body + i, len - i);
            if (!k) {
                st = lex_error(body, len, i, LEX_UTF8, "not a UTF-8 sequence", err);
                goto out;
            }
            i += k;
            prev = 'x';
            continue;
        }
        prev = sig;
        i++;
    }
    if (rt_buf_append(out, body + run, len - run) != 0)
        st = rt_err_set(err, RT_ERR_NOMEM, "request body: out of memory");
out:
    if (is_obj != local)
        free(is_obj);
    return st;
}

/* Parses the pre-scanned text; *root must be freed with cJSON_Delete. */
static rt_status parse_body(const char *body, size_t len, const rt_json_params *p, rt_ctx *c,
                            cJSON **root, rt_err *err)
{
    rt_status st = prescan(body, len, p->max_depth, &c->text, err);
    if (st != RT_OK)
        return st;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(c->text.data, c->text.len, &end, 0);
    if (!j) {
        /* The error position comes back in `end` (cJSON_GetErrorPtr is a
         * process-wide global, not safe with many threads). */
        const char *at = end;
        size_t off = (at && at >= c->text.data && at <= c->text.data + c->text.len)
                         ? (size_t)(at - c->text.data) : 0;
        return rt_err_set(err, RT_ERR_INVALID, "request body is not valid JSON (near byte %zu)",
                          off);
    }
    for (const char *q = end; q && q < c->text.data + c->text.len; q++) {
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            cJSON_Delete(j);
            return rt_err_set(err, RT_ERR_INVALID, "request body: text after the JSON value "
                              "(byte %zu)", (size_t)(q - c->text.data));
        }
    }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return rt_err_set(err, RT_ERR_INVALID, "request body must be a JSON object");
    }
    *root = j;
    return RT_OK;
}

/* ------------------------------------------------------------- values */

static int is_sentinel(const cJSON *v)
{
    return cJSON_IsString(v) && v->valuestring && v->valuestring[0] == SENTINEL;
}

/* A number, or one of the NaN / Infinity tokens. */
static int get_number(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 1;
    }
    if (is_sentinel(v)) {
        const char *t = v->valuestring + 1;
        *out = t[0] == 'N' ? NAN : t[0] == '-' ? -INFINITY : INFINITY;
        return 1;
    }
    return 0;
}

/* What a value is, for messages: "abc" (quoted, shortened), 3, true, null,
 * an object, a list. */
static void describe(const cJSON *v, char *buf, size_t cap)
{
    if (is_sentinel(v))
        snprintf(buf, cap, "%s", v->valuestring + 1);
    else if (cJSON_IsString(v)) {
        /* At most 40 bytes, cut before a UTF-8 continuation byte. */
        size_t n = strlen(v->valuestring), k = n > 40 ? 40 : n;
        while (k > 0 && k < n && ((unsigned char)v->valuestring[k] & 0xC0) == 0x80)
            k--;
        snprintf(buf, cap, "\"%.*s%s\"", (int)k, v->valuestring, k < n ? "..." : "");
    } else if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        snprintf(buf, cap, "a number beyond a double's range");
    else if (cJSON_IsNumber(v))
        snprintf(buf, cap, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, cap, "null");
    else if (cJSON_IsArray(v))
        snprintf(buf, cap, "a list");
    else
        snprintf(buf, cap, "an object");
}

static rt_status type_error(rt_err *err, const jpath *path, const char *want, const cJSON *v)
{
    char got[64];
    describe(v, got, sizeof got);
    return rt_err_set(err, RT_ERR_INVALID, "%s: expected %s, got %s", path->s, want, got);
}

/* {"b64": "..."}: exactly one member, named b64, holding a string. */
static int is_b64(const cJSON *v)
{
    return cJSON_IsObject(v) && v->child && !v->child->next && v->child->string &&
           strcmp(v->child->string, "b64") == 0;
}

static int b64_digit(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+' || ch == '-') return 62;
    if (ch == '/' || ch == '_') return 63;
    return -1;
}

/* Decodes base64 (standard or URL-safe, padding optional) into out. */
static rt_status b64_decode(const cJSON *obj, rt_buf *out, const jpath *path, rt_err *err)
{
    const cJSON *v = obj->child;
    if (!cJSON_IsString(v) || is_sentinel(v))
        return type_error(err, path, "a base64 string in \"b64\"", v);
    const char *s = v->valuestring;
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '=')
        n--;
    rt_buf_reset(out);
    if (rt_buf_reserve(out, n / 4 * 3 + 3) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path->s);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64_digit((unsigned char)s[i]);
        if (d < 0)
            return rt_err_set(err, RT_ERR_INVALID, "%s: invalid base64 character at %zu",
                              path->s, i);
        acc = (acc << 6) | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out->data[out->len++] = (char)((acc >> bits) & 0xFF);
        }
    }
    if (n % 4 == 1)
        return rt_err_set(err, RT_ERR_INVALID, "%s: truncated base64", path->s);
    out->data[out->len] = '\0';
    return RT_OK;
}

/* Pushes one scalar for a JSON-features input. */
static rt_status push_scalar(rt_batch *b, size_t idx, size_t in, int is_num, const cJSON *v,
                             rt_ctx *c, const jpath *path, rt_err *err)
{
    rt_status st;
    if (is_num) {
        double d;
        if (!get_number(v, &d))
            return type_error(err, path, "a number", v);
        /* every numeric input is DT_FLOAT; the tokens stand for NaN and
         * the infinities, a literal must fit */
        if (cJSON_IsNumber(v) && !isfinite(d)) { /* beyond float32: ±inf later */
            if (!isfinite(d))
                return rt_err_set(err, RT_ERR_INVALID, "%s: number out of range: beyond a "
                                  "double's (write Infinity or -Infinity for those)", path->s);
            return rt_err_set(err, RT_ERR_INVALID, "%s: number out of range: %.9g is beyond "
                              "float32's (the input is DT_FLOAT, at most %.9g in magnitude)",
                              path->s, d, (double)FLT_MAX);
        }
        st = rt_batch_push_num(b, idx, in, d);
    } else if (is_b64(v)) {
        if ((st = b64_decode(v, &c->bytes, path, err)) != RT_OK)
            return st;
        st = rt_batch_push_str(b, idx, in, c->bytes.data, c->bytes.len);
    } else if (cJSON_IsString(v) && !is_sentinel(v)) {
        st = rt_batch_push_str(b, idx, in, v->valuestring, strlen(v->valuestring));
    } else {
        return type_error(err, path, "a string", v);
    }
    if (st != RT_OK)
        return rt_err_set(err, st, "%s: %s", path->s, rt_err_status_str(st));
    return RT_OK;
}

/* Pushes the value of input `in` (a scalar or a flat list) for instance idx. */
static rt_status push_input(const rt_graph *g, rt_batch *b, size_t idx, size_t in,
                            const cJSON *v, rt_ctx *c, const jpath *path, rt_err *err)
{
    int is_num = rt_graph_input_dtype(g, in) != PREDICTD__DTYPE__DT_STRING;
    if (!cJSON_IsArray(v))
        return push_scalar(b, idx, in, is_num, v, c, path, err);
    size_t k = 0;
    for (const cJSON *e = v->child; e; e = e->next, k++) {
        jpath ep;
        fmt_into(ep.s, sizeof ep.s, "%s[%zu]", path->s, k);
        if (cJSON_IsArray(e) || (cJSON_IsObject(e) && !is_b64(e)))
            return type_error(err, &ep, is_num ? "a number" : "a string", e);
        rt_status st = push_scalar(b, idx, in, is_num, e, c, &ep, err);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

/* How a request's inputs are read: raw features keyed by name, or one
 * serialized input (a CSV line, or a tf.Example: "example_proto" for an
 * EXAMPLE receiver, "inputs" for a classification / regression signature). */
typedef enum { IN_FEATURES, IN_CSV, IN_EXAMPLE } in_kind;

typedef struct in_mode {
    in_kind kind;
    const char *name; /* the serialized input's name */
} in_mode;

/* The rule as the documentation states it, written apart from the runtime's
 * rt_json_mode_for so that the comparison checks it: TF's classification
 * and regression signatures (their method names exactly, the only ones an
 * export holds) take tf.Examples under their one input "inputs"; any other
 * signature takes what the export's receiver reads (docs/serving-json.md). */
static in_mode mode_for(const rt_graph *g, const Predictd__SignatureDef *sig)
{
    static const struct {
        Predictd__Receiver receiver;
        in_mode mode;
    } RECEIVERS[] = {
        {PREDICTD__RECEIVER__RECEIVER_CSV, {IN_CSV, "csv_row"}},
        {PREDICTD__RECEIVER__RECEIVER_EXAMPLE, {IN_EXAMPLE, "example_proto"}},
    };
    const char *method = sig && sig->method_name ? sig->method_name : "";
    int examples = !strcmp(method, "tensorflow/serving/classify") ||
                   !strcmp(method, "tensorflow/serving/regress");
    if (examples && sig->n_inputs == 1 && sig->inputs[0]->name &&
        !strcmp(sig->inputs[0]->name, "inputs"))
        return (in_mode){IN_EXAMPLE, "inputs"};
    for (size_t i = 0; i < sizeof RECEIVERS / sizeof *RECEIVERS; i++)
        if (RECEIVERS[i].receiver == rt_graph_def(g)->receiver)
            return RECEIVERS[i].mode;
    return (in_mode){IN_FEATURES, NULL};
}

static size_t mode_num_inputs(const rt_graph *g, const in_mode *md)
{
    return md->kind == IN_FEATURES ? rt_graph_num_inputs(g) : 1;
}

/* The one string (or {"b64"}) of a serialized input. */
static rt_status push_serialized(const in_mode *md, rt_batch *b, size_t idx, const cJSON *v,
                                 rt_ctx *c, const jpath *path, rt_err *err)
{
    const char *s;
    size_t n;
    rt_status st;
    if (is_b64(v)) {
        if ((st = b64_decode(v, &c->bytes, path, err)) != RT_OK)
            return st;
        s = c->bytes.data;
        n = c->bytes.len;
    } else if (cJSON_IsString(v) && !is_sentinel(v)) {
        s = v->valuestring;
        n = strlen(s);
    } else {
        return type_error(err, path, md->kind == IN_CSV ? "a CSV line (string)"
                          : "a serialized tf.Example ({\"b64\": ...})", v);
    }
    if (md->kind == IN_CSV)
        st = rt_receiver_csv_row(b, idx, s ? s : "", n, err);
    else
        st = rt_receiver_example(b, idx, (const uint8_t *)(s ? s : ""), n, err);
    if (st != RT_OK)
        rt_err_prefix(err, "%s", path->s);
    return st;
}

/* Index of the input called name, -1 unknown, -2 a column the model does
 * not read (label / unused: ignored). */
static long find_sig_input(const rt_graph *g, const in_mode *md, const char *name)
{
    const Predictd__ModelDef *def = rt_graph_def(g);
    if (md->kind != IN_FEATURES)
        return strcmp(name, md->name) == 0 ? 0 : -1;
    long in = rt_graph_find_input(g, name, strlen(name));
    if (in >= 0)
        return in;
    for (size_t k = 0; k < def->n_raw_columns; k++) {
        const Predictd__RawColumn *rc = def->raw_columns[k];
        if (rc->name && strcmp(rc->name, name) == 0 && (rc->is_label || rc->unused || rc->is_weight))
            return -2;
    }
    return -1;
}

static rt_status push_sig_value(const rt_graph *g, const in_mode *md, rt_batch *b, size_t idx,
                                size_t in, const cJSON *v, rt_ctx *c, const jpath *path,
                                rt_err *err)
{
    if (md->kind == IN_FEATURES)
        return push_input(g, b, idx, in, v, c, path, err);
    return push_serialized(md, b, idx, v, c, path, err);
}

/* "a, b, c" — the names a request may use (cut short when long). */
static void list_inputs(const rt_graph *g, const in_mode *md, char *buf, size_t cap)
{
    size_t used = 0, n = mode_num_inputs(g, md);
    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < cap; i++) {
        const char *name = md->kind == IN_FEATURES ? rt_graph_input_name(g, i) : md->name;
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", name ? name : "");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
}

/* ------------------------------------------------------ instance parsing */

/* Fills instance idx from an object keyed by input name. seen has one byte
 * per signature input (cleared by the caller). */
static rt_status fill_from_object(const rt_graph *g, const in_mode *md, rt_batch *b,
                                  size_t idx, const cJSON *obj, unsigned char *seen, rt_ctx *c,
                                  const char *where, rt_err *err)
{
    for (const cJSON *m = obj->child; m; m = m->next) {
        jpath path;
        fmt_into(path.s, sizeof path.s, "%s.%.80s", where, m->string ? m->string : "");
        long in = find_sig_input(g, md, m->string ? m->string : "");
        if (in == -2)
            continue;
        if (in < 0)
        {
            char names[320];
            list_inputs(g, md, names, sizeof names);
            return rt_err_set(err, RT_ERR_INVALID, "%s: unknown input; the model's inputs: %s",
                              path.s, names);
        }
        if (seen[in])
            return rt_err_set(err, RT_ERR_INVALID, "%s: given more than once", path.s);
        seen[in] = 1;
        rt_status st = push_sig_value(g, md, b, idx, (size_t)in, m, c, &path, err);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

static rt_status check_count(size_t n, const rt_json_params *p, const char *what, rt_err *err)
{
    if (n > p->max_instances)
        return rt_err_set(err, RT_ERR_LIMIT, "%s: %zu instances, the limit is %zu", what, n,
                          p->max_instances);
    return RT_OK;
}

/* "instances": one entry per instance. */
static rt_status parse_rows(const rt_graph *g, const in_mode *md, const cJSON *inst,
                            const rt_json_params *p, rt_ctx *c, unsigned char *seen, rt_err *err)
{
    if (!cJSON_IsArray(inst))
        return rt_err_set(err, RT_ERR_INVALID, "\"instances\" must be a list");
    size_t n = (size_t)cJSON_GetArraySize(inst);
    rt_status st = check_count(n, p, "instances", err);
    if (st != RT_OK)
        return st;
    size_t nin = mode_num_inputs(g, md);
    size_t i = 0;
    for (const cJSON *e = inst->child; e; e = e->next, i++) {
        size_t idx;
        if ((st = rt_batch_add(c->batch, &idx)) != RT_OK)
            return rt_err_set(err, st, "instances[%zu]: %s", i, rt_err_status_str(st));
        char where[48];
        fmt_into(where, sizeof where, "instances[%zu]", i);
        if (cJSON_IsObject(e) && !is_b64(e)) {
            memset(seen, 0, nin);
            st = fill_from_object(g, md, c->batch, idx, e, seen, c, where, err);
        } else if (nin == 1) {
            jpath path;
            fmt_into(path.s, sizeof path.s, "%s", where);
            st = push_sig_value(g, md, c->batch, idx, 0, e, c, &path, err);
        } else {
            char got[64];
            describe(e, got, sizeof got);
            st = rt_err_set(err, RT_ERR_INVALID, "%s: expected an object keyed by input name "
                            "(the model has %zu inputs), got %s", where, nin, got);
        }
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

/* "inputs": columnar. */
static rt_status parse_columns(const rt_graph *g, const in_mode *md, const cJSON *inputs,
                               const rt_json_params *p, rt_ctx *c, unsigned char *seen,
                               rt_err *err)
{
    size_t nin = mode_num_inputs(g, md);
    rt_status st;
    if (!cJSON_IsObject(inputs) || is_b64(inputs)) {
        if (nin != 1)
            return rt_err_set(err, RT_ERR_INVALID, "\"inputs\" must be an object keyed by "
                              "input name (the model has %zu inputs)", nin);
        /* One input: a list of values, or one value for one instance. */
        size_t n = cJSON_IsArray(inputs) ? (size_t)cJSON_GetArraySize(inputs) : 1;
        if ((st = check_count(n, p, "inputs", err)) != RT_OK)
            return st;
        const cJSON *e = cJSON_IsArray(inputs) ? inputs->child : inputs;
        for (size_t i = 0; i < n && e; i++, e = e->next) {
            size_t idx;
            if ((st = rt_batch_add(c->batch, &idx)) != RT_OK)
                return rt_err_set(err, st, "inputs[%zu]: %s", i, rt_err_status_str(st));
            jpath path;
            fmt_into(path.s, sizeof path.s, "inputs[%zu]", i);
            if ((st = push_sig_value(g, md, c->batch, idx, 0, e, c, &path, err)) != RT_OK)
                return st;
        }
        return RT_OK;
    }
    /* Named columns: every list has one entry per instance. */
    memset(seen, 0, nin);
    long n = -1;
    const char *first = NULL;
    for (const cJSON *m = inputs->child; m; m = m->next) {
        const char *name = m->string ? m->string : "";
        long in = find_sig_input(g, md, name);
        if (in < 0)
            continue; /* not read by the signature: ignored, as TF Serving does */
        if (seen[in])
            return rt_err_set(err, RT_ERR_INVALID, "inputs.%.80s: given more than once", name);
        seen[in] = 1;
        if (!cJSON_IsArray(m))
            return rt_err_set(err, RT_ERR_INVALID, "inputs.%.80s: expected a list with one "
                              "value per instance", name);
        long cnt = (long)cJSON_GetArraySize(m);
        if (n < 0) {
            n = cnt;
            first = name;
            if ((st = check_count((size_t)n, p, "inputs", err)) != RT_OK)
                return st;
            for (long i = 0; i < n; i++) {
                size_t idx;
                if ((st = rt_batch_add(c->batch, &idx)) != RT_OK)
                    return rt_err_set(err, st, "inputs: %s", rt_err_status_str(st));
            }
        } else if (cnt != n) {
            return rt_err_set(err, RT_ERR_INVALID, "inputs.%.80s: %ld values, but inputs.%.80s "
                              "has %ld", name, cnt, first, n);
        }
        size_t i = 0;
        for (const cJSON *e = m->child; e; e = e->next, i++) {
            jpath path;
            fmt_into(path.s, sizeof path.s, "inputs.%.80s[%zu]", name, i);
            if ((st = push_sig_value(g, md, c->batch, i, (size_t)in, e, c, &path, err)) != RT_OK)
                return st;
        }
    }
    if (n < 0 && inputs->child) /* columns given, none the signature reads */
        return rt_err_set(err, RT_ERR_INVALID, "inputs: none of the model's inputs is given");
    return RT_OK;
}

/* Checks the top-level keys against allowed (NULL-terminated): no unknown
 * key, none twice. */
static rt_status check_top_keys(const cJSON *root, const char *const *allowed, rt_err *err)
{
    for (const cJSON *m = root->child; m; m = m->next) {
        const char *k = m->string ? m->string : "";
        int ok = 0;
        for (size_t a = 0; allowed[a]; a++)
            ok |= strcmp(k, allowed[a]) == 0;
        if (!ok)
            continue; /* TF Serving's rule: other keys are ignored */
        for (const cJSON *q = root->child; q != m; q = q->next)
            if (q->string && strcmp(q->string, k) == 0)
                return rt_err_set(err, RT_ERR_INVALID, "key \"%.80s\" given twice", k);
    }
    return RT_OK;
}

static rt_status get_signature(const rt_graph *g, const cJSON *root,
                               const Predictd__SignatureDef **sig, rt_err *err)
{
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(root, "signature_name");
    if (sn && (!cJSON_IsString(sn) || is_sentinel(sn))) {
        char got[64];
        describe(sn, got, sizeof got);
        return rt_err_set(err, RT_ERR_INVALID, "\"signature_name\" must be a string, got %s",
                          got);
    }
    return rt_json_find_signature(rt_graph_def(g), sn ? sn->valuestring : NULL, sig, err);
}

static rt_status parse_predict_root(const rt_graph *g, const cJSON *root,
                                    const rt_json_params *p, rt_ctx *c, int *columnar,
                                    const Predictd__SignatureDef **sig, rt_err *err)
{
    static const char *const keys[] = {"signature_name", "instances", "inputs", NULL};
    unsigned char *seen = NULL;
    rt_status st = check_top_keys(root, keys, err);
    if (st != RT_OK)
        return st;
    if ((st = get_signature(g, root, sig, err)) != RT_OK)
        return st;
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(root, "instances");
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    if (inst && cols)
        return rt_err_set(err, RT_ERR_INVALID, "give either \"instances\" or \"inputs\", "
                          "not both");
    if (!inst && !cols)
        return rt_err_set(err, RT_ERR_INVALID, "missing \"instances\" (rows) or \"inputs\" "
                          "(columns)");
    if ((st = rt_ctx_prepare(c, g, err)) != RT_OK)
        return st;
    in_mode md = mode_for(g, *sig);
    seen = calloc(mode_num_inputs(g, &md) + 1, 1);
    if (!seen)
        return rt_err_set(err, RT_ERR_NOMEM, "request: out of memory");
    *columnar = cols != NULL;
    st = inst ? parse_rows(g, &md, inst, p, c, seen, err)
              : parse_columns(g, &md, cols, p, c, seen, err);
    free(seen);
    return st;
}


/* --------------------------------------------------- classify / regress */

static rt_status parse_examples(const rt_graph *g, rt_method method, const cJSON *root,
                                const rt_json_params *p, rt_ctx *c, rt_err *err)
{
    static const char *const keys[] = {"signature_name", "examples", "context", NULL};
    rt_status st = check_top_keys(root, keys, err);
    if (st != RT_OK)
        return st;
    const Predictd__SignatureDef *sig = NULL;
    if ((st = get_signature(g, root, &sig, err)) != RT_OK)
        return st;
    if (cJSON_GetObjectItemCaseSensitive(root, "signature_name") &&
        (st = rt_json_check_signature_method(sig, method, err)) != RT_OK)
        return st;
    if (!cJSON_GetObjectItemCaseSensitive(root, "signature_name") &&
        (st = rt_json_check_default_method(g, method, err)) != RT_OK)
        return st;
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(root, "examples");
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(root, "context");
    if (!ex)
        return rt_err_set(err, RT_ERR_INVALID, "missing \"examples\"");
    if (!cJSON_IsArray(ex))
        return rt_err_set(err, RT_ERR_INVALID, "\"examples\" must be a list of objects");
    if (ctx && !cJSON_IsObject(ctx))
        return rt_err_set(err, RT_ERR_INVALID, "\"context\" must be an object");
    size_t n = (size_t)cJSON_GetArraySize(ex);
    if ((st = check_count(n, p, "examples", err)) != RT_OK)
        return st;
    if ((st = rt_ctx_prepare(c, g, err)) != RT_OK)
        return st;
    in_mode md = {IN_FEATURES, NULL}; /* examples are keyed by feature */
    /* TF Serving turns each example into a tf.Example: a feature it lacks
     * has no values (numeric ones still need their column's default_value). */
    rt_batch_set_missing(c->batch, RT_MISSING_EMPTY);
    size_t nin = rt_graph_num_inputs(g);
    unsigned char *seen = calloc(nin + 1, 1);
    if (!seen)
        return rt_err_set(err, RT_ERR_NOMEM, "request: out of memory");
    size_t i = 0;
    for (const cJSON *e = ex->child; e; e = e->next, i++) {
        char where[48];
        fmt_into(where, sizeof where, "examples[%zu]", i);
        size_t idx;
        if (!cJSON_IsObject(e) || is_b64(e)) {
            char got[64];
            describe(e, got, sizeof got);
            st = rt_err_set(err, RT_ERR_INVALID, "%s: expected an object keyed by feature "
                            "name, got %s", where, got);
            break;
        }
        if ((st = rt_batch_add(c->batch, &idx)) != RT_OK) {
            rt_err_set(err, st, "%s: %s", where, rt_err_status_str(st));
            break;
        }
        memset(seen, 0, nin);
        if ((st = fill_from_object(g, &md, c->batch, idx, e, seen, c, where, err)) != RT_OK)
            break;
        if (!ctx)
            continue;
        /* Context features: a feature also in the example is an error. */
        for (const cJSON *m = ctx->child; m; m = m->next) {
            const char *name = m->string ? m->string : "";
            long in = find_sig_input(g, &md, name);
            if (in == -2)
                continue;
            if (in < 0) {
                st = rt_err_set(err, RT_ERR_INVALID, "context.%.80s: unknown feature", name);
                break;
            }
            if (seen[in]) {
                st = rt_err_set(err, RT_ERR_INVALID, "%s.%.80s: also given in context (or "
                                "twice there)", where, name);
                break;
            }
            seen[in] = 1;
            jpath path;
            fmt_into(path.s, sizeof path.s, "context.%.80s", name);
            if ((st = push_input(g, c->batch, idx, (size_t)in, m, c, &path, err)) != RT_OK)
                break;
        }
        if (st != RT_OK)
            break;
    }
    free(seen);
    return st;
}

rt_status support_json_ref_parse(const rt_model *m, rt_method method, const char *body,
                                 size_t len, const rt_json_params *p, rt_ctx *c, int *columnar,
                                 const void **sig, rt_err *err)
{
    rt_json_params dp = rt_json_default_params();
    if (!p)
        p = &dp;
    const rt_graph *g = rt_model_graph(m);
    const Predictd__SignatureDef *s = NULL;
    *columnar = 0;
    *sig = NULL;
    cJSON *root = NULL;
    rt_status st = parse_body(body ? body : "", len, p, c, &root, err);
    if (st != RT_OK)
        return st;
    if (method == RT_METHOD_PREDICT)
        st = parse_predict_root(g, root, p, c, columnar, &s, err);
    else if ((st = rt_json_check_method(g, method, err)) == RT_OK)
        st = parse_examples(g, method, root, p, c, err);
    cJSON_Delete(root);
    *sig = s;
    return st;
}

/* ------------------------------------------------- differential check */

/* Strings the same, but the new parser keeps what follows an escaped NUL
 * (\u0000), which cJSON's C strings cut off: compared up to it. */
static int same_value(const rt_value *a, const rt_value *b)
{
    if ((a->str == NULL) != (b->str == NULL))
        return 0;
    if (a->str) {
        const char *nul = memchr(a->str, '\0', a->len);
        size_t la = nul ? (size_t)(nul - a->str) : a->len;
        return la == b->len && memcmp(a->str, b->str, la) == 0;
    }
    return memcmp(&a->num, &b->num, sizeof a->num) == 0;
}

int support_json_ref_compare(const rt_model *m, rt_method method, const char *body, size_t len,
                             const rt_json_params *p, rt_ctx *a, rt_ctx *b, char *why,
                             size_t cap)
{
    const rt_graph *g = rt_model_graph(m);
    rt_err ea = {{0}}, eb = {{0}};
    int col_a = 0, col_b = 0;
    const Predictd__SignatureDef *sig_a = NULL;
    const void *sig_b = NULL;
    rt_status sa = method == RT_METHOD_PREDICT
                       ? rt_json_parse_predict(g, body, len, p, a, &col_a, &sig_a, &ea)
                       : rt_json_parse_examples(g, method, body, len, p, a, NULL, &ea);
    rt_status sb = support_json_ref_parse(m, method, body, len, p, b, &col_b, &sig_b, &eb);
    if ((sa == RT_OK) != (sb == RT_OK) && memmem(body, len, "\\u0000", 6)) {
        /* cJSON cuts a string at an escaped NUL; the runtime keeps the
         * bytes and lets the receiver decide (the CSV receiver refuses a
         * NUL in a field): such bodies may be judged differently */
        return 0;
    }
    if ((sa == RT_OK) != (sb == RT_OK)) {
        snprintf(why, cap, "new parser %s (%s), reference %s (%s)", sa ? "refuses" : "accepts",
                 sa ? ea.msg : "", sb ? "refuses" : "accepts", sb ? eb.msg : "");
        return -1;
    }
    if (sa != RT_OK) {
        if (!ea.msg[0]) {
            snprintf(why, cap, "refused without a message");
            return -1;
        }
        if (!utf8_valid(ea.msg)) {
            snprintf(why, cap, "the refusal is not valid UTF-8 text");
            return -1;
        }
        return 0;
    }
    if (col_a != col_b || (const void *)sig_a != sig_b) {
        snprintf(why, cap, "columnar %d / %d, signature %p / %p", col_a, col_b,
                 (const void *)sig_a, sig_b);
        return -1;
    }
    if (rt_batch_size(a->batch) != rt_batch_size(b->batch)) {
        snprintf(why, cap, "%zu instances, reference %zu", rt_batch_size(a->batch),
                 rt_batch_size(b->batch));
        return -1;
    }
    if (rt_batch_missing(a->batch) != rt_batch_missing(b->batch)) {
        snprintf(why, cap, "missing-input policy differs");
        return -1;
    }
    for (size_t i = 0; i < rt_batch_size(a->batch); i++) {
        for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
            size_t na, nb;
            const rt_value *va = rt_batch_cell(a->batch, i, in, &na);
            const rt_value *vb = rt_batch_cell(b->batch, i, in, &nb);
            int same = na == nb;
            for (size_t k = 0; same && k < na; k++)
                same = same_value(&va[k], &vb[k]);
            if (!same) {
                snprintf(why, cap, "instance %zu input %s differs", i,
                         rt_graph_input_name(g, in));
                return -1;
            }
        }
    }
    return 0;
}
