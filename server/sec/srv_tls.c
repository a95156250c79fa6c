/*
 * srv_tls.c — TLS on the REST port: the certificate chain and key are read,
 * checked (the key matches the certificate, the certificate is valid now,
 * the key file is not readable by others) and handed to libmicrohttpd
 * through its certificate callback, so that a reload (SIGHUP) gives new
 * connections the new pair while open ones keep theirs; a bad new pair
 * leaves the old one serving. A reload whose files hold the same bytes
 * (SHA-256 of the certificate and key files) keeps the serving pair; a
 * replaced pair is freed once the last connection given it has closed
 * (srv_tls_conn_closed), so reloads cost no memory that stays.
 * Mutual TLS: the client CA is given to libmicrohttpd (which asks for a
 * client certificate) and each connection's certificate is verified
 * against it (srv_tls_client_ok) before a request is answered.
 *
 * libmicrohttpd's certificate callback has no closure argument, so the
 * srv_tls it serves is found through `current`, an atomic pointer set once
 * at start (srv_tls_set_current): like main_predictd.c's D, a process-wide
 * global that one daemon per process makes safe.
 */
#include "srv_sec.h"
#include "srv_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define WARN_DAYS 14

typedef struct pair {
    gnutls_pcert_st pcert[SRV_TLS_MAX_CHAIN];
    unsigned n_pcert;
    gnutls_privkey_t key;
    int64_t not_after;
    unsigned char digest[32]; /* SHA-256 of the certificate file, then of the key file */
    size_t users;             /* connections given this pair and not closed (under mu) */
    struct pair *older;       /* replaced pairs still in use (under mu) */
} pair;

/* A connection given a pair in its handshake, until it closes. */
typedef struct pair_use {
    gnutls_session_t s;
    pair *p;
} pair_use;

struct srv_tls {
    char *cert_file, *key_file;
    char *client_ca; /* PEM text or NULL */
    gnutls_x509_trust_list_t trust;
    char *priorities;
    pthread_mutex_t mu; /* guards cur, the older pairs, uses */
    pair *_Atomic cur;
    pair_use *uses; /* the open connections' pairs (under mu) */
    size_t n_uses, cap_uses;
};

static srv_tls *_Atomic current;

/* Frees p and the older pairs it links to. */
static void pair_free(pair *p)
{
    while (p) {
        pair *o = p->older;
        for (unsigned i = 0; i < p->n_pcert; i++)
            gnutls_pcert_deinit(&p->pcert[i]);
        if (p->key)
            gnutls_privkey_deinit(p->key);
        free(p);
        p = o;
    }
}

/* Under t->mu: frees the replaced pairs no open connection uses. */
static void pairs_sweep(srv_tls *t)
{
    pair *cur = atomic_load(&t->cur);
    for (pair **pp = &cur->older; *pp;) {
        pair *o = *pp;
        if (o->users == 0) {
            *pp = o->older;
            o->older = NULL;
            pair_free(o);
        } else {
            pp = &o->older;
        }
    }
}

static void utc(int64_t t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Refuses a certificate (of tls_cert_file) that expired at not_after (-1:
 * never) or is not valid before not_before (-1 or 0: not checked); warns
 * when it expires within WARN_DAYS. */
static rt_status check_dates(const srv_tls *t, int64_t not_after, int64_t not_before,
                             rt_err *err)
{
    time_t na = (time_t)not_after, nb = (time_t)not_before;
    time_t now = time(NULL);
    char when[32];
    if (na != (time_t)-1 && na <= now) {
        utc(na, when, sizeof when);
        return rt_err_set(err, RT_ERR_INVALID, "tls_cert_file %s: the certificate expired at %s",
                          t->cert_file, when);
    }
    if (nb != (time_t)-1 && nb > now) {
        utc(nb, when, sizeof when);
        return rt_err_set(err, RT_ERR_INVALID, "tls_cert_file %s: the certificate is not valid "
                          "before %s", t->cert_file, when);
    }
    if (na != (time_t)-1 && na - now < (time_t)WARN_DAYS * 86400) {
        utc(na, when, sizeof when);
        srv_log(SRV_LOG_WARN, "tls_cert_file %s: the certificate expires at %s, in less than %d "
                "days", t->cert_file, when, WARN_DAYS);
    }
    return RT_OK;
}

/* The DER of a public key (malloc'd into d), 0 or a GnuTLS error. */
static int pub_der(gnutls_pubkey_t k, gnutls_datum_t *d)
{
    return gnutls_pubkey_export2(k, GNUTLS_X509_FMT_DER, d);
}

/* Reads and checks the pair the files hold into *out. When cur is given
 * and the files hold the bytes cur was made from, *out is NULL and
 * *unchanged true (cur's dates are checked again instead). */
static rt_status load_pair(const srv_tls *t, const pair *cur, pair **out, bool *unchanged,
                           rt_err *err)
{
    *out = NULL;
    *unchanged = false;
    struct stat st;
    if (stat(t->key_file, &st) != 0)
        return rt_err_set(err, RT_ERR_NOTFOUND, "tls_key_file %s: cannot open: %s", t->key_file,
                          strerror(errno));
    if (st.st_mode & (S_IROTH | S_IWOTH))
        return rt_err_set(err, RT_ERR_INVALID,
                          "tls_key_file %s: readable by others (mode %04o); chmod 600 (or 640 "
                          "with the daemon's group) it",
                          t->key_file, (unsigned)(st.st_mode & 07777));
    char *cert_pem = NULL, *key_pem = NULL;
    size_t cert_len = 0, key_len = 0;
    rt_err e2 = {{0}};
    rt_status rr =
        rt_file_read(AT_FDCWD, t->cert_file, SRV_TLS_MAX_PEM_BYTES, 0, &cert_pem, &cert_len, &e2);
    if (rr != RT_OK)
        return rt_err_set(err, rr, "tls_cert_file %s", e2.msg);
    if ((rr = rt_file_read(AT_FDCWD, t->key_file, SRV_TLS_MAX_PEM_BYTES, 0, &key_pem, &key_len,
                           &e2)) != RT_OK) {
        free(cert_pem);
        return rt_err_set(err, rr, "tls_key_file %s", e2.msg);
    }
    rt_status rs = RT_OK;
    pair *p = NULL;
    gnutls_pubkey_t kpub = NULL;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    unsigned char digest[32], half[2][32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, cert_pem, cert_len, half[0]);
    gnutls_hash_fast(GNUTLS_DIG_SHA256, key_pem, key_len, half[1]);
    gnutls_hash_fast(GNUTLS_DIG_SHA256, half, sizeof half, digest);
    if (cur && memcmp(cur->digest, digest, sizeof digest) == 0) {
        *unchanged = true;
        rs = check_dates(t, cur->not_after, 0, err);
        goto done;
    }
    if (!(p = calloc(1, sizeof *p))) {
        rs = rt_err_set(err, RT_ERR_NOMEM, "tls: out of memory");
        goto done;
    }
    memcpy(p->digest, digest, sizeof digest);
    gnutls_datum_t cd = {(unsigned char *)cert_pem, (unsigned)cert_len};
    p->n_pcert = SRV_TLS_MAX_CHAIN;
    int r = gnutls_pcert_list_import_x509_raw(p->pcert, &p->n_pcert, &cd, GNUTLS_X509_FMT_PEM,
                                              0);
    if (r < 0 || p->n_pcert == 0) {
        p->n_pcert = 0;
        rs = rt_err_set(err, RT_ERR_FORMAT, "tls_cert_file %s: not a PEM certificate chain: %s",
                        t->cert_file, gnutls_strerror(r));
        goto done;
    }
    gnutls_datum_t kd = {(unsigned char *)key_pem, (unsigned)key_len};
    if ((r = gnutls_privkey_init(&p->key)) < 0 ||
        (r = gnutls_privkey_import_x509_raw(p->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        rs = rt_err_set(err, RT_ERR_FORMAT, "tls_key_file %s: not a PEM private key: %s",
                        t->key_file, gnutls_strerror(r));
        goto done;
    }
    if ((r = gnutls_pubkey_init(&kpub)) < 0 ||
        (r = gnutls_pubkey_import_privkey(kpub, p->key, 0, 0)) < 0 ||
        (r = pub_der(kpub, &a)) < 0 || (r = pub_der(p->pcert[0].pubkey, &b)) < 0) {
        rs = rt_err_set(err, RT_ERR_FORMAT, "tls_key_file %s: cannot read its public key: %s",
                        t->key_file, gnutls_strerror(r));
        goto done;
    }
    if (a.size != b.size || memcmp(a.data, b.data, a.size) != 0) {
        rs = rt_err_set(err, RT_ERR_INVALID,
                        "tls_key_file %s: does not match the certificate of tls_cert_file %s",
                        t->key_file, t->cert_file);
        goto done;
    }
    gnutls_x509_crt_t crt;
    if ((r = gnutls_pcert_export_x509(&p->pcert[0], &crt)) < 0) {
        rs = rt_err_set(err, RT_ERR_FORMAT, "tls_cert_file %s: %s", t->cert_file,
                        gnutls_strerror(r));
        goto done;
    }
    time_t na = gnutls_x509_crt_get_expiration_time(crt);
    time_t nb = gnutls_x509_crt_get_activation_time(crt);
    gnutls_x509_crt_deinit(crt);
    p->not_after = (int64_t)na;
    rs = check_dates(t, (int64_t)na, (int64_t)nb, err);
done:
    gnutls_free(a.data);
    gnutls_free(b.data);
    if (kpub)
        gnutls_pubkey_deinit(kpub);
    gnutls_memset(key_pem, 0, key_len);
    free(key_pem);
    free(cert_pem);
    if (rs != RT_OK)
        pair_free(p);
    else
        *out = p;
    return rs;
}

rt_status srv_tls_check_pem(const char *cert, const char *key, const char *ca,
                            const char *const names[3], rt_err *err)
{
    rt_status rs = RT_OK;
    gnutls_x509_crt_t crts[SRV_TLS_MAX_CHAIN];
    unsigned n_crt = SRV_TLS_MAX_CHAIN;
    gnutls_x509_privkey_t xkey = NULL;
    gnutls_privkey_t pkey = NULL;
    gnutls_pubkey_t kpub = NULL, cpub = NULL;
    gnutls_x509_trust_list_t trust = NULL;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    gnutls_datum_t cd = {(unsigned char *)cert, (unsigned)strlen(cert)};
    int r = gnutls_x509_crt_list_import(crts, &n_crt, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (r <= 0) {
        n_crt = 0;
        return rt_err_set(err, RT_ERR_FORMAT, "%s: not a PEM certificate chain: %s", names[0],
                          r < 0 ? gnutls_strerror(r) : "no certificate found");
    }
    gnutls_datum_t kd = {(unsigned char *)key, (unsigned)strlen(key)};
    if ((r = gnutls_x509_privkey_init(&xkey)) < 0 ||
        (r = gnutls_x509_privkey_import(xkey, &kd, GNUTLS_X509_FMT_PEM)) < 0) {
        rs = rt_err_set(err, RT_ERR_FORMAT, "%s: not a PEM private key: %s", names[1],
                        gnutls_strerror(r));
        goto done;
    }
    if ((r = gnutls_privkey_init(&pkey)) < 0 ||
        (r = gnutls_privkey_import_x509(pkey, xkey, 0)) < 0 ||
        (r = gnutls_pubkey_init(&kpub)) < 0 ||
        (r = gnutls_pubkey_import_privkey(kpub, pkey, 0, 0)) < 0 ||
        (r = gnutls_pubkey_init(&cpub)) < 0 ||
        (r = gnutls_pubkey_import_x509(cpub, crts[0], 0)) < 0 || (r = pub_der(kpub, &a)) < 0 ||
        (r = pub_der(cpub, &b)) < 0) {
        rs = rt_err_set(err, RT_ERR_FORMAT, "%s: cannot read its public key: %s", names[1],
                        gnutls_strerror(r));
        goto done;
    }
    if (a.size != b.size || memcmp(a.data, b.data, a.size) != 0) {
        rs = rt_err_set(err, RT_ERR_INVALID, "%s: does not match the certificate of %s",
                        names[1], names[0]);
        goto done;
    }
    time_t now = time(NULL), na = gnutls_x509_crt_get_expiration_time(crts[0]),
           nb = gnutls_x509_crt_get_activation_time(crts[0]);
    char when[32];
    if (na != (time_t)-1 && na <= now) {
        utc(na, when, sizeof when);
        rs = rt_err_set(err, RT_ERR_INVALID, "%s: the certificate expired at %s", names[0],
                        when);
        goto done;
    }
    if (nb != (time_t)-1 && nb > now) {
        utc(nb, when, sizeof when);
        rs = rt_err_set(err, RT_ERR_INVALID, "%s: the certificate is not valid before %s",
                        names[0], when);
        goto done;
    }
    if (na != (time_t)-1 && na - now < (time_t)WARN_DAYS * 86400) {
        utc(na, when, sizeof when);
        srv_log(SRV_LOG_WARN, "%s: the certificate expires at %s, in less than %d days",
                names[0], when, WARN_DAYS);
    }
    if (ca) {
        gnutls_datum_t d = {(unsigned char *)ca, (unsigned)strlen(ca)};
        if ((r = gnutls_x509_trust_list_init(&trust, 0)) < 0 ||
            (r = gnutls_x509_trust_list_add_trust_mem(trust, &d, NULL, GNUTLS_X509_FMT_PEM, 0,
                                                      0)) <= 0)
            rs = rt_err_set(err, RT_ERR_FORMAT, "%s: no PEM certificate: %s", names[2],
                            r < 0 ? gnutls_strerror(r) : "none found");
    }
done:
    gnutls_free(a.data);
    gnutls_free(b.data);
    if (trust)
        gnutls_x509_trust_list_deinit(trust, 1);
    if (cpub)
        gnutls_pubkey_deinit(cpub);
    if (kpub)
        gnutls_pubkey_deinit(kpub);
    if (pkey)
        gnutls_privkey_deinit(pkey);
    if (xkey)
        gnutls_x509_privkey_deinit(xkey);
    for (unsigned i = 0; i < n_crt; i++)
        gnutls_x509_crt_deinit(crts[i]);
    return rs;
}

static char *dup_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

rt_status srv_tls_new(const srv_tls_params *p, srv_tls **out, rt_err *err)
{
    *out = NULL;
    if (!p->cert_file || !p->key_file)
        return rt_err_set(err, RT_ERR_INVALID, "%s: TLS needs both tls_cert_file and "
                          "tls_key_file", p->cert_file ? "tls_key_file" : "tls_cert_file");
    const char *vers;
    const char *mv = p->min_version ? p->min_version : "TLS1.2";
    if (!strcmp(mv, "TLS1.2"))
        vers = ":-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
    else if (!strcmp(mv, "TLS1.3"))
        vers = ":-VERS-ALL:+VERS-TLS1.3";
    else
        return rt_err_set(err, RT_ERR_INVALID, "tls_min_version '%s': must be TLS1.2 or TLS1.3",
                          mv);
    srv_tls *t = calloc(1, sizeof *t);
    if (!t)
        return rt_err_set(err, RT_ERR_NOMEM, "tls: out of memory");
    pthread_mutex_init(&t->mu, NULL);
    rt_status st = RT_OK;
    t->cert_file = dup_str(p->cert_file);
    t->key_file = dup_str(p->key_file);
    size_t n = strlen(p->priorities ? p->priorities : "") + strlen(vers) + 16;
    t->priorities = malloc(n);
    if (!t->cert_file || !t->key_file || !t->priorities) {
        st = rt_err_set(err, RT_ERR_NOMEM, "tls: out of memory");
        goto fail;
    }
    snprintf(t->priorities, n, "%s%s", p->priorities && *p->priorities ? p->priorities
                                                                        : "SECURE128", vers);
    gnutls_priority_t prio;
    const char *where = NULL;
    int r = gnutls_priority_init(&prio, t->priorities, &where);
    if (r < 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "tls_priorities '%s': %s at '%s'", t->priorities,
                        gnutls_strerror(r), where ? where : "?");
        goto fail;
    }
    gnutls_priority_deinit(prio);
    if (p->client_ca_file) {
        size_t len = 0;
        rt_err e2 = {{0}};
        rt_status rr = rt_file_read(AT_FDCWD, p->client_ca_file, SRV_TLS_MAX_PEM_BYTES, 0,
                                    &t->client_ca, &len, &e2);
        if (rr != RT_OK) {
            st = rt_err_set(err, rr, "tls_client_ca_file %s", e2.msg);
            goto fail;
        }
        gnutls_datum_t d = {(unsigned char *)t->client_ca, (unsigned)len};
        if ((r = gnutls_x509_trust_list_init(&t->trust, 0)) < 0 ||
            (r = gnutls_x509_trust_list_add_trust_mem(t->trust, &d, NULL, GNUTLS_X509_FMT_PEM, 0,
                                                      0)) <= 0) {
            st = rt_err_set(err, RT_ERR_FORMAT, "tls_client_ca_file %s: no PEM certificate: %s",
                            p->client_ca_file, r < 0 ? gnutls_strerror(r) : "none found");
            goto fail;
        }
    }
    pair *first;
    bool same;
    if ((st = load_pair(t, NULL, &first, &same, err)) != RT_OK)
        goto fail;
    atomic_store(&t->cur, first);
    *out = t;
    return RT_OK;
fail:
    srv_tls_free(t);
    return st;
}

rt_status srv_tls_reload(srv_tls *t, bool *unchanged, rt_err *err)
{
    pair *p;
    /* cur is replaced only here, on the one thread that reloads */
    rt_status st = load_pair(t, atomic_load(&t->cur), &p, unchanged, err);
    if (st != RT_OK || *unchanged)
        return st;
    pthread_mutex_lock(&t->mu);
    p->older = atomic_load(&t->cur);
    atomic_store(&t->cur, p);
    pairs_sweep(t);
    pthread_mutex_unlock(&t->mu);
    return RT_OK;
}

int64_t srv_tls_not_after(const srv_tls *t)
{
    srv_tls *m = (srv_tls *)t;
    pthread_mutex_lock(&m->mu);
    int64_t na = atomic_load(&m->cur)->not_after;
    pthread_mutex_unlock(&m->mu);
    return na;
}

const char *srv_tls_priority_string(const srv_tls *t)
{
    return t->priorities;
}

const char *srv_tls_client_ca(const srv_tls *t)
{
    return t->client_ca;
}

/* Set on an I/O thread when srv_tls.c logged why the handshake it serves
 * fails, so that libmicrohttpd's own line for that failure is left out
 * (srv_tls_handshake_logged). */
static _Thread_local bool handshake_logged;

bool srv_tls_handshake_logged(void)
{
    bool was = handshake_logged;
    handshake_logged = false;
    return was;
}

/* "ADDR:PORT" of the session's peer into out (libmicrohttpd gives GnuTLS
 * the socket as an int transport), "?" when it cannot be told. */
static void peer_name(gnutls_session_t s, char *out, size_t len)
{
    snprintf(out, len, "?");
    int fd_in, fd = -1; /* the sending side: the receiving one may be a plain_guard */
    gnutls_transport_get_int2(s, &fd_in, &fd);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    char host[INET6_ADDRSTRLEN], port[8];
    if (fd >= 0 && getpeername(fd, (struct sockaddr *)&sa, &sl) == 0 &&
        getnameinfo((struct sockaddr *)&sa, sl, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf(out, len, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

/* GnuTLS's verify function of a mutual-TLS session: the client's chain
 * must verify against the client CA (the credentials' trust list) for the
 * TLS WWW client purpose, so a certificate whose extendedKeyUsage lacks
 * clientAuth is refused (one without the extension is taken, as OpenSSL
 * and Go take it). A refusal is logged as one line naming the client and
 * why. Returns 0 to go on with the handshake, else a GnuTLS error. */
static int verify_client(gnutls_session_t s)
{
    unsigned n = 0;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0)
        return GNUTLS_E_NO_CERTIFICATE_FOUND; /* client_cert_hook logged it */
    gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID,
                                     (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
    unsigned status = 0;
    int r = gnutls_certificate_verify_peers(s, &purpose, 1, &status);
    if (r == 0 && status == 0)
        return 0;
    char who[80];
    peer_name(s, who, sizeof who);
    if (r == 0 && !(status & ~(unsigned)(GNUTLS_CERT_INVALID | GNUTLS_CERT_PURPOSE_MISMATCH))) {
        srv_log(SRV_LOG_WARN, "TLS handshake from %s refused: its client certificate is not for "
                "TLS clients (its extendedKeyUsage lacks clientAuth)", who);
        handshake_logged = true;
        return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
    }
    gnutls_datum_t why = {NULL, 0};
    if (r == 0)
        gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
    size_t wl = why.data ? strlen((const char *)why.data) : 0;
    while (wl && why.data[wl - 1] == ' ')
        why.data[--wl] = '\0';
    srv_log(SRV_LOG_WARN, "TLS handshake from %s refused: its client certificate %s%s", who,
            r < 0 ? "cannot be verified: " : "does not verify against tls_client_ca_file: ",
            r < 0 ? gnutls_strerror(r) : wl ? (const char *)why.data : "?");
    gnutls_free(why.data);
    handshake_logged = true;
    return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
}

/* GnuTLS's hook after the client's Certificate message arrived: an empty
 * certificate list (TLS 1.3: after the request context) is logged as one
 * line before GnuTLS ends the handshake for it. */
static int client_cert_hook(gnutls_session_t s, unsigned htype, unsigned when,
                            unsigned incoming, const gnutls_datum_t *msg)
{
    (void)htype;
    (void)when;
    if (!incoming || !msg || !msg->data)
        return 0;
    size_t at = 0;
    if (gnutls_protocol_get_version(s) == GNUTLS_TLS1_3) {
        if (msg->size < 1)
            return 0;
        at = 1 + (size_t)msg->data[0]; /* certificate_request_context */
    }
    if (msg->size < at + 3)
        return 0;
    const unsigned char *l = msg->data + at;
    if ((l[0] | l[1] | l[2]) == 0) {
        char who[80];
        peer_name(s, who, sizeof who);
        srv_log(SRV_LOG_WARN, "TLS handshake from %s refused: the client sent no certificate "
                "(tls_client_ca_file requires one)", who);
        handshake_logged = true;
    }
    return 0;
}

/* Plain HTTP on the TLS port (issue 35, item 16): until its first byte
 * arrives, a TLS connection reads through pull_guard with a plain_guard as
 * its receiving transport pointer (the sending side stays libmicrohttpd's
 * socket). A TLS client's first byte is a record type (0x14 to 0x18, or
 * 0x80 and up for an SSLv2 hello); a letter is an HTTP request line. TLS:
 * the socket is given back (pull_sys) and the guard freed. HTTP: the
 * request is read to the end of its header (and what more has arrived, at
 * most 64 KiB), answered 400 in clear text as nginx answers it, and the
 * handshake fails. */
typedef struct plain_guard {
    gnutls_session_t s;
    int fd;
    gnutls_transport_ptr_t send_ptr;
    bool plain;       /* the first byte was a letter */
    bool answered;    /* the 400 was sent */
    unsigned matched; /* bytes of "\r\n\r\n" matched so far */
    size_t seen;      /* bytes of the plain request read */
} plain_guard;

#define PLAIN_MAX_BYTES (64u << 10)
#define PLAIN_MESSAGE "The plain HTTP request was sent to HTTPS port"

static ssize_t pull_sys(gnutls_transport_ptr_t p, void *buf, size_t len)
{
    return recv((int)(intptr_t)p, buf, len, 0);
}

static int pull_timeout_guard(gnutls_transport_ptr_t p, unsigned ms)
{
    return gnutls_system_recv_timeout((gnutls_transport_ptr_t)(intptr_t)((plain_guard *)p)->fd,
                                      ms);
}

/* Gives the session its socket back and frees g. */
static void guard_end(plain_guard *g)
{
    gnutls_transport_set_ptr2(g->s, (gnutls_transport_ptr_t)(intptr_t)g->fd, g->send_ptr);
    gnutls_transport_set_pull_function(g->s, pull_sys);
    gnutls_transport_set_pull_timeout_function(g->s, gnutls_system_recv_timeout);
    free(g);
}

/* Reads the plain request on; true once its header ended (or the client
 * closed, or sent too much), false while more is to come (errno EAGAIN). */
static bool plain_read(plain_guard *g)
{
    unsigned char b[4096];
    bool ended = false;
    for (;;) {
        ssize_t n = recv(g->fd, b, sizeof b, 0);
        if (n <= 0)
            return ended || n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        for (ssize_t i = 0; i < n && !ended; i++) {
            unsigned want = (g->matched % 2 == 0) ? '\r' : '\n';
            g->matched = b[i] == want ? g->matched + 1 : (b[i] == '\r' ? 1 : 0);
            ended = g->matched == 4;
        }
        g->seen += (size_t)n;
        if (g->seen > PLAIN_MAX_BYTES)
            return true;
    }
}

static void plain_answer(plain_guard *g)
{
    static const char body[] = "{\"error\": \"" PLAIN_MESSAGE "\"}";
    char msg[256];
    int n = snprintf(msg, sizeof msg, "HTTP/1.1 400 Bad Request\r\nContent-Type: "
                     "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     sizeof body - 1, body);
    ssize_t w = send(g->fd, msg, (size_t)n, MSG_NOSIGNAL);
    shutdown(g->fd, SHUT_WR);
    char who[80];
    peer_name(g->s, who, sizeof who);
    srv_log(SRV_LOG_WARN, "http: a plain HTTP request sent to the TLS port from %s: %s 400 "
            "\"" PLAIN_MESSAGE "\" in clear text, connection closed", who,
            w == (ssize_t)n ? "answered" : "could not answer");
    handshake_logged = true;
    g->answered = true;
}

static ssize_t pull_guard(gnutls_transport_ptr_t p, void *buf, size_t len)
{
    plain_guard *g = p;
    if (g->answered) {
        errno = ECONNRESET;
        return -1;
    }
    if (!g->plain) {
        unsigned char b;
        ssize_t n = recv(g->fd, &b, 1, MSG_PEEK);
        if (n < 0)
            return -1; /* EAGAIN: nothing yet */
        if (n == 0 || !((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z'))) {
            int fd = g->fd;
            guard_end(g);
            return recv(fd, buf, len, 0);
        }
        g->plain = true;
    }
    if (!plain_read(g)) {
        errno = EAGAIN;
        return -1;
    }
    plain_answer(g);
    errno = ECONNRESET;
    return -1;
}

void srv_tls_guard_plain(void *session)
{
    gnutls_session_t s = session;
    if (!s)
        return;
    plain_guard *g = calloc(1, sizeof *g);
    if (!g)
        return; /* such a connection gets libmicrohttpd's empty reply */
    gnutls_transport_ptr_t r, w;
    gnutls_transport_get_ptr2(s, &r, &w);
    *g = (plain_guard){.s = s, .fd = (int)(intptr_t)r, .send_ptr = w};
    gnutls_transport_set_ptr2(s, g, w);
    gnutls_transport_set_pull_function(s, pull_guard);
    gnutls_transport_set_pull_timeout_function(s, pull_timeout_guard);
}

void srv_tls_conn_closed(void *session)
{
    gnutls_session_t s = session;
    if (!s)
        return;
    gnutls_transport_ptr_t r, w;
    gnutls_transport_get_ptr2(s, &r, &w);
    if (r != w)
        guard_end(r);
    srv_tls *t = atomic_load(&current);
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n_uses; i++)
        if (t->uses[i].s == s) {
            pair *p = t->uses[i].p;
            t->uses[i] = t->uses[--t->n_uses];
            if (--p->users == 0 && p != atomic_load(&t->cur))
                pairs_sweep(t);
            break;
        }
    pthread_mutex_unlock(&t->mu);
}

static int cert_cb(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
                   const gnutls_pk_algorithm_t *algos, int n_algos, gnutls_pcert_st **pcert,
                   unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    (void)req_ca_dn;
    (void)nreqs;
    (void)algos;
    (void)n_algos;
    srv_tls *t = atomic_load(&current);
    if (!t)
        return -1;
    /* mutual TLS: the handshake itself fails without a client certificate
     * that verifies against the client CA (libmicrohttpd only asks for
     * one); srv_tls_client_ok checks again before a request is answered */
    if (t->trust) {
        gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_function(s, verify_client);
        gnutls_handshake_set_hook_function(s, GNUTLS_HANDSHAKE_CERTIFICATE_PKT, GNUTLS_HOOK_POST,
                                           client_cert_hook);
    }
    pthread_mutex_lock(&t->mu);
    pair *p = atomic_load(&t->cur);
    size_t i = 0;
    while (i < t->n_uses && t->uses[i].s != s) /* a second handshake (renegotiation) */
        i++;
    if (i == t->n_uses) {
        if (t->n_uses == t->cap_uses) {
            size_t nc = t->cap_uses ? 2 * t->cap_uses : 64;
            pair_use *u = realloc(t->uses, nc * sizeof *u);
            if (!u) {
                pthread_mutex_unlock(&t->mu);
                return -1; /* out of memory: this handshake fails */
            }
            t->uses = u;
            t->cap_uses = nc;
        }
        t->uses[t->n_uses++] = (pair_use){.s = s, .p = p};
    } else {
        t->uses[i].p->users--;
        t->uses[i].p = p;
    }
    p->users++;
    pthread_mutex_unlock(&t->mu);
    *pcert = p->pcert;
    *pcert_length = p->n_pcert;
    *pkey = p->key;
    return 0;
}

void *srv_tls_cert_callback(void)
{
    return (void *)(uintptr_t)cert_cb;
}

void srv_tls_set_current(srv_tls *t)
{
    atomic_store(&current, t);
}

bool srv_tls_client_ok(const srv_tls *t, void *session)
{
    if (!t || !t->trust)
        return true;
    gnutls_session_t s = session;
    if (!s)
        return false;
    unsigned n = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
    if (!certs || n == 0)
        return false;
    gnutls_x509_crt_t chain[SRV_TLS_MAX_CHAIN];
    unsigned m = 0;
    bool ok = false;
    for (; m < n && m < SRV_TLS_MAX_CHAIN; m++)
        if (gnutls_x509_crt_init(&chain[m]) < 0 ||
            gnutls_x509_crt_import(chain[m], &certs[m], GNUTLS_X509_FMT_DER) < 0) {
            m++;
            goto out;
        }
    unsigned status = 1;
    if (gnutls_x509_trust_list_verify_crt(t->trust, chain, m, 0, &status, NULL) == 0 &&
        status == 0)
        ok = true;
out:
    for (unsigned i = 0; i < m; i++)
        gnutls_x509_crt_deinit(chain[i]);
    return ok;
}

int srv_tls_metrics(const srv_tls *t, rt_buf *out)
{
    return rt_buf_printf(out,
                         "# HELP predictd_tls_certificate_expiry_timestamp_seconds notAfter of "
                         "the serving TLS certificate (seconds since the epoch).\n"
                         "# TYPE predictd_tls_certificate_expiry_timestamp_seconds gauge\n"
                         "predictd_tls_certificate_expiry_timestamp_seconds %lld\n",
                         (long long)srv_tls_not_after(t));
}

void srv_tls_free(srv_tls *t)
{
    if (!t)
        return;
    if (atomic_load(&current) == t)
        atomic_store(&current, NULL);
    pair_free(atomic_load(&t->cur));
    free(t->uses);
    if (t->trust)
        gnutls_x509_trust_list_deinit(t->trust, 1);
    free(t->client_ca);
    free(t->priorities);
    free(t->cert_file);
    free(t->key_file);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
