/*
 * srv_admit.c — the adaptive admission limit of the inference queue
 * (max_queue_depth with max_queue_wait_ms): how many inference requests
 * may be admitted and not yet run to their end (waiting in the queue or
 * running), adapted to how long they wait in the queue against the target
 * wait, the way TCP adapts its window (additive increase, multiplicative
 * decrease).
 *
 * Each admitted request, when its run ends, gives its slot back and
 * reports how long it waited in the queue before a worker took it: the
 * part of its latency that admitting fewer shortens. (What comes after, the
 * I/O thread sending the answer, is not counted: that thread reads and
 * answers every request, admitted or refused, so admitting fewer does not
 * shorten it; counting it cut the limit down to its floor under overload,
 * and a slot held until the answer was sent bounded the answers per I/O
 * round to the limit: 566 answered/s of a capacity of 40,000.) A wait over
 * the target shrinks the limit by a quarter, once per episode: only a
 * request admitted after the last cut can cut again (the ones admitted
 * before it waited behind the old limit; TCP cuts once per round trip
 * likewise). The limit never goes under its floor, the workers: a cut never
 * leaves a worker without a request to take. A wait within the target
 * grows the limit by 1/limit (about one per limit answers), up to max.
 * Requests past the limit are refused at once (429) on the I/O thread,
 * which costs a fraction of running them.
 *
 * A request may weigh more than one unit (srv_admit_take_weighted): an
 * :explain request weighs the model rows it will evaluate, in units of
 * SRV_EXPLAIN_ROWS_PER_UNIT (srv_http_infer.c), capped at the max. It is
 * admitted while the units in flight plus its weight stay within the limit,
 * or when nothing is in flight (a request heavier than the limit runs
 * alone); answered in time, it grows the limit by weight/limit.
 *
 * Waits come in as arguments and episodes are counted in admissions, not
 * in time, so the policy is tested without clocks. Thread safety: every function may be called from
 * any thread (one mutex).
 */
#include "srv.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct srv_admit {
    pthread_mutex_t mu;
    double limit;          /* current limit, in [1, max] */
    double max;
    double min;            /* the floor (the workers) */
    size_t in_flight;      /* admitted, not yet done */
    int64_t target_ns;
    uint64_t issued;       /* tickets handed out (the last one's number) */
    uint64_t cut_at;       /* the last ticket issued when the limit was cut */
};

rt_status srv_admit_new(size_t max, size_t min, int64_t target_ns, srv_admit **out, rt_err *err)
{
    *out = NULL;
    if (max < 1 || target_ns < 1)
        return rt_err_set(err, RT_ERR_INVALID, "admission: limit and target must be >= 1");
    if (min < 1 || min > max)
        return rt_err_set(err, RT_ERR_INVALID, "admission: floor %zu not in [1, max %zu]", min,
                          max);
    srv_admit *a = calloc(1, sizeof *a);
    if (!a)
        return rt_err_set(err, RT_ERR_NOMEM, "admission: out of memory");
    pthread_mutex_init(&a->mu, NULL);
    a->limit = a->max = (double)max;
    a->min = (double)min;
    a->target_ns = target_ns;
    *out = a;
    return RT_OK;
}

/* A weight as counted: at least 1, at most the max. */
static size_t clamp_weight(const srv_admit *a, size_t weight)
{
    return weight < 1 ? 1 : (double)weight > a->max ? (size_t)a->max : weight;
}

uint64_t srv_admit_take_weighted(srv_admit *a, size_t weight)
{
    uint64_t ticket = 0;
    pthread_mutex_lock(&a->mu);
    weight = clamp_weight(a, weight);
    /* a request heavier than the limit runs alone, never not at all */
    if ((double)(a->in_flight + weight) <= a->limit || a->in_flight == 0) {
        a->in_flight += weight;
        ticket = ++a->issued;
    }
    pthread_mutex_unlock(&a->mu);
    return ticket;
}

uint64_t srv_admit_take(srv_admit *a)
{
    return srv_admit_take_weighted(a, 1);
}

void srv_admit_done_weighted(srv_admit *a, uint64_t ticket, size_t weight, bool answered,
                             int64_t wait_ns)
{
    pthread_mutex_lock(&a->mu);
    weight = clamp_weight(a, weight);
    a->in_flight = a->in_flight > weight ? a->in_flight - weight : 0;
    if (answered && wait_ns > a->target_ns) {
        if (ticket > a->cut_at) {
            a->limit = a->limit * 0.75 < a->min ? a->min : a->limit * 0.75;
            a->cut_at = a->issued;
        }
    } else if (answered) {
        /* 1/limit per unit answered in time (TCP: per segment acknowledged) */
        a->limit += (double)weight / a->limit;
        if (a->limit > a->max)
            a->limit = a->max;
    }
    pthread_mutex_unlock(&a->mu);
}

void srv_admit_done(srv_admit *a, uint64_t ticket, bool answered, int64_t wait_ns)
{
    srv_admit_done_weighted(a, ticket, 1, answered, wait_ns);
}

void srv_admit_read(srv_admit *a, size_t *limit, size_t *in_flight)
{
    pthread_mutex_lock(&a->mu);
    *limit = (size_t)a->limit;
    *in_flight = a->in_flight;
    pthread_mutex_unlock(&a->mu);
}

size_t srv_admit_limit(srv_admit *a)
{
    size_t limit, in_flight;
    srv_admit_read(a, &limit, &in_flight);
    return limit;
}

size_t srv_admit_in_flight(srv_admit *a)
{
    size_t limit, in_flight;
    srv_admit_read(a, &limit, &in_flight);
    return in_flight;
}

void srv_admit_busy_message(int max_queue_wait_ms, char *msg, size_t len)
{
    snprintf(msg, len,
             "overloaded: the inference requests in flight are at the admission limit, "
             "which keeps their wait under max_queue_wait_ms=%d; retry later",
             max_queue_wait_ms);
}

void srv_admit_free(srv_admit *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    free(a);
}
