/*
 * rt_json_where.c — words for the request parser's messages: where a byte
 * of the body lies ("instances[3].age"), what a value is ("abc", 3, a
 * list), the path of a value being read, and messages kept valid UTF-8.
 * Everything here runs only when a request is refused.
 */
#include "rt_serve.h"
#include "rt_json_internal.h"
#include "rt_serve_limits.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Frames of open containers remembered for error paths (deeper ones are
 * counted, not named: the depth limit refuses them first by default). */

typedef struct loc_frame {
    int is_obj;
    size_t idx;      /* arrays: the element being read */
    const char *key; /* objects: the member being read (raw text), or NULL */
    size_t klen;
} loc_frame;

/* Appends the raw text of a key to path, cut at 80 bytes (before a UTF-8
 * continuation byte). */
static void path_key(char *path, size_t cap, size_t *used, const char *key, size_t klen)
{
    size_t k = klen > 80 ? 80 : klen;
    while (k > 0 && k < klen && ((unsigned char)key[k] & 0xC0) == 0x80)
        k--;
    int w = snprintf(path + *used, cap - *used, "%s%.*s", *used ? "." : "", (int)k, key);
    if (w > 0)
        *used = (size_t)w + *used < cap ? *used + (size_t)w : cap - 1;
}

/* Where byte `at` of the body lies, for messages: "instances[0].age",
 * "instances[0] (in a key)", or "request body" outside any member. Runs only
 * on errors; every byte before `at` has passed the reader's checks. */
void rt_json_locate(const char *body, size_t len, size_t at, char *out, size_t cap)
{
    loc_frame fr[RT_JSON_WHERE_FRAMES];
    size_t depth = 0;
    int in_str = 0, str_is_key = 0, want_key = 0;
    const char *str_start = NULL;
    for (size_t i = 0; i < at && i < len; i++) {
        char ch = body[i];
        loc_frame *top = depth > 0 && depth <= RT_JSON_WHERE_FRAMES ? &fr[depth - 1] : NULL;
        if (in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"') {
                in_str = 0;
                if (str_is_key && top) {
                    top->key = str_start;
                    top->klen = (size_t)(body + i - str_start);
                }
            }
            continue;
        }
        switch (ch) {
        case '"':
            in_str = 1;
            str_is_key = top && top->is_obj && want_key;
            str_start = body + i + 1;
            want_key = 0;
            break;
        case '{':
        case '[':
            depth++;
            if (depth <= RT_JSON_WHERE_FRAMES)
                fr[depth - 1] = (loc_frame){ch == '{', 0, NULL, 0};
            want_key = ch == '{';
            break;
        case '}':
        case ']':
            if (depth > 0)
                depth--;
            want_key = 0;
            break;
        case ',':
            if (top && top->is_obj) {
                top->key = NULL;
                want_key = 1;
            } else if (top) {
                top->idx++;
            }
            break;
        case ':':
            want_key = 0;
            break;
        default:
            break;
        }
    }
    size_t used = 0, n = depth < RT_JSON_WHERE_FRAMES ? depth : RT_JSON_WHERE_FRAMES;
    out[0] = '\0';
    for (size_t f = 0; f < n && used + 1 < cap; f++) {
        if (fr[f].is_obj) {
            if (!fr[f].key)
                break;
            path_key(out, cap, &used, fr[f].key, fr[f].klen);
        } else {
            int w = snprintf(out + used, cap - used, "[%zu]", fr[f].idx);
            if (w > 0)
                used = used + (size_t)w < cap ? used + (size_t)w : cap - 1;
        }
    }
    if (used == 0)
        snprintf(out, cap, "request body");
    if (in_str && str_is_key && used + 1 < cap)
        snprintf(out + used, cap - used, "%s", " (in a key)");
}

void rt_json_describe(const rt_jv *v, char *buf, size_t cap)
{
    switch (v->kind) {
    case RT_JV_STRING: {
        /* At most 40 bytes, cut before a UTF-8 continuation byte. */
        size_t n = v->n, k = n > 40 ? 40 : n;
        while (k > 0 && k < n && ((unsigned char)v->s[k] & 0xC0) == 0x80)
            k--;
        snprintf(buf, cap, "\"%.*s%s\"", (int)k, v->s, k < n ? "..." : "");
        break;
    }
    case RT_JV_NUMBER:
        if (v->token)
            snprintf(buf, cap, "%.*s", (int)v->n, v->s);
        else if (!isfinite(v->num))
            snprintf(buf, cap, "a number beyond a double's range");
        else
            snprintf(buf, cap, "%.17g", v->num);
        break;
    case RT_JV_TRUE:
        snprintf(buf, cap, "true");
        break;
    case RT_JV_FALSE:
        snprintf(buf, cap, "false");
        break;
    case RT_JV_NULL:
        snprintf(buf, cap, "null");
        break;
    case RT_JV_LIST:
        snprintf(buf, cap, "a list");
        break;
    default:
        snprintf(buf, cap, "an object");
        break;
    }
}

/* Appends text to out[*used..cap), keeping it terminated. */
static void put(char *out, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t cap, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (w > 0)
        *used = *used + (size_t)w < cap ? *used + (size_t)w : cap - 1;
}

void rt_json_path_format(const rt_jpath *p, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    put(out, cap, &used, "%s", p->top ? p->top : "");
    if (p->i >= 0 && !p->key_first)
        put(out, cap, &used, "[%ld]", p->i);
    if (p->key)
        put(out, cap, &used, ".%.*s", (int)(p->klen > 80 ? 80 : p->klen), p->key);
    if (p->i >= 0 && p->key_first)
        put(out, cap, &used, "[%ld]", p->i);
    if (p->k >= 0)
        put(out, cap, &used, "[%ld]", p->k);
}

rt_status rt_json_tidy_message(rt_status st, rt_err *err)
{
    if (st == RT_OK || !err)
        return st;
    size_t n = strnlen(err->msg, sizeof err->msg - 1);
    for (size_t i = 0; i < n;) {
        size_t k = rt_buf_utf8_seq(err->msg + i, n - i, NULL);
        if (!k) {
            err->msg[i] = '?';
            k = 1;
        }
        i += k;
    }
    return st;
}

/* The transform names rows "instances[i]": copies such a message into old
 * (RT_ERR_MAX bytes) and returns the text after "instances", else NULL. */
static const char *rows_message(const rt_err *err, char *old)
{
    static const char rows[] = "instances[";
    if (!err || strncmp(err->msg, rows, sizeof rows - 1) != 0)
        return NULL;
    memcpy(old, err->msg, RT_ERR_MAX);
    old[RT_ERR_MAX - 1] = '\0';
    return old + sizeof rows - 2;
}

void rt_json_name_examples(rt_err *err)
{
    char old[RT_ERR_MAX];
    const char *rest = rows_message(err, old);
    if (rest)
        snprintf(err->msg, sizeof err->msg, "examples%s", rest);
}

/* "a, b, c": the inputs instance i of b lacks where the transform needs
 * them (rt_transform_needs), cut with "..." when long. */
static void list_lacking(const rt_graph *g, const rt_batch *b, size_t i, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
        if (!rt_transform_needs(g, b, i, in))
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "",
                         rt_graph_input_name(g, in));
        if (w < 0 || (size_t)w >= cap - used) {
            if (cap > 4)
                memcpy(buf + cap - 4, "...", 4);
            return;
        }
        used += (size_t)w;
    }
}

/* The message names the first input lacking in the model's order (the
 * list's first), not the first the transform happened to miss: the head of
 * "X: missing input; not given: X, Y" and its list agree. An empty list
 * (nothing found lacking) leaves *name as it is. */
static void first_lacking(const char *lacking, const char **name, int *nl)
{
    if (!lacking[0])
        return;
    const char *comma = strstr(lacking, ", ");
    *name = lacking;
    *nl = (int)(comma ? (size_t)(comma - lacking) : strlen(lacking));
}

/* A columnar request's transform errors name the column: "instances[3].age:
 * expected 1 value, got 2" -> "inputs.age[3]: ...". A missing input lists
 * every input the request did not give (no values in any instance), with
 * TF Serving's message for the first. */
void rt_json_name_columns(const rt_graph *g, const rt_batch *b, rt_err *err)
{
    char old[RT_ERR_MAX];
    const char *rest = rows_message(err, old);
    if (!rest)
        return;
    char *end = NULL;
    unsigned long i = strtoul(rest + 1, &end, 10);
    if (!end || strncmp(end, "].", 2) != 0)
        return;
    const char *name = end + 2, *colon = strstr(name, ": ");
    if (!colon)
        return;
    int nl = (int)(colon - name);
    if (strcmp(colon, ": missing input") != 0) {
        snprintf(err->msg, sizeof err->msg, "inputs.%.*s[%lu]%s", nl, name, i, colon);
        return;
    }
    char lacking[320];
    list_lacking(g, b, i, lacking, sizeof lacking);
    first_lacking(lacking, &name, &nl);
    snprintf(err->msg, sizeof err->msg, "inputs.%.*s: missing input; not given: %s (Missing "
             "named input: %.*s in 'inputs' object.)", nl, name, lacking, nl, name);
}

void rt_json_name_missing(const rt_graph *g, const rt_batch *b, rt_err *err)
{
    static const char rows[] = "instances[", tail[] = ": missing input";
    if (!err || strncmp(err->msg, rows, sizeof rows - 1) != 0)
        return;
    size_t len = strlen(err->msg);
    if (len < sizeof tail - 1 || strcmp(err->msg + len - (sizeof tail - 1), tail) != 0)
        return;
    char *end = NULL;
    unsigned long i = strtoul(err->msg + sizeof rows - 1, &end, 10);
    if (!end || *end != ']')
        return;
    char lacking[320];
    list_lacking(g, b, i, lacking, sizeof lacking);
    if (!strchr(lacking, ','))
        return;
    const char *name = lacking;
    int nl = 0;
    first_lacking(lacking, &name, &nl);
    snprintf(err->msg, sizeof err->msg, "instances[%lu].%.*s: missing input; not given: %s", i,
             nl, name, lacking);
}
