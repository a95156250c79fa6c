/* test_spec_custom.c — the custom estimator's spec (runtime/model/
 * rt_spec_custom.c): conf/census.json's feature columns under an
 * "Estimator" whose model graph uses every node kind becomes Graph.nodes
 * the runtime compiles, and bad graphs are refused before training with the path
 * of the offending field: a cycle, a node read before it exists, units 0, a
 * binary head on a 3-wide node, an unknown activation, unknown names,
 * widths that do not add up, duplicate names, summaries of unknown or
 * repeated nodes; several heads (MultiHead): each named once, over a label
 * column of the data, refused otherwise with the head's field path; a
 * multi_label_classification head's keys checked (n_classes, logits width,
 * vocabulary, label_delimiter, a string label column), one such head
 * parsed (HEAD_MULTI_LABEL, its delimiter, its signatures), alone and
 * among several heads. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cJSON.h>

#include "rt_serve_internal.h"

/* A graph with every node kind the spec takes; GOOD's pieces are replaced
 * by the refusal tests. */
static const char *const GOOD =
    "{\"type\": \"Estimator\", \"model\": {"
    " \"inputs\": ["
    "  {\"name\": \"deep\", \"columns\": [\"age\", \"education_num\", \"gender_indicator\","
    "                                \"race_indicator\"]},"
    "  {\"name\": \"wide\", \"type\": \"linear\", \"columns\": [\"gender\", \"age_buckets\"]}],"
    " \"layers\": ["
    "  {\"name\": \"occ\", \"type\": \"embedding\", \"column\": \"occupation_embedding\"},"
    "  {\"name\": \"x\", \"type\": \"concat\", \"inputs\": [\"deep\", \"occ\"]},"
    "  {\"name\": \"h1\", \"type\": \"dense\", \"inputs\": [\"x\"], \"units\": 16,"
    "   \"activation\": \"gelu\", \"l2\": 0.001},"
    "  {\"name\": \"bn\", \"type\": \"batch_norm\", \"inputs\": [\"h1\"]},"
    "  {\"name\": \"d1\", \"type\": \"dropout\", \"inputs\": [\"bn\"], \"rate\": 0.1},"
    "  {\"name\": \"h2\", \"type\": \"dense\", \"inputs\": [\"d1\"], \"units\": 16},"
    "  {\"name\": \"a2\", \"type\": \"activation\", \"inputs\": [\"h2\"], \"activation\": \"swish\"},"
    "  {\"name\": \"res\", \"type\": \"add\", \"inputs\": [\"h1\", \"a2\"]},"
    "  {\"name\": \"gate\", \"type\": \"multiply\", \"inputs\": [\"res\", \"h1\"]},"
    "  {\"name\": \"three\", \"type\": \"dense\", \"inputs\": [\"gate\"], \"units\": 3},"
    "  {\"name\": \"dnn_logits\", \"type\": \"dense\", \"inputs\": [\"gate\"], \"units\": 1},"
    "  {\"name\": \"logits\", \"type\": \"add\", \"inputs\": [\"wide\", \"dnn_logits\"]}],"
    " \"heads\": [{\"type\": \"binary_classification\", \"logits\": \"logits\"}],"
    " \"summaries\": [\"h1\", \"d1\"]}}";

static char *census_text;

static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        fail_msg("test bug: \"%s\" not in the spec", from);
    size_t a = (size_t)(at - text), f = strlen(from), t = strlen(to), n = strlen(text);
    char *r = malloc(n - f + t + 1);
    memcpy(r, text, a);
    memcpy(r + a, to, t);
    memcpy(r + a + t, at + f, n - a - f + 1);
    return r;
}

/* conf/census.json with estimator = est; parses it, returns the status and
 * the message in err. */
static rt_status parse(const char *est, rt_err *err)
{
    cJSON *spec = cJSON_Parse(census_text), *e = cJSON_Parse(est);
    assert_non_null(spec);
    if (!e)
        fail_msg("test bug: bad JSON %s", est);
    cJSON_ReplaceItemInObjectCaseSensitive(spec, "estimator", e);
    static const char *const other[] = {"train", "eval", NULL};
    Predictd__ModelDef *def = NULL;
    rt_status st = rt_spec_to_modeldef(spec, other, &def, err);
    if (def)
        rt_spec_modeldef_free(def);
    cJSON_Delete(spec);
    return st;
}

/* est refused with an error holding want. */
static void bad_text(const char *est, const char *want)
{
    rt_err err = {{0}};
    rt_status st = parse(est, &err);
    if (st == RT_OK || !strstr(err.msg, want))
        fail_msg("want \"%s\", got %d \"%s\"", want, (int)st, err.msg);
    if (getenv("SHOW_ERRORS"))
        print_message("%s\n", err.msg);
}

static void bad(const char *from, const char *to, const char *want)
{
    char *est = replace(GOOD, from, to);
    rt_err err = {{0}};
    rt_status st = parse(est, &err);
    if (st == RT_OK || !strstr(err.msg, want))
        fail_msg("want \"%s\", got %d \"%s\"", want, (int)st, err.msg);
    if (getenv("SHOW_ERRORS"))
        print_message("%s\n", err.msg);
    free(est);
}

/* Two heads (TF's MultiHead) over census: the income bracket and fnlwgt
 * (a number no feature column reads) as a regression target. */
static const char *const MULTI =
    "{\"type\": \"Estimator\", \"model\": {"
    " \"inputs\": [{\"name\": \"deep\", \"columns\": [\"age\", \"education_num\"]}],"
    " \"layers\": ["
    "  {\"name\": \"h1\", \"type\": \"dense\", \"inputs\": [\"deep\"], \"units\": 8},"
    "  {\"name\": \"income\", \"type\": \"dense\", \"inputs\": [\"h1\"], \"units\": 1},"
    "  {\"name\": \"wgt\", \"type\": \"dense\", \"inputs\": [\"h1\"], \"units\": 1}],"
    " \"heads\": ["
    "  {\"name\": \"income_bracket\", \"type\": \"binary_classification\", \"logits\": \"income\","
    "   \"label\": {\"column\": \"income_bracket\", \"vocabulary\": [\"<=50K\", \">50K\"]}},"
    "  {\"name\": \"fnlwgt\", \"type\": \"regression\", \"logits\": \"wgt\","
    "   \"label\": {\"column\": \"fnlwgt\"}, \"loss_weight\": 0.5}]}}";

/* conf/census.json without its label and unused_columns, estimator est. */
static rt_status parse_multi(const char *est, rt_err *err, Predictd__ModelDef **out)
{
    cJSON *spec = cJSON_Parse(census_text), *e = cJSON_Parse(est);
    assert_non_null(spec);
    if (!e)
        fail_msg("test bug: bad JSON %s", est);
    cJSON_ReplaceItemInObjectCaseSensitive(spec, "estimator", e);
    if (!strstr(est, "\"keep_label\""))
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "label");
    else
        cJSON_DeleteItemFromObjectCaseSensitive(e, "keep_label");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "unused_columns");
    static const char *const other[] = {"train", "eval", NULL};
    Predictd__ModelDef *def = NULL;
    rt_status st = rt_spec_to_modeldef(spec, other, &def, err);
    if (out)
        *out = def;
    else if (def)
        rt_spec_modeldef_free(def);
    cJSON_Delete(spec);
    return st;
}

static void bad_multi(const char *from, const char *to, const char *want)
{
    char *est = replace(MULTI, from, to);
    rt_err err = {{0}};
    rt_status st = parse_multi(est, &err, NULL);
    if (st == RT_OK || !strstr(err.msg, want))
        fail_msg("want \"%s\", got %d \"%s\"", want, (int)st, err.msg);
    if (getenv("SHOW_ERRORS"))
        print_message("%s\n", err.msg);
    free(est);
}

/* Several heads: refused with the head's field path. */
static void test_multi_head_refusals(void **state)
{
    (void)state;
    bad_multi("{\"name\": \"fnlwgt\",", "{\"name\": \"income_bracket\",",
              "estimator.model.heads[1].name: \"income_bracket\" is heads[0]'s already: head "
              "names must be unique");
    bad_multi("\"type\": \"regression\", \"logits\": \"wgt\"",
              "\"type\": \"multi_label_classification\", \"n_classes\": 2, "
              "\"logits\": \"wgt\"",
              "estimator.model.heads[1].label.column: \"fnlwgt\" is a number column; a "
              "multi_label_classification head reads a string column");
    { /* a multi-label head among several (first): its own type, classes and
       * delimiter; logits 2 + 1 wide; its signatures a classifier's */
        char *w = replace(MULTI, "\"name\": \"income\", \"type\": \"dense\", \"inputs\": [\"h1\"], "
                          "\"units\": 1", "\"name\": \"income\", \"type\": \"dense\", "
                          "\"inputs\": [\"h1\"], \"units\": 2");
        char *est = replace(w, "\"type\": \"binary_classification\", \"logits\": \"income\"",
                            "\"type\": \"multi_label_classification\", \"n_classes\": 2, "
                            "\"logits\": \"income\"");
        rt_err err = {{0}};
        Predictd__ModelDef *def = NULL;
        if (parse_multi(est, &err, &def) != RT_OK)
            fail_msg("a multi-label head among several refused: %s", err.msg);
        const Predictd__Head *h0 = def->graph->heads[0]->head;
        assert_int_equal(h0->type, PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL);
        assert_int_equal(h0->n_classes, 2);
        assert_int_equal(rt_metrics_mlabel_delimiter(h0), '|');
        assert_int_equal(def->graph->heads[1]->head->type, PREDICTD__HEAD_TYPE__HEAD_REGRESSION);
        assert_int_equal(def->graph->logits_dimension, 3);
        size_t found = 0;
        for (size_t q = 0; q < def->n_signatures; q++) {
            const Predictd__SignatureDef *sg = def->signatures[q];
            found += !strcmp(sg->name, "income_bracket/classification") && sg->n_outputs == 2;
            if (!strcmp(sg->name, "predict")) { /* prefixed: the heads' outputs */
                size_t ml = 0;
                for (size_t o = 0; o < sg->n_outputs; o++)
                    ml += !strncmp(sg->outputs[o]->name, "income_bracket/", 15);
                assert_int_equal(ml, 2); /* logits, probabilities */
                found++;
            }
            assert_true(strcmp(sg->name, "income_bracket/regression") != 0);
        }
        assert_int_equal(found, 2);
        rt_spec_modeldef_free(def);
        free(w);
        free(est);
    }
    bad_multi("{\"name\": \"fnlwgt\",", "{",
              "estimator.model.heads[1].name: missing: with several heads each head has a name");
    bad_multi("{\"name\": \"fnlwgt\",", "{\"name\": \"predict\",",
              "estimator.model.heads[1].name: \"predict\" is a signature name of the whole "
              "model: a head's own signatures are named after it");
    bad_multi("{\"column\": \"fnlwgt\"}", "{\"column\": \"fnlwgtt\"}",
              "estimator.model.heads[1].label.column: \"fnlwgtt\" is not one of the columns");
    bad_multi("{\"column\": \"fnlwgt\"}", "{\"column\": \"income_bracket\"}",
              "estimator.model.heads[1].label.column: \"income_bracket\" is another head's "
              "label already");
    bad_multi("\"label\": {\"column\": \"fnlwgt\"}, ", "",
              "estimator.model.heads[1].label: missing");
    bad_multi("{\"column\": \"fnlwgt\"}", "{\"column\": \"age\"}",
              "\"age\" is the label column");
    bad_multi("\"loss_weight\": 0.5", "\"loss_weight\": 0",
              "estimator.model.heads[1].loss_weight: 0 is out of range");
    bad_multi("\"type\": \"Estimator\",", "\"type\": \"Estimator\", \"keep_label\": 1,",
              "label: with several heads (estimator.model.heads) each head names its label");
    bad_multi("\"type\": \"Estimator\",", "\"type\": \"Estimator\", \"weight_column\": \"age\",",
              "estimator.weight_column: with several heads each head names its weight_column");
    bad_multi("\"loss_weight\": 0.5", "\"loss_weight\": 0.5, \"weight_column\": \"sex\"",
              "estimator.model.heads[1].weight_column: \"sex\" is not one of the columns");
    bad_multi("\"column\": \"income_bracket\", \"vocabulary\": [\"<=50K\", \">50K\"]",
              "\"column\": \"income_bracket\"",
              "estimator.model.heads[0].label.vocabulary: missing: the label column "
              "\"income_bracket\" holds strings");
    bad_multi("\"type\": \"binary_classification\"", "\"type\": \"regression\"",
              "estimator.model.heads[0].label.vocabulary: a regression head has no vocabulary");
    bad_multi("\"logits\": \"wgt\"", "\"logits\": \"h1\"",
              "estimator.model.heads[1].logits: \"h1\" is 8 wide; a regression head");
    bad_multi("\"loss_weight\": 0.5", "\"loss_weight\": 0.5, \"loss_reduction\": \"sum\"",
              "estimator.model.heads[1].loss_reduction: one loss_reduction for every head");
    bad_multi("\"logits\": \"wgt\"", "\"logits\": \"income\"",
              "estimator.model.heads[1].logits: \"income\" is heads[0]'s logits already");
}

/* The good one: Graph.heads in order, each its name, label, loss_weight and
 * type; the logits are theirs side by side; def->head is the first's. */
static void test_multi_head_graph(void **state)
{
    (void)state;
    rt_err err = {{0}};
    Predictd__ModelDef *def = NULL;
    if (parse_multi(MULTI, &err, &def) != RT_OK)
        fail_msg("%s", err.msg);
    const Predictd__Graph *g = def->graph;
    assert_int_equal(g->n_heads, 2);
    assert_int_equal(g->logits_dimension, 2);
    assert_string_equal(g->heads[0]->name, "income_bracket");
    assert_string_equal(g->heads[0]->label, "income_bracket");
    assert_string_equal(g->heads[0]->logits, "income");
    assert_int_equal(g->heads[0]->head->type, PREDICTD__HEAD_TYPE__HEAD_BINARY);
    assert_int_equal(g->heads[0]->head->n_label_vocabulary, 2);
    assert_true(g->heads[0]->loss_weight == 1.0f);
    assert_string_equal(g->heads[1]->name, "fnlwgt");
    assert_int_equal(g->heads[1]->head->type, PREDICTD__HEAD_TYPE__HEAD_REGRESSION);
    assert_true(g->heads[1]->loss_weight == 0.5f);
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_BINARY);
    long r = -1;
    for (size_t i = 0; i < def->n_raw_columns; i++)
        if (strcmp(def->raw_columns[i]->name, "fnlwgt") == 0)
            r = (long)i;
    assert_true(r >= 0 && def->raw_columns[r]->is_label);
    rt_spec_modeldef_free(def);
}

/* The good graph becomes Graph.nodes (widths as the spec implies), the
 * canned linear part and DNN columns under its linear and input nodes, and
 * the runtime compiles it (rt_spec_to_modeldef's last check). */
static void test_good_graph(void **state)
{
    (void)state;
    cJSON *spec = cJSON_Parse(census_text);
    cJSON_ReplaceItemInObjectCaseSensitive(spec, "estimator", cJSON_Parse(GOOD));
    static const char *const other[] = {"train", "eval", NULL};
    Predictd__ModelDef *def = NULL;
    rt_err err = {{0}};
    rt_status st = rt_spec_to_modeldef(spec, other, &def, &err);
    if (st)
        fail_msg("%s", err.msg);
    const Predictd__Graph *g = def->graph;
    assert_string_equal(g->estimator, "Estimator");
    assert_int_equal(g->n_nodes, 14);
    static const uint32_t widths[14] = {9, 1, 8, 17, 16, 16, 16, 16, 16, 16, 16, 3, 1, 1};
    for (size_t k = 0; k < 14; k++)
        assert_int_equal(g->nodes[k]->units, widths[k]);
    assert_int_equal(g->nodes[4]->kind, PREDICTD__NODE_KIND__NODE_DENSE);
    assert_string_equal(g->nodes[4]->kernel, "h1/kernel");
    assert_int_equal(g->nodes[4]->activation, PREDICTD__ACTIVATION__ACT_GELU);
    assert_string_equal(g->nodes[5]->batch_norm->moving_variance, "bn/moving_variance");
    assert_int_equal(g->n_linear_columns, 2);
    assert_int_equal(g->n_dnn_columns, 5);
    assert_int_equal(g->n_embeddings, 1);
    assert_int_equal(g->n_heads, 1);
    assert_string_equal(g->heads[0]->logits, "logits");
    assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_BINARY);
    assert_int_equal(g->logits_dimension, 1);
    assert_int_equal(g->n_summaries, 2);
    assert_string_equal(g->summaries[0], "h1");
    assert_string_equal(g->summaries[1], "d1");
    rt_spec_modeldef_free(def);
    cJSON_Delete(spec);
}

static void test_refusals(void **state)
{
    (void)state;
    /* a cycle: x reads h1, which reads x */
    bad("\"inputs\": [\"deep\", \"occ\"]", "\"inputs\": [\"deep\", \"h1\"]",
        "estimator.model.layers[1].inputs[1]: \"h1\" makes a cycle");
    bad("\"inputs\": [\"x\"], \"units\": 16", "\"inputs\": [\"bn\"], \"units\": 16",
        "estimator.model.layers[2].inputs[0]: \"bn\" makes a cycle");
    bad("\"inputs\": [\"deep\", \"occ\"]", "\"inputs\": [\"deep\", \"three\"]",
        "estimator.model.layers[1].inputs[1]: \"three\" makes a cycle");
    bad("{\"name\": \"occ\", \"type\": \"embedding\", \"column\": \"occupation_embedding\"},",
        "{\"name\": \"early\", \"type\": \"activation\", \"inputs\": [\"h2\"], "
        "\"activation\": \"relu\"}, {\"name\": \"occ\", \"type\": \"embedding\", "
        "\"column\": \"occupation_embedding\"},",
        "estimator.model.layers[0].inputs[0]: \"h2\" is read before it exists (it is "
        "layers[6])");
    /* units 0 */
    bad("\"units\": 16,", "\"units\": 0,", "estimator.model.layers[2].units: 0 is out of range");
    /* a binary head on a 3-wide node */
    bad("\"logits\": \"logits\"", "\"logits\": \"three\"",
        "estimator.model.heads[0].logits: \"three\" is 3 wide; a binary_classification head");
    /* unknown activation */
    bad("\"activation\": \"gelu\"", "\"activation\": \"gelux\"",
        "estimator.model.layers[2].activation: \"gelux\" is not one of");
    bad("\"activation\": \"swish\"", "\"activation\": \"Relu\"",
        "estimator.model.layers[6].activation: \"Relu\" is not one of");
    /* unknown names, kinds, keys */
    bad("[\"h1\", \"a2\"]", "[\"h1\", \"nope\"]",
        "estimator.model.layers[7].inputs[1]: \"nope\" is not a node");
    bad("\"type\": \"dropout\"", "\"type\": \"dropit\"",
        "estimator.model.layers[4].type: \"dropit\" is not one of");
    bad("\"rate\": 0.1", "\"rate\": 0.1, \"units\": 3", "estimator.model.layers[4]");
    bad("\"logits\": \"logits\"", "\"logits\": \"lo\"",
        "estimator.model.heads[0].logits: \"lo\" is not a node");
    bad("\"age\", \"education_num\"", "\"age\", \"gender\"",
        "estimator.model.inputs[0].columns[1]: \"gender\" is a "
        "categorical_column_with_vocabulary_list, a categorical column");
    bad("\"age\", \"education_num\"", "\"age\", \"agee\"",
        "estimator.model.inputs[0].columns[1]: \"agee\" is not one of the feature_columns");
    /* widths */
    bad("[\"res\", \"h1\"]", "[\"res\", \"deep\"]",
        "estimator.model.layers[8].inputs[1]: \"deep\" is 9 wide, \"res\" 16");
    /* duplicate names */
    bad("{\"name\": \"bn\",", "{\"name\": \"h1\",",
        "estimator.model.layers[3].name: \"h1\" is already a node (layers[2])");
    /* heads */
    bad("\"binary_classification\"", "\"regression\"",
        "label.vocabulary: a regression head has no vocabulary");
    /* multi_label_classification (TF's MultiLabelHead): its spec checked */
    bad("\"binary_classification\"", "\"multi_label_classification\"",
        "estimator.model.heads[0].n_classes: missing");
    bad("\"type\": \"binary_classification\"",
        "\"type\": \"multi_label_classification\", \"n_classes\": 1",
        "estimator.model.heads[0].n_classes: 1 is out of range [2, ");
    bad("\"type\": \"binary_classification\"",
        "\"type\": \"multi_label_classification\", \"n_classes\": 3",
        "label.vocabulary: lists 2 classes but the head estimator.model.heads[0] has 3");
    bad("\"type\": \"binary_classification\"",
        "\"type\": \"multi_label_classification\", \"n_classes\": 2",
        "estimator.model.heads[0].logits: \"logits\" is 1 wide; a multi_label_classification "
        "head with 2 classes reads 2 logits");
    bad("\"type\": \"binary_classification\"",
        "\"type\": \"multi_label_classification\", \"n_classes\": 2, "
        "\"label_delimiter\": \"||\"",
        "estimator.model.heads[0].label_delimiter: \"||\" is not one character");
    bad("\"type\": \"binary_classification\"",
        "\"type\": \"binary_classification\", \"label_delimiter\": \",\"",
        "estimator.model.heads[0].label_delimiter: only a multi_label_classification head");
    {
        char *two = replace(GOOD, "\"inputs\": [\"gate\"], \"units\": 3",
                            "\"inputs\": [\"gate\"], \"units\": 2");
        char *ml = replace(two, "{\"type\": \"binary_classification\", \"logits\": \"logits\"}",
                           "{\"type\": \"multi_label_classification\", \"n_classes\": 2, "
                           "\"logits\": \"three\"}");
        char *gt = replace(ml, "\"n_classes\": 2,",
                           "\"n_classes\": 2, \"label_delimiter\": \">\",");
        bad_text(gt, "label.vocabulary: \">50K\" holds the label_delimiter \">\"");
        free(gt);
        /* one head: a HEAD_MULTI_LABEL head with its
         * delimiter (default "|", or the spec's) and a classification
         * signature (classes, scores) beside predict's logits and probabilities */
        /* the wide block as wide as the logits: 2 */
        char *w1 = replace(GOOD, "\"columns\": [\"gender\", \"age_buckets\"]}",
                           "\"columns\": [\"gender\", \"age_buckets\"], \"units\": 2}");
        char *w2 = replace(w1, "\"inputs\": [\"gate\"], \"units\": 1}",
                           "\"inputs\": [\"gate\"], \"units\": 2}");
        char *ok2 = replace(w2, "{\"type\": \"binary_classification\", \"logits\": \"logits\"}",
                            "{\"type\": \"multi_label_classification\", \"n_classes\": 2, "
                            "\"logits\": \"logits\"}");
        for (int k = 0; k < 2; k++) {
            char *spec_est = k ? replace(ok2, "\"n_classes\": 2,",
                                         "\"n_classes\": 2, \"label_delimiter\": \";\",")
                               : strdup(ok2);
            cJSON *spec = cJSON_Parse(census_text), *e = cJSON_Parse(spec_est);
            cJSON_ReplaceItemInObjectCaseSensitive(spec, "estimator", e);
            static const char *const other[] = {"train", "eval", NULL};
            Predictd__ModelDef *def = NULL;
            rt_err err = {{0}};
            if (rt_spec_to_modeldef(spec, other, &def, &err) != RT_OK)
                fail_msg("multi_label_classification refused: %s", err.msg);
            assert_int_equal(def->head->type, PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL);
            assert_int_equal(def->head->n_classes, 2);
            assert_int_equal(def->graph->logits_dimension, 2);
            assert_string_equal(def->head->label_delimiter, k ? ";" : "|");
            assert_int_equal(rt_metrics_mlabel_delimiter(def->head), k ? ';' : '|');
            size_t found = 0;
            for (size_t q = 0; q < def->n_signatures; q++) {
                const Predictd__SignatureDef *sg = def->signatures[q];
                if (!strcmp(sg->name, "classification")) {
                    assert_int_equal(sg->n_outputs, 2);
                    assert_string_equal(sg->outputs[0]->name, "classes");
                    assert_string_equal(sg->outputs[1]->name, "scores");
                    found++;
                }
                if (!strcmp(sg->name, "predict")) { /* TF's MultiLabelHead.predictions */
                    assert_int_equal(sg->n_outputs, 2);
                    assert_string_equal(sg->outputs[0]->name, "logits");
                    assert_string_equal(sg->outputs[1]->name, "probabilities");
                    found++;
                }
            }
            assert_int_equal(found, 2);
            rt_spec_modeldef_free(def);
            cJSON_Delete(spec);
            free(spec_est);
        }
        free(w1);
        free(w2);
        free(ok2);
        free(two);
        free(ml);
    }
    bad("\"heads\": [{", "\"heads\": [{\"type\": \"regression\", \"logits\": \"three\"}, {",
        "label: with several heads (estimator.model.heads) each head names its label column");
    bad("\"logits\": \"logits\"}", "\"logits\": \"logits\", \"loss_weight\": 2}",
        "estimator.model.heads[0].loss_weight: weights the losses of several heads");
    bad("\"model\": {", "\"modle\": 1, \"model\": {", "estimator.modle: unknown key");
    bad("{\"name\": \"deep\",", "{\"name\": \"deep\", \"units\": 4,",
        "estimator.model.inputs[0].units");
    /* scopes: well formed, tensors named once */
    bad("\"units\": 16,", "\"units\": 16, \"scope\": \"dnn//h\",",
        "estimator.model.layers[2].scope: \"dnn//h\" is not a tensor scope");
    bad("\"inputs\": [\"d1\"], \"units\": 16}", "\"inputs\": [\"d1\"], \"units\": 16, "
        "\"scope\": \"h1\"}", "estimator.model.layers[5].scope: \"h1\" is h1's already");
    bad("\"activation\": \"gelu\"", "\"activation\": \"gelu\", \"kernel_initializer\": \"random\"",
        "estimator.model.layers[2].kernel_initializer: \"random\" is not one of");
    /* summaries: nodes that exist, each once */
    bad("[\"h1\", \"d1\"]", "[\"h1\", \"h9\"]",
        "estimator.model.summaries[1]: no node named \"h9\"");
    bad("[\"h1\", \"d1\"]", "[\"d1\", \"h1\", \"d1\"]",
        "estimator.model.summaries[2]: \"d1\" is already listed (summaries[0])");
    bad("[\"h1\", \"d1\"]", "[{\"node\": \"h1\"}]",
        "estimator.model.summaries[0]: expected a node name, got an object");
    bad("\"summaries\": [\"h1\", \"d1\"]", "\"summaries\": \"h1\"",
        "estimator.model.summaries: expected a list, got a string");
}

static int setup(void **state)
{
    (void)state;
    const char *root = getenv("PREDICTD_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/conf/census.json", root ? root : ".");
    return rt_file_read(AT_FDCWD, path, 1u << 24, 0, &census_text, NULL, NULL) == RT_OK ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_graph),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_multi_head_refusals),
        cmocka_unit_test(test_multi_head_graph),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
