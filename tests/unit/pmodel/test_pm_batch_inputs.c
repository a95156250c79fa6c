/* test_pm_batch_inputs.c — what a batch-prediction job read, and the check
 * before it is resumed (pmodel/pm_batch_inputs.c): job.json's "inputs"
 * member (parsed back: file, range, size), each shard's digest file with the
 * digest worked out here from its bytes as the file's comment defines it
 * (Fingerprint64 of each 1 MiB block, chained, xor the length), and every
 * refusal with its message: a file that grew, bytes of a scored shard that
 * changed (checked only by the rank that scores the shard), a job.json of
 * another job, a file gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <inttypes.h>
#include <cJSON.h>
#include <cmocka.h>

#include "pm.h"
#include "support_models.h"

static char dir[256], fa[512], fb[512];

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    if (support_mkdtemp(dir, sizeof dir) != 0)
        return -1;
    snprintf(fa, sizeof fa, "%s/a.jsonl", dir);
    snprintf(fb, sizeof fb, "%s/b.jsonl", dir);
    write_file(fa, "[1]\n[2]\n");
    write_file(fb, "[10]\n[20]\n[30]\n[40]\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return support_rmtree(dir);
}

/* {"inputs": [...]} as job.json holds it. */
static void job_json(const pm_batch_unit *u, size_t n, rt_buf *b)
{
    rt_err err = {{0}};
    rt_buf_init(b);
    assert_int_equal(rt_buf_puts(b, "{"), 0);
    assert_int_equal(pm_batch_inputs_json(u, n, b, &err), RT_OK);
    assert_int_equal(rt_buf_puts(b, "}"), 0);
}

/* The digest of bytes [start, end) of the string s, by the comment's rule. */
static uint64_t digest_of(const char *s, size_t start, size_t end)
{
    uint64_t chain[2] = {0, 0};
    chain[1] = rt_hash_fingerprint64(s + start, end - start);
    chain[0] = rt_hash_fingerprint64(chain, sizeof chain);
    return chain[0] ^ (uint64_t)(end - start);
}

static void test_batch_inputs_json(void **state)
{
    (void)state;
    pm_batch_unit u[3] = {{fa, 0, 0}, {fb, 0, 10}, {fb, 10, 0}};
    rt_buf b;
    job_json(u, 3, &b);
    cJSON *doc = cJSON_ParseWithLength(b.data, b.len);
    assert_non_null(doc);
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(doc, "inputs");
    assert_int_equal(cJSON_GetArraySize(in), 3);
    static const double size[3] = {8, 20, 20}, start[3] = {0, 0, 10}, end[3] = {0, 10, 0};
    for (int k = 0; k < 3; k++) {
        const cJSON *e = cJSON_GetArrayItem(in, k);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "file")),
                            u[k].path);
        assert_true(cJSON_GetObjectItemCaseSensitive(e, "size")->valuedouble == size[k]);
        assert_true(cJSON_GetObjectItemCaseSensitive(e, "start")->valuedouble == start[k]);
        assert_true(cJSON_GetObjectItemCaseSensitive(e, "end")->valuedouble == end[k]);
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "mtime")));
    }
    cJSON_Delete(doc);
    rt_err err = {{0}};
    /* unchanged inputs: the job may resume, on every rank */
    for (long rank = 0; rank < 2; rank++)
        assert_int_equal(pm_batch_inputs_check(b.data, b.len, dir, 4, u, 3, rank, 2, &err), RT_OK);
    rt_buf_free(&b);
    char missing[600], want[900];
    snprintf(missing, sizeof missing, "%s/none", dir);
    pm_batch_unit gone = {missing, 0, 0};
    rt_buf_init(&b);
    assert_int_equal(pm_batch_inputs_json(&gone, 1, &b, &err), RT_ERR_IO);
    snprintf(want, sizeof want, "%s: No such file or directory", missing);
    assert_string_equal(err.msg, want);
    rt_buf_free(&b);
}

static void test_batch_shard_digest(void **state)
{
    (void)state;
    pm_batch_unit u[2] = {{fb, 0, 10}, {fb, 10, 0}};
    rt_err err = {{0}};
    for (size_t k = 0; k < 2; k++)
        assert_int_equal(pm_batch_shard_record(dir, 4, k, &u[k], &err), RT_OK);
    static const char B[] = "[10]\n[20]\n[30]\n[40]\n";
    for (size_t k = 0; k < 2; k++) {
        char p[600], *text = NULL;
        size_t len = 0;
        snprintf(p, sizeof p, "%s/.shard_%04zu.json", dir, k + 1);
        assert_int_equal(rt_file_read(AT_FDCWD, p, 1u << 16, 0, &text, &len, &err), RT_OK);
        cJSON *j = cJSON_ParseWithLength(text, len);
        assert_non_null(j);
        char hex[24];
        snprintf(hex, sizeof hex, "%016" PRIx64,
                 digest_of(B, (size_t)u[k].start, u[k].end ? (size_t)u[k].end : strlen(B)));
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "digest")),
                            hex);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "file")), fb);
        assert_true(cJSON_GetObjectItemCaseSensitive(j, "size")->valuedouble == 20);
        cJSON_Delete(j);
        free(text);
    }
}

static void test_batch_resume_refusals(void **state)
{
    (void)state;
    pm_batch_unit u[2] = {{fb, 0, 10}, {fb, 10, 0}};
    rt_buf b;
    job_json(u, 2, &b);
    rt_err err = {{0}};
    assert_int_equal(pm_batch_shard_record(dir, 4, 1, &u[1], &err), RT_OK);
    char want[1200];

    /* the same size, a byte changed in shard 2 (scored, its digest kept) */
    write_file(fb, "[10]\n[20]\n[31]\n[40]\n");
    /* rank 0 of 2 scores shard 1 only (no digest kept): nothing to check */
    assert_int_equal(pm_batch_inputs_check(b.data, b.len, dir, 4, u, 2, 0, 2, &err), RT_OK);
    assert_int_equal(pm_batch_inputs_check(b.data, b.len, dir, 4, u, 2, 1, 2, &err),
                     RT_ERR_INVALID);
    snprintf(want, sizeof want,
             "%s changed since the job began (bytes 10 to its end, shard 2: "
             "digest ",
             fb);
    assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
    snprintf(want, sizeof want,
             "): resuming would mix predictions of its old and new rows; not "
             "resumed. Remove %s (or give another --output-dir) to run the job anew",
             dir);
    assert_non_null(strstr(err.msg, want));

    /* a file that grew: refused on every rank */
    write_file(fb, "[10]\n[20]\n[30]\n[40]\n[50]\n");
    for (long rank = 0; rank < 2; rank++) {
        assert_int_equal(pm_batch_inputs_check(b.data, b.len, dir, 4, u, 2, rank, 2, &err),
                         RT_ERR_INVALID);
        snprintf(want, sizeof want,
                 "%s changed since the job began (20 bytes then, 25 now): resuming would mix "
                 "predictions of its old and new rows; not resumed. Remove %s (or give another "
                 "--output-dir) to run the job anew",
                 fb, dir);
        assert_string_equal(err.msg, want);
    }

    /* a job.json of another job */
    assert_int_equal(pm_batch_inputs_check(b.data, b.len, dir, 4, u, 1, 0, 1, &err), RT_ERR_FORMAT);
    snprintf(want, sizeof want,
             "%s/job.json: its \"inputs\" are not this job's 1 shards: not "
             "resumed",
             dir);
    assert_string_equal(err.msg, want);
    pm_batch_unit other[2] = {{fa, 0, 10}, {fb, 10, 0}};
    assert_int_equal(pm_batch_inputs_check(b.data, b.len, dir, 4, other, 2, 0, 1, &err),
                     RT_ERR_FORMAT);
    snprintf(want, sizeof want, "%s/job.json: inputs[0] is not %s: not resumed", dir, fa);
    assert_string_equal(err.msg, want);
    assert_int_equal(pm_batch_inputs_check("[]", 2, dir, 4, u, 2, 0, 1, &err), RT_ERR_FORMAT);

    /* an input gone */
    remove(fb);
    assert_int_equal(pm_batch_inputs_check(b.data, b.len, dir, 4, u, 2, 0, 1, &err), RT_ERR_IO);
    snprintf(want, sizeof want, "%s: No such file or directory (an input of the job in %s)", fb,
             dir);
    assert_string_equal(err.msg, want);
    rt_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batch_inputs_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_shard_digest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_resume_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
