/*
 * rt_onnx_str.c — the vocabularies of an ONNX graph's string values
 * (tensor(string)): a string value's elements are indexes into its names,
 * and a node that reads strings (OneHotEncoder's cats_strings,
 * LabelEncoder's keys_strings) or writes them (LabelEncoder's
 * values_strings, default_string) interns its texts into the vocabulary of
 * the value it reads or writes, here, through a hash table, so a hostile
 * model of many long lists costs linear time. A string graph input's
 * vocabulary, complete once every node is planned, becomes the vocabulary
 * list of the feature column it is fed from (rt_onnx_run.c).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_onnx_internal.h"

#include <stdlib.h>
#include <string.h>

/* At most this many texts in one value's vocabulary. */
#define MAX_NAMES ((size_t)1 << 20)

static uint64_t text_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t k = 0; k < len; k++)
        h = (h ^ (unsigned char)s[k]) * 1099511628211ull;
    return h;
}

static void slot_put(rt_onnx_val *v, size_t idx)
{
    const char *s = v->names[idx];
    size_t m = v->n_vslots - 1, p = (size_t)text_hash(s, strlen(s)) & m;
    while (v->vslots[p])
        p = (p + 1) & m;
    v->vslots[p] = (uint32_t)(idx + 1);
}

rt_status rt_onnx_str_intern(reader *r, const Onnx__NodeProto *nd, const char *attr,
                             rt_onnx_val *v, const void *text, size_t len, size_t *idx)
{
    const char *s = text;
    if (len && memchr(s, 0, len))
        return rt_onnx_plan_fail(r, nd, "attribute %s: a string with a NUL byte", attr);
    if (v->n_vslots) {
        size_t m = v->n_vslots - 1, p = (size_t)text_hash(s, len) & m;
        for (; v->vslots[p]; p = (p + 1) & m) {
            const char *t = v->names[v->vslots[p] - 1];
            if (strlen(t) == len && (len == 0 || memcmp(t, s, len) == 0)) { /* "" may come as NULL */
                *idx = v->vslots[p] - 1;
                return RT_OK;
            }
        }
    }
    if (v->n_names >= MAX_NAMES)
        return rt_onnx_plan_fail(r, nd, "attribute %s: more than %zu strings for \"%.80s\"",
                                 attr, MAX_NAMES, v->name ? v->name : "");
    if ((v->n_names & (v->n_names - 1)) == 0 || !v->names) { /* grow at powers of two */
        size_t cap = v->n_names ? v->n_names * 2 : 4;
        char **nn = realloc(v->names, cap * sizeof *nn);
        if (!nn)
            return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
        v->names = nn;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    if (len)
        memcpy(copy, s, len);
    copy[len] = '\0';
    v->names[v->n_names++] = copy;
    if (v->n_names * 2 > v->n_vslots) { /* rehash into twice the room */
        size_t ns = v->n_vslots ? v->n_vslots * 2 : 16;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
        free(v->vslots);
        v->vslots = sl;
        v->n_vslots = ns;
        for (size_t k = 0; k < v->n_names; k++)
            slot_put(v, k);
    } else {
        slot_put(v, v->n_names - 1);
    }
    *idx = v->n_names - 1;
    return RT_OK;
}

rt_onnx_val *rt_onnx_str_root(reader *r, size_t in)
{
    rt_onnx_val *x = &r->o->vals[in];
    return x->alias >= 0 ? &r->o->vals[x->alias] : x;
}
