/*
 * trn_run.c — train_and_evaluate as a run object: open (the ModelDef, the
 * resolved config, the input files checked, the job dir locked, the model,
 * the ranks), restore (the newest good checkpoint, damaged ones set aside,
 * or a warm start), plan (what is left to train: the run's state), train
 * (the step loop, trn_loop.c, or the trees, trn_gbdt_run.c), finish (the
 * final evaluation and exports) and close.
 */
#include "trn_run_internal.h"

#include <cblas.h>
#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* OpenBLAS's pthread build starts a pool of worker threads when it loads;
 * an idle worker spins (sched_yield) for about 2^28 cycles before it
 * sleeps: ~0.1 s of the other core in every trainer process, which computes
 * on one thread. So after choosing one thread the pool is stopped with
 * blas_thread_shutdown_, what OpenBLAS's own fork handler calls (a weak
 * reference: absent from other BLAS builds, then nothing happens). */
extern int blas_thread_shutdown_(void) __attribute__((weak));

static void blas_one_thread(void)
{
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_)
        blas_thread_shutdown_();
}

/*
 * The newest checkpoints were damaged and an older one, of step `step`, was
 * restored (warn: a line "PATH: why" per damaged file): the steps after it
 * are lost and trained again. Says so in one ERROR line and in
 * JOB_DIR/train/metrics.jsonl, and renames each damaged file to
 * model.ckpt-N.damaged, out of the checkpoints' names, so neither the
 * retention of keep_checkpoint_max nor the new checkpoint of step N removes
 * it.
 */
static rt_status damaged_fallback(const trn_config *c, int64_t step, const rt_buf *warn,
                                  rt_err *err)
{
    int64_t *steps = NULL;
    size_t n = 0;
    rt_status st = trn_ckpt_list(c->job_dir, &steps, &n, err);
    if (st)
        return st;
    rt_buf why, kept, line;
    rt_buf_init(&why);
    rt_buf_init(&kept);
    rt_buf_init(&line);
    for (size_t i = 0; i < warn->len;) { /* the reasons, one line */
        size_t e = i;
        while (e < warn->len && warn->data[e] != '\n')
            e++;
        rt_buf_printf(&why, "%s%.*s", why.len ? "; " : "", (int)(e - i), warn->data + i);
        i = e + 1;
    }
    int64_t lost_to = step;
    for (size_t i = 0; i < n; i++) {
        if (steps[i] <= step)
            continue;
        lost_to = steps[i] > lost_to ? steps[i] : lost_to;
        char from[4200], to[4300];
        snprintf(from, sizeof from, "%s/model.ckpt-%lld", c->job_dir, (long long)steps[i]);
        for (int k = 0; k < 100; k++) { /* never over an earlier .damaged file */
            if (k)
                snprintf(to, sizeof to, "%s.damaged.%d", from, k);
            else
                snprintf(to, sizeof to, "%s.damaged", from);
            if (access(to, F_OK) != 0)
                break;
        }
        if (rename(from, to) != 0) {
            st = rt_err_set(err, RT_ERR_IO, "cannot set the damaged checkpoint %s aside: %s",
                            from, strerror(errno));
            goto out;
        }
        const char *base = strrchr(to, '/');
        rt_buf_printf(&kept, "%s%s", kept.len ? ", " : "", base ? base + 1 : to);
    }
    if (c->log_level <= 3)
        fprintf(stderr, "ERROR: global steps %lld to %lld are lost: damaged checkpoint (%s); "
                "restored model.ckpt-%lld and training them again (the damaged file is kept "
                "as %s)\n", (long long)step + 1, (long long)lost_to, why.data ? why.data : "",
                (long long)step, kept.data ? kept.data : "");
    rt_buf_printf(&line, "{\"global_step\": %lld, \"lost_steps\": [%lld, %lld], "
                  "\"damaged_checkpoints\": \"", (long long)step, (long long)step + 1,
                  (long long)lost_to);
    for (const char *p = kept.data ? kept.data : ""; *p; p++) /* file names: no quotes */
        rt_buf_printf(&line, "%c", *p == '"' || *p == '\\' || (unsigned char)*p < 0x20 ? '?' : *p);
    rt_buf_printf(&line, "\", \"wall_time\": ");
    rt_buf_json_double(&line, rt_time_seconds(1));
    rt_buf_puts(&line, "}\n");
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/train", c->job_dir);
    st = trn_append_file(dir, "metrics.jsonl", line.data, line.len, 1,
                         "cannot record the lost steps", err);
out:
    rt_buf_free(&why);
    rt_buf_free(&kept);
    rt_buf_free(&line);
    free(steps);
    return st;
}

/* --------------------------------------------------------------- the run */

/*
 * Opens the run R of spec with a copy of cfg: the ModelDef, the resolved
 * config, every input file checked, the job dir locked, the hooks, the
 * model (initial parameters) and the ranks. R is closed by run_close in
 * any case.
 */
static rt_status run_open(trn_run *R, const cJSON *spec, const trn_config *cfg, rt_err *err)
{
    static const char *const mine[] = {"train", "eval", NULL};
    memset(R, 0, sizeof *R);
    R->cfg = *cfg; /* shallow: strings stay cfg's */
    R->lock = -1;
    trn_config *c = &R->cfg;
    rt_status st;
    if (c->stop_signal)
        *c->stop_signal = 0;
    blas_one_thread();
    if ((st = rt_spec_to_modeldef(spec, mine, &R->def, err)))
        return st;
    if ((st = trn_config_resolve(c, R->def, err)))
        return st;
    /* every input file opens before anything is trained (a wrong eval path
     * is not found only after training); a path that names nothing is a
     * bad argument (exit 2), one that cannot be opened an I/O error */
    for (int k = 0; k < 2; k++) {
        char *const *files = k ? c->eval_files : c->train_files;
        size_t n = k ? c->n_eval_files : c->n_train_files;
        if (n && (st = trn_files_check((const char *const *)files, n, err))) {
            rt_err_prefix(err, "%s",
                          k ? "eval.files (--eval-files)" : "train.files (--train-files)");
            return st == RT_ERR_NOTFOUND ? RT_ERR_INVALID : st;
        }
    }
    if (c->job_dir && trn_is_chief(c) &&
        ((st = trn_job_dir_check(c->job_dir, err)) ||
         (st = trn_job_dir_lock(c->job_dir, &R->lock, err))))
        return st;
    R->spec = spec;
    R->c = c;
    R->last_ml_step = -1;
    if (R->def->graph->trees && c->warm.from)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "train.warm_start_from: warm starting is "
                          "not implemented for %s", R->def->graph->estimator);
    if ((st = trn_early_stop_new(c, &R->es, err)))
        return st;
    R->spec_json = cJSON_PrintUnformatted(spec);
    if ((st = trn_model_new(R->def, c, c->seed, &R->m, err)))
        return st;
    R->m->trees = R->def->graph->trees; /* BoostedTrees: checkpointed with the model */
    if (!(R->stats = trn_stats_new(R->def)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if ((st = trn_dist_new(c->comm, &R->dist, err)))
        return st;
    R->m->dist = R->dist;
    if (R->dist && R->m->batch_norm)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "estimator.batch_norm: not supported under "
                          "mpirun (each rank's batch statistics would move its own moving "
                          "mean and variance, and the replicas would differ); train it in one "
                          "process");
    for (size_t k = 0; R->dist && k < R->m->n_nodes; k++)
        if (R->m->np[k].l1 > 0 || R->m->np[k].l2 > 0) /* its gradient is not a sum of the
                                                           ranks' (trn_graph.c) */
            return rt_err_set(err, RT_ERR_UNSUPPORTED,
                              "estimator.model: node %s: l1 / l2 are not supported under mpirun "
                              "yet; train it in one process",
                              R->def->graph->nodes[k]->name);
    if (R->dist && trn_dist_rank(R->dist) > 0) /* dropout masks differ by rank */
        trn_rng_seed(&R->m->drop_rng,
                     c->seed ^ 0xd0d0d0d0ULL ^
                         ((uint64_t)trn_dist_rank(R->dist) * 0x9e3779b97f4a7c15ULL));
    return RT_OK;
}

/*
 * Rank 0 restores the newest good checkpoint of the job dir (damaged newer
 * ones set aside) and the BestExporters' best values, or on a fresh start
 * warm-starts; then every replica takes rank 0's parameters.
 */
static rt_status run_restore(trn_run *R, rt_err *err)
{
    const trn_config *c = R->c;
    rt_status st;
    int restored = 0;
    if (c->job_dir && trn_is_chief(c)) {
        rt_buf warn;
        rt_buf_init(&warn);
        int64_t step = 0;
        st = trn_ckpt_restore(R->m, c->job_dir, &step, &warn, err);
        if (st == RT_OK && warn.len)
            st = damaged_fallback(c, step, &warn, err);
        rt_buf_free(&warn);
        if (st == RT_ERR_FORMAT && !strstr(err->msg, "changed?"))
            rt_err_prefix(err, "refusing to train from step 0 over damaged checkpoints "
                          "(TF's DataLossError; nothing was changed: restore a good copy, or "
                          "move them away to start again)");
        if (st == RT_OK)
            trn_logf(c, "Restoring parameters from %s/model.ckpt-%lld", c->job_dir,
                     (long long)step);
        else if (st != RT_ERR_NOTFOUND)
            return st;
        restored = st == RT_OK;
        trn_load_best(R);
    }
    if (!restored && c->warm.from && trn_is_chief(c)) { /* a fresh start only, as TF */
        rt_buf msg;
        rt_buf_init(&msg);
        st = trn_warm_start_apply(R->m, c, &msg, err);
        if (st == RT_OK && msg.len)
            trn_logf(c, "%s", msg.data);
        rt_buf_free(&msg);
        if (st)
            return st;
    }
    /* every replica starts from rank 0's parameters (restored or initial) */
    return trn_dist_bcast_model(R->dist, R->m, err);
}

/* Says what is trained and decides R->state: TRN_RUN_TO_TRAIN, or
 * TRN_RUN_TRAINED_BEFORE when the restored step already reached the end. */
static rt_status run_plan(trn_run *R, rt_err *err)
{
    const trn_config *c = R->c;
    if (R->m->trees)
        trn_logf(c, "%s: %lld trees of depth %lld, learning rate %g, l1 %g, l2 %g, "
                 "tree_complexity %g, pruning %s", R->def->graph->estimator,
                 (long long)c->gbdt.n_trees, (long long)c->gbdt.max_depth,
                 c->gbdt.learning_rate, c->gbdt.l1, c->gbdt.l2, c->gbdt.tree_complexity,
                 c->gbdt.pruning == TRN_PRUNE_PRE    ? "pre"
                 : c->gbdt.pruning == TRN_PRUNE_POST ? "post"
                                                     : "none");
    else
        trn_logf(c, "%s: %zu parameter tensors; linear optimizer %s lr %g, DNN optimizer %s "
                 "lr %g", R->def->graph->estimator, R->m->n_params,
                 trn_optim_name(c->linear_opt.type), c->linear_opt.learning_rate,
                 trn_optim_name(c->dnn_opt.type), c->dnn_opt.learning_rate);
    R->start_step = R->m->step;
    int done = c->max_steps > 0 && R->m->step >= c->max_steps;
    if (R->m->trees) {
        done = R->m->step >= trn_trees_target(c);
        if (done)
            trn_logf(c, "Skipping training: global step %lld has grown the %lld trees of %s "
                     "(a larger one grows on)", (long long)R->m->step,
                     (long long)trn_trees_target(c),
                     trn_trees_target(c) < c->gbdt.n_trees ? "train.max_steps"
                                                           : "estimator.n_trees");
    } else if (done)
        trn_logf(c, "Skipping training since max_steps has already saved: global step %lld "
                 "has reached max_steps %lld (a larger --train-steps trains on)",
                 (long long)R->m->step, (long long)c->max_steps);
    R->state = done ? TRN_RUN_TRAINED_BEFORE : TRN_RUN_TO_TRAIN;
    if (done)
        return RT_OK;
    if (c->n_train_files == 0)
        return rt_err_set(err, RT_ERR_INVALID, "train.files: no training files given "
                          "(--train-files)");
    if (!R->m->trees && c->max_steps == 0 && c->num_epochs == 0)
        return rt_err_set(err, RT_ERR_INVALID, "train: give max_steps (--train-steps) or "
                          "num_epochs (--num-epochs), or training never ends");
    return RT_OK;
}

/* Trains: trees (a tree a step) or the step loop. A stop signal ends the
 * run with its checkpoint (TRN_RUN_STOPPED), else it goes on to evaluate
 * (TRN_RUN_TRAINED, or TRN_RUN_TRAINED_BEFORE when the input had been
 * trained through). */
static rt_status run_train(trn_run *R, rt_err *err)
{
    const trn_config *c = R->c;
    int sig = 0;
    rt_status st;
    if (R->m->trees) {
        if (c->job_dir && trn_is_chief(c) &&
            (st = trn_summary_open(c->job_dir, R->m->step, &R->sum, err)))
            return st;
        st = trn_train_trees(R, R->dist, &sig, err);
    } else {
        st = trn_train_steps(R, &sig, err);
    }
    if (st)
        return st;
    if (sig) {
        R->state = TRN_RUN_STOPPED;
        return trn_run_interrupted(R, R->dist, sig, err);
    }
    if (R->state == TRN_RUN_TO_TRAIN)
        R->state = TRN_RUN_TRAINED;
    return RT_OK;
}

/* The final evaluation and exports. Nothing trained: as TF, no new
 * evaluation or export, unless the run that reached this step ended before
 * exporting it. */
static rt_status run_finish(trn_run *R, rt_metric_list *final, rt_err *err)
{
    const trn_config *c = R->c;
    rt_status st;
    if (R->state == TRN_RUN_TRAINED_BEFORE) {
        double have = trn_is_chief(c) && trn_exported_at(R, R->m->step);
        if ((st = trn_dist_sum(R->dist, &have, 1, err)))
            return st;
        if (have > 0) {
            trn_logf(c, "global step %lld is already exported: nothing to do",
                     (long long)R->m->step);
            return RT_OK;
        }
        if (!R->sum && c->job_dir && trn_is_chief(c) &&
            (st = trn_summary_open(c->job_dir, R->m->step, &R->sum, err)))
            return st;
    }
    return trn_evaluate_and_export(R, 1, final, err);
}

/* Frees R (after the checkpoint in flight, whose failure is the run's when
 * st is RT_OK) and unlocks the job dir; returns the run's status. */
static rt_status run_close(trn_run *R, rt_status st, rt_err *err)
{
    if (R->ckw) { /* a save in flight ends before the job dir is unlocked */
        rt_status cst = trn_ckpt_wait(R->ckw, st ? NULL : err);
        if (st == RT_OK)
            st = cst;
        trn_ckpt_writer_free(R->ckw);
    }
    trn_summary_close(R->sum);
    trn_early_stop_free(R->es);
    trn_model_free(R->m);
    trn_dist_free(R->dist);
    trn_stats_free(R->stats);
    rt_spec_modeldef_free(R->def);
    free(R->spec_json);
    trn_job_dir_unlock(R->lock);
    return st;
}

/* --trace-endpoint: the chief's tracer and the run's span. */
static rt_status trace_open(trn_run *R, rt_err *err)
{
    if (!R->c->trace_endpoint || !trn_is_chief(R->c))
        return RT_OK;
    rt_status st = rt_otlp_open(R->c->trace_endpoint, "predict-train", "--trace-endpoint",
                                &R->trace, err);
    R->trace_root = rt_otlp_begin(R->trace, "predict-train", -1);
    return st;
}

/* The run's span ended (with the steps it started and ended at) and every
 * span sent; a collector that does not take them costs a WARNING line, not
 * the run. */
static void trace_close(trn_run *R, rt_status st)
{
    if (!R->trace)
        return;
    rt_otlp_attr(R->trace, R->trace_root, "predictd.start_step", (long long)R->start_step);
    if (R->m)
        rt_otlp_attr(R->trace, R->trace_root, "predictd.global_step", (long long)R->m->step);
    rt_otlp_end(R->trace, R->trace_root, st != RT_OK);
    rt_err e = {{0}};
    if (rt_otlp_flush(R->trace, &e) != RT_OK)
        fprintf(stderr, "WARNING predict-train: %s\n", e.msg);
    rt_otlp_close(R->trace);
    R->trace = NULL;
}

rt_status trn_train_and_evaluate(const cJSON *spec, const trn_config *cfg,
                                 rt_metric_list *final, rt_err *err)
{
    trn_run R;
    if (final)
        memset(final, 0, sizeof *final);
    rt_status st = run_open(&R, spec, cfg, err);
    if (st == RT_OK)
        st = trace_open(&R, err);
    if (st == RT_OK)
        st = run_restore(&R, err);
    if (st == RT_OK)
        st = run_plan(&R, err);
    if (st == RT_OK && R.state == TRN_RUN_TO_TRAIN) {
        int span = rt_otlp_begin(R.trace, "train", R.trace_root);
        st = run_train(&R, err);
        rt_otlp_attr(R.trace, span, "predictd.global_step", (long long)R.m->step);
        rt_otlp_end(R.trace, span, st != RT_OK);
    }
    if (st == RT_OK && R.state != TRN_RUN_STOPPED)
        st = run_finish(&R, final, err);
    trace_close(&R, st);
    return run_close(&R, st, err);
}
