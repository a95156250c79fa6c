/* test_srv_sec.c — bearer tokens (srv_auth.c, srv_auth_file.c) and gzip
 * request bodies (srv_gzip.c): the tokens file's lines and errors
 * (FILE:LINE), scopes, the check's outcomes (missing, invalid, scope, ok),
 * a reload that keeps the old tokens on error, predictctl's token add; the
 * inflation limit counted while inflating, concatenated members, truncated
 * and trailing data, the Content-Encoding names. test_daemon_tls covers the
 * same over HTTP, and TLS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <zlib.h>

#include "srv_sec.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_srv_sec.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void test_scopes(void **state)
{
    (void)state;
    assert_int_equal(srv_auth_parse_scopes("infer", 5), SRV_SCOPE_INFER);
    assert_int_equal(srv_auth_parse_scopes("read,metrics", 12), SRV_SCOPE_READ | SRV_SCOPE_METRICS);
    /* admin: gRPC's HandleReloadConfigRequest; an unknown name refuses the list */
    assert_int_equal(srv_auth_parse_scopes("infer,admin", 11), SRV_SCOPE_INFER | SRV_SCOPE_ADMIN);
    assert_int_equal(srv_auth_parse_scopes("infer,owner", 11), 0);
    assert_int_equal(srv_auth_parse_scopes("infer,", 6), 0);
    assert_int_equal(srv_auth_parse_scopes("", 0), 0);
    char names[64];
    srv_auth_scope_names(SRV_SCOPE_INFER | SRV_SCOPE_METRICS, names, sizeof names);
    assert_string_equal(names, "infer,metrics");
    srv_auth_scope_names(SRV_SCOPE_ADMIN, names, sizeof names);
    assert_string_equal(names, "admin");
    char hex[65];
    srv_auth_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_tokens(void **state)
{
    (void)state;
    char path[128], line[256], hex[65];
    snprintf(path, sizeof path, "%s/tokens", dir);
    srv_auth_sha256_hex("secret-a", 8, hex);
    snprintf(line, sizeof line, "# comment\n\n  %s infer,read  web\n", hex);
    put(path, line, 0600);
    srv_auth *a = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_auth_new(path, &a, &err), RT_OK);
    assert_int_equal(srv_auth_check(a, NULL, SRV_SCOPE_INFER), SRV_AUTH_MISSING);
    assert_int_equal(srv_auth_check(a, "Bearer secret-a", SRV_SCOPE_INFER), SRV_AUTH_OK);
    assert_int_equal(srv_auth_check(a, "bearer   secret-a  ", SRV_SCOPE_READ), SRV_AUTH_OK);
    assert_int_equal(srv_auth_check(a, "Bearer secret-a", SRV_SCOPE_METRICS), SRV_AUTH_SCOPE);
    assert_int_equal(srv_auth_check(a, "Bearer secret-b", SRV_SCOPE_INFER), SRV_AUTH_INVALID);
    assert_int_equal(srv_auth_check(a, "Bearer secret-", SRV_SCOPE_INFER), SRV_AUTH_INVALID);
    assert_int_equal(srv_auth_check(a, "Basic c2VjcmV0LWE=", SRV_SCOPE_INFER), SRV_AUTH_INVALID);
    assert_int_equal(srv_auth_check(a, "Bearer", SRV_SCOPE_INFER), SRV_AUTH_INVALID);
    assert_int_equal(srv_auth_check(a, "", SRV_SCOPE_INFER), SRV_AUTH_INVALID);
    /* a bad file: FILE:LINE named, the old tokens stay */
    put(path, "# x\nzz infer\n", 0600);
    assert_int_equal(srv_auth_reload(a, &err), RT_ERR_FORMAT);
    snprintf(line, sizeof line, "%s:2: expected the token's SHA-256", path);
    assert_non_null(strstr(err.msg, line));
    assert_int_equal(srv_auth_check(a, "Bearer secret-a", SRV_SCOPE_INFER), SRV_AUTH_OK);
    snprintf(line, sizeof line, "%s infer,write\n", hex);
    put(path, line, 0600);
    assert_int_equal(srv_auth_reload(a, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, ":1: scopes 'infer,write'"));
    /* predictctl token add: appended, only the hash stored, the file kept */
    char tok[69], tok2[69];
    snprintf(line, sizeof line, "%s read\n", hex);
    put(path, line, 0600);
    assert_int_equal(srv_auth_add_token(path, SRV_SCOPE_INFER, "ci", tok, &err), RT_OK);
    assert_int_equal(srv_auth_add_token(path, SRV_SCOPE_METRICS, NULL, tok2, &err), RT_OK);
    assert_int_equal(strlen(tok), 68);
    assert_memory_equal(tok, "pdt_", 4);
    assert_string_not_equal(tok, tok2);
    assert_int_equal(srv_auth_reload(a, &err), RT_OK);
    assert_int_equal(srv_auth_check(a, "Bearer secret-a", SRV_SCOPE_INFER), SRV_AUTH_SCOPE);
    snprintf(line, sizeof line, "Bearer %s", tok);
    assert_int_equal(srv_auth_check(a, line, SRV_SCOPE_INFER), SRV_AUTH_OK);
    snprintf(line, sizeof line, "Bearer %s", tok2);
    assert_int_equal(srv_auth_check(a, line, SRV_SCOPE_METRICS), SRV_AUTH_OK);
    assert_int_equal(srv_auth_check(a, line, SRV_SCOPE_INFER), SRV_AUTH_SCOPE);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(srv_auth_add_token(path, SRV_SCOPE_INFER, "bad name", tok, &err),
                     RT_ERR_INVALID);
    rt_buf m;
    rt_buf_init(&m);
    assert_int_equal(srv_auth_metrics(a, &m), 0);
    assert_non_null(strstr(m.data, "predictd_auth_failures_total{reason=\"missing_token\"} 1\n"));
    assert_non_null(strstr(m.data, "predictd_auth_failures_total{reason=\"invalid_token\"} 5\n"));
    rt_buf_free(&m);
    srv_auth_free(a);
    /* a file others may write is refused */
    put(path, "", 0666);
    chmod(path, 0666);
    assert_int_equal(srv_auth_new(path, &a, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "writable by others"));
}

/* issue 35, item 14: a reload finding no token keeps the running tokens
 * (unless auth_tokens_empty_denies_all); a symbolic link to /dev/zero is
 * named a device, not a file of mode 0666 */
static void test_tokens_empty(void **state)
{
    (void)state;
    char path[128], line[256], hex[65];
    snprintf(path, sizeof path, "%s/tokens-empty", dir);
    srv_auth_sha256_hex("secret-a", 8, hex);
    snprintf(line, sizeof line, "%s infer\n", hex);
    put(path, line, 0600);
    srv_auth *a = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_auth_new(path, &a, &err), RT_OK);
    put(path, "", 0600);
    assert_int_equal(srv_auth_reload(a, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "holds no token"));
    assert_non_null(strstr(err.msg, "auth_tokens_empty_denies_all"));
    assert_int_equal(srv_auth_check(a, "Bearer secret-a", SRV_SCOPE_INFER), SRV_AUTH_OK);
    put(path, "# only a comment\n", 0600);
    assert_int_equal(srv_auth_reload(a, &err), RT_ERR_INVALID);
    assert_int_equal(srv_auth_check(a, "Bearer secret-a", SRV_SCOPE_INFER), SRV_AUTH_OK);
    srv_auth_set_empty_denies_all(a, true);
    assert_int_equal(srv_auth_reload(a, &err), RT_OK);
    assert_int_equal(srv_auth_check(a, "Bearer secret-a", SRV_SCOPE_INFER), SRV_AUTH_INVALID);
    srv_auth_free(a);
    unlink(path);
    assert_int_equal(symlink("/dev/zero", path), 0);
    assert_int_equal(srv_auth_new(path, &a, &err), RT_ERR_INVALID);
    snprintf(line, sizeof line, "auth_tokens_file %s: not a regular file (a character device, "
             "through a symbolic link to /dev/zero)", path);
    assert_string_equal(err.msg, line);
    unlink(path);
}

/* gzip of n bytes of data (one member) into out; returns its length. */
static size_t gz(const void *data, size_t n, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    return len;
}

static void test_gunzip(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    char *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + (i * 7 % 26));
    unsigned char *z = malloc(n + 1024);
    size_t zl = gz(big, n, z, n + 1024);
    rt_buf out;
    rt_buf_init(&out);
    rt_err err = {{0}};
    /* exactly the limit passes, one byte less does not */
    assert_int_equal(srv_gunzip(z, zl, n, &out, &err), RT_OK);
    assert_int_equal(out.len, n);
    assert_memory_equal(out.data, big, n);
    rt_buf_reset(&out);
    assert_int_equal(srv_gunzip(z, zl, n - 1, &out, &err), RT_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "inflates to more than"));
    /* a bomb: 256 MiB of zeros stops at the limit plus one piece */
    rt_buf_free(&out);
    size_t zeros = (size_t)256 << 20;
    char *zbuf = calloc(1, zeros);
    unsigned char *bomb = malloc(1 << 20);
    size_t bl = gz(zbuf, zeros, bomb, 1 << 20);
    free(zbuf);
    assert_true(bl < 512 * 1024);
    assert_int_equal(srv_gunzip(bomb, bl, 1000, &out, &err), RT_ERR_LIMIT);
    assert_true(out.cap < 200 * 1024);
    free(bomb);
    /* two members */
    rt_buf_reset(&out);
    unsigned char two[256];
    size_t l1 = gz("hello ", 6, two, sizeof two);
    size_t l2 = gz("world", 5, two + l1, sizeof two - l1);
    assert_int_equal(srv_gunzip(two, l1 + l2, 100, &out, &err), RT_OK);
    assert_string_equal(out.data, "hello world");
    /* truncated, trailing bytes, not gzip, empty */
    rt_buf_reset(&out);
    assert_int_equal(srv_gunzip(z, zl / 2, n, &out, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "truncated"));
    rt_buf_reset(&out);
    memcpy(two + l1, "xy", 2);
    assert_int_equal(srv_gunzip(two, l1 + 2, 100, &out, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "2 bytes after the end"));
    rt_buf_reset(&out);
    assert_int_equal(srv_gunzip("{\"instances\": []}", 17, 100, &out, &err), RT_ERR_FORMAT);
    rt_buf_reset(&out);
    assert_int_equal(srv_gunzip("", 0, 100, &out, &err), RT_ERR_FORMAT);
    rt_buf_free(&out);
    free(z);
    free(big);
    assert_int_equal(srv_gzip_coding(NULL), 0);
    assert_int_equal(srv_gzip_coding("identity"), 0);
    assert_int_equal(srv_gzip_coding(" GZip "), 1);
    assert_int_equal(srv_gzip_coding("x-gzip"), 1);
    assert_int_equal(srv_gzip_coding("br"), -1);
    assert_int_equal(srv_gzip_coding("gzip, br"), -1);
    assert_int_equal(srv_gzip_coding("deflate"), -1);
    assert_false(srv_gzip_accepted(NULL));
    assert_false(srv_gzip_accepted(""));
    assert_true(srv_gzip_accepted("gzip"));
    assert_true(srv_gzip_accepted("br, GZIP;q=0.5"));
    assert_true(srv_gzip_accepted("deflate, *"));
    assert_false(srv_gzip_accepted("gzip;q=0"));
    assert_false(srv_gzip_accepted("gzip; q=0.000, br"));
    assert_false(srv_gzip_accepted("deflate, br, identity"));
    assert_false(srv_gzip_accepted("gzipx"));
    /* round trip through the answer side */
    rt_buf zb, back;
    rt_buf_init(&zb);
    rt_buf_init(&back);
    const char *text = "{\"predictions\": [[0.25], [0.75]]}";
    assert_int_equal(srv_gzip_compress(text, strlen(text), &zb), 0);
    assert_int_equal(srv_gunzip(zb.data, zb.len, 1000, &back, &err), RT_OK);
    assert_string_equal(back.data, text);
    rt_buf_free(&zb);
    rt_buf_free(&back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_tokens_empty),
        cmocka_unit_test(test_gunzip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
