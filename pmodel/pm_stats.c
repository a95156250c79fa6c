/*
 * pm_stats.c — predict-model stats: the statistics of a data set's raw
 * inputs (rt_stats: TFDV's DatasetFeatureStatistics, docs/data-validation.md)
 * as a table or as statistics.json; of an export's training data (--dir
 * without --data: the export's own statistics.json) or of CSV files in the
 * export's or a spec's columns (--data); --report also writes the HTML page
 * (pm_stats_report.c). Also the CSV reading and the table that validate and
 * show use.
 */
#include "pm.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* With train: counts, per input, the numbers outside train's [min, max]
 * (oor) and the non-integers of an INT input (nonint). */
static void range_count(const rt_stats_acc *a, size_t i, const rt_stats *train, const char *s,
                        size_t len, uint64_t *oor, uint64_t *nonint)
{
    const rt_feature_stats *t = rt_stats_find(train, rt_stats_acc_name(a, i));
    double v;
    if (!t || t->type == RT_STATS_STRING || rt_raw_number(s, len, &v) != RT_OK || isnan(v))
        return;
    if (t->num_non_missing > t->num_nan && (v < t->min || v > t->max))
        oor[i]++;
    if (t->type == RT_STATS_INT && v != floor(v))
        nonint[i]++;
}

rt_status pm_stats_of_files(const Predictd__ModelDef *def, const char *const *files, size_t n,
                            size_t skip, const rt_stats *train, uint64_t *oor, uint64_t *nonint,
                            rt_stats **out, rt_err *err)
{
    return pm_stats_of_fields(def, NULL, def->n_raw_columns, files, n, skip, train, oor, nonint,
                              out, err);
}

rt_status pm_stats_of_fields(const Predictd__ModelDef *def, const long *field, size_t nf,
                             const char *const *files, size_t n, size_t skip,
                             const rt_stats *train, uint64_t *oor, uint64_t *nonint,
                             rt_stats **out, rt_err *err)
{
    *out = NULL;
    rt_stats_acc *a = rt_stats_acc_new(def);
    rt_csv_span *spans = calloc(nf ? nf : 1, sizeof *spans);
    char *line = NULL, *text = NULL;
    size_t cap = 0, tcap = 0;
    rt_status st = RT_OK;
    if (!a || !spans) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* Without a map, a row may also end at the last input column: the
     * model's columns without the trailing label (serving data; XGBoost's
     * and ONNX's models, whose label column is the loader's own). */
    size_t inputs_end = nf;
    if (!field) {
        inputs_end = 0;
        for (size_t i = 0; i < rt_stats_acc_inputs(a); i++)
            if ((size_t)rt_stats_acc_column(a, i) + 1 > inputs_end)
                inputs_end = (size_t)rt_stats_acc_column(a, i) + 1;
    }
    for (size_t fi = 0; fi < n && st == RT_OK; fi++) {
        FILE *fp = fopen(files[fi], "r");
        if (!fp) {
            st = rt_err_set(err, RT_ERR_IO, "%s: cannot open: %s", files[fi], strerror(errno));
            break;
        }
        ssize_t got;
        unsigned long long lineno = 0;
        while (st == RT_OK && (got = getline(&line, &cap, fp)) >= 0) {
            lineno++;
            if (lineno <= skip)
                continue;
            size_t len = (size_t)got;
            while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                len--;
            size_t k = 0;
            while (k < len && (line[k] == ' ' || line[k] == '\t'))
                k++;
            if (k == len)
                continue;
            if (len + 1 > tcap) {
                char *nt = realloc(text, len + 1);
                if (!nt) {
                    st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                    break;
                }
                text = nt;
                tcap = len + 1;
            }
            rt_err why;
            long fields = rt_raw_csv_split(line, len, text, spans, nf, &why);
            bool fit = fields >= 0 && ((size_t)fields == nf || (size_t)fields == inputs_end);
            if (fields >= 0 && !fit && inputs_end < nf)
                rt_err_set(&why, RT_ERR_INVALID, "expected %zu fields (the model's columns) or "
                           "%zu (without the label), got %ld", nf, inputs_end, fields);
            else if (fields >= 0 && !fit)
                rt_err_set(&why, RT_ERR_INVALID, "expected %zu fields (%s), got %ld", nf,
                           field ? "the header's" : "the model's columns", fields);
            rt_status cs = fit ? RT_OK : RT_ERR_INVALID;
            if (cs == RT_OK && rt_stats_acc_example(a) != 0)
                cs = rt_err_set(&why, RT_ERR_NOMEM, "out of memory");
            for (size_t i = 0; cs == RT_OK && i < rt_stats_acc_inputs(a); i++) {
                long c = rt_stats_acc_column(a, i);
                if (field && (c = field[c]) < 0) { /* not in the file: missing */
                    if (rt_stats_acc_missing(a, i) != 0)
                        cs = rt_err_set(&why, RT_ERR_NOMEM, "out of memory");
                    continue;
                }
                cs = rt_stats_acc_cell(a, i, text + spans[c].off, spans[c].len,
                                       def->trim_strings, &why);
                if (cs == RT_OK && train && rt_stats_acc_type(a, i) != RT_STATS_STRING)
                    range_count(a, i, train, text + spans[c].off, spans[c].len, oor, nonint);
            }
            if (cs != RT_OK) {
                st = cs;
                if (err)
                    *err = why;
                rt_err_prefix(err, "%s:%llu", files[fi], lineno);
            }
        }
        fclose(fp);
    }
    if (st == RT_OK)
        st = rt_stats_acc_finish(a, out, err);
out:
    free(line);
    free(text);
    free(spans);
    rt_stats_acc_free(a);
    return st;
}

static const char *type_name(rt_stats_type t)
{
    return t == RT_STATS_INT ? "INT" : t == RT_STATS_FLOAT ? "FLOAT" : "STRING";
}

void pm_stats_table(const rt_stats *s, FILE *o)
{
    fprintf(o, "examples: %llu\n", (unsigned long long)s->num_examples);
    int w = 8;
    for (size_t i = 0; i < s->n; i++)
        if ((int)strlen(s->f[i].name) > w && strlen(s->f[i].name) < 40)
            w = (int)strlen(s->f[i].name);
    fprintf(o, "\nnumeric features\n  %-*s %-5s %9s %8s %6s %8s %12s %12s %12s %12s %12s\n", w,
            "feature", "type", "count", "missing", "nan", "zeros", "mean", "std_dev", "min",
            "median", "max");
    for (size_t i = 0; i < s->n; i++) {
        const rt_feature_stats *f = &s->f[i];
        if (f->type == RT_STATS_STRING)
            continue;
        fprintf(o, "  %-*s %-5s %9llu %8llu %6llu %8llu %12.6g %12.6g %12.6g %12.6g %12.6g%s\n",
                w, f->name, type_name(f->type), (unsigned long long)f->num_non_missing,
                (unsigned long long)f->num_missing, (unsigned long long)f->num_nan,
                (unsigned long long)f->num_zeros, f->mean, f->std_dev, f->min, f->median,
                f->max, f->approximate ? "  (approximate)" : "");
    }
    fprintf(o, "\nstring features\n  %-*s %9s %8s %8s %8s  top values\n", w, "feature",
            "count", "missing", "unique", "avg_len");
    for (size_t i = 0; i < s->n; i++) {
        const rt_feature_stats *f = &s->f[i];
        if (f->type != RT_STATS_STRING)
            continue;
        fprintf(o, "  %-*s %9llu %8llu %7llu%s %8.3g ", w, f->name,
                (unsigned long long)f->num_non_missing, (unsigned long long)f->num_missing,
                (unsigned long long)f->unique, f->unique_at_least ? "+" : " ", f->avg_length);
        for (size_t k = 0; k < f->n_values && k < 3; k++)
            fprintf(o, " \"%s\" %llu", f->values[k].value, (unsigned long long)f->values[k].count);
        if (f->n_values > 3)
            fprintf(o, " ...");
        fprintf(o, "\n");
    }
    for (size_t i = 0; i < s->n; i++) {
        const rt_feature_stats *f = &s->f[i];
        if (f->type == RT_STATS_STRING || !f->standard.n)
            continue;
        fprintf(o, "\n%s: histogram (10 equal-width buckets%s)\n", f->name,
                f->num_nan ? ", NaN apart" : "");
        double mx = 0;
        for (size_t k = 0; k < f->standard.n; k++)
            mx = fmax(mx, f->standard.b[k].count);
        for (size_t k = 0; k < f->standard.n; k++) {
            const rt_stats_bucket *b = &f->standard.b[k];
            int bar = mx > 0 ? (int)lround(30 * b->count / mx) : 0;
            fprintf(o, "  [%12.6g, %12.6g%c %9.0f %.*s\n", b->low, b->high,
                    k + 1 == f->standard.n ? ']' : ')', b->count, bar,
                    "##############################");
        }
        fprintf(o, "  quantiles:");
        for (int k = 0; k <= RT_STATS_BUCKETS; k++)
            fprintf(o, " %.6g", f->quantiles[k]);
        fprintf(o, "\n");
    }
}

/* The model the columns come from: the export's, or a spec's. */
static Predictd__ModelDef *spec_def(const char *path, rt_err *err)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *spec = NULL;
    Predictd__ModelDef *def = NULL;
    static const char *const other[] = {"train", "eval", NULL};
    if (rt_file_read(AT_FDCWD, path, (size_t)64 << 20, 0, &text, &len, err) == RT_OK &&
        rt_cfg_parse_json(text, len, &spec, err) == RT_OK &&
        rt_spec_to_modeldef(spec, other, &def, err) != RT_OK)
        def = NULL;
    if (!def)
        rt_err_prefix(err, "%s", path);
    cJSON_Delete(spec);
    free(text);
    return def;
}

/* See pm.h. */
int pm_stats_skip_lines(const char *s, size_t *skip)
{
    *skip = 0;
    if (!s)
        return 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || end == s || v > 1000000) {
        fprintf(stderr, "predict-model: --skip-header-lines: \"%s\" is not a count\n", s);
        return PM_EXIT_USAGE;
    }
    *skip = (size_t)v;
    return 0;
}

int pm_cmd_stats(const pm_opts *o)
{
    rt_err err = {{0}};
    rt_model *m = NULL;
    Predictd__ModelDef *own = NULL;
    const Predictd__ModelDef *def = NULL;
    rt_stats *s = NULL;
    const rt_stats *show = NULL;
    int rc = 1;
    size_t skip = 0;
    if (pm_stats_skip_lines(o->skip_header, &skip))
        return PM_EXIT_USAGE;
    if (o->dir) {
        if (!(m = pm_open_model(o->dir, NULL)))
            return 1;
        def = rt_model_def(m);
    } else {
        if (!(own = spec_def(o->spec, &err))) {
            fprintf(stderr, "predict-model: %s\n", err.msg);
            return 1;
        }
        def = own;
    }
    if (o->data.n) {
        if (pm_stats_of_files(def, (const char *const *)o->data.v, o->data.n, skip, NULL, NULL,
                              NULL, &s, &err) != RT_OK) {
            fprintf(stderr, "predict-model: %s\n", err.msg);
            goto out;
        }
        show = s;
    } else if (!(show = rt_model_stats(m))) {
        fprintf(stderr, "predict-model: %s has no training statistics (statistics.json: "
                        "exported before they existed); give --data FILE.csv\n", o->dir);
        goto out;
    }
    if (o->report) { /* the HTML page, written whole (temp file, fsync, rename) */
        rt_buf b;
        rt_buf_init(&b);
        char title[600], what[600];
        snprintf(title, sizeof title, "%s%s", o->data.n ? o->data.v[0] : "training data",
                 o->data.n > 1 ? " ..." : "");
        snprintf(what, sizeof what, "%s %s", o->data.n ? "in the columns of" : "of the export",
                 o->dir ? o->dir : o->spec);
        pm_stats_html(show, title, what, &b);
        rt_err we = {{0}};
        rt_status wst = rt_buf_failed(&b) ? RT_ERR_NOMEM
                                          : rt_file_write(o->report, b.data, b.len, &we);
        rt_buf_free(&b);
        if (wst != RT_OK) {
            fprintf(stderr, "predict-model: --report: %s\n",
                    wst == RT_ERR_NOMEM ? "out of memory" : we.msg);
            goto out;
        }
    }
    if (o->format && strcmp(o->format, "json") == 0) {
        rt_buf b;
        rt_buf_init(&b);
        rt_ignore(rt_stats_write_json(show, o->data.n ? "data" : "train", &b)); /* fails only as b does */
        if (!rt_buf_failed(&b))
            fwrite(b.data, 1, b.len, stdout);
        rt_buf_free(&b);
    } else {
        pm_stats_table(show, stdout);
    }
    rc = 0;
out:
    rt_stats_free(s);
    rt_model_close(m);
    if (own)
        rt_spec_modeldef_free(own);
    return rc;
}
