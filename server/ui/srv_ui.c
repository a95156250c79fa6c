/*
 * srv_ui.c — the operator console (docs/console.md): GET /ui and its two
 * files (console.css, console.js, next to this file, built into the binary
 * with .incbin: no CDN, works offline), and GET /ui/api/traffic, the JSON the
 * page polls: a ring of snapshots of the metrics predictd already keeps
 * (srv_metrics_snapshot_json: no second set of counters) and the last
 * refused requests (srv_ui_errors.c: status, message, time; never a
 * body). The page reads
 * the models and the monitoring windows from /v1/models... as any client.
 * Read-only; the route rows give it the read scope; ui_enabled false
 * answers 404. Every answer carries a strict Content-Security-Policy: the
 * page runs its own script only and every text it shows is set with
 * textContent (names, messages and feature values come from outside).
 */
#include "srv_http_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* the files, between a start and an end symbol each (ld's .incbin; the
 * Makefile makes this object depend on the files of server/ui) */
#define UI_FILE(sym, path)                                                                         \
    __asm__(".section .rodata\n.balign 16\n.global " #sym "_start\n" #sym "_start:\n"           \
            ".incbin \"" path "\"\n.global " #sym "_end\n" #sym "_end:\n.byte 0\n.previous\n");  \
    extern const char sym##_start[], sym##_end[];
UI_FILE(srv_ui_html, "server/ui/console.html")
UI_FILE(srv_ui_css, "server/ui/console.css")
UI_FILE(srv_ui_js, "server/ui/console.js")

static const char CSP[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                          "form-action 'none'; frame-ancestors 'none'";

/* -------------------------------------------------- the rings */

#define UI_SNAPSHOTS 120   /* traffic snapshots kept */
#define UI_SNAP_MIN_MS 1000 /* at most one snapshot a second */

static pthread_mutex_t ui_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_buf ui_snaps[UI_SNAPSHOTS];
static int64_t ui_snap_ms[UI_SNAPSHOTS];
static size_t ui_n_snaps, ui_next_snap;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Takes a snapshot when the newest is a second old or more. ui_mu held. */
static void snapshot(srv_http *h)
{
    int64_t now = wall_ms();
    size_t last = (ui_next_snap + UI_SNAPSHOTS - 1) % UI_SNAPSHOTS;
    if (ui_n_snaps && now - ui_snap_ms[last] < UI_SNAP_MIN_MS)
        return;
    rt_buf *b = &ui_snaps[ui_next_snap];
    rt_buf_reset(b);
    if (srv_metrics_snapshot_json(h->p.metrics, b) || rt_buf_failed(b)) {
        rt_buf_free(b);
        rt_buf_init(b);
        return;
    }
    ui_snap_ms[ui_next_snap] = now;
    ui_next_snap = (ui_next_snap + 1) % UI_SNAPSHOTS;
    if (ui_n_snaps < UI_SNAPSHOTS)
        ui_n_snaps++;
}

/* -------------------------------------------------- answers */

static enum MHD_Result send_static(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                   const char *data, size_t len, const char *ctype,
                                   enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)data, mode);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", ctype);
    MHD_add_response_header(resp, "Content-Security-Policy", CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    srv_http_trace_answer(h, conn, code, resp);
    srv_metrics_http(h->p.metrics, (int)code);
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result send_file(srv_http *h, struct MHD_Connection *conn, const char *start,
                                 const char *end, const char *ctype)
{
    if (!h->cfg.ui_enabled)
        return srv_http_send_error(h, conn, 404, "the console is off (ui_enabled false)");
    return send_static(h, conn, 200, start, (size_t)(end - start), ctype, MHD_RESPMEM_PERSISTENT);
}

enum MHD_Result srv_ui_answer_page(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq;
    return send_file(h, conn, srv_ui_html_start, srv_ui_html_end, "text/html; charset=utf-8");
}

enum MHD_Result srv_ui_answer_css(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq;
    return send_file(h, conn, srv_ui_css_start, srv_ui_css_end, "text/css; charset=utf-8");
}

enum MHD_Result srv_ui_answer_js(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq;
    return send_file(h, conn, srv_ui_js_start, srv_ui_js_end,
                     "text/javascript; charset=utf-8");
}

/* {"now_ms", "snapshots": [{"t_ms", "metrics": {...}}], "errors_total",
 * "errors": [{"t_ms", "code", "body"}] (newest first)} */
enum MHD_Result srv_ui_answer_traffic(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq;
    if (!h->cfg.ui_enabled)
        return srv_http_send_error(h, conn, 404, "the console is off (ui_enabled false)");
    rt_buf out;
    rt_buf_init(&out);
    pthread_mutex_lock(&ui_mu);
    snapshot(h);
    int r = rt_buf_printf(&out, "{\"now_ms\": %lld, \"snapshots\": [", (long long)wall_ms());
    for (size_t i = 0; i < ui_n_snaps; i++) {
        size_t k = (ui_next_snap + UI_SNAPSHOTS - ui_n_snaps + i) % UI_SNAPSHOTS;
        r |= rt_buf_printf(&out, "%s{\"t_ms\": %lld, \"metrics\": ", i ? ",\n" : "\n",
                           (long long)ui_snap_ms[k]);
        r |= rt_buf_append(&out, ui_snaps[k].data, ui_snaps[k].len);
        r |= rt_buf_puts(&out, "}");
    }
    pthread_mutex_unlock(&ui_mu);
    r |= rt_buf_puts(&out, "], ");
    r |= srv_ui_errors_json(&out);
    r |= rt_buf_puts(&out, "}\n");
    if (r || rt_buf_failed(&out)) {
        rt_buf_free(&out);
        return srv_http_send_error(h, conn, 500, "out of memory");
    }
    enum MHD_Result res = send_static(h, conn, 200, out.data, out.len, "application/json",
                                      MHD_RESPMEM_MUST_COPY);
    rt_buf_free(&out);
    return res;
}
