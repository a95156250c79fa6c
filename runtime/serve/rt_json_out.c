/*
 * rt_json_out.c — answers in TensorFlow Serving's JSON, written straight
 * into an rt_buf (no DOM): predict (rows and columns), classify, regress and
 * the GET .../metadata body.
 *
 * Output names and what they hold per instance (TF's canned heads):
 *   all_class_ids [0..k)   all_classes ["...", ...]   class_ids [id]
 *   classes ["name"]       logistic [p] (binary)      logits [l, ...]
 *   probabilities [p, ...] predictions [v, ...] (regression)
 * A multi-label head (TF's MultiLabelHead) has logits and probabilities (a
 * sigmoid per class) and no class_ids / classes.
 * In a classification signature "classes" holds all class names and
 * "scores" the probabilities; in a regression signature "outputs" holds the
 * logistic (binary) or the predictions. A multi-head model's outputs are
 * each head's, named "<head>/<output>" (TF's MultiHead; a bare name is the
 * first head's). Keys appear in name order, as TF
 * Serving prints its output map. Floats are shortest round-trip text.
 */
#include "rt_serve.h"
#include "rt_serve_internal.h"
#include "rt_data_internal.h"
#include "rt_serve_limits.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    OUT_NONE = 0,
    OUT_ALL_CLASS_IDS,
    OUT_ALL_CLASSES,
    OUT_CLASS_IDS,
    OUT_CLASSES,
    OUT_LOGISTIC,
    OUT_LOGITS,
    OUT_PROBABILITIES,
    OUT_PREDICTIONS,
    OUT_ONNX = 64, /* + q: an ONNX graph's output q, under its own name */
} out_kind;

typedef struct out_item {
    const char *name;
    out_kind kind;
    size_t head; /* several heads: 1 + the head whose output it is; 0 otherwise */
} out_item;

/* The graph and outputs item it reads: a head's view and its outputs for a
 * multi-head model's item, g and o otherwise. */
static const rt_graph *item_graph(const rt_graph *g, const out_item *it)
{
    return it->head ? rt_graph_head_view(g, it->head - 1, NULL) : g;
}

static const rt_outputs *item_outputs(const rt_outputs *o, const out_item *it)
{
    return it->head && it->head <= o->n_heads ? &o->heads[it->head - 1] : o;
}

/* A multi-head model's output name: "<head>/<output>" is that head's output
 * (TF's MultiHead predict signature); a bare name is the first head's (TF
 * serves the first head by default). Returns the kind, *head = 1 + head. */
static out_kind kind_of(const rt_graph *g, int classify, int regress, const char *name);
static out_kind multi_kind_of(const rt_graph *g, int classify, int regress, const char *name,
                              size_t *head)
{
    const char *hn;
    for (size_t k = 0; rt_graph_head_view(g, k, &hn); k++) {
        size_t len = hn ? strlen(hn) : 0;
        if (len && strncmp(name, hn, len) == 0 && name[len] == '/') {
            *head = k + 1;
            return kind_of(rt_graph_head_view(g, k, NULL), classify, regress, name + len + 1);
        }
    }
    *head = 1;
    return kind_of(rt_graph_head_view(g, 0, NULL), classify, regress, name);
}


static int method_is(const Predictd__SignatureDef *sig, const char *what)
{
    return sig && sig->method_name && strstr(sig->method_name, what) != NULL;
}

/* What output `name` of signature sig holds for this model (OUT_NONE when the
 * head does not produce it). */
/* The output that name is ("all_class_ids" ... "predictions"), or OUT_NONE:
 * one strcmp (a request looks its outputs up on every answer). */
static out_kind kind_by_name(const char *name)
{
    switch (name[0]) {
    case 'a':
        return !strcmp(name, "all_class_ids") ? OUT_ALL_CLASS_IDS
               : !strcmp(name, "all_classes") ? OUT_ALL_CLASSES
                                              : OUT_NONE;
    case 'c':
        return !strcmp(name, "class_ids") ? OUT_CLASS_IDS
               : !strcmp(name, "classes") ? OUT_CLASSES
                                          : OUT_NONE;
    case 'l':
        return !strcmp(name, "logistic") ? OUT_LOGISTIC
               : !strcmp(name, "logits") ? OUT_LOGITS
                                         : OUT_NONE;
    case 'p':
        return !strcmp(name, "probabilities") ? OUT_PROBABILITIES
               : !strcmp(name, "predictions") ? OUT_PREDICTIONS
                                              : OUT_NONE;
    default: return OUT_NONE;
    }
}

static out_kind kind_of(const rt_graph *g, int classify, int regress, const char *name)
{
    int binary = g->head == PREDICTD__HEAD_TYPE__HEAD_BINARY;
    int regression = g->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    out_kind k = OUT_NONE;
    if (classify && strcmp(name, "classes") == 0)
        k = OUT_ALL_CLASSES;
    else if (classify && strcmp(name, "scores") == 0)
        k = OUT_PROBABILITIES;
    else if (regress && strcmp(name, "outputs") == 0)
        k = regression ? OUT_PREDICTIONS : OUT_LOGISTIC;
    else
        k = kind_by_name(name);
    /* Only what this head computes. */
    if (regression && k != OUT_PREDICTIONS && k != OUT_LOGITS)
        return OUT_NONE;
    if (!regression && k == OUT_PREDICTIONS)
        return OUT_NONE;
    if (!binary && k == OUT_LOGISTIC)
        return OUT_NONE;
    /* TF's MultiLabelHead predicts no single class */
    if (g->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL &&
        (k == OUT_CLASS_IDS || k == OUT_CLASSES))
        return OUT_NONE;
    return k;
}

static int cmp_item(const void *a, const void *b)
{
    return strcmp(((const out_item *)a)->name, ((const out_item *)b)->name);
}

/* The outputs to render, sorted by name; returns their count. */
static size_t list_outputs(const rt_graph *g, const Predictd__SignatureDef *sig,
                           out_item *items)
{
    size_t n = 0;
    int classify = method_is(sig, "classify"), regress = method_is(sig, "regress");
    /* several heads: a head's own signature names its outputs unprefixed */
    long own = rt_json_signature_head(g, sig);
    if (sig && sig->n_outputs > 0) {
        for (size_t k = 0; k < sig->n_outputs && n < RT_JSON_MAX_OUTPUTS; k++) {
            const char *name = sig->outputs[k]->name;
            if (!name)
                continue;
            size_t head = 0;
            out_kind kind =
                own >= 0 ? (head = (size_t)own + 1,
                            kind_of(rt_graph_head_view(g, (size_t)own, NULL), classify, regress,
                                    name))
                : rt_graph_head_view(g, 0, NULL) ? multi_kind_of(g, classify, regress, name, &head)
                                                 : kind_of(g, classify, regress, name);
            if (kind != OUT_NONE)
                items[n++] = (out_item){name, kind, head};
        }
    } else {
        static const char *const all[] = {"all_class_ids", "all_classes", "class_ids",
                                          "classes", "logistic", "logits", "probabilities",
                                          "predictions"};
        /* no signature: a multi-head model's first head, unprefixed */
        const rt_graph *first = rt_graph_head_view(g, 0, NULL);
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
            out_kind kind = kind_of(first ? first : g, 0, 0, all[k]);
            if (kind != OUT_NONE)
                items[n++] = (out_item){all[k], kind, first ? 1 : 0};
        }
    }
    /* an ONNX graph's outputs under their own names, beside TF's (a name TF's
     * outputs already use stays theirs) */
    rt_onnx_output oo;
    size_t n_onnx = classify || regress ? 0 : rt_onnx_run_output(g, 0, NULL);
    for (size_t q = 0; q < n_onnx && n < RT_JSON_MAX_OUTPUTS && q < 64; q++) {
        rt_onnx_run_output(g, q, &oo);
        bool taken = oo.kind == RT_ONNX_OUT_NONE;
        for (size_t k = 0; k < n && !taken; k++)
            taken = strcmp(items[k].name, oo.name) == 0;
        if (!taken)
            items[n++] = (out_item){oo.name, (out_kind)(OUT_ONNX + (int)q), 0};
    }
    /* a handful of names: insertion sort (stable, no qsort call) */
    for (size_t i = 1; i < n; i++) {
        out_item t = items[i];
        size_t j = i;
        for (; j > 0 && cmp_item(&items[j - 1], &t) > 0; j--)
            items[j] = items[j - 1];
        items[j] = t;
    }
    return n;
}

/* The last few floats written and their text. An answer repeats values (a
 * binary head's logistic is its probabilities' second) and a float's text
 * depends only on its bits, so a repeated one is copied, not worked out. */
#define MEMO_SLOTS 4
#define MEMO_TEXT 24 /* longer texts are not kept (none is: at most 16 bytes) */

typedef struct float_memo {
    uint32_t bits[MEMO_SLOTS];
    size_t len[MEMO_SLOTS]; /* 0: empty */
    size_t next;
    char text[MEMO_SLOTS][MEMO_TEXT];
} float_memo;

static void memo_init(float_memo *m)
{
    memset(m, 0, sizeof *m);
}

/* v's text into o (RT_JSON_FLOAT_MAX bytes of room), through memo when
 * there is one; returns its length. */
static size_t float_text(float v, char *o, float_memo *m)
{
    if (!m)
        return rt_buf_json_float_text(v, o);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    for (size_t s = 0; s < MEMO_SLOTS; s++) {
        if (m->bits[s] == bits && m->len[s]) {
            memcpy(o, m->text[s], MEMO_TEXT); /* room: RT_JSON_FLOAT_MAX */
            return m->len[s];
        }
    }
    size_t n = rt_buf_json_float_text(v, o);
    if (n <= MEMO_TEXT) {
        size_t s = m->next++ % MEMO_SLOTS;
        m->bits[s] = bits;
        m->len[s] = n;
        memcpy(m->text[s], o, n);
    }
    return n;
}

/* Room [v0, v1, ...] of n floats may take. */
#define FLOATS_ROOM(n) (2 + (n) * (RT_JSON_FLOAT_MAX + 2))

/* Writes [v0, v1, ...] at o (FLOATS_ROOM(n) bytes of room); returns the end. */
static char *write_floats(char *o, const float *v, size_t n, float_memo *memo)
{
    *o++ = '[';
    for (size_t k = 0; k < n; k++) {
        if (k) {
            *o++ = ',';
            *o++ = ' ';
        }
        o += float_text(v[k], o, memo);
    }
    *o++ = ']';
    return o;
}

/* [v0, v1, ...]: room for all of it reserved once, each float's text
 * written in place. */
static int put_floats(rt_buf *b, const float *v, size_t n, float_memo *memo)
{
    if (n > (SIZE_MAX - 2) / (RT_JSON_FLOAT_MAX + 2) || rt_buf_reserve(b, FLOATS_ROOM(n)) != 0)
        return -1;
    char *o = write_floats(b->data + b->len, v, n, memo);
    *o = '\0';
    b->len = (size_t)(o - b->data);
    return 0;
}

/* How many floats output `kind` holds per instance (0: not a float output). */
static size_t float_width(const rt_graph *g, out_kind kind)
{
    switch (kind) {
    case OUT_LOGISTIC: return 1;
    case OUT_LOGITS:
    case OUT_PREDICTIONS: return g->logits_dim;
    case OUT_PROBABILITIES: return g->n_classes;
    default: return 0;
    }
}

/* The floats of output `kind` for instance i (*n of them), or NULL when
 * the kind is not a float output. */
static const float *float_span(const rt_graph *g, const rt_outputs *o, out_kind kind, size_t i,
                               size_t *n)
{
    *n = float_width(g, kind);
    switch (kind) {
    case OUT_LOGISTIC: return o->logistic + i;
    case OUT_LOGITS: return o->logits + i * *n;
    case OUT_PROBABILITIES: return o->probabilities + i * *n;
    case OUT_PREDICTIONS: return o->predictions + i * *n;
    default: return NULL;
    }
}

static int put_class_name(rt_buf *b, const rt_graph *g, size_t k)
{
    const char *s = rt_graph_class_name(g, k);
    if (!s)
        s = "";
    return rt_buf_json_string(b, s, strlen(s));
}

static int put_label(rt_buf *b, const char *s, bool as_number)
{
    if (!s)
        s = "";
    size_t k = s[0] == '-', n = strlen(s);
    while (as_number && k < n && s[k] >= '0' && s[k] <= '9')
        k++;
    /* an int64 label as a number, unless serving.json renamed it */
    return as_number && n && k == n && s[n - 1] != '-' ? rt_buf_puts(b, s)
                                                       : rt_buf_json_string(b, s, n);
}

/* An ONNX graph's output q for instance i (rt_onnx_run_output). */
static int put_onnx(rt_buf *b, const rt_graph *g, const rt_outputs *o, size_t q, size_t i,
                    float_memo *memo)
{
    rt_onnx_output oo;
    size_t nc = g->n_classes;
    int rc = 0;
    if (q >= rt_onnx_run_output(g, q, &oo))
        return rt_buf_puts(b, "null");
    switch (oo.kind) {
    case RT_ONNX_OUT_FLOATS:
        return put_floats(b, o->predictions + i * g->logits_dim + oo.off, oo.width, memo);
    case RT_ONNX_OUT_SCORES:
        return put_floats(b, o->probabilities + i * nc, nc, memo);
    case RT_ONNX_OUT_LABEL:
        return put_label(b, rt_graph_class_name(g, (size_t)o->class_ids[i]), oo.labels_int);
    case RT_ONNX_OUT_MAP:
        rc |= rt_buf_puts(b, "{");
        for (size_t k = 0; k < nc && k < oo.n_names; k++) {
            if (k)
                rc |= rt_buf_puts(b, ", ");
            rc |= rt_buf_json_string(b, oo.names[k], strlen(oo.names[k])); /* keys: strings */
            rc |= rt_buf_puts(b, ": ");
            rc |= rt_buf_json_float(b, o->probabilities[i * nc + k]);
        }
        return rc | rt_buf_puts(b, "}");
    default:
        return rt_buf_puts(b, "null");
    }
}

/* Bytes at most of an ONNX graph's output q for one instance. */
static size_t onnx_bound(const rt_graph *g, size_t q, size_t name_longest)
{
    rt_onnx_output oo;
    size_t nc = g->n_classes;
    if (q >= rt_onnx_run_output(g, q, &oo))
        return 4;
    switch (oo.kind) {
    case RT_ONNX_OUT_FLOATS: return 2 + oo.width * 18;
    case RT_ONNX_OUT_SCORES: return 2 + nc * 18;
    case RT_ONNX_OUT_LABEL: return 2 + name_longest;
    case RT_ONNX_OUT_MAP: {
        size_t b = 2;
        for (size_t k = 0; k < oo.n_names; k++)
            b += 6 * strlen(oo.names[k]) + 2 + 18 + 4;
        return b;
    }
    default: return 4;
    }
}

/* Writes the value of output `kind` for instance i (floats through memo,
 * which may be NULL). */
static int put_value(rt_buf *b, const rt_graph *g, const rt_outputs *o, out_kind kind, size_t i,
                     float_memo *memo)
{
    size_t nc = g->n_classes;
    int rc = 0;
    switch (kind) {
    case OUT_ALL_CLASS_IDS:
        rc |= rt_buf_puts(b, "[");
        for (size_t k = 0; k < nc; k++) {
            if (k)
                rc |= rt_buf_append(b, ", ", 2);
            rc |= rt_buf_put_int(b, (int64_t)k);
        }
        return rc | rt_buf_puts(b, "]");
    case OUT_ALL_CLASSES:
        rc |= rt_buf_puts(b, "[");
        for (size_t k = 0; k < nc; k++) {
            if (k)
                rc |= rt_buf_puts(b, ", ");
            rc |= put_class_name(b, g, k);
        }
        return rc | rt_buf_puts(b, "]");
    case OUT_CLASS_IDS:
        rc |= rt_buf_append(b, "[", 1);
        rc |= rt_buf_put_int(b, o->class_ids[i]);
        return rc | rt_buf_append(b, "]", 1);
    case OUT_CLASSES:
        rc |= rt_buf_puts(b, "[");
        rc |= put_class_name(b, g, (size_t)o->class_ids[i]);
        return rc | rt_buf_puts(b, "]");
    case OUT_LOGISTIC:
    case OUT_LOGITS:
    case OUT_PROBABILITIES:
    case OUT_PREDICTIONS: {
        size_t cnt;
        const float *v = float_span(g, o, kind, i, &cnt);
        return put_floats(b, v, cnt, memo);
    }
    default:
        if (kind >= OUT_ONNX)
            return put_onnx(b, g, o, (size_t)(kind - OUT_ONNX), i, memo);
        return rt_buf_puts(b, "null");
    }
}

/* The text of a rows answer that is the same for every instance: each
 * output's key ("name": ) and, for the outputs every instance shares
 * (all_class_ids, all_classes), the whole value. */
#define TMPL_TEXT 2048

#define TMPL_CLASSES 16 /* class_ids / classes of each class rendered once, up to this many */

typedef struct row_tmpl {
    char text[TMPL_TEXT];
    size_t used;
    size_t key_off[RT_JSON_MAX_OUTPUTS], key_len[RT_JSON_MAX_OUTPUTS];
    size_t val_off[RT_JSON_MAX_OUTPUTS], val_len[RT_JSON_MAX_OUTPUTS]; /* val_len 0: per instance */
    /* class_ids / classes: the value for class c, when per_class[k] */
    int per_class[RT_JSON_MAX_OUTPUTS];
    uint16_t cls_off[RT_JSON_MAX_OUTPUTS][TMPL_CLASSES], cls_len[RT_JSON_MAX_OUTPUTS][TMPL_CLASSES];
    /* direct: every per-instance value is floats or a class's template, so
     * an instance takes at most `room` bytes and is written in place */
    int direct;
    size_t room;
} row_tmpl;

/* Moves out[mark..len) into the template (out's length goes back to mark);
 * 0 when it does not fit. */
static int tmpl_take(row_tmpl *t, rt_buf *out, size_t mark, size_t *off, size_t *len)
{
    size_t n = out->len - mark;
    if (n > TMPL_TEXT - t->used) {
        out->len = mark;
        return 0;
    }
    memcpy(t->text + t->used, out->data + mark, n);
    *off = t->used;
    *len = n;
    t->used += n;
    out->len = mark;
    out->data[mark] = '\0';
    return 1;
}

/* Builds the template, rendering each piece once at the end of out (and
 * taking it back): no allocation. 0 = too large, render the plain way. */
static int tmpl_build_pieces(row_tmpl *t, const rt_graph *g, const rt_outputs *o, const out_item *items,
                      size_t n_items, rt_buf *out)
{
    t->used = 0;
    t->direct = 1;
    t->room = 4; /* ", {" and "}" */
    size_t mark = out->len;
    for (size_t k = 0; k < n_items; k++) {
        int rc = k ? rt_buf_append(out, ", ", 2) : 0;
        rc |= rt_buf_json_string(out, items[k].name, strlen(items[k].name));
        rc |= rt_buf_append(out, ": ", 2);
        if (rc || !tmpl_take(t, out, mark, &t->key_off[k], &t->key_len[k]))
            return 0;
        t->val_len[k] = 0;
        t->per_class[k] = 0;
        if (items[k].kind == OUT_ALL_CLASS_IDS || items[k].kind == OUT_ALL_CLASSES) {
            if (put_value(out, g, o, items[k].kind, 0, NULL) != 0 ||
                !tmpl_take(t, out, mark, &t->val_off[k], &t->val_len[k]))
                return 0;
        } else if ((items[k].kind == OUT_CLASS_IDS || items[k].kind == OUT_CLASSES) &&
                   g->n_classes <= TMPL_CLASSES) {
            /* what put_value writes for an instance of class c */
            for (size_t c = 0; c < g->n_classes; c++) {
                int crc = rt_buf_append(out, "[", 1);
                crc |= items[k].kind == OUT_CLASS_IDS ? rt_buf_put_int(out, (int64_t)c)
                                                      : put_class_name(out, g, c);
                crc |= rt_buf_append(out, "]", 1);
                size_t off, len;
                if (crc || !tmpl_take(t, out, mark, &off, &len))
                    return 0;
                t->cls_off[k][c] = (uint16_t)off; /* below TMPL_TEXT */
                t->cls_len[k][c] = (uint16_t)len;
            }
            t->per_class[k] = 1;
        }
        size_t cnt = 0, longest = 0;
        t->room += t->key_len[k] + t->val_len[k];
        if (t->per_class[k]) {
            for (size_t c = 0; c < g->n_classes; c++)
                longest = t->cls_len[k][c] > longest ? t->cls_len[k][c] : longest;
            t->room += longest;
        } else if (!t->val_len[k]) {
            /* the width alone: the template may be built for an answer of no
             * instances, whose outputs hold no arrays */
            if ((cnt = float_width(g, items[k].kind)) > 0 && cnt < 4096)
                t->room += FLOATS_ROOM(cnt);
            else
                t->direct = 0;
        }
    }
    return 1;
}

/* tmpl_build_pieces; when it gives up (too large, or out of memory midway
 * through a piece), out is as it was: the plain way starts clean. */
static int tmpl_build(row_tmpl *t, const rt_graph *g, const rt_outputs *o, const out_item *items,
                      size_t n_items, rt_buf *out)
{
    size_t mark = out->len;
    int ok = tmpl_build_pieces(t, g, o, items, n_items, out);
    if (!ok && out->data) {
        out->len = mark;
        out->data[mark] = '\0';
    }
    return ok;
}

/* One instance of a direct template (t->direct) written in place; 0 when
 * its class is not one the template holds (the caller writes it then). */
static int tmpl_write(const row_tmpl *t, const rt_graph *g, const rt_outputs *o,
                      const out_item *items, size_t n_items, size_t i, float_memo *memo,
                      rt_buf *out)
{
    size_t c = SIZE_MAX;
    for (size_t k = 0; k < n_items; k++) {
        if (t->per_class[k]) {
            c = (size_t)o->class_ids[i];
            if (c >= g->n_classes)
                return 0;
        }
    }
    char *w = out->data + out->len;
    if (i) {
        memcpy(w, ", {", 3);
        w += 3;
    } else {
        *w++ = '{';
    }
    for (size_t k = 0; k < n_items; k++) {
        memcpy(w, t->text + t->key_off[k], t->key_len[k]);
        w += t->key_len[k];
        if (t->val_len[k]) {
            memcpy(w, t->text + t->val_off[k], t->val_len[k]);
            w += t->val_len[k];
        } else if (t->per_class[k]) {
            memcpy(w, t->text + t->cls_off[k][c], t->cls_len[k][c]);
            w += t->cls_len[k][c];
        } else {
            size_t cnt;
            const float *v = float_span(g, o, items[k].kind, i, &cnt);
            w = write_floats(w, v, cnt, memo);
        }
    }
    *w++ = '}';
    *w = '\0';
    out->len = (size_t)(w - out->data);
    return 1;
}

/* The outputs and row template of the last graph and signature this thread
 * answered for: a template costs about what one row does, so it is built
 * once per model and thread, not per answer. The graph's serial number is
 * the key (a new graph at a freed one's address has another); names point
 * into the graph's ModelDef and are read only while the key matches. */
typedef struct tmpl_cache {
    uint64_t serial; /* 0: empty */
    const Predictd__SignatureDef *sig;
    out_item items[RT_JSON_MAX_OUTPUTS];
    size_t n_items;
    int usable; /* the template was built (else the rows are written the plain way) */
    row_tmpl t;
} tmpl_cache;

static _Thread_local tmpl_cache cached;

/* The cache for g and sig, filled when it holds another: items listed and,
 * for answers of several outputs, the template built (used by rows). */
static const tmpl_cache *outputs_of(const rt_graph *g, const Predictd__SignatureDef *sig,
                                    const rt_outputs *o, rt_buf *out)
{
    tmpl_cache *tc = &cached;
    uint64_t serial = rt_graph_serial(g);
    if (tc->serial == serial && tc->sig == sig)
        return tc;
    tc->serial = serial;
    tc->sig = sig;
    tc->n_items = list_outputs(g, sig, tc->items);
    /* not built (too large, or out of memory): the plain way, for this model */
    tc->usable = tc->n_items > 1 && !rt_graph_head_view(g, 0, NULL) && tmpl_build(&tc->t, g, o, tc->items, tc->n_items, out);
    return tc;
}

rt_status rt_json_render_predict(const rt_graph *g, const Predictd__SignatureDef *sig,
                                 const rt_outputs *o, int columnar, rt_buf *out)
{
    const tmpl_cache *tc = outputs_of(g, sig, o, out);
    const out_item *items = tc->items;
    size_t n_items = tc->n_items;
    size_t n = o->n;
    int rc = 0;
    if (!columnar && tc->usable) {
        const row_tmpl *tp = &tc->t;
        float_memo memo;
        memo_init(&memo);
        rc |= rt_buf_append(out, "{\"predictions\": [", 17);
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (tp->direct) {
                if (rt_buf_reserve(out, tp->room) != 0) {
                    rc = -1;
                    break;
                }
                if (tmpl_write(tp, g, o, items, n_items, i, &memo, out))
                    continue;
            }
            rc |= rt_buf_append(out, i ? ", {" : "{", i ? 3 : 1);
            for (size_t k = 0; k < n_items; k++) {
                rc |= rt_buf_append(out, tp->text + tp->key_off[k], tp->key_len[k]);
                size_t c = tp->per_class[k] ? (size_t)o->class_ids[i] : SIZE_MAX;
                if (tp->val_len[k])
                    rc |= rt_buf_append(out, tp->text + tp->val_off[k], tp->val_len[k]);
                else if (c < g->n_classes)
                    rc |= rt_buf_append(out, tp->text + tp->cls_off[k][c], tp->cls_len[k][c]);
                else
                    rc |= put_value(out, g, o, items[k].kind, i, &memo);
            }
            rc |= rt_buf_append(out, "}", 1);
        }
        rc |= rt_buf_append(out, "]}", 2);
        return rc ? RT_ERR_NOMEM : RT_OK;
    }
    if (!columnar) {
        rc |= rt_buf_puts(out, "{\"predictions\": [");
        for (size_t i = 0; i < n; i++) {
            if (i)
                rc |= rt_buf_puts(out, ", ");
            if (n_items == 1) {
                rc |= put_value(out, item_graph(g, &items[0]), item_outputs(o, &items[0]), items[0].kind, i, NULL);
                continue;
            }
            rc |= rt_buf_puts(out, "{");
            for (size_t k = 0; k < n_items; k++) {
                if (k)
                    rc |= rt_buf_puts(out, ", ");
                rc |= rt_buf_json_string(out, items[k].name, strlen(items[k].name));
                rc |= rt_buf_puts(out, ": ");
                rc |= put_value(out, item_graph(g, &items[k]), item_outputs(o, &items[k]), items[k].kind, i, NULL);
            }
            rc |= rt_buf_puts(out, "}");
        }
        rc |= rt_buf_puts(out, "]}");
    } else {
        rc |= rt_buf_puts(out, n_items == 1 ? "{\"outputs\": " : "{\"outputs\": {");
        for (size_t k = 0; k < n_items; k++) {
            if (n_items != 1) {
                if (k)
                    rc |= rt_buf_puts(out, ", ");
                rc |= rt_buf_json_string(out, items[k].name, strlen(items[k].name));
                rc |= rt_buf_puts(out, ": ");
            }
            rc |= rt_buf_puts(out, "[");
            for (size_t i = 0; i < n; i++) {
                if (i)
                    rc |= rt_buf_puts(out, ", ");
                rc |= put_value(out, item_graph(g, &items[k]), item_outputs(o, &items[k]), items[k].kind, i, NULL);
            }
            rc |= rt_buf_puts(out, "]");
        }
        rc |= rt_buf_puts(out, n_items == 1 ? "}" : "}}");
    }
    return rc ? RT_ERR_NOMEM : RT_OK;
}

rt_status rt_json_render_classify(const rt_graph *g, const rt_outputs *o, rt_buf *out)
{
    int rc = rt_buf_puts(out, "{\"results\": [");
    for (size_t i = 0; i < o->n; i++) {
        rc |= rt_buf_puts(out, i ? ", [" : "[");
        for (size_t k = 0; k < g->n_classes; k++) {
            rc |= rt_buf_puts(out, k ? ", [" : "[");
            rc |= put_class_name(out, g, k);
            rc |= rt_buf_puts(out, ", ");
            rc |= rt_buf_json_float(out, o->probabilities[i * g->n_classes + k]);
            rc |= rt_buf_puts(out, "]");
        }
        rc |= rt_buf_puts(out, "]");
    }
    rc |= rt_buf_puts(out, "]}");
    return rc ? RT_ERR_NOMEM : RT_OK;
}

rt_status rt_json_render_regress(const rt_graph *g, const rt_outputs *o, rt_buf *out,
                                 rt_err *err)
{
    int regression = g->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    if (!regression && g->head != PREDICTD__HEAD_TYPE__HEAD_BINARY)
        return rt_err_set(err, RT_ERR_INVALID, "regress: needs a regressor or a binary "
                          "classifier");
    size_t ld = g->logits_dim;
    int rc = rt_buf_puts(out, "{\"results\": [");
    for (size_t i = 0; i < o->n; i++) {
        if (i)
            rc |= rt_buf_puts(out, ", ");
        if (!regression)
            rc |= rt_buf_json_float(out, o->logistic[i]);
        else if (ld == 1)
            rc |= rt_buf_json_float(out, o->predictions[i]);
        else
            rc |= put_floats(out, o->predictions + i * ld, ld, NULL);
    }
    rc |= rt_buf_puts(out, "]}");
    return rc ? rt_err_set(err, RT_ERR_NOMEM, "answer: out of memory") : RT_OK;
}

/* ------------------------------------------------------ the answer's size */

/* The longest text of one float (rt_buf_json_float_text: 9 significant digits,
 * sign, point and exponent) plus its ", ". */
#define FLOAT_BOUND (16 + 2)

/* a + b, a * b, saturating at SIZE_MAX. */
static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t sat_mul(size_t a, size_t b)
{
    return b && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

/* Bytes at most of class k's name as a JSON string: the quotes, and each
 * byte as itself or, when JSON escapes it, as \u00XX. */
static size_t name_bound(const rt_graph *g, size_t k)
{
    const unsigned char *s = (const unsigned char *)rt_graph_class_name(g, k);
    size_t n = 2;
    for (; s && *s; s++)
        n += *s < 0x20 || *s == '"' || *s == '\\' || *s == 0x7f ? 6 : 1;
    return n;
}

/* Decimal digits of v. */
static size_t digits(size_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Bytes at most of one instance's value of output kind. */
static size_t value_bound(const rt_graph *g, out_kind kind)
{
    size_t nc = g->n_classes, ld = g->logits_dim, b = 2, longest = 0;
    switch (kind) {
    case OUT_ALL_CLASS_IDS: return 2 + nc * (digits(nc) + 2);
    case OUT_ALL_CLASSES:
        for (size_t k = 0; k < nc; k++)
            b = sat_add(b, name_bound(g, k) + 2);
        return b;
    case OUT_CLASS_IDS: return 2 + 20;
    case OUT_CLASSES:
        for (size_t k = 0; k < nc; k++)
            longest = name_bound(g, k) > longest ? name_bound(g, k) : longest;
        return 2 + longest;
    case OUT_LOGISTIC: return 2 + FLOAT_BOUND;
    case OUT_LOGITS:
    case OUT_PREDICTIONS: return 2 + ld * FLOAT_BOUND;
    case OUT_PROBABILITIES: return 2 + nc * FLOAT_BOUND;
    default:
        if (kind >= OUT_ONNX) {
            for (size_t k = 0; k < nc; k++)
                longest = name_bound(g, k) > longest ? name_bound(g, k) : longest;
            return onnx_bound(g, (size_t)(kind - OUT_ONNX), longest);
        }
        return 4;
    }
}

/* Bytes at most of one instance's answer to method with signature sig. */
static size_t answer_per_instance(const rt_graph *g, const Predictd__SignatureDef *sig,
                                  rt_method method)
{
    size_t per = 4; /* "{", "}" or "[", "]", and ", " */
    if (method == RT_METHOD_CLASSIFY) {
        for (size_t k = 0; k < g->n_classes; k++)
            per = sat_add(per, 4 + name_bound(g, k) + FLOAT_BOUND + 2);
    } else if (method == RT_METHOD_REGRESS) {
        per = sat_add(per, value_bound(g, OUT_PREDICTIONS));
    } else {
        out_item items[RT_JSON_MAX_OUTPUTS];
        size_t n_items = list_outputs(g, sig, items);
        for (size_t k = 0; k < n_items; k++)
            per = sat_add(per, sat_add(strlen(items[k].name) + 6,
                                       value_bound(item_graph(g, &items[k]), items[k].kind)));
    }
    return per;
}

/* answer_per_instance of the last graph (by its serial number: a head view,
 * serial 0, is not kept), signature and method this thread checked: the
 * same for every request to one model, so worked out once. */
static _Thread_local struct {
    uint64_t serial;
    const Predictd__SignatureDef *sig;
    rt_method method;
    size_t per;
} last_bound;

rt_status rt_json_check_answer(const rt_graph *g, const Predictd__SignatureDef *sig,
                               rt_method method, size_t n, const rt_json_params *p,
                               rt_err *err)
{
    if (!p || !p->max_answer_bytes || n == 0)
        return RT_OK;
    uint64_t serial = rt_graph_serial(g);
    size_t per;
    if (serial && last_bound.serial == serial && last_bound.sig == sig &&
        last_bound.method == method) {
        per = last_bound.per;
    } else {
        per = answer_per_instance(g, sig, method);
        if (serial) {
            last_bound.serial = serial;
            last_bound.sig = sig;
            last_bound.method = method;
            last_bound.per = per;
        }
    }
    return rt_json_answer_bound(n, per, 64, p->max_answer_bytes, err);
}

rt_status rt_json_answer_bound(size_t n, size_t per, size_t fixed, size_t limit, rt_err *err)
{
    size_t bound = sat_add(sat_mul(per, n), fixed);
    if (bound <= limit)
        return RT_OK;
    return rt_err_set(err, RT_ERR_LIMIT,
                      "the answer to %zu instances could take %zu bytes (%zu per instance), "
                      "over the limit of %zu bytes (max_answer_bytes); send at most %zu "
                      "instances per request",
                      n, bound, per, limit, limit > fixed && per ? (limit - fixed) / per : 0);
}

/* ------------------------------------------------------------ metadata */

const char *rt_json_dtype_name(Predictd__DType t)
{
    switch (t) {
    case PREDICTD__DTYPE__DT_FLOAT: return "DT_FLOAT";
    case PREDICTD__DTYPE__DT_STRING: return "DT_STRING";
    case PREDICTD__DTYPE__DT_INT64: return "DT_INT64";
    case PREDICTD__DTYPE__DT_INT32: return "DT_INT32";
    default: return "DT_INVALID";
    }
}

static int cmp_tensor(const void *a, const void *b)
{
    const Predictd__TensorSpec *x = *(Predictd__TensorSpec *const *)a;
    const Predictd__TensorSpec *y = *(Predictd__TensorSpec *const *)b;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

static int cmp_sig(const void *a, const void *b)
{
    const Predictd__SignatureDef *x = *(Predictd__SignatureDef *const *)a;
    const Predictd__SignatureDef *y = *(Predictd__SignatureDef *const *)b;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* {"<name>": {"dtype": ..., "tensor_shape": ..., "name": "<name>:0"}, ...} */
static int put_tensor_map(rt_buf *b, Predictd__TensorSpec **specs, size_t n)
{
    Predictd__TensorSpec **sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return -1;
    if (n)
        memcpy(sorted, specs, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_tensor);
    int rc = rt_buf_puts(b, "{");
    for (size_t k = 0; k < n; k++) {
        const Predictd__TensorSpec *t = sorted[k];
        const char *name = t->name ? t->name : "";
        if (k)
            rc |= rt_buf_puts(b, ", ");
        rc |= rt_buf_json_string(b, name, strlen(name));
        rc |= rt_buf_printf(b, ": {\"dtype\": \"%s\", \"tensor_shape\": {\"dim\": [",
                            rt_json_dtype_name(t->dtype));
        for (size_t d = 0; d < t->n_shape; d++)
            rc |= rt_buf_printf(b, "%s{\"size\": \"%" PRId64 "\", \"name\": \"\"}",
                                d ? ", " : "", t->shape[d]);
        rc |= rt_buf_puts(b, "], \"unknown_rank\": false}, \"name\": ");
        rt_buf tn;
        rt_buf_init(&tn);
        rc |= rt_buf_puts(&tn, name);
        rc |= rt_buf_puts(&tn, ":0");
        rc |= rt_buf_json_string(b, tn.data ? tn.data : "", tn.len);
        rt_buf_free(&tn);
        rc |= rt_buf_puts(b, "}");
    }
    free(sorted);
    return rc | rt_buf_puts(b, "}");
}

/* A predict signature's outputs and, after them, an ONNX graph's outputs
 * under their own names as the graph declares them (a name TF's outputs
 * use stays theirs; a ZipMap has no tensor type and is left out): a
 * regressor's and the scores DT_FLOAT, the label DT_INT64 (int64 labels) or
 * DT_STRING, the batch -1 and the other dimensions the value's. */
#define ONNX_META_MAX 64
#define ONNX_META_RANK 8 /* RT_ONNX_MAX_RANK */

static int put_outputs_map(rt_buf *b, const rt_graph *g, const Predictd__SignatureDef *s)
{
    size_t n_onnx = method_is(s, "classify") || method_is(s, "regress")
                        ? 0
                        : rt_onnx_run_output(g, 0, NULL);
    if (n_onnx == 0)
        return put_tensor_map(b, s->outputs, s->n_outputs);
    Predictd__TensorSpec extra[ONNX_META_MAX];
    int64_t shapes[ONNX_META_MAX][ONNX_META_RANK];
    Predictd__TensorSpec **all = malloc((s->n_outputs + ONNX_META_MAX) * sizeof *all);
    if (!all)
        return -1;
    size_t n = s->n_outputs;
    if (n)
        memcpy(all, s->outputs, n * sizeof *all);
    rt_onnx_output oo;
    for (size_t q = 0, e = 0; q < n_onnx && e < ONNX_META_MAX; q++) {
        rt_onnx_run_output(g, q, &oo);
        bool taken = oo.kind == RT_ONNX_OUT_NONE || oo.kind == RT_ONNX_OUT_MAP ||
                     oo.rank > ONNX_META_RANK;
        for (size_t k = 0; k < n && !taken; k++)
            taken = all[k]->name && strcmp(all[k]->name, oo.name) == 0;
        if (taken)
            continue;
        Predictd__TensorSpec *t = &extra[e];
        *t = (Predictd__TensorSpec)PREDICTD__TENSOR_SPEC__INIT;
        t->name = (char *)oo.name;
        t->dtype = oo.kind != RT_ONNX_OUT_LABEL ? PREDICTD__DTYPE__DT_FLOAT
                   : oo.labels_int             ? PREDICTD__DTYPE__DT_INT64
                                               : PREDICTD__DTYPE__DT_STRING;
        t->shape = shapes[e];
        t->n_shape = oo.rank ? oo.rank : 1;
        shapes[e][0] = -1;
        for (uint32_t d = 1; d < oo.rank; d++)
            shapes[e][d] = oo.dims[d];
        all[n++] = &extra[e++];
    }
    int rc = put_tensor_map(b, all, n);
    free(all);
    return rc;
}

rt_status rt_json_metadata(const rt_model *m, const char *name, int64_t version, rt_buf *out)
{
    if (!m || !out)
        return RT_ERR_INVALID;
    const Predictd__ModelDef *def = rt_model_def(m);
    const rt_graph *g = rt_model_graph(m);
    if (!name)
        name = def->model_name ? def->model_name : "";
    size_t ns = def->n_signatures;
    Predictd__SignatureDef **sigs = malloc((ns ? ns : 1) * sizeof *sigs);
    if (!sigs)
        return RT_ERR_NOMEM;
    if (ns)
        memcpy(sigs, def->signatures, ns * sizeof *sigs);
    qsort(sigs, ns, sizeof *sigs, cmp_sig);
    int rc = rt_buf_puts(out, "{\"model_spec\": {\"name\": ");
    rc |= rt_buf_json_string(out, name, strlen(name));
    rc |= rt_buf_printf(out, ", \"signature_name\": \"\", \"version\": \"%" PRId64 "\"}, "
                        "\"metadata\": {\"signature_def\": {\"signature_def\": {", version);
    for (size_t k = 0; k < ns; k++) {
        const Predictd__SignatureDef *s = sigs[k];
        const char *sn = s->name ? s->name : "";
        const char *mn = s->method_name ? s->method_name : "";
        if (k)
            rc |= rt_buf_puts(out, ", ");
        rc |= rt_buf_json_string(out, sn, strlen(sn));
        rc |= rt_buf_puts(out, ": {\"inputs\": ");
        rc |= put_tensor_map(out, s->inputs, s->n_inputs);
        rc |= rt_buf_puts(out, ", \"outputs\": ");
        rc |= g ? put_outputs_map(out, g, s) : put_tensor_map(out, s->outputs, s->n_outputs);
        rc |= rt_buf_puts(out, ", \"method_name\": ");
        rc |= rt_buf_json_string(out, mn, strlen(mn));
        rc |= rt_buf_puts(out, "}");
    }
    rc |= rt_buf_puts(out, "}}}}");
    free(sigs);
    return rc ? RT_ERR_NOMEM : RT_OK;
}
