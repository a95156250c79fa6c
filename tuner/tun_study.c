/*
 * tun_study.c — a study's records: reading a trial's objective (hypertune
 * metric file or eval/metrics.jsonl), trials.jsonl lines, study.json in Cloud
 * ML Engine's trainingOutput shape, the best-trials table, the median
 * stopping rule, atomic writes.
 */
#include "tun.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void tun_trial_free(tun_trial *t, int free_struct)
{
    if (!t)
        return;
    free(t->v);
    free(t->curve_step);
    free(t->curve_value);
    free(t->error);
    if (free_struct)
        free(t);
    else
        memset(t, 0, sizeof *t);
}

int tun_better(const tun_spec *s, double a, double b)
{
    return s->maximize ? a > b : a < b;
}

/* ------------------------------------------------------------ metrics */

static int curve_push(tun_trial *t, double step, double value)
{
    double *s = realloc(t->curve_step, (t->n_curve + 1) * sizeof *s);
    if (!s)
        return -1;
    t->curve_step = s;
    double *v = realloc(t->curve_value, (t->n_curve + 1) * sizeof *v);
    if (!v)
        return -1;
    t->curve_value = v;
    s[t->n_curve] = step;
    v[t->n_curve++] = value;
    return 0;
}

/* A global_step as the study records it: a finite integer in [0, 2^63).
 * 0 with *step set, -1 otherwise ("nan", 1e300, -1, 2.5, "12abc"). */
static int step_value(const cJSON *c, int64_t *step)
{
    double d;
    if (tun_json_number(c, &d) != 0 || !isfinite(d) || d < 0 || d >= 9223372036854775808.0 ||
        d != floor(d))
        return -1;
    *step = (int64_t)d;
    return 0;
}

rt_status tun_read_metrics(const char *metric_file, const char *trial_dir, const char *tag,
                           int ended, tun_trial *t, rt_err *err)
{
    char path[4096];
    char *text = NULL;
    const char *name = metric_file;
    rt_status st = RT_ERR_NOTFOUND;
    if (metric_file)
        st = rt_file_read(AT_FDCWD, metric_file, 64u << 20, 0, &text, NULL, err);
    if (st == RT_ERR_NOTFOUND) {
        snprintf(path, sizeof path, "%s/eval/metrics.jsonl", trial_dir);
        name = path;
        st = rt_file_read(AT_FDCWD, path, 64u << 20, 0, &text, NULL, err);
    }
    t->n_curve = 0;
    if (st == RT_ERR_NOTFOUND)
        return rt_err_set(err, RT_ERR_NOTFOUND, "no metrics written");
    if (st)
        return st;
    size_t lineno = 0;
    for (char *line = text, *nl; line && *line; line = nl) {
        lineno++;
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        else if (!ended)
            break; /* a line still being written */
        /* else: the trial has ended, its last line is whole without a newline */
        cJSON *o = cJSON_Parse(line);
        double v;
        if (o && tun_json_number(cJSON_GetObjectItemCaseSensitive(o, tag), &v) == 0 && isfinite(v)) {
            const cJSON *gs = cJSON_GetObjectItemCaseSensitive(o, "global_step");
            int64_t step = (int64_t)t->n_curve + 1;
            if (gs && step_value(gs, &step) != 0) {
                char *shown = cJSON_PrintUnformatted(gs);
                rt_err_set(err, RT_ERR_FORMAT,
                           "%s:%zu: global_step %s is not a finite integer >= 0", name, lineno,
                           shown ? shown : "?");
                free(shown);
                cJSON_Delete(o);
                free(text);
                t->n_curve = 0;
                return RT_ERR_FORMAT;
            }
            if (curve_push(t, (double)step, v) != 0) {
                cJSON_Delete(o);
                free(text);
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            }
        }
        cJSON_Delete(o);
        if (!nl)
            break;
    }
    free(text);
    if (t->n_curve == 0)
        return rt_err_set(err, RT_ERR_NOTFOUND, "no \"%s\" reported", tag);
    t->objective = t->curve_value[t->n_curve - 1];
    t->step = (int64_t)t->curve_step[t->n_curve - 1];
    t->has_objective = 1;
    return RT_OK;
}

/* ------------------------------------------------------------ JSON */

/* times are kept to the millisecond, so a record survives a reload unchanged */
static void rfc3339(double t, char *buf, size_t cap)
{
    long long ms = llround(t * 1000);
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03dZ", base, (int)(ms % 1000));
}

static double parse_rfc3339(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return 0;
    double frac = *rest == '.' ? strtod(rest, NULL) : 0;
    return (double)timegm(&tm) + frac;
}

/* HyperparameterOutput (Cloud ML Engine) for one trial, plus our fields. */
static cJSON *trial_json(const tun_spec *s, const tun_trial *t, int with_curve)
{
    char buf[512];
    cJSON *o = cJSON_CreateObject(), *hp = cJSON_CreateObject();
    if (!o || !hp) {
        cJSON_Delete(o);
        cJSON_Delete(hp);
        return NULL;
    }
    snprintf(buf, sizeof buf, "%lld", (long long)t->id);
    cJSON_AddStringToObject(o, "trialId", buf);
    for (size_t i = 0; i < s->n_params; i++) {
        tun_format_value(&s->params[i], t->v[i], buf, sizeof buf);
        cJSON_AddStringToObject(hp, s->params[i].name, buf);
    }
    cJSON_AddItemToObject(o, "hyperparameters", hp);
    if (t->has_objective) {
        cJSON *fm = cJSON_AddObjectToObject(o, "finalMetric");
        snprintf(buf, sizeof buf, "%lld", (long long)t->step);
        cJSON_AddStringToObject(fm, "trainingStep", buf);
        cJSON_AddNumberToObject(fm, "objectiveValue", t->objective);
    }
    if (with_curve && t->n_curve) {
        cJSON *am = cJSON_AddArrayToObject(o, "allMetrics");
        for (size_t k = 0; am && k < t->n_curve; k++) {
            cJSON *m = cJSON_CreateObject();
            snprintf(buf, sizeof buf, "%lld", (long long)t->curve_step[k]);
            cJSON_AddStringToObject(m, "trainingStep", buf);
            cJSON_AddNumberToObject(m, "objectiveValue", t->curve_value[k]);
            cJSON_AddItemToArray(am, m);
        }
    }
    rfc3339(t->start_time, buf, sizeof buf);
    cJSON_AddStringToObject(o, "startTime", buf);
    rfc3339(t->end_time, buf, sizeof buf);
    cJSON_AddStringToObject(o, "endTime", buf);
    cJSON_AddStringToObject(o, "state", t->state == TUN_SUCCEEDED ? "SUCCEEDED" : "FAILED");
    cJSON_AddBoolToObject(o, "isTrialStoppedEarly", t->stopped_early);
    cJSON_AddNumberToObject(o, "wallSeconds", (double)(llround(t->end_time * 1000) - llround(t->start_time * 1000)) / 1000);
    if (t->error)
        cJSON_AddStringToObject(o, "error", t->error);
    if (t->rank > 0)
        cJSON_AddNumberToObject(o, "rank", t->rank);
    return o;
}

rt_status tun_trial_to_json(const tun_spec *s, const tun_trial *t, rt_buf *out)
{
    cJSON *o = trial_json(s, t, 1);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    int bad = !text || rt_buf_puts(out, text) != 0;
    free(text);
    return bad ? RT_ERR_NOMEM : RT_OK;
}

rt_status tun_trial_from_json(const tun_spec *s, const char *line, tun_trial *t, rt_err *err)
{
    rt_status st = RT_OK;
    memset(t, 0, sizeof *t);
    cJSON *o = cJSON_Parse(line);
    double d;
    if (!o) {
        st = rt_err_set(err, RT_ERR_FORMAT, "not JSON");
        goto out;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "trialId");
    const cJSON *hp = cJSON_GetObjectItemCaseSensitive(o, "hyperparameters");
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(o, "state");
    if (tun_json_number(id, &d) != 0 || d < 1 || d != floor(d) || !cJSON_IsObject(hp) ||
        !cJSON_IsString(state)) {
        st = rt_err_set(err, RT_ERR_FORMAT, "needs trialId, hyperparameters and state");
        goto out;
    }
    t->id = (int64_t)d;
    t->state = strcmp(state->valuestring, "SUCCEEDED") == 0 ? TUN_SUCCEEDED : TUN_FAILED;
    if (!(t->v = calloc(s->n_params, sizeof *t->v))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < s->n_params; i++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(hp, s->params[i].name);
        if (!cJSON_IsString(c) || tun_parse_value(&s->params[i], c->valuestring, &t->v[i]) != 0) {
            st = rt_err_set(err, RT_ERR_INVALID,
                            "trial %lld: hyperparameters.%s is missing or outside the config",
                            (long long)t->id, s->params[i].name);
            goto out;
        }
    }
    const cJSON *fm = cJSON_GetObjectItemCaseSensitive(o, "finalMetric");
    if (fm && tun_json_number(cJSON_GetObjectItemCaseSensitive(fm, "objectiveValue"), &t->objective) == 0) {
        t->has_objective = 1;
        int64_t step;
        if (step_value(cJSON_GetObjectItemCaseSensitive(fm, "trainingStep"), &step) == 0)
            t->step = step;
    }
    if (t->state == TUN_SUCCEEDED && !t->has_objective) {
        st = rt_err_set(err, RT_ERR_FORMAT, "trial %lld: SUCCEEDED without finalMetric",
                        (long long)t->id);
        goto out;
    }
    const cJSON *am = cJSON_GetObjectItemCaseSensitive(o, "allMetrics"), *m;
    cJSON_ArrayForEach(m, am)
    {
        double sv, vv;
        if (tun_json_number(cJSON_GetObjectItemCaseSensitive(m, "trainingStep"), &sv) == 0 &&
            tun_json_number(cJSON_GetObjectItemCaseSensitive(m, "objectiveValue"), &vv) == 0 &&
            curve_push(t, sv, vv) != 0) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    t->stopped_early = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "isTrialStoppedEarly"));
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "startTime");
    const cJSON *te = cJSON_GetObjectItemCaseSensitive(o, "endTime");
    t->start_time = cJSON_IsString(ts) ? parse_rfc3339(ts->valuestring) : 0;
    t->end_time = cJSON_IsString(te) ? parse_rfc3339(te->valuestring) : 0;
    if (tun_json_number(cJSON_GetObjectItemCaseSensitive(o, "rank"), &d) == 0 && d >= 1 &&
        d <= INT_MAX)
        t->rank = (int)d;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    if (cJSON_IsString(e) && !(t->error = strdup(e->valuestring)))
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
out:
    cJSON_Delete(o);
    if (st)
        tun_trial_free(t, 0);
    return st;
}

rt_status tun_trials_load(const tun_spec *s, const char *path, tun_trial **trials, size_t *n,
                          rt_err *err)
{
    *trials = NULL;
    *n = 0;
    char *text;
    rt_status st = rt_file_read(AT_FDCWD, path, 256u << 20, 0, &text, NULL, err);
    if (st)
        return st == RT_ERR_NOTFOUND ? RT_OK : st; /* no file yet: no trials */
    size_t lineno = 0;
    for (char *line = text, *nl; *line; line = nl) {
        lineno++;
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        else
            nl = line + strlen(line);
        if (!*line)
            continue;
        tun_trial *grown = realloc(*trials, (*n + 1) * sizeof *grown);
        if (!grown) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            break;
        }
        *trials = grown;
        if ((st = tun_trial_from_json(s, line, &grown[*n], err))) {
            rt_err_prefix(err, "%s:%zu", path, lineno);
            break;
        }
        for (size_t k = 0; k < *n; k++)
            if (grown[k].id == grown[*n].id) {
                st = rt_err_set(err, RT_ERR_FORMAT, "%s:%zu: trial %lld appears twice", path,
                                lineno, (long long)grown[k].id);
                tun_trial_free(&grown[*n], 0);
                goto out;
            }
        (*n)++;
    }
out:
    free(text);
    if (st) {
        for (size_t k = 0; k < *n; k++)
            tun_trial_free(&(*trials)[k], 0);
        free(*trials);
        *trials = NULL;
        *n = 0;
    }
    return st;
}

rt_status tun_trials_save(const tun_spec *s, const char *path, const tun_trial *trials, size_t n,
                          rt_err *err)
{
    rt_buf b;
    rt_buf_init(&b);
    rt_status st = RT_OK;
    for (size_t i = 0; i < n && !st; i++)
        if ((st = tun_trial_to_json(s, &trials[i], &b)) || rt_buf_puts(&b, "\n") != 0)
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if (!st)
        st = rt_file_write(path, b.data ? b.data : "", b.len, err);
    rt_buf_free(&b);
    return st;
}

/* best first: succeeded by objective (ties by id), then the failed by id */
static int rank_cmp(const tun_spec *s, const tun_trial *a, const tun_trial *b)
{
    int sa = a->state == TUN_SUCCEEDED, sb = b->state == TUN_SUCCEEDED;
    if (sa != sb)
        return sb - sa;
    if (sa && a->objective != b->objective)
        return tun_better(s, a->objective, b->objective) ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* indices of trials in rank order (insertion sort: studies are small) */
static size_t *ranked(const tun_spec *s, const tun_trial *t, size_t n)
{
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && rank_cmp(s, &t[i], &t[idx[j - 1]]) < 0; j--)
            idx[j] = idx[j - 1];
        idx[j] = i;
    }
    return idx;
}

rt_status tun_study_save(const tun_spec *s, const char *path, const tun_trial *trials, size_t n,
                         rt_err *err)
{
    rt_status st = RT_OK;
    char *text = NULL;
    size_t *idx = ranked(s, trials, n);
    cJSON *root = cJSON_CreateObject();
    cJSON *to = root ? cJSON_AddObjectToObject(root, "trainingOutput") : NULL;
    if (!idx || !to) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t ok = 0;
    for (size_t i = 0; i < n; i++)
        ok += trials[i].state == TUN_SUCCEEDED;
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", ok);
    cJSON_AddStringToObject(to, "completedTrialCount", buf);
    cJSON *arr = cJSON_AddArrayToObject(to, "trials");
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *o = trial_json(s, &trials[idx[i]], 0);
        if (!o) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddBoolToObject(to, "isHyperparameterTuningJob", 1);
    cJSON_AddStringToObject(to, "hyperparameterMetricTag", s->metric_tag);
    if (!(text = cJSON_Print(root))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t len = strlen(text);
    char *nl = realloc(text, len + 2);
    if (!nl) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    text = nl;
    text[len++] = '\n';
    text[len] = '\0';
    st = rt_file_write(path, text, len, err);
out:
    free(text);
    free(idx);
    cJSON_Delete(root);
    return st;
}

void tun_print_table(const tun_spec *s, const tun_trial *trials, size_t n, size_t top, void *out)
{
    FILE *fp = out;
    size_t *idx = ranked(s, trials, n);
    if (!idx)
        return;
    fprintf(fp, "%-5s %-6s %14s %10s", "rank", "trial", s->metric_tag, "step");
    for (size_t k = 0; k < s->n_params; k++)
        fprintf(fp, " %14s", s->params[k].name);
    fprintf(fp, " %9s\n", "seconds");
    for (size_t i = 0; i < n && i < top; i++) {
        const tun_trial *t = &trials[idx[i]];
        if (t->state != TUN_SUCCEEDED)
            break;
        fprintf(fp, "%-5zu %-6lld %14.6g %10lld", i + 1, (long long)t->id, t->objective,
                (long long)t->step);
        for (size_t k = 0; k < s->n_params; k++) {
            char buf[64];
            if (s->params[k].type == TUN_DOUBLE)
                snprintf(buf, sizeof buf, "%.6g", t->v[k]);
            else
                tun_format_value(&s->params[k], t->v[k], buf, sizeof buf);
            fprintf(fp, " %14s", buf);
        }
        fprintf(fp, " %9.1f%s\n", t->end_time - t->start_time,
                t->stopped_early ? "  (stopped early)" : "");
    }
    free(idx);
}

/* ------------------------------------------------------------ early stopping */

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int tun_median_stop(const tun_spec *s, const tun_trial *running, const tun_trial *trials, size_t n)
{
    if (!running->n_curve)
        return 0;
    double at = running->curve_step[running->n_curve - 1];
    double best = running->curve_value[0];
    for (size_t k = 1; k < running->n_curve; k++)
        if (tun_better(s, running->curve_value[k], best))
            best = running->curve_value[k];
    double avgs[256], last = -INFINITY;
    size_t m = 0;
    for (size_t i = 0; i < n && m < 256; i++) {
        const tun_trial *t = &trials[i];
        if (t->state != TUN_SUCCEEDED || t->stopped_early)
            continue;
        if (t->n_curve)
            last = fmax(last, t->curve_step[t->n_curve - 1]);
        double sum = 0;
        size_t c = 0;
        for (size_t k = 0; k < t->n_curve && t->curve_step[k] <= at; k++, c++)
            sum += t->curve_value[k];
        if (c)
            avgs[m++] = sum / (double)c;
    }
    if (m < 2)
        return 0; /* too few completed trials to say what is typical */
    if (at >= last)
        return 0; /* it reported where completed trials ended: nothing left to save */
    qsort(avgs, m, sizeof avgs[0], dcmp);
    double med = m % 2 ? avgs[m / 2] : 0.5 * (avgs[m / 2 - 1] + avgs[m / 2]);
    return tun_better(s, med, best);
}
