/* test_rt_v2.c — the Open Inference Protocol parser and answers
 * (runtime/rt_v2_*.c) on a linear 3-class model (inputs x FP32, color
 * BYTES): JSON tensors give /v1's numbers; binary tensors (the binary
 * tensor data extension) give the very bytes JSON tensors give, also when
 * the JSON header's end is found rather than told (a shadow replay);
 * binary outputs, the classification extension, requested outputs and the
 * id; the datatype, shape, count and size rules with their messages; the
 * metadata answer; and a v2 request merged with a /v1 one renders the bytes
 * it gets alone. */
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

typedef struct fixture {
    support_model sm;
    rt_model *m; /* sm.m */
    rt_ctx *c;
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
    f->c = rt_ctx_new();
    return f->c ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f)
        return 0;
    rt_ctx_free(f->c);
    support_model_close(&f->sm);
    free(f);
    return 0;
}

#define XS "[1.5, -2, 0.25]"
#define COLORS "[\"red\", \"blue\", \"mauve\"]"
#define JSON_REQ(outputs)                                                                   \
    "{\"id\": \"42\", \"inputs\": [{\"name\": \"x\", \"shape\": [3], \"datatype\": \"FP32\", " \
    "\"data\": " XS "}, {\"name\": \"color\", \"shape\": [3], \"datatype\": \"BYTES\", "       \
    "\"data\": " COLORS "}]" outputs "}"

/* v2 answer of body (header_len as rt_v2_handle takes it) into out. */
static rt_status v2(fixture *f, const char *body, size_t len, size_t hlen, rt_buf *out,
                    rt_err *err)
{
    rt_buf_reset(out);
    return rt_v2_handle(f->m, "lin", 7, body, len, hlen, NULL, f->c, out, err);
}

/* The concatenated values of every "name": [...] of a /v1 answer. */
static void v1_values(const char *answer, const char *name, char *out, size_t cap)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\": [", name);
    size_t used = 0;
    out[0] = '\0';
    for (const char *p = strstr(answer, key); p; p = strstr(p, key)) {
        p += strlen(key);
        const char *e = strchr(p, ']');
        used += (size_t)snprintf(out + used, cap - used, "%s%.*s", used ? ", " : "",
                                 (int)(e - p), p);
    }
}

static void test_json_matches_v1(void **state)
{
    fixture *f = *state;
    rt_buf out, one;
    rt_buf_init(&out);
    rt_buf_init(&one);
    rt_err err = {{0}};
    const char *body = JSON_REQ(", \"outputs\": [{\"name\": \"probabilities\"}, "
                                "{\"name\": \"classes\"}, {\"name\": \"class_ids\"}]");
    assert_int_equal(v2(f, body, strlen(body), RT_V2_NO_HEADER, &out, &err), RT_OK);
    const char *v1b = "{\"instances\": [{\"x\": 1.5, \"color\": \"red\"}, {\"x\": -2, "
                      "\"color\": \"blue\"}, {\"x\": 0.25, \"color\": \"mauve\"}]}";
    assert_int_equal(rt_json_handle(f->m, RT_METHOD_PREDICT, v1b, strlen(v1b), NULL, f->c, &one,
                                    &err),
                     RT_OK);
    char probs[1024], classes[256], ids[256], want[2048];
    v1_values(one.data, "probabilities", probs, sizeof probs);
    v1_values(one.data, "classes", classes, sizeof classes);
    v1_values(one.data, "class_ids", ids, sizeof ids);
    snprintf(want, sizeof want,
             "{\"model_name\": \"lin\", \"model_version\": \"7\", \"id\": \"42\", \"outputs\": "
             "[{\"name\": \"probabilities\", \"datatype\": \"FP32\", \"shape\": [3, 3], "
             "\"data\": [%s]}, {\"name\": \"classes\", \"datatype\": \"BYTES\", \"shape\": [3, "
             "1], \"data\": [%s]}, {\"name\": \"class_ids\", \"datatype\": \"INT64\", \"shape\": "
             "[3, 1], \"data\": [%s]}]}",
             probs, classes, ids);
    assert_string_equal(out.data, want);
    assert_int_equal(rt_v2_answer_header_len(f->c), 0);
    /* no outputs named: every output of the signature */
    const char *all = JSON_REQ("");
    assert_int_equal(v2(f, all, strlen(all), RT_V2_NO_HEADER, &out, &err), RT_OK);
    assert_non_null(strstr(out.data, "\"all_class_ids\", \"datatype\": \"INT32\", \"shape\": "
                                     "[3, 3], \"data\": [0, 1, 2, 0, 1, 2, 0, 1, 2]"));
    assert_non_null(strstr(out.data, "\"logits\""));
    rt_buf_free(&out);
    rt_buf_free(&one);
}

/* JSON header + binary tensors of x and color (3 instances). */
static size_t binary_body(char *buf, size_t cap, const char *outputs, size_t *hlen)
{
    static const float xs[3] = {1.5f, -2.0f, 0.25f};
    static const char *const colors[3] = {"red", "blue", "mauve"};
    int n = snprintf(buf, cap,
                     "{\"id\": \"42\", \"inputs\": [{\"name\": \"x\", \"shape\": [3], "
                     "\"datatype\": \"FP32\", \"parameters\": {\"binary_data_size\": 12}}, "
                     "{\"name\": \"color\", \"shape\": [3], \"datatype\": \"BYTES\", "
                     "\"parameters\": {\"binary_data_size\": 24}}]%s}",
                     outputs);
    size_t len = (size_t)n;
    *hlen = len;
    for (int i = 0; i < 3; i++) {
        uint32_t u;
        memcpy(&u, &xs[i], 4);
        for (int b = 0; b < 4; b++)
            buf[len++] = (char)(u >> (8 * b));
    }
    for (int i = 0; i < 3; i++) {
        uint32_t l = (uint32_t)strlen(colors[i]);
        for (int b = 0; b < 4; b++)
            buf[len++] = (char)(l >> (8 * b));
        memcpy(buf + len, colors[i], l);
        len += l;
    }
    return len;
}

static void test_binary_inputs(void **state)
{
    fixture *f = *state;
    rt_buf a, b;
    rt_buf_init(&a);
    rt_buf_init(&b);
    rt_err err = {{0}};
    const char *json = JSON_REQ("");
    assert_int_equal(v2(f, json, strlen(json), RT_V2_NO_HEADER, &a, &err), RT_OK);
    char body[1024];
    size_t hlen, len = binary_body(body, sizeof body, "", &hlen);
    assert_int_equal(v2(f, body, len, hlen, &b, &err), RT_OK);
    assert_string_equal(a.data, b.data);
    /* the header's end found, not told (a replay): the same bytes */
    assert_int_equal(v2(f, body, len, RT_V2_FIND_HEADER, &b, &err), RT_OK);
    assert_string_equal(a.data, b.data);
    rt_buf_reset(&b);
    assert_int_equal(rt_json_handle(f->m, RT_METHOD_INFER, body, len, NULL, f->c, &b, &err),
                     RT_OK);
    assert_non_null(strstr(b.data, "\"outputs\""));
    /* white space after the JSON, inside the told header */
    char padded[1100];
    memcpy(padded, body, hlen);
    memcpy(padded + hlen, "  \n", 3);
    memcpy(padded + hlen + 3, body + hlen, len - hlen);
    assert_int_equal(v2(f, padded, len + 3, hlen + 3, &b, &err), RT_OK);
    assert_string_equal(a.data, b.data);
    /* sizes that do not add up */
    assert_int_equal(v2(f, body, len - 1, hlen, &b, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "add up to 36"));
    assert_int_equal(v2(f, body, len, len + 1, &b, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "Inference-Header-Content-Length"));
    assert_int_equal(v2(f, body, len, RT_V2_NO_HEADER, &b, &err), RT_ERR_INVALID);
    body[len - 9] = 9; /* mauve's length byte: 9 runs past the tensor */
    assert_int_equal(v2(f, body, len, hlen, &b, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "inputs[1] (color): element 2's length 9"));
    rt_buf_free(&a);
    rt_buf_free(&b);
}

static void test_binary_outputs_and_classes(void **state)
{
    fixture *f = *state;
    rt_buf a, b;
    rt_buf_init(&a);
    rt_buf_init(&b);
    rt_err err = {{0}};
    const char *json = JSON_REQ(", \"outputs\": [{\"name\": \"probabilities\"}]");
    assert_int_equal(v2(f, json, strlen(json), RT_V2_NO_HEADER, &a, &err), RT_OK);
    const char *bin = JSON_REQ(", \"parameters\": {\"binary_data_output\": true}, \"outputs\": "
                               "[{\"name\": \"probabilities\"}, {\"name\": \"classes\", "
                               "\"parameters\": {\"binary_data\": false}}]");
    assert_int_equal(v2(f, bin, strlen(bin), RT_V2_NO_HEADER, &b, &err), RT_OK);
    size_t h = rt_v2_answer_header_len(f->c);
    assert_true(h > 0 && h + 36 == b.len);
    assert_non_null(strstr(b.data, "\"parameters\": {\"binary_data_size\": 36}}, {\"name\": "
                                    "\"classes\", \"datatype\": \"BYTES\", \"shape\": [3, 1], "
                                    "\"data\": ["));
    /* the floats are the ones the JSON answer writes */
    const char *d = strstr(a.data, "\"data\": [") + 9;
    for (size_t k = 0; k < 9; k++) {
        float v;
        memcpy(&v, b.data + h + 4 * k, 4);
        char text[64];
        size_t n = rt_buf_json_float_text(v, text);
        assert_memory_equal(d, text, n);
        d += n + 2;
    }
    /* classification: the top 2 of each instance's probabilities */
    const char *cls = JSON_REQ(", \"outputs\": [{\"name\": \"probabilities\", \"parameters\": "
                               "{\"classification\": 2}}]");
    assert_int_equal(v2(f, cls, strlen(cls), RT_V2_NO_HEADER, &b, &err), RT_OK);
    assert_non_null(strstr(b.data, "\"datatype\": \"BYTES\", \"shape\": [3, 2], \"data\": [\""));
    const char *e = strstr(b.data, "\"data\": [\"") + 10;
    char *colon = strchr(e, ':');
    assert_non_null(colon);
    int idx = atoi(colon + 1);
    assert_true(idx >= 0 && idx < 3);
    const char *label = strchr(colon + 1, ':') + 1;
    assert_true(label[0] == "abc"[idx] && label[1] == '"');
    rt_buf_free(&a);
    rt_buf_free(&b);
}

static void expect_error(fixture *f, const char *body, rt_status st, const char *const *want)
{
    rt_buf out;
    rt_buf_init(&out);
    rt_err err = {{0}};
    assert_int_equal(v2(f, body, strlen(body), RT_V2_NO_HEADER, &out, &err), st);
    for (; *want; want++)
        if (!strstr(err.msg, *want))
            fail_msg("message \"%s\" lacks \"%s\"", err.msg, *want);
    rt_buf_free(&out);
}

#define IN_X(dt, shape, data)                                                          \
    "{\"name\": \"x\", \"shape\": " shape ", \"datatype\": \"" dt "\", \"data\": " data "}"
#define IN_COLOR "{\"name\": \"color\", \"shape\": [1], \"datatype\": \"BYTES\", \"data\": [\"red\"]}"

static void test_rules(void **state)
{
    fixture *f = *state;
    struct {
        const char *body;
        rt_status st;
        const char *want[4];
    } cases[] = {
        {"{\"inputs\": [" IN_X("FP64", "[1]", "[1]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[0] (x)", "\"FP64\"", "FP32 [-1]", NULL}},
        /* INT64/INT32 for an FP32 input: exact integers only (issue 35, item 20) */
        {"{\"inputs\": [" IN_X("INT64", "[1]", "[16777217]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[0] (x).data[0]", "16777217", "exact FP32", NULL}},
        {"{\"inputs\": [" IN_X("INT32", "[1]", "[2.5]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[0] (x).data[0]", "2.5 is not an INT32", NULL}},
        {"{\"inputs\": [" IN_X("FP32", "[1, 1]", "[[1]]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[0] (x)", "shape [1, 1]", NULL}},
        {"{\"inputs\": [" IN_X("FP32", "[2]", "[1, 2]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[1] (color)", "has 2 instances", NULL}},
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[1, 2]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[0] (x)", "2 values", "holds 1", NULL}},
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[\"a\"]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[0] (x).data[0]", "expected a number", NULL}},
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[1e999]") ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"(x).data[0]", "out of range", NULL}},
        {"{\"inputs\": [" IN_COLOR "]}", RT_ERR_INVALID, {"\"x\" (FP32 [-1]) is missing", NULL}},
        {"{\"inputs\": [" IN_COLOR ", " IN_COLOR "]}", RT_ERR_INVALID,
         {"inputs[1] (color): given twice", NULL}},
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[1]") ", " IN_COLOR "], \"outputs\": [{\"name\": "
         "\"nope\"}]}",
         RT_ERR_INVALID,
         {"outputs[0]", "unknown output \"nope\"", "probabilities", NULL}},
        {"{\"inputs\": [{\"name\": \"input0\", \"shape\": [2, 2], \"datatype\": \"UINT32\", "
         "\"data\": [1, 2, 3, 4]}]}",
         RT_ERR_INVALID,
         {"unknown input \"input0\"", "x, color", NULL}},
        /* JSON faults come before the semantic ones */
        {"{\"inputs\": [" IN_X("FP64", "[1]", "[1]") "], \"x\": tru}", RT_ERR_INVALID,
         {"byte", NULL}},
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[1]") ", " IN_COLOR "], \"id\": 3}",
         RT_ERR_INVALID,
         {"\"id\"", "expected a string", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_error(f, cases[i].body, cases[i].st, cases[i].want);
    /* over max_instances: RT_ERR_LIMIT */
    rt_json_params p = rt_json_default_params();
    p.max_instances = 2;
    rt_buf out;
    rt_buf_init(&out);
    rt_err err = {{0}};
    const char *three = JSON_REQ("");
    assert_int_equal(rt_v2_handle(f->m, "lin", 7, three, strlen(three), RT_V2_NO_HEADER, &p,
                                  f->c, &out, &err),
                     RT_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "the limit is 2"));
    rt_buf_free(&out);
}

/* The one-pass read (inputs whose "data" comes last are filled as they are
 * read) against the two passes: any order of keys gives the canonical
 * body's answer, and when the one-pass read gives up midway (a key after
 * "data", a bad value, a second input read out of order) the answer and
 * the errors are the two-pass ones. */
static void test_one_pass(void **state)
{
    fixture *f = *state;
    rt_buf want, out;
    rt_buf_init(&want);
    rt_buf_init(&out);
    rt_err err = {{0}};
    const char *canon = JSON_REQ("");
    assert_int_equal(v2(f, canon, strlen(canon), RT_V2_NO_HEADER, &want, &err), RT_OK);
    const char *same[] = {
        /* color's data before its shape: x one pass, color in the second */
        "{\"id\": \"42\", \"inputs\": [" IN_X("FP32", "[3]", XS) ", {\"name\": \"color\", "
        "\"datatype\": \"BYTES\", \"data\": " COLORS ", \"shape\": [3]}]}",
        /* x's data first: both in the second pass */
        "{\"id\": \"42\", \"inputs\": [{\"data\": " XS ", \"name\": \"x\", \"shape\": [3], "
        "\"datatype\": \"FP32\"}, {\"name\": \"color\", \"shape\": [3], \"datatype\": "
        "\"BYTES\", \"data\": " COLORS "}]}",
        /* a key after x's data: the batch is cleared and filled again */
        "{\"id\": \"42\", \"inputs\": [{\"name\": \"x\", \"shape\": [3], \"datatype\": "
        "\"FP32\", \"data\": " XS ", \"parameters\": {}}, {\"name\": \"color\", \"shape\": [3], "
        "\"datatype\": \"BYTES\", \"data\": " COLORS ", \"other\": 1}]}",
        /* inputs in the other order, one pass */
        "{\"inputs\": [{\"name\": \"color\", \"shape\": [3], \"datatype\": \"BYTES\", "
        "\"data\": " COLORS "}, " IN_X("FP32", "[3]", "[[1.5], [-2], [0.25]]") "], \"id\": \"42\"}",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        assert_int_equal(v2(f, same[i], strlen(same[i]), RT_V2_NO_HEADER, &out, &err), RT_OK);
        assert_string_equal(out.data, want.data);
    }
    struct {
        const char *body;
        const char *want[3];
    } bad[] = {
        /* a bad value in x (read first) and an unknown input after it: the
         * first pass's error, as with two passes */
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[\"a\"]") ", {\"name\": \"nope\", \"shape\": "
         "[1], \"datatype\": \"FP32\", \"data\": [1]}]}",
         {"inputs[1] (nope): unknown input", NULL}},
        /* the same with a key after the data of a good x */
        {"{\"inputs\": [{\"name\": \"x\", \"shape\": [1], \"datatype\": \"FP32\", \"data\": "
         "[1], \"parameters\": {\"binary_data_size\": 4}}, " IN_COLOR "]}",
         {"inputs[0] (x)", "not both", NULL}},
        /* x read in one pass, color's count wrong */
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[1]") ", {\"name\": \"color\", \"shape\": [1], "
         "\"datatype\": \"BYTES\", \"data\": [\"red\", \"blue\"]}]}",
         {"inputs[1] (color)", "2 values", NULL}},
        /* x read in one pass, then the body is not JSON */
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[1]") ", " IN_COLOR "], \"x\": [1,]}",
         {"byte", NULL}},
        /* x's bad value is reported once the rest is good */
        {"{\"inputs\": [" IN_X("FP32", "[1]", "[1, \"a\"]") ", " IN_COLOR "]}",
         {"inputs[0] (x)", "2 values", NULL}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_error(f, bad[i].body, RT_ERR_INVALID, bad[i].want);
    /* and a good body after all that */
    assert_int_equal(v2(f, canon, strlen(canon), RT_V2_NO_HEADER, &out, &err), RT_OK);
    assert_string_equal(out.data, want.data);
    rt_buf_free(&want);
    rt_buf_free(&out);
}

static void test_metadata(void **state)
{
    fixture *f = *state;
    rt_buf out;
    rt_buf_init(&out);
    int64_t vers[2] = {3, 7};
    assert_int_equal(rt_v2_metadata(f->m, "lin", vers, 2, &out), RT_OK);
    assert_non_null(strstr(out.data, "{\"name\": \"lin\", \"versions\": [\"3\", \"7\"], "
                                     "\"platform\": \"predictd_export\", \"inputs\": [{\"name\": "
                                     "\"x\", \"datatype\": \"FP32\", \"shape\": [-1]}, {\"name\": "
                                     "\"color\", \"datatype\": \"BYTES\", \"shape\": [-1]}]"));
    assert_non_null(strstr(out.data, "{\"name\": \"probabilities\", \"datatype\": \"FP32\", "
                                     "\"shape\": [-1, 3]}"));
    rt_buf_free(&out);
}

static void test_merged_with_v1(void **state)
{
    fixture *f = *state;
    rt_ctx *c1 = rt_ctx_new(), *c2 = rt_ctx_new(), *mc = rt_ctx_new();
    assert_non_null(c1);
    assert_non_null(c2);
    assert_non_null(mc);
    rt_buf alone, merged;
    rt_buf_init(&alone);
    rt_buf_init(&merged);
    rt_err err = {{0}};
    const char *body = JSON_REQ("");
    assert_int_equal(v2(f, body, strlen(body), RT_V2_NO_HEADER, &alone, &err), RT_OK);
    rt_parsed pr[2];
    const char *v1b = "{\"instances\": [{\"x\": 3, \"color\": \"green\"}]}";
    assert_int_equal(rt_merge_parse_only(f->m, v1b, strlen(v1b), NULL, c1, &pr[0], &err), RT_OK);
    assert_int_equal(rt_v2_parse(f->m, "lin", 7, body, strlen(body), RT_V2_NO_HEADER, NULL, c2,
                                 &pr[1], &err),
                     RT_OK);
    assert_ptr_equal(pr[0].sig, pr[1].sig); /* the same batch key */
    rt_ctx *reqs[2] = {c1, c2};
    assert_int_equal(rt_merge_run(f->m, mc, reqs, pr, 2, &err), RT_OK);
    assert_int_equal(rt_merge_render(f->m, mc, 1, &pr[1], &merged), RT_OK);
    assert_string_equal(alone.data, merged.data);
    rt_buf_free(&alone);
    rt_buf_free(&merged);
    rt_ctx_free(c1);
    rt_ctx_free(c2);
    rt_ctx_free(mc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_matches_v1),
        cmocka_unit_test(test_binary_inputs),
        cmocka_unit_test(test_binary_outputs_and_classes),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_one_pass),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_merged_with_v1),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
