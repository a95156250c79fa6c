/*
 * rt_json_internal.h — the request parser's parts, shared by the
 * rt_json_*.c, rt_jr.c and rt_jfill.c files that read TensorFlow Serving
 * request bodies:
 *
 *   rt_jr.c              strict streaming JSON reader (the one request parser)
 *   rt_json_params.c     the default limits a body is read under
 *   rt_json_where.c      byte offset -> "instances[3].age", describing values
 *   rt_jfill.c           one input's value into the batch (numbers, strings,
 *                        {"b64"}, lists, CSV lines, tf.Examples)
 *   rt_json_predict.c    :predict bodies (instances / inputs)
 *   rt_json_examples.c   :classify / :regress bodies (examples + context)
 *   rt_json_signature.c  signatures: lookup, listing, how inputs are read
 *   rt_json_handle.c     rt_json_handle: parse, run, render
 *
 * Not for other modules, nor for the rest of the runtime (rt_internal.h).
 */
#ifndef PREDICTD_RT_JSON_INTERNAL_H
#define PREDICTD_RT_JSON_INTERNAL_H

#include "rt_serve_internal.h"
#include "rt_data_internal.h"

#include <stdbool.h>
#include <string.h>

/* ------------------------------------------------ reader (rt_jr.c) */

/* Where the reader stands between two calls. */
typedef enum {
    RT_JR_VALUE,      /* a value comes next */
    RT_JR_FIRST_ELEM, /* just after '[': a value or ']' */
    RT_JR_FIRST_KEY,  /* just after '{': a key or '}' */
    RT_JR_AFTER,      /* after a value: ',' or the close, or the end at depth 0 */
    RT_JR_DONE,       /* the top-level value is complete */
} rt_jr_state;

#define RT_JR_LOCAL_DEPTH 128

/*
 * A strict JSON reader over body[0..len) (RFC 8259, plus TF Serving's NaN,
 * Infinity and -Infinity in a value's place; a UTF-8 BOM before the value
 * is skipped). Everything it reads is checked: valid UTF-8 (no overlong
 * form, surrogate, nothing above U+10FFFF), no raw control byte in a
 * string, escapes (\u surrogate pairs joined, lone ones refused), number
 * grammar (no leading zero, "1.", "-.5", "+1"), nesting depth. The first
 * such fault is a hard error: its message (naming the member, from the
 * body, and the byte) goes to `err` and `hard` is set; every later call
 * fails at once. Nothing is allocated unless the nesting is deeper than
 * RT_JR_LOCAL_DEPTH (free with rt_jr_done).
 */
typedef struct rt_jr {
    const char *body, *p, *end;
    int depth, max_depth;
    rt_jr_state state;
    int hard;             /* a hard error was reported */
    int key_nul;          /* the last key read holds a NUL (from \u0000) */
    rt_err *err;          /* where a hard error goes (may be NULL) */
    rt_buf *sbuf, *kbuf;  /* decoded string values / keys with escapes */
    unsigned char *stack; /* per depth: 1 object, 0 list */
    unsigned char local[RT_JR_LOCAL_DEPTH];
} rt_jr;

typedef enum {
    RT_JV_OBJECT, /* opened: read it with rt_jr_member */
    RT_JV_LIST,   /* opened: read it with rt_jr_element */
    RT_JV_STRING,
    RT_JV_NUMBER,
    RT_JV_TRUE,
    RT_JV_FALSE,
    RT_JV_NULL,
} rt_jv_kind;

/* One value as read. */
typedef struct rt_jv {
    rt_jv_kind kind;
    const char *s; /* STRING: the text, unescaped (in the body or sbuf);
                      NUMBER: the literal or token as written */
    size_t n;
    double num;    /* NUMBER: the value (±inf beyond a double; NaN, ±inf
                      for the tokens) */
    int token;     /* NUMBER: written as NaN, Infinity or -Infinity */
    size_t at;     /* offset of its first byte in the body */
} rt_jv;

/* Starts r over body (skipping a UTF-8 BOM). sbuf and kbuf hold unescaped
 * strings and keys (kept separate: a key stays valid while its value is
 * read); both must outlive r. */
void rt_jr_init(rt_jr *r, const char *body, size_t len, int max_depth, rt_buf *sbuf,
                rt_buf *kbuf, rt_err *err);
/* Frees what r allocated (nothing unless deeper than RT_JR_LOCAL_DEPTH). */
void rt_jr_done(rt_jr *r);

/* Reads the next value (state RT_JR_VALUE): scalars whole, objects and lists
 * opened. */
RT_WUR rt_status rt_jr_value(rt_jr *r, rt_jv *v);
/* rt_jr_value that wants a value of kind: one of another kind is read as
 * rt_jr_value reads it (a container opened) and refused, RT_ERR_INVALID with
 * msg in sem (the caller's semantic error, not the reader's). Inline: the
 * request parsers open their body with it, and a call more costs every
 * request (bench_ir). */
RT_WUR static inline rt_status rt_jr_want(rt_jr *r, rt_jv *v, rt_jv_kind kind, rt_err *sem,
                                          const char *msg)
{
    rt_status st = rt_jr_value(r, v);
    if (st != RT_OK || v->kind == kind)
        return st;
    return rt_err_set(sem, RT_ERR_INVALID, "%s", msg);
}
/* The same, refused with "where: expected want, got <what came>"
 * (rt_json_describe). */
RT_WUR rt_status rt_jr_want_type(rt_jr *r, rt_jv *v, rt_jv_kind kind, rt_err *sem,
                                 const char *where, const char *want);
/* In an open object: *more = 1 and the next key (unescaped; in the body or
 * kbuf, valid until the next key) with its ':' read, or *more = 0 and the
 * object closed. */
RT_WUR rt_status rt_jr_member(rt_jr *r, int *more, const char **key, size_t *klen);
/* Whether a key rt_jr_member gave (klen bytes, not NUL-terminated) is name.
 * With a literal name the compiler folds the length and the comparison into
 * a few instructions (the request parsers test every key). */
static inline bool rt_jr_key_is(const char *key, size_t klen, const char *name)
{
    return klen == strlen(name) && memcmp(key, name, klen) == 0;
}
/* rt_jr_member with the key looked up in keys (a NULL-ended list): *k its
 * index, -1 for another key (its value still to be read or skipped), or
 * RT_JR_CLOSED when the object closed instead. */
#define RT_JR_CLOSED (-2)
RT_WUR rt_status rt_jr_member_in(rt_jr *r, const char *const *keys, int *k, const char **key,
                          size_t *klen);
/* rt_jr_member that only tells whether the key is name (kbuf untouched). */
RT_WUR rt_status rt_jr_member_is(rt_jr *r, int *more, const char *name, int *match);
/* In an open list: *more = 1 when an element follows, or 0 and the list
 * closed. */
RT_WUR rt_status rt_jr_element(rt_jr *r, int *more);
/* Skips the next value (state RT_JR_VALUE), checking all of it. */
RT_WUR rt_status rt_jr_skip(rt_jr *r);
/* Reads on, checking, until the container open at `depth` (0: the whole
 * document) is complete: used after a semantic error to finish the check
 * of what remains. */
RT_WUR rt_status rt_jr_skip_to(rt_jr *r, int depth);
/* In an open list, an element announced by rt_jr_element and not read:
 * skips it and every element after it, closing the list; *n += their
 * count. */
RT_WUR rt_status rt_jr_count_rest(rt_jr *r, size_t *n);
/* After the top-level value: only white space may follow. */
RT_WUR rt_status rt_jr_end(rt_jr *r);
/* The scalar (string, number, word) at byte `at` of the body (after white
 * space), read as rt_jr_value reads an element of a list; the reader is
 * left after it. Not RT_OK for a container, or a hard error (reported as
 * usual). For re-reading a body at known places (rt_v2_replay.c): the
 * reader is not usable for anything else afterwards. */
RT_WUR rt_status rt_jr_scalar_at(rt_jr *r, size_t at, rt_jv *v);

/* A saved position, to read a part again (only back to where the reader
 * was at the same or a smaller depth, without closing anything between). */
typedef struct rt_jr_mark {
    const char *p;
    int depth;
    rt_jr_state state;
} rt_jr_mark;

static inline rt_jr_mark rt_jr_save(const rt_jr *r)
{
    rt_jr_mark m = {r->p, r->depth, r->state};
    return m;
}

static inline void rt_jr_restore(rt_jr *r, rt_jr_mark m)
{
    r->p = m.p;
    r->depth = m.depth;
    r->state = m.state;
}

/* The next significant byte (after white space) without consuming it, or -1. */
int rt_jr_peek(rt_jr *r);

/* An ASCII byte that may stand in a string as it is. */
static inline int rt_jr_plain_ascii(char c)
{
    unsigned char ch = (unsigned char)c;
    return ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\';
}

/* Eight bytes at once (SWAR): non-zero when any of them is not plain_ascii
 * (the closing quote, a backslash, below 0x20, or 0x80 and above). The
 * lowest flag marks the first such byte exactly (borrows only run upwards). */
static inline uint64_t rt_jr_special_in_word(const char *p)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    uint64_t v;
    memcpy(&v, p, sizeof v);
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    uint64_t zq = (q - ones) & ~q, zb = (b - ones) & ~b;
    uint64_t lt = (v - ones * 0x20) & ~v;
    return (zq | zb | lt | v) & highs;
}

/* ------------------------------------------- messages (rt_json_where.c) */

/* Where byte `at` of the body lies: "instances[0].age", "instances[0] (in a
 * key)", or "request body" outside any member. Runs on errors only. */
void rt_json_locate(const char *body, size_t len, size_t at, char *out, size_t cap);

/* What a value is, for messages: "abc" (quoted, shortened), 3, NaN, true,
 * null, an object, a list. */
void rt_json_describe(const rt_jv *v, char *buf, size_t cap);

/* A path for messages, formatted only when one is needed:
 * top[i].key[k] (rows), top.key[i][k] (columns: key_first), top.key[k]
 * (context: i < 0). Parts that are absent are left out. */
typedef struct rt_jpath {
    const char *top;
    long i;
    const char *key;
    size_t klen;
    int key_first;
    long k;
} rt_jpath;

void rt_json_path_format(const rt_jpath *p, char *out, size_t cap);

/* The transform names rows "instances[i]"; a classify / regress request
 * sent them as "examples[i]": the message is renamed so. */
void rt_json_name_examples(rt_err *err);

/* Every byte of err->msg that is not valid UTF-8 becomes '?' (messages
 * quote client names cut to a length). Returns st. */
RT_WUR rt_status rt_json_tidy_message(rt_status st, rt_err *err);

/* rt_json_handle for :predict, :classify and :regress (rt_json_serve.c). */
RT_WUR rt_status rt_json_serve(const rt_model *m, rt_method method, const char *body, size_t len,
                        const rt_json_params *p, rt_ctx *c, rt_buf *out, rt_err *err);

/* --------------------------------- how inputs are read (rt_json_signature.c) */

/* Raw features keyed by name, or one serialized input (a CSV line, or a
 * tf.Example: "example_proto" for an EXAMPLE receiver, "inputs" for a
 * classification / regression signature). */
typedef enum { RT_IN_FEATURES, RT_IN_CSV, RT_IN_EXAMPLE } rt_in_kind;

typedef struct rt_in_mode {
    rt_in_kind kind;
    const char *name; /* the serialized input's name */
} rt_in_mode;

rt_in_mode rt_json_mode_for(const rt_graph *g, const Predictd__SignatureDef *sig);
size_t rt_json_mode_inputs(const rt_graph *g, const rt_in_mode *md);
/* "a, b, c": the names a request may use (cut short when long). */
void rt_json_list_inputs(const rt_graph *g, const rt_in_mode *md, char *buf, size_t cap);
/* "classification, predict, serving_default": the model's signatures. */
void rt_json_list_signatures(const Predictd__ModelDef *def, char *buf, size_t cap);
/* Reads the value of "signature_name" (the reader before it) and finds
 * the signature: RT_OK and *sig; a semantic error in sem (not a string,
 * no such signature: the reader then after the value); or the reader's
 * hard error (r->hard set). */
RT_WUR rt_status rt_json_read_signature(rt_jr *r, const Predictd__ModelDef *def,
                                 const Predictd__SignatureDef **sig, rt_err *sem);
/* :classify / :regress naming a signature of another method: refused as TF
 * Serving refuses it (its message included); RT_OK for predict, for NULL
 * and for a signature of the method's kind. */
RT_WUR rt_status rt_json_check_signature_method(const Predictd__SignatureDef *sig, rt_method method,
                                         rt_err *err);
/* RT_ERR_INVALID when the model has no signature for method (classify on a
 * regressor, regress on a multi-class classifier), else RT_OK. */
RT_WUR rt_status rt_json_check_method(const rt_graph *g, rt_method method, rt_err *err);
/* A :classify / :regress body that names no signature: RT_ERR_INVALID for
 * :regress on a classifier, else RT_OK. TF's canned classifiers export
 * serving_default as their classification signature, and TF Serving refuses
 * to regress on it ("Expected regression signature method_name to be
 * tensorflow/serving/regress. Was: tensorflow/serving/classify"); predictd
 * answers as it does. */
RT_WUR rt_status rt_json_check_default_method(const rt_graph *g, rt_method method, rt_err *err);

/* --------------------------------------- values (rt_jfill.c) */

/* Filling one request into c's batch: the semantic side of parsing. Its
 * functions return RT_OK, a semantic error (message in `sem`), or the
 * reader's hard error (r->hard set, message in r->err). */
typedef struct rt_jfill {
    const rt_graph *g;
    rt_ctx *c;
    rt_jr *r;
    rt_in_mode md;
    size_t nin;            /* inputs a request may name (mode_inputs) */
    unsigned char *seen;   /* [nin] per instance */
    long hint;             /* the input after the last one matched */
    rt_err *sem;
} rt_jfill;

/* The start of a fill of c's batch from body[0..len) (NULL: empty): r over
 * it under p's nesting limit with c's string buffers (hard errors to err),
 * sem empty, q over them reading features (set_mode may change that) with
 * nin and seen as the caller keeps them. */
static inline void rt_jfill_start(rt_jfill *q, rt_jr *r, rt_err *sem, const rt_graph *g,
                                  rt_ctx *c, const char *body, size_t len,
                                  const rt_json_params *p, size_t nin, unsigned char *seen,
                                  rt_err *err)
{
    sem->msg[0] = '\0';
    rt_jr_init(r, body ? body : "", len, p->max_depth, &c->text, &c->key, err);
    *q = (rt_jfill){g, c, r, {RT_IN_FEATURES, NULL}, nin, seen, 0, sem};
}

/* The input called key: its index, -1 unknown, -2 a column the model does
 * not read (label / unused: ignored). */
long rt_jfill_find(rt_jfill *q, const char *key, size_t klen);
/* Reads the next value as input `in` of instance idx (a scalar or a flat
 * list for raw features; a string or {"b64"} for a serialized input). */
RT_WUR rt_status rt_jfill_value(rt_jfill *q, size_t idx, size_t in, const rt_jpath *path);
/* Reads the members of the object just opened as instance idx (keyed by
 * input name); path->top and path->i name the instance. */
RT_WUR rt_status rt_jfill_object(rt_jfill *q, size_t idx, const rt_jpath *path);
/* Looks at the object the next value opens: 1 when it is {"b64": ...}
 * (exactly one member, named b64), else 0; the reader is left where it
 * was. */
RT_WUR rt_status rt_jfill_is_b64(rt_jfill *q, int *yes);
/* Semantic error helpers: "<path>: expected <want>, got <v>". */
RT_WUR rt_status rt_jfill_type_error(rt_jfill *q, const rt_jpath *path, const char *want,
                              const rt_jv *v);
/* The request's instance limit: "<what>: N instances, the limit is M", N
 * counted by reading the rest of the open list: `have` elements read, the
 * next one announced by rt_jr_element and not read yet. */
RT_WUR rt_status rt_jfill_limit(rt_jfill *q, const rt_json_params *p, const char *what, size_t have);

/* ----------------------------------------- bodies (predict / examples) */

/* Parses a classify / regress body into c's batch (examples keyed by
 * feature name, "context" applying to each); *sig (when sig is not NULL) the
 * signature it runs (NULL: the default). */
RT_WUR rt_status rt_json_parse_examples(const rt_graph *g, rt_method method, const char *body,
                                 size_t len, const rt_json_params *p, rt_ctx *c,
                                 const Predictd__SignatureDef **sig, rt_err *err);

#endif /* PREDICTD_RT_JSON_INTERNAL_H */
