/*
 * pm_report.c — the evaluation report: one self-contained HTML page (inline
 * CSS and SVG; no script, no font, image or style fetched) rendered from an
 * pm_eval. A reader sees at a glance the headline metrics, the ROC,
 * precision-recall and calibration plots, the confusion matrix, the
 * threshold table and the slices with the worst one of each highlighted;
 * of a model of several heads, a section per head (its own metrics and
 * plots) and the merged loss.
 * Every number shown also sits, unrounded, in a data-value attribute (with
 * data-metric naming it) so a program can read the page back.
 */
#include "pm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* plot geometry, in SVG user units */
#define PW 360.0
#define PH 360.0
#define X0 58.0
#define Y0 18.0
#define IW 284.0
#define IH 290.0

static const char CSS[] =
    "*{box-sizing:border-box}"
    "body{margin:0;background:#f1f5f9;color:#0f172a;"
    "font:14px/1.45 'DejaVu Sans',Helvetica,Arial,sans-serif}"
    "header{background:#0f172a;color:#f8fafc;padding:18px 32px}"
    "header h1{margin:0;font-size:22px;font-weight:600}"
    "header p{margin:4px 0 0;color:#cbd5e1;font-size:13px}"
    "main{padding:20px 32px;max-width:1280px}"
    "h2{font-size:16px;margin:26px 0 10px;color:#1e293b}"
    ".cards{display:flex;flex-wrap:wrap;gap:10px}"
    ".card{background:#fff;border-radius:8px;padding:10px 14px;min-width:132px;"
    "box-shadow:0 1px 2px rgba(15,23,42,.12)}"
    ".card .k{font-size:12px;color:#64748b}"
    ".card .v{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}"
    ".card.hl{background:#eff6ff;box-shadow:inset 0 0 0 1px #bfdbfe}"
    ".plots{display:flex;flex-wrap:wrap;gap:14px}"
    ".panel{background:#fff;border-radius:8px;padding:10px 12px;width:386px;"
    "box-shadow:0 1px 2px rgba(15,23,42,.12)}"
    ".panel h3{margin:0 0 4px;font-size:14px}"
    ".panel .sub{font-size:12px;color:#64748b;margin:0 0 4px}"
    "svg text{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif}"
    "table{border-collapse:collapse;background:#fff;border-radius:8px;overflow:hidden;"
    "box-shadow:0 1px 2px rgba(15,23,42,.12);font-variant-numeric:tabular-nums}"
    "th,td{padding:5px 11px;text-align:right;border-bottom:1px solid #e2e8f0}"
    "th{background:#e2e8f0;font-weight:600;font-size:12px;color:#334155}"
    "td.l,th.l{text-align:left}"
    "tr.worst td{background:#fee2e2}"
    ".badge{display:inline-block;background:#dc2626;color:#fff;border-radius:9px;"
    "font-size:11px;padding:0 7px;margin-left:6px}"
    ".bar{display:inline-block;height:9px;background:#93c5fd;border-radius:2px;"
    "vertical-align:middle;margin-right:6px}"
    ".row{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}"
    ".cm td{text-align:center;min-width:96px;font-weight:600}"
    ".cm td small{display:block;font-weight:400;font-size:11px}"
    ".note{color:#64748b;font-size:12px;max-width:1100px}"
    ".importance-slices th,.importance-slices td{padding:4px 7px;font-size:12px}"
    ".importance-slices td.l{white-space:nowrap}";

/* ------------------------------------------------------------- helpers */

static int esc(rt_buf *b, const char *s)
{
    for (; *s; s++) {
        const char *r = *s == '&'    ? "&amp;"
                        : *s == '<'  ? "&lt;"
                        : *s == '>'  ? "&gt;"
                        : *s == '"'  ? "&quot;"
                        : *s == '\'' ? "&#39;"
                                     : NULL;
        if (r ? rt_buf_puts(b, r) : rt_buf_append(b, s, 1))
            return -1;
    }
    return 0;
}

const char *pm_report_css(void)
{
    return CSS;
}

int pm_html_esc(rt_buf *b, const char *s)
{
    return esc(b, s);
}

/* A number for people: 4 decimals, or "–" when undefined. */
static int shown(rt_buf *b, double v)
{
    return isfinite(v) ? rt_buf_printf(b, "%.4f", v) : rt_buf_puts(b, "&ndash;");
}

/* data-value="v" (17 significant digits: the exact double) */
static int dval(rt_buf *b, double v)
{
    return isfinite(v) ? rt_buf_printf(b, " data-value=\"%.17g\"", v)
                       : rt_buf_puts(b, " data-value=\"null\"");
}

/* <td data-metric=name data-value=v>v</td> */
static int metric_td(rt_buf *b, const char *name, double v)
{
    return rt_buf_puts(b, "<td data-metric=\"") || esc(b, name) || rt_buf_puts(b, "\"") ||
           dval(b, v) || rt_buf_puts(b, ">") || shown(b, v) || rt_buf_puts(b, "</td>");
}

static int card(rt_buf *b, const char *name, double v, int highlight)
{
    return rt_buf_printf(b, "<div class=\"card%s\"><div class=\"k\">", highlight ? " hl" : "") ||
           esc(b, name) || rt_buf_puts(b, "</div><div class=\"v\" data-metric=\"") ||
           esc(b, name) || rt_buf_puts(b, "\"") || dval(b, v) || rt_buf_puts(b, ">") ||
           shown(b, v) || rt_buf_puts(b, "</div></div>");
}

static double px(double x)
{
    return X0 + IW * (x < 0 ? 0 : x > 1 ? 1 : x);
}

static double py(double y)
{
    return Y0 + IH * (1.0 - (y < 0 ? 0 : y > 1 ? 1 : y));
}

/* The frame of a unit-square plot: grid, ticks, axis titles. */
static int frame(rt_buf *b, const char *label, const char *xt, const char *yt)
{
    int rc = rt_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                           "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
                           "aria-label=\"%s\">",
                           PW, PH, PW, PH, label);
    rc = rc || rt_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                             "fill=\"#f8fafc\" stroke=\"#94a3b8\"/>",
                             X0, Y0, IW, IH);
    for (int k = 0; !rc && k <= 5; k++) {
        double t = k / 5.0;
        rc = rt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                           "stroke=\"#e2e8f0\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                           "y2=\"%.1f\" stroke=\"#e2e8f0\"/>",
                           px(t), Y0, px(t), Y0 + IH, X0, py(t), X0 + IW, py(t)) ||
             rt_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#475569\" "
                           "text-anchor=\"middle\">%.1f</text>",
                           px(t), Y0 + IH + 15, t) ||
             rt_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#475569\" "
                           "text-anchor=\"end\">%.1f</text>",
                           X0 - 6, py(t) + 4, t);
    }
    return rc ||
           rt_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#1e293b\" "
                         "text-anchor=\"middle\">%s</text>",
                         X0 + IW / 2, PH - 6, xt) ||
           rt_buf_printf(b, "<text transform=\"translate(16 %.1f) rotate(-90)\" font-size=\"12\" "
                         "fill=\"#1e293b\" text-anchor=\"middle\">%s</text>",
                         Y0 + IH / 2, yt);
}

static int polyline(rt_buf *b, const pm_eval_curve *c, const char *color, int fill)
{
    int rc = 0;
    if (fill) {
        rc = rt_buf_printf(b, "<path fill=\"%s\" fill-opacity=\"0.16\" d=\"M%.1f %.1f", color,
                           px(c->n ? c->p[0].x : 0), py(0));
        for (size_t i = 0; !rc && i < c->n; i++)
            rc = rt_buf_printf(b, " L%.1f %.1f", px(c->p[i].x), py(c->p[i].y));
        rc = rc || rt_buf_printf(b, " L%.1f %.1f Z\"/>", px(c->n ? c->p[c->n - 1].x : 1), py(0));
    }
    rc = rc || rt_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2.2\" "
                             "stroke-linejoin=\"round\" points=\"",
                             color);
    for (size_t i = 0; !rc && i < c->n; i++)
        rc = rt_buf_printf(b, "%s%.1f,%.1f", i ? " " : "", px(c->p[i].x), py(c->p[i].y));
    return rc || rt_buf_puts(b, "\"/>");
}

static int legend(rt_buf *b, double x, double y, const char *color, const char *text, int dash)
{
    return rt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                         "stroke-width=\"2.2\"%s/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
                         "fill=\"#1e293b\">",
                         x, y, x + 18, y, color, dash ? " stroke-dasharray=\"5 4\"" : "",
                         x + 24, y + 4) ||
           esc(b, text) || rt_buf_puts(b, "</text>");
}

/* --------------------------------------------------------------- plots */

/* A curve panel: its head (HTML), the frame, a dashed grey reference line
 * from (x0, y0) to (x1, y1), the curve in `color`, and a legend at x = lx
 * naming the curve `lab` and the reference line `ref_lab`. */
static int curve_panel(rt_buf *b, const char *head, const char *title, const char *x_label,
                       const char *y_label, const double ref[4], const pm_eval_curve *curve,
                       const char *color, double lx, const char *lab, const char *ref_lab)
{
    return rt_buf_puts(b, head) || frame(b, title, x_label, y_label) ||
           rt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                         "stroke=\"#94a3b8\" stroke-dasharray=\"5 4\"/>",
                         px(ref[0]), py(ref[1]), px(ref[2]), py(ref[3])) ||
           polyline(b, curve, color, 1) || legend(b, px(lx), py(0.16), color, lab, 0) ||
           legend(b, px(lx), py(0.08), "#94a3b8", ref_lab, 1) || rt_buf_puts(b, "</svg></div>");
}

static int plot_roc(rt_buf *b, const pm_eval *e)
{
    double auc = rt_metric_get(&e->metrics, "auc");
    char lab[64];
    snprintf(lab, sizeof lab, "model (AUC %.4f)", auc);
    const double chance[4] = {0, 0, 1, 1};
    return curve_panel(b,
                       "<div class=\"panel\" id=\"roc\"><h3>ROC curve</h3><p class=\"sub\">"
                       "true against false positive rate, all thresholds</p>",
                       "ROC curve", "false positive rate", "true positive rate", chance, &e->roc,
                       "#2563eb", 0.42, lab, "chance");
}

static int plot_pr(rt_buf *b, const pm_eval *e)
{
    double ap = rt_metric_get(&e->metrics, "auc_precision_recall");
    double base = rt_metric_get(&e->metrics, "label/mean");
    char lab[64], blab[64];
    snprintf(lab, sizeof lab, "model (AUC-PR %.4f)", ap);
    snprintf(blab, sizeof blab, "positive rate %.4f", base);
    const double rate[4] = {0, base, 1, base};
    return curve_panel(b,
                       "<div class=\"panel\" id=\"pr\"><h3>Precision-recall curve</h3>"
                       "<p class=\"sub\">precision against recall, all thresholds</p>",
                       "precision-recall curve", "recall", "precision", rate, &e->pr, "#059669",
                       0.06, lab, blab);
}

static int plot_calibration(rt_buf *b, const pm_eval *e)
{
    uint64_t most = 1;
    for (size_t k = 0; k < PM_EVAL_BINS; k++)
        if (e->calibration[k].count > most)
            most = e->calibration[k].count;
    int rc = rt_buf_printf(b, "<div class=\"panel\" id=\"calibration\"><h3>Calibration "
                           "(reliability)</h3><p class=\"sub\">positive rate per probability "
                           "bin &middot; ECE %.4f</p>",
                           e->ece) ||
             frame(b, "calibration plot", "mean predicted probability",
                   "observed positive rate");
    /* examples per bin, as bars along the bottom (a third of the height) */
    for (size_t k = 0; !rc && k < PM_EVAL_BINS; k++) {
        const pm_eval_bin *c = &e->calibration[k];
        double h = IH / 3.0 * (double)c->count / (double)most;
        rc = rt_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                           "fill=\"#fdba74\" fill-opacity=\"0.55\"><title>%llu examples</title>"
                           "</rect>",
                           px(c->lower) + 1.5, Y0 + IH - h, IW / PM_EVAL_BINS - 3.0, h,
                           (unsigned long long)c->count);
    }
    rc = rc || rt_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#94a3b8\" stroke-dasharray=\"5 4\"/>",
                             px(0), py(0), px(1), py(1));
    rc = rc || rt_buf_puts(b, "<polyline fill=\"none\" stroke=\"#ea580c\" stroke-width=\"2.2\" "
                              "points=\"");
    int first = 1;
    for (size_t k = 0; !rc && k < PM_EVAL_BINS; k++) {
        const pm_eval_bin *c = &e->calibration[k];
        if (!c->count)
            continue;
        rc = rt_buf_printf(b, "%s%.1f,%.1f", first ? "" : " ", px(c->mean_prediction),
                           py(c->mean_label));
        first = 0;
    }
    rc = rc || rt_buf_puts(b, "\"/>");
    for (size_t k = 0; !rc && k < PM_EVAL_BINS; k++) {
        const pm_eval_bin *c = &e->calibration[k];
        if (c->count)
            rc = rt_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#ea580c\" "
                               "stroke=\"#fff\" stroke-width=\"1.5\"/>",
                               px(c->mean_prediction), py(c->mean_label));
    }
    return rc || legend(b, px(0.04), py(0.93), "#ea580c", "model", 0) ||
           legend(b, px(0.04), py(0.85), "#94a3b8", "perfectly calibrated", 1) ||
           rt_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"9\" "
                         "fill=\"#fdba74\" fill-opacity=\"0.55\"/><text x=\"%.1f\" y=\"%.1f\" "
                         "font-size=\"11\" fill=\"#1e293b\">examples per bin</text>",
                         px(0.04), py(0.77) - 5, px(0.04) + 24, py(0.77) + 4) ||
           rt_buf_puts(b, "</svg></div>");
}

/* ------------------------------------------------------------- tables */

static int confusion(rt_buf *b, const pm_eval *e)
{
    size_t n = e->n_classes;
    uint64_t most = 1;
    for (size_t i = 0; i < n * n; i++)
        if (e->confusion[i] > most)
            most = e->confusion[i];
    int rc = rt_buf_puts(b, "<div><h2>Confusion matrix</h2><table class=\"cm\" "
                            "id=\"confusion\"><tr><th class=\"l\">label \\ predicted</th>");
    for (size_t j = 0; !rc && j < n; j++)
        rc = rt_buf_puts(b, "<th>") || esc(b, e->class_names[j]) || rt_buf_puts(b, "</th>");
    rc = rc || rt_buf_puts(b, "</tr>");
    for (size_t i = 0; !rc && i < n; i++) {
        uint64_t row = 0;
        for (size_t j = 0; j < n; j++)
            row += e->confusion[i * n + j];
        rc = rt_buf_puts(b, "<tr><th class=\"l\">") || esc(b, e->class_names[i]) ||
             rt_buf_puts(b, "</th>");
        for (size_t j = 0; !rc && j < n; j++) {
            uint64_t c = e->confusion[i * n + j];
            double a = 0.08 + 0.72 * (double)c / (double)most;
            rc = rt_buf_printf(b, "<td data-label=\"%zu\" data-predicted=\"%zu\" "
                               "data-count=\"%llu\" style=\"background:rgba(%s,%.2f);"
                               "color:%s\">%llu<small>%.1f%% of row</small></td>",
                               i, j, (unsigned long long)c,
                               i == j ? "37,99,235" : "220,38,38", a,
                               a > 0.5 ? "#fff" : "#0f172a", (unsigned long long)c,
                               row ? 100.0 * (double)c / (double)row : 0.0);
        }
        rc = rc || rt_buf_puts(b, "</tr>");
    }
    return rc || rt_buf_puts(b, "</table><p class=\"note\">rows: the label; columns: the "
                                "predicted class (binary: logistic &gt; 0.5).</p></div>");
}

static int threshold_table(rt_buf *b, const pm_eval *e)
{
    int rc = rt_buf_puts(b, "<div><h2>Thresholds</h2><table id=\"thresholds\"><tr>"
                            "<th>threshold</th><th>TP</th><th>FP</th><th>TN</th><th>FN</th>"
                            "<th>precision</th><th>recall</th><th>F1</th><th>accuracy</th></tr>");
    for (size_t k = 0; !rc && k < PM_EVAL_THRESHOLDS; k++) {
        const pm_eval_threshold *t = &e->thresholds[k];
        rc = rt_buf_printf(b, "<tr data-threshold=\"%.17g\"%s><td>%.1f</td>", t->threshold,
                           fabs(t->threshold - 0.5) < 1e-9 ? " style=\"font-weight:600\"" : "",
                           t->threshold) ||
             rt_buf_printf(b, "<td data-metric=\"tp\" data-value=\"%llu\">%llu</td>"
                           "<td data-metric=\"fp\" data-value=\"%llu\">%llu</td>"
                           "<td data-metric=\"tn\" data-value=\"%llu\">%llu</td>"
                           "<td data-metric=\"fn\" data-value=\"%llu\">%llu</td>",
                           (unsigned long long)t->tp, (unsigned long long)t->tp,
                           (unsigned long long)t->fp, (unsigned long long)t->fp,
                           (unsigned long long)t->tn, (unsigned long long)t->tn,
                           (unsigned long long)t->fn, (unsigned long long)t->fn) ||
             metric_td(b, "precision", t->precision) || metric_td(b, "recall", t->recall) ||
             metric_td(b, "f1", t->f1) || metric_td(b, "accuracy", t->accuracy) ||
             rt_buf_puts(b, "</tr>");
    }
    return rc || rt_buf_puts(b, "</table><p class=\"note\">predicted positive when the "
                                "logistic is above the threshold.</p></div>");
}

static int slices(rt_buf *b, const pm_eval *e)
{
    const char *const *names = pm_eval_slice_metrics(e);
    int classifier = e->head != PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    int rc = 0;
    for (size_t s = 0; !rc && s < e->n_specs; s++) {
        const pm_eval_spec *sp = &e->specs[s];
        rc = rt_buf_puts(b, "<h2>Slices by ") || esc(b, sp->name) ||
             rt_buf_puts(b, "</h2><table class=\"slices\" data-slice=\"") || esc(b, sp->name) ||
             rt_buf_puts(b, "\"><tr>");
        for (size_t q = 0; !rc && q < sp->n_columns; q++)
            rc = rt_buf_puts(b, "<th class=\"l\">") || esc(b, sp->columns[q]) ||
                 rt_buf_puts(b, "</th>");
        rc = rc || rt_buf_puts(b, "<th>count</th>");
        for (size_t m = 0; !rc && names[m]; m++)
            rc = rt_buf_puts(b, "<th>") || esc(b, names[m]) || rt_buf_puts(b, "</th>");
        rc = rc || rt_buf_puts(b, "</tr>");
        for (size_t k = 0; !rc && k < e->n_slices; k++) {
            const pm_eval_slice *sl = &e->slices[k];
            if (sl->spec != s)
                continue;
            rc = rt_buf_printf(b, "<tr class=\"slice%s\" data-count=\"%zu\">",
                               sl->worst ? " worst" : "", sl->count);
            for (size_t q = 0; !rc && q < sp->n_columns; q++) {
                rc = rt_buf_puts(b, "<td class=\"l\" data-column=\"") ||
                     esc(b, sp->columns[q]) || rt_buf_puts(b, "\" data-text=\"") ||
                     esc(b, sl->values[q]) || rt_buf_puts(b, "\">") ||
                     esc(b, sl->values[q][0] ? sl->values[q] : "(empty)");
                if (!rc && sl->worst && q + 1 == sp->n_columns)
                    rc = rt_buf_printf(b, "<span class=\"badge\">worst %s</span>",
                                       classifier ? "accuracy" : "loss");
                rc = rc || rt_buf_puts(b, "</td>");
            }
            rc = rc || rt_buf_printf(b, "<td>%zu</td>", sl->count);
            for (size_t m = 0; !rc && names[m]; m++) {
                double v = rt_metric_get(&sl->metrics, names[m]);
                if (m == 0 && classifier && isfinite(v))
                    rc = rt_buf_printf(b, "<td data-metric=\"%s\"", names[m]) || dval(b, v) ||
                         rt_buf_printf(b, "><span class=\"bar\" style=\"width:%.0fpx\">"
                                       "</span>%.4f</td>",
                                       60.0 * v, v);
                else
                    rc = metric_td(b, names[m], v);
            }
            rc = rc || rt_buf_puts(b, "</tr>");
        }
        rc = rc || rt_buf_puts(b, "</table>");
    }
    return rc;
}

/* Global feature importance: one bar per input, most important first, then
 * per slice spec a table of the slices' values for the same inputs. */
static int importance(rt_buf *b, const pm_eval *e)
{
    if (!e->importance || !e->n_inputs)
        return 0;
    double top = e->importance[e->importance_order[0]];
    int rc = rt_buf_puts(b, "<h2>Feature importance</h2><table id=\"importance\" "
                            "data-method=\"") ||
             esc(b, e->importance_method) ||
             rt_buf_puts(b, "\"><tr><th class=\"l\">input</th><th class=\"l\">mean "
                            "|attribution|</th></tr>");
    for (size_t k = 0; !rc && k < e->n_inputs; k++) {
        size_t q = e->importance_order[k];
        double v = e->importance[q];
        rc = rt_buf_puts(b, "<tr><td class=\"l\">") || esc(b, e->inputs[q]) ||
             rt_buf_printf(b, "</td><td class=\"l\" data-input=\"") || esc(b, e->inputs[q]) ||
             rt_buf_printf(b, "\" data-value=\"%.9g\"><span class=\"bar\" "
                              "style=\"width:%.0fpx\"></span>%.6f</td></tr>",
                           v, top > 0 ? 240.0 * v / top : 0.0, v);
    }
    rc = rc || rt_buf_puts(b, "</table><p class=\"note\">Each example explained by ") ||
         esc(b, e->importance_method) ||
         rt_buf_puts(b, " against the model's baseline, on the predicted class's probability "
                        "(regressors: the prediction); the mean of |attribution| per raw "
                        "input (docs/explanations.md).</p>");
    for (size_t s = 0; !rc && s < e->n_specs; s++) {
        const pm_eval_spec *sp = &e->specs[s];
        rc = rt_buf_puts(b, "<h2>Feature importance by ") || esc(b, sp->name) ||
             rt_buf_puts(b, "</h2><table class=\"importance-slices\"><tr><th class=\"l\">") ||
             esc(b, sp->name) || rt_buf_puts(b, "</th>");
        for (size_t k = 0; !rc && k < e->n_inputs; k++)
            rc = rt_buf_puts(b, "<th>") || esc(b, e->inputs[e->importance_order[k]]) ||
                 rt_buf_puts(b, "</th>");
        rc = rc || rt_buf_puts(b, "</tr>");
        for (size_t j = 0; !rc && j < e->n_slices; j++) {
            const pm_eval_slice *sl = &e->slices[j];
            if (sl->spec != s || !sl->importance)
                continue;
            rc = rt_buf_puts(b, "<tr class=\"slice\"><td class=\"l\">");
            for (size_t q = 0; !rc && q < sp->n_columns; q++)
                rc = (q && rt_buf_puts(b, ", ")) ||
                     esc(b, sl->values[q][0] ? sl->values[q] : "(empty)");
            rc = rc || rt_buf_puts(b, "</td>");
            for (size_t k = 0; !rc && k < e->n_inputs; k++) {
                double v = sl->importance[e->importance_order[k]];
                double a = top > 0 ? v / top : 0.0;
                rc = rt_buf_printf(b, "<td style=\"background:rgba(59,130,246,%.2f)\">%.4f</td>",
                                   a > 1 ? 0.45 : 0.45 * a, v);
            }
            rc = rc || rt_buf_puts(b, "</tr>");
        }
        rc = rc || rt_buf_puts(b, "</table>");
    }
    return rc;
}

/* ----------------------------------------------------------------- page */

static const char *head_kind(Predictd__HeadType h)
{
    return h == PREDICTD__HEAD_TYPE__HEAD_BINARY        ? "binary classifier"
           : h == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ? "multi-class classifier"
           : h == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? "multi-label classifier"
                                                        : "regressor";
}

/* One head's metric cards (named <metric>/<suffix> when suffix is given),
 * plots, confusion matrix and threshold table, as its type gets them. */
static int head_body(rt_buf *b, const pm_eval *e, const char *suffix)
{
    static const char *const binary[] = {"accuracy", "auc", "auc_precision_recall",
                                         "precision", "recall", "average_loss", "loss",
                                         "accuracy_baseline", "label/mean", "prediction/mean",
                                         NULL};
    static const char *const multi[] = {"accuracy", "average_loss", "loss", NULL};
    static const char *const regression[] = {"average_loss", "loss", "label/mean",
                                             "prediction/mean", NULL};
    static const char *const mlabel[] = {"auc", "auc_precision_recall", "average_loss", "loss",
                                         NULL};
    const char *const *cards = e->head == PREDICTD__HEAD_TYPE__HEAD_BINARY        ? binary
                               : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ? multi
                               : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? mlabel
                                                                                  : regression;
    int rc = rt_buf_puts(b, "<div class=\"cards\"") ||
             rt_buf_puts(b, suffix ? ">" : " id=\"metrics\">");
    char name[RT_METRIC_NAME_MAX + 8];
    for (size_t k = 0; !rc && cards[k]; k++) {
        snprintf(name, sizeof name, "%s%s%s", cards[k], suffix ? "/" : "", suffix ? suffix : "");
        rc = card(b, name, rt_metric_get(&e->metrics, cards[k]), k < 2);
    }
    if (!rc && e->has_plots) {
        snprintf(name, sizeof name, "expected_calibration_error%s%s", suffix ? "/" : "",
                 suffix ? suffix : "");
        rc = card(b, name, e->ece, 0);
    }
    rc = rc || rt_buf_puts(b, "</div>");
    if (!rc && e->has_plots)
        rc = rt_buf_puts(b, "<h2>Curves</h2><div class=\"plots\">") || plot_roc(b, e) ||
             plot_pr(b, e) || plot_calibration(b, e) || rt_buf_puts(b, "</div>");
    if (!rc && (e->confusion || e->has_plots)) {
        rc = rt_buf_puts(b, "<div class=\"row\">");
        if (!rc && e->confusion)
            rc = confusion(b, e);
        if (!rc && e->has_plots)
            rc = threshold_table(b, e);
        rc = rc || rt_buf_puts(b, "</div>");
    }
    return rc;
}

/* Several heads: a section per head (its own metrics and plots), then the
 * merged loss. */
static int heads_body(rt_buf *b, const pm_eval *e)
{
    int rc = 0;
    for (size_t k = 0; !rc && k < e->n_heads; k++) {
        const pm_eval *he = e->head_evals[k];
        rc = rt_buf_puts(b, "<section class=\"head\" data-head=\"") ||
             esc(b, e->head_names[k]) || rt_buf_puts(b, "\"><h2>Head ") ||
             esc(b, e->head_names[k]) || rt_buf_printf(b, " &middot; %s</h2>",
                                                      head_kind(he->head)) ||
             head_body(b, he, e->head_names[k]) || rt_buf_puts(b, "</section>");
    }
    return rc || rt_buf_puts(b, "<h2>All heads</h2><div class=\"cards\" id=\"metrics\">") ||
           card(b, "loss", rt_metric_get(&e->metrics, "loss"), 1) ||
           rt_buf_puts(b, "</div><p class=\"note\">loss: the sum over the heads of "
                          "loss_weight &times; loss/&lt;head&gt;.</p>");
}

int pm_eval_html(const pm_eval *e, const char *model, const char *data, rt_buf *b)
{
    int several = e->n_heads > 1 && e->head_evals;
    char kind[64];
    if (several)
        snprintf(kind, sizeof kind, "%zu heads", e->n_heads);
    else
        snprintf(kind, sizeof kind, "%s", head_kind(e->head));
    int rc = rt_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                            "<title>Evaluation: ") ||
             esc(b, model) || rt_buf_printf(b, "</title><style>%s</style></head><body>", CSS) ||
             rt_buf_puts(b, "<header><h1>Evaluation report</h1><p>model <b>") || esc(b, model) ||
             rt_buf_printf(b, "</b> at global step %lld &middot; data <b>",
                           (long long)e->global_step) ||
             esc(b, data) ||
             rt_buf_printf(b, "</b> &middot; <span id=\"examples\" data-value=\"%llu\">%llu"
                           "</span> examples &middot; %s</p></header><main>",
                           (unsigned long long)e->examples, (unsigned long long)e->examples,
                           kind);
    if (several)
        rc = rc || heads_body(b, e);
    else
        rc = rc || rt_buf_puts(b, "<h2>Metrics</h2>") || head_body(b, e, NULL);
    rc = rc || slices(b, e);
    rc = rc || importance(b, e);
    return rc || rt_buf_puts(b, "<p class=\"note\">Metrics as predict-train's evaluation "
                                "computes them (docs/evaluation.md); slices highlight their "
                                "worst value. Written by predict-model evaluate.</p>"
                                "</main></body></html>\n");
}
