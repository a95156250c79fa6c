/* test_pm_io.c — what every predict-model command reads (pmodel/pm_io.c):
 * the export a --dir names (a version directory by its model file, or a base
 * directory's newest version), opening it, a --json-instances file turned
 * into one :predict body that remembers each instance's line (checked by
 * parsing the body with cJSON), and an error reported as FILE:LINE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cJSON.h>
#include <cmocka.h>

#include "pm.h"
#include "support_stderr.h"
#include "support_models.h"

static char dir[256];
static char captured[4096];

static int setup(void **state)
{
    (void)state;
    return support_mkdtemp(dir, sizeof dir);
}

static int teardown(void **state)
{
    (void)state;
    return support_rmtree(dir);
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void touch(const char *name)
{
    char p[512];
    path_of(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static void sub(const char *name)
{
    char p[512];
    path_of(p, sizeof p, name);
    assert_int_equal(mkdir(p, 0755), 0);
}

/* stderr while fn(arg) runs, into captured. */
static int quiet(int (*fn)(const char *, void *), const char *s, void *arg)
{
    support_capture cap = support_stderr_begin();
    int rc = fn(s, arg);
    support_stderr_end(cap, captured, sizeof captured);
    return rc;
}

static void test_io_resolve_export(void **state)
{
    (void)state;
    char *path = NULL;
    rt_err err = {{0}};
    char want[600];
    /* an empty directory */
    assert_int_equal(pm_resolve_export(dir, &path, &err), RT_ERR_NOTFOUND);
    snprintf(want, sizeof want, "%s: no model.pb and no version directory", dir);
    assert_string_equal(err.msg, want);
    /* versions: the newest integer name; others are not versions */
    sub("1");
    sub("12");
    sub("3");
    sub("abc");
    sub("99x");
    assert_int_equal(pm_resolve_export(dir, &path, &err), RT_OK);
    snprintf(want, sizeof want, "%s/12", dir);
    assert_string_equal(path, want);
    free(path);
    /* a version directory by its model file, whichever format */
    static const char *const files[] = {"model.pb",  "saved_model.pb", "model.json",
                                        "model.ubj", "model.bst",      "model.onnx"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char v[64], f[128], p[512];
        snprintf(v, sizeof v, "v%zu", k);
        snprintf(f, sizeof f, "v%zu/%s", k, files[k]);
        sub(v);
        touch(f);
        path_of(p, sizeof p, v);
        assert_int_equal(pm_resolve_export(p, &path, &err), RT_OK);
        assert_string_equal(path, p);
        free(path);
    }
    /* model.pb beside version folders: the directory itself */
    touch("model.pb");
    assert_int_equal(pm_resolve_export(dir, &path, &err), RT_OK);
    assert_string_equal(path, dir);
    free(path);
    char missing[512];
    path_of(missing, sizeof missing, "none");
    assert_int_equal(pm_resolve_export(missing, &path, &err), RT_ERR_IO);
    snprintf(want, sizeof want, "%s: No such file or directory", missing);
    assert_string_equal(err.msg, want);
}

static int open_model(const char *d, void *arg)
{
    char **where = arg;
    rt_model *m = pm_open_model(d, where);
    if (m)
        rt_model_close(m);
    return m != NULL;
}

static void test_io_open_model(void **state)
{
    (void)state;
    support_model sm;
    assert_int_equal(support_model_open(SUPPORT_SPEC_LINEAR, 7, 5, &sm), 0);
    char *where = NULL;
    /* the base directory: its newest (only) version, and where it is */
    assert_int_equal(quiet(open_model, sm.dir, &where), 1);
    assert_string_equal(captured, "");
    assert_non_null(where);
    assert_string_equal(where, sm.path);
    free(where);
    where = NULL;
    assert_int_equal(quiet(open_model, sm.path, &where), 1);
    free(where);
    support_model_close(&sm);
    /* a failure is printed, and where is left alone */
    char missing[512], want[700];
    path_of(missing, sizeof missing, "gone");
    where = NULL;
    assert_int_equal(quiet(open_model, missing, &where), 0);
    assert_null(where);
    snprintf(want, sizeof want, "predict-model: %s: No such file or directory\n", missing);
    assert_string_equal(captured, want);
}

static int read_inst(const char *file, void *arg)
{
    void **a = arg;
    return pm_read_instances(file, a[0], a[1]);
}

static void test_io_read_instances(void **state)
{
    (void)state;
    char p[512];
    path_of(p, sizeof p, "i.json");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("  \n{\"a\": 1}\n\n[1,2]\r\n\t\n\"s\"", f);
    fclose(f);
    pm_instances in;
    void *arg[2] = {NULL, &in};
    assert_int_equal(quiet(read_inst, p, arg), 0);
    assert_int_equal(in.count, 3);
    /* each instance's line in the file, and where it sits in the body */
    assert_int_equal(in.lineno[0], 2);
    assert_int_equal(in.lineno[1], 4);
    assert_int_equal(in.lineno[2], 6);
    assert_string_equal(in.body.data, "{\"instances\": [{\"a\": 1}\n,\n[1,2]\r\n,\n\"s\"]}");
    assert_memory_equal(in.body.data + in.start[1], "[1,2]\r\n", in.len[1]);
    assert_int_equal(in.len[1], 7);
    assert_memory_equal(in.body.data + in.start[2], "\"s\"", 3);
    cJSON *doc = cJSON_ParseWithLength(in.body.data, in.body.len);
    assert_non_null(doc);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "instances");
    assert_int_equal(cJSON_GetArraySize(list), 3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetArrayItem(list, 1)), 2);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(list, 2)), "s");
    cJSON_Delete(doc);
    pm_instances_free(&in);

    /* the signature goes first, JSON-escaped */
    arg[0] = "sig \"x\"";
    assert_int_equal(quiet(read_inst, p, arg), 0);
    const char *head = "{\"signature_name\": \"sig \\\"x\\\"\", \"instances\": [{\"a\"";
    assert_int_equal(strncmp(in.body.data, head, strlen(head)), 0);
    pm_instances_free(&in);

    /* no instances: an empty list */
    path_of(p, sizeof p, "empty.json");
    fclose(fopen(p, "w"));
    arg[0] = NULL;
    assert_int_equal(quiet(read_inst, p, arg), 0);
    assert_int_equal(in.count, 0);
    assert_string_equal(in.body.data, "{\"instances\": []}");
    pm_instances_free(&in);

    path_of(p, sizeof p, "none.json");
    assert_int_equal(quiet(read_inst, p, arg), -1);
    char want[700];
    snprintf(want, sizeof want, "predict-model: %s: No such file or directory\n", p);
    assert_string_equal(captured, want);
    pm_instances_free(&in);
}

static int report(const char *msg, void *arg)
{
    pm_report_error("data.json", NULL, arg, msg);
    return 0;
}

static void test_io_report_error(void **state)
{
    (void)state;
    size_t lineno[] = {3, 7};
    pm_instances in = {.count = 2, .lineno = lineno};
    /* instances[k] names the line of instance k */
    quiet(report, "instances[1]: expected a number", &in);
    assert_string_equal(captured, "predict-model: data.json:7: instances[1]: expected a number\n");
    quiet(report, "instances[0].x: bad", &in);
    assert_string_equal(captured, "predict-model: data.json:3: instances[0].x: bad\n");
    /* past the last instance, or no index: the file alone */
    pm_instances none = {0};
    quiet(report, "instances[2]: what", &none);
    assert_string_equal(captured, "predict-model: data.json: instances[2]: what\n");
    quiet(report, "the model has no signature \"x\"", &none);
    assert_string_equal(captured, "predict-model: data.json: the model has no signature \"x\"\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_io_resolve_export, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_open_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_read_instances, setup, teardown),
        cmocka_unit_test(test_io_report_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
