/*
 * rt_signal.c — SIGINT/SIGTERM taken synchronously by programs whose own
 * threads block them (the trainer's loop, the tuner's sigtimedwait): the
 * blocking and giving back (rt_signal_stops_block / rt_signal_stops_restore), the look
 * for a pending one and its taking; and the redirect needed when
 * libraries start threads of their own that do not: OpenBLAS's pool before
 * main(), Open MPI's progress threads in MPI_Init. The kernel may deliver a
 * process-directed signal to one of those, whose default action ends the
 * process. The handler here, run in that thread, blocks the signal there for
 * good (the mask in its ucontext is the one restored on return) and sends
 * it to the process again, where it stays pending for the program's thread.
 * No state, no global: what is given back lives in the caller's rt_stops.
 */
#include "rt_core.h"

#include <pthread.h>
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

void rt_signal_stops_block(rt_stops *s, int also)
{
    sigemptyset(&s->mask);
    sigaddset(&s->mask, SIGINT);
    sigaddset(&s->mask, SIGTERM);
    if (also)
        sigaddset(&s->mask, also);
    s->also = also;
    pthread_sigmask(SIG_BLOCK, &s->mask, &s->old_mask);
    rt_signal_hold(SIGINT, &s->old_act[0]);
    rt_signal_hold(SIGTERM, &s->old_act[1]);
}

void rt_signal_stops_restore(const rt_stops *s)
{
    sigaction(SIGINT, &s->old_act[0], NULL);
    sigaction(SIGTERM, &s->old_act[1], NULL);
    if (s->also) { /* a pending one must not reach the caller's disposition */
        struct timespec zero = {0, 0};
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, s->also);
        while (sigtimedwait(&one, NULL, &zero) > 0) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
}

int rt_signal_stops_pending(void)
{
    sigset_t p;
    if (sigpending(&p) != 0)
        return 0;
    return sigismember(&p, SIGINT) ? SIGINT : sigismember(&p, SIGTERM) ? SIGTERM : 0;
}

int rt_signal_stops_take(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    struct timespec zero = {0, 0};
    int sig = sigtimedwait(&set, NULL, &zero);
    return sig > 0 ? sig : 0;
}
