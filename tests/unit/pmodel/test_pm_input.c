/* test_pm_input.c — the input files of convert and batch-predict
 * (pmodel/pm_input.c): the format names (Vertex AI's and CMLE's), the file
 * list (comma lists and globs, with the messages of each refusal), and the
 * reader: lines (blank ones and header lines skipped, CR LF, no final
 * newline), byte ranges that share a file's rows out exactly once whatever
 * the cut, the line limit, and TFRecord records framed here by hand
 * (length, masked CRC-32C) so the reader is checked against an independent
 * writer, a corrupt record included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "pm.h"
#include "support_models.h"

static char dir[256];

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

/* DIR/name with the n bytes of s; its path in a static buffer (one of 4). */
static const char *put(const char *name, const void *s, size_t n)
{
    static char paths[4][512];
    static int k;
    char *p = paths[k++ & 3];
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(s, 1, n, f), n);
    fclose(f);
    return p;
}

static void test_input_formats(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        pm_in_format f;
    } ok[] = {
        {"jsonl", PM_IN_JSONL},
        {"TEXT", PM_IN_JSONL},
        {"json", PM_IN_JSONL},
        {"CSV", PM_IN_CSV},
        {"tf-record", PM_IN_TFRECORD},
        {"tf_record", PM_IN_TFRECORD},
        {"TFRecord", PM_IN_TFRECORD},
        {"TF_RECORD_GZIP", PM_IN_TFRECORD_GZIP},
        {"tfrecord-gzip", PM_IN_TFRECORD_GZIP},
        {"file-list", PM_IN_FILE_LIST},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        pm_in_format f = (pm_in_format)99;
        assert_int_equal(pm_in_format_parse(ok[k].name, &f), 0);
        assert_int_equal(f, ok[k].f);
    }
    pm_in_format f = PM_IN_CSV;
    assert_int_equal(pm_in_format_parse("parquet", &f), -1);
    assert_int_equal(pm_in_format_parse("jsonl ", &f), -1);
    assert_int_equal(pm_in_format_parse("", &f), -1);
    assert_int_equal(pm_in_format_parse(NULL, &f), -1);
    assert_int_equal(f, PM_IN_CSV); /* untouched by a refusal */
    /* each format's own name, and it reads back as itself */
    static const char *const names[] = {"jsonl", "csv", "tf-record", "tf-record-gzip", "file-list"};
    for (int k = PM_IN_JSONL; k <= PM_IN_FILE_LIST; k++) {
        assert_string_equal(pm_in_format_name((pm_in_format)k), names[k]);
        assert_int_equal(pm_in_format_parse(pm_in_format_name((pm_in_format)k), &f), 0);
        assert_int_equal(f, k);
    }
    assert_string_equal(pm_in_format_name((pm_in_format)42), "?");
}

static rt_status expand(const char *pat, char ***files, size_t *n, rt_err *err)
{
    const char *pats[] = {pat};
    return pm_expand_inputs(pats, 1, files, n, err);
}

static void free_files(char **files, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
}

static void test_input_file_list(void **state)
{
    (void)state;
    char a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s", put("b.csv", "x\n", 2));
    snprintf(b, sizeof b, "%s", put("a.csv", "x\n", 2));
    snprintf(c, sizeof c, "%s", put("c.txt", "x\n", 2));
    char pat[1024];
    char **files = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    /* a glob, sorted */
    snprintf(pat, sizeof pat, "%s/*.csv", dir);
    assert_int_equal(expand(pat, &files, &n, &err), RT_OK);
    assert_int_equal(n, 2);
    assert_string_equal(files[0], b);
    assert_string_equal(files[1], a);
    free_files(files, n);
    /* a comma list keeps its order; two patterns follow each other */
    snprintf(pat, sizeof pat, "%s,%s", c, a);
    const char *pats[] = {pat, b};
    assert_int_equal(pm_expand_inputs(pats, 2, &files, &n, &err), RT_OK);
    assert_int_equal(n, 3);
    assert_string_equal(files[0], c);
    assert_string_equal(files[1], a);
    assert_string_equal(files[2], b);
    free_files(files, n);
    /* the refusals, each naming its pattern */
    char want[1200];
    snprintf(pat, sizeof pat, "%s/*.json", dir);
    assert_int_equal(expand(pat, &files, &n, &err), RT_ERR_NOTFOUND);
    snprintf(want, sizeof want, "--input %s: no file matches", pat);
    assert_string_equal(err.msg, want);
    assert_null(files);
    assert_int_equal(n, 0);
    snprintf(pat, sizeof pat, "%s/missing.csv", dir);
    assert_int_equal(expand(pat, &files, &n, &err), RT_ERR_NOTFOUND);
    snprintf(want, sizeof want, "--input %s: No such file or directory", pat);
    assert_string_equal(err.msg, want);
    assert_int_equal(expand(dir, &files, &n, &err), RT_ERR_INVALID);
    snprintf(want, sizeof want, "--input %s: not a regular file", dir);
    assert_string_equal(err.msg, want);
    assert_int_equal(expand(",", &files, &n, &err), RT_ERR_NOTFOUND);
    assert_string_equal(err.msg, "--input: no file named");
    assert_int_equal(pm_expand_inputs(NULL, 0, &files, &n, &err), RT_ERR_NOTFOUND);
    assert_string_equal(err.msg, "--input: no file named");
    /* a good file before a bad one: nothing is kept */
    snprintf(pat, sizeof pat, "%s,%s/nope", a, dir);
    assert_int_equal(expand(pat, &files, &n, &err), RT_ERR_NOTFOUND);
    assert_null(files);
    assert_int_equal(n, 0);
}

/* Every row of path's range [start, end) as "LINE:text;" appended to out. */
static rt_status rows_of(const char *path, pm_in_format f, uint64_t start, uint64_t end,
                         size_t skip, char *out, size_t cap)
{
    pm_in *in = NULL;
    rt_err err = {{0}};
    rt_status st = pm_in_open(path, f, start, end, skip, &in, &err);
    if (st != RT_OK)
        return st;
    const uint8_t *data;
    size_t len;
    uint64_t where;
    while ((st = pm_in_next(in, &data, &len, &where, &err)) == RT_OK) {
        size_t at = strlen(out);
        snprintf(out + at, cap - at, "%llu:%.*s;", (unsigned long long)where, (int)len,
                 (const char *)data);
    }
    pm_in_close(in);
    return st == RT_ERR_NOTFOUND ? RT_OK : st;
}

static const char LINES[] = "h1\n\nrow1\r\n  \t\nrow 2\nrow3";

static void test_input_lines(void **state)
{
    (void)state;
    const char *p = put("rows.csv", LINES, strlen(LINES));
    char got[512] = "";
    assert_int_equal(rows_of(p, PM_IN_CSV, 0, 0, 0, got, sizeof got), RT_OK);
    assert_string_equal(got, "1:h1;3:row1;5:row 2;6:row3;");
    got[0] = '\0';
    assert_int_equal(rows_of(p, PM_IN_JSONL, 0, 0, 1, got, sizeof got), RT_OK);
    assert_string_equal(got, "3:row1;5:row 2;6:row3;");
    got[0] = '\0'; /* header lines count every line, blank ones too */
    assert_int_equal(rows_of(p, PM_IN_CSV, 0, 0, 3, got, sizeof got), RT_OK);
    assert_string_equal(got, "5:row 2;6:row3;");
    pm_in *in = NULL;
    rt_err err = {{0}};
    assert_int_equal(pm_in_open(p, PM_IN_CSV, 0, 0, 0, &in, &err), RT_OK);
    assert_int_equal(pm_in_records(in), 0);
    uint64_t off, bytes;
    int gz;
    assert_int_equal(pm_in_lost(in, &off, &bytes, &gz), 0);
    pm_in_close(in);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none.csv", dir);
    assert_int_equal(pm_in_open(missing, PM_IN_CSV, 0, 0, 0, &in, &err), RT_ERR_IO);
    assert_null(in);
    char want[700];
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing);
    assert_string_equal(err.msg, want);
}

/* Ranges cut at any byte share the rows out exactly once, each with its own
 * line number: [0, c) then [c, end) read as the whole file. */
static void test_input_ranges(void **state)
{
    (void)state;
    const char *p = put("rows.csv", LINES, strlen(LINES));
    char whole[512] = "";
    assert_int_equal(rows_of(p, PM_IN_CSV, 0, 0, 1, whole, sizeof whole), RT_OK);
    size_t size = strlen(LINES);
    for (size_t c = 1; c <= size; c++) {
        char got[512] = "";
        assert_int_equal(rows_of(p, PM_IN_CSV, 0, c, 1, got, sizeof got), RT_OK);
        assert_int_equal(rows_of(p, PM_IN_CSV, c, 0, 1, got, sizeof got), RT_OK);
        assert_string_equal(got, whole);
    }
    /* three pieces too */
    for (size_t c1 = 1; c1 < size; c1++)
        for (size_t c2 = c1; c2 <= size; c2++) {
            char got[512] = "";
            assert_int_equal(rows_of(p, PM_IN_CSV, 0, c1, 1, got, sizeof got), RT_OK);
            assert_int_equal(rows_of(p, PM_IN_CSV, c1, c2, 1, got, sizeof got), RT_OK);
            assert_int_equal(rows_of(p, PM_IN_CSV, c2, 0, 1, got, sizeof got), RT_OK);
            assert_string_equal(got, whole);
        }
}

static void test_input_line_limit(void **state)
{
    (void)state;
    const char *p = put("long.jsonl", "abc\nabcdefgh\nabcde\n", 19);
    pm_in *in = NULL;
    rt_err err = {{0}};
    assert_int_equal(pm_in_open(p, PM_IN_JSONL, 0, 0, 0, &in, &err), RT_OK);
    pm_in_set_max_line(in, 5);
    const uint8_t *data;
    size_t len;
    uint64_t where;
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_OK);
    assert_int_equal(where, 1);
    assert_memory_equal(data, "abc", 3);
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_ERR_LIMIT);
    assert_int_equal(where, 2);
    char want[700];
    snprintf(want, sizeof want,
             "%s:2: the line is longer than 5 bytes (--max-line-bytes): 9 bytes, not read", p);
    assert_string_equal(err.msg, want);
    /* reading goes on at the next line; 5 bytes is not over the limit */
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_OK);
    assert_int_equal(where, 3);
    assert_int_equal(len, 5);
    assert_string_equal((const char *)data, "abcde");
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_ERR_NOTFOUND);
    pm_in_close(in);
}

/* One TFRecord frame: length (8 bytes LE), its masked CRC-32C, the data,
 * the data's masked CRC-32C. */
static size_t frame(uint8_t *out, const char *data)
{
    uint64_t n = strlen(data);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(n >> (8 * i));
    uint32_t c1 = rt_tfrecord_mask(rt_hash_crc32c(0, len, 8));
    uint32_t c2 = rt_tfrecord_mask(rt_hash_crc32c(0, data, n));
    memcpy(out, len, 8);
    for (int i = 0; i < 4; i++)
        out[8 + i] = (uint8_t)(c1 >> (8 * i));
    memcpy(out + 12, data, n);
    for (int i = 0; i < 4; i++)
        out[12 + n + i] = (uint8_t)(c2 >> (8 * i));
    return 16 + n;
}

static void test_input_tfrecord(void **state)
{
    (void)state;
    /* CRC-32C's check value, and the mask as TensorFlow defines it */
    assert_int_equal(rt_hash_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(rt_tfrecord_mask(0), 0xa282ead8u);
    assert_int_equal(rt_tfrecord_mask(0x12345678u),
                     (uint32_t)(((0x12345678u >> 15) | (0x12345678u << 17)) + 0xa282ead8u));
    uint8_t buf[256];
    size_t n = frame(buf, "first");
    size_t second = n;
    n += frame(buf + n, "second record");
    n += frame(buf + n, "3");
    const char *p = put("r.tfrecord", buf, n);
    char got[512] = "";
    assert_int_equal(rows_of(p, PM_IN_TFRECORD, 0, 0, 0, got, sizeof got), RT_OK);
    assert_string_equal(got, "1:first;2:second record;3:3;");
    pm_in *in = NULL;
    rt_err err = {{0}};
    assert_int_equal(pm_in_open(p, PM_IN_TFRECORD, 0, 0, 0, &in, &err), RT_OK);
    assert_int_equal(pm_in_records(in), 1);
    pm_in_close(in);

    /* a corrupt data byte in the second record: refused, the reader goes on */
    buf[second + 12] ^= 0x20;
    p = put("bad.tfrecord", buf, n);
    assert_int_equal(pm_in_open(p, PM_IN_TFRECORD, 0, 0, 0, &in, &err), RT_OK);
    const uint8_t *data;
    size_t len;
    uint64_t where, off, bytes;
    int gz;
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_OK);
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_ERR_FORMAT);
    assert_int_equal(where, 2);
    assert_non_null(strstr(err.msg, "corrupt data"));
    assert_int_equal(pm_in_lost(in, &off, &bytes, &gz), 0);
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_OK);
    assert_int_equal(where, 3);
    assert_memory_equal(data, "3", 1);
    pm_in_close(in);

    /* a truncated last record: the file ends there, its bytes lost */
    buf[second + 12] ^= 0x20;
    p = put("short.tfrecord", buf, n - 3);
    assert_int_equal(pm_in_open(p, PM_IN_TFRECORD, 0, 0, 0, &in, &err), RT_OK);
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_OK);
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_OK);
    assert_int_equal(pm_in_next(in, &data, &len, &where, &err), RT_ERR_FORMAT);
    assert_int_equal(pm_in_lost(in, &off, &bytes, &gz), 1);
    size_t third = second + 16 + strlen("second record");
    assert_int_equal(off, third);
    assert_int_equal(bytes, n - 3 - third);
    assert_int_equal(gz, 0);
    pm_in_close(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_formats),
        cmocka_unit_test_setup_teardown(test_input_file_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_line_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_tfrecord, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
