/*
 * srv_config.c — predictd's settings from one table: each line of SETTINGS
 * is a setting's name (its JSON key and its flag: TensorFlow Serving's names
 * where TF has the setting), type, range, default, field and help. The
 * runtime's table functions (rt_settings.c) make from it the defaults, the
 * config file's top-level keys (errors naming the key), the command-line
 * flags, --help, --help_config, the unknown-key / unknown-flag messages with
 * a "did you mean" and what a reload cannot apply. The config file's
 * "models" list is srv_config_models.c's. A flag given on the command line
 * wins over the file's key.
 */
#include "srv_config_internal.h"
#include "srv_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the table */

/* offsetof(srv_config, f), refused at compile time unless f has type T. */
#define FIELD(f, T)                                                                                \
    (offsetof(srv_config, f) +                                                                     \
     0 * sizeof(char[_Generic(((srv_config *)0)->f, T: 1, default: -1)]))
#define BOTH (SRV_SET_JSON | SRV_SET_FLAG)
#define LIVE (BOTH | SRV_SET_LIVE)
/* Each row in designated form (rt_setting's optional fields stay zero). */
#define ROW(f, T, ty, w, l, h, d, ds, a, hl)                                                       \
    {.name = #f, .type = ty, .where = w, .lo = l, .hi = h, .def = d, .def_str = ds,              \
     .offset = FIELD(f, T), .arg = a, .help = hl}
#define INT(f, where, lo, hi, def, arg, help) \
    ROW(f, int, SRV_SET_INT, where, lo, hi, def, NULL, arg, help)
#define SIZE(f, where, lo, hi, def, help) \
    ROW(f, size_t, SRV_SET_SIZE, where, lo, hi, def, NULL, "N", help)
#define BOOL(f, where, def, help) ROW(f, bool, SRV_SET_BOOL, where, 0, 1, def, NULL, NULL, help)
#define STR(f, where, def, arg, help) \
    ROW(f, char *, SRV_SET_STR, where, 0, 0, 0, def, arg, help)
#define NAME(f, w, a, hl)                                                                          \
    {.name = #f, .type = SRV_SET_NAME, .where = w, .offset = FIELD(f, char *), .arg = a,         \
     .help = hl, .check = srv_name_valid, .what = "a valid name ([A-Za-z0-9_.-]+)"}

/* In --help order. where: BOTH (config key and flag), LIVE (the same, and a
 * reload applies it at once; the others wait for the next start),
 * SRV_SET_FLAG (flag only) or SRV_SET_JSON (config key only). */
static const srv_setting SETTINGS[] = {
    INT(rest_api_port, BOTH, 0, 65535, 8501, "N", "port of the REST API; 0 = any free port"),
    STR(rest_api_host, BOTH, "0.0.0.0", "ADDR", "address to listen on"),
    NAME(model_name, SRV_SET_FLAG, "NAME", "the one model to serve (no config file)"),
    STR(model_base_path, SRV_SET_FLAG, NULL, "DIR", "its directory of integer-named versions"),
    STR(model_monitoring, SRV_SET_FLAG, NULL, "JSON",
        "with --model_name: skew and drift monitoring of that model, as a config file's "
        "\"monitoring\" key takes it, e.g. '{\"window_seconds\": 600, \"thresholds\": "
        "{\"age\": 0.1}}' (docs/data-validation.md)"),
    STR(model_config_file, SRV_SET_FLAG, NULL, "FILE",
        "JSON config (see conf/predictd.json, predictd --help_config) or TF Serving's "
        "text-format model config (conf/models.config); flags given on the command line win "
        "over the file"),
    STR(model_repository, SRV_SET_FLAG, NULL, "DIR",
        "Triton's model repository: every folder DIR/NAME is the model NAME with its "
        "version folders inside, and an optional DIR/NAME/config.json holding that model's "
        "keys of a config file's \"models\" entry (version_policy, version_labels, ...); "
        "folders that come and go are models added and removed (names starting with '.' "
        "are ignored: copy a model in as .NAME, then rename it)"),
    INT(model_config_file_poll_wait_seconds, SRV_SET_FLAG | SRV_SET_LIVE, 0, 86400, 0, "N",
        "re-read --model_config_file every N seconds and reload it when its bytes changed "
        "(TF Serving's flag); 0 = off. Changes are noticed anyway: SIGHUP, and a check of the "
        "file's inode, size and mtime every second"),
    STR(monitoring_config_file, SRV_SET_FLAG, NULL, "FILE",
        "TF Serving's MonitoringConfig (text format, conf/monitoring.config): "
        "prometheus_config { enable: true path: \"/P\" } serves the Prometheus metrics at /P "
        "only, enable: false nowhere; without it they are at /monitoring/prometheus/metrics"),
    STR(batching_parameters_file, SRV_SET_FLAG, NULL, "FILE",
        "TF Serving's BatchingParameters (text format, conf/batching.config): max_batch_size, "
        "batch_timeout_micros, max_enqueued_batches, num_batch_threads { value: N }; needs "
        "--enable_batching; the batching flags win over it"),
    INT(file_system_poll_wait_seconds, LIVE, 0, 86400, 1, "N",
        "seconds between ticks of the loader: base paths are watched with inotify and "
        "scanned when they change; at each tick 64 are rescanned in turn, and those inotify "
        "cannot watch (network file systems) all; 0 = scan only at start and reload"),
    INT(rest_api_num_threads, BOTH, 0, 1024, 0, "N",
        "request threads; 0 = the CPUs this process may use"),
    INT(rest_api_timeout_in_ms, BOTH, 1, 3600000, 30000, "N", "per-request deadline, else 504"),
    SIZE(max_request_bytes, BOTH, 1, INT64_C(1) << 30, 1572864, "largest request body, else 413"),
    SIZE(max_total_request_bytes, BOTH, 1, INT64_C(1) << 40, INT64_C(256) << 20,
         "request body bytes held at once; a request that does not fit gets 429 + Retry-After"),
    SIZE(max_answer_bytes, BOTH, 1, INT64_C(1) << 40, INT64_C(64) << 20,
         "largest answer to an inference request: one whose estimated size passes it is "
         "refused with 400 before it is computed, one that grows past it while written too"),
    SIZE(max_explain_rows, BOTH, 1, INT64_C(1) << 40, INT64_C(1) << 24,
         "model rows one :explain request may evaluate, estimated before it runs (every input "
         "counted as differing from the baseline); past it 400 before any work. A running "
         ":explain also stops at rest_api_timeout_in_ms (504) or when its client has gone"),
    SIZE(prediction_log_queue_bytes, BOTH, 1, INT64_C(1) << 40, INT64_C(64) << 20,
         "bytes of requests and answers waiting for the prediction-log writer; a sampled "
         "request that does not fit is not logged (predictd_prediction_log_dropped_total)"),
    SIZE(shadow_queue_bytes, BOTH, 1, INT64_C(1) << 40, INT64_C(64) << 20,
         "bytes of requests and answers waiting for their shadow run; a run that does not "
         "fit is dropped (predictd_shadow_dropped_total)"),
    INT(connection_timeout_seconds, BOTH, 1, 86400, 60, "N", "idle connection timeout"),
    INT(request_read_timeout_seconds, BOTH, 0, 86400, 30, "N",
        "close a connection whose request is not read whole N s after its first byte; 0 = off"),
    INT(max_connections, BOTH, 0, 1000000, 0, "N",
        "client connections open at once; when all are taken, one that has sent nothing since "
        "it was accepted is closed for a new one, else the longest-idle keep-alive one, else "
        "the new one is refused; 0 = 1024, or fewer when the open-files limit (less 256) is "
        "lower"),
    INT(request_header_timeout_seconds, BOTH, 0, 86400, 10, "N",
        "close a connection whose request header is not in N s after it opened (or after the "
        "next request's first byte); 0 = off"),
    BOOL(enable_cors, BOTH, 0, "add Access-Control-Allow-Origin: *"),
    INT(max_queue_depth, BOTH, 0, 1000000, 0, "N",
        "run inference on worker threads with at most N requests waiting; more answer 429 + "
        "Retry-After; 0 = inference on the HTTP threads, but for :explain and large "
        "requests (max_inline_request_bytes)"),
    SIZE(max_inline_request_bytes, BOTH, 0, INT64_C(1) << 40, 65536,
         "with max_queue_depth 0: an inference request whose body is longer (inflated) runs "
         "on the offload threads, as every :explain does, its HTTP thread going on with its "
         "other connections; 0 = every inference request does"),
    INT(max_queue_wait_ms, BOTH, 0, 3600000, 0, "N",
        "with max_queue_depth: target wait of an admitted request; 429 at once while the "
        "oldest waiting one has waited more than N ms, and an adaptive limit on requests in "
        "flight shrinks when one waited longer; 0 = off"),
    INT(drain_grace_seconds, LIVE, 0, 3600, 0, "N",
        "after SIGTERM, readyz answers 503 but requests are still served for N seconds"),
    BOOL(enable_batching, BOTH, 0,
         "merge concurrent :predict requests for the same model version and signature into one "
         "batch"),
    INT(max_batch_size, BOTH, 1, 100000, 128, "N", "instances per merged batch"),
    INT(batch_timeout_micros, BOTH, 0, 10000000, 1000, "N",
        "a batch's first request waits this long for company"),
    INT(max_enqueued_batches, BOTH, 1, 1000000, 64, "N", "batches waiting; past it 429"),
    INT(num_batch_threads, BOTH, 0, 1024, 0, "N", "batch threads; 0 = the request threads"),
    BOOL(enable_model_warmup, LIVE, 1,
         "warm each version up before it serves: the requests of its assets.extra/warmup.json, "
         "else one prediction from default inputs; false: serve without warm-up"),
    BOOL(allow_version_labels_for_unavailable_models, LIVE, 0,
         "accept, with a warning, a new version label that points at a version that is not "
         "available (at start: missing from the base path); without it such a config is "
         "refused"),
    INT(port, SRV_SET_FLAG, 0, 65535, 8500, "N",
        "the gRPC port (TF Serving's flag): when given, TF Serving's PredictionService and "
        "ModelService, the Open Inference Protocol's GRPCInferenceService and gRPC's health "
        "service are served there (docs/grpc.md)"),
    STR(ssl_config_file, SRV_SET_FLAG, NULL, "FILE",
        "TF Serving's SSLConfig (text format): server_key, server_cert and custom_ca as PEM "
        "strings, client_verify: true for mutual TLS; the gRPC port's TLS from it, in place "
        "of the tls_* files (which stay REST's); checked at start, re-read on SIGHUP for new "
        "connections (a bad new one keeps the old)"),
    STR(tls_cert_file, BOTH, NULL, "FILE",
        "serve HTTPS: PEM certificate, then its chain (needs tls_key_file); refused at start "
        "when expired, warned within 14 days of expiry; re-read on SIGHUP for new connections "
        "(a bad new one keeps the old); unset = plain HTTP"),
    STR(tls_key_file, BOTH, NULL, "FILE",
        "PEM private key of tls_cert_file; refused when it does not match the certificate or "
        "others may read it"),
    STR(tls_client_ca_file, BOTH, NULL, "FILE",
        "mutual TLS: PEM CA certificate(s); a client must show a certificate they signed"),
    STR(tls_min_version, BOTH, "TLS1.2", "VER", "lowest TLS version accepted: TLS1.2 or TLS1.3"),
    STR(tls_priorities, BOTH, "SECURE128:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305",
        "PRIO", "GnuTLS priority string (ciphers); the versions of tls_min_version are added"),
    STR(auth_tokens_file, BOTH, NULL, "FILE",
        "require Authorization: Bearer tokens whose SHA-256 and scopes (infer, read, metrics, "
        "admin) this file lists (predictctl token add); re-read on reload; health probes stay open"),
    BOOL(metrics_require_token, BOTH, 1,
         "with auth_tokens_file: the Prometheus path needs a token with the metrics scope"),
    BOOL(ui_enabled, BOTH, 1,
         "serve the read-only operator console at GET /ui (needs the read scope with "
         "auth_tokens_file); false = /ui answers 404"),
    {.name = "otlp_endpoint", .section = "tracing", .flag = "tracing_otlp_endpoint",
     .type = SRV_SET_STR, .where = BOTH, .offset = FIELD(tracing_otlp_endpoint, char *),
     .arg = "URL",
     .help = "export OpenTelemetry traces of REST requests as OTLP/HTTP JSON to this URL "
             "(http://HOST:PORT/v1/traces, or https://; a collector's); unset = no spans, no traceparent "
             "in answers (docs/console.md, \"Tracing\")"},
    {.name = "otlp_ca_file", .section = "tracing", .flag = "tracing_otlp_ca_file",
     .type = SRV_SET_STR, .where = BOTH, .offset = FIELD(tracing_otlp_ca_file, char *),
     .arg = "FILE",
     .help = "with an https:// tracing.otlp_endpoint: the PEM CA certificate(s) the "
             "collector's certificate must chain to; unset = the system CA store"},
    {.name = "sample_rate", .section = "tracing", .flag = "tracing_sample_rate",
     .type = RT_SET_NUM, .where = BOTH, .dlo = 0, .dhi = 1, .ddef = 1,
     .offset = FIELD(tracing_sample_rate, double), .arg = "R", .what = "a number in [0, 1]",
     .help = "with tracing.otlp_endpoint: the share of requests without a sampled-or-not "
             "traceparent that are traced (parent-based: a parent's decision wins)"},
    BOOL(auth_tokens_empty_denies_all, BOTH, 0,
         "with auth_tokens_file: a reload that finds no token in the file takes it, and every "
         "request but the health probes is refused; false = such a reload is refused (ERROR) "
         "and the running tokens stay, as for a missing file"),
    STR(aip_predict_route, BOTH, NULL, "PATH",
        "Vertex AI's custom-container contract (AIP_PREDICT_ROUTE): POST PATH runs :predict "
        "on the one model served, as /v1/models/MODEL:predict does; needs exactly one model"),
    STR(aip_health_route, BOTH, NULL, "PATH",
        "Vertex AI's health route (AIP_HEALTH_ROUTE): GET PATH answers as /v2/health/ready"),
    SIZE(gzip_response_min_bytes, BOTH, 0, INT64_C(1) << 30, 0,
         "answer in gzip (Content-Encoding: gzip) when the answer has at least N bytes and the "
         "request's Accept-Encoding takes gzip; 0 = never"),
};
#define N_SETTINGS (sizeof SETTINGS / sizeof SETTINGS[0])
_Static_assert(N_SETTINGS <= 64, "srv_args.set has 64 bits");

const srv_setting *srv_settings(size_t *n)
{
    *n = N_SETTINGS;
    return SETTINGS;
}

const srv_setting *srv_setting_find(const char *name)
{
    return rt_settings_find(SETTINGS, N_SETTINGS, name);
}

const char *srv_config_restart_change(const srv_config *a, const srv_config *b)
{
    const srv_setting *s = rt_settings_diff(SETTINGS, N_SETTINGS, SRV_SET_LIVE, a, b);
    if (s)
        return s->name;
    /* the monitoring config's content (its path is a flag, the same) */
    if (!a->metrics_path != !b->metrics_path ||
        (a->metrics_path && strcmp(a->metrics_path, b->metrics_path) != 0))
        return "monitoring_config_file";
    return NULL;
}

int srv_config_request_threads(const srv_config *c, int cpus)
{
    return c->rest_api_num_threads > 0 ? c->rest_api_num_threads : cpus;
}

void srv_config_free(srv_config *c)
{
    if (!c)
        return;
    rt_settings_free(SETTINGS, N_SETTINGS, c);
    free(c->metrics_path);
    for (size_t i = 0; i < c->n_models; i++)
        srv_model_conf_clear(&c->models[i]);
    free(c->models);
    free(c);
}

/* --------------------------------------------------------- JSON parsing */

/* "k: unknown key (did you mean K?)", or where to find the keys. */
static rt_status unknown_key(const char *k, rt_err *err)
{
    static const char *const extra[] = {"models", "tracing", NULL};
    const char *near = rt_settings_suggest(SETTINGS, N_SETTINGS, k, SRV_SET_JSON, NULL, extra);
    if (near)
        return rt_cfg_fail(err, "", k, "unknown key (did you mean %s?)", near);
    return rt_cfg_fail(err, "", k, "unknown key (predictd --help_config lists the keys)");
}

rt_status srv_config_parse(const char *text, size_t len, const char *base_dir,
                           srv_config **out, rt_err *err)
{
    rt_status st = RT_ERR_INVALID;
    cJSON *root = NULL;
    srv_tfconf_map *map = NULL;
    srv_config *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
    if ((st = rt_settings_defaults(SETTINGS, N_SETTINGS, c, err)) != RT_OK)
        goto out;
    /* TF Serving's text format or JSON, told apart by content; the text
     * format becomes the same tree, so the checks below are the same. */
    if (srv_tfconf_is_text(text, len)) {
        if ((st = srv_tfconf_model_config(text, len, &root, &map, err)) != RT_OK)
            goto out;
    } else if ((st = rt_cfg_parse_json(text, len, &root, err)) != RT_OK) {
        goto out;
    }
    st = RT_ERR_INVALID;
    if (!cJSON_IsObject(root)) {
        rt_err_set(err, RT_ERR_INVALID, "config: the top level must be a JSON object");
        goto out;
    }
    const char *dup = srv_json_dup_key(root);
    if (dup) {
        rt_err_set(err, RT_ERR_INVALID, "%.100s: given twice", dup);
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        const srv_setting *s = rt_settings_find_key(SETTINGS, N_SETTINGS, NULL, it->string);
        if (s)
            st = rt_setting_json(s, root, "", c, err);
        else if (!strcmp(it->string, "models"))
            st = srv_config_parse_models(it, base_dir, c, err);
        else if (!strcmp(it->string, "tracing"))
            st = rt_settings_json(SETTINGS, N_SETTINGS, it, "tracing", "tracing", NULL, c, err);
        else
            st = unknown_key(it->string, err);
        if (st != RT_OK)
            goto out;
    }
    st = RT_OK;
out:
    if (st != RT_OK)
        srv_tfconf_locate(map, err);
    srv_tfconf_map_free(map);
    cJSON_Delete(root);
    if (st != RT_OK)
        srv_config_free(c);
    else
        *out = c;
    return st;
}

/* ------------------------------------------------------- command line */

void srv_args_free(srv_args *a)
{
    if (!a)
        return;
    rt_settings_free(SETTINGS, N_SETTINGS, &a->values);
    for (size_t i = 0; i < a->n_warnings; i++)
        free(a->warnings[i]);
    free(a->warnings);
    for (size_t i = 0; i < a->n_notes; i++)
        free(a->notes[i]);
    free(a->notes);
    memset(a, 0, sizeof *a);
}

bool srv_args_given(const srv_args *a, const char *name)
{
    const srv_setting *s = srv_setting_find(name);
    return s && (a->set >> (size_t)(s - SETTINGS) & 1);
}

rt_status srv_args_set(srv_args *a, const char *name, const char *value, rt_err *err)
{
    const srv_setting *s = srv_setting_find(name);
    if (!s || !(s->where & SRV_SET_FLAG))
        return rt_err_set(err, RT_ERR_INVALID, "--%s: unknown flag", name);
    if (s->type != SRV_SET_BOOL && !value)
        return rt_err_set(err, RT_ERR_INVALID, "--%s: needs a value", name);
    if (rt_setting_text(s, value, &a->values, err) != RT_OK)
        return RT_ERR_INVALID;
    a->set |= UINT64_C(1) << (size_t)(s - SETTINGS);
    return RT_OK;
}

/* The flags outside the table (rt_argv.other): --help, --help_config,
 * --version and TensorFlow Serving's flags predictd has no setting for (a
 * bool one takes a value only after '='). */
static int other_flag(void *ctx, const char *name, size_t len, const char *eq, const char *next,
                      rt_err *err)
{
    srv_args *a = ctx;
    char n[128];
    if (len >= sizeof n)
        return 0;
    memcpy(n, name, len);
    n[len] = '\0';
    bool *own = !strcmp(n, "help")          ? &a->help
                : !strcmp(n, "help_config") ? &a->help_config
                : !strcmp(n, "version")     ? &a->version
                                            : NULL;
    if (own && !eq) {
        *own = true;
        return 1;
    }
    for (size_t i = 0; !own && i < srv_tfflag_count(); i++) {
        srv_tfflag_type type;
        if (strcmp(srv_tfflag_name(i, &type), n) != 0)
            continue;
        const char *v = eq;
        if (!v && type != SRV_TF_BOOL && !next) {
            rt_err_set(err, RT_ERR_INVALID, "--%s: needs a value", n);
            return -1;
        }
        if (!v && type != SRV_TF_BOOL)
            v = next;
        const char *alias, *alias_value;
        if (srv_tfflag_apply(i, v, a, &alias, &alias_value, err) != RT_OK ||
            (alias && srv_args_set(a, alias, alias_value, err) != RT_OK))
            return -1;
        return v && !eq ? 2 : 1;
    }
    return 0;
}

/* "arg: unexpected argument (flags start with --)" for a non-flag. */
static rt_status unexpected(const char *arg, rt_err *err)
{
    return rt_err_set(err, RT_ERR_INVALID, "%s: unexpected argument (flags start with --)", arg);
}

rt_status srv_args_parse(int argc, char **argv, srv_args *a, rt_err *err)
{
    size_t n_tf = srv_tfflag_count(), k = 0;
    rt_status st = RT_ERR_INVALID;
    memset(a, 0, sizeof *a);
    if (rt_settings_defaults(SETTINGS, N_SETTINGS, &a->values, err) != RT_OK)
        return RT_ERR_NOMEM;
    /* "did you mean" knows TF's flags and the three of its own too */
    const char **extra = calloc(n_tf + 4, sizeof *extra);
    if (!extra)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n_tf; i++)
        extra[k++] = srv_tfflag_name(i, NULL);
    extra[k++] = "help";
    extra[k++] = "help_config";
    extra[k++] = "version";
    rt_argv spec = {.rows = SETTINGS,
                    .n = N_SETTINGS,
                    .dashdash = true,
                    .extra = extra,
                    .other = other_flag,
                    .ctx = a};
    int next = argc;
    rt_status r = rt_settings_argv(&spec, argc, argv, &a->values, &a->set, &next, err);
    if (r == RT_ERR_NOTFOUND || r == RT_ERR_NOMEM)
        st = r == RT_ERR_NOMEM ? r : RT_ERR_INVALID;
    else if (r != RT_OK)
        st = r;
    else if (next < argc)
        unexpected(argv[next], err);
    else if (srv_args_given(a, "model_repository") &&
             (srv_args_given(a, "model_name") || srv_args_given(a, "model_config_file")))
        rt_err_set(err, RT_ERR_INVALID,
                   "--model_repository: give one of --model_repository, --model_config_file "
                   "and --model_name/--model_base_path");
    else if (srv_args_given(a, "model_name") && srv_args_given(a, "model_config_file"))
        rt_err_set(err, RT_ERR_INVALID,
                   "--model_name: give either --model_name/--model_base_path or "
                   "--model_config_file, not both");
    else if (srv_args_given(a, "model_name") != srv_args_given(a, "model_base_path"))
        rt_err_set(err, RT_ERR_INVALID, "--model_name and --model_base_path must be given together");
    else if (srv_args_given(a, "model_monitoring") && !srv_args_given(a, "model_name"))
        rt_err_set(err, RT_ERR_INVALID, "--model_monitoring goes with --model_name (in a config "
                   "file, give the model's \"monitoring\" key)");
    else
        st = RT_OK;
    free(extra);
    return st;
}

/* ------------------------------------------------------------- --help */

static const char *type_of(const srv_setting *s)
{
    return s->type == SRV_SET_BOOL   ? "true or false"
           : s->type == SRV_SET_NAME ? "name"
           : s->type == RT_SET_NUM   ? "number"
                                     : "string";
}

char *srv_args_usage(bool config_keys)
{
    enum { COL = 32 };
    rt_buf b;
    rt_buf_init(&b);
    int r = 0;
    if (config_keys) {
        r |= rt_buf_puts(&b, "predictd's config file (--model_config_file): a JSON object "
                             "with these keys, each optional but \"models\":\n");
        for (size_t i = 0; i < N_SETTINGS; i++) {
            const srv_setting *s = &SETTINGS[i];
            if (!(s->where & SRV_SET_JSON))
                continue;
            if (s->type == SRV_SET_INT || s->type == SRV_SET_SIZE)
                r |= rt_buf_printf(&b, "  %s  (integer %lld..%lld)\n", s->name,
                                   (long long)s->lo, (long long)s->hi);
            else if (s->type == RT_SET_NUM)
                r |= rt_buf_printf(&b, "  %s%s%s  (number %g..%g)\n", s->section ? s->section : "",
                                   s->section ? "." : "", s->name, s->dlo, s->dhi);
            else
                r |= rt_buf_printf(&b, "  %s%s%s  (%s)\n", s->section ? s->section : "",
                                   s->section ? "." : "", s->name, type_of(s));
            r |= rt_buf_puts(&b, "      ");
            r |= rt_setting_help(&b, s,
                                 s->where & SRV_SET_LIVE
                                     ? "; a reload applies it at once"
                                     : "; a change takes effect at the next start",
                                 6, 6);
        }
        r |= rt_buf_puts(&b, "  models  (list)\n      ");
        r |= rt_settings_wrap(
            &b,
            "the models to serve, each {\"name\", \"base_path\", \"version_policy\" (or "
            "\"model_version_policy\"): {\"latest\": N} | {\"all\": true} | "
            "{\"specific\": [versions]} (default {\"latest\": 1}), \"version_labels\": "
            "{\"label\": version}, \"default_version\": version or label, "
            "\"traffic_split\": {\"label or version\": percent, ...} summing to 100, "
            "\"shadow\": {\"version\": label or version, \"percent\": P}, "
            "\"request_logging\": {\"sampling_rate\": 0..1, \"dir\": path, "
            "\"max_file_mb\": 64, \"max_files\": 10}, \"monitoring\": {\"sample_rate\": "
            "(0..1] (1), \"window_seconds\": 3600, \"window_instances\": 0, "
            "\"default_threshold\": 0.3, \"thresholds\": {\"feature\": 0..1}} (skew and drift "
            "against the export's training statistics; docs/data-validation.md)}",
            6, 6);
    } else {
        r |= rt_buf_puts(&b, "usage: predictd [flags]\n"
                             "  Serves exported models over TensorFlow Serving's REST API.\n");
        r |= rt_settings_help(&b, SETTINGS, N_SETTINGS, COL, NULL, 0);
        r |= rt_buf_printf(&b, "%-*s%s\n%-*s%s\n%-*s%s\n", COL, "  --help", "this text", COL,
                           "  --help_config", "the config file's keys (JSON)", COL,
                           "  --version", "print the version");
        r |= rt_buf_puts(&b,
                         "Signals: SIGHUP reloads the config file (also reloaded when it "
                         "changes);\n"
                         "SIGTERM/SIGINT drain (readyz 503), then stop after in-flight requests "
                         "finish.\n"
                         "Under systemd: Type=notify, socket activation, WatchdogSec are "
                         "supported.\n");
    }
    if (r) {
        rt_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* ---------------------------------------------------- the effective config */

/* Directory of path, made absolute. Malloc'd, or NULL. */
static char *dir_of(const char *path)
{
    char *abs = realpath(path, NULL);
    if (!abs)
        return NULL;
    char *slash = strrchr(abs, '/');
    if (slash == abs)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    return abs;
}

/* The one model of --model_name / --model_base_path. */
static rt_status flag_model(const srv_args *a, srv_config *c, rt_err *err)
{
    c->models = calloc(1, sizeof *c->models);
    if (!c->models)
        return rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
    c->n_models = 1;
    srv_model_conf *mc = &c->models[0];
    mc->policy = SRV_POLICY_LATEST;
    mc->latest_n = 1;
    mc->default_version = -1;
    mc->name = strdup(a->values.model_name);
    char *abs = realpath(a->values.model_base_path, NULL);
    mc->base_path = abs ? abs : strdup(a->values.model_base_path);
    if (!mc->name || !mc->base_path)
        return rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
    if (a->values.model_monitoring) {
        cJSON *j = NULL;
        rt_status st = rt_cfg_parse_json(a->values.model_monitoring,
                                         strlen(a->values.model_monitoring), &j, err);
        if (st == RT_OK)
            st = srv_monitor_parse(j, "--model_monitoring", &mc->monitor, err);
        else
            rt_err_prefix(err, "--model_monitoring");
        cJSON_Delete(j);
        return st;
    }
    return RT_OK;
}

/* The batching file's key name into c (a key the table has: the tree is
 * made by srv_tfconf_batching from the table's names). */
static rt_status set_from_json_row(const cJSON *j, const char *name, srv_config *c, rt_err *err)
{
    const srv_setting *s = srv_setting_find(name);
    return s ? rt_setting_json(s, j, "", c, err) : RT_OK;
}

/* Reads TF Serving's BatchingParameters file at path into c's batching
 * settings (the table's ranges; errors name the file's line and column). */
static rt_status apply_batching_file(const char *path, srv_config *c, rt_err *err)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *j = NULL;
    srv_tfconf_map *map = NULL;
    rt_status st = rt_file_read(AT_FDCWD, path, SRV_CONFIG_MAX_BYTES, 0, &text, &len, err);
    if (st == RT_OK && (st = srv_tfconf_batching(text, len, &j, &map, err)) == RT_OK) {
        const cJSON *it;
        cJSON_ArrayForEach(it, j)
        {
            if ((st = set_from_json_row(j, it->string, c, err)) != RT_OK) {
                srv_tfconf_locate(map, err);
                break;
            }
        }
    }
    if (st != RT_OK)
        rt_err_prefix(err, "--batching_parameters_file %s", path);
    cJSON_Delete(j);
    srv_tfconf_map_free(map);
    free(text);
    return st;
}

/* c->metrics_path: TF's path from --monitoring_config_file (NULL when it
 * says enable: false), else predictd's default. A path that is one of the
 * API's own is refused. */
static rt_status set_metrics_path(srv_config *c, rt_err *err)
{
    static const char DEFAULT_PATH[] = "/monitoring/prometheus/metrics";
    free(c->metrics_path);
    c->metrics_path = NULL;
    if (!c->monitoring_config_file)
        return (c->metrics_path = strdup(DEFAULT_PATH))
                   ? RT_OK
                   : rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
    const char *path = c->monitoring_config_file;
    char *text = NULL;
    size_t len = 0;
    bool enable = false;
    char *mp = NULL;
    rt_status st = rt_file_read(AT_FDCWD, path, SRV_CONFIG_MAX_BYTES, 0, &text, &len, err);
    if (st == RT_OK)
        st = srv_tfconf_monitoring(text, len, &enable, &mp, err);
    free(text);
    if (st != RT_OK) {
        rt_err_prefix(err, "--monitoring_config_file %s", path);
        return st;
    }
    srv_route r;
    srv_route_request("GET", mp, &r);
    if (r.kind != SRV_ROUTE_NONE && r.kind != SRV_ROUTE_METRICS) {
        st = rt_err_set(err, RT_ERR_INVALID,
                        "--monitoring_config_file %s: prometheus_config.path: %s is a path of "
                        "predictd's API; choose another",
                        path, mp);
        free(mp);
        return st;
    }
    if (enable)
        c->metrics_path = mp;
    else
        free(mp);
    return RT_OK;
}

/* Vertex AI's routes: absolute paths; its predict route runs the one
 * model (Vertex deploys one model per container). */
static rt_status check_aip_routes(const srv_config *c, rt_err *err)
{
    const char *r[2] = {c->aip_predict_route, c->aip_health_route};
    const char *names[2] = {"aip_predict_route", "aip_health_route"};
    for (int i = 0; i < 2; i++)
        if (r[i] && (r[i][0] != '/' || strlen(r[i]) >= 512 || strchr(r[i], '?')))
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s: '%s' is not a path (it starts with '/', has no query and "
                              "fewer than 512 bytes)", names[i], r[i]);
    if (c->aip_predict_route && c->n_models != 1)
        return rt_err_set(err, RT_ERR_INVALID,
                          "aip_predict_route: Vertex AI sends every prediction to one route, "
                          "so it runs one model, and the config has %zu", c->n_models);
    return RT_OK;
}

rt_status srv_config_build(const srv_args *a, srv_config **out, rt_err *err)
{
    rt_status st = RT_OK;
    srv_config *c = NULL;
    char *text = NULL, *dir = NULL;
    *out = NULL;
    if (srv_args_given(a, "model_config_file")) {
        const char *path = a->values.model_config_file;
        size_t len = 0;
        if ((st = rt_file_read(AT_FDCWD, path, SRV_CONFIG_MAX_BYTES, 0, &text, &len, err)) != RT_OK)
            goto out;
        /* Without its directory, relative paths would stay relative. */
        if (!(dir = dir_of(path)) && errno == ENOMEM) {
            st = rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
            goto out;
        }
        if ((st = srv_config_parse(text, len, dir, &c, err)) != RT_OK) {
            rt_err_prefix(err, "%s", path);
            goto out;
        }
    } else if (srv_args_given(a, "model_name")) {
        if ((st = srv_config_parse("{}", 2, NULL, &c, err)) != RT_OK ||
            (st = flag_model(a, c, err)) != RT_OK)
            goto out;
    } else if (srv_args_given(a, "model_repository")) {
        if ((st = srv_repository_config(a->values.model_repository, &text, err)) != RT_OK)
            goto out;
        if ((st = srv_config_parse(text, strlen(text), NULL, &c, err)) != RT_OK) {
            rt_err_prefix(err, "--model_repository %s", a->values.model_repository);
            goto out;
        }
    } else {
        st = rt_err_set(err, RT_ERR_INVALID,
                        "no model: give --model_name and --model_base_path, "
                        "--model_config_file or --model_repository (see --help)");
        goto out;
    }
    /* TF Serving's batching file over the config file, the flags over both. */
    if (srv_args_given(a, "batching_parameters_file") &&
        (st = apply_batching_file(a->values.batching_parameters_file, c, err)) != RT_OK)
        goto out;
    /* Command-line flags win over the file. */
    if ((st = rt_settings_copy(SETTINGS, N_SETTINGS, a->set, c, &a->values, err)) != RT_OK)
        goto out;
    if (c->n_models == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "models: at least one model must be configured");
        goto out;
    }
    if (c->batching_parameters_file && !c->enable_batching) {
        /* TF Serving refuses it too: the file would silently do nothing. */
        st = rt_err_set(err, RT_ERR_INVALID,
                        "--batching_parameters_file is set without --enable_batching (as in TF "
                        "Serving, the file only takes effect with batching on)");
        goto out;
    }
    if ((st = set_metrics_path(c, err)) != RT_OK)
        goto out;
    if ((st = check_aip_routes(c, err)) != RT_OK)
        goto out;
    if (c->max_total_request_bytes < c->max_request_bytes) {
        st = rt_err_set(err, RT_ERR_INVALID,
                        "max_total_request_bytes: %zu is less than max_request_bytes (%zu): a "
                        "request of the largest size could never be received",
                        c->max_total_request_bytes, c->max_request_bytes);
        goto out;
    }
out:
    free(text);
    free(dir);
    if (st != RT_OK)
        srv_config_free(c);
    else
        *out = c;
    return st;
}

rt_status srv_config_build_models(const srv_args *a, const char *models, size_t len,
                                  srv_config **out, rt_err *err)
{
    srv_config *m = NULL, *c = NULL;
    *out = NULL;
    rt_status st = srv_config_parse(models, len, NULL, &m, err);
    if (st == RT_OK && m->n_models == 0)
        st = rt_err_set(err, RT_ERR_INVALID, "models: at least one model must be configured");
    if (st == RT_OK && (st = srv_config_build(a, &c, err)) == RT_OK) {
        /* each frees what it then holds */
        srv_model_conf *keep = c->models;
        size_t n_keep = c->n_models;
        c->models = m->models;
        c->n_models = m->n_models;
        m->models = keep;
        m->n_models = n_keep;
        *out = c;
    }
    srv_config_free(m);
    return st;
}
