/*
 * pm_batch_unit.c — batch-predict's work on one unit (a file or a byte range
 * of one): each row becomes an instance, Vertex AI's instanceConfig applied
 * (key field, included or excluded fields, object or array), instances go to
 * the model in batches through rt_json_handle — predictd's own :predict path,
 * so each prediction has the bytes predictd answers for that instance (batch
 * invariance: the same at any batch size) — and each result becomes a line of
 * the unit's predictions or errors file. A bad row never stops the unit.
 *
 * Rows to instances (docs/batch-prediction.md): a JSONL line is the instance
 * as it is; a CSV row (the spec's columns, labels optional) and a tf.Example
 * record become an object of the model's inputs (the cells' values: numbers
 * as numbers, empty cells their defaults), or for an export whose serving
 * input function reads CSV rows or tf.Examples, the row as a string or the
 * record as {"b64": ...}; a file-list line names a file sent as {"b64": ...}.
 */
#include "pm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- JSON scanning */

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

/* The index just past the JSON value starting at s[i], or 0 when it is not
 * one (its syntax is left to the request reader, but its extent must be
 * sure: a line is one value). */
static size_t json_skip(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return 0;
    if (s[i] == '"') {
        for (i++; i < n; i++) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == '"')
                return i + 1;
        }
        return 0;
    }
    if (s[i] == '{' || s[i] == '[') {
        size_t depth = 0;
        for (; i < n; i++) {
            char ch = s[i];
            if (ch == '"') {
                size_t e = json_skip(s, n, i);
                if (!e)
                    return 0;
                i = e - 1;
            } else if (ch == '{' || ch == '[') {
                depth++;
            } else if (ch == '}' || ch == ']') {
                if (--depth == 0)
                    return i + 1;
            }
        }
        return 0;
    }
    size_t st = i;
    while (i < n && !strchr(",]} \t\r\n:{[\"", s[i]))
        i++;
    return i > st ? i : 0;
}

typedef struct member {
    const char *k, *v; /* k: the key's text between its quotes */
    size_t klen, vlen;
} member;

/* The members of the JSON object text s[0..n): -1 when s is not an object. */
static long object_members(const char *s, size_t n, member **out, size_t *cap)
{
    size_t i = skip_ws(s, n, 0), count = 0;
    if (i >= n || s[i] != '{')
        return -1;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == '}')
        return skip_ws(s, n, i + 1) == n ? 0 : -1;
    for (;;) {
        if (i >= n || s[i] != '"')
            return -1;
        size_t ke = json_skip(s, n, i);
        if (!ke)
            return -1;
        size_t c = skip_ws(s, n, ke);
        if (c >= n || s[c] != ':')
            return -1;
        size_t vs = skip_ws(s, n, c + 1), ve = json_skip(s, n, vs);
        if (!ve)
            return -1;
        if (rt_grow(out, cap, count + 1, sizeof **out) != 0)
            return -2;
        (*out)[count].k = s + i + 1;
        (*out)[count].klen = ke - i - 2;
        (*out)[count].v = s + vs;
        (*out)[count].vlen = ve - vs;
        count++;
        i = skip_ws(s, n, ve);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
            continue;
        }
        if (i < n && s[i] == '}')
            return skip_ws(s, n, i + 1) == n ? (long)count : -1;
        return -1;
    }
}

static int key_is(const member *m, const char *name)
{
    return strlen(name) == m->klen && memcmp(m->k, name, m->klen) == 0;
}

/* The value of member name in s[0..n), a JSON object's text that may be
 * malformed past it: the members are read up to the first that is not one
 * (a key is kept "when it can be read"). 1 with *v, *vlen; 0 when the members
 * before the damage do not hold it. */
static int salvage_key(const char *s, size_t n, const char *name, const char **v, size_t *vlen)
{
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{')
        return 0;
    for (i = skip_ws(s, n, i + 1); i < n && s[i] == '"';) {
        size_t ke = json_skip(s, n, i), c = ke ? skip_ws(s, n, ke) : n;
        if (c >= n || s[c] != ':')
            return 0;
        size_t vs = skip_ws(s, n, c + 1), ve = json_skip(s, n, vs);
        if (!ve)
            return 0;
        member m = {s + i + 1, s + vs, ke - i - 2, ve - vs};
        if (key_is(&m, name) && pm_json_check(m.v, m.vlen, NULL, NULL) == 0) {
            *v = m.v;
            *vlen = m.vlen;
            return 1;
        }
        i = skip_ws(s, n, ve);
        if (i >= n || s[i] != ',')
            return 0;
        i = skip_ws(s, n, i + 1);
    }
    return 0;
}

/* ------------------------------------------------------------ encoding */

static void put_b64(rt_buf *b, const uint8_t *p, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    rt_buf_puts(b, "{\"b64\": \"");
    if (rt_buf_reserve(b, (n + 2) / 3 * 4 + 4) != 0)
        return;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {A[v >> 18 & 63], A[v >> 12 & 63], i + 1 < n ? A[v >> 6 & 63] : '=',
                     i + 2 < n ? A[v & 63] : '='};
        rt_buf_append(b, q, 4);
    }
    rt_buf_puts(b, "\"}");
}

/* 1 when s[0..n) is a JSON number as it is written. */
static int json_number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n || s[i] < '0' || s[i] > '9')
        return 0;
    if (s[i] == '0')
        i++;
    else
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    return i == n;
}

/* Whether column c goes into a row's object: the model's inputs, and any
 * column the key field or the included fields name. */
static int wanted(const pm_batch_job *job, const rt_graph *g, const Predictd__RawColumn *rc)
{
    if (job->key_field && strcmp(job->key_field, rc->name) == 0)
        return 1;
    if (job->fields && !job->excluded)
        for (size_t i = 0; i < job->n_fields; i++)
            if (strcmp(job->fields[i], rc->name) == 0)
                return 1;
    return rt_graph_find_input(g, rc->name, strlen(rc->name)) >= 0;
}

/* A row's cells (spans into text, one per raw column; have[c] 0 for a column
 * the row does not hold) as a JSON object into b. */
static rt_status cells_object(const pm_batch_job *job, const char *text, const rt_csv_span *sp,
                              const uint8_t *have, rt_buf *b, rt_err *err)
{
    const rt_graph *g = rt_model_graph(job->m);
    const Predictd__ModelDef *def = rt_graph_def(g);
    int first = 1;
    rt_buf_puts(b, "{");
    for (size_t c = 0; c < def->n_raw_columns; c++) {
        const Predictd__RawColumn *rc = def->raw_columns[c];
        if (!have[c] || !wanted(job, g, rc))
            continue;
        const char *s = text + sp[c].off;
        size_t len = sp[c].len, v0 = 0;
        rt_buf val;
        rt_buf_init(&val);
        if (rc->dtype != PREDICTD__DTYPE__DT_STRING) {
            double v = 0;
            rt_status st = rt_raw_number(s, len, &v);
            if (st == RT_ERR_INVALID) {
                rt_buf_free(&val);
                return rt_raw_number_error(err, c, rc->name, s, len);
            }
            const char *t = rt_buf_trim_span(s, &len);
            if (st == RT_ERR_NOTFOUND && !rc->has_default) {
                rt_buf_free(&val);
                continue; /* missing: the model says what that means */
            }
            if (st == RT_ERR_NOTFOUND)
                rt_buf_json_double(&val, rc->default_number);
            else if (json_number(t, len))
                rt_buf_append(&val, t, len);
            else
                rt_buf_json_double(&val, v);
        } else {
            while (v0 < len && (s[v0] == ' ' || s[v0] == '\t'))
                v0++;
            if (v0 == len && !rc->has_default) {
                rt_buf_free(&val);
                continue;
            }
            if (v0 == len) {
                const char *d = rc->default_string ? rc->default_string : "";
                rt_buf_json_string(&val, d, strlen(d));
            } else {
                rt_buf_json_string(&val, s, len);
            }
        }
        if (!first)
            rt_buf_puts(b, ", ");
        first = 0;
        rt_buf_json_string(b, rc->name, strlen(rc->name));
        rt_buf_puts(b, ": ");
        rt_buf_append(b, val.data, val.len);
        rt_buf_free(&val);
    }
    rt_buf_puts(b, "}");
    return rt_buf_failed(b) ? rt_err_set(err, RT_ERR_NOMEM, "out of memory") : RT_OK;
}

/* A row's cells as one CSV line, as a JSON string (a CSV receiver's input). */
static void cells_csv_string(const Predictd__ModelDef *def, const char *text,
                             const rt_csv_span *sp, const uint8_t *have, rt_buf *b)
{
    rt_buf line;
    rt_buf_init(&line);
    size_t k = 0;
    for (size_t c = 0; c < def->n_raw_columns; c++) {
        const Predictd__RawColumn *rc = def->raw_columns[c];
        if (rc->is_label || rc->is_weight)
            continue;
        if (k++)
            rt_buf_append(&line, ",", 1);
        const char *s = text + sp[c].off;
        size_t n = have[c] ? sp[c].len : 0;
        int quote = memchr(s, ',', n) || memchr(s, '"', n);
        if (quote)
            rt_buf_append(&line, "\"", 1);
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '"')
                rt_buf_append(&line, "\"", 1);
            rt_buf_append(&line, s + i, 1);
        }
        if (quote)
            rt_buf_append(&line, "\"", 1);
    }
    rt_buf_json_string(b, line.data ? line.data : "", line.len);
    rt_buf_free(&line);
}

/* ------------------------------------------------------------- a unit */

typedef struct unit_state {
    const pm_batch_job *job;
    const pm_batch_unit *u;
    rt_ctx *c;
    pm_batch_out *out;
    rt_json_params jp;
    /* the batch being gathered: instances and keys (JSON texts) in bufs */
    rt_buf inst, keys, body, ans;
    size_t *io, *il, *ko, *kl; /* offsets and lengths into inst / keys */
    uint64_t *at;              /* each instance's line (or record) number */
    int records;               /* rows are records ("FILE: record N"), not lines */
    size_t n, cap;
    member *mem;
    size_t mem_cap;
    rt_buf scratch, cells;
    rt_buf cell, header; /* CSV output: a field's text; the predictions' header */
    rt_csv_span *spans;
    uint8_t *have;
} unit_state;

static int rpc_code(rt_status st)
{
    switch (st) {
    case RT_ERR_INVALID:
    case RT_ERR_FORMAT:
    case RT_ERR_LIMIT: return 3;       /* INVALID_ARGUMENT */
    case RT_ERR_NOTFOUND: return 5;    /* NOT_FOUND */
    case RT_ERR_UNSUPPORTED: return 12; /* UNIMPLEMENTED */
    case RT_ERR_NOMEM: return 8;       /* RESOURCE_EXHAUSTED */
    default: return 13;                /* INTERNAL */
    }
}

/* One CSV field (RFC 4180): quoted when it holds a comma, a quote, CR or LF,
 * its quotes doubled. */
static void csv_field(rt_buf *b, const char *p, size_t n)
{
    int quote = 0;
    for (size_t i = 0; i < n && !quote; i++)
        quote = p[i] == ',' || p[i] == '"' || p[i] == '\r' || p[i] == '\n';
    if (!quote) {
        rt_buf_append(b, p, n);
        return;
    }
    rt_buf_append(b, "\"", 1);
    for (size_t i = 0, run0 = 0; i <= n; i++) {
        if (i == n || p[i] == '"') {
            rt_buf_append(b, p + run0, i - run0 + (i < n));
            if (i < n)
                rt_buf_append(b, "\"", 1);
            run0 = i + 1;
        }
    }
    rt_buf_append(b, "\"", 1);
}

/* An errors-file line: the instance (its JSON text, or with as_text, or when
 * the text is not JSON, the text as a JSON string: every line is JSON), the
 * --key-field value when it was read (key, klen; JSONL output), the status. */
static void error_line_key(unit_state *s, const char *key, size_t klen, const char *inst,
                           size_t ilen, int as_text, int code, const char *msg)
{
    rt_buf *e = &s->out->errors;
    if (!as_text && pm_json_check(inst, ilen, NULL, NULL) != 0)
        as_text = 1;
    if (s->job->csv_out) { /* instance,errors: the instance's JSON text, the status's */
        rt_buf *t = &s->cell;
        if (e->len == 0)
            rt_buf_puts(e, "instance,errors\n");
        rt_buf_reset(t);
        if (as_text)
            rt_buf_json_string(t, inst, ilen);
        else
            rt_buf_append(t, inst, ilen);
        csv_field(e, t->data ? t->data : "", t->len);
        rt_buf_reset(t);
        rt_buf_printf(t, "{\"code\": %d, \"message\": ", code);
        rt_buf_json_string(t, msg, strlen(msg));
        rt_buf_puts(t, "}");
        rt_buf_puts(e, ",");
        csv_field(e, t->data, t->len);
        rt_buf_puts(e, "\n");
        s->out->failed++;
        return;
    }
    rt_buf_puts(e, "{");
    if (key && pm_json_check(key, klen, NULL, NULL) == 0) {
        rt_buf_puts(e, "\"key\": ");
        rt_buf_append(e, key, klen);
        rt_buf_puts(e, ", ");
    }
    rt_buf_puts(e, "\"instance\": ");
    if (as_text)
        rt_buf_json_string(e, inst, ilen);
    else
        rt_buf_append(e, inst, ilen);
    rt_buf_printf(e, ", \"error\": {\"code\": %d, \"message\": ", code);
    rt_buf_json_string(e, msg, strlen(msg));
    rt_buf_puts(e, "}}\n");
    s->out->failed++;
}

static void error_line(unit_state *s, const char *inst, size_t ilen, int as_text, int code,
                       const char *msg)
{
    error_line_key(s, NULL, 0, inst, ilen, as_text, code, msg);
}

/* A prediction as CSV: the instance's (or key's) JSON text, then one field
 * per output when the prediction is an object (the header names them, from
 * the unit's first prediction), else one "prediction" field; every field is
 * the JSON text predictd answers, byte for byte. */
static void prediction_csv(unit_state *s, size_t k, const char *p, size_t plen)
{
    rt_buf *o = &s->out->predictions, *h = &s->cell;
    long nm = object_members(p, plen, &s->mem, &s->mem_cap);
    rt_buf_reset(h);
    rt_buf_puts(h, s->job->key_field ? "key" : "instance");
    for (long i = 0; i < nm; i++) {
        rt_buf_puts(h, ",");
        csv_field(h, s->mem[i].k, s->mem[i].klen);
    }
    if (nm < 0)
        rt_buf_puts(h, ",prediction");
    rt_buf_puts(h, "\n");
    if (o->len == 0) {
        rt_buf_reset(&s->header);
        rt_buf_append(&s->header, h->data, h->len);
        rt_buf_append(o, h->data, h->len);
    } else if (h->len != s->header.len || memcmp(h->data, s->header.data, h->len) != 0) {
        error_line(s, s->inst.data + s->io[k], s->il[k], 0, 13, "the prediction's outputs "
                   "are not the CSV header's (those of the file's first prediction)");
        return;
    }
    if (s->job->key_field)
        csv_field(o, s->keys.data + s->ko[k], s->kl[k]);
    else
        csv_field(o, s->inst.data + s->io[k], s->il[k]);
    for (long i = 0; i < nm; i++) {
        rt_buf_puts(o, ",");
        csv_field(o, s->mem[i].v, s->mem[i].vlen);
    }
    if (nm < 0) {
        rt_buf_puts(o, ",");
        csv_field(o, p, plen);
    }
    rt_buf_puts(o, "\n");
    s->out->ok++;
}

static void prediction_line(unit_state *s, size_t k, const char *p, size_t plen)
{
    rt_buf *o = &s->out->predictions;
    if (s->job->csv_out) {
        prediction_csv(s, k, p, plen);
        return;
    }
    if (s->job->key_field) {
        rt_buf_puts(o, "{\"key\": ");
        rt_buf_append(o, s->keys.data + s->ko[k], s->kl[k]);
    } else {
        rt_buf_puts(o, "{\"instance\": ");
        rt_buf_append(o, s->inst.data + s->io[k], s->il[k]);
    }
    rt_buf_puts(o, ", \"prediction\": ");
    rt_buf_append(o, p, plen);
    rt_buf_puts(o, "}\n");
    s->out->ok++;
}

/* Runs instances [k0, k1) of the batch; 0, or -1 with *why when the request
 * failed as a whole; each prediction's text in pred[k - k0] (into s->ans). */
static rt_status run_some(unit_state *s, size_t k0, size_t k1, size_t *po, size_t *pl,
                          rt_err *why)
{
    rt_buf_reset(&s->body);
    rt_buf_puts(&s->body, "{\"instances\": [");
    for (size_t k = k0; k < k1; k++) {
        if (k > k0)
            rt_buf_puts(&s->body, ", ");
        rt_buf_append(&s->body, s->inst.data + s->io[k], s->il[k]);
    }
    rt_buf_puts(&s->body, "]}");
    if (rt_buf_failed(&s->body))
        return rt_err_set(why, RT_ERR_NOMEM, "out of memory");
    rt_buf_reset(&s->ans);
    rt_status st = rt_json_handle(s->job->m, RT_METHOD_PREDICT, s->body.data, s->body.len,
                                  &s->jp, s->c, &s->ans, why);
    if (st)
        return st;
    /* {"predictions": [P, P, ...]}: each P's extent */
    const char *a = s->ans.data;
    size_t n = s->ans.len;
    const char *lb = memchr(a, '[', n);
    size_t i = lb ? skip_ws(a, n, (size_t)(lb - a) + 1) : n;
    for (size_t k = 0; k < k1 - k0; k++) {
        size_t e = json_skip(a, n, i);
        if (!e)
            return rt_err_set(why, RT_ERR_FORMAT, "unexpected answer");
        po[k] = i;
        pl[k] = e - i;
        i = skip_ws(a, n, e);
        if (i < n && a[i] == ',')
            i = skip_ws(a, n, i + 1);
    }
    return RT_OK;
}

/* "FILE:LINE" (or "FILE: record N") of row number at, into where[n]. */
static void row_where(const unit_state *s, uint64_t at, char *where, size_t n)
{
    if (s->records)
        snprintf(where, n, "%s: record %llu", s->u->path, (unsigned long long)at);
    else
        snprintf(where, n, "%s:%llu", s->u->path, (unsigned long long)at);
}

/* The model's refusal of instance k of the batch, run alone: its message
 * ("instances[0].age: ...") named by the row ("FILE:LINE: instance.age:
 * ..."), with the instance's key. */
static void model_error(unit_state *s, size_t k, rt_status st, const char *why)
{
    char where[300], msg[1024];
    row_where(s, s->at[k], where, sizeof where);
    const char *first = "instances[0]";
    if (strncmp(why, first, strlen(first)) == 0)
        snprintf(msg, sizeof msg, "%s: instance%s", where, why + strlen(first));
    else
        snprintf(msg, sizeof msg, "%s: %s", where, why);
    error_line_key(s, s->job->key_field ? s->keys.data + s->ko[k] : NULL, s->kl[k],
                   s->inst.data + s->io[k], s->il[k], 0, rpc_code(st), msg);
}

static rt_status flush_batch(unit_state *s)
{
    if (s->n == 0)
        return RT_OK;
    size_t *po = malloc(s->n * sizeof *po), *pl = malloc(s->n * sizeof *pl);
    if (!po || !pl) {
        free(po);
        free(pl);
        return RT_ERR_NOMEM;
    }
    rt_err why;
    rt_status st = run_some(s, 0, s->n, po, pl, &why);
    if (st == RT_OK) {
        for (size_t k = 0; k < s->n; k++)
            prediction_line(s, k, s->ans.data + po[k], pl[k]);
    } else if (st != RT_ERR_NOMEM) { /* one by one: which instance, and why */
        for (size_t k = 0; k < s->n; k++) {
            st = run_some(s, k, k + 1, po, pl, &why);
            if (st == RT_OK)
                prediction_line(s, k, s->ans.data + po[0], pl[0]);
            else if (st == RT_ERR_NOMEM)
                break;
            else
                model_error(s, k, st, why.msg);
        }
        if (st != RT_ERR_NOMEM)
            st = RT_OK;
    }
    free(po);
    free(pl);
    s->n = 0;
    rt_buf_reset(&s->inst);
    rt_buf_reset(&s->keys);
    return st;
}

/* Applies the instanceConfig to base (a JSON value) and queues the instance.
 * where: "FILE:LINE" or "FILE: record N" for messages. */
/* An error of a row read before the queued ones' answers: the batch is run
 * first, so the errors file stays in input order. */
static rt_status row_error(unit_state *s, const char *inst, size_t ilen, int as_text, int code,
                           const char *msg)
{
    rt_status st = flush_batch(s);
    const char *key = NULL;
    size_t klen = 0;
    if (s->job->key_field && s->job->format == PM_IN_JSONL && ilen > 0)
        salvage_key(inst, ilen, s->job->key_field, &key, &klen);
    error_line_key(s, key, klen, inst, ilen, as_text, code, msg);
    return st;
}

static rt_status queue(unit_state *s, const char *base, size_t blen, const char *where,
                       uint64_t at)
{
    const pm_batch_job *job = s->job;
    if (rt_grow(&s->io, &s->cap, s->n + 1, sizeof *s->io) != 0)
        return RT_ERR_NOMEM;
    size_t cap = s->cap; /* the four arrays grow together */
    if (!(s->il = realloc(s->il, cap * sizeof *s->il)) ||
        !(s->ko = realloc(s->ko, cap * sizeof *s->ko)) ||
        !(s->kl = realloc(s->kl, cap * sizeof *s->kl)) ||
        !(s->at = realloc(s->at, cap * sizeof *s->at)))
        return RT_ERR_NOMEM;
    size_t io = s->inst.len, ko = s->keys.len;
    if (!job->key_field && !job->fields && !job->as_array) {
        rt_buf_append(&s->inst, base, blen);
    } else {
        long nm = object_members(base, blen, &s->mem, &s->mem_cap);
        if (nm == -2)
            return RT_ERR_NOMEM;
        char msg[512];
        if (nm < 0) {
            snprintf(msg, sizeof msg, "%s: the instance is not a JSON object (--key-field, "
                     "--included-fields, --excluded-fields and --instance-type read objects)",
                     where);
            return row_error(s, base, blen, 0, 3, msg);
        }
        if (job->key_field) {
            long ki = -1;
            for (long i = 0; i < nm; i++)
                if (key_is(&s->mem[i], job->key_field))
                    ki = i;
            if (ki < 0) {
                snprintf(msg, sizeof msg, "%s: key field \"%s\" missing", where,
                         job->key_field);
                return row_error(s, base, blen, 0, 3, msg);
            }
            rt_buf_append(&s->keys, s->mem[ki].v, s->mem[ki].vlen);
        }
        rt_buf_puts(&s->inst, job->as_array ? "[" : "{");
        int first = 1;
        size_t rounds = job->fields && !job->excluded ? job->n_fields : 1;
        for (size_t r = 0; r < rounds; r++) {
            for (long i = 0; i < nm; i++) {
                const member *m = &s->mem[i];
                int keep;
                if (job->fields && !job->excluded) {
                    keep = key_is(m, job->fields[r]);
                } else {
                    keep = !(job->key_field && key_is(m, job->key_field));
                    for (size_t f = 0; keep && job->fields && f < job->n_fields; f++)
                        keep = !key_is(m, job->fields[f]);
                }
                if (!keep)
                    continue;
                if (!first)
                    rt_buf_puts(&s->inst, ", ");
                first = 0;
                if (!job->as_array) {
                    rt_buf_append(&s->inst, m->k - 1, m->klen + 2);
                    rt_buf_puts(&s->inst, ": ");
                }
                rt_buf_append(&s->inst, m->v, m->vlen);
            }
        }
        rt_buf_puts(&s->inst, job->as_array ? "]" : "}");
    }
    if (rt_buf_failed(&s->inst) || rt_buf_failed(&s->keys))
        return RT_ERR_NOMEM;
    s->io[s->n] = io;
    s->il[s->n] = s->inst.len - io;
    s->ko[s->n] = ko;
    s->kl[s->n] = s->keys.len - ko;
    s->at[s->n] = at;
    s->n++;
    return s->n >= job->batch_size ? flush_batch(s) : RT_OK;
}

/* One row of the unit: its instance queued, or an error line. */
static rt_status one_row(unit_state *s, const uint8_t *data, size_t len, uint64_t at,
                         int records)
{
    const pm_batch_job *job = s->job;
    const Predictd__ModelDef *def = rt_model_def(job->m);
    Predictd__Receiver recv = def->receiver;
    char where[300];
    (void)records;
    row_where(s, at, where, sizeof where);
    rt_err why;
    rt_buf_reset(&s->scratch);
    size_t nc = def->n_raw_columns;
    switch (job->format) {
    case PM_IN_JSONL: {
        const char *t = (const char *)data;
        size_t i = skip_ws(t, len, 0), e = json_skip(t, len, i), bad = 0;
        const char *what = NULL;
        if (pm_json_check(t, len, &bad, &what) != 0 || !e) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s: not one JSON value (at byte %zu: %s)", where,
                     bad + 1, what ? what : "not a JSON value");
            return row_error(s, t, len, 1, 3, msg);
        }
        return queue(s, t + i, e - i, where, at);
    }
    case PM_IN_FILE_LIST: {
        char *content = NULL;
        size_t clen = 0;
        rt_status st = rt_file_read(AT_FDCWD, (const char *)data, 1u << 30, 0, &content, &clen,
                                    &why);
        if (st) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s: %s", where, why.msg);
            rt_status fst = row_error(s, (const char *)data, len, 1, rpc_code(st), msg);
            return st == RT_ERR_NOMEM ? st : fst;
        }
        put_b64(&s->scratch, (const uint8_t *)content, clen);
        free(content);
        break;
    }
    case PM_IN_TFRECORD:
    case PM_IN_TFRECORD_GZIP:
        if (recv == PREDICTD__RECEIVER__RECEIVER_EXAMPLE) {
            put_b64(&s->scratch, data, len);
            break;
        }
        if (rt_example_to_row(def, data, len, 0, &s->cells, s->spans, s->have, &why)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s: %s", where, why.msg);
            rt_buf_reset(&s->scratch);
            put_b64(&s->scratch, data, len);
            return row_error(s, s->scratch.data, s->scratch.len, 0, 3, msg);
        }
        for (size_t c = 0; c < nc; c++)
            s->have[c] = 1; /* missing features are empty cells: defaults apply */
        if (recv == PREDICTD__RECEIVER__RECEIVER_CSV)
            cells_csv_string(def, s->cells.data, s->spans, s->have, &s->scratch);
        else if (cells_object(job, s->cells.data, s->spans, s->have, &s->scratch, &why)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s: %s", where, why.msg);
            return row_error(s, (const char *)data, 0, 1, 3, msg);
        }
        break;
    case PM_IN_CSV: {
        const char *t = (const char *)data;
        if (recv == PREDICTD__RECEIVER__RECEIVER_CSV) {
            rt_buf_json_string(&s->scratch, t, len);
            break;
        }
        rt_buf_reset(&s->cells);
        if (rt_buf_reserve(&s->cells, len + 1) != 0)
            return RT_ERR_NOMEM;
        size_t ntarget = 0;
        for (size_t c = 0; c < nc; c++)
            ntarget += def->raw_columns[c]->is_label || def->raw_columns[c]->is_weight;
        rt_csv_span *tmp = s->spans + nc + 1; /* the split's own spans */
        long nf = rt_raw_csv_split(t, len, s->cells.data, tmp, nc + 1, &why);
        char msg[1024];
        if (nf >= 0 && (size_t)nf != nc && (size_t)nf != nc - ntarget) {
            rt_err_set(&why, RT_ERR_INVALID, "expected %zu values (or %zu with the label), got "
                       "%ld", nc - ntarget, nc, nf);
            nf = -1;
        }
        if (nf < 0) {
            snprintf(msg, sizeof msg, "%s: %s", where, why.msg);
            return row_error(s, t, len, 1, 3, msg);
        }
        int with_targets = (size_t)nf == nc;
        for (size_t c = 0, k = 0; c < nc; c++) {
            const Predictd__RawColumn *rc = def->raw_columns[c];
            int target = rc->is_label || rc->is_weight;
            s->have[c] = with_targets || !target;
            if (s->have[c])
                s->spans[c] = tmp[k++];
        }
        if (recv == PREDICTD__RECEIVER__RECEIVER_EXAMPLE) {
            for (size_t c = 0; c < nc; c++)
                if (!s->have[c])
                    s->spans[c].len = 0;
            rt_buf ex;
            rt_buf_init(&ex);
            rt_status st = rt_example_from_row(def, s->cells.data, s->spans, nc, &ex, &why);
            if (st == RT_OK)
                put_b64(&s->scratch, (const uint8_t *)ex.data, ex.len);
            rt_buf_free(&ex);
            if (st) {
                snprintf(msg, sizeof msg, "%s: %s", where, why.msg);
                return row_error(s, t, len, 1, 3, msg);
            }
            break;
        }
        if (cells_object(job, s->cells.data, s->spans, s->have, &s->scratch, &why)) {
            snprintf(msg, sizeof msg, "%s: %s", where, why.msg);
            return row_error(s, t, len, 1, 3, msg);
        }
        break;
    }
    }
    if (rt_buf_failed(&s->scratch))
        return RT_ERR_NOMEM;
    return queue(s, s->scratch.data, s->scratch.len, where, at);
}

rt_status pm_batch_unit_run(const pm_batch_job *job, const pm_batch_unit *u, rt_ctx *c,
                            pm_batch_out *out, rt_err *err)
{
    unit_state s;
    memset(&s, 0, sizeof s);
    s.job = job;
    s.u = u;
    s.c = c;
    s.out = out;
    s.jp = rt_json_default_params();
    if (s.jp.max_instances < job->batch_size)
        s.jp.max_instances = job->batch_size;
    rt_buf_init(&s.inst);
    rt_buf_init(&s.keys);
    rt_buf_init(&s.body);
    rt_buf_init(&s.ans);
    rt_buf_init(&s.scratch);
    rt_buf_init(&s.cells);
    rt_buf_init(&s.cell);
    rt_buf_init(&s.header);
    size_t nc = rt_model_def(job->m)->n_raw_columns;
    s.spans = calloc(2 * nc + 2, sizeof *s.spans);
    s.have = calloc(nc + 1, 1);
    pm_in *in = NULL;
    rt_status st = RT_OK;
    if (!s.spans || !s.have) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((st = pm_in_open(u->path, job->format, u->start, u->end, job->skip_header, &in, err)))
        goto out;
    if (job->max_line)
        pm_in_set_max_line(in, job->max_line);
    int records = pm_in_records(in);
    s.records = records;
    for (;;) {
        const uint8_t *data;
        size_t len;
        uint64_t at;
        rt_err why;
        st = pm_in_next(in, &data, &len, &at, &why);
        if (st == RT_ERR_NOTFOUND) {
            st = RT_OK;
            break;
        }
        if (st == RT_ERR_FORMAT || st == RT_ERR_LIMIT) { /* a corrupt record, a line past
                                                          * the limit: an error line */
            uint64_t off, lost;
            int gz;
            int code = 3;
            if (pm_in_lost(in, &off, &lost, &gz)) { /* the rest of the range: DATA_LOSS */
                char m[sizeof why.msg];
                snprintf(m, sizeof m, "%s", why.msg);
                rt_err_set(&why, st, "%s; data loss: the rest of the file from offset %llu "
                           "(%llu %sbytes) cannot be read, as TensorFlow's reader raises "
                           "DataLossError", m, (unsigned long long)off,
                           (unsigned long long)lost, gz ? "compressed " : "");
                code = 15; /* google.rpc.Code DATA_LOSS */
            }
            if ((st = row_error(&s, "null", 4, 0, code, why.msg))) {
                rt_err_set(err, st, "%s: %s", u->path, rt_err_status_str(st));
                goto out;
            }
            continue;
        }
        if (st) {
            if (err)
                *err = why;
            goto out;
        }
        if ((st = one_row(&s, data, len, at, records))) {
            rt_err_set(err, st, "%s: %s", u->path, rt_err_status_str(st));
            goto out;
        }
    }
    if ((st = flush_batch(&s)))
        rt_err_set(err, st, "%s: %s", u->path, rt_err_status_str(st));
    if (st == RT_OK && (rt_buf_failed(&out->predictions) || rt_buf_failed(&out->errors)))
        st = rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", u->path);
out:
    pm_in_close(in);
    rt_buf_free(&s.inst);
    rt_buf_free(&s.keys);
    rt_buf_free(&s.body);
    rt_buf_free(&s.ans);
    rt_buf_free(&s.scratch);
    rt_buf_free(&s.cells);
    rt_buf_free(&s.cell);
    rt_buf_free(&s.header);
    free(s.io);
    free(s.il);
    free(s.ko);
    free(s.kl);
    free(s.at);
    free(s.mem);
    free(s.spans);
    free(s.have);
    return st;
}
