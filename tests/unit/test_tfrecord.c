/* test_tfrecord.c — TFRecord files (runtime/rt_tfrecord.c) and tf.Example
 * rows (runtime/rt_example_row.c): CRC-32C and mask known answers, a file
 * TensorFlow wrote (TFX's test data) read record by record, write/read round
 * trips plain and gzip, and corrupt files refused naming file and offset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt.h"

static void test_crc_known_answers(void **state)
{
    (void)state;
    /* the CRC-32C check value and RFC 3720 (iSCSI) B.4's vectors */
    assert_true(rt_crc32c(0, "123456789", 9) == 0xE3069283u);
    uint8_t z[32], ff[32], inc[32];
    memset(z, 0, sizeof z);
    memset(ff, 0xff, sizeof ff);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    assert_true(rt_crc32c(0, z, 32) == 0x8A9136AAu);
    assert_true(rt_crc32c(0, ff, 32) == 0x62A8AB43u);
    assert_true(rt_crc32c(0, inc, 32) == 0x46DD794Eu);
    /* the mask: rotate right by 15, add 0xa282ead8 */
    assert_true(rt_tfrecord_mask(0) == 0xa282ead8u);
    assert_true(rt_tfrecord_mask(0x8000u) == 0xa282ead9u);
    assert_true(rt_tfrecord_mask(1) == (0x00020000u + 0xa282ead8u));
}

/* TFX's CsvExampleGen wrote these 100 records (tests/data/tfrecord/README.md):
 * every length and data CRC checks, the first record's header as the file's
 * bytes give it. */
static void test_reads_tensorflow_file(void **state)
{
    (void)state;
    rt_tfrecord *r = NULL;
    rt_err err;
    rt_input_format f;
    const char *path = "tests/data/tfrecord/penguins_eval.tfrecord.gz";
    assert_int_equal(rt_input_sniff(path, &f, &err), RT_OK);
    assert_int_equal(f, RT_INPUT_TFRECORD_GZIP);
    assert_int_equal(rt_tfrecord_open(path, 0, 0, &r, &err), RT_OK);
    const uint8_t *d;
    size_t len, n = 0, total = 0;
    rt_status st;
    while ((st = rt_tfrecord_next(r, &d, &len, &err)) == RT_OK) {
        n++;
        total += len;
    }
    assert_int_equal(st, RT_ERR_NOTFOUND);
    assert_int_equal(n, 100);
    assert_int_equal(rt_tfrecord_pos(r), 15200); /* the stream's size */
    assert_int_equal(total, 15200 - 100 * 16);
    rt_tfrecord_close(r);
}

static char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "/tmp/test_tfrecord_%ld_%s", (long)getpid(), name);
    return buf;
}

static void write_three(const char *path, int gzip)
{
    rt_tfrecord_writer *w = NULL;
    rt_err err;
    assert_int_equal(rt_tfrecord_writer_open(path, gzip, &w, &err), RT_OK);
    assert_int_equal(rt_tfrecord_write(w, "alpha", 5, &err), RT_OK);
    assert_int_equal(rt_tfrecord_write(w, "", 0, &err), RT_OK);
    assert_int_equal(rt_tfrecord_write(w, "gamma!", 6, &err), RT_OK);
    assert_int_equal(rt_tfrecord_writer_close(w, 1, &err), RT_OK);
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int gz = 0; gz < 2; gz++) {
        const char *p = tmp_path(gz ? "rt.gz" : "rt");
        write_three(p, gz);
        rt_input_format f;
        rt_err err;
        assert_int_equal(rt_input_sniff(p, &f, &err), RT_OK);
        assert_int_equal(f, gz ? RT_INPUT_TFRECORD_GZIP : RT_INPUT_TFRECORD);
        rt_tfrecord *r = NULL;
        assert_int_equal(rt_tfrecord_open(p, 0, 0, &r, &err), RT_OK);
        const uint8_t *d;
        size_t len;
        assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
        assert_int_equal(len, 5);
        assert_memory_equal(d, "alpha", 5);
        assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
        assert_int_equal(len, 0);
        assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
        assert_memory_equal(d, "gamma!", 6);
        assert_int_equal(rt_tfrecord_offset(r), 21 + 16);
        assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_ERR_NOTFOUND);
        rt_tfrecord_close(r);
        if (!gz) { /* cuts at record boundaries: every record begins a range */
            uint64_t *cuts = NULL;
            size_t n = 0;
            assert_int_equal(rt_tfrecord_cuts(p, 1, &cuts, &n, &err), RT_OK);
            assert_int_equal(n, 3);
            assert_true(cuts[0] == 0 && cuts[1] == 21 && cuts[2] == 37);
            free(cuts);
            assert_int_equal(rt_tfrecord_open(p, 21, 37, &r, &err), RT_OK);
            assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
            assert_int_equal(len, 0);
            assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_ERR_NOTFOUND);
            rt_tfrecord_close(r);
        }
        unlink(p);
    }
}

static void test_corrupt_files_name_offset(void **state)
{
    (void)state;
    const char *p = tmp_path("bad");
    write_three(p, 0);
    FILE *fp = fopen(p, "r+b");
    assert_non_null(fp);
    /* a bit flipped in the third record's data (offset 37 + 12 + 2) */
    fseek(fp, 37 + 12 + 2, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, 37 + 12 + 2, SEEK_SET);
    fputc(c ^ 0x10, fp);
    fclose(fp);
    rt_tfrecord *r = NULL;
    rt_err err;
    const uint8_t *d;
    size_t len;
    assert_int_equal(rt_tfrecord_open(p, 0, 0, &r, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, p));
    assert_non_null(strstr(err.msg, "offset 37: record 3: corrupt data"));
    rt_tfrecord_close(r);
    /* a bit flipped in the second record's length */
    fp = fopen(p, "r+b");
    fseek(fp, 21, SEEK_SET);
    fputc(0x40, fp);
    fclose(fp);
    assert_int_equal(rt_tfrecord_open(p, 0, 0, &r, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "offset 21: record 2: corrupt length"));
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_ERR_NOTFOUND);
    rt_tfrecord_close(r);
    /* truncated inside the third record */
    write_three(p, 0);
    assert_int_equal(truncate(p, 37 + 14), 0);
    assert_int_equal(rt_tfrecord_open(p, 0, 0, &r, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "offset 37: record 3: truncated"));
    rt_tfrecord_close(r);
    /* truncated inside a header */
    assert_int_equal(truncate(p, 21 + 5), 0);
    assert_int_equal(rt_tfrecord_open(p, 0, 0, &r, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_OK);
    assert_int_equal(rt_tfrecord_next(r, &d, &len, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "offset 21: record 2: truncated"));
    rt_tfrecord_close(r);
    unlink(p);
}

static void test_truncated_gzip(void **state)
{
    (void)state;
    const char *p = tmp_path("bad.gz");
    write_three(p, 1);
    FILE *fp = fopen(p, "rb");
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fclose(fp);
    assert_int_equal(truncate(p, size - 12), 0); /* the trailer and some data gone */
    rt_tfrecord *r = NULL;
    rt_err err;
    const uint8_t *d;
    size_t len;
    rt_status st = RT_OK;
    assert_int_equal(rt_tfrecord_open(p, 0, 0, &r, &err), RT_OK);
    int n = 0;
    while ((st = rt_tfrecord_next(r, &d, &len, &err)) == RT_OK)
        n++;
    assert_int_equal(st, RT_ERR_FORMAT);
    assert_true(n < 3);
    assert_non_null(strstr(err.msg, "offset"));
    rt_tfrecord_close(r);
    unlink(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_known_answers),
        cmocka_unit_test(test_reads_tensorflow_file),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_corrupt_files_name_offset),
        cmocka_unit_test(test_truncated_gzip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
