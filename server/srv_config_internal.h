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

#include <cjson/cJSON.h>

/* The first key that appears twice in object obj, or NULL. (cJSON keeps
 * duplicates; a config that says a thing twice is ambiguous: refused.) */
const char *srv_json_dup_key(const cJSON *obj);

/* Parses the config file's "models" member (arr, any JSON value) into
 * c->models / c->n_models (c owns them; on error c->n_models counts what
 * must be freed). base_dir resolves relative base paths (NULL: kept).
 * Errors name the path ("models[1].version_policy.latest: ..."). */
rt_status srv_config_parse_models(const cJSON *arr, const char *base_dir, srv_config *c,
                                  rt_err *err);

#endif
