/* test_json.c — TensorFlow Serving JSON in and out (rt_json_handle,
 * rt_json_metadata) on real exports written by the exporter.
 *
 * Answers are compared with the pipeline run by hand (rt_batch ->
 * rt_transform -> rt_forward -> rt_head_compute): floats must read back to
 * exactly the computed float (shortest round-trip text). Row and columnar
 * requests, b64 strings and the CSV / tf.Example receivers must all give the
 * same numbers as the JSON-features request for the same instance. Every
 * refused request must say which instance and input was wrong. Bodies are
 * held to strict JSON (UTF-8, control characters, number grammar and range)
 * with messages naming the member and byte, and every message is valid
 * UTF-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include <cJSON.h>

#include "example.pb-c.h"
#include "rt_serve_internal.h"
#include "rt_data_internal.h"
#include "support_models.h"

typedef struct fixture {
    char dir[256];
    rt_model *wd;     /* wide & deep binary, JSON receiver */
    rt_model *wd_csv; /* same tensors, CSV receiver */
    rt_model *wd_ex;  /* same tensors, EXAMPLE receiver */
    rt_model *lin;    /* linear 3-class */
    rt_model *reg;    /* DNN regressor */
    rt_ctx *c;
} fixture;

/* Writes the spec (with "format" replaced by fmt when not NULL) as an export
 * under dir/name with tensors from seed, and opens it. */
static rt_model *make_model(const char *dir, const char *name, const char *spec,
                            const char *fmt, uint64_t seed)
{
    char *text = malloc(strlen(spec) + 16);
    if (!text)
        return NULL;
    memcpy(text, spec, strlen(spec) + 1);
    if (fmt) {
        char *p = strstr(text, "\"format\": \"JSON\"");
        if (!p)
            return NULL;
        size_t tail = strlen(p + 16);
        char buf[64];
        int n = snprintf(buf, sizeof buf, "\"format\": \"%s\"", fmt);
        memmove(p + n, p + 16, tail + 1);
        memcpy(p, buf, (size_t)n);
    }
    Predictd__ModelDef *def = support_spec_modeldef(text);
    free(text);
    support_tensors st = {0};
    rt_model *m = NULL;
    char base[512], path[1024];
    snprintf(base, sizeof base, "%s/%s", dir, name);
    if (def && support_random_tensors(def, seed, 0.7f, &st) == 0 &&
        support_write_export(base, def, &st, 1700000000, path, sizeof path) > 0) {
        rt_err err = {{0}};
        if (rt_model_open(path, &m, &err) != RT_OK)
            fprintf(stderr, "open %s: %s\n", path, err.msg);
    }
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
    return m;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || support_mkdtemp(f->dir, sizeof f->dir) != 0)
        return -1;
    f->wd = make_model(f->dir, "wd", SUPPORT_SPEC_WIDE_DEEP, NULL, 11);
    f->wd_csv = make_model(f->dir, "wd_csv", SUPPORT_SPEC_WIDE_DEEP, "CSV", 11);
    f->wd_ex = make_model(f->dir, "wd_ex", SUPPORT_SPEC_WIDE_DEEP, "EXAMPLE", 11);
    f->lin = make_model(f->dir, "lin", SUPPORT_SPEC_LINEAR, NULL, 12);
    f->reg = make_model(f->dir, "reg", SUPPORT_SPEC_DNN_REGRESSOR, NULL, 13);
    f->c = rt_ctx_new();
    *state = f;
    return (f->wd && f->wd_csv && f->wd_ex && f->lin && f->reg && f->c) ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f)
        return 0;
    rt_model_close(f->wd);
    rt_model_close(f->wd_csv);
    rt_model_close(f->wd_ex);
    rt_model_close(f->lin);
    rt_model_close(f->reg);
    rt_ctx_free(f->c);
    support_rmtree(f->dir);
    free(f);
    return 0;
}

/* Runs body; returns the status, the answer parsed (or NULL) in *json. */
static rt_status run(fixture *f, const rt_model *m, rt_method method, const char *body,
                     const rt_json_params *p, cJSON **json, rt_err *err)
{
    rt_buf out;
    rt_buf_init(&out);
    rt_status st = rt_json_handle(m, method, body, strlen(body), p, f->c, &out, err);
    if (json)
        *json = st == RT_OK ? cJSON_Parse(out.data) : NULL;
    if (st == RT_OK && json && !*json)
        fprintf(stderr, "answer is not JSON: %s\n", out.data);
    rt_buf_free(&out);
    return st;
}

/* Expects body to be refused with status want and a message holding text. */
static void expect_error(fixture *f, const rt_model *m, rt_method method, const char *body,
                         const rt_json_params *p, rt_status want, const char *text)
{
    rt_err err = {{0}};
    rt_status st = run(f, m, method, body, p, NULL, &err);
    if (st != want || !strstr(err.msg, text))
        fail_msg("body %s\n  got status %d message \"%s\"\n  want status %d with \"%s\"", body,
                 (int)st, err.msg, (int)want, text);
}

/* The instances used throughout: age, hours, gender, occupation. */
typedef struct inst {
    double age, hours;
    const char *gender, *occupation;
} inst;

static const inst INSTANCES[] = {
    {25, 40, "Male", "Tech-support"},
    {52, 60.5, "Female", "Exec-managerial"},
    {17, 0, "Other", ""},
};
#define N_INST 3

/* The reference: the pipeline run by hand on INSTANCES. */
static void reference(const rt_model *m, rt_outputs *o)
{
    const rt_graph *g = rt_model_graph(m);
    rt_batch *b = rt_batch_new(g);
    assert_non_null(b);
    long in_age = rt_graph_find_input(g, "age", 3);
    long in_hours = rt_graph_find_input(g, "hours", 5);
    long in_g = rt_graph_find_input(g, "gender", 6);
    long in_o = rt_graph_find_input(g, "occupation", 10);
    for (size_t i = 0; i < N_INST; i++) {
        size_t idx;
        assert_int_equal(rt_batch_add(b, &idx), RT_OK);
        const inst *x = &INSTANCES[i];
        assert_int_equal(rt_batch_push_num(b, idx, (size_t)in_age, x->age), RT_OK);
        assert_int_equal(rt_batch_push_num(b, idx, (size_t)in_hours, x->hours), RT_OK);
        assert_int_equal(rt_batch_push_str(b, idx, (size_t)in_g, x->gender, strlen(x->gender)),
                         RT_OK);
        assert_int_equal(rt_batch_push_str(b, idx, (size_t)in_o, x->occupation,
                                           strlen(x->occupation)), RT_OK);
    }
    rt_features feats;
    rt_transform_features_init(&feats);
    rt_workspace *ws = rt_workspace_new();
    float logits[N_INST * 8];
    rt_err err = {{0}};
    assert_int_equal(rt_transform(g, b, &feats, &err), RT_OK);
    assert_int_equal(rt_forward(g, &feats, ws, logits, &err), RT_OK);
    assert_int_equal(rt_head_compute(g, logits, N_INST, o, &err), RT_OK);
    rt_workspace_free(ws);
    rt_transform_features_free(&feats);
    rt_batch_free(b);
}

/* The instances as a JSON list of objects (gender optionally as b64). */
static void instances_json(rt_buf *b, int gender_b64)
{
    rt_buf_puts(b, "[");
    for (size_t i = 0; i < N_INST; i++) {
        const inst *x = &INSTANCES[i];
        rt_buf_printf(b, "%s{\"age\": %g, \"hours\": %g, \"gender\": ", i ? ", " : "", x->age,
                      x->hours);
        if (gender_b64) {
            static const char tbl[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            const unsigned char *s = (const unsigned char *)x->gender;
            size_t n = strlen(x->gender);
            rt_buf_puts(b, "{\"b64\": \"");
            for (size_t k = 0; k < n; k += 3) {
                uint32_t v = (uint32_t)s[k] << 16;
                if (k + 1 < n)
                    v |= (uint32_t)s[k + 1] << 8;
                if (k + 2 < n)
                    v |= s[k + 2];
                char q[4] = {tbl[(v >> 18) & 63], tbl[(v >> 12) & 63],
                             k + 1 < n ? tbl[(v >> 6) & 63] : '=', k + 2 < n ? tbl[v & 63] : '='};
                rt_buf_append(b, q, 4);
            }
            rt_buf_puts(b, "\"}");
        } else {
            rt_buf_json_string(b, x->gender, strlen(x->gender));
        }
        rt_buf_puts(b, ", \"occupation\": ");
        rt_buf_json_string(b, x->occupation, strlen(x->occupation));
        rt_buf_puts(b, "}");
    }
    rt_buf_puts(b, "]");
}

/* A JSON number equals float v exactly once read back as a float. */
static void assert_float_item(const cJSON *j, float v)
{
    assert_true(cJSON_IsNumber(j));
    if ((float)j->valuedouble != v)
        fail_msg("JSON %.17g, want float %.9g", j->valuedouble, (double)v);
}

static void assert_float_list(const cJSON *j, const float *v, size_t n)
{
    assert_true(cJSON_IsArray(j));
    assert_int_equal(cJSON_GetArraySize(j), n);
    size_t k = 0;
    for (const cJSON *e = j->child; e; e = e->next, k++)
        assert_float_item(e, v[k]);
}

/* Checks one binary-classifier prediction object against o[i]. */
static void check_binary_prediction(const cJSON *p, const rt_outputs *o, size_t i)
{
    static const char *const keys[] = {"all_class_ids", "all_classes", "class_ids", "classes",
                                       "logistic", "logits", "probabilities"};
    assert_true(cJSON_IsObject(p));
    assert_int_equal(cJSON_GetArraySize(p), 7);
    size_t k = 0;
    for (const cJSON *e = p->child; e; e = e->next, k++)
        assert_string_equal(e->string, keys[k]); /* name order, as TF Serving */
    const cJSON *ids = cJSON_GetObjectItem(p, "all_class_ids");
    assert_int_equal(cJSON_GetArraySize(ids), 2);
    assert_int_equal(cJSON_GetArrayItem(ids, 1)->valueint, 1);
    const cJSON *all = cJSON_GetObjectItem(p, "all_classes");
    assert_string_equal(cJSON_GetArrayItem(all, 0)->valuestring, "no");
    assert_string_equal(cJSON_GetArrayItem(all, 1)->valuestring, "yes");
    const cJSON *cid = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "class_ids"), 0);
    assert_int_equal(cid->valueint, o->class_ids[i]);
    const cJSON *cls = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "classes"), 0);
    assert_string_equal(cls->valuestring, o->class_ids[i] ? "yes" : "no");
    assert_float_list(cJSON_GetObjectItem(p, "logistic"), o->logistic + i, 1);
    assert_float_list(cJSON_GetObjectItem(p, "logits"), o->logits + i, 1);
    assert_float_list(cJSON_GetObjectItem(p, "probabilities"), o->probabilities + 2 * i, 2);
}

static void test_predict_rows_match_pipeline(void **state)
{
    fixture *f = *state;
    rt_outputs ref;
    rt_head_outputs_init(&ref);
    reference(f->wd, &ref);
    rt_buf body;
    rt_buf_init(&body);
    rt_buf_puts(&body, "{\"instances\": ");
    instances_json(&body, 0);
    rt_buf_puts(&body, "}");
    cJSON *j = NULL;
    rt_err err = {{0}};
    assert_int_equal(run(f, f->wd, RT_METHOD_PREDICT, body.data, NULL, &j, &err), RT_OK);
    const cJSON *preds = cJSON_GetObjectItem(j, "predictions");
    assert_int_equal(cJSON_GetArraySize(preds), N_INST);
    for (size_t i = 0; i < N_INST; i++)
        check_binary_prediction(cJSON_GetArrayItem(preds, (int)i), &ref, i);
    cJSON_Delete(j);

    /* The same with gender as {"b64": ...}, and under signature "predict". */
    rt_buf_reset(&body);
    rt_buf_puts(&body, "{\"signature_name\": \"predict\", \"instances\": ");
    instances_json(&body, 1);
    rt_buf_puts(&body, "}");
    assert_int_equal(run(f, f->wd, RT_METHOD_PREDICT, body.data, NULL, &j, &err), RT_OK);
    preds = cJSON_GetObjectItem(j, "predictions");
    for (size_t i = 0; i < N_INST; i++)
        check_binary_prediction(cJSON_GetArrayItem(preds, (int)i), &ref, i);
    cJSON_Delete(j);
    rt_buf_free(&body);
    rt_head_outputs_free(&ref);
}

static void test_predict_columnar(void **state)
{
    fixture *f = *state;
    rt_outputs ref;
    rt_head_outputs_init(&ref);
    reference(f->wd, &ref);
    const char *body = "{\"inputs\": {\"age\": [25, 52, 17], \"hours\": [40, 60.5, 0],"
                       " \"gender\": [\"Male\", \"Female\", \"Other\"],"
                       " \"occupation\": [\"Tech-support\", \"Exec-managerial\", \"\"]}}";
    cJSON *j = NULL;
    rt_err err = {{0}};
    assert_int_equal(run(f, f->wd, RT_METHOD_PREDICT, body, NULL, &j, &err), RT_OK);
    const cJSON *outs = cJSON_GetObjectItem(j, "outputs");
    assert_true(cJSON_IsObject(outs));
    assert_int_equal(cJSON_GetArraySize(outs), 7);
    const cJSON *logistic = cJSON_GetObjectItem(outs, "logistic");
    const cJSON *probs = cJSON_GetObjectItem(outs, "probabilities");
    const cJSON *cids = cJSON_GetObjectItem(outs, "class_ids");
    assert_int_equal(cJSON_GetArraySize(logistic), N_INST);
    for (size_t i = 0; i < N_INST; i++) {
        assert_float_list(cJSON_GetArrayItem(logistic, (int)i), ref.logistic + i, 1);
        assert_float_list(cJSON_GetArrayItem(probs, (int)i), ref.probabilities + 2 * i, 2);
        assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(cids, (int)i), 0)->valueint,
                         ref.class_ids[i]);
    }
    cJSON_Delete(j);
    rt_head_outputs_free(&ref);
}

static void test_nan_and_infinity_tokens(void **state)
{
    fixture *f = *state;
    rt_err err = {{0}};
    const char *body = "{\"instances\": [{\"age\": NaN, \"hours\": Infinity, \"gender\": "
                       "\"Male\", \"occupation\": \"NaN\"}, {\"age\": -Infinity, \"hours\": 1,"
                       " \"gender\": \"Infinity\", \"occupation\": \"x\"}]}";
    assert_int_equal(run(f, f->wd, RT_METHOD_PREDICT, body, NULL, NULL, &err), RT_OK);
    /* A regressor with a finite input and a NaN: the NaN propagates and is
     * printed as TF Serving's NaN token; the finite one is a number. */
    rt_buf out;
    rt_buf_init(&out);
    const char *rb = "{\"instances\": [{\"a\": 1, \"b\": 2}, {\"a\": NaN, \"b\": 2}]}";
    assert_int_equal(rt_json_handle(f->reg, RT_METHOD_PREDICT, rb, strlen(rb), NULL, f->c, &out,
                                    &err), RT_OK);
    assert_non_null(strstr(out.data, "[NaN]"));
    rt_buf_free(&out);
}

static void test_request_errors(void **state)
{
    fixture *f = *state;
    const rt_model *m = f->wd;
    const rt_method P = RT_METHOD_PREDICT;
#define ROW "\"hours\": 1, \"gender\": \"Male\", \"occupation\": \"x\""
    expect_error(f, m, P, "{\"instances\": [{\"age\": 1, " ROW "}, {\"age\": 2, " ROW "},"
                 " {\"age\": 3, " ROW "}, {\"age\": \"abc\", " ROW "}]}", NULL, RT_ERR_INVALID,
                 "instances[3].age: expected a number, got \"abc\"");
    expect_error(f, m, P, "{\"instances\": [{\"age\": 1, \"bogus\": 2, " ROW "}]}", NULL,
                 RT_ERR_INVALID, "instances[0].bogus: unknown input");
    expect_error(f, m, P, "{\"instances\": [{\"age\": 1, \"age\": 2, " ROW "}]}", NULL,
                 RT_ERR_INVALID, "instances[0].age: given more than once");
    expect_error(f, m, P, "{\"instances\": [{\"age\": 1, \"hours\": 1, \"gender\": 5, "
                 "\"occupation\": \"x\"}]}", NULL, RT_ERR_INVALID,
                 "instances[0].gender: expected a string, got 5");
    expect_error(f, m, P, "{\"instances\": [{\"age\": [1, \"x\"], " ROW "}]}", NULL,
                 RT_ERR_INVALID, "instances[0].age[1]: expected a number, got \"x\"");
    expect_error(f, m, P, "{\"instances\": [{\"age\": true, " ROW "}]}", NULL,
                 RT_ERR_INVALID, "instances[0].age: expected a number, got true");
    expect_error(f, m, P, "{\"instances\": [3]}", NULL, RT_ERR_INVALID,
                 "instances[0]: expected an object keyed by input name");
    expect_error(f, m, P, "{\"instances\": [], \"inputs\": {}}", NULL, RT_ERR_INVALID,
                 "not both");
    expect_error(f, m, P, "{\"signature_name\": \"serving_default\"}", NULL, RT_ERR_INVALID,
                 "missing \"instances\" (rows) or \"inputs\" (columns) (Missing 'inputs' or "
                 "'instances' key)");
    expect_error(f, m, P, "{\"signature_name\": \"nope\", \"instances\": []}", NULL,
                 RT_ERR_INVALID, "signature_name \"nope\" not found");
    expect_error(f, m, P, "{\"instances\": [], \"instances\": []}", NULL, RT_ERR_INVALID,
                 "given twice");
    expect_error(f, m, P, "{\"instances\": [{\"age\": 1, ", NULL, RT_ERR_INVALID,
                 "not valid JSON");
    expect_error(f, m, P, "[1, 2]", NULL, RT_ERR_INVALID, "must be a JSON object");
    expect_error(f, m, P, "{\"instances\": {}}", NULL, RT_ERR_INVALID, "must be a list");
    expect_error(f, m, P, "{\"instances\": [{\"age\": 1, \"hours\": 1, \"gender\": "
                 "{\"b64\": \"@@@\"}, \"occupation\": \"x\"}]}", NULL, RT_ERR_INVALID,
                 "instances[0].gender: invalid base64");
    expect_error(f, m, P, "{\"inputs\": {\"age\": [1, 2], \"hours\": [1]}}", NULL,
                 RT_ERR_INVALID, "inputs.hours: 1 values, but inputs.age has 2");
    expect_error(f, m, P, "{\"inputs\": [1, 2]}", NULL, RT_ERR_INVALID,
                 "must be an object keyed by input name");
    /* The label and unused columns are ignored, not refused. */
    rt_err err = {{0}};
    assert_int_equal(run(f, m, P, "{\"instances\": [{\"age\": 1, \"label\": \"yes\", " ROW "}]}",
                         NULL, NULL, &err), RT_OK);
#undef ROW
}

static void test_limits(void **state)
{
    fixture *f = *state;
    rt_json_params p = rt_json_default_params();
    assert_int_equal(p.max_instances, 100000);
    assert_int_equal(p.max_depth, 64);
    /* Nesting deeper than max_depth. */
    rt_buf deep;
    rt_buf_init(&deep);
    rt_buf_puts(&deep, "{\"instances\": [");
    for (int k = 0; k < 100; k++)
        rt_buf_puts(&deep, "[");
    for (int k = 0; k < 100; k++)
        rt_buf_puts(&deep, "]");
    rt_buf_puts(&deep, "]}");
    expect_error(f, f->wd, RT_METHOD_PREDICT, deep.data, NULL, RT_ERR_LIMIT, "nested deeper");
    /* Brackets inside strings do not count. */
    rt_buf_reset(&deep);
    rt_buf_puts(&deep, "{\"instances\": [{\"age\": 1, \"hours\": 1, \"gender\": \"");
    for (int k = 0; k < 100; k++)
        rt_buf_puts(&deep, "[{");
    rt_buf_puts(&deep, "\", \"occupation\": \"x\"}]}");
    rt_err err = {{0}};
    assert_int_equal(run(f, f->wd, RT_METHOD_PREDICT, deep.data, NULL, NULL, &err), RT_OK);
    rt_buf_free(&deep);
    /* More instances than max_instances. */
    p.max_instances = 2;
    expect_error(f, f->wd, RT_METHOD_PREDICT, "{\"instances\": [{}, {}, {}]}", &p,
                 RT_ERR_LIMIT, "3 instances, the limit is 2");
    expect_error(f, f->wd, RT_METHOD_CLASSIFY, "{\"examples\": [{}, {}, {}]}", &p,
                 RT_ERR_LIMIT, "the limit is 2");
}

static void test_csv_and_example_receivers(void **state)
{
    fixture *f = *state;
    rt_outputs ref;
    rt_head_outputs_init(&ref);
    reference(f->wd, &ref);
    cJSON *j = NULL;
    rt_err err = {{0}};
    /* Bare CSV lines (one input), ", " separated as in the census files: the
     * leading spaces are trimmed by the model (trim_strings), so the answers
     * equal the JSON model's. The object form works too. */
    const char *csv = "{\"instances\": [\"25, 40, Male, Tech-support\","
                      " {\"csv_row\": \"52, 60.5, Female, Exec-managerial\"},"
                      " \"17, 0, Other, \"]}";
    assert_int_equal(run(f, f->wd_csv, RT_METHOD_PREDICT, csv, NULL, &j, &err), RT_OK);
    const cJSON *preds = cJSON_GetObjectItem(j, "predictions");
    assert_int_equal(cJSON_GetArraySize(preds), N_INST);
    for (size_t i = 0; i < N_INST; i++)
        check_binary_prediction(cJSON_GetArrayItem(preds, (int)i), &ref, i);
    cJSON_Delete(j);
    expect_error(f, f->wd_csv, RT_METHOD_PREDICT, "{\"instances\": [\"1, 2\"]}", NULL,
                 RT_ERR_INVALID, "instances[0]: csv_row: expected 4 values, got 2");
    expect_error(f, f->wd_csv, RT_METHOD_PREDICT, "{\"instances\": [\"x, 2, a, b\"]}", NULL,
                 RT_ERR_INVALID, "field 1 (age): expected a number, got \"x\"");

    /* tf.Example: instance 0 serialized with protobuf-c, sent as b64. */
    float age = 25, hours = 40;
    ProtobufCBinaryData gv = {4, (uint8_t *)"Male"}, ov = {12, (uint8_t *)"Tech-support"};
    Tensorflow__FloatList fa = TENSORFLOW__FLOAT_LIST__INIT, fh = TENSORFLOW__FLOAT_LIST__INIT;
    fa.n_value = fh.n_value = 1;
    fa.value = &age;
    fh.value = &hours;
    Tensorflow__BytesList bg = TENSORFLOW__BYTES_LIST__INIT, bo = TENSORFLOW__BYTES_LIST__INIT;
    bg.n_value = bo.n_value = 1;
    bg.value = &gv;
    bo.value = &ov;
    Tensorflow__Feature ft[4] = {TENSORFLOW__FEATURE__INIT, TENSORFLOW__FEATURE__INIT,
                                 TENSORFLOW__FEATURE__INIT, TENSORFLOW__FEATURE__INIT};
    ft[0].kind_case = ft[1].kind_case = TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
    ft[0].float_list = &fa;
    ft[1].float_list = &fh;
    ft[2].kind_case = ft[3].kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
    ft[2].bytes_list = &bg;
    ft[3].bytes_list = &bo;
    static const char *const names[4] = {"age", "hours", "gender", "occupation"};
    Tensorflow__Features__FeatureEntry ent[4], *entp[4];
    for (int k = 0; k < 4; k++) {
        tensorflow__features__feature_entry__init(&ent[k]);
        ent[k].key = (char *)names[k];
        ent[k].value = &ft[k];
        entp[k] = &ent[k];
    }
    Tensorflow__Features fs = TENSORFLOW__FEATURES__INIT;
    fs.n_feature = 4;
    fs.feature = entp;
    Tensorflow__Example ex = TENSORFLOW__EXAMPLE__INIT;
    ex.features = &fs;
    uint8_t pb[256];
    size_t len = tensorflow__example__get_packed_size(&ex);
    assert_true(len < sizeof pb);
    tensorflow__example__pack(&ex, pb);
    rt_buf body;
    rt_buf_init(&body);
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int form = 0; form < 3; form++) {
        rt_buf_reset(&body);
        rt_buf_puts(&body, form == 0 ? "{\"instances\": [{\"b64\": \""
                           : form == 1 ? "{\"instances\": [{\"example_proto\": {\"b64\": \""
                                       : "{\"signature_name\": \"classification\", "
                                         "\"instances\": [{\"inputs\": {\"b64\": \"");
        for (size_t k = 0; k < len; k += 3) {
            uint32_t v = (uint32_t)pb[k] << 16;
            if (k + 1 < len)
                v |= (uint32_t)pb[k + 1] << 8;
            if (k + 2 < len)
                v |= pb[k + 2];
            char q[4] = {tbl[(v >> 18) & 63], tbl[(v >> 12) & 63],
                         k + 1 < len ? tbl[(v >> 6) & 63] : '=', k + 2 < len ? tbl[v & 63] : '='};
            rt_buf_append(&body, q, 4);
        }
        rt_buf_puts(&body, form == 0 ? "\"}]}" : "\"}}]}");
        const rt_model *m = form == 2 ? f->wd : f->wd_ex;
        assert_int_equal(run(f, m, RT_METHOD_PREDICT, body.data, NULL, &j, &err), RT_OK);
        const cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "predictions"), 0);
        if (form < 2) {
            check_binary_prediction(p0, &ref, 0);
        } else {
            /* The classification signature: classes = all class names, scores. */
            assert_int_equal(cJSON_GetArraySize(p0), 2);
            const cJSON *cls = cJSON_GetObjectItem(p0, "classes");
            assert_string_equal(cJSON_GetArrayItem(cls, 1)->valuestring, "yes");
            assert_float_list(cJSON_GetObjectItem(p0, "scores"), ref.probabilities, 2);
        }
        cJSON_Delete(j);
    }
    expect_error(f, f->wd_ex, RT_METHOD_PREDICT, "{\"instances\": [{\"b64\": \"/w==\"}]}",
                 NULL, RT_ERR_INVALID, "instances[0]: example_proto: not a serialized");
    rt_buf_free(&body);
    rt_head_outputs_free(&ref);
}

static void test_classify_and_regress(void **state)
{
    fixture *f = *state;
    rt_outputs ref;
    rt_head_outputs_init(&ref);
    reference(f->wd, &ref);
    cJSON *j = NULL;
    rt_err err = {{0}};
    /* Context features apply to every example. */
    const char *body = "{\"examples\": [{\"age\": 25, \"hours\": 40, \"occupation\": "
                       "\"Tech-support\"}], \"context\": {\"gender\": \"Male\"}}";
    assert_int_equal(run(f, f->wd, RT_METHOD_CLASSIFY, body, NULL, &j, &err), RT_OK);
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0);
    assert_int_equal(cJSON_GetArraySize(r0), 2);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(r0, 0), 0)->valuestring, "no");
    assert_float_item(cJSON_GetArrayItem(cJSON_GetArrayItem(r0, 0), 1), ref.probabilities[0]);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(r0, 1), 0)->valuestring, "yes");
    assert_float_item(cJSON_GetArrayItem(cJSON_GetArrayItem(r0, 1), 1), ref.probabilities[1]);
    cJSON_Delete(j);
    /* Regress on a binary classifier's "regression" signature answers the
     * logistic; on its default signature (serving_default: TF's canned
     * classifiers export their classification signature there) it is refused
     * with TF Serving's message. */
    const char *named = "{\"signature_name\": \"regression\", \"examples\": [{\"age\": 25, "
                        "\"hours\": 40, \"occupation\": \"Tech-support\"}], \"context\": "
                        "{\"gender\": \"Male\"}}";
    assert_int_equal(run(f, f->wd, RT_METHOD_REGRESS, named, NULL, &j, &err), RT_OK);
    assert_float_item(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0), ref.logistic[0]);
    cJSON_Delete(j);
    expect_error(f, f->wd, RT_METHOD_REGRESS, body, NULL, RT_ERR_INVALID,
                 "(Expected regression signature method_name to be tensorflow/serving/regress. "
                 "Was: tensorflow/serving/classify)");
    expect_error(f, f->wd, RT_METHOD_REGRESS, body, NULL, RT_ERR_INVALID,
                 "name its \"regression\" signature");
    expect_error(f, f->wd, RT_METHOD_CLASSIFY, "{\"examples\": [{\"age\": 1, \"gender\": "
                 "\"Male\"}], \"context\": {\"gender\": \"Male\"}}", NULL, RT_ERR_INVALID,
                 "examples[0].gender: also given in context");
    expect_error(f, f->wd, RT_METHOD_CLASSIFY, "{\"examples\": [{\"age\": \"x\"}]}", NULL,
                 RT_ERR_INVALID, "examples[0].age: expected a number");
    expect_error(f, f->wd, RT_METHOD_CLASSIFY, "{\"instances\": []}", NULL, RT_ERR_INVALID,
                 "not \"instances\" or \"inputs\"; send {\"examples\": [...]}");
    /* A regressor: predictions, regress results, no classify. */
    assert_int_equal(run(f, f->reg, RT_METHOD_REGRESS, "{\"examples\": [{\"a\": 1, \"b\": 2}, "
                         "{\"a\": -1, \"b\": 0.5}]}", NULL, &j, &err), RT_OK);
    const cJSON *res = cJSON_GetObjectItem(j, "results");
    assert_int_equal(cJSON_GetArraySize(res), 2);
    double r1 = cJSON_GetArrayItem(res, 1)->valuedouble;
    cJSON_Delete(j);
    assert_int_equal(run(f, f->reg, RT_METHOD_PREDICT, "{\"instances\": [{\"a\": -1, "
                         "\"b\": 0.5}]}", NULL, &j, &err), RT_OK);
    /* One output: bare values per instance. */
    const cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "predictions"), 0);
    assert_true(cJSON_IsArray(p0));
    assert_true(cJSON_GetArrayItem(p0, 0)->valuedouble == r1);
    cJSON_Delete(j);
    expect_error(f, f->reg, RT_METHOD_CLASSIFY, "{\"examples\": []}", NULL, RT_ERR_INVALID,
                 "regressor");
    rt_head_outputs_free(&ref);
}

static void test_multiclass(void **state)
{
    fixture *f = *state;
    cJSON *j = NULL;
    rt_err err = {{0}};
    assert_int_equal(run(f, f->lin, RT_METHOD_PREDICT, "{\"instances\": [{\"x\": 0.5, "
                         "\"color\": \"green\"}, {\"x\": -2, \"color\": \"mauve\"}]}", NULL, &j,
                         &err), RT_OK);
    const cJSON *preds = cJSON_GetObjectItem(j, "predictions");
    for (const cJSON *p = preds->child; p; p = p->next) {
        assert_null(cJSON_GetObjectItem(p, "logistic"));
        const cJSON *pr = cJSON_GetObjectItem(p, "probabilities");
        assert_int_equal(cJSON_GetArraySize(pr), 3);
        double sum = 0, best = -1;
        int arg = -1, k = 0;
        for (const cJSON *e = pr->child; e; e = e->next, k++) {
            sum += e->valuedouble;
            if (e->valuedouble > best) {
                best = e->valuedouble;
                arg = k;
            }
        }
        assert_true(fabs(sum - 1.0) < 1e-6);
        const cJSON *cid = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "class_ids"), 0);
        assert_int_equal(cid->valueint, arg);
        static const char *const names[] = {"a", "b", "c"};
        assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "classes"), 0)->valuestring,
                            names[arg]);
    }
    cJSON_Delete(j);
    expect_error(f, f->lin, RT_METHOD_REGRESS, "{\"examples\": []}", NULL, RT_ERR_INVALID,
                 "multi-class");
}

static void test_metadata(void **state)
{
    fixture *f = *state;
    rt_buf out;
    rt_buf_init(&out);
    assert_int_equal(rt_json_metadata(f->wd, "census", 1700000000, &out), RT_OK);
    cJSON *j = cJSON_Parse(out.data);
    assert_non_null(j);
    const cJSON *spec = cJSON_GetObjectItem(j, "model_spec");
    assert_string_equal(cJSON_GetObjectItem(spec, "name")->valuestring, "census");
    assert_string_equal(cJSON_GetObjectItem(spec, "version")->valuestring, "1700000000");
    assert_string_equal(cJSON_GetObjectItem(spec, "signature_name")->valuestring, "");
    const cJSON *defs = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "signature_def"),
        "signature_def");
    const cJSON *sd = cJSON_GetObjectItem(defs, "serving_default");
    assert_non_null(sd);
    assert_non_null(cJSON_GetObjectItem(defs, "predict"));
    assert_string_equal(cJSON_GetObjectItem(sd, "method_name")->valuestring,
                        "tensorflow/serving/predict");
    const cJSON *age = cJSON_GetObjectItem(cJSON_GetObjectItem(sd, "inputs"), "age");
    assert_string_equal(cJSON_GetObjectItem(age, "dtype")->valuestring, "DT_FLOAT");
    assert_string_equal(cJSON_GetObjectItem(age, "name")->valuestring, "age:0");
    const cJSON *shape = cJSON_GetObjectItem(age, "tensor_shape");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(shape, "unknown_rank")));
    const cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItem(shape, "dim"), 0);
    assert_string_equal(cJSON_GetObjectItem(d0, "size")->valuestring, "-1");
    assert_string_equal(cJSON_GetObjectItem(d0, "name")->valuestring, "");
    const cJSON *gender = cJSON_GetObjectItem(cJSON_GetObjectItem(sd, "inputs"), "gender");
    assert_string_equal(cJSON_GetObjectItem(gender, "dtype")->valuestring, "DT_STRING");
    const cJSON *outs = cJSON_GetObjectItem(sd, "outputs");
    assert_int_equal(cJSON_GetArraySize(outs), 7);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(outs, "class_ids"),
                                            "dtype")->valuestring, "DT_INT64");
    cJSON_Delete(j);
    rt_buf_free(&out);
}

/* The signature list is what is served: a binary classifier answers
 * :regress (TF's binary head exports a "regression" signature, the
 * logistic), so its metadata lists "regression" — also for an export written
 * before predictd listed it (issue 22). */
static void test_regression_signature_listed(void **state)
{
    fixture *f = *state;
    /* an export whose model.pb has no regression signature, as older ones */
    Predictd__ModelDef *def = support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP);
    assert_non_null(def);
    size_t kept = 0;
    for (size_t k = 0; k < def->n_signatures; k++) {
        if (!strcmp(def->signatures[k]->name, "regression"))
            predictd__signature_def__free_unpacked(def->signatures[k], NULL);
        else
            def->signatures[kept++] = def->signatures[k];
    }
    assert_int_equal(kept, 3);
    def->n_signatures = kept;
    support_tensors st = {0};
    char base[600], path[1024];
    snprintf(base, sizeof base, "%s/old", f->dir);
    assert_int_equal(support_random_tensors(def, 11, 0.7f, &st), 0);
    assert_true(support_write_export(base, def, &st, 1700000000, path, sizeof path) > 0);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
    rt_model *old = NULL;
    rt_err err = {{0}};
    assert_int_equal(rt_model_open(path, &old, &err), RT_OK);
    const rt_model *models[] = {f->wd, old};
    for (size_t i = 0; i < 2; i++) {
        rt_buf out;
        rt_buf_init(&out);
        assert_int_equal(rt_json_metadata(models[i], "m", 1, &out), RT_OK);
        cJSON *j = cJSON_Parse(out.data);
        const cJSON *defs = cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "signature_def"),
            "signature_def");
        assert_int_equal(cJSON_GetArraySize(defs), 4);
        const cJSON *rg = cJSON_GetObjectItem(defs, "regression");
        assert_non_null(rg);
        assert_string_equal(cJSON_GetObjectItem(rg, "method_name")->valuestring,
                            "tensorflow/serving/regress");
        assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(rg, "inputs"), "inputs"));
        assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(rg, "outputs"), "outputs"));
        cJSON_Delete(j);
        rt_buf_free(&out);
        /* and it answers, by name, the logistic that :regress gives */
        cJSON *a = NULL, *b = NULL;
        static const char ex[] = "{\"examples\": [{\"age\": 31, \"hours\": 1, "
                                 "\"gender\": \"Male\", \"occupation\": \"x\"}]}";
        static const char named[] = "{\"signature_name\": \"regression\", \"examples\": "
                                    "[{\"age\": 31, \"hours\": 1, \"gender\": \"Male\", "
                                    "\"occupation\": \"x\"}]}";
        /* (not on the default signature: a classifier's, TF Serving refuses it) */
        expect_error(f, models[i], RT_METHOD_REGRESS, ex, NULL, RT_ERR_INVALID,
                     "Expected regression signature method_name to be "
                     "tensorflow/serving/regress. Was: tensorflow/serving/classify");
        static const char pred[] = "{\"instances\": [{\"age\": 31, \"hours\": 1, "
                                   "\"gender\": \"Male\", \"occupation\": \"x\"}]}";
        assert_int_equal(run(f, models[i], RT_METHOD_PREDICT, pred, NULL, &a, &err), RT_OK);
        assert_int_equal(run(f, models[i], RT_METHOD_REGRESS, named, NULL, &b, &err), RT_OK);
        const cJSON *lg = cJSON_GetArrayItem(cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(a, "predictions"), 0), "logistic"), 0);
        const cJSON *rg0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "results"), 0);
        assert_non_null(lg);
        assert_non_null(rg0);
        assert_true(lg->valuedouble == rg0->valuedouble);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    rt_model_close(old);
}

static void test_render_single_output(void **state)
{
    fixture *f = *state;
    const rt_graph *g = rt_model_graph(f->wd);
    rt_outputs ref;
    rt_head_outputs_init(&ref);
    reference(f->wd, &ref);
    Predictd__TensorSpec t = PREDICTD__TENSOR_SPEC__INIT, *tp = &t;
    t.name = "probabilities";
    Predictd__SignatureDef sig = PREDICTD__SIGNATURE_DEF__INIT;
    sig.name = "probs_only";
    sig.method_name = "tensorflow/serving/predict";
    sig.n_outputs = 1;
    sig.outputs = &tp;
    rt_buf out;
    rt_buf_init(&out);
    assert_int_equal(rt_json_render_predict(g, &sig, &ref, 0, &out), RT_OK);
    cJSON *j = cJSON_Parse(out.data);
    const cJSON *p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "predictions"), 1);
    assert_float_list(p1, ref.probabilities + 2, 2);
    cJSON_Delete(j);
    rt_buf_reset(&out);
    assert_int_equal(rt_json_render_predict(g, &sig, &ref, 1, &out), RT_OK);
    j = cJSON_Parse(out.data);
    const cJSON *o = cJSON_GetObjectItem(j, "outputs");
    assert_true(cJSON_IsArray(o));
    assert_float_list(cJSON_GetArrayItem(o, 2), ref.probabilities + 4, 2);
    cJSON_Delete(j);
    rt_buf_free(&out);
    rt_head_outputs_free(&ref);
}

/* Mutated requests (bytes replaced, inserted, deleted, truncated) never
 * crash (run it under ASan: make asan) and are either answered with valid
 * JSON or refused as invalid / over a limit with a message. Deterministic. */
static int utf8_ok(const char *s, size_t n);

static void test_mutated_bodies_refused_cleanly(void **state)
{
    fixture *f = *state;
    static const struct {
        int model; /* 0 wd, 1 wd_csv, 2 wd_ex, 3 reg */
        rt_method method;
        const char *body;
    } seeds[] = {
        {0, RT_METHOD_PREDICT, "{\"instances\": [{\"age\": 25, \"hours\": 40, \"gender\": "
                               "\"Male\", \"occupation\": [\"a\", \"b\"]}, {\"age\": [NaN], \"hours\": 1, "
                               "\"occupation\": \"c\", \"gender\": {\"b64\": \"TWFsZQ==\"}}]}"},
        {0, RT_METHOD_PREDICT, "{\"signature_name\": \"predict\", \"inputs\": {\"age\": [1, "
                               "-Infinity], \"hours\": [1, 2], \"occupation\": [\"a\", \"b\"], "
                               "\"gender\": [\"Male\", \"x\"]}}"},
        {0, RT_METHOD_CLASSIFY, "{\"examples\": [{\"age\": 3, \"hours\": 1e3}], \"context\": "
                                "{\"gender\": \"Female\"}}"},
        {1, RT_METHOD_PREDICT, "{\"instances\": [\"25, 40, Male, \\\"x, y\\\"\", "
                               "{\"csv_row\": \"1,2,3,4,yes\"}]}"},
        {2, RT_METHOD_PREDICT, "{\"instances\": [{\"b64\": \"Cg4KDAoDYWdlEgUaAwoBBw==\"}]}"},
        {3, RT_METHOD_REGRESS, "{\"examples\": [{\"a\": 1, \"b\": 2}, {\"a\": -1, \"b\": 0}]}"},
    };
    static const char alphabet[] = "{}[]\",:\\ 0123456789.-eENaIfnulltrb64=/+\x01\xc3\xff"
                                   "\xc0\xed\xe2\x80\x09";
    const rt_model *models[4] = {f->wd, f->wd_csv, f->wd_ex, f->reg};
    rt_json_params p = rt_json_default_params();
    p.max_depth = 8;
    p.max_instances = 50;
    uint64_t rs = 2024;
    rt_buf body, out;
    rt_buf_init(&body);
    rt_buf_init(&out);
    size_t answered = 0, refused = 0;
    for (int it = 0; it < 3000; it++) {
        size_t si = support_rand(&rs) % (sizeof seeds / sizeof seeds[0]);
        rt_buf_reset(&body);
        rt_buf_puts(&body, seeds[si].body);
        int muts = 1 + (int)(support_rand(&rs) % 4);
        for (int k = 0; k < muts && body.len > 0; k++) {
            size_t at = support_rand(&rs) % body.len;
            char ch = alphabet[support_rand(&rs) % (sizeof alphabet - 1)];
            switch (support_rand(&rs) % 4) {
            case 0: body.data[at] = ch; break;
            case 1: memmove(body.data + at, body.data + at + 1, body.len - at); body.len--; break;
            case 2:
                rt_buf_append(&body, "", 1);
                memmove(body.data + at + 1, body.data + at, body.len - at - 1);
                body.data[at] = ch;
                break;
            default: body.len = at; body.data[at] = '\0'; break;
            }
        }
        rt_buf_reset(&out);
        rt_err err = {{0}};
        rt_status st = rt_json_handle(models[seeds[si].model], seeds[si].method, body.data,
                                      body.len, &p, f->c, &out, &err);
        if (st == RT_OK) {
            answered++;
            if (!strstr(out.data, "NaN") && !strstr(out.data, "Infinity")) {
                cJSON *j = cJSON_Parse(out.data);
                if (!j)
                    fail_msg("answer to %s is not JSON: %s", body.data, out.data);
                cJSON_Delete(j);
            }
        } else {
            refused++;
            if ((st != RT_ERR_INVALID && st != RT_ERR_LIMIT) || err.msg[0] == '\0')
                fail_msg("body %s: status %d message \"%s\"", body.data, (int)st, err.msg);
            /* whatever bytes the body holds, the message is valid UTF-8 */
            if (!utf8_ok(err.msg, strlen(err.msg)))
                fail_msg("body %s: message is not valid UTF-8: %s", body.data, err.msg);
        }
    }
    /* Most mutations break the request; enough survive to exercise the
     * answering path (every instance must carry every input). */
    assert_true(answered > 50);
    assert_true(refused > 100);
    rt_buf_free(&body);
    rt_buf_free(&out);
}

/* ------------------------------------------------- strict JSON, UTF-8 */

/* 1 when the n bytes are valid UTF-8 (checked with an independent decoder:
 * code point ranges, not rt_buf_utf8_seq). */
static int utf8_ok(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t k;
        if (u[i] < 0x80) {
            i++;
            continue;
        } else if ((u[i] & 0xE0) == 0xC0) {
            cp = u[i] & 0x1Fu;
            k = 2;
        } else if ((u[i] & 0xF0) == 0xE0) {
            cp = u[i] & 0x0Fu;
            k = 3;
        } else if ((u[i] & 0xF8) == 0xF0) {
            cp = u[i] & 0x07u;
            k = 4;
        } else {
            return 0;
        }
        if (i + k > n)
            return 0;
        for (size_t j = 1; j < k; j++) {
            if ((u[i + j] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (u[i + j] & 0x3Fu);
        }
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k;
    }
    return 1;
}

static void test_utf8_seq_known_answers(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t n, want;
        const char *why;
    } cases[] = {
        {"a", 1, 1, NULL},
        {"\xc2\x80", 2, 2, NULL},             /* U+0080 */
        {"\xdf\xbf", 2, 2, NULL},             /* U+07FF */
        {"\xe0\xa0\x80", 3, 3, NULL},         /* U+0800 */
        {"\xed\x9f\xbf", 3, 3, NULL},         /* U+D7FF */
        {"\xee\x80\x80", 3, 3, NULL},         /* U+E000 */
        {"\xef\xbf\xbf", 3, 3, NULL},         /* U+FFFF */
        {"\xf0\x90\x80\x80", 4, 4, NULL},     /* U+10000 */
        {"\xf4\x8f\xbf\xbf", 4, 4, NULL},     /* U+10FFFF */
        {"\x80", 1, 0, "continuation"},
        {"\xbf", 1, 0, "continuation"},
        {"\xc0\xaf", 2, 0, "overlong"},
        {"\xc1\xbf", 2, 0, "overlong"},
        {"\xe0\x80\xaf", 3, 0, "overlong"},
        {"\xe0\x9f\xbf", 3, 0, "overlong"},
        {"\xf0\x80\x80\xaf", 4, 0, "overlong"},
        {"\xf0\x8f\xbf\xbf", 4, 0, "overlong"},
        {"\xed\xa0\x80", 3, 0, "surrogate"},
        {"\xed\xbf\xbf", 3, 0, "surrogate"},
        {"\xf4\x90\x80\x80", 4, 0, "U+10FFFF"},
        {"\xf5\x80\x80\x80", 4, 0, "U+10FFFF"},
        {"\xf7\xbf\xbf\xbf", 4, 0, "U+10FFFF"},
        {"\xf8\x88\x80\x80\x80", 5, 0, "never"},
        {"\xfe", 1, 0, "never"},
        {"\xff", 1, 0, "never"},
        {"\xc3", 1, 0, "truncated"},
        {"\xc3g", 2, 0, "truncated"},
        {"\xe2\x9c", 2, 0, "truncated"},
        {"\xe2\x9c\"", 3, 0, "truncated"},
        {"\xf0\x9f\x98", 3, 0, "truncated"},
        {"\xf0\x9f\x98\xc0", 4, 0, "truncated"},
        {"\xc3\xa9", 1, 0, "truncated"}, /* valid bytes, but only one available */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *why = NULL;
        size_t got = rt_buf_utf8_seq(cases[k].s, cases[k].n, &why);
        if (got != cases[k].want)
            fail_msg("case %zu: length %zu, want %zu", k, got, cases[k].want);
        if (cases[k].why && (!why || !strstr(why, cases[k].why)))
            fail_msg("case %zu: fault \"%s\", want \"%s\"", k, why ? why : "(none)",
                     cases[k].why);
    }
    /* Every 1..3-byte sequence against the independent decoder. */
    for (uint32_t v = 0; v < (1u << 24); v += (v < 0x10000 ? 1 : 61)) {
        char b[3] = {(char)(v >> 16), (char)(v >> 8), (char)v};
        size_t got = rt_buf_utf8_seq(b, 3, NULL);
        size_t want = 0;
        for (size_t n = 1; n <= 3 && !want; n++)
            if (utf8_ok(b, n))
                want = n;
        if ((unsigned char)b[0] < 0x80)
            want = 1;
        if (got != want)
            fail_msg("bytes %02x %02x %02x: length %zu, want %zu", (unsigned)(v >> 16) & 0xFF,
                     (unsigned)(v >> 8) & 0xFF, (unsigned)v & 0xFF, got, want);
    }
}

/* rt_buf_json_string: valid UTF-8 kept as it is, every other byte \ufffd, so
 * any bytes (a bad key, a model name from a URL) give valid UTF-8 JSON. */
static void test_json_string_always_valid(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"plain", 5, "\"plain\""},
        {"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", 14,
         "\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\""},
        {"a\xff" "b", 3, "\"a\\ufffdb\""},
        {"\xff\xfe", 2, "\"\\ufffd\\ufffd\""},
        {"\xc0\xaf", 2, "\"\\ufffd\\ufffd\""},
        {"x\xe2\x9c", 3, "\"x\\ufffd\\ufffd\""},
        {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""},
        {"ag\xc3", 3, "\"ag\\ufffd\""},
        {"q\"\\\n\x01\x7f", 6, "\"q\\\"\\\\\\n\\u0001\x7f\""},
    };
    rt_buf b;
    rt_buf_init(&b);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        rt_buf_reset(&b);
        assert_int_equal(rt_buf_json_string(&b, cases[k].in, cases[k].n), 0);
        if (strcmp(b.data, cases[k].want) != 0)
            fail_msg("case %zu: %s, want %s", k, b.data, cases[k].want);
    }
    /* Random bytes: always valid UTF-8 JSON; valid input reads back as is. */
    uint64_t rs = 77;
    for (int it = 0; it < 20000; it++) {
        char in[24];
        size_t n = support_rand(&rs) % sizeof in;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = support_rand(&rs);
            /* mostly high bytes, some ASCII (NUL aside: C strings below) */
            in[i] = (char)(r % 4 ? 0x80 + (r >> 8) % 0x80 : 1 + (r >> 8) % 0x7F);
        }
        rt_buf_reset(&b);
        assert_int_equal(rt_buf_json_string(&b, in, n), 0);
        if (!utf8_ok(b.data, b.len))
            fail_msg("iteration %d: output is not valid UTF-8", it);
        cJSON *j = cJSON_ParseWithLength(b.data, b.len);
        assert_non_null(j);
        assert_true(cJSON_IsString(j));
        if (utf8_ok(in, n))
            assert_true(strlen(j->valuestring) == n && memcmp(j->valuestring, in, n) == 0);
        cJSON_Delete(j);
    }
    rt_buf_free(&b);
}

#define ROW3 "\"hours\": 1, \"gender\": \"Male\", \"occupation\": \"x\""

/* Runs body (len bytes, may hold NUL) on wd: the status, and err. The
 * message must always be valid UTF-8. */
static rt_status run_len(fixture *f, const char *body, size_t len, rt_err *err)
{
    rt_buf out;
    rt_buf_init(&out);
    err->msg[0] = '\0';
    rt_status st = rt_json_handle(f->wd, RT_METHOD_PREDICT, body, len, NULL, f->c, &out, err);
    rt_buf_free(&out);
    if (st != RT_OK && !utf8_ok(err->msg, strlen(err->msg)))
        fail_msg("message is not valid UTF-8: %s", err->msg);
    return st;
}

static void test_strict_utf8_requests(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {
        "\xff", "\xfe", "\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xed\xa0\x80",
        "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xc3", "\xe2\x9c", "\xf0\x9f\x98",
    };
    static const char *const good[] = {
        "\xc2\x80", "\xed\x9f\xbf", "\xee\x80\x80", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",
        "\xef\xbb\xbf", "Priv\xc3\xa9 \xe2\x80\x93 \xe7\xa7\x81",
    };
    char body[256], want[128];
    rt_err err;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        /* in a value: the member and the exact byte */
        int pre = snprintf(body, sizeof body, "{\"instances\": [{\"age\": 1, " ROW3 "}, "
                           "{\"age\": 2, \"hours\": 1, \"gender\": \"ab");
        int n = pre + snprintf(body + pre, sizeof body - (size_t)pre, "%s\", \"occupation\": "
                               "\"x\"}]}", bad[k]);
        assert_int_equal(run_len(f, body, (size_t)n, &err), RT_ERR_INVALID);
        snprintf(want, sizeof want, "instances[1].gender: invalid UTF-8 at byte %d", pre);
        if (!strstr(err.msg, want))
            fail_msg("bad[%zu] in a value: \"%s\", want \"%s\"", k, err.msg, want);
        /* in a key */
        pre = snprintf(body, sizeof body, "{\"instances\": [{\"age\": 1, \"ge");
        n = pre + snprintf(body + pre, sizeof body - (size_t)pre, "%s\": 1}]}", bad[k]);
        assert_int_equal(run_len(f, body, (size_t)n, &err), RT_ERR_INVALID);
        snprintf(want, sizeof want, "instances[0] (in a key): invalid UTF-8 at byte %d", pre);
        if (!strstr(err.msg, want))
            fail_msg("bad[%zu] in a key: \"%s\", want \"%s\"", k, err.msg, want);
        /* in signature_name, at the top level */
        pre = snprintf(body, sizeof body, "{\"signature_name\": \"");
        n = pre + snprintf(body + pre, sizeof body - (size_t)pre, "%s\", \"instances\": []}",
                           bad[k]);
        assert_int_equal(run_len(f, body, (size_t)n, &err), RT_ERR_INVALID);
        snprintf(want, sizeof want, "signature_name: invalid UTF-8 at byte %d", pre);
        if (!strstr(err.msg, want))
            fail_msg("bad[%zu] in signature_name: \"%s\", want \"%s\"", k, err.msg, want);
    }
    /* the fault is named */
    const char *ov = "{\"instances\": [{\"gender\": \"\xc0\xaf\"}]}";
    assert_int_equal(run_len(f, ov, strlen(ov), &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "overlong"));
    const char *sur = "{\"instances\": [{\"gender\": \"\xed\xa0\x80\"}]}";
    assert_int_equal(run_len(f, sur, strlen(sur), &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "surrogate"));
    /* outside strings too */
    const char *outside = "{\"instances\": [{\"age\": 1\xc3\xa9}]}";
    assert_int_equal(run_len(f, outside, strlen(outside), &err), RT_ERR_INVALID);
    /* A long key of two-byte characters, cut for the message at an odd
     * byte: the message stays valid UTF-8 (run_len checks), in rows,
     * columns and at the top level. */
    static const char *const fmts[] = {"{\"instances\": [{\"a%s\": 1}]}",
                                       "{\"inputs\": {\"a%s\": [1]}}", "{\"a%s\": 1}"};
    char key[256];
    for (size_t k = 0; k < 100; k++)
        memcpy(key + 2 * k, "\xc3\xa9", 2);
    key[200] = '\0';
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        rt_buf lb;
        rt_buf_init(&lb);
        rt_buf_printf(&lb, fmts[k], key);
        assert_int_equal(run_len(f, lb.data, lb.len, &err), RT_ERR_INVALID);
        /* rows: an unknown input; columns and the top level: ignored,
         * so nothing the model reads is there */
        assert_true(strstr(err.msg, k == 0 ? "unknown" : "Missing") != NULL);
        rt_buf_free(&lb);
    }
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        int n = snprintf(body, sizeof body, "{\"instances\": [{\"age\": 1, \"hours\": 1, "
                         "\"gender\": \"%s\", \"occupation\": \"%s\"}]}", good[k], good[k]);
        if (run_len(f, body, (size_t)n, &err) != RT_OK)
            fail_msg("good[%zu] refused: %s", k, err.msg);
    }
}

static void test_strict_numbers(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *value, *want;
    } bad[] = {
        {"025", "instances[0].age: number 025 has a leading zero at byte 23: not valid JSON"},
        {"-01", "instances[0].age: number -01 has a leading zero"},
        {"00", "instances[0].age: number 00 has a leading zero"},
        {"00.5", "has a leading zero"},
        {"[1, 007]", "instances[0].age[1]: number 007 has a leading zero at byte 27"},
        {"1.", "instances[0].age: number 1. is malformed"},
        {"-.5", "instances[0].age: number -.5 is malformed"},
        {"1.e5", "is malformed"},
        {"1e", "is malformed"},
        {"1e+", "is malformed"},
        {"-", "is malformed"},
        {"1.5.5", "is malformed"},
        {"1e5e5", "is malformed"},
        {"--1", "is malformed"},
        {"1e400", "instances[0].age: number out of range: beyond a double's"},
        {"-1e400", "instances[0].age: number out of range: beyond a double's"},
        {"[1, 1e400]", "instances[0].age[1]: number out of range"},
        {"+1", "not valid JSON"},
        {".5", "not valid JSON"},
        {"0x19", "not valid JSON"},
    };
    char body[512];
    rt_err err;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int n = snprintf(body, sizeof body, "{\"instances\": [{\"age\": %s, " ROW3 "}]}",
                         bad[k].value);
        rt_status st = run_len(f, body, (size_t)n, &err);
        if (st != RT_ERR_INVALID || !strstr(err.msg, bad[k].want))
            fail_msg("%s: status %d \"%s\", want \"%s\"", bad[k].value, (int)st, err.msg,
                     bad[k].want);
    }
    /* 400 digits: beyond a double, refused (TF Serving's parser refuses it) */
    rt_buf big;
    rt_buf_init(&big);
    rt_buf_puts(&big, "{\"instances\": [{\"age\": ");
    for (int k = 0; k < 400; k++)
        rt_buf_puts(&big, "9");
    rt_buf_puts(&big, ", " ROW3 "}]}");
    assert_int_equal(run_len(f, big.data, big.len, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "instances[0].age: number out of range: beyond a double's"));
    rt_buf_free(&big);
    /* ... and numbers that are fine */
    static const char *const good[] = {
        "0", "-0", "0.5", "-0.0e-0", "0e5", "1E+2", "10", "3.4028234e38", "-3.4028234e38",
        "3.5e38", "-1.7976931348623157e308", /* beyond float32: ±inf, as TF converts */
        "1e-400", "25.000000000000000000000000000000000000000000000000000000000000000001",
        "NaN", "Infinity", "-Infinity", "[NaN, 1]",
    };
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        int n = snprintf(body, sizeof body, "{\"instances\": [{\"age\": %s, " ROW3 "}]}",
                         good[k]);
        rt_status st = run_len(f, body, (size_t)n, &err);
        /* [NaN, 1]: two values for a scalar, refused by the transform */
        if (k + 1 == sizeof good / sizeof good[0])
            assert_true(st == RT_ERR_INVALID && strstr(err.msg, "expected 1 value, got 2"));
        else if (st != RT_OK)
            fail_msg("%s refused: %s", good[k], err.msg);
    }
    /* Out of range in a column the model does not read: ignored, as the
     * rest of such a column. */
    const char *label = "{\"instances\": [{\"age\": 1, \"label\": 1e400, " ROW3 "}]}";
    assert_int_equal(run_len(f, label, strlen(label), &err), RT_OK);
}

static void test_control_characters(void **state)
{
    fixture *f = *state;
    char body[256], want[160];
    rt_err err;
    static const char ctl[] = {'\x01', '\t', '\n', '\x1f', '\0'};
    for (size_t k = 0; k < sizeof ctl; k++) {
        int pre = snprintf(body, sizeof body, "{\"instances\": [{\"age\": 1, \"hours\": 1, "
                           "\"occupation\": \"x\", \"gender\": \"a");
        body[pre] = ctl[k];
        int n = pre + 1 + snprintf(body + pre + 1, sizeof body - (size_t)pre - 1, "b\"}]}");
        assert_int_equal(run_len(f, body, (size_t)n, &err), RT_ERR_INVALID);
        snprintf(want, sizeof want, "instances[0].gender: raw control character U+%04X in a "
                 "string at byte %d: not valid JSON", (unsigned)(unsigned char)ctl[k], pre);
        if (!strstr(err.msg, want))
            fail_msg("control 0x%02x: \"%s\", want \"%s\"", (unsigned)(unsigned char)ctl[k],
                     err.msg, want);
    }
    /* in a key */
    const char *key = "{\"instances\": [{\"ge\x02nder\": \"x\"}]}";
    assert_int_equal(run_len(f, key, strlen(key), &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "instances[0] (in a key): raw control character U+0002"));
    /* escaped, they are fine; DEL (0x7F) is not a control character in JSON;
     * white space between tokens is fine */
    const char *ok = "{\"instances\":\t[{\"age\": 1,\n\"hours\": 1, \"gender\": \"a\\tb\\u0001"
                     "\x7f\", \"occupation\": \"x\"}]}\r\n";
    if (run_len(f, ok, strlen(ok), &err) != RT_OK)
        fail_msg("escaped controls refused: %s", err.msg);
}

static void test_tokens_stay_values(void **state)
{
    fixture *f = *state;
    rt_err err;
    /* The NaN marker never reaches a message. */
    const char *sig = "{\"signature_name\": NaN, \"instances\": []}";
    assert_int_equal(run_len(f, sig, strlen(sig), &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "\"signature_name\" must be a string, got NaN "
                        "('signature_name' key must be a string value.)");
    const char *inf = "{\"signature_name\": -Infinity, \"instances\": []}";
    assert_int_equal(run_len(f, inf, strlen(inf), &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "must be a string, got -Infinity"));
    /* A token after a comma in a list is a value ... */
    const char *list = "{\"instances\": [{\"age\": 1, " ROW3 "}, NaN]}";
    assert_int_equal(run_len(f, list, strlen(list), &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "instances[1]: expected an object keyed by input name"));
    assert_non_null(strstr(err.msg, "got NaN"));
    /* ... in a key's place it is not JSON at all */
    static const char *const keys[] = {
        "{NaN: 1}",
        "{\"instances\": [{NaN: 1}]}",
        "{\"instances\": [{\"age\": 1, Infinity: 2}]}",
        "{\"instances\": [], -Infinity: 2}",
    };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        assert_int_equal(run_len(f, keys[k], strlen(keys[k]), &err), RT_ERR_INVALID);
        if (!strstr(err.msg, "not valid JSON"))
            fail_msg("%s: \"%s\"", keys[k], err.msg);
    }
}

static void test_classify_regress_signatures(void **state)
{
    fixture *f = *state;
    rt_err err = {{0}};
    /* No such signature: said so, naming the ones the model has. */
    expect_error(f, f->lin, RT_METHOD_REGRESS, "{\"examples\": [{\"x\": 1}]}", NULL,
                 RT_ERR_INVALID, "regress: the model has no regression signature");
    assert_int_equal(run(f, f->lin, RT_METHOD_REGRESS, "{\"examples\": [{\"x\": 1}]}", NULL, NULL,
                         &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "classification, predict, serving_default"));
    expect_error(f, f->reg, RT_METHOD_CLASSIFY, "{\"examples\": [{\"a\": 1, \"b\": 2}]}", NULL,
                 RT_ERR_INVALID, "classify: the model has no classification signature");
    assert_int_equal(run(f, f->reg, RT_METHOD_CLASSIFY, "{\"examples\": []}", NULL, NULL, &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "regression"));
    assert_non_null(strstr(err.msg, "serving_default"));
    /* Errors found by the transform name the field the client sent. */
    static const char *const ex = "{\"examples\": [{\"age\": 1, " ROW3 "}, {\"age\": [1, 2], "
                                  ROW3 "}]}";
    expect_error(f, f->wd, RT_METHOD_CLASSIFY, ex, NULL, RT_ERR_INVALID,
                 "examples[1].age: expected 1 value, got 2");
    static const char *const rex = "{\"signature_name\": \"regression\", \"examples\": "
                                   "[{\"age\": 1, " ROW3 "}, {\"age\": [1, 2], " ROW3 "}]}";
    expect_error(f, f->wd, RT_METHOD_REGRESS, rex, NULL, RT_ERR_INVALID,
                 "examples[1].age: expected 1 value, got 2");
    expect_error(f, f->wd, RT_METHOD_PREDICT, "{\"instances\": [{\"age\": 1, " ROW3 "}, "
                 "{\"age\": [1, 2], " ROW3 "}]}", NULL, RT_ERR_INVALID,
                 "instances[1].age: expected 1 value, got 2");
}
/* Issue 17: JSON as TF Serving reads and writes it. */
static void test_tf_serving_json_rules(void **state)
{
    fixture *f = *state;
    rt_err err = {{0}};
    const rt_method P = RT_METHOD_PREDICT, C = RT_METHOD_CLASSIFY, R = RT_METHOD_REGRESS;
    rt_buf a, b;
    rt_buf_init(&a);
    rt_buf_init(&b);
    /* Unknown top-level keys are ignored: the same answer as without. */
    const char *plain = "{\"instances\": [{\"age\": 1, " ROW3 "}]}";
    const char *extra = "{\"extra\": {\"x\": [1, 2]}, \"instances\": [{\"age\": 1, " ROW3 "}], "
                        "\"model_spec\": 3}";
    assert_int_equal(rt_json_handle(f->wd, P, plain, strlen(plain), NULL, f->c, &a, &err), RT_OK);
    assert_int_equal(rt_json_handle(f->wd, P, extra, strlen(extra), NULL, f->c, &b, &err), RT_OK);
    assert_string_equal(a.data, b.data);
    const char *ex_extra = "{\"examples\": [{\"age\": 1, " ROW3 "}], \"foo\": null}";
    assert_int_equal(run(f, f->wd, C, ex_extra, NULL, NULL, &err), RT_OK);
    /* Columns the signature does not have are ignored. */
    const char *cols = "{\"inputs\": {\"age\": [1], \"hours\": [1], \"gender\": [\"Male\"], "
                       "\"occupation\": [\"x\"], \"zz\": [[1], {\"a\": 2}]}}";
    assert_int_equal(run(f, f->wd, P, cols, NULL, NULL, &err), RT_OK);
    /* Beyond float32: +-inf, as TF Serving converts a double to float32. */
    const char *big = "{\"instances\": [{\"a\": 3.5e38, \"b\": -1e300}]}";
    const char *inf = "{\"instances\": [{\"a\": Infinity, \"b\": -Infinity}]}";
    rt_buf_reset(&a);
    rt_buf_reset(&b);
    assert_int_equal(rt_json_handle(f->reg, P, big, strlen(big), NULL, f->c, &a, &err), RT_OK);
    assert_int_equal(rt_json_handle(f->reg, P, inf, strlen(inf), NULL, f->c, &b, &err), RT_OK);
    assert_string_equal(a.data, b.data);
    /* Floats always carry a fraction or an exponent (42.0, never 42). */
    cJSON *j = NULL;
    assert_int_equal(run(f, f->wd, P, plain, NULL, &j, &err), RT_OK);
    cJSON_Delete(j);
    rt_buf_reset(&a);
    assert_int_equal(rt_json_handle(f->wd, P, plain, strlen(plain), NULL, f->c, &a, &err), RT_OK);
    const char *pr = strstr(a.data, "\"probabilities\": [");
    assert_non_null(pr);
    pr += strlen("\"probabilities\": [");
    assert_true(strcspn(pr, ".e,]") < strcspn(pr, ",]")); /* a fraction or exponent */
    /* :classify / :regress naming a signature of another method: refused
     * with TF Serving's message; the right one works. */
    const char *ex = "{\"signature_name\": \"%s\", \"examples\": [{\"age\": 1, " ROW3 "}]}";
    char body[512];
    snprintf(body, sizeof body, ex, "predict");
    expect_error(f, f->wd, C, body, NULL, RT_ERR_INVALID, "Expected classification signature "
                 "method_name to be tensorflow/serving/classify. Was: tensorflow/serving/predict");
    snprintf(body, sizeof body, ex, "classification");
    expect_error(f, f->wd, R, body, NULL, RT_ERR_INVALID, "Expected regression signature "
                 "method_name to be tensorflow/serving/regress. Was: tensorflow/serving/classify");
    assert_int_equal(run(f, f->wd, C, body, NULL, NULL, &err), RT_OK);
    const char *reg = "{\"signature_name\": \"regression\", \"examples\": [{\"a\": 1, "
                      "\"b\": 2}]}";
    assert_int_equal(run(f, f->reg, R, reg, NULL, NULL, &err), RT_OK);
    /* TF Serving's fixed messages, beside predictd's detail. */
    expect_error(f, f->wd, P, "{\"instances\": [], \"inputs\": {}}", NULL, RT_ERR_INVALID,
                 "not both (Not formatted correctly expecting only one of 'inputs' or "
                 "'instances' keys to exist)");
    expect_error(f, f->wd, P, "{\"instances\": 5}", NULL, RT_ERR_INVALID,
                 "Expecting 'instances' to be an list/array");
    expect_error(f, f->wd, P, "{\"signature_name\": 5, \"instances\": []}", NULL,
                 RT_ERR_INVALID, "'signature_name' key must be a string value.");
    expect_error(f, f->wd, P, "{\"signature_name\": \"nope\", \"instances\": []}", NULL,
                 RT_ERR_INVALID, "Serving signature key \"nope\" not found.");
    expect_error(f, f->wd, P, " \n", NULL, RT_ERR_INVALID,
                 "JSON Parse error: The document is empty");
    expect_error(f, f->wd, C, "{\"context\": {}}", NULL, RT_ERR_INVALID,
                 "When method is classify, key 'examples' is expected and was not found");
    expect_error(f, f->wd, C, "{\"examples\": {}}", NULL, RT_ERR_INVALID,
                 "Expecting 'examples' value to be an list/array");
    expect_error(f, f->wd, P, "{\"instances\": [{\"age\": 1, \"bogus\": 2, " ROW3 "}]}", NULL,
                 RT_ERR_INVALID, "instances[0].bogus: unknown input; the model's inputs: ");
    expect_error(f, f->wd, P, "{\"instances\": [{\"age\": 1, \"bogus\": 2, " ROW3 "}]}", NULL,
                 RT_ERR_INVALID, "(JSON object: does not have named input: bogus)");
    /* Columnar errors name inputs.<name>, and every missing input. */
    expect_error(f, f->wd, P, "{\"inputs\": {\"age\": [1, [1, 2]], \"hours\": [1, 1], "
                 "\"gender\": [\"a\", \"b\"], \"occupation\": [\"x\", \"y\"]}}", NULL,
                 RT_ERR_INVALID, "inputs.age[1]: expected 1 value, got 2");
    expect_error(f, f->wd, P, "{\"inputs\": {\"age\": [1], \"hours\": [1]}}", NULL,
                 RT_ERR_INVALID, "not given: gender, occupation (Missing named input: ");
    expect_error(f, f->wd, P, "{\"inputs\": {\"zz\": [1]}}", NULL, RT_ERR_INVALID,
                 "inputs: none of the model's inputs is given");
    /* Rows name every input the instance lacks in one 400, not one per
     * request (issue 22); :classify's examples too; one alone stays as it was. */
    expect_error(f, f->wd, P, "{\"instances\": [{\"age\": 1, \"hours\": 1}]}", NULL,
                 RT_ERR_INVALID, "instances[0].gender: missing input; not given: gender, "
                 "occupation");
    expect_error(f, f->wd, P, "{\"instances\": [{" ROW3 ", \"age\": 1}, {\"hours\": 2}]}",
                 NULL, RT_ERR_INVALID, "instances[1].age: missing input; not given: age, gender, "
                 "occupation");
    /* (a string feature absent from a tf.Example is empty, not missing) */
    expect_error(f, f->wd, C, "{\"examples\": [{\"gender\": \"Male\"}]}", NULL, RT_ERR_INVALID,
                 "examples[0].age: missing input; not given: age, hours");
    rt_err one = {{0}};
    assert_int_equal(run(f, f->wd, P, "{\"instances\": [{\"age\": 1, \"hours\": 1, "
                                      "\"gender\": \"Male\"}]}", NULL, NULL, &one),
                     RT_ERR_INVALID);
    assert_string_equal(one.msg, "instances[0].occupation: missing input");
    /* :classify given "instances": says to send "examples". */
    expect_error(f, f->wd, C, "{\"instances\": [{\"age\": 1}]}", NULL, RT_ERR_INVALID,
                 "send {\"examples\": [...]}, or use :predict");
    rt_buf_free(&a);
    rt_buf_free(&b);
}

#undef ROW3

/* ------------------------------------------------- build/predict-model */

/* Runs a shell command; its stdout+stderr into out; returns the exit code. */
static int run_cmd(const char *cmd, rt_buf *out)
{
    rt_buf_reset(out);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        rt_buf_append(out, buf, n);
    int st = pclose(p);
    if (!out->data)
        rt_buf_puts(out, "");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The tool on the wide & deep export: its JSON answer is byte for byte
 * rt_json_handle's; table, transform and show print what they should; bad
 * arguments exit 2, bad models / instances exit 1 naming the line. Needs
 * the binary: skipped when run outside `make test` (no BUILD). */
static void test_predict_model_tool(void **state)
{
    fixture *f = *state;
    const char *build = getenv("BUILD");
    if (!build)
        skip();
    const char *root = getenv("PREDICTD_ROOT");
    char tool[1024], file[512], cmd[4096];
    snprintf(tool, sizeof tool, "%s/%s/predict-model", root ? root : ".", build);
    snprintf(file, sizeof file, "%s/instances.json", f->dir);
    rt_buf lines, out, want;
    rt_buf_init(&lines);
    rt_buf_init(&out);
    rt_buf_init(&want);
    instances_json(&lines, 0);
    /* One instance per line: the list's objects, split at "}, {". */
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    for (size_t i = 1; i + 1 < lines.len; i++) {
        if (lines.data[i] == ',' && lines.data[i - 1] == '}' && lines.data[i + 1] == ' ') {
            fputc('\n', fp);
            i++;
            continue;
        }
        fputc(lines.data[i], fp);
    }
    fputs("\n\n", fp); /* a blank line is skipped */
    fclose(fp);

    /* --format json == rt_json_handle on the same instances. */
    snprintf(cmd, sizeof cmd, "%s predict --model-dir %s/wd --json-instances %s --format json",
             tool, f->dir, file);
    assert_int_equal(run_cmd(cmd, &out), 0);
    rt_buf body;
    rt_buf_init(&body);
    rt_buf_puts(&body, "{\"instances\": ");
    rt_buf_append(&body, lines.data, lines.len);
    rt_buf_puts(&body, "}");
    rt_err err = {{0}};
    assert_int_equal(rt_json_handle(f->wd, RT_METHOD_PREDICT, body.data, body.len, NULL, f->c,
                                    &want, &err), RT_OK);
    rt_buf_puts(&want, "\n");
    assert_string_equal(out.data, want.data);

    /* Table: a header of upper-case outputs and one row per instance. */
    snprintf(cmd, sizeof cmd, "%s predict --model-dir %s/wd --json-instances %s", tool, f->dir,
             file);
    assert_int_equal(run_cmd(cmd, &out), 0);
    assert_true(strncmp(out.data, "ALL_CLASS_IDS  ALL_CLASSES", 26) == 0);
    assert_non_null(strstr(out.data, "CLASS_IDS"));
    assert_non_null(strstr(out.data, "LOGISTIC"));
    assert_non_null(strstr(out.data, "PROBABILITIES\n"));
    size_t nl = 0;
    for (size_t k = 0; k < out.len; k++)
        nl += out.data[k] == '\n';
    assert_int_equal(nl, 1 + N_INST);

    /* Transform: one JSON object per instance keyed by feature column. */
    snprintf(cmd, sizeof cmd, "%s transform --model-dir %s/wd --json-instances %s "
             "--format json", tool, f->dir, file);
    assert_int_equal(run_cmd(cmd, &out), 0);
    char *save = NULL;
    size_t i = 0;
    for (char *ln = strtok_r(out.data, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save), i++) {
        cJSON *j = cJSON_Parse(ln);
        assert_non_null(j);
        const cJSON *age = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "age"), "values");
        assert_true(cJSON_GetArrayItem(age, 0)->valuedouble == INSTANCES[i].age);
        /* gender vocabulary ["Female", "Male"]; "Other" has no id. */
        const cJSON *gid = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "gender"), "ids");
        if (i == 2)
            assert_int_equal(cJSON_GetArraySize(gid), 0);
        else
            assert_int_equal(cJSON_GetArrayItem(gid, 0)->valueint, i == 0 ? 1 : 0);
        size_t dim = 0;
        rt_graph_dnn_layout(rt_model_graph(f->wd), NULL, NULL, NULL, &dim);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "dnn_input")), dim);
        cJSON_Delete(j);
    }
    assert_int_equal(i, N_INST);

    /* Show. */
    snprintf(cmd, sizeof cmd, "%s show --dir %s/wd --all", tool, f->dir);
    assert_int_equal(run_cmd(cmd, &out), 0);
    assert_non_null(strstr(out.data, "signature_def['serving_default']:"));
    assert_non_null(strstr(out.data, "    inputs['age'] tensor_info:"));
    assert_non_null(strstr(out.data, "Method name is: tensorflow/serving/predict"));
    assert_non_null(strstr(out.data, "age_x_gender"));
    assert_non_null(strstr(out.data, "crossed_column"));
    snprintf(cmd, sizeof cmd, "%s show --dir %s/wd --signature_def nope 2>&1", tool, f->dir);
    assert_int_equal(run_cmd(cmd, &out), 1);
    assert_non_null(strstr(out.data, "\"nope\" not found"));

    /* Errors: usage -> 2, model / instance -> 1 with FILE:LINE. */
    snprintf(cmd, sizeof cmd, "%s 2>&1", tool);
    assert_int_equal(run_cmd(cmd, &out), 2);
    assert_non_null(strstr(out.data, "usage:"));
    snprintf(cmd, sizeof cmd, "%s predict --model-dir %s/wd 2>&1", tool, f->dir);
    assert_int_equal(run_cmd(cmd, &out), 2);
    snprintf(cmd, sizeof cmd, "%s predict --bogus 1 2>&1", tool);
    assert_int_equal(run_cmd(cmd, &out), 2);
    snprintf(cmd, sizeof cmd, "%s predict --help", tool);
    assert_int_equal(run_cmd(cmd, &out), 0);
    snprintf(cmd, sizeof cmd, "%s show --dir %s/none 2>&1", tool, f->dir);
    assert_int_equal(run_cmd(cmd, &out), 1);
    fp = fopen(file, "w");
    assert_non_null(fp);
    fputs("{\"age\": 1, \"hours\": 2, \"gender\": \"Male\", \"occupation\": \"x\"}\n"
          "\n{\"age\": \"abc\"}\n", fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "%s predict --model-dir %s/wd --json-instances %s 2>&1", tool,
             f->dir, file);
    assert_int_equal(run_cmd(cmd, &out), 1);
    assert_non_null(strstr(out.data, "instances.json:3: instances[1].age: expected a number"));
    rt_buf_free(&body);
    rt_buf_free(&lines);
    rt_buf_free(&out);
    rt_buf_free(&want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_rows_match_pipeline),
        cmocka_unit_test(test_predict_columnar),
        cmocka_unit_test(test_nan_and_infinity_tokens),
        cmocka_unit_test(test_request_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_csv_and_example_receivers),
        cmocka_unit_test(test_classify_and_regress),
        cmocka_unit_test(test_multiclass),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_regression_signature_listed),
        cmocka_unit_test(test_render_single_output),
        cmocka_unit_test(test_mutated_bodies_refused_cleanly),
        cmocka_unit_test(test_utf8_seq_known_answers),
        cmocka_unit_test(test_json_string_always_valid),
        cmocka_unit_test(test_strict_utf8_requests),
        cmocka_unit_test(test_strict_numbers),
        cmocka_unit_test(test_control_characters),
        cmocka_unit_test(test_tokens_stay_values),
        cmocka_unit_test(test_classify_regress_signatures),
        cmocka_unit_test(test_tf_serving_json_rules),
        cmocka_unit_test(test_predict_model_tool),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
