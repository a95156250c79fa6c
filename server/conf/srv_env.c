/*
 * srv_env.c — the environment variables of the container contracts predictd
 * honours (docs/deploy.md): TensorFlow Serving's image (MODEL_NAME,
 * MODEL_BASE_PATH) and Vertex AI's custom containers (AIP_*). Each variable
 * is one row of ENV_SETTINGS naming the setting it sets; a flag given on the
 * command line wins over its variable. The model variables apply only when
 * the command line names no model (--model_name, --model_config_file), so
 * a daemon started with flags or a config file is never changed by them.
 */
#include "srv_config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a row's value becomes its setting's flag text. */
typedef enum env_kind {
    ENV_SETTING, /* the value is the setting's flag text */
    ENV_MODEL,   /* the model's base path (a path or a storage URI), when none is given */
} env_kind;

typedef struct env_row {
    const char *var;     /* the variable */
    const char *setting; /* the setting it sets (srv_config.c's table) */
    env_kind kind;
    const char *who;     /* whose contract (the INFO line says) */
} env_row;

/* In the order they are read: an earlier row wins (AIP_STORAGE_URI over
 * AIP_MODEL_DIR over MODEL_NAME for the model). */
static const env_row ENV_SETTINGS[] = {
    {"AIP_HTTP_PORT", "rest_api_port", ENV_SETTING, "Vertex AI"},
    {"AIP_HEALTH_ROUTE", "aip_health_route", ENV_SETTING, "Vertex AI"},
    {"AIP_PREDICT_ROUTE", "aip_predict_route", ENV_SETTING, "Vertex AI"},
    {"AIP_STORAGE_URI", "model_base_path", ENV_MODEL, "Vertex AI"},
    {"AIP_MODEL_DIR", "model_base_path", ENV_MODEL, "Vertex AI"},
    {"MODEL_NAME", "model_base_path", ENV_MODEL, "TF Serving's image"},
};
#define N_ENV (sizeof ENV_SETTINGS / sizeof ENV_SETTINGS[0])

static rt_status note(srv_args *a, const char *line, rt_err *err)
{
    char **grown = realloc(a->notes, (a->n_notes + 1) * sizeof *grown);
    if (!grown)
        return rt_err_set(err, RT_ERR_NOMEM, "environment: out of memory");
    a->notes = grown;
    if (!(a->notes[a->n_notes] = strdup(line)))
        return rt_err_set(err, RT_ERR_NOMEM, "environment: out of memory");
    a->n_notes++;
    return RT_OK;
}

/* A storage URI or path as a local directory: PATH, file://PATH, or
 * gs://BUCKET/PATH at /gcs/BUCKET/PATH (Cloud Storage FUSE's mount point
 * on Vertex AI). NULL (err set) for another scheme. */
static rt_status local_path(const char *var, const char *v, char *out, size_t cap, rt_err *err)
{
    int n;
    if (!strncmp(v, "file://", 7))
        n = snprintf(out, cap, "%s", v + 7);
    else if (!strncmp(v, "gs://", 5))
        n = snprintf(out, cap, "/gcs/%s", v + 5);
    else if (strstr(v, "://"))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s=%s: predictd reads models from local directories only (a path, "
                          "file://PATH, or gs://BUCKET/PATH mounted by Cloud Storage FUSE at "
                          "/gcs/BUCKET/PATH); copy the model there first",
                          var, v);
    else
        n = snprintf(out, cap, "%s", v);
    if (n <= 0 || (size_t)n >= cap)
        return rt_err_set(err, RT_ERR_INVALID, "%s: empty or too long", var);
    return RT_OK;
}

rt_status srv_args_env(srv_args *a, srv_getenv_fn get, rt_err *err)
{
    bool model_given = srv_args_given(a, "model_name") || srv_args_given(a, "model_config_file") ||
                       srv_args_given(a, "model_repository");
    const char *model_by = NULL; /* the variable that gave the model */
    char line[8192];
    for (size_t i = 0; i < N_ENV; i++) {
        const env_row *r = &ENV_SETTINGS[i];
        const char *v = get(r->var);
        if (!v || !*v)
            continue;
        if (r->kind == ENV_SETTING) {
            if (srv_args_given(a, r->setting)) {
                snprintf(line, sizeof line, "%s=%s (%s) ignored: --%s was given", r->var, v,
                         r->who, r->setting);
            } else {
                if (srv_args_set(a, r->setting, v, err) != RT_OK) {
                    rt_err_prefix(err, "%s (%s)", r->var, r->who);
                    return RT_ERR_INVALID;
                }
                snprintf(line, sizeof line, "%s=%s (%s): --%s=%s", r->var, v, r->who,
                         r->setting, v);
            }
            if (note(a, line, err) != RT_OK)
                return RT_ERR_NOMEM;
            continue;
        }
        /* ENV_MODEL */
        if (model_by && !strcmp(r->var, "MODEL_NAME"))
            continue; /* it named the model */
        if (model_given) {
            if (model_by)
                snprintf(line, sizeof line, "%s=%s (%s) ignored: %s gave the model", r->var, v,
                         r->who, model_by);
            else
                snprintf(line, sizeof line,
                         "%s=%s (%s) ignored: the command line names the model", r->var, v,
                         r->who);
            if (note(a, line, err) != RT_OK)
                return RT_ERR_NOMEM;
            continue;
        }
        const char *name = get("MODEL_NAME");
        if (!name || !*name)
            name = "model";
        char path[4096];
        if (!strcmp(r->var, "MODEL_NAME")) {
            const char *base = get("MODEL_BASE_PATH");
            if (!base || !*base)
                base = "/models";
            int n = snprintf(path, sizeof path, "%s/%s", base, v);
            if (n <= 0 || (size_t)n >= sizeof path)
                return rt_err_set(err, RT_ERR_INVALID, "MODEL_BASE_PATH: too long");
        } else if (local_path(r->var, v, path, sizeof path, err) != RT_OK) {
            return RT_ERR_INVALID;
        }
        if (srv_args_set(a, "model_name", name, err) != RT_OK) {
            rt_err_prefix(err, "MODEL_NAME (%s)", r->who);
            return RT_ERR_INVALID;
        }
        if (srv_args_set(a, "model_base_path", path, err) != RT_OK)
            return RT_ERR_INVALID;
        snprintf(line, sizeof line, "%s=%s (%s): model %s from %s", r->var, v, r->who, name,
                 path);
        if (note(a, line, err) != RT_OK)
            return RT_ERR_NOMEM;
        model_given = true;
        model_by = r->var;
    }
    return RT_OK;
}
