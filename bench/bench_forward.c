/*
 * bench_forward.c — the compute ceiling under the HTTP server: how long the
 * runtime takes for one request body, stage by stage, without any network.
 *
 *   bench_forward EXPORT_DIR INSTANCE_JSON            figures as one JSON object
 *   bench_forward EXPORT_DIR INSTANCE_JSON --loop N [BATCH]   N rt_json_handle
 *       calls of BATCH instances (default 1) and nothing else (for callgrind /
 *       perf stat: run with two N and subtract to get instructions per request)
 *   bench_forward EXPORT_DIR BODY_JSON --loop-body N   the same with a whole
 *       request body from a file (e.g. group 2's 1000 distinct census rows)
 *   bench_forward EXPORT_DIR BODY_JSON --loop-v2 N   N rt_v2_handle calls of
 *       an Open Inference Protocol JSON body (no binary part)
 *
 * Figures (each the median of RUNS timed runs, ns per instance unless said):
 *   sgemm_gflops        OpenBLAS sgemm 512x512x512, one thread
 *   model_open_ms       rt_model_open + close of the export (read, checksums,
 *                       graph build): the runtime's share of a version load
 *   forward[b]          rt_forward alone on transformed features, batch b
 *   transform[b]        rt_transform alone
 *   parse[b]            rt_json_parse_predict (body -> batch)
 *   render[b]           rt_json_render_predict (outputs -> body)
 *   handle[b]           rt_json_handle, rows ({"instances": [...]})
 *   handle_columnar[b]  rt_json_handle, columns ({"inputs": {...}})
 * OpenBLAS runs single-threaded, as a request thread should run it.
 * Figures, never pass/fail: exits 0 unless the model cannot be used at all.
 */
#include "rt_serve_internal.h"
#include "rt_data_internal.h"

#include <cJSON.h>
#include <cblas.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 5
#define TARGET_NS 40000000.0 /* each timed run lasts about this long */

static const size_t BATCHES[] = {1, 10, 100, 1000};
#define N_BATCHES (sizeof BATCHES / sizeof BATCHES[0])

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One stage to time: fn(arg) once per call; returns 0 ok. */
typedef int (*stage_fn)(void *arg);

/* Median over RUNS of ns per call, with the call count calibrated so a run
 * lasts about TARGET_NS. Returns -1 when the stage fails. */
static double time_stage(stage_fn fn, void *arg)
{
    if (fn(arg) != 0)
        return -1;
    size_t reps = 1;
    for (;;) {
        double t0 = now_ns();
        for (size_t r = 0; r < reps; r++)
            if (fn(arg) != 0)
                return -1;
        double dt = now_ns() - t0;
        if (dt > TARGET_NS / 8 || reps > (1u << 26)) {
            double want = (double)reps * TARGET_NS / (dt > 1 ? dt : 1);
            reps = want < 1 ? 1 : (size_t)want;
            break;
        }
        reps *= 4;
    }
    double runs[RUNS];
    for (int k = 0; k < RUNS; k++) {
        double t0 = now_ns();
        for (size_t r = 0; r < reps; r++)
            if (fn(arg) != 0)
                return -1;
        runs[k] = (now_ns() - t0) / (double)reps;
    }
    qsort(runs, RUNS, sizeof runs[0], cmp_double);
    return runs[RUNS / 2];
}

/* ------------------------------------------------------------- stages */

typedef struct bench {
    const rt_model *m;
    const rt_graph *g;
    rt_ctx *c;
    rt_buf body;
    rt_buf out;
    const Predictd__SignatureDef *sig;
    int columnar;
    rt_err err;
} bench;

static int st_handle(void *arg)
{
    bench *b = arg;
    rt_buf_reset(&b->out);
    rt_status st = rt_json_handle(b->m, RT_METHOD_PREDICT, b->body.data, b->body.len, NULL,
                                  b->c, &b->out, &b->err);
    return st == RT_OK ? 0 : -1;
}

static int st_handle_v2(void *arg)
{
    bench *b = arg;
    rt_buf_reset(&b->out);
    rt_status st = rt_v2_handle(b->m, NULL, 1, b->body.data, b->body.len, RT_V2_NO_HEADER, NULL,
                                b->c, &b->out, &b->err);
    return st == RT_OK ? 0 : -1;
}

static int st_parse(void *arg)
{
    bench *b = arg;
    rt_status st = rt_json_parse_predict(b->g, b->body.data, b->body.len, NULL, b->c,
                                         &b->columnar, &b->sig, &b->err);
    return st == RT_OK ? 0 : -1;
}

static int st_transform(void *arg)
{
    bench *b = arg;
    return rt_transform(b->g, b->c->batch, &b->c->features, &b->err) == RT_OK ? 0 : -1;
}

static int st_forward(void *arg)
{
    bench *b = arg;
    return rt_forward(b->g, &b->c->features, b->c->ws, b->c->logits, &b->err) == RT_OK ? 0 : -1;
}

static int st_render(void *arg)
{
    bench *b = arg;
    rt_buf_reset(&b->out);
    return rt_json_render_predict(b->g, b->sig, &b->c->outputs, b->columnar, &b->out) == RT_OK
               ? 0 : -1;
}

typedef struct opener {
    const char *dir;
} opener;

/* Opening a version: read, validate (checksums), build the graph. */
static int st_open(void *arg)
{
    opener *o = arg;
    rt_model *m = NULL;
    rt_err err;
    if (rt_model_open(o->dir, &m, &err) != RT_OK)
        return -1;
    rt_model_close(m);
    return 0;
}

typedef struct gemm {
    float *a, *b, *c;
    int n;
} gemm;

static int st_sgemm(void *arg)
{
    gemm *q = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, q->n, q->n, q->n, 1.0f, q->a, q->n,
                q->b, q->n, 0.0f, q->c, q->n);
    return 0;
}

/* ------------------------------------------------------------- bodies */

static int read_file(const char *path, rt_buf *out)
{
    char *text = NULL;
    size_t n = 0;
    if (rt_file_read(AT_FDCWD, path, 1u << 30, 0, &text, &n, NULL) != RT_OK)
        return -1;
    int rc = rt_buf_append(out, text, n);
    free(text);
    while (out->len > 0 && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == ' '))
        out->data[--out->len] = '\0';
    return rc;
}

/* {"instances": [inst, inst, ...]} with n copies. */
static int rows_body(const rt_buf *inst, size_t n, rt_buf *out)
{
    rt_buf_reset(out);
    int rc = rt_buf_puts(out, "{\"instances\": [");
    for (size_t i = 0; i < n; i++) {
        if (i)
            rc |= rt_buf_puts(out, ", ");
        rc |= rt_buf_append(out, inst->data, inst->len);
    }
    return rc | rt_buf_puts(out, "]}");
}

/* {"inputs": {"name": [v, v, ...], ...}} with n copies of each value. */
static int columns_body(const rt_buf *inst, size_t n, rt_buf *out)
{
    cJSON *j = cJSON_ParseWithLength(inst->data, inst->len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return -1;
    }
    rt_buf_reset(out);
    int rc = rt_buf_puts(out, "{\"inputs\": {");
    for (const cJSON *m = j->child; m; m = m->next) {
        char *v = cJSON_PrintUnformatted(m);
        if (!v) {
            rc = -1;
            break;
        }
        if (m != j->child)
            rc |= rt_buf_puts(out, ", ");
        rc |= rt_buf_json_string(out, m->string, strlen(m->string));
        rc |= rt_buf_puts(out, ": [");
        for (size_t i = 0; i < n; i++) {
            if (i)
                rc |= rt_buf_puts(out, ", ");
            rc |= rt_buf_puts(out, v);
        }
        rc |= rt_buf_puts(out, "]");
        cJSON_free(v);
    }
    cJSON_Delete(j);
    return rc | rt_buf_puts(out, "}}");
}

/* ---------------------------------------------------------------- main */

static void put_series(const char *name, const double *v, int last)
{
    printf("  \"%s\": {", name);
    for (size_t k = 0; k < N_BATCHES; k++)
        printf("%s\"%zu\": %.1f", k ? ", " : "", BATCHES[k], v[k]);
    printf("}%s\n", last ? "" : ",");
}

/* n rt_json_handle calls of b->body, or of batch copies of inst when inst
 * is not NULL. */
static int loop_mode(bench *b, const rt_buf *inst, long n, size_t batch, int v2)
{
    if (inst && rows_body(inst, batch, &b->body) != 0)
        return 1;
    for (long i = 0; i < n; i++) {
        if ((v2 ? st_handle_v2(b) : st_handle(b)) != 0) {
            fprintf(stderr, "bench_forward: %s\n", b->err.msg);
            return 1;
        }
    }
    printf("%ld requests, answer %zu bytes\n", n, b->out.len);
    return 0;
}

int main(int argc, char **argv)
{
    int v2_loop = argc == 5 && strcmp(argv[3], "--loop-v2") == 0;
    int body_loop = v2_loop || (argc == 5 && strcmp(argv[3], "--loop-body") == 0);
    if (argc != 3 && !body_loop && !((argc == 5 || argc == 6) && strcmp(argv[3], "--loop") == 0)) {
        fprintf(stderr, "usage: bench_forward EXPORT_DIR INSTANCE_JSON [--loop N [BATCH]]\n"
                        "       bench_forward EXPORT_DIR BODY_JSON --loop-body N\n"
                        "       bench_forward EXPORT_DIR BODY_JSON --loop-v2 N\n");
        return 2;
    }
    openblas_set_num_threads(1);
    int rc = 1;
    bench b;
    memset(&b, 0, sizeof b);
    rt_buf inst;
    rt_buf_init(&inst);
    rt_buf_init(&b.body);
    rt_buf_init(&b.out);
    rt_model *m = NULL;
    gemm q = {NULL, NULL, NULL, 512};
    if (rt_model_open(argv[1], &m, &b.err) != RT_OK) {
        fprintf(stderr, "bench_forward: %s\n", b.err.msg);
        goto out;
    }
    b.m = m;
    b.g = rt_model_graph(m);
    if (!(b.c = rt_ctx_new()) || read_file(argv[2], &inst) != 0) {
        fprintf(stderr, "bench_forward: cannot read %s\n", argv[2]);
        goto out;
    }
    if (body_loop) {
        rc = rt_buf_append(&b.body, inst.data, inst.len) != 0 ||
             loop_mode(&b, NULL, strtol(argv[4], NULL, 10), 0, v2_loop);
        goto out;
    }
    if (argc >= 5) {
        long batch = argc == 6 ? strtol(argv[5], NULL, 10) : 1;
        rc = loop_mode(&b, &inst, strtol(argv[4], NULL, 10), batch > 0 ? (size_t)batch : 1, 0);
        goto out;
    }

    double fwd[N_BATCHES], tr[N_BATCHES], parse[N_BATCHES], render[N_BATCHES];
    double handle[N_BATCHES], handle_col[N_BATCHES];
    size_t answer_bytes = 0;
    for (size_t k = 0; k < N_BATCHES; k++) {
        double n = (double)BATCHES[k];
        if (rows_body(&inst, BATCHES[k], &b.body) != 0)
            goto out;
        handle[k] = time_stage(st_handle, &b) / n;
        if (k == 0)
            answer_bytes = b.out.len;
        parse[k] = time_stage(st_parse, &b) / n;
        tr[k] = time_stage(st_transform, &b) / n;
        fwd[k] = time_stage(st_forward, &b) / n;
        /* outputs of the last full run are still in the context */
        if (st_handle(&b) != 0 || st_parse(&b) != 0)
            goto out;
        render[k] = time_stage(st_render, &b) / n;
        if (columns_body(&inst, BATCHES[k], &b.body) != 0)
            goto out;
        handle_col[k] = time_stage(st_handle, &b) / n;
    }
    q.a = malloc(sizeof(float) * 512 * 512);
    q.b = malloc(sizeof(float) * 512 * 512);
    q.c = malloc(sizeof(float) * 512 * 512);
    if (!q.a || !q.b || !q.c)
        goto out;
    for (int i = 0; i < 512 * 512; i++) {
        q.a[i] = (float)(i % 7) * 0.25f;
        q.b[i] = (float)(i % 5) * 0.5f;
    }
    double gemm_ns = time_stage(st_sgemm, &q);
    opener op = {argv[1]};
    double open_ns = time_stage(st_open, &op);
    double gflops = 2.0 * 512 * 512 * 512 / gemm_ns;
    /* FLOPs of the DNN per instance, to compare with the sgemm peak. */
    double flops = 0;
    for (size_t l = 0; l < b.g->n_layers; l++)
        flops += 2.0 * (double)b.g->layers[l].in * (double)b.g->layers[l].out;

    printf("{\n  \"sgemm_gflops\": %.2f,\n  \"dnn_flops_per_instance\": %.0f,\n", gflops, flops);
    printf("  \"model_open_ms\": %.3f,\n", open_ns / 1e6);
    printf("  \"dnn_dim\": %zu,\n  \"answer_bytes_batch1\": %zu,\n  \"ns_per_instance\": {\n",
           b.g->dnn_dim, answer_bytes);
    put_series("forward", fwd, 0);
    put_series("transform", tr, 0);
    put_series("parse", parse, 0);
    put_series("render", render, 0);
    put_series("handle", handle, 0);
    put_series("handle_columnar", handle_col, 1);
    printf("  }\n}\n");
    rc = 0;
out:
    if (rc != 0 && b.err.msg[0])
        fprintf(stderr, "bench_forward: %s\n", b.err.msg);
    free(q.a);
    free(q.b);
    free(q.c);
    rt_ctx_free(b.c);
    rt_model_close(m);
    rt_buf_free(&inst);
    rt_buf_free(&b.body);
    rt_buf_free(&b.out);
    return rc;
}
