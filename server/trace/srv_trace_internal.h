/*
 * srv_trace_internal.h — between the tracer (srv_trace.c) and the
 * exporter's connection to the collector (srv_trace_post.c): the endpoint
 * as parsed once at start, and one POST of a batch over TCP or TLS.
 */
#ifndef PREDICTD_SRV_TRACE_INTERNAL_H
#define PREDICTD_SRV_TRACE_INTERNAL_H

#include "srv_trace.h"

#include <stdbool.h>

#define SRV_TRACE_IO_TIMEOUT_MS 2000 /* connect, TLS handshake, send, each read of the answer */
#define SRV_TRACE_ANSWER_MAX 65536  /* bytes of a collector's answer read (then closed) */

/* Where the spans go: http://HOST[:PORT]/PATH or https://... */
typedef struct srv_otlp_target {
    char host[256], port[8], path[512];
    bool tls;
    void *cred; /* https: the GnuTLS certificate credentials (the trusted CAs) */
} srv_otlp_target;

/* Parses endpoint into *t; for https reads the CAs to trust: ca_file (PEM)
 * when given, else the system store. RT_ERR_INVALID naming
 * tracing.otlp_endpoint or tracing.otlp_ca_file; free with
 * srv_otlp_target_free. */
SRV_WUR rt_status srv_otlp_target_init(srv_otlp_target *t, const char *endpoint,
                                       const char *ca_file, rt_err *err);
void srv_otlp_target_free(srv_otlp_target *t);
/* POSTs body (application/json) to t; true on a 2xx answer. Over https
 * the collector's certificate must chain to the trusted CAs and name the
 * endpoint's host. Every step times out (SRV_TRACE_IO_TIMEOUT_MS). Called
 * by the exporter thread only. */
bool srv_otlp_post(const srv_otlp_target *t, const rt_buf *body);

#endif /* PREDICTD_SRV_TRACE_INTERNAL_H */
