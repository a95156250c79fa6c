/*
 * srv_grpc_tfs.h — the inside of TensorFlow Serving's gRPC API in the gRPC
 * room (tf_serving.proto, tf_framework.proto): a TensorProto as the JSON
 * value a REST :predict body holds for that input, a JSON answer value as a
 * TensorProto, TensorFlow's dtype names and numbers, and a pool that owns
 * every piece of an answer message until it is packed. The methods that use
 * them are srv_grpc_tfs.c's; the table that serves them, srv_grpc_methods.c.
 */
#ifndef SRV_GRPC_TFS_H
#define SRV_GRPC_TFS_H

#include "srv_grpc_internal.h"

#include "tf_serving.pb-c.h"

#include <cjson/cJSON.h>

/* Allocations freed together (an answer message's parts). */
typedef struct srv_grpc_pool {
    void **p;
    size_t n, cap;
    bool failed; /* an allocation failed: the answer is RESOURCE_EXHAUSTED */
    /* when set, the blocks come from this arena (the call's) and are given
     * back with it, not by srv_grpc_pool_free */
    srv_grpc_arena *arena;
} srv_grpc_pool;

/* n zeroed bytes owned by the pool, or NULL (then pool->failed). */
void *srv_grpc_pool_alloc(srv_grpc_pool *pool, size_t n);
void srv_grpc_pool_free(srv_grpc_pool *pool);

/* TensorFlow's DataType number of a name ("DT_FLOAT" -> 1), -1 when none. */
int srv_grpc_dtype_of_name(const char *name);
/* The name of a DataType number ("DT_FLOAT"), "DT_INVALID" when unknown. */
const char *srv_grpc_dtype_name(int dtype);

/* Appends tensor t (input `name` of a Predict request) to b as the JSON value
 * REST's columnar "inputs" hold for it: nested arrays by its shape (a
 * scalar for rank 0), numbers for numeric dtypes (from the *_val field of
 * its dtype or tensor_content), strings for DT_STRING ({"b64": ...} when a
 * value is not UTF-8). Fewer values than the shape holds: the last one is
 * repeated, as TensorFlow does (up to SRV_GRPC_MAX_EXPANDED elements).
 * Returns SRV_GRPC_OK, or INVALID_ARGUMENT with msg (SRV_GRPC_MSG bytes)
 * naming the input and what is wrong. */
int srv_grpc_tensor_to_json(const Tensorflow__TensorProto *t, const char *name, rt_buf *b,
                            char *msg);

/* Fills t from v, a value of REST's columnar answer ("outputs", read by
 * srv_grpc_json_parse), as a tensor of the given DataType: its shape from
 * the nesting (rectangular), its values in the dtype's *_val field.
 * Everything t points to is pool's, but its strings, which are v's.
 * Returns SRV_GRPC_OK, or INTERNAL / RESOURCE_EXHAUSTED with msg. */
int srv_grpc_json_to_tensor(const srv_grpc_json *v, int dtype, const char *name,
                            srv_grpc_pool *pool, Tensorflow__TensorProto *t, char *msg);

/* Runs input through method (RT_METHOD_CLASSIFY or RT_METHOD_REGRESS) on
 * the version ms routes to (its name, version or version_label) and ms's
 * signature, as Classify and Regress do (REST's :classify / :regress body,
 * rt_json_handle, one metrics line). On SRV_GRPC_OK, result (a
 * Tensorflow__Serving__ClassificationResult or RegressionResult, as method
 * says, initialised by the caller) and *as (the answer's ModelSpec: the
 * version that answered, the signature) are filled with pool's memory;
 * the strings of ms stay the caller's. Otherwise msg says why, with TF
 * Serving's status code. */
SRV_WUR int srv_grpc_tfs_examples(srv_grpc_env *e, const Tensorflow__Serving__ModelSpec *ms,
                                  const Tensorflow__Serving__Input *input, rt_method method,
                                  srv_grpc_pool *pool, void *result,
                                  Tensorflow__Serving__ModelSpec **as, char *msg);

/* A DataType number as TensorFlow's wire value (for the generated enum). */
#define SRV_GRPC_DT(n) ((Tensorflow__DataType)(n))

#endif
