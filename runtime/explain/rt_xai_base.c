/*
 * rt_xai_base.c — the baseline instance explanations are measured
 * from (docs/explanations.md, "Baselines"). Per raw input, the first of:
 *
 *   1. the request's metadata.inputs.<input>.inputBaselines (rt_json_explain.c);
 *   2. the export's training statistics: the median of a numeric input, the
 *      most frequent value of a categorical one (stats_baseline(), from the
 *      export's statistics.json; exports made before issue 28 have none);
 *   3. the spec's export.explanation.baselines.<input>, read from the
 *      export's training.spec_json (checked by rt_spec.c when trained);
 *   4. the raw column's CSV default when the spec gave one, else 0 for a
 *      number and "" for a string.
 * A list input (a numeric column of shape k > 1, as an ONNX graph input fed
 * whole) takes its value in each of its k slots, or the request's list of
 * its k values (inputBaselines: [[v1, ..., vk]]).
 */
#include "rt_explain.h"
#include "rt_explain_internal.h"

#include <cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The training statistics' baseline of input in (the median of a numeric
 * input, the most frequent value of a string one): RT_OK with *v, or
 * RT_ERR_NOTFOUND when the export carries no statistics (exports made
 * before issue 28) or none for that input. *v's string is the statistics'
 * (valid while m is). */
static rt_status stats_baseline(const rt_model *m, size_t in, xai_base_value *v)
{
    const rt_stats *s = rt_model_stats(m);
    const rt_graph *g = rt_model_graph(m);
    if (!s || !g || in >= g->n_inputs)
        return RT_ERR_NOTFOUND;
    const rt_input *inp = &g->inputs[in];
    if (inp->dtype == PREDICTD__DTYPE__DT_FLOAT) {
        double med;
        if (rt_stats_median(s, inp->name, &med) != RT_OK)
            return RT_ERR_NOTFOUND;
        v->is_str = false;
        v->num = med;
        return RT_OK;
    }
    const char *top = NULL;
    if (rt_stats_top_value(s, inp->name, &top) != RT_OK || !top)
        return RT_ERR_NOTFOUND;
    v->is_str = true;
    v->str = (char *)(uintptr_t)top; /* not freed: rt_xai_baseline_batch copies it */
    v->len = strlen(top);
    return RT_OK;
}

/* export.explanation.baselines of the spec the model was trained with, or
 * NULL; *doc is the parsed spec (cJSON_Delete it). */
static const cJSON *spec_baselines(const rt_model *m, cJSON **doc)
{
    *doc = NULL;
    const Predictd__ModelDef *def = rt_model_def(m);
    if (!def || !def->training || !def->training->spec_json || !def->training->spec_json[0])
        return NULL;
    rt_err ignored;
    if (rt_cfg_parse_json(def->training->spec_json, strlen(def->training->spec_json), doc,
                          &ignored) != RT_OK)
        return NULL;
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(*doc, "export");
    const cJSON *xp = ex ? cJSON_GetObjectItemCaseSensitive(ex, "explanation") : NULL;
    const cJSON *bl = xp ? cJSON_GetObjectItemCaseSensitive(xp, "baselines") : NULL;
    return cJSON_IsObject(bl) ? bl : NULL;
}

size_t rt_xai_input_width(const rt_graph *g, size_t in)
{
    for (size_t c = 0; c < g->n_fcols; c++)
        if (g->fcols[c].input == (long)in && g->fcols[c].type == PREDICTD__COLUMN_TYPE__NUMERIC &&
            g->fcols[c].width > 1)
            return g->fcols[c].width;
    return 1;
}

rt_status rt_xai_baseline_batch(const rt_model *m, const xai_base_value *over, rt_batch **out,
                             rt_err *err)
{
    const rt_graph *g = rt_model_graph(m);
    *out = NULL;
    if (!g)
        return rt_err_set(err, RT_ERR_INVALID, "model has no graph");
    cJSON *doc = NULL;
    const cJSON *bl = spec_baselines(m, &doc);
    rt_batch *b = rt_batch_new(g);
    size_t idx;
    rt_status st = b ? rt_batch_add(b, &idx) : RT_ERR_NOMEM;
    for (size_t in = 0; st == RT_OK && in < g->n_inputs; in++) {
        const rt_input *inp = &g->inputs[in];
        bool num = inp->dtype == PREDICTD__DTYPE__DT_FLOAT;
        xai_base_value sv = {0};
        const cJSON *j = bl ? cJSON_GetObjectItemCaseSensitive(bl, inp->name) : NULL;
        if (over && over[in].given) {
            sv = over[in];
        } else if (stats_baseline(m, in, &sv) == RT_OK) {
            /* sv is the statistics' value */
        } else if (j && cJSON_IsNumber(j) && num) {
            sv.num = j->valuedouble;
        } else if (j && cJSON_IsString(j) && !num) {
            sv.is_str = true;
            sv.str = j->valuestring;
            sv.len = strlen(j->valuestring);
        } else if (inp->raw && inp->raw->has_default) {
            sv.is_str = !num;
            sv.num = inp->raw->default_number;
            sv.str = inp->raw->default_string;
            sv.len = sv.str ? strlen(sv.str) : 0;
        } else {
            sv.is_str = !num;
            sv.str = "";
        }
        if (sv.is_str) {
            st = rt_batch_push_str(b, idx, in, sv.str ? sv.str : "", sv.len);
            continue;
        }
        size_t w = rt_xai_input_width(g, in);
        if (sv.vec && sv.n_vec != w) { /* rt_json_explain.c checks it; a caller that did not */
            st = RT_ERR_INVALID;
            break;
        }
        for (size_t k = 0; st == RT_OK && k < w; k++) /* a list input: its list, or its one value in each slot */
            st = rt_batch_push_num(b, idx, in, sv.vec ? sv.vec[k] : sv.num);
    }
    cJSON_Delete(doc);
    if (st != RT_OK) {
        rt_batch_free(b);
        return rt_err_set(err, st, st == RT_ERR_INVALID ? "baseline instance: a list baseline "
                          "of the wrong length" : "baseline instance: out of memory");
    }
    *out = b;
    return RT_OK;
}

rt_status rt_xai_model_baseline(const rt_model *m, rt_batch **out, rt_err *err)
{
    if (!m || !out)
        return rt_err_set(err, RT_ERR_INVALID, "rt_xai_model_baseline: NULL argument");
    return rt_xai_baseline_batch(m, NULL, out, err);
}
