/*
 * pm_predict.c — predict-model predict: runs the model on a
 * --json-instances file, as gcloud ml-engine local predict does, through
 * the daemon's own request path (rt_json_handle), and prints the answer as
 * a table (one upper-case column per output) or as TensorFlow Serving's
 * JSON; with --v2-request, the answer predictd sends for an Open Inference
 * Protocol body, byte for byte.
 */
#include "pm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* Appends v as compact JSON text: numbers shortest, strings quoted. */
static int put_cell(rt_buf *b, const cJSON *v)
{
    if (cJSON_IsArray(v)) {
        int rc = rt_buf_puts(b, "[");
        for (const cJSON *e = v->child; e; e = e->next) {
            rc |= put_cell(b, e);
            if (e->next)
                rc |= rt_buf_puts(b, ", ");
        }
        return rc | rt_buf_puts(b, "]");
    }
    if (cJSON_IsNumber(v))
        return rt_buf_json_double(b, v->valuedouble);
    if (cJSON_IsString(v))
        return rt_buf_json_string(b, v->valuestring, strlen(v->valuestring));
    char *s = cJSON_PrintUnformatted(v);
    int rc = rt_buf_puts(b, s ? s : "?");
    free(s);
    return rc;
}

/* Prints {"predictions": [...]} as a table: one upper-case column per
 * output, one row per instance. */
static int print_table(const char *answer)
{
    cJSON *j = cJSON_Parse(answer);
    const cJSON *preds = cJSON_GetObjectItemCaseSensitive(j, "predictions");
    if (!cJSON_IsArray(preds)) {
        /* NaN tokens are not JSON cJSON reads: fall back to the JSON text. */
        printf("%s\n", answer);
        cJSON_Delete(j);
        return 0;
    }
    size_t n = (size_t)cJSON_GetArraySize(preds);
    const cJSON *first = preds->child;
    size_t ncol = 0;
    int bare = first && !cJSON_IsObject(first);
    if (bare)
        ncol = 1;
    else if (first)
        ncol = (size_t)cJSON_GetArraySize(first);
    rt_buf *cells = calloc((n + 1) * (ncol ? ncol : 1), sizeof *cells);
    size_t *w = calloc(ncol ? ncol : 1, sizeof *w);
    int rc = (!cells || !w) ? -1 : 0;
    for (size_t k = 0; rc == 0 && k < ncol; k++) {
        rt_buf *h = &cells[k];
        rt_buf_init(h);
        const char *name = bare ? "PREDICTIONS" : cJSON_GetArrayItem(first, (int)k)->string;
        for (const char *p = name; *p; p++) {
            char ch = (*p >= 'a' && *p <= 'z') ? (char)(*p - 'a' + 'A') : *p;
            rc |= rt_buf_append(h, &ch, 1);
        }
    }
    size_t i = 0;
    for (const cJSON *row = preds->child; rc == 0 && row; row = row->next, i++) {
        for (size_t k = 0; k < ncol; k++) {
            rt_buf *c = &cells[(i + 1) * ncol + k];
            rt_buf_init(c);
            const cJSON *v = bare ? row : cJSON_GetArrayItem(row, (int)k);
            rc |= v ? put_cell(c, v) : rt_buf_puts(c, "");
        }
    }
    for (size_t r = 0; rc == 0 && r <= n; r++)
        for (size_t k = 0; k < ncol; k++)
            if (cells[r * ncol + k].len > w[k])
                w[k] = cells[r * ncol + k].len;
    for (size_t r = 0; rc == 0 && r <= n; r++) {
        for (size_t k = 0; k < ncol; k++) {
            const rt_buf *c = &cells[r * ncol + k];
            if (k + 1 < ncol)
                printf("%-*s  ", (int)w[k], c->data ? c->data : "");
            else
                printf("%s", c->data ? c->data : "");
        }
        printf("\n");
    }
    if (cells)
        for (size_t r = 0; r < (n + 1) * ncol; r++)
            rt_buf_free(&cells[r]);
    free(cells);
    free(w);
    cJSON_Delete(j);
    if (rc)
        fprintf(stderr, "predict-model: out of memory\n");
    return rc ? 1 : 0;
}

/* predict --v2-request: the answer predictd sends for an infer body. */
static int cmd_predict_v2(const pm_opts *o)
{
    int ret = 1;
    char *body = NULL, *path = NULL;
    size_t len = 0, hlen = RT_V2_NO_HEADER;
    rt_buf out;
    rt_buf_init(&out);
    rt_ctx *c = NULL;
    rt_model *m = NULL;
    rt_err err = {{0}};
    if (o->v2_header) {
        char *end = NULL;
        unsigned long long n = strtoull(o->v2_header, &end, 10);
        if (!*o->v2_header || *end || o->v2_header[0] == '-' || n >= RT_V2_FIND_HEADER) {
            fprintf(stderr, "predict-model: --v2-header-length \"%s\" is not a number of "
                            "bytes\n", o->v2_header);
            return PM_EXIT_USAGE;
        }
        hlen = (size_t)n;
    }
    rt_status st = pm_resolve_export(o->dir, &path, &err);
    if (st == RT_OK)
        st = rt_model_open(path, &m, &err);
    if (st != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        goto out;
    }
    /* the version predictd would report: the export directory's name */
    const char *base = strrchr(path, '/');
    int64_t version = -1;
    if (!rt_model_version_parse(base ? base + 1 : path, &version))
        version = -1;
    if ((st = rt_file_read(AT_FDCWD, o->v2_request, (size_t)1 << 31, RT_READ_ANY_FILE, &body,
                           &len, &err)) != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        goto out;
    }
    if (!(c = rt_ctx_new())) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    st = rt_v2_handle(m, o->model_name, version, body, len, hlen, NULL, c, &out, &err);
    if (st != RT_OK) {
        fprintf(stderr, "predict-model: %s: %s\n", o->v2_request, err.msg);
        goto out;
    }
    if (rt_v2_answer_header_len(c))
        fprintf(stderr, "Inference-Header-Content-Length: %zu\n", rt_v2_answer_header_len(c));
    if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(stderr, "predict-model: writing the answer: %s\n", strerror(errno));
        goto out;
    }
    ret = 0;
out:
    rt_buf_free(&out);
    rt_ctx_free(c);
    rt_model_close(m);
    free(body);
    free(path);
    return ret;
}

int pm_cmd_predict(const pm_opts *o)
{
    if (o->v2_request)
        return cmd_predict_v2(o);
    int ret = 1;
    rt_buf out;
    rt_buf_init(&out);
    pm_instances in;
    memset(&in, 0, sizeof in);
    rt_ctx *c = NULL;
    rt_model *m = pm_open_model(o->dir, NULL);
    if (!m)
        goto out;
    if (pm_read_instances(o->instances, o->signature, &in) != 0)
        goto out;
    c = rt_ctx_new();
    if (!c) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    rt_err err = {{0}};
    rt_json_params p = rt_json_default_params();
    if (in.count > p.max_instances)
        p.max_instances = in.count;
    rt_status st = rt_json_handle(m, RT_METHOD_PREDICT, in.body.data, in.body.len, &p, c, &out,
                                  &err);
    if (st != RT_OK) {
        pm_report_error(o->instances, rt_model_graph(m), &in, err.msg);
        goto out;
    }
    if (o->format && strcmp(o->format, "json") == 0) {
        printf("%s\n", out.data);
        ret = 0;
    } else {
        ret = print_table(out.data);
    }
out:
    rt_ctx_free(c);
    rt_model_close(m);
    pm_instances_free(&in);
    rt_buf_free(&out);
    return ret;
}

