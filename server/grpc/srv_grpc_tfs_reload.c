/*
 * srv_grpc_tfs_reload.c — TensorFlow Serving's ModelService/
 * HandleReloadConfigRequest in the gRPC room: the request's
 * ModelServerConfig (its model_config_list: name, base_path,
 * model_platform, model_version_policy, version_labels) is written back as
 * the text a --model_config_file holds and handed to the daemon's reload
 * (srv_grpc_env.reload: srv_config_build_models, then the manager applies
 * it as a config reload does), so the checks, the messages and the effect
 * (models added, removed, changed; labels) are the file's. A refused config
 * is INVALID_ARGUMENT with the reason, the running config unchanged; another
 * kind of config is TF Serving's INVALID_ARGUMENT text. The answer is
 * ReloadConfigResponse's status (OK) and, as TF Serving does for its
 * metric_names, one `metric` per distinct name asked for: its name and
 * int64_value_increase, what the metric gained across the reload. A name is
 * looked up in the daemon's Prometheus text (srv_metrics_render) as written
 * there, or in TF's spelling with '/' for ':' ("/tensorflow/serving/
 * request_count" is :tensorflow:serving:request_count); its value is the sum
 * of its samples over every label set (TF reads a metric's first point), and
 * a name that is not there counts 0, as in TF Serving.
 */
#include "srv_grpc_tfs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s as a text-format string literal (C escapes). */
static void put_string(rt_buf *b, const char *s)
{
    rt_buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            rt_buf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            rt_buf_printf(b, "\\%03o", *p);
        else
            rt_buf_printf(b, "%c", *p);
    }
    rt_buf_puts(b, "\"");
}

static void put_policy(rt_buf *b,
                       const Tensorflow__Serving__FileSystemStoragePathSourceConfig__ServableVersionPolicy *p)
{
    switch (p->policy_choice_case) {
    case TENSORFLOW__SERVING__FILE_SYSTEM_STORAGE_PATH_SOURCE_CONFIG__SERVABLE_VERSION_POLICY__POLICY_CHOICE_LATEST:
        rt_buf_printf(b, "    model_version_policy { latest { num_versions: %u } }\n",
                      p->latest ? p->latest->num_versions : 0u);
        break;
    case TENSORFLOW__SERVING__FILE_SYSTEM_STORAGE_PATH_SOURCE_CONFIG__SERVABLE_VERSION_POLICY__POLICY_CHOICE_ALL:
        rt_buf_puts(b, "    model_version_policy { all {} }\n");
        break;
    case TENSORFLOW__SERVING__FILE_SYSTEM_STORAGE_PATH_SOURCE_CONFIG__SERVABLE_VERSION_POLICY__POLICY_CHOICE_SPECIFIC:
        rt_buf_puts(b, "    model_version_policy { specific {");
        for (size_t i = 0; p->specific && i < p->specific->n_versions; i++)
            rt_buf_printf(b, " versions: %lld", (long long)p->specific->versions[i]);
        rt_buf_puts(b, " } }\n");
        break;
    default: /* no choice: TF Serving's default (the latest) */
        break;
    }
}

/* The model_config_list as a --model_config_file's text. */
static void config_text(const Tensorflow__Serving__ModelConfigList *list, rt_buf *b)
{
    rt_buf_puts(b, "model_config_list {\n");
    for (size_t i = 0; i < list->n_config; i++) {
        const Tensorflow__Serving__ModelConfig *mc = list->config[i];
        rt_buf_puts(b, "  config {\n    name: ");
        put_string(b, mc->name);
        rt_buf_puts(b, "\n    base_path: ");
        put_string(b, mc->base_path);
        rt_buf_puts(b, "\n");
        if (mc->model_platform && *mc->model_platform) {
            rt_buf_puts(b, "    model_platform: ");
            put_string(b, mc->model_platform);
            rt_buf_puts(b, "\n");
        }
        if (mc->model_version_policy)
            put_policy(b, mc->model_version_policy);
        for (size_t k = 0; k < mc->n_version_labels; k++) {
            rt_buf_puts(b, "    version_labels { key: ");
            put_string(b, mc->version_labels[k]->key);
            rt_buf_printf(b, " value: %lld }\n", (long long)mc->version_labels[k]->value);
        }
        rt_buf_puts(b, "  }\n");
    }
    rt_buf_puts(b, "}\n");
}

/* The sum of the samples of metric name (TF's '/' read as ':') in the
 * Prometheus text, rounded to an integer; 0 when there is none. */
static int64_t metric_value(const char *text, size_t len, const char *name)
{
    size_t n = strlen(name);
    double sum = 0;
    for (size_t at = 0; at < len;) {
        const char *line = text + at, *end = memchr(line, '\n', len - at);
        size_t ll = end ? (size_t)(end - line) : len - at;
        at += ll + 1;
        if (ll <= n || line[0] == '#' || (line[n] != '{' && line[n] != ' '))
            continue;
        bool same = true;
        for (size_t i = 0; i < n && same; i++)
            same = line[i] == (name[i] == '/' ? ':' : name[i]);
        if (!same)
            continue;
        const char *v = line + n;
        if (*v == '{') { /* label values may hold '}' only escaped: the last one closes */
            const char *close = NULL;
            for (const char *q = v; q < line + ll; q++)
                if (*q == '}')
                    close = q;
            if (!close)
                continue;
            v = close + 1;
        }
        char num[64];
        size_t k = 0;
        while (v < line + ll && *v == ' ')
            v++;
        while (v < line + ll && *v != ' ' && k + 1 < sizeof num)
            num[k++] = *v++;
        num[k] = '\0';
        char *stop = NULL;
        double x = strtod(num, &stop);
        if (k && stop && *stop == '\0' && isfinite(x))
            sum += x;
    }
    return sum >= 9.2e18 || sum <= -9.2e18 ? 0 : (int64_t)llround(sum);
}

/* The values of the distinct names of rq->metric_names (n_out of them,
 * names[i] pointing into rq) in the daemon's metrics now. -1: out of memory. */
static int metric_values(srv_grpc_env *e, const Tensorflow__Serving__ReloadConfigRequest *rq,
                         const char **names, int64_t *vals, size_t *n_out)
{
    size_t n = 0;
    for (size_t i = 0; i < rq->n_metric_names; i++) {
        const char *nm = rq->metric_names[i] ? rq->metric_names[i] : "";
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(names[k], nm) == 0;
        if (!seen)
            names[n++] = nm;
    }
    *n_out = n;
    if (n == 0)
        return 0;
    rt_buf text;
    rt_buf_init(&text);
    if (e->metrics && srv_metrics_render(e->metrics, e->mgr, &text) != RT_OK) {
        rt_buf_free(&text);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        vals[k] = *names[k] ? metric_value(text.data ? text.data : "", text.len, names[k]) : 0;
    rt_buf_free(&text);
    return 0;
}

int srv_grpc_tfs_reload(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg)
{
    if (!e->reload) {
        snprintf(msg, SRV_GRPC_MSG, "HandleReloadConfigRequest is not served here");
        return SRV_GRPC_UNIMPLEMENTED;
    }
    Tensorflow__Serving__ReloadConfigRequest *rq =
        tensorflow__serving__reload_config_request__unpack(NULL, len, in);
    if (!rq)
        return srv_grpc_bad_message(msg, "tensorflow.serving.ReloadConfigRequest");
    int code = SRV_GRPC_OK;
    rt_buf text;
    rt_buf_init(&text);
    /* metric_names: the values before the reload and after it */
    size_t n_names = 0, n_after = 0;
    const char **names = calloc(rq->n_metric_names + 1, sizeof *names);
    int64_t *before = calloc(rq->n_metric_names + 1, sizeof *before);
    int64_t *after = calloc(rq->n_metric_names + 1, sizeof *after);
    Tensorflow__Serving__Metric *ms = calloc(rq->n_metric_names + 1, sizeof *ms);
    Tensorflow__Serving__Metric **mp = calloc(rq->n_metric_names + 1, sizeof *mp);
    if (!names || !before || !after || !ms || !mp ||
        metric_values(e, rq, names, before, &n_names) != 0) {
        snprintf(msg, SRV_GRPC_MSG, "out of memory");
        code = SRV_GRPC_RESOURCE_EXHAUSTED;
        goto done;
    }
    if (!rq->config || rq->config->config_case !=
                           TENSORFLOW__SERVING__MODEL_SERVER_CONFIG__CONFIG_MODEL_CONFIG_LIST ||
        !rq->config->model_config_list) {
        snprintf(msg, SRV_GRPC_MSG, "ServerModelConfig type not supported by "
                 "HandleReloadConfigRequest. Only ModelConfigList is currently supported");
        code = SRV_GRPC_INVALID_ARGUMENT;
        goto done;
    }
    config_text(rq->config->model_config_list, &text);
    if (rt_buf_failed(&text)) {
        snprintf(msg, SRV_GRPC_MSG, "out of memory");
        code = SRV_GRPC_RESOURCE_EXHAUSTED;
        goto done;
    }
    rt_err err = {{0}};
    rt_status st = e->reload(e->reload_arg, text.data, text.len, &err);
    if (st != RT_OK) {
        /* the text is ours, not the client's: its line and column say nothing */
        const char *m = err.msg;
        int skip = 0, line, col;
        if (sscanf(m, "line %d, column %d: %n", &line, &col, &skip) == 2 && skip > 0)
            m += skip;
        snprintf(msg, SRV_GRPC_MSG, "%s", m);
        code = srv_grpc_status_of(st);
        goto done;
    }
    Tensorflow__Serving__StatusProto status = TENSORFLOW__SERVING__STATUS_PROTO__INIT;
    status.error_message = "";
    Tensorflow__Serving__ReloadConfigResponse a =
        TENSORFLOW__SERVING__RELOAD_CONFIG_RESPONSE__INIT;
    a.status = &status;
    if (metric_values(e, rq, names, after, &n_after) != 0) { /* the same names */
        snprintf(msg, SRV_GRPC_MSG, "out of memory");
        code = SRV_GRPC_RESOURCE_EXHAUSTED;
        goto done;
    }
    for (size_t k = 0; k < n_names; k++) {
        tensorflow__serving__metric__init(&ms[k]);
        ms[k].name = (char *)names[k];
        ms[k].value_increase_case =
            TENSORFLOW__SERVING__METRIC__VALUE_INCREASE_INT64_VALUE_INCREASE;
        ms[k].int64_value_increase = after[k] - before[k];
        mp[k] = &ms[k];
    }
    a.n_metric = n_names;
    a.metric = n_names ? mp : NULL;
    code = srv_grpc_pack(&a.base, out);
done:
    free(names), free(before), free(after), free(ms), free(mp);
    rt_buf_free(&text);
    tensorflow__serving__reload_config_request__free_unpacked(rq, NULL);
    return code;
}
