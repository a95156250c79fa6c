/* test_time.c — the one clock (runtime/core/rt_time.c): rt_time_now_ns and
 * rt_time_now_ms agree, rt_time_deadline is the monotonic clock plus ns with its
 * nanoseconds normalized (bounded by clock readings taken before and after),
 * and a condition variable of rt_time_cond_init waits on that clock: its
 * timed wait does not give up before a monotonic deadline (one on the wall
 * clock's cv would be long past and return at once). Only lower bounds of
 * elapsed time are checked, which POSIX guarantees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>

#include "rt_core.h"

static int64_t ns_of(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ns_of(&ts);
}

static void test_time_clocks_agree(void **state)
{
    (void)state;
    int64_t a = mono_ns();
    int64_t ns = rt_time_now_ns();
    int64_t ms = rt_time_now_ms();
    int64_t b = mono_ns();
    assert_true(a <= ns && ns <= b);
    assert_true(a / 1000000 <= ms && ms <= b / 1000000);
    double s = rt_time_seconds(0);
    assert_true((double)b * 1e-9 <= s + 1e-6);
}

static void test_time_deadline(void **state)
{
    (void)state;
    static const int64_t add[] = {0,          1,          999999999,  1000000000,
                                  1000000001, 2500000000, 5000000000, 86400000000000};
    for (size_t k = 0; k < sizeof add / sizeof add[0]; k++) {
        struct timespec ts;
        int64_t before = mono_ns();
        rt_time_deadline(&ts, add[k]);
        int64_t after = mono_ns();
        assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
        assert_true(before + add[k] <= ns_of(&ts));
        assert_true(ns_of(&ts) <= after + add[k]);
    }
}

static void test_time_cond_waits_on_the_clock(void **state)
{
    (void)state;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv;
    rt_time_cond_init(&cv);
    struct timespec ts;
    rt_time_deadline(&ts, 50 * 1000000);
    pthread_mutex_lock(&mu);
    int rc;
    do
        rc = pthread_cond_timedwait(&cv, &mu, &ts);
    while (rc == 0); /* a spurious wake-up: wait on */
    pthread_mutex_unlock(&mu);
    assert_int_equal(rc, ETIMEDOUT);
    assert_true(mono_ns() >= ns_of(&ts));
    pthread_cond_destroy(&cv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_clocks_agree),
        cmocka_unit_test(test_time_deadline),
        cmocka_unit_test(test_time_cond_waits_on_the_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
