/* test_jnum.c — the request reader's numbers (runtime/serve/rt_jr.c, its
 * Clinger fast path for short decimals) are bit for bit what strtod reads
 * from the same literal: tricky known values, and millions of random
 * integers, short decimals, exponents, negative zeros, subnormals near the
 * boundary and 15/16/17-digit mantissas. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_json_internal.h"

/* The literal through rt_jr_value and through strtod: same bits. */
static void check(const char *text)
{
    rt_buf sb, kb;
    rt_buf_init(&sb);
    rt_buf_init(&kb);
    rt_err err = {0};
    rt_jr r;
    rt_jr_init(&r, text, strlen(text), 8, &sb, &kb, &err);
    rt_jv v;
    rt_status st = rt_jr_value(&r, &v);
    if (st != RT_OK || v.kind != RT_JV_NUMBER)
        fail_msg("%s: not read as a number (%s)", text, err.msg);
    double want = strtod(text, NULL);
    uint64_t a, b;
    memcpy(&a, &v.num, 8);
    memcpy(&b, &want, 8);
    if (a != b)
        fail_msg("%s: reader %.17g (%016llx), strtod %.17g (%016llx)", text, v.num,
                 (unsigned long long)a, want, (unsigned long long)b);
    rt_jr_done(&r);
    rt_buf_free(&sb);
    rt_buf_free(&kb);
}

static void test_known_values(void **state)
{
    (void)state;
    static const char *const v[] = {
        "0", "-0", "0.0", "-0.0", "0e0", "-0e5", "0.000e-999", "1", "-1", "25.0", "40.0",
        "0.1", "0.2", "0.3", "1.5", "9007199254740993", "9007199254740993.0",
        "123456789012345", "1234567890123456", "12345678901234567", "999999999999999e22",
        "999999999999999e23", "1e22", "1e23", "1e-22", "1e-23", "1E+22", "4.9e-324",
        "2.2250738585072011e-308", "2.2250738585072014e-308", "1.7976931348623157e308",
        "1e309", "-1e400", "1e-400", "0.000000000000000000000000000001", "3.14159265358979",
        "2.718281828459045", "7.038531e-26", "8.9255e-18", "89255.0e-22", "1.00000000000000011",
        "0.30000000000000004", "100000000000000000000000", "1e0000000000000000000001",
        "123.456e-3", "1.2345678901234567890123", "5e-324", "2.4703282292062327e-324",
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        check(v[i]);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A random literal in JSON's grammar: ndig digits with a point somewhere,
 * maybe an exponent in [-emax, emax]. */
static void random_literal(char *out, int ndig, int emax)
{
    char *p = out;
    if (next() & 1)
        *p++ = '-';
    int point = (int)(next() % (unsigned)(ndig + 1));
    for (int i = 0; i < ndig; i++) {
        if (i == point && i > 0)
            *p++ = '.';
        int d = (int)(next() % 10);
        if (i == 0 && point != 1 && d == 0 && ndig > 1)
            d = 1 + (int)(next() % 9); /* no leading zero */
        *p++ = (char)('0' + d);
    }
    if (emax > 0 && (next() & 1))
        p += sprintf(p, "e%d", (int)(next() % (unsigned)(2 * emax + 1)) - emax);
    *p = '\0';
}

static void test_random_decimals(void **state)
{
    (void)state;
    char buf[64];
    for (int i = 0; i < 3000000; i++) {
        int ndig = 1 + (int)(next() % 18); /* 1..18: 15, 16, 17 included */
        int emax = (int)(next() % 4) == 0 ? 0 : (next() & 1) ? 25 : 330;
        random_literal(buf, ndig, emax);
        check(buf);
    }
}

static void test_subnormal_boundary(void **state)
{
    (void)state;
    char buf[64];
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = (next() % 0x0020000000000000ull); /* subnormals and the first normals */
        double d;
        memcpy(&d, &bits, 8);
        snprintf(buf, sizeof buf, "%.*e", (int)(next() % 17), d);
        check(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_random_decimals),
        cmocka_unit_test(test_subnormal_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
