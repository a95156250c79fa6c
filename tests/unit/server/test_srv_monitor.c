/* test_srv_monitor.c — predictd's skew/drift monitor (server/obs/srv_monitor.c):
 * the "monitoring" key's parsing and refusals, exact counts of known
 * instances (histogram buckets, out of range, unseen, missing), windows
 * ending after window_instances, skew 0 on the training distribution itself
 * and 1 on disjoint values, and exact totals with four threads observing at
 * once (make tsan runs it under ThreadSanitizer). */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cJSON.h>

#include "exp.h"
#include "rt.h"
#include "srv.h"
#include "support_models.h"

/* A two-input model (x numeric, s string) with statistics of 100 rows:
 * x = 0..9 ten times each, s = "a" 60, "b" 40. */
static const char SPEC[] =
    "{\"columns\": [{\"name\": \"x\", \"type\": \"float\", \"default\": 0},"
    " {\"name\": \"s\", \"type\": \"string\", \"default\": \"\"},"
    " {\"name\": \"y\", \"type\": \"int\", \"default\": 0}],"
    " \"label\": {\"column\": \"y\"},"
    " \"feature_columns\": [{\"type\": \"numeric_column\", \"key\": \"x\"},"
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"s\","
    "   \"vocabulary_list\": [\"a\", \"b\"]}],"
    " \"estimator\": {\"type\": \"LinearRegressor\", \"feature_columns\": [\"x\", \"s\"]}}";

typedef struct fixture {
    char dir[256];
    rt_model *m;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    Predictd__ModelDef *def = support_spec_modeldef(SPEC);
    assert_non_null(def);
    support_tensors st = {0};
    assert_int_equal(support_random_tensors(def, 3, 0.5f, &st), 0);
    rt_stats_acc *acc = rt_stats_acc_new(def);
    assert_non_null(acc);
    assert_int_equal(rt_stats_acc_inputs(acc), 2);
    for (int r = 0; r < 100; r++) {
        rt_stats_acc_example(acc);
        for (size_t i = 0; i < 2; i++) {
            if (rt_stats_acc_type(acc, i) == RT_STATS_STRING)
                rt_stats_acc_string(acc, i, r < 60 ? "a" : "b", 1);
            else
                rt_stats_acc_number(acc, i, (double)(r % 10));
        }
    }
    rt_stats *s = NULL;
    rt_buf json;
    rt_buf_init(&json);
    assert_int_equal(rt_stats_acc_finish(acc, &s, NULL), RT_OK);
    assert_int_equal(rt_stats_write_json(s, "train", &json), RT_OK);
    assert_int_equal(support_mkdtemp(fx->dir, sizeof fx->dir), 0);
    exp_params p = exp_default_params();
    p.version = 1;
    p.statistics = json.data;
    p.statistics_len = json.len;
    exp_result res;
    rt_err err = {{0}};
    if (exp_write(fx->dir, def, st.t, st.n, &p, &res, &err) != RT_OK)
        fail_msg("%s", err.msg);
    if (rt_model_open(res.path, &fx->m, &err) != RT_OK)
        fail_msg("%s", err.msg);
    rt_buf_free(&json);
    rt_stats_free(s);
    rt_stats_acc_free(acc);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    rt_model_close(fx->m);
    support_rmtree(fx->dir);
    free(fx);
    return 0;
}

static srv_monitor_conf conf_of(const char *json)
{
    srv_monitor_conf c;
    memset(&c, 0, sizeof c);
    cJSON *j = cJSON_Parse(json);
    rt_err err = {{0}};
    if (srv_monitor_parse(j, "models[0].monitoring", &c, &err) != RT_OK)
        fail_msg("%s", err.msg);
    cJSON_Delete(j);
    return c;
}

/* The batch of a :predict body, held by ctx. */
static const rt_batch *batch_of(const rt_model *m, rt_ctx *ctx, const char *body)
{
    rt_parsed pr;
    rt_err err = {{0}};
    rt_json_params jp = rt_json_default_params();
    if (rt_merge_parse_only(m, body, strlen(body), &jp, ctx, &pr, &err) != RT_OK)
        fail_msg("%s", err.msg);
    return rt_ctx_batch(ctx);
}

static cJSON *status(srv_monitor *mon)
{
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(srv_monitor_json(mon, &b), RT_OK);
    cJSON *j = cJSON_ParseWithLength(b.data, b.len);
    rt_buf_free(&b);
    assert_non_null(j);
    return j;
}

static const cJSON *feature(const cJSON *st, const char *name)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(st, "features"))
    {
        if (!strcmp(cJSON_GetObjectItem(f, "name")->valuestring, name))
            return f;
    }
    fail_msg("no feature %s", name);
    return NULL;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItem(o, k);
    assert_non_null(x);
    return cJSON_IsNull(x) ? -1 : x->valuedouble;
}

static void test_parse_refusals(void **state)
{
    (void)state;
    const char *bad[] = {
        "{\"sample_rate\": 0}",          "{\"sample_rate\": 2}",
        "{\"window_seconds\": 0}",       "{\"windows\": 3}",
        "{\"thresholds\": [0.1]}",       "{\"thresholds\": {\"age\": 2}}",
        "{\"default_threshold\": -1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        srv_monitor_conf c;
        memset(&c, 0, sizeof c);
        cJSON *j = cJSON_Parse(bad[i]);
        rt_err err = {{0}};
        assert_int_not_equal(srv_monitor_parse(j, "models[0].monitoring", &c, &err), RT_OK);
        assert_non_null(strstr(err.msg, "models[0].monitoring"));
        srv_monitor_conf_clear(&c);
        cJSON_Delete(j);
    }
    srv_monitor_conf c = conf_of("{\"thresholds\": {\"x\": 0.1}}"), d;
    assert_true(c.on);
    assert_true(c.sample_rate == 1 && c.window_seconds == 3600 && c.default_threshold == 0.3);
    assert_true(srv_monitor_conf_copy(&d, &c));
    assert_string_equal(d.feature[0], "x");
    srv_monitor_conf_clear(&c);
    srv_monitor_conf_clear(&d);
    cJSON *null = cJSON_CreateNull();
    assert_int_equal(srv_monitor_parse(null, "m", &c, NULL), RT_OK);
    assert_false(c.on);
    cJSON_Delete(null);
}

static void test_counts_windows_and_distances(void **state)
{
    fixture *fx = *state;
    srv_monitor_conf c = conf_of("{\"window_instances\": 10, \"thresholds\": {\"x\": 0.2}}");
    srv_monitor *mon = srv_monitor_new(&c, fx->m, "toy", 1, NULL);
    assert_non_null(mon);
    rt_ctx *ctx = rt_ctx_new();
    /* the training distribution itself: x 0..9, s 6 a + 4 b */
    const char *same = "{\"instances\": [{\"x\": 0, \"s\": \"a\"}, {\"x\": 1, \"s\": \"a\"},"
                       " {\"x\": 2, \"s\": \"a\"}, {\"x\": 3, \"s\": \"a\"}, {\"x\": 4, \"s\": \"a\"},"
                       " {\"x\": 5, \"s\": \"a\"}, {\"x\": 6, \"s\": \"b\"}, {\"x\": 7, \"s\": \"b\"},"
                       " {\"x\": 8, \"s\": \"b\"}, {\"x\": 9, \"s\": \"b\"}]}";
    srv_monitor_observe(mon, batch_of(fx->m, ctx, same));
    cJSON *st = status(mon);
    assert_int_equal((int)num(st, "windows"), 1);
    const cJSON *x = feature(st, "x"), *s = feature(st, "s");
    assert_true(num(x, "skew") >= 0 && num(x, "skew") < 1e-12);
    assert_true(num(s, "skew") >= 0 && num(s, "skew") < 1e-12);
    assert_true(num(x, "threshold") == 0.2 && num(s, "threshold") == 0.3);
    assert_int_equal((int)num(x, "drift"), -1); /* no window before */
    cJSON_Delete(st);
    /* disjoint values: x far above the range, s unseen; plus missing and NaN */
    const char *off = "{\"instances\": [{\"x\": 100, \"s\": \"z\"}, {\"x\": 100, \"s\": \"z\"},"
                      " {\"x\": 100, \"s\": \"z\"}, {\"x\": 100, \"s\": \"z\"},"
                      " {\"x\": 100, \"s\": \"z\"}, {\"x\": 100, \"s\": \"z\"},"
                      " {\"x\": 100, \"s\": \"z\"}, {\"x\": -5, \"s\": \"z\"},"
                      " {\"x\": NaN, \"s\": \"z\"}, {\"x\": 100, \"s\": \"z\"}]}";
    srv_monitor_observe(mon, batch_of(fx->m, ctx, off));
    st = status(mon);
    assert_int_equal((int)num(st, "windows"), 2);
    x = feature(st, "x");
    s = feature(st, "s");
    const cJSON *w = cJSON_GetObjectItem(x, "window");
    assert_int_equal((int)num(w, "above_range"), 8);
    assert_int_equal((int)num(w, "below_range"), 1);
    assert_int_equal((int)num(w, "nan"), 1);
    assert_int_equal((int)num(cJSON_GetObjectItem(s, "window"), "unseen"), 10);
    assert_true(num(x, "skew") > 0.99 && num(s, "skew") == 1 && num(s, "drift") == 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(x, "skew_anomalous")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(st, "anomalous")));
    /* the histogram of the first window: one value per bucket */
    cJSON_Delete(st);
    /* a partial window is the current one */
    srv_monitor_observe(mon, batch_of(fx->m, ctx, "{\"instances\": [{\"x\": 3, \"s\": \"b\"}]}"));
    st = status(mon);
    assert_int_equal((int)num(cJSON_GetObjectItem(st, "current_window"), "instances"), 1);
    const cJSON *h = cJSON_GetObjectItem(cJSON_GetObjectItem(feature(st, "x"), "current_window"),
                                         "histogram");
    int total = 0, at3 = -1, k = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, h)
    {
        total += (int)num(b, "count");
        if (num(b, "count") == 1)
            at3 = k;
        k++;
    }
    assert_int_equal(total, 1);
    assert_int_equal(k, 10);
    assert_int_equal(at3, 3); /* [2.7, 3.6) */
    cJSON_Delete(st);
    rt_buf pm;
    rt_buf_init(&pm);
    assert_int_equal(srv_monitor_prometheus(mon, &pm), 0);
    assert_non_null(strstr(pm.data, "predictd_feature_skew{model=\"toy\",version=\"1\","
                                    "feature=\"s\"} 1\n"));
    assert_non_null(strstr(pm.data, "predictd_feature_unseen_values_total{model=\"toy\","
                                    "version=\"1\",feature=\"s\"} 10\n"));
    assert_non_null(strstr(pm.data, "predictd_feature_out_of_range_total{model=\"toy\","
                                    "version=\"1\",feature=\"x\"} 9\n"));
    rt_buf_free(&pm);
    rt_ctx_free(ctx);
    srv_monitor_free(mon);
    srv_monitor_conf_clear(&c);
}

typedef struct worker {
    srv_monitor *mon;
    const rt_model *m;
} worker;

static void *observe_many(void *arg)
{
    worker *w = arg;
    rt_ctx *ctx = rt_ctx_new();
    const rt_batch *b = batch_of(w->m, ctx,
                                 "{\"instances\": [{\"x\": 1, \"s\": \"a\"}, {\"x\": 50, \"s\": "
                                 "\"q\"}, {\"x\": 2, \"s\": \"b\"}, {\"x\": 3, \"s\": \"a\"}]}");
    for (int i = 0; i < 2000; i++)
        srv_monitor_observe(w->mon, b);
    rt_ctx_free(ctx);
    return NULL;
}

static void test_threads_count_exactly(void **state)
{
    fixture *fx = *state;
    srv_monitor_conf c = conf_of("{\"window_instances\": 1000}");
    srv_monitor *mon = srv_monitor_new(&c, fx->m, "toy", 1, NULL);
    pthread_t t[4];
    worker w = {mon, fx->m};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, observe_many, &w), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cJSON *st = status(mon);
    assert_int_equal((int)num(st, "instances"), 4 * 2000 * 4);
    assert_true(num(st, "windows") >= 1);
    rt_buf pm;
    rt_buf_init(&pm);
    assert_int_equal(srv_monitor_prometheus(mon, &pm), 0);
    assert_non_null(strstr(pm.data, "predictd_feature_out_of_range_total{model=\"toy\","
                                    "version=\"1\",feature=\"x\"} 8000\n"));
    assert_non_null(strstr(pm.data, "predictd_feature_unseen_values_total{model=\"toy\","
                                    "version=\"1\",feature=\"s\"} 8000\n"));
    rt_buf_free(&pm);
    cJSON_Delete(st);
    srv_monitor_free(mon);
    srv_monitor_conf_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test_setup_teardown(test_counts_windows_and_distances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_count_exactly, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
