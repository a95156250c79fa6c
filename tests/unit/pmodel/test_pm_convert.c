/* test_pm_convert.c — predict-model convert (pmodel/pm_convert.c): the
 * checks of its flags with their exact messages, CSV to TFRecord (plain and
 * gzip) and back to the same CSV text, CSV to CSV with the quoting put back
 * only where a cell needs it, a refused row naming FILE:LINE with nothing
 * written, and the run's summary line. The records are counted by the
 * reader of pm_input.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pm.h"
#include "support_stderr.h"
#include "support_models.h"

static char dir[256], spec[512];
static char captured[4096];

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

/* The whole of a small file (static; "" when it cannot be read). */
static const char *file_text(const char *path)
{
    static char buf[4096];
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    if (support_mkdtemp(dir, sizeof dir) != 0)
        return -1;
    snprintf(spec, sizeof spec, "%s/spec.json", dir);
    write_file(spec, SUPPORT_SPEC_LINEAR);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return support_rmtree(dir);
}

/* pm_cmd_convert on argv ("predict-model", "convert", flags..., NULL), stderr
 * into captured. */
static int convert(const char *const *argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    support_capture cap = support_stderr_begin();
    int rc = pm_cmd_convert(argc, (char **)argv);
    support_stderr_end(cap, captured, sizeof captured);
    return rc;
}

static void path_of(char *out, const char *name)
{
    snprintf(out, 600, "%s/%s", dir, name);
}

static void test_convert_flag_checks(void **state)
{
    (void)state;
    static const struct {
        const char *argv[14];
        const char *first;
    } cases[] = {
        {{"predict-model", "convert", "--input", "a.csv", "--to", "csv", "--output", "o", NULL},
         "predict-model convert: give --dir EXPORT or --spec SPEC.json (one of them)\n"},
        {{"predict-model", "convert", "--dir", "d", "--spec", "s", "--input", "a", "--to", "csv",
          "--output", "o"},
         "predict-model convert: give --dir EXPORT or --spec SPEC.json (one of them)\n"},
        {{"predict-model", "convert", "--spec", "s", "--to", "csv", "--output", "o", NULL},
         "predict-model convert: missing --input FILE\n"},
        {{"predict-model", "convert", "--spec", "s", "--input", "a", "--to", "csv", NULL},
         "predict-model convert: missing --output FILE\n"},
        {{"predict-model", "convert", "--spec", "s", "--input", "a", "--output", "o", NULL},
         "predict-model convert: --to \"\": expected tfrecord, tfrecord-gzip or csv\n"},
        {{"predict-model", "convert", "--spec", "s", "--input", "a", "--to", "jsonl", "--output",
          "o", NULL},
         "predict-model convert: --to \"jsonl\": expected tfrecord, tfrecord-gzip or csv\n"},
        {{"predict-model", "convert", "--spec", "s", "--input", "a", "--to", "parquet", "--output",
          "o", NULL},
         "predict-model convert: --to \"parquet\": expected tfrecord, tfrecord-gzip or csv\n"},
        {{"predict-model", "convert", "--skip-header-lines", "-1", NULL},
         "predict-model convert: --skip-header-lines: -1 is out of range [0, 1000000]\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        assert_int_equal(convert(cases[k].argv), PM_EXIT_USAGE);
        size_t n = strlen(cases[k].first);
        assert_int_equal(strncmp(captured, cases[k].first, n), 0);
        assert_int_equal(strncmp(captured + n, "usage: predict-model convert ", 29), 0);
    }
}

static const char ROWS[] = "1.5,red,a\n"
                           ",\"green, light\",b\n"
                           "-2,,c\n"
                           "3,\"say \"\"hi\"\"\",a\n";

static void test_convert_round_trip(void **state)
{
    (void)state;
    char in[600], rec[600], back[600], want[800];
    path_of(in, "in.csv");
    char with_header[512];
    snprintf(with_header, sizeof with_header, "x,color,y\n%s", ROWS);
    write_file(in, with_header);
    static const char *const to[] = {"tfrecord", "tfrecord-gzip", "TF_RECORD_GZIP"};
    for (size_t k = 0; k < 3; k++) {
        path_of(rec, k ? "out.tfrecord.gz" : "out.tfrecord");
        const char *a1[] = {"predict-model",
                            "convert",
                            "--spec",
                            spec,
                            "--input",
                            in,
                            "--to",
                            to[k],
                            "--output",
                            rec,
                            "--skip-header-lines",
                            "1",
                            NULL};
        assert_int_equal(convert(a1), 0);
        snprintf(want, sizeof want, "predict-model convert: 4 rows from 1 file to %s\n", rec);
        assert_string_equal(captured, want);
        const char *t = file_text(rec);
        if (k) /* gzip's magic */
            assert_true((unsigned char)t[0] == 0x1f && (unsigned char)t[1] == 0x8b);
        /* four records, read back by the reader batch-predict uses */
        pm_in *r = NULL;
        rt_err err = {{0}};
        assert_int_equal(
            pm_in_open(rec, k ? PM_IN_TFRECORD_GZIP : PM_IN_TFRECORD, 0, 0, 0, &r, &err), RT_OK);
        const uint8_t *data;
        size_t len;
        uint64_t where, n = 0;
        while (pm_in_next(r, &data, &len, &where, &err) == RT_OK)
            n++;
        pm_in_close(r);
        assert_int_equal(n, 4);
        /* and back: the same CSV text, without its header */
        path_of(back, "back.csv");
        const char *a2[] = {"predict-model", "convert", "--spec",   spec, "--input", rec,
                            "--to",          "csv",     "--output", back, NULL};
        assert_int_equal(convert(a2), 0);
        assert_string_equal(file_text(back), ROWS);
    }
    /* CSV to CSV: quotes only where a cell needs them */
    write_file(in, "\"1.5\",\"red\",\"a\"\n\"2\",\"x,y\",b\r\n");
    const char *a3[] = {"predict-model", "convert", "--spec",   spec, "--input", in,
                        "--to",          "csv",     "--output", back, NULL};
    assert_int_equal(convert(a3), 0);
    assert_string_equal(file_text(back), "1.5,red,a\n2,\"x,y\",b\n");
}

static void test_convert_refused_row(void **state)
{
    (void)state;
    char in[600], out[600], want[1400];
    path_of(in, "bad.csv");
    path_of(out, "never.tfrecord");
    write_file(in, "1,red,a\n2,red\n");
    const char *argv[] = {"predict-model", "convert",  "--spec",   spec, "--input", in,
                          "--to",          "tfrecord", "--output", out,  NULL};
    assert_int_equal(convert(argv), 1);
    snprintf(want, sizeof want, "predict-model convert: %s:2: expected 3 fields, got 2\n", in);
    assert_string_equal(captured, want);
    assert_int_equal(access(out, F_OK), -1); /* nothing written */
    char spec2[600];
    path_of(spec2, "none.json");
    const char *nospec[] = {"predict-model", "convert", "--spec",   spec2, "--input", in,
                            "--to",          "csv",     "--output", out,   NULL};
    assert_int_equal(convert(nospec), 1);
    snprintf(want, sizeof want,
             "predict-model convert: --spec %s: cannot open: No such file or "
             "directory\n",
             spec2);
    assert_string_equal(captured, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert_flag_checks),
        cmocka_unit_test_setup_teardown(test_convert_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_convert_refused_row, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
