/*
 * main_predictctl.c — predictctl, the operator's tool for a predictd on this
 * machine: show status, move version labels, set the default version,
 * promote and roll back, run a canary (traffic split), shadow a version.
 *
 * The daemon's config file stays the single source of truth: predictctl
 * edits it (keeping every other key), validates the result with the
 * daemon's own parser, writes it atomically (temp file, fsync, rename), then
 * waits until the daemon has reloaded it (it watches the file) and reads the
 * outcome from GET /v1/models ("config": generation, last_reload,
 * last_error). If the daemon refuses the change, the old file is put back
 * and the operator sees why. A promotion therefore survives a restart.
 *
 * The config may be JSON (printed back in its own indentation) or TF
 * Serving's text format (edited token by token through srv_tfconf.c, so
 * comments and layout stay). Before editing, predictctl asks the daemon
 * which file it reloads: a flags-only daemon has none and is told at once.
 *
 * Edits are serialized: each holds an exclusive flock(2) on CONFIG.lock (a
 * file beside the config, since the config itself is replaced by rename) from
 * reading the file until the daemon's verdict, so two operators' edits never
 * overwrite each other. Holding the lock, an edit also removes the temp files
 * (CONFIG.predictctl-PID) that killed editors left behind.
 */
#include "srv.h"
#include "srv_sec.h"

#include <cJSON.h>
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct ctl {
    const char *config;  /* the daemon's config file */
    char *config_owned;  /* the daemon's own file when no --config was given */
    bool json;           /* --json: status as the daemon's JSON */
    char host[256];
    int port;
    int timeout_s;
    char *orig;          /* the config file's text as read */
    size_t orig_len;
    srv_client_opts cli; /* HTTPS (https:// or the config's tls_cert_file), --cacert,
                            the token of --token-file */
    char token[512];
} ctl;


static const char USAGE_COMMANDS[] =
    "  status [MODEL] [--json]     versions, states, labels and errors as a table (all\n"
    "                              models without MODEL); --json: the daemon's JSON\n"
    "  models                      models with versions, labels and default version\n"
    "  ready                       exit 0 when GET /v2/health/ready answers 200, else 1\n"
    "                              (a container's health check)\n"
    "  label MODEL LABEL VERSION   point LABEL at VERSION (must be AVAILABLE)\n"
    "  default MODEL VERSION|LABEL  make VERSION or LABEL the default version\n"
    "  promote MODEL VERSION       stable -> VERSION (old stable -> previous), default stable;\n"
    "                              ends a traffic split\n"
    "  rollback MODEL              with a traffic split: end it (all traffic to stable);\n"
    "                              without: stable <-> previous, default stable\n"
    "  canary MODEL VERSION PERCENT  label VERSION canary and send PERCENT of the requests\n"
    "                              naming no version to it (traffic_split stable/canary)\n"
    "  shadow MODEL VERSION PERCENT  also run PERCENT of the requests on VERSION, after\n"
    "                              answering, and compare (metrics predictd_shadow_*)\n"
    "  shadow MODEL off            stop shadowing\n"
    "  wait MODEL VERSION STATE [--timeout S]  until VERSION of MODEL is in STATE (START,\n"
    "                              LOADING, AVAILABLE, UNLOADING, END) on predictd; fails\n"
    "                              after --timeout seconds, or at once when the version\n"
    "                              ended with an error\n"
    "  reload                      ask the daemon to re-read its config file\n"
    "  token add --scopes infer,read[,metrics] [--tokens-file FILE] [--name NAME]\n"
    "                              print a new bearer token once and append its SHA-256\n"
    "                              to FILE (default: the config file's auth_tokens_file);\n"
    "                              the daemon takes it at its next reload\n";

static const char USAGE_NOTES[] =
    "  --help                      this text\n"
    "The config file's rest_api_host/rest_api_port give the URL (a wildcard host\n"
    "means 127.0.0.1). Without --config and without the default file, the daemon\n"
    "is --url or http://127.0.0.1:8501, and an edit goes to the file it reloads\n"
    "(one started with flags only has none to edit). Edits keep every other key\n"
    "of the file, are validated, written atomically, and undone if the daemon\n"
    "refuses them; concurrent edits take turns (a lock on FILE.lock). FILE may\n"
    "be JSON or TF Serving's text format (models.config: edited in place,\n"
    "comments kept; it has no default version). Exit 0 ok, 1 refused/failed, 2 usage.\n";

/* The --help text: the commands, the flags (its table), the notes. */
static void usage(FILE *fp)
{
    size_t n_flags;
    const rt_setting *flags = srv_ctl_flag_settings(&n_flags);
    rt_buf b;
    rt_buf_init(&b);
    int r = rt_buf_puts(&b, "usage: predictctl");
    for (size_t i = 0; i < n_flags; i++)
        r |= flags[i].type == RT_SET_BOOL ? rt_buf_printf(&b, " [--%s]", flags[i].name)
                                          : rt_buf_printf(&b, " [--%s %s]", flags[i].name,
                                                          flags[i].arg);
    r |= rt_buf_puts(&b, " COMMAND\n");
    r |= rt_buf_puts(&b, USAGE_COMMANDS);
    r |= rt_settings_help(&b, flags, n_flags, 30, NULL, 0);
    r |= rt_buf_puts(&b, USAGE_NOTES);
    fputs(r ? "predictctl: out of memory\n" : b.data, fp);
    rt_buf_free(&b);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("predictctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* The temp file an edit writes before renaming it over the config. */
#define TEMP_TAG ".predictctl-"

/* The first line of the token file at path into out (a bearer token, as
 * predictctl token add printed it); 0, else 1 with a message. */
static int read_token(const char *path, char *out, size_t len)
{
    char *text = NULL;
    rt_err e;
    if (rt_file_read(AT_FDCWD, path, 4096, 0, &text, NULL, &e) != RT_OK)
        return fail("--token-file %s", e.msg);
    size_t n = strcspn(text, "\r\n");
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    int r = 0;
    if (n == 0 || n >= len || strcspn(text, " \t") < n)
        r = fail("--token-file %s: expected the token on its first line", path);
    else
        snprintf(out, len, "%.*s", (int)n, text);
    free(text);
    return r;
}

static void on_alarm(int sig)
{
    (void)sig; /* only interrupts flock() */
}

/* " (pid N)" of the lock's holder as it recorded itself, if that process
 * lives; "" otherwise. */
static const char *lock_holder(int fd, char *out, size_t len)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    out[0] = '\0';
    if (n <= 0)
        return out;
    buf[n] = '\0';
    long pid = strtol(buf, NULL, 10);
    if (pid > 0 && kill((pid_t)pid, 0) == 0)
        snprintf(out, len, " (pid %ld)", pid);
    return out;
}

/*
 * Takes the edit lock: an exclusive flock on CONFIG.lock, waiting up to
 * timeout_s for another predictctl to finish. The kernel drops it when the
 * process ends, however it ends. Returns the descriptor to keep open, or -1
 * (message printed).
 */
static int lock_config(const ctl *c)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s.lock", c->config) >= (int)sizeof path) {
        fail("%s: path too long", c->config);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0) {
        fail("%s: cannot create the edit lock: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char who[48];
        fprintf(stderr, "predictctl: waiting (up to %d s) for another predictctl%s editing %s\n",
                c->timeout_s, lock_holder(fd, who, sizeof who), c->config);
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm; /* no SA_RESTART: flock returns EINTR */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, &old);
        alarm((unsigned)c->timeout_s);
        int r = flock(fd, LOCK_EX);
        int e = errno;
        alarm(0);
        sigaction(SIGALRM, &old, NULL);
        if (r != 0) {
            fail("%s is still being edited by another predictctl%s after %d s; nothing "
                 "changed (%s)", c->config, lock_holder(fd, who, sizeof who), c->timeout_s,
                 e == EINTR ? "timed out" : strerror(e));
            close(fd);
            return -1;
        }
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        /* only informative: the lock itself holds */
    }
    return fd;
}

/*
 * With the edit lock held, no other predictctl is writing a temp file, so
 * CONFIG.predictctl-PID files are leftovers of editors that were killed
 * between writing and renaming. Removes those whose PID is gone (a live PID
 * may be a predictctl older than the lock; it is left alone).
 */
static void remove_stale_temps(const ctl *c)
{
    char dir[4096], prefix[512];
    const char *slash = strrchr(c->config, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == c->config)
        snprintf(dir, sizeof dir, "/");
    else if (snprintf(dir, sizeof dir, "%.*s", (int)(slash - c->config), c->config) >=
             (int)sizeof dir)
        return;
    if (snprintf(prefix, sizeof prefix, "%s" TEMP_TAG, slash ? slash + 1 : c->config) >=
        (int)sizeof prefix)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t plen = strlen(prefix);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *digits = de->d_name + plen;
        if (strncmp(de->d_name, prefix, plen) != 0 || !*digits ||
            strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
            continue;
        long pid = strtol(digits, NULL, 10);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            fprintf(stderr, "predictctl: removed %s/%s, left by a predictctl (pid %ld) that "
                            "was killed mid-edit\n", dir, de->d_name, pid);
    }
    closedir(d);
}

/* GET path as JSON; NULL (message printed) on failure or non-200. */
static cJSON *get_json(const ctl *c, const char *path, int *code_out)
{
    rt_buf b;
    rt_buf_init(&b);
    rt_err err = {{0}};
    int code = 0;
    cJSON *doc = NULL;
    if (srv_client_request_opts(&c->cli, c->host, c->port, "GET", path, NULL, 10000, &code, &b,
                                &err) != RT_OK) {
        /* the hint only where it helps: nothing listening there */
        fail("%s%s", err.msg,
             strstr(err.msg, "cannot connect") ? " (is predictd running? see --url)" : "");
    } else {
        doc = cJSON_ParseWithLength(b.data ? b.data : "", b.len);
        if (!c->cli.tls && code == 400 && b.data && strstr(b.data, "HTTPS port")) {
            cJSON_Delete(doc);
            doc = NULL;
            fail("GET %s: the daemon serves HTTPS on %s:%d: use --url https://%s:%d "
                 "(with --cacert, and --cert/--key when it requires client certificates)",
                 path, c->host, c->port, c->host, c->port);
        } else if (!doc) {
            fail("GET %s: the answer is not JSON (HTTP %d)", path, code);
        }
    }
    if (code_out)
        *code_out = code;
    rt_buf_free(&b);
    return doc;
}

/* predictctl ready: GET /v2/health/ready; 0 when it answers 200, else 1
 * (a container's HEALTHCHECK: the image holds no curl). */
static int show_ready(const ctl *c)
{
    rt_buf b;
    rt_buf_init(&b);
    rt_err err = {{0}};
    int code = 0, r = 1;
    if (srv_client_request_opts(&c->cli, c->host, c->port, "GET", "/v2/health/ready", NULL,
                                c->timeout_s * 1000, &code, &b, &err) != RT_OK)
        fail("%s (is predictd running? see --url)", err.msg);
    else if (code != 200)
        fprintf(stderr, "predictctl: not ready (GET /v2/health/ready: HTTP %d)\n", code);
    else {
        puts("ready");
        r = 0;
    }
    rt_buf_free(&b);
    return r;
}

static void print_json(const cJSON *doc)
{
    char *s = cJSON_Print(doc);
    if (s)
        puts(s);
    cJSON_free(s);
}

/* The daemon's config generation and last outcome; -1 on failure. */
static long long config_state(const ctl *c, char *outcome, size_t olen, char *error, size_t elen)
{
    cJSON *doc = get_json(c, "/v1/models", NULL);
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(doc, "config");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(cfg, "generation");
    long long gen = cJSON_IsNumber(g) ? (long long)g->valuedouble : -1;
    const char *o = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "last_reload"));
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "last_error"));
    snprintf(outcome, olen, "%s", o ? o : "");
    snprintf(error, elen, "%s", e ? e : "");
    cJSON_Delete(doc);
    return gen;
}

/* 0 when the daemon reloads c->config; else 1 with a message: a daemon
 * started with flags only (--model_name/--model_base_path) has no config
 * file and would never answer an edit, one started with another file would
 * not see this one. */
static int check_daemon_file(const ctl *c)
{
    cJSON *doc = get_json(c, "/v1/models", NULL);
    if (!doc)
        return 1;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "config"), "model_config_file");
    int r = 0;
    if (cJSON_IsNull(f)) {
        r = fail("predictd at %s:%d was started without --model_config_file (flags only): it "
                 "has no config file to reload, so an edit of %s would never take effect; "
                 "nothing changed. Start it with --model_config_file=%s",
                 c->host, c->port, c->config, c->config);
    } else if (cJSON_IsString(f) && f->valuestring[0] == '/') {
        char *mine = realpath(c->config, NULL), *theirs = realpath(f->valuestring, NULL);
        if (mine && theirs && strcmp(mine, theirs) != 0)
            r = fail("predictd at %s:%d reloads %s, not %s; nothing changed (see --config, "
                     "--url)", c->host, c->port, theirs, mine);
        free(mine);
        free(theirs);
    }
    cJSON_Delete(doc);
    return r;
}

/* Writes the edited config, waits for the daemon's verdict, restores the
 * old file if it refused. */
static int apply_text(ctl *c, const char *text)
{
    srv_config *parsed = NULL;
    rt_err err = {{0}};
    if (srv_config_parse(text, strlen(text), NULL, &parsed, &err) != RT_OK)
        return fail("the edited config would be invalid: %s (nothing changed)", err.msg);
    srv_config_free(parsed);
    char outcome[32], error[RT_ERR_MAX];
    long long g0 = config_state(c, outcome, sizeof outcome, error, sizeof error);
    if (g0 < 0)
        return 1;
    rt_err werr = {{0}};
    if (rt_file_write_tag(c->config, TEMP_TAG, text, strlen(text), &werr) != RT_OK)
        return fail("%s: cannot write: %s", c->config, werr.msg);
    long long g = g0;
    for (int i = 0; i < c->timeout_s * 10 && g <= g0; i++) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
        g = config_state(c, outcome, sizeof outcome, error, sizeof error);
        if (g < 0)
            break;
    }
    if (g > g0 && !strcmp(outcome, "ok"))
        return 0;
    int w = rt_file_write_tag(c->config, TEMP_TAG, c->orig, c->orig_len, &werr);
    if (g > g0)
        return fail("predictd refused the change: %s\n%s %s", error, c->config,
                    w == 0 ? "restored" : "could NOT be restored");
    return fail("predictd did not reload %s within %d s; %s", c->config, c->timeout_s,
                w == 0 ? "file restored" : "file could NOT be restored");
}

/*
 * The config being edited: JSON (a cJSON tree, printed back in the file's
 * own indentation) or TF Serving's text format (the text itself, edited
 * token by token by srv_tfconf_set_label so comments and layout stay).
 */
typedef struct edit_doc {
    const char *model;   /* the model being edited */
    cJSON *root, *jm;    /* JSON: the tree and the model's object */
    char *text;          /* text format: the current text */
    size_t len;
} edit_doc;

/* The config's model called name (an item of "models"), or NULL. */
static cJSON *find_model(cJSON *root, const char *name)
{
    cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(root, "models"))
    {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
        if (n && !strcmp(n, name))
            return m;
    }
    return NULL;
}

static cJSON *labels_of(cJSON *model)
{
    cJSON *l = cJSON_GetObjectItemCaseSensitive(model, "version_labels");
    if (!cJSON_IsObject(l)) {
        cJSON_DeleteItemFromObjectCaseSensitive(model, "version_labels");
        l = cJSON_AddObjectToObject(model, "version_labels");
    }
    return l;
}

static void set_item(cJSON *obj, const char *key, cJSON *n)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, n);
    else
        cJSON_AddItemToObject(obj, key, n);
}

/* A label's version in the config, or -1. */
static int64_t doc_label(const edit_doc *d, const char *label)
{
    if (d->text) {
        int64_t v = -1;
        rt_err err = {{0}};
        return srv_tfconf_label(d->text, d->len, d->model, label, &v, &err) == RT_OK ? v : -1;
    }
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(d->jm, "version_labels"), label);
    if (cJSON_IsNumber(l))
        return (int64_t)l->valuedouble;
    const char *s = cJSON_GetStringValue(l);
    return s ? srv_parse_version(s, strlen(s)) : -1;
}

/* Points label at v (v < 0: removes it). 0, or 1 with a message. */
static int doc_set_label(edit_doc *d, const char *label, int64_t v)
{
    if (!d->text) {
        if (v < 0)
            cJSON_DeleteItemFromObjectCaseSensitive(labels_of(d->jm), label);
        else
            set_item(labels_of(d->jm), label, cJSON_CreateNumber((double)v));
        return 0;
    }
    char *out = NULL;
    size_t n = 0;
    rt_err err = {{0}};
    if (srv_tfconf_set_label(d->text, d->len, d->model, label, v, &out, &n, &err) != RT_OK)
        return fail("%s", err.msg);
    free(d->text);
    d->text = out;
    d->len = n;
    return 0;
}

/* default_version: JSON only (TF Serving's ModelConfig has none). */
static int doc_set_default(edit_doc *d, cJSON *value, bool required)
{
    if (!d->text) {
        set_item(d->jm, "default_version", value);
        return 0;
    }
    cJSON_Delete(value);
    return required ? fail("the text-format config (TF Serving's ModelConfig) has no default "
                           "version: without one the newest AVAILABLE version answers; "
                           "clients name a label (/labels/stable) or use a JSON config")
                    : 0;
}

/* The indentation unit of a JSON text: the first indented line's leading
 * blanks (a tab, or N spaces); two spaces when nothing is indented. */
static void json_indent_unit(const char *t, char *unit, size_t cap)
{
    snprintf(unit, cap, "  ");
    for (const char *p = strchr(t, '\n'); p; p = strchr(p + 1, '\n')) {
        size_t n = p[1] == '\t' ? strspn(p + 1, "\t") : strspn(p + 1, " ");
        if (n > 0 && n < cap && p[1 + n] != '\n' && p[1 + n] != '\0') {
            memcpy(unit, p + 1, n);
            unit[n] = '\0';
            return;
        }
    }
}

/* Prints j at depth d into b: one member or element per line, indented
 * by unit, "key": value, empty containers as {} and []. */
static int json_pretty(rt_buf *b, const cJSON *j, const char *unit, int d)
{
    bool obj = cJSON_IsObject(j);
    if ((!obj && !cJSON_IsArray(j)) || !j->child) {
        char *s = cJSON_PrintUnformatted(j);
        int r = s ? rt_buf_puts(b, s) : -1;
        cJSON_free(s);
        return r;
    }
    int r = rt_buf_puts(b, obj ? "{\n" : "[\n");
    for (const cJSON *c = j->child; c && !r; c = c->next) {
        for (int i = 0; i <= d; i++)
            r |= rt_buf_puts(b, unit);
        if (obj) {
            r |= rt_buf_json_string(b, c->string, strlen(c->string));
            r |= rt_buf_puts(b, ": ");
        }
        r |= json_pretty(b, c, unit, d + 1);
        r |= rt_buf_puts(b, c->next ? ",\n" : "\n");
    }
    for (int i = 0; i < d; i++)
        r |= rt_buf_puts(b, unit);
    return r | rt_buf_puts(b, obj ? "}" : "]");
}

/* root printed in the layout of the file's text orig (its indentation
 * unit, one member per line). Malloc'd, or NULL. */
static char *json_print_like(const cJSON *root, const char *orig)
{
    char unit[16];
    json_indent_unit(orig, unit, sizeof unit);
    rt_buf b;
    rt_buf_init(&b);
    if (json_pretty(&b, root, unit, 0) || rt_buf_puts(&b, "\n")) {
        rt_buf_free(&b);
        return NULL;
    }
    char *out = malloc(b.len + 1);
    if (out) {
        memcpy(out, b.data, b.len);
        out[b.len] = '\0';
    }
    rt_buf_free(&b);
    return out;
}

/* The daemon must hold VERSION of MODEL AVAILABLE. */
/* 0 when the daemon holds VERSION of MODEL AVAILABLE; else 1, with a message
 * unless quiet. */
static int check_available(const ctl *c, const char *model, int64_t v, bool quiet)
{
    char path[512];
    snprintf(path, sizeof path, "/v1/models/%s/versions/%lld", model, (long long)v);
    int code = 0;
    cJSON *doc = get_json(c, path, &code);
    const cJSON *st = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(doc, "model_version_status"), 0);
    const char *state = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "state"));
    int r = 0;
    if (!doc)
        r = 1;
    else if ((code != 200 || !state || strcmp(state, "AVAILABLE") != 0) && quiet)
        r = 1;
    else if (code != 200 || !state || strcmp(state, "AVAILABLE") != 0)
        r = fail("version %lld of model %s is not AVAILABLE on predictd (%s); nothing changed",
                 (long long)v, model,
                 state ? state
                       : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "error"))
                             ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "error"))
                             : "unknown");
    cJSON_Delete(doc);
    return r;
}

/* Points the label previous at old, if the daemon still holds it; a label
 * may only point at an AVAILABLE version, so when old is gone (its
 * directory removed) previous is dropped: promote and rollback still work. */
static int keep_previous(const ctl *c, edit_doc *d, int64_t old)
{
    if (check_available(c, d->model, old, true) == 0)
        return doc_set_label(d, "previous", old);
    fprintf(stderr, "predictctl: note: version %lld is not AVAILABLE on predictd any more; "
                    "the label 'previous' is removed\n", (long long)old);
    return doc_set_label(d, "previous", -1);
}

static int64_t parse_version_arg(const char *s)
{
    return srv_parse_version(s, strlen(s));
}

/* The version the daemon answers MODEL's default route with, or -1. */
static int64_t daemon_default(const ctl *c, const char *model)
{
    cJSON *doc = get_json(c, "/v1/models", NULL);
    int64_t v = -1;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "models"))
    {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
        const char *dv =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "default_version"));
        if (n && dv && !strcmp(n, model))
            v = srv_parse_version(dv, strlen(dv));
    }
    cJSON_Delete(doc);
    return v;
}

/* predictctl canary MODEL VERSION PERCENT: labels VERSION canary and sets
 * traffic_split {"stable": 100-PERCENT, "canary": PERCENT}. Without a
 * stable label, the version the daemon answers by default becomes stable. */
/* VERSION and PERCENT arguments: 0, or 1 with a message. */
static int version_and_percent(const ctl *c, const char *name, const char *ver,
                               const char *pct_text, int64_t *v, long *pct)
{
    char *end = NULL;
    *v = parse_version_arg(ver);
    *pct = strtol(pct_text, &end, 10);
    if (*v < 0)
        return fail("'%s' is not a version number", ver);
    if (!end || *end || end == pct_text || *pct < 0 || *pct > 100)
        return fail("'%s' is not a percentage (an integer from 0 to 100)", pct_text);
    return check_available(c, name, *v, false);
}

/* predictctl shadow MODEL VERSION PERCENT | shadow MODEL off */
static int set_shadow(const ctl *c, cJSON *model, int argc, char **argv)
{
    cJSON_DeleteItemFromObjectCaseSensitive(model, "shadow");
    if (argc == 3 && !strcmp(argv[2], "off"))
        return 0;
    int64_t v;
    long pct;
    if (argc != 4 || version_and_percent(c, argv[1], argv[2], argv[3], &v, &pct))
        return argc != 4 ? fail("usage: shadow MODEL VERSION PERCENT | shadow MODEL off") : 1;
    cJSON *sh = cJSON_AddObjectToObject(model, "shadow");
    cJSON_AddNumberToObject(sh, "version", (double)v);
    cJSON_AddNumberToObject(sh, "percent", (double)pct);
    return 0;
}

static int set_canary(const ctl *c, edit_doc *d, const char *ver, const char *pct_text)
{
    const char *name = d->model;
    int64_t v;
    long pct;
    if (!d->jm)
        return fail("canary needs a JSON config: TF Serving's text format (ModelConfig) has "
                    "no traffic split (nothing changed)");
    if (version_and_percent(c, name, ver, pct_text, &v, &pct))
        return 1;
    int64_t stable = doc_label(d, "stable");
    bool stable_new = stable < 0;
    if (stable_new)
        stable = daemon_default(c, name);
    if (stable == v)
        return fail("version %lld is model %s's stable version%s: a canary onto it would send "
                    "every request to version %lld; name another version, or promote "
                    "another version first (nothing changed)",
                    (long long)v, name,
                    stable_new ? " (it has no 'stable' label: the version answering by "
                                 "default)"
                               : "",
                    (long long)v);
    if (stable_new) {
        int64_t cur = stable;
        if (cur < 0)
            return fail("model %s has no 'stable' label and no default version answering; "
                        "run predictctl promote %s VERSION first (nothing changed)",
                        name, name);
        doc_set_label(d, "stable", cur);
        fprintf(stderr, "predictctl: note: model %s had no 'stable' label; it now points at "
                        "version %lld, the version answering by default\n",
                name, (long long)cur);
    }
    doc_set_label(d, "canary", v);
    cJSON *split = cJSON_CreateObject();
    cJSON_AddNumberToObject(split, "stable", (double)(100 - pct));
    cJSON_AddNumberToObject(split, "canary", (double)pct);
    set_item(d->jm, "traffic_split", split);
    return 0;
}

static int edit(ctl *c, int argc, char **argv)
{
    const char *cmd = argv[0];
    edit_doc d = {.model = argc > 1 ? argv[1] : ""};
    rt_err err = {{0}};
    int r = 1;
    if (srv_tfconf_is_text(c->orig, c->orig_len)) {
        if (!(d.text = malloc(c->orig_len + 1)))
            return fail("out of memory");
        memcpy(d.text, c->orig, c->orig_len);
        d.text[c->orig_len] = '\0';
        d.len = c->orig_len;
    } else if (rt_cfg_parse_json(c->orig, c->orig_len, &d.root, &err) != RT_OK) {
        return fail("%s: %s", c->config, err.msg);
    }
    if (check_daemon_file(c))
        goto out;
    if (strcmp(cmd, "reload") != 0) {
        if (argc < 2) {
            usage(stderr);
            r = 2;
            goto out;
        }
        int64_t probe = 0;
        if (d.text ? srv_tfconf_label(d.text, d.len, d.model, "", &probe, &err) != RT_OK
                   : !(d.jm = find_model(d.root, d.model))) {
            r = d.text && !strstr(err.msg, "is not in the config")
                    ? fail("%s: %s", c->config, err.msg)
                    : fail("model %s is not in %s", d.model, c->config);
            goto out;
        }
    }
    if (!strcmp(cmd, "label") && argc == 4) {
        int64_t v = parse_version_arg(argv[3]);
        if (v < 0) {
            r = fail("'%s' is not a version number", argv[3]);
            goto out;
        }
        if (check_available(c, d.model, v, false) || doc_set_label(&d, argv[2], v))
            goto out;
    } else if (!strcmp(cmd, "default") && argc == 3) {
        int64_t v = parse_version_arg(argv[2]);
        if (v >= 0 && check_available(c, d.model, v, false))
            goto out;
        if (doc_set_default(&d, v >= 0 ? cJSON_CreateNumber((double)v)
                                       : cJSON_CreateString(argv[2]),
                            true))
            goto out;
    } else if (!strcmp(cmd, "promote") && argc == 3) {
        int64_t v = parse_version_arg(argv[2]);
        if (v < 0) {
            r = fail("'%s' is not a version number", argv[2]);
            goto out;
        }
        if (check_available(c, d.model, v, false))
            goto out;
        int64_t old = doc_label(&d, "stable");
        if ((old >= 0 && old != v && keep_previous(c, &d, old)) ||
            doc_set_label(&d, "stable", v) ||
            doc_set_default(&d, cJSON_CreateString("stable"), false))
            goto out;
        if (d.jm) /* a promotion ends a canary */
            cJSON_DeleteItemFromObjectCaseSensitive(d.jm, "traffic_split");
    } else if (!strcmp(cmd, "canary") && argc == 4) {
        if (set_canary(c, &d, argv[2], argv[3]))
            goto out;
    } else if (!strcmp(cmd, "shadow")) {
        if (!d.jm) {
            r = fail("shadow needs a JSON config: TF Serving's text format (ModelConfig) has "
                     "no shadow traffic (nothing changed)");
            goto out;
        }
        if (set_shadow(c, d.jm, argc, argv))
            goto out;
    } else if (!strcmp(cmd, "rollback") && argc == 2 && d.jm &&
               cJSON_GetObjectItemCaseSensitive(d.jm, "traffic_split")) {
        /* a canary is running: end it, every request back on the default */
        cJSON_DeleteItemFromObjectCaseSensitive(d.jm, "traffic_split");
    } else if (!strcmp(cmd, "rollback") && argc == 2) {
        int64_t prev = doc_label(&d, "previous");
        int64_t cur = doc_label(&d, "stable");
        if (prev < 0) {
            r = fail("model %s has no 'previous' label to roll back to", d.model);
            goto out;
        }
        if (check_available(c, d.model, prev, false) || doc_set_label(&d, "stable", prev) ||
            (cur >= 0 && keep_previous(c, &d, cur)) ||
            doc_set_default(&d, cJSON_CreateString("stable"), false))
            goto out;
    } else if (!strcmp(cmd, "reload") && argc == 1) {
        /* rewrite as is */
    } else {
        usage(stderr);
        r = 2;
        goto out;
    }
    char *text = NULL;
    if (strcmp(cmd, "reload") != 0)
        text = d.text ? d.text : json_print_like(d.root, c->orig);
    r = apply_text(c, text ? text : c->orig);
    if (r == 0)
        printf("ok: predictd reloaded %s\n", c->config);
    if (text != d.text)
        free(text);
out:
    free(d.text);
    cJSON_Delete(d.root);
    return r;
}

/* predictctl wait MODEL VERSION STATE: asks GET /v1/models/M/versions/V
 * every 100 ms, at most timeout_s * 10 times, until the version is in
 * STATE. A version that ended (END) with an error while another state was
 * wanted fails at once with that error; a daemon not answering yet is
 * asked again (it may be starting). */
static int wait_state(const ctl *c, const char *model, const char *ver, const char *want,
                      int timeout_s)
{
    static const char *const STATES[] = {"START", "LOADING", "AVAILABLE", "UNLOADING", "END"};
    bool known = false;
    for (size_t k = 0; k < sizeof STATES / sizeof STATES[0]; k++)
        known |= !strcmp(want, STATES[k]);
    int64_t v = parse_version_arg(ver);
    if (v < 0)
        return fail("'%s' is not a version number", ver);
    if (!known)
        return fail("'%s' is not a version state (START, LOADING, AVAILABLE, UNLOADING, END)",
                    want);
    char path[512], last[64] = "not answering", why[600] = "";
    snprintf(path, sizeof path, "/v1/models/%s/versions/%lld", model, (long long)v);
    long tries = (long)timeout_s * 10;
    for (long t = 0; t < tries; t++) {
        rt_buf b;
        rt_buf_init(&b);
        rt_err err = {{0}};
        int code = 0;
        cJSON *doc = NULL;
        if (srv_client_request_opts(&c->cli, c->host, c->port, "GET", path, NULL, 10000, &code,
                                    &b, &err) == RT_OK)
            doc = cJSON_ParseWithLength(b.data ? b.data : "", b.len);
        else
            snprintf(why, sizeof why, "%s", err.msg);
        rt_buf_free(&b);
        const cJSON *st = cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(doc, "model_version_status"), 0);
        const char *state = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "state"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(st, "status"), "error_message"));
        const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "error"));
        if (state)
            snprintf(last, sizeof last, "%s", state);
        else if (doc)
            snprintf(last, sizeof last, "not known (HTTP %d)", code);
        if (state && !strcmp(state, want)) {
            cJSON_Delete(doc);
            printf("ok: version %lld of model %s is %s\n", (long long)v, model, want);
            return 0;
        }
        if (state && !strcmp(state, "END") && msg && *msg) {
            int r = fail("version %lld of model %s ended (END): %s", (long long)v, model, msg);
            cJSON_Delete(doc);
            return r;
        }
        if (e)
            snprintf(why, sizeof why, "%s", e);
        cJSON_Delete(doc);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return fail("version %lld of model %s is %s, not %s, after %d s (--timeout)%s%s",
                (long long)v, model, last, want, timeout_s, why[0] ? ": " : "", why);
}

static int show_models(const ctl *c)
{
    cJSON *doc = get_json(c, "/v1/models", NULL);
    if (!doc)
        return 1;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "models"))
    {
        printf("%s\n  versions:", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name")));
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "versions"))
        printf(" %s(%s)", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "version")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "state")));
        printf("\n  labels:");
        const cJSON *l;
        cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(m, "labels"))
        printf(" %s=%s", l->string, cJSON_GetStringValue(l));
        const char *dv =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "default_version"));
        printf("\n  default: %s\n", dv ? dv : "(none available)");
        const cJSON *arm;
        const cJSON *split = cJSON_GetObjectItemCaseSensitive(m, "traffic_split");
        if (split)
            printf("  traffic split:");
        cJSON_ArrayForEach(arm, split)
        {
            const char *ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(arm, "version"));
            printf(" %s(%s)=%d%%",
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(arm, "target")),
                   ver ? ver : "none",
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(arm, "percent")));
        }
        if (split)
            printf("\n");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(m, "shadow");
        const char *sv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sh, "version"));
        if (sh)
            printf("  shadow: %s(%s) %d%%\n",
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sh, "target")),
                   sv ? sv : "none",
                   (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sh, "percent")));
    }
    cJSON_Delete(doc);
    return 0;
}

/* A table of up to 256 rows of 5 cells (owned strings). */
typedef struct table {
    char *cell[256][5];
    size_t rows;
} table;

/* Adds a row; NULL cells are "". */
static void table_add(table *t, const char *a, const char *b, const char *c, const char *d,
                      const char *e)
{
    if (t->rows >= sizeof t->cell / sizeof t->cell[0])
        return;
    const char *v[5] = {a, b, c, d, e};
    for (int k = 0; k < 5; k++)
        t->cell[t->rows][k] = strdup(v[k] ? v[k] : "");
    t->rows++;
}

/* Prints the rows in aligned columns (the last one unpadded) and frees them. */
static void table_print(table *t)
{
    size_t w[5] = {0};
    for (size_t r = 0; r < t->rows; r++)
        for (int k = 0; k < 5; k++)
            if (t->cell[r][k] && strlen(t->cell[r][k]) > w[k])
                w[k] = strlen(t->cell[r][k]);
    for (size_t r = 0; r < t->rows; r++) {
        for (int k = 0; k < 4; k++)
            printf("%-*s  ", (int)w[k], t->cell[r][k] ? t->cell[r][k] : "");
        printf("%s\n", t->cell[r][4] ? t->cell[r][4] : "");
        for (int k = 0; k < 5; k++)
            free(t->cell[r][k]);
    }
    t->rows = 0;
}

/* "stable,canary,default": the labels of model m (an item of GET /v1/models)
 * that point at version ver, and "default" when it answers by default. */
static void labels_of_version(const cJSON *m, const char *ver, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(m, "labels"))
    {
        const char *v = cJSON_GetStringValue(l);
        if (v && !strcmp(v, ver) && used < cap)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "," : "", l->string);
    }
    const char *dv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "default_version"));
    if (dv && !strcmp(dv, ver) && used < cap)
        snprintf(out + used, cap - used, "%sdefault", used ? "," : "");
}

/* predictctl status [MODEL]: one line per version (model, version, state,
 * labels, error) from GET /v1/models and each model's status, then the
 * config file's state; --json prints the daemon's answer instead. */
static int show_status(const ctl *c, const char *model)
{
    char path[512];
    int code = 0;
    if (c->json) {
        snprintf(path, sizeof path, "/v1/models%s%s", model ? "/" : "", model ? model : "");
        cJSON *doc = get_json(c, path, &code);
        if (doc)
            print_json(doc);
        cJSON_Delete(doc);
        return doc && code == 200 ? 0 : 1;
    }
    int all_code = 0;
    cJSON *all = get_json(c, "/v1/models", &all_code);
    if (!all)
        return 1;
    if (all_code != 200) { /* the daemon's error (401, 403, ...) as it sent it */
        print_json(all);
        cJSON_Delete(all);
        return 1;
    }
    int r = 0;
    bool found = model == NULL;
    table t;
    t.rows = 0;
    table_add(&t, "MODEL", "VERSION", "STATE", "LABELS", "ERROR");
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(all, "models"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
        if (!name || (model && strcmp(name, model) != 0))
            continue;
        found = true;
        snprintf(path, sizeof path, "/v1/models/%s", name);
        cJSON *st = get_json(c, path, &code);
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(st, "model_version_status"))
        {
            const char *ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "version"));
            const cJSON *status = cJSON_GetObjectItemCaseSensitive(v, "status");
            const char *msg = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(status, "error_message"));
            char labels[256];
            labels_of_version(m, ver ? ver : "", labels, sizeof labels);
            table_add(&t, name, ver,
                      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "state")),
                      labels, msg && *msg ? msg : "-");
        }
        if (!cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "model_version_status")))
            table_add(&t, name, "-", "(no version)", "", "-");
        cJSON_Delete(st);
    }
    if (!found) {
        r = fail("model %s is not served by predictd at %s:%d", model, c->host, c->port);
    } else {
        table_print(&t);
        if (!model) {
            const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(all, "config");
            const char *f =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "model_config_file"));
            const char *lr =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "last_reload"));
            const char *le =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "last_error"));
            if (f)
                printf("config file: %s (generation %d, last reload: %s%s%s)\n", f,
                       (int)cJSON_GetNumberValue(
                           cJSON_GetObjectItemCaseSensitive(cfg, "generation")),
                       lr ? lr : "?", le && *le ? ": " : "", le && *le ? le : "");
            else
                printf("config file: none (started with flags only)\n");
        }
    }
    for (size_t row = 0; row < t.rows; row++) /* not printed: freed */
        for (int k = 0; k < 5; k++)
            free(t.cell[row][k]);
    cJSON_Delete(all);
    return r;
}

/* Without --config and without the default file: the file the daemon
 * reloads becomes the one to edit; a daemon started with flags only has
 * none, and is told so (rather than failing on a lock beside a file that is
 * not there). 0, or 1 with a message. */
static int adopt_daemon_file(ctl *c, const char *default_config)
{
    cJSON *doc = get_json(c, "/v1/models", NULL);
    if (!doc)
        return fail("no config file to edit: %s does not exist, and no predictd answered at "
                    "%s:%d to say which file it reloads; give --config FILE (the daemon's "
                    "--model_config_file) and --url", default_config, c->host, c->port);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "config"), "model_config_file");
    int r = 0;
    if (cJSON_IsString(f) && f->valuestring[0]) {
        if (!(c->config_owned = strdup(f->valuestring)))
            r = fail("out of memory");
        c->config = c->config_owned;
    } else {
        r = fail("predictd at %s:%d was started without --model_config_file (flags only): it has "
                 "no config file to edit, so labels, default versions, promotions, canaries "
                 "and shadows cannot be changed; nothing changed. Start it with "
                 "--model_config_file=FILE (conf/predictd.json shows one), then run predictctl "
                 "--config FILE",
                 c->host, c->port);
    }
    cJSON_Delete(doc);
    return r;
}

/* Fills host/port from --url or from the config file. */
static int resolve_url(ctl *c, const char *url)
{
    if (url) {
        c->cli.tls = !strncmp(url, "https://", 8);
        const char *p = c->cli.tls ? url + 8 : strncmp(url, "http://", 7) ? url : url + 7;
        const char *colon = strrchr(p, ':');
        size_t hl = colon ? (size_t)(colon - p) : strcspn(p, "/");
        if (hl == 0 || hl >= sizeof c->host)
            return fail("--url %s: expected http[s]://HOST:PORT", url);
        memcpy(c->host, p, hl);
        c->host[hl] = '\0';
        if (c->host[0] == '[' && c->host[hl - 1] == ']') {
            memmove(c->host, c->host + 1, hl - 2);
            c->host[hl - 2] = '\0';
        }
        c->port = c->cli.tls ? 443 : 80;
        if (colon) {
            char *end = NULL;
            long port = strtol(colon + 1, &end, 10);
            if (!end || (*end != '\0' && *end != '/') || port < 1 || port > 65535)
                return fail("--url %s: bad port", url);
            c->port = (int)port;
        }
        return 0;
    }
    srv_config *cfg = NULL;
    rt_err err = {{0}};
    if (srv_config_parse(c->orig, c->orig_len, NULL, &cfg, &err) != RT_OK)
        return fail("%s: %s", c->config, err.msg);
    const char *h = cfg->rest_api_host;
    snprintf(c->host, sizeof c->host, "%s",
             !strcmp(h, "0.0.0.0") ? "127.0.0.1" : !strcmp(h, "::") ? "::1" : h);
    c->port = cfg->rest_api_port;
    c->cli.tls = cfg->tls_cert_file != NULL;
    srv_config_free(cfg);
    return c->port > 0 ? 0 : fail("%s: rest_api_port is 0; give --url", c->config);
}

/* predictctl token add --scopes S [--tokens-file FILE] [--name NAME]: the
 * file is the flag's, else the config file's auth_tokens_file (read with the
 * daemon's own config parser). Its flags are a settings table, as
 * predictctl's own are (srv_ctl_flags.c). */
typedef struct token_flags {
    char *scopes, *tokens_file, *name;
} token_flags;

#define TF(f) offsetof(token_flags, f)
static const rt_setting TOKEN_FLAGS[] = {
    {.name = "scopes", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = TF(scopes), .arg = "S", .help = "infer, read, metrics, admin (a comma list)"},
    {.name = "tokens-file", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = TF(tokens_file), .arg = "FILE",
     .help = "the tokens file (default: the config file's auth_tokens_file)"},
    {.name = "name", .type = RT_SET_STR, .where = RT_SET_FLAG | RT_SET_NODEFAULT,
     .offset = TF(name), .arg = "NAME", .help = "a name kept beside the token's hash"},
};
#define N_TOKEN_FLAGS (sizeof TOKEN_FLAGS / sizeof TOKEN_FLAGS[0])

/* The tokens file the config at path names (auth_tokens_file), malloc'd,
 * or NULL after saying why. */
static char *config_tokens_file(const char *path)
{
    char *text = NULL, *file = NULL;
    srv_config *cfg = NULL;
    rt_err e;
    if (rt_file_read(AT_FDCWD, path, 16u << 20, 0, &text, NULL, &e) != RT_OK)
        fail("%s (give --tokens-file or --config)", e.msg);
    else if (srv_config_parse(text, strlen(text), NULL, &cfg, &e) != RT_OK)
        fail("%s: %s", path, e.msg);
    else if (!cfg->auth_tokens_file)
        fail("%s: no auth_tokens_file key (give --tokens-file)", path);
    else if (!(file = strdup(cfg->auth_tokens_file)))
        fail("out of memory");
    srv_config_free(cfg);
    free(text);
    return file;
}

static int token_cmd(const ctl *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "add") != 0) {
        fprintf(stderr, "predictctl: token: expected 'token add --scopes ...'\n");
        usage(stderr);
        return 2;
    }
    token_flags tf;
    memset(&tf, 0, sizeof tf);
    rt_argv spec = {.rows = TOKEN_FLAGS, .n = N_TOKEN_FLAGS, .noun = "option", .once = true};
    rt_err err = {{0}};
    int next = argc - 1, r = 2;
    char *file = NULL;
    /* argv + 1: "add" stands where rt_settings_argv expects a program name */
    if (rt_settings_argv(&spec, argc - 1, argv + 1, &tf, NULL, &next, &err) != RT_OK) {
        fprintf(stderr, "predictctl: token add: %s\n", err.msg);
        usage(stderr);
        goto out;
    }
    if (next < argc - 1) {
        fprintf(stderr, "predictctl: token add: unexpected argument \"%s\"\n", argv[next + 1]);
        usage(stderr);
        goto out;
    }
    unsigned bits = tf.scopes ? srv_auth_parse_scopes(tf.scopes, strlen(tf.scopes)) : 0;
    if (!bits) {
        fprintf(stderr, "predictctl: token add: --scopes '%s': expected a comma list of infer, "
                        "read, metrics\n", tf.scopes ? tf.scopes : "");
        goto out;
    }
    if (!(file = tf.tokens_file ? strdup(tf.tokens_file) : config_tokens_file(c->config))) {
        r = 1;
        goto out;
    }
    char token[69];
    if (srv_auth_add_token(file, bits, tf.name, token, &err) != RT_OK) {
        r = fail("%s", err.msg);
        goto out;
    }
    printf("%s\n", token);
    fprintf(stderr, "predictctl: token added to %s (only its SHA-256 is stored; this is the "
                    "one time it is shown); the daemon takes it at its next reload\n", file);
    r = 0;
out:
    free(file);
    rt_settings_free(TOKEN_FLAGS, N_TOKEN_FLAGS, &tf);
    return r;
}

/* The command after the flags (argv[i]) with the flags fl; the exit status. */
static int run_command(const srv_ctl_flags *fl, uint64_t given, int argc, char **argv, int i)
{
    ctl c;
    memset(&c, 0, sizeof c);
    c.config = fl->config;
    c.timeout_s = fl->timeout;
    c.json = fl->json;
    if (fl->cacert)
        c.cli.ca_file = fl->cacert;
    if (!fl->cert != !fl->key) {
        fprintf(stderr, "predictctl: %s needs %s too (a client certificate and its key)\n",
                fl->cert ? "--cert" : "--key", fl->cert ? "--key" : "--cert");
        return 2;
    }
    c.cli.cert_file = fl->cert;
    c.cli.key_file = fl->key;
    if (fl->token_file) {
        if (read_token(fl->token_file, c.token, sizeof c.token) != 0)
            return 1;
        c.cli.token = c.token;
    }
    if (fl->grpc)
        return srv_ctl_grpc(fl, c.cli.token, argc - i, argv + i);
    const char *url = fl->url;
    bool config_given = given & 1; /* flags[0]: --config */
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    int r;
    const char *cmd = argv[i];
    if (!strcmp(cmd, "token"))
        return token_cmd(&c, argc - i, argv + i);
    bool read_only = !strcmp(cmd, "status") || !strcmp(cmd, "models") || !strcmp(cmd, "ready") ||
                     !strcmp(cmd, "wait");
    if (!read_only && strcmp(cmd, "label") && strcmp(cmd, "default") && strcmp(cmd, "promote") &&
        strcmp(cmd, "rollback") && strcmp(cmd, "reload") && strcmp(cmd, "canary") &&
        strcmp(cmd, "shadow")) {
        fprintf(stderr, "predictctl: %s: unknown command\n", cmd);
        usage(stderr);
        return 2;
    }
    /* status MODEL --json: the flag after the command too */
    int nargs = argc - i;
    if (!strcmp(cmd, "status") && nargs > 1 && !strcmp(argv[argc - 1], "--json")) {
        c.json = true;
        nargs--;
    }
    /* wait MODEL VERSION STATE --timeout S: the flag after the command too */
    if (!strcmp(cmd, "wait") && nargs == 6 && !strcmp(argv[argc - 2], "--timeout")) {
        char *end = NULL;
        long t = strtol(argv[argc - 1], &end, 10);
        if (!end || *end || t < 1 || t > 3600) {
            fprintf(stderr, "predictctl: --timeout '%s': seconds from 1 to 3600\n",
                    argv[argc - 1]);
            return 2;
        }
        c.timeout_s = (int)t;
        nargs -= 2;
    }
    if (!strcmp(cmd, "wait") && nargs != 4) {
        fprintf(stderr, "predictctl: usage: wait MODEL VERSION STATE [--timeout S]\n");
        return 2;
    }
    if (!strcmp(cmd, "status") && nargs > 2) {
        fprintf(stderr, "predictctl: status takes at most one MODEL\n");
        usage(stderr);
        return 2;
    }
    /* No --config and no default file: find the daemon at --url or TF
     * Serving's default REST port, and edit the file it reloads, if any. */
    int lock_fd = -1;
    const char *default_config = c.config;
    if (!config_given && access(c.config, F_OK) != 0 && errno == ENOENT) {
        if (!url)
            url = "http://127.0.0.1:8501";
        if (!read_only && ((r = resolve_url(&c, url)) != 0 ||
                           (r = adopt_daemon_file(&c, default_config)) != 0))
            goto out;
    }
    /* An edit holds the lock from reading the file to the daemon's verdict. */
    if (!read_only) {
        if ((lock_fd = lock_config(&c)) < 0)
            return 1;
        remove_stale_temps(&c);
    }
    /* status and models need the file only to find the daemon. */
    rt_err rerr;
    if (rt_file_read(AT_FDCWD, c.config, 16u << 20, 0, &c.orig, &c.orig_len, &rerr) != RT_OK &&
        !(read_only && url)) {
        r = fail("%s (see --config)", rerr.msg);
        goto out;
    }
    if ((r = resolve_url(&c, url)) != 0)
        goto out;
    if (!strcmp(cmd, "status")) {
        r = show_status(&c, nargs > 1 ? argv[i + 1] : NULL);
    } else if (!strcmp(cmd, "models")) {
        r = show_models(&c);
    } else if (!strcmp(cmd, "ready")) {
        r = show_ready(&c);
    } else if (!strcmp(cmd, "wait")) {
        r = wait_state(&c, argv[i + 1], argv[i + 2], argv[i + 3], c.timeout_s);
    } else {
        r = edit(&c, argc - i, argv + i);
    }
out:
    free(c.orig);
    free(c.config_owned);
    if (lock_fd >= 0)
        close(lock_fd); /* releases the lock */
    return r;
}

int main(int argc, char **argv)
{
    srv_ctl_flags fl;
    size_t n_flags;
    const rt_setting *flags = srv_ctl_flag_settings(&n_flags);
    memset(&fl, 0, sizeof fl);
    rt_err ferr;
    bool help = false;
    uint64_t given = 0;
    int i = argc, r;
    rt_argv spec = {.rows = flags, .n = n_flags, .noun = "option", .extra = rt_argv_help_names,
                    .other = rt_settings_argv_help, .ctx = &help};
    /* a daemon that closes a TLS connection (a refused client certificate)
     * while the request is sent: an error to report, not SIGPIPE (GnuTLS
     * sends without MSG_NOSIGNAL) */
    signal(SIGPIPE, SIG_IGN);
    if (rt_settings_defaults(flags, n_flags, &fl, &ferr) != RT_OK) {
        fprintf(stderr, "predictctl: %s\n", ferr.msg);
        r = 1;
    } else if (rt_settings_argv(&spec, argc, argv, &fl, &given, &i, &ferr) != RT_OK) {
        fprintf(stderr, "predictctl: %s\n", ferr.msg);
        usage(stderr);
        r = 2;
    } else if (help) {
        usage(stdout);
        r = 0;
    } else {
        r = run_command(&fl, given, argc, argv, i);
    }
    rt_settings_free(flags, n_flags, &fl);
    return r;
}
