/*
 * trn_hooks.c — early stopping, as tf.estimator.experimental's
 * stop_if_no_increase_hook / stop_if_no_decrease_hook: the evaluations of
 * the job (this run's and, from JOB_DIR/eval/metrics.jsonl, earlier runs';
 * TF reads them from the eval dir's events) are walked in step order,
 * skipping those below min_steps; the best value so far and its step are
 * kept, and once an evaluation's step is max_steps or more past the best
 * one's, the hook asks to stop. A hook runs after the update that reached a
 * step, on TF's SecondOrStepTimer schedule: at the first step it sees, then
 * whenever run_every_steps steps (or run_every_secs seconds) have passed.
 */
#include "trn_internal.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct es_point {
    int64_t step;
    double v[TRN_MAX_HOOKS]; /* NAN: not in that evaluation */
} es_point;

struct trn_early_stop {
    const trn_config *c;
    es_point *pts; /* ascending steps; a step evaluated again keeps the latest */
    size_t n, cap;
    int64_t last_step[TRN_MAX_HOOKS]; /* -1: not run yet */
    double last_time[TRN_MAX_HOOKS];
};

/* The point of step, inserted in order when new. */
static es_point *point_at(trn_early_stop *e, int64_t step)
{
    size_t i = e->n;
    while (i > 0 && e->pts[i - 1].step > step)
        i--;
    if (i > 0 && e->pts[i - 1].step == step)
        return &e->pts[i - 1];
    if (rt_grow(&e->pts, &e->cap, e->n + 1, sizeof *e->pts) != 0)
        return NULL;
    memmove(e->pts + i + 1, e->pts + i, (e->n - i) * sizeof *e->pts);
    e->n++;
    e->pts[i].step = step;
    for (size_t h = 0; h < TRN_MAX_HOOKS; h++)
        e->pts[i].v[h] = NAN;
    return &e->pts[i];
}

/* Earlier runs' evaluations (lines that do not parse are skipped: the file
 * is ours and fsynced line by line, a torn last line is all it can hold). */
static rt_status load_history(trn_early_stop *e, rt_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/eval/metrics.jsonl", e->c->job_dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return RT_OK;
    char *line = NULL;
    size_t cap = 0;
    rt_status st = RT_OK;
    while (getline(&line, &cap, fp) > 0) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *gs = cJSON_GetObjectItemCaseSensitive(o, "global_step");
        if (cJSON_IsNumber(gs)) {
            es_point *p = point_at(e, (int64_t)gs->valuedouble);
            if (!p) {
                cJSON_Delete(o);
                st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                break;
            }
            for (size_t h = 0; h < e->c->n_hooks; h++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, e->c->hooks[h].metric);
                p->v[h] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            }
        }
        cJSON_Delete(o);
    }
    free(line);
    fclose(fp);
    return st;
}

rt_status trn_early_stop_new(const trn_config *c, trn_early_stop **out, rt_err *err)
{
    *out = NULL;
    if (c->n_hooks == 0)
        return RT_OK;
    if (c->n_eval_files == 0)
        return rt_err_set(err, RT_ERR_INVALID, "train.hooks[0]: early stopping needs "
                          "evaluations (eval.files or --eval-files)");
    trn_early_stop *e = calloc(1, sizeof *e);
    if (!e)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    e->c = c;
    for (size_t h = 0; h < TRN_MAX_HOOKS; h++)
        e->last_step[h] = -1;
    rt_status st = c->job_dir ? load_history(e, err) : RT_OK;
    if (st) {
        trn_early_stop_free(e);
        return st;
    }
    *out = e;
    return RT_OK;
}

void trn_early_stop_free(trn_early_stop *e)
{
    if (!e)
        return;
    free(e->pts);
    free(e);
}

rt_status trn_early_stop_record(trn_early_stop *e, const rt_metric_list *ml, int64_t step,
                                rt_err *err)
{
    if (!e)
        return RT_OK;
    es_point *p = point_at(e, step);
    if (!p)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t h = 0; h < e->c->n_hooks; h++) {
        p->v[h] = rt_metric_get(ml, e->c->hooks[h].metric);
        if (!isnan(p->v[h]))
            continue;
        rt_buf b;
        rt_buf_init(&b);
        for (size_t i = 0; i < ml->n; i++)
            if (rt_buf_printf(&b, "%s%s", i ? ", " : "", ml->m[i].name))
                break;
        rt_status st = rt_err_set(err, RT_ERR_INVALID,
                                  "train.hooks[%zu].metric_name: \"%s\" is not one of the "
                                  "evaluation's metrics (%s)", h, e->c->hooks[h].metric,
                                  b.data ? b.data : "");
        rt_buf_free(&b);
        return st;
    }
    return RT_OK;
}

int trn_early_stop_secs_due(const trn_early_stop *e, double now)
{
    for (size_t h = 0; e && h < e->c->n_hooks; h++) {
        const trn_stop_hook *k = &e->c->hooks[h];
        if (k->run_every_secs > 0 && e->last_step[h] >= 0 &&
            now - e->last_time[h] >= k->run_every_secs)
            return 1;
    }
    return 0;
}

/* Hook h's predicate on the evaluations; fills reason when it says stop. */
static int no_improvement(const trn_early_stop *e, size_t h, char *reason, size_t len)
{
    const trn_stop_hook *k = &e->c->hooks[h];
    double best = NAN;
    int64_t best_step = 0;
    for (size_t i = 0; i < e->n; i++) {
        const es_point *p = &e->pts[i];
        if (p->step < k->min_steps || isnan(p->v[h]))
            continue;
        if (isnan(best) || (k->increase ? p->v[h] > best : p->v[h] < best)) {
            best = p->v[h];
            best_step = p->step;
        }
        if (p->step - best_step >= k->max_steps) {
            snprintf(reason, len, "no %s in metric \"%s\" for %lld steps (best %.7g at global "
                     "step %lld, evaluated at %lld), which is >= max_steps_without_%s %lld",
                     k->increase ? "increase" : "decrease", k->metric,
                     (long long)(p->step - best_step), best, (long long)best_step,
                     (long long)p->step, k->increase ? "increase" : "decrease",
                     (long long)k->max_steps);
            return 1;
        }
    }
    return 0;
}

int trn_early_stop_check(trn_early_stop *e, int64_t step, int secs_due, double now,
                         char *reason, size_t len)
{
    int ran = -1;
    for (size_t h = 0; e && h < e->c->n_hooks; h++) {
        const trn_stop_hook *k = &e->c->hooks[h];
        int due = e->last_step[h] < 0 ||
                  (step != e->last_step[h] &&
                   (k->run_every_secs > 0 ? secs_due
                                          : step >= e->last_step[h] + k->run_every_steps));
        if (!due)
            continue;
        e->last_step[h] = step;
        e->last_time[h] = now;
        if (ran < 0)
            ran = 0;
        if (ran == 0 && no_improvement(e, h, reason, len))
            ran = 1;
    }
    return ran;
}

rt_status trn_early_stop_report(const trn_early_stop *e, int64_t step, const char *reason,
                                rt_err *err)
{
    if (!e || !e->c->job_dir)
        return RT_OK;
    rt_buf b;
    rt_buf_init(&b);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/train", e->c->job_dir);
    int rc = rt_buf_printf(&b, "{\"global_step\": %lld, \"early_stopping\": ",
                           (long long)step) ||
             rt_buf_json_string(&b, reason, strlen(reason)) || rt_buf_puts(&b, "}\n");
    rt_status st = rc ? rt_err_set(err, RT_ERR_NOMEM, "out of memory")
                      : trn_append_file(dir, "metrics.jsonl", b.data, b.len, 1,
                                        "cannot record the early stop", err);
    rt_buf_free(&b);
    return st;
}
