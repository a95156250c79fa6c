/*
 * srv_ctl_flags.c — predictctl's flags as a settings table (rt_settings.c):
 * main_predictctl.c reads its command line, prints --help and suggests
 * flags from it, and tests walk it against --help and the man page.
 */
#include "srv.h"

#include <stddef.h>

#define CF(f, T) \
    (offsetof(srv_ctl_flags, f) +                                                               \
     0 * sizeof(char[_Generic(((srv_ctl_flags *)0)->f, T: 1, default: -1)]))

static const rt_setting FLAGS[] = {
    {.name = "config", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = CF(config, char *),
     .def_str = "/etc/predictd/predictd.json", .arg = "FILE", .help = "the daemon's config file"},
    {.name = "url", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = CF(url, char *), .arg = "URL",
     .help = "the daemon, http[s]://HOST:PORT (default: the config file's; https when it sets "
             "tls_cert_file)"},
    {.name = "timeout", .type = RT_SET_INT, .where = RT_SET_FLAG, .lo = 1, .hi = 3600, .def = 15,
     .offset = CF(timeout, int), .arg = "SECONDS",
     .help = "wait for another edit and the verdict, 1..3600"},
    {.name = "json", .type = RT_SET_BOOL, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = CF(json, bool), .help = "status: the daemon's JSON answer instead of the table"},
    {.name = "token_file", .aliases = "token-file", .type = RT_SET_STR,
     .where = RT_SET_FLAG | RT_SET_NODEFAULT, .offset = CF(token_file, char *), .arg = "FILE",
     .help = "send the bearer token this file holds (daemons with auth_tokens_file)"},
    {.name = "cacert", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = CF(cacert, char *), .arg = "FILE",
     .help = "verify an HTTPS daemon's certificate with this CA (default: the system's)"},
    {.name = "cert", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = CF(cert, char *), .arg = "FILE",
     .help = "present this PEM client certificate (daemons with tls_client_ca_file; needs "
             "--key)"},
    {.name = "key", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = CF(key, char *), .arg = "FILE", .help = "the PEM private key of --cert"},
    {.name = "grpc", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = CF(grpc, char *), .arg = "HOST:PORT",
     .help = "ready and status MODEL over the daemon's gRPC port (--port): gRPC's "
             "Health/Check, TF Serving's GetModelStatus; TLS with --cacert or --cert"},
};

const rt_setting *srv_ctl_flag_settings(size_t *n)
{
    *n = sizeof FLAGS / sizeof FLAGS[0];
    return FLAGS;
}
