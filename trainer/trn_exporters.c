/*
 * trn_exporters.c — the exporters (Final, Latest, Best) of a run, writing
 * through the exporter API into JOB_DIR/export/<name>/<version>/ with the
 * training info, and the best-model tracking of the BestExporters.
 */
#include "trn_run_internal.h"

#include "exp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Records step and metrics in def->training (malloc'd, freed with def). */
static rt_status set_training_info(trn_run *R, const rt_metric_list *ml, rt_err *err)
{
    Predictd__ModelDef *def = R->def;
    if (!def->training) {
        def->training = malloc(sizeof *def->training);
        if (!def->training)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        predictd__training_info__init(def->training);
    }
    Predictd__TrainingInfo *t = def->training;
    for (size_t i = 0; i < t->n_eval_metrics; i++) {
        free(t->eval_metrics[i]->name);
        free(t->eval_metrics[i]);
    }
    free(t->eval_metrics);
    t->eval_metrics = NULL;
    t->n_eval_metrics = 0;
    t->global_step = R->m->step;
    t->export_time = (int64_t)time(NULL);
    if (!t->spec_json || t->spec_json == protobuf_c_empty_string) {
        t->spec_json = strdup(R->spec_json ? R->spec_json : "");
        if (!t->spec_json)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (!t->producer || t->producer == protobuf_c_empty_string) {
        t->producer = strdup("predict-train 0.1");
        if (!t->producer)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (ml && ml->n) {
        t->eval_metrics = calloc(ml->n, sizeof *t->eval_metrics);
        if (!t->eval_metrics)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < ml->n; i++) {
            Predictd__Metric *mm = malloc(sizeof *mm);
            if (!mm)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            predictd__metric__init(mm);
            mm->name = strdup(ml->m[i].name);
            mm->value = ml->m[i].value;
            t->eval_metrics[t->n_eval_metrics++] = mm;
            if (!mm->name)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    return RT_OK;
}

static rt_status do_export(trn_run *R, const trn_exporter_conf *x, const rt_metric_list *ml,
                           rt_err *err)
{
    char base[4096];
    if (snprintf(base, sizeof base, "%s/export/%s", R->c->job_dir, x->name) >=
        (int)sizeof base)
        return rt_err_set(err, RT_ERR_LIMIT, "export path too long");
    rt_status st = set_training_info(R, ml, err);
    if (st)
        return st;
    trn_model *m = R->m;
    exp_tensor *ts = calloc(m->n_params ? m->n_params : 1, sizeof *ts);
    if (!ts)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < m->n_params; i++) {
        ts[i].name = m->p[i].name;
        ts[i].data = m->p[i].data;
        ts[i].rank = m->specs[i].rank;
        ts[i].shape[0] = m->specs[i].shape[0];
        ts[i].shape[1] = m->specs[i].shape[1];
    }
    /* vocabulary files travel with the export (assets/) */
    const Predictd__ModelDef *def = R->def;
    exp_asset *as = calloc(def->n_feature_columns ? def->n_feature_columns : 1, sizeof *as);
    char (*paths)[4096] = calloc(def->n_feature_columns ? def->n_feature_columns : 1,
                                 sizeof *paths);
    size_t na = 0;
    if (!as || !paths) {
        free(as);
        free(paths);
        free(ts);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < def->n_feature_columns; i++) {
        const Predictd__FeatureColumn *fc = def->feature_columns[i];
        if (fc->type != PREDICTD__COLUMN_TYPE__VOCABULARY_FILE || !fc->vocabulary_file)
            continue;
        int dup = 0;
        for (size_t k = 0; k < na; k++)
            dup |= strcmp(as[k].name, fc->vocabulary_file) == 0;
        if (dup)
            continue;
        snprintf(paths[na], sizeof paths[na], "%s/%s",
                 R->c->assets_dir ? R->c->assets_dir : ".", fc->vocabulary_file);
        as[na].name = fc->vocabulary_file;
        as[na].src_path = paths[na];
        na++;
    }
    exp_params p = exp_default_params();
    p.assets = as;
    p.n_assets = na;
    if (R->stats && R->stats->json.len && !rt_buf_failed(&R->stats->json)) {
        p.statistics = R->stats->json.data;
        p.statistics_len = R->stats->json.len;
    }
    /* Versions must grow with every export of a base even when several
     * exports fall in one second (the exporter then takes time + 1, + 2, ...
     * and a later export must not get an older number, or retention would
     * remove the newest): max(now, newest existing + 1). */
    {
        int64_t *vers = NULL;
        size_t nv = 0;
        int64_t now = (int64_t)time(NULL);
        p.version = now > 0 ? now : 1;
        if (exp_list_versions(base, &vers, &nv, NULL) == RT_OK && nv > 0 &&
            vers[nv - 1] >= p.version)
            p.version = vers[nv - 1] + 1;
        free(vers);
    }
    exp_result res;
    st = exp_write(base, R->def, ts, m->n_params, &p, &res, err);
    free(as);
    free(paths);
    free(ts);
    if (st)
        return st;
    trn_logf(R->c, "%s: exported global step %lld to %s", x->name, (long long)m->step, res.path);
    if (x->type != TRN_EXPORTER_FINAL && x->exports_to_keep > 0) {
        rt_err e;
        size_t removed = 0;
        if (exp_retain_latest(base, (size_t)x->exports_to_keep, &removed, &e) != RT_OK)
            trn_logf(R->c, "%s: retention: %s", x->name, e.msg);
    }
    return RT_OK;
}

/* Latest and Best exporters after an evaluation; Final too when final. */
/* final: 0 after an evaluation while training, 1 at the end, 2 at the end
 * with only the FinalExporters (the others ran on these metrics already). */
rt_status trn_run_exporters(trn_run *R, const rt_metric_list *ml, int final, rt_err *err)
{
    if (!R->c->job_dir)
        return RT_OK;
    for (size_t i = 0; i < R->c->n_exporters; i++) {
        const trn_exporter_conf *x = &R->c->exporters[i];
        rt_status st = RT_OK;
        if (final == 2 && x->type != TRN_EXPORTER_FINAL)
            continue;
        if (x->type == TRN_EXPORTER_FINAL) {
            if (final)
                st = do_export(R, x, ml, err);
        } else if (x->type == TRN_EXPORTER_LATEST) {
            st = do_export(R, x, ml, err);
        } else {
            double v = rt_metric_get(ml, x->metric);
            if (isnan(v)) {
                trn_logf(R->c, "%s: metric %s not computed for this head; not exporting", x->name,
                      x->metric);
                continue;
            }
            int better = !R->have_best[i] ||
                         (x->higher_is_better ? v > R->best[i] : v < R->best[i]);
            if (better) {
                st = do_export(R, x, ml, err);
                R->best[i] = v;
                R->have_best[i] = 1;
            }
        }
        if (st)
            return st;
    }
    return RT_OK;
}

/* BestExporter: the best value among earlier exports (their training info). */
void trn_load_best(trn_run *R)
{
    for (size_t i = 0; i < R->c->n_exporters; i++) {
        const trn_exporter_conf *x = &R->c->exporters[i];
        if (x->type != TRN_EXPORTER_BEST || !R->c->job_dir)
            continue;
        char base[4096];
        if (snprintf(base, sizeof base, "%s/export/%s", R->c->job_dir, x->name) >=
            (int)sizeof base)
            continue;
        int64_t *vers = NULL;
        size_t nv = 0;
        if (exp_list_versions(base, &vers, &nv, NULL) != RT_OK)
            continue;
        for (size_t k = 0; k < nv; k++) {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%lld", base, (long long)vers[k]);
            rt_model *om = NULL;
            if (rt_model_open(dir, &om, NULL) != RT_OK)
                continue;
            const Predictd__ModelDef *od = rt_model_def(om);
            for (size_t j = 0; od->training && j < od->training->n_eval_metrics; j++) {
                const Predictd__Metric *mm = od->training->eval_metrics[j];
                if (strcmp(mm->name, x->metric) != 0)
                    continue;
                int better = !R->have_best[i] || (x->higher_is_better ? mm->value > R->best[i]
                                                                      : mm->value < R->best[i]);
                if (better) {
                    R->best[i] = mm->value;
                    R->have_best[i] = 1;
                }
            }
            rt_model_close(om);
        }
        free(vers);
    }
}


/* 1 when an exporter's newest export holds the model at global step step
 * (a re-run with nothing to train then writes no second copy). */
int trn_exported_at(const trn_run *R, int64_t step)
{
    int found = 0;
    for (size_t i = 0; !found && R->c->job_dir && i < R->c->n_exporters; i++) {
        char base[4096];
        if (snprintf(base, sizeof base, "%s/export/%s", R->c->job_dir,
                     R->c->exporters[i].name) >= (int)sizeof base)
            continue;
        int64_t *vers = NULL;
        size_t nv = 0;
        if (exp_list_versions(base, &vers, &nv, NULL) == RT_OK && nv > 0) {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%lld", base, (long long)vers[nv - 1]);
            rt_model *om = NULL;
            if (rt_model_open(dir, &om, NULL) == RT_OK) {
                const Predictd__ModelDef *od = rt_model_def(om);
                found = od->training && od->training->global_step == step;
                rt_model_close(om);
            }
        }
        free(vers);
    }
    return found;
}
