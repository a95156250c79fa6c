/*
 * trn_loop.c — the step loop of the estimators trained by gradient steps:
 * batches from the training input (restarted at the end of a pass while
 * max_steps is not reached, replayed up to the restored step on resume), an
 * update a batch (under MPI the gradients and the step's votes summed over
 * the ranks), then the summaries, progress, checkpoints, throttled
 * evaluations and early-stopping hooks the step makes due; the run's
 * summary lines and its last checkpoint at the end.
 */
#include "trn_run_internal.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The loop's state: its input, its buffers, its clocks and counters. */
typedef struct loop {
    trn_run *R;
    const trn_config *c;
    trn_dist *dist;
    int nr;               /* ranks (1 without MPI) */
    int by_rows;          /* AUTO under MPI: each rank reads its files or rows */
    trn_feeder *fd;
    trn_reader *rd;
    trn_cache *cache;
    rt_batch *b;
    trn_targets tg;
    trn_input in;
    trn_progress pg;
    double cpu0, tcpu0;   /* CPU seconds (process, thread) when the loop started */
    double last_ckpt, last_eval; /* when the last checkpoint, evaluation was made */
    int64_t last_ckpt_step;
    int64_t in_pass;      /* steps in this pass over the input */
    int64_t epochs;       /* epochs of the passes before the restarts */
    uint64_t bad_before, bad_distinct; /* the readers' before the restarts */
    uint64_t examples, bad_labels;
    int local_end;        /* this rank's input has ended (this pass) */
    int restarted;        /* the input restarted at least once */
    int masked;           /* SIGINT/SIGTERM blocked (stops gives them back) */
    rt_stops stops;
} loop;

/* Opens L's input for R (replayed to R's step on resume), its buffers and
 * its progress; blocks the stop signals before the reader threads start. */
static rt_status loop_open(loop *L, trn_run *R, rt_err *err)
{
    const trn_config *c = R->c;
    trn_dist *dist = R->dist;
    rt_status st;
    memset(L, 0, sizeof *L);
    L->R = R;
    L->c = c;
    L->dist = dist;
    /* AUTO: this rank reads its files or rows, batches of its share of
     * batch_size; BATCH (or one process): the whole stream, global
     * batches, of which this rank takes its slice */
    int nr = trn_dist_size(dist), rank = trn_dist_rank(dist);
    int by_rows = dist && c->shard_policy == TRN_SHARD_AUTO;
    L->nr = nr;
    L->by_rows = by_rows;
    size_t local_bs = c->batch_size;
    if (by_rows) {
        if (c->batch_size < (size_t)nr)
            return rt_err_set(err, RT_ERR_INVALID, "train.batch_size: %zu is smaller than "
                              "the number of ranks (%d)", c->batch_size, nr);
        local_bs = c->batch_size / (size_t)nr + ((size_t)rank < c->batch_size % (size_t)nr);
    }
    if (c->stop_signal) {
        /* blocked before the reader threads start, so they inherit it: a
         * signal stays pending until the loop looks, after a step */
        rt_signal_stops_block(&L->stops, 0);
        L->masked = 1;
    }
    if ((st = trn_feeder_new(R->m->g, &L->fd, err)))
        return st;
    /* rows kept across epochs: a quarter of the memory the model leaves, for
     * the reader's rows and as much for their features, at most 512 MiB each */
    uint64_t spare = trn_memory_spare(R->def, c) / 4;
    trn_input in = {L->fd, c->train_files, c->n_train_files, local_bs, by_rows ? (size_t)nr : 0,
                    (size_t)rank, c, NULL, spare < (UINT64_C(512) << 20) ? spare
                                                                         : UINT64_C(512) << 20,
                    NULL};
    L->in = in;
    L->in.stats = R->stats;
    if (R->stats)
        R->stats->merge = by_rows;
    if (!(L->cache = trn_cache_new(R->m->g, L->in.cache_bytes)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    L->in.cache = L->cache;
    if ((st = trn_input_open(&L->in, &L->rd, err)))
        return st;
    int64_t pass = 0; /* batches in one pass of num_epochs epochs, once known */
    if (R->m->step > 0) {
        if ((st = trn_input_replay(&L->in, &L->rd, R->m->step, &pass, err)))
            return st;
        trn_logf(c, "Input position restored: global step %lld is batch %lld of a pass "
                 "over the input%s", (long long)R->m->step,
                 (long long)(pass ? R->m->step % pass : R->m->step),
                 pass ? " (the input restarted: the steps trained so far went past "
                        "num_epochs)" : "");
    }
    if (c->job_dir && trn_is_chief(c) &&
        (st = trn_summary_open(c->job_dir, R->m->step, &R->sum, err)))
        return st;
    L->b = rt_batch_new(R->m->g);
    if (!L->b || trn_targets_alloc(&L->tg, L->fd, c->batch_size))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    trn_progress *pg = &L->pg;
    pg->mode = c->progress;
    if (pg->mode == TRN_PROGRESS_AUTO)
        pg->mode = isatty(2) ? TRN_PROGRESS_BAR : TRN_PROGRESS_LINES;
    if (!trn_is_chief(c))
        pg->mode = TRN_PROGRESS_QUIET;
    pg->t0 = pg->last = trn_now_s();
    L->cpu0 = trn_cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    L->tcpu0 = trn_cpu_s(CLOCK_THREAD_CPUTIME_ID);
    pg->step0 = R->m->step;
    pg->efrac0 = trn_epoch_fraction(L->rd, c->num_epochs);
    pg->batch = c->batch_size;
    pg->last_loss = NAN;
    L->last_ckpt = trn_now_s();
    L->last_eval = trn_now_s();
    L->last_ckpt_step = R->m->step;
    return RT_OK;
}

/* Frees what loop_open made and gives the stop signals back (after the
 * checkpoint in flight when the loop failed). */
static void loop_close(loop *L, rt_status st)
{
    if (L->masked) {
        if (st)
            (void)trn_ckpt_wait(L->R->ckw, NULL);
        rt_signal_stops_restore(&L->stops);
        L->masked = 0;
    }
    trn_targets_free(&L->tg);
    rt_batch_free(L->b);
    trn_reader_close(L->rd);
    trn_cache_free(L->cache);
    trn_feeder_free(L->fd);
}

/* The next batch of this rank (*n_local rows, 0 once its input has ended):
 * the step's features (made in the model's buffers) and targets. */
static rt_status read_batch(loop *L, size_t *n_local, rt_err *err)
{
    const trn_rows *rows;
    *n_local = 0;
    if (L->local_end)
        return RT_OK;
    rt_status st = trn_input_next(&L->in, L->rd, &rows, err);
    if (st == RT_ERR_NOTFOUND) {
        L->local_end = 1;
        return RT_OK;
    }
    if (st)
        return st;
    trn_rows part = *rows;
    if (L->dist && !L->by_rows) {
        size_t lo, hi;
        trn_dist_slice(L->dist, rows->n, &lo, &hi);
        part = trn_rows_slice(rows, lo, hi);
    }
    /* the features of the step (b NULL below); a row refused is a data
     * error, as trn_feed_targets says */
    st = trn_cache_fill(L->cache, L->fd, &part, L->b, trn_model_features(L->R->m),
                        L->tg.labels, L->tg.weights, L->c->bad_rows, &L->bad_labels, n_local,
                        err);
    return st == RT_ERR_INVALID ? RT_ERR_FORMAT : st;
}

/*
 * One update from this rank's n_local rows: alone, or under MPI with the
 * gradients and the votes v summed over the ranks. *ended: every rank's
 * input has ended (no update); *n_global: the rows of every rank; *loss the
 * step's loss.
 */
static rt_status train_step(loop *L, trn_votes *v, size_t n_local, double *loss,
                            size_t *n_global, int *ended, rt_err *err)
{
    trn_model *m = L->R->m;
    rt_status st = RT_OK;
    *loss = 0;
    *n_global = n_local;
    *ended = 0;
    if (!L->dist) {
        *ended = L->local_end;
        if (!*ended && n_local > 0) /* features made by trn_cache_fill */
            st = trn_model_train_step(m, NULL, L->tg.labels, L->tg.weights, loss, err);
    } else {
        m->grad_denom = 1; /* sums: scaled once the global count is known */
        if (n_local)
            st = trn_model_gradients(m, NULL, L->tg.labels, L->tg.weights, loss, err);
        else
            trn_model_clear_grads(m);
        if (st == RT_OK)
            st = trn_votes_step(L->dist, m, loss, n_local, v, n_global, err);
        *ended = st == RT_OK && !v->reading; /* every rank's data has ended */
        if (st == RT_OK && !*ended && *n_global > 0)
            trn_model_apply(m);
    }
    if (st)
        rt_err_prefix(err, "step %lld", (long long)m->step);
    return st;
}

/* The end of a pass over the input (num_epochs epochs) with max_steps not
 * reached: the input restarts from the beginning, as estimator.train
 * (max_steps) calls input_fn again. */
static rt_status restart_input(loop *L, rt_err *err)
{
    const trn_config *c = L->c;
    trn_reader_stats rs;
    trn_reader_get_stats(L->rd, &rs);
    L->epochs += rs.epochs;
    L->bad_before += rs.bad_rows;
    L->bad_distinct = rs.bad_rows_distinct > L->bad_distinct ? rs.bad_rows_distinct
                                                             : L->bad_distinct;
    L->restarted = 1;
    trn_logf(c, "Input exhausted at global step %lld (%lld epochs); restarting it "
             "to reach max_steps %lld", (long long)L->R->m->step,
             (long long)c->num_epochs, (long long)c->max_steps);
    rt_status st = trn_input_open(&L->in, &L->rd, err);
    if (st)
        return st;
    L->local_end = 0;
    L->in_pass = 0;
    return RT_OK;
}

/* What a step that updated the model makes due: the summary, the progress
 * line, a checkpoint (and after it a throttled evaluation), the hooks. */
static rt_status after_step(loop *L, size_t n_local, double loss, const trn_votes *v,
                            rt_err *err)
{
    trn_run *R = L->R;
    const trn_config *c = L->c;
    int64_t step = R->m->step;
    rt_status st;
    if (R->sum && c->save_summary_steps > 0 && step % c->save_summary_steps == 0 &&
        (st = trn_summary_train(R->sum, R->m, n_local, loss, L->examples, err)))
        return st;
    if (step % c->log_step_count_steps == 0 || L->pg.mode == TRN_PROGRESS_BAR)
        trn_progress_show(&L->pg, step, c->max_steps, trn_epoch_fraction(L->rd, c->num_epochs),
                          0);
    int ckpt_due = c->job_dir && ((c->save_checkpoints_steps > 0 &&
                                   step - L->last_ckpt_step >= c->save_checkpoints_steps) ||
                                  v->ckpt_due);
    if (ckpt_due) {
        if ((st = trn_run_checkpoint(R, L->dist, 0, err)))
            return st;
        if (L->pg.mode != TRN_PROGRESS_BAR && L->pg.mode != TRN_PROGRESS_QUIET)
            trn_logf(c, "Saving checkpoints for %lld into %s/model.ckpt-%lld",
                     (long long)step, c->job_dir, (long long)step);
        L->last_ckpt = trn_now_s();
        L->last_ckpt_step = step;
        if (v->eval_due && (c->max_steps == 0 || step < c->max_steps)) {
            if ((st = trn_evaluate_and_export(R, 0, NULL, err)))
                return st;
            L->last_eval = trn_now_s();
        }
    }
    if (R->es && (st = trn_run_early_stop(R, L->dist, step, v->hooks_due, err)))
        return st;
    return RT_OK;
}

/* Steps until max_steps, the end of the input, a hook or a stop signal
 * (*sig receives it). */
static rt_status run_steps(loop *L, int *sig, rt_err *err)
{
    trn_run *R = L->R;
    const trn_config *c = L->c;
    rt_status st;
    while (c->max_steps == 0 || R->m->step < c->max_steps) {
        size_t n_local, n_global;
        if ((st = read_batch(L, &n_local, err)))
            return st;
        trn_votes v;
        trn_votes_cast(R, L->masked, !L->local_end, L->last_ckpt, L->last_eval, &v);
        double loss;
        int ended;
        if ((st = train_step(L, &v, n_local, &loss, &n_global, &ended, err)))
            return st;
        if (v.stop) { /* after this step (if it was one): checkpoint and stop */
            *sig = L->masked ? rt_signal_stops_take() : 0;
            if (!*sig)
                *sig = SIGTERM; /* another rank's */
            if (!ended && n_global > 0)
                L->examples += n_global;
            return RT_OK;
        }
        if (ended) {
            if (c->max_steps == 0 || (L->in_pass == 0 && L->restarted))
                return RT_OK; /* no max_steps, or a whole pass without a step */
            if ((st = restart_input(L, err)))
                return st;
            continue;
        }
        if (n_global == 0) /* every row skipped: not a step */
            continue;
        L->in_pass++;
        L->examples += n_global;
        L->pg.loss_sum += loss;
        L->pg.loss_n++;
        if ((st = after_step(L, n_local, loss, &v, err)))
            return st;
        if (R->stopped_early)
            return RT_OK;
    }
    return RT_OK;
}

/* The lines at the end of a run that trained (or was stopped): steps,
 * examples and time, the ranks' communication, the rows skipped. */
static rt_status report_steps(loop *L, rt_err *err)
{
    trn_run *R = L->R;
    const trn_config *c = L->c;
    trn_dist *dist = L->dist;
    trn_progress_show(&L->pg, R->m->step, c->max_steps, trn_epoch_fraction(L->rd, c->num_epochs),
                      1);
    double el = trn_now_s() - L->pg.t0;
    double cpu = trn_cpu_s(CLOCK_PROCESS_CPUTIME_ID) - L->cpu0;
    double tcpu = trn_cpu_s(CLOCK_THREAD_CPUTIME_ID) - L->tcpu0;
    trn_reader_stats rs;
    trn_reader_get_stats(L->rd, &rs);
    trn_logf(c, "trained %lld steps, %llu examples in %.2fs (%.0f examples/s), %lld "
             "epochs; CPU %.2fs (%.0f examples per CPU-second; training thread %.2fs, "
             "other threads %.2fs)", (long long)(R->m->step - L->pg.step0),
             (unsigned long long)L->examples, el,
             el > 0 ? (double)L->examples / el : 0.0, (long long)(L->epochs + rs.epochs), cpu,
             cpu > 0 ? (double)L->examples / cpu : 0.0, tcpu, cpu - tcpu);
    if (dist) {
        trn_dist_timing tm;
        trn_dist_stats(dist, &tm);
        double k = tm.steps ? 1e6 / (double)tm.steps : 0.0;
        double stp = (tm.compute_s + tm.wait_s + tm.exchange_s) * k;
        trn_logf(c, "distributed: %d ranks, communication %.3fs (%.1f us per step, %.0f%% "
                 "of the time; includes waiting for the slowest rank)", L->nr, tm.comm_s,
                 tm.rounds ? tm.comm_s * 1e6 / (double)tm.rounds : 0.0,
                 el > 0 ? 100.0 * tm.comm_s / el : 0.0);
        trn_logf(c, "distributed: a step %.1f us = compute %.1f us (slowest rank %.1f us) "
                 "+ waiting for the slowest rank %.1f us + exchange %.1f us", stp,
                 tm.compute_s * k, tm.slowest_s * k, tm.wait_s * k, tm.exchange_s * k);
    }
    /* every epoch skips the same rows again: the distinct rows, and how
     * many times over how many epochs (all ranks') */
    uint64_t bad_distinct = rs.bad_rows_distinct > L->bad_distinct ? rs.bad_rows_distinct
                                                                   : L->bad_distinct;
    double skips[4] = {(double)(L->bad_before + rs.bad_rows), (double)L->bad_labels,
                       (double)bad_distinct, (double)trn_cache_distinct_skips(L->cache)};
    rt_status st = trn_dist_sum(dist, skips, 4, err);
    if (st)
        return st;
    int64_t ep = L->epochs + rs.epochs + (rs.bytes > 0);
    char first[RT_ERR_MAX + 64];
    snprintf(first, sizeof first, "first%s: %s", dist ? " of rank 0's" : "",
             rs.first_bad[0] ? rs.first_bad : "none, all on other ranks");
    if (skips[0] > 0)
        trn_skip_report(c, (uint64_t)skips[2], (uint64_t)skips[0], ep, "malformed row", "",
                        first);
    if (skips[1] > 0)
        trn_skip_report(c, (uint64_t)skips[3], (uint64_t)skips[1], ep, "row",
                        " with an unknown label", NULL);
    return RT_OK;
}

rt_status trn_train_steps(trn_run *R, int *sig, rt_err *err)
{
    const trn_config *c = R->c;
    loop L;
    *sig = 0;
    rt_status st = loop_open(&L, R, err);
    if (st == RT_OK)
        st = run_steps(&L, sig, err);
    if (st)
        goto out;
    if (R->m->step > R->start_step || *sig) {
        if ((st = report_steps(&L, err)))
            goto out;
    } else if (R->m->step > 0) {
        R->state = TRN_RUN_TRAINED_BEFORE;
        trn_logf(c, "Skipping training: the input (num_epochs %lld) was trained through at "
                 "global step %lld; give --train-steps above it to train on",
                 (long long)c->num_epochs, (long long)R->m->step);
    } else {
        trn_logf(c, "the training files hold no usable rows: nothing trained");
    }
    if (c->job_dir && L.last_ckpt_step != R->m->step) {
        if ((st = trn_run_checkpoint(R, R->dist, 1, err)))
            goto out;
        trn_logf(c, "Saving checkpoints for %lld into %s/model.ckpt-%lld", (long long)R->m->step,
                 c->job_dir, (long long)R->m->step);
    }
    /* the loop's last checkpoint may still be on its way to the disk */
    if ((st = trn_ckpt_wait(R->ckw, err)))
        goto out;
    if (L.masked) {
        if (!*sig)
            *sig = rt_signal_stops_take(); /* came during the last checkpoint */
        rt_signal_stops_restore(&L.stops);
        L.masked = 0;
    }
out:
    loop_close(&L, st);
    return st;
}
