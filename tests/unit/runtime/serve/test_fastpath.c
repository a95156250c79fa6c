/* test_fastpath.c — the serving hot path's shortcuts give exactly what the
 * plain algorithms give.
 *
 * rt_buf_json_float has a printf-free fast path; here it is compared with
 * an independent reference (the shortest "%.*g" that strtof reads back)
 * on special values, powers of ten, numbers near ties and half a million
 * random float bit patterns.
 *
 * The streaming request parser (runtime/serve/rt_jr.c and its users)
 * must accept and refuse exactly what the reference parser does (an
 * independent prescan + cJSON implementation of the same rules,
 * tests/unit/support/support_json_ref.c) and fill the same batch, cell by cell: on
 * common bodies, on unusual and wrong ones, on long strings with a bad byte
 * at every position, on classify / regress bodies, and on exports whose
 * receiver reads a CSV row or a tf.Example; its refusals are valid UTF-8
 * even when they quote a name cut inside a character. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_json_internal.h"
#include "support_json_ref.h"
#include "support_models.h"

/* The reference: shortest precision 1..9 whose %g text reads back, with
 * ".0" when that text is a whole number. */
static void reference_float(float v, char *out, size_t cap)
{
    if (isnan(v)) {
        snprintf(out, cap, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, cap, "%s", v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    for (int p = 1; p <= 9; p++) {
        snprintf(out, cap, "%.*g", p, (double)v);
        if (strtof(out, NULL) == v)
            break;
    }
    if (!strpbrk(out, ".e"))
        strncat(out, ".0", cap - strlen(out) - 1); /* TF Serving's 42.0 */
}

static int check_float(float v)
{
    char want[64];
    reference_float(v, want, sizeof want);
    rt_buf b;
    rt_buf_init(&b);
    rt_buf_json_float(&b, v);
    int same = b.data && strcmp(b.data, want) == 0;
    if (!same)
        fprintf(stderr, "float %a: got %s, want %s\n", (double)v, b.data ? b.data : "(null)",
                want);
    rt_buf_free(&b);
    return same;
}

static void test_float_special_values(void **state)
{
    (void)state;
    const float vals[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 0.1f, 1.0f / 3.0f, 2.0f / 3.0f,
                          100.0f, 1e7f, 1e-5f, 1.5e-5f, 123456.0f, 1234567.0f, 12345678.0f,
                          0.999999f, 9.96f, 99.5f, 0.0001f, 0.00012345f, 3.4028235e38f,
                          1.17549435e-38f, 1e-45f, 16777216.0f, 16777217.0f, 0.3f,
                          0.29999998f, 1e22f, 1e23f, 1e-22f, 1e-23f, NAN, INFINITY,
                          -INFINITY, 0.87628317f, 0.12371682f, -1.9524729f};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        assert_true(check_float(vals[i]));
    for (int e = -45; e <= 38; e++) {
        assert_true(check_float((float)pow(10.0, e)));
        assert_true(check_float(nextafterf((float)pow(10.0, e), INFINITY)));
        assert_true(check_float(nextafterf((float)pow(10.0, e), 0.0f)));
    }
}

static void test_float_halves_and_integers(void **state)
{
    (void)state;
    /* k + 0.5 and k / 2^j: printf's ties and exact binary fractions. */
    for (int k = 0; k < 20000; k++) {
        assert_true(check_float((float)k + 0.5f));
        assert_true(check_float((float)k));
        assert_true(check_float((float)k / 1024.0f));
    }
}

static void test_float_random_bits(void **state)
{
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int bad = 0;
    for (int i = 0; i < 500000 && bad < 5; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t bits = (uint32_t)(x >> 16);
        float v;
        memcpy(&v, &bits, sizeof v);
        bad += !check_float(v);
        /* and values in the range probabilities and logits live in */
        float p = (float)((double)(x & 0xFFFFFF) / (double)0x1000000);
        bad += !check_float(p);
        bad += !check_float(p * 40.0f - 20.0f);
    }
    assert_int_equal(bad, 0);
}

/* Known answers of a different kind, without the reference's printf: the
 * text reads back (strtof) as the float exactly, no text with fewer
 * significant digits does, it always has a fraction or an exponent, and it
 * is the reference's text. Random mantissas in every decade a float has,
 * including the edges of the fast path's range (1e-14, 1e30) and the
 * values logits and probabilities take. */
static void test_float_decades_round_trip(void **state)
{
    (void)state;
    uint64_t x = 0x2545F4914F6CDD1Dull;
    int bad = 0;
    for (int e = -45; e <= 38 && bad < 5; e++) {
        for (int i = 0; i < 3000 && bad < 5; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            double m = 1.0 + 9.0 * (double)(x >> 11) / 9007199254740992.0; /* [1, 10) */
            float v = (float)(m * pow(10.0, e));
            if (i & 1)
                v = -v;
            if (!isfinite(v))
                continue;
            rt_buf b;
            rt_buf_init(&b);
            rt_buf_json_float(&b, v);
            const char *t = b.data ? b.data : "";
            int ok = strtof(t, NULL) == v && strpbrk(t, ".e") != NULL;
            /* significant digits of t (the mantissa without leading and
             * trailing zeros): one fewer must not read back */
            const char *m0 = t, *m1 = strchr(t, 'e');
            m1 = m1 ? m1 : t + strlen(t);
            while (*m0 == '-' || *m0 == '0' || *m0 == '.')
                m0++;
            while (m1 > m0 && (m1[-1] == '0' || m1[-1] == '.'))
                m1--;
            int digits = 0;
            for (const char *c = m0; c < m1; c++)
                digits += *c >= '0' && *c <= '9';
            if (ok && digits > 1 && v != 0.0f) {
                char shorter[512];
                snprintf(shorter, sizeof shorter, "%.*g", digits - 1, (double)v);
                ok = strtof(shorter, NULL) != v;
            }
            ok = ok && check_float(v);
            if (!ok)
                fprintf(stderr, "float %a: %s\n", (double)v, t);
            bad += !ok;
            rt_buf_free(&b);
        }
    }
    assert_int_equal(bad, 0);
}

/* ------------------------------------------------ fast JSON parser */

static const char *const GOOD[] = {
    "{\"instances\": [{\"age\": 25, \"hours\": 40.5, \"gender\": \"Male\", "
    "\"occupation\": \"Tech\"}]}",
    "{\"instances\": [{\"age\": [1, 2]}, {}, {\"gender\": [\"a\", \"b\"], "
    "\"label\": \"yes\"}, {\"label\": [1, \"x\"], \"hours\": []}]}",
    "{\"instances\": [{\"age\": -0}, {\"age\": 0}, {\"age\": 1e3}, {\"age\": -1.5E-7},"
    " {\"age\": 123456789012345678}, {\"age\": 0.1}, {\"age\": 3.4028234e38},"
    " {\"age\": 12345678901234567890123}, {\"age\": 999999999999999}, {\"age\": 1e-400},"
    " {\"age\": -123.456e-2}, {\"age\": 5E+1}, {\"age\": -3.4028234663852886e38}]}",
    "{\"inputs\": {\"age\": [1, 2, 3], \"gender\": [\"x\", \"y\", \"z\"], "
    "\"label\": [\"a\", \"b\", \"c\"], \"hours\": [[1], [], [2, 3]]}}",
    "{\"signature_name\": \"serving_default\", \"instances\": [{\"age\": 3}]}",
    "{\"instances\": [{\"age\": 3}], \"signature_name\": \"\"}",
    "{\"instances\": [{\"occupation\": \"Ing\xc3\xa9nieur \xe2\x9c\x93\"}]}",
    "{\"instances\": [{\"occupation\": \"\xc2\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf"
    "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\xef\xbb\xbf\x7f\"}]}",
    "{\"inputs\": {\"gender\": [\"\xf0\x9f\x98\x80 smile\", \"\xe7\xa7\x81\"]}}",
    " { \"instances\" : [ { \"age\" : 1 , \"gender\":\"Female\"} ] }\r\n\t",
    "{\"instances\": []}",
    "{\"inputs\": {\"age\": []}}",
    /* instances the object fast path (rt_jfill.c) reads whole, and
     * ones it gives up on half-way (an escaped key, a label, a fraction,
     * a list, a 16-digit integer after plain members): the general path
     * then reads the instance again from its start */
    "{\"instances\": [{\"age\": 25, \"gender\": \"Male\", \"hours\": -0},"
    " {\"gender\": \"F\", \"occupation\": \"x\", \"\\u0061ge\": 7},"
    " {\"age\": 1, \"gender\": \"M\", \"label\": \"yes\"},"
    " {\"age\": 2, \"occupation\": \"y\", \"hours\": 40.5},"
    " {\"age\": 3, \"gender\": \"z\", \"hours\": [1, 2]},"
    " {\"age\": 999999999999999, \"hours\": 1000000000000000},"
    " {\"hours\":1,\"age\":-12 ,\"gender\" :\"a\"\n}, {\"age\": 0}]}",
};

static const char *const UNUSUAL[] = {
    "{\"instances\": [{\"gender\": \"a\\nb\"}]}",
    "{\"instances\": [{\"gender\": {\"b64\": \"TWFsZQ==\"}}]}",
    "{\"instances\": [{\"b64\": \"TWFsZQ==\"}]}",
    "{\"instances\": [{\"age\": NaN}]}",
    "{\"instances\": [{\"age\": true}]}",
    "{\"instances\": [{\"age\": null}]}",
    "{\"instances\": [{\"age\": 01}]}",
    "{\"instances\": [{\"age\": 1.}]}",
    "{\"instances\": [{\"age\": +1}]}",
    "{\"instances\": [{\"age\": \"1\"}]}",
    "{\"instances\": [{\"gender\": 1}]}",
    "{\"instances\": [{\"age\": 1, \"age\": 2}]}",
    "{\"instances\": [{\"nope\": 1}]}",
    "{\"instances\": [{\"age\": [[1]]}]}",
    "{\"instances\": [{\"label\": {\"a\": 1}}]}",
    "{\"instances\": [1]}",
    "{\"instances\": {}}",
    "{\"instances\": [], \"inputs\": {}}",
    "{\"instances\": [], \"instances\": []}",
    "{\"instances\": [], \"extra\": 1}",
    "{\"instances\": []} x",
    "{\"instances\": [{\"age\": 1}]",
    "{\"signature_name\": \"nope\", \"instances\": []}",
    "{\"signature_name\": 3, \"instances\": []}",
    "{\"inputs\": {\"age\": [1, 2], \"hours\": [1]}}",
    "{\"inputs\": {\"age\": 1}}",
    "{\"inputs\": [1, 2]}",
    "{\"inputs\": {}}",
    "{}",
    "",
    "[]",
    "{\"instances\": [{\"gender\": \"\xff\"}]}",
    "{\"instances\": [{\"gender\": \"a\tb\"}]}",
    /* invalid UTF-8: the general parser's refusal */
    "{\"instances\": [{\"gender\": \"Priv\xc0\xaf" "ate\"}]}",
    "{\"instances\": [{\"gender\": \"\xe0\x80\xaf\"}]}",
    "{\"instances\": [{\"gender\": \"\xed\xa0\x80\"}]}",
    "{\"instances\": [{\"gender\": \"\xf4\x90\x80\x80\"}]}",
    "{\"instances\": [{\"gender\": \"ab\xc3\"}]}",
    "{\"instances\": [{\"gender\": \"\x80\"}]}",
    "{\"instances\": [{\"ag\xc3\": 1}]}",
    "{\"inputs\": {\"gender\": [\"\xe2\x9c\"]}}",
    "{\"signature_name\": \"serving_default\xed\xbf\xbf\", \"instances\": []}",
    /* leading zeros, numbers beyond a double or float32 */
    "{\"instances\": [{\"age\": 025}]}",
    "{\"instances\": [{\"age\": -01}]}",
    "{\"inputs\": {\"age\": [1, 00]}}",
    "{\"instances\": [{\"age\": 1e400}]}",
    "{\"instances\": [{\"age\": -1e400}]}",
    "{\"instances\": [{\"age\": 1.7976931348623157e308}]}",
    "{\"instances\": [{\"age\": [1, 3.5e38]}]}",
    "{\"inputs\": {\"age\": [-3.5e38]}}",
    "{\"instances\": [{\"age\": 999999999999999999999999999999999999999999}]}",
    "{\"instances\": [{\"gender\": \"a\x01" "b\"}]}",
    "{\"signature_name\": NaN, \"instances\": []}",
    /* faults after members the object fast path has read */
    "{\"instances\": [{\"age\": 1, \"gender\": \"a\", \"age\": 2}]}",
    "{\"instances\": [{\"age\": 1, \"gender\": \"a\", \"nope\": 2}]}",
    "{\"instances\": [{\"age\": 1, \"gender\": \"a\",}]}",
    "{\"instances\": [{\"age\": 1, \"gender\": \"a\" \"hours\": 2}]}",
    "{\"instances\": [{\"age\": 1, \"gender\": 2}]}",
    "{\"instances\": [{\"age\": 1, \"hours\": 3-1}]}",
    "{\"instances\": [{\"age\": 1, \"hours\": 00}]}",
    "{\"instances\": [{\"age\": 1, \"gender\": \"a\"",
    "{\"instances\": [{\"age\": 1, \"gender\": \"a\x01\"}]}",
};

typedef struct fast_fixture {
    Predictd__ModelDef *def;
    support_tensors st;
    rt_graph *g;
    char dir[256];
    rt_model *m;
    rt_ctx *fast, *slow; /* the parser, the reference */
} fast_fixture;

static int fast_setup(void **state)
{
    fast_fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    rt_err err = {{0}};
    f->def = support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP);
    if (!f->def || support_random_tensors(f->def, 7, 0.7f, &f->st) != 0 ||
        support_mkdtemp(f->dir, sizeof f->dir) != 0)
        return -1;
    char path[1024];
    if (support_write_export(f->dir, f->def, &f->st, 1700000000, path, sizeof path) <= 0 ||
        rt_model_open(path, &f->m, &err) != RT_OK) {
        fprintf(stderr, "fast_setup: %s\n", err.msg);
        return -1;
    }
    f->fast = rt_ctx_new();
    f->slow = rt_ctx_new();
    return f->fast && f->slow ? 0 : -1;
}

static int fast_teardown(void **state)
{
    fast_fixture *f = *state;
    if (!f)
        return 0;
    rt_ctx_free(f->fast);
    rt_ctx_free(f->slow);
    rt_model_close(f->m);
    support_tensors_free(&f->st);
    rt_spec_modeldef_free(f->def);
    if (f->dir[0])
        support_rmtree(f->dir);
    free(f);
    return 0;
}

/* The parser and the reference agree on body (method on model m). */
static void expect_same(fast_fixture *f, const rt_model *m, rt_method method, const char *body,
                        size_t len, const rt_json_params *p)
{
    char why[600];
    if (support_json_ref_compare(m, method, body, len, p, f->fast, f->slow, why, sizeof why))
        fail_msg("body %.*s: %s", (int)(len > 300 ? 300 : len), body, why);
}

static void test_parser_matches_reference(void **state)
{
    fast_fixture *f = *state;
    const rt_graph *g = rt_model_graph(f->m);
    for (size_t t = 0; t < sizeof GOOD / sizeof GOOD[0]; t++) {
        int col = -1;
        const Predictd__SignatureDef *sig = NULL;
        rt_err err = {{0}};
        if (rt_json_parse_predict(g, GOOD[t], strlen(GOOD[t]), NULL, f->fast, &col, &sig, &err))
            fail_msg("GOOD[%zu] refused: %s", t, err.msg);
        expect_same(f, f->m, RT_METHOD_PREDICT, GOOD[t], strlen(GOOD[t]), NULL);
    }
    for (size_t t = 0; t < sizeof UNUSUAL / sizeof UNUSUAL[0]; t++)
        for (int method = 0; method < 3; method++)
            expect_same(f, f->m, (rt_method)method, UNUSUAL[t], strlen(UNUSUAL[t]), NULL);
    static const char *const EXAMPLES[] = {
        "{\"examples\": [{\"age\": 3, \"hours\": [1, 2]}], \"context\": {\"gender\": "
        "\"x\"}}",
        "{\"context\": {\"gender\": {\"b64\": \"TWFsZQ==\"}, \"label\": 1}, \"examples\": "
        "[{\"age\": NaN}, {\"age\": -Infinity, \"occupation\": \"a\\u00e9\\ud83d\\ude00\"}]}",
        "{\"examples\": [], \"context\": {\"nope\": 1}}",
        "{\"examples\": [{}], \"context\": {\"nope\": 1}}",
        "{\"examples\": [{\"gender\": \"a\"}], \"context\": {\"gender\": \"b\"}}",
        "{\"examples\": [{\"b64\": \"eA==\"}]}",
        "{\"examples\": [1]}",
        "{\"examples\": {}}",
        "{\"examples\": [], \"context\": []}",
        "{\"signature_name\": \"nope\", \"examples\": []}",
        "{\"examples\": [], \"instances\": []}",
    };
    for (size_t t = 0; t < sizeof EXAMPLES / sizeof EXAMPLES[0]; t++)
        for (int method = 0; method < 3; method++)
            expect_same(f, f->m, (rt_method)method, EXAMPLES[t], strlen(EXAMPLES[t]), NULL);
    /* the limits */
    rt_json_params p = rt_json_default_params();
    p.max_depth = 3;
    expect_same(f, f->m, RT_METHOD_PREDICT, GOOD[0], strlen(GOOD[0]), &p);
    p = rt_json_default_params();
    p.max_instances = 2;
    const char *three = "{\"instances\": [{}, {}, {}]}";
    expect_same(f, f->m, RT_METHOD_PREDICT, three, strlen(three), &p);
}

/* Long strings: the eight-bytes-at-a-time scan must stop at an escape, a
 * control byte or invalid UTF-8 at any position, and read plain ones and
 * valid multi-byte characters whole. */
static void test_parser_string_scan(void **state)
{
    fast_fixture *f = *state;
    const rt_graph *g = rt_model_graph(f->m);
    const char bad[] = {'\\', '\x01', '\x1f', '\xf8', '\xff', '\x80', '\xbf', '\xc3', '\xed',
                        '\xf0', '\xf5'};
    static const char *const multi[] = {"\xc3\xa9", "\xe2\x9c\x93", "\xf0\x9f\x98\x80",
                                        "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf", "\xc0\xaf",
                                        "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                        "\xf0\x80\x80\xaf", "\xe2\x9c", "\\n", "\\u00e9",
                                        "\\ud83d\\ude00", "\\ud83d", "\\q", "\\u12"};
    long in = rt_graph_find_input(g, "gender", 6);
    assert_true(in >= 0);
    for (size_t len = 1; len <= 40; len++) {
        char val[64], body[200];
        for (size_t i = 0; i < len; i++)
            val[i] = (char)('a' + i % 26);
        val[len] = '\0';
        int col = 0;
        const Predictd__SignatureDef *sig = NULL;
        rt_err err = {{0}};
        int n = snprintf(body, sizeof body, "{\"instances\": [{\"gender\": \"%s\"}]}", val);
        assert_int_equal(rt_json_parse_predict(g, body, (size_t)n, NULL, f->fast, &col, &sig,
                                               &err), RT_OK);
        size_t cnt;
        const rt_value *v = rt_batch_cell(f->fast->batch, 0, (size_t)in, &cnt);
        assert_int_equal(cnt, 1);
        assert_int_equal(v->len, len);
        assert_memory_equal(v->str, val, len);
        for (size_t pos = 0; pos < len; pos++) {
            for (size_t b = 0; b < sizeof bad; b++) {
                char mod[64];
                memcpy(mod, val, len + 1);
                mod[pos] = bad[b];
                n = snprintf(body, sizeof body, "{\"instances\": [{\"gender\": \"%s\"}]}",
                             mod);
                expect_same(f, f->m, RT_METHOD_PREDICT, body, (size_t)n, NULL);
            }
            for (size_t m = 0; m < sizeof multi / sizeof multi[0]; m++) {
                char mod[80];
                size_t ml = strlen(multi[m]);
                memcpy(mod, val, pos);
                memcpy(mod + pos, multi[m], ml);
                memcpy(mod + pos + ml, val + pos, len - pos + 1);
                n = snprintf(body, sizeof body, "{\"instances\": [{\"gender\": \"%s\"}]}",
                             mod);
                expect_same(f, f->m, RT_METHOD_PREDICT, body, (size_t)n, NULL);
            }
        }
    }
}

/* Random mutations of good bodies: the same verdict and batch as the
 * reference, every time (the differential fuzz target does this at
 * scale; this keeps a fixed sample in every make test). */
static void test_parser_mutations(void **state)
{
    fast_fixture *f = *state;
    static const char alphabet[] = "{}[]\",:\\ 0123456789.-eENaIfnulltrb64=/+u\x01\xc3\xff"
                                   "\xc0\xed\xe2\x80\x09\x0c";
    uint64_t rs = 99;
    rt_buf body;
    rt_buf_init(&body);
    for (int it = 0; it < 20000; it++) {
        size_t si = support_rand(&rs) % (sizeof GOOD / sizeof GOOD[0]);
        rt_buf_reset(&body);
        rt_buf_puts(&body, GOOD[si]);
        int muts = 1 + (int)(support_rand(&rs) % 3);
        for (int k = 0; k < muts && body.len > 0; k++) {
            size_t at = support_rand(&rs) % body.len;
            char ch = alphabet[support_rand(&rs) % (sizeof alphabet - 1)];
            switch (support_rand(&rs) % 3) {
            case 0: body.data[at] = ch; break;
            case 1: memmove(body.data + at, body.data + at + 1, body.len - at); body.len--; break;
            default:
                rt_buf_append(&body, "", 1);
                memmove(body.data + at + 1, body.data + at, body.len - at - 1);
                body.data[at] = ch;
                break;
            }
        }
        rt_method method = (rt_method)(support_rand(&rs) % 3);
        expect_same(f, f->m, method, body.data, body.len, NULL);
    }
    rt_buf_free(&body);
}

/* Exports with a CSV and a tf.Example receiver: the inputs are read as the
 * receiver says (decided by the reference on its own), and a refusal that
 * quotes a signature name cut inside a character is valid UTF-8. */
static void test_parser_receivers(void **state)
{
    fast_fixture *f = *state;
    static const char *const FORMATS[] = {"CSV", "EXAMPLE", "JSON"};
    static const char *const BODIES[] = {
        "{\"instances\": [\"39,State-gov,x\", \"1,2\"]}",
        "{\"instances\": [{\"csv_row\": \"39,State-gov\"}]}",
        "{\"instances\": [{\"example_proto\": {\"b64\": \"CgA=\"}}]}",
        "{\"instances\": [{\"b64\": \"CgA=\"}, {\"b64\": \"\"}]}",
        "{\"inputs\": {\"csv_row\": [\"1,2,3\"]}}",
        "{\"inputs\": {\"example_proto\": [{\"b64\": \"CgA=\"}]}}",
        "{\"inputs\": [\"1,2\"]}",
        "{\"instances\": [{\"age\": 3, \"gender\": \"x\"}]}",
        "{\"examples\": [{\"age\": 3}]}",
        "{\"signature_name\": \"classification\", \"instances\": [{\"b64\": \"CgA=\"}]}",
        "{\"signature_name\": \"classification\", \"instances\": [{\"inputs\": "
        "{\"b64\": \"CgA=\"}}]}",
        "{\"signature_name\": \"regression\", \"inputs\": {\"inputs\": [{\"b64\": "
        "\"CgA=\"}]}}",
        /* 99 bytes, then a two-byte character the message's %.100s cuts */
        "{\"signature_name\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9\", \"instances\": []}",
    };
    const char *spec = SUPPORT_SPEC_WIDE_DEEP;
    const char *at = strstr(spec, "\"format\": \"JSON\"");
    assert_non_null(at);
    for (size_t k = 0; k < sizeof FORMATS / sizeof *FORMATS; k++) {
        char text[8192], dir[256], path[1024];
        snprintf(text, sizeof text, "%.*s\"format\": \"%s\"%s", (int)(at - spec), spec,
                 FORMATS[k], at + strlen("\"format\": \"JSON\""));
        Predictd__ModelDef *def = support_spec_modeldef(text);
        assert_non_null(def);
        support_tensors st;
        rt_model *m = NULL;
        rt_err err = {{0}};
        assert_int_equal(support_random_tensors(def, 7, 0.7f, &st), 0);
        assert_int_equal(support_mkdtemp(dir, sizeof dir), 0);
        assert_true(support_write_export(dir, def, &st, 1700000000, path, sizeof path) > 0);
        assert_int_equal(rt_model_open(path, &m, &err), RT_OK);
        for (size_t t = 0; t < sizeof BODIES / sizeof *BODIES; t++)
            for (int method = 0; method < 3; method++)
                expect_same(f, m, (rt_method)method, BODIES[t], strlen(BODIES[t]), NULL);
        rt_model_close(m);
        support_tensors_free(&st);
        rt_spec_modeldef_free(def);
        support_rmtree(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parser_matches_reference, fast_setup,
                                        fast_teardown),
        cmocka_unit_test_setup_teardown(test_parser_string_scan, fast_setup, fast_teardown),
        cmocka_unit_test_setup_teardown(test_parser_mutations, fast_setup, fast_teardown),
        cmocka_unit_test_setup_teardown(test_parser_receivers, fast_setup, fast_teardown),
        cmocka_unit_test(test_float_special_values),
        cmocka_unit_test(test_float_halves_and_integers),
        cmocka_unit_test(test_float_random_bits),
        cmocka_unit_test(test_float_decades_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
