/* test_pm_stats.c — the data statistics of predict-model stats and validate
 * (pmodel/pm_stats.c, pm_report.c): --skip-header-lines' count and its
 * refusal, the statistics of CSV files in an export's columns checked against
 * numbers worked out here from the rows (counts, missing, min, max, mean,
 * population standard deviation, the most frequent string), the values outside
 * the training range, the refusals naming FILE:LINE, and the reports' HTML
 * escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <cmocka.h>

#include "pm.h"
#include "support_stderr.h"
#include "support_models.h"

static char captured[2048];

static int skip_lines(const char *s, size_t *skip)
{
    support_capture cap = support_stderr_begin();
    int rc = pm_stats_skip_lines(s, skip);
    support_stderr_end(cap, captured, sizeof captured);
    return rc;
}

static void test_stats_skip_lines(void **state)
{
    (void)state;
    size_t skip = 99;
    assert_int_equal(skip_lines(NULL, &skip), 0);
    assert_int_equal(skip, 0);
    assert_int_equal(skip_lines("12", &skip), 0);
    assert_int_equal(skip, 12);
    assert_int_equal(skip_lines("1000000", &skip), 0);
    assert_int_equal(skip, 1000000);
    assert_string_equal(captured, "");
    static const char *const bad[] = {"", "x", "3 ", "1000001", "-1", "1.5", "0x10"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(skip_lines(bad[k], &skip), PM_EXIT_USAGE);
        char want[200];
        snprintf(want, sizeof want, "predict-model: --skip-header-lines: \"%s\" is not a count\n",
                 bad[k]);
        assert_string_equal(captured, want);
    }
}

typedef struct fixture {
    support_model sm;
    char path[512];
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
    if (!f || support_model_open(SUPPORT_SPEC_LINEAR, 3, 1, &f->sm) != 0)
        return -1;
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

static const char *data(fixture *f, const char *name, const char *rows)
{
    snprintf(f->path, sizeof f->path, "%s/%s", f->sm.dir, name);
    write_file(f->path, rows);
    return f->path;
}

static void test_stats_of_files(void **state)
{
    fixture *f = *state;
    const Predictd__ModelDef *def = rt_model_def(f->sm.m);
    const char *files[] = {data(f, "d.csv",
                                "x,color,y\n"
                                "1.5,red,a\n"
                                ",green,b\n"
                                "\n"
                                "-2,red,c\n"
                                "4,red,a\n"
                                "0,blue,b\n")};
    rt_stats *s = NULL;
    rt_err err = {{0}};
    assert_int_equal(pm_stats_of_files(def, files, 1, 1, NULL, NULL, NULL, &s, &err), RT_OK);
    assert_int_equal(s->num_examples, 5);
    const rt_feature_stats *x = rt_stats_find(s, "x");
    assert_non_null(x);
    assert_int_equal(x->type, RT_STATS_FLOAT);
    assert_int_equal(x->num_non_missing, 4);
    assert_int_equal(x->num_missing, 1);
    assert_int_equal(x->num_zeros, 1);
    assert_true(x->min == -2.0 && x->max == 4.0);
    const double v[] = {1.5, -2, 4, 0};
    double mean = (v[0] + v[1] + v[2] + v[3]) / 4, ss = 0;
    for (int i = 0; i < 4; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    assert_true(fabs(x->mean - mean) < 1e-12);
    assert_true(fabs(x->std_dev - sqrt(ss / 4)) < 1e-12);
    const rt_feature_stats *c = rt_stats_find(s, "color");
    assert_non_null(c);
    assert_int_equal(c->type, RT_STATS_STRING);
    assert_int_equal(c->num_non_missing, 5);
    assert_int_equal(c->unique, 3);
    assert_true(c->n_values >= 1);
    assert_string_equal(c->values[0].value, "red");
    assert_int_equal(c->values[0].count, 3);
    assert_true(fabs(c->avg_length - (3 + 5 + 3 + 3 + 4) / 5.0) < 1e-12);
    assert_null(rt_stats_find(s, "nope"));

    /* against training statistics: the numbers outside their [min, max] */
    const char *more[] = {data(f, "e.csv", "5,red,a\n-3,red,a\n0.5,blue,b\n")};
    rt_stats *s2 = NULL;
    uint64_t oor[8] = {0}, nonint[8] = {0};
    assert_int_equal(pm_stats_of_files(def, more, 1, 0, s, oor, nonint, &s2, &err), RT_OK);
    assert_int_equal(s2->num_examples, 3);
    uint64_t total = 0, nonints = 0;
    for (int i = 0; i < 8; i++) {
        total += oor[i];
        nonints += nonint[i];
    }
    assert_int_equal(total, 2);   /* 5 and -3 are outside [-2, 4] */
    assert_int_equal(nonints, 0); /* x is a FLOAT input */
    rt_stats_free(s2);
    rt_stats_free(s);
}

static void test_stats_refusals(void **state)
{
    fixture *f = *state;
    const Predictd__ModelDef *def = rt_model_def(f->sm.m);
    rt_stats *s = NULL;
    rt_err err = {{0}};
    char want[800];
    /* a row may end before the trailing label (serving data), no sooner */
    const char *nolabel[] = {data(f, "nolabel.csv", "1,red,a\n2,red\n")};
    assert_int_equal(pm_stats_of_files(def, nolabel, 1, 0, NULL, NULL, NULL, &s, &err), RT_OK);
    assert_int_equal(s->num_examples, 2);
    rt_stats_free(s);
    s = NULL;
    const char *files[] = {data(f, "bad.csv", "1,red,a\n2\n")};
    assert_int_equal(pm_stats_of_files(def, files, 1, 0, NULL, NULL, NULL, &s, &err),
                     RT_ERR_INVALID);
    snprintf(want, sizeof want,
             "%s:2: expected 3 fields (the model's columns) or 2 (without the label), got 1",
             files[0]);
    assert_string_equal(err.msg, want);
    assert_null(s);
    const char *num[] = {data(f, "num.csv", "1,red,a\nabc,red,a\n")};
    assert_int_equal(pm_stats_of_files(def, num, 1, 0, NULL, NULL, NULL, &s, &err), RT_ERR_INVALID);
    snprintf(want, sizeof want, "%s:2:", num[0]);
    assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
    assert_null(s);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none.csv", f->sm.dir);
    const char *none[] = {missing};
    assert_int_equal(pm_stats_of_files(def, none, 1, 0, NULL, NULL, NULL, &s, &err), RT_ERR_IO);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing);
    assert_string_equal(err.msg, want);
}

static void test_stats_html_escape(void **state)
{
    (void)state;
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(pm_html_esc(&b, "<a href=\"x\">Tom & Jerry's</a> \xc3\xa9"), 0);
    assert_string_equal(b.data, "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt; "
                                "\xc3\xa9");
    rt_buf_free(&b);
    rt_buf_init(&b);
    assert_int_equal(pm_html_esc(&b, ""), 0);
    assert_true(b.len == 0);
    rt_buf_free(&b);
    /* the page style is self-contained: nothing fetched */
    assert_null(strstr(pm_report_css(), "url("));
    assert_null(strstr(pm_report_css(), "@import"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_skip_lines),
        cmocka_unit_test_setup_teardown(test_stats_of_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats_refusals, setup, teardown),
        cmocka_unit_test(test_stats_html_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
