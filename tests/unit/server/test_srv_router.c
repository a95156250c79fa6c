/* test_srv_router.c — the URL router: every route of the REST API, and the
 * 400/404/405 answers for paths that are wrong in some part; the route
 * table (server/http/srv_routes.c): every row reachable by the router with
 * its own method, every row in docs/daemon.md's endpoint list and every
 * line of that list a row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "srv_http_internal.h"

static srv_route route(const char *method, const char *url)
{
    srv_route r;
    srv_route_request(method, url, &r);
    return r;
}

static void test_health_routes(void **state)
{
    (void)state;
    assert_int_equal(route("GET", "/healthz").kind, SRV_ROUTE_HEALTHZ);
    assert_int_equal(route("HEAD", "/healthz").kind, SRV_ROUTE_HEALTHZ);
    assert_int_equal(route("GET", "/readyz").kind, SRV_ROUTE_READYZ);
    srv_route r = route("GET", "/v2/health/live");
    assert_int_equal(r.kind, SRV_ROUTE_HEALTHZ);
    assert_true(r.v2);
    assert_int_equal(route("GET", "/v2/health/ready").kind, SRV_ROUTE_V2_READY);
    r = route("GET", "/v2/models/census/ready");
    assert_int_equal(r.kind, SRV_ROUTE_V2_MODEL_READY);
    assert_string_equal(r.model, "census");
    assert_int_equal(r.version, -1);
    r = route("GET", "/v2/models/census/versions/7/ready");
    assert_int_equal(r.kind, SRV_ROUTE_V2_MODEL_READY);
    assert_int_equal(r.version, 7);
    /* the Open Inference Protocol's other paths; {v} a version or a label */
    assert_int_equal(route("GET", "/v2").kind, SRV_ROUTE_V2_SERVER);
    assert_int_equal(route("GET", "/v2/").kind, SRV_ROUTE_V2_SERVER);
    r = route("GET", "/v2/models/census");
    assert_int_equal(r.kind, SRV_ROUTE_V2_METADATA);
    assert_string_equal(r.model, "census");
    r = route("GET", "/v2/models/census/versions/stable");
    assert_int_equal(r.kind, SRV_ROUTE_V2_METADATA);
    assert_string_equal(r.label, "stable");
    assert_int_equal(r.version, -1);
    r = route("GET", "/v2/models/census/versions/canary/ready");
    assert_int_equal(r.kind, SRV_ROUTE_V2_MODEL_READY);
    assert_string_equal(r.label, "canary");
    r = route("POST", "/v2/models/census/versions/3/infer");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.method, RT_METHOD_INFER);
    assert_int_equal(r.version, 3);
    r = route("POST", "/v2/models/census/infer");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_true(r.v2);
    r = route("GET", "/v2/models/census/infer");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 405);
    assert_int_equal(route("POST", "/v2").kind, SRV_ROUTE_BAD);
    assert_int_equal(route("GET", "/v2/models").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "/v2/models/census/versions").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "/v2/models/census/other").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "/v2/models/census/versions/3/infer/x").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("POST", "/v2/models/census:infer").kind, SRV_ROUTE_NONE);
    r = route("GET", "/v2/models/bad!name");
    assert_int_equal(r.http_code, 404);
    assert_int_equal(route("GET", "/monitoring/prometheus/metrics").kind, SRV_ROUTE_METRICS);
    r = route("POST", "/healthz");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 405);
}

static void test_status_and_metadata(void **state)
{
    (void)state;
    assert_int_equal(route("GET", "/v1/models").kind, SRV_ROUTE_LIST);
    assert_int_equal(route("GET", "/v1/models/").kind, SRV_ROUTE_LIST);
    srv_route r = route("GET", "/v1/models/census");
    assert_int_equal(r.kind, SRV_ROUTE_STATUS);
    assert_string_equal(r.model, "census");
    assert_int_equal(r.version, -1);
    assert_string_equal(r.label, "");
    r = route("GET", "/v1/models/census/versions/1700000000");
    assert_int_equal(r.kind, SRV_ROUTE_STATUS);
    assert_true(r.version == 1700000000);
    r = route("GET", "/v1/models/census/labels/stable");
    assert_int_equal(r.kind, SRV_ROUTE_STATUS);
    assert_string_equal(r.label, "stable");
    r = route("GET", "/v1/models/census/metadata");
    assert_int_equal(r.kind, SRV_ROUTE_METADATA);
    r = route("GET", "/v1/models/census/versions/3/metadata");
    assert_int_equal(r.kind, SRV_ROUTE_METADATA);
    assert_int_equal(r.version, 3);
    r = route("GET", "/v1/models/census/labels/canary/metadata");
    assert_int_equal(r.kind, SRV_ROUTE_METADATA);
    assert_string_equal(r.label, "canary");
    r = route("POST", "/v1/models/census");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 405);
}

static void test_infer_routes(void **state)
{
    (void)state;
    srv_route r = route("POST", "/v1/models/census:predict");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.method, RT_METHOD_PREDICT);
    assert_string_equal(r.model, "census");
    assert_int_equal(r.version, -1);
    r = route("POST", "/v1/models/census/versions/12:classify");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.method, RT_METHOD_CLASSIFY);
    assert_int_equal(r.version, 12);
    r = route("POST", "/v1/models/census/labels/stable:regress");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.method, RT_METHOD_REGRESS);
    assert_string_equal(r.label, "stable");
    r = route("GET", "/v1/models/census:predict");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 405);
    r = route("POST", "/v1/models/census:explain");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.method, RT_METHOD_EXPLAIN);
    r = route("GET", "/v1/models/census/versions/3:explain");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 405);
    r = route("POST", "/v1/models/census:interpret");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 404);
    assert_non_null(strstr(r.msg, ":explain"));
}

static void test_cloud_ml_engine_path(void **state)
{
    (void)state;
    srv_route r = route("POST", "/v1/projects/p1/models/census/versions/7:explain");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.method, RT_METHOD_EXPLAIN);
    assert_int_equal(r.version, 7);
    r = route("POST", "/v1/projects/p1/models/census:predict");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_true(r.cmle);
    assert_string_equal(r.model, "census");
    assert_int_equal(r.version, -1);
    r = route("POST", "/v1/projects/p1/models/census/versions/42:predict");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.version, 42);
    r = route("POST", "/v1/projects/p1/models/census/versions/stable:predict");
    assert_int_equal(r.kind, SRV_ROUTE_INFER);
    assert_int_equal(r.version, -1);
    assert_string_equal(r.label, "stable");
    assert_int_equal(route("POST", "/v1/projects/p1/models/census").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("POST", "/v1/projects/p1/census:predict").kind, SRV_ROUTE_NONE);
}

static void test_bad_parts(void **state)
{
    (void)state;
    srv_route r = route("POST", "/v1/models/census/versions/1/labels/stable:predict");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 400);
    assert_non_null(strstr(r.msg, "not both"));
    r = route("GET", "/v1/models/census/labels/a/versions/2");
    assert_int_equal(r.http_code, 400);
    r = route("GET", "/v1/models/census/versions/abc");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 400);
    assert_non_null(strstr(r.msg, "abc"));
    r = route("GET", "/v1/models/census/versions/-1");
    assert_int_equal(r.http_code, 400);
    r = route("GET", "/v1/models/census/versions/99999999999999999999");
    assert_int_equal(r.http_code, 400);
    r = route("GET", "/v1/models/census/labels/bad$label");
    assert_int_equal(r.http_code, 400);
    r = route("GET", "/v1/models/..");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_int_equal(r.http_code, 404);
    assert_int_equal(route("GET", "/").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "/v1").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "/v1//models").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "/v1/models/census/other").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("GET", "/v1/models/census/metadata/x").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("POST", "/v1/models/census/metadata:predict").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("POST", "/v1/models/:predict").kind, SRV_ROUTE_NONE);
    assert_int_equal(route("POST", "/v1/models/a:b/c:predict").kind, SRV_ROUTE_NONE);
    /* A very long path is not routed (and does not overflow). */
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[0] = '/';
    big[sizeof big - 1] = '\0';
    assert_int_equal(route("GET", big).kind, SRV_ROUTE_NONE);
}

static void test_names_and_versions(void **state)
{
    (void)state;
    assert_true(srv_name_valid("census_v2.1-a", 13));
    assert_false(srv_name_valid("", 0));
    assert_false(srv_name_valid(".hidden", 7));
    assert_false(srv_name_valid("a/b", 3));
    assert_false(srv_name_valid("a b", 3));
    assert_int_equal(srv_parse_version("0", 1), 0);
    assert_true(srv_parse_version("1700000000", 10) == 1700000000);
    assert_int_equal(srv_parse_version("17a", 3), -1);
    assert_int_equal(srv_parse_version("+1", 2), -1);
    assert_int_equal(srv_parse_version("", 0), -1);
    assert_int_equal(srv_parse_version("1234567890123456789", 19), -1);
}

/* A path of row's pattern: each placeholder given a valid value, the
 * optional group's alternative alt taken (-1: none), the first verb. */
static void concrete(const char *pat, int alt, char *out, size_t cap)
{
    size_t o = 0;
    const char *p = pat;
    while (*p && o + 32 < cap) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            size_t n = (size_t)(e - p + 1);
            const char *v = !strncmp(p, "{model}", n)     ? "census"
                            : !strncmp(p, "{project}", n) ? "p1"
                            : !strncmp(p, "{version}", n) ? "3"
                            : !strncmp(p, "{label}", n)   ? "stable"
                                                          : "7";
            o += (size_t)snprintf(out + o, cap - o, "%s", v);
            p = e + 1;
        } else if (*p == '[') {
            const char *close = strchr(p, ']');
            const char *a = p + 1;
            for (int k = 0; k < alt && a && a < close; k++) {
                a = memchr(a, '|', (size_t)(close - a));
                a = a ? a + 1 : NULL;
            }
            if (alt >= 0 && a && a < close) {
                const char *ae = a;
                while (ae < close && *ae != '|')
                    ae++;
                char sub[128];
                snprintf(sub, sizeof sub, "%.*s", (int)(ae - a), a);
                concrete(sub, -1, out + o, cap - o);
                o = strlen(out);
            }
            p = close + 1;
        } else if (*p == ':') { /* ":{a|b}": the first verb */
            const char *e = p + 2 + strcspn(p + 2, "|}");
            o += (size_t)snprintf(out + o, cap - o, ":%.*s", (int)(e - p - 2), p + 2);
            p = strchr(p, '}') + 1;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

static void test_every_row_is_reachable(void **state)
{
    (void)state;
    size_t n;
    const srv_route_row *rows = srv_routes(&n);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        for (int alt = -1; alt < 2; alt++) {
            char path[512];
            concrete(rows[i].path, alt, path, sizeof path);
            srv_route r = route(rows[i].method, path);
            if (r.row != &rows[i])
                fail_msg("%s %s (row %zu, %s) routes to kind %d, row %p", rows[i].method, path, i,
                         rows[i].path, r.kind, (const void *)r.row);
            assert_int_equal(r.kind, rows[i].kind);
            assert_non_null(rows[i].answer);
            /* another method: 405 */
            r = route(strcmp(rows[i].method, "GET") ? "GET" : "DELETE", path);
            assert_int_equal(r.kind, SRV_ROUTE_BAD);
            assert_int_equal(r.http_code, 405);
            assert_null(r.row);
        }
    }
}

/* docs/daemon.md, "Endpoints": one table line "| `METHOD PATTERN` | ..." per
 * row of the route table, in any order. */
static void test_rows_are_documented(void **state)
{
    (void)state;
    const char *root = getenv("PREDICTD_ROOT");
    char fn[4096];
    snprintf(fn, sizeof fn, "%s/docs/daemon.md", root ? root : ".");
    FILE *f = fopen(fn, "r");
    if (!f)
        fail_msg("cannot open %s (run from the repo root or set PREDICTD_ROOT)", fn);
    size_t n;
    const srv_route_row *rows = srv_routes(&n);
    size_t *seen = calloc(n, sizeof *seen);
    assert_non_null(seen);
    size_t lines = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "| `GET /", 8) != 0 && strncmp(line, "| `POST /", 9) != 0)
            continue;
        lines++;
        /* the pattern, its "\\|" (a table cell's escaped '|') unescaped */
        char pat[512];
        size_t len = 0;
        for (const char *c = line + 3; *c && *c != '`' && len + 1 < sizeof pat; c++)
            if (!(c[0] == '\\' && c[1] == '|'))
                pat[len++] = *c;
        pat[len] = '\0';
        bool found = false;
        for (size_t i = 0; i < n; i++) {
            char want[512];
            snprintf(want, sizeof want, "%s %s", rows[i].method, rows[i].path);
            if (!strcmp(want, pat)) {
                seen[i]++;
                found = true;
            }
        }
        if (!found)
            fail_msg("docs/daemon.md lists %s, which is no row of the route table", pat);
    }
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (seen[i] != 1)
            fail_msg("route %s %s is listed %zu times in docs/daemon.md's endpoints (want 1)",
                     rows[i].method, rows[i].path, seen[i]);
    assert_int_equal(lines, n);
    free(seen);
}

/* A path of no row is SRV_ROUTE_NONE (the front's 404 "no such path"),
 * with no row; a row's own path with a bad part is refused with no row. */
static void test_no_row(void **state)
{
    (void)state;
    const char *none[] = {"/v1/nothing",
                          "/",
                          "/v1",
                          "/v3/models/census",
                          "/healthz/x",
                          "/v1/models/census/other",
                          "/v2/models/census:infer"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        srv_route r = route("GET", none[i]);
        assert_int_equal(r.kind, SRV_ROUTE_NONE);
        assert_null(r.row);
    }
    srv_route r = route("GET", "/v1/models/census/versions/abc");
    assert_int_equal(r.kind, SRV_ROUTE_BAD);
    assert_null(r.row);
    assert_string_equal(r.msg, "version 'abc' is not a version number (use digits, or "
                               "/labels/NAME)");
    r = route("GET", "/v1/models/census:predict");
    assert_string_equal(r.msg, "method GET is not allowed for :predict; use POST");
    r = route("GET", "/v2/models/census/infer");
    assert_string_equal(r.msg, "method GET is not allowed for /infer; use POST");
    r = route("POST", "/readyz");
    assert_string_equal(r.msg, "method POST is not allowed here; use GET");
    r = route("POST", "/v1/projects/p/models/census:interpret");
    assert_int_equal(r.http_code, 404);
    assert_string_equal(r.msg,
                        "unknown method ':interpret' (this path supports :predict and :explain)");
    /* the metrics row, wherever the monitoring config puts it */
    srv_route_as(SRV_ROUTE_METRICS, "HEAD", &r);
    assert_int_equal(r.kind, SRV_ROUTE_METRICS);
    assert_non_null(r.row);
    srv_route_as(SRV_ROUTE_METRICS, "POST", &r);
    assert_int_equal(r.http_code, 405);
    assert_string_equal(r.msg, "method POST is not allowed here; use GET");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_routes),
        cmocka_unit_test(test_status_and_metadata),
        cmocka_unit_test(test_infer_routes),
        cmocka_unit_test(test_cloud_ml_engine_path),
        cmocka_unit_test(test_bad_parts),
        cmocka_unit_test(test_names_and_versions),
        cmocka_unit_test(test_every_row_is_reachable),
        cmocka_unit_test(test_rows_are_documented),
        cmocka_unit_test(test_no_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
