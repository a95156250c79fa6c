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

/* Replaces the protobuf string *dst (freed unless it is protobuf-c's empty
 * default) by a copy of src; RT_ERR_NOMEM leaves *dst as it was. */
rt_status rt_spec_set_str(char **dst, const char *src, rt_err *err)
{
    char *t = rt_spec_strndup(src, strlen(src));
    if (!t)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if (*dst && *dst != protobuf_c_empty_string)
        free(*dst);
    *dst = t;
    return RT_OK;
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

