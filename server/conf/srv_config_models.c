/*
 * srv_config_models.c — the "models" list of predictd's config file: for
 * each model its name, base path, version policy ({"latest": N}, {"all":
 * true}, {"specific": [..]}; model_version_policy is TF Serving's name),
 * version labels and default version. Errors name the path of what is wrong
 * ("models[1].version_policy.latest: 0 is out of range [1, 1000000]").
 * The daemon's scalar settings are srv_config.c's.
 */
#include "srv_config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_model_conf_clear(srv_model_conf *mc)
{
    free(mc->name);
    free(mc->base_path);
    free(mc->specific);
    for (size_t i = 0; i < mc->n_labels; i++)
        free(mc->labels[i].name);
    free(mc->labels);
    free(mc->default_label);
    srv_rollout_clear(&mc->rollout);
    srv_monitor_conf_clear(&mc->monitor);
    memset(mc, 0, sizeof *mc);
}

const srv_model_conf *srv_config_find_model(const srv_config *c, const char *name)
{
    for (size_t i = 0; c && i < c->n_models; i++)
        if (!strcmp(c->models[i].name, name))
            return &c->models[i];
    return NULL;
}

const char *srv_json_dup_key(const cJSON *obj)
{
    for (const cJSON *a = obj ? obj->child : NULL; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && !strcmp(a->string, b->string))
                return a->string;
    return NULL;
}

/* A version: a non-negative integer, or a string of digits (proto JSON). */
static rt_status json_version(const cJSON *it, const char *key, int64_t *out, rt_err *err)
{
    if (cJSON_IsString(it)) {
        int64_t v = srv_parse_version(it->valuestring, strlen(it->valuestring));
        if (v < 0)
            return rt_err_set(err, RT_ERR_INVALID, "%s: '%s' is not a version number", key,
                              it->valuestring);
        *out = v;
        return RT_OK;
    }
    return rt_cfg_to_int(it, key, NULL, 0, INT64_C(1000000000000000000), out, err);
}

static rt_status parse_policy(const cJSON *pol, const char *key, srv_model_conf *mc, rt_err *err)
{
    char k[256];
    if (!cJSON_IsObject(pol))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: must be an object such as {\"latest\": 1}, {\"all\": true} "
                          "or {\"specific\": [1, 2]}",
                          key);
    int n = cJSON_GetArraySize(pol);
    if (n != 1)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: must have exactly one of \"latest\", \"all\", \"specific\"", key);
    const cJSON *it = pol->child;
    if (!strcmp(it->string, "latest")) {
        int64_t v = 0;
        snprintf(k, sizeof k, "%.200s.latest", key);
        if (rt_cfg_to_int(it, k, NULL, 1, 1000000, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        mc->policy = SRV_POLICY_LATEST;
        mc->latest_n = (uint32_t)v;
    } else if (!strcmp(it->string, "all")) {
        if (!cJSON_IsTrue(it))
            return rt_err_set(err, RT_ERR_INVALID, "%s.all: must be true", key);
        mc->policy = SRV_POLICY_ALL;
    } else if (!strcmp(it->string, "specific")) {
        snprintf(k, sizeof k, "%.200s.specific", key);
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) < 1)
            return rt_err_set(err, RT_ERR_INVALID, "%s: must be a non-empty array of versions",
                              k);
        size_t cnt = (size_t)cJSON_GetArraySize(it);
        mc->specific = calloc(cnt, sizeof *mc->specific);
        if (!mc->specific)
            return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", k);
        size_t i = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, it)
        {
            char ki[300];
            snprintf(ki, sizeof ki, "%.250s[%zu]", k, i);
            if (json_version(v, ki, &mc->specific[i], err) != RT_OK)
                return RT_ERR_INVALID;
            i++;
        }
        qsort(mc->specific, cnt, sizeof *mc->specific, rt_cmp_i64);
        for (i = 1; i < cnt; i++)
            if (mc->specific[i] == mc->specific[i - 1])
                return rt_err_set(err, RT_ERR_INVALID, "%s: version %lld is listed twice", k,
                                  (long long)mc->specific[i]);
        mc->n_specific = cnt;
        mc->policy = SRV_POLICY_SPECIFIC;
    } else {
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s.%s: unknown policy (use \"latest\", \"all\" or \"specific\")", key,
                          it->string);
    }
    return RT_OK;
}

static rt_status parse_model(const cJSON *jm, size_t idx, const char *base_dir,
                             srv_model_conf *mc, rt_err *err)
{
    char key[64];
    snprintf(key, sizeof key, "models[%zu]", idx);
    if (!cJSON_IsObject(jm))
        return rt_err_set(err, RT_ERR_INVALID, "%s: must be an object", key);
    const char *dup = srv_json_dup_key(jm);
    if (dup)
        return rt_err_set(err, RT_ERR_INVALID, "%s.%.100s: given twice", key, dup);
    /* model_version_policy is an alias (TF Serving's name): one of the two. */
    if (cJSON_GetObjectItemCaseSensitive(jm, "version_policy") &&
        cJSON_GetObjectItemCaseSensitive(jm, "model_version_policy"))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s: give version_policy or model_version_policy, not both", key);
    mc->policy = SRV_POLICY_LATEST;
    mc->latest_n = 1;
    mc->default_version = -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, jm)
    {
        const char *k = it->string;
        char kk[200];
        snprintf(kk, sizeof kk, "%.40s.%.140s", key, k);
        if (!strcmp(k, "name")) {
            if (!cJSON_IsString(it) || !srv_name_valid(it->valuestring, strlen(it->valuestring)))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "%s: must be a name of 1 to %d characters from "
                                  "[A-Za-z0-9_.-], not starting with '.'",
                                  kk, SRV_NAME_MAX);
            if (!(mc->name = strdup(it->valuestring)))
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
        } else if (!strcmp(k, "base_path")) {
            if (!cJSON_IsString(it) || it->valuestring[0] == '\0')
                return rt_err_set(err, RT_ERR_INVALID, "%s: must be a non-empty path", kk);
            const char *bp = it->valuestring;
            if (bp[0] != '/' && base_dir) {
                size_t n = strlen(base_dir) + strlen(bp) + 2;
                mc->base_path = malloc(n);
                if (mc->base_path)
                    snprintf(mc->base_path, n, "%s/%s", base_dir, bp);
            } else {
                mc->base_path = strdup(bp);
            }
            if (!mc->base_path)
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
        } else if (!strcmp(k, "version_policy") || !strcmp(k, "model_version_policy")) {
            rt_status pst = parse_policy(it, kk, mc, err);
            if (pst != RT_OK)
                return pst; /* RT_ERR_NOMEM stays itself */
        } else if (!strcmp(k, "version_labels")) {
            if (!cJSON_IsObject(it))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "%s: must be an object {\"label\": version}", kk);
            size_t cnt = (size_t)cJSON_GetArraySize(it);
            mc->labels = calloc(cnt ? cnt : 1, sizeof *mc->labels);
            if (!mc->labels)
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
            const cJSON *l;
            cJSON_ArrayForEach(l, it)
            {
                char kl[360];
                snprintf(kl, sizeof kl, "%.190s.%.150s", kk, l->string);
                if (!srv_name_valid(l->string, strlen(l->string)))
                    return rt_err_set(err, RT_ERR_INVALID,
                                      "%s: a label name must be 1 to %d characters from "
                                      "[A-Za-z0-9_.-]",
                                      kl, SRV_NAME_MAX);
                if (srv_parse_version(l->string, strlen(l->string)) >= 0)
                    return rt_err_set(err, RT_ERR_INVALID,
                                      "%s: a label name cannot be a number", kl);
                for (size_t j = 0; j < mc->n_labels; j++)
                    if (!strcmp(mc->labels[j].name, l->string))
                        return rt_err_set(err, RT_ERR_INVALID, "%s: label given twice", kl);
                srv_label *lab = &mc->labels[mc->n_labels];
                if (json_version(l, kl, &lab->version, err) != RT_OK)
                    return RT_ERR_INVALID;
                if (!(lab->name = strdup(l->string)))
                    return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kl);
                mc->n_labels++;
            }
        } else if (!strcmp(k, "default_version")) {
            if (cJSON_IsString(it) &&
                srv_parse_version(it->valuestring, strlen(it->valuestring)) < 0) {
                if (!srv_name_valid(it->valuestring, strlen(it->valuestring)))
                    return rt_err_set(err, RT_ERR_INVALID,
                                      "%s: must be a version number or a label name", kk);
                if (!(mc->default_label = strdup(it->valuestring)))
                    return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", kk);
            } else if (!cJSON_IsNull(it)) {
                if (json_version(it, kk, &mc->default_version, err) != RT_OK)
                    return RT_ERR_INVALID;
            }
        } else if (!strcmp(k, "monitoring")) {
            rt_status mst = srv_monitor_parse(it, kk, &mc->monitor, err);
            if (mst != RT_OK)
                return mst;
        } else if (srv_rollout_is_key(k)) {
            rt_status rst = srv_rollout_parse(it, kk, base_dir, &mc->rollout, err);
            if (rst != RT_OK)
                return rst;
        } else {
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s: unknown key (known: name, base_path, version_policy, "
                              "version_labels, default_version, traffic_split, shadow, "
                              "request_logging, monitoring)",
                              kk);
        }
    }
    if (!mc->name)
        return rt_err_set(err, RT_ERR_INVALID, "%s.name: missing", key);
    if (!mc->base_path)
        return rt_err_set(err, RT_ERR_INVALID, "%s.base_path: missing", key);
    if (mc->default_label) {
        bool found = false;
        for (size_t j = 0; j < mc->n_labels; j++)
            found = found || !strcmp(mc->labels[j].name, mc->default_label);
        if (!found)
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s.default_version: label '%s' is not in version_labels", key,
                              mc->default_label);
    }
    return srv_rollout_check(mc, key, err);
}

rt_status srv_config_parse_models(const cJSON *arr, const char *base_dir, srv_config *c,
                                  rt_err *err)
{
    if (!cJSON_IsArray(arr))
        return rt_err_set(err, RT_ERR_INVALID, "models: must be an array of models");
    size_t cnt = (size_t)cJSON_GetArraySize(arr);
    c->models = calloc(cnt ? cnt : 1, sizeof *c->models);
    if (!c->models)
        return rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
    const cJSON *jm;
    cJSON_ArrayForEach(jm, arr)
    {
        srv_model_conf *mc = &c->models[c->n_models];
        c->n_models++; /* counted first so that free() sees it */
        rt_status st = parse_model(jm, c->n_models - 1, base_dir, mc, err);
        if (st != RT_OK)
            return st;
        for (size_t j = 0; j + 1 < c->n_models; j++)
            if (!strcmp(c->models[j].name, mc->name))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "models[%zu].name: model '%s' is configured twice",
                                  c->n_models - 1, mc->name);
    }
    return RT_OK;
}
