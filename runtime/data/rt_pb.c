/*
 * rt_pb.c — a protobuf-c allocator that notes a failed allocation, so that
 * unpacking model.pb or a tf.Example says "out of memory" when it was, not
 * "not a valid protobuf" (rt_internal.h, rt_pb_alloc).
 */
#include "rt_data.h"
#include "rt_data_internal.h"
#include "rt_core_internal.h"

#include <stdlib.h>

static void *pb_alloc(void *data, size_t n)
{
    void *p = malloc(n);
    if (!p)
        ((rt_pb_alloc *)data)->failed = true;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data;
    free(p);
}

void rt_pb_alloc_init(rt_pb_alloc *pa)
{
    pa->a.alloc = pb_alloc;
    pa->a.free = pb_free;
    pa->a.allocator_data = pa;
    pa->failed = false;
}
