/* test_srv_framing.c — request framing checks (srv_framing.c): the header
 * list rules (Content-Length / Transfer-Encoding, names, control characters)
 * and the walk over a header block laid out as libmicrohttpd 0.9.75 leaves
 * it (CR, LF and the colon replaced by NUL in place). The blocks here are
 * built by hand in that layout; test_daemon_framing sends the same shapes
 * to the real daemon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "srv.h"

static srv_field fld(const char *name, const char *value)
{
    return (srv_field){name, strlen(name), value, strlen(value)};
}

static int check(const srv_field *f, size_t n, bool http10, char *msg)
{
    return srv_framing_check(f, n, http10, msg, 256);
}

static void test_clean_requests(void **state)
{
    (void)state;
    char msg[256];
    srv_field a[] = {fld("Host", "x"), fld("Content-Length", "12")};
    assert_int_equal(check(a, 2, false, msg), 0);
    srv_field b[] = {fld("Host", "x"), fld("transfer-encoding", " Chunked\t")};
    assert_int_equal(check(b, 2, false, msg), 0);
    srv_field c[] = {fld("X-Tab", "a\tb"), fld("X-Obs", "caf\xc3\xa9")};
    assert_int_equal(check(c, 2, true, msg), 0);
    assert_int_equal(check(NULL, 0, false, msg), 0);
}

static void test_length_and_coding(void **state)
{
    (void)state;
    char msg[256];
    srv_field both[] = {fld("Content-Length", "4"), fld("Transfer-Encoding", "chunked")};
    assert_int_equal(check(both, 2, false, msg), 400);
    assert_non_null(strstr(msg, "both Content-Length and Transfer-Encoding"));
    srv_field dup[] = {fld("Content-Length", "4"), fld("content-length", "4")};
    assert_int_equal(check(dup, 2, false, msg), 400);
    assert_non_null(strstr(msg, "Content-Length given 2 times"));
    srv_field dupte[] = {fld("Transfer-Encoding", "chunked"), fld("Transfer-Encoding", "chunked")};
    assert_int_equal(check(dupte, 2, false, msg), 400);
    srv_field te10[] = {fld("Transfer-Encoding", "chunked")};
    assert_int_equal(check(te10, 1, true, msg), 400);
    assert_non_null(strstr(msg, "HTTP/1.0"));
    const char *unknown[] = {"gzip", "gzip, chunked", "identity", "chunked, chunked", "", "xchunked"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        srv_field te[] = {fld("Transfer-Encoding", unknown[i])};
        assert_int_equal(check(te, 1, false, msg), 501);
        assert_non_null(strstr(msg, "is not supported"));
    }
}

static void test_names_and_values(void **state)
{
    (void)state;
    char msg[256];
    srv_field sp[] = {fld("Transfer-Encoding ", "chunked")};
    assert_int_equal(check(sp, 1, false, msg), 400);
    assert_non_null(strstr(msg, "white space before ':'"));
    srv_field tab[] = {fld("Content-Length\t", "4")};
    assert_int_equal(check(tab, 1, false, msg), 400);
    srv_field empty[] = {fld("", "v")};
    assert_int_equal(check(empty, 1, false, msg), 400);
    srv_field cr[] = {fld("Host", "x\rX: y")};
    assert_int_equal(check(cr, 1, false, msg), 400);
    assert_non_null(strstr(msg, "control character 0x0d"));
    srv_field del[] = {fld("Host", "x\x7f")};
    assert_int_equal(check(del, 1, false, msg), 400);
}

/* A header block in libmicrohttpd 0.9.75's parsed layout: raw is the
 * request as received; CR, LF and each header's first ':' become NUL, and
 * fields point into the copy. */
typedef struct parsed {
    char buf[512];
    size_t len;
    const char *version;
    srv_field f[8];
    size_t n;
} parsed;

static void parse(parsed *p, const char *raw, size_t len)
{
    memset(p, 0, sizeof *p);
    memcpy(p->buf, raw, len);
    p->len = len;
    char *s = p->buf, *end = p->buf + len;
    /* request line: METHOD SP URI SP VERSION */
    char *sp1 = memchr(s, ' ', (size_t)(end - s));
    char *sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
    *sp1 = *sp2 = '\0';
    p->version = sp2 + 1;
    char *line = sp2 + 1;
    bool first = true;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *le = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
        *nl = '\0';
        *le = '\0';
        if (!first && le > line) {
            char *colon = memchr(line, ':', (size_t)(le - line));
            if (!colon) { /* a folded line: left for the caller */
                line = nl + 1;
                continue;
            }
            *colon = '\0';
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            p->f[p->n++] = (srv_field){line, (size_t)(colon - line), v, strlen(v)};
        }
        first = false;
        line = nl + 1;
    }
}

static int check_block(const parsed *p, char *msg)
{
    return srv_framing_check_block(p->buf, p->len, p->version, p->f, p->n, msg, 256);
}

static void test_block_clean(void **state)
{
    (void)state;
    char msg[256];
    parsed p;
    const char ok[] = "GET /a HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Tab:\tv\r\n\r\n";
    parse(&p, ok, sizeof ok - 1);
    assert_int_equal(p.n, 3);
    assert_int_equal(check_block(&p, msg), 0);
    const char none[] = "GET /a HTTP/1.1\r\n\r\n";
    parse(&p, none, sizeof none - 1);
    assert_int_equal(check_block(&p, msg), 0);
}

static void test_block_bare_lf_and_nul(void **state)
{
    (void)state;
    char msg[256];
    parsed p;
    const char *lf[] = {"GET /a HTTP/1.1\nHost: x\r\n\r\n", "GET /a HTTP/1.1\r\nHost: x\nY: z\r\n\r\n",
                        "GET /a HTTP/1.1\r\nHost: x\r\n\n", "GET /a HTTP/1.1\r\nHost: x\n\n"};
    for (size_t i = 0; i < sizeof lf / sizeof lf[0]; i++) {
        parse(&p, lf[i], strlen(lf[i]));
        assert_int_equal(check_block(&p, msg), 400);
        assert_non_null(strstr(msg, "bare LF"));
    }
    /* a NUL in a value: the parser's value stops at it */
    const char nul[] = "GET /a HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n";
    parse(&p, nul, sizeof nul - 1);
    p.f[1].value_len = 1; /* "a", as strlen saw it */
    assert_int_equal(check_block(&p, msg), 400);
    assert_non_null(strstr(msg, "NUL byte"));
}

static void test_block_fold_and_misplaced(void **state)
{
    (void)state;
    char msg[256];
    parsed p;
    /* a folded line stays in the block after the header it continues */
    const char fold[] = "GET /a HTTP/1.1\r\nX: a\r\n b\r\nHost: x\r\n\r\n";
    parse(&p, fold, sizeof fold - 1);
    /* libmicrohttpd appends " b" to a copy of the name, out of the block */
    assert_int_equal(p.n, 2);
    char moved[] = "Xb";
    p.f[0].name = moved;
    p.f[0].name_len = 2;
    assert_int_equal(check_block(&p, msg), 400);
    assert_non_null(strstr(msg, "obsolete line folding"));
    /* a version outside the block */
    const char ok[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
    parse(&p, ok, sizeof ok - 1);
    p.version = "HTTP/1.1";
    assert_int_equal(check_block(&p, msg), 400);
    /* a block cut short */
    parse(&p, ok, sizeof ok - 1);
    assert_int_equal(srv_framing_check_block(p.buf, p.len - 1, p.version, p.f, p.n, msg, 256),
                     400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_requests),
        cmocka_unit_test(test_length_and_coding),
        cmocka_unit_test(test_names_and_values),
        cmocka_unit_test(test_block_clean),
        cmocka_unit_test(test_block_bare_lf_and_nul),
        cmocka_unit_test(test_block_fold_and_misplaced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
