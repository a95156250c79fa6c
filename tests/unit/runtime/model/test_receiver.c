/* test_receiver.c — the CSV-row and tf.Example serving input functions:
 * values land in the right cells, defaults fill empty CSV cells, and bad
 * rows / examples are refused with messages naming the column. A tf.Example
 * encoded by hand from TensorFlow's field numbers checks the wire format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "example.pb-c.h"
#include "rt.h"
#include "support_models.h"

typedef struct fixture {
    Predictd__ModelDef *def;
    support_tensors st;
    rt_graph *g;
    rt_batch *b;
    long age, hours, gender, occupation;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->def = support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP);
    if (!f->def || support_random_tensors(f->def, 7, 0.5f, &f->st) != 0)
        return -1;
    rt_err err = {{0}};
    if (rt_graph_build(f->def, support_tensor_lookup, &f->st, NULL, &f->g, &err) != RT_OK) {
        fprintf(stderr, "graph: %s\n", err.msg);
        return -1;
    }
    f->b = rt_batch_new(f->g);
    if (!f->b)
        return -1;
    f->age = rt_graph_find_input(f->g, "age", 3);
    f->hours = rt_graph_find_input(f->g, "hours", 5);
    f->gender = rt_graph_find_input(f->g, "gender", 6);
    f->occupation = rt_graph_find_input(f->g, "occupation", 10);
    if (f->age < 0 || f->hours < 0 || f->gender < 0 || f->occupation < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f)
        return 0;
    rt_batch_free(f->b);
    rt_graph_free(f->g);
    support_tensors_free(&f->st);
    rt_spec_modeldef_free(f->def);
    free(f);
    return 0;
}

/* The one value of a cell. */
static const rt_value *one(const fixture *f, size_t idx, long input)
{
    size_t n = 0;
    const rt_value *v = rt_batch_cell(f->b, idx, (size_t)input, &n);
    assert_int_equal(n, 1);
    return v;
}

static void assert_str(const rt_value *v, const char *want)
{
    assert_non_null(v->str);
    assert_int_equal(v->len, strlen(want));
    assert_memory_equal(v->str, want, v->len);
}

static size_t add(fixture *f)
{
    size_t idx = 0;
    assert_int_equal(rt_batch_add(f->b, &idx), RT_OK);
    return idx;
}

static void test_csv_row_values(void **state)
{
    fixture *f = *state;
    rt_batch_clear(f->b);
    rt_err err = {{0}};
    const char *row = "25, 40.5, Male, Exec-managerial\n";
    size_t i = add(f);
    assert_int_equal(rt_receiver_csv_row(f->b, i, row, strlen(row), &err), RT_OK);
    assert_null(one(f, i, f->age)->str);
    assert_true(one(f, i, f->age)->num == 25.0);
    assert_true(one(f, i, f->hours)->num == 40.5);
    /* ", " separated: the string keeps its leading space (trimming is the
     * transform's job, as with the census files). */
    assert_str(one(f, i, f->gender), " Male");
    assert_str(one(f, i, f->occupation), " Exec-managerial");

    /* The label may be present (a training line): its value is ignored. */
    const char *with_label = "30,1,Female,Sales,yes";
    i = add(f);
    assert_int_equal(rt_receiver_csv_row(f->b, i, with_label, strlen(with_label), &err), RT_OK);
    assert_true(one(f, i, f->age)->num == 30.0);
    assert_str(one(f, i, f->occupation), "Sales");

    /* Empty cells take the spec's defaults (0 and ""). */
    const char *empty = "41, , ,Tech";
    i = add(f);
    assert_int_equal(rt_receiver_csv_row(f->b, i, empty, strlen(empty), &err), RT_OK);
    assert_true(one(f, i, f->hours)->num == 0.0);
    assert_str(one(f, i, f->gender), "");

    /* Quoted values: commas and doubled quotes inside. */
    const char *quoted = "\"52\", 3, \"Ma\"\"le\", \"a, b\"";
    i = add(f);
    assert_int_equal(rt_receiver_csv_row(f->b, i, quoted, strlen(quoted), &err), RT_OK);
    assert_true(one(f, i, f->age)->num == 52.0);
    assert_str(one(f, i, f->gender), "Ma\"le");
    assert_str(one(f, i, f->occupation), "a, b");
    assert_int_equal(rt_batch_size(f->b), 4);
}

static void test_csv_row_errors(void **state)
{
    fixture *f = *state;
    rt_batch_clear(f->b);
    rt_err err = {{0}};
    size_t i = add(f);
    const char *short_row = "25, 40";
    assert_int_equal(rt_receiver_csv_row(f->b, i, short_row, strlen(short_row), &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "expected 4 values, got 2"));

    const char *bad_num = "abc, 1, Male, x";
    assert_int_equal(rt_receiver_csv_row(f->b, i, bad_num, strlen(bad_num), &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "age"));
    assert_non_null(strstr(err.msg, "\"abc\""));

    const char *bad_hours = "1, 2x, Male, x";
    assert_int_equal(rt_receiver_csv_row(f->b, i, bad_hours, strlen(bad_hours), &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "hours"));

    const char *open_quote = "1, 2, \"Male, x";
    assert_int_equal(rt_receiver_csv_row(f->b, i, open_quote, strlen(open_quote), &err),
                     RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "quote"));

    /* A NUL byte in a string value is refused as in a number (the trainer
     * refuses the same row with the same words). */
    static const char nul_str[] = "1, 2, Ma\0le, x";
    assert_int_equal(rt_receiver_csv_row(f->b, i, nul_str, sizeof nul_str - 1, &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "csv_row: field 3: contains a NUL byte");
    assert_int_equal(rt_receiver_csv_row(f->b, i, bad_num, strlen(bad_num), &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "csv_row: field 1 (age): expected a number, got \"abc\"");

    /* No such instance. */
    assert_int_equal(rt_receiver_csv_row(f->b, 5, "1,2,a,b", 7, &err), RT_ERR_INVALID);
}

/* Adds feature name -> f to a Features message being built. */
static Tensorflow__Features__FeatureEntry *entry(const char *name, Tensorflow__Feature *ft)
{
    Tensorflow__Features__FeatureEntry *e = malloc(sizeof *e);
    assert_non_null(e);
    tensorflow__features__feature_entry__init(e);
    e->key = (char *)name;
    e->value = ft;
    return e;
}

/* buf resized to len bytes (a repacked message may be longer). */
static uint8_t *grow(uint8_t *buf, size_t len)
{
    uint8_t *p = realloc(buf, len ? len : 1);
    assert_non_null(p);
    return p;
}

static void test_example_values(void **state)
{
    fixture *f = *state;
    rt_batch_clear(f->b);
    float age_v[] = {33.0f};
    int64_t hours_v[] = {12};
    ProtobufCBinaryData gender_v[] = {{6, (uint8_t *)"Female"}};
    ProtobufCBinaryData occ_v[] = {{6, (uint8_t *)"Doctor"}};
    Tensorflow__FloatList fl = TENSORFLOW__FLOAT_LIST__INIT;
    fl.n_value = 1;
    fl.value = age_v;
    Tensorflow__Int64List il = TENSORFLOW__INT64_LIST__INIT;
    il.n_value = 1;
    il.value = hours_v;
    Tensorflow__BytesList bl_g = TENSORFLOW__BYTES_LIST__INIT;
    bl_g.n_value = 1;
    bl_g.value = gender_v;
    Tensorflow__BytesList bl_o = TENSORFLOW__BYTES_LIST__INIT;
    bl_o.n_value = 1;
    bl_o.value = occ_v;
    Tensorflow__Feature fa = TENSORFLOW__FEATURE__INIT, fh = TENSORFLOW__FEATURE__INIT,
                        fg = TENSORFLOW__FEATURE__INIT, fo = TENSORFLOW__FEATURE__INIT,
                        fx = TENSORFLOW__FEATURE__INIT;
    fa.kind_case = TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
    fa.float_list = &fl;
    fh.kind_case = TENSORFLOW__FEATURE__KIND_INT64_LIST;
    fh.int64_list = &il;
    fg.kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
    fg.bytes_list = &bl_g;
    fo.kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
    fo.bytes_list = &bl_o;
    fx.kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
    fx.bytes_list = &bl_o;
    Tensorflow__Features__FeatureEntry *entries[5] = {
        entry("age", &fa), entry("hours", &fh), entry("gender", &fg),
        entry("occupation", &fo), entry("not_a_feature", &fx)};
    Tensorflow__Features feats = TENSORFLOW__FEATURES__INIT;
    feats.n_feature = 5;
    feats.feature = entries;
    Tensorflow__Example ex = TENSORFLOW__EXAMPLE__INIT;
    ex.features = &feats;
    size_t len = tensorflow__example__get_packed_size(&ex);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    tensorflow__example__pack(&ex, buf);

    rt_err err = {{0}};
    size_t i = add(f);
    assert_int_equal(rt_receiver_example(f->b, i, buf, len, &err), RT_OK);
    assert_true(one(f, i, f->age)->num == 33.0);
    assert_true(one(f, i, f->hours)->num == 12.0);
    assert_str(one(f, i, f->gender), "Female");
    assert_str(one(f, i, f->occupation), "Doctor");

    /* A string input given as float_list is refused, naming the feature. */
    entries[2]->value = &fa;
    len = tensorflow__example__get_packed_size(&ex);
    buf = grow(buf, len);
    tensorflow__example__pack(&ex, buf);
    i = add(f);
    assert_int_equal(rt_receiver_example(f->b, i, buf, len, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "gender"));
    assert_non_null(strstr(err.msg, "float_list"));

    /* A numeric input given as bytes_list likewise. */
    entries[2]->value = &fg;
    entries[0]->value = &fg;
    len = tensorflow__example__get_packed_size(&ex);
    buf = grow(buf, len);
    tensorflow__example__pack(&ex, buf);
    i = add(f);
    assert_int_equal(rt_receiver_example(f->b, i, buf, len, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "age"));
    assert_non_null(strstr(err.msg, "bytes_list"));

    for (int k = 0; k < 5; k++)
        free(entries[k]);
    free(buf);
}

static void test_example_wire_format(void **state)
{
    fixture *f = *state;
    rt_batch_clear(f->b);
    /* Example{features(1): Features{feature(1): entry{key(1) "age",
     * value(2): Feature{int64_list(3): Int64List{value(1) packed [7]}}}}},
     * encoded by hand from TensorFlow's example.proto / feature.proto. */
    static const uint8_t wire[] = {
        0x0A, 0x0E,                         /* Example.features, 14 bytes */
        0x0A, 0x0C,                         /* Features.feature entry, 12 bytes */
        0x0A, 0x03, 'a', 'g', 'e',          /* key */
        0x12, 0x05,                         /* value: Feature, 5 bytes */
        0x1A, 0x03,                         /* Feature.int64_list, 3 bytes */
        0x0A, 0x01, 0x07,                   /* Int64List.value packed [7] */
    };
    rt_err err = {{0}};
    size_t i = add(f);
    assert_int_equal(rt_receiver_example(f->b, i, wire, sizeof wire, &err), RT_OK);
    assert_true(one(f, i, f->age)->num == 7.0);
    size_t n = 9;
    rt_batch_cell(f->b, i, (size_t)f->gender, &n);
    assert_int_equal(n, 0); /* absent: missing, the transform decides */

    /* Garbage is refused. */
    static const uint8_t junk[] = {0x0A, 0xFF, 0xFF, 0x01};
    i = add(f);
    assert_int_equal(rt_receiver_example(f->b, i, junk, sizeof junk, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "tf.Example"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_row_values),
        cmocka_unit_test(test_csv_row_errors),
        cmocka_unit_test(test_example_values),
        cmocka_unit_test(test_example_wire_format),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
