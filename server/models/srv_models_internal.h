/*
 * srv_models_internal.h — the model manager's shared state, for
 * srv_models.c (the table, lookups, status, readiness, metrics) and
 * srv_loader.c (base path scans, loading, warm-up, the inotify watcher).
 * Not part of the server's public header (srv.h).
 *
 * Locking: m->mu guards the model table, every record's state and every
 * mmodel field; m->poll_mu serialises scans (and guards warm_ctx). The
 * watcher's own table of watches is its thread's alone.
 */
#ifndef PREDICTD_SRV_MODELS_INTERNAL_H
#define PREDICTD_SRV_MODELS_INTERNAL_H

/* The build defines PREDICTD_MODULE_<folder> for each source (Makefile). */
#if !defined(PREDICTD_MODULE_server) && !defined(PREDICTD_MODULE_tests)
#error "srv_models_internal.h is server's own; other modules include srv.h (docs/design.md)"
#endif

#include "srv.h"

#include <pthread.h>
#include <stdatomic.h>

struct srv_version {
    atomic_int refs;
    int64_t version;
    srv_state state;          /* guarded by the manager's mutex */
    rt_status err_code;       /* END after a failure: why */
    char error[RT_ERR_MAX];
    uint64_t sig;             /* files' signature when loading was tried */
    rt_model *model;          /* set once AVAILABLE; closed on the last release */
    struct srv_monitor *monitor; /* skew/drift monitoring (conf.monitor), or NULL; set with
                                    model, freed with the version */
    double load_seconds;
};

typedef struct mmodel {
    srv_model_conf conf; /* deep copy */
    srv_version **vers;  /* ascending by version */
    size_t n_vers, cap;
    char scan_error[RT_ERR_MAX]; /* the base path could not be read: why ("" when it can) */
    char hint[RT_ERR_MAX];       /* no versions under the base path: TF Serving's hint and
                                    what was found there ("" when versions were found) */
    uint64_t *ignored;           /* fingerprints of the names the last scan ignored, */
    size_t n_ignored;            /* sorted, so that each is logged once */
    bool required;               /* readiness waits for it (see srv_manager_ready) */
    bool not_serving_logged;
    bool dirty;                  /* the watcher saw its base path change: scan it soon */
    bool polled;                 /* its base path has no inotify watch: scan it every tick */
} mmodel;

struct srv_manager {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    mmodel **models;         /* in config order */
    mmodel **by_name;        /* the same, sorted by name (srv_mm_find) */
    mmodel **by_path;        /* the same, sorted by base path (srv_mm_by_path) */
    size_t n_models;
    bool stop, started;
    bool wake;               /* scan every model (start, reload, SIGHUP, lost events) */
    bool dirty;              /* some model is dirty */
    size_t rescan_at;        /* the safety rescan's next model (index into models) */
    uint64_t scans;          /* base path scans so far (predictd_base_path_scans_total) */
    bool applied;            /* a config was applied: later ones are reloads */
    int poll_seconds;
    pthread_t thread;
    pthread_t watcher;       /* inotify on the base paths */
    bool watcher_started;
    bool watch_ready;        /* the watcher's first sync is done (or it gave up) */
    bool watching;           /* inotify works: models without a watch are marked polled
                                (without it every model is polled) */
    uint64_t watch_gen;      /* bumped when the set of base paths may have changed */
    int watch_efd;           /* eventfd that wakes the watcher (-1 none) */
    pthread_mutex_t poll_mu; /* one poll at a time; guards warm_ctx */
    rt_ctx *warm_ctx;
    atomic_bool warmup;      /* enable_model_warmup of the config applied last */
    uint64_t reload_generation; /* reload attempts */
    int last_reload;            /* 0 none, 1 ok, -1 refused */
    char last_error[RT_ERR_MAX];
    const char *starting;    /* a listener not up yet (srv_manager_set_starting), or NULL */
    char config_file[4096];     /* --model_config_file as given, "" without one */
};

/* Helpers of srv_models.c; all but srv_dup_str need m->mu held. */
char *srv_dup_str(const char *s);
mmodel *srv_mm_find(const srv_manager *m, const char *name);
/* The record of version in mm (binary search), or NULL. */
srv_version *srv_mm_version(const mmodel *mm, int64_t version);
/* The models whose base path is base_path: *first points at n of them in
 * m->by_path (valid while m->mu is held). */
size_t srv_mm_by_path(const srv_manager *m, const char *base_path, mmodel ***first);
SRV_WUR bool srv_mm_insert(mmodel *mm, srv_version *v);
bool srv_mm_remove(mmodel *mm, srv_version *v);
/* True when a label or default_version of mm names version: it stays
 * loaded whatever the version policy says. */
bool srv_mm_pinned(const mmodel *mm, int64_t version);
/* Wakes the watcher thread (through the manager's eventfd; defined in
 * srv_models.c, which calls it at apply and stop, so that srv_models.c
 * calls neither thread's file) to follow a new config or stop; any
 * thread, m->mu not held. */
void srv_watcher_kick(srv_manager *m);
/* Starts the watcher thread (srv_watch.c); false if it could not start
 * (then every base path is polled). */
SRV_WUR bool srv_watcher_start(srv_manager *m);

#endif /* PREDICTD_SRV_MODELS_INTERNAL_H */
