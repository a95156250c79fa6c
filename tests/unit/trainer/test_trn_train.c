/* test_trn_train.c — training end to end on small synthetic CSV files
 * written by the test: a wide & deep classifier learns a known decision
 * rule, a linear regressor recovers known coefficients, the same seed gives
 * the same checkpoint bit for bit, checkpoints restore exactly (and a damaged
 * newest one is skipped), a run resumes from --job-dir, exports load in the
 * runtime; the row cache gives back each row's labels and weight; and the
 * spec/flags parsing refuses bad input naming the key. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <cJSON.h>

#include "rt.h"
#include "exp.h"
#include "trn.h"

static char dir[256];
static char train_csv[300], eval_csv[300], reg_csv[300];

static const char *CLS_SPEC =
    "{\"columns\": [{\"name\": \"x1\", \"type\": \"float\", \"default\": 0},"
    " {\"name\": \"x2\", \"type\": \"float\", \"default\": 0},"
    " {\"name\": \"c\", \"type\": \"string\", \"default\": \"\"},"
    " {\"name\": \"noise\", \"type\": \"int\", \"default\": 0},"
    " {\"name\": \"y\", \"type\": \"string\", \"default\": \"\"}],"
    " \"unused_columns\": [\"noise\"],"
    " \"label\": {\"column\": \"y\", \"vocabulary\": [\"no\", \"yes\"]},"
    " \"feature_columns\": ["
    "  {\"type\": \"numeric_column\", \"key\": \"x1\"},"
    "  {\"type\": \"numeric_column\", \"key\": \"x2\"},"
    "  {\"type\": \"bucketized_column\", \"name\": \"x1_b\", \"source\": \"x1\","
    "   \"boundaries\": [-1, -0.5, 0, 0.5, 1]},"
    "  {\"type\": \"categorical_column_with_vocabulary_list\", \"key\": \"c\","
    "   \"vocabulary_list\": [\"p\", \"q\", \"r\", \"s\"]},"
    "  {\"type\": \"indicator_column\", \"name\": \"c_ind\", \"categorical_column\": \"c\"}],"
    " \"estimator\": {\"type\": \"DNNLinearCombinedClassifier\","
    "  \"linear_feature_columns\": [\"c\", \"x1_b\"],"
    "  \"dnn_feature_columns\": [\"x1\", \"x2\", \"c_ind\"], \"dnn_hidden_units\": [16, 8],"
    "  \"linear_optimizer\": {\"type\": \"Ftrl\", \"learning_rate\": 0.1},"
    "  \"dnn_optimizer\": {\"type\": \"Adagrad\", \"learning_rate\": 0.1}},"
    " \"train\": {\"batch_size\": 32, \"num_epochs\": 8, \"shuffle_buffer_size\": 500,"
    "  \"save_checkpoints_steps\": 100, \"keep_checkpoint_max\": 3, \"seed\": 7},"
    " \"eval\": {\"steps\": 0},"
    " \"export\": {\"name\": \"syn\", \"exporters\": [{\"type\": \"FinalExporter\"},"
    "  {\"type\": \"BestExporter\", \"metric\": \"auc\"}]}}";

static const char *REG_SPEC =
    "{\"columns\": [{\"name\": \"x1\", \"type\": \"float\", \"default\": 0},"
    " {\"name\": \"x2\", \"type\": \"float\", \"default\": 0},"
    " {\"name\": \"y\", \"type\": \"float\", \"default\": 0}],"
    " \"label\": {\"column\": \"y\"},"
    " \"feature_columns\": [{\"type\": \"numeric_column\", \"key\": \"x1\"},"
    "  {\"type\": \"numeric_column\", \"key\": \"x2\"}],"
    " \"estimator\": {\"type\": \"LinearRegressor\", \"feature_columns\": [\"x1\", \"x2\"],"
    "  \"optimizer\": {\"type\": \"SGD\", \"learning_rate\": 0.1}},"
    " \"train\": {\"batch_size\": 16, \"num_epochs\": 5, \"seed\": 3}}";

/* The rule the classifier must learn. */
static int rule(double x1, double x2, const char *c)
{
    double s = 1.5 * x1 - x2 + (strcmp(c, "p") == 0 ? 1.0 : strcmp(c, "q") == 0 ? -1.0 : 0.0);
    return s > 0;
}

static void write_cls(const char *path, int n, uint64_t seed)
{
    static const char *cs[] = {"p", "q", "r", "s"};
    trn_rng r;
    trn_rng_seed(&r, seed);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    for (int i = 0; i < n; i++) {
        double x1 = 4 * trn_rng_uniform(&r) - 2, x2 = 4 * trn_rng_uniform(&r) - 2;
        const char *c = cs[trn_rng_below(&r, 4)];
        fprintf(fp, "%.4f, %.4f, %s, %d, %s\n", x1, x2, c, i, rule(x1, x2, c) ? "yes" : "no");
    }
    fclose(fp);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_trn_train.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(train_csv, sizeof train_csv, "%s/train.csv", dir);
    snprintf(eval_csv, sizeof eval_csv, "%s/eval.csv", dir);
    snprintf(reg_csv, sizeof reg_csv, "%s/reg.csv", dir);
    write_cls(train_csv, 4000, 1);
    write_cls(eval_csv, 1000, 2);
    trn_rng r;
    trn_rng_seed(&r, 9);
    FILE *fp = fopen(reg_csv, "w");
    if (!fp)
        return -1;
    for (int i = 0; i < 2000; i++) {
        double x1 = 2 * trn_rng_uniform(&r) - 1, x2 = 2 * trn_rng_uniform(&r) - 1;
        fprintf(fp, "%.5f,%.5f,%.5f\n", x1, x2, 2 * x1 - x2 + 0.5);
    }
    fclose(fp);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs train_and_evaluate on spec with overrides into job (may be NULL). */
static rt_status train(const char *spec_text, const trn_overrides *o, const char *job,
                       rt_metric_list *ml, rt_err *err)
{
    cJSON *spec = cJSON_Parse(spec_text);
    assert_non_null(spec);
    trn_config c;
    trn_config_init(&c);
    rt_status st = trn_spec_apply_overrides(spec, o, err);
    if (st == RT_OK)
        st = trn_config_from_spec(spec, &c, err);
    c.progress = TRN_PROGRESS_QUIET;
    if (job)
        c.job_dir = strdup(job);
    if (st == RT_OK)
        st = trn_train_and_evaluate(spec, &c, ml, err);
    trn_config_free(&c);
    cJSON_Delete(spec);
    return st;
}

static void job_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void test_learns_synthetic_rule(void **state)
{
    (void)state;
    trn_overrides o;
    trn_overrides_init(&o);
    o.train_files = train_csv;
    o.eval_files = eval_csv;
    char job[300];
    job_path(job, sizeof job, "job-learn");
    rt_metric_list ml;
    rt_err err;
    rt_status st = train(CLS_SPEC, &o, job, &ml, &err);
    if (st)
        fail_msg("train: %s", err.msg);
    double acc = rt_metric_get(&ml, "accuracy"), auc = rt_metric_get(&ml, "auc");
    print_message("synthetic rule: accuracy %.4f auc %.4f\n", acc, auc);
    assert_true(acc > 0.95);
    assert_true(auc > 0.99);
    assert_true(rt_metric_get(&ml, "global_step") == 1000); /* 8 x 4000 / 32 */

    /* metrics.jsonl has the evaluation, the exports load and predict */
    char p[400];
    snprintf(p, sizeof p, "%s/eval/metrics.jsonl", job);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    char line[2048];
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    assert_non_null(strstr(line, "\"global_step\": 1000"));
    const char *names[2] = {"syn", "best"};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/export/%s", job, names[k]);
        int64_t *vers;
        size_t nv;
        assert_int_equal(exp_list_versions(p, &vers, &nv, &err), RT_OK);
        assert_int_equal(nv, 1);
        char vd[500];
        snprintf(vd, sizeof vd, "%s/%lld", p, (long long)vers[0]);
        free(vers);
        rt_model *m;
        if (rt_model_open(vd, &m, &err) != RT_OK)
            fail_msg("export %s: %s", vd, err.msg);
        const Predictd__ModelDef *d = rt_model_def(m);
        assert_non_null(d->training);
        assert_int_equal(d->training->global_step, 1000);
        assert_true(d->training->n_eval_metrics > 5);
        /* the served model answers the rule: x1 = 1.5, c = p -> yes */
        rt_ctx *ctx = rt_ctx_new();
        rt_buf out;
        rt_buf_init(&out);
        const char *body =
            "{\"instances\": [{\"x1\": 1.5, \"x2\": 0, \"c\": \"p\"},"
            " {\"x1\": -1.5, \"x2\": 1, \"c\": \"q\"}]}";
        rt_json_params jp = rt_json_default_params();
        if (rt_json_handle(m, RT_METHOD_PREDICT, body, strlen(body), &jp, ctx, &out, &err))
            fail_msg("predict: %s", err.msg);
        cJSON *ans = cJSON_Parse(out.data);
        assert_non_null(ans);
        cJSON *preds = cJSON_GetObjectItem(ans, "predictions");
        assert_int_equal(cJSON_GetArraySize(preds), 2);
        cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(preds, 0),
                                                           "class_ids"), 0);
        cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(preds, 1),
                                                           "class_ids"), 0);
        assert_int_equal((int)c0->valuedouble, 1);
        assert_int_equal((int)c1->valuedouble, 0);
        cJSON_Delete(ans);
        rt_buf_free(&out);
        rt_ctx_free(ctx);
        rt_model_close(m);
    }
    /* keep_checkpoint_max 3 */
    int64_t *steps;
    size_t n;
    assert_int_equal(trn_ckpt_list(job, &steps, &n, &err), RT_OK);
    assert_int_equal(n, 3);
    assert_true(steps[2] == 1000);
    free(steps);
}

static void test_learns_regression(void **state)
{
    (void)state;
    trn_overrides o;
    trn_overrides_init(&o);
    o.train_files = reg_csv;
    o.eval_files = reg_csv;
    rt_metric_list ml;
    rt_err err;
    rt_status st = train(REG_SPEC, &o, NULL, &ml, &err);
    if (st)
        fail_msg("train: %s", err.msg);
    print_message("regression: average_loss %.6f\n", rt_metric_get(&ml, "average_loss"));
    assert_true(rt_metric_get(&ml, "average_loss") < 1e-3);
    assert_true(fabs(rt_metric_get(&ml, "label/mean") - rt_metric_get(&ml, "prediction/mean")) <
                0.01);
}

/* Reads a whole file into a malloc'd buffer. */
static unsigned char *slurp(const char *path, size_t *len)
{
    char *s = NULL;
    *len = 0;
    return rt_file_read(AT_FDCWD, path, 1u << 30, 0, &s, len, NULL) == RT_OK ? (unsigned char *)s
                                                                           : NULL;
}

static void test_same_seed_same_model(void **state)
{
    (void)state;
    trn_overrides o;
    trn_overrides_init(&o);
    o.train_files = train_csv;
    o.train_steps = 300;
    o.num_epochs = 0;
    rt_err err;
    char ja[300], jb[300], jc[300];
    job_path(ja, sizeof ja, "job-seed-a");
    job_path(jb, sizeof jb, "job-seed-b");
    job_path(jc, sizeof jc, "job-seed-c");
    assert_int_equal(train(CLS_SPEC, &o, ja, NULL, &err), RT_OK);
    assert_int_equal(train(CLS_SPEC, &o, jb, NULL, &err), RT_OK);
    o.seed = 8;
    assert_int_equal(train(CLS_SPEC, &o, jc, NULL, &err), RT_OK);
    char pa[400], pb[400], pc[400];
    snprintf(pa, sizeof pa, "%s/model.ckpt-300", ja);
    snprintf(pb, sizeof pb, "%s/model.ckpt-300", jb);
    snprintf(pc, sizeof pc, "%s/model.ckpt-300", jc);
    size_t la, lb, lc;
    unsigned char *a = slurp(pa, &la), *b = slurp(pb, &lb), *c = slurp(pc, &lc);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);          /* bit for bit */
    assert_int_equal(la, lc);
    assert_memory_not_equal(a, c, la);      /* another seed, another model */
    free(a);
    free(b);
    free(c);
}

/* Builds a model straight from the spec (for checkpoint tests). */
static void make_model(cJSON *spec, Predictd__ModelDef **def, trn_model **m, trn_config *c)
{
    static const char *const mine[] = {"train", "eval", NULL};
    rt_err err;
    trn_config_init(c);
    assert_int_equal(rt_spec_to_modeldef(spec, mine, def, &err), RT_OK);
    assert_int_equal(trn_config_from_spec(spec, c, &err), RT_OK);
    assert_int_equal(trn_config_resolve(c, *def, &err), RT_OK);
    assert_int_equal(trn_model_new(*def, c, 5, m, &err), RT_OK);
}

static void assert_models_equal(const trn_model *a, const trn_model *b)
{
    assert_int_equal(trn_model_step(a), trn_model_step(b));
    assert_int_equal(trn_model_num_params(a), trn_model_num_params(b));
    for (size_t i = 0; i < trn_model_num_params(a); i++) {
        trn_param_view va, vb;
        trn_model_param(a, i, &va);
        trn_model_param(b, i, &vb);
        assert_memory_equal(va.data, vb.data, va.count * sizeof(float));
        float *sa[TRN_OPT_SLOTS_MAX], *sb[TRN_OPT_SLOTS_MAX];
        size_t na = trn_model_slots(a, i, sa), nb = trn_model_slots(b, i, sb);
        assert_int_equal(na, nb);
        for (size_t s = 0; s < na; s++)
            assert_memory_equal(sa[s], sb[s], va.count * sizeof(float));
    }
}

static void test_checkpoint_round_trip_and_damage(void **state)
{
    (void)state;
    cJSON *spec = cJSON_Parse(CLS_SPEC);
    Predictd__ModelDef *def;
    trn_model *m, *m2;
    trn_config c;
    make_model(spec, &def, &m, &c);
    rt_err err;
    /* train a few steps so weights and slots are not initial */
    trn_feeder *fd;
    assert_int_equal(trn_feeder_new(trn_model_graph(m), &fd, &err), RT_OK);
    trn_reader_params p = trn_reader_default_params();
    const char *files[1] = {train_csv};
    size_t ncol;
    p.numeric = trn_feeder_numeric(fd, &ncol);
    p.n_fields = ncol;
    p.files = files;
    p.n_files = 1;
    p.batch_size = 32;
    trn_reader *r;
    assert_int_equal(trn_reader_open(&p, &r, &err), RT_OK);
    rt_batch *b = rt_batch_new(trn_model_graph(m));
    float labels[32];
    char job[300];
    job_path(job, sizeof job, "job-ckpt");
    for (int s = 0; s < 30; s++) {
        const trn_rows *rows;
        assert_int_equal(trn_reader_next(r, &rows, &err), RT_OK);
        assert_int_equal(trn_feeder_fill(fd, rows, b, labels, NULL, TRN_BAD_ROW_STOP, NULL, &err),
                         RT_OK);
        double loss;
        assert_int_equal(trn_model_train_step(m, b, labels, NULL, &loss, &err), RT_OK);
        if (s == 9 || s == 19 || s == 29)
            assert_int_equal(trn_ckpt_save(m, job, 5, &err), RT_OK);
    }
    trn_reader_close(r);
    rt_batch_free(b);
    trn_feeder_free(fd);

    /* a fresh model restores the newest exactly */
    Predictd__ModelDef *def2;
    trn_config c2;
    make_model(spec, &def2, &m2, &c2);
    int64_t step;
    assert_int_equal(trn_ckpt_restore(m2, job, &step, NULL, &err), RT_OK);
    assert_int_equal(step, 30);
    assert_models_equal(m, m2);

    /* damage the newest: it is skipped with a warning, step 20 is restored */
    char path[400];
    snprintf(path, sizeof path, "%s/model.ckpt-30", job);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 100, SEEK_SET);
    fputc(0x5a, fp);
    fclose(fp);
    rt_buf warn;
    rt_buf_init(&warn);
    assert_int_equal(trn_ckpt_restore(m2, job, &step, &warn, &err), RT_OK);
    assert_int_equal(step, 20);
    assert_non_null(strstr(warn.data, "model.ckpt-30: checksum mismatch"));
    rt_buf_free(&warn);
    /* a truncated one too */
    assert_int_equal(truncate(path, 50), 0);
    assert_int_equal(trn_ckpt_restore(m2, job, &step, NULL, &err), RT_OK);
    assert_int_equal(step, 20);

    /* a checkpoint of another model is refused, not silently skipped */
    trn_model_free(m2);
    rt_spec_modeldef_free(def2);
    trn_config_free(&c2);
    cJSON *other = cJSON_Parse(CLS_SPEC);
    cJSON *est = cJSON_GetObjectItem(other, "estimator");
    cJSON_ReplaceItemInObject(est, "dnn_hidden_units", cJSON_Parse("[9]"));
    make_model(other, &def2, &m2, &c2);
    assert_int_equal(trn_ckpt_restore(m2, job, &step, NULL, &err), RT_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "changed?"));
    trn_model_free(m2);
    rt_spec_modeldef_free(def2);
    trn_config_free(&c2);
    cJSON_Delete(other);

    trn_model_free(m);
    rt_spec_modeldef_free(def);
    trn_config_free(&c);
    cJSON_Delete(spec);
}

static void test_resume_from_job_dir(void **state)
{
    (void)state;
    trn_overrides o;
    trn_overrides_init(&o);
    o.train_files = train_csv;
    o.eval_files = eval_csv;
    o.num_epochs = 0;
    o.train_steps = 150;
    char job[300];
    job_path(job, sizeof job, "job-resume");
    rt_metric_list ml;
    rt_err err;
    assert_int_equal(train(CLS_SPEC, &o, job, &ml, &err), RT_OK);
    assert_true(rt_metric_get(&ml, "global_step") == 150);
    o.train_steps = 420; /* absolute, as max_steps */
    assert_int_equal(train(CLS_SPEC, &o, job, &ml, &err), RT_OK);
    assert_true(rt_metric_get(&ml, "global_step") == 420);
    int64_t *steps;
    size_t n;
    assert_int_equal(trn_ckpt_list(job, &steps, &n, &err), RT_OK);
    /* 150 (first run), 250, 350 (every 100 steps since 150), 420; keep 3 */
    assert_int_equal(n, 3);
    assert_true(steps[0] == 250 && steps[1] == 350 && steps[2] == 420);
    free(steps);
    /* already there and exported: as TF, no training, no evaluation, no export */
    assert_int_equal(train(CLS_SPEC, &o, job, &ml, &err), RT_OK);
    assert_int_equal(ml.n, 0);
    /* one evaluation appended per run that trained (150, 420); none by the third */
    char p[400];
    snprintf(p, sizeof p, "%s/eval/metrics.jsonl", job);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    int lines = 0, ch;
    while ((ch = fgetc(fp)) != EOF)
        lines += ch == '\n';
    fclose(fp);
    assert_int_equal(lines, 2);
}

/* Interrupted at 150 and resumed to 300 == one run to 300, bit for bit:
 * the checkpoint holds every optimizer slot and the input stream is
 * replayed to the restored step. Trains spec to 300 steps once, and to 150
 * then resumed to 300 in another job dir; the checkpoints must be the same
 * bytes. */
static void resume_check(const char *spec, const char *tag)
{
    trn_overrides o;
    trn_overrides_init(&o);
    o.train_files = train_csv;
    o.num_epochs = 0;
    rt_err err;
    char ja[400], jb[400], na[32], nb[32];
    snprintf(na, sizeof na, "job-once%s", tag);
    snprintf(nb, sizeof nb, "job-twice%s", tag);
    job_path(ja, sizeof ja, na);
    job_path(jb, sizeof jb, nb);
    o.train_steps = 300;
    assert_int_equal(train(spec, &o, ja, NULL, &err), RT_OK);
    o.train_steps = 150;
    assert_int_equal(train(spec, &o, jb, NULL, &err), RT_OK);
    o.train_steps = 300;
    assert_int_equal(train(spec, &o, jb, NULL, &err), RT_OK);
    char pa[500], pb[500];
    snprintf(pa, sizeof pa, "%s/model.ckpt-300", ja);
    snprintf(pb, sizeof pb, "%s/model.ckpt-300", jb);
    size_t la, lb;
    unsigned char *a = slurp(pa, &la), *b = slurp(pb, &lb);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
}

/* CLS_SPEC with other optimizers (a malloc'd string). */
static char *with_optimizers(const char *linear, const char *dnn)
{
    cJSON *spec = cJSON_Parse(CLS_SPEC);
    assert_non_null(spec);
    cJSON *est = cJSON_GetObjectItemCaseSensitive(spec, "estimator");
    cJSON_ReplaceItemInObject(est, "linear_optimizer", cJSON_Parse(linear));
    cJSON_ReplaceItemInObject(est, "dnn_optimizer", cJSON_Parse(dnn));
    char *text = cJSON_PrintUnformatted(spec);
    cJSON_Delete(spec);
    assert_non_null(text);
    return text;
}

static void test_resume_equals_uninterrupted(void **state)
{
    (void)state;
    resume_check(CLS_SPEC, "");
    /* RMSProp's three slots and ProximalAdagrad's accumulator resume too */
    char *spec = with_optimizers("{\"type\": \"ProximalAdagrad\", \"learning_rate\": 0.1,"
                                 " \"l1_regularization_strength\": 0.001}",
                                 "{\"type\": \"RMSProp\", \"learning_rate\": 0.01,"
                                 " \"momentum\": 0.9, \"centered\": true}");
    resume_check(spec, "-rms");
    free(spec);
    trn_overrides o;
    rt_err err;
    /* with epochs: a finished run resumed trains nothing more */
    trn_overrides_init(&o);
    o.train_files = train_csv;
    o.num_epochs = 1;
    char jc[300];
    job_path(jc, sizeof jc, "job-epochs");
    assert_int_equal(train(CLS_SPEC, &o, jc, NULL, &err), RT_OK);
    assert_int_equal(train(CLS_SPEC, &o, jc, NULL, &err), RT_OK);
    int64_t *steps;
    size_t n;
    assert_int_equal(trn_ckpt_list(jc, &steps, &n, &err), RT_OK);
    assert_true(n > 0 && steps[n - 1] == 125); /* 4000 / 32 */
    free(steps);
}

/* Evaluations after every checkpoint (throttle 0): LatestExporter keeps the
 * newest 2, BestExporter exports exactly when the loss improves. */
static void test_latest_and_best_exporters(void **state)
{
    (void)state;
    cJSON *spec = cJSON_Parse(CLS_SPEC);
    cJSON *ev = cJSON_GetObjectItem(spec, "eval");
    cJSON_AddNumberToObject(ev, "throttle_secs", 0);
    cJSON *ex = cJSON_GetObjectItem(spec, "export");
    cJSON_ReplaceItemInObject(ex, "exporters",
                              cJSON_Parse("[{\"type\": \"LatestExporter\", \"exports_to_keep\": 2},"
                                          " {\"type\": \"BestExporter\"}]"));
    char *text = cJSON_PrintUnformatted(spec);
    cJSON_Delete(spec);
    trn_overrides o;
    trn_overrides_init(&o);
    o.train_files = train_csv;
    o.eval_files = eval_csv;
    o.num_epochs = 0;
    o.train_steps = 500;
    char job[300];
    job_path(job, sizeof job, "job-exporters");
    rt_err err;
    rt_status st = train(text, &o, job, NULL, &err);
    free(text);
    if (st)
        fail_msg("train: %s", err.msg);
    /* evaluations at 100, 200, 300, 400 and the final one at 500 */
    char p[400];
    snprintf(p, sizeof p, "%s/eval/metrics.jsonl", job);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    char line[2048];
    double losses[8];
    int nl = 0;
    while (nl < 8 && fgets(line, sizeof line, fp)) {
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        assert_int_equal((int)cJSON_GetObjectItem(j, "global_step")->valuedouble, 100 * (nl + 1));
        losses[nl++] = cJSON_GetObjectItem(j, "loss")->valuedouble;
        cJSON_Delete(j);
    }
    fclose(fp);
    assert_int_equal(nl, 5);
    int improvements = 0;
    double best = INFINITY;
    for (int i = 0; i < nl; i++)
        if (losses[i] < best) {
            best = losses[i];
            improvements++;
        }
    int64_t *vers;
    size_t nv;
    snprintf(p, sizeof p, "%s/export/latest", job);
    assert_int_equal(exp_list_versions(p, &vers, &nv, &err), RT_OK);
    assert_int_equal(nv, 2);
    /* the two kept are the newest: steps 400 and 500, in version order */
    for (size_t k = 0; k < 2; k++) {
        char vd2[500];
        snprintf(vd2, sizeof vd2, "%s/%lld", p, (long long)vers[k]);
        rt_model *lm;
        assert_int_equal(rt_model_open(vd2, &lm, &err), RT_OK);
        assert_int_equal(rt_model_def(lm)->training->global_step, 400 + 100 * (int)k);
        rt_model_close(lm);
    }
    free(vers);
    snprintf(p, sizeof p, "%s/export/best", job);
    assert_int_equal(exp_list_versions(p, &vers, &nv, &err), RT_OK);
    assert_int_equal((int)nv, improvements);
    /* the newest best export carries the best loss */
    char vd[500];
    snprintf(vd, sizeof vd, "%s/%lld", p, (long long)vers[nv - 1]);
    free(vers);
    rt_model *m;
    assert_int_equal(rt_model_open(vd, &m, &err), RT_OK);
    const Predictd__TrainingInfo *t = rt_model_def(m)->training;
    double got = NAN;
    for (size_t i = 0; i < t->n_eval_metrics; i++)
        if (strcmp(t->eval_metrics[i]->name, "loss") == 0)
            got = t->eval_metrics[i]->value;
    assert_true(fabs(got - best) < 1e-12);
    rt_model_close(m);
}

static void test_spec_errors_name_the_key(void **state)
{
    (void)state;
    struct {
        const char *patch; /* JSON merged into "train"/"eval"/"export" */
        const char *section;
        const char *expect;
    } cases[] = {
        {"{\"bogus\": 1}", "train", "train.bogus: unknown key"},
        {"{\"batch_size\": 0}", "train", "train.batch_size: 0 is out of range [1, 1048576]"},
        {"{\"batch_size\": \"big\"}", "train",
         "train.batch_size: expected an integer, got a string"},
        {"{\"batch_size\": 2.5}", "train", "train.batch_size: expected an integer, got 2.5"},
        {"{\"files\": [\"a.csv\", 7]}", "train",
         "train.files[1]: expected a non-empty string, got a number"},
        {"{\"on_bad_row\": \"maybe\"}", "train", "train.on_bad_row"},
        {"{\"shard_policy\": \"FILE\"}", "train",
         "train.shard_policy: must be \"AUTO\" or \"BATCH\""},
        {"{\"shard_policy\": 1}", "train", "train.shard_policy: expected"},
        {"{\"throttle_secs\": -1}", "eval", "eval.throttle_secs"},
        {"{\"exporters\": [{\"type\": \"SometimesExporter\"}]}", "export",
         "export.exporters[0].type"},
        {"{\"exporters\": [{\"type\": \"LatestExporter\", \"metric\": \"auc\"}]}", "export",
         "export.exporters[0].metric: only for BestExporter"},
        {"{\"exporters\": [{\"name\": \"x\"}]}", "export",
         "export.exporters[0].type: missing (required)"},
        {"{\"exporters\": [{\"type\": \"BestExporter\", \"higher_is_better\": 1}]}",
         "export", "export.exporters[0].higher_is_better: expected true or false, got a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *spec = cJSON_Parse(CLS_SPEC);
        cJSON *sec = cJSON_GetObjectItem(spec, cases[i].section);
        cJSON *patch = cJSON_Parse(cases[i].patch);
        assert_non_null(sec);
        assert_non_null(patch);
        for (cJSON *it = patch->child; it; it = it->next) {
            cJSON_DeleteItemFromObject(sec, it->string);
            cJSON_AddItemToObject(sec, it->string, cJSON_Duplicate(it, 1));
        }
        trn_config c;
        trn_config_init(&c);
        rt_err err;
        err.msg[0] = '\0';
        rt_status st = trn_config_from_spec(spec, &c, &err);
        if (st == RT_OK || !strstr(err.msg, cases[i].expect))
            fail_msg("case %zu: got \"%s\", expected \"%s\"", i, err.msg, cases[i].expect);
        trn_config_free(&c);
        cJSON_Delete(patch);
        cJSON_Delete(spec);
    }
    /* optimizer errors */
    cJSON *spec = cJSON_Parse(CLS_SPEC);
    cJSON *est = cJSON_GetObjectItem(spec, "estimator");
    cJSON_ReplaceItemInObject(est, "dnn_optimizer", cJSON_Parse("{\"type\": \"Nadam\"}"));
    trn_config c;
    trn_config_init(&c);
    rt_err err;
    assert_int_equal(trn_config_from_spec(spec, &c, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "estimator.dnn_optimizer.type"));
    cJSON_Delete(spec);
    trn_config_free(&c);
}

static void test_overrides_and_defaults(void **state)
{
    (void)state;
    cJSON *spec = cJSON_Parse(CLS_SPEC);
    cJSON *est = cJSON_GetObjectItem(spec, "estimator");
    cJSON_DeleteItemFromObject(est, "linear_optimizer");
    cJSON_DeleteItemFromObject(est, "dnn_optimizer");
    trn_overrides o;
    trn_overrides_init(&o);
    o.first_layer_size = 100;
    o.num_layers = 4;
    o.scale_factor = 0.7;
    o.batch_size = 64;
    o.train_steps = 1234;
    o.export_format = "CSV";
    o.train_files = "a.csv,b*.csv";
    rt_err err;
    assert_int_equal(trn_spec_apply_overrides(spec, &o, &err), RT_OK);
    cJSON *hu = cJSON_GetObjectItem(est, "dnn_hidden_units");
    int want[4] = {100, 70, 48, 34}; /* the tutorial's max(2, int(100 * 0.7^i)) */
    assert_int_equal(cJSON_GetArraySize(hu), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal((int)cJSON_GetArrayItem(hu, i)->valuedouble, want[i]);
    trn_config c;
    trn_config_init(&c);
    assert_int_equal(trn_config_from_spec(spec, &c, &err), RT_OK);
    assert_int_equal(c.batch_size, 64);
    assert_int_equal(c.max_steps, 1234);
    assert_int_equal(c.n_train_files, 2);
    assert_string_equal(c.train_files[1], "b*.csv");
    assert_int_equal(c.n_exporters, 2);
    assert_int_equal(c.exporters[1].type, TRN_EXPORTER_BEST);
    assert_int_equal(c.exporters[1].higher_is_better, 1);
    /* canned defaults for wide & deep: Ftrl min(0.005, 1/sqrt(2)), Adagrad 0.001 */
    static const char *const mine[] = {"train", "eval", NULL};
    Predictd__ModelDef *def;
    assert_int_equal(rt_spec_to_modeldef(spec, mine, &def, &err), RT_OK);
    assert_int_equal(def->receiver, PREDICTD__RECEIVER__RECEIVER_CSV);
    assert_int_equal(trn_config_resolve(&c, def, &err), RT_OK);
    assert_int_equal(c.linear_opt.type, TRN_OPT_FTRL);
    assert_true(c.linear_opt.learning_rate == 0.005);
    assert_int_equal(c.dnn_opt.type, TRN_OPT_ADAGRAD);
    assert_true(c.dnn_opt.learning_rate == 0.001);
    rt_spec_modeldef_free(def);
    trn_config_free(&c);
    cJSON_Delete(spec);
}

/* The row cache (trn_cache.c) keeps each row's targets: with label_dimension
 * 2 and a weight column, rows fed from their records (a later epoch, another
 * order) come back with their two labels and their weight, and the model's
 * loss on them equals the loss on the same rows fed and transformed anew. */
static void test_cache_keeps_labels_and_weights(void **state)
{
    (void)state;
    static const char *SPEC =
        "{\"columns\": [{\"name\": \"x\", \"type\": \"float\"}, {\"name\": \"y0\", \"type\": \"float\"},"
        " {\"name\": \"y1\", \"type\": \"float\"}, {\"name\": \"w\", \"type\": \"float\"}],"
        " \"label\": {\"columns\": [\"y0\", \"y1\"]},"
        " \"feature_columns\": [{\"type\": \"numeric_column\", \"key\": \"x\"},"
        "  {\"type\": \"bucketized_column\", \"name\": \"x_b\", \"source\": \"x\","
        "   \"boundaries\": [0, 1]}],"
        " \"estimator\": {\"type\": \"LinearRegressor\", \"feature_columns\": [\"x\", \"x_b\"],"
        "  \"label_dimension\": 2, \"weight_column\": \"w\","
        "  \"optimizer\": {\"type\": \"SGD\", \"learning_rate\": 0.1}},"
        " \"train\": {\"batch_size\": 4, \"num_epochs\": 2, \"seed\": 3}}";
    static const char *cells[4][4] = {{"1.5", "2", "-1", "0.5"}, {"-0.5", "3", "4", "2"},
                                      {"2", "0", "1", "3"}, {"0.25", "-2", "5", "1"}};
    cJSON *spec = cJSON_Parse(SPEC);
    Predictd__ModelDef *def;
    trn_model *m;
    trn_config c;
    make_model(spec, &def, &m, &c);
    rt_err err;
    trn_feeder *fd;
    assert_int_equal(trn_feeder_new(trn_model_graph(m), &fd, &err), RT_OK);
    assert_int_equal(trn_feeder_label_dim(fd), 2);
    assert_int_equal(trn_feeder_weighted(fd), 1);
    trn_cache *cache = trn_cache_new(trn_model_graph(m), UINT64_C(1) << 20);
    rt_batch *b = rt_batch_new(trn_model_graph(m));
    assert_non_null(cache);
    assert_non_null(b);
    static const size_t order[2][4] = {{0, 1, 2, 3}, {3, 1, 0, 2}};
    for (int pass = 0; pass < 2; pass++) { /* fed and kept, then from the records */
        trn_field fields[16];
        uint64_t ord[4];
        memset(fields, 0, sizeof fields);
        for (size_t r = 0; r < 4; r++) {
            size_t o = order[pass][r];
            ord[r] = o;
            for (size_t j = 0; j < 4; j++) {
                fields[r * 4 + j].s = cells[o][j];
                fields[r * 4 + j].len = strlen(cells[o][j]);
            }
        }
        trn_rows rows = {.n = 4, .n_fields = 4, .fields = fields, .ordinal = ord};
        float labels[8], weights[4], fl[8], fw[4];
        size_t n = 0;
        assert_int_equal(trn_cache_fill(cache, fd, &rows, b, trn_model_features(m), labels,
                                        weights, TRN_BAD_ROW_STOP, NULL, &n, &err), RT_OK);
        assert_int_equal(n, 4);
        for (size_t r = 0; r < 4; r++) {
            size_t o = order[pass][r];
            assert_true(labels[2 * r] == strtof(cells[o][1], NULL));
            assert_true(labels[2 * r + 1] == strtof(cells[o][2], NULL));
            assert_true(weights[r] == strtof(cells[o][3], NULL));
        }
        double loss_cached, loss_fed;
        if (pass == 0) { /* move the weights off zero: the features count */
            assert_int_equal(trn_model_train_step(m, NULL, labels, weights, &loss_cached, &err),
                             RT_OK);
            continue;
        }
        assert_int_equal(trn_model_loss(m, NULL, labels, weights, &loss_cached, NULL, &err), RT_OK);
        assert_int_equal(trn_feeder_fill(fd, &rows, b, fl, fw, TRN_BAD_ROW_STOP, NULL, &err),
                         RT_OK);
        assert_memory_equal(fl, labels, sizeof fl);
        assert_memory_equal(fw, weights, sizeof fw);
        assert_int_equal(trn_model_loss(m, b, fl, fw, &loss_fed, NULL, &err), RT_OK);
        assert_memory_equal(&loss_cached, &loss_fed, sizeof loss_fed);
        assert_true(loss_fed > 0);
    }
    rt_batch_free(b);
    trn_cache_free(cache);
    trn_feeder_free(fd);
    trn_model_free(m);
    rt_spec_modeldef_free(def);
    trn_config_free(&c);
    cJSON_Delete(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_learns_synthetic_rule),
        cmocka_unit_test(test_learns_regression),
        cmocka_unit_test(test_same_seed_same_model),
        cmocka_unit_test(test_checkpoint_round_trip_and_damage),
        cmocka_unit_test(test_resume_from_job_dir),
        cmocka_unit_test(test_resume_equals_uninterrupted),
        cmocka_unit_test(test_latest_and_best_exporters),
        cmocka_unit_test(test_spec_errors_name_the_key),
        cmocka_unit_test(test_overrides_and_defaults),
        cmocka_unit_test(test_cache_keeps_labels_and_weights),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
