/*
 * srv_client.c — a small blocking HTTP/1.1 client for predictctl and the
 * daemon's watchdog probe: one request per connection (Connection: close),
 * a deadline for the whole exchange, Content-Length or read-to-EOF bodies.
 */
#include "srv.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_RESPONSE (64u << 20)

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static bool wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - now_ms();
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
static int dial(const char *host, int port, double deadline, rt_err *err)
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

/* The request on connected socket fd (non-blocking; closed here) before
 * deadline; name ("host:port") is the Host header and names the peer in
 * messages. As srv_client_request otherwise. */
static rt_status exchange(int fd, const char *name, const char *method, const char *path,
                          const char *body, double deadline, int *status, rt_buf *out,
                          rt_err *err)
{
    rt_buf req, resp;
    rt_buf_init(&req);
    rt_buf_init(&resp);
    rt_status st = RT_ERR_IO;
    size_t blen = body ? strlen(body) : 0;
    if (rt_buf_printf(&req,
                      "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      method, path, name, blen) != 0 ||
        (blen && rt_buf_append(&req, body, blen) != 0)) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t off = 0; off < req.len;) {
        if (!wait_fd(fd, POLLOUT, deadline)) {
            rt_err_set(err, RT_ERR_IO, "%s: timed out sending", name);
            goto out;
        }
        ssize_t n = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            rt_err_set(err, RT_ERR_IO, "%s: send: %s", name, strerror(errno));
            goto out;
        }
        if (n > 0)
            off += (size_t)n;
    }
    for (;;) {
        if (!wait_fd(fd, POLLIN, deadline)) {
            rt_err_set(err, RT_ERR_IO, "%s: timed out waiting for the answer", name);
            goto out;
        }
        if (rt_buf_reserve(&resp, 65536) != 0) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        ssize_t n = recv(fd, resp.data + resp.len, 65536, 0);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            rt_err_set(err, RT_ERR_IO, "%s: recv: %s", name, strerror(errno));
            goto out;
        }
        resp.len += (size_t)n;
        resp.data[resp.len] = '\0';
        if (resp.len > MAX_RESPONSE) {
            st = rt_err_set(err, RT_ERR_LIMIT, "answer larger than %u bytes", MAX_RESPONSE);
            goto out;
        }
    }
    const char *hdr_end = resp.data ? strstr(resp.data, "\r\n\r\n") : NULL;
    int code = 0;
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
    close(fd);
    rt_buf_free(&req);
    rt_buf_free(&resp);
    return st;
}

rt_status srv_client_request(const char *host, int port, const char *method, const char *path,
                             const char *body, int timeout_ms, int *status, rt_buf *out,
                             rt_err *err)
{
    double deadline = now_ms() + timeout_ms;
    int fd = dial(host, port, deadline, err);
    if (fd < 0)
        return RT_ERR_IO;
    char name[300];
    snprintf(name, sizeof name, "%s:%d", host, port);
    return exchange(fd, name, method, path, body, deadline, status, out, err);
}

rt_status srv_client_request_fd(int fd, const char *name, const char *method, const char *path,
                                const char *body, int timeout_ms, int *status, rt_buf *out,
                                rt_err *err)
{
    return exchange(fd, name, method, path, body, now_ms() + timeout_ms, status, out, err);
}
