/*
 * test_graph_access.c — what rt.h lets another module read of a compiled
 * graph and a request (predict-model's show and transform use nothing
 * else): each accessor gives the field rt_internal.h holds, out-of-range
 * indexes give 0 / NULL, rt_fc_column_describe is the kind's describe,
 * rt_json_transform gives the features (and the messages) of the parse and
 * the transform run by hand, and the tree accessors find the leaves a
 * hand-built ensemble reaches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rt_serve_internal.h"
#include "rt_data_internal.h"
#include "support_models.h"
#include "support_trees.h"

typedef struct built {
    Predictd__ModelDef *def;
    support_tensors st;
    rt_graph *g;
} built;

static void build(built *b, Predictd__ModelDef *def)
{
    memset(b, 0, sizeof *b);
    b->def = def;
    assert_non_null(b->def);
    assert_int_equal(support_random_tensors(b->def, 7, 0.5f, &b->st), 0);
    rt_err err = {{0}};
    rt_status st = rt_graph_build(b->def, support_tensor_lookup, &b->st, NULL, &b->g, &err);
    if (st != RT_OK)
        fail_msg("rt_graph_build: %s", err.msg);
}

static void unbuild(built *b)
{
    rt_graph_free(b->g);
    support_tensors_free(&b->st);
    rt_spec_modeldef_free(b->def);
}

static void test_accessors_wide_deep(void **state)
{
    (void)state;
    built b;
    build(&b, support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP));
    const rt_graph *g = b.g;
    assert_int_equal(rt_graph_head(g), g->head);
    assert_int_equal(rt_graph_head(g), PREDICTD__HEAD_TYPE__HEAD_BINARY);
    assert_int_equal(rt_graph_num_classes(g), 2);
    assert_int_equal(rt_graph_num_columns(g), g->n_fcols);
    assert_int_equal(rt_graph_num_columns(g), 8);
    for (size_t c = 0; c < g->n_fcols; c++) {
        assert_ptr_equal(rt_graph_column(g, c), g->fcols[c].def);
        assert_int_equal(rt_graph_column_buckets(g, c), g->fcols[c].num_buckets);
        char want[1024] = "", got[1024];
        rt_fc_kind_of(g->fcols[c].type)->describe(g->fcols[c].def, want, sizeof want);
        memset(got, 'x', sizeof got);
        rt_fc_column_describe(rt_graph_column(g, c), got, sizeof got);
        assert_string_equal(got, want);
    }
    assert_null(rt_graph_column(g, g->n_fcols));
    assert_int_equal(rt_graph_column_buckets(g, g->n_fcols), 0);
    /* hidden units 5, 3, then the logits layer */
    assert_int_equal(rt_graph_num_layers(g), 3);
    assert_int_equal(rt_graph_layer_width(g, 0), 5);
    assert_int_equal(rt_graph_layer_width(g, 1), 3);
    assert_int_equal(rt_graph_layer_width(g, 2), 1);
    assert_int_equal(rt_graph_layer_width(g, 3), 0);
    const size_t *cols, *off, *wid;
    size_t total = 0;
    rt_graph_dnn_layout(g, &cols, &off, &wid, &total);
    assert_int_equal(rt_graph_dnn_dim(g), total);
    assert_int_equal(rt_graph_dnn_dim(g), g->dnn_dim);
    assert_false(rt_graph_has_trees(g));
    assert_int_equal(rt_trees_count(g), 0);
    assert_int_equal(rt_trees_scratch(g), 0);
    /* NULL graph: zeros, no crash */
    assert_int_equal(rt_graph_num_columns(NULL), 0);
    assert_null(rt_graph_column(NULL, 0));
    assert_int_equal(rt_graph_num_layers(NULL), 0);
    assert_false(rt_graph_has_trees(NULL));
    char buf[8] = "zz";
    rt_fc_column_describe(NULL, buf, sizeof buf);
    assert_string_equal(buf, "");
    unbuild(&b);
}

/* rt_json_transform == rt_json_parse_predict + rt_transform, features and
 * messages alike. */
static void test_json_transform(void **state)
{
    (void)state;
    built b;
    build(&b, support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP));
    const rt_graph *g = b.g;
    static const char body[] =
        "{\"instances\": [{\"age\": 25, \"hours\": 40, \"gender\": \"Male\", "
        "\"occupation\": \"x\"}, {\"age\": 61, \"hours\": 10, \"gender\": \"Female\", "
        "\"occupation\": \"y\"}]}";
    rt_ctx *c1 = rt_ctx_new(), *c2 = rt_ctx_new();
    assert_non_null(c1);
    assert_non_null(c2);
    rt_err err = {{0}};
    const rt_features *f = NULL;
    assert_int_equal(rt_json_transform(g, body, strlen(body), NULL, c1, &f, &err), RT_OK);
    assert_non_null(f);
    int columnar = 0;
    const Predictd__SignatureDef *sig = NULL;
    assert_int_equal(rt_json_parse_predict(g, body, strlen(body), NULL, c2, &columnar, &sig, &err),
                     RT_OK);
    assert_int_equal(rt_transform(g, c2->batch, &c2->features, &err), RT_OK);
    const rt_features *w = &c2->features;
    assert_int_equal(f->n, 2);
    assert_int_equal(f->n_columns, w->n_columns);
    assert_int_equal(f->dnn_dim, w->dnn_dim);
    assert_memory_equal(f->dnn_input, w->dnn_input, f->n * f->dnn_dim * sizeof(float));
    for (size_t col = 0; col < f->n_columns; col++) {
        if (!w->ids[col].offsets)
            continue;
        assert_memory_equal(f->ids[col].offsets, w->ids[col].offsets, 3 * sizeof(uint32_t));
        assert_memory_equal(f->ids[col].ids, w->ids[col].ids,
                            w->ids[col].offsets[2] * sizeof(int64_t));
    }
    /* f NULL: the body is only read (a transform error is not reached) */
    static const char missing[] = "{\"instances\": [{\"hours\": 1}]}";
    assert_int_equal(rt_json_transform(g, missing, strlen(missing), NULL, c1, NULL, &err), RT_OK);
    /* the transform's own message, as rt_transform gives it */
    rt_err e1 = {{0}}, e2 = {{0}};
    rt_status s1 = rt_json_transform(g, missing, strlen(missing), NULL, c1, &f, &e1);
    assert_int_equal(
        rt_json_parse_predict(g, missing, strlen(missing), NULL, c2, &columnar, &sig, &e2), RT_OK);
    rt_status s2 = rt_transform(g, c2->batch, &c2->features, &e2);
    assert_int_not_equal(s1, RT_OK);
    assert_int_equal(s1, s2);
    assert_string_equal(e1.msg, e2.msg);
    /* a syntax error names it */
    static const char bad[] = "{\"instances\": [{\"age\": }]}";
    assert_int_not_equal(rt_json_transform(g, bad, strlen(bad), NULL, c1, NULL, &e1), RT_OK);
    assert_non_null(strstr(e1.msg, "not valid JSON"));
    rt_ctx_free(c1);
    rt_ctx_free(c2);
    unbuild(&b);
}

/* support_trees_tiny: age 25 goes left in tree 0 (node 1), its bucket (1)
 * left in tree 1 (node 2); age 45, Male: node 3, bucket 3: node 1. */
static void test_trees_accessors(void **state)
{
    (void)state;
    built b;
    build(&b, support_trees_tiny());
    const rt_graph *g = b.g;
    assert_true(rt_graph_has_trees(g));
    assert_int_equal(rt_graph_num_layers(g), 0);
    assert_int_equal(rt_trees_count(g), 2);
    assert_int_equal(rt_trees_scratch(g), rt_trees_gather_width(g->trees));
    assert_true(rt_trees_scratch(g) > 0);
    static const char body[] =
        "{\"instances\": [{\"age\": 25, \"hours\": 1, \"gender\": \"Female\", "
        "\"occupation\": \"x\"}, {\"age\": 45, \"hours\": 1, \"gender\": \"Male\", "
        "\"occupation\": \"x\"}]}";
    rt_ctx *c = rt_ctx_new();
    assert_non_null(c);
    rt_err err = {{0}};
    const rt_features *f = NULL;
    assert_int_equal(rt_json_transform(g, body, strlen(body), NULL, c, &f, &err), RT_OK);
    float *x = malloc(f->n * rt_trees_scratch(g) * sizeof *x);
    uint32_t leaves[4];
    assert_non_null(x);
    assert_int_equal(rt_trees_leaves(g, f, x, leaves, &err), RT_OK);
    assert_int_equal(leaves[0], 1);
    assert_int_equal(leaves[1], 2);
    assert_int_equal(leaves[2], 3);
    assert_int_equal(leaves[3], 1);
    rt_trees_shape sh;
    rt_trees_importance *imp = NULL;
    assert_int_equal(rt_trees_describe(g, &sh, &imp, &err), RT_OK);
    assert_int_equal(sh.trees, 2);
    assert_int_equal(sh.nodes, 8);
    free(imp);
    free(x);
    rt_ctx_free(c);
    unbuild(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accessors_wide_deep),
        cmocka_unit_test(test_json_transform),
        cmocka_unit_test(test_trees_accessors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
