/*
 * support_alloc.h — allocation fault injection for the torture tests
 * (tests/unit/test_torture_*.c), as SQLite's and curl's torture runs do:
 * the n-th allocation fails, for n = 1, 2, ... until a run completes with
 * no failure injected.
 *
 * Only the test_torture_* programs link support_alloc.c, with
 * -Wl,--wrap=malloc,calloc,realloc,strdup,strndup,aligned_alloc,
 * posix_memalign,realpath,protobuf_c_message_unpack (Makefile,
 * TORTURE_WRAP): every allocation made by our code (the static libraries and
 * the test) goes through the counter, so does cJSON's (the runtime's cJSON
 * hooks call malloc: rt_cfg.c) and protobuf-c's unpacking (given an
 * allocator that counts). Allocations libc makes for itself (stdio buffers,
 * fopen, qsort) and OpenBLAS's own buffers are not failed: they are not
 * ours to handle. Leaks after a failure are found by LeakSanitizer in the
 * ASan build (make asan: it reports at exit with the allocation's stack),
 * use after free and double free by ASan there too; the plain build checks
 * statuses, messages and answers (glibc's count of bytes in use is no leak
 * check: its per-thread caches count as in use).
 */
#ifndef PREDICTD_SUPPORT_ALLOC_H
#define PREDICTD_SUPPORT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"

/* Arms the injector: the n-th allocation from now fails (n >= 1), and with
 * sticky every one after it too; n = 0 disarms. Resets the counters. */
void support_alloc_fail_at(uint64_t n, bool sticky);
/* Allocations counted since the last support_alloc_fail_at. */
uint64_t support_alloc_count(void);
/* True when an allocation was failed since the last support_alloc_fail_at. */
bool support_alloc_failed(void);

/* One run of the code under torture: returns its status, err says why.
 * ctx is the test's. */
typedef rt_status (*support_torture_fn)(void *ctx, rt_err *err);
/* Called after each run with its status and whether an allocation was
 * failed in it: checks the run's output (a run that absorbed the failure
 * and succeeded must give the untortured answer) and frees it. */
typedef void (*support_torture_check)(void *ctx, rt_status st, bool injected);

/*
 * Runs fn with the n-th allocation failing for n = 1, 2, ... until a run in
 * which no allocation failed, which must return RT_OK; a run with a failed
 * allocation must return RT_OK or RT_ERR_NOMEM with a message (anything
 * else fails the test, naming what and n). n steps by `step` (1: every n;
 * larger samples a long run: n = 1..64 every one, then every step-th), and
 * sticky makes every allocation after the n-th fail too. check may be NULL.
 * Returns the number of allocations of the untortured run. With
 * TORTURE_ONLY=N in the environment only n = N runs (to look at one failure
 * under valgrind or gdb).
 */
uint64_t support_torture(const char *what, support_torture_fn fn, support_torture_check check,
                         void *ctx, uint64_t step, bool sticky);

#endif /* PREDICTD_SUPPORT_ALLOC_H */
