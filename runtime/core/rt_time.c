/*
 * rt_time.c — the clock as seconds in a double, one way for every module
 * (the trainer's rates and event wall times, the tuner's deadlines), and
 * condition variables whose timed waits run on that clock, with their
 * deadlines.
 */
#include "rt_core.h"

#include <time.h>

double rt_time_seconds(int wall)
{
    struct timespec ts;
    clock_gettime(wall ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t rt_time_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t rt_time_now_ms(void)
{
    return rt_time_now_ns() / 1000000;
}

void rt_time_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void rt_time_deadline(struct timespec *ts, int64_t ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    int64_t n = (int64_t)ts->tv_nsec + ns % 1000000000;
    ts->tv_sec += (time_t)(ns / 1000000000 + n / 1000000000);
    ts->tv_nsec = (long)(n % 1000000000);
}
