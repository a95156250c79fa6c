/*
 * rt_workspace.c — the forward pass's scratch: one stored matrix per layer or
 * graph node (the trainer's backprop reads them after a forward pass) and
 * scratch matrices for the ONNX executor. One thread at a time.
 */
#include "rt_model.h"
#include "rt_model_internal.h"

#include <stdint.h>
#include <stdlib.h>

rt_workspace *rt_workspace_new(void)
{
    return calloc(1, sizeof(rt_workspace));
}

void rt_workspace_free(rt_workspace *ws)
{
    if (!ws)
        return;
    for (size_t i = 0; i < ws->mats_cap; i++)
        free(ws->mats[i].data);
    free(ws->mats);
    free(ws->bn);
    free(ws);
}

const float *rt_workspace_layer(const rt_workspace *ws, size_t k, size_t *width)
{
    if (!ws || k >= ws->used) {
        if (width)
            *width = 0;
        return NULL;
    }
    if (k == 0 && ws->in) {
        if (width)
            *width = ws->in_width;
        return ws->in;
    }
    if (width)
        *width = ws->mats[k].width;
    return ws->mats[k].data;
}

rt_status rt_workspace_reserve(rt_workspace *ws, size_t count)
{
    if (count <= ws->mats_cap)
        return RT_OK;
    ws_mat *m = realloc(ws->mats, count * sizeof *m);
    if (!m)
        return RT_ERR_NOMEM;
    for (size_t i = ws->mats_cap; i < count; i++) {
        m[i].data = NULL;
        m[i].cap = 0;
        m[i].width = 0;
    }
    ws->mats = m;
    ws->mats_cap = count;
    return RT_OK;
}

rt_status rt_workspace_mat_size(rt_workspace *ws, size_t k, size_t n, size_t width)
{
    ws_mat *m = &ws->mats[k];
    if (width != 0 && n > SIZE_MAX / sizeof(float) / width)
        return RT_ERR_LIMIT;
    size_t need = n * width;
    if (need > m->cap) {
        float *p = realloc(m->data, (need ? need : 1) * sizeof(float));
        if (!p)
            return RT_ERR_NOMEM;
        m->data = p;
        m->cap = need;
    }
    m->width = width;
    return RT_OK;
}

const float *rt_workspace_node(const rt_workspace *ws, size_t k, const float **pre,
                               size_t *width)
{
    if (pre)
        *pre = NULL;
    if (!ws || 2 * k >= ws->used) {
        if (width)
            *width = 0;
        return NULL;
    }
    if (pre && ws->mats[2 * k + 1].width) /* dense nodes only */
        *pre = ws->mats[2 * k + 1].data;
    if (width)
        *width = ws->mats[2 * k].width;
    return ws->mats[2 * k].data;
}

float *rt_workspace_scratch(rt_workspace *ws, size_t k, size_t n, size_t width)
{
    if (rt_workspace_reserve(ws, k + 1) != RT_OK || rt_workspace_mat_size(ws, k, n, width) != RT_OK)
        return NULL;
    return ws->mats[k].data;
}
