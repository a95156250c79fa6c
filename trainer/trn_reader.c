/*
 * trn_reader.c — the streaming CSV input pipeline.
 *
 * A reader thread reads the files line by line (never the whole file),
 * splits each line into fields and checks the numeric columns with the
 * runtime's rt_raw_csv_split and rt_raw_number (what the serving CSV receiver
 * uses: a row means the same to both), checks the field count, passes the good
 * rows through a shuffle buffer (TensorFlow's Dataset.shuffle: fill the
 * buffer, then each new row replaces a randomly chosen one that is emitted),
 * groups them into batches and queues up to prefetch_batches ahead while the
 * caller does the math. Epochs repeat the file list; the shuffle buffer
 * carries over between epochs and drains at the very end.
 *
 * Malformed rows are reported as "FILE:LINE: what" and either stop the
 * stream (the error reaches trn_reader_next) or are skipped and counted.
 *
 * TFRecord files of tf.Example (params.input_format, or AUTO: told apart by
 * content, runtime/data/rt_tfrecord.c) go through the same pipeline: each record
 * becomes the cells of one row (rt_example_to_row), numbered like lines, so
 * shuffling, epochs, sharding and the row cache treat it as the CSV line with
 * the same cells. Their errors name "FILE: record N: feature F: ..." or, for
 * a corrupt record, "FILE: offset N: record K: ...".
 */
#include "trn.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One row: the line's bytes (unquoted) and its field slices. */
typedef struct rec {
    rt_csv_span *span; /* [n_fields] */
    double *num;       /* [n_fields] numeric columns: the value read */
    uint8_t *num_state; /* [n_fields] as trn_field.num_state */
    char *text;
    size_t file;   /* index into trn_reader.files */
    uint64_t line;
    uint64_t ordinal;  /* kept for replay: its index in trn_reader.kept, else TRN_NO_ORDINAL */
    uint64_t bytes;    /* replay: bytes the epoch's count advances by at this row (its
                          line and other shards' lines before it) */
    uint64_t bad_before; /* replay: malformed rows skipped just before it */
    int kept;          /* owned by trn_reader.kept (freed by trn_reader_close), not by
                          the batch that carries it; set before the row is emitted */
    int in_slab;       /* carved from trn_reader.slab (freed with it by trn_reader_close) */
} rec;

/* A chunk of memory the rows of the first epoch are carved from while it is
 * kept: one allocation per SLAB_BYTES instead of one per row (and no growth
 * of the reader thread's malloc arena a page at a time, an mprotect each). */
typedef struct slab {
    struct slab *next;
    size_t used, cap;
    max_align_t data[];
} slab;

#define SLAB_BYTES ((size_t)1 << 20)

typedef struct batch {
    size_t n;
    rec **rows;
    trn_field *fields;
    const char **src_file;
    uint64_t *src_line;
    uint64_t *ordinal;
    uint8_t *first;    /* [n] 1: the row's first reading (the first epoch) */
    int deferred;      /* rows with first 0 have no fields yet (defer_replay_fields) */
    struct batch *next;
} batch;

struct trn_reader {
    trn_reader_params p;
    char **files;
    size_t n_files;
    uint8_t *numeric;

    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv_put, cv_get;
    batch *head, *tail; /* queue */
    size_t queued;
    int done;           /* producer finished (end or error) */
    int stop;           /* consumer wants the producer to stop */
    rt_status status;   /* producer's final status */
    rt_err err;
    size_t fail_file;   /* with RT_ERR_FORMAT: the malformed row's file index */
    uint64_t fail_line; /* and line number (0: none) */
    trn_reader_stats stats;

    batch *current;     /* handed to the caller */
    batch *spent;       /* handed back by the caller; the producer frees their rows (the
                           rows were allocated in its thread: freeing them there
                           keeps the work and glibc's arena off the training thread) */
    slab *slab;         /* the chunks of kept rows, newest first (producer only) */
    batch *pool;        /* spent batches the producer fills again (its own; freed by
                           trn_reader_close): no calloc, fresh pages or free per batch */
    trn_rows view;

    /* the first epoch's rows, replayed by later epochs (params.cache_bytes);
     * written by the producer only, freed by trn_reader_close */
    rec **kept;
    size_t n_kept, kept_cap;
    uint64_t kept_bytes;
    uint64_t tail_bad;  /* malformed rows after the last kept row */
    int keeping;        /* the first epoch is being kept */
    int replay;         /* complete: later epochs replay it */
};

trn_reader_params trn_reader_default_params(void)
{
    trn_reader_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = (size_t)trn_spec_default("train", "batch_size");
    p.shuffle_buffer_size = (size_t)trn_spec_default("train", "shuffle_buffer_size");
    p.num_epochs = 1;
    p.seed = (uint64_t)trn_spec_default("train", "seed");
    p.bad_rows = TRN_BAD_ROW_STOP;
    p.prefetch_batches = 4;
    return p;
}

static void rec_free(rec *x)
{
    if (x && !x->kept && !x->in_slab)
        free(x);
}

static size_t slab_round(size_t size)
{
    return (size + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t);
}

/* Gives back a row no batch carries yet (a malformed one, a failed keep):
 * freed, or its room in the slab when it was the last row carved. */
static void rec_drop(trn_reader *r, rec *x, size_t size)
{
    if (!x->in_slab) {
        free(x);
        return;
    }
    slab *sl = r->slab; /* x is the newest row: in the newest slab */
    unsigned char *base = (unsigned char *)sl->data;
    if ((unsigned char *)x >= base && (unsigned char *)x + slab_round(size) == base + sl->used)
        sl->used -= slab_round(size);
}

/* size bytes for a row from the newest slab (a new one when it is full);
 * NULL on allocation failure. */
static void *slab_take(trn_reader *r, size_t size)
{
    size = slab_round(size);
    slab *sl = r->slab;
    if (!sl || sl->cap - sl->used < size) {
        size_t cap = SLAB_BYTES - sizeof *sl;
        if (!(sl = malloc(sizeof *sl + cap)))
            return NULL;
        sl->used = 0;
        sl->cap = cap;
        sl->next = r->slab;
        r->slab = sl;
    }
    void *p = (unsigned char *)sl->data + sl->used;
    sl->used += size;
    return p;
}

static void batch_free(batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        rec_free(b->rows[i]);
    free(b->rows);
    free(b->fields);
    free(b->src_file);
    free(b->src_line);
    free(b->ordinal);
    free(b->first);
    free(b);
}

/* ------------------------------------------------------------- file list */

static int has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

static rt_status add_file(char ***files, size_t *n, const char *path, rt_err *err)
{
    char **nf = realloc(*files, (*n + 1) * sizeof *nf);
    if (!nf)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    *files = nf;
    nf[*n] = strdup(path);
    if (!nf[*n])
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    (*n)++;
    return RT_OK;
}

/* Appends the files pat names (itself, or a glob's matches) to the list. */
static rt_status expand_pattern(char ***files, size_t *n, const char *pat, rt_err *err)
{
    struct stat sb;
    if (!has_glob(pat)) {
        if (stat(pat, &sb) != 0)
            return rt_err_set(err, RT_ERR_NOTFOUND, "%s: %s", pat, strerror(errno));
        if (!S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode))
            return rt_err_set(err, RT_ERR_INVALID, "%s: not a regular file", pat);
        return add_file(files, n, pat, err);
    }
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob(pat, 0, NULL, &g);
    if (rc == GLOB_NOMATCH) {
        globfree(&g);
        return rt_err_set(err, RT_ERR_NOTFOUND, "%s: no file matches", pat);
    }
    if (rc != 0) {
        globfree(&g);
        return rt_err_set(err, RT_ERR_IO, "%s: glob failed", pat);
    }
    rt_status st = RT_OK;
    for (size_t i = 0; i < g.gl_pathc && st == RT_OK; i++)
        st = add_file(files, n, g.gl_pathv[i], err);
    globfree(&g);
    return st;
}

/* Every file the patterns name (comma lists and globs), in order. */
static rt_status expand_all(const char *const *pats, size_t n_pats, char ***files, size_t *n,
                            rt_err *err)
{
    for (size_t i = 0; i < n_pats; i++) {
        /* a pattern may itself be a comma-separated list */
        const char *s = pats[i];
        while (*s) {
            const char *e = strchr(s, ',');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            if (len > 0) {
                char *one = strndup(s, len);
                if (!one)
                    return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                rt_status st = expand_pattern(files, n, one, err);
                free(one);
                if (st)
                    return st;
            }
            if (!e)
                break;
            s = e + 1;
        }
    }
    return RT_OK;
}

rt_status trn_files_check(const char *const *pats, size_t n_pats, rt_err *err)
{
    char **files = NULL;
    size_t n = 0;
    rt_status st = expand_all(pats, n_pats, &files, &n, err);
    for (size_t i = 0; st == RT_OK && i < n; i++) {
        struct stat sb;
        if (stat(files[i], &sb) != 0) {
            st = rt_err_set(err, RT_ERR_NOTFOUND, "%s: %s", files[i], strerror(errno));
        } else if (S_ISREG(sb.st_mode)) { /* a pipe is not opened: it would be spent */
            int fd = open(files[i], O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                st = rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                                "%s: cannot open: %s", files[i], strerror(errno));
            else
                close(fd);
        }
    }
    if (st == RT_OK && n == 0)
        st = rt_err_set(err, RT_ERR_NOTFOUND, "no file named");
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return st;
}

/* ----------------------------------------------------------- line parsing */

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* The bytes of a rec of n_fields fields and len bytes of text. */
static size_t rec_size(const trn_reader *r, size_t len)
{
    return sizeof(rec) + r->p.n_fields * (sizeof(rt_csv_span) + sizeof(double) + 1) + len + 1;
}

/* A new rec for n_fields fields and len bytes of text, laid out in one
 * block (from the slab while the first epoch is kept); NULL with *nomem set
 * on allocation failure. */
static rec *rec_new(trn_reader *r, size_t len, int *nomem)
{
    size_t nf = r->p.n_fields, size = rec_size(r, len);
    int in_slab = r->keeping && size <= SLAB_BYTES / 4;
    rec *x = in_slab ? slab_take(r, size) : malloc(size);
    *nomem = !x;
    if (!x)
        return NULL;
    x->in_slab = in_slab;
    x->ordinal = TRN_NO_ORDINAL;
    x->bytes = x->bad_before = 0;
    x->kept = 0;
    x->span = (rt_csv_span *)(x + 1);
    x->num = (double *)(void *)(x->span + nf); /* spans are 8 bytes: aligned */
    x->num_state = (uint8_t *)(x->num + nf);
    x->text = (char *)(x->num_state + nf);
    return x;
}

/* Reads x's numeric fields with rt_raw_number (the serving receivers' own
 * code) into num and num_state. 0, or -1 with err naming the bad field. */
static int rec_numbers(const trn_reader *r, rec *x, rt_err *err)
{
    for (size_t f = 0; f < r->p.n_fields; f++) {
        x->num[f] = 0;
        x->num_state[f] = 0;
        if (!r->numeric || !r->numeric[f])
            continue;
        double v = 0;
        const char *s = x->text + x->span[f].off;
        rt_status st = rt_raw_number(s, x->span[f].len, &v);
        if (st == RT_ERR_INVALID) {
            rt_raw_number_error(err, f, r->p.names ? r->p.names[f] : NULL, s, x->span[f].len);
            return -1;
        }
        x->num[f] = v;
        x->num_state[f] = st == RT_OK ? 1 : 2;
    }
    return 0;
}

/*
 * Splits line (len bytes, no newline) into a new rec with rt_raw_csv_split and
 * checks the field count and the numeric fields (rec_numbers). On a
 * malformed line returns NULL with err set (and *nomem on allocation
 * failure).
 */
static rec *split_line(trn_reader *r, const char *line, size_t len, rt_err *err,
                       int *nomem)
{
    size_t nf = r->p.n_fields;
    rec *x = rec_new(r, len, nomem);
    if (!x)
        return NULL;
    long got = rt_raw_csv_split(line, len, x->text, x->span, nf, err);
    if (got < 0)
        goto bad;
    if ((size_t)got != nf) {
        rt_err_set(err, RT_ERR_INVALID, "expected %zu fields, got %ld", nf, got);
        goto bad;
    }
    if (rec_numbers(r, x, err))
        goto bad;
    return x;
bad:
    rec_drop(r, x, rec_size(r, len));
    return NULL;
}

/*
 * A rec from the cells of a tf.Example (text NUL-terminated, spans per
 * field), numeric fields checked as split_line checks them. NULL with err
 * set for a bad cell (*nomem on allocation failure).
 */
static rec *cells_rec(trn_reader *r, const char *text, size_t len, const rt_csv_span *spans,
                      rt_err *err, int *nomem)
{
    rec *x = rec_new(r, len, nomem);
    if (!x)
        return NULL;
    memcpy(x->text, text, len + 1);
    memcpy(x->span, spans, r->p.n_fields * sizeof *spans);
    if (rec_numbers(r, x, err)) {
        rec_drop(r, x, rec_size(r, len));
        return NULL;
    }
    return x;
}

/* ------------------------------------------------------------- producer */

typedef struct prod {
    trn_reader *r;
    trn_rng rng;
    rec **buf; /* shuffle buffer */
    uint8_t *buf_first; /* [buf_cap] the rows' batch.first */
    int epoch;       /* the epoch being read */
    size_t buf_n, buf_cap;
    uint64_t row_no; /* data lines seen this epoch (row striping) */
    uint64_t pend_bytes, pend_bad; /* since the last good row (replay's counts) */
    batch *cur;
} prod;

static void batch_free_list(batch *b)
{
    while (b) {
        batch *n = b->next;
        batch_free(b);
        b = n;
    }
}

/* Frees the rows of the spent batches b and puts the batches in r's pool
 * for batch_new: every batch has params.batch_size rows of room. */
static void batch_recycle(trn_reader *r, batch *b)
{
    while (b) {
        batch *n = b->next;
        for (size_t i = 0; i < b->n; i++)
            rec_free(b->rows[i]);
        b->n = 0;
        b->deferred = 0;
        b->next = r->pool;
        r->pool = b;
        b = n;
    }
}

/* Queues a batch; returns 0, or -1 when the consumer stopped us. */

static int push_batch(trn_reader *r, batch *b)
{
    pthread_mutex_lock(&r->mu);
    while (r->queued >= r->p.prefetch_batches && !r->stop)
        pthread_cond_wait(&r->cv_put, &r->mu);
    if (r->stop) {
        pthread_mutex_unlock(&r->mu);
        batch_free(b);
        return -1;
    }
    b->next = NULL;
    if (r->tail)
        r->tail->next = b;
    else
        r->head = b;
    r->tail = b;
    r->queued++;
    pthread_cond_signal(&r->cv_get);
    batch *spent = r->spent;
    r->spent = NULL;
    pthread_mutex_unlock(&r->mu);
    batch_recycle(r, spent);
    return 0;
}

/* An empty batch for cap rows of nf fields: one from r's pool (emit writes
 * every slot of a row it adds, so old contents never show), else a new one. */
static batch *batch_new(trn_reader *r, size_t cap, size_t nf)
{
    if (r->pool) {
        batch *p = r->pool;
        r->pool = p->next;
        p->next = NULL;
        return p;
    }
    batch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->rows = calloc(cap, sizeof *b->rows);
    b->fields = calloc(cap * (nf ? nf : 1), sizeof *b->fields);
    b->src_file = calloc(cap, sizeof *b->src_file);
    b->src_line = calloc(cap, sizeof *b->src_line);
    b->ordinal = calloc(cap, sizeof *b->ordinal);
    b->first = calloc(cap, sizeof *b->first);
    if (!b->rows || !b->fields || !b->src_file || !b->src_line || !b->ordinal || !b->first) {
        batch_free(b);
        return NULL;
    }
    return b;
}

/* Row x's nf fields as a batch carries them. */
static void row_fields(const rec *x, size_t nf, trn_field *out)
{
    for (size_t f = 0; f < nf; f++) {
        trn_field *fd = &out[f];
        fd->s = x->text + x->span[f].off;
        fd->len = x->span[f].len;
        fd->num = x->num[f];
        fd->num_state = x->num_state[f];
    }
}

/* Sends a row toward the consumer. 0 ok, -1 stop, -2 no memory. */
static int emit(prod *pr, rec *x, int first)
{
    trn_reader *r = pr->r;
    size_t nf = r->p.n_fields;
    if (!pr->cur && !(pr->cur = batch_new(r, r->p.batch_size, nf))) {
        rec_free(x);
        return -2;
    }
    batch *b = pr->cur;
    if (!first && x->kept && r->p.defer_replay_fields) /* kept: valid until close */
        b->deferred = 1;
    else
        row_fields(x, nf, &b->fields[b->n * nf]);
    b->src_file[b->n] = r->files[x->file];
    b->src_line[b->n] = x->line;
    b->ordinal[b->n] = x->ordinal;
    b->first[b->n] = (uint8_t)first;
    b->rows[b->n++] = x;
    if (b->n == r->p.batch_size) {
        pr->cur = NULL;
        return push_batch(r, b);
    }
    return 0;
}

/* Adds a row to the shuffle buffer (or emits it straight away). */
static int shuffle_add(prod *pr, rec *x)
{
    int first = pr->epoch == 0;
    if (pr->buf_cap <= 1)
        return emit(pr, x, first);
    if (pr->buf_n < pr->buf_cap) {
        pr->buf_first[pr->buf_n] = (uint8_t)first;
        pr->buf[pr->buf_n++] = x;
        return 0;
    }
    size_t k = (size_t)trn_rng_below(&pr->rng, pr->buf_n);
    rec *out = pr->buf[k];
    int out_first = pr->buf_first[k];
    pr->buf[k] = x;
    pr->buf_first[k] = (uint8_t)first;
    return emit(pr, out, out_first);
}

static int shuffle_drain(prod *pr)
{
    while (pr->buf_n > 0) {
        size_t k = (size_t)trn_rng_below(&pr->rng, pr->buf_n);
        rec *out = pr->buf[k];
        int out_first = pr->buf_first[k];
        pr->buf_n--;
        pr->buf[k] = pr->buf[pr->buf_n];
        pr->buf_first[k] = pr->buf_first[pr->buf_n];
        int rc = emit(pr, out, out_first);
        if (rc)
            return rc;
    }
    return 0;
}

static void finish(trn_reader *r, rt_status st, const rt_err *e)
{
    pthread_mutex_lock(&r->mu);
    batch *spent = r->spent; /* from now on the consumer frees its own */
    r->spent = NULL;
    r->done = 1;
    r->status = st;
    if (st != RT_OK && e)
        memcpy(&r->err, e, sizeof r->err);
    pthread_cond_broadcast(&r->cv_get);
    pthread_mutex_unlock(&r->mu);
    batch_free_list(spent);
}

static int stopped(trn_reader *r)
{
    pthread_mutex_lock(&r->mu);
    int s = r->stop;
    pthread_mutex_unlock(&r->mu);
    return s;
}

/*
 * Keeps row x of the first epoch for replay (x->kept: the batches that carry
 * it do not free it). Past params.cache_bytes keeping stops: what was kept
 * stays until trn_reader_close, later epochs read the files. -1 no memory.
 */
static int keep(trn_reader *r, rec *x, size_t len, uint64_t bytes, uint64_t bad_before)
{
    uint64_t size = sizeof *x + r->p.n_fields * (sizeof(rt_csv_span) + sizeof(double) + 1) +
                    len + 1 + sizeof(rec *);
    if (r->kept_bytes + size > r->p.cache_bytes) {
        r->keeping = 0;
        return 0;
    }
    if (rt_grow(&r->kept, &r->kept_cap, r->n_kept + 1, sizeof *r->kept) != 0)
        return -1;
    x->ordinal = r->n_kept;
    x->bytes = bytes;
    x->bad_before = bad_before;
    x->kept = 1;
    r->kept[r->n_kept++] = x;
    r->kept_bytes += size;
    return 0;
}

/* Counts row x (bytes of input, bad rows skipped before it) and hands it to
 * the shuffle buffer: RT_OK, RT_ERR_NOTFOUND when stopped (nobody listens),
 * RT_ERR_NOMEM (said in e when e is not NULL). */
static rt_status hand_on(prod *pr, rec *x, uint64_t bytes, uint64_t bad, rt_err *e)
{
    trn_reader *r = pr->r;
    pthread_mutex_lock(&r->mu);
    r->stats.rows++;
    r->stats.bytes += bytes;
    r->stats.bad_rows += bad;
    pthread_mutex_unlock(&r->mu);
    int rc = shuffle_add(pr, x);
    if (rc == -1)
        return RT_ERR_NOTFOUND;
    if (rc == -2)
        return e ? rt_err_set(e, RT_ERR_NOMEM, "out of memory") : RT_ERR_NOMEM;
    return RT_OK;
}

/* A row just read (len bytes of text, got bytes of input): kept for the
 * next epochs while the first is being kept, then handed on (hand_on) with
 * the bytes and bad rows pending before it. Frees x on a failed keep. */
static rt_status hand_on_read(prod *pr, rec *x, size_t len, uint64_t got, rt_err *e)
{
    trn_reader *r = pr->r;
    if (r->keeping && keep(r, x, len, pr->pend_bytes + got, pr->pend_bad)) {
        rec_drop(r, x, rec_size(r, len));
        return rt_err_set(e, RT_ERR_NOMEM, "out of memory");
    }
    pr->pend_bytes = pr->pend_bad = 0;
    return hand_on(pr, x, got, 0, e);
}

/* One epoch from the kept rows: the same rows, counts and order as reading
 * the files again would give (they are the first epoch's rows). */
static rt_status replay(prod *pr)
{
    trn_reader *r = pr->r;
    for (size_t k = 0; k < r->n_kept; k++) {
        rec *x = r->kept[k];
        rt_status st = hand_on(pr, x, x->bytes, x->bad_before, NULL);
        if (st)
            return st;
    }
    pthread_mutex_lock(&r->mu);
    r->stats.bad_rows += r->tail_bad;
    pthread_mutex_unlock(&r->mu);
    return RT_OK;
}

/* Reads file number fi through the pipeline. */
static rt_status read_file(prod *pr, size_t fi, rt_err *e)
{
    trn_reader *r = pr->r;
    const char *path = r->files[fi];
    FILE *fp = fopen(path, "r");
    if (!fp)
        return rt_err_set(e, RT_ERR_IO, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    uint64_t lineno = 0;
    rt_status st = RT_OK;
    while ((got = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (lineno <= r->p.skip_header_lines)
            continue;
        size_t len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        size_t k = 0;
        while (k < len && is_space(line[k]))
            k++;
        if (k == len)
            continue; /* blank line */
        if (r->p.shard_count > 1 && pr->row_no++ % r->p.shard_count != r->p.shard_index) {
            pthread_mutex_lock(&r->mu); /* another shard's row: not even split */
            r->stats.bytes += (uint64_t)got;
            pthread_mutex_unlock(&r->mu);
            pr->pend_bytes += (uint64_t)got;
            continue;
        }
        if (len > UINT32_MAX / 2) {
            st = rt_err_set(e, RT_ERR_LIMIT, "%s:%llu: line too long", path,
                            (unsigned long long)lineno);
            goto out;
        }
        rt_err why;
        int nomem = 0;
        rec *x = split_line(r, line, len, &why, &nomem);
        if (!x) {
            if (nomem) {
                st = rt_err_set(e, RT_ERR_NOMEM, "out of memory");
                goto out;
            }
            rt_err_prefix(&why, "%s:%llu", path, (unsigned long long)lineno);
            if (r->p.bad_rows == TRN_BAD_ROW_STOP) {
                if (e)
                    *e = why;
                r->fail_file = fi; /* published by finish() under the mutex */
                r->fail_line = lineno;
                st = RT_ERR_FORMAT;
                goto out;
            }
            pthread_mutex_lock(&r->mu);
            if (r->stats.bad_rows++ == 0)
                memcpy(r->stats.first_bad, why.msg, sizeof r->stats.first_bad);
            if (r->stats.epochs == 0)
                r->stats.bad_rows_distinct++;
            pthread_mutex_unlock(&r->mu);
            pr->pend_bad++;
            continue;
        }
        x->file = fi;
        x->line = lineno;
        if ((st = hand_on_read(pr, x, len, (uint64_t)got, e)) != RT_OK)
            goto out;
    }
    if (ferror(fp))
        st = rt_err_set(e, RT_ERR_IO, "%s: read error: %s", path, strerror(errno));
out:
    free(line);
    fclose(fp);
    return st;
}

/* Counts a malformed row or record under --on-bad-row skip. */
static void count_bad(trn_reader *r, prod *pr, const rt_err *why)
{
    pthread_mutex_lock(&r->mu);
    if (r->stats.bad_rows++ == 0)
        memcpy(r->stats.first_bad, why->msg, sizeof r->stats.first_bad);
    if (r->stats.epochs == 0)
        r->stats.bad_rows_distinct++;
    pthread_mutex_unlock(&r->mu);
    pr->pend_bad++;
}

/* Reads TFRecord file number fi through the pipeline: record k is row k. */
static rt_status read_records(prod *pr, size_t fi, rt_err *e)
{
    trn_reader *r = pr->r;
    const char *path = r->files[fi];
    rt_tfrecord *tf = NULL;
    rt_buf text;
    rt_buf_init(&text);
    size_t nf = r->p.n_fields;
    rt_csv_span *spans = calloc(nf ? nf : 1, sizeof *spans);
    rt_status st = RT_OK;
    if (!spans) {
        st = rt_err_set(e, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (!r->p.def || r->p.def->n_raw_columns != nf) {
        st = rt_err_set(e, RT_ERR_INVALID, "%s: TFRecord input needs the spec's columns", path);
        goto out;
    }
    if ((st = rt_tfrecord_open(path, 0, 0, &tf, e)))
        goto out;
    uint64_t before = 0;
    for (;;) {
        const uint8_t *data;
        size_t len;
        rt_err why;
        st = rt_tfrecord_next(tf, &data, &len, &why);
        /* bytes of the file itself (compressed ones for gzip), as the
         * progress counts them against the files' sizes */
        uint64_t at = rt_tfrecord_file_offset(tf), got = at > before ? at - before : 0;
        before = at;
        if (st == RT_ERR_NOTFOUND) {
            st = RT_OK;
            break;
        }
        if (st == RT_ERR_NOMEM || st == RT_ERR_IO) {
            if (e)
                *e = why;
            goto out;
        }
        uint64_t recno = rt_tfrecord_index(tf);
        if (st == RT_OK && r->p.shard_count > 1 &&
            pr->row_no++ % r->p.shard_count != r->p.shard_index) {
            pthread_mutex_lock(&r->mu); /* another shard's record: not even parsed */
            r->stats.bytes += got;
            pthread_mutex_unlock(&r->mu);
            pr->pend_bytes += got;
            continue;
        }
        rec *x = NULL;
        int nomem = 0;
        if (st == RT_OK) {
            st = rt_example_to_row(r->p.def, data, len, 1, &text, spans, NULL, &why);
            if (st == RT_OK)
                x = cells_rec(r, text.data, text.len, spans, &why, &nomem);
            if (st == RT_ERR_NOMEM || nomem) {
                st = rt_err_set(e, RT_ERR_NOMEM, "out of memory");
                goto out;
            }
            if (!x)
                rt_err_prefix(&why, "%s: record %llu", path, (unsigned long long)recno);
        }
        /* a record the reader could not frame (a corrupt length, a truncated
         * file): it reads nothing more of the file, a loss no skip covers */
        int lost = (st == RT_ERR_FORMAT || st == RT_ERR_LIMIT) &&
                   rt_tfrecord_pos(tf) == rt_tfrecord_offset(tf);
        st = RT_OK;
        if (lost && r->p.bad_rows != TRN_BAD_ROW_STOP) {
            rt_err_set(e, RT_ERR_FORMAT, "%s; data loss: the rest of the file cannot be read, "
                       "as TensorFlow's reader raises DataLossError (--on-bad-row skip skips "
                       "records, not the rest of a file)", why.msg);
            st = RT_ERR_FORMAT;
            goto out;
        }
        if (!x) { /* a corrupt record (its message names the offset) or a bad row */
            if (r->p.bad_rows == TRN_BAD_ROW_STOP) {
                if (e)
                    *e = why;
                st = RT_ERR_FORMAT;
                goto out;
            }
            count_bad(r, pr, &why);
            continue;
        }
        x->file = fi;
        x->line = recno;
        if ((st = hand_on_read(pr, x, text.len, (uint64_t)got, e)) != RT_OK)
            goto out;
    }
out:
    rt_tfrecord_close(tf);
    rt_buf_free(&text);
    free(spans);
    return st;
}

/* Reads file number fi, CSV or TFRecord as params.input_format says (AUTO:
 * as its content says). */
static rt_status read_any(prod *pr, size_t fi, rt_err *e)
{
    trn_reader *r = pr->r;
    rt_input_format f = r->p.input_format;
    if (f == RT_INPUT_AUTO) {
        rt_status st = rt_tfrecord_sniff(r->files[fi], &f, e);
        if (st)
            return st;
    }
    return f == RT_INPUT_CSV ? read_file(pr, fi, e) : read_records(pr, fi, e);
}

static void *producer(void *arg)
{
    trn_reader *r = arg;
    prod pr;
    memset(&pr, 0, sizeof pr);
    pr.r = r;
    trn_rng_seed(&pr.rng, r->p.seed);
    rt_err e;
    e.msg[0] = '\0';
    rt_status st = RT_OK;
    pr.buf_cap = r->p.shuffle_buffer_size;
    if (pr.buf_cap > 1) {
        pr.buf = calloc(pr.buf_cap, sizeof *pr.buf);
        pr.buf_first = calloc(pr.buf_cap, sizeof *pr.buf_first);
        if (!pr.buf || !pr.buf_first) {
            st = rt_err_set(&e, RT_ERR_NOMEM, "out of memory (shuffle buffer)");
            goto out;
        }
    }
    r->keeping = r->p.cache_bytes > 0 && r->p.num_epochs != 1;
    for (int64_t ep = 0; r->p.num_epochs == 0 || ep < r->p.num_epochs; ep++) {
        uint64_t before = r->stats.rows;
        pr.epoch = ep > 1 ? 1 : (int)ep;
        pr.row_no = 0;
        pr.pend_bytes = pr.pend_bad = 0;
        if (r->replay) {
            if (stopped(r)) {
                st = RT_ERR_NOTFOUND;
                goto out;
            }
            if ((st = replay(&pr))) {
                if (st == RT_ERR_NOMEM)
                    rt_err_set(&e, st, "out of memory");
                goto out;
            }
        }
        for (size_t i = 0; !r->replay && i < r->n_files; i++) {
            if (stopped(r)) {
                st = RT_ERR_NOTFOUND;
                goto out;
            }
            st = read_any(&pr, i, &e);
            if (st)
                goto out;
        }
        if (r->keeping) { /* the whole first epoch was kept */
            r->keeping = 0;
            r->replay = 1;
            r->tail_bad = pr.pend_bad;
        }
        pthread_mutex_lock(&r->mu);
        r->stats.epochs = ep + 1;
        r->stats.bytes = 0;
        uint64_t after = r->stats.rows;
        pthread_mutex_unlock(&r->mu);
        if (after == before) /* nothing readable: repeating would spin */
            break;
    }
    int rc = shuffle_drain(&pr);
    if (rc == -2)
        st = rt_err_set(&e, RT_ERR_NOMEM, "out of memory");
    if (rc == 0 && pr.cur && pr.cur->n > 0) {
        batch *b = pr.cur;
        pr.cur = NULL;
        push_batch(r, b);
    }
out:
    for (size_t i = 0; i < pr.buf_n; i++)
        rec_free(pr.buf[i]);
    free(pr.buf);
    free(pr.buf_first);
    batch_free(pr.cur);
    finish(r, st, &e);
    return NULL;
}

/* -------------------------------------------------------------- consumer */

rt_status trn_reader_open(const trn_reader_params *p, trn_reader **out, rt_err *err)
{
    *out = NULL;
    if (!p || p->n_fields == 0 || p->batch_size == 0)
        return rt_err_set(err, RT_ERR_INVALID, "reader: n_fields and batch_size must be > 0");
    if (p->n_files == 0)
        return rt_err_set(err, RT_ERR_INVALID, "reader: no input files");
    trn_reader *r = calloc(1, sizeof *r);
    if (!r)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    r->p = *p;
    if (r->p.prefetch_batches == 0)
        r->p.prefetch_batches = 4;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv_put, NULL);
    pthread_cond_init(&r->cv_get, NULL);
    rt_status st = RT_OK;
    if (p->numeric) {
        r->numeric = malloc(p->n_fields);
        if (!r->numeric) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        memcpy(r->numeric, p->numeric, p->n_fields);
    }
    r->p.files = NULL;
    r->p.numeric = NULL;
    if ((st = expand_all(p->files, p->n_files, &r->files, &r->n_files, err)))
        goto out;
    if (r->n_files == 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "reader: no input files");
        goto out;
    }
    if (r->p.shard_count > 1 && r->n_files >= r->p.shard_count) {
        /* whole files: this shard keeps files shard_index, + shard_count, ... */
        size_t kept = 0;
        for (size_t i = 0; i < r->n_files; i++) {
            if (i % r->p.shard_count == r->p.shard_index)
                r->files[kept++] = r->files[i];
            else
                free(r->files[i]);
        }
        r->n_files = kept;
        r->p.shard_count = 0; /* no row striping */
    }
    for (size_t i = 0; i < r->n_files; i++) {
        struct stat sb;
        if (stat(r->files[i], &sb) == 0 && S_ISREG(sb.st_mode))
            r->stats.epoch_bytes += (uint64_t)sb.st_size;
    }
    if (pthread_create(&r->thread, NULL, producer, r) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "reader: cannot start the reader thread");
        goto out;
    }
    r->started = 1;
out:
    if (st) {
        trn_reader_close(r);
        return st;
    }
    *out = r;
    return RT_OK;
}

rt_status trn_reader_next(trn_reader *r, const trn_rows **rows, rt_err *err)
{
    *rows = NULL;
    batch *old = r->current;
    r->current = NULL;
    pthread_mutex_lock(&r->mu);
    if (old && !r->done) { /* the producer frees it */
        old->next = r->spent;
        r->spent = old;
        old = NULL;
    }
    while (!r->head && !r->done)
        pthread_cond_wait(&r->cv_get, &r->mu);
    batch *b = r->head;
    if (b) {
        r->head = b->next;
        if (!r->head)
            r->tail = NULL;
        /* the producer waits on a full queue: wake it once half is
         * consumed, so it refills several batches per wake-up (one futex
         * wake per batch cost ~4% of a census step) */
        if (--r->queued == r->p.prefetch_batches / 2)
            pthread_cond_signal(&r->cv_put);
    }
    rt_status st = r->status;
    pthread_mutex_unlock(&r->mu);
    batch_free(old);
    if (!b) {
        if (st != RT_OK && st != RT_ERR_NOTFOUND) {
            if (err)
                memcpy(err, &r->err, sizeof *err);
            return st;
        }
        return rt_err_set(err, RT_ERR_NOTFOUND, "end of input");
    }
    r->current = b;
    r->view.n = b->n;
    r->view.n_fields = r->p.n_fields;
    r->view.fields = b->fields;
    r->view.src_file = b->src_file;
    r->view.src_line = b->src_line;
    r->view.ordinal = b->ordinal;
    r->view.first = b->first;
    r->view.priv = b;
    *rows = &r->view;
    return RT_OK;
}

void trn_reader_fill_fields(const trn_rows *rows)
{
    batch *b = rows->priv;
    if (!b || !b->deferred)
        return;
    size_t nf = rows->n_fields;
    for (size_t i = 0; i < b->n; i++)
        if (!b->first[i] && b->rows[i]->kept) /* the rows emit left out */
            row_fields(b->rows[i], nf, &b->fields[i * nf]);
    b->deferred = 0;
}

const char *trn_reader_failed_at(trn_reader *r, uint64_t *line)
{
    pthread_mutex_lock(&r->mu);
    int failed = r->done && r->status == RT_ERR_FORMAT && r->fail_line > 0;
    pthread_mutex_unlock(&r->mu);
    *line = failed ? r->fail_line : 0;
    return failed ? r->files[r->fail_file] : NULL;
}

void trn_reader_get_stats(trn_reader *r, trn_reader_stats *s)
{
    pthread_mutex_lock(&r->mu);
    *s = r->stats;
    pthread_mutex_unlock(&r->mu);
}

void trn_reader_close(trn_reader *r)
{
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_cond_broadcast(&r->cv_put);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    while (r->head) {
        batch *n = r->head->next;
        batch_free(r->head);
        r->head = n;
    }
    batch_free(r->current);
    batch_free_list(r->spent);
    batch_free_list(r->pool);
    for (size_t i = 0; i < r->n_kept; i++) /* after every batch that could carry them */
        if (!r->kept[i]->in_slab)
            free(r->kept[i]);
    free(r->kept);
    while (r->slab) {
        slab *n = r->slab->next;
        free(r->slab);
        r->slab = n;
    }
    for (size_t i = 0; i < r->n_files; i++)
        free(r->files[i]);
    free(r->files);
    free(r->numeric);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv_put);
    pthread_cond_destroy(&r->cv_get);
    free(r);
}
