/*
 * srv_limits.h — the server's hard limits, each with the reason for its
 * value (SQLite's sqliteLimit.h): fixed sizes that bound what one request,
 * one file or one series may take, and the caps that keep the daemon's
 * memory bounded whatever its clients do. They are not settings (those are
 * srv_config.c's table): changing one means rebuilding. The limits of
 * srv.h's interfaces stay there (SRV_NAME_MAX, SRV_TP_MAX_DEPTH,
 * SRV_TP_MAX_NODES, SRV_EXPLAIN_ROWS_PER_UNIT).
 */
#ifndef PREDICTD_SRV_LIMITS_H
#define PREDICTD_SRV_LIMITS_H

/* The build defines PREDICTD_MODULE_<folder> for each source (Makefile). */
#if !defined(PREDICTD_MODULE_server) && !defined(PREDICTD_MODULE_tests)
#error "srv_limits.h is server's own; other modules include srv.h (docs/design.md)"
#endif

#include <stddef.h>

/* ------------------------------------------------------------ files read */

/* A config file (JSON or TF Serving's text format, and the monitoring and
 * batching files): a config of 10,000 models is about 2 MB; past this it is
 * refused as not a config. */
#define SRV_CONFIG_MAX_BYTES (16u << 20)
/* The tokens file (auth_tokens_file): one line per token, 100 bytes each;
 * 16 MiB is far past any real file and bounds a reload's read. */
#define SRV_TOKENS_MAX_BYTES (16u << 20)
/* A PEM file (certificate chain, key, client CA): real ones are a few KB. */
#define SRV_TLS_MAX_PEM_BYTES (1u << 20)
/* Certificates of a chain taken from tls_cert_file: leaf and intermediates;
 * real chains have 2 to 4. */
#define SRV_TLS_MAX_CHAIN 16
/* A version's assets.extra/warmup.json (its warm-up requests). */
#define SRV_WARMUP_MAX_BYTES ((size_t)64 << 20)
/* An answer predictctl or the watchdog probe reads (srv_client.c): the
 * largest the daemon sends is a model list, far below. */
#define SRV_CLIENT_MAX_RESPONSE (64u << 20)

/* ---------------------------------------------------------------- models */

/* Version directories one scan of a base path takes in; past it the scan
 * fails ("base path B: more than N versions"). */
#define SRV_MAX_VERSIONS_SCANNED 100000
/* Watched base paths rescanned per loader tick, in turn, in case an event
 * was missed: at 10,000 models each is rescanned every ~2.6 minutes at the
 * default tick of 1 s. */
#define SRV_SAFETY_SCANS_PER_TICK 64
/* Without workers (max_queue_depth 0), the heavy inference requests
 * (:explain, bodies over max_inline_request_bytes) run on the offload
 * threads (as many as the request threads), this many waiting at most;
 * past it 429 + Retry-After, never a run on an I/O thread (issue 35,
 * item 1). Their bodies are held under max_total_request_bytes anyway. */
#define SRV_OFFLOAD_QUEUE_MAX 256
/* The versions listed in a model's v2 metadata at most. */
#define SRV_V2_MAX_VERSIONS 256

/* ---------------------------------------------------------------- routes */

/* Path segments routed; deeper paths are no path of the API (its deepest
 * has 7). */
#define SRV_ROUTE_MAX_SEGS 12
/* Bytes of a path routed; longer ones are no path of the API (404). */
#define SRV_ROUTE_MAX_PATH 1024

/* ----------------------------------------------------------- connections */

/* libmicrohttpd's per-connection memory (headers and its read buffer). */
#define SRV_CONN_MEMORY (16 * 1024)
/* Connections libmicrohttpd admits per I/O thread beyond max_connections:
 * the watchdog probe, and connections being reclaimed. */
#define SRV_PROBE_SLOTS 8
/* Open files kept for the daemon's own use beside its client connections
 * (listener, models, logs, libmicrohttpd's and systemd's descriptors). */
#define SRV_FD_RESERVE 256
/* max_connections when it is not set: this many, fewer when the open-files
 * limit is lower. */
#define SRV_AUTO_MAX_CONNECTIONS 1024
/* Buffers up to this size stay with their connection for its next request.
 * Larger ones (batches: a body of 1000 census rows is 319 KB) stay too while
 * all connections together keep at most SRV_CONN_KEEP_TOTAL bytes of them;
 * past that they are freed when their request completes, so idle
 * keep-alive connections cannot pile up large buffers. Keeping them spares
 * a request the fresh pages (page faults) and the munmap of buffers above
 * glibc's mmap threshold. */
#define SRV_CONN_BUF_KEEP (64 * 1024)
#define SRV_CONN_KEEP_TOTAL ((size_t)16 << 20)
/* After a burst that held more request body bytes than this, the heap is
 * trimmed once the last body is let go. */
#define SRV_TRIM_AFTER ((size_t)32 << 20)
/* Request contexts kept for reuse at most. Without batching at most one per
 * I/O thread is ever out; with it one per queued request, so a burst could
 * leave thousands (each with its arenas) behind: the rest are freed. */
#define SRV_CTX_POOL_KEEP 256

/* ---------------------------------------------------- queues and series */

/* Sampled requests waiting for their shadow run / for the prediction-log
 * writer; past these (or past their byte budgets, shadow_queue_bytes and
 * prediction_log_queue_bytes), more are dropped and counted. */
#define SRV_SHADOW_QUEUE 256
#define SRV_PREDLOG_QUEUE 4096
/* Prediction-log files the writer keeps open at once, one per model
 * logged; a model past them gets no log lines. */
#define SRV_PREDLOG_MAX_FILES_OPEN 256
/* (model, version, shadow version) series of the shadow metrics kept. */
#define SRV_SHADOW_MAX_PAIRS 256
/* Metric series (model, version, method, code) and latency histograms
 * (model, version, method) kept: bounded, so that requests naming ever new
 * models and versions cannot grow the metrics page without end; a request
 * past them is counted as dropped instead. */
#define SRV_METRICS_MAX_SERIES 4096
#define SRV_METRICS_MAX_HISTS 1024

/* ------------------------------------------------------------------ gRPC */

/* Elements a TensorProto of a Predict request may expand to when it gives
 * fewer values than its shape holds (TensorFlow repeats the last one): one
 * value with shape [1e9] must not become a gigabyte of request body. A
 * tensor that carries all its values is bounded by the message limit
 * (max_request_bytes) instead. 2^20 floats is 4 MiB, past any tabular
 * request's column. */
#define SRV_GRPC_MAX_EXPANDED (1u << 20)
/* Streams of one streaming method (Health/Watch) open at once: each holds
 * a call slot while it is open; one more waits in the gRPC core until one
 * ends. A watch per client connection (gRPC's client-side health
 * checking) from 64 clients at a time; each costs a slot and two buffers. */
#define SRV_GRPC_MAX_STREAMS 64
/* Dimensions of one TensorProto (TensorFlow's own limit is 254). */
#define SRV_GRPC_MAX_DIMS 32

#endif /* PREDICTD_SRV_LIMITS_H */
