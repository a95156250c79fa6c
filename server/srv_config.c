/*
 * srv_config.c — predictd's settings from one table: each line of SETTINGS
 * is a setting's name (its JSON key and its flag: TensorFlow Serving's names
 * where TF has the setting), type, range, default, field and help. From it
 * come the defaults, the config file's top-level keys (through rt_cfg's
 * getters, errors naming the key), the command-line flags (getopt_long),
 * --help, --help_config and the unknown-key / unknown-flag messages with a
 * "did you mean". The config file's "models" list is srv_config_models.c's.
 * A flag given on the command line wins over the file's key.
 */
#include "srv_config_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES (16u << 20)

/* ------------------------------------------------------------ the table */

/* offsetof(srv_config, f), refused at compile time unless f has type T. */
#define FIELD(f, T)                                                                                \
    (offsetof(srv_config, f) +                                                                     \
     0 * sizeof(char[_Generic(((srv_config *)0)->f, T: 1, default: -1)]))
#define BOTH (SRV_SET_JSON | SRV_SET_FLAG)
#define LIVE (BOTH | SRV_SET_LIVE)
#define INT(f, where, lo, hi, def, arg, help) \
    {#f, SRV_SET_INT, where, lo, hi, def, NULL, FIELD(f, int), arg, help}
#define SIZE(f, where, lo, hi, def, help) \
    {#f, SRV_SET_SIZE, where, lo, hi, def, NULL, FIELD(f, size_t), "N", help}
#define BOOL(f, where, def, help) \
    {#f, SRV_SET_BOOL, where, 0, 1, def, NULL, FIELD(f, bool), NULL, help}
#define STR(f, where, def, arg, help) \
    {#f, SRV_SET_STR, where, 0, 0, 0, def, FIELD(f, char *), arg, help}
#define NAME(f, where, arg, help) \
    {#f, SRV_SET_NAME, where, 0, 0, 0, NULL, FIELD(f, char *), arg, help}

/* In --help order. where: BOTH (config key and flag), LIVE (the same, and a
 * reload applies it at once; the others wait for the next start),
 * SRV_SET_FLAG (flag only) or SRV_SET_JSON (config key only). */
static const srv_setting SETTINGS[] = {
    INT(rest_api_port, BOTH, 0, 65535, 8501, "N", "port of the REST API; 0 = any free port"),
    STR(rest_api_host, BOTH, "0.0.0.0", "ADDR", "address to listen on"),
    NAME(model_name, SRV_SET_FLAG, "NAME", "the one model to serve (no config file)"),
    STR(model_base_path, SRV_SET_FLAG, NULL, "DIR", "its directory of integer-named versions"),
    STR(model_config_file, SRV_SET_FLAG, NULL, "FILE",
        "JSON config (see conf/predictd.json, predictd --help_config) or TF Serving's "
        "text-format model config (conf/models.config); flags given on the command line win "
        "over the file"),
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
        "Retry-After; 0 = inference on the HTTP threads"),
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
        "TF Serving's gRPC port: accepted so that TF Serving command lines run, with a "
        "warning; predictd has no gRPC API and serves REST on --rest_api_port"),
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
        "require Authorization: Bearer tokens whose SHA-256 and scopes (infer, read, metrics) "
        "this file lists (predictctl token add); re-read on reload; health probes stay open"),
    BOOL(metrics_require_token, BOTH, 1,
         "with auth_tokens_file: the Prometheus path needs a token with the metrics scope"),
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
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (!strcmp(SETTINGS[i].name, name))
            return &SETTINGS[i];
    return NULL;
}

/* The field of c that s fills (c may be const: read it so). */
static void *field(const srv_config *c, const srv_setting *s)
{
    return (char *)(uintptr_t)c + s->offset;
}

const char *srv_config_restart_change(const srv_config *a, const srv_config *b)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const srv_setting *s = &SETTINGS[i];
        const void *x = field(a, s), *y = field(b, s);
        bool same;
        if (s->where & SRV_SET_LIVE)
            continue;
        if (s->type == SRV_SET_INT)
            same = *(const int *)x == *(const int *)y;
        else if (s->type == SRV_SET_SIZE)
            same = *(const size_t *)x == *(const size_t *)y;
        else if (s->type == SRV_SET_BOOL)
            same = *(const bool *)x == *(const bool *)y;
        else
            same = !*(char *const *)x == !*(char *const *)y &&
                   (!*(char *const *)x || !strcmp(*(char *const *)x, *(char *const *)y));
        if (!same)
            return s->name;
    }
    /* the monitoring config's content (its path is a flag, the same) */
    if (!a->metrics_path != !b->metrics_path ||
        (a->metrics_path && strcmp(a->metrics_path, b->metrics_path) != 0))
        return "monitoring_config_file";
    return NULL;
}

static bool is_string(const srv_setting *s)
{
    return s->type == SRV_SET_STR || s->type == SRV_SET_NAME;
}

/* Replaces the string field of s with a copy of v (NULL clears it). */
static rt_status set_string(srv_config *c, const srv_setting *s, const char *v, rt_err *err)
{
    char **p = field(c, s);
    char *copy = NULL;
    if (v && !(copy = strdup(v)))
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", s->name);
    free(*p);
    *p = copy;
    return RT_OK;
}

/* Every setting to its default. c holds no strings yet (zeroed). */
static rt_status config_defaults(srv_config *c, rt_err *err)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const srv_setting *s = &SETTINGS[i];
        switch (s->type) {
        case SRV_SET_INT:
            *(int *)field(c, s) = (int)s->def;
            break;
        case SRV_SET_SIZE:
            *(size_t *)field(c, s) = (size_t)s->def;
            break;
        case SRV_SET_BOOL:
            *(bool *)field(c, s) = s->def != 0;
            break;
        case SRV_SET_STR:
        case SRV_SET_NAME:
            if (set_string(c, s, s->def_str, err) != RT_OK)
                return RT_ERR_NOMEM;
            break;
        }
    }
    return RT_OK;
}

/* Frees the table's strings in c. */
static void free_strings(srv_config *c)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (is_string(&SETTINGS[i])) {
            char **p = field(c, &SETTINGS[i]);
            free(*p);
            *p = NULL;
        }
}

void srv_config_free(srv_config *c)
{
    if (!c)
        return;
    free_strings(c);
    free(c->metrics_path);
    for (size_t i = 0; i < c->n_models; i++)
        srv_model_conf_clear(&c->models[i]);
    free(c->models);
    free(c);
}

/* Edit distance of a and b (each at most 63 bytes, else a large number):
 * insertions, deletions, substitutions and swaps of two neighbours cost 1;
 * '-' and '_' are the same letter (--rest-api-port is --rest_api_port). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), d[64][64];
    if (la >= 64 || lb >= 64)
        return SIZE_MAX;
#define SAME(x, y) ((x) == (y) || (((x) == '-' || (x) == '_') && ((y) == '-' || (y) == '_')))
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + !SAME(a[i - 1], b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && SAME(a[i - 1], b[j - 2]) && SAME(a[i - 2], b[j - 1]) &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
#undef SAME
    return d[la][lb];
}

/* True when every word of name (split at '_' or '-') is a word of cand, in
 * the same order: --rest_port for --rest_api_port. */
static bool words_within(const char *name, const char *cand)
{
    const char *c = cand;
    size_t words = 0;
    while (*name) {
        size_t n = strcspn(name, "_-");
        bool found = false;
        while (*c && !found) {
            size_t m = strcspn(c, "_-");
            found = m == n && n > 0 && !strncmp(c, name, n);
            c += m;
            c += strspn(c, "_-");
        }
        if (!found)
            return false;
        words++;
        name += n;
        name += strspn(name, "_-");
    }
    return words >= 2;
}

/* How near cand is to name as a suggestion: 0 not near; else a rank (lower
 * is nearer) from the edit distance. Near means a typo — at most one edit
 * per six letters (at least one) — or the start of the name (an
 * abbreviation), or a name missing a word (every word of name is one of
 * cand's, at least two), when only one name is; a name that differs in a whole word
 * (--ssl_config_file, --num_load_threads) is not near --model_config_file
 * or --num_batch_threads. */
static size_t nearness(const char *name, const char *cand)
{
    size_t len = strlen(name), d = distance(name, cand);
    size_t bound = len / 6 > 1 ? len / 6 : 1;
    if (d == SIZE_MAX)
        return 0;
    if (d <= bound)
        return 1 + d;
    if (len >= 3 && !strncmp(cand, name, len))
        return 64; /* all abbreviations alike: two of them are a tie */
    if (words_within(name, cand))
        return 128; /* the same */
    return 0;
}

/* The known name (settings where `where` says, TF Serving's other flags
 * when `where` includes flags, plus extra) nearest to name, if near enough
 * (nearness), or NULL. Of two equally near, neither: no guess. */
static const char *did_you_mean(const char *name, unsigned where, const char *const *extra)
{
    const char *best = NULL;
    size_t best_r = SIZE_MAX;
    bool tie = false;
    size_t n_tf = (where & SRV_SET_FLAG) ? srv_tfflag_count() : 0;
    for (size_t i = 0; i < N_SETTINGS + n_tf; i++) {
        const char *cand = i < N_SETTINGS ? ((SETTINGS[i].where & where) ? SETTINGS[i].name : NULL)
                                          : srv_tfflag_name(i - N_SETTINGS, NULL);
        size_t r = cand ? nearness(name, cand) : 0;
        if (r && r < best_r) {
            best_r = r;
            best = cand;
            tie = false;
        } else if (r && r == best_r) {
            tie = true;
        }
    }
    for (; extra && *extra; extra++) {
        size_t r = nearness(name, *extra);
        if (r && r < best_r) {
            best_r = r;
            best = *extra;
            tie = false;
        } else if (r && r == best_r) {
            tie = true;
        }
    }
    return tie ? NULL : best;
}

/* --------------------------------------------------------- JSON parsing */

/* Reads the member named s->name of root into c. */
static rt_status set_from_json(const cJSON *root, const srv_setting *s, srv_config *c,
                               rt_err *err)
{
    int64_t v;
    const char *str = NULL;
    switch (s->type) {
    case SRV_SET_INT:
        v = *(int *)field(c, s);
        if (rt_cfg_int(root, "", s->name, 0, s->lo, s->hi, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        *(int *)field(c, s) = (int)v;
        return RT_OK;
    case SRV_SET_SIZE:
        v = (int64_t) * (size_t *)field(c, s);
        if (rt_cfg_int(root, "", s->name, 0, s->lo, s->hi, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        *(size_t *)field(c, s) = (size_t)v;
        return RT_OK;
    case SRV_SET_BOOL:
        return rt_cfg_bool(root, "", s->name, 0, (bool *)field(c, s), err);
    case SRV_SET_STR:
    case SRV_SET_NAME:
        if (rt_cfg_str(root, "", s->name, 0, &str, err) != RT_OK)
            return RT_ERR_INVALID;
        if (!str)
            return RT_OK; /* null: the default */
        if (str[0] == '\0')
            return rt_cfg_fail(err, "", s->name, "must be a non-empty string");
        if (s->type == SRV_SET_NAME && !srv_name_valid(str, strlen(str)))
            return rt_cfg_fail(err, "", s->name, "'%s' is not a valid name ([A-Za-z0-9_.-]+)",
                               str);
        return set_string(c, s, str, err);
    }
    return RT_OK;
}

/* "k: unknown key (did you mean K?)", or where to find the keys. */
static rt_status unknown_key(const char *k, rt_err *err)
{
    static const char *const extra[] = {"models", NULL};
    const char *near = did_you_mean(k, SRV_SET_JSON, extra);
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
    if ((st = config_defaults(c, err)) != RT_OK)
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
        const srv_setting *s = srv_setting_find(it->string);
        if (s && (s->where & SRV_SET_JSON))
            st = set_from_json(root, s, c, err);
        else if (!strcmp(it->string, "models"))
            st = srv_config_parse_models(it, base_dir, c, err);
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

/* Reads a flag's text value into c, errors naming "--name". */
static rt_status set_from_text(const srv_setting *s, const char *val, srv_config *c, rt_err *err)
{
    char *end = NULL;
    long long v;
    switch (s->type) {
    case SRV_SET_INT:
    case SRV_SET_SIZE:
        errno = 0;
        v = strtoll(val, &end, 10);
        if (errno == ERANGE || !end || end == val || *end != '\0')
            return rt_err_set(err, RT_ERR_INVALID, "--%s: '%s' is not an integer", s->name, val);
        if (v < s->lo || v > s->hi)
            return rt_err_set(err, RT_ERR_INVALID, "--%s: %lld is out of range [%lld, %lld]",
                              s->name, v, (long long)s->lo, (long long)s->hi);
        if (s->type == SRV_SET_INT)
            *(int *)field(c, s) = (int)v;
        else
            *(size_t *)field(c, s) = (size_t)v;
        return RT_OK;
    case SRV_SET_BOOL:
        if (!val || !strcmp(val, "true") || !strcmp(val, "1"))
            *(bool *)field(c, s) = true;
        else if (!strcmp(val, "false") || !strcmp(val, "0"))
            *(bool *)field(c, s) = false;
        else
            return rt_err_set(err, RT_ERR_INVALID, "--%s: '%s' is not true or false", s->name,
                              val);
        return RT_OK;
    case SRV_SET_STR:
    case SRV_SET_NAME:
        if (val[0] == '\0')
            return rt_err_set(err, RT_ERR_INVALID, "--%s: must not be empty", s->name);
        if (s->type == SRV_SET_NAME && !srv_name_valid(val, strlen(val)))
            return rt_err_set(err, RT_ERR_INVALID,
                              "--%s: '%s' is not a valid name ([A-Za-z0-9_.-]+)", s->name, val);
        return set_string(c, s, val, err);
    }
    return RT_OK;
}

void srv_args_free(srv_args *a)
{
    if (!a)
        return;
    free_strings(&a->values);
    for (size_t i = 0; i < a->n_warnings; i++)
        free(a->warnings[i]);
    free(a->warnings);
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
    if (set_from_text(s, value, &a->values, err) != RT_OK)
        return RT_ERR_INVALID;
    a->set |= UINT64_C(1) << (size_t)(s - SETTINGS);
    return RT_OK;
}

enum {
    OPT_HELP = 'h',
    OPT_HELP_CONFIG = 1,
    OPT_VERSION = 2,
    OPT_SETTING = 256,
    OPT_TFFLAG = 512
};

/* "--name: unknown flag (did you mean --x?)" for the text of an argument. */
static rt_status unknown_flag(const char *arg, rt_err *err)
{
    static const char *const extra[] = {"help", "help_config", "version", NULL};
    if (strncmp(arg, "--", 2) != 0)
        return rt_err_set(err, RT_ERR_INVALID, "%s: unexpected argument (flags start with --)",
                          arg);
    char name[128];
    size_t n = strcspn(arg + 2, "=");
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), arg + 2);
    const char *near = did_you_mean(name, SRV_SET_FLAG, extra);
    if (near)
        return rt_err_set(err, RT_ERR_INVALID, "--%s: unknown flag (did you mean --%s?)", name,
                          near);
    return rt_err_set(err, RT_ERR_INVALID, "--%s: unknown flag (see --help)", name);
}

/* True when arg spells --name in full ("--name" or "--name=..."): getopt_long
 * would take a prefix, TF Serving and predictd do not. */
static bool spelled_out(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(arg, "--", 2) && !strncmp(arg + 2, name, n) &&
           (arg[2 + n] == '\0' || arg[2 + n] == '=');
}

rt_status srv_args_parse(int argc, char **argv, srv_args *a, rt_err *err)
{
    size_t n = 0, n_tf = srv_tfflag_count();
    rt_status st = RT_ERR_INVALID;
    memset(a, 0, sizeof *a);
    if (config_defaults(&a->values, err) != RT_OK)
        return RT_ERR_NOMEM;
    struct option *opts = calloc(N_SETTINGS + n_tf + 4, sizeof *opts);
    if (!opts)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (SETTINGS[i].where & SRV_SET_FLAG)
            opts[n++] = (struct option){SETTINGS[i].name,
                                        SETTINGS[i].type == SRV_SET_BOOL ? optional_argument
                                                                         : required_argument,
                                        NULL, OPT_SETTING + (int)i};
    for (size_t i = 0; i < n_tf; i++) {
        srv_tfflag_type type;
        const char *name = srv_tfflag_name(i, &type);
        opts[n++] = (struct option){name, type == SRV_TF_BOOL ? optional_argument
                                                              : required_argument,
                                    NULL, OPT_TFFLAG + (int)i};
    }
    opts[n++] = (struct option){"help", no_argument, NULL, OPT_HELP};
    opts[n++] = (struct option){"help_config", no_argument, NULL, OPT_HELP_CONFIG};
    opts[n++] = (struct option){"version", no_argument, NULL, OPT_VERSION};
    opts[n] = (struct option){NULL, 0, NULL, 0};
    /* '+': stop at the first non-flag (refused below); ':': a missing value
     * is reported as ':' and no message is printed (opterr = 0). */
    optind = 0; /* glibc: start over (srv_args_parse may run more than once) */
    opterr = 0;
    for (;;) {
        int at = optind ? optind : 1;
        int idx = -1;
        int o = getopt_long(argc, argv, "+:h", opts, &idx);
        if (o == -1)
            break;
        const char *arg = at < argc ? argv[at] : "";
        if (o == '?') {
            unknown_flag(arg, err);
            goto out;
        }
        if (o == ':') {
            bool whole = false; /* not an abbreviation (getopt_long takes those) */
            for (size_t k = 0; k < n && !whole; k++)
                whole = spelled_out(arg, opts[k].name);
            if (whole)
                rt_err_set(err, RT_ERR_INVALID, "%s: needs a value", arg);
            else
                unknown_flag(arg, err);
            goto out;
        }
        if (idx >= 0 && !spelled_out(arg, opts[idx].name)) {
            unknown_flag(arg, err);
            goto out;
        }
        if (o == OPT_HELP) {
            a->help = true;
        } else if (o == OPT_HELP_CONFIG) {
            a->help_config = true;
        } else if (o == OPT_VERSION) {
            a->version = true;
        } else if (o >= OPT_TFFLAG) {
            if ((st = srv_tfflag_apply((size_t)(o - OPT_TFFLAG), optarg, a, err)) != RT_OK)
                goto out;
            st = RT_ERR_INVALID;
        } else {
            const srv_setting *s = &SETTINGS[o - OPT_SETTING];
            if (set_from_text(s, optarg, &a->values, err) != RT_OK)
                goto out;
            a->set |= UINT64_C(1) << (o - OPT_SETTING);
        }
    }
    if (optind < argc)
        unknown_flag(argv[optind], err);
    else if (srv_args_given(a, "model_name") && srv_args_given(a, "model_config_file"))
        rt_err_set(err, RT_ERR_INVALID,
                   "--model_name: give either --model_name/--model_base_path or "
                   "--model_config_file, not both");
    else if (srv_args_given(a, "model_name") != srv_args_given(a, "model_base_path"))
        rt_err_set(err, RT_ERR_INVALID, "--model_name and --model_base_path must be given together");
    else
        st = RT_OK;
out:
    free(opts);
    return st;
}

/* ------------------------------------------------------------- --help */

/* Appends text wrapped at 79 columns, continuation lines indented by
 * indent; col is the column the text starts at (the caller has put the
 * separating blanks before it). */
static int wrap(rt_buf *b, const char *text, size_t col, size_t indent)
{
    int r = 0;
    bool first = true;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (!first && col + 1 + word > 79) {
            r |= rt_buf_printf(b, "\n%*s", (int)indent, "");
            col = indent;
        } else if (!first) {
            r |= rt_buf_puts(b, " ");
            col++;
        }
        r |= rt_buf_append(b, text, word);
        col += word;
        text += word;
        text += strspn(text, " ");
        first = false;
    }
    return r | rt_buf_puts(b, "\n");
}

/* s's help with its default: "... (default 8501)"; with reload, what a
 * reload does with it. */
static int help_of(rt_buf *b, const srv_setting *s, bool reload, size_t col, size_t indent)
{
    char text[1024], def[64] = "";
    if (s->type == SRV_SET_BOOL)
        snprintf(def, sizeof def, " (default %s)", s->def ? "true" : "false");
    else if (is_string(s) && s->def_str)
        snprintf(def, sizeof def, " (default %s)", s->def_str);
    else if (!is_string(s))
        snprintf(def, sizeof def, " (default %lld)", (long long)s->def);
    snprintf(text, sizeof text, "%s%s%s", s->help,
             !reload                     ? ""
             : s->where & SRV_SET_LIVE ? "; a reload applies it at once"
                                       : "; a change takes effect at the next start",
             def);
    return wrap(b, text, col, indent);
}

static const char *type_of(const srv_setting *s)
{
    static const char *const names[] = {"integer", "integer", "true or false", "string", "name"};
    return names[s->type];
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
            else
                r |= rt_buf_printf(&b, "  %s  (%s)\n", s->name, type_of(s));
            r |= rt_buf_puts(&b, "      ");
            r |= help_of(&b, s, true, 6, 6);
        }
        r |= rt_buf_puts(&b, "  models  (list)\n      ");
        r |= wrap(&b,
                  "the models to serve, each {\"name\", \"base_path\", \"version_policy\" (or "
                  "\"model_version_policy\"): {\"latest\": N} | {\"all\": true} | "
                  "{\"specific\": [versions]} (default {\"latest\": 1}), \"version_labels\": "
                  "{\"label\": version}, \"default_version\": version or label, "
                  "\"traffic_split\": {\"label or version\": percent, ...} summing to 100, "
                  "\"shadow\": {\"version\": label or version, \"percent\": P}, "
                  "\"request_logging\": {\"sampling_rate\": 0..1, \"dir\": path, "
                  "\"max_file_mb\": 64, \"max_files\": 10}}",
                  6, 6);
    } else {
        r |= rt_buf_puts(&b, "usage: predictd [flags]\n"
                             "  Serves exported models over TensorFlow Serving's REST API.\n");
        for (size_t i = 0; i < N_SETTINGS; i++) {
            const srv_setting *s = &SETTINGS[i];
            if (!(s->where & SRV_SET_FLAG))
                continue;
            char flag[128];
            int n = snprintf(flag, sizeof flag, s->type == SRV_SET_BOOL ? "  --%s[=true|false]"
                                                                        : "  --%s=%s",
                             s->name, s->arg);
            if (n <= COL - 2)
                r |= rt_buf_printf(&b, "%-*s", COL, flag);
            else
                r |= rt_buf_printf(&b, "%s  ", flag);
            r |= help_of(&b, s, false, n <= COL - 2 ? COL : (size_t)n + 2, COL);
        }
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
    return RT_OK;
}

/* Reads TF Serving's BatchingParameters file at path into c's batching
 * settings (the table's ranges; errors name the file's line and column). */
static rt_status apply_batching_file(const char *path, srv_config *c, rt_err *err)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *j = NULL;
    srv_tfconf_map *map = NULL;
    rt_status st = rt_read_file(AT_FDCWD, path, CONFIG_MAX_BYTES, 0, &text, &len, err);
    if (st == RT_OK && (st = srv_tfconf_batching(text, len, &j, &map, err)) == RT_OK) {
        const cJSON *it;
        cJSON_ArrayForEach(it, j)
        {
            if ((st = set_from_json(j, srv_setting_find(it->string), c, err)) != RT_OK) {
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
    rt_status st = rt_read_file(AT_FDCWD, path, CONFIG_MAX_BYTES, 0, &text, &len, err);
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

rt_status srv_config_build(const srv_args *a, srv_config **out, rt_err *err)
{
    rt_status st = RT_OK;
    srv_config *c = NULL;
    char *text = NULL, *dir = NULL;
    *out = NULL;
    if (srv_args_given(a, "model_config_file")) {
        const char *path = a->values.model_config_file;
        size_t len = 0;
        if ((st = rt_read_file(AT_FDCWD, path, CONFIG_MAX_BYTES, 0, &text, &len, err)) != RT_OK)
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
    } else {
        st = rt_err_set(err, RT_ERR_INVALID,
                        "no model: give --model_name and --model_base_path, or "
                        "--model_config_file (see --help)");
        goto out;
    }
    /* TF Serving's batching file over the config file, the flags over both. */
    if (srv_args_given(a, "batching_parameters_file") &&
        (st = apply_batching_file(a->values.batching_parameters_file, c, err)) != RT_OK)
        goto out;
    /* Command-line flags win over the file. */
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const srv_setting *s = &SETTINGS[i];
        if (!(a->set >> i & 1))
            continue;
        const srv_config *from = &a->values;
        if (is_string(s))
            st = set_string(c, s, *(char **)field(from, s), err);
        else if (s->type == SRV_SET_INT)
            *(int *)field(c, s) = *(int *)field(from, s);
        else if (s->type == SRV_SET_SIZE)
            *(size_t *)field(c, s) = *(size_t *)field(from, s);
        else
            *(bool *)field(c, s) = *(bool *)field(from, s);
        if (st != RT_OK)
            goto out;
    }
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
