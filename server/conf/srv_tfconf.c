/*
 * srv_tfconf.c — TensorFlow Serving's text-format config files, turned into
 * what predictd's JSON paths already read, so that validation and reloads
 * stay in one place (srv_config.c):
 *   --model_config_file       ModelServerConfig { model_config_list { config
 *                             { name base_path model_platform
 *                             model_version_policy version_labels } } }
 *                             -> the JSON config's {"models": [...]} tree
 *   --monitoring_config_file  MonitoringConfig { prometheus_config { enable
 *                             path } }
 *   --batching_parameters_file BatchingParameters { max_batch_size { value }
 *                             batch_timeout_micros max_enqueued_batches
 *                             num_batch_threads }
 *                             -> {"max_batch_size": N, ...}, the JSON
 *                             config's own batching keys
 *   --ssl_config_file         SSLConfig { server_key server_cert custom_ca
 *                             client_verify } -> srv_tf_ssl (PEM strings)
 *
 * Each file is checked against its message's fields first (a table per
 * message, as TF's proto declares them): an unknown field, a scalar where a
 * message belongs (or the reverse), a value of the wrong type or a singular
 * field given twice is refused with its line, column and field path. Values
 * are then copied; their ranges are checked by the JSON config's code, and
 * srv_tfconf_locate() turns such an error's JSON path back into the line,
 * column and field path of the text file.
 */
#include "srv.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------- message tables */

typedef enum { F_MSG, F_STRING, F_INT, F_BOOL } tf_type;

typedef struct tf_field {
    const char *name;
    tf_type type;
    bool repeated;
    const struct tf_field *sub; /* F_MSG: its fields, NULL-name terminated */
} tf_field;

static const tf_field F_EMPTY[] = {{NULL, F_MSG, false, NULL}};
static const tf_field F_LATEST[] = {{"num_versions", F_INT, false, NULL}, {NULL, F_MSG, false, NULL}};
static const tf_field F_SPECIFIC[] = {{"versions", F_INT, true, NULL}, {NULL, F_MSG, false, NULL}};
static const tf_field F_POLICY[] = {{"latest", F_MSG, false, F_LATEST},
                                    {"all", F_MSG, false, F_EMPTY},
                                    {"specific", F_MSG, false, F_SPECIFIC},
                                    {NULL, F_MSG, false, NULL}};
static const tf_field F_LABEL[] = {{"key", F_STRING, false, NULL},
                                   {"value", F_INT, false, NULL},
                                   {NULL, F_MSG, false, NULL}};
static const tf_field F_MODEL[] = {{"name", F_STRING, false, NULL},
                                   {"base_path", F_STRING, false, NULL},
                                   {"model_platform", F_STRING, false, NULL},
                                   {"model_version_policy", F_MSG, false, F_POLICY},
                                   {"version_labels", F_MSG, true, F_LABEL},
                                   {NULL, F_MSG, false, NULL}};
static const tf_field F_LIST[] = {{"config", F_MSG, true, F_MODEL}, {NULL, F_MSG, false, NULL}};
static const tf_field F_SERVER[] = {{"model_config_list", F_MSG, false, F_LIST},
                                    {NULL, F_MSG, false, NULL}};
static const tf_field F_PROM[] = {{"enable", F_BOOL, false, NULL},
                                  {"path", F_STRING, false, NULL},
                                  {NULL, F_MSG, false, NULL}};
static const tf_field F_MONITORING[] = {{"prometheus_config", F_MSG, false, F_PROM},
                                        {NULL, F_MSG, false, NULL}};
static const tf_field F_WRAPPED_INT[] = {{"value", F_INT, false, NULL}, {NULL, F_MSG, false, NULL}};
static const tf_field F_WRAPPED_BOOL[] = {{"value", F_BOOL, false, NULL},
                                          {NULL, F_MSG, false, NULL}};
static const tf_field F_BATCHING[] = {{"max_batch_size", F_MSG, false, F_WRAPPED_INT},
                                      {"batch_timeout_micros", F_MSG, false, F_WRAPPED_INT},
                                      {"max_enqueued_batches", F_MSG, false, F_WRAPPED_INT},
                                      {"num_batch_threads", F_MSG, false, F_WRAPPED_INT},
                                      {"pad_variable_length_inputs", F_BOOL, false, NULL},
                                      {"enable_large_batch_splitting", F_MSG, false,
                                       F_WRAPPED_BOOL},
                                      {NULL, F_MSG, false, NULL}};

static const tf_field F_SSL[] = {{"server_key", F_STRING, false, NULL},
                                 {"server_cert", F_STRING, false, NULL},
                                 {"custom_ca", F_STRING, false, NULL},
                                 {"client_verify", F_BOOL, false, NULL},
                                 {NULL, F_MSG, false, NULL}};

/* Field names of table t, comma separated, into buf (for "known: ..."). */
static const char *known_names(const tf_field *t, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (; t->name && at + 1 < cap; t++) {
        int k = snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", t->name);
        if (k < 0)
            break;
        at += (size_t)k;
    }
    return buf;
}

static bool parse_bool(const srv_tp_node *n, bool *out)
{
    if (n->kind != SRV_TP_IDENT && n->kind != SRV_TP_NUMBER)
        return false;
    if (!strcmp(n->text, "true") || !strcmp(n->text, "True") || !strcmp(n->text, "t") ||
        !strcmp(n->text, "1")) {
        *out = true;
        return true;
    }
    if (!strcmp(n->text, "false") || !strcmp(n->text, "False") || !strcmp(n->text, "f") ||
        !strcmp(n->text, "0")) {
        *out = false;
        return true;
    }
    return false;
}

/* An integer field's value: decimal, 0x hexadecimal or 0 octal, as
 * protobuf's text format reads them. */
static bool parse_int(const srv_tp_node *n, long long *out)
{
    if (n->kind != SRV_TP_NUMBER)
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(n->text, &end, 0);
    if (errno || !end || end == n->text || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* Checks message msg against table t, recursively. */
static rt_status check_msg(const srv_tp_node *msg, const tf_field *t, rt_err *err)
{
    for (const srv_tp_node *c = msg->child; c; c = c->next) {
        const tf_field *f = t;
        while (f->name && strcmp(f->name, c->name))
            f++;
        if (!f->name) {
            char known[256];
            return srv_tp_fail(c, err, "unknown field (known here: %s)",
                               t->name ? known_names(t, known, sizeof known) : "none");
        }
        if (!f->repeated)
            for (const srv_tp_node *d = msg->child; d != c; d = d->next)
                if (!strcmp(d->name, c->name))
                    return srv_tp_fail(c, err, "given twice (first on line %d)", d->line);
        if (c->kind == SRV_TP_LIST_EMPTY) {
            if (!f->repeated)
                return srv_tp_fail(c, err, "a list ([...]) for a field that is not repeated");
            continue;
        }
        if (f->type == F_MSG) {
            if (c->kind != SRV_TP_MESSAGE)
                return srv_tp_fail(c, err, "is a message: write %s { ... }", c->name);
            rt_status st = check_msg(c, f->sub, err);
            if (st != RT_OK)
                return st;
            continue;
        }
        if (c->kind == SRV_TP_MESSAGE)
            return srv_tp_fail(c, err, "is a %s, not a message: write %s: value",
                               f->type == F_STRING ? "string"
                               : f->type == F_BOOL ? "boolean"
                                                   : "integer",
                               c->name);
        long long v;
        bool b;
        if (f->type == F_STRING && c->kind != SRV_TP_STRING)
            return srv_tp_fail(c, err, "'%s' must be a quoted string", c->text);
        if (f->type == F_STRING && strlen(c->text) != c->len)
            return srv_tp_fail(c, err, "string holds a NUL byte");
        if (f->type == F_INT && !parse_int(c, &v))
            return srv_tp_fail(c, err, "'%s' is not an integer",
                               c->kind == SRV_TP_STRING ? "(a string)" : c->text);
        if (f->type == F_BOOL && !parse_bool(c, &b))
            return srv_tp_fail(c, err, "'%s' is not true or false",
                               c->kind == SRV_TP_STRING ? "(a string)" : c->text);
    }
    return RT_OK;
}

static rt_status parse_checked(const char *text, size_t len, const tf_field *t,
                               srv_tp_node **root, rt_err *err)
{
    rt_status st = srv_tp_parse(text, len, root, err);
    if (st == RT_OK && (st = check_msg(*root, t, err)) != RT_OK) {
        srv_tp_free(*root);
        *root = NULL;
    }
    return st;
}

/* ------------------------------------------------------ location map */

typedef struct tfconf_loc {
    char *jpath;  /* "models[0].version_policy.latest" */
    char *tpath;  /* "model_config_list.config[0].model_version_policy.latest.num_versions" */
    int line, col;
} tfconf_loc;

struct srv_tfconf_map {
    tfconf_loc *locs;
    size_t n, cap;
};

void srv_tfconf_map_free(srv_tfconf_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->locs[i].jpath);
        free(m->locs[i].tpath);
    }
    free(m->locs);
    free(m);
}

static char *str_dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static bool map_add(srv_tfconf_map *m, const srv_tp_node *n, const char *jpath,
                    const char *tpath)
{
    if (rt_grow(&m->locs, &m->cap, m->n + 1, sizeof *m->locs) != 0)
        return false;
    tfconf_loc *l = &m->locs[m->n];
    l->jpath = str_dup(jpath);
    l->tpath = str_dup(tpath);
    l->line = n->line;
    l->col = n->col;
    if (!l->jpath || !l->tpath) {
        free(l->jpath);
        free(l->tpath);
        return false;
    }
    m->n++;
    return true;
}

void srv_tfconf_locate(const srv_tfconf_map *m, rt_err *err)
{
    if (!m || !err)
        return;
    const tfconf_loc *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < m->n; i++) {
        size_t k = strlen(m->locs[i].jpath);
        char next = err->msg[k];
        if (k > best_len && !strncmp(err->msg, m->locs[i].jpath, k) &&
            (next == ':' || next == '.' || next == '['))
            best = &m->locs[i], best_len = k;
    }
    if (!best)
        return;
    char rest[RT_ERR_MAX];
    snprintf(rest, sizeof rest, "%s", err->msg + best_len);
    rt_err_set(err, RT_ERR_INVALID, "line %d, column %d: %s%s", best->line, best->col,
               best->tpath, rest);
}

/* -------------------------------------------------- ModelServerConfig */

typedef struct conv {
    srv_tfconf_map *map;
    rt_err *err;
    bool nomem;
} conv;

/* Adds item under key to obj (or to the array obj when key is NULL) and
 * records where it came from. */
static void put(conv *cv, cJSON *obj, const char *key, cJSON *item, const srv_tp_node *n,
                const char *jpath, const char *tpath)
{
    if (!item || !map_add(cv->map, n, jpath, tpath)) {
        cJSON_Delete(item);
        cv->nomem = true;
        return;
    }
    /* Adding to an object copies the key: it can fail, and then the item is
     * not the object's. */
    if (!(key ? cJSON_AddItemToObject(obj, key, item) : cJSON_AddItemToArray(obj, item))) {
        cJSON_Delete(item);
        cv->nomem = true;
    }
}

static rt_status conv_policy(conv *cv, const srv_tp_node *pol, cJSON *jm, const char *jp,
                             const char *tp)
{
    char j[256], t[320];
    const srv_tp_node *kind = pol->child;
    if (!kind)
        return srv_tp_fail(pol, cv->err, "give one of latest, all, specific");
    if (kind->next)
        return srv_tp_fail(kind->next, cv->err,
                           "only one of latest, all, specific (a oneof), already given: %s",
                           kind->name);
    cJSON *jpol = cJSON_CreateObject();
    snprintf(j, sizeof j, "%s.version_policy", jp);
    snprintf(t, sizeof t, "%s.model_version_policy", tp);
    put(cv, jm, "version_policy", jpol, pol, j, t);
    if (cv->nomem)
        return rt_err_set(cv->err, RT_ERR_NOMEM, "config: out of memory");
    char j2[300], t2[400];
    snprintf(j2, sizeof j2, "%s.%s", j, kind->name);
    snprintf(t2, sizeof t2, "%s.%s", t, kind->name);
    if (!strcmp(kind->name, "latest")) {
        /* TF serves max(num_versions, 1): latest {} is the newest one. */
        const srv_tp_node *nv = srv_tp_get(kind, "num_versions");
        long long v = 1;
        if (nv && parse_int(nv, &v) && v == 0)
            v = 1;
        if (nv)
            snprintf(t2 + strlen(t2), sizeof t2 - strlen(t2), ".num_versions");
        put(cv, jpol, "latest", cJSON_CreateNumber((double)v), nv ? nv : kind, j2, t2);
    } else if (!strcmp(kind->name, "all")) {
        put(cv, jpol, "all", cJSON_CreateTrue(), kind, j2, t2);
    } else {
        cJSON *arr = cJSON_CreateArray();
        put(cv, jpol, "specific", arr, kind, j2, t2);
        size_t i = 0;
        for (const srv_tp_node *v = kind->child; v && !cv->nomem; v = v->next) {
            long long x = 0;
            if (v->kind == SRV_TP_LIST_EMPTY)
                continue;
            parse_int(v, &x);
            char j3[320], t3[420];
            snprintf(j3, sizeof j3, "%s[%zu]", j2, i);
            snprintf(t3, sizeof t3, "%s.versions[%zu]", t2, i);
            put(cv, arr, NULL, cJSON_CreateNumber((double)x), v, j3, t3);
            i++;
        }
    }
    return cv->nomem ? rt_err_set(cv->err, RT_ERR_NOMEM, "config: out of memory") : RT_OK;
}

static rt_status conv_model(conv *cv, const srv_tp_node *m, size_t idx, cJSON *models)
{
    char jp[64], tp[96], j[256], t[320];
    snprintf(jp, sizeof jp, "models[%zu]", idx);
    snprintf(tp, sizeof tp, "model_config_list.config[%zu]", idx);
    const srv_tp_node *plat = srv_tp_get(m, "model_platform");
    if (plat && strcmp(plat->text, "tensorflow") != 0)
        return srv_tp_fail(plat, cv->err,
                           "'%s' is not served: predictd serves its own export format "
                           "(models written by predict-train, docs/export-format.md); write "
                           "model_platform: \"tensorflow\" or leave it out",
                           plat->text);
    cJSON *jm = cJSON_CreateObject();
    put(cv, models, NULL, jm, m, jp, tp);
    if (cv->nomem)
        return rt_err_set(cv->err, RT_ERR_NOMEM, "config: out of memory");
    cJSON *labels = NULL;
    for (const srv_tp_node *c = m->child; c && !cv->nomem; c = c->next) {
        snprintf(j, sizeof j, "%s.%s", jp, c->name);
        snprintf(t, sizeof t, "%s.%s", tp, c->name);
        if (!strcmp(c->name, "name") || !strcmp(c->name, "base_path")) {
            put(cv, jm, c->name, cJSON_CreateString(c->text), c, j, t);
        } else if (!strcmp(c->name, "model_version_policy")) {
            rt_status st = conv_policy(cv, c, jm, jp, tp);
            if (st != RT_OK)
                return st;
        } else if (!strcmp(c->name, "version_labels")) {
            const srv_tp_node *key = srv_tp_get(c, "key"), *val = srv_tp_get(c, "value");
            if (!key)
                return srv_tp_fail(c, cv->err, "a label needs key: \"name\"");
            if (!val)
                return srv_tp_fail(c, cv->err, "label '%s' needs value: VERSION", key->text);
            if (!labels) {
                labels = cJSON_CreateObject();
                snprintf(j, sizeof j, "%s.version_labels", jp);
                put(cv, jm, "version_labels", labels, c, j, t);
                if (cv->nomem)
                    break;
            }
            long long v = 0;
            parse_int(val, &v);
            snprintf(j, sizeof j, "%s.version_labels.%.120s", jp, key->text);
            snprintf(t, sizeof t, "%s.version_labels['%.120s']", tp, key->text);
            put(cv, labels, key->text, cJSON_CreateNumber((double)v), key, j, t);
        }
    }
    return cv->nomem ? rt_err_set(cv->err, RT_ERR_NOMEM, "config: out of memory") : RT_OK;
}

bool srv_tfconf_is_text(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        return c != '{' && c != '[';
    }
    return true; /* empty: an empty ModelServerConfig */
}

rt_status srv_tfconf_model_config(const char *text, size_t len, cJSON **out,
                                  srv_tfconf_map **map_out, rt_err *err)
{
    *out = NULL;
    *map_out = NULL;
    srv_tp_node *root = NULL;
    cJSON *j = NULL;
    conv cv = {.err = err};
    rt_status st = parse_checked(text, len, F_SERVER, &root, err);
    if (st != RT_OK)
        goto out;
    j = cJSON_CreateObject();
    cv.map = calloc(1, sizeof *cv.map);
    cJSON *models = cJSON_CreateArray();
    if (!j || !cv.map || !models || !cJSON_AddItemToObject(j, "models", models)) {
        cJSON_Delete(models);
        st = rt_err_set(err, RT_ERR_NOMEM, "config: out of memory");
        goto out;
    }
    const srv_tp_node *list = srv_tp_get(root, "model_config_list");
    size_t idx = 0;
    for (const srv_tp_node *c = list ? list->child : NULL; c; c = c->next)
        if ((st = conv_model(&cv, c, idx++, models)) != RT_OK)
            goto out;
    if (!list || idx == 0) {
        st = srv_tp_fail(list ? list : root, err,
                         "no model: give model_config_list { config { name: \"NAME\" "
                         "base_path: \"DIR\" } }");
        goto out;
    }
    *out = j;
    *map_out = cv.map;
    j = NULL;
    cv.map = NULL;
out:
    cJSON_Delete(j);
    srv_tfconf_map_free(cv.map);
    srv_tp_free(root);
    return st;
}

/* ------------------------------------------- monitoring and batching */

rt_status srv_tfconf_monitoring(const char *text, size_t len, bool *enable, char **path,
                                rt_err *err)
{
    srv_tp_node *root = NULL;
    *enable = false;
    *path = NULL;
    rt_status st = parse_checked(text, len, F_MONITORING, &root, err);
    if (st != RT_OK)
        return st;
    const srv_tp_node *prom = srv_tp_get(root, "prometheus_config");
    const srv_tp_node *en = srv_tp_get(prom, "enable");
    const srv_tp_node *p = srv_tp_get(prom, "path");
    if (en)
        parse_bool(en, enable);
    /* TF's default path when none is given. */
    const char *want = p && p->text[0] ? p->text : "/monitoring/prometheus/metrics";
    if (want[0] != '/' || strlen(want) > 200 || strpbrk(want, "?# \t"))
        st = srv_tp_fail(p, err,
                         "'%s' must be a URL path starting with '/' (at most 200 characters, "
                         "no '?', '#' or spaces)",
                         want);
    else if (!(*path = str_dup(want)))
        st = rt_err_set(err, RT_ERR_NOMEM, "monitoring config: out of memory");
    srv_tp_free(root);
    return st;
}

rt_status srv_tfconf_batching(const char *text, size_t len, cJSON **out,
                              srv_tfconf_map **map_out, rt_err *err)
{
    static const char *const keys[] = {"max_batch_size", "batch_timeout_micros",
                                       "max_enqueued_batches", "num_batch_threads"};
    srv_tp_node *root = NULL;
    *out = NULL;
    *map_out = NULL;
    rt_status st = parse_checked(text, len, F_BATCHING, &root, err);
    if (st != RT_OK)
        return st;
    conv cv = {.err = err, .map = calloc(1, sizeof(srv_tfconf_map))};
    cJSON *j = cJSON_CreateObject();
    cv.nomem = !j || !cv.map;
    for (size_t i = 0; !cv.nomem && i < sizeof keys / sizeof keys[0]; i++) {
        const srv_tp_node *v = srv_tp_get(srv_tp_get(root, keys[i]), "value");
        long long x = 0;
        char t[64];
        if (!v || !parse_int(v, &x))
            continue;
        snprintf(t, sizeof t, "%s.value", keys[i]);
        put(&cv, j, keys[i], cJSON_CreateNumber((double)x), v, keys[i], t);
    }
    srv_tp_free(root);
    if (cv.nomem) {
        cJSON_Delete(j);
        srv_tfconf_map_free(cv.map);
        return rt_err_set(err, RT_ERR_NOMEM, "batching parameters: out of memory");
    }
    *out = j;
    *map_out = cv.map;
    return RT_OK;
}

/* ----------------------------------- in-place edits (predictctl's labels) */

/* The config { } of model `model`, or NULL. */
static const srv_tp_node *find_config(const srv_tp_node *root, const char *model)
{
    const srv_tp_node *list = srv_tp_get(root, "model_config_list");
    for (const srv_tp_node *c = list ? list->child : NULL; c; c = c->next) {
        const srv_tp_node *n = srv_tp_get(c, "name");
        if (c->kind == SRV_TP_MESSAGE && n && n->text && !strcmp(n->text, model))
            return c;
    }
    return NULL;
}

/* The version_labels { } entry of cfg whose key is label, or NULL. */
static const srv_tp_node *find_label(const srv_tp_node *cfg, const char *label)
{
    for (const srv_tp_node *c = cfg->child; c; c = c->next) {
        const srv_tp_node *k = strcmp(c->name, "version_labels") ? NULL : srv_tp_get(c, "key");
        if (k && k->text && !strcmp(k->text, label))
            return c;
    }
    return NULL;
}

/* Parses and checks text as a ModelServerConfig, finds model's config and
 * its entry for label (NULL when there is none). */
static rt_status edit_open(const char *text, size_t len, const char *model, const char *label,
                           srv_tp_node **root, const srv_tp_node **cfg,
                           const srv_tp_node **entry, rt_err *err)
{
    rt_status st = parse_checked(text, len, F_SERVER, root, err);
    if (st != RT_OK)
        return st;
    if (!(*cfg = find_config(*root, model))) {
        srv_tp_free(*root);
        *root = NULL;
        return rt_err_set(err, RT_ERR_NOTFOUND, "model %s is not in the config", model);
    }
    *entry = find_label(*cfg, label);
    return RT_OK;
}

rt_status srv_tfconf_label(const char *text, size_t len, const char *model, const char *label,
                           int64_t *version, rt_err *err)
{
    srv_tp_node *root = NULL;
    const srv_tp_node *cfg = NULL, *e = NULL;
    *version = -1;
    rt_status st = edit_open(text, len, model, label, &root, &cfg, &e, err);
    if (st != RT_OK)
        return st;
    long long v = -1;
    if (e && srv_tp_get(e, "value") && parse_int(srv_tp_get(e, "value"), &v) && v >= 0)
        *version = v;
    srv_tp_free(root);
    return RT_OK;
}

/* text[0..len) with bytes [from, to) replaced by rep. Malloc'd, or NULL. */
static char *splice(const char *text, size_t len, size_t from, size_t to, const char *rep,
                    size_t rep_len, size_t *out_len)
{
    size_t n = len - (to - from) + rep_len;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, text, from);
    memcpy(out + from, rep, rep_len);
    memcpy(out + from + rep_len, text + to, len - to);
    out[n] = '\0';
    *out_len = n;
    return out;
}

/* Offset of the start of the line holding off, and whether only blanks
 * stand between it and off. */
static size_t line_start(const char *t, size_t off, bool *blank_before)
{
    size_t s = off;
    while (s > 0 && t[s - 1] != '\n')
        s--;
    *blank_before = true;
    for (size_t i = s; i < off; i++)
        if (t[i] != ' ' && t[i] != '\t')
            *blank_before = false;
    return s;
}

/* Offset just after the end of the line holding off ('\n' included) when
 * only blanks, separators and a comment follow off on it; else (size_t)-1. */
static size_t rest_of_line(const char *t, size_t len, size_t off)
{
    size_t i = off;
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == ',' || t[i] == ';'))
        i++;
    if (i < len && t[i] == '#')
        while (i < len && t[i] != '\n')
            i++;
    if (i < len && t[i] != '\n')
        return (size_t)-1;
    return i < len ? i + 1 : i;
}

/* A new entry for label -> version, in the style of `like` (an existing
 * entry: its bytes with key and value replaced) or a one-line default. */
static char *new_entry(const char *t, const srv_tp_node *like, const char *label,
                       int64_t version, size_t *n)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)version);
    const srv_tp_node *k = like ? srv_tp_get(like, "key") : NULL;
    const srv_tp_node *v = like ? srv_tp_get(like, "value") : NULL;
    char q = k && t[k->val_off] == '\'' ? '\'' : '"';
    char key[SRV_NAME_MAX + 3];
    snprintf(key, sizeof key, "%c%s%c", q, label, q);
    if (!k || !v || k->val_off > v->val_off) {
        size_t cap = strlen(key) + strlen(num) + 48;
        char *s = malloc(cap);
        if (s)
            *n = (size_t)snprintf(s, cap, "version_labels { key: %s value: %s }", key, num);
        return s;
    }
    /* like's bytes: [name_off, k) key [k_end, v) num [v_end, end) */
    size_t a = like->name_off, e = like->val_end;
    size_t cap = (e - a) + strlen(key) + strlen(num) + 1;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t o = 0;
    memcpy(s + o, t + a, k->val_off - a), o += k->val_off - a;
    memcpy(s + o, key, strlen(key)), o += strlen(key);
    memcpy(s + o, t + k->val_end, v->val_off - k->val_end), o += v->val_off - k->val_end;
    memcpy(s + o, num, strlen(num)), o += strlen(num);
    memcpy(s + o, t + v->val_end, e - v->val_end), o += e - v->val_end;
    s[o] = '\0';
    *n = o;
    return s;
}

rt_status srv_tfconf_set_label(const char *text, size_t len, const char *model,
                               const char *label, int64_t version, char **out, size_t *out_len,
                               rt_err *err)
{
    srv_tp_node *root = NULL;
    const srv_tp_node *cfg = NULL, *e = NULL;
    *out = NULL;
    rt_status st = edit_open(text, len, model, label, &root, &cfg, &e, err);
    if (st != RT_OK)
        return st;
    const srv_tp_node *val = e ? srv_tp_get(e, "value") : NULL;
    char *res = NULL;
    if (e && version >= 0 && val) {
        /* the value token only: comments and layout stay */
        char num[32];
        int k = snprintf(num, sizeof num, "%lld", (long long)version);
        res = splice(text, len, val->val_off, val->val_end, num, (size_t)k, out_len);
    } else if (e && version < 0) {
        bool blank;
        size_t from = line_start(text, e->name_off, &blank);
        size_t to = rest_of_line(text, len, e->val_end);
        if (!blank || to == (size_t)-1) { /* shares its line: the entry alone goes */
            from = e->name_off;
            while (from > 0 && (text[from - 1] == ' ' || text[from - 1] == '\t'))
                from--;
            to = e->val_end;
        }
        res = splice(text, len, from, to, "", 0, out_len);
    } else if (!e && version < 0) {
        res = splice(text, len, 0, 0, "", 0, out_len); /* nothing to remove */
    } else {
        /* A new entry after the last label (or the last field), on a line
         * of its own with that field's indentation; inside the braces when
         * the config is written on one line. */
        const srv_tp_node *like = NULL, *anchor = cfg->last;
        for (const srv_tp_node *c = cfg->child; c; c = c->next)
            if (!strcmp(c->name, "version_labels") && c->kind == SRV_TP_MESSAGE)
                like = anchor = c;
        size_t n = 0;
        char *ent = new_entry(text, like, label, version, &n);
        bool blank = false;
        size_t ls = anchor ? line_start(text, anchor->name_off, &blank) : 0;
        size_t after = anchor ? rest_of_line(text, len, anchor->val_end) : (size_t)-1;
        if (ent && anchor && blank && after != (size_t)-1) {
            size_t ind = anchor->name_off - ls;
            char *ins = malloc(ind + n + 2);
            if (ins) {
                memcpy(ins, text + ls, ind);
                memcpy(ins + ind, ent, n);
                ins[ind + n] = '\n';
                bool nl = after > 0 && text[after - 1] == '\n';
                /* a file without a final newline gets one before the entry */
                if (!nl) {
                    memmove(ins + 1, ins, ind + n + 1);
                    ins[0] = '\n';
                }
                res = splice(text, len, after, after, ins, ind + n + 1, out_len);
                free(ins);
            }
        } else if (ent) {
            size_t close = cfg->val_end - 1; /* the config's '}' */
            char *ins = malloc(n + 3);
            if (ins) {
                size_t o = 0;
                if (close > 0 && text[close - 1] != ' ' && text[close - 1] != '\n')
                    ins[o++] = ' ';
                memcpy(ins + o, ent, n), o += n;
                ins[o++] = ' ';
                res = splice(text, len, close, close, ins, o, out_len);
                free(ins);
            }
        }
        free(ent);
    }
    srv_tp_free(root);
    if (!res)
        return rt_err_set(err, RT_ERR_NOMEM, "config edit: out of memory");
    *out = res;
    return RT_OK;
}

/* ---------------------------------------------------------------- SSL */

void srv_tf_ssl_clear(srv_tf_ssl *s)
{
    if (s->server_key)
        memset(s->server_key, 0, strlen(s->server_key));
    free(s->server_key);
    free(s->server_cert);
    free(s->custom_ca);
    memset(s, 0, sizeof *s);
}

/* A string field's value copied into *out (NULL when not given). */
static bool take_string(const srv_tp_node *root, const char *name, char **out)
{
    const srv_tp_node *n = srv_tp_get(root, name);
    *out = NULL;
    return !n || (*out = str_dup(n->text)) != NULL;
}

rt_status srv_tfconf_ssl(const char *text, size_t len, srv_tf_ssl *out, rt_err *err)
{
    srv_tp_node *root = NULL;
    memset(out, 0, sizeof *out);
    rt_status st = parse_checked(text, len, F_SSL, &root, err);
    if (st != RT_OK)
        return st;
    const srv_tp_node *verify = srv_tp_get(root, "client_verify");
    if (verify)
        parse_bool(verify, &out->client_verify);
    if (!take_string(root, "server_key", &out->server_key) ||
        !take_string(root, "server_cert", &out->server_cert) ||
        !take_string(root, "custom_ca", &out->custom_ca)) {
        st = rt_err_set(err, RT_ERR_NOMEM, "ssl config: out of memory");
    } else if (!out->server_cert || !*out->server_cert) {
        const srv_tp_node *n = srv_tp_get(root, "server_cert");
        st = n ? srv_tp_fail(n, err, "is empty: the gRPC port needs its PEM certificate")
               : rt_err_set(err, RT_ERR_INVALID,
                            "server_cert: missing: the gRPC port needs its PEM certificate "
                            "(server_cert: \"-----BEGIN CERTIFICATE-----\\n...\")");
    } else if (!out->server_key || !*out->server_key) {
        const srv_tp_node *n = srv_tp_get(root, "server_key");
        st = n ? srv_tp_fail(n, err, "is empty: the gRPC port needs the PEM private key of "
                             "server_cert")
               : rt_err_set(err, RT_ERR_INVALID,
                            "server_key: missing: the gRPC port needs the PEM private key of "
                            "server_cert");
    } else if (out->client_verify && (!out->custom_ca || !*out->custom_ca)) {
        st = srv_tp_fail(verify, err, "true needs custom_ca: the PEM CA certificate(s) that "
                         "client certificates must chain to");
    }
    /* a path where the PEM text belongs (the common slip: tls_cert_file's habit) */
    static const char *const PEM_FIELDS[] = {"server_key", "server_cert", "custom_ca"};
    for (size_t i = 0; st == RT_OK && i < 3; i++) {
        const srv_tp_node *n = srv_tp_get(root, PEM_FIELDS[i]);
        if (n && *n->text && !strstr(n->text, "-----BEGIN "))
            st = srv_tp_fail(n, err, "holds no PEM block (-----BEGIN ...): the field holds the "
                             "PEM text itself, not a file path");
    }
    if (st == RT_OK && out->custom_ca && !*out->custom_ca) {
        free(out->custom_ca); /* an empty custom_ca is TF's "not given" */
        out->custom_ca = NULL;
    }
    srv_tp_free(root);
    if (st != RT_OK)
        srv_tf_ssl_clear(out);
    return st;
}
