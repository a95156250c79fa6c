/*
 * rt_json_examples.c — a :classify / :regress body into the batch.
 *
 *   {"signature_name"?, "examples": [{feature: value, ...}, ...],
 *    "context"?: {feature: value, ...}}
 *
 * Examples are keyed by feature (raw input) name; the context's features
 * apply to every example, and a feature in both is an error. As TF Serving
 * turns each example into a tf.Example, a feature an example lacks has no
 * values (numeric columns then need their default_value).
 *
 * Other top-level keys are ignored (TF Serving's rule); "instances" or
 * "inputs" there make the missing "examples" message say what to send. A
 * signature_name must name a signature of the method (TF Serving refuses
 * :classify on a predict signature, with the message quoted).
 *
 * The members may come in any order, so the body is read twice: once
 * whole (checking it, and noting where "examples" and "context" are), then
 * the context's members and the examples are read from where they stand.
 */
#include "rt_serve.h"
#include "rt_json_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One member of "context". */
typedef struct ctx_entry {
    long in;          /* input index, -1 unknown, -2 ignored column */
    rt_jr_mark value; /* where its value starts */
    char name[84];    /* cut to 80 bytes: for messages */
    int nlen;
} ctx_entry;

typedef struct member_at {
    int given;
    rt_jv_kind kind;
    rt_jr_mark mark;
    size_t count; /* elements, for lists */
} member_at;

/* Reads the context object's members (state: before its value). */
static rt_status read_context(rt_jfill *q, const member_at *ctx, ctx_entry **out, size_t *n)
{
    rt_jr *r = q->r;
    rt_jv v;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    rt_jr_restore(r, ctx->mark);
    rt_status st = rt_jr_value(r, &v);
    for (;;) {
        int more;
        const char *key;
        size_t klen;
        if (st != RT_OK || (st = rt_jr_member(r, &more, &key, &klen)) != RT_OK || !more)
            return st;
        if (rt_grow(out, &cap, *n + 1, sizeof **out) != 0)
            return rt_err_set(q->sem, RT_ERR_NOMEM, "context: out of memory");
        ctx_entry *e = &(*out)[(*n)++];
        e->in = rt_jfill_find(q, key, klen);
        e->value = rt_jr_save(r);
        e->nlen = (int)(klen > 80 ? 80 : klen);
        memcpy(e->name, key, (size_t)e->nlen);
        e->name[e->nlen] = '\0';
        st = rt_jr_skip(r);
    }
}

/* Example i (the reader before it): its members, then the context's. */
static rt_status read_example(rt_jfill *q, size_t i, const ctx_entry *ce, size_t n_ctx)
{
    rt_jr *r = q->r;
    rt_jpath path = {"examples", (long)i, NULL, 0, 0, -1};
    char where[48];
    snprintf(where, sizeof where, "examples[%zu]", i);
    int b64 = 0;
    rt_status st;
    if (rt_jr_peek(r) == '{' && (st = rt_jfill_is_b64(q, &b64)) != RT_OK)
        return st;
    rt_jv v;
    if ((st = rt_jr_value(r, &v)) != RT_OK)
        return st;
    if (v.kind != RT_JV_OBJECT || b64) {
        char got[64];
        rt_json_describe(&v, got, sizeof got);
        return rt_err_set(q->sem, RT_ERR_INVALID, "%s: expected an object keyed by feature "
                          "name, got %s", where, got);
    }
    size_t idx;
    if ((st = rt_batch_add(q->c->batch, &idx)) != RT_OK)
        return rt_err_set(q->sem, st, "%s: %s", where, rt_err_status_str(st));
    if ((st = rt_jfill_object(q, idx, &path)) != RT_OK)
        return st;
    for (size_t k = 0; k < n_ctx; k++) {
        const ctx_entry *e = &ce[k];
        if (e->in == -2)
            continue;
        if (e->in < 0)
            return rt_err_set(q->sem, RT_ERR_INVALID, "context.%s: unknown feature", e->name);
        if (q->seen[e->in])
            return rt_err_set(q->sem, RT_ERR_INVALID, "%s.%s: also given in context (or twice "
                              "there)", where, e->name);
        q->seen[e->in] = 1;
        rt_jpath cp = {"context", -1, e->name, (size_t)e->nlen, 0, -1};
        rt_jr_mark back = rt_jr_save(r);
        rt_jr_restore(r, e->value);
        st = rt_jfill_value(q, idx, (size_t)e->in, &cp);
        rt_jr_restore(r, back);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

/* The first pass: the top level, checked whole; where things are. */
static rt_status first_pass(rt_jr *r, const Predictd__ModelDef *def, member_at *ex,
                            member_at *ctx, int *have_sig, int *rows,
                            const Predictd__SignatureDef **sig, rt_status *pst, rt_err *pe,
                            int *not_object)
{
    rt_jv v;
    rt_status st = rt_jr_value(r, &v);
    *pst = RT_OK;
    if (st != RT_OK)
        return st;
    if (v.kind != RT_JV_OBJECT) {
        *pst = rt_err_set(pe, RT_ERR_INVALID, "request body must be a JSON object");
        *not_object = 1;
        return rt_jr_end(r);
    }
    int rank = 9; /* 1 keys, 2 signature: the first of the lowest is kept */
    rt_err e;
    /* the last two are a predict body's, remembered for the message */
    static const char *const keys[] = {"signature_name", "examples", "context", "instances",
                                       "inputs", NULL};
    const char *key;
    size_t klen;
    int k;
    while ((st = rt_jr_member_in(r, keys, &k, &key, &klen)) == RT_OK && k != RT_JR_CLOSED) {
        int kl = (int)(klen > 80 ? 80 : klen);
        member_at *m = k == 1 ? ex : k == 2 ? ctx : NULL;
        if (k < 0 || k > 2) {
            /* TF Serving's rule: other top-level keys are ignored */
            *rows |= k > 2;
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
            continue;
        }
        if ((k == 0 && *have_sig) || (m && m->given)) {
            rt_status es = rt_err_set(&e, RT_ERR_INVALID, "key \"%.*s\" given twice", kl, key);
            if (rank > 1) {
                rank = 1;
                *pst = es;
                *pe = e;
            }
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
            continue;
        }
        if (k == 0) {
            *have_sig = 1;
            rt_status ss = rt_json_read_signature(r, def, sig, &e);
            if (r->hard)
                return r->hard;
            if (ss != RT_OK && rank > 2) {
                rank = 2;
                *pst = ss;
                *pe = e;
            }
            continue;
        }
        m->given = 1;
        m->mark = rt_jr_save(r);
        if ((st = rt_jr_value(r, &v)) != RT_OK)
            return st;
        m->kind = v.kind;
        m->count = 0;
        int more;
        if (v.kind == RT_JV_LIST) {
            if ((st = rt_jr_element(r, &more)) != RT_OK ||
                (more && (st = rt_jr_count_rest(r, &m->count)) != RT_OK))
                return st;
        } else if (v.kind == RT_JV_OBJECT && (st = rt_jr_skip_to(r, 1)) != RT_OK) {
            return st;
        }
    }
    return st != RT_OK ? st : rt_jr_end(r);
}

rt_status rt_json_parse_examples(const rt_graph *g, rt_method method, const char *body,
                                 size_t len, const rt_json_params *p, rt_ctx *c,
                                 const Predictd__SignatureDef **sig_out, rt_err *err)
{
    rt_json_params dp = rt_json_default_params();
    if (!p)
        p = &dp;
    rt_status st = rt_ctx_prepare(c, g, err);
    if (st != RT_OK)
        return st;
    size_t nin = rt_graph_num_inputs(g);
    unsigned char *seen = calloc(nin + 1, 1);
    if (!seen)
        return rt_err_set(err, RT_ERR_NOMEM, "request: out of memory");
    rt_err sem;
    rt_jr r;
    rt_jfill q;
    rt_jfill_start(&q, &r, &sem, g, c, body, len, p, nin, seen, err);
    member_at ex = {0}, cx = {0};
    int have_sig = 0;
    const Predictd__SignatureDef *sig = NULL;
    ctx_entry *ce = NULL;
    size_t n_ctx = 0;
    rt_status pst;
    int not_object = 0, rows = 0;
    if ((st = first_pass(&r, rt_graph_def(g), &ex, &cx, &have_sig, &rows, &sig, &pst, &sem,
                         &not_object)) != RT_OK)
        goto out;
    if (not_object) {
        st = pst;
        goto semantic;
    }
    /* the method before the body's content, as TF Serving looks it up (a
     * head's own signature, of several heads: by that signature's method) */
    if (!(pst == RT_OK && rt_json_signature_head(g, sig) >= 0) &&
        (st = rt_json_check_method(g, method, err)) != RT_OK)
        goto out;
    if (pst == RT_OK && !have_sig && (pst = rt_json_check_default_method(g, method, &sem)) == RT_OK)
        pst = rt_json_find_signature(rt_graph_def(g), NULL, &sig, &sem);
    else if (pst == RT_OK)
        pst = rt_json_check_signature_method(sig, method, &sem);
    if ((st = pst) != RT_OK)
        goto semantic;
    if (!ex.given)
        st = rt_err_set(&sem, RT_ERR_INVALID, "missing \"examples\"%s (When method is classify, "
                        "key 'examples' is expected and was not found)", rows ?
                        ": :classify and :regress read \"examples\" (a list of objects keyed by "
                        "feature name, with an optional \"context\"), not \"instances\" or "
                        "\"inputs\"; send {\"examples\": [...]}, or use :predict" : "");
    else if (ex.kind != RT_JV_LIST)
        st = rt_err_set(&sem, RT_ERR_INVALID, "\"examples\" must be a list of objects "
                        "(Expecting 'examples' value to be an list/array)");
    else if (cx.given && cx.kind != RT_JV_OBJECT)
        st = rt_err_set(&sem, RT_ERR_INVALID, "\"context\" must be an object");
    else if (ex.count > p->max_instances)
        st = rt_err_set(&sem, RT_ERR_LIMIT, "examples: %zu instances, the limit is %zu",
                        ex.count, p->max_instances);
    if (st != RT_OK)
        goto semantic;
    rt_batch_set_missing(c->batch, RT_MISSING_EMPTY);
    if (cx.given && (st = read_context(&q, &cx, &ce, &n_ctx)) != RT_OK)
        goto semantic;
    rt_jr_restore(&r, ex.mark);
    rt_jv v;
    if ((st = rt_jr_value(&r, &v)) != RT_OK)
        goto semantic;
    for (size_t i = 0;; i++) {
        int more;
        if ((st = rt_jr_element(&r, &more)) != RT_OK || !more)
            break;
        if ((st = read_example(&q, i, ce, n_ctx)) != RT_OK)
            break;
    }
semantic:
    if (st != RT_OK && !r.hard && err)
        *err = sem;
    if (sig_out)
        *sig_out = sig;
out:
    free(ce);
    free(seen);
    rt_jr_done(&r);
    return rt_json_tidy_message(st, err);
}
