/*
 * rt_otlp.c — a batch program's OpenTelemetry spans (rt_core.h): kept in
 * memory, sent as one OTLP/HTTP JSON POST (the JSON mapping of
 * opentelemetry/proto/trace/v1/trace.proto: lowerCamelCase names, ids as
 * hex, 64-bit integers as decimal strings) when flushed. The daemon has its
 * own exporter (server/trace/: a queue, a thread, TLS); a job writes a
 * handful of spans and sends them at its end, over plain HTTP, each step
 * with a timeout.
 */
#include "rt_core.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define IO_TIMEOUT_MS 2000
#define MAX_ATTRS 4

typedef struct job_span {
    char name[48];
    uint8_t id[8];
    int parent; /* a span's index, or -1: the root */
    int64_t start, end; /* unix ns; end 0: not ended */
    bool error;
    struct { char key[40]; long long v; } attr[MAX_ATTRS];
    int n_attr;
} job_span;

struct rt_otlp {
    char host[256], port[8], path[512], service[64];
    uint8_t trace_id[16], parent_id[8];
    bool has_parent;
    job_span *s;
    size_t n, dropped;
    rt_rng rng;
};

static int64_t unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void random_id(rt_otlp *t, uint8_t *p, size_t n)
{
    do
        for (size_t i = 0; i < n; i += 8) {
            uint64_t v = rt_rng_next(&t->rng);
            memcpy(p + i, &v, n - i < 8 ? n - i : 8);
        }
    while (p[0] == 0 && p[n - 1] == 0); /* never all zero (nor almost) */
}

static void hex(char *out, const uint8_t *p, size_t n)
{
    static const char D[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = D[p[i] >> 4];
        out[2 * i + 1] = D[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static bool unhex(const char *s, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return false;
        p[i / 2] = (uint8_t)(i % 2 ? p[i / 2] | v : v << 4);
    }
    return true;
}

/* TRACEPARENT (W3C, version 00): the run's trace and parent span. */
static void read_parent(rt_otlp *t)
{
    const char *tp = getenv("TRACEPARENT");
    uint8_t tid[16], pid[8], zero[16] = {0};
    if (!tp || strlen(tp) != 55 || strncmp(tp, "00-", 3) || tp[35] != '-' || tp[52] != '-' ||
        !unhex(tp + 3, tid, 16) || !unhex(tp + 36, pid, 8) || !memcmp(tid, zero, 16) ||
        !memcmp(pid, zero, 8))
        return;
    memcpy(t->trace_id, tid, 16);
    memcpy(t->parent_id, pid, 8);
    t->has_parent = true;
}

rt_status rt_otlp_open(const char *endpoint, const char *service, const char *what,
                       rt_otlp **out, rt_err *err)
{
    *out = NULL;
    if (strncmp(endpoint, "http://", 7) != 0)
        return rt_err_set(err, RT_ERR_INVALID,
                          "%s %.200s: must be http://HOST[:PORT]/PATH (a collector's "
                          "/v1/traces; a job sends over plain HTTP, to a local collector)",
                          what, endpoint);
    rt_otlp *t = calloc(1, sizeof *t);
    if (!t || !(t->s = calloc(RT_OTLP_SPANS, sizeof *t->s))) {
        free(t);
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", what);
    }
    const char *hp = endpoint + 7, *slash = strchr(hp, '/');
    size_t hl = slash ? (size_t)(slash - hp) : strlen(hp);
    const char *colon = memchr(hp, ':', hl);
    size_t nl = colon ? (size_t)(colon - hp) : hl;
    if (nl == 0 || nl >= sizeof t->host ||
        (colon && (hl - nl - 1 == 0 || hl - nl - 1 >= sizeof t->port)) ||
        (slash && strlen(slash) >= sizeof t->path)) {
        rt_otlp_close(t);
        return rt_err_set(err, RT_ERR_INVALID, "%s %.200s: not a URL", what, endpoint);
    }
    memcpy(t->host, hp, nl);
    snprintf(t->port, sizeof t->port, "%.*s", colon ? (int)(hl - nl - 1) : 2,
             colon ? colon + 1 : "80");
    snprintf(t->path, sizeof t->path, "%s", slash ? slash : "/");
    snprintf(t->service, sizeof t->service, "%s", service);
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
        seed = (uint64_t)unix_ns();
    rt_rng_seed(&t->rng, seed);
    random_id(t, t->trace_id, 16);
    read_parent(t);
    *out = t;
    return RT_OK;
}

int rt_otlp_begin(rt_otlp *t, const char *name, int parent)
{
    if (!t)
        return -1;
    if (t->n >= RT_OTLP_SPANS) {
        t->dropped++;
        return -1;
    }
    job_span *s = &t->s[t->n];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    random_id(t, s->id, 8);
    s->parent = parent >= 0 && (size_t)parent < t->n ? parent : -1;
    s->start = unix_ns();
    return (int)t->n++;
}

void rt_otlp_attr(rt_otlp *t, int s, const char *key, long long value)
{
    if (!t || s < 0 || (size_t)s >= t->n || t->s[s].n_attr >= MAX_ATTRS)
        return;
    job_span *x = &t->s[s];
    snprintf(x->attr[x->n_attr].key, sizeof x->attr[0].key, "%s", key);
    x->attr[x->n_attr++].v = value;
}

void rt_otlp_end(rt_otlp *t, int s, bool error)
{
    if (!t || s < 0 || (size_t)s >= t->n || t->s[s].end)
        return;
    t->s[s].end = unix_ns();
    t->s[s].error = error;
}

static int body_json(const rt_otlp *t, rt_buf *b)
{
    char tid[33], sid[17], pid[17];
    hex(tid, t->trace_id, 16);
    int r = rt_buf_puts(b, "{\"resourceSpans\": [{\"resource\": {\"attributes\": "
                           "[{\"key\": \"service.name\", \"value\": {\"stringValue\": ");
    r |= rt_buf_json_string(b, t->service, strlen(t->service));
    r |= rt_buf_puts(b, "}}]}, \"scopeSpans\": [{\"scope\": {\"name\": \"predictd\"}, "
                        "\"spans\": [");
    bool first = true;
    for (size_t i = 0; i < t->n; i++) {
        const job_span *s = &t->s[i];
        if (!s->end)
            continue;
        hex(sid, s->id, 8);
        r |= rt_buf_printf(b, "%s\n{\"traceId\": \"%s\", \"spanId\": \"%s\", ", first ? "" : ",",
                           tid, sid);
        first = false;
        if (s->parent >= 0 || t->has_parent) {
            hex(pid, s->parent >= 0 ? t->s[s->parent].id : t->parent_id, 8);
            r |= rt_buf_printf(b, "\"parentSpanId\": \"%s\", ", pid);
        }
        r |= rt_buf_puts(b, "\"name\": ");
        r |= rt_buf_json_string(b, s->name, strlen(s->name));
        /* SPAN_KIND_INTERNAL = 1 */
        r |= rt_buf_printf(b, ", \"kind\": 1, \"startTimeUnixNano\": \"%lld\", "
                              "\"endTimeUnixNano\": \"%lld\", \"attributes\": [",
                           (long long)s->start, (long long)s->end);
        for (int a = 0; a < s->n_attr; a++) {
            r |= rt_buf_puts(b, a ? ", {\"key\": " : "{\"key\": ");
            r |= rt_buf_json_string(b, s->attr[a].key, strlen(s->attr[a].key));
            r |= rt_buf_printf(b, ", \"value\": {\"intValue\": \"%lld\"}}", s->attr[a].v);
        }
        /* STATUS_CODE_ERROR = 2 */
        r |= rt_buf_puts(b, s->error ? "], \"status\": {\"code\": 2}}" : "]}");
    }
    return r | rt_buf_puts(b, "]}]}]}\n");
}

/* A TCP connection to t (connect within the timeout), blocking with send
 * and receive timeouts; -1 when none. */
static int dial(const rt_otlp *t)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(t->host, t->port, &hints, &ai) != 0 || !ai)
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int e = 0, r = -1;
        socklen_t el = sizeof e;
        if (errno == EINPROGRESS)
            do
                r = poll(&p, 1, IO_TIMEOUT_MS);
            while (r < 0 && errno == EINTR);
        if (r != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    struct timeval tv = {IO_TIMEOUT_MS / 1000, (IO_TIMEOUT_MS % 1000) * 1000};
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fd >= 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ||
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static bool send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* POSTs body; true on a 2xx status line (the rest read until the close). */
static bool post(const rt_otlp *t, const rt_buf *body)
{
    int fd = dial(t);
    if (fd < 0)
        return false;
    char head[1024], ans[512];
    int hn = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\nUser-Agent: predictd\r\n\r\n",
                      t->path, t->host, t->port, body->len);
    char first[12];
    size_t got = 0, total = 0;
    if (hn > 0 && (size_t)hn < sizeof head && send_all(fd, head, (size_t)hn) &&
        send_all(fd, body->data, body->len))
        while (total < 65536) { /* to the collector's close (Connection: close) */
            ssize_t r = recv(fd, ans, sizeof ans, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            for (ssize_t k = 0; k < r && got < sizeof first; k++)
                first[got++] = ans[k];
            total += (size_t)r;
        }
    bool ok = got == sizeof first && !strncmp(first, "HTTP/1.", 7) && first[9] == '2';
    close(fd);
    return ok;
}

rt_status rt_otlp_flush(rt_otlp *t, rt_err *err)
{
    if (!t || t->n == 0)
        return RT_OK;
    rt_buf b;
    rt_buf_init(&b);
    bool ok = body_json(t, &b) == 0 && !rt_buf_failed(&b) && post(t, &b);
    rt_buf_free(&b);
    size_t n = t->n;
    t->n = 0;
    if (!ok)
        return rt_err_set(err, RT_ERR_IO,
                          "tracing: http://%s:%s%s did not take the run's %zu spans (down, slow "
                          "or refusing)",
                          t->host, t->port, t->path, n);
    return RT_OK;
}

void rt_otlp_close(rt_otlp *t)
{
    if (!t)
        return;
    free(t->s);
    free(t);
}
