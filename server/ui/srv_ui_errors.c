/*
 * srv_ui_errors.c — the console's recent errors (server/ui/srv_ui.c shows
 * them): the last refused answers, kept by srv_http_send as it sends them
 * (status, the first bytes of the {"error": ...} answer, the time; never a
 * request body). Apart from srv_ui.c so that the send path calls into the
 * console and the console into the send path without a cycle.
 */
#include "srv_http_internal.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define UI_ERRORS 50  /* refused answers kept */
#define UI_MSG_MAX 400

typedef struct ui_error {
    int64_t at_ms; /* wall clock */
    unsigned code;
    char msg[UI_MSG_MAX + 1]; /* the answer's {"error": ...} text, cut */
} ui_error;

static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;
static ui_error ui_errors[UI_ERRORS];
static size_t ui_n_errors, ui_next_error; /* total seen, next slot */

void srv_ui_note_error(unsigned code, const char *body, size_t len)
{
    if (code < 400 || !body)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_mutex_lock(&err_mu);
    ui_error *e = &ui_errors[ui_next_error];
    ui_next_error = (ui_next_error + 1) % UI_ERRORS;
    ui_n_errors++;
    e->at_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    e->code = code;
    size_t n = len < UI_MSG_MAX ? len : UI_MSG_MAX;
    memcpy(e->msg, body, n);
    e->msg[n] = '\0';
    pthread_mutex_unlock(&err_mu);
}

int srv_ui_errors_json(rt_buf *out)
{
    pthread_mutex_lock(&err_mu);
    size_t ne = ui_n_errors < UI_ERRORS ? ui_n_errors : UI_ERRORS;
    int r = rt_buf_printf(out, "\"errors_total\": %zu, \"errors\": [", ui_n_errors);
    for (size_t i = 0; i < ne; i++) {
        const ui_error *e = &ui_errors[(ui_next_error + UI_ERRORS - 1 - i) % UI_ERRORS];
        r |= rt_buf_printf(out, "%s{\"t_ms\": %lld, \"code\": %u, \"body\": ", i ? ",\n" : "\n",
                           (long long)e->at_ms, e->code);
        r |= rt_buf_json_string(out, e->msg, strlen(e->msg));
        r |= rt_buf_puts(out, "}");
    }
    pthread_mutex_unlock(&err_mu);
    return r | rt_buf_puts(out, "]");
}
