/*
 * srv_names.c — what a model name and a version number look like, the one
 * spelling every part of predictd checks them by: URLs (srv_router.c), the
 * config's models list (srv_config_models.c), traffic splits
 * (srv_rollout.c), the tokens file (srv_auth_file.c), the daemon's settings
 * (srv_config.c) and predictctl. It calls nothing of the server.
 */
#include "srv.h"

#include <stdbool.h>
#include <stdint.h>

bool srv_name_valid(const char *name, size_t len)
{
    if (!name || len == 0 || len > SRV_NAME_MAX)
        return false;
    if (name[0] == '.')
        return false; /* no ".", "..", hidden names */
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

int64_t srv_parse_version(const char *s, size_t len)
{
    if (!s || len == 0 || len > 18)
        return -1; /* 18 digits always fit in int64 */
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}
