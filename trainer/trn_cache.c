/*
 * trn_cache.c — the training rows' transformed features, kept across epochs.
 *
 * Every epoch feeds the same rows again; what the feature columns make of a
 * row's raw values (numbers, vocabulary ids, hash buckets, crosses: the
 * first half of rt_transform) never changes, only what reads the weights
 * (embeddings) does. So the first time a row comes (the reader numbers the
 * rows of a pass: trn_rows.ordinal, when it replays them from memory), its
 * targets (trn_feeder_label_dim labels, and its weight with a weight column)
 * and that first half (rt_transform_features_row_save, a record) are kept here;
 * a batch whose rows are all known is rebuilt from the records
 * (rt_transform_features_rows_load) without parsing, feeding or transforming, and
 * finished with rt_transform_finish. The features are those rt_transform
 * makes, bit for bit (tests/integration/test_train_golden). Rows the budget
 * has no room for are fed every time.
 *
 * Rows skipped for their label or weight (--on-bad-row skip) are remembered
 * by file and line, so the run can say how many distinct rows it skipped,
 * not only how many times (every epoch skips them again).
 */
#include "trn.h"

#include <stdlib.h>
#include <string.h>

#define MISSING UINT64_MAX
#define BAD_LABEL (UINT64_MAX - 1) /* skipped (--on-bad-row skip): skipped again */

struct trn_cache {
    const rt_graph *g;
    uint64_t max_bytes, used;
    uint64_t *off;      /* [cap] offset in arena, MISSING or BAD_LABEL */
    size_t cap;
    size_t ls, tsz;     /* labels per row; the targets' bytes before each record */
    size_t weighted;    /* weights after the labels (trn_feeder_weighted) */
    unsigned char *arena;
    size_t len, arena_cap;
    size_t *row_of;     /* scratch: instance -> row */
    const void **rec;   /* scratch: the batch's records */
    size_t scratch;
    uint64_t *skip_set; /* open addressing: hashes of (file, line) of skipped rows; 0 empty */
    size_t skip_cap, skip_n;
    uint64_t skip_distinct;
};

/* Distinct rows remembered at most (8 MiB); beyond, every skip counts as new. */
#define SKIP_SET_MAX ((size_t)1 << 20)

trn_cache *trn_cache_new(const rt_graph *g, uint64_t max_bytes)
{
    trn_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->g = g;
    c->max_bytes = max_bytes;
    return c;
}

void trn_cache_clear(trn_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++)
        c->off[i] = MISSING;
    c->len = 0;
    c->used = 0;
}

void trn_cache_free(trn_cache *c)
{
    if (!c)
        return;
    free(c->off);
    free(c->arena);
    free(c->row_of);
    free(c->rec);
    free(c->skip_set);
    free(c);
}

/* FNV-1a of the file name, mixed with the line: a skipped row's key. */
static uint64_t row_key(const char *file, uint64_t line)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = file ? file : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h ^= (line + 1) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    return h ? h : 1;
}

/* Counts row r of rows, skipped, as a distinct row unless seen before. */
static void note_skip(trn_cache *c, const trn_rows *rows, size_t r)
{
    uint64_t k = row_key(rows->src_file ? rows->src_file[r] : NULL,
                         rows->src_line ? rows->src_line[r] : r);
    if (c->skip_n + 1 > c->skip_cap / 2) { /* grow: at most half full */
        size_t cap = c->skip_cap ? c->skip_cap * 2 : 64;
        uint64_t *q = cap <= 2 * SKIP_SET_MAX ? calloc(cap, sizeof *q) : NULL;
        if (!q) {
            c->skip_distinct++; /* no room to remember: counted as new */
            return;
        }
        for (size_t i = 0; i < c->skip_cap; i++) {
            if (!c->skip_set[i])
                continue;
            size_t j = (size_t)(c->skip_set[i] & (cap - 1));
            while (q[j])
                j = (j + 1) & (cap - 1);
            q[j] = c->skip_set[i];
        }
        free(c->skip_set);
        c->skip_set = q;
        c->skip_cap = cap;
    }
    size_t j = (size_t)(k & (c->skip_cap - 1));
    while (c->skip_set[j] && c->skip_set[j] != k)
        j = (j + 1) & (c->skip_cap - 1);
    if (c->skip_set[j])
        return;
    c->skip_set[j] = k;
    c->skip_n++;
    c->skip_distinct++;
}

uint64_t trn_cache_distinct_skips(const trn_cache *c)
{
    return c ? c->skip_distinct : 0;
}

/* Room for ordinal o; 0 ok, -1 no memory. */
static int room_for(trn_cache *c, uint64_t o)
{
    if (o < c->cap)
        return 0;
    size_t was = c->cap;
    if (o >= SIZE_MAX || rt_grow(&c->off, &c->cap, (size_t)o + 1, sizeof *c->off) != 0)
        return -1;
    for (size_t i = was; i < c->cap; i++)
        c->off[i] = MISSING;
    return 0;
}

/* Keeps instance i of f (row ordinal o, labels y, c->weighted weights w or
 * NULL for 1), its targets then its record, when the budget allows. */
static void keep(trn_cache *c, const rt_features *f, size_t i, uint64_t o, const float *y,
                 const float *w)
{
    if (o == TRN_NO_ORDINAL || (o < c->cap && c->off[o] != MISSING))
        return;
    size_t sz = c->tsz + rt_transform_features_row_size(c->g, f, i);
    if (c->used + sz + 8 > c->max_bytes || room_for(c, o))
        return;
    if (rt_grow(&c->arena, &c->arena_cap, c->len + sz, 1) != 0)
        return;
    memcpy(c->arena + c->len, y, c->ls * sizeof *y);
    for (size_t k = 0; k < c->weighted; k++) {
        float wk = w ? w[k] : 1.0f;
        memcpy(c->arena + c->len + (c->ls + k) * sizeof *y, &wk, sizeof wk);
    }
    rt_transform_features_row_save(c->g, f, i, c->arena + c->len + c->tsz);
    c->off[o] = c->len;
    c->len += sz;
    c->used += sz + 8;
}

rt_status trn_cache_fill(trn_cache *c, const trn_feeder *fd, const trn_rows *rows, rt_batch *b,
                         rt_features *f, float *labels, float *weights, trn_bad_row_policy bad,
                         uint64_t *skipped, size_t *n, rt_err *err)
{
    *n = 0;
    c->ls = trn_feeder_label_dim(fd); /* the same feeder every call */
    c->weighted = trn_feeder_weighted(fd);
    c->tsz = (c->ls + c->weighted) * sizeof(float);
    if (rows->n > c->scratch) {
        size_t *ro = realloc(c->row_of, rows->n * sizeof *ro);
        if (ro)
            c->row_of = ro;
        const void **re = realloc(c->rec, rows->n * sizeof *re);
        if (re)
            c->rec = re;
        if (!ro || !re)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        c->scratch = rows->n;
    }
    int known = rows->ordinal != NULL;
    for (size_t r = 0; known && r < rows->n; r++) {
        uint64_t o = rows->ordinal[r];
        known = o != TRN_NO_ORDINAL && o < c->cap && c->off[o] != MISSING &&
                (c->off[o] != BAD_LABEL || bad == TRN_BAD_ROW_SKIP);
    }
    rt_status st;
    if (known) { /* every row seen before: from the records */
        /* the rows come shuffled, their records from all over the arena:
         * ask for them all before reading the first */
        for (size_t r = 0; r < rows->n; r++) {
            uint64_t o = rows->ordinal[r];
            if (c->off[o] != BAD_LABEL)
                for (size_t at = 0; at < 256; at += 64)
                    __builtin_prefetch(c->arena + c->off[o] + at);
        }
        size_t k = 0;
        for (size_t r = 0; r < rows->n; r++) {
            uint64_t o = rows->ordinal[r];
            if (c->off[o] == BAD_LABEL) {
                if (skipped)
                    (*skipped)++;
                continue;
            }
            c->row_of[k] = r;
            const unsigned char *t = c->arena + c->off[o];
            memcpy(labels + k * c->ls, t, c->ls * sizeof *labels);
            if (c->weighted && weights)
                memcpy(&weights[k * c->weighted], t + c->ls * sizeof *labels,
                       c->weighted * sizeof *weights);
            c->rec[k++] = t + c->tsz;
        }
        if ((st = rt_transform_features_rows_load(c->g, f, c->rec, k, err)))
            return st;
        *n = k;
        return trn_err_at_row(rt_transform_finish(c->g, f, err), rows, c->row_of, k, err);
    }
    /* the feeder and the first half of rt_transform, whose results are kept;
     * replayed rows come without their fields (defer_replay_fields) */
    trn_reader_fill_fields(rows);
    if ((st = trn_feeder_fill_rows(fd, rows, b, labels, weights, c->row_of, bad, skipped, err)))
        return st;
    size_t k = rt_batch_size(b);
    for (size_t i = 0, r = 0; k < rows->n && r < rows->n; r++) { /* the rows left out */
        if (i < k && c->row_of[i] == r)
            i++;
        else
            note_skip(c, rows, r);
    }
    if ((st = rt_transform_inputs(c->g, b, f, err))) /* named by FILE:LINE */
        return trn_err_at_row(st, rows, c->row_of, k, err);
    if (rows->ordinal) {
        for (size_t i = 0, r = 0; r < rows->n; r++) {
            uint64_t o = rows->ordinal[r];
            if (i < k && c->row_of[i] == r) {
                keep(c, f, i, o, labels + i * c->ls, weights ? weights + i * c->weighted : NULL);
                i++;
            } else if (o != TRN_NO_ORDINAL && c->used + 8 <= c->max_bytes &&
                       room_for(c, o) == 0 && c->off[o] == MISSING) {
                c->off[o] = BAD_LABEL; /* left out by the feeder */
                c->used += 8;
            }
        }
    }
    *n = k;
    return trn_err_at_row(rt_transform_finish(c->g, f, err), rows, c->row_of, k, err);
}
