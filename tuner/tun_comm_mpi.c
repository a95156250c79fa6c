/*
 * tun_comm_mpi.c — predict-tune's tun_comm over MPI (Open MPI): the only file
 * of predict-tune that includes mpi.h, called from main only when a launcher
 * started the process (rt_mpi_launched), so a plain predict-tune never
 * initialises MPI and the tuner's library (linked into the tests) never
 * pulls MPI in.
 *
 * The study's messages are a few hundred bytes to a few KB (a trial's record
 * with its log tail), a handful per trial: plain MPI_Send / MPI_Iprobe /
 * MPI_Recv on MPI_COMM_WORLD. Errors keep MPI's default handler
 * (MPI_ERRORS_ARE_FATAL): a failed transfer or a dead peer ends the job
 * instead of leaving ranks waiting.
 */
#include "tun.h"

#include <limits.h>
#include <mpi.h>
#include <string.h>

static int send_(void *ctx, int to, int tag, const void *buf, size_t len)
{
    (void)ctx;
    if (len > INT_MAX)
        return -1;
    return MPI_Send(buf, (int)len, MPI_BYTE, to, tag, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static int poll_(void *ctx, int *from, int *tag, size_t *len)
{
    (void)ctx;
    int flag = 0, count = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
        return -1;
    if (!flag)
        return 0;
    if (MPI_Get_count(&st, MPI_BYTE, &count) != MPI_SUCCESS || count < 0)
        return -1;
    *from = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    *len = (size_t)count;
    return 1;
}

static int recv_(void *ctx, int from, int tag, void *buf, size_t len)
{
    (void)ctx;
    if (len > INT_MAX)
        return -1;
    return MPI_Recv(buf, (int)len, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                   MPI_SUCCESS
               ? 0
               : -1;
}

rt_status tun_comm_mpi_open(int *argc, char ***argv, tun_comm *c, rt_err *err)
{
    memset(c, 0, sizeof *c);
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return rt_err_set(err, RT_ERR_IO, "MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->send = send_;
    c->poll = poll_;
    c->recv = recv_;
    return RT_OK;
}

void tun_comm_mpi_close(tun_comm *c)
{
    if (c && c->send)
        MPI_Finalize();
}
