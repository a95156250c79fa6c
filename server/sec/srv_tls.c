/*
 * srv_tls.c — TLS on the REST port: the certificate chain and key are read,
 * checked (the key matches the certificate, the certificate is valid now,
 * the key file is not readable by others) and handed to libmicrohttpd
 * through its certificate callback, so that a reload (SIGHUP) gives new
 * connections the new pair while open ones keep theirs; a bad new pair
 * leaves the old one serving. Pairs are never freed before the daemon
 * stops (a handshake may still hold one); a reload adds one pair's bytes.
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
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
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
    struct pair *older; /* kept until srv_tls_free */
} pair;

struct srv_tls {
    char *cert_file, *key_file;
    char *client_ca; /* PEM text or NULL */
    gnutls_x509_trust_list_t trust;
    char *priorities;
    pthread_mutex_t mu; /* guards cur (swaps) */
    pair *_Atomic cur;
};

static srv_tls *_Atomic current;

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

static void utc(int64_t t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The DER of a public key (malloc'd into d), 0 or a GnuTLS error. */
static int pub_der(gnutls_pubkey_t k, gnutls_datum_t *d)
{
    return gnutls_pubkey_export2(k, GNUTLS_X509_FMT_DER, d);
}

static rt_status load_pair(const srv_tls *t, pair **out, rt_err *err)
{
    *out = NULL;
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
    rt_status rr = rt_read_file(AT_FDCWD, t->cert_file, SRV_TLS_MAX_PEM_BYTES, 0, &cert_pem, &cert_len, &e2);
    if (rr != RT_OK)
        return rt_err_set(err, rr, "tls_cert_file %s", e2.msg);
    if ((rr = rt_read_file(AT_FDCWD, t->key_file, SRV_TLS_MAX_PEM_BYTES, 0, &key_pem, &key_len, &e2)) !=
        RT_OK) {
        free(cert_pem);
        return rt_err_set(err, rr, "tls_key_file %s", e2.msg);
    }
    rt_status rs = RT_OK;
    pair *p = calloc(1, sizeof *p);
    gnutls_pubkey_t kpub = NULL;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    if (!p) {
        rs = rt_err_set(err, RT_ERR_NOMEM, "tls: out of memory");
        goto done;
    }
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
    time_t now = time(NULL);
    char when[32];
    if (na != (time_t)-1 && na <= now) {
        utc(na, when, sizeof when);
        rs = rt_err_set(err, RT_ERR_INVALID, "tls_cert_file %s: the certificate expired at %s",
                        t->cert_file, when);
        goto done;
    }
    if (nb != (time_t)-1 && nb > now) {
        utc(nb, when, sizeof when);
        rs = rt_err_set(err, RT_ERR_INVALID, "tls_cert_file %s: the certificate is not valid "
                        "before %s", t->cert_file, when);
        goto done;
    }
    if (na != (time_t)-1 && na - now < (time_t)WARN_DAYS * 86400) {
        utc(na, when, sizeof when);
        srv_log(SRV_LOG_WARN, "tls_cert_file %s: the certificate expires at %s, in less than %d "
                "days", t->cert_file, when, WARN_DAYS);
    }
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
        rt_status rr = rt_read_file(AT_FDCWD, p->client_ca_file, SRV_TLS_MAX_PEM_BYTES, 0, &t->client_ca,
                                    &len, &e2);
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
    if ((st = load_pair(t, &first, err)) != RT_OK)
        goto fail;
    atomic_store(&t->cur, first);
    *out = t;
    return RT_OK;
fail:
    srv_tls_free(t);
    return st;
}

rt_status srv_tls_reload(srv_tls *t, rt_err *err)
{
    pair *p;
    rt_status st = load_pair(t, &p, err);
    if (st != RT_OK)
        return st;
    pthread_mutex_lock(&t->mu);
    p->older = atomic_load(&t->cur);
    atomic_store(&t->cur, p);
    pthread_mutex_unlock(&t->mu);
    return RT_OK;
}

int64_t srv_tls_not_after(const srv_tls *t)
{
    return atomic_load(&((srv_tls *)t)->cur)->not_after;
}

const char *srv_tls_priority_string(const srv_tls *t)
{
    return t->priorities;
}

const char *srv_tls_client_ca(const srv_tls *t)
{
    return t->client_ca;
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
        gnutls_session_set_verify_cert(s, NULL, 0);
    }
    pair *p = atomic_load(&t->cur);
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
    if (t->trust)
        gnutls_x509_trust_list_deinit(t->trust, 1);
    free(t->client_ca);
    free(t->priorities);
    free(t->cert_file);
    free(t->key_file);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
