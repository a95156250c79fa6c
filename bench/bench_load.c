/*
 * bench_load.c — a constant-rate HTTP/1.1 load generator for `make bench`
 * (group 12, overload), in the manner of wrk2: requests are due at a fixed
 * rate whatever the server does, and each one's latency is counted from the
 * moment it was due, not from when a connection was free to send it, so a
 * server that stalls is charged for the requests it kept waiting
 * (no coordinated omission).
 *
 *   bench_load HOST PORT PATH BODY_FILE RATE SECONDS CONNECTIONS
 *
 * POSTs BODY_FILE (application/json) to PATH at RATE requests per second
 * for SECONDS over CONNECTIONS keep-alive connections (one request in
 * flight per connection; a request due while every connection is busy
 * waits in a backlog, its clock running). Prints one JSON object: offered
 * and answered rates, counts by outcome (200, 429, other codes, errors),
 * latency percentiles (ms) of the 200s and of the 429s, and of all answers.
 * Only 127.0.0.1 is used by the harness. Figures only: exits 0 unless the
 * arguments are wrong or nothing can connect. BENCH_LOAD_DEBUG=1 lists on
 * stderr the connections still waiting for an answer at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 50000L /* the scheduler's resolution: 50 us */

typedef struct conn {
    int fd;
    bool busy;
    int64_t due_ns;    /* when its request was due */
    size_t sent;       /* bytes of the request written */
    char in[8192];
    size_t got;        /* bytes of the answer read */
    long need;         /* whole answer length once the header is parsed, else -1 */
    int status;
} conn;

typedef struct lat {
    uint32_t *us;
    size_t n, cap;
} lat;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void lat_add(lat *l, int64_t ns)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        uint32_t *p = realloc(l->us, cap * sizeof *p);
        if (!p)
            return;
        l->us = p;
        l->cap = cap;
    }
    int64_t us = ns / 1000;
    l->us[l->n++] = us < 0 ? 0 : us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const lat *l, double p)
{
    if (!l->n)
        return -1;
    size_t i = (size_t)(p / 100.0 * (double)(l->n - 1) + 0.5);
    return l->us[i] / 1000.0;
}

static void print_lat(const char *name, lat *l)
{
    if (l->n)
        qsort(l->us, l->n, sizeof *l->us, cmp_u32);
    printf("\"%s\": {\"n\": %zu, \"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, "
           "\"p999_ms\": %.3f, \"max_ms\": %.3f}",
           name, l->n, pct(l, 50), pct(l, 90), pct(l, 99), pct(l, 99.9), pct(l, 100));
}

static int dial(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The answer's total length once its header is whole (Content-Length), -1
 * before; sets *status. */
static long answer_length(const char *buf, size_t n, int *status)
{
    const char *end = memmem(buf, n, "\r\n\r\n", 4);
    if (!end)
        return -1;
    *status = n > 12 ? atoi(buf + 9) : 0;
    long len = 0;
    for (const char *p = buf; p < end;) {
        const char *eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
        if (!eol)
            break;
        if ((size_t)(eol - p) > 15 && !strncasecmp(p, "Content-Length:", 15))
            len = atol(p + 15);
        p = eol + 2;
    }
    return (long)(end - buf) + 4 + len;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: %s HOST PORT PATH BODY_FILE RATE SECONDS CONNECTIONS\n",
                argv[0]);
        return 2;
    }
    const char *host = argv[1], *path = argv[3];
    int port = atoi(argv[2]);
    double rate = atof(argv[5]), seconds = atof(argv[6]);
    int n_conns = atoi(argv[7]);
    if (port <= 0 || rate <= 0 || seconds <= 0 || n_conns < 1) {
        fprintf(stderr, "bench_load: bad arguments\n");
        return 2;
    }
    FILE *bf = fopen(argv[4], "rb");
    if (!bf) {
        perror(argv[4]);
        return 2;
    }
    char body[65536];
    size_t blen = fread(body, 1, sizeof body, bf);
    fclose(bf);
    char *req = malloc(blen + 512);
    if (!req)
        return 1;
    int hl = snprintf(req, 512,
                      "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      path, host, port, blen);
    memcpy(req + hl, body, blen);
    size_t rlen = (size_t)hl + blen;

    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "bench_load: %s: not an IPv4 address\n", host);
        return 2;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    conn *cs = calloc((size_t)n_conns, sizeof *cs);
    int *idle = calloc((size_t)n_conns, sizeof *idle);
    if (ep < 0 || !cs || !idle)
        return 1;
    size_t n_idle = 0;
    for (int i = 0; i < n_conns; i++) {
        cs[i].fd = dial(&sa);
        if (cs[i].fd < 0) {
            perror("connect");
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
        idle[n_idle++] = i;
    }
    /* Every connection established before the clock starts (a SYN dropped
     * by a full listen backlog would otherwise stall a connection a second). */
    int n_up = 0;
    int64_t give_up = now_ns() + 10000000000LL;
    bool *up = calloc((size_t)n_conns, sizeof *up);
    while (up && n_up < n_conns && now_ns() < give_up) {
        struct epoll_event evs[256];
        int n = epoll_wait(ep, evs, 256, 100);
        for (int k = 0; k < n; k++) {
            uint32_t i = evs[k].data.u32;
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (up[i] || !(evs[k].events & EPOLLOUT))
                continue;
            if (getsockopt(cs[i].fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) {
                up[i] = true;
                n_up++;
            }
        }
    }
    free(up);
    for (int i = 0; i < n_conns; i++) { /* from now on: readable, or writable when blocked */
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_MOD, cs[i].fd, &ev);
    }
    if (n_up < n_conns) {
        fprintf(stderr, "bench_load: only %d of %d connections were established\n", n_up,
                n_conns);
        return 1;
    }
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = {.it_interval = {0, TICK_NS}, .it_value = {0, TICK_NS}};
    timerfd_settime(tfd, 0, &its, NULL);
    struct epoll_event tev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);

    lat ok = {0}, shed = {0}, all = {0};
    unsigned long n_ok = 0, n_429 = 0, n_other = 0, n_err = 0, issued = 0, done = 0;
    const double period_ns = 1e9 / rate;
    const unsigned long total = (unsigned long)(rate * seconds);
    int64_t t0 = now_ns() + 10000000; /* 10 ms to settle the connections */
    int64_t stop_at = t0 + (int64_t)(seconds * 1e9) + 5000000000LL; /* 5 s to drain */
    unsigned long backlog_max = 0;

    while (done < total && now_ns() < stop_at) {
        struct epoll_event evs[256];
        int n = epoll_wait(ep, evs, 256, 100);
        int64_t now = now_ns();
        for (int k = 0; k < n; k++) {
            uint32_t i = evs[k].data.u32;
            if (i == UINT32_MAX) {
                uint64_t x;
                if (read(tfd, &x, sizeof x) < 0) {
                    /* the timer is read again at its next tick */
                }
                continue;
            }
            conn *c = &cs[i];
            if (!c->busy)
                continue;
            if ((evs[k].events & EPOLLOUT) && c->sent < rlen) {
                ssize_t w = send(c->fd, req + c->sent, rlen - c->sent, MSG_NOSIGNAL);
                if (w > 0)
                    c->sent += (size_t)w;
                if (c->sent == rlen) {
                    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (evs[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                ssize_t r = recv(c->fd, c->in + c->got, sizeof c->in - c->got, 0);
                if (r > 0) {
                    c->got += (size_t)r;
                    if (c->need < 0)
                        c->need = answer_length(c->in, c->got, &c->status);
                    if (c->need >= 0 && (long)c->got >= c->need) {
                        int64_t l = now - c->due_ns;
                        lat_add(&all, l);
                        if (c->status == 200) {
                            n_ok++;
                            lat_add(&ok, l);
                        } else if (c->status == 429) {
                            n_429++;
                            lat_add(&shed, l);
                        } else {
                            n_other++;
                        }
                        done++;
                        c->busy = false;
                        idle[n_idle++] = (int)i;
                    } else if (c->got == sizeof c->in) {
                        c->got = 0; /* an answer larger than the buffer: keep counting */
                    }
                } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                    /* closed: count an error, reconnect */
                    n_err++;
                    done++;
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    close(c->fd);
                    c->fd = dial(&sa);
                    c->busy = false;
                    if (c->fd >= 0) {
                        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = i};
                        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
                        idle[n_idle++] = (int)i;
                    }
                }
            }
        }
        /* Send what is due on idle connections; the rest waits, its clock running. */
        unsigned long due = now < t0 ? 0 : (unsigned long)((double)(now - t0) / period_ns) + 1;
        if (due > total)
            due = total;
        if (due > issued && due - issued > backlog_max)
            backlog_max = due - issued;
        while (issued < due && n_idle) {
            conn *c = &cs[idle[--n_idle]];
            c->busy = true;
            c->due_ns = t0 + (int64_t)((double)issued * period_ns);
            c->sent = 0;
            c->got = 0;
            c->need = -1;
            ssize_t w = send(c->fd, req, rlen, MSG_NOSIGNAL);
            if (w > 0)
                c->sent = (size_t)w;
            if (c->sent < rlen) { /* the rest when the socket can take it */
                struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT,
                                         .data.u32 = (uint32_t)(c - cs)};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
            }
            issued++;
        }
    }
    double took = (double)(now_ns() - t0) / 1e9;
    printf("{\"offered_rps\": %.1f, \"seconds\": %.2f, \"connections\": %d, \"requests\": %lu, "
           "\"answered\": %lu, \"answered_rps\": %.1f, \"ok_rps\": %.1f, \"n_200\": %lu, "
           "\"n_429\": %lu, \"n_other\": %lu, \"n_errors\": %lu, \"not_sent\": %lu, "
           "\"backlog_max\": %lu, ",
           rate, took, n_conns, total, done, (double)done / took, (double)n_ok / took, n_ok,
           n_429, n_other, n_err, total - issued, backlog_max);
    print_lat("ok", &ok);
    printf(", ");
    print_lat("429", &shed);
    printf(", ");
    print_lat("all", &all);
    printf("}\n");
    for (int i = 0; i < n_conns; i++) {
        if (getenv("BENCH_LOAD_DEBUG") && cs[i].busy)
            fprintf(stderr, "conn %d busy: sent %zu/%zu got %zu need %ld status %d\n", i,
                    cs[i].sent, rlen, cs[i].got, cs[i].need, cs[i].status);
        if (cs[i].fd >= 0)
            close(cs[i].fd);
    }
    close(tfd);
    close(ep);
    free(cs);
    free(idle);
    free(req);
    free(ok.us);
    free(shed.us);
    free(all.us);
    return 0;
}
