/* test_pm_eval.c — predict-model evaluate's engine (pmodel/pm_eval.c) on a
 * small three-class model: the counts it must get from the CSV alone
 * (examples, each label's row of the confusion matrix, each slice's rows),
 * accuracy as the confusion matrix's diagonal, results that do not depend on
 * the batch size, the JSON answer (parsed back), and the refusals of bad
 * data and bad --slice specs with their exact messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cJSON.h>
#include <cmocka.h>

#include "pm.h"
#include "support_models.h"

/* x, color, y (the label: a, b or c) */
static const char ROWS[] = "1,red,a\n"
                           "2,green,b\n"
                           "\n"
                           "-1,blue,c\n"
                           "0.5,red,b\n"
                           "3,green,a\n"
                           "-2.5,red,a\n";

typedef struct fixture {
    support_model sm;
    char data[512];
} fixture;

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || support_model_open(SUPPORT_SPEC_LINEAR, 11, 1, &f->sm) != 0)
        return -1;
    snprintf(f->data, sizeof f->data, "%s/eval.csv", f->sm.dir);
    write_file(f->data, ROWS);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    support_model_close(&f->sm);
    free(f);
    return 0;
}

static double metric(const rt_metric_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->m[i].name, name))
            return l->m[i].value;
    fail_msg("no metric %s", name);
    return NAN;
}

static rt_status run(fixture *f, const char *file, const char *slice, size_t bs, pm_eval **e,
                     rt_err *err)
{
    const char *files[] = {file ? file : f->data};
    const char *slices[] = {slice};
    pm_eval_opts o = {.files = files,
                      .n_files = 1,
                      .slices = slices,
                      .n_slices = slice != NULL,
                      .batch_size = bs};
    return pm_eval_run(f->sm.m, &o, e, err);
}

static void test_eval_counts(void **state)
{
    fixture *f = *state;
    pm_eval *e = NULL;
    rt_err err = {{0}};
    assert_int_equal(run(f, NULL, "color", 2, &e, &err), RT_OK);
    assert_int_equal(e->examples, 6); /* the blank line is not a row */
    assert_int_equal(e->n_classes, 3);
    assert_string_equal(e->class_names[0], "a");
    assert_string_equal(e->class_names[2], "c");
    assert_false(e->has_plots); /* plots are a binary classifier's */
    /* each label's row of the confusion matrix holds that label's rows */
    static const uint64_t per_label[3] = {3, 2, 1};
    uint64_t diag = 0, all = 0;
    for (size_t l = 0; l < 3; l++) {
        uint64_t row = 0;
        for (size_t p = 0; p < 3; p++)
            row += e->confusion[l * 3 + p];
        assert_int_equal(row, per_label[l]);
        diag += e->confusion[l * 3 + l];
        all += row;
    }
    assert_int_equal(all, 6);
    assert_true(fabs(metric(&e->metrics, "accuracy") - (double)diag / 6.0) < 1e-6);
    /* one slice per color, larger first, their rows counted from the CSV */
    assert_int_equal(e->n_specs, 1);
    assert_string_equal(e->specs[0].name, "color");
    assert_int_equal(e->n_slices, 3);
    assert_string_equal(e->slices[0].values[0], "red");
    assert_int_equal(e->slices[0].count, 3);
    assert_string_equal(e->slices[1].values[0], "green");
    assert_int_equal(e->slices[1].count, 2);
    assert_string_equal(e->slices[2].values[0], "blue");
    assert_int_equal(e->slices[2].count, 1);
    int worst = 0;
    for (size_t s = 0; s < e->n_slices; s++)
        worst += e->slices[s].worst;
    assert_int_equal(worst, 1); /* one worst slice per spec */

    /* the JSON answer says the same */
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(pm_eval_json(e, &b), 0);
    cJSON *doc = cJSON_ParseWithLength(b.data, b.len);
    assert_non_null(doc);
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(doc, "examples");
    assert_true(cJSON_IsNumber(ex) && ex->valuedouble == 6);
    cJSON_Delete(doc);
    rt_buf_free(&b);
    pm_eval_free(e);
}

/* A row's answer does not depend on the rows batched with it: the counts and
 * the accuracy are the same for every batch size. */
static void test_eval_batch_size(void **state)
{
    fixture *f = *state;
    pm_eval *ref = NULL;
    rt_err err = {{0}};
    assert_int_equal(run(f, NULL, NULL, 1, &ref, &err), RT_OK);
    assert_int_equal(ref->batch_size, 1);
    for (size_t bs = 2; bs <= 7; bs++) {
        pm_eval *e = NULL;
        assert_int_equal(run(f, NULL, NULL, bs, &e, &err), RT_OK);
        assert_int_equal(e->batch_size, bs);
        assert_int_equal(e->examples, ref->examples);
        assert_memory_equal(e->confusion, ref->confusion, 9 * sizeof *e->confusion);
        assert_true(metric(&e->metrics, "accuracy") == metric(&ref->metrics, "accuracy"));
        pm_eval_free(e);
    }
    pm_eval_free(ref);
}

static void refused(fixture *f, const char *file, const char *slice, rt_status want_st,
                    const char *want)
{
    pm_eval *e = NULL;
    rt_err err = {{0}};
    assert_int_equal(run(f, file, slice, 0, &e, &err), want_st);
    assert_string_equal(err.msg, want);
}

static void test_eval_refusals(void **state)
{
    fixture *f = *state;
    char p[600], want[800];
    refused(f, NULL, "nope", RT_ERR_INVALID,
            "--slice nope: no column \"nope\" in the spec (columns: x, color, y)");
    refused(f, NULL, "color,color", RT_ERR_INVALID, "--slice color,color: column \"color\" twice");
    snprintf(p, sizeof p, "%s/short.csv", f->sm.dir);
    write_file(p, "1,red,a\n2,green\n");
    snprintf(want, sizeof want, "%s:2: 2 fields, the spec has 3 columns", p);
    refused(f, p, NULL, RT_ERR_INVALID, want);
    snprintf(p, sizeof p, "%s/empty.csv", f->sm.dir);
    write_file(p, "\n\n");
    refused(f, p, NULL, RT_ERR_INVALID, "the data files hold no rows");
    snprintf(p, sizeof p, "%s/none.csv", f->sm.dir);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", p);
    refused(f, p, NULL, RT_ERR_NOTFOUND, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_counts),
        cmocka_unit_test(test_eval_batch_size),
        cmocka_unit_test(test_eval_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
