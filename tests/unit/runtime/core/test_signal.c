/* test_signal.c — rt_stops, the one way the trainer and the tuner take
 * SIGINT/SIGTERM synchronously: a stop sent while blocked stays pending
 * (rt_signal_stops_pending names it), rt_signal_stops_take takes it off the queue,
 * rt_signal_stops_block's extra signal (the tuner's SIGCHLD) is in the mask for
 * sigtimedwait and a pending one is discarded by rt_signal_stops_restore instead
 * of reaching the caller's handler, and the caller's mask and actions come
 * back; a stop sent from another thread that does not block it (a
 * library's) is moved back to the process as a pending signal. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt.h"

static volatile sig_atomic_t chld_seen, term_seen;

static void on_chld(int sig)
{
    (void)sig;
    chld_seen++;
}

static void on_term(int sig)
{
    (void)sig;
    term_seen++;
}

static void test_pending_and_take(void **state)
{
    (void)state;
    struct sigaction sa, before;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, &before);
    rt_stops s;
    rt_signal_stops_block(&s, 0);
    assert_int_equal(rt_signal_stops_pending(), 0);
    assert_int_equal(rt_signal_stops_take(), 0);
    kill(getpid(), SIGTERM);
    /* A process-directed signal may reach another thread (a sanitizer's
     * runtime has some) whose held handler re-raises it to the process: it
     * becomes pending here a moment later. */
    for (int k = 0; k < 5000 && rt_signal_stops_pending() != SIGTERM; k++)
        usleep(1000);
    assert_int_equal(term_seen, 0);
    assert_int_equal(rt_signal_stops_pending(), SIGTERM);
    assert_int_equal(rt_signal_stops_take(), SIGTERM);
    assert_int_equal(rt_signal_stops_pending(), 0);
    assert_true(sigismember(&s.mask, SIGINT) && sigismember(&s.mask, SIGTERM));
    assert_false(sigismember(&s.mask, SIGCHLD));
    rt_signal_stops_restore(&s);
    assert_int_equal(term_seen, 0);
    /* the caller's action is back */
    struct sigaction now;
    sigaction(SIGTERM, NULL, &now);
    assert_ptr_equal(now.sa_handler, on_term);
    sigset_t m;
    pthread_sigmask(SIG_SETMASK, NULL, &m);
    assert_false(sigismember(&m, SIGTERM));
    sigaction(SIGTERM, &before, NULL);
}

static void test_also_discarded(void **state)
{
    (void)state;
    struct sigaction sa, before;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, &before);
    rt_stops s;
    rt_signal_stops_block(&s, SIGCHLD);
    assert_true(sigismember(&s.mask, SIGCHLD));
    kill(getpid(), SIGCHLD);
    struct timespec zero = {0, 0};
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, SIGCHLD);
    kill(getpid(), SIGCHLD);
    rt_signal_stops_restore(&s);
    assert_int_equal(chld_seen, 0);
    assert_int_equal(sigtimedwait(&one, NULL, &zero), -1);
    sigaction(SIGCHLD, &before, NULL);
}

static void *send_term(void *arg)
{
    (void)arg;
    sigset_t all;
    sigemptyset(&all);
    sigaddset(&all, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &all, NULL); /* a library thread that does not block it */
    raise(SIGTERM); /* delivered to this thread: the held action moves it back */
    return NULL;
}

static void test_held_from_other_thread(void **state)
{
    (void)state;
    rt_stops s;
    rt_signal_stops_block(&s, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, send_term, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(rt_signal_stops_pending(), SIGTERM); /* and the process lives */
    assert_int_equal(rt_signal_stops_take(), SIGTERM);
    rt_signal_stops_restore(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_and_take),
        cmocka_unit_test(test_also_discarded),
        cmocka_unit_test(test_held_from_other_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
