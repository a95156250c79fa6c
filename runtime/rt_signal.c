/*
 * rt_signal.c — SIGINT/SIGTERM taken synchronously by programs whose own
 * threads block them (the trainer's loop, the tuner's sigtimedwait), when
 * libraries start threads of their own that do not: OpenBLAS's pool before
 * main(), Open MPI's progress threads in MPI_Init. The kernel may deliver a
 * process-directed signal to one of those, whose default action ends the
 * process. The handler here, run in that thread, blocks the signal there for
 * good (the mask in its ucontext is the one restored on return) and sends
 * it to the process again, where it stays pending for the program's thread.
 * No state, no global.
 */
#include "rt.h"

#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static void redirect(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    sigaddset(&((ucontext_t *)uc)->uc_sigmask, sig);
    kill(getpid(), sig);
}

void rt_signal_hold(int sig, struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = redirect;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    sigaction(sig, &sa, old);
}
