/*
 * srv_trace_post.c — the exporter's connection to the OTLP/HTTP collector
 * (srv_trace_internal.h): the endpoint parsed once, then per batch a new
 * connection, one POST with Connection: close, and the answer's status
 * line. https goes through GnuTLS (the library the REST port's TLS uses):
 * the collector's chain checked against tracing.otlp_ca_file or the system
 * CA store, and its name against the endpoint's host (SNI for a DNS name).
 * Every step has a timeout, so a collector that is down or slow costs the
 * exporter thread at most a few seconds a batch and requests nothing.
 */
#include "srv_trace_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

rt_status srv_otlp_target_init(srv_otlp_target *t, const char *endpoint, const char *ca_file,
                               rt_err *err)
{
    memset(t, 0, sizeof *t);
    size_t skip = !strncmp(endpoint, "http://", 7) ? 7 : !strncmp(endpoint, "https://", 8) ? 8 : 0;
    if (!skip)
        return rt_err_set(err, RT_ERR_INVALID,
                          "tracing.otlp_endpoint %.200s: must be http://HOST[:PORT]/PATH or "
                          "https://HOST[:PORT]/PATH",
                          endpoint);
    t->tls = skip == 8;
    const char *hp = endpoint + skip, *slash = strchr(hp, '/');
    size_t hl = slash ? (size_t)(slash - hp) : strlen(hp);
    const char *colon = memchr(hp, ':', hl);
    size_t nl = colon ? (size_t)(colon - hp) : hl;
    if (nl == 0 || nl >= sizeof t->host ||
        (colon && (hl - nl - 1 == 0 || hl - nl - 1 >= sizeof t->port)) ||
        (slash && strlen(slash) >= sizeof t->path))
        return rt_err_set(err, RT_ERR_INVALID, "tracing.otlp_endpoint %.200s: not a URL",
                          endpoint);
    memcpy(t->host, hp, nl);
    if (colon)
        memcpy(t->port, colon + 1, hl - nl - 1);
    else
        snprintf(t->port, sizeof t->port, "%s", t->tls ? "443" : "80");
    snprintf(t->path, sizeof t->path, "%s", slash ? slash : "/");
    if (!t->tls) {
        if (ca_file)
            return rt_err_set(err, RT_ERR_INVALID,
                              "tracing.otlp_ca_file: only for an https:// otlp_endpoint");
        return RT_OK;
    }
    gnutls_certificate_credentials_t cred;
    if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS)
        return rt_err_set(err, RT_ERR_NOMEM, "tracing: out of memory");
    int n = ca_file ? gnutls_certificate_set_x509_trust_file(cred, ca_file, GNUTLS_X509_FMT_PEM)
                    : gnutls_certificate_set_x509_system_trust(cred);
    if (n <= 0) {
        gnutls_certificate_free_credentials(cred);
        if (ca_file)
            return rt_err_set(err, RT_ERR_INVALID,
                              "tracing.otlp_ca_file %.200s: no PEM certificate read (%s)",
                              ca_file, n < 0 ? gnutls_strerror(n) : "none in the file");
        return rt_err_set(err, RT_ERR_INVALID,
                          "tracing.otlp_endpoint %.200s: the system CA store gave no "
                          "certificate (%s); give tracing.otlp_ca_file",
                          endpoint, n < 0 ? gnutls_strerror(n) : "empty");
    }
    t->cred = cred;
    return RT_OK;
}

void srv_otlp_target_free(srv_otlp_target *t)
{
    if (t && t->cred)
        gnutls_certificate_free_credentials(t->cred);
    if (t)
        t->cred = NULL;
}

/* A TCP connection to t within the timeout, left blocking with send and
 * receive timeouts; -1 when none. */
static int dial(const srv_otlp_target *t)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(t->host, t->port, &hints, &ai) != 0 || !ai)
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int e = 0, r;
        socklen_t el = sizeof e;
        if (errno == EINPROGRESS)
            do
                r = poll(&p, 1, SRV_TRACE_IO_TIMEOUT_MS);
            while (r < 0 && errno == EINTR);
        else
            r = -1;
        if (r != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return -1;
    struct timeval tv = {SRV_TRACE_IO_TIMEOUT_MS / 1000, (SRV_TRACE_IO_TIMEOUT_MS % 1000) * 1000};
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One connection: a socket, and over https its TLS session. */
typedef struct otlp_link {
    int fd;
    gnutls_session_t tls; /* NULL: plain TCP */
} otlp_link;

/* The TLS handshake over l->fd: the chain verified against t's CAs, the
 * certificate's name against t->host. */
static bool handshake(const srv_otlp_target *t, otlp_link *l)
{
    if (gnutls_init(&l->tls, GNUTLS_CLIENT) != GNUTLS_E_SUCCESS) {
        l->tls = NULL;
        return false;
    }
    struct in6_addr a6;
    struct in_addr a4;
    bool ip = inet_pton(AF_INET, t->host, &a4) == 1 || inet_pton(AF_INET6, t->host, &a6) == 1;
    if (gnutls_set_default_priority(l->tls) != GNUTLS_E_SUCCESS ||
        gnutls_credentials_set(l->tls, GNUTLS_CRD_CERTIFICATE, t->cred) != GNUTLS_E_SUCCESS ||
        (!ip && gnutls_server_name_set(l->tls, GNUTLS_NAME_DNS, t->host, strlen(t->host)) !=
                    GNUTLS_E_SUCCESS)) /* SNI names a host, never an address (RFC 6066) */
        return false;
    gnutls_session_set_verify_cert(l->tls, t->host, 0);
    gnutls_transport_set_int(l->tls, l->fd);
    gnutls_handshake_set_timeout(l->tls, SRV_TRACE_IO_TIMEOUT_MS);
    int r;
    do
        r = gnutls_handshake(l->tls);
    while (r < 0 && !gnutls_error_is_fatal(r) && r != GNUTLS_E_AGAIN);
    return r == GNUTLS_E_SUCCESS;
}

static bool send_all(const otlp_link *l, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = l->tls ? gnutls_record_send(l->tls, p, n) : send(l->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (l->tls ? w == GNUTLS_E_INTERRUPTED : errno == EINTR))
            continue;
        if (w <= 0) /* an error, or a timeout (EAGAIN, GNUTLS_E_AGAIN) */
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Some bytes of the answer within the timeout. GnuTLS answers
 * GNUTLS_E_AGAIN at once after a TLS 1.3 post-handshake message (the
 * session tickets a server sends), so AGAIN is tried again until the
 * deadline; the socket's own timeout bounds each wait. */
static ssize_t recv_some(const otlp_link *l, char *p, size_t n)
{
    int64_t deadline = rt_time_now_ns() + (int64_t)SRV_TRACE_IO_TIMEOUT_MS * 1000000;
    for (;;) {
        ssize_t r = l->tls ? gnutls_record_recv(l->tls, p, n) : recv(l->fd, p, n, 0);
        bool again = l->tls ? r == GNUTLS_E_INTERRUPTED || r == GNUTLS_E_AGAIN : errno == EINTR;
        if (r < 0 && again && rt_time_now_ns() < deadline)
            continue;
        return r;
    }
}

/* Reads the collector's answer: true for a 2xx status line. Reads on to
 * its end (Content-Length bytes after the head, else the collector's close
 * of a Connection: close exchange; at most SRV_TRACE_ANSWER_MAX bytes
 * within the timeout), so that closing does not reset the collector's
 * last write. */
static bool read_answer(const otlp_link *l)
{
    char buf[4096];
    size_t got = 0, body_at = 0, total = 0;
    long long want = -1; /* the body's length, -1 unknown */
    int64_t until = rt_time_now_ns() + (int64_t)SRV_TRACE_IO_TIMEOUT_MS * 1000000;
    bool ok = false, head_done = false;
    while (total < SRV_TRACE_ANSWER_MAX && rt_time_now_ns() < until) {
        size_t room = head_done ? sizeof buf : sizeof buf - 1 - got;
        ssize_t r = recv_some(l, head_done ? buf : buf + got, room);
        if (r <= 0)
            break;
        total += (size_t)r;
        if (!head_done) {
            got += (size_t)r;
            buf[got] = '\0';
            if (got >= 12)
                ok = !strncmp(buf, "HTTP/1.", 7) && buf[9] == '2';
            char *end = strstr(buf, "\r\n\r\n");
            if (!end && got + 1 < sizeof buf)
                continue;
            head_done = true;
            body_at = end ? (size_t)(end + 4 - buf) : got;
            for (char *h = buf; end && h < end; h = strstr(h, "\r\n") + 2)
                if (!strncasecmp(h, "Content-Length:", 15))
                    want = strtoll(h + 15, NULL, 10);
            total = got - body_at; /* body bytes read so far */
        }
        if (want >= 0 && total >= (size_t)want)
            break;
    }
    return ok;
}

bool srv_otlp_post(const srv_otlp_target *t, const rt_buf *body)
{
    otlp_link l = {dial(t), NULL};
    bool ok = false;
    if (l.fd < 0 || (t->tls && !handshake(t, &l)))
        goto out;
    char head[1024];
    int hn = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\nUser-Agent: predictd\r\n\r\n",
                      t->path, t->host, t->port, body->len);
    if (hn < 0 || (size_t)hn >= sizeof head || !send_all(&l, head, (size_t)hn) ||
        !send_all(&l, body->data, body->len))
        goto out;
    ok = read_answer(&l);
out:
    if (l.tls) {
        if (ok)
            gnutls_bye(l.tls, GNUTLS_SHUT_WR);
        gnutls_deinit(l.tls);
    }
    if (l.fd >= 0)
        close(l.fd);
    return ok;
}
