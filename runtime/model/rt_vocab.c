/*
 * rt_vocab.c — vocabulary tables (open addressing on Fingerprint64, built once
 * per graph, read-only afterwards), vocabulary files, and safe asset paths
 * (trimming is rt_raw.c's).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")
#define VOCAB_MAX_FILE (UINT64_C(1) << 30)

/* ------------------------------------------------------------- helpers */

bool rt_vocab_asset_path_ok(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (n == 0 || n > 255 || path[0] == '/')
        return false;
    const char *p = path;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)p[i] < 0x20 || p[i] == '\\')
                return false;
        p += len;
        if (*p == '/')
            p++;
    }
    return path[n - 1] != '/';
}

/* ------------------------------------------------------------- vocab */

rt_status rt_vocab_build(rt_vocab *v, const char *const *words, size_t n, rt_err *err)
{
    memset(v, 0, sizeof *v);
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    v->hashes = calloc(cap, sizeof *v->hashes);
    v->lens = calloc(cap, sizeof *v->lens);
    v->words = calloc(cap, sizeof *v->words);
    v->ids = calloc(cap, sizeof *v->ids);
    v->cap = cap;
    if (!v->hashes || !v->lens || !v->words || !v->ids) {
        rt_vocab_free(v);
        return NOMEM(err);
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(words[i]);
        if (len > UINT32_MAX) {
            rt_vocab_free(v);
            return rt_err_set(err, RT_ERR_LIMIT, "word %zu is too long", i);
        }
        uint64_t h = rt_hash_fingerprint64(words[i], len);
        h = h ? h : 1;
        size_t at = (size_t)h & (cap - 1);
        while (v->hashes[at]) {
            if (v->hashes[at] == h && v->lens[at] == len && memcmp(v->words[at], words[i], len) == 0) {
                rt_status st = rt_err_set(err, RT_ERR_INVALID, "\"%.64s\" is listed twice",
                                          words[i]);
                rt_vocab_free(v);
                return st;
            }
            at = (at + 1) & (cap - 1);
        }
        v->hashes[at] = h;
        v->lens[at] = (uint32_t)len;
        v->words[at] = words[i];
        v->ids[at] = (int64_t)i;
        v->count++;
    }
    return RT_OK;
}

int64_t rt_vocab_find(const rt_vocab *v, const char *word, size_t len)
{
    if (!v || !v->cap)
        return -1;
    return rt_vocab_find_fp(v, word, len, rt_hash_fingerprint64(word, len));
}

int64_t rt_vocab_find_fp(const rt_vocab *v, const char *word, size_t len, uint64_t fp)
{
    if (!v || !v->cap)
        return -1;
    uint64_t h = fp ? fp : 1;
    size_t at = (size_t)h & (v->cap - 1);
    while (v->hashes[at]) {
        if (v->hashes[at] == h && v->lens[at] == len && rt_same_bytes(v->words[at], word, len))
            return v->ids[at];
        at = (at + 1) & (v->cap - 1);
    }
    return -1;
}

void rt_vocab_free(rt_vocab *v)
{
    if (!v)
        return;
    free(v->hashes);
    free(v->lens);
    free(v->words);
    free(v->ids);
    memset(v, 0, sizeof *v);
}

rt_status rt_vocab_load_file(rt_vocab *v, const char *path, size_t want, bool trim,
                             char ***words, size_t *n_words, rt_err *err)
{
    rt_status st = RT_OK;
    char *text = NULL;
    size_t size = 0;
    *words = NULL;
    *n_words = 0;
    if ((st = rt_file_read(AT_FDCWD, path, VOCAB_MAX_FILE, 0, &text, &size, err)) != RT_OK)
        return st;
    /* A file of `size` bytes has at most size + 1 lines. */
    size_t cap = want < size + 1 ? want : size + 1;
    if (!(*words = calloc(cap ? cap : 1, sizeof **words))) {
        st = NOMEM(err);
        goto out;
    }
    const char *p = text, *end = text + size;
    while (*n_words < cap && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *w = p;
        if (trim)
            w = rt_buf_trim_span(w, &len);
        else if (len && w[len - 1] == '\r')
            len--;
        char *word = malloc(len + 1);
        if (!word) {
            st = NOMEM(err);
            goto out;
        }
        memcpy(word, w, len);
        word[len] = '\0';
        (*words)[(*n_words)++] = word;
        p = nl ? nl + 1 : end;
    }
    if (*n_words < want) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: %zu words, vocabulary_size is %zu", path,
                        *n_words, want);
        goto out;
    }
    if ((st = rt_vocab_build(v, (const char *const *)*words, *n_words, err)))
        rt_err_prefix(err, "%s", path);
out:
    free(text);
    return st;
}
