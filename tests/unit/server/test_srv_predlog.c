/* test_srv_predlog.c — the prediction log writer on its own: a line per
 * submitted request in DIR/MODEL.jsonl (0600), and a full queue that drops
 * and counts instead of blocking: the writer is held (it needs the
 * manager's mutex, which the test holds) while more requests are submitted
 * than the queue takes. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "srv_models_internal.h"

static srv_manager *manager_logging_to(const char *dir)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"models\": [{\"name\": \"m\", \"base_path\": \"%s\", \"request_logging\": "
             "{\"sampling_rate\": 1, \"dir\": \"%s/logs\"}}]}",
             dir, dir);
    srv_config *c = NULL;
    srv_manager *m = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_config_parse(text, strlen(text), NULL, &c, &err), RT_OK);
    assert_int_equal(srv_manager_new(&m, &err), RT_OK);
    assert_int_equal(srv_manager_apply(m, c, &err), RT_OK);
    srv_config_free(c);
    return m;
}

static size_t count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    int ch;
    while (f && (ch = fgetc(f)) != EOF)
        n += ch == '\n';
    if (f)
        fclose(f);
    return n;
}

static void test_full_queue_drops(void **state)
{
    (void)state;
    char dir[] = "/tmp/predictd-predlog-XXXXXX";
    assert_non_null(mkdtemp(dir));
    srv_manager *mgr = manager_logging_to(dir);
    srv_predlog *l = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_predlog_new(mgr, 4, (size_t)64 << 20, &l, &err), RT_OK);
    const char *body = "{\"instances\": [{\"x\": 1}]}", *answer = "{\"predictions\": [0.5]}";
    srv_served r = {"m", 7, RT_METHOD_PREDICT, 200, 0.001, 1.8e9,
                    body, strlen(body), answer, strlen(answer), SRV_PROTO_REST, NULL};

    /* The writer needs the manager's mutex for every line: hold it. */
    pthread_mutex_lock(&mgr->mu);
    size_t taken = 0;
    for (int i = 0; i < 20; i++)
        taken += srv_predlog_submit(l, &r); /* returns at once: the test would hang */
    pthread_mutex_unlock(&mgr->mu);
    /* 4 wait in the queue, at most 1 was already taken by the writer */
    assert_in_range(taken, 4, 5);
    rt_buf m;
    rt_buf_init(&m);
    assert_int_equal(srv_predlog_metrics(l, &m), RT_OK);
    char want[64];
    snprintf(want, sizeof want, "predictd_prediction_log_dropped_total %zu\n", 20 - taken);
    assert_non_null(strstr(m.data, want));
    srv_predlog_free(l); /* writes what was queued */

    char path[256];
    snprintf(path, sizeof path, "%s/logs/m.jsonl", dir);
    assert_int_equal(count_lines(path), taken);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char *text = NULL;
    assert_int_equal(rt_file_read(AT_FDCWD, path, 1 << 20, 0, &text, NULL, NULL), RT_OK);
    assert_non_null(strstr(text, "{\"time\":\"2027-01-15T08:00:00.000000Z\",\"model\":\"m\","
                                 "\"version\":\"7\",\"method\":\"predict\",\"protocol\":\"rest\","
                                 "\"signature\":\"serving_default\",\"status\":200,"
                                 "\"latency_ms\":1,\"instances\":[{\"x\":1}],"
                                 "\"outputs\":[0.5]}\n"));
    free(text);
    rt_buf_free(&m);
    srv_manager_free(mgr);
    unlink(path);
    snprintf(path, sizeof path, "%s/logs", dir);
    rmdir(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_queue_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
