/* test_srv_pool.c — the inference worker pool: every job runs exactly once,
 * on a valid worker; a full queue refuses at once; reservations cannot be
 * overtaken; freeing runs what is queued; a wait limit refuses while the
 * oldest job has waited past it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "srv.h"

typedef struct counter {
    atomic_int runs[1000];
    atomic_int bad_worker;
    int workers;
    pthread_mutex_t gate_mu; /* held by the test to block the workers */
} counter;

static void job_count(void *ctx, void *job, int worker)
{
    counter *c = ctx;
    if (worker < 0 || worker >= c->workers)
        atomic_fetch_add(&c->bad_worker, 1);
    atomic_fetch_add(&c->runs[(intptr_t)job], 1);
}

static void job_gated(void *ctx, void *job, int worker)
{
    counter *c = ctx;
    pthread_mutex_lock(&c->gate_mu);
    pthread_mutex_unlock(&c->gate_mu);
    job_count(ctx, job, worker);
}

static void test_every_job_runs_once(void **state)
{
    (void)state;
    static counter c;
    memset(&c, 0, sizeof c);
    c.workers = 3;
    srv_pool *p = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_pool_new(3, 1000, job_count, &c, &p, &err), RT_OK);
    for (intptr_t i = 0; i < 1000; i++)
        assert_true(srv_pool_submit(p, (void *)i));
    srv_pool_free(p); /* runs what is queued, then joins */
    for (int i = 0; i < 1000; i++)
        assert_int_equal(atomic_load(&c.runs[i]), 1);
    assert_int_equal(atomic_load(&c.bad_worker), 0);
}

/* A pool of one worker held in job 0 (c->gate_mu locked) and an empty
 * queue of max_queue slots. */
static srv_pool *gated_pool(counter *c, size_t max_queue, int max_wait_ms)
{
    memset(c, 0, sizeof *c);
    c->workers = 1;
    pthread_mutex_init(&c->gate_mu, NULL);
    pthread_mutex_lock(&c->gate_mu); /* the worker blocks in its first job */
    srv_pool *p = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_pool_new(1, max_queue, job_gated, c, &p, &err), RT_OK);
    srv_pool_set_max_wait(p, max_wait_ms);
    assert_true(srv_pool_submit(p, (void *)0));
    /* Wait (bounded) until the worker took job 0, so the queue is empty. */
    for (int i = 0; i < 2000 && srv_pool_running(p) == 0; i++)
        usleep(1000);
    assert_int_equal(srv_pool_running(p), 1);
    return p;
}

static void test_full_queue_refuses(void **state)
{
    (void)state;
    static counter c;
    srv_pool *p = gated_pool(&c, 2, 0);
    assert_true(srv_pool_reserve(p));       /* slot 1 promised */
    assert_true(srv_pool_submit(p, (void *)2)); /* slot 2 */
    assert_false(srv_pool_submit(p, (void *)3)); /* full: promised + queued */
    assert_false(srv_pool_reserve(p));
    assert_int_equal(srv_pool_depth(p), 1);
    srv_pool_submit_reserved(p, (void *)1);
    assert_int_equal(srv_pool_depth(p), 2);
    pthread_mutex_unlock(&c.gate_mu);
    srv_pool_free(p);
    assert_int_equal(atomic_load(&c.runs[0]), 1);
    assert_int_equal(atomic_load(&c.runs[1]), 1);
    assert_int_equal(atomic_load(&c.runs[2]), 1);
    assert_int_equal(atomic_load(&c.runs[3]), 0);
    pthread_mutex_destroy(&c.gate_mu);
}

static void test_bad_params(void **state)
{
    (void)state;
    srv_pool *p = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_pool_new(0, 4, job_count, NULL, &p, &err), RT_ERR_INVALID);
    assert_null(p);
    assert_int_equal(srv_pool_new(2, 0, job_count, NULL, &p, &err), RT_ERR_INVALID);
    srv_pool_free(NULL);
}

/* With a wait limit, a queue whose oldest job has waited past it refuses
 * new jobs (at once) though it has room; once the workers catch up it takes
 * them again. The test only waits longer than the limit, never bounds a
 * duration from above. */
static void test_wait_limit_refuses(void **state)
{
    (void)state;
    static counter c;
    srv_pool *p = gated_pool(&c, 100, 5);
    assert_true(srv_pool_submit(p, (void *)1)); /* the queue is empty: taken */
    usleep(20000);                              /* job 1 has now waited > 5 ms */
    assert_false(srv_pool_submit(p, (void *)2)); /* room for 99 more, refused */
    assert_false(srv_pool_reserve(p));
    assert_int_equal(srv_pool_depth(p), 1);
    srv_pool_set_max_wait(p, 0); /* no limit: only the count matters */
    assert_true(srv_pool_submit(p, (void *)2));
    srv_pool_set_max_wait(p, 5);
    pthread_mutex_unlock(&c.gate_mu); /* the worker catches up */
    for (int i = 0; i < 2000 && srv_pool_depth(p) > 0; i++)
        usleep(1000);
    assert_int_equal(srv_pool_depth(p), 0);
    assert_true(srv_pool_submit(p, (void *)3)); /* empty again: taken */
    srv_pool_free(p);
    for (int i = 0; i < 4; i++)
        assert_int_equal(atomic_load(&c.runs[i]), 1);
    assert_int_equal(atomic_load(&c.runs[4]), 0);
    pthread_mutex_destroy(&c.gate_mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_job_runs_once),
        cmocka_unit_test(test_full_queue_refuses),
        cmocka_unit_test(test_wait_limit_refuses),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
