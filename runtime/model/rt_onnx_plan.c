/*
 * rt_onnx_plan.c — the helpers every ONNX operator's planner uses
 * (rt_onnx_read.c for the default domain, rt_onnx_ml.c for ai.onnx.ml):
 * refusals that name the node, attributes read by type, a new plan step,
 * an output's batch shape, and the checks of an input (a constant, a batch
 * value). Calls no other ONNX file.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_onnx_internal.h"
#include "onnx.pb-c.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rt_onnx_plan_nname(const Onnx__NodeProto *nd)
{
    return nd->name && nd->name[0] ? nd->name : "(unnamed)";
}

rt_status rt_onnx_plan_fail(reader *r, const Onnx__NodeProto *nd, const char *fmt, ...)
{
    char msg[RT_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rt_err_set(r->err, RT_ERR_FORMAT, "%s: node \"%.80s\" (%.40s): %s", r->file, rt_onnx_plan_nname(nd),
                      nd->op_type ? nd->op_type : "", msg);
}


/* product of dims[from..rank) with overflow and limit checks */
bool rt_onnx_plan_elems(const int64_t *dims, uint32_t from, uint32_t rank, size_t limit, size_t *out)
{
    size_t p = 1;
    for (uint32_t d = from; d < rank; d++) {
        if (dims[d] < 0 || (dims[d] > 0 && p > limit / (size_t)dims[d]))
            return false;
        p *= (size_t)dims[d];
    }
    if (p > limit)
        return false;
    *out = p;
    return true;
}

/* ------------------------------------------------------- constants */


const Onnx__AttributeProto *rt_onnx_plan_attr(const Onnx__NodeProto *nd, const char *name)
{
    for (size_t i = 0; i < nd->n_attribute; i++)
        if (nd->attribute[i]->name && strcmp(nd->attribute[i]->name, name) == 0)
            return nd->attribute[i];
    return NULL;
}

rt_status rt_onnx_plan_int(reader *r, const Onnx__NodeProto *nd, const char *name, int64_t dflt,
                          int64_t *out)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, name);
    *out = dflt;
    if (!a)
        return RT_OK;
    if (!a->has_i || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
        return rt_onnx_plan_fail(r, nd, "attribute %s: not an int", name);
    *out = a->i;
    return RT_OK;
}

rt_status rt_onnx_plan_float(reader *r, const Onnx__NodeProto *nd, const char *name, float dflt,
                            float *out)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, name);
    *out = dflt;
    if (!a)
        return RT_OK;
    if (!a->has_f || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT))
        return rt_onnx_plan_fail(r, nd, "attribute %s: not a float", name);
    if (!isfinite(a->f))
        return rt_onnx_plan_fail(r, nd, "attribute %s: not finite", name);
    *out = a->f;
    return RT_OK;
}

rt_status rt_onnx_plan_floats(reader *r, const Onnx__NodeProto *nd, const char *name,
                             const float **v, size_t *n)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, name);
    *v = NULL;
    *n = 0;
    if (!a)
        return RT_OK;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)
        return rt_onnx_plan_fail(r, nd, "attribute %s: not a list of floats", name);
    for (size_t k = 0; k < a->n_floats; k++)
        if (!isfinite(a->floats[k]))
            return rt_onnx_plan_fail(r, nd, "attribute %s: value %zu is not finite", name, k);
    *v = a->floats;
    *n = a->n_floats;
    return RT_OK;
}

/* The doubles of tensor attribute a (ai.onnx.ml's *_as_tensor) into v. */
static rt_status plan_double_tensor(reader *r, const Onnx__NodeProto *nd,
                                    const Onnx__AttributeProto *a, double **v, size_t *n)
{
    const char *name = a->name;
    const Onnx__TensorProto *t = a->t;
    if (!t || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR))
        return rt_onnx_plan_fail(r, nd, "attribute %.60s: not a tensor", name);
    int dt = t->has_data_type ? t->data_type : 0;
    if (dt != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
        return rt_onnx_plan_fail(r, nd, "attribute %.60s: data_type %d: a double (11) tensor is "
                                 "needed", name, dt);
    if ((t->has_data_location &&
         t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) || t->segment)
        return rt_onnx_plan_fail(r, nd, "attribute %.60s: external or segmented data is not "
                                 "read", name);
    bool raw = t->has_raw_data;
    size_t have = raw ? t->raw_data.len / 8 : t->n_double_data, dims = 1;
    if (raw && t->raw_data.len % 8)
        return rt_onnx_plan_fail(r, nd, "attribute %.60s: raw_data: %zu bytes (not a multiple "
                                 "of 8)", name, t->raw_data.len);
    if (t->n_dims > RT_ONNX_MAX_RANK ||
        (t->n_dims && !rt_onnx_plan_elems(t->dims, 0, (uint32_t)t->n_dims, RT_ONNX_MAX_ELEMS,
                                          &dims)))
        return rt_onnx_plan_fail(r, nd, "attribute %.60s: dims: rank above %d, negative, or "
                                 "too many elements", name, RT_ONNX_MAX_RANK);
    if (t->n_dims && dims != have)
        return rt_onnx_plan_fail(r, nd, "attribute %.60s: %zu values for its dims", name, have);
    if (!(*v = malloc((have ? have : 1) * sizeof **v)))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t k = 0; k < have; k++) {
        if (raw) { /* little-endian, as ONNX writes raw_data */
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | t->raw_data.data[8 * k + (size_t)b];
            memcpy(&(*v)[k], &u, 8);
        } else {
            (*v)[k] = t->double_data[k];
        }
        if (!isfinite((*v)[k])) {
            free(*v);
            *v = NULL;
            return rt_onnx_plan_fail(r, nd, "attribute %.60s: value %zu is not finite", name, k);
        }
    }
    *n = have;
    return RT_OK;
}

rt_status rt_onnx_plan_reals(reader *r, const Onnx__NodeProto *nd, const char *name, double **v,
                             size_t *n, const char **used)
{
    char tn[80];
    snprintf(tn, sizeof tn, "%s_as_tensor", name);
    const Onnx__AttributeProto *ta = rt_onnx_plan_attr(nd, tn);
    *v = NULL;
    *n = 0;
    *used = name;
    if (ta && rt_onnx_plan_attr(nd, name))
        return rt_onnx_plan_fail(r, nd, "attributes %s and %s: both given (one form only)",
                                 name, tn);
    if (ta) {
        *used = ta->name;
        return plan_double_tensor(r, nd, ta, v, n);
    }
    const float *f;
    size_t nf;
    rt_status st = rt_onnx_plan_floats(r, nd, name, &f, &nf);
    if (st || !f)
        return st;
    if (!(*v = malloc((nf ? nf : 1) * sizeof **v)))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t k = 0; k < nf; k++)
        (*v)[k] = f[k];
    *n = nf;
    return RT_OK;
}

rt_status rt_onnx_plan_string_is(reader *r, const Onnx__NodeProto *nd, const char *name,
                                const char *only)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, name);
    if (!a)
        return RT_OK;
    if (!a->has_s || a->s.len != strlen(only) || memcmp(a->s.data, only, a->s.len) != 0)
        return rt_onnx_plan_fail(r, nd, "attribute %s: only \"%s\" is run", name, only);
    return RT_OK;
}

/* Attributes the node may carry; any other is refused (it would change the answer). */
rt_status rt_onnx_plan_only_attrs(reader *r, const Onnx__NodeProto *nd, const char *const *ok)
{
    for (size_t i = 0; i < nd->n_attribute; i++) {
        const char *n = nd->attribute[i]->name ? nd->attribute[i]->name : "";
        bool found = false;
        for (const char *const *p = ok; *p && !found; p++)
            found = strcmp(*p, n) == 0;
        if (!found)
            return rt_onnx_plan_fail(r, nd, "attribute %.60s is not supported", n);
    }
    return RT_OK;
}

/* ------------------------------------------------------- the plan */

rt_status rt_onnx_plan_step(reader *r, rt_onnx_step **out)
{
    rt_onnx *o = r->o;
    rt_onnx_step *s = realloc(o->steps, (o->n_steps + 1) * sizeof *s);
    if (!s)
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    o->steps = s;
    *out = &s[o->n_steps++];
    memset(*out, 0, sizeof **out);
    return RT_OK;
}

/* A value's shape as text, for messages: [N,4] */
const char *rt_onnx_plan_shape_str(const rt_onnx_val *v, char *buf, size_t n)
{
    size_t w = (size_t)snprintf(buf, n, "[");
    for (uint32_t d = 0; d < v->rank && w < n; d++) {
        if (d == 0 && v->batch)
            w += (size_t)snprintf(buf + w, n - w, "N");
        else
            w += (size_t)snprintf(buf + w, n - w, "%s%" PRId64, d ? "," : "", v->dims[d]);
        if (d == 0 && v->batch && v->rank > 1 && w < n)
            w += (size_t)snprintf(buf + w, n - w, "%s", "");
    }
    if (w < n)
        snprintf(buf + w, n - w, "]");
    return buf;
}

/* Output value out takes shape (rank, dims) as a batch value. */
rt_status rt_onnx_plan_batch_shape(reader *r, const Onnx__NodeProto *nd, rt_onnx_val *v,
                                 uint32_t rank, const int64_t *dims)
{
    if (rank < 1 || rank > RT_ONNX_MAX_RANK)
        return rt_onnx_plan_fail(r, nd, "output \"%.80s\": rank %u", v->name, rank);
    v->batch = true;
    v->rank = rank;
    for (uint32_t d = 0; d < rank; d++)
        v->dims[d] = dims[d];
    if (!rt_onnx_plan_elems(dims, 1, rank, RT_ONNX_MAX_ROW, &v->row))
        return rt_onnx_plan_fail(r, nd, "output \"%.80s\": more than %zu values per instance", v->name,
                         (size_t)RT_ONNX_MAX_ROW);
    return RT_OK;
}

/* The float constant at value index c, or a refusal naming the input. */
rt_status rt_onnx_plan_want_const(reader *r, const Onnx__NodeProto *nd, size_t i, const rt_onnx_val *c)
{
    if (c->batch || !c->cdata)
        return rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": must be a float constant (an initializer)",
                         i, c->name);
    for (size_t k = 0; k < c->row; k++)
        if (!isfinite(c->cdata[k]))
            return rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": value %zu is not finite", i, c->name, k);
    return RT_OK;
}

rt_status rt_onnx_plan_want_batch(reader *r, const Onnx__NodeProto *nd, size_t i, const rt_onnx_val *v)
{
    if (!v->batch)
        return rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": a node computing from constants only is "
                         "not run (export with constant folding)", i, v->name);
    return RT_OK;
}

/* The node has lo to hi inputs. */
rt_status rt_onnx_plan_need_in(reader *r, const Onnx__NodeProto *nd, size_t n_in, size_t lo, size_t hi)
{
    if (n_in < lo || n_in > hi)
        return rt_onnx_plan_fail(r, nd, "%zu inputs (%d to %d expected)", n_in, (int)lo, (int)hi);
    return RT_OK;
}
rt_status rt_onnx_plan_ints(reader *r, const Onnx__NodeProto *nd, const char *name,
                            const int64_t **v, size_t *n)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, name);
    *v = NULL;
    *n = 0;
    if (!a)
        return RT_OK;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return rt_onnx_plan_fail(r, nd, "attribute %s: not a list of ints", name);
    *v = a->ints;
    *n = a->n_ints;
    return RT_OK;
}

rt_status rt_onnx_plan_strings(reader *r, const Onnx__NodeProto *nd, const char *name,
                               const ProtobufCBinaryData **v, size_t *n)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, name);
    *v = NULL;
    *n = 0;
    if (!a)
        return RT_OK;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS)
        return rt_onnx_plan_fail(r, nd, "attribute %s: not a list of strings", name);
    *v = a->strings;
    *n = a->n_strings;
    return RT_OK;
}

rt_status rt_onnx_plan_string(reader *r, const Onnx__NodeProto *nd, const char *name,
                              const char *dflt, char *buf, size_t n)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, name);
    if (!a) {
        snprintf(buf, n, "%s", dflt);
        return RT_OK;
    }
    if (!a->has_s || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING))
        return rt_onnx_plan_fail(r, nd, "attribute %s: not a string", name);
    if (a->s.len >= n || memchr(a->s.data, 0, a->s.len))
        return rt_onnx_plan_fail(r, nd, "attribute %s: not a known value", name);
    memcpy(buf, a->s.data, a->s.len);
    buf[a->s.len] = '\0';
    return RT_OK;
}

rt_status rt_onnx_plan_post(reader *r, const Onnx__NodeProto *nd, int *post)
{
    static const char *const names[] = {"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"};
    char buf[32];
    rt_status st = rt_onnx_plan_string(r, nd, "post_transform", "NONE", buf, sizeof buf);
    if (st)
        return st;
    for (int k = 0; k < 5; k++)
        if (strcmp(buf, names[k]) == 0) {
            *post = k;
            return RT_OK;
        }
    return rt_onnx_plan_fail(r, nd, "attribute post_transform: \"%s\" is not NONE, LOGISTIC, "
                             "SOFTMAX, SOFTMAX_ZERO or PROBIT", buf);
}

rt_status rt_onnx_plan_labels(reader *r, const Onnx__NodeProto *nd, const char *ints_name,
                              rt_onnx_val *v, size_t *count)
{
    const int64_t *iv;
    const ProtobufCBinaryData *sv;
    size_t ni, ns;
    rt_status st;
    if ((st = rt_onnx_plan_ints(r, nd, ints_name, &iv, &ni)) ||
        (st = rt_onnx_plan_strings(r, nd, "classlabels_strings", &sv, &ns)))
        return st;
    if ((ni == 0) == (ns == 0))
        return rt_onnx_plan_fail(r, nd, "attributes %s and classlabels_strings: exactly one "
                                 "must list the class labels", ints_name);
    size_t n = ni ? ni : ns;
    if (n > RT_ONNX_MAX_ROW)
        return rt_onnx_plan_fail(r, nd, "%zu class labels (at most %zu)", n,
                                 (size_t)RT_ONNX_MAX_ROW);
    if (!(v->names = calloc(n, sizeof *v->names)))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    v->n_names = n;
    v->names_int = ni > 0;
    for (size_t k = 0; k < n; k++) {
        char num[24];
        const char *s = num;
        size_t len;
        if (ni) {
            len = (size_t)snprintf(num, sizeof num, "%" PRId64, iv[k]);
        } else {
            s = (const char *)sv[k].data;
            len = sv[k].len;
            if (len && memchr(s, 0, len))
                return rt_onnx_plan_fail(r, nd, "classlabels_strings[%zu]: holds a NUL byte", k);
        }
        if (!(v->names[k] = malloc(len + 1)))
            return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
        memcpy(v->names[k], s, len);
        v->names[k][len] = '\0';
    }
    *count = n;
    return RT_OK;
}
