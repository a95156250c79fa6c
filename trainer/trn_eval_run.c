/*
 * trn_eval_run.c — evaluation: trn_evaluate over the eval files (every rank
 * its slice, rank 0 the metrics), and a run's evaluation with its report
 * (the INFO line, eval/metrics.jsonl, the event file, the hooks) followed
 * by the exporters. Several heads (TF's MultiHead): each head's metrics
 * suffixed with its name, and the merged loss.
 */
#include "trn_run_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Distributed evaluation: every rank reads the eval stream (unshuffled) and
 * runs the model on its slice of each batch; rank 0 gathers the slices'
 * labels and logits in rank order, which is exactly the single-process batch,
 * and adds it to the metrics. So every metric (the exact AUC and the mean of
 * the batch losses too) is the one a single process computes. On rank 0,
 * labels/logits (room for the whole batch) receive the batch and *nb its size.
 */
static rt_status eval_gather(trn_model *m, size_t *nb, trn_targets *t, float *logits, rt_err *err)
{
    size_t ld = m->ld, ls = t->ls, nw = t->weights ? t->nw : 0, n = *nb;
    size_t per = ls + nw + ld, row = per * sizeof(float);
    float *send = malloc(n ? n * row : 1);
    if (!send)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    memcpy(send, t->labels, n * ls * sizeof(float));
    if (nw)
        memcpy(send + n * ls, t->weights, n * nw * sizeof(float));
    memcpy(send + n * (ls + nw), logits, n * ld * sizeof(float));
    void *recv;
    const size_t *lens;
    rt_status st = trn_dist_gather(m->dist, send, n * row, &recv, &lens, err);
    free(send);
    if (st || trn_dist_rank(m->dist) != 0)
        return st;
    const float *in = recv;
    size_t at = 0;
    for (int r = 0; r < trn_dist_size(m->dist); r++) {
        size_t k = lens[r] / row;
        memcpy(t->labels + at * ls, in, k * ls * sizeof(float));
        if (nw)
            memcpy(t->weights + at * nw, in + k * ls, k * nw * sizeof(float));
        memcpy(logits + at * ld, in + k * (ls + nw), k * ld * sizeof(float));
        in += k * per;
        at += k;
    }
    *nb = at;
    return RT_OK;
}

/*
 * Several heads (TF's MultiHead): each head's canned metrics over its
 * columns of the logits and its label, named with the head's name as
 * suffix (accuracy/income_bracket, average_loss/hours_per_week, and its
 * loss as loss/<name>), each weighted by the head's own example weights
 * (its weight_column), and the total "loss": sum over the heads of
 * loss_weight x loss/<name>, the mean of the batches' training losses
 * (each head's reduced by estimator.loss_reduction).
 */
typedef struct heads_eval {
    size_t n;
    rt_metrics **mt;  /* [n] */
    float *z, *y, *w; /* one head's logits, labels and weights of a batch */
} heads_eval;

static void heads_eval_free(heads_eval *he)
{
    if (!he)
        return;
    for (size_t k = 0; k < he->n; k++)
        rt_metrics_free(he->mt[k]);
    free(he->mt);
    free(he->z);
    free(he->y);
    free(he->w);
    free(he);
}

static heads_eval *heads_eval_new(const trn_model *m, size_t bs)
{
    heads_eval *he = calloc(1, sizeof *he);
    if (!he)
        return NULL;
    he->n = m->n_heads;
    he->mt = calloc(he->n, sizeof *he->mt);
    he->z = malloc(bs * m->ld * sizeof *he->z);
    he->y = malloc(bs * m->ld * sizeof *he->y);
    he->w = malloc(bs * sizeof *he->w);
    bool ok = he->mt && he->z && he->y && he->w;
    for (size_t k = 0; ok && k < he->n; k++) {
        const rt_head_slice *h = &m->heads[k];
        const Predictd__Head *hd = m->def->graph->heads[k]->head;
        he->mt[k] = rt_metrics_new(h->head, h->ld > 1 ? h->ld : hd->n_classes);
        if ((ok = he->mt[k] != NULL))
            rt_metrics_set_loss(he->mt[k], &h->loss);
    }
    if (!ok) {
        heads_eval_free(he);
        return NULL;
    }
    return he;
}

static rt_status heads_eval_add(heads_eval *he, const trn_model *m, const float *logits,
                                const float *labels, const float *weights, size_t nb)
{
    for (size_t k = 0; k < he->n; k++) {
        const rt_head_slice *h = &m->heads[k];
        size_t lw = h->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? h->ld : 1;
        const float *w = weights && m->head_weights ? he->w : NULL;
        for (size_t i = 0; i < nb; i++) {
            memcpy(he->z + i * h->ld, logits + i * m->ld + h->off, h->ld * sizeof(float));
            memcpy(he->y + i * lw, labels + i * m->label_w + h->label_off, lw * sizeof(float));
            if (w)
                he->w[i] = weights[i * m->head_weights + k];
        }
        double loss = rt_metrics_head_loss_with(h->head, &h->loss, h->ld, he->z, he->y, w, nb,
                                                nb, NULL);
        if (h->reduce_sum) /* SUM: the [batch, values] sum, as in training */
            loss *= (double)(nb * (h->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? h->ld : 1));
        rt_status st = rt_metrics_add(he->mt[k], he->z, he->y, w, nb, loss);
        if (st)
            return st;
    }
    return RT_OK;
}

static rt_status heads_eval_result(const heads_eval *he, const trn_model *m, rt_metric_list *out,
                                   rt_err *err)
{
    memset(out, 0, sizeof *out);
    double total = 0.0;
    for (size_t k = 0; k < he->n; k++) {
        rt_metric_list one;
        rt_status st = rt_metrics_result(he->mt[k], m->step, &one);
        if (st)
            return st == RT_ERR_NOTFOUND
                       ? rt_err_set(err, st, "evaluation: the eval files hold no rows")
                       : st;
        const char *name = m->def->graph->heads[k]->name;
        for (size_t j = 0; j < one.n; j++) {
            bool step = strcmp(one.m[j].name, "global_step") == 0;
            if (strcmp(one.m[j].name, "loss") == 0)
                total += m->heads[k].loss_weight * one.m[j].value;
            if (step && k > 0)
                continue;
            if (out->n == RT_MAX_METRICS)
                return rt_err_set(err, RT_ERR_LIMIT, "evaluation: more than %d metrics over "
                                  "the heads", RT_MAX_METRICS);
            rt_metric *o = &out->m[out->n++];
            if (step)
                snprintf(o->name, sizeof o->name, "%s", one.m[j].name);
            else if (snprintf(o->name, sizeof o->name, "%s/%s", one.m[j].name, name) >=
                     (int)sizeof o->name)
                return rt_err_set(err, RT_ERR_LIMIT, "evaluation: metric %s/%s: name too "
                                  "long", one.m[j].name, name);
            o->value = one.m[j].value;
        }
    }
    if (out->n == RT_MAX_METRICS)
        return rt_err_set(err, RT_ERR_LIMIT, "evaluation: more than %d metrics over the heads",
                          RT_MAX_METRICS);
    snprintf(out->m[out->n].name, sizeof out->m[out->n].name, "loss");
    out->m[out->n++].value = total;
    return RT_OK;
}

rt_status trn_evaluate(trn_model *m, const trn_config *c, rt_metric_list *out, rt_err *err)
{
    const Predictd__ModelDef *def = m->def;
    trn_feeder *fd = NULL;
    trn_reader *r = NULL;
    rt_batch *b = NULL;
    trn_targets t = {0};
    float *logits = NULL;
    rt_metrics *mt = NULL;
    heads_eval *he = NULL;
    uint64_t bad_labels = 0;
    int chief = trn_dist_rank(m->dist) == 0;
    rt_status st;
    if (c->n_eval_files == 0)
        return rt_err_set(err, RT_ERR_INVALID, "eval.files: no evaluation files given "
                          "(--eval-files)");
    size_t bs = c->eval_batch_size ? c->eval_batch_size : 256;
    if ((st = trn_feeder_new(m->g, &fd, err)))
        goto out;
    if ((st = trn_open_reader(fd, c->eval_files, c->n_eval_files, bs, 0, 1, c->seed, c->bad_rows,
                              c->eval_skip_header_lines, 0, 0, 0, c->input_format, &r, err)))
        goto out;
    b = rt_batch_new(m->g);
    int t_bad = trn_targets_alloc(&t, fd, bs);
    logits = malloc(bs * m->ld * sizeof *logits);
    mt = rt_metrics_new(def->head->type, m->ld > 1 ? m->ld : def->head->n_classes);
    rt_loss hl;
    rt_graph_head_loss(def, &hl);
    rt_metrics_set_loss(mt, &hl);
    if (m->n_heads)
        he = heads_eval_new(m, bs);
    if (!b || t_bad || !logits || !mt || (m->n_heads && !he)) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int64_t steps = 0; c->eval_steps == 0 || steps < c->eval_steps; steps++) {
        const trn_rows *rows;
        st = trn_reader_next(r, &rows, err);
        if (st == RT_ERR_NOTFOUND)
            break;
        if (st == RT_ERR_FORMAT)
            trn_hint_header(fd, r, "eval.skip_header_lines", err);
        if (st)
            goto out;
        size_t lo, hi;
        trn_dist_slice(m->dist, rows->n, &lo, &hi);
        trn_rows mine = trn_rows_slice(rows, lo, hi);
        if ((st = trn_feed_targets(fd, &mine, b, &t, c->bad_rows, &bad_labels, err)))
            goto out;
        size_t nb = rt_batch_size(b);
        double loss = 0;
        if (nb && (st = trn_model_loss(m, b, t.labels, t.weights, &loss, logits, err))) {
            st = trn_err_at_row(st == RT_ERR_INVALID ? RT_ERR_FORMAT : st, &mine, t.row_of, nb,
                                err);
            goto out;
        }
        if (m->dist) {
            if ((st = eval_gather(m, &nb, &t, logits, err)))
                goto out;
            if (!chief)
                continue;
            /* trn_model_loss's batch_loss over the gathered batch */
            loss = rt_metrics_head_loss_with(m->head, &hl, m->ld, logits, t.labels, t.weights, nb,
                                             nb, NULL);
            size_t vals = m->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? 1 : t.ls;
            if (m->loss_sum && nb * vals > 1) /* multi-label: one loss per row */
                loss *= (double)(nb * vals);
        }
        if (nb == 0)
            continue;
        if ((st = he ? heads_eval_add(he, m, logits, t.labels, t.weights, nb)
                     : rt_metrics_add(mt, logits, t.labels, t.weights, nb, loss))) {
            rt_err_set(err, st, "metrics: out of memory");
            goto out;
        }
    }
    if (!chief) {
        memset(out, 0, sizeof *out);
        st = RT_OK;
        goto out;
    }
    if (he)
        st = heads_eval_result(he, m, out, err);
    else if ((st = rt_metrics_result(mt, m->step, out)) == RT_ERR_NOTFOUND)
        rt_err_set(err, st, "evaluation: the eval files hold no rows");
    {
        trn_reader_stats rs;
        trn_reader_get_stats(r, &rs);
        if (rs.bad_rows)
            trn_logf(c, "evaluation skipped %llu malformed rows (first: %s)",
                  (unsigned long long)rs.bad_rows, rs.first_bad);
        if (bad_labels)
            trn_logf(c, "evaluation skipped %llu rows with an unknown label",
                  (unsigned long long)bad_labels);
    }
out:
    heads_eval_free(he);
    rt_metrics_free(mt);
    trn_targets_free(&t);
    free(logits);
    rt_batch_free(b);
    trn_reader_close(r);
    trn_feeder_free(fd);
    return st;
}

/*
 * Logs the TF-style line, appends the JSON to JOB_DIR/eval/metrics.jsonl
 * (one write and an fsync; a failed write is an error and is cut off again,
 * so the file stays one JSON object a line) and writes the metrics to the
 * run's evaluation event file.
 */
static rt_status report_eval(const trn_run *R, const rt_metric_list *ml, int64_t step,
                             rt_err *err)
{
    const trn_config *c = R->c;
    rt_buf b;
    rt_buf_init(&b);
    rt_status st = RT_OK;
    if (rt_metrics_format(ml, &b) == 0)
        trn_logf(c, "Saving dict for global step %lld: %s", (long long)step, b.data);
    rt_buf_reset(&b);
    if (!c->job_dir) {
        st = trn_early_stop_record(R->es, ml, step, err);
        goto out;
    }
    if (rt_metrics_json(ml, &b) != 0 || rt_buf_puts(&b, "\n") != 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "eval metrics: out of memory");
        goto out;
    }
    char dir[4096], what[96];
    snprintf(dir, sizeof dir, "%s/eval", c->job_dir);
    snprintf(what, sizeof what, "cannot write the metrics of global step %lld", (long long)step);
    if ((st = trn_append_file(dir, "metrics.jsonl", b.data, b.len, 1, what, err)))
        goto out;
    if (R->sum && (st = trn_summary_eval(R->sum, ml, step, err)))
        goto out;
    st = trn_early_stop_record(R->es, ml, step, err);
out:
    rt_buf_free(&b);
    return st;
}

rt_status trn_evaluate_and_export(trn_run *R, int final, rt_metric_list *out, rt_err *err)
{
    rt_metric_list ml;
    rt_status st = RT_OK;
    /* every rank is here: the training statistics so far, merged (rank 0) */
    if (R->stats && R->c->job_dir && (st = trn_stats_snapshot(R->stats, R->dist, err)))
        return st;
    if (final && R->stopped_early && R->last_ml_step == R->m->step) {
        /* stopped right after evaluating this step: the final exporters
         * take that evaluation (the others already ran on it) */
        if (out)
            *out = R->last_ml;
        return trn_is_chief(R->c) ? trn_run_exporters(R, &R->last_ml, 2, err) : RT_OK;
    }
    /* a tree ensemble is compiled into the graph: evaluate what serves */
    if (R->m->trees && (st = trn_model_rebuild_graph(R->m, err)))
        return st;
    if (R->c->n_eval_files > 0) {
        trn_logf(R->c, "Starting evaluation at global step %lld", (long long)R->m->step);
        int span = rt_otlp_begin(R->trace, "evaluate", R->trace_root);
        rt_otlp_attr(R->trace, span, "predictd.global_step", (long long)R->m->step);
        st = trn_evaluate(R->m, R->c, &ml, err);
        rt_otlp_end(R->trace, span, st != RT_OK);
        if (st)
            return st;
        R->last_ml = ml;
        R->last_ml_step = R->m->step;
        if (!trn_is_chief(R->c)) /* rank 0 alone reports and exports */
            return RT_OK;
        if ((st = report_eval(R, &ml, R->m->step, err)))
            return st;
        if (out)
            *out = ml;
    } else {
        memset(&ml, 0, sizeof ml);
        if (out)
            memset(out, 0, sizeof *out);
    }
    if (!trn_is_chief(R->c))
        return RT_OK;
    int span = rt_otlp_begin(R->trace, "export", R->trace_root);
    rt_otlp_attr(R->trace, span, "predictd.global_step", (long long)R->m->step);
    st = trn_run_exporters(R, &ml, final, err);
    rt_otlp_end(R->trace, span, st != RT_OK);
    return st;
}
