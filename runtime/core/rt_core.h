/*
 * rt_core.h — the runtime's bottom layer (runtime/core/): what every program
 * of predictd uses and nothing about models. Status codes and error buffers,
 * cgroup limits, the MPI launcher, signals, byte buffers and hashes
 * (FarmHash, CRC-32C), files (atomic writes, mkdir -p), the clock, the random
 * generator, JSON settings with path-named errors and the settings tables.
 *
 * May use: libc and cJSON only (no protobuf, no OpenBLAS): predict-tune links
 * this layer alone.
 *
 * Conventions (docs/design.md, section 2): every fallible function returns an
 * rt_status (0 ok, negative error) and explains input errors in a caller's
 * rt_err (may be NULL). Objects are opaque with new/free pairs; free functions
 * accept NULL. Nothing here exits or asserts on input.
 */
#ifndef PREDICTD_RT_CORE_H
#define PREDICTD_RT_CORE_H

#include <pthread.h> /* rt_time_cond_init */
#include <signal.h>  /* rt_stops */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h> /* rt_time_deadline */

/* On every function that returns a status: a caller that drops it is a
 * compile error under -Werror (curl's WARN_UNUSED_RESULT). */
#if defined(__GNUC__)
#define RT_WUR __attribute__((warn_unused_result))
#else
#define RT_WUR
#endif
/* Debug-build invariants (SQLite's assert, ALWAYS and NEVER): what the code
 * relies on, checked when the build defines PREDICTD_DEBUG (make asan, make
 * tsan), free otherwise. A failed check prints "predictd: invariant failed:
 * EXPR (FILE:LINE)" and aborts. RT_ALWAYS(x) / RT_NEVER(x) are x itself in a
 * release build, so the condition still guards the code after it. Never on
 * input from outside: that gets an error, not an abort. */
#ifdef PREDICTD_DEBUG
#define RT_ASSERT(x) ((x) ? (void)0 : rt_err_invariant_failed(#x, __FILE__, __LINE__))
#define RT_ALWAYS(x) ((x) ? 1 : (rt_err_invariant_failed(#x, __FILE__, __LINE__), 0))
#define RT_NEVER(x) ((x) ? (rt_err_invariant_failed(#x, __FILE__, __LINE__), 1) : 0)
#else
#define RT_ASSERT(x) ((void)0)
#define RT_ALWAYS(x) (x)
#define RT_NEVER(x) (x)
#endif
_Noreturn void rt_err_invariant_failed(const char *expr, const char *file, int line);

/* Drops a status on purpose where it cannot matter (cleanup after another
 * error, a default that cannot fail): each call says why beside it. A cast
 * to void would not silence gcc's warn_unused_result. */
static inline void rt_ignore(int status)
{
    (void)status;
}

struct cJSON; /* cJSON's tree, for the settings getters (rt_cfg.c) */

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
const char *rt_err_status_str(rt_status s);

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

/* ------------------------------------------------ MPI launcher (rt_mpi.c) */

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
 * (rt_signal_stops_pending / rt_signal_stops_take, or sigtimedwait on mask): what
 * rt_signal_stops_block changed, for rt_signal_stops_restore. */
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
void rt_signal_stops_block(rt_stops *s, int also);
/* The actions and mask from before rt_signal_stops_block; a pending also signal is
 * discarded first (a pending SIGINT/SIGTERM is not: take it first unless it
 * should act as before). */
void rt_signal_stops_restore(const rt_stops *s);
/* SIGINT or SIGTERM pending for the process or the thread, else 0. */
int rt_signal_stops_pending(void);
/* Takes a pending SIGINT/SIGTERM off the queue without waiting; returns it,
 * or 0. */
int rt_signal_stops_take(void);

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
int rt_buf_grow_slow(void *arrp, size_t *cap, size_t need, size_t elem);
/* The check inline (the hot paths grow per value), the realloc out of line. */
static inline int rt_grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
    return need <= *cap ? 0 : rt_buf_grow_slow(arrp, cap, need, elem);
}

/* qsort(3) comparators for plain numbers, ascending (rt_cmp.c). */
int rt_cmp_i64(const void *a, const void *b);
int rt_cmp_u64(const void *a, const void *b);
int rt_cmp_int(const void *a, const void *b);

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
int rt_buf_hex_digit(char c);
/* Writes code point cp (at most 0x10FFFF) as UTF-8 into o, which has room
 * for 4 bytes; returns the bytes written. Pure. */
size_t rt_buf_utf8_put(char *o, uint32_t cp);
/* Appends a float as JSON: shortest text that reads back to the same float,
 * always with a fraction or an exponent (42.0, never 42: TF Serving writes
 * floats so, and typed clients rely on it); NaN and infinities as NaN,
 * Infinity, -Infinity (TF Serving's tokens). */
int rt_buf_json_float(rt_buf *b, float v);
int rt_buf_json_double(rt_buf *b, double v);

/* ------------------------------------------------------ files (rt_file.c) */

/* rt_file_read flags. */
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
RT_WUR rt_status rt_file_read(int dfd, const char *path, size_t max, int flags, char **data,
                       size_t *len, rt_err *err);

/* Writes len bytes of data to path atomically: a temp file beside it
 * (PATH.tmp-PID), fsync, rename(2) over path, fsync of the directory, so a
 * reader or a crash sees the old file or the new one, never half of it. An
 * existing file's mode is kept (else 0644). Errors name the path (the temp
 * file's, for a failed write); on error the temp file is gone. Thread-safe. */
RT_WUR rt_status rt_file_write(const char *path, const void *data, size_t len, rt_err *err);
/* rt_file_write with the temp file named PATH + tag + PID (tag NULL or "":
 * ".tmp-"), for a program that finds its own killed runs' leftovers. */
RT_WUR rt_status rt_file_write_tag(const char *path, const char *tag, const void *data, size_t len,
                            rt_err *err);
/* Writes all len bytes to fd (EINTR and short writes retried). Errors name
 * name: "NAME: write: ...". */
RT_WUR rt_status rt_file_write_fd(int fd, const void *data, size_t len, const char *name,
                                  rt_err *err);
/* rename(2) from over to, then fsync of to's directory, so the rename
 * survives a crash. Errors: "rename FROM to TO: ...", "DIR: fsync: ...". */
RT_WUR rt_status rt_file_rename_durable(const char *from, const char *to, rt_err *err);
/* fsync of directory dir (a file system that cannot sync directories,
 * EINVAL, is not an error). */
RT_WUR rt_status rt_file_fsync_dir(const char *dir, rt_err *err);
/* mkdir -p dir (mode 0755, less the umask): each missing component in turn;
 * existing ones are fine. Errors: RT_ERR_INVALID (empty), RT_ERR_IO
 * ("mkdir PATH: ..." naming the component that failed), RT_ERR_NOMEM. */
RT_WUR rt_status rt_file_mkdirs(const char *dir, rt_err *err);
/* rm -rf name, relative to directory descriptor dfd (or AT_FDCWD): a file,
 * or a directory and all below it (32 levels at most; symbolic links are
 * removed, never followed). A missing name is fine. 0, or -1 with errno. */
int rt_file_rmtree_at(int dfd, const char *name);

/* Seconds as a double: wall 0, CLOCK_MONOTONIC (for intervals); wall 1,
 * CLOCK_REALTIME (since the epoch). Thread-safe. */
double rt_time_seconds(int wall);

/* The monotonic clock in whole milliseconds / nanoseconds (deadlines,
 * timeouts, latencies): the same clock as rt_time_seconds(0). */
int64_t rt_time_now_ms(void);
int64_t rt_time_now_ns(void);
/* Initializes cv (free with pthread_cond_destroy) for timed waits on that
 * clock: pthread_cond_timedwait's deadline is CLOCK_MONOTONIC, so a change
 * of the wall clock moves no timeout. */
void rt_time_cond_init(pthread_cond_t *cv);
/* *ts = the monotonic clock ns (>= 0) from now, as pthread_cond_timedwait
 * takes a deadline on such a cv (ns 0: the clock now, for comparing with
 * deadlines so made). */
void rt_time_deadline(struct timespec *ts, int64_t ns);

/* FarmHash Fingerprint64 (farmhashna::Hash64), as TensorFlow's
 * tf.strings.to_hash_bucket_fast and hashed feature columns use it. */
uint64_t rt_hash_fingerprint64(const void *data, size_t len);
/* TensorFlow's FingerprintCat64: combine two fingerprints (crossed columns). */
uint64_t rt_hash_fingerprint_cat64(uint64_t fp1, uint64_t fp2);
/* MurmurHash3's 64-bit finaliser (fmix64): spreads x's bits over the word
 * (hash-table slots, sampling draws). A bijection; rt_hash_mix64(0) is 0. */
uint64_t rt_hash_mix64(uint64_t x);
/* CRC-32C (Castagnoli) of data, continuing from crc (start with 0). */
uint32_t rt_hash_crc32c(uint32_t crc, const void *data, size_t len);

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
RT_WUR rt_status rt_cfg_parse_json(const char *text, size_t len, struct cJSON **out, rt_err *err);
/* Refuses obj unless an object, and its members named in neither allowed nor
 * extra (NULL-terminated lists; extra may be NULL) or given twice. */
RT_WUR rt_status rt_cfg_check_keys(const struct cJSON *obj, const char *path, const char *const *allowed,
                         const char *const *extra, rt_err *err);
RT_WUR rt_status rt_cfg_str(const struct cJSON *o, const char *path, const char *key, int flags,
                      const char **out, rt_err *err);
/* An integral number in [lo, hi]. */
RT_WUR rt_status rt_cfg_int(const struct cJSON *o, const char *path, const char *key, int flags,
                      int64_t lo, int64_t hi, int64_t *out, rt_err *err);
/* The same for a value already in hand (a list item: key may be "[3]"-less,
 * name it in path). */
RT_WUR rt_status rt_cfg_to_int(const struct cJSON *j, const char *path, const char *key, int64_t lo,
                     int64_t hi, int64_t *out, rt_err *err);
/* A finite number in [lo, hi]. */
RT_WUR rt_status rt_cfg_num(const struct cJSON *o, const char *path, const char *key, int flags,
                      double lo, double hi, double *out, rt_err *err);
RT_WUR rt_status rt_cfg_bool(const struct cJSON *o, const char *path, const char *key, int flags,
                       bool *out, rt_err *err);
RT_WUR rt_status rt_cfg_array(const struct cJSON *o, const char *path, const char *key, int flags,
                        const struct cJSON **out, rt_err *err);
RT_WUR rt_status rt_cfg_object(const struct cJSON *o, const char *path, const char *key, int flags,
                         const struct cJSON **out, rt_err *err);

/* "Did you mean" for a plain list of names (the tuner's config keys): the
 * name of names (n of them) nearest to name by the settings tables' own
 * rule (rt_settings.c: a typo — at most one edit per six letters, at least
 * one, a swap of neighbours one edit —, an abbreviation, or a name missing
 * a word), else NULL; NULL too when two are equally near. '-' and '_'
 * count as the same letter, so TensorFlow's --max_steps is one edit from
 * --max-steps. Names of 64 bytes or more never match. Returns a pointer
 * into names. Thread-safe. */
const char *rt_settings_nearest_name(const char *name, const char *const *names, size_t n);

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
RT_WUR rt_status rt_settings_defaults(const rt_setting *t, size_t n, void *obj, rt_err *err);
/* Frees the table's strings in obj (set to NULL). */
void rt_settings_free(const rt_setting *t, size_t n, void *obj);
/* dst's field of row i = src's, for each bit i of mask (strings copied). */
RT_WUR rt_status rt_settings_copy(const rt_setting *t, size_t n, uint64_t mask, void *dst,
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
RT_WUR rt_status rt_setting_json(const rt_setting *s, const struct cJSON *obj, const char *path,
                          void *dst, rt_err *err);
/* Reads the JSON object obj, the keys of section (NULL: rows without one):
 * obj must be an object; a key given twice, or neither a row's nor one of
 * extra (NULL-ended, may be NULL; the caller reads those), is refused
 * ("path.key: unknown key (did you mean K?)"); then every row's member. */
RT_WUR rt_status rt_settings_json(const rt_setting *t, size_t n, const struct cJSON *obj,
                           const char *path, const char *section, const char *const *extra,
                           void *dst, rt_err *err);
/* s's field of obj as a new JSON value (STR without a value: refused).
 * OUT: *out, cJSON_Delete it. */
RT_WUR rt_status rt_setting_to_json(const rt_setting *s, const void *obj, struct cJSON **out,
                             rt_err *err);
/* Reads a flag's text value (NULL: a bool flag alone) into dst; errors name
 * the flag: "--x: \"v\" is not an integer", "--x: 9 is out of range [0, 5]". */
RT_WUR rt_status rt_setting_text(const rt_setting *s, const char *val, void *dst, rt_err *err);

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
RT_WUR rt_status rt_settings_argv(const rt_argv *a, int argc, char **argv, void *dst, uint64_t *given,
                           int *next, rt_err *err);
/* An rt_argv.other for programs whose table has no --help row: takes
 * --help (no value) and sets *(bool *)ctx; 0 for any other flag. */
int rt_settings_argv_help(void *ctx, const char *name, size_t len, const char *eq, const char *next,
                 rt_err *err);
/* {"help", NULL}: the rt_argv.extra of a table read with rt_settings_argv_help, so
 * that "did you mean" can name --help too. */
extern const char *const rt_argv_help_names[];
/* For a program whose --help ends the reading (what follows is not looked
 * at): the argc to read, one past the first "-h" or "--help" before `stop`
 * (NULL: none, else e.g. "--"), or argc when there is none. */
int rt_settings_argv_help_end(int argc, char **argv, const char *stop);

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

/* ------------------------------------------------ rt_otlp.c: job spans */

/* OpenTelemetry spans of a batch program (predict-train): kept in memory
 * (at most RT_OTLP_SPANS, the rest counted as dropped) and sent as one
 * OTLP/HTTP JSON ExportTraceServiceRequest when flushed, to an http://
 * collector (POST {endpoint}); one trace per run, or the trace of the
 * TRACEPARENT environment variable (W3C traceparent, the OpenTelemetry
 * convention for a parent process's context), its spans then children of
 * that span. Not thread-safe: one thread's spans. */
#define RT_OTLP_SPANS 4096
typedef struct rt_otlp rt_otlp;
/* A tracer sending to endpoint as service (resource service.name).
 * RT_ERR_INVALID naming `what` (the flag) for a URL that is not
 * http://HOST[:PORT]/PATH. OUT: *out, free with rt_otlp_close. */
RT_WUR rt_status rt_otlp_open(const char *endpoint, const char *service, const char *what,
                              rt_otlp **out, rt_err *err);
/* Starts a span named name (copied, up to 47 bytes) now, a child of the
 * span parent (-1: the run's root: the TRACEPARENT span or none); returns
 * its handle, or -1 (NULL t, or full: dropped). */
int rt_otlp_begin(rt_otlp *t, const char *name, int parent);
/* An integer attribute of span s (key copied, up to 39 bytes; at most 4). */
void rt_otlp_attr(rt_otlp *t, int s, const char *key, long long value);
/* Ends span s now; error marks it STATUS_CODE_ERROR. */
void rt_otlp_end(rt_otlp *t, int s, bool error);
/* POSTs the ended spans (timeouts of 2 s on each step) and forgets them;
 * RT_ERR_IO naming the endpoint when the collector did not take them. */
RT_WUR rt_status rt_otlp_flush(rt_otlp *t, rt_err *err);
void rt_otlp_close(rt_otlp *t);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_RT_CORE_H */
