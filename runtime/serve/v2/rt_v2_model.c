/*
 * rt_v2_model.c — a model as the Open Inference Protocol shows it: one input
 * tensor per raw feature of the serving signature (the names, types and
 * shapes TF Serving's metadata shows, in v2's datatype names: FP32 for
 * DT_FLOAT, BYTES for DT_STRING; -1 for the batch dimension), or the one
 * BYTES input of a CSV / tf.Example receiver; the signature's outputs; and
 * GET /v2/models/{m}'s answer.
 */
#include "rt_serve.h"
#include "rt_v2_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *rt_v2_datatype(Predictd__DType t)
{
    switch (t) {
    case PREDICTD__DTYPE__DT_FLOAT: return "FP32";
    case PREDICTD__DTYPE__DT_STRING: return "BYTES";
    case PREDICTD__DTYPE__DT_INT64: return "INT64";
    case PREDICTD__DTYPE__DT_INT32: return "INT32";
    default: return "FP32";
    }
}

const Predictd__SignatureDef *rt_v2_signature(const rt_graph *g)
{
    const Predictd__SignatureDef *sig = NULL;
    /* several heads: KServe v2 has no signatures, so the model's outputs are
     * all its heads' (TF's MultiHead predict signature) */
    const char *name = rt_graph_head_view(g, 0, NULL) ? "predict" : NULL;
    if (rt_json_find_signature(rt_graph_def(g), name, &sig, NULL) != RT_OK)
        return NULL;
    return sig;
}

/* What output `name` holds for this head (RT_V2_OUT_NONE: not produced). */
static rt_v2_out_kind kind_of(const rt_graph *g, const char *name)
{
    static const struct {
        const char *name;
        rt_v2_out_kind kind;
    } names[] = {
        {"all_class_ids", RT_V2_OUT_ALL_CLASS_IDS}, {"all_classes", RT_V2_OUT_ALL_CLASSES},
        {"class_ids", RT_V2_OUT_CLASS_IDS},         {"classes", RT_V2_OUT_CLASSES},
        {"logistic", RT_V2_OUT_LOGISTIC},           {"logits", RT_V2_OUT_LOGITS},
        {"probabilities", RT_V2_OUT_PROBABILITIES}, {"predictions", RT_V2_OUT_PREDICTIONS},
    };
    rt_v2_out_kind k = RT_V2_OUT_NONE;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name[0] == names[i].name[0] && !strcmp(name, names[i].name)) {
            k = names[i].kind; /* the names differ: the first match is the only one */
            break;
        }
    bool regression = g->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    if (regression && k != RT_V2_OUT_PREDICTIONS && k != RT_V2_OUT_LOGITS)
        return RT_V2_OUT_NONE;
    if (!regression && k == RT_V2_OUT_PREDICTIONS)
        return RT_V2_OUT_NONE;
    if (g->head != PREDICTD__HEAD_TYPE__HEAD_BINARY && k == RT_V2_OUT_LOGISTIC)
        return RT_V2_OUT_NONE;
    if (g->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL &&
        (k == RT_V2_OUT_CLASS_IDS || k == RT_V2_OUT_CLASSES)) /* no single class */
        return RT_V2_OUT_NONE;
    return k;
}

static rt_v2_output make_output(const rt_graph *g, const char *name, rt_v2_out_kind k)
{
    rt_v2_output o = {name, k, "FP32", 1, 0, false, NULL, 0};
    switch (k) {
    case RT_V2_OUT_ALL_CLASS_IDS: o.datatype = "INT32"; o.width = g->n_classes; break;
    case RT_V2_OUT_ALL_CLASSES: o.datatype = "BYTES"; o.width = g->n_classes; break;
    case RT_V2_OUT_CLASS_IDS: o.datatype = "INT64"; break;
    case RT_V2_OUT_CLASSES: o.datatype = "BYTES"; break;
    case RT_V2_OUT_LOGITS:
    case RT_V2_OUT_PREDICTIONS: o.width = g->logits_dim; break;
    case RT_V2_OUT_PROBABILITIES: o.width = g->n_classes; break;
    default: break;
    }
    return o;
}

/* An ONNX graph's outputs under their own names, after TF's n (a name TF's
 * outputs use stays theirs): a regressor's as its slice of the predictions,
 * a classifier's scores as the probabilities, its label as the graph's
 * label (INT64 for int64 labels, else the class name as BYTES), each in the
 * shape the graph declares ([n] for a rank-1 value); a ZipMap has no v2
 * tensor type and is left out. */
static size_t onnx_outputs(const rt_graph *g, rt_v2_output *outs, size_t n)
{
    rt_onnx_output oo;
    size_t count = rt_onnx_run_output(g, 0, NULL);
    for (size_t q = 0; q < count && n < RT_V2_MAX_OUTPUTS; q++) {
        rt_onnx_run_output(g, q, &oo);
        bool taken = false;
        for (size_t k = 0; k < n && !taken; k++)
            taken = strcmp(outs[k].name, oo.name) == 0;
        if (taken)
            continue;
        if (oo.kind == RT_ONNX_OUT_FLOATS) {
            outs[n] = make_output(g, oo.name, RT_V2_OUT_PREDICTIONS);
            outs[n].width = oo.width;
            outs[n].off = oo.off;
        } else if (oo.kind == RT_ONNX_OUT_SCORES) {
            outs[n] = make_output(g, oo.name, RT_V2_OUT_PROBABILITIES);
        } else if (oo.kind == RT_ONNX_OUT_LABEL && oo.labels_int &&
                   oo.n_names >= g->n_classes) {
            outs[n] = make_output(g, oo.name, RT_V2_OUT_CLASSES);
            outs[n].kind = RT_V2_OUT_LABEL_INT64;
            outs[n].datatype = "INT64";
            outs[n].labels = oo.names;
        } else if (oo.kind == RT_ONNX_OUT_LABEL) {
            outs[n] = make_output(g, oo.name, RT_V2_OUT_CLASSES);
        } else {
            continue;
        }
        outs[n].flat = oo.rank == 1 && outs[n].width == 1;
        n++;
    }
    return n;
}

/* Several heads: 1 + the head whose output name ("<head>/<output>") is,
 * else 0. */
static size_t head_of(const rt_graph *g, const char *name)
{
    const char *hn;
    for (size_t k = 0; rt_graph_head_view(g, k, &hn); k++) {
        size_t len = hn ? strlen(hn) : 0;
        if (len && strncmp(name, hn, len) == 0 && name[len] == '/')
            return k + 1;
    }
    return 0;
}

size_t rt_v2_outputs(const rt_graph *g, const Predictd__SignatureDef *sig, rt_v2_output *outs)
{
    size_t n = 0;
    if (sig && sig->n_outputs > 0) {
        for (size_t k = 0; k < sig->n_outputs && n < RT_V2_MAX_OUTPUTS; k++) {
            const char *name = sig->outputs[k]->name;
            size_t head = name ? head_of(g, name) : 0;
            const rt_graph *hg = head ? rt_graph_head_view(g, head - 1, NULL) : g;
            const char *bare = head ? strchr(name, '/') + 1 : name;
            rt_v2_out_kind kind = name ? kind_of(hg, bare) : RT_V2_OUT_NONE;
            if (kind != RT_V2_OUT_NONE) {
                outs[n] = make_output(hg, name, kind);
                outs[n++].head = head;
            }
        }
        return onnx_outputs(g, outs, n);
    }
    static const char *const all[] = {"all_class_ids", "all_classes", "class_ids",
                                      "classes",       "logistic",    "logits",
                                      "probabilities", "predictions"};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        rt_v2_out_kind kind = kind_of(g, all[k]);
        if (kind != RT_V2_OUT_NONE)
            outs[n++] = make_output(g, all[k], kind);
    }
    return onnx_outputs(g, outs, n);
}

size_t rt_v2_input_width(const rt_graph *g, const Predictd__SignatureDef *sig, size_t in)
{
    if (!sig || in >= g->n_inputs)
        return 1;
    const char *name = g->inputs[in].name;
    /* the signature lists the raw inputs in the graph's order: look there first */
    for (size_t k = 0; k < sig->n_inputs; k++) {
        const Predictd__TensorSpec *t = sig->inputs[(k + in) % sig->n_inputs];
        if (t->name && !strcmp(t->name, name))
            return t->n_shape >= 2 && t->shape[1] > 0 ? (size_t)t->shape[1] : 1;
    }
    return 1;
}

/* {"name": ..., "datatype": ..., "shape": [-1] or [-1, w]} */
static int put_tensor(rt_buf *b, const char *name, const char *datatype, size_t width,
                      bool two_dims)
{
    int rc = rt_buf_puts(b, "{\"name\": ");
    rc |= rt_buf_json_string(b, name, strlen(name));
    rc |= rt_buf_printf(b, ", \"datatype\": \"%s\", \"shape\": [-1", datatype);
    if (two_dims)
        rc |= rt_buf_printf(b, ", %zu", width);
    return rc | rt_buf_puts(b, "]}");
}

rt_status rt_v2_metadata(const rt_model *m, const char *name, const int64_t *versions,
                         size_t n_versions, rt_buf *out)
{
    if (!m || !out || (!versions && n_versions))
        return RT_ERR_INVALID;
    const rt_graph *g = rt_model_graph(m);
    const Predictd__ModelDef *def = rt_model_def(m);
    if (!g)
        return RT_ERR_INVALID;
    if (!name)
        name = def->model_name ? def->model_name : "";
    const Predictd__SignatureDef *sig = rt_v2_signature(g);
    int rc = rt_buf_puts(out, "{\"name\": ");
    rc |= rt_buf_json_string(out, name, strlen(name));
    rc |= rt_buf_puts(out, ", \"versions\": [");
    for (size_t i = 0; i < n_versions; i++)
        rc |= rt_buf_printf(out, "%s\"%" PRId64 "\"", i ? ", " : "", versions[i]);
    rc |= rt_buf_puts(out, "], \"platform\": \"predictd_export\", \"inputs\": [");
    rt_in_mode md = rt_json_mode_for(g, sig);
    if (md.kind != RT_IN_FEATURES) {
        rc |= put_tensor(out, md.name, "BYTES", 1, false);
    } else {
        for (size_t i = 0; i < g->n_inputs; i++) {
            size_t w = rt_v2_input_width(g, sig, i);
            if (i)
                rc |= rt_buf_puts(out, ", ");
            rc |= put_tensor(out, g->inputs[i].name, rt_v2_datatype(g->inputs[i].dtype), w,
                             w > 1);
        }
    }
    rc |= rt_buf_puts(out, "], \"outputs\": [");
    rt_v2_output outs[RT_V2_MAX_OUTPUTS];
    size_t n = rt_v2_outputs(g, sig, outs);
    for (size_t k = 0; k < n; k++) {
        if (k)
            rc |= rt_buf_puts(out, ", ");
        rc |= put_tensor(out, outs[k].name, outs[k].datatype, outs[k].width, !outs[k].flat);
    }
    rc |= rt_buf_puts(out, "]}");
    return rc ? RT_ERR_NOMEM : RT_OK;
}
