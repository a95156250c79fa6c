/*
 * srv_gzip.c — gzip request bodies (Content-Encoding: gzip): the body as
 * received is inflated with zlib in pieces of 64 KiB, and the inflated size
 * is checked against the limit after every piece, never trusted from the
 * gzip trailer, so a "zip bomb" costs at most the limit in memory and the
 * work of inflating that much. Also answers in gzip for clients that
 * accept it (gzip_response_min_bytes).
 */
#include "srv_sec.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define PIECE (64u * 1024)

int srv_gzip_coding(const char *ce)
{
    if (!ce)
        return 0;
    while (*ce == ' ' || *ce == '\t')
        ce++;
    size_t n = strlen(ce);
    while (n && (ce[n - 1] == ' ' || ce[n - 1] == '\t'))
        n--;
    if (n == 0 || (n == 8 && !strncasecmp(ce, "identity", 8)))
        return 0;
    if ((n == 4 && !strncasecmp(ce, "gzip", 4)) || (n == 6 && !strncasecmp(ce, "x-gzip", 6)))
        return 1;
    return -1;
}

rt_status srv_gunzip(const void *in, size_t len, size_t limit, rt_buf *out, rt_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) /* 16: gzip header and trailer */
        return rt_err_set(err, RT_ERR_NOMEM, "gzip: cannot start inflating");
    const unsigned char *p = in;
    size_t left = len, made = 0;
    rt_status st = RT_OK;
    int r = Z_OK;
    for (;;) {
        if (z.avail_in == 0) {
            size_t take = left > UINT32_MAX ? UINT32_MAX : left;
            z.next_in = (unsigned char *)(uintptr_t)p;
            z.avail_in = (uInt)take;
            p += take;
            left -= take;
        }
        if (rt_buf_reserve(out, PIECE) != 0) {
            st = rt_err_set(err, RT_ERR_NOMEM, "gzip: out of memory");
            break;
        }
        z.next_out = (unsigned char *)out->data + out->len;
        z.avail_out = PIECE;
        r = inflate(&z, Z_NO_FLUSH);
        size_t got = PIECE - z.avail_out;
        out->len += got;
        out->data[out->len] = '\0';
        made += got;
        if (made > limit) {
            st = rt_err_set(err, RT_ERR_LIMIT, "gzip body inflates to more than %zu bytes "
                            "(max_request_bytes)", limit);
            break;
        }
        if (r == Z_STREAM_END) {
            /* a concatenated member goes on; anything else is refused */
            if (z.avail_in == 0 && left == 0)
                break;
            if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
                inflateReset(&z);
                continue;
            }
            st = rt_err_set(err, RT_ERR_FORMAT, "gzip body: %u bytes after the end of the "
                            "gzip stream", (unsigned)(z.avail_in + left));
            break;
        }
        if (r != Z_OK && !(r == Z_BUF_ERROR && got > 0)) {
            st = rt_err_set(err, RT_ERR_FORMAT, "gzip body: %s",
                            r == Z_BUF_ERROR ? "truncated (the stream does not end)"
                            : z.msg          ? z.msg
                                             : "not gzip data");
            break;
        }
        if (got == 0 && z.avail_in == 0 && left == 0) {
            st = rt_err_set(err, RT_ERR_FORMAT, "gzip body: truncated (the stream does not "
                            "end)");
            break;
        }
    }
    inflateEnd(&z);
    return st;
}

bool srv_gzip_accepted(const char *ae)
{
    if (!ae)
        return false;
    const char *p = ae;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *tok = p;
        while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
            p++;
        size_t tl = (size_t)(p - tok);
        double q = 1;
        const char *end = p + strcspn(p, ",");
        const char *qs = p;
        while (qs < end && (qs = strchr(qs, ';')) && qs < end) {
            qs++;
            while (*qs == ' ' || *qs == '\t')
                qs++;
            if ((qs[0] == 'q' || qs[0] == 'Q') && qs[1] == '=')
                q = strtod(qs + 2, NULL);
        }
        p = end;
        if (q > 0 && ((tl == 4 && !strncasecmp(tok, "gzip", 4)) ||
                      (tl == 6 && !strncasecmp(tok, "x-gzip", 6)) || (tl == 1 && *tok == '*')))
            return true;
    }
    return false;
}

int srv_gzip_compress(const void *in, size_t len, rt_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t bound = deflateBound(&z, (uLong)len);
    int rc = -1;
    if (len <= UINT32_MAX && rt_buf_reserve(out, bound) == 0) {
        z.next_in = (unsigned char *)(uintptr_t)in;
        z.avail_in = (uInt)len;
        z.next_out = (unsigned char *)out->data + out->len;
        z.avail_out = (uInt)bound;
        if (deflate(&z, Z_FINISH) == Z_STREAM_END) {
            out->len += bound - z.avail_out;
            out->data[out->len] = '\0';
            rc = 0;
        }
    }
    deflateEnd(&z);
    return rc;
}
