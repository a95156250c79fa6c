/*
 * rt_time.c — the clock as seconds in a double, one way for every module
 * (the trainer's rates and event wall times, the tuner's deadlines).
 */
#include "rt_core.h"

#include <time.h>

double rt_seconds(int wall)
{
    struct timespec ts;
    clock_gettime(wall ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t rt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t rt_now_ms(void)
{
    return rt_now_ns() / 1000000;
}
