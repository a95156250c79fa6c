/* test_torture_request.c — the request path under allocation failure: a
 * :predict body (rows and columns), a :classify body and an Open Inference
 * Protocol infer body (JSON tensors and binary tensors) through
 * rt_json_handle / rt_v2_handle, and two :predict bodies through the
 * cross-request batching path (rt_merge_parse_only, rt_merge_run,
 * rt_merge_render), :explain bodies (exact, sampled Shapley, integrated
 * gradients: rt_json_explain), each on a fresh rt_ctx, with the n-th allocation
 * failing for every n until a request completes (support_alloc.h). Each
 * gives RT_ERR_NOMEM with a message or the very bytes of the untortured
 * answer; after a failure the same rt_ctx answers the request again with
 * those bytes (what a failure leaves in a thread's scratch does not spoil
 * the next request); never a crash, a leak or another error. A serialized
 * tf.Example read by the receiver likewise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt.h"
#include "support_alloc.h"
#include "support_models.h"

typedef struct model_fx {
    Predictd__ModelDef *def;
    support_tensors st;
    char dir[256];
    rt_model *m;
} model_fx;

typedef struct fixture {
    model_fx wd;  /* wide & deep binary classifier, every column kind */
    model_fx lin; /* linear 3-class classifier (the v2 bodies) */
} fixture;

enum { KIND_V1, KIND_V2, KIND_MERGE };

typedef struct req_run {
    const rt_model *m;
    int kind;
    rt_method method;
    const char *body, *body2; /* body2: the second request merged (KIND_MERGE) */
    size_t len, len2, hlen;
    rt_ctx *c, *c2, *mc;
    rt_buf out;
    char *want;
    size_t want_len;
} req_run;

static int open_fx(model_fx *x, const char *spec, uint64_t seed)
{
    rt_err err = {{0}};
    x->def = support_spec_modeldef(spec);
    if (!x->def || support_random_tensors(x->def, seed, 0.8f, &x->st) != 0 ||
        support_mkdtemp(x->dir, sizeof x->dir) != 0)
        return -1;
    char path[1024];
    if (support_write_export(x->dir, x->def, &x->st, 3, path, sizeof path) <= 0 ||
        rt_model_open(path, &x->m, &err) != RT_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void close_fx(model_fx *x)
{
    rt_model_close(x->m);
    support_tensors_free(&x->st);
    rt_spec_modeldef_free(x->def);
    if (x->dir[0])
        support_rmtree(x->dir);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    *state = f;
    if (!f || open_fx(&f->wd, SUPPORT_SPEC_WIDE_DEEP, 31) != 0 ||
        open_fx(&f->lin, SUPPORT_SPEC_LINEAR, 32) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f) {
        close_fx(&f->wd);
        close_fx(&f->lin);
        free(f);
    }
    return 0;
}

/* The request on r's contexts, its answer appended to r->out. */
static rt_status answer(req_run *r, rt_err *err)
{
    if (r->kind == KIND_V1)
        return rt_json_handle(r->m, r->method, r->body, r->len, NULL, r->c, &r->out, err);
    if (r->kind == KIND_V2)
        return rt_v2_handle(r->m, "lin", 3, r->body, r->len, r->hlen, NULL, r->c, &r->out,
                            err);
    rt_parsed pr[2];
    rt_ctx *cs[2] = {r->c, r->c2};
    rt_status st = rt_merge_parse_only(r->m, r->body, r->len, NULL, r->c, &pr[0], err);
    if (st == RT_OK)
        st = rt_merge_parse_only(r->m, r->body2, r->len2, NULL, r->c2, &pr[1], err);
    if (st == RT_OK)
        st = rt_merge_run(r->m, r->mc, cs, pr, 2, err);
    if (st == RT_OK)
        st = rt_merge_render(r->m, r->mc, 0, &pr[0], &r->out);
    if (st == RT_OK)
        st = rt_merge_render(r->m, r->mc, pr[0].n, &pr[1], &r->out);
    if (st != RT_OK && err && !err->msg[0])
        rt_err_set(err, st, "rt_merge_render: failed"); /* render has no rt_err */
    return st;
}

static rt_status run_request(void *ctx, rt_err *err)
{
    req_run *r = ctx;
    rt_buf_init(&r->out);
    r->c = rt_ctx_new();
    if (r->kind == KIND_MERGE) {
        r->c2 = rt_ctx_new();
        r->mc = rt_ctx_new();
    }
    if (!r->c || (r->kind == KIND_MERGE && (!r->c2 || !r->mc)))
        return rt_err_set(err, RT_ERR_NOMEM, "rt_ctx_new: out of memory");
    return answer(r, err);
}

static void check_request(void *ctx, rt_status st, bool injected)
{
    req_run *r = ctx;
    if (st == RT_OK) {
        if (!r->want) {
            r->want = malloc(r->out.len + 1);
            assert_non_null(r->want);
            memcpy(r->want, r->out.data, r->out.len);
            r->want_len = r->out.len;
        }
        assert_int_equal(r->out.len, r->want_len);
        assert_memory_equal(r->out.data, r->want, r->want_len);
    } else if (injected && r->c && (r->kind != KIND_MERGE || (r->c2 && r->mc))) {
        /* the same scratch, no failure: the untortured answer */
        rt_err err = {{0}};
        rt_buf_reset(&r->out);
        rt_status again = answer(r, &err);
        if (again != RT_OK)
            fail_msg("after a failed allocation the rt_ctx fails (%d): %s", again, err.msg);
        assert_int_equal(r->out.len, r->want_len);
        assert_memory_equal(r->out.data, r->want, r->want_len);
    }
    rt_ctx_free(r->c);
    rt_ctx_free(r->c2);
    rt_ctx_free(r->mc);
    r->c = r->c2 = r->mc = NULL;
    rt_buf_free(&r->out);
}

static void torture(const char *what, req_run *r)
{
    if (!r->len)
        r->len = strlen(r->body);
    if (r->body2 && !r->len2)
        r->len2 = strlen(r->body2);
    uint64_t n = support_torture(what, run_request, check_request, r, 1, false);
    print_message("%s: %llu allocations, each failed once\n", what, (unsigned long long)n);
    support_torture(what, run_request, check_request, r, 1, true);
    free(r->want);
}

#define WD_ROWS                                                                               \
    "{\"instances\": [{\"age\": 25, \"hours\": 40.5, \"gender\": \"Female\", "                \
    "\"occupation\": \"Tech-support\"}, {\"age\": 52, \"hours\": 60, \"gender\": \"Male\", "   \
    "\"occupation\": \"Sales\"}, {\"age\": 37, \"hours\": 20, \"gender\": \"Other\", "         \
    "\"occupation\": \"\"}]}"

static void test_predict_rows(void **state)
{
    fixture *f = *state;
    req_run r = {.m = f->wd.m, .kind = KIND_V1, .method = RT_METHOD_PREDICT, .body = WD_ROWS};
    torture("predict rows", &r);
}

static void test_predict_columns(void **state)
{
    fixture *f = *state;
    req_run r = {.m = f->wd.m, .kind = KIND_V1, .method = RT_METHOD_PREDICT,
                 .body = "{\"signature_name\": \"serving_default\", \"inputs\": {\"age\": "
                         "[25, 52], \"hours\": [40.5, 60], \"gender\": [\"Female\", "
                         "\"Male\"], \"occupation\": [\"Tech-support\", \"Sales\"]}}"};
    torture("predict columns", &r);
}

static void test_classify(void **state)
{
    fixture *f = *state;
    req_run r = {.m = f->wd.m, .kind = KIND_V1, .method = RT_METHOD_CLASSIFY,
                 .body = "{\"context\": {\"hours\": 40}, \"examples\": [{\"age\": 25, "
                         "\"gender\": \"Female\", \"occupation\": \"Sales\"}, {\"age\": 61, "
                         "\"gender\": \"Male\", \"occupation\": \"Farming\"}]}"};
    torture("classify", &r);
}

static void test_explain(void **state)
{
    fixture *f = *state;
    static const char *const bodies[] = {
        "{\"instances\": [{\"age\": 25, \"hours\": 40.5, \"gender\": \"Female\", "
        "\"occupation\": \"Tech-support\"}, {\"age\": 52, \"hours\": 60, \"gender\": "
        "\"Male\", \"occupation\": \"Sales\"}], \"explanationSpecOverride\": {\"metadata\": "
        "{\"inputs\": {\"gender\": {\"inputBaselines\": [\"Male\"]}}}}}",
        "{\"instances\": [{\"age\": 25, \"hours\": 40.5, \"gender\": \"Female\", "
        "\"occupation\": \"Tech-support\"}], \"explanationSpecOverride\": {\"parameters\": "
        "{\"integratedGradientsAttribution\": {\"stepCount\": 3}, \"topK\": -1}}}",
        "{\"instances\": [{\"age\": 25, \"hours\": 40.5, \"gender\": \"Female\", "
        "\"occupation\": \"Tech-support\"}], \"explanationSpecOverride\": {\"parameters\": "
        "{\"sampledShapleyAttribution\": {\"pathCount\": 2}}}}",
    };
    static const char *const what[] = {"explain exact", "explain gradients", "explain sampled"};
    for (size_t k = 0; k < 3; k++) {
        req_run r = {.m = f->wd.m, .kind = KIND_V1, .method = RT_METHOD_EXPLAIN,
                     .body = bodies[k]};
        torture(what[k], &r);
    }
}

static void test_v2_json(void **state)
{
    fixture *f = *state;
    req_run r = {.m = f->lin.m, .kind = KIND_V2, .hlen = RT_V2_NO_HEADER,
                 .body = "{\"id\": \"7\", \"inputs\": [{\"name\": \"x\", \"shape\": [3], "
                         "\"datatype\": \"FP32\", \"data\": [1.5, -2, 0.25]}, {\"name\": "
                         "\"color\", \"shape\": [3], \"datatype\": \"BYTES\", \"data\": "
                         "[\"red\", \"blue\", \"mauve\"]}], \"outputs\": [{\"name\": "
                         "\"probabilities\", \"parameters\": {\"classification\": 2}}, "
                         "{\"name\": \"classes\"}]}"};
    torture("v2 JSON tensors", &r);
}

static void test_v2_binary(void **state)
{
    fixture *f = *state;
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"inputs\": [{\"name\": \"x\", \"shape\": [2], \"datatype\": \"FP32\", "
                     "\"parameters\": {\"binary_data_size\": 8}}, {\"name\": \"color\", "
                     "\"shape\": [2], \"datatype\": \"BYTES\", \"parameters\": "
                     "{\"binary_data_size\": 15}}], \"outputs\": [{\"name\": \"logits\", "
                     "\"parameters\": {\"binary_data\": true}}]}");
    size_t len = (size_t)n;
    static const unsigned char tail[] = {0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0, /* 1.5, -2 */
                                         3, 0, 0, 0, 'r', 'e', 'd', 4, 0, 0, 0, 'b', 'l', 'u', 'e'};
    memcpy(body + len, tail, sizeof tail);
    req_run r = {.m = f->lin.m, .kind = KIND_V2, .body = body, .len = len + sizeof tail,
                 .hlen = len};
    torture("v2 binary tensors", &r);
}

static void test_merge(void **state)
{
    fixture *f = *state;
    req_run r = {.m = f->wd.m, .kind = KIND_MERGE, .body = WD_ROWS,
                 .body2 = "{\"inputs\": {\"age\": [19], \"hours\": [12], \"gender\": "
                          "[\"Male\"], \"occupation\": [\"Craft-repair\"]}}"};
    torture("parse, merge, render", &r);
}

/* A serialized tf.Example (an EXAMPLE receiver's instance) read into a
 * batch: protobuf-c's unpacking failing for want of memory is
 * RT_ERR_NOMEM, not "not a serialized tf.Example". */
typedef struct example_run {
    const rt_graph *g;
    rt_batch *b;
} example_run;

static const uint8_t EXAMPLE_PB[] = {
    0x0a, 0x21,                                     /* Example.features (33 bytes) */
    0x0a, 0x10,                                     /* feature entry (16) */
    0x0a, 0x05, 'c', 'o', 'l', 'o', 'r',            /* key */
    0x12, 0x07, 0x0a, 0x05, 0x0a, 0x03, 'r', 'e', 'd', /* bytes_list ["red"] */
    0x0a, 0x0d,                                     /* feature entry (13) */
    0x0a, 0x01, 'x',                                /* key */
    0x12, 0x08, 0x12, 0x06, 0x0a, 0x04, 0, 0, 0xc0, 0x3f}; /* float_list [1.5] */

static rt_status read_example(void *ctx, rt_err *err)
{
    example_run *r = ctx;
    size_t idx = 0;
    if (!(r->b = rt_batch_new(r->g)))
        return rt_err_set(err, RT_ERR_NOMEM, "rt_batch_new: out of memory");
    rt_status st = rt_batch_add(r->b, &idx);
    if (st != RT_OK)
        return rt_err_set(err, st, "rt_batch_add: failed");
    return rt_receiver_example(r->b, idx, EXAMPLE_PB, sizeof EXAMPLE_PB, err);
}

static void free_example(void *ctx, rt_status st, bool injected)
{
    example_run *r = ctx;
    (void)st;
    (void)injected;
    rt_batch_free(r->b);
    r->b = NULL;
}

static void test_example(void **state)
{
    fixture *f = *state;
    example_run r = {.g = rt_model_graph(f->lin.m)};
    uint64_t n = support_torture("tf.Example", read_example, free_example, &r, 1, false);
    print_message("tf.Example: %llu allocations, each failed once\n", (unsigned long long)n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_rows),  cmocka_unit_test(test_predict_columns),
        cmocka_unit_test(test_classify),      cmocka_unit_test(test_v2_json),
        cmocka_unit_test(test_v2_binary),     cmocka_unit_test(test_merge),
        cmocka_unit_test(test_example),       cmocka_unit_test(test_explain),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
