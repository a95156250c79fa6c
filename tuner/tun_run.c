/*
 * tun_run.c — the study loop: suggests trials, runs each as a child process
 * (its own process group, output in DIR/<id>/trial.log), keeps at most
 * maxParallelTrials running, records each as it ends (trials.jsonl), applies
 * the median stopping rule to running trials, and on SIGINT/SIGTERM stops the
 * running trials and leaves a study that resumes from trials.jsonl.
 *
 * Under mpirun (a tun_comm of 2 ranks or more) rank 0 runs the same loop but
 * sends each trial to an idle rank instead of forking it; tun_worker, on
 * every other rank, runs it as its child with the same launch code and
 * sends back its reports while it runs and its record when it ends.
 *
 * Signals are blocked and taken synchronously with sigtimedwait(), so there
 * is no handler and no global flag.
 */
#include "tun.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 200
#define TERM_GRACE_S 10.0
#define ERR_LINE_MAX 300          /* bytes of a failed trial's reason line */
#define ERR_SCAN_BYTES (16u << 20) /* how much of trial.log is searched for it */

typedef struct running {
    pid_t pid;         /* the child; 0 for a trial on another rank */
    int rank;          /* distributed: the rank running it (>= 1) */
    tun_trial t;
    char dir[4096];
    char metric_file[4200];
    int stopping;      /* 1: the median stopping rule sent SIGTERM */
    double kill_at;    /* monotonic time for SIGKILL after SIGTERM */
} running;

/* A fresh, empty trial directory (an interrupted trial's leftovers go). */
static rt_status fresh_dir(const char *dir, rt_err *err)
{
    if (rt_file_rmtree_at(AT_FDCWD, dir) != 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot remove: %s", dir, strerror(errno));
    if (mkdir(dir, 0755) != 0)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", dir, strerror(errno));
    return RT_OK;
}

/* The search space as JSON: a resumed study must have the same one. */
static cJSON *space_json(const tun_spec *s)
{
    static const char *const types[] = {"DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE"};
    static const char *const scales[] = {"NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE",
                                         "UNIT_REVERSE_LOG_SCALE"};
    static const char *const algos[] = {"ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "goal", s->maximize ? "MAXIMIZE" : "MINIMIZE");
    cJSON_AddStringToObject(o, "hyperparameterMetricTag", s->metric_tag);
    cJSON_AddStringToObject(o, "algorithm", algos[s->algorithm]);
    cJSON *arr = cJSON_AddArrayToObject(o, "params");
    for (size_t i = 0; arr && i < s->n_params; i++) {
        const tun_param *p = &s->params[i];
        cJSON *q = cJSON_CreateObject();
        cJSON_AddStringToObject(q, "parameterName", p->name);
        cJSON_AddStringToObject(q, "type", types[p->type]);
        cJSON_AddStringToObject(q, "scaleType", scales[p->scale]);
        if (p->type == TUN_DOUBLE || p->type == TUN_INTEGER) {
            cJSON_AddNumberToObject(q, "minValue", p->min);
            cJSON_AddNumberToObject(q, "maxValue", p->max);
        } else if (p->type == TUN_DISCRETE) {
            cJSON_AddItemToObject(q, "discreteValues",
                                  cJSON_CreateDoubleArray(p->values, (int)p->n_values));
        } else {
            cJSON_AddItemToObject(q, "categoricalValues",
                                  cJSON_CreateStringArray((const char *const *)p->cats,
                                                          (int)p->n_values));
        }
        cJSON_AddItemToArray(arr, q);
    }
    return o;
}

/* Writes DIR/study_config.json on the first run; refuses a different search
 * space on a resumed one. */
static rt_status check_space(const tun_spec *s, const char *dir, rt_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/study_config.json", dir);
    rt_status st = RT_OK;
    cJSON *mine = space_json(s), *old = NULL;
    char *text = mine ? cJSON_Print(mine) : NULL;
    if (!text) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    char *prev;
    st = rt_file_read(AT_FDCWD, path, 64u << 20, 0, &prev, NULL, err);
    if (st != RT_ERR_NOTFOUND) {
        if (st)
            goto out;
        old = cJSON_Parse(prev);
        free(prev);
        if (!old || !cJSON_Compare(old, mine, 1))
            st = rt_err_set(err, RT_ERR_INVALID,
                            "%s: this directory holds a study with another goal, metric, "
                            "algorithm or parameters; use a new --job-dir", path);
        goto out;
    }
    st = rt_file_write(path, text, strlen(text), err);
out:
    free(text);
    cJSON_Delete(mine);
    cJSON_Delete(old);
    return st;
}

/* Whether a log line says something went wrong: an ERROR/FATAL level, or a
 * word programs use for it. INFO and DEBUG lines never do (metric names). */
static int error_like(const char *line)
{
    static const char *const words[] = {"error", "fatal", "unknown", "cannot", "can't",
                                        "fail", "invalid", "not found", "no such", "denied",
                                        "refused", "exception", "traceback", "usage:",
                                        "out of memory", "killed", "abort", "must "};
    while (*line == ' ' || *line == '\t')
        line++;
    if (strncmp(line, "INFO", 4) == 0 || strncmp(line, "DEBUG", 5) == 0 ||
        strncmp(line, "I0", 2) == 0 || strncmp(line, "I1", 2) == 0)
        return 0;
    char low[512];
    size_t k = 0;
    for (; line[k] && k + 1 < sizeof low; k++)
        low[k] = (char)(line[k] >= 'A' && line[k] <= 'Z' ? line[k] - 'A' + 'a' : line[k]);
    low[k] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(low, words[i]))
            return 1;
    return 0;
}

/* The line of a trial's log that says why it failed (malloc'd, at most
 * ERR_LINE_MAX bytes, no newline), or NULL when the log is empty: the first
 * line that reads as an error (for a Python traceback, its last unindented
 * line: the exception), else the last non-empty line. Reads at most the
 * first ERR_SCAN_BYTES of the log; the whole log stays in trial.log. */
static char *log_reason(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trial.log", dir);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char line[ERR_LINE_MAX + 1], last[ERR_LINE_MAX + 1] = "", pick[ERR_LINE_MAX + 1] = "";
    int traceback = 0;
    size_t scanned = 0;
    while (scanned < ERR_SCAN_BYTES && fgets(line, sizeof line, fp)) {
        size_t len = strlen(line);
        scanned += len;
        int whole = len > 0 && line[len - 1] == '\n';
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!whole) { /* a longer line: keep its start, skip the rest */
            int c;
            while ((c = fgetc(fp)) != EOF && c != '\n')
                scanned++;
        }
        for (size_t i = 0; i < len; i++) /* one line of text in the record */
            if ((unsigned char)line[i] < 0x20)
                line[i] = ' ';
        if (!len)
            continue;
        snprintf(last, sizeof last, "%s", line);
        if (traceback) {
            if (line[0] != ' ' && line[0] != '\t')
                snprintf(pick, sizeof pick, "%s", line); /* the exception */
            continue;
        }
        if (!pick[0] && error_like(line)) {
            snprintf(pick, sizeof pick, "%s", line);
            traceback = strncmp(line, "Traceback", 9) == 0;
            if (!traceback)
                break;
        }
    }
    fclose(fp);
    const char *r = pick[0] ? pick : last;
    return r[0] ? strdup(r) : NULL;
}

static pid_t launch(const tun_spec *s, const tun_run_params *p, running *r,
                    const sigset_t *oldmask, rt_err *err)
{
    size_t nc = 0;
    while (p->command[nc])
        nc++;
    char **argv = calloc(nc + 3 + s->n_params + 1, sizeof *argv);
    char *flags = calloc(s->n_params, 4096);
    if (!argv || !flags) {
        free(argv);
        free(flags);
        rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        return -1;
    }
    size_t a = 0;
    for (size_t i = 0; i < nc; i++)
        argv[a++] = p->command[i];
    argv[a++] = "--job-dir";
    argv[a++] = r->dir;
    for (size_t i = 0; i < s->n_params; i++) {
        char val[4000];
        char *f = flags + i * 4096;
        tun_format_value(&s->params[i], r->t.v[i], val, sizeof val);
        snprintf(f, 4096, "--%s=%s", s->params[i].name, val);
        argv[a++] = f;
    }
    char logp[4200], idbuf[32];
    snprintf(logp, sizeof logp, "%s/trial.log", r->dir);
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)r->t.id);
    int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rt_err_set(err, RT_ERR_IO, "%s: %s", logp, strerror(errno));
        free(argv);
        free(flags);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* the child: own process group (Ctrl-C reaches the tuner, which stops
         * its trials), the caller's signal mask, output to trial.log; and
         * SIGTERM when the tuner dies (kill -9, a dead rank under mpirun), so
         * no trial outlives its study unseen */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127); /* the tuner died before prctl took effect */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        rt_mpi_forget_launcher(); /* under mpirun: a trial is not another rank */
        setenv("CLOUD_ML_HP_METRIC_FILE", r->metric_file, 1);
        setenv("CLOUD_ML_HP_METRIC_TAG", s->metric_tag, 1);
        setenv("CLOUD_ML_TRIAL_ID", idbuf, 1);
        execvp(argv[0], argv);
        dprintf(2, "predict-tune: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int e = errno;
    close(fd);
    free(argv);
    free(flags);
    if (pid < 0) {
        rt_err_set(err, RT_ERR_IO, "fork: %s", strerror(e));
        return -1;
    }
    setpgid(pid, pid); /* also from the parent: no race with an early kill */
    return pid;
}

static void progress(const tun_spec *s, const tun_trial *t, int64_t limit)
{
    printf("trial %lld/%lld %s", (long long)t->id, (long long)limit,
           t->state == TUN_SUCCEEDED ? (t->stopped_early ? "STOPPED_EARLY" : "SUCCEEDED")
                                     : "FAILED");
    if (t->state == TUN_FAILED && t->error)
        printf(" (%s)", t->error);
    if (t->has_objective)
        printf(" %s=%.6g step=%lld", s->metric_tag, t->objective, (long long)t->step);
    for (size_t i = 0; i < s->n_params; i++) {
        char buf[64];
        if (s->params[i].type == TUN_DOUBLE)
            snprintf(buf, sizeof buf, "%.6g", t->v[i]);
        else
            tun_format_value(&s->params[i], t->v[i], buf, sizeof buf);
        printf(" %s=%s", s->params[i].name, buf);
    }
    printf(" (%.1f s)\n", t->end_time - t->start_time);
    fflush(stdout);
}

/* A child ended: its trial record from the exit status and metrics. */
static void finish(const tun_spec *s, running *r, int status)
{
    tun_trial *t = &r->t;
    rt_err e;
    e.msg[0] = '\0';
    t->end_time = rt_time_seconds(1);
    int found = tun_read_metrics(r->metric_file, r->dir, s->metric_tag, 1, t, &e) == RT_OK;
    char why[RT_ERR_MAX + 64] = "";
    if (r->stopping) {
        t->stopped_early = 1;
        t->state = found ? TUN_SUCCEEDED : TUN_FAILED;
        if (!found)
            snprintf(why, sizeof why, "stopped early before reporting %s", s->metric_tag);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        t->state = found ? TUN_SUCCEEDED : TUN_FAILED;
        if (!found)
            snprintf(why, sizeof why, "exited 0 but %s", e.msg);
    } else {
        t->state = TUN_FAILED;
        if (WIFEXITED(status))
            snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(status));
        else
            snprintf(why, sizeof why, "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
    if (t->state == TUN_FAILED) {
        /* one line: the reason and the log's line that says why; the whole
         * log stays in DIR/<id>/trial.log */
        char *reason = log_reason(r->dir);
        rt_buf b;
        rt_buf_init(&b);
        if (reason)
            rt_buf_printf(&b, "%s: %s", why, reason);
        else
            rt_buf_printf(&b, "%s (trial.log is empty)", why);
        free(reason);
        free(t->error);
        t->error = b.data;
    }
}

static int id_taken(int64_t id, const tun_trial *trials, size_t n, const running *run, size_t nr)
{
    for (size_t i = 0; i < n; i++)
        if (trials[i].id == id)
            return 1;
    for (size_t i = 0; i < nr; i++)
        if (run[i].t.id == id)
            return 1;
    return 0;
}

/* Known points for the search: the previous job's and this study's
 * succeeded trials, the running ones as pending. */
static rt_status suggest_next(const tun_spec *s, const tun_run_params *p, int64_t index,
                              const tun_trial *prior, size_t n_prior, const tun_trial *trials,
                              size_t n, const running *run, size_t nr, double *out, rt_err *err)
{
    tun_point *pts = calloc(n_prior + n + nr + 1, sizeof *pts);
    if (!pts)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n_prior + n; i++) {
        const tun_trial *t = i < n_prior ? &prior[i] : &trials[i - n_prior];
        if (t->state == TUN_SUCCEEDED && t->has_objective)
            pts[k++] = (tun_point){t->v, t->objective, 1};
    }
    for (size_t i = 0; i < nr; i++)
        pts[k++] = (tun_point){run[i].t.v, 0, 0};
    rt_status st = tun_suggest(s, p->seed, index, pts, k, out, err);
    free(pts);
    return st;
}

/* SIGTERM to every running trial's group, SIGKILL after the grace time. */
static void stop_all(running *run, size_t nr)
{
    for (size_t i = 0; i < nr; i++)
        kill(-run[i].pid, SIGTERM);
    double deadline = rt_time_seconds(0) + TERM_GRACE_S;
    size_t left = nr;
    while (left > 0) {
        int status;
        pid_t w = waitpid(-1, &status, WNOHANG);
        if (w > 0) {
            for (size_t i = 0; i < nr; i++)
                if (run[i].pid == w) {
                    run[i].pid = 0;
                    left--;
                }
            continue;
        }
        if (w < 0 && errno == ECHILD)
            break;
        if (rt_time_seconds(0) > deadline) {
            for (size_t i = 0; i < nr; i++)
                if (run[i].pid > 0)
                    kill(-run[i].pid, SIGKILL);
            deadline = rt_time_seconds(0) + 3600;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------ ranks */

/* Messages between rank 0 and the trial ranks (payloads: a trial as its
 * trials.jsonl line, or nothing). */
enum {
    MSG_RUN = 1,      /* 0 -> r: run this trial (id, hyperparameters) */
    MSG_STOP = 2,     /* 0 -> r: stop trial <id> (payload: the id as text) */
    MSG_QUIT = 3,     /* 0 -> r: the study is over */
    MSG_DONE = 4,     /* r -> 0: the trial's record */
    MSG_REPORT = 5,   /* r -> 0: the running trial with its reports so far */
    MSG_SIGNAL = 6,   /* r -> 0: SIGINT/SIGTERM reached rank r */
};

static rt_status send_trial(const tun_comm *c, int to, int tag, const tun_spec *s,
                            const tun_trial *t, rt_err *err)
{
    rt_buf b;
    rt_buf_init(&b);
    rt_status st = tun_trial_to_json(s, t, &b);
    if (st == RT_OK && c->send(c->ctx, to, tag, b.data, b.len + 1) != 0)
        st = rt_err_set(err, RT_ERR_IO, "rank %d: cannot send to rank %d", c->rank, to);
    else if (st)
        rt_err_set(err, st, "out of memory");
    rt_buf_free(&b);
    return st;
}

static rt_status send_text(const tun_comm *c, int to, int tag, const char *text, rt_err *err)
{
    if (c->send(c->ctx, to, tag, text, strlen(text) + 1) != 0)
        return rt_err_set(err, RT_ERR_IO, "rank %d: cannot send to rank %d", c->rank, to);
    return RT_OK;
}

/* The next message, if one waits: 1 with *buf (malloc'd, NUL-terminated),
 * *from and *tag; 0 none; -1 a transport failure (err set). */
static int next_msg(const tun_comm *c, int *from, int *tag, char **buf, rt_err *err)
{
    size_t len;
    int got = c->poll(c->ctx, from, tag, &len);
    if (got <= 0) {
        if (got < 0)
            rt_err_set(err, RT_ERR_IO, "rank %d: MPI probe failed", c->rank);
        return got;
    }
    *buf = malloc(len + 1);
    if (!*buf || c->recv(c->ctx, *from, *tag, *buf, len) != 0) {
        free(*buf);
        *buf = NULL;
        rt_err_set(err, RT_ERR_IO, "rank %d: cannot receive from rank %d", c->rank, *from);
        return -1;
    }
    (*buf)[len] = '\0';
    return 1;
}

static void nap_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------ the study */

/* Moves a finished trial into the study: trials.jsonl rewritten, its line
 * printed. t is emptied (the study owns its contents). */
static rt_status record(const tun_spec *s, const tun_run_params *p, const char *tpath,
                        tun_trial **trials, size_t *n, tun_trial *t, int64_t limit,
                        rt_err *err)
{
    tun_trial *grown = realloc(*trials, (*n + 1) * sizeof *grown);
    if (!grown)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    *trials = grown;
    grown[(*n)++] = *t;
    memset(t, 0, sizeof *t);
    rt_status st = tun_trials_save(s, tpath, grown, *n, err);
    if (st == RT_OK && !p->quiet)
        progress(s, &grown[*n - 1], limit);
    return st;
}

/* Frees slot i's trial and fills the hole with the last slot. */
static void drop_slot(running *run, size_t *nr, size_t i)
{
    tun_trial_free(&run[i].t, 0);
    run[i] = run[--*nr];
    if (i != *nr)
        memset(&run[*nr], 0, sizeof run[*nr]);
}

/* Distributed stop: every rank running a trial is told to stop it, and its
 * record (not kept: the trial runs again on resume) is awaited, so no trial
 * outlives the study. Ranks always answer: they SIGKILL a trial that
 * ignores SIGTERM for TERM_GRACE_S. */
static void stop_remote(const tun_comm *c, running *run, size_t nr)
{
    rt_err e;
    size_t left = 0;
    for (size_t i = 0; i < nr; i++) {
        if (run[i].rank <= 0)
            continue;
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)run[i].t.id);
        if (send_text(c, run[i].rank, MSG_STOP, id, &e) == RT_OK)
            left++;
        else
            run[i].rank = -run[i].rank;
    }
    while (left > 0) {
        int from, tag;
        char *buf = NULL;
        int got = next_msg(c, &from, &tag, &buf, &e);
        if (got < 0)
            break;
        if (got == 0) {
            nap_ms(20);
            continue;
        }
        free(buf);
        if (tag != MSG_DONE)
            continue;
        for (size_t i = 0; i < nr; i++)
            if (run[i].rank == from) {
                run[i].rank = -from;
                left--;
            }
    }
}

/* One study's state while tun_run runs it. */
typedef struct study {
    const tun_spec *s;
    const tun_run_params *p;
    const tun_comm *comm; /* NULL: trials are this process's children */
    tun_trial *trials;    /* recorded, in trials.jsonl's order */
    size_t n;
    tun_trial *prior; /* resumePreviousJobId's trials */
    size_t n_prior;
    running *run; /* max_par slots, nr of them in use */
    size_t nr;
    char *busy; /* distributed: busy[rank] while it runs a trial */
    int64_t max_par, limit, max_failed;
    char tpath[4200], spath[4200];
    rt_stops stops; /* SIGINT, SIGTERM and SIGCHLD blocked, taken with sigtimedwait */
    int masked;
    int *interrupted;
} study;

/* resumePreviousJobId: a sibling study directory's trials seed the search. */
static rt_status load_prior(study *y, rt_err *err)
{
    char ppath[8400], dir[4096];
    snprintf(dir, sizeof dir, "%s", y->p->job_dir);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    snprintf(ppath, sizeof ppath, "%s%s/trials.jsonl", dir, y->s->resume_job);
    if (access(ppath, R_OK) != 0)
        return rt_err_set(err, RT_ERR_NOTFOUND, "resumePreviousJobId: %s: %s", ppath,
                          strerror(errno));
    return tun_trials_load(y->s, ppath, &y->prior, &y->n_prior, err);
}

/* The study's slots, its directory checked against the search space, the
 * trials recorded so far and the prior job's; signals blocked. */
static rt_status study_open(study *y, rt_err *err)
{
    const tun_spec *s = y->s;
    const tun_run_params *p = y->p;
    y->comm = p->comm && p->comm->size > 1 ? p->comm : NULL;
    y->max_par = s->max_parallel > 64 ? 64 : s->max_parallel;
    if (y->comm && y->max_par > y->comm->size - 1)
        y->max_par = y->comm->size - 1; /* one trial per rank at a time */
    y->run = calloc((size_t)y->max_par, sizeof *y->run);
    y->busy = y->comm ? calloc((size_t)y->comm->size, 1) : NULL;
    if (!y->run || (y->comm && !y->busy))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_status st;
    if ((st = rt_file_mkdirs(p->job_dir, err)) || (st = check_space(s, p->job_dir, err)))
        return st;
    snprintf(y->tpath, sizeof y->tpath, "%s/trials.jsonl", p->job_dir);
    snprintf(y->spath, sizeof y->spath, "%s/study.json", p->job_dir);
    if ((st = tun_trials_load(s, y->tpath, &y->trials, &y->n, err)))
        return st;
    if (s->resume_job && (st = load_prior(y, err)))
        return st;
    if (y->n > 0 && !p->quiet)
        printf("resuming: %zu trials recorded in %s\n", y->n, y->tpath);
    if (y->comm && !p->quiet)
        printf("distributed: rank 0 runs the study, ranks 1-%d the trials (%lld at a time)\n",
               y->comm->size - 1, (long long)y->max_par);
    y->limit = s->max_trials;
    if (s->algorithm == TUN_GRID && tun_grid_size(s) < y->limit)
        y->limit = tun_grid_size(s);
    y->max_failed = s->max_failed > 0 ? s->max_failed : s->max_trials;
    rt_signal_stops_block(&y->stops, SIGCHLD);
    y->masked = 1;
    return RT_OK;
}

/* Starts the next trial in slot nr: its id and hyperparameters, then a
 * child here or a message to the lowest idle rank. */
static rt_status start_trial(study *y, rt_err *err)
{
    const tun_spec *s = y->s;
    running *r = &y->run[y->nr];
    memset(r, 0, sizeof *r);
    int64_t id = 1;
    while (id_taken(id, y->trials, y->n, y->run, y->nr))
        id++;
    r->t.id = id;
    if (!(r->t.v = calloc(s->n_params, sizeof *r->t.v)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = suggest_next(s, y->p, id - 1, y->prior, y->n_prior, y->trials, y->n, y->run,
                                y->nr, r->t.v, err);
    if (st)
        return st;
    snprintf(r->dir, sizeof r->dir, "%s/%lld", y->p->job_dir, (long long)id);
    snprintf(r->metric_file, sizeof r->metric_file, "%s/hypertune.metrics", r->dir);
    r->t.start_time = rt_time_seconds(1);
    if (y->comm) {
        /* the lowest idle rank runs it, in its own DIR/<id> */
        int to = 1;
        while (to < y->comm->size && y->busy[to])
            to++;
        r->t.state = TUN_FAILED; /* not run yet */
        if ((st = send_trial(y->comm, to, MSG_RUN, s, &r->t, err)))
            return st;
        y->busy[to] = 1;
        r->rank = to;
        y->nr++;
        return RT_OK;
    }
    if ((st = fresh_dir(r->dir, err)))
        return st;
    if ((r->pid = launch(s, y->p, r, &y->stops.old_mask, err)) < 0)
        return RT_ERR_IO;
    y->nr++;
    return RT_OK;
}

/* As many trials as the limits allow (none once maxFailedTrials failed). */
static rt_status start_trials(study *y, rt_err *err)
{
    int64_t failed = 0;
    for (size_t i = 0; i < y->n; i++)
        failed += y->trials[i].state == TUN_FAILED;
    if (failed >= y->max_failed)
        return RT_OK;
    rt_status st = RT_OK;
    while (!st && (int64_t)y->nr < y->max_par && (int64_t)(y->n + y->nr) < y->limit)
        st = start_trial(y, err);
    return st;
}

/* Children that ended are recorded. */
static rt_status reap_children(study *y, rt_err *err)
{
    int status;
    pid_t w;
    while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < y->nr; i++) {
            if (y->run[i].pid != w)
                continue;
            finish(y->s, &y->run[i], status);
            rt_status st =
                record(y->s, y->p, y->tpath, &y->trials, &y->n, &y->run[i].t, y->limit, err);
            drop_slot(y->run, &y->nr, i);
            if (st)
                return st;
            break;
        }
    }
    return RT_OK;
}

/* Distributed: the ranks' messages that wait: a trial's reports so far, its
 * record, or a signal that reached a rank (*interrupted set). */
static rt_status take_messages(study *y, rt_err *err)
{
    for (int from, tag, got;;) {
        char *buf = NULL;
        if ((got = next_msg(y->comm, &from, &tag, &buf, err)) <= 0)
            return got < 0 ? RT_ERR_IO : RT_OK;
        if (tag == MSG_SIGNAL) {
            free(buf);
            if (!y->p->quiet)
                fprintf(stderr,
                        "predict-tune: a signal reached rank %d: stopping %zu "
                        "running trial(s); run the same command again to resume\n",
                        from, y->nr);
            *y->interrupted = 1;
            return RT_OK;
        }
        size_t i = 0;
        while (i < y->nr && y->run[i].rank != from)
            i++;
        tun_trial t;
        rt_err e;
        if (i == y->nr || (tag != MSG_DONE && tag != MSG_REPORT) ||
            tun_trial_from_json(y->s, buf, &t, &e) != RT_OK || t.id != y->run[i].t.id) {
            free(buf);
            continue; /* stale (a report racing the record) */
        }
        free(buf);
        if (tag == MSG_REPORT) { /* the reports so far, for early stopping */
            tun_trial_free(&y->run[i].t, 0);
            y->run[i].t = t;
            continue;
        }
        t.rank = from;
        y->busy[from] = 0;
        rt_status st = record(y->s, y->p, y->tpath, &y->trials, &y->n, &t, y->limit, err);
        tun_trial_free(&t, 0);
        drop_slot(y->run, &y->nr, i);
        if (st)
            return st;
    }
}

/* The median stopping rule: running trials behind the median get SIGTERM
 * (here) or MSG_STOP (a rank); SIGKILL after the grace time. */
static rt_status stop_early(study *y, rt_err *err)
{
    const tun_spec *s = y->s;
    for (size_t i = 0; i < y->nr; i++) {
        running *r = &y->run[i];
        if (r->stopping) {
            if (!y->comm && rt_time_seconds(0) > r->kill_at) {
                kill(-r->pid, SIGKILL);
                r->kill_at = rt_time_seconds(0) + 3600;
            }
            continue;
        }
        int have = y->comm ? r->t.n_curve > 0
                           : tun_read_metrics(r->metric_file, r->dir, s->metric_tag, 0, &r->t,
                                              NULL) == RT_OK;
        if (!have || !tun_median_stop(s, &r->t, y->trials, y->n))
            continue;
        r->stopping = 1;
        r->kill_at = rt_time_seconds(0) + TERM_GRACE_S;
        if (!y->comm) {
            kill(-r->pid, SIGTERM);
            continue;
        }
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)r->t.id);
        rt_status st = send_text(y->comm, r->rank, MSG_STOP, id, err);
        if (st)
            return st;
    }
    return RT_OK;
}

/* The loop: start trials, wait for a signal or a child a poll interval,
 * take what ended. RT_OK with nothing running: the study is done; an error
 * or *interrupted: the caller stops the running trials. */
static rt_status study_loop(study *y, rt_err *err)
{
    rt_status st;
    for (;;) {
        if ((st = start_trials(y, err)))
            return st;
        if (y->nr == 0)
            return RT_OK;
        struct timespec ts = {0, (y->comm ? 20 : POLL_MS) * 1000000L};
        int sig = sigtimedwait(&y->stops.mask, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            if (!y->p->quiet)
                fprintf(stderr,
                        "predict-tune: %s: stopping %zu running trial(s); run the same "
                        "command again to resume\n",
                        sig == SIGINT ? "interrupted" : "terminated", y->nr);
            *y->interrupted = 1;
            return RT_OK;
        }
        if (!y->comm && (st = reap_children(y, err)))
            return st;
        if (y->comm && ((st = take_messages(y, err)) || *y->interrupted))
            return st;
        if (y->s->early_stopping && (st = stop_early(y, err)))
            return st;
    }
}

/* study.json and the table of the best trials; st is the run's status so
 * far (a failed run keeps its own error). */
static rt_status study_report(study *y, int64_t *succeeded, rt_status st, rt_err *err)
{
    for (size_t i = 0; i < y->n; i++)
        *succeeded += y->trials[i].state == TUN_SUCCEEDED;
    if (y->n > 0 || !st) {
        rt_err e2;
        rt_status s2 = tun_study_save(y->s, y->spath, y->trials, y->n, st ? &e2 : err);
        if (!st)
            st = s2;
    }
    if (!y->p->quiet && y->n > 0) {
        printf("\nbest trials (%lld succeeded of %zu; %s):\n", (long long)*succeeded, y->n,
               y->spath);
        tun_print_table(y->s, y->trials, y->n, 10, stdout);
        fflush(stdout);
    }
    return st;
}

/* Every rank is told to return, the signal mask restored, memory freed. */
static void study_close(study *y)
{
    for (int r = 1; y->comm && r < y->comm->size; r++) {
        rt_err e3;
        send_text(y->comm, r, MSG_QUIT, "", &e3); /* every rank returns, whatever happened */
    }
    if (y->masked)
        rt_signal_stops_restore(&y->stops);
    /* every slot: one being filled when an error stopped the loop holds values too */
    for (int64_t i = 0; y->run && i < y->max_par; i++)
        tun_trial_free(&y->run[i].t, 0);
    for (size_t i = 0; i < y->n; i++)
        tun_trial_free(&y->trials[i], 0);
    for (size_t i = 0; i < y->n_prior; i++)
        tun_trial_free(&y->prior[i], 0);
    free(y->trials);
    free(y->prior);
    free(y->run);
    free(y->busy);
}

rt_status tun_run(const tun_spec *s, const tun_run_params *p, int64_t *succeeded, int *interrupted,
                  rt_err *err)
{
    study y;
    memset(&y, 0, sizeof y);
    y.s = s;
    y.p = p;
    y.interrupted = interrupted;
    *succeeded = 0;
    *interrupted = 0;
    rt_status st = study_open(&y, err);
    if (st == RT_OK) {
        st = study_loop(&y, err);
        if (st || *interrupted) {
            if (y.comm)
                stop_remote(y.comm, y.run, y.nr);
            else
                stop_all(y.run, y.nr);
        }
        st = study_report(&y, succeeded, st, err);
    }
    study_close(&y);
    return st;
}

/* ------------------------------------------------------------ a trial rank */

rt_status tun_worker(const tun_spec *s, const tun_run_params *p, int *interrupted,
                     rt_err *err)
{
    const tun_comm *c = p->comm;
    running r;
    memset(&r, 0, sizeof r);
    rt_stops stops; /* SIGINT, SIGTERM and SIGCHLD blocked, taken with sigtimedwait */
    rt_status st = RT_OK;
    size_t reported = 0;
    double next_read = 0;
    *interrupted = 0;
    rt_signal_stops_block(&stops, SIGCHLD);
    for (int quit = 0; !quit || r.pid > 0;) {
        struct timespec ts = {0, 20 * 1000000L};
        int sig = sigtimedwait(&stops.mask, NULL, &ts);
        if ((sig == SIGINT || sig == SIGTERM) && !*interrupted) {
            /* the whole study stops: rank 0 is told; this rank's trial ends */
            *interrupted = 1;
            rt_err e;
            send_text(c, 0, MSG_SIGNAL, "", &e);
            if (r.pid > 0 && !r.kill_at) {
                kill(-r.pid, SIGTERM);
                r.kill_at = rt_time_seconds(0) + TERM_GRACE_S;
            }
        }
        int status;
        if (r.pid > 0 && waitpid(r.pid, &status, WNOHANG) == r.pid) {
            finish(s, &r, status);
            r.t.rank = c->rank;
            r.pid = 0;
            st = send_trial(c, 0, MSG_DONE, s, &r.t, err);
            tun_trial_free(&r.t, 0);
            if (st)
                break;
        }
        if (r.pid > 0 && r.kill_at && rt_time_seconds(0) > r.kill_at) {
            kill(-r.pid, SIGKILL);
            r.kill_at = rt_time_seconds(0) + 3600;
        }
        if (r.pid > 0 && s->early_stopping && rt_time_seconds(0) >= next_read) {
            /* the reports so far, for rank 0's median stopping rule */
            next_read = rt_time_seconds(0) + POLL_MS / 1000.0;
            if (tun_read_metrics(r.metric_file, r.dir, s->metric_tag, 0, &r.t, NULL) == RT_OK &&
                r.t.n_curve != reported) {
                reported = r.t.n_curve;
                if ((st = send_trial(c, 0, MSG_REPORT, s, &r.t, err)))
                    break;
            }
        }
        int from, tag, got;
        char *buf = NULL;
        if ((got = next_msg(c, &from, &tag, &buf, err)) < 0) {
            st = RT_ERR_IO;
            break;
        }
        if (got == 0)
            continue;
        if (tag == MSG_QUIT) {
            quit = 1;
            if (r.pid > 0 && !r.kill_at) {
                kill(-r.pid, SIGTERM);
                r.kill_at = rt_time_seconds(0) + TERM_GRACE_S;
            }
        } else if (tag == MSG_STOP && r.pid > 0 && atoll(buf) == r.t.id) {
            r.stopping = !*interrupted; /* early stopping; an interrupt is not recorded */
            if (!r.kill_at) {
                kill(-r.pid, SIGTERM);
                r.kill_at = rt_time_seconds(0) + TERM_GRACE_S;
            }
        } else if (tag == MSG_RUN && r.pid == 0) {
            memset(&r, 0, sizeof r);
            reported = 0;
            next_read = 0;
            rt_err e;
            if (tun_trial_from_json(s, buf, &r.t, &e) != RT_OK) {
                st = rt_err_set(err, RT_ERR_FORMAT, "rank %d: a bad trial from rank 0: %s",
                                c->rank, e.msg);
                free(buf);
                break;
            }
            r.t.state = TUN_FAILED;
            r.t.start_time = rt_time_seconds(1);
            snprintf(r.dir, sizeof r.dir, "%s/%lld", p->job_dir, (long long)r.t.id);
            snprintf(r.metric_file, sizeof r.metric_file, "%s/hypertune.metrics", r.dir);
            if ((st = rt_file_mkdirs(p->job_dir, err)) || (st = fresh_dir(r.dir, err)) ||
                (r.pid = launch(s, p, &r, &stops.old_mask, err)) < 0) {
                /* this trial fails, the rank goes on */
                r.pid = 0;
                r.t.end_time = rt_time_seconds(1);
                free(r.t.error);
                r.t.error = strdup(err->msg);
                r.t.rank = c->rank;
                st = send_trial(c, 0, MSG_DONE, s, &r.t, err);
                tun_trial_free(&r.t, 0);
                if (st) {
                    free(buf);
                    break;
                }
            }
        }
        free(buf);
    }
    if (r.pid > 0) { /* only after a transport failure */
        kill(-r.pid, SIGKILL);
        waitpid(r.pid, NULL, 0);
    }
    tun_trial_free(&r.t, 0);
    rt_signal_stops_restore(&stops);
    return st;
}
