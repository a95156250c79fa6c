/*
 * srv_grpc_tfs_meta.c — TF Serving's GetModelMetadata and GetModelStatus
 * over gRPC, built from the answers of their REST endpoints
 * (GET /v1/models/{m}[/versions/{v}|/labels/{l}]/metadata: rt_json_metadata,
 * and GET /v1/models/{m}...: srv_manager_status_json), so both doors say the
 * same thing: metadata["signature_def"] is a SignatureDefMap packed in an
 * Any, as TF Serving sends it; model_version_status lists the versions with
 * their states and status codes.
 */
#include "srv_grpc_tfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *msg, int code, const char *text)
{
    snprintf(msg, SRV_GRPC_MSG, "%s", text);
    return code;
}

/* The ModelSpec's model, version, label (signature ignored). */
static int spec_of(const Tensorflow__Serving__ModelSpec *ms, const char **name, int64_t *version,
                   const char **label, char *msg)
{
    *name = "";
    *version = -1;
    *label = "";
    if (!ms)
        return fail(msg, SRV_GRPC_INVALID_ARGUMENT, "Missing ModelSpec");
    *name = ms->name ? ms->name : "";
    if (ms->version_choice_case == TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION)
        *version = ms->version ? ms->version->value : 0;
    else if (ms->version_choice_case ==
             TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION_LABEL)
        *label = ms->version_label ? ms->version_label : "";
    if (*version < -1 || (ms->version_choice_case ==
                              TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION &&
                          *version < 0))
        return fail(msg, SRV_GRPC_INVALID_ARGUMENT, "model_spec.version is not a version");
    return SRV_GRPC_OK;
}

/* REST's {"dtype", "tensor_shape": {"dim": [{"size", "name"}], "unknown_rank"},
 * "name"} as a TensorInfo. */
static Tensorflow__TensorInfo *tensor_info(const cJSON *j, srv_grpc_pool *p)
{
    Tensorflow__TensorInfo *ti = srv_grpc_pool_alloc(p, sizeof *ti);
    Tensorflow__TensorShapeProto *sh = srv_grpc_pool_alloc(p, sizeof *sh);
    if (!ti || !sh)
        return NULL;
    tensorflow__tensor_info__init(ti);
    tensorflow__tensor_shape_proto__init(sh);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(j, "name"));
    ti->encoding_case = TENSORFLOW__TENSOR_INFO__ENCODING_NAME;
    ti->name = (char *)(name ? name : "");
    int dt = srv_grpc_dtype_of_name(cJSON_GetStringValue(cJSON_GetObjectItem(j, "dtype")));
    ti->dtype = SRV_GRPC_DT(dt > 0 ? dt : 0);
    const cJSON *shape = cJSON_GetObjectItem(j, "tensor_shape");
    const cJSON *dims = cJSON_GetObjectItem(shape, "dim");
    size_t n = (size_t)cJSON_GetArraySize(dims);
    sh->dim = srv_grpc_pool_alloc(p, (n + 1) * sizeof *sh->dim);
    if (!sh->dim)
        return NULL;
    const cJSON *d;
    cJSON_ArrayForEach(d, dims)
    {
        Tensorflow__TensorShapeProto__Dim *x = srv_grpc_pool_alloc(p, sizeof *x);
        if (!x)
            return NULL;
        tensorflow__tensor_shape_proto__dim__init(x);
        const cJSON *sz = cJSON_GetObjectItem(d, "size");
        x->size = cJSON_IsString(sz) ? strtoll(sz->valuestring, NULL, 10)
                                     : (int64_t)cJSON_GetNumberValue(sz);
        const char *dn = cJSON_GetStringValue(cJSON_GetObjectItem(d, "name"));
        x->name = (char *)(dn ? dn : "");
        sh->dim[sh->n_dim++] = x;
    }
    sh->unknown_rank = cJSON_IsTrue(cJSON_GetObjectItem(shape, "unknown_rank"));
    ti->tensor_shape = sh;
    return ti;
}

/* A {name: TensorInfo JSON} object as map entries; InputsEntry and
 * OutputsEntry are the same layout. */
static Tensorflow__SignatureDef__InputsEntry **tensor_map(const cJSON *obj, bool inputs,
                                                          size_t *n, srv_grpc_pool *p)
{
    size_t k = (size_t)cJSON_GetArraySize(obj);
    Tensorflow__SignatureDef__InputsEntry **es = srv_grpc_pool_alloc(p, (k + 1) * sizeof *es);
    *n = 0;
    if (!es)
        return NULL;
    const cJSON *x;
    cJSON_ArrayForEach(x, obj)
    {
        Tensorflow__SignatureDef__InputsEntry *en = srv_grpc_pool_alloc(p, sizeof *en);
        if (!en)
            return NULL;
        if (inputs)
            tensorflow__signature_def__inputs_entry__init(en);
        else
            tensorflow__signature_def__outputs_entry__init(
                (Tensorflow__SignatureDef__OutputsEntry *)en);
        en->key = x->string;
        if (!(en->value = tensor_info(x, p)))
            return NULL;
        es[(*n)++] = en;
    }
    return es;
}

/* REST's "signature_def" object ({name: {"inputs", "outputs",
 * "method_name"}}) packed as a SignatureDefMap into an Any. */
static int signature_any(const cJSON *sigs, srv_grpc_pool *p, Google__Protobuf__Any *any,
                         char *msg)
{
    Tensorflow__Serving__SignatureDefMap map = TENSORFLOW__SERVING__SIGNATURE_DEF_MAP__INIT;
    size_t k = (size_t)cJSON_GetArraySize(sigs);
    map.signature_def = srv_grpc_pool_alloc(p, (k + 1) * sizeof *map.signature_def);
    if (!map.signature_def)
        return fail(msg, SRV_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    const cJSON *s;
    cJSON_ArrayForEach(s, sigs)
    {
        Tensorflow__Serving__SignatureDefMap__SignatureDefEntry *en =
            srv_grpc_pool_alloc(p, sizeof *en);
        Tensorflow__SignatureDef *sd = srv_grpc_pool_alloc(p, sizeof *sd);
        if (!en || !sd)
            return fail(msg, SRV_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        tensorflow__serving__signature_def_map__signature_def_entry__init(en);
        tensorflow__signature_def__init(sd);
        en->key = s->string;
        en->value = sd;
        sd->inputs = tensor_map(cJSON_GetObjectItem(s, "inputs"), true, &sd->n_inputs, p);
        sd->outputs = (Tensorflow__SignatureDef__OutputsEntry **)tensor_map(
            cJSON_GetObjectItem(s, "outputs"), false, &sd->n_outputs, p);
        const char *mn = cJSON_GetStringValue(cJSON_GetObjectItem(s, "method_name"));
        sd->method_name = (char *)(mn ? mn : "");
        if (!sd->inputs || !sd->outputs)
            return fail(msg, SRV_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        map.signature_def[map.n_signature_def++] = en;
    }
    size_t n = tensorflow__serving__signature_def_map__get_packed_size(&map);
    uint8_t *bytes = srv_grpc_pool_alloc(p, n);
    if (!bytes)
        return fail(msg, SRV_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    tensorflow__serving__signature_def_map__pack(&map, bytes);
    any->type_url = "type.googleapis.com/tensorflow.serving.SignatureDefMap";
    any->value = (ProtobufCBinaryData){n, bytes};
    return SRV_GRPC_OK;
}

/* The answer from REST's metadata JSON. */
static int metadata_answer(const cJSON *doc, const char *name, int64_t vnum, rt_buf *out,
                           char *msg)
{
    srv_grpc_pool p = {0};
    Tensorflow__Serving__GetModelMetadataResponse a =
        TENSORFLOW__SERVING__GET_MODEL_METADATA_RESPONSE__INIT;
    Tensorflow__Serving__ModelSpec ms = TENSORFLOW__SERVING__MODEL_SPEC__INIT;
    Google__Protobuf__Int64Value v = GOOGLE__PROTOBUF__INT64_VALUE__INIT;
    Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
    Tensorflow__Serving__GetModelMetadataResponse__MetadataEntry en =
        TENSORFLOW__SERVING__GET_MODEL_METADATA_RESPONSE__METADATA_ENTRY__INIT;
    Tensorflow__Serving__GetModelMetadataResponse__MetadataEntry *ep = &en;
    ms.name = (char *)name;
    v.value = vnum;
    ms.version_choice_case = TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION;
    ms.version = &v;
    a.model_spec = &ms;
    const cJSON *sigs = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "signature_def"),
        "signature_def");
    int code = signature_any(sigs, &p, &any, msg);
    if (code == SRV_GRPC_OK) {
        en.key = "signature_def";
        en.value = &any;
        a.metadata = &ep;
        a.n_metadata = 1;
        code = srv_grpc_pack(&a.base, out);
    }
    srv_grpc_pool_free(&p);
    return code;
}

int srv_grpc_tfs_metadata(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    Tensorflow__Serving__GetModelMetadataRequest *rq =
        tensorflow__serving__get_model_metadata_request__unpack(NULL, len, in);
    if (!rq)
        return srv_grpc_bad_message(msg, "tensorflow.serving.GetModelMetadataRequest");
    const char *name, *label;
    int64_t version;
    srv_version *v = NULL;
    rt_buf js;
    rt_buf_init(&js);
    cJSON *doc = NULL;
    int code = spec_of(rq->model_spec, &name, &version, &label, msg);
    if (code != SRV_GRPC_OK)
        goto done;
    /* TF Serving's rules for the fields asked for */
    if (!rq->n_metadata_field) {
        code = fail(msg, SRV_GRPC_INVALID_ARGUMENT,
                    "GetModelMetadataRequest must specify at least one metadata_field");
        goto done;
    }
    for (size_t i = 0; i < rq->n_metadata_field; i++)
        if (strcmp(rq->metadata_field[i], "signature_def")) {
            snprintf(msg, SRV_GRPC_MSG, "Metadata field %.200s is not supported (predictd "
                     "answers signature_def)", rq->metadata_field[i]);
            code = SRV_GRPC_INVALID_ARGUMENT;
            goto done;
        }
    rt_err err = {{0}};
    rt_status st = srv_manager_acquire(e->mgr, name, version, label, &v, &err);
    if (st != RT_OK) {
        snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
        code = srv_grpc_status_of(st);
        goto done;
    }
    st = rt_json_metadata(srv_version_model(v), name, srv_version_number(v), &js);
    if (st != RT_OK || !(doc = cJSON_ParseWithLength(js.data, js.len))) {
        snprintf(msg, SRV_GRPC_MSG, "metadata: %s", rt_err_status_str(st));
        code = SRV_GRPC_INTERNAL;
        goto done;
    }
    code = metadata_answer(doc, name, srv_version_number(v), out, msg);
done:
    cJSON_Delete(doc);
    rt_buf_free(&js);
    srv_version_release(v);
    tensorflow__serving__get_model_metadata_request__free_unpacked(rq, NULL);
    return code;
}

/* ---------------------------------------------------------- GetModelStatus */

static int state_of(const char *s)
{
    static const struct {
        const char *name;
        int v;
    } S[] = {{"START", 10}, {"LOADING", 20}, {"AVAILABLE", 30}, {"UNLOADING", 40}, {"END", 50}};
    for (size_t i = 0; s && i < sizeof S / sizeof S[0]; i++)
        if (!strcmp(S[i].name, s))
            return S[i].v;
    return 0;
}

static int code_of(const char *s)
{
    static const char *const C[] = {
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
        "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
        "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
        "UNAUTHENTICATED"};
    for (size_t i = 0; s && i < sizeof C / sizeof C[0]; i++)
        if (!strcmp(C[i], s))
            return (int)i;
    return 2; /* UNKNOWN */
}

/* REST's {"model_version_status": [...]} as the answer. */
static int status_answer(const cJSON *doc, rt_buf *out, char *msg)
{
    srv_grpc_pool p = {0};
    Tensorflow__Serving__GetModelStatusResponse a =
        TENSORFLOW__SERVING__GET_MODEL_STATUS_RESPONSE__INIT;
    const cJSON *list = cJSON_GetObjectItem(doc, "model_version_status");
    size_t n = (size_t)cJSON_GetArraySize(list);
    a.model_version_status = srv_grpc_pool_alloc(&p, (n + 1) * sizeof *a.model_version_status);
    const cJSON *x;
    cJSON_ArrayForEach(x, list)
    {
        Tensorflow__Serving__ModelVersionStatus *s = srv_grpc_pool_alloc(&p, sizeof *s);
        Tensorflow__Serving__StatusProto *sp = srv_grpc_pool_alloc(&p, sizeof *sp);
        if (!s || !sp || !a.model_version_status)
            break;
        tensorflow__serving__model_version_status__init(s);
        tensorflow__serving__status_proto__init(sp);
        const cJSON *ver = cJSON_GetObjectItem(x, "version");
        s->version = cJSON_IsString(ver) ? strtoll(ver->valuestring, NULL, 10)
                                         : (int64_t)cJSON_GetNumberValue(ver);
        s->state = (Tensorflow__Serving__ModelVersionStatus__State)state_of(
            cJSON_GetStringValue(cJSON_GetObjectItem(x, "state")));
        const cJSON *st = cJSON_GetObjectItem(x, "status");
        sp->error_code = (Tensorflow__Error__Code)code_of(
            cJSON_GetStringValue(cJSON_GetObjectItem(st, "error_code")));
        const char *em = cJSON_GetStringValue(cJSON_GetObjectItem(st, "error_message"));
        sp->error_message = (char *)(em ? em : "");
        s->status = sp;
        a.model_version_status[a.n_model_version_status++] = s;
    }
    int code = p.failed ? fail(msg, SRV_GRPC_RESOURCE_EXHAUSTED, "out of memory")
                        : srv_grpc_pack(&a.base, out);
    srv_grpc_pool_free(&p);
    return code;
}

int srv_grpc_tfs_status(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    Tensorflow__Serving__GetModelStatusRequest *rq =
        tensorflow__serving__get_model_status_request__unpack(NULL, len, in);
    if (!rq)
        return srv_grpc_bad_message(msg, "tensorflow.serving.GetModelStatusRequest");
    const char *name, *label;
    int64_t version;
    rt_buf js;
    rt_buf_init(&js);
    cJSON *doc = NULL;
    int code = spec_of(rq->model_spec, &name, &version, &label, msg);
    if (code == SRV_GRPC_OK) {
        rt_err err = {{0}};
        rt_status st = srv_manager_status_json(e->mgr, name, version, label, &js, &err);
        if (st != RT_OK) {
            snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
            code = srv_grpc_status_of(st);
        } else if (!(doc = cJSON_ParseWithLength(js.data, js.len))) {
            code = fail(msg, SRV_GRPC_INTERNAL, "internal: the status is not JSON");
        } else {
            code = status_answer(doc, out, msg);
        }
    }
    cJSON_Delete(doc);
    rt_buf_free(&js);
    tensorflow__serving__get_model_status_request__free_unpacked(rq, NULL);
    return code;
}
