/*
 * trn_gbdt_run.c — a BoostedTrees run: the training set loaded once, then
 * one tree a step, with the checkpoints, evaluations, hooks and stop
 * signals of the other estimators' loop.
 */
#include "trn_run_internal.h"

#include <signal.h>
#include <stdlib.h>
#include <time.h>

/* The global step a BoostedTrees run ends at: n_trees, or train.max_steps
 * (--train-steps) when it is given and smaller (a step is a tree). */
int64_t trn_trees_target(const trn_config *c)
{
    return c->max_steps > 0 && c->max_steps < c->gbdt.n_trees ? c->max_steps : c->gbdt.n_trees;
}

/* A BoostedTrees summary point at the model's step: the training set's loss
 * (the rows of rank 0 under MPI) and TF's ensemble/num_trees,
 * ensemble/num_finalized_trees (every tree is grown whole in its step) and
 * ensemble/num_attempted_layers; examples: rows x trees grown this run. */
static rt_status tree_summary(trn_run *R, const tg_booster *bo, uint64_t examples, rt_err *err)
{
    static const char *const tags[] = {"ensemble/num_trees", "ensemble/num_finalized_trees",
                                       "ensemble/num_attempted_layers"};
    const Predictd__TreeEnsemble *e = R->m->trees;
    int64_t layers = trn_gbdt_attempted_layers(e, R->c->gbdt.max_depth);
    if (layers < 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    double v[3] = {(double)e->n_trees, (double)e->n_trees, (double)layers};
    return trn_summary_scalars(R->sum, R->m->step, trn_gbdt_train_loss(bo), examples, tags, v,
                               3, err);
}

/*
 * BoostedTrees: the training set is read and binned once (trn_gbdt_load),
 * then one tree is a step: global_step counts the trees. Checkpoints (the
 * ensemble so far) every save_checkpoints_steps trees or
 * save_checkpoints_secs, evaluation after a checkpoint once throttle_secs
 * passed, SIGINT/SIGTERM after the current tree with a checkpoint, the
 * early-stopping hooks after each tree but the last, as the other
 * estimators. *sig receives the signal that stopped the run, 0 else.
 */
rt_status trn_train_trees(trn_run *R, trn_dist *dist, int *sig, rt_err *err)
{
    const trn_config *c = R->c;
    trn_model *m = R->m;
    tg_data *d = NULL;
    float *labels = NULL;
    tg_booster *bo = NULL;
    rt_stops stops; /* SIGINT/SIGTERM blocked while training */
    int masked = 0;
    rt_status st;
    *sig = 0;
    if (c->stop_signal) {
        rt_signal_stops_block(&stops, 0);
        masked = 1;
    }
    double t0 = trn_now_s();
    if ((st = trn_gbdt_load(m->g, R->def->graph->trees, c, dist, R->stats, &d, &labels, err)))
        goto out;
    double nall = (double)d->n_rows;
    if ((st = trn_dist_sum(dist, &nall, 1, err)))
        goto out;
    if (nall == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "train.files: no usable rows to grow trees from");
        goto out;
    }
    trn_logf(c, "BoostedTrees: %.0f examples, %zu inputs binned in %.2fs", nall, d->n_inputs,
          trn_now_s() - t0);
    if ((st = trn_gbdt_new(d, labels, R->def->head->type, m->ld, &c->gbdt, dist,
                           R->def->graph->trees, &bo, err)))
        goto out;
    int64_t start = m->step, last_ckpt_step = m->step;
    int64_t last = trn_trees_target(c);
    int64_t every = last >= 10 ? last / 10 : 1;
    double last_ckpt = trn_now_s(), last_eval = trn_now_s(), t1 = trn_now_s();
    double cpu1 = trn_cpu_s(CLOCK_THREAD_CPUTIME_ID);
    while (m->step < last) {
        trn_dist_at_step(dist, m->step);
        if ((st = trn_gbdt_step(bo, err))) {
            rt_err_prefix(err, "tree %lld", (long long)m->step);
            goto out;
        }
        m->step++;
        /* rank 0's clocks and any rank's stop signal decide for all */
        trn_votes v;
        trn_votes_cast(R, masked, 1, last_ckpt, last_eval, &v);
        if ((st = trn_votes_sum(dist, &v, err)))
            goto out;
        if (m->step % every == 0 || m->step == last)
            trn_logf(c, "tree %lld of %lld: loss = %.6g (training set), %.2fs", (long long)m->step,
                  (long long)last, trn_gbdt_train_loss(bo), trn_now_s() - t1);
        if (R->sum && c->save_summary_steps > 0 &&
            (m->step % c->save_summary_steps == 0 || m->step == last) &&
            (st = tree_summary(R, bo, (uint64_t)(nall * (double)(m->step - start)), err)))
            goto out;
        if (v.stop) {
            *sig = masked ? rt_signal_stops_take() : 0;
            if (!*sig)
                *sig = SIGTERM; /* another rank's */
            break;
        }
        int due = c->job_dir && ((c->save_checkpoints_steps > 0 &&
                                  m->step - last_ckpt_step >= c->save_checkpoints_steps) ||
                                 v.ckpt_due);
        if (due && m->step < last) {
            if ((st = trn_run_checkpoint(R, dist, 0, err)))
                goto out;
            trn_logf(c, "Saving checkpoints for %lld into %s/model.ckpt-%lld", (long long)m->step,
                  c->job_dir, (long long)m->step);
            last_ckpt = trn_now_s();
            last_ckpt_step = m->step;
            if (v.eval_due) {
                if ((st = trn_evaluate_and_export(R, 0, NULL, err)))
                    goto out;
                last_eval = trn_now_s();
            }
        }
        /* the hooks as in the other loop: after the tree's checkpoint and
         * evaluation; the tree that reached the stop step is kept */
        if (R->es && m->step < last &&
            (st = trn_run_early_stop(R, dist, m->step, v.hooks_due, err)))
            goto out;
        if (R->stopped_early)
            break;
    }
    double el = trn_now_s() - t1, cpu = trn_cpu_s(CLOCK_THREAD_CPUTIME_ID) - cpu1;
    trn_logf(c, "grew %lld trees from %.0f examples in %.2fs, cpu %.2fs (%.0f examples/s per "
          "tree and cpu second)", (long long)(m->step - start), nall, el, cpu,
          cpu > 0 ? nall * (double)(m->step - start) / cpu : 0.0);
    if (c->job_dir && last_ckpt_step != m->step) {
        if ((st = trn_run_checkpoint(R, dist, 1, err)))
            goto out;
        trn_logf(c, "Saving checkpoints for %lld into %s/model.ckpt-%lld", (long long)m->step,
              c->job_dir, (long long)m->step);
    }
    if (masked && !*sig)
        *sig = rt_signal_stops_take();
out:
    if (masked)
        rt_signal_stops_restore(&stops);
    trn_gbdt_free(bo);
    trn_gbdt_data_free(d);
    free(labels);
    return st;
}
