/*
 * rt_batch.c — a batch of raw instances: for each instance and raw input,
 * zero or more values (numbers or strings). Values of one cell are kept
 * contiguous in one growing array; strings are copied into a chunked arena
 * whose chunks never move, so rt_value.str stays valid until clear/free.
 * Beside each string value its rt_skey (trimmed text and fingerprint) is
 * kept, so the transform hashes every string once however many columns
 * read it.
 * Cleared batches keep their memory: after warm-up no call allocates.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"
#include "rt_model_limits.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK 65536u
#define BATCH_MAX_VALUES (UINT32_MAX / 2)

typedef struct chunk {
    struct chunk *next;
    size_t cap, used;
    char data[];
} chunk;

typedef struct cell {
    uint32_t start, count; /* into vals */
} cell;

struct rt_batch {
    const rt_graph *g;
    size_t n_inputs;
    size_t n, cap;        /* instances, capacity in instances */
    cell *cells;          /* cap x n_inputs */
    rt_value *vals;
    rt_skey *keys;        /* [vals_cap], parallel to vals */
    size_t n_vals, vals_cap;
    chunk *first, *cur;   /* arena */
    rt_missing_policy missing; /* what a missing input means */
};

rt_batch *rt_batch_new(const rt_graph *g)
{
    if (!g)
        return NULL;
    rt_batch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->g = g;
    b->n_inputs = g->n_inputs;
    return b;
}

void rt_batch_free(rt_batch *b)
{
    if (!b)
        return;
    chunk *c = b->first;
    while (c) {
        chunk *next = c->next;
        free(c);
        c = next;
    }
    free(b->cells);
    free(b->vals);
    free(b->keys);
    free(b);
}

void rt_batch_clear(rt_batch *b)
{
    if (!b)
        return;
    b->n = 0;
    b->n_vals = 0;
    b->missing = RT_MISSING_ERROR;
    for (chunk *c = b->first; c; c = c->next)
        c->used = 0;
    b->cur = b->first;
}

rt_status rt_batch_rebind(rt_batch *b, const rt_graph *g)
{
    if (!b || !g)
        return RT_ERR_INVALID;
    rt_batch_clear(b);
    if (g->n_inputs != b->n_inputs) {
        /* Cell rows change width: drop the cell array (it regrows). */
        free(b->cells);
        b->cells = NULL;
        b->cap = 0;
    }
    b->g = g;
    b->n_inputs = g->n_inputs;
    return RT_OK;
}

const rt_graph *rt_batch_graph(const rt_batch *b)
{
    return b ? b->g : NULL;
}

size_t rt_batch_size(const rt_batch *b)
{
    return b ? b->n : 0;
}

rt_status rt_batch_add(rt_batch *b, size_t *idx)
{
    if (!b)
        return RT_ERR_INVALID;
    if (b->n >= RT_BATCH_MAX_INSTANCES)
        return RT_ERR_LIMIT;
    size_t row = b->n_inputs ? b->n_inputs : 1; /* b->cap counts rows of cells */
    if (rt_grow(&b->cells, &b->cap, b->n + 1, row * sizeof *b->cells) != 0)
        return RT_ERR_NOMEM;
    if (b->n_inputs)
        memset(&b->cells[b->n * b->n_inputs], 0, b->n_inputs * sizeof(cell));
    if (idx)
        *idx = b->n;
    b->n++;
    return RT_OK;
}

void rt_batch_clear_instance(rt_batch *b, size_t idx)
{
    if (b && idx < b->n && b->n_inputs)
        memset(&b->cells[idx * b->n_inputs], 0, b->n_inputs * sizeof(cell));
}

static rt_status reserve_vals(rt_batch *b, size_t extra)
{
    if (b->n_vals + extra <= b->vals_cap)
        return RT_OK;
    if (b->n_vals + extra > BATCH_MAX_VALUES)
        return RT_ERR_LIMIT;
    size_t vcap = b->vals_cap, kcap = b->vals_cap;
    if (rt_grow(&b->vals, &vcap, b->n_vals + extra, sizeof *b->vals) != 0 ||
        rt_grow(&b->keys, &kcap, b->n_vals + extra, sizeof *b->keys) != 0)
        return RT_ERR_NOMEM; /* vals may have grown, keys not: vals_cap still fits both */
    b->vals_cap = vcap; /* == kcap: the same growth from the same capacity */
    return RT_OK;
}

/* Appends v to cell (idx, input), moving the cell's values to the end of the
 * array first when another cell was filled in between. */
static rt_status push_any(rt_batch *b, size_t idx, size_t input, rt_value v, rt_skey key)
{
    if (!b || idx >= b->n || input >= b->n_inputs)
        return RT_ERR_INVALID;
    cell *c = &b->cells[idx * b->n_inputs + input];
    bool at_end = c->count == 0 || (size_t)c->start + c->count == b->n_vals;
    rt_status st = reserve_vals(b, at_end ? 1 : (size_t)c->count + 1);
    if (st)
        return st;
    if (!at_end) {
        memmove(&b->vals[b->n_vals], &b->vals[c->start], c->count * sizeof(rt_value));
        memmove(&b->keys[b->n_vals], &b->keys[c->start], c->count * sizeof(rt_skey));
        c->start = (uint32_t)b->n_vals;
        b->n_vals += c->count;
    } else if (c->count == 0) {
        c->start = (uint32_t)b->n_vals;
    }
    b->keys[b->n_vals] = key;
    b->vals[b->n_vals++] = v;
    c->count++;
    return RT_OK;
}

/* push_any for the common case, inlined: a cell's first value, or the next
 * one of the cell filled last, with room in the arrays. */
static inline rt_status push(rt_batch *b, size_t idx, size_t input, rt_value v, rt_skey key)
{
    if (b && idx < b->n && input < b->n_inputs && b->n_vals < b->vals_cap &&
        b->n_vals < BATCH_MAX_VALUES) {
        cell *c = &b->cells[idx * b->n_inputs + input];
        if (c->count == 0)
            c->start = (uint32_t)b->n_vals;
        else if ((size_t)c->start + c->count != b->n_vals)
            return push_any(b, idx, input, v, key);
        b->keys[b->n_vals] = key;
        b->vals[b->n_vals++] = v;
        c->count++;
        return RT_OK;
    }
    return push_any(b, idx, input, v, key);
}

rt_status rt_batch_push_num(rt_batch *b, size_t idx, size_t input, double v)
{
    rt_value val = {.str = NULL, .len = 0, .num = v};
    rt_skey key = {0, RT_SKEY_NONE, 0};
    return push(b, idx, input, val, key);
}

/* Copies n bytes (+ NUL) into the arena. */
static char *arena_copy(rt_batch *b, const char *s, size_t n)
{
    if (n > SIZE_MAX / 2)
        return NULL;
    size_t need = n + 1;
    chunk *c = b->cur;
    while (c && c->cap - c->used < need) {
        /* Skip to a later (reused) chunk with room, or add one after cur. */
        c = c->next;
        if (c)
            c->used = 0;
    }
    if (!c) {
        size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = NULL;
        if (b->cur) {
            c->next = b->cur->next;
            b->cur->next = c;
        } else {
            c->next = b->first;
            b->first = c;
        }
    }
    b->cur = c;
    char *p = c->data + c->used;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    c->used += need;
    return p;
}

rt_status rt_batch_push_str(rt_batch *b, size_t idx, size_t input, const char *s, size_t len)
{
    if (!b || (!s && len))
        return RT_ERR_INVALID;
    if (idx >= b->n || input >= b->n_inputs)
        return RT_ERR_INVALID;
    char *p = arena_copy(b, s ? s : "", len);
    if (!p)
        return RT_ERR_NOMEM;
    rt_value val = {.str = p, .len = len, .num = 0};
    rt_skey key = {0, RT_SKEY_NONE, 0};
    if (len < RT_SKEY_NONE) {
        size_t tl = len;
        const char *t = b->g->def->trim_strings ? rt_buf_trim_span(p, &tl) : p;
        key.fp = rt_hash_fingerprint64(t, tl);
        key.skip = (uint32_t)(t - p);
        key.len = (uint32_t)tl;
    }
    return push(b, idx, input, val, key);
}

const rt_value *rt_batch_cell(const rt_batch *b, size_t idx, size_t input, size_t *n)
{
    if (!b || idx >= b->n || input >= b->n_inputs) {
        if (n)
            *n = 0;
        return NULL;
    }
    const cell *c = &b->cells[idx * b->n_inputs + input];
    if (n)
        *n = c->count;
    return c->count ? &b->vals[c->start] : NULL;
}

const rt_value *rt_batch_cell_keys(const rt_batch *b, size_t idx, size_t input, size_t *n,
                                   const rt_skey **keys)
{
    *keys = NULL;
    *n = 0;
    if (!b || idx >= b->n || input >= b->n_inputs)
        return NULL;
    const cell *c = &b->cells[idx * b->n_inputs + input];
    if (!c->count)
        return NULL;
    *n = c->count;
    *keys = &b->keys[c->start];
    return &b->vals[c->start];
}

void rt_batch_set_missing(rt_batch *b, rt_missing_policy policy)
{
    if (b)
        b->missing = policy;
}

rt_missing_policy rt_batch_missing(const rt_batch *b)
{
    return b ? b->missing : RT_MISSING_ERROR;
}

rt_status rt_batch_push_cell(rt_batch *b, size_t idx, long input, const Predictd__RawColumn *rc,
                           size_t field, const char *s, size_t len, rt_err *err)
{
    if (rc->dtype != PREDICTD__DTYPE__DT_STRING) {
        double v = 0;
        rt_status st = rt_raw_number(s, len, &v);
        if (st == RT_ERR_INVALID)
            return rt_raw_number_error(err, field, rc->name, s, len);
        return rt_batch_push_number(b, idx, input, rc, st, v);
    }
    size_t k = 0;
    while (k < len && (s[k] == ' ' || s[k] == '\t')) /* blanks, as rt_raw_number trims */
        k++;
    if (input < 0)
        return RT_OK; /* checked, but no feature column reads it */
    if (k == len) { /* empty: tf.decode_csv's record_defaults */
        if (!rc->has_default)
            return RT_OK; /* missing: the transform decides */
        const char *d = rc->default_string ? rc->default_string : "";
        return rt_batch_push_str(b, idx, (size_t)input, d, strlen(d));
    }
    return rt_batch_push_str(b, idx, (size_t)input, s, len);
}

rt_status rt_batch_push_number(rt_batch *b, size_t idx, long input, const Predictd__RawColumn *rc,
                             rt_status parsed, double v)
{
    if (input < 0)
        return RT_OK; /* checked, but no feature column reads it */
    if (parsed == RT_ERR_NOTFOUND) { /* empty: tf.decode_csv's record_defaults */
        if (!rc->has_default)
            return RT_OK; /* missing: the transform decides */
        return rt_batch_push_num(b, idx, (size_t)input, rc->default_number);
    }
    return rt_batch_push_num(b, idx, (size_t)input, v);
}
