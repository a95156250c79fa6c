/*
 * rt_v2_parse.c — an Open Inference Protocol infer body into the request's
 * rt_batch, the batch a :predict body would fill:
 *
 *   {"id"?, "parameters"?, "inputs": [{"name", "shape", "datatype",
 *    "parameters"?, "data"}], "outputs"?: [{"name", "parameters"?}]}
 *
 * followed, with Triton's binary tensor data extension, by the raw bytes of
 * the inputs that give parameters.binary_data_size (in the order the inputs
 * are listed; Inference-Header-Content-Length says where the JSON ends).
 *
 * Two passes over the JSON with the one request reader (rt_jr.c):
 * the first reads and checks everything but the tensor data, which it only
 * checks as JSON and marks; the second, once the shapes are known, reads
 * each input's data (or its bytes) straight into the batch, instance by
 * instance. The common body (every input's "name", "datatype" and "shape"
 * before its "data", nothing after it) is read in one pass: such an input
 * is checked when its "data" comes and its values go into the batch at
 * once; at the first input that does not fit (or whose data fails), the
 * batch is cleared and the second pass fills every input, so errors and
 * their order are the two-pass ones. Values follow :predict's rules (rt_jfill.c): a number for
 * FP32 (NaN, Infinity, -Infinity allowed; a literal beyond a double
 * refused), a string for BYTES. As Triton does, an input's datatype and
 * shape must be the ones the model's metadata declares (-1 takes any size,
 * the same for every input), every input must be given once, and the
 * element count must fill the shape; errors name the tensor.
 */
#include "rt_serve.h"
#include "rt_v2_internal.h"
#include "rt_serve_limits.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* One input tensor of the request, as the first pass read it. */
typedef struct v2_in {
    long idx;              /* raw input (features) or 0 (serialized) */
    size_t width;          /* the model's values per instance */
    char name[72];         /* for messages (cut) */
    uint64_t shape[RT_V2_MAX_RANK];
    size_t rank;           /* may exceed RT_V2_MAX_RANK (only the first kept) */
    bool has_name, has_dtype, has_shape, has_data, has_bin;
    bool odd_name;         /* cut short, or holds a NUL: matches no input */
    bool bytes;            /* BYTES (else FP32, or integers converted to it) */
    int int_bits;          /* an FP32 input sent as INT64 (64) or INT32 (32); else 0 */
    bool filled;           /* its data is in the batch (read in the first pass) */
    rt_jr_mark data;       /* its "data" value */
    uint64_t bin_size;
    size_t bin_off;        /* from the start of the binary part */
} v2_in;

typedef struct v2p {
    const rt_graph *g;
    rt_ctx *c;
    rt_jr *r;
    rt_err *sem;
    const rt_json_params *params;
    const Predictd__SignatureDef *sig;
    rt_in_mode md;
    size_t nin;
    rt_v2_req *q;
    v2_in *ins;
    size_t n_ins;
    int bin_all;           /* parameters.binary_data_output: -1 not given */
    int sel_bin[RT_V2_MAX_OUTPUTS]; /* per requested output: -1 not given */
    bool eager;            /* inputs are filled in the first pass (see read_input) */
    bool no_plan;          /* an input came as integers: no replay plan is kept */
    rt_v2_plan *rec;       /* recording the body's layout (rt_v2_replay.c), or NULL */
    bool has_header;       /* binary data may follow the JSON */
    size_t hlen;           /* the JSON's length */
    uint64_t bin_total;
} v2p;

rt_v2_req *rt_v2_req_of(rt_ctx *c)
{
    if (!c->v2) {
        c->v2 = calloc(1, sizeof *c->v2);
        if (!c->v2)
            return NULL;
        rt_buf_init(&c->v2->name);
        rt_buf_init(&c->v2->id);
        rt_buf_init(&c->v2->bin);
        c->v2_free = rt_v2_req_free;
    }
    return c->v2;
}

void rt_v2_req_free(rt_v2_req *q)
{
    if (!q)
        return;
    rt_buf_free(&q->name);
    rt_buf_free(&q->id);
    rt_buf_free(&q->bin);
    free(q->ins);
    rt_v2_plan_free(q->plan);
    free(q);
}

/* "inputs[3] (age)" or "inputs[3]". */
static const char *where_in(const v2p *p, const v2_in *in, char *buf, size_t cap)
{
    size_t pos = (size_t)(in - p->ins);
    if (in->has_name)
        snprintf(buf, cap, "inputs[%zu] (%s)", pos, in->name);
    else
        snprintf(buf, cap, "inputs[%zu]", pos);
    return buf;
}

/* "[2, 3]" */
static void shape_text(const uint64_t *dims, size_t rank, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t d = 0; d < rank && d < RT_V2_MAX_RANK && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)dims[d]);
    if (rank > RT_V2_MAX_RANK && used < cap)
        used += (size_t)snprintf(buf + used, cap - used, ", ...");
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

/* The model's declaration of input idx: "FP32 [-1]" / "BYTES [-1, 3]". */
static void declared(const v2p *p, long idx, char *buf, size_t cap)
{
    const char *dt = p->md.kind != RT_IN_FEATURES
                         ? "BYTES"
                         : rt_v2_datatype(p->g->inputs[idx].dtype);
    size_t w = p->md.kind != RT_IN_FEATURES ? 1 : rt_v2_input_width(p->g, p->sig, (size_t)idx);
    if (w > 1)
        snprintf(buf, cap, "%s [-1, %zu]", dt, w);
    else
        snprintf(buf, cap, "%s [-1]", dt);
}

static const char *input_name(const v2p *p, size_t i)
{
    return p->md.kind == RT_IN_FEATURES ? rt_graph_input_name(p->g, i) : p->md.name;
}

/* A non-negative integer literal (no sign, fraction or exponent). */
static bool read_uint(const rt_jv *v, uint64_t *out)
{
    if (v->kind != RT_JV_NUMBER || v->token || v->n == 0)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < v->n; i++) {
        char ch = v->s[i];
        if (ch < '0' || ch > '9' || x > (UINT64_MAX - 9) / 10)
            return false;
        x = x * 10 + (uint64_t)(ch - '0');
    }
    *out = x;
    return true;
}

static rt_status type_error(v2p *p, const char *where, const char *want, const rt_jv *v)
{
    char got[64];
    rt_json_describe(v, got, sizeof got);
    return rt_err_set(p->sem, RT_ERR_INVALID, "%s: expected %s, got %s", where, want, got);
}

/* The value just read (v) was an object or list that is not wanted: the
 * caller reports it; the rest of it is read by the caller's skip. */

/* ---------------------------------------------------------- parameters */

typedef enum { PAR_REQUEST, PAR_INPUT, PAR_OUTPUT } par_kind;

/* Reads a "parameters" object (the reader before its value). The known
 * keys are checked and taken; others are skipped. where names the owner
 * in messages (NULL: input in's). */
static rt_status read_params(v2p *p, par_kind kind, const char *where, v2_in *in, int *binary,
                             int64_t *classes)
{
    rt_jr *r = p->r;
    rt_jv v;
    rt_status st = rt_jr_value(r, &v);
    if (st != RT_OK)
        return st;
    char wb0[120];
    if (v.kind != RT_JV_OBJECT)
        return type_error(p, where ? where : where_in(p, in, wb0, sizeof wb0),
                          "an object in \"parameters\"", &v);
    static const char *const keys[] = {"binary_data_output", "binary_data", "binary_data_size",
                                       "classification", NULL};
    const char *key;
    size_t klen;
    int k;
    unsigned seen = 0; /* the keys of keys[] read so far */
    size_t at0 = v.at;
    char wd[120];
    while ((st = rt_jr_member_in(r, keys, &k, &key, &klen)) == RT_OK && k != RT_JR_CLOSED) {
        if (k >= 0 && (seen & (1u << k)))
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: parameters: key \"%s\" given twice",
                              where ? where : where_in(p, in, wd, sizeof wd), keys[k]);
        if (k >= 0)
            seen |= 1u << k;
        bool want_bool = (kind == PAR_REQUEST && k == 0) || (kind == PAR_OUTPUT && k == 1);
        bool want_size = kind == PAR_INPUT && k == 2;
        bool want_cls = kind == PAR_OUTPUT && k == 3;
        if (!want_bool && !want_size && !want_cls) {
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
            continue;
        }
        const char *name = keys[k];
        if ((st = rt_jr_value(r, &v)) != RT_OK)
            return st;
        char at[200];
        char wb[120];
#define AT()                                                                                 \
    (snprintf(at, sizeof at, "%s: parameters.%s", where ? where : where_in(p, in, wb, sizeof wb), \
              name),                                                                         \
     at)
        if (want_bool) {
            if (v.kind != RT_JV_TRUE && v.kind != RT_JV_FALSE)
                return type_error(p, AT(), "true or false", &v);
            *binary = v.kind == RT_JV_TRUE;
        } else {
            uint64_t x;
            if (!read_uint(&v, &x) || (want_cls && (x == 0 || x > INT32_MAX)))
                return type_error(p, AT(), want_cls ? "a positive integer (how many classes)"
                                                    : "a non-negative integer (bytes)", &v);
            if (want_size) {
                in->has_bin = true;
                in->bin_size = x;
            } else {
                *classes = (int64_t)x;
            }
        }
#undef AT
    }
    size_t bytes = (size_t)(r->p - r->body) - at0;
    if (st == RT_OK && bytes > RT_V2_MAX_PARAMS_BYTES)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: parameters: %zu bytes, over the limit "
                          "of %d bytes for a parameters object",
                          where ? where : where_in(p, in, wd, sizeof wd), bytes,
                          RT_V2_MAX_PARAMS_BYTES);
    return st;
}

/* ------------------------------------------------------------- inputs */

/* A tensor's name (string v) into name[cap] for lookups and messages: cut
 * to cap - 8 bytes with "..." after; *odd when it was cut or holds a NUL
 * (then it names no tensor). */
static void copy_name(char *name, size_t cap, const rt_jv *v, bool *odd)
{
    size_t n = v->n < cap - 8 ? v->n : cap - 8;
    memcpy(name, v->s, n);
    name[n] = '\0';
    *odd = n < v->n || memchr(v->s, '\0', v->n) != NULL;
    if (n < v->n)
        memcpy(name + n, "...", 4);
}

/* Reads a "shape" list into in (the reader before its value). */
static rt_status read_shape(v2p *p, v2_in *in)
{
    rt_jr *r = p->r;
    rt_jv v;
    rt_status st = rt_jr_value(r, &v);
    if (st != RT_OK)
        return st;
    char at[160], wb[120];
#define AT() (snprintf(at, sizeof at, "%s: shape", where_in(p, in, wb, sizeof wb)), at)
    if (v.kind != RT_JV_LIST)
        return type_error(p, AT(), "a list of dimensions", &v);
    in->rank = 0;
    for (;;) {
        int more;
        if ((st = rt_jr_element(r, &more)) != RT_OK || !more)
            break;
        if ((st = rt_jr_value(r, &v)) != RT_OK)
            return st;
        uint64_t x;
        if (!read_uint(&v, &x))
            return type_error(p, AT(), "non-negative integer dimensions", &v);
        if (in->rank < RT_V2_MAX_RANK)
            in->shape[in->rank] = x;
        in->rank++;
    }
    in->has_shape = true;
    return st;
#undef AT
}

/* The checks of one input once its object is read. */
static rt_status check_input(v2p *p, v2_in *in, const char *dtype, size_t dlen)
{
    /* messages are formatted only when one is needed: this runs per input */
    char where[120], decl[64], got[96];
#define WHERE() where_in(p, in, where, sizeof where)
#define DECL() (declared(p, in->idx, decl, sizeof decl), decl)
#define GOT() (shape_text(in->shape, in->rank, got, sizeof got), got)
    size_t pos = (size_t)(in - p->ins);
    if (!in->has_name)
        return rt_err_set(p->sem, RT_ERR_INVALID, "inputs[%zu]: missing \"name\"", pos);
    if (in->odd_name)
        in->idx = -1;
    else if (p->md.kind == RT_IN_FEATURES)
        in->idx = rt_graph_find_input(p->g, in->name, strlen(in->name));
    else
        in->idx = !strcmp(in->name, p->md.name) ? 0 : -1;
    if (in->idx < 0) {
        char names[320];
        rt_json_list_inputs(p->g, &p->md, names, sizeof names);
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: unknown input \"%s\"; the model's "
                          "inputs: %s", WHERE(), in->name, names);
    }
    for (size_t k = 0; k < pos; k++)
        if (p->ins[k].idx == in->idx)
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: given twice (also inputs[%zu])",
                              WHERE(), k);
    if (!in->has_dtype)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: missing \"datatype\" (the model's "
                          "input %s is %s)", WHERE(), in->name, DECL());
    in->bytes = p->md.kind != RT_IN_FEATURES ||
                p->g->inputs[in->idx].dtype == PREDICTD__DTYPE__DT_STRING;
    const char *want = in->bytes ? "BYTES" : "FP32";
    in->int_bits = 0;
    if (!in->bytes && dlen == 5 && !memcmp(dtype, "INT64", 5))
        in->int_bits = 64; /* tritonclient's np.int64 arrays: converted exactly */
    else if (!in->bytes && dlen == 5 && !memcmp(dtype, "INT32", 5))
        in->int_bits = 32;
    if (in->int_bits)
        p->no_plan = true;
    else if (dlen != strlen(want) || memcmp(dtype, want, dlen) != 0)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: datatype \"%.*s\", but the model's "
                          "input %s is %s", WHERE(), (int)(dlen > 20 ? 20 : dlen), dtype, in->name,
                          DECL());
    if (!in->has_shape)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: missing \"shape\" (the model's input "
                          "%s is %s)", WHERE(), in->name, DECL());
    in->width = p->md.kind == RT_IN_FEATURES ? rt_v2_input_width(p->g, p->sig, (size_t)in->idx)
                                             : 1;
    size_t rank = in->width > 1 ? 2 : 1;
    if (in->rank != rank || (rank == 2 && in->shape[1] != in->width))
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: shape %s, but the model's input %s is "
                          "%s (-1: any number of instances)", WHERE(), GOT(), in->name, DECL());
    if (in->shape[0] > p->params->max_instances)
        return rt_err_set(p->sem, RT_ERR_LIMIT, "%s: shape %s holds %llu instances, the limit "
                          "is %zu", WHERE(), GOT(), (unsigned long long)in->shape[0],
                          p->params->max_instances);
    if (pos > 0 && in->shape[0] != p->ins[0].shape[0]) {
        char first[120];
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: shape %s, but %s has %llu instances "
                          "(every input needs the same first dimension)", WHERE(), GOT(),
                          where_in(p, &p->ins[0], first, sizeof first),
                          (unsigned long long)p->ins[0].shape[0]);
    }
    if (in->has_data && in->has_bin)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: give \"data\" or "
                          "parameters.binary_data_size, not both", WHERE());
    if (!in->has_data && !in->has_bin)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: missing \"data\" (or "
                          "parameters.binary_data_size with the binary tensor data extension)",
                          WHERE());
    if (in->has_bin) {
        if (!p->has_header)
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: parameters.binary_data_size needs "
                              "the Inference-Header-Content-Length header (the binary tensor "
                              "data extension)", WHERE());
        uint64_t count = in->shape[0] * (uint64_t)in->width;
        unsigned esize = in->int_bits == 64 ? 8 : 4;
        if (!in->bytes && in->bin_size != count * esize)
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: binary_data_size %llu, but shape %s "
                              "of %s takes %llu bytes", WHERE(),
                              (unsigned long long)in->bin_size, GOT(),
                              in->int_bits == 64   ? "INT64"
                              : in->int_bits == 32 ? "INT32"
                                                   : "FP32",
                              (unsigned long long)(count * esize));
        if (in->bin_size > UINT64_MAX / 2 - p->bin_total)
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: binary_data_size too large", WHERE());
        in->bin_off = (size_t)p->bin_total;
        p->bin_total += in->bin_size;
    }
    return RT_OK;
#undef WHERE
#undef DECL
#undef GOT
}

static rt_status fill_list(v2p *p, const v2_in *in, uint64_t total, uint64_t *e);

/* The one-pass read gives up: the batch is cleared and the second pass
 * fills every input. */
static void unfill(v2p *p)
{
    p->eager = false;
    rt_batch_clear(p->c->batch);
    if (p->rec)
        rt_v2_plan_drop_data(p->rec);
    for (size_t k = 0; k < p->n_ins; k++)
        p->ins[k].filled = false;
}

/* The first pass at input in's "data" (the reader before its '['), every
 * other key of in read: when in passes check_input now, its values go into
 * the batch at once (in->filled) and the reader is after the list. Anything
 * else (a failed check, a value of the wrong type or count) leaves the
 * reader where it was, with the one-pass read given up (unfill) and no
 * error: the two passes then find and report it in their order. Errors
 * returned are hard ones (the body is not JSON, memory). */
static rt_status fill_now(v2p *p, v2_in *in, const char *dtype, size_t dlen)
{
    rt_err keep = *p->sem;
    if (check_input(p, in, dtype, dlen) != RT_OK) {
        *p->sem = keep;
        unfill(p);
        return RT_OK;
    }
    rt_batch *b = p->c->batch;
    size_t n = (size_t)in->shape[0];
    if (in == p->ins) {
        for (size_t i = 0; i < n; i++)
            if (rt_batch_add(b, NULL) != RT_OK) {
                unfill(p);
                return RT_OK;
            }
    }
    rt_jr *r = p->r;
    rt_jv v;
    uint64_t total = in->shape[0] * (uint64_t)in->width, e = 0;
    rt_status st = rt_jr_value(r, &v);
    if (st == RT_OK)
        st = fill_list(p, in, total, &e);
    if (r->hard)
        return r->hard;
    if (st == RT_OK && e == total) {
        in->filled = true;
        return RT_OK;
    }
    *p->sem = keep;
    unfill(p);
    rt_jr_restore(r, in->data);
    return RT_OK;
}

/* One element of "inputs" (the reader before it). */
static rt_status read_input(v2p *p, size_t pos)
{
    rt_jr *r = p->r;
    if (rt_grow(&p->q->ins, &p->q->cap_ins, p->n_ins + 1, sizeof(v2_in)) != 0)
        return rt_err_set(p->sem, RT_ERR_NOMEM, "inputs[%zu]: out of memory", pos);
    p->ins = p->q->ins;
    v2_in *in = &p->ins[p->n_ins++];
    memset(in, 0, sizeof *in);
    char wn[120];
    rt_jv v;
    rt_status st = rt_jr_value(r, &v);
    if (st != RT_OK)
        return st;
    if (v.kind != RT_JV_OBJECT)
        return type_error(p, where_in(p, in, wn, sizeof wn), "an object (a tensor)", &v);
    char dtype[24] = "";
    size_t dlen = 0;
    bool seen_params = false;
    static const char *const keys[] = {"name", "shape", "datatype", "parameters", "data", NULL};
    const char *key;
    size_t klen;
    int k;
    while ((st = rt_jr_member_in(r, keys, &k, &key, &klen)) == RT_OK && k != RT_JR_CLOSED) {
        if (in->filled) /* a key after the data: the two passes read this body */
            unfill(p);
        seen_params |= k == 3;
        if ((k == 0 && in->has_name) || (k == 1 && in->has_shape) ||
            (k == 2 && in->has_dtype) || (k == 4 && in->has_data))
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: key \"%.*s\" given twice",
                              where_in(p, in, wn, sizeof wn), (int)klen, key);
        switch (k) {
        case 0:
        case 2:
            if ((st = rt_jr_value(r, &v)) != RT_OK)
                return st;
            if (v.kind != RT_JV_STRING)
                return type_error(p, where_in(p, in, wn, sizeof wn),
                                  k ? "a string in \"datatype\"" : "a string in \"name\"", &v);
            if (k == 0) {
                copy_name(in->name, sizeof in->name, &v, &in->odd_name);
                in->has_name = true;
            } else {
                dlen = v.n < sizeof dtype ? v.n : sizeof dtype;
                memcpy(dtype, v.s, dlen);
                in->has_dtype = true;
            }
            break;
        case 1:
            if ((st = read_shape(p, in)) != RT_OK)
                return st;
            break;
        case 3:
            if ((st = read_params(p, PAR_INPUT, NULL, in, NULL, NULL)) != RT_OK)
                return st;
            break;
        case 4:
            if (rt_jr_peek(r) != '[') {
                if ((st = rt_jr_value(r, &v)) != RT_OK)
                    return st;
                return type_error(p, where_in(p, in, wn, sizeof wn), "a list in \"data\"", &v);
            }
            in->data = rt_jr_save(r);
            in->has_data = true;
            if (p->eager && in->has_name && in->has_dtype && in->has_shape && !in->has_bin &&
                !seen_params) {
                if ((st = fill_now(p, in, dtype, dlen)) != RT_OK)
                    return st;
                if (in->filled)
                    break;
            }
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
            break;
        default:
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
        }
    }
    if (st != RT_OK)
        return st;
    if (in->filled) /* checked before its data was read, in the same state */
        return RT_OK;
    p->eager = false; /* the inputs after this one wait for the second pass */
    return check_input(p, in, dtype, dlen);
}

/* A list member ("inputs", "outputs": what, described as want in a type
 * error), each element read by read_one with its position. */
static rt_status read_list(v2p *p, const char *what, const char *want,
                           rt_status (*read_one)(v2p *p, size_t pos))
{
    rt_jr *r = p->r;
    rt_jv v;
    rt_status st = rt_jr_want_type(r, &v, RT_JV_LIST, p->sem, what, want);
    if (st != RT_OK)
        return st;
    for (size_t pos = 0;; pos++) {
        int more;
        if ((st = rt_jr_element(r, &more)) != RT_OK || !more)
            return st;
        if ((st = read_one(p, pos)) != RT_OK)
            return st;
    }
}

static rt_status read_inputs(v2p *p)
{
    return read_list(p, "\"inputs\"", "a list of tensors", read_input);
}

/* ------------------------------------------------------------ outputs */

static void list_outputs(const rt_v2_req *q, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < q->n_outs && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", k ? ", " : "", q->outs[k].name);
}

static rt_status read_output(v2p *p, size_t pos)
{
    rt_jr *r = p->r;
    rt_v2_req *q = p->q;
    char where[120];
    snprintf(where, sizeof where, "outputs[%zu]", pos);
    rt_jv v;
    rt_status st = rt_jr_value(r, &v);
    if (st != RT_OK)
        return st;
    if (v.kind != RT_JV_OBJECT)
        return type_error(p, where, "an object (an output's name)", &v);
    char name[72] = "";
    bool has_name = false, cut = false;
    int binary = -1;
    int64_t classes = 0;
    static const char *const keys[] = {"name", "parameters", NULL};
    const char *key;
    size_t klen;
    int m;
    while ((st = rt_jr_member_in(r, keys, &m, &key, &klen)) == RT_OK && m != RT_JR_CLOSED) {
        if (m == 0) {
            if ((st = rt_jr_value(r, &v)) != RT_OK)
                return st;
            if (v.kind != RT_JV_STRING)
                return type_error(p, where, "a string in \"name\"", &v);
            if (has_name)
                return rt_err_set(p->sem, RT_ERR_INVALID, "%s: key \"name\" given twice",
                                  where);
            copy_name(name, sizeof name, &v, &cut);
            has_name = true;
        } else if (m == 1) {
            if ((st = read_params(p, PAR_OUTPUT, where, NULL, &binary, &classes)) != RT_OK)
                return st;
        } else if ((st = rt_jr_skip(r)) != RT_OK) {
            return st;
        }
    }
    if (st != RT_OK)
        return st;
    if (!has_name)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: missing \"name\"", where);
    size_t k = 0;
    while (k < q->n_outs && (cut || strcmp(q->outs[k].name, name) != 0))
        k++;
    if (k == q->n_outs) {
        char names[256];
        list_outputs(q, names, sizeof names);
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: unknown output \"%s\"; the model's "
                          "outputs: %s", where, name, names);
    }
    snprintf(where, sizeof where, "outputs[%zu] (%s)", pos, name);
    for (size_t j = 0; j < q->n_sel; j++)
        if (q->sel[j].out == k)
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: requested twice (also outputs[%zu])",
                              where, j);
    if (classes && !strcmp(q->outs[k].datatype, "BYTES"))
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: parameters.classification needs a "
                          "numeric output; %s is BYTES", where, name);
    if (q->n_sel == RT_V2_MAX_OUTPUTS)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: too many outputs", where);
    p->sel_bin[q->n_sel] = binary;
    q->sel[q->n_sel++] = (rt_v2_sel){k, 0, classes};
    return RT_OK;
}

static rt_status read_outputs(v2p *p)
{
    return read_list(p, "\"outputs\"", "a list of requested outputs", read_output);
}

/* ---------------------------------------------------- the first pass */

/* The top-level object (the reader before it). */
static rt_status read_request(v2p *p, bool *has_outputs)
{
    rt_jr *r = p->r;
    rt_jv v;
    rt_status st = rt_jr_want(r, &v, RT_JV_OBJECT, p->sem,
                              "request body must be a JSON object "
                              "(an inference request: {\"inputs\": [...]})");
    if (st != RT_OK)
        return st;
    bool seen[4] = {false, false, false, false};
    static const char *const keys[] = {"id", "parameters", "inputs", "outputs", NULL};
    const char *key;
    size_t klen;
    int k;
    while ((st = rt_jr_member_in(r, keys, &k, &key, &klen)) == RT_OK && k != RT_JR_CLOSED) {
        if (k < 0) {
            if ((st = rt_jr_skip(r)) != RT_OK)
                return st;
            continue;
        }
        if (seen[k])
            return rt_err_set(p->sem, RT_ERR_INVALID, "key \"%.*s\" given twice", (int)klen, key);
        seen[k] = true;
        switch (k) {
        case 0:
            if ((st = rt_jr_value(r, &v)) != RT_OK)
                return st;
            if (v.kind != RT_JV_STRING)
                return type_error(p, "\"id\"", "a string", &v);
            if (v.n > RT_V2_MAX_ID_BYTES)
                return rt_err_set(p->sem, RT_ERR_INVALID, "\"id\": %zu bytes, over the limit "
                                  "of %d bytes for a request id", v.n, RT_V2_MAX_ID_BYTES);
            rt_buf_reset(&p->q->id);
            if (rt_buf_json_string(&p->q->id, v.s, v.n) != 0)
                return rt_err_set(p->sem, RT_ERR_NOMEM, "\"id\": out of memory");
            if (p->rec)
                rt_v2_plan_slot(p->rec, v.at, (size_t)(r->p - r->body), 0, 0, RT_V2_SLOT_ID);
            break;
        case 1:
            if ((st = read_params(p, PAR_REQUEST, "request", NULL, &p->bin_all, NULL)) != RT_OK)
                return st;
            break;
        case 2:
            if ((st = read_inputs(p)) != RT_OK)
                return st;
            break;
        default:
            if ((st = read_outputs(p)) != RT_OK)
                return st;
        }
    }
    if (st != RT_OK)
        return st;
    if (!seen[2])
        return rt_err_set(p->sem, RT_ERR_INVALID, "missing \"inputs\" (the input tensors)");
    *has_outputs = seen[3];
    /* every input of the model, once */
    size_t nin = p->nin;
    for (size_t i = 0; i < nin; i++) {
        bool given = false;
        for (size_t j = 0; j < p->n_ins && !given; j++)
            given = p->ins[j].idx == (long)i;
        if (!given) {
            char decl[64];
            declared(p, (long)i, decl, sizeof decl);
            return rt_err_set(p->sem, RT_ERR_INVALID, "inputs: the model's input \"%s\" (%s) is "
                              "missing (every input is required)", input_name(p, i), decl);
        }
    }
    return RT_OK;
}

/* ---------------------------------------------------- the second pass */

/* One element (flat index e) of input in, read as JSON value v. */
/* An integer of an INT64/INT32 tensor for the model's FP32 input: 0 with
 * *f its exact value, else 1 with the reason in why. FP32 holds every
 * integer up to 2^24 in magnitude, larger ones only when their low bits
 * are zeros; nothing is rounded. */
static int int_to_fp32(int64_t x, int bits, double *f, const char **why)
{
    if (bits == 32 && (x < INT32_MIN || x > INT32_MAX)) {
        *why = "is not an INT32";
        return 1;
    }
    float g = (float)x;
    if ((double)g != (double)x || (double)g >= 9223372036854775808.0 ||
        (int64_t)g != x) {
        *why = "has no exact FP32 value (FP32 holds every integer up to 16777216 in "
               "magnitude, larger ones only when they end in enough zero bits)";
        return 1;
    }
    *f = (double)g;
    return 0;
}

/* The integer literal of an INT64/INT32 element: 0 with *x, else 1. */
static int int_literal(const rt_jv *v, int64_t *x)
{
    if (v->kind != RT_JV_NUMBER || v->token || !v->s || !v->n || v->n > 24)
        return 1;
    char lit[32];
    memcpy(lit, v->s, v->n);
    lit[v->n] = '\0';
    for (size_t i = lit[0] == '-'; i < v->n; i++)
        if (lit[i] < '0' || lit[i] > '9')
            return 1;
    errno = 0;
    char *end = NULL;
    long long y = strtoll(lit, &end, 10);
    if (errno || !end || *end || end == lit)
        return 1;
    *x = (int64_t)y;
    return 0;
}

static rt_status push_json(v2p *p, const v2_in *in, uint64_t e, const rt_jv *v)
{
    char where[160], w0[120];
    size_t inst = (size_t)(e / in->width);
    rt_status st;
    if (!in->bytes) {
        if (v->kind != RT_JV_NUMBER) {
            snprintf(where, sizeof where, "%s.data[%llu]", where_in(p, in, w0, sizeof w0),
                     (unsigned long long)e);
            return type_error(p, where, "a number", v);
        }
        if (!v->token && !isfinite(v->num)) {
            snprintf(where, sizeof where, "%s.data[%llu]", where_in(p, in, w0, sizeof w0),
                     (unsigned long long)e);
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: number out of range: beyond a "
                              "double's (write Infinity or -Infinity for those)", where);
        }
        double num = v->num;
        if (in->int_bits) {
            int64_t x = 0;
            const char *why = NULL;
            if (int_literal(v, &x) || int_to_fp32(x, in->int_bits, &num, &why)) {
                snprintf(where, sizeof where, "%s.data[%llu]", where_in(p, in, w0, sizeof w0),
                         (unsigned long long)e);
                return rt_err_set(p->sem, RT_ERR_INVALID, "%s: %.*s %s; the model's input %s is "
                                  "FP32 and takes INT%d data only as integers it holds exactly",
                                  where, (int)(v->n > 24 ? 24 : v->n), v->s ? v->s : "",
                                  why ? why : (in->int_bits == 64 ? "is not an INT64"
                                                                  : "is not an INT32"),
                                  in->name, in->int_bits);
            }
        }
        st = rt_batch_push_num(p->c->batch, inst, (size_t)in->idx, num);
    } else {
        if (v->kind != RT_JV_STRING) {
            snprintf(where, sizeof where, "%s.data[%llu]", where_in(p, in, w0, sizeof w0),
                     (unsigned long long)e);
            return type_error(p, where, "a string", v);
        }
        if (p->md.kind == RT_IN_CSV)
            st = rt_receiver_csv_row(p->c->batch, inst, v->s, v->n, p->sem);
        else if (p->md.kind == RT_IN_EXAMPLE)
            st = rt_receiver_example(p->c->batch, inst, (const uint8_t *)v->s, v->n, p->sem);
        else
            st = rt_batch_push_str(p->c->batch, inst, (size_t)in->idx, v->s, v->n);
        if (st != RT_OK && p->md.kind != RT_IN_FEATURES) {
            snprintf(where, sizeof where, "%s.data[%llu]", where_in(p, in, w0, sizeof w0),
                     (unsigned long long)e);
            rt_err_prefix(p->sem, "%s", where);
            return st;
        }
    }
    if (st != RT_OK)
        return rt_err_set(p->sem, st, "%s.data[%llu]: %s", where_in(p, in, w0, sizeof w0),
                          (unsigned long long)e, rt_err_status_str(st));
    if (p->rec)
        rt_v2_plan_slot(p->rec, v->at, (size_t)(p->r->p - p->r->body), inst, (size_t)in->idx,
                        in->bytes ? RT_V2_SLOT_STRING : RT_V2_SLOT_NUMBER);
    return RT_OK;
}

/* Reads the open list's elements (nested lists flattened) into input in;
 * *e counts the elements, pushing only those the shape holds. */
static rt_status fill_list(v2p *p, const v2_in *in, uint64_t total, uint64_t *e)
{
    rt_jr *r = p->r;
    for (;;) {
        int more;
        rt_status st = rt_jr_element(r, &more);
        if (st != RT_OK || !more)
            return st;
        rt_jv v;
        if ((st = rt_jr_value(r, &v)) != RT_OK)
            return st;
        if (v.kind == RT_JV_LIST) {
            if ((st = fill_list(p, in, total, e)) != RT_OK)
                return st;
            continue;
        }
        if (*e < total && (st = push_json(p, in, *e, &v)) != RT_OK)
            return st;
        if (v.kind == RT_JV_OBJECT && (st = rt_jr_skip_to(r, r->depth - 1)) != RT_OK)
            return st;
        (*e)++;
    }
}

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Input in's binary tensor data (bytes [0, in->bin_size) of bin). */
static rt_status fill_binary(v2p *p, const v2_in *in, const unsigned char *bin, uint64_t total)
{
    char w0[120];
    rt_batch *b = p->c->batch;
    rt_status st = RT_OK;
    if (!in->bytes && in->int_bits) {
        for (uint64_t e = 0; e < total && st == RT_OK; e++) {
            int64_t x;
            if (in->int_bits == 64) {
                uint64_t u = (uint64_t)le32(bin + 8 * e) | (uint64_t)le32(bin + 8 * e + 4) << 32;
                memcpy(&x, &u, sizeof x);
            } else {
                uint32_t u = le32(bin + 4 * e);
                int32_t y;
                memcpy(&y, &u, sizeof y);
                x = y;
            }
            double f = 0;
            const char *why = NULL;
            if (int_to_fp32(x, in->int_bits, &f, &why))
                return rt_err_set(p->sem, RT_ERR_INVALID, "%s: binary element %llu: %lld %s; "
                                  "the model's input %s is FP32 and takes INT%d data only as "
                                  "integers it holds exactly",
                                  where_in(p, in, w0, sizeof w0), (unsigned long long)e,
                                  (long long)x, why, in->name, in->int_bits);
            st = rt_batch_push_num(b, (size_t)(e / in->width), (size_t)in->idx, f);
        }
        if (st != RT_OK)
            return rt_err_set(p->sem, st, "%s: %s", where_in(p, in, w0, sizeof w0),
                              rt_err_status_str(st));
        return RT_OK;
    }
    if (!in->bytes) {
        for (uint64_t e = 0; e < total && st == RT_OK; e++) {
            uint32_t u = le32(bin + 4 * e);
            float f;
            memcpy(&f, &u, sizeof f);
            st = rt_batch_push_num(b, (size_t)(e / in->width), (size_t)in->idx, (double)f);
        }
        if (st != RT_OK)
            return rt_err_set(p->sem, st, "%s: %s", where_in(p, in, w0, sizeof w0),
                              rt_err_status_str(st));
        return RT_OK;
    }
    uint64_t off = 0, size = in->bin_size;
    for (uint64_t e = 0; e < total; e++) {
        if (size - off < 4)
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: binary_data_size %llu ends inside "
                              "element %llu's 4-byte length (shape holds %llu elements)",
                              where_in(p, in, w0, sizeof w0), (unsigned long long)size,
                              (unsigned long long)e, (unsigned long long)total);
        uint32_t n = le32(bin + off);
        off += 4;
        if (n > size - off)
            return rt_err_set(p->sem, RT_ERR_INVALID, "%s: element %llu's length %u runs past "
                              "binary_data_size %llu", where_in(p, in, w0, sizeof w0),
                              (unsigned long long)e, n, (unsigned long long)size);
        const char *s = (const char *)bin + off;
        size_t inst = (size_t)(e / in->width);
        if (p->md.kind == RT_IN_CSV)
            st = rt_receiver_csv_row(b, inst, s, n, p->sem);
        else if (p->md.kind == RT_IN_EXAMPLE)
            st = rt_receiver_example(b, inst, (const uint8_t *)s, n, p->sem);
        else if ((st = rt_batch_push_str(b, inst, (size_t)in->idx, s, n)) != RT_OK)
            rt_err_set(p->sem, st, "%s", rt_err_status_str(st));
        if (st != RT_OK) {
            char where[160];
            snprintf(where, sizeof where, "%s: element %llu", where_in(p, in, w0, sizeof w0),
                     (unsigned long long)e);
            rt_err_prefix(p->sem, "%s", where);
            return st;
        }
        off += n;
    }
    if (off != size)
        return rt_err_set(p->sem, RT_ERR_INVALID, "%s: binary_data_size %llu, but the %llu "
                          "elements of its shape take %llu bytes",
                          where_in(p, in, w0, sizeof w0), (unsigned long long)size,
                          (unsigned long long)total, (unsigned long long)off);
    return RT_OK;
}

static rt_status fill(v2p *p, const char *body)
{
    size_t n = p->n_ins ? (size_t)p->ins[0].shape[0] : 0;
    if (p->n_ins && p->ins[0].filled)
        n = 0; /* the first pass made the instances */
    for (size_t i = 0; i < n; i++) {
        rt_status st = rt_batch_add(p->c->batch, NULL);
        if (st != RT_OK)
            return rt_err_set(p->sem, st, "inputs: %zu instances: %s", n, rt_err_status_str(st));
    }
    const unsigned char *bin = (const unsigned char *)body + p->hlen;
    for (size_t k = 0; k < p->n_ins; k++) {
        const v2_in *in = &p->ins[k];
        uint64_t total = in->shape[0] * (uint64_t)in->width;
        rt_status st;
        if (in->filled)
            continue;
        if (in->has_bin) {
            st = fill_binary(p, in, bin + in->bin_off, total);
        } else {
            rt_jr_restore(p->r, in->data);
            rt_jv v;
            uint64_t e = 0;
            if ((st = rt_jr_value(p->r, &v)) == RT_OK)
                st = fill_list(p, in, total, &e);
            if (st == RT_OK && e != total) {
                char w0[120], got[96];
                shape_text(in->shape, in->rank, got, sizeof got);
                st = rt_err_set(p->sem, RT_ERR_INVALID, "%s: %llu values in \"data\", but shape "
                                "%s holds %llu", where_in(p, in, w0, sizeof w0),
                                (unsigned long long)e, got, (unsigned long long)total);
            }
        }
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

/* ------------------------------------------------------------ entry */

static rt_status parse(const rt_model *m, const char *name, int64_t version, const char *body,
                       size_t len, size_t header_len, const rt_json_params *params, rt_ctx *c,
                       rt_parsed *out, rt_err *err)
{
    if (!m || !c || !out || (!body && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_v2_parse: NULL argument");
    rt_json_params dp = rt_json_default_params();
    if (!params)
        params = &dp;
    const rt_graph *g = rt_model_graph(m);
    if (!g)
        return rt_err_set(err, RT_ERR_INVALID, "model has no graph");
    rt_status st = rt_ctx_prepare(c, g, err);
    if (st != RT_OK)
        return st;
    rt_v2_req *q = rt_v2_req_of(c);
    if (!q)
        return rt_err_set(err, RT_ERR_NOMEM, "request: out of memory");
    if (!body)
        body = "";
    const Predictd__ModelDef *def = rt_graph_def(g);
    if (!name)
        name = def->model_name ? def->model_name : "";
    rt_buf_reset(&q->name);
    rt_buf_reset(&q->id);
    if (rt_buf_puts(&q->name, name) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "request: out of memory");
    q->version = version;
    q->n_sel = 0;
    q->answer_header = 0;
    if (header_len == RT_V2_NO_HEADER && rt_v2_plan_replay(q->plan, g, params, body, len, c, q, out))
        return RT_OK;
    v2p p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.c = c;
    p.params = params;
    p.sig = rt_v2_signature(g);
    p.md = rt_json_mode_for(g, p.sig);
    p.nin = rt_json_mode_inputs(g, &p.md);
    p.q = q;
    p.ins = q->ins;
    p.bin_all = -1;
    p.eager = true;
    q->n_outs = rt_v2_outputs(g, p.sig, q->outs);
    if (header_len == RT_V2_NO_HEADER && p.md.kind == RT_IN_FEATURES) {
        if (!q->plan)
            q->plan = rt_v2_plan_new();
        if (q->plan) {
            rt_v2_plan_begin(q->plan);
            p.rec = q->plan;
        }
    }
    size_t jlen = len;
    if (header_len == RT_V2_NO_HEADER) {
        p.has_header = false;
    } else if (header_len == RT_V2_FIND_HEADER) {
        p.has_header = true;
    } else {
        if (header_len > len)
            return rt_err_set(err, RT_ERR_INVALID, "Inference-Header-Content-Length %zu is more "
                              "than the request body's %zu bytes", header_len, len);
        p.has_header = true;
        jlen = header_len;
    }
    rt_err sem;
    sem.msg[0] = '\0';
    p.sem = &sem;
    rt_jr r;
    rt_jr_init(&r, body, jlen, params->max_depth, &c->text, &c->key, err);
    p.r = &r;
    bool has_outputs = false;
    rt_status sst = read_request(&p, &has_outputs);
    if (r.hard) {
        st = r.hard;
        goto out;
    }
    if (sst != RT_OK && (st = rt_jr_skip_to(&r, 0)) != RT_OK)
        goto out; /* the body is not JSON after all: that comes first */
    if (header_len == RT_V2_FIND_HEADER)
        p.hlen = (size_t)(r.p - body);
    else if ((st = rt_jr_end(&r)) != RT_OK)
        goto out;
    else
        p.hlen = jlen;
    if (sst != RT_OK) {
        st = sst;
        if (err)
            *err = sem;
        goto out;
    }
    if (p.hlen + p.bin_total != len) {
        st = rt_err_set(err, RT_ERR_INVALID, "binary tensor data: the body has %zu bytes after "
                        "the %zu-byte JSON header, but the inputs' binary_data_size add up to "
                        "%llu", len - p.hlen, p.hlen, (unsigned long long)p.bin_total);
        goto out;
    }
    if (!has_outputs) {
        for (size_t k = 0; k < q->n_outs; k++) {
            p.sel_bin[k] = -1;
            q->sel[k] = (rt_v2_sel){k, 0, 0};
        }
        q->n_sel = q->n_outs;
    }
    for (size_t k = 0; k < q->n_sel; k++)
        q->sel[k].binary = p.sel_bin[k] >= 0 ? p.sel_bin[k] : p.bin_all > 0;
    if ((st = fill(&p, body)) != RT_OK) {
        if (err)
            *err = sem;
        goto out;
    }
    out->sig = p.sig;
    out->columnar = 0;
    out->n = rt_batch_size(c->batch);
    out->v2 = q;
    out->method = RT_METHOD_PREDICT; /* a v2 answer (out->v2) */
    out->head = -1;
    out->missing = (int)rt_batch_missing(c->batch);
    if (p.rec && !p.no_plan)
        rt_v2_plan_keep(p.rec, g, params, p.sig, body, len, q, out->n);
    st = RT_OK;
out:
    rt_jr_done(&r);
    return st;
}

rt_status rt_v2_parse(const rt_model *m, const char *name, int64_t version, const char *body,
                      size_t len, size_t header_len, const rt_json_params *p, rt_ctx *c,
                      rt_parsed *out, rt_err *err)
{
    rt_status st = parse(m, name, version, body, len, header_len, p, c, out, err);
    if (st == RT_OK) /* after a replay too */
        st = rt_v2_check_answer(rt_model_graph(m), out->v2, out->n, p, err);
    return rt_json_tidy_message(st, err);
}

rt_status rt_v2_handle(const rt_model *m, const char *name, int64_t version, const char *body,
                       size_t len, size_t header_len, const rt_json_params *p, rt_ctx *c,
                       rt_buf *out, rt_err *err)
{
    rt_parsed pr;
    rt_status st = rt_v2_parse(m, name, version, body, len, header_len, p, c, &pr, err);
    if (st != RT_OK)
        return st;
    return rt_merge_run_parsed(m, c, &pr, out, err);
}

size_t rt_v2_answer_header_len(const rt_ctx *c)
{
    return c && c->v2 ? c->v2->answer_header : 0;
}
