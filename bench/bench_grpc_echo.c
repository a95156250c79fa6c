/*
 * bench_grpc_echo.c — a bare gRPC core server for the benchmark (as
 * bench_mhd.c is for libmicrohttpd): the way server/grpc/srv_grpc.c drives
 * libgrpc 1.51 (one completion queue, THREADS threads, TensorFlow Serving's
 * Predict registered with its message read before the call is handed
 * over, two calls requested per thread, the request's bytes copied out,
 * initial metadata, message, status and close in one batch), but the
 * answer is a fixed message from a file and no method runs. Its
 * instructions per call (bench/bench_grpc_ir.py --echo) are the library's
 * floor: the part of gRPC Predict's cost that predictd cannot take away.
 *
 *   bench_grpc_echo PORT [ANSWER_FILE [THREADS]]
 *
 * Listens on 127.0.0.1:PORT until SIGTERM or SIGINT. An empty (or no)
 * ANSWER_FILE answers an empty message, which a PredictResponse reads.
 */
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ANSWER (1 << 20)
#define SLOTS_PER_THREAD 2

typedef struct slot {
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload, *answer;
    int cancelled, sent;
} slot;

static grpc_server *server;
static grpc_completion_queue *cq;
static void *method;
static char answer_bytes[MAX_ANSWER];
static size_t answer_len;

static void request(slot *s)
{
    grpc_metadata_array_init(&s->md);
    s->payload = NULL;
    s->sent = 0;
    if (grpc_server_request_registered_call(server, method, &s->call, &s->deadline, &s->md,
                                            &s->payload, cq, cq, s) != GRPC_CALL_OK) {
        fprintf(stderr, "bench_grpc_echo: request_call failed\n");
        exit(1);
    }
}

static void *run(void *arg)
{
    (void)arg;
    char *in_copy = malloc(MAX_ANSWER); /* this thread's copy of a request */
    if (!in_copy)
        return NULL;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) {
            free(in_copy);
            return NULL;
        }
        if (ev.type != GRPC_OP_COMPLETE || !ev.tag)
            continue;
        slot *s = ev.tag;
        if (!s->sent) {
            if (!ev.success)
                continue; /* shutting down */
            /* the request's bytes, contiguous, as srv_grpc.c copies them */
            size_t n = 0;
            grpc_byte_buffer_reader r;
            if (s->payload && grpc_byte_buffer_reader_init(&r, s->payload)) {
                grpc_slice sl;
                while (grpc_byte_buffer_reader_next(&r, &sl)) {
                    size_t k = GRPC_SLICE_LENGTH(sl);
                    if (n + k <= MAX_ANSWER)
                        memcpy(in_copy + n, GRPC_SLICE_START_PTR(sl), k);
                    n += k;
                    grpc_slice_unref(sl);
                }
                grpc_byte_buffer_reader_destroy(&r);
            }
            grpc_slice sl = grpc_slice_from_copied_buffer(answer_bytes, answer_len);
            s->answer = grpc_raw_byte_buffer_create(&sl, 1);
            grpc_slice_unref(sl);
            grpc_op ops[4];
            memset(ops, 0, sizeof ops);
            ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
            ops[1].op = GRPC_OP_SEND_MESSAGE;
            ops[1].data.send_message.send_message = s->answer;
            ops[2].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
            ops[2].data.send_status_from_server.status = GRPC_STATUS_OK;
            ops[3].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
            ops[3].data.recv_close_on_server.cancelled = &s->cancelled;
            s->sent = 1;
            if (grpc_call_start_batch(s->call, ops, 4, s, NULL) == GRPC_CALL_OK)
                continue;
        }
        grpc_byte_buffer_destroy(s->answer);
        if (s->payload)
            grpc_byte_buffer_destroy(s->payload);
        grpc_metadata_array_destroy(&s->md);
        grpc_call_unref(s->call);
        request(s);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_grpc_echo PORT [ANSWER_FILE [THREADS]]\n");
        return 2;
    }
    if (argc > 2 && argv[2][0]) {
        FILE *f = fopen(argv[2], "rb");
        if (!f) {
            perror(argv[2]);
            return 1;
        }
        answer_len = fread(answer_bytes, 1, sizeof answer_bytes, f);
        fclose(f);
    }
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (threads < 1)
        threads = 1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the threads below inherit it */
    grpc_init();
    server = grpc_server_create(NULL, NULL);
    cq = grpc_completion_queue_create_for_next(NULL);
    method = grpc_server_register_method(server, "/tensorflow.serving.PredictionService/Predict",
                                         NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    grpc_server_register_completion_queue(server, cq, NULL);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%s", argv[1]);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    if (grpc_server_add_http2_port(server, addr, creds) <= 0) {
        fprintf(stderr, "bench_grpc_echo: cannot listen on %s\n", addr);
        return 1;
    }
    grpc_server_credentials_release(creds);
    grpc_server_start(server);
    size_t n = (size_t)threads * SLOTS_PER_THREAD;
    slot *slots = calloc(n, sizeof *slots);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    if (!slots || !th)
        return 1;
    for (size_t i = 0; i < n; i++)
        request(&slots[i]);
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, run, NULL);
    int sig;
    sigwait(&set, &sig);
    grpc_server_shutdown_and_notify(server, cq, NULL);
    grpc_server_cancel_all_calls(server);
    grpc_completion_queue_shutdown(cq);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    grpc_server_destroy(server);
    grpc_completion_queue_destroy(cq);
    grpc_shutdown();
    free(slots);
    free(th);
    return 0;
}
