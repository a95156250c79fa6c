/*
 * pm_commands.c — predict-model's commands, the top of the module: the list
 * of every command (its table, pm_args.c's or its own file's, and the
 * function that runs it), the top-level usage made of their usage lines,
 * "did you mean" for a mistyped command, and the dispatch from argv to a
 * command. Calls go one way: this file -> the command files and pm_args.c;
 * they never call back (a command prints its own usage errors and help by
 * pm_args.c's helpers).
 */
#include "pm.h"

#include <stdio.h>
#include <string.h>

/* A command and what runs it: show ... validate get their flags read into
 * a pm_opts here (run); convert and batch-predict read their own, argv
 * from the command's name on (run_argv). */
typedef struct pm_entry {
    const pm_command *command;
    int (*run)(const pm_opts *o);
    int (*run_argv)(int argc, char **argv);
} pm_entry;

/* In the order of the top-level usage. */
static const pm_entry COMMANDS[] = {
    {&pm_show_command, pm_cmd_show, NULL},
    {&pm_predict_command, pm_cmd_predict, NULL},
    {&pm_transform_command, pm_cmd_transform, NULL},
    {&pm_evaluate_command, pm_cmd_evaluate, NULL},
    {&pm_explain_command, pm_cmd_explain, NULL},
    {&pm_stats_command, pm_cmd_stats, NULL},
    {&pm_validate_command, pm_cmd_validate, NULL},
    {&pm_convert_command, NULL, pm_cmd_convert},
    {&pm_batch_command, NULL, pm_cmd_batch_predict},
    {&pm_import_command, NULL, pm_cmd_import},
};

#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static const pm_entry *find(const char *name)
{
    for (size_t i = 0; name && i < N_COMMANDS; i++)
        if (!strcmp(COMMANDS[i].command->name, name))
            return &COMMANDS[i];
    return NULL;
}

const pm_command *pm_command_find(const char *name)
{
    const pm_entry *e = find(name);
    return e ? e->command : NULL;
}

/* Every command's usage lines (the top-level usage). */
static int put_usage(rt_buf *b)
{
    int r = 0;
    for (size_t i = 0; i < N_COMMANDS; i++)
        r |= pm_put_synopsis(b, COMMANDS[i].command, i ? "       " : "usage: ");
    return r | rt_buf_puts(b, "       predict-model COMMAND --help\n"
                              "--model-dir is another name of --dir in every command.\n");
}

/* Prints "predict-model: msg" (msg a printf format of one string) and the
 * top-level usage to stderr; returns PM_EXIT_USAGE. */
static int usage_error(const char *fmt, const char *arg)
{
    rt_buf b;
    rt_buf_init(&b);
    int r = rt_buf_puts(&b, "predict-model: ");
    r |= rt_buf_printf(&b, fmt, arg);
    r |= rt_buf_puts(&b, "\n");
    r |= put_usage(&b);
    fputs(r ? "predict-model: out of memory\n" : b.data, stderr);
    rt_buf_free(&b);
    return PM_EXIT_USAGE;
}

/* "unknown command", with the nearest command's name when one is near. */
static int unknown_command(const char *name)
{
    const char *names[N_COMMANDS];
    for (size_t i = 0; i < N_COMMANDS; i++)
        names[i] = COMMANDS[i].command->name;
    const char *near = rt_settings_nearest_name(name, names, N_COMMANDS);
    char msg[160];
    snprintf(msg, sizeof msg, "unknown command \"%%s\"%s%s%s", near ? " (did you mean " : "",
             near ? near : "", near ? "?)" : "");
    return usage_error(msg, name);
}

int pm_main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("%s", "missing command");
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        rt_buf b;
        rt_buf_init(&b);
        fputs(put_usage(&b) ? "predict-model: out of memory\n" : b.data, stdout);
        rt_buf_free(&b);
        return 0;
    }
    const pm_entry *e = find(name);
    if (!e)
        return unknown_command(name);
    if (e->run_argv)
        return e->run_argv(argc, argv);
    pm_opts o;
    int rc = pm_opts_read(e->command, argc, argv, &o);
    if (rc)
        return rc;
    if (o.help)
        pm_command_help(o.command);
    else
        rc = e->run(&o);
    pm_opts_free(&o);
    return rc;
}
