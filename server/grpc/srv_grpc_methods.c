/*
 * srv_grpc_methods.c — the gRPC methods, each a function from a request
 * message to an answer message (srv_grpc_internal.h), on protoc-c's code
 * for the .proto files in server/grpc/protos/. No second pipeline: ModelInfer turns its
 * message into the Open Inference Protocol's REST body (the JSON header,
 * with raw_input_contents as the binary tensor data that follows it) and
 * runs it through rt_v2_handle as POST /v2/models/{m}/infer does, asking
 * for every output as binary tensor data, which becomes raw_output_contents:
 * the same parser, limits and answer bits as REST's. The metadata and
 * readiness methods answer what their REST endpoints answer.
 */
#include "srv_grpc_internal.h"
#include "srv_limits.h"
#include "srv_sec.h"

#include "grpc_predict_v2.pb-c.h"
#include "health.pb-c.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_draining(const srv_grpc_env *e)
{
    return e->draining && atomic_load(e->draining);
}

static bool ready(srv_grpc_env *e)
{
    return !is_draining(e) && srv_manager_ready(e->mgr, NULL, 0);
}

/* A v2 version text: a number, or a label ("" : neither). */
static int parse_version(const char *text, int64_t *version, const char **label, char *msg)
{
    *version = -1;
    *label = "";
    if (!text || !*text)
        return SRV_GRPC_OK;
    bool digits = true;
    for (const char *c = text; *c; c++)
        digits &= *c >= '0' && *c <= '9';
    if (digits) {
        if (strlen(text) > 18) {
            snprintf(msg, SRV_GRPC_MSG, "version %s is out of range", text);
            return SRV_GRPC_INVALID_ARGUMENT;
        }
        *version = strtoll(text, NULL, 10);
    } else {
        *label = text;
    }
    return SRV_GRPC_OK;
}

/* ---------------------------------------------------------- grpc.health.v1 */

static int health_check(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    Grpc__Health__V1__HealthCheckRequest *rq =
        grpc__health__v1__health_check_request__unpack(NULL, len, in);
    if (!rq)
        return srv_grpc_bad_message(msg, "grpc.health.v1.HealthCheckRequest");
    const char *svc = rq->service ? rq->service : "";
    bool known = !*svc || !strcmp(svc, "inference.GRPCInferenceService") ||
                 !strcmp(svc, "grpc.health.v1.Health") ||
                 !strcmp(svc, "tensorflow.serving.PredictionService") ||
                 !strcmp(svc, "tensorflow.serving.ModelService");
    if (!known) {
        snprintf(msg, SRV_GRPC_MSG, "unknown service %.200s", svc);
        grpc__health__v1__health_check_request__free_unpacked(rq, NULL);
        return SRV_GRPC_NOT_FOUND;
    }
    grpc__health__v1__health_check_request__free_unpacked(rq, NULL);
    Grpc__Health__V1__HealthCheckResponse a = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    a.status = ready(e) ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
                        : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
    return srv_grpc_pack(&a.base, out);
}

/* Watch: Check's answer, SERVICE_UNKNOWN (not an error) for an unknown
 * service, as the health protocol has it; srv_grpc.c sends it again when it
 * changes. */
static int health_watch(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    int code = health_check(e, in, len, out, msg);
    if (code != SRV_GRPC_NOT_FOUND)
        return code;
    Grpc__Health__V1__HealthCheckResponse a = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    a.status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
    msg[0] = '\0';
    return srv_grpc_pack(&a.base, out);
}

/* ------------------------------------------------ inference.GRPCInferenceService */

static int server_live(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    (void)e, (void)in, (void)len, (void)msg;
    Inference__ServerLiveResponse a = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
    a.live = true;
    return srv_grpc_pack(&a.base, out);
}

static int server_ready(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    (void)in, (void)len, (void)msg;
    Inference__ServerReadyResponse a = INFERENCE__SERVER_READY_RESPONSE__INIT;
    a.ready = ready(e);
    return srv_grpc_pack(&a.base, out);
}

static int model_ready(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    Inference__ModelReadyRequest *rq = inference__model_ready_request__unpack(NULL, len, in);
    if (!rq)
        return srv_grpc_bad_message(msg, "inference.ModelReadyRequest");
    int64_t version;
    const char *label;
    int code = parse_version(rq->version, &version, &label, msg);
    if (code == SRV_GRPC_OK) {
        rt_err err = {{0}};
        srv_version *v = NULL;
        rt_status st = srv_manager_acquire(e->mgr, rq->name, version, label, &v, &err);
        srv_version_release(v);
        /* as GET /v2/models/{m}/ready: unknown model, version or label is an
         * error; a known model without a version yet is not ready */
        if ((st == RT_ERR_NOTFOUND && (version >= 0 || !srv_manager_has_model(e->mgr, rq->name))) ||
            st == RT_ERR_INVALID) {
            snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
            code = srv_grpc_status_of(st);
        } else {
            Inference__ModelReadyResponse a = INFERENCE__MODEL_READY_RESPONSE__INIT;
            a.ready = st == RT_OK;
            code = srv_grpc_pack(&a.base, out);
        }
    }
    inference__model_ready_request__free_unpacked(rq, NULL);
    return code;
}

static int server_metadata(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out,
                           char *msg)
{
    (void)e, (void)in, (void)len, (void)msg;
    const char *v = SRV_VERSION_STRING;
    const char *sp = strchr(v, ' ');
    char *ext[] = {"binary_tensor_data", "classification"};
    Inference__ServerMetadataResponse a = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
    a.name = "predictd";
    a.version = (char *)(sp ? sp + 1 : v);
    a.n_extensions = 2;
    a.extensions = ext;
    return srv_grpc_pack(&a.base, out);
}

/* A JSON array of numbers as int64s (malloc'd; *n its length). */
static int64_t *json_ints(const cJSON *arr, size_t *n)
{
    *n = 0;
    int k = cJSON_GetArraySize(arr);
    int64_t *v = calloc(k > 0 ? (size_t)k : 1, sizeof *v);
    if (!v)
        return NULL;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) v[(*n)++] = (int64_t)cJSON_GetNumberValue(x);
    return v;
}

static void free_tensor_meta(Inference__ModelMetadataResponse__TensorMetadata **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (t[i])
            free(t[i]->shape), free(t[i]);
    free(t);
}

static Inference__ModelMetadataResponse__TensorMetadata **tensor_meta(const cJSON *arr, size_t *n)
{
    int k = cJSON_GetArraySize(arr);
    *n = 0;
    Inference__ModelMetadataResponse__TensorMetadata **t =
        calloc(k > 0 ? (size_t)k : 1, sizeof *t);
    if (!t)
        return NULL;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
    {
        Inference__ModelMetadataResponse__TensorMetadata *m = malloc(sizeof *m);
        if (!m)
            break;
        inference__model_metadata_response__tensor_metadata__init(m);
        t[(*n)++] = m;
        m->name = cJSON_GetStringValue(cJSON_GetObjectItem(x, "name"));
        m->datatype = cJSON_GetStringValue(cJSON_GetObjectItem(x, "datatype"));
        if (!m->name)
            m->name = "";
        if (!m->datatype)
            m->datatype = "";
        m->shape = json_ints(cJSON_GetObjectItem(x, "shape"), &m->n_shape);
    }
    return t;
}

static int model_metadata(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out,
                          char *msg)
{
    Inference__ModelMetadataRequest *rq = inference__model_metadata_request__unpack(NULL, len, in);
    if (!rq)
        return srv_grpc_bad_message(msg, "inference.ModelMetadataRequest");
    int64_t version;
    const char *label;
    int code = parse_version(rq->version, &version, &label, msg);
    srv_version *v = NULL;
    rt_err err = {{0}};
    rt_buf js;
    rt_buf_init(&js);
    cJSON *doc = NULL;
    if (code != SRV_GRPC_OK)
        goto done;
    rt_status st = srv_manager_acquire(e->mgr, rq->name, version, label, &v, &err);
    if (st != RT_OK) {
        snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
        code = srv_grpc_status_of(st);
        goto done;
    }
    int64_t vers[SRV_V2_MAX_VERSIONS];
    size_t n = 1;
    vers[0] = srv_version_number(v);
    if (version < 0 && !*label) {
        n = srv_manager_versions(e->mgr, rq->name, vers, SRV_V2_MAX_VERSIONS);
        if (n > SRV_V2_MAX_VERSIONS)
            n = SRV_V2_MAX_VERSIONS;
    }
    st = rt_v2_metadata(srv_version_model(v), rq->name, vers, n, &js);
    if (st != RT_OK || !(doc = cJSON_ParseWithLength(js.data, js.len))) {
        snprintf(msg, SRV_GRPC_MSG, "metadata: %s", rt_err_status_str(st));
        code = SRV_GRPC_INTERNAL;
        goto done;
    }
    Inference__ModelMetadataResponse a = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
    a.name = rq->name;
    const char *plat = cJSON_GetStringValue(cJSON_GetObjectItem(doc, "platform"));
    a.platform = (char *)(plat ? plat : "");
    const cJSON *vs = cJSON_GetObjectItem(doc, "versions");
    int nv = cJSON_GetArraySize(vs);
    a.versions = calloc(nv > 0 ? (size_t)nv : 1, sizeof *a.versions);
    const cJSON *x;
    if (a.versions)
        cJSON_ArrayForEach(x, vs) if (cJSON_IsString(x)) a.versions[a.n_versions++] =
            x->valuestring;
    a.inputs = tensor_meta(cJSON_GetObjectItem(doc, "inputs"), &a.n_inputs);
    a.outputs = tensor_meta(cJSON_GetObjectItem(doc, "outputs"), &a.n_outputs);
    code = a.versions && a.inputs && a.outputs ? srv_grpc_pack(&a.base, out) : SRV_GRPC_RESOURCE_EXHAUSTED;
    free(a.versions);
    if (a.inputs)
        free_tensor_meta(a.inputs, a.n_inputs);
    if (a.outputs)
        free_tensor_meta(a.outputs, a.n_outputs);
done:
    cJSON_Delete(doc);
    rt_buf_free(&js);
    srv_version_release(v);
    inference__model_metadata_request__free_unpacked(rq, NULL);
    return code;
}

/* ------------------------------------------------------------ ModelInfer */

/* A parameter's value as JSON. */
static void put_param(rt_buf *b, const Inference__InferParameter *p)
{
    switch (p->parameter_choice_case) {
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM:
        rt_buf_puts(b, p->bool_param ? "true" : "false");
        break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM:
        rt_buf_printf(b, "%lld", (long long)p->int64_param);
        break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM:
        rt_buf_printf(b, "%llu", (unsigned long long)p->uint64_param);
        break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM:
        rt_buf_json_double(b, p->double_param);
        break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM:
        rt_buf_json_string(b, p->string_param, strlen(p->string_param));
        break;
    default:
        rt_buf_puts(b, "null");
    }
}

typedef Inference__ModelInferRequest__ParametersEntry req_param;

/* "parameters": {...} from a map, with extra ("key": value, already JSON)
 * first when not NULL. Keys the map gives that extra names are left out. */
static void put_params(rt_buf *b, size_t n, Inference__ModelInferRequest__ParametersEntry **ps,
                       const char *extra_key, const char *extra)
{
    if (!n && !extra)
        return;
    rt_buf_puts(b, ", \"parameters\": {");
    bool first = true;
    if (extra) {
        rt_buf_json_string(b, extra_key, strlen(extra_key));
        rt_buf_puts(b, ": ");
        rt_buf_puts(b, extra);
        first = false;
    }
    for (size_t i = 0; i < n; i++) {
        if (extra && !strcmp(ps[i]->key, extra_key))
            continue;
        if (!first)
            rt_buf_puts(b, ", ");
        first = false;
        rt_buf_json_string(b, ps[i]->key, strlen(ps[i]->key));
        rt_buf_puts(b, ": ");
        if (ps[i]->value)
            put_param(b, ps[i]->value);
        else
            rt_buf_puts(b, "null");
    }
    rt_buf_puts(b, "}");
}

/* An input's contents as a JSON "data" array. */
static int put_contents(rt_buf *b, const Inference__InferTensorContents *c, char *msg,
                        const char *name)
{
    rt_buf_puts(b, ", \"data\": [");
    size_t k = 0;
#define LIST(n_, arr_, put_)                                                                        \
    for (size_t i = 0; i < c->n_; i++, k++) {                                                      \
        if (k)                                                                                     \
            rt_buf_puts(b, ",");                                                                   \
        put_;                                                                                      \
    }
    LIST(n_bool_contents, bool_contents, rt_buf_puts(b, c->bool_contents[i] ? "true" : "false"))
    LIST(n_int_contents, int_contents, rt_buf_printf(b, "%d", (int)c->int_contents[i]))
    LIST(n_int64_contents, int64_contents,
         rt_buf_printf(b, "%lld", (long long)c->int64_contents[i]))
    LIST(n_uint_contents, uint_contents, rt_buf_printf(b, "%u", (unsigned)c->uint_contents[i]))
    LIST(n_uint64_contents, uint64_contents,
         rt_buf_printf(b, "%llu", (unsigned long long)c->uint64_contents[i]))
    LIST(n_fp32_contents, fp32_contents, rt_buf_json_float(b, c->fp32_contents[i]))
    LIST(n_fp64_contents, fp64_contents, rt_buf_json_double(b, c->fp64_contents[i]))
    LIST(n_bytes_contents, bytes_contents,
         rt_buf_json_string(b, (const char *)c->bytes_contents[i].data,
                            c->bytes_contents[i].len))
#undef LIST
    rt_buf_puts(b, "]");
    (void)msg, (void)name;
    return SRV_GRPC_OK;
}

/* The REST body of a ModelInferRequest: its JSON header, then the raw
 * inputs' bytes; *hlen the header's length (RT_V2_NO_HEADER when no bytes
 * follow). */
static int infer_body(const Inference__ModelInferRequest *rq, rt_buf *b, size_t *hlen, char *msg)
{
    if (rq->n_raw_input_contents && rq->n_raw_input_contents != rq->n_inputs) {
        snprintf(msg, SRV_GRPC_MSG,
                 "raw_input_contents has %zu entries, but the request has %zu inputs: give one "
                 "per input, or none",
                 rq->n_raw_input_contents, rq->n_inputs);
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    bool raw = rq->n_raw_input_contents > 0;
    rt_buf_puts(b, "{");
    if (rq->id && *rq->id) {
        rt_buf_puts(b, "\"id\": ");
        rt_buf_json_string(b, rq->id, strlen(rq->id));
        rt_buf_puts(b, ", ");
    }
    rt_buf_puts(b, "\"inputs\": [");
    for (size_t i = 0; i < rq->n_inputs; i++) {
        const Inference__ModelInferRequest__InferInputTensor *t = rq->inputs[i];
        if (i)
            rt_buf_puts(b, ", ");
        rt_buf_puts(b, "{\"name\": ");
        rt_buf_json_string(b, t->name, strlen(t->name));
        rt_buf_puts(b, ", \"datatype\": ");
        rt_buf_json_string(b, t->datatype, strlen(t->datatype));
        rt_buf_puts(b, ", \"shape\": [");
        for (size_t j = 0; j < t->n_shape; j++) {
            if (j)
                rt_buf_puts(b, ", ");
            rt_buf_put_int(b, t->shape[j]);
        }
        rt_buf_puts(b, "]");
        /* the size's digits without printf (a call per input was a fifth of
         * a one-instance ModelInfer's instructions) */
        char size[24], *d = size + sizeof size;
        *--d = '\0';
        size_t z = raw ? rq->raw_input_contents[i].len : 0;
        do
            *--d = (char)('0' + z % 10);
        while (z /= 10);
        put_params(b, t->n_parameters, (req_param **)t->parameters, "binary_data_size",
                   raw ? d : NULL);
        if (!raw) {
            if (!t->contents) {
                snprintf(msg, SRV_GRPC_MSG,
                         "inputs[%zu] (%.100s): no contents (give contents or "
                         "raw_input_contents)",
                         i, t->name);
                return SRV_GRPC_INVALID_ARGUMENT;
            }
            put_contents(b, t->contents, msg, t->name);
        }
        rt_buf_puts(b, "}");
    }
    rt_buf_puts(b, "]");
    if (rq->n_outputs) {
        rt_buf_puts(b, ", \"outputs\": [");
        for (size_t i = 0; i < rq->n_outputs; i++) {
            const Inference__ModelInferRequest__InferRequestedOutputTensor *o = rq->outputs[i];
            rt_buf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
            rt_buf_json_string(b, o->name, strlen(o->name));
            put_params(b, o->n_parameters, (req_param **)o->parameters, "binary_data", "true");
            rt_buf_puts(b, "}");
        }
        rt_buf_puts(b, "]");
    }
    /* every output as binary tensor data: raw_output_contents */
    put_params(b, rq->n_parameters, rq->parameters, "binary_data_output", "true");
    rt_buf_puts(b, "}");
    *hlen = b->len;
    for (size_t i = 0; raw && i < rq->n_raw_input_contents; i++)
        rt_buf_append(b, rq->raw_input_contents[i].data, rq->raw_input_contents[i].len);
    return rt_buf_failed(b) ? SRV_GRPC_RESOURCE_EXHAUSTED : SRV_GRPC_OK;
}

/* The REST answer (JSON header of hlen bytes, binary outputs after it) as a
 * ModelInferResponse; the header's tree and the message's parts are in
 * arena a (given back after the call). */
static int infer_answer(srv_grpc_arena *ar, const char *ans, size_t len, size_t hlen, rt_buf *out,
                        char *msg)
{
    if (!hlen || hlen > len)
        hlen = len;
    const srv_grpc_json *doc = srv_grpc_json_parse(ar, ans, hlen);
    if (!doc) {
        snprintf(msg, SRV_GRPC_MSG, "internal: the answer is not JSON");
        return SRV_GRPC_INTERNAL;
    }
    Inference__ModelInferResponse a = INFERENCE__MODEL_INFER_RESPONSE__INIT;
    const char *s;
    a.model_name = (s = srv_grpc_json_str(srv_grpc_json_get(doc, "model_name"))) ? (char *)s : "";
    a.model_version =
        (s = srv_grpc_json_str(srv_grpc_json_get(doc, "model_version"))) ? (char *)s : "";
    a.id = (s = srv_grpc_json_str(srv_grpc_json_get(doc, "id"))) ? (char *)s : "";
    const srv_grpc_json *outs = srv_grpc_json_get(doc, "outputs");
    size_t n = outs && outs->kind == SRV_GRPC_JSON_ARRAY ? outs->n : 0;
    size_t cap = n > 0 ? n : 1;
    void *(*al)(void *, size_t) = ar->alloc.alloc;
    Inference__ModelInferResponse__InferOutputTensor *ts = al(ar, cap * sizeof *ts);
    Inference__ModelInferResponse__InferOutputTensor **tp = al(ar, cap * sizeof *tp);
    ProtobufCBinaryData *raw = al(ar, cap * sizeof *raw);
    if (!ts || !tp || !raw)
        return SRV_GRPC_RESOURCE_EXHAUSTED;
    size_t off = hlen;
    for (const srv_grpc_json *o = n ? outs->child : NULL; o; o = o->next) {
        Inference__ModelInferResponse__InferOutputTensor *t = &ts[a.n_outputs];
        inference__model_infer_response__infer_output_tensor__init(t);
        tp[a.n_outputs] = t;
        t->name = (s = srv_grpc_json_str(srv_grpc_json_get(o, "name"))) ? (char *)s : "";
        t->datatype = (s = srv_grpc_json_str(srv_grpc_json_get(o, "datatype"))) ? (char *)s : "";
        const srv_grpc_json *sh = srv_grpc_json_get(o, "shape");
        size_t k = sh && sh->kind == SRV_GRPC_JSON_ARRAY ? sh->n : 0;
        t->shape = al(ar, (k ? k : 1) * sizeof *t->shape);
        if (!t->shape)
            return SRV_GRPC_RESOURCE_EXHAUSTED;
        for (const srv_grpc_json *d = k ? sh->child : NULL; d; d = d->next)
            t->shape[t->n_shape++] = (int64_t)d->num;
        const srv_grpc_json *sz =
            srv_grpc_json_get(srv_grpc_json_get(o, "parameters"), "binary_data_size");
        size_t bytes = sz && sz->kind == SRV_GRPC_JSON_NUMBER && sz->num > 0 ? (size_t)sz->num : 0;
        if (bytes > len - off) {
            snprintf(msg, SRV_GRPC_MSG, "internal: the answer's binary data is short");
            return SRV_GRPC_INTERNAL;
        }
        raw[a.n_outputs] = (ProtobufCBinaryData){bytes, (uint8_t *)ans + off};
        off += bytes;
        a.n_outputs++;
    }
    a.outputs = tp;
    a.raw_output_contents = raw;
    a.n_raw_output_contents = a.n_outputs;
    return srv_grpc_pack(&a.base, out);
}

static int model_infer(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    int64_t t0 = rt_time_now_ns();
    /* the thread's arena, or one of this call's (a caller without one) */
    srv_grpc_arena own, *ar = e->arena;
    if (!ar)
        srv_grpc_arena_init(ar = &own);
    Inference__ModelInferRequest *rq = inference__model_infer_request__unpack(&ar->alloc, len, in);
    if (!rq) {
        if (ar == &own)
            srv_grpc_arena_free(&own);
        return srv_grpc_bad_message(msg, "inference.ModelInferRequest");
    }
    int64_t version;
    const char *label;
    rt_buf body, ans;
    rt_buf_init(&body);
    rt_buf_init(&ans);
    size_t hlen = RT_V2_NO_HEADER;
    int64_t vnum = -1;
    srv_version *v = NULL;
    srv_pick pick = {.draw = e->draw, .sample = e->sample};
    rt_err err = {{0}};
    int code = parse_version(rq->model_version, &version, &label, msg);
    if (code != SRV_GRPC_OK || (code = infer_body(rq, &body, &hlen, msg)) != SRV_GRPC_OK)
        goto done;
    rt_status st =
        srv_manager_acquire_routed(e->mgr, rq->model_name, version, label, &pick, &v, &err);
    if (st == RT_OK) {
        vnum = srv_version_number(v);
        size_t v2_answer = 0;
        code = srv_grpc_run_infer(e, v, rq->model_name, RT_METHOD_INFER, &body,
                                  hlen == body.len ? RT_V2_NO_HEADER : hlen, t0, &ans,
                                  &v2_answer, msg);
        srv_grpc_tap(e, rq->model_name, vnum, RT_METHOD_INFER, code, t0, &body, &ans, msg, &pick);
        if (code != SRV_GRPC_OK)
            goto done;
        code = srv_grpc_answer_checked(e, infer_answer(ar, ans.data, ans.len, v2_answer, out,
                                                       msg), msg);
        goto done;
    }
    snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
    code = srv_grpc_status_of(st);
done:
    srv_version_release(pick.shadow);
    srv_version_release(v);
    srv_grpc_trace_note(e, rq->model_name, vnum);
    if (e->metrics)
        srv_metrics_request_via(e->metrics, SRV_PROTO_GRPC,
                                srv_manager_has_model(e->mgr, rq->model_name) ? rq->model_name
                                                                               : "",
                                vnum, RT_METHOD_INFER, (int)srv_grpc_http_of(code),
                                (double)(rt_time_now_ns() - t0) / 1e9);
    rt_buf_free(&body);
    rt_buf_free(&ans);
    if (ar == &own) /* else the thread's, given back after the call */
        srv_grpc_arena_free(&own);
    return code;
}

/* The scopes are REST's for the same answers: the probes open, metadata
 * read, inference infer; a new config admin (no REST route gives one). */
static const srv_grpc_method METHODS[] = {
    {"/grpc.health.v1.Health/Check", health_check, "Check", 0, false},
    {"/grpc.health.v1.Health/Watch", health_watch, "Watch", 0, true},
    {"/inference.GRPCInferenceService/ServerLive", server_live, "ServerLive", 0, false},
    {"/inference.GRPCInferenceService/ServerReady", server_ready, "ServerReady", 0, false},
    {"/inference.GRPCInferenceService/ModelReady", model_ready, "ModelReady", 0, false},
    {"/inference.GRPCInferenceService/ServerMetadata", server_metadata, "ServerMetadata",
     SRV_SCOPE_READ, false},
    {"/inference.GRPCInferenceService/ModelMetadata", model_metadata, "ModelMetadata",
     SRV_SCOPE_READ, false},
    {"/inference.GRPCInferenceService/ModelInfer", model_infer, "ModelInfer", SRV_SCOPE_INFER, false},
    {"/tensorflow.serving.PredictionService/Predict", srv_grpc_tfs_predict, "Predict",
     SRV_SCOPE_INFER, false},
    {"/tensorflow.serving.PredictionService/Classify", srv_grpc_tfs_classify, "Classify",
     SRV_SCOPE_INFER, false},
    {"/tensorflow.serving.PredictionService/Regress", srv_grpc_tfs_regress, "Regress",
     SRV_SCOPE_INFER, false},
    {"/tensorflow.serving.PredictionService/MultiInference", srv_grpc_tfs_multi,
     "MultiInference", SRV_SCOPE_INFER, false},
    {"/tensorflow.serving.PredictionService/GetModelMetadata", srv_grpc_tfs_metadata,
     "GetModelMetadata", SRV_SCOPE_READ, false},
    {"/tensorflow.serving.ModelService/GetModelStatus", srv_grpc_tfs_status, "GetModelStatus",
     SRV_SCOPE_READ, false},
    {"/tensorflow.serving.ModelService/HandleReloadConfigRequest", srv_grpc_tfs_reload,
     "HandleReloadConfigRequest", SRV_SCOPE_ADMIN, false},
};

const srv_grpc_method *srv_grpc_methods(size_t *n)
{
    *n = sizeof METHODS / sizeof METHODS[0];
    return METHODS;
}
