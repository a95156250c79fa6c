/*
 * fuzz_example.c — fuzzes the tf.Example serving input function
 * (rt_receiver_example) on the small census model, then runs what it
 * accepted through the serving path (fz_run_batch).
 *
 * Input: one serialized tf.Example (runtime/data/example.proto). Checked besides
 * the sanitizers: a refusal carries a message; an accepted example parsed
 * twice into two instances gives a batch the transform treats alike (both
 * accepted or the batch refused) and that runs forward and through the head
 * with sane probabilities.
 */
#include "fz_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FZ_EXAMPLE_MAX (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_EXAMPLE_MAX)
        return 0;
    const rt_graph *g = rt_model_graph(fz_model(FZ_MODEL_EXAMPLE));
    rt_batch *b = rt_batch_new(g);
    FZ_CHECK(b != NULL, "out of memory");
    rt_err err;
    err.msg[0] = '\0';
    int ok = 1;
    for (int copy = 0; copy < 2 && ok; copy++) {
        size_t idx = 0;
        FZ_CHECK(rt_batch_add(b, &idx) == RT_OK, "rt_batch_add failed");
        rt_status st = rt_receiver_example(b, idx, data, size, &err);
        if (copy == 0)
            fz_note("rt_receiver_example", st, &err);
        if (st != RT_OK) {
            FZ_CHECK(err.msg[0] != '\0', "example refused without a message");
            FZ_CHECK(copy == 0, "the same example accepted once and refused once");
            ok = 0;
        }
    }
    if (ok) {
        FZ_CHECK(rt_batch_size(b) == 2, "batch size");
        for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
            size_t n0 = 0, n1 = 0;
            const rt_value *v0 = rt_batch_cell(b, 0, in, &n0);
            const rt_value *v1 = rt_batch_cell(b, 1, in, &n1);
            FZ_CHECK(n0 == n1, "the same example gave different value counts");
            for (size_t k = 0; k < n0; k++) {
                FZ_CHECK((v0[k].str == NULL) == (v1[k].str == NULL), "value kinds differ");
                if (v0[k].str)
                    FZ_CHECK(v0[k].len == v1[k].len &&
                                 (v0[k].len == 0 || !memcmp(v0[k].str, v1[k].str, v0[k].len)),
                             "string values differ");
                else
                    FZ_CHECK(v0[k].num == v1[k].num || (isnan(v0[k].num) && isnan(v1[k].num)),
                             "numbers differ");
            }
        }
        fz_run_batch(g, b);
    }
    rt_batch_free(b);
    return 0;
}
