/*
 * pm_stats_report.c — the HTML of a data set's statistics: predict-model
 * stats --report (one data set: per feature its numbers, the equal-width
 * histogram of a numeric feature, the most frequent values of a string
 * one) and the pieces validate's report draws its two sides with (a
 * histogram SVG, value bars). Self-contained pages in pm_report.c's style:
 * no scripts, every number also in a data- attribute for tests.
 */
#include "pm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int known(const rt_feature_stats *tr, const char *v)
{
    for (size_t k = 0; k < tr->n_values; k++)
        if (strcmp(tr->values[k].value, v) == 0)
            return 1;
    return 0;
}

/* The most frequent values of one data set: count, share, a bar. */
static void one_side_values(rt_buf *b, const rt_feature_stats *t)
{
    double tot = (double)t->num_non_missing;
    rt_buf_puts(b, "<table><tr><th class=\"l\">value</th><th>count</th><th>share</th>"
                   "<th class=\"l\"></th></tr>");
    for (size_t k = 0; k < t->n_values && k < 20; k++) {
        double p = tot > 0 ? (double)t->values[k].count / tot : 0;
        rt_buf_puts(b, "<tr><td class=\"l\">");
        pm_html_esc(b, t->values[k].value);
        rt_buf_printf(b, "</td><td data-value=\"%llu\">%llu</td><td data-value=\"%.9g\">%.4f"
                         "</td><td class=\"l\"><span class=\"bar\" style=\"width:%.0fpx\">"
                         "</span></td></tr>",
                      (unsigned long long)t->values[k].count,
                      (unsigned long long)t->values[k].count, p, p, 1 + 200 * p);
    }
    rt_buf_puts(b, "</table>");
}

#define SW 520.0
#define SH 170.0

/* See pm.h. */
void pm_html_hist(rt_buf *b, const rt_feature_stats *t, const rt_feature_stats *d)
{
    const rt_stats_hist *h[2] = {&t->standard, d ? &d->standard : NULL};
    double lo = INFINITY, hi = -INFINITY, top = 0, tot[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        if (!h[s])
            continue;
        for (size_t k = 0; k < h[s]->n; k++)
            tot[s] += h[s]->b[k].count;
        for (size_t k = 0; k < h[s]->n; k++) {
            const rt_stats_bucket *x = &h[s]->b[k];
            if (!isfinite(x->low) || !isfinite(x->high))
                continue;
            lo = fmin(lo, x->low);
            hi = fmax(hi, x->high);
            if (tot[s] > 0)
                top = fmax(top, x->count / tot[s]);
        }
    }
    rt_buf_printf(b, "<svg width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">", SW, SH + 20,
                  SW, SH + 20);
    if (!(hi > lo))
        hi = lo + 1;
    if (!(top > 0))
        top = 1;
    const char *color[2] = {"#3b82f6", "#f97316"};
    for (int s = 0; s < 2; s++) {
        if (!h[s])
            continue;
        for (size_t k = 0; k < h[s]->n && tot[s] > 0; k++) {
            const rt_stats_bucket *x = &h[s]->b[k];
            if (!isfinite(x->low) || !isfinite(x->high))
                continue;
            /* halves: a range past DBL_MAX (-1e308 to 1e308) does not overflow */
            double x0 = 10 + (x->low / 2 - lo / 2) / (hi / 2 - lo / 2) * (SW - 20);
            double x1 = 10 + (x->high / 2 - lo / 2) / (hi / 2 - lo / 2) * (SW - 20);
            if (x1 - x0 < 3)
                x1 = x0 + 3;
            double hh = x->count / tot[s] / top * (SH - 10);
            rt_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                             "fill=\"%s\" fill-opacity=\"0.45\" stroke=\"%s\" "
                             "data-side=\"%s\" data-low=\"%.9g\" data-high=\"%.9g\" "
                             "data-count=\"%.9g\"/>",
                          x0, SH - hh, x1 - x0, hh, color[s], color[s], s ? "data" : d ? "training" : "stats",
                          x->low, x->high, x->count);
        }
    }
    rt_buf_printf(b, "<line x1=\"10\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#94a3b8\"/>"
                     "<text x=\"10\" y=\"%.0f\" font-size=\"11\">%.6g</text>"
                     "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.6g</text>"
                     "</svg>",
                  SH, SW - 10, SH, SH + 15, lo, SW - 10, SH + 15, hi);
}

/* See pm.h. */
void pm_html_values(rt_buf *b, const rt_feature_stats *t, const rt_feature_stats *d)
{
    if (!d) {
        one_side_values(b, t);
        return;
    }
    double tt = 0, dt = 0;
    for (size_t k = 0; k < t->n_values; k++)
        tt += (double)t->values[k].count;
    for (size_t k = 0; d && k < d->n_values; k++)
        dt += (double)d->values[k].count;
    const char *names[40];
    size_t n = 0;
    for (size_t k = 0; k < t->n_values && n < 20; k++)
        names[n++] = t->values[k].value;
    for (size_t k = 0; d && k < d->n_values && n < 40 && k < 20; k++) {
        size_t j = 0;
        while (j < n && strcmp(names[j], d->values[k].value) != 0)
            j++;
        if (j == n)
            names[n++] = d->values[k].value;
    }
    rt_buf_puts(b, "<table><tr><th class=\"l\">value</th><th>training</th><th>data</th>"
                   "<th class=\"l\"></th></tr>");
    for (size_t j = 0; j < n; j++) {
        double pt = 0, pd = 0;
        for (size_t k = 0; k < t->n_values; k++)
            if (strcmp(t->values[k].value, names[j]) == 0)
                pt = tt > 0 ? (double)t->values[k].count / tt : 0;
        for (size_t k = 0; d && k < d->n_values; k++)
            if (strcmp(d->values[k].value, names[j]) == 0)
                pd = dt > 0 ? (double)d->values[k].count / dt : 0;
        rt_buf_puts(b, "<tr><td class=\"l\">");
        pm_html_esc(b, names[j]);
        if (!known(t, names[j]))
            rt_buf_puts(b, "<span class=\"badge\">unseen</span>");
        rt_buf_printf(b, "</td><td data-value=\"%.9g\">%.4f</td><td data-value=\"%.9g\">%.4f</td>"
                         "<td class=\"l\"><span class=\"bar\" style=\"width:%.0fpx\"></span><br>"
                         "<span class=\"bar\" style=\"width:%.0fpx;background:#fdba74\"></span>"
                         "</td></tr>",
                      pt, pt, pd, pd, 1 + 200 * pt, 1 + 200 * pd);
    }
    rt_buf_puts(b, "</table>");
}


static const char *type_word(rt_stats_type t)
{
    return t == RT_STATS_STRING ? "string" : t == RT_STATS_INT ? "int" : "float";
}

/* A number cell: the text and its data-metric attribute. */
static void metric(rt_buf *b, const char *name, double v)
{
    rt_buf_printf(b, "<td data-metric=\"%s\" data-value=\"%.17g\">%.6g</td>", name, v, v);
}

void pm_stats_html(const rt_stats *s, const char *title, const char *what, rt_buf *b)
{
    rt_buf_printf(b, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<title>Statistics</title><style>%s"
                     ".feat{background:#fff;border-radius:8px;padding:10px 14px;margin:0 0 14px;"
                     "box-shadow:0 1px 2px rgba(15,23,42,.12)}</style></head><body><header>"
                     "<h1>Statistics: ",
                  pm_report_css());
    pm_html_esc(b, title);
    rt_buf_puts(b, "</h1><p>");
    pm_html_esc(b, what);
    rt_buf_printf(b, " &middot; <span data-metric=\"num_examples\" data-value=\"%llu\">%llu"
                     "</span> examples &middot; %zu features</p></header><main>",
                  (unsigned long long)s->num_examples, (unsigned long long)s->num_examples, s->n);
    for (int pass = 0; pass < 2; pass++) { /* numeric features, then string ones */
        rt_buf_puts(b, pass ? "<h2>String features</h2>" : "<h2>Numeric features</h2>");
        for (size_t i = 0; i < s->n; i++) {
            const rt_feature_stats *f = &s->f[i];
            if ((f->type == RT_STATS_STRING) != pass)
                continue;
            rt_buf_puts(b, "<div class=\"feat\" data-feature=\"");
            pm_html_esc(b, f->name);
            rt_buf_puts(b, "\"><h3>");
            pm_html_esc(b, f->name);
            rt_buf_printf(b, " <span class=\"note\">%s%s</span></h3><table><tr>",
                          type_word(f->type), f->approximate ? ", approximate" : "");
            if (!pass) {
                rt_buf_puts(b, "<th>count</th><th>missing</th><th>NaN</th><th>zeros</th>"
                               "<th>mean</th><th>std_dev</th><th>min</th><th>median</th>"
                               "<th>max</th></tr><tr>");
                metric(b, "count", (double)f->num_non_missing);
                metric(b, "missing", (double)f->num_missing);
                metric(b, "nan", (double)f->num_nan);
                metric(b, "zeros", (double)f->num_zeros);
                metric(b, "mean", f->mean);
                metric(b, "std_dev", f->std_dev);
                metric(b, "min", f->min);
                metric(b, "median", f->median);
                metric(b, "max", f->max);
                rt_buf_puts(b, "</tr></table>");
                if (f->standard.n)
                    pm_html_hist(b, f, NULL);
                rt_buf_puts(b, "<p class=\"note\">quantiles (min, deciles, max):");
                for (int k = 0; k <= RT_STATS_BUCKETS; k++)
                    rt_buf_printf(b, " %.6g", f->quantiles[k]);
                rt_buf_puts(b, "</p>");
            } else {
                rt_buf_puts(b, "<th>count</th><th>missing</th><th>unique</th>"
                               "<th>avg_length</th></tr><tr>");
                metric(b, "count", (double)f->num_non_missing);
                metric(b, "missing", (double)f->num_missing);
                metric(b, "unique", (double)f->unique);
                metric(b, "avg_length", f->avg_length);
                rt_buf_puts(b, "</tr></table>");
                pm_html_values(b, f, NULL);
            }
            rt_buf_puts(b, "</div>");
        }
    }
    rt_buf_puts(b, "<p class=\"note\">Statistics as TensorFlow Data Validation defines them "
                   "(docs/data-validation.md).</p></main></body></html>\n");
}
