/*
 * rt_xai_rows.c — the rows an explanation runs, under both rt_xai.c
 * (the Shapley methods) and rt_xai_ig.c (integrated gradients): which
 * raw inputs feed a feature column (rt_xai_column_inputs), and the coalition
 * rows, each raw input's cells taken from the instance or the baseline
 * (rt_xai_fill).
 */
#include "rt_explain.h"
#include "rt_explain_internal.h"

#include <string.h>

static void add_input(size_t *in, size_t *n, size_t cap, long i)
{
    if (i < 0 || (size_t)i >= cap)
        return;
    for (size_t k = 0; k < *n; k++)
        if (in[k] == (size_t)i)
            return;
    in[(*n)++] = (size_t)i;
}

static void column_inputs(const rt_graph *g, size_t c, size_t *in, size_t *n, int depth)
{
    if (c >= g->n_fcols || depth > 16)
        return;
    const rt_fcol *col = &g->fcols[c];
    add_input(in, n, g->n_inputs, col->input);
    if (col->source >= 0)
        column_inputs(g, (size_t)col->source, in, n, depth + 1);
    for (size_t k = 0; k < col->n_cross; k++) {
        if (col->cross_input)
            add_input(in, n, g->n_inputs, col->cross_input[k]);
        if (col->cross_col && col->cross_col[k] >= 0)
            column_inputs(g, (size_t)col->cross_col[k], in, n, depth + 1);
    }
}

void rt_xai_column_inputs(const rt_graph *g, size_t c, size_t *in, size_t *n)
{
    *n = 0;
    column_inputs(g, c, in, n, 0);
}

/* ---------------------------------------------------- coalition rows */

/* Copies cell (src, si, in) into (dst, di, in). */
static rt_status copy_cell(rt_batch *dst, size_t di, const rt_batch *src, size_t si, size_t in)
{
    size_t nv = 0;
    const rt_value *v = rt_batch_cell(src, si, in, &nv);
    for (size_t k = 0; k < nv; k++) {
        rt_status st = v[k].str ? rt_batch_push_str(dst, di, in, v[k].str, v[k].len)
                                : rt_batch_push_num(dst, di, in, v[k].num);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

rt_status rt_xai_fill(xai_ctx *e, const uint64_t *masks, size_t m, rt_err *err)
{
    rt_batch_clear(e->rows);
    rt_batch_set_missing(e->rows, rt_batch_missing(e->xb));
    for (size_t r = 0; r < m; r++) {
        const uint64_t *mk = masks + r * e->words;
        /* a player out of the coalition takes the baseline's cell; every
         * other input the instance's (no player: the same in both) */
        memset(e->from_base, 0, e->n_in);
        for (size_t k = 0; k < e->d; k++)
            if (!(mk[k / 64] >> (k % 64) & 1))
                e->from_base[e->players[k]] = 1;
        size_t di;
        rt_status st = rt_batch_add(e->rows, &di);
        for (size_t in = 0; st == RT_OK && in < e->n_in; in++)
            st = e->from_base[in] ? copy_cell(e->rows, di, e->bb, e->bi, in)
                                  : copy_cell(e->rows, di, e->xb, e->xi, in);
        if (st != RT_OK)
            return rt_err_set(err, st, "explanation rows: out of memory");
    }
    return RT_OK;
}
