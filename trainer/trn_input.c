/*
 * trn_input.c — the CSV input of a run: readers opened for a feeder's
 * columns (training, evaluation, the trees' training set), the hint that
 * names the spec key skipping a header row, a batch's targets, and the
 * training input with its restart and its replay on resume.
 */
#include "trn_run_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- data errors */

/*
 * A data file's first line that fails to parse (rd stopped on it) and holds
 * the columns' names (at least half its fields, split as the reader splits
 * a row, blanks around them dropped) is a CSV header: err's message gets
 * the spec key that skips it.
 */
void trn_hint_header(const trn_feeder *fd, trn_reader *rd, const char *key, rt_err *err)
{
    uint64_t lineno;
    const char *path = trn_reader_failed_at(rd, &lineno);
    FILE *fp = path && lineno == 1 ? fopen(path, "r") : NULL;
    if (!fp)
        return;
    char *line = NULL, *text = NULL;
    size_t cap = 0;
    ssize_t len = getline(&line, &cap, fp);
    fclose(fp);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    rt_csv_span span[256];
    long nf = len > 0 && (text = malloc((size_t)len + 1))
                  ? rt_raw_csv_split(line, (size_t)len, text, span, 256, NULL)
                  : -1;
    size_t ncol, names = 0;
    (void)trn_feeder_numeric(fd, &ncol);
    const char *const *cols = trn_feeder_names(fd);
    for (long f = 0; f < nf && f < 256; f++) {
        const char *tok = text + span[f].off;
        size_t n = span[f].len;
        while (n && (*tok == ' ' || *tok == '\t'))
            tok++, n--;
        while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
            n--;
        for (size_t i = 0; cols && i < ncol; i++)
            if (strlen(cols[i]) == n && memcmp(cols[i], tok, n) == 0) {
                names++;
                break;
            }
    }
    free(line);
    free(text);
    if (names == 0 || names * 2 < (size_t)nf)
        return;
    char msg[RT_ERR_MAX];
    if (snprintf(msg, sizeof msg, "%s (line 1 holds column names: a header row? set \"%s\": 1 "
             "in the spec to skip it)", err->msg, key) < 0)
        return;
    snprintf(err->msg, sizeof err->msg, "%s", msg);
}

int trn_targets_alloc(trn_targets *t, const trn_feeder *fd, size_t rows)
{
    t->ls = trn_feeder_label_dim(fd);
    t->labels = malloc((rows ? rows : 1) * t->ls * sizeof *t->labels);
    t->nw = trn_feeder_weighted(fd);
    t->weights = t->nw ? malloc((rows ? rows : 1) * t->nw * sizeof *t->weights) : NULL;
    t->row_of = malloc((rows ? rows : 1) * sizeof *t->row_of);
    return t->labels && t->row_of && (t->weights || !trn_feeder_weighted(fd)) ? 0 : -1;
}

void trn_targets_free(trn_targets *t)
{
    free(t->labels);
    free(t->weights);
    free(t->row_of);
    t->labels = t->weights = NULL;
    t->row_of = NULL;
}

/* A row the feeder refused (a label outside label.vocabulary, ...) is a data
 * error like the reader's malformed rows: FILE:LINE, exit status 1. */
rt_status trn_feed_targets(const trn_feeder *fd, const trn_rows *rows, rt_batch *b, trn_targets *t,
                      trn_bad_row_policy bad, uint64_t *skipped, rt_err *err)
{
    rt_status st = trn_feeder_fill_rows(fd, rows, b, t->labels, t->weights, t->row_of, bad,
                                        skipped, err);
    return st == RT_ERR_INVALID ? RT_ERR_FORMAT : st;
}

rt_status trn_open_reader(const trn_feeder *fd, char *const *files, size_t n_files,
                          size_t batch, size_t shuffle, int64_t epochs, uint64_t seed,
                          trn_bad_row_policy bad, size_t skip_header, size_t shards,
                          size_t shard, uint64_t cache_bytes, rt_input_format fmt,
                          trn_reader **r, rt_err *err)
{
    trn_reader_params p = trn_reader_default_params();
    size_t ncol;
    p.numeric = trn_feeder_numeric(fd, &ncol);
    p.names = trn_feeder_names(fd);
    p.n_fields = ncol;
    p.files = (const char *const *)files;
    p.n_files = n_files;
    p.batch_size = batch;
    p.shuffle_buffer_size = shuffle;
    p.num_epochs = epochs;
    p.seed = seed;
    p.bad_rows = bad;
    p.skip_header_lines = skip_header;
    p.shard_count = shards;
    p.shard_index = shard;
    p.cache_bytes = cache_bytes;
    p.defer_replay_fields = cache_bytes > 0;
    p.input_format = fmt;
    p.def = trn_feeder_def(fd);
    return trn_reader_open(&p, r, err);
}

/* Rows [lo, hi) of rows as a trn_rows of their own (no copy). */
trn_rows trn_rows_slice(const trn_rows *rows, size_t lo, size_t hi)
{
    trn_rows v = *rows;
    v.n = hi - lo;
    v.fields = rows->fields + lo * rows->n_fields;
    v.src_file = rows->src_file + lo;
    v.src_line = rows->src_line + lo;
    v.ordinal = rows->ordinal ? rows->ordinal + lo : NULL;
    v.first = rows->first ? rows->first + lo : NULL;
    return v;
}

rt_status trn_input_open(const trn_input *in, trn_reader **rd, rt_err *err)
{
    const trn_config *c = in->c;
    if (*rd && in->stats) /* the input restarts: every row was seen once */
        in->stats->done = 1;
    trn_reader_close(*rd);
    *rd = NULL;
    trn_cache_clear(in->cache); /* the new reader numbers its rows again */
    rt_status st = trn_open_reader(in->fd, in->files, in->n_files, in->batch,
                                   c->shuffle_buffer_size, c->num_epochs, c->seed, c->bad_rows,
                                   c->skip_header_lines, in->shards, in->shard, in->cache_bytes,
                                   c->input_format, rd, err);
    return st;
}

/* The next training batch (RT_ERR_NOTFOUND at the end of a pass). */
rt_status trn_input_next(const trn_input *in, trn_reader *rd, const trn_rows **rows, rt_err *err)
{
    rt_status st = trn_reader_next(rd, rows, err);
    if (st == RT_ERR_FORMAT)
        trn_hint_header(in->fd, rd, "train.skip_header_lines", err);
    if (st == RT_OK && in->stats)
        st = trn_stats_rows(in->stats, *rows, err);
    return st;
}

/*
 * A resumed run replays the (seeded, deterministic) input stream up to the
 * restored step without doing any math, so it continues exactly where the
 * interrupted run was: same seed, files and batch size give the model an
 * uninterrupted run would have given. With num_epochs the stream is a
 * sequence of passes of num_epochs epochs each (the input restarts when a
 * run with a larger max_steps reaches its end): whole passes are skipped
 * after the first one has told how many batches a pass holds.
 */
rt_status trn_input_replay(const trn_input *in, trn_reader **rd, int64_t step, int64_t *pass,
                              rt_err *err)
{
    int64_t skipped = 0, in_pass = 0;
    *pass = 0;
    while (skipped < step) {
        const trn_rows *rows;
        rt_status st = trn_input_next(in, *rd, &rows, err);
        if (st == RT_OK) {
            skipped++;
            in_pass++;
            continue;
        }
        if (st != RT_ERR_NOTFOUND)
            return st;
        if (in_pass == 0) /* no data at all */
            break;
        *pass = in_pass;
        if ((st = trn_input_open(in, rd, err)))
            return st;
        /* whole passes, but the last one is read: a step at the end of a
         * pass leaves the reader at its end, as the run that stopped there */
        skipped += (step - skipped - 1) / in_pass * in_pass;
        in_pass = 0;
    }
    return RT_OK;
}
