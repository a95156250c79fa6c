/*
 * rt_v2_replay.c — an Open Inference Protocol JSON body read again by the
 * layout of the last one, for the client that sends the same tensors every
 * time with other values.
 *
 * A v2 body spends most of its bytes on what does not change from one
 * request to the next: every input's name, shape and datatype, the
 * requested outputs, the parameters, even the white space a client's
 * serializer writes. When a body has been read by rt_v2_parse.c's full
 * parser without fault, its plan keeps that body's bytes and, for each
 * value that may vary (every element of every input's "data", and "id"),
 * where it stood and where it goes (instance, input). The next body is
 * first compared against the plan: the bytes between two values must be
 * the same bytes, and each value is read by the request reader
 * (rt_jr_scalar_at) with the full parser's rules (a number for FP32,
 * finite or a NaN/Infinity token; a string for BYTES and "id"). When all
 * of it matches, the body is the recorded one but for its values, so the
 * full parser would have come to the same tensors, outputs and settings:
 * those are taken from the plan and the values go into the batch. At the
 * first difference the replay gives up without a word (the batch and the
 * id are cleared) and the full parser reads the body, reporting any error
 * itself, and records a new plan when it succeeds.
 *
 * Only bodies without binary tensor data, in the features mode (one input
 * per raw feature), up to RT_V2_PLAN_MAX_BYTES are recorded. A plan belongs
 * to one rt_ctx (one thread) and one graph (by its serial number, which
 * survives a freed graph's address being reused) and one set of limits.
 */
#include "rt_serve.h"
#include "rt_v2_internal.h"
#include "rt_serve_limits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* A value of the recorded body: its bytes, and where it goes. */
typedef struct plan_slot {
    uint32_t at, end;  /* [at, end) in the recorded body */
    uint32_t inst;     /* instance */
    uint32_t input;    /* the graph's raw input */
    uint8_t kind;      /* RT_V2_SLOT_* */
} plan_slot;

struct rt_v2_plan {
    int valid;                 /* a body was recorded and kept */
    int broken;                /* this recording cannot be kept (too big, memory) */
    const rt_graph *g;
    uint64_t serial;           /* g's (rt_graph_serial) */
    size_t max_instances;      /* the limits it was read under */
    int max_depth;
    const Predictd__SignatureDef *sig;
    size_t n;                  /* instances */
    rt_v2_output outs[RT_V2_MAX_OUTPUTS];
    size_t n_outs;
    rt_v2_sel sel[RT_V2_MAX_OUTPUTS];
    size_t n_sel;
    char *body;                /* the recorded body */
    size_t len, cap;
    plan_slot *slots;          /* sorted by at */
    size_t n_slots, cap_slots;
};

rt_v2_plan *rt_v2_plan_new(void)
{
    return calloc(1, sizeof(rt_v2_plan));
}

void rt_v2_plan_free(rt_v2_plan *pl)
{
    if (!pl)
        return;
    free(pl->body);
    free(pl->slots);
    free(pl);
}

void rt_v2_plan_begin(rt_v2_plan *pl)
{
    pl->valid = 0;
    pl->broken = 0;
    pl->n_slots = 0;
}

void rt_v2_plan_slot(rt_v2_plan *pl, size_t at, size_t end, size_t inst, size_t input,
                     rt_v2_slot_kind kind)
{
    if (pl->broken)
        return;
    if (end > RT_V2_PLAN_MAX_BYTES || inst > UINT32_MAX || input > UINT32_MAX ||
        pl->n_slots >= RT_V2_PLAN_MAX_SLOTS ||
        rt_grow(&pl->slots, &pl->cap_slots, pl->n_slots + 1, sizeof *pl->slots) != 0) {
        pl->broken = 1;
        return;
    }
    pl->slots[pl->n_slots++] = (plan_slot){(uint32_t)at, (uint32_t)end, (uint32_t)inst,
                                           (uint32_t)input, (uint8_t)kind};
}

void rt_v2_plan_drop_data(rt_v2_plan *pl)
{
    size_t k = 0;
    for (size_t i = 0; i < pl->n_slots; i++)
        if (pl->slots[i].kind == RT_V2_SLOT_ID)
            pl->slots[k++] = pl->slots[i];
    pl->n_slots = k;
}

void rt_v2_plan_keep(rt_v2_plan *pl, const rt_graph *g, const rt_json_params *params,
                     const Predictd__SignatureDef *sig, const char *body, size_t len,
                     const rt_v2_req *q, size_t n)
{
    if (pl->broken || len > RT_V2_PLAN_MAX_BYTES)
        return;
    if (len > pl->cap) {
        char *b = realloc(pl->body, len);
        if (!b)
            return;
        pl->body = b;
        pl->cap = len;
    }
    memcpy(pl->body, body, len);
    pl->len = len;
    /* the values were recorded in the order they were pushed: each input's
     * in body order, the inputs in body order, "id" wherever it was read */
    for (size_t i = 1; i < pl->n_slots; i++) {
        plan_slot s = pl->slots[i];
        size_t j = i;
        for (; j > 0 && pl->slots[j - 1].at > s.at; j--)
            pl->slots[j] = pl->slots[j - 1];
        pl->slots[j] = s;
    }
    pl->g = g;
    pl->serial = rt_graph_serial(g);
    pl->max_instances = params->max_instances;
    pl->max_depth = params->max_depth;
    pl->sig = sig;
    pl->n = n;
    memcpy(pl->outs, q->outs, sizeof pl->outs);
    pl->n_outs = q->n_outs;
    memcpy(pl->sel, q->sel, sizeof pl->sel);
    pl->n_sel = q->n_sel;
    pl->valid = 1;
}

/* The same bytes at a and b (n of them): short runs without a call. */
static inline int same_bytes(const char *a, const char *b, size_t n)
{
    if (n <= 8) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return 0;
        return 1;
    }
    return memcmp(a, b, n) == 0;
}

/* One value (v, read at the slot) into the batch or the id. */
static int take(const plan_slot *s, const rt_jv *v, rt_ctx *c, rt_v2_req *q)
{
    switch (s->kind) {
    case RT_V2_SLOT_NUMBER:
        if (v->kind != RT_JV_NUMBER || (!v->token && !isfinite(v->num)))
            return 0;
        return rt_batch_push_num(c->batch, s->inst, s->input, v->num) == RT_OK;
    case RT_V2_SLOT_STRING:
        if (v->kind != RT_JV_STRING)
            return 0;
        return rt_batch_push_str(c->batch, s->inst, s->input, v->s, v->n) == RT_OK;
    default: /* an id over the limit is refused by the full parser */
        if (v->kind != RT_JV_STRING || v->n > RT_V2_MAX_ID_BYTES)
            return 0;
        return rt_buf_json_string(&q->id, v->s, v->n) == 0;
    }
}

/* The body against the plan; 1 when it matched and was read whole. */
static int replay(const rt_v2_plan *pl, const char *body, size_t len, rt_ctx *c, rt_v2_req *q)
{
    for (size_t i = 0; i < pl->n; i++)
        if (rt_batch_add(c->batch, NULL) != RT_OK)
            return 0;
    rt_err scratch;
    rt_jr r;
    rt_jr_init(&r, body, len, pl->max_depth, &c->text, &c->key, &scratch);
    size_t pos = 0, was = 0; /* here, and in the recorded body */
    int ok = 1;
    for (size_t i = 0; i < pl->n_slots && ok; i++) {
        const plan_slot *s = &pl->slots[i];
        size_t gap = s->at - was;
        rt_jv v;
        ok = len - pos >= gap && same_bytes(body + pos, pl->body + was, gap) &&
             rt_jr_scalar_at(&r, pos + gap, &v) == RT_OK && take(s, &v, c, q);
        pos = (size_t)(r.p - body);
        was = s->end;
    }
    ok = ok && len - pos == pl->len - was && same_bytes(body + pos, pl->body + was, len - pos);
    rt_jr_done(&r);
    return ok;
}

int rt_v2_plan_replay(const rt_v2_plan *pl, const rt_graph *g, const rt_json_params *params,
                      const char *body, size_t len, rt_ctx *c, rt_v2_req *q, rt_parsed *out)
{
    if (!pl || !pl->valid || pl->g != g || pl->serial != rt_graph_serial(g) ||
        pl->max_instances != params->max_instances || pl->max_depth != params->max_depth)
        return 0;
    if (!replay(pl, body, len, c, q)) {
        rt_batch_clear(c->batch);
        rt_buf_reset(&q->id);
        return 0;
    }
    memcpy(q->outs, pl->outs, sizeof q->outs);
    q->n_outs = pl->n_outs;
    memcpy(q->sel, pl->sel, sizeof q->sel);
    q->n_sel = pl->n_sel;
    out->sig = pl->sig;
    out->columnar = 0;
    out->n = rt_batch_size(c->batch);
    out->v2 = q;
    out->method = RT_METHOD_PREDICT; /* a v2 answer (out->v2) */
    out->head = -1;
    out->missing = (int)rt_batch_missing(c->batch);
    q->replays++;
    return 1;
}
