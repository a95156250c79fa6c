/* test_srv_admit.c — the adaptive admission limit: it starts at its max and
 * refuses past it; a late answer cuts it by a quarter, once per episode
 * (tickets issued before the cut cannot cut again); answers in time grow
 * it by 1/limit up to the max; it never goes under its floor (1, or the
 * workers: test_floor_is_the_workers); a slot given back
 * unanswered changes nothing; weighted requests count their units, one
 * heavier than the limit runs alone. Waits are arguments: no clock is read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "srv.h"

#define MS 1000000LL /* ns */

static srv_admit *admit(size_t max, int target_ms)
{
    srv_admit *a = NULL;
    assert_int_equal(srv_admit_new(max, 1, target_ms * MS, &a, NULL), RT_OK);
    return a;
}

/* Takes up to n slots; returns how many were given (their tickets in t). */
static size_t take(srv_admit *a, size_t n, uint64_t *t)
{
    size_t k = 0;
    while (k < n && (t[k] = srv_admit_take(a)) != 0)
        k++;
    return k;
}

static void test_limit_refuses_past_max(void **state)
{
    (void)state;
    srv_admit *a = admit(5, 2);
    uint64_t t[8];
    assert_int_equal(take(a, 8, t), 5);
    assert_int_equal(srv_admit_in_flight(a), 5);
    assert_int_equal(srv_admit_take(a), 0); /* still refused */
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(t[i], i + 1); /* tickets count admissions */
    srv_admit_done(a, t[0], true, 1 * MS); /* one answered in time */
    uint64_t again = srv_admit_take(a);
    assert_int_equal(again, 6);
    assert_int_equal(srv_admit_take(a), 0);
    assert_int_equal(srv_admit_limit(a), 5); /* in time at the max: stays */
    srv_admit_free(a);
}

static void test_late_cuts_once_per_episode(void **state)
{
    (void)state;
    srv_admit *a = admit(32, 2);
    uint64_t t[32];
    assert_int_equal(take(a, 32, t), 32);
    srv_admit_done(a, t[0], true, 3 * MS); /* late: 32 -> 24 */
    assert_int_equal(srv_admit_limit(a), 24);
    /* the rest of the episode: admitted before the cut, no further cut */
    for (int i = 1; i < 10; i++)
        srv_admit_done(a, t[i], true, 50 * MS);
    assert_int_equal(srv_admit_limit(a), 24);
    assert_int_equal(srv_admit_in_flight(a), 22);
    /* 22 in flight under a limit of 24: two more, then refused */
    uint64_t u[4];
    assert_int_equal(take(a, 4, u), 2);
    /* a request admitted after the cut that is late again: 24 -> 18 */
    srv_admit_done(a, u[0], true, 3 * MS);
    assert_int_equal(srv_admit_limit(a), 18);
    /* exactly the target is in time */
    srv_admit_done(a, u[1], true, 2 * MS);
    assert_true(srv_admit_limit(a) == 18); /* 18 + 1/18: still 18 whole */
    srv_admit_free(a);
}

static void test_grows_back_to_max_not_past(void **state)
{
    (void)state;
    srv_admit *a = admit(8, 1);
    uint64_t t;
    /* cut to the floor: each late answer from a fresh ticket cuts */
    for (int i = 0; i < 20; i++) {
        t = srv_admit_take(a);
        assert_true(t != 0);
        srv_admit_done(a, t, true, 5 * MS);
    }
    assert_int_equal(srv_admit_limit(a), 1);
    t = srv_admit_take(a);
    assert_true(t != 0);
    assert_int_equal(srv_admit_take(a), 0); /* a limit of 1: one at a time */
    srv_admit_done(a, t, true, 0);          /* in time: 1 -> 2 */
    assert_int_equal(srv_admit_limit(a), 2);
    /* additive increase: 1/limit per answer in time, capped at the max */
    size_t prev = 2;
    for (int i = 0; i < 200; i++) {
        t = srv_admit_take(a);
        srv_admit_done(a, t, true, 0);
        size_t now = srv_admit_limit(a);
        assert_true(now >= prev && now <= prev + 1);
        prev = now;
    }
    assert_int_equal(srv_admit_limit(a), 8);
    srv_admit_free(a);
}

static void test_unanswered_only_frees(void **state)
{
    (void)state;
    srv_admit *a = admit(4, 1);
    uint64_t t[4];
    assert_int_equal(take(a, 4, t), 4);
    srv_admit_done(a, t[0], false, 100 * MS); /* e.g. its connection died */
    assert_int_equal(srv_admit_limit(a), 4);
    assert_int_equal(srv_admit_in_flight(a), 3);
    srv_admit_free(a);
    srv_admit_free(NULL);
}

/* Weighted requests (an :explain's rows): admitted while the units fit
 * under the limit; one heavier than the limit only when nothing is in
 * flight, counted at the max; answered in time, the limit grows by
 * weight/limit. */
static void test_weighted(void **state)
{
    (void)state;
    srv_admit *a = admit(10, 2);
    uint64_t w3 = srv_admit_take_weighted(a, 3);
    assert_true(w3 != 0);
    assert_int_equal(srv_admit_in_flight(a), 3);
    uint64_t w7 = srv_admit_take_weighted(a, 7); /* 3 + 7 = 10: fits */
    assert_true(w7 != 0);
    assert_int_equal(srv_admit_take(a), 0); /* 11 > 10 */
    srv_admit_done_weighted(a, w7, 7, true, 1 * MS);
    assert_int_equal(srv_admit_in_flight(a), 3);
    assert_int_equal(srv_admit_take_weighted(a, 8), 0); /* 3 + 8 > 10 */
    /* heavier than the limit: refused while anything is in flight */
    assert_int_equal(srv_admit_take_weighted(a, 50), 0);
    srv_admit_done_weighted(a, w3, 3, false, 0);
    assert_int_equal(srv_admit_in_flight(a), 0);
    uint64_t big = srv_admit_take_weighted(a, 50); /* alone: admitted, as 10 */
    assert_true(big != 0);
    assert_int_equal(srv_admit_in_flight(a), 10);
    assert_int_equal(srv_admit_take(a), 0);
    srv_admit_done_weighted(a, big, 50, true, 1 * MS);
    assert_int_equal(srv_admit_in_flight(a), 0);
    /* a late heavy one cuts by a quarter, once; in time it grows by w/limit */
    big = srv_admit_take_weighted(a, 4);
    srv_admit_done_weighted(a, big, 4, true, 3 * MS); /* 10 -> 7.5 */
    assert_int_equal(srv_admit_limit(a), 7);
    uint64_t w = srv_admit_take_weighted(a, 5);
    srv_admit_done_weighted(a, w, 5, true, 1 * MS); /* 7.5 + 5/7.5 = 8.17 */
    assert_int_equal(srv_admit_limit(a), 8);
    srv_admit_free(a);
}

static void test_bad_params(void **state)
{
    (void)state;
    srv_admit *a = (srv_admit *)1;
    rt_err err = {{0}};
    assert_int_equal(srv_admit_new(0, 1, MS, &a, &err), RT_ERR_INVALID);
    assert_null(a);
    assert_int_equal(srv_admit_new(4, 1, 0, &a, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "admission"));
    assert_int_equal(srv_admit_new(4, 0, MS, &a, &err), RT_ERR_INVALID);
    assert_int_equal(srv_admit_new(4, 5, MS, &a, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "floor 5"));
    assert_null(a);
}

/* With a floor (the workers), late answers cut the limit down to it and no
 * further: as many requests as there are workers are always admitted, so
 * no worker idles while requests are refused (cut to 1, a daemon with four
 * workers would run one request at a time). */
static void test_floor_is_the_workers(void **state)
{
    (void)state;
    srv_admit *a = NULL;
    assert_int_equal(srv_admit_new(36, 4, 2 * MS, &a, NULL), RT_OK);
    for (int i = 0; i < 50; i++) {
        uint64_t t = srv_admit_take(a);
        assert_true(t != 0);
        srv_admit_done(a, t, true, 500 * MS); /* every one late */
    }
    assert_int_equal(srv_admit_limit(a), 4);
    uint64_t t[5];
    assert_int_equal(take(a, 5, t), 4); /* the floor: four at once, not one */
    srv_admit_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_refuses_past_max),
        cmocka_unit_test(test_late_cuts_once_per_episode),
        cmocka_unit_test(test_grows_back_to_max_not_past),
        cmocka_unit_test(test_unanswered_only_frees),
        cmocka_unit_test(test_weighted),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_floor_is_the_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
