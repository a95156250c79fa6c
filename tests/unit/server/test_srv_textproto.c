/* test_srv_textproto.c — the protobuf text-format reader (srv_textproto.c)
 * and TF Serving's config files read through it (srv_tfconf.c): the tree,
 * positions and offsets, escapes, comments, lists, limits; errors with line,
 * column and field path; a text-format model config giving the same
 * srv_config as the equivalent JSON; monitoring and batching files; JSON
 * config errors given as line and column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cJSON.h>

#include "srv.h"

static srv_tp_node *tp_ok(const char *text)
{
    srv_tp_node *root = NULL;
    rt_err err = {{0}};
    rt_status st = srv_tp_parse(text, strlen(text), &root, &err);
    if (st != RT_OK)
        fprintf(stderr, "unexpected error: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    return root;
}

static void tp_bad(const char *text, size_t len, const char *want)
{
    srv_tp_node *root = NULL;
    rt_err err = {{0}};
    assert_int_not_equal(srv_tp_parse(text, len, &root, &err), RT_OK);
    assert_null(root);
    if (!strstr(err.msg, want))
        fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
    assert_non_null(strstr(err.msg, want));
}

static void test_tree_and_positions(void **state)
{
    (void)state;
    const char *text = "# models\n"
                       "model_config_list {\n"
                       "  config {\n"
                       "    name: 'census'   # the one\n"
                       "    base_path: \"/srv/census\"\n"
                       "    model_version_policy: { latest { num_versions: 2 } }\n"
                       "    version_labels { key: \"stable\" value: 17 }\n"
                       "    model_platform: tensorflow\n"
                       "  }\n"
                       "}\n";
    srv_tp_node *root = tp_ok(text);
    const srv_tp_node *list = srv_tp_get(root, "model_config_list");
    assert_non_null(list);
    assert_int_equal(list->kind, SRV_TP_MESSAGE);
    assert_int_equal(list->line, 2);
    assert_int_equal(list->col, 1);
    const srv_tp_node *cfg = srv_tp_get(list, "config");
    const srv_tp_node *name = srv_tp_get(cfg, "name");
    assert_int_equal(name->kind, SRV_TP_STRING);
    assert_string_equal(name->text, "census");
    assert_int_equal(name->line, 4);
    assert_int_equal(name->col, 5);
    /* the value's bytes are the quoted token, for in-place edits */
    assert_int_equal(name->val_end - name->val_off, strlen("'census'"));
    assert_memory_equal(text + name->val_off, "'census'", 8);
    assert_memory_equal(text + name->name_off, "name", 4);
    const srv_tp_node *nv =
        srv_tp_get(srv_tp_get(srv_tp_get(cfg, "model_version_policy"), "latest"), "num_versions");
    assert_int_equal(nv->kind, SRV_TP_NUMBER);
    assert_string_equal(nv->text, "2");
    char path[128];
    assert_string_equal(srv_tp_path(nv, path, sizeof path),
                        "model_config_list.config.model_version_policy.latest.num_versions");
    const srv_tp_node *lab = srv_tp_get(cfg, "version_labels");
    assert_string_equal(srv_tp_get(lab, "value")->text, "17");
    /* a message's braces: '{' .. after '}' */
    assert_int_equal(text[lab->val_off], '{');
    assert_int_equal(text[lab->val_end - 1], '}');
    const srv_tp_node *plat = srv_tp_get(cfg, "model_platform");
    assert_int_equal(plat->kind, SRV_TP_IDENT);
    assert_string_equal(plat->text, "tensorflow");
    srv_tp_free(root);
}

static void test_scalars_and_escapes(void **state)
{
    (void)state;
    srv_tp_node *root = tp_ok("a: \"x\\n\\t\\\"\\'\\\\\\101\\x42\\u00e9\" 'y' \"z\"\n"
                              "b: -12 c: 0x1F d: 1.5e-3 e: -inf f: true, g: [1, 2 ,3]; h: []\n"
                              "i < j: 1 > k: 'it''s'\n");
    const srv_tp_node *a = srv_tp_get(root, "a");
    assert_string_equal(a->text, "x\n\t\"'\\AB\xc3\xa9yz"); /* adjacent strings joined */
    assert_string_equal(srv_tp_get(root, "b")->text, "-12");
    assert_int_equal(srv_tp_get(root, "b")->kind, SRV_TP_NUMBER);
    assert_string_equal(srv_tp_get(root, "c")->text, "0x1F");
    assert_string_equal(srv_tp_get(root, "d")->text, "1.5e-3");
    assert_int_equal(srv_tp_get(root, "e")->kind, SRV_TP_NUMBER);
    assert_int_equal(srv_tp_get(root, "f")->kind, SRV_TP_IDENT);
    int n = 0, sum = 0;
    for (const srv_tp_node *c = root->child; c; c = c->next)
        if (!strcmp(c->name, "g"))
            n++, sum += atoi(c->text);
    assert_int_equal(n, 3); /* a list is one field per value */
    assert_int_equal(sum, 6);
    assert_int_equal(srv_tp_get(root, "h")->kind, SRV_TP_LIST_EMPTY);
    assert_string_equal(srv_tp_get(srv_tp_get(root, "i"), "j")->text, "1");
    assert_string_equal(srv_tp_get(root, "k")->text, "its");
    /* a string holding \0 keeps its length */
    srv_tp_free(root);
    root = tp_ok("s: 'a\\0b'");
    assert_int_equal(srv_tp_get(root, "s")->len, 3);
    srv_tp_free(root);
    root = tp_ok("");
    assert_null(root->child);
    srv_tp_free(root);
}

static void test_syntax_errors(void **state)
{
    (void)state;
    tp_bad("a {\n  b: 1\n", 10, "line 1, column 3: a: '{' is never closed");
    tp_bad("a {\n  b 1\n}", 11, "line 2, column 5: a.b: expected ':' or '{' after the field name");
    tp_bad("a: \"abc\n", 8, "line 1, column 4: a: string not closed on its line");
    tp_bad("a {\n b: 'x\\q'\n}", 14, "line 2, column 7: a.b: unknown escape");
    tp_bad("a: }", 4, "line 1, column 4: a: expected a value");
    tp_bad("}", 1, "line 1, column 1: unexpected closing bracket");
    tp_bad("a:", 2, "a: expected a value, found the end of the file");
    tp_bad("a: [1, 2", 8, "list not closed");
    tp_bad("[ext.x]: 1", 10, "extensions and Any");
    tp_bad("a: 1\n9: 2", 9, "line 2, column 1: expected a field name");
    tp_bad("a: 'x\\u12'", 10, "\\u needs 4");
    tp_bad("a: - 5", 6, "no space allowed after '-'");
    tp_bad("a: 1\0b: 2", 9, "line 1, column 5: NUL byte");
}

static void test_limits(void **state)
{
    (void)state;
    /* depth: 32 levels parse, 33 do not */
    char buf[4096];
    size_t at = 0;
    for (int i = 0; i < SRV_TP_MAX_DEPTH; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "m {");
    for (int i = 0; i < SRV_TP_MAX_DEPTH; i++)
        buf[at++] = '}';
    buf[at] = '\0';
    srv_tp_free(tp_ok(buf));
    at = 0;
    for (int i = 0; i <= SRV_TP_MAX_DEPTH; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "m {");
    tp_bad(buf, at, "nested deeper than the limit");
    /* fields: SRV_TP_MAX_NODES parse, one more does not */
    size_t cap = (size_t)(SRV_TP_MAX_NODES + 1) * 4 + 1;
    char *many = malloc(cap);
    assert_non_null(many);
    for (size_t i = 0; i < (size_t)SRV_TP_MAX_NODES; i++)
        memcpy(many + i * 4, "a:1 ", 4);
    many[(size_t)SRV_TP_MAX_NODES * 4] = '\0';
    srv_tp_free(tp_ok(many));
    memcpy(many + (size_t)SRV_TP_MAX_NODES * 4, "a:1 ", 4);
    many[cap - 1] = '\0';
    srv_tp_node *root = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_tp_parse(many, cap - 1, &root, &err), RT_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "more than 100000 fields"));
    free(many);
}

/* ------------------------------------------------ the config files */

static srv_config *cfg_ok(const char *text)
{
    srv_config *c = NULL;
    rt_err err = {{0}};
    rt_status st = srv_config_parse(text, strlen(text), "/etc/predictd", &c, &err);
    if (st != RT_OK)
        fprintf(stderr, "unexpected error: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    return c;
}

static void cfg_bad(const char *text, const char *want)
{
    srv_config *c = NULL;
    rt_err err = {{0}};
    assert_int_not_equal(srv_config_parse(text, strlen(text), NULL, &c, &err), RT_OK);
    assert_null(c);
    if (!strstr(err.msg, want))
        fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
    assert_non_null(strstr(err.msg, want));
}

static void assert_same_models(const srv_config *a, const srv_config *b)
{
    assert_int_equal(a->n_models, b->n_models);
    for (size_t i = 0; i < a->n_models; i++) {
        const srv_model_conf *x = &a->models[i], *y = &b->models[i];
        assert_string_equal(x->name, y->name);
        assert_string_equal(x->base_path, y->base_path);
        assert_int_equal(x->policy, y->policy);
        assert_int_equal(x->latest_n, y->latest_n);
        assert_int_equal(x->n_specific, y->n_specific);
        for (size_t k = 0; k < x->n_specific; k++)
            assert_int_equal(x->specific[k], y->specific[k]);
        assert_int_equal(x->n_labels, y->n_labels);
        for (size_t k = 0; k < x->n_labels; k++) {
            assert_string_equal(x->labels[k].name, y->labels[k].name);
            assert_int_equal(x->labels[k].version, y->labels[k].version);
        }
        assert_int_equal(x->default_version, y->default_version);
    }
}

static void test_model_config_as_json(void **state)
{
    (void)state;
    srv_config *t = cfg_ok("model_config_list {\n"
                           "  config {\n"
                           "    name: 'census'\n"
                           "    base_path: '/srv/census/'\n"
                           "    model_platform: 'tensorflow'\n"
                           "    model_version_policy { specific { versions: 42 versions: 43 } }\n"
                           "    version_labels { key: 'stable' value: 42 }\n"
                           "    version_labels { key: 'canary' value: 43 }\n"
                           "  }\n"
                           "  config { name: \"b\" base_path: \"rel/b\"\n"
                           "    model_version_policy { latest { num_versions: 3 } } }\n"
                           "  config { name: \"c\" base_path: \"/c\" model_version_policy { all {} } }\n"
                           "  config { name: \"d\" base_path: \"/d\"\n"
                           "    model_version_policy { latest {} } }\n"
                           "}\n");
    srv_config *j = cfg_ok(
        "{\"models\": ["
        " {\"name\": \"census\", \"base_path\": \"/srv/census/\","
        "  \"version_policy\": {\"specific\": [42, 43]},"
        "  \"version_labels\": {\"stable\": 42, \"canary\": 43}},"
        " {\"name\": \"b\", \"base_path\": \"rel/b\", \"version_policy\": {\"latest\": 3}},"
        " {\"name\": \"c\", \"base_path\": \"/c\", \"version_policy\": {\"all\": true}},"
        " {\"name\": \"d\", \"base_path\": \"/d\"}]}");
    assert_same_models(t, j);
    assert_string_equal(t->models[1].base_path, "/etc/predictd/rel/b");
    assert_int_equal(t->models[3].latest_n, 1); /* latest {}: TF serves one */
    srv_config_free(t);
    srv_config_free(j);
}

static void test_model_config_refusals(void **state)
{
    (void)state;
    cfg_bad("model_config_list {\n  config {\n    name: 'm'\n    bsae_path: '/m'\n  }\n}\n",
            "line 4, column 5: model_config_list.config.bsae_path: unknown field (known here: "
            "name, base_path, model_platform, model_version_policy, version_labels)");
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m'\n"
            "  model_platform: 'pytorch' } }",
            "line 2, column 3: model_config_list.config.model_platform: 'pytorch' is not "
            "served: predictd serves its own export format");
    /* a range error of the JSON checks, located in the text */
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m'\n"
            "  model_version_policy { latest {\n      num_versions: 2000000 } } } }",
            "line 3, column 7: model_config_list.config[0].model_version_policy.latest."
            "num_versions: ");
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m'\n"
            "  model_version_policy { latest {\n      num_versions: 2000000 } } } }",
            "is out of range [1, 1000000]");
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m'\n"
            "  version_labels { key: '7' value: 3 } } }",
            "line 2, column 20: model_config_list.config[0].version_labels['7']: a label name "
            "cannot be a number");
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m' }\n"
            "  config { name: 'm' base_path: '/n' } }",
            "line 2, column 12: model_config_list.config[1].name: model 'm' is configured twice");
    cfg_bad("model_config_list { config { base_path: '/m' } }",
            "line 1, column 21: model_config_list.config[0].name: missing");
    cfg_bad("model_config_list { config { name: 'm' name: 'n' base_path: '/m' } }",
            "line 1, column 40: model_config_list.config.name: given twice (first on line 1)");
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m'\n"
            " model_version_policy { latest {} all {} } } }",
            "line 2, column 35: model_config_list.config.model_version_policy.all: only one of "
            "latest, all, specific");
    cfg_bad("model_config_list { config { name: 3 base_path: '/m' } }",
            "model_config_list.config.name: '3' must be a quoted string");
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m' model_version_policy {"
            " specific { versions: 'x' } } } }",
            "versions: '(a string)' is not an integer");
    cfg_bad("model_config_list { config: 3 }", "config: is a message");
    cfg_bad("custom_model_config {}", "line 1, column 1: custom_model_config: unknown field");
    cfg_bad("# nothing\n", "no model");
    cfg_bad("model_config_list { config { name: 'm' base_path: '/m' version_labels { key: 's' }"
            " } }",
            "label 's' needs value");
}

static void test_json_errors_line_column(void **state)
{
    (void)state;
    cfg_bad("{\n  \"models\": [\n    {\"name\": \"m\",, }\n  ]\n}",
            "invalid JSON at line 3, column 19");
    cfg_bad("{\"models\": [", "invalid JSON at line 1, column 12");
    cfg_bad("{\"models\": []}\n}", "invalid JSON at line 2, column 1: text after the JSON value");
    cJSON *j = NULL;
    rt_err err = {{0}};
    assert_int_equal(rt_cfg_parse_json("[1, 2]\n \n", 9, &j, &err), RT_OK);
    assert_int_equal(cJSON_GetArraySize(j), 2);
    cJSON_Delete(j);
}

static void test_monitoring(void **state)
{
    (void)state;
    bool en = false;
    char *path = NULL;
    rt_err err = {{0}};
    const char *t = "prometheus_config {\n  enable: true,\n  path: \"/metrics/p\"\n}\n";
    assert_int_equal(srv_tfconf_monitoring(t, strlen(t), &en, &path, &err), RT_OK);
    assert_true(en);
    assert_string_equal(path, "/metrics/p");
    free(path);
    t = "prometheus_config { enable: true }";
    assert_int_equal(srv_tfconf_monitoring(t, strlen(t), &en, &path, &err), RT_OK);
    assert_string_equal(path, "/monitoring/prometheus/metrics");
    free(path);
    t = "prometheus_config { enable: yes }";
    assert_int_not_equal(srv_tfconf_monitoring(t, strlen(t), &en, &path, &err), RT_OK);
    assert_non_null(strstr(err.msg, "line 1, column 21: prometheus_config.enable: 'yes' is not "
                                    "true or false"));
    t = "prometheus_config { enable: true path: 'metrics' }";
    assert_int_not_equal(srv_tfconf_monitoring(t, strlen(t), &en, &path, &err), RT_OK);
    assert_non_null(strstr(err.msg, "must be a URL path starting with '/'"));
    assert_null(path);
}

/* TF Serving's SSLConfig: PEM texts as strings (adjacent literals joined,
 * escapes read), client_verify; what is missing or wrong is refused with the
 * field (and line and column where there is one). The PEM is not parsed
 * here, so placeholders stand in. */
static void test_ssl(void **state)
{
    (void)state;
    srv_tf_ssl s;
    rt_err err = {{0}};
    const char *t = "server_key: \"-----BEGIN PRIVATE KEY-----\\nk\\n\"\n"
                    "  \"-----END PRIVATE KEY-----\\n\"\n"
                    "server_cert: '-----BEGIN CERTIFICATE-----\\nc'\n"
                    "custom_ca: \"-----BEGIN CERTIFICATE-----\\na\"\nclient_verify: true\n";
    assert_int_equal(srv_tfconf_ssl(t, strlen(t), &s, &err), RT_OK);
    assert_string_equal(s.server_key,
                        "-----BEGIN PRIVATE KEY-----\nk\n-----END PRIVATE KEY-----\n");
    assert_string_equal(s.server_cert, "-----BEGIN CERTIFICATE-----\nc");
    assert_string_equal(s.custom_ca, "-----BEGIN CERTIFICATE-----\na");
    assert_true(s.client_verify);
    srv_tf_ssl_clear(&s);
    assert_null(s.server_key);
    /* an empty custom_ca is not given; client_verify defaults to false */
    t = "server_key: \"-----BEGIN K\" server_cert: \"-----BEGIN C\" custom_ca: \"\"";
    assert_int_equal(srv_tfconf_ssl(t, strlen(t), &s, &err), RT_OK);
    assert_null(s.custom_ca);
    assert_false(s.client_verify);
    srv_tf_ssl_clear(&s);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"server_key: \"-----BEGIN K\"", "server_cert: missing"},
        {"server_cert: \"-----BEGIN C\"\nserver_key: \"\"",
         "line 2, column 1: server_key: is empty"},
        {"server_key: \"-----BEGIN K\" server_cert: \"/etc/ssl/c.pem\"",
         "line 1, column 28: server_cert: holds no PEM block"},
        {"server_key: \"-----BEGIN K\" server_cert: \"-----BEGIN C\"\nclient_verify: true",
         "line 2, column 1: client_verify: true needs custom_ca"},
        {"server_key: \"-----BEGIN K\" server_cert: \"-----BEGIN C\" client_verify: 2",
         "client_verify: '2' is not true or false"},
        {"server_key: 1", "line 1, column 1: server_key: '1' must be a quoted string"},
        {"server_cert { }", "server_cert: is a string, not a message"},
        {"server_key: \"-----BEGIN K\" server_key: \"-----BEGIN K\"",
         "server_key: given twice (first on line 1)"},
        {"ssl { }", "ssl: unknown field (known here: server_key, server_cert, custom_ca, "
                    "client_verify)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_not_equal(srv_tfconf_ssl(bad[i].text, strlen(bad[i].text), &s, &err), RT_OK);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("%s: got '%s', want '%s'", bad[i].text, err.msg, bad[i].msg);
        assert_null(s.server_key);
        assert_null(s.server_cert);
    }
}

static void test_batching(void **state)
{
    (void)state;
    const char *t = "max_batch_size { value: 128 }\nbatch_timeout_micros { value: 0 }\n"
                    "max_enqueued_batches { value: 1000000 }\nnum_batch_threads { value: 8 }\n"
                    "pad_variable_length_inputs: false\n";
    cJSON *j = NULL;
    srv_tfconf_map *map = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_tfconf_batching(t, strlen(t), &j, &map, &err), RT_OK);
    char *s = cJSON_PrintUnformatted(j);
    assert_string_equal(s, "{\"max_batch_size\":128,\"batch_timeout_micros\":0,"
                           "\"max_enqueued_batches\":1000000,\"num_batch_threads\":8}");
    free(s);
    /* an error about a value in JSON terms is told in the text's terms */
    rt_err_set(&err, RT_ERR_INVALID, "num_batch_threads: 8 is out of range");
    srv_tfconf_locate(map, &err);
    assert_string_equal(err.msg, "line 4, column 21: num_batch_threads.value: 8 is out of range");
    cJSON_Delete(j);
    srv_tfconf_map_free(map);
    t = "max_batch_size: 128";
    assert_int_not_equal(srv_tfconf_batching(t, strlen(t), &j, &map, &err), RT_OK);
    assert_non_null(strstr(err.msg, "max_batch_size: is a message: write max_batch_size { ... }"));
    t = "allowed_batch_sizes: 8";
    assert_int_not_equal(srv_tfconf_batching(t, strlen(t), &j, &map, &err), RT_OK);
    assert_non_null(strstr(err.msg, "line 1, column 1: allowed_batch_sizes: unknown field"));
}

/* ------------------------------------------- predictctl's in-place edits */

static char *edit_ok(const char *text, const char *model, const char *label, int64_t v)
{
    char *out = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    rt_status st = srv_tfconf_set_label(text, strlen(text), model, label, v, &out, &n, &err);
    if (st != RT_OK)
        fprintf(stderr, "unexpected error: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(strlen(out), n);
    int64_t got = -2;
    assert_int_equal(srv_tfconf_label(out, n, model, label, &got, &err), RT_OK);
    assert_int_equal(got, v < 0 ? -1 : v); /* read back */
    return out;
}

static void test_label_edits_keep_the_rest(void **state)
{
    (void)state;
    const char *text = "# production models\n"
                       "model_config_list {\n"
                       "  config {\n"
                       "    name: 'census'  # the census model\n"
                       "    base_path: '/srv/census'\n"
                       "    version_labels {\n"
                       "      key: 'stable'\n"
                       "      value: 42  # promoted on Monday\n"
                       "    }\n"
                       "  }\n"
                       "  config { name: 'b' base_path: '/b' }\n"
                       "}\n";
    /* an existing label: only its value token changes */
    char *out = edit_ok(text, "census", "stable", 1700000000);
    const char *want1 = "# production models\n"
                        "model_config_list {\n"
                        "  config {\n"
                        "    name: 'census'  # the census model\n"
                        "    base_path: '/srv/census'\n"
                        "    version_labels {\n"
                        "      key: 'stable'\n"
                        "      value: 1700000000  # promoted on Monday\n"
                        "    }\n"
                        "  }\n"
                        "  config { name: 'b' base_path: '/b' }\n"
                        "}\n";
    assert_string_equal(out, want1);
    /* a new label: a copy of the existing entry's layout, after it */
    char *out2 = edit_ok(out, "census", "previous", 42);
    const char *want2 = "# production models\n"
                        "model_config_list {\n"
                        "  config {\n"
                        "    name: 'census'  # the census model\n"
                        "    base_path: '/srv/census'\n"
                        "    version_labels {\n"
                        "      key: 'stable'\n"
                        "      value: 1700000000  # promoted on Monday\n"
                        "    }\n"
                        "    version_labels {\n"
                        "      key: 'previous'\n"
                        "      value: 42  # promoted on Monday\n"
                        "    }\n"
                        "  }\n"
                        "  config { name: 'b' base_path: '/b' }\n"
                        "}\n";
    assert_string_equal(out2, want2);
    /* removing it gives the previous text back, byte for byte */
    char *out3 = edit_ok(out2, "census", "previous", -1);
    assert_string_equal(out3, want1);
    /* a config written on one line gets the entry inside its braces */
    char *out4 = edit_ok(out3, "b", "canary", 7);
    assert_non_null(strstr(out4, "  config { name: 'b' base_path: '/b' version_labels { key: "
                                 "\"canary\" value: 7 } }\n}\n"));
    char *out5 = edit_ok(out4, "b", "canary", -1);
    assert_string_equal(out5, want1);
    /* a model without labels, fields on lines of their own */
    const char *plain = "model_config_list {\n  config {\n    name: \"m\"\n"
                        "    base_path: \"/m\"\n  }\n}";
    char *out6 = edit_ok(plain, "m", "stable", 3);
    assert_string_equal(out6, "model_config_list {\n  config {\n    name: \"m\"\n"
                              "    base_path: \"/m\"\n"
                              "    version_labels { key: \"stable\" value: 3 }\n  }\n}");
    /* every edit is still a valid config with the same models */
    srv_config *c = cfg_ok(out2);
    assert_int_equal(c->n_models, 2);
    assert_int_equal(c->models[0].n_labels, 2);
    srv_config_free(c);
    char *o = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    assert_int_equal(srv_tfconf_set_label(text, strlen(text), "nope", "s", 1, &o, &n, &err),
                     RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "model nope is not in the config"));
    free(out);
    free(out2);
    free(out3);
    free(out4);
    free(out5);
    free(out6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_and_positions),
        cmocka_unit_test(test_scalars_and_escapes),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_model_config_as_json),
        cmocka_unit_test(test_model_config_refusals),
        cmocka_unit_test(test_json_errors_line_column),
        cmocka_unit_test(test_monitoring),
        cmocka_unit_test(test_ssl),
        cmocka_unit_test(test_batching),
        cmocka_unit_test(test_label_edits_keep_the_rest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
