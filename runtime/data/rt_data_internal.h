/*
 * rt_data_internal.h — the data layer's own helpers for the layers above it in the runtime:
 * protobuf-c unpacking that tells bad bytes from want of memory, and the
 * names of tf.Feature list kinds. Runtime layers data and up may include it.
 */
#ifndef PREDICTD_RT_DATA_INTERNAL_H
#define PREDICTD_RT_DATA_INTERNAL_H

/* The build defines PREDICTD_LAYER_<layer> for each runtime source (Makefile). */
#if !defined(PREDICTD_LAYER_data) && !defined(PREDICTD_LAYER_stats) && !defined(PREDICTD_LAYER_model) && !defined(PREDICTD_LAYER_explain) && !defined(PREDICTD_LAYER_serve) && \
    !defined(PREDICTD_MODULE_tests) && !defined(PREDICTD_MODULE_bench)
#error "rt_data_internal.h is the runtime's own (docs/design.md, \"The runtime's layers\")"
#endif

#include "rt_data.h"

#include <stdbool.h>

/* ----------------------------------------- protobuf unpacking (rt_pb.c) */

/* protobuf-c's unpack gives NULL for bad bytes and for want of memory
 * alike: unpacking with rt_pb_alloc's allocator (malloc and free) tells
 * them apart, failed being set when an allocation failed. A message it
 * unpacked is freed with free_unpacked(msg, NULL) as any other. */
typedef struct rt_pb_alloc {
    ProtobufCAllocator a;
    bool failed;
} rt_pb_alloc;
void rt_pb_alloc_init(rt_pb_alloc *pa);

/* The name of a tf.Feature's list kind (its Tensorflow__Feature__KindCase,
 * passed as an int so this header needs no example.pb-c.h): "bytes_list",
 * "float_list", "int64_list" or "no value list" (rt_example_row.c). */
const char *rt_example_kind_name(int kind_case);

#endif /* PREDICTD_RT_DATA_INTERNAL_H */
