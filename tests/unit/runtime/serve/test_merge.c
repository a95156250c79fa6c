/* test_merge.c — cross-request batching in the runtime (rt_merge.c): many
 * parsed requests merged into one batch, run once and split back must give
 * every request the very bytes rt_json_handle gives it alone.
 *
 * Requests of 1..20 instances (so the dense kernel's blocks of four rows
 * straddle requests), rows and columns mixed, on three models (wide & deep
 * binary, linear 3-class, DNN regressor). The merged run is one plain
 * batch: nothing tells the forward pass where a request ends, so equal
 * bytes show the batch invariance itself (test_dense checks the kernel
 * against an independent sum). :predict, :classify and :regress requests
 * (as each model answers them; examples full or with absent string
 * features) merged by rt_merge_key, each slice rendered by its own method,
 * give rt_json_handle's bytes too, and full examples share :predict's key
 * (test_methods_merged_*). A request whose
 * input fails the transform fails the merged run; each request run alone
 * then gets its own answer or its own message. The stage clock a traced
 * request's child spans come from (rt_ctx_time_stages) is read in order,
 * and not at all when off; the stop hook (rt_ctx_set_stop) is asked between
 * the stages and stops the request where it says so. */
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

#define MAX_REQS 24

typedef struct fixture {
    Predictd__ModelDef *def;
    support_tensors st;
    char dir[256];
    rt_model *m;
} fixture;

static int open_model(void **state, const char *spec, uint64_t seed)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    rt_err err = {{0}};
    f->def = support_spec_modeldef(spec);
    if (!f->def || support_random_tensors(f->def, seed, 0.8f, &f->st) != 0 ||
        support_mkdtemp(f->dir, sizeof f->dir) != 0)
        return -1;
    char path[1024];
    if (support_write_export(f->dir, f->def, &f->st, 1700000000, path, sizeof path) <= 0 ||
        rt_model_open(path, &f->m, &err) != RT_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int setup_wide_deep(void **state)
{
    return open_model(state, SUPPORT_SPEC_WIDE_DEEP, 11);
}

static int setup_linear(void **state)
{
    return open_model(state, SUPPORT_SPEC_LINEAR, 12);
}

static int setup_regressor(void **state)
{
    return open_model(state, SUPPORT_SPEC_DNN_REGRESSOR, 13);
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f)
        return 0;
    rt_model_close(f->m);
    support_tensors_free(&f->st);
    rt_spec_modeldef_free(f->def);
    if (f->dir[0])
        support_rmtree(f->dir);
    free(f);
    return 0;
}

/* ------------------------------------------------------------ bodies */

typedef enum { MODEL_WIDE_DEEP, MODEL_LINEAR, MODEL_REGRESSOR } model_kind;

/* One random instance's value of input k, as JSON. */
static void put_value(rt_buf *b, model_kind mk, size_t k, uint64_t *rng)
{
    static const char *const genders[] = {"Female", "Male", "Other"};
    static const char *const colors[] = {"red", "green", "blue", "mauve"};
    double u = support_uniform(rng);
    switch (mk) {
    case MODEL_WIDE_DEEP:
        if (k == 0)
            rt_buf_printf(b, "%d", 17 + (int)(u * 60));
        else if (k == 1)
            rt_buf_printf(b, "%.3f", u * 80);
        else if (k == 2)
            rt_buf_printf(b, "\"%s\"", genders[(int)(u * 3) % 3]);
        else
            rt_buf_printf(b, "\"job%d\"", (int)(u * 40));
        break;
    case MODEL_LINEAR:
        if (k == 0)
            rt_buf_printf(b, "%.4f", u * 10 - 5);
        else
            rt_buf_printf(b, "\"%s\"", colors[(int)(u * 4) % 4]);
        break;
    case MODEL_REGRESSOR:
        rt_buf_printf(b, "%.5f", u * 4 - 2);
        break;
    }
}

static const char *const NAMES[3][4] = {
    {"age", "hours", "gender", "occupation"}, {"x", "color"}, {"a", "b"}};
static const size_t N_NAMES[3] = {4, 2, 2};

/* Whether input k of the model is a string (an example may leave it out). */
static bool is_string_input(model_kind mk, size_t k)
{
    return (mk == MODEL_WIDE_DEEP && k >= 2) || (mk == MODEL_LINEAR && k == 1);
}

/* A body with n random instances: a predict body (rows or columns), or
 * with examples set a classify / regress body ({"examples": rows}); sparse:
 * each example leaves out its string inputs at random (tf.Example's
 * absent feature). */
static void make_body_as(rt_buf *b, model_kind mk, size_t n, int columnar, bool examples,
                         bool sparse, uint64_t *rng)
{
    size_t nin = N_NAMES[mk];
    rt_buf_reset(b);
    if (!columnar) {
        rt_buf_puts(b, examples ? "{\"examples\": [" : "{\"instances\": [");
        for (size_t i = 0; i < n; i++) {
            rt_buf_puts(b, i ? ", {" : "{");
            bool first = true;
            for (size_t k = 0; k < nin; k++) {
                if (sparse && is_string_input(mk, k) && support_uniform(rng) < 0.5)
                    continue;
                rt_buf_printf(b, "%s\"%s\": ", first ? "" : ", ", NAMES[mk][k]);
                first = false;
                put_value(b, mk, k, rng);
            }
            rt_buf_puts(b, "}");
        }
        rt_buf_puts(b, "]}");
    } else {
        rt_buf_puts(b, "{\"inputs\": {");
        for (size_t k = 0; k < nin; k++) {
            rt_buf_printf(b, "%s\"%s\": [", k ? ", " : "", NAMES[mk][k]);
            for (size_t i = 0; i < n; i++) {
                if (i)
                    rt_buf_puts(b, ", ");
                put_value(b, mk, k, rng);
            }
            rt_buf_puts(b, "]");
        }
        rt_buf_puts(b, "}}");
    }
}

/* A predict body with n random instances, rows or columns. */
static void make_body(rt_buf *b, model_kind mk, size_t n, int columnar, uint64_t *rng)
{
    make_body_as(b, mk, n, columnar, false, false, rng);
}

/* ------------------------------------------------------ merge vs alone */

typedef struct round {
    size_t n;
    rt_buf body[MAX_REQS];
    rt_buf alone[MAX_REQS];   /* rt_json_handle's answers */
    rt_ctx *ctx[MAX_REQS];
    rt_parsed parsed[MAX_REQS];
} round_t;

static void round_init(round_t *r)
{
    memset(r, 0, sizeof *r);
    for (size_t k = 0; k < MAX_REQS; k++) {
        rt_buf_init(&r->body[k]);
        rt_buf_init(&r->alone[k]);
        r->ctx[k] = rt_ctx_new();
        assert_non_null(r->ctx[k]);
    }
}

static void round_free(round_t *r)
{
    for (size_t k = 0; k < MAX_REQS; k++) {
        rt_buf_free(&r->body[k]);
        rt_buf_free(&r->alone[k]);
        rt_ctx_free(r->ctx[k]);
    }
}

/* Runs rounds of random requests through rt_json_handle (alone) and
 * through parse + merge + render; every answer must be the same bytes. */
static void check_rounds(const rt_model *m, model_kind mk, int rounds, uint64_t seed)
{
    uint64_t rng = seed;
    round_t r;
    round_init(&r);
    rt_ctx *alone_ctx = rt_ctx_new(), *mc = rt_ctx_new();
    assert_non_null(alone_ctx);
    assert_non_null(mc);
    rt_buf got;
    rt_buf_init(&got);
    for (int t = 0; t < rounds; t++) {
        r.n = 1 + (size_t)(support_uniform(&rng) * MAX_REQS);
        if (r.n > MAX_REQS)
            r.n = MAX_REQS;
        for (size_t k = 0; k < r.n; k++) {
            /* mostly small requests, some of 8..20 */
            size_t ni = support_uniform(&rng) < 0.7 ? 1 + (size_t)(support_uniform(&rng) * 5)
                                                     : 8 + (size_t)(support_uniform(&rng) * 13);
            make_body(&r.body[k], mk, ni, support_uniform(&rng) < 0.4, &rng);
            rt_err err = {{0}};
            rt_buf_reset(&r.alone[k]);
            rt_status st = rt_json_handle(m, RT_METHOD_PREDICT, r.body[k].data, r.body[k].len,
                                          NULL, alone_ctx, &r.alone[k], &err);
            if (st != RT_OK)
                fail_msg("alone: %s: %s", r.body[k].data, err.msg);
            st = rt_merge_parse_only(m, r.body[k].data, r.body[k].len, NULL, r.ctx[k],
                                    &r.parsed[k], &err);
            if (st != RT_OK)
                fail_msg("parse: %s", err.msg);
            assert_int_equal(r.parsed[k].n, ni);
        }
        rt_err err = {{0}};
        if (rt_merge_run(m, mc, r.ctx, r.parsed, r.n, &err) != RT_OK)
            fail_msg("merge: %s", err.msg);
        size_t start = 0;
        for (size_t k = 0; k < r.n; k++) {
            rt_buf_reset(&got);
            assert_int_equal(rt_merge_render(m, mc, start, &r.parsed[k], &got), RT_OK);
            if (strcmp(got.data, r.alone[k].data) != 0)
                fail_msg("round %d request %zu of %zu (%zu instances): merged %s\nalone %s", t,
                         k, r.n, r.parsed[k].n, got.data, r.alone[k].data);
            start += r.parsed[k].n;
        }
        assert_int_equal(start, mc->outputs.n);
    }
    rt_buf_free(&got);
    rt_ctx_free(alone_ctx);
    rt_ctx_free(mc);
    round_free(&r);
}

static void test_merged_equals_alone_wide_deep(void **state)
{
    fixture *f = *state;
    check_rounds(f->m, MODEL_WIDE_DEEP, 60, 42);
}

static void test_merged_equals_alone_linear(void **state)
{
    fixture *f = *state;
    check_rounds(f->m, MODEL_LINEAR, 30, 43);
}

static void test_merged_equals_alone_regressor(void **state)
{
    fixture *f = *state;
    check_rounds(f->m, MODEL_REGRESSOR, 30, 44);
}

/* The methods model m answers with a body of its kind (by a probe through
 * rt_json_handle): predict always, classify / regress as its head allows. */
static size_t methods_of(const rt_model *m, model_kind mk, rt_method *out)
{
    static const rt_method all[] = {RT_METHOD_PREDICT, RT_METHOD_CLASSIFY, RT_METHOD_REGRESS};
    uint64_t rng = 7;
    rt_buf b, a;
    rt_buf_init(&b);
    rt_buf_init(&a);
    rt_ctx *c = rt_ctx_new();
    assert_non_null(c);
    size_t n = 0;
    for (size_t i = 0; i < 3; i++) {
        make_body_as(&b, mk, 2, 0, all[i] != RT_METHOD_PREDICT, false, &rng);
        rt_err err = {{0}};
        rt_buf_reset(&a);
        if (rt_json_handle(m, all[i], b.data, b.len, NULL, c, &a, &err) == RT_OK)
            out[n++] = all[i];
    }
    rt_ctx_free(c);
    rt_buf_free(&a);
    rt_buf_free(&b);
    return n;
}

/* Rounds of :predict, :classify and :regress requests (as the model answers
 * them; examples full or with absent string features) merged by
 * rt_merge_key: each group run once, every request's slice rendered by its
 * own method must be the bytes rt_json_handle gives it alone, and so must
 * its run alone (rt_merge_run_parsed). Full examples share :predict's key. */
static void check_methods(const rt_model *m, model_kind mk, int rounds, uint64_t seed)
{
    rt_method meth[3];
    size_t n_meth = methods_of(m, mk, meth);
    assert_true(n_meth >= 2); /* predict and classify or regress */
    uint64_t rng = seed;
    round_t r;
    round_init(&r);
    rt_method method[MAX_REQS];
    rt_ctx *alone_ctx = rt_ctx_new(), *mc = rt_ctx_new();
    assert_non_null(alone_ctx);
    assert_non_null(mc);
    rt_buf got;
    rt_buf_init(&got);
    const void *predict_key = NULL;
    size_t mixed = 0;
    for (int t = 0; t < rounds; t++) {
        r.n = 2 + (size_t)(support_uniform(&rng) * (MAX_REQS - 2));
        for (size_t k = 0; k < r.n; k++) {
            method[k] = meth[(size_t)(support_uniform(&rng) * (double)n_meth) % n_meth];
            bool ex = method[k] != RT_METHOD_PREDICT;
            size_t ni = 1 + (size_t)(support_uniform(&rng) * 9);
            make_body_as(&r.body[k], mk, ni, !ex && support_uniform(&rng) < 0.4, ex,
                         ex && support_uniform(&rng) < 0.3, &rng);
            rt_err err = {{0}};
            rt_buf_reset(&r.alone[k]);
            if (rt_json_handle(m, method[k], r.body[k].data, r.body[k].len, NULL, alone_ctx,
                               &r.alone[k], &err) != RT_OK)
                fail_msg("alone: %s: %s", r.body[k].data, err.msg);
            if (rt_merge_parse(m, method[k], r.body[k].data, r.body[k].len, NULL, r.ctx[k],
                               &r.parsed[k], &err) != RT_OK)
                fail_msg("parse: %s", err.msg);
            assert_int_equal(r.parsed[k].n, ni);
            if (!ex)
                predict_key = rt_merge_key(&r.parsed[k]);
        }
        bool done[MAX_REQS] = {false};
        for (size_t g = 0; g < r.n; g++) { /* one merged run per key */
            if (done[g])
                continue;
            const void *key = rt_merge_key(&r.parsed[g]);
            rt_ctx *gc[MAX_REQS];
            rt_parsed gp[MAX_REQS];
            size_t idx[MAX_REQS], n = 0;
            bool has_pred = false, has_ex = false;
            for (size_t k = g; k < r.n; k++)
                if (!done[k] && rt_merge_key(&r.parsed[k]) == key) {
                    done[k] = true;
                    gc[n] = r.ctx[k];
                    gp[n] = r.parsed[k];
                    idx[n++] = k;
                    has_pred |= method[k] == RT_METHOD_PREDICT;
                    has_ex |= method[k] != RT_METHOD_PREDICT;
                }
            mixed += has_pred && has_ex;
            rt_err err = {{0}};
            if (rt_merge_run(m, mc, gc, gp, n, &err) != RT_OK)
                fail_msg("merge: %s", err.msg);
            size_t start = 0;
            for (size_t i = 0; i < n; i++) {
                size_t k = idx[i];
                rt_buf_reset(&got);
                assert_int_equal(rt_merge_render(m, mc, start, &gp[i], &got), RT_OK);
                if (strcmp(got.data, r.alone[k].data) != 0)
                    fail_msg("round %d request %zu (method %d, %zu instances): merged %s\n"
                             "alone %s", t, k, (int)method[k], gp[i].n, got.data,
                             r.alone[k].data);
                start += gp[i].n;
                rt_buf_reset(&got);
                assert_int_equal(rt_merge_run_parsed(m, r.ctx[k], &gp[i], &got, &err), RT_OK);
                assert_string_equal(got.data, r.alone[k].data);
            }
        }
    }
    assert_true(mixed > 0); /* some runs held :predict rows and examples together */
    /* full examples read as :predict rows; sparse ones that leave a string out do not */
    rt_buf_reset(&r.body[0]);
    make_body_as(&r.body[0], mk, 1, 0, true, false, &rng);
    rt_err err = {{0}};
    assert_int_equal(rt_merge_parse(m, meth[1], r.body[0].data, r.body[0].len, NULL, r.ctx[0],
                                    &r.parsed[0], &err), RT_OK);
    if (predict_key)
        assert_ptr_equal(rt_merge_key(&r.parsed[0]), predict_key);
    rt_buf_free(&got);
    rt_ctx_free(alone_ctx);
    rt_ctx_free(mc);
    round_free(&r);
}

static void test_methods_merged_wide_deep(void **state)
{
    fixture *f = *state;
    check_methods(f->m, MODEL_WIDE_DEEP, 30, 45);
}

static void test_methods_merged_linear(void **state)
{
    fixture *f = *state;
    check_methods(f->m, MODEL_LINEAR, 20, 46);
}

static void test_methods_merged_regressor(void **state)
{
    fixture *f = *state;
    check_methods(f->m, MODEL_REGRESSOR, 20, 47);
}

/* A request that parses but fails the transform (a missing input) makes
 * the merged run fail; run alone, every other request gets its answer and
 * the bad one its own message, as rt_json_handle gives them. */
static void test_invalid_request_falls_back(void **state)
{
    fixture *f = *state;
    const char *bodies[3] = {
        "{\"instances\": [{\"age\": 30, \"hours\": 40, \"gender\": \"Male\", "
        "\"occupation\": \"a\"}]}",
        "{\"instances\": [{\"age\": 31, \"gender\": \"Female\", \"occupation\": \"b\"}]}",
        "{\"inputs\": {\"age\": [50, 60], \"hours\": [1, 2], \"gender\": [\"Male\", \"x\"], "
        "\"occupation\": [\"c\", \"d\"]}}",
    };
    rt_ctx *ctx[3], *mc = rt_ctx_new(), *alone = rt_ctx_new();
    rt_parsed parsed[3];
    rt_err err = {{0}};
    for (int k = 0; k < 3; k++) {
        ctx[k] = rt_ctx_new();
        assert_int_equal(rt_merge_parse_only(f->m, bodies[k], strlen(bodies[k]), NULL, ctx[k],
                                            &parsed[k], &err),
                         RT_OK);
    }
    assert_int_equal(rt_merge_run(f->m, mc, ctx, parsed, 3, &err), RT_ERR_INVALID);
    for (int k = 0; k < 3; k++) {
        rt_buf a, b;
        rt_buf_init(&a);
        rt_buf_init(&b);
        rt_err ea = {{0}}, eb = {{0}};
        rt_status sa = rt_json_handle(f->m, RT_METHOD_PREDICT, bodies[k], strlen(bodies[k]),
                                      NULL, alone, &a, &ea);
        rt_status sb = rt_merge_run_parsed(f->m, ctx[k], &parsed[k], &b, &eb);
        assert_int_equal(sa, sb);
        assert_int_equal(sa, k == 1 ? RT_ERR_INVALID : RT_OK);
        if (sa == RT_OK)
            assert_string_equal(a.data, b.data);
        else
            assert_string_equal(ea.msg, eb.msg);
        rt_buf_free(&a);
        rt_buf_free(&b);
        rt_ctx_free(ctx[k]);
    }
    rt_ctx_free(mc);
    rt_ctx_free(alone);
}

/* Parse errors are rt_json_handle's, word for word. */
static void test_parse_errors_match(void **state)
{
    fixture *f = *state;
    const char *bad[] = {"{", "[]", "{\"instances\": 3}", "{\"instances\": [{\"age\": \"x\"}]}",
                         "{\"instances\": [], \"inputs\": {}}",
                         "{\"signature_name\": \"nope\", \"instances\": []}"};
    rt_ctx *c = rt_ctx_new();
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        rt_buf a;
        rt_buf_init(&a);
        rt_err ea = {{0}}, eb = {{0}};
        rt_parsed pr;
        rt_status sa = rt_json_handle(f->m, RT_METHOD_PREDICT, bad[k], strlen(bad[k]), NULL, c,
                                      &a, &ea);
        rt_status sb = rt_merge_parse_only(f->m, bad[k], strlen(bad[k]), NULL, c, &pr, &eb);
        assert_int_equal(sa, sb);
        assert_true(sa != RT_OK);
        assert_string_equal(ea.msg, eb.msg);
        rt_buf_free(&a);
    }
    /* an empty request parses to 0 instances and answers as alone */
    rt_parsed pr;
    rt_err err = {{0}};
    const char *empty = "{\"instances\": []}";
    assert_int_equal(rt_merge_parse_only(f->m, empty, strlen(empty), NULL, c, &pr, &err), RT_OK);
    assert_int_equal(pr.n, 0);
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(rt_merge_run_parsed(f->m, c, &pr, &b, &err), RT_OK);
    assert_string_equal(b.data, "{\"predictions\": []}");
    rt_buf_free(&b);
    rt_ctx_free(c);
}

/* rt_merge_batch_append copies every cell (numbers, strings, several values). */
static void test_batch_append(void **state)
{
    fixture *f = *state;
    const rt_graph *g = rt_model_graph(f->m);
    rt_batch *a = rt_batch_new(g), *b = rt_batch_new(g), *dst = rt_batch_new(g);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(dst);
    size_t idx;
    assert_int_equal(rt_batch_add(a, &idx), RT_OK);
    assert_int_equal(rt_batch_push_num(a, idx, 0, 33), RT_OK);
    assert_int_equal(rt_batch_push_str(a, idx, 2, "Male", 4), RT_OK);
    assert_int_equal(rt_batch_push_str(a, idx, 3, "x\0y", 3), RT_OK); /* a NUL inside */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rt_batch_add(b, &idx), RT_OK);
        assert_int_equal(rt_batch_push_num(b, idx, 1, i + 0.5), RT_OK);
        assert_int_equal(rt_batch_push_str(b, idx, 3, "p", 1), RT_OK);
        assert_int_equal(rt_batch_push_str(b, idx, 3, "qq", 2), RT_OK); /* multi-valued */
    }
    rt_err err = {{0}};
    assert_int_equal(rt_merge_batch_append(dst, a, &err), RT_OK);
    assert_int_equal(rt_merge_batch_append(dst, b, &err), RT_OK);
    assert_int_equal(rt_batch_size(dst), 4);
    for (size_t i = 0; i < 4; i++) {
        const rt_batch *src = i == 0 ? a : b;
        size_t si = i == 0 ? 0 : i - 1;
        for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
            size_t n1, n2;
            const rt_value *v1 = rt_batch_cell(dst, i, in, &n1);
            const rt_value *v2 = rt_batch_cell(src, si, in, &n2);
            assert_int_equal(n1, n2);
            for (size_t k = 0; k < n1; k++) {
                assert_int_equal(v1[k].str == NULL, v2[k].str == NULL);
                if (v1[k].str) {
                    assert_int_equal(v1[k].len, v2[k].len);
                    assert_memory_equal(v1[k].str, v2[k].str, v1[k].len);
                    assert_ptr_not_equal(v1[k].str, v2[k].str); /* copied */
                } else {
                    assert_memory_equal(&v1[k].num, &v2[k].num, sizeof(double));
                }
            }
        }
    }
    /* policies must agree once dst holds instances */
    rt_batch_set_missing(b, RT_MISSING_EMPTY);
    assert_int_equal(rt_merge_batch_append(dst, b, &err), RT_ERR_INVALID);
    rt_batch_free(a);
    rt_batch_free(b);
    rt_batch_free(dst);
}

/* Merging refuses an empty request and a context of another model. */
static void test_merge_refusals(void **state)
{
    fixture *f = *state;
    rt_ctx *c = rt_ctx_new();
    rt_parsed pr;
    rt_err err = {{0}};
    const char *body = "{\"instances\": [{\"age\": 30, \"hours\": 40, \"gender\": \"Male\", "
                       "\"occupation\": \"a\"}, {\"age\": 20, \"hours\": 10, \"gender\": "
                       "\"Female\", \"occupation\": \"b\"}]}";
    assert_int_equal(rt_merge_parse_only(f->m, body, strlen(body), NULL, c, &pr, &err), RT_OK);
    rt_ctx *e = rt_ctx_new(), *mc = rt_ctx_new();
    rt_parsed pe;
    const char *empty = "{\"instances\": []}";
    assert_int_equal(rt_merge_parse_only(f->m, empty, strlen(empty), NULL, e, &pe, &err), RT_OK);
    rt_ctx *two[2] = {c, e};
    rt_parsed p2[2] = {pr, pe};
    assert_int_equal(rt_merge_run(f->m, mc, two, p2, 2, &err), RT_ERR_INVALID);
    rt_ctx_free(e);
    rt_ctx_free(mc);
    rt_ctx_free(c);
}

/* The stage clock (rt_ctx_time_stages): on, a request's marks are read in
 * order within the call; off, none is; a failed transform leaves the marks
 * after parsing at 0; a merged run marks all but the render (each
 * request's render is its caller's to time). */
static void test_stage_clock(void **state)
{
    fixture *f = *state;
    rt_json_params p = rt_json_default_params();
    rt_ctx *c = rt_ctx_new(), *mc = rt_ctx_new();
    assert_non_null(c);
    assert_non_null(mc);
    rt_buf body, out;
    rt_buf_init(&body);
    rt_buf_init(&out);
    uint64_t rng = 99;
    make_body(&body, MODEL_WIDE_DEEP, 5, 0, &rng);
    rt_err err = {{0}};
    rt_ctx_time_stages(c, true);
    int64_t t0 = rt_time_now_ns();
    assert_int_equal(rt_json_handle(f->m, RT_METHOD_PREDICT, body.data, body.len, &p, c, &out,
                                    &err),
                     RT_OK);
    int64_t t1 = rt_time_now_ns();
    rt_stage_marks mk = rt_ctx_stages(c);
    assert_true(t0 <= mk.parsed && mk.parsed <= mk.transformed &&
                mk.transformed <= mk.forwarded && mk.forwarded <= mk.rendered &&
                mk.rendered <= t1);
    rt_ctx_time_stages(c, false);
    mk = rt_ctx_stages(c);
    assert_true(mk.parsed == 0 && mk.rendered == 0); /* cleared */
    rt_buf_reset(&out);
    assert_int_equal(rt_json_handle(f->m, RT_METHOD_PREDICT, body.data, body.len, &p, c, &out,
                                    &err),
                     RT_OK);
    mk = rt_ctx_stages(c);
    assert_true(mk.parsed == 0 && mk.transformed == 0 && mk.forwarded == 0 && mk.rendered == 0);
    /* a missing input fails in the transform */
    rt_ctx_time_stages(c, true);
    rt_buf_reset(&out);
    const char *bad = "{\"instances\": [{\"age\": 3}]}";
    assert_int_not_equal(rt_json_handle(f->m, RT_METHOD_PREDICT, bad, strlen(bad), &p, c, &out,
                                        &err),
                         RT_OK);
    mk = rt_ctx_stages(c);
    assert_true(mk.parsed > 0 && mk.transformed == 0 && mk.forwarded == 0 && mk.rendered == 0);
    /* a merged run */
    rt_parsed pr;
    assert_int_equal(rt_merge_parse_only(f->m, body.data, body.len, &p, c, &pr, &err), RT_OK);
    rt_ctx *reqs[1] = {c};
    rt_ctx_time_stages(mc, true);
    assert_int_equal(rt_merge_run(f->m, mc, reqs, &pr, 1, &err), RT_OK);
    mk = rt_ctx_stages(mc);
    assert_true(mk.parsed > 0 && mk.parsed <= mk.transformed && mk.transformed <= mk.forwarded &&
                mk.rendered == 0);
    rt_buf_free(&body);
    rt_buf_free(&out);
    rt_ctx_free(c);
    rt_ctx_free(mc);
}

/* A stop hook that says stop at its stop_at-th question (1-based; 0:
 * never), counting them. */
typedef struct stop_asks {
    int asks, stop_at;
} stop_asks;

static bool ask_stop(void *arg)
{
    stop_asks *a = arg;
    return ++a->asks == a->stop_at;
}

/* The stop hook (rt_ctx_set_stop) is asked after the parse, before the
 * forward pass (one chunk here: 5 rows) and once the answer is written,
 * three questions in that order, on rt_json_handle's path and on
 * rt_merge_run_parsed's; a yes at each stops the request there with its
 * stage named; never a yes: the bytes of a request without a hook. */
static void test_stop_hook(void **state)
{
    fixture *f = *state;
    rt_json_params p = rt_json_default_params();
    rt_ctx *c = rt_ctx_new();
    assert_non_null(c);
    rt_buf body, want, out;
    rt_buf_init(&body);
    rt_buf_init(&want);
    rt_buf_init(&out);
    uint64_t rng = 7;
    make_body(&body, MODEL_WIDE_DEEP, 5, 0, &rng);
    rt_err err = {{0}};
    assert_int_equal(rt_json_handle(f->m, RT_METHOD_PREDICT, body.data, body.len, &p, c, &want,
                                    &err),
                     RT_OK);
    static const char *said[] = {"stopped after the parse", "stopped before the forward pass",
                                 "stopped after the answer was written"};
    for (int path = 0; path < 2; path++) {
        for (int k = 0; k <= 3; k++) {
            stop_asks a = {0, k};
            rt_buf_reset(&out);
            rt_ctx_time_stages(c, true);
            rt_parsed pr;
            if (path == 1)
                assert_int_equal(rt_merge_parse_only(f->m, body.data, body.len, &p, c, &pr, &err),
                                 RT_OK);
            rt_ctx_set_stop(c, ask_stop, &a);
            rt_status st = path == 0 ? rt_json_handle(f->m, RT_METHOD_PREDICT, body.data,
                                                      body.len, &p, c, &out, &err)
                                     : rt_merge_run_parsed(f->m, c, &pr, &out, &err);
            rt_ctx_set_stop(c, NULL, NULL);
            rt_stage_marks mk = rt_ctx_stages(c);
            if (k == 0) {
                assert_int_equal(st, RT_OK);
                assert_int_equal(a.asks, 3);
                assert_int_equal(out.len, want.len);
                assert_memory_equal(out.data, want.data, want.len);
                continue;
            }
            assert_int_equal(st, RT_ERR_LIMIT);
            assert_int_equal(a.asks, k);
            assert_non_null(strstr(err.msg, said[k - 1]));
            assert_true((mk.transformed == 0) == (k == 1)); /* no transform after a stop */
            assert_true((mk.forwarded == 0) == (k <= 2));
        }
    }
    rt_ctx_time_stages(c, false);
    rt_buf_free(&body);
    rt_buf_free(&want);
    rt_buf_free(&out);
    rt_ctx_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_merged_equals_alone_wide_deep, setup_wide_deep,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_merged_equals_alone_linear, setup_linear,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_merged_equals_alone_regressor, setup_regressor,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_methods_merged_wide_deep, setup_wide_deep,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_methods_merged_linear, setup_linear, teardown),
        cmocka_unit_test_setup_teardown(test_methods_merged_regressor, setup_regressor,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_invalid_request_falls_back, setup_wide_deep,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_parse_errors_match, setup_wide_deep, teardown),
        cmocka_unit_test_setup_teardown(test_batch_append, setup_wide_deep, teardown),
        cmocka_unit_test_setup_teardown(test_merge_refusals, setup_wide_deep, teardown),
        cmocka_unit_test_setup_teardown(test_stage_clock, setup_wide_deep, teardown),
        cmocka_unit_test_setup_teardown(test_stop_hook, setup_wide_deep, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
