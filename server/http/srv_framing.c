/*
 * srv_framing.c — refuses requests whose framing two HTTP parsers could read
 * differently (request smuggling, RFC 9112 sections 2.2, 5, 6): both
 * Content-Length and Transfer-Encoding, Content-Length or Transfer-Encoding
 * given twice, a transfer coding other than "chunked" (501), header names
 * that are not tokens (white space before the colon), control characters in
 * values (bare CR, DEL), and, from the header block as libmicrohttpd 0.9.x
 * leaves it, bare LF line endings, obsolete line folding and NUL bytes.
 *
 * libmicrohttpd 0.9.75 (Debian 12) accepts all of these: it frames by
 * Transfer-Encoding and ignores Content-Length, uses the first of two
 * Content-Lengths, reads a body of unknown coding until the client closes,
 * accepts a bare LF as a line end, appends a folded line to the header's
 * NAME, keeps "Transfer-Encoding " (with the space) as a different header,
 * and cuts a value at a NUL byte. It parses the header block in place: CR
 * and LF become NUL, the colon becomes NUL, names and values point into the
 * block. srv_framing_check_block walks that block from the HTTP version of
 * the request line through every header to the final empty line and
 * refuses anything but "NAME\0 OWS VALUE\0\0": the bytes the parsed fields
 * do not account for are exactly the shapes above. Pure functions, no
 * libmicrohttpd types: thread-safe.
 */
#include "srv.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool name_is(const srv_field *f, const char *name)
{
    size_t n = strlen(name);
    return f->name_len == n && strncasecmp(f->name, name, n) == 0;
}

/* The value without the white space around it. */
static void trim(const char *v, size_t n, const char **out, size_t *out_len)
{
    while (n && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    *out = v;
    *out_len = n;
}

int srv_framing_check(const srv_field *f, size_t n, bool http10, char *msg, size_t msg_len)
{
    size_t n_cl = 0, n_te = 0;
    const srv_field *te = NULL;
    for (size_t i = 0; i < n; i++) {
        if (f[i].name_len == 0) {
            snprintf(msg, msg_len, "bad request framing: a header has an empty name");
            return 400;
        }
        for (size_t k = 0; k < f[i].name_len; k++)
            if (!is_tchar((unsigned char)f[i].name[k])) {
                snprintf(msg, msg_len,
                         "bad request framing: header name '%.*s' has character 0x%02x "
                         "(white space before ':' is not allowed)",
                         (int)(f[i].name_len > 64 ? 64 : f[i].name_len), f[i].name,
                         (unsigned char)f[i].name[k]);
                return 400;
            }
        for (size_t k = 0; k < f[i].value_len; k++) {
            unsigned char c = (unsigned char)f[i].value[k];
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                snprintf(msg, msg_len,
                         "bad request framing: header '%.*s' has control character 0x%02x "
                         "in its value",
                         (int)(f[i].name_len > 64 ? 64 : f[i].name_len), f[i].name, c);
                return 400;
            }
        }
        if (name_is(&f[i], "Content-Length"))
            n_cl++;
        if (name_is(&f[i], "Transfer-Encoding")) {
            n_te++;
            te = &f[i];
        }
    }
    if (n_cl > 1) {
        snprintf(msg, msg_len, "bad request framing: Content-Length given %zu times", n_cl);
        return 400;
    }
    if (n_te > 1) {
        snprintf(msg, msg_len, "bad request framing: Transfer-Encoding given %zu times", n_te);
        return 400;
    }
    if (n_te && n_cl) {
        snprintf(msg, msg_len,
                 "bad request framing: both Content-Length and Transfer-Encoding given");
        return 400;
    }
    if (te && http10) {
        snprintf(msg, msg_len, "bad request framing: Transfer-Encoding in an HTTP/1.0 request");
        return 400;
    }
    if (te) {
        const char *v;
        size_t vn;
        trim(te->value, te->value_len, &v, &vn);
        if (vn != 7 || strncasecmp(v, "chunked", 7) != 0) {
            snprintf(msg, msg_len,
                     "transfer coding '%.*s' is not supported (only chunked is)",
                     (int)(vn > 64 ? 64 : vn), v);
            return 501;
        }
    }
    return 0;
}

/* What ends a line at p (the first byte after its content) when the next
 * line should start at want (NULL: the final empty line, then end). */
static const char *line_end_problem(const char *p, const char *want, const char *end)
{
    if (want && p + 2 == want && p[0] == '\0' && p[1] == '\0')
        return NULL; /* CRLF */
    if (!want && p + 4 == end && !memcmp(p, "\0\0\0\0", 4))
        return NULL; /* CRLF, then the empty line's CRLF */
    if (want ? p + 1 == want : (p + 2 == end || p + 3 == end))
        return "a bare LF line ending (lines end with CRLF)";
    if (p + 2 < end && p[0] == '\0' && p[1] == '\0' && (p[2] == ' ' || p[2] == '\t'))
        return "obsolete line folding (a line starting with white space)";
    if (p + 1 < end && p[0] == '\0' && (p[1] == ' ' || p[1] == '\t'))
        return "obsolete line folding (a line starting with white space)";
    return "a NUL byte or a stray line ending inside a line";
}

int srv_framing_check_block(const char *block, size_t block_len, const char *version,
                            const srv_field *f, size_t n, char *msg, size_t msg_len)
{
    const char *end = block + block_len;
    if (!version || version < block || version >= end) {
        snprintf(msg, msg_len, "bad request framing: malformed request line");
        return 400;
    }
    const char *p = version + strnlen(version, (size_t)(end - version));
    for (size_t i = 0; i <= n; i++) {
        const char *want = i < n ? f[i].name : NULL;
        if (want && (want < block || want >= end)) {
            /* libmicrohttpd 0.9.75 moves a name out of the block only to
             * append a folded line to it */
            snprintf(msg, msg_len,
                     "bad request framing: obsolete line folding (a line starting with "
                     "white space) in header '%.*s'",
                     (int)(f[i].name_len > 64 ? 64 : f[i].name_len), f[i].name);
            return 400;
        }
        const char *bad = p < end ? line_end_problem(p, want, end) : "a truncated header block";
        if (bad) {
            if (i == 0)
                snprintf(msg, msg_len, "bad request framing: %s after the request line", bad);
            else
                snprintf(msg, msg_len, "bad request framing: %s in or after header '%.*s'",
                         bad, (int)(f[i - 1].name_len > 64 ? 64 : f[i - 1].name_len),
                         f[i - 1].name);
            return 400;
        }
        if (i == n)
            break;
        /* NAME\0, optional white space, VALUE */
        const char *colon = f[i].name + f[i].name_len;
        const char *v = f[i].value;
        bool ok = colon < end && *colon == '\0' && v > colon && v <= end &&
                  (size_t)(end - v) >= f[i].value_len;
        for (const char *q = colon + 1; ok && q < v; q++)
            ok = *q == ' ' || *q == '\t';
        if (!ok) {
            snprintf(msg, msg_len,
                     "bad request framing: obsolete line folding or a NUL byte in header "
                     "'%.*s'",
                     (int)(f[i].name_len > 64 ? 64 : f[i].name_len), f[i].name);
            return 400;
        }
        p = v + f[i].value_len;
    }
    return 0;
}
