/*
 * srv_ctl_grpc.c — predictctl --grpc HOST:PORT: the read-only commands over
 * the daemon's gRPC port (docs/grpc.md), for a host that reaches only that
 * port. `ready`: grpc.health.v1.Health/Check, exit 0 when SERVING (as
 * `ready` over REST when /v2/health/ready answers 200). `status MODEL`:
 * tensorflow.serving.ModelService/GetModelStatus, one line per version
 * (--json: REST's {"model_version_status": [...]} shape). TLS when --cacert
 * or --cert is given, the bearer token of --token-file in the
 * `authorization` metadata.
 */
#include "srv.h"

#include "health.pb-c.h"
#include "tf_serving.pb-c.h"

#include <stdio.h>
#include <string.h>

static const char *const CODES[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED"};

static const char *code_name(int c)
{
    return c >= 0 && c < (int)(sizeof CODES / sizeof CODES[0]) ? CODES[c] : "UNKNOWN";
}

static const char *state_name(int s)
{
    switch (s) {
    case 10: return "START";
    case 20: return "LOADING";
    case 30: return "AVAILABLE";
    case 40: return "UNLOADING";
    case 50: return "END";
    default: return "UNKNOWN";
    }
}

/* One call; 0 with the answer in out, else 1 after saying why. */
static int call(const srv_ctl_flags *fl, const char *token, const char *method,
                const ProtobufCMessage *rq, rt_buf *out)
{
    uint8_t buf[1024];
    size_t n = protobuf_c_message_get_packed_size(rq);
    if (n > sizeof buf) {
        fprintf(stderr, "predictctl: the request is too long\n");
        return 1;
    }
    protobuf_c_message_pack(rq, buf);
    srv_grpc_client_params p = {.target = fl->grpc,
                                .timeout_ms = fl->timeout * 1000,
                                .tls = fl->cacert || fl->cert,
                                .cacert = fl->cacert,
                                .cert = fl->cert,
                                .key = fl->key,
                                .token = token};
    int code;
    char msg[512];
    rt_err err = {{0}};
    if (srv_grpc_client_call(&p, method, buf, n, out, &code, msg, sizeof msg, &err) != RT_OK) {
        fprintf(stderr, "predictctl: %s\n", err.msg);
        return 1;
    }
    if (code != 0) {
        fprintf(stderr, "predictctl: %s %s: %s: %s%s\n", fl->grpc, method, code_name(code), msg,
                code == 14 || code == 4 ? " (is predictd running with --port? see --grpc)" : "");
        return 1;
    }
    return 0;
}

static int grpc_ready(const srv_ctl_flags *fl, const char *token)
{
    Grpc__Health__V1__HealthCheckRequest rq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    rt_buf out;
    rt_buf_init(&out);
    int r = call(fl, token, "/grpc.health.v1.Health/Check", &rq.base, &out);
    if (r == 0) {
        Grpc__Health__V1__HealthCheckResponse *a = grpc__health__v1__health_check_response__unpack(
            NULL, out.len, (const uint8_t *)out.data);
        bool serving =
            a && a->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
        if (serving)
            puts("ready");
        else
            fprintf(stderr, "predictctl: not ready (grpc.health.v1.Health/Check: %s)\n",
                    a ? "NOT_SERVING" : "not a HealthCheckResponse");
        r = serving ? 0 : 1;
        grpc__health__v1__health_check_response__free_unpacked(a, NULL);
    }
    rt_buf_free(&out);
    return r;
}

static int grpc_status(const srv_ctl_flags *fl, const char *token, const char *model)
{
    Tensorflow__Serving__GetModelStatusRequest rq =
        TENSORFLOW__SERVING__GET_MODEL_STATUS_REQUEST__INIT;
    Tensorflow__Serving__ModelSpec ms = TENSORFLOW__SERVING__MODEL_SPEC__INIT;
    ms.name = (char *)model;
    rq.model_spec = &ms;
    rt_buf out;
    rt_buf_init(&out);
    int r = call(fl, token, "/tensorflow.serving.ModelService/GetModelStatus", &rq.base, &out);
    Tensorflow__Serving__GetModelStatusResponse *a =
        r ? NULL
          : tensorflow__serving__get_model_status_response__unpack(NULL, out.len,
                                                                    (const uint8_t *)out.data);
    if (!r && !a) {
        fprintf(stderr, "predictctl: the answer is not a GetModelStatusResponse\n");
        r = 1;
    }
    for (size_t i = 0; a && i < a->n_model_version_status; i++) {
        const Tensorflow__Serving__ModelVersionStatus *v = a->model_version_status[i];
        int ec = v->status ? (int)v->status->error_code : 0;
        const char *em = v->status && v->status->error_message ? v->status->error_message : "";
        if (fl->json)
            printf("%s{\"version\": \"%lld\", \"state\": \"%s\", \"status\": {\"error_code\": "
                   "\"%s\", \"error_message\": ",
                   i ? ", " : "{\"model_version_status\": [", (long long)v->version,
                   state_name(v->state), code_name(ec));
        else
            printf("%s version %lld %s%s%s\n", model, (long long)v->version,
                   state_name(v->state), *em ? ": " : "", em);
        if (fl->json) {
            rt_buf j;
            rt_buf_init(&j);
            rt_buf_json_string(&j, em, strlen(em));
            printf("%.*s}}", (int)j.len, j.data ? j.data : "\"\"");
            rt_buf_free(&j);
        }
    }
    if (a && fl->json)
        puts(a->n_model_version_status ? "]}" : "{\"model_version_status\": []}");
    tensorflow__serving__get_model_status_response__free_unpacked(a, NULL);
    rt_buf_free(&out);
    return r;
}

int srv_ctl_grpc(const srv_ctl_flags *fl, const char *token, int argc, char **argv)
{
    if (argc == 1 && !strcmp(argv[0], "ready"))
        return grpc_ready(fl, token);
    if (argc == 2 && !strcmp(argv[0], "status"))
        return grpc_status(fl, token, argv[1]);
    if (argc == 3 && !strcmp(argv[0], "status") && !strcmp(argv[2], "--json")) {
        srv_ctl_flags f = *fl;
        f.json = true;
        return grpc_status(&f, token, argv[1]);
    }
    fprintf(stderr, "predictctl: with --grpc: ready, or status MODEL [--json]\n");
    return 2;
}
