/* test_trn_memory.c — the trainer's memory estimate and limit: exact figures
 * for a small wide & deep model counted by hand, the spec key named for a
 * huge cross, huge hidden layers and a wide embedding, absurd sizes that
 * must not wrap around, the available memory read from a fake /proc and
 * cgroup v2 tree, trn_model_new refusing before it allocates, and the
 * train.memory_limit_mb key and --memory-limit-mb override. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <cJSON.h>

#include "support_models.h"
#include "trn.h"

/* The support spec with one substring replaced (at most one occurrence). */
static Predictd__ModelDef *spec_with(const char *from, const char *to)
{
    const char *base = SUPPORT_SPEC_WIDE_DEEP;
    char buf[8192];
    const char *at = from ? strstr(base, from) : NULL;
    if (from)
        assert_non_null(at);
    if (!at)
        snprintf(buf, sizeof buf, "%s", base);
    else
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    Predictd__ModelDef *def = support_spec_modeldef(buf);
    assert_non_null(def);
    return def;
}

static void resolved(trn_config *c, const Predictd__ModelDef *def)
{
    rt_err err = {{0}};
    trn_config_init(c);
    assert_int_equal(trn_config_resolve(c, def, &err), RT_OK);
}

/* Hand count for SUPPORT_SPEC_WIDE_DEEP. Linear (Ftrl, 2 slots): age_buckets
 * 5, gender 2, occupation 20, age_x_gender 50 ids, one weight each, + bias 1
 * = 78 values, 77 sparse rows. DNN (Adagrad, 1 slot): occupation_embedding
 * 20 x 3 = 60 (20 sparse rows); input 1 + 1 + 3 + 2 = 7; layers 7x5+5,
 * 5x3+3, 3x1+1 = 62. */
static void test_estimate_by_hand(void **state)
{
    (void)state;
    Predictd__ModelDef *def = spec_with(NULL, NULL);
    trn_config c;
    resolved(&c, def);
    trn_memory e;
    rt_err err = {{0}};
    assert_int_equal(trn_memory_estimate(def, &c, &e, &err), RT_OK);
    assert_int_equal(e.weights, 4 * (78 + 60 + 62));
    assert_int_equal(e.gradients, e.weights);
    assert_int_equal(e.slots, 4 * (78 * 2 + (60 + 62) * 1));
    assert_int_equal(e.sparse, (77 + 20) * 5);
    assert_int_equal(e.checkpoint, 0); /* no job dir: nothing restored or exported */
    assert_true(e.activations > 0 && e.input > 0);
    assert_int_equal(e.total, e.weights + e.gradients + e.slots + e.sparse + e.checkpoint +
                                  e.activations + e.input);
    /* With a job dir a checkpoint (weights and slots) may be read whole. */
    c.job_dir = strdup("/nonexistent");
    assert_int_equal(trn_memory_estimate(def, &c, &e, &err), RT_OK);
    assert_int_equal(e.checkpoint, e.weights + e.slots);
    /* Sizes from the configuration: a bigger shuffle buffer costs more. */
    trn_memory e2;
    c.shuffle_buffer_size *= 10;
    assert_int_equal(trn_memory_estimate(def, &c, &e2, &err), RT_OK);
    assert_true(e2.input > e.input);
    assert_int_equal(e2.weights, e.weights);
    trn_config_free(&c);
    rt_spec_modeldef_free(def);
}

static void test_key_of_huge_cross(void **state)
{
    (void)state;
    Predictd__ModelDef *def =
        spec_with("\"hash_bucket_size\": 50", "\"hash_bucket_size\": 1000000000");
    trn_config c;
    resolved(&c, def);
    trn_memory e;
    rt_err err = {{0}};
    assert_int_equal(trn_memory_estimate(def, &c, &e, &err), RT_OK);
    assert_string_equal(e.key, "feature_columns[5].hash_bucket_size");
    assert_non_null(strstr(e.what, "age_x_gender"));
    assert_non_null(strstr(e.what, "1000000000"));
    assert_int_equal(e.weights, 4 * (UINT64_C(1000000000) + 28 + 60 + 62));
    /* weights, gradient, 2 Ftrl slots, 5 bytes of row marks */
    assert_true(e.key_bytes >= UINT64_C(1000000000) * (4 * 4 + 5));
    /* Refused before allocating, naming the key, the figure and the limit. */
    c.memory_limit_mb = 1024;
    assert_int_equal(trn_memory_check(def, &c, &err), RT_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "feature_columns[5].hash_bucket_size: the model needs 19."));
    assert_non_null(strstr(err.msg, "more than the 1.0 GiB limit (train.memory_limit_mb)"));
    trn_model *m = NULL;
    assert_int_equal(trn_model_new(def, &c, 1, &m, &err), RT_ERR_LIMIT);
    assert_null(m);
    assert_non_null(strstr(err.msg, "hash_bucket_size"));
    trn_config_free(&c);
    rt_spec_modeldef_free(def);
}

static void test_key_of_huge_layers(void **state)
{
    (void)state;
    char units[1024];
    size_t n = (size_t)snprintf(units, sizeof units, "\"dnn_hidden_units\": [65536");
    for (int i = 1; i < 64; i++)
        n += (size_t)snprintf(units + n, sizeof units - n, ", 65536");
    snprintf(units + n, sizeof units - n, "]");
    Predictd__ModelDef *def = spec_with("\"dnn_hidden_units\": [5, 3]", units);
    trn_config c;
    resolved(&c, def);
    trn_memory e;
    rt_err err = {{0}};
    assert_int_equal(trn_memory_estimate(def, &c, &e, &err), RT_OK);
    assert_string_equal(e.key, "estimator.dnn_hidden_units");
    uint64_t w = UINT64_C(65536);
    uint64_t dnn = 7 * w + w + 63 * (w * w + w) + w + 1; /* 65536 x 65536 = 2^32 each */
    assert_true(e.weights == 4 * (78 + 60 + dnn));
    assert_true(e.total >= 3 * e.weights && e.weights > UINT64_C(1) << 39); /* not wrapped */
    /* The machine's limit refuses it whatever the machine. */
    assert_int_equal(trn_memory_check(def, &c, &err), RT_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "estimator.dnn_hidden_units: the model needs "));
    assert_non_null(strstr(err.msg, "TiB"));
    assert_non_null(strstr(err.msg, "64 hidden layers, up to 65536 units"));
    c.memory_limit_mb = 0; /* the daring: no check */
    assert_int_equal(trn_memory_check(def, &c, &err), RT_OK);
    trn_config_free(&c);
    rt_spec_modeldef_free(def);
}

static void test_key_of_wide_embedding(void **state)
{
    (void)state;
    Predictd__ModelDef *def = spec_with("\"dimension\": 3", "\"dimension\": 65536");
    trn_config c;
    resolved(&c, def);
    trn_memory e;
    rt_err err = {{0}};
    c.batch_size = 1; /* else the 65540 floats a row of DNN input win */
    assert_int_equal(trn_memory_estimate(def, &c, &e, &err), RT_OK);
    assert_string_equal(e.key, "feature_columns[6].dimension"); /* 20 x 65536 */
    c.batch_size = 512;
    assert_int_equal(trn_memory_estimate(def, &c, &e, &err), RT_OK);
    assert_string_equal(e.key, "train.batch_size");
    trn_config_free(&c);
    rt_spec_modeldef_free(def);
}

/* Four embeddings of 10^9 x 65536: petabytes, counted without wrapping. */
static void test_absurd_sizes_do_not_wrap(void **state)
{
    (void)state;
    const char *spec =
        "{\"columns\": [{\"name\": \"s\", \"type\": \"string\", \"default\": \"\"},"
        " {\"name\": \"y\", \"type\": \"float\", \"default\": 0}],"
        " \"label\": {\"column\": \"y\"},"
        " \"feature_columns\": ["
        "  {\"type\": \"categorical_column_with_hash_bucket\", \"key\": \"s\","
        "   \"hash_bucket_size\": 1000000000},"
        "  {\"type\": \"embedding_column\", \"name\": \"e1\", \"categorical_column\": \"s\","
        "   \"dimension\": 65536},"
        "  {\"type\": \"embedding_column\", \"name\": \"e2\", \"categorical_column\": \"s\","
        "   \"dimension\": 65536},"
        "  {\"type\": \"embedding_column\", \"name\": \"e3\", \"categorical_column\": \"s\","
        "   \"dimension\": 65536},"
        "  {\"type\": \"embedding_column\", \"name\": \"e4\", \"categorical_column\": \"s\","
        "   \"dimension\": 65536}],"
        " \"estimator\": {\"type\": \"DNNRegressor\", \"hidden_units\": [65536, 65536],"
        "  \"feature_columns\": [\"e1\", \"e2\", \"e3\", \"e4\"]}}";
    Predictd__ModelDef *def = support_spec_modeldef(spec);
    assert_non_null(def);
    trn_config c;
    resolved(&c, def);
    trn_memory e;
    rt_err err = {{0}};
    if (trn_memory_estimate(def, &c, &e, &err) != RT_OK)
        fail_msg("%s", err.msg);
    uint64_t emb = UINT64_C(1000000000) * 65536; /* floats per table */
    assert_true(e.weights >= 4 * 4 * emb);
    assert_true(e.total >= e.weights && e.total >= 3 * e.weights);
    assert_string_equal(e.key, "feature_columns[0].hash_bucket_size");
    c.memory_limit_mb = INT64_C(1) << 30; /* 1 PiB is still too small */
    assert_int_equal(trn_memory_check(def, &c, &err), RT_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "PiB"));
    char b[32];
    assert_string_equal(trn_memory_format(UINT64_MAX, b, sizeof b), "more than 16 EiB");
    assert_string_equal(trn_memory_format(1536, b, sizeof b), "1.5 KiB");
    assert_string_equal(trn_memory_format(512, b, sizeof b), "512 B");
    trn_config_free(&c);
    rt_spec_modeldef_free(def);
}

static void put(const char *root, const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_available_from_fake_tree(void **state)
{
    (void)state;
    char root[256], src[256];
    assert_int_equal(support_mkdtemp(root, sizeof root), 0);
    /* Nothing readable: unknown, no limit. */
    assert_true(trn_memory_available(root, src, sizeof src) == UINT64_MAX);
    assert_string_equal(src, "unknown");
    put(root, "proc/meminfo", "MemTotal:       2000 kB\nMemFree:         100 kB\n"
                              "MemAvailable:    1000 kB\nBuffers:  5 kB\n");
    assert_int_equal(trn_memory_available(root, src, sizeof src), 1024000);
    assert_string_equal(src, "MemAvailable");
    /* A cgroup with room to spare: MemAvailable still bounds. */
    put(root, "proc/self/cgroup", "0::/a/b\n");
    put(root, "sys/fs/cgroup/a/b/memory.max", "max\n");
    put(root, "sys/fs/cgroup/a/b/memory.current", "4096\n");
    put(root, "sys/fs/cgroup/a/memory.max", "3145728\n");
    put(root, "sys/fs/cgroup/a/memory.current", "2097152\n");
    assert_int_equal(trn_memory_available(root, src, sizeof src), 1024000);
    /* The parent's memory.max minus its use is the tighter bound. */
    put(root, "sys/fs/cgroup/a/memory.current", "2621440\n");
    assert_int_equal(trn_memory_available(root, src, sizeof src), 524288);
    assert_non_null(strstr(src, "cgroup /a memory.max"));
    /* A leaf limit below it wins; a cgroup over its limit has no room. */
    put(root, "sys/fs/cgroup/a/b/memory.max", "8192\n");
    assert_int_equal(trn_memory_available(root, src, sizeof src), 4096);
    assert_non_null(strstr(src, "cgroup /a/b memory.max"));
    put(root, "sys/fs/cgroup/a/b/memory.current", "9000\n");
    assert_int_equal(trn_memory_available(root, src, sizeof src), 0);
    /* The real machine: some memory, from a named source. */
    assert_true(trn_memory_available(NULL, src, sizeof src) > 0);
    assert_string_not_equal(src, "unknown");
    support_rmtree(root);
}

static void test_limit_key_and_flag(void **state)
{
    (void)state;
    rt_err err = {{0}};
    trn_config c;
    trn_config_init(&c);
    assert_true(c.memory_limit_mb == -1);
    cJSON *spec = cJSON_Parse("{\"train\": {\"memory_limit_mb\": 512}}");
    assert_int_equal(trn_config_from_spec(spec, &c, &err), RT_OK);
    assert_true(c.memory_limit_mb == 512);
    cJSON_Delete(spec);
    spec = cJSON_Parse("{\"train\": {\"memory_limit_mb\": -1}}");
    assert_int_equal(trn_config_from_spec(spec, &c, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "train.memory_limit_mb"));
    cJSON_Delete(spec);
    /* --memory-limit-mb 0 is written into the spec. */
    spec = cJSON_Parse("{\"train\": {\"memory_limit_mb\": 512}}");
    trn_overrides o;
    trn_overrides_init(&o);
    o.memory_limit_mb = 0;
    assert_int_equal(trn_spec_apply_overrides(spec, &o, &err), RT_OK);
    assert_int_equal(trn_config_from_spec(spec, &c, &err), RT_OK);
    assert_true(c.memory_limit_mb == 0);
    cJSON_Delete(spec);
    trn_config_free(&c);
    /* A small model fits the machine: trn_model_new builds it. */
    Predictd__ModelDef *def = spec_with(NULL, NULL);
    resolved(&c, def);
    trn_model *m = NULL;
    assert_int_equal(trn_model_new(def, &c, 1, &m, &err), RT_OK);
    trn_model_free(m);
    trn_config_free(&c);
    rt_spec_modeldef_free(def);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_by_hand),
        cmocka_unit_test(test_key_of_huge_cross),
        cmocka_unit_test(test_key_of_huge_layers),
        cmocka_unit_test(test_key_of_wide_embedding),
        cmocka_unit_test(test_absurd_sizes_do_not_wrap),
        cmocka_unit_test(test_available_from_fake_tree),
        cmocka_unit_test(test_limit_key_and_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
