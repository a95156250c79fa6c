/* test_cfg.c — the JSON settings getters (rt_cfg.c) the spec reader and the
 * trainer's sections share: every refusal names the value's path, absent
 * and null members keep the default, required ones are reported missing,
 * types and ranges are checked, unknown and repeated keys are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <cJSON.h>

#include "rt.h"

static void test_paths_and_messages(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(rt_cfg_path(buf, sizeof buf, "estimator", "dnn_hidden_units", 2),
                        "estimator.dnn_hidden_units[2]");
    assert_string_equal(rt_cfg_path(buf, sizeof buf, "", "train", -1), "train");
    assert_string_equal(rt_cfg_path(buf, sizeof buf, "models[0]", NULL, -1), "models[0]");
    rt_err err = {{0}};
    assert_int_equal(rt_cfg_fail(&err, "a.b", "c", "bad %d", 7), RT_ERR_INVALID);
    assert_string_equal(err.msg, "a.b.c: bad 7");
    rt_cfg_fail(&err, NULL, "c", "x");
    assert_string_equal(err.msg, "c: x");
    rt_cfg_fail(&err, "a", "", "x");
    assert_string_equal(err.msg, "a: x");
}

static void test_getters(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"n\": 5, \"f\": 2.5, \"s\": \"hi\", \"b\": true, \"l\": [1],"
                           " \"z\": null, \"big\": 1e300, \"o\": {}}");
    assert_non_null(o);
    rt_err err = {{0}};
    int64_t i = -1;
    assert_int_equal(rt_cfg_int(o, "train", "n", 0, 1, 10, &i, &err), RT_OK);
    assert_int_equal(i, 5);
    /* absent and null keep the default; required ones are missing */
    i = 42;
    assert_int_equal(rt_cfg_int(o, "train", "absent", 0, 1, 10, &i, &err), RT_OK);
    assert_int_equal(rt_cfg_int(o, "train", "z", 0, 1, 10, &i, &err), RT_OK);
    assert_int_equal(i, 42);
    assert_int_equal(rt_cfg_int(o, "train", "z", RT_CFG_REQUIRED, 1, 10, &i, &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "train.z: missing (required)");
    /* types and ranges */
    assert_int_equal(rt_cfg_int(o, "train", "n", 0, 6, 10, &i, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "train.n: 5 is out of range [6, 10]");
    assert_int_equal(rt_cfg_int(o, "train", "f", 0, 0, 10, &i, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "train.f: expected an integer, got 2.5");
    assert_int_equal(rt_cfg_int(o, "train", "s", 0, 0, 10, &i, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "train.s: expected an integer, got a string");
    assert_int_equal(i, 42); /* untouched by refusals */
    double d = 0;
    assert_int_equal(rt_cfg_num(o, "", "f", 0, 0, 3, &d, &err), RT_OK);
    assert_true(d == 2.5);
    assert_int_equal(rt_cfg_num(o, "", "big", 0, -1e9, 1e9, &d, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "big: 1e+300 is out of range [-1e+09, 1e+09]");
    assert_int_equal(rt_cfg_num(o, "", "b", 0, 0, 1, &d, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "b: expected a number, got a boolean");
    const char *s = NULL;
    assert_int_equal(rt_cfg_str(o, "x", "s", RT_CFG_REQUIRED, &s, &err), RT_OK);
    assert_string_equal(s, "hi");
    assert_int_equal(rt_cfg_str(o, "x", "l", 0, &s, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "x.l: expected a string, got a list");
    bool b = false;
    assert_int_equal(rt_cfg_bool(o, "x", "b", 0, &b, &err), RT_OK);
    assert_true(b);
    assert_int_equal(rt_cfg_bool(o, "x", "n", 0, &b, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "x.n: expected true or false, got a number");
    const cJSON *j = NULL;
    assert_int_equal(rt_cfg_array(o, "x", "l", RT_CFG_REQUIRED, &j, &err), RT_OK);
    assert_true(cJSON_IsArray(j));
    assert_int_equal(rt_cfg_array(o, "x", "o", 0, &j, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "x.o: expected a list, got an object");
    assert_int_equal(rt_cfg_object(o, "x", "o", 0, &j, &err), RT_OK);
    assert_true(cJSON_IsObject(j));
    /* an item of a list, named by its index */
    char at[64];
    assert_int_equal(rt_cfg_to_int(cJSON_GetArrayItem(o, 0), rt_cfg_path(at, sizeof at,
                                   "estimator", "dnn_hidden_units", 2), NULL, 1, 4, &i, &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "estimator.dnn_hidden_units[2]: 5 is out of range [1, 4]");
    cJSON_Delete(o);
}

static void test_keys(void **state)
{
    (void)state;
    static const char *const allowed[] = {"a", "b", NULL};
    static const char *const extra[] = {"train", NULL};
    rt_err err = {{0}};
    cJSON *o = cJSON_Parse("{\"a\": 1, \"train\": {}}");
    assert_int_equal(rt_cfg_check_keys(o, "spec", allowed, extra, &err), RT_OK);
    assert_int_equal(rt_cfg_check_keys(o, "spec", allowed, NULL, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "spec.train: unknown key");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"a\": 1, \"b\": 2, \"a\": 3}");
    assert_int_equal(rt_cfg_check_keys(o, "", allowed, NULL, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "a: key given twice");
    cJSON_Delete(o);
    o = cJSON_Parse("[1]");
    assert_int_equal(rt_cfg_check_keys(o, "eval", allowed, NULL, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "eval: expected an object, got a list");
    cJSON_Delete(o);
}

/* rt_settings_nearest_name: a typo finds its name, '-' and '_' alike; far names and
 * names too long for the table give NULL; the rule is the settings tables'. */
static void test_nearest_name(void **state)
{
    (void)state;
    static const char *const names[] = {"train-files", "eval-files", "train-steps", "job-dir",
                                        "num-layers", "seed"};
    size_t n = sizeof names / sizeof *names;
    assert_string_equal(rt_settings_nearest_name("train_files", names, n), "train-files");
    assert_string_equal(rt_settings_nearest_name("trian-steps", names, n), "train-steps");
    assert_string_equal(rt_settings_nearest_name("num_layer", names, n), "num-layers");
    assert_string_equal(rt_settings_nearest_name("jobdir", names, n), "job-dir");
    assert_null(rt_settings_nearest_name("frobnicate", names, n));
    assert_null(rt_settings_nearest_name("x", names, n));
    char longname[100];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_null(rt_settings_nearest_name(longname, names, n));
    assert_null(rt_settings_nearest_name("seed", names, 0));
    /* the settings tables' rule (rt_settings_suggest's): an abbreviation
     * is near, two equally near names are no answer, and a typo is at most
     * one edit per six letters */
    assert_string_equal(rt_settings_nearest_name("eval", names, n), "eval-files");
    assert_null(rt_settings_nearest_name("train", names, n));
    assert_null(rt_settings_nearest_name("jbo-dr", names, n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_and_messages),
        cmocka_unit_test(test_getters),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_nearest_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
