/* test_onnx.c — ONNX models served (rt_onnx_read.c, rt_onnx_run.c,
 * rt_model_open): graphs built here with protobuf-c's generated types
 * (runtime/data/onnx.proto), packed into model.onnx and opened as a version
 * directory answer what the operators compute, worked out here in the
 * same float operations; nodes out of order are sorted; the same instance
 * answers the same bits alone and in a batch; serving.json's "inputs" feed
 * the graph input from named features; and hostile graphs are refused
 * naming the file, the node and the field. The networks torch trains and
 * exports are tests/integration/test_daemon_onnx's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cJSON.h>

#include "onnx.pb-c.h"
#include "rt_serve_internal.h"
#include "support_models.h"

/* ------------------------------------------------- building graphs */

#define MAXN 16

typedef struct gb {
    Onnx__ModelProto model;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__GraphProto graph;
    Onnx__NodeProto nodes[MAXN], *pnodes[MAXN];
    Onnx__AttributeProto attrs[MAXN], *pattrs[MAXN];
    Onnx__TensorProto inits[MAXN], *pinits[MAXN];
    int64_t dims[MAXN][4];
    float data[MAXN][64];
    int64_t idata[MAXN][8];
    Onnx__ValueInfoProto in, out, *pin[1], *pout[2];
    Onnx__ValueInfoProto out2;
    Onnx__TypeProto in_type;
    Onnx__TypeProto__Tensor in_tt;
    Onnx__TensorShapeProto in_shape;
    Onnx__TensorShapeProto__Dimension in_dims[2], *pin_dims[2];
    char *ins[MAXN][3], *outs[MAXN][1];
} gb;

static void gb_init(gb *b, int opset, int width)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->model);
    onnx__operator_set_id_proto__init(&b->opset);
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opsets[0] = &b->opset;
    b->model.n_opset_import = 1;
    b->model.opset_import = b->opsets;
    b->model.has_ir_version = 1;
    b->model.ir_version = 8;
    onnx__graph_proto__init(&b->graph);
    b->model.graph = &b->graph;
    b->graph.node = b->pnodes;
    b->graph.initializer = b->pinits;
    onnx__value_info_proto__init(&b->in);
    b->in.name = "x";
    onnx__type_proto__init(&b->in_type);
    onnx__type_proto__tensor__init(&b->in_tt);
    onnx__tensor_shape_proto__init(&b->in_shape);
    for (int i = 0; i < 2; i++) {
        onnx__tensor_shape_proto__dimension__init(&b->in_dims[i]);
        b->pin_dims[i] = &b->in_dims[i];
    }
    b->in_dims[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    b->in_dims[0].dim_param = "N";
    b->in_dims[1].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    b->in_dims[1].dim_value = width;
    b->in_shape.n_dim = 2;
    b->in_shape.dim = b->pin_dims;
    b->in_tt.has_elem_type = 1;
    b->in_tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    b->in_tt.shape = &b->in_shape;
    b->in_type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    b->in_type.tensor_type = &b->in_tt;
    b->in.type = &b->in_type;
    b->pin[0] = &b->in;
    b->graph.n_input = 1;
    b->graph.input = b->pin;
    onnx__value_info_proto__init(&b->out);
    b->out.name = "y";
    b->pout[0] = &b->out;
    b->graph.n_output = 1;
    b->graph.output = b->pout;
}

static Onnx__NodeProto *gb_node(gb *b, const char *op, const char *name, const char *in0,
                                const char *in1, const char *in2, const char *out)
{
    size_t k = b->graph.n_node++;
    Onnx__NodeProto *nd = &b->nodes[k];
    onnx__node_proto__init(nd);
    nd->op_type = (char *)op;
    nd->name = (char *)name;
    b->ins[k][0] = (char *)in0;
    b->ins[k][1] = (char *)in1;
    b->ins[k][2] = (char *)in2;
    nd->n_input = in2 ? 3 : in1 ? 2 : in0 ? 1 : 0;
    nd->input = b->ins[k];
    b->outs[k][0] = (char *)out;
    nd->n_output = 1;
    nd->output = b->outs[k];
    b->pnodes[k] = nd;
    return nd;
}

static void gb_attr_int(gb *b, Onnx__NodeProto *nd, const char *name, int64_t v)
{
    size_t k = (size_t)(nd - b->nodes);
    Onnx__AttributeProto *a = &b->attrs[k];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
    b->pattrs[k] = a;
    nd->n_attribute = 1;
    nd->attribute = &b->pattrs[k];
}

static void gb_init_f(gb *b, const char *name, int rank, const int64_t *dims, const float *v,
                      size_t n)
{
    size_t k = b->graph.n_initializer++;
    Onnx__TensorProto *t = &b->inits[k];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    memcpy(b->dims[k], dims, (size_t)rank * sizeof *dims);
    t->n_dims = (size_t)rank;
    t->dims = b->dims[k];
    memcpy(b->data[k], v, n * sizeof *v);
    t->n_float_data = n;
    t->float_data = b->data[k];
    b->pinits[k] = t;
}

static void gb_init_i(gb *b, const char *name, const int64_t *v, size_t n)
{
    size_t k = b->graph.n_initializer++;
    Onnx__TensorProto *t = &b->inits[k];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    b->dims[k][0] = (int64_t)n;
    t->n_dims = 1;
    t->dims = b->dims[k];
    memcpy(b->idata[k], v, n * sizeof *v);
    t->n_int64_data = n;
    t->int64_data = b->idata[k];
    b->pinits[k] = t;
}

typedef struct fixture {
    char dir[256];
} fixture;

static void put(const char *dir, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static rt_status open_gb(fixture *fx, gb *b, const char *serving, rt_model **m, rt_err *err)
{
    assert_int_equal(support_mkdtemp(fx->dir, sizeof fx->dir), 0);
    size_t len = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    onnx__model_proto__pack(&b->model, buf);
    put(fx->dir, "model.onnx", buf, len);
    free(buf);
    if (serving)
        put(fx->dir, "serving.json", serving, strlen(serving));
    return rt_model_open(fx->dir, m, err);
}

/* The predictions :predict answers for body, into out (rows x width). */
static void predict(const rt_model *m, const char *body, float *out, size_t rows, size_t width)
{
    rt_ctx *c = rt_ctx_new();
    rt_buf b;
    rt_buf_init(&b);
    rt_err err = {{0}};
    rt_status st = rt_json_handle(m, RT_METHOD_PREDICT, body, strlen(body), NULL, c, &b, &err);
    if (st != RT_OK)
        fail_msg("predict: %s", err.msg);
    cJSON *doc = cJSON_Parse(b.data);
    assert_non_null(doc);
    const cJSON *preds = cJSON_GetObjectItem(doc, "predictions");
    assert_int_equal(cJSON_GetArraySize(preds), (int)rows);
    for (size_t i = 0; i < rows; i++) {
        const cJSON *p = cJSON_GetArrayItem(preds, (int)i);
        if (cJSON_IsObject(p)) /* a classifier: its probabilities; else the predictions
                                  (beside the graph's outputs under their own names) */
            p = cJSON_GetObjectItem(p, cJSON_HasObjectItem(p, "probabilities") ? "probabilities"
                                                                               : "predictions");
        if (cJSON_IsNumber(p)) {
            assert_int_equal(width, 1);
            out[i] = (float)p->valuedouble;
            continue;
        }
        assert_int_equal(cJSON_GetArraySize(p), (int)width);
        for (size_t j = 0; j < width; j++)
            out[i * width + j] = (float)cJSON_GetArrayItem(p, (int)j)->valuedouble;
    }
    cJSON_Delete(doc);
    rt_buf_free(&b);
    rt_ctx_free(c);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    *state = fx;
    return fx ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    if (fx->dir[0])
        support_rmtree(fx->dir);
    free(fx);
    return 0;
}

/* ------------------------------------------------- tests */

static const float W[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}; /* [3 x 2] */
static const float B[2] = {0.125f, -0.5f};

static float relu(float v)
{
    return v < 0 ? 0 : v;
}

/* y = softmax(relu(x W + b) * 2 - [1, 0]), nodes listed out of order: a
 * binary classifier (its one output a softmax) whose probabilities are
 * [sigmoid(z0 - z1), sigmoid(z1 - z0)] */
static void test_gemm_relu_softmax(void **state)
{
    fixture *fx = *state;
    gb b;
    gb_init(&b, 13, 3);
    int64_t wd[2] = {3, 2}, bd[1] = {2}, one[1] = {1}, rowd[2] = {1, 2};
    float two = 2.0f, sub[2] = {1.0f, 0.0f};
    gb_init_f(&b, "w", 2, wd, W, 6);
    gb_init_f(&b, "b", 1, bd, B, 2);
    gb_init_f(&b, "two", 1, one, &two, 1);
    gb_init_f(&b, "off", 2, rowd, sub, 2);
    gb_node(&b, "Softmax", "sm", "s", NULL, NULL, "y");
    gb_node(&b, "Sub", "sub", "m", "off", NULL, "s");
    gb_node(&b, "Mul", "mul", "r", "two", NULL, "m");
    gb_node(&b, "Relu", "relu", "h", NULL, NULL, "r");
    gb_node(&b, "Gemm", "fc", "x", "w", "b", "h");
    rt_model *m = NULL;
    rt_err err = {{0}};
    if (open_gb(fx, &b, NULL, &m, &err) != RT_OK)
        fail_msg("open: %s", err.msg);
    const float x[3][3] = {{1, 2, 3}, {-1, 0.5f, 4}, {0, 0, 0}};
    float got[6], alone[2];
    predict(m, "{\"instances\": [{\"x\": [1, 2, 3]}, {\"x\": [-1, 0.5, 4]}, {\"x\": [0, 0, 0]}]}",
            got, 3, 2);
    for (int i = 0; i < 3; i++) {
        float z[2];
        for (int j = 0; j < 2; j++) {
            float h = B[j] + 0.0f;
            for (int k = 0; k < 3; k++)
                h = h + W[k * 2 + j] * x[i][k];
            z[j] = relu(h) * 2.0f - sub[j];
        }
        float mx = z[0] > z[1] ? z[0] : z[1];
        float s = expf(z[0] - mx) + expf(z[1] - mx);
        for (int j = 0; j < 2; j++)
            assert_float_equal(got[i * 2 + j], expf(z[j] - mx) / s, 1e-6);
        assert_true(rt_graph_head(rt_model_graph(m)) == PREDICTD__HEAD_TYPE__HEAD_BINARY);
    }
    /* the second row alone: the same bits */
    predict(m, "{\"instances\": [{\"x\": [-1, 0.5, 4]}]}", alone, 1, 2);
    assert_memory_equal(alone, got + 2, sizeof alone);
    rt_model_close(m);
}

/* serving.json's inputs: x from features a, b, c; Concat, Reshape,
 * Unsqueeze/Squeeze (opset 11 attributes), Flatten, Tanh, LeakyRelu */
static void test_features_and_shapes(void **state)
{
    fixture *fx = *state;
    gb b;
    gb_init(&b, 11, 3);
    int64_t shape[2] = {0, 6};
    gb_init_i(&b, "shape", shape, 2);
    gb_node(&b, "Tanh", "t", "x", NULL, NULL, "t1");
    Onnx__NodeProto *lr = gb_node(&b, "LeakyRelu", "lr", "x", NULL, NULL, "l1");
    (void)lr; /* default alpha 0.01 */
    Onnx__NodeProto *cat = gb_node(&b, "Concat", "cat", "t1", "l1", NULL, "c1");
    gb_attr_int(&b, cat, "axis", 1);
    gb_node(&b, "Reshape", "rs", "c1", "shape", NULL, "r1");
    gb_node(&b, "Flatten", "fl", "r1", NULL, NULL, "y");
    rt_model *m = NULL;
    rt_err err = {{0}};
    if (open_gb(fx, &b, "{\"inputs\": {\"x\": [\"a\", \"b\", \"c\"]}}", &m, &err) != RT_OK)
        fail_msg("open: %s", err.msg);
    assert_int_equal(rt_graph_num_inputs(rt_model_graph(m)), 3);
    float got[6];
    predict(m, "{\"instances\": [{\"a\": 1, \"b\": -2, \"c\": 0.5}]}", got, 1, 6);
    const float x[3] = {1, -2, 0.5f};
    for (int k = 0; k < 3; k++) {
        assert_float_equal(got[k], tanhf(x[k]), 1e-7);
        assert_float_equal(got[3 + k], x[k] < 0 ? x[k] * 0.01f : x[k], 1e-7);
    }
    rt_model_close(m);
}

static void expect_refusal(fixture *fx, gb *b, const char *want)
{
    rt_model *m = NULL;
    rt_err err = {{0}};
    rt_status st = open_gb(fx, b, NULL, &m, &err);
    if (st == RT_OK)
        fail_msg("accepted; expected a refusal with \"%s\"", want);
    if (!strstr(err.msg, want) || strncmp(err.msg, "model.onnx", 10) != 0)
        fail_msg("refusal \"%s\" lacks \"%s\"", err.msg, want);
    support_rmtree(fx->dir);
    fx->dir[0] = '\0';
}

static void test_refusals(void **state)
{
    fixture *fx = *state;
    gb b;
    int64_t wd[2] = {3, 2};
    /* a cycle */
    gb_init(&b, 13, 3);
    gb_node(&b, "Add", "a", "x", "z", NULL, "u");
    gb_node(&b, "Relu", "r", "u", NULL, NULL, "z");
    gb_node(&b, "Identity", "i", "z", NULL, NULL, "y");
    expect_refusal(fx, &b, "on a cycle");
    /* a missing initializer */
    gb_init(&b, 13, 3);
    gb_node(&b, "MatMul", "mm", "x", "w", NULL, "y");
    expect_refusal(fx, &b, "node \"mm\" (MatMul): input 1 \"w\": neither a graph input");
    /* an unknown operator */
    gb_init(&b, 13, 3);
    gb_node(&b, "Erf", "e1", "x", NULL, NULL, "y");
    expect_refusal(fx, &b, "node \"e1\": operator Erf is not supported");
    /* opsets outside 9..17 */
    gb_init(&b, 18, 3);
    gb_node(&b, "Relu", "r", "x", NULL, NULL, "y");
    expect_refusal(fx, &b, "opset_import");
    gb_init(&b, 8, 3);
    gb_node(&b, "Relu", "r", "x", NULL, NULL, "y");
    expect_refusal(fx, &b, "opset_import");
    /* a weight of the wrong width */
    gb_init(&b, 13, 4);
    gb_init_f(&b, "w", 2, wd, W, 6);
    gb_node(&b, "MatMul", "mm", "x", "w", NULL, "y");
    expect_refusal(fx, &b, "input 1 \"w\": 3 rows for an input 4 wide");
    /* values that do not fill the dims */
    gb_init(&b, 13, 3);
    gb_init_f(&b, "w", 2, wd, W, 5);
    gb_node(&b, "MatMul", "mm", "x", "w", NULL, "y");
    expect_refusal(fx, &b, "graph.initializer \"w\": 5 values for dims holding 6");
    /* a non-finite weight */
    gb_init(&b, 13, 3);
    float bad[6] = {0, 1, 2, NAN, 4, 5};
    gb_init_f(&b, "w", 2, wd, bad, 6);
    gb_node(&b, "MatMul", "mm", "x", "w", NULL, "y");
    expect_refusal(fx, &b, "input 1 \"w\": value 3 is not finite");
    /* softmax across the batch, concat along the batch */
    gb_init(&b, 13, 3);
    gb_attr_int(&b, gb_node(&b, "Softmax", "sm", "x", NULL, NULL, "y"), "axis", 0);
    expect_refusal(fx, &b, "node \"sm\" (Softmax): attribute axis: 0");
    gb_init(&b, 13, 3);
    gb_attr_int(&b, gb_node(&b, "Concat", "cc", "x", "x", NULL, "y"), "axis", 0);
    expect_refusal(fx, &b, "node \"cc\" (Concat): attribute axis: 0");
    /* an attribute that would change the answer */
    gb_init(&b, 13, 3);
    gb_attr_int(&b, gb_node(&b, "Relu", "r", "x", NULL, NULL, "y"), "bogus", 1);
    expect_refusal(fx, &b, "attribute bogus is not supported");
    /* an output no node computes */
    gb_init(&b, 13, 3);
    gb_node(&b, "Relu", "r", "x", NULL, NULL, "q");
    expect_refusal(fx, &b, "graph.output \"y\": no node computes it");
    /* not a protobuf at all */
    assert_int_equal(support_mkdtemp(fx->dir, sizeof fx->dir), 0);
    put(fx->dir, "model.onnx", "\xff\xff\xff\xff", 4);
    rt_model *m = NULL;
    rt_err err = {{0}};
    assert_int_not_equal(rt_model_open(fx->dir, &m, &err), RT_OK);
    assert_non_null(strstr(err.msg, "model.onnx: not an ONNX model"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gemm_relu_softmax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_features_and_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
