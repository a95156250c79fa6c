/*
 * rt_onnx_internal.h — what the ONNX reader's files share while they read
 * a model.onnx into a plan (rt_onnx_read.c: the graph and the default
 * domain's operators; rt_onnx_ml.c: ai.onnx.ml's; rt_onnx_plan.c: the
 * helpers both use). The plan itself (rt_onnx, rt_onnx_step) is in
 * rt_model_internal.h, since rt_onnx_run.c and the model layer run it.
 */
#ifndef PREDICTD_RT_ONNX_INTERNAL_H
#define PREDICTD_RT_ONNX_INTERNAL_H

#if !defined(PREDICTD_LAYER_model) && !defined(PREDICTD_MODULE_tests) &&                       \
    !defined(PREDICTD_MODULE_bench)
#error "rt_onnx_internal.h is private to the runtime's model layer"
#endif

#include "rt_model_internal.h"
#include "onnx.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The state of one read: the plan being built and the value names. */
typedef struct reader {
    const char *file;
    rt_onnx *o;
    rt_err *err;
    size_t cap_vals;
    size_t total_const;
    /* value names -> index + 1 (0: empty slot), open addressing: every name
     * is looked up in constant time, so a hostile graph of many nodes costs
     * linear time to read */
    size_t *slots;
    size_t n_slots; /* a power of two, at least twice the values */
    /* the node being planned: its outputs' value indexes (out[0] is the
     * value the planner is given; a classifier's scores are out[1]) */
    size_t out[2];
    size_t n_out;
} reader;

/* Operator families. Each checks its node's inputs and attributes, sets the
 * output value's shape (or its constant data) and adds the steps that compute
 * it; plan_node then wires the last step to the node's inputs and output. op
 * is the node's operator (one of the names its entry in plans[] lists). */
typedef rt_status plan_fn(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                          size_t n_in, rt_onnx_val *out);

/* The node's name for messages ("(unnamed)" without one). */
const char *rt_onnx_plan_nname(const Onnx__NodeProto *nd);
/* RT_ERR_FORMAT: "FILE: node \"NAME\" (OP): <message>". */
rt_status rt_onnx_plan_fail(reader *r, const Onnx__NodeProto *nd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The product of dims[from..rank) in *out; false when a dimension is
 * negative or the product passes limit. */
bool rt_onnx_plan_elems(const int64_t *dims, uint32_t from, uint32_t rank, size_t limit,
                        size_t *out);
/* The node's attribute called name, or NULL. */
const Onnx__AttributeProto *rt_onnx_plan_attr(const Onnx__NodeProto *nd, const char *name);
/* Attributes by type: absent gives the default (or NULL / 0 values); one of
 * another type, or a float that is not finite, is refused naming it. */
RT_WUR rt_status rt_onnx_plan_int(reader *r, const Onnx__NodeProto *nd, const char *name,
                                  int64_t dflt, int64_t *out);
RT_WUR rt_status rt_onnx_plan_float(reader *r, const Onnx__NodeProto *nd, const char *name,
                                    float dflt, float *out);
RT_WUR rt_status rt_onnx_plan_floats(reader *r, const Onnx__NodeProto *nd, const char *name,
                                     const float **v, size_t *n);
/* A list of reals given as the floats attribute name or, in its double
 * form (ai.onnx.ml 3), as the double tensor name_as_tensor: a malloc'd copy
 * in *v (NULL when neither is given; the caller frees), *n values, *used the
 * name read. Both forms given, a tensor not of doubles or not matching its
 * dims, or a value not finite is refused naming the attribute. */
RT_WUR rt_status rt_onnx_plan_reals(reader *r, const Onnx__NodeProto *nd, const char *name,
                                    double **v, size_t *n, const char **used);
RT_WUR rt_status rt_onnx_plan_ints(reader *r, const Onnx__NodeProto *nd, const char *name,
                                   const int64_t **v, size_t *n);
RT_WUR rt_status rt_onnx_plan_strings(reader *r, const Onnx__NodeProto *nd, const char *name,
                                      const ProtobufCBinaryData **v, size_t *n);
/* The string attribute name in buf (n bytes, NUL-terminated; dflt when
 * absent); refused when it is not a string or longer than n - 1. */
RT_WUR rt_status rt_onnx_plan_string(reader *r, const Onnx__NodeProto *nd, const char *name,
                                     const char *dflt, char *buf, size_t n);
/* Refused unless the string attribute is absent or equals only. */
RT_WUR rt_status rt_onnx_plan_string_is(reader *r, const Onnx__NodeProto *nd, const char *name,
                                        const char *only);
/* Refuses any attribute not listed in ok (NULL-terminated). */
RT_WUR rt_status rt_onnx_plan_only_attrs(reader *r, const Onnx__NodeProto *nd,
                                         const char *const *ok);
/* A new zeroed step at the end of the plan. */
RT_WUR rt_status rt_onnx_plan_step(reader *r, rt_onnx_step **out);
/* v's shape as text ("[N,4]") in buf. */
const char *rt_onnx_plan_shape_str(const rt_onnx_val *v, char *buf, size_t n);
/* v becomes a batch value of shape (rank, dims); dims[0] is the batch. */
RT_WUR rt_status rt_onnx_plan_batch_shape(reader *r, const Onnx__NodeProto *nd, rt_onnx_val *v,
                                          uint32_t rank, const int64_t *dims);
/* Input i (c) must be a finite float constant / a batch value. */
RT_WUR rt_status rt_onnx_plan_want_const(reader *r, const Onnx__NodeProto *nd, size_t i,
                                         const rt_onnx_val *c);
RT_WUR rt_status rt_onnx_plan_want_batch(reader *r, const Onnx__NodeProto *nd, size_t i,
                                         const rt_onnx_val *v);
/* The node has lo to hi inputs. */
RT_WUR rt_status rt_onnx_plan_need_in(reader *r, const Onnx__NodeProto *nd, size_t n_in,
                                      size_t lo, size_t hi);

/* post_transform (absent: NONE) as RT_ONNX_POST_*; another value refused. */
RT_WUR rt_status rt_onnx_plan_post(reader *r, const Onnx__NodeProto *nd, int *post);
/* The class labels of nd (attribute ints_name, or classlabels_strings:
 * exactly one of them) into v->names (int64s printed), *count of them. */
RT_WUR rt_status rt_onnx_plan_labels(reader *r, const Onnx__NodeProto *nd, const char *ints_name,
                                     rt_onnx_val *v, size_t *count);

/* Tree ensembles (rt_onnx_trees.c): plans TreeEnsembleClassifier (label in
 * r->out[0], scores in r->out[1]) or TreeEnsembleRegressor of input x. */
RT_WUR rt_status rt_onnx_trees_plan(reader *r, const Onnx__NodeProto *nd, bool classifier,
                                    const rt_onnx_val *x);
/* Scores (and labels: class indexes, or label NULL) of n rows of x. */
RT_WUR rt_status rt_onnx_trees_run(const struct rt_onnx_trees *t, size_t n, const float *x,
                                   size_t in_row, float *y, float *label);
/* Applies post_transform post to the n scores z in place (float). */
void rt_onnx_trees_post(int post, float *z, size_t n);

/* String values (rt_onnx_str.c). */

/* The index in v's vocabulary (v->names) of text (len bytes), added when it
 * is not there yet; a text with a NUL byte, or more than 2^20 of them, is
 * refused naming nd and attribute attr. */
RT_WUR rt_status rt_onnx_str_intern(reader *r, const Onnx__NodeProto *nd, const char *attr,
                                    rt_onnx_val *v, const void *text, size_t len, size_t *idx);
/* The value whose vocabulary value in holds (itself, or the one it aliases). */
rt_onnx_val *rt_onnx_str_root(reader *r, size_t in);

/* ai.onnx.ml (rt_onnx_ml.c) */

/* True when op is an ai.onnx.ml operator rt_onnx_ml_plan reads. */
bool rt_onnx_ml_known(const char *op);
/* True when op writes two outputs (label, scores). */
bool rt_onnx_ml_two_outputs(const char *op);
/* Plans ai.onnx.ml node nd (op one rt_onnx_ml_known accepts). */
plan_fn rt_onnx_ml_plan;

#endif /* PREDICTD_RT_ONNX_INTERNAL_H */
