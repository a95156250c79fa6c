/*
 * trn_run.c — train_and_evaluate and the run object: the model built or
 * restored (resume from the newest checkpoint, damaged ones set aside), the
 * checkpoints, the stop signals, the early-stopping hooks, and the training
 * loop; evaluation, exporters, progress, the input and BoostedTrees are in
 * the files trn_run_internal.h names.
 */
#include "trn_run_internal.h"

#include "exp.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/*
 * SIGINT/SIGTERM while training: the training threads block them and the
 * loop looks for a pending one after each step (no handler state, no
 * global); rt_signal_hold brings back one the kernel gave a library's thread.
 */
/* SIGINT or SIGTERM pending (blocked while training), else 0. */
int trn_stop_pending(void)
{
    sigset_t p;
    if (sigpending(&p) != 0)
        return 0;
    return sigismember(&p, SIGINT) ? SIGINT : sigismember(&p, SIGTERM) ? SIGTERM : 0;
}

/* Takes a pending SIGINT/SIGTERM off the queue (so unblocking them does not
 * end the process); returns it, or 0. */
int trn_stop_take(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    struct timespec zero = {0, 0};
    int sig = sigtimedwait(&set, NULL, &zero);
    return sig > 0 ? sig : 0;
}

/* Blocks SIGINT and SIGTERM for training (old: the dispositions and mask to
 * give back with unmask): a signal stays pending until the loop looks. */
void trn_stops_block(struct sigaction old[2], sigset_t *oldmask)
{
    sigset_t stopset;
    sigemptyset(&stopset);
    sigaddset(&stopset, SIGINT);
    sigaddset(&stopset, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopset, oldmask);
    rt_signal_hold(SIGINT, &old[0]);
    rt_signal_hold(SIGTERM, &old[1]);
}

/* The dispositions and mask from before training: a signal from now on
 * (the final evaluation and export) acts as it did before. */
void trn_stops_restore(const struct sigaction old[2], const sigset_t *oldmask)
{
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
    pthread_sigmask(SIG_SETMASK, oldmask, NULL);
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
    rt_buf_json_double(&line, rt_seconds(1));
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

rt_status trn_train_and_evaluate(const cJSON *spec, const trn_config *cfg,
                                 rt_metric_list *final, rt_err *err)
{
    static const char *const mine[] = {"train", "eval", NULL};
    trn_run R;
    memset(&R, 0, sizeof R);
    trn_config c = *cfg; /* shallow: strings stay cfg's */
    trn_feeder *fd = NULL;
    trn_reader *rd = NULL;
    trn_cache *cache = NULL;
    rt_batch *b = NULL;
    trn_targets tg = {0};
    trn_dist *dist = NULL;
    int lock = -1, masked = 0, sig = 0;
    sigset_t oldmask;
    struct sigaction oldact[2];
    rt_status st;
    if (final)
        memset(final, 0, sizeof *final);
    if (c.stop_signal)
        *c.stop_signal = 0;
    blas_one_thread();
    if ((st = rt_spec_to_modeldef(spec, mine, &R.def, err)))
        goto out;
    if ((st = trn_config_resolve(&c, R.def, err)))
        goto out;
    /* every input file opens before anything is trained (a wrong eval path
     * is not found only after training); a path that names nothing is a
     * bad argument (exit 2), one that cannot be opened an I/O error */
    for (int k = 0; k < 2; k++) {
        char *const *files = k ? c.eval_files : c.train_files;
        size_t n = k ? c.n_eval_files : c.n_train_files;
        if (n && (st = trn_files_check((const char *const *)files, n, err))) {
            rt_err_prefix(err, "%s", k ? "eval.files (--eval-files)" : "train.files (--train-files)");
            if (st == RT_ERR_NOTFOUND)
                st = RT_ERR_INVALID;
            goto out;
        }
    }
    if (c.job_dir && trn_is_chief(&c) &&
        ((st = trn_job_dir_check(c.job_dir, err)) || (st = trn_job_dir_lock(c.job_dir, &lock, err))))
        goto out;
    R.spec = spec;
    R.c = &c;
    R.last_ml_step = -1;
    if (R.def->graph->trees && c.warm.from) {
        st = rt_err_set(err, RT_ERR_UNSUPPORTED, "train.warm_start_from: warm starting is not "
                        "implemented for %s", R.def->graph->estimator);
        goto out;
    }
    if ((st = trn_early_stop_new(&c, &R.es, err)))
        goto out;
    R.spec_json = cJSON_PrintUnformatted(spec);
    if ((st = trn_model_new(R.def, &c, c.seed, &R.m, err)))
        goto out;
    R.m->trees = R.def->graph->trees; /* BoostedTrees: checkpointed with the model */
    if ((st = trn_dist_new(c.comm, &dist, err)))
        goto out;
    R.m->dist = dist;
    if (dist && R.m->batch_norm) {
        st = rt_err_set(err, RT_ERR_UNSUPPORTED, "estimator.batch_norm: not supported under "
                        "mpirun (each rank's batch statistics would move its own moving "
                        "mean and variance, and the replicas would differ); train it in one "
                        "process");
        goto out;
    }
    if (dist && trn_dist_rank(dist) > 0) /* dropout masks differ by rank */
        trn_rng_seed(&R.m->drop_rng, c.seed ^ 0xd0d0d0d0ULL ^
                                         ((uint64_t)trn_dist_rank(dist) * 0x9e3779b97f4a7c15ULL));
    int restored = 0;
    if (c.job_dir && trn_is_chief(&c)) {
        rt_buf warn;
        rt_buf_init(&warn);
        int64_t step = 0;
        st = trn_ckpt_restore(R.m, c.job_dir, &step, &warn, err);
        if (st == RT_OK && warn.len)
            st = damaged_fallback(&c, step, &warn, err);
        rt_buf_free(&warn);
        if (st == RT_ERR_FORMAT && !strstr(err->msg, "changed?"))
            rt_err_prefix(err, "refusing to train from step 0 over damaged checkpoints "
                          "(TF's DataLossError; nothing was changed: restore a good copy, or "
                          "move them away to start again)");
        if (st == RT_OK)
            trn_logf(&c, "Restoring parameters from %s/model.ckpt-%lld", c.job_dir, (long long)step);
        else if (st != RT_ERR_NOTFOUND)
            goto out;
        restored = st == RT_OK;
        st = RT_OK;
        trn_load_best(&R);
    }
    if (!restored && c.warm.from && trn_is_chief(&c)) { /* a fresh start only, as TF */
        rt_buf msg;
        rt_buf_init(&msg);
        st = trn_warm_start_apply(R.m, &c, &msg, err);
        if (st == RT_OK && msg.len)
            trn_logf(&c, "%s", msg.data);
        rt_buf_free(&msg);
        if (st)
            goto out;
    }
    /* every replica starts from rank 0's parameters (restored or initial) */
    if ((st = trn_dist_bcast_model(dist, R.m, err)))
        goto out;
    if (R.m->trees)
        trn_logf(&c, "%s: %lld trees of depth %lld, learning rate %g, l1 %g, l2 %g, "
              "tree_complexity %g, pruning %s", R.def->graph->estimator,
              (long long)c.gbdt.n_trees, (long long)c.gbdt.max_depth, c.gbdt.learning_rate,
              c.gbdt.l1, c.gbdt.l2, c.gbdt.tree_complexity,
              c.gbdt.pruning == TRN_PRUNE_PRE ? "pre" : c.gbdt.pruning == TRN_PRUNE_POST ? "post"
                                                                                 : "none");
    else
    trn_logf(&c, "%s: %zu parameter tensors; linear optimizer %s lr %g, DNN optimizer %s lr %g",
          R.def->graph->estimator, R.m->n_params, trn_optim_name(c.linear_opt.type),
          c.linear_opt.learning_rate, trn_optim_name(c.dnn_opt.type), c.dnn_opt.learning_rate);
    int64_t start_step = R.m->step;
    int done = c.max_steps > 0 && R.m->step >= c.max_steps;
    if (R.m->trees) {
        done = R.m->step >= trn_trees_target(&c);
        if (done)
            trn_logf(&c, "Skipping training: global step %lld has grown the %lld trees of %s "
                  "(a larger one grows on)", (long long)R.m->step,
                  (long long)trn_trees_target(&c),
                  trn_trees_target(&c) < c.gbdt.n_trees ? "train.max_steps" : "estimator.n_trees");
    } else if (done)
        trn_logf(&c, "Skipping training since max_steps has already saved: global step %lld "
              "has reached max_steps %lld (a larger --train-steps trains on)",
              (long long)R.m->step, (long long)c.max_steps);
    if (!done && c.n_train_files == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "train.files: no training files given "
                        "(--train-files)");
        goto out;
    }
    if (!done && R.m->trees) {
        if (c.job_dir && trn_is_chief(&c) &&
            (st = trn_summary_open(c.job_dir, R.m->step, &R.sum, err)))
            goto out;
        st = trn_train_trees(&R, dist, &sig, err);
        if (st)
            goto out;
        if (sig) {
            st = trn_run_interrupted(&R, dist, sig, err);
            goto out;
        }
        done = 2; /* trained: evaluate and export below */
    }
    if (!done && c.max_steps == 0 && c.num_epochs == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "train: give max_steps (--train-steps) or "
                        "num_epochs (--num-epochs), or training never ends");
        goto out;
    }
    if (!done) {
        /* AUTO: this rank reads its files or rows, batches of its share of
         * batch_size; BATCH (or one process): the whole stream, global
         * batches, of which this rank takes its slice */
        int nr = trn_dist_size(dist), rank = trn_dist_rank(dist);
        int by_rows = dist && c.shard_policy == TRN_SHARD_AUTO;
        size_t local_bs = c.batch_size;
        if (by_rows) {
            if (c.batch_size < (size_t)nr) {
                st = rt_err_set(err, RT_ERR_INVALID, "train.batch_size: %zu is smaller than "
                                "the number of ranks (%d)", c.batch_size, nr);
                goto out;
            }
            local_bs = c.batch_size / (size_t)nr + ((size_t)rank < c.batch_size % (size_t)nr);
        }
        if (c.stop_signal) {
            /* blocked before the reader threads start, so they inherit it: a
             * signal stays pending until the loop looks, after a step */
            trn_stops_block(oldact, &oldmask);
            masked = 1;
        }
        if ((st = trn_feeder_new(R.m->g, &fd, err)))
            goto out;
        /* rows kept across epochs: a quarter of the memory the model leaves, for
         * the reader's rows and as much for their features, at most 512 MiB each */
        uint64_t spare = trn_memory_spare(R.def, &c) / 4;
        trn_input in = {fd, c.train_files, c.n_train_files, local_bs, by_rows ? (size_t)nr : 0,
                    (size_t)rank, &c, NULL, spare < (UINT64_C(512) << 20) ? spare
                                                                          : UINT64_C(512) << 20};
        if (!(cache = trn_cache_new(R.m->g, in.cache_bytes))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        in.cache = cache;
        if ((st = trn_input_open(&in, &rd, err)))
            goto out;
        int64_t pass = 0; /* batches in one pass of num_epochs epochs, once known */
        if (R.m->step > 0) {
            if ((st = trn_input_replay(&in, &rd, R.m->step, &pass, err)))
                goto out;
            trn_logf(&c, "Input position restored: global step %lld is batch %lld of a pass "
                  "over the input%s", (long long)R.m->step,
                  (long long)(pass ? R.m->step % pass : R.m->step),
                  pass ? " (the input restarted: the steps trained so far went past "
                         "num_epochs)" : "");
        }
        if (c.job_dir && trn_is_chief(&c) &&
            (st = trn_summary_open(c.job_dir, R.m->step, &R.sum, err)))
            goto out;
        b = rt_batch_new(R.m->g);
        if (!b || trn_targets_alloc(&tg, fd, c.batch_size)) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        trn_progress pg;
        memset(&pg, 0, sizeof pg);
        pg.mode = c.progress;
        if (pg.mode == TRN_PROGRESS_AUTO)
            pg.mode = isatty(2) ? TRN_PROGRESS_BAR : TRN_PROGRESS_LINES;
        if (!trn_is_chief(&c))
            pg.mode = TRN_PROGRESS_QUIET;
        pg.t0 = pg.last = trn_now_s();
        double cpu0 = trn_cpu_s(CLOCK_PROCESS_CPUTIME_ID), tcpu0 = trn_cpu_s(CLOCK_THREAD_CPUTIME_ID);
        pg.step0 = R.m->step;
        pg.efrac0 = trn_epoch_fraction(rd, c.num_epochs);
        pg.batch = c.batch_size;
        pg.last_loss = NAN;
        double last_ckpt = trn_now_s(), last_eval = trn_now_s();
        int64_t last_ckpt_step = R.m->step, in_pass = 0, epochs = 0;
        uint64_t bad_before = 0, bad_distinct = 0; /* the readers' before the restarts */
        uint64_t examples = 0, bad_labels = 0;
        int local_end = 0, restarted = 0;
        while (c.max_steps == 0 || R.m->step < c.max_steps) {
            const trn_rows *rows;
            size_t n_local = 0;
            if (!local_end) {
                st = trn_input_next(&in, rd, &rows, err);
                if (st == RT_ERR_NOTFOUND) {
                    st = RT_OK;
                    local_end = 1;
                } else if (st) {
                    goto out;
                } else {
                    trn_rows part = *rows;
                    if (dist && !by_rows) {
                        size_t lo, hi;
                        trn_dist_slice(dist, rows->n, &lo, &hi);
                        part = trn_rows_slice(rows, lo, hi);
                    }
                    /* the features of the step (b NULL below); a row refused is a
                     * data error, as trn_feed_targets() says */
                    if ((st = trn_cache_fill(cache, fd, &part, b, trn_model_features(R.m),
                                             tg.labels, tg.weights, c.bad_rows, &bad_labels,
                                             &n_local, err))) {
                        if (st == RT_ERR_INVALID)
                            st = RT_ERR_FORMAT;
                        goto out;
                    }
                }
            }
            /* flags: this rank still reads; the clock-based decisions (rank
             * 0's, under MPI: summed with the gradients, every rank learns
             * them); a stop signal seen by any rank */
            float flags[5] = {local_end ? 0.0f : 1.0f,
                              trn_is_chief(&c) && c.save_checkpoints_secs > 0 &&
                                  trn_now_s() - last_ckpt >= c.save_checkpoints_secs,
                              trn_is_chief(&c) && trn_now_s() - last_eval >= c.throttle_secs,
                              masked && trn_stop_pending() ? 1.0f : 0.0f,
                              trn_is_chief(&c) && trn_early_stop_secs_due(R.es, trn_now_s())};
            double loss = 0;
            size_t n_global = n_local;
            int ended = 0;
            if (!dist) {
                ended = local_end;
                if (!ended && n_local > 0) /* features made by trn_cache_fill */
                    st = trn_model_train_step(R.m, NULL, tg.labels, tg.weights, &loss, err);
            } else {
                R.m->grad_denom = 1; /* sums: scaled once the global count is known */
                if (n_local)
                    st = trn_model_gradients(R.m, NULL, tg.labels, tg.weights, &loss, err);
                else
                    trn_model_clear_grads(R.m);
                if (st == RT_OK)
                    st = trn_dist_step(dist, R.m, &loss, n_local, flags, 5, &n_global, err);
                ended = st == RT_OK && flags[0] == 0; /* every rank's data has ended */
                if (st == RT_OK && !ended && n_global > 0)
                    trn_model_apply(R.m);
            }
            if (st) {
                rt_err_prefix(err, "step %lld", (long long)R.m->step);
                goto out;
            }
            if (flags[3] > 0) { /* after this step (if it was one): checkpoint and stop */
                sig = masked ? trn_stop_take() : 0;
                if (!sig)
                    sig = SIGTERM; /* another rank's */
                if (!ended && n_global > 0)
                    examples += n_global;
                break;
            }
            if (ended) {
                /* the end of a pass over the input (num_epochs epochs); with
                 * max_steps not reached, the input restarts from the beginning,
                 * as estimator.train(max_steps) calls input_fn again */
                if (c.max_steps == 0 || (in_pass == 0 && restarted))
                    break; /* no max_steps, or a whole pass without a step */
                trn_reader_stats rs;
                trn_reader_get_stats(rd, &rs);
                epochs += rs.epochs;
                bad_before += rs.bad_rows;
                bad_distinct = rs.bad_rows_distinct > bad_distinct ? rs.bad_rows_distinct
                                                                    : bad_distinct;
                restarted = 1;
                trn_logf(&c, "Input exhausted at global step %lld (%lld epochs); restarting it "
                      "to reach max_steps %lld", (long long)R.m->step,
                      (long long)c.num_epochs, (long long)c.max_steps);
                if ((st = trn_input_open(&in, &rd, err)))
                    goto out;
                local_end = 0;
                in_pass = 0;
                continue;
            }
            if (n_global == 0) /* every row skipped: not a step */
                continue;
            in_pass++;
            examples += n_global;
            pg.loss_sum += loss;
            pg.loss_n++;
            int64_t step = R.m->step;
            if (R.sum && c.save_summary_steps > 0 && step % c.save_summary_steps == 0 &&
                (st = trn_summary_train(R.sum, R.m, n_local, loss, examples, err)))
                goto out;
            if (step % c.log_step_count_steps == 0 || pg.mode == TRN_PROGRESS_BAR)
                trn_progress_show(&pg, step, c.max_steps, trn_epoch_fraction(rd, c.num_epochs), 0);
            int ckpt_due = c.job_dir && ((c.save_checkpoints_steps > 0 &&
                                          step - last_ckpt_step >= c.save_checkpoints_steps) ||
                                         flags[1] > 0);
            if (ckpt_due) {
                if ((st = trn_run_checkpoint(&R, dist, 0, err)))
                    goto out;
                if (pg.mode != TRN_PROGRESS_BAR && pg.mode != TRN_PROGRESS_QUIET)
                    trn_logf(&c, "Saving checkpoints for %lld into %s/model.ckpt-%lld",
                          (long long)step, c.job_dir, (long long)step);
                last_ckpt = trn_now_s();
                last_ckpt_step = step;
                if (flags[2] > 0 && (c.max_steps == 0 || step < c.max_steps)) {
                    if ((st = trn_evaluate_and_export(&R, 0, NULL, err)))
                        goto out;
                    last_eval = trn_now_s();
                }
            }
            if (R.es && (st = trn_run_early_stop(&R, dist, step, flags[4] > 0, err)))
                goto out;
            if (R.stopped_early)
                break;
        }
        if (R.m->step > start_step || sig) {
            trn_progress_show(&pg, R.m->step, c.max_steps, trn_epoch_fraction(rd, c.num_epochs), 1);
            double el = trn_now_s() - pg.t0;
            double cpu = trn_cpu_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
            double tcpu = trn_cpu_s(CLOCK_THREAD_CPUTIME_ID) - tcpu0;
            trn_reader_stats rs;
            trn_reader_get_stats(rd, &rs);
            trn_logf(&c, "trained %lld steps, %llu examples in %.2fs (%.0f examples/s), %lld "
                  "epochs; CPU %.2fs (%.0f examples per CPU-second; training thread %.2fs, "
                  "other threads %.2fs)", (long long)(R.m->step - pg.step0),
                  (unsigned long long)examples, el, el > 0 ? (double)examples / el : 0.0,
                  (long long)(epochs + rs.epochs), cpu, cpu > 0 ? (double)examples / cpu : 0.0,
                  tcpu, cpu - tcpu);
            if (dist) {
                trn_dist_timing tm;
                trn_dist_stats(dist, &tm);
                double k = tm.steps ? 1e6 / (double)tm.steps : 0.0;
                double stp = (tm.compute_s + tm.wait_s + tm.exchange_s) * k;
                trn_logf(&c, "distributed: %d ranks, communication %.3fs (%.1f us per step, %.0f%% "
                      "of the time; includes waiting for the slowest rank)", nr, tm.comm_s,
                      tm.rounds ? tm.comm_s * 1e6 / (double)tm.rounds : 0.0,
                      el > 0 ? 100.0 * tm.comm_s / el : 0.0);
                trn_logf(&c, "distributed: a step %.1f us = compute %.1f us (slowest rank %.1f us) "
                      "+ waiting for the slowest rank %.1f us + exchange %.1f us", stp,
                      tm.compute_s * k, tm.slowest_s * k, tm.wait_s * k, tm.exchange_s * k);
            }
            /* every epoch skips the same rows again: the distinct rows, and how
             * many times over how many epochs (all ranks') */
            if (rs.bad_rows_distinct > bad_distinct)
                bad_distinct = rs.bad_rows_distinct;
            double skips[4] = {(double)(bad_before + rs.bad_rows), (double)bad_labels,
                               (double)bad_distinct, (double)trn_cache_distinct_skips(cache)};
            if ((st = trn_dist_sum(dist, skips, 4, err)))
                goto out;
            int64_t ep = epochs + rs.epochs + (rs.bytes > 0);
            char first[RT_ERR_MAX + 64];
            snprintf(first, sizeof first, "first%s: %s", dist ? " of rank 0's" : "",
                     rs.first_bad[0] ? rs.first_bad : "none, all on other ranks");
            if (skips[0] > 0)
                trn_skip_report(&c, (uint64_t)skips[2], (uint64_t)skips[0], ep, "malformed row",
                            "", first);
            if (skips[1] > 0)
                trn_skip_report(&c, (uint64_t)skips[3], (uint64_t)skips[1], ep, "row",
                            " with an unknown label", NULL);
        } else if (R.m->step > 0) {
            done = 1;
            trn_logf(&c, "Skipping training: the input (num_epochs %lld) was trained through at "
                  "global step %lld; give --train-steps above it to train on",
                  (long long)c.num_epochs, (long long)R.m->step);
        } else {
            trn_logf(&c, "the training files hold no usable rows: nothing trained");
        }
        if (c.job_dir && last_ckpt_step != R.m->step) {
            if ((st = trn_run_checkpoint(&R, dist, 1, err)))
                goto out;
            trn_logf(&c, "Saving checkpoints for %lld into %s/model.ckpt-%lld", (long long)R.m->step,
                  c.job_dir, (long long)R.m->step);
        }
        /* the loop's last checkpoint may still be on its way to the disk */
        if ((st = trn_ckpt_wait(R.ckw, err)))
            goto out;
        if (masked) {
            if (!sig)
                sig = trn_stop_take(); /* came during the last checkpoint */
            trn_stops_restore(oldact, &oldmask);
            masked = 0;
        }
        if (sig) {
            st = trn_run_interrupted(&R, dist, sig, err);
            goto out;
        }
    }
    if (done == 1) {
        /* nothing trained: as TF, no new evaluation or export, unless the
         * run that reached this step ended before exporting it */
        double have = trn_is_chief(&c) && trn_exported_at(&R, R.m->step);
        if ((st = trn_dist_sum(dist, &have, 1, err)))
            goto out;
        if (have > 0) {
            trn_logf(&c, "global step %lld is already exported: nothing to do",
                  (long long)R.m->step);
            goto out;
        }
        if (!R.sum && c.job_dir && trn_is_chief(&c) &&
            (st = trn_summary_open(c.job_dir, R.m->step, &R.sum, err)))
            goto out;
    }
    st = trn_evaluate_and_export(&R, 1, final, err);
out:
    if (R.ckw) { /* a save in flight ends before the job dir is unlocked */
        rt_status cst = trn_ckpt_wait(R.ckw, st ? NULL : err);
        if (st == RT_OK)
            st = cst;
        trn_ckpt_writer_free(R.ckw);
    }
    if (masked)
        trn_stops_restore(oldact, &oldmask);
    trn_summary_close(R.sum);
    trn_early_stop_free(R.es);
    trn_targets_free(&tg);
    rt_batch_free(b);
    trn_reader_close(rd);
    trn_cache_free(cache);
    trn_feeder_free(fd);
    trn_model_free(R.m);
    trn_dist_free(dist);
    rt_modeldef_free(R.def);
    free(R.spec_json);
    trn_job_dir_unlock(lock);
    return st;
}
