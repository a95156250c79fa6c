/*
 * tun_config.c — Cloud ML Engine's hyperparameter tuning config (YAML through
 * libyaml, or JSON) into a validated tun_spec. Every refusal names the key's
 * path: "trainingInput.hyperparameters.params[0].maxValue: ...".
 */
#include "tun.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define HP "trainingInput.hyperparameters"

void tun_spec_init(tun_spec *s)
{
    memset(s, 0, sizeof *s);
    s->max_trials = 1;
    s->max_parallel = 1;
}

void tun_spec_free(tun_spec *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_params; i++) {
        tun_param *p = &s->params[i];
        free(p->name);
        free(p->values);
        for (size_t k = 0; p->cats && k < p->n_values; k++)
            free(p->cats[k]);
        free(p->cats);
    }
    free(s->params);
    free(s->metric_tag);
    free(s->resume_job);
    tun_spec_init(s);
}

/* ------------------------------------------------------------------ YAML */

/* A config is a few hundred nodes; an alias repeats a node, so a document of
 * a few hundred bytes can stand for billions of them ("billion laughs": 9
 * levels of 9 aliases are 9^9 nodes). The tree is built only when the nodes
 * it would hold, aliases counted each time they appear, are at most this. */
#define YAML_MAX_NODES 10000
#define YAML_MAX_DEPTH 32

static cJSON *yaml_scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return cJSON_CreateString(v);
    if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "TRUE") == 0)
        return cJSON_CreateTrue();
    if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "FALSE") == 0)
        return cJSON_CreateFalse();
    if (len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0)
        return cJSON_CreateNull();
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end != v && *end == '\0' && errno == 0 && isfinite(d) &&
        strchr("+-.0123456789", v[0]) != NULL)
        return cJSON_CreateNumber(d);
    return cJSON_CreateString(v);
}

static cJSON *yaml_node(yaml_document_t *doc, yaml_node_t *n, int depth, rt_err *err)
{
    if (depth > YAML_MAX_DEPTH) {
        rt_err_set(err, RT_ERR_LIMIT, "line %zu: nested too deeply", n->start_mark.line + 1);
        return NULL;
    }
    cJSON *out = NULL;
    switch (n->type) {
    case YAML_SCALAR_NODE:
        out = yaml_scalar(n);
        break;
    case YAML_SEQUENCE_NODE:
        out = cJSON_CreateArray();
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             out && it < n->data.sequence.items.top; it++) {
            cJSON *c = yaml_node(doc, yaml_document_get_node(doc, *it), depth + 1, err);
            if (!c) {
                cJSON_Delete(out);
                return NULL;
            }
            cJSON_AddItemToArray(out, c);
        }
        break;
    case YAML_MAPPING_NODE:
        out = cJSON_CreateObject();
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
             out && pr < n->data.mapping.pairs.top; pr++) {
            yaml_node_t *k = yaml_document_get_node(doc, pr->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                rt_err_set(err, RT_ERR_FORMAT, "line %zu: a mapping key must be a scalar",
                           n->start_mark.line + 1);
                cJSON_Delete(out);
                return NULL;
            }
            const char *key = (const char *)k->data.scalar.value;
            if (cJSON_GetObjectItemCaseSensitive(out, key)) {
                rt_err_set(err, RT_ERR_FORMAT, "line %zu: duplicate key \"%s\"",
                           k->start_mark.line + 1, key);
                cJSON_Delete(out);
                return NULL;
            }
            cJSON *c = yaml_node(doc, yaml_document_get_node(doc, pr->value), depth + 1, err);
            if (!c) {
                cJSON_Delete(out);
                return NULL;
            }
            cJSON_AddItemToObject(out, key, c);
        }
        break;
    default:
        rt_err_set(err, RT_ERR_FORMAT, "empty YAML node");
        return NULL;
    }
    if (!out)
        rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    return out;
}

/* The count of nodes node idx (1-based) expands to, aliases included, capped
 * at YAML_MAX_NODES + 1: memo[idx] keeps each node's count (0 = not yet,
 * SIZE_MAX = being counted: an alias inside its own anchor). */
static size_t yaml_expanded(yaml_document_t *doc, int idx, size_t *memo, int depth, int *cycle)
{
    yaml_node_t *n = yaml_document_get_node(doc, idx);
    if (!n || depth > YAML_MAX_DEPTH)
        return 1; /* yaml_node reports these */
    if (memo[idx] == SIZE_MAX) {
        *cycle = (int)n->start_mark.line + 1;
        return YAML_MAX_NODES + 1;
    }
    if (memo[idx])
        return memo[idx];
    memo[idx] = SIZE_MAX;
    size_t total = 1;
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top && total <= YAML_MAX_NODES; it++)
            total += yaml_expanded(doc, *it, memo, depth + 1, cycle);
    } else if (n->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
             pr < n->data.mapping.pairs.top && total <= YAML_MAX_NODES; pr++)
            total += yaml_expanded(doc, pr->key, memo, depth + 1, cycle) +
                     yaml_expanded(doc, pr->value, memo, depth + 1, cycle);
    }
    if (total > YAML_MAX_NODES)
        total = YAML_MAX_NODES + 1;
    memo[idx] = total;
    return total;
}

cJSON *tun_yaml_parse(const char *text, size_t len, rt_err *err)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    cJSON *out = NULL;
    if (!yaml_parser_initialize(&parser)) {
        rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        rt_err_set(err, RT_ERR_FORMAT, "YAML line %zu column %zu: %s",
                   parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                   parser.problem ? parser.problem : "syntax error");
        yaml_parser_delete(&parser);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    size_t n_nodes = (size_t)(doc.nodes.top - doc.nodes.start);
    size_t *memo = root ? calloc(n_nodes + 2, sizeof *memo) : NULL;
    int cycle = 0;
    size_t total = memo ? yaml_expanded(&doc, 1, memo, 0, &cycle) : 0;
    free(memo);
    if (!root)
        rt_err_set(err, RT_ERR_FORMAT, "empty YAML document");
    else if (!total)
        rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    else if (cycle)
        rt_err_set(err, RT_ERR_FORMAT, "YAML line %d: an alias inside the node it names "
                   "(a recursive document)", cycle);
    else if (total > YAML_MAX_NODES)
        rt_err_set(err, RT_ERR_LIMIT, "the YAML document expands to more than %d nodes with its "
                   "aliases (*name) counted each time they appear; a tuning config has a few "
                   "hundred: refused before expanding (a \"billion laughs\" document?)",
                   YAML_MAX_NODES);
    else
        out = yaml_node(&doc, root, 0, err);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return out;
}

/* ---------------------------------------------------------- validation */

/* The member key of o, or NULL when absent or null (null is how JSON and
 * YAML say "not given"). */
static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(c) ? NULL : c;
}

/* obj must be a mapping of known keys, each once ("path.key: unknown key
 * (did you mean K?)", "path.key: key given twice"). */
static rt_status check_keys(const cJSON *obj, const char *path, const char *const *known,
                            rt_err *err)
{
    if (!cJSON_IsObject(obj))
        return rt_err_set(err, RT_ERR_INVALID, "%s: must be a mapping", path);
    size_t n = 0;
    while (known[n])
        n++;
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool ok = false;
        for (size_t i = 0; i < n && !ok; i++)
            ok = strcmp(c->string, known[i]) == 0;
        const char *near = ok ? NULL : rt_settings_nearest_name(c->string, known, n);
        if (!ok && near)
            return rt_err_set(err, RT_ERR_INVALID, "%s.%s: unknown key (did you mean %s?)", path,
                              c->string, near);
        if (!ok)
            return rt_err_set(err, RT_ERR_INVALID, "%s.%s: unknown key", path, c->string);
        for (const cJSON *d = c->next; d; d = d->next)
            if (strcmp(d->string, c->string) == 0)
                return rt_err_set(err, RT_ERR_INVALID, "%s.%s: key given twice", path,
                                  c->string);
    }
    return RT_OK;
}

int tun_json_number(const cJSON *c, double *v)
{
    if (cJSON_IsNumber(c)) {
        *v = c->valuedouble;
        return isfinite(*v) ? 0 : -1;
    }
    if (cJSON_IsString(c) && c->valuestring[0]) {
        char *end;
        *v = strtod(c->valuestring, &end);
        return *end == '\0' && isfinite(*v) ? 0 : -1;
    }
    return -1;
}
#define get_number tun_json_number

static rt_status get_int(const cJSON *obj, const char *key, const char *path, int64_t lo,
                         int64_t *out, rt_err *err)
{
    const cJSON *c = get(obj, key);
    if (!c)
        return RT_OK;
    double v;
    if (get_number(c, &v) != 0 || v != floor(v) || v < (double)lo || v > 1e9)
        return rt_err_set(err, RT_ERR_INVALID, "%s.%s: must be an integer >= %lld", path, key,
                          (long long)lo);
    *out = (int64_t)v;
    return RT_OK;
}

static rt_status get_enum(const cJSON *obj, const char *key, const char *path,
                          const char *const *names, int *out, rt_err *err)
{
    const cJSON *c = get(obj, key);
    if (!c)
        return RT_OK;
    for (int i = 0; cJSON_IsString(c) && names[i]; i++)
        if (strcmp(c->valuestring, names[i]) == 0) {
            *out = i;
            return RT_OK;
        }
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; names[i]; i++) {
        int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
        if (k < 0 || (size_t)k >= sizeof list - used)
            break;
        used += (size_t)k;
    }
    return rt_err_set(err, RT_ERR_INVALID, "%s.%s: must be one of %s", path, key, list);
}

static int name_ok(const char *s)
{
    if (!s[0] || strlen(s) > 100)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

static rt_status parse_param(const cJSON *o, const char *path, tun_param *p, rt_err *err)
{
    static const char *const keys[] = {"parameterName", "type", "minValue", "maxValue",
                                       "scaleType", "categoricalValues", "discreteValues", NULL};
    static const char *const types[] = {"PARAMETER_TYPE_UNSPECIFIED", "DOUBLE", "INTEGER",
                                        "CATEGORICAL", "DISCRETE", NULL};
    static const char *const scales[] = {"NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE",
                                         "UNIT_REVERSE_LOG_SCALE", NULL};
    rt_status st = check_keys(o, path, keys, err);
    if (st)
        return st;
    const cJSON *name = get(o, "parameterName");
    if (!cJSON_IsString(name) || !name_ok(name->valuestring))
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s.parameterName: required, letters, digits, '_', '-' or '.'", path);
    if (!(p->name = strdup(name->valuestring)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    int type = 0, scale = 0;
    if ((st = get_enum(o, "type", path, types, &type, err)) ||
        (st = get_enum(o, "scaleType", path, scales, &scale, err)))
        return st;
    if (type == 0)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s.type: required (DOUBLE, INTEGER, CATEGORICAL or DISCRETE)", path);
    p->type = (tun_type)(type - 1);
    p->scale = (tun_scale)scale;
    const cJSON *mn = get(o, "minValue");
    const cJSON *mx = get(o, "maxValue");
    const cJSON *cv = get(o, "categoricalValues");
    const cJSON *dv = get(o, "discreteValues");
    int numeric = p->type == TUN_DOUBLE || p->type == TUN_INTEGER;
    if (!numeric && (mn || mx))
        return rt_err_set(err, RT_ERR_INVALID, "%s.%s: only for DOUBLE and INTEGER parameters",
                          path, mn ? "minValue" : "maxValue");
    if (cv && p->type != TUN_CATEGORICAL)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s.categoricalValues: only for CATEGORICAL parameters", path);
    if (dv && p->type != TUN_DISCRETE)
        return rt_err_set(err, RT_ERR_INVALID, "%s.discreteValues: only for DISCRETE parameters",
                          path);
    if (p->type == TUN_CATEGORICAL && scale != 0)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s.scaleType: not for CATEGORICAL parameters", path);
    if (numeric) {
        if (!mn || get_number(mn, &p->min) != 0)
            return rt_err_set(err, RT_ERR_INVALID, "%s.minValue: required, a number", path);
        if (!mx || get_number(mx, &p->max) != 0)
            return rt_err_set(err, RT_ERR_INVALID, "%s.maxValue: required, a number", path);
        if (p->type == TUN_INTEGER && (p->min != floor(p->min) || fabs(p->min) > 1e15))
            return rt_err_set(err, RT_ERR_INVALID, "%s.minValue: must be an integer", path);
        if (p->type == TUN_INTEGER && (p->max != floor(p->max) || fabs(p->max) > 1e15))
            return rt_err_set(err, RT_ERR_INVALID, "%s.maxValue: must be an integer", path);
        if (!(p->min < p->max))
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s.maxValue: must be greater than minValue (%g >= %g)", path,
                              p->min, p->max);
    } else if (p->type == TUN_CATEGORICAL) {
        int n = cJSON_GetArraySize(cv);
        if (!cJSON_IsArray(cv) || n < 1)
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s.categoricalValues: required, a non-empty list of strings", path);
        if (!(p->cats = calloc((size_t)n, sizeof *p->cats)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        p->n_values = (size_t)n;
        for (int i = 0; i < n; i++) {
            const cJSON *c = cJSON_GetArrayItem(cv, i);
            if (!cJSON_IsString(c) || !c->valuestring[0])
                return rt_err_set(err, RT_ERR_INVALID,
                                  "%s.categoricalValues[%d]: must be a non-empty string", path, i);
            for (int k = 0; k < i; k++)
                if (strcmp(p->cats[k], c->valuestring) == 0)
                    return rt_err_set(err, RT_ERR_INVALID,
                                      "%s.categoricalValues[%d]: \"%s\" appears twice", path, i,
                                      c->valuestring);
            if (!(p->cats[i] = strdup(c->valuestring)))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    } else {
        int n = cJSON_GetArraySize(dv);
        if (!cJSON_IsArray(dv) || n < 1)
            return rt_err_set(err, RT_ERR_INVALID,
                              "%s.discreteValues: required, a non-empty list of numbers", path);
        if (!(p->values = calloc((size_t)n, sizeof *p->values)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        p->n_values = (size_t)n;
        for (int i = 0; i < n; i++) {
            if (get_number(cJSON_GetArrayItem(dv, i), &p->values[i]) != 0)
                return rt_err_set(err, RT_ERR_INVALID, "%s.discreteValues[%d]: must be a number",
                                  path, i);
            if (i > 0 && !(p->values[i] > p->values[i - 1]))
                return rt_err_set(err, RT_ERR_INVALID,
                                  "%s.discreteValues[%d]: values must be increasing", path, i);
        }
        p->min = p->values[0];
        p->max = p->values[n - 1];
    }
    if ((p->scale == TUN_SCALE_LOG || p->scale == TUN_SCALE_REVERSE_LOG) && !(p->min > 0))
        return rt_err_set(err, RT_ERR_INVALID, "%s.%s: must be > 0 for %s", path,
                          p->type == TUN_DISCRETE ? "discreteValues[0]" : "minValue",
                          scales[p->scale]);
    return RT_OK;
}

rt_status tun_spec_from_json(const cJSON *root, tun_spec *s, rt_err *err)
{
    static const char *const top_keys[] = {"trainingInput", NULL};
    static const char *const ti_keys[] = {"hyperparameters", NULL};
    static const char *const hp_keys[] = {
        "goal", "params", "maxTrials", "maxParallelTrials", "maxFailedTrials",
        "hyperparameterMetricTag", "resumePreviousJobId", "enableTrialEarlyStopping",
        "algorithm", NULL};
    static const char *const goals[] = {"GOAL_TYPE_UNSPECIFIED", "MAXIMIZE", "MINIMIZE", NULL};
    static const char *const algos[] = {"ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH",
                                        NULL};
    tun_spec_free(s);
    rt_status st = check_keys(root, "(top level)", top_keys, err);
    if (st)
        goto out;
    const cJSON *ti = get(root, "trainingInput");
    if (!ti) {
        st = rt_err_set(err, RT_ERR_INVALID, "trainingInput: required");
        goto out;
    }
    if ((st = check_keys(ti, "trainingInput", ti_keys, err)))
        goto out;
    const cJSON *hp = get(ti, "hyperparameters");
    if (!hp) {
        st = rt_err_set(err, RT_ERR_INVALID, HP ": required");
        goto out;
    }
    if ((st = check_keys(hp, HP, hp_keys, err)))
        goto out;
    int goal = 0, algo = 0;
    if ((st = get_enum(hp, "goal", HP, goals, &goal, err)) ||
        (st = get_enum(hp, "algorithm", HP, algos, &algo, err)))
        goto out;
    if (goal == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, HP ".goal: required (MAXIMIZE or MINIMIZE)");
        goto out;
    }
    s->maximize = goal == 1;
    s->algorithm = algo == 1 ? TUN_GRID : algo == 2 ? TUN_RANDOM : TUN_BAYESIAN;
    if ((st = get_int(hp, "maxTrials", HP, 1, &s->max_trials, err)) ||
        (st = get_int(hp, "maxParallelTrials", HP, 1, &s->max_parallel, err)) ||
        (st = get_int(hp, "maxFailedTrials", HP, 0, &s->max_failed, err)))
        goto out;
    const cJSON *es = get(hp, "enableTrialEarlyStopping");
    if (es && !cJSON_IsBool(es)) {
        st = rt_err_set(err, RT_ERR_INVALID, HP ".enableTrialEarlyStopping: must be true or false");
        goto out;
    }
    s->early_stopping = cJSON_IsTrue(es);
    const cJSON *tag = get(hp, "hyperparameterMetricTag");
    if (tag && (!cJSON_IsString(tag) || !tag->valuestring[0])) {
        st = rt_err_set(err, RT_ERR_INVALID,
                        HP ".hyperparameterMetricTag: must be a non-empty string");
        goto out;
    }
    const cJSON *res = get(hp, "resumePreviousJobId");
    if (res && (!cJSON_IsString(res) || !res->valuestring[0])) {
        st = rt_err_set(err, RT_ERR_INVALID, HP ".resumePreviousJobId: must be a non-empty string");
        goto out;
    }
    if (!(s->metric_tag = strdup(tag ? tag->valuestring : TUN_DEFAULT_TAG)) ||
        (res && !(s->resume_job = strdup(res->valuestring)))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    const cJSON *params = get(hp, "params");
    int n = cJSON_GetArraySize(params);
    if (!cJSON_IsArray(params) || n < 1 || n > 64) {
        st = rt_err_set(err, RT_ERR_INVALID, HP ".params: required, a list of 1 to 64 parameters");
        goto out;
    }
    if (!(s->params = calloc((size_t)n, sizeof *s->params))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        char path[96];
        snprintf(path, sizeof path, HP ".params[%d]", i);
        s->n_params = (size_t)i + 1;
        if ((st = parse_param(cJSON_GetArrayItem(params, i), path, &s->params[i], err)))
            goto out;
        for (int k = 0; k < i; k++)
            if (strcmp(s->params[k].name, s->params[i].name) == 0) {
                st = rt_err_set(err, RT_ERR_INVALID, "%s.parameterName: \"%s\" appears twice",
                                path, s->params[i].name);
                goto out;
            }
        if (s->algorithm == TUN_GRID && s->params[i].type == TUN_DOUBLE) {
            st = rt_err_set(err, RT_ERR_INVALID,
                            "%s.type: GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE "
                            "parameters, not DOUBLE",
                            path);
            goto out;
        }
    }
out:
    if (st)
        tun_spec_free(s);
    return st;
}

rt_status tun_spec_load(const char *path, tun_spec *s, rt_err *err)
{
    cJSON *root = NULL;
    char *text;
    size_t len;
    rt_status st = rt_file_read(AT_FDCWD, path, 1u << 20, RT_READ_ANY_FILE, &text, &len, err);
    if (st)
        return st;
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p == '{') {
        if (rt_cfg_parse_json(text, len, &root, err) != RT_OK) {
            rt_err_prefix(err, "%s", path);
            st = RT_ERR_FORMAT;
            goto out;
        }
    } else if (!(root = tun_yaml_parse(text, len, err))) {
        rt_err_prefix(err, "%s", path);
        st = RT_ERR_FORMAT;
        goto out;
    }
    if ((st = tun_spec_from_json(root, s, err)))
        rt_err_prefix(err, "%s", path);
out:
    cJSON_Delete(root);
    free(text);
    return st;
}

/* ------------------------------------------------------------ flags */

#define CLI(f, T) \
    (offsetof(tun_cli, f) + 0 * sizeof(char[_Generic(((tun_cli *)0)->f, T: 1, default: -1)]))

static const rt_setting FLAGS[] = {
    {.name = "config", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = CLI(config, char *),
     .arg = "FILE",
     .help = "trainingInput.hyperparameters, YAML or JSON (Cloud ML Engine's; required)"},
    {.name = "job-dir", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = CLI(job_dir, char *),
     .arg = "DIR",
     .help = "the study: DIR/<trial id>/, DIR/trials.jsonl, DIR/study.json; running again "
             "with the same DIR resumes the study (required)"},
    {.name = "seed", .type = RT_SET_U64, .where = RT_SET_FLAG, .lo = 0, .hi = INT64_MAX,
     .def = 1, .offset = CLI(seed, uint64_t), .arg = "N",
     .help = "suggestions are a function of the seed and the results"},
    {.name = "quiet", .type = RT_SET_BOOL, .where = RT_SET_FLAG, .offset = CLI(quiet, bool),
     .help = "no progress lines or table"},
};

const rt_setting *tun_flag_settings(size_t *n)
{
    *n = sizeof FLAGS / sizeof FLAGS[0];
    return FLAGS;
}
