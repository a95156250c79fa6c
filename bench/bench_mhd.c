/*
 * bench_mhd.c — a bare libmicrohttpd server for the benchmark: an internal
 * polling thread (a pool of THREADS) with epoll, or with "poll" as the fifth
 * argument poll(2) as predictd runs it (srv_http.c), reading the request
 * body and answering a fixed body from a file. It is the
 * ceiling of "HTTP through libmicrohttpd" on this machine, between nginx
 * and predictd in the figures, so the HTTP library's share and the daemon's
 * own share can be told apart.
 *
 *   bench_mhd PORT BODY_FILE [THREADS [MEMORY_LIMIT [poll]]]
 *
 * Listens on 127.0.0.1:PORT until SIGTERM or SIGINT.
 */
#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BODY 65536

typedef struct answer {
    char data[MAX_BODY];
    size_t len;
} answer;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **state)
{
    const answer *a = cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    if (!*state) { /* first call: headers only */
        *state = conn;
        return MHD_YES;
    }
    if (*upload_size) { /* body bytes: consumed, not kept */
        *upload_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_mhd PORT BODY_FILE [THREADS [MEMORY_LIMIT [poll]]]\n");
        return 2;
    }
    static answer a;
    FILE *fp = fopen(argv[2], "rb");
    if (!fp) {
        perror(argv[2]);
        return 1;
    }
    a.len = fread(a.data, 1, sizeof a.data, fp);
    fclose(fp);
    long port = strtol(argv[1], NULL, 10);
    long threads = argc > 3 ? strtol(argv[3], NULL, 10) : 1;
    long mem = argc > 4 ? strtol(argv[4], NULL, 10) : 32768;
    if (port <= 0 || port > 65535 || threads < 1 || mem < 4096) {
        fprintf(stderr, "bench_mhd: bad port, thread count or memory limit\n");
        return 2;
    }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* MHD's threads inherit the mask */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD |
            (argc > 5 && !strcmp(argv[5], "poll") ? MHD_USE_POLL : MHD_USE_EPOLL),
        (unsigned short)port, NULL, NULL,
        on_request, &a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)mem, MHD_OPTION_CONNECTION_TIMEOUT, 600u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench_mhd: cannot listen on 127.0.0.1:%ld\n", port);
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    return 0;
}
