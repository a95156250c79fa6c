/*
 * srv_grpc_tfs_multi.c — TensorFlow Serving's PredictionService/
 * MultiInference in the gRPC room: several classify and regress signatures
 * of one model over one Input, answered in the tasks' order. Each task runs
 * the Classify / Regress path (srv_grpc_tfs_examples: REST's :classify /
 * :regress body through rt_json_handle, or its batch), so a task's result holds the same
 * numbers a separate Classify or Regress call answers. The checks are TF
 * Serving's: at least one task, every task names the same model (the
 * version is the first task's, as TF Serving takes one servable for the
 * request), a method_name of tensorflow/serving/classify or
 * tensorflow/serving/regress (another is UNIMPLEMENTED, as TF Serving's
 * multi_inference.cc answers), no signature twice; the messages are TF
 * Serving's.
 */
#include "srv_grpc_tfs.h"

#include <stdio.h>
#include <string.h>

#define CLASSIFY_METHOD "tensorflow/serving/classify"
#define REGRESS_METHOD "tensorflow/serving/regress"

static const char *sig_of(const Tensorflow__Serving__InferenceTask *t)
{
    const char *s = t->model_spec && t->model_spec->signature_name
                        ? t->model_spec->signature_name
                        : "";
    return *s ? s : "serving_default";
}

/* TF Serving's checks of the tasks, before any runs: INVALID_ARGUMENT, or
 * UNIMPLEMENTED for a method_name that is not classify's or regress'. */
static int check_tasks(const Tensorflow__Serving__MultiInferenceRequest *rq, char *msg)
{
    if (rq->n_tasks == 0) {
        snprintf(msg, SRV_GRPC_MSG, "MultiInferenceRequest has no tasks");
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    const char *model = NULL;
    for (size_t i = 0; i < rq->n_tasks; i++) {
        const Tensorflow__Serving__InferenceTask *t = rq->tasks[i];
        const char *name = t->model_spec && t->model_spec->name ? t->model_spec->name : "";
        const char *method = t->method_name ? t->method_name : "";
        if (!*name) {
            snprintf(msg, SRV_GRPC_MSG, "Found ModelSpec with an empty model name.");
            return SRV_GRPC_INVALID_ARGUMENT;
        }
        if (model && strcmp(model, name)) {
            snprintf(msg, SRV_GRPC_MSG, "All ModelSpecs in a MultiInferenceRequest must access "
                     "the same model name.");
            return SRV_GRPC_INVALID_ARGUMENT;
        }
        model = name;
        if (strcmp(method, CLASSIFY_METHOD) && strcmp(method, REGRESS_METHOD)) {
            snprintf(msg, SRV_GRPC_MSG, "Unsupported signature method_name: %.100s", method);
            return SRV_GRPC_UNIMPLEMENTED;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(sig_of(rq->tasks[j]), sig_of(t))) {
                snprintf(msg, SRV_GRPC_MSG, "Duplicate evaluation of signature: %.100s",
                         sig_of(t));
                return SRV_GRPC_INVALID_ARGUMENT;
            }
    }
    return SRV_GRPC_OK;
}

/* Task t's result into r: the first task's model and version, t's
 * signature. */
static int run_task(srv_grpc_env *e, const Tensorflow__Serving__MultiInferenceRequest *rq,
                    const Tensorflow__Serving__InferenceTask *t, srv_grpc_pool *p,
                    Tensorflow__Serving__InferenceResult *r, char *msg)
{
    Tensorflow__Serving__ModelSpec ms = *rq->tasks[0]->model_spec;
    ms.signature_name = t->model_spec->signature_name;
    bool cls = !strcmp(t->method_name, CLASSIFY_METHOD);
    void *res = cls ? srv_grpc_pool_alloc(p, sizeof(Tensorflow__Serving__ClassificationResult))
                    : srv_grpc_pool_alloc(p, sizeof(Tensorflow__Serving__RegressionResult));
    if (!res) {
        snprintf(msg, SRV_GRPC_MSG, "out of memory");
        return SRV_GRPC_RESOURCE_EXHAUSTED;
    }
    if (cls) {
        tensorflow__serving__classification_result__init(res);
        r->result_case = TENSORFLOW__SERVING__INFERENCE_RESULT__RESULT_CLASSIFICATION_RESULT;
        r->classification_result = res;
    } else {
        tensorflow__serving__regression_result__init(res);
        r->result_case = TENSORFLOW__SERVING__INFERENCE_RESULT__RESULT_REGRESSION_RESULT;
        r->regression_result = res;
    }
    return srv_grpc_tfs_examples(e, &ms, rq->input,
                                 cls ? RT_METHOD_CLASSIFY : RT_METHOD_REGRESS, p, res,
                                 &r->model_spec, msg);
}

int srv_grpc_tfs_multi(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    Tensorflow__Serving__MultiInferenceRequest *rq =
        tensorflow__serving__multi_inference_request__unpack(NULL, len, in);
    if (!rq)
        return srv_grpc_bad_message(msg, "tensorflow.serving.MultiInferenceRequest");
    srv_grpc_pool pool = {0};
    Tensorflow__Serving__MultiInferenceResponse a =
        TENSORFLOW__SERVING__MULTI_INFERENCE_RESPONSE__INIT;
    int code = check_tasks(rq, msg);
    if (code == SRV_GRPC_OK &&
        !(a.results = srv_grpc_pool_alloc(&pool, rq->n_tasks * sizeof *a.results))) {
        snprintf(msg, SRV_GRPC_MSG, "out of memory");
        code = SRV_GRPC_RESOURCE_EXHAUSTED;
    }
    for (size_t i = 0; code == SRV_GRPC_OK && i < rq->n_tasks; i++) {
        Tensorflow__Serving__InferenceResult *r = srv_grpc_pool_alloc(&pool, sizeof *r);
        if (!r) {
            snprintf(msg, SRV_GRPC_MSG, "out of memory");
            code = SRV_GRPC_RESOURCE_EXHAUSTED;
            break;
        }
        tensorflow__serving__inference_result__init(r);
        code = run_task(e, rq, rq->tasks[i], &pool, r, msg);
        a.results[a.n_results++] = r;
    }
    if (code == SRV_GRPC_OK)
        code = srv_grpc_pack(&a.base, out);
    srv_grpc_pool_free(&pool);
    tensorflow__serving__multi_inference_request__free_unpacked(rq, NULL);
    return code;
}
