/* test_srv_router.c — the URL router: every route of the REST API, and the
 * 400/404/405 answers for paths that are wrong in some part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "srv.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_routes),
        cmocka_unit_test(test_status_and_metadata),
        cmocka_unit_test(test_infer_routes),
        cmocka_unit_test(test_cloud_ml_engine_path),
        cmocka_unit_test(test_bad_parts),
        cmocka_unit_test(test_names_and_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
