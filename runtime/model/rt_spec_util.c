/*
 * rt_spec_util.c — helpers of the spec reader: copies, names and lookups
 * (typed getters and path-named errors are rt_cfg.c's, shared with the
 * trainer's sections).
 */
#include "rt_model.h"
#include "rt_spec_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* ------------------------------------------------------------ helpers */

char *rt_spec_strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Copies s, without leading/trailing white space when trim is set. */
char *rt_spec_dup_trimmed(const char *s, bool trim)
{
    size_t n = strlen(s);
    if (trim)
        s = rt_buf_trim_span(s, &n);
    return rt_spec_strndup(s, n);
}

bool rt_spec_valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RT_SPEC_MAX_NAME)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || (i > 0 && (c == '.' || c == '-'));
        if (!ok)
            return false;
    }
    return true;
}

rt_status rt_spec_check_name(const char *s, const char *path, const char *key, rt_err *err)
{
    if (!rt_spec_valid_name(s))
        return rt_cfg_fail(err, path, key,
                           "\"%.64s\" is not a valid name (1..%d characters of A-Z a-z 0-9 _ . -, "
                           "not starting with . or -)",
                           s, RT_SPEC_MAX_NAME);
    return RT_OK;
}

long rt_spec_find_fc(const Predictd__ModelDef *def, const char *name)
{
    for (size_t i = 0; i < def->n_feature_columns; i++)
        if (strcmp(def->feature_columns[i]->name, name) == 0)
            return (long)i;
    return -1;
}

