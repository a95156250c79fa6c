/*
 * trn_comm_mpi.c — the trainer's trn_comm over MPI (Open MPI): the only file
 * of predict-train that includes mpi.h (predict-tune's is tuner/tun_comm_mpi.c).
 *
 * MPI is initialised only when a launcher started the process (its rank is
 * in the environment: rt_mpi_launched): a plain predict-train does not pay
 * MPI_Init. Errors keep MPI's default handler (MPI_ERRORS_ARE_FATAL): a
 * failed collective or a dead peer ends the job instead of leaving ranks
 * waiting.
 *
 * Collectives are started non-blocking and waited for in three phases:
 * MPI_Test in a tight loop for the first 50 us (a step's exchange between
 * two running ranks completes within that), then MPI_Test and sched_yield
 * in turn up to 2 ms (a thread waiting for this core, such as the rank's own
 * reader thread or a peer on an oversubscribed core, runs instead of the
 * spin; with nothing else runnable the rank keeps polling at full speed),
 * then 20 us sleeps between polls (a long wait: rank 0 writing a checkpoint
 * or evaluating). Open MPI's own blocking calls spin without yielding, and
 * a spinning rank takes the core its peer or its reader thread needs
 * whenever there are more threads than cores; the earlier sleep-poll (sleep
 * after 200 polls) added the sleep's wake-up latency (20 us plus the
 * kernel's timer slack) to every exchange: a tenth of a batch-40 step.
 * After 100 ms of waiting the sleeps are 1 ms long: a rank waiting for a
 * stopped or far slower peer uses about 1% of a core instead of 17%, and an
 * exchange that ends after such a wait ends at most 1 ms later.
 *
 * The stall watch (set_stall; train.mpi_stall_warn_secs and
 * train.mpi_stall_abort_secs, docs/distributed.md). Every rank counts the
 * collectives it starts (all ranks start the same ones in the same order,
 * so the counts agree). A rank other than 0 that has waited in collective K
 * for half the smaller of the two times sends rank 0 a notice "I wait in K"
 * (8 bytes, MPI_Isend on a duplicate of MPI_COMM_WORLD, at most one per
 * collective: a run without stalls sends none). Rank 0, once it has waited
 * in K for the warning time, reads the notices: a rank that sent none for K
 * has not reached K (stopped, hung, or still computing), and the WARNING
 * names it; again at 2, 4, 8... times the warning time, and an INFO line
 * when the collective completes at last. At the abort time rank 0 names the
 * ranks in an ERROR line and calls MPI_Abort; any other rank does so after
 * twice the abort time (rank 0 itself stopped). The training's numbers do
 * not depend on any of it.
 */
#include "trn.h"

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The stall watch of this process (one MPI_COMM_WORLD per process). */
#define NOTICE_TAG 1
static struct {
    int on;               /* set_stall was given a time */
    MPI_Comm side;        /* MPI_COMM_WORLD's duplicate: the notices */
    int rank, size, log_level;
    double warn_s, abort_s, notice_s; /* 0 = off */
    int64_t step;         /* set_step */
    int64_t seq;          /* collectives started by this rank */
    int64_t *heard;       /* rank 0: [size] the collective each rank last waited in */
    MPI_Request rx;       /* rank 0: the posted receive of a notice */
    int64_t rx_buf;
    MPI_Request tx;       /* other ranks: the last notice sent */
    int64_t tx_buf;
} S;

static void post_rx(void)
{
    if (MPI_Irecv(&S.rx_buf, 1, MPI_INT64_T, MPI_ANY_SOURCE, NOTICE_TAG, S.side, &S.rx) !=
        MPI_SUCCESS)
        S.rx = MPI_REQUEST_NULL;
}

/* Rank 0: records the notices that have arrived. */
static void drain(void)
{
    for (;;) {
        int done = 0;
        MPI_Status st;
        if (S.rx == MPI_REQUEST_NULL || MPI_Test(&S.rx, &done, &st) != MPI_SUCCESS || !done)
            return;
        if (st.MPI_SOURCE > 0 && st.MPI_SOURCE < S.size && S.rx_buf > S.heard[st.MPI_SOURCE])
            S.heard[st.MPI_SOURCE] = S.rx_buf;
        post_rx();
    }
}

/* Other ranks: tells rank 0 this rank waits in collective seq; 0 when the
 * previous notice is still on its way (then try again later). */
static int notice(int64_t seq)
{
    int done = 1;
    if (S.tx != MPI_REQUEST_NULL && MPI_Test(&S.tx, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return 1; /* give up on notices rather than fail the collective */
    if (!done)
        return 0;
    S.tx_buf = seq;
    if (MPI_Isend(&S.tx_buf, 1, MPI_INT64_T, 0, NOTICE_TAG, S.side, &S.tx) != MPI_SUCCESS)
        S.tx = MPI_REQUEST_NULL;
    return 1;
}

/* Rank 0: "1, 3" — the ranks that have not said they wait in seq. */
static void missing(int64_t seq, char *out, size_t cap)
{
    size_t len = 0;
    int n = 0;
    out[0] = '\0';
    for (int r = 1; r < S.size; r++) {
        /* waits in seq, or passed it (a gather); or waits in the collective
         * before seq, which rank 0 has left but r has not: r is held up by a
         * rank that has not finished that one (a ring's or a reduction's
         * later step needs it), it does not hold anyone up itself. A rank
         * stopped right after such a wait would go unnamed here; the rank
         * that held it up is named. */
        if (S.heard[r] >= seq - 1)
            continue;
        if (++n <= 16 && len < cap)
            len += (size_t)snprintf(out + len, cap - len, "%s%d", n > 1 ? ", " : "", r);
    }
    if (n > 16 && len < cap)
        snprintf(out + len, cap - len, ", ... (%d ranks)", n);
    if (n == 0)
        snprintf(out, cap, "none: every rank has reached it, the transport itself is stalled");
}

/* One poll's look at the clock during a long wait in collective seq. */
static void watch(int64_t seq, double waited, int *noticed, double *next_warn, int *warned)
{
    if (S.rank != 0) {
        if (!*noticed && waited >= S.notice_s)
            *noticed = notice(seq);
        if (S.abort_s > 0 && waited >= 2 * S.abort_s) {
            fprintf(stderr, "ERROR: rank %d: global step %lld: no progress for %.0f s in an "
                            "exchange between the ranks (twice train.mpi_stall_abort_secs = "
                            "%g): rank 0 did not end the job, it may itself be stopped; "
                            "ending the job\n", S.rank, (long long)S.step, waited, S.abort_s);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        return;
    }
    drain();
    char who[200];
    if (S.abort_s > 0 && waited >= S.abort_s) {
        missing(seq, who, sizeof who);
        fprintf(stderr, "ERROR: global step %lld: no progress for %.0f s: rank 0 waits in an "
                        "exchange for rank(s) %s, which have not reached it "
                        "(train.mpi_stall_abort_secs = %g); ending the job\n",
                (long long)S.step, waited, who, S.abort_s);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (*next_warn > 0 && waited >= *next_warn) {
        missing(seq, who, sizeof who);
        if (S.log_level <= 2) {
            fprintf(stderr, "WARNING: global step %lld: rank 0 has waited %.0f s in an exchange "
                            "for rank(s) %s, which have not reached it "
                            "(train.mpi_stall_warn_secs = %g%s)\n",
                    (long long)S.step, waited, who, S.warn_s,
                    S.abort_s > 0 ? "" : "; train.mpi_stall_abort_secs ends such a job");
            fflush(stderr);
        }
        *warned = 1;
        *next_warn *= 2;
    }
}

/* Completes req: spins, then yields, then sleeps between polls (above). */
static int wait_for(MPI_Request *req)
{
    int64_t seq = ++S.seq;
    double t0 = rt_time_seconds(0), waited = 0, next_warn = S.warn_s;
    int noticed = 0, warned = 0;
    for (unsigned polls = 1;; polls++) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done) {
            if (warned && S.log_level <= 1) {
                fprintf(stderr, "INFO: global step %lld: the exchange rank 0 waited in "
                                "completed after %.0f s\n", (long long)S.step,
                        rt_time_seconds(0) - t0);
                fflush(stderr);
            }
            return 0;
        }
        if (waited < 50e-6) { /* spinning: the clock only every 16 polls */
            if (polls % 16 == 0)
                waited = rt_time_seconds(0) - t0;
        } else if (waited < 2e-3) {
            sched_yield();
            waited = rt_time_seconds(0) - t0;
        } else {
            struct timespec ts = {0, waited < 0.1 ? 20000 : 1000000};
            nanosleep(&ts, NULL);
            waited = rt_time_seconds(0) - t0;
            if (S.on && waited >= S.notice_s)
                watch(seq, waited, &noticed, &next_warn, &warned);
        }
    }
}

/* MPI counts are ints: larger messages go in pieces. */
#define PIECE ((size_t)1 << 30)

/* In-place MPI_SUM of n elements of el bytes each. */
static int sum(void *buf, size_t n, size_t el, MPI_Datatype type)
{
    size_t piece = PIECE / el;
    for (size_t off = 0; off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        MPI_Request req;
        if (MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + off * el, (int)k, type, MPI_SUM,
                           MPI_COMM_WORLD, &req) != MPI_SUCCESS || wait_for(&req))
            return -1;
    }
    return 0;
}

static int sum_f32(void *ctx, float *buf, size_t n)
{
    (void)ctx;
    return sum(buf, n, sizeof *buf, MPI_FLOAT);
}

static int sum_f64(void *ctx, double *buf, size_t n)
{
    (void)ctx;
    return sum(buf, n, sizeof *buf, MPI_DOUBLE);
}

static int allgather(void *ctx, const void *send, size_t len, void *recv)
{
    (void)ctx;
    if (len > INT_MAX)
        return -1;
    MPI_Request req;
    if (MPI_Iallgather(send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE, MPI_COMM_WORLD,
                       &req) != MPI_SUCCESS)
        return -1;
    return wait_for(&req);
}

/* MPI's int counts and displacements from byte lengths; -1 when too large. */
static int displs(const size_t *lens, int n, int **cnt, int **dsp)
{
    *cnt = malloc((size_t)n * sizeof **cnt);
    *dsp = malloc((size_t)n * sizeof **dsp);
    if (!*cnt || !*dsp)
        return -1;
    size_t off = 0;
    for (int r = 0; r < n; r++) {
        if (lens[r] > INT_MAX || off > INT_MAX)
            return -1;
        (*cnt)[r] = (int)lens[r];
        (*dsp)[r] = (int)off;
        off += lens[r];
    }
    return 0;
}

/* Gathers each rank's len bytes (lens[r] from rank r) into recv at every
 * rank (root < 0) or at root only. 0, or -1. */
static int gather_bytes(const void *send, size_t len, void *recv, const size_t *lens, int root)
{
    int n, rc = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *cnt = NULL, *dsp = NULL;
    MPI_Request req;
    if (len <= INT_MAX && displs(lens, n, &cnt, &dsp) == 0) {
        int mr = root < 0 ? MPI_Iallgatherv(send, (int)len, MPI_BYTE, recv, cnt, dsp, MPI_BYTE,
                                            MPI_COMM_WORLD, &req)
                          : MPI_Igatherv(send, (int)len, MPI_BYTE, recv, cnt, dsp, MPI_BYTE,
                                         root, MPI_COMM_WORLD, &req);
        if (mr == MPI_SUCCESS)
            rc = wait_for(&req);
    }
    free(cnt);
    free(dsp);
    return rc;
}

static int allgatherv(void *ctx, const void *send, size_t len, void *recv, const size_t *lens)
{
    (void)ctx;
    return gather_bytes(send, len, recv, lens, -1);
}

static int gatherv(void *ctx, const void *send, size_t len, void *recv, const size_t *lens,
                   int root)
{
    (void)ctx;
    return gather_bytes(send, len, recv, lens, root);
}

static int bcast(void *ctx, void *buf, size_t len, int root)
{
    (void)ctx;
    for (size_t off = 0; off < len; off += PIECE) {
        size_t k = len - off < PIECE ? len - off : PIECE;
        MPI_Request req;
        if (MPI_Ibcast((char *)buf + off, (int)k, MPI_BYTE, root, MPI_COMM_WORLD, &req) !=
                MPI_SUCCESS ||
            wait_for(&req))
            return -1;
    }
    return 0;
}

static void abort_(void *ctx, int code)
{
    (void)ctx;
    MPI_Abort(MPI_COMM_WORLD, code);
    abort(); /* MPI_Abort does not return; in case it does */
}

static void set_stall(void *ctx, double warn_s, double abort_s, int log_level)
{
    (void)ctx;
    S.warn_s = warn_s > 0 ? warn_s : 0;
    S.abort_s = abort_s > 0 ? abort_s : 0;
    S.log_level = log_level;
    double lo = S.warn_s > 0 && (S.abort_s == 0 || S.warn_s < S.abort_s) ? S.warn_s : S.abort_s;
    S.notice_s = lo / 2;
    int on = lo > 0 && S.side != MPI_COMM_NULL && (S.rank != 0 || S.heard);
    if (on && S.rank == 0 && S.rx == MPI_REQUEST_NULL)
        post_rx();
    S.on = on;
}

static void set_step(void *ctx, int64_t step)
{
    (void)ctx;
    S.step = step;
}

rt_status trn_comm_mpi_open(int *argc, char ***argv, trn_comm *c, rt_err *err)
{
    memset(c, 0, sizeof *c);
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return rt_err_set(err, RT_ERR_IO, "MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->sum_f32 = sum_f32;
    c->sum_f64 = sum_f64;
    c->allgather = allgather;
    c->allgatherv = allgatherv;
    c->gatherv = gatherv;
    c->bcast = bcast;
    c->abort = abort_;
    c->set_stall = set_stall;
    c->set_step = set_step;
    S.rank = c->rank;
    S.size = c->size;
    S.side = MPI_COMM_NULL;
    S.rx = S.tx = MPI_REQUEST_NULL;
    if (c->size > 1) {
        /* without the duplicate (or rank 0's table) the watch stays off */
        if (MPI_Comm_dup(MPI_COMM_WORLD, &S.side) != MPI_SUCCESS)
            S.side = MPI_COMM_NULL;
        if (c->rank == 0)
            S.heard = calloc((size_t)c->size, sizeof *S.heard);
        set_stall(NULL, 60, 0, 1);
    }
    return RT_OK;
}

void trn_comm_mpi_close(trn_comm *c)
{
    if (!c || !c->sum_f32)
        return;
    S.on = 0;
    if (S.rx != MPI_REQUEST_NULL) {
        MPI_Cancel(&S.rx);
        MPI_Wait(&S.rx, MPI_STATUS_IGNORE);
    }
    if (S.tx != MPI_REQUEST_NULL) /* 8 bytes: delivered eagerly */
        MPI_Request_free(&S.tx);
    if (S.side != MPI_COMM_NULL)
        MPI_Comm_free(&S.side);
    free(S.heard);
    S.heard = NULL;
    MPI_Finalize();
}
