/*
 * rt_v2_out.c — an Open Inference Protocol answer from a request's
 * rt_outputs: {"model_name", "model_version", "id"?, "outputs": [{"name",
 * "datatype", "shape": [n, width], "data": [...]}]}, row-major and flat,
 * floats as the shortest text that reads back to the same float32 (the
 * numbers of the /v1 answer). An output asked for as binary (Triton's binary
 * tensor data extension) gives parameters.binary_data_size instead of
 * "data", and its little-endian bytes follow the JSON in output order (the
 * JSON's length goes to the Inference-Header-Content-Length header). An
 * output with parameters.classification K (Triton's classification
 * extension) is BYTES [n, min(K, width)]: per instance the K highest values,
 * highest first (ties: the lower index first), as "value:index" or
 * "value:index:label" where the index is a class (probabilities,
 * all_class_ids, and logits of a multi-class head).
 */
#include "rt_serve.h"
#include "rt_v2_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The graph (a head's view) and outputs output t reads: its head's, of
 * several heads; g and o otherwise. */
static const rt_graph *out_graph(const rt_graph *g, const rt_v2_output *t)
{
    const rt_graph *h = t->head ? rt_graph_head_view(g, t->head - 1, NULL) : NULL;
    return h ? h : g;
}

static const rt_outputs *out_outputs(const rt_outputs *o, const rt_v2_output *t)
{
    return t->head && t->head <= o->n_heads ? &o->heads[t->head - 1] : o;
}

/* The float of a float output at instance i, position j. */
static float float_at(const rt_graph *g, const rt_outputs *o, const rt_v2_output *t, size_t i,
                      size_t j)
{
    switch (t->kind) {
    case RT_V2_OUT_LOGISTIC: return o->logistic[i];
    case RT_V2_OUT_LOGITS: return o->logits[i * g->logits_dim + j];
    case RT_V2_OUT_PROBABILITIES: return o->probabilities[i * g->n_classes + j];
    case RT_V2_OUT_PREDICTIONS: return o->predictions[i * g->logits_dim + t->off + j];
    default: return 0;
    }
}

static bool is_float(rt_v2_out_kind k)
{
    return k == RT_V2_OUT_LOGISTIC || k == RT_V2_OUT_LOGITS || k == RT_V2_OUT_PROBABILITIES ||
           k == RT_V2_OUT_PREDICTIONS;
}

/* The integer of an integer output t at instance i, position j. */
static int64_t int_at(const rt_outputs *o, const rt_v2_output *t, size_t i, size_t j)
{
    if (t->kind == RT_V2_OUT_LABEL_INT64) /* the graph's label: its digits */
        return strtoll(t->labels[o->class_ids[i]], NULL, 10);
    return t->kind == RT_V2_OUT_ALL_CLASS_IDS ? (int64_t)j : o->class_ids[i];
}

static bool is_int(rt_v2_out_kind k)
{
    return k == RT_V2_OUT_ALL_CLASS_IDS || k == RT_V2_OUT_CLASS_IDS || k == RT_V2_OUT_LABEL_INT64;
}

/* The string of a BYTES output at instance i, position j. */
static const char *str_at(const rt_graph *g, const rt_outputs *o, rt_v2_out_kind k, size_t i,
                          size_t j)
{
    size_t c = k == RT_V2_OUT_ALL_CLASSES ? j : (size_t)o->class_ids[i];
    const char *s = rt_graph_class_name(g, c);
    return s ? s : "";
}

static int put_le(rt_buf *b, uint64_t v, size_t bytes)
{
    unsigned char t[8];
    for (size_t k = 0; k < bytes; k++)
        t[k] = (unsigned char)(v >> (8 * k));
    return rt_buf_append(b, t, bytes);
}

/* A string element: JSON text, or 4-byte length + bytes. */
static int put_str(rt_buf *b, const char *s, size_t n, bool binary)
{
    if (!binary)
        return rt_buf_json_string(b, s, n);
    return put_le(b, (uint64_t)n, 4) | rt_buf_append(b, s, n);
}

/* Does position j of output k have a class label? */
static bool has_label(const rt_graph *g, rt_v2_out_kind k)
{
    return k == RT_V2_OUT_PROBABILITIES || k == RT_V2_OUT_ALL_CLASS_IDS ||
           (k == RT_V2_OUT_LOGITS && g->n_classes > 2 && g->logits_dim == g->n_classes);
}

/* The classification extension's elements of instance i: the top `top` of
 * width values, each "value:index[:label]", as JSON strings (comma
 * separated) or binary. tmp: scratch. */
static int put_classes(rt_buf *b, const rt_graph *g, const rt_outputs *o, const rt_v2_output *t,
                       size_t i, size_t top, bool binary, bool first, rt_buf *tmp,
                       unsigned char *taken)
{
    int rc = 0;
    memset(taken, 0, t->width);
    for (size_t r = 0; r < top; r++) {
        size_t best = SIZE_MAX;
        double bv = 0;
        for (size_t j = 0; j < t->width; j++) {
            if (taken[j])
                continue;
            double v = is_float(t->kind) ? (double)float_at(g, o, t, i, j)
                                         : (double)int_at(o, t, i, j);
            if (isnan(v))
                v = -INFINITY;
            if (best == SIZE_MAX || v > bv) {
                best = j;
                bv = v;
            }
        }
        taken[best] = 1;
        rt_buf_reset(tmp);
        if (is_float(t->kind)) {
            char f[RT_JSON_FLOAT_MAX];
            rc |= rt_buf_append(tmp, f, rt_buf_json_float_text(float_at(g, o, t, i, best), f));
        } else {
            rc |= rt_buf_put_int(tmp, int_at(o, t, i, best));
        }
        rc |= rt_buf_append(tmp, ":", 1) | rt_buf_put_int(tmp, (int64_t)best);
        if (has_label(g, t->kind)) {
            const char *l = rt_graph_class_name(g, best);
            rc |= rt_buf_append(tmp, ":", 1) | rt_buf_puts(tmp, l ? l : "");
        }
        if (!binary && !(first && r == 0))
            rc |= rt_buf_append(b, ", ", 2);
        rc |= put_str(b, tmp->data ? tmp->data : "", tmp->len, binary);
    }
    return rc;
}

/* Output t's n x width elements (width: top classes with classification)
 * into b: JSON elements (comma separated) or binary. */
static int put_elements(rt_buf *b, const rt_graph *g, const rt_outputs *o, const rt_v2_output *t,
                        const rt_v2_sel *sel, size_t width, rt_buf *tmp, unsigned char *taken)
{
    size_t n = o->n; /* (a head's outputs hold every instance: n is the caller's) */
    g = out_graph(g, t);
    o = out_outputs(o, t);
    bool bin = sel->binary;
    int rc = 0;
    if (sel->classes) {
        for (size_t i = 0; i < n && !rc; i++)
            rc |= put_classes(b, g, o, t, i, width, bin, i == 0, tmp, taken);
        return rc;
    }
    if (is_float(t->kind)) {
        if (bin) {
            if (rt_buf_reserve(b, n * width * 4) != 0)
                return -1;
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < width; j++) {
                    float f = float_at(g, o, t, i, j);
                    uint32_t u;
                    memcpy(&u, &f, sizeof u);
                    put_le(b, u, 4);
                }
            return 0;
        }
        if (n && width > (SIZE_MAX / n) / (RT_JSON_FLOAT_MAX + 2))
            return -1;
        if (rt_buf_reserve(b, n * width * (RT_JSON_FLOAT_MAX + 2) + 1) != 0)
            return -1;
        char *w = b->data + b->len;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < width; j++) {
                if (i || j) {
                    *w++ = ',';
                    *w++ = ' ';
                }
                w += rt_buf_json_float_text(float_at(g, o, t, i, j), w);
            }
        *w = '\0';
        b->len = (size_t)(w - b->data);
        return 0;
    }
    bool ints = is_int(t->kind);
    size_t bytes = t->kind == RT_V2_OUT_ALL_CLASS_IDS ? 4 : 8;
    for (size_t i = 0; i < n && !rc; i++)
        for (size_t j = 0; j < width; j++) {
            if (!bin && (i || j))
                rc |= rt_buf_append(b, ", ", 2);
            if (ints) {
                int64_t v = int_at(o, t, i, j);
                rc |= bin ? put_le(b, (uint64_t)v, bytes) : rt_buf_put_int(b, v);
            } else {
                const char *s = str_at(g, o, t->kind, i, j);
                rc |= put_str(b, s, strlen(s), bin);
            }
        }
    return rc;
}

/* The text of an answer's outputs that does not depend on the instances,
 * per requested output: what comes before the instance count
 * (`{"name": "probabilities", "datatype": "FP32", "shape": [`), what comes
 * between it and the elements (`, 2], "data": [`, or the binary size's
 * key), and for the outputs every instance shares (all_class_ids,
 * all_classes as JSON) one instance's elements. Built once per thread for
 * the last graph (by serial) and selection, not per answer. */
#define PIECES_TEXT 4096

typedef struct v2_pieces {
    uint64_t serial; /* 0: empty */
    rt_v2_sel sel[RT_V2_MAX_OUTPUTS];
    size_t n_sel;
    int usable; /* built (else every piece is written per answer) */
    char text[PIECES_TEXT];
    uint16_t head[RT_V2_MAX_OUTPUTS][2], mid[RT_V2_MAX_OUTPUTS][2]; /* offset, length */
    uint16_t row[RT_V2_MAX_OUTPUTS][2]; /* length 0: per instance */
} v2_pieces;

static _Thread_local v2_pieces pieces;

static int same_selection(const v2_pieces *pc, const rt_v2_req *q)
{
    if (pc->n_sel != q->n_sel)
        return 0;
    for (size_t k = 0; k < q->n_sel; k++)
        if (pc->sel[k].out != q->sel[k].out || pc->sel[k].binary != q->sel[k].binary ||
            pc->sel[k].classes != q->sel[k].classes)
            return 0;
    return 1;
}

/* The width and datatype output sel answers with. */
static size_t sel_width(const rt_v2_sel *sel, const rt_v2_output *t, const char **dt)
{
    *dt = sel->classes ? "BYTES" : t->datatype;
    if (sel->classes && (size_t)sel->classes < t->width)
        return (size_t)sel->classes;
    return t->width;
}

/* Appends b[from..) to the pieces' text as piece at; 0 when it does not fit. */
static int keep_piece(v2_pieces *pc, size_t *used, const rt_buf *b, size_t from, uint16_t at[2])
{
    size_t n = b->len - from;
    if (n > PIECES_TEXT - *used)
        return 0;
    memcpy(pc->text + *used, b->data + from, n);
    at[0] = (uint16_t)*used;
    at[1] = (uint16_t)n;
    *used += n;
    return 1;
}

/* Renders q's pieces into tmp and keeps them; 0 when they do not fit or
 * memory ran out. */
static int build_pieces(v2_pieces *pc, const rt_graph *g, const rt_v2_req *q,
                        const rt_outputs *o, rt_buf *tmp)
{
    size_t used = 0;
    rt_buf_reset(tmp);
    for (size_t k = 0; k < q->n_sel; k++) {
        const rt_v2_sel *sel = &q->sel[k];
        const rt_v2_output *t = &q->outs[sel->out];
        const char *dt;
        size_t width = sel_width(sel, t, &dt), from = tmp->len;
        int rc = rt_buf_puts(tmp, k ? ", {\"name\": " : "{\"name\": ");
        rc |= rt_buf_json_string(tmp, t->name, strlen(t->name));
        rc |= rt_buf_puts(tmp, ", \"datatype\": \"") | rt_buf_puts(tmp, dt);
        rc |= rt_buf_puts(tmp, "\", \"shape\": [");
        if (rc || !keep_piece(pc, &used, tmp, from, pc->head[k]))
            return 0;
        from = tmp->len;
        rc = t->flat && !sel->classes
                 ? 0
                 : rt_buf_append(tmp, ", ", 2) | rt_buf_put_int(tmp, (int64_t)width);
        rc |= rt_buf_puts(tmp, sel->binary ? "], \"parameters\": {\"binary_data_size\": "
                                           : "], \"data\": [");
        if (rc || !keep_piece(pc, &used, tmp, from, pc->mid[k]))
            return 0;
        pc->row[k][0] = pc->row[k][1] = 0;
        if (!sel->binary && !sel->classes &&
            (t->kind == RT_V2_OUT_ALL_CLASS_IDS || t->kind == RT_V2_OUT_ALL_CLASSES)) {
            rt_outputs one = *o;
            one.n = 1; /* these outputs read no instance's values */
            from = tmp->len;
            if (put_elements(tmp, g, &one, t, sel, width, NULL, NULL) != 0 ||
                !keep_piece(pc, &used, tmp, from, pc->row[k]))
                return 0;
        }
    }
    return 1;
}

/* The pieces for q, built when the cache holds another graph or selection. */
static const v2_pieces *pieces_for(const rt_graph *g, const rt_v2_req *q, const rt_outputs *o,
                                   rt_buf *tmp)
{
    v2_pieces *pc = &pieces;
    uint64_t serial = rt_graph_serial(g);
    if (pc->serial == serial && same_selection(pc, q))
        return pc;
    pc->serial = serial;
    memcpy(pc->sel, q->sel, sizeof pc->sel);
    pc->n_sel = q->n_sel;
    pc->usable = build_pieces(pc, g, q, o, tmp);
    return pc;
}

rt_status rt_v2_render(const rt_graph *g, rt_v2_req *q, const rt_outputs *o, rt_buf *out)
{
    size_t base = out->len;
    bool any_bin = false;
    rt_buf tmp;
    rt_buf_init(&tmp);
    unsigned char *taken = NULL;
    rt_buf_reset(&q->bin);
    q->answer_header = 0;
    int rc = rt_buf_puts(out, "{\"model_name\": ");
    rc |= rt_buf_json_string(out, q->name.data ? q->name.data : "", q->name.len);
    if (q->version >= 0) {
        rc |= rt_buf_puts(out, ", \"model_version\": \"");
        rc |= rt_buf_put_int(out, q->version) | rt_buf_append(out, "\"", 1);
    }
    if (q->id.len) {
        rc |= rt_buf_puts(out, ", \"id\": ");
        rc |= rt_buf_append(out, q->id.data, q->id.len);
    }
    rc |= rt_buf_puts(out, ", \"outputs\": [");
    const v2_pieces *pc = pieces_for(g, q, o, &tmp);
    for (size_t k = 0; k < q->n_sel && !rc; k++) {
        const rt_v2_sel *sel = &q->sel[k];
        const rt_v2_output *t = &q->outs[sel->out];
        const char *dt;
        size_t width = sel_width(sel, t, &dt);
        if (sel->classes) {
            unsigned char *more = realloc(taken, t->width ? t->width : 1);
            if (!more) {
                rc = -1;
                break;
            }
            taken = more;
        }
        if (pc->usable) {
            rc |= rt_buf_append(out, pc->text + pc->head[k][0], pc->head[k][1]);
            rc |= rt_buf_put_int(out, (int64_t)o->n);
            rc |= rt_buf_append(out, pc->text + pc->mid[k][0], pc->mid[k][1]);
        } else {
            /* appended piece by piece: no printf */
            rc |= rt_buf_puts(out, k ? ", {\"name\": " : "{\"name\": ");
            rc |= rt_buf_json_string(out, t->name, strlen(t->name));
            rc |= rt_buf_puts(out, ", \"datatype\": \"") | rt_buf_puts(out, dt);
            rc |= rt_buf_puts(out, "\", \"shape\": [") | rt_buf_put_int(out, (int64_t)o->n);
            if (!t->flat || sel->classes)
                rc |= rt_buf_append(out, ", ", 2) | rt_buf_put_int(out, (int64_t)width);
            rc |= rt_buf_puts(out, sel->binary ? "], \"parameters\": {\"binary_data_size\": "
                                               : "], \"data\": [");
        }
        if (sel->binary) {
            size_t before = q->bin.len;
            rc |= put_elements(&q->bin, g, o, t, sel, width, &tmp, taken);
            rc |= rt_buf_put_int(out, (int64_t)(q->bin.len - before)) | rt_buf_append(out, "}}", 2);
            any_bin = true;
        } else if (pc->usable && pc->row[k][1]) {
            for (size_t i = 0; i < o->n; i++) {
                if (i)
                    rc |= rt_buf_append(out, ", ", 2);
                rc |= rt_buf_append(out, pc->text + pc->row[k][0], pc->row[k][1]);
            }
            rc |= rt_buf_append(out, "]}", 2);
        } else {
            rc |= put_elements(out, g, o, t, sel, width, &tmp, taken);
            rc |= rt_buf_append(out, "]}", 2);
        }
    }
    rc |= rt_buf_puts(out, "]}");
    if (!rc && any_bin) {
        q->answer_header = out->len - base;
        rc |= rt_buf_append(out, q->bin.data ? q->bin.data : "", q->bin.len);
    }
    rt_buf_free(&tmp);
    free(taken);
    return rc ? RT_ERR_NOMEM : RT_OK;
}

/* ------------------------------------------------ the answer's bound */

/* A float's longest text (rt_buf_json_float_text) and its ", ". */
#define FLOAT_TEXT_BOUND (16 + 2)

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t mul_sat(size_t a, size_t b)
{
    return b && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

/* Bytes at most of s as a JSON string (each byte escaped as \u00XX). */
static size_t json_str_bound(size_t len)
{
    return add_sat(mul_sat(len, 6), 2);
}

/* The longest class name's length in bytes. */
static size_t longest_class(const rt_graph *g)
{
    size_t m = 0;
    for (size_t k = 0; k < g->n_classes; k++) {
        const char *s = rt_graph_class_name(g, k);
        size_t l = s ? strlen(s) : 0;
        m = l > m ? l : m;
    }
    return m;
}

/* Bytes at most one instance adds to output sel's elements. */
static size_t sel_bound(const rt_graph *g, const rt_v2_sel *sel, const rt_v2_output *t)
{
    const char *dt;
    size_t width = sel_width(sel, t, &dt), names = longest_class(out_graph(g, t));
    size_t each;
    if (sel->classes) /* "value:index:label", as a JSON string or 4 + bytes */
        each = add_sat(FLOAT_TEXT_BOUND + 2 + 1 + 20 + 1, json_str_bound(names));
    else if (is_float(t->kind))
        each = sel->binary ? 4 : FLOAT_TEXT_BOUND;
    else if (is_int(t->kind))
        each = sel->binary ? 8 : 20 + 2;
    else
        each = sel->binary ? add_sat(4, names) : add_sat(json_str_bound(names), 2);
    return mul_sat(width, each);
}

rt_status rt_v2_check_answer(const rt_graph *g, const rt_v2_req *q, size_t n,
                             const rt_json_params *p, rt_err *err)
{
    if (!p || !p->max_answer_bytes || !q || n == 0)
        return RT_OK;
    /* {"model_name": NAME, "model_version": "V", "id": ID, "outputs": [...]} */
    size_t fixed = add_sat(json_str_bound(q->name.len), 64 + 20 + 16 + q->id.len);
    size_t per = 0;
    for (size_t k = 0; k < q->n_sel; k++) {
        const rt_v2_output *t = &q->outs[q->sel[k].out];
        /* {"name": N, "datatype": "FP32", "shape": [n, w], "data": [...]} or
         * "parameters": {"binary_data_size": B}} */
        fixed = add_sat(fixed, add_sat(json_str_bound(strlen(t->name)), 96 + 3 * 20));
        per = add_sat(per, sel_bound(g, &q->sel[k], t));
    }
    return rt_json_answer_bound(n, per, fixed, p->max_answer_bytes, err);
}
