/* test_hash.c — known answers for Fingerprint64, FingerprintCat64, CRC-32C
 * and the JSON writers of rt_buf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt.h"
#include "rt_serve_internal.h"
#include "rt_data_internal.h"

static void test_fingerprint64_known_answers(void **state)
{
    (void)state;
    /* Known answers from TensorFlow's Fingerprint64 (farmhashna::Hash64). */
    assert_true(rt_hash_fingerprint64("Hello", 5) == 15404698994557526151ULL);
    assert_true(rt_hash_fingerprint64("World", 5) == 18308117990299812472ULL);
}

static uint64_t fp(const char *s)
{
    return rt_hash_fingerprint64(s, strlen(s));
}

static void test_fingerprint64_every_length_path(void **state)
{
    (void)state;
    /* Published FarmHash Fingerprint64 values, one or more per length path. */
    assert_true(fp("") == 0x9ae16a3b2f90404fULL);
    assert_true(fp("a") == 0xb3454265b6df75e3ULL);
    assert_true(fp("abc") == 0x24a5b3a074e7f369ULL);
    assert_true(fp("test") == 8581389452482819506ULL);
    assert_true(fp("dXB@tDQ-v5<H]rq2Pcc*s>nC-[Mdy") == 8365906589669344754ULL); /* 29 */
    assert_true(fp("2/?98ns)xbzEVL^:wCS$7l3@_g!zP^<D.-bd6") == 9728733090894310797ULL);
    assert_true(fp("F7479877-4690-4A44-AFC9-8FE987EA512F:some_other_id") ==
                6862335115798125349ULL); /* 50 */
    assert_true(fp("0376d8dc-a717-425a-9dd2-d4b36bcaddac:65d52a5d-4f88-4a78-97c9-08464d44bbb6") ==
                14340110469024474010ULL); /* 73: the > 64 loop */
    char buf[257];
    for (int i = 0; i < 64; i++)
        memcpy(buf + 4 * i, "test", 4);
    assert_true(rt_hash_fingerprint64(buf, 32) == (uint64_t)-4196240717365766262LL);
    assert_true(rt_hash_fingerprint64(buf, 256) == 3500507768004279527ULL);
    /* tf.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3) == [0, 2, 2] */
    assert_int_equal(fp("Hello") % 3, 0);
    assert_int_equal(fp("TensorFlow") % 3, 2);
    assert_int_equal(fp("2.x") % 3, 2);
}

static void test_fingerprint64_all_lengths_distinct(void **state)
{
    (void)state;
    /* Every length path (0-3, 4-7, 8-16, 17-32, 33-64, >64) gives distinct,
     * stable values, and reads no byte past len. */
    char buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)('a' + i % 26);
    uint64_t prev = 0;
    for (size_t len = 0; len < 200; len++) {
        uint64_t h = rt_hash_fingerprint64(buf, len);
        assert_true(h != prev);
        assert_true(h == rt_hash_fingerprint64(buf, len));
        prev = h;
    }
}

static void test_sparse_cross_hashed_known_answers(void **state)
{
    (void)state;
    /* TensorFlow's sparse_cross_hashed of one value per column:
     * h = hash_key; h = FingerprintCat64(h, Fingerprint64(value)) per column.
     * Known answers from TensorFlow's sparse cross op tests. */
    const char *v[] = {"batch1-FC1-F1", "batch1-FC2-F1", "batch1-FC3-F1"};
    uint64_t h = 0xDECAFCAFFEULL, h2 = 0xDECAFCAFFEULL + 1;
    for (int i = 0; i < 3; i++) {
        h = rt_hash_fingerprint_cat64(h, fp(v[i]));
        h2 = rt_hash_fingerprint_cat64(h2, fp(v[i]));
    }
    assert_true(h % INT64_MAX == 1971693436396284976ULL); /* num_buckets = 0 */
    assert_true(h % 100 == 83);                           /* num_buckets = 100 */
    assert_true(h2 % INT64_MAX == 4847552627144134031ULL); /* hash_key + 1 */
}

static void test_crc32c_known_answer(void **state)
{
    (void)state;
    /* The standard check value of CRC-32C. */
    assert_int_equal(rt_hash_crc32c(0, "123456789", 9), 0xe3069283u);
    /* Incremental == whole. */
    uint32_t c = rt_hash_crc32c(0, "12345", 5);
    assert_int_equal(rt_hash_crc32c(c, "6789", 4), 0xe3069283u);
}

/* RFC 3720 (iSCSI) test vectors, through both paths. */
static void test_crc32c_rfc3720_vectors(void **state)
{
    (void)state;
    unsigned char buf[32];
    uint32_t (*fns[2])(uint32_t, const void *, size_t) = {rt_hash_crc32c, rt_hash_crc32c_portable};
    for (int f = 0; f < 2; f++) {
        memset(buf, 0, sizeof buf);
        assert_int_equal(fns[f](0, buf, 32), 0x8a9136aau);
        memset(buf, 0xff, sizeof buf);
        assert_int_equal(fns[f](0, buf, 32), 0x62a8ab43u);
        for (int i = 0; i < 32; i++)
            buf[i] = (unsigned char)i;
        assert_int_equal(fns[f](0, buf, 32), 0x46dd794eu);
        for (int i = 0; i < 32; i++)
            buf[i] = (unsigned char)(31 - i);
        assert_int_equal(fns[f](0, buf, 32), 0x113fdb5cu);
    }
}

/* The hardware path (when the CPU has SSE4.2; three interleaved streams from
 * 24 KiB on) against the table: random lengths, start offsets and initial
 * CRCs, plus lengths around the stream block boundaries, and a CRC continued
 * over two pieces. */
static void test_crc32c_hw_matches_table(void **state)
{
    (void)state;
    enum { N = 3 * 8192 * 3 + 64 };
    unsigned char *buf = malloc(N);
    assert_non_null(buf);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    static const size_t edges[] = {0, 1, 7, 8, 9, 24575, 24576, 24577, 24576 + 8,
                                   49152, 49153, 73727, 73728, 73729};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
        for (size_t off = 0; off < 8; off++)
            assert_int_equal(rt_hash_crc32c(0, buf + off, edges[e]),
                             rt_hash_crc32c_portable(0, buf + off, edges[e]));
    for (int t = 0; t < 400; t++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t off = (size_t)(x % 61);
        size_t len = (size_t)((x >> 8) % (uint64_t)(N - off));
        if (t % 2)
            len %= 300; /* short ones too */
        uint32_t init = (uint32_t)(x >> 32);
        assert_int_equal(rt_hash_crc32c(init, buf + off, len),
                         rt_hash_crc32c_portable(init, buf + off, len));
        size_t cut = len / 3;
        uint32_t c = rt_hash_crc32c(init, buf + off, cut);
        assert_int_equal(rt_hash_crc32c(c, buf + off + cut, len - cut),
                         rt_hash_crc32c_portable(init, buf + off, len));
    }
    print_message("crc32c: hardware path %s\n",
                  rt_hash_crc32c_hw_available() ? "used" : "not available");
    free(buf);
}

static void test_json_float_shortest(void **state)
{
    (void)state;
    rt_buf b;
    rt_buf_init(&b);
    rt_buf_json_float(&b, 0.1f);
    assert_string_equal(b.data, "0.1");
    rt_buf_reset(&b);
    rt_buf_json_float(&b, 1.0f / 3.0f);
    assert_string_equal(b.data, "0.33333334");
    rt_buf_reset(&b);
    rt_buf_json_string(&b, "a\"b\n\x01", 5);
    assert_string_equal(b.data, "\"a\\\"b\\n\\u0001\"");
    rt_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fingerprint64_known_answers),
        cmocka_unit_test(test_fingerprint64_every_length_path),
        cmocka_unit_test(test_fingerprint64_all_lengths_distinct),
        cmocka_unit_test(test_sparse_cross_hashed_known_answers),
        cmocka_unit_test(test_crc32c_known_answer),
        cmocka_unit_test(test_crc32c_rfc3720_vectors),
        cmocka_unit_test(test_crc32c_hw_matches_table),
        cmocka_unit_test(test_json_float_shortest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
