/*
 * exp.h — the exporter: the one public header of exporter/.
 *
 * Writes export directories (docs/export-format.md):
 *
 *   BASE/<version>/model.pb        packed predictd.ModelDef with the tensor index
 *   BASE/<version>/variables.bin   64-byte header + 64-byte aligned float32 tensors
 *   BASE/<version>/assets/...      optional vocabulary files
 *
 * An export is first written to a hidden directory BASE/.tmp-<version>-<pid>-<rand>,
 * every file and directory is fsynced, and the directory is renamed to its
 * integer name with rename(2) (RENAME_NOREPLACE), then BASE is fsynced. A
 * reader (the daemon) therefore never sees half an export, and a failed write
 * (disk full, I/O error) leaves no version directory behind.
 *
 * Versions: the Unix time of the export unless the caller gives one. If that
 * version already exists, the next free integer is taken (TensorFlow waits a
 * second and uses the new time; taking +1 gives the same ordering without
 * waiting). Version directory names are canonical decimal integers
 * (rt_model_version_parse); every other name in BASE is ignored.
 *
 * Retention (LatestExporter's exports_to_keep): keep the newest N versions;
 * older ones are first renamed to a hidden .tmp-* name (so a daemon's scan
 * never sees a half-deleted version), then removed.
 *
 * Thread safety: every function may be called from any thread; two writers
 * into the same BASE never collide (distinct temp names, RENAME_NOREPLACE).
 * Errors: rt_status plus a message in the caller's rt_err naming the file or
 * the tensor and what was wrong.
 */
#ifndef PREDICTD_EXP_H
#define PREDICTD_EXP_H

#include <stddef.h>
#include <stdint.h>

#include "rt_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One named float32 tensor to store. Data is read only during the call. */
typedef struct exp_tensor {
    const char *name;   /* unique, non-empty, e.g. "dnn/hiddenlayer_0/kernel" */
    const float *data;  /* shape[0] * ... floats, host order (little-endian) */
    uint64_t shape[2];
    uint32_t rank;      /* 1 or 2 */
} exp_tensor;

/* One file under assets/ (e.g. a vocabulary_file). Either data/len (bytes to
 * write) or src_path (a file copied as is) when data is NULL. */
typedef struct exp_asset {
    const char *name;     /* path under assets/, e.g. "vocab.txt" or "v/a.txt":
                             relative, no "." or ".." parts (as vocabulary_file) */
    const void *data;
    size_t len;
    const char *src_path;
} exp_asset;

typedef struct exp_params {
    int64_t version;         /* 0 (default) = Unix time now, or newest + 1 when
                                that is not newer; else > 0 */
    int check_graph;         /* 1 (default): the tensors must be exactly those of
                                rt_graph_tensor_specs(def), same shapes */
    int sync;                /* 1 (default): fsync files and directories */
    int clean_temp;          /* 1 (default): remove stale .tmp-* dirs in BASE first */
    const exp_asset *assets; /* [n_assets], default none */
    size_t n_assets;
    const void *statistics;  /* statistics.json bytes (rt_stats_write_json), or NULL;
                                model.pb records their size and CRC-32C */
    size_t statistics_len;
} exp_params;

exp_params exp_default_params(void);

/* The two files of an export, in memory. */
typedef struct exp_blobs {
    uint8_t *model_pb;
    size_t model_pb_len;
    uint8_t *vars;   /* variables.bin, 64-byte aligned allocation */
    size_t vars_len;
} exp_blobs;

void exp_blobs_free(exp_blobs *b); /* frees the buffers; b itself is the caller's; NULL ok */

/*
 * Lays out tensors[0..n) into variables.bin bytes (in the given order, each
 * at a 64-byte aligned offset) and packs def into model.pb bytes. Fills
 * def->tensors (the index: name, dtype, shape, offset, length, crc32c; any
 * previous index is freed) and def->variables_size; sets def->format_version
 * to RT_FORMAT_VERSION when it is 0. With p->check_graph (p NULL = defaults)
 * the tensor set must equal rt_graph_tensor_specs(def).
 * OUT: *out buffers are malloc-owned; free with exp_blobs_free().
 */
rt_status exp_serialize(Predictd__ModelDef *def, const exp_tensor *tensors, size_t n,
                        const exp_params *p, exp_blobs *out, rt_err *err);

/* Where an export went. */
typedef struct exp_result {
    int64_t version;
    char path[4096]; /* BASE/<version> */
} exp_result;

/*
 * Writes an export of def + tensors (+ p->assets) atomically into
 * BASE/<version>/ (see the header comment). BASE is created (mkdir -p) if
 * missing. def is updated as by exp_serialize. On success fills *res (may be
 * NULL). On any failure nothing new is left in BASE and the message names the
 * file and the system error (e.g. "variables.bin: write: No space left on
 * device"). RT_ERR_EXISTS only if no free version was found after many tries.
 */
rt_status exp_write(const char *base, Predictd__ModelDef *def, const exp_tensor *tensors,
                    size_t n, const exp_params *p, exp_result *res, rt_err *err);

/*
 * Lists the versions in BASE: entries whose name is a canonical integer
 * (rt_model_version_parse) and that are directories, ascending. Hidden .tmp-* and
 * any other names are ignored. OUT: *versions malloc'd (free()), NULL when
 * *n == 0. A missing BASE is RT_ERR_NOTFOUND.
 */
rt_status exp_list_versions(const char *base, int64_t **versions, size_t *n, rt_err *err);

/* Removes BASE/<version> safely: renamed to a hidden .tmp-* name first, then
 * deleted. RT_ERR_NOTFOUND if it does not exist. */
rt_status exp_remove_version(const char *base, int64_t version, rt_err *err);

/* Keeps the newest `keep` (>= 1) versions of BASE and removes the others as
 * exp_remove_version does. *removed (may be NULL) counts removed versions. */
rt_status exp_retain_latest(const char *base, size_t keep, size_t *removed, rt_err *err);

/*
 * Removes leftover hidden directories BASE/.tmp-<version>-<pid>-<rand> of
 * interrupted exports or removals: those whose pid no longer runs on this
 * machine, other .tmp-* entries older than max_age_secs (3600 is the
 * exporter's own choice), and those of a running pid only when older than
 * 24 * max_age_secs (a slow writer keeps its directory; a reused pid does not
 * keep a leftover forever). *removed (may be NULL) counts them. Best effort:
 * entries that cannot be removed are skipped; the first such error is
 * reported.
 */
rt_status exp_clean_temp(const char *base, int64_t max_age_secs, size_t *removed, rt_err *err);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_EXP_H */
