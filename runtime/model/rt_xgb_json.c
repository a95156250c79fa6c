/*
 * rt_xgb_json.c — reading XGBoost's JSON model file (model.json) and the
 * serving.json beside it: the document parsed once (cJSON, whose nesting
 * limit refuses deep recursion before it can exhaust the stack), then typed
 * reads of its members with the path of each ("learner.objective.name") in
 * every refusal. XGBoost's NaN and Infinity tokens are read as infinities
 * (refused where a finite number is needed). Numbers XGBoost writes as strings ("5E-1" in
 * learner_model_param) are read with strtof, whole.
 *
 * UBJSON (model.ubj) is not read yet: rt_model_open refuses it by name.
 */
#include "rt_model.h"
#include "rt_model_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>

/* text with XGBoost's NaN, Infinity and -Infinity (outside strings: it
 * writes them for the split_conditions of categorical nodes, and a hostile
 * file may anywhere) as 1e999 and -1e999, which cJSON reads as +-inf, so
 * every such value is one a finite check refuses. *out is malloc'd. */
static rt_status tokens_as_inf(const char *file, const char *text, size_t len, char **out,
                               size_t *olen, rt_err *err)
{
    char *b = malloc(2 * len + 1);
    if (!b)
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory for %zu bytes", file, len);
    size_t o = 0;
    bool str = false;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (str) {
            b[o++] = ch;
            if (ch == '\\' && i + 1 < len)
                b[o++] = text[++i];
            else if (ch == '"')
                str = false;
            continue;
        }
        if (ch == '"')
            str = true;
        if (ch == 'N' && len - i >= 3 && memcmp(text + i, "NaN", 3) == 0) {
            memcpy(b + o, "1e999", 5);
            o += 5;
            i += 2;
        } else if (ch == 'I' && len - i >= 8 && memcmp(text + i, "Infinity", 8) == 0) {
            memcpy(b + o, "1e999", 5);
            o += 5;
            i += 7;
        } else {
            b[o++] = ch;
        }
    }
    b[o] = '\0';
    *out = b;
    *olen = o;
    return RT_OK;
}

rt_status rt_xgbj_parse(const char *file, const char *text0, size_t len0, cJSON **out,
                        rt_err *err)
{
    *out = NULL;
    if (len0 == 0)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: file is empty", file);
    char *text = NULL;
    size_t len = 0;
    rt_status st = tokens_as_inf(file, text0, len0, &text, &len, err);
    if (st)
        return st;
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    free(text);
    if (!doc) {
        if (at >= len)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "%s: not valid JSON: it ends early (truncated?) after %zu bytes",
                              file, len);
        return rt_err_set(err, RT_ERR_FORMAT,
                          "%s: not valid JSON near byte %zu (or nested deeper than %d levels)",
                          file, at, CJSON_NESTING_LIMIT);
    }
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return rt_err_set(err, RT_ERR_FORMAT, "%s: expected a JSON object at the top", file);
    }
    *out = doc;
    return RT_OK;
}

const char *rt_xgbj_type(const cJSON *v)
{
    if (!v)
        return "nothing";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsArray(v))
        return "a list";
    if (cJSON_IsObject(v))
        return "an object";
    if (cJSON_IsBool(v))
        return "a boolean";
    return "null";
}

rt_status rt_xgbj_member(const char *file, const cJSON *obj, const char *path, const char *key,
                         int want, bool required, const cJSON **out, rt_err *err)
{
    *out = NULL;
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s%s%s: missing (required)", file, path,
                              path[0] ? "." : "", key);
        return RT_OK;
    }
    if ((v->type & 0xFF) != want && !(want == cJSON_True && cJSON_IsBool(v))) {
        const char *w = want == cJSON_Object  ? "an object"
                        : want == cJSON_Array ? "a list"
                        : want == cJSON_String ? "a string"
                        : want == cJSON_Number ? "a number"
                                               : "a boolean";
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s%s%s: expected %s, got %s", file, path,
                          path[0] ? "." : "", key, w, rt_xgbj_type(v));
    }
    *out = v;
    return RT_OK;
}

rt_status rt_xgbj_strnum(const char *file, const cJSON *obj, const char *path, const char *key,
                         bool required, double dflt, double *out, rt_err *err)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    *out = dflt;
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s: missing (required)", file, path,
                              key);
        return RT_OK;
    }
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return RT_OK;
    }
    if (!cJSON_IsString(v))
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s: expected a number, got %s", file, path,
                          key, rt_xgbj_type(v));
    char *e = NULL;
    errno = 0;
    double d = strtod(v->valuestring, &e);
    if (e == v->valuestring || *e || errno == ERANGE)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s: \"%.40s\" is not a number", file, path,
                          key, v->valuestring);
    *out = d;
    return RT_OK;
}

rt_status rt_xgbj_strfloat(const char *file, const cJSON *obj, const char *path,
                           const char *key, float *out, rt_err *err)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!cJSON_IsString(v)) {
        double d;
        rt_status st = rt_xgbj_strnum(file, obj, path, key, true, 0, &d, err);
        *out = (float)d;
        return st;
    }
    char *e = NULL;
    errno = 0;
    float f = strtof(v->valuestring, &e);
    if (e == v->valuestring || *e || !isfinite(f))
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s: \"%.40s\" is not a finite number",
                          file, path, key, v->valuestring);
    *out = f;
    return RT_OK;
}

rt_status rt_xgbj_numbers(const char *file, const cJSON *obj, const char *path, const char *key,
                          bool required, size_t n, double *out, size_t *got, rt_err *err)
{
    if (got)
        *got = 0;
    const cJSON *a = NULL;
    rt_status st = rt_xgbj_member(file, obj, path, key, cJSON_Array, required, &a, err);
    if (st || !a)
        return st;
    size_t k = 0;
    for (const cJSON *c = a->child; c; c = c->next, k++) {
        if (k >= n)
            return rt_err_set(err, RT_ERR_FORMAT,
                              "%s: %s.%s: more than the %zu values %s", file, path, key, n,
                              got ? "its other fields allow" : "num_nodes says");
        if (cJSON_IsBool(c)) {
            out[k] = cJSON_IsTrue(c) ? 1.0 : 0.0;
            continue;
        }
        if (!cJSON_IsNumber(c))
            return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s[%zu]: expected a number, got %s",
                              file, path, key, k, rt_xgbj_type(c));
        out[k] = c->valuedouble;
    }
    if (got) {
        *got = k;
        return RT_OK;
    }
    if (k != n)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s: %zu values, num_nodes says %zu", file,
                          path, key, k, n);
    return RT_OK;
}
