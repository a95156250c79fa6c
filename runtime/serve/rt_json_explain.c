/*
 * rt_json_explain.c — an :explain body and its answer (rt_json_explain),
 * in Vertex AI's names (docs/explanations.md).
 *
 * The body is a :predict body; its predictions are answered by
 * rt_json_handle itself (the same bytes and the same errors as :predict),
 * which leaves the instances in the context's batch for explaining. The
 * optional "explanationSpecOverride" is read with the request parser's
 * reader (rt_jr.c); every key is checked and an error names it by
 * its path ("explanationSpecOverride.parameters.topK: ..."). The answer is
 * {"explanations": [{"attributions": [...]}, ...], "predictions": ...}.
 * On a model of several heads (TF's MultiHead) the body's "head" names the
 * head explained (the first by default, as TF serves it), and each of its
 * attributions says "head": its name.
 */
#include "rt_serve.h"
#include "rt_explain_internal.h"
#include "rt_json_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OVR "explanationSpecOverride"

typedef struct ovr {
    rt_jr *r;
    const rt_graph *g;
    rt_xai_params *p;
    xai_base_value *base; /* [RT_XAI_MAX_BASELINES][n_inputs]: baseline k of
                             input in at base[k * n_inputs + in] */
    size_t *n_base;       /* [n_inputs]: values given per input */
    int methods;          /* methods named */
    rt_err *err;
    const char *k; /* the member being read: its key */
    size_t kn;
} ovr;

static rt_status bad(ovr *o, const char *path, const char *fmt, const char *a)
{
    return rt_err_set(o->err, RT_ERR_INVALID, "%s: %s%s", path, fmt, a ? a : "");
}

/* The member being read is refused (an unknown key, one predictd does not
 * support): the error names its path (the key cut at 40 bytes) and says why. */
static rt_status bad_member(ovr *o, const char *path, const char *fmt, const char *a)
{
    char sub[200];
    snprintf(sub, sizeof sub, "%.120s.%.*s", path, (int)(o->kn > 40 ? 40 : o->kn), o->k);
    return bad(o, sub, fmt, a);
}

/* The object's next member, its key in o->k: false at its end or on an
 * error (in *st). */
static bool next_member(ovr *o, int *more, rt_status *st)
{
    return *st == RT_OK && (*st = rt_jr_member(o->r, more, &o->k, &o->kn)) == RT_OK && *more;
}

/* The next value must be an object: opened. */
static rt_status open_object(ovr *o, const char *path)
{
    rt_jv v;
    rt_status st = rt_jr_value(o->r, &v);
    if (st != RT_OK)
        return st;
    if (v.kind != RT_JV_OBJECT) {
        char d[64];
        rt_json_describe(&v, d, sizeof d);
        if (v.kind == RT_JV_LIST && (st = rt_jr_skip_to(o->r, o->r->depth - 1)) != RT_OK)
            return st;
        return bad(o, path, "expected an object, got ", d);
    }
    return RT_OK;
}

/* An integer in [lo, hi]. */
static rt_status read_int(ovr *o, const char *path, long lo, long hi, long *out)
{
    rt_jv v;
    rt_status st = rt_jr_value(o->r, &v);
    if (st != RT_OK)
        return st;
    char d[64];
    rt_json_describe(&v, d, sizeof d);
    if (v.kind != RT_JV_NUMBER || v.token || v.num != floor(v.num)) {
        if (v.kind == RT_JV_OBJECT || v.kind == RT_JV_LIST)
            rt_ignore(rt_jr_skip_to(o->r, o->r->depth - 1)); /* the refusal below is the answer */
        return bad(o, path, "expected an integer, got ", d);
    }
    if (v.num < (double)lo || v.num > (double)hi)
        return rt_err_set(o->err, RT_ERR_INVALID, "%s: %s is out of range [%ld, %ld]", path, d, lo,
                          hi);
    *out = (long)v.num;
    return RT_OK;
}

/* {"pathCount": n} / {"stepCount": n} / {} for a method. */
static rt_status read_method(ovr *o, const char *path, const char *count_key, long hi, int *count)
{
    rt_status st = open_object(o, path);
    int more = 0;
    while (next_member(o, &more, &st)) {
        if (count_key && rt_jr_key_is(o->k, o->kn, count_key)) {
            long n = 0;
            char sub[160];
            snprintf(sub, sizeof sub, "%s.%s", path, count_key);
            if ((st = read_int(o, sub, 1, hi, &n)) == RT_OK)
                *count = (int)n;
        } else {
            return bad_member(o, path, "unknown key (predictd reads ",
                               count_key ? count_key : "no key here");
        }
    }
    return st;
}

static rt_status read_parameters(ovr *o)
{
    const char *path = OVR ".parameters";
    rt_status st = open_object(o, path);
    int more = 0, have_topk = 0;
    while (next_member(o, &more, &st)) {
        if (rt_jr_key_is(o->k, o->kn, "sampledShapleyAttribution")) {
            o->p->method = RT_XAI_SAMPLED;
            o->methods++;
            st = read_method(o, OVR ".parameters.sampledShapleyAttribution", "pathCount", 50,
                             &o->p->path_count);
        } else if (rt_jr_key_is(o->k, o->kn, "integratedGradientsAttribution")) {
            o->p->method = RT_XAI_IG;
            o->methods++;
            st = read_method(o, OVR ".parameters.integratedGradientsAttribution", "stepCount", 100,
                             &o->p->step_count);
        } else if (rt_jr_key_is(o->k, o->kn, "treeShapAttribution")) {
            o->p->method = RT_XAI_TREE_SHAP;
            o->methods++;
            st = read_method(o, OVR ".parameters.treeShapAttribution", NULL, 0, NULL);
        } else if (rt_jr_key_is(o->k, o->kn, "exactShapleyAttribution")) {
            o->p->method = RT_XAI_EXACT;
            o->methods++;
            st = read_method(o, OVR ".parameters.exactShapleyAttribution", NULL, 0, NULL);
        } else if (rt_jr_key_is(o->k, o->kn, "xraiAttribution") ||
                   rt_jr_key_is(o->k, o->kn, "examples")) {
            return bad_member(o, path,
                              "not supported (predictd explains tabular models: "
                              "sampledShapleyAttribution, integratedGradientsAttribution, "
                              "exactShapleyAttribution, treeShapAttribution)",
                              NULL);
        } else if (rt_jr_key_is(o->k, o->kn, "topK")) {
            long n = 0;
            have_topk = 1;
            if ((st = read_int(o, OVR ".parameters.topK", -1, RT_XAI_MAX_OUTPUTS, &n)) == RT_OK &&
                n == 0)
                return bad(o, OVR ".parameters.topK",
                           "0 is not a count (1 or more, or -1 "
                           "for every output)",
                           NULL);
            o->p->top_k = (int)n;
        } else if (rt_jr_key_is(o->k, o->kn, "outputIndices")) {
            rt_jv v;
            if ((st = rt_jr_value(o->r, &v)) != RT_OK)
                return st;
            if (v.kind != RT_JV_LIST) {
                char d[64];
                rt_json_describe(&v, d, sizeof d);
                if (v.kind == RT_JV_OBJECT)
                    rt_ignore(rt_jr_skip_to(o->r, o->r->depth - 1)); /* the refusal below is the answer */
                return bad(o, OVR ".parameters.outputIndices", "expected a list, got ", d);
            }
            size_t n = 0;
            while ((st = rt_jr_element(o->r, &more)) == RT_OK && more) {
                long x = 0;
                char sub[160];
                snprintf(sub, sizeof sub, OVR ".parameters.outputIndices[%zu]", n);
                if (n >= RT_XAI_MAX_OUTPUTS)
                    return rt_err_set(o->err, RT_ERR_INVALID, "%s: more than %d indices", sub,
                                      RT_XAI_MAX_OUTPUTS);
                if ((st = read_int(o, sub, 0, 1L << 30, &x)) != RT_OK)
                    return st;
                o->p->output_indices[n++] = (size_t)x;
            }
            if (st == RT_OK && n == 0)
                return bad(o, OVR ".parameters.outputIndices", "empty list", NULL);
            o->p->n_output_indices = n;
        } else {
            return bad_member(o, path, "unknown key", NULL);
        }
    }
    if (st == RT_OK && o->methods > 1)
        return bad(o, path,
                   "names more than one method (give one of sampledShapleyAttribution, "
                   "integratedGradientsAttribution, exactShapleyAttribution, "
                   "treeShapAttribution)",
                   NULL);
    if (st == RT_OK && have_topk && o->p->n_output_indices)
        return bad(o, path, "topK and outputIndices are exclusive (give one)", NULL);
    return st;
}

/* One baseline of a list input of width values (its list, opened): into
 * b->vec, exactly width finite numbers, else an error naming path (the
 * baseline) and the input's length. */
static rt_status read_list_baseline(ovr *o, size_t in, size_t width, xai_base_value *b,
                                    const char *path)
{
    int depth = o->r->depth - 1, more = 0;
    size_t n = 0;
    rt_status st;
    if (!(b->vec = malloc(width * sizeof *b->vec)))
        return rt_err_set(o->err, RT_ERR_NOMEM, "baseline: out of memory");
    while ((st = rt_jr_element(o->r, &more)) == RT_OK && more) {
        if (n >= width) { /* too long: counted, then refused */
            size_t rest = 0;
            if ((st = rt_jr_count_rest(o->r, &rest)) != RT_OK)
                return st;
            n += rest;
            break;
        }
        rt_jv v;
        if ((st = rt_jr_value(o->r, &v)) != RT_OK)
            return st;
        if (v.kind != RT_JV_NUMBER || !isfinite(v.num)) {
            char d[64];
            rt_json_describe(&v, d, sizeof d);
            if (v.kind == RT_JV_OBJECT || v.kind == RT_JV_LIST)
                rt_ignore(rt_jr_skip_to(o->r, o->r->depth - 1));
            rt_ignore(rt_jr_skip_to(o->r, depth)); /* the refusal below is the answer */
            return rt_err_set(o->err, RT_ERR_INVALID, "%s[%zu]: expected a finite number, got %s",
                              path, n, d);
        }
        b->vec[n++] = v.num;
    }
    if (st == RT_OK && n != width)
        return rt_err_set(o->err, RT_ERR_INVALID,
                          "%s: a list of %zu values where input \"%s\" holds %zu (give its %zu "
                          "numbers, or one number for every slot)",
                          path, n, o->g->inputs[in].name, width, width);
    b->n_vec = width;
    return st;
}

/* metadata.inputs.NAME: {"inputBaselines": [value, ...]} (up to
 * RT_XAI_MAX_BASELINES values; a list input's value a number for every
 * slot or a list of its length, as Vertex AI broadcasts a scalar baseline) */
static rt_status read_input(ovr *o, size_t in, const char *path)
{
    rt_status st = open_object(o, path);
    int more = 0;
    char sub[200];
    bool num = rt_graph_input_dtype(o->g, in) == PREDICTD__DTYPE__DT_FLOAT;
    size_t width = num ? rt_xai_input_width(o->g, in) : 1;
    while (next_member(o, &more, &st)) {
        if (!rt_jr_key_is(o->k, o->kn, "inputBaselines"))
            return bad_member(o, path, "unknown key (predictd reads inputBaselines)", NULL);
        snprintf(sub, sizeof sub, "%.120s.inputBaselines", path);
        rt_jv v;
        if ((st = rt_jr_value(o->r, &v)) != RT_OK)
            return st;
        if (v.kind != RT_JV_LIST)
            return bad(o, sub, "expected a list of values", NULL);
        size_t n = 0;
        while ((st = rt_jr_element(o->r, &more)) == RT_OK && more) {
            if (n >= RT_XAI_MAX_BASELINES)
                return rt_err_set(o->err, RT_ERR_INVALID, "%s: more than %d baselines", sub,
                                  RT_XAI_MAX_BASELINES);
            if ((st = rt_jr_value(o->r, &v)) != RT_OK)
                return st;
            char d[64];
            rt_json_describe(&v, d, sizeof d);
            xai_base_value *b = &o->base[n * o->g->n_inputs + in];
            o->n_base[in] = ++n;
            free(b->vec); /* a value of an earlier, repeated key */
            b->vec = NULL;
            b->n_vec = 0;
            if (num && v.kind == RT_JV_NUMBER && isfinite(v.num)) {
                b->num = v.num;
            } else if (num && v.kind == RT_JV_LIST && width > 1) {
                snprintf(sub, sizeof sub, "%.120s.inputBaselines[%zu]", path, n - 1);
                if ((st = read_list_baseline(o, in, width, b, sub)) != RT_OK)
                    return st;
            } else if (!num && v.kind == RT_JV_STRING) {
                free(b->str);
                if (!(b->str = malloc(v.n + 1)))
                    return rt_err_set(o->err, RT_ERR_NOMEM, "baseline: out of memory");
                memcpy(b->str, v.s, v.n);
                b->str[v.n] = '\0';
                b->len = v.n;
                b->is_str = true;
            } else {
                if (v.kind == RT_JV_OBJECT || v.kind == RT_JV_LIST)
                    rt_ignore(rt_jr_skip_to(o->r, o->r->depth - 1)); /* the refusal below is the answer */
                snprintf(sub, sizeof sub, "%.120s.inputBaselines[%zu]", path, n - 1);
                if (num && width > 1)
                    return rt_err_set(o->err, RT_ERR_INVALID,
                                      "%s: expected a finite number (every slot's) or a list of "
                                      "%zu numbers (input \"%s\"'s length), got %s",
                                      sub, width, o->g->inputs[in].name, d);
                return bad(o, sub,
                           num ? "expected a finite number, got " : "expected a string, got ", d);
            }
            b->given = true;
        }
        if (st == RT_OK && n == 0)
            return bad(o, sub, "empty list (give one value, or several to average over)", NULL);
    }
    return st;
}

static rt_status read_metadata(ovr *o)
{
    const char *path = OVR ".metadata";
    rt_status st = open_object(o, path);
    int more = 0;
    while (next_member(o, &more, &st)) {
        if (rt_jr_key_is(o->k, o->kn, "inputs")) {
            if ((st = open_object(o, OVR ".metadata.inputs")) != RT_OK)
                return st;
            int more2 = 0;
            while (next_member(o, &more2, &st)) {
                char sub[200];
                long in = rt_graph_find_input(o->g, o->k, o->kn);
                snprintf(sub, sizeof sub, OVR ".metadata.inputs.%.*s",
                         (int)(o->kn > 64 ? 64 : o->kn), o->k);
                if (in < 0)
                    return bad(o, sub, "not an input of the model", NULL);
                if ((st = read_input(o, (size_t)in, sub)) != RT_OK)
                    return st;
            }
        } else if (rt_jr_key_is(o->k, o->kn, "outputs")) {
            if ((st = open_object(o, OVR ".metadata.outputs")) != RT_OK)
                return st;
            size_t n = 0;
            int more2 = 0;
            while (next_member(o, &more2, &st)) {
                char sub[200];
                snprintf(sub, sizeof sub, OVR ".metadata.outputs.%.*s",
                         (int)(o->kn > 40 ? 40 : o->kn), o->k);
                if (n++ > 0)
                    return bad(o, OVR ".metadata.outputs", "name one output", NULL);
                if (rt_jr_key_is(o->k, o->kn, "probabilities"))
                    o->p->output = RT_XAI_OUT_PROBABILITIES;
                else if (rt_jr_key_is(o->k, o->kn, "logits"))
                    o->p->output = RT_XAI_OUT_LOGITS;
                else if (rt_jr_key_is(o->k, o->kn, "predictions"))
                    o->p->output = RT_XAI_OUT_PREDICTIONS;
                else
                    return bad(o, sub,
                               "not an output predictd explains (probabilities, logits, "
                               "predictions)",
                               NULL);
                if ((st = read_method(o, sub, NULL, 0, NULL)) != RT_OK)
                    return st;
            }
        } else {
            return bad_member(o, path, "unknown key (predictd reads inputs, outputs)", NULL);
        }
    }
    return st;
}

/* The body's "head" (a string: the name of one of several heads) into
 * o->p->head; else a 400 naming the model's heads. */
static rt_status read_head(ovr *o)
{
    rt_jv v;
    rt_status st = rt_jr_value(o->r, &v);
    if (st != RT_OK)
        return st;
    char d[64], names[400];
    size_t used = 0;
    const char *hn = NULL;
    names[0] = '\0';
    for (size_t k = 0; rt_graph_head_view(o->g, k, &hn); k++) {
        size_t len = hn ? strlen(hn) : 0;
        if (v.kind == RT_JV_STRING && len == v.n && memcmp(hn, v.s, len) == 0) {
            o->p->head = k;
            return RT_OK;
        }
        int w = snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "", hn ? hn : "");
        used = w < 0 || (size_t)w >= sizeof names - used ? sizeof names - 1 : used + (size_t)w;
    }
    rt_json_describe(&v, d, sizeof d);
    if (v.kind == RT_JV_OBJECT || v.kind == RT_JV_LIST)
        rt_ignore(rt_jr_skip_to(o->r, o->r->depth - 1)); /* the refusal below is the answer */
    if (!rt_graph_head_view(o->g, 0, NULL))
        return rt_err_set(o->err, RT_ERR_INVALID, "head: the model has one head (\"head\" "
                          "names one of a model's several heads, TF's MultiHead; give none)");
    if (v.kind != RT_JV_STRING)
        return rt_err_set(o->err, RT_ERR_INVALID, "head: expected a head's name, got %s (the "
                          "model's heads: %s)", d, names);
    return rt_err_set(o->err, RT_ERR_INVALID, "head: %s is not a head of the model (its heads: "
                      "%s)", d, names);
}

/* The body's "signature_name": of several heads, the head whose own
 * signature it names ("<head>" or "<head>/<key>", as TF's MultiHead names
 * them) into *head; else *head untouched. A name that is no signature is
 * :predict's 400, not this one's. */
static rt_status read_signature_head(ovr *o, long *head)
{
    rt_jv v;
    rt_status st = rt_jr_value(o->r, &v);
    if (st != RT_OK)
        return st;
    if (v.kind == RT_JV_OBJECT || v.kind == RT_JV_LIST)
        return rt_jr_skip_to(o->r, o->r->depth - 1);
    const char *hn = NULL;
    for (size_t k = 0; v.kind == RT_JV_STRING && rt_graph_head_view(o->g, k, &hn); k++) {
        size_t len = hn ? strlen(hn) : 0;
        if (len && v.n >= len && memcmp(v.s, hn, len) == 0 && (v.n == len || v.s[len] == '/'))
            *head = (long)k;
    }
    return RT_OK;
}

/* Reads the body's "head" and explanationSpecOverride, if any, into p and
 * base; without "head", a head's own signature_name picks its head. */
static rt_status read_override(const rt_graph *g, const char *body, size_t len,
                               const rt_json_params *jp, rt_ctx *c, rt_xai_params *p,
                               xai_base_value *base, size_t *n_base, rt_err *err)
{
    rt_jr r;
    rt_jr_init(&r, body, len, jp->max_depth, &c->text, &c->key, err);
    ovr o = {&r, g, p, base, n_base, 0, err, NULL, 0};
    rt_jv v;
    int more = 0;
    rt_status st = rt_jr_value(&r, &v);
    if (st == RT_OK && v.kind != RT_JV_OBJECT)
        st = rt_err_set(err, RT_ERR_INVALID, "request body: expected an object");
    long sig_head = -1;
    bool have_head = false;
    while (next_member(&o, &more, &st)) {
        if (rt_jr_key_is(o.k, o.kn, "head")) {
            have_head = true;
            st = read_head(&o);
            continue;
        }
        if (rt_jr_key_is(o.k, o.kn, "signature_name")) {
            st = read_signature_head(&o, &sig_head);
            continue;
        }
        if (!rt_jr_key_is(o.k, o.kn, OVR)) {
            st = rt_jr_skip(&r);
            continue;
        }
        if ((st = open_object(&o, OVR)) != RT_OK)
            break;
        int more2 = 0;
        while (next_member(&o, &more2, &st)) {
            if (rt_jr_key_is(o.k, o.kn, "parameters"))
                st = read_parameters(&o);
            else if (rt_jr_key_is(o.k, o.kn, "metadata"))
                st = read_metadata(&o);
            else
                st =
                    bad_member(&o, OVR, "unknown key (predictd reads parameters, metadata)", NULL);
            if (st != RT_OK)
                break;
        }
        if (st != RT_OK)
            break;
    }
    if (st == RT_OK && !have_head && sig_head >= 0)
        p->head = (size_t)sig_head;
    rt_jr_done(&r);
    return st;
}

/* The request's baselines: what read_override fills. */
typedef struct baselines {
    xai_base_value *v; /* [RT_XAI_MAX_BASELINES * n_inputs] */
    size_t *n;         /* [n_inputs] values given per input */
    size_t k;          /* baseline instances: 1, or the inputs' common count */
} baselines;

static rt_status baselines_new(const rt_graph *g, baselines *b, rt_err *err)
{
    b->k = 1;
    b->v = calloc((size_t)RT_XAI_MAX_BASELINES * g->n_inputs + 1, sizeof *b->v);
    b->n = calloc(g->n_inputs + 1, sizeof *b->n);
    if (!b->v || !b->n)
        return rt_err_set(err, RT_ERR_NOMEM, "explain: out of memory");
    return RT_OK;
}

static void baselines_free(const rt_graph *g, baselines *b)
{
    if (b->v)
        for (size_t i = 0; i < (size_t)RT_XAI_MAX_BASELINES * g->n_inputs; i++) {
            free(b->v[i].str);
            free(b->v[i].vec);
        }
    free(b->v);
    free(b->n);
}

/* Vertex AI averages the attributions over several baselines: the inputs
 * given several values must give the same number k, baseline j taking
 * their j-th value; an input given one value has it in every baseline
 * (copied). Else an error naming the input. */
static rt_status baselines_align(const rt_graph *g, baselines *b, rt_err *err)
{
    size_t n_in = g->n_inputs;
    b->k = 1;
    for (size_t in = 0; in < n_in; in++) {
        if (b->n[in] <= 1)
            continue;
        if (b->k > 1 && b->n[in] != b->k)
            return rt_err_set(err, RT_ERR_INVALID,
                              OVR ".metadata.inputs.%.64s.inputBaselines: %zu values where "
                                  "another input gives %zu (give one value, or as many as every "
                                  "input that gives several: baseline j takes each one's j-th)",
                              g->inputs[in].name, b->n[in], b->k);
        b->k = b->n[in];
    }
    for (size_t in = 0; in < n_in; in++) {
        if (b->n[in] != 1)
            continue;
        const xai_base_value *one = &b->v[in];
        for (size_t j = 1; j < b->k; j++) {
            xai_base_value *dst = &b->v[j * n_in + in];
            free(dst->str); /* a value of an earlier, repeated key */
            free(dst->vec);
            *dst = *one;
            dst->str = NULL;
            dst->vec = NULL;
            if (one->is_str) {
                if (!(dst->str = malloc(one->len + 1)))
                    return rt_err_set(err, RT_ERR_NOMEM, "baseline: out of memory");
                memcpy(dst->str, one->str, one->len + 1);
            }
            if (one->vec) {
                if (!(dst->vec = malloc(one->n_vec * sizeof *dst->vec)))
                    return rt_err_set(err, RT_ERR_NOMEM, "baseline: out of memory");
                memcpy(dst->vec, one->vec, one->n_vec * sizeof *dst->vec);
            }
        }
    }
    return RT_OK;
}

/* ------------------------------------------------------------ cost */

/* The instances of a :predict body, counted without reading them: the
 * length of "instances" or of a row-format "inputs" list, the length of a
 * columnar "inputs" object's first column (1 when it is no list). */
static rt_status count_instances(const char *body, size_t len, const rt_json_params *jp, rt_ctx *c,
                                 size_t *n, rt_err *err)
{
    rt_jr r;
    rt_jr_init(&r, body, len, jp->max_depth, &c->text, &c->key, err);
    rt_jv v;
    int more = 0;
    const char *k;
    size_t kn;
    *n = 0;
    rt_status st = rt_jr_value(&r, &v);
    if (st == RT_OK && v.kind != RT_JV_OBJECT)
        st = rt_err_set(err, RT_ERR_INVALID, "request body: expected an object");
    while (st == RT_OK && (st = rt_jr_member(&r, &more, &k, &kn)) == RT_OK && more) {
        if (!rt_jr_key_is(k, kn, "instances") && !rt_jr_key_is(k, kn, "inputs")) {
            st = rt_jr_skip(&r);
            continue;
        }
        if ((st = rt_jr_value(&r, &v)) != RT_OK)
            break;
        if (v.kind == RT_JV_OBJECT) { /* columnar: the first column's length */
            int more2 = 0;
            if ((st = rt_jr_member(&r, &more2, &k, &kn)) != RT_OK || !more2)
                break;
            if ((st = rt_jr_value(&r, &v)) != RT_OK)
                break;
        }
        if (v.kind != RT_JV_LIST) {
            *n = 1;
            break;
        }
        int el = 0;
        if ((st = rt_jr_element(&r, &el)) == RT_OK && el)
            st = rt_jr_count_rest(&r, n);
        break;
    }
    rt_jr_done(&r);
    return st;
}

rt_status rt_json_explain_rows(const rt_model *m, const char *body, size_t len,
                               const rt_json_params *p, rt_ctx *c, size_t *rows, rt_err *err)
{
    *rows = 0;
    if (!m || !c || (!body && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_json_explain_rows: NULL argument");
    rt_json_params dp = rt_json_default_params();
    if (!p)
        p = &dp;
    const rt_graph *g = rt_model_graph(m);
    size_t n = 0;
    rt_status st = count_instances(body, len, p, c, &n, err);
    if (st != RT_OK)
        return st;
    rt_xai_params xp = rt_xai_default_params();
    baselines bl = {0};
    if ((st = baselines_new(g, &bl, err)) == RT_OK &&
        (st = read_override(g, body, len, p, c, &xp, bl.v, bl.n, err)) == RT_OK)
        st = baselines_align(g, &bl, err);
    size_t k = bl.k;
    baselines_free(g, &bl);
    if (st != RT_OK)
        return st;
    size_t d = g->n_inputs, per = 2; /* the two ends: baseline and instance */
    const rt_graph *hv = rt_graph_head_view(g, xp.head, NULL);
    bool cls = (hv ? hv : g)->head != PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    bool prob = xp.output == RT_XAI_OUT_PROBABILITIES || (xp.output == RT_XAI_OUT_DEFAULT && cls);
    rt_xai_method method = xp.method;
    if (method == RT_XAI_DEFAULT)
        method = d <= RT_XAI_EXACT_MAX || (g->trees && !prob) ? RT_XAI_EXACT : RT_XAI_SAMPLED;
    if (method == RT_XAI_TREE_SHAP)
        per -= 1; /* the instance alone */
    else if (method == RT_XAI_EXACT)
        per += g->trees && !prob ? 0 : d <= RT_XAI_EXACT_MAX ? ((size_t)1 << d) : d + 1;
    else if (method == RT_XAI_SAMPLED)
        per += (size_t)xp.path_count * (d + 1);
    else /* forward and backward along the path */
        per += 2 * ((size_t)xp.step_count + 1);
    *rows = n * per * k;
    return RT_OK;
}

/* ------------------------------------------------------------ answer */

static const char *output_name(rt_xai_output o)
{
    return o == RT_XAI_OUT_LOGITS        ? "logits"
           : o == RT_XAI_OUT_PREDICTIONS ? "predictions"
                                         : "probabilities";
}

/* A double as JSON, always with a fraction or an exponent (0.0, never 0),
 * as the runtime writes floats. */
static void put_double(rt_buf *out, double v)
{
    size_t at = out->len;
    if (rt_buf_json_double(out, v) != 0)
        return;
    for (size_t k = at; k < out->len; k++)
        if (out->data[k] == '.' || out->data[k] == 'e' || out->data[k] == 'N' ||
            out->data[k] == 'I')
            return;
    rt_buf_puts(out, ".0");
}

/* One instance's explanation: res[0..n) of p's head (hv: g, or the view of
 * head hname of several, which each attribution then names). */
static void render(const rt_graph *g, const rt_graph *hv, const char *hname,
                   const rt_xai_params *p, const rt_xai_result *res, size_t n, rt_buf *out)
{
    bool cls = hv->head != PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    rt_xai_output space = p->method == RT_XAI_TREE_SHAP    ? RT_XAI_OUT_LOGITS
                          : p->output != RT_XAI_OUT_DEFAULT ? p->output
                          : cls                             ? RT_XAI_OUT_PROBABILITIES
                                                            : RT_XAI_OUT_PREDICTIONS;
    rt_buf_puts(out, "{\"attributions\": [");
    for (size_t j = 0; j < n; j++) {
        const rt_xai_result *r = &res[j];
        rt_buf_puts(out, j ? ", {\"baselineOutputValue\": " : "{\"baselineOutputValue\": ");
        rt_buf_json_float(out, r->baseline_value);
        rt_buf_puts(out, ", \"instanceOutputValue\": ");
        rt_buf_json_float(out, r->instance_value);
        rt_buf_puts(out, ", \"featureAttributions\": {");
        for (size_t in = 0; in < g->n_inputs; in++) {
            if (in)
                rt_buf_puts(out, ", ");
            rt_buf_json_string(out, g->inputs[in].name, g->inputs[in].name_len);
            rt_buf_puts(out, ": ");
            put_double(out, r->attr[in]);
        }
        rt_buf_printf(out, "}, \"outputIndex\": [%zu]", r->output_index);
        if (cls) {
            /* a binary classifier's one logit is the log-odds of class 1 */
            size_t k = hv->logits_dim == 1 && space == RT_XAI_OUT_LOGITS ? 1 : r->output_index;
            const char *name = rt_graph_class_name(hv, k);
            if (name) {
                rt_buf_puts(out, ", \"outputDisplayName\": ");
                rt_buf_json_string(out, name, strlen(name));
            }
        }
        rt_buf_puts(out, ", \"approximationError\": ");
        put_double(out, r->approx_error);
        rt_buf_printf(out, ", \"outputName\": \"%s\"", output_name(space));
        if (hname) {
            rt_buf_puts(out, ", \"head\": ");
            rt_buf_json_string(out, hname, strlen(hname));
        }
        rt_buf_puts(out, "}");
    }
    rt_buf_puts(out, "]}");
}

/* Instance xi explained against each of the k baselines (rt_xai_explain),
 * averaged as Vertex AI does: res gets the mean attributions and the mean
 * baseline output, the model rows of all k, and the completeness gap of the
 * mean (the instance output less the mean baseline output). more: scratch
 * results with their own attr rooms. */
static rt_status explain_averaged(const rt_graph *g, const rt_batch *xb, size_t xi,
                                  rt_batch *const *base, size_t k, const rt_xai_params *xp,
                                  rt_xai_result *res, rt_xai_result *more, size_t max_res,
                                  size_t *n_res, rt_err *err)
{
    rt_status st = rt_xai_explain(g, xb, xi, base[0], 0, xp, res, max_res, n_res, err);
    if (st != RT_OK || k == 1)
        return st;
    size_t n_in = g->n_inputs;
    double base_sum[RT_XAI_MAX_OUTPUTS];
    for (size_t j = 0; j < *n_res; j++)
        base_sum[j] = res[j].baseline_value;
    for (size_t b = 1; b < k; b++) {
        size_t n2 = 0;
        if ((st = rt_xai_explain(g, xb, xi, base[b], 0, xp, more, max_res, &n2, err)) != RT_OK)
            return st;
        /* the outputs are picked by the instance's values: the same ones */
        for (size_t j = 0; j < *n_res && j < n2; j++) {
            for (size_t in = 0; in < n_in; in++)
                res[j].attr[in] += more[j].attr[in];
            base_sum[j] += more[j].baseline_value;
            res[j].evaluations += more[j].evaluations;
        }
    }
    for (size_t j = 0; j < *n_res; j++) {
        rt_xai_result *r = &res[j];
        double sum = 0.0;
        for (size_t in = 0; in < n_in; in++)
            r->attr[in] /= (double)k;
        for (size_t in = 0; in < n_in; in++)
            sum += r->attr[in];
        r->baseline_value = (float)(base_sum[j] / (double)k);
        double delta = (double)r->instance_value - base_sum[j] / (double)k;
        double gap = fabs(sum - delta);
        r->approx_error = fabs(delta) > 0.0 ? gap / fabs(delta) : gap;
    }
    return RT_OK;
}

rt_status rt_json_explain(const rt_model *m, const char *body, size_t len, const rt_json_params *p,
                          rt_ctx *c, rt_buf *out, size_t *evals, rt_err *err)
{
    if (evals)
        *evals = 0;
    if (!m || !c || !out || (!body && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_json_explain: NULL argument");
    rt_json_params dp = rt_json_default_params();
    if (!p)
        p = &dp;
    const rt_graph *g = rt_model_graph(m);
    rt_buf pred;
    rt_buf_init(&pred);
    rt_batch *base[RT_XAI_MAX_BASELINES] = {0};
    baselines bl = {0};
    double *attr = NULL;
    size_t total = 0;
    /* the predictions: :predict's own answer, which leaves the instances in c */
    rt_status st = rt_json_serve(m, RT_METHOD_PREDICT, body, len, p, c, &pred, err);
    if (st != RT_OK)
        goto out;
    if (pred.len < 2 || pred.data[0] != '{') {
        st = rt_err_set(err, RT_ERR_INVALID, "explain: unexpected predict answer");
        goto out;
    }
    if (p->max_explain_instances && rt_batch_size(c->batch) > p->max_explain_instances) {
        st = rt_err_set(err, RT_ERR_LIMIT,
                        "explain: %zu instances, at most %zu per :explain request (each costs "
                        "up to 65,536 model rows; send fewer)",
                        rt_batch_size(c->batch), p->max_explain_instances);
        goto out;
    }
    rt_xai_params xp = rt_xai_default_params();
    xp.stop = c->stop;
    xp.stop_arg = c->stop_arg;
    if ((st = baselines_new(g, &bl, err)) != RT_OK ||
        (st = read_override(g, body, len, p, c, &xp, bl.v, bl.n, err)) != RT_OK ||
        (st = baselines_align(g, &bl, err)) != RT_OK)
        goto out;
    for (size_t k = 0; k < bl.k; k++)
        if ((st = rt_xai_baseline_batch(m, bl.v + k * g->n_inputs, &base[k], err)) != RT_OK)
            goto out;
    const char *hname = NULL; /* several heads: the one explained, named in the answer */
    const rt_graph *hv = rt_graph_head_view(g, xp.head, &hname);
    size_t n = rt_batch_size(c->batch), n_in = g->n_inputs;
    size_t max_res = RT_XAI_MAX_OUTPUTS;
    if (!(attr = malloc(2 * max_res * (n_in + 1) * sizeof *attr))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "explain: out of memory");
        goto out;
    }
    rt_xai_result res[RT_XAI_MAX_OUTPUTS], more[RT_XAI_MAX_OUTPUTS];
    for (size_t j = 0; j < max_res; j++) {
        res[j].attr = attr + j * (n_in + 1);
        more[j].attr = attr + (max_res + j) * (n_in + 1);
    }
    rt_buf_puts(out, "{\"explanations\": [");
    for (size_t i = 0; i < n; i++) {
        size_t n_res = 0;
        if (xp.stop && xp.stop(xp.stop_arg)) {
            st = rt_err_set(err, RT_ERR_LIMIT, "explain: stopped after %zu of %zu instances", i,
                            n);
            goto out;
        }
        if ((st = explain_averaged(g, c->batch, i, base, bl.k, &xp, res, more, max_res, &n_res,
                                   err)) != RT_OK) {
            /* parameters are named from the override's top */
            const char *msg = err->msg;
            const char *where =
                strncmp(msg, "outputs:", 8) == 0 ? OVR ".metadata."
                : strncmp(msg, "outputIndices", 13) == 0 || strncmp(msg, "topK", 4) == 0 ||
                        strncmp(msg, "sampled", 7) == 0 || strncmp(msg, "integrated", 10) == 0 ||
                        strncmp(msg, "exact", 5) == 0 || strncmp(msg, "treeShap", 8) == 0
                    ? OVR ".parameters."
                    : NULL;
            if (where) {
                char old[RT_ERR_MAX];
                memcpy(old, msg, sizeof old);
                snprintf(err->msg, sizeof err->msg, "%s%.400s", where, old);
            }
            goto out;
        }
        total += res[0].evaluations;
        if (i)
            rt_buf_puts(out, ", ");
        render(g, hv ? hv : g, hname, &xp, res, n_res, out);
    }
    rt_buf_puts(out, "], ");
    rt_buf_append(out, pred.data + 1, pred.len - 1);
    if (rt_buf_failed(out))
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory writing the answer");
out:
    if (evals)
        *evals = total;
    baselines_free(g, &bl);
    free(attr);
    for (size_t k = 0; k < RT_XAI_MAX_BASELINES; k++)
        rt_batch_free(base[k]);
    rt_buf_free(&pred);
    return st;
}
