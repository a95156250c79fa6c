/*
 * fuzz_config.c — fuzzes the daemon's configuration: the JSON config file
 * parser (srv_config_parse) and the command-line flags (srv_args_parse,
 * then srv_config_build for --model_name/--model_base_path).
 *
 * Input: a config file's text, or, when it starts with "--", command-line
 * flags one per line. Checked on every accepted config, besides the
 * sanitizers: names and labels are valid names, base paths are absolute
 * when a base directory was given, "specific" versions are sorted and
 * unique, a default label is one of the labels, every model is found by
 * name, the limits are inside their documented ranges.
 */
#include "fz_util.h"
#include "srv.h"

#include <stdlib.h>
#include <string.h>

#define FZ_CONFIG_MAX (64u << 10)
#define FZ_MAX_ARGS 32

static void check_config(const srv_config *c, bool based)
{
    FZ_CHECK(c->rest_api_host && c->rest_api_host[0], "no rest_api_host");
    FZ_CHECK(c->rest_api_port >= 0 && c->rest_api_port <= 65535, "port out of range");
    FZ_CHECK(c->max_request_bytes >= 1, "max_request_bytes < 1");
    FZ_CHECK(c->n_models == 0 || c->models, "models missing");
    for (size_t i = 0; i < c->n_models; i++) {
        const srv_model_conf *mc = &c->models[i];
        FZ_CHECK(mc->name && srv_name_valid(mc->name, strlen(mc->name)), "invalid model name");
        FZ_CHECK(srv_config_find_model(c, mc->name) == mc, "model not found by its name");
        FZ_CHECK(mc->base_path && mc->base_path[0], "empty base_path");
        if (based)
            FZ_CHECK(mc->base_path[0] == '/', "relative base_path with a base directory");
        if (mc->policy == SRV_POLICY_LATEST)
            FZ_CHECK(mc->latest_n >= 1, "latest policy of 0 versions");
        if (mc->policy == SRV_POLICY_SPECIFIC) {
            FZ_CHECK(mc->n_specific >= 1 && mc->specific, "empty specific policy");
            for (size_t k = 0; k < mc->n_specific; k++) {
                FZ_CHECK(mc->specific[k] >= 0, "negative specific version");
                if (k > 0)
                    FZ_CHECK(mc->specific[k] > mc->specific[k - 1], "specific not sorted/unique");
            }
        }
        for (size_t k = 0; k < mc->n_labels; k++) {
            const srv_label *l = &mc->labels[k];
            FZ_CHECK(l->name && srv_name_valid(l->name, strlen(l->name)), "invalid label name");
            FZ_CHECK(l->version >= 0, "label on a negative version");
            for (size_t j = 0; j < k; j++)
                FZ_CHECK(strcmp(mc->labels[j].name, l->name) != 0, "label given twice");
        }
        FZ_CHECK(mc->default_version >= -1, "default_version below -1");
        if (mc->default_label) {
            bool found = false;
            for (size_t k = 0; k < mc->n_labels; k++)
                found = found || !strcmp(mc->labels[k].name, mc->default_label);
            FZ_CHECK(found, "default label not among the labels");
        }
    }
}

static void fuzz_file(const char *text, size_t len)
{
    srv_config *c = NULL;
    rt_err err;
    err.msg[0] = '\0';
    rt_status st = srv_config_parse(text, len, "/etc/predictd", &c, &err);
    fz_note("srv_config_parse", st, &err);
    if (st == RT_OK) {
        check_config(c, true);
        srv_config_free(c);
        c = NULL;
    } else {
        FZ_CHECK(err.msg[0] != '\0', "refused config without a message");
        FZ_CHECK(c == NULL, "refused config returned");
    }
    if (srv_config_parse(text, len, NULL, &c, &err) == RT_OK) {
        check_config(c, false);
        srv_config_free(c);
    }
}

static void fuzz_flags(char *text)
{
    char *argv[FZ_MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = "predictd";
    for (char *line = text; line && argc < FZ_MAX_ARGS;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        argv[argc++] = line;
        line = nl ? nl + 1 : NULL;
    }
    argv[argc] = NULL;
    srv_args args;
    rt_err err;
    err.msg[0] = '\0';
    rt_status st = srv_args_parse(argc, argv, &args, &err);
    fz_note("srv_args_parse", st, &err);
    if (st != RT_OK) {
        FZ_CHECK(err.msg[0] != '\0', "refused flags without a message");
    } else if (!srv_args_given(&args, "model_config_file")) {
        /* A config file named by the input is not read: the fuzzer must not
         * open arbitrary paths (a FIFO would block it). */
        srv_config *c = NULL;
        st = srv_config_build(&args, &c, &err);
        fz_note("srv_config_build", st, &err);
        if (st == RT_OK) {
            check_config(c, false);
            srv_config_free(c);
        } else {
            FZ_CHECK(err.msg[0] != '\0', "refused flags without a message");
        }
    }
    srv_args_free(&args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_CONFIG_MAX)
        return 0;
    char *text = fz_cstr(data, size);
    if (!text)
        return 0;
    if (size >= 2 && text[0] == '-' && text[1] == '-')
        fuzz_flags(text);
    else
        fuzz_file(text, size);
    free(text);
    return 0;
}
