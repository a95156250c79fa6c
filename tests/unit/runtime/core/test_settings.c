/*
 * test_settings.c — the settings tables (runtime/core/rt_settings.c): defaults,
 * JSON keys (path-named errors, a key given twice, null = absent, "did you
 * mean"), flags (--x=y, --x y, a bool alone, aliases, '-' and '_' alike,
 * abbreviations refused, "--", repeated list flags, a flag given twice),
 * --help lines; and every program's table (predict-model's per command)
 * walked against its --help output and its generated man page: each row's
 * flag (and each of predictd's config keys) appears in both.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cJSON.h>

#include "pm.h"
#include "rt.h"
#include "srv.h"
#include "trn.h"
#include "tun.h"

/* ------------------------------------------------------ a small table */

typedef struct opts {
    int n;
    size_t size;
    bool on;
    char *name;
    int64_t big;
    double ratio;
    int mode;
} opts;

static const rt_setting_choice MODES[] = {{"fast", 1}, {"slow", 2}, {NULL, 0}};

static const rt_setting T[] = {
    {.name = "n", .type = RT_SET_INT, .where = RT_SET_JSON | RT_SET_FLAG, .lo = 0, .hi = 10,
     .def = 3, .offset = offsetof(opts, n), .arg = "N", .help = "a count"},
    {.name = "size_limit", .flag = "size-limit", .aliases = "max-size", .type = RT_SET_SIZE,
     .where = RT_SET_JSON | RT_SET_FLAG, .lo = 1, .hi = 1000, .def = 100,
     .offset = offsetof(opts, size), .arg = "N", .help = "a size"},
    {.name = "on", .type = RT_SET_BOOL, .where = RT_SET_JSON | RT_SET_FLAG,
     .offset = offsetof(opts, on), .help = "a switch"},
    {.name = "name", .type = RT_SET_STR, .where = RT_SET_JSON | RT_SET_FLAG, .def_str = "x",
     .offset = offsetof(opts, name), .arg = "NAME", .help = "a name"},
    {.name = "big", .type = RT_SET_I64, .where = RT_SET_JSON, .lo = -5, .hi = INT64_C(1) << 50,
     .def = -1, .offset = offsetof(opts, big), .help = "a big one"},
    {.name = "ratio", .type = RT_SET_NUM, .where = RT_SET_JSON | RT_SET_FLAG, .dlo = 0, .dhi = 1,
     .ddef = 0.5, .offset = offsetof(opts, ratio), .arg = "X", .help = "a ratio"},
    {.name = "mode", .type = RT_SET_ENUM, .where = RT_SET_JSON | RT_SET_FLAG, .choices = MODES,
     .def = 2, .offset = offsetof(opts, mode), .help = "how"},
};
#define NT (sizeof T / sizeof T[0])

static void test_defaults_and_json(void **state)
{
    (void)state;
    opts o;
    rt_err err;
    memset(&o, 0, sizeof o);
    assert_int_equal(rt_settings_defaults(T, NT, &o, &err), RT_OK);
    assert_int_equal(o.n, 3);
    assert_int_equal(o.size, 100);
    assert_false(o.on);
    assert_string_equal(o.name, "x");
    assert_int_equal(o.big, -1);
    assert_true(o.ratio == 0.5);
    assert_int_equal(o.mode, 2);

    static const struct {
        const char *json, *want; /* NULL: accepted */
    } cases[] = {
        {"{\"n\": 7, \"size_limit\": 5, \"on\": true, \"name\": \"y\", \"big\": 1e12, "
         "\"ratio\": 0.25, \"mode\": \"fast\"}",
         NULL},
        {"{\"n\": null, \"name\": null}", NULL}, /* null: not given */
        {"{\"n\": 1, \"n\": 2}", "sec.n: key given twice"},
        {"{\"size_limt\": 5}", "sec.size_limt: unknown key (did you mean size_limit?)"},
        {"{\"zzz\": 5}", "sec.zzz: unknown key"},
        {"{\"n\": 11}", "sec.n: 11 is out of range [0, 10]"},
        {"{\"n\": 1.5}", "sec.n: expected an integer, got 1.5"},
        {"{\"ratio\": 2}", "sec.ratio: 2 is out of range [0, 1]"},
        {"{\"mode\": \"medium\"}", "sec.mode: must be \"fast\" or \"slow\""},
        {"{\"name\": \"\"}", "sec.name: must be a non-empty string"},
        {"[]", "sec: expected an object, got a list"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        opts p;
        memset(&p, 0, sizeof p);
        assert_int_equal(rt_settings_defaults(T, NT, &p, &err), RT_OK);
        cJSON *j = cJSON_Parse(cases[i].json);
        assert_non_null(j);
        err.msg[0] = '\0';
        rt_status st = rt_settings_json(T, NT, j, "sec", NULL, NULL, &p, &err);
        if (cases[i].want ? st == RT_OK || strcmp(err.msg, cases[i].want) != 0 : st != RT_OK)
            fail_msg("case %zu: got %d '%s', want '%s'", i, st, err.msg,
                     cases[i].want ? cases[i].want : "(ok)");
        if (i == 0)
            assert_true(p.n == 7 && p.size == 5 && p.on && !strcmp(p.name, "y") &&
                        p.big == INT64_C(1000000000000) && p.ratio == 0.25 && p.mode == 1);
        if (i == 1)
            assert_true(p.n == 3 && !strcmp(p.name, "x"));
        cJSON_Delete(j);
        rt_settings_free(T, NT, &p);
    }
    /* the first difference; copy of the given ones */
    opts q;
    memset(&q, 0, sizeof q);
    assert_int_equal(rt_settings_defaults(T, NT, &q, &err), RT_OK);
    assert_null(rt_settings_diff(T, NT, 0, &o, &q));
    q.ratio = 0.75;
    assert_string_equal(rt_settings_diff(T, NT, 0, &o, &q)->name, "ratio");
    assert_int_equal(rt_settings_copy(T, NT, UINT64_C(1) << 5, &o, &q, &err), RT_OK);
    assert_true(o.ratio == 0.75);
    rt_settings_free(T, NT, &q);
    rt_settings_free(T, NT, &o);
}

/* Parses argv (NULL-ended) with T; returns the status, *o the values. */
static rt_status parse(opts *o, bool dash, int *next, rt_err *err, ...)
{
    char *argv[16] = {"prog"};
    int argc = 1;
    va_list ap;
    va_start(ap, err);
    for (char *a; argc < 15 && (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    memset(o, 0, sizeof *o);
    assert_int_equal(rt_settings_defaults(T, NT, o, err), RT_OK);
    rt_argv spec = {.rows = T, .n = NT, .dash_underscore = dash, .dashdash = true};
    err->msg[0] = '\0';
    return rt_settings_argv(&spec, argc, argv, o, NULL, next, err);
}

static void test_argv(void **state)
{
    (void)state;
    opts o;
    rt_err err;
    int next = 0;
    assert_int_equal(parse(&o, false, &next, &err, "--n=4", "--size-limit", "9", "--on",
                           "--name", "z", "--ratio=0.125", "--mode", "fast", "rest", NULL),
                     RT_OK);
    assert_true(o.n == 4 && o.size == 9 && o.on && !strcmp(o.name, "z") && o.ratio == 0.125 &&
                o.mode == 1);
    assert_int_equal(next, 10); /* "rest": the caller's */
    rt_settings_free(T, NT, &o);
    /* an alias; "--" ends the flags */
    assert_int_equal(parse(&o, false, &next, &err, "--max-size=7", "--on=false", "--", "--n=1",
                           NULL),
                     RT_OK);
    assert_true(o.size == 7 && !o.on && o.n == 3 && next == 4);
    rt_settings_free(T, NT, &o);
    /* '-' and '_' alike only when asked */
    assert_int_equal(parse(&o, true, &next, &err, "--size_limit=8", "--max_size", "6", NULL),
                     RT_OK);
    assert_int_equal(o.size, 6);
    rt_settings_free(T, NT, &o);
    static const struct {
        const char *arg, *want;
    } bad[] = {
        {"--size_limit=8", "--size_limit: unknown flag (did you mean --size-limit?)"},
        {"--siz", "--siz: unknown flag (did you mean --size-limit?)"}, /* no abbreviations */
        {"--frobnicate", "--frobnicate: unknown flag (see --help)"},
        {"--n=11", "--n: 11 is out of range [0, 10]"},
        {"--n=x", "--n: \"x\" is not an integer"},
        {"--on=maybe", "--on: 'maybe' is not true or false"},
        {"--ratio=2", "--ratio: \"2\" is not a number in [0, 1]"},
        {"--mode=medium", "--mode: \"medium\" is not fast or slow"},
        {"--name=", "--name: must not be empty"},
        {"--n", "--n: needs a value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rt_status st = parse(&o, false, &next, &err, bad[i].arg, NULL);
        if (st == RT_OK || strcmp(err.msg, bad[i].want) != 0)
            fail_msg("%s: got %d '%s', want '%s'", bad[i].arg, st, err.msg, bad[i].want);
        rt_settings_free(T, NT, &o);
    }
}

/* A list flag takes each value in turn, up to .hi; with once, any other
 * flag given twice (or by its name and an alias) is refused. */
typedef struct lopts {
    rt_setting_list data;
    char *dir;
    bool all;
} lopts;

static const rt_setting L[] = {
    {.name = "data", .type = RT_SET_LIST, .where = RT_SET_FLAG, .hi = 3,
     .offset = offsetof(lopts, data), .arg = "FILE", .help = "a data file"},
    {.name = "dir", .aliases = "model-dir", .type = RT_SET_STR, .where = RT_SET_FLAG,
     .offset = offsetof(lopts, dir), .arg = "DIR", .help = "a directory"},
    {.name = "all", .type = RT_SET_BOOL, .where = RT_SET_FLAG, .offset = offsetof(lopts, all),
     .help = "everything"},
};
#define NL (sizeof L / sizeof L[0])

static rt_status lparse(lopts *o, rt_err *err, int argc, char **argv)
{
    rt_argv a = {.rows = L, .n = NL, .once = true};
    int next = 0;
    assert_int_equal(rt_settings_defaults(L, NL, o, err), RT_OK);
    rt_status st = rt_settings_argv(&a, argc, argv, o, NULL, &next, err);
    if (st == RT_OK)
        assert_int_equal(next, argc);
    return st;
}

static void test_list_and_once(void **state)
{
    (void)state;
    lopts o;
    rt_err err;
    char *ok[] = {"x", "--data", "a.csv", "--dir=d", "--data=b.csv", "--all", NULL};
    assert_int_equal(lparse(&o, &err, 6, ok), RT_OK);
    assert_int_equal(o.data.n, 2);
    assert_string_equal(o.data.v[0], "a.csv");
    assert_string_equal(o.data.v[1], "b.csv");
    assert_true(o.all && !strcmp(o.dir, "d"));
    rt_settings_free(L, NL, &o);
    assert_true(o.data.v == NULL && o.data.n == 0 && o.dir == NULL);
    static const struct {
        char *args[6];
        const char *want;
    } bad[] = {
        {{"x", "--data=a", "--data=b", "--data=c", "--data=d"}, "--data: given more than 3 times"},
        {{"x", "--data="}, "--data: must not be empty"},
        {{"x", "--dir=a", "--dir=b"}, "--dir: given twice"},
        {{"x", "--dir=a", "--model-dir=b"}, "--model-dir: given twice (--model-dir is --dir)"},
        {{"x", "--all", "--all"}, "--all: given twice"},
        {{"x", "--dta=a"}, "--dta: unknown flag (did you mean --data?)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int argc = 0;
        while (bad[i].args[argc])
            argc++;
        rt_status st = lparse(&o, &err, argc, (char **)bad[i].args);
        if (st == RT_OK || strcmp(err.msg, bad[i].want) != 0)
            fail_msg("case %zu: got %d '%s', want '%s'", i, st, err.msg, bad[i].want);
        rt_settings_free(L, NL, &o);
    }
    /* without once, the last value wins */
    rt_argv a = {.rows = L, .n = NL};
    char *twice[] = {"x", "--dir=a", "--dir=b", NULL};
    int next = 0;
    assert_int_equal(rt_settings_defaults(L, NL, &o, &err), RT_OK);
    assert_int_equal(rt_settings_argv(&a, 3, twice, &o, NULL, &next, &err), RT_OK);
    assert_string_equal(o.dir, "b");
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(rt_settings_help(&b, L, NL, 20, NULL, 0), 0);
    assert_non_null(strstr(b.data, "  --data=FILE...    a data file\n"));
    rt_buf_free(&b);
    rt_settings_free(L, NL, &o);
}

static void test_help_lines(void **state)
{
    (void)state;
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(rt_settings_help(&b, T, NT, 24, NULL, 0), 0);
    assert_non_null(b.data);
    static const char *const want[] = {
        "  --n=N                 a count (default 3)\n",
        "  --size-limit=N        a size (also --max-size) (default 100)\n",
        "  --on[=true|false]     a switch (default false)\n",
        "  --ratio=X             a ratio (default 0.5)\n",
        "  --mode=fast|slow      how (default slow)\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(b.data, want[i]))
            fail_msg("no '%s' in:\n%s", want[i], b.data);
    assert_null(strstr(b.data, "--big")); /* JSON only */
    rt_buf_free(&b);
}

/* The trainer's spec sections are tables: an unknown key of "train",
 * "eval" or an optimizer object is named with the nearest key; the rows'
 * defaults are trn_config_init's. */
static void test_trainer_sections(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"{\"train\": {\"batch_sise\": 8}}",
         "train.batch_sise: unknown key (did you mean batch_size?)"},
        {"{\"eval\": {\"step\": 8}}", "eval.step: unknown key (did you mean steps?)"},
        {"{\"train\": {\"on_bad_row\": \"skipp\"}}",
         "train.on_bad_row: must be \"skip\" or \"stop\""},
        {"{\"train\": {\"seed\": 1, \"seed\": 2}}", "train.seed: key given twice"},
        {"{\"estimator\": {\"type\": \"DNNClassifier\", \"optimizer\": "
         "{\"type\": \"Adam\", \"beta_1\": 0.5}}}",
         "estimator.optimizer.beta_1: unknown key (did you mean beta1?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *spec = cJSON_Parse(cases[i].spec);
        assert_non_null(spec);
        trn_config c;
        trn_config_init(&c);
        rt_err err;
        err.msg[0] = '\0';
        rt_status st = trn_config_from_spec(spec, &c, &err);
        if (st == RT_OK || strcmp(err.msg, cases[i].want) != 0)
            fail_msg("case %zu: got %d '%s', want '%s'", i, st, err.msg, cases[i].want);
        trn_config_free(&c);
        cJSON_Delete(spec);
    }
    trn_config c;
    trn_config_init(&c);
    assert_true(c.batch_size == 40 && c.shuffle_buffer_size == 1000 && c.seed == 42 &&
                c.save_checkpoints_secs == 600 && c.keep_checkpoint_max == 5 &&
                c.memory_limit_mb == -1 && c.mpi_stall_warn_secs == 60 &&
                c.bad_rows == TRN_BAD_ROW_STOP && c.throttle_secs == 600 &&
                c.gbdt.n_trees == 100 && c.gbdt.max_depth == 6 && c.gbdt.learning_rate == 0.1);
    trn_reader_params p = trn_reader_default_params();
    assert_true(p.batch_size == c.batch_size && p.seed == c.seed &&
                p.shuffle_buffer_size == c.shuffle_buffer_size);
    trn_config_free(&c);
}

/* ------------------------------------------- the programs' tables vs docs */

/* The output of BUILD/prog args (malloc'd). */
static char *run(const char *prog, const char *args)
{
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/%s %s 2>/dev/null", build, prog, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    rt_buf b;
    rt_buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        assert_int_equal(rt_buf_append(&b, chunk, n), 0);
    pclose(p);
    assert_int_equal(rt_buf_append(&b, "", 1), 0);
    return b.data;
}

/* The generated man page BUILD/man/page (malloc'd). */
static char *man_page(const char *page)
{
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    char path[1024];
    snprintf(path, sizeof path, "%s/man/%s", build, page);
    char *text = NULL;
    size_t len = 0;
    rt_err err;
    if (rt_file_read(AT_FDCWD, path, 16u << 20, 0, &text, &len, &err) != RT_OK)
        fail_msg("%s", err.msg);
    return text;
}

/* True when the roff text has word, its '-' written "\-" as man.sh does. */
static bool in_roff(const char *roff, const char *word)
{
    char esc[256];
    size_t k = 0;
    for (const char *p = word; *p && k + 3 < sizeof esc; p++) {
        if (*p == '-')
            esc[k++] = '\\';
        esc[k++] = *p;
    }
    esc[k] = '\0';
    return strstr(roff, esc) != NULL;
}

/* Every flag row of t (and its aliases) is in prog's --help; every flag row
 * is in page. */
static void walk(const char *prog, const rt_setting *t, size_t n, const char *page)
{
    char *help = run(prog, "--help"), *roff = man_page(page);
    size_t flags = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(t[i].where & RT_SET_FLAG))
            continue;
        char flag[128];
        snprintf(flag, sizeof flag, "--%s", t[i].flag ? t[i].flag : t[i].name);
        if (!strstr(help, flag))
            fail_msg("%s --help lacks %s", prog, flag);
        if (!in_roff(roff, flag))
            fail_msg("%s lacks %s", page, flag);
        for (const char *a = t[i].aliases; a && *a;) {
            size_t w = strcspn(a, " ");
            snprintf(flag, sizeof flag, "--%.*s", (int)w, a);
            if (!strstr(help, flag) || !in_roff(roff, flag))
                fail_msg("%s: alias %s not in --help and %s", prog, flag, page);
            a += w + strspn(a + w, " ");
        }
        flags++;
    }
    assert_true(flags > 0);
    free(help);
    free(roff);
}

static void test_tables_in_help_and_man(void **state)
{
    (void)state;
    size_t n;
    const rt_setting *t = srv_settings(&n);
    walk("predictd", t, n, "predictd.8");
    /* predictd's config keys: --help_config and predictd.json(5) */
    char *keys = run("predictd", "--help_config"), *roff = man_page("predictd.json.5");
    for (size_t i = 0; i < n; i++)
        if (t[i].where & RT_SET_JSON) {
            /* a key of a section ("tracing") is listed as section.key */
            char line[160];
            snprintf(line, sizeof line, "\n  %s%s%s  (", t[i].section ? t[i].section : "",
                     t[i].section ? "." : "", t[i].name);
            if (!strstr(keys, line) || !in_roff(roff, t[i].name))
                fail_msg("config key %s not in --help_config and predictd.json.5", t[i].name);
        }
    free(keys);
    free(roff);
    t = trn_flag_settings(&n);
    walk("predict-train", t, n, "predict-train.1");
    t = tun_flag_settings(&n);
    walk("predict-tune", t, n, "predict-tune.1");
    t = srv_ctl_flag_settings(&n);
    walk("predictctl", t, n, "predictctl.8");
    /* predict-model: a table per command, walked against COMMAND --help */
    static const char *const cmds[] = {"show",     "predict", "transform", "evaluate",
                                       "explain",  "stats",   "validate",  "convert",
                                       "batch-predict"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const pm_command *c = pm_command_find(cmds[i]);
        assert_non_null(c);
        char prog[64];
        snprintf(prog, sizeof prog, "predict-model %s", cmds[i]);
        walk(prog, c->flags, c->n_flags, "predict-model.1");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_json),
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_list_and_once),
        cmocka_unit_test(test_help_lines),
        cmocka_unit_test(test_trainer_sections),
        cmocka_unit_test(test_tables_in_help_and_man),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
