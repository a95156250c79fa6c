/*
 * rt_core_internal.h — helpers the runtime's own layers share below their public headers:
 * word-wise byte comparison, UTF-8 checks, float text, the portable CRC-32C.
 * Every runtime layer may include it; other modules may not.
 */
#ifndef PREDICTD_RT_CORE_INTERNAL_H
#define PREDICTD_RT_CORE_INTERNAL_H

/* The build defines PREDICTD_LAYER_<layer> for each runtime source (Makefile). */
#if !defined(PREDICTD_LAYER_core) && !defined(PREDICTD_LAYER_data) && !defined(PREDICTD_LAYER_stats) && !defined(PREDICTD_LAYER_model) && !defined(PREDICTD_LAYER_explain) && !defined(PREDICTD_LAYER_serve) && \
    !defined(PREDICTD_MODULE_tests) && !defined(PREDICTD_MODULE_bench)
#error "rt_core_internal.h is the runtime's own (docs/design.md, \"The runtime's layers\")"
#endif

#include "rt_core.h"

#include <stdbool.h>
#include <string.h>

/* a[0..n) == b[0..n), by words, for the few bytes of a name or a word (no
 * libc call; every load stays inside the n bytes). */
static inline int rt_same_bytes(const char *a, const char *b, size_t n)
{
    if (n >= 8) {
        uint64_t x, y;
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y)
                return 0;
        }
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) {
        uint32_t x, y, z, w;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        memcpy(&z, a + n - 4, 4);
        memcpy(&w, b + n - 4, 4);
        return x == y && z == w;
    }
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* ------------------------------------------------------ UTF-8 (rt_buf.c) */

/* Length (1..4) of the UTF-8 sequence that starts at s when it is valid
 * (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF, not cut
 * short by the end of the n bytes available), else 0 and *why (may be NULL)
 * names the fault ("a truncated sequence", "an overlong encoding", ...).
 * n must be at least 1. Thread-safe, no allocation. */
size_t rt_buf_utf8_seq(const char *s, size_t n, const char **why);

/* ------------------------------------------- float text (rt_buf.c) */

/* Room rt_buf_json_float_text needs. */
#define RT_JSON_FLOAT_MAX 48

/* rt_buf_json_float's text of v into out (RT_JSON_FLOAT_MAX bytes, not
 * NUL-terminated); returns its length. Thread-safe, no allocation. */
size_t rt_buf_json_float_text(float v, char *out);

/* ------------------------------------------------- CRC-32C (rt_hash.c) */

/* The table-driven CRC-32C, byte at a time; same results as rt_hash_crc32c,
 * which uses SSE4.2 when the CPU has it. For tests and benchmarks. */
uint32_t rt_hash_crc32c_portable(uint32_t crc, const void *data, size_t len);
/* 1 when rt_hash_crc32c uses the SSE4.2 crc32 instruction on this CPU. */
int rt_hash_crc32c_hw_available(void);

#endif /* PREDICTD_RT_CORE_INTERNAL_H */
