/* test_pm_args.c — predict-model's command line (pmodel/pm_args.c,
 * pm_commands.c): the flags of each command read by its table into pm_opts,
 * the checks between flags with their exact messages, the usage printed after
 * a usage error (synopsis lines, the --help pointer), and the command lookup.
 * Each refusal is checked by its exit status (PM_EXIT_USAGE) and the text it
 * writes to stderr, captured through a temporary file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pm.h"
#include "support_stderr.h"

static char captured[16384];

/* Runs pm_opts_read on argv (NULL-terminated: "predict-model", the command,
 * its flags) with stderr captured into `captured`; returns its status. */
static int read_opts(const pm_command *c, const char *const *argv, pm_opts *o)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    support_capture cap = support_stderr_begin();
    int rc = pm_opts_read(c, argc, (char **)argv, o);
    support_stderr_end(cap, captured, sizeof captured);
    return rc;
}

/* The first line of what was captured. */
static const char *first_line(void)
{
    static char line[1024];
    size_t n = strcspn(captured, "\n");
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, captured, n);
    line[n] = '\0';
    return line;
}

/* argv must be refused with exactly "predict-model CMD: msg" first. */
static void refused(const pm_command *c, const char *const *argv, const char *msg)
{
    pm_opts o;
    assert_int_equal(read_opts(c, argv, &o), PM_EXIT_USAGE);
    char want[1024];
    snprintf(want, sizeof want, "predict-model %s: %s", c->name, msg);
    assert_string_equal(first_line(), want);
}

static void test_args_parsed_into_opts(void **state)
{
    (void)state;
    pm_opts o;
    const char *argv[] = {"predict-model", "evaluate",     "--model-dir", "/m",     "--data",
                          "a.csv",         "--data=b.csv", "--slice",     "gender", "--format",
                          "json",          "--batch-size", "32",          NULL};
    assert_int_equal(read_opts(&pm_evaluate_command, argv, &o), 0);
    assert_string_equal(captured, "");
    assert_string_equal(o.cmd, "evaluate");
    assert_ptr_equal(o.command, &pm_evaluate_command);
    assert_string_equal(o.dir, "/m"); /* --model-dir is --dir's alias */
    assert_int_equal(o.data.n, 2);
    assert_string_equal(o.data.v[0], "a.csv");
    assert_string_equal(o.data.v[1], "b.csv");
    assert_int_equal(o.slices.n, 1);
    assert_string_equal(o.slices.v[0], "gender");
    assert_string_equal(o.format, "json");
    assert_string_equal(o.batch_size, "32");
    assert_null(o.report);
    assert_false(o.help);
    pm_opts_free(&o);

    const char *show[] = {"predict-model", "show", "--dir", "/m", "--all", NULL};
    assert_int_equal(read_opts(&pm_show_command, show, &o), 0);
    assert_true(o.all);
    assert_null(o.signature);
    pm_opts_free(&o);

    /* --help stops the checks: no --dir needed */
    const char *help[] = {"predict-model", "predict", "--help", NULL};
    assert_int_equal(read_opts(&pm_predict_command, help, &o), 0);
    assert_true(o.help);
    pm_opts_free(&o);
}

static void test_args_formats(void **state)
{
    (void)state;
    pm_opts o;
    /* each command takes its own --format names */
    static const struct {
        const pm_command *c;
        const char *fmt;
        int ok;
    } cases[] = {
        {&pm_predict_command, "table", 1},  {&pm_predict_command, "json", 1},
        {&pm_predict_command, "text", 0},   {&pm_transform_command, "text", 1},
        {&pm_transform_command, "json", 1}, {&pm_transform_command, "table", 0},
        {&pm_explain_command, "table", 1},  {&pm_explain_command, "csv", 0},
        {&pm_evaluate_command, "table", 1}, {&pm_validate_command, "JSON", 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const pm_command *c = cases[k].c;
        const char *argv[16] = {"predict-model", c->name, "--dir", "/m", "--format", cases[k].fmt};
        size_t n = 6;
        if (c == &pm_evaluate_command || c == &pm_validate_command) {
            argv[n++] = "--data";
            argv[n++] = "d.csv";
        } else {
            argv[n++] = "--json-instances";
            argv[n++] = "i.json";
        }
        argv[n] = NULL;
        int rc = read_opts(c, argv, &o);
        if (cases[k].ok) {
            assert_int_equal(rc, 0);
            pm_opts_free(&o);
        } else {
            char want[256];
            snprintf(want, sizeof want, "predict-model %s: unknown --format \"%s\"", c->name,
                     cases[k].fmt);
            assert_int_equal(rc, PM_EXIT_USAGE);
            assert_string_equal(first_line(), want);
        }
    }
}

static void test_args_checks_between_flags(void **state)
{
    (void)state;
    const pm_command *P = &pm_predict_command, *S = &pm_stats_command, *X = &pm_explain_command;
    refused(P, (const char *[]){"predict-model", "predict", "--json-instances", "i", NULL},
            "missing --dir EXPORT (or --model-dir EXPORT)");
    refused(S, (const char *[]){"predict-model", "stats", NULL},
            "missing --dir EXPORT (or --spec SPEC)");
    refused(S, (const char *[]){"predict-model", "stats", "--dir", "/m", "--spec", "s", NULL},
            "--dir and --spec: give one of them");
    refused(S, (const char *[]){"predict-model", "stats", "--spec", "s", NULL},
            "--spec SPEC needs --data FILE.csv");
    refused(P, (const char *[]){"predict-model", "predict", "--dir", "/m", NULL},
            "missing --json-instances FILE (or --v2-request FILE)");
    refused(P,
            (const char *[]){"predict-model", "predict", "--dir", "/m", "--json-instances", "i",
                             "--v2-request", "r", NULL},
            "--json-instances and --v2-request: give one of them");
    refused(P,
            (const char *[]){"predict-model", "predict", "--dir", "/m", "--json-instances", "i",
                             "--model-name", "n", NULL},
            "--v2-header-length and --model-name go with --v2-request");
    refused(P,
            (const char *[]){"predict-model", "predict", "--dir", "/m", "--v2-request", "r",
                             "--format", "json", NULL},
            "--v2-request prints the v2 answer: no --format or --signature_def");
    refused(&pm_transform_command,
            (const char *[]){"predict-model", "transform", "--dir", "/m", NULL},
            "missing --json-instances FILE");
    refused(X, (const char *[]){"predict-model", "explain", "--dir", "/m", NULL},
            "give one of --json-instances FILE and --json-request FILE");
    refused(X,
            (const char *[]){"predict-model", "explain", "--dir", "/m", "--json-instances", "i",
                             "--json-request", "r", NULL},
            "give one of --json-instances FILE and --json-request FILE");
    refused(X,
            (const char *[]){"predict-model", "explain", "--dir", "/m", "--json-instances", "i",
                             "--method", "shap", NULL},
            "--method: give exact, sampled, gradients or tree-shap");
    refused(X,
            (const char *[]){"predict-model", "explain", "--dir", "/m", "--json-instances", "i",
                             "--method", "exact", "--explanation-spec-override", "o", NULL},
            "--method goes with --json-instances and without --explanation-spec-override "
            "(which names the method itself)");
    refused(X,
            (const char *[]){"predict-model", "explain", "--dir", "/m", "--json-request", "r",
                             "--explanation-spec-override", "o", NULL},
            "--explanation-spec-override goes with --json-instances (a --json-request body "
            "holds its own)");
    refused(&pm_evaluate_command,
            (const char *[]){"predict-model", "evaluate", "--dir", "/m", NULL},
            "missing --data FILE.csv");
    refused(&pm_validate_command,
            (const char *[]){"predict-model", "validate", "--dir", "/m", NULL},
            "missing --data FILE.csv");
    refused(&pm_show_command,
            (const char *[]){"predict-model", "show", "--dir", "/m", "--all", "--signature_def",
                             "s", NULL},
            "--all and --signature_def: give one of them");
    /* the four methods --method names are taken */
    static const char *const methods[] = {"exact", "sampled", "gradients", "tree-shap"};
    for (size_t k = 0; k < 4; k++) {
        pm_opts o;
        const char *argv[] = {"predict-model", "explain",  "--dir", "/m", "--json-instances", "i",
                              "--method",      methods[k], NULL};
        assert_int_equal(read_opts(X, argv, &o), 0);
        assert_string_equal(o.xai_method, methods[k]);
        pm_opts_free(&o);
    }
}

static void test_args_table_refusals(void **state)
{
    (void)state;
    const pm_command *P = &pm_predict_command;
    refused(P, (const char *[]){"predict-model", "predict", "--dir", "x", "--dir", "y", NULL},
            "--dir: given twice");
    refused(P, (const char *[]){"predict-model", "predict", "--dri", "x", NULL},
            "--dri: unknown flag (did you mean --dir?)");
    refused(&pm_show_command, (const char *[]){"predict-model", "show", "--format", "json", NULL},
            "--format: unknown flag (see --help)");
    refused(&pm_show_command,
            (const char *[]){"predict-model", "show", "--dir", "x", "extra", NULL},
            "unexpected argument \"extra\"");
    refused(P, (const char *[]){"predict-model", "predict", "--dir", "x", "--json-instances", NULL},
            "--json-instances: needs a value");
}

/* After the message: the command's usage, every synopsis line, and where
 * --help is, to the letter. */
static void test_args_usage_text(void **state)
{
    (void)state;
    pm_opts o;
    const char *argv[] = {"predict-model", "predict", "--dir", "/m", "--json-instances", "i",
                          "--format",      "text",    NULL};
    assert_int_equal(read_opts(&pm_predict_command, argv, &o), PM_EXIT_USAGE);
    assert_string_equal(captured,
                        "predict-model predict: unknown --format \"text\"\n"
                        "usage: predict-model predict --dir EXPORT --json-instances FILE\n"
                        "                             [--format table|json] [--signature_def "
                        "NAME]\n"
                        "       predict-model predict --dir EXPORT --v2-request FILE\n"
                        "                             [--v2-header-length N] [--model-name "
                        "NAME]\n"
                        "(predict-model predict --help: every flag)\n");
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(pm_put_synopsis(&b, &pm_show_command, "> "), 0);
    assert_string_equal(b.data, "> predict-model show --dir EXPORT [--all | --signature_def "
                                "NAME]\n");
    rt_buf_free(&b);
}

static void test_args_command_find(void **state)
{
    (void)state;
    static const char *const names[] = {"show",  "predict",  "transform", "evaluate",     "explain",
                                        "stats", "validate", "convert",   "batch-predict"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const pm_command *c = pm_command_find(names[k]);
        assert_non_null(c);
        assert_string_equal(c->name, names[k]);
        assert_true(c->n_flags > 0);
    }
    assert_ptr_equal(pm_command_find("validate"), &pm_validate_command);
    assert_null(pm_command_find("nope"));
    assert_null(pm_command_find("Show"));
    assert_null(pm_command_find(""));
}

/* pm_main on argv, stderr captured. */
static int run_main(const char *const *argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    support_capture cap = support_stderr_begin();
    int rc = pm_main(argc, (char **)argv);
    support_stderr_end(cap, captured, sizeof captured);
    return rc;
}

/* The dispatch: a mistyped command gets the nearest name, a missing one the
 * usage of every command; a command's own refusal comes through. */
static void test_args_dispatch(void **state)
{
    (void)state;
    assert_int_equal(run_main((const char *[]){"predict-model", "shwo", NULL}), PM_EXIT_USAGE);
    assert_string_equal(first_line(),
                        "predict-model: unknown command \"shwo\" (did you mean show?)");
    assert_int_equal(run_main((const char *[]){"predict-model", "frobnicate", NULL}),
                     PM_EXIT_USAGE);
    assert_string_equal(first_line(), "predict-model: unknown command \"frobnicate\"");
    assert_int_equal(run_main((const char *[]){"predict-model", NULL}), PM_EXIT_USAGE);
    assert_string_equal(first_line(), "predict-model: missing command");
    /* every command's usage follows, then the --help line */
    static const char *const cmds[] = {"show",  "predict",  "transform", "evaluate",     "explain",
                                       "stats", "validate", "convert",   "batch-predict"};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        char want[64];
        snprintf(want, sizeof want, " predict-model %s ", cmds[k]);
        assert_non_null(strstr(captured, want));
    }
    assert_non_null(strstr(captured, "       predict-model COMMAND --help\n"));
    assert_int_equal(run_main((const char *[]){"predict-model", "transform", "--dir", "/m", NULL}),
                     PM_EXIT_USAGE);
    assert_string_equal(first_line(), "predict-model transform: missing --json-instances FILE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args_parsed_into_opts),
        cmocka_unit_test(test_args_formats),
        cmocka_unit_test(test_args_checks_between_flags),
        cmocka_unit_test(test_args_table_refusals),
        cmocka_unit_test(test_args_usage_text),
        cmocka_unit_test(test_args_command_find),
        cmocka_unit_test(test_args_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
