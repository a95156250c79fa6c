/*
 * srv_sec.h — the REST port's transport security and access control, the
 * server's own (not part of srv.h so that the pieces stay apart):
 *   srv_tls.c   TLS and mutual TLS: certificate, key and client CA loaded
 *               and checked (key matches, not expired, key not readable by
 *               others), GnuTLS priorities, reload for new connections
 *   srv_auth.c  bearer tokens with scopes: the tokens file (SHA-256 hashes),
 *               the check of a request's Authorization header, counters
 */
#ifndef PREDICTD_SRV_SEC_H
#define PREDICTD_SRV_SEC_H

#if !defined(PREDICTD_MODULE_server) && !defined(PREDICTD_MODULE_tests)
#error "srv_sec.h is server's own; other modules include srv.h (docs/design.md)"
#endif

#include "srv.h"

#include <stdint.h>

/* ------------------------------------------------------------------ TLS */

typedef struct srv_tls srv_tls;

typedef struct srv_tls_params {
    const char *cert_file;      /* PEM: the certificate, then its chain */
    const char *key_file;       /* PEM private key; refused when others may read it */
    const char *client_ca_file; /* PEM CA(s); non-NULL: clients must show a cert it signed */
    const char *min_version;    /* "TLS1.2" or "TLS1.3" */
    const char *priorities;     /* GnuTLS priority string (versions are added) */
} srv_tls_params;

/* Loads and checks the files: errors name the setting and file
 * ("tls_key_file /etc/k.pem: readable by others (mode 0644); chmod 600
 * it"), refusing a key that does not match the certificate, an expired (or
 * not yet valid) certificate, a bad priority string or min version. Warns
 * (srv_log) when the certificate expires within 14 days.
 * OUT: *out owned by the caller, free with srv_tls_free. */
SRV_WUR rt_status srv_tls_new(const srv_tls_params *p, srv_tls **out, rt_err *err);
/* Re-reads the certificate and key files (same checks); on success new
 * connections get the new pair, open ones keep theirs (the old pair is
 * freed once the last of them closed, srv_tls_conn_closed); on error the
 * old pair stays and err says why. Files holding the bytes of the serving
 * pair keep it (*unchanged set true; its dates are checked again). Call it
 * from one thread at a time (the daemon's reload). */
SRV_WUR rt_status srv_tls_reload(srv_tls *t, bool *unchanged, rt_err *err);
/* Checks PEM contents held in memory (TF Serving's --ssl_config_file puts
 * them in its file): cert a certificate chain, key its private key (the
 * two must match), the first certificate valid now (warned, srv_log,
 * within 14 days of its end), ca (may be NULL) at least one CA
 * certificate. Errors name names[0], names[1], names[2] (the fields of
 * cert, key, ca): "server_key: does not match the certificate of
 * server_cert". Nothing is kept. */
SRV_WUR rt_status srv_tls_check_pem(const char *cert, const char *key, const char *ca,
                                    const char *const names[3], rt_err *err);
/* The serving certificate's notAfter (seconds since the epoch). Thread-safe. */
int64_t srv_tls_not_after(const srv_tls *t);
/* The full GnuTLS priority string (priorities plus the version limits). */
const char *srv_tls_priority_string(const srv_tls *t);
/* The client CA file's PEM text (NUL-terminated), or NULL without mTLS. */
const char *srv_tls_client_ca(const srv_tls *t);
/* libmicrohttpd's MHD_OPTION_HTTPS_CERT_CALLBACK (a GnuTLS
 * gnutls_certificate_retrieve_function2); cls-less: uses the srv_tls given
 * to srv_tls_set_current. */
void *srv_tls_cert_callback(void);
/* Makes t the one srv_tls_cert_callback serves (one daemon per process). */
void srv_tls_set_current(srv_tls *t);
/* With mTLS: true when the connection's TLS session (a gnutls_session_t)
 * carries a client certificate that verifies against the client CA.
 * Without mTLS: true. */
bool srv_tls_client_ok(const srv_tls *t, void *session);
/* Plain HTTP on the TLS port: called for each new TLS connection (session:
 * its gnutls_session_t, from libmicrohttpd), so that a connection whose
 * first byte starts an HTTP request line instead of a TLS record gets a
 * 400 answer in clear text ("The plain HTTP request was sent to HTTPS
 * port", as nginx answers) and a log line, and its handshake fails. A TLS
 * connection reads its socket directly again after its first byte. Call
 * srv_tls_conn_closed when the connection closes. Not thread-safe for one
 * session (libmicrohttpd serves a connection on one thread). */
void srv_tls_guard_plain(void *session);
/* A TLS connection (session: its gnutls_session_t) closes: frees what
 * srv_tls_guard_plain left on it and releases the certificate pair its
 * handshake was given (a replaced pair is freed with its last connection).
 * NULL is accepted. Thread-safe. */
void srv_tls_conn_closed(void *session);
/* True (once) when srv_tls.c logged why the TLS handshake this thread
 * serves failed (a client certificate refused or missing, plain HTTP),
 * so libmicrohttpd's generic line for the failure can be left out. */
bool srv_tls_handshake_logged(void);
/* Appends the Prometheus lines of the TLS metrics (with HELP/TYPE). */
SRV_WUR int srv_tls_metrics(const srv_tls *t, rt_buf *out);
void srv_tls_free(srv_tls *t);

/* ------------------------------------------------------- bearer tokens */

enum {
    SRV_SCOPE_INFER = 1u << 0,   /* :predict, :classify, :regress, /v2/.../infer */
    SRV_SCOPE_READ = 1u << 1,    /* status, metadata, model lists */
    SRV_SCOPE_METRICS = 1u << 2, /* the Prometheus path */
    SRV_SCOPE_ADMIN = 1u << 3,   /* the gRPC ModelService/HandleReloadConfigRequest */
};

typedef enum {
    SRV_AUTH_OK = 0,
    SRV_AUTH_MISSING,  /* no Authorization: Bearer header -> 401 */
    SRV_AUTH_INVALID,  /* an unknown token or a malformed header -> 401 */
    SRV_AUTH_SCOPE,    /* a known token without the scope -> 403 */
} srv_auth_result;

typedef struct srv_auth srv_auth;

/* Reads the tokens file: lines "SHA256HEX SCOPES [NAME]" (SCOPES a comma
 * list of infer, read, metrics, admin), '#' comments and blank lines ignored;
 * errors name FILE:LINE. Refused when others may write it.
 * OUT: *out owned by the caller, free with srv_auth_free. */
SRV_WUR rt_status srv_auth_new(const char *path, srv_auth **out, rt_err *err);
/* Re-reads the file; on error the old tokens stay. A file without a token
 * is refused (RT_ERR_INVALID, as a missing file is) unless
 * srv_auth_set_empty_denies_all said it means "refuse every request".
 * Thread-safe. */
SRV_WUR rt_status srv_auth_reload(srv_auth *a, rt_err *err);
/* on: a reload takes a file without a token (auth_tokens_empty_denies_all).
 * Default false. Thread-safe. */
void srv_auth_set_empty_denies_all(srv_auth *a, bool on);
/* Checks an Authorization header value (NULL: none) for scope; the token's
 * hash is compared with every stored one in constant time. Counts the
 * failures. Thread-safe. */
srv_auth_result srv_auth_check(srv_auth *a, const char *authorization, unsigned scope);
/* Parses "infer,read" into SRV_SCOPE_* bits; 0 when a name is unknown. */
unsigned srv_auth_parse_scopes(const char *s, size_t len);
/* The scopes' names, comma-separated ("infer,read"), into out. */
void srv_auth_scope_names(unsigned scopes, char *out, size_t len);
/* SHA-256 of data as 64 lowercase hex digits and a NUL into hex. */
void srv_auth_sha256_hex(const void *data, size_t len, char hex[65]);
/* A new random token ("pdt_" and 64 hex digits) into out; false when the
 * random generator failed. */
SRV_WUR bool srv_auth_new_token(char out[69]);
/* predictctl token add: makes a new random token (into token), appends
 * the line "SHA256HEX SCOPES [NAME]" to the tokens file at path (created
 * 0600 when missing) under an exclusive flock on PATH.lock, written
 * atomically (temp file, fsync, rename; the file's mode kept). name: NULL
 * or [A-Za-z0-9_.-]+. Errors name the path. */
SRV_WUR rt_status srv_auth_add_token(const char *path, unsigned scopes, const char *name,
                                     char token[69], rt_err *err);
/* Appends predictd_auth_failures_total{reason} (with HELP/TYPE). */
SRV_WUR int srv_auth_metrics(srv_auth *a, rt_buf *out);
void srv_auth_free(srv_auth *a);

/* ------------------------------------------------- gzip request bodies */

/* The request's Content-Encoding (NULL: none): 0 identity, 1 gzip, -1 a
 * coding predictd does not take (415). Case-insensitive; "x-gzip" is gzip. */
int srv_gzip_coding(const char *content_encoding);
/* Inflates the gzip stream in (one member, or several concatenated) into
 * out (appended), counting the inflated bytes as it goes: more than limit
 * stops at once with RT_ERR_LIMIT ("inflates to more than LIMIT bytes"), so
 * a small body that would inflate to gigabytes costs at most limit bytes.
 * Damaged, truncated or trailing data: RT_ERR_FORMAT naming the problem. */
SRV_WUR rt_status srv_gunzip(const void *in, size_t len, size_t limit, rt_buf *out, rt_err *err);
/* True when an Accept-Encoding value (NULL: none) takes gzip: "gzip",
 * "x-gzip" or "*" with a q-value above 0 (RFC 9110 §12.5.3). */
bool srv_gzip_accepted(const char *accept_encoding);
/* Appends the gzip of len bytes at in to out (zlib level 1: fast); nonzero
 * when out of memory. */
int srv_gzip_compress(const void *in, size_t len, rt_buf *out);

/* ------------------------------------------------- client (srv_client.c) */

typedef struct srv_client_opts {
    bool tls;            /* HTTPS: the server's certificate is verified, and its name */
    const char *ca_file; /* PEM CA(s) to verify it with; NULL: the system's trust store */
    const char *token;   /* sent as Authorization: Bearer, or NULL */
    const char *cert_file; /* PEM client certificate (with key_file), or NULL */
    const char *key_file;  /* its PEM private key, or NULL */
} srv_client_opts;

/* srv_client_request with options (o may be NULL: plain HTTP, no token);
 * TLS errors name the host and what failed (handshake, verification). */
SRV_WUR rt_status srv_client_request_opts(const srv_client_opts *o, const char *host, int port,
                                          const char *method, const char *path, const char *body,
                                          int timeout_ms, int *status, rt_buf *out, rt_err *err);

#endif
