/*
 * exp_internal.h — helpers shared by the exporter's own files (exp_write.c,
 * exp_versions.c). Not for other modules: they use exp.h.
 */
#ifndef PREDICTD_EXP_INTERNAL_H
#define PREDICTD_EXP_INTERNAL_H

/* The build defines PREDICTD_MODULE_<folder> for each source (Makefile). */
#if !defined(PREDICTD_MODULE_exporter) && !defined(PREDICTD_MODULE_tests) && \
    !defined(PREDICTD_MODULE_bench)
#error "exp_internal.h is exporter's own; other modules include exp.h (docs/design.md)"
#endif

#include "exp.h"

/* Hidden temp names in a base directory: ".tmp-<version>-<pid>-<rand>". */
#define EXP_TMP_PREFIX RT_PUBLISH_TMP_PREFIX

/* Opens (creating with mkdir -p when create != 0) the base directory.
 * Returns an O_DIRECTORY fd or -1 with a message in err. */
int exp_open_base(const char *base, int create, rt_status *st, rt_err *err);

#endif /* PREDICTD_EXP_INTERNAL_H */
