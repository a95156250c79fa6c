/* test_srv_batch.c — the cross-request batch scheduler (srv_batch.c) and the
 * batching knobs of the config and command line.
 *
 * The scheduler tests use a 10 s batch timeout, so a batch runs only when it
 * is full or the scheduler stops: what ends up in which batch does not
 * depend on timing. A batch function records every batch it sees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "srv.h"

#define MAX_SEEN 64

typedef struct seen_batch {
    size_t n;
    intptr_t jobs[16];
} seen_batch;

typedef struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    seen_batch b[MAX_SEEN];
    size_t n;
} recorder;

static void record(void *ctx, void *const *jobs, size_t n, int thread)
{
    recorder *r = ctx;
    (void)thread;
    pthread_mutex_lock(&r->mu);
    if (r->n < MAX_SEEN) {
        seen_batch *s = &r->b[r->n++];
        s->n = n;
        for (size_t i = 0; i < n && i < 16; i++)
            s->jobs[i] = (intptr_t)jobs[i];
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void recorder_init(recorder *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

/* Waits (at most 20 s: a liveness bound, not a timing check) until n
 * batches were recorded; returns how many there are. */
static size_t wait_batches(recorder *r, size_t n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&r->mu);
    while (r->n < n && pthread_cond_timedwait(&r->cv, &r->mu, &until) == 0)
        ;
    size_t got = r->n;
    pthread_mutex_unlock(&r->mu);
    return got;
}

static srv_batcher *start(recorder *r, size_t max_batch, size_t max_enqueued, int threads)
{
    srv_batcher_params p = srv_batcher_default_params();
    p.max_batch_size = max_batch;
    p.timeout_us = 10000000; /* 10 s: only full batches run before stop */
    p.max_enqueued_batches = max_enqueued;
    p.threads = threads;
    srv_batcher *b = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_batcher_new(&p, record, r, &b, &err), RT_OK);
    return b;
}

static const int KEY_A = 1, KEY_B = 2, SIG = 3;

static void test_defaults(void **state)
{
    (void)state;
    srv_batcher_params p = srv_batcher_default_params();
    assert_int_equal(p.max_batch_size, 128);
    assert_int_equal(p.timeout_us, 1000);
    srv_batcher *b = NULL;
    rt_err err = {{0}};
    p.max_batch_size = 0;
    assert_int_equal(srv_batcher_new(&p, record, NULL, &b, &err), RT_ERR_INVALID);
    assert_null(b);
    assert_non_null(strstr(err.msg, "max_batch_size"));
    srv_batcher_free(NULL);
    srv_batcher_stop(NULL);
}

/* A full batch runs at once, its jobs in submission order. */
static void test_full_batch_runs(void **state)
{
    (void)state;
    recorder r;
    recorder_init(&r);
    srv_batcher *b = start(&r, 4, 8, 2);
    for (intptr_t j = 1; j <= 4; j++)
        assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 1, (void *)j), SRV_BATCH_QUEUED);
    assert_int_equal(wait_batches(&r, 1), 1);
    assert_int_equal(r.b[0].n, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(r.b[0].jobs[i], (intptr_t)i + 1);
    assert_int_equal(srv_batcher_depth(b), 0);
    srv_batcher_free(b);
    assert_int_equal(r.n, 1);
}

/* A job that does not fit closes the open batch (it runs as it is) and
 * opens the next; keys never mix; stop runs what waits. */
static void test_split_keys_and_stop(void **state)
{
    (void)state;
    recorder r;
    recorder_init(&r);
    srv_batcher *b = start(&r, 4, 8, 1);
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 3, (void *)1), SRV_BATCH_QUEUED);
    assert_int_equal(srv_batcher_submit(b, &KEY_B, &SIG, 1, (void *)2), SRV_BATCH_QUEUED);
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 2, (void *)3), SRV_BATCH_QUEUED);
    /* A's first batch (3 instances) was closed by job 3 and runs now. */
    assert_int_equal(wait_batches(&r, 1), 1);
    assert_int_equal(r.b[0].n, 1);
    assert_int_equal(r.b[0].jobs[0], 1);
    assert_int_equal(srv_batcher_depth(b), 2); /* B's and A's second, waiting */
    /* the same key with another signature is another batch */
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &KEY_B, 1, (void *)4), SRV_BATCH_QUEUED);
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 1, (void *)5), SRV_BATCH_QUEUED);
    assert_int_equal(srv_batcher_depth(b), 3);
    srv_batcher_stop(b); /* runs the rest at once, oldest first */
    assert_int_equal(r.n, 4);
    assert_int_equal(r.b[1].n, 1);
    assert_int_equal(r.b[1].jobs[0], 2);
    assert_int_equal(r.b[2].n, 2);
    assert_int_equal(r.b[2].jobs[0], 3);
    assert_int_equal(r.b[2].jobs[1], 5);
    assert_int_equal(r.b[3].n, 1);
    assert_int_equal(r.b[3].jobs[0], 4);
    /* stopped: refused */
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 1, (void *)6), SRV_BATCH_FULL);
    srv_batcher_free(b);
    assert_int_equal(r.n, 4);
}

/* max_enqueued_batches bounds the waiting batches, not the jobs; sizes
 * outside 1..max_batch_size are refused for running alone. */
static void test_queue_bound(void **state)
{
    (void)state;
    recorder r;
    recorder_init(&r);
    srv_batcher *b = start(&r, 4, 2, 1);
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 0, (void *)1), SRV_BATCH_TOO_BIG);
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 5, (void *)1), SRV_BATCH_TOO_BIG);
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 1, (void *)1), SRV_BATCH_QUEUED);
    assert_int_equal(srv_batcher_submit(b, &KEY_B, &SIG, 1, (void *)2), SRV_BATCH_QUEUED);
    /* a third batch would wait: refused */
    assert_int_equal(srv_batcher_submit(b, &SIG, &SIG, 1, (void *)3), SRV_BATCH_FULL);
    /* joining an open batch needs no new one */
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 2, (void *)4), SRV_BATCH_QUEUED);
    assert_int_equal(srv_batcher_depth(b), 2);
    assert_int_equal(r.n, 0);
    srv_batcher_free(b);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.b[0].n, 2); /* A: jobs 1 and 4 */
    assert_int_equal(r.b[0].jobs[1], 4);
}

/* With a short timeout a lone job runs without company. */
static void test_timeout_runs_lone_job(void **state)
{
    (void)state;
    recorder r;
    recorder_init(&r);
    srv_batcher_params p = srv_batcher_default_params();
    p.timeout_us = 1000;
    srv_batcher *b = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_batcher_new(&p, record, &r, &b, &err), RT_OK);
    assert_int_equal(srv_batcher_submit(b, &KEY_A, &SIG, 1, (void *)7), SRV_BATCH_QUEUED);
    assert_int_equal(wait_batches(&r, 1), 1); /* before any stop */
    assert_int_equal(r.b[0].jobs[0], 7);
    srv_batcher_free(b);
}

/* ------------------------------------------------------------- config */

static void test_config_keys(void **state)
{
    (void)state;
    srv_config *c = NULL;
    rt_err err = {{0}};
    const char *txt = "{\"models\": [{\"name\": \"m\", \"base_path\": \"/x\"}]}";
    assert_int_equal(srv_config_parse(txt, strlen(txt), NULL, &c, &err), RT_OK);
    assert_false(c->enable_batching);
    assert_int_equal(c->max_batch_size, 128);
    assert_int_equal(c->batch_timeout_micros, 1000);
    assert_int_equal(c->max_enqueued_batches, 64);
    assert_int_equal(c->num_batch_threads, 0);
    srv_config_free(c);
    txt = "{\"enable_batching\": true, \"max_batch_size\": 7, \"batch_timeout_micros\": 0, "
          "\"max_enqueued_batches\": 3, \"num_batch_threads\": 5, "
          "\"models\": [{\"name\": \"m\", \"base_path\": \"/x\"}]}";
    assert_int_equal(srv_config_parse(txt, strlen(txt), NULL, &c, &err), RT_OK);
    assert_true(c->enable_batching);
    assert_int_equal(c->max_batch_size, 7);
    assert_int_equal(c->batch_timeout_micros, 0);
    assert_int_equal(c->max_enqueued_batches, 3);
    assert_int_equal(c->num_batch_threads, 5);
    srv_config_free(c);
    static const char *const bad[][2] = {
        {"{\"enable_batching\": 1}", "enable_batching: expected true or false, got a number"},
        {"{\"max_batch_size\": 0}", "max_batch_size: 0 is out of range"},
        {"{\"batch_timeout_micros\": -1}", "batch_timeout_micros: -1 is out of range"},
        {"{\"max_enqueued_batches\": 0}", "max_enqueued_batches: 0 is out of range"},
        {"{\"num_batch_threads\": 2.5}", "num_batch_threads: expected an integer, got 2.5"},
        {"{\"max_batch_size\": 4, \"max_batch_size\": 5}", "max_batch_size: given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = NULL;
        memset(&err, 0, sizeof err);
        assert_int_equal(srv_config_parse(bad[i][0], strlen(bad[i][0]), NULL, &c, &err),
                         RT_ERR_INVALID);
        assert_null(c);
        if (!strstr(err.msg, bad[i][1]))
            fail_msg("%s: got \"%s\", want \"%s\"", bad[i][0], err.msg, bad[i][1]);
    }
}

static void test_flags(void **state)
{
    (void)state;
    char *argv[] = {"predictd", "--model_name=m", "--model_base_path=/nonexistent",
                    "--enable_batching", "--max_batch_size", "16",
                    "--batch_timeout_micros=250", "--max_enqueued_batches=9",
                    "--num_batch_threads=3"};
    srv_args a;
    rt_err err = {{0}};
    assert_int_equal(srv_args_parse(9, argv, &a, &err), RT_OK);
    srv_config *c = NULL;
    assert_int_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_true(c->enable_batching);
    assert_int_equal(c->max_batch_size, 16);
    assert_int_equal(c->batch_timeout_micros, 250);
    assert_int_equal(c->max_enqueued_batches, 9);
    assert_int_equal(c->num_batch_threads, 3);
    srv_config_free(c);
    srv_args_free(&a);
    char *off[] = {"predictd", "--enable_batching=false", "--max_batch_size=0"};
    assert_int_equal(srv_args_parse(2, off, &a, &err), RT_OK);
    assert_false(a.values.enable_batching);
    assert_true(srv_args_given(&a, "enable_batching"));
    srv_args_free(&a);
    assert_int_equal(srv_args_parse(3, off, &a, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "--max_batch_size"));
    srv_args_free(&a);
    char *usage = srv_args_usage(false);
    assert_non_null(strstr(usage, "--enable_batching"));
    free(usage);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full_batch_runs),
        cmocka_unit_test(test_split_keys_and_stop),
        cmocka_unit_test(test_queue_bound),
        cmocka_unit_test(test_timeout_runs_lone_job),
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
