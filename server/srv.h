/*
 * srv.h — predictd, the serving daemon: the one public header of server/.
 *
 * Pieces, each in its own file, in rooms by concern (docs/design.md, "The
 * server's rooms"):
 *   conf/     srv_config.c (the settings table: defaults, flags, config file
 *             keys, --help), srv_config_models.c (the config file's "models"
 *             list), srv_textproto.c (protobuf text format), srv_tfconf.c
 *             (TF Serving's text-format files), srv_tfflags.c (TF Serving's
 *             flags without a setting)
 *   models/   srv_models.c (the model manager: versions, reference counts,
 *             readiness), srv_loader.c and srv_watch.c (its loader: scans,
 *             loading, warm-up; inotify), srv_rollout.c (traffic split,
 *             shadow, prediction-log keys), srv_shadow.c (shadow traffic),
 *             srv_names.c (model names, version numbers)
 *   http/     srv_http.c (the front's start and stop: libmicrohttpd,
 *             listener, accept policy, watchdog probe) and its pieces,
 *             sharing srv_http_internal.h: srv_http_request.c (a request on
 *             its I/O thread), srv_routes.c (the route table) and
 *             srv_router.c (method + URL -> srv_route; pure),
 *             srv_http_answer.c, srv_http_infer.c, srv_http_batch.c,
 *             srv_http_v2.c (the answers), srv_http_send.c (sending);
 *             srv_conn.c (open connections: limit, reclaim, deadlines),
 *             srv_framing.c (framing checks against request smuggling)
 *   sec/      srv_tls.c, srv_auth.c, srv_auth_file.c, srv_http_sec.c,
 *             srv_gzip.c: TLS and mutual TLS, bearer tokens (and predictctl
 *             token add), the front's gate, gzip request bodies; their
 *             header is srv_sec.h (the server's own)
 *   obs/      srv_metrics.c (Prometheus), srv_log.c, srv_predlog.c
 *             (prediction logs), srv_monitor.c (skew and drift), srv_cpu.c
 *             (CPUs the process may use)
 *   sched/    srv_pool.c (bounded job queue + workers), srv_admit.c (its
 *             adaptive admission limit), srv_batch.c (cross-request batches)
 *   ctl/      main_predictctl.c (the operator's tool), srv_ctl_flags.c (its
 *             flags), srv_client.c (a small blocking HTTP/1.1 client)
 *   main_predictd.c  the daemon's single context, signals, reload loop
 *
 * The server depends on the runtime (rt.h) only. Conventions as in the
 * runtime: rt_status returns, rt_err messages that name what was wrong,
 * free functions that accept NULL.
 */
#ifndef PREDICTD_SRV_H
#define PREDICTD_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_serve.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SRV_VERSION_STRING "predictd 0.1"

/* On the server's functions that return a status (rt_status, or nonzero /
 * false on failure): a caller that drops the result is a compile error
 * under -Werror (curl's WARN_UNUSED_RESULT). A result ignored on purpose is
 * taken into a variable or tested, with a comment saying why ignoring it is
 * right (gcc does not accept a cast to void for it). */
#define SRV_WUR __attribute__((warn_unused_result))

/* ------------------------------------------------------------------- log */

typedef enum {
    SRV_LOG_ERROR = 3,
    SRV_LOG_WARN = 4,
    SRV_LOG_INFO = 6,
    SRV_LOG_DEBUG = 7,
} srv_log_level;

/* Writes one line "TIME LEVEL message" to stderr with a single write(2), or
 * "<N>message" when stderr is the journal (JOURNAL_STREAM). Thread-safe.
 * Newlines inside the message are replaced so an event stays one line. */
void srv_log(srv_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- config */

typedef enum {
    SRV_POLICY_LATEST = 0,   /* the N newest versions ({"latest": N}) */
    SRV_POLICY_ALL = 1,      /* every version found */
    SRV_POLICY_SPECIFIC = 2, /* the listed versions */
} srv_policy_kind;

typedef struct srv_label {
    char *name;
    int64_t version;
} srv_label;

/* Where a traffic split arm or the shadow sends requests: a version label
 * of the model (label set) or a version number (label NULL). */
typedef struct srv_target {
    char *label;
    int64_t version;
} srv_target;

typedef struct srv_split_arm {
    srv_target to;
    uint32_t percent;        /* 0..100; a split's arms sum to 100 */
} srv_split_arm;

/* A model's rollout keys (srv_rollout.c): "traffic_split", "shadow",
 * "request_logging". All zero: none configured. */
typedef struct srv_rollout_conf {
    srv_split_arm *split;    /* traffic_split, in the file's order */
    size_t n_split;          /* 0: no split */
    bool shadow;             /* shadow configured */
    srv_target shadow_to;
    uint32_t shadow_percent; /* 0..100 */
    bool logging;            /* request_logging configured */
    double log_rate;         /* sampling_rate, 0..1 */
    char *log_dir;           /* absolute, or made absolute at load time */
    uint64_t log_max_bytes;  /* max_file_mb in bytes */
    uint32_t log_max_files;  /* files kept, the one being written included */
} srv_rollout_conf;

/* A model's "monitoring" key (srv_monitor.c): skew and drift of the served
 * instances against the export's training statistics. on false: none. */
typedef struct srv_monitor_conf {
    bool on;
    double sample_rate;         /* (0, 1]: share of instances counted; default 1 */
    int window_seconds;         /* a window ends after this long; default 3600 */
    uint64_t window_instances;  /* or after this many counted instances; 0: by time only */
    double default_threshold;   /* default 0.3 */
    char **feature;             /* thresholds: feature -> threshold */
    double *threshold;
    size_t n_thresholds;
} srv_monitor_conf;

typedef struct srv_model_conf {
    char *name;            /* [A-Za-z0-9_.-]+, never used as a path */
    char *base_path;       /* absolute, or made absolute at load time */
    srv_policy_kind policy;
    uint32_t latest_n;     /* SRV_POLICY_LATEST */
    int64_t *specific;     /* SRV_POLICY_SPECIFIC, sorted, unique */
    size_t n_specific;
    srv_label *labels;
    size_t n_labels;
    int64_t default_version; /* -1: none (newest AVAILABLE answers) */
    char *default_label;     /* or a label; NULL when not set */
    srv_rollout_conf rollout; /* traffic split, shadow, prediction logs */
    srv_monitor_conf monitor; /* skew and drift monitoring */
} srv_model_conf;

typedef struct srv_config {
    char *rest_api_host;          /* default "0.0.0.0" */
    int rest_api_port;            /* default 8501; 0 = any free port */
    int rest_api_num_threads;     /* 0 = CPUs the process may use */
    int rest_api_timeout_in_ms;   /* per-request deadline; default 30000 */
    int file_system_poll_wait_seconds; /* default 1; 0 = scan only at start/reload */
    size_t max_request_bytes;     /* default 1572864 */
    size_t max_total_request_bytes; /* request body bytes held at once; past it 429
                                       (default 256 MiB, >= max_request_bytes) */
    size_t max_answer_bytes;      /* largest answer; past it 400 (default 64 MiB) */
    size_t max_inline_request_bytes; /* without workers: an inference body longer than
                                        this runs on the offload threads (default 64 KiB) */
    size_t max_explain_rows;      /* model rows one :explain may evaluate (estimated
                                     before it runs); past it 400 (default 2^24) */
    size_t prediction_log_queue_bytes; /* requests + answers waiting for the log
                                          writer (default 64 MiB) */
    size_t shadow_queue_bytes;    /* requests + answers waiting for their shadow
                                     run (default 64 MiB) */
    int connection_timeout_seconds; /* idle keep-alive connections; default 60 */
    int request_read_timeout_seconds; /* a request must be read whole within this
                                         from its first byte; default 30; 0 = off */
    int max_connections;          /* client connections open at once; 0 (default) =
                                     1024, or fewer to fit the open-files limit */
    int request_header_timeout_seconds; /* a connection must send a whole request
                                           header this soon after it opens (or after
                                           its next request's first byte); default 10;
                                           0 = off */
    bool enable_cors;             /* Access-Control-Allow-Origin: * */
    int max_queue_depth;          /* > 0: inference on workers, at most this many
                                     waiting, past it 429; 0 (default): inference
                                     on the HTTP threads, no queue */
    int max_queue_wait_ms;        /* with max_queue_depth: 429 while the oldest
                                     waiting request has waited longer; 0 = off */
    int drain_grace_seconds;      /* after SIGTERM: keep answering (readyz 503) */
    bool enable_batching;         /* cross-request batching of :predict (default off) */
    int max_batch_size;           /* instances per merged batch; default 128 */
    int batch_timeout_micros;     /* a batch's first request waits this long; 1000 */
    int max_enqueued_batches;     /* batches waiting; past it 429; default 64 */
    int num_batch_threads;        /* 0 (default) = the request thread count */
    bool enable_model_warmup;     /* warm versions up before they serve (default true) */
    bool allow_version_labels_for_unavailable_models; /* a new label may name a version
                                     that is not available (warned); default false:
                                     refused (TF Serving's rule) */
    int port;                     /* --port: the gRPC port (docs/grpc.md); gRPC is on when given */
    char *tls_cert_file;          /* HTTPS certificate chain (PEM); NULL = plain HTTP */
    char *tls_key_file;           /* its private key (PEM) */
    char *tls_client_ca_file;     /* mutual TLS: the clients' CA (PEM), or NULL */
    char *tls_min_version;        /* "TLS1.2" (default) or "TLS1.3" */
    char *tls_priorities;         /* GnuTLS priority string */
    char *auth_tokens_file;       /* bearer tokens (hashes + scopes), or NULL = none */
    bool metrics_require_token;   /* with tokens: metrics need the metrics scope */
    bool ui_enabled;              /* GET /ui: the operator console (server/ui/) */
    char *tracing_otlp_endpoint;  /* "tracing": {"otlp_endpoint"}: OTLP/HTTP JSON traces, or NULL */
    char *tracing_otlp_ca_file;   /* "tracing": {"otlp_ca_file"}: CAs of an https collector, or NULL */
    double tracing_sample_rate;   /* "tracing": {"sample_rate"}: root requests sampled */
    bool auth_tokens_empty_denies_all; /* a reload may take a tokens file without a token
                                          (every request refused); false: refused */
    size_t gzip_response_min_bytes; /* > 0: gzip answers of at least this many bytes
                                       (Accept-Encoding: gzip); default 0 = never */
    char *aip_predict_route;      /* Vertex AI: POST here = the one model's :predict, or NULL */
    char *aip_health_route;       /* Vertex AI: GET here = /v2/health/ready, or NULL */
    char *model_config_file;      /* the file this came from, or NULL */
    char *model_repository;       /* --model_repository DIR (flag only), or NULL */
    char *model_name;             /* --model_name (flag only), or NULL */
    char *model_base_path;        /* --model_base_path (flag only), or NULL */
    char *model_monitoring;       /* --model_monitoring JSON (flag only), or NULL */
    int model_config_file_poll_wait_seconds; /* > 0: the file is re-read this often
                                                and reloaded when its bytes changed
                                                (TF Serving's flag; default 0 = off) */
    char *monitoring_config_file; /* TF Serving's MonitoringConfig (flag only) */
    char *ssl_config_file;        /* TF Serving's SSLConfig: the gRPC port's TLS (flag only) */
    char *batching_parameters_file; /* TF Serving's BatchingParameters (flag only) */
    char *metrics_path;           /* where the Prometheus metrics are served:
                                     /monitoring/prometheus/metrics, or the
                                     monitoring config's path; NULL = nowhere */
    srv_model_conf *models;
    size_t n_models;
} srv_config;

/*
 * The daemon's settings, one table (srv_config.c): each line gives a
 * setting's name (its JSON key and its flag), type, range, default, the
 * srv_config field it fills and its help text. The table makes the
 * defaults, the config file's keys, the command-line flags, --help, the
 * config file's key list (--help_config) and the unknown-key message.
 * Adding a setting is one line there (and its field above).
 */
/* The rows are the runtime's (rt_setting, rt_settings.c); these names are
 * predictd's spellings of its types and bits. SRV_SET_NAME is a model name
 * (srv_name_valid). */
typedef rt_setting srv_setting;
#define SRV_SET_INT RT_SET_INT
#define SRV_SET_SIZE RT_SET_SIZE
#define SRV_SET_BOOL RT_SET_BOOL
#define SRV_SET_STR RT_SET_STR
#define SRV_SET_NAME RT_SET_NAME
#define SRV_SET_JSON RT_SET_JSON
#define SRV_SET_FLAG RT_SET_FLAG
#define SRV_SET_LIVE RT_SET_LIVE

/* The table and its length (static; thread-safe). */
const srv_setting *srv_settings(size_t *n);
/* The setting called name, or NULL. */
const srv_setting *srv_setting_find(const char *name);
/* The first setting whose value differs between a and b and that a reload
 * cannot apply (not SRV_SET_LIVE: listener, threads, limits, batching), or
 * NULL. */
const char *srv_config_restart_change(const srv_config *a, const srv_config *b);

/* The command line, kept so that a reload re-applies the same flags over
 * the re-read file (a flag given on the command line wins). */
typedef struct srv_args {
    uint64_t set;                 /* bit i: srv_settings()[i] was given */
    srv_config values;            /* every setting, defaults where not given;
                                     strings owned */
    bool help;                    /* --help / -h */
    bool help_config;             /* --help_config */
    bool version;                 /* --version */
    char **warnings;              /* [n_warnings] one line each (owned): TF
                                     Serving flags accepted without effect */
    size_t n_warnings;
    char **notes;                 /* [n_notes] one INFO line each (owned): what
                                     srv_args_env took from the environment */
    size_t n_notes;
} srv_args;

/* Parses argv with getopt_long (TF Serving's flag names; "--flag=value" or
 * "--flag value"; a bool flag alone means true). Unknown or abbreviated
 * flags and bad values are refused naming the flag ("--rest_api_porte:
 * unknown flag (did you mean --rest_api_port?)").
 * OUT: args owns its strings; free with srv_args_free(). Not thread-safe
 * (getopt's globals). */
SRV_WUR rt_status srv_args_parse(int argc, char **argv, srv_args *args, rt_err *err);
void srv_args_free(srv_args *args);
/* The environment variables of the container contracts, read at start after
 * srv_args_parse (server/conf/srv_config.c, ENV_SETTINGS; docs/deploy.md): a
 * flag given on the command line wins over its variable. TF Serving's image:
 * MODEL_NAME (and MODEL_BASE_PATH, default /models) serve MODEL_BASE_PATH/
 * MODEL_NAME when neither --model_name nor --model_config_file is given.
 * Vertex AI: AIP_HTTP_PORT sets rest_api_port, AIP_HEALTH_ROUTE and
 * AIP_PREDICT_ROUTE the two routes Vertex calls, AIP_STORAGE_URI (else
 * AIP_MODEL_DIR) the model's base path when no model is given otherwise
 * (a local path, file://PATH, or gs://BUCKET/PATH read at /gcs/BUCKET/PATH,
 * where Cloud Storage FUSE mounts it). getenv_fn is getenv, or a test's.
 * Each variable taken adds a line to args->notes; a bad value is refused
 * naming the variable. */
typedef char *(*srv_getenv_fn)(const char *name);
SRV_WUR rt_status srv_args_env(srv_args *args, srv_getenv_fn getenv_fn, rt_err *err);
/* True when the flag called name was given. */
bool srv_args_given(const srv_args *args, const char *name);
/* Sets the setting called name from its flag text value (NULL: a bool flag
 * alone), as if --name=value had been given. Errors name the flag. */
SRV_WUR rt_status srv_args_set(srv_args *args, const char *name, const char *value, rt_err *err);
/* The --help text (flags), or with config_keys the config file's keys
 * (--help_config), made from the table. OUT: malloc'd, caller frees; NULL
 * when out of memory. */
char *srv_args_usage(bool config_keys);

/* predictctl's flags before its command (srv_ctl_flags.c): the fields and
 * their table, in --help order. */
typedef struct srv_ctl_flags {
    char *config; /* --config FILE (/etc/predictd/predictd.json) */
    char *url;    /* --url URL, or NULL */
    int timeout;  /* --timeout SECONDS (15) */
    bool json;    /* --json */
    char *token_file; /* --token_file FILE (also --token-file), or NULL */
    char *cacert;     /* --cacert FILE, or NULL */
    char *cert;       /* --cert FILE: client certificate (PEM), or NULL */
    char *key;        /* --key FILE: its private key (PEM), or NULL */
    char *grpc;       /* --grpc HOST:PORT: ready and status over gRPC, or NULL */
} srv_ctl_flags;
const rt_setting *srv_ctl_flag_settings(size_t *n);

/* The request threads: rest_api_num_threads, else cpus. Pure. */
int srv_config_request_threads(const srv_config *c, int cpus);

/* Builds the effective config: the file named by --model_config_file (if
 * any), then the command-line flags over it, or one model from
 * --model_name/--model_base_path. Validates everything; an error names the
 * key ("models[1].version_policy.latest: must be >= 1").
 * OUT: *out malloc-owned, free with srv_config_free(). */
SRV_WUR rt_status srv_config_build(const srv_args *args, srv_config **out, rt_err *err);
/* srv_config_build with the models of models/len (a ModelServerConfig in
 * TF Serving's text format, or the JSON config's {"models": [...]}: read as
 * a --model_config_file is, relative base paths kept) in place of those of
 * the file or flags; its other settings are ignored. Errors name the field
 * as a config file's do. OUT: as srv_config_build. */
SRV_WUR rt_status srv_config_build_models(const srv_args *args, const char *models, size_t len,
                                          srv_config **out, rt_err *err);

/* --model_repository DIR (server/conf/srv_repository.c): the config text
 * {"models": [...]} of DIR's model folders, in name order: each folder NAME
 * (a valid name, not starting with '.') is {"name": NAME, "base_path":
 * DIR/NAME} plus the keys of DIR/NAME/config.json when there is one. OUT:
 * *text malloc'd. Errors name the folder or file. */
SRV_WUR rt_status srv_repository_config(const char *dir, char **text, rt_err *err);
/* A fingerprint of what srv_repository_config reads (the folder names and
 * each config.json's bytes): a change means the repository changed. 0 when
 * DIR cannot be read. */
uint64_t srv_repository_fingerprint(const char *dir);

/* Parses a config file's text (no flags applied). base_dir resolves relative
 * base_path values (NULL: keep them as they are). For tests and reloads. */
SRV_WUR rt_status srv_config_parse(const char *text, size_t len, const char *base_dir,
                                   srv_config **out, rt_err *err);

void srv_config_free(srv_config *c);
/* Frees what one model's config owns (name, base path, versions, labels)
 * and zeroes it. NULL members are fine. */
void srv_model_conf_clear(srv_model_conf *mc);
/* The model called name, or NULL. */
const srv_model_conf *srv_config_find_model(const srv_config *c, const char *name);
/* True when name is a valid model or label name ([A-Za-z0-9_.-]+, 1..128). */
bool srv_name_valid(const char *name, size_t len);
/* Parses a version number: decimal digits only, fits int64. -1 if not. */
int64_t srv_parse_version(const char *s, size_t len);

/* ---------------------------------------------------------------- rollout */

struct cJSON;

/* True when key is one of a model's rollout keys (traffic_split, shadow,
 * request_logging). */
bool srv_rollout_is_key(const char *key);
/* Parses the rollout key it->string of a model into r; path names the key
 * in errors ("models[0].traffic_split"); base_dir resolves a relative log
 * dir (NULL: kept as is). */
SRV_WUR rt_status srv_rollout_parse(const struct cJSON *it, const char *path, const char *base_dir,
                                    srv_rollout_conf *r, rt_err *err);
/* After the whole model is parsed: every label a split or shadow names must
 * be in version_labels. key: "models[N]". */
SRV_WUR rt_status srv_rollout_check(const srv_model_conf *mc, const char *key, rt_err *err);
/* Deep copy (false: out of memory, d cleared); clear frees and zeroes. */
SRV_WUR bool srv_rollout_copy(srv_rollout_conf *d, const srv_rollout_conf *s);
void srv_rollout_clear(srv_rollout_conf *r);
/* ---------------------------------------- skew and drift (srv_monitor.c) */

/* Parses a model's "monitoring" object (path names it in errors); JSON null
 * leaves monitoring off. */
SRV_WUR rt_status srv_monitor_parse(const struct cJSON *it, const char *path, srv_monitor_conf *c,
                                    rt_err *err);
/* Deep copy (false: out of memory, d cleared); clear frees and zeroes. */
SRV_WUR bool srv_monitor_conf_copy(srv_monitor_conf *d, const srv_monitor_conf *s);
void srv_monitor_conf_clear(srv_monitor_conf *c);

/*
 * One served version's monitor: the counts of the sampled instances' raw
 * inputs per window (fixed memory per feature: one counter per training
 * histogram bucket or training value, plus out-of-range/unseen, NaN and
 * missing, in 8 shards), and each completed window's skew (against the
 * export's training statistics) and drift (against the window before), by
 * TFDV's distances. Thread-safe: observe from any thread (relaxed atomic
 * adds, no lock except a try-lock when a window ends); the readers lock.
 */
typedef struct srv_monitor srv_monitor;
/* NULL with err set when the export has no training statistics (or out of
 * memory); model must outlive the monitor. */
srv_monitor *srv_monitor_new(const srv_monitor_conf *c, const rt_model *model, const char *name,
                             int64_t version, rt_err *err);
void srv_monitor_free(srv_monitor *m);
/* Counts the instances of batch b (a request served by m's version). m NULL: nothing. */
void srv_monitor_observe(srv_monitor *m, const rt_batch *b);
/* The status: per feature distance, threshold, anomalous, the window's
 * histogram or value counts, unseen values and out-of-range numbers. */
SRV_WUR rt_status srv_monitor_json(srv_monitor *m, rt_buf *out);
/* The Prometheus series of m (no HELP/TYPE lines: srv_monitor_prometheus_help). */
SRV_WUR int srv_monitor_prometheus(srv_monitor *m, rt_buf *out);
SRV_WUR int srv_monitor_prometheus_help(rt_buf *out);

/* The version target t names in mc (a label's version), or -1. */
int64_t srv_target_version(const srv_model_conf *mc, const srv_target *t);
/* The split arm a request with draw falls on (draw % 100 against the
 * cumulative percentages), or NULL without a split. Pure. */
const srv_split_arm *srv_split_pick(const srv_rollout_conf *r, uint64_t draw);
/* The draw of a request carrying X-Predictd-Route-Key: key (a 64-bit hash,
 * so one key always falls on the same arm of a split). Pure. */
uint64_t srv_route_key_hash(const char *key, size_t len);
/* Appends a model's rollout as extra JSON members (", \"traffic_split\":
 * [...], \"shadow\": {...}"), nothing when none is configured. */
SRV_WUR int srv_rollout_json(rt_buf *out, const srv_model_conf *mc);
/* Appends Prometheus lines predictd_traffic_split_percent{model,version,
 * target} (shadow: predictd_shadow_percent) of a model, without HELP. */
SRV_WUR int srv_rollout_metrics(rt_buf *out, const srv_model_conf *mc, bool shadow);
/* A malloc'd copy of n bytes plus a NUL (p may be NULL when n is 0), or NULL. */
char *srv_copy_bytes(const char *p, size_t n);

/* ------------------------------------- protobuf text format (srv_textproto.c) */

#define SRV_TP_MAX_DEPTH 32     /* messages nested deeper are refused */
#define SRV_TP_MAX_NODES 100000 /* fields in one file */

typedef enum {
    SRV_TP_MESSAGE = 0,    /* name { ... } */
    SRV_TP_STRING,         /* name: "..." (text decoded, len may hold NULs) */
    SRV_TP_NUMBER,         /* name: 12, -3.5e2, 0x1F, inf (text as written) */
    SRV_TP_IDENT,          /* name: TENSORFLOW, true (text as written) */
    SRV_TP_LIST_EMPTY,     /* name: [] (no value) */
} srv_tp_kind;

/* One field of a parsed text-format file. A list `name: [1, 2]` gives one
 * node per value. Offsets index the text that was parsed: name_off is the
 * field name's first byte; val_off..val_end a scalar's token(s) or a
 * message's braces ('{' .. after '}'). The root is a message named "". */
typedef struct srv_tp_node {
    char *name;
    srv_tp_kind kind;
    char *text;            /* scalar value, NUL-terminated; NULL for messages */
    size_t len;
    int line, col;         /* 1-based, of the field name */
    size_t name_off, val_off, val_end;
    struct srv_tp_node *parent, *child, *last, *next;
} srv_tp_node;

/* Parses text (len bytes; NUL bytes refused). Errors say "line L, column C:
 * field.path: what" (RT_ERR_INVALID; RT_ERR_LIMIT past the limits above).
 * OUT: *root, free with srv_tp_free(). Pure: thread-safe. */
SRV_WUR rt_status srv_tp_parse(const char *text, size_t len, srv_tp_node **root, rt_err *err);
void srv_tp_free(srv_tp_node *root);
/* The first field called name of message msg, or NULL. */
const srv_tp_node *srv_tp_get(const srv_tp_node *msg, const char *name);
/* The dotted field path of n ("model_config_list.config.name") into buf. */
const char *srv_tp_path(const srv_tp_node *n, char *buf, size_t cap);
/* Sets err to "line L, column C: path: <fmt>" for node n; RT_ERR_INVALID. */
SRV_WUR rt_status srv_tp_fail(const srv_tp_node *n, rt_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------ TF Serving's text-format files (srv_tfconf.c) */

/* Where each value of a converted file came from (line, column, field path). */
typedef struct srv_tfconf_map srv_tfconf_map;
void srv_tfconf_map_free(srv_tfconf_map *map);
/* If err->msg starts with the JSON path of a converted value
 * ("models[0].version_policy.latest: ..."), rewrites it to name the text
 * file's line, column and field path instead. No-op otherwise. */
void srv_tfconf_locate(const srv_tfconf_map *map, rt_err *err);

/* True when a config file's text is protobuf text format rather than JSON
 * (its first non-blank character is not '{' or '['). */
bool srv_tfconf_is_text(const char *text, size_t len);

/* TF Serving's ModelServerConfig (model_config_list { config { ... } }) ->
 * the JSON config's tree {"models": [{"name", "base_path", "version_policy",
 * "version_labels"}]}. Unknown fields, wrong kinds, model_platform other
 * than "tensorflow" are refused with line and column; value ranges are left
 * to the JSON config's checks (use *map with srv_tfconf_locate on their
 * errors). OUT: *out (cJSON_Delete) and *map (srv_tfconf_map_free). */
SRV_WUR rt_status srv_tfconf_model_config(const char *text, size_t len, struct cJSON **out,
                                          srv_tfconf_map **map, rt_err *err);

/* TF Serving's MonitoringConfig: prometheus_config { enable: true path:
 * "/p" }. OUT: *enable, *path (malloc'd; TF's default path when not given). */
SRV_WUR rt_status srv_tfconf_monitoring(const char *text, size_t len, bool *enable, char **path,
                                        rt_err *err);

/* TF Serving's BatchingParameters -> {"max_batch_size": N,
 * "batch_timeout_micros": N, "max_enqueued_batches": N, "num_batch_threads":
 * N} (those given), the JSON config's batching keys.
 * pad_variable_length_inputs and enable_large_batch_splitting are accepted
 * and have no effect (docs/daemon.md). OUT: as srv_tfconf_model_config. */
SRV_WUR rt_status srv_tfconf_batching(const char *text, size_t len, struct cJSON **out,
                                      srv_tfconf_map **map, rt_err *err);

/* TF Serving's SSLConfig (--ssl_config_file; tensorflow_serving/config/
 * ssl_config.proto): the gRPC port's TLS, its PEM contents held in the file
 * itself (strings, not paths). */
typedef struct srv_tf_ssl {
    char *server_key;  /* PEM private key */
    char *server_cert; /* PEM certificate, then its chain */
    char *custom_ca;   /* PEM CA(s) of client certificates, or NULL (not given) */
    bool client_verify; /* clients must show a certificate custom_ca signed */
} srv_tf_ssl;
/* Reads an SSLConfig's text: fields checked as srv_tfconf_monitoring does
 * (unknown field, wrong kind, given twice: line, column and field name);
 * server_key and server_cert must be given and not empty, and client_verify:
 * true needs custom_ca. The PEM contents are not parsed here
 * (srv_tls_check_pem). OUT: *out, free with srv_tf_ssl_clear. */
SRV_WUR rt_status srv_tfconf_ssl(const char *text, size_t len, srv_tf_ssl *out, rt_err *err);
/* Frees what *s holds (the key's bytes wiped first); *s zeroed. */
void srv_tf_ssl_clear(srv_tf_ssl *s);

/* predictctl's edits of a text-format model config. The version of label
 * of model (-1: no such label); RT_ERR_NOTFOUND when the model is not in
 * the file, RT_ERR_INVALID (line, column) when the file is not valid. */
SRV_WUR rt_status srv_tfconf_label(const char *text, size_t len, const char *model,
                                   const char *label, int64_t *version, rt_err *err);
/* The text with label of model pointing at version (version < 0: the label
 * removed), every other byte kept: an existing entry gets its value token
 * replaced; a new one is written in the style of the model's existing
 * entries (or `version_labels { key: "L" value: N }`) on its own line after
 * them, with their indentation. OUT: *out malloc'd (NUL-terminated). */
SRV_WUR rt_status srv_tfconf_set_label(const char *text, size_t len, const char *model,
                                       const char *label, int64_t version, char **out,
                                       size_t *out_len, rt_err *err);

/* ---------------------------------------------------------------- router */

typedef enum {
    SRV_ROUTE_NONE = 0,     /* no such path: 404 */
    SRV_ROUTE_BAD,          /* a known path with a bad part: http_code + msg */
    SRV_ROUTE_HEALTHZ,      /* GET /healthz, /v2/health/live */
    SRV_ROUTE_READYZ,       /* GET /readyz */
    SRV_ROUTE_V2_READY,     /* GET /v2/health/ready */
    SRV_ROUTE_V2_MODEL_READY, /* GET /v2/models/{m}[/versions/{v}]/ready */
    SRV_ROUTE_V2_SERVER,    /* GET /v2 (server metadata) */
    SRV_ROUTE_V2_METADATA,  /* GET /v2/models/{m}[/versions/{v}] */
    SRV_ROUTE_LIST,         /* GET /v1/models */
    SRV_ROUTE_STATUS,       /* GET /v1/models/{m}[/versions/{v}|/labels/{l}] */
    SRV_ROUTE_METADATA,     /* GET .../metadata */
    SRV_ROUTE_MONITORING,   /* GET /v1/models/{m}[/versions/{v}|/labels/{l}]/monitoring */
    SRV_ROUTE_INFER,        /* POST ...:predict|:classify|:regress, /v2/.../infer */
    SRV_ROUTE_METRICS,      /* GET /monitoring/prometheus/metrics */
    SRV_ROUTE_ANSWER,       /* a row that nothing but its answer tells apart (an
                               endpoint added as a row and its answer function:
                               docs/design.md, "How to add") */
} srv_route_kind;

#define SRV_NAME_MAX 128

typedef struct srv_route {
    srv_route_kind kind;
    int http_code;            /* for SRV_ROUTE_BAD / method errors, else 0 */
    char msg[256];            /* explanation for SRV_ROUTE_BAD */
    bool v2;                  /* KServe v2 answer shapes */
    bool cmle;                /* /v1/projects/{p}/... (version may be a label) */
    char model[SRV_NAME_MAX + 1];
    int64_t version;          /* -1 when not given */
    char label[SRV_NAME_MAX + 1]; /* "" when not given */
    rt_method method;         /* SRV_ROUTE_INFER (RT_METHOD_INFER: /v2) */
    const struct srv_route_row *row; /* the route table's row that matched
                                        (http/srv_routes.c); NULL for
                                        SRV_ROUTE_NONE and SRV_ROUTE_BAD */
} srv_route;

/* Routes one request against the route table (http/srv_routes.c), its
 * rows in order. method is the HTTP method ("GET", "POST", ...), url the
 * decoded path without the query. Never fails: unknown paths give
 * SRV_ROUTE_NONE (404; only kind is meaningful then), a wrong method
 * SRV_ROUTE_BAD with 405, a bad version/label/name SRV_ROUTE_BAD with 400
 * (a model name 404) and a message. Pure and thread-safe. */
void srv_route_request(const char *method, const char *url, srv_route *r);
/* Makes *r the first row of kind, as if its path had been requested with
 * method (405 when the row does not take it): the metrics path, which the
 * monitoring config may move. */
void srv_route_as(srv_route_kind kind, const char *method, srv_route *r);

/* --------------------------------------------------------------- framing */

/* One request header as the HTTP parser left it: name and value point into
 * the parser's buffer (not NUL-terminated here). */
typedef struct srv_field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} srv_field;

/* Checks the framing of a request with headers f[0..n) in the order
 * received (http10: an HTTP/1.0 request). Returns 0 when acceptable, else
 * the HTTP status to refuse it with, closing the connection: 400 for
 * Content-Length and Transfer-Encoding together, either given twice,
 * Transfer-Encoding in HTTP/1.0, a header name that is not a token (white
 * space before the colon), a control character other than HTAB in a value;
 * 501 for a transfer coding other than "chunked". msg says which. Pure. */
int srv_framing_check(const srv_field *f, size_t n, bool http10, char *msg, size_t msg_len);
/* Checks the raw header block as libmicrohttpd 0.9.x leaves it after
 * parsing it in place (block: the request's method, block_len: its header
 * size; version: the request line's HTTP version, f: the headers, all
 * pointing into block): each line must end in CRLF (now "\0\0") and be
 * "NAME\0 OWS VALUE" exactly, so that bare LF line ends, obsolete line
 * folding and NUL bytes are refused (400 and msg; 0 when clean). Pure. */
int srv_framing_check_block(const char *block, size_t block_len, const char *version,
                            const srv_field *f, size_t n, char *msg, size_t msg_len);

/* ------------------------------------------------------------------- cpu */

/* CPUs this process may really use: the affinity mask, capped by the
 * cgroup v2 quota (cpu.max, quota/period rounded up) of its cgroup. >= 1.
 * cgroup_root: normally "/sys/fs/cgroup" (tests pass a fake tree);
 * proc_cgroup: normally "/proc/self/cgroup". */
int srv_cpu_count(const char *cgroup_root, const char *proc_cgroup);
/* The cgroup v2 quota in CPUs (rounded up) from cpu.max text ("max 100000"
 * or "150000 100000"); 0 when unlimited or unreadable. */
int srv_cpu_quota_from_text(const char *text);

/* --------------------------------------------------------- model manager */

typedef enum {
    SRV_STATE_START = 0,
    SRV_STATE_LOADING,
    SRV_STATE_AVAILABLE,
    SRV_STATE_UNLOADING,
    SRV_STATE_END,
} srv_state;

const char *srv_state_name(srv_state s);

typedef struct srv_manager srv_manager;
/* One loaded version, reference counted. Hold it for a request's duration. */
typedef struct srv_version srv_version;

/* Creates a manager with no models. Nothing is loaded until
 * srv_manager_apply() and srv_manager_poll() (or the loader thread). */
SRV_WUR rt_status srv_manager_new(srv_manager **out, rt_err *err);
/* Stops the loader thread (if started) and frees everything; versions still
 * held by callers are freed when released. NULL is fine. */
void srv_manager_free(srv_manager *m);

/* Checks that config c may replace the running one: labels of models that
 * are already running may only point at AVAILABLE versions (a model new in
 * c may name versions that are not loaded yet: they are pinned, so loaded);
 * after the first config, a model added (or moved to another base path)
 * must have a base path that is a directory. Thread-safe. */
SRV_WUR rt_status srv_manager_check(srv_manager *m, const srv_config *c, rt_err *err);
/* srv_manager_check, then switches to c atomically (models added, removed,
 * policies and labels changed). Takes a copy; c stays the caller's. Wakes
 * the loader thread. */
SRV_WUR rt_status srv_manager_apply(srv_manager *m, const srv_config *c, rt_err *err);

/* One scan of every base path: loads new versions (with warm-up), retries
 * refused ones whose files changed, unloads versions the policy no longer
 * wants (a version a label or default_version names is pinned) or whose
 * directory vanished; a base path that cannot be read changes nothing.
 * Runs on the caller's thread (srv_loader.c). */
void srv_manager_poll(srv_manager *m);
/* Asks the loader thread for a scan now (returns at once). */
void srv_manager_wake(srv_manager *m);
/* Starts the loader thread and, with poll_seconds > 0, the inotify watcher:
 * a changed base path is scanned at once; at every tick of poll_seconds the
 * base paths that cannot be watched, and a few watched ones in turn, are
 * scanned (0 = scan only when srv_manager_apply or srv_manager_wake asks).
 * Call once, after the first srv_manager_apply; srv_manager_free stops
 * both threads. */
SRV_WUR rt_status srv_manager_start(srv_manager *m, int poll_seconds, rt_err *err);

/* Changes the loader's poll interval (applied from its next wait). */
void srv_manager_set_poll(srv_manager *m, int poll_seconds);

/* Finds the version that answers model/version/label (version -1 and label
 * NULL or "": the default version) and takes a reference.
 * Returns RT_ERR_NOTFOUND (404: unknown model or version), RT_ERR_INVALID
 * (400: unknown label), RT_ERR_UNSUPPORTED (503: model has no AVAILABLE
 * version yet), with a message. cmle: a label may be given as version text
 * (Cloud ML Engine's {v}), which the router leaves in label. */
SRV_WUR rt_status srv_manager_acquire(srv_manager *m, const char *model, int64_t version,
                                      const char *label, srv_version **out, rt_err *err);
/* A request's routing: in, its draws; out, what it chose besides the
 * version that answers. */
typedef struct srv_pick {
    uint64_t draw;        /* IN: the traffic split's draw (srv_route_key_hash of
                             X-Predictd-Route-Key, else a random number) */
    uint64_t sample;      /* IN: a random number (shadow and log sampling) */
    srv_version *shadow;  /* OUT: a reference to the shadow version when this
                             request is shadowed (release it), else NULL */
    bool log;             /* OUT: sampled for the prediction log */
} srv_pick;
/* srv_manager_acquire for an inference request: one that names no version
 * and no label follows the model's traffic split (an arm whose version is
 * not AVAILABLE falls back to the default version: a split never fails a
 * request). Samples the shadow and the prediction log. pick may be NULL
 * (no split, no sampling). Takes the manager's mutex once, like acquire. */
SRV_WUR rt_status srv_manager_acquire_routed(srv_manager *m, const char *model, int64_t version,
                                             const char *label, srv_pick *pick, srv_version **out,
                                             rt_err *err);
void srv_version_release(srv_version *v); /* NULL is fine */
const rt_model *srv_version_model(const srv_version *v);
/* The version's skew/drift monitor, or NULL (not configured, or no statistics). */
srv_monitor *srv_version_monitor(const srv_version *v);
int64_t srv_version_number(const srv_version *v);

/* TF Serving's GetModelStatus answer for model (version -1 = all versions,
 * or one version/label). Same error codes as srv_manager_acquire, except a
 * version that is known but not AVAILABLE is reported, not refused. */
SRV_WUR rt_status srv_manager_status_json(srv_manager *m, const char *model, int64_t version,
                                          const char *label, rt_buf *out, rt_err *err);
/* {"models": [{"name", "versions": [{"version","state"}], "labels", "default_version"}],
 *  "config": {"generation": N, "last_reload": "none|ok|refused", "last_error": "..."}} */
SRV_WUR rt_status srv_manager_list_json(srv_manager *m, rt_buf *out);
/* True when the default route (no version, no label) of every model that
 * readiness counts answers, and at least one model does: the models of the
 * first config, and a model added by a reload once its default route has
 * answered (a mistyped new model never takes a serving instance out of its
 * load balancer; a WARN line says it is not counted). Else false with the
 * reason in why (may be NULL). */
bool srv_manager_ready(srv_manager *m, char *why, size_t why_len);
/* Holds readiness back while the daemon is still starting a listener
 * (what names it, a string that outlives the call: "the gRPC port"); NULL
 * lets readiness follow the models again. So /readyz never answers 200
 * before every port the config asks for is up. */
void srv_manager_set_starting(srv_manager *m, const char *what);
/* Records the outcome of a config reload (msg: the refusal, or NULL), shown
 * by srv_manager_list_json as "config": {"generation", "last_reload",
 * "last_error"} so that predictctl can wait for it. generation counts
 * reload attempts. */
void srv_manager_note_reload(srv_manager *m, bool ok, const char *msg);
/* True when model name is configured. */
bool srv_manager_has_model(srv_manager *m, const char *model);
/* Number of AVAILABLE versions of model (0 if unknown). */
size_t srv_manager_available(srv_manager *m, const char *model);
/* The AVAILABLE versions of model, ascending, into out[0..max) (the
 * smallest max of them); returns how many there are. Thread-safe. */
size_t srv_manager_versions(srv_manager *m, const char *model, int64_t *out, size_t max);
/* Appends Prometheus lines about loaded versions: predictd_model_versions
 * {model,state}, predictd_model_ready{model} and
 * predictd_version_load_seconds{model,version}. */
SRV_WUR rt_status srv_manager_metrics(srv_manager *m, rt_buf *out);

/* Copies model's request_logging settings (dir into dir[0..dir_len)); false
 * when the model is unknown or logs nothing. Thread-safe. */
bool srv_manager_log_conf(srv_manager *m, const char *model, char *dir, size_t dir_len,
                          uint64_t *max_bytes, uint32_t *max_files);

/* -------------------------------------------------------- shadow and logs */

/* The door a request came in by: the metrics' protocol label ("rest",
 * "grpc"). */
typedef enum srv_proto { SRV_PROTO_REST = 0, SRV_PROTO_GRPC = 1 } srv_proto;

/* One answered inference request, as srv_shadow / srv_predlog take it
 * (they copy what they keep). A gRPC call's body and answer are the REST
 * JSON it ran as (docs/grpc.md). */
typedef struct srv_served {
    const char *model;
    int64_t version;        /* the version that answered */
    rt_method method;
    int code;               /* HTTP status */
    double seconds;         /* latency */
    double unix_time;       /* when it was answered (CLOCK_REALTIME) */
    const char *body;
    size_t body_len;
    const char *answer;
    size_t answer_len;
    srv_proto proto;        /* the door it came in by (0: REST) */
    const char *rpc;        /* gRPC: the method's path ("/package.Service/Method"),
                               a string that outlives the process; REST: NULL */
} srv_served;

/* Shadow traffic (srv_shadow.c): one thread re-runs submitted requests on
 * their shadow version and compares the answers; at most max_queue runs and
 * max_bytes bytes of copied requests and answers wait. Thread-safe. */
typedef struct srv_shadow srv_shadow;
SRV_WUR rt_status srv_shadow_new(size_t max_queue, size_t max_bytes, const rt_json_params *json,
                                 srv_shadow **out, rt_err *err);
/* Runs what is queued, joins, frees. NULL is fine. */
void srv_shadow_free(srv_shadow *s);
/* Queues r (copied) to run on shadow, whose reference it takes over; false
 * (dropped, counted, the reference released) when the queue is full or r
 * does not fit in its byte budget.
 * Never blocks. */
bool srv_shadow_submit(srv_shadow *s, const srv_served *r, srv_version *shadow);
/* Appends predictd_shadow_* lines. */
SRV_WUR rt_status srv_shadow_metrics(srv_shadow *s, rt_buf *out);

/* Prediction logs (srv_predlog.c): one writer thread appends a JSON line per
 * submitted request to the model's request_logging dir; at most max_queue
 * lines and max_bytes bytes of copied requests and answers wait.
 * Thread-safe. */
typedef struct srv_predlog srv_predlog;
SRV_WUR rt_status srv_predlog_new(srv_manager *mgr, size_t max_queue, size_t max_bytes,
                                  srv_predlog **out, rt_err *err);
/* Writes what is queued, joins, closes, frees. NULL is fine. */
void srv_predlog_free(srv_predlog *l);
/* Queues r (copied); false (dropped, counted) when the queue is full or r
 * does not fit in its byte budget.
 * Never blocks. */
bool srv_predlog_submit(srv_predlog *l, const srv_served *r);
/* Appends predictd_prediction_log_* lines. */
SRV_WUR rt_status srv_predlog_metrics(srv_predlog *l, rt_buf *out);

/* --------------------------------------------------------------- metrics */

/* Counters and histograms for GET /monitoring/prometheus/metrics: TF
 * Serving's names (:tensorflow:serving:request_count, request_latency) and
 * predictd_* ones (requests by model/version/method/code, latency, in-flight,
 * worker busy time, rejections, reloads). Thread-safe; one per daemon. */
typedef struct srv_metrics srv_metrics;

srv_metrics *srv_metrics_new(int workers);
void srv_metrics_free(srv_metrics *m); /* NULL is fine */
/* One inference request finished: model "" when it named no known model,
 * version -1 when none answered. */
void srv_metrics_request(srv_metrics *m, const char *model, int64_t version, rt_method method,
                         int http_code, double seconds);
/* srv_metrics_request for a request that came in by proto (srv_metrics_request
 * counts it as REST's): http_code is the HTTP code REST answers for the same
 * outcome (srv_grpc_http_of for a gRPC status). */
void srv_metrics_request_via(srv_metrics *m, srv_proto proto, const char *model, int64_t version,
                             rt_method method, int http_code, double seconds);
/* Any HTTP answer (all routes), by status code. */
void srv_metrics_http(srv_metrics *m, int http_code);
/* What the metrics hold of one model version's inference requests, over
 * every method (Triton's statistics extension, GET /v2/models/{m}/stats):
 * answered 200 (ok) or not (fail), their seconds, the last answer's wall
 * time in ms since the epoch (0: none). */
typedef struct srv_model_stat {
    uint64_t ok, fail;
    double ok_seconds, fail_seconds;
    int64_t last_ms;
} srv_model_stat;
void srv_metrics_model_stat(srv_metrics *m, const char *model, int64_t version,
                            srv_model_stat *out);
/* +1 when a request starts being handled, -1 when it ends; busy time counts
 * while it is positive per worker. */
void srv_metrics_in_flight(srv_metrics *m, int delta, double busy_seconds);
/* Current depth of the inference queue (a gauge, set by the HTTP layer). */
void srv_metrics_queue_depth(srv_metrics *m, long depth);
/* A request refused before running: reason "too_large", "overloaded", ... */
void srv_metrics_rejected(srv_metrics *m, const char *reason);
/* Connections: open >= 0 sets the open-connections gauge; refused counts a
 * new connection refused at max_connections; closed (may be NULL) counts
 * one connection predictd closed, by reason ("idle_reclaimed",
 * "header_timeout", "read_timeout"). */
void srv_metrics_connections(srv_metrics *m, long open, bool refused, const char *closed);
void srv_metrics_reload(srv_metrics *m, bool ok);
/* One merged batch ran: instances in it (predictd_batch_size histogram),
 * requests in it, and whether it had to fall back to one run per request. */
void srv_metrics_batch(srv_metrics *m, size_t instances, size_t requests, bool fallback);
/* Batches waiting to run (predictd_batch_queue_depth gauge). */
void srv_metrics_batch_queue(srv_metrics *m, long depth);
/* A gRPC call's deadline passed while it waited for its batch: not run
 * (predictd_batch_expired_total). */
void srv_metrics_batch_expired(srv_metrics *m);
/* A gRPC call was cancelled by its client (the core's close op said so)
 * while it waited for its batch: not run (predictd_batch_cancelled_total). */
void srv_metrics_batch_cancelled(srv_metrics *m);
/* A run was stopped during its work (between its stages, between chunks of
 * its forward pass or of an :explain's rows, or before its answer was
 * sent): its client went away (deadline false) or its deadline passed (a
 * gRPC call's, or REST's rest_api_timeout_in_ms)
 * (predictd_runs_stopped_total{reason}). */
void srv_metrics_stopped(srv_metrics *m, bool deadline);
/* One request's wait in a queue, wait_ns >= 0: for a worker, or (batch)
 * for its batch to run (predictd_queue_wait_seconds{queue}). Lock-free. */
void srv_metrics_queue_wait(srv_metrics *m, bool batch, int64_t wait_ns);
/* Appends the counters above as one JSON object (the console's traffic
 * snapshot, server/ui/srv_ui.c): {"hists": [{model, version, method, count,
 * sum, buckets (non-cumulative, per "le")}], "series": [{model, version,
 * method, code, count}], "batch": {...}, "queue_wait": {"workers", "batch":
 * {count, sum (seconds)}}, "queue_depth", "in_flight"};
 * the same counters the Prometheus text shows, nothing counted apart.
 * nonzero when out of memory. Thread-safe. */
SRV_WUR int srv_metrics_snapshot_json(srv_metrics *m, rt_buf *out);
/* Appends the Prometheus text (format 0.0.4) of m and of mgr's versions. */
SRV_WUR rt_status srv_metrics_render(srv_metrics *m, srv_manager *mgr, rt_buf *out);

/* ------------------------------------------------------------- admission */

/* Model rows per admission unit of an :explain request (a :predict request
 * weighs 1 unit whatever its instances): the rows the explainer runs
 * through the forward pass at a time. */
#define SRV_EXPLAIN_ROWS_PER_UNIT 1024

/* The adaptive limit on inference requests admitted and not yet run to
 * their end (srv_admit.c): additive increase while they wait in the queue
 * no longer than a target, a cut by a quarter when one waits longer, never
 * under a floor. Any thread. */
typedef struct srv_admit srv_admit;

/* A limit starting at max (>= 1), never cut under min (1..max: the
 * workers), for a target wait of target_ns (>= 1).
 * OUT: *out, free with srv_admit_free(). */
SRV_WUR rt_status srv_admit_new(size_t max, size_t min, int64_t target_ns, srv_admit **out,
                                rt_err *err);
/* Takes one slot while fewer than the limit are in flight: returns its
 * ticket (>= 1), to be given back with srv_admit_done; 0 (nothing taken)
 * when the request is to be refused. */
uint64_t srv_admit_take(srv_admit *a);
/* Gives back the slot of ticket. answered: the request ran and wait_ns is
 * how long it waited in the queue before a worker took it, which adapts the
 * limit (a wait over the target cuts it, once per episode: only tickets
 * issued after the last cut can cut again). Not answered (refused after
 * all, never run): the slot only. */
void srv_admit_done(srv_admit *a, uint64_t ticket, bool answered, int64_t wait_ns);
/* srv_admit_take for a request of weight units (1 to the max; clamped):
 * admitted while the units in flight plus weight are within the limit, or
 * when nothing is in flight. */
uint64_t srv_admit_take_weighted(srv_admit *a, size_t weight);
/* srv_admit_done for a ticket taken with weight (the same weight); answered
 * in time, the limit grows by weight/limit. */
void srv_admit_done_weighted(srv_admit *a, uint64_t ticket, size_t weight, bool answered,
                             int64_t wait_ns);
/* The limit now (whole units: a request weighs 1 but an :explain) and the
 * units in flight, read together (one consistent pair). */
void srv_admit_read(srv_admit *a, size_t *limit, size_t *in_flight);
/* Each of the two alone. */
size_t srv_admit_limit(srv_admit *a);
/* The message of a refusal at the limit (REST's 429, gRPC's
 * RESOURCE_EXHAUSTED), naming max_queue_wait_ms's value. */
void srv_admit_busy_message(int max_queue_wait_ms, char *msg, size_t len);
size_t srv_admit_in_flight(srv_admit *a);
/* NULL is fine. */
void srv_admit_free(srv_admit *a);

/* ------------------------------------------------------------------ pool */

/* A fixed set of worker threads fed by a bounded FIFO queue. */
typedef struct srv_pool srv_pool;
/* Runs one job on worker number `worker` (0..workers-1). */
typedef void (*srv_job_fn)(void *fn_ctx, void *job, int worker);

/* Starts `workers` threads; at most max_queue jobs wait (running ones not
 * counted). OUT: *out, free with srv_pool_free(). */
SRV_WUR rt_status srv_pool_new(int workers, size_t max_queue, srv_job_fn fn, void *fn_ctx,
                               srv_pool **out, rt_err *err);
/* Queues job; false (job not taken) when the queue is full or stopping. */
bool srv_pool_submit(srv_pool *p, void *job);
/* Promises one queue slot (false when full or stopping); the slot must then
 * be filled with srv_pool_submit_reserved, which cannot fail. (The HTTP
 * layer suspends the connection between the two, so that a worker can never
 * resume a connection before it was suspended.) */
bool srv_pool_reserve(srv_pool *p);
void srv_pool_submit_reserved(srv_pool *p, void *job);
/* From now on srv_pool_reserve (and srv_pool_submit) also refuse while the
 * oldest waiting job has waited more than max_wait_ms; 0 = no such limit.
 * Any thread. */
void srv_pool_set_max_wait(srv_pool *p, int max_wait_ms);
/* Jobs waiting (not yet running). */
size_t srv_pool_depth(srv_pool *p);
/* Jobs running now. */
size_t srv_pool_running(srv_pool *p);
/* Runs what is queued, then joins the workers and frees. NULL is fine. */
void srv_pool_free(srv_pool *p);

/* --------------------------------------------------------------- batching */

/* Cross-request batching: jobs with the same key (two addresses, e.g. the
 * model version and the signature) join one batch of at most max_batch_size
 * instances; the batch runs when full or when its first job has waited
 * timeout_us, as one call of the batch function on one of `threads`
 * threads. Thread-safe. */
typedef struct srv_batcher srv_batcher;

typedef struct srv_batcher_params {
    size_t max_batch_size;        /* instances per batch, >= 1 */
    long timeout_us;              /* wait for company; 0 = run as soon as a batch
                                     thread is free (merging what arrived meanwhile) */
    size_t max_enqueued_batches;  /* batches waiting (open or full), >= 1 */
    int threads;                  /* batch threads, >= 1 */
} srv_batcher_params;

/* max_batch_size 128, timeout_us 1000, max_enqueued_batches 64, threads 1. */
srv_batcher_params srv_batcher_default_params(void);

/* Runs one batch: jobs[0..n) in the order they were submitted, all with
 * the same key. thread is 0..threads-1. The jobs are the callee's now. */
typedef void (*srv_batch_fn)(void *fn_ctx, void *const *jobs, size_t n, int thread);

typedef enum {
    SRV_BATCH_QUEUED = 0,  /* taken: the batch function will see it */
    SRV_BATCH_FULL,        /* max_enqueued_batches wait, or stopping: 429 */
    SRV_BATCH_TOO_BIG,     /* size 0 or over max_batch_size: run it alone */
} srv_batch_result;

SRV_WUR rt_status srv_batcher_new(const srv_batcher_params *p, srv_batch_fn fn, void *fn_ctx,
                                  srv_batcher **out, rt_err *err);
/* Adds job (size instances) to the open batch of (key_a, key_b), first
 * closing that batch if the job does not fit, or opening a new one. */
srv_batch_result srv_batcher_submit(srv_batcher *b, const void *key_a, const void *key_b,
                                    size_t size, void *job);
/* Batches waiting (not yet running). */
size_t srv_batcher_depth(srv_batcher *b);
/* Runs every waiting batch at once (no more waiting for company) and joins
 * the threads; later submissions are refused (SRV_BATCH_FULL). NULL is fine. */
void srv_batcher_stop(srv_batcher *b);
/* srv_batcher_stop, then frees. NULL is fine. */
void srv_batcher_free(srv_batcher *b);

/* ----------------------------------------------------------- connections */

/* The HTTP server's open client connections (srv_conn.c): at most
 * max_connections (when all are taken the oldest one that has sent nothing
 * since it was accepted, else the longest-idle keep-alive one, is closed
 * for a new one; with neither the new one is refused), and a
 * sweeper thread that shuts down connections whose request header is not
 * whole header_timeout_s after they opened (or after the next request's
 * first byte), or whose request is not read whole read_timeout_s after its
 * first byte. Thread-safe. */
typedef struct srv_conns srv_conns;
typedef struct srv_conn srv_conn;

typedef struct srv_conns_params {
    int max_connections;   /* >= 1 */
    int header_timeout_s;  /* 0 = off */
    int read_timeout_s;    /* 0 = off */
    srv_metrics *metrics;  /* may be NULL: predictd_open_connections, ... */
} srv_conns_params;

/* Starts the sweeper thread when a timeout is on. OUT: *out. */
SRV_WUR rt_status srv_conns_new(const srv_conns_params *p, srv_conns **out, rt_err *err);
/* Stops the sweeper and frees; call after every connection's socket is
 * closed (records still registered are freed). NULL is fine. */
void srv_conns_free(srv_conns *t);
/* Whether a new connection may be accepted: true when fewer than
 * max_connections are open, or after shutting down the oldest silent
 * connection (nothing received since it was accepted) or else the
 * longest-idle keep-alive one for it; false (counted and logged) when none
 * is silent or idle. */
bool srv_conns_admit(srv_conns *t);
/* Registers a connection on socket fd; exempt ones (the watchdog probe)
 * are neither counted nor closed. NULL when out of memory. The socket must
 * stay open until srv_conns_remove. */
srv_conn *srv_conns_add(srv_conns *t, int fd, bool exempt);
/* Unregisters and frees c. NULL is fine. */
void srv_conns_remove(srv_conns *t, srv_conn *c);
/* Request progress, from the connection's I/O thread (NULL is fine): its
 * request line arrived; its header is whole; its body is read whole; it
 * completed (idle now). */
void srv_conn_request_began(srv_conn *c);
void srv_conn_headers_done(srv_conn *c);
void srv_conn_read_done(srv_conn *c);
void srv_conn_request_done(srv_conn *c);

/* ------------------------------------------------------------------ http */

typedef struct srv_http srv_http;

/* What the HTTP server is given: the config, whose settings it reads
 * itself (the listener, threads, limits, deadlines, queue, batching, CORS,
 * gzip, the metrics path: srv_config's fields, the settings table's rows;
 * copied at start, so the config need not outlive it), and the daemon's
 * objects. */
typedef struct srv_http_params {
    const srv_config *cfg; /* the settings (rest_api_port 0 = any free port:
                              see srv_http_port) */
    int cpus;              /* request threads when rest_api_num_threads is 0 */
    int listen_fd;         /* >= 0: an already listening socket to use */
    int io_threads;        /* libmicrohttpd threads; 0 = derived from threads */
    srv_metrics *metrics;  /* may be NULL; the caller owns it */
    struct srv_tls *tls;   /* non-NULL: HTTPS with it (the caller owns it) */
    struct srv_auth *auth; /* non-NULL: bearer tokens required (the caller owns it) */
} srv_http_params;

/* No config (it must be given), one CPU, no socket, no objects. */
srv_http_params srv_http_default_params(void);

/* Starts serving on the manager's models with p->cfg's settings (copied).
 * The manager must outlive the server. *draining (may be NULL) is read on
 * every readiness probe. */
SRV_WUR rt_status srv_http_start(const srv_http_params *p, srv_manager *mgr,
                                 const _Atomic int *draining, srv_http **out, rt_err *err);
/* The port actually bound. */
int srv_http_port(const srv_http *h);
/* The adaptive admission limit of h's inference requests (the gRPC front
 * shares it), or NULL when there is none (max_queue_depth or
 * max_queue_wait_ms 0). It lives as long as h. */
srv_admit *srv_http_admit(srv_http *h);
/* The tracer of h (tracing.*, server/trace/), shared with the gRPC front,
 * or NULL when tracing is off; it lives until srv_http_free. */
struct srv_tracer *srv_http_tracer(srv_http *h);
/* Queues what an answered inference request's routing sampled (pick, from
 * srv_manager_acquire_routed): its prediction log line when pick->log, and
 * its shadow run when pick->shadow and s->code is 200 (the shadow's
 * reference is taken over: pick->shadow is NULL after). REST's requests and
 * the gRPC front's calls (docs/grpc.md) go through it alike, to the same
 * queues. Copies; never blocks. Nothing when s->version < 0. */
void srv_http_tap(srv_http *h, const srv_served *s, srv_pick *pick);
/* A gRPC call's watch during its run (rt_ctx_set_stop(ctx, srv_call_stop,
 * &watch)): the hook is true once the deadline (rt_time_now_ns's clock, 0:
 * none) passed or gone (may be NULL; set by another thread) is set, and
 * records which in stopped (1: the deadline, 2: the client went away). */
typedef struct srv_call_watch {
    int64_t deadline;
    const _Atomic int *gone;
    int stopped;
} srv_call_watch;
bool srv_call_stop(void *arg);
/* True when h batches across requests (enable_batching). */
bool srv_http_batching(const srv_http *h);
/* True for the methods whose requests join batches: :predict, :classify,
 * :regress and /v2 infer (not :explain). */
bool srv_http_batched_method(rt_method method);
/* For the gRPC front: runs a :predict, :classify or :regress body (method
 * RT_METHOD_PREDICT, _CLASSIFY, _REGRESS) or a /v2 infer body
 * (RT_METHOD_INFER; v2_header its JSON's length or RT_V2_NO_HEADER) of
 * model on version v (the caller's reference, kept) through h's batcher, as
 * a REST request with batching on (srv_http_batch_enter): parsed on the
 * calling thread, joined to the open batch of v and its merge key (REST
 * requests of any of those methods may share it), the caller
 * waiting until a batch thread answered it; empty or over max_batch_size:
 * run alone here. start (CLOCK_MONOTONIC ns) is when the call began
 * (rest_api_timeout_in_ms counts from it); deadline (the same clock, 0:
 * none) is the call's own: past it when its batch starts, it is not run
 * (504, predictd_batch_expired_total). gone (may be NULL), set by another
 * thread when the call's client went away (cancelled, or the core ended the
 * call at its deadline): set when its batch starts, it is not run (499, or
 * 504 past the deadline; predictd_batch_cancelled_total). Returns REST's
 * status for the
 * outcome (200, 400, 429, 504, ...) with ans holding REST's answer (or
 * {"error": ...}) and *v2_answer the JSON's length when binary tensors
 * follow it, else 0. Counts no request metrics line (the caller does);
 * h must batch (srv_http_batching). */
unsigned srv_http_batch_call(srv_http *h, srv_version *v, const char *model, rt_method method,
                             const char *body, size_t len, size_t v2_header, int64_t start,
                             int64_t deadline, const _Atomic int *gone, rt_buf *ans,
                             size_t *v2_answer);
/* Sends GET /healthz over a socketpair handed to libmicrohttpd (so it needs
 * no free connection slot, and runs on the I/O threads and request handler
 * clients use) and waits up to timeout_ms for a 200: true when request
 * handling is alive. For the systemd watchdog; one caller at a time. */
bool srv_http_probe(srv_http *h, int timeout_ms);
/* Stops accepting, lets in-flight requests finish, frees. NULL is fine. */
void srv_http_stop(srv_http *h);

/* ------------------------------------------------------------------ gRPC */

/* The gRPC front door (server/grpc/, docs/grpc.md): TF Serving's
 * PredictionService and ModelService, inference.GRPCInferenceService and
 * grpc.health.v1.Health on one port, on the same manager as the REST front. */
typedef struct srv_grpc srv_grpc;
typedef struct srv_grpc_params {
    const char *host;        /* address to bind; NULL = every address */
    int port;                /* 0 = any free port (see srv_grpc_port) */
    int threads;             /* the threads that run calls */
    size_t max_request_bytes; /* largest request message */
    size_t max_answer_bytes;  /* largest answer message; 0 = no limit */
    srv_metrics *metrics;    /* may be NULL; the caller owns it */
    struct srv_auth *auth;   /* non-NULL: bearer tokens (the `authorization`
                                metadata) required, as on REST */
    const char *tls_cert_file; /* non-NULL: TLS only, REST's PEM files (copied) */
    const char *tls_key_file;
    const char *tls_client_ca_file; /* non-NULL: mutual TLS */
    /* TF Serving's --ssl_config_file: non-NULL tls_cert_pem: TLS only from
     * these PEM contents (copied) in place of the three files above;
     * tls_ca_pem non-NULL: client certificates required and verified
     * against it (client_verify) */
    const char *tls_cert_pem, *tls_key_pem, *tls_ca_pem;
    srv_admit *admit;        /* REST's admission limit (srv_http_admit), shared:
                                an inference call past it is RESOURCE_EXHAUSTED;
                                NULL: none */
    int max_queue_wait_ms;   /* its setting, named in that status's message */
    srv_http *http;          /* REST's front, shared: inference calls join its
                                batches (enable_batching) and go to its
                                prediction logs and shadow queue as its requests
                                do (srv_http_tap); NULL: none of these */
    struct srv_tracer *tracer; /* REST's (srv_http_tracer), shared: a span per
                                  unary call; NULL: none */
    /* ModelService/HandleReloadConfigRequest: applies models (a
     * ModelServerConfig's model_config_list in TF Serving's text format) as
     * a config reload does (srv_config_build_models), on the caller's
     * thread, and returns when it is applied or refused (err: why, the
     * running config unchanged). NULL: the method is UNIMPLEMENTED. */
    rt_status (*reload)(void *arg, const char *models, size_t len, rt_err *err);
    void *reload_arg;
} srv_grpc_params;
/* Starts serving; the manager must outlive the server. *draining (may be
 * NULL) is read by the readiness methods. */
SRV_WUR rt_status srv_grpc_start(const srv_grpc_params *p, srv_manager *mgr,
                                 const _Atomic int *draining, srv_grpc **out, rt_err *err);
int srv_grpc_port(const srv_grpc *g);
/* A client's unary call to a gRPC port (server/grpc/srv_grpc_client.c, for
 * predictctl --grpc). */
typedef struct srv_grpc_client_params {
    const char *target;  /* HOST:PORT */
    int timeout_ms;      /* the call's deadline */
    bool tls;            /* TLS (else plain) */
    const char *cacert;  /* PEM CA file to verify the daemon; NULL: the system's */
    const char *cert;    /* mutual TLS: PEM client certificate and key, or NULL */
    const char *key;
    const char *token;   /* bearer token for the `authorization` metadata, or NULL */
} srv_grpc_client_params;
/* Calls method ("/package.Service/Method") with request message in/len:
 * *code the gRPC status (0 OK), msg its message, out the answer message's
 * bytes (appended). RT_OK when the call ran, whatever its status (a daemon
 * that does not answer is UNAVAILABLE or DEADLINE_EXCEEDED); an error
 * only for a file of p that cannot be read, or out of memory. */
SRV_WUR rt_status srv_grpc_client_call(const srv_grpc_client_params *p, const char *method,
                                       const uint8_t *in, size_t len, rt_buf *out, int *code,
                                       char *msg, size_t msg_len, rt_err *err);
/* predictctl --grpc HOST:PORT ready | status MODEL [--json] (srv_ctl_grpc.c):
 * the exit status. argv[0] is the command. */
int srv_ctl_grpc(const srv_ctl_flags *fl, const char *token, int argc, char **argv);
/* The next TLS handshake reads the certificate, key and client CA files
 * again (after REST's srv_tls_reload accepted them). NULL or plain: nothing. */
void srv_grpc_tls_reload(srv_grpc *g);
/* A port started with tls_cert_pem: the next handshakes use these PEM
 * contents (copied; already checked by the caller, srv_tls_check_pem).
 * Refused (RT_ERR_INVALID) when ca's presence differs from the running
 * one's: whether client certificates are asked for is fixed at start. */
SRV_WUR rt_status srv_grpc_tls_set_pem(srv_grpc *g, const char *cert, const char *key,
                                       const char *ca, rt_err *err);
/* Stops taking calls, lets in-flight ones finish (cancelled after a grace
 * of 5 s), frees. NULL is fine. */
void srv_grpc_stop(srv_grpc *g);

/* ---------------------------------------------------------------- client */

/* One blocking HTTP/1.1 request to host:port (Connection: close). body may
 * be NULL. On success *status is the HTTP code and out holds the response
 * body (appended). Fails on connection errors, a timeout (timeout_ms for
 * the whole exchange) or a malformed answer, naming what went wrong. */
SRV_WUR rt_status srv_client_request(const char *host, int port, const char *method,
                                     const char *path, const char *body, int timeout_ms,
                                     int *status, rt_buf *out, rt_err *err);
/* The same exchange on an already connected non-blocking socket fd, which
 * is closed here in every case; name is sent as the Host header and names
 * the peer in messages. */
SRV_WUR rt_status srv_client_request_fd(int fd, const char *name, const char *method,
                                        const char *path, const char *body, int timeout_ms,
                                        int *status, rt_buf *out, rt_err *err);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_SRV_H */
