/*
 * pm_explain.c — predict-model explain: feature attributions for the
 * instances of a --json-instances file (or the :explain body of a
 * --json-request file), through the daemon's own code (rt_json_explain):
 * prints the answer predictd's :explain gives for the same body, byte for
 * byte (docs/explanations.md). --explanation-spec-override FILE adds a
 * Vertex AI explanationSpecOverride object to the instances' body; --method
 * METHOD one that names the method alone; --head NAME adds "head": NAME
 * (the head explained of a model with several heads).
 * --format table prints the same answer for a reader: per instance and
 * attribution (output, "<head>/<output>" of several heads), the output's
 * value and baseline, then the features from the largest |attribution| down.
 */
#include "pm.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct attr_row {
    const char *name;
    double v;
    size_t order;
} attr_row;

static int by_size(const void *a, const void *b)
{
    const attr_row *x = a, *y = b;
    double ax = fabs(x->v), ay = fabs(y->v);
    if (ax != ay)
        return ax < ay ? 1 : -1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* One attribution (an output of one instance) as a table into b. */
static void table_attribution(rt_buf *b, size_t inst, const cJSON *a)
{
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(a, "featureAttributions");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "outputName");
    const cJSON *disp = cJSON_GetObjectItemCaseSensitive(a, "outputDisplayName");
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(a, "outputIndex"), *x;
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(a, "instanceOutputValue");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(a, "baselineOutputValue");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(a, "approximationError");
    const cJSON *head = cJSON_GetObjectItemCaseSensitive(a, "head"); /* several heads */
    rt_buf_printf(b, "instance %zu: %s%s%s", inst, cJSON_IsString(head) ? head->valuestring : "",
                  cJSON_IsString(head) ? "/" : "",
                  cJSON_IsString(name) ? name->valuestring : "output");
    cJSON_ArrayForEach(x, idx)
    {
        rt_buf_printf(b, "[%g]", cJSON_GetNumberValue(x));
    }
    if (cJSON_IsString(disp) && *disp->valuestring)
        rt_buf_printf(b, " \"%s\"", disp->valuestring);
    rt_buf_printf(b, ": %.9g (baseline %.9g", cJSON_GetNumberValue(val),
                  cJSON_GetNumberValue(base));
    if (cJSON_IsNumber(err))
        rt_buf_printf(b, ", approximation error %.3g", err->valuedouble);
    rt_buf_puts(b, ")\n");
    size_t n = 0, w = 7; /* "FEATURE" */
    attr_row *rows = calloc((size_t)cJSON_GetArraySize(fa) + 1, sizeof *rows);
    if (!rows) {
        rt_buf_puts(b, "  (out of memory)\n");
        return;
    }
    cJSON_ArrayForEach(x, fa)
    {
        rows[n] = (attr_row){x->string, cJSON_IsNumber(x) ? x->valuedouble : NAN, n};
        if (strlen(x->string) > w)
            w = strlen(x->string);
        n++;
    }
    qsort(rows, n, sizeof *rows, by_size);
    rt_buf_printf(b, "  %-*s  %14s\n", (int)w, "FEATURE", "ATTRIBUTION");
    for (size_t k = 0; k < n; k++)
        rt_buf_printf(b, "  %-*s  %14.6g\n", (int)w, rows[k].name, rows[k].v);
    free(rows);
}

/* The :explain answer text ans as --format table into b; -1 when it is not
 * one (the JSON answer is printed instead). */
static int explain_table(const char *ans, size_t len, rt_buf *b)
{
    cJSON *root = cJSON_ParseWithLength(ans, len);
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(root, "explanations"), *e, *a;
    if (!cJSON_IsArray(ex)) {
        cJSON_Delete(root);
        return -1;
    }
    size_t inst = 0;
    cJSON_ArrayForEach(e, ex)
    {
        inst++;
        cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(e, "attributions"))
        {
            if (b->len)
                rt_buf_puts(b, "\n");
            table_attribution(b, inst, a);
        }
    }
    cJSON_Delete(root);
    return rt_buf_failed(b) ? -1 : 0;
}

int pm_cmd_explain(const pm_opts *o)
{
    int ret = 1;
    rt_buf out, body;
    rt_buf_init(&out);
    rt_buf_init(&body);
    pm_instances in;
    memset(&in, 0, sizeof in);
    rt_ctx *c = NULL;
    char *text = NULL, *spec = NULL;
    size_t len = 0;
    rt_err err = {{0}};
    rt_model *m = pm_open_model(o->dir, NULL);
    if (!m)
        goto out;
    rt_json_params p = rt_json_default_params();
    p.max_explain_instances = 0; /* local: as many as the file holds */
    if (o->json_request) {
        rt_status st =
            rt_file_read(AT_FDCWD, strcmp(o->json_request, "-") ? o->json_request : "/dev/stdin",
                         (size_t)1 << 30, RT_READ_ANY_FILE, &text, &len, &err);
        if (st != RT_OK) {
            fprintf(stderr, "predict-model: %s\n", err.msg);
            goto out;
        }
        rt_buf_append(&body, text, len);
    } else {
        if (pm_read_instances(o->instances, NULL, &in) != 0)
            goto out;
        if (in.count > p.max_instances)
            p.max_instances = in.count;
        rt_buf_append(&body, in.body.data, in.body.len);
        if (o->xai_head) { /* {"instances": [...]} -> {"instances": [...], "head": NAME} */
            while (body.len > 0 && body.data[body.len - 1] != '}')
                body.len--;
            if (body.len > 0)
                body.len--;
            rt_buf_puts(&body, ", \"head\": ");
            rt_buf_json_string(&body, o->xai_head, strlen(o->xai_head));
            rt_buf_puts(&body, "}");
        }
        if (o->xai_override || o->xai_method) {
            size_t slen = 0;
            rt_status st = RT_OK;
            if (o->xai_override) {
                st = rt_file_read(AT_FDCWD, o->xai_override, (size_t)1 << 20, 0, &spec, &slen,
                                  &err);
            } else { /* --method: an override naming the method alone */
                const char *mn = o->xai_method;
                const char *key = !strcmp(mn, "exact")       ? "exactShapleyAttribution"
                                  : !strcmp(mn, "sampled")   ? "sampledShapleyAttribution"
                                  : !strcmp(mn, "gradients") ? "integratedGradientsAttribution"
                                                            : "treeShapAttribution";
                rt_buf sb;
                rt_buf_init(&sb);
                rt_buf_printf(&sb, "{\"parameters\": {\"%s\": {}}}", key);
                spec = sb.data;
                slen = sb.len;
                if (!spec) {
                    fprintf(stderr, "predict-model: out of memory\n");
                    goto out;
                }
            }
            if (st != RT_OK) {
                fprintf(stderr, "predict-model: %s\n", err.msg);
                goto out;
            }
            /* {"instances": [...]} -> {"instances": [...], "explanationSpecOverride": X} */
            while (body.len > 0 && body.data[body.len - 1] != '}')
                body.len--;
            if (body.len > 0)
                body.len--;
            rt_buf_puts(&body, ", \"explanationSpecOverride\": ");
            rt_buf_append(&body, spec, slen);
            rt_buf_puts(&body, "}");
        }
    }
    if (rt_buf_failed(&body) || !(c = rt_ctx_new())) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    size_t evals = 0;
    double t0 = rt_time_seconds(0);
    rt_status st = rt_json_explain(m, body.data, body.len, &p, c, &out, &evals, &err);
    double dt = rt_time_seconds(0) - t0;
    if (st != RT_OK) {
        if (o->json_request)
            fprintf(stderr, "predict-model: %s: %s\n", o->json_request, err.msg);
        else
            pm_report_error(o->instances, rt_model_graph(m), &in, err.msg);
        goto out;
    }
    if (o->format && strcmp(o->format, "table") == 0) {
        rt_buf t;
        rt_buf_init(&t);
        if (explain_table(out.data, out.len, &t) == 0) {
            rt_buf_free(&out);
            out = t; /* printed below, the newline after it dropped */
            if (out.len)
                out.len--;
        } else {
            rt_buf_free(&t);
        }
    }
    if (fwrite(out.data, 1, out.len, stdout) != out.len || fputc('\n', stdout) == EOF ||
        fflush(stdout) != 0) {
        fprintf(stderr, "predict-model: writing the answer: %s\n", strerror(errno));
        goto out;
    }
    if (o->timing)
        fprintf(stderr, "explained in %.6f s, %zu model rows\n", dt, evals);
    ret = 0;
out:
    rt_ctx_free(c);
    rt_model_close(m);
    pm_instances_free(&in);
    rt_buf_free(&out);
    rt_buf_free(&body);
    free(text);
    free(spec);
    return ret;
}
