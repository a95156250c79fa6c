/*
 * pm_io.c — what every predict-model command reads: the export (a version
 * directory, or the newest version of a base directory) and a
 * --json-instances file (one JSON instance per line) turned into one
 * :predict body that remembers each instance's line, so an error is
 * reported as FILE:LINE.
 */
#include "pm.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

rt_status pm_resolve_export(const char *dir, char **path, rt_err *err)
{
    struct stat sb;
    rt_buf b;
    rt_buf_init(&b);
    if (rt_buf_printf(&b, "%s/model.pb", dir) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    int direct = stat(b.data, &sb) == 0;
    rt_buf_free(&b);
    /* a TensorFlow SavedModel's version directory: rt_model_open says what it
     * is; an XGBoost or ONNX model's: rt_model_open serves it */
    static const char *const other[] = {"saved_model.pb", "model.json", "model.ubj", "model.bst",
                                        "model.onnx"};
    for (size_t i = 0; !direct && i < sizeof other / sizeof other[0]; i++) {
        rt_buf_init(&b);
        if (rt_buf_printf(&b, "%s/%s", dir, other[i]) == 0)
            direct = stat(b.data, &sb) == 0;
        rt_buf_free(&b);
    }
    if (direct) {
        *path = strdup(dir);
        return *path ? RT_OK : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    DIR *d = opendir(dir);
    if (!d)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", dir, strerror(errno));
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t v;
        if (rt_model_version_parse(e->d_name, &v) && v > best)
            best = v;
    }
    closedir(d);
    if (best < 0)
        return rt_err_set(err, RT_ERR_NOTFOUND, "%s: no model.pb and no version directory",
                          dir);
    rt_buf_init(&b);
    if (rt_buf_printf(&b, "%s/%lld", dir, (long long)best) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    *path = b.data;
    return RT_OK;
}

rt_model *pm_open_model(const char *dir, char **where)
{
    rt_err err = {{0}};
    char *path = NULL;
    rt_model *m = NULL;
    rt_status st = pm_resolve_export(dir, &path, &err);
    if (st == RT_OK)
        st = rt_model_open(path, &m, &err);
    if (st != RT_OK)
        fprintf(stderr, "predict-model: %s\n", err.msg);
    if (m && where) {
        *where = path;
        path = NULL;
    }
    free(path);
    return m;
}

void pm_instances_free(pm_instances *in)
{
    rt_buf_free(&in->body);
    free(in->lineno);
    free(in->start);
    free(in->len);
}

static int instances_push(pm_instances *in, size_t cap_needed, size_t lineno, size_t start,
                          size_t len)
{
    size_t *a = realloc(in->lineno, cap_needed * sizeof *a);
    if (!a)
        return -1;
    in->lineno = a;
    size_t *b = realloc(in->start, cap_needed * sizeof *b);
    if (!b)
        return -1;
    in->start = b;
    size_t *c = realloc(in->len, cap_needed * sizeof *c);
    if (!c)
        return -1;
    in->len = c;
    in->lineno[in->count] = lineno;
    in->start[in->count] = start;
    in->len[in->count] = len;
    in->count++;
    return 0;
}

int pm_read_instances(const char *file, const char *signature, pm_instances *in)
{
    memset(in, 0, sizeof *in);
    rt_buf_init(&in->body);
    FILE *fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!fp) {
        fprintf(stderr, "predict-model: %s: %s\n", file, strerror(errno));
        return -1;
    }
    rt_buf *body = &in->body;
    int rc = rt_buf_puts(body, "{");
    if (signature) {
        rc |= rt_buf_puts(body, "\"signature_name\": ");
        rc |= rt_buf_json_string(body, signature, strlen(signature));
        rc |= rt_buf_puts(body, ", ");
    }
    rc |= rt_buf_puts(body, "\"instances\": [");
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    while (rc == 0 && (n = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        size_t k = 0;
        while (k < (size_t)n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\n' ||
                                 line[k] == '\r'))
            k++;
        if (k == (size_t)n)
            continue;
        if (in->count)
            rc |= rt_buf_puts(body, ",\n");
        size_t start = body->len;
        rc |= rt_buf_append(body, line, (size_t)n);
        rc |= instances_push(in, in->count + 1, lineno, start, (size_t)n);
    }
    int read_err = ferror(fp);
    free(line);
    if (fp != stdin)
        fclose(fp);
    rc |= rt_buf_puts(body, "]}");
    if (read_err) {
        fprintf(stderr, "predict-model: %s: read error\n", file);
        return -1;
    }
    if (rc) {
        fprintf(stderr, "predict-model: out of memory\n");
        return -1;
    }
    return 0;
}

void pm_report_error(const char *file, const rt_graph *g, const pm_instances *in,
                     const char *msg)
{
    unsigned long k = 0;
    if (sscanf(msg, "instances[%lu]", &k) == 1 && k < in->count) {
        fprintf(stderr, "predict-model: %s:%zu: %s\n", file, in->lineno[k], msg);
        return;
    }
    rt_ctx *c = rt_ctx_new();
    for (size_t i = 0; c && i < in->count; i++) {
        rt_buf one;
        rt_buf_init(&one);
        int rc = rt_buf_puts(&one, "{\"instances\": [");
        rc |= rt_buf_append(&one, in->body.data + in->start[i], in->len[i]);
        rc |= rt_buf_puts(&one, "]}");
        rt_err err = {{0}};
        rt_status st = rc ? RT_ERR_NOMEM
                          : rt_json_transform(g, one.data, one.len, NULL, c, NULL, &err);
        rt_buf_free(&one);
        if (st != RT_OK && strstr(err.msg, "not valid JSON")) {
            fprintf(stderr, "predict-model: %s:%zu: not valid JSON\n", file, in->lineno[i]);
            rt_ctx_free(c);
            return;
        }
    }
    rt_ctx_free(c);
    fprintf(stderr, "predict-model: %s: %s\n", file, msg);
}

