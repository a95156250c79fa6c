/*
 * pm_input.c — the rows of predict-model's input files, for convert and
 * batch-predict: the file list (comma lists and globs), the formats
 * (Vertex AI's instancesFormat names and CMLE's data formats), and one
 * reader over a file or a byte range of it that yields lines (CSV, JSONL,
 * file lists) or records (TFRecord, through the runtime's rt_tfrecord). A
 * byte range [start, end) holds the rows that begin in it, so ranges cut
 * anywhere share a file's rows out exactly once; TFRecord ranges are cut at
 * record boundaries (rt_tfrecord_cuts), gzip files are never cut. A line
 * is read a chunk at a time and never held past the line limit: a longer
 * one is an error of its own (FILE:LINE) and reading goes on at the next.
 */
#include "pm.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const struct {
    const char *name;
    pm_in_format f;
} FORMATS[] = {
    {"jsonl", PM_IN_JSONL},           {"TEXT", PM_IN_JSONL},
    {"JSON", PM_IN_JSONL},            {"csv", PM_IN_CSV},
    {"tf-record", PM_IN_TFRECORD},    {"TF_RECORD", PM_IN_TFRECORD},
    {"tfrecord", PM_IN_TFRECORD},     {"tf-record-gzip", PM_IN_TFRECORD_GZIP},
    {"TF_RECORD_GZIP", PM_IN_TFRECORD_GZIP}, {"tfrecord-gzip", PM_IN_TFRECORD_GZIP},
    {"file-list", PM_IN_FILE_LIST},
};

int pm_in_format_parse(const char *s, pm_in_format *f)
{
    for (size_t i = 0; s && i < sizeof FORMATS / sizeof FORMATS[0]; i++)
        if (strcmp(s, FORMATS[i].name) == 0 || strcasecmp(s, FORMATS[i].name) == 0) {
            *f = FORMATS[i].f;
            return 0;
        }
    return -1;
}

const char *pm_in_format_name(pm_in_format f)
{
    switch (f) {
    case PM_IN_JSONL: return "jsonl";
    case PM_IN_CSV: return "csv";
    case PM_IN_TFRECORD: return "tf-record";
    case PM_IN_TFRECORD_GZIP: return "tf-record-gzip";
    case PM_IN_FILE_LIST: return "file-list";
    }
    return "?";
}

static rt_status add_path(char ***v, size_t *n, const char *p, rt_err *err)
{
    char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv || !(nv[*n] = strdup(p))) {
        if (nv)
            *v = nv;
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    *v = nv;
    (*n)++;
    return RT_OK;
}

rt_status pm_expand_inputs(const char *const *pats, size_t n_pats, char ***files, size_t *n,
                           rt_err *err)
{
    *files = NULL;
    *n = 0;
    rt_status st = RT_OK;
    for (size_t i = 0; i < n_pats && st == RT_OK; i++) {
        char *copy = strdup(pats[i]), *save = NULL;
        if (!copy)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (char *one = strtok_r(copy, ",", &save); one && st == RT_OK;
             one = strtok_r(NULL, ",", &save)) {
            if (!strpbrk(one, "*?[")) {
                struct stat sb;
                if (stat(one, &sb) != 0)
                    st = rt_err_set(err, RT_ERR_NOTFOUND, "--input %s: %s", one, strerror(errno));
                else if (!S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode))
                    st = rt_err_set(err, RT_ERR_INVALID, "--input %s: not a regular file", one);
                else
                    st = add_path(files, n, one, err);
                continue;
            }
            glob_t g;
            memset(&g, 0, sizeof g);
            int rc = glob(one, 0, NULL, &g);
            if (rc == GLOB_NOMATCH)
                st = rt_err_set(err, RT_ERR_NOTFOUND, "--input %s: no file matches", one);
            else if (rc != 0)
                st = rt_err_set(err, RT_ERR_IO, "--input %s: glob failed", one);
            for (size_t k = 0; rc == 0 && k < g.gl_pathc && st == RT_OK; k++)
                st = add_path(files, n, g.gl_pathv[k], err);
            globfree(&g);
        }
        free(copy);
    }
    if (st == RT_OK && *n == 0)
        st = rt_err_set(err, RT_ERR_NOTFOUND, "--input: no file named");
    if (st != RT_OK) {
        for (size_t i = 0; i < *n; i++)
            free((*files)[i]);
        free(*files);
        *files = NULL;
        *n = 0;
    }
    return st;
}

/* ------------------------------------------------------------- reader */

#define IN_CHUNK 65536 /* bytes read from the file at a time */

struct pm_in {
    const char *path;
    pm_in_format f;
    FILE *fp;           /* lines */
    rt_tfrecord *tf;    /* records */
    uint64_t pos, end;  /* lines: offset of the next line; stop at end (0: EOF) */
    uint64_t lineno;    /* lines: number of the line last returned */
    size_t skip;        /* header lines still to skip (a range from 0 only) */
    size_t max_line;    /* lines: a longer one is refused, never held whole */
    int limit_set;      /* max_line is the caller's (--max-line-bytes) */
    char *line;         /* the line being read, at most max_line + a chunk */
    size_t cap;
    char *chunk;        /* bytes read from fp, [cpos, clen) not yet taken */
    size_t cpos, clen;
    uint64_t size;      /* records: the file's size (the bytes a loss leaves unread) */
    int gz;             /* records: the file is gzip-compressed */
    int stopped;        /* records: the last error left the rest unreadable */
};

/* Reads the next line of in's file into in->line (n bytes, its '\n' kept),
 * holding no more than max_line bytes of it: *over 1 for a longer line (its
 * bytes are consumed, in->line then holds none of them). *took: the bytes the
 * line spans in the file, 0 at the end of the file. */
static rt_status read_line(pm_in *in, uint64_t *took, size_t *n, int *over, rt_err *err)
{
    *took = 0;
    *n = 0;
    *over = 0;
    for (;;) {
        if (in->cpos == in->clen) {
            in->cpos = 0;
            in->clen = fread(in->chunk, 1, IN_CHUNK, in->fp);
            if (in->clen == 0)
                return ferror(in->fp) ? rt_err_set(err, RT_ERR_IO, "%s: read error: %s",
                                                   in->path, strerror(errno))
                                      : RT_OK;
        }
        const char *p = in->chunk + in->cpos;
        const char *nl = memchr(p, '\n', in->clen - in->cpos);
        size_t take = nl ? (size_t)(nl - p) + 1 : in->clen - in->cpos;
        in->cpos += take;
        *took += take;
        if (!*over && *n + take - (nl != NULL) > in->max_line) {
            *over = 1;
            *n = 0;
        }
        if (!*over) {
            if (rt_grow(&in->line, &in->cap, *n + take + 1, 1) != 0)
                return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory for a line", in->path);
            memcpy(in->line + *n, p, take);
            *n += take;
        }
        if (nl)
            return RT_OK;
    }
}

/* The number of '\n' bytes in fp's first n bytes (line numbers of a range). */
static rt_status count_lines(FILE *fp, uint64_t n, uint64_t *lines, const char *path,
                             rt_err *err)
{
    char buf[65536];
    *lines = 0;
    while (n > 0) {
        size_t want = n > sizeof buf ? sizeof buf : (size_t)n;
        size_t got = fread(buf, 1, want, fp);
        if (got == 0)
            return rt_err_set(err, RT_ERR_IO, "%s: read error", path);
        for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + got - p))) != NULL; p++)
            (*lines)++;
        n -= got;
    }
    return RT_OK;
}

rt_status pm_in_open(const char *path, pm_in_format f, uint64_t start, uint64_t end,
                     size_t skip_header, pm_in **out, rt_err *err)
{
    *out = NULL;
    pm_in *in = calloc(1, sizeof *in);
    if (!in)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    in->path = path;
    in->f = f;
    in->end = end;
    in->max_line = PM_MAX_LINE_DEFAULT;
    rt_status st = RT_OK;
    if (f == PM_IN_TFRECORD || f == PM_IN_TFRECORD_GZIP) {
        struct stat sb;
        rt_input_format kind;
        in->size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        in->gz = rt_tfrecord_sniff(path, &kind, NULL) == RT_OK && kind == RT_INPUT_TFRECORD_GZIP;
        st = rt_tfrecord_open(path, start, end, &in->tf, err);
        goto out;
    }
    in->fp = fopen(path, "r");
    if (!in->fp || !(in->chunk = malloc(IN_CHUNK))) {
        st = in->fp ? rt_err_set(err, RT_ERR_NOMEM, "out of memory")
                    : rt_err_set(err, RT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto out;
    }
    in->skip = start == 0 ? skip_header : 0;
    if (start > 0) { /* the rows that begin in the range: skip the one begun before */
        if ((st = count_lines(in->fp, start - 1, &in->lineno, path, err)))
            goto out;
        uint64_t took;
        size_t n;
        int over;
        in->max_line = 0; /* its bytes are not wanted */
        if ((st = read_line(in, &took, &n, &over, err)))
            goto out;
        in->max_line = PM_MAX_LINE_DEFAULT;
        in->pos = start - 1 + took;
        in->lineno++;
        if (took == 0)
            in->pos = UINT64_MAX; /* nothing begins in the range */
    }
out:
    if (st) {
        pm_in_close(in);
        return st;
    }
    *out = in;
    return RT_OK;
}

rt_status pm_in_next(pm_in *in, const uint8_t **data, size_t *len, uint64_t *where, rt_err *err)
{
    if (in->tf) {
        rt_status st = rt_tfrecord_next(in->tf, data, len, err);
        *where = rt_tfrecord_index(in->tf);
        /* a record the reader could not frame (its length, a truncated or
         * broken stream) did not move it on: it reads nothing more */
        in->stopped = (st == RT_ERR_FORMAT || st == RT_ERR_LIMIT) &&
                      rt_tfrecord_pos(in->tf) == rt_tfrecord_offset(in->tf);
        return st;
    }
    for (;;) {
        if (in->pos == UINT64_MAX || (in->end > 0 && in->pos >= in->end))
            return rt_err_set(err, RT_ERR_NOTFOUND, "%s: end", in->path);
        uint64_t took;
        size_t n;
        int over;
        rt_status st = read_line(in, &took, &n, &over, err);
        if (st)
            return st;
        if (took == 0) {
            in->pos = UINT64_MAX;
            continue;
        }
        in->pos += took;
        in->lineno++;
        while (n && (in->line[n - 1] == '\n' || in->line[n - 1] == '\r'))
            n--;
        if (in->skip > 0) {
            in->skip--;
            continue;
        }
        if (over) {
            *where = in->lineno;
            return rt_err_set(err, RT_ERR_LIMIT, "%s:%llu: the line is longer than %zu bytes "
                              "(%s): %llu bytes, not read", in->path,
                              (unsigned long long)in->lineno, in->max_line,
                              in->limit_set ? "--max-line-bytes" : "the line limit",
                              (unsigned long long)took);
        }
        size_t k = 0;
        while (k < n && (in->line[k] == ' ' || in->line[k] == '\t'))
            k++;
        if (k == n)
            continue; /* a blank line */
        in->line[n] = '\0';
        *data = (const uint8_t *)in->line;
        *len = n;
        *where = in->lineno;
        return RT_OK;
    }
}

int pm_in_lost(const pm_in *in, uint64_t *offset, uint64_t *bytes, int *compressed)
{
    if (!in->tf || !in->stopped)
        return 0;
    *offset = rt_tfrecord_offset(in->tf);
    *compressed = in->gz;
    uint64_t from = in->gz ? rt_tfrecord_file_offset(in->tf) : *offset;
    uint64_t to = !in->gz && in->end > 0 ? in->end : in->size;
    *bytes = to > from ? to - from : 0;
    return 1;
}

void pm_in_set_max_line(pm_in *in, size_t max_line)
{
    in->max_line = max_line;
    in->limit_set = 1;
}

int pm_in_records(const pm_in *in)
{
    return in->tf != NULL;
}

void pm_in_close(pm_in *in)
{
    if (!in)
        return;
    if (in->fp)
        fclose(in->fp);
    rt_tfrecord_close(in->tf);
    free(in->chunk);
    free(in->line);
    free(in);
}
