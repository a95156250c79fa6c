/*
 * rt_jfill.c — one input's value from the request into the batch.
 *
 * Raw features: a number (or NaN / Infinity / -Infinity) for a DT_FLOAT
 * input, a string or {"b64": "..."} for a DT_STRING one, or a flat list of
 * them; a literal must fit float32 (the input's type). Serialized inputs:
 * the one string or {"b64"} of a CSV line or a tf.Example, handed to the
 * receiver. Instances are objects keyed by input name; the label and
 * unused columns are skipped (still checked as JSON).
 */
#include "rt_serve.h"
#include "rt_json_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

rt_status rt_jfill_type_error(rt_jfill *q, const rt_jpath *path, const char *want,
                              const rt_jv *v)
{
    char got[64], where[200];
    rt_json_describe(v, got, sizeof got);
    rt_json_path_format(path, where, sizeof where);
    return rt_err_set(q->sem, RT_ERR_INVALID, "%s: expected %s, got %s", where, want, got);
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
static rt_status b64_decode(rt_jfill *q, const char *s, size_t n, rt_buf *out,
                            const rt_jpath *path)
{
    char where[200];
    while (n > 0 && s[n - 1] == '=')
        n--;
    rt_buf_reset(out);
    if (rt_buf_reserve(out, n / 4 * 3 + 3) != 0) {
        rt_json_path_format(path, where, sizeof where);
        return rt_err_set(q->sem, RT_ERR_NOMEM, "%s: out of memory", where);
    }
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64_digit((unsigned char)s[i]);
        if (d < 0) {
            rt_json_path_format(path, where, sizeof where);
            return rt_err_set(q->sem, RT_ERR_INVALID, "%s: invalid base64 character at %zu",
                              where, i);
        }
        acc = (acc << 6) | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out->data[out->len++] = (char)((acc >> bits) & 0xFF);
        }
    }
    if (n % 4 == 1) {
        rt_json_path_format(path, where, sizeof where);
        return rt_err_set(q->sem, RT_ERR_INVALID, "%s: truncated base64", where);
    }
    out->data[out->len] = '\0';
    return RT_OK;
}

/* The object just opened (v) must be {"b64": "..."}: its bytes, decoded,
 * into *s / *n; otherwise "expected <want>, got an object". */
static rt_status read_b64(rt_jfill *q, const rt_jv *v, const rt_jpath *path, const char *want,
                          const char **s, size_t *n)
{
    rt_jr *r = q->r;
    int more, match;
    int depth = r->depth;
    rt_status st = rt_jr_member_is(r, &more, "b64", &match);
    if (st != RT_OK)
        return st;
    if (!more || !match)
        return rt_jfill_type_error(q, path, want, v);
    rt_jv bv;
    if ((st = rt_jr_value(r, &bv)) != RT_OK)
        return st;
    if ((bv.kind == RT_JV_OBJECT || bv.kind == RT_JV_LIST) &&
        (st = rt_jr_skip_to(r, depth)) != RT_OK)
        return st;
    /* the b64 string stays in sbuf: a key goes to kbuf */
    if ((st = rt_jr_member_is(r, &more, "", &match)) != RT_OK)
        return st;
    if (more)
        return rt_jfill_type_error(q, path, want, v);
    if (bv.kind != RT_JV_STRING)
        return rt_jfill_type_error(q, path, "a base64 string in \"b64\"", &bv);
    if ((st = b64_decode(q, bv.s, bv.n, &q->c->bytes, path)) != RT_OK)
        return st;
    *s = q->c->bytes.data;
    *n = q->c->bytes.len;
    return RT_OK;
}

static rt_status push_error(rt_jfill *q, rt_status st, const rt_jpath *path)
{
    char where[200];
    rt_json_path_format(path, where, sizeof where);
    return rt_err_set(q->sem, st, "%s: %s", where, rt_err_status_str(st));
}

/* One scalar v of raw input `in` for instance idx. */
static rt_status push_scalar(rt_jfill *q, size_t idx, size_t in, int is_num, const rt_jv *v,
                             const rt_jpath *path)
{
    rt_status st;
    if (v->kind == RT_JV_NULL && rt_xgb_graph_absent_is_missing(q->g))
        return RT_OK; /* an XGBoost model's missing value (no values) */
    if (is_num) {
        if (v->kind != RT_JV_NUMBER)
            return rt_jfill_type_error(q, path, "a number", v);
        double d = v->num;
        /* every numeric input is DT_FLOAT; the tokens stand for NaN and
         * the infinities; a literal beyond float32 becomes ±inf when the
         * transform converts it, as TF Serving converts it; a literal
         * beyond a double is refused, as TF Serving's JSON parser does */
        if (!v->token && !isfinite(d)) {
            char where[200];
            rt_json_path_format(path, where, sizeof where);
            return rt_err_set(q->sem, RT_ERR_INVALID, "%s: number out of range: beyond a "
                              "double's (write Infinity or -Infinity for those; JSON Parse "
                              "error: Number too big to be stored in double)", where);
        }
        st = rt_batch_push_num(q->c->batch, idx, in, d);
    } else if (v->kind == RT_JV_OBJECT) {
        const char *s = NULL;
        size_t n = 0;
        if ((st = read_b64(q, v, path, "a string", &s, &n)) != RT_OK)
            return st;
        st = rt_batch_push_str(q->c->batch, idx, in, s, n);
    } else if (v->kind == RT_JV_STRING) {
        st = rt_batch_push_str(q->c->batch, idx, in, v->s, v->n);
    } else {
        return rt_jfill_type_error(q, path, "a string", v);
    }
    return st == RT_OK ? RT_OK : push_error(q, st, path);
}

/* The one string or {"b64"} of a serialized input (CSV line, tf.Example). */
static rt_status push_serialized(rt_jfill *q, size_t idx, const rt_jpath *path)
{
    const char *want = q->md.kind == RT_IN_CSV ? "a CSV line (string)"
                                                : "a serialized tf.Example ({\"b64\": ...})";
    rt_jv v;
    rt_status st = rt_jr_value(q->r, &v);
    if (st != RT_OK)
        return st;
    const char *s = NULL;
    size_t n = 0;
    if (v.kind == RT_JV_OBJECT) {
        if ((st = read_b64(q, &v, path, want, &s, &n)) != RT_OK)
            return st;
    } else if (v.kind == RT_JV_STRING) {
        s = v.s;
        n = v.n;
    } else {
        return rt_jfill_type_error(q, path, want, &v);
    }
    if (q->md.kind == RT_IN_CSV)
        st = rt_receiver_csv_row(q->c->batch, idx, s ? s : "", n, q->sem);
    else
        st = rt_receiver_example(q->c->batch, idx, (const uint8_t *)(s ? s : ""), n, q->sem);
    if (st != RT_OK) {
        char where[200];
        rt_json_path_format(path, where, sizeof where);
        rt_err_prefix(q->sem, "%s", where);
    }
    return st;
}

rt_status rt_jfill_value(rt_jfill *q, size_t idx, size_t in, const rt_jpath *path)
{
    if (q->md.kind != RT_IN_FEATURES)
        return push_serialized(q, idx, path);
    int is_num = q->g->inputs[in].dtype != PREDICTD__DTYPE__DT_STRING;
    rt_jr *r = q->r;
    rt_jv v;
    rt_status st = rt_jr_value(r, &v);
    if (st != RT_OK)
        return st;
    if (v.kind != RT_JV_LIST)
        return push_scalar(q, idx, in, is_num, &v, path);
    rt_jpath ep = *path;
    for (ep.k = 0;; ep.k++) {
        int more;
        if ((st = rt_jr_element(r, &more)) != RT_OK || !more)
            return st;
        if ((st = rt_jr_value(r, &v)) != RT_OK)
            return st;
        if (v.kind == RT_JV_LIST)
            return rt_jfill_type_error(q, &ep, is_num ? "a number" : "a string", &v);
        if ((st = push_scalar(q, idx, in, is_num, &v, &ep)) != RT_OK)
            return st;
    }
}

long rt_jfill_find(rt_jfill *q, const char *key, size_t klen)
{
    const rt_graph *g = q->g;
    if (q->md.kind != RT_IN_FEATURES)
        return strlen(q->md.name) == klen && memcmp(q->md.name, key, klen) == 0 ? 0 : -1;
    if (q->r->key_nul)
        return -1; /* no name holds a NUL */
    /* Clients usually send the inputs in the model's order: try the one
     * after the last match before searching. */
    if (q->hint >= 0 && (size_t)q->hint < g->n_inputs) {
        const rt_input *cand = &g->inputs[q->hint];
        if (cand->name_len == klen && rt_same_bytes(cand->name, key, klen))
            return q->hint++;
    }
    long in = rt_graph_find_input(g, key, klen);
    if (in >= 0) {
        q->hint = in + 1;
        return in;
    }
    const Predictd__ModelDef *def = rt_graph_def(g);
    for (size_t k = 0; k < def->n_raw_columns; k++) {
        const Predictd__RawColumn *rc = def->raw_columns[k];
        if (rc->name && (rc->is_label || rc->unused || rc->is_weight) && strlen(rc->name) == klen &&
            memcmp(rc->name, key, klen) == 0)
            return -2;
    }
    return -1;
}

/* White space as the reader skips it. */
static inline const char *skip_space(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The closing quote of the string whose opening quote is at p, when the
 * string is plain (printable ASCII, no escape: the reader hands it out in
 * place); NULL otherwise. */
static inline const char *plain_string_end(const char *p, const char *e)
{
    const char *q = p + 1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (e - q >= 8) {
        uint64_t m = rt_jr_special_in_word(q);
        if (m) {
            q += (unsigned)__builtin_ctzll(m) >> 3;
            return *q == '"' ? q : NULL;
        }
        q += 8;
    }
#endif
    while (q < e && rt_jr_plain_ascii(*q))
        q++;
    return q < e && *q == '"' ? q : NULL;
}

/*
 * rt_jfill_object for the common instance, straight from the bytes: plain
 * keys, each naming an input of the signature once, with a plain string for
 * a string input or an integer literal of up to 15 digits for a numeric one
 * (the values, exact in a double, that the reader gives). Returns 1 when it
 * read the whole object and left the reader as rt_jr_member leaves it after
 * the closing brace; 0 when the object is anything else (an escape, a
 * fraction, a list, a label column, a fault): nothing of it is kept (idx's
 * cells emptied, the reader where it was) and the general path reads it,
 * reporting what is wrong as it always has.
 */
static int fast_object(rt_jfill *q, size_t idx)
{
    rt_jr *r = q->r;
    if (q->md.kind != RT_IN_FEATURES || r->state != RT_JR_FIRST_KEY || r->hard)
        return 0;
    rt_batch *b = q->c->batch;
    const char *p = skip_space(r->p, r->end), *e = r->end;
    r->key_nul = 0;
    for (;;) {
        if (p >= e || *p != '"')
            goto general;
        const char *ke = plain_string_end(p, e);
        if (!ke)
            goto general;
        const char *key = p + 1;
        p = skip_space(ke + 1, e);
        if (p >= e || *p != ':')
            goto general;
        p = skip_space(p + 1, e);
        long in = rt_jfill_find(q, key, (size_t)(ke - key));
        if (in < 0 || q->seen[in] || p >= e)
            goto general;
        q->seen[in] = 1;
        rt_status st;
        if (q->g->inputs[in].dtype == PREDICTD__DTYPE__DT_STRING) {
            const char *se = *p == '"' ? plain_string_end(p, e) : NULL;
            if (!se)
                goto general;
            st = rt_batch_push_str(b, idx, (size_t)in, p + 1, (size_t)(se - p - 1));
            p = se + 1;
        } else {
            int neg = *p == '-';
            p += neg;
            if (p >= e || *p < '0' || *p > '9')
                goto general;
            uint64_t v = 0;
            int digits = 0;
            if (*p == '0') {
                p++;
                digits = 1;
            } else {
                while (p < e && *p >= '0' && *p <= '9' && digits < 16) {
                    v = v * 10 + (uint64_t)(*p - '0');
                    p++;
                    digits++;
                }
            }
            /* more digits (a leading zero, 16 or more), a fraction or an
             * exponent: the reader's */
            if (digits > 15 || (p < e && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' ||
                                          *p == 'E' || *p == '+' || *p == '-')))
                goto general;
            double d = (double)v;
            st = rt_batch_push_num(b, idx, (size_t)in, neg ? -d : d);
        }
        if (st != RT_OK)
            goto general;
        p = skip_space(p, e);
        if (p < e && *p == ',') {
            p = skip_space(p + 1, e);
            continue;
        }
        if (p < e && *p == '}')
            break;
        goto general;
    }
    /* closed, as the reader closes a container */
    r->p = p + 1;
    r->depth--;
    r->state = r->depth == 0 ? RT_JR_DONE : RT_JR_AFTER;
    return 1;
general:
    rt_batch_clear_instance(b, idx);
    memset(q->seen, 0, q->nin);
    q->hint = 0;
    return 0;
}

rt_status rt_jfill_object(rt_jfill *q, size_t idx, const rt_jpath *path)
{
    rt_jr *r = q->r;
    memset(q->seen, 0, q->nin);
    q->hint = 0;
    if (fast_object(q, idx))
        return RT_OK;
    for (;;) {
        int more;
        rt_jpath mp = *path;
        rt_status st = rt_jr_member(r, &more, &mp.key, &mp.klen);
        if (st != RT_OK || !more)
            return st;
        long in = rt_jfill_find(q, mp.key, mp.klen);
        if (in == -2) {
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
            continue;
        }
        if (in < 0) {
            char names[320], where[200];
            rt_json_list_inputs(q->g, &q->md, names, sizeof names);
            rt_json_path_format(&mp, where, sizeof where);
            return rt_err_set(q->sem, RT_ERR_INVALID, "%s: unknown input; the model's inputs: %s "
                              "(JSON object: does not have named input: %.*s)", where, names,
                              (int)(mp.klen > 80 ? 80 : mp.klen), mp.key);
        }
        if (q->seen[in])
        {
            char where[200];
            rt_json_path_format(&mp, where, sizeof where);
            return rt_err_set(q->sem, RT_ERR_INVALID, "%s: given more than once", where);
        }
        q->seen[in] = 1;
        if ((st = rt_jfill_value(q, idx, (size_t)in, &mp)) != RT_OK)
            return st;
    }
}

rt_status rt_jfill_is_b64(rt_jfill *q, int *yes)
{
    rt_jr *r = q->r;
    rt_jr_mark m = rt_jr_save(r);
    int more = 0, match = 0;
    rt_jv v;
    *yes = 0;
    rt_status st = rt_jr_value(r, &v);
    if (st == RT_OK && v.kind == RT_JV_OBJECT)
        st = rt_jr_member_is(r, &more, "b64", &match);
    if (st == RT_OK && v.kind == RT_JV_OBJECT && more && match &&
        (st = rt_jr_skip(r)) == RT_OK && (st = rt_jr_member_is(r, &more, "", &match)) == RT_OK)
        *yes = !more;
    if (st != RT_OK)
        return st;
    rt_jr_restore(r, m);
    return RT_OK;
}

rt_status rt_jfill_limit(rt_jfill *q, const rt_json_params *p, const char *what, size_t have)
{
    size_t n = have;
    rt_status st = rt_jr_count_rest(q->r, &n);
    if (st != RT_OK)
        return st;
    return rt_err_set(q->sem, RT_ERR_LIMIT, "%s: %zu instances, the limit is %zu", what, n,
                      p->max_instances);
}
