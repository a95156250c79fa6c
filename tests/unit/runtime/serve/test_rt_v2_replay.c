/* test_rt_v2_replay.c — an Open Inference Protocol body read by the last
 * body's layout (runtime/serve/v2/rt_v2_replay.c) gives what the full parser gives:
 * on a linear 3-class model (inputs x FP32, color BYTES), a context that
 * has just read a base body (warm) and a new context (cold) answer every
 * other body with the same status, message and bytes. Bodies that differ
 * from the base only in their values are read by the plan (counted);
 * bodies that differ in anything else are not; thousands of mutations of
 * the base (bytes changed, dropped, added) agree warm and cold; a plan is
 * not used for another graph at a reused address, nor under other limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_v2_internal.h"
#include "support_models.h"

typedef struct fixture {
    support_model sm;
    rt_model *m; /* sm.m, or the same export opened again */
    rt_ctx *warm;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    if (support_model_open(SUPPORT_SPEC_LINEAR, 21, 7, &f->sm) != 0)
        return -1;
    f->m = f->sm.m;
    f->warm = rt_ctx_new();
    return f->warm ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f)
        return 0;
    rt_ctx_free(f->warm);
    f->sm.m = f->m; /* closed with the rest */
    support_model_close(&f->sm);
    free(f);
    return 0;
}

/* The base body: every kind of value (id, FP32 and BYTES data), white space
 * as Python's json.dumps writes it, and requested outputs. */
#define BASE                                                                                 \
    "{\"id\": \"42\", \"inputs\": [{\"name\": \"x\", \"shape\": [3], \"datatype\": \"FP32\", " \
    "\"data\": [1.5, -2, 0.25]}, {\"name\": \"color\", \"shape\": [3], \"datatype\": "        \
    "\"BYTES\", \"data\": [\"red\", \"blue\", \"mauve\"]}], \"outputs\": [{\"name\": "        \
    "\"probabilities\"}, {\"name\": \"classes\"}]}"

/* One answer: status, message or body. */
typedef struct answer {
    rt_status st;
    rt_err err;
    rt_buf out;
} answer;

static void run(const fixture *f, rt_ctx *c, const char *body, size_t len,
                const rt_json_params *p, answer *a)
{
    rt_buf_init(&a->out);
    memset(&a->err, 0, sizeof a->err);
    a->st = rt_v2_handle(f->m, "lin", 7, body, len, RT_V2_NO_HEADER, p, c, &a->out, &a->err);
}

static uint64_t replays(rt_ctx *c)
{
    rt_v2_req *q = rt_v2_req_of(c);
    return q ? q->replays : 0;
}

/* body answered by a context that just read BASE and by a new one: the same
 * answer. Returns whether the warm one read it by the plan. */
static int same_warm_and_cold(fixture *f, const char *body, size_t len,
                              const rt_json_params *p)
{
    answer a, b;
    run(f, f->warm, BASE, strlen(BASE), p, &a);
    assert_int_equal(a.st, RT_OK);
    rt_buf_free(&a.out);
    uint64_t before = replays(f->warm);
    run(f, f->warm, body, len, p, &a);
    int replayed = replays(f->warm) != before;
    rt_ctx *cold = rt_ctx_new();
    assert_non_null(cold);
    run(f, cold, body, len, p, &b);
    rt_ctx_free(cold);
    if (a.st != b.st || strcmp(a.err.msg, b.err.msg) != 0 || a.out.len != b.out.len ||
        (a.out.len && memcmp(a.out.data, b.out.data, a.out.len) != 0))
        fail_msg("body %.*s\nwarm: %d %s %.*s\ncold: %d %s %.*s", (int)len, body, a.st,
                 a.err.msg, (int)a.out.len, a.out.data ? a.out.data : "", b.st, b.err.msg,
                 (int)b.out.len, b.out.data ? b.out.data : "");
    rt_buf_free(&a.out);
    rt_buf_free(&b.out);
    return replayed;
}

/* BASE with its values replaced (NULL: as in BASE). */
static void with_values(char *buf, size_t cap, const char *id, const char *xs,
                        const char *colors)
{
    snprintf(buf, cap,
             "{\"id\": %s, \"inputs\": [{\"name\": \"x\", \"shape\": [3], \"datatype\": \"FP32\", "
             "\"data\": [%s]}, {\"name\": \"color\", \"shape\": [3], \"datatype\": \"BYTES\", "
             "\"data\": [%s]}], \"outputs\": [{\"name\": \"probabilities\"}, {\"name\": "
             "\"classes\"}]}",
             id ? id : "\"42\"", xs ? xs : "1.5, -2, 0.25",
             colors ? colors : "\"red\", \"blue\", \"mauve\"");
}

static void test_other_values_are_replayed(void **state)
{
    fixture *f = *state;
    static const char *const cases[][3] = {
        {NULL, NULL, NULL},
        {"\"43\"", NULL, NULL},
        {"\"\"", NULL, NULL},
        {"\"a\\\"b\\u00e9\"", NULL, NULL},
        {NULL, "3, 1e3, -0", NULL},
        {NULL, "NaN, Infinity, -Infinity", NULL},
        {NULL, "123456789012345678901234567890, 0.1, -7.25e-3", NULL},
        {NULL, NULL, "\"blue\", \"red\", \"red\""},
        {NULL, NULL, "\"\", \"caf\\u00e9\", \"tab\\there\""},
        {NULL, NULL, "\"\\ud83d\\ude00\", \"\xc3\xa9\", \"unknown colour\""},
        {"\"7\"", "-1, 2, 1000000", "\"mauve\", \"mauve\", \"blue\""},
    };
    char body[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        with_values(body, sizeof body, cases[i][0], cases[i][1], cases[i][2]);
        if (!same_warm_and_cold(f, body, strlen(body), NULL))
            fail_msg("not replayed: %s", body);
    }
}

static void test_other_layouts_are_read_in_full(void **state)
{
    fixture *f = *state;
    char body[1024];
    /* values that do not fit the slot, or change the layout */
    static const char *const values[][3] = {
        {"42", NULL, NULL},                         /* id a number: error */
        {NULL, "\"1.5\", -2, 0.25", NULL},          /* a string for FP32: error */
        {NULL, "1e999, -2, 0.25", NULL},            /* beyond a double: error */
        {NULL, "null, -2, 0.25", NULL},             /* error */
        {NULL, "[1.5], -2, 0.25", NULL},            /* nested: fine, not replayed */
        {NULL, "1.5, -2", NULL},                    /* count: error */
        {NULL, "1.5, -2, 0.25, 9", NULL},           /* count: error */
        {NULL, "1.5 , -2, 0.25", NULL},             /* white space: fine */
        {NULL, "1.5,-2,0.25", NULL},                /* white space: fine */
        {NULL, "01.5, -2, 0.25", NULL},             /* not JSON */
        {NULL, "1.5, -2, 0.25e", NULL},             /* not JSON */
        {NULL, NULL, "1, \"blue\", \"mauve\""},     /* a number for BYTES: error */
        {NULL, NULL, "\"red\", \"bl\\x\", \"mauve\""}, /* bad escape */
        {NULL, NULL, "\"red\", \"\\ud83d\", \"mauve\""}, /* lone surrogate */
        {NULL, NULL, "\"red\", \"\xc3\", \"mauve\""},  /* bad UTF-8 */
        {NULL, NULL, "\"red\", {}, \"mauve\""},     /* an object: error */
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        with_values(body, sizeof body, values[i][0], values[i][1], values[i][2]);
        if (same_warm_and_cold(f, body, strlen(body), NULL))
            fail_msg("replayed: %s", body);
    }
    /* the same values in another layout */
    static const char *const layouts[] = {
        BASE " ",
        BASE "x",
        " " BASE,
        "{\"inputs\": [{\"name\": \"x\", \"shape\": [3], \"datatype\": \"FP32\", \"data\": "
        "[1.5, -2, 0.25]}, {\"name\": \"color\", \"shape\": [3], \"datatype\": \"BYTES\", "
        "\"data\": [\"red\", \"blue\", \"mauve\"]}], \"outputs\": [{\"name\": "
        "\"probabilities\"}, {\"name\": \"classes\"}]}",
        "{\"id\": \"42\", \"inputs\": [{\"name\": \"x\", \"shape\": [3], \"datatype\": \"FP32\", "
        "\"data\": [1.5, -2, 0.25]}, {\"name\": \"color\", \"shape\": [3], \"datatype\": "
        "\"BYTES\", \"data\": [\"red\", \"blue\", \"mauve\"]}], \"outputs\": [{\"name\": "
        "\"probabilities\"}, {\"name\": \"logits\"}]}",
        "{\"id\": \"42\", \"inputs\": [{\"name\": \"x\", \"shape\": [3], \"datatype\": \"FP64\", "
        "\"data\": [1.5, -2, 0.25]}, {\"name\": \"color\", \"shape\": [3], \"datatype\": "
        "\"BYTES\", \"data\": [\"red\", \"blue\", \"mauve\"]}], \"outputs\": [{\"name\": "
        "\"probabilities\"}, {\"name\": \"classes\"}]}",
        "{\"id\": \"42\", \"inputs\": [{\"name\": \"color\", \"shape\": [3], \"datatype\": "
        "\"BYTES\", \"data\": [\"red\", \"blue\", \"mauve\"]}, {\"name\": \"x\", \"shape\": [3], "
        "\"datatype\": \"FP32\", \"data\": [1.5, -2, 0.25]}], \"outputs\": [{\"name\": "
        "\"probabilities\"}, {\"name\": \"classes\"}]}",
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (same_warm_and_cold(f, layouts[i], strlen(layouts[i]), NULL))
            fail_msg("replayed: %s", layouts[i]);
}

/* Mutations of BASE: one byte replaced, dropped or added, at every kind of
 * place; warm and cold agree on each. Some fall in values and are replayed
 * (counted, so that the replay is known to take part). */
static void test_mutations_agree(void **state)
{
    fixture *f = *state;
    static const char alphabet[] = "0123456789-+.eE\"\\,:[]{} \tnulNaIfy\x80\xc3\xa9u";
    const char *base = BASE;
    size_t n = strlen(base);
    char body[1024];
    uint64_t seed = 2026;
    int replayed = 0;
    for (int i = 0; i < 3000; i++) {
        size_t at = (size_t)(support_rand(&seed) % n);
        char ch = alphabet[support_rand(&seed) % (sizeof alphabet - 1)];
        size_t len;
        switch (support_rand(&seed) % 3) {
        case 0: /* replace */
            memcpy(body, base, n);
            body[at] = ch;
            len = n;
            break;
        case 1: /* drop */
            memcpy(body, base, at);
            memcpy(body + at, base + at + 1, n - at - 1);
            len = n - 1;
            break;
        default: /* add */
            memcpy(body, base, at);
            body[at] = ch;
            memcpy(body + at + 1, base + at, n - at);
            len = n + 1;
        }
        replayed += same_warm_and_cold(f, body, len, NULL);
    }
    assert_true(replayed > 100);
}

/* A plan is for its graph: the same export closed and opened again (the
 * new graph may stand at the old one's address) is read in full first. */
static void test_new_graph_is_read_in_full(void **state)
{
    fixture *f = *state;
    answer a;
    run(f, f->warm, BASE, strlen(BASE), NULL, &a);
    assert_int_equal(a.st, RT_OK);
    rt_buf_free(&a.out);
    rt_model_close(f->m);
    rt_err err = {{0}};
    assert_int_equal(rt_model_open(f->sm.path, &f->m, &err), RT_OK);
    uint64_t before = replays(f->warm);
    run(f, f->warm, BASE, strlen(BASE), NULL, &a);
    assert_int_equal(a.st, RT_OK);
    rt_buf_free(&a.out);
    assert_int_equal(replays(f->warm), before);
    run(f, f->warm, BASE, strlen(BASE), NULL, &a); /* now recorded for it */
    assert_int_equal(a.st, RT_OK);
    rt_buf_free(&a.out);
    assert_int_equal(replays(f->warm), before + 1);
}

/* Other limits: the plan recorded under the defaults is not used. */
static void test_other_limits_are_read_in_full(void **state)
{
    fixture *f = *state;
    rt_json_params p = rt_json_default_params();
    p.max_instances = 2;
    answer a;
    run(f, f->warm, BASE, strlen(BASE), NULL, &a);
    rt_buf_free(&a.out);
    uint64_t before = replays(f->warm);
    run(f, f->warm, BASE, strlen(BASE), &p, &a);
    assert_int_equal(a.st, RT_ERR_LIMIT);
    assert_non_null(strstr(a.err.msg, "the limit is 2"));
    rt_buf_free(&a.out);
    assert_int_equal(replays(f->warm), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_values_are_replayed),
        cmocka_unit_test(test_other_layouts_are_read_in_full),
        cmocka_unit_test(test_mutations_agree),
        cmocka_unit_test(test_new_graph_is_read_in_full),
        cmocka_unit_test(test_other_limits_are_read_in_full),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
