/*
 * srv_watch.c — the model manager's watcher: one inotify watch per base
 * path, so that the loader scans a base path when it changes rather than
 * every base path at every tick. The cost of watching grows with the
 * changes, not with the number of models: an idle daemon with 10,000
 * models makes no system call here.
 *
 * - A base path that exists is watched itself (entries created, deleted,
 *   renamed in or out, attributes; the directory itself deleted or moved).
 *   An event marks the models of that base path dirty; the loader scans
 *   them at once.
 * - A base path that is missing (or not a directory, or unreadable) is
 *   represented by a watch on its nearest existing ancestor; any event
 *   there makes the watcher try again, and the base path counts as changed
 *   when it appears. A base path that is a symbolic link also keeps a
 *   watch on its parent, so that a link swapped to a new target is seen.
 * - A base path that cannot be watched is polled: the loader scans it at
 *   every tick (file_system_poll_wait_seconds), as before inotify. That is
 *   the case on network and FUSE file systems (NFS, CIFS/SMB, Ceph, 9p,
 *   AFS, FUSE: inotify sees only the changes made by this machine there)
 *   and when the user's watches run out (fs.inotify.max_user_watches: one
 *   WARN line says so and how many base paths are polled).
 * - Lost events (the kernel's queue overflowed) make the loader scan every
 *   model. The loader's slow safety rescan (srv_loader.c) covers what no
 *   event on a base path tells: files changed inside a version directory,
 *   a symbolic link swapped higher up the path.
 *
 * The watcher follows the config: srv_manager_apply bumps watch_gen and
 * kicks it (an eventfd); it then adds and removes watches for the base
 * paths that came and went. Its table of watches is its own thread's; it
 * takes the manager's mutex only to read the set of base paths and to mark
 * models dirty or polled.
 */
#include "srv_models_internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define WATCH_MASK                                                                             \
    (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF |        \
     IN_MOVE_SELF | IN_ONLYDIR)

#define DEBOUNCE_MS 10      /* quiet time that ends a burst of events */
#define DEBOUNCE_MAX_MS 200 /* a steady stream is published at least this often */

/* One base path (however many models share it). */
typedef struct watch {
    char *path;
    int wd;       /* a watch on the path itself; -1 none */
    int awd;      /* while it is missing, a watch on its nearest existing ancestor; for a
                     symbolic link, on its parent; -1 none */
    bool polled;  /* no watch possible: the loader scans it every tick */
    bool no_room; /* polled because the watches ran out (retried at the next sync) */
    bool redo;    /* an event says: watch it again */
    bool dirty;   /* an event says: scan it */
    bool publish; /* dirty or polled are to be told to the manager */
} watch;

typedef struct watcher {
    srv_manager *m;
    int fd;       /* inotify */
    watch *ws;    /* sorted by path */
    size_t n;
    bool warned;  /* the WARN line about the watch limit was written */
} watcher;

/* File systems where inotify does not see changes made by other machines
 * (statfs f_type; linux/magic.h and the file systems' own headers). */
static bool remote_fs(const char *path)
{
    static const unsigned long magic[] = {
        0x6969UL,     /* NFS */
        0x517BUL,     /* SMB */
        0xFF534D42UL, /* CIFS */
        0xFE534D42UL, /* SMB2 */
        0x00C36400UL, /* Ceph */
        0x01021997UL, /* 9p */
        0x5346414FUL, /* AFS */
        0x6B414653UL, /* kAFS */
        0x65735546UL, /* FUSE (sshfs, s3fs, gcsfuse, ...) */
        0x0BD00BD0UL, /* Lustre */
        0x47504653UL, /* GPFS */
        0x01161970UL, /* GFS2 */
        0x7461636FUL, /* OCFS2 */
    };
    struct statfs sf;
    if (statfs(path, &sf) != 0)
        return false;
    unsigned long t = (unsigned long)(uint32_t)sf.f_type;
    for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
        if (t == magic[i])
            return true;
    return false;
}

/* Removes watch wd unless another base path still uses it (two paths to
 * one directory share a watch descriptor). */
static void drop_wd(watcher *W, int wd)
{
    if (wd < 0)
        return;
    for (size_t i = 0; i < W->n; i++)
        if (W->ws[i].wd == wd || W->ws[i].awd == wd)
            return;
    inotify_rm_watch(W->fd, wd);
}

/* Adds a watch on dir (a base path or an ancestor): the descriptor, -1 when
 * dir cannot be watched (errno set; EXDEV: a remote file system). */
static int add_wd(watcher *W, const char *dir)
{
    if (remote_fs(dir)) {
        errno = EXDEV;
        return -1;
    }
    return inotify_add_watch(W->fd, dir, WATCH_MASK);
}

/* (Re)watches w: the path itself, or its nearest existing ancestor while it
 * is missing; polled when neither is possible. True when the path itself is
 * watched now and was not before (it appeared). */
static bool watch_one(watcher *W, watch *w)
{
    int old_wd = w->wd, old_awd = w->awd;
    bool was_watched = old_wd >= 0;
    w->wd = w->awd = -1;
    w->polled = w->no_room = false;
    w->redo = false;
    int wd = add_wd(W, w->path);
    int e = errno;
    if (wd >= 0) {
        w->wd = wd;
        struct stat sb;
        if (lstat(w->path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
            /* a link may be swapped to another target: watch where it lives */
            char parent[PATH_MAX];
            snprintf(parent, sizeof parent, "%s", w->path);
            char *slash = strrchr(parent, '/');
            if (slash == parent)
                slash[1] = '\0';
            else if (slash)
                *slash = '\0';
            else
                snprintf(parent, sizeof parent, ".");
            w->awd = add_wd(W, parent);
        }
    } else if (e == ENOSPC || e == EXDEV) {
        w->polled = true;
        w->no_room = e == ENOSPC;
    } else {
        /* missing, not a directory, or unreadable: watch the nearest
         * existing ancestor for it to appear */
        char anc[PATH_MAX];
        snprintf(anc, sizeof anc, "%s", w->path);
        for (;;) {
            char *slash = strrchr(anc, '/');
            if (!slash && !strcmp(anc, "."))
                break;
            if (!slash)
                snprintf(anc, sizeof anc, ".");
            else if (slash == anc && anc[1] == '\0')
                break; /* "/" itself failed */
            else if (slash == anc)
                anc[1] = '\0';
            else
                *slash = '\0';
            int awd = add_wd(W, anc);
            if (awd >= 0) {
                w->awd = awd;
                break;
            }
            if (errno == ENOSPC || errno == EXDEV) {
                w->polled = true;
                w->no_room = errno == ENOSPC;
                break;
            }
        }
        if (w->awd < 0 && !w->polled)
            w->polled = true; /* no ancestor could be watched */
    }
    if (old_wd >= 0 && old_wd != w->wd)
        drop_wd(W, old_wd);
    if (old_awd >= 0 && old_awd != w->awd)
        drop_wd(W, old_awd);
    w->publish = true;
    return w->wd >= 0 && !was_watched;
}

/* Tells the manager what changed: models to scan (dirty), models to poll;
 * all == true after a sync (every model's polled flag is set). */
static void publish(watcher *W, bool all)
{
    srv_manager *m = W->m;
    pthread_mutex_lock(&m->mu);
    bool any = false;
    for (size_t i = 0; i < W->n; i++) {
        watch *w = &W->ws[i];
        if (!w->publish && !all)
            continue;
        mmodel **mms;
        size_t k = srv_mm_by_path(m, w->path, &mms);
        for (size_t j = 0; j < k; j++) {
            mms[j]->polled = w->polled;
            mms[j]->dirty = mms[j]->dirty || w->dirty;
        }
        any = any || (w->dirty && k);
        w->dirty = w->publish = false;
    }
    m->dirty = m->dirty || any;
    m->watching = true;
    m->watch_ready = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

/* Brings the watches in line with the base paths of the config. New base
 * paths (after the first sync) count as changed: the loader's scan after a
 * reload may have run before their watch existed. */
static void sync_watches(watcher *W, bool first)
{
    srv_manager *m = W->m;
    pthread_mutex_lock(&m->mu);
    size_t nw = 0;
    char **want = calloc(m->n_models ? m->n_models : 1, sizeof *want);
    for (size_t i = 0; want && i < m->n_models; i++) {
        const char *p = m->by_path[i]->conf.base_path; /* sorted */
        if (nw && !strcmp(want[nw - 1], p))
            continue; /* two models, one base path: one watch */
        if ((want[nw] = srv_dup_str(p)) != NULL)
            nw++;
    }
    pthread_mutex_unlock(&m->mu);
    watch *next = calloc(nw ? nw : 1, sizeof *next);
    if (!want || !next) {
        for (size_t i = 0; i < nw; i++)
            free(want[i]);
        free(want);
        free(next);
        return;
    }
    /* Kept entries first (so that drop_wd sees them), then the new ones. */
    size_t j = 0, k = 0;
    bool *fresh = calloc(nw ? nw : 1, sizeof *fresh);
    for (size_t i = 0; i < nw; i++) {
        while (j < W->n && strcmp(W->ws[j].path, want[i]) < 0)
            j++;
        if (j < W->n && !strcmp(W->ws[j].path, want[i])) {
            next[k] = W->ws[j];
            W->ws[j].path = NULL; /* moved */
            j++;
            free(want[i]);
        } else {
            next[k].path = want[i];
            next[k].wd = next[k].awd = -1;
            if (fresh)
                fresh[k] = true;
        }
        k++;
    }
    free(want);
    watch *old = W->ws;
    size_t n_old = W->n;
    W->ws = next;
    W->n = k;
    for (size_t i = 0; i < n_old; i++)
        if (old[i].path) { /* gone from the config */
            int wd = old[i].wd, awd = old[i].awd;
            free(old[i].path);
            drop_wd(W, wd);
            drop_wd(W, awd);
        }
    free(old);
    size_t n_room = 0;
    for (size_t i = 0; i < W->n; i++) {
        watch *w = &W->ws[i];
        if ((fresh && fresh[i]) || w->no_room || (w->wd < 0 && w->awd < 0 && !w->polled)) {
            bool appeared = watch_one(W, w);
            w->dirty = !first && (appeared || (fresh && fresh[i]));
        }
        n_room += w->no_room;
    }
    free(fresh);
    if (n_room && !W->warned) {
        long limit = -1;
        FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "r");
        if (f) {
            if (fscanf(f, "%ld", &limit) != 1)
                limit = -1;
            fclose(f);
        }
        srv_log(SRV_LOG_WARN,
                "inotify: out of watches (fs.inotify.max_user_watches = %ld): %zu of %zu base "
                "paths are scanned every file_system_poll_wait_seconds instead of watched "
                "(raise the limit with sysctl fs.inotify.max_user_watches=N)",
                limit, n_room, W->n);
        W->warned = true;
    }
    publish(W, true);
}

/* Reads the pending events; marks the base paths they concern dirty or to
 * be watched again. Returns false when events were lost (a full scan is
 * due). */
static bool read_events(watcher *W)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    int *wds = NULL, *self = NULL;
    size_t n = 0, cap = 0;
    bool lost = false;
    ssize_t len;
    while ((len = read(W->fd, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < len;) {
            const struct inotify_event *ev = (const void *)(buf + off);
            off += (ssize_t)(sizeof *ev + ev->len);
            if (ev->mask & IN_Q_OVERFLOW) {
                lost = true;
                continue;
            }
            size_t wcap = cap, scap = cap;
            if (rt_grow(&wds, &wcap, n + 1, sizeof *wds) != 0 ||
                rt_grow(&self, &scap, n + 1, sizeof *self) != 0) {
                lost = true;
                continue;
            }
            cap = scap; /* == wcap */
            /* the directory itself went (deleted, moved, or the watch is gone):
             * the event names the wd, the flag says it must be watched again */
            wds[n] = ev->wd;
            self[n++] = (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) != 0;
        }
    }
    /* Event descriptors sorted, self-flags kept as a sorted set of their own. */
    size_t n_self = 0;
    for (size_t i = 0; i < n; i++)
        if (self[i])
            self[n_self++] = wds[i];
    if (n)
        qsort(wds, n, sizeof *wds, rt_cmp_int);
    if (n_self)
        qsort(self, n_self, sizeof *self, rt_cmp_int);
    for (size_t i = 0; n && i < W->n; i++) {
        watch *w = &W->ws[i];
        bool on_wd = w->wd >= 0 && bsearch(&w->wd, wds, n, sizeof *wds, rt_cmp_int);
        bool on_awd = w->awd >= 0 && bsearch(&w->awd, wds, n, sizeof *wds, rt_cmp_int);
        if (on_wd) {
            w->dirty = w->publish = true;
            if (n_self && bsearch(&w->wd, self, n_self, sizeof *self, rt_cmp_int)) {
                int wd = w->wd;
                w->wd = -1;
                drop_wd(W, wd); /* a moved directory would still be watched */
                w->redo = true;
            }
        }
        if (on_awd) {
            w->redo = true;
            if (n_self && bsearch(&w->awd, self, n_self, sizeof *self, rt_cmp_int)) {
                int awd = w->awd;
                w->awd = -1;
                drop_wd(W, awd);
            }
        }
    }
    for (size_t i = 0; i < W->n; i++) {
        watch *w = &W->ws[i];
        if (lost && w->wd < 0 && !w->polled)
            w->redo = true;
        if (w->redo) {
            /* it appeared, went away, or a link was swapped: scan it (a
             * base path still missing costs one failed opendir) */
            watch_one(W, w);
            w->dirty = true;
        }
    }
    free(wds);
    free(self);
    return !lost;
}

static void *watcher_main(void *arg)
{
    watcher *W = arg;
    srv_manager *m = W->m;
    uint64_t gen = 0;
    bool first = true;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        bool stop = m->stop, resync = first || m->watch_gen != gen;
        gen = m->watch_gen;
        pthread_mutex_unlock(&m->mu);
        if (stop)
            break;
        if (resync) {
            sync_watches(W, first);
            first = false;
        }
        struct pollfd p[2] = {{.fd = W->fd, .events = POLLIN}, {.fd = m->watch_efd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents & POLLIN) {
            uint64_t v;
            if (read(m->watch_efd, &v, sizeof v) < 0) {
                /* nothing to do: the counter was read by a previous round */
            }
        }
        if (p[0].revents & POLLIN) {
            /* A burst (a copy of many files, several directories made in a
             * row) is taken as one change: events are gathered until none
             * came for DEBOUNCE_MS (at most DEBOUNCE_MAX_MS). */
            bool complete = read_events(W);
            struct pollfd q = {.fd = W->fd, .events = POLLIN};
            for (int waited = 0; waited < DEBOUNCE_MAX_MS && poll(&q, 1, DEBOUNCE_MS) > 0;
                 waited += DEBOUNCE_MS)
                complete = read_events(W) && complete;
            publish(W, false);
            if (!complete) {
                srv_log(SRV_LOG_WARN, "inotify: events were lost (the queue overflowed); "
                                      "scanning every base path");
                srv_manager_wake(m);
            }
        }
    }
    for (size_t i = 0; i < W->n; i++)
        free(W->ws[i].path);
    free(W->ws);
    close(W->fd);
    free(W);
    return NULL;
}

bool srv_watcher_start(srv_manager *m)
{
    watcher *W = calloc(1, sizeof *W);
    if (!W)
        return false;
    W->m = m;
    W->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (W->fd < 0) {
        srv_log(SRV_LOG_WARN, "inotify: %s; every base path is scanned every "
                              "file_system_poll_wait_seconds",
                strerror(errno));
        free(W);
        return false;
    }
    m->watch_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m->watch_efd < 0 || pthread_create(&m->watcher, NULL, watcher_main, W) != 0) {
        srv_log(SRV_LOG_WARN, "inotify watcher: cannot start (%s); every base path is "
                              "scanned every file_system_poll_wait_seconds",
                strerror(errno));
        if (m->watch_efd >= 0)
            close(m->watch_efd);
        m->watch_efd = -1;
        close(W->fd);
        free(W);
        return false;
    }
    return true;
}
