/* test_raw.c — the raw-input code training and serving share (rt_raw.c):
 * CSV splitting (quotes, blanks, NUL bytes, field counts), numeric cells,
 * defaults of empty cells, trimming, and the activations (ReLU keeps NaN as
 * TensorFlow's Relu does), each against known answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "rt.h"

/* Splits row and checks the fields against want[0..n). */
static void split_is(const char *row, size_t len, const char *const *want, size_t n)
{
    char out[256];
    rt_csv_span sp[16];
    rt_err err = {{0}};
    long got = rt_raw_csv_split(row, len, out, sp, 16, &err);
    if (got != (long)n)
        fail_msg("split of \"%s\": %ld fields (%s), want %zu", row, got, err.msg, n);
    for (size_t i = 0; i < n; i++) {
        if (sp[i].len != strlen(want[i]) || memcmp(out + sp[i].off, want[i], sp[i].len) != 0)
            fail_msg("split of \"%s\": field %zu is \"%.*s\", want \"%s\"", row, i + 1,
                     (int)sp[i].len, out + sp[i].off, want[i]);
    }
}

static void split_fails(const char *row, size_t len, const char *msg)
{
    char out[256];
    rt_csv_span sp[16];
    rt_err err = {{0}};
    assert_int_equal(rt_raw_csv_split(row, len, out, sp, 16, &err), -1);
    if (!strstr(err.msg, msg))
        fail_msg("split of \"%s\": message \"%s\", want \"%s\"", row, err.msg, msg);
}

static void test_csv_split(void **state)
{
    (void)state;
    split_is("a,b,c", 5, (const char *[]){"a", "b", "c"}, 3);
    /* unquoted fields keep their blanks (cells are trimmed when read) */
    split_is("39, State-gov, 77516", 20, (const char *[]){"39", " State-gov", " 77516"}, 3);
    /* quotes: commas and doubled quotes inside, blanks around dropped */
    split_is(" \"a, b\" , \"x\"\"y\",\"\"", 19, (const char *[]){"a, b", "x\"y", ""}, 3);
    split_is("", 0, (const char *[]){""}, 1);
    split_is(",", 1, (const char *[]){"", ""}, 2);
    split_is("a,", 2, (const char *[]){"a", ""}, 2);
    split_fails("1, \"open", 8, "field 2: unterminated quote");
    split_fails("\"a\" b, c", 8, "field 1: text after the closing quote");
    /* a NUL byte anywhere in a field, quoted or not, string or number */
    split_fails("1, a\0b, 3", 9, "field 2: contains a NUL byte");
    split_fails("1, \"a\0\", 3", 10, "field 2: contains a NUL byte");
    split_fails("1, 2, 3\0", 8, "field 3: contains a NUL byte");
    /* more fields than spans: counted, the first max kept */
    char out[16];
    rt_csv_span sp[2];
    assert_int_equal(rt_raw_csv_split("a,b,c,d", 7, out, sp, 2, NULL), 4);
    assert_int_equal(sp[1].off, 1);
    assert_int_equal(sp[1].len, 1);
    assert_int_equal(out[sp[1].off], 'b');
}

static void test_numbers(void **state)
{
    (void)state;
    double v = 0;
    assert_int_equal(rt_raw_number(" 42 ", 4, &v), RT_OK);
    assert_true(v == 42.0);
    assert_int_equal(rt_raw_number("\t-1.5e3", 7, &v), RT_OK);
    assert_true(v == -1500.0);
    assert_int_equal(rt_raw_number("nan", 3, &v), RT_OK);
    assert_true(isnan(v));
    assert_int_equal(rt_raw_number("", 0, &v), RT_ERR_NOTFOUND);
    assert_int_equal(rt_raw_number("  \t", 3, &v), RT_ERR_NOTFOUND);
    assert_int_equal(rt_raw_number("12a", 3, &v), RT_ERR_INVALID);
    assert_int_equal(rt_raw_number("1 2", 3, &v), RT_ERR_INVALID);
    assert_int_equal(rt_raw_number("1\0", 2, &v), RT_ERR_INVALID);
    char longnum[80];
    memset(longnum, '1', sizeof longnum);
    assert_int_equal(rt_raw_number(longnum, 63, &v), RT_OK);
    assert_int_equal(rt_raw_number(longnum, 64, &v), RT_ERR_INVALID);
    rt_err err = {{0}};
    assert_int_equal(rt_raw_number_error(&err, 2, "age", " abc ", 5), RT_ERR_INVALID);
    assert_string_equal(err.msg, "field 3 (age): expected a number, got \"abc\"");
    assert_int_equal(rt_raw_number_error(&err, 0, NULL, "x", 1), RT_ERR_INVALID);
    assert_string_equal(err.msg, "field 1: expected a number, got \"x\"");
}

static void test_trim(void **state)
{
    (void)state;
    size_t n = 9;
    const char *s = rt_buf_trim_span(" \t\vab c\f\r", &n);
    assert_int_equal(n, 4);
    assert_memory_equal(s, "ab c", 4);
    n = 3;
    rt_buf_trim_span("   ", &n);
    assert_int_equal(n, 0);
}

static void test_activations(void **state)
{
    (void)state;
    float y[6] = {-2.0f, 0.0f, 3.0f, NAN, INFINITY, -INFINITY};
    rt_activate(PREDICTD__ACTIVATION__ACT_RELU, y, 6);
    assert_true(y[0] == 0.0f && y[1] == 0.0f && y[2] == 3.0f);
    assert_true(isnan(y[3])); /* tf.nn.relu(NaN) is NaN: not hidden as 0 */
    assert_true(isinf(y[4]) && y[4] > 0 && y[5] == 0.0f);

    float e[3] = {-1.0f, 2.0f, NAN};
    rt_activate(PREDICTD__ACTIVATION__ACT_ELU, e, 3);
    assert_true(fabsf(e[0] - (float)(exp(-1.0) - 1.0)) < 1e-7f);
    assert_true(e[1] == 2.0f && isnan(e[2]));

    float s[4] = {0.0f, -100.0f, 100.0f, 1.0f};
    rt_activate(PREDICTD__ACTIVATION__ACT_SIGMOID, s, 4);
    assert_true(s[0] == 0.5f);
    assert_true(s[1] > 0.0f && s[1] < 1e-40f); /* no overflow: e^100 never taken */
    assert_true(s[2] == 1.0f);
    assert_true(fabsf(s[3] - (float)(1.0 / (1.0 + exp(-1.0)))) < 1e-7f);

    float t[2] = {0.5f, -30.0f};
    rt_activate(PREDICTD__ACTIVATION__ACT_TANH, t, 2);
    assert_true(fabsf(t[0] - (float)tanh(0.5)) < 1e-7f && t[1] == -1.0f);

    float l[2] = {-7.0f, NAN};
    rt_activate(PREDICTD__ACTIVATION__ACT_LINEAR, l, 2);
    assert_true(l[0] == -7.0f && isnan(l[1]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_split),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_activations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
