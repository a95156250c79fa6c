/*
 * trn_stats.c — the training data's statistics, computed over the rows the
 * trainer reads anyway (no extra pass) and written into every export
 * (statistics.json; docs/data-validation.md).
 *
 * Each data row is counted once: the reader marks the rows of its first
 * epoch (trn_rows.first) and counting stops when the input restarts. The
 * rows are counted when the training loop takes them (and when a resumed run
 * replays them), so the counts are those of the rows trained on, whatever
 * the reader thread had read ahead. Under MPI with rows split between the
 * ranks, each export gathers the ranks' accumulators to rank 0 and merges
 * them (rt_stats_acc_merge: exact counts, so the same numbers as one process).
 */
#include "trn_run_internal.h"

#include <stdlib.h>
#include <string.h>

trn_stats *trn_stats_new(const Predictd__ModelDef *def)
{
    trn_stats *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->def = def;
    rt_buf_init(&s->json);
    if (!(s->acc = rt_stats_acc_new(def))) {
        free(s);
        return NULL;
    }
    return s;
}

void trn_stats_free(trn_stats *s)
{
    if (!s)
        return;
    rt_stats_acc_free(s->acc);
    rt_buf_free(&s->json);
    free(s);
}

rt_status trn_stats_rows(trn_stats *s, const trn_rows *rows, rt_err *err)
{
    if (!s || s->done || !rows->first)
        return RT_OK;
    size_t ni = rt_stats_acc_inputs(s->acc);
    int trim = s->def->trim_strings;
    for (size_t r = 0; r < rows->n; r++) {
        if (!rows->first[r])
            continue;
        rt_stats_acc_example(s->acc);
        const trn_field *row = rows->fields + r * rows->n_fields;
        for (size_t i = 0; i < ni; i++) {
            long col = rt_stats_acc_column(s->acc, i);
            if (col < 0 || (size_t)col >= rows->n_fields)
                continue;
            const trn_field *f = &row[col];
            int rc = 0;
            rt_status st = RT_OK;
            if (rt_stats_acc_type(s->acc, i) != RT_STATS_STRING && f->num_state == 1)
                rc = rt_stats_acc_number(s->acc, i, f->num);
            else if (rt_stats_acc_type(s->acc, i) != RT_STATS_STRING && f->num_state == 2)
                rc = rt_stats_acc_missing(s->acc, i);
            else
                st = rt_stats_acc_cell(s->acc, i, f->s, f->len, trim, err);
            if (rc)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory (training statistics)");
            if (st == RT_ERR_INVALID) /* the reader checked the row: not reached */
                continue;
            if (st)
                return st;
        }
    }
    return RT_OK;
}

rt_status trn_stats_snapshot(trn_stats *s, trn_dist *dist, rt_err *err)
{
    rt_status st = RT_OK;
    rt_stats_acc *all = NULL;
    rt_stats *out = NULL;
    rt_buf mine;
    rt_buf_init(&mine);
    rt_buf_reset(&s->json);
    const rt_stats_acc *use = s->acc;
    if (dist && s->merge && trn_dist_size(dist) > 1) {
        if ((st = rt_stats_acc_save(s->acc, &mine)) != RT_OK) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory (training statistics)");
            goto out;
        }
        void *recv = NULL;
        const size_t *lens = NULL;
        if ((st = trn_dist_gather(dist, mine.data, mine.len, &recv, &lens, err)))
            goto out;
        if (trn_dist_rank(dist) != 0)
            goto out;
        if (!(all = rt_stats_acc_new(s->def))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory (training statistics)");
            goto out;
        }
        size_t off = 0;
        for (int r = 0; r < trn_dist_size(dist); r++) {
            if ((st = rt_stats_acc_merge(all, (const char *)recv + off, lens[r], err))) {
                rt_err_prefix(err, "training statistics of rank %d", r);
                goto out;
            }
            off += lens[r];
        }
        use = all;
    } else if (dist && trn_dist_rank(dist) != 0) {
        goto out;
    }
    if ((st = rt_stats_acc_finish(use, &out, err)) != RT_OK)
        goto out;
    if (rt_stats_write_json(out, "train", &s->json) != RT_OK)
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory (training statistics)");
out:
    rt_stats_free(out);
    rt_stats_acc_free(all);
    rt_buf_free(&mine);
    return st;
}
