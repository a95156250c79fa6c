/*
 * srv_grpc_arena.c — a request message's memory: a bump allocator that
 * protobuf-c's unpack takes (ProtobufCAllocator), one per gRPC thread,
 * emptied after each call. An unpacked request is a tree of small blocks
 * (each input's map entry, TensorProto, shape, dims, values: some forty for
 * one census instance); malloc'ing and freeing each one was a fifth of a
 * Predict's instructions (docs/performance.md, "gRPC CPU per call"). Here
 * they are carved from a chunk kept from call to call, and freeing the
 * message is resetting the arena.
 */
#include "srv_grpc_internal.h"

#include <stdint.h>
#include <stdlib.h>

/* the chunk kept between calls; a larger request takes chunks of its size,
 * given back at the reset */
#define ARENA_CHUNK (64u << 10)
#define ARENA_ALIGN 16u

struct srv_grpc_chunk {
    struct srv_grpc_chunk *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

static void *arena_alloc(void *arg, size_t n)
{
    srv_grpc_arena *a = arg;
    n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (!n)
        n = ARENA_ALIGN;
    struct srv_grpc_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        if (cap > SIZE_MAX - sizeof *c)
            return NULL;
        struct srv_grpc_chunk *nc = malloc(sizeof *nc + cap);
        if (!nc)
            return NULL;
        nc->cap = cap;
        nc->used = 0;
        nc->next = c;
        a->head = c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static void arena_free(void *arg, void *p)
{
    (void)arg, (void)p; /* all of it goes at srv_grpc_arena_reset */
}

void srv_grpc_arena_init(srv_grpc_arena *a)
{
    a->head = NULL;
    a->alloc.alloc = arena_alloc;
    a->alloc.free = arena_free;
    a->alloc.allocator_data = a;
}

void srv_grpc_arena_reset(srv_grpc_arena *a)
{
    struct srv_grpc_chunk *c = a->head;
    while (c && c->next) { /* every chunk but the first (the oldest) */
        struct srv_grpc_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = c;
    if (c)
        c->used = 0;
}

void srv_grpc_arena_free(srv_grpc_arena *a)
{
    srv_grpc_arena_reset(a);
    free(a->head);
    a->head = NULL;
}
