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
 */
#include "trn.h"

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Completes req: spins, then yields, then sleeps between polls (above). */
static int wait_for(MPI_Request *req)
{
    double t0 = mono_s(), waited = 0;
    for (unsigned polls = 1;; polls++) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done)
            return 0;
        if (waited < 50e-6) { /* spinning: the clock only every 16 polls */
            if (polls % 16 == 0)
                waited = mono_s() - t0;
        } else if (waited < 2e-3) {
            sched_yield();
            waited = mono_s() - t0;
        } else {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
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

static int allgatherv(void *ctx, const void *send, size_t len, void *recv, const size_t *lens)
{
    (void)ctx;
    int n, rc = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *cnt = NULL, *dsp = NULL;
    MPI_Request req;
    if (len <= INT_MAX && displs(lens, n, &cnt, &dsp) == 0 &&
        MPI_Iallgatherv(send, (int)len, MPI_BYTE, recv, cnt, dsp, MPI_BYTE, MPI_COMM_WORLD,
                        &req) == MPI_SUCCESS)
        rc = wait_for(&req);
    free(cnt);
    free(dsp);
    return rc;
}

static int gatherv(void *ctx, const void *send, size_t len, void *recv, const size_t *lens,
                   int root)
{
    (void)ctx;
    int n, rc = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *cnt = NULL, *dsp = NULL;
    MPI_Request req;
    if (len <= INT_MAX && displs(lens, n, &cnt, &dsp) == 0 &&
        MPI_Igatherv(send, (int)len, MPI_BYTE, recv, cnt, dsp, MPI_BYTE, root, MPI_COMM_WORLD,
                     &req) == MPI_SUCCESS)
        rc = wait_for(&req);
    free(cnt);
    free(dsp);
    return rc;
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
    return RT_OK;
}

void trn_comm_mpi_close(trn_comm *c)
{
    if (c && c->sum_f32)
        MPI_Finalize();
}
