/*
 * pm_importance.c — global feature importance for predict-model evaluate
 * --importance (docs/evaluation.md): each evaluated example explained with
 * the runtime's attributions (rt_xai_explain, docs/explanations.md) against
 * the model's baseline, on its default output (the predicted class's
 * probability, or the prediction); pm_eval.c averages |attribution| per raw
 * input over the data set and per slice.
 */
#include "pm.h"

#include <math.h>
#include <stdlib.h>

struct pm_importance {
    const rt_graph *g;
    rt_batch *base;
    rt_xai_params p;
    double *attr, *abs_attr; /* [n_inputs] */
    size_t n_inputs;
};

rt_status pm_importance_new(const rt_model *m, rt_xai_method method, pm_importance **out,
                            rt_err *err)
{
    *out = NULL;
    pm_importance *im = calloc(1, sizeof *im);
    if (!im)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    im->g = rt_model_graph(m);
    im->n_inputs = rt_graph_num_inputs(im->g);
    im->p = rt_xai_default_params();
    im->p.method = method;
    im->attr = calloc(im->n_inputs + 1, sizeof *im->attr);
    im->abs_attr = calloc(im->n_inputs + 1, sizeof *im->abs_attr);
    rt_status st = im->attr && im->abs_attr ? rt_xai_model_baseline(m, &im->base, err)
                                            : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if (st != RT_OK) {
        pm_importance_free(im);
        return st;
    }
    *out = im;
    return RT_OK;
}

void pm_importance_free(pm_importance *im)
{
    if (!im)
        return;
    rt_batch_free(im->base);
    free(im->attr);
    free(im->abs_attr);
    free(im);
}

rt_status pm_importance_row(pm_importance *im, const rt_batch *b, size_t i, const double **abs_attr,
                            rt_err *err)
{
    rt_xai_result r = {0};
    r.attr = im->attr;
    size_t n = 0;
    rt_status st = rt_xai_explain(im->g, b, i, im->base, 0, &im->p, &r, 1, &n, err);
    if (st != RT_OK)
        return st;
    for (size_t k = 0; k < im->n_inputs; k++)
        im->abs_attr[k] = fabs(im->attr[k]);
    *abs_attr = im->abs_attr;
    return RT_OK;
}
