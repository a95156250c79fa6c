/*
 * rt_xgb_json.c — reading XGBoost's JSON model file (model.json) and the
 * serving.json beside it: the document parsed once (cJSON, whose nesting
 * limit refuses deep recursion before it can exhaust the stack), then typed
 * reads of its members with the path of each ("learner.objective.name") in
 * every refusal. XGBoost's NaN and Infinity tokens are read as infinities
 * (refused where a finite number is needed). Numbers XGBoost writes as strings ("5E-1" in
 * learner_model_param) are read with strtof, whole.
 *
 * UBJSON (model.ubj) is read into the same tree (rt_xgb_json_parse_ubj, below).
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

rt_status rt_xgb_json_parse(const char *file, const char *text0, size_t len0, cJSON **out,
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

const char *rt_xgb_json_type(const cJSON *v)
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

rt_status rt_xgb_json_member(const char *file, const cJSON *obj, const char *path, const char *key,
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
                          path[0] ? "." : "", key, w, rt_xgb_json_type(v));
    }
    *out = v;
    return RT_OK;
}

rt_status rt_xgb_json_strnum(const char *file, const cJSON *obj, const char *path, const char *key,
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
                          key, rt_xgb_json_type(v));
    char *e = NULL;
    errno = 0;
    double d = strtod(v->valuestring, &e);
    if (e == v->valuestring || *e || errno == ERANGE)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %s.%s: \"%.40s\" is not a number", file, path,
                          key, v->valuestring);
    *out = d;
    return RT_OK;
}

rt_status rt_xgb_json_strfloat(const char *file, const cJSON *obj, const char *path,
                           const char *key, float *out, rt_err *err)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!cJSON_IsString(v)) {
        double d;
        rt_status st = rt_xgb_json_strnum(file, obj, path, key, true, 0, &d, err);
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

rt_status rt_xgb_json_numbers(const char *file, const cJSON *obj, const char *path, const char *key,
                          bool required, size_t n, double *out, size_t *got, rt_err *err)
{
    if (got)
        *got = 0;
    const cJSON *a = NULL;
    rt_status st = rt_xgb_json_member(file, obj, path, key, cJSON_Array, required, &a, err);
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
                              file, path, key, k, rt_xgb_json_type(c));
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

/* ------------------------------------------------------------- UBJSON */

/* XGBoost's UBJSON (model.ubj, Booster.save_model("model.ubj")), as its
 * src/common/json.cc writes it: big-endian numbers; values marked Z T F
 * (null, booleans), i U I l L (int8, uint8, int16, int32, int64), C (char),
 * d D (float32, float64), S (string: a length, then bytes), [ (array) and
 * { (object); a length is an integer value (XGBoost writes L); an array is
 * "[$<type>#<count>" then count packed values of one type, or "[#<count>"
 * then count values, or values up to "]"; an object's members are keys
 * (a length then bytes, no S) and values up to "}", or "{#<count>" then
 * count of them. Read into the same cJSON tree as model.json, so one reader
 * serves both. Every count is checked against the bytes left (no
 * allocation before the bytes exist) and nesting is limited. */
#define UBJ_MAX_DEPTH 64

typedef struct ubj {
    const unsigned char *start, *p, *end;
    const char *file;
    rt_err *err;
} ubj;

static rt_status ubj_fail(ubj *u, const char *what)
{
    if (u->p >= u->end)
        return rt_err_set(u->err, RT_ERR_FORMAT,
                          "%s: not valid UBJSON: it ends early (truncated?) after %zu bytes",
                          u->file, (size_t)(u->end - u->start));
    return rt_err_set(u->err, RT_ERR_FORMAT, "%s: not valid UBJSON at byte %zu: %s", u->file,
                      (size_t)(u->p - u->start), what);
}

static rt_status ubj_nomem(ubj *u)
{
    return rt_err_set(u->err, RT_ERR_NOMEM, "%s: out of memory", u->file);
}

/* n big-endian bytes into v (n <= 8). */
static bool ubj_bytes(ubj *u, size_t n, uint64_t *v)
{
    if ((size_t)(u->end - u->p) < n)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        x = x << 8 | u->p[i];
    u->p += n;
    *v = x;
    return true;
}

/* The number of marker m (an integer or float kind) into *out. */
static rt_status ubj_number(ubj *u, unsigned char m, double *out)
{
    uint64_t v = 0;
    size_t n = m == 'i' || m == 'U' || m == 'C' ? 1 : m == 'I' ? 2 : m == 'l' || m == 'd' ? 4
               : m == 'L' || m == 'D'                     ? 8
                                                          : 0;
    if (!n)
        return ubj_fail(u, "unknown marker");
    if (!ubj_bytes(u, n, &v))
        return ubj_fail(u, "a number");
    switch (m) {
    case 'i': *out = (double)(int8_t)(uint8_t)v; break;
    case 'C': *out = (double)(int8_t)(uint8_t)v; break;
    case 'U': *out = (double)(uint8_t)v; break;
    case 'I': *out = (double)(int16_t)(uint16_t)v; break;
    case 'l': *out = (double)(int32_t)(uint32_t)v; break;
    case 'L': *out = (double)(int64_t)v; break;
    case 'd': {
        uint32_t w = (uint32_t)v;
        float f;
        memcpy(&f, &w, sizeof f);
        *out = (double)f;
        break;
    }
    default: {
        double d;
        memcpy(&d, &v, sizeof d);
        *out = d;
        break;
    }
    }
    return RT_OK;
}

/* A length or count: an integer value, 0 .. the bytes left / unit. */
static rt_status ubj_count(ubj *u, size_t unit, size_t *out)
{
    if (u->p >= u->end)
        return ubj_fail(u, "a length");
    unsigned char m = *u->p++;
    if (m != 'i' && m != 'U' && m != 'I' && m != 'l' && m != 'L')
        return ubj_fail(u, "a length must be an integer");
    double d;
    rt_status st = ubj_number(u, m, &d);
    if (st)
        return st;
    size_t left = (size_t)(u->end - u->p);
    if (d < 0 || d > (double)(left / (unit ? unit : 1)))
        return rt_err_set(u->err, RT_ERR_FORMAT,
                          "%s: not valid UBJSON at byte %zu: a length of %.0f, only %zu "
                          "bytes are left (truncated?)",
                          u->file, (size_t)(u->p - u->start), d, left);
    *out = (size_t)d;
    return RT_OK;
}

static rt_status ubj_value(ubj *u, unsigned char m, int depth, cJSON **out);

static rt_status ubj_string(ubj *u, char **out)
{
    size_t n = 0;
    rt_status st = ubj_count(u, 1, &n);
    if (st)
        return st;
    char *s = malloc(n + 1);
    if (!s)
        return ubj_nomem(u);
    memcpy(s, u->p, n);
    s[n] = '\0';
    u->p += n;
    *out = s;
    return RT_OK;
}

static rt_status ubj_array(ubj *u, int depth, cJSON **out)
{
    cJSON *a = cJSON_CreateArray();
    if (!a)
        return ubj_nomem(u);
    *out = a;
    rt_status st = RT_OK;
    if (u->p < u->end && *u->p == '$') { /* typed: $ type # count, packed */
        u->p++;
        if (u->p >= u->end)
            return ubj_fail(u, "a typed array's type");
        unsigned char ty = *u->p++;
        size_t unit = ty == 'i' || ty == 'U' || ty == 'C' ? 1 : ty == 'I' ? 2
                      : ty == 'l' || ty == 'd'                        ? 4
                      : ty == 'L' || ty == 'D'                        ? 8
                                                                      : 0;
        if (!unit)
            return ubj_fail(u, "a typed array of an unsupported type");
        if (u->p >= u->end || *u->p != '#')
            return ubj_fail(u, "a typed array without its count");
        u->p++;
        size_t n = 0;
        if ((st = ubj_count(u, unit, &n)))
            return st;
        for (size_t i = 0; i < n; i++) {
            double d;
            if ((st = ubj_number(u, ty, &d)))
                return st;
            cJSON *v = cJSON_CreateNumber(d);
            if (!v || !cJSON_AddItemToArray(a, v)) {
                cJSON_Delete(v);
                return ubj_nomem(u);
            }
        }
        return RT_OK;
    }
    size_t n = SIZE_MAX;
    if (u->p < u->end && *u->p == '#') {
        u->p++;
        if ((st = ubj_count(u, 1, &n)))
            return st;
    }
    for (size_t i = 0; n == SIZE_MAX || i < n; i++) {
        if (u->p >= u->end)
            return ubj_fail(u, "an array's element");
        if (n == SIZE_MAX && *u->p == ']') {
            u->p++;
            break;
        }
        cJSON *v = NULL;
        unsigned char m = *u->p++;
        if ((st = ubj_value(u, m, depth + 1, &v))) {
            cJSON_Delete(v);
            return st;
        }
        if (!cJSON_AddItemToArray(a, v)) {
            cJSON_Delete(v);
            return ubj_nomem(u);
        }
    }
    return RT_OK;
}

static rt_status ubj_object(ubj *u, int depth, cJSON **out)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return ubj_nomem(u);
    *out = o;
    rt_status st = RT_OK;
    size_t n = SIZE_MAX;
    if (u->p < u->end && *u->p == '#') {
        u->p++;
        if ((st = ubj_count(u, 2, &n)))
            return st;
    }
    for (size_t i = 0; n == SIZE_MAX || i < n; i++) {
        if (u->p >= u->end)
            return ubj_fail(u, "an object's key");
        if (n == SIZE_MAX && *u->p == '}') {
            u->p++;
            break;
        }
        char *key = NULL;
        if ((st = ubj_string(u, &key)))
            return st;
        cJSON *v = NULL;
        if (u->p >= u->end) {
            free(key);
            return ubj_fail(u, "a member's value");
        }
        unsigned char m = *u->p++;
        if ((st = ubj_value(u, m, depth + 1, &v)) == RT_OK) {
            if (!cJSON_AddItemToObject(o, key, v)) {
                cJSON_Delete(v);
                st = ubj_nomem(u);
            }
        } else {
            cJSON_Delete(v);
        }
        free(key);
        if (st)
            return st;
    }
    return RT_OK;
}

static rt_status ubj_value(ubj *u, unsigned char m, int depth, cJSON **out)
{
    *out = NULL;
    if (depth > UBJ_MAX_DEPTH) {
        u->p--;
        return rt_err_set(u->err, RT_ERR_LIMIT, "%s: UBJSON nested deeper than %d levels (at "
                          "byte %zu)", u->file, UBJ_MAX_DEPTH, (size_t)(u->p - u->start));
    }
    switch (m) {
    case '{': return ubj_object(u, depth, out);
    case '[': return ubj_array(u, depth, out);
    case 'Z': *out = cJSON_CreateNull(); break;
    case 'T': *out = cJSON_CreateTrue(); break;
    case 'F': *out = cJSON_CreateFalse(); break;
    case 'S': {
        char *s = NULL;
        rt_status st = ubj_string(u, &s);
        if (st)
            return st;
        *out = cJSON_CreateString(s);
        free(s);
        break;
    }
    default: {
        u->p--;
        if (m != 'i' && m != 'U' && m != 'I' && m != 'l' && m != 'L' && m != 'C' && m != 'd' &&
            m != 'D')
            return ubj_fail(u, "unknown marker");
        u->p++;
        double d;
        rt_status st = ubj_number(u, m, &d);
        if (st)
            return st;
        *out = cJSON_CreateNumber(d);
        break;
    }
    }
    return *out ? RT_OK : ubj_nomem(u);
}

rt_status rt_xgb_json_parse_ubj(const char *file, const void *data, size_t len, cJSON **out,
                            rt_err *err)
{
    *out = NULL;
    if (len == 0)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: file is empty", file);
    ubj u = {data, data, (const unsigned char *)data + len, file, err};
    unsigned char m = *u.p++;
    if (m != '{') {
        u.p--;
        return ubj_fail(&u, "expected an object at the top");
    }
    cJSON *doc = NULL;
    rt_status st = ubj_value(&u, m, 0, &doc);
    if (st == RT_OK && u.p != u.end)
        st = ubj_fail(&u, "bytes after the top object");
    if (st) {
        cJSON_Delete(doc);
        return st;
    }
    *out = doc;
    return RT_OK;
}
