/* test_buf.c — the runtime's growable memory: rt_grow (the one way every
 * module grows an array) keeps the elements, doubles from RT_GROW_FIRST,
 * reaches a need past the doubling at once, and refuses a size that
 * overflows size_t leaving the array as it was; rt_buf's error sticks: after
 * a failed reserve every append (bytes, printf, JSON string, float) is a
 * no-op returning -1, the text before the failure stays, rt_buf_failed
 * tells, and rt_buf_reset / rt_buf_free clear it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt.h"

static void test_grow(void **state)
{
    (void)state;
    int64_t *a = NULL;
    size_t cap = 0;
    assert_int_equal(rt_grow(&a, &cap, 0, sizeof *a), 0); /* nothing needed */
    assert_null(a);
    for (size_t i = 0; i < 1000; i++) {
        assert_int_equal(rt_grow(&a, &cap, i + 1, sizeof *a), 0);
        assert_true(cap >= i + 1);
        a[i] = (int64_t)i * 7;
    }
    assert_int_equal(cap, 1024); /* 16, 32, ... doubled */
    for (size_t i = 0; i < 1000; i++)
        assert_int_equal(a[i], (int64_t)i * 7);
    assert_int_equal(rt_grow(&a, &cap, 5000, sizeof *a), 0); /* past the doubling */
    assert_int_equal(cap, 8192);
    int64_t *before = a;
    assert_int_equal(rt_grow(&a, &cap, SIZE_MAX / 4, sizeof *a), -1); /* overflows */
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 8192);
    assert_int_equal(a[999], 999 * 7);
    free(a);

    /* a small need: the first capacity */
    char *b = NULL;
    size_t bcap = 0;
    assert_int_equal(rt_grow(&b, &bcap, 3, 1), 0);
    assert_int_equal(bcap, RT_GROW_FIRST);
    free(b);
}

static void test_sticky(void **state)
{
    (void)state;
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(rt_buf_failed(&b), 0);
    assert_int_equal(rt_buf_puts(&b, "kept"), 0);
    assert_int_equal(rt_buf_reserve(&b, SIZE_MAX), -1); /* overflows: fails */
    assert_int_equal(rt_buf_failed(&b), -1);
    assert_int_equal(rt_buf_puts(&b, "x"), -1); /* would fit: still refused */
    assert_int_equal(rt_buf_printf(&b, "%d", 42), -1);
    assert_int_equal(rt_buf_json_string(&b, "s", 1), -1);
    assert_int_equal(rt_buf_json_float(&b, 1.5f), -1);
    assert_int_equal(rt_buf_append(&b, "", 0), -1);
    assert_int_equal(b.len, 4);
    assert_string_equal(b.data, "kept");
    assert_int_equal(rt_buf_failed(&b), -1);
    rt_buf_reset(&b); /* new text: the error goes with the old */
    assert_int_equal(rt_buf_failed(&b), 0);
    assert_int_equal(rt_buf_puts(&b, "new"), 0);
    assert_string_equal(b.data, "new");
    assert_int_equal(rt_buf_json_string(&b, "s", SIZE_MAX / 2), -1); /* too long */
    assert_int_equal(rt_buf_failed(&b), -1);
    rt_buf_free(&b);
    assert_int_equal(rt_buf_failed(&b), 0);
    assert_int_equal(rt_buf_puts(&b, "again"), 0);
    assert_string_equal(b.data, "again");
    rt_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
