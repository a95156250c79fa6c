/* test_torture_spec.c — the spec parser under allocation failure: reading
 * conf/census.json, census_columns.json and census_trees.json (cJSON parse,
 * rt_spec_to_modeldef, rt_graph_tensor_specs) with the n-th allocation
 * failing, for every n until a run completes (support_alloc.h), gives
 * RT_ERR_NOMEM with a message or the very ModelDef of an untortured run;
 * never a crash, a leak or another error; and cJSON running out of memory
 * is told from bad JSON. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cJSON.h>

#include "rt.h"
#include "support_alloc.h"

typedef struct spec_run {
    char *text;
    size_t len;
    Predictd__ModelDef *def;
    size_t n_specs;
    size_t want_specs;       /* tensors of the untortured run */
    size_t want_packed;      /* its ModelDef's packed size */
} spec_run;

static rt_status parse_spec(void *ctx, rt_err *err)
{
    static const char *const other[] = {"train", "eval", NULL};
    spec_run *r = ctx;
    cJSON *j = NULL;
    rt_tensor_spec *specs = NULL;
    rt_status st = rt_cfg_parse_json(r->text, r->len, &j, err);
    if (st == RT_OK)
        st = rt_spec_to_modeldef(j, other, &r->def, err);
    if (st == RT_OK)
        st = rt_graph_tensor_specs(r->def, &specs, &r->n_specs, err);
    free(specs);
    cJSON_Delete(j);
    return st;
}

static void check_spec(void *ctx, rt_status st, bool injected)
{
    spec_run *r = ctx;
    (void)injected;
    if (st == RT_OK) {
        size_t packed = predictd__model_def__get_packed_size(r->def);
        if (!r->want_packed) {
            r->want_packed = packed;
            r->want_specs = r->n_specs;
        }
        assert_int_equal(packed, r->want_packed);
        assert_int_equal(r->n_specs, r->want_specs);
    }
    rt_spec_modeldef_free(r->def);
    r->def = NULL;
    r->n_specs = 0;
}

static void torture_file(const char *name)
{
    const char *root = getenv("PREDICTD_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/conf/%s", root ? root : ".", name);
    spec_run r = {0};
    rt_err err = {{0}};
    if (rt_file_read(AT_FDCWD, path, 1 << 20, 0, &r.text, &r.len, &err) != RT_OK)
        fail_msg("%s", err.msg);
    uint64_t n = support_torture(name, parse_spec, check_spec, &r, 1, false);
    print_message("%s: %llu allocations, each failed once\n", name, (unsigned long long)n);
    support_torture(name, parse_spec, check_spec, &r, 1, true);
    free(r.text);
}

/* cJSON's own allocations fail too, and say so: not "invalid JSON at
 * line 1, column 7" for a document that is fine. */
static void test_cjson_out_of_memory(void **state)
{
    (void)state;
    static const char doc[] = "{\"a\": [1, 2], \"b\": \"text\"}";
    for (uint64_t n = 1;; n++) {
        cJSON *j = NULL;
        rt_err err = {{0}};
        support_alloc_fail_at(n, false);
        rt_status st = rt_cfg_parse_json(doc, sizeof doc - 1, &j, &err);
        bool injected = support_alloc_failed();
        support_alloc_fail_at(0, false);
        cJSON_Delete(j);
        if (!injected) {
            assert_int_equal(st, RT_OK);
            assert_true(n > 1); /* cJSON's allocations were counted */
            break;
        }
        assert_int_equal(st, RT_ERR_NOMEM);
        assert_string_equal(err.msg, "out of memory reading JSON");
    }
}

static void test_census(void **state)
{
    (void)state;
    torture_file("census.json");
}

static void test_census_columns(void **state)
{
    (void)state;
    torture_file("census_columns.json");
}

static void test_census_trees(void **state)
{
    (void)state;
    torture_file("census_trees.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cjson_out_of_memory),
        cmocka_unit_test(test_census),
        cmocka_unit_test(test_census_columns),
        cmocka_unit_test(test_census_trees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
