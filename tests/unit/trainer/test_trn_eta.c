/* test_trn_eta.c — the trainer's progress ETA (trn_eta) on known cases,
 * resumes included: after a resume only what this run trained or read
 * counts toward the rate (a run resumed at 75% of its epochs must not show
 * a third of the remaining time). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "trn_internal.h"

static void test_eta_by_steps(void **state)
{
    (void)state;
    /* fresh: 100 steps in 2 s of 1000: 900 left at 50 steps/s = 18 s */
    assert_true(fabs(trn_eta(0, 100, 1000, -1, -1, 2.0) - 18.0) < 1e-9);
    /* resumed at 800: 100 steps in 2 s, 100 left = 2 s (not 800 + 100 steps' rate) */
    assert_true(fabs(trn_eta(800, 900, 1000, 0.7, 0.8, 2.0) - 2.0) < 1e-9);
    /* max_steps wins over the reader's position (the input restarts) */
    assert_true(fabs(trn_eta(0, 100, 1000, 0, 0.9, 2.0) - 18.0) < 1e-9);
    /* no step yet, no time yet: unknown */
    assert_true(trn_eta(5, 5, 1000, -1, -1, 2.0) < 0);
    assert_true(trn_eta(0, 10, 1000, -1, -1, 0.0) < 0);
}

static void test_eta_by_epochs_after_resume(void **state)
{
    (void)state;
    /* fresh: 10% of the epochs in 1 s: 9 s left */
    assert_true(fabs(trn_eta(0, 80, 0, 0.0, 0.1, 1.0) - 9.0) < 1e-9);
    /* resumed at 75%: 5% more in 1 s, 20% left = 4 s (not elapsed * (1 -
     * f) / f = 0.25 s, which counts the earlier run's epochs as this one's) */
    assert_true(fabs(trn_eta(2443, 2483, 0, 0.75, 0.80, 1.0) - 4.0) < 1e-9);
    /* nothing read yet by this run: unknown */
    assert_true(trn_eta(2443, 2443, 0, 0.75, 0.75, 1.0) < 0);
    assert_true(trn_eta(0, 10, 0, -1, -1, 1.0) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eta_by_steps),
        cmocka_unit_test(test_eta_by_epochs_after_resume),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
