/*
 * support_models.c — shared unit-test helpers: ModelDefs from small specs,
 * random tensors that fit them, writing exports, temp directories.
 * See support_models.h for the contracts.
 */
#include "support_models.h"

#include <cJSON.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t support_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double support_uniform(uint64_t *s)
{
    return (double)(support_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

Predictd__ModelDef *support_spec_modeldef(const char *spec_json)
{
    static const char *const other[] = {"train", "eval", NULL};
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    cJSON *spec = cJSON_Parse(spec_json);
    if (!spec) {
        fprintf(stderr, "support_spec_modeldef: spec is not valid JSON near: %.40s\n",
                cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
        return NULL;
    }
    rt_status st = rt_spec_to_modeldef(spec, other, &def, &err);
    cJSON_Delete(spec);
    if (st != RT_OK) {
        fprintf(stderr, "support_spec_modeldef: %s: %s\n", rt_err_status_str(st), err.msg);
        return NULL;
    }
    return def;
}

void support_tensors_free(support_tensors *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++) {
        free((char *)st->t[i].name);
        free((float *)st->t[i].data);
    }
    free(st->t);
    st->t = NULL;
    st->n = 0;
}

int support_random_tensors(const Predictd__ModelDef *def, uint64_t seed, float scale,
                           support_tensors *out)
{
    rt_tensor_spec *specs = NULL;
    size_t ns = 0;
    rt_err err = {{0}};
    uint64_t state = seed;
    out->t = NULL;
    out->n = 0;
    rt_status st = rt_graph_tensor_specs(def, &specs, &ns, &err);
    if (st != RT_OK) {
        fprintf(stderr, "support_random_tensors: %s\n", err.msg);
        return -1;
    }
    out->t = calloc(ns ? ns : 1, sizeof *out->t);
    if (!out->t)
        goto fail;
    for (size_t i = 0; i < ns; i++) {
        exp_tensor *t = &out->t[i];
        float *data = malloc((specs[i].count ? specs[i].count : 1) * sizeof *data);
        char *name = strdup(specs[i].name);
        out->n = i + 1;
        t->name = name;
        t->data = data;
        if (!data || !name)
            goto fail;
        for (uint64_t k = 0; k < specs[i].count; k++)
            data[k] = (float)((support_uniform(&state) * 2.0 - 1.0) * scale);
        t->rank = specs[i].rank;
        t->shape[0] = specs[i].shape[0];
        t->shape[1] = specs[i].rank > 1 ? specs[i].shape[1] : 0;
    }
    free(specs);
    return 0;
fail:
    fprintf(stderr, "support_random_tensors: out of memory\n");
    free(specs);
    support_tensors_free(out);
    return -1;
}

const exp_tensor *support_tensors_find(const support_tensors *st, const char *name)
{
    for (size_t i = 0; st && name && i < st->n; i++)
        if (strcmp(st->t[i].name, name) == 0)
            return &st->t[i];
    return NULL;
}

const float *support_tensor_lookup(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    const exp_tensor *t = support_tensors_find(ctx, name);
    if (!t) {
        rt_err_set(err, RT_ERR_NOTFOUND, "tensor \"%s\" is not in the test set",
                   name ? name : "(null)");
        return NULL;
    }
    uint64_t n = t->shape[0] * (t->rank > 1 ? t->shape[1] : 1);
    if (n != count) {
        rt_err_set(err, RT_ERR_FORMAT, "tensor \"%s\" has %llu values, wanted %llu", name,
                   (unsigned long long)n, (unsigned long long)count);
        return NULL;
    }
    return t->data;
}

int64_t support_write_export(const char *base, Predictd__ModelDef *def, const support_tensors *st,
                             int64_t version, char *path, size_t path_cap)
{
    exp_params p = exp_default_params();
    exp_result res;
    rt_err err = {{0}};
    p.version = version;
    rt_status s = exp_write(base, def, st->t, st->n, &p, &res, &err);
    if (s != RT_OK) {
        fprintf(stderr, "support_write_export: %s: %s\n", rt_err_status_str(s), err.msg);
        return -1;
    }
    if (path && path_cap) {
        int w = snprintf(path, path_cap, "%s", res.path);
        if (w < 0 || (size_t)w >= path_cap) {
            fprintf(stderr, "support_write_export: path buffer too small\n");
            return -1;
        }
    }
    return res.version;
}

int support_model_open(const char *spec_json, uint64_t seed, int64_t version, support_model *sm)
{
    memset(sm, 0, sizeof *sm);
    rt_err err = {{0}};
    sm->def = support_spec_modeldef(spec_json);
    if (!sm->def || support_random_tensors(sm->def, seed, 0.8f, &sm->st) != 0 ||
        support_mkdtemp(sm->dir, sizeof sm->dir) != 0 ||
        support_write_export(sm->dir, sm->def, &sm->st, version, sm->path, sizeof sm->path) <= 0)
        return -1;
    if (rt_model_open(sm->path, &sm->m, &err) != RT_OK) {
        fprintf(stderr, "support_model_open: %s\n", err.msg);
        return -1;
    }
    return 0;
}

void support_model_close(support_model *sm)
{
    rt_model_close(sm->m);
    support_tensors_free(&sm->st);
    rt_spec_modeldef_free(sm->def);
    if (sm->dir[0])
        support_rmtree(sm->dir);
    memset(sm, 0, sizeof *sm);
}

int support_mkdtemp(char *buf, size_t cap)
{
    static const char tmpl[] = "/tmp/predictd-test-XXXXXX";
    if (cap < sizeof tmpl)
        return -1;
    memcpy(buf, tmpl, sizeof tmpl);
    if (!mkdtemp(buf)) {
        perror("support_mkdtemp");
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int support_rmtree(const char *path)
{
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}
