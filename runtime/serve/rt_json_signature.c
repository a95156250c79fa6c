/*
 * rt_json_signature.c — a request's signature: found by name, listed for
 * messages, and what it says about how inputs are read (raw features by
 * name, or one serialized CSV line / tf.Example). Also the methods a model
 * can answer (TF Serving has no classify signature for a regressor, no
 * regress one for a multi-class classifier or a regressor of several values).
 */
#include "rt_serve.h"
#include "rt_json_internal.h"

#include <stdio.h>
#include <string.h>

static int method_is(const Predictd__SignatureDef *sig, const char *what)
{
    return sig && sig->method_name && strstr(sig->method_name, what) != NULL;
}

rt_in_mode rt_json_mode_for(const rt_graph *g, const Predictd__SignatureDef *sig)
{
    rt_in_mode md = {RT_IN_FEATURES, NULL};
    if (sig && sig->n_inputs == 1 && sig->inputs[0]->name &&
        strcmp(sig->inputs[0]->name, "inputs") == 0 &&
        (method_is(sig, "classify") || method_is(sig, "regress"))) {
        md.kind = RT_IN_EXAMPLE;
        md.name = "inputs";
        return md;
    }
    switch (rt_graph_def(g)->receiver) {
    case PREDICTD__RECEIVER__RECEIVER_CSV:
        md.kind = RT_IN_CSV;
        md.name = "csv_row";
        break;
    case PREDICTD__RECEIVER__RECEIVER_EXAMPLE:
        md.kind = RT_IN_EXAMPLE;
        md.name = "example_proto";
        break;
    default:
        break;
    }
    return md;
}

size_t rt_json_mode_inputs(const rt_graph *g, const rt_in_mode *md)
{
    return md->kind == RT_IN_FEATURES ? rt_graph_num_inputs(g) : 1;
}

long rt_json_signature_head(const rt_graph *g, const Predictd__SignatureDef *sig)
{
    if (!sig || !sig->name || !rt_graph_head_view(g, 0, NULL))
        return -1;
    const char *hn;
    for (size_t k = 0; rt_graph_head_view(g, k, &hn); k++) {
        size_t len = hn ? strlen(hn) : 0;
        if (len && strncmp(sig->name, hn, len) == 0 &&
            (sig->name[len] == '\0' || sig->name[len] == '/'))
            return (long)k;
    }
    return -1;
}

/* "a, b, c" — the names a request may use (cut short when long). */
void rt_json_list_inputs(const rt_graph *g, const rt_in_mode *md, char *buf, size_t cap)
{
    size_t used = 0, n = rt_json_mode_inputs(g, md);
    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < cap; i++) {
        const char *name = md->kind == RT_IN_FEATURES ? rt_graph_input_name(g, i) : md->name;
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", name ? name : "");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
}

/* "classification, predict, serving_default" — the model's signatures. */
void rt_json_list_signatures(const Predictd__ModelDef *def, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < def->n_signatures && used < cap; k++) {
        int w = snprintf(buf + used, cap - used, "%s%s", k ? ", " : "",
                         def->signatures[k]->name ? def->signatures[k]->name : "");
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (def->n_signatures == 0)
        snprintf(buf, cap, "serving_default");
}

rt_status rt_json_find_signature(const Predictd__ModelDef *def, const char *name,
                                 const Predictd__SignatureDef **sig, rt_err *err)
{
    *sig = NULL;
    if (!name || !*name)
        name = "serving_default";
    if (def->n_signatures == 0) {
        if (strcmp(name, "serving_default") == 0 || strcmp(name, "predict") == 0)
            return RT_OK;
    }
    for (size_t k = 0; k < def->n_signatures; k++) {
        if (def->signatures[k]->name && strcmp(def->signatures[k]->name, name) == 0) {
            *sig = def->signatures[k];
            return RT_OK;
        }
    }
    /* serving_default and predict stand in for each other. */
    const char *alt = strcmp(name, "predict") == 0           ? "serving_default"
                      : strcmp(name, "serving_default") == 0 ? "predict"
                                                              : NULL;
    for (size_t k = 0; alt && k < def->n_signatures; k++) {
        if (def->signatures[k]->name && strcmp(def->signatures[k]->name, alt) == 0) {
            *sig = def->signatures[k];
            return RT_OK;
        }
    }
    char list[256];
    rt_json_list_signatures(def, list, sizeof list);
    return rt_err_set(err, RT_ERR_INVALID, "signature_name \"%.100s\" not found; the model "
                      "has: %s (Serving signature key \"%.100s\" not found.)", name, list, name);
}

/* :classify on a regressor or :regress on a multi-class or multi-label classifier: the
 * model has no such signature (TF Serving refuses these too). */
rt_status rt_json_check_method(const rt_graph *g, rt_method method, rt_err *err)
{
    Predictd__HeadType head = rt_graph_def(g)->head ? rt_graph_def(g)->head->type
                                                    : PREDICTD__HEAD_TYPE__HEAD_BINARY;
    /* label_dimension > 1: TF Serving's regress takes one value per example
     * ("Expected output Tensor shape to be either [batch_size] or
     * [batch_size, 1]"), so such a regressor exports no regression signature */
    int multi_value = head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION && rt_graph_logits_dim(g) > 1;
    if (!(method == RT_METHOD_CLASSIFY && head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION) &&
        !(method == RT_METHOD_REGRESS && head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS) &&
        !(method == RT_METHOD_REGRESS && head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL) &&
        !(method == RT_METHOD_REGRESS && multi_value))
        return RT_OK;
    char list[256];
    rt_json_list_signatures(rt_graph_def(g), list, sizeof list);
    if (multi_value)
        return rt_err_set(err, RT_ERR_INVALID, "regress: the model has no regression signature "
                          "(it predicts label_dimension %zu values per example, regress one; "
                          "its signatures: %s); use :predict",
                          rt_graph_logits_dim(g), list);
    if (method == RT_METHOD_CLASSIFY)
        return rt_err_set(err, RT_ERR_INVALID, "classify: the model has no classification "
                          "signature (it is a regressor; its signatures: %s); use :regress or "
                          ":predict", list);
    return rt_err_set(err, RT_ERR_INVALID, "regress: the model has no regression signature "
                      "(it is a %s classifier; its signatures: %s); use :classify or "
                      ":predict", head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? "multi-label"
                      : "multi-class", list);
}

rt_status rt_json_check_default_method(const rt_graph *g, rt_method method, rt_err *err)
{
    const Predictd__HeadType head = rt_graph_def(g)->head ? rt_graph_def(g)->head->type
                                                          : PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    if (method != RT_METHOD_REGRESS || head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION)
        return RT_OK;
    const Predictd__SignatureDef *reg = NULL;
    rt_err ignored;
    bool named = rt_json_find_signature(rt_graph_def(g), "regression", &reg, &ignored) == RT_OK &&
                 reg;
    return rt_err_set(err, RT_ERR_INVALID, "regress: the model is a classifier, and a request "
                      "without signature_name runs its classification signature (a canned "
                      "classifier's serving_default)%s (Expected regression signature "
                      "method_name to be tensorflow/serving/regress. Was: "
                      "tensorflow/serving/classify)",
                      named ? "; name its \"regression\" signature" : "; use :classify or "
                      ":predict");
}

rt_status rt_json_read_signature(rt_jr *r, const Predictd__ModelDef *def,
                                 const Predictd__SignatureDef **sig, rt_err *sem)
{
    rt_jv v;
    rt_status st = rt_jr_value(r, &v);
    if (st != RT_OK)
        return st;
    if (v.kind != RT_JV_STRING) {
        char got[64];
        rt_json_describe(&v, got, sizeof got);
        st = rt_err_set(sem, RT_ERR_INVALID, "\"signature_name\" must be a string, got %s "
                        "('signature_name' key must be a string value.)", got);
        rt_status sk = rt_jr_skip_to(r, r->depth - (v.kind == RT_JV_OBJECT || v.kind == RT_JV_LIST));
        return sk != RT_OK ? sk : st;
    }
    char name[256];
    size_t nl = v.n < sizeof name - 1 ? v.n : sizeof name - 1;
    memcpy(name, v.s, nl);
    name[nl] = '\0';
    return rt_json_find_signature(def, name, sig, sem);
}

rt_status rt_json_check_signature_method(const Predictd__SignatureDef *sig, rt_method method,
                                         rt_err *err)
{
    if (!sig || method == RT_METHOD_PREDICT)
        return RT_OK;
    const char *want = method == RT_METHOD_CLASSIFY ? "tensorflow/serving/classify"
                                                     : "tensorflow/serving/regress";
    const char *was = sig->method_name ? sig->method_name : "";
    if (strcmp(was, want) == 0)
        return RT_OK;
    return rt_err_set(err, RT_ERR_INVALID, "signature_name \"%.100s\" is not a %s signature "
                      "(Expected %s signature method_name to be %s. Was: %.100s)",
                      sig->name ? sig->name : "",
                      method == RT_METHOD_CLASSIFY ? "classification" : "regression",
                      method == RT_METHOD_CLASSIFY ? "classification" : "regression", want, was);
}
