/*
 * rt_merge.c — cross-request batching in the runtime: a :predict, :classify
 * or :regress body parsed without running it, several parsed requests merged into one rt_batch and
 * run through one transform, forward pass and head, and the outputs split
 * back into one answer per request, each rendered by its own method (a
 * :classify request's rows share a run with :predict requests' rows: the
 * run is the same, only the rendering differs).
 *
 * The rule is that batching changes no byte of any answer. It holds because
 * every stage works row by row: the transform, the forward pass (its dense
 * layers compute each row on its own, rt_dense.c) and the head, so a row's
 * result does not depend on its neighbours. Errors are never merged:
 * when a merged run fails, the caller runs each request alone and each gets
 * its own answer or message.
 */
#include "rt_serve.h"
#include "rt_v2_internal.h"


rt_status rt_merge_parse_only(const rt_model *m, const char *body, size_t len,
                             const rt_json_params *p, rt_ctx *c, rt_parsed *out, rt_err *err)
{
    return rt_merge_parse(m, RT_METHOD_PREDICT, body, len, p, c, out, err);
}

/* Whether the rows of b read the same under RT_MISSING_ERROR as under its
 * RT_MISSING_EMPTY: no string input of any row without a value (the only
 * cells the policies read differently, rt_transform.c). */
static bool reads_as_predict(const rt_graph *g, const rt_batch *b)
{
    if (rt_batch_missing(b) != RT_MISSING_EMPTY)
        return false;
    if (g->absent_missing)
        return true; /* no policy is read */
    size_t n = rt_batch_size(b);
    for (size_t in = 0; in < g->n_inputs; in++) {
        if (g->inputs[in].dtype != PREDICTD__DTYPE__DT_STRING)
            continue;
        for (size_t i = 0; i < n; i++) {
            size_t k = 0;
            (void)rt_batch_cell(b, i, in, &k);
            if (k == 0)
                return false;
        }
    }
    return true;
}

/* The parse of a :classify / :regress body, as rt_json_serve's: the
 * examples read, the head chosen, the answer's size checked. */
static rt_status parse_examples(const rt_graph *g, rt_method method, const char *body,
                                size_t len, const rt_json_params *p, rt_ctx *c, rt_parsed *out,
                                rt_err *err)
{
    const Predictd__SignatureDef *sig = NULL;
    rt_status st = rt_json_parse_examples(g, method, body, len, p, c, &sig, err);
    if (st != RT_OK)
        return st;
    /* several heads: the named signature's head, else the first */
    long head = -1;
    const rt_graph *rg = g;
    if (rt_graph_head_view(g, 0, NULL)) {
        head = rt_json_signature_head(g, sig);
        head = head < 0 ? 0 : head;
        rg = rt_graph_head_view(g, (size_t)head, NULL);
    }
    if ((st = rt_json_check_answer(rg, sig, method, rt_batch_size(c->batch), p, err)) != RT_OK)
        return rt_json_tidy_message(st, err);
    out->sig = sig;
    out->head = head;
    if (reads_as_predict(g, c->batch)) /* may share a batch with :predict */
        rt_batch_set_missing(c->batch, RT_MISSING_ERROR);
    return RT_OK;
}

rt_status rt_merge_parse(const rt_model *m, rt_method method, const char *body, size_t len,
                         const rt_json_params *p, rt_ctx *c, rt_parsed *out, rt_err *err)
{
    if (!m || !c || !out || (!body && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_merge_parse: NULL argument");
    const rt_graph *g = rt_model_graph(m);
    if (!g)
        return rt_err_set(err, RT_ERR_INVALID, "model has no graph");
    rt_json_params dp = rt_json_default_params();
    if (!p)
        p = &dp;
    *out = (rt_parsed){.method = method, .head = -1};
    rt_status st;
    if (method == RT_METHOD_CLASSIFY || method == RT_METHOD_REGRESS) {
        st = parse_examples(g, method, body ? body : "", len, p, c, out, err);
    } else if (method == RT_METHOD_PREDICT) {
        const Predictd__SignatureDef *sig = NULL;
        st = rt_json_parse_predict(g, body ? body : "", len, p, c, &out->columnar, &sig, err);
        if (st == RT_OK)
            st = rt_json_check_answer(g, sig, RT_METHOD_PREDICT, rt_batch_size(c->batch), p,
                                      err);
        out->sig = sig;
    } else {
        st = rt_err_set(err, RT_ERR_INVALID, "unknown method %d", (int)method);
    }
    if (st != RT_OK)
        return st;
    out->n = rt_batch_size(c->batch);
    out->missing = (int)rt_batch_missing(c->batch);
    return RT_OK;
}

const void *rt_merge_key(const rt_parsed *pr)
{
    static const char keys[3]; /* one per rt_missing_policy */
    int k = pr ? pr->missing : 0;
    return &keys[k >= 0 && k < 3 ? k : 0];
}

/* The answer of a :classify / :regress request from o (its rows' outputs,
 * every head's), for the head it answers (rt_json_serve's). */
static rt_status render_examples(const rt_graph *g, const rt_parsed *pr, const rt_outputs *o,
                                 rt_buf *out, rt_err *err)
{
    const rt_graph *rg = g;
    const rt_outputs *ro = o;
    if (pr->head >= 0) {
        rg = rt_graph_head_view(g, (size_t)pr->head, NULL);
        if (!rg)
            return rt_err_set(err, RT_ERR_INVALID, "no head %ld", pr->head);
        if ((size_t)pr->head < o->n_heads)
            ro = &o->heads[pr->head];
    }
    if (pr->method == RT_METHOD_CLASSIFY)
        return rt_json_render_classify(rg, ro, out);
    return rt_json_render_regress(rg, ro, out, err);
}

rt_status rt_merge_run_parsed(const rt_model *m, rt_ctx *c, const rt_parsed *pr, rt_buf *out,
                             rt_err *err)
{
    if (!m || !c || !pr || !out)
        return rt_err_set(err, RT_ERR_INVALID, "rt_merge_run_parsed: NULL argument");
    const rt_graph *g = rt_model_graph(m);
    if (!g || !c->batch || c->graph != g)
        return rt_err_set(err, RT_ERR_INVALID, "rt_merge_run_parsed: context not parsed for "
                                               "this model");
    bool examples = pr->method == RT_METHOD_CLASSIFY || pr->method == RT_METHOD_REGRESS;
    rt_status st;
    if (rt_batch_size(c->batch) == 0)
        c->outputs.n = 0; /* nothing to run: an empty answer (as rt_json_handle) */
    else if ((st = rt_ctx_run(c, g, err)) != RT_OK) {
        if (pr->columnar)
            rt_json_name_columns(g, c->batch, err);
        else
            rt_json_name_missing(g, c->batch, err);
        if (examples)
            rt_json_name_examples(err);
        /* a TF Serving body's message, as rt_json_serve tidies it */
        return pr->v2 ? st : rt_json_tidy_message(st, err);
    }
    st = pr->v2      ? rt_v2_render(g, (rt_v2_req *)pr->v2, &c->outputs, out)
         : examples ? render_examples(g, pr, &c->outputs, out, err)
                    : rt_json_render_predict(g, pr->sig, &c->outputs, pr->columnar, out);
    rt_ctx_mark(c, &c->marks.rendered);
    /* the renderers report no message of their own for want of memory */
    if (st == RT_ERR_NOMEM)
        return rt_err_set(err, st, "out of memory writing the answer");
    if (st != RT_OK)
        return pr->v2 ? st : rt_json_tidy_message(st, err);
    /* an answer its client no longer waits for is not sent */
    return rt_ctx_check_stop(c, "the answer was written", err);
}

rt_status rt_merge_batch_append(rt_batch *dst, const rt_batch *src, rt_err *err)
{
    if (!dst || !src)
        return rt_err_set(err, RT_ERR_INVALID, "rt_merge_batch_append: NULL argument");
    const rt_graph *g = rt_batch_graph(src);
    if (rt_batch_graph(dst) != g)
        return rt_err_set(err, RT_ERR_INVALID,
                          "rt_merge_batch_append: batches of different models");
    if (rt_batch_size(dst) == 0)
        rt_batch_set_missing(dst, rt_batch_missing(src));
    else if (rt_batch_missing(dst) != rt_batch_missing(src))
        return rt_err_set(err, RT_ERR_INVALID, "rt_merge_batch_append: batches with different "
                                               "missing-input policies");
    size_t n = rt_batch_size(src), nin = rt_graph_num_inputs(g);
    for (size_t i = 0; i < n; i++) {
        size_t idx;
        rt_status st = rt_batch_add(dst, &idx);
        for (size_t in = 0; st == RT_OK && in < nin; in++) {
            size_t k = 0;
            const rt_value *v = rt_batch_cell(src, i, in, &k);
            for (size_t j = 0; st == RT_OK && j < k; j++)
                st = v[j].str ? rt_batch_push_str(dst, idx, in, v[j].str, v[j].len)
                              : rt_batch_push_num(dst, idx, in, v[j].num);
        }
        if (st != RT_OK)
            return rt_err_set(err, st, "merging instance %zu: %s", i, rt_err_status_str(st));
    }
    return RT_OK;
}

rt_status rt_merge_run(const rt_model *m, rt_ctx *mc, rt_ctx *const *reqs,
                       const rt_parsed *parsed, size_t n, rt_err *err)
{
    if (!m || !mc || (!reqs && n) || (!parsed && n))
        return rt_err_set(err, RT_ERR_INVALID, "rt_merge_run: NULL argument");
    const rt_graph *g = rt_model_graph(m);
    if (!g)
        return rt_err_set(err, RT_ERR_INVALID, "model has no graph");
    rt_status st = rt_ctx_prepare(mc, g, err);
    if (st != RT_OK)
        return st;
    size_t total = 0;
    for (size_t k = 0; k < n; k++) {
        const rt_ctx *rc = reqs[k];
        if (!rc || rc->graph != g || !rc->batch) {
            return rt_err_set(err, RT_ERR_INVALID, "request %zu was not parsed for this model",
                              k);
        }
        size_t nk = rt_batch_size(rc->batch);
        if (nk == 0 || nk != parsed[k].n) {
            return rt_err_set(err, RT_ERR_INVALID, "request %zu: %zu instances (parsed %zu); "
                              "empty requests are not merged", k, nk, parsed[k].n);
        }
        if ((st = rt_merge_batch_append(mc->batch, rc->batch, err)) != RT_OK)
            return st;
        total += nk;
    }
    if (total == 0) {
        mc->outputs.n = 0;
        return RT_OK;
    }
    return rt_ctx_run(mc, g, err);
}

/* Several heads' outputs a merged answer slices at most (a model with more
 * answers RT_ERR_LIMIT from rt_merge_render). */
#define RT_MERGE_HEADS 64

/* v: rows [start, start + n) of o (logits ld wide), a view that owns nothing. */
static void slice_outputs(const rt_outputs *o, size_t start, size_t n, size_t ld, rt_outputs *v)
{
    size_t nc = o->n_classes;
    *v = *o;
    v->n = n;
    v->logits = o->logits ? o->logits + start * ld : NULL;
    v->logistic = o->logistic ? o->logistic + start : NULL;
    v->probabilities = o->probabilities ? o->probabilities + start * nc : NULL;
    v->class_ids = o->class_ids ? o->class_ids + start : NULL;
    v->predictions = o->predictions ? o->predictions + start * ld : NULL;
    v->heads = NULL;
    v->priv = NULL;
}

rt_status rt_merge_render(const rt_model *m, const rt_ctx *mc, size_t start,
                          const rt_parsed *pr, rt_buf *out)
{
    if (!m || !mc || !pr || !out)
        return RT_ERR_INVALID;
    const rt_graph *g = rt_model_graph(m);
    const rt_outputs *o = &mc->outputs;
    if (!g || mc->graph != g || start > o->n || pr->n > o->n - start)
        return RT_ERR_INVALID;
    rt_outputs v;
    slice_outputs(o, start, pr->n, rt_graph_logits_dim(g), &v);
    /* several heads: each head's outputs sliced the same way */
    rt_outputs heads[RT_MERGE_HEADS];
    if (o->n_heads > RT_MERGE_HEADS)
        return RT_ERR_LIMIT;
    for (size_t h = 0; h < o->n_heads; h++)
        slice_outputs(&o->heads[h], start, pr->n,
                      rt_graph_logits_dim(rt_graph_head_view(g, h, NULL)), &heads[h]);
    v.heads = o->n_heads ? heads : NULL;
    if (pr->v2)
        return rt_v2_render(g, (rt_v2_req *)pr->v2, &v, out);
    if (pr->method == RT_METHOD_CLASSIFY || pr->method == RT_METHOD_REGRESS) {
        rt_err err = {{0}}; /* its message: the request run alone (see rt_serve.h) */
        return render_examples(g, pr, &v, out, &err);
    }
    return rt_json_render_predict(g, pr->sig, &v, pr->columnar, out);
}
