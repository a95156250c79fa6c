/*
 * rt_spec.c — reads the model part of a trainer spec (docs/trainer.md)
 * into a ModelDef: raw columns, label, feature columns, estimator shape,
 * receiver. Every unknown key, wrong type or impossible value is refused with
 * a message naming its key path ("feature_columns[3].boundaries: ...").
 * Feature columns are read by rt_spec_columns.c, the estimator, tensor names
 * and signatures by rt_spec_graph.c, helpers are in rt_spec_util.c; the
 * finished ModelDef is checked once more by compiling it (rt_graph.c).
 */
#include "rt_model.h"
#include "rt_spec_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* ------------------------------------------------------------ columns */

static rt_status parse_columns(spec_ctx *s, const cJSON *arr)
{
    rt_err *err = s->err;
    Predictd__ModelDef *def = s->def;
    int n = cJSON_GetArraySize(arr);
    if (n <= 0)
        return rt_cfg_fail(err, "", "columns", "must list at least one column");
    if (n > RT_SPEC_MAX_ITEMS)
        return rt_cfg_fail(err, "", "columns", "too many columns (%d, limit %d)", n,
                           RT_SPEC_MAX_ITEMS);
    def->raw_columns = calloc((size_t)n, sizeof *def->raw_columns);
    if (!def->raw_columns)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    static const char *const keys[] = {"name", "type", "default", NULL};
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "columns[%d]", i);
        if (!cJSON_IsObject(c))
            return rt_cfg_fail(err, path, "", "expected an object, got %s", rt_cfg_type_name(c));
        rt_status st = rt_cfg_check_keys(c, path, keys, NULL, err);
        const char *name = NULL, *type = NULL;
        if (!st)
            st = rt_cfg_str(c, path, "name", RT_CFG_REQUIRED, &name, err);
        if (!st)
            st = rt_spec_check_name(name, path, "name", err);
        if (!st)
            st = rt_cfg_str(c, path, "type", RT_CFG_REQUIRED, &type, err);
        if (st)
            return st;
        if (rt_graph_find_raw(def, name) >= 0)
            return rt_cfg_fail(err, path, "name", "column \"%s\" is listed twice", name);
        Predictd__RawColumn *rc = malloc(sizeof *rc);
        if (!rc)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        predictd__raw_column__init(rc);
        def->raw_columns[def->n_raw_columns++] = rc;
        if (!(rc->name = rt_spec_strndup(name, strlen(name))))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        if (strcmp(type, "int") == 0 || strcmp(type, "float") == 0) {
            rc->dtype = PREDICTD__DTYPE__DT_FLOAT;
            rc->is_int = type[0] == 'i';
        } else if (strcmp(type, "string") == 0) {
            rc->dtype = PREDICTD__DTYPE__DT_STRING;
        } else {
            return rt_cfg_fail(err, path, "type", "\"%.64s\" is not one of int, float, string",
                               type);
        }
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "default");
        if (!d)
            continue;
        rc->has_default = true;
        if (rc->dtype == PREDICTD__DTYPE__DT_STRING) {
            if (!cJSON_IsString(d))
                return rt_cfg_fail(err, path, "default", "expected a string, got %s",
                                   rt_cfg_type_name(d));
            if (!(rc->default_string = rt_spec_dup_trimmed(d->valuestring, s->trim)))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        } else if (rc->is_int) {
            int64_t v = 0;
            if ((st = rt_cfg_to_int(d, path, "default", -(INT64_C(1) << 53), INT64_C(1) << 53, &v,
                                    err)))
                return st;
            rc->default_number = (double)v;
        } else {
            if ((st = rt_cfg_num(c, path, "default", RT_CFG_REQUIRED, -RT_SPEC_MAX_F32,
                                 RT_SPEC_MAX_F32, &rc->default_number, err)))
                return st;
        }
    }
    return RT_OK;
}

/* label.columns: a regressor's label_dimension label columns (the
 * estimator checks the count), in the order of "columns": label value k is
 * the k-th label column of the CSV. */
static rt_status parse_label_columns(spec_ctx *s, const cJSON *cols)
{
    rt_err *err = s->err;
    int n = cJSON_GetArraySize(cols);
    if (n < 1)
        return rt_cfg_fail(err, "label", "columns", "must list at least one column");
    long prev = -1;
    int i = 0;
    for (const cJSON *c = cols->child; c; c = c->next, i++) {
        char key[48];
        snprintf(key, sizeof key, "columns[%d]", i);
        if (!cJSON_IsString(c))
            return rt_cfg_fail(err, "label", key, "expected a column name, got %s",
                               rt_cfg_type_name(c));
        long r = rt_graph_find_raw(s->def, c->valuestring);
        if (r < 0)
            return rt_cfg_fail(err, "label", key, "\"%.64s\" is not one of the columns",
                               c->valuestring);
        if (s->def->raw_columns[r]->is_label)
            return rt_cfg_fail(err, "label", key, "\"%.64s\" is listed twice", c->valuestring);
        if (r < prev)
            return rt_cfg_fail(err, "label", key,
                               "\"%.64s\" comes before \"%s\" in \"columns\": list the label "
                               "columns in the order of \"columns\" (label value k is the k-th)",
                               c->valuestring, s->def->raw_columns[prev]->name);
        s->def->raw_columns[r]->is_label = true;
        prev = r;
    }
    return RT_OK;
}

static rt_status parse_label(spec_ctx *s, const cJSON *lab)
{
    rt_err *err = s->err;
    Predictd__ModelDef *def = s->def;
    static const char *const keys[] = {"column", "columns", "vocabulary", NULL};
    if (!cJSON_IsObject(lab))
        return rt_cfg_fail(err, "", "label", "expected an object, got %s", rt_cfg_type_name(lab));
    const char *col = NULL;
    const cJSON *voc = NULL, *cols = NULL;
    rt_status st = rt_cfg_check_keys(lab, "label", keys, NULL, err);
    if (!st)
        st = rt_cfg_array(lab, "label", "columns", 0, &cols, err);
    if (!st)
        st = rt_cfg_str(lab, "label", "column", cols ? 0 : RT_CFG_REQUIRED, &col, err);
    if (!st)
        st = rt_cfg_array(lab, "label", "vocabulary", 0, &voc, err);
    if (st)
        return st;
    if (col && cols)
        return rt_cfg_fail(err, "label", "columns", "give \"column\" or \"columns\", not both");
    if (col) {
        long r = rt_graph_find_raw(def, col);
        if (r < 0)
            return rt_cfg_fail(err, "label", "column", "\"%.64s\" is not one of the columns",
                               col);
        def->raw_columns[r]->is_label = true;
    } else if ((st = parse_label_columns(s, cols))) {
        return st;
    }
    return voc ? rt_spec_heads_vocabulary(s, voc, "label", def->head) : RT_OK;
}

static rt_status parse_unused(spec_ctx *s, const cJSON *arr)
{
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        char key[48];
        snprintf(key, sizeof key, "unused_columns[%d]", i);
        if (!cJSON_IsString(c))
            return rt_cfg_fail(s->err, "", key, "expected a string, got %s", rt_cfg_type_name(c));
        long r = rt_graph_find_raw(s->def, c->valuestring);
        if (r < 0)
            return rt_cfg_fail(s->err, "", key, "\"%.64s\" is not one of the columns",
                               c->valuestring);
        if (s->def->raw_columns[r]->is_label)
            return rt_cfg_fail(s->err, "", key, "\"%.64s\" is the label column", c->valuestring);
        s->def->raw_columns[r]->unused = true;
    }
    return RT_OK;
}

/* estimator.weight_column (TF's weight_column, a string: the key of a numeric
 * column): read before the feature columns, so a feature column reading it is
 * refused by name (the weight is not a model input). */
static rt_status parse_weight_column(spec_ctx *s, const cJSON *est)
{
    rt_err *err = s->err;
    if (!cJSON_IsObject(est))
        return RT_OK; /* rt_spec_parse_estimator refuses it */
    const char *name = NULL;
    rt_status st = rt_cfg_str(est, "estimator", "weight_column", 0, &name, err);
    if (st || !name)
        return st;
    long r = rt_graph_find_raw(s->def, name);
    if (r < 0)
        return rt_cfg_fail(err, "estimator", "weight_column", "\"%.64s\" is not one of the columns",
                           name);
    Predictd__RawColumn *rc = s->def->raw_columns[r];
    if (rc->is_label)
        return rt_cfg_fail(err, "estimator", "weight_column", "\"%.64s\" is the label column",
                           name);
    if (rc->unused)
        return rt_cfg_fail(err, "estimator", "weight_column",
                           "\"%.64s\" is listed in unused_columns", name);
    if (rc->dtype != PREDICTD__DTYPE__DT_FLOAT)
        return rt_cfg_fail(err, "estimator", "weight_column",
                           "\"%.64s\" is a string column; example weights are numbers (an int "
                           "or float column)",
                           name);
    rc->is_weight = true;
    return RT_OK;
}

/* ------------------------------------------------------------ export */

/* export.explanation: {"baselines": {COLUMN: value}}, the explanations'
 * baseline instance (docs/explanations.md): each a raw column of the model
 * (not a label or weight), a number for a numeric column, a string for a
 * string one. Read again from training.spec_json when explaining
 * (runtime/explain/rt_xai_base.c). */
static rt_status parse_explanation(spec_ctx *s, const cJSON *ex)
{
    rt_err *err = s->err;
    static const char *const keys[] = {"baselines", NULL};
    const cJSON *bl = NULL;
    rt_status st = rt_cfg_check_keys(ex, "export.explanation", keys, NULL, err);
    if (!st)
        st = rt_cfg_object(ex, "export.explanation", "baselines", 0, &bl, err);
    if (st || !bl)
        return st;
    for (const cJSON *v = bl->child; v; v = v->next) {
        long rc = rt_graph_find_raw(s->def, v->string);
        const Predictd__RawColumn *col = rc >= 0 ? s->def->raw_columns[rc] : NULL;
        if (!col || col->is_label || col->is_weight || col->unused)
            return rt_cfg_fail(err, "export.explanation.baselines", v->string,
                               "not an input column of the model");
        bool num = col->dtype == PREDICTD__DTYPE__DT_FLOAT;
        if (num ? !cJSON_IsNumber(v) : !cJSON_IsString(v))
            return rt_cfg_fail(err, "export.explanation.baselines", v->string,
                               "expected %s, got %s", num ? "a number" : "a string",
                               rt_cfg_type_name(v));
    }
    return RT_OK;
}

static rt_status parse_export(spec_ctx *s, const cJSON *ex)
{
    rt_err *err = s->err;
    static const char *const keys[] = {"name", "format", "exporters", "explanation", NULL};
    const char *name = "model", *format = "JSON";
    const cJSON *exporters = NULL, *explanation = NULL;
    if (!cJSON_IsObject(ex))
        return rt_cfg_fail(err, "", "export", "expected an object, got %s", rt_cfg_type_name(ex));
    rt_status st = rt_cfg_check_keys(ex, "export", keys, NULL, err);
    if (!st)
        st = rt_cfg_str(ex, "export", "name", 0, &name, err);
    if (!st)
        st = rt_cfg_str(ex, "export", "format", 0, &format, err);
    if (!st)
        st = rt_cfg_array(ex, "export", "exporters", 0, &exporters, err);
    if (!st)
        st = rt_spec_check_name(name, "export", "name", err);
    if (!st)
        st = rt_cfg_object(ex, "export", "explanation", 0, &explanation, err);
    if (!st && explanation)
        st = parse_explanation(s, explanation);
    if (st)
        return st;
    if (strcmp(format, "JSON") == 0)
        s->def->receiver = PREDICTD__RECEIVER__RECEIVER_JSON;
    else if (strcmp(format, "CSV") == 0)
        s->def->receiver = PREDICTD__RECEIVER__RECEIVER_CSV;
    else if (strcmp(format, "EXAMPLE") == 0)
        s->def->receiver = PREDICTD__RECEIVER__RECEIVER_EXAMPLE;
    else
        return rt_cfg_fail(err, "export", "format", "\"%.32s\" is not one of JSON, CSV, EXAMPLE",
                           format);
    if (s->def->model_name != protobuf_c_empty_string)
        free(s->def->model_name);
    if (!(s->def->model_name = rt_spec_strndup(name, strlen(name))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    return RT_OK;
}

/* ------------------------------------------------------------ the entry */

rt_status rt_spec_to_modeldef(const cJSON *spec, const char *const *other_keys,
                              Predictd__ModelDef **out, rt_err *err)
{
    static const char *const keys[] = {"columns",  "unused_columns", "label",
                                       "feature_columns", "estimator", "trim_strings",
                                       "export", NULL};
    rt_status st = RT_OK;
    spec_ctx s = {.err = err, .trim = true};
    if (!out)
        return rt_err_set(err, RT_ERR_INVALID, "rt_spec_to_modeldef: out is NULL");
    *out = NULL;
    if (!spec || !cJSON_IsObject(spec))
        return rt_err_set(err, RT_ERR_INVALID, "spec: expected a JSON object");
    if ((st = rt_cfg_check_keys(spec, "", keys, other_keys, err)))
        return st;
    if ((st = rt_cfg_bool(spec, "", "trim_strings", 0, &s.trim, err)))
        return st;

    Predictd__ModelDef *def = malloc(sizeof *def);
    if (!def)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    predictd__model_def__init(def);
    s.def = def;
    def->format_version = RT_FORMAT_VERSION;
    def->trim_strings = s.trim;
    def->head = malloc(sizeof *def->head);
    def->graph = malloc(sizeof *def->graph);
    def->model_name = rt_spec_strndup("model", 5);
    if (!def->head || !def->graph || !def->model_name) {
        free(def->head);
        free(def->graph);
        def->head = NULL;
        def->graph = NULL;
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    predictd__head__init(def->head);
    predictd__graph__init(def->graph);

    const cJSON *cols = NULL, *unused = NULL, *fcs = NULL;
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(spec, "label");
    const cJSON *est = cJSON_GetObjectItemCaseSensitive(spec, "estimator");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(spec, "export");
    if ((st = rt_cfg_array(spec, "", "columns", RT_CFG_REQUIRED, &cols, err)) ||
        (st = parse_columns(&s, cols)))
        goto out;
    /* several heads (TF's MultiHead) name their own label columns */
    if (rt_spec_heads_count(est) > 1) {
        if (label) {
            st = rt_cfg_fail(err, "", "label", "with several heads (estimator.model.heads) each "
                             "head names its label column: drop the spec's \"label\"");
            goto out;
        }
        if ((st = rt_spec_heads_labels(&s, est)))
            goto out;
    } else if (!label) {
        st = rt_cfg_fail(err, "", "label", "missing (required)");
        goto out;
    } else if ((st = parse_label(&s, label))) {
        goto out;
    }
    if ((st = rt_cfg_array(spec, "", "unused_columns", 0, &unused, err)) ||
        (unused && (st = parse_unused(&s, unused))))
        goto out;
    if ((st = rt_spec_heads_count(est) > 1 ? rt_spec_heads_weights(&s, est)
                                            : parse_weight_column(&s, est)))
        goto out;
    if ((st = rt_cfg_array(spec, "", "feature_columns", RT_CFG_REQUIRED, &fcs, err)) ||
        (st = rt_spec_parse_feature_columns(&s, fcs)))
        goto out;
    if (ex && (st = parse_export(&s, ex)))
        goto out;
    if (!est) {
        st = rt_cfg_fail(err, "", "estimator", "missing (required)");
        goto out;
    }
    /* the custom estimator (rt_spec_custom.c) or a canned one (rt_spec_graph.c) */
    const char *type = NULL;
    bool custom = cJSON_IsObject(est) &&
                  rt_cfg_str(est, "estimator", "type", 0, &type, NULL) == RT_OK && type &&
                  strcmp(type, "Estimator") == 0;
    if ((st = custom ? rt_spec_parse_custom(&s, est) : rt_spec_parse_estimator(&s, est)))
        goto out;
    if ((st = rt_spec_build_signatures(&s)))
        goto out;
    /* Last check: the runtime must be able to compile what we made. */
    if ((st = rt_graph_check(def, err))) {
        rt_err_prefix(err, "spec (internal check)");
        goto out;
    }
out:
    if (st) {
        rt_spec_modeldef_free(def);
        return st;
    }
    *out = def;
    return RT_OK;
}

void rt_spec_modeldef_free(Predictd__ModelDef *def)
{
    if (def)
        predictd__model_def__free_unpacked(def, NULL);
}
