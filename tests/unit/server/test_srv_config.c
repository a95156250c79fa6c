/* test_srv_config.c — predictd's config: the JSON file, the flags over it,
 * and refusals that name the key; plus the CPU count from cgroup v2. */
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

#include "srv.h"

static srv_config *parse_ok(const char *text)
{
    srv_config *c = NULL;
    rt_err err = {{0}};
    rt_status st = srv_config_parse(text, strlen(text), "/etc/predictd", &c, &err);
    if (st != RT_OK)
        fprintf(stderr, "unexpected error: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_non_null(c);
    return c;
}

/* Parses text, expects a refusal whose message contains want. */
static void parse_bad(const char *text, const char *want)
{
    srv_config *c = NULL;
    rt_err err = {{0}};
    rt_status st = srv_config_parse(text, strlen(text), NULL, &c, &err);
    assert_int_not_equal(st, RT_OK);
    assert_null(c);
    if (!strstr(err.msg, want))
        fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
    assert_non_null(strstr(err.msg, want));
}

/* --help mentions want. */
static void assert_usage_has(const char *want)
{
    char *usage = srv_args_usage(false);
    assert_non_null(usage);
    assert_non_null(strstr(usage, want));
    free(usage);
}

static void test_full_config(void **state)
{
    (void)state;
    srv_config *c = parse_ok(
        "{\"rest_api_host\": \"127.0.0.1\", \"rest_api_port\": 9000,"
        " \"rest_api_num_threads\": 3, \"rest_api_timeout_in_ms\": 500,"
        " \"file_system_poll_wait_seconds\": 2, \"max_request_bytes\": 4096,"
        " \"enable_cors\": true, \"max_queue_depth\": 7, \"drain_grace_seconds\": 3,"
        " \"models\": ["
        "  {\"name\": \"census\", \"base_path\": \"/srv/census\","
        "   \"version_policy\": {\"specific\": [3, 1, \"2\"]},"
        "   \"version_labels\": {\"stable\": 1, \"canary\": \"3\"},"
        "   \"default_version\": \"stable\"},"
        "  {\"name\": \"other\", \"base_path\": \"rel/other\", \"default_version\": 7},"
        "  {\"name\": \"all\", \"base_path\": \"/x\", \"version_policy\": {\"all\": true}}]}");
    assert_string_equal(c->rest_api_host, "127.0.0.1");
    assert_int_equal(c->rest_api_port, 9000);
    assert_int_equal(c->rest_api_num_threads, 3);
    assert_int_equal(c->rest_api_timeout_in_ms, 500);
    assert_int_equal(c->file_system_poll_wait_seconds, 2);
    assert_int_equal(c->max_request_bytes, 4096);
    assert_true(c->enable_cors);
    assert_int_equal(c->max_queue_depth, 7);
    assert_int_equal(c->drain_grace_seconds, 3);
    assert_int_equal(c->n_models, 3);
    const srv_model_conf *m = srv_config_find_model(c, "census");
    assert_non_null(m);
    assert_int_equal(m->policy, SRV_POLICY_SPECIFIC);
    assert_int_equal(m->n_specific, 3);
    assert_int_equal(m->specific[0], 1); /* sorted */
    assert_int_equal(m->specific[2], 3);
    assert_int_equal(m->n_labels, 2);
    assert_string_equal(m->labels[1].name, "canary");
    assert_int_equal(m->labels[1].version, 3);
    assert_string_equal(m->default_label, "stable");
    assert_int_equal(m->default_version, -1);
    m = srv_config_find_model(c, "other");
    assert_string_equal(m->base_path, "/etc/predictd/rel/other");
    assert_int_equal(m->policy, SRV_POLICY_LATEST);
    assert_int_equal(m->latest_n, 1);
    assert_int_equal(m->default_version, 7);
    assert_int_equal(srv_config_find_model(c, "all")->policy, SRV_POLICY_ALL);
    assert_null(srv_config_find_model(c, "nope"));
    srv_config_free(c);
}

static void test_defaults(void **state)
{
    (void)state;
    srv_config *c = parse_ok("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\"}]}");
    assert_string_equal(c->rest_api_host, "0.0.0.0");
    assert_int_equal(c->rest_api_port, 8501);
    assert_int_equal(c->rest_api_num_threads, 0);
    assert_int_equal(c->file_system_poll_wait_seconds, 1);
    assert_int_equal(c->max_request_bytes, 1572864);
    assert_false(c->enable_cors);
    assert_int_equal(c->max_queue_depth, 0);
    assert_int_equal(c->drain_grace_seconds, 0);
    assert_int_equal(c->connection_timeout_seconds, 60);
    assert_int_equal(c->request_read_timeout_seconds, 30);
    assert_int_equal(c->models[0].latest_n, 1);
    srv_config_free(c);
}

static void test_refusals_name_the_key(void **state)
{
    (void)state;
    parse_bad("{\"models\": [", "invalid JSON at line 1, column 12");
    parse_bad("[]", "top level");
    parse_bad("{\"rest_api_prot\": 1}", "rest_api_prot: unknown key");
    parse_bad("{\"rest_api_port\": 70000}", "rest_api_port: 70000 is out of range");
    parse_bad("{\"rest_api_port\": \"80\"}", "rest_api_port: expected an integer, got a string");
    parse_bad("{\"max_request_bytes\": 1.5}", "max_request_bytes: expected an integer, got 1.5");
    parse_bad("{\"enable_cors\": 1}", "enable_cors");
    parse_bad("{\"max_queue_depth\": -1}", "max_queue_depth: -1 is out of range");
    parse_bad("{\"drain_grace_seconds\": 99999}", "drain_grace_seconds");
    parse_bad("{\"request_read_timeout_seconds\": -1}",
              "request_read_timeout_seconds: -1 is out of range");
    parse_bad("{\"models\": {}}", "models: must be an array");
    parse_bad("{\"models\": [{\"base_path\": \"/m\"}]}", "models[0].name: missing");
    parse_bad("{\"models\": [{\"name\": \"m\"}]}", "models[0].base_path: missing");
    parse_bad("{\"models\": [{\"name\": \"../etc\", \"base_path\": \"/m\"}]}", "models[0].name");
    parse_bad("{\"models\": [{\"name\": \"a\", \"base_path\": \"/m\"},"
              " {\"name\": \"a\", \"base_path\": \"/n\"}]}",
              "models[1].name: model 'a' is configured twice");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"version_policy\": {\"latest\": 0}}]}",
              "models[0].version_policy.latest: 0 is out of range");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"version_policy\": {\"newest\": 1}}]}",
              "models[0].version_policy.newest: unknown policy");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"version_policy\": {\"latest\": 1, \"all\": true}}]}",
              "exactly one");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"version_policy\": {\"specific\": [1, 1]}}]}",
              "version 1 is listed twice");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"version_policy\": {\"specific\": [\"x\"]}}]}",
              "models[0].version_policy.specific[0]: 'x' is not a version number");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"version_labels\": {\"stable\": -1}}]}",
              "models[0].version_labels.stable: -1 is out of range");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"version_labels\": {\"12\": 1}}]}",
              "cannot be a number");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\","
              " \"default_version\": \"canary\"}]}",
              "models[0].default_version: label 'canary' is not in version_labels");
    parse_bad("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\", \"policy\": 1}]}",
              "models[0].policy: unknown key");
    /* Keys given twice are refused (found by the config fuzzer). */
    parse_bad("{\"rest_api_port\": 1, \"rest_api_port\": 2}", "rest_api_port: given twice");
    parse_bad("{\"models\": [{\"name\": \"a\", \"base_path\": \"/x\", "
              "\"version_labels\": {\"s\": 1}, \"version_labels\": {\"t\": 2}}]}",
              "models[0].version_labels: given twice");
    parse_bad("{\"models\": [{\"name\": \"a\", \"name\": \"b\", \"base_path\": \"/x\"}]}",
              "models[0].name: given twice");
    parse_bad("{\"models\": [{\"name\": \"a\", \"base_path\": \"/x\", "
              "\"version_policy\": {\"specific\": [1]}, "
              "\"model_version_policy\": {\"specific\": [2]}}]}",
              "models[0]: give version_policy or model_version_policy, not both");
}

static void test_flags(void **state)
{
    (void)state;
    srv_args a;
    rt_err err = {{0}};
    char *argv1[] = {"predictd", "--rest_api_port=0", "--model_name", "census",
                     "--model_base_path=/tmp", "--enable_cors", "--rest_api_num_threads", "2",
                     NULL};
    assert_int_equal(srv_args_parse(8, argv1, &a, &err), RT_OK);
    assert_true(srv_args_given(&a, "rest_api_port"));
    assert_true(srv_args_given(&a, "enable_cors"));
    srv_config *c = NULL;
    assert_int_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_int_equal(c->rest_api_port, 0);
    assert_int_equal(c->rest_api_num_threads, 2);
    assert_true(c->enable_cors);
    assert_int_equal(c->n_models, 1);
    assert_string_equal(c->models[0].name, "census");
    assert_int_equal(c->models[0].policy, SRV_POLICY_LATEST);
    srv_config_free(c);
    srv_args_free(&a);

    char *argv2[] = {"predictd", "--rest_api_porte=1", NULL};
    assert_int_not_equal(srv_args_parse(2, argv2, &a, &err), RT_OK);
    assert_non_null(strstr(err.msg, "--rest_api_porte: unknown flag"));
    srv_args_free(&a);
    char *argv3[] = {"predictd", "--rest_api_port=http", NULL};
    assert_int_not_equal(srv_args_parse(2, argv3, &a, &err), RT_OK);
    assert_non_null(strstr(err.msg, "--rest_api_port"));
    srv_args_free(&a);
    char *argv4[] = {"predictd", "--model_name=x", NULL};
    assert_int_not_equal(srv_args_parse(2, argv4, &a, &err), RT_OK);
    assert_non_null(strstr(err.msg, "--model_base_path"));
    srv_args_free(&a);
    char *argv5[] = {"predictd", "--rest_api_port", NULL};
    assert_int_not_equal(srv_args_parse(2, argv5, &a, &err), RT_OK);
    assert_non_null(strstr(err.msg, "needs a value"));
    srv_args_free(&a);
    char *argv6[] = {"predictd", NULL};
    assert_int_equal(srv_args_parse(1, argv6, &a, &err), RT_OK);
    assert_int_not_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_non_null(strstr(err.msg, "no model"));
    srv_args_free(&a);
    assert_usage_has("--model_config_file");
}

static void test_file_and_flag_override(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_srv_config.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/predictd.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"rest_api_port\": 9100, \"max_request_bytes\": 100,"
          " \"models\": [{\"name\": \"m\", \"base_path\": \"models/m\"}]}",
          f);
    fclose(f);
    char arg[300];
    snprintf(arg, sizeof arg, "--model_config_file=%s", path);
    char *argv[] = {"predictd", arg, "--rest_api_port=9200", NULL};
    srv_args a;
    rt_err err = {{0}};
    assert_int_equal(srv_args_parse(3, argv, &a, &err), RT_OK);
    srv_config *c = NULL;
    assert_int_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_int_equal(c->rest_api_port, 9200); /* the flag wins */
    assert_int_equal(c->max_request_bytes, 100); /* the file's */
    char want[300];
    char *real = realpath(dir, NULL);
    snprintf(want, sizeof want, "%s/models/m", real);
    free(real);
    assert_string_equal(c->models[0].base_path, want);
    srv_config_free(c);
    /* An empty model list is refused at build time. */
    f = fopen(path, "w");
    fputs("{\"models\": []}", f);
    fclose(f);
    assert_int_not_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_non_null(strstr(err.msg, "at least one model"));
    srv_args_free(&a);
    unlink(path);
    rmdir(dir);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* request_read_timeout_seconds: the file's key, 0 (off) allowed, the flag
 * over the file, bad flag values refused naming the flag. */
static void test_request_read_timeout(void **state)
{
    (void)state;
    srv_config *c = parse_ok("{\"request_read_timeout_seconds\": 0, \"models\": "
                             "[{\"name\": \"m\", \"base_path\": \"/m\"}]}");
    assert_int_equal(c->request_read_timeout_seconds, 0);
    srv_config_free(c);
    c = parse_ok("{\"request_read_timeout_seconds\": 7, \"models\": "
                 "[{\"name\": \"m\", \"base_path\": \"/m\"}]}");
    assert_int_equal(c->request_read_timeout_seconds, 7);
    srv_config_free(c);

    srv_args a;
    rt_err err = {{0}};
    char *argv1[] = {"predictd", "--model_name=m", "--model_base_path=/m",
                     "--request_read_timeout_seconds=12", NULL};
    assert_int_equal(srv_args_parse(4, argv1, &a, &err), RT_OK);
    assert_true(srv_args_given(&a, "request_read_timeout_seconds"));
    c = NULL;
    assert_int_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_int_equal(c->request_read_timeout_seconds, 12);
    srv_config_free(c);
    srv_args_free(&a);
    char *argv2[] = {"predictd", "--request_read_timeout_seconds=soon", NULL};
    assert_int_not_equal(srv_args_parse(2, argv2, &a, &err), RT_OK);
    assert_non_null(strstr(err.msg, "--request_read_timeout_seconds"));
    srv_args_free(&a);
    assert_usage_has("--request_read_timeout_seconds");
}

/* max_connections and request_header_timeout_seconds: defaults, the file's
 * keys, the flags over the file, out-of-range values refused by name. */
static void test_connection_settings(void **state)
{
    (void)state;
    srv_config *c = parse_ok("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\"}]}");
    assert_int_equal(c->max_connections, 0); /* from the open-files limit */
    assert_int_equal(c->request_header_timeout_seconds, 10);
    srv_config_free(c);
    c = parse_ok("{\"max_connections\": 50, \"request_header_timeout_seconds\": 0, "
                 "\"models\": [{\"name\": \"m\", \"base_path\": \"/m\"}]}");
    assert_int_equal(c->max_connections, 50);
    assert_int_equal(c->request_header_timeout_seconds, 0);
    srv_config_free(c);
    parse_bad("{\"max_connections\": -1}", "max_connections: -1 is out of range");
    parse_bad("{\"request_header_timeout_seconds\": -1}",
              "request_header_timeout_seconds: -1 is out of range");

    srv_args a;
    rt_err err = {{0}};
    char *argv1[] = {"predictd", "--model_name=m", "--model_base_path=/m",
                     "--max_connections=200", "--request_header_timeout_seconds=3", NULL};
    assert_int_equal(srv_args_parse(5, argv1, &a, &err), RT_OK);
    assert_true(srv_args_given(&a, "max_connections"));
    assert_true(srv_args_given(&a, "request_header_timeout_seconds"));
    c = NULL;
    assert_int_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_int_equal(c->max_connections, 200);
    assert_int_equal(c->request_header_timeout_seconds, 3);
    srv_config_free(c);
    srv_args_free(&a);
    char *argv2[] = {"predictd", "--max_connections=lots", NULL};
    assert_int_not_equal(srv_args_parse(2, argv2, &a, &err), RT_OK);
    assert_non_null(strstr(err.msg, "--max_connections"));
    srv_args_free(&a);
    assert_usage_has("--max_connections");
    assert_usage_has("--request_header_timeout_seconds");
}

/* max_total_request_bytes: default, key, flag, and never below
 * max_request_bytes (a largest request could never be received). */
static void test_total_request_bytes(void **state)
{
    (void)state;
    srv_config *c = parse_ok("{\"models\": [{\"name\": \"m\", \"base_path\": \"/m\"}]}");
    assert_true(c->max_total_request_bytes == (size_t)256 << 20);
    srv_config_free(c);
    c = parse_ok("{\"max_total_request_bytes\": 5000000, "
                 "\"models\": [{\"name\": \"m\", \"base_path\": \"/m\"}]}");
    assert_true(c->max_total_request_bytes == 5000000);
    srv_config_free(c);
    parse_bad("{\"max_total_request_bytes\": 0}", "max_total_request_bytes: 0 is out of range");

    srv_args a;
    rt_err err = {{0}};
    char *argv1[] = {"predictd", "--model_name=m", "--model_base_path=/m",
                     "--max_total_request_bytes=3000000", NULL};
    assert_int_equal(srv_args_parse(4, argv1, &a, &err), RT_OK);
    c = NULL;
    assert_int_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_true(c->max_total_request_bytes == 3000000);
    srv_config_free(c);
    srv_args_free(&a);
    char *argv2[] = {"predictd", "--model_name=m", "--model_base_path=/m",
                     "--max_total_request_bytes=1000", NULL};
    assert_int_equal(srv_args_parse(4, argv2, &a, &err), RT_OK);
    c = NULL;
    assert_int_not_equal(srv_config_build(&a, &c, &err), RT_OK);
    assert_non_null(strstr(err.msg, "less than max_request_bytes"));
    srv_args_free(&a);
}

/* The value of s's field in c, as an integer (strings: 0). */
static long long field_int(const srv_config *c, const srv_setting *s)
{
    const char *p = (const char *)c + s->offset;
    if (s->type == SRV_SET_INT)
        return *(const int *)p;
    if (s->type == SRV_SET_SIZE)
        return (long long)*(const size_t *)p;
    if (s->type == SRV_SET_BOOL)
        return *(const bool *)p;
    if (s->type == RT_SET_NUM) /* in thousandths */
        return (long long)(*(const double *)p * 1000 + 0.5);
    return 0;
}

static const char *field_str(const srv_config *c, const srv_setting *s)
{
    return *(char *const *)((const char *)c + s->offset);
}

/* A value of s other than its default, as JSON and as flag text. */
static void other_value(const srv_setting *s, char *json, char *text, size_t cap)
{
    if (s->type == SRV_SET_BOOL) {
        snprintf(json, cap, "%s", s->def ? "false" : "true");
        snprintf(text, cap, "%s", s->def ? "false" : "true");
    } else if (s->type == SRV_SET_INT || s->type == SRV_SET_SIZE) {
        long long v = s->def < s->hi ? s->def + 1 : s->def - 1;
        snprintf(json, cap, "%lld", v);
        snprintf(text, cap, "%lld", v);
    } else if (s->type == RT_SET_NUM) {
        double v = (s->ddef + s->dlo) / 2;
        snprintf(json, cap, "%g", v);
        snprintf(text, cap, "%g", v);
    } else {
        /* Vertex AI's routes must be paths (check_aip_routes) */
        const char *slash = !strncmp(s->name, "aip_", 4) ? "/" : "";
        snprintf(json, cap, "\"%sx-%s\"", slash, s->name);
        snprintf(text, cap, "%sx-%s", slash, s->name);
    }
}

/* Walks the settings table: every entry is named, helped, has a default in
 * its range that the parsers apply; each JSON key and each flag reads back
 * the value written; out-of-range values are refused naming the key / flag;
 * --help and --help_config list them all; a flag wins over the file. */
static void test_settings_table(void **state)
{
    (void)state;
    size_t n = 0;
    const srv_setting *tab = srv_settings(&n);
    assert_true(n > 20);
    srv_config *defaults = parse_ok("{}");
    char *usage = srv_args_usage(false), *keys = srv_args_usage(true);
    assert_non_null(usage);
    assert_non_null(keys);
    for (size_t i = 0; i < n; i++) {
        const srv_setting *s = &tab[i];
        char what[160], json[256], text[256], arg[300], doc[200];
        snprintf(what, sizeof what, "setting %s", s->name);
        assert_non_null(s->name);
        assert_true(s->help && strlen(s->help) > 5);
        assert_null(strstr(s->help, "(default")); /* --help appends it */
        assert_true(s->where & (SRV_SET_JSON | SRV_SET_FLAG));
        assert_ptr_equal(srv_setting_find(s->name), s);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(tab[j].name, s->name);
        if (s->type == SRV_SET_INT || s->type == SRV_SET_SIZE) {
            assert_true(s->lo <= s->def && s->def <= s->hi);
            assert_true(s->lo < s->hi);
            if (s->type == SRV_SET_INT)
                assert_true(s->hi <= INT32_MAX);
        }
        if (s->type == SRV_SET_BOOL)
            assert_true(s->def == 0 || s->def == 1);
        /* The default is what a config without the key gets. */
        if (s->type == SRV_SET_STR || s->type == SRV_SET_NAME) {
            if (s->def_str)
                assert_string_equal(field_str(defaults, s), s->def_str);
            else
                assert_null(field_str(defaults, s));
        } else if (s->type == RT_SET_NUM) {
            assert_int_equal(field_int(defaults, s), (long long)(s->ddef * 1000 + 0.5));
        } else {
            assert_int_equal(field_int(defaults, s), s->def);
        }
        other_value(s, json, text, sizeof json);
        if (s->where & SRV_SET_FLAG) {
            const char *flag = s->flag ? s->flag : s->name;
            snprintf(doc, sizeof doc, "--%s", flag);
            if (!strstr(usage, doc))
                fail_msg("%s: not in --help", what);
            if (s->type != SRV_SET_BOOL)
                assert_non_null(s->arg);
            /* Flag round trip, "--name=value" form. */
            snprintf(arg, sizeof arg, "--%s=%s", flag, text);
            char *argv[] = {"predictd", arg, "--model_name=m", "--model_base_path=/m", NULL};
            int argc = !strcmp(s->name, "model_name") || !strcmp(s->name, "model_base_path") ||
                               !strcmp(s->name, "model_config_file") ||
                               !strcmp(s->name, "model_repository")
                           ? 2
                           : 4;
            srv_args a;
            rt_err err = {{0}};
            rt_status st = srv_args_parse(argc, argv, &a, &err);
            if (!strcmp(s->name, "model_name") || !strcmp(s->name, "model_base_path")) {
                assert_int_equal(st, RT_ERR_INVALID); /* the pair is given together */
                srv_args_free(&a);
                argv[1] = "--model_name=m";
                argv[2] = "--model_base_path=/m";
                argv[3] = arg;
                st = srv_args_parse(4, argv, &a, &err);
            }
            if (st != RT_OK)
                fail_msg("%s: %s", what, err.msg);
            assert_true(srv_args_given(&a, s->name));
            if (s->type == SRV_SET_STR || s->type == SRV_SET_NAME)
                assert_string_equal(field_str(&a.values, s), text);
            else
                assert_int_equal(field_int(&a.values, s),
                                 strcmp(text, "true") == 0    ? 1
                                 : strcmp(text, "false") == 0 ? 0
                                 : s->type == RT_SET_NUM ? (long long)(strtod(text, NULL) * 1000 + 0.5)
                                                         : strtoll(text, NULL, 10));
            /* Over the defaults of a config built from flags. */
            if ((s->where & SRV_SET_JSON) && argc == 4) {
                srv_config *c = NULL;
                assert_int_equal(srv_config_build(&a, &c, &err), RT_OK);
                if (s->type == SRV_SET_STR || s->type == SRV_SET_NAME)
                    assert_string_equal(field_str(c, s), text);
                else
                    assert_int_equal(field_int(c, s), field_int(&a.values, s));
                srv_config_free(c);
            }
            srv_args_free(&a);
            /* Out of range, or a bad value: refused naming the flag. */
            if (s->type == SRV_SET_INT || s->type == SRV_SET_SIZE) {
                snprintf(arg, sizeof arg, "--%s=%lld", s->name, (long long)s->lo - 1);
                char *bad[] = {"predictd", arg, NULL};
                assert_int_equal(srv_args_parse(2, bad, &a, &err), RT_ERR_INVALID);
                snprintf(doc, sizeof doc, "--%s: %lld is out of range", s->name,
                         (long long)s->lo - 1);
                if (!strstr(err.msg, doc))
                    fail_msg("%s: got '%s', want '%s'", what, err.msg, doc);
                srv_args_free(&a);
            }
        }
        if (s->where & SRV_SET_JSON) {
            snprintf(doc, sizeof doc, "\n  %s%s%s  ", s->section ? s->section : "",
                     s->section ? "." : "", s->name);
            if (!strstr(keys, doc))
                fail_msg("%s: not in --help_config", what);
            /* JSON round trip (a key of a section inside its object). */
            char cfg[400];
            if (s->section)
                snprintf(cfg, sizeof cfg, "{\"%s\": {\"%s\": %s}}", s->section, s->name, json);
            else
                snprintf(cfg, sizeof cfg, "{\"%s\": %s}", s->name, json);
            srv_config *c = parse_ok(cfg);
            if (s->type == SRV_SET_STR || s->type == SRV_SET_NAME)
                assert_string_equal(field_str(c, s), text);
            else
                assert_int_not_equal(field_int(c, s), s->def);
            srv_config_free(c);
            if (s->type == SRV_SET_INT || s->type == SRV_SET_SIZE) {
                snprintf(cfg, sizeof cfg, "{\"%s\": %lld}", s->name, (long long)s->hi + 1);
                snprintf(doc, sizeof doc, "%s: ", s->name);
                parse_bad(cfg, doc);
                parse_bad(cfg, "is out of range");
                snprintf(cfg, sizeof cfg, "{\"%s\": \"1\"}", s->name);
                parse_bad(cfg, doc);
            } else {
                const char *bad = s->type == SRV_SET_BOOL || s->type == RT_SET_NUM ? "\"1\"" : "7";
                if (s->section)
                    snprintf(cfg, sizeof cfg, "{\"%s\": {\"%s\": %s}}", s->section, s->name, bad);
                else
                    snprintf(cfg, sizeof cfg, "{\"%s\": %s}", s->name, bad);
                snprintf(doc, sizeof doc, "%s%s%s: expected", s->section ? s->section : "",
                         s->section ? "." : "", s->name);
                parse_bad(cfg, doc);
                if (s->type == RT_SET_NUM) {
                    snprintf(cfg, sizeof cfg, "{\"%s\": {\"%s\": %g}}", s->section, s->name,
                             s->dhi + 1);
                    parse_bad(cfg, "is out of range");
                }
            }
        } else {
            /* A flag only: not a key of the file. */
            char cfg[300];
            snprintf(cfg, sizeof cfg, "{\"%s\": %s}", s->name, json);
            snprintf(doc, sizeof doc, "%s: unknown key", s->name);
            parse_bad(cfg, doc);
        }
    }
    free(usage);
    free(keys);
    srv_config_free(defaults);
}

/* Typos get a suggestion, in the file and on the command line; prefixes of
 * flags are not taken (getopt_long would; TF Serving does not). */
static void test_unknown_names(void **state)
{
    (void)state;
    parse_bad("{\"rest_api_prot\": 1}", "rest_api_prot: unknown key (did you mean rest_api_port?)");
    parse_bad("{\"model\": []}", "model: unknown key (did you mean models?)");
    parse_bad("{\"zzzzzz\": 1}", "zzzzzz: unknown key (predictd --help_config lists the keys)");
    srv_args a;
    rt_err err = {{0}};
    char *typo[] = {"predictd", "--max_batch_sise=3", NULL};
    assert_int_equal(srv_args_parse(2, typo, &a, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "--max_batch_sise: unknown flag (did you mean --max_batch_size?)");
    srv_args_free(&a);
    char *prefix[] = {"predictd", "--rest_api_po=3", NULL};
    assert_int_equal(srv_args_parse(2, prefix, &a, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "--rest_api_po: unknown flag (did you mean --rest_api_port?)");
    srv_args_free(&a);
    char *far[] = {"predictd", "--frobnicate", NULL};
    assert_int_equal(srv_args_parse(2, far, &a, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "--frobnicate: unknown flag (see --help)");
    srv_args_free(&a);
    char *stray[] = {"predictd", "--enable_cors", "true", NULL};
    assert_int_equal(srv_args_parse(3, stray, &a, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "true: unexpected argument (flags start with --)");
    srv_args_free(&a);
    /* "--flag value" and a bool alone, as before getopt_long. */
    char *spaced[] = {"predictd", "--max_batch_size", "7", "--enable_cors", "-h", NULL};
    assert_int_equal(srv_args_parse(5, spaced, &a, &err), RT_OK);
    assert_int_equal(a.values.max_batch_size, 7);
    assert_true(a.values.enable_cors);
    assert_true(a.help);
    srv_args_free(&a);
}

/* The message srv_args_parse gives for one argument (RT_ERR_INVALID). */
static void flag_bad(const char *arg, const char *msg)
{
    srv_args a;
    rt_err err = {{0}};
    char *argv[] = {"predictd", (char *)arg, NULL};
    assert_int_equal(srv_args_parse(2, argv, &a, &err), RT_ERR_INVALID);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("%s: got \"%s\", want \"%s\"", arg, err.msg, msg);
    srv_args_free(&a);
}

/* "Did you mean" only for a typo (an edit per six letters), an
 * abbreviation or a missing word, never for a name that differs in a whole
 * word (issue 22: --ssl_config_file was told --model_config_file,
 * --num_load_threads --num_batch_threads). */
static void test_suggestions(void **state)
{
    (void)state;
    flag_bad("--tls_setup_file=x", "--tls_setup_file: unknown flag (see --help)");
    flag_bad("--num_save_threads=2", "--num_save_threads: unknown flag (see --help)");
    flag_bad("--cert_config_file=x", "--cert_config_file: unknown flag (see --help)");
    flag_bad("--num_io_threads=2", "--num_io_threads: unknown flag (see --help)");
    /* a name missing a word that several flags have: no guess */
    flag_bad("--config_file=x", "--config_file: unknown flag (see --help)");
    flag_bad("--num_threads=2", "--num_threads: unknown flag (see --help)");
    /* typos of TF Serving's flags point at them, '-' is '_', swaps count once */
    flag_bad("--ssl_config_fil=x", "--ssl_config_fil: unknown flag (did you mean --ssl_config_file?)");
    flag_bad("--num_laod_threads=2",
             "--num_laod_threads: unknown flag (did you mean --num_load_threads?)");
    flag_bad("--rest-api-port=1", "--rest-api-port: unknown flag (did you mean --rest_api_port?)");
    flag_bad("--rest_port=1", "--rest_port: unknown flag (did you mean --rest_api_port?)");
    flag_bad("--tensorflow_intra_op_paralelism=2", "--tensorflow_intra_op_paralelism: unknown "
             "flag (did you mean --tensorflow_intra_op_parallelism?)");
    /* an abbreviation missing its value is an abbreviation, not a flag */
    flag_bad("--max_batch_siz", "--max_batch_siz: unknown flag (did you mean --max_batch_size?)");
    flag_bad("--max_batch_size", "--max_batch_size: needs a value");
}

/* TF Serving's flags that mean nothing here are accepted with one warning
 * each; values TF would not parse, and those predictd cannot honour, are
 * refused saying why; TF's name of enable_cors sets it. */
static void test_tf_flags(void **state)
{
    (void)state;
    srv_args a;
    rt_err err = {{0}};
    char *argv[] = {"predictd", "--tensorflow_intra_op_parallelism=4",
                    "--tensorflow_inter_op_parallelism", "2",
                    "--tensorflow_session_parallelism=0", "--saved_model_tags=serve",
                    "--grpc_max_threads=8", "--per_process_gpu_memory_fraction=0.5",
                    "--enable_signature_method_name_check", "--ssl_config_file=/etc/ssl.conf",
                    "--num_load_threads=4", "--rest_api_enable_cors_support=true", NULL};
    assert_int_equal(srv_args_parse(12, argv, &a, &err), RT_OK);
    assert_int_equal(a.n_warnings, 8); /* --ssl_config_file is a setting */
    assert_string_equal(a.values.ssl_config_file, "/etc/ssl.conf");
    assert_non_null(strstr(a.warnings[0], "--tensorflow_intra_op_parallelism=4: TF Serving's "
                                          "flag is accepted but has no effect: "));
    assert_non_null(strstr(a.warnings[1], "--tensorflow_inter_op_parallelism=2: "));
    assert_non_null(strstr(a.warnings[4], "--grpc_max_threads=8: "));
    assert_non_null(strstr(a.warnings[4], "gRPC port (--port, docs/grpc.md) has no such setting"));
    assert_non_null(strstr(a.warnings[6], "--enable_signature_method_name_check=true: "));
    assert_true(a.values.enable_cors);
    assert_true(srv_args_given(&a, "enable_cors"));
    srv_args_free(&a);
    flag_bad("--saved_model_tags=serve,gpu",
             "--saved_model_tags=serve,gpu: TF Serving's flag is refused: predictd's exports "
             "hold one graph, the one TF tags \"serve\" (the default); there is no graph with "
             "other tags to load");
    flag_bad("--platform_config_file=/p", "--platform_config_file=/p: TF Serving's flag is "
             "refused: a PlatformConfigMap chooses the platform that loads models; predictd "
             "loads only the exports predict-train writes (docs/export-format.md) and has no "
             "other platform");
    flag_bad("--grpc_max_threads=many", "--grpc_max_threads: 'many' is not an integer");
    flag_bad("--per_process_gpu_memory_fraction=half",
             "--per_process_gpu_memory_fraction: 'half' is not a number");
    flag_bad("--enable_profiler=yes", "--enable_profiler: 'yes' is not true or false");
    flag_bad("--tensorflow_intra_op_parallelism", "--tensorflow_intra_op_parallelism: needs a value");
}

/* A reload applies the LIVE settings; a change of any other is named. */
static void test_restart_change(void **state)
{
    (void)state;
    srv_config *a = parse_ok("{\"rest_api_port\": 9000}");
    srv_config *b = parse_ok("{\"rest_api_port\": 9000, \"file_system_poll_wait_seconds\": 7, "
                             "\"drain_grace_seconds\": 3, \"enable_model_warmup\": false, "
                             "\"allow_version_labels_for_unavailable_models\": true}");
    assert_null(srv_config_restart_change(a, b));
    srv_config_free(b);
    b = parse_ok("{\"rest_api_port\": 9001}");
    assert_string_equal(srv_config_restart_change(a, b), "rest_api_port");
    srv_config_free(b);
    b = parse_ok("{\"rest_api_port\": 9000, \"rest_api_host\": \"127.0.0.1\"}");
    assert_string_equal(srv_config_restart_change(a, b), "rest_api_host");
    srv_config_free(b);
    b = parse_ok("{\"rest_api_port\": 9000, \"enable_batching\": true}");
    assert_string_equal(srv_config_restart_change(a, b), "enable_batching");
    srv_config_free(b);
    srv_config_free(a);
    /* --help_config, its lines joined (wrapping may fall anywhere). */
    char *keys = srv_args_usage(true);
    size_t n = 0;
    for (const char *p = keys; *p; p++)
        if (*p != ' ' && *p != '\n')
            keys[n++] = *p;
        else if (n > 0 && keys[n - 1] != ' ')
            keys[n++] = ' ';
    keys[n] = '\0';
    assert_non_null(strstr(keys, "only at start and reload; a reload applies it at once"));
    assert_non_null(strstr(keys, "0 = any free port; a change takes effect at the next start"));
    free(keys);
}

static void test_cpu_quota(void **state)
{
    (void)state;
    assert_int_equal(srv_cpu_quota_from_text("max 100000\n"), 0);
    assert_int_equal(srv_cpu_quota_from_text("200000 100000\n"), 2);
    assert_int_equal(srv_cpu_quota_from_text("150000 100000\n"), 2);
    assert_int_equal(srv_cpu_quota_from_text("50000 100000\n"), 1);
    assert_int_equal(srv_cpu_quota_from_text("garbage"), 0);
    assert_int_equal(srv_cpu_quota_from_text(""), 0);

    /* A fake cgroup tree: the parent limits to 1 CPU, the child to 3. */
    char root[] = "/tmp/test_srv_cgroup.XXXXXX";
    assert_non_null(mkdtemp(root));
    char p[512];
    snprintf(p, sizeof p, "%s/a", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/a/b", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/a/cpu.max", root);
    write_text(p, "100000 100000\n");
    snprintf(p, sizeof p, "%s/a/b/cpu.max", root);
    write_text(p, "300000 100000\n");
    char proc[512];
    snprintf(proc, sizeof proc, "%s/proc_cgroup", root);
    write_text(proc, "0::/a/b\n");
    assert_int_equal(srv_cpu_count(root, proc), 1);
    /* Unlimited: the affinity mask decides (at least 1). */
    snprintf(p, sizeof p, "%s/a/cpu.max", root);
    write_text(p, "max 100000\n");
    snprintf(p, sizeof p, "%s/a/b/cpu.max", root);
    write_text(p, "max 100000\n");
    int n = srv_cpu_count(root, proc);
    assert_true(n >= 1);
    assert_int_equal(n, srv_cpu_count(root, "/nonexistent"));
    snprintf(p, sizeof p, "rm -rf '%s'", root);
    assert_int_equal(system(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_config),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_refusals_name_the_key),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_file_and_flag_override),
        cmocka_unit_test(test_request_read_timeout),
        cmocka_unit_test(test_connection_settings),
        cmocka_unit_test(test_total_request_bytes),
        cmocka_unit_test(test_settings_table),
        cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_suggestions),
        cmocka_unit_test(test_tf_flags),
        cmocka_unit_test(test_restart_change),
        cmocka_unit_test(test_cpu_quota),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
