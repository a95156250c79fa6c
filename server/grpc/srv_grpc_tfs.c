/*
 * srv_grpc_tfs.c — TensorFlow Serving's gRPC API (tensorflow.serving
 * PredictionService: Predict, Classify, Regress, GetModelMetadata;
 * MultiInference's tasks run through srv_grpc_tfs_examples, in
 * srv_grpc_tfs_multi.c;
 * ModelService: GetModelStatus) as methods of the gRPC room
 * (srv_grpc_internal.h). No second pipeline: each request message becomes
 * the REST body its REST endpoint takes (Predict: the columnar "inputs" of
 * :predict; Classify and Regress: the "examples" and "context" of
 * :classify / :regress, a tf.Example's features as JSON members), runs
 * through rt_json_handle (or REST's batcher, batching on) on the version
 * the manager picks for the
 * ModelSpec (name, version or version_label, signature_name: as the REST
 * path's), and REST's JSON answer becomes the answer message. The metadata
 * and status answers are built from REST's too (rt_json_metadata,
 * srv_manager_status_json). So a gRPC answer holds REST's numbers and a
 * gRPC error REST's message, with the status code TF Serving gives.
 */
#include "srv_grpc_tfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request's ModelSpec, read. */
typedef struct tfs_spec {
    const char *name;
    int64_t version; /* -1: none */
    const char *label; /* "": none */
    const char *sig;   /* "": serving_default */
} tfs_spec;

static int read_spec(const Tensorflow__Serving__ModelSpec *ms, tfs_spec *s, char *msg)
{
    *s = (tfs_spec){"", -1, "", ""};
    if (!ms) {
        snprintf(msg, SRV_GRPC_MSG, "Missing ModelSpec");
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    s->name = ms->name ? ms->name : "";
    s->sig = ms->signature_name ? ms->signature_name : "";
    if (ms->version_choice_case == TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION) {
        s->version = ms->version ? ms->version->value : 0;
        if (s->version < 0) {
            snprintf(msg, SRV_GRPC_MSG, "model_spec.version %lld is not a version",
                     (long long)s->version);
            return SRV_GRPC_INVALID_ARGUMENT;
        }
    } else if (ms->version_choice_case ==
               TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION_LABEL) {
        s->label = ms->version_label ? ms->version_label : "";
    }
    return SRV_GRPC_OK;
}

/* The answer's ModelSpec: the model, the version that answered, the
 * signature (sig NULL: none, as GetModelMetadata's). */
static Tensorflow__Serving__ModelSpec *answer_spec(srv_grpc_pool *p, const char *name,
                                                   int64_t version, const char *sig)
{
    Tensorflow__Serving__ModelSpec *ms = srv_grpc_pool_alloc(p, sizeof *ms);
    Google__Protobuf__Int64Value *v = srv_grpc_pool_alloc(p, sizeof *v);
    if (!ms || !v)
        return NULL;
    tensorflow__serving__model_spec__init(ms);
    google__protobuf__int64_value__init(v);
    ms->name = (char *)name;
    v->value = version;
    ms->version_choice_case = TENSORFLOW__SERVING__MODEL_SPEC__VERSION_CHOICE_VERSION;
    ms->version = v;
    if (sig)
        ms->signature_name = (char *)(*sig ? sig : "serving_default");
    return ms;
}

/* The metrics line of one inference call. */
static void note(srv_grpc_env *e, const char *model, int64_t vnum, rt_method method, int code,
                 int64_t t0)
{
    srv_grpc_trace_note(e, model, vnum);
    if (e->metrics)
        srv_metrics_request_via(e->metrics, SRV_PROTO_GRPC,
                                srv_manager_has_model(e->mgr, model) ? model : "", vnum, method,
                                (int)srv_grpc_http_of(code), (double)(rt_time_now_ns() - t0) / 1e9);
}

/* The version s routes to (a reference, and the shadow's in pick). */
static int acquire(srv_grpc_env *e, const tfs_spec *s, srv_pick *pick, srv_version **v,
                   char *msg)
{
    rt_err err = {{0}};
    *pick = (srv_pick){.draw = e->draw, .sample = e->sample};
    rt_status st = srv_manager_acquire_routed(e->mgr, s->name, s->version, s->label, pick, v,
                                              &err);
    if (st != RT_OK) {
        snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
        return srv_grpc_status_of(st);
    }
    return SRV_GRPC_OK;
}

/* Runs a REST body on version v (through REST's batcher when it batches:
 * Predict, Classify, Regress); *ans gets REST's JSON answer. */
static int run_on(srv_grpc_env *e, srv_version *v, const char *model, rt_method method,
                  const rt_buf *body, int64_t t0, rt_buf *ans, char *msg)
{
    size_t v2_answer;
    return srv_grpc_run_infer(e, v, model, method, body, RT_V2_NO_HEADER, t0, ans, &v2_answer,
                              msg);
}

/* Runs a REST body for s's model on the version its spec routes to; *ans
 * gets REST's JSON answer, *vnum the version; the call goes to the
 * prediction log and the shadow as sampled. */
static int run_rest(srv_grpc_env *e, const tfs_spec *s, rt_method method, const rt_buf *body,
                    int64_t t0, rt_buf *ans, int64_t *vnum, char *msg)
{
    srv_version *v = NULL;
    srv_pick pick;
    int code = acquire(e, s, &pick, &v, msg);
    if (code == SRV_GRPC_OK) {
        *vnum = srv_version_number(v);
        code = run_on(e, v, s->name, method, body, t0, ans, msg);
        srv_grpc_tap(e, s->name, *vnum, method, code, t0, body, ans, msg, &pick);
    }
    srv_version_release(pick.shadow);
    srv_version_release(v);
    return code;
}

static const Predictd__TensorSpec *spec_of(const Predictd__SignatureDef *sig, bool in,
                                           const char *name)
{
    size_t n = sig ? (in ? sig->n_inputs : sig->n_outputs) : 0;
    for (size_t i = 0; i < n; i++) {
        const Predictd__TensorSpec *t = in ? sig->inputs[i] : sig->outputs[i];
        if (!strcmp(t->name, name))
            return t;
    }
    return NULL;
}

/* ---------------------------------------------------------------- Predict */

/* The DataType number of output `name` of sig on graph g, as GET .../metadata
 * lists it: the signature's, else an ONNX graph's output under its own name
 * (a label DT_INT64 for int64 labels or DT_STRING, the others DT_FLOAT);
 * -1: unknown (the value's kind decides); -2: a ZipMap's map, which no
 * TensorProto holds (the metadata leaves it out too). */
static int output_dtype(const rt_graph *g, const Predictd__SignatureDef *sig, const char *name)
{
    const Predictd__TensorSpec *ts = spec_of(sig, false, name);
    if (ts)
        return srv_grpc_dtype_of_name(rt_json_dtype_name(ts->dtype));
    rt_onnx_output oo;
    size_t n = g ? rt_onnx_run_output(g, 0, NULL) : 0;
    for (size_t q = 0; q < n; q++) {
        rt_onnx_run_output(g, q, &oo);
        if (oo.name && !strcmp(oo.name, name) && oo.kind == RT_ONNX_OUT_MAP)
            return -2;
        if (oo.name && !strcmp(oo.name, name) && oo.kind != RT_ONNX_OUT_NONE)
            return srv_grpc_dtype_of_name(oo.kind != RT_ONNX_OUT_LABEL ? "DT_FLOAT"
                                          : oo.labels_int               ? "DT_INT64"
                                                                        : "DT_STRING");
    }
    return -1;
}

/* The :predict body of rq: {"signature_name", "inputs": {name: value}},
 * each input's dtype checked against the signature's (TF Serving refuses a
 * tensor of another dtype). */
static int predict_body(const Tensorflow__Serving__PredictRequest *rq, const tfs_spec *s,
                        const Predictd__SignatureDef *sig, rt_buf *b, char *msg)
{
    rt_buf_puts(b, "{");
    if (*s->sig) {
        rt_buf_puts(b, "\"signature_name\": ");
        rt_buf_json_string(b, s->sig, strlen(s->sig));
        rt_buf_puts(b, ", ");
    }
    rt_buf_puts(b, "\"inputs\": {");
    for (size_t i = 0; i < rq->n_inputs; i++) {
        const char *name = rq->inputs[i]->key ? rq->inputs[i]->key : "";
        const Tensorflow__TensorProto *t = rq->inputs[i]->value;
        Tensorflow__TensorProto empty = TENSORFLOW__TENSOR_PROTO__INIT;
        if (!t)
            t = &empty;
        const Predictd__TensorSpec *ts = spec_of(sig, true, name);
        int want = ts ? srv_grpc_dtype_of_name(rt_json_dtype_name(ts->dtype)) : -1;
        if (want > 0 && (int)t->dtype != want) {
            snprintf(msg, SRV_GRPC_MSG, "input '%.100s': the signature takes %s, the request "
                     "gives %s", name, srv_grpc_dtype_name(want),
                     srv_grpc_dtype_name((int)t->dtype));
            return SRV_GRPC_INVALID_ARGUMENT;
        }
        if (i)
            rt_buf_puts(b, ", ");
        rt_buf_json_string(b, name, strlen(name));
        rt_buf_puts(b, ": ");
        int code = srv_grpc_tensor_to_json(t, name, b, msg);
        if (code != SRV_GRPC_OK)
            return code;
    }
    rt_buf_puts(b, "}}");
    return rt_buf_failed(b) ? SRV_GRPC_RESOURCE_EXHAUSTED : SRV_GRPC_OK;
}

static bool wanted(const Tensorflow__Serving__PredictRequest *rq, const char *name)
{
    for (size_t i = 0; i < rq->n_output_filter; i++)
        if (!strcmp(rq->output_filter[i], name))
            return true;
    return rq->n_output_filter == 0;
}

/* REST's {"outputs": ...} answer as a PredictResponse. */
static int predict_answer(srv_grpc_arena *ar, const Tensorflow__Serving__PredictRequest *rq,
                          const tfs_spec *s, const rt_graph *g, const Predictd__SignatureDef *sig,
                          int64_t vnum, const rt_buf *ans, rt_buf *out, char *msg)
{
    srv_grpc_pool pool = {.arena = ar};
    int code = SRV_GRPC_OK;
    /* read into the call's arena (cJSON's malloc per node cost more than
     * the reading) */
    const srv_grpc_json *doc = srv_grpc_json_parse(ar, ans->data ? ans->data : "", ans->len);
    const srv_grpc_json *outs = srv_grpc_json_get(doc, "outputs");
    if (!outs) {
        snprintf(msg, SRV_GRPC_MSG, "internal: the answer has no outputs");
        code = SRV_GRPC_INTERNAL;
        goto done;
    }
    /* one output: REST answers its value alone (TF Serving's rule) */
    bool single = outs->kind != SRV_GRPC_JSON_OBJECT;
    if (single && (!sig || sig->n_outputs != 1)) {
        snprintf(msg, SRV_GRPC_MSG, "internal: the answer's outputs are not named");
        code = SRV_GRPC_INTERNAL;
        goto done;
    }
    for (size_t i = 0; i < rq->n_output_filter; i++)
        if (single ? strcmp(rq->output_filter[i], sig->outputs[0]->name)
                   : !srv_grpc_json_get(outs, rq->output_filter[i])) {
            snprintf(msg, SRV_GRPC_MSG, "output_filter: '%.100s' is not an output of the "
                     "signature", rq->output_filter[i]);
            code = SRV_GRPC_INVALID_ARGUMENT;
            goto done;
        }
    size_t n = single ? 1 : outs->n;
    Tensorflow__Serving__PredictResponse a = TENSORFLOW__SERVING__PREDICT_RESPONSE__INIT;
    a.outputs = srv_grpc_pool_alloc(&pool, (n + 1) * sizeof *a.outputs);
    a.model_spec = answer_spec(&pool, s->name, vnum, s->sig);
    if (!a.outputs || !a.model_spec)
        goto nomem;
    const srv_grpc_json *o = single ? outs : outs->child;
    for (; o; o = single ? NULL : o->next) {
        const char *name = single ? sig->outputs[0]->name : o->key;
        int dtype = output_dtype(g, sig, name);
        if (!wanted(rq, name) || dtype == -2)
            continue;
        Tensorflow__Serving__PredictResponse__OutputsEntry *en =
            srv_grpc_pool_alloc(&pool, sizeof *en);
        Tensorflow__TensorProto *t = srv_grpc_pool_alloc(&pool, sizeof *t);
        if (!en || !t)
            goto nomem;
        tensorflow__serving__predict_response__outputs_entry__init(en);
        en->key = (char *)name;
        en->value = t;
        code = srv_grpc_json_to_tensor(o, dtype, name, &pool, t, msg);
        if (code != SRV_GRPC_OK)
            goto done;
        a.outputs[a.n_outputs++] = en;
    }
    code = pool.failed ? SRV_GRPC_RESOURCE_EXHAUSTED : srv_grpc_pack(&a.base, out);
    goto done;
nomem:
    snprintf(msg, SRV_GRPC_MSG, "out of memory");
    code = SRV_GRPC_RESOURCE_EXHAUSTED;
done:
    srv_grpc_pool_free(&pool);
    return code;
}

int srv_grpc_tfs_predict(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    int64_t t0 = rt_time_now_ns();
    /* the thread's arena, or one of this call's (a caller without one) */
    srv_grpc_arena own, *ar = e->arena;
    if (!ar)
        srv_grpc_arena_init(ar = &own);
    Tensorflow__Serving__PredictRequest *rq =
        tensorflow__serving__predict_request__unpack(&ar->alloc, len, in);
    if (!rq) {
        if (ar == &own)
            srv_grpc_arena_free(&own);
        return srv_grpc_bad_message(msg, "tensorflow.serving.PredictRequest");
    }
    tfs_spec s;
    rt_buf body, ans;
    rt_buf_init(&body);
    rt_buf_init(&ans);
    int64_t vnum = -1;
    srv_version *v = NULL;
    srv_pick pick = {0};
    const Predictd__SignatureDef *sig = NULL;
    rt_err err = {{0}};
    int code = read_spec(rq->model_spec, &s, msg);
    if (code == SRV_GRPC_OK && (code = acquire(e, &s, &pick, &v, msg)) == SRV_GRPC_OK) {
        vnum = srv_version_number(v);
        rt_status st = rt_json_find_signature(rt_model_def(srv_version_model(v)), s.sig, &sig,
                                              &err);
        if (st != RT_OK) {
            snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
            code = srv_grpc_status_of(st);
        }
    }
    if (code == SRV_GRPC_OK)
        code = predict_body(rq, &s, sig, &body, msg);
    if (code == SRV_GRPC_OK) {
        code = run_on(e, v, s.name, RT_METHOD_PREDICT, &body, t0, &ans, msg);
        srv_grpc_tap(e, s.name, vnum, RT_METHOD_PREDICT, code, t0, &body, &ans, msg, &pick);
    }
    if (code == SRV_GRPC_OK)
        code = predict_answer(ar, rq, &s, rt_model_graph(srv_version_model(v)), sig, vnum, &ans,
                              out, msg);
    code = srv_grpc_answer_checked(e, code, msg);
    note(e, s.name, vnum, RT_METHOD_PREDICT, code, t0);
    srv_version_release(pick.shadow);
    srv_version_release(v);
    rt_buf_free(&body);
    rt_buf_free(&ans);
    if (ar == &own) /* else the thread's, given back after the call */
        srv_grpc_arena_free(&own);
    return code;
}

/* ------------------------------------------------------- Classify, Regress */

/* A tf.Example feature as a JSON member value: one value alone, several as
 * a list. */
static void put_feature(rt_buf *b, const Tensorflow__Feature *f)
{
    size_t n = 0;
    switch (f ? f->kind_case : TENSORFLOW__FEATURE__KIND__NOT_SET) {
    case TENSORFLOW__FEATURE__KIND_BYTES_LIST: n = f->bytes_list->n_value; break;
    case TENSORFLOW__FEATURE__KIND_FLOAT_LIST: n = f->float_list->n_value; break;
    case TENSORFLOW__FEATURE__KIND_INT64_LIST: n = f->int64_list->n_value; break;
    default: break;
    }
    if (n != 1)
        rt_buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            rt_buf_puts(b, ", ");
        if (f->kind_case == TENSORFLOW__FEATURE__KIND_FLOAT_LIST) {
            rt_buf_json_float(b, f->float_list->value[i]);
        } else if (f->kind_case == TENSORFLOW__FEATURE__KIND_INT64_LIST) {
            rt_buf_put_int(b, f->int64_list->value[i]);
        } else {
            Tensorflow__TensorProto t = TENSORFLOW__TENSOR_PROTO__INIT;
            t.dtype = SRV_GRPC_DT(7);
            t.n_string_val = 1;
            t.string_val = &f->bytes_list->value[i];
            char m[SRV_GRPC_MSG];
            (void)srv_grpc_tensor_to_json(&t, "", b, m); /* a scalar string: cannot fail */
        }
    }
    if (n != 1)
        rt_buf_puts(b, "]");
}

static void put_example(rt_buf *b, const Tensorflow__Example *ex)
{
    rt_buf_puts(b, "{");
    size_t n = ex && ex->features ? ex->features->n_feature : 0;
    for (size_t i = 0; i < n; i++) {
        const Tensorflow__Features__FeatureEntry *en = ex->features->feature[i];
        if (i)
            rt_buf_puts(b, ", ");
        rt_buf_json_string(b, en->key, strlen(en->key));
        rt_buf_puts(b, ": ");
        put_feature(b, en->value);
    }
    rt_buf_puts(b, "}");
}

/* The :classify / :regress body of an Input. */
static int examples_body(const Tensorflow__Serving__Input *input, const tfs_spec *s, rt_buf *b,
                         char *msg)
{
    size_t n = 0;
    Tensorflow__Example **exs = NULL;
    const Tensorflow__Example *ctx = NULL;
    if (input && input->kind_case == TENSORFLOW__SERVING__INPUT__KIND_EXAMPLE_LIST &&
        input->example_list) {
        n = input->example_list->n_examples;
        exs = input->example_list->examples;
    } else if (input &&
               input->kind_case == TENSORFLOW__SERVING__INPUT__KIND_EXAMPLE_LIST_WITH_CONTEXT &&
               input->example_list_with_context) {
        n = input->example_list_with_context->n_examples;
        exs = input->example_list_with_context->examples;
        ctx = input->example_list_with_context->context;
    }
    if (!n) {
        snprintf(msg, SRV_GRPC_MSG, "Input is empty");
        return SRV_GRPC_INVALID_ARGUMENT;
    }
    rt_buf_puts(b, "{");
    if (*s->sig) {
        rt_buf_puts(b, "\"signature_name\": ");
        rt_buf_json_string(b, s->sig, strlen(s->sig));
        rt_buf_puts(b, ", ");
    }
    rt_buf_puts(b, "\"examples\": [");
    for (size_t i = 0; i < n; i++) {
        if (i)
            rt_buf_puts(b, ", ");
        put_example(b, exs[i]);
    }
    rt_buf_puts(b, "]");
    if (ctx) {
        rt_buf_puts(b, ", \"context\": ");
        put_example(b, ctx);
    }
    rt_buf_puts(b, "}");
    return rt_buf_failed(b) ? SRV_GRPC_RESOURCE_EXHAUSTED : SRV_GRPC_OK;
}

/* s copied into the pool (NULL when it is full: then pool->failed). */
static char *pool_strdup(srv_grpc_pool *p, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = srv_grpc_pool_alloc(p, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* REST's {"results": [[[label, score], ...], ...]} as a ClassificationResult. */
static int classify_answer(const cJSON *res, srv_grpc_pool *p,
                           Tensorflow__Serving__ClassificationResult *r)
{
    size_t n = (size_t)cJSON_GetArraySize(res);
    r->classifications = srv_grpc_pool_alloc(p, (n + 1) * sizeof *r->classifications);
    if (!r->classifications)
        return SRV_GRPC_RESOURCE_EXHAUSTED;
    const cJSON *row, *pair;
    cJSON_ArrayForEach(row, res)
    {
        Tensorflow__Serving__Classifications *c = srv_grpc_pool_alloc(p, sizeof *c);
        size_t k = (size_t)cJSON_GetArraySize(row);
        if (!c)
            return SRV_GRPC_RESOURCE_EXHAUSTED;
        tensorflow__serving__classifications__init(c);
        c->classes = srv_grpc_pool_alloc(p, (k + 1) * sizeof *c->classes);
        if (!c->classes)
            return SRV_GRPC_RESOURCE_EXHAUSTED;
        cJSON_ArrayForEach(pair, row)
        {
            Tensorflow__Serving__Class *cl = srv_grpc_pool_alloc(p, sizeof *cl);
            if (!cl)
                return SRV_GRPC_RESOURCE_EXHAUSTED;
            tensorflow__serving__class__init(cl);
            const cJSON *l = cJSON_GetArrayItem(pair, 0), *sc = cJSON_GetArrayItem(pair, 1);
            /* a head without a vocabulary answers scores alone */
            if (cJSON_IsNumber(pair))
                sc = pair, l = NULL;
            /* the pool's copy: the answer outlives doc */
            cl->label = cJSON_IsString(l) ? pool_strdup(p, l->valuestring) : "";
            if (!cl->label)
                return SRV_GRPC_RESOURCE_EXHAUSTED;
            cl->score = cJSON_IsNumber(sc) ? (float)sc->valuedouble : 0.0f;
            c->classes[c->n_classes++] = cl;
        }
        r->classifications[r->n_classifications++] = c;
    }
    return SRV_GRPC_OK;
}

static int regress_answer(const cJSON *res, srv_grpc_pool *p,
                          Tensorflow__Serving__RegressionResult *r)
{
    size_t n = (size_t)cJSON_GetArraySize(res);
    r->regressions = srv_grpc_pool_alloc(p, (n + 1) * sizeof *r->regressions);
    if (!r->regressions)
        return SRV_GRPC_RESOURCE_EXHAUSTED;
    const cJSON *x;
    cJSON_ArrayForEach(x, res)
    {
        Tensorflow__Serving__Regression *g = srv_grpc_pool_alloc(p, sizeof *g);
        if (!g)
            return SRV_GRPC_RESOURCE_EXHAUSTED;
        tensorflow__serving__regression__init(g);
        /* a multi-dimensional label answers a list: its first value */
        const cJSON *v = cJSON_IsArray(x) ? cJSON_GetArrayItem(x, 0) : x;
        g->value = cJSON_IsNumber(v) ? (float)v->valuedouble : 0.0f;
        r->regressions[r->n_regressions++] = g;
    }
    return SRV_GRPC_OK;
}

int srv_grpc_tfs_examples(srv_grpc_env *e, const Tensorflow__Serving__ModelSpec *ms,
                          const Tensorflow__Serving__Input *input, rt_method method,
                          srv_grpc_pool *pool, void *result, Tensorflow__Serving__ModelSpec **as,
                          char *msg)
{
    int64_t t0 = rt_time_now_ns();
    tfs_spec s;
    rt_buf body, ans;
    rt_buf_init(&body);
    rt_buf_init(&ans);
    int64_t vnum = -1;
    cJSON *doc = NULL;
    int code = read_spec(ms, &s, msg);
    if (code == SRV_GRPC_OK)
        code = examples_body(input, &s, &body, msg);
    if (code == SRV_GRPC_OK)
        code = run_rest(e, &s, method, &body, t0, &ans, &vnum, msg);
    if (code != SRV_GRPC_OK)
        goto done;
    doc = cJSON_ParseWithLength(ans.data, ans.len);
    const cJSON *res = cJSON_GetObjectItem(doc, "results");
    if (!cJSON_IsArray(res)) {
        snprintf(msg, SRV_GRPC_MSG, "internal: the answer has no results");
        code = SRV_GRPC_INTERNAL;
        goto done;
    }
    *as = answer_spec(pool, s.name, vnum, s.sig);
    code = method == RT_METHOD_CLASSIFY ? classify_answer(res, pool, result)
                                        : regress_answer(res, pool, result);
    if (code == SRV_GRPC_OK && (!*as || pool->failed))
        code = SRV_GRPC_RESOURCE_EXHAUSTED;
    if (code == SRV_GRPC_RESOURCE_EXHAUSTED)
        snprintf(msg, SRV_GRPC_MSG, "out of memory");
done:
    code = srv_grpc_answer_checked(e, code, msg);
    note(e, s.name, vnum, method, code, t0);
    cJSON_Delete(doc);
    rt_buf_free(&body);
    rt_buf_free(&ans);
    return code;
}
/* Classify and Regress: the same request shape, the answer by method. */
static int examples_call(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg,
                         rt_method method)
{
    bool cls = method == RT_METHOD_CLASSIFY;
    /* ClassificationRequest and RegressionRequest are the same fields */
    ProtobufCMessage *m = protobuf_c_message_unpack(
        cls ? &tensorflow__serving__classification_request__descriptor
            : &tensorflow__serving__regression_request__descriptor,
        NULL, len, in);
    if (!m)
        return srv_grpc_bad_message(msg, cls ? "tensorflow.serving.ClassificationRequest"
                                             : "tensorflow.serving.RegressionRequest");
    const Tensorflow__Serving__ModelSpec *ms =
        cls ? ((Tensorflow__Serving__ClassificationRequest *)m)->model_spec
            : ((Tensorflow__Serving__RegressionRequest *)m)->model_spec;
    const Tensorflow__Serving__Input *input =
        cls ? ((Tensorflow__Serving__ClassificationRequest *)m)->input
            : ((Tensorflow__Serving__RegressionRequest *)m)->input;
    srv_grpc_pool pool = {0};
    Tensorflow__Serving__ModelSpec *as = NULL;
    Tensorflow__Serving__ClassificationResult cr = TENSORFLOW__SERVING__CLASSIFICATION_RESULT__INIT;
    Tensorflow__Serving__RegressionResult rr = TENSORFLOW__SERVING__REGRESSION_RESULT__INIT;
    int code = srv_grpc_tfs_examples(e, ms, input, method, &pool, cls ? (void *)&cr : (void *)&rr,
                                     &as, msg);
    if (code == SRV_GRPC_OK && cls) {
        Tensorflow__Serving__ClassificationResponse a =
            TENSORFLOW__SERVING__CLASSIFICATION_RESPONSE__INIT;
        a.model_spec = as;
        a.result = &cr;
        code = srv_grpc_pack(&a.base, out);
    } else if (code == SRV_GRPC_OK) {
        Tensorflow__Serving__RegressionResponse a = TENSORFLOW__SERVING__REGRESSION_RESPONSE__INIT;
        a.model_spec = as;
        a.result = &rr;
        code = srv_grpc_pack(&a.base, out);
    }
    srv_grpc_pool_free(&pool);
    protobuf_c_message_free_unpacked(m, NULL);
    return code;
}

int srv_grpc_tfs_classify(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    return examples_call(e, in, len, out, msg, RT_METHOD_CLASSIFY);
}

int srv_grpc_tfs_regress(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    return examples_call(e, in, len, out, msg, RT_METHOD_REGRESS);
}
