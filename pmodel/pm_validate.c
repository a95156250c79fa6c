/*
 * pm_validate.c — predict-model validate: a data set against an export's
 * training statistics, as TensorFlow Data Validation's validate_statistics
 * with skew comparators does (docs/data-validation.md): the anomalies
 * under TFDV's AnomalyInfo type names, and per feature the distance —
 * L-infinity for string features, Jensen-Shannon divergence for numeric
 * ones — against its threshold (default 0.3). A table, JSON, and a
 * self-contained HTML report (pm_report.c's style): anomalies first, then
 * per feature the training and the new histogram or values overlaid.
 * Exit status 3 when anything is anomalous, so a pipeline can gate on it.
 */
#include "pm.h"

#include <cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PM_VALIDATE_ANOMALOUS 3
#define DEFAULT_THRESHOLD 0.3

typedef struct vfeat {
    const rt_feature_stats *tr, *nw;
    int numeric;
    double dist;       /* -1: not computed (a side has no values) */
    double thr;
    const char *which; /* L-infinity: the value of the largest difference */
    uint64_t unseen;   /* string values not among training's */
    uint64_t oor, nonint;
    int anomalous;
} vfeat;

typedef struct anomaly {
    size_t feat;
    const char *type, *short_desc;
    char desc[400];
} anomaly;

typedef struct vres {
    const rt_stats *tr, *nw;
    vfeat *f;
    size_t n;
    anomaly *a;
    size_t na, cap;
} vres;

static int add_anomaly(vres *r, size_t feat, const char *type, const char *short_desc,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int add_anomaly(vres *r, size_t feat, const char *type, const char *short_desc,
                       const char *fmt, ...)
{
    if (rt_grow(&r->a, &r->cap, r->na + 1, sizeof *r->a))
        return -1;
    anomaly *x = &r->a[r->na++];
    x->feat = feat;
    x->type = type;
    x->short_desc = short_desc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->desc, sizeof x->desc, fmt, ap);
    va_end(ap);
    r->f[feat].anomalous = 1;
    return 0;
}

/* --thresholds FILE: {"default_threshold": x, "thresholds": {"feature": x}}. */
static rt_status read_thresholds(const char *path, const rt_stats *tr, double *def, double *per,
                                 rt_err *err)
{
    static const char *const keys[] = {"default_threshold", "thresholds", NULL};
    char *text = NULL;
    size_t len = 0;
    cJSON *j = NULL;
    rt_status st = rt_file_read(AT_FDCWD, path, (size_t)16 << 20, 0, &text, &len, err);
    if (st == RT_OK)
        st = rt_cfg_parse_json(text, len, &j, err);
    if (st == RT_OK)
        st = rt_cfg_check_keys(j, "", keys, NULL, err);
    if (st == RT_OK)
        st = rt_cfg_num(j, "", "default_threshold", 0, 0, 1e300, def, err);
    for (size_t i = 0; i < tr->n; i++)
        per[i] = *def;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "thresholds");
    if (st == RT_OK && t && !cJSON_IsObject(t))
        st = rt_cfg_fail(err, "", "thresholds", "expected an object {\"feature\": threshold}");
    const cJSON *x, *walk = st == RT_OK ? t : NULL;
    cJSON_ArrayForEach(x, walk)
    {
        size_t i = 0;
        while (i < tr->n && strcmp(tr->f[i].name, x->string) != 0)
            i++;
        if (i == tr->n) {
            const char **names = malloc((tr->n ? tr->n : 1) * sizeof *names);
            for (size_t k = 0; names && k < tr->n; k++)
                names[k] = tr->f[k].name;
            const char *near = names ? rt_settings_nearest_name(x->string, names, tr->n) : NULL;
            st = rt_cfg_fail(err, "thresholds", x->string,
                             "not a feature of the training statistics%s%s%s",
                             near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "");
            free(names);
            break;
        }
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0)) {
            st = rt_cfg_fail(err, "thresholds", x->string, "expected a number >= 0");
            break;
        }
        per[i] = x->valuedouble;
    }
    if (st != RT_OK)
        rt_err_prefix(err, "%s", path);
    cJSON_Delete(j);
    free(text);
    return st;
}

static int known(const rt_feature_stats *tr, const char *v)
{
    for (size_t k = 0; k < tr->n_values; k++)
        if (strcmp(tr->values[k].value, v) == 0)
            return 1;
    return 0;
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0;
}

/* Distances and anomalies of every training feature. -1 out of memory. */
static int compare(vres *r, const double *thr, const uint64_t *oor, const uint64_t *nonint)
{
    for (size_t i = 0; i < r->n; i++) {
        vfeat *v = &r->f[i];
        const rt_feature_stats *t = v->tr, *d = v->nw;
        v->numeric = t->type != RT_STATS_STRING;
        v->thr = thr[i];
        v->dist = -1;
        v->which = "";
        v->oor = oor[i];
        v->nonint = nonint[i];
        if (!d)
            continue;
        int rc = 0;
        uint64_t tp = t->num_non_missing, dp = d->num_non_missing;
        if (tp > 0 && dp == 0)
            rc |= add_anomaly(r, i, "FEATURE_TYPE_NOT_PRESENT", "Column dropped",
                              "The feature was not present in any examples (present in %.4g%% "
                              "of the training examples).",
                              100 * share(tp, tp + t->num_missing));
        if (tp == 0 && dp > 0)
            rc |= add_anomaly(r, i, "SCHEMA_NEW_COLUMN", "New column",
                              "The feature is present in %llu examples; training had no value "
                              "of it.", (unsigned long long)dp);
        double tm = share(t->num_missing, tp + t->num_missing),
               dm = share(d->num_missing, dp + d->num_missing);
        if (dp > 0 && dm > tm)
            rc |= add_anomaly(r, i, "FEATURE_TYPE_LOW_FRACTION_PRESENT",
                              "Column missing in some examples",
                              "The feature is missing in %.4g%% of the examples, more than in "
                              "training (%.4g%%).", 100 * dm, 100 * tm);
        if (v->numeric) {
            if (v->nonint)
                rc |= add_anomaly(r, i, "UNEXPECTED_DATA_TYPE", "Unexpected data type",
                                  "Expected data of type: INT but got FLOAT (%llu values are not "
                                  "integers).", (unsigned long long)v->nonint);
            if (d->num_nan && !t->num_nan)
                rc |= add_anomaly(r, i, "FLOAT_TYPE_HAS_NAN", "Invalid values",
                                  "%llu values are NaN (%.4g%%); training had none.",
                                  (unsigned long long)d->num_nan, 100 * share(d->num_nan, dp));
            if (v->oor && dp > d->num_nan) {
                int is_int = t->type == RT_STATS_INT;
                if (d->min < t->min)
                    rc |= add_anomaly(r, i, is_int ? "INT_TYPE_SMALL_INT" : "FLOAT_TYPE_SMALL_FLOAT",
                                      "Out-of-range values",
                                      "Unexpectedly low values: %.9g < %.9g (the training "
                                      "minimum).", d->min, t->min);
                if (d->max > t->max)
                    rc |= add_anomaly(r, i, is_int ? "INT_TYPE_BIG_INT" : "FLOAT_TYPE_BIG_FLOAT",
                                      "Out-of-range values",
                                      "Unexpectedly high values: %.9g > %.9g (the training "
                                      "maximum).", d->max, t->max);
                if (r->na && r->a[r->na - 1].feat == i)
                    snprintf(r->a[r->na - 1].desc + strlen(r->a[r->na - 1].desc),
                             sizeof r->a[r->na - 1].desc - strlen(r->a[r->na - 1].desc),
                             " %llu values (%.4g%%) are outside [%.9g, %.9g].",
                             (unsigned long long)v->oor, 100 * share(v->oor, dp), t->min,
                             t->max);
            }
            if (tp > t->num_nan || t->num_nan)
                v->dist = dp ? rt_stats_jsd(&t->standard, &d->standard) : -1;
            if (v->dist > v->thr)
                rc |= add_anomaly(r, i, "COMPARATOR_JENSEN_SHANNON_DIVERGENCE_HIGH",
                                  "High approximate Jensen-Shannon divergence between training "
                                  "and data",
                                  "The approximate Jensen-Shannon divergence between training "
                                  "and data is %.6g, above the threshold %.6g.",
                                  v->dist, v->thr);
        } else {
            size_t kinds = 0;
            const char *first = NULL;
            for (size_t k = 0; k < d->n_values; k++)
                if (!known(t, d->values[k].value)) {
                    v->unseen += d->values[k].count;
                    if (!kinds++)
                        first = d->values[k].value;
                }
            if (v->unseen && t->other_count == 0)
                rc |= add_anomaly(r, i, "ENUM_TYPE_UNEXPECTED_STRING_VALUES",
                                  "Unexpected string values",
                                  "%zu value%s not seen in training, %llu examples (%.4g%%), "
                                  "e.g. \"%.60s\".", kinds, kinds == 1 ? "" : "s",
                                  (unsigned long long)v->unseen, 100 * share(v->unseen, dp),
                                  first);
            if (tp && dp)
                v->dist = rt_stats_linf(t->values, t->n_values, d->values, d->n_values,
                                        &v->which);
            if (v->dist > v->thr)
                rc |= add_anomaly(r, i, "COMPARATOR_L_INFTY_HIGH",
                                  "High Linfty distance between training and data",
                                  "The Linfty distance between training and data is %.6g, above "
                                  "the threshold %.6g. The feature value with maximum difference "
                                  "is: %.60s", v->dist, v->thr, v->which);
        }
        if (rc)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- output */

static void print_table(const vres *r)
{
    printf("examples: %llu (training: %llu)\n", (unsigned long long)r->nw->num_examples,
           (unsigned long long)r->tr->num_examples);
    printf("\nanomalies: %zu\n", r->na);
    for (size_t k = 0; k < r->na; k++)
        printf("  %-16s %-42s %s\n           %s\n", r->f[r->a[k].feat].tr->name, r->a[k].type,
               r->a[k].short_desc, r->a[k].desc);
    printf("\n  %-16s %-8s %-26s %10s %9s %9s %9s\n", "feature", "type", "distance", "value",
           "threshold", "unseen", "out_range");
    for (size_t i = 0; i < r->n; i++) {
        const vfeat *v = &r->f[i];
        printf("  %-16s %-8s %-26s ", v->tr->name, v->numeric ? "numeric" : "string",
               v->numeric ? "jensen_shannon_divergence" : "l_infinity");
        if (v->dist >= 0)
            printf("%10.6f", v->dist);
        else
            printf("%10s", "-");
        printf(" %9.4g %9llu %9llu%s\n", v->thr, (unsigned long long)v->unseen,
               (unsigned long long)v->oor, v->dist > v->thr ? "  ABOVE THRESHOLD" : "");
    }
}

static int json_str(rt_buf *b, const char *s)
{
    return rt_buf_json_string(b, s, strlen(s));
}

/* Anomaly k's fields (feature, type, short and long description) in one
 * format: each after its separator in sep[0..3] and written by put (a JSON
 * string, HTML text), then sep[4]. */
static void anomaly_fields(const vres *r, size_t k, rt_buf *b, const char *const sep[5],
                           int (*put)(rt_buf *, const char *))
{
    const anomaly *a = &r->a[k];
    const char *field[4] = {r->f[a->feat].tr->name, a->type, a->short_desc, a->desc};
    for (int i = 0; i < 4; i++) {
        rt_buf_puts(b, sep[i]);
        put(b, field[i]);
    }
    rt_buf_puts(b, sep[4]);
}

static void json_num(rt_buf *b, double v)
{
    if (isfinite(v))
        rt_buf_json_double(b, v);
    else
        rt_buf_puts(b, "null");
}

static void print_json(const vres *r, rt_buf *b)
{
    rt_buf_printf(b, "{\"examples\": %llu, \"training_examples\": %llu, \"anomalous\": %s, "
                     "\"anomalies\": [",
                  (unsigned long long)r->nw->num_examples, (unsigned long long)r->tr->num_examples,
                  r->na ? "true" : "false");
    for (size_t k = 0; k < r->na; k++) {
        const char *const sep[5] = {k ? ",\n  {\"feature\": " : "\n  {\"feature\": ",
                                    ", \"type\": ", ", \"short_description\": ",
                                    ", \"description\": ", "}"};
        anomaly_fields(r, k, b, sep, json_str);
    }
    rt_buf_puts(b, "],\n \"features\": [");
    for (size_t i = 0; i < r->n; i++) {
        const vfeat *v = &r->f[i];
        rt_buf_puts(b, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        json_str(b, v->tr->name);
        rt_buf_printf(b, ", \"distance\": {\"type\": \"%s\", \"value\": ",
                      v->numeric ? "JENSEN_SHANNON_DIVERGENCE" : "L_INFTY");
        if (v->dist >= 0)
            json_num(b, v->dist);
        else
            rt_buf_puts(b, "null");
        rt_buf_puts(b, ", \"threshold\": ");
        json_num(b, v->thr);
        rt_buf_printf(b, ", \"anomalous\": %s", v->dist > v->thr ? "true" : "false");
        if (!v->numeric) {
            rt_buf_puts(b, ", \"value_with_max_difference\": ");
            json_str(b, v->which);
        }
        rt_buf_printf(b, "}, \"unseen_values\": %llu, \"out_of_range\": %llu, "
                         "\"anomalies\": %s}",
                      (unsigned long long)v->unseen, (unsigned long long)v->oor,
                      v->anomalous ? "true" : "false");
    }
    rt_buf_puts(b, "]}\n");
}

/* --------------------------------------------------------- HTML report */

static void html(const vres *r, const char *model, const char *data, rt_buf *b)
{
    rt_buf_printf(b, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<title>Data validation</title><style>%s"
                     ".feat{background:#fff;border-radius:8px;padding:10px 14px;margin:0 0 14px;"
                     "box-shadow:0 1px 2px rgba(15,23,42,.12)}.feat.bad{box-shadow:inset 0 0 0 "
                     "2px #dc2626}.legend span{display:inline-block;width:10px;height:10px;"
                     "margin:0 4px 0 12px}</style></head><body><header><h1>Data validation: ",
                  pm_report_css());
    pm_html_esc(b, data);
    rt_buf_puts(b, "</h1><p>against the training statistics of ");
    pm_html_esc(b, model);
    rt_buf_printf(b, " &middot; %llu examples (training %llu)</p></header><main>",
                  (unsigned long long)r->nw->num_examples, (unsigned long long)r->tr->num_examples);
    rt_buf_printf(b, "<h2>Anomalies (%zu)</h2>", r->na);
    if (r->na) {
        rt_buf_puts(b, "<table><tr><th class=\"l\">feature</th><th class=\"l\">type</th>"
                       "<th class=\"l\">anomaly</th><th class=\"l\">description</th></tr>");
        static const char *const sep[5] = {
            "<tr class=\"worst\"><td class=\"l\">", "</td><td class=\"l\">",
            "</td><td class=\"l\">", "</td><td class=\"l\">", "</td></tr>"};
        for (size_t k = 0; k < r->na; k++)
            anomaly_fields(r, k, b, sep, pm_html_esc);
        rt_buf_puts(b, "</table>");
    } else {
        rt_buf_puts(b, "<p class=\"note\">None: every feature is within its threshold.</p>");
    }
    rt_buf_puts(b, "<h2>Features</h2><p class=\"legend note\"><span style=\"background:#3b82f6"
                   "\"></span>training<span style=\"background:#f97316\"></span>data</p>");
    for (int pass = 0; pass < 2; pass++) /* anomalous features first */
        for (size_t i = 0; i < r->n; i++) {
            const vfeat *v = &r->f[i];
            if (v->anomalous != !pass)
                continue;
            rt_buf_printf(b, "<div class=\"feat%s\" data-feature=\"", v->anomalous ? " bad" : "");
            pm_html_esc(b, v->tr->name);
            rt_buf_puts(b, "\"><h3>");
            pm_html_esc(b, v->tr->name);
            if (v->anomalous)
                rt_buf_puts(b, "<span class=\"badge\">anomalous</span>");
            rt_buf_printf(b, "</h3><p class=\"sub note\">%s: <b data-metric=\"distance\" "
                             "data-value=\"%.9g\">",
                          v->numeric ? "Jensen-Shannon divergence" : "L-infinity distance",
                          v->dist);
            if (v->dist >= 0)
                rt_buf_printf(b, "%.4f", v->dist);
            else
                rt_buf_puts(b, "&ndash;");
            rt_buf_printf(b, "</b> (threshold <span data-metric=\"threshold\" data-value=\"%.9g\">"
                             "%.4g</span>)",
                          v->thr, v->thr);
            if (v->numeric)
                rt_buf_printf(b, " &middot; out of the training range: %llu",
                              (unsigned long long)v->oor);
            else
                rt_buf_printf(b, " &middot; values not seen in training: %llu",
                              (unsigned long long)v->unseen);
            rt_buf_puts(b, "</p>");
            if (v->numeric)
                pm_html_hist(b, v->tr, v->nw);
            else
                pm_html_values(b, v->tr, v->nw);
            rt_buf_puts(b, "</div>");
        }
    rt_buf_puts(b, "<p class=\"note\">Distances as TensorFlow Data Validation computes them "
                   "(docs/data-validation.md).</p></main></body></html>\n");
}

/* ------------------------------------------------------------ command */

int pm_cmd_validate(const pm_opts *o)
{
    rt_err err = {{0}};
    char *where = NULL;
    rt_model *m = pm_open_model(o->dir, &where);
    if (!m)
        return 1;
    int rc = 1;
    rt_stats *nw = NULL;
    vres r;
    memset(&r, 0, sizeof r);
    double *thr = NULL;
    uint64_t *oor = NULL, *nonint = NULL, *oor_in = NULL, *nonint_in = NULL;
    rt_buf b;
    rt_buf_init(&b);
    size_t skip = 0;
    const rt_stats *tr = rt_model_stats(m);
    if (pm_stats_skip_lines(o->skip_header, &skip)) {
        rc = PM_EXIT_USAGE;
        goto out;
    }
    if (!tr) {
        fprintf(stderr, "predict-model: %s has no training statistics (statistics.json: "
                        "exported before they existed)\n", where);
        goto out;
    }
    size_t ni = rt_model_def(m)->n_raw_columns; /* at least the accumulator's inputs */
    r.n = tr->n;
    r.tr = tr;
    r.f = calloc(tr->n ? tr->n : 1, sizeof *r.f);
    thr = calloc(tr->n ? tr->n : 1, sizeof *thr);
    oor = calloc(tr->n ? tr->n : 1, sizeof *oor);
    nonint = calloc(tr->n ? tr->n : 1, sizeof *nonint);
    oor_in = calloc(ni ? ni : 1, sizeof *oor_in);
    nonint_in = calloc(ni ? ni : 1, sizeof *nonint_in);
    if (!r.f || !thr || !oor || !nonint || !oor_in || !nonint_in) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    double def_thr = DEFAULT_THRESHOLD;
    for (size_t i = 0; i < tr->n; i++)
        thr[i] = def_thr;
    if (o->thresholds && read_thresholds(o->thresholds, tr, &def_thr, thr, &err) != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        rc = PM_EXIT_USAGE;
        goto out;
    }
    if (pm_stats_of_files(rt_model_def(m), (const char *const *)o->data.v, o->data.n, skip, tr,
                          oor_in, nonint_in, &nw, &err) != RT_OK) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        goto out;
    }
    r.nw = nw;
    for (size_t i = 0; i < tr->n; i++) {
        r.f[i].tr = &tr->f[i];
        for (size_t k = 0; k < nw->n; k++)
            if (strcmp(nw->f[k].name, tr->f[i].name) == 0) {
                r.f[i].nw = &nw->f[k];
                oor[i] = oor_in[k];
                nonint[i] = nonint_in[k];
            }
    }
    if (compare(&r, thr, oor, nonint)) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    char data[512];
    snprintf(data, sizeof data, "%s%s", o->data.v[0], o->data.n > 1 ? " ..." : "");
    if (o->report) {
        html(&r, where, data, &b);
        rt_err we = {{0}};
        if (rt_buf_failed(&b) || rt_file_write(o->report, b.data, b.len, &we) != RT_OK) {
            fprintf(stderr, "predict-model: --report: %s\n",
                    rt_buf_failed(&b) ? "out of memory" : we.msg);
            goto out;
        }
        rt_buf_reset(&b);
    }
    if (o->format && strcmp(o->format, "json") == 0) {
        print_json(&r, &b);
        if (!rt_buf_failed(&b))
            fwrite(b.data, 1, b.len, stdout);
    } else {
        print_table(&r);
    }
    rc = r.na ? PM_VALIDATE_ANOMALOUS : 0;
out:
    rt_buf_free(&b);
    free(r.f);
    free(r.a);
    free(thr);
    free(oor);
    free(nonint);
    free(oor_in);
    free(nonint_in);
    rt_stats_free(nw);
    free(where);
    rt_model_close(m);
    return rc;
}
