/*
 * srv_http_sec.c — the HTTP front's security gate, run once per request
 * after routing: with mutual TLS, the connection's client certificate must
 * verify against the client CA (else 403, connection closed); with bearer
 * tokens, the request's route needs its row's scope (srv_routes.c:
 * inference: infer; status, metadata, model lists: read; the metrics path:
 * metrics, unless metrics_require_token is off; health and readiness
 * probes none).
 * Refusals follow RFC 6750 §3: 401 with WWW-Authenticate: Bearer
 * realm="predictd" (and error="invalid_token" when a token was given),
 * 403 with error="insufficient_scope". Also the TLS and token metrics.
 */
#include "srv_http_internal.h"
#include "srv_sec.h"

#include <stdio.h>
#include <string.h>

/* The scope a route needs, its row's; 0 = open (health and readiness
 * probes). */
static unsigned route_scope(const srv_http *h, const srv_route *r, const char *method)
{
    /* unknown paths and refused ones (no 404 or 405 before the token):
     * POST runs models, the rest reads */
    if (!r->row)
        return !strcmp(method, "POST") ? SRV_SCOPE_INFER : SRV_SCOPE_READ;
    if (r->row->scope == SRV_SCOPE_METRICS && !h->cfg.metrics_require_token)
        return 0;
    return r->row->scope;
}

static enum MHD_Result refuse(srv_http *h, struct MHD_Connection *conn, unsigned code,
                              const char *www, const char *msg, bool close)
{
    struct MHD_Response *resp = srv_http_error_response(h, code, msg);
    if (!resp)
        return MHD_NO;
    if (www)
        MHD_add_response_header(resp, "WWW-Authenticate", www);
    if (close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = srv_http_send_shared(h, conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

int srv_http_sec_gate(srv_http *h, struct MHD_Connection *conn, const srv_route *route,
                      const char *method)
{
    if (h->p.tls && srv_tls_client_ca(h->p.tls)) {
        /* once per connection: the session's certificate does not change */
        const union MHD_ConnectionInfo *sc =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        conn_state *cs = sc ? sc->socket_context : NULL;
        if (!cs || !cs->client_verified) {
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
            if (!srv_tls_client_ok(h->p.tls, ci ? ci->tls_session : NULL)) {
                srv_metrics_rejected(h->p.metrics, "client_certificate");
                return refuse(h, conn, 403, NULL,
                              "a client certificate signed by tls_client_ca_file is required",
                              true);
            }
            if (cs)
                cs->client_verified = true;
        }
    }
    if (!h->p.auth)
        return -1;
    unsigned scope = route_scope(h, route, method);
    if (!scope)
        return -1;
    const char *ah =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    switch (srv_auth_check(h->p.auth, ah, scope)) {
    case SRV_AUTH_OK: return -1;
    case SRV_AUTH_MISSING:
        return refuse(h, conn, 401, "Bearer realm=\"predictd\"",
                      "this request needs an Authorization: Bearer token", false);
    case SRV_AUTH_INVALID:
        return refuse(h, conn, 401, "Bearer realm=\"predictd\", error=\"invalid_token\"",
                      "the bearer token is not valid", false);
    case SRV_AUTH_SCOPE: {
        char names[64], www[160], msg[128];
        srv_auth_scope_names(scope, names, sizeof names);
        snprintf(www, sizeof www,
                 "Bearer realm=\"predictd\", error=\"insufficient_scope\", scope=\"%s\"", names);
        snprintf(msg, sizeof msg, "the bearer token lacks the '%s' scope", names);
        return refuse(h, conn, 403, www, msg, false);
    }
    }
    return -1;
}

int srv_http_sec_metrics(srv_http *h, rt_buf *out)
{
    if (h->p.tls && srv_tls_metrics(h->p.tls, out) != 0)
        return -1;
    if (h->p.auth && srv_auth_metrics(h->p.auth, out) != 0)
        return -1;
    return 0;
}
