/*
 * trn_dist.c — synchronous data-parallel training over a trn_comm
 * (docs/distributed.md): the step's example count, dense gradients summed
 * with an allreduce, sparse gradients (linear weights of categorical columns,
 * embeddings) exchanged as touched rows only, the model broadcast from rank
 * 0, replica checksums, the start-up comparison of specs and flags, and the
 * gathering of evaluation outputs on rank 0.
 *
 * A trn_dist exists only when there are two ranks or more; every function
 * accepts NULL and then does what one process needs (nothing). Every rank
 * adds the others' contributions in rank order, so all replicas compute the
 * same bits.
 */
#include "trn_internal.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct trn_dist {
    const trn_comm *c;
    float *dense;        /* packed dense gradients + the loss */
    size_t n_dense;
    unsigned char *send, *recv;
    size_t send_cap, recv_cap;
    size_t *lens;        /* [size] */
    double comm_s;       /* seconds inside collectives */
    uint64_t rounds;     /* gradient reductions */
    double last_exit;    /* when the previous step's exchange ended (0: none yet) */
    trn_dist_timing tm;  /* the steps' time split (trn_dist_stats) */
};

static rt_status comm_failed(rt_err *err, const char *what)
{
    return rt_err_set(err, RT_ERR_IO, "distributed: %s failed", what);
}

rt_status trn_dist_new(const trn_comm *c, trn_dist **out, rt_err *err)
{
    *out = NULL;
    if (!c || c->size <= 1)
        return RT_OK;
    trn_dist *d = calloc(1, sizeof *d);
    if (d)
        d->lens = calloc((size_t)c->size, sizeof *d->lens);
    if (!d || !d->lens) {
        free(d);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    d->c = c;
    *out = d;
    return RT_OK;
}

void trn_dist_free(trn_dist *d)
{
    if (!d)
        return;
    free(d->dense);
    free(d->send);
    free(d->recv);
    free(d->lens);
    free(d);
}

int trn_dist_rank(const trn_dist *d)
{
    return d ? d->c->rank : 0;
}

int trn_dist_size(const trn_dist *d)
{
    return d ? d->c->size : 1;
}

void trn_dist_slice(const trn_dist *d, size_t n, size_t *lo, size_t *hi)
{
    size_t r = (size_t)trn_dist_rank(d), k = (size_t)trn_dist_size(d);
    *lo = n * r / k;
    *hi = n * (r + 1) / k;
}

void trn_dist_stats(const trn_dist *d, trn_dist_timing *t)
{
    memset(t, 0, sizeof *t);
    if (!d)
        return;
    *t = d->tm;
    t->comm_s = d->comm_s;
    t->rounds = d->rounds;
}

void trn_dist_at_step(trn_dist *d, int64_t step)
{
    if (d && d->c->set_step)
        d->c->set_step(d->c->ctx, step);
}

rt_status trn_dist_sum(trn_dist *d, double *v, size_t n, rt_err *err)
{
    if (!d)
        return RT_OK;
    double t = rt_time_seconds(0);
    int rc = d->c->sum_f64(d->c->ctx, v, n);
    d->comm_s += rt_time_seconds(0) - t;
    return rc ? comm_failed(err, "allreduce") : RT_OK;
}

rt_status trn_dist_bcast(trn_dist *d, void *buf, size_t len, rt_err *err)
{
    if (!d)
        return RT_OK;
    double t = rt_time_seconds(0);
    int rc = d->c->bcast(d->c->ctx, buf, len, 0);
    d->comm_s += rt_time_seconds(0) - t;
    return rc ? comm_failed(err, "broadcast") : RT_OK;
}

rt_status trn_dist_max(trn_dist *d, double *v, size_t n, rt_err *err)
{
    if (!d)
        return RT_OK;
    size_t size = (size_t)d->c->size;
    double *all = malloc(size * n * sizeof *all);
    if (!all)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    double t = rt_time_seconds(0);
    int rc = d->c->allgather(d->c->ctx, v, n * sizeof *v, all);
    d->comm_s += rt_time_seconds(0) - t;
    if (rc == 0)
        for (size_t r = 0; r < size; r++)
            for (size_t i = 0; i < n; i++)
                if (all[r * n + i] > v[i])
                    v[i] = all[r * n + i];
    free(all);
    return rc ? comm_failed(err, "allgather") : RT_OK;
}

static int reserve(unsigned char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    unsigned char *q = realloc(*p, c);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Packs this rank's touched rows: per sparse tensor u32 count, u32 ids,
 * float rows. */
static rt_status pack_sparse(trn_dist *d, const trn_model *m, size_t *len, rt_err *err)
{
    size_t need = 0;
    for (size_t i = 0; i < m->n_params; i++) {
        const tparam *p = &m->p[i];
        if (p->sparse)
            need += 4 + p->n_touched * (4 + p->cols * sizeof(float));
    }
    if (reserve(&d->send, &d->send_cap, need ? need : 1))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory (%zu bytes of gradients)", need);
    unsigned char *w = d->send;
    for (size_t i = 0; i < m->n_params; i++) {
        const tparam *p = &m->p[i];
        if (!p->sparse)
            continue;
        uint32_t k = (uint32_t)p->n_touched;
        memcpy(w, &k, 4);
        w += 4;
        memcpy(w, p->touched, (size_t)k * 4);
        w += (size_t)k * 4;
        for (uint32_t t = 0; t < k; t++) {
            memcpy(w, p->grad + (uint64_t)p->touched[t] * p->cols, p->cols * sizeof(float));
            w += p->cols * sizeof(float);
        }
    }
    *len = need;
    return RT_OK;
}

/* Clears this rank's rows, then adds every rank's rows in rank order and
 * scales the sums. */
static rt_status unpack_sparse(trn_dist *d, trn_model *m, float scale, rt_err *err)
{
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        if (!p->sparse)
            continue;
        for (size_t t = 0; t < p->n_touched; t++) {
            memset(p->grad + (uint64_t)p->touched[t] * p->cols, 0, p->cols * sizeof(float));
            p->mark[p->touched[t]] = 0;
        }
        p->n_touched = 0;
    }
    const unsigned char *rd = d->recv;
    for (int r = 0; r < d->c->size; r++) {
        const unsigned char *end = rd + d->lens[r];
        if (d->lens[r] == 0) /* nothing from this rank */
            continue;
        for (size_t i = 0; i < m->n_params; i++) {
            tparam *p = &m->p[i];
            if (!p->sparse)
                continue;
            uint32_t k;
            if ((size_t)(end - rd) < 4)
                goto bad;
            memcpy(&k, rd, 4);
            rd += 4;
            size_t row_bytes = p->cols * sizeof(float);
            if ((size_t)(end - rd) / (4 + row_bytes) < k)
                goto bad;
            const unsigned char *ids = rd, *rows = rd + (size_t)k * 4;
            for (uint32_t t = 0; t < k; t++) {
                uint32_t row;
                memcpy(&row, ids + (size_t)t * 4, 4);
                if (row >= p->rows)
                    goto bad;
                if (!p->mark[row]) {
                    p->mark[row] = 1;
                    p->touched[p->n_touched++] = row;
                }
                float *g = p->grad + (uint64_t)row * p->cols;
                const unsigned char *src = rows + (size_t)t * row_bytes;
                for (uint64_t j = 0; j < p->cols; j++) {
                    float v;
                    memcpy(&v, src + j * sizeof(float), sizeof v);
                    g[j] += v;
                }
            }
            rd = rows + (size_t)k * row_bytes;
        }
        if (rd != end)
            goto bad;
    }
    for (size_t i = 0; scale != 1.0f && i < m->n_params; i++) {
        tparam *p = &m->p[i];
        for (size_t t = 0; p->sparse && t < p->n_touched; t++) {
            float *g = p->grad + (uint64_t)p->touched[t] * p->cols;
            for (uint64_t j = 0; j < p->cols; j++)
                g[j] *= scale;
        }
    }
    return RT_OK;
bad:
    return rt_err_set(err, RT_ERR_FORMAT, "distributed: a rank sent malformed sparse "
                      "gradients (ranks run different models?)");
}

rt_status trn_dist_step(trn_dist *d, trn_model *m, double *loss, size_t n_local,
                        float *flags, size_t n_flags, size_t *n_global, rt_err *err)
{
    if (!d)
        return RT_OK;
    trn_dist_at_step(d, m->step);
    size_t nr = (size_t)d->c->size, nd = 0;
    for (size_t i = 0; i < m->n_params; i++)
        if (!m->p[i].sparse)
            nd += m->p[i].count;
    /* [dense gradients][loss][examples][flags][message lengths, hi and lo
     * 16 bits: exact in floats][each rank's time since the previous step's
     * exchange, in us: who waits for whom] */
    size_t total_n = nd + 2 + n_flags + 3 * nr;
    if (total_n > d->n_dense) {
        float *f = realloc(d->dense, total_n * sizeof *f);
        if (!f)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        d->dense = f;
        d->n_dense = total_n;
    }
    size_t len = 0;
    rt_status st = pack_sparse(d, m, &len, err);
    if (st)
        return st;
    float *w = d->dense;
    for (size_t i = 0; i < m->n_params; i++) {
        const tparam *p = &m->p[i];
        if (!p->sparse) {
            memcpy(w, p->grad, p->count * sizeof(float));
            w += p->count;
        }
    }
    *w++ = (float)(m->loss_sum ? *loss : *loss * (double)n_local);
    *w++ = (float)n_local;
    memcpy(w, flags, n_flags * sizeof *flags);
    w += n_flags;
    memset(w, 0, 3 * nr * sizeof *w);
    w[2 * (size_t)d->c->rank] = (float)(len >> 16);
    w[2 * (size_t)d->c->rank + 1] = (float)(len & 0xffff);
    double t = rt_time_seconds(0);
    double own = d->last_exit > 0 ? t - d->last_exit : 0;
    w[2 * nr + (size_t)d->c->rank] = (float)(own * 1e6);
    int rc = d->c->sum_f32(d->c->ctx, d->dense, total_n);
    d->rounds++;
    if (rc) {
        d->comm_s += rt_time_seconds(0) - t;
        return comm_failed(err, "allreduce of the gradients");
    }
    const float *s = d->dense + nd;
    double loss_all = s[0];
    *n_global = (size_t)s[1];
    memcpy(flags, s + 2, n_flags * sizeof *flags);
    s += 2 + n_flags;
    size_t total = 0;
    double slowest = 0;
    for (size_t r = 0; r < nr; r++) {
        d->lens[r] = ((size_t)s[2 * r] << 16) + (size_t)s[2 * r + 1];
        total += d->lens[r];
        if (s[2 * nr + r] * 1e-6 > slowest)
            slowest = s[2 * nr + r] * 1e-6;
    }
    if (*n_global == 0) { /* no examples anywhere: not a step */
        d->comm_s += rt_time_seconds(0) - t;
        return RT_OK;
    }
    if (reserve(&d->recv, &d->recv_cap, total ? total : 1))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory (%zu bytes of gradients)", total);
    rc = d->c->allgatherv(d->c->ctx, d->send, len, d->recv, d->lens);
    double t_end = rt_time_seconds(0);
    d->comm_s += t_end - t;
    if (rc)
        return comm_failed(err, "allgatherv of the sparse gradients");
    if (d->last_exit > 0) { /* a whole step seen: split it */
        double in_comm = t_end - t, wait = slowest - own;
        wait = wait < 0 ? 0 : wait > in_comm ? in_comm : wait;
        d->tm.steps++;
        d->tm.compute_s += own;
        d->tm.slowest_s += slowest;
        d->tm.wait_s += wait;
        d->tm.exchange_s += in_comm - wait;
    }
    d->last_exit = t_end;
    /* the ranks' gradients are sums over their examples: the mean over the
     * global batch (loss_reduction SUM: the sum) */
    float scale = m->loss_sum ? 1.0f : (float)(1.0 / (double)*n_global);
    const float *g = d->dense;
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        if (p->sparse)
            continue;
        for (uint64_t k = 0; k < p->count; k++)
            p->grad[k] = g[k] * scale;
        g += p->count;
    }
    *loss = m->loss_sum ? loss_all : loss_all / (double)*n_global;
    return unpack_sparse(d, m, scale, err);
}

/* A BoostedTrees model's ensemble (rank 0's restored trees) onto every rank:
 * its packed bytes, unpacked in place of the others' ensembles. */
static rt_status bcast_trees(trn_dist *d, trn_model *m, rt_err *err)
{
    uint64_t len = d->c->rank == 0 ? predictd__tree_ensemble__get_packed_size(m->trees) : 0;
    rt_status st = trn_dist_bcast(d, &len, sizeof len, err);
    if (st)
        return st;
    uint8_t *buf = malloc(len ? (size_t)len : 1);
    if (!buf)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if (d->c->rank == 0)
        predictd__tree_ensemble__pack(m->trees, buf);
    if ((st = trn_dist_bcast(d, buf, (size_t)len, err)) || d->c->rank == 0) {
        free(buf);
        return st;
    }
    Predictd__TreeEnsemble *e = predictd__tree_ensemble__unpack(NULL, (size_t)len, buf);
    free(buf);
    if (!e)
        return rt_err_set(err, RT_ERR_FORMAT, "distributed: rank 0's trees do not unpack");
    Predictd__TreeEnsemble old = *m->trees;
    *m->trees = *e;
    *e = old;
    predictd__tree_ensemble__free_unpacked(e, NULL);
    return RT_OK;
}

rt_status trn_dist_bcast_model(trn_dist *d, trn_model *m, rt_err *err)
{
    if (!d)
        return RT_OK;
    int64_t step = m->step;
    double t = rt_time_seconds(0);
    int rc = d->c->bcast(d->c->ctx, &step, sizeof step, 0);
    for (size_t i = 0; rc == 0 && i < m->n_params; i++) {
        tparam *p = &m->p[i];
        rc = d->c->bcast(d->c->ctx, p->data, p->count * sizeof(float), 0);
        for (size_t s = 0; rc == 0 && s < p->n_slots; s++)
            rc = d->c->bcast(d->c->ctx, p->slot[s], p->count * sizeof(float), 0);
    }
    d->comm_s += rt_time_seconds(0) - t;
    if (rc)
        return comm_failed(err, "broadcast of the model");
    m->step = step;
    return m->trees ? bcast_trees(d, m, err) : RT_OK;
}

uint32_t trn_model_checksum(const trn_model *m)
{
    uint32_t crc = rt_hash_crc32c(0, &m->step, sizeof m->step);
    if (m->trees) {
        size_t len = predictd__tree_ensemble__get_packed_size(m->trees);
        uint8_t *buf = malloc(len ? len : 1);
        if (buf) {
            predictd__tree_ensemble__pack(m->trees, buf);
            crc = rt_hash_crc32c(crc, buf, len);
        } else {
            crc = ~crc; /* no memory: this replica cannot prove it agrees */
        }
        free(buf);
    }
    for (size_t i = 0; i < m->n_params; i++) {
        const tparam *p = &m->p[i];
        crc = rt_hash_crc32c(crc, p->data, p->count * sizeof(float));
        for (size_t s = 0; s < p->n_slots; s++)
            crc = rt_hash_crc32c(crc, p->slot[s], p->count * sizeof(float));
    }
    return crc;
}

rt_status trn_dist_check_replicas(trn_dist *d, const trn_model *m, rt_err *err)
{
    if (!d)
        return RT_OK;
    uint32_t mine = trn_model_checksum(m);
    uint32_t *all = malloc((size_t)d->c->size * sizeof *all);
    if (!all)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = RT_OK;
    if (d->c->allgather(d->c->ctx, &mine, sizeof mine, all))
        st = comm_failed(err, "allgather");
    for (int r = 1; st == RT_OK && r < d->c->size; r++)
        if (all[r] != all[0])
            st = rt_err_set(err, RT_ERR_FORMAT, "distributed: replicas diverged at step %lld: "
                            "rank %d's parameters (checksum %08x) differ from rank 0's "
                            "(%08x); the last checkpoint is not replaced",
                            (long long)m->step, r, (unsigned)all[r], (unsigned)all[0]);
    free(all);
    return st;
}

rt_status trn_dist_gather(trn_dist *d, const void *send, size_t len, void **recv,
                          const size_t **lens, rt_err *err)
{
    uint64_t mine = len;
    uint64_t *all = malloc((size_t)d->c->size * sizeof *all);
    if (!all)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    double t = rt_time_seconds(0);
    int rc = d->c->allgather(d->c->ctx, &mine, sizeof mine, all);
    size_t sum = 0;
    for (int r = 0; r < d->c->size; r++)
        sum += d->lens[r] = (size_t)all[r];
    free(all);
    if (rc)
        return comm_failed(err, "allgather");
    if (d->c->rank == 0 && reserve(&d->recv, &d->recv_cap, sum ? sum : 1))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rc = d->c->gatherv(d->c->ctx, send, len, d->recv, d->lens, 0);
    d->comm_s += rt_time_seconds(0) - t;
    if (rc)
        return comm_failed(err, "gatherv");
    *recv = d->recv;
    *lens = d->lens;
    return RT_OK;
}

/* ------------------------------------------------- same spec on every rank */

/* "path = value" lines of every leaf of the spec, in document order. */
static int flatten(const cJSON *j, char *path, size_t plen, size_t cap, rt_buf *out)
{
    if (cJSON_IsObject(j) || cJSON_IsArray(j)) {
        size_t i = 0;
        for (const cJSON *k = j->child; k; k = k->next, i++) {
            int n = cJSON_IsObject(j)
                        ? snprintf(path + plen, cap - plen, "%s%s", plen ? "." : "", k->string)
                        : snprintf(path + plen, cap - plen, "[%zu]", i);
            if (n < 0 || (size_t)n >= cap - plen)
                return rt_buf_printf(out, "%.*s... = (too deep)\n", (int)plen, path) < 0 ? -1
                                                                                          : 0;
            if (flatten(k, path, plen + (size_t)n, cap, out))
                return -1;
        }
        path[plen] = '\0';
        return 0;
    }
    char *v = cJSON_PrintUnformatted(j);
    int rc = rt_buf_printf(out, "%s = %s\n", path, v ? v : "?");
    free(v);
    return rc < 0 ? -1 : 0;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* The first line where a and b differ, into err. */
static void name_difference(const char *a, size_t al, const char *b, size_t bl, int rank_b,
                            rt_err *err)
{
    size_t i = 0, line = 0;
    while (i < al && i < bl && a[i] == b[i]) {
        if (a[i] == '\n')
            line = i + 1;
        i++;
    }
    const char *ea = memchr(a + line, '\n', al - line), *eb = memchr(b + line, '\n', bl - line);
    int na = (int)((ea ? ea : a + al) - (a + line)), nb = (int)((eb ? eb : b + bl) - (b + line));
    rt_err_set(err, RT_ERR_INVALID, "ranks started with different specs or flags: rank %d has "
               "%.*s%s, rank 0 has %.*s%s (start every rank with the same spec file and "
               "flags)", rank_b, nb > 200 ? 200 : nb, b + line, nb ? "" : "(nothing)",
               na > 200 ? 200 : na, a + line, na ? "" : "(nothing)");
}

rt_status trn_dist_check_spec(const trn_comm *c, const cJSON *spec, const trn_config *cfg,
                              rt_err *err)
{
    if (!c || c->size <= 1)
        return RT_OK;
    rt_buf t;
    rt_buf_init(&t);
    char path[1024] = "";
    rt_status st = RT_OK;
    uint64_t *hs = NULL;
    size_t *lens = NULL;
    char *all = NULL;
    if (flatten(spec, path, 0, sizeof path, &t) ||
        rt_buf_printf(&t, "--job-dir = %s\n--on-bad-row = %s\n",
                      cfg->job_dir ? cfg->job_dir : "(none)",
                      cfg->bad_rows == TRN_BAD_ROW_SKIP ? "skip" : "stop") < 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    uint64_t h = fnv1a(t.data, t.len);
    hs = malloc((size_t)c->size * sizeof *hs);
    lens = calloc((size_t)c->size, sizeof *lens);
    if (!hs || !lens) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (c->allgather(c->ctx, &h, sizeof h, hs)) {
        st = comm_failed(err, "allgather");
        goto out;
    }
    int differ = 0;
    for (int r = 1; r < c->size; r++)
        differ |= hs[r] != hs[0];
    if (!differ)
        goto out;
    /* the ranks that differ send their text to rank 0, which names the
     * difference; every rank then fails the same way */
    uint64_t mine = hs[c->rank] != hs[0] ? t.len : 0, *ls = malloc((size_t)c->size * 8);
    if (!ls || c->allgather(c->ctx, &mine, sizeof mine, ls)) {
        free(ls);
        st = ls ? comm_failed(err, "allgather") : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t sum = 0;
    for (int r = 0; r < c->size; r++)
        sum += lens[r] = (size_t)ls[r];
    free(ls);
    all = malloc(sum ? sum : 1);
    if (!all || c->gatherv(c->ctx, t.data, (size_t)mine, all, lens, 0)) {
        st = all ? comm_failed(err, "gatherv") : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    st = RT_ERR_INVALID;
    err->msg[0] = '\0'; /* rank 0 explains */
    if (c->rank == 0) {
        size_t off = 0;
        for (int r = 1; r < c->size; r++) {
            if (lens[r]) {
                name_difference(t.data, t.len, all + off, lens[r], r, err);
                break;
            }
            off += lens[r];
        }
    }
out:
    free(all);
    free(hs);
    free(lens);
    rt_buf_free(&t);
    return st;
}
