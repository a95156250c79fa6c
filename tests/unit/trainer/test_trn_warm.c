/* test_trn_warm.c — warm starting (train.warm_start_from). A small wide &
 * deep model is trained and exported; a fresh model warm-started from the
 * export, and from the job dir's checkpoint, computes the exported model's
 * logits bit for bit at step 0 (the serving graph of the export against the
 * trainer's). With another vocabulary ([s, x, p] + 1 OOV bucket instead of
 * [p, q, r, s]) the linear weights and the embedding rows move to the new
 * ids by hand: s <- old row 3, p <- old row 0, x and the OOV bucket keep the
 * fresh initialization; the same with var_name_to_vocab_info from a
 * checkpoint. vars_to_warm_start selects by a prefix regex; shape
 * mismatches, missing tensors and bad regexes are refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cJSON.h>

#include "exp.h"
#include "trn_internal.h"

static char dir[256], csv[300], job[300], exported[600];

static const char *SPEC =
    "{\"columns\": [{\"name\": \"x\", \"type\": \"float\", \"default\": 0},"
    " {\"name\": \"c\", \"type\": \"string\", \"default\": \"\"},"
    " {\"name\": \"y\", \"type\": \"string\", \"default\": \"\"}],"
    " \"label\": {\"column\": \"y\", \"vocabulary\": [\"no\", \"yes\"]},"
    " \"feature_columns\": [{\"type\": \"numeric_column\", \"key\": \"x\"},"
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"c\","
    "   \"vocabulary_list\": %s, \"num_oov_buckets\": %d},"
    "  {\"type\": \"embedding_column\", \"name\": \"c_emb\", \"categorical_column\": \"c\","
    "   \"dimension\": 2}],"
    " \"estimator\": {\"type\": \"DNNLinearCombinedClassifier\","
    "  \"linear_feature_columns\": [\"c\"], \"dnn_feature_columns\": [\"x\", \"c_emb\"],"
    "  \"dnn_hidden_units\": [4],"
    "  \"linear_optimizer\": {\"type\": \"Adagrad\", \"learning_rate\": 0.1},"
    "  \"dnn_optimizer\": {\"type\": \"Adagrad\", \"learning_rate\": 0.1}},"
    " \"train\": {\"batch_size\": 16, \"num_epochs\": 3, \"seed\": 5 %s}}";

static const char *OLD_VOCAB = "[\"p\", \"q\", \"r\", \"s\"]";
static const char *NEW_VOCAB = "[\"s\", \"x\", \"p\"]";

static cJSON *spec_of(const char *vocab, int oov, const char *train_extra)
{
    char text[4096];
    snprintf(text, sizeof text, SPEC, vocab, oov, train_extra);
    cJSON *s = cJSON_Parse(text);
    if (!s)
        fail_msg("bad spec: %s", text);
    return s;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_trn_warm.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(csv, sizeof csv, "%s/train.csv", dir);
    snprintf(job, sizeof job, "%s/job", dir);
    FILE *fp = fopen(csv, "w");
    if (!fp)
        return -1;
    static const char *cs[] = {"p", "q", "r", "s"};
    trn_rng r;
    trn_rng_seed(&r, 3);
    for (int i = 0; i < 800; i++) {
        double x = 2 * trn_rng_uniform(&r) - 1;
        size_t k = (size_t)trn_rng_below(&r, 4);
        fprintf(fp, "%.4f,%s,%s\n", x, cs[k], x + (k == 0 ? 0.5 : k == 3 ? -0.5 : 0) > 0 ?
                "yes" : "no");
    }
    fclose(fp);
    /* model A: trained and exported */
    cJSON *spec = spec_of(OLD_VOCAB, 0, "");
    cJSON *train = cJSON_GetObjectItem(spec, "train");
    cJSON_AddItemToObject(train, "files", cJSON_CreateString(csv));
    trn_config c;
    trn_config_init(&c);
    rt_err err;
    rt_status st = trn_config_from_spec(spec, &c, &err);
    c.progress = TRN_PROGRESS_QUIET;
    c.log_level = 2;
    c.job_dir = strdup(job);
    if (st == RT_OK)
        st = trn_train_and_evaluate(spec, &c, NULL, &err);
    trn_config_free(&c);
    cJSON_Delete(spec);
    if (st) {
        fprintf(stderr, "training A: %s\n", err.msg);
        return -1;
    }
    char base[400];
    snprintf(base, sizeof base, "%s/export/model", job);
    int64_t *vers;
    size_t nv;
    if (exp_list_versions(base, &vers, &nv, &err) || nv != 1)
        return -1;
    snprintf(exported, sizeof exported, "%s/%lld", base, (long long)vers[0]);
    free(vers);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A fresh model of spec (seed 11) and its config. */
typedef struct fresh {
    cJSON *spec;
    Predictd__ModelDef *def;
    trn_config c;
    trn_model *m;
} fresh;

static rt_status fresh_new(fresh *f, const char *vocab, int oov, const char *train_extra,
                           rt_err *err)
{
    static const char *const mine[] = {"train", "eval", NULL};
    memset(f, 0, sizeof *f);
    f->spec = spec_of(vocab, oov, train_extra);
    if (rt_spec_to_modeldef(f->spec, mine, &f->def, err))
        fail_msg("spec: %s", err->msg);
    trn_config_init(&f->c);
    rt_status st = trn_config_from_spec(f->spec, &f->c, err);
    if (st)
        return st;
    assert_int_equal(trn_config_resolve(&f->c, f->def, err), RT_OK);
    if (trn_model_new(f->def, &f->c, 11, &f->m, err))
        fail_msg("model: %s", err->msg);
    return RT_OK;
}

static void fresh_free(fresh *f)
{
    trn_model_free(f->m);
    trn_config_free(&f->c);
    rt_spec_modeldef_free(f->def);
    cJSON_Delete(f->spec);
}

/* Logits of a few instances through graph g. */
static void logits_of(const rt_graph *g, float *out)
{
    static const char *cs[] = {"p", "q", "r", "s", "zz"};
    rt_batch *b = rt_batch_new(g);
    assert_non_null(b);
    for (size_t i = 0; i < 5; i++) {
        size_t idx;
        assert_int_equal(rt_batch_add(b, &idx), RT_OK);
        for (size_t in = 0; in < rt_graph_num_inputs(g); in++) {
            if (rt_graph_input_dtype(g, in) == PREDICTD__DTYPE__DT_FLOAT)
                assert_int_equal(rt_batch_push_num(b, idx, in, 0.3 * (double)i - 0.6), RT_OK);
            else
                assert_int_equal(rt_batch_push_str(b, idx, in, cs[i], strlen(cs[i])), RT_OK);
        }
    }
    rt_features f;
    rt_transform_features_init(&f);
    rt_workspace *ws = rt_workspace_new();
    rt_err err;
    assert_int_equal(rt_transform(g, b, &f, &err), RT_OK);
    assert_int_equal(rt_forward(g, &f, ws, out, &err), RT_OK);
    rt_workspace_free(ws);
    rt_transform_features_free(&f);
    rt_batch_free(b);
}

static void warm_and_compare(const char *from)
{
    char extra[800];
    snprintf(extra, sizeof extra, ", \"warm_start_from\": \"%s\"", from);
    fresh f;
    rt_err err;
    assert_int_equal(fresh_new(&f, OLD_VOCAB, 0, extra, &err), RT_OK);
    float before[5], after[5], want[5];
    logits_of(trn_model_graph(f.m), before);
    rt_buf log;
    rt_buf_init(&log);
    if (trn_warm_start_apply(f.m, &f.c, &log, &err))
        fail_msg("warm start: %s", err.msg);
    assert_non_null(strstr(log.data, "tensors copied"));
    rt_buf_free(&log);
    logits_of(trn_model_graph(f.m), after);
    rt_model *em;
    assert_int_equal(rt_model_open(exported, &em, &err), RT_OK);
    logits_of(rt_model_graph(em), want);
    assert_memory_equal(after, want, sizeof want);
    assert_memory_not_equal(before, want, sizeof want);
    assert_int_equal(trn_model_step(f.m), 0);
    rt_model_close(em);
    fresh_free(&f);
}

static void test_export_and_checkpoint_give_the_exported_logits(void **state)
{
    (void)state;
    warm_and_compare(exported);
    warm_and_compare(job); /* the newest checkpoint is the exported step */
}

/* Tensor index whose name ends with suffix. */
static size_t find(const trn_model *m, const char *suffix)
{
    for (size_t i = 0; i < trn_model_num_params(m); i++) {
        trn_param_view v;
        trn_model_param(m, i, &v);
        size_t n = strlen(v.name), k = strlen(suffix);
        if (n >= k && strcmp(v.name + n - k, suffix) == 0)
            return i;
    }
    fail_msg("no tensor ending in %s", suffix);
    return 0;
}

static void check_remapped(const char *extra)
{
    fresh f;
    rt_err err;
    assert_int_equal(fresh_new(&f, NEW_VOCAB, 1, extra, &err), RT_OK);
    size_t li = find(f.m, "linear_model/c/weights"), ei = find(f.m, "embedding_weights");
    trn_param_view lin, emb;
    trn_model_param(f.m, li, &lin);
    trn_model_param(f.m, ei, &emb);
    assert_int_equal(lin.rows, 4); /* s, x, p, OOV */
    assert_int_equal(emb.rows, 4);
    float emb0[8];
    memcpy(emb0, emb.data, sizeof emb0);
    rt_buf log;
    rt_buf_init(&log);
    if (trn_warm_start_apply(f.m, &f.c, &log, &err))
        fail_msg("warm start: %s", err.msg);
    assert_non_null(strstr(log.data, "2 remapped"));
    rt_buf_free(&log);
    rt_model *em;
    assert_int_equal(rt_model_open(exported, &em, &err), RT_OK);
    uint64_t nl, ne;
    const float *ol = rt_model_tensor(em, lin.name, &nl), *oe = rt_model_tensor(em, emb.name, &ne);
    assert_non_null(ol);
    assert_non_null(oe);
    assert_int_equal(nl, 4);
    assert_int_equal(ne, 8);
    /* linear: s <- old 3, x fresh (0), p <- old 0, OOV fresh (0) */
    assert_true(lin.data[0] == ol[3] && lin.data[1] == 0.0f && lin.data[2] == ol[0] &&
                lin.data[3] == 0.0f);
    assert_true(ol[3] != 0.0f && ol[0] != 0.0f);
    /* embedding rows of 2 */
    assert_memory_equal(emb.data + 0, oe + 6, 2 * sizeof(float));
    assert_memory_equal(emb.data + 2, emb0 + 2, 2 * sizeof(float));
    assert_memory_equal(emb.data + 4, oe + 0, 2 * sizeof(float));
    assert_memory_equal(emb.data + 6, emb0 + 6, 2 * sizeof(float));
    rt_model_close(em);
    fresh_free(&f);
}

static void test_vocabulary_remap(void **state)
{
    (void)state;
    char extra[2000];
    /* from the export: the old vocabulary is the export's own column's */
    snprintf(extra, sizeof extra, ", \"warm_start_from\": {\"ckpt_to_initialize_from\": \"%s\","
             " \"vars_to_warm_start\": \"linear/|dnn/input_from_feature_columns\"}", exported);
    check_remapped(extra);
    /* from a checkpoint, which knows no vocabularies: var_name_to_vocab_info */
    snprintf(extra, sizeof extra, ", \"warm_start_from\": {\"ckpt_to_initialize_from\": \"%s\","
             " \"vars_to_warm_start\": \"linear/|dnn/input_from_feature_columns\","
             " \"var_name_to_vocab_info\": {"
             "  \"linear/linear_model/c/weights\": {\"old_vocab\": %s},"
             "  \"dnn/input_from_feature_columns/c_emb/embedding_weights\":"
             "   {\"old_vocab\": %s}}}", job, OLD_VOCAB, OLD_VOCAB);
    check_remapped(extra);
}

static void expect_refusal(const char *vocab, int oov, const char *extra, const char *want)
{
    fresh f;
    rt_err err;
    rt_status st = fresh_new(&f, vocab, oov, extra, &err);
    if (st == RT_OK)
        st = trn_warm_start_apply(f.m, &f.c, NULL, &err);
    assert_int_not_equal(st, RT_OK);
    if (!strstr(err.msg, want))
        fail_msg("got \"%s\", want \"%s\"", err.msg, want);
    fresh_free(&f);
}

static void test_refusals(void **state)
{
    (void)state;
    char extra[2000];
    /* a checkpoint with another vocabulary size and no vocab info: a shape
     * mismatch (a same-sized one is copied as is, as TF: a checkpoint does
     * not know its vocabularies) */
    snprintf(extra, sizeof extra, ", \"warm_start_from\": \"%s\"", job);
    expect_refusal(NEW_VOCAB, 2, extra, "train.warm_start_from: tensor "
                   "linear/linear_model/c/weights has 4 values in");
    snprintf(extra, sizeof extra, ", \"warm_start_from\": {\"ckpt_to_initialize_from\": \"%s\","
             " \"vars_to_warm_start\": \"dnn/(\"}", job);
    expect_refusal(OLD_VOCAB, 0, extra, "vars_to_warm_start: \"dnn/(\" is not a regular");
    snprintf(extra, sizeof extra, ", \"warm_start_from\": \"%s/nothing\"", dir);
    expect_refusal(OLD_VOCAB, 0, extra, "holds neither an export (model.pb) nor a checkpoint");
    snprintf(extra, sizeof extra, ", \"warm_start_from\": {\"ckpt_to_initialize_from\": \"%s\","
             " \"var_name_to_vocab_info\": {\"linear/nope\": {\"old_vocab\": [\"a\"]}}}", job);
    expect_refusal(OLD_VOCAB, 0, extra, "\"linear/nope\" is not a tensor of this model");
    snprintf(extra, sizeof extra, ", \"warm_start_from\": 7");
    expect_refusal(OLD_VOCAB, 0, extra, "train.warm_start_from: expected a path or an object");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_and_checkpoint_give_the_exported_logits),
        cmocka_unit_test(test_vocabulary_remap),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
