/*
 * srv_rollout.c — a model's rollout keys: the traffic split (canary), the
 * shadow and the prediction log settings: parsing with errors that name
 * the key, copies, and the pure parts of routing (which arm a request's
 * draw falls on, the hash of a route key). The manager (srv_models.c) uses
 * them under its mutex; srv_shadow.c and srv_predlog.c act on them.
 *
 *   "traffic_split": {"stable": 90, "canary": 10}      labels or versions
 *   "shadow": {"version": "canary", "percent": 5}       a label or a version
 *   "request_logging": {"sampling_rate": 0.01, "dir": "/var/log/predictd",
 *                       "max_file_mb": 64, "max_files": 10}
 */
#include "srv.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool srv_rollout_is_key(const char *key)
{
    return !strcmp(key, "traffic_split") || !strcmp(key, "shadow") ||
           !strcmp(key, "request_logging");
}

/* A target named by text (a version's digits or a label's name). */
static rt_status target_from_text(const char *text, const char *path, srv_target *t,
                                  rt_err *err)
{
    size_t n = strlen(text);
    int64_t v = srv_parse_version(text, n);
    t->label = NULL;
    t->version = v;
    if (v >= 0)
        return RT_OK;
    if (!srv_name_valid(text, n))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: '%.100s' is neither a version number nor a label name "
                          "([A-Za-z0-9_.-]+)",
                          path, text);
    if (!(t->label = strdup(text)))
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    return RT_OK;
}

/* A JSON number with no fraction in [lo, hi]. */
static rt_status whole_number(const cJSON *it, const char *path, double lo, double hi,
                              double *out, rt_err *err)
{
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
        it->valuedouble != floor(it->valuedouble) || it->valuedouble < lo ||
        it->valuedouble > hi)
        return rt_err_set(err, RT_ERR_INVALID, "%s: must be an integer from %.0f to %.0f", path,
                          lo, hi);
    *out = it->valuedouble;
    return RT_OK;
}

static rt_status parse_split(const cJSON *it, const char *path, srv_rollout_conf *r,
                             rt_err *err)
{
    char k[400];
    if (!cJSON_IsObject(it) || !it->child)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: must be an object of percentages such as {\"stable\": 90, "
                          "\"canary\": 10}",
                          path);
    size_t n = (size_t)cJSON_GetArraySize(it);
    if (!(r->split = calloc(n, sizeof *r->split)))
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    uint32_t sum = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, it)
    {
        snprintf(k, sizeof k, "%.200s.%.150s", path, a->string);
        for (size_t j = 0; j < r->n_split; j++) {
            const srv_target *o = &r->split[j].to;
            if (o->label ? !strcmp(o->label, a->string)
                         : o->version == srv_parse_version(a->string, strlen(a->string)))
                return rt_err_set(err, RT_ERR_INVALID, "%s: given twice", k);
        }
        srv_split_arm *arm = &r->split[r->n_split];
        double pct = 0;
        rt_status st = whole_number(a, k, 0, 100, &pct, err);
        if (st == RT_OK)
            st = target_from_text(a->string, k, &arm->to, err);
        if (st != RT_OK)
            return st; /* RT_ERR_NOMEM stays itself */
        r->n_split++;
        arm->percent = (uint32_t)pct;
        sum += arm->percent;
    }
    if (sum != 100)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: the percentages sum to %u; they must sum to 100", path, sum);
    return RT_OK;
}

static rt_status parse_shadow(const cJSON *it, const char *path, srv_rollout_conf *r,
                              rt_err *err)
{
    char k[400];
    if (!cJSON_IsObject(it))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: must be an object such as {\"version\": \"canary\", "
                          "\"percent\": 5}",
                          path);
    bool have_v = false, have_p = false;
    const cJSON *a;
    cJSON_ArrayForEach(a, it)
    {
        snprintf(k, sizeof k, "%.200s.%.150s", path, a->string);
        if (!strcmp(a->string, "version") && !have_v) {
            char digits[32];
            const char *text = cJSON_GetStringValue(a);
            if (cJSON_IsNumber(a) && a->valuedouble >= 0 && a->valuedouble < 1e18 &&
                a->valuedouble == floor(a->valuedouble)) {
                snprintf(digits, sizeof digits, "%lld", (long long)a->valuedouble);
                text = digits;
            }
            if (!text || !text[0])
                return rt_err_set(err, RT_ERR_INVALID,
                                  "%s: must be a version number or a label name", k);
            rt_status st = target_from_text(text, k, &r->shadow_to, err);
            if (st != RT_OK)
                return st;
            have_v = true;
        } else if (!strcmp(a->string, "percent") && !have_p) {
            double pct = 0;
            if (whole_number(a, k, 0, 100, &pct, err) != RT_OK)
                return RT_ERR_INVALID;
            r->shadow_percent = (uint32_t)pct;
            have_p = true;
        } else {
            return rt_err_set(err, RT_ERR_INVALID, "%s: unknown or repeated key (known: "
                                                   "version, percent)",
                              k);
        }
    }
    if (!have_v || !have_p)
        return rt_err_set(err, RT_ERR_INVALID, "%s.%s: missing", path,
                          have_v ? "percent" : "version");
    r->shadow = true;
    return RT_OK;
}

static rt_status parse_logging(const cJSON *it, const char *path, const char *base_dir,
                               srv_rollout_conf *r, rt_err *err)
{
    char k[400];
    if (!cJSON_IsObject(it))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: must be an object such as {\"sampling_rate\": 0.01, \"dir\": "
                          "\"/var/log/predictd\"}",
                          path);
    bool have_rate = false;
    r->log_max_bytes = (uint64_t)64 << 20;
    r->log_max_files = 10;
    const cJSON *a;
    cJSON_ArrayForEach(a, it)
    {
        snprintf(k, sizeof k, "%.200s.%.150s", path, a->string);
        double v = 0;
        if (!strcmp(a->string, "sampling_rate") && !have_rate) {
            if (!cJSON_IsNumber(a) || !(a->valuedouble >= 0 && a->valuedouble <= 1))
                return rt_err_set(err, RT_ERR_INVALID, "%s: must be a number from 0 to 1", k);
            r->log_rate = a->valuedouble;
            have_rate = true;
        } else if (!strcmp(a->string, "dir") && !r->log_dir) {
            const char *d = cJSON_GetStringValue(a);
            if (!d || !d[0])
                return rt_err_set(err, RT_ERR_INVALID, "%s: must be a non-empty path", k);
            size_t n = strlen(d) + (base_dir ? strlen(base_dir) : 0) + 2;
            if (!(r->log_dir = malloc(n)))
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", k);
            if (d[0] != '/' && base_dir)
                snprintf(r->log_dir, n, "%s/%s", base_dir, d);
            else
                snprintf(r->log_dir, n, "%s", d);
        } else if (!strcmp(a->string, "max_file_mb")) {
            if (whole_number(a, k, 1, 1 << 20, &v, err) != RT_OK)
                return RT_ERR_INVALID;
            r->log_max_bytes = (uint64_t)v << 20;
        } else if (!strcmp(a->string, "max_files")) {
            if (whole_number(a, k, 1, 10000, &v, err) != RT_OK)
                return RT_ERR_INVALID;
            r->log_max_files = (uint32_t)v;
        } else {
            return rt_err_set(err, RT_ERR_INVALID, "%s: unknown or repeated key (known: "
                                                   "sampling_rate, dir, max_file_mb, "
                                                   "max_files)",
                              k);
        }
    }
    if (!have_rate || !r->log_dir)
        return rt_err_set(err, RT_ERR_INVALID, "%s.%s: missing", path,
                          have_rate ? "dir" : "sampling_rate");
    r->logging = true;
    return RT_OK;
}

rt_status srv_rollout_parse(const cJSON *it, const char *path, const char *base_dir,
                            srv_rollout_conf *r, rt_err *err)
{
    if (!strcmp(it->string, "traffic_split"))
        return parse_split(it, path, r, err);
    if (!strcmp(it->string, "shadow"))
        return parse_shadow(it, path, r, err);
    return parse_logging(it, path, base_dir, r, err);
}

static const srv_label *label_of(const srv_model_conf *mc, const char *name)
{
    for (size_t i = 0; i < mc->n_labels; i++)
        if (!strcmp(mc->labels[i].name, name))
            return &mc->labels[i];
    return NULL;
}

int64_t srv_target_version(const srv_model_conf *mc, const srv_target *t)
{
    if (!t->label)
        return t->version;
    const srv_label *l = label_of(mc, t->label);
    return l ? l->version : -1;
}

rt_status srv_rollout_check(const srv_model_conf *mc, const char *key, rt_err *err)
{
    const srv_rollout_conf *r = &mc->rollout;
    for (size_t i = 0; i < r->n_split; i++)
        if (r->split[i].to.label && !label_of(mc, r->split[i].to.label))
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s.traffic_split.%s: label '%s' is not in version_labels", key,
                              r->split[i].to.label, r->split[i].to.label);
    if (r->shadow && r->shadow_to.label && !label_of(mc, r->shadow_to.label))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s.shadow.version: label '%s' is not in version_labels", key,
                          r->shadow_to.label);
    return RT_OK;
}

void srv_rollout_clear(srv_rollout_conf *r)
{
    for (size_t i = 0; i < r->n_split; i++)
        free(r->split[i].to.label);
    free(r->split);
    free(r->shadow_to.label);
    free(r->log_dir);
    memset(r, 0, sizeof *r);
}

static bool target_copy(srv_target *d, const srv_target *s)
{
    d->version = s->version;
    d->label = s->label ? strdup(s->label) : NULL;
    return !s->label || d->label;
}

bool srv_rollout_copy(srv_rollout_conf *d, const srv_rollout_conf *s)
{
    *d = *s;
    d->split = NULL;
    d->n_split = 0;
    d->shadow_to.label = NULL;
    d->log_dir = NULL;
    bool ok = true;
    if (s->n_split) {
        ok = (d->split = calloc(s->n_split, sizeof *d->split)) != NULL;
        for (size_t i = 0; ok && i < s->n_split; i++) {
            d->split[i].percent = s->split[i].percent;
            ok = target_copy(&d->split[i].to, &s->split[i].to);
            d->n_split = i + 1;
        }
    }
    ok = ok && target_copy(&d->shadow_to, &s->shadow_to);
    if (ok && s->log_dir)
        ok = (d->log_dir = strdup(s->log_dir)) != NULL;
    if (!ok)
        srv_rollout_clear(d);
    return ok;
}

const srv_split_arm *srv_split_pick(const srv_rollout_conf *r, uint64_t draw)
{
    if (!r->n_split)
        return NULL;
    uint32_t bucket = (uint32_t)(draw % 100), acc = 0;
    for (size_t i = 0; i < r->n_split; i++) {
        acc += r->split[i].percent;
        if (bucket < acc)
            return &r->split[i];
    }
    return &r->split[r->n_split - 1]; /* not reached: the arms sum to 100 */
}

uint64_t srv_route_key_hash(const char *key, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, then splitmix64's finaliser */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 0x100000001b3ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

static int put_target(rt_buf *out, const srv_model_conf *mc, const srv_target *t)
{
    int r = rt_buf_puts(out, "\"target\": ");
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)t->version);
    const char *name = t->label ? t->label : digits;
    r |= rt_buf_json_string(out, name, strlen(name));
    int64_t v = srv_target_version(mc, t);
    if (v >= 0)
        r |= rt_buf_printf(out, ", \"version\": \"%lld\"", (long long)v);
    else
        r |= rt_buf_puts(out, ", \"version\": null");
    return r;
}

int srv_rollout_json(rt_buf *out, const srv_model_conf *mc)
{
    const srv_rollout_conf *r = &mc->rollout;
    int e = 0;
    if (r->n_split) {
        e |= rt_buf_puts(out, ", \"traffic_split\": [");
        for (size_t i = 0; i < r->n_split; i++) {
            e |= rt_buf_puts(out, i ? ", {" : "{");
            e |= put_target(out, mc, &r->split[i].to);
            e |= rt_buf_printf(out, ", \"percent\": %u}", r->split[i].percent);
        }
        e |= rt_buf_puts(out, "]");
    }
    if (r->shadow) {
        e |= rt_buf_puts(out, ", \"shadow\": {");
        e |= put_target(out, mc, &r->shadow_to);
        e |= rt_buf_printf(out, ", \"percent\": %u}", r->shadow_percent);
    }
    if (r->logging)
        e |= rt_buf_printf(out, ", \"request_logging\": {\"sampling_rate\": %g}", r->log_rate);
    return e;
}

int srv_rollout_metrics(rt_buf *out, const srv_model_conf *mc, bool shadow)
{
    const srv_rollout_conf *r = &mc->rollout;
    int e = 0;
    for (size_t i = 0; i < (shadow ? (size_t)r->shadow : r->n_split); i++) {
        const srv_target *t = shadow ? &r->shadow_to : &r->split[i].to;
        char digits[32];
        snprintf(digits, sizeof digits, "%lld", (long long)t->version);
        e |= rt_buf_printf(out, "predictd_%s_percent{model=\"%s\",version=\"%lld\",target=\"%s\"} "
                                "%u\n",
                           shadow ? "shadow" : "traffic_split", mc->name,
                           (long long)srv_target_version(mc, t), t->label ? t->label : digits,
                           shadow ? r->shadow_percent : r->split[i].percent);
    }
    return e;
}

char *srv_copy_bytes(const char *p, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, p ? p : "", n);
        c[n] = '\0';
    }
    return c;
}
