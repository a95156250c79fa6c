/* test_pm_json_check.c — pm_json_check (pmodel/pm_json_check.c), the strict
 * JSON test batch-predict puts each JSONL line through (issue 35 item 8):
 * RFC 8259's grammar and nothing more, as Python's json.loads(strict=True)
 * reads it (less NaN and Infinity, which json.loads takes and RFC 8259 does
 * not), each refusal with the byte offset where the text stops being JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pm.h"

static int check(const char *s)
{
    return pm_json_check(s, strlen(s), NULL, NULL);
}

static void test_json_values(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "{}", "[]", " {\"a\": 1} ", "{\"a\": [1, -2.5e+3, 0, 0.1, 1E9, true, false, null]}",
        "\"\\u00e9\\n\\\\\\/\"", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "-0",
        "{\"a\": {\"b\": {\"c\": []}}}", "\t[ 1 ,2 ]\r\n", "12345678901234567890",
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++)
        assert_int_equal(check(ok[k]), 0);
}

static void test_json_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t at;
        const char *why;
    } bad[] = {
        {"{\"a\": 1,,}", 8, "an object key that is not a string"},
        {"{\"a\": 01}", 7, "a missing ',' or '}' in an object"},
        {"{\"a\": NaN}", 6, "not a JSON value"},
        {"[Infinity]", 1, "not a JSON value"},
        {"{\"a\" 1}", 5, "a missing ':' after an object key"},
        {"\"bad \\x\"", 5, "an invalid escape in a string"},
        {"\"tab\there\"", 4, "a control character inside a string"},
        {"\"\\u12g4\"", 1, "a \\u escape without four hex digits"},
        {"\"\xff\"", 1, "invalid UTF-8 in a string"},
        {"\"\xc0\xaf\"", 1, "invalid UTF-8 in a string"},        /* overlong */
        {"\"\xed\xa0\x80\"", 1, "invalid UTF-8 in a string"},    /* a surrogate */
        {"[1, 2", 5, "a missing ',' or ']' in an array"},
        {"1.", 2, "a number without digits after its point"},
        {"1e", 2, "a number without digits in its exponent"},
        {"+1", 0, "not a JSON value"},
        {"{} {}", 3, "more text after the value"},
        {"", 0, "a missing value"},
        {"\"open", 5, "an unterminated string"},
        {"[tru]", 1, "not a JSON value"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t at = 99;
        const char *why = NULL;
        assert_int_equal(pm_json_check(bad[k].s, strlen(bad[k].s), &at, &why), -1);
        assert_string_equal(why, bad[k].why);
        assert_int_equal(at, bad[k].at);
    }
    /* a NUL byte is a control character, and the length is the caller's */
    assert_int_equal(pm_json_check("\"a\0b\"", 5, NULL, NULL), -1);
    assert_int_equal(pm_json_check("[1]xyz", 3, NULL, NULL), 0);
}

static void test_json_depth(void **state)
{
    (void)state;
    char deep[2100];
    memset(deep, '[', 1000);
    memset(deep + 1000, ']', 1000);
    deep[2000] = '\0';
    const char *why = NULL;
    assert_int_equal(pm_json_check(deep, 2000, NULL, &why), -1);
    assert_string_equal(why, "nested too deeply");
    assert_int_equal(pm_json_check(deep + 600, 800, NULL, NULL), 0); /* 400 deep */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_values),
        cmocka_unit_test(test_json_refusals),
        cmocka_unit_test(test_json_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
