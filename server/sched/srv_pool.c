/*
 * srv_pool.c — inference workers: a fixed set of threads fed by a bounded
 * FIFO ring. When the ring is full, srv_pool_submit says so at once and the
 * caller answers 429 with Retry-After instead of queueing without bound.
 * The HTTP front runs two kinds on it: the workers (max_queue_depth > 0,
 * every inference request) and, without them, the offload threads (the
 * heavy requests: :explain, bodies over max_inline_request_bytes).
 *
 * With a wait limit (srv_pool_set_max_wait) the ring also refuses while its
 * oldest job has waited longer than the limit: the workers are not keeping
 * up, and a job taken now would wait at least that long. A count alone
 * cannot say so: how long N waiting jobs take depends on the model and on
 * how much CPU the workers get. Refusing at admission keeps the wait of the
 * jobs taken bounded and answers the others at once.
 */
#include "srv.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void **ring;
    int64_t *since; /* when each queued job was queued (ns, monotonic) */
    int64_t max_wait_ns; /* 0: no wait limit */
    size_t cap, head, count;
    size_t reserved; /* slots promised by srv_pool_reserve */
    size_t running;
    bool stop;
    srv_job_fn fn;
    void *fn_ctx;
    pthread_t *threads;
    int n_threads;
};

typedef struct worker_arg {
    srv_pool *p;
    int index;
} worker_arg;

static void *worker_main(void *arg)
{
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    srv_pool *p = wa.p;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->count && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->count && p->stop)
            break;
        void *job = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        p->fn(p->fn_ctx, job, wa.index);
        pthread_mutex_lock(&p->mu);
        p->running--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

rt_status srv_pool_new(int workers, size_t max_queue, srv_job_fn fn, void *fn_ctx,
                       srv_pool **out, rt_err *err)
{
    *out = NULL;
    if (workers < 1 || max_queue < 1)
        return rt_err_set(err, RT_ERR_INVALID, "pool: workers and queue must be >= 1");
    srv_pool *p = calloc(1, sizeof *p);
    if (!p)
        return rt_err_set(err, RT_ERR_NOMEM, "pool: out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->fn = fn;
    p->fn_ctx = fn_ctx;
    p->cap = max_queue;
    p->ring = calloc(max_queue, sizeof *p->ring);
    p->since = calloc(max_queue, sizeof *p->since);
    p->threads = calloc((size_t)workers, sizeof *p->threads);
    if (!p->ring || !p->since || !p->threads) {
        srv_pool_free(p);
        return rt_err_set(err, RT_ERR_NOMEM, "pool: out of memory");
    }
    for (int i = 0; i < workers; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) {
            wa->p = p;
            wa->index = i;
        }
        if (!wa || pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            srv_pool_free(p);
            return rt_err_set(err, RT_ERR_IO, "pool: cannot start worker %d", i);
        }
        p->n_threads = i + 1;
    }
    *out = p;
    return RT_OK;
}

bool srv_pool_submit(srv_pool *p, void *job)
{
    return srv_pool_reserve(p) && (srv_pool_submit_reserved(p, job), true);
}

bool srv_pool_reserve(srv_pool *p)
{
    bool ok = false;
    pthread_mutex_lock(&p->mu);
    if (!p->stop && p->count + p->reserved < p->cap &&
        !(p->max_wait_ns && p->count && rt_time_now_ns() - p->since[p->head] > p->max_wait_ns)) {
        p->reserved++;
        ok = true;
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

void srv_pool_set_max_wait(srv_pool *p, int max_wait_ms)
{
    pthread_mutex_lock(&p->mu);
    p->max_wait_ns = max_wait_ms > 0 ? (int64_t)max_wait_ms * 1000000 : 0;
    pthread_mutex_unlock(&p->mu);
}

void srv_pool_submit_reserved(srv_pool *p, void *job)
{
    pthread_mutex_lock(&p->mu);
    p->reserved--;
    p->ring[(p->head + p->count) % p->cap] = job;
    p->since[(p->head + p->count) % p->cap] = rt_time_now_ns();
    p->count++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

size_t srv_pool_depth(srv_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->count;
    pthread_mutex_unlock(&p->mu);
    return n;
}

size_t srv_pool_running(srv_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->running;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void srv_pool_free(srv_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->ring);
    free(p->since);
    free(p->threads);
    free(p);
}
