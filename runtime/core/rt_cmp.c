/*
 * rt_cmp.c — the qsort(3) comparators for plain numbers, one of each, so no
 * module keeps its own (versions, steps, offsets and indexes are sorted with
 * these).
 */
#include "rt_core.h"

int rt_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int rt_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int rt_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
