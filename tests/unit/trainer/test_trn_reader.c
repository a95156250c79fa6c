/* test_trn_reader.c — the streaming CSV reader: every row exactly once per
 * epoch whatever the shuffle buffer, the same seed the same order, batches,
 * epochs, quoted fields, comma lists and globs, and malformed rows reported
 * with file:line (stop) or skipped and counted (skip); epochs replayed from
 * memory equal epochs read again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "trn.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_trn_reader.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes rows "i, name<i>, <i*0.5>" for i in [lo, hi). */
static void write_csv(const char *name, int lo, int hi, const char *extra)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    for (int i = lo; i < hi; i++)
        fprintf(fp, "%d, name%d, %g\n", i, i, i * 0.5);
    if (extra)
        fputs(extra, fp);
    fclose(fp);
}

static const uint8_t numeric3[3] = {1, 0, 1};

/* Default parameters for one file f[0] of the 3-column rows above. */
static trn_reader_params params3(const char *const *f)
{
    trn_reader_params p = trn_reader_default_params();
    p.files = f;
    p.n_files = 1;
    p.n_fields = 3;
    p.numeric = numeric3;
    return p;
}

static trn_reader *open3(const char *files, size_t batch, size_t shuffle, int64_t epochs,
                         uint64_t seed, trn_bad_row_policy bad, rt_status *st, rt_err *err)
{
    const char *f[1] = {files};
    trn_reader_params p = params3(f);
    p.batch_size = batch;
    p.shuffle_buffer_size = shuffle;
    p.num_epochs = epochs;
    p.seed = seed;
    p.bad_rows = bad;
    trn_reader *r = NULL;
    *st = trn_reader_open(&p, &r, err);
    return r;
}

/* Reads everything; returns the first field of each row in order. */
static size_t read_all(trn_reader *r, int *ids, size_t cap, size_t batch, rt_status *end,
                       rt_err *err)
{
    size_t n = 0;
    const trn_rows *rows;
    while ((*end = trn_reader_next(r, &rows, err)) == RT_OK) {
        assert_true(rows->n >= 1 && rows->n <= batch);
        for (size_t i = 0; i < rows->n; i++) {
            const trn_field *f = rows->fields + i * 3;
            char tmp[32];
            assert_true(f[0].len < sizeof tmp);
            memcpy(tmp, f[0].s, f[0].len);
            tmp[f[0].len] = '\0';
            if (n < cap)
                ids[n] = atoi(tmp);
            n++;
        }
    }
    return n;
}

static void test_every_row_once_per_epoch(void **state)
{
    (void)state;
    write_csv("a.csv", 0, 137, NULL);
    char files[300];
    snprintf(files, sizeof files, "%s/a.csv", dir);
    size_t shuffles[] = {0, 10, 1000};
    int first[3][411];
    for (size_t s = 0; s < 3; s++) {
        rt_status st, end;
        rt_err err;
        trn_reader *r = open3(files, 16, shuffles[s], 3, 5, TRN_BAD_ROW_STOP, &st, &err);
        assert_int_equal(st, RT_OK);
        int ids[411];
        size_t n = read_all(r, ids, 411, 16, &end, &err);
        assert_int_equal(end, RT_ERR_NOTFOUND);
        assert_int_equal(n, 411);
        int count[137] = {0};
        for (size_t i = 0; i < n; i++) {
            assert_true(ids[i] >= 0 && ids[i] < 137);
            count[ids[i]]++;
        }
        for (int i = 0; i < 137; i++)
            assert_int_equal(count[i], 3);
        if (shuffles[s] == 0)
            for (size_t i = 0; i < n; i++)
                assert_int_equal(ids[i], (int)(i % 137));
        memcpy(first[s], ids, sizeof ids);
        trn_reader_stats rs;
        trn_reader_get_stats(r, &rs);
        assert_int_equal(rs.rows, 411);
        assert_int_equal(rs.epochs, 3);
        trn_reader_close(r);
    }
    /* shuffled: not file order; same seed: same order */
    assert_true(memcmp(first[2], first[0], sizeof first[0]) != 0);
    rt_status st, end;
    rt_err err;
    trn_reader *r = open3(files, 16, 1000, 3, 5, TRN_BAD_ROW_STOP, &st, &err);
    int again[411];
    read_all(r, again, 411, 16, &end, &err);
    trn_reader_close(r);
    assert_memory_equal(again, first[2], sizeof again);
}

static void test_globs_lists_and_quotes(void **state)
{
    (void)state;
    write_csv("part-1.csv", 0, 5, NULL);
    write_csv("part-2.csv", 5, 9, "9, \"a, \"\"quoted\"\" name\", 4.5\n\n");
    char files[700];
    snprintf(files, sizeof files, "%s/part-*.csv", dir);
    rt_status st, end;
    rt_err err;
    trn_reader *r = open3(files, 100, 0, 1, 1, TRN_BAD_ROW_STOP, &st, &err);
    assert_int_equal(st, RT_OK);
    const trn_rows *rows;
    assert_int_equal(trn_reader_next(r, &rows, &err), RT_OK);
    assert_int_equal(rows->n, 10);
    const trn_field *q = rows->fields + 9 * 3 + 1;
    assert_int_equal(q->len, strlen("a, \"quoted\" name"));
    assert_memory_equal(q->s, "a, \"quoted\" name", q->len);
    assert_int_equal(trn_reader_next(r, &rows, &err), RT_ERR_NOTFOUND);
    trn_reader_close(r);

    snprintf(files, sizeof files, "%s/part-2.csv,%s/part-1.csv", dir, dir);
    r = open3(files, 3, 0, 1, 1, TRN_BAD_ROW_STOP, &st, &err);
    assert_int_equal(st, RT_OK);
    int ids[20];
    assert_int_equal(read_all(r, ids, 20, 3, &end, &err), 10);
    assert_int_equal(ids[0], 5);
    assert_int_equal(ids[5], 0);
    trn_reader_close(r);

    snprintf(files, sizeof files, "%s/missing.csv", dir);
    r = open3(files, 3, 0, 1, 1, TRN_BAD_ROW_STOP, &st, &err);
    assert_null(r);
    assert_int_equal(st, RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "missing.csv"));
    snprintf(files, sizeof files, "%s/nothing-*.csv", dir);
    r = open3(files, 3, 0, 1, 1, TRN_BAD_ROW_STOP, &st, &err);
    assert_null(r);
    assert_non_null(strstr(err.msg, "no file matches"));
}

static void test_malformed_rows(void **state)
{
    (void)state;
    write_csv("bad.csv", 0, 4, "4, only two\n5, x, notanumber\n6, y, 3\n");
    char files[300];
    snprintf(files, sizeof files, "%s/bad.csv", dir);
    rt_status st, end;
    rt_err err;
    trn_reader *r = open3(files, 2, 0, 1, 1, TRN_BAD_ROW_STOP, &st, &err);
    assert_int_equal(st, RT_OK);
    int ids[10];
    size_t n = read_all(r, ids, 10, 2, &end, &err);
    assert_int_equal(end, RT_ERR_FORMAT);
    assert_true(n <= 4);
    assert_non_null(strstr(err.msg, "bad.csv:5: expected 3 fields, got 2"));
    trn_reader_close(r);

    r = open3(files, 2, 0, 1, 1, TRN_BAD_ROW_SKIP, &st, &err);
    n = read_all(r, ids, 10, 2, &end, &err);
    assert_int_equal(end, RT_ERR_NOTFOUND);
    assert_int_equal(n, 5);
    assert_int_equal(ids[4], 6);
    trn_reader_stats rs;
    trn_reader_get_stats(r, &rs);
    assert_int_equal(rs.bad_rows, 2);
    assert_non_null(strstr(rs.first_bad, "bad.csv:5:"));
    trn_reader_close(r);
}

static void test_header_lines_skipped(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/hdr.csv", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("id, name, value\n1, a, 2\n2, b, 3\n", fp);
    fclose(fp);
    const char *f[1] = {path};
    trn_reader_params p = params3(f);
    p.skip_header_lines = 1;
    trn_reader *r;
    rt_err err;
    assert_int_equal(trn_reader_open(&p, &r, &err), RT_OK);
    int ids[4];
    rt_status end;
    assert_int_equal(read_all(r, ids, 4, 40, &end, &err), 2);
    assert_int_equal(end, RT_ERR_NOTFOUND);
    assert_int_equal(ids[0], 1);
    trn_reader_close(r);
    /* without skipping, the header is a malformed row at line 1 */
    p.skip_header_lines = 0;
    assert_int_equal(trn_reader_open(&p, &r, &err), RT_OK);
    read_all(r, ids, 4, 40, &end, &err);
    assert_int_equal(end, RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "hdr.csv:1: field 1: expected a number, got \"id\""));
    trn_reader_close(r);
}

/* A NUL byte in a string field is refused as in a numeric one (it would cut
 * the value short wherever it is used as a C string): stop names the field,
 * skip counts the row. The numeric field's refusal names the column when
 * the reader has names. */
static void test_nul_bytes_refused(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/nul.csv", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    static const char data[] = "1, a, 2\n2, b\0c, 3\n3, \"q\0\", 4\n4, d, 5\0\n5, e, 6\n";
    assert_int_equal(fwrite(data, 1, sizeof data - 1, fp), sizeof data - 1);
    fclose(fp);
    rt_status st, end;
    rt_err err;
    trn_reader *r = open3(path, 10, 0, 1, 1, TRN_BAD_ROW_STOP, &st, &err);
    assert_int_equal(st, RT_OK);
    int ids[10];
    size_t n = read_all(r, ids, 10, 10, &end, &err);
    assert_int_equal(end, RT_ERR_FORMAT);
    assert_int_equal(n, 0);
    assert_non_null(strstr(err.msg, "nul.csv:2: field 2: contains a NUL byte"));
    trn_reader_close(r);

    r = open3(path, 10, 0, 1, 1, TRN_BAD_ROW_SKIP, &st, &err);
    assert_int_equal(st, RT_OK);
    n = read_all(r, ids, 10, 10, &end, &err);
    assert_int_equal(end, RT_ERR_NOTFOUND);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 5);
    trn_reader_stats rs;
    trn_reader_get_stats(r, &rs);
    assert_int_equal(rs.bad_rows, 3); /* lines 2, 3 (quoted) and 4 (numeric) */
    assert_non_null(strstr(rs.first_bad, "nul.csv:2: field 2: contains a NUL byte"));
    trn_reader_close(r);

    /* with names, a bad number names its column */
    const char *f[1] = {path};
    static const char *const names[3] = {"id", "name", "value"};
    trn_reader_params p = params3(f);
    p.names = names;
    p.bad_rows = TRN_BAD_ROW_SKIP;
    assert_int_equal(trn_reader_open(&p, &r, &err), RT_OK);
    n = read_all(r, ids, 10, 40, &end, &err);
    assert_int_equal(n, 2);
    trn_reader_close(r);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("1, a, 2x\n", fp);
    fclose(fp);
    p.bad_rows = TRN_BAD_ROW_STOP;
    assert_int_equal(trn_reader_open(&p, &r, &err), RT_OK);
    read_all(r, ids, 10, 40, &end, &err);
    assert_int_equal(end, RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "nul.csv:1: field 3 (value): expected a number, got \"2x\""));
    trn_reader_close(r);
}

/* One row as the reader gave it: file line, ordinal and field text. */
typedef struct seen {
    uint64_t line, ordinal;
    char text[64];
} seen;

/* Reads a whole stream with the given cache budget (0: off). */
static size_t read_cached(const char *files, uint64_t cache_bytes, seen *out, size_t cap,
                          trn_reader_stats *stats)
{
    const char *f[1] = {files};
    trn_reader_params p = params3(f);
    p.batch_size = 6;
    p.shuffle_buffer_size = 17;
    p.num_epochs = 3;
    p.seed = 9;
    p.bad_rows = TRN_BAD_ROW_SKIP;
    p.skip_header_lines = 1;
    p.cache_bytes = cache_bytes;
    trn_reader *r = NULL;
    rt_err err;
    assert_int_equal(trn_reader_open(&p, &r, &err), RT_OK);
    const trn_rows *rows;
    size_t n = 0;
    rt_status st;
    while ((st = trn_reader_next(r, &rows, &err)) == RT_OK) {
        for (size_t i = 0; i < rows->n; i++) {
            assert_true(n < cap);
            const trn_field *fl = rows->fields + i * 3;
            out[n].line = rows->src_line[i];
            out[n].ordinal = rows->ordinal ? rows->ordinal[i] : TRN_NO_ORDINAL;
            snprintf(out[n].text, sizeof out[n].text, "%.*s|%.*s|%.*s|%g", (int)fl[0].len,
                     fl[0].s, (int)fl[1].len, fl[1].s, (int)fl[2].len, fl[2].s, fl[2].num);
            n++;
        }
    }
    assert_int_equal(st, RT_ERR_NOTFOUND);
    trn_reader_get_stats(r, stats);
    trn_reader_close(r);
    return n;
}

/* Epochs replayed from memory (cache_bytes) give the rows, order and counts
 * that reading the files again gives; each row keeps its ordinal. */
static void test_replay_from_memory(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/replay.csv", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("id, name, x\n", fp);
    for (int i = 0; i < 60; i++) {
        if (i == 7 || i == 59)
            fputs("1, 2\n", fp);   /* malformed: skipped in every epoch */
        if (i == 20)
            fputs("\n", fp);       /* blank */
        fprintf(fp, "%d, row%d, %g\n", i, i, i * 0.25);
    }
    fputs("2, x, notanumber\n", fp);
    fclose(fp);
    static seen plain[400], kept[400], tiny[400];
    trn_reader_stats sp, sk, st;
    size_t np = read_cached(path, 0, plain, 400, &sp);
    size_t nk = read_cached(path, 1 << 20, kept, 400, &sk);
    size_t nt = read_cached(path, 2000, tiny, 400, &st); /* room for a few rows only */
    assert_int_equal(np, 180);
    assert_int_equal(nk, np);
    assert_int_equal(nt, np);
    for (size_t i = 0; i < np; i++) {
        assert_int_equal(kept[i].line, plain[i].line);
        assert_string_equal(kept[i].text, plain[i].text);
        assert_int_equal(tiny[i].line, plain[i].line);
        assert_string_equal(tiny[i].text, plain[i].text);
        assert_true(plain[i].ordinal == TRN_NO_ORDINAL);
        /* an ordinal names one row: the same line in every epoch */
        assert_true(kept[i].ordinal < 60);
        for (size_t j = 0; j < i; j++)
            if (kept[j].ordinal == kept[i].ordinal)
                assert_int_equal(kept[j].line, kept[i].line);
    }
    assert_int_equal(sk.rows, sp.rows);
    assert_int_equal(sk.bad_rows, sp.bad_rows);
    assert_int_equal(sp.bad_rows, 9);
    assert_int_equal(sk.epochs, sp.epochs);
    assert_string_equal(sk.first_bad, sp.first_bad);
    assert_int_equal(st.rows, sp.rows);
    assert_int_equal(st.bad_rows, sp.bad_rows);
}

static void test_close_while_producing(void **state)
{
    (void)state;
    write_csv("big.csv", 0, 5000, NULL);
    char files[300];
    snprintf(files, sizeof files, "%s/big.csv", dir);
    rt_status st;
    rt_err err;
    /* forever: the consumer stops after a few batches */
    trn_reader *r = open3(files, 8, 100, 0, 1, TRN_BAD_ROW_STOP, &st, &err);
    assert_int_equal(st, RT_OK);
    const trn_rows *rows;
    for (int i = 0; i < 2000; i++)
        assert_int_equal(trn_reader_next(r, &rows, &err), RT_OK);
    trn_reader_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_once_per_epoch),
        cmocka_unit_test(test_globs_lists_and_quotes),
        cmocka_unit_test(test_malformed_rows),
        cmocka_unit_test(test_header_lines_skipped),
        cmocka_unit_test(test_nul_bytes_refused),
        cmocka_unit_test(test_replay_from_memory),
        cmocka_unit_test(test_close_while_producing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
