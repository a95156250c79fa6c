/*
 * rt_tfrecord.c — TFRecord files, as TensorFlow's tf.io.TFRecordWriter and
 * TFRecordDataset write and read them, plain or gzip-compressed (zlib):
 *
 *   uint64 length (little-endian)
 *   uint32 masked CRC-32C of the 8 length bytes
 *   byte   data[length]
 *   uint32 masked CRC-32C of the data
 *
 * with mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8. The runtime's
 * one raw-input module for records: the trainer's reader, predict-model
 * evaluate, convert and batch-predict all read and write records here, and
 * tell CSV from TFRecord by content (rt_tfrecord_sniff). A corrupt record (bad
 * CRC, truncated file) is an error naming the file and the byte offset of the
 * record in the (uncompressed) stream.
 */
#include "rt_data.h"
#include "rt_data_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define HEADER 12             /* length + its CRC */

uint32_t rt_tfrecord_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* ------------------------------------------------------------ formats */

static const char *const FORMAT_NAMES[] = {"AUTO", "CSV", "TFRECORD", "TFRECORD_GZIP"};

const char *rt_tfrecord_format_name(rt_input_format f)
{
    return (unsigned)f < 4 ? FORMAT_NAMES[f] : "?";
}

rt_status rt_tfrecord_format_parse(const char *s, rt_input_format *f)
{
    for (unsigned i = 0; s && i < 4; i++)
        if (strcasecmp(s, FORMAT_NAMES[i]) == 0) {
            *f = (rt_input_format)i;
            return RT_OK;
        }
    return RT_ERR_INVALID;
}

rt_status rt_tfrecord_sniff(const char *path, rt_input_format *f, rt_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                          "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        close(fd); /* a pipe: reading it would spend what the reader needs */
        *f = RT_INPUT_CSV;
        return RT_OK;
    }
    uint8_t magic[2] = {0, 0};
    ssize_t m = pread(fd, magic, 2, 0);
    int gz = m == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    gzFile z = gzdopen(fd, "rb");
    if (!z) {
        close(fd);
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    }
    uint8_t h[HEADER];
    int n = gzread(z, h, HEADER);
    gzclose(z);
    if (n == HEADER && rt_tfrecord_mask(rt_hash_crc32c(0, h, 8)) == le32(h + 8)) {
        *f = gz ? RT_INPUT_TFRECORD_GZIP : RT_INPUT_TFRECORD;
        return RT_OK;
    }
    if (gz)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: gzip-compressed, but not TFRecord records "
                          "(CSV files are read uncompressed)", path);
    *f = RT_INPUT_CSV;
    return RT_OK;
}

/* --------------------------------------------------------------- reader */

struct rt_tfrecord {
    char *path;
    gzFile z;
    uint64_t pos;    /* stream offset of the next record */
    uint64_t end;    /* stop before a record starting here or later (0: none) */
    uint64_t last;   /* offset of the record last returned */
    uint64_t index;  /* records returned or refused so far */
    int dead;        /* the stream cannot go on (bad length, truncated) */
    uint8_t *buf;
    size_t cap;
};

rt_status rt_tfrecord_open(const char *path, uint64_t start, uint64_t end, rt_tfrecord **out,
                           rt_err *err)
{
    *out = NULL;
    rt_tfrecord *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rt_status st = rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                                  "%s: cannot open: %s", path, strerror(errno));
        rt_tfrecord_close(r);
        return st;
    }
    r->z = gzdopen(fd, "rb");
    if (!r->z) {
        close(fd);
        rt_tfrecord_close(r);
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    }
    gzbuffer(r->z, 1u << 17);
    if (start > 0 && gzseek(r->z, (z_off_t)start, SEEK_SET) != (z_off_t)start) {
        rt_tfrecord_close(r);
        return rt_err_set(err, RT_ERR_IO, "%s: cannot seek to offset %llu", path,
                          (unsigned long long)start);
    }
    r->pos = start;
    r->end = end;
    *out = r;
    return RT_OK;
}

/* Reads n bytes; 1 ok, 0 when the stream ended first, -1 on a gzip error. */
static int read_full(rt_tfrecord *r, void *p, size_t n, rt_err *err)
{
    size_t got = 0;
    while (got < n) {
        unsigned want = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
        int k = gzread(r->z, (uint8_t *)p + got, want);
        if (k < 0) {
            int code = 0;
            const char *msg = gzerror(r->z, &code);
            rt_err_set(err, RT_ERR_FORMAT, "%s: offset %llu: %s", r->path,
                       (unsigned long long)r->pos, code == Z_ERRNO ? strerror(errno) : msg);
            return -1;
        }
        if (k == 0) {
            int code = 0;
            const char *msg = gzerror(r->z, &code);
            if (code != Z_OK && code != Z_BUF_ERROR) {
                rt_err_set(err, RT_ERR_FORMAT, "%s: offset %llu: %s", r->path,
                           (unsigned long long)r->pos, msg);
                return -1;
            }
            return got == 0 ? 0 : 2; /* 2: ended inside */
        }
        got += (size_t)k;
    }
    return 1;
}

rt_status rt_tfrecord_next(rt_tfrecord *r, const uint8_t **data, size_t *len, rt_err *err)
{
    *data = NULL;
    *len = 0;
    if (r->dead || (r->end > 0 && r->pos >= r->end))
        return rt_err_set(err, RT_ERR_NOTFOUND, "%s: end of records", r->path);
    uint8_t h[HEADER];
    r->last = r->pos;
    int rc = read_full(r, h, HEADER, err);
    if (rc < 0) {
        r->dead = 1;
        return RT_ERR_FORMAT;
    }
    if (rc == 0) {
        int code = 0;
        gzerror(r->z, &code);
        r->dead = 1;
        if (code == Z_BUF_ERROR) /* the gzip stream itself was cut */
            return rt_err_set(err, RT_ERR_FORMAT, "%s: offset %llu: truncated gzip stream",
                              r->path, (unsigned long long)r->pos);
        return rt_err_set(err, RT_ERR_NOTFOUND, "%s: end of records", r->path);
    }
    r->index++;
    if (rc == 2) {
        r->dead = 1;
        return rt_err_set(err, RT_ERR_FORMAT, "%s: offset %llu: record %llu: truncated "
                          "(the file ends inside the record's 12-byte header)", r->path,
                          (unsigned long long)r->pos, (unsigned long long)r->index);
    }
    uint64_t n = le64(h);
    if (rt_tfrecord_mask(rt_hash_crc32c(0, h, 8)) != le32(h + 8)) {
        r->dead = 1;
        return rt_err_set(err, RT_ERR_FORMAT, "%s: offset %llu: record %llu: corrupt length "
                          "(masked CRC-32C of the length does not match)", r->path,
                          (unsigned long long)r->pos, (unsigned long long)r->index);
    }
    if (n > RT_TFRECORD_MAX_RECORD) {
        r->dead = 1;
        return rt_err_set(err, RT_ERR_LIMIT, "%s: offset %llu: record %llu: %llu bytes "
                          "(more than 1 GiB)", r->path, (unsigned long long)r->pos,
                          (unsigned long long)r->index, (unsigned long long)n);
    }
    if (n + 4 > r->cap) {
        uint8_t *nb = realloc(r->buf, (size_t)n + 4);
        if (!nb)
            return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory for a record of %llu bytes",
                              r->path, (unsigned long long)n);
        r->buf = nb;
        r->cap = (size_t)n + 4;
    }
    rc = read_full(r, r->buf, (size_t)n + 4, err);
    if (rc != 1) {
        r->dead = 1;
        if (rc < 0)
            return RT_ERR_FORMAT;
        return rt_err_set(err, RT_ERR_FORMAT, "%s: offset %llu: record %llu: truncated (the "
                          "file ends inside the record's %llu data bytes and CRC)", r->path,
                          (unsigned long long)r->pos, (unsigned long long)r->index,
                          (unsigned long long)n);
    }
    uint64_t at = r->pos;
    r->pos += HEADER + n + 4;
    if (rt_tfrecord_mask(rt_hash_crc32c(0, r->buf, (size_t)n)) != le32(r->buf + n))
        return rt_err_set(err, RT_ERR_FORMAT, "%s: offset %llu: record %llu: corrupt data "
                          "(masked CRC-32C of the %llu data bytes does not match)", r->path,
                          (unsigned long long)at, (unsigned long long)r->index,
                          (unsigned long long)n);
    *data = r->buf;
    *len = (size_t)n;
    return RT_OK;
}

uint64_t rt_tfrecord_offset(const rt_tfrecord *r)
{
    return r->last;
}

uint64_t rt_tfrecord_pos(const rt_tfrecord *r)
{
    return r->pos;
}

uint64_t rt_tfrecord_file_offset(const rt_tfrecord *r)
{
    z_off_t o = gzoffset(r->z);
    return o < 0 ? r->pos : (uint64_t)o;
}

uint64_t rt_tfrecord_index(const rt_tfrecord *r)
{
    return r->index;
}

void rt_tfrecord_close(rt_tfrecord *r)
{
    if (!r)
        return;
    if (r->z)
        gzclose(r->z);
    free(r->buf);
    free(r->path);
    free(r);
}

rt_status rt_tfrecord_cuts(const char *path, uint64_t chunk, uint64_t **cuts, size_t *n,
                           rt_err *err)
{
    *cuts = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    rt_status st = RT_OK;
    size_t cap = 0;
    if (fstat(fd, &sb) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: stat: %s", path, strerror(errno));
        goto out;
    }
    uint64_t size = (uint64_t)sb.st_size, off = 0, next = 0;
    while (off < size) {
        if (off >= next) { /* the first record at or past the next multiple of chunk */
            if (rt_grow(cuts, &cap, *n + 1, sizeof **cuts) != 0) {
                st = rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
                goto out;
            }
            (*cuts)[(*n)++] = off;
            next = chunk ? (off / chunk + 1) * chunk : UINT64_MAX;
        }
        uint8_t h[HEADER];
        if (pread(fd, h, HEADER, (off_t)off) != HEADER ||
            rt_tfrecord_mask(rt_hash_crc32c(0, h, 8)) != le32(h + 8))
            break; /* the reader reports it, from this record's offset */
        off += HEADER + le64(h) + 4;
    }
out:
    close(fd);
    if (st) {
        free(*cuts);
        *cuts = NULL;
        *n = 0;
    }
    return st;
}

/* --------------------------------------------------------------- writer */

struct rt_tfrecord_writer {
    char *path, *tmp;
    int fd;
    gzFile z; /* gzip; else fd */
    rt_buf out;
};

rt_status rt_tfrecord_writer_open(const char *path, int gzip, rt_tfrecord_writer **out,
                                  rt_err *err)
{
    *out = NULL;
    rt_tfrecord_writer *w = calloc(1, sizeof *w);
    if (!w)
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    w->fd = -1;
    rt_buf_init(&w->out);
    size_t n = strlen(path) + 32;
    w->path = strdup(path);
    w->tmp = malloc(n);
    if (!w->path || !w->tmp) {
        rt_ignore(rt_tfrecord_writer_close(w, 0, NULL)); /* discards: nothing to commit */
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(w->tmp, n, "%s.tmp-%ld", path, (long)getpid());
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        rt_status st = rt_err_set(err, RT_ERR_IO, "%s: cannot create: %s", w->tmp,
                                  strerror(errno));
        free(w->tmp);
        w->tmp = NULL;
        rt_ignore(rt_tfrecord_writer_close(w, 0, NULL)); /* discards: st says why */
        return st;
    }
    if (gzip) {
        int dfd = dup(w->fd);
        w->z = dfd >= 0 ? gzdopen(dfd, "wb6") : NULL;
        if (!w->z) {
            if (dfd >= 0)
                close(dfd);
            rt_ignore(rt_tfrecord_writer_close(w, 0, NULL)); /* discards: nothing written */
            return rt_err_set(err, RT_ERR_NOMEM, "%s: cannot start gzip", path);
        }
    }
    *out = w;
    return RT_OK;
}

static rt_status flush_out(rt_tfrecord_writer *w, rt_err *err)
{
    rt_status st = RT_OK;
    if (w->out.len == 0)
        return RT_OK;
    if (w->z) {
        if (gzwrite(w->z, w->out.data, (unsigned)w->out.len) != (int)w->out.len)
            st = rt_err_set(err, RT_ERR_IO, "%s: gzip write failed", w->tmp);
    } else {
        st = rt_file_write_fd(w->fd, w->out.data, w->out.len, w->tmp, err);
    }
    rt_buf_reset(&w->out);
    return st;
}

rt_status rt_tfrecord_write(rt_tfrecord_writer *w, const void *data, size_t len, rt_err *err)
{
    uint8_t h[HEADER], t[4];
    for (int i = 0; i < 8; i++)
        h[i] = (uint8_t)((uint64_t)len >> (8 * i));
    put32(h + 8, rt_tfrecord_mask(rt_hash_crc32c(0, h, 8)));
    put32(t, rt_tfrecord_mask(rt_hash_crc32c(0, data, len)));
    rt_buf_append(&w->out, h, HEADER);
    rt_buf_append(&w->out, data, len);
    rt_buf_append(&w->out, t, 4);
    if (rt_buf_failed(&w->out))
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", w->path);
    return w->out.len >= (1u << 20) ? flush_out(w, err) : RT_OK;
}

rt_status rt_tfrecord_writer_close(rt_tfrecord_writer *w, int commit, rt_err *err)
{
    if (!w)
        return RT_OK;
    rt_status st = commit ? flush_out(w, err) : RT_OK;
    if (w->z && gzclose(w->z) != Z_OK && st == RT_OK && commit)
        st = rt_err_set(err, RT_ERR_IO, "%s: gzip close failed", w->tmp);
    if (w->fd >= 0) {
        if (st == RT_OK && commit && fsync(w->fd) != 0)
            st = rt_err_set(err, RT_ERR_IO, "%s: fsync: %s", w->tmp, strerror(errno));
        close(w->fd);
    }
    if (w->tmp) {
        if (st == RT_OK && commit)
            st = rt_file_rename_durable(w->tmp, w->path, err);
        if (st != RT_OK || !commit)
            unlink(w->tmp);
    }
    rt_buf_free(&w->out);
    free(w->tmp);
    free(w->path);
    free(w);
    return st;
}
