/*
 * fuzz_csv_row.c — trainer and server must read every CSV row the same way.
 *
 * The input is CSV text for the small census model (15 fields, ", "
 * separated, the label income_bracket last). Each line goes through
 *   - the serving side: rt_receiver_csv_row, one instance per line;
 *   - the trainer side: trn_reader (the whole input as a file, read from an
 *     in-memory memfd through /proc/self/fd/N: splitting, field counts,
 *     numeric checks, bad rows skipped), then trn_feeder_fill row by row
 *     (labels, numbers, defaults) into an rt_batch.
 * and the two are compared (the differential oracle, besides the sanitizers):
 *   - a row the trainer accepts is accepted by the server with exactly the
 *     same values in every input (numbers bit for bit, strings byte for byte);
 *   - a row the trainer refuses is refused by the server too, unless what the
 *     trainer refused is the label (the server does not read it) or a missing
 *     label (the server takes rows without one);
 *   - the first row the trainer refuses (its FILE:LINE: message, stop policy)
 *     is refused by the server with the same words ("csv_row: " + reason),
 *     unless it is a label or field-count refusal (worded per side).
 * Whatever either side accepts then runs through the serving path
 * (fz_run_batch): transform, forward pass, head.
 */
#include "fz_util.h"
#include "trn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FZ_CSV_MAX (64u << 10)
#define FZ_CSV_LINES 64
#define FZ_BATCH 16

/* What the server made of line k (1-based line numbers, as the reader's). */
typedef struct line_info {
    uint64_t lineno;
    int blank;         /* the reader skips blank lines */
    rt_status st;      /* rt_receiver_csv_row's status */
    rt_err err;
    size_t idx;        /* instance in the server's batch */
    int seen;          /* the trainer handed the row out */
} line_info;

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits data into lines as getline does, strips "\r\n" as the reader does,
 * and runs each through the CSV receiver. Returns the number of lines. */
static size_t serving_rows(rt_batch *b, const uint8_t *data, size_t size,
                           line_info *li)
{
    size_t lines = 0, pos = 0;
    while (pos < size && lines < FZ_CSV_LINES) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t len = nl ? (size_t)(nl - (data + pos)) : size - pos;
        const char *s = (const char *)data + pos;
        line_info *L = &li[lines];
        memset(L, 0, sizeof *L);
        L->lineno = lines + 1;
        size_t e = len;
        while (e && (s[e - 1] == '\n' || s[e - 1] == '\r'))
            e--;
        size_t k = 0;
        while (k < e && is_blank(s[k]))
            k++;
        L->blank = k == e;
        FZ_CHECK(rt_batch_add(b, &L->idx) == RT_OK, "rt_batch_add failed");
        L->st = rt_receiver_csv_row(b, L->idx, s, len, &L->err);
        fz_note("rt_receiver_csv_row", L->st, &L->err);
        FZ_CHECK(L->st == RT_OK || L->err.msg[0] != '\0', "CSV row refused without a message");
        lines++;
        pos += len + 1;
    }
    return lines;
}

/* The in-memory file the reader reads (created once, rewritten per input). */
static int memfile(void)
{
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz_csv_row", 0);
        FZ_CHECK(fd >= 0, "memfd_create failed");
    }
    return fd;
}

/* Number of fields of a line by the shared splitter (-1 when it refuses). */
static long field_count(const char *s, size_t len)
{
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    char *out = malloc(len + 1);
    FZ_CHECK(out != NULL, "out of memory");
    rt_csv_span sp[1];
    long n = rt_raw_csv_split(s, len, out, sp, 0, NULL);
    free(out);
    return n;
}

/* Line k's bytes in data (k 1-based, as serving_rows cut them). */
static const char *line_at(const uint8_t *data, size_t size, uint64_t k, size_t *len)
{
    size_t pos = 0;
    for (uint64_t i = 1;; i++) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t l = nl ? (size_t)(nl - (data + pos)) : size - pos;
        if (i == k) {
            *len = l;
            return (const char *)data + pos;
        }
        pos += l + 1;
    }
}

/* The same values in (bt, 0) and (bs, is) for every raw input. */
static void same_values(const rt_graph *g, const rt_batch *bt, const rt_batch *bs, size_t is)
{
    for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
        size_t nt = 0, ns = 0;
        const rt_value *vt = rt_batch_cell(bt, 0, in, &nt);
        const rt_value *vs = rt_batch_cell(bs, is, in, &ns);
        FZ_CHECK(nt == ns, "trainer and server: different value counts");
        for (size_t k = 0; k < nt; k++) {
            FZ_CHECK(!vt[k].str == !vs[k].str, "trainer and server: number vs string");
            if (vt[k].str) {
                FZ_CHECK(vt[k].len == vs[k].len && memcmp(vt[k].str, vs[k].str, vt[k].len) == 0,
                         "trainer and server: different strings");
            } else {
                FZ_CHECK(memcmp(&vt[k].num, &vs[k].num, sizeof(double)) == 0 ||
                             (isnan(vt[k].num) && isnan(vs[k].num)),
                         "trainer and server: different numbers");
            }
        }
    }
}

/* The reason of a trainer message "PATH:LINE: reason" (NULL if not one). */
static const char *reason_of(const char *msg, const char *path, uint64_t *line)
{
    size_t pl = strlen(path);
    if (strncmp(msg, path, pl) != 0 || msg[pl] != ':')
        return NULL;
    char *end = NULL;
    *line = strtoull(msg + pl + 1, &end, 10);
    if (!end || end[0] != ':' || end[1] != ' ')
        return NULL;
    return end + 2;
}

/* Opens a reader over path with the feeder's schema. */
static trn_reader *open_reader(const trn_feeder *fd, const char *path, trn_bad_row_policy pol)
{
    const char *files[1] = {path};
    size_t n_cols = 0;
    trn_reader_params p = trn_reader_default_params();
    p.files = files;
    p.n_files = 1;
    p.numeric = trn_feeder_numeric(fd, &n_cols);
    p.names = trn_feeder_names(fd);
    p.n_fields = n_cols;
    p.batch_size = FZ_BATCH;
    p.shuffle_buffer_size = 0;
    p.num_epochs = 1;
    p.bad_rows = pol;
    p.prefetch_batches = 2;
    trn_reader *r = NULL;
    rt_err err;
    FZ_CHECK(trn_reader_open(&p, &r, &err) == RT_OK, "trn_reader_open failed on a memfd");
    return r;
}

static void compare(const rt_graph *g, const uint8_t *data, size_t size)
{
    const Predictd__ModelDef *def = rt_graph_def(g);
    size_t ncols = def->n_raw_columns;
    line_info li[FZ_CSV_LINES];
    rt_batch *bs = rt_batch_new(g), *bt = rt_batch_new(g);
    FZ_CHECK(bs && bt, "out of memory");
    size_t lines = serving_rows(bs, data, size, li);

    int mf = memfile();
    FZ_CHECK(ftruncate(mf, 0) == 0, "ftruncate failed");
    size_t used = 0; /* only the lines the server saw */
    if (lines > 0) {
        size_t len = 0;
        const char *last = line_at(data, size, lines, &len);
        used = (size_t)(last - (const char *)data) + len;
        if (used < size)
            used++; /* its newline */
    }
    FZ_CHECK(pwrite(mf, data, used, 0) == (ssize_t)used, "pwrite failed");
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", mf);

    trn_feeder *fd = NULL;
    rt_err err;
    FZ_CHECK(trn_feeder_new(g, &fd, &err) == RT_OK, "trn_feeder_new failed on the model");
    float labels[1];

    /* skip policy: every row the reader accepts, fed one by one */
    trn_reader *r = open_reader(fd, path, TRN_BAD_ROW_SKIP);
    for (;;) {
        const trn_rows *rows = NULL;
        rt_status st = trn_reader_next(r, &rows, &err);
        if (st == RT_ERR_NOTFOUND)
            break;
        FZ_CHECK(st == RT_OK, "reader failed while skipping bad rows");
        FZ_CHECK(rows->n >= 1 && rows->n <= FZ_BATCH, "batch of an unexpected size");
        FZ_CHECK(rows->n_fields == ncols, "rows of the wrong width");
        for (size_t i = 0; i < rows->n; i++) {
            uint64_t ln = rows->src_line[i];
            FZ_CHECK(ln >= 1 && ln <= lines, "row from a line that does not exist");
            line_info *L = &li[ln - 1];
            FZ_CHECK(!L->blank, "the reader handed out a blank line");
            L->seen = 1;
            trn_rows one = {1, rows->n_fields, rows->fields + i * rows->n_fields,
                            rows->src_file + i, rows->src_line + i, NULL, NULL, NULL};
            rt_err ferr = {{0}};
            st = trn_feeder_fill(fd, &one, bt, labels, NULL, TRN_BAD_ROW_STOP, NULL, &ferr);
            fz_note("trn_feeder_fill", st, &ferr);
            if (st != RT_OK) {
                uint64_t at = 0;
                const char *why = reason_of(ferr.msg, path, &at);
                FZ_CHECK(why && at == ln, "feeder refusal without FILE:LINE");
                if (strncmp(why, "label ", 6) == 0)
                    continue; /* the server does not read the label */
                FZ_CHECK(L->st != RT_OK, "the trainer refused a row the server accepted");
                FZ_CHECK(strncmp(L->err.msg, "csv_row: ", 9) == 0 &&
                             strcmp(L->err.msg + 9, why) == 0,
                         "trainer and server refuse a row in different words");
                continue;
            }
            FZ_CHECK(rt_batch_size(bt) == 1, "feeder lost the row");
            FZ_CHECK(labels[0] == 0.0f || labels[0] == 1.0f, "binary label not 0 or 1");
            FZ_CHECK(L->st == RT_OK, "the server refused a row the trainer accepted");
            same_values(g, bt, bs, L->idx);
            fz_run_batch(g, bt);
        }
    }
    trn_reader_close(r);

    /* rows the reader refused: the server refuses them too, unless the
     * server may read them as rows without the label */
    for (size_t k = 0; k < lines; k++) {
        line_info *L = &li[k];
        if (L->blank || L->seen || L->st != RT_OK)
            continue;
        size_t len = 0;
        const char *s = line_at(data, size, L->lineno, &len);
        FZ_CHECK(field_count(s, len) == (long)ncols - 1,
                 "the server accepted a row the trainer's reader refused");
    }

    /* stop policy: the first refusal, in the same words as the server's */
    r = open_reader(fd, path, TRN_BAD_ROW_STOP);
    for (;;) {
        const trn_rows *rows = NULL;
        err.msg[0] = '\0';
        rt_status st = trn_reader_next(r, &rows, &err);
        if (st == RT_ERR_NOTFOUND)
            break;
        if (st == RT_OK)
            continue;
        uint64_t at = 0;
        const char *why = reason_of(err.msg, path, &at);
        FZ_CHECK(why && at >= 1 && at <= lines, "reader refusal without FILE:LINE");
        const line_info *L = &li[at - 1];
        if (strncmp(why, "expected ", 9) == 0 && strstr(why, " fields, got ")) {
            /* a field count: the server counts without the label */
        } else {
            FZ_CHECK(L->st != RT_OK, "the server accepted a row the trainer's reader refused");
            FZ_CHECK(strncmp(L->err.msg, "csv_row: ", 9) == 0 && strcmp(L->err.msg + 9, why) == 0,
                     "trainer and server refuse a row in different words");
        }
        break;
    }
    trn_reader_close(r);

    /* what the server accepted runs through the serving path */
    int all_ok = lines > 0;
    for (size_t k = 0; k < lines; k++)
        all_ok &= li[k].st == RT_OK;
    if (all_ok)
        fz_run_batch(g, bs);
    trn_feeder_free(fd);
    rt_batch_free(bs);
    rt_batch_free(bt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_CSV_MAX)
        return 0;
    compare(rt_model_graph(fz_model(FZ_MODEL_CSV)), data, size);
    return 0;
}
