/*
 * rt_rng.c — splitmix64, the project's one small seeded generator (the
 * trainer's shuffling and initialisation, the tuner's suggestions).
 */
#include "rt_core.h"

#include <math.h>

void rt_rng_seed(rt_rng *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t rt_rng_next(rt_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double rt_rng_uniform(rt_rng *r)
{
    return (double)(rt_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double rt_rng_normal(rt_rng *r)
{
    double u1 = rt_rng_uniform(r), u2 = rt_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t rt_rng_below(rt_rng *r, uint64_t n)
{
    return n ? rt_rng_next(r) % n : 0;
}
