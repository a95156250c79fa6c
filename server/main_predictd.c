/*
 * main_predictd.c — predictd, the daemon: flags and config, the model
 * manager's loader thread, the HTTP server, and a main loop that turns
 * signals and config file changes into reloads and a clean stop.
 *
 * Signals use the self-pipe trick: the handler only writes the signal number
 * into a pipe that the main loop polls. (A signalfd would not do: libraries
 * such as OpenBLAS start threads before main() that do not block signals,
 * so the kernel may deliver SIGHUP to one of them.)
 *
 * The daemon's state lives in one context struct, D: the project's one
 * allowed mutable global, needed because the signal handler must find the
 * pipe.
 */
#include <cblas.h>
#include "srv.h"
#include "srv_sec.h"
#include "srv_limits.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <malloc.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

typedef struct daemon {
    srv_args args;
    srv_config *cfg;
    srv_manager *mgr;
    srv_http *http;
    srv_grpc *grpc; /* --port given: the gRPC front (server/grpc/), else NULL */
    srv_metrics *metrics;
    srv_tls *tls;   /* tls_cert_file set: HTTPS (srv_tls.c), else NULL */
    srv_auth *auth; /* auth_tokens_file set: bearer tokens (srv_auth.c), else NULL */
    srv_tf_ssl ssl; /* --ssl_config_file: the gRPC port's TLS (have_ssl), as last read */
    bool have_ssl;
    uint64_t ssl_fp; /* the fingerprint of that file's bytes */
    _Atomic int draining;
    int sig_pipe[2]; /* [0] read by the main loop, [1] written by on_signal */
    bool notified_ready;
    bool was_ready; /* readiness at the last look of the main loop */
    struct stat cfg_stat; /* of the config file when last read */
    bool have_cfg_stat;
    uint64_t cfg_fp;      /* fingerprint of the config file's bytes when last read */
    uint64_t repo_fp;     /* --model_repository: srv_repository_fingerprint when last read */
    double next_repo_check; /* when to look at the repository again */
    double next_cfg_poll; /* --model_config_file_poll_wait_seconds: next re-read */
    /* a gRPC HandleReloadConfigRequest handed to the main loop (under rpc_mu):
     * the caller's thread waits on rpc_cv until done (or closed: stopping) */
    pthread_mutex_t rpc_mu;
    pthread_cond_t rpc_cv;
    const char *rpc_text;
    size_t rpc_len;
    bool rpc_pending, rpc_done, rpc_closed;
    rt_status rpc_st;
    rt_err rpc_err;
} daemon_t;

/* The byte in the signal pipe that wakes the main loop for an RPC's reload. */
#define RPC_RELOAD_BYTE 0xffu

static daemon_t D = {.rpc_mu = PTHREAD_MUTEX_INITIALIZER,
                     .rpc_cv = PTHREAD_COND_INITIALIZER}; /* the daemon's single context */

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(D.sig_pipe[1], &b, 1) < 0) {
        /* pipe full: a signal is pending anyway */
    }
    errno = saved;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void remember_cfg_stat(daemon_t *d)
{
    d->have_cfg_stat = d->cfg->model_config_file &&
                       stat(d->cfg->model_config_file, &d->cfg_stat) == 0;
}

/* The fingerprint of the config file's bytes, 0 when it cannot be read. */
static uint64_t cfg_fingerprint(const daemon_t *d)
{
    char *text = NULL;
    size_t len = 0;
    rt_err err;
    if (!d->args.values.model_config_file ||
        rt_file_read(AT_FDCWD, d->args.values.model_config_file, 16u << 20, 0, &text, &len,
                     &err) != RT_OK)
        return 0;
    uint64_t fp = rt_hash_fingerprint64(text, len);
    free(text);
    return fp;
}

/* Reads and checks TF Serving's SSLConfig file at path (srv_tfconf_ssl,
 * then its PEM contents with srv_tls_check_pem); it holds a private key, so
 * a file others may read is refused as tls_key_file is. *fp: the bytes'
 * fingerprint. Errors start "--ssl_config_file PATH: ". */
static rt_status read_ssl_config(const char *path, srv_tf_ssl *out, uint64_t *fp, rt_err *err)
{
    static const char *const NAMES[3] = {"server_cert", "server_key", "custom_ca"};
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rt_err_set(err, RT_ERR_NOTFOUND, "--ssl_config_file %s: cannot open: %s", path,
                          strerror(errno));
    if (sb.st_mode & (S_IROTH | S_IWOTH))
        return rt_err_set(err, RT_ERR_INVALID,
                          "--ssl_config_file %s: holds server_key and is readable by others "
                          "(mode %04o); chmod 600 (or 640 with the daemon's group) it",
                          path, (unsigned)(sb.st_mode & 07777));
    char *text = NULL;
    size_t len = 0;
    rt_status st = rt_file_read(AT_FDCWD, path, 4 * SRV_TLS_MAX_PEM_BYTES, 0, &text, &len, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "--ssl_config_file");
        return st;
    }
    *fp = rt_hash_fingerprint64(text, len);
    st = srv_tfconf_ssl(text, len, out, err);
    memset(text, 0, len);
    free(text);
    if (st == RT_OK &&
        (st = srv_tls_check_pem(out->server_cert, out->server_key, out->custom_ca, NAMES,
                                err)) != RT_OK)
        srv_tf_ssl_clear(out);
    if (st != RT_OK)
        rt_err_prefix(err, "--ssl_config_file %s", path);
    return st;
}

/* SIGHUP: --ssl_config_file read again; new contents (checked, with the
 * same client_verify) serve the gRPC port's next handshakes, else the
 * running ones stay. */
static void reload_ssl_config(daemon_t *d, const char *why)
{
    const char *path = d->cfg->ssl_config_file;
    srv_tf_ssl next;
    uint64_t fp = 0;
    rt_err err = {{0}};
    if (read_ssl_config(path, &next, &fp, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "ssl_config_file reload (%s) refused, the gRPC port's running "
                "certificate stays: %s", why, err.msg);
        return;
    }
    if (fp == d->ssl_fp) {
        srv_log(SRV_LOG_INFO, "ssl_config_file reload (%s): %s unchanged, the gRPC port's "
                "certificate stays", why, path);
    } else if (next.client_verify != d->ssl.client_verify) {
        srv_log(SRV_LOG_ERROR, "ssl_config_file reload (%s) refused, the gRPC port's running "
                "certificate stays: --ssl_config_file %s: client_verify changed to %s; it "
                "takes effect at the next restart", why, path,
                next.client_verify ? "true" : "false");
    } else if (d->grpc &&
               srv_grpc_tls_set_pem(d->grpc, next.server_cert, next.server_key,
                                    next.client_verify ? next.custom_ca : NULL, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "ssl_config_file reload (%s) refused, the gRPC port's running "
                "certificate stays: %s", why, err.msg);
    } else {
        srv_log(SRV_LOG_INFO, "ssl_config_file reload (%s): %s, certificate for the gRPC "
                "port's new connections", why, path);
        srv_tf_ssl_clear(&d->ssl);
        d->ssl = next;
        d->ssl_fp = fp;
        return;
    }
    srv_tf_ssl_clear(&next);
}

/* Re-reads the TLS certificate and key, --ssl_config_file and the tokens
 * file (the files the running settings name); each keeps its old content
 * on error. */
static void reload_security(daemon_t *d, const char *why)
{
    rt_err err = {{0}};
    if (d->tls) {
        bool same = false;
        if (srv_tls_reload(d->tls, &same, &err) != RT_OK)
            srv_log(SRV_LOG_ERROR, "TLS reload (%s) refused, the running certificate stays: %s",
                    why, err.msg);
        else if (same)
            srv_log(SRV_LOG_INFO, "TLS reload (%s): certificate %s and its key unchanged, the "
                    "serving pair stays", why, d->cfg->tls_cert_file);
        else {
            srv_log(SRV_LOG_INFO, "TLS reload (%s): certificate %s for new connections", why,
                    d->cfg->tls_cert_file);
            if (!d->have_ssl)
                srv_grpc_tls_reload(d->grpc); /* the gRPC port's next handshakes */
        }
    }
    if (d->have_ssl)
        reload_ssl_config(d, why);
    if (d->auth && srv_auth_reload(d->auth, &err) != RT_OK)
        srv_log(SRV_LOG_ERROR, "auth_tokens_file reload (%s) refused, the running tokens stay: "
                "%s", why, err.msg);
}

/* Builds the config again (models: NULL, from the file or flags; else
 * those models in place of theirs) and applies it; the old one stays on
 * error (err says why). On the main loop's thread. */
static rt_status apply_config(daemon_t *d, const char *why, const char *models, size_t mlen,
                              rt_err *err)
{
    sd_notify(0, "RELOADING=1\nSTATUS=reloading the config");
    srv_config *c = NULL;
    /* Remember the file state first: a broken file is not re-read until it
     * changes again. */
    struct stat before;
    bool have = d->args.values.model_config_file && /* none: --model_repository */
                stat(d->args.values.model_config_file, &before) == 0;
    d->cfg_fp = cfg_fingerprint(d);
    rt_status st = models ? srv_config_build_models(&d->args, models, mlen, &c, err)
                          : srv_config_build(&d->args, &c, err);
    if (st == RT_OK)
        st = srv_manager_apply(d->mgr, c, err);
    if (have) {
        d->cfg_stat = before;
        d->have_cfg_stat = true;
    }
    srv_metrics_reload(d->metrics, st == RT_OK);
    srv_manager_note_reload(d->mgr, st == RT_OK, err->msg);
    if (st != RT_OK) {
        srv_log(SRV_LOG_ERROR, "config reload (%s) refused, the running config stays: %s", why,
                err->msg);
        srv_config_free(c);
        sd_notify(0, "READY=1\nSTATUS=serving (last reload refused)");
        return st;
    }
    if (c->file_system_poll_wait_seconds != d->cfg->file_system_poll_wait_seconds)
        srv_manager_set_poll(d->mgr, c->file_system_poll_wait_seconds);
    const char *later = srv_config_restart_change(c, d->cfg);
    if (later)
        srv_log(SRV_LOG_WARN, "config reload: %s changed: listener, thread, queue, batching and "
                              "limit settings take effect at the next restart; models, policies, "
                              "labels, poll interval, warm-up and drain grace now", later);
    srv_config_free(d->cfg);
    d->cfg = c;
    srv_log(SRV_LOG_INFO, "config reloaded (%s): %zu model(s)", why, c->n_models);
    sd_notify(0, "READY=1\nSTATUS=serving (config reloaded)");
    return RT_OK;
}

/* Re-reads the config file and applies it; the old one stays on error. */
static void reload(daemon_t *d, const char *why)
{
    reload_security(d, why);
    bool repo = srv_args_given(&d->args, "model_repository");
    if (repo)
        d->repo_fp = srv_repository_fingerprint(d->args.values.model_repository);
    if (!repo && !(srv_args_given(&d->args, "model_config_file"))) {
        srv_log(SRV_LOG_INFO, "reload (%s): no --model_config_file, rescanning base paths",
                why);
        srv_manager_wake(d->mgr); /* on the loader thread: signals stay answered */
        return;
    }
    rt_err err = {{0}};
    (void)apply_config(d, why, NULL, 0, &err);
}

/* gRPC's HandleReloadConfigRequest (srv_grpc_params.reload), on a gRPC
 * thread: hands models to the main loop (one request at a time) and waits
 * until it applied or refused them. */
static rt_status rpc_reload(void *arg, const char *models, size_t len, rt_err *err)
{
    daemon_t *d = arg;
    pthread_mutex_lock(&d->rpc_mu);
    while (d->rpc_pending && !d->rpc_closed)
        pthread_cond_wait(&d->rpc_cv, &d->rpc_mu);
    if (d->rpc_closed) {
        pthread_mutex_unlock(&d->rpc_mu);
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "the server is stopping");
    }
    d->rpc_text = models;
    d->rpc_len = len;
    d->rpc_pending = true;
    d->rpc_done = false;
    unsigned char b = RPC_RELOAD_BYTE;
    if (write(d->sig_pipe[1], &b, 1) < 0) {
        /* pipe full: the main loop wakes anyway and looks at rpc_pending */
    }
    while (!d->rpc_done && !d->rpc_closed)
        pthread_cond_wait(&d->rpc_cv, &d->rpc_mu);
    rt_status st = d->rpc_done ? d->rpc_st
                               : rt_err_set(err, RT_ERR_UNSUPPORTED, "the server is stopping");
    if (d->rpc_done && st != RT_OK)
        *err = d->rpc_err;
    d->rpc_pending = false;
    d->rpc_done = false;
    pthread_cond_broadcast(&d->rpc_cv);
    pthread_mutex_unlock(&d->rpc_mu);
    return st;
}

/* On the main loop: applies an RPC's pending models, if any. */
static void take_rpc(daemon_t *d)
{
    pthread_mutex_lock(&d->rpc_mu);
    bool run = d->rpc_pending && !d->rpc_done;
    const char *text = d->rpc_text;
    size_t len = d->rpc_len;
    pthread_mutex_unlock(&d->rpc_mu);
    if (!run)
        return;
    rt_err err = {{0}}; /* text stays the caller's: it waits for rpc_done */
    rt_status st = apply_config(d, "gRPC HandleReloadConfigRequest", text, len, &err);
    pthread_mutex_lock(&d->rpc_mu);
    d->rpc_st = st;
    d->rpc_err = err;
    d->rpc_done = true;
    pthread_cond_broadcast(&d->rpc_cv);
    pthread_mutex_unlock(&d->rpc_mu);
}

/* The main loop ended: a waiting or later RPC's reload is refused. */
static void close_rpc(daemon_t *d)
{
    pthread_mutex_lock(&d->rpc_mu);
    d->rpc_closed = true;
    pthread_cond_broadcast(&d->rpc_cv);
    pthread_mutex_unlock(&d->rpc_mu);
}

/* The self-pipe and the handlers of SIGHUP, SIGTERM and SIGINT; SIGPIPE
 * ignored. 0, or 1 when the pipe cannot be made. */
static int install_signals(daemon_t *d)
{
    if (pipe2(d->sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        srv_log(SRV_LOG_ERROR, "pipe: %s", strerror(errno));
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* TLS and tokens first: a bad certificate or key stops the start at once.
 * 0, or 1 after logging why. */
static int open_security(daemon_t *d)
{
    rt_err err = {{0}};
    if (d->cfg->tls_cert_file || d->cfg->tls_key_file) {
        srv_tls_params tp = {d->cfg->tls_cert_file, d->cfg->tls_key_file,
                             d->cfg->tls_client_ca_file, d->cfg->tls_min_version,
                             d->cfg->tls_priorities};
        if (srv_tls_new(&tp, &d->tls, &err) != RT_OK) {
            srv_log(SRV_LOG_ERROR, "TLS refused: %s", err.msg);
            return 1;
        }
    } else if (d->cfg->tls_client_ca_file) {
        srv_log(SRV_LOG_ERROR, "tls_client_ca_file: needs tls_cert_file and tls_key_file");
        return 1;
    }
    if (d->cfg->ssl_config_file) {
        if (read_ssl_config(d->cfg->ssl_config_file, &d->ssl, &d->ssl_fp, &err) != RT_OK) {
            srv_log(SRV_LOG_ERROR, "TLS refused: %s", err.msg);
            return 1;
        }
        d->have_ssl = true;
        if (!srv_args_given(&d->args, "port"))
            srv_log(SRV_LOG_WARN, "--ssl_config_file %s: no --port, so no gRPC port to secure "
                    "(give --port=8500 as TF Serving's default); the file was checked and is "
                    "not used", d->cfg->ssl_config_file);
        else if (d->tls)
            srv_log(SRV_LOG_INFO, "--ssl_config_file %s secures the gRPC port; the REST port "
                    "keeps tls_cert_file %s", d->cfg->ssl_config_file, d->cfg->tls_cert_file);
    }
    if (d->cfg->auth_tokens_file &&
        srv_auth_new(d->cfg->auth_tokens_file, &d->auth, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "%s", err.msg);
        return 1;
    }
    if (d->auth)
        srv_auth_set_empty_denies_all(d->auth, d->cfg->auth_tokens_empty_denies_all);
    return 0;
}

/* The model manager with the config's models, and its loader thread.
 * 0, or 1 after logging why. */
static int start_models(daemon_t *d)
{
    rt_err err = {{0}};
    if (srv_manager_new(&d->mgr, &err) != RT_OK || srv_manager_apply(d->mgr, d->cfg, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "%s", err.msg);
        return 1;
    }
    remember_cfg_stat(d);
    d->cfg_fp = cfg_fingerprint(d);
    d->next_cfg_poll = rt_time_seconds(0) + d->cfg->model_config_file_poll_wait_seconds;
    if (srv_manager_start(d->mgr, d->cfg->file_system_poll_wait_seconds, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "%s", err.msg);
        return 1;
    }
    return 0;
}

/* The one line that says how the daemon listens (threads: the request
 * threads). */
static void log_listening(const daemon_t *d, int threads, int nfds)
{
    const srv_config *c = d->cfg;
    size_t max_queue = (size_t)c->max_queue_depth;
    char queue_txt[200] = "";
    if (max_queue)
        snprintf(queue_txt, sizeof queue_txt, " and a queue of %zu", max_queue);
    if (c->enable_batching)
        snprintf(queue_txt + strlen(queue_txt), sizeof queue_txt - strlen(queue_txt),
                 "; batching :predict, :classify, :regress (max_batch_size %zu, "
                 "batch_timeout_micros %ld, max_enqueued_batches %zu, %d batch thread(s))",
                 (size_t)c->max_batch_size, (long)c->batch_timeout_micros,
                 (size_t)c->max_enqueued_batches,
                 c->num_batch_threads > 0 ? c->num_batch_threads : threads);
    srv_log(SRV_LOG_INFO, "%s listening (%s%s%s) on %s:%d%s with %d %s thread(s)%s, %zu model(s)",
            SRV_VERSION_STRING,
            d->tls ? (srv_tls_client_ca(d->tls) ? "HTTPS, mutual TLS" : "HTTPS")
                   : "plain HTTP: no tls_cert_file",
            d->auth ? ", bearer tokens" : "", d->auth ? "" : ", no auth_tokens_file", nfds > 0 ? "(socket activation)" : c->rest_api_host,
            srv_http_port(d->http), nfds > 0 ? " (fd 3)" : "", threads,
            max_queue ? "inference worker" : "request", queue_txt, c->n_models);
}

/* The address predictctl derives from rest_api_host (a wildcard means
 * loopback: main_predictctl.c's resolve_url). */
static const char *ctl_host(const char *h)
{
    return !strcmp(h, "0.0.0.0") ? "127.0.0.1" : !strcmp(h, "::") ? "::1" : h;
}

/* Socket activation: systemd's socket, not rest_api_host/rest_api_port, is
 * served. Says which address that is, and refuses (1) a config whose
 * address disagrees with it, since predictctl and health checks find the
 * daemon by the config: the port must be the socket's (or 0), and a socket
 * bound to one address must be the one predictctl connects to. */
static int check_passed_socket(const srv_config *c, int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "0";
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0 ||
        getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        srv_log(SRV_LOG_ERROR, "socket activation: fd %d: cannot read its address: %s", fd,
                strerror(errno));
        return 1;
    }
    const char *h = !strncmp(host, "::ffff:", 7) && strchr(host, '.') ? host + 7 : host;
    int port = atoi(serv);
    bool wildcard = !strcmp(h, "0.0.0.0") || !strcmp(h, "::");
    const char *want = ctl_host(c->rest_api_host);
    unsigned char buf[sizeof(struct in6_addr)];
    bool numeric = inet_pton(AF_INET, want, buf) == 1 || inet_pton(AF_INET6, want, buf) == 1;
    const char *fix = "make predictd.socket's ListenStream= and the config agree (docs/daemon.md, "
                      "\"systemd\")";
    if (c->rest_api_port != 0 && c->rest_api_port != port) {
        srv_log(SRV_LOG_ERROR,
                "socket activation: systemd's socket is %s port %d, but rest_api_port is %d: "
                "predictctl and health checks would look for the daemon on port %d; %s",
                h, port, c->rest_api_port, c->rest_api_port, fix);
        return 1;
    }
    if (!wildcard && numeric && strcmp(h, want) != 0) {
        srv_log(SRV_LOG_ERROR,
                "socket activation: systemd's socket is bound to %s, but rest_api_host %s means "
                "predictctl connects to %s; %s",
                h, c->rest_api_host, want, fix);
        return 1;
    }
    srv_log(SRV_LOG_INFO,
            "socket activation: serving systemd's socket %s%s%s:%d (fd %d), not a socket of "
            "rest_api_host/rest_api_port (%s:%d), which agree with it%s",
            strchr(h, ':') ? "[" : "", h, strchr(h, ':') ? "]" : "", port, fd,
            c->rest_api_host, c->rest_api_port,
            numeric ? "" : " (rest_api_host is a name: not compared)");
    return 0;
}

/* Metrics and the HTTP server, which reads its settings from the config,
 * on systemd's socket when one is passed. 0, or 1 after logging why. */
static int start_http(daemon_t *d)
{
    rt_err err = {{0}};
    srv_http_params hp = srv_http_default_params();
    hp.cfg = d->cfg;
    hp.cpus = srv_cpu_count(NULL, NULL);
    int threads = srv_config_request_threads(d->cfg, hp.cpus);
    if (!(d->metrics = srv_metrics_new(threads))) {
        srv_log(SRV_LOG_ERROR, "out of memory");
        return 1;
    }
    hp.metrics = d->metrics; /* the daemon's objects */
    hp.tls = d->tls;
    hp.auth = d->auth;
    /* Socket activation: systemd holds the port and hands it over. */
    int nfds = sd_listen_fds(1);
    if (nfds > 0) {
        if (sd_is_socket(SD_LISTEN_FDS_START, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
            srv_log(SRV_LOG_ERROR, "socket activation: fd %d is not a listening stream socket",
                    SD_LISTEN_FDS_START);
            return 1;
        }
        if (nfds > 1)
            srv_log(SRV_LOG_WARN, "socket activation: %d sockets passed, using the first", nfds);
        if (check_passed_socket(d->cfg, SD_LISTEN_FDS_START) != 0)
            return 1;
        hp.listen_fd = SD_LISTEN_FDS_START;
    }
    if (srv_http_start(&hp, d->mgr, &d->draining, &d->http, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "%s", err.msg);
        return 1;
    }
    log_listening(d, threads, nfds);
    return 0;
}

/* The gRPC front (docs/grpc.md) when --port is given: on the same manager,
 * metrics, limits, bearer tokens and TLS files (TLS only when REST has it,
 * mutual TLS when REST requires client certificates) as REST; with
 * --ssl_config_file, TLS from that file's contents instead (REST keeps its
 * own settings). 0, or 1 after
 * logging why. */
static int start_grpc(daemon_t *d)
{
    if (!srv_args_given(&d->args, "port"))
        return 0;
    rt_err err = {{0}};
    srv_grpc_params gp = {
        .host = d->cfg->rest_api_host,
        .port = d->cfg->port,
        .threads = srv_config_request_threads(d->cfg, srv_cpu_count(NULL, NULL)),
        .max_request_bytes = d->cfg->max_request_bytes,
        .max_answer_bytes = d->cfg->max_answer_bytes,
        .metrics = d->metrics,
        .auth = d->auth,
        .tls_cert_file = d->tls && !d->have_ssl ? d->cfg->tls_cert_file : NULL,
        .tls_key_file = d->tls && !d->have_ssl ? d->cfg->tls_key_file : NULL,
        .tls_client_ca_file = d->tls && !d->have_ssl ? d->cfg->tls_client_ca_file : NULL,
        /* TF Serving's --ssl_config_file: its contents, in place of REST's files */
        .tls_cert_pem = d->have_ssl ? d->ssl.server_cert : NULL,
        .tls_key_pem = d->have_ssl ? d->ssl.server_key : NULL,
        .tls_ca_pem = d->have_ssl && d->ssl.client_verify ? d->ssl.custom_ca : NULL,
        .admit = srv_http_admit(d->http),
        .max_queue_wait_ms = d->cfg->max_queue_wait_ms,
        .tracer = srv_http_tracer(d->http),
        .http = d->http,
        .reload = rpc_reload,
        .reload_arg = d,
    };
    if (srv_grpc_start(&gp, d->mgr, &d->draining, &d->grpc, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "%s", err.msg);
        return 1;
    }
    const char *tls = d->have_ssl ? (gp.tls_ca_pem ? "mutual TLS from --ssl_config_file"
                                                    : "TLS from --ssl_config_file")
                      : !gp.tls_cert_file     ? "plain"
                      : gp.tls_client_ca_file ? "mutual TLS"
                                              : "TLS";
    srv_log(SRV_LOG_INFO, "gRPC on port %d (%d threads, %s): grpc.health.v1.Health, "
                          "tensorflow.serving.PredictionService, "
                          "tensorflow.serving.ModelService, inference.GRPCInferenceService",
            srv_grpc_port(d->grpc), gp.threads,
            tls);
    return 0;
}

/* The main loop's own state. */
typedef struct main_loop {
    double wd_interval; /* seconds between watchdog pings, 0 = off */
    double last_ping;
    bool draining;
    double drain_until;
} main_loop;

/* Each change of readiness is one log line; the first ready one tells
 * systemd READY=1. */
static void note_readiness(daemon_t *d)
{
    char why[512] = "";
    bool ready = srv_manager_ready(d->mgr, why, sizeof why);
    if (ready != d->was_ready) {
        if (ready)
            srv_log(SRV_LOG_INFO, "ready: every model's default version answers");
        else if (d->notified_ready)
            srv_log(SRV_LOG_WARN, "not ready: %s", why);
        d->was_ready = ready;
    }
    if (!d->notified_ready && ready) {
        d->notified_ready = true;
        sd_notifyf(0, "READY=1\nSTATUS=serving %zu model(s) on port %d", d->cfg->n_models,
                   srv_http_port(d->http));
    }
}

/* The systemd watchdog ping when it is due, after /healthz answered. */
static void ping_watchdog(daemon_t *d, main_loop *l, double now)
{
    if (l->wd_interval <= 0 || now - l->last_ping < l->wd_interval)
        return;
    int probe_ms = l->wd_interval * 500 > 5000 ? 5000 : (int)(l->wd_interval * 500);
    if (srv_http_probe(d->http, probe_ms)) {
        sd_notify(0, "WATCHDOG=1");
        l->last_ping = now;
    } else {
        srv_log(SRV_LOG_WARN, "watchdog: /healthz did not answer within %d ms; "
                              "not pinging",
                probe_ms);
    }
}

/* How long to poll the signal pipe: until the next look, the end of the
 * drain or the next watchdog ping, whichever comes first. */
static int wait_ms_for(const daemon_t *d, const main_loop *l, double now)
{
    int wait_ms = d->notified_ready ? 1000 : 100;
    if (l->draining && (l->drain_until - now) * 1000 < wait_ms)
        wait_ms = (int)((l->drain_until - now) * 1000) + 1;
    if (l->wd_interval > 0) {
        double until_ping = (l->last_ping + l->wd_interval - rt_time_seconds(0)) * 1000;
        if (until_ping < wait_ms)
            wait_ms = until_ping > 0 ? (int)until_ping + 1 : 0;
    }
    return wait_ms;
}

/* A signal from the pipe: SIGHUP reloads; SIGTERM or SIGINT starts the
 * drain, or stops when draining already or with no drain grace. True: stop. */
static bool take_signal(daemon_t *d, main_loop *l, unsigned char sig)
{
    if (sig == SIGHUP) {
        reload(d, "SIGHUP");
        return false;
    }
    const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (l->draining || d->cfg->drain_grace_seconds == 0) {
        srv_log(SRV_LOG_INFO, "%s: stopping after in-flight requests finish", name);
        return true;
    }
    l->draining = true;
    atomic_store(&d->draining, 1);
    l->drain_until = rt_time_seconds(0) + d->cfg->drain_grace_seconds;
    sd_notifyf(0, "STOPPING=1\nSTATUS=draining for %d s", d->cfg->drain_grace_seconds);
    srv_log(SRV_LOG_INFO, "%s: draining: readyz answers 503, requests are served for "
                          "%d s more (a second signal stops at once)",
            name, d->cfg->drain_grace_seconds);
    return false;
}

/* Reloads when the config file changed: its stat at once, its bytes every
 * model_config_file_poll_wait_seconds. */
static void watch_config(daemon_t *d)
{
    /* --model_repository: its model folders and their config.json files,
     * looked at every file_system_poll_wait_seconds (at least once a
     * second); a change reloads (models added and removed). */
    if (srv_args_given(&d->args, "model_repository") && rt_time_seconds(0) >= d->next_repo_check) {
        int every = d->cfg->file_system_poll_wait_seconds;
        d->next_repo_check = rt_time_seconds(0) + (every > 0 ? every : 1);
        uint64_t fp = srv_repository_fingerprint(d->args.values.model_repository);
        if (fp != 0 && fp != d->repo_fp)
            reload(d, "model_repository changed");
    }
    if (srv_args_given(&d->args, "model_config_file")) {
        struct stat sb;
        if (stat(d->args.values.model_config_file, &sb) == 0 &&
            (!d->have_cfg_stat || !same_file_state(&sb, &d->cfg_stat)))
            reload(d, "config file changed");
    }
    /* TF Serving's periodic re-read: catches changes the stat check
     * cannot see (same inode, size and mtime); reloads only when the
     * bytes differ from those last read. */
    int poll_s = d->cfg->model_config_file_poll_wait_seconds;
    if (poll_s > 0 && rt_time_seconds(0) >= d->next_cfg_poll) {
        d->next_cfg_poll = rt_time_seconds(0) + poll_s;
        uint64_t fp = cfg_fingerprint(d);
        if (fp != 0 && fp != d->cfg_fp)
            reload(d, "model_config_file_poll_wait_seconds: the file's bytes changed");
    }
}

/* Readiness, the watchdog, signals and config changes until a stop signal
 * (after the drain) or a failed poll. */
static void main_loop_run(daemon_t *d)
{
    main_loop l = {0};
    uint64_t wd_usec = 0;
    if (sd_watchdog_enabled(1, &wd_usec) > 0 && wd_usec > 0) {
        l.wd_interval = (double)wd_usec / 2e6;
        srv_log(SRV_LOG_INFO, "systemd watchdog: pinging every %.1f s while requests are "
                              "answered", l.wd_interval);
    }
    for (;;) {
        note_readiness(d);
        double now = rt_time_seconds(0);
        ping_watchdog(d, &l, now);
        if (l.draining && now >= l.drain_until)
            break;
        struct pollfd pfd = {.fd = d->sig_pipe[0], .events = POLLIN};
        int pr = poll(&pfd, 1, wait_ms_for(d, &l, now));
        if (pr < 0 && errno != EINTR) {
            srv_log(SRV_LOG_ERROR, "poll: %s", strerror(errno));
            break;
        }
        if (pr > 0) {
            unsigned char sig = 0;
            if (read(d->sig_pipe[0], &sig, 1) != 1)
                continue;
            if (sig == RPC_RELOAD_BYTE) {
                take_rpc(d);
                continue;
            }
            if (take_signal(d, &l, sig))
                break;
            continue;
        }
        take_rpc(d); /* one whose byte the full pipe did not take */
        if (!l.draining)
            watch_config(d);
    }
}

static int run(daemon_t *d)
{
    if (install_signals(d) || open_security(d) || start_models(d))
        return 1;
    if (srv_args_given(&d->args, "port")) /* gRPC starts after REST: it uses its admission */
        srv_manager_set_starting(d->mgr, "the gRPC port");
    if (start_http(d) || start_grpc(d))
        return 1;
    srv_manager_set_starting(d->mgr, NULL);
    main_loop_run(d);
    close_rpc(d);
    atomic_store(&d->draining, 1);
    sd_notify(0, "STOPPING=1\nSTATUS=stopping: finishing in-flight requests");
    srv_grpc_stop(d->grpc); /* in-flight calls finish, new ones get UNAVAILABLE */
    d->grpc = NULL;
    srv_http_stop(d->http); /* in-flight requests finish */
    d->http = NULL;
    srv_log(SRV_LOG_INFO, "stopped");
    return 0;
}

int main(int argc, char **argv)
{
    D.sig_pipe[0] = D.sig_pipe[1] = -1;
    rt_err err = {{0}};
    int rc = 2;
    if (srv_args_parse(argc, argv, &D.args, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "%s", err.msg);
        char *text = srv_args_usage(false);
        if (text)
            fputs(text, stderr);
        free(text);
        goto out;
    }
    if (D.args.help || D.args.help_config) {
        char *text = srv_args_usage(D.args.help_config);
        if (!text) {
            srv_log(SRV_LOG_ERROR, "out of memory");
            goto out;
        }
        fputs(text, stdout);
        free(text);
        rc = 0;
        goto out;
    }
    if (D.args.version) {
        puts(SRV_VERSION_STRING);
        rc = 0;
        goto out;
    }
    /* The container contracts' variables (TF Serving's image, Vertex AI). */
    if (srv_args_env(&D.args, getenv, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "environment refused: %s", err.msg);
        goto out;
    }
    for (size_t i = 0; i < D.args.n_notes; i++)
        srv_log(SRV_LOG_INFO, "environment: %s", D.args.notes[i]);
    /* what the repository held when read: a change after it reloads */
    if (srv_args_given(&D.args, "model_repository"))
        D.repo_fp = srv_repository_fingerprint(D.args.values.model_repository);
    if (srv_config_build(&D.args, &D.cfg, &err) != RT_OK) {
        srv_log(SRV_LOG_ERROR, "config refused: %s", err.msg);
        goto out;
    }
    for (size_t i = 0; i < D.args.n_warnings; i++)
        srv_log(SRV_LOG_WARN, "%s", D.args.warnings[i]);
    /* Each request thread runs its own small matrix products: OpenBLAS's own
     * thread pool would only compete with them for the same cores. */
    openblas_set_num_threads(1);
    /* Request bodies and answers over 256 KiB get their own mapping, given
     * back when freed: with glibc's default (a threshold that rises to the
     * largest block freed) a burst of large bodies would stay in the heap. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    rc = run(&D);
out:
    srv_grpc_stop(D.grpc);
    srv_http_stop(D.http);
    srv_manager_free(D.mgr);
    srv_metrics_free(D.metrics);
    srv_tls_free(D.tls);
    srv_auth_free(D.auth);
    srv_tf_ssl_clear(&D.ssl);
    srv_config_free(D.cfg);
    srv_args_free(&D.args);
    for (int i = 0; i < 2; i++)
        if (D.sig_pipe[i] >= 0)
            close(D.sig_pipe[i]);
    return rc;
}
