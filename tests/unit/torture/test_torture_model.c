/* test_torture_model.c — the export loader under allocation failure:
 * rt_model_open on a census export (conf/census.json's model, random
 * weights, training statistics) and on a trees export (conf/census_trees.json, random complete
 * trees) with the n-th allocation failing, for every n until an open
 * completes (support_alloc.h), gives RT_ERR_NOMEM with a message or a model
 * that answers as the untortured one does; never a crash, a leak or
 * another error. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exp.h"
#include "rt.h"
#include "support_alloc.h"
#include "support_models.h"
#include "support_trees.h"

typedef struct open_run {
    char dir[256];
    char path[1024];
    rt_model *m;
    size_t want_tensors; /* the untortured model's tensor count */
} open_run;

static rt_status open_export(void *ctx, rt_err *err)
{
    open_run *r = ctx;
    return rt_model_open(r->path, &r->m, err);
}

static void check_open(void *ctx, rt_status st, bool injected)
{
    open_run *r = ctx;
    (void)injected;
    if (st == RT_OK) {
        assert_non_null(r->m);
        size_t n = rt_model_def(r->m)->n_tensors;
        if (!r->want_tensors)
            r->want_tensors = n;
        assert_int_equal(n, r->want_tensors);
        assert_non_null(rt_model_stats(r->m)); /* statistics.json, parsed whole */
        assert_int_equal(rt_model_stats(r->m)->num_examples, 50);
    } else {
        assert_null(r->m);
    }
    rt_model_close(r->m);
    r->m = NULL;
}

/* Writes the spec conf/NAME as an export (trees: n_trees random trees). */
static void write_export(open_run *r, const char *name, size_t n_trees)
{
    const char *root = getenv("PREDICTD_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/conf/%s", root ? root : ".", name);
    char *text = NULL;
    size_t len = 0;
    rt_err err = {{0}};
    if (rt_file_read(AT_FDCWD, path, 1 << 20, 0, &text, &len, &err) != RT_OK)
        fail_msg("%s", err.msg);
    Predictd__ModelDef *def = support_spec_modeldef(text);
    free(text);
    assert_non_null(def);
    if (n_trees)
        assert_int_equal(support_random_trees(def, 5, n_trees, 3), 0);
    support_tensors st = {0};
    assert_int_equal(support_random_tensors(def, 7, 0.5f, &st), 0);
    assert_int_equal(support_mkdtemp(r->dir, sizeof r->dir), 0);
    /* with training statistics: 50 rows of every input (numbers, strings, missing) */
    rt_stats_acc *acc = rt_stats_acc_new(def);
    assert_non_null(acc);
    for (int row = 0; row < 50; row++) {
        rt_stats_acc_example(acc);
        for (size_t i = 0; i < rt_stats_acc_inputs(acc); i++) {
            char cell[16];
            snprintf(cell, sizeof cell, "%s%d", rt_stats_acc_type(acc, i) == RT_STATS_STRING ? "v"
                                                                                          : "",
                     row % 7);
            assert_int_equal(rt_stats_acc_cell(acc, i, row % 9 ? cell : "", row % 9 ? strlen(cell) : 0,
                                               1, NULL), RT_OK);
        }
    }
    rt_stats *stats = NULL;
    rt_buf json;
    rt_buf_init(&json);
    assert_int_equal(rt_stats_acc_finish(acc, &stats, NULL), RT_OK);
    assert_int_equal(rt_stats_write_json(stats, "train", &json), RT_OK);
    exp_params p = exp_default_params();
    p.version = 1;
    p.statistics = json.data;
    p.statistics_len = json.len;
    exp_result res;
    rt_err werr = {{0}};
    if (exp_write(r->dir, def, st.t, st.n, &p, &res, &werr) != RT_OK)
        fail_msg("%s", werr.msg);
    assert_true(strlen(res.path) < sizeof r->path);
    memcpy(r->path, res.path, strlen(res.path) + 1);
    rt_buf_free(&json);
    rt_stats_free(stats);
    rt_stats_acc_free(acc);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
}

static void torture_export(const char *name, size_t n_trees)
{
    open_run r = {0};
    write_export(&r, name, n_trees);
    uint64_t n = support_torture(name, open_export, check_open, &r, 1, false);
    print_message("%s export: %llu allocations, each failed once\n", name,
                  (unsigned long long)n);
    support_torture(name, open_export, check_open, &r, 1, true);
    support_rmtree(r.dir);
}

static void test_census_export(void **state)
{
    (void)state;
    torture_export("census.json", 0);
}

static void test_trees_export(void **state)
{
    (void)state;
    torture_export("census_trees.json", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_census_export),
        cmocka_unit_test(test_trees_export),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
