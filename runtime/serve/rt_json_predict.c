/*
 * rt_json_predict.c — a :predict body into the batch, in one pass.
 *
 *   {"signature_name"?, "instances": [...]}  rows: one entry per instance,
 *       an object keyed by input name, or a bare value when the signature
 *       reads one input;
 *   {"signature_name"?, "inputs": {...} | [...] | value}  columns: input
 *       name -> list with one entry per instance (a bare list or value for
 *       a single input). Never both.
 *
 * Values go straight from the body into the batch (rt_jfill.c). The
 * instances are read with the signature named so far (the default one
 * until "signature_name" is read); when a later "signature_name" changes
 * how inputs are read, that member is read again.
 *
 * Other top-level keys are ignored (TF Serving's rule), and so are columns
 * of "inputs" that the signature does not read.
 *
 * One body may hold several faults; the one reported is the first of the
 * highest rank, as a parser that read the whole body before looking at it
 * would: not JSON (hard, rt_jr.c) > not an object > a key given
 * twice > signature_name > neither / both payloads > the payload itself.
 */
#include "rt_serve.h"
#include "rt_json_internal.h"

#include <stdlib.h>
#include <string.h>

enum { RANK_BODY, RANK_KEYS, RANK_SIG, RANK_SHAPE, RANK_PAYLOAD, RANK_NONE };

typedef struct pending {
    int rank;
    rt_status st;
    rt_err e;
} pending;

static void note(pending *pd, int rank, rt_status st, const rt_err *e)
{
    if (rank < pd->rank) {
        pd->rank = rank;
        pd->st = st;
        pd->e = *e;
    }
}

/* The body at the '{' the reader is before could start {"b64": ...} (a
 * plain "b64" key, or any escaped first key): worth a look-ahead. */
static int maybe_b64(const rt_jr *r)
{
    const char *p = r->p + 1, *e = r->end;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    if (e - p >= 2 && p[0] == '"' && p[1] == '\\')
        return 1;
    return e - p >= 5 && memcmp(p, "\"b64\"", 5) == 0;
}

/* The instance at the reader's position is not an object keyed by input
 * name, and the signature reads several inputs. */
static rt_status not_keyed(rt_jfill *q, const rt_jpath *path)
{
    rt_jv v;
    rt_status st = rt_jr_value(q->r, &v);
    if (st != RT_OK)
        return st;
    char got[64], where[200];
    rt_json_describe(&v, got, sizeof got);
    rt_json_path_format(path, where, sizeof where);
    return rt_err_set(q->sem, RT_ERR_INVALID, "%s: expected an object keyed by input name (the "
                      "model has %zu inputs), got %s", where, q->nin, got);
}

/* The next element of a list of rows (what: "instances", "inputs"; i its
 * index): *more 0 at the list's end, else a row added to the batch at *idx
 * (refused past max_instances). Inlined whole: it runs per instance. */
__attribute__((always_inline)) static inline rt_status next_row(rt_jfill *q,
                                                               const rt_json_params *p,
                                                               const char *what, size_t i,
                                                               int *more, size_t *idx)
{
    rt_status st = rt_jr_element(q->r, more);
    if (st != RT_OK || !*more)
        return st;
    if (i >= p->max_instances)
        return rt_jfill_limit(q, p, what, i);
    if ((st = rt_batch_add(q->c->batch, idx)) != RT_OK)
        return rt_err_set(q->sem, st, "%s[%zu]: %s", what, i, rt_err_status_str(st));
    return RT_OK;
}

/* "instances": one entry per instance. */
static rt_status parse_rows(rt_jfill *q, const rt_json_params *p)
{
    rt_jr *r = q->r;
    rt_jv v;
    rt_status st = rt_jr_want(r, &v, RT_JV_LIST, q->sem,
                              "\"instances\" must be a list (Expecting "
                              "'instances' to be an list/array)");
    if (st != RT_OK)
        return st;
    for (size_t i = 0;; i++) {
        int more;
        size_t idx;
        if ((st = next_row(q, p, "instances", i, &more, &idx)) != RT_OK || !more)
            return st;
        rt_jpath path = {"instances", (long)i, NULL, 0, 0, -1};
        int b64 = 0;
        if (rt_jr_peek(r) == '{') {
            if (maybe_b64(r) && (st = rt_jfill_is_b64(q, &b64)) != RT_OK)
                return st;
            if (!b64) {
                if ((st = rt_jr_value(r, &v)) != RT_OK)
                    return st;
                st = rt_jfill_object(q, idx, &path);
            } else {
                st = q->nin == 1 ? rt_jfill_value(q, idx, 0, &path) : not_keyed(q, &path);
            }
        } else {
            st = q->nin == 1 ? rt_jfill_value(q, idx, 0, &path) : not_keyed(q, &path);
        }
        if (st != RT_OK)
            return st;
    }
}

/* "inputs" for a signature with one input: a list, or one value. */
static rt_status parse_one_column(rt_jfill *q, const rt_json_params *p)
{
    rt_jr *r = q->r;
    rt_status st;
    size_t idx;
    if (q->nin != 1) {
        rt_jv v;
        if ((st = rt_jr_value(r, &v)) != RT_OK)
            return st;
        return rt_err_set(q->sem, RT_ERR_INVALID, "\"inputs\" must be an object keyed by input "
                          "name (the model has %zu inputs)", q->nin);
    }
    if (rt_jr_peek(r) != '[') {
        rt_jpath path = {"inputs", 0, NULL, 0, 0, -1};
        if ((st = rt_batch_add(q->c->batch, &idx)) != RT_OK)
            return rt_err_set(q->sem, st, "inputs[0]: %s", rt_err_status_str(st));
        return rt_jfill_value(q, idx, 0, &path);
    }
    rt_jv v;
    if ((st = rt_jr_value(r, &v)) != RT_OK)
        return st;
    for (size_t i = 0;; i++) {
        int more;
        if ((st = next_row(q, p, "inputs", i, &more, &idx)) != RT_OK || !more)
            return st;
        rt_jpath path = {"inputs", (long)i, NULL, 0, 0, -1};
        if ((st = rt_jfill_value(q, idx, 0, &path)) != RT_OK)
            return st;
    }
}

/* "inputs": columnar. */
static rt_status parse_columns(rt_jfill *q, const rt_json_params *p)
{
    rt_jr *r = q->r;
    rt_status st;
    int b64 = 0;
    if (rt_jr_peek(r) == '{' && maybe_b64(r) && (st = rt_jfill_is_b64(q, &b64)) != RT_OK)
        return st;
    if (rt_jr_peek(r) != '{' || b64)
        return parse_one_column(q, p);
    rt_jv v;
    if ((st = rt_jr_value(r, &v)) != RT_OK)
        return st;
    /* Named columns: every list has one entry per instance. */
    memset(q->seen, 0, q->nin);
    long n = -1;
    char first[84] = "";
    for (size_t members = 0;; members++) {
        int more;
        rt_jpath path = {"inputs", -1, NULL, 0, 1, -1};
        if ((st = rt_jr_member(r, &more, &path.key, &path.klen)) != RT_OK)
            return st;
        if (!more && members > 0 && n < 0) {
            char names[320];
            rt_json_list_inputs(q->g, &q->md, names, sizeof names);
            return rt_err_set(q->sem, RT_ERR_INVALID, "inputs: none of the model's inputs is "
                              "given; its inputs: %s (Missing named input: %s in 'inputs' "
                              "object.)", names, q->md.kind == RT_IN_FEATURES ?
                              rt_graph_input_name(q->g, 0) : q->md.name);
        }
        if (!more)
            return RT_OK;
        int kl = (int)(path.klen > 80 ? 80 : path.klen);
        long in = rt_jfill_find(q, path.key, path.klen);
        if (in < 0) {
            /* not an input of the signature: ignored, as TF Serving reads
             * only the signature's inputs from "inputs" */
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
            continue;
        }
        if (q->seen[in])
            return rt_err_set(q->sem, RT_ERR_INVALID, "inputs.%.*s: given more than once", kl,
                              path.key);
        q->seen[in] = 1;
        if ((st = rt_jr_value(r, &v)) != RT_OK)
            return st;
        if (v.kind != RT_JV_LIST)
            return rt_err_set(q->sem, RT_ERR_INVALID, "inputs.%.*s: expected a list with one "
                              "value per instance", kl, path.key);
        long i = 0;
        for (;; i++) {
            if ((st = rt_jr_element(r, &more)) != RT_OK)
                return st;
            if (!more)
                break;
            size_t idx;
            if (n < 0) {
                if ((size_t)i >= p->max_instances)
                    return rt_jfill_limit(q, p, "inputs", (size_t)i);
                if ((st = rt_batch_add(q->c->batch, &idx)) != RT_OK)
                    return rt_err_set(q->sem, st, "inputs: %s", rt_err_status_str(st));
            } else if (i >= n) {
                /* count them all for the message */
                size_t cnt = (size_t)i;
                if ((st = rt_jr_count_rest(r, &cnt)) != RT_OK)
                    return st;
                return rt_err_set(q->sem, RT_ERR_INVALID, "inputs.%.*s: %zu values, but "
                                  "inputs.%s has %ld", kl, path.key, cnt, first, n);
            }
            path.i = i;
            if ((st = rt_jfill_value(q, (size_t)i, (size_t)in, &path)) != RT_OK)
                return st;
        }
        if (n < 0) {
            n = i;
            memcpy(first, path.key, (size_t)kl);
            first[kl] = '\0';
        } else if (i != n) {
            return rt_err_set(q->sem, RT_ERR_INVALID, "inputs.%.*s: %ld values, but inputs.%s "
                              "has %ld", kl, path.key, i, first, n);
        }
    }
}

static void set_mode(rt_jfill *q, const Predictd__SignatureDef *sig)
{
    q->md = rt_json_mode_for(q->g, sig);
    q->nin = rt_json_mode_inputs(q->g, &q->md);
}

rt_status rt_json_parse_predict(const rt_graph *g, const char *body, size_t len,
                                const rt_json_params *p, rt_ctx *c, int *columnar,
                                const Predictd__SignatureDef **sig, rt_err *err)
{
    rt_json_params dp = rt_json_default_params();
    if (!p)
        p = &dp;
    if (!g || !c || !columnar || !sig || (!body && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_json_parse_predict: NULL argument");
    rt_status st = rt_ctx_prepare(c, g, err);
    if (st != RT_OK)
        return st;
    const Predictd__ModelDef *def = rt_graph_def(g);
    const Predictd__SignatureDef *prov = NULL, *named = NULL;
    rt_err no_default;
    rt_status default_st = rt_json_find_signature(def, NULL, &prov, &no_default);
    named = prov;
    unsigned char local_seen[64];
    size_t n_all = rt_graph_num_inputs(g) + 1;
    unsigned char *seen = n_all <= sizeof local_seen ? local_seen : malloc(n_all);
    if (!seen)
        return rt_err_set(err, RT_ERR_NOMEM, "request: out of memory");
    rt_err sem;
    rt_jr r;
    rt_jfill q;
    rt_jfill_start(&q, &r, &sem, g, c, body, len, p, 0, seen, err);
    set_mode(&q, prov);
    pending pd = {RANK_NONE, RT_OK, {{0}}};
    int have_sig = 0, payload = 0, sig_after = 0;
    rt_jr_mark at_payload = {0};
    rt_jv v;
    const char *key;
    size_t klen;
    int more;

    if ((st = rt_jr_value(&r, &v)) != RT_OK)
        goto out;
    if (v.kind != RT_JV_OBJECT) {
        rt_err_set(&sem, RT_ERR_INVALID, "request body must be a JSON object");
        note(&pd, RANK_BODY, RT_ERR_INVALID, &sem);
        goto end;
    }
    for (;;) {
        if ((st = rt_jr_member(&r, &more, &key, &klen)) != RT_OK)
            goto out;
        if (!more)
            break;
        int kl = (int)(klen > 80 ? 80 : klen);
        int k = klen == 14 && memcmp(key, "signature_name", 14) == 0 ? 0
                : klen == 9 && memcmp(key, "instances", 9) == 0    ? 1
                : klen == 6 && memcmp(key, "inputs", 6) == 0       ? 2
                                                                   : -1;
        if (k < 0) {
            /* TF Serving's rule: other top-level keys are ignored */
            if ((st = rt_jr_skip(&r)) != RT_OK)
                goto out;
            continue;
        }
        if ((k == 0 && have_sig) || (k > 0 && payload == k)) {
            rt_err_set(&sem, RT_ERR_INVALID, "key \"%.*s\" given twice", kl, key);
            note(&pd, RANK_KEYS, RT_ERR_INVALID, &sem);
            if ((st = rt_jr_skip(&r)) != RT_OK)
                goto out;
            continue;
        }
        if (k == 0) {
            have_sig = 1;
            rt_status ss = rt_json_read_signature(&r, def, &named, &sem);
            if ((st = r.hard) != RT_OK)
                goto out;
            if (ss != RT_OK)
                note(&pd, RANK_SIG, ss, &sem);
            else if (payload)
                sig_after = 1;
            else
                set_mode(&q, named);
            continue;
        }
        if (payload) {
            rt_err_set(&sem, RT_ERR_INVALID, "give either \"instances\" or \"inputs\", not both "
                       "(Not formatted correctly expecting only one of 'inputs' or "
                       "'instances' keys to exist)");
            note(&pd, RANK_SHAPE, RT_ERR_INVALID, &sem);
            if ((st = rt_jr_skip(&r)) != RT_OK)
                goto out;
            continue;
        }
        payload = k;
        at_payload = rt_jr_save(&r);
        if (pd.rank < RANK_PAYLOAD) {
            st = rt_jr_skip(&r);
        } else {
            st = k == 1 ? parse_rows(&q, p) : parse_columns(&q, p);
            if (st != RT_OK && !r.hard) {
                note(&pd, RANK_PAYLOAD, st, &sem);
                st = rt_jr_skip_to(&r, 1);
            }
        }
        if (st != RT_OK)
            goto out;
    }
end:
    if ((st = rt_jr_end(&r)) != RT_OK)
        goto out;
    if (!have_sig && default_st != RT_OK)
        note(&pd, RANK_SIG, default_st, &no_default);
    if (!payload) {
        rt_err_set(&sem, RT_ERR_INVALID, "missing \"instances\" (rows) or \"inputs\" (columns) "
                   "(Missing 'inputs' or 'instances' key)");
        note(&pd, RANK_SHAPE, RT_ERR_INVALID, &sem);
    }
    if (payload && sig_after && pd.rank >= RANK_PAYLOAD) {
        rt_in_mode was = q.md;
        set_mode(&q, named);
        if (was.kind != q.md.kind || (was.name != q.md.name && (!was.name || !q.md.name ||
                                                              strcmp(was.name, q.md.name)))) {
            /* the signature read after the instances reads them otherwise */
            if ((st = rt_ctx_prepare(c, g, err)) != RT_OK)
                goto out;
            pd.rank = RANK_NONE;
            rt_jr_restore(&r, at_payload);
            st = payload == 1 ? parse_rows(&q, p) : parse_columns(&q, p);
            if (st != RT_OK && r.hard)
                goto out;
            if (st != RT_OK)
                note(&pd, RANK_PAYLOAD, st, &sem);
        }
    }
    if (pd.rank != RANK_NONE) {
        st = pd.st;
        if (err)
            *err = pd.e;
        goto out;
    }
    *columnar = payload == 2;
    *sig = named;
    st = RT_OK;
out:
    rt_jr_done(&r);
    if (seen != local_seen)
        free(seen);
    return rt_json_tidy_message(st, err);
}
