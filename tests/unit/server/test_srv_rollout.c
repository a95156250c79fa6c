/* test_srv_rollout.c — a model's rollout keys (traffic_split, shadow,
 * request_logging): parsing, refusals that name the key, copies, the arm a
 * draw falls on and the stickiness of route keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "srv.h"

/* Parses {"models": [models]}; NULL with err set when refused. */
static srv_config *parse(const char *models, rt_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"models\": [%s]}", models);
    srv_config *c = NULL;
    if (srv_config_parse(text, strlen(text), "/etc/predictd", &c, err) != RT_OK)
        assert_null(c);
    return c;
}

static srv_config *parse_ok(const char *models)
{
    rt_err err = {{0}};
    srv_config *c = parse(models, &err);
    if (!c)
        fprintf(stderr, "unexpected error: %s\n", err.msg);
    assert_non_null(c);
    return c;
}

static void parse_bad(const char *models, const char *want)
{
    rt_err err = {{0}};
    assert_null(parse(models, &err));
    if (!strstr(err.msg, want))
        fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
    assert_non_null(strstr(err.msg, want));
}

#define M "{\"name\": \"m\", \"base_path\": \"/b\", " \
          "\"version_labels\": {\"stable\": 1, \"canary\": 2}, "

static void test_parse_all_keys(void **state)
{
    (void)state;
    srv_config *c = parse_ok(M "\"traffic_split\": {\"stable\": 85, \"canary\": 10, \"7\": 5},"
                               "\"shadow\": {\"version\": 9, \"percent\": 25},"
                               "\"request_logging\": {\"sampling_rate\": 0.5, \"dir\": \"logs\","
                               " \"max_file_mb\": 2, \"max_files\": 3}}");
    const srv_model_conf *mc = &c->models[0];
    const srv_rollout_conf *r = &mc->rollout;
    assert_int_equal(r->n_split, 3);
    assert_string_equal(r->split[0].to.label, "stable");
    assert_int_equal(r->split[0].percent, 85);
    assert_string_equal(r->split[1].to.label, "canary");
    assert_null(r->split[2].to.label);
    assert_int_equal(r->split[2].to.version, 7);
    assert_int_equal(srv_target_version(mc, &r->split[0].to), 1);
    assert_int_equal(srv_target_version(mc, &r->split[1].to), 2);
    assert_int_equal(srv_target_version(mc, &r->split[2].to), 7);
    assert_true(r->shadow);
    assert_null(r->shadow_to.label);
    assert_int_equal(r->shadow_to.version, 9);
    assert_int_equal(r->shadow_percent, 25);
    assert_true(r->logging);
    assert_true(r->log_rate == 0.5);
    assert_string_equal(r->log_dir, "/etc/predictd/logs");
    assert_int_equal(r->log_max_bytes, 2u << 20);
    assert_int_equal(r->log_max_files, 3);

    /* a deep copy survives the original */
    srv_rollout_conf copy;
    assert_true(srv_rollout_copy(&copy, r));
    srv_config_free(c);
    assert_string_equal(copy.split[1].to.label, "canary");
    assert_string_equal(copy.log_dir, "/etc/predictd/logs");
    srv_rollout_clear(&copy);
    assert_int_equal(copy.n_split, 0);

    /* logging defaults; a shadow named by a label */
    c = parse_ok(M "\"shadow\": {\"version\": \"canary\", \"percent\": 0},"
                   "\"request_logging\": {\"sampling_rate\": 1, \"dir\": \"/l\"}}");
    r = &c->models[0].rollout;
    assert_string_equal(r->shadow_to.label, "canary");
    assert_int_equal(r->log_max_bytes, (uint64_t)64 << 20);
    assert_int_equal(r->log_max_files, 10);
    assert_int_equal(r->n_split, 0);
    srv_config_free(c);
}

static void test_refusals(void **state)
{
    (void)state;
    parse_bad(M "\"traffic_split\": {\"stable\": 90, \"canary\": 5}}",
              "models[0].traffic_split: the percentages sum to 95");
    parse_bad(M "\"traffic_split\": {\"stable\": 90, \"canary\": 10.5}}",
              "models[0].traffic_split.canary: must be an integer from 0 to 100");
    parse_bad(M "\"traffic_split\": {\"stable\": 110, \"canary\": -10}}",
              "models[0].traffic_split.stable: must be an integer");
    parse_bad(M "\"traffic_split\": {\"stable\": 90, \"blue\": 10}}",
              "models[0].traffic_split.blue: label 'blue' is not in version_labels");
    parse_bad(M "\"traffic_split\": {\"st able\": 100}}",
              "models[0].traffic_split.st able: 'st able' is neither a version number");
    parse_bad(M "\"traffic_split\": {}}", "models[0].traffic_split: must be an object");
    parse_bad(M "\"traffic_split\": [90, 10]}", "models[0].traffic_split: must be an object");
    parse_bad(M "\"traffic_split\": {\"3\": 50, \"03\": 50}}",
              "models[0].traffic_split.03: given twice");
    parse_bad(M "\"shadow\": {\"version\": 2}}", "models[0].shadow.percent: missing");
    parse_bad(M "\"shadow\": {\"percent\": 2}}", "models[0].shadow.version: missing");
    parse_bad(M "\"shadow\": {\"version\": \"nope\", \"percent\": 2}}",
              "models[0].shadow.version: label 'nope' is not in version_labels");
    parse_bad(M "\"shadow\": {\"version\": 2, \"percent\": 101}}",
              "models[0].shadow.percent: must be an integer from 0 to 100");
    parse_bad(M "\"shadow\": {\"version\": 2, \"percent\": 1, \"x\": 1}}",
              "models[0].shadow.x: unknown or repeated key");
    parse_bad(M "\"request_logging\": {\"dir\": \"/l\"}}",
              "models[0].request_logging.sampling_rate: missing");
    parse_bad(M "\"request_logging\": {\"sampling_rate\": 0.1}}",
              "models[0].request_logging.dir: missing");
    parse_bad(M "\"request_logging\": {\"sampling_rate\": 1.5, \"dir\": \"/l\"}}",
              "models[0].request_logging.sampling_rate: must be a number from 0 to 1");
    parse_bad(M "\"request_logging\": {\"sampling_rate\": 1, \"dir\": \"/l\", "
                "\"max_files\": 0}}",
              "models[0].request_logging.max_files: must be an integer from 1 to 10000");
    parse_bad(M "\"request_logging\": {\"sampling_rate\": 1, \"dir\": \"/l\", "
                "\"max_file_mb\": \"64\"}}",
              "models[0].request_logging.max_file_mb: must be an integer");
    parse_bad(M "\"traffic\": {}}", "models[0].traffic: unknown key");
}

static void test_pick_and_route_keys(void **state)
{
    (void)state;
    srv_config *c = parse_ok(M "\"traffic_split\": {\"stable\": 90, \"canary\": 10}}");
    const srv_rollout_conf *r = &c->models[0].rollout;
    /* draws 0..89 fall on stable, 90..99 on canary, modulo 100 */
    assert_ptr_equal(srv_split_pick(r, 0), &r->split[0]);
    assert_ptr_equal(srv_split_pick(r, 89), &r->split[0]);
    assert_ptr_equal(srv_split_pick(r, 90), &r->split[1]);
    assert_ptr_equal(srv_split_pick(r, 199), &r->split[1]);
    assert_ptr_equal(srv_split_pick(r, 200), &r->split[0]);
    /* route keys: the same key the same arm; 10,000 keys split 90/10 */
    size_t canary = 0;
    for (int i = 0; i < 10000; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "user-%d", i);
        uint64_t h = srv_route_key_hash(key, (size_t)n);
        assert_true(h == srv_route_key_hash(key, (size_t)n));
        canary += srv_split_pick(r, h) == &r->split[1];
    }
    assert_in_range(canary, 850, 1150);
    assert_true(srv_route_key_hash("a", 1) != srv_route_key_hash("b", 1));
    srv_config_free(c);
    srv_rollout_conf none;
    memset(&none, 0, sizeof none);
    assert_null(srv_split_pick(&none, 5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_all_keys),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_pick_and_route_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
