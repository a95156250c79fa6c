/*
 * srv_conn.c — the HTTP server's open client connections: how many there
 * are, and which to close.
 *
 * - At most max_connections are open. When a new one arrives and all are
 *   taken, one is closed to make room: first the oldest of those that have
 *   sent nothing since they were accepted (a flood of silent sockets cannot
 *   lock clients out), else the connection idle the longest between two
 *   keep-alive requests (nginx reuses idle keep-alive connections the same
 *   way); when there is neither the new connection is refused (closed at
 *   once), counted and logged (at most one line a second).
 * - A sweeper thread closes connections that hold a slot without sending:
 *   a request header not whole header_timeout after the connection opened
 *   (or after the next request's first byte on a keep-alive connection),
 *   and a request not read whole read_timeout after its first byte (a
 *   client sending a byte a second never reaches an idle timeout).
 *
 * When a request began is when its request line arrived (srv_conn_request_began,
 * from libmicrohttpd's URI callback), or earlier when the socket's TCP_INFO
 * shows data received clearly after the connection became idle (a request
 * line sent a byte at a time); idle keep-alive connections stay under
 * libmicrohttpd's idle timeout. Closing is a shutdown(2) of the socket while
 * the connection is still registered (libmicrohttpd closes the descriptor
 * only after srv_conns_remove), so libmicrohttpd sees the end and cleans up
 * itself. Exempt connections (the watchdog's probe) are neither counted
 * nor closed.
 */
#include "srv.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

/* TCP_INFO's time of the last data received counts in jiffies (1-10 ms). */
#define READ_CLOCK_SLACK_MS 50

struct srv_conn {
    srv_conn *prev, *next;    /* srv_conns.list, under mu */
    int fd;
    bool exempt;
    long long opened;         /* ms (monotonic) */
    atomic_uint gen;          /* requests completed */
    atomic_llong began;       /* ms: the current request's line arrived; 0 not yet */
    atomic_bool headers_done; /* the current request's header is whole */
    atomic_bool read_done;    /* the current request has been read whole */
    atomic_llong idle_since;  /* ms: opened, or the last request's completion */
    /* under mu */
    unsigned watch_gen;
    long long watch_start;    /* ms: first byte of the current request; 0 unknown */
    bool shut;                /* closed by us, not yet removed */
};

struct srv_conns {
    srv_conns_params p;
    pthread_mutex_t mu;       /* guards list, counts, the sweeper's state */
    pthread_cond_t cv;        /* wakes the sweeper to stop */
    srv_conn *list;
    long n_open;              /* registered, not exempt */
    long n_shut;              /* of those, shut down and not yet removed */
    unsigned long refused_unlogged;
    long long refused_logged_at;
    pthread_t sweeper;
    bool sweeper_on, stop;
};

/* Shuts c down (mu held); libmicrohttpd then closes it. */
static void shut(srv_conns *t, srv_conn *c, const char *reason)
{
    c->shut = true;
    t->n_shut++;
    shutdown(c->fd, SHUT_RDWR);
    srv_metrics_connections(t->p.metrics, -1, false, reason);
}

/* When c's current request sent its first byte (ms), 0 if not yet (mu
 * held): data received clearly after c became idle, per TCP_INFO. */
static long long first_byte(srv_conn *c, long long now)
{
    unsigned g = atomic_load_explicit(&c->gen, memory_order_acquire);
    if (g != c->watch_gen) {
        c->watch_gen = g;
        c->watch_start = 0;
    }
    long long line = atomic_load(&c->began);
    if (line && (!c->watch_start || line < c->watch_start))
        c->watch_start = line;
    if (c->watch_start)
        return c->watch_start;
    long long idle = atomic_load_explicit(&c->idle_since, memory_order_relaxed);
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return 0; /* not TCP: only the idle timeout applies */
    long long last = now - (long long)ti.tcpi_last_data_recv;
    if (last > idle + READ_CLOCK_SLACK_MS)
        c->watch_start = last > 0 ? last : 1;
    return c->watch_start;
}

/* Nothing received since c was accepted (mu held): no request yet, none
 * begun, no byte waiting in the socket, and TCP_INFO shows no data after
 * the connection opened. */
static bool is_silent(srv_conn *c, long long now)
{
    if (c->shut || c->exempt || atomic_load(&c->gen) > 0 || atomic_load(&c->headers_done) ||
        first_byte(c, now) != 0)
        return false;
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Between two requests of a keep-alive connection, nothing of the next
 * one received (mu held). */
static bool is_idle(srv_conn *c, long long now)
{
    return !c->shut && !c->exempt && atomic_load(&c->gen) > 0 &&
           !atomic_load(&c->headers_done) && first_byte(c, now) == 0;
}

bool srv_conns_admit(srv_conns *t)
{
    bool ok = true;
    pthread_mutex_lock(&t->mu);
    if (t->n_open - t->n_shut >= t->p.max_connections) {
        long long now = (long long)rt_time_now_ms();
        srv_conn *oldest = NULL, *silent = NULL;
        long long oldest_at = 0;
        /* the list runs newest first: the last silent one is the oldest */
        for (srv_conn *c = t->list; c; c = c->next)
            if (is_silent(c, now))
                silent = c;
        for (srv_conn *c = t->list; c && !silent; c = c->next) {
            if (!is_idle(c, now))
                continue;
            long long at = atomic_load(&c->idle_since);
            /* on a tie the older one wins */
            if (!oldest || at <= oldest_at) {
                oldest = c;
                oldest_at = at;
            }
        }
        if (silent) {
            shut(t, silent, "silent_reclaimed");
        } else if (oldest) {
            shut(t, oldest, "idle_reclaimed");
        } else {
            ok = false;
            t->refused_unlogged++;
            srv_metrics_connections(t->p.metrics, -1, true, NULL);
            if (now - t->refused_logged_at >= 1000) {
                srv_log(SRV_LOG_WARN,
                        "connection limit: refused %lu new connection(s): all "
                        "max_connections=%d are busy and none is idle or silent",
                        t->refused_unlogged, t->p.max_connections);
                t->refused_unlogged = 0;
                t->refused_logged_at = now;
            }
        }
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

srv_conn *srv_conns_add(srv_conns *t, int fd, bool exempt)
{
    srv_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    c->exempt = exempt;
    c->opened = (long long)rt_time_now_ms();
    atomic_init(&c->gen, 0);
    atomic_init(&c->began, 0);
    atomic_init(&c->headers_done, false);
    atomic_init(&c->read_done, false);
    atomic_init(&c->idle_since, c->opened);
    pthread_mutex_lock(&t->mu);
    c->next = t->list;
    if (t->list)
        t->list->prev = c;
    t->list = c;
    if (!exempt)
        t->n_open++;
    srv_metrics_connections(t->p.metrics, t->n_open, false, NULL);
    pthread_mutex_unlock(&t->mu);
    return c;
}

void srv_conns_remove(srv_conns *t, srv_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&t->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->list = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (!c->exempt)
        t->n_open--;
    if (c->shut)
        t->n_shut--;
    srv_metrics_connections(t->p.metrics, t->n_open, false, NULL);
    pthread_mutex_unlock(&t->mu);
    free(c);
}

void srv_conn_request_began(srv_conn *c)
{
    if (c)
        atomic_store(&c->began, (long long)rt_time_now_ms());
}

void srv_conn_headers_done(srv_conn *c)
{
    if (c)
        atomic_store(&c->headers_done, true);
}

void srv_conn_read_done(srv_conn *c)
{
    if (c)
        atomic_store_explicit(&c->read_done, true, memory_order_relaxed);
}

void srv_conn_request_done(srv_conn *c)
{
    if (!c)
        return;
    atomic_store(&c->began, 0);
    atomic_store(&c->headers_done, false);
    atomic_store_explicit(&c->read_done, false, memory_order_relaxed);
    atomic_store_explicit(&c->idle_since, (long long)rt_time_now_ms(), memory_order_relaxed);
    atomic_fetch_add_explicit(&c->gen, 1, memory_order_release);
}

/* True when bytes the client sent wait unread in the socket: its I/O
 * thread was busy, the client was not slow (issue 35, item 1). A running
 * I/O thread reads what arrives at once, so a slow client's socket is empty
 * whenever the sweeper looks. */
static bool unread_bytes(int fd)
{
    int pending = 0;
    return ioctl(fd, FIONREAD, &pending) == 0 && pending > 0;
}

/* The sweeper's check of one connection (mu held): which deadline it
 * missed, or NULL. A deadline is not held against bytes that arrived but
 * wait for their busy I/O thread. */
static const char *overdue(srv_conns *t, srv_conn *c, long long now)
{
    const char *why = NULL;
    if (c->shut || c->exempt || c->fd < 0)
        return NULL;
    long long start = first_byte(c, now);
    if (t->p.header_timeout_s > 0 && !atomic_load(&c->headers_done)) {
        /* a new connection's clock starts when it opens */
        long long from = atomic_load(&c->gen) == 0 ? c->opened : start;
        if (from && now - from > (long long)t->p.header_timeout_s * 1000)
            why = "header_timeout";
    }
    if (!why && t->p.read_timeout_s > 0 && start &&
        !atomic_load_explicit(&c->read_done, memory_order_relaxed) &&
        now - start > (long long)t->p.read_timeout_s * 1000)
        why = "read_timeout";
    return why && unread_bytes(c->fd) ? NULL : why;
}

static void *sweeper_main(void *arg)
{
    srv_conns *t = arg;
    long long limit = 0;
    if (t->p.read_timeout_s > 0)
        limit = (long long)t->p.read_timeout_s * 1000;
    if (t->p.header_timeout_s > 0 && (!limit || t->p.header_timeout_s * 1000LL < limit))
        limit = (long long)t->p.header_timeout_s * 1000;
    long long period = limit / 4 < 50 ? 50 : limit / 4 > 1000 ? 1000 : limit / 4;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec ts;
        rt_time_deadline(&ts, (int64_t)period * 1000000);
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->stop)
            break;
        long long now = (long long)rt_time_now_ms();
        size_t n_header = 0, n_read = 0;
        for (srv_conn *c = t->list; c; c = c->next) {
            const char *why = overdue(t, c, now);
            if (!why)
                continue;
            shut(t, c, why);
            n_header += why[0] == 'h';
            n_read += why[0] == 'r';
        }
        if (n_header)
            srv_log(SRV_LOG_WARN,
                    "closed %zu connection(s) whose request header did not arrive whole "
                    "within request_header_timeout_seconds=%d",
                    n_header, t->p.header_timeout_s);
        if (n_read)
            srv_log(SRV_LOG_WARN,
                    "closed %zu connection(s) whose request was not read whole within "
                    "request_read_timeout_seconds=%d",
                    n_read, t->p.read_timeout_s);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

rt_status srv_conns_new(const srv_conns_params *p, srv_conns **out, rt_err *err)
{
    *out = NULL;
    if (p->max_connections < 1)
        return rt_err_set(err, RT_ERR_INVALID, "max_connections must be positive");
    srv_conns *t = calloc(1, sizeof *t);
    if (!t)
        return rt_err_set(err, RT_ERR_NOMEM, "connections: out of memory");
    t->p = *p;
    t->refused_logged_at = -1000000;
    pthread_mutex_init(&t->mu, NULL);
    rt_time_cond_init(&t->cv);
    if (p->header_timeout_s > 0 || p->read_timeout_s > 0) {
        if (pthread_create(&t->sweeper, NULL, sweeper_main, t) != 0) {
            srv_conns_free(t);
            return rt_err_set(err, RT_ERR_NOMEM, "connections: cannot start the sweeper");
        }
        t->sweeper_on = true;
    }
    *out = t;
    return RT_OK;
}

void srv_conns_free(srv_conns *t)
{
    if (!t)
        return;
    if (t->sweeper_on) {
        pthread_mutex_lock(&t->mu);
        t->stop = true;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->sweeper, NULL);
    }
    while (t->list) {
        srv_conn *c = t->list;
        t->list = c->next;
        free(c);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}
