/*
 * fuzz_xgb.c — fuzzes the XGBoost model readers (runtime/model/rt_xgb_json.c,
 * rt_xgb_model.c): model.json text or model.ubj bytes turned into a
 * BoostedTrees ModelDef, which must then compile and serve.
 *
 * Input: one byte choosing the reader (even: model.json, odd: model.ubj),
 * then the file. Checked besides the sanitizers: a refusal carries a message
 * naming the file; an accepted model compiles (rt_graph_build) and an
 * instance with every input missing (and one with every number 1) runs
 * through the transform, the trees and the head (fz_run_batch).
 */
#include "fz_util.h"
#include "rt_model_internal.h"

#include <string.h>

#define FZ_XGB_MAX (1u << 20)

static const float *no_tensor(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    (void)ctx;
    (void)count;
    rt_err_set(err, RT_ERR_NOTFOUND, "%s: an XGBoost graph has no tensors", name);
    return NULL;
}

static void serve(const rt_graph *g)
{
    rt_batch *b = rt_batch_new(g);
    FZ_CHECK(b != NULL, "out of memory");
    size_t i = 0;
    FZ_CHECK(rt_batch_add(b, &i) == RT_OK, "out of memory");
    (void)fz_run_batch(g, b);
    rt_batch_clear(b);
    FZ_CHECK(rt_batch_add(b, &i) == RT_OK, "out of memory");
    for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
        rt_status st = rt_graph_input_dtype(g, in) == PREDICTD__DTYPE__DT_STRING
                           ? rt_batch_push_str(b, i, in, "a", 1)
                           : rt_batch_push_num(b, i, in, 1.0);
        FZ_CHECK(st == RT_OK, "out of memory");
    }
    (void)fz_run_batch(g, b);
    rt_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FZ_XGB_MAX)
        return 0;
    const char *file = data[0] % 2 ? "model.ubj" : "model.json";
    Predictd__ModelDef *def = NULL;
    rt_xgb_link link = RT_XGB_LINK_NONE;
    rt_err err;
    err.msg[0] = '\0';
    rt_status st = rt_xgb_to_modeldef(file, (const char *)data + 1, size - 1, NULL, 0, &def,
                                      &link, &err);
    fz_note(file, st, &err);
    if (st != RT_OK) {
        FZ_CHECK(def == NULL, "a refused model left a ModelDef");
        FZ_CHECK(strncmp(err.msg, file, strlen(file)) == 0, "a refusal does not name the file");
        return 0;
    }
    FZ_CHECK(def != NULL, "an accepted model has no ModelDef");
    rt_graph *g = NULL;
    st = rt_spec_add_regression_signature(def, &err);
    if (st == RT_OK)
        st = rt_graph_build(def, no_tensor, NULL, NULL, &g, &err);
    fz_note("graph", st, &err);
    FZ_CHECK(st == RT_OK || st == RT_ERR_NOMEM || st == RT_ERR_LIMIT,
             "an accepted XGBoost model does not compile");
    if (g) {
        rt_xgb_graph_set(g, link);
        serve(g);
        rt_graph_free(g);
    }
    rt_spec_modeldef_free(def);
    return 0;
}
