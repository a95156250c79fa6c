/*
 * pm_explain.c — predict-model explain: feature attributions for the
 * instances of a --json-instances file (or the :explain body of a
 * --json-request file), through the daemon's own code (rt_json_explain):
 * prints the answer predictd's :explain gives for the same body, byte for
 * byte (docs/explanations.md). --explanation-spec-override FILE adds a
 * Vertex AI explanationSpecOverride object to the instances' body; --method
 * METHOD one that names the method alone.
 */
#include "pm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
            rt_read_file(AT_FDCWD, strcmp(o->json_request, "-") ? o->json_request : "/dev/stdin",
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
        if (o->xai_override || o->xai_method) {
            size_t slen = 0;
            rt_status st = RT_OK;
            if (o->xai_override) {
                st = rt_read_file(AT_FDCWD, o->xai_override, (size_t)1 << 20, 0, &spec, &slen,
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
    double t0 = rt_seconds(0);
    rt_status st = rt_json_explain(m, body.data, body.len, &p, c, &out, &evals, &err);
    double dt = rt_seconds(0) - t0;
    if (st != RT_OK) {
        if (o->json_request)
            fprintf(stderr, "predict-model: %s: %s\n", o->json_request, err.msg);
        else
            pm_report_error(o->instances, rt_model_graph(m), &in, err.msg);
        goto out;
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
