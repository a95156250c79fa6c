/*
 * trn_fc.c — the trainer's side of the feature-column kinds: one row per
 * kind with the functions that compute its gradients (trn_internal.h,
 * struct trn_fc_grad; the runtime's rows are in runtime/model/rt_fc.c). The
 * categorical kinds' linear weights take the gradient at their ids, dense
 * kinds' at their values, an indicator's at its source's ids; kinds with an
 * embedding table spread their DNN input's gradient over the rows of their
 * source's ids. trn_model.c binds each linear and embedding column to its
 * row; trn_backprop.c calls the row's functions.
 */
#include "trn_internal.h"

#include <stddef.h>

static const trn_fc_grad rows[] = {
    {.type = PREDICTD__COLUMN_TYPE__NUMERIC, .linear = trn_grad_linear_dense},
    {.type = PREDICTD__COLUMN_TYPE__BUCKETIZED, .linear = trn_grad_linear_ids},
    {.type = PREDICTD__COLUMN_TYPE__VOCABULARY_LIST, .linear = trn_grad_linear_ids},
    {.type = PREDICTD__COLUMN_TYPE__VOCABULARY_FILE, .linear = trn_grad_linear_ids},
    {.type = PREDICTD__COLUMN_TYPE__HASH_BUCKET, .linear = trn_grad_linear_ids},
    {.type = PREDICTD__COLUMN_TYPE__CROSSED, .linear = trn_grad_linear_ids},
    {.type = PREDICTD__COLUMN_TYPE__EMBEDDING, .table = trn_grad_table},
    {.type = PREDICTD__COLUMN_TYPE__INDICATOR,
     .via_source = 1,
     .linear = trn_grad_linear_src_ids},
    {.type = PREDICTD__COLUMN_TYPE__IDENTITY, .linear = trn_grad_linear_ids},
    {.type = PREDICTD__COLUMN_TYPE__WEIGHTED, .linear = trn_grad_linear_ids},
    {.type = PREDICTD__COLUMN_TYPE__SHARED_EMBEDDING, .table = trn_grad_table},
};

const trn_fc_grad *trn_fc_grad_of(Predictd__ColumnType t)
{
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
        if (rows[k].type == t)
            return &rows[k];
    return NULL;
}
