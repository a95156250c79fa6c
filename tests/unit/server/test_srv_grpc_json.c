/* test_srv_grpc_json.c — the gRPC room's arena (srv_grpc_arena.c) and its
 * JSON reader (srv_grpc_json.c), which reads REST's v2 answer header for
 * ModelInfer: every text here is read by cJSON too, an independent parser,
 * and both trees must hold the same strings and numbers; texts that are not
 * JSON are refused by both; the text is bounded by its length (binary bytes
 * follow a v2 header); the arena hands out aligned memory past its chunk
 * and gives it back at the reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <cJSON.h>

#include "srv_grpc_internal.h"

/* a and b hold the same value (kinds, keys in order, strings, numbers) */
static void same(const srv_grpc_json *a, const cJSON *b)
{
    assert_non_null(a);
    assert_non_null(b);
    if (cJSON_IsObject(b) || cJSON_IsArray(b)) {
        assert_int_equal(a->kind, cJSON_IsObject(b) ? SRV_GRPC_JSON_OBJECT : SRV_GRPC_JSON_ARRAY);
        assert_int_equal(a->n, (size_t)cJSON_GetArraySize(b));
        const srv_grpc_json *x = a->child;
        for (const cJSON *y = b->child; y; y = y->next, x = x->next) {
            assert_non_null(x);
            if (cJSON_IsObject(b))
                assert_string_equal(x->key, y->string);
            same(x, y);
        }
        assert_null(x);
    } else if (cJSON_IsString(b)) {
        assert_int_equal(a->kind, SRV_GRPC_JSON_STRING);
        assert_string_equal(a->str, b->valuestring);
    } else if (cJSON_IsNumber(b)) {
        assert_int_equal(a->kind, SRV_GRPC_JSON_NUMBER);
        assert_true(a->num == b->valuedouble);
    } else if (cJSON_IsBool(b)) {
        assert_int_equal(a->kind, SRV_GRPC_JSON_BOOL);
        assert_true(a->num == (cJSON_IsTrue(b) ? 1 : 0));
    } else {
        assert_int_equal(a->kind, SRV_GRPC_JSON_NULL);
    }
}

static void test_same_as_cjson(void **state)
{
    (void)state;
    const char *texts[] = {
        "{\"model_name\": \"census\", \"model_version\": \"1796199715\", \"outputs\": [{\"name\": "
        "\"logistic\", \"datatype\": \"FP32\", \"shape\": [1, 1], \"parameters\": "
        "{\"binary_data_size\": 4}}]}",
        "{\"id\": \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\", \"x\": []}",
        "[1, -2, 3.5, -0.25e3, 1E-2, 0, true, false, null, {}, [[]], \"\"]",
        "  {\"a\": {\"b\": {\"c\": [\"caf\xc3\xa9\", 9007199254740993]}}}\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        srv_grpc_arena ar;
        srv_grpc_arena_init(&ar);
        cJSON *c = cJSON_Parse(texts[i]);
        assert_non_null(c);
        same(srv_grpc_json_parse(&ar, texts[i], strlen(texts[i])), c);
        cJSON_Delete(c);
        srv_grpc_arena_free(&ar);
    }
}

static void test_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", "{", "{\"a\" 1}", "[1,]", "{\"a\": 1,}", "\"\\x\"", "\"\\ud83d\"",
                         "\"\\ude00\"", "01x", "-", "tru", "[1] 2", "\"a\tb\"", "{1: 2}",
                         "\"\\u12g4\""};
    srv_grpc_arena ar;
    srv_grpc_arena_init(&ar);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(srv_grpc_json_parse(&ar, bad[i], strlen(bad[i])));
        cJSON *c = cJSON_ParseWithOpts(bad[i], NULL, 1);
        /* cJSON lets a lone surrogate, a tab in a string and a \u with a
         * non-hex digit through (RFC 8259 does not) */
        if (c && i != 6 && i != 7 && i != 12 && i != 14)
            fail_msg("cJSON read '%s'", bad[i]);
        cJSON_Delete(c);
    }
    /* deeper than the limit */
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    assert_null(srv_grpc_json_parse(&ar, deep, sizeof deep));
    srv_grpc_arena_free(&ar);
}

static void test_bounded_by_length(void **state)
{
    (void)state;
    /* a v2 header followed by its binary tensor bytes, no NUL after */
    const char text[] = "{\"outputs\": [{\"name\": \"p\", \"shape\": [2]}]}\x01\x02\x03\x04";
    size_t hlen = strlen("{\"outputs\": [{\"name\": \"p\", \"shape\": [2]}]}");
    srv_grpc_arena ar;
    srv_grpc_arena_init(&ar);
    const srv_grpc_json *j = srv_grpc_json_parse(&ar, text, hlen);
    assert_non_null(j);
    const srv_grpc_json *o = srv_grpc_json_get(j, "outputs");
    assert_int_equal(o->n, 1);
    assert_string_equal(srv_grpc_json_str(srv_grpc_json_get(o->child, "name")), "p");
    assert_true(srv_grpc_json_get(o->child, "shape")->child->num == 2);
    assert_null(srv_grpc_json_get(j, "model_name"));
    assert_null(srv_grpc_json_str(o));
    /* the whole text, binary included, is not JSON; nor is a cut header */
    assert_null(srv_grpc_json_parse(&ar, text, sizeof text - 1));
    assert_null(srv_grpc_json_parse(&ar, text, hlen - 1));
    /* a number at the very end of the bound */
    assert_true(srv_grpc_json_parse(&ar, "12345", 3)->num == 123);
    srv_grpc_arena_free(&ar);
}

static void test_arena(void **state)
{
    (void)state;
    srv_grpc_arena ar;
    srv_grpc_arena_init(&ar);
    unsigned char *p[64];
    for (int i = 0; i < 64; i++) { /* past one chunk, with a large block among them */
        size_t n = i == 10 ? (200u << 10) : (size_t)(i * 97 + 1) * 8;
        p[i] = ar.alloc.alloc(&ar, n);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % 16, 0);
        memset(p[i], i, n);
    }
    for (int i = 0; i < 64; i++)
        assert_int_equal(p[i][0], i); /* no block overlaps the next one's start */
    ar.alloc.free(&ar, p[3]); /* a no-op */
    srv_grpc_arena_reset(&ar);
    /* the first chunk is kept and starts over: the next block is the first one's */
    void *q = ar.alloc.alloc(&ar, 16);
    assert_ptr_equal(q, p[0]);
    srv_grpc_arena_free(&ar);
    assert_null(ar.head);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_cjson),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bounded_by_length),
        cmocka_unit_test(test_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
