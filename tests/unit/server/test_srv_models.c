/*
 * test_srv_models.c — the model manager on real exports (written with the
 * exporter API): loading, default/label/version lookups, the atomic switch
 * to a new version while an old one is still held, refused broken versions
 * (retried when their files change), policies, labels that must point at
 * AVAILABLE versions, unloading when a directory vanishes.
 *
 * Also a helper for the integration tests (tests/integration/test_daemon*):
 *   test_srv_models --write-export SPEC BASE VERSION SEED
 * writes an export of SPEC (a spec file, or builtin:wide_deep,
 * builtin:linear, builtin:regressor) with random weights from SEED into
 * BASE/VERSION atomically, and prints its path. A BoostedTrees spec gets
 * random complete trees (estimator.n_trees, default 100, of depth
 * estimator.max_depth, default 6); builtin:trees is support_trees_tiny's
 * hand-built ensemble.
 */
#include <fcntl.h>
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

#include <cJSON.h>

#include "srv.h"
#include "support_models.h"
#include "support_trees.h"

/* ----------------------------------------------------- export helpers */

static char *read_all(const char *path)
{
    char *s = NULL;
    return rt_file_read(AT_FDCWD, path, 1u << 26, 0, &s, NULL, NULL) == RT_OK ? s : NULL;
}

static const char *builtin_spec(const char *name)
{
    if (!strcmp(name, "builtin:wide_deep"))
        return SUPPORT_SPEC_WIDE_DEEP;
    if (!strcmp(name, "builtin:linear"))
        return SUPPORT_SPEC_LINEAR;
    if (!strcmp(name, "builtin:regressor"))
        return SUPPORT_SPEC_DNN_REGRESSOR;
    return NULL;
}

/* estimator.<key> of spec_json as a count, or dflt. */
static size_t estimator_count(const char *spec_json, const char *key, size_t dflt)
{
    cJSON *j = cJSON_Parse(spec_json);
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "estimator"), key);
    size_t n = cJSON_IsNumber(v) && v->valuedouble >= 0 ? (size_t)v->valuedouble : dflt;
    cJSON_Delete(j);
    return n;
}

/* Writes an export of spec_json with weights (or trees) from seed; -1 on
 * error. */
static int64_t write_export(const char *spec_json, const char *base, int64_t version,
                            uint64_t seed, char *path, size_t cap)
{
    bool tiny = spec_json == NULL;
    Predictd__ModelDef *def = tiny ? support_trees_tiny() : support_spec_modeldef(spec_json);
    if (!def)
        return -1;
    support_tensors st = {0};
    int64_t v = -1;
    int ok = support_random_tensors(def, seed, 0.5f, &st);
    if (ok == 0 && def->graph->trees && !tiny)
        ok = support_random_trees(def, seed, estimator_count(spec_json, "n_trees", 100),
                                  estimator_count(spec_json, "max_depth", 6));
    if (ok == 0)
        v = support_write_export(base, def, &st, version, path, cap);
    support_tensors_free(&st);
    rt_spec_modeldef_free(def);
    return v;
}

static int helper_main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s --write-export SPEC BASE VERSION SEED\n", argv[0]);
        return 2;
    }
    const char *spec = builtin_spec(argv[2]);
    char *text = NULL;
    if (!spec && strcmp(argv[2], "builtin:trees") != 0) {
        text = read_all(argv[2]);
        if (!text) {
            fprintf(stderr, "%s: cannot read\n", argv[2]);
            return 1;
        }
        spec = text;
    }
    char path[4096];
    int64_t v = write_export(spec, argv[3], strtoll(argv[4], NULL, 10),
                             strtoull(argv[5], NULL, 10), path, sizeof path);
    free(text);
    if (v < 0)
        return 1;
    printf("%s\n", path);
    return 0;
}

/* ----------------------------------------------------------- fixture */

typedef struct fx {
    char root[256];
    char base[300];  /* root/m: the model's base path */
    char stage[300]; /* root/stage: exports are made here, then renamed */
    srv_manager *mgr;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || support_mkdtemp(f->root, sizeof f->root) != 0)
        return -1;
    snprintf(f->base, sizeof f->base, "%s/m", f->root);
    snprintf(f->stage, sizeof f->stage, "%s/stage", f->root);
    if (mkdir(f->base, 0755) != 0 || mkdir(f->stage, 0755) != 0)
        return -1;
    rt_err err = {{0}};
    if (srv_manager_new(&f->mgr, &err) != RT_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    srv_manager_free(f->mgr);
    support_rmtree(f->root);
    free(f);
    return 0;
}

static void add_version(fx *f, int64_t version, uint64_t seed)
{
    char path[4096];
    assert_int_equal(write_export(SUPPORT_SPEC_WIDE_DEEP, f->base, version, seed, path,
                                  sizeof path),
                     version);
}

/* Makes version in the stage, lets edit() change it, renames it in. */
static void add_staged(fx *f, int64_t version, uint64_t seed, void (*edit)(const char *dir))
{
    char path[4096], dst[4096];
    assert_int_equal(write_export(SUPPORT_SPEC_WIDE_DEEP, f->stage, version, seed, path,
                                  sizeof path),
                     version);
    if (edit)
        edit(path);
    snprintf(dst, sizeof dst, "%s/%lld", f->base, (long long)version);
    assert_int_equal(rename(path, dst), 0);
}

static void truncate_vars(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/variables.bin", dir);
    assert_int_equal(truncate(p, 100), 0);
}

static void bad_warmup(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/assets.extra", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/assets.extra/warmup.json", dir);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs("[{\"instances\": [{\"age\": \"not a number\"}]}]", fp);
    fclose(fp);
}

static void good_warmup(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/assets.extra", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/assets.extra/warmup.json", dir);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs("[{\"instances\": [{\"age\": 30, \"hours\": 40, \"gender\": \"Male\","
          " \"occupation\": \"x\"}]},"
          " {\"method\": \"classify\", \"body\": {\"examples\": [{\"age\": 50, \"hours\": 1,"
          " \"gender\": \"Female\", \"occupation\": \"y\"}]}}]",
          fp);
    fclose(fp);
}

/* Applies {top "models": [{"name": "m", "base_path": BASE extra}]}; top is
 * "" or top-level keys ending in a comma. */
static void apply_with(fx *f, const char *top, const char *extra_model_json)
{
    char text[2048];
    snprintf(text, sizeof text, "{%s\"models\": [{\"name\": \"m\", \"base_path\": \"%s\"%s}]}",
             top, f->base, extra_model_json);
    srv_config *c = NULL;
    rt_err err = {{0}};
    rt_status st = srv_config_parse(text, strlen(text), NULL, &c, &err);
    if (st != RT_OK)
        fprintf(stderr, "config: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    st = srv_manager_apply(f->mgr, c, &err);
    if (st != RT_OK)
        fprintf(stderr, "apply: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
    srv_config_free(c);
}

static void apply(fx *f, const char *extra_model_json)
{
    apply_with(f, "", extra_model_json);
}

/* Applies a config that must be refused with a message holding want. */
static void apply_refused_with(fx *f, const char *top, const char *extra_model_json,
                               const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "{%s\"models\": [{\"name\": \"m\", \"base_path\": \"%s\"%s}]}",
             top, f->base, extra_model_json);
    srv_config *c = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_config_parse(text, strlen(text), NULL, &c, &err), RT_OK);
    assert_int_not_equal(srv_manager_apply(f->mgr, c, &err), RT_OK);
    if (!strstr(err.msg, want))
        fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, want);
    assert_non_null(strstr(err.msg, want));
    srv_config_free(c);
}

static void apply_refused(fx *f, const char *extra_model_json, const char *want)
{
    apply_refused_with(f, "", extra_model_json, want);
}

/* The version that answers model m's default / label, or -1 with code. */
static int64_t answering(fx *f, int64_t version, const char *label, rt_status *code)
{
    srv_version *v = NULL;
    rt_err err = {{0}};
    rt_status st = srv_manager_acquire(f->mgr, "m", version, label, &v, &err);
    if (code)
        *code = st;
    if (st != RT_OK)
        return -1;
    int64_t n = srv_version_number(v);
    srv_version_release(v);
    return n;
}

static const char *BODY = "{\"instances\": [{\"age\": 33, \"hours\": 40, \"gender\": \"Female\","
                          " \"occupation\": \"Sales\"}]}";

static rt_status predict(const srv_version *v, rt_buf *out)
{
    rt_json_params jp = rt_json_default_params();
    rt_ctx *c = rt_ctx_new();
    rt_err err = {{0}};
    rt_status st = rt_json_handle(srv_version_model(v), RT_METHOD_PREDICT, BODY, strlen(BODY),
                                  &jp, c, out, &err);
    if (st != RT_OK)
        fprintf(stderr, "predict: %s\n", err.msg);
    rt_ctx_free(c);
    return st;
}

static char *status_of(fx *f, int64_t version)
{
    rt_buf b;
    rt_buf_init(&b);
    rt_err err = {{0}};
    if (srv_manager_status_json(f->mgr, "m", version, NULL, &b, &err) != RT_OK) {
        rt_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* -------------------------------------------------------------- tests */

static void test_load_switch_and_refcounts(void **state)
{
    fx *f = *state;
    add_version(f, 1, 11);
    apply(f, "");
    char why[256];
    assert_false(srv_manager_ready(f->mgr, why, sizeof why));
    assert_non_null(strstr(why, "'m'"));
    srv_manager_poll(f->mgr);
    assert_true(srv_manager_ready(f->mgr, NULL, 0));
    assert_int_equal(answering(f, -1, NULL, NULL), 1);

    /* Hold version 1 as a request in flight would. */
    srv_version *held = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_manager_acquire(f->mgr, "m", -1, NULL, &held, &err), RT_OK);
    rt_buf first;
    rt_buf_init(&first);
    assert_int_equal(predict(held, &first), RT_OK);
    assert_non_null(strstr(first.data, "\"predictions\""));

    add_version(f, 2, 22);
    srv_manager_poll(f->mgr);
    assert_int_equal(answering(f, -1, NULL, NULL), 2);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 1); /* latest 1 */
    rt_status code;
    assert_int_equal(answering(f, 1, NULL, &code), -1);
    assert_int_equal(code, RT_ERR_NOTFOUND);

    /* The unloaded version still answers for its holder, identically. */
    rt_buf again;
    rt_buf_init(&again);
    assert_int_equal(predict(held, &again), RT_OK);
    assert_string_equal(first.data, again.data);
    srv_version_release(held); /* freed now (ASan / valgrind check the rest) */

    /* Different weights: different answers. */
    srv_version *v2 = NULL;
    assert_int_equal(srv_manager_acquire(f->mgr, "m", 2, NULL, &v2, &err), RT_OK);
    rt_buf b2;
    rt_buf_init(&b2);
    assert_int_equal(predict(v2, &b2), RT_OK);
    assert_string_not_equal(first.data, b2.data);
    srv_version_release(v2);

    char *s = status_of(f, -1);
    assert_non_null(s);
    assert_non_null(strstr(s, "\"version\": \"2\", \"state\": \"AVAILABLE\""));
    assert_null(strstr(s, "\"version\": \"1\""));
    free(s);
    rt_buf_free(&first);
    rt_buf_free(&again);
    rt_buf_free(&b2);
}

static void test_broken_version_refused_then_retried(void **state)
{
    fx *f = *state;
    add_version(f, 1, 11);
    apply(f, "");
    srv_manager_poll(f->mgr);
    add_staged(f, 2, 22, truncate_vars);
    srv_manager_poll(f->mgr);
    /* 2 is refused; 1 goes on serving. */
    assert_int_equal(answering(f, -1, NULL, NULL), 1);
    char *s = status_of(f, 2);
    assert_non_null(s);
    assert_non_null(strstr(s, "\"state\": \"END\""));
    assert_null(strstr(s, "\"error_code\": \"OK\""));
    assert_non_null(strstr(s, "variables.bin"));
    free(s);
    rt_status code;
    assert_int_equal(answering(f, 2, NULL, &code), -1);
    assert_int_equal(code, RT_ERR_NOTFOUND);
    /* Polling again does not retry an unchanged export. */
    srv_manager_poll(f->mgr);
    assert_int_equal(answering(f, -1, NULL, NULL), 1);

    /* Replace it with a good export (its files change): retried, served. */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/2", f->base);
    assert_int_equal(support_rmtree(dir), 0);
    add_staged(f, 2, 22, NULL);
    srv_manager_poll(f->mgr);
    assert_int_equal(answering(f, -1, NULL, NULL), 2);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 1);
}

static void test_warmup_file(void **state)
{
    fx *f = *state;
    add_staged(f, 1, 11, good_warmup);
    apply(f, "");
    srv_manager_poll(f->mgr);
    assert_int_equal(answering(f, -1, NULL, NULL), 1);
    add_staged(f, 2, 22, bad_warmup);
    srv_manager_poll(f->mgr);
    assert_int_equal(answering(f, -1, NULL, NULL), 1);
    char *s = status_of(f, 2);
    assert_non_null(s);
    assert_non_null(strstr(s, "warmup.json"));
    assert_non_null(strstr(s, "\"state\": \"END\""));
    free(s);
}

/* enable_model_warmup false: a version loads without running its warm-up
 * file (whose bad request would otherwise refuse it). */
static void test_warmup_off(void **state)
{
    fx *f = *state;
    add_staged(f, 1, 11, bad_warmup);
    apply_with(f, "\"enable_model_warmup\": false, ", "");
    srv_manager_poll(f->mgr);
    assert_int_equal(answering(f, -1, NULL, NULL), 1);
    /* Back on: the next version's bad warm-up file refuses it. */
    apply(f, "");
    add_staged(f, 2, 22, bad_warmup);
    srv_manager_poll(f->mgr);
    assert_int_equal(answering(f, -1, NULL, NULL), 1);
    char *s = status_of(f, 2);
    assert_non_null(strstr(s, "\"state\": \"END\""));
    free(s);
}

/* TF Serving's rule for labels on versions that are not available, and
 * --allow_version_labels_for_unavailable_models. */
static void test_labels_unavailable(void **state)
{
    fx *f = *state;
    static const char allow[] = "\"allow_version_labels_for_unavailable_models\": true, ";
    add_version(f, 1, 11);
    /* At start: a label on a version missing from the base path. */
    apply_refused(f, ", \"version_labels\": {\"stable\": 5}",
                  "models[0].version_labels.stable: version 5 of model 'm' is not available "
                  "(no directory");
    apply_refused(f, ", \"version_labels\": {\"stable\": 5}",
                  "unless --allow_version_labels_for_unavailable_models is given");
    apply_with(f, allow, ", \"version_labels\": {\"stable\": 5}");
    srv_manager_poll(f->mgr);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 1);
    /* Running: a new label may go onto a version not loaded, when allowed. */
    apply_refused(f, ", \"version_labels\": {\"stable\": 5, \"canary\": 7}",
                  "version_labels.canary: version 7 of model 'm' is not AVAILABLE");
    apply_with(f, allow, ", \"version_labels\": {\"stable\": 5, \"canary\": 7}");
    /* A label in use moves only onto an AVAILABLE version, flag or not. */
    apply_refused_with(f, allow, ", \"version_labels\": {\"stable\": 9, \"canary\": 7}",
                       "a label in use moves only onto an AVAILABLE version");
    apply_with(f, allow, ", \"version_labels\": {\"stable\": 1, \"canary\": 7}");
    assert_int_equal(answering(f, -1, "stable", NULL), 1);
}

static void test_policies_labels_default(void **state)
{
    fx *f = *state;
    add_version(f, 1, 11);
    add_version(f, 2, 22);
    add_version(f, 3, 33);
    apply(f, ", \"version_policy\": {\"all\": true}");
    srv_manager_poll(f->mgr);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 3);
    assert_int_equal(answering(f, -1, NULL, NULL), 3);
    assert_int_equal(answering(f, 1, NULL, NULL), 1);

    /* Labels may only point at AVAILABLE versions. */
    apply_refused(f, ", \"version_policy\": {\"all\": true}, \"version_labels\": {\"stable\": 9}",
                  "version_labels.stable: version 9 of model 'm' is not AVAILABLE");
    apply(f, ", \"version_policy\": {\"all\": true},"
             " \"version_labels\": {\"stable\": 1, \"canary\": 3}, \"default_version\": \"stable\"");
    assert_int_equal(answering(f, -1, NULL, NULL), 1);
    assert_int_equal(answering(f, -1, "canary", NULL), 3);
    rt_status code;
    assert_int_equal(answering(f, -1, "nope", &code), -1);
    assert_int_equal(code, RT_ERR_INVALID);
    assert_int_equal(answering(f, 7, NULL, &code), -1);
    assert_int_equal(code, RT_ERR_NOTFOUND);
    srv_version *v = NULL;
    rt_err err = {{0}};
    assert_int_equal(srv_manager_acquire(f->mgr, "other", -1, NULL, &v, &err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "'other'"));

    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(srv_manager_list_json(f->mgr, &b), RT_OK);
    assert_non_null(strstr(b.data, "\"default_version\": \"1\""));
    assert_non_null(strstr(b.data, "\"stable\": \"1\""));
    rt_buf_free(&b);

    /* specific [2]: 1 and 3 go, 2 stays; a label on 1 is refused now. */
    apply(f, ", \"version_policy\": {\"specific\": [2]}");
    srv_manager_poll(f->mgr);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 1);
    assert_int_equal(answering(f, -1, NULL, NULL), 2);
    apply_refused(f, ", \"version_policy\": {\"specific\": [2]}, \"version_labels\": {\"s\": 1}",
                  "not AVAILABLE");
    /* latest 2 */
    apply(f, ", \"version_policy\": {\"latest\": 2}");
    srv_manager_poll(f->mgr);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 2);
    assert_int_equal(answering(f, 2, NULL, NULL), 2);
    assert_int_equal(answering(f, 3, NULL, NULL), 3);
}

static void test_vanishing_versions_and_models(void **state)
{
    fx *f = *state;
    add_version(f, 5, 55);
    add_version(f, 6, 66);
    apply(f, ", \"version_policy\": {\"all\": true}");
    srv_manager_poll(f->mgr);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 2);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/6", f->base);
    assert_int_equal(support_rmtree(dir), 0);
    srv_manager_poll(f->mgr);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 1);
    assert_int_equal(answering(f, -1, NULL, NULL), 5);
    /* Temporary (non-integer) directories are ignored. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.tmp-7-1", f->base);
    assert_int_equal(mkdir(tmp, 0755), 0);
    snprintf(tmp, sizeof tmp, "%s/7x", f->base);
    assert_int_equal(mkdir(tmp, 0755), 0);
    srv_manager_poll(f->mgr);
    assert_int_equal(srv_manager_available(f->mgr, "m"), 1);
    snprintf(dir, sizeof dir, "%s/5", f->base);
    assert_int_equal(support_rmtree(dir), 0);
    srv_manager_poll(f->mgr);
    /* No version left: 404 with TF Serving's hint naming what was found. */
    rt_status code;
    assert_int_equal(answering(f, -1, NULL, &code), -1);
    assert_int_equal(code, RT_ERR_NOTFOUND);
    srv_version *none = NULL;
    rt_err herr = {{0}};
    assert_int_equal(srv_manager_acquire(f->mgr, "m", -1, NULL, &none, &herr), RT_ERR_NOTFOUND);
    assert_non_null(strstr(herr.msg, "no versions found under base path"));
    assert_non_null(strstr(herr.msg, "'7x/'"));
    assert_null(strstr(herr.msg, ".tmp-7-1"));
    assert_false(srv_manager_ready(f->mgr, NULL, 0));

    /* A reload adding a model whose base path does not exist is refused,
     * naming it; the running config stays. */
    srv_config *c = NULL;
    rt_err err = {{0}};
    const char *text = "{\"models\": [{\"name\": \"n\", \"base_path\": \"/nonexistent\"}]}";
    assert_int_equal(srv_config_parse(text, strlen(text), NULL, &c, &err), RT_OK);
    assert_int_equal(srv_manager_apply(f->mgr, c, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "models[0].base_path: /nonexistent"));
    srv_config_free(c);
    assert_true(srv_manager_has_model(f->mgr, "m"));
    assert_false(srv_manager_has_model(f->mgr, "n"));

    /* A model removed from the config is gone. */
    char empty[4200], js[4400];
    snprintf(empty, sizeof empty, "%s/.empty", f->base);
    assert_int_equal(mkdir(empty, 0755), 0);
    snprintf(js, sizeof js, "{\"models\": [{\"name\": \"n\", \"base_path\": \"%s\"}]}", empty);
    assert_int_equal(srv_config_parse(js, strlen(js), NULL, &c, &err), RT_OK);
    assert_int_equal(srv_manager_apply(f->mgr, c, &err), RT_OK);
    srv_config_free(c);
    assert_false(srv_manager_has_model(f->mgr, "m"));
    assert_true(srv_manager_has_model(f->mgr, "n"));
    srv_manager_poll(f->mgr); /* an empty base path is logged, not fatal */
    assert_int_equal(srv_manager_available(f->mgr, "n"), 0);
}

static void test_loader_thread(void **state)
{
    fx *f = *state;
    add_version(f, 1, 11);
    apply(f, "");
    rt_err err = {{0}};
    assert_int_equal(srv_manager_start(f->mgr, 1, &err), RT_OK);
    /* Bounded wait (generous): the thread loads version 1. */
    for (int i = 0; i < 1000 && !srv_manager_ready(f->mgr, NULL, 0); i++)
        usleep(10000);
    assert_true(srv_manager_ready(f->mgr, NULL, 0));
    add_version(f, 2, 22);
    for (int i = 0; i < 1000 && answering(f, -1, NULL, NULL) != 2; i++)
        usleep(10000);
    assert_int_equal(answering(f, -1, NULL, NULL), 2);
    /* srv_manager_free (teardown) stops the thread. */
}

static void test_inotify_wakes_loader(void **state)
{
    fx *f = *state;
    add_version(f, 1, 11);
    apply(f, "");
    rt_err err = {{0}};
    /* An hour between polls: only an inotify event can bring version 2 in. */
    assert_int_equal(srv_manager_start(f->mgr, 3600, &err), RT_OK);
    for (int i = 0; i < 1000 && !srv_manager_ready(f->mgr, NULL, 0); i++)
        usleep(10000);
    assert_true(srv_manager_ready(f->mgr, NULL, 0));
    usleep(600000); /* the watcher has set up its watch (it re-syncs every 0.5 s) */
    add_version(f, 2, 22);
    for (int i = 0; i < 1000 && answering(f, -1, NULL, NULL) != 2; i++)
        usleep(10000);
    assert_int_equal(answering(f, -1, NULL, NULL), 2);
    /* A removed version goes the same way. */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/2", f->base);
    assert_int_equal(support_rmtree(dir), 0);
    for (int i = 0; i < 1000 && answering(f, -1, NULL, NULL) != 1; i++)
        usleep(10000);
    assert_int_equal(answering(f, -1, NULL, NULL), 1);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--write-export"))
        return helper_main(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_switch_and_refcounts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken_version_refused_then_retried, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_warmup_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warmup_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_labels_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policies_labels_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vanishing_versions_and_models, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loader_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inotify_wakes_loader, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
