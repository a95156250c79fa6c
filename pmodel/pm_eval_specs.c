/*
 * pm_eval_specs.c — predict-model evaluate's slice specs: parsing --slice
 * ("gender", crossed "gender,race") against the export's raw columns, and
 * the metrics a slices table shows for a head's type (pm_eval.c and
 * pm_eval_heads.c both use them).
 */
#include "pm.h"

#include <stdlib.h>
#include <string.h>

rt_status pm_eval_parse_specs(pm_eval *e, const pm_eval_opts *o,
                              const Predictd__ModelDef *def, size_t ***spec_cols, rt_err *err)
{
    size_t n_cols = def->n_raw_columns;
    e->specs = calloc(o->n_slices ? o->n_slices : 1, sizeof *e->specs);
    *spec_cols = calloc(o->n_slices ? o->n_slices : 1, sizeof **spec_cols);
    if (!e->specs || !*spec_cols)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t **cols = *spec_cols;
    for (size_t s = 0; s < o->n_slices; s++) {
        const char *spec = o->slices[s];
        pm_eval_spec *sp = &e->specs[e->n_specs];
        sp->name = strdup(spec);
        size_t n = 1;
        for (const char *p = spec; *p; p++)
            n += *p == ',';
        sp->columns = calloc(n, sizeof *sp->columns);
        cols[e->n_specs] = calloc(n, sizeof **cols);
        e->n_specs++;
        if (!sp->name || !sp->columns || !cols[e->n_specs - 1])
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        const char *p = spec;
        for (size_t k = 0; k < n; k++) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            size_t tl = len;
            const char *t = rt_buf_trim_span(p, &tl);
            long col = -1;
            for (size_t j = 0; j < n_cols; j++) {
                const char *name = def->raw_columns[j]->name;
                if (strlen(name) == tl && memcmp(name, t, tl) == 0)
                    col = (long)j;
            }
            if (col < 0) {
                rt_buf names;
                rt_buf_init(&names);
                int rc = 0;
                for (size_t j = 0; j < n_cols; j++)
                    rc |= rt_buf_printf(&names, "%s%s", j ? ", " : "",
                                        def->raw_columns[j]->name);
                if (rc) {
                    rt_buf_free(&names);
                    return rt_err_set(err, RT_ERR_NOMEM, "--slice %s: out of memory", spec);
                }
                rt_status st = rt_err_set(err, RT_ERR_INVALID,
                                          "--slice %s: no column \"%.*s\" in the spec (columns: "
                                          "%s)", spec, (int)tl, t, names.data ? names.data : "");
                rt_buf_free(&names);
                return st;
            }
            for (size_t q = 0; q < sp->n_columns; q++)
                if (sp->columns[q] == def->raw_columns[col]->name)
                    return rt_err_set(err, RT_ERR_INVALID, "--slice %s: column \"%.*s\" twice",
                                      spec, (int)tl, t);
            sp->columns[sp->n_columns] = def->raw_columns[col]->name;
            cols[e->n_specs - 1][sp->n_columns++] = (size_t)col;
            p = end ? end + 1 : p + len;
        }
    }
    return RT_OK;
}

const char *const *pm_eval_slice_metrics(const pm_eval *e)
{
    static const char *const binary[] = {"accuracy", "auc", "precision", "recall",
                                         "average_loss", "label/mean", "prediction/mean",
                                         NULL};
    static const char *const multi[] = {"accuracy", "average_loss", NULL};
    static const char *const regression[] = {"average_loss", "label/mean", "prediction/mean",
                                             NULL};
    static const char *const mlabel[] = {"auc", "auc_precision_recall", "average_loss", NULL};
    if (e->slice_metrics) /* several heads */
        return (const char *const *)e->slice_metrics;
    return e->head == PREDICTD__HEAD_TYPE__HEAD_BINARY        ? binary
           : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ? multi
           : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? mlabel
                                                              : regression;
}
