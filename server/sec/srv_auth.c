/*
 * srv_auth.c — bearer tokens with scopes on the REST port. The tokens file
 * holds no token, only each one's SHA-256 (hex) and its scopes:
 *     # comment
 *     9f86d081...0f00a08 infer,read  ci-client
 * A request's "Authorization: Bearer TOKEN" is hashed and the hash is
 * compared with every stored one in constant time (no early exit on the
 * first differing byte nor on the first match). Tokens are never logged.
 * A reload swaps the table under a read-write lock; a bad file keeps the
 * old one.
 */
#include "srv_sec.h"
#include "srv_limits.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct entry {
    unsigned char hash[32];
    unsigned scopes;
} entry;

struct srv_auth {
    char *path;
    pthread_rwlock_t lock; /* guards tab, n */
    entry *tab;
    size_t n;
    atomic_bool empty_denies_all; /* a reload takes a file without a token */
    atomic_ullong fail[4]; /* by srv_auth_result */
};

static const struct {
    const char *name;
    unsigned bit;
} SCOPES[] = {{"infer", SRV_SCOPE_INFER}, {"read", SRV_SCOPE_READ}, {"metrics", SRV_SCOPE_METRICS},
               {"admin", SRV_SCOPE_ADMIN}};

unsigned srv_auth_parse_scopes(const char *s, size_t len)
{
    unsigned bits = 0;
    size_t i = 0;
    if (len == 0)
        return 0;
    while (i <= len) { /* every segment, an empty last one ("infer,") too */
        size_t j = i;
        while (j < len && s[j] != ',')
            j++;
        unsigned b = 0;
        for (size_t k = 0; k < sizeof SCOPES / sizeof SCOPES[0]; k++)
            if (strlen(SCOPES[k].name) == j - i && !memcmp(SCOPES[k].name, s + i, j - i))
                b = SCOPES[k].bit;
        if (!b)
            return 0;
        bits |= b;
        i = j + 1;
    }
    return bits;
}

void srv_auth_scope_names(unsigned scopes, char *out, size_t len)
{
    size_t w = 0;
    out[0] = '\0';
    for (size_t k = 0; k < sizeof SCOPES / sizeof SCOPES[0]; k++)
        if (scopes & SCOPES[k].bit) {
            int r = snprintf(out + w, len - w, "%s%s", w ? "," : "", SCOPES[k].name);
            if (r < 0 || (size_t)r >= len - w)
                return;
            w += (size_t)r;
        }
}

void srv_auth_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char d[32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

bool srv_auth_new_token(char out[69])
{
    unsigned char r[32];
    if (gnutls_rnd(GNUTLS_RND_KEY, r, sizeof r) < 0)
        return false;
    memcpy(out, "pdt_", 4);
    for (int i = 0; i < 32; i++)
        snprintf(out + 4 + 2 * i, 3, "%02x", r[i]);
    gnutls_memset(r, 0, sizeof r);
    return true;
}

/* What a file that is not a regular one is ("a character device"). */
static const char *file_kind(mode_t m)
{
    return S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
           : S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket"
           : "not a plain file";
}

static rt_status parse(const char *path, entry **tab_out, size_t *n_out, rt_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a symbolic link to /dev/zero is a device, not a file of mode 0666 */
        char target[256] = "";
        struct stat lst;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
            char *real = realpath(path, NULL);
            if (real)
                snprintf(target, sizeof target, ", through a symbolic link to %s", real);
            free(real);
        }
        return rt_err_set(err, RT_ERR_INVALID, "auth_tokens_file %s: not a regular file (%s%s)",
                          path, file_kind(st.st_mode), target);
    }
    if (stat(path, &st) == 0 && (st.st_mode & S_IWOTH))
        return rt_err_set(err, RT_ERR_INVALID, "auth_tokens_file %s: writable by others (mode "
                          "%04o)", path, (unsigned)(st.st_mode & 07777));
    char *text = NULL;
    size_t len = 0;
    rt_err e2 = {{0}};
    rt_status rr = rt_file_read(AT_FDCWD, path, SRV_TOKENS_MAX_BYTES, 0, &text, &len, &e2);
    if (rr != RT_OK)
        return rt_err_set(err, rr, "auth_tokens_file %s", e2.msg);
    entry *tab = NULL;
    size_t n = 0, cap = 0;
    rt_status rs = RT_OK;
    size_t line = 0;
    for (char *p = text; p < text + len;) {
        char *eol = memchr(p, '\n', (size_t)(text + len - p));
        if (!eol)
            eol = text + len;
        line++;
        char *s = p;
        p = eol + 1;
        while (s < eol && isspace((unsigned char)*s))
            s++;
        if (s == eol || *s == '#')
            continue;
        char *h = s;
        while (s < eol && !isspace((unsigned char)*s))
            s++;
        size_t hl = (size_t)(s - h);
        while (s < eol && isspace((unsigned char)*s))
            s++;
        char *sc = s;
        while (s < eol && !isspace((unsigned char)*s))
            s++;
        entry e;
        bool ok = hl == 64;
        for (size_t i = 0; ok && i < 32; i++) {
            int hi = rt_buf_hex_digit(h[2 * i]), lo = rt_buf_hex_digit(h[2 * i + 1]);
            ok = hi >= 0 && lo >= 0;
            e.hash[i] = (unsigned char)(hi * 16 + lo);
        }
        if (!ok) {
            rs = rt_err_set(err, RT_ERR_FORMAT, "%s:%zu: expected the token's SHA-256 as 64 hex "
                            "digits, then its scopes (predictctl token add writes these lines)",
                            path, line);
            break;
        }
        if (!(e.scopes = srv_auth_parse_scopes(sc, (size_t)(s - sc)))) {
            rs = rt_err_set(err, RT_ERR_FORMAT, "%s:%zu: scopes '%.*s': expected a comma list "
                            "of infer, read, metrics, admin", path, line, (int)(s - sc), sc);
            break;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            entry *t = realloc(tab, nc * sizeof *t);
            if (!t) {
                rs = rt_err_set(err, RT_ERR_NOMEM, "auth_tokens_file: out of memory");
                break;
            }
            tab = t;
            cap = nc;
        }
        tab[n++] = e;
    }
    free(text);
    if (rs != RT_OK) {
        free(tab);
        return rs;
    }
    *tab_out = tab;
    *n_out = n;
    return RT_OK;
}

rt_status srv_auth_new(const char *path, srv_auth **out, rt_err *err)
{
    *out = NULL;
    srv_auth *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        return rt_err_set(err, RT_ERR_NOMEM, "auth: out of memory");
    }
    pthread_rwlock_init(&a->lock, NULL);
    rt_status st = parse(path, &a->tab, &a->n, err);
    if (st != RT_OK) {
        srv_auth_free(a);
        return st;
    }
    if (a->n == 0)
        srv_log(SRV_LOG_WARN, "auth_tokens_file %s: no tokens; every request but the health "
                "probes is refused until one is added (predictctl token add)", path);
    *out = a;
    return RT_OK;
}

rt_status srv_auth_reload(srv_auth *a, rt_err *err)
{
    entry *tab;
    size_t n;
    rt_status st = parse(a->path, &tab, &n, err);
    if (st != RT_OK)
        return st;
    if (n == 0 && !atomic_load(&a->empty_denies_all)) {
        free(tab);
        return rt_err_set(err, RT_ERR_INVALID, "auth_tokens_file %s: holds no token, which would "
                          "refuse every request (set auth_tokens_empty_denies_all to mean that)",
                          a->path);
    }
    pthread_rwlock_wrlock(&a->lock);
    entry *old = a->tab;
    a->tab = tab;
    a->n = n;
    pthread_rwlock_unlock(&a->lock);
    free(old);
    return RT_OK;
}

void srv_auth_set_empty_denies_all(srv_auth *a, bool on)
{
    atomic_store(&a->empty_denies_all, on);
}

/* The token of "Bearer TOKEN" (scheme case-insensitive, RFC 6750 §2.1),
 * or NULL. */
static const char *bearer(const char *h, size_t *len)
{
    if (!h)
        return NULL;
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t'))
        return NULL;
    h += 6;
    while (*h == ' ' || *h == '\t')
        h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    if (n == 0)
        return NULL;
    *len = n;
    return h;
}

srv_auth_result srv_auth_check(srv_auth *a, const char *authorization, unsigned scope)
{
    size_t len = 0;
    const char *tok = bearer(authorization, &len);
    srv_auth_result r;
    if (!tok) {
        r = authorization ? SRV_AUTH_INVALID : SRV_AUTH_MISSING;
    } else {
        unsigned char d[32];
        gnutls_hash_fast(GNUTLS_DIG_SHA256, tok, len, d);
        unsigned found = 0; /* the matching entry's scopes, 0 if none */
        pthread_rwlock_rdlock(&a->lock);
        for (size_t i = 0; i < a->n; i++) {
            unsigned char diff = 0;
            for (int k = 0; k < 32; k++)
                diff |= (unsigned char)(d[k] ^ a->tab[i].hash[k]);
            /* mask: all ones when diff == 0, without a branch */
            unsigned eq = (unsigned)(((unsigned)diff - 1u) >> 8) & 1u;
            found |= (0u - eq) & (a->tab[i].scopes | 0x100u);
        }
        pthread_rwlock_unlock(&a->lock);
        r = !found ? SRV_AUTH_INVALID : (found & scope) ? SRV_AUTH_OK : SRV_AUTH_SCOPE;
    }
    if (r != SRV_AUTH_OK)
        atomic_fetch_add(&a->fail[r], 1);
    return r;
}

int srv_auth_metrics(srv_auth *a, rt_buf *out)
{
    return rt_buf_printf(out,
                         "# HELP predictd_auth_failures_total Requests refused by the bearer "
                         "token check, by reason.\n"
                         "# TYPE predictd_auth_failures_total counter\n"
                         "predictd_auth_failures_total{reason=\"missing_token\"} %llu\n"
                         "predictd_auth_failures_total{reason=\"invalid_token\"} %llu\n"
                         "predictd_auth_failures_total{reason=\"insufficient_scope\"} %llu\n",
                         (unsigned long long)atomic_load(&a->fail[SRV_AUTH_MISSING]),
                         (unsigned long long)atomic_load(&a->fail[SRV_AUTH_INVALID]),
                         (unsigned long long)atomic_load(&a->fail[SRV_AUTH_SCOPE]));
}

void srv_auth_free(srv_auth *a)
{
    if (!a)
        return;
    pthread_rwlock_destroy(&a->lock);
    free(a->tab);
    free(a->path);
    free(a);
}
