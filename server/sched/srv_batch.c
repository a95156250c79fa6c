/*
 * srv_batch.c — the cross-request batch scheduler (TensorFlow Serving's
 * batching knobs): jobs with the same key join one open batch until it
 * holds max_batch_size instances or its first job has waited
 * batch_timeout_micros; then one of num_batch_threads runs the batch as a
 * whole. At most max_enqueued_batches batches wait (open or full); a job
 * that would need one more is refused at once, and the caller answers 429.
 *
 * All batches wait in one FIFO list; a batch thread takes the oldest batch
 * that is ready (full, or past its deadline), so keys are served in arrival
 * order and a busy key cannot starve a quiet one. One mutex guards the
 * list; it is never held while a batch runs.
 */
#include "srv.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct batch {
    struct batch *next;
    const void *key_a, *key_b;
    size_t size;          /* instances */
    bool full;            /* no more jobs join */
    struct timespec deadline; /* first job's arrival + timeout */
    void **jobs;
    size_t n_jobs, cap_jobs;
} batch;

struct srv_batcher {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* batch threads wait here */
    srv_batcher_params p;
    srv_batch_fn fn;
    void *fn_ctx;
    batch *head, *tail;     /* waiting batches, oldest first */
    size_t n_waiting;
    bool stop;
    pthread_t *threads;
    int n_threads;
};

typedef struct thread_arg {
    srv_batcher *b;
    int index;
} thread_arg;

srv_batcher_params srv_batcher_default_params(void)
{
    srv_batcher_params p = {.max_batch_size = 128, .timeout_us = 1000,
                            .max_enqueued_batches = 64, .threads = 1};
    return p;
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void batch_free(batch *bt)
{
    if (!bt)
        return;
    free(bt->jobs);
    free(bt);
}

/* Takes the oldest ready batch off the list (any batch when stopping);
 * else NULL and *wake is the earliest deadline (*have_wake false if none). */
static batch *take_ready(srv_batcher *b, struct timespec *wake, bool *have_wake)
{
    struct timespec now;
    rt_time_deadline(&now, 0);
    *have_wake = false;
    batch *prev = NULL;
    for (batch *bt = b->head; bt; prev = bt, bt = bt->next) {
        if (b->stop || bt->full || !ts_before(&now, &bt->deadline)) {
            if (prev)
                prev->next = bt->next;
            else
                b->head = bt->next;
            if (b->tail == bt)
                b->tail = prev;
            bt->next = NULL;
            b->n_waiting--;
            return bt;
        }
        if (!*have_wake || ts_before(&bt->deadline, wake)) {
            *wake = bt->deadline;
            *have_wake = true;
        }
    }
    return NULL;
}

static void *batch_thread(void *arg)
{
    thread_arg ta = *(thread_arg *)arg;
    free(arg);
    srv_batcher *b = ta.b;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        struct timespec wake;
        bool have_wake;
        batch *bt = take_ready(b, &wake, &have_wake);
        if (bt) {
            pthread_mutex_unlock(&b->mu);
            b->fn(b->fn_ctx, bt->jobs, bt->n_jobs, ta.index);
            batch_free(bt);
            pthread_mutex_lock(&b->mu);
            continue;
        }
        if (b->stop)
            break; /* nothing left */
        if (have_wake) {
            int rc = pthread_cond_timedwait(&b->cv, &b->mu, &wake);
            (void)rc; /* a timeout or a wake-up: look again either way */
        } else {
            pthread_cond_wait(&b->cv, &b->mu);
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

rt_status srv_batcher_new(const srv_batcher_params *p, srv_batch_fn fn, void *fn_ctx,
                          srv_batcher **out, rt_err *err)
{
    *out = NULL;
    if (!p || !fn || p->max_batch_size < 1 || p->max_enqueued_batches < 1 || p->threads < 1 ||
        p->timeout_us < 0)
        return rt_err_set(err, RT_ERR_INVALID, "batching: max_batch_size, "
                          "max_enqueued_batches and num_batch_threads must be >= 1, "
                          "batch_timeout_micros >= 0");
    srv_batcher *b = calloc(1, sizeof *b);
    if (!b)
        return rt_err_set(err, RT_ERR_NOMEM, "batching: out of memory");
    b->p = *p;
    b->fn = fn;
    b->fn_ctx = fn_ctx;
    pthread_mutex_init(&b->mu, NULL);
    rt_time_cond_init(&b->cv);
    b->threads = calloc((size_t)p->threads, sizeof *b->threads);
    if (!b->threads) {
        srv_batcher_free(b);
        return rt_err_set(err, RT_ERR_NOMEM, "batching: out of memory");
    }
    for (int i = 0; i < p->threads; i++) {
        thread_arg *ta = malloc(sizeof *ta);
        if (ta) {
            ta->b = b;
            ta->index = i;
        }
        if (!ta || pthread_create(&b->threads[i], NULL, batch_thread, ta) != 0) {
            free(ta);
            srv_batcher_free(b);
            return rt_err_set(err, RT_ERR_IO, "batching: cannot start batch thread %d", i);
        }
        b->n_threads = i + 1;
    }
    *out = b;
    return RT_OK;
}

/* The open (not full) batch of the key, or NULL. */
static batch *open_batch(srv_batcher *b, const void *key_a, const void *key_b)
{
    for (batch *bt = b->head; bt; bt = bt->next)
        if (!bt->full && bt->key_a == key_a && bt->key_b == key_b)
            return bt;
    return NULL;
}

static bool batch_push(batch *bt, void *job, size_t size)
{
    if (rt_grow(&bt->jobs, &bt->cap_jobs, bt->n_jobs + 1, sizeof *bt->jobs) != 0)
        return false;
    bt->jobs[bt->n_jobs++] = job;
    bt->size += size;
    return true;
}

srv_batch_result srv_batcher_submit(srv_batcher *b, const void *key_a, const void *key_b,
                                    size_t size, void *job)
{
    if (!b || size < 1 || size > b->p.max_batch_size)
        return SRV_BATCH_TOO_BIG;
    srv_batch_result res = SRV_BATCH_QUEUED;
    pthread_mutex_lock(&b->mu);
    if (b->stop) {
        res = SRV_BATCH_FULL;
        goto out;
    }
    batch *bt = open_batch(b, key_a, key_b);
    if (bt && bt->size + size > b->p.max_batch_size) {
        /* It cannot take this job: it runs as it is, a new one opens. */
        bt->full = true;
        pthread_cond_signal(&b->cv);
        bt = NULL;
    }
    if (!bt) {
        if (b->n_waiting >= b->p.max_enqueued_batches) {
            res = SRV_BATCH_FULL;
            goto out;
        }
        bt = calloc(1, sizeof *bt);
        if (!bt) {
            res = SRV_BATCH_FULL;
            goto out;
        }
        bt->key_a = key_a;
        bt->key_b = key_b;
        rt_time_deadline(&bt->deadline, (int64_t)b->p.timeout_us * 1000);
        if (!batch_push(bt, job, size)) {
            batch_free(bt);
            res = SRV_BATCH_FULL;
            goto out;
        }
        if (b->tail)
            b->tail->next = bt;
        else
            b->head = bt;
        b->tail = bt;
        b->n_waiting++;
    } else if (!batch_push(bt, job, size)) {
        res = SRV_BATCH_FULL;
        goto out;
    }
    /* (With timeout 0 a batch is ready at once but still takes jobs until a
     * batch thread is free to take it: what arrived meanwhile is merged.) */
    if (bt->size >= b->p.max_batch_size)
        bt->full = true;
    /* Wake a thread only when readiness can have changed: a new batch (a
     * deadline sleeping threads do not know yet) or a full one. A job that
     * joins an open batch changes nothing a thread waits for. */
    if (bt->full || bt->n_jobs == 1)
        pthread_cond_signal(&b->cv);
out:
    pthread_mutex_unlock(&b->mu);
    return res;
}

size_t srv_batcher_depth(srv_batcher *b)
{
    if (!b)
        return 0;
    pthread_mutex_lock(&b->mu);
    size_t n = b->n_waiting;
    pthread_mutex_unlock(&b->mu);
    return n;
}

void srv_batcher_stop(srv_batcher *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < b->n_threads; i++)
        pthread_join(b->threads[i], NULL);
    b->n_threads = 0;
}

void srv_batcher_free(srv_batcher *b)
{
    if (!b)
        return;
    srv_batcher_stop(b);
    /* Threads run every waiting batch before they exit; with none started
     * (a failed start) nothing was ever queued. */
    while (b->head) {
        batch *next = b->head->next;
        batch_free(b->head);
        b->head = next;
    }
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b->threads);
    free(b);
}
