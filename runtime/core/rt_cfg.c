/*
 * rt_cfg.c — reading settings out of JSON (cJSON trees) with errors that
 * name the value by its path: "estimator.dnn_hidden_units[2]: expected an
 * integer, got a string", "train.batch_size: 0 is out of range [1, 1048576]",
 * "export.exporters[1].typo: unknown key". The spec reader (rt_spec*.c) and
 * the trainer's sections (trn_config.c) use these getters; each is one
 * (object, path, key, flags, range, destination) call, so a table of
 * settings (name, type, range, default, offsetof) can drive them too.
 *
 * Rules, the same for every caller: a member that is absent or JSON null
 * leaves the destination as it is (its default; null is how JSON says "not
 * given", as Python's None) unless RT_CFG_REQUIRED; a value of the wrong type
 * or out of range is refused; numbers must be finite.
 */
#include "rt_core.h"

#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* cJSON tells a parse that ran out of memory from one that met bad JSON in
 * no way (both give NULL and a position), so its allocations go through
 * these hooks, which note a failure on the calling thread: rt_cfg_parse_json
 * then says "out of memory" rather than "invalid JSON at line L". The hooks
 * are installed before main (cJSON's hooks are one global, set before any
 * thread exists) and call malloc, so the torture tests' fault injection
 * (tests/unit/support/support_alloc.h) reaches cJSON's allocations too. */
static _Thread_local bool cjson_out_of_memory;

static void *cjson_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        cjson_out_of_memory = true;
    return p;
}

static void cjson_free(void *p)
{
    free(p);
}

__attribute__((constructor)) static void cjson_install_hooks(void)
{
    cJSON_Hooks h = {cjson_malloc, cjson_free};
    cJSON_InitHooks(&h);
}

rt_status rt_cfg_fail(rt_err *err, const char *path, const char *key, const char *fmt, ...)
{
    char msg[RT_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *dot = (path && *path && key && *key) ? "." : "";
    return rt_err_set(err, RT_ERR_INVALID, "%s%s%s: %s", path ? path : "", dot, key ? key : "",
                      msg);
}

const char *rt_cfg_path(char *buf, size_t cap, const char *path, const char *key, long index)
{
    const char *dot = (path && *path && key && *key) ? "." : "";
    int n = snprintf(buf, cap, "%s%s%s", path ? path : "", dot, key ? key : "");
    if (index >= 0 && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "[%ld]", index);
    return buf;
}

const char *rt_cfg_type_name(const cJSON *j)
{
    if (!j)
        return "nothing";
    if (cJSON_IsNumber(j))
        return "a number";
    if (cJSON_IsString(j))
        return "a string";
    if (cJSON_IsBool(j))
        return "a boolean";
    if (cJSON_IsNull(j))
        return "null";
    if (cJSON_IsArray(j))
        return "a list";
    return "an object";
}

rt_status rt_cfg_parse_json(const char *text, size_t len, cJSON **out, rt_err *err)
{
    const char *end = NULL;
    cjson_out_of_memory = false;
    *out = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!*out && cjson_out_of_memory)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory reading JSON");
    size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    bool trailing = false;
    if (*out) {
        while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r' ||
                            text[at] == '\n' || text[at] == '\0'))
            at++;
        if (at >= len)
            return RT_OK;
        cJSON_Delete(*out);
        *out = NULL;
        trailing = true;
    }
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < at; i++)
        if (text[i] == '\n') {
            line++;
            line_start = i + 1;
        }
    if (trailing)
        return rt_err_set(err, RT_ERR_INVALID,
                          "invalid JSON at line %d, column %zu: text after the JSON value", line,
                          at - line_start + 1);
    return rt_err_set(err, RT_ERR_INVALID, "invalid JSON at line %d, column %zu", line,
                      at - line_start + 1);
}

rt_status rt_cfg_check_keys(const cJSON *obj, const char *path, const char *const *allowed,
                            const char *const *extra, rt_err *err)
{
    if (!cJSON_IsObject(obj))
        return rt_cfg_fail(err, path, NULL, "expected an object, got %s", rt_cfg_type_name(obj));
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *name = c->string ? c->string : "";
        int ok = 0;
        for (const char *const *a = allowed; a && *a && !ok; a++)
            ok = strcmp(*a, name) == 0;
        for (const char *const *a = extra; a && *a && !ok; a++)
            ok = strcmp(*a, name) == 0;
        if (!ok)
            return rt_cfg_fail(err, path, name, "unknown key");
        for (const cJSON *d = c->next; d; d = d->next)
            if (d->string && strcmp(d->string, name) == 0)
                return rt_cfg_fail(err, path, name, "key given twice");
    }
    return RT_OK;
}

/* The member, or NULL when absent or null; RT_ERR_NOTFOUND set in *st when
 * required and not given. */
static const cJSON *member(const cJSON *o, const char *path, const char *key, int flags,
                           rt_status *st, rt_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    *st = RT_OK;
    if (j && !cJSON_IsNull(j))
        return j;
    if (flags & RT_CFG_REQUIRED)
        *st = rt_cfg_fail(err, path, key, "missing (required)");
    return NULL;
}

rt_status rt_cfg_str(const cJSON *o, const char *path, const char *key, int flags,
                     const char **out, rt_err *err)
{
    rt_status st;
    const cJSON *j = member(o, path, key, flags, &st, err);
    if (!j)
        return st;
    if (!cJSON_IsString(j))
        return rt_cfg_fail(err, path, key, "expected a string, got %s", rt_cfg_type_name(j));
    *out = j->valuestring;
    return RT_OK;
}

rt_status rt_cfg_to_int(const cJSON *j, const char *path, const char *key, int64_t lo, int64_t hi,
                        int64_t *out, rt_err *err)
{
    if (!cJSON_IsNumber(j))
        return rt_cfg_fail(err, path, key, "expected an integer, got %s", rt_cfg_type_name(j));
    double v = j->valuedouble;
    if (!isfinite(v) || v != floor(v))
        return rt_cfg_fail(err, path, key, "expected an integer, got %g", v);
    if (v < (double)lo || v > (double)hi)
        return rt_cfg_fail(err, path, key, "%g is out of range [%lld, %lld]", v, (long long)lo,
                           (long long)hi);
    *out = (int64_t)v;
    return RT_OK;
}

rt_status rt_cfg_int(const cJSON *o, const char *path, const char *key, int flags, int64_t lo,
                     int64_t hi, int64_t *out, rt_err *err)
{
    rt_status st;
    const cJSON *j = member(o, path, key, flags, &st, err);
    return j ? rt_cfg_to_int(j, path, key, lo, hi, out, err) : st;
}

rt_status rt_cfg_num(const cJSON *o, const char *path, const char *key, int flags, double lo,
                     double hi, double *out, rt_err *err)
{
    rt_status st;
    const cJSON *j = member(o, path, key, flags, &st, err);
    if (!j)
        return st;
    if (!cJSON_IsNumber(j))
        return rt_cfg_fail(err, path, key, "expected a number, got %s", rt_cfg_type_name(j));
    double v = j->valuedouble;
    if (!isfinite(v))
        return rt_cfg_fail(err, path, key, "expected a finite number");
    if (!(v >= lo && v <= hi))
        return rt_cfg_fail(err, path, key, "%g is out of range [%g, %g]", v, lo, hi);
    *out = v;
    return RT_OK;
}

rt_status rt_cfg_bool(const cJSON *o, const char *path, const char *key, int flags, bool *out,
                      rt_err *err)
{
    rt_status st;
    const cJSON *j = member(o, path, key, flags, &st, err);
    if (!j)
        return st;
    if (!cJSON_IsBool(j))
        return rt_cfg_fail(err, path, key, "expected true or false, got %s", rt_cfg_type_name(j));
    *out = cJSON_IsTrue(j);
    return RT_OK;
}

rt_status rt_cfg_array(const cJSON *o, const char *path, const char *key, int flags,
                       const cJSON **out, rt_err *err)
{
    rt_status st;
    const cJSON *j = member(o, path, key, flags, &st, err);
    if (!j)
        return st;
    if (!cJSON_IsArray(j))
        return rt_cfg_fail(err, path, key, "expected a list, got %s", rt_cfg_type_name(j));
    *out = j;
    return RT_OK;
}

rt_status rt_cfg_object(const cJSON *o, const char *path, const char *key, int flags,
                        const cJSON **out, rt_err *err)
{
    rt_status st;
    const cJSON *j = member(o, path, key, flags, &st, err);
    if (!j)
        return st;
    if (!cJSON_IsObject(j))
        return rt_cfg_fail(err, path, key, "expected an object, got %s", rt_cfg_type_name(j));
    *out = j;
    return RT_OK;
}

