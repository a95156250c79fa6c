/*
 * rt_onnx_read.c — reads an ONNX model (model.onnx: a ModelProto, parsed by
 * protoc-c's code from runtime/data/onnx.proto) into a checked plan that
 * rt_onnx_run.c executes for any batch.
 *
 * Nothing in the file is trusted. The plan exists only when every part of
 * the graph is understood: the default operator set's version is 9..17;
 * every node is an operator listed in docs/models-from-elsewhere.md, with
 * attributes it supports; every input is a graph input, an initializer or
 * another node's output; the nodes are sorted into an order where each
 * input comes first (a cycle is refused); initializers are float or integer
 * tensors whose values match their shape; every shape is known (a graph
 * input's leading dimension is the batch, the others fixed) and the batch
 * stays the leading dimension of every value computed from the inputs (no
 * operator mixes two instances, which is what makes each instance's result
 * the same alone or in any batch). Refusals name the file, the node (name
 * and operator) and the field: "model.onnx: node \"fc1\" (Gemm): input 1
 * \"w\": ...".
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

#define NOMEM(err) rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", file)


static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

void rt_onnx_free(rt_onnx *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n_vals; i++) {
        free(o->vals[i].cdata);
        free(o->vals[i].idata);
        for (size_t k = 0; k < o->vals[i].n_names; k++)
            free(o->vals[i].names[k]);
        free(o->vals[i].names);
        free(o->vals[i].vslots);
    }
    for (size_t i = 0; i < o->n_steps; i++) {
        free(o->steps[i].w);
        free(o->steps[i].b);
        free(o->steps[i].map[0]);
        free(o->steps[i].map[1]);
        rt_onnx_trees_free(o->steps[i].trees);
    }
    if (o->fcols)
        for (size_t i = 0; i < o->n_inputs; i++)
            free(o->fcols[i]);
    free(o->fcols);
    free(o->n_fcols);
    free(o->vals);
    free(o->steps);
    free(o->inputs);
    free(o->outputs);
    free(o->zeros);
    if (o->proto)
        onnx__model_proto__free_unpacked(o->proto, NULL);
    free(o);
}

static long find_val(const reader *r, const char *name)
{
    if (!r->n_slots)
        return -1;
    for (size_t h = (size_t)name_hash(name) & (r->n_slots - 1);; h = (h + 1) & (r->n_slots - 1)) {
        size_t v = r->slots[h];
        if (v == 0)
            return -1;
        if (strcmp(r->o->vals[v - 1].name, name) == 0)
            return (long)(v - 1);
    }
}

static void slot_put(reader *r, const char *name, size_t idx)
{
    size_t h = (size_t)name_hash(name) & (r->n_slots - 1);
    while (r->slots[h])
        h = (h + 1) & (r->n_slots - 1);
    r->slots[h] = idx + 1;
}

static rt_status new_val(reader *r, const char *name, size_t *idx)
{
    rt_onnx *o = r->o;
    const char *file = r->file;
    if (o->n_vals == r->cap_vals) {
        size_t cap = r->cap_vals ? 2 * r->cap_vals : 64;
        rt_onnx_val *v = realloc(o->vals, cap * sizeof *v);
        if (!v)
            return NOMEM(r->err);
        o->vals = v;
        r->cap_vals = cap;
    }
    if (2 * (o->n_vals + 1) > r->n_slots) { /* grow the table: rehash every name */
        size_t ns = r->n_slots ? 2 * r->n_slots : 256;
        size_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return NOMEM(r->err);
        free(r->slots);
        r->slots = sl;
        r->n_slots = ns;
        for (size_t i = 0; i < o->n_vals; i++)
            slot_put(r, o->vals[i].name, i);
    }
    rt_onnx_val *v = &o->vals[o->n_vals];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->alias = -1;
    v->producer = -1;
    *idx = o->n_vals++;
    slot_put(r, name, *idx);
    return RT_OK;
}


static rt_status read_tensor(reader *r, const Onnx__TensorProto *t, const char *what,
                             rt_onnx_val *v)
{
    const char *file = r->file;
    const char *tn = t->name ? t->name : "";
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: %s \"%.80s\": data_location: external "
                          "data is not read (export with the weights inside the file)",
                          file, what, tn);
    if (t->segment)
        return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: %s \"%.80s\": segment: a tensor in "
                          "segments is not read", file, what, tn);
    if (t->n_dims > RT_ONNX_MAX_RANK)
        return rt_err_set(r->err, RT_ERR_LIMIT, "%s: %s \"%.80s\": dims: rank %zu (at most %u)",
                          file, what, tn, t->n_dims, RT_ONNX_MAX_RANK);
    v->rank = (uint32_t)t->n_dims;
    for (size_t d = 0; d < t->n_dims; d++)
        v->dims[d] = t->dims[d];
    size_t n;
    if (!rt_onnx_plan_elems(v->dims, 0, v->rank, RT_ONNX_MAX_ELEMS, &n))
        return rt_err_set(r->err, RT_ERR_LIMIT, "%s: %s \"%.80s\": dims: negative, or more than "
                          "%zu elements", file, what, tn, (size_t)RT_ONNX_MAX_ELEMS);
    if (n > RT_ONNX_MAX_CONST - r->total_const)
        return rt_err_set(r->err, RT_ERR_LIMIT, "%s: constants hold more than %zu elements",
                          file, (size_t)RT_ONNX_MAX_CONST);
    r->total_const += n;
    v->row = n;
    int dt = t->has_data_type ? t->data_type : 0;
    const uint8_t *raw = t->has_raw_data ? t->raw_data.data : NULL;
    size_t raw_len = t->has_raw_data ? t->raw_data.len : 0;
    size_t es = dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT32
                    ? 4
                    : 8;
    size_t have = 0;
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        have = t->n_float_data;
    else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
        have = t->n_int64_data;
    else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
        have = t->n_int32_data;
    else
        return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: %s \"%.80s\": data_type %d: only "
                          "float (1), int32 (6) and int64 (7) tensors are read", file, what, tn, dt);
    if (raw) {
        if (raw_len != n * es)
            return rt_err_set(r->err, RT_ERR_FORMAT, "%s: %s \"%.80s\": raw_data: %zu bytes for "
                              "%zu elements of %zu bytes", file, what, tn, raw_len, n, es);
    } else if (have != n) {
        return rt_err_set(r->err, RT_ERR_FORMAT, "%s: %s \"%.80s\": %zu values for dims "
                          "holding %zu", file, what, tn, have, n);
    }
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        if (!(v->cdata = malloc((n ? n : 1) * sizeof(float))))
            return NOMEM(r->err);
        for (size_t k = 0; k < n; k++) {
            if (raw) {
                uint32_t u = (uint32_t)raw[4 * k] | (uint32_t)raw[4 * k + 1] << 8 |
                             (uint32_t)raw[4 * k + 2] << 16 | (uint32_t)raw[4 * k + 3] << 24;
                memcpy(&v->cdata[k], &u, 4);
            } else {
                v->cdata[k] = t->float_data[k];
            }
        }
        return RT_OK;
    }
    if (!(v->idata = malloc((n ? n : 1) * sizeof(int64_t))))
        return NOMEM(r->err);
    for (size_t k = 0; k < n; k++) {
        if (raw && es == 8) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | raw[8 * k + (size_t)b];
            memcpy(&v->idata[k], &u, 8);
        } else if (raw) {
            uint32_t u = (uint32_t)raw[4 * k] | (uint32_t)raw[4 * k + 1] << 8 |
                         (uint32_t)raw[4 * k + 2] << 16 | (uint32_t)raw[4 * k + 3] << 24;
            int32_t s;
            memcpy(&s, &u, 4);
            v->idata[k] = s;
        } else {
            v->idata[k] = es == 8 ? t->int64_data[k] : t->int32_data[k];
        }
    }
    return RT_OK;
}

/* ------------------------------------------------------- attributes */

static long norm_axis(int64_t a, uint32_t rank)
{
    if (a < 0)
        a += rank;
    return a < 0 || a >= (int64_t)rank ? -1 : (long)a;
}

static rt_status plan_dense(reader *r, const Onnx__NodeProto *nd, bool gemm, size_t *in,
                            size_t n_in, rt_onnx_val *out)
{
    rt_onnx *o = r->o;
    const rt_onnx_val *a = &o->vals[in[0]], *bv = &o->vals[in[1]];
    char sb[96];
    rt_status st;
    int64_t ta = 0, tb = 0;
    float alpha = 1, beta = 1;
    if (gemm) {
        static const char *const ok[] = {"alpha", "beta", "transA", "transB", NULL};
        if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = rt_onnx_plan_int(r, nd, "transA", 0, &ta)) ||
            (st = rt_onnx_plan_int(r, nd, "transB", 0, &tb)) ||
            (st = rt_onnx_plan_float(r, nd, "alpha", 1, &alpha)) ||
            (st = rt_onnx_plan_float(r, nd, "beta", 1, &beta)))
            return st;
        if (ta)
            return rt_onnx_plan_fail(r, nd, "attribute transA: 1 would mix the batch's instances");
    } else {
        static const char *const ok[] = {NULL};
        if ((st = rt_onnx_plan_only_attrs(r, nd, ok)))
            return st;
    }
    if ((st = rt_onnx_plan_want_batch(r, nd, 0, a)) || (st = rt_onnx_plan_want_const(r, nd, 1, bv)))
        return st;
    if (a->rank != 2)
        return rt_onnx_plan_fail(r, nd, "input 0 \"%.80s\": shape %s: a [N, k] input is needed", a->name,
                         rt_onnx_plan_shape_str(a, sb, sizeof sb));
    if (bv->rank != 2)
        return rt_onnx_plan_fail(r, nd, "input 1 \"%.80s\": rank %u: a matrix is needed", bv->name,
                         bv->rank);
    size_t k = (size_t)a->dims[1];
    size_t bk = (size_t)(tb ? bv->dims[1] : bv->dims[0]), m = (size_t)(tb ? bv->dims[0] : bv->dims[1]);
    if (bk != k || m == 0)
        return rt_onnx_plan_fail(r, nd, "input 1 \"%.80s\": %zu rows for an input %zu wide", bv->name,
                         bk, k);
    rt_onnx_step *s;
    if ((st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_DENSE;
    s->k = k;
    s->m = m;
    if (!(s->w = malloc((k * m != 0 ? k * m : 1) * sizeof(float))) || !(s->b = calloc(m, sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < m; j++)
            s->w[i * m + j] = (tb ? bv->cdata[j * k + i] : bv->cdata[i * m + j]) * alpha;
    if (gemm && n_in > 2) {
        const rt_onnx_val *c = &o->vals[in[2]];
        if ((st = rt_onnx_plan_want_const(r, nd, 2, c)))
            return st;
        size_t cr = c->rank ? (size_t)c->dims[c->rank - 1] : 1;
        bool rows_one = c->rank < 2 || (c->rank == 2 && c->dims[0] == 1);
        if (c->rank > 2 || !rows_one || (cr != m && cr != 1))
            return rt_onnx_plan_fail(r, nd, "input 2 \"%.80s\": shape %s does not broadcast to [N,%zu] "
                             "row by row", c->name, rt_onnx_plan_shape_str(c, sb, sizeof sb), m);
        for (size_t j = 0; j < m; j++)
            s->b[j] = c->cdata[cr == 1 ? 0 : j] * beta;
    }
    int64_t dims[2] = {0, (int64_t)m};
    return rt_onnx_plan_batch_shape(r, nd, out, 2, dims);
}

static rt_status plan_binary(reader *r, const Onnx__NodeProto *nd, int op, size_t *in,
                             rt_onnx_val *out)
{
    rt_onnx *o = r->o;
    const rt_onnx_val *a = &o->vals[in[0]], *b = &o->vals[in[1]];
    char sa[96], sb[96];
    rt_status st;
    static const char *const ok[] = {NULL};
    if ((st = rt_onnx_plan_only_attrs(r, nd, ok)))
        return st;
    if (!a->batch && !b->batch)
        return rt_onnx_plan_want_batch(r, nd, 0, a);
    for (int i = 0; i < 2; i++) {
        const rt_onnx_val *v = i ? b : a;
        if (!v->batch && (st = rt_onnx_plan_want_const(r, nd, (size_t)i, v)))
            return st;
    }
    uint32_t rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t dims[RT_ONNX_MAX_RANK];
    for (uint32_t d = 0; d < rank; d++) {
        int64_t da = d + a->rank >= rank ? a->dims[d + a->rank - rank] : 1;
        int64_t db = d + b->rank >= rank ? b->dims[d + b->rank - rank] : 1;
        bool ba = a->batch && d + a->rank == rank, bb = b->batch && d + b->rank == rank;
        if (d == 0) {
            /* the batch dimension: a batch value's first, the other's 1 or batch */
            if ((a->batch && !ba) || (b->batch && !bb) || (!ba && da != 1) || (!bb && db != 1))
                return rt_onnx_plan_fail(r, nd, "inputs %s and %s: broadcasting would move the batch "
                                 "dimension", rt_onnx_plan_shape_str(a, sa, sizeof sa),
                                 rt_onnx_plan_shape_str(b, sb, sizeof sb));
            dims[0] = 0;
            continue;
        }
        if (da != db && da != 1 && db != 1)
            return rt_onnx_plan_fail(r, nd, "inputs %s and %s do not broadcast",
                             rt_onnx_plan_shape_str(a, sa, sizeof sa), rt_onnx_plan_shape_str(b, sb, sizeof sb));
        dims[d] = da == 1 ? db : da;
    }
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, rank, dims)))
        return st;
    rt_onnx_step *s;
    if ((st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_BINARY;
    s->sub = op;
    for (int i = 0; i < 2; i++) {
        const rt_onnx_val *v = i ? b : a;
        if (!(s->map[i] = malloc((out->row ? out->row : 1) * sizeof(uint32_t))))
            return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
        /* strides of v's dims aligned to the output's last rank-1 dims (the row) */
        size_t stride[RT_ONNX_MAX_RANK] = {0};
        size_t acc = 1;
        for (uint32_t d = rank; d-- > 1;) {
            long vd = (long)d - (long)(rank - v->rank);
            if (vd < 0 || (vd == 0 && v->batch))
                continue;
            stride[d] = v->dims[vd] == 1 ? 0 : acc;
            acc *= (size_t)v->dims[vd];
        }
        for (size_t e = 0; e < out->row; e++) {
            size_t rem = e, off = 0;
            for (uint32_t d = rank; d-- > 1;) {
                size_t idx = rem % (size_t)dims[d];
                rem /= (size_t)dims[d];
                off += idx * stride[d];
            }
            s->map[i][e] = (uint32_t)off;
        }
    }
    return RT_OK;
}

/* Alias ops: the output is the input's bytes with another shape. */
static rt_status plan_alias(reader *r, const Onnx__NodeProto *nd, size_t src, rt_onnx_val *out,
                            uint32_t rank, const int64_t *dims)
{
    rt_onnx *o = r->o;
    const rt_onnx_val *v = &o->vals[src];
    rt_status st;
    char sb[96];
    if (!v->batch) { /* a constant: a constant of the new shape */
        out->batch = false;
        out->rank = rank;
        memcpy(out->dims, dims, rank * sizeof *dims);
        size_t n = 0;
        if (!rt_onnx_plan_elems(dims, 0, rank, RT_ONNX_MAX_ELEMS, &n) || n != v->row)
            return rt_onnx_plan_fail(r, nd, "shape of %zu elements for a constant of %zu", n, v->row);
        out->row = n;
        size_t es = v->cdata ? sizeof(float) : sizeof(int64_t);
        void *p = malloc((n ? n : 1) * es);
        if (!p)
            return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
        memcpy(p, v->cdata ? (void *)v->cdata : (void *)v->idata, n * es);
        if (v->cdata)
            out->cdata = p;
        else
            out->idata = p;
        return RT_OK;
    }
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, rank, dims)))
        return st;
    if (out->row != v->row)
        return rt_onnx_plan_fail(r, nd, "output shape %s holds %zu values per instance, input %zu",
                         rt_onnx_plan_shape_str(out, sb, sizeof sb), out->row, v->row);
    out->alias = v->alias >= 0 ? v->alias : (long)src;
    out->strings = v->strings;
    return RT_OK;
}

/* Axes of Squeeze/Unsqueeze: the attribute (opset < 13) or constant input 1. */
static rt_status axes_of(reader *r, const Onnx__NodeProto *nd, size_t *in, size_t n_in,
                         const int64_t **axes, size_t *n)
{
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, "axes");
    *axes = NULL;
    *n = 0;
    if (a) {
        *axes = a->ints;
        *n = a->n_ints;
        return RT_OK;
    }
    if (n_in > 1) {
        const rt_onnx_val *v = &r->o->vals[in[1]];
        if (!v->idata)
            return rt_onnx_plan_fail(r, nd, "input 1 \"%.80s\": axes must be an integer constant", v->name);
        *axes = v->idata;
        *n = v->row;
    }
    return RT_OK;
}

/* Operator families. Each checks its node's inputs and attributes, sets the
 * output value's shape (or its constant data) and adds the steps that compute
 * it; plan_node then wires the last step to the node's inputs and output. op
 * is the node's operator (one of the names its entry in plans[] lists). */


static rt_status plan_constant(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                               size_t n_in, rt_onnx_val *out)
{
    (void)op;
    (void)in;
    rt_status st;
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 0, 0)))
        return st;
    const Onnx__AttributeProto *a = rt_onnx_plan_attr(nd, "value");
    if (!a || !a->t || nd->n_attribute != 1)
        return rt_onnx_plan_fail(r, nd, "attribute value: only a tensor value is read");
    return read_tensor(r, a->t, "Constant", out);
}

/* Gemm, MatMul */
static rt_status plan_gemm(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                           size_t n_in, rt_onnx_val *out)
{
    bool gemm = op[0] == 'G';
    rt_status st;
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 2, gemm ? 3 : 2)))
        return st;
    return plan_dense(r, nd, gemm, in, n_in, out);
}

/* Add, Sub, Mul, Div */
static rt_status plan_arith(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                            size_t n_in, rt_onnx_val *out)
{
    rt_status st;
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 2, 2)))
        return st;
    return plan_binary(r, nd, op[0] == 'A' ? '+' : op[0] == 'S' ? '-' : op[0] == 'M' ? '*' : '/',
                       in, out);
}

/* Relu, Sigmoid, Tanh, LeakyRelu */
static rt_status plan_activation(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                                 size_t n_in, rt_onnx_val *out)
{
    rt_status st;
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 1, 1)))
        return st;
    const rt_onnx_val *x = &r->o->vals[in[0]];
    bool leaky = op[0] == 'L';
    static const char *const ok_leaky[] = {"alpha", NULL}, *const ok_none[] = {NULL};
    float alpha = 0.01f;
    if ((st = rt_onnx_plan_only_attrs(r, nd, leaky ? ok_leaky : ok_none)) ||
        (leaky && (st = rt_onnx_plan_float(r, nd, "alpha", 0.01f, &alpha))) ||
        (st = rt_onnx_plan_want_batch(r, nd, 0, x)) || (st = rt_onnx_plan_batch_shape(r, nd, out, x->rank, x->dims)))
        return st;
    rt_onnx_step *s;
    if ((st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = leaky ? RT_ONNX_LEAKY : op[0] == 'R' ? RT_ONNX_RELU : op[0] == 'S' ? RT_ONNX_SIGMOID
                                                                          : RT_ONNX_TANH;
    s->alpha = alpha;
    return RT_OK;
}

/* Softmax, LogSoftmax */
static rt_status plan_softmax(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                              size_t n_in, rt_onnx_val *out)
{
    rt_onnx *o = r->o;
    rt_status st;
    char sb[96];
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 1, 1)))
        return st;
    const rt_onnx_val *x = &o->vals[in[0]];
    static const char *const ok[] = {"axis", NULL};
    int64_t axis;
    if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) ||
        (st = rt_onnx_plan_int(r, nd, "axis", o->opset >= 13 ? -1 : 1, &axis)) ||
        (st = rt_onnx_plan_want_batch(r, nd, 0, x)) || (st = rt_onnx_plan_batch_shape(r, nd, out, x->rank, x->dims)))
        return st;
    long ax = norm_axis(axis, x->rank);
    if (ax < 1)
        return rt_onnx_plan_fail(r, nd, "attribute axis: %" PRId64 " for shape %s: the axis must be "
                         "past the batch", axis, rt_onnx_plan_shape_str(x, sb, sizeof sb));
    rt_onnx_step *s;
    if ((st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = op[0] == 'S' ? RT_ONNX_SOFTMAX : RT_ONNX_LOGSOFTMAX;
    size_t before = 1, at = 1, after = 1;
    for (uint32_t d = 1; d < x->rank; d++) {
        if ((long)d < ax)
            before *= (size_t)x->dims[d];
        else if ((long)d == ax)
            at *= (size_t)x->dims[d];
        else
            after *= (size_t)x->dims[d];
    }
    if (o->opset < 13) { /* the input coerced to 2-D at axis: one softmax per row */
        at *= after;
        after = 1;
    }
    s->outer = before;
    s->axis = at;
    s->inner = after;
    return RT_OK;
}

static rt_status plan_concat(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                             size_t n_in, rt_onnx_val *out)
{
    (void)op;
    rt_onnx *o = r->o;
    rt_status st;
    char sb[96];
    int64_t dims[RT_ONNX_MAX_RANK];
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 1, RT_ONNX_MAX_INPUTS)))
        return st;
    const rt_onnx_val *x = &o->vals[in[0]];
    static const char *const ok[] = {"axis", NULL};
    int64_t axis;
    if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = rt_onnx_plan_int(r, nd, "axis", INT64_MIN, &axis)))
        return st;
    if (axis == INT64_MIN)
        return rt_onnx_plan_fail(r, nd, "attribute axis: missing");
    long ax = norm_axis(axis, x->rank);
    if (ax < 1)
        return rt_onnx_plan_fail(r, nd, "attribute axis: %" PRId64 ": joining along the batch is "
                         "not run", axis);
    memcpy(dims, x->dims, sizeof dims);
    dims[ax] = 0;
    for (size_t i = 0; i < n_in; i++) {
        const rt_onnx_val *v = &o->vals[in[i]];
        if ((st = rt_onnx_plan_want_batch(r, nd, i, v)))
            return st;
        if (v->rank != x->rank)
            return rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": rank %u, input 0 has %u", i,
                             v->name, v->rank, x->rank);
        for (uint32_t d = 1; d < v->rank; d++)
            if ((long)d != ax && v->dims[d] != x->dims[d])
                return rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": shape %s differs beside the "
                                 "axis", i, v->name, rt_onnx_plan_shape_str(v, sb, sizeof sb));
        dims[ax] += v->dims[ax];
    }
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, x->rank, dims)))
        return st;
    rt_onnx_step *s;
    if ((st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_CONCAT;
    size_t before = 1;
    for (long d = 1; d < ax; d++)
        before *= (size_t)x->dims[d];
    s->outer = before; /* each input copies row / before values per outer index */
    return RT_OK;
}

/* BatchNormalization: one scale and shift per channel */
static rt_status plan_batchnorm(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                                size_t n_in, rt_onnx_val *out)
{
    (void)op;
    rt_onnx *o = r->o;
    rt_status st;
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 5, 5)))
        return st;
    const rt_onnx_val *x = &o->vals[in[0]];
    static const char *const ok[] = {"epsilon", "momentum", "spatial", "training_mode", NULL};
    int64_t spatial, training;
    float eps, mom;
    if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = rt_onnx_plan_float(r, nd, "epsilon", 1e-5f, &eps)) ||
        (st = rt_onnx_plan_float(r, nd, "momentum", 0.9f, &mom)) ||
        (st = rt_onnx_plan_int(r, nd, "spatial", 1, &spatial)) ||
        (st = rt_onnx_plan_int(r, nd, "training_mode", 0, &training)))
        return st;
    if (training || nd->n_output > 1)
        return rt_onnx_plan_fail(r, nd, "training mode (training_mode, or the running statistics "
                         "as outputs) is not run: export in eval mode");
    if (spatial != 1)
        return rt_onnx_plan_fail(r, nd, "attribute spatial: only 1 is run");
    if ((st = rt_onnx_plan_want_batch(r, nd, 0, x)))
        return st;
    if (x->rank < 2)
        return rt_onnx_plan_fail(r, nd, "input 0 \"%.80s\": no channel dimension", x->name);
    size_t c = (size_t)x->dims[1];
    for (size_t i = 1; i < 5; i++) {
        const rt_onnx_val *p = &o->vals[in[i]];
        if ((st = rt_onnx_plan_want_const(r, nd, i, p)))
            return st;
        if (p->row != c)
            return rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": %zu values for %zu channels", i,
                             p->name, p->row, c);
    }
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, x->rank, x->dims)))
        return st;
    rt_onnx_step *s;
    if ((st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_AFFINE;
    s->outer = c;
    s->inner = x->row / (c ? c : 1);
    if (!(s->w = malloc((c ? c : 1) * sizeof(float))) || !(s->b = malloc((c ? c : 1) * sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    const float *g = o->vals[in[1]].cdata, *bb = o->vals[in[2]].cdata,
                *mean = o->vals[in[3]].cdata, *var = o->vals[in[4]].cdata;
    for (size_t j = 0; j < c; j++) {
        if ((double)var[j] + (double)eps <= 0)
            return rt_onnx_plan_fail(r, nd, "input 4: variance %zu plus epsilon is not positive", j);
        double sc = (double)g[j] / sqrt((double)var[j] + (double)eps);
        s->w[j] = (float)sc;
        s->b[j] = (float)((double)bb[j] - (double)mean[j] * sc);
    }
    return RT_OK;
}

/* Identity, Dropout (inference: the input), Cast (to float; of an integer
 * constant to float or to an integer type) */
static rt_status plan_passthrough(reader *r, const Onnx__NodeProto *nd, const char *op,
                                  size_t *in, size_t n_in, rt_onnx_val *out)
{
    rt_onnx *o = r->o;
    rt_status st;
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 1, op[0] == 'D' ? 3 : 1)))
        return st;
    const rt_onnx_val *x = &o->vals[in[0]];
    if (op[0] == 'D') {
        static const char *const ok[] = {"ratio", "seed", "is_test", NULL};
        int64_t is_test;
        if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = rt_onnx_plan_int(r, nd, "is_test", 1, &is_test)))
            return st;
        if (n_in > 2) {
            const rt_onnx_val *t = &o->vals[in[2]];
            if (!t->idata || t->row != 1 || t->idata[0] != 0)
                return rt_onnx_plan_fail(r, nd, "input 2 \"%.80s\": training_mode must be a "
                                 "constant false", t->name);
        }
        if (nd->n_output > 1 && nd->output[1] && nd->output[1][0])
            return rt_onnx_plan_fail(r, nd, "output 1 (the mask) is not computed");
    } else if (op[0] == 'C') {
        static const char *const ok[] = {"to", "saturate", NULL};
        int64_t to;
        if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = rt_onnx_plan_int(r, nd, "to", 0, &to)))
            return st;
        /* ONNX defines string -> number for texts that are numbers only (any
         * other is undefined) and number -> string as a plain decimal of no
         * stated digit count, so neither has one right answer predictd could
         * match; a string value here is its category's index, not its text.
         * Refused by name. */
        if (x->strings && to != ONNX__TENSOR_PROTO__DATA_TYPE__STRING)
            return rt_onnx_plan_fail(r, nd, "attribute to: %" PRId64 ": a cast from strings is "
                                     "not run (predictd reads a string input as a category, not "
                                     "a number's text: give the number as a float input; only "
                                     "string to string, number to float are run)", to);
        if (!x->strings && to == ONNX__TENSOR_PROTO__DATA_TYPE__STRING)
            return rt_onnx_plan_fail(r, nd, "attribute to: %" PRId64 ": a cast to strings is "
                                     "not run (ONNX does not say how many digits a number's "
                                     "text has, so the strings an encoder would match are not "
                                     "defined; only string to string, number to float are run)",
                                     to);
        if (x->strings)
            return plan_alias(r, nd, in[0], out, x->rank, x->dims);
        if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && !(!x->batch && x->idata &&
                                                            (to == 6 || to == 7)))
            return rt_onnx_plan_fail(r, nd, "attribute to: %" PRId64 ": only a cast to float (1) "
                             "is run", to);
        if (!x->batch && x->idata && to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
            out->rank = x->rank;
            memcpy(out->dims, x->dims, sizeof out->dims);
            out->row = x->row;
            if (!(out->cdata = malloc((x->row ? x->row : 1) * sizeof(float))))
                return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
            for (size_t k = 0; k < x->row; k++)
                out->cdata[k] = (float)x->idata[k];
            return RT_OK;
        }
    } else {
        static const char *const ok[] = {NULL};
        if ((st = rt_onnx_plan_only_attrs(r, nd, ok)))
            return st;
    }
    return plan_alias(r, nd, in[0], out, x->rank, x->dims);
}

static rt_status plan_flatten(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                              size_t n_in, rt_onnx_val *out)
{
    (void)op;
    rt_status st;
    int64_t dims[RT_ONNX_MAX_RANK];
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 1, 1)))
        return st;
    const rt_onnx_val *x = &r->o->vals[in[0]];
    static const char *const ok[] = {"axis", NULL};
    int64_t axis;
    if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = rt_onnx_plan_int(r, nd, "axis", 1, &axis)) ||
        (st = rt_onnx_plan_want_batch(r, nd, 0, x)))
        return st;
    if (norm_axis(axis, x->rank) != 1)
        return rt_onnx_plan_fail(r, nd, "attribute axis: %" PRId64 ": only 1 keeps the batch "
                         "dimension", axis);
    dims[0] = 0;
    dims[1] = (int64_t)x->row;
    return plan_alias(r, nd, in[0], out, 2, dims);
}

static rt_status plan_reshape(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                              size_t n_in, rt_onnx_val *out)
{
    (void)op;
    rt_onnx *o = r->o;
    rt_status st;
    int64_t dims[RT_ONNX_MAX_RANK];
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 2, 2)))
        return st;
    const rt_onnx_val *x = &o->vals[in[0]];
    static const char *const ok[] = {"allowzero", NULL};
    int64_t allowzero;
    if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = rt_onnx_plan_int(r, nd, "allowzero", 0, &allowzero)))
        return st;
    const rt_onnx_val *sv = &o->vals[in[1]];
    if (!sv->idata || sv->rank != 1 || sv->row < 1 || sv->row > RT_ONNX_MAX_RANK)
        return rt_onnx_plan_fail(r, nd, "input 1 \"%.80s\": the shape must be an integer constant "
                         "of 1 to %u values", sv->name, RT_ONNX_MAX_RANK);
    uint32_t rank = (uint32_t)sv->row;
    long infer = -1;
    size_t known = 1;
    for (uint32_t d = 0; d < rank; d++) {
        int64_t s = sv->idata[d];
        if (s == 0 && !allowzero) {
            if (d >= x->rank)
                return rt_onnx_plan_fail(r, nd, "input 1: 0 at %u copies no input dimension", d);
            s = x->dims[d];
        }
        if (s == -1) {
            if (infer >= 0)
                return rt_onnx_plan_fail(r, nd, "input 1: more than one -1");
            infer = (long)d;
            dims[d] = -1;
            continue;
        }
        if (s < 0 || (s > 0 && known > RT_ONNX_MAX_ELEMS / (size_t)s))
            return rt_onnx_plan_fail(r, nd, "input 1: dimension %u is %" PRId64, d, sv->idata[d]);
        dims[d] = s;
        if (d > 0 || !x->batch)
            known *= (size_t)s;
    }
    if (x->batch) {
        /* the batch must stay the leading dimension: 0 (copied) or -1 with the rest fixed */
        if (!(sv->idata[0] == 0 && !allowzero) && infer != 0)
            return rt_onnx_plan_fail(r, nd, "input 1: the new shape must keep the batch first "
                             "(0 or -1 as its first dimension)");
        if (infer == 0 && known != x->row)
            return rt_onnx_plan_fail(r, nd, "input 1: the new shape moves the batch dimension "
                             "(its dimensions after the first hold %zu values, an "
                             "instance %zu)", known, x->row);
        if (infer > 0) {
            if (known == 0 || x->row % known)
                return rt_onnx_plan_fail(r, nd, "input 1: cannot infer dimension %ld from %zu values "
                                 "per instance", infer, x->row);
            dims[infer] = (int64_t)(x->row / known);
        }
        dims[0] = 0;
    } else if (infer >= 0) {
        if (known == 0 || x->row % known)
            return rt_onnx_plan_fail(r, nd, "input 1: cannot infer dimension %ld", infer);
        dims[infer] = (int64_t)(x->row / known);
    }
    return plan_alias(r, nd, in[0], out, rank, dims);
}

/* Squeeze, Unsqueeze */
static rt_status plan_squeeze(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                              size_t n_in, rt_onnx_val *out)
{
    rt_status st;
    int64_t dims[RT_ONNX_MAX_RANK];
    bool un = op[0] == 'U';
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 1, 2)))
        return st;
    const rt_onnx_val *x = &r->o->vals[in[0]];
    static const char *const ok[] = {"axes", NULL};
    const int64_t *axes;
    size_t na;
    if ((st = rt_onnx_plan_only_attrs(r, nd, ok)) || (st = axes_of(r, nd, in, n_in, &axes, &na)))
        return st;
    bool mark[RT_ONNX_MAX_RANK] = {false};
    uint32_t rank = un ? x->rank + (uint32_t)na : x->rank;
    if (un && (na == 0 || rank > RT_ONNX_MAX_RANK))
        return rt_onnx_plan_fail(r, nd, "axes: %zu axes for rank %u", na, x->rank);
    for (size_t i = 0; i < na; i++) {
        long a = norm_axis(axes[i], rank);
        if (a < 0 || mark[a])
            return rt_onnx_plan_fail(r, nd, "axes: %" PRId64 " is out of range or repeated", axes[i]);
        if (a == 0 && x->batch)
            return rt_onnx_plan_fail(r, nd, "axes: 0 would move the batch dimension");
        mark[a] = true;
    }
    uint32_t w = 0;
    if (un) {
        for (uint32_t d = 0, s = 0; d < rank; d++)
            dims[w++] = mark[d] ? 1 : x->dims[s++];
    } else {
        for (uint32_t d = 0; d < x->rank; d++) {
            bool drop = na ? mark[d] : (x->dims[d] == 1 && !(d == 0 && x->batch));
            if (na && mark[d] && x->dims[d] != 1)
                return rt_onnx_plan_fail(r, nd, "axes: dimension %u is %" PRId64 ", not 1", d,
                                 x->dims[d]);
            if (!drop)
                dims[w++] = x->dims[d];
        }
    }
    if (w == 0) { /* a scalar constant */
        dims[0] = 1;
        w = x->batch ? 1 : 0;
    }
    return plan_alias(r, nd, in[0], out, w, dims);
}

/* The operators read, by name (the default domain's, whatever the node's
 * domain names; ai.onnx.ml's are rt_onnx_ml.c's). */
static const struct {
    const char *op;
    plan_fn *plan;
    bool ml;
} plans[] = {
    {"Constant", plan_constant, false},
    {"Gemm", plan_gemm, false},
    {"MatMul", plan_gemm, false},
    {"Add", plan_arith, false},
    {"Sub", plan_arith, false},
    {"Mul", plan_arith, false},
    {"Div", plan_arith, false},
    {"Relu", plan_activation, false},
    {"Sigmoid", plan_activation, false},
    {"Tanh", plan_activation, false},
    {"LeakyRelu", plan_activation, false},
    {"Softmax", plan_softmax, false},
    {"LogSoftmax", plan_softmax, false},
    {"Concat", plan_concat, false},
    {"BatchNormalization", plan_batchnorm, false},
    {"Identity", plan_passthrough, false},
    {"Dropout", plan_passthrough, false},
    {"Cast", plan_passthrough, false},
    {"Flatten", plan_flatten, false},
    {"Reshape", plan_reshape, false},
    {"Squeeze", plan_squeeze, false},
    {"Unsqueeze", plan_squeeze, false},
};

static rt_status plan_node(reader *r, const Onnx__NodeProto *nd, size_t *in, size_t n_in,
                           size_t outi)
{
    rt_onnx *o = r->o;
    const char *op = nd->op_type ? nd->op_type : "";
    size_t first_step = o->n_steps;
    bool ml = nd->domain && strcmp(nd->domain, "ai.onnx.ml") == 0;
    if (ml && o->ml_opset < 1)
        return rt_onnx_plan_fail(r, nd, "domain ai.onnx.ml: the model imports no ai.onnx.ml operator set "
                         "of version 1 to 3 (opset_import)");
    if (ml && !rt_onnx_ml_known(op))
        return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: node \"%.80s\": operator "
                          "ai.onnx.ml.%.60s is not supported (docs/models-from-elsewhere.md "
                          "lists those that are)", r->file, rt_onnx_plan_nname(nd), op);
    plan_fn *plan = ml ? rt_onnx_ml_plan : NULL;
    for (size_t i = 0; i < sizeof plans / sizeof plans[0] && !plan; i++)
        if (strcmp(op, plans[i].op) == 0 && (!plans[i].ml || ml))
            plan = plans[i].plan;
    if (!plan)
        return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: node \"%.80s\": operator %.60s%s%.60s "
                          "is not supported (docs/models-from-elsewhere.md lists those that are)",
                          r->file, rt_onnx_plan_nname(nd), nd->domain && nd->domain[0] ? nd->domain : "",
                          nd->domain && nd->domain[0] ? "." : "", op);
    /* strings are read by the encoders and passed on unchanged, nothing else */
    bool reads_str = ml && (strcmp(op, "OneHotEncoder") == 0 || strcmp(op, "LabelEncoder") == 0);
    bool passes_str = !ml && (strcmp(op, "Identity") == 0 || strcmp(op, "Cast") == 0 ||
                              strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0);
    for (size_t i = 0; i < n_in; i++)
        if (o->vals[in[i]].strings && !((reads_str || passes_str) && i == 0))
            return rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": strings, where this operator "
                                     "reads numbers", i, o->vals[in[i]].name);
    rt_status st = plan(r, nd, op, in, n_in, &o->vals[outi]);
    if (st)
        return st;
    if (o->n_steps > first_step) {
        rt_onnx_step *s = &o->steps[o->n_steps - 1];
        s->node = nd->name;
        s->n_in = n_in;
        memcpy(s->in, in, n_in * sizeof *in);
        s->out = r->n_out == 2 ? r->out[1] : outi; /* a classifier's: its scores */
        o->vals[s->out].producer = (long)(o->n_steps - 1);
        if (r->n_out == 2)
            o->vals[outi].producer = (long)(o->n_steps - 1);
    }
    return RT_OK;
}

/* ------------------------------------------------------- the graph */

static rt_status read_inputs(reader *r, const Onnx__GraphProto *g)
{
    rt_onnx *o = r->o;
    const char *file = r->file;
    char sb[96];
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !vi->name[0])
            return rt_err_set(r->err, RT_ERR_FORMAT, "%s: graph.input[%zu]: no name", file, i);
        if (find_val(r, vi->name) >= 0) /* an initializer listed as an input (IR < 4) */
            continue;
        const Onnx__TypeProto *tp = vi->type;
        const Onnx__TypeProto__Tensor *tt =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
        if (!tt || (tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
                    tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__STRING))
            return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: graph.input \"%.80s\": type: only "
                              "float and string tensors are read", file, vi->name);
        bool strings = tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
        const Onnx__TensorShapeProto *sh = tt->shape;
        if (!sh || sh->n_dim < 1 || sh->n_dim > RT_ONNX_MAX_RANK)
            return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: graph.input \"%.80s\": shape: a "
                              "batch dimension and up to %u others are needed", file, vi->name,
                              RT_ONNX_MAX_RANK - 1);
        size_t idx;
        rt_status st = new_val(r, vi->name, &idx);
        if (st)
            return st;
        rt_onnx_val *v = &o->vals[idx];
        v->batch = true;
        v->strings = strings;
        v->rank = (uint32_t)sh->n_dim;
        for (size_t d = 1; d < sh->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
            if (dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
                dm->dim_value < 1)
                return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: graph.input \"%.80s\": "
                                  "shape.dim[%zu]: must be a fixed size (only the first, the "
                                  "batch, may vary)", file, vi->name, d);
            v->dims[d] = dm->dim_value;
        }
        if (!rt_onnx_plan_elems(v->dims, 1, v->rank, RT_ONNX_MAX_ROW, &v->row))
            return rt_err_set(r->err, RT_ERR_LIMIT, "%s: graph.input \"%.80s\": shape %s: more "
                              "than %zu values per instance", file, vi->name,
                              rt_onnx_plan_shape_str(v, sb, sizeof sb), (size_t)RT_ONNX_MAX_ROW);
        size_t *p = realloc(o->inputs, (o->n_inputs + 1) * sizeof *p);
        if (!p)
            return NOMEM(r->err);
        o->inputs = p;
        o->inputs[o->n_inputs++] = idx;
    }
    if (o->n_inputs == 0)
        return rt_err_set(r->err, RT_ERR_FORMAT, "%s: graph.input: no input besides the "
                          "initializers", file);
    return RT_OK;
}

/* One node's checks before its place in the order is known: outputs, domain. */
static rt_status check_node(reader *r, const Onnx__NodeProto *nd)
{
    if (nd->n_input > RT_ONNX_MAX_INPUTS)
        return rt_onnx_plan_fail(r, nd, "%zu inputs (at most %u)", nd->n_input, RT_ONNX_MAX_INPUTS);
    for (size_t i = 0; i < nd->n_input; i++)
        if ((!nd->input[i] || !nd->input[i][0]) && i + 1 < nd->n_input)
            return rt_onnx_plan_fail(r, nd, "input %zu: empty (an optional input left out) is not "
                             "supported", i);
    if (nd->n_output < 1 || !nd->output[0] || !nd->output[0][0])
        return rt_onnx_plan_fail(r, nd, "output 0: missing");
    const char *op = nd->op_type ? nd->op_type : "";
    if (nd->n_output > 1 && strcmp(op, "Dropout") && strcmp(op, "BatchNormalization") &&
        !(rt_onnx_ml_two_outputs(op) && nd->n_output == 2 && nd->output[1] && nd->output[1][0]))
        return rt_onnx_plan_fail(r, nd, "%zu outputs (1 expected)", nd->n_output);
    const char *dom = nd->domain ? nd->domain : "";
    if (dom[0] && strcmp(dom, "ai.onnx") != 0 && strcmp(dom, "ai.onnx.ml") != 0)
        return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: node \"%.80s\": operator "
                          "%.60s.%.60s is not supported (docs/models-from-elsewhere.md lists "
                          "those that are)", r->file, rt_onnx_plan_nname(nd), dom, op);
    return RT_OK;
}

/* The nodes in an order where every input is computed first (Kahn's
 * algorithm: a node is ready once every node making one of its inputs is
 * placed; ready nodes in file order), then planned in that order. Linear in
 * the nodes and edges. */
static rt_status plan_graph(reader *r, const Onnx__GraphProto *g)
{
    const char *file = r->file;
    size_t nn = g->n_node, ns = 1;
    while (ns < 4 * (nn + 1))
        ns *= 2;
    /* output name -> node + 1 (and which of its outputs: prod_o) */
    unsigned char *prod_o = calloc(ns, 1);
    size_t *prod = calloc(ns, sizeof *prod), *deg = calloc(nn + 1, sizeof *deg),
           *start = calloc(nn + 2, sizeof *start), *queue = calloc(nn + 1, sizeof *queue),
           *edges = NULL;
    rt_status st = RT_OK;
    size_t n_edges = 0;
    if (!prod || !prod_o || !deg || !start || !queue) {
        st = NOMEM(r->err);
        goto out;
    }
#define PROD_FIND(name, h)                                                                   \
    for (h = (size_t)name_hash(name) & (ns - 1);                                            \
         prod[h] && strcmp(g->node[prod[h] - 1]->output[prod_o[h]], name) != 0;             \
         h = (h + 1) & (ns - 1))
    for (size_t k = 0; k < nn && !st; k++) {
        const Onnx__NodeProto *nd = g->node[k];
        if ((st = check_node(r, nd)))
            break;
        size_t n_out = rt_onnx_ml_two_outputs(nd->op_type ? nd->op_type : "") ? 2 : 1;
        for (size_t oi = 0; oi < n_out && oi < nd->n_output && !st; oi++) {
            const char *name = nd->output[oi];
            size_t h;
            PROD_FIND(name, h);
            if (prod[h] || find_val(r, name) >= 0) {
                st = rt_onnx_plan_fail(r, nd, "output %zu \"%.80s\": already defined (each "
                                       "value is assigned once)", oi, name);
                break;
            }
            prod[h] = k + 1;
            prod_o[h] = (unsigned char)oi;
        }
    }
    /* edges: producer -> consumer, counted then laid out by producer (CSR) */
    for (int pass = 0; pass < 2 && !st; pass++) {
        for (size_t k = 0; k < nn && !st; k++) {
            const Onnx__NodeProto *nd = g->node[k];
            for (size_t i = 0; i < nd->n_input; i++) {
                const char *name = nd->input[i];
                if (!name || !name[0] || find_val(r, name) >= 0)
                    continue;
                size_t h;
                PROD_FIND(name, h);
                if (!prod[h]) {
                    st = rt_onnx_plan_fail(r, nd, "input %zu \"%.80s\": neither a graph input, an "
                                   "initializer nor any node's output", i, name);
                    break;
                }
                size_t p = prod[h] - 1;
                if (pass == 0) {
                    start[p + 1]++;
                    deg[k]++;
                    n_edges++;
                } else {
                    edges[queue[p]++] = k; /* queue: the fill position, for now */
                }
            }
        }
        if (pass == 0 && !st) {
            for (size_t k = 0; k < nn; k++)
                start[k + 1] += start[k];
            for (size_t k = 0; k < nn; k++)
                queue[k] = start[k];
            if (!(edges = malloc((n_edges ? n_edges : 1) * sizeof *edges)))
                st = NOMEM(r->err);
        }
    }
#undef PROD_FIND
    size_t head = 0, tail = 0;
    for (size_t k = 0; k < nn && !st; k++)
        if (deg[k] == 0)
            queue[tail++] = k;
    while (head < tail && !st) {
        size_t k = queue[head++];
        const Onnx__NodeProto *nd = g->node[k];
        size_t in[RT_ONNX_MAX_INPUTS], n_in = 0, outi = 0;
        for (size_t i = 0; i < nd->n_input; i++) {
            if (!nd->input[i] || !nd->input[i][0])
                continue;
            long v = find_val(r, nd->input[i]);
            if (v < 0) { /* cannot happen: its producer was placed */
                st = rt_onnx_plan_fail(r, nd, "input %zu: not computed", i);
                break;
            }
            in[n_in++] = (size_t)v;
        }
        r->n_out = 1;
        if (!st && !(st = new_val(r, nd->output[0], &outi))) {
            r->out[0] = outi;
            if (rt_onnx_ml_two_outputs(nd->op_type ? nd->op_type : "") && nd->n_output == 2 &&
                !(st = new_val(r, nd->output[1], &r->out[1])))
                r->n_out = 2;
        }
        if (!st)
            st = plan_node(r, nd, in, n_in, outi);
        for (size_t e = start[k]; e < start[k + 1] && !st; e++)
            if (--deg[edges[e]] == 0)
                queue[tail++] = edges[e];
    }
    if (!st && tail < nn) {
        for (size_t k = 0; k < nn; k++)
            if (deg[k] > 0) {
                st = rt_onnx_plan_fail(r, g->node[k], "on a cycle: its inputs depend on its own output");
                break;
            }
    }
out:
    free(prod);
    free(prod_o);
    free(deg);
    free(start);
    free(queue);
    free(edges);
    return st;
}

/* An ai.onnx.ml classifier whose label, scores or ZipMap are the graph's
 * outputs: o->ml_probs (the outputs must all be that classifier's). */
static rt_status find_ml_classifier(reader *r, const Onnx__GraphProto *g)
{
    rt_onnx *o = r->o;
    long cls = -1;
    size_t others = 0;
    o->ml_scores = o->ml_label = SIZE_MAX;
    for (size_t q = 0; q < o->n_outputs; q++) {
        const rt_onnx_val *v = &o->vals[o->outputs[q]];
        size_t base = v->alias >= 0 ? (size_t)v->alias : o->outputs[q];
        long p = o->vals[base].producer;
        const rt_onnx_step *s = p >= 0 ? &o->steps[p] : NULL;
        if (s && (s->op == RT_ONNX_TREES || s->op == RT_ONNX_LINCLS) && s->out2 != SIZE_MAX &&
            (cls < 0 || cls == p))
            cls = p;
        else
            others++;
    }
    if (cls < 0)
        return RT_OK;
    if (others)
        return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: graph.output: a classifier's "
                          "outputs (label, scores, ZipMap) beside other outputs are not served "
                          "(%zu of %zu outputs are not the classifier's)", r->file, others,
                          o->n_outputs);
    (void)g;
    const rt_onnx_step *s = &o->steps[cls];
    o->ml_probs = true;
    o->ml_scores = s->out;
    o->ml_label = s->out2;
    o->n_classes = o->vals[s->out].row;
    return RT_OK;
}

static rt_status read_outputs(reader *r, const Onnx__GraphProto *g)
{
    rt_status st;
    rt_onnx *o = r->o;
    const char *file = r->file;
    if (g->n_output < 1)
        return rt_err_set(r->err, RT_ERR_FORMAT, "%s: graph.output: none", file);
    if (!(o->outputs = calloc(g->n_output, sizeof *o->outputs)))
        return NOMEM(r->err);
    for (size_t i = 0; i < g->n_output; i++) {
        const char *name = g->output[i]->name ? g->output[i]->name : "";
        long v = find_val(r, name);
        if (v < 0)
            return rt_err_set(r->err, RT_ERR_FORMAT, "%s: graph.output \"%.80s\": no node "
                              "computes it", file, name);
        if (!o->vals[v].batch)
            return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: graph.output \"%.80s\": a "
                              "constant, not computed from the inputs", file, name);
        if (o->vals[v].strings)
            return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: graph.output \"%.80s\": a "
                              "string tensor (only a classifier's label is answered as "
                              "strings)", file, name);
        o->outputs[o->n_outputs++] = (size_t)v;
        if (o->out_width > RT_ONNX_MAX_ROW - o->vals[v].row)
            return rt_err_set(r->err, RT_ERR_LIMIT, "%s: graph.output: more than %zu values per "
                              "instance", file, (size_t)RT_ONNX_MAX_ROW);
        o->out_width += o->vals[v].row;
    }
    if (o->out_width == 0)
        return rt_err_set(r->err, RT_ERR_FORMAT, "%s: graph.output: no values", file);
    const rt_onnx_val *ov = &o->vals[o->outputs[0]];
    if (o->n_outputs == 1 && ov->rank == 2 && ov->alias < 0 && ov->producer >= 0 &&
        ov->row >= 2) {
        const rt_onnx_step *s = &o->steps[ov->producer];
        if (s->op == RT_ONNX_SOFTMAX && s->outer == 1 && s->inner == 1) {
            o->n_classes = ov->row;
            o->classifier_logits = s->in[0];
        }
    }
    if ((st = find_ml_classifier(r, g)))
        return st;
    for (size_t i = 0; i < o->n_inputs; i++) { /* a string input: one text per feature */
        const rt_onnx_val *v = &o->vals[o->inputs[i]];
        if (v->strings && (v->rank != 2 || v->n_names == 0))
            return rt_err_set(r->err, RT_ERR_UNSUPPORTED, "%s: graph.input \"%.80s\": a string "
                              "tensor is read as [N, C] by a OneHotEncoder (cats_strings) or a "
                              "LabelEncoder (keys_strings)%s", file, v->name,
                              v->rank != 2 ? "" : ", and none reads this one");
    }
    size_t act = 0;
    for (size_t v = 0; v < o->n_vals; v++) {
        if (!o->vals[v].batch || o->vals[v].alias >= 0)
            continue;
        act += o->vals[v].row;
        if (act > RT_ONNX_MAX_ACTIVATIONS)
            return rt_err_set(r->err, RT_ERR_LIMIT, "%s: graph: the computed values hold more "
                              "than %zu numbers per instance", file,
                              (size_t)RT_ONNX_MAX_ACTIVATIONS);
    }
    return RT_OK;
}

rt_status rt_onnx_read(const char *file, const void *data, size_t len, rt_onnx **out, rt_err *err)
{
    *out = NULL;
    if (len > RT_ONNX_MAX_BYTES)
        return rt_err_set(err, RT_ERR_LIMIT, "%s: more than %zu bytes", file,
                          (size_t)RT_ONNX_MAX_BYTES);
    rt_onnx *o = calloc(1, sizeof *o);
    if (!o)
        return NOMEM(err);
    reader r = {.file = file, .o = o, .err = err};
    rt_status st = RT_OK;
    o->proto = onnx__model_proto__unpack(NULL, len, data);
    const Onnx__ModelProto *mp = o->proto;
    if (!mp) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: not an ONNX model (the protobuf ModelProto "
                        "does not parse: truncated or corrupt)", file);
        goto out;
    }
    o->opset = -1;
    o->ml_opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const char *d = mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "";
        int64_t ver = mp->opset_import[i]->version;
        if (!d[0] || strcmp(d, "ai.onnx") == 0)
            o->opset = ver;
        else if (strcmp(d, "ai.onnx.ml") == 0 && ver >= 1 && ver <= 3)
            o->ml_opset = ver;
    }
    if (o->opset < 9 || o->opset > 17) {
        st = rt_err_set(err, RT_ERR_UNSUPPORTED, "%s: opset_import: the default operator set's "
                        "version is %" PRId64 " (%s): 9 to 17 are read", file, o->opset,
                        o->opset < 0 ? "none" : "outside the range");
        goto out;
    }
    const Onnx__GraphProto *g = mp->graph;
    if (!g) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: graph: missing", file);
        goto out;
    }
    if (g->n_node > RT_ONNX_MAX_NODES) {
        st = rt_err_set(err, RT_ERR_LIMIT, "%s: graph.node: %zu nodes (at most %u)", file,
                        g->n_node, RT_ONNX_MAX_NODES);
        goto out;
    }
    if (g->n_sparse_initializer) {
        st = rt_err_set(err, RT_ERR_UNSUPPORTED, "%s: graph.sparse_initializer: not read", file);
        goto out;
    }
    for (size_t i = 0; i < g->n_initializer && !st; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        size_t idx;
        if (!t->name || !t->name[0]) {
            st = rt_err_set(err, RT_ERR_FORMAT, "%s: graph.initializer[%zu]: no name", file, i);
            break;
        }
        if (find_val(&r, t->name) >= 0) {
            st = rt_err_set(err, RT_ERR_FORMAT, "%s: graph.initializer \"%.80s\": defined twice",
                            file, t->name);
            break;
        }
        if (!(st = new_val(&r, t->name, &idx)))
            st = read_tensor(&r, t, "graph.initializer", &o->vals[idx]);
    }
    if (!st)
        st = read_inputs(&r, g);
    if (!st)
        st = plan_graph(&r, g);
    if (!st)
        st = read_outputs(&r, g);
out:
    free(r.slots);
    if (st) {
        rt_onnx_free(o);
        return st;
    }
    *out = o;
    return RT_OK;
}
