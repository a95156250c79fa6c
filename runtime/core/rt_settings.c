/*
 * rt_settings.c — a program's settings from one table (rt_setting rows: name,
 * type, range, default, offset into the program's struct, flag spellings,
 * help). From the table come the defaults, the JSON keys (errors naming the
 * path, duplicate keys refused, null = absent), the command-line flags
 * (--x=y, --x y, a bool flag alone; task.py's and TF's spellings as
 * aliases), --help lines with their defaults, "did you mean" for an unknown
 * key or flag, and the first difference between two structs (what a reload
 * must restart for). predictd, predict-train, predict-tune and predictctl
 * each keep one table, predict-model one per command; adding a setting is
 * one row there.
 */
#include "rt_core.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* ------------------------------------------------------------- fields */

/* The field of obj that s fills (obj may be const: read it so). */
static void *field(const void *obj, const rt_setting *s)
{
    return (char *)(uintptr_t)obj + s->offset;
}

static bool is_string(const rt_setting *s)
{
    return s->type == RT_SET_STR || s->type == RT_SET_NAME;
}

static bool is_integer(const rt_setting *s)
{
    return s->type == RT_SET_INT || s->type == RT_SET_SIZE || s->type == RT_SET_I64 ||
           s->type == RT_SET_U64;
}

/* Stores an integer already range-checked against s. */
static void put_int(void *obj, const rt_setting *s, int64_t v)
{
    switch (s->type) {
    case RT_SET_INT:
        *(int *)field(obj, s) = (int)v;
        break;
    case RT_SET_SIZE:
        *(size_t *)field(obj, s) = (size_t)v;
        break;
    case RT_SET_I64:
        *(int64_t *)field(obj, s) = v;
        break;
    case RT_SET_U64:
        *(uint64_t *)field(obj, s) = (uint64_t)v;
        break;
    default:
        break;
    }
}

static int64_t get_int(const void *obj, const rt_setting *s)
{
    switch (s->type) {
    case RT_SET_INT:
        return *(const int *)field(obj, s);
    case RT_SET_SIZE:
        return (int64_t) * (const size_t *)field(obj, s);
    case RT_SET_I64:
        return *(const int64_t *)field(obj, s);
    case RT_SET_U64:
        return (int64_t) * (const uint64_t *)field(obj, s);
    case RT_SET_BOOL:
        return *(const bool *)field(obj, s);
    case RT_SET_ENUM:
        return *(const int *)field(obj, s);
    default:
        return 0;
    }
}

/* Replaces the string field of s with a copy of v (NULL clears it). */
static rt_status set_string(void *obj, const rt_setting *s, const char *v, rt_err *err)
{
    char **p = field(obj, s);
    char *copy = NULL;
    if (v && !(copy = strdup(v)))
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", s->name);
    free(*p);
    *p = copy;
    return RT_OK;
}

rt_status rt_settings_defaults(const rt_setting *t, size_t n, void *obj, rt_err *err)
{
    for (size_t i = 0; i < n; i++) {
        const rt_setting *s = &t[i];
        if (is_integer(s) || s->type == RT_SET_BOOL || s->type == RT_SET_ENUM) {
            if (s->type == RT_SET_BOOL)
                *(bool *)field(obj, s) = s->def != 0;
            else if (s->type == RT_SET_ENUM)
                *(int *)field(obj, s) = (int)s->def;
            else
                put_int(obj, s, s->def);
        } else if (s->type == RT_SET_NUM) {
            *(double *)field(obj, s) = s->ddef;
        } else if (is_string(s)) {
            char **p = field(obj, s);
            *p = NULL;
            if (set_string(obj, s, s->def_str, err) != RT_OK)
                return RT_ERR_NOMEM;
        } else if (s->type == RT_SET_LIST) {
            rt_setting_list *l = field(obj, s);
            l->v = NULL;
            l->n = 0;
        }
    }
    return RT_OK;
}

void rt_settings_free(const rt_setting *t, size_t n, void *obj)
{
    for (size_t i = 0; i < n; i++)
        if (is_string(&t[i])) {
            char **p = field(obj, &t[i]);
            free(*p);
            *p = NULL;
        } else if (t[i].type == RT_SET_LIST) {
            rt_setting_list *l = field(obj, &t[i]);
            for (size_t k = 0; k < l->n; k++)
                free(l->v[k]);
            free(l->v);
            l->v = NULL;
            l->n = 0;
        }
}

/* Appends a copy of v to the list field of s ("--f: given more than N
 * times" past .hi). */
static rt_status list_add(void *obj, const rt_setting *s, const char *f, const char *v,
                          rt_err *err)
{
    rt_setting_list *l = field(obj, s);
    if (s->hi > 0 && (int64_t)l->n >= s->hi)
        return rt_err_set(err, RT_ERR_INVALID, "--%s: given more than %lld times", f,
                          (long long)s->hi);
    char **v2 = realloc(l->v, (l->n + 1) * sizeof *v2);
    if (!v2)
        return rt_err_set(err, RT_ERR_NOMEM, "--%s: out of memory", f);
    l->v = v2;
    if (!(v2[l->n] = strdup(v)))
        return rt_err_set(err, RT_ERR_NOMEM, "--%s: out of memory", f);
    l->n++;
    return RT_OK;
}

rt_status rt_settings_copy(const rt_setting *t, size_t n, uint64_t mask, void *dst,
                           const void *src, rt_err *err)
{
    for (size_t i = 0; i < n && i < 64; i++) {
        const rt_setting *s = &t[i];
        if (!(mask >> i & 1) || s->type == RT_SET_CUSTOM || s->type == RT_SET_LIST)
            continue;
        if (is_string(s)) {
            if (set_string(dst, s, *(char *const *)field(src, s), err) != RT_OK)
                return RT_ERR_NOMEM;
        } else if (s->type == RT_SET_NUM) {
            *(double *)field(dst, s) = *(const double *)field(src, s);
        } else if (s->type == RT_SET_BOOL) {
            *(bool *)field(dst, s) = *(const bool *)field(src, s);
        } else if (s->type == RT_SET_ENUM) {
            *(int *)field(dst, s) = *(const int *)field(src, s);
        } else {
            put_int(dst, s, get_int(src, s));
        }
    }
    return RT_OK;
}

const rt_setting *rt_settings_diff(const rt_setting *t, size_t n, unsigned skip, const void *a,
                                   const void *b)
{
    for (size_t i = 0; i < n; i++) {
        const rt_setting *s = &t[i];
        bool same;
        if ((s->where & skip) || s->type == RT_SET_CUSTOM || s->type == RT_SET_LIST)
            continue;
        if (is_string(s)) {
            const char *x = *(char *const *)field(a, s), *y = *(char *const *)field(b, s);
            same = !x == !y && (!x || !strcmp(x, y));
        } else if (s->type == RT_SET_NUM) {
            same = *(const double *)field(a, s) == *(const double *)field(b, s);
        } else {
            same = get_int(a, s) == get_int(b, s);
        }
        if (!same)
            return s;
    }
    return NULL;
}

const rt_setting *rt_settings_find(const rt_setting *t, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (!strcmp(t[i].name, name))
            return &t[i];
    return NULL;
}

/* ------------------------------------------------------------ choices */

/* The choice of s named name, or NULL. */
static const rt_setting_choice *choice_named(const rt_setting *s, const char *name)
{
    for (const rt_setting_choice *c = s->choices; c && c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

/* "a, b or c" (s's choices; with quote "\"a\", \"b\" or \"c\"") into buf. */
static const char *choice_list(const rt_setting *s, bool quote, char *buf, size_t cap)
{
    size_t k = 0, len = 0;
    buf[0] = '\0';
    for (const rt_setting_choice *c = s->choices; c && c->name; c++)
        k++;
    size_t i = 0;
    for (const rt_setting_choice *c = s->choices; c && c->name; c++, i++) {
        const char *sep = i == 0 ? "" : i + 1 == k ? " or " : ", ";
        int w = snprintf(buf + len, cap - len, quote ? "%s\"%s\"" : "%s%s", sep, c->name);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
    return buf;
}

static const char *choice_name(const rt_setting *s, int v)
{
    for (const rt_setting_choice *c = s->choices; c && c->name; c++)
        if (c->value == v)
            return c->name;
    return "?";
}

/* --------------------------------------------------------------- JSON */

rt_status rt_setting_json(const rt_setting *s, const cJSON *obj, const char *path, void *dst,
                          rt_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, s->name);
    const char *str = NULL;
    char buf[256];
    int64_t v;
    if (!j || cJSON_IsNull(j))
        return RT_OK; /* absent or null: the default */
    switch (s->type) {
    case RT_SET_INT:
    case RT_SET_SIZE:
    case RT_SET_I64:
    case RT_SET_U64:
        if (rt_cfg_to_int(j, path, s->name, s->lo, s->hi, &v, err) != RT_OK)
            return RT_ERR_INVALID;
        put_int(dst, s, v);
        return RT_OK;
    case RT_SET_NUM:
        return rt_cfg_num(obj, path, s->name, 0, s->dlo, s->dhi, (double *)field(dst, s), err);
    case RT_SET_BOOL:
        return rt_cfg_bool(obj, path, s->name, 0, (bool *)field(dst, s), err);
    case RT_SET_ENUM: {
        if (rt_cfg_str(obj, path, s->name, 0, &str, err) != RT_OK)
            return RT_ERR_INVALID;
        const rt_setting_choice *c = choice_named(s, str);
        if (!c)
            return rt_cfg_fail(err, path, s->name, "must be %s",
                               choice_list(s, true, buf, sizeof buf));
        *(int *)field(dst, s) = c->value;
        return RT_OK;
    }
    case RT_SET_STR:
    case RT_SET_NAME:
        if (rt_cfg_str(obj, path, s->name, 0, &str, err) != RT_OK)
            return RT_ERR_INVALID;
        if (str[0] == '\0')
            return rt_cfg_fail(err, path, s->name, "must be a non-empty string");
        if (s->type == RT_SET_NAME && s->check && !s->check(str, strlen(str)))
            return rt_cfg_fail(err, path, s->name, "'%s' is not %s", str, s->what);
        return set_string(dst, s, str, err);
    case RT_SET_CUSTOM:
        return s->custom ? s->custom(j, path, s, dst, err) : RT_OK;
    case RT_SET_LIST:
        return rt_cfg_fail(err, path, s->name, "not a JSON key");
    }
    return RT_OK;
}

rt_status rt_settings_json(const rt_setting *t, size_t n, const cJSON *obj, const char *path,
                           const char *section, const char *const *extra, void *dst,
                           rt_err *err)
{
    if (!cJSON_IsObject(obj))
        return rt_cfg_fail(err, path, NULL, "expected an object, got %s", rt_cfg_type_name(obj));
    /* every key first: known, once (cJSON keeps duplicates: ambiguous) */
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *name = c->string ? c->string : "";
        const rt_setting *s = rt_settings_find_key(t, n, section, name);
        bool ok = s != NULL;
        for (const char *const *e = extra; e && *e && !ok; e++)
            ok = !strcmp(*e, name);
        if (!ok) {
            const char *near = rt_settings_suggest(t, n, name, RT_SET_JSON, section, extra);
            if (near)
                return rt_cfg_fail(err, path, name, "unknown key (did you mean %s?)", near);
            return rt_cfg_fail(err, path, name, "unknown key");
        }
        for (const cJSON *d = c->next; d; d = d->next)
            if (d->string && !strcmp(d->string, name))
                return rt_cfg_fail(err, path, name, "key given twice");
    }
    for (size_t i = 0; i < n; i++) {
        const rt_setting *s = &t[i];
        if (!(s->where & RT_SET_JSON) || !rt_setting_in(s, section))
            continue;
        rt_status st = rt_setting_json(s, obj, path, dst, err);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

bool rt_setting_in(const rt_setting *s, const char *section)
{
    return (!s->section && !section) || (s->section && section && !strcmp(s->section, section));
}

const rt_setting *rt_settings_find_key(const rt_setting *t, size_t n, const char *section,
                                       const char *key)
{
    for (size_t i = 0; key && i < n; i++)
        if ((t[i].where & RT_SET_JSON) && rt_setting_in(&t[i], section) &&
            !strcmp(t[i].name, key))
            return &t[i];
    return NULL;
}

rt_status rt_setting_to_json(const rt_setting *s, const void *obj, cJSON **out, rt_err *err)
{
    cJSON *j = NULL;
    if (is_integer(s))
        j = cJSON_CreateNumber((double)get_int(obj, s));
    else if (s->type == RT_SET_NUM)
        j = cJSON_CreateNumber(*(const double *)field(obj, s));
    else if (s->type == RT_SET_BOOL)
        j = cJSON_CreateBool(*(const bool *)field(obj, s));
    else if (s->type == RT_SET_ENUM)
        j = cJSON_CreateString(choice_name(s, *(const int *)field(obj, s)));
    else if (is_string(s) && *(char *const *)field(obj, s))
        j = cJSON_CreateString(*(char *const *)field(obj, s));
    else
        return rt_err_set(err, RT_ERR_INVALID, "%s: no JSON value", s->name);
    *out = j;
    return j ? RT_OK : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
}

/* ----------------------------------------------------------- flag text */

/* The flag name s is spelled with ("--" not included). */
static const char *flag_name(const rt_setting *s)
{
    return s->flag ? s->flag : s->name;
}

rt_status rt_setting_text(const rt_setting *s, const char *val, void *dst, rt_err *err)
{
    const char *f = flag_name(s);
    char *end = NULL;
    char buf[256];
    switch (s->type) {
    case RT_SET_INT:
    case RT_SET_SIZE:
    case RT_SET_I64:
    case RT_SET_U64: {
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (errno == ERANGE || !end || end == val || *end != '\0')
            return rt_err_set(err, RT_ERR_INVALID, "--%s: \"%s\" is not an integer", f, val);
        if (v < s->lo && s->hi == INT64_MAX)
            return rt_err_set(err, RT_ERR_INVALID, "--%s: %lld is out of range (must be >= %lld)",
                              f, v, (long long)s->lo);
        if (v < s->lo || v > s->hi)
            return rt_err_set(err, RT_ERR_INVALID, "--%s: %lld is out of range [%lld, %lld]", f,
                              v, (long long)s->lo, (long long)s->hi);
        put_int(dst, s, v);
        return RT_OK;
    }
    case RT_SET_NUM: {
        errno = 0;
        double v = strtod(val, &end);
        if (errno == ERANGE || !end || end == val || *end != '\0' || !isfinite(v) ||
            !(v >= s->dlo && v <= s->dhi)) {
            if (s->what)
                return rt_err_set(err, RT_ERR_INVALID, "--%s: \"%s\" is not %s", f, val, s->what);
            return rt_err_set(err, RT_ERR_INVALID, "--%s: \"%s\" is not a number in [%g, %g]",
                              f, val, s->dlo, s->dhi);
        }
        *(double *)field(dst, s) = v;
        return RT_OK;
    }
    case RT_SET_BOOL:
        if (!val || !strcmp(val, "true") || !strcmp(val, "1"))
            *(bool *)field(dst, s) = true;
        else if (!strcmp(val, "false") || !strcmp(val, "0"))
            *(bool *)field(dst, s) = false;
        else
            return rt_err_set(err, RT_ERR_INVALID, "--%s: '%s' is not true or false", f, val);
        return RT_OK;
    case RT_SET_ENUM: {
        const rt_setting_choice *c = choice_named(s, val);
        if (!c)
            return rt_err_set(err, RT_ERR_INVALID, "--%s: \"%s\" is not %s", f, val,
                              choice_list(s, false, buf, sizeof buf));
        *(int *)field(dst, s) = c->value;
        return RT_OK;
    }
    case RT_SET_STR:
    case RT_SET_NAME:
        if (val[0] == '\0')
            return rt_err_set(err, RT_ERR_INVALID, "--%s: must not be empty", f);
        if (s->type == RT_SET_NAME && s->check && !s->check(val, strlen(val)))
            return rt_err_set(err, RT_ERR_INVALID, "--%s: '%s' is not %s", f, val, s->what);
        return set_string(dst, s, val, err);
    case RT_SET_LIST:
        if (val[0] == '\0')
            return rt_err_set(err, RT_ERR_INVALID, "--%s: must not be empty", f);
        return list_add(dst, s, f, val, err);
    case RT_SET_CUSTOM:
        return rt_err_set(err, RT_ERR_INVALID, "--%s: not a flag", f);
    }
    return RT_OK;
}

/* ------------------------------------------------------ names and flags */

/* True when a (len bytes) and b are the same name; with dash, '-' and '_'
 * are the same letter. */
static bool same_name(const char *a, size_t len, const char *b, bool dash)
{
    if (strlen(b) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char x = a[i], y = b[i];
        if (dash) {
            x = x == '_' ? '-' : x;
            y = y == '_' ? '-' : y;
        }
        if (x != y)
            return false;
    }
    return true;
}

/* True when the space-separated list has name (len bytes). */
static bool list_has(const char *list, const char *name, size_t len, bool dash)
{
    while (list && *list) {
        size_t w = strcspn(list, " ");
        char one[64];
        if (w > 0 && w < sizeof one) {
            memcpy(one, list, w);
            one[w] = '\0';
            if (same_name(name, len, one, dash))
                return true;
        }
        list += w;
        list += strspn(list, " ");
    }
    return false;
}

const rt_setting *rt_settings_flag(const rt_setting *t, size_t n, const char *name, size_t len,
                                   bool dash)
{
    for (size_t i = 0; i < n; i++)
        if ((t[i].where & RT_SET_FLAG) && same_name(name, len, flag_name(&t[i]), dash))
            return &t[i];
    for (size_t i = 0; i < n; i++)
        if ((t[i].where & RT_SET_FLAG) && list_has(t[i].aliases, name, len, dash))
            return &t[i];
    return NULL;
}

/* Edit distance of a and b (each at most 63 bytes, else SIZE_MAX):
 * insertions, deletions, substitutions and swaps of two neighbours cost 1;
 * '-' and '_' are the same letter (--rest-api-port is --rest_api_port). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), d[64][64];
    if (la >= 64 || lb >= 64)
        return SIZE_MAX;
#define SAME(x, y) ((x) == (y) || (((x) == '-' || (x) == '_') && ((y) == '-' || (y) == '_')))
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + !SAME(a[i - 1], b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && SAME(a[i - 1], b[j - 2]) && SAME(a[i - 2], b[j - 1]) &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
#undef SAME
    return d[la][lb];
}

/* True when every word of name (split at '_' or '-') is a word of cand, in
 * the same order: --rest_port for --rest_api_port. */
static bool words_within(const char *name, const char *cand)
{
    const char *c = cand;
    size_t words = 0;
    while (*name) {
        size_t n = strcspn(name, "_-");
        bool found = false;
        while (*c && !found) {
            size_t m = strcspn(c, "_-");
            found = m == n && n > 0 && !strncmp(c, name, n);
            c += m;
            c += strspn(c, "_-");
        }
        if (!found)
            return false;
        words++;
        name += n;
        name += strspn(name, "_-");
    }
    return words >= 2;
}

/* How near cand is to name as a suggestion: 0 not near; else a rank (lower
 * is nearer) from the edit distance. Near means a typo — at most one edit
 * per six letters (at least one) — or the start of the name (an
 * abbreviation), or a name missing a word (every word of name is one of
 * cand's, at least two); a name that differs in a whole word
 * (--ssl_config_file, --num_load_threads) is not near --model_config_file
 * or --num_batch_threads. */
static size_t nearness(const char *name, const char *cand)
{
    size_t len = strlen(name), d = distance(name, cand);
    size_t bound = len / 6 > 1 ? len / 6 : 1;
    if (d == SIZE_MAX)
        return 0;
    if (d <= bound)
        return 1 + d;
    if (len >= 3 && !strncmp(cand, name, len))
        return 64; /* all abbreviations alike: two of them are a tie */
    if (words_within(name, cand))
        return 128; /* the same */
    return 0;
}

/* The running best of a suggestion search. */
typedef struct {
    const char *best;
    size_t rank;
    bool tie;
} nearest;

static void consider(nearest *nr, const char *name, const char *cand, const char *answer)
{
    size_t r = cand ? nearness(name, cand) : 0;
    if (r && r < nr->rank) {
        nr->rank = r;
        nr->best = answer;
        nr->tie = false;
    } else if (r && r == nr->rank && answer != nr->best) {
        nr->tie = true;
    }
}

const char *rt_settings_suggest(const rt_setting *t, size_t n, const char *name, unsigned where,
                                const char *section, const char *const *extra)
{
    nearest nr = {NULL, SIZE_MAX, false};
    for (size_t i = 0; i < n; i++) {
        const rt_setting *s = &t[i];
        if (!(s->where & where))
            continue;
        if (where & RT_SET_FLAG) {
            const char *f = flag_name(s);
            consider(&nr, name, f, f);
            /* an alias suggests the flag it spells */
            for (const char *a = s->aliases; a && *a;) {
                size_t w = strcspn(a, " ");
                char one[64];
                if (w > 0 && w < sizeof one) {
                    memcpy(one, a, w);
                    one[w] = '\0';
                    consider(&nr, name, one, f);
                }
                a += w;
                a += strspn(a, " ");
            }
        } else if (rt_setting_in(s, section)) {
            consider(&nr, name, s->name, s->name);
        }
    }
    for (; extra && *extra; extra++)
        consider(&nr, name, *extra, *extra);
    return nr.tie ? NULL : nr.best;
}

const char *rt_settings_nearest_name(const char *name, const char *const *names, size_t n)
{
    nearest nr = {NULL, SIZE_MAX, false};
    if (!name)
        return NULL;
    for (size_t i = 0; i < n; i++)
        consider(&nr, name, names[i], names[i]);
    return nr.tie ? NULL : nr.best;
}

/* --------------------------------------------------------------- argv */

/* "--name: unknown flag (did you mean --x?)" (or a's style) for name. */
static rt_status unknown_flag(const rt_argv *a, const char *name, size_t len, rt_err *err)
{
    char n[128];
    const char *what = a->noun ? a->noun : "flag";
    snprintf(n, sizeof n, "%.*s", (int)(len < sizeof n ? len : sizeof n - 1), name);
    const char *near = rt_settings_suggest(a->rows, a->n, n, RT_SET_FLAG, NULL, a->extra);
    if (a->unknown_flag_last)
        return near ? rt_err_set(err, RT_ERR_NOTFOUND, "unknown %s --%s (did you mean --%s?)",
                                 what, n, near)
                    : rt_err_set(err, RT_ERR_NOTFOUND, "unknown %s --%s (see --help)", what, n);
    return near ? rt_err_set(err, RT_ERR_NOTFOUND, "--%s: unknown %s (did you mean --%s?)", n,
                             what, near)
                : rt_err_set(err, RT_ERR_NOTFOUND, "--%s: unknown %s (see --help)", n, what);
}

rt_status rt_settings_argv(const rt_argv *a, int argc, char **argv, void *dst, uint64_t *given,
                           int *next, rt_err *err)
{
    int i = 1;
    uint64_t seen = 0;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            if (!a->dashdash)
                break;
            i++;
            break;
        }
        const char *name;
        size_t len;
        const char *eq = NULL;
        if (!strcmp(arg, "-h")) {
            name = "help";
            len = 4;
        } else if (strncmp(arg, "--", 2) != 0) {
            break; /* the first argument that is not a flag: the caller's */
        } else {
            name = arg + 2;
            len = strcspn(name, "=");
            eq = name[len] == '=' ? name + len + 1 : NULL;
        }
        const char *nextarg = i + 1 < argc ? argv[i + 1] : NULL;
        const rt_setting *s = rt_settings_flag(a->rows, a->n, name, len, a->dash_underscore);
        if (!s) {
            int r = a->other ? a->other(a->ctx, name, len, eq, nextarg, err) : 0;
            if (r < 0)
                return RT_ERR_INVALID;
            if (r == 0)
                return unknown_flag(a, name, len, err);
            i += r - 1;
            continue;
        }
        size_t k = (size_t)(s - a->rows);
        if (a->once && s->type != RT_SET_LIST && k < 64 && (seen >> k & 1)) {
            const char *f = flag_name(s);
            if (same_name(name, len, f, a->dash_underscore))
                return rt_err_set(err, RT_ERR_INVALID, "--%s: given twice", f);
            return rt_err_set(err, RT_ERR_INVALID, "--%.*s: given twice (--%.*s is --%s)",
                              (int)len, name, (int)len, name, f);
        }
        if (k < 64)
            seen |= UINT64_C(1) << k;
        const char *val = eq;
        if (!val && s->type != RT_SET_BOOL) {
            if (!nextarg)
                return rt_err_set(err, RT_ERR_INVALID, "%s: needs a value", arg);
            val = nextarg;
            i++;
        }
        if (rt_setting_text(s, val, dst, err) != RT_OK)
            return RT_ERR_INVALID;
        if (given && k < 64)
            *given |= UINT64_C(1) << k;
    }
    *next = i;
    return RT_OK;
}

/* ---------------------------------------------------------------- help */

int rt_settings_wrap(rt_buf *b, const char *text, size_t col, size_t indent)
{
    int r = 0;
    bool first = true;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (!first && col + 1 + word > 79) {
            r |= rt_buf_printf(b, "\n%*s", (int)indent, "");
            col = indent;
        } else if (!first) {
            r |= rt_buf_puts(b, " ");
            col++;
        }
        r |= rt_buf_append(b, text, word);
        col += word;
        text += word;
        text += strspn(text, " ");
        first = false;
    }
    return r | rt_buf_puts(b, "\n");
}

const char *rt_setting_default_text(const rt_setting *s, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (s->where & RT_SET_NODEFAULT)
        return buf;
    if (s->type == RT_SET_BOOL)
        snprintf(buf, cap, "%s", s->def ? "true" : "false");
    else if (is_string(s) && s->def_str)
        snprintf(buf, cap, "%s", s->def_str);
    else if (is_integer(s))
        snprintf(buf, cap, "%lld", (long long)s->def);
    else if (s->type == RT_SET_NUM)
        snprintf(buf, cap, "%g", s->ddef);
    else if (s->type == RT_SET_ENUM)
        snprintf(buf, cap, "%s", choice_name(s, (int)s->def));
    return buf;
}

/* rt_setting_help with the default of row d (s itself, or the key a flag
 * stands for). */
static int help_with(rt_buf *b, const rt_setting *s, const rt_setting *d, const char *more,
                     size_t col, size_t indent)
{
    char text[1400], def[80], also[160] = "";
    rt_setting_default_text(d, def, sizeof def);
    if (s->aliases) {
        /* "(also --a, --b)": the other spellings */
        size_t len = (size_t)snprintf(also, sizeof also, " (also");
        const char *a = s->aliases;
        bool first = true;
        while (*a && len < sizeof also) {
            size_t w = strcspn(a, " ");
            len += (size_t)snprintf(also + len, sizeof also - len, "%s --%.*s", first ? "" : ",",
                                    (int)w, a);
            first = false;
            a += w;
            a += strspn(a, " ");
        }
        if (len < sizeof also)
            snprintf(also + len, sizeof also - len, ")");
    }
    snprintf(text, sizeof text, "%s%s%s%s%s%s", s->help ? s->help : "", more ? more : "", also,
             def[0] ? " (default " : "", def, def[0] ? ")" : "");
    return rt_settings_wrap(b, text, col, indent);
}

int rt_setting_help(rt_buf *b, const rt_setting *s, const char *more, size_t col, size_t indent)
{
    return help_with(b, s, s, more, col, indent);
}

int rt_settings_help(rt_buf *b, const rt_setting *t, size_t n, size_t col,
                     const rt_setting *keys, size_t n_keys)
{
    int r = 0;
    for (size_t i = 0; i < n; i++) {
        const rt_setting *s = &t[i];
        if (!(s->where & RT_SET_FLAG))
            continue;
        char flag[160], arg[128];
        if (s->type == RT_SET_ENUM) { /* "a|b|c" */
            size_t len = 0;
            arg[0] = '\0';
            for (const rt_setting_choice *c = s->choices; c && c->name; c++)
                len += (size_t)snprintf(arg + len, sizeof arg - len, "%s%s",
                                        c == s->choices ? "" : "|", c->name);
        }
        int w = s->type == RT_SET_BOOL
                    ? snprintf(flag, sizeof flag, "  --%s[=true|false]", flag_name(s))
                    : snprintf(flag, sizeof flag, "  --%s=%s%s", flag_name(s),
                               s->type == RT_SET_ENUM ? arg : s->arg ? s->arg : "X",
                               s->type == RT_SET_LIST ? "..." : "");
        if (w < 0)
            return -1;
        if ((size_t)w + 2 <= col)
            r |= rt_buf_printf(b, "%-*s", (int)col, flag);
        else
            r |= rt_buf_printf(b, "%s  ", flag);
        /* a flag that stands for a key of keys: that key's default */
        const rt_setting *k = s->section ? rt_settings_find_key(keys, n_keys, s->section, s->name)
                                         : NULL;
        r |= help_with(b, s, k ? k : s, NULL, (size_t)w + 2 <= col ? col : (size_t)w + 2, col);
    }
    return r;
}

const char *const rt_argv_help_names[] = {"help", NULL};

int rt_settings_argv_help_end(int argc, char **argv, const char *stop)
{
    for (int k = 1; k < argc && !(stop && strcmp(argv[k], stop) == 0); k++)
        if (!strcmp(argv[k], "-h") || !strcmp(argv[k], "--help"))
            return k + 1;
    return argc;
}

int rt_settings_argv_help(void *ctx, const char *name, size_t len, const char *eq, const char *next,
                 rt_err *err)
{
    (void)next;
    (void)err;
    if (len != 4 || strncmp(name, "help", 4) != 0 || eq)
        return 0;
    *(bool *)ctx = true;
    return 1;
}
