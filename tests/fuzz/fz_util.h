/*
 * fz_util.h — helpers shared by the fuzz targets in tests/fuzz/ (linked
 * into every libFuzzer binary and every corpus-replay test program).
 *
 * Each tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput(). Built with
 * clang -fsanitize=fuzzer it is a libFuzzer binary (make fuzz); built with
 * the normal compiler and linked with fz_replay.c it is the test program
 * $(BUILD)/tests/test_fuzz_<name>, which runs every file of
 * tests/fuzz/corpus/<name>/ through the target (make test).
 *
 * Fuzz targets may hold state that lives for the whole process (the small
 * model they serve), opened once on first use: the one exception to "no
 * mutable globals", as libFuzzer's interface leaves no other place for it.
 * On a harness failure (a seed file missing) they abort(): the run is void.
 */
#ifndef PREDICTD_FZ_UTIL_H
#define PREDICTD_FZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "rt.h"

/* libFuzzer's entry point, defined once per target file. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The repository root: $PREDICTD_ROOT, else "." (the Makefile runs from it). */
const char *fz_root(void);

/* Reads root-relative path into a malloc'd buffer (NUL-terminated, *len
 * bytes without it). Returns 0, or -1 (printed to stderr). */
int fz_read_file(const char *relpath, uint8_t **data, size_t *len);

/* The serving input function of the fuzzing model (tests/fuzz/model/). */
typedef enum { FZ_MODEL_JSON = 0, FZ_MODEL_CSV = 1, FZ_MODEL_EXAMPLE = 2 } fz_model_kind;

/* The small census model trained for fuzzing (tests/fuzz/model/: model.pb,
 * model_csv.pb or model_example.pb with variables.bin), opened with
 * rt_model_open_buffers once per process and kept. Aborts when it cannot be
 * opened: every target that needs it is void without it. */
const rt_model *fz_model(fz_model_kind kind);

/* With FZ_VERBOSE set in the environment, prints "what: status: message"
 * to stderr (to see why a corpus file is refused); silent otherwise. */
void fz_note(const char *what, rt_status st, const rt_err *err);

/* Runs batch b through g's serving path: transform, forward, head. A batch
 * the transform refuses must be refused with a message; one it accepts must
 * run forward and through the head, giving probabilities in [0, 1] that sum
 * to 1 (unless an input was NaN or infinite). Aborts otherwise. Returns 0
 * when the batch ran, -1 when the transform refused it. */
int fz_run_batch(const rt_graph *g, const rt_batch *b);

/* A NUL-terminated copy of the fuzz input (caller frees), NULL when out of
 * memory. */
char *fz_cstr(const uint8_t *data, size_t size);

/* True when text (len bytes) is one valid JSON value, allowing the bare
 * NaN, Infinity and -Infinity tokens that TF Serving's answers use. */
int fz_json_valid(const char *text, size_t len);

/* Splits a packed export: u32 little-endian length of model.pb, model.pb,
 * then variables.bin (the rest). A length past the end takes what there is
 * for model.pb and leaves variables.bin empty. Inputs under 4 bytes give
 * two empty parts. */
void fz_unpack_export(const uint8_t *data, size_t size, const uint8_t **pb, size_t *pb_len,
                      const uint8_t **vars, size_t *vars_len);

/* Aborts with a message on stderr when cond is false: the fuzzers' oracle
 * for properties that must hold on any input (libFuzzer keeps the input). */
#define FZ_CHECK(cond, what)                                                                  \
    do {                                                                                      \
        if (!(cond))                                                                          \
            fz_fail(__FILE__, __LINE__, (what));                                              \
    } while (0)

_Noreturn void fz_fail(const char *file, int line, const char *what);

#endif /* PREDICTD_FZ_UTIL_H */
