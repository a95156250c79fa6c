/*
 * trn_spec_set.c — predict-train's --spec.PATH=VALUE flags: any one field of
 * the spec set from the command line, so that predict-tune can tune any of
 * them (a parameterName is the flag's name: "spec.estimator.model.layers.h1.
 * units"). PATH walks the spec tree: an object's key, an array's index, or
 * the element of an array whose "name" is the segment (layers, heads,
 * inputs, feature columns). The value keeps the type of the field it
 * replaces; a new field takes the value's JSON reading (a number, true,
 * false, null, an array or object), else the text as a string. The spec
 * reader checks the result as it checks a spec file, so a bad value is
 * refused with the field's path; the spec stored with each export is the one
 * trained.
 */
#include "trn.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "spec."

int trn_spec_set_flag(trn_overrides *o, const char *name, size_t len, const char *eq,
                      const char *next, rt_err *err)
{
    size_t pl = strlen(PREFIX);
    if (len < pl || strncmp(name, PREFIX, pl) != 0)
        return 0;
    const char *value = eq ? eq : next;
    if (len == pl || !value) {
        rt_err_set(err, RT_ERR_INVALID, "--%.*s: %s", (int)(len > 200 ? 200 : len), name,
                   len == pl ? "names no field (--spec.PATH=VALUE)" : "needs a value");
        return -1;
    }
    char **sets = realloc(o->spec_sets, (o->n_spec_sets + 1) * sizeof *sets);
    if (sets)
        o->spec_sets = sets;
    size_t path_len = len - pl, vl = strlen(value);
    char *s = sets ? malloc(path_len + 1 + vl + 1) : NULL;
    if (!s) {
        rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        return -1;
    }
    memcpy(s, name + pl, path_len);
    s[path_len] = '\0';
    memcpy(s + path_len + 1, value, vl + 1);
    o->spec_sets[o->n_spec_sets++] = s;
    return eq ? 1 : 2;
}

void trn_spec_set_free(trn_overrides *o)
{
    for (size_t i = 0; i < o->n_spec_sets; i++)
        free(o->spec_sets[i]);
    free(o->spec_sets);
    o->spec_sets = NULL;
    o->n_spec_sets = 0;
}

/* The child of node named by segment seg (len bytes): a key, an index, or
 * an array element's "name"; NULL when there is none. */
static cJSON *child(cJSON *node, const char *seg, size_t len)
{
    cJSON *it;
    if (cJSON_IsObject(node)) {
        cJSON_ArrayForEach(it, node)
        {
            if (it->string && strlen(it->string) == len && !memcmp(it->string, seg, len))
                return it;
        }
        return NULL;
    }
    if (!cJSON_IsArray(node))
        return NULL;
    size_t digits = strspn(seg, "0123456789");
    if (digits == len && len > 0 && len < 10)
        return cJSON_GetArrayItem(node, atoi(seg));
    cJSON_ArrayForEach(it, node)
    {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        if (n && strlen(n) == len && !memcmp(n, seg, len))
            return it;
    }
    return NULL;
}

/* The new value of field old (NULL: a new field) from text. */
static cJSON *value_for(const cJSON *old, const char *text, bool *bad)
{
    *bad = false;
    if (old && cJSON_IsString(old))
        return cJSON_CreateString(text);
    cJSON *v = cJSON_Parse(text);
    if (!old) /* a new field: the JSON reading, else the text */
        return v ? v : cJSON_CreateString(text);
    bool same = v && ((cJSON_IsNumber(old) && cJSON_IsNumber(v) && isfinite(v->valuedouble)) ||
                      (cJSON_IsBool(old) && cJSON_IsBool(v)) ||
                      (cJSON_IsArray(old) && cJSON_IsArray(v)) ||
                      (cJSON_IsObject(old) && cJSON_IsObject(v)) || cJSON_IsNull(old));
    if (!same) {
        cJSON_Delete(v);
        *bad = true;
        return NULL;
    }
    return v;
}

static const char *type_name(const cJSON *x)
{
    return cJSON_IsNumber(x) ? "a number" : cJSON_IsBool(x) ? "true or false"
         : cJSON_IsArray(x)  ? "a JSON array"
         : cJSON_IsObject(x) ? "a JSON object"
                             : "a value";
}

/* The refusal of segment seg (len bytes) of set's path, found under node
 * (absent) or found as a value the path cannot go through (c). */
static rt_status no_field(const char *set, const char *seg, size_t len, const cJSON *node,
                          const cJSON *c, rt_err *err)
{
    int at = (int)(seg - set); /* the parent's path and its dot */
    char parent[256];
    snprintf(parent, sizeof parent, "%s%.*s", at ? "" : "the spec", at ? at - 1 : 0, set);
    if (c)
        return rt_err_set(err, RT_ERR_INVALID, "--spec.%s: %s.%.*s is %s, not an object or "
                          "array", set, parent, (int)len, seg, type_name(c));
    return rt_err_set(err, RT_ERR_INVALID, "--spec.%s: %s has no %s \"%.*s\"%s", set, parent,
                      cJSON_IsArray(node) ? "element" : "field", (int)len, seg,
                      cJSON_IsArray(node) ? " (an index, or an element's \"name\")" : "");
}

/* Sets one PATH=VALUE (set: "PATH\0VALUE") in spec. */
static rt_status apply_one(cJSON *spec, const char *set, rt_err *err)
{
    const char *value = set + strlen(set) + 1;
    cJSON *node = spec;
    const char *seg = set;
    for (;;) {
        size_t len = strcspn(seg, ".");
        bool last = seg[len] == '\0';
        if (len == 0)
            return rt_err_set(err, RT_ERR_INVALID, "--spec.%s: an empty name in the path", set);
        cJSON *c = child(node, seg, len);
        if (!last) {
            if (!c || !(cJSON_IsObject(c) || cJSON_IsArray(c)))
                return no_field(set, seg, len, node, c, err);
            node = c;
            seg += len + 1;
            continue;
        }
        if (!c && !cJSON_IsObject(node)) /* an array grows by no name */
            return no_field(set, seg, len, node, NULL, err);
        bool bad;
        cJSON *v = value_for(c, value, &bad);
        if (bad)
            return rt_err_set(err, RT_ERR_INVALID, "--spec.%s: \"%.100s\" is not %s, as the "
                              "field it replaces", set, value, type_name(c));
        if (!v)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        bool ok;
        if (c && cJSON_IsArray(node))
            ok = cJSON_ReplaceItemViaPointer(node, c, v);
        else if (c) /* the key goes with the new item */
            ok = cJSON_ReplaceItemInObjectCaseSensitive(node, c->string, v);
        else {
            char *key = strndup(seg, len);
            ok = key && cJSON_AddItemToObject(node, key, v);
            free(key);
        }
        if (!ok) {
            cJSON_Delete(v);
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
        return RT_OK;
    }
}

rt_status trn_spec_set_apply(cJSON *spec, const trn_overrides *o, rt_err *err)
{
    for (size_t i = 0; i < o->n_spec_sets; i++) {
        rt_status st = apply_one(spec, o->spec_sets[i], err);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}
