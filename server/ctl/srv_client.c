/*
 * srv_client.c — a small blocking HTTP/1.1 client for predictctl and the
 * daemon's watchdog probe: one request per connection (Connection: close),
 * a deadline for the whole exchange, Content-Length or read-to-EOF bodies.
 * With srv_client_opts (srv_sec.h): HTTPS through GnuTLS (the server's
 * certificate verified against a CA file or the system's trust store, and
 * its name or IP address checked) and a bearer token.
 */
#include "srv.h"
#include "srv_limits.h"
#include "srv_sec.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - rt_time_now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)left + 1);
        if (r > 0)
            return true;
        if (r == 0 || errno != EINTR)
            return false;
    }
}

/* Connects to host:port before the deadline; -1 with err on failure. */
static int dial(const char *host, int port, int64_t deadline, rt_err *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int e = getaddrinfo(host, ps, &hints, &res);
    if (e != 0) {
        rt_err_set(err, RT_ERR_INVALID, "%s: %s", host, gai_strerror(e));
        return -1;
    }
    int fd = -1;
    rt_err_set(err, RT_ERR_IO, "cannot connect to %s:%d", host, port);
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        int se = 0;
        socklen_t sl = sizeof se;
        if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &se, &sl) == 0 && se == 0)
            break;
        rt_err_set(err, RT_ERR_IO, "cannot connect to %s:%d: %s", host, port,
                   strerror(se ? se : errno ? errno : ETIMEDOUT));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* A TLS session on fd for host, handshaken before deadline; NULL with err
 * on failure (a certificate that does not verify is named). */
/* What a failed TLS exchange most likely means, for the operator: the
 * daemon's alert about the client certificate (missing, or not one its
 * tls_client_ca_file signed), or a daemon that does not speak TLS. */
static _Thread_local int tls_last; /* the last TLS error io() saw (for tls_hint) */

#define HINT_PLAIN " (is the daemon serving plain HTTP? try --url http://...)"
#define HINT_NO_CERT " (the daemon requires a client certificate: give --cert FILE --key FILE)"
#define HINT_REFUSED                                                                          \
    " (the daemon refused the client certificate of --cert: is it signed by the daemon's "    \
    "tls_client_ca_file, unexpired, with the clientAuth purpose?)"

static const char *tls_hint(gnutls_session_t s, int r, const srv_client_opts *o)
{
    if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
        gnutls_alert_description_t a = gnutls_alert_get(s);
        bool cert_alert = a == GNUTLS_A_CERTIFICATE_REQUIRED || a == GNUTLS_A_BAD_CERTIFICATE ||
                          a == GNUTLS_A_UNKNOWN_CA || a == GNUTLS_A_HANDSHAKE_FAILURE ||
                          a == GNUTLS_A_CERTIFICATE_UNKNOWN ||
                          a == GNUTLS_A_UNSUPPORTED_CERTIFICATE ||
                          a == GNUTLS_A_CERTIFICATE_EXPIRED || a == GNUTLS_A_ACCESS_DENIED;
        if (cert_alert)
            return o->cert_file ? HINT_REFUSED : HINT_NO_CERT;
    }
    if (r == GNUTLS_E_UNEXPECTED_PACKET_LENGTH || r == GNUTLS_E_UNEXPECTED_PACKET ||
        r == GNUTLS_E_UNSUPPORTED_VERSION_PACKET)
        return HINT_PLAIN;
    return "";
}

/* The hint for a TLS connection the daemon broke off after the handshake:
 * its alert when it sent one; else, when it had asked for a client
 * certificate, that one is missing or refused (TLS 1.3 checks it after the
 * client's handshake is over). */
static const char *closed_hint(gnutls_session_t s, const srv_client_opts *o)
{
    const char *h = tls_hint(s, tls_last, o);
    if (!*h && gnutls_certificate_client_get_request_status(s))
        h = o->cert_file ? HINT_REFUSED : HINT_NO_CERT;
    return h;
}

static gnutls_session_t tls_open(int fd, const char *host, const srv_client_opts *o,
                                 int64_t deadline, gnutls_certificate_credentials_t *cred,
                                 rt_err *err)
{
    gnutls_session_t s = NULL;
    int r = gnutls_certificate_allocate_credentials(cred);
    if (r >= 0)
        r = o->ca_file ? gnutls_certificate_set_x509_trust_file(*cred, o->ca_file,
                                                                GNUTLS_X509_FMT_PEM)
                       : gnutls_certificate_set_x509_system_trust(*cred);
    if (r <= 0) {
        rt_err_set(err, RT_ERR_INVALID, "%s: no CA certificate to verify the server with%s%s",
                   o->ca_file ? o->ca_file : "the system trust store", r < 0 ? ": " : "",
                   r < 0 ? gnutls_strerror(r) : "");
        return NULL;
    }
    if (o->cert_file && o->key_file &&
        (r = gnutls_certificate_set_x509_key_file(*cred, o->cert_file, o->key_file,
                                                  GNUTLS_X509_FMT_PEM)) < 0) {
        rt_err_set(err, RT_ERR_INVALID, "client certificate %s with key %s: %s", o->cert_file,
                   o->key_file, gnutls_strerror(r));
        return NULL;
    }
    if ((r = gnutls_init(&s, GNUTLS_CLIENT | GNUTLS_NONBLOCK)) < 0 ||
        (r = gnutls_set_default_priority(s)) < 0 ||
        (r = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, *cred)) < 0) {
        rt_err_set(err, RT_ERR_NOMEM, "TLS: %s", gnutls_strerror(r));
        if (s)
            gnutls_deinit(s);
        return NULL;
    }
    bool ip = strspn(host, "0123456789.") == strlen(host) || strchr(host, ':');
    if (!ip)
        gnutls_server_name_set(s, GNUTLS_NAME_DNS, host, strlen(host));
    gnutls_session_set_verify_cert(s, host, 0);
    gnutls_transport_set_int(s, fd);
    gnutls_handshake_set_timeout(s, 0);
    while ((r = gnutls_handshake(s)) < 0) {
        if (gnutls_error_is_fatal(r)) {
            if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
                gnutls_datum_t why = {NULL, 0};
                gnutls_certificate_verification_status_print(
                    gnutls_session_get_verify_cert_status(s), GNUTLS_CRT_X509, &why, 0);
                rt_err_set(err, RT_ERR_IO, "%s: TLS: the server's certificate: %s", host,
                           why.data ? (char *)why.data : "does not verify");
                gnutls_free(why.data);
            } else {
                /* closed during the handshake: most likely not a TLS port */
                rt_err_set(err, RT_ERR_IO, "%s: TLS handshake: %s%s", host,
                           gnutls_strerror(r),
                           r == GNUTLS_E_PREMATURE_TERMINATION ? HINT_PLAIN
                                                               : tls_hint(s, r, o));
            }
            gnutls_deinit(s);
            return NULL;
        }
        if (!wait_fd(fd, gnutls_record_get_direction(s) ? POLLOUT : POLLIN, deadline)) {
            rt_err_set(err, RT_ERR_IO, "%s: timed out in the TLS handshake", host);
            gnutls_deinit(s);
            return NULL;
        }
    }
    return s;
}

/* send/recv on fd, or through the TLS session s: bytes moved, 0 at the
 * end, -1 with errno EAGAIN (wait), else -2 with msg set. */
static ssize_t io(gnutls_session_t s, int fd, bool out, void *p, size_t n, const char **msg)
{
    if (!s) {
        ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (r < 0 && errno != EAGAIN && errno != EINTR) {
            *msg = strerror(errno);
            return -2;
        }
        if (r < 0)
            errno = EAGAIN;
        return r;
    }
    ssize_t r = out ? gnutls_record_send(s, p, n) : gnutls_record_recv(s, p, n);
    if (r >= 0)
        return r;
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
        errno = EAGAIN;
        return -1;
    }
    if (!out && r == GNUTLS_E_PREMATURE_TERMINATION) {
        tls_last = (int)r;
        return 0;
    } /* closed without close_notify: the body ends at EOF anyway */
    *msg = gnutls_strerror((int)r);
    tls_last = (int)r;
    return -2;
}

/* The request on connected socket fd (non-blocking; closed here) before
 * deadline; name ("host:port") is the Host header and names the peer in
 * messages; host is the name the server's certificate must carry (o may be
 * NULL: plain HTTP, no token). As srv_client_request otherwise. */
static rt_status exchange(int fd, const char *name, const char *host, const srv_client_opts *o,
                          const char *method, const char *path, const char *body,
                          int64_t deadline, int *status, rt_buf *out, rt_err *err)
{
    rt_buf req, resp;
    rt_buf_init(&req);
    rt_buf_init(&resp);
    rt_status st = RT_ERR_IO;
    gnutls_session_t tls = NULL;
    gnutls_certificate_credentials_t cred = NULL;
    const char *msg = "";
    size_t blen = body ? strlen(body) : 0;
    if (rt_buf_printf(&req,
                      "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                      method, path, name, blen) != 0 ||
        (o && o->token && rt_buf_printf(&req, "Authorization: Bearer %s\r\n", o->token) != 0) ||
        rt_buf_append(&req, "\r\n", 2) != 0 || (blen && rt_buf_append(&req, body, blen) != 0)) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (o && o->tls && !(tls = tls_open(fd, host, o, deadline, &cred, err)))
        goto out;
    for (size_t off = 0; off < req.len;) {
        if (!wait_fd(fd, POLLOUT, deadline)) {
            rt_err_set(err, RT_ERR_IO, "%s: timed out sending", name);
            goto out;
        }
        ssize_t n = io(tls, fd, true, req.data + off, req.len - off, &msg);
        if (n == -2) {
            rt_err_set(err, RT_ERR_IO, "%s: send: %s%s", name, msg,
                       tls ? closed_hint(tls, o) : "");
            goto out;
        }
        if (n > 0)
            off += (size_t)n;
    }
    for (;;) {
        if (!(tls && gnutls_record_check_pending(tls) > 0) && !wait_fd(fd, POLLIN, deadline)) {
            rt_err_set(err, RT_ERR_IO, "%s: timed out waiting for the answer", name);
            goto out;
        }
        if (rt_buf_reserve(&resp, 65536) != 0) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        ssize_t n = io(tls, fd, false, resp.data + resp.len, 65536, &msg);
        if (n == 0)
            break;
        if (n < 0) {
            if (n == -1)
                continue;
            rt_err_set(err, RT_ERR_IO, "%s: recv: %s%s", name, msg,
                       tls ? closed_hint(tls, o) : "");
            goto out;
        }
        resp.len += (size_t)n;
        resp.data[resp.len] = '\0';
        if (resp.len > SRV_CLIENT_MAX_RESPONSE) {
            st = rt_err_set(err, RT_ERR_LIMIT, "answer larger than %u bytes", SRV_CLIENT_MAX_RESPONSE);
            goto out;
        }
    }
    const char *hdr_end = resp.data ? strstr(resp.data, "\r\n\r\n") : NULL;
    int code = 0;
    if (!resp.len && tls && gnutls_certificate_client_get_request_status(tls)) {
        /* the daemon asked for a client certificate, then closed unanswered */
        st = rt_err_set(err, RT_ERR_IO, "%s: the daemon closed the TLS connection without an "
                        "answer%s", name,
                        o->cert_file ? HINT_REFUSED : HINT_NO_CERT);
        goto out;
    }
    if (!hdr_end || sscanf(resp.data, "HTTP/1.%*d %d", &code) != 1 || code < 100 || code > 599) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: not an HTTP answer", name);
        goto out;
    }
    const char *b = hdr_end + 4;
    if (rt_buf_append(out, b, resp.len - (size_t)(b - resp.data)) != 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    *status = code;
    st = RT_OK;
out:
    if (tls)
        gnutls_deinit(tls);
    if (cred)
        gnutls_certificate_free_credentials(cred);
    close(fd);
    rt_buf_free(&req);
    rt_buf_free(&resp);
    return st;
}

rt_status srv_client_request(const char *host, int port, const char *method, const char *path,
                             const char *body, int timeout_ms, int *status, rt_buf *out,
                             rt_err *err)
{
    int64_t deadline = rt_time_now_ms() + timeout_ms;
    int fd = dial(host, port, deadline, err);
    if (fd < 0)
        return RT_ERR_IO;
    char name[300];
    snprintf(name, sizeof name, "%s:%d", host, port);
    return exchange(fd, name, host, NULL, method, path, body, deadline, status, out, err);
}

rt_status srv_client_request_opts(const srv_client_opts *o, const char *host, int port,
                                  const char *method, const char *path, const char *body,
                                  int timeout_ms, int *status, rt_buf *out, rt_err *err)
{
    int64_t deadline = rt_time_now_ms() + timeout_ms;
    int fd = dial(host, port, deadline, err);
    if (fd < 0)
        return RT_ERR_IO;
    char name[300];
    snprintf(name, sizeof name, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    return exchange(fd, name, host, o, method, path, body, deadline, status, out, err);
}

rt_status srv_client_request_fd(int fd, const char *name, const char *method, const char *path,
                                const char *body, int timeout_ms, int *status, rt_buf *out,
                                rt_err *err)
{
    return exchange(fd, name, name, NULL, method, path, body, rt_time_now_ms() + timeout_ms, status,
                    out, err);
}
