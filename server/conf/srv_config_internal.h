/*
 * srv_config_internal.h — shared by the two halves of predictd's config:
 * srv_config.c (the daemon's settings: one table that makes the defaults,
 * the JSON keys, the flags and --help) and srv_config_models.c (the
 * "models" list: names, base paths, version policies, labels). Not part of
 * the server's public header (srv.h).
 */
#ifndef PREDICTD_SRV_CONFIG_INTERNAL_H
#define PREDICTD_SRV_CONFIG_INTERNAL_H

/* The build defines PREDICTD_MODULE_<folder> for each source (Makefile). */
#if !defined(PREDICTD_MODULE_server) && !defined(PREDICTD_MODULE_tests)
#error "srv_config_internal.h is server's own; other modules include srv.h (docs/design.md)"
#endif

#include "srv.h"

#include <cJSON.h>

/* The first key that appears twice in object obj, or NULL. (cJSON keeps
 * duplicates; a config that says a thing twice is ambiguous: refused.) */
const char *srv_json_dup_key(const cJSON *obj);

/* Parses the config file's "models" member (arr, any JSON value) into
 * c->models / c->n_models (c owns them; on error c->n_models counts what
 * must be freed). base_dir resolves relative base paths (NULL: kept).
 * Errors name the path ("models[1].version_policy.latest: ..."). */
SRV_WUR rt_status srv_config_parse_models(const cJSON *arr, const char *base_dir, srv_config *c,
                                          rt_err *err);

/* TensorFlow Serving's flags that predictd has no setting for
 * (srv_tfflags.c): their count, and the name and value type of the i-th
 * (NULL past the end). */
typedef enum { SRV_TF_BOOL, SRV_TF_INT, SRV_TF_FLOAT, SRV_TF_STR } srv_tfflag_type;
size_t srv_tfflag_count(void);
const char *srv_tfflag_name(size_t i, srv_tfflag_type *type);
/* The i-th TF Serving flag given with value (NULL: a bool flag alone): a
 * value TF would not parse is refused naming the flag; one whose meaning
 * predictd cannot honour is refused saying why; an alias gives the
 * predictd setting it stands for in *alias and the value in *alias_value
 * for the caller to set (srv_tfflags.c calls nothing of srv_config.c);
 * any other adds one warning line to a->warnings (what predictd does
 * instead) and sets *alias to NULL. */
SRV_WUR rt_status srv_tfflag_apply(size_t i, const char *value, srv_args *a, const char **alias,
                                   const char **alias_value, rt_err *err);

#endif
