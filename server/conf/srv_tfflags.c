/*
 * srv_tfflags.c — TensorFlow Serving's command-line flags that predictd has
 * no setting for (tensorflow_serving/model_servers/main.cc). A TF Serving
 * command line should start predictd: a flag that only tunes what predictd
 * does not have (gRPC, TensorFlow sessions, GPUs, TF Lite, XLA, the
 * SavedModel loader's threads) is accepted and answered with one warning
 * line saying what predictd does instead; a flag whose meaning predictd
 * cannot honour (a value that would make it serve something else) is
 * refused, saying why. One flag is TF Serving's name of a predictd setting
 * (rest_api_enable_cors_support = enable_cors) and simply sets it.
 */
#include "srv_config_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What predictd does in place of the flag (the warning's second half), or
 * NULL for an alias; refuse: NULL, or a check that returns the reason a
 * value cannot be honoured (NULL when it can). */
typedef const char *(*refuse_fn)(const char *value);

typedef struct tfflag {
    const char *name;
    srv_tfflag_type type;
    const char *alias; /* the predictd setting it sets, or NULL */
    const char *note;  /* what predictd does instead */
    refuse_fn refuse;
} tfflag;

/* --saved_model_tags: predictd's exports have one graph, the serving one
 * ("serve", TF's default tag); another tag set asks for another graph. */
static const char *refuse_tags(const char *v)
{
    return strcmp(v, "serve") == 0
               ? NULL
               : "predictd's exports hold one graph, the one TF tags \"serve\" (the default); "
                 "there is no graph with other tags to load";
}

/* --platform_config_file: it replaces the TensorFlow platform (the loader of
 * SavedModels) with another; predictd has only its own export format. */
static const char *refuse_platform(const char *v)
{
    (void)v;
    return "a PlatformConfigMap chooses the platform that loads models; predictd loads only "
           "the exports predict-train writes (docs/export-format.md) and has no other platform";
}

/* --use_saved_model=false (older TF Serving): the SessionBundle format. */
static const char *refuse_session_bundle(const char *v)
{
    return strcmp(v, "false") == 0 || strcmp(v, "0") == 0
               ? "--use_saved_model=false asks for TensorFlow's old SessionBundle format; "
                 "predictd loads only the exports predict-train writes (docs/export-format.md)"
               : NULL;
}

#define NO_GRPC "predictd's gRPC port (--port, docs/grpc.md) has no such setting"
#define NO_TF "predictd runs no TensorFlow session: each request runs on one request thread " \
              "(--rest_api_num_threads sets how many)"

/* Sorted by name. */
static const tfflag TFFLAGS[] = {
    {"enable_grpc_healthcheck_service", SRV_TF_BOOL, NULL,
     "grpc.health.v1.Health is always served on the gRPC port (--port, docs/grpc.md); "
     "REST's health checks are GET /v1/models/NAME, /healthz and /readyz", NULL},
    {"enable_per_model_batching_parameters", SRV_TF_BOOL, NULL,
     "predictd reads no batching_params.pbtxt from a version; the batching flags and "
     "--batching_parameters_file apply to every model", NULL},
    {"enable_profiler", SRV_TF_BOOL, NULL,
     "predictd has no TensorFlow profiler service; its metrics are at "
     "/monitoring/prometheus/metrics", NULL},
    {"enable_serialization_as_tensor_content", SRV_TF_BOOL, NULL,
     NO_GRPC "; REST answers are JSON", NULL},
    {"enable_signature_method_name_check", SRV_TF_BOOL, NULL,
     "predictd's signatures always carry the method name of their kind, and :classify and "
     ":regress check it", NULL},
    {"flush_filesystem_caches", SRV_TF_BOOL, NULL,
     "predictd keeps no file-system cache of its own to flush", NULL},
    {"grpc_channel_arguments", SRV_TF_STR, NULL, NO_GRPC, NULL},
    {"grpc_max_threads", SRV_TF_INT, NULL, NO_GRPC, NULL},
    {"grpc_socket_path", SRV_TF_STR, NULL, NO_GRPC, NULL},
    {"load_retry_interval_micros", SRV_TF_INT, NULL,
     "a refused version is tried again when its files change", NULL},
    {"max_num_load_retries", SRV_TF_INT, NULL,
     "a refused version is tried again when its files change", NULL},
    {"mixed_precision", SRV_TF_STR, NULL,
     "predictd computes in float32 only, as the model was trained", NULL},
    {"num_load_threads", SRV_TF_INT, NULL, "predictd loads versions on its one loader thread",
     NULL},
    {"num_request_iterations_for_warmup", SRV_TF_INT, NULL,
     "predictd runs each warm-up request once (--enable_model_warmup)", NULL},
    {"num_tflite_interpreters_per_pool", SRV_TF_INT, NULL, "predictd serves no TF Lite models",
     NULL},
    {"num_tflite_pools", SRV_TF_INT, NULL, "predictd serves no TF Lite models", NULL},
    {"num_unload_threads", SRV_TF_INT, NULL,
     "predictd frees a version when the last request using it ends", NULL},
    {"per_process_gpu_memory_fraction", SRV_TF_FLOAT, NULL,
     "predictd runs on the CPU only and uses no GPU memory", NULL},
    {"platform_config_file", SRV_TF_STR, NULL, NULL, refuse_platform},
    {"prefer_tflite_model", SRV_TF_BOOL, NULL,
     "predictd serves no TF Lite models (model.tflite is not read)", NULL},
    {"remove_unused_fields_from_bundle_metagraph", SRV_TF_BOOL, NULL,
     "predictd's exports hold no MetaGraphDef", NULL},
    {"rest_api_enable_cors_support", SRV_TF_BOOL, "enable_cors", NULL, NULL},
    {"saved_model_tags", SRV_TF_STR, NULL,
     "predictd's exports hold one graph, the serving one (tag \"serve\")", refuse_tags},
    {"skip_initialize_tpu", SRV_TF_BOOL, NULL, "predictd uses no TPU", NULL},
    {"tensorflow_inter_op_parallelism", SRV_TF_INT, NULL, NO_TF, NULL},
    {"tensorflow_intra_op_parallelism", SRV_TF_INT, NULL, NO_TF, NULL},
    {"tensorflow_session_config_file", SRV_TF_STR, NULL, NO_TF, NULL},
    {"tensorflow_session_parallelism", SRV_TF_INT, NULL, NO_TF, NULL},
    {"thread_pool_factory_config_file", SRV_TF_STR, NULL, NO_TF, NULL},
    {"use_alts_credentials", SRV_TF_BOOL, NULL, NO_GRPC, NULL},
    {"use_saved_model", SRV_TF_BOOL, NULL,
     "predictd loads only the exports predict-train writes", refuse_session_bundle},
    {"xla_cpu_compilation_enabled", SRV_TF_BOOL, NULL,
     "predictd compiles nothing: its forward pass is its own C code", NULL},
    {"xla_gpu_compilation_enabled", SRV_TF_BOOL, NULL,
     "predictd compiles nothing and uses no GPU", NULL},
};
#define N_TFFLAGS (sizeof TFFLAGS / sizeof TFFLAGS[0])

size_t srv_tfflag_count(void)
{
    return N_TFFLAGS;
}

const char *srv_tfflag_name(size_t i, srv_tfflag_type *type)
{
    if (i >= N_TFFLAGS)
        return NULL;
    if (type)
        *type = TFFLAGS[i].type;
    return TFFLAGS[i].name;
}

/* The value as TF Serving's flag parser would read it (bools: true, false,
 * 1, 0; ints: a 64-bit integer; floats: a finite number), else an error. */
static rt_status check_type(const tfflag *f, const char *v, rt_err *err)
{
    char *end = NULL;
    errno = 0;
    switch (f->type) {
    case SRV_TF_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "1") || !strcmp(v, "0"))
            return RT_OK;
        return rt_err_set(err, RT_ERR_INVALID, "--%s: '%s' is not true or false", f->name, v);
    case SRV_TF_INT:
        (void)strtoll(v, &end, 10);
        if (errno || end == v || *end)
            return rt_err_set(err, RT_ERR_INVALID, "--%s: '%s' is not an integer", f->name, v);
        return RT_OK;
    case SRV_TF_FLOAT: {
        double d = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(d))
            return rt_err_set(err, RT_ERR_INVALID, "--%s: '%s' is not a number", f->name, v);
        return RT_OK;
    }
    case SRV_TF_STR:
        return RT_OK;
    }
    return RT_OK;
}

rt_status srv_tfflag_apply(size_t i, const char *value, srv_args *a, const char **alias,
                           const char **alias_value, rt_err *err)
{
    *alias = NULL;
    const tfflag *f = &TFFLAGS[i];
    const char *v = value ? value : "true"; /* a bool flag alone */
    rt_status st = check_type(f, v, err);
    if (st != RT_OK)
        return st;
    const char *why = f->refuse ? f->refuse(v) : NULL;
    if (why)
        return rt_err_set(err, RT_ERR_INVALID, "--%s=%s: TF Serving's flag is refused: %s",
                          f->name, v, why);
    if (f->alias) {
        *alias = f->alias;
        *alias_value = v;
        return RT_OK;
    }
    char line[RT_ERR_MAX];
    snprintf(line, sizeof line, "--%s=%s: TF Serving's flag is accepted but has no effect: %s",
             f->name, v, f->note);
    char **grown = realloc(a->warnings, (a->n_warnings + 1) * sizeof *grown);
    if (!grown)
        return rt_err_set(err, RT_ERR_NOMEM, "--%s: out of memory", f->name);
    a->warnings = grown;
    if (!(a->warnings[a->n_warnings] = strdup(line)))
        return rt_err_set(err, RT_ERR_NOMEM, "--%s: out of memory", f->name);
    a->n_warnings++;
    return RT_OK;
}
