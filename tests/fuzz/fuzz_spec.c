/*
 * fuzz_spec.c — fuzzes the spec readers: rt_spec_to_modeldef (the model
 * part) and trn_config_from_spec / trn_config_resolve (the trainer part),
 * then compiles every accepted spec and runs one instance through it.
 *
 * Input: a spec's JSON text. For an accepted spec, besides the sanitizers:
 *   - the ModelDef survives a protobuf round trip byte for byte;
 *   - rt_graph_tensor_specs gives counts that are the product of shapes;
 *   - when its tensors are small (< 1M floats), the graph builds over zero
 *     tensors (vocabulary files aside: there is no assets directory) and an
 *     instance with a value for every input transforms, runs forward and
 *     through the head; with all-zero weights every logit is exactly 0 (or
 *     NaN when a normalizer overflowed the input).
 */
#include "fz_util.h"
#include "trn.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FZ_SPEC_MAX (256u << 10)
#define FZ_MAX_FLOATS (1u << 20)

typedef struct zeros {
    const float *data;
    uint64_t count;
} zeros;

static const float *zero_lookup(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    const zeros *z = ctx;
    if (count > z->count) {
        rt_err_set(err, RT_ERR_NOTFOUND, "%s: too large for the fuzzer", name);
        return NULL;
    }
    return z->data;
}

static void check_roundtrip(const Predictd__ModelDef *def)
{
    size_t n = predictd__model_def__get_packed_size(def);
    uint8_t *a = malloc(n ? n : 1);
    uint8_t *b = NULL;
    Predictd__ModelDef *back = NULL;
    FZ_CHECK(a != NULL, "out of memory");
    FZ_CHECK(predictd__model_def__pack(def, a) == n, "pack size differs");
    back = predictd__model_def__unpack(NULL, n, a);
    FZ_CHECK(back != NULL, "a packed ModelDef does not unpack");
    size_t m = predictd__model_def__get_packed_size(back);
    FZ_CHECK(m == n, "round trip changed the size");
    b = malloc(m ? m : 1);
    FZ_CHECK(b != NULL, "out of memory");
    predictd__model_def__pack(back, b);
    FZ_CHECK(memcmp(a, b, n) == 0, "round trip changed the bytes");
    predictd__model_def__free_unpacked(back, NULL);
    free(a);
    free(b);
}

/* One instance with a value for every input (1.5 or "Male"), run through
 * the whole serving path over all-zero weights. */
static void run_graph(const rt_graph *g)
{
    rt_batch *b = rt_batch_new(g);
    rt_features f;
    rt_outputs o;
    rt_workspace *ws = rt_workspace_new();
    float *logits = NULL;
    rt_err err;
    size_t idx = 0;
    rt_transform_features_init(&f);
    rt_head_outputs_init(&o);
    FZ_CHECK(b && ws, "out of memory");
    FZ_CHECK(rt_batch_add(b, &idx) == RT_OK, "rt_batch_add failed");
    for (size_t i = 0; i < rt_graph_num_inputs(g); i++) {
        if (rt_graph_input_dtype(g, i) == PREDICTD__DTYPE__DT_STRING)
            FZ_CHECK(rt_batch_push_str(b, idx, i, "Male", 4) == RT_OK, "push_str failed");
        else
            FZ_CHECK(rt_batch_push_num(b, idx, i, 1.5) == RT_OK, "push_num failed");
    }
    if (rt_transform(g, b, &f, &err) != RT_OK)
        goto out; /* e.g. a numeric column of shape 2 given one value */
    size_t ld = rt_graph_logits_dim(g);
    FZ_CHECK(ld >= 1 && ld <= 65536, "implausible logits dimension");
    logits = calloc(ld, sizeof *logits);
    FZ_CHECK(logits != NULL, "out of memory");
    FZ_CHECK(rt_forward(g, &f, ws, logits, &err) == RT_OK, "forward failed on a transformed batch");
    for (size_t k = 0; k < ld; k++)
        FZ_CHECK(logits[k] == 0.0f || isnan(logits[k]), "zero weights gave a nonzero logit");
    FZ_CHECK(rt_head_compute(g, logits, 1, &o, &err) == RT_OK, "head failed");
    FZ_CHECK(o.n == 1, "head output count");
out:
    free(logits);
    rt_head_outputs_free(&o);
    rt_transform_features_free(&f);
    rt_workspace_free(ws);
    rt_batch_free(b);
}

static void check_def(const Predictd__ModelDef *def)
{
    rt_tensor_spec *specs = NULL;
    size_t n = 0;
    rt_err err;
    err.msg[0] = '\0';
    check_roundtrip(def);
    if (rt_graph_tensor_specs(def, &specs, &n, &err) != RT_OK) {
        FZ_CHECK(err.msg[0] != '\0', "tensor specs refused without a message");
        return;
    }
    uint64_t total = 0, max = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t prod = specs[i].shape[0];
        FZ_CHECK(specs[i].rank == 1 || specs[i].rank == 2, "tensor rank not 1 or 2");
        if (specs[i].rank == 2)
            FZ_CHECK(!__builtin_mul_overflow(prod, specs[i].shape[1], &prod),
                     "tensor shape overflows");
        FZ_CHECK(prod == specs[i].count, "tensor count is not the product of its shape");
        FZ_CHECK(specs[i].name && specs[i].name[0], "tensor without a name");
        if (total < FZ_MAX_FLOATS)
            total += specs[i].count < FZ_MAX_FLOATS ? specs[i].count : FZ_MAX_FLOATS;
        if (specs[i].count > max)
            max = specs[i].count;
    }
    free(specs);
    if (total >= FZ_MAX_FLOATS)
        return;
    float *buf = calloc(max ? max : 1, sizeof *buf);
    FZ_CHECK(buf != NULL, "out of memory");
    zeros z = {buf, max};
    rt_graph *g = NULL;
    rt_status st = rt_graph_build(def, zero_lookup, &z, NULL, &g, &err);
    fz_note("rt_graph_build", st, &err);
    if (st == RT_OK) {
        run_graph(g);
        rt_graph_free(g);
    } else {
        FZ_CHECK(err.msg[0] != '\0', "graph refused without a message");
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_SPEC_MAX)
        return 0;
    cJSON *spec = cJSON_ParseWithLength((const char *)data, size);
    if (!spec)
        return 0;
    static const char *const other[] = {"train", "eval", NULL};
    Predictd__ModelDef *def = NULL;
    rt_err err;
    err.msg[0] = '\0';
    rt_status st = rt_spec_to_modeldef(spec, other, &def, &err);
    fz_note("rt_spec_to_modeldef", st, &err);
    if (st == RT_OK) {
        FZ_CHECK(def != NULL, "accepted spec without a ModelDef");
        check_def(def);
    } else {
        FZ_CHECK(err.msg[0] != '\0', "refused spec without a message");
    }
    trn_config c;
    trn_config_init(&c);
    err.msg[0] = '\0';
    st = trn_config_from_spec(spec, &c, &err);
    fz_note("trn_config_from_spec", st, &err);
    if (st == RT_OK) {
        if (def)
            (void)trn_config_resolve(&c, def, &err);
    } else {
        FZ_CHECK(err.msg[0] != '\0', "refused trainer spec without a message");
    }
    trn_config_free(&c);
    rt_spec_modeldef_free(def);
    cJSON_Delete(spec);
    return 0;
}
