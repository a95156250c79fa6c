/*
 * srv_http.c — predictd's HTTP front, its start and stop: the listening
 * socket, libmicrohttpd with its own poll(2) thread pool and the options
 * that hold connections, memory and URLs to predictd's rules, the workers
 * (or, without them, the offload threads of the heavy requests) and batch
 * threads, the accept policy, libmicrohttpd's log, and the
 * systemd watchdog's probe. The rest of the front is in srv_http_request.c
 * (a request's life on its I/O thread), srv_http_answer.c (answers and the
 * routes that are not inference), srv_http_infer.c (inference, workers,
 * admission) and srv_http_batch.c (cross-request batching); what they
 * share is in srv_http_internal.h.
 *
 * The watchdog's probe does not need a free connection slot: it is a
 * socketpair handed to libmicrohttpd with MHD_add_connection, admitted
 * outside max_connections (whose libmicrohttpd-side value is set above it).
 */
#include "srv_http_internal.h"
#include "srv_limits.h"
#include "srv_sec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

srv_http_params srv_http_default_params(void)
{
    srv_http_params p;
    memset(&p, 0, sizeof p);
    p.cpus = 1;
    p.listen_fd = -1;
    return p;
}

/* The watchdog probe's address (MHD_add_connection wants one): an abstract
 * Unix socket name that is never bound. */
#define PROBE_NAME "\0predictd-watchdog-probe"
static const struct sockaddr_un PROBE_ADDR = {AF_UNIX, PROBE_NAME};
#define PROBE_ADDR_LEN (offsetof(struct sockaddr_un, sun_path) + sizeof PROBE_NAME - 1)

/* libmicrohttpd's accept policy: every new connection but the probe must
 * fit under max_connections. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    srv_http *h = cls;
    if (addrlen == PROBE_ADDR_LEN && !memcmp(addr, &PROBE_ADDR, PROBE_ADDR_LEN))
        return MHD_YES;
    return srv_conns_admit(h->conns) ? MHD_YES : MHD_NO;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    srv_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* libmicrohttpd's own limit (per I/O thread) refused a connection */
    if (strstr(msg, "reached connection limit"))
        srv_metrics_connections(h->p.metrics, -1, true, NULL);
    /* its line for a failed handshake says nothing when srv_tls.c said why */
    if (h->p.tls && strstr(msg, "handshake message out of context") &&
        srv_tls_handshake_logged())
        return;
    srv_log(SRV_LOG_WARN, "http: %s", msg);
}

static rt_status open_listener(const char *host, int port, int *fd_out, rt_err *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int e = getaddrinfo(host, ps, &hints, &res);
    if (e != 0)
        return rt_err_set(err, RT_ERR_INVALID, "rest_api_host '%s': %s", host, gai_strerror(e));
    rt_status st = RT_ERR_IO;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
            st = RT_OK;
            break;
        }
        rt_err_set(err, RT_ERR_IO, "cannot listen on %s:%d: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (st == RT_OK)
        *fd_out = fd;
    else if (err && !err->msg[0])
        rt_err_set(err, RT_ERR_IO, "cannot listen on %s:%d", host, port);
    return st;
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

/* libmicrohttpd's URL unescaping, except that "%00" stays as it is: a
 * decoded NUL would end the path early ("census%00.json" would name
 * "census"); left encoded, it is a character no route or name accepts. */
static size_t unescape_url(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    char *w = s;
    const char *r = s;
    while (*r) {
        int hi = r[0] == '%' ? rt_buf_hex_digit(r[1]) : -1;
        int lo = hi >= 0 ? rt_buf_hex_digit(r[2]) : -1;
        if (lo >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* Raises the soft limit of open files to need (at most the hard limit);
 * returns the soft limit in force. */
static rlim_t raise_fd_limit(rlim_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return need;
    if (rl.rlim_cur >= need)
        return rl.rlim_cur;
    rlim_t want = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = want;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? want : was;
}

/* max_connections in force: the configured one (the open-files limit
 * raised to fit it, a warning when it cannot be), or, when it is 0,
 * SRV_AUTO_MAX_CONNECTIONS or what the open-files limit leaves room for
 * (at least 16): a cap above that limit would let accept(2) fail first,
 * before a silent or idle connection could be closed to make room. */
static int resolve_max_connections(int configured)
{
    rlim_t want = (rlim_t)(configured > 0 ? configured : SRV_AUTO_MAX_CONNECTIONS) + SRV_FD_RESERVE;
    rlim_t got = raise_fd_limit(want);
    if (configured > 0) {
        if (got < want)
            srv_log(SRV_LOG_WARN,
                    "open files limit is %llu: max_connections=%d needs about %llu (raise "
                    "LimitNOFILE= or ulimit -n)",
                    (unsigned long long)got, configured, (unsigned long long)want);
        return configured;
    }
    int n = got >= want ? SRV_AUTO_MAX_CONNECTIONS
            : got > SRV_FD_RESERVE + 16 ? (int)(got - SRV_FD_RESERVE) : 16;
    if (n < SRV_AUTO_MAX_CONNECTIONS)
        srv_log(SRV_LOG_INFO,
                "max_connections=%d (the open files limit is %llu, %d of them kept for the "
                "daemon's own files)",
                n, (unsigned long long)got, SRV_FD_RESERVE);
    return n;
}

/* Inference workers (max_queue > 0): their contexts, the pool, the
 * adaptive admission limit and the ready-made 429 answers; else the
 * offload threads of the heavy requests and their contexts. *io_threads is
 * how many I/O threads libmicrohttpd runs then. */
static rt_status start_workers(srv_http *h, int *io_threads, rt_err *err)
{
    const srv_http_params *p = &h->p;
    const size_t max_queue = (size_t)h->cfg.max_queue_depth;
    const int max_wait_ms = h->cfg.max_queue_wait_ms;
    rt_status st;
    *io_threads = h->threads;
    if (max_queue == 0) {
        /* inference on the I/O threads, but the heavy requests' threads */
        if (p->io_threads > 0)
            *io_threads = p->io_threads;
        h->octx = calloc((size_t)h->threads, sizeof *h->octx);
        for (int i = 0; h->octx && i < h->threads; i++)
            if (!(h->octx[i] = rt_ctx_new()))
                return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
        if (!h->octx)
            return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
        return srv_pool_new(h->threads, SRV_OFFLOAD_QUEUE_MAX, srv_http_offload_job, h,
                            &h->offload, err);
    }
    /* Inference runs on `threads` workers; I/O needs few threads. */
    *io_threads = p->io_threads > 0 ? p->io_threads : (h->threads + 1) / 2;
    h->wctx = calloc((size_t)h->threads, sizeof *h->wctx);
    for (int i = 0; h->wctx && i < h->threads; i++)
        if (!(h->wctx[i] = rt_ctx_new()))
            return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
    if (!h->wctx)
        return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
    if ((st = srv_pool_new(h->threads, max_queue, srv_http_worker_job, h, &h->workers, err)) !=
        RT_OK)
        return st;
    srv_pool_set_max_wait(h->workers, max_wait_ms);
    /* with a target wait, the number waiting or running adapts to it: at
     * most what can wait plus what can run, at least what can run */
    if (max_wait_ms > 0 &&
        (st = srv_admit_new(max_queue + (size_t)h->threads, (size_t)h->threads,
                            (int64_t)max_wait_ms * 1000000, &h->admit, err)) != RT_OK)
        return st;
    for (int i = 0; i < 2; i++) {
        char msg[256];
        srv_http_busy_message(h, i == 1, msg, sizeof msg);
        h->busy[i] = srv_http_error_response(h, 429, msg); /* NULL: made per refusal */
    }
    return RT_OK;
}

/* Cross-request batching (enable_batching): its contexts and threads. */
static rt_status start_batcher(srv_http *h, rt_err *err)
{
    if (!h->cfg.enable_batching)
        return RT_OK;
    h->bctx = calloc((size_t)(h->batch.threads > 0 ? h->batch.threads : 1), sizeof *h->bctx);
    for (int i = 0; h->bctx && i < h->batch.threads; i++)
        if (!(h->bctx[i] = rt_ctx_new()))
            return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
    if (!h->bctx)
        return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
    return srv_batcher_new(&h->batch, srv_http_batch_job, h, &h->batcher, err);
}

/* libmicrohttpd on the listening socket with predictd's options and
 * io_threads I/O threads. */
static rt_status start_mhd(srv_http *h, int io_threads, rt_err *err)
{
    const srv_http_params *p = &h->p;
    /* poll(2), not epoll: libmicrohttpd 0.9.75's epoll loop takes 128
     * events per epoll_wait and, after a full batch, waits again with the
     * whole idle timeout before handling any of them, so 128 or more
     * requests arriving together (a descheduled I/O thread, a burst over
     * many keep-alive connections) sit unread until the idle timeout or
     * the header deadline; its poll loop is level-triggered and has no
     * such batch (docs/daemon.md, "HTTP and workers"). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | /* workers, batches, explains */
                     (p->tls ? MHD_USE_TLS : 0);
    /* HTTPS (srv_tls.c): the certificate through the callback, so that a
     * reload reaches new connections; the client CA makes libmicrohttpd
     * ask for a client certificate (srv_http_sec.c verifies it) */
    if (p->tls)
        srv_tls_set_current(p->tls);
    const char *ca = p->tls ? srv_tls_client_ca(p->tls) : NULL;
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, h},
        {MHD_OPTION_LISTEN_SOCKET, h->fd, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT,
         (intptr_t)(h->cfg.connection_timeout_seconds > 0 ? h->cfg.connection_timeout_seconds
                                                          : 60),
         NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)srv_http_on_completed, h},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)srv_http_on_connection, h},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)srv_http_on_request_line, h},
        /* on_accept holds clients to max_connections; libmicrohttpd splits
         * its own limit between I/O threads, so each gets all of it and
         * room for the watchdog probe */
        {MHD_OPTION_CONNECTION_LIMIT,
         (intptr_t)((unsigned)io_threads * ((unsigned)h->max_connections + SRV_PROBE_SLOTS)),
         NULL},
        /* libmicrohttpd clears this pool for every request; it holds only
         * the headers (bodies are gathered in our own buffer). */
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)SRV_CONN_MEMORY, NULL},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape_url, h},
#if MHD_VERSION >= 0x01000000
        /* refuses bare LF, folding, NUL, white space before ':' itself */
        {MHD_OPTION_CLIENT_DISCIPLINE_LVL, 1, NULL},
#endif
        /* the optional ones below, then the end */
        {MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL},
    };
    size_t n_opt = sizeof opts / sizeof opts[0] - 5;
    /* libmicrohttpd warns about a pool of one: leave it out then */
    if (io_threads > 1)
        opts[n_opt++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, io_threads, NULL};
    if (p->tls) {
        /* pointers in both fields: libmicrohttpd reads one or the other */
        void *cb = srv_tls_cert_callback();
        const char *prio = srv_tls_priority_string(p->tls);
        opts[n_opt++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, (intptr_t)cb, cb};
        opts[n_opt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, (intptr_t)prio,
                                                (void *)(uintptr_t)prio};
    }
    if (ca)
        opts[n_opt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, (intptr_t)ca,
                                                (void *)(uintptr_t)ca};
    h->mhd = MHD_start_daemon(flags, 0, on_accept, h, srv_http_on_request, h, MHD_OPTION_ARRAY,
                              opts, MHD_OPTION_END);
    if (!h->mhd)
        return rt_err_set(err, RT_ERR_IO, "http: libmicrohttpd failed to start on port %d",
                          h->port);
    return RT_OK;
}

/* Frees what srv_http_start made once nothing runs requests any more
 * (libmicrohttpd stopped or never started); the listening socket is the
 * caller's to close. */
static void free_parts(srv_http *h)
{
    srv_pool_free(h->workers);
    srv_pool_free(h->offload);
    for (int i = 0; h->octx && i < h->threads; i++)
        rt_ctx_free(h->octx[i]);
    free(h->octx);
    srv_admit_free(h->admit);
    for (int i = 0; i < 2; i++)
        if (h->busy[i])
            MHD_destroy_response(h->busy[i]);
    for (int i = 0; h->wctx && i < h->threads; i++)
        rt_ctx_free(h->wctx[i]);
    free(h->wctx);
    srv_batcher_free(h->batcher);
    for (int i = 0; h->bctx && i < h->batch.threads; i++)
        rt_ctx_free(h->bctx[i]);
    free(h->bctx);
    for (size_t i = 0; i < h->n_pool; i++)
        rt_ctx_free(h->pool[i]);
    free(h->pool);
    while (h->tstates) {
        tstate *t = h->tstates;
        h->tstates = t->next;
        rt_ctx_free(t->ctx);
        free(t);
    }
    if (h->tkey_made)
        pthread_key_delete(h->tkey);
    srv_conns_free(h->conns);   /* after libmicrohttpd closed every connection */
    srv_shadow_free(h->shadow); /* after the last request queued its run */
    srv_predlog_free(h->predlog);
    srv_tracer_free(h->tracer); /* after the last request queued its spans */
    pthread_mutex_destroy(&h->pool_mu);
    pthread_mutex_destroy(&h->conn_mu);
    size_t n;
    const srv_setting *t = srv_settings(&n);
    rt_settings_free(t, n, &h->cfg);
    free(h);
}

/* The front's own copy of c's settings (every row of the table: strings
 * copied, no models) and what follows from them. */
static rt_status take_settings(srv_http *h, const srv_config *c, int threads, rt_err *err)
{
    size_t n;
    const srv_setting *t = srv_settings(&n);
    uint64_t all = n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;
    rt_status st = rt_settings_copy(t, n, all, &h->cfg, c, err);
    if (st != RT_OK)
        return st;
    h->threads = threads;
    h->max_connections = resolve_max_connections(c->max_connections);
    snprintf(h->metrics_path, sizeof h->metrics_path, "%s", c->metrics_path ? c->metrics_path : "");
    if (c->aip_predict_route && c->n_models == 1)
        snprintf(h->aip_predict_target, sizeof h->aip_predict_target, "/v1/models/%s:predict",
                 c->models[0].name);
    h->json = rt_json_default_params();
    h->json.max_answer_bytes = c->max_answer_bytes;
    h->batch = srv_batcher_default_params();
    h->batch.max_batch_size = (size_t)c->max_batch_size;
    h->batch.timeout_us = c->batch_timeout_micros;
    h->batch.max_enqueued_batches = (size_t)c->max_enqueued_batches;
    h->batch.threads = c->num_batch_threads > 0 ? c->num_batch_threads : threads;
    return RT_OK;
}

rt_status srv_http_start(const srv_http_params *p, srv_manager *mgr, const _Atomic int *draining,
                         srv_http **out, rt_err *err)
{
    *out = NULL;
    const srv_config *c = p->cfg;
    int threads = c ? srv_config_request_threads(c, p->cpus) : 0;
    if (threads < 1 || c->max_request_bytes == 0 || c->rest_api_timeout_in_ms < 1)
        return rt_err_set(err, RT_ERR_INVALID,
                          "http: threads, max_request_bytes and timeout "
                          "must be positive");
    srv_http *h = calloc(1, sizeof *h);
    if (!h)
        return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
    h->p = *p;
    h->p.cfg = NULL; /* the caller's config may not outlive the start: h->cfg is ours */
    h->mgr = mgr;
    h->draining = draining;
    h->fd = -1;
    atomic_init(&h->probe_fd, -1);
    pthread_mutex_init(&h->pool_mu, NULL);
    pthread_mutex_init(&h->conn_mu, NULL);
    rt_status st;
    int io_threads;
    if ((st = take_settings(h, c, threads, err)) != RT_OK)
        goto fail;
    srv_conns_params cp = {h->max_connections, c->request_header_timeout_seconds,
                           c->request_read_timeout_seconds, p->metrics};
    if ((st = srv_conns_new(&cp, &h->conns, err)) != RT_OK)
        goto fail;
    if ((st = srv_shadow_new(SRV_SHADOW_QUEUE, c->shadow_queue_bytes, &h->json, &h->shadow, err)) !=
            RT_OK ||
        (st = srv_predlog_new(mgr, SRV_PREDLOG_QUEUE, c->prediction_log_queue_bytes, &h->predlog, err)) !=
            RT_OK)
        goto fail;
    if (c->tracing_otlp_endpoint &&
        (st = srv_tracer_new(c->tracing_otlp_endpoint, c->tracing_otlp_ca_file,
                                    c->tracing_sample_rate, &h->tracer, err)) !=
            RT_OK)
        goto fail;
    if (pthread_key_create(&h->tkey, NULL) != 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "http: cannot create a thread key");
        goto fail;
    }
    h->tkey_made = true;
    if (p->listen_fd >= 0) {
        h->fd = p->listen_fd;
    } else {
        if ((st = open_listener(c->rest_api_host ? c->rest_api_host : "0.0.0.0",
                                c->rest_api_port, &h->fd, err)) != RT_OK)
            goto fail;
        h->own_fd = true;
    }
    h->port = bound_port(h->fd);
    if ((st = start_workers(h, &io_threads, err)) || (st = start_batcher(h, err)) ||
        (st = start_mhd(h, io_threads, err)))
        goto fail;
    *out = h;
    return RT_OK;
fail:
    if (h->own_fd && h->fd >= 0)
        close(h->fd);
    free_parts(h);
    return st;
}

int srv_http_port(const srv_http *h)
{
    return h->port;
}

struct srv_tracer *srv_http_tracer(srv_http *h)
{
    return h ? h->tracer : NULL;
}

srv_admit *srv_http_admit(srv_http *h)
{
    return h ? h->admit : NULL;
}

void srv_http_stop(srv_http *h)
{
    if (!h)
        return;
    if (h->mhd) {
        /* Stop accepting first; then MHD leaves the socket to us. A socket
         * of our own is closed at once, so that a new connection is refused
         * (the client may try another instance) rather than left in the
         * backlog until the in-flight requests end; systemd's socket stays
         * open, its backlog waiting for the next instance. */
        MHD_socket fd = MHD_quiesce_daemon(h->mhd);
        if (fd != MHD_INVALID_SOCKET && h->own_fd) {
            close(fd);
            fd = MHD_INVALID_SOCKET;
        }
        /* Let queued and running requests finish and their answers go out
         * (bounded by the request deadline plus a margin). */
        int64_t limit = rt_time_now_ms() + h->cfg.rest_api_timeout_in_ms + 5000;
        while (atomic_load(&h->active) > 0 && rt_time_now_ms() < limit) {
            struct timespec ts = {0, 5000000L};
            nanosleep(&ts, NULL);
        }
        /* A run of a worker or an offload thread resumes its connection:
         * libmicrohttpd must still run then. Queued ones past their
         * deadline are answered 504 without running, offloaded
         * explanations end at their deadline at the latest (they check it
         * every 1,024 model rows). */
        srv_pool *pools[2] = {h->workers, h->offload};
        for (int i = 0; i < 2; i++)
            while (pools[i] && (srv_pool_depth(pools[i]) || srv_pool_running(pools[i]))) {
                struct timespec ts = {0, 5000000L};
                nanosleep(&ts, NULL);
            }
        /* Batches still waiting run now (their connections are resumed
         * while libmicrohttpd still runs); later submissions are refused. */
        srv_batcher_stop(h->batcher);
        MHD_stop_daemon(h->mhd); /* waits for the I/O threads */
        if (fd != MHD_INVALID_SOCKET && h->own_fd)
            close(fd);
    } else if (h->own_fd && h->fd >= 0) {
        close(h->fd);
    }
    free_parts(h);
}

bool srv_http_probe(srv_http *h, int timeout_ms)
{
    /* over HTTPS the probe would need a TLS client: the daemon's answer
     * is not probed then (docs/daemon.md, "systemd") */
    if (h && h->mhd && h->p.tls)
        return true;
    int sv[2];
    if (!h || !h->mhd || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
        return false;
    /* Outside max_connections (on_accept knows its address, srv_http_on_connection
     * its descriptor), through the same I/O threads and handler as clients. */
    atomic_store(&h->probe_fd, sv[0]);
    if (MHD_add_connection(h->mhd, sv[0], (const struct sockaddr *)&PROBE_ADDR,
                           (socklen_t)PROBE_ADDR_LEN) != MHD_YES) {
        atomic_store(&h->probe_fd, -1);
        close(sv[1]); /* libmicrohttpd closed sv[0] */
        return false;
    }
    int status = 0;
    rt_buf body;
    rt_buf_init(&body);
    rt_status st = srv_client_request_fd(sv[1], "watchdog", "GET", "/healthz", NULL, timeout_ms,
                                         &status, &body, NULL);
    rt_buf_free(&body);
    atomic_store(&h->probe_fd, -1);
    return st == RT_OK && status == 200;
}
