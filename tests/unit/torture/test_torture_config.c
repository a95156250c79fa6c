/* test_torture_config.c — the daemon's config (re)load under allocation
 * failure: srv_config_build as a reload runs it (conf/predictd.json with
 * conf/batching.config and conf/monitoring.config; conf/models.config in TF
 * Serving's text format) and srv_config_parse of a models list with labels,
 * traffic_split, shadow and request_logging, with the n-th allocation
 * failing for every n until a run completes (support_alloc.h), give
 * RT_ERR_NOMEM with a message or the untortured config; never a crash, a
 * leak or another error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "srv.h"
#include "support_alloc.h"
#include "support_models.h"

typedef struct config_run {
    srv_args args;       /* for srv_config_build */
    const char *text;    /* for srv_config_parse (args unused) */
    srv_config *c;
    char want[4096];     /* the untortured config, summarized */
} config_run;

static rt_status build(void *ctx, rt_err *err)
{
    config_run *r = ctx;
    if (r->text)
        return srv_config_parse(r->text, strlen(r->text), "/srv/models", &r->c, err);
    return srv_config_build(&r->args, &r->c, err);
}

/* The parts of c a reload acts on, as text. */
static void summarize(const srv_config *c, char *out, size_t cap)
{
    size_t used = (size_t)snprintf(out, cap, "port %d metrics %s batch %d models %zu",
                                   c->rest_api_port, c->metrics_path ? c->metrics_path : "-",
                                   c->max_batch_size, c->n_models);
    for (size_t i = 0; i < c->n_models && used < cap; i++) {
        const srv_model_conf *mc = &c->models[i];
        const srv_rollout_conf *ro = &mc->rollout;
        used += (size_t)snprintf(out + used, cap - used,
                                 "; %s %s labels %zu split %zu shadow %d log %s",
                                 mc->name, mc->base_path, mc->n_labels, ro->n_split,
                                 ro->shadow ? (int)ro->shadow_percent : -1,
                                 ro->log_dir ? ro->log_dir : "-");
        for (size_t k = 0; k < mc->n_labels && used < cap; k++)
            used += (size_t)snprintf(out + used, cap - used, " %s=%lld", mc->labels[k].name,
                                     (long long)mc->labels[k].version);
    }
}

static void check(void *ctx, rt_status st, bool injected)
{
    config_run *r = ctx;
    (void)injected;
    if (st == RT_OK) {
        char got[sizeof r->want];
        summarize(r->c, got, sizeof got);
        if (!r->want[0])
            memcpy(r->want, got, sizeof got);
        assert_string_equal(got, r->want);
    } else {
        assert_null(r->c);
    }
    srv_config_free(r->c);
    r->c = NULL;
}

static void torture_flags(const char *what, const char *const *flags, size_t n_flags)
{
    const char *root = getenv("PREDICTD_ROOT");
    char buf[4][1100];
    char *argv[5] = {"predictd"};
    for (size_t i = 0; i < n_flags; i++) {
        snprintf(buf[i], sizeof buf[i], flags[i], root ? root : ".");
        argv[i + 1] = buf[i];
    }
    config_run r = {0};
    rt_err err = {{0}};
    if (srv_args_parse((int)n_flags + 1, argv, &r.args, &err) != RT_OK)
        fail_msg("%s", err.msg);
    uint64_t n = support_torture(what, build, check, &r, 1, false);
    print_message("%s: %llu allocations, each failed once\n", what, (unsigned long long)n);
    support_torture(what, build, check, &r, 1, true);
    srv_args_free(&r.args);
}

static void test_predictd_json(void **state)
{
    (void)state;
    static const char *const flags[] = {"--model_config_file=%s/conf/predictd.json",
                                        "--batching_parameters_file=%s/conf/batching.config",
                                        "--monitoring_config_file=%s/conf/monitoring.config",
                                        "--enable_batching"};
    torture_flags("conf/predictd.json", flags, 4);
}

static void test_models_config(void **state)
{
    (void)state;
    static const char *const flags[] = {"--model_config_file=%s/conf/models.config"};
    torture_flags("conf/models.config", flags, 1);
}

/* A config file whose paths are relative to its directory (realpath's
 * allocation failing must not leave them relative). */
static void test_relative_paths(void **state)
{
    (void)state;
    char dir[256], path[300];
    assert_int_equal(support_mkdtemp(dir, sizeof dir), 0);
    snprintf(path, sizeof path, "%s/predictd.json", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("{\"models\": [{\"name\": \"census\", \"base_path\": \"models/census\","
          " \"request_logging\": {\"sampling_rate\": 1, \"dir\": \"logs\"}}]}\n",
          fp);
    assert_int_equal(fclose(fp), 0);
    char flag[400];
    snprintf(flag, sizeof flag, "--model_config_file=%s", path);
    char *argv[] = {"predictd", flag};
    config_run r = {0};
    rt_err err = {{0}};
    if (srv_args_parse(2, argv, &r.args, &err) != RT_OK)
        fail_msg("%s", err.msg);
    support_torture("relative paths", build, check, &r, 1, false);
    assert_non_null(strstr(r.want, "/models/census"));
    srv_args_free(&r.args);
    support_rmtree(dir);
}

static void test_rollout(void **state)
{
    (void)state;
    config_run r = {0};
    r.text = "{\"rest_api_port\": 8600, \"models\": ["
             "{\"name\": \"census\", \"base_path\": \"census\","
             " \"version_policy\": {\"specific\": [1, 2, 7]},"
             " \"version_labels\": {\"stable\": 1, \"canary\": 2},"
             " \"traffic_split\": {\"stable\": 85, \"canary\": 10, \"7\": 5},"
             " \"shadow\": {\"version\": \"canary\", \"percent\": 25},"
             " \"request_logging\": {\"sampling_rate\": 0.5, \"dir\": \"logs\","
             "  \"max_file_mb\": 2, \"max_files\": 3},"
             " \"monitoring\": {\"window_seconds\": 60, \"sample_rate\": 0.5,"
             "  \"thresholds\": {\"age\": 0.2, \"occupation\": 0.1}}},"
             "{\"name\": \"trees\", \"base_path\": \"/abs/trees\","
             " \"version_policy\": {\"all\": true}, \"default_version\": 3}]}";
    uint64_t n = support_torture("rollout config", build, check, &r, 1, false);
    print_message("rollout config: %llu allocations, each failed once\n", (unsigned long long)n);
    support_torture("rollout config", build, check, &r, 1, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predictd_json),
        cmocka_unit_test(test_models_config),
        cmocka_unit_test(test_relative_paths),
        cmocka_unit_test(test_rollout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
