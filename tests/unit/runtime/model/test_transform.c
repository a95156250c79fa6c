/* test_transform.c — the serving input function's transforms against
 * independent computations: hash and crossed ids from rt_hash_fingerprint64 /
 * rt_hash_fingerprint_cat64 and TensorFlow's formulas, vocabulary lookups with
 * and without OOV buckets, bucket edges, embedding combiners from the
 * lookup's known table, indicators, defaults and missing inputs, trimming,
 * the DNN input layout, raw batches and memory reuse. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <cJSON.h>

#include "rt_serve_internal.h"
#include "rt_data_internal.h"

/* Feature column indexes of tests/data/specs/transform.json. */
enum {
    C_AGE, C_AGE_NORM, C_N, C_N2, C_AGE_B, C_CITY, C_CITY_OOV, C_CITY_DEF, C_TAGS, C_CODE_H,
    C_CROSS, C_E_MEAN, C_E_SUM, C_E_SQRTN, C_E_CITY, C_CITY_IND, C_P, C_P_B, C_CROSS2, N_COLS
};
/* Raw inputs, in column order (the label y is not an input). */
enum { I_AGE, I_N, I_CITY, I_TAGS, I_CODE, I_P, N_INPUTS };

/* ------------------------------------------------------------ fixture */

/* Tensor data for the graph: embedding tables hold t[k] = k (so row r of a
 * dimension-d table is [r*d, r*d+1, ...]); everything else zeros. */
typedef struct tensors {
    float *bufs[64];
    size_t n;
} tensors;

static const float *lookup(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    (void)err;
    tensors *t = ctx;
    if (t->n == 64)
        return NULL;
    float *b = calloc(count + 1, sizeof *b);
    if (strstr(name, "embedding_weights"))
        for (uint64_t k = 0; k < count; k++)
            b[k] = (float)k;
    t->bufs[t->n++] = b;
    return b;
}

typedef struct fixture {
    Predictd__ModelDef *def;
    tensors t;
    rt_graph *g;
    rt_batch *b;
    rt_features f;
} fixture;

static char *read_text(const char *rel)
{
    const char *root = getenv("PREDICTD_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    char *s = NULL;
    return rt_file_read(AT_FDCWD, path, 1u << 26, 0, &s, NULL, NULL) == RT_OK ? s : NULL;
}

static fixture *fixture_from_text(const char *text, const char *assets)
{
    fixture *fx = calloc(1, sizeof *fx);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    rt_err err = {{0}};
    rt_status st = rt_spec_to_modeldef(j, NULL, &fx->def, &err);
    if (st)
        print_error("spec: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    cJSON_Delete(j);
    st = rt_graph_build(fx->def, lookup, &fx->t, assets, &fx->g, &err);
    if (st)
        print_error("graph: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    fx->b = rt_batch_new(fx->g);
    assert_non_null(fx->b);
    rt_transform_features_init(&fx->f);
    return fx;
}

static int setup(void **state)
{
    char *text = read_text("tests/data/specs/transform.json");
    if (!text)
        return -1;
    *state = fixture_from_text(text, NULL);
    free(text);
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    rt_transform_features_free(&fx->f);
    rt_batch_free(fx->b);
    rt_graph_free(fx->g);
    rt_spec_modeldef_free(fx->def);
    for (size_t k = 0; k < fx->t.n; k++)
        free(fx->t.bufs[k]);
    free(fx);
    return 0;
}

/* Adds an instance with every required input set to a harmless value;
 * the test then overrides cells with push (cells must be empty: use
 * add_bare for those). */
/* Adds an empty instance. The fixture's batches are CSV-like: a missing
 * input takes the spec's column default (test_missing_policies covers the
 * other policies). */
static size_t add_bare(fixture *fx)
{
    size_t i;
    assert_int_equal(rt_batch_add(fx->b, &i), RT_OK);
    rt_batch_set_missing(fx->b, RT_MISSING_CSV_DEFAULT);
    return i;
}

static void push_s(fixture *fx, size_t i, size_t in, const char *s)
{
    assert_int_equal(rt_batch_push_str(fx->b, i, in, s, strlen(s)), RT_OK);
}

static void push_n(fixture *fx, size_t i, size_t in, double v)
{
    assert_int_equal(rt_batch_push_num(fx->b, i, in, v), RT_OK);
}

/* An instance: age, city, tags (one value each), code; n and p missing. */
static size_t add_std(fixture *fx, double age, const char *city, const char *tags, double code)
{
    size_t i = add_bare(fx);
    push_n(fx, i, I_AGE, age);
    if (city)
        push_s(fx, i, I_CITY, city);
    if (tags)
        push_s(fx, i, I_TAGS, tags);
    push_n(fx, i, I_CODE, code);
    return i;
}

static void run_ok(fixture *fx)
{
    rt_err err = {{0}};
    rt_status st = rt_transform(fx->g, fx->b, &fx->f, &err);
    if (st)
        print_error("transform: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(fx->f.n, rt_batch_size(fx->b));
    assert_int_equal(fx->f.n_columns, N_COLS);
}

static void run_fails(fixture *fx, const char *want)
{
    rt_err err = {{0}};
    rt_status st = rt_transform(fx->g, fx->b, &fx->f, &err);
    if (st != RT_ERR_INVALID || strcmp(err.msg, want) != 0)
        print_error("want \"%s\", got %d \"%s\"\n", want, st, err.msg);
    assert_int_equal(st, RT_ERR_INVALID);
    assert_string_equal(err.msg, want);
}

/* The ids of column c for instance i. */
static size_t ids_of(const fixture *fx, size_t c, size_t i, const int64_t **ids)
{
    const rt_ids *r = &fx->f.ids[c];
    assert_non_null(r->offsets);
    *ids = &r->ids[r->offsets[i]];
    return r->offsets[i + 1] - r->offsets[i];
}

static void expect_ids(const fixture *fx, size_t c, size_t i, const int64_t *want, size_t n)
{
    const int64_t *got;
    size_t k = ids_of(fx, c, i, &got);
    if (k != n)
        print_error("column %zu instance %zu: %zu ids, want %zu\n", c, i, k, n);
    assert_int_equal(k, n);
    for (size_t j = 0; j < n; j++) {
        if (got[j] != want[j])
            print_error("column %zu instance %zu id %zu: %lld, want %lld\n", c, i, j,
                        (long long)got[j], (long long)want[j]);
        assert_true(got[j] == want[j]);
    }
}

static int64_t fp_mod(const char *s, uint64_t m)
{
    return (int64_t)(rt_hash_fingerprint64(s, strlen(s)) % m);
}

static void expect_near(float got, double want)
{
    double tol = 1e-5 * (fabs(want) > 1 ? fabs(want) : 1);
    if (fabs(got - want) > tol)
        print_error("got %.9g, want %.9g\n", (double)got, want);
    assert_true(fabs(got - want) <= tol);
}

/* ------------------------------------------------------------ tests */

static void test_graph_inputs(void **state)
{
    fixture *fx = *state;
    assert_int_equal(rt_graph_num_inputs(fx->g), N_INPUTS);
    static const char *const names[] = {"age", "n", "city", "tags", "code", "p"};
    for (size_t i = 0; i < N_INPUTS; i++) {
        assert_string_equal(rt_graph_input_name(fx->g, i), names[i]);
        assert_int_equal(rt_graph_find_input(fx->g, names[i], strlen(names[i])), (long)i);
    }
    assert_int_equal(rt_graph_input_dtype(fx->g, I_CITY), PREDICTD__DTYPE__DT_STRING);
    assert_int_equal(rt_graph_input_dtype(fx->g, I_CODE), PREDICTD__DTYPE__DT_FLOAT);
    assert_int_equal(rt_graph_find_input(fx->g, "y", 1), -1);      /* the label */
    assert_int_equal(rt_graph_find_input(fx->g, "cityx", 4), I_CITY); /* by length */
    assert_int_equal(rt_graph_find_input(fx->g, "ag\0e", 4), -1);
    assert_null(rt_graph_input_name(fx->g, N_INPUTS));
    /* No vocabulary: classes "0", "1". */
    assert_string_equal(rt_graph_class_name(fx->g, 0), "0");
    assert_string_equal(rt_graph_class_name(fx->g, 1), "1");
    assert_null(rt_graph_class_name(fx->g, 2));
    assert_int_equal(rt_graph_logits_dim(fx->g), 1);
    assert_ptr_equal(rt_graph_def(fx->g), fx->def);
}

static int64_t cross3(uint64_t a, uint64_t b, uint64_t c, uint64_t key, uint64_t buckets);

static void test_hash_and_vocabulary(void **state)
{
    fixture *fx = *state;
    size_t i0 = add_std(fx, 26, " Rome ", NULL, 42);
    push_s(fx, i0, I_TAGS, "x");
    push_s(fx, i0, I_TAGS, " y");
    size_t i1 = add_std(fx, 26, "Berlin", "x", -3);
    size_t i2 = add_std(fx, 26, NULL, "x", 123456789012.0); /* city missing: "zz" */
    size_t i3 = add_bare(fx);
    push_n(fx, i3, I_AGE, 1);
    push_n(fx, i3, I_CITY, 2.5); /* a number for a string input: "2.5" */
    push_s(fx, i3, I_TAGS, "Paris");
    push_n(fx, i3, I_CODE, 0);
    run_ok(fx);

    /* vocabulary without OOV: hits give the index, misses no id. */
    expect_ids(fx, C_CITY, i0, (int64_t[]){1}, 1);
    expect_ids(fx, C_CITY, i1, NULL, 0);
    expect_ids(fx, C_CITY, i2, NULL, 0);
    expect_ids(fx, C_CITY, i3, NULL, 0);
    /* OOV buckets: vocab_size + Fingerprint64 % num_oov_buckets. */
    expect_ids(fx, C_CITY_OOV, i0, (int64_t[]){1}, 1);
    expect_ids(fx, C_CITY_OOV, i1, (int64_t[]){2 + fp_mod("Berlin", 3)}, 1);
    expect_ids(fx, C_CITY_OOV, i2, (int64_t[]){2 + fp_mod("zz", 3)}, 1);
    expect_ids(fx, C_CITY_OOV, i3, (int64_t[]){2 + fp_mod("2.5", 3)}, 1);
    /* default_value. */
    expect_ids(fx, C_CITY_DEF, i1, (int64_t[]){1}, 1);
    /* Hash buckets of trimmed strings; numbers hashed as decimal text. */
    expect_ids(fx, C_TAGS, i0, (int64_t[]){fp_mod("x", 1000), fp_mod("y", 1000)}, 2);
    expect_ids(fx, C_TAGS, i3, (int64_t[]){fp_mod("Paris", 1000)}, 1);
    expect_ids(fx, C_CODE_H, i0, (int64_t[]){fp_mod("42", 97)}, 1);
    expect_ids(fx, C_CODE_H, i1, (int64_t[]){fp_mod("-3", 97)}, 1);
    expect_ids(fx, C_CODE_H, i2, (int64_t[]){fp_mod("123456789012", 97)}, 1);
    expect_ids(fx, C_CODE_H, i3, (int64_t[]){fp_mod("0", 97)}, 1);
    /* TensorFlow drops a categorical input's ignore value before lookup:
     * "" (here "  " trimmed) for strings, -1 for ints: no id, not even an
     * OOV bucket or a hash, and no crossed id through {"column": "city"}. */
    rt_batch_clear(fx->b);
    i0 = add_std(fx, 1, "  ", "", -1);
    i1 = add_std(fx, 1, "Rome", "t", 5);
    push_s(fx, i1, I_CITY, "");
    push_s(fx, i1, I_TAGS, "");
    run_ok(fx);
    expect_ids(fx, C_CITY_OOV, i0, NULL, 0);
    expect_ids(fx, C_CITY_DEF, i0, NULL, 0);
    expect_ids(fx, C_TAGS, i0, NULL, 0);
    expect_ids(fx, C_CODE_H, i0, NULL, 0);
    expect_ids(fx, C_CROSS2, i0, NULL, 0);
    expect_ids(fx, C_CITY_OOV, i1, (int64_t[]){1}, 1);
    expect_ids(fx, C_TAGS, i1, (int64_t[]){fp_mod("t", 1000)}, 1);
    expect_ids(fx, C_CODE_H, i1, (int64_t[]){fp_mod("5", 97)}, 1);
    /* A raw string cross key is a dense input in TensorFlow: "" is hashed. */
    expect_ids(fx, C_CROSS, i0,
               (int64_t[]){cross3(0, rt_hash_fingerprint64("", 0), (uint64_t)(int64_t)-1,
                                  UINT64_C(0xDECAFCAFFE), 5000)},
               1);
    /* Known answer: Fingerprint64("Hello") = 15404698994557526151. */
    rt_batch_clear(fx->b);
    add_std(fx, 1, "a", "Hello", 0);
    run_ok(fx);
    expect_ids(fx, C_TAGS, 0, (int64_t[]){(int64_t)(15404698994557526151ULL % 1000)}, 1);
}

/* TensorFlow's sparse_cross_hashed, computed here from its definition:
 * h = hash_key, then h = FingerprintCat64(h, part) for each part in the
 * op's order (sparse inputs, i.e. categorical columns' ids, then dense raw
 * inputs), id = h % buckets. */
static int64_t cross2(uint64_t a, uint64_t b, uint64_t key, uint64_t buckets)
{
    return (int64_t)(rt_hash_fingerprint_cat64(rt_hash_fingerprint_cat64(key, a), b) % buckets);
}

static int64_t cross3(uint64_t a, uint64_t b, uint64_t c, uint64_t key, uint64_t buckets)
{
    uint64_t h = key;
    h = rt_hash_fingerprint_cat64(h, a);
    h = rt_hash_fingerprint_cat64(h, b);
    h = rt_hash_fingerprint_cat64(h, c);
    return (int64_t)(h % buckets);
}

static void test_crossed(void **state)
{
    fixture *fx = *state;
    const uint64_t key = UINT64_C(0xDECAFCAFFE);
    size_t i0 = add_std(fx, 26, "Rome", "t", 42);
    size_t i1 = add_std(fx, 17, " Rome", "t", -5);
    push_s(fx, i1, I_CITY, "Paris");
    size_t i2 = add_std(fx, 40, "Oslo", "t", 7);
    push_n(fx, i2, I_CODE, 8);
    run_ok(fx);
    uint64_t rome = rt_hash_fingerprint64("Rome", 4), paris = rt_hash_fingerprint64("Paris", 5);
    uint64_t oslo = rt_hash_fingerprint64("Oslo", 4);
    /* keys ["city", "code", {"column": "age_b"}] hash as age_b, city, code.
     * age 26 -> bucket 2 of [18, 25, 30]; the raw int 42 crosses as 42. */
    expect_ids(fx, C_CROSS, i0, (int64_t[]){cross3(2, rome, 42, key, 5000)}, 1);
    /* Two cities: the cartesian product, last part fastest; -5 as int64. */
    expect_ids(fx, C_CROSS, i1,
               (int64_t[]){cross3(0, rome, (uint64_t)(int64_t)-5, key, 5000),
                           cross3(0, paris, (uint64_t)(int64_t)-5, key, 5000)},
               2);
    expect_ids(fx, C_CROSS, i2,
               (int64_t[]){cross3(3, oslo, 7, key, 5000), cross3(3, oslo, 8, key, 5000)}, 2);
    /* cross2 = ["tags", {"column": "city"}], hash_key 12345: city's id
     * first; Oslo is not in the vocabulary: TensorFlow crosses its -1. */
    uint64_t t = rt_hash_fingerprint64("t", 1);
    expect_ids(fx, C_CROSS2, i0, (int64_t[]){cross2(1, t, 12345, 1000)}, 1);
    expect_ids(fx, C_CROSS2, i1, (int64_t[]){cross2(1, t, 12345, 1000), cross2(0, t, 12345, 1000)},
               2);
    expect_ids(fx, C_CROSS2, i2, (int64_t[]){cross2(UINT64_MAX, t, 12345, 1000)}, 1);
    /* A code that is not an integer can't be crossed. */
    rt_batch_clear(fx->b);
    add_std(fx, 26, "Rome", "t", 4.5);
    run_fails(fx, "instances[0].code: expected an integer, got 4.5");
}

static void test_bucketized_edges(void **state)
{
    fixture *fx = *state;
    /* NaN is below no boundary: the last bucket (std::upper_bound, as
     * TensorFlow's Bucketize); 1e300 is +inf as a float. */
    static const double ages[] = {-1e30, 17.99, 18, 24.999, 25, 29, 30, 1e30, NAN, 1e300};
    static const int64_t want[] = {0, 0, 1, 1, 2, 2, 3, 3, 3, 3};
    for (size_t k = 0; k < 10; k++)
        add_std(fx, ages[k], "Rome", "t", 1);
    /* shape 2 numeric p with boundaries [0, 10]: ids j * 3 + bucket. */
    push_n(fx, 0, I_P, -1);
    push_n(fx, 0, I_P, 10);
    push_n(fx, 1, I_P, 0);
    push_n(fx, 1, I_P, 9.5);
    run_ok(fx);
    for (size_t k = 0; k < 10; k++)
        expect_ids(fx, C_AGE_B, k, &want[k], 1);
    assert_true(isinf(fx->f.values[C_AGE][9]));
    expect_ids(fx, C_P_B, 0, (int64_t[]){0, 3 + 2}, 2);
    expect_ids(fx, C_P_B, 1, (int64_t[]){1, 3 + 1}, 2);
    expect_ids(fx, C_P_B, 2, (int64_t[]){1, 3 + 1}, 2); /* default [0, 0] */
    assert_int_equal(fx->f.width[C_P], 2);
    assert_true(fx->f.values[C_P][0] == -1.0f && fx->f.values[C_P][1] == 10.0f);
}

static void test_embedding_combiners(void **state)
{
    fixture *fx = *state;
    size_t i0 = add_std(fx, 1, "Berlin", "x", 1);
    push_s(fx, i0, I_TAGS, "y");
    push_s(fx, i0, I_TAGS, "x");
    size_t i1 = add_std(fx, 1, "Rome", "q", 1);
    push_s(fx, i1, I_CITY, "Paris");
    push_s(fx, i1, I_CITY, "Rome");
    run_ok(fx);
    /* Table row r of a dimension-2 table is [2r, 2r + 1]. */
    double a = (double)fp_mod("x", 1000), b = (double)fp_mod("y", 1000);
    double sum0 = 2 * (2 * a) + 2 * b, sum1 = 2 * (2 * a + 1) + (2 * b + 1);
    assert_int_equal(fx->f.width[C_E_SUM], 2);
    expect_near(fx->f.values[C_E_SUM][0], sum0);
    expect_near(fx->f.values[C_E_SUM][1], sum1);
    expect_near(fx->f.values[C_E_MEAN][0], sum0 / 3);
    expect_near(fx->f.values[C_E_MEAN][1], sum1 / 3);
    expect_near(fx->f.values[C_E_SQRTN][0], sum0 / sqrt(3.0));
    expect_near(fx->f.values[C_E_SQRTN][1], sum1 / sqrt(3.0));
    /* One id: every combiner gives the row itself. */
    double q = (double)fp_mod("q", 1000);
    expect_near(fx->f.values[C_E_MEAN][2], 2 * q);
    expect_near(fx->f.values[C_E_SQRTN][3], 2 * q + 1);
    /* Berlin has no id in the city vocabulary: zeros. Rome, Paris, Rome:
     * rows 1, 0, 1 summed = [2+0+2, 3+1+3]. */
    expect_near(fx->f.values[C_E_CITY][0], 0);
    expect_near(fx->f.values[C_E_CITY][1], 0);
    expect_near(fx->f.values[C_E_CITY][2], 4);
    expect_near(fx->f.values[C_E_CITY][3], 7);
}

static void test_indicator(void **state)
{
    fixture *fx = *state;
    size_t i0 = add_std(fx, 1, "Rome", "t", 1);
    push_s(fx, i0, I_CITY, "Rome");
    push_s(fx, i0, I_CITY, "Berlin");
    add_std(fx, 1, "Paris", "t", 1);
    run_ok(fx);
    assert_int_equal(fx->f.width[C_CITY_IND], 5);
    float want0[5] = {0, 2, 0, 0, 0};
    want0[2 + fp_mod("Berlin", 3)] += 1;
    for (size_t k = 0; k < 5; k++)
        assert_true(fx->f.values[C_CITY_IND][k] == want0[k]);
    const float want1[5] = {1, 0, 0, 0, 0};
    for (size_t k = 0; k < 5; k++)
        assert_true(fx->f.values[C_CITY_IND][5 + k] == want1[k]);
    /* Categorical columns have no values, dense ones no ids. */
    assert_null(fx->f.values[C_CITY]);
    assert_null(fx->f.ids[C_CITY_IND].offsets);
}

/* What a missing input means under each rt_missing_policy. */
static void test_missing_policies(void **state)
{
    fixture *fx = *state;
    /* RT_MISSING_ERROR (JSON): input n has a CSV default (7) and column n a
     * default_value (3), but column n2 over the same input has none: a
     * missing n is an error that names it. */
    size_t i = add_std(fx, 26, "Rome", "t", 1);
    rt_batch_set_missing(fx->b, RT_MISSING_ERROR);
    run_fails(fx, "instances[0].n: missing input");
    push_n(fx, i, I_N, 5);
    run_ok(fx);
    assert_true(fx->f.values[C_N][i] == 5.0f);
    assert_true(fx->f.values[C_N2][i] == 5.0f);
    /* A missing string input is an error too. */
    rt_batch_clear(fx->b);
    i = add_std(fx, 26, NULL, "t", 1);
    push_n(fx, i, I_N, 5);
    rt_batch_set_missing(fx->b, RT_MISSING_ERROR);
    run_fails(fx, "instances[0].city: missing input");
    /* RT_MISSING_EMPTY (tf.Example): the missing city gives no ids. */
    rt_batch_set_missing(fx->b, RT_MISSING_EMPTY);
    run_ok(fx);
    assert_int_equal(fx->f.ids[C_CITY].offsets[1] - fx->f.ids[C_CITY].offsets[0], 0);
    /* rt_batch_clear goes back to the strict default. */
    rt_batch_clear(fx->b);
    assert_int_equal(rt_batch_missing(fx->b), RT_MISSING_ERROR);
}

/* rt_transform_needs names exactly the inputs the transform refuses as
 * missing, under each policy (issue 22: one 400 lists them all). */
static void test_needs_matches_transform(void **state)
{
    fixture *fx = *state;
    size_t i = add_bare(fx); /* nothing given */
    rt_batch_set_missing(fx->b, RT_MISSING_ERROR);
    bool need[N_INPUTS];
    for (size_t in = 0; in < N_INPUTS; in++)
        need[in] = rt_transform_needs(fx->g, fx->b, i, in);
    /* give the needed ones one by one: each run fails on a needed input
     * until none is left, then it runs */
    for (size_t round = 0; round <= N_INPUTS; round++) {
        rt_err err = {{0}};
        rt_status st = rt_transform(fx->g, fx->b, &fx->f, &err);
        if (st == RT_OK)
            break;
        size_t hit = N_INPUTS;
        for (size_t in = 0; in < N_INPUTS; in++) {
            char want[128];
            snprintf(want, sizeof want, "instances[0].%s: missing input",
                     rt_graph_input_name(fx->g, in));
            if (!strcmp(err.msg, want))
                hit = in;
        }
        if (hit == N_INPUTS)
            print_error("not a missing input: %s\n", err.msg);
        assert_true(hit < N_INPUTS && need[hit]);
        assert_true(rt_transform_needs(fx->g, fx->b, i, hit));
        if (rt_graph_input_dtype(fx->g, hit) == PREDICTD__DTYPE__DT_STRING)
            push_s(fx, i, hit, "1");
        else
            push_n(fx, i, hit, 1);
        assert_false(rt_transform_needs(fx->g, fx->b, i, hit)); /* given now */
        need[hit] = false;
    }
    for (size_t in = 0; in < N_INPUTS; in++)
        assert_false(need[in]); /* every input it named was refused in turn */
    /* tf.Example: a string input lacking is empty, not missing; CSV rows: a
     * column's CSV default applies (n has one) */
    rt_batch_clear(fx->b);
    i = add_bare(fx);
    rt_batch_set_missing(fx->b, RT_MISSING_EMPTY);
    assert_false(rt_transform_needs(fx->g, fx->b, i, I_CITY));
    assert_true(rt_transform_needs(fx->g, fx->b, i, I_N));
    rt_batch_set_missing(fx->b, RT_MISSING_CSV_DEFAULT);
    assert_false(rt_transform_needs(fx->g, fx->b, i, I_N));
    rt_batch_clear(fx->b);
}

static void test_numeric_defaults_and_errors(void **state)
{
    fixture *fx = *state;
    size_t i0 = add_std(fx, 26, "Rome", "t", 1); /* n missing */
    size_t i1 = add_std(fx, 30, "Rome", "t", 1);
    push_n(fx, i1, I_N, 11);
    run_ok(fx);
    /* n: numeric default_value 3 wins; n2: the column default 7. */
    assert_true(fx->f.values[C_N][i0] == 3.0f);
    assert_true(fx->f.values[C_N2][i0] == 7.0f);
    assert_true(fx->f.values[C_N][i1] == 11.0f);
    assert_true(fx->f.values[C_N2][i1] == 11.0f);
    /* normalizer (x - 10) / 4. */
    expect_near(fx->f.values[C_AGE_NORM][i0], 4.0);
    expect_near(fx->f.values[C_AGE_NORM][i1], 5.0);

    rt_batch_clear(fx->b);
    add_std(fx, 1, "Rome", "t", 1);
    size_t i = add_bare(fx);
    push_s(fx, i, I_AGE, "abc");
    run_fails(fx, "instances[1].age: expected a number, got a string (\"abc\")");

    rt_batch_clear(fx->b);
    i = add_std(fx, 1, "Rome", "t", 1);
    push_n(fx, i, I_AGE, 2);
    run_fails(fx, "instances[0].age: expected 1 value, got 2");

    rt_batch_clear(fx->b);
    add_std(fx, 1, "Rome", "t", 1);
    i = add_bare(fx);
    push_s(fx, i, I_CITY, "Rome");
    run_fails(fx, "instances[1].age: missing input");

    rt_batch_clear(fx->b);
    i = add_std(fx, 1, "Rome", NULL, 1);
    run_fails(fx, "instances[0].tags: missing input");

    rt_batch_clear(fx->b);
    i = add_std(fx, 1, "Rome", "t", 1);
    push_s(fx, i, I_P, "1");
    run_fails(fx, "instances[0].p: expected 2 values, got 1");

    rt_batch_clear(fx->b);
    i = add_bare(fx);
    push_n(fx, i, I_AGE, 1);
    push_s(fx, i, I_TAGS, "t");
    push_s(fx, i, I_CODE, "12");
    run_fails(fx, "instances[0].code: expected a number, got a string (\"12\")");
}

static void test_dnn_layout(void **state)
{
    fixture *fx = *state;
    const size_t *cols, *off, *width;
    size_t dim;
    size_t n = rt_graph_dnn_layout(fx->g, &cols, &off, &width, &dim);
    /* Sorted by name: age, age_norm, city_oov_indicator, e_city, e_mean,
     * e_sqrtn, e_sum, n, n2, p. */
    static const size_t want_cols[] = {C_AGE,   C_AGE_NORM, C_CITY_IND, C_E_CITY, C_E_MEAN,
                                       C_E_SQRTN, C_E_SUM,  C_N,        C_N2,     C_P};
    static const size_t want_width[] = {1, 1, 5, 2, 2, 2, 2, 1, 1, 2};
    assert_int_equal(n, 10);
    assert_int_equal(dim, 19);
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        assert_int_equal(cols[k], want_cols[k]);
        assert_int_equal(width[k], want_width[k]);
        assert_int_equal(off[k], at);
        at += want_width[k];
    }
    size_t i0 = add_std(fx, 26, "Rome", "x", 1);
    push_n(fx, i0, I_P, 5);
    push_n(fx, i0, I_P, 6);
    add_std(fx, 33, "Berlin", "y", 2);
    run_ok(fx);
    assert_int_equal(fx->f.dnn_dim, 19);
    assert_non_null(fx->f.dnn_input);
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; k < n; k++)
            for (size_t j = 0; j < width[k]; j++)
                assert_true(fx->f.dnn_input[i * dim + off[k] + j] ==
                            fx->f.values[cols[k]][i * width[k] + j]);
    /* Spot checks by hand: age, then age_norm, ..., p last. */
    assert_true(fx->f.dnn_input[0] == 26.0f);
    expect_near(fx->f.dnn_input[1], 4.0);
    assert_true(fx->f.dnn_input[17] == 5.0f && fx->f.dnn_input[18] == 6.0f);
    assert_true(fx->f.dnn_input[19] == 33.0f);
    assert_true(fx->f.dnn_input[19 + 15] == 3.0f); /* n = its default_value */
    assert_true(fx->f.dnn_input[19 + 16] == 7.0f); /* n2 = the column default */
}

static void test_memory_reused(void **state)
{
    fixture *fx = *state;
    for (size_t k = 0; k < 50; k++)
        add_std(fx, (double)k, k % 2 ? "Rome" : "Oslo", "t", (double)k);
    run_ok(fx);
    const float *dnn = fx->f.dnn_input;
    const float *vals = fx->f.values[C_E_MEAN];
    const int64_t *ids = fx->f.ids[C_CROSS].ids;
    int64_t id7 = ids[7];
    /* Same shape again (and smaller): the same buffers, the same answers. */
    rt_batch_clear(fx->b);
    for (size_t k = 0; k < 50; k++)
        add_std(fx, (double)k, k % 2 ? "Rome" : "Oslo", "t", (double)k);
    run_ok(fx);
    assert_ptr_equal(fx->f.dnn_input, dnn);
    assert_ptr_equal(fx->f.values[C_E_MEAN], vals);
    assert_ptr_equal(fx->f.ids[C_CROSS].ids, ids);
    assert_true(fx->f.ids[C_CROSS].ids[7] == id7);
    rt_batch_clear(fx->b);
    add_std(fx, 1, "Rome", "t", 1);
    run_ok(fx);
    assert_ptr_equal(fx->f.dnn_input, dnn);
    assert_int_equal(fx->f.n, 1);
    /* An empty batch is fine: no instances, empty CSR. */
    rt_batch_clear(fx->b);
    run_ok(fx);
    assert_int_equal(fx->f.n, 0);
    assert_int_equal(fx->f.ids[C_CITY].offsets[0], 0);
}

static void test_batch_cells(void **state)
{
    fixture *fx = *state;
    rt_batch *b = fx->b;
    size_t i0 = add_bare(fx), i1 = add_bare(fx);
    assert_int_equal(rt_batch_size(b), 2);
    assert_ptr_equal(rt_batch_graph(b), fx->g);
    /* Interleaved pushes keep each cell's values together, in order. */
    push_s(fx, i0, I_TAGS, "a");
    push_s(fx, i1, I_TAGS, "b");
    push_s(fx, i0, I_TAGS, "c");
    push_n(fx, i0, I_AGE, 3);
    push_s(fx, i0, I_TAGS, "");
    size_t n;
    const rt_value *v = rt_batch_cell(b, i0, I_TAGS, &n);
    assert_int_equal(n, 3);
    assert_true(v[0].len == 1 && memcmp(v[0].str, "a", 1) == 0);
    assert_true(v[1].len == 1 && memcmp(v[1].str, "c", 1) == 0);
    assert_true(v[2].len == 0 && v[2].str != NULL);
    v = rt_batch_cell(b, i1, I_TAGS, &n);
    assert_true(n == 1 && v[0].str[0] == 'b');
    v = rt_batch_cell(b, i0, I_AGE, &n);
    assert_true(n == 1 && v[0].str == NULL && v[0].num == 3.0);
    assert_null(rt_batch_cell(b, i1, I_AGE, &n));
    assert_int_equal(n, 0);
    /* Out of range. */
    assert_int_equal(rt_batch_push_num(b, 2, 0, 1), RT_ERR_INVALID);
    assert_int_equal(rt_batch_push_num(b, 0, N_INPUTS, 1), RT_ERR_INVALID);
    assert_null(rt_batch_cell(b, 5, 0, &n));
    /* Big strings (beyond one arena chunk) and many of them stay intact. */
    char *big = malloc(200000);
    memset(big, 'z', 200000);
    big[0] = 'A';
    assert_int_equal(rt_batch_push_str(b, i1, I_CITY, big, 200000), RT_OK);
    for (int k = 0; k < 5000; k++) {
        char w[16];
        snprintf(w, sizeof w, "w%d", k);
        assert_int_equal(rt_batch_push_str(b, i1, I_TAGS, w, strlen(w)), RT_OK);
    }
    v = rt_batch_cell(b, i1, I_CITY, &n);
    assert_true(n == 1 && v[0].len == 200000 && v[0].str[0] == 'A' && v[0].str[199999] == 'z');
    v = rt_batch_cell(b, i1, I_TAGS, &n);
    assert_int_equal(n, 5001);
    assert_true(v[0].str[0] == 'b' && strcmp(v[4321].str, "w4320") == 0);
    free(big);
    rt_batch_clear(b);
    assert_int_equal(rt_batch_size(b), 0);
    size_t i = add_bare(fx);
    assert_null(rt_batch_cell(b, i, I_TAGS, &n));
    push_s(fx, i, I_TAGS, "again");
    v = rt_batch_cell(b, i, I_TAGS, &n);
    assert_true(n == 1 && strcmp(v[0].str, "again") == 0);
    rt_batch_free(NULL);
    assert_null(rt_batch_new(NULL));
}

static void test_vocab_table(void **state)
{
    (void)state;
    static const char *const words[] = {"alpha", "beta", "", "gamma delta"};
    rt_vocab v;
    rt_err err = {{0}};
    assert_int_equal(rt_vocab_build(&v, words, 4, &err), RT_OK);
    assert_int_equal(rt_vocab_find(&v, "alpha", 5), 0);
    assert_int_equal(rt_vocab_find(&v, "beta", 4), 1);
    assert_int_equal(rt_vocab_find(&v, "", 0), 2);
    assert_int_equal(rt_vocab_find(&v, "gamma delta", 11), 3);
    assert_int_equal(rt_vocab_find(&v, "alph", 4), -1);
    assert_int_equal(rt_vocab_find(&v, "betaa", 5), -1);
    rt_vocab_free(&v);
    static const char *const dup[] = {"a", "b", "a"};
    assert_int_equal(rt_vocab_build(&v, dup, 3, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "\"a\" is listed twice");
    /* Many words. */
    char **many = malloc(5000 * sizeof *many);
    for (int k = 0; k < 5000; k++) {
        many[k] = malloc(16);
        snprintf(many[k], 16, "word%d", k);
    }
    assert_int_equal(rt_vocab_build(&v, (const char *const *)many, 5000, &err), RT_OK);
    for (int k = 0; k < 5000; k += 7)
        assert_int_equal(rt_vocab_find(&v, many[k], strlen(many[k])), k);
    rt_vocab_free(&v);
    for (int k = 0; k < 5000; k++)
        free(many[k]);
    free(many);
}

static const char no_trim_spec[] =
    "{\"columns\":[{\"name\":\"c\",\"type\":\"string\"},{\"name\":\"y\",\"type\":\"string\"}],"
    "\"trim_strings\":false,"
    "\"label\":{\"column\":\"y\",\"vocabulary\":[\" no\",\" yes\"]},"
    "\"feature_columns\":[{\"type\":\"categorical_column_with_vocabulary_list\",\"key\":\"c\","
    "\"vocabulary_list\":[\" a\",\"b\"]},"
    "{\"type\":\"categorical_column_with_hash_bucket\",\"name\":\"h\",\"key\":\"c\","
    "\"hash_bucket_size\":1000}],"
    "\"estimator\":{\"type\":\"LinearClassifier\",\"feature_columns\":[\"c\",\"h\"]}}";

static void test_trimming(void **state)
{
    (void)state;
    /* Without trimming, " a" and "a" differ, and the label keeps its space. */
    fixture *fx = fixture_from_text(no_trim_spec, NULL);
    assert_string_equal(rt_graph_class_name(fx->g, 1), " yes");
    size_t i;
    static const char *const in[] = {" a", "a", "b ", "b"};
    static const int64_t want[] = {0, -1, -1, 1};
    for (size_t k = 0; k < 4; k++) {
        i = add_bare(fx);
        push_s(fx, i, 0, in[k]);
    }
    rt_err err = {{0}};
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_OK);
    for (size_t k = 0; k < 4; k++) {
        const rt_ids *r = &fx->f.ids[0];
        size_t cnt = r->offsets[k + 1] - r->offsets[k];
        assert_int_equal(cnt, want[k] < 0 ? 0 : 1);
        if (cnt)
            assert_true(r->ids[r->offsets[k]] == want[k]);
        assert_true(fx->f.ids[1].ids[k] == fp_mod(in[k], 1000));
    }
    assert_null(fx->f.dnn_input); /* linear only */
    void *st = fx;
    teardown(&st);

    /* With trimming (the census data's " Private" == "Private"). */
    char *t = strdup(no_trim_spec);
    char *f = strstr(t, "false");
    memcpy(f, "true ", 5);
    fx = fixture_from_text(t, NULL);
    assert_string_equal(rt_graph_class_name(fx->g, 1), "yes");
    static const int64_t want2[] = {0, 0, 1, 1};
    for (size_t k = 0; k < 4; k++) {
        i = add_bare(fx);
        push_s(fx, i, 0, in[k]);
    }
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_OK);
    for (size_t k = 0; k < 4; k++) {
        assert_true(fx->f.ids[0].ids[k] == want2[k]);
        assert_true(fx->f.ids[1].ids[k] == fp_mod(k < 2 ? "a" : "b", 1000));
    }
    st = fx;
    teardown(&st);
    free(t);
}

static void test_vocabulary_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/predictd-test-vocab-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/cities.txt", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("Paris\r\n Rome\nOslo\nunused\n", fp);
    fclose(fp);
    static const char spec[] =
        "{\"columns\":[{\"name\":\"c\",\"type\":\"string\"},{\"name\":\"y\",\"type\":\"int\"}],"
        "\"label\":{\"column\":\"y\"},"
        "\"feature_columns\":[{\"type\":\"categorical_column_with_vocabulary_file\",\"key\":\"c\","
        "\"vocabulary_file\":\"cities.txt\",\"vocabulary_size\":3,\"num_oov_buckets\":1}],"
        "\"estimator\":{\"type\":\"LinearClassifier\",\"feature_columns\":[\"c\"]}}";
    fixture *fx = fixture_from_text(spec, dir);
    static const char *const in[] = {"Paris", "Rome", "Oslo", "unused"};
    static const int64_t want[] = {0, 1, 2, 3};
    for (size_t k = 0; k < 4; k++) {
        size_t i = add_bare(fx);
        push_s(fx, i, 0, in[k]);
    }
    rt_err err = {{0}};
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_OK);
    for (size_t k = 0; k < 4; k++)
        assert_true(fx->f.ids[0].ids[k] == want[k]);
    /* The ModelDef says 3 words: linear weights [3 + 1 oov, 1]. */
    rt_tensor_spec *specs;
    size_t n;
    assert_int_equal(rt_graph_tensor_specs(fx->def, &specs, &n, &err), RT_OK);
    assert_int_equal(specs[0].shape[0], 4);
    free(specs);
    /* A missing file or assets directory is refused, naming the file. */
    rt_graph *g = NULL;
    tensors t = {{0}, 0};
    assert_int_not_equal(rt_graph_build(fx->def, lookup, &t, NULL, &g, &err), RT_OK);
    assert_non_null(strstr(err.msg, "cities.txt"));
    assert_int_equal(rt_graph_build(fx->def, lookup, &t, "/nonexistent", &g, &err),
                     RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/cities.txt"));
    assert_null(g);
    /* Fewer words than vocabulary_size. */
    fx->def->feature_columns[0]->vocabulary_size = 9;
    assert_int_equal(rt_graph_build(fx->def, lookup, &t, dir, &g, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "vocabulary_size"));
    /* A FIFO in the file's place is refused at once (opening it must not
     * block the loader until a writer comes). */
    fx->def->feature_columns[0]->vocabulary_size = 3;
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(rt_graph_build(fx->def, lookup, &t, dir, &g, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "cities.txt: not a regular file (a FIFO)"));
    assert_null(g);
    for (size_t k = 0; k < t.n; k++)
        free(t.bufs[k]);
    void *st = fx;
    teardown(&st);
    unlink(path);
    rmdir(dir);
}

static void test_missing_tensor(void **state)
{
    fixture *fx = *state;
    rt_graph *g = NULL;
    rt_err err = {{0}};
    tensors t = {{0}, 64}; /* the lookup refuses everything */
    assert_int_equal(rt_graph_build(fx->def, lookup, &t, NULL, &g, &err), RT_ERR_NOTFOUND);
    assert_null(g);
    assert_non_null(strstr(err.msg, "linear/linear_model/city/weights"));
    assert_int_equal(rt_graph_build(fx->def, NULL, NULL, NULL, &g, &err), RT_ERR_INVALID);
    rt_graph_free(NULL);
    rt_transform_features_free(NULL);
}

static int64_t fp_cat_mod(const uint64_t *parts, size_t n, uint64_t buckets)
{
    uint64_t h = UINT64_C(0xDECAFCAFFE);
    for (size_t k = 0; k < n; k++)
        h = rt_hash_fingerprint_cat64(h, parts[k]);
    return (int64_t)(h % buckets);
}

/* The census spec on the census data's one-instance test.json (values with
 * the data's leading spaces), every id computed here independently. */
static void test_census_instance(void **state)
{
    (void)state;
    char *spec = read_text("tests/data/specs/census.json");
    char *inst = read_text("data/census/test.json");
    assert_non_null(spec);
    assert_non_null(inst);
    cJSON *sj = cJSON_Parse(spec);
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    static const char *const other[] = {"train", "eval", NULL};
    assert_int_equal(rt_spec_to_modeldef(sj, other, &def, &err), RT_OK);
    cJSON_Delete(sj);
    tensors t = {{0}, 0};
    rt_graph *g = NULL;
    assert_int_equal(rt_graph_build(def, lookup, &t, NULL, &g, &err), RT_OK);
    rt_batch *b = rt_batch_new(g);
    size_t idx;
    assert_int_equal(rt_batch_add(b, &idx), RT_OK);
    cJSON *ij = cJSON_Parse(inst);
    assert_non_null(ij);
    size_t pushed = 0;
    for (const cJSON *v = ij->child; v; v = v->next) {
        long in = rt_graph_find_input(g, v->string, strlen(v->string));
        assert_true(in >= 0);
        if (cJSON_IsString(v))
            assert_int_equal(rt_batch_push_str(b, idx, (size_t)in, v->valuestring,
                                               strlen(v->valuestring)),
                             RT_OK);
        else
            assert_int_equal(rt_batch_push_num(b, idx, (size_t)in, v->valuedouble), RT_OK);
        pushed++;
    }
    assert_int_equal(pushed, rt_graph_num_inputs(g));
    cJSON_Delete(ij);
    rt_features f;
    rt_transform_features_init(&f);
    assert_int_equal(rt_transform(g, b, &f, &err), RT_OK);

    /* Feature column indexes of tests/data/specs/census.json. */
    enum { AGE, EDU_NUM, GAIN, LOSS, HOURS, AGE_B, GENDER, RACE, EDU, MARITAL, REL, WORK, OCC,
           COUNTRY, EDU_X_OCC, AGE_X_OCC_X_RACE, COUNTRY_X_OCC };
    struct { size_t col; int64_t id; } want[] = {
        {AGE_B, 2},   /* 25 is a boundary: [18, 25, ...] -> 2 */
        {GENDER, 1},  /* " Male" trimmed */
        {RACE, 2},    /* Black */
        {EDU, 2},     /* 11th */
        {MARITAL, 3}, /* Never-married */
        {REL, 3},     /* Own-child */
        {WORK, 1},    /* Private */
        {OCC, fp_mod("Machine-op-inspct", 100)},
        {COUNTRY, fp_mod("United-States", 100)},
    };
    const uint64_t occ = rt_hash_fingerprint64("Machine-op-inspct", 17);
    const uint64_t edu = rt_hash_fingerprint64("11th", 4),
                   black = rt_hash_fingerprint64("Black", 5);
    const uint64_t us = rt_hash_fingerprint64("United-States", 13);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const rt_ids *r = &f.ids[want[k].col];
        assert_int_equal(r->offsets[1], 1);
        assert_true(r->ids[0] == want[k].id);
    }
    assert_true(f.ids[EDU_X_OCC].ids[0] == fp_cat_mod((uint64_t[]){edu, occ}, 2, 10000));
    /* keys [{"column": "age_buckets"}, "race", "occupation"]. */
    assert_true(f.ids[AGE_X_OCC_X_RACE].ids[0] ==
                fp_cat_mod((uint64_t[]){2, black, occ}, 3, 10000));
    assert_true(f.ids[COUNTRY_X_OCC].ids[0] == fp_cat_mod((uint64_t[]){us, occ}, 2, 10000));
    /* DNN input: 66 values; age first, hours_per_week (40) at its offset. */
    const size_t *cols, *off, *width;
    size_t dim;
    size_t n = rt_graph_dnn_layout(g, &cols, &off, &width, &dim);
    assert_int_equal(n, 13);
    assert_int_equal(dim, 66);
    assert_true(f.dnn_input[0] == 25.0f);
    for (size_t k = 0; k < n; k++)
        if (cols[k] == HOURS)
            assert_true(f.dnn_input[off[k]] == 40.0f);
    rt_transform_features_free(&f);
    rt_batch_free(b);
    rt_graph_free(g);
    rt_spec_modeldef_free(def);
    for (size_t k = 0; k < t.n; k++)
        free(t.bufs[k]);
    free(spec);
    free(inst);
}

/* --------------------------- identity, weighted and shared embeddings */

static const char *KINDS_SPEC =
    "{\"columns\": [{\"name\": \"k\", \"type\": \"int\"}, {\"name\": \"v\", \"type\": \"float\"},"
    " {\"name\": \"city\", \"type\": \"string\"}, {\"name\": \"w\", \"type\": \"float\"},"
    " {\"name\": \"y\", \"type\": \"float\"}],"
    " \"label\": {\"column\": \"y\"},"
    " \"feature_columns\": ["
    "  {\"type\": \"categorical_column_with_identity\", \"key\": \"k\", \"num_buckets\": 4},"
    "  {\"type\": \"categorical_column_with_identity\", \"name\": \"kd\", \"key\": \"k\","
    "   \"num_buckets\": 4, \"default_value\": 3},"
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"city\","
    "   \"vocabulary_list\": [\"a\", \"b\", \"c\"]},"
    "  {\"type\": \"weighted_categorical_column\", \"categorical_column\": \"city\","
    "   \"weight_feature_key\": \"w\"},"
    "  {\"type\": \"weighted_categorical_column\", \"categorical_column\": \"kd\","
    "   \"weight_feature_key\": \"v\"},"
    "  {\"type\": \"indicator_column\", \"categorical_column\": \"city_weighted_by_w\"},"
    "  {\"type\": \"shared_embedding_columns\","
    "   \"categorical_columns\": [\"city_weighted_by_w\", \"city\"], \"dimension\": 2}],"
    " \"estimator\": {\"type\": \"DNNLinearCombinedRegressor\","
    "  \"linear_feature_columns\": [\"k\", \"kd\", \"city_weighted_by_w\", \"kd_weighted_by_v\","
    "   \"city_weighted_by_w_indicator\"],"
    "  \"dnn_feature_columns\": [\"city_shared_embedding\", \"city_weighted_by_w_shared_embedding\"],"
    "  \"dnn_hidden_units\": [2]}}";
enum { K_K, K_KD, K_CITY, K_CITY_W, K_KD_V, K_IND, K_SH_W, K_SH_CITY };
enum { KI_K, KI_V, KI_CITY, KI_W };

static int setup_kinds(void **state)
{
    *state = fixture_from_text(KINDS_SPEC, NULL);
    return 0;
}

/* a and b hold the same features: instances, columns, widths, ids,
 * weights and values, and the DNN input. */
static void expect_same_features(const rt_features *a, const rt_features *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->n_columns, b->n_columns);
    assert_int_equal(a->dnn_dim, b->dnn_dim);
    for (size_t c = 0; c < a->n_columns; c++) {
        assert_int_equal(a->width[c], b->width[c]);
        if (a->width[c] > 0) {
            assert_memory_equal(a->values[c], b->values[c], a->n * a->width[c] * sizeof(float));
            continue;
        }
        assert_memory_equal(a->ids[c].offsets, b->ids[c].offsets, (a->n + 1) * sizeof(uint32_t));
        size_t k = a->ids[c].offsets[a->n];
        if (k)
            assert_memory_equal(a->ids[c].ids, b->ids[c].ids, k * sizeof(int64_t));
        assert_true(!a->ids[c].weights == !b->ids[c].weights);
        if (k && a->ids[c].weights)
            assert_memory_equal(a->ids[c].weights, b->ids[c].weights, k * sizeof(float));
    }
    assert_true(!a->dnn_input == !b->dnn_input);
    if (a->dnn_input && a->n)
        assert_memory_equal(a->dnn_input, b->dnn_input, a->n * a->dnn_dim * sizeof(float));
}

/* Transforms fx's batch into shared and into fx's own features and
 * compares them. */
static void expect_shared_as_own(fixture *fx, rt_features *shared)
{
    rt_err err = {{0}};
    assert_int_equal(rt_transform(fx->g, fx->b, shared, &err), RT_OK);
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_OK);
    assert_int_equal(shared->n, rt_batch_size(fx->b));
    expect_same_features(shared, &fx->f);
}

/* Instances of the kinds fixture: k, v, city, w. */
static void add_kinds(fixture *fx, size_t n)
{
    static const char *const city[] = {"a", "b", "zz", "c"};
    for (size_t j = 0; j < n; j++) {
        size_t i = add_bare(fx);
        push_n(fx, i, KI_K, (double)(j % 4));
        push_n(fx, i, KI_V, 0.5 * (double)j);
        push_s(fx, i, KI_CITY, city[j % 4]);
        push_n(fx, i, KI_W, 1.0 + (double)j);
    }
}

/* One rt_features taken from graph to graph (the transform lays it out
 * again only when the graph, its columns or the room for the batch
 * change): after the transform fixture's graph, the kinds graph (weighted
 * columns), a larger batch, a smaller one, another graph with other widths
 * at the kinds graph's address, and the first graph again, every transform equals one into features used for
 * that graph alone. */
static void test_layout_per_graph(void **state)
{
    (void)state;
    char *text = read_text("tests/data/specs/transform.json");
    assert_non_null(text);
    fixture *a = fixture_from_text(text, NULL), *k = fixture_from_text(KINDS_SPEC, NULL);
    free(text);
    rt_features shared;
    rt_transform_features_init(&shared);
    for (size_t j = 0; j < 3; j++)
        add_std(a, (double)j, j % 2 ? "Rome" : "Oslo", "t", (double)j);
    expect_shared_as_own(a, &shared);
    add_kinds(k, 5);
    expect_shared_as_own(k, &shared);
    add_kinds(k, 20); /* 25 instances: more than the room laid out */
    expect_shared_as_own(k, &shared);
    rt_batch_clear(k->b);
    add_kinds(k, 2);
    expect_shared_as_own(k, &shared);
    /* a graph with 3-wide embeddings at the kinds graph's address (as when
     * the allocator gives a new version's graph the freed one's): the two
     * graphs' contents swapped, each fixture given a batch anew */
    char *wide = strdup(KINDS_SPEC);
    assert_non_null(wide);
    char *d = strstr(wide, "\"dimension\": 2");
    assert_non_null(d);
    d[strlen("\"dimension\": ")] = '3';
    fixture *w = fixture_from_text(wide, NULL);
    free(wide);
    rt_graph tmp = *k->g;
    *k->g = *w->g;
    *w->g = tmp;
    rt_batch_free(k->b);
    rt_batch_free(w->b);
    assert_non_null(k->b = rt_batch_new(k->g));
    assert_non_null(w->b = rt_batch_new(w->g));
    add_kinds(k, 2);
    expect_shared_as_own(k, &shared);
    assert_int_equal(shared.width[K_SH_CITY], 3);
    teardown((void **)&w);
    rt_batch_clear(a->b);
    add_std(a, 7, "Rome", "t", 2);
    expect_shared_as_own(a, &shared);
    rt_transform_features_free(&shared);
    teardown((void **)&k);
    teardown((void **)&a);
}

static void expect_weights(const fixture *fx, size_t c, size_t i, const float *want, size_t n)
{
    const rt_ids *r = &fx->f.ids[c];
    assert_non_null(r->weights);
    assert_int_equal(r->offsets[i + 1] - r->offsets[i], n);
    for (size_t j = 0; j < n; j++)
        expect_near(r->weights[r->offsets[i] + j], want[j]);
}

static void test_fc_kinds_transform(void **state)
{
    fixture *fx = *state;
    rt_err err = {{0}};
    /* 0: k 2, v 4, city b, w 0.5 */
    size_t i = add_bare(fx);
    push_n(fx, i, KI_K, 2);
    push_n(fx, i, KI_V, 4);
    push_s(fx, i, KI_CITY, "b");
    push_n(fx, i, KI_W, 0.5);
    /* 1: k -1 (TF's ignore value), v 3, cities a b c with weights 2 -1 0.5 */
    i = add_bare(fx);
    push_n(fx, i, KI_K, -1);
    push_n(fx, i, KI_V, 3);
    push_s(fx, i, KI_CITY, "a");
    push_s(fx, i, KI_CITY, "b");
    push_s(fx, i, KI_CITY, "c");
    push_n(fx, i, KI_W, 2);
    push_n(fx, i, KI_W, -1);
    push_n(fx, i, KI_W, 0.5);
    /* 2: k 3, city "zz" (no id: its weight goes with it) and "a" with
     * weight 0 (dropped, as TF drops 0.0) */
    i = add_bare(fx);
    push_n(fx, i, KI_K, 3);
    push_n(fx, i, KI_V, 1);
    push_s(fx, i, KI_CITY, "zz");
    push_s(fx, i, KI_CITY, "a");
    push_s(fx, i, KI_CITY, "c");
    push_n(fx, i, KI_W, 7);
    push_n(fx, i, KI_W, 0);
    push_n(fx, i, KI_W, 1.5);
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_OK);
    expect_ids(fx, K_K, 0, (int64_t[]){2}, 1);
    expect_ids(fx, K_K, 1, NULL, 0);
    expect_ids(fx, K_K, 2, (int64_t[]){3}, 1);
    expect_ids(fx, K_KD, 1, NULL, 0);
    assert_null(fx->f.ids[K_CITY].weights);
    expect_ids(fx, K_CITY_W, 0, (int64_t[]){1}, 1);
    expect_weights(fx, K_CITY_W, 0, (float[]){0.5f}, 1);
    expect_ids(fx, K_CITY_W, 1, (int64_t[]){0, 1, 2}, 3);
    expect_weights(fx, K_CITY_W, 1, (float[]){2, -1, 0.5f}, 3);
    expect_ids(fx, K_CITY_W, 2, (int64_t[]){2}, 1);
    expect_weights(fx, K_CITY_W, 2, (float[]){1.5f}, 1);
    expect_ids(fx, K_KD_V, 0, (int64_t[]){2}, 1);
    expect_weights(fx, K_KD_V, 0, (float[]){4}, 1);
    expect_ids(fx, K_KD_V, 1, NULL, 0);
    /* the indicator carries every weight, negative ones too */
    const float *ind = fx->f.values[K_IND];
    float want_ind[3][3] = {{0, 0.5f, 0}, {2, -1, 0.5f}, {0, 0, 1.5f}};
    for (size_t r = 0; r < 3; r++)
        for (size_t j = 0; j < 3; j++)
            expect_near(ind[r * 3 + j], want_ind[r][j]);
    /* One table for both shared columns (t[k] = k: row r is [2r, 2r+1]);
     * mean combiner, weighted by the weights > 0: (2 * [0, 1] + 0.5 *
     * [4, 5]) / 2.5 for instance 1; the unweighted column averages a b c. */
    assert_true(fx->g->fcols[K_SH_W].embedding == fx->g->fcols[K_SH_CITY].embedding);
    const float *ew = fx->f.values[K_SH_W], *ec = fx->f.values[K_SH_CITY];
    expect_near(ew[0], 2), expect_near(ew[1], 3);     /* b alone */
    expect_near(ew[2], 0.8), expect_near(ew[3], 1.8); /* a (2), c (0.5) */
    expect_near(ew[4], 4), expect_near(ew[5], 5);     /* c alone */
    expect_near(ec[2], 2), expect_near(ec[3], 3);     /* mean of a, b, c */

    /* The linear part: weights times the weight values (> 0 only), the
     * indicator's one-hot with every weight. */
    float *wc = NULL, *wi = NULL, *wk = NULL;
    for (size_t l = 0; l < fx->g->n_linear; l++) {
        size_t c = fx->g->linear_cols[l];
        float *w = (float *)(uintptr_t)fx->g->linear_w[l];
        if (c == K_CITY_W)
            wc = w;
        else if (c == K_IND)
            wi = w;
        else if (c == K_KD_V)
            wk = w;
    }
    assert_true(wc && wi && wk);
    for (size_t j = 0; j < 4; j++) {
        if (j < 3) {
            wc[j] = 10.0f * (float)(j + 1);
            wi[j] = 100.0f * (float)(j + 1);
        }
        wk[j] = (float)(j + 1);
    }
    rt_workspace *ws = rt_workspace_new();
    float logits[3];
    assert_int_equal(rt_forward(fx->g, &fx->f, ws, logits, &err), RT_OK);
    expect_near(logits[0], 0.5 * 20 + 0.5 * 200 + 4 * 3);
    expect_near(logits[1], 2 * 10 + 0.5 * 30 + (2 * 100 - 200 + 0.5 * 300)); /* kd: no id */
    expect_near(logits[2], 1.5 * 30 + 1.5 * 300 + 1 * 4);
    rt_workspace_free(ws);
}

static void test_fc_kinds_errors(void **state)
{
    fixture *fx = *state;
    rt_err err = {{0}};
    size_t i = add_bare(fx);
    push_n(fx, i, KI_K, 4);
    push_n(fx, i, KI_V, 1);
    push_s(fx, i, KI_CITY, "a");
    push_n(fx, i, KI_W, 1);
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "instances[0].k: 4 is out of range [0, 4) of "
                                 "categorical_column_with_identity k, which has no "
                                 "default_value");
    rt_batch_clear(fx->b);
    i = add_bare(fx);
    push_n(fx, i, KI_K, 1.5);
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "instances[0].k: expected an integer, got 1.5");
    rt_batch_clear(fx->b);
    i = add_bare(fx);
    push_n(fx, i, KI_K, 1);
    push_n(fx, i, KI_V, 1);
    push_s(fx, i, KI_CITY, "a");
    push_s(fx, i, KI_CITY, "b");
    push_n(fx, i, KI_W, 1);
    assert_int_equal(rt_transform(fx->g, fx->b, &fx->f, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "instances[0].w: 1 weight for 2 values of city "
                                 "(weighted_categorical_column city_weighted_by_w takes one "
                                 "weight per value)");
    /* One tensor for the shared table, named after the collection. */
    rt_tensor_spec *ts = NULL;
    size_t nt = 0, tables = 0;
    assert_int_equal(rt_graph_tensor_specs(fx->def, &ts, &nt, &err), RT_OK);
    for (size_t k = 0; k < nt; k++)
        if (strstr(ts[k].name, "embedding_weights")) {
            tables++;
            assert_string_equal(ts[k].name, "dnn/input_from_feature_columns/"
                                            "city_city_weighted_by_w_shared_embedding/"
                                            "embedding_weights");
            assert_true(ts[k].shape[0] == 3 && ts[k].shape[1] == 2);
        }
    assert_int_equal(tables, 1);
    free(ts);
}

/* Spec refusals of the three kinds, each naming the key. */
static void test_fc_kinds_spec_errors(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *want;
    } cases[] = {
        {"\"key\": \"k\", \"num_buckets\": 4}", "\"key\": \"city\", \"num_buckets\": 4}",
         "feature_columns[0].key: \"city\" is a string column; "
         "categorical_column_with_identity needs an int column"},
        {"\"num_buckets\": 4, \"default_value\": 3}", "\"num_buckets\": 4, \"default_value\": 4}",
         "feature_columns[1].default_value"},
        {"\"weight_feature_key\": \"w\"}", "\"weight_feature_key\": \"city\"}",
         "feature_columns[3].weight_feature_key: \"city\" is a string column"},
        {"\"categorical_column\": \"kd\",", "\"categorical_column\": \"city_weighted_by_w\",",
         "feature_columns[4].categorical_column: \"city_weighted_by_w\" must name an identity"},
        {"[\"city_weighted_by_w\", \"city\"]", "[\"kd\", \"city\"]",
         "the columns of a shared embedding must be of the same kind"},
        {"[\"city_weighted_by_w\", \"city\"]", "[\"kd\", \"k\"], \"name\": \"x\"",
         "feature_columns[6].name: unknown key"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *at = strstr(KINDS_SPEC, cases[c].from);
        assert_non_null(at);
        char text[4096];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - KINDS_SPEC), KINDS_SPEC, cases[c].to,
                 at + strlen(cases[c].from));
        cJSON *j = cJSON_Parse(text);
        assert_non_null(j);
        Predictd__ModelDef *def = NULL;
        rt_err err = {{0}};
        assert_true(rt_spec_to_modeldef(j, NULL, &def, &err) != RT_OK);
        if (!strstr(err.msg, cases[c].want))
            print_error("case %zu: \"%s\" lacks \"%s\"\n", c, err.msg, cases[c].want);
        assert_non_null(strstr(err.msg, cases[c].want));
        cJSON_Delete(j);
    }
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_graph_inputs),
        T(test_hash_and_vocabulary),
        T(test_crossed),
        T(test_bucketized_edges),
        T(test_embedding_combiners),
        T(test_indicator),
        T(test_needs_matches_transform),
        T(test_numeric_defaults_and_errors),
        T(test_dnn_layout),
        T(test_memory_reused),
        T(test_batch_cells),
        cmocka_unit_test(test_vocab_table),
        cmocka_unit_test(test_trimming),
        cmocka_unit_test(test_vocabulary_file),
        T(test_missing_tensor),
        T(test_missing_policies),
        cmocka_unit_test(test_census_instance),
        cmocka_unit_test_setup_teardown(test_fc_kinds_transform, setup_kinds, teardown),
        cmocka_unit_test(test_layout_per_graph),
        cmocka_unit_test_setup_teardown(test_fc_kinds_errors, setup_kinds, teardown),
        cmocka_unit_test(test_fc_kinds_spec_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
