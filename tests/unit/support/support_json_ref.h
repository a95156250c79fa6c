/*
 * support_json_ref.h — the reference request parser (support_json_ref.c):
 * predictd's former prescan + cJSON parser, for differential tests of the
 * streaming parser in runtime/rt_json_*.c.
 */
#ifndef PREDICTD_SUPPORT_JSON_REF_H
#define PREDICTD_SUPPORT_JSON_REF_H

#include "rt.h"

/* Parses body for model m and method into c's batch by the reference
 * implementation of the request rules: RT_OK with *columnar and *sig (a SignatureDef, by address) or an
 * error status with a message. Does not run the model. Thread safety: c
 * belongs to the caller. */
rt_status support_json_ref_parse(const rt_model *m, rt_method method, const char *body,
                                 size_t len, const rt_json_params *p, rt_ctx *c, int *columnar,
                                 const void **sig, rt_err *err);

/* Parses body with both the runtime's parser (rt_json_parse_predict /
 * rt_json_parse_examples, into a) and the reference (into b): 0 when both
 * refuse it (the runtime with a message) or both accept it with the same
 * instances, values, signature and form; else -1 with why. A body with an
 * escaped NUL (\u0000) may be judged differently (cJSON's strings end at
 * it): only its accepted values are compared. */
int support_json_ref_compare(const rt_model *m, rt_method method, const char *body, size_t len,
                             const rt_json_params *p, rt_ctx *a, rt_ctx *b, char *why,
                             size_t cap);

#endif /* PREDICTD_SUPPORT_JSON_REF_H */
