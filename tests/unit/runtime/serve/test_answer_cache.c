/* test_answer_cache.c — the text an answer shares with every answer of its
 * model is built once per thread (rt_json_out.c's row template, rt_v2_out.c's
 * output pieces, keyed by the graph's serial number and, for v2, the
 * requested outputs): answers given while the thread alternates between
 * three models (3-class linear, binary wide & deep, DNN regressor), /v1 and
 * v2, one and three instances, and several output selections (JSON, binary,
 * classification) are the bytes a new thread gives for each. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_serve_internal.h"
#include "rt_data_internal.h"
#include "support_models.h"

#define N_MODELS 3

typedef struct fixture {
    support_model models[N_MODELS];
} fixture;

/* One request: which model, /v1 or v2, the body. */
typedef struct request {
    int model;
    int v2;
    const char *body;
} request;

#define LIN1 "{\"instances\": [{\"x\": 1.5, \"color\": \"red\"}]}"
#define LIN3                                                                                 \
    "{\"instances\": [{\"x\": 1.5, \"color\": \"red\"}, {\"x\": -2, \"color\": \"blue\"}, " \
    "{\"x\": 0.25, \"color\": \"mauve\"}]}"
#define LIN_V2(outputs)                                                                      \
    "{\"inputs\": [{\"name\": \"x\", \"shape\": [2], \"datatype\": \"FP32\", \"data\": [1.5, " \
    "-2]}, {\"name\": \"color\", \"shape\": [2], \"datatype\": \"BYTES\", \"data\": [\"red\", " \
    "\"blue\"]}]" outputs "}"
#define WD1 "{\"instances\": [{\"age\": 41, \"hours\": 40, \"gender\": \"Male\", \"occupation\": \"x\"}]}"
#define WD3                                                                                  \
    "{\"instances\": [{\"age\": 41, \"hours\": 40, \"gender\": \"Male\", \"occupation\": "   \
    "\"x\"}, {\"age\": 19, \"hours\": 10, \"gender\": \"Female\", \"occupation\": \"y\"}, "   \
    "{\"age\": 65, \"hours\": 60, \"gender\": \"?\", \"occupation\": \"\"}]}"
#define WD_V2(outputs)                                                                       \
    "{\"inputs\": [{\"name\": \"age\", \"shape\": [1], \"datatype\": \"FP32\", \"data\": "   \
    "[41]}, {\"name\": \"hours\", \"shape\": [1], \"datatype\": \"FP32\", \"data\": [40]}, " \
    "{\"name\": \"gender\", \"shape\": [1], \"datatype\": \"BYTES\", \"data\": [\"Male\"]}, " \
    "{\"name\": \"occupation\", \"shape\": [1], \"datatype\": \"BYTES\", \"data\": "         \
    "[\"x\"]}]" outputs "}"
#define REG1 "{\"instances\": [{\"a\": 1, \"b\": 2}]}"
#define REG_V2                                                                               \
    "{\"inputs\": [{\"name\": \"a\", \"shape\": [2], \"datatype\": \"FP32\", \"data\": [1, "  \
    "3]}, {\"name\": \"b\", \"shape\": [2], \"datatype\": \"FP32\", \"data\": [2, 4]}]}"

static const request REQUESTS[] = {
    {0, 0, "{\"instances\": []}"}, /* first: the template made from no instances */
    {0, 0, LIN1},
    {1, 0, WD1},
    {0, 1, LIN_V2("")},
    {1, 1, WD_V2("")},
    {2, 0, REG1},
    {0, 0, LIN3},
    {2, 1, REG_V2},
    {1, 0, WD3},
    {0, 1, LIN_V2(", \"outputs\": [{\"name\": \"probabilities\"}, {\"name\": \"classes\"}]")},
    {0, 1, LIN_V2(", \"outputs\": [{\"name\": \"classes\"}, {\"name\": \"probabilities\"}]")},
    {0, 1, LIN_V2(", \"parameters\": {\"binary_data_output\": true}")},
    {0, 1, LIN_V2(", \"outputs\": [{\"name\": \"probabilities\", \"parameters\": "
                  "{\"classification\": 2}}]")},
    {1, 1, WD_V2(", \"outputs\": [{\"name\": \"all_classes\"}, {\"name\": \"logistic\"}]")},
    {1, 1, WD_V2(", \"outputs\": [{\"name\": \"all_class_ids\", \"parameters\": "
                 "{\"binary_data\": true}}]")},
};
#define N_REQUESTS (sizeof REQUESTS / sizeof REQUESTS[0])

static const char *const SPECS[N_MODELS] = {SUPPORT_SPEC_LINEAR, SUPPORT_SPEC_WIDE_DEEP,
                                            SUPPORT_SPEC_DNN_REGRESSOR};

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    for (int k = 0; k < N_MODELS; k++)
        if (support_model_open(SPECS[k], 30 + (uint64_t)k, 1, &f->models[k]) != 0)
            return -1;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f)
        return 0;
    for (int k = 0; k < N_MODELS; k++)
        support_model_close(&f->models[k]);
    free(f);
    return 0;
}

/* The answer to request q on this thread (with context c) into out:
 * "status|message|body" with the binary part's length. */
static void answer(const fixture *f, const request *q, rt_ctx *c, rt_buf *out)
{
    rt_buf body;
    rt_buf_init(&body);
    rt_err err = {{0}};
    const rt_model *m = f->models[q->model].m;
    rt_status st = q->v2 ? rt_v2_handle(m, "m", 1, q->body, strlen(q->body), RT_V2_NO_HEADER,
                                        NULL, c, &body, &err)
                         : rt_json_handle(m, RT_METHOD_PREDICT, q->body, strlen(q->body), NULL,
                                          c, &body, &err);
    rt_buf_reset(out);
    char head[600];
    snprintf(head, sizeof head, "%d|%s|%zu|", (int)st, err.msg, rt_v2_answer_header_len(c));
    assert_int_equal(rt_buf_puts(out, head), 0);
    if (body.len)
        assert_int_equal(rt_buf_append(out, body.data, body.len), 0);
    rt_buf_free(&body);
}

/* On a new thread: each request's answer with empty caches. */
typedef struct cold_job {
    const fixture *f;
    const request *q;
    rt_buf *out;
} cold_job;

static void *cold(void *arg)
{
    cold_job *j = arg;
    rt_ctx *c = rt_ctx_new();
    if (c)
        answer(j->f, j->q, c, j->out);
    rt_ctx_free(c);
    return NULL;
}

static void test_alternating_answers_are_cold_answers(void **state)
{
    fixture *f = *state;
    rt_buf want[N_REQUESTS];
    for (size_t i = 0; i < N_REQUESTS; i++) {
        rt_buf_init(&want[i]);
        cold_job j = {f, &REQUESTS[i], &want[i]};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, cold, &j), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(want[i].len > 0);
        assert_non_null(strstr(want[i].data, "0||")); /* RT_OK, no message */
    }
    rt_ctx *c = rt_ctx_new();
    assert_non_null(c);
    rt_buf got;
    rt_buf_init(&got);
    for (int round = 0; round < 3; round++) {
        for (size_t n = 0; n < N_REQUESTS; n++) {
            /* each round in another order: every request follows others */
            size_t i = round == 1 ? N_REQUESTS - 1 - n : (n * (size_t)(round + 1)) % N_REQUESTS;
            answer(f, &REQUESTS[i], c, &got);
            if (got.len != want[i].len || memcmp(got.data, want[i].data, got.len) != 0)
                fail_msg("request %zu, round %d:\nwarm %s\ncold %s", i, round, got.data,
                         want[i].data);
        }
    }
    rt_buf_free(&got);
    rt_ctx_free(c);
    for (size_t i = 0; i < N_REQUESTS; i++)
        rt_buf_free(&want[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alternating_answers_are_cold_answers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
