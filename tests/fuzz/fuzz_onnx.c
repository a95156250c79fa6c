/*
 * fuzz_onnx.c — fuzzes the ONNX model reader (runtime/model/rt_onnx_read.c)
 * and what serves an accepted model (rt_onnx_run.c): model.onnx bytes into
 * a checked plan, its ModelDef, the compiled graph, and a forward pass.
 *
 * Input: the file. Checked besides the sanitizers: a refusal carries a
 * message naming the file; an accepted model's ModelDef compiles
 * (rt_graph_build), binds, and an instance with every number 1 and every
 * string its vocabulary's first (and a batch of two, the second's strings
 * unknown) runs through the transform, the network and the head
 * (fz_run_batch).
 */
#include "fz_util.h"
#include "rt_model_internal.h"

#include <string.h>

#define FZ_ONNX_MAX (1u << 20)

static void serve(const rt_graph *g, size_t n)
{
    rt_batch *b = rt_batch_new(g);
    FZ_CHECK(b != NULL, "out of memory");
    for (size_t r = 0; r < n; r++) {
        size_t i = 0;
        FZ_CHECK(rt_batch_add(b, &i) == RT_OK, "out of memory");
        for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
            const Predictd__FeatureColumn *fc = rt_graph_column(g, in);
            size_t w = fc && fc->shape > 1 ? fc->shape : 1;
            if (fc && fc->n_vocabulary) { /* a string input: a known text, then an unknown one */
                const char *t = r == 0 ? fc->vocabulary[0] : "fz-unknown";
                FZ_CHECK(rt_batch_push_str(b, i, in, t, strlen(t)) == RT_OK, "out of memory");
                continue;
            }
            for (size_t k = 0; k < w; k++)
                FZ_CHECK(rt_batch_push_num(b, i, in, 1.0 + (double)r) == RT_OK, "out of memory");
        }
    }
    (void)fz_run_batch(g, b);
    rt_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_ONNX_MAX)
        return 0;
    rt_onnx *o = NULL;
    rt_err err;
    err.msg[0] = '\0';
    rt_status st = rt_onnx_read("model.onnx", data, size, &o, &err);
    fz_note("model.onnx", st, &err);
    if (st != RT_OK) {
        FZ_CHECK(o == NULL, "a refused model left a plan");
        FZ_CHECK(strncmp(err.msg, "model.onnx", 10) == 0, "a refusal does not name the file");
        return 0;
    }
    Predictd__ModelDef *def = NULL;
    rt_graph *g = NULL;
    st = rt_onnx_to_modeldef(o, NULL, 0, &def, &err);
    if (st == RT_OK)
        st = rt_spec_add_regression_signature(def, &err);
    if (st == RT_OK)
        st = rt_graph_build(def, rt_onnx_lookup, o, NULL, &g, &err);
    if (st == RT_OK)
        st = rt_onnx_bind(o, g, &err);
    fz_note("graph", st, &err);
    FZ_CHECK(st == RT_OK || st == RT_ERR_NOMEM || st == RT_ERR_LIMIT || st == RT_ERR_INVALID,
             "an accepted ONNX model does not compile");
    if (st == RT_OK) {
        serve(g, 1);
        serve(g, 2);
    }
    rt_graph_free(g);
    rt_spec_modeldef_free(def);
    rt_onnx_free(o);
    return 0;
}
