/*
 * srv_grpc_tensor.c — TensorFlow's TensorProto on the REST path's terms, for
 * TF Serving's Predict over gRPC (srv_grpc_tfs.c): a request tensor becomes
 * the JSON value REST's columnar "inputs" hold for it, so the REST parser
 * reads it with REST's rules and messages; a value of REST's columnar
 * "outputs" becomes a TensorProto of the signature's dtype. Floats go
 * through the shortest text that reads back to the same float both ways,
 * so a gRPC answer holds the bits REST's answer holds. Also the pool that
 * owns an answer message's parts, and TensorFlow's dtype names.
 */
#include "srv_grpc_tfs.h"
#include "srv_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------- pool */

void *srv_grpc_pool_alloc(srv_grpc_pool *pool, size_t n)
{
    if (pool->arena) { /* a calloc and a free per block cost more than the answer's packing */
        void *x = pool->arena->alloc.alloc(pool->arena, n);
        if (!x)
            pool->failed = true;
        else
            memset(x, 0, n);
        return x;
    }
    if (pool->n == pool->cap) {
        size_t cap = pool->cap ? pool->cap * 2 : 32;
        void **p = realloc(pool->p, cap * sizeof *p);
        if (!p) {
            pool->failed = true;
            return NULL;
        }
        pool->p = p;
        pool->cap = cap;
    }
    void *x = calloc(1, n ? n : 1);
    if (!x) {
        pool->failed = true;
        return NULL;
    }
    pool->p[pool->n++] = x;
    return x;
}

void srv_grpc_pool_free(srv_grpc_pool *pool)
{
    for (size_t i = 0; i < pool->n; i++)
        free(pool->p[i]);
    free(pool->p);
    *pool = (srv_grpc_pool){0};
}

/* ----------------------------------------------------------------- dtypes */

static const char *const DT_NAMES[] = {
    "DT_INVALID", "DT_FLOAT",  "DT_DOUBLE",  "DT_INT32",   "DT_UINT8",     "DT_INT16",
    "DT_INT8",    "DT_STRING", "DT_COMPLEX64", "DT_INT64", "DT_BOOL",      "DT_QINT8",
    "DT_QUINT8",  "DT_QINT32", "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16",   "DT_UINT16",
    "DT_COMPLEX128", "DT_HALF", "DT_RESOURCE", "DT_VARIANT", "DT_UINT32",  "DT_UINT64",
};
#define N_DT (sizeof DT_NAMES / sizeof DT_NAMES[0])

int srv_grpc_dtype_of_name(const char *name)
{
    for (size_t i = 0; name && i < N_DT; i++)
        if (!strcmp(DT_NAMES[i], name))
            return (int)i;
    return -1;
}

const char *srv_grpc_dtype_name(int dtype)
{
    return dtype >= 0 && (size_t)dtype < N_DT ? DT_NAMES[dtype] : "DT_INVALID";
}

/* ------------------------------------------------------- request tensors */

/* Bytes per element in tensor_content, 0: not a numeric dtype served. */
static size_t elem_size(int dt)
{
    switch (dt) {
    case 1: case 3: case 22: return 4;     /* float, int32, uint32 */
    case 2: case 9: case 23: return 8;     /* double, int64, uint64 */
    case 5: case 17: return 2;             /* int16, uint16 */
    case 4: case 6: case 10: return 1;     /* uint8, int8, bool */
    default: return 0;
    }
}

/* Valid UTF-8 (no overlong forms, no surrogates)? */
static bool utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                 : (c & 0xf8) == 0xf0 ? 3 : 9;
        if (k == 9 || i + k >= n)
            return false;
        uint32_t cp = k == 0 ? c : k == 1 ? c & 0x1f : k == 2 ? c & 0x0f : c & 0x07;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

static void put_b64(rt_buf *b, const uint8_t *s, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    rt_buf_puts(b, "{\"b64\": \"");
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        char q[4] = {A[v >> 18 & 63], A[v >> 12 & 63], i + 1 < n ? A[v >> 6 & 63] : '=',
                     i + 2 < n ? A[v & 63] : '='};
        rt_buf_append(b, q, 4);
    }
    rt_buf_puts(b, "\"}");
}

/* Where a tensor's values are and how many. */
typedef struct vals {
    int dt;
    const Tensorflow__TensorProto *t;
    bool content; /* tensor_content */
    size_t n;     /* values given */
} vals;

/* Appends value i (i < v->n) of v. */
static void put_value(rt_buf *b, const vals *v, size_t i)
{
    const Tensorflow__TensorProto *t = v->t;
    if (v->content) {
        const uint8_t *p = t->tensor_content.data + i * elem_size(v->dt);
        union {
            float f;
            double d;
            int32_t i32;
            int64_t i64;
            uint32_t u32;
            uint64_t u64;
            int16_t i16;
            uint16_t u16;
        } u;
        memcpy(&u, p, elem_size(v->dt)); /* the wire is little-endian, as x86 and arm64 */
        switch (v->dt) {
        case 1: rt_buf_json_float(b, u.f); break;
        case 2: rt_buf_json_double(b, u.d); break;
        case 3: rt_buf_put_int(b, u.i32); break;
        case 9: rt_buf_put_int(b, u.i64); break;
        case 22: rt_buf_put_int(b, u.u32); break;
        case 23: rt_buf_printf(b, "%llu", (unsigned long long)u.u64); break;
        case 5: rt_buf_put_int(b, u.i16); break;
        case 17: rt_buf_put_int(b, u.u16); break;
        case 4: rt_buf_put_int(b, *p); break;
        case 6: rt_buf_put_int(b, (int8_t)*p); break;
        case 10: rt_buf_puts(b, *p ? "true" : "false"); break;
        }
        return;
    }
    switch (v->dt) {
    case 1: rt_buf_json_float(b, t->float_val[i]); break;
    case 2: rt_buf_json_double(b, t->double_val[i]); break;
    case 3: case 4: case 5: case 6: case 17: rt_buf_put_int(b, t->int_val[i]); break;
    case 9: rt_buf_put_int(b, t->int64_val[i]); break;
    case 22: rt_buf_put_int(b, t->uint32_val[i]); break;
    case 23: rt_buf_printf(b, "%llu", (unsigned long long)t->uint64_val[i]); break;
    case 10: rt_buf_puts(b, t->bool_val[i] ? "true" : "false"); break;
    case 7: {
        const ProtobufCBinaryData *s = &t->string_val[i];
        if (utf8_ok(s->data, s->len))
            rt_buf_json_string(b, (const char *)s->data, s->len);
        else
            put_b64(b, s->data, s->len);
        break;
    }
    }
}

/* The values of dimension d onwards, from element *at. */
static void put_dims(rt_buf *b, const vals *v, const int64_t *dims, size_t nd, size_t d,
                     size_t *at)
{
    if (d == nd) {
        size_t i = *at < v->n ? *at : v->n - 1; /* fewer values: the last repeated */
        put_value(b, v, i);
        (*at)++;
        return;
    }
    rt_buf_puts(b, "[");
    for (int64_t k = 0; k < dims[d]; k++) {
        if (k)
            rt_buf_puts(b, ", ");
        put_dims(b, v, dims, nd, d + 1, at);
    }
    rt_buf_puts(b, "]");
}

/* How many values the *_val field of dtype dt holds, or -1 for a dtype
 * predictd does not read. */
static long vals_given(const Tensorflow__TensorProto *t, int dt)
{
    switch (dt) {
    case 1: return (long)t->n_float_val;
    case 2: return (long)t->n_double_val;
    case 3: case 4: case 5: case 6: case 17: return (long)t->n_int_val;
    case 9: return (long)t->n_int64_val;
    case 22: return (long)t->n_uint32_val;
    case 23: return (long)t->n_uint64_val;
    case 10: return (long)t->n_bool_val;
    case 7: return (long)t->n_string_val;
    default: return -1;
    }
}

int srv_grpc_tensor_to_json(const Tensorflow__TensorProto *t, const char *name, rt_buf *b,
                            char *msg)
{
    int dt = (int)t->dtype;
    vals v = {.dt = dt, .t = t};
    long given = vals_given(t, dt);
    if (given < 0) {
        snprintf(msg, SRV_GRPC_MSG, "input '%.100s': dtype %s is not served (predictd reads "
                 "DT_FLOAT, DT_DOUBLE, the integer types, DT_BOOL and DT_STRING)", name,
                 srv_grpc_dtype_name(dt));
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    size_t nd = t->tensor_shape ? t->tensor_shape->n_dim : 0;
    if (nd > SRV_GRPC_MAX_DIMS) {
        snprintf(msg, SRV_GRPC_MSG, "input '%.100s': %zu dimensions (at most %d)", name, nd,
                 SRV_GRPC_MAX_DIMS);
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    int64_t dims[SRV_GRPC_MAX_DIMS];
    size_t count = 1;
    for (size_t d = 0; d < nd; d++) {
        dims[d] = t->tensor_shape->dim[d]->size;
        if (dims[d] < 0) {
            snprintf(msg, SRV_GRPC_MSG, "input '%.100s': dimension %zu has size %lld", name, d,
                     (long long)dims[d]);
            return SRV_GRPC_INVALID_ARGUMENT;
        }
        count = dims[d] && count > SIZE_MAX / (size_t)dims[d] ? SIZE_MAX : count * (size_t)dims[d];
    }
    if (t->tensor_content.len) {
        size_t es = elem_size(dt);
        if (!es || t->tensor_content.len % es || t->tensor_content.len / es != count) {
            snprintf(msg, SRV_GRPC_MSG, "input '%.100s': tensor_content has %zu bytes, but %zu "
                     "elements of %s take %zu", name, t->tensor_content.len, count,
                     srv_grpc_dtype_name(dt), es ? count * es : 0);
            return SRV_GRPC_INVALID_ARGUMENT;
        }
        v.content = true;
        v.n = count;
    } else {
        v.n = (size_t)given;
    }
    if (v.n > count || (count > 0 && v.n == 0)) {
        snprintf(msg, SRV_GRPC_MSG, "input '%.100s': %zu values for shape with %zu elements",
                 name, v.n, count);
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    if (count > v.n && count > SRV_GRPC_MAX_EXPANDED) {
        snprintf(msg, SRV_GRPC_MSG, "input '%.100s': %zu values would fill %zu elements (at "
                 "most %u are filled from fewer values)", name, v.n, count,
                 SRV_GRPC_MAX_EXPANDED);
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    size_t at = 0;
    if (count == 0) {
        rt_buf_puts(b, "[]");
        return SRV_GRPC_OK;
    }
    put_dims(b, &v, dims, nd, 0, &at);
    return rt_buf_failed(b) ? SRV_GRPC_RESOURCE_EXHAUSTED : SRV_GRPC_OK;
}

/* -------------------------------------------------------- answer tensors */

/* The shape of a (rectangular) nested array: dims[0..*nd); *count its
 * elements. False when it is not rectangular. */
static bool shape_of(const srv_grpc_json *v, int64_t *dims, size_t *nd, size_t *count)
{
    *nd = 0;
    *count = 1;
    for (const srv_grpc_json *x = v; x && x->kind == SRV_GRPC_JSON_ARRAY; x = x->child) {
        if (*nd == SRV_GRPC_MAX_DIMS)
            return false;
        dims[(*nd)++] = (int64_t)x->n;
        *count *= x->n;
        if (!x->n)
            break;
    }
    return true;
}

/* Element values in order into t; false when the nesting is not the shape. */
static bool fill(const srv_grpc_json *v, const int64_t *dims, size_t nd, size_t d, int dt,
                 Tensorflow__TensorProto *t, size_t *at)
{
    if (d == nd) {
        if (v->kind == SRV_GRPC_JSON_ARRAY || v->kind == SRV_GRPC_JSON_OBJECT)
            return false;
        size_t i = (*at)++;
        /* a number's double as strtod read it; true 1; anything else 0 */
        double x = v->kind == SRV_GRPC_JSON_NUMBER || v->kind == SRV_GRPC_JSON_BOOL ? v->num : 0;
        switch (dt) {
        case 1: t->float_val[i] = (float)x; break;
        case 2: t->double_val[i] = x; break;
        case 3: t->int_val[i] = (int32_t)x; break;
        case 9: t->int64_val[i] = (int64_t)x; break;
        case 10: t->bool_val[i] = v->kind == SRV_GRPC_JSON_BOOL && v->num != 0; break;
        case 7: {
            const char *s = srv_grpc_json_str(v);
            if (!s)
                return false;
            t->string_val[i] = (ProtobufCBinaryData){strlen(s), (uint8_t *)s};
            break;
        }
        }
        return true;
    }
    if (v->kind != SRV_GRPC_JSON_ARRAY || (int64_t)v->n != dims[d])
        return false;
    for (const srv_grpc_json *x = v->child; x; x = x->next)
        if (!fill(x, dims, nd, d + 1, dt, t, at))
            return false;
    return true;
}

int srv_grpc_json_to_tensor(const srv_grpc_json *v, int dtype, const char *name,
                            srv_grpc_pool *pool, Tensorflow__TensorProto *t, char *msg)
{
    tensorflow__tensor_proto__init(t);
    int64_t dims[SRV_GRPC_MAX_DIMS];
    size_t nd, count;
    if (dtype != 1 && dtype != 2 && dtype != 3 && dtype != 9 && dtype != 10 && dtype != 7)
        dtype = v->kind == SRV_GRPC_JSON_STRING ||
                        (v->kind == SRV_GRPC_JSON_ARRAY && v->child &&
                         v->child->kind == SRV_GRPC_JSON_STRING)
                    ? 7
                    : 1;
    if (!shape_of(v, dims, &nd, &count))
        goto bad;
    t->dtype = SRV_GRPC_DT(dtype);
    Tensorflow__TensorShapeProto *sh = srv_grpc_pool_alloc(pool, sizeof *sh);
    Tensorflow__TensorShapeProto__Dim **dp = srv_grpc_pool_alloc(pool, (nd + 1) * sizeof *dp);
    void *arr = srv_grpc_pool_alloc(pool, (count + 1) * 8);
    if (!sh || !dp || !arr)
        goto nomem;
    tensorflow__tensor_shape_proto__init(sh);
    for (size_t d = 0; d < nd; d++) {
        dp[d] = srv_grpc_pool_alloc(pool, sizeof *dp[d]);
        if (!dp[d])
            goto nomem;
        tensorflow__tensor_shape_proto__dim__init(dp[d]);
        dp[d]->size = dims[d];
    }
    sh->dim = dp;
    sh->n_dim = nd;
    t->tensor_shape = sh;
    switch (dtype) {
    case 1: t->float_val = arr, t->n_float_val = count; break;
    case 2: t->double_val = arr, t->n_double_val = count; break;
    case 3: t->int_val = arr, t->n_int_val = count; break;
    case 9: t->int64_val = arr, t->n_int64_val = count; break;
    case 10: t->bool_val = arr, t->n_bool_val = count; break;
    case 7:
        t->string_val = srv_grpc_pool_alloc(pool, (count + 1) * sizeof *t->string_val);
        if (!t->string_val)
            goto nomem;
        t->n_string_val = count;
        break;
    }
    size_t at = 0;
    if (count && !fill(v, dims, nd, 0, dtype, t, &at))
        goto bad;
    return SRV_GRPC_OK;
bad:
    snprintf(msg, SRV_GRPC_MSG, "internal: output '%.100s' of the answer is not a %s tensor",
             name, srv_grpc_dtype_name(dtype));
    return SRV_GRPC_INTERNAL;
nomem:
    snprintf(msg, SRV_GRPC_MSG, "out of memory");
    return SRV_GRPC_RESOURCE_EXHAUSTED;
}
