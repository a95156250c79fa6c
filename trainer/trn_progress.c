/*
 * trn_progress.c — what a run says while it trains: the INFO lines (rank 0
 * only), the clocks, the progress bar or lines with their ETA, and the
 * skipped-rows report of the run's summary.
 */
#include "trn_run_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double trn_now_s(void)
{
    return rt_time_seconds(0);
}

/* CPU seconds of the whole process (every thread) or of the calling thread. */
double trn_cpu_s(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int trn_is_chief(const trn_config *c)
{
    return !c || !c->comm || c->comm->rank == 0;
}

/* An INFO line, from the chief (rank 0) only. */
void trn_logf(const trn_config *c, const char *fmt, ...)
{
    if (!trn_is_chief(c) || (c && c->log_level > 1))
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("INFO: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Fraction of the epochs done (reader position), or -1 when unknown. */
double trn_epoch_fraction(trn_reader *rd, int64_t num_epochs)
{
    if (!rd || num_epochs <= 0)
        return -1;
    trn_reader_stats rs;
    trn_reader_get_stats(rd, &rs);
    if (rs.epoch_bytes == 0)
        return -1;
    double f = ((double)rs.epochs + (double)rs.bytes / (double)rs.epoch_bytes) /
               (double)num_epochs;
    return f > 1 ? 1 : f;
}

double trn_eta(int64_t step0, int64_t step, int64_t max_steps, double efrac0, double efrac,
               double elapsed)
{
    if (!(elapsed > 0))
        return -1;
    if (max_steps > 0) { /* the run goes to max_steps (the input restarts when it ends) */
        double sps = (double)(step - step0) / elapsed;
        return sps > 0 && step <= max_steps ? (double)(max_steps - step) / sps : -1;
    }
    /* by the reader's position: only the part this run read counts */
    if (efrac0 >= 0 && efrac > efrac0)
        return elapsed * (1.0 - efrac) / (efrac - efrac0);
    return -1;
}

void trn_progress_show(trn_progress *p, int64_t step, int64_t max_steps, double efrac,
                          int force)
{
    double t = trn_now_s();
    if (p->mode == TRN_PROGRESS_QUIET)
        return;
    if (!force && p->mode == TRN_PROGRESS_BAR && t - p->last < 0.2)
        return;
    if (force && p->mode != TRN_PROGRESS_BAR && p->loss_n == 0)
        return; /* the last line already said it all (no "loss = nan" line) */
    double el = t - p->t0;
    double sps = el > 0 ? (double)(step - p->step0) / el : 0;
    double loss = p->loss_n ? p->loss_sum / (double)p->loss_n : p->last_loss;
    p->last_loss = loss;
    double eta = force ? 0 : trn_eta(p->step0, step, max_steps, p->efrac0, efrac, el);
    char etas[32] = "?";
    if (eta >= 0)
        snprintf(etas, sizeof etas, "%.0fs", eta);
    if (p->mode == TRN_PROGRESS_BAR) {
        char bar[31];
        double frac = max_steps > 0 ? (double)step / (double)max_steps : efrac;
        if (force)
            frac = 1;
        int fill = frac > 0 ? (int)(frac * 30) : 0;
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '=' : ' ';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] step %lld loss %.4f %.0f steps/s %.0f examples/s ETA %s ",
                bar, (long long)step, loss, sps, sps * (double)p->batch, etas);
        if (force)
            fputc('\n', stderr);
    } else {
        trn_logf(NULL, "global_step %lld: loss = %.5f, %.1f steps/s, %.0f examples/s, ETA %s",
              (long long)step, loss, sps, sps * (double)p->batch, etas);
    }
    fflush(stderr);
    p->last = t;
    p->loss_sum = 0;
    p->loss_n = 0;
}

/* "skipped 1 malformed row (first: ...)", or with rows skipped again in later
 * epochs "skipped 1 row with an unknown label (3 times over 3 epochs)":
 * distinct rows, then how many times. */
void trn_skip_report(const trn_config *c, uint64_t distinct, uint64_t times, int64_t epochs,
                        const char *noun, const char *tail, const char *first)
{
    if (distinct == 0 || distinct > times)
        distinct = times;
    char again[128] = "";
    if (times > distinct)
        snprintf(again, sizeof again, "%llu times over %lld epochs", (unsigned long long)times,
                 (long long)(epochs > 1 ? epochs : 1));
    trn_logf(c, "skipped %llu %s%s%s%s%s%s%s%s", (unsigned long long)distinct, noun,
          distinct == 1 ? "" : "s", tail, again[0] || first ? " (" : "", again,
          again[0] && first ? "; " : "", first ? first : "", again[0] || first ? ")" : "");
}
