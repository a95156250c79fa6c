/*
 * pm_evaluate.c — predict-model evaluate: evaluates an export on labelled
 * CSV files (pm_eval.c) and prints the metrics overall and per slice, the
 * confusion matrix and the threshold table, or everything as one JSON
 * object; --report also writes the HTML report (pm_report.c).
 */
#include "pm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a count flag ("--batch-size 256"); 0 ok, else prints the error. */
static int parse_count(const char *flag, const char *s, size_t min, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = s ? strtoull(s, &end, 10) : 0;
    if (!s) {
        *out = 0;
        return 0;
    }
    if (errno || end == s || *end || *s == '-' || v < min || v > (1u << 24)) {
        fprintf(stderr, "predict-model: %s: expected an integer in [%zu, %u], got \"%s\"\n",
                flag, min, 1u << 24, s);
        return PM_EXIT_USAGE;
    }
    *out = (size_t)v;
    return 0;
}

static void print_num(double v, int w)
{
    if (isfinite(v))
        printf(" %*.4f", w, v);
    else
        printf(" %*s", w, "-");
}

static int col_width(const char *name)
{
    int n = (int)strlen(name);
    return n > 9 ? n : 9;
}

/* Prints e as tables; 0, or -1 when out of memory (message printed). */
static int print_eval_table(const pm_eval *e, const char *dir)
{
    printf("model %s at global step %lld: %llu examples\n\n", dir, (long long)e->global_step,
           (unsigned long long)e->examples);
    int nw = 26; /* several heads' names are longer: <metric>/<head> */
    for (size_t k = 0; k < e->metrics.n; k++)
        if ((int)strlen(e->metrics.m[k].name) > nw)
            nw = (int)strlen(e->metrics.m[k].name);
    for (size_t k = 0; k < e->metrics.n; k++) {
        const rt_metric *m = &e->metrics.m[k];
        if (strcmp(m->name, "global_step") == 0)
            continue;
        printf("  %-*s", nw, m->name);
        print_num(m->value, 9);
        printf("\n");
    }
    if (e->has_plots)
        printf("  %-26s %9.4f\n", "expected_calibration_error", e->ece);
    if (e->importance) {
        printf("\nfeature importance (mean |attribution|, %s)\n", e->importance_method);
        for (size_t k = 0; k < e->n_inputs; k++) {
            size_t q = e->importance_order[k];
            printf("  %-26s %9.6f\n", e->inputs[q], e->importance[q]);
        }
    }
    const char *const *names = pm_eval_slice_metrics(e);
    for (size_t s = 0; s < e->n_specs; s++) {
        const pm_eval_spec *sp = &e->specs[s];
        int w = 5;
        for (size_t k = 0; k < e->n_slices; k++) {
            if (e->slices[k].spec != s)
                continue;
            int len = 0;
            for (size_t q = 0; q < sp->n_columns; q++)
                len += (int)strlen(e->slices[k].values[q]) + (q ? 1 : 0);
            if (len > w)
                w = len;
        }
        if ((int)strlen(sp->name) > w)
            w = (int)strlen(sp->name);
        printf("\nslices by %s (* worst %s)\n  %-*s %8s", sp->name,
               e->n_heads > 1                                     ? names[0]
               : e->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION  ? "average_loss"
               : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? "auc"
                                                                  : "accuracy", w,
               sp->name, "count");
        for (size_t m = 0; names[m]; m++)
            printf(" %*s", col_width(names[m]), names[m]);
        printf("\n");
        for (size_t k = 0; k < e->n_slices; k++) {
            const pm_eval_slice *sl = &e->slices[k];
            if (sl->spec != s)
                continue;
            rt_buf v;
            rt_buf_init(&v);
            int rc = 0;
            for (size_t q = 0; q < sp->n_columns; q++)
                rc |= rt_buf_printf(&v, "%s%s", q ? "," : "", sl->values[q]);
            if (rc) {
                rt_buf_free(&v);
                fprintf(stderr, "predict-model: out of memory\n");
                return -1;
            }
            printf("%c %-*s %8zu", sl->worst ? '*' : ' ', w, v.data ? v.data : "", sl->count);
            rt_buf_free(&v);
            for (size_t m = 0; names[m]; m++)
                print_num(rt_metric_get(&sl->metrics, names[m]), col_width(names[m]));
            printf("\n");
        }
    }
    if (e->confusion) {
        printf("\nconfusion matrix (rows: label, columns: predicted)\n  %12s", "");
        for (size_t j = 0; j < e->n_classes; j++)
            printf(" %12.12s", e->class_names[j]);
        printf("\n");
        for (size_t i = 0; i < e->n_classes; i++) {
            printf("  %12.12s", e->class_names[i]);
            for (size_t j = 0; j < e->n_classes; j++)
                printf(" %12llu", (unsigned long long)e->confusion[i * e->n_classes + j]);
            printf("\n");
        }
    }
    if (e->has_plots) {
        printf("\nthresholds (positive when logistic > threshold)\n  %9s %8s %8s %8s %8s "
               "%9s %9s %9s %9s\n",
               "threshold", "tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy");
        for (size_t k = 0; k < PM_EVAL_THRESHOLDS; k++) {
            const pm_eval_threshold *t = &e->thresholds[k];
            printf("  %9.1f %8llu %8llu %8llu %8llu", t->threshold, (unsigned long long)t->tp,
                   (unsigned long long)t->fp, (unsigned long long)t->tn,
                   (unsigned long long)t->fn);
            print_num(t->precision, 9);
            print_num(t->recall, 9);
            print_num(t->f1, 9);
            print_num(t->accuracy, 9);
            printf("\n");
        }
    }
    return 0;
}

int pm_cmd_evaluate(const pm_opts *o)
{
    pm_eval_opts eo = {0};
    eo.files = (const char *const *)o->data.v;
    eo.n_files = o->data.n;
    eo.slices = (const char *const *)o->slices.v;
    eo.n_slices = o->slices.n;
    if (parse_count("--batch-size", o->batch_size, 1, &eo.batch_size) ||
        parse_count("--skip-header-lines", o->skip_header, 0, &eo.skip_header_lines))
        return PM_EXIT_USAGE;
    if (o->importance) {
        static const struct {
            const char *name;
            rt_xai_method m;
        } methods[] = {{"exact", RT_XAI_EXACT}, {"sampled", RT_XAI_SAMPLED},
                       {"gradients", RT_XAI_IG}};
        for (size_t k = 0; k < 3 && !eo.importance; k++)
            if (strcmp(o->importance, methods[k].name) == 0) {
                eo.importance = 1;
                eo.importance_method = methods[k].m;
            }
        if (!eo.importance) {
            fprintf(stderr, "predict-model: --importance: \"%s\" is not exact, sampled or "
                    "gradients\n", o->importance);
            return PM_EXIT_USAGE;
        }
    }
    rt_model *m = pm_open_model(o->dir, NULL);
    if (!m)
        return 1;
    rt_err err = {{0}};
    pm_eval *e = NULL;
    rt_buf b;
    rt_buf_init(&b);
    int ret = 1;
    rt_status st = pm_eval_run(m, &eo, &e, &err);
    if (st) {
        fprintf(stderr, "predict-model: %s\n", err.msg);
        goto out;
    }
    if (o->report) {
        rt_buf data;
        rt_buf_init(&data);
        int rc = 0;
        for (size_t i = 0; i < o->data.n; i++)
            rc |= rt_buf_printf(&data, "%s%s", i ? ", " : "", o->data.v[i]);
        if (!rc)
            rc = pm_eval_html(e, o->dir, data.data ? data.data : "", &b);
        rt_buf_free(&data);
        if (rc) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        if ((st = rt_file_write(o->report, b.data, b.len, &err))) {
            fprintf(stderr, "predict-model: --report: %s\n", err.msg);
            goto out;
        }
        rt_buf_reset(&b);
    }
    if (o->format && strcmp(o->format, "json") == 0) {
        if (pm_eval_json(e, &b) || rt_buf_puts(&b, "\n")) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        fwrite(b.data, 1, b.len, stdout);
    } else if (print_eval_table(e, o->dir) != 0) {
        goto out;
    }
    if (o->report)
        fprintf(stderr, "predict-model: report written to %s\n", o->report);
    ret = fflush(stdout) == 0 ? 0 : 1;
out:
    rt_buf_free(&b);
    pm_eval_free(e);
    rt_model_close(m);
    return ret;
}

