/*
 * support_alloc.c — allocation fault injection for the torture tests (see
 * support_alloc.h): the __wrap_ functions the linker puts in place of
 * malloc & co. for the test_torture_* programs (Makefile, TORTURE_WRAP), a
 * countdown that fails the n-th call, and the loop over n.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <protobuf-c/protobuf-c.h>

#include "support_alloc.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
char *__real_realpath(const char *path, char *resolved);
ProtobufCMessage *__real_protobuf_c_message_unpack(const ProtobufCMessageDescriptor *d,
                                                   ProtobufCAllocator *a, size_t len,
                                                   const uint8_t *data);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
char *__wrap_realpath(const char *path, char *resolved);
ProtobufCMessage *__wrap_protobuf_c_message_unpack(const ProtobufCMessageDescriptor *d,
                                                   ProtobufCAllocator *a, size_t len,
                                                   const uint8_t *data);

static atomic_uint_fast64_t fail_at; /* 0: disarmed */
static atomic_uint_fast64_t calls;
static atomic_bool sticky_mode, fired;

/* Counts one allocation; true when it is to fail. */
static bool fail_now(void)
{
    uint_fast64_t at = atomic_load(&fail_at);
    if (at == 0)
        return false;
    uint_fast64_t k = atomic_fetch_add(&calls, 1) + 1;
    if (k == at || (k > at && atomic_load(&sticky_mode))) {
        atomic_store(&fired, true);
        return true;
    }
    return false;
}

void support_alloc_fail_at(uint64_t n, bool sticky)
{
    atomic_store(&fail_at, 0);
    atomic_store(&calls, 0);
    atomic_store(&fired, false);
    atomic_store(&sticky_mode, sticky);
    atomic_store(&fail_at, n);
}

uint64_t support_alloc_count(void)
{
    return atomic_load(&calls);
}

bool support_alloc_failed(void)
{
    return atomic_load(&fired);
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? (errno = ENOMEM, NULL) : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
    return fail_now() ? (errno = ENOMEM, NULL) : __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? (errno = ENOMEM, NULL) : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return fail_now() ? (errno = ENOMEM, NULL) : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    return fail_now() ? (errno = ENOMEM, NULL) : __real_strndup(s, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
    return fail_now() ? (errno = ENOMEM, NULL) : __real_aligned_alloc(align, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    return fail_now() ? ENOMEM : __real_posix_memalign(p, align, n);
}

/* realpath allocates only when resolved is NULL. */
char *__wrap_realpath(const char *path, char *resolved)
{
    if (!resolved && fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_realpath(path, resolved);
}

static void *pb_alloc(void *data, size_t n)
{
    (void)data;
    return __wrap_malloc(n);
}

static void pb_free(void *data, void *p)
{
    (void)data;
    free(p);
}

/* protobuf-c's default allocator is its own malloc: unpacking with none
 * given gets one that counts (what it allocates is freed with free(), as
 * protobuf_c_message_free_unpacked(msg, NULL) does). */
ProtobufCMessage *__wrap_protobuf_c_message_unpack(const ProtobufCMessageDescriptor *d,
                                                   ProtobufCAllocator *a, size_t len,
                                                   const uint8_t *data)
{
    static ProtobufCAllocator counting = {pb_alloc, pb_free, NULL};
    return __real_protobuf_c_message_unpack(d, a ? a : &counting, len, data);
}

uint64_t support_torture(const char *what, support_torture_fn fn, support_torture_check check,
                         void *ctx, uint64_t step, bool sticky)
{
    rt_err err = {{0}};
    /* Untortured run first: it must succeed. */
    support_alloc_fail_at(UINT64_MAX, false);
    rt_status st = fn(ctx, &err);
    uint64_t total = support_alloc_count();
    support_alloc_fail_at(0, false);
    if (st != RT_OK)
        fail_msg("%s: untortured run failed (%d): %s", what, st, err.msg);
    if (check)
        check(ctx, st, false);
    const char *only = getenv("TORTURE_ONLY");
    uint64_t first = only ? strtoull(only, NULL, 10) : 1;
    for (uint64_t n = first ? first : 1;; n = n < 64 || step <= 1 ? n + 1 : n + step) {
        memset(&err, 0, sizeof err);
        support_alloc_fail_at(n, sticky);
        st = fn(ctx, &err);
        bool injected = support_alloc_failed();
        support_alloc_fail_at(0, false);
        if (!injected && st != RT_OK)
            fail_msg("%s: run %llu without a failed allocation failed (%d): %s", what,
                     (unsigned long long)n, st, err.msg);
        if (injected && st != RT_OK && (st != RT_ERR_NOMEM || !err.msg[0]))
            fail_msg("%s: allocation %llu failed: status %d instead of RT_ERR_NOMEM "
                     "(message: \"%s\")",
                     what, (unsigned long long)n, st, err.msg);
        if (check)
            check(ctx, st, injected);
        if (!injected || only)
            break;
    }
    return total;
}
