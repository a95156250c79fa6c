/*
 * trn_after_step.c — what the ranks of a run do together after a step
 * (the step loop's and the BoostedTrees run's alike): their votes, summed
 * with the gradients or on their own; a checkpoint; the early-stopping
 * hooks; the stop signals, blocked while training and looked for after
 * each step, and the end of a run one of them stopped.
 */
#include "trn_run_internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

/* Checks that every replica holds the same parameters, then rank 0 writes
 * the checkpoint (collective under MPI). */
/* The loop's checkpoints are written in the background (the copy of the
 * state is made here); wait: return once this one is on disk. */
rt_status trn_run_checkpoint(trn_run *R, trn_dist *dist, int wait, rt_err *err)
{
    rt_status st = trn_dist_check_replicas(dist, R->m, err);
    if (st == RT_OK && trn_is_chief(R->c)) {
        if (!R->ckw && !(R->ckw = trn_ckpt_writer_new()))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        st = trn_ckpt_save_async(R->ckw, R->m, R->c->job_dir, R->c->keep_checkpoint_max, err);
        if (st == RT_OK && wait)
            st = trn_ckpt_wait(R->ckw, err);
    }
    return st;
}

/* Runs the early-stopping hooks due after the update that reached step (on
 * rank 0, which holds the evaluations; its answer goes to every rank) and,
 * when one asks to stop, logs and records it and sets R->stopped_early. */
rt_status trn_run_early_stop(trn_run *R, trn_dist *dist, int64_t step, int secs_due, rt_err *err)
{
    char reason[512] = "";
    int r = trn_early_stop_check(R->es, step, secs_due, trn_now_s(), reason, sizeof reason);
    if (r < 0)
        return RT_OK;
    double stop = trn_is_chief(R->c) && r > 0;
    rt_status st = trn_dist_sum(dist, &stop, 1, err);
    if (st || stop == 0)
        return st;
    R->stopped_early = 1;
    if (!trn_is_chief(R->c))
        return RT_OK;
    trn_logf(R->c, "Requesting early stopping at global step %lld: %s", (long long)step, reason);
    return trn_early_stop_report(R->es, step, reason, err);
}

/* A run stopped by signal sig after its checkpoint: the other ranks end once
 * rank 0's checkpoint is on disk (under mpirun the first rank to exit
 * non-zero ends the job); the message, and sig for predict-train's exit
 * status. */
rt_status trn_run_interrupted(const trn_run *R, trn_dist *dist, int sig, rt_err *err)
{
    const trn_config *c = R->c;
    double one = 1;
    rt_status st = trn_ckpt_wait(R->ckw, err); /* "saved": on disk, a background one too */
    if (st == RT_OK)
        st = trn_dist_sum(dist, &one, 1, err);
    if (st)
        return st;
    if (c->job_dir && trn_is_chief(c))
        fprintf(stderr, "interrupted at step %lld, checkpoint saved; re-run to resume\n",
                (long long)R->m->step);
    else if (trn_is_chief(c))
        fprintf(stderr, "interrupted at step %lld (no job dir: nothing saved)\n",
                (long long)R->m->step);
    if (c->stop_signal)
        *c->stop_signal = sig;
    return RT_OK;
}

/* ------------------------------------------------------------- the votes */

void trn_votes_cast(const trn_run *R, int masked, int reading, double last_ckpt,
                    double last_eval, trn_votes *v)
{
    const trn_config *c = R->c;
    v->reading = reading;
    v->ckpt_due = trn_is_chief(c) && c->save_checkpoints_secs > 0 &&
                  trn_now_s() - last_ckpt >= c->save_checkpoints_secs;
    v->eval_due = trn_is_chief(c) && trn_now_s() - last_eval >= c->throttle_secs;
    v->stop = masked && rt_signal_stops_pending();
    v->hooks_due = trn_is_chief(c) && trn_early_stop_secs_due(R->es, trn_now_s());
}

/* The votes in the order the ranks sum them: trn_votes_step sums all five,
 * trn_votes_sum all but `reading`. */
#define N_VOTES 5
static void vote_fields(trn_votes *v, int *field[N_VOTES])
{
    field[0] = &v->reading;
    field[1] = &v->ckpt_due;
    field[2] = &v->eval_due;
    field[3] = &v->stop;
    field[4] = &v->hooks_due;
}

rt_status trn_votes_sum(trn_dist *dist, trn_votes *v, rt_err *err)
{
    int *field[N_VOTES];
    vote_fields(v, field);
    double d[N_VOTES - 1];
    for (size_t k = 1; k < N_VOTES; k++)
        d[k - 1] = *field[k];
    rt_status st = trn_dist_sum(dist, d, N_VOTES - 1, err);
    for (size_t k = 1; !st && k < N_VOTES; k++)
        *field[k] = d[k - 1] > 0;
    return st;
}

rt_status trn_votes_step(trn_dist *dist, trn_model *m, double *loss, size_t n_local,
                         trn_votes *v, size_t *n_global, rt_err *err)
{
    int *field[N_VOTES];
    vote_fields(v, field);
    float f[N_VOTES];
    for (size_t k = 0; k < N_VOTES; k++)
        f[k] = (float)*field[k];
    rt_status st = trn_dist_step(dist, m, loss, n_local, f, N_VOTES, n_global, err);
    for (size_t k = 0; !st && k < N_VOTES; k++)
        *field[k] = f[k] > 0;
    return st;
}
