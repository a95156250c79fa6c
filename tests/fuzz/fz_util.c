/*
 * fz_util.c — helpers shared by the fuzz targets (see fz_util.h): the
 * repository root, reading seed files, the fuzzing model opened once, and
 * the packed-export layout used by fuzz_export_load.
 */
#include "fz_util.h"
#include "rt_model_internal.h"

#include <cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void fz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: fuzz check failed: %s\n", file, line, what);
    abort();
}

void fz_note(const char *what, rt_status st, const rt_err *err)
{
    if (!getenv("FZ_VERBOSE"))
        return;
    fprintf(stderr, "  %s: %s%s%s\n", what, rt_err_status_str(st), st != RT_OK && err ? ": " : "",
            st != RT_OK && err ? err->msg : "");
}

const char *fz_root(void)
{
    const char *r = getenv("PREDICTD_ROOT");
    return r && *r ? r : ".";
}

int fz_read_file(const char *relpath, uint8_t **data, size_t *len)
{
    char path[4096];
    *data = NULL;
    *len = 0;
    int w = snprintf(path, sizeof path, "%s/%s", fz_root(), relpath);
    if (w < 0 || (size_t)w >= sizeof path) {
        fprintf(stderr, "fuzz: path too long: %s\n", relpath);
        return -1;
    }
    char *text = NULL;
    rt_err err;
    if (rt_file_read(AT_FDCWD, path, (size_t)1 << 30, 0, &text, len, &err) != RT_OK) {
        fprintf(stderr, "fuzz: %s\n", err.msg);
        return -1;
    }
    *data = (uint8_t *)text;
    return 0;
}

const rt_model *fz_model(fz_model_kind kind)
{
    /* Opened once and kept for the whole process (see fz_util.h). */
    static rt_model *models[3];
    static const char *const pb_files[3] = {
        "tests/fuzz/model/model.pb",
        "tests/fuzz/model/model_csv.pb",
        "tests/fuzz/model/model_example.pb",
    };
    if ((unsigned)kind > 2)
        fz_fail(__FILE__, __LINE__, "fz_model: bad kind");
    if (models[kind])
        return models[kind];
    uint8_t *pb = NULL, *vars = NULL;
    size_t pb_len = 0, vars_len = 0;
    if (fz_read_file(pb_files[kind], &pb, &pb_len) != 0 ||
        fz_read_file("tests/fuzz/model/variables.bin", &vars, &vars_len) != 0)
        fz_fail(__FILE__, __LINE__, "fuzzing model missing (set PREDICTD_ROOT)");
    rt_err err;
    err.msg[0] = '\0';
    if (rt_model_open_buffers(pb, pb_len, vars, vars_len, &models[kind], &err) != RT_OK) {
        fprintf(stderr, "fuzz: %s: %s\n", pb_files[kind], err.msg);
        fz_fail(__FILE__, __LINE__, "fuzzing model refused");
    }
    free(pb);
    free(vars);
    return models[kind];
}

void fz_unpack_export(const uint8_t *data, size_t size, const uint8_t **pb, size_t *pb_len,
                      const uint8_t **vars, size_t *vars_len)
{
    *pb = data;
    *pb_len = 0;
    *vars = data;
    *vars_len = 0;
    if (size < 4)
        return;
    uint32_t n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                 (uint32_t)data[3] << 24;
    size_t rest = size - 4;
    *pb = data + 4;
    *pb_len = n < rest ? n : rest;
    *vars = data + 4 + *pb_len;
    *vars_len = rest - *pb_len;
}

int fz_run_batch(const rt_graph *g, const rt_batch *b)
{
    rt_features f;
    rt_outputs o;
    rt_workspace *ws = rt_workspace_new();
    float *logits = NULL;
    rt_err err;
    int rc = -1;
    size_t n = rt_batch_size(b);
    rt_transform_features_init(&f);
    rt_head_outputs_init(&o);
    FZ_CHECK(ws != NULL, "out of memory");
    err.msg[0] = '\0';
    rt_status tst = rt_transform(g, b, &f, &err);
    fz_note("transform", tst, &err);
    if (tst != RT_OK) {
        FZ_CHECK(err.msg[0] != '\0', "transform refused a batch without a message");
        goto out;
    }
    FZ_CHECK(f.n == n, "transform changed the batch size");
    size_t ld = rt_graph_logits_dim(g);
    logits = calloc(n * ld + 1, sizeof *logits);
    FZ_CHECK(logits != NULL, "out of memory");
    err.msg[0] = '\0';
    rt_status fst = rt_forward(g, &f, ws, logits, &err);
    fz_note("forward", fst, &err);
    if (fst != RT_OK && g->onnx && fst == RT_ERR_INVALID && strncmp(err.msg, "instances[", 10) == 0)
        goto out; /* an ONNX OneHotEncoder of zeros 0 refuses an unknown category, as ONNX
                   * Runtime: the instance is bad, not the model (rt_onnx_run.c) */
    if (fst != RT_OK)
        fprintf(stderr, "fuzz: forward: %s\n", err.msg);
    FZ_CHECK(fst == RT_OK, "forward failed on a transformed batch");
    FZ_CHECK(rt_head_compute(g, logits, n, &o, &err) == RT_OK, "head failed");
    FZ_CHECK(o.n == n, "head output count");
    /* an ONNX ai.onnx.ml classifier's probabilities are its scores as the
     * operator computes them (ONNX Runtime's [-s, s], a logistic per class):
     * only the class ids are checked */
    bool scores = g->onnx && g->onnx->ml_probs;
    for (size_t i = 0; i < n && o.probabilities && !scores; i++) {
        double sum = 0;
        int finite = 1;
        for (size_t k = 0; k < ld; k++)
            finite = finite && isfinite(logits[i * ld + k]);
        for (size_t k = 0; k < o.n_classes; k++) {
            float p = o.probabilities[i * o.n_classes + k];
            if (finite)
                FZ_CHECK(p >= 0.0f && p <= 1.0f, "probability outside [0, 1]");
            sum += p;
        }
        if (finite)
            FZ_CHECK(fabs(sum - 1.0) < 1e-3, "probabilities do not sum to 1");
        if (finite && o.class_ids)
            FZ_CHECK(o.class_ids[i] >= 0 && (size_t)o.class_ids[i] < o.n_classes,
                     "class id out of range");
    }
    for (size_t i = 0; i < n && scores; i++)
        FZ_CHECK(o.class_ids[i] >= 0 && (size_t)o.class_ids[i] < o.n_classes,
                 "class id out of range");
    rc = 0;
out:
    free(logits);
    rt_head_outputs_free(&o);
    rt_transform_features_free(&f);
    rt_workspace_free(ws);
    return rc;
}

char *fz_cstr(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

int fz_json_valid(const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    FZ_CHECK(copy != NULL, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = copy[i];
        if (in_str) {
            if (ch == '\\' && i + 1 < len)
                i++;
            else if (ch == '"')
                in_str = 0;
        } else if (ch == '"') {
            in_str = 1;
        } else if (len - i >= 3 && !memcmp(copy + i, "NaN", 3)) {
            memcpy(copy + i, "0  ", 3);
            i += 2;
        } else if (len - i >= 8 && !memcmp(copy + i, "Infinity", 8)) {
            memcpy(copy + i, "0       ", 8);
            i += 7;
        }
    }
    cJSON *j = cJSON_ParseWithLength(copy, len);
    int ok = j != NULL;
    cJSON_Delete(j);
    free(copy);
    return ok;
}
