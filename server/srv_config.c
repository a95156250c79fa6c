/*
 * srv_config.c — predictd's configuration: command-line flags (TensorFlow
 * Serving's names) and the JSON config file (conf/predictd.json), validated
 * as a whole. Errors name the flag or the key that is wrong.
 */
#include "srv.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_MAX_BYTES (16u << 20)

/* ------------------------------------------------------------- helpers */

bool srv_name_valid(const char *name, size_t len)
{
    if (!name || len == 0 || len > SRV_NAME_MAX)
        return false;
    if (name[0] == '.')
        return false; /* no ".", "..", hidden names */
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

int64_t srv_parse_version(const char *s, size_t len)
{
    if (!s || len == 0 || len > 18)
        return -1; /* 18 digits always fit in int64 */
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

/* Parses a decimal integer in [lo, hi]; the whole text must be the number. */
static rt_status parse_long(const char *text, long lo, long hi, const char *what, long *out,
                            rt_err *err)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || !end || end == text || *end != '\0')
        return rt_err_set(err, RT_ERR_INVALID, "%s: '%s' is not an integer", what, text);
    if (v < lo || v > hi)
        return rt_err_set(err, RT_ERR_INVALID, "%s: %ld is out of range [%ld, %ld]", what, v, lo,
                          hi);
    *out = v;
    return RT_OK;
}

static rt_status parse_bool_text(const char *text, const char *what, bool *out, rt_err *err)
{
    if (!strcmp(text, "true") || !strcmp(text, "1")) {
        *out = true;
        return RT_OK;
    }
    if (!strcmp(text, "false") || !strcmp(text, "0")) {
        *out = false;
        return RT_OK;
    }
    return rt_err_set(err, RT_ERR_INVALID, "%s: '%s' is not true or false", what, text);
}

static void config_defaults(srv_config *c)
{
    memset(c, 0, sizeof *c);
    c->rest_api_port = 8501;
    c->rest_api_num_threads = 0;
    c->rest_api_timeout_in_ms = 30000;
    c->file_system_poll_wait_seconds = 1;
    c->max_request_bytes = 1572864;
    c->max_total_request_bytes = (size_t)256 << 20;
    c->connection_timeout_seconds = 60;
    c->request_read_timeout_seconds = 30;
    c->max_connections = 1024;
    c->request_header_timeout_seconds = 10;
    c->enable_cors = false;
    c->drain_grace_seconds = 0;
    c->max_queue_depth = 0;
    c->enable_batching = false;
    c->max_batch_size = 128;
    c->batch_timeout_micros = 1000;
    c->max_enqueued_batches = 64;
    c->num_batch_threads = 0;
}

static void model_conf_clear(srv_model_conf *mc)
{
    free(mc->name);
    free(mc->base_path);
    free(mc->specific);
    for (size_t i = 0; i < mc->n_labels; i++)
        free(mc->labels[i].name);
    free(mc->labels);
    free(mc->default_label);
    memset(mc, 0, sizeof *mc);
}

void srv_config_free(srv_config *c)
{
    if (!c)
        return;
    free(c->rest_api_host);
    free(c->model_config_file);
    for (size_t i = 0; i < c->n_models; i++)
        model_conf_clear(&c->models[i]);
    free(c->models);
    free(c);
}

const srv_model_conf *srv_config_find_model(const srv_config *c, const char *name)
{
    for (size_t i = 0; c && i < c->n_models; i++)
        if (!strcmp(c->models[i].name, name))
            return &c->models[i];
    return NULL;
}

/* --------------------------------------------------------- JSON parsing */

/* The first key that appears twice in object obj, or NULL. (cJSON keeps
 * duplicates; a config that says a thing twice is ambiguous: refused.) */
static const char *dup_key(const cJSON *obj)
{
    for (const cJSON *a = obj ? obj->child : NULL; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && !strcmp(a->string, b->string))
                return a->string;
    return NULL;
}

/* A JSON integer in [lo, hi] (a number with no fraction). */
static rt_status json_int(const cJSON *it, const char *key, double lo, double hi, long long *out,
                          rt_err *err)
{
    if (!cJSON_IsNumber(it))
        return rt_err_set(err, RT_ERR_INVALID, "%s: must be a number", key);
    double d = it->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return rt_err_set(err, RT_ERR_INVALID, "%s: must be an integer", key);
    if (d < lo || d > hi)
        return rt_err_set(err, RT_ERR_INVALID, "%s: %.0f is out of range [%.0f, %.0f]", key, d,
                          lo, hi);
    *out = (long long)d;
    return RT_OK;
}

/* A version: a non-negative integer, or a string of digits (proto JSON). */
static rt_status json_version(const cJSON *it, const char *key, int64_t *out, rt_err *err)
{
    if (cJSON_IsString(it)) {
        int64_t v = srv_parse_version(it->valuestring, strlen(it->valuestring));
        if (v < 0)
            return rt_err_set(err, RT_ERR_INVALID, "%s: '%s' is not a version number", key,
                              it->valuestring);
        *out = v;
        return RT_OK;
    }
    long long v = 0;
    rt_status s = json_int(it, key, 0, 1e18, &v, err);
    if (s == RT_OK)
        *out = (int64_t)v;
    return s;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static rt_status parse_policy(const cJSON *pol, const char *key, srv_model_conf *mc, rt_err *err)
{
    char k[256];
    if (!cJSON_IsObject(pol))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: must be an object such as {\"latest\": 1}, {\"all\": true} "
                          "or {\"specific\": [1, 2]}",
                          key);
    int n = cJSON_GetArraySize(pol);
    if (n != 1)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: must have exactly one of \"latest\", \"all\", \"specific\"", key);
    const cJSON *it = pol->child;
    if (!strcmp(it->string, "latest")) {
        long long v = 0;
        snprintf(k, sizeof k, "%.200s.latest", key);
        if (json_int(it, k, 1, 1000000, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        mc->policy = SRV_POLICY_LATEST;
        mc->latest_n = (uint32_t)v;
    } else if (!strcmp(it->string, "all")) {
        if (!cJSON_IsTrue(it))
            return rt_err_set(err, RT_ERR_INVALID, "%s.all: must be true", key);
        mc->policy = SRV_POLICY_ALL;
    } else if (!strcmp(it->string, "specific")) {
        snprintf(k, sizeof k, "%.200s.specific", key);
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) < 1)
            return rt_err_set(err, RT_ERR_INVALID, "%s: must be a non-empty array of versions",
                              k);
        size_t cnt = (size_t)cJSON_GetArraySize(it);
        mc->specific = calloc(cnt, sizeof *mc->specific);
        if (!mc->specific)
            return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", k);
        size_t i = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, it)
        {
            char ki[300];
            snprintf(ki, sizeof ki, "%.250s[%zu]", k, i);
            if (json_version(v, ki, &mc->specific[i], err) != RT_OK)
                return RT_ERR_INVALID;
            i++;
        }
        qsort(mc->specific, cnt, sizeof *mc->specific, cmp_i64);
        for (i = 1; i < cnt; i++)
            if (mc->specific[i] == mc->specific[i - 1])
                return rt_err_set(err, RT_ERR_INVALID, "%s: version %lld is listed twice", k,
                                  (long long)mc->specific[i]);
        mc->n_specific = cnt;
        mc->policy = SRV_POLICY_SPECIFIC;
    } else {
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s.%s: unknown policy (use \"latest\", \"all\" or \"specific\")", key,
                          it->string);
    }
    return RT_OK;
}

static rt_status parse_model(const cJSON *jm, size_t idx, const char *base_dir,
                             srv_model_conf *mc, rt_err *err)
{
    char key[64];
    snprintf(key, sizeof key, "models[%zu]", idx);
    if (!cJSON_IsObject(jm))
        return rt_err_set(err, RT_ERR_INVALID, "%s: must be an object", key);
    const char *dup = dup_key(jm);
    if (dup)
        return rt_err_set(err, RT_ERR_INVALID, "%s.%.100s: given twice", key, dup);
    /* model_version_policy is an alias (TF Serving's name): one of the two. */
    if (cJSON_GetObjectItemCaseSensitive(jm, "version_policy") &&
        cJSON_GetObjectItemCaseSensitive(jm, "model_version_policy"))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: give version_policy or model_version_policy, not both", key);
    mc->policy = SRV_POLICY_LATEST;
    mc->latest_n = 1;
    mc->default_version = -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, jm)
    {
        const char *k = it->string;
        char kk[200];
        snprintf(kk, sizeof kk, "%.40s.%.140s", key, k);
        if (!strcmp(k, "name")) {
            if (!cJSON_IsString(it) || !srv_name_valid(it->valuestring, strlen(it->valuestring)))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "%s: must be a name of 1 to %d characters from "
                                  "[A-Za-z0-9_.-], not starting with '.'",
                                  kk, SRV_NAME_MAX);
            if (!(mc->name = dup_str(it->valuestring)))
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
        } else if (!strcmp(k, "base_path")) {
            if (!cJSON_IsString(it) || it->valuestring[0] == '\0')
                return rt_err_set(err, RT_ERR_INVALID, "%s: must be a non-empty path", kk);
            const char *bp = it->valuestring;
            if (bp[0] != '/' && base_dir) {
                size_t n = strlen(base_dir) + strlen(bp) + 2;
                mc->base_path = malloc(n);
                if (mc->base_path)
                    snprintf(mc->base_path, n, "%s/%s", base_dir, bp);
            } else {
                mc->base_path = dup_str(bp);
            }
            if (!mc->base_path)
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
        } else if (!strcmp(k, "version_policy") || !strcmp(k, "model_version_policy")) {
            if (parse_policy(it, kk, mc, err) != RT_OK)
                return RT_ERR_INVALID;
        } else if (!strcmp(k, "version_labels")) {
            if (!cJSON_IsObject(it))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "%s: must be an object {\"label\": version}", kk);
            size_t cnt = (size_t)cJSON_GetArraySize(it);
            mc->labels = calloc(cnt ? cnt : 1, sizeof *mc->labels);
            if (!mc->labels)
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
            const cJSON *l;
            cJSON_ArrayForEach(l, it)
            {
                char kl[360];
                snprintf(kl, sizeof kl, "%.190s.%.150s", kk, l->string);
                if (!srv_name_valid(l->string, strlen(l->string)))
                    return rt_err_set(err, RT_ERR_INVALID,
                                      "%s: a label name must be 1 to %d characters from "
                                      "[A-Za-z0-9_.-]",
                                      kl, SRV_NAME_MAX);
                if (srv_parse_version(l->string, strlen(l->string)) >= 0)
                    return rt_err_set(err, RT_ERR_INVALID,
                                      "%s: a label name cannot be a number", kl);
                for (size_t j = 0; j < mc->n_labels; j++)
                    if (!strcmp(mc->labels[j].name, l->string))
                        return rt_err_set(err, RT_ERR_INVALID, "%s: label given twice", kl);
                srv_label *lab = &mc->labels[mc->n_labels];
                if (json_version(l, kl, &lab->version, err) != RT_OK)
                    return RT_ERR_INVALID;
                if (!(lab->name = dup_str(l->string)))
                    return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kl);
                mc->n_labels++;
            }
        } else if (!strcmp(k, "default_version")) {
            if (cJSON_IsString(it) &&
                srv_parse_version(it->valuestring, strlen(it->valuestring)) < 0) {
                if (!srv_name_valid(it->valuestring, strlen(it->valuestring)))
                    return rt_err_set(err, RT_ERR_INVALID,
                                      "%s: must be a version number or a label name", kk);
                if (!(mc->default_label = dup_str(it->valuestring)))
                    return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
            } else if (!cJSON_IsNull(it)) {
                if (json_version(it, kk, &mc->default_version, err) != RT_OK)
                    return RT_ERR_INVALID;
            }
        } else {
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s: unknown key (known: name, base_path, version_policy, "
                              "version_labels, default_version)",
                              kk);
        }
    }
    if (!mc->name)
        return rt_err_set(err, RT_ERR_INVALID, "%s.name: missing", key);
    if (!mc->base_path)
        return rt_err_set(err, RT_ERR_INVALID, "%s.base_path: missing", key);
    if (mc->default_label) {
        bool found = false;
        for (size_t j = 0; j < mc->n_labels; j++)
            found = found || !strcmp(mc->labels[j].name, mc->default_label);
        if (!found)
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s.default_version: label '%s' is not in version_labels", key,
                              mc->default_label);
    }
    return RT_OK;
}

rt_status srv_config_parse(const char *text, size_t len, const char *base_dir,
                           srv_config **out, rt_err *err)
{
    rt_status st = RT_ERR_INVALID;
    cJSON *root = NULL;
    srv_config *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
    config_defaults(c);
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        rt_err_set(err, RT_ERR_INVALID, "config: malformed JSON near byte %zu", at);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        rt_err_set(err, RT_ERR_INVALID, "config: the top level must be a JSON object");
        goto out;
    }
    const char *dup = dup_key(root);
    if (dup) {
        rt_err_set(err, RT_ERR_INVALID, "%.100s: given twice", dup);
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        const char *k = it->string;
        long long v = 0;
        if (!strcmp(k, "rest_api_host")) {
            if (!cJSON_IsString(it) || it->valuestring[0] == '\0') {
                rt_err_set(err, RT_ERR_INVALID, "rest_api_host: must be a non-empty string");
                goto out;
            }
            free(c->rest_api_host);
            if (!(c->rest_api_host = dup_str(it->valuestring))) {
                st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
                goto out;
            }
        } else if (!strcmp(k, "rest_api_port")) {
            if (json_int(it, k, 0, 65535, &v, err) != RT_OK)
                goto out;
            c->rest_api_port = (int)v;
        } else if (!strcmp(k, "rest_api_num_threads")) {
            if (json_int(it, k, 0, 1024, &v, err) != RT_OK)
                goto out;
            c->rest_api_num_threads = (int)v;
        } else if (!strcmp(k, "rest_api_timeout_in_ms")) {
            if (json_int(it, k, 1, 3600000, &v, err) != RT_OK)
                goto out;
            c->rest_api_timeout_in_ms = (int)v;
        } else if (!strcmp(k, "file_system_poll_wait_seconds")) {
            if (json_int(it, k, 0, 86400, &v, err) != RT_OK)
                goto out;
            c->file_system_poll_wait_seconds = (int)v;
        } else if (!strcmp(k, "max_request_bytes")) {
            if (json_int(it, k, 1, 1 << 30, &v, err) != RT_OK)
                goto out;
            c->max_request_bytes = (size_t)v;
        } else if (!strcmp(k, "max_total_request_bytes")) {
            if (json_int(it, k, 1, 1LL << 40, &v, err) != RT_OK)
                goto out;
            c->max_total_request_bytes = (size_t)v;
        } else if (!strcmp(k, "connection_timeout_seconds")) {
            if (json_int(it, k, 1, 86400, &v, err) != RT_OK)
                goto out;
            c->connection_timeout_seconds = (int)v;
        } else if (!strcmp(k, "request_read_timeout_seconds")) {
            if (json_int(it, k, 0, 86400, &v, err) != RT_OK)
                goto out;
            c->request_read_timeout_seconds = (int)v;
        } else if (!strcmp(k, "max_connections")) {
            if (json_int(it, k, 1, 1000000, &v, err) != RT_OK)
                goto out;
            c->max_connections = (int)v;
        } else if (!strcmp(k, "request_header_timeout_seconds")) {
            if (json_int(it, k, 0, 86400, &v, err) != RT_OK)
                goto out;
            c->request_header_timeout_seconds = (int)v;
        } else if (!strcmp(k, "max_queue_depth")) {
            if (json_int(it, k, 0, 1000000, &v, err) != RT_OK)
                goto out;
            c->max_queue_depth = (int)v;
        } else if (!strcmp(k, "drain_grace_seconds")) {
            if (json_int(it, k, 0, 3600, &v, err) != RT_OK)
                goto out;
            c->drain_grace_seconds = (int)v;
        } else if (!strcmp(k, "enable_batching")) {
            if (!cJSON_IsBool(it)) {
                rt_err_set(err, RT_ERR_INVALID, "enable_batching: must be true or false");
                goto out;
            }
            c->enable_batching = cJSON_IsTrue(it);
        } else if (!strcmp(k, "max_batch_size")) {
            if (json_int(it, k, 1, 100000, &v, err) != RT_OK)
                goto out;
            c->max_batch_size = (int)v;
        } else if (!strcmp(k, "batch_timeout_micros")) {
            if (json_int(it, k, 0, 10000000, &v, err) != RT_OK)
                goto out;
            c->batch_timeout_micros = (int)v;
        } else if (!strcmp(k, "max_enqueued_batches")) {
            if (json_int(it, k, 1, 1000000, &v, err) != RT_OK)
                goto out;
            c->max_enqueued_batches = (int)v;
        } else if (!strcmp(k, "num_batch_threads")) {
            if (json_int(it, k, 0, 1024, &v, err) != RT_OK)
                goto out;
            c->num_batch_threads = (int)v;
        } else if (!strcmp(k, "enable_cors")) {
            if (!cJSON_IsBool(it)) {
                rt_err_set(err, RT_ERR_INVALID, "enable_cors: must be true or false");
                goto out;
            }
            c->enable_cors = cJSON_IsTrue(it);
        } else if (!strcmp(k, "models")) {
            if (!cJSON_IsArray(it)) {
                rt_err_set(err, RT_ERR_INVALID, "models: must be an array of models");
                goto out;
            }
            size_t cnt = (size_t)cJSON_GetArraySize(it);
            c->models = calloc(cnt ? cnt : 1, sizeof *c->models);
            if (!c->models) {
                st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
                goto out;
            }
            const cJSON *jm;
            cJSON_ArrayForEach(jm, it)
            {
                srv_model_conf *mc = &c->models[c->n_models];
                c->n_models++; /* counted first so that free() sees it */
                if (parse_model(jm, c->n_models - 1, base_dir, mc, err) != RT_OK)
                    goto out;
                for (size_t j = 0; j + 1 < c->n_models; j++)
                    if (!strcmp(c->models[j].name, mc->name)) {
                        rt_err_set(err, RT_ERR_INVALID,
                                   "models[%zu].name: model '%s' is configured twice",
                                   c->n_models - 1, mc->name);
                        goto out;
                    }
            }
        } else {
            rt_err_set(err, RT_ERR_INVALID,
                       "%s: unknown key (known: rest_api_host, rest_api_port, "
                       "rest_api_num_threads, rest_api_timeout_in_ms, "
                       "file_system_poll_wait_seconds, max_request_bytes, "
                       "max_total_request_bytes, "
                       "connection_timeout_seconds, request_read_timeout_seconds, "
                       "max_connections, request_header_timeout_seconds, max_queue_depth, "
                       "drain_grace_seconds, "
                       "enable_cors, enable_batching, max_batch_size, batch_timeout_micros, "
                       "max_enqueued_batches, num_batch_threads, models)",
                       k);
            goto out;
        }
    }
    if (!c->rest_api_host && !(c->rest_api_host = dup_str("0.0.0.0"))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
        goto out;
    }
    st = RT_OK;
out:
    cJSON_Delete(root);
    if (st != RT_OK)
        srv_config_free(c);
    else
        *out = c;
    return st;
}

/* ------------------------------------------------------- command line */

typedef struct flag_def {
    const char *name;
    unsigned bit; /* SRV_ARG_*, 0 for the model flags */
    const char *help;
} flag_def;

static const flag_def FLAGS[] = {
    {"rest_api_port", SRV_ARG_PORT, "port of the REST API (default 8501; 0 = any free port)"},
    {"rest_api_host", SRV_ARG_HOST, "address to listen on (default 0.0.0.0)"},
    {"model_name", 0, "name of the one model to serve (without a config file)"},
    {"model_base_path", 0, "directory holding that model's integer-named versions"},
    {"model_config_file", SRV_ARG_CONFIG, "JSON config file (see conf/predictd.json)"},
    {"file_system_poll_wait_seconds", SRV_ARG_POLL,
     "seconds between scans of the base paths (default 1; 0 = only at start and reload)"},
    {"rest_api_num_threads", SRV_ARG_THREADS,
     "request threads (default 0 = the CPUs this process may use)"},
    {"rest_api_timeout_in_ms", SRV_ARG_TIMEOUT, "per-request deadline, else 504 (default 30000)"},
    {"max_request_bytes", SRV_ARG_MAXREQ, "largest request body, else 413 (default 1572864)"},
    {"max_total_request_bytes", SRV_ARG_TOTALREQ,
     "request body bytes held at once, else 429 (default 268435456)"},
    {"connection_timeout_seconds", SRV_ARG_CONNTIMEOUT,
     "idle keep-alive connections are closed after this (default 60)"},
    {"request_read_timeout_seconds", SRV_ARG_READTIMEOUT,
     "a request not read whole this long after its first byte is closed (default 30)"},
    {"max_connections", SRV_ARG_MAXCONN,
     "client connections open at once; idle ones are reclaimed first (default 1024)"},
    {"request_header_timeout_seconds", SRV_ARG_HDRTIMEOUT,
     "a request header not received whole this soon is closed (default 10)"},
    {"enable_cors", SRV_ARG_CORS, "answer with Access-Control-Allow-Origin: * (default false)"},
    {"max_queue_depth", SRV_ARG_QUEUE, "inference requests waiting; past it 429 (0 = no queue)"},
    {"drain_grace_seconds", SRV_ARG_DRAIN, "after SIGTERM keep answering this long (default 0)"},
    {"enable_batching", SRV_ARG_BATCHING, "cross-request batching of :predict (default false)"},
    {"max_batch_size", SRV_ARG_BATCH_SIZE, "instances per merged batch (default 128)"},
    {"batch_timeout_micros", SRV_ARG_BATCH_TIMEOUT,
     "how long a batch's first request waits for company (default 1000)"},
    {"max_enqueued_batches", SRV_ARG_BATCH_QUEUE, "batches waiting; past it 429 (default 64)"},
    {"num_batch_threads", SRV_ARG_BATCH_THREADS,
     "threads running batches (default 0 = rest_api_num_threads)"},
};

const char *srv_args_usage(void)
{
    return "usage: predictd [flags]\n"
           "  Serves exported models over TensorFlow Serving's REST API.\n"
           "  --rest_api_port=N             port of the REST API (default 8501; 0 = any)\n"
           "  --rest_api_host=ADDR          address to listen on (default 0.0.0.0)\n"
           "  --model_name=NAME             the one model to serve (no config file)\n"
           "  --model_base_path=DIR         its directory of integer-named versions\n"
           "  --model_config_file=FILE      JSON config (see conf/predictd.json); flags given\n"
           "                                on the command line win over the file\n"
           "  --file_system_poll_wait_seconds=N  scan interval (default 1; 0 = start/reload)\n"
           "  --rest_api_num_threads=N      request threads (default: usable CPUs)\n"
           "  --rest_api_timeout_in_ms=N    per-request deadline, else 504 (default 30000)\n"
           "  --max_request_bytes=N         largest body, else 413 (default 1572864)\n"
           "  --max_total_request_bytes=N   request body bytes held at once; a request\n"
           "                                that does not fit gets 429 + Retry-After\n"
           "                                (default 268435456)\n"
           "  --connection_timeout_seconds=N  idle connection timeout (default 60)\n"
           "  --request_read_timeout_seconds=N  close a connection whose request is not\n"
           "                                read whole N s after its first byte (default 30;\n"
           "                                0 = off)\n"
           "  --max_connections=N           client connections open at once; when all are\n"
           "                                taken, idle keep-alive ones are closed first,\n"
           "                                then new ones refused (default 1024)\n"
           "  --request_header_timeout_seconds=N  close a connection whose request header\n"
           "                                is not in N s after it opened (or after the\n"
           "                                next request's first byte) (default 10; 0 = off)\n"
           "  --enable_cors[=true|false]    add Access-Control-Allow-Origin: *\n"
           "  --max_queue_depth=N           run inference on worker threads with at most N\n"
           "                                requests waiting; more answer 429 + Retry-After\n"
           "                                (default 0 = inference on the HTTP threads)\n"
           "  --drain_grace_seconds=N       after SIGTERM, readyz answers 503 but requests\n"
           "                                are still served for N seconds (default 0)\n"
           "  --enable_batching[=true|false]  merge concurrent :predict requests for the same\n"
           "                                model version and signature into one batch\n"
           "  --max_batch_size=N            instances per merged batch (default 128)\n"
           "  --batch_timeout_micros=N      a batch's first request waits this long for\n"
           "                                company (default 1000)\n"
           "  --max_enqueued_batches=N      batches waiting; past it 429 (default 64)\n"
           "  --num_batch_threads=N         batch threads (default 0 = request threads)\n"
           "  --help                        this text\n"
           "  --version                     print the version\n"
           "Signals: SIGHUP reloads the config file (also reloaded when it changes);\n"
           "SIGTERM/SIGINT drain (readyz 503), then stop after in-flight requests finish.\n"
           "Under systemd: Type=notify, socket activation, WatchdogSec are supported.\n";
}

void srv_args_free(srv_args *a)
{
    if (!a)
        return;
    free(a->values.rest_api_host);
    free(a->values.model_config_file);
    free(a->model_name);
    free(a->model_base_path);
    memset(a, 0, sizeof *a);
}

static rt_status set_flag(srv_args *a, const flag_def *f, const char *val, rt_err *err)
{
    char what[64];
    long v = 0;
    snprintf(what, sizeof what, "--%s", f->name);
    char **strp = NULL;
    if (!strcmp(f->name, "rest_api_host"))
        strp = &a->values.rest_api_host;
    else if (!strcmp(f->name, "model_config_file"))
        strp = &a->values.model_config_file;
    else if (!strcmp(f->name, "model_name"))
        strp = &a->model_name;
    else if (!strcmp(f->name, "model_base_path"))
        strp = &a->model_base_path;
    if (strp) {
        if (val[0] == '\0')
            return rt_err_set(err, RT_ERR_INVALID, "%s: must not be empty", what);
        if (!strcmp(f->name, "model_name") && !srv_name_valid(val, strlen(val)))
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s: '%s' is not a valid name ([A-Za-z0-9_.-]+)", what, val);
        free(*strp);
        if (!(*strp = dup_str(val)))
            return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", what);
    } else if (f->bit == SRV_ARG_PORT) {
        if (parse_long(val, 0, 65535, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.rest_api_port = (int)v;
    } else if (f->bit == SRV_ARG_THREADS) {
        if (parse_long(val, 0, 1024, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.rest_api_num_threads = (int)v;
    } else if (f->bit == SRV_ARG_TIMEOUT) {
        if (parse_long(val, 1, 3600000, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.rest_api_timeout_in_ms = (int)v;
    } else if (f->bit == SRV_ARG_POLL) {
        if (parse_long(val, 0, 86400, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.file_system_poll_wait_seconds = (int)v;
    } else if (f->bit == SRV_ARG_MAXREQ) {
        if (parse_long(val, 1, 1L << 30, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.max_request_bytes = (size_t)v;
    } else if (f->bit == SRV_ARG_TOTALREQ) {
        if (parse_long(val, 1, 1L << 40, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.max_total_request_bytes = (size_t)v;
    } else if (f->bit == SRV_ARG_CONNTIMEOUT) {
        if (parse_long(val, 1, 86400, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.connection_timeout_seconds = (int)v;
    } else if (f->bit == SRV_ARG_READTIMEOUT) {
        if (parse_long(val, 0, 86400, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.request_read_timeout_seconds = (int)v;
    } else if (f->bit == SRV_ARG_MAXCONN) {
        if (parse_long(val, 1, 1000000, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.max_connections = (int)v;
    } else if (f->bit == SRV_ARG_HDRTIMEOUT) {
        if (parse_long(val, 0, 86400, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.request_header_timeout_seconds = (int)v;
    } else if (f->bit == SRV_ARG_QUEUE) {
        if (parse_long(val, 0, 1000000, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.max_queue_depth = (int)v;
    } else if (f->bit == SRV_ARG_DRAIN) {
        if (parse_long(val, 0, 3600, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.drain_grace_seconds = (int)v;
    } else if (f->bit == SRV_ARG_CORS) {
        if (parse_bool_text(val, what, &a->values.enable_cors, err) != RT_OK)
            return RT_ERR_INVALID;
    } else if (f->bit == SRV_ARG_BATCHING) {
        if (parse_bool_text(val, what, &a->values.enable_batching, err) != RT_OK)
            return RT_ERR_INVALID;
    } else if (f->bit == SRV_ARG_BATCH_SIZE) {
        if (parse_long(val, 1, 100000, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.max_batch_size = (int)v;
    } else if (f->bit == SRV_ARG_BATCH_TIMEOUT) {
        if (parse_long(val, 0, 10000000, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.batch_timeout_micros = (int)v;
    } else if (f->bit == SRV_ARG_BATCH_QUEUE) {
        if (parse_long(val, 1, 1000000, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.max_enqueued_batches = (int)v;
    } else if (f->bit == SRV_ARG_BATCH_THREADS) {
        if (parse_long(val, 0, 1024, what, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        a->values.num_batch_threads = (int)v;
    }
    a->set |= f->bit;
    return RT_OK;
}

rt_status srv_args_parse(int argc, char **argv, srv_args *a, rt_err *err)
{
    memset(a, 0, sizeof *a);
    config_defaults(&a->values);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            a->help = true;
            continue;
        }
        if (!strcmp(arg, "--version")) {
            a->version = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return rt_err_set(err, RT_ERR_INVALID, "%s: unexpected argument (flags start with --)",
                              arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const flag_def *f = NULL;
        for (size_t k = 0; k < sizeof FLAGS / sizeof FLAGS[0]; k++)
            if (strlen(FLAGS[k].name) == nlen && !strncmp(FLAGS[k].name, name, nlen))
                f = &FLAGS[k];
        if (!f)
            return rt_err_set(err, RT_ERR_INVALID, "--%.*s: unknown flag (see --help)", (int)nlen,
                              name);
        const char *val;
        if (eq) {
            val = eq + 1;
        } else if (f->bit == SRV_ARG_CORS || f->bit == SRV_ARG_BATCHING) {
            val = "true";
        } else {
            if (i + 1 >= argc)
                return rt_err_set(err, RT_ERR_INVALID, "--%s: needs a value", f->name);
            val = argv[++i];
        }
        if (set_flag(a, f, val, err) != RT_OK)
            return RT_ERR_INVALID;
    }
    if (a->model_name && (a->set & SRV_ARG_CONFIG))
        return rt_err_set(err, RT_ERR_INVALID,
                          "--model_name: give either --model_name/--model_base_path or "
                          "--model_config_file, not both");
    if ((a->model_name != NULL) != (a->model_base_path != NULL))
        return rt_err_set(err, RT_ERR_INVALID,
                          "--model_name and --model_base_path must be given together");
    return RT_OK;
}

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

rt_status srv_config_build(const srv_args *a, srv_config **out, rt_err *err)
{
    rt_status st = RT_OK;
    srv_config *c = NULL;
    char *text = NULL, *dir = NULL;
    *out = NULL;
    if (a->set & SRV_ARG_CONFIG) {
        const char *path = a->values.model_config_file;
        size_t len = 0;
        if ((st = rt_read_file(AT_FDCWD, path, CONFIG_MAX_BYTES, 0, &text, &len, err)) != RT_OK)
            goto out;
        dir = dir_of(path);
        if ((st = srv_config_parse(text, len, dir, &c, err)) != RT_OK) {
            rt_err_prefix(err, "%s", path);
            goto out;
        }
        if (!(c->model_config_file = dup_str(path))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
            goto out;
        }
    } else if (a->model_name) {
        if ((st = srv_config_parse("{}", 2, NULL, &c, err)) != RT_OK)
            goto out;
        c->models = calloc(1, sizeof *c->models);
        if (!c->models) {
            st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
            goto out;
        }
        c->n_models = 1;
        srv_model_conf *mc = &c->models[0];
        mc->policy = SRV_POLICY_LATEST;
        mc->latest_n = 1;
        mc->default_version = -1;
        mc->name = dup_str(a->model_name);
        char *abs = realpath(a->model_base_path, NULL);
        mc->base_path = abs ? abs : dup_str(a->model_base_path);
        if (!mc->name || !mc->base_path) {
            st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
            goto out;
        }
    } else {
        st = rt_err_set(err, RT_ERR_INVALID,
                        "no model: give --model_name and --model_base_path, or "
                        "--model_config_file (see --help)");
        goto out;
    }
    /* Command-line flags win over the file. */
    if (a->set & SRV_ARG_HOST) {
        free(c->rest_api_host);
        if (!(c->rest_api_host = dup_str(a->values.rest_api_host))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
            goto out;
        }
    }
    if (a->set & SRV_ARG_PORT)
        c->rest_api_port = a->values.rest_api_port;
    if (a->set & SRV_ARG_THREADS)
        c->rest_api_num_threads = a->values.rest_api_num_threads;
    if (a->set & SRV_ARG_TIMEOUT)
        c->rest_api_timeout_in_ms = a->values.rest_api_timeout_in_ms;
    if (a->set & SRV_ARG_POLL)
        c->file_system_poll_wait_seconds = a->values.file_system_poll_wait_seconds;
    if (a->set & SRV_ARG_MAXREQ)
        c->max_request_bytes = a->values.max_request_bytes;
    if (a->set & SRV_ARG_TOTALREQ)
        c->max_total_request_bytes = a->values.max_total_request_bytes;
    if (a->set & SRV_ARG_CONNTIMEOUT)
        c->connection_timeout_seconds = a->values.connection_timeout_seconds;
    if (a->set & SRV_ARG_READTIMEOUT)
        c->request_read_timeout_seconds = a->values.request_read_timeout_seconds;
    if (a->set & SRV_ARG_MAXCONN)
        c->max_connections = a->values.max_connections;
    if (a->set & SRV_ARG_HDRTIMEOUT)
        c->request_header_timeout_seconds = a->values.request_header_timeout_seconds;
    if (a->set & SRV_ARG_CORS)
        c->enable_cors = a->values.enable_cors;
    if (a->set & SRV_ARG_QUEUE)
        c->max_queue_depth = a->values.max_queue_depth;
    if (a->set & SRV_ARG_DRAIN)
        c->drain_grace_seconds = a->values.drain_grace_seconds;
    if (a->set & SRV_ARG_BATCHING)
        c->enable_batching = a->values.enable_batching;
    if (a->set & SRV_ARG_BATCH_SIZE)
        c->max_batch_size = a->values.max_batch_size;
    if (a->set & SRV_ARG_BATCH_TIMEOUT)
        c->batch_timeout_micros = a->values.batch_timeout_micros;
    if (a->set & SRV_ARG_BATCH_QUEUE)
        c->max_enqueued_batches = a->values.max_enqueued_batches;
    if (a->set & SRV_ARG_BATCH_THREADS)
        c->num_batch_threads = a->values.num_batch_threads;
    if (c->n_models == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "models: at least one model must be configured");
        goto out;
    }
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
