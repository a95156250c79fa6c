/* test_tfrecord.c — TFRecord files (runtime/data/rt_tfrecord.c) and tf.Example
 * rows (runtime/data/rt_example_row.c): CRC-32C and mask known answers, a file
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

#include <cJSON.h>

#include "example.pb-c.h"

static void test_crc_known_answers(void **state)
{
    (void)state;
    /* the CRC-32C check value and RFC 3720 (iSCSI) B.4's vectors */
    assert_true(rt_hash_crc32c(0, "123456789", 9) == 0xE3069283u);
    uint8_t z[32], ff[32], inc[32];
    memset(z, 0, sizeof z);
    memset(ff, 0xff, sizeof ff);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    assert_true(rt_hash_crc32c(0, z, 32) == 0x8A9136AAu);
    assert_true(rt_hash_crc32c(0, ff, 32) == 0x62A8AB43u);
    assert_true(rt_hash_crc32c(0, inc, 32) == 0x46DD794Eu);
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
    assert_int_equal(rt_tfrecord_sniff(path, &f, &err), RT_OK);
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
        assert_int_equal(rt_tfrecord_sniff(p, &f, &err), RT_OK);
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


/* ------------------------------------------------ tf.Example as a row */

static Predictd__ModelDef *small_def(void)
{
    const char *text =
        "{\"columns\": [{\"name\": \"n\", \"type\": \"int\"},"
        " {\"name\": \"x\", \"type\": \"float\", \"default\": 0.5},"
        " {\"name\": \"s\", \"type\": \"string\"},"
        " {\"name\": \"y\", \"type\": \"string\"}],"
        " \"label\": {\"column\": \"y\", \"vocabulary\": [\"a\", \"b\"]},"
        " \"feature_columns\": [{\"type\": \"numeric_column\", \"key\": \"n\"},"
        "  {\"type\": \"numeric_column\", \"key\": \"x\"},"
        "  {\"type\": \"categorical_column_with_hash_bucket\", \"key\": \"s\","
        "   \"hash_bucket_size\": 10}],"
        " \"estimator\": {\"type\": \"LinearClassifier\","
        "  \"feature_columns\": [\"n\", \"x\", \"s\"]}}";
    cJSON *j = cJSON_Parse(text);
    Predictd__ModelDef *def = NULL;
    rt_err err;
    rt_status st = rt_spec_to_modeldef(j, NULL, &def, &err);
    cJSON_Delete(j);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    return def;
}

/* Packs an Example of up to 4 features: name and kind ('i' int64, 'f'
 * float, 'b' bytes) with n values each. */
typedef struct feat {
    const char *name;
    char kind;
    int n;
} feat;

static size_t pack(const feat *fs, size_t nf, uint8_t *out)
{
    Tensorflow__Feature ft[4];
    Tensorflow__Features__FeatureEntry ent[4], *pe[4];
    Tensorflow__Int64List il[4];
    Tensorflow__FloatList fl[4];
    Tensorflow__BytesList bl[4];
    int64_t iv[2] = {7, 8};
    float fv[2] = {0.25f, 1.5f};
    ProtobufCBinaryData bv[2] = {{1, (uint8_t *)"b"}, {2, (uint8_t *)"cd"}};
    for (size_t k = 0; k < nf; k++) {
        tensorflow__feature__init(&ft[k]);
        if (fs[k].kind == 'i') {
            tensorflow__int64_list__init(&il[k]);
            il[k].n_value = (size_t)fs[k].n;
            il[k].value = iv;
            ft[k].kind_case = TENSORFLOW__FEATURE__KIND_INT64_LIST;
            ft[k].int64_list = &il[k];
        } else if (fs[k].kind == 'f') {
            tensorflow__float_list__init(&fl[k]);
            fl[k].n_value = (size_t)fs[k].n;
            fl[k].value = fv;
            ft[k].kind_case = TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
            ft[k].float_list = &fl[k];
        } else {
            tensorflow__bytes_list__init(&bl[k]);
            bl[k].n_value = (size_t)fs[k].n;
            bl[k].value = bv;
            ft[k].kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
            ft[k].bytes_list = &bl[k];
        }
        tensorflow__features__feature_entry__init(&ent[k]);
        ent[k].key = (char *)fs[k].name;
        ent[k].value = &ft[k];
        pe[k] = &ent[k];
    }
    Tensorflow__Features f;
    tensorflow__features__init(&f);
    f.n_feature = nf;
    f.feature = pe;
    Tensorflow__Example ex;
    tensorflow__example__init(&ex);
    ex.features = &f;
    return tensorflow__example__pack(&ex, out);
}

static void test_example_row(void **state)
{
    (void)state;
    Predictd__ModelDef *def = small_def();
    rt_buf text;
    rt_buf_init(&text);
    rt_csv_span sp[4];
    uint8_t have[4];
    uint8_t buf[256];
    rt_err err;
    /* every column, an extra feature ignored; x missing takes its default */
    feat ok[] = {{"n", 'i', 1}, {"s", 'b', 1}, {"y", 'b', 1}, {"other", 'f', 2}};
    size_t len = pack(ok, 4, buf);
    assert_int_equal(rt_example_to_row(def, buf, len, 1, &text, sp, have, &err), RT_OK);
    assert_int_equal(sp[0].len, 1);
    assert_memory_equal(text.data + sp[0].off, "7", 1);
    assert_int_equal(sp[1].len, 0); /* an empty cell: the default applies */
    assert_int_equal(have[1], 0);
    assert_memory_equal(text.data + sp[2].off, "b", 1);
    /* a float column given an int64_list */
    feat kind[] = {{"n", 'i', 1}, {"x", 'i', 1}, {"s", 'b', 1}, {"y", 'b', 1}};
    len = pack(kind, 4, buf);
    assert_int_equal(rt_example_to_row(def, buf, len, 1, &text, sp, have, &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "feature x: expected float_list (column type float), got "
                                 "int64_list");
    /* two values for a FixedLenFeature of shape [] */
    feat two[] = {{"n", 'i', 2}, {"s", 'b', 1}, {"y", 'b', 1}};
    len = pack(two, 3, buf);
    assert_int_equal(rt_example_to_row(def, buf, len, 1, &text, sp, have, &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "feature n: expected 1 value (a FixedLenFeature of shape "
                                 "[]), got 2");
    /* a missing column without default; a missing label only when targets are needed */
    feat nos[] = {{"n", 'i', 1}, {"y", 'b', 1}};
    len = pack(nos, 2, buf);
    assert_int_equal(rt_example_to_row(def, buf, len, 1, &text, sp, have, &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "feature s: missing"));
    feat nolabel[] = {{"n", 'i', 1}, {"s", 'b', 1}};
    len = pack(nolabel, 2, buf);
    assert_int_equal(rt_example_to_row(def, buf, len, 0, &text, sp, have, &err), RT_OK);
    assert_int_equal(rt_example_to_row(def, buf, len, 1, &text, sp, have, &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "feature y: missing"));
    /* a float: the shortest text that reads back as the float's value */
    feat fl[] = {{"n", 'i', 1}, {"x", 'f', 1}, {"s", 'b', 1}, {"y", 'b', 1}};
    len = pack(fl, 4, buf);
    assert_int_equal(rt_example_to_row(def, buf, len, 1, &text, sp, have, &err), RT_OK);
    assert_int_equal(sp[1].len, 4);
    assert_memory_equal(text.data + sp[1].off, "0.25", 4);
    /* from a CSV row and back: the same cells (strings as they are) */
    const char *row = "12, 2.5, hello world, a";
    char cells[64];
    rt_csv_span in[4];
    assert_int_equal(rt_raw_csv_split(row, strlen(row), cells, in, 4, &err), 4);
    rt_buf ex;
    rt_buf_init(&ex);
    assert_int_equal(rt_example_from_row(def, cells, in, 4, &ex, &err), RT_OK);
    assert_int_equal(rt_example_to_row(def, (const uint8_t *)ex.data, ex.len, 1, &text, sp,
                                       have, &err), RT_OK);
    assert_memory_equal(text.data + sp[0].off, "12", 2);
    assert_memory_equal(text.data + sp[1].off, "2.5", 3);
    assert_int_equal(sp[2].len, 12);
    assert_memory_equal(text.data + sp[2].off, " hello world", 12);
    /* an int column refuses a fraction */
    const char *frac = "1.5, 2, x, a";
    assert_int_equal(rt_raw_csv_split(frac, strlen(frac), cells, in, 4, &err), 4);
    assert_int_equal(rt_example_from_row(def, cells, in, 4, &ex, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "(n): 1.5 is not an integer"));
    rt_buf_free(&ex);
    rt_buf_free(&text);
    rt_spec_modeldef_free(def);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_known_answers),
        cmocka_unit_test(test_reads_tensorflow_file),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_corrupt_files_name_offset),
        cmocka_unit_test(test_truncated_gzip),
        cmocka_unit_test(test_example_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
