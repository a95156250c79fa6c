/*
 * rt.h — the predictd runtime: the one public header of runtime/.
 *
 * The runtime turns an export directory into predictions. It reads and
 * validates exports (model.pb + variables.bin, mapped read-only), compiles the
 * feature columns (the serving input function's transforms), runs the linear
 * and DNN parts and the head, and speaks TensorFlow Serving's JSON. It has no
 * HTTP and no training; the trainer, exporter and daemon all link it.
 *
 * Pipeline of one request:
 *   body --rt_json_handle--> rt_batch (raw inputs per instance, via the receiver)
 *        --rt_transform-->   rt_features (ids / values per feature column, dnn input)
 *        --rt_forward-->     logits
 *        --rt_head_compute-> outputs --> JSON answer
 *
 * Conventions (docs/design.md, section 2): every fallible function returns an
 * rt_status (0 ok, negative error) and explains input errors in a caller's
 * rt_err (may be NULL). Objects are opaque with new/free pairs; free functions
 * accept NULL. Nothing here exits or asserts on input.
 *
 * Thread safety: an open rt_model / rt_graph is immutable and may be shared by
 * any number of threads. An rt_ctx (scratch for one request at a time) and an
 * rt_batch belong to one thread at a time.
 */
#ifndef PREDICTD_RT_H
#define PREDICTD_RT_H

#include <signal.h> /* rt_stops */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.pb-c.h" /* generated from runtime/model.proto */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

typedef enum {
    RT_OK = 0,
    RT_ERR_INVALID = -1,     /* bad input from outside: request, spec, config */
    RT_ERR_NOMEM = -2,       /* allocation failed */
    RT_ERR_IO = -3,          /* a system call failed (errno in the message) */
    RT_ERR_NOTFOUND = -4,    /* a named thing does not exist */
    RT_ERR_FORMAT = -5,      /* a file or buffer is malformed */
    RT_ERR_LIMIT = -6,       /* a size, count or depth limit was exceeded */
    RT_ERR_UNSUPPORTED = -7, /* valid but not supported by this build */
    RT_ERR_EXISTS = -8,      /* the target already exists */
} rt_status;

#define RT_ERR_MAX 512

/* A caller-owned error buffer; functions fill msg when they fail. */
typedef struct rt_err {
    char msg[RT_ERR_MAX];
} rt_err;

/* Short name of a status ("ok", "invalid argument", ...). Never NULL. */
const char *rt_status_str(rt_status s);

/* Format a message into err (if not NULL) and return code. printf-style. */
rt_status rt_err_set(rt_err *err, rt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix err->msg with "prefix: " (e.g. a file name). err may be NULL. */
void rt_err_prefix(rt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ----------------------------------------------------------------- cgroups */

/* This process's cgroup v2 path ("/a/b", "/" at the root) from proc_cgroup's
 * "0::" line (normally /proc/self/cgroup) into rel (len bytes): 1, or 0 when
 * there is none (cgroup v1, no /proc). Its directory is "/sys/fs/cgroup"
 * followed by rel. Reentrant. */
int rt_cgroup_path(const char *proc_cgroup, char *rel, size_t len);
/* Makes rel its parent ("/a/b" -> "/a" -> "/"): 1, or 0 when rel is the
 * root. A cgroup and its parents:
 *   if (rt_cgroup_path(proc, rel, sizeof rel)) do { ... } while (rt_cgroup_parent(rel)); */
int rt_cgroup_parent(char *rel);

/* ------------------------------------------------ MPI launcher (rt_launch.c) */

/* 1 when an MPI launcher (mpirun/mpiexec, srun --mpi=pmix, a Kubeflow
 * MPIJob) started this process: its environment names a rank
 * (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK). Binaries initialise MPI only
 * then. Thread-safe (reads the environment). */
int rt_mpi_launched(void);

/* Removes the launchers' variables (OMPI_*, PMIX_*, PMI_*) from the
 * environment, so a program a rank starts is a plain process, not another
 * rank. Changes the environment: call it in a forked child before exec. */
void rt_mpi_forget_launcher(void);

/* ------------------------------------------------------ signals (rt_signal.c) */

/*
 * For a program that blocks sig in its threads and takes it synchronously
 * (sigpending, sigtimedwait): a handler that moves sig, when the kernel
 * delivers it to a library's thread that does not block it (OpenBLAS, Open
 * MPI), back to the process as a pending signal. old (may be NULL) receives
 * the previous action, for sigaction(sig, old, NULL) afterwards.
 */
void rt_signal_hold(int sig, struct sigaction *old);

/* SIGINT and SIGTERM blocked while a program works, taken synchronously
 * (rt_stops_pending / rt_stops_take, or sigtimedwait on mask): what
 * rt_stops_block changed, for rt_stops_restore. */
typedef struct rt_stops {
    sigset_t mask;             /* SIGINT, SIGTERM and also (for sigtimedwait) */
    sigset_t old_mask;         /* the caller's mask before (for a forked child) */
    struct sigaction old_act[2]; /* SIGINT's and SIGTERM's actions before */
    int also;                  /* the extra signal blocked, or 0 */
} rt_stops;
/* Blocks SIGINT, SIGTERM and also (another signal, e.g. SIGCHLD, or 0) in
 * the calling thread (threads it starts inherit the mask), and holds
 * SIGINT/SIGTERM with rt_signal_hold: a stop stays pending until the
 * program looks. Call it before starting threads. */
void rt_stops_block(rt_stops *s, int also);
/* The actions and mask from before rt_stops_block; a pending also signal is
 * discarded first (a pending SIGINT/SIGTERM is not: take it first unless it
 * should act as before). */
void rt_stops_restore(const rt_stops *s);
/* SIGINT or SIGTERM pending for the process or the thread, else 0. */
int rt_stops_pending(void);
/* Takes a pending SIGINT/SIGTERM off the queue without waiting; returns it,
 * or 0. */
int rt_stops_take(void);

/* ---------------------------------------------------- byte buffer and hashes */

/*
 * Grows the array *arrp (a T **, holding *cap elements of elem bytes) so
 * that it holds need elements: unchanged when need <= *cap, else realloc'd
 * to the capacity doubled (from RT_GROW_FIRST) until need fits, or need
 * itself where doubling would overflow. 0 ok (the array may have moved; the
 * new elements are uninitialised); -1 when need * elem overflows size_t or
 * memory runs out, *arrp and *cap unchanged. Usage:
 *   if (rt_grow(&a->items, &a->cap, a->n + 1, sizeof *a->items) != 0) ...
 */
#define RT_GROW_FIRST 16
int rt_grow(void *arrp, size_t *cap, size_t need, size_t elem);

/*
 * A growable byte buffer; always NUL-terminated after any append. Its error
 * sticks (as curl's dynbuf's): once an append or reserve fails (out of
 * memory, size_t overflow), every later one is a no-op returning -1 and
 * rt_buf_failed says so, so a writer may append many pieces unchecked and
 * check once at the end. What was appended before the failure stays.
 */
typedef struct rt_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed; /* an append failed since init / reset: see rt_buf_failed */
} rt_buf;

void rt_buf_init(rt_buf *b);
void rt_buf_free(rt_buf *b);            /* frees data; b may be reused after init */
void rt_buf_reset(rt_buf *b);           /* len = 0, keeps capacity, clears the error */
int rt_buf_reserve(rt_buf *b, size_t extra); /* 0 ok, -1 out of memory (sticks) */
/* -1 when an append or reserve failed since rt_buf_init / rt_buf_reset (the
 * text is incomplete), else 0. */
int rt_buf_failed(const rt_buf *b);
int rt_buf_append(rt_buf *b, const void *p, size_t n);
int rt_buf_puts(rt_buf *b, const char *s);
int rt_buf_printf(rt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends v in decimal ('-' first when negative), without printf. */
int rt_buf_put_int(rt_buf *b, int64_t v);
/* Appends a JSON string literal (quotes and escapes included); each byte
 * that is not part of valid UTF-8 becomes \ufffd, so the text is always
 * valid UTF-8 JSON whatever s holds. */
int rt_buf_json_string(rt_buf *b, const char *s, size_t n);
/* The value of hexadecimal digit c (0-9, a-f, A-F), or -1. Pure. */
int rt_hex_digit(char c);
/* Writes code point cp (at most 0x10FFFF) as UTF-8 into o, which has room
 * for 4 bytes; returns the bytes written. Pure. */
size_t rt_utf8_put(char *o, uint32_t cp);
/* Appends a float as JSON: shortest text that reads back to the same float,
 * always with a fraction or an exponent (42.0, never 42: TF Serving writes
 * floats so, and typed clients rely on it); NaN and infinities as NaN,
 * Infinity, -Infinity (TF Serving's tokens). */
int rt_buf_json_float(rt_buf *b, float v);
int rt_buf_json_double(rt_buf *b, double v);

/* ------------------------------------------------------ files (rt_file.c) */

/* rt_read_file flags. */
#define RT_READ_ANY_FILE 1 /* also pipes and devices (may block until their end) */

/*
 * Reads the whole file at path (relative to directory descriptor dfd, or
 * AT_FDCWD) into *data: malloc'd, NUL-terminated after its *len bytes (len
 * may be NULL); the caller frees it. Opened O_NONBLOCK (a FIFO cannot block
 * the caller) and refused unless a regular file, unless flags has
 * RT_READ_ANY_FILE. Errors name the path: RT_ERR_NOTFOUND / RT_ERR_IO
 * ("PATH: cannot open: No such file or directory"), RT_ERR_FORMAT ("PATH:
 * not a regular file"), RT_ERR_LIMIT (more than max bytes), RT_ERR_NOMEM.
 * max must be below SIZE_MAX. Thread-safe.
 */
rt_status rt_read_file(int dfd, const char *path, size_t max, int flags, char **data,
                       size_t *len, rt_err *err);

/* Writes len bytes of data to path atomically: a temp file beside it
 * (PATH.tmp-PID), fsync, rename(2) over path, fsync of the directory, so a
 * reader or a crash sees the old file or the new one, never half of it. An
 * existing file's mode is kept (else 0644). Errors name the path (the temp
 * file's, for a failed write); on error the temp file is gone. Thread-safe. */
rt_status rt_write_file(const char *path, const void *data, size_t len, rt_err *err);
/* rt_write_file with the temp file named PATH + tag + PID (tag NULL or "":
 * ".tmp-"), for a program that finds its own killed runs' leftovers. */
rt_status rt_write_file_tag(const char *path, const char *tag, const void *data, size_t len,
                            rt_err *err);
/* Writes all len bytes to fd (EINTR and short writes retried). Errors name
 * name: "NAME: write: ...". */
rt_status rt_write_fd(int fd, const void *data, size_t len, const char *name, rt_err *err);
/* rename(2) from over to, then fsync of to's directory, so the rename
 * survives a crash. Errors: "rename FROM to TO: ...", "DIR: fsync: ...". */
rt_status rt_rename_durable(const char *from, const char *to, rt_err *err);
/* fsync of directory dir (a file system that cannot sync directories,
 * EINVAL, is not an error). */
rt_status rt_fsync_dir(const char *dir, rt_err *err);
/* mkdir -p dir (mode 0755, less the umask): each missing component in turn;
 * existing ones are fine. Errors: RT_ERR_INVALID (empty), RT_ERR_IO
 * ("mkdir PATH: ..." naming the component that failed), RT_ERR_NOMEM. */
rt_status rt_mkdirs(const char *dir, rt_err *err);
/* rm -rf name, relative to directory descriptor dfd (or AT_FDCWD): a file,
 * or a directory and all below it (32 levels at most; symbolic links are
 * removed, never followed). A missing name is fine. 0, or -1 with errno. */
int rt_rmtree_at(int dfd, const char *name);

/* Seconds as a double: wall 0, CLOCK_MONOTONIC (for intervals); wall 1,
 * CLOCK_REALTIME (since the epoch). Thread-safe. */
double rt_seconds(int wall);

/* The monotonic clock in whole milliseconds / nanoseconds (deadlines,
 * timeouts, latencies): the same clock as rt_seconds(0). */
int64_t rt_now_ms(void);
int64_t rt_now_ns(void);

/* FarmHash Fingerprint64 (farmhashna::Hash64), as TensorFlow's
 * tf.strings.to_hash_bucket_fast and hashed feature columns use it. */
uint64_t rt_fingerprint64(const void *data, size_t len);
/* TensorFlow's FingerprintCat64: combine two fingerprints (crossed columns). */
uint64_t rt_fingerprint_cat64(uint64_t fp1, uint64_t fp2);
/* MurmurHash3's 64-bit finaliser (fmix64): spreads x's bits over the word
 * (hash-table slots, sampling draws). A bijection; rt_mix64(0) is 0. */
uint64_t rt_mix64(uint64_t x);
/* CRC-32C (Castagnoli) of data, continuing from crc (start with 0). */
uint32_t rt_crc32c(uint32_t crc, const void *data, size_t len);

/* A small deterministic generator (splitmix64): the same seed gives the same
 * stream. Not thread-safe; one per thread. */
typedef struct rt_rng {
    uint64_t s;
} rt_rng;

void rt_rng_seed(rt_rng *r, uint64_t seed);
uint64_t rt_rng_next(rt_rng *r);
double rt_rng_uniform(rt_rng *r);             /* [0, 1) */
double rt_rng_normal(rt_rng *r);              /* standard normal (Box-Muller) */
uint64_t rt_rng_below(rt_rng *r, uint64_t n); /* [0, n), n > 0 */

/* -------------------------------------------------------- spec -> ModelDef */

/*
 * The parts of a trainer spec (docs/trainer.md) that describe the model:
 * "columns", "unused_columns", "label", "feature_columns", "estimator" (model
 * shape only; optimizer keys are accepted and left to the trainer),
 * "trim_strings" (default true) and "export" ("name", "format" JSON|CSV|EXAMPLE).
 * Produces a ModelDef with raw columns, feature columns, graph (with tensor
 * names), head and signatures; no tensor index. Keys listed in other_keys are
 * the caller's (e.g. "train", "eval") and are not checked here; any other
 * unknown key, wrong type or impossible value is refused with a message that
 * names the key (e.g. "feature_columns[3].boundaries: must increase").
 * OUT: *out is malloc-owned; free it with rt_modeldef_free().
 */
struct cJSON;
rt_status rt_spec_to_modeldef(const struct cJSON *spec, const char *const *other_keys,
                              Predictd__ModelDef **out, rt_err *err);

/* ------------------------------- JSON settings, path-named errors (rt_cfg.c) */

/*
 * Getters for settings in a cJSON tree (specs, the trainer's sections, the
 * daemon config): `path` is the enclosing object's path ("" or NULL at the
 * top, e.g. "estimator" or "models[2]"), `key` the member; errors name both:
 * "train.batch_size: 0 is out of range [1, 1048576]". A member that is absent
 * or JSON null leaves *out as it is (the default) unless flags has
 * RT_CFG_REQUIRED ("path.key: missing (required)"); a wrong type ("expected an
 * integer, got a string"), a non-finite or out-of-range number is refused
 * with RT_ERR_INVALID. Strings returned point into the tree. Thread-safe
 * (the tree is only read).
 */
#define RT_CFG_REQUIRED 1

/* "path.key: <printf message>" (either part may be empty) into err;
 * returns RT_ERR_INVALID. */
rt_status rt_cfg_fail(rt_err *err, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Writes "path.key" (and "[index]" when index >= 0) into buf; returns buf. */
const char *rt_cfg_path(char *buf, size_t cap, const char *path, const char *key, long index);
/* "a number", "a string", "a boolean", "null", "a list", "an object". */
const char *rt_cfg_type_name(const struct cJSON *j);
/* Parses a JSON document (a file's text, len bytes). A syntax error is
 * RT_ERR_INVALID "invalid JSON at line L, column C" (the position where
 * cJSON stopped; columns count bytes from 1); running out of memory is
 * RT_ERR_NOMEM (rt_cfg.c's cJSON hooks tell the two apart). OUT: *out,
 * cJSON_Delete it. */
rt_status rt_cfg_parse_json(const char *text, size_t len, struct cJSON **out, rt_err *err);
/* Refuses obj unless an object, and its members named in neither allowed nor
 * extra (NULL-terminated lists; extra may be NULL) or given twice. */
rt_status rt_cfg_check_keys(const struct cJSON *obj, const char *path, const char *const *allowed,
                         const char *const *extra, rt_err *err);
rt_status rt_cfg_str(const struct cJSON *o, const char *path, const char *key, int flags,
                      const char **out, rt_err *err);
/* An integral number in [lo, hi]. */
rt_status rt_cfg_int(const struct cJSON *o, const char *path, const char *key, int flags,
                      int64_t lo, int64_t hi, int64_t *out, rt_err *err);
/* The same for a value already in hand (a list item: key may be "[3]"-less,
 * name it in path). */
rt_status rt_cfg_to_int(const struct cJSON *j, const char *path, const char *key, int64_t lo,
                     int64_t hi, int64_t *out, rt_err *err);
/* A finite number in [lo, hi]. */
rt_status rt_cfg_num(const struct cJSON *o, const char *path, const char *key, int flags,
                      double lo, double hi, double *out, rt_err *err);
rt_status rt_cfg_bool(const struct cJSON *o, const char *path, const char *key, int flags,
                       bool *out, rt_err *err);
rt_status rt_cfg_array(const struct cJSON *o, const char *path, const char *key, int flags,
                        const struct cJSON **out, rt_err *err);
rt_status rt_cfg_object(const struct cJSON *o, const char *path, const char *key, int flags,
                         const struct cJSON **out, rt_err *err);

/* "Did you mean" for a plain list of names (the tuner's config keys): the
 * name of names (n of them) nearest to name by the settings tables' own
 * rule (rt_settings.c: a typo — at most one edit per six letters, at least
 * one, a swap of neighbours one edit —, an abbreviation, or a name missing
 * a word), else NULL; NULL too when two are equally near. '-' and '_'
 * count as the same letter, so TensorFlow's --max_steps is one edit from
 * --max-steps. Names of 64 bytes or more never match. Returns a pointer
 * into names. Thread-safe. */
const char *rt_nearest_name(const char *name, const char *const *names, size_t n);

/* ----------------------------------- settings tables (rt_settings.c) */

/*
 * A program's settings as one table: each rt_setting row is a setting's
 * name (its JSON key, and its flag unless .flag spells it otherwise), type,
 * range, default, the offset of its field in the program's struct, help
 * text and, for the trainer's spec, the JSON object it sits in (.section).
 * The functions below make from a table the defaults, the JSON keys (errors
 * "path.key: ..."; duplicate keys refused; JSON null = absent), the
 * command-line flags (--x=y, --x y, a bool flag alone = true; aliases),
 * --help lines ending "(default D)", "did you mean" for unknown names, and
 * the first difference between two structs. Tables are static data: every
 * function is thread-safe except where it writes the caller's struct.
 */
typedef enum {
    RT_SET_INT,    /* int, an integer in [lo, hi] */
    RT_SET_SIZE,   /* size_t, an integer in [lo, hi] */
    RT_SET_BOOL,   /* bool: JSON true/false; --x, --x=true|false|1|0 */
    RT_SET_STR,    /* char * (owned): a non-empty string */
    RT_SET_NAME,   /* char * (owned): a non-empty string that .check accepts
                      (.what says what it must be: "a valid name (...)") */
    RT_SET_I64,    /* int64_t, an integer in [lo, hi] */
    RT_SET_U64,    /* uint64_t, an integer in [lo, hi] (lo >= 0) */
    RT_SET_NUM,    /* double, finite, in [dlo, dhi]; default ddef; .what, if
                      given, is what a flag's value must be ("a number of
                      seconds in [0, 1e7]") */
    RT_SET_ENUM,   /* int: the value of one of .choices, given by its name
                      (JSON: 'must be "a" or "b"'; flag: '"x" is not a or b') */
    RT_SET_CUSTOM, /* JSON only: .custom reads the member's value */
    RT_SET_LIST,   /* rt_setting_list (owned): a flag given once per value
                      (--data A --data B), each a non-empty string; at most
                      .hi values (0: no limit). Flags only, no default. */
} rt_setting_type;

/* RT_SET_LIST's field: n strings in v, each malloc'd. */
typedef struct rt_setting_list {
    char **v;
    size_t n;
} rt_setting_list;

enum {
    RT_SET_JSON = 1u << 0,      /* a JSON key (of .section, NULL: the top level) */
    RT_SET_FLAG = 1u << 1,      /* a command-line flag --<flag or name> */
    RT_SET_LIVE = 1u << 2,      /* predictd: a reload applies it at once */
    RT_SET_NODEFAULT = 1u << 3, /* --help shows no "(default ...)" */
};

typedef struct rt_setting_choice {
    const char *name; /* as written in JSON and on the command line */
    int value;        /* what the int field gets */
} rt_setting_choice;

struct rt_setting;
/* RT_SET_CUSTOM's reader: j (not null) is the member's value, path the
 * enclosing object's path; errors name path.s->name. */
typedef rt_status (*rt_setting_custom_fn)(const struct cJSON *j, const char *path,
                                          const struct rt_setting *s, void *dst, rt_err *err);

typedef struct rt_setting {
    const char *name;      /* JSON key (and flag name unless .flag) */
    rt_setting_type type;
    unsigned where;        /* RT_SET_JSON | RT_SET_FLAG | RT_SET_LIVE | RT_SET_NODEFAULT */
    int64_t lo, hi;        /* range of integers */
    int64_t def;           /* default of integers, BOOL (0/1) and ENUM (a value) */
    const char *def_str;   /* default of STR and NAME, NULL for none */
    size_t offset;         /* offsetof(<program struct>, <field>) */
    const char *arg;       /* the value's name in --help: "N", "ADDR", "FILE" */
    const char *help;      /* what it does; --help appends the default */
    /* the rest is optional (zero) */
    double dlo, dhi, ddef;             /* NUM: range and default */
    const rt_setting_choice *choices;  /* ENUM: ended by a NULL name */
    const char *flag;                  /* the flag's spelling when not name */
    const char *aliases;               /* other spellings, space-separated */
    const char *section;               /* the JSON object holding the key */
    bool (*check)(const char *s, size_t len); /* NAME */
    const char *what;                  /* NAME, NUM: what a value must be */
    rt_setting_custom_fn custom;       /* CUSTOM */
} rt_setting;

/* Every row's field of obj to its default (strings strdup'd; CUSTOM fields
 * are left alone). Only RT_ERR_NOMEM. */
rt_status rt_settings_defaults(const rt_setting *t, size_t n, void *obj, rt_err *err);
/* Frees the table's strings in obj (set to NULL). */
void rt_settings_free(const rt_setting *t, size_t n, void *obj);
/* dst's field of row i = src's, for each bit i of mask (strings copied). */
rt_status rt_settings_copy(const rt_setting *t, size_t n, uint64_t mask, void *dst,
                           const void *src, rt_err *err);
/* The first row (not CUSTOM, none of where's bits skip) whose fields in a
 * and b differ, or NULL. */
const struct rt_setting *rt_settings_diff(const rt_setting *t, size_t n, unsigned skip,
                                          const void *a, const void *b);
/* The row called name, or NULL. */
const rt_setting *rt_settings_find(const rt_setting *t, size_t n, const char *name);
/* The JSON key row of section (NULL: top level) called key, or NULL. */
const rt_setting *rt_settings_find_key(const rt_setting *t, size_t n, const char *section,
                                       const char *key);
/* True when s's key is in section (both NULL: the top level). */
bool rt_setting_in(const rt_setting *s, const char *section);

/* Reads member s->name of obj into dst (absent or null: unchanged); errors
 * "path.name: ..." (rt_cfg's). */
rt_status rt_setting_json(const rt_setting *s, const struct cJSON *obj, const char *path,
                          void *dst, rt_err *err);
/* Reads the JSON object obj, the keys of section (NULL: rows without one):
 * obj must be an object; a key given twice, or neither a row's nor one of
 * extra (NULL-ended, may be NULL; the caller reads those), is refused
 * ("path.key: unknown key (did you mean K?)"); then every row's member. */
rt_status rt_settings_json(const rt_setting *t, size_t n, const struct cJSON *obj,
                           const char *path, const char *section, const char *const *extra,
                           void *dst, rt_err *err);
/* s's field of obj as a new JSON value (STR without a value: refused).
 * OUT: *out, cJSON_Delete it. */
rt_status rt_setting_to_json(const rt_setting *s, const void *obj, struct cJSON **out,
                             rt_err *err);
/* Reads a flag's text value (NULL: a bool flag alone) into dst; errors name
 * the flag: "--x: \"v\" is not an integer", "--x: 9 is out of range [0, 5]". */
rt_status rt_setting_text(const rt_setting *s, const char *val, void *dst, rt_err *err);

/* The row whose flag or one of whose aliases is name (len bytes, no "--");
 * with dash, '-' and '_' are the same letter. NULL if none. */
const rt_setting *rt_settings_flag(const rt_setting *t, size_t n, const char *name, size_t len,
                                   bool dash);
/* "Did you mean": of the rows' names (where has RT_SET_JSON: keys of
 * section) or flags and aliases (RT_SET_FLAG: an alias answers its flag),
 * and extra (NULL-ended, may be NULL), the one nearest to name if near
 * enough to be a typo, an abbreviation or a name missing a word; of two
 * equally near, neither. Returns a pointer into the table or extra. */
const char *rt_settings_suggest(const rt_setting *t, size_t n, const char *name, unsigned where,
                                const char *section, const char *const *extra);

/* A command line read by rt_settings_argv. */
typedef struct rt_argv {
    const rt_setting *rows; /* the flags (rows with RT_SET_FLAG) */
    size_t n;
    bool dash_underscore;   /* --train_files is --train-files */
    bool dashdash;          /* "--" ends the flags (skipped); else it is the caller's */
    bool unknown_flag_last; /* "unknown flag --x (...)" instead of "--x: unknown flag (...)" */
    bool once;              /* a flag (not a LIST) given twice is refused: "--x: given
                               twice" (an alias says so: "(--a is --x)") */
    const char *noun;       /* what the messages call a flag; NULL: "flag" */
    const char *const *extra; /* other flags for "did you mean" (NULL-ended) */
    /* A flag not in the table (name, len bytes; eq: the text after '=' or
     * NULL; next: the argument after it or NULL): returns 0 not known, 1
     * taken alone, 2 taken with next, -1 refused (err set). NULL: none. */
    int (*other)(void *ctx, const char *name, size_t len, const char *eq, const char *next,
                 rt_err *err);
    void *ctx;
} rt_argv;
/* Reads argv[1..] into dst: "--flag=value", "--flag value", a bool flag
 * alone; "-h" is --help. Stops at the first argument that is not a flag (or
 * after "--" with dashdash): *next is its index (argc: none). Bit i of
 * *given (may be NULL) is set for row i < 64 given. An unknown or
 * abbreviated flag is RT_ERR_NOTFOUND "--x: unknown flag (did you mean
 * --y?)"; a bad value RT_ERR_INVALID naming the flag. */
rt_status rt_settings_argv(const rt_argv *a, int argc, char **argv, void *dst, uint64_t *given,
                           int *next, rt_err *err);
/* An rt_argv.other for programs whose table has no --help row: takes
 * --help (no value) and sets *(bool *)ctx; 0 for any other flag. */
int rt_argv_help(void *ctx, const char *name, size_t len, const char *eq, const char *next,
                 rt_err *err);
/* {"help", NULL}: the rt_argv.extra of a table read with rt_argv_help, so
 * that "did you mean" can name --help too. */
extern const char *const rt_argv_help_names[];
/* For a program whose --help ends the reading (what follows is not looked
 * at): the argc to read, one past the first "-h" or "--help" before `stop`
 * (NULL: none, else e.g. "--"), or argc when there is none. */
int rt_argv_help_end(int argc, char **argv, const char *stop);

/* Appends text wrapped at 79 columns, continuation lines indented by
 * indent; col is where the text starts. 0, or -1 when out of memory. */
int rt_settings_wrap(rt_buf *b, const char *text, size_t col, size_t indent);
/* s's default as --help shows it ("" for none). Returns buf. */
const char *rt_setting_default_text(const rt_setting *s, char *buf, size_t cap);
/* s's help, then more (may be NULL), its aliases "(also --a)" and
 * "(default D)", wrapped (rt_settings_wrap). */
int rt_setting_help(rt_buf *b, const rt_setting *s, const char *more, size_t col,
                    size_t indent);
/* One --help entry per flag row: "  --flag=ARG" (a bool "--flag[=true|false]",
 * an enum "--flag=a|b", a list "--flag=ARG...") padded to col, then rt_setting_help. A flag row that
 * stands for a JSON key (its .section and .name are a row of keys, n_keys;
 * keys may be NULL) shows that key's default. */
int rt_settings_help(rt_buf *b, const rt_setting *t, size_t n, size_t col,
                     const rt_setting *keys, size_t n_keys);

/* Frees a ModelDef built by rt_spec_to_modeldef, unpacked from model.pb, or
 * built by hand with malloc'd fields. NULL is fine. */
void rt_modeldef_free(Predictd__ModelDef *def);

/* The name, shape and count of one float32 tensor the graph needs. */
typedef struct rt_tensor_spec {
    const char *name;     /* points into the ModelDef */
    uint64_t shape[2];
    uint32_t rank;        /* 1 or 2 */
    uint64_t count;       /* product of shape */
} rt_tensor_spec;

/* Lists every tensor the ModelDef's graph needs, with its expected shape.
 * OUT: *specs is malloc'd (free()); names point into def. */
rt_status rt_modeldef_tensor_specs(const Predictd__ModelDef *def, rt_tensor_spec **specs,
                                   size_t *n, rt_err *err);

/* ----------------------------------------------------------------- graph */

/*
 * A compiled model: feature columns resolved (vocabulary hash tables, cross
 * plans, bucket boundaries), raw inputs, linear and DNN parts bound to tensor
 * data, and the head. Built from a ModelDef plus a lookup of tensor data, so
 * the runtime binds it to mapped variables.bin and the trainer to its own
 * mutable parameters. The graph keeps pointers into def and the tensor data:
 * both must outlive it.
 */
typedef struct rt_graph rt_graph;

/* Returns the data of tensor `name` holding `count` floats, or NULL (and an
 * error in err) if it is missing or has the wrong size. */
typedef const float *(*rt_tensor_lookup_fn)(void *ctx, const char *name, uint64_t count,
                                            rt_err *err);

/* assets_dir: directory holding vocabulary files (may be NULL if none used). */
rt_status rt_graph_build(const Predictd__ModelDef *def, rt_tensor_lookup_fn lookup,
                         void *lookup_ctx, const char *assets_dir, rt_graph **out,
                         rt_err *err);
void rt_graph_free(rt_graph *g);

const Predictd__ModelDef *rt_graph_def(const rt_graph *g);
size_t rt_graph_logits_dim(const rt_graph *g);

/* True for the feature-column kinds that produce ids (bucketized, vocabulary
 * list/file, identity, hash bucket, crossed, weighted); the others produce
 * dense values.
 * Thread-safe (reads rt_fc.c's constant table of kinds). */
bool rt_column_is_categorical(Predictd__ColumnType t);
/* The spec's name of kind t ("numeric_column", ...), "?" when unknown. */
const char *rt_column_kind_name(Predictd__ColumnType t);
/* The spec key of kind t that sets its number of ids or values
 * ("hash_bucket_size", "boundaries", "shape", ...); NULL for the kinds that
 * take it from their categorical_column (embedding, indicator). */
const char *rt_column_size_key(Predictd__ColumnType t);

/* The raw inputs the feature columns read (the JSON receiver's inputs), in
 * ModelDef raw_columns order, skipping the label and unused columns. */
size_t rt_graph_num_inputs(const rt_graph *g);
const char *rt_graph_input_name(const rt_graph *g, size_t i);
Predictd__DType rt_graph_input_dtype(const rt_graph *g, size_t i);
/* Index of the raw input called name (len bytes), or -1. */
long rt_graph_find_input(const rt_graph *g, const char *name, size_t len);

/* Layout of the DNN input vector: columns sorted by name (as TensorFlow's
 * input_layer does); column k occupies [offset[k], offset[k] + width[k]).
 * Returns the number of DNN columns; *cols are feature column indexes. */
size_t rt_graph_dnn_layout(const rt_graph *g, const size_t **cols, const size_t **offset,
                           const size_t **width, size_t *total_dim);

/* What a tool that lists a compiled graph needs (predict-model show and
 * transform). All read g only: thread-safe, no allocation. Indexes past the
 * end give 0 / NULL. */
/* The head's type (the ModelDef's graph.head.type). */
Predictd__HeadType rt_graph_head(const rt_graph *g);
/* Classes of a classifier (2 for a binary one), 0 for a regressor. */
size_t rt_graph_num_classes(const rt_graph *g);
/* Feature columns, in ModelDef order; column c's definition (points into the
 * ModelDef) and the id space of a categorical column (0 for dense ones). */
size_t rt_graph_num_columns(const rt_graph *g);
const Predictd__FeatureColumn *rt_graph_column(const rt_graph *g, size_t c);
int64_t rt_graph_column_buckets(const rt_graph *g, size_t c);
/* Column fc's settings as "key=value ..." text into buf (n bytes,
 * NUL-terminated; "" for an unknown kind). */
void rt_column_describe(const Predictd__FeatureColumn *fc, char *buf, size_t n);
/* The DNN: its layers (hidden layers and the logits layer; 0 without a DNN
 * part), layer l's output width, and the input vector's width. */
size_t rt_graph_num_layers(const rt_graph *g);
size_t rt_graph_layer_width(const rt_graph *g, size_t l);
size_t rt_graph_dnn_dim(const rt_graph *g);
/* True when g is a BoostedTrees graph (the ModelDef's graph.trees), whose
 * ensemble the rt_trees_* functions below describe. */
bool rt_graph_has_trees(const rt_graph *g);

/* ------------------------------------------------------ raw input batches */

/* One raw value: a number or a string (not NUL-terminated). */
typedef struct rt_value {
    const char *str;  /* NULL for a number */
    size_t len;
    double num;
} rt_value;

/* A batch of instances; for each instance and raw input, zero or more values
 * (zero = missing: the column's default applies, or it is an error). Strings
 * are copied into the batch's arena. */
typedef struct rt_batch rt_batch;

rt_batch *rt_batch_new(const rt_graph *g);
void rt_batch_free(rt_batch *b);
/* Forget all instances; keeps memory for reuse. */
void rt_batch_clear(rt_batch *b);
size_t rt_batch_size(const rt_batch *b);
/* Appends an empty instance; returns its index in *idx. */
rt_status rt_batch_add(rt_batch *b, size_t *idx);
/* Appends one value to input `input` of instance `idx` (multi-valued when
 * called more than once). */
rt_status rt_batch_push_num(rt_batch *b, size_t idx, size_t input, double v);
rt_status rt_batch_push_str(rt_batch *b, size_t idx, size_t input, const char *s, size_t len);
/* The values of one cell. */
const rt_value *rt_batch_cell(const rt_batch *b, size_t idx, size_t input, size_t *n);

/* What a missing input (a cell with no values) means when the batch is
 * transformed; set by whoever fills the batch. A numeric column's
 * default_value always applies first. */
typedef enum {
    RT_MISSING_ERROR = 0,   /* an error: JSON instances carry every input, as
                               TF's placeholders require (the default) */
    RT_MISSING_EMPTY,       /* string inputs: no values (tf.Example, as
                               tf.parse_example's VarLenFeature) */
    RT_MISSING_CSV_DEFAULT, /* the spec's CSV column "default" (CSV rows) */
} rt_missing_policy;

/* rt_batch_clear resets the policy to RT_MISSING_ERROR. */
void rt_batch_set_missing(rt_batch *b, rt_missing_policy policy);
rt_missing_policy rt_batch_missing(const rt_batch *b);

/* Serving input functions other than JSON features: parse one CSV row (the
 * training schema without the label) or one serialized tf.Example into
 * instance idx. Errors name the column. */
rt_status rt_receiver_csv_row(rt_batch *b, size_t idx, const char *row, size_t len, rt_err *err);
rt_status rt_receiver_example(rt_batch *b, size_t idx, const uint8_t *bytes, size_t len,
                              rt_err *err);

/* ------------------------------------- TFRecord files (rt_tfrecord.c) */

/*
 * TFRecord files as TensorFlow writes them (uint64 length LE, uint32 masked
 * CRC-32C of the length, the data, uint32 masked CRC-32C of the data), plain
 * or gzip-compressed; the trainer, predict-model evaluate, convert and
 * batch-predict read them here. docs/trainer.md, "Input formats".
 */
typedef enum {
    RT_INPUT_AUTO = 0,      /* told apart by content (rt_input_sniff) */
    RT_INPUT_CSV,
    RT_INPUT_TFRECORD,
    RT_INPUT_TFRECORD_GZIP,
} rt_input_format;

/* "AUTO", "CSV", "TFRECORD", "TFRECORD_GZIP". */
const char *rt_input_format_name(rt_input_format f);
/* The format named s (case-insensitive, as rt_input_format_name spells it):
 * RT_OK, or RT_ERR_INVALID. */
rt_status rt_input_format_parse(const char *s, rt_input_format *f);
/* What path holds, by content whatever its name: TFRecord (the first 12
 * bytes are a length and its masked CRC) plain or gzip, else CSV. A gzip
 * file that is not TFRecord is RT_ERR_FORMAT. A pipe is not read (that
 * would spend its bytes): CSV, unless the caller's format says otherwise.
 * Thread-safe. */
rt_status rt_input_sniff(const char *path, rt_input_format *f, rt_err *err);
/* TFRecord's CRC mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t rt_tfrecord_mask(uint32_t crc);

/* A reader of one file's records (gzip recognised by content). One thread. */
typedef struct rt_tfrecord rt_tfrecord;
/* Opens path to read the records that start at stream offsets in
 * [start, end) (end 0: to the end; start must be a record's offset, as
 * rt_tfrecord_cuts gives them; 0 for a gzip file). */
rt_status rt_tfrecord_open(const char *path, uint64_t start, uint64_t end, rt_tfrecord **out,
                           rt_err *err);
/* The next record: *data (valid until the next call) and *len. RT_OK;
 * RT_ERR_NOTFOUND at the end; RT_ERR_FORMAT for a corrupt record ("FILE:
 * offset N: record K: corrupt data (...)", "... truncated ...", "... corrupt
 * length ..."): after corrupt data the next call goes on with the next
 * record, after a corrupt length or a truncated file the file ends. */
rt_status rt_tfrecord_next(rt_tfrecord *r, const uint8_t **data, size_t *len, rt_err *err);
/* The stream offset of the record last returned (or refused), the offset
 * after it, and its number (1 = the first record of the file). */
uint64_t rt_tfrecord_offset(const rt_tfrecord *r);
uint64_t rt_tfrecord_pos(const rt_tfrecord *r);
uint64_t rt_tfrecord_index(const rt_tfrecord *r);
/* How far into the file itself reading has got (for a gzip file the
 * compressed bytes consumed, read-ahead included): progress against the
 * file's size. */
uint64_t rt_tfrecord_file_offset(const rt_tfrecord *r);
void rt_tfrecord_close(rt_tfrecord *r);
/* Byte ranges of a plain TFRecord file cut at record boundaries: *cuts
 * (malloc'd, *n of them, the first 0) are the offsets of the first record at
 * or past each multiple of chunk. Reads only the headers. */
rt_status rt_tfrecord_cuts(const char *path, uint64_t chunk, uint64_t **cuts, size_t *n,
                           rt_err *err);

/* A writer: records go to PATH.tmp-PID; close with commit 1 makes the file
 * (fsync, rename, fsync of the directory), with 0 removes the temp file. */
typedef struct rt_tfrecord_writer rt_tfrecord_writer;
rt_status rt_tfrecord_writer_open(const char *path, int gzip, rt_tfrecord_writer **out,
                                  rt_err *err);
rt_status rt_tfrecord_write(rt_tfrecord_writer *w, const void *data, size_t len, rt_err *err);
rt_status rt_tfrecord_writer_close(rt_tfrecord_writer *w, int commit, rt_err *err);

/* ------------------------------------------- raw inputs, one way (rt_raw.c) */

/*
 * What the trainer and the serving receivers share, so a CSV row means the
 * same to both (docs/feature-columns.md, "Raw inputs"). All thread-safe,
 * no allocation.
 */

/* One field of a split CSV row: bytes [off, off + len) of the output. */
typedef struct rt_csv_span {
    uint32_t off;
    uint32_t len;
} rt_csv_span;

/*
 * One serialized tf.Example as one row of def's raw columns, as
 * tf.io.parse_example reads it with a FixedLenFeature of shape [] per column
 * (rt_example_row.c): text (reset, NUL-terminated) gets the cells, spans[c]
 * (def->n_raw_columns of them) column c's cell, as rt_csv_split gives a CSV
 * row's: bytes as they are, int64 in decimal, float as the shortest text
 * that reads back as the same value. A missing feature is an empty cell (its
 * column's default) or, for a column without default, an error; with
 * targets 0 a label or weight column may be missing. present (may be NULL)
 * gets 1 per column whose feature was there. Errors name the feature
 * ("feature age: expected int64_list (column type int), got float_list").
 */
rt_status rt_example_to_row(const Predictd__ModelDef *def, const uint8_t *bytes, size_t len,
                            int targets, rt_buf *text, rt_csv_span *spans, uint8_t *present,
                            rt_err *err);
/* The reverse, for predict-model convert: the cells of one CSV row of def's
 * raw columns (n_fields spans into text) as a serialized tf.Example in out
 * (reset): a string cell as a bytes_list (its bytes as they are), an int
 * column as an int64_list, a float column as a float_list; an empty cell is
 * left out (its default applies when read). */
rt_status rt_example_from_row(const Predictd__ModelDef *def, const char *text,
                              const rt_csv_span *spans, size_t n_fields, rt_buf *out,
                              rt_err *err);
/* The list kind column rc's feature must have ("bytes_list", ...). */
const char *rt_example_kind(const Predictd__RawColumn *rc);

/*
 * Splits one CSV row row[0..len) (line end already removed) into fields:
 * ',' separated; a field may be "double quoted" ("" is a quote inside, blanks
 * before the opening and after the closing quote are dropped); an unquoted
 * field is kept as it is, blanks included (cells are trimmed when read).
 * Field bytes are copied, unquoted, into out (len + 1 bytes, NUL-terminated
 * after the last field); spans[0..max) get the first max fields. Returns the
 * number of fields (may exceed max), or -1 with err set (RT_ERR_INVALID:
 * "field 3: unterminated quote", "field 3: text after the closing quote",
 * "field 3: contains a NUL byte"; RT_ERR_LIMIT: len >= 4 GiB).
 */
long rt_csv_split(const char *row, size_t len, char *out, rt_csv_span *spans, size_t max,
                  rt_err *err);

/* A numeric cell s[0..len): blanks (space, tab) around it trimmed, then the
 * whole text must be one strtod number (at most 63 characters; "nan" and
 * "inf" included). RT_OK and *v; RT_ERR_NOTFOUND for an empty or all-blank
 * cell (the column's default applies); RT_ERR_INVALID otherwise. */
rt_status rt_raw_number(const char *s, size_t len, double *v);

/* Sets err to the refusal of numeric cell s[0..len) at 0-based position
 * field: 'field 3 (age): expected a number, got "abc"' (name may be NULL;
 * at most 40 bytes of the trimmed cell are quoted). Returns RT_ERR_INVALID. */
rt_status rt_raw_number_error(rt_err *err, size_t field, const char *name, const char *s,
                              size_t len);

/*
 * Pushes CSV cell s[0..len), field number `field` (0-based, for messages),
 * of raw column rc into input `input` of instance idx of b: a DT_FLOAT
 * column's cell is read by rt_raw_number (a bad number is refused even when
 * input < 0, i.e. no feature column reads it: rows are checked whole, as
 * tf.decode_csv does); an empty or all-blank cell pushes the column's default
 * (tf.decode_csv's record_defaults) when the spec gave one, else nothing (the
 * transform decides: a numeric column's default_value, or "missing input");
 * a string is pushed as it is (the transform trims by trim_strings).
 */
rt_status rt_raw_push_cell(rt_batch *b, size_t idx, long input, const Predictd__RawColumn *rc,
                           size_t field, const char *s, size_t len, rt_err *err);

/* The label of CSV cell s[0..len) of label column col (raw column index)
 * for def's head: a class id (its index in the head's label vocabulary,
 * after trimming when def->trim_strings; or an integer class id in
 * [0, n_classes) without a vocabulary) or a regression value, in *out.
 * RT_ERR_INVALID names the label column ("label income_bracket: \"x\" is
 * not in the label vocabulary"). Training and predict-model evaluate read
 * labels with it. Thread-safe. */
rt_status rt_raw_label(const Predictd__ModelDef *def, size_t col, const char *s, size_t len,
                       float *out, rt_err *err);

/* The example weight of CSV cell s[0..len) of the weight column col
 * (estimator.weight_column): a finite number >= 0 (an empty cell takes the
 * column's default when the spec gave one). A negative weight or anything
 * else is RT_ERR_INVALID naming the column ("weight w: -1 is negative
 * (example weights must be >= 0)"). Thread-safe. */
rt_status rt_raw_weight(const Predictd__ModelDef *def, size_t col, const char *s, size_t len,
                        float *out, rt_err *err);

/* Raw column index of def's weight column, or -1 (no weight_column). */
long rt_raw_weight_column(const Predictd__ModelDef *def);

/* Raw column indexes of def's label columns, in file order, into cols
 * (room for max); returns how many there are. */
size_t rt_raw_label_columns(const Predictd__ModelDef *def, size_t *cols, size_t max);

/*
 * rt_raw_push_cell's second half for a numeric cell already read with
 * rt_raw_number (parsed: its RT_OK with v, or RT_ERR_NOTFOUND for an empty
 * cell): pushes v, or the column's default, or nothing, exactly as
 * rt_raw_push_cell would for that cell. For a reader that checked the cell
 * on another thread and keeps the value, so it is not parsed twice.
 */
rt_status rt_raw_push_number(rt_batch *b, size_t idx, long input, const Predictd__RawColumn *rc,
                             rt_status parsed, double v);

/* The part of s[0..*len) without leading/trailing white space (space, \t,
 * \n, \r, \v, \f); updates *len. trim_strings, vocabularies and labels. */
const char *rt_trim_span(const char *s, size_t *len);

/* Applies a hidden layer's activation to y[0..n) in place: relu
 * max(x, 0) with NaN kept NaN (as TensorFlow's Relu), tanh, sigmoid, elu
 * (x > 0 ? x : e^x - 1), linear (nothing). Serving and training both. */
void rt_activate(Predictd__Activation act, float *y, size_t n);

/* ------------------------------------------------------------- transform */

/* Ids of a categorical feature column in CSR form: instance i has ids
 * ids[offsets[i] .. offsets[i+1]). A weighted_categorical_column also has
 * weights[k] beside ids[k] (never 0: TensorFlow drops zero weights); the
 * linear part and embeddings use only the pairs with a weight > 0 (its
 * safe_embedding_lookup_sparse), an indicator adds every weight. */
typedef struct rt_ids {
    uint32_t *offsets; /* n + 1 */
    int64_t *ids;
    float *weights;    /* NULL: every id weighs 1 */
} rt_ids;

/*
 * The serving input function's output for a batch. For feature column c:
 * categorical kinds (bucketized, vocabulary, identity, hash, crossed,
 * weighted) fill ids[c]; dense kinds (numeric, indicator, embedding, shared
 * embedding) fill values[c], n x width.
 * dnn_input is n x dnn_dim (rt_graph_dnn_layout). Memory is owned by the
 * rt_features and reused across calls.
 */
typedef struct rt_features {
    size_t n;
    size_t n_columns;
    rt_ids *ids;         /* [n_columns]; offsets NULL for dense columns */
    float **values;      /* [n_columns]; NULL for categorical columns */
    size_t *width;       /* [n_columns]; values per instance (0 categorical) */
    float *dnn_input;    /* n x dnn_dim, NULL when the model has no DNN part */
    size_t dnn_dim;
    /* private: capacity bookkeeping */
    void *priv;
} rt_features;

void rt_features_init(rt_features *f);
void rt_features_free(rt_features *f);

/* Runs the feature columns on batch b. Fails (RT_ERR_INVALID) on a missing
 * required input or a wrong type, naming the instance and input
 * ("instances[3].age: ..."). */
rt_status rt_transform(const rt_graph *g, const rt_batch *b, rt_features *f, rt_err *err);

/*
 * rt_transform in two halves, for a caller that keeps each instance's first
 * half across calls (the trainer's rows, seen once per epoch):
 * rt_transform_inputs runs the columns that read the batch (numeric,
 * bucketized, vocabulary, hash, crossed); rt_transform_finish the ones that
 * read only other columns and the weights (indicator, embedding) and builds
 * dnn_input. inputs + finish = rt_transform, bit for bit.
 * rt_features_row_size / _row_save copy instance i's first-half results
 * into a record (an opaque byte string, row_size bytes, any alignment);
 * rt_features_rows_load makes f the batch of n saved records (as
 * rt_transform_inputs would have made it for their instances), ready for
 * rt_transform_finish. Records belong to the graph that made them.
 */
rt_status rt_transform_inputs(const rt_graph *g, const rt_batch *b, rt_features *f, rt_err *err);
rt_status rt_transform_finish(const rt_graph *g, rt_features *f, rt_err *err);
size_t rt_features_row_size(const rt_graph *g, const rt_features *f, size_t i);
void rt_features_row_save(const rt_graph *g, const rt_features *f, size_t i, void *out);
rt_status rt_features_rows_load(const rt_graph *g, rt_features *f, const void *const *rows,
                                size_t n, rt_err *err);

/* ---------------------------------------------------------- forward pass */

/* Per-thread scratch for forward passes (layer activations). */
typedef struct rt_workspace rt_workspace;
rt_workspace *rt_workspace_new(void);
void rt_workspace_free(rt_workspace *ws);

/* logits (n x logits_dim, caller-allocated) = linear(f) + dnn(f.dnn_input),
 * or for a BoostedTrees graph bias + the sum of the leaves reached.
 * Hidden activations stay in ws until the next call (for backprop). */
rt_status rt_forward(const rt_graph *g, const rt_features *f, rt_workspace *ws, float *logits,
                     rt_err *err);
/* Activations of layer k after the last rt_forward: k = 0 is the DNN input
 * (the features' dnn_input itself, not a copy: valid while they are
 * unchanged), 1..H the hidden layers (after activation), H+1 the DNN logits.
 * n x width. */
const float *rt_workspace_layer(const rt_workspace *ws, size_t k, size_t *width);

/* ------------------------------------------------------------------ head */

/* Outputs of a head for n instances. Arrays not used by the head are NULL. */
typedef struct rt_outputs {
    size_t n;
    size_t n_classes;      /* classifiers; 0 for regression */
    float *logits;         /* n x logits_dim */
    float *logistic;       /* n (binary only) */
    float *probabilities;  /* n x n_classes */
    int64_t *class_ids;    /* n */
    float *predictions;    /* n x label_dimension (regression) */
    void *priv;
} rt_outputs;

void rt_outputs_init(rt_outputs *o);
void rt_outputs_free(rt_outputs *o);
rt_status rt_head_compute(const rt_graph *g, const float *logits, size_t n, rt_outputs *o,
                          rt_err *err);
/* The class string for class id k ("0", "1", ... without a vocabulary). */
const char *rt_graph_class_name(const rt_graph *g, size_t k);

/* ------------------------------------------- tree ensembles (rt_trees.c) */

/* Trees of g's ensemble (0 without one). */
size_t rt_trees_count(const rt_graph *g);
/* Floats of scratch per instance that rt_trees_leaves needs (0 without an
 * ensemble). */
size_t rt_trees_scratch(const rt_graph *g);
/* The leaf each instance of f reaches in each tree, as the node's index in
 * its tree of the ModelDef: leaves[i * trees + t] (f->n x rt_trees_count).
 * x is scratch of f->n * rt_trees_scratch(g) floats. Thread-safe (g is only
 * read). */
rt_status rt_trees_leaves(const rt_graph *g, const rt_features *f, float *x, uint32_t *leaves,
                          rt_err *err);

/* The shape of g's ensemble and, per input, its split count and the sum of
 * its splits' gain (TensorFlow's gain-based feature importances, unscaled),
 * sorted by gain, then splits, highest first: *imp has one entry per input
 * (free() it; column points into g's ModelDef). RT_ERR_INVALID without
 * trees. */
typedef struct rt_trees_shape {
    size_t trees, nodes, leaves, max_depth;
} rt_trees_shape;
typedef struct rt_trees_importance {
    size_t input;       /* index in TreeEnsemble.inputs */
    const char *column;
    uint64_t splits;
    double gain;
} rt_trees_importance;
rt_status rt_trees_describe(const rt_graph *g, rt_trees_shape *shape, rt_trees_importance **imp,
                            rt_err *err);

/* ------------------------------------------------------- exported models */

/* An opened export directory: ModelDef, variables.bin mapped read-only, and
 * the compiled graph. Immutable; share it between threads. */
typedef struct rt_model rt_model;

/*
 * Opens and validates EXPORT_DIR (model.pb, variables.bin, assets/): magic,
 * format versions, every offset and length against the file size, checksums,
 * tensor shapes against the graph. Refuses a bad export with a message that
 * names the file and what is wrong.
 */
rt_status rt_model_open(const char *dir, rt_model **out, rt_err *err);
/* The same from memory (for fuzzing and tests); buffers are copied. */
rt_status rt_model_open_buffers(const void *model_pb, size_t pb_len, const void *vars,
                                size_t vars_len, rt_model **out, rt_err *err);
void rt_model_close(rt_model *m);
const rt_graph *rt_model_graph(const rt_model *m);
const Predictd__ModelDef *rt_model_def(const rt_model *m);
/* The validated data of tensor `name` in the export (read-only, lives as long
 * as m), its number of floats in *count (may be NULL); NULL if absent. */
const float *rt_model_tensor(const rt_model *m, const char *name, uint64_t *count);

/* Parses an export version directory name: a canonical decimal integer (no
 * sign, no leading zero unless "0", fits int64). Returns 1 and sets *version
 * (may be NULL), else 0. The exporter and the daemon agree on it; any other
 * name in a base path (e.g. the exporter's hidden .tmp-*) is not a version. */
int rt_version_parse(const char *name, int64_t *version);

/* Layout of variables.bin (all little-endian):
 *   0  char[8]  magic "PDVARS\0\0"
 *   8  u32      format version (1)
 *  12  u32      tensor count
 *  16  u64      file size in bytes
 *  24  u32      CRC-32C of bytes 0..23
 *  28..63       zero
 *  64..         tensors, each at a 64-byte aligned offset, zero padding between */
#define RT_VARS_MAGIC "PDVARS\0\0"
#define RT_VARS_VERSION 1u
#define RT_VARS_HEADER 64u
#define RT_VARS_ALIGN 64u
#define RT_FORMAT_VERSION 1u

/* ---------------------------------------------------------- JSON serving */

typedef enum {
    RT_METHOD_PREDICT = 0,
    RT_METHOD_CLASSIFY = 1,
    RT_METHOD_REGRESS = 2,
    RT_METHOD_INFER = 3, /* an Open Inference Protocol (KServe v2) infer body (rt_v2_*.c) */
    RT_METHOD_EXPLAIN = 4, /* Vertex AI's :explain (rt_json_explain) */
} rt_method;

typedef struct rt_json_params {
    size_t max_instances; /* per request; default 100000 */
    int max_depth;        /* JSON nesting; default 64 */
    size_t max_answer_bytes; /* largest answer; 0 = no limit (the default) */
    size_t max_explain_instances; /* instances of one :explain (each costs up to
                                     2^16 model rows); default 1000, 0 = no limit */
} rt_json_params;

rt_json_params rt_json_default_params(void);

/* Per-thread scratch for serving requests (batch, features, workspace,
 * outputs); reuse it across requests on one thread. */
typedef struct rt_ctx rt_ctx;
rt_ctx *rt_ctx_new(void);
void rt_ctx_free(rt_ctx *c);
/* The raw inputs of the request c last read (after rt_json_handle,
 * rt_v2_handle or rt_json_parse_only returned RT_OK), or NULL: for the
 * daemon's monitoring. Valid until c's next use. */
const rt_batch *rt_ctx_batch(const rt_ctx *c);

/*
 * Handles one TensorFlow Serving REST body against model m:
 *   predict: {"instances": [...]} or {"inputs": ...}, optional "signature_name";
 *   classify / regress: {"examples": [...], "context": {...}};
 *   infer: an Open Inference Protocol body (rt_v2_handle, its JSON header
 *   ending where its value ends: RT_V2_FIND_HEADER; for replays);
 *   explain: a :predict body with Vertex AI's explanationSpecOverride
 *   (rt_json_explain).
 * On success appends the JSON answer to out ({"predictions": [...]},
 * {"outputs": ...} or {"results": [...]}). On bad input returns
 * RT_ERR_INVALID (HTTP 400) or RT_ERR_LIMIT and a message naming the
 * instance and input; the caller renders {"error": msg}.
 */
rt_status rt_json_handle(const rt_model *m, rt_method method, const char *body, size_t len,
                         const rt_json_params *p, rt_ctx *c, rt_buf *out, rt_err *err);

/* The signature a request names (NULL or "" = serving_default; "predict" and
 * "serving_default" stand in for each other). *sig is NULL when the model
 * lists no signatures at all. RT_ERR_INVALID naming it when unknown. */
rt_status rt_json_find_signature(const Predictd__ModelDef *def, const char *name,
                                 const Predictd__SignatureDef **sig, rt_err *err);

/* A :predict body ({"instances"} or {"inputs"}, "signature_name") read into
 * c's batch as rt_json_handle reads it, then only the serving input function
 * run on it (rt_transform; no forward pass, no head): *f gets the features,
 * held by c and valid until c's next use. With f NULL the body is only read.
 * Errors are the parser's and the transform's own messages, as they are
 * ("instances[3].age: ..."; rt_json_handle words some of them for the
 * client). For predict-model transform. c: one thread at a time. */
rt_status rt_json_transform(const rt_graph *g, const char *body, size_t len,
                            const rt_json_params *p, rt_ctx *c, const rt_features **f,
                            rt_err *err);

/* ------------------------------------------ cross-request batching (rt_merge.c) */

/* A :predict body parsed into an rt_ctx but not run yet (the daemon's
 * cross-request batching parses on the HTTP threads, runs later). */
typedef struct rt_parsed {
    const void *sig;  /* the signature it named (compare by address: requests
                         with the same model and sig may be merged) */
    int columnar;     /* answered as {"outputs"} instead of {"predictions"} */
    size_t n;         /* instances */
    const void *v2;   /* an Open Inference Protocol request (rt_v2_parse): its
                         answer's settings, held by the request's rt_ctx; NULL
                         for a TF Serving body */
} rt_parsed;

/* Parses a :predict body for model m into c's batch, without running it.
 * Fails exactly as rt_json_handle would on the same body (same status and
 * message). Thread safety: c belongs to the caller. */
rt_status rt_json_parse_only(const rt_model *m, const char *body, size_t len,
                             const rt_json_params *p, rt_ctx *c, rt_parsed *out, rt_err *err);

/* Runs the request parsed into c on its own and appends its answer to out:
 * the same bytes rt_json_handle gives for the body. */
rt_status rt_json_run_parsed(const rt_model *m, rt_ctx *c, const rt_parsed *pr, rt_buf *out,
                             rt_err *err);

/* Appends every instance of src (values and strings copied) to dst; both
 * made for the same graph and with the same missing-input policy. */
rt_status rt_batch_append(rt_batch *dst, const rt_batch *src, rt_err *err);

/*
 * Merges the parsed requests reqs[0..n) (all for model m, each rt_ctx
 * holding one rt_json_parse_only result) into mc's batch in that order, and
 * runs ONE transform, forward pass and head over it. Request k's instances
 * are rows [start_k, start_k + n_k), start_k = the sum of the earlier n.
 * Every row gets the bits it would get if its request ran alone (the DNN
 * runs each request's rows as a segment of its own). On failure (for
 * instance one request's input fails the transform) nothing is kept: run
 * each request with rt_json_run_parsed instead, which gives each its own
 * answer or error. mc, reqs: owned by the caller, one thread at a time.
 */
rt_status rt_merge_run(const rt_model *m, rt_ctx *mc, rt_ctx *const *reqs,
                       const rt_parsed *parsed, size_t n, rt_err *err);

/* Appends the answer of the request whose rows start at `start` in mc's
 * last rt_merge_run (pr->n rows), rendered as pr asked (rows or columns). */
rt_status rt_merge_render(const rt_model *m, const rt_ctx *mc, size_t start,
                          const rt_parsed *pr, rt_buf *out);

/* TensorFlow's name of a dtype ("DT_FLOAT", "DT_STRING", ...; "DT_INVALID"). */
const char *rt_dtype_name(Predictd__DType t);

/* Appends {"model_spec": ..., "metadata": {"signature_def": ...}} (TF
 * Serving's GET .../metadata answer) for model `name` version `version`. */
rt_status rt_json_metadata(const rt_model *m, const char *name, int64_t version, rt_buf *out);

/* ------------------------- Open Inference Protocol, KServe v2 (rt_v2_*.c) */

/*
 * The Open Inference Protocol's REST bodies (docs/v2-protocol.md): model
 * metadata, and infer requests whose input tensors (JSON "data", or raw
 * little-endian bytes after the JSON header: Triton's binary tensor data
 * extension) fill the same rt_batch a :predict body fills, read by the same
 * JSON reader with the same rules for values. Answers are rendered from the
 * same rt_outputs, as JSON or binary tensors, with Triton's classification
 * extension. One input per raw feature (FP32 or BYTES, shape [-1] or
 * [-1, k]), or the one BYTES input of a CSV / tf.Example receiver; outputs
 * are the serving_default signature's.
 */

/* header_len values besides a length: no Inference-Header-Content-Length
 * (the whole body is JSON), or the JSON header ends where its value ends
 * (a replayed body whose header length was not kept). */
#define RT_V2_NO_HEADER SIZE_MAX
#define RT_V2_FIND_HEADER (SIZE_MAX - 1)

/*
 * Parses an infer body (header_len: the Inference-Header-Content-Length,
 * or one of the values above) for model m into c's batch without running
 * it; the answer's settings (requested outputs, binary, classification,
 * id, model_name and version to report) stay in c for rendering. out->v2 is
 * set (see rt_parsed): rt_json_run_parsed and rt_merge_render render a v2
 * answer for it. RT_ERR_INVALID / RT_ERR_LIMIT (400) name the tensor, what
 * was sent and what the model expects. name: the model's name in answers
 * (NULL: the export's); version < 0: no model_version. c: the caller's.
 */
rt_status rt_v2_parse(const rt_model *m, const char *name, int64_t version, const char *body,
                      size_t len, size_t header_len, const rt_json_params *p, rt_ctx *c,
                      rt_parsed *out, rt_err *err);
/* rt_v2_parse, run, and the answer appended to out (the bytes
 * rt_json_run_parsed would give). */
rt_status rt_v2_handle(const rt_model *m, const char *name, int64_t version, const char *body,
                       size_t len, size_t header_len, const rt_json_params *p, rt_ctx *c,
                       rt_buf *out, rt_err *err);
/* After a v2 answer was rendered for the request parsed into c: the length
 * of its JSON part when binary tensors follow it (the answer's
 * Inference-Header-Content-Length), else 0. */
size_t rt_v2_answer_header_len(const rt_ctx *c);
/* Appends the model metadata answer {"name", "versions", "platform",
 * "inputs", "outputs"} for m, served as model `name` with the given
 * versions (the ones a client may ask for, ascending). */
rt_status rt_v2_metadata(const rt_model *m, const char *name, const int64_t *versions,
                         size_t n_versions, rt_buf *out);

/* ------------------------------------ explanations (rt_explain*.c) */

/*
 * Feature attributions for one prediction (docs/explanations.md): how much
 * each raw input of the serving signature moved the explained output from
 * its value at the baseline instance to its value at the instance. A column
 * that reads several raw inputs (crossed, embedding of a cross) is not a
 * feature of its own: the raw inputs it reads share it. Methods:
 *   EXACT    Shapley values, exactly: a BoostedTrees model explained on its
 *            logits by TreeSHAP with the baseline as the one reference
 *            (polynomial); else every coalition of the inputs that differ
 *            from the baseline (at most RT_XAI_EXACT_MAX of them) batched
 *            through the forward pass; past that, the closed form of a model
 *            additive in its inputs (a linear model explained on its
 *            logits); else refused.
 *   SAMPLED  Vertex AI's sampled Shapley: path_count random permutations,
 *            seeded (the same request gives the same answer).
 *   IG       integrated gradients (Sundararajan et al. 2017) by step_count
 *            trapezoid steps of the gradient of the output along the
 *            straight path from the baseline's transformed inputs (DNN input
 *            vector, linear part's one-hot / values) to the instance's;
 *            linear, DNN and wide & deep models (not trees).
 */
typedef enum {
    RT_XAI_DEFAULT = 0, /* EXACT when the model has at most RT_XAI_EXACT_MAX
                           raw inputs or is a tree ensemble explained on its
                           logits (TreeSHAP), else SAMPLED */
    RT_XAI_EXACT,
    RT_XAI_SAMPLED,
    RT_XAI_IG,
} rt_xai_method;

/* Which output is explained (Vertex's ExplanationMetadata.outputs key). */
typedef enum {
    RT_XAI_OUT_DEFAULT = 0, /* classifiers: probabilities; regressors: predictions */
    RT_XAI_OUT_PROBABILITIES,
    RT_XAI_OUT_LOGITS,
    RT_XAI_OUT_PREDICTIONS,
} rt_xai_output;

#define RT_XAI_EXACT_MAX 16     /* players of an exact enumeration (2^16 rows) */
#define RT_XAI_MAX_OUTPUTS 64   /* output indices one request may name */
#define RT_XAI_PATHS_DEFAULT 10 /* sampled Shapley's pathCount when not given */
#define RT_XAI_STEPS_DEFAULT 50 /* integrated gradients' stepCount when not given */
#define RT_XAI_MAX_BASELINES 16 /* inputBaselines values per input (averaged over) */

typedef struct rt_xai_params {
    rt_xai_method method;
    int path_count;            /* SAMPLED: 1..50 */
    int step_count;            /* IG: 1..100 */
    rt_xai_output output;
    int top_k;                 /* outputs explained, highest first; -1 all;
                                  0: 1 (unless output_indices) */
    size_t n_output_indices;   /* > 0: exactly these outputs */
    size_t output_indices[RT_XAI_MAX_OUTPUTS];
    uint64_t seed;             /* SAMPLED's permutations */
    bool enumerate;            /* EXACT: enumerate the coalitions even where
                                  TreeSHAP applies (tests compare the two) */
} rt_xai_params;

/* The defaults: RT_XAI_DEFAULT, RT_XAI_OUT_DEFAULT, top_k 0, path_count
 * RT_XAI_PATHS_DEFAULT, step_count RT_XAI_STEPS_DEFAULT, seed 1. */
rt_xai_params rt_xai_default_params(void);
/* The name of a method as requests write it ("exactShapleyAttribution",
 * "sampledShapleyAttribution", "integratedGradientsAttribution"). */
const char *rt_xai_method_name(rt_xai_method m);

/* One explained output of one instance. */
typedef struct rt_xai_result {
    size_t output_index;
    float instance_value;      /* the output at the instance: the bits :predict answers */
    float baseline_value;      /* the output at the baseline instance */
    double approx_error;       /* |sum(attr) - (instance - baseline)| / |instance - baseline|
                                  (the absolute gap when the two are equal) */
    double *attr;              /* [rt_graph_num_inputs] owned by the caller */
    rt_xai_method method;      /* what ran (EXACT's closed form is EXACT) */
    size_t evaluations;        /* model rows evaluated */
} rt_xai_result;

/*
 * Explains instance xi of batch xb (made for g and filled by a receiver)
 * against instance bi of batch bb (the baseline: one value or none per
 * input; a missing cell follows bb's missing-input policy), for the outputs
 * p selects: n_res results, each with res[j].attr pointing at room for
 * rt_graph_num_inputs(g) doubles (the caller's). *n_res gets how many were
 * filled (at most max_res). Errors: RT_ERR_INVALID naming the parameter
 * ("integratedGradientsAttribution: BoostedTrees models have no gradient
 * ..."), the instance's own transform errors; RT_ERR_LIMIT when EXACT
 * would need more than 2^RT_XAI_EXACT_MAX rows. Thread-safe for distinct
 * batches (g is only read).
 */
rt_status rt_xai_explain(const rt_graph *g, const rt_batch *xb, size_t xi, const rt_batch *bb,
                         size_t bi, const rt_xai_params *p, rt_xai_result *res, size_t max_res,
                         size_t *n_res, rt_err *err);

/*
 * The baseline instance for model m into a new one-instance batch *out
 * (rt_batch_free it): per raw input, the first of
 *   the export's training statistics (median of a numeric input, the most
 *   frequent value of a categorical one) -- when the export has them;
 *   the spec's export.explanation.baselines.<input> (training.spec_json);
 *   the raw column's CSV default, else 0 or "".
 * Thread-safe.
 */
rt_status rt_xai_model_baseline(const rt_model *m, rt_batch **out, rt_err *err);

/*
 * Handles one :explain body against m: a :predict body ("instances" or
 * "inputs", "signature_name") plus Vertex AI's optional
 * "explanationSpecOverride": {"parameters": {"sampledShapleyAttribution":
 * {"pathCount"}, "integratedGradientsAttribution": {"stepCount"},
 * "exactShapleyAttribution": {}, "topK", "outputIndices"}, "metadata":
 * {"inputs": {NAME: {"inputBaselines": [v, ...]}}, "outputs": {"probabilities" |
 * "logits" | "predictions": {}}}}. Appends Vertex's ExplainResponse:
 * {"explanations": [{"attributions": [{...}]}], "predictions": ...} whose
 * predictions are the bytes :predict answers for the same body. Several
 * inputBaselines (the same number k for every input that gives several; one
 * value is in every baseline): the attributions and baseline output are the
 * means over the k baselines, as Vertex AI's. Errors as
 * rt_json_handle's, and RT_ERR_INVALID naming the override's key
 * ("explanationSpecOverride.parameters.sampledShapleyAttribution.pathCount:
 * 0 is out of range [1, 50]"). *evals (may be NULL) gets the model rows
 * evaluated. c: one thread at a time.
 */
rt_status rt_json_explain(const rt_model *m, const char *body, size_t len,
                          const rt_json_params *p, rt_ctx *c, rt_buf *out, size_t *evals,
                          rt_err *err);

/*
 * What an :explain body will cost m, before running it: *rows gets the model
 * rows rt_json_explain would evaluate when every raw input differs from the
 * baseline (an upper bound; an input equal to its baseline costs nothing):
 * per instance, the two ends plus 2^d coalitions (exact enumeration; d + 1
 * past RT_XAI_EXACT_MAX for a model additive in its inputs; none for
 * TreeSHAP), pathCount x (d + 1) (sampled Shapley), or 2 x (stepCount + 1)
 * (integrated gradients, forward and backward), d the model's raw inputs;
 * times the baselines and the instances, which are counted, not read. Reads the
 * explanationSpecOverride as rt_json_explain does; a body it refuses is an
 * error here too (rt_json_explain gives the answer). c: scratch, one thread
 * at a time.
 */
rt_status rt_json_explain_rows(const rt_model *m, const char *body, size_t len,
                               const rt_json_params *p, rt_ctx *c, size_t *rows, rt_err *err);

/* ------------------------------------------------ metrics (rt_metrics.c) */

/* The head's loss over n rows as TF's SUM_OVER_BATCH_SIZE reduces it:
 * sum_i w_i l_i / n, with l_i the example's loss (regression: the squared
 * error averaged over its ld values). labels: a class id per row, or ld
 * values per row for regression; weights: one per row, NULL for all 1.
 * When dlogits is not NULL it receives d (sum_i w_i l_i) / d logits scaled
 * by 1/denom (denom = n for the batch mean). Thread-safe. */
double rt_head_loss(Predictd__HeadType head, size_t ld, const float *logits,
                    const float *labels, const float *weights, size_t n, size_t denom,
                    float *dlogits);

#define RT_METRIC_NAME_MAX 64

typedef struct rt_metric {
    char name[RT_METRIC_NAME_MAX];
    double value;
} rt_metric;

#define RT_MAX_METRICS 24

typedef struct rt_metric_list {
    size_t n;
    rt_metric m[RT_MAX_METRICS];
} rt_metric_list;

typedef struct rt_metrics rt_metrics;

/* head: HEAD_BINARY, HEAD_MULTI_CLASS or HEAD_REGRESSION; n: the number of
 * classes of a classifier, the label_dimension of a regressor (0 = 1). */
rt_metrics *rt_metrics_new(Predictd__HeadType head, size_t n);
void rt_metrics_free(rt_metrics *mt);
/* Adds a batch: logits (n x logits_dim), labels (class ids, or
 * label_dimension values per row for regression), example weights (NULL:
 * all 1; estimator.weight_column) and the batch's loss. Every metric but
 * "loss" (the mean of the batch losses) is weighted as TF weights it. */
rt_status rt_metrics_add(rt_metrics *mt, const float *logits, const float *labels,
                         const float *weights, size_t n, double batch_loss);
/*
 * Binary: accuracy, accuracy_baseline, auc (exact ROC AUC, ties averaged),
 * auc_precision_recall (exact, step-wise average precision), average_loss,
 * label/mean, loss, precision, prediction/mean, recall, global_step.
 * Multi-class: accuracy, average_loss, loss, global_step.
 * Regression: average_loss, label/mean, loss, prediction/mean, global_step.
 * Names sorted as TensorFlow prints them.
 */
rt_status rt_metrics_result(const rt_metrics *mt, int64_t global_step, rt_metric_list *out);
/* The examples added so far: per example its score (binary: the logistic;
 * multi-class: the predicted class id; regression: the prediction's first
 * value), its label (first value) and, when weights is not NULL, its weight
 * (*weights NULL when no batch had weights); pointers valid until the next
 * rt_metrics_add. Returns the count. */
size_t rt_metrics_data(const rt_metrics *mt, const float **scores, const float **labels,
                       const float **weights);
/* Value of metric `name` or NAN. */
double rt_metric_get(const rt_metric_list *l, const char *name);
/* "accuracy = 0.85, auc = 0.9, ..." appended to b; and the JSON object. */
int rt_metrics_format(const rt_metric_list *l, rt_buf *b);
int rt_metrics_json(const rt_metric_list *l, rt_buf *b);

/* Exact ROC AUC of scores against 0/1 labels (ties count one half), each
 * example counting its weight (NULL: all 1). */
double rt_auc_roc(const float *scores, const float *labels, const float *weights, size_t n);
/* Exact area under the precision-recall curve (average precision),
 * weighted likewise. */
double rt_auc_pr(const float *scores, const float *labels, const float *weights, size_t n);

/* One example for the curves: its score, label and weight. */
typedef struct rt_scored {
    float s, y; /* score; label as 0 or 1 */
    float w;    /* example weight (1 without weights) */
} rt_scored;

/* scores, labels (positive when > 0.5) and weights (NULL: all 1) paired and
 * sorted by score, highest first (the order the AUCs and an evaluation's
 * ROC and precision-recall curves walk); malloc'd (free it), NULL when out
 * of memory. Thread-safe. */
rt_scored *rt_sorted_desc(const float *scores, const float *labels, const float *weights,
                          size_t n);


/* ------------------------------------------- data statistics (rt_stats*.c) */

/*
 * Statistics of a data set's raw inputs as TensorFlow Data Validation's
 * DatasetFeatureStatistics defines them (docs/data-validation.md): per
 * numeric input count, missing, NaN, zeros, min, max, mean, std, median, a
 * 10-bucket equal-width histogram and a 10-bucket quantiles histogram; per
 * string input count, missing, unique, average length and the value counts
 * (the most frequent RT_STATS_RANK_MAX values, the rest counted together).
 * The trainer writes them into every export (statistics.json, covered by
 * model.pb's statistics_crc32c); predict-model stats/validate/show and
 * predictd's monitoring read them. An rt_stats is immutable once made.
 */
#define RT_STATS_BUCKETS 10      /* standard and quantiles histograms */
#define RT_STATS_RANK_MAX 1000   /* values kept in a rank histogram (TFDV's default) */
#define RT_STATS_TOP 20          /* top_values (TFDV's num_top_values) */

typedef enum { RT_STATS_INT = 0, RT_STATS_FLOAT = 1, RT_STATS_STRING = 2 } rt_stats_type;

typedef struct rt_stats_bucket {
    double low, high; /* [low, high); the last finite bucket includes high; low == high:
                         a point bucket (all values equal, or +-Infinity) */
    double count;
} rt_stats_bucket;

typedef struct rt_stats_hist {
    uint64_t num_nan;
    size_t n;
    rt_stats_bucket *b; /* [n] */
} rt_stats_hist;

typedef struct rt_stats_value {
    char *value; /* NUL-terminated (values with a NUL byte are cut there) */
    uint64_t count;
} rt_stats_value;

typedef struct rt_feature_stats {
    char *name;
    rt_stats_type type;
    uint64_t num_non_missing, num_missing;
    /* numeric (type INT or FLOAT); min..median over the non-NaN values */
    uint64_t num_nan, num_zeros;
    double min, max, mean, std_dev, median;
    double quantiles[RT_STATS_BUCKETS + 1]; /* cut points 0, 0.1, ..., 1 */
    rt_stats_hist standard, quantile_hist;
    int approximate;  /* 1: more distinct values than the exact table holds: median,
                         quantiles and histogram counts are within 1% of the value */
    /* strings (type STRING) */
    uint64_t unique;
    int unique_at_least; /* 1: too many distinct values to count: unique is a lower bound */
    double avg_length;
    size_t n_values;
    rt_stats_value *values; /* [n_values] by count, highest first (ties by value) */
    uint64_t other_count;   /* values beyond the list */
} rt_feature_stats;

typedef struct rt_stats {
    uint64_t num_examples;
    size_t n;
    rt_feature_stats *f; /* [n] */
} rt_stats;

void rt_stats_free(rt_stats *s);
/* The feature called name, or NULL. */
const rt_feature_stats *rt_stats_find(const rt_stats *s, const char *name);
/* Baselines (predict-model explain, :explain): a numeric input's median, a
 * string input's most frequent value. RT_ERR_NOTFOUND when s has no such
 * input, no value of it or it is of the other kind. *value lives as long as s. */
rt_status rt_stats_median(const rt_stats *s, const char *name, double *median);
rt_status rt_stats_top_value(const rt_stats *s, const char *name, const char **value);
/* The training statistics of an export (statistics.json), or NULL when the
 * export has none (written before they existed). Lives as long as m. */
const rt_stats *rt_model_stats(const rt_model *m);

/* An accumulator of statistics over rows of raw inputs; one thread at a time.
 * Exact integer counts; min, max, histograms and quantiles exact and
 * independent of the order of the rows while a numeric input has at most
 * RT_STATS_EXACT_MAX distinct values (mean and std then too: summed from the
 * sorted distinct values); past that the input switches to a logarithmic
 * sketch (1% relative accuracy) and mean/std are running sums (order may move
 * their last bits). */
#define RT_STATS_EXACT_MAX 65536
typedef struct rt_stats_acc rt_stats_acc;
/* An accumulator for the raw inputs of def's serving signature (the inputs
 * the feature columns read, rt_graph_num_inputs order). NULL: out of memory. */
rt_stats_acc *rt_stats_acc_new(const Predictd__ModelDef *def);
/* One accumulator for explicitly named inputs (types as rt_stats_type). */
rt_stats_acc *rt_stats_acc_new_named(const char *const *names, const rt_stats_type *types,
                                     size_t n);
void rt_stats_acc_free(rt_stats_acc *a);
size_t rt_stats_acc_inputs(const rt_stats_acc *a);
/* Input i's raw column index in def (rt_stats_acc_new), its name and type. */
long rt_stats_acc_column(const rt_stats_acc *a, size_t i);
const char *rt_stats_acc_name(const rt_stats_acc *a, size_t i);
rt_stats_type rt_stats_acc_type(const rt_stats_acc *a, size_t i);
/* One example (call once per row), then its cells: a missing cell, a number
 * (numeric inputs; NaN and +-Infinity counted as such), a string (string
 * inputs; trimmed by the caller as the model would). -1 out of memory. */
int rt_stats_acc_example(rt_stats_acc *a);
int rt_stats_acc_missing(rt_stats_acc *a, size_t i);
int rt_stats_acc_number(rt_stats_acc *a, size_t i, double v);
int rt_stats_acc_string(rt_stats_acc *a, size_t i, const char *s, size_t len);
/* A CSV cell of input i as the trainer reads it: empty or blank = missing;
 * numeric inputs through rt_raw_number (a bad number: RT_ERR_INVALID). */
rt_status rt_stats_acc_cell(rt_stats_acc *a, size_t i, const char *s, size_t len, int trim,
                            rt_err *err);
/* Serialized state (to merge another process's, MPI ranks), and merging one in
 * (same inputs; RT_ERR_FORMAT on bytes that are not). The merged result is
 * the same as one accumulator over both sets of rows (see above for mean/std). */
rt_status rt_stats_acc_save(const rt_stats_acc *a, rt_buf *out);
rt_status rt_stats_acc_merge(rt_stats_acc *a, const void *bytes, size_t len, rt_err *err);
/* The statistics so far (*out malloc-owned: rt_stats_free). */
rt_status rt_stats_acc_finish(const rt_stats_acc *a, rt_stats **out, rt_err *err);

/* statistics.json: TFDV's DatasetFeatureStatisticsList in proto3 JSON
 * (field names as statistics.proto spells them; our extras in custom_stats). */
rt_status rt_stats_write_json(const rt_stats *s, const char *dataset_name, rt_buf *out);
rt_status rt_stats_parse_json(const char *text, size_t len, rt_stats **out, rt_err *err);

/* Distances as TFDV's anomalies/metrics.cc defines them. L-infinity: the
 * largest absolute difference of the two value distributions, each
 * normalised by its own total; *which (may be NULL) the value where it is
 * (a value of a or b, or "" when both are empty). Jensen-Shannon divergence
 * (log base 2, capped at 1): the histograms aligned on the union of their
 * boundaries with counts spread evenly in a bucket, point and infinite
 * buckets and NaN as buckets of their own. -1 when a histogram is empty. */
double rt_stats_linf(const rt_stats_value *a, size_t na, const rt_stats_value *b, size_t nb,
                     const char **which);
double rt_stats_linf_counts(const char *const *names, const double *pa, const double *pb,
                            size_t n, const char **which);
double rt_stats_jsd(const rt_stats_hist *a, const rt_stats_hist *b);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_RT_H */
