/* test_export.c — the export format: exporter writes, runtime reads back.
 *
 * Round trips (identical ModelDef bytes, tensor bytes, and predictions of
 * the opened export equal to a graph bound to the original tensors), every
 * way a handcrafted bad export can be broken (each refused with its reason,
 * asserted by a message fragment), a deterministic corruption sweep that
 * must never crash, and the exporter's directory mechanics: atomic versions,
 * collisions, hidden temp dirs, retention, cleanup, a write that runs out of
 * space (RLIMIT_FSIZE in a child process). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exp.h"
#include "rt.h"
#include "support_models.h"

/* ------------------------------------------------------------ helpers */

/* A valid export in memory: def (with index), its tensors, its bytes. */
typedef struct fx {
    Predictd__ModelDef *def;
    support_tensors st;
    exp_blobs b;
} fx;

static void fx_init(fx *f, const char *spec, uint64_t seed)
{
    rt_err err = {{0}};
    memset(f, 0, sizeof *f);
    f->def = support_spec_modeldef(spec);
    assert_non_null(f->def);
    assert_int_equal(support_random_tensors(f->def, seed, 0.5f, &f->st), 0);
    assert_true(f->st.n >= 2);
    rt_status st = exp_serialize(f->def, f->st.t, f->st.n, NULL, &f->b, &err);
    if (st != RT_OK)
        fail_msg("exp_serialize: %s", err.msg);
}

static void fx_free(fx *f)
{
    exp_blobs_free(&f->b);
    support_tensors_free(&f->st);
    rt_spec_modeldef_free(f->def);
}

static uint8_t *dup_bytes(const void *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    assert_non_null(d);
    if (n)
        memcpy(d, p, n);
    return d;
}

static uint8_t *pack_def(const Predictd__ModelDef *d, size_t *len)
{
    *len = predictd__model_def__get_packed_size(d);
    uint8_t *p = malloc(*len ? *len : 1);
    assert_non_null(p);
    assert_int_equal(predictd__model_def__pack(d, p), *len);
    return p;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void fix_header_crc(uint8_t *vars)
{
    put32(vars + 24, rt_hash_crc32c(0, vars, 24));
}

/* Opens from buffers; requires a refusal whose message contains fragment. */
static void expect_refused(const void *pb, size_t pb_len, const void *vars, size_t vars_len,
                           const char *fragment)
{
    rt_model *m = (rt_model *)1;
    rt_err err;
    memset(&err, 0, sizeof err);
    rt_status st = rt_model_open_buffers(pb, pb_len, vars, vars_len, &m, &err);
    print_message("refused: %s\n", err.msg);
    assert_true(st < 0);
    assert_null(m);
    if (!strstr(err.msg, fragment))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, fragment);
}

/* Opens from buffers; requires success. */
static void expect_opens(const void *pb, size_t pb_len, const void *vars, size_t vars_len)
{
    rt_model *m = NULL;
    rt_err err = {{0}};
    rt_status st = rt_model_open_buffers(pb, pb_len, vars, vars_len, &m, &err);
    if (st != RT_OK)
        fail_msg("open_buffers: %s", err.msg);
    assert_non_null(rt_model_graph(m));
    rt_model_close(m);
}

/* Unpacks the fixture's model.pb for editing (free with rt_spec_modeldef_free). */
static Predictd__ModelDef *edit_def(const fx *f)
{
    Predictd__ModelDef *d = predictd__model_def__unpack(NULL, f->b.model_pb_len, f->b.model_pb);
    assert_non_null(d);
    return d;
}

/* Index entry with the given name, or of the first rank-2 non-square tensor. */
static Predictd__TensorInfo *find_info(Predictd__ModelDef *d, const char *name)
{
    for (size_t i = 0; i < d->n_tensors; i++) {
        Predictd__TensorInfo *ti = d->tensors[i];
        if (name ? strcmp(ti->name, name) == 0
                 : (ti->n_shape == 2 && ti->shape[0] != ti->shape[1]))
            return ti;
    }
    fail_msg("no tensor %s in the index", name ? name : "(rank-2 non-square)");
    return NULL;
}

/* Index entries sorted by offset: the last two. */
static void last_two(Predictd__ModelDef *d, Predictd__TensorInfo **a, Predictd__TensorInfo **b)
{
    *a = *b = NULL;
    for (size_t i = 0; i < d->n_tensors; i++) {
        Predictd__TensorInfo *ti = d->tensors[i];
        if (!*b || ti->offset > (*b)->offset) {
            *a = *b;
            *b = ti;
        } else if (!*a || ti->offset > (*a)->offset) {
            *a = ti;
        }
    }
    assert_non_null(*a);
}

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (n)
        assert_int_equal(fwrite(p, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

static size_t read_file(const char *path, uint8_t **out)
{
    char *s = NULL;
    size_t n = 0;
    assert_int_equal(rt_file_read(AT_FDCWD, path, 1u << 30, 0, &s, &n, NULL), RT_OK);
    *out = (uint8_t *)s;
    return n;
}

static int exists(const char *dir, const char *name)
{
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &sb) == 0;
}

/* Number of entries of dir starting with prefix. */
static size_t count_prefix(const char *dir, const char *prefix)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

/* ------------------------------------------------------- round trips */

static void test_serialize_layout(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 1);
    const uint8_t *v = f.b.vars;
    /* Header known answers. */
    assert_memory_equal(v, "PDVARS\0\0", 8);
    assert_int_equal(get32(v + 8), 1);
    assert_int_equal(get32(v + 12), f.st.n);
    uint64_t size = (uint64_t)get32(v + 16) | (uint64_t)get32(v + 20) << 32;
    assert_int_equal(size, f.b.vars_len);
    assert_int_equal(get32(v + 24), rt_hash_crc32c(0, v, 24));
    for (size_t i = 28; i < 64; i++)
        assert_int_equal(v[i], 0);
    assert_int_equal(f.def->variables_size, f.b.vars_len);
    assert_int_equal(f.def->format_version, RT_FORMAT_VERSION);
    assert_int_equal(f.def->n_tensors, f.st.n);
    /* Every tensor: aligned, in order, bytes and checksum as given; zero padding. */
    uint64_t prev_end = 64;
    for (size_t i = 0; i < f.def->n_tensors; i++) {
        const Predictd__TensorInfo *ti = f.def->tensors[i];
        const exp_tensor *t = &f.st.t[i];
        assert_string_equal(ti->name, t->name);
        assert_int_equal(ti->offset % 64, 0);
        assert_true(ti->offset >= prev_end && ti->offset - prev_end < 64);
        for (uint64_t k = prev_end; k < ti->offset; k++)
            assert_int_equal(v[k], 0);
        uint64_t count = t->shape[0] * (t->rank > 1 ? t->shape[1] : 1);
        assert_int_equal(ti->length, count * 4);
        assert_int_equal(ti->n_shape, t->rank);
        assert_memory_equal(v + ti->offset, t->data, ti->length);
        assert_int_equal(ti->crc32c, rt_hash_crc32c(0, t->data, ti->length));
        prev_end = ti->offset + ti->length;
    }
    assert_int_equal(prev_end, f.b.vars_len);
    fx_free(&f);
}

static void test_roundtrip_files(void **state)
{
    (void)state;
    fx f;
    char base[64], path[4096];
    rt_err err = {{0}};
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 2);
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    int64_t v = support_write_export(base, f.def, &f.st, 1234, path, sizeof path);
    assert_int_equal(v, 1234);
    rt_model *m = NULL;
    rt_status st = rt_model_open(path, &m, &err);
    if (st != RT_OK)
        fail_msg("rt_model_open: %s", err.msg);
    /* Identical ModelDef: same serialized bytes. */
    size_t la, lb;
    uint8_t *a = pack_def(f.def, &la), *b = pack_def(rt_model_def(m), &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    /* The file on disk is exactly the serialized ModelDef. */
    uint8_t *disk;
    char p2[4200];
    snprintf(p2, sizeof p2, "%s/model.pb", path);
    size_t dl = read_file(p2, &disk);
    a = pack_def(f.def, &la);
    assert_int_equal(dl, la);
    assert_memory_equal(disk, a, la);
    free(a);
    free(disk);
    /* Identical tensor bytes. */
    for (size_t i = 0; i < f.st.n; i++) {
        uint64_t count = 0;
        const float *d = rt_model_tensor(m, f.st.t[i].name, &count);
        assert_non_null(d);
        assert_int_equal(count, f.st.t[i].shape[0] * (f.st.t[i].rank > 1 ? f.st.t[i].shape[1] : 1));
        assert_memory_equal(d, f.st.t[i].data, count * 4);
        assert_int_equal((uintptr_t)d % 64, 0);
    }
    assert_null(rt_model_tensor(m, "no/such/tensor", NULL));
    rt_model_close(m);
    rt_model_close(NULL);
    assert_int_equal(support_rmtree(base), 0);
    fx_free(&f);
}

/* Random instances through the graph's transforms and forward pass. */
static float *predict_logits(const rt_graph *g, uint64_t seed, size_t n)
{
    static const char *const words[] = {"Male", "Female", "Doctor", "red", "green", "blue",
                                        "", "zz"};
    rt_err err = {{0}};
    uint64_t s = seed;
    rt_batch *b = rt_batch_new(g);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        size_t idx;
        assert_int_equal(rt_batch_add(b, &idx), RT_OK);
        for (size_t k = 0; k < rt_graph_num_inputs(g); k++) {
            if (rt_graph_input_dtype(g, k) == PREDICTD__DTYPE__DT_STRING) {
                const char *w = words[support_rand(&s) % 8];
                assert_int_equal(rt_batch_push_str(b, idx, k, w, strlen(w)), RT_OK);
            } else {
                assert_int_equal(rt_batch_push_num(b, idx, k, support_uniform(&s) * 80.0),
                                 RT_OK);
            }
        }
    }
    rt_features f;
    rt_transform_features_init(&f);
    rt_workspace *ws = rt_workspace_new();
    assert_non_null(ws);
    float *logits = calloc(n * rt_graph_logits_dim(g), sizeof *logits);
    assert_non_null(logits);
    if (rt_transform(g, b, &f, &err) != RT_OK)
        fail_msg("rt_transform: %s", err.msg);
    if (rt_forward(g, &f, ws, logits, &err) != RT_OK)
        fail_msg("rt_forward: %s", err.msg);
    rt_workspace_free(ws);
    rt_transform_features_free(&f);
    rt_batch_free(b);
    return logits;
}

static void check_predictions(const char *spec)
{
    fx f, other;
    char base[64], path[4096];
    rt_err err = {{0}};
    rt_graph *ref = NULL, *ref_other = NULL;
    const size_t n = 64;
    fx_init(&f, spec, 3);
    fx_init(&other, spec, 4);
    assert_int_equal(rt_graph_build(f.def, support_tensor_lookup, &f.st, NULL, &ref, &err), RT_OK);
    assert_int_equal(rt_graph_build(other.def, support_tensor_lookup, &other.st, NULL, &ref_other,
                                    &err), RT_OK);
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    assert_true(support_write_export(base, f.def, &f.st, 0, path, sizeof path) > 0);
    rt_model *m = NULL;
    if (rt_model_open(path, &m, &err) != RT_OK)
        fail_msg("rt_model_open: %s", err.msg);
    size_t dim = rt_graph_logits_dim(ref);
    assert_int_equal(rt_graph_logits_dim(rt_model_graph(m)), dim);
    float *want = predict_logits(ref, 77, n);
    float *got = predict_logits(rt_model_graph(m), 77, n);
    float *diff = predict_logits(ref_other, 77, n);
    /* Same tensors, same inputs: bit-identical logits. */
    assert_memory_equal(want, got, n * dim * sizeof *got);
    /* Other weights give other logits: the comparison can fail. */
    assert_memory_not_equal(want, diff, n * dim * sizeof *got);
    free(want);
    free(got);
    free(diff);
    rt_model_close(m);
    rt_graph_free(ref);
    rt_graph_free(ref_other);
    assert_int_equal(support_rmtree(base), 0);
    fx_free(&f);
    fx_free(&other);
}

static void test_predictions_identical_wide_deep(void **state)
{
    (void)state;
    check_predictions(SUPPORT_SPEC_WIDE_DEEP);
}

static void test_predictions_identical_linear(void **state)
{
    (void)state;
    check_predictions(SUPPORT_SPEC_LINEAR);
}

static void test_predictions_identical_dnn_regressor(void **state)
{
    (void)state;
    check_predictions(SUPPORT_SPEC_DNN_REGRESSOR);
}

/* ------------------------------------------------------- bad exports */

static void test_bad_variables_header(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 5);
    const uint8_t *pb = f.b.model_pb;
    size_t pl = f.b.model_pb_len, vl = f.b.vars_len;
    expect_opens(pb, pl, f.b.vars, vl);

    uint8_t *v = dup_bytes(f.b.vars, vl);
    v[0] ^= 0xff;
    expect_refused(pb, pl, v, vl, "variables.bin: bad magic");

    memcpy(v, f.b.vars, vl);
    put32(v + 8, 2);
    fix_header_crc(v);
    expect_refused(pb, pl, v, vl, "variables.bin: version 2 is not supported");

    memcpy(v, f.b.vars, vl);
    v[13] ^= 1; /* count, without fixing the header checksum */
    expect_refused(pb, pl, v, vl, "variables.bin: header checksum mismatch");

    memcpy(v, f.b.vars, vl);
    put32(v + 12, get32(v + 12) + 1);
    fix_header_crc(v);
    expect_refused(pb, pl, v, vl, "header counts");

    memcpy(v, f.b.vars, vl);
    put64(v + 16, vl + 64); /* size field mismatch */
    fix_header_crc(v);
    expect_refused(pb, pl, v, vl, "header says the file has");

    /* Truncated: a few bytes short, inside the header, empty. */
    expect_refused(pb, pl, f.b.vars, vl - 3, "variables.bin: header says the file has");
    expect_refused(pb, pl, f.b.vars, 40, "too small for the 64-byte header");
    expect_refused(pb, pl, f.b.vars, 0, "variables.bin: file is empty");

    /* Extended by 64 zero bytes, header fixed: model.pb's variables_size disagrees. */
    uint8_t *big = calloc(vl + 64, 1);
    assert_non_null(big);
    memcpy(big, f.b.vars, vl);
    put64(big + 16, vl + 64);
    fix_header_crc(big);
    expect_refused(pb, pl, big, vl + 64, "variables_size");
    free(big);
    free(v);
    fx_free(&f);
}

/* Edits the index of a copy of the fixture's ModelDef, repacks, expects a refusal. */
typedef void (*edit_fn)(Predictd__ModelDef *d, uint64_t vars_len);

static void refuse_edit(const fx *f, edit_fn edit, const char *fragment)
{
    Predictd__ModelDef *d = edit_def(f);
    edit(d, f->b.vars_len);
    size_t len;
    uint8_t *pb = pack_def(d, &len);
    expect_refused(pb, len, f->b.vars, f->b.vars_len, fragment);
    free(pb);
    predictd__model_def__free_unpacked(d, NULL);
}

static void ed_past_end(Predictd__ModelDef *d, uint64_t n)
{
    find_info(d, NULL)->offset = (n + 63) / 64 * 64 + 64;
}

static void ed_overflow(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    find_info(d, NULL)->offset = UINT64_MAX - 63; /* a multiple of 64; offset + length wraps */
}

static void ed_huge_length(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    Predictd__TensorInfo *ti = find_info(d, NULL);
    ti->shape[0] = UINT64_MAX / 2; /* product * 4 overflows */
}

static void ed_misaligned(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    find_info(d, NULL)->offset += 4;
}

static void ed_in_header(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    find_info(d, NULL)->offset = 0;
}

static void ed_overlap(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    Predictd__TensorInfo *a, *b;
    last_two(d, &a, &b);
    b->offset = a->offset;
}

static void ed_transpose(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    Predictd__TensorInfo *ti = find_info(d, NULL);
    uint64_t t = ti->shape[0];
    ti->shape[0] = ti->shape[1];
    ti->shape[1] = t;
}

static void ed_length(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    find_info(d, NULL)->length -= 4;
}

static void ed_dtype(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    find_info(d, NULL)->dtype = PREDICTD__DTYPE__DT_STRING;
}

static void ed_rename_dup(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    Predictd__TensorInfo *a, *b;
    last_two(d, &a, &b);
    free(b->name);
    b->name = strdup(a->name);
    assert_non_null(b->name);
}

static void ed_rename_extra(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    Predictd__TensorInfo *ti = find_info(d, NULL);
    free(ti->name);
    ti->name = strdup("extra/tensor"); /* now "extra" and the original "missing" */
    assert_non_null(ti->name);
}

static void ed_format99(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    d->format_version = 99;
}

static void ed_vars_size(Predictd__ModelDef *d, uint64_t n)
{
    d->variables_size = n + 64;
}

static void ed_empty_name(Predictd__ModelDef *d, uint64_t n)
{
    (void)n;
    Predictd__TensorInfo *ti = find_info(d, NULL);
    free(ti->name);
    ti->name = strdup("");
    assert_non_null(ti->name);
}

static void test_bad_index(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 6);
    refuse_edit(&f, ed_past_end, "is past the end of the file");
    refuse_edit(&f, ed_overflow, "is past the end of the file");
    refuse_edit(&f, ed_huge_length, "overflows");
    refuse_edit(&f, ed_misaligned, "is not a multiple of 64");
    refuse_edit(&f, ed_in_header, "inside the 64-byte header");
    refuse_edit(&f, ed_overlap, "overlap");
    refuse_edit(&f, ed_transpose, "does not match the graph's");
    refuse_edit(&f, ed_length, "does not match shape");
    refuse_edit(&f, ed_dtype, "is not DT_FLOAT");
    refuse_edit(&f, ed_rename_dup, "appears twice in the index");
    refuse_edit(&f, ed_format99, "model.pb: format_version 99 is not supported");
    refuse_edit(&f, ed_vars_size, "variables_size");
    refuse_edit(&f, ed_empty_name, "empty name");
    /* Renamed: the original is missing (found first) or the new one extra. */
    refuse_edit(&f, ed_rename_extra, "tensor \"");
    fx_free(&f);
}

static void test_missing_and_extra_tensor(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 7);
    const char *victim = f.st.t[f.st.n - 1].name;

    /* Missing: exported without the last tensor (the graph check is ours to skip). */
    exp_params p = exp_default_params();
    p.check_graph = 0;
    exp_blobs b;
    rt_err err = {{0}};
    Predictd__ModelDef *d = support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP);
    assert_non_null(d);
    assert_int_equal(exp_serialize(d, f.st.t, f.st.n - 1, &p, &b, &err), RT_OK);
    expect_refused(b.model_pb, b.model_pb_len, b.vars, b.vars_len, "missing from the index");
    expect_refused(b.model_pb, b.model_pb_len, b.vars, b.vars_len, victim);
    exp_blobs_free(&b);
    /* The exporter's own graph check refuses the same set. */
    assert_int_equal(exp_serialize(d, f.st.t, f.st.n - 1, NULL, &b, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, victim));

    /* Extra: all tensors plus one the graph does not use. */
    exp_tensor *more = calloc(f.st.n + 1, sizeof *more);
    assert_non_null(more);
    memcpy(more, f.st.t, f.st.n * sizeof *more);
    static const float extra[3] = {1, 2, 3};
    more[f.st.n] = (exp_tensor){.name = "extra/tensor", .data = extra, .shape = {3}, .rank = 1};
    assert_int_equal(exp_serialize(d, more, f.st.n + 1, &p, &b, &err), RT_OK);
    expect_refused(b.model_pb, b.model_pb_len, b.vars, b.vars_len,
                   "tensor \"extra/tensor\" is in the index but not used by the graph");
    exp_blobs_free(&b);
    assert_int_equal(exp_serialize(d, more, f.st.n + 1, NULL, &b, &err), RT_ERR_INVALID);
    /* Duplicate names are refused by the exporter. */
    more[f.st.n].name = f.st.t[0].name;
    assert_int_equal(exp_serialize(d, more, f.st.n + 1, &p, &b, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "given twice"));
    free(more);
    rt_spec_modeldef_free(d);
    fx_free(&f);
}

static void test_checksum_mismatch(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 8);
    uint8_t *v = dup_bytes(f.b.vars, f.b.vars_len);
    for (size_t i = 0; i < f.def->n_tensors; i++) {
        const Predictd__TensorInfo *ti = f.def->tensors[i];
        if (ti->length == 0)
            continue;
        size_t at = (size_t)(ti->offset + ti->length / 2);
        memcpy(v, f.b.vars, f.b.vars_len);
        v[at] ^= 0x10;
        char frag[300];
        snprintf(frag, sizeof frag, "variables.bin: tensor \"%s\": checksum mismatch (stored 0x%08x",
                 ti->name, ti->crc32c);
        expect_refused(f.b.model_pb, f.b.model_pb_len, v, f.b.vars_len, frag);
    }
    /* A flipped padding byte is not data: still valid. */
    memcpy(v, f.b.vars, f.b.vars_len);
    v[40] ^= 1; /* reserved header bytes 28..63 are not checked */
    expect_opens(f.b.model_pb, f.b.model_pb_len, v, f.b.vars_len);
    free(v);
    fx_free(&f);
}

static void test_bad_model_pb(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 9);
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x07, 0x12, 0x99};
    expect_refused(garbage, sizeof garbage, f.b.vars, f.b.vars_len,
                   "model.pb: not a valid ModelDef protobuf");
    expect_refused(f.b.model_pb, 0, f.b.vars, f.b.vars_len, "model.pb: file is empty");
    /* Truncated in the middle of a field. */
    expect_refused(f.b.model_pb, f.b.model_pb_len - 1, f.b.vars, f.b.vars_len, "model.pb");
    /* A valid protobuf of another format version (an empty ModelDef is version 0). */
    static const uint8_t v0[] = {0x08, 0x00};
    expect_refused(v0, sizeof v0, f.b.vars, f.b.vars_len, "format_version 0");
    fx_free(&f);
}

static void test_bad_files(void **state)
{
    (void)state;
    fx f;
    char dir[64];
    rt_model *m = NULL;
    rt_err err;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 10);
    assert_int_equal(support_mkdtemp(dir, sizeof dir), 0);

    assert_int_equal(rt_model_open(dir, &m, &err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "model.pb: cannot open"));
    write_file(dir, "model.pb", f.b.model_pb, f.b.model_pb_len);
    assert_int_equal(rt_model_open(dir, &m, &err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "variables.bin: cannot open"));
    write_file(dir, "variables.bin", "", 0);
    assert_true(rt_model_open(dir, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "variables.bin: file is empty"));
    write_file(dir, "variables.bin", f.b.vars, f.b.vars_len - 64);
    assert_true(rt_model_open(dir, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "header says the file has"));
    /* A FIFO (or a directory) is refused without blocking. */
    char fifo[200];
    snprintf(fifo, sizeof fifo, "%s/variables.bin", dir);
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_true(rt_model_open(dir, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "variables.bin: not a regular file"));
    assert_int_equal(unlink(fifo), 0);
    write_file(dir, "variables.bin", f.b.vars, f.b.vars_len);
    assert_int_equal(rt_model_open(dir, &m, &err), RT_OK);
    rt_model_close(m);
    m = NULL;
    write_file(dir, "model.pb", "", 0);
    assert_true(rt_model_open(dir, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "model.pb: file is empty"));
    assert_null(m);
    char nodir[200];
    snprintf(nodir, sizeof nodir, "%s/nope", dir);
    assert_int_equal(rt_model_open(nodir, &m, &err), RT_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(support_rmtree(dir), 0);
    fx_free(&f);
}

/* Deterministic corruption sweep: every result is a clean refusal or a
 * successful open; under ASan this also proves no byte past a buffer is read. */
static void test_corruption_never_crashes(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, SUPPORT_SPEC_WIDE_DEEP, 11);
    uint64_t s = 12345;
    uint8_t *pb = dup_bytes(f.b.model_pb, f.b.model_pb_len);
    uint8_t *v = dup_bytes(f.b.vars, f.b.vars_len);
    size_t refused = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(pb, f.b.model_pb, f.b.model_pb_len);
        memcpy(v, f.b.vars, f.b.vars_len);
        size_t pl = f.b.model_pb_len, vl = f.b.vars_len;
        int flips = 1 + (int)(support_rand(&s) % 4);
        for (int k = 0; k < flips; k++) {
            if (it % 2)
                pb[support_rand(&s) % pl] ^= (uint8_t)(1u << (support_rand(&s) % 8));
            else
                v[support_rand(&s) % (it % 4 ? 64 : vl)] ^= (uint8_t)(1u << (support_rand(&s) % 8));
        }
        if (it % 7 == 0)
            pl = (size_t)(support_rand(&s) % pl);
        if (it % 11 == 0)
            vl = (size_t)(support_rand(&s) % vl);
        rt_model *m = NULL;
        rt_err err;
        err.msg[0] = '\0';
        rt_status st = rt_model_open_buffers(pb, pl, v, vl, &m, &err);
        if (st == RT_OK) {
            assert_non_null(m);
            rt_model_close(m);
        } else {
            assert_null(m);
            assert_true(err.msg[0] != '\0');
            refused++;
        }
    }
    print_message("corruption sweep: %zu of 3000 refused\n", refused);
    assert_true(refused > 1500);
    free(pb);
    free(v);
    fx_free(&f);
}

/* ------------------------------------------- stored bad-export corpus */

/* tests/data/bad_exports/<case>/{model.pb,variables.bin,expect}: one broken
 * export per way of being broken (curl's one-file-per-case idea), replayed by
 * test_bad_export_corpus through rt_model_open. Regenerate with
 * PREDICTD_REGEN_BAD_EXPORTS=1 build/tests/test_export (from the repo root). */
typedef struct bad_case {
    const char *name;
    const char *expect; /* message fragment */
    void (*edit)(Predictd__ModelDef *d, uint8_t **v, size_t *vl);
    int omit_pb, omit_vars, garbage_pb;
} bad_case;

static void bc_magic(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)d;
    (void)vl;
    (*v)[0] ^= 0xff;
}

static void bc_version(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)d;
    (void)vl;
    put32(*v + 8, 2);
    fix_header_crc(*v);
}

static void bc_header_crc(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)d;
    (void)vl;
    (*v)[13] ^= 1;
}

static void bc_truncated(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)d;
    (void)v;
    *vl -= 3;
}

static void bc_size_field(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)d;
    put64(*v + 16, *vl + 64);
    fix_header_crc(*v);
}

static void bc_past_end(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)v;
    ed_past_end(d, *vl);
}

static void bc_overflow(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)v;
    ed_overflow(d, *vl);
}

static void bc_misaligned(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)v;
    ed_misaligned(d, *vl);
}

static void bc_overlap(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)v;
    ed_overlap(d, *vl);
}

static void bc_shape(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)v;
    ed_transpose(d, *vl);
}

static void bc_dup(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)v;
    ed_rename_dup(d, *vl);
}

static void bc_format99(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)v;
    ed_format99(d, *vl);
}

static void bc_checksum(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)vl;
    (*v)[d->tensors[0]->offset] ^= 0x04;
}

/* Drops the last index entry (header count fixed): "missing". */
static void bc_missing(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)vl;
    d->n_tensors--;
    protobuf_c_message_free_unpacked(&d->tensors[d->n_tensors]->base, NULL);
    put32(*v + 12, (uint32_t)d->n_tensors);
    fix_header_crc(*v);
}

/* Appends a valid 4-byte tensor the graph does not use: "extra". */
static void bc_extra(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    size_t off = (*vl + 63) / 64 * 64;
    uint8_t *nv = realloc(*v, off + 4);
    Predictd__TensorInfo **nt = realloc(d->tensors, (d->n_tensors + 1) * sizeof *nt);
    Predictd__TensorInfo *ti = malloc(sizeof *ti);
    assert_true(nv && nt && ti);
    *v = nv;
    d->tensors = nt;
    memset(nv + *vl, 0, off + 4 - *vl);
    predictd__tensor_info__init(ti);
    ti->name = strdup("extra/tensor");
    ti->shape = malloc(sizeof *ti->shape);
    assert_true(ti->name && ti->shape);
    ti->n_shape = 1;
    ti->shape[0] = 1;
    ti->dtype = PREDICTD__DTYPE__DT_FLOAT;
    ti->offset = off;
    ti->length = 4;
    ti->crc32c = rt_hash_crc32c(0, nv + off, 4);
    d->tensors[d->n_tensors++] = ti;
    *vl = off + 4;
    d->variables_size = *vl;
    put32(nv + 12, (uint32_t)d->n_tensors);
    put64(nv + 16, *vl);
    fix_header_crc(nv);
}

static void bc_empty_vars(Predictd__ModelDef *d, uint8_t **v, size_t *vl)
{
    (void)d;
    (void)v;
    *vl = 0;
}

static const bad_case bad_cases[] = {
    {"bad_magic", "variables.bin: bad magic", bc_magic, 0, 0, 0},
    {"wrong_version", "variables.bin: version 2 is not supported", bc_version, 0, 0, 0},
    {"header_checksum", "variables.bin: header checksum mismatch", bc_header_crc, 0, 0, 0},
    {"truncated_variables", "variables.bin: header says the file has", bc_truncated, 0, 0, 0},
    {"size_field_mismatch", "variables.bin: header says the file has", bc_size_field, 0, 0, 0},
    {"offset_past_end", "is past the end of the file", bc_past_end, 0, 0, 0},
    {"offset_overflow", "offset 18446744073709551552 + length", bc_overflow, 0, 0, 0},
    {"misaligned_offset", "is not a multiple of 64", bc_misaligned, 0, 0, 0},
    {"overlapping_tensors", "overlap", bc_overlap, 0, 0, 0},
    {"wrong_shape", "does not match the graph's", bc_shape, 0, 0, 0},
    {"duplicate_name", "appears twice in the index", bc_dup, 0, 0, 0},
    {"missing_tensor", "needed by the graph is missing from the index", bc_missing, 0, 0, 0},
    {"extra_tensor", "\"extra/tensor\" is in the index but not used by the graph", bc_extra, 0,
     0, 0},
    {"checksum_mismatch", "checksum mismatch (stored 0x", bc_checksum, 0, 0, 0},
    {"format_version_99", "model.pb: format_version 99 is not supported", bc_format99, 0, 0, 0},
    {"missing_model_pb", "model.pb: cannot open", NULL, 1, 0, 0},
    {"missing_variables", "variables.bin: cannot open", NULL, 0, 1, 0},
    {"garbage_protobuf", "model.pb: not a valid ModelDef protobuf", NULL, 0, 0, 1},
    {"empty_model_pb", "model.pb: file is empty", NULL, 0, 0, 2},
    {"empty_variables", "variables.bin: file is empty", bc_empty_vars, 0, 0, 0},
};

static void regen_bad_exports(const char *corpus)
{
    fx f;
    fx_init(&f, SUPPORT_SPEC_LINEAR, 21);
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const bad_case *c = &bad_cases[i];
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", corpus, c->name);
        support_rmtree(dir);
        assert_int_equal(mkdir(dir, 0755), 0);
        Predictd__ModelDef *d = edit_def(&f);
        size_t vl = f.b.vars_len, pl = 0;
        uint8_t *v = dup_bytes(f.b.vars, vl), *pb = NULL;
        if (c->edit)
            c->edit(d, &v, &vl);
        if (c->garbage_pb == 1) {
            static const uint8_t junk[] = "\xff\xff\xff\xff\xff\x07\x12\x99 not a protobuf";
            pl = sizeof junk - 1;
            pb = dup_bytes(junk, pl);
        } else if (c->garbage_pb == 2) {
            pb = dup_bytes("", 0);
        } else {
            pb = pack_def(d, &pl);
        }
        if (!c->omit_pb)
            write_file(dir, "model.pb", pb, pl);
        if (!c->omit_vars)
            write_file(dir, "variables.bin", v, vl);
        write_file(dir, "expect", c->expect, strlen(c->expect));
        free(pb);
        free(v);
        predictd__model_def__free_unpacked(d, NULL);
    }
    fx_free(&f);
}

static void test_bad_export_corpus(void **state)
{
    (void)state;
    const char *root = getenv("PREDICTD_ROOT");
    char corpus[2048];
    snprintf(corpus, sizeof corpus, "%s/tests/data/bad_exports", root ? root : ".");
    const char *regen = getenv("PREDICTD_REGEN_BAD_EXPORTS");
    if (regen && strcmp(regen, "1") == 0)
        regen_bad_exports(corpus);
    DIR *dp = opendir(corpus);
    if (!dp)
        fail_msg("cannot open %s (run from the repo root or set PREDICTD_ROOT)", corpus);
    size_t cases = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char dir[4096], p[4200];
        struct stat sb;
        snprintf(dir, sizeof dir, "%s/%s", corpus, de->d_name);
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        snprintf(p, sizeof p, "%s/expect", dir);
        uint8_t *expect;
        size_t el = read_file(p, &expect);
        expect[el] = '\0';
        rt_model *m = NULL;
        rt_err err = {{0}};
        rt_status st = rt_model_open(dir, &m, &err);
        print_message("%s: %s\n", de->d_name, err.msg);
        if (st == RT_OK || m != NULL || !strstr(err.msg, (char *)expect))
            fail_msg("case %s: status %d, message \"%s\", expected \"%s\"", de->d_name, st,
                     err.msg, (char *)expect);
        free(expect);
        cases++;
    }
    closedir(dp);
    assert_true(cases >= sizeof bad_cases / sizeof *bad_cases);
}

/* ------------------------------------------------ exporter mechanics */

static void test_version_parse(void **state)
{
    (void)state;
    int64_t v = -1;
    assert_int_equal(rt_model_version_parse("0", &v), 1);
    assert_int_equal(v, 0);
    assert_int_equal(rt_model_version_parse("1700000000", &v), 1);
    assert_int_equal(v, 1700000000);
    assert_int_equal(rt_model_version_parse("9223372036854775807", &v), 1);
    assert_true(v == INT64_MAX);
    assert_int_equal(rt_model_version_parse("9223372036854775808", NULL), 0);
    assert_int_equal(rt_model_version_parse("007", NULL), 0);
    assert_int_equal(rt_model_version_parse("-1", NULL), 0);
    assert_int_equal(rt_model_version_parse("+1", NULL), 0);
    assert_int_equal(rt_model_version_parse("", NULL), 0);
    assert_int_equal(rt_model_version_parse("12x", NULL), 0);
    assert_int_equal(rt_model_version_parse(".tmp-12-3-ab", NULL), 0);
    assert_int_equal(rt_model_version_parse(NULL, NULL), 0);
}

static void test_version_collision(void **state)
{
    (void)state;
    fx f;
    char base[64], sub[200], path[4096];
    fx_init(&f, SUPPORT_SPEC_LINEAR, 12);
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    snprintf(sub, sizeof sub, "%s/a/b", base); /* created with mkdir -p */
    assert_int_equal(support_write_export(sub, f.def, &f.st, 1000, path, sizeof path), 1000);
    assert_non_null(strstr(path, "/a/b/1000"));
    assert_int_equal(support_write_export(sub, f.def, &f.st, 1000, path, sizeof path), 1001);
    assert_non_null(strstr(path, "/1001"));
    /* A plain file in the way counts as taken. */
    write_file(sub, "1002", "x", 1);
    assert_int_equal(support_write_export(sub, f.def, &f.st, 1000, NULL, 0), 1003);
    /* Default version: the current Unix time (or later when taken). */
    int64_t before = (int64_t)time(NULL);
    int64_t v1 = support_write_export(sub, f.def, &f.st, 0, NULL, 0);
    int64_t v2 = support_write_export(sub, f.def, &f.st, 0, NULL, 0);
    assert_true(v1 >= before && v1 <= (int64_t)time(NULL) + 1);
    assert_true(v2 > v1);
    int64_t *vs = NULL;
    size_t n = 0;
    rt_err err;
    assert_int_equal(exp_list_versions(sub, &vs, &n, &err), RT_OK);
    assert_int_equal(n, 5);
    assert_true(vs[0] == 1000 && vs[1] == 1001 && vs[2] == 1003 && vs[3] == v1 && vs[4] == v2);
    free(vs);
    assert_int_equal(count_prefix(sub, ".tmp-"), 0);
    /* A default-version export is always the newest, even when a version
     * from the future exists (several exports in one second). */
    int64_t future = (int64_t)time(NULL) + 100;
    assert_int_equal(support_write_export(sub, f.def, &f.st, future, NULL, 0), future);
    assert_int_equal(support_write_export(sub, f.def, &f.st, 0, NULL, 0), future + 1);
    /* Every version opens. */
    rt_model *m = NULL;
    snprintf(path, sizeof path, "%s/1003", sub);
    assert_int_equal(rt_model_open(path, &m, &err), RT_OK);
    rt_model_close(m);
    assert_int_equal(exp_write(sub, f.def, f.st.t, f.st.n,
                               &(exp_params){.version = -5}, NULL, &err), RT_ERR_INVALID);
    assert_int_equal(support_rmtree(base), 0);
    fx_free(&f);
}

static void test_list_ignores_non_versions(void **state)
{
    (void)state;
    char base[64], p[200];
    rt_err err;
    int64_t *vs = NULL;
    size_t n = 7;
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    assert_int_equal(exp_list_versions(base, &vs, &n, &err), RT_OK);
    assert_int_equal(n, 0);
    assert_null(vs);
    static const char *const names[] = {".tmp-5-1-abc", "abc", "007", "12x", "-3", "42", "7"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", base, names[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    write_file(base, "99", "not a dir", 9);
    assert_int_equal(exp_list_versions(base, &vs, &n, &err), RT_OK);
    assert_int_equal(n, 2);
    assert_true(vs[0] == 7 && vs[1] == 42);
    free(vs);
    snprintf(p, sizeof p, "%s/missing", base);
    assert_int_equal(exp_list_versions(p, &vs, &n, &err), RT_ERR_NOTFOUND);
    assert_int_equal(support_rmtree(base), 0);
}

static void test_retention(void **state)
{
    (void)state;
    fx f;
    char base[64];
    rt_err err;
    size_t removed = 99, n = 0;
    int64_t *vs = NULL;
    fx_init(&f, SUPPORT_SPEC_LINEAR, 13);
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    for (int64_t v = 1; v <= 5; v++)
        assert_int_equal(support_write_export(base, f.def, &f.st, v * 10, NULL, 0), v * 10);
    write_file(base, "notes.txt", "keep me", 7);
    assert_int_equal(exp_retain_latest(base, 0, &removed, &err), RT_ERR_INVALID);
    assert_int_equal(exp_retain_latest(base, 2, &removed, &err), RT_OK);
    assert_int_equal(removed, 3);
    assert_int_equal(exp_list_versions(base, &vs, &n, &err), RT_OK);
    assert_int_equal(n, 2);
    assert_true(vs[0] == 40 && vs[1] == 50);
    free(vs);
    assert_true(exists(base, "notes.txt"));
    assert_int_equal(count_prefix(base, ".tmp-"), 0);
    assert_int_equal(exp_retain_latest(base, 5, &removed, &err), RT_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(exp_remove_version(base, 40, &err), RT_OK);
    assert_false(exists(base, "40"));
    assert_int_equal(exp_remove_version(base, 40, &err), RT_ERR_NOTFOUND);
    assert_int_equal(support_rmtree(base), 0);
    fx_free(&f);
}

static void test_clean_temp(void **state)
{
    (void)state;
    char base[64], p[300];
    rt_err err;
    size_t removed = 0;
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    /* A pid that surely ran and ended: a reaped child's. */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    snprintf(p, sizeof p, "%s/.tmp-5-%ld-dead", base, (long)child);
    assert_int_equal(mkdir(p, 0755), 0);
    write_file(p, "model.pb", "x", 1);
    snprintf(p, sizeof p, "%s/.tmp-6-%ld-live", base, (long)getpid());
    assert_int_equal(mkdir(p, 0755), 0);
    /* pid 1 lives: a slow writer two hours in is kept, two days is not. */
    snprintf(p, sizeof p, "%s/.tmp-7-1-old", base);
    assert_int_equal(mkdir(p, 0755), 0);
    struct timespec old[2] = {{.tv_sec = time(NULL) - 2 * 86400}, {.tv_sec = time(NULL) - 2 * 86400}};
    assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
    snprintf(p, sizeof p, "%s/.tmp-8-1-slow", base);
    assert_int_equal(mkdir(p, 0755), 0);
    struct timespec slow[2] = {{.tv_sec = time(NULL) - 7200}, {.tv_sec = time(NULL) - 7200}};
    assert_int_equal(utimensat(AT_FDCWD, p, slow, 0), 0);
    snprintf(p, sizeof p, "%s/.tmp-other", base); /* unknown form, young: kept */
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/.tmp-junk", base); /* unknown form, two hours: removed */
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(utimensat(AT_FDCWD, p, slow, 0), 0);
    assert_int_equal(exp_clean_temp(base, 3600, &removed, &err), RT_OK);
    assert_int_equal(removed, 3);
    assert_true(exists(base, ".tmp-other"));
    assert_true(exists(base, ".tmp-8-1-slow"));
    assert_false(exists(base, ".tmp-junk"));
    snprintf(p, sizeof p, ".tmp-6-%ld-live", (long)getpid());
    assert_true(exists(base, p));
    assert_false(exists(base, ".tmp-7-1-old"));
    assert_int_equal(count_prefix(base, ".tmp-5-"), 0);
    assert_int_equal(support_rmtree(base), 0);
}

static void test_assets(void **state)
{
    (void)state;
    fx f;
    char base[64], src[200], path[4096], p[4200];
    rt_err err = {{0}};
    fx_init(&f, SUPPORT_SPEC_LINEAR, 14);
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    snprintf(src, sizeof src, "%s/src.txt", base);
    write_file(base, "src.txt", "a\nb\n", 4);
    exp_asset assets[3] = {{.name = "vocab.txt", .data = "red\ngreen\n", .len = 10},
                           {.name = "copied.txt", .src_path = src},
                           {.name = "sub/dir/deep.txt", .data = "x", .len = 1}};
    exp_params prm = exp_default_params();
    prm.assets = assets;
    prm.n_assets = 3;
    prm.version = 5;
    exp_result res;
    assert_int_equal(exp_write(base, f.def, f.st.t, f.st.n, &prm, &res, &err), RT_OK);
    assert_int_equal(res.version, 5);
    uint8_t *got;
    snprintf(p, sizeof p, "%s/assets/vocab.txt", res.path);
    assert_int_equal(read_file(p, &got), 10);
    assert_memory_equal(got, "red\ngreen\n", 10);
    free(got);
    snprintf(p, sizeof p, "%s/assets/copied.txt", res.path);
    assert_int_equal(read_file(p, &got), 4);
    assert_memory_equal(got, "a\nb\n", 4);
    free(got);
    snprintf(p, sizeof p, "%s/assets/sub/dir/deep.txt", res.path);
    assert_int_equal(read_file(p, &got), 1);
    free(got);
    rt_model *m = NULL;
    assert_int_equal(rt_model_open(res.path, &m, &err), RT_OK);
    rt_model_close(m);
    /* Names that could leave assets/ are refused. */
    static const char *const bad[] = {"/abs", "a/../b", "..", "./x", "dir/", "a//b", ""};
    prm.version = 6;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assets[1] = (exp_asset){.name = bad[i], .data = "x", .len = 1};
        assert_int_equal(exp_write(base, f.def, f.st.t, f.st.n, &prm, &res, &err),
                         RT_ERR_INVALID);
        assert_non_null(strstr(err.msg, "must be a relative path"));
    }
    /* A bad asset fails after model.pb and variables.bin were written:
     * nothing is left behind. */
    assets[1].name = "../evil";
    prm.version = 6;
    assert_int_equal(exp_write(base, f.def, f.st.t, f.st.n, &prm, &res, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "../evil"));
    assets[1] = (exp_asset){.name = "gone.txt", .src_path = "/nonexistent/file"};
    assert_int_equal(exp_write(base, f.def, f.st.t, f.st.n, &prm, &res, &err), RT_ERR_IO);
    assert_non_null(strstr(err.msg, "assets/gone.txt"));
    assert_false(exists(base, "6"));
    assert_int_equal(count_prefix(base, ".tmp-"), 0);
    (void)path;
    assert_int_equal(support_rmtree(base), 0);
    fx_free(&f);
}

/* Child: exp_write under a 16 KiB file size limit must fail cleanly. Exit
 * codes say which check failed (cmocka asserts do not work across fork). */
static int disk_full_child(const char *base)
{
    signal(SIGXFSZ, SIG_IGN); /* write(2) then fails with EFBIG */
    Predictd__ModelDef *d = support_spec_modeldef(SUPPORT_SPEC_WIDE_DEEP);
    if (!d)
        return 10;
    support_tensors st;
    if (support_random_tensors(d, 15, 1.0f, &st) != 0)
        return 11;
    /* Make variables.bin larger than the limit with a big extra tensor. */
    size_t big = 64 * 1024;
    float *data = calloc(big, sizeof *data);
    exp_tensor *t = calloc(st.n + 1, sizeof *t);
    if (!data || !t)
        return 12;
    memcpy(t, st.t, st.n * sizeof *t);
    t[st.n] = (exp_tensor){.name = "big", .data = data, .shape = {big}, .rank = 1};
    struct rlimit rl = {.rlim_cur = 16 * 1024, .rlim_max = RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 13;
    exp_params p = exp_default_params();
    p.check_graph = 0;
    p.version = 77;
    rt_err err = {{0}};
    rt_status s = exp_write(base, d, t, st.n + 1, &p, NULL, &err);
    fprintf(stderr, "disk full: %s\n", err.msg);
    if (s != RT_ERR_IO)
        return 14;
    if (!strstr(err.msg, "variables.bin: write: "))
        return 15;
    free(t);
    free(data);
    support_tensors_free(&st);
    rt_spec_modeldef_free(d);
    return 0;
}

static void test_disk_full_leaves_nothing(void **state)
{
    (void)state;
    char base[64];
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(disk_full_child(base));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_false(exists(base, "77"));
    assert_int_equal(count_prefix(base, ".tmp-"), 0);
    int64_t *vs = NULL;
    size_t n = 9;
    rt_err err;
    assert_int_equal(exp_list_versions(base, &vs, &n, &err), RT_OK);
    assert_int_equal(n, 0);
    assert_int_equal(support_rmtree(base), 0);
}

/* Four processes export version 500 five times each at once: RENAME_NOREPLACE
 * gives 20 distinct versions 500..519, every one complete. */
static void test_concurrent_writers(void **state)
{
    (void)state;
    fx f;
    char base[64], path[4200];
    rt_err err = {{0}};
    fx_init(&f, SUPPORT_SPEC_LINEAR, 16);
    assert_int_equal(support_mkdtemp(base, sizeof base), 0);
    fflush(NULL);
    pid_t kids[4];
    for (int k = 0; k < 4; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            for (int i = 0; i < 5; i++)
                if (support_write_export(base, f.def, &f.st, 500, NULL, 0) < 500)
                    _exit(1);
            _exit(0);
        }
    }
    for (int k = 0; k < 4; k++) {
        int status = 0;
        assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    int64_t *vs = NULL;
    size_t n = 0;
    assert_int_equal(exp_list_versions(base, &vs, &n, &err), RT_OK);
    assert_int_equal(n, 20);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(vs[i], 500 + (int64_t)i);
        rt_model *m = NULL;
        snprintf(path, sizeof path, "%s/%lld", base, (long long)vs[i]);
        if (rt_model_open(path, &m, &err) != RT_OK)
            fail_msg("%s: %s", path, err.msg);
        rt_model_close(m);
    }
    free(vs);
    assert_int_equal(count_prefix(base, ".tmp-"), 0);
    assert_int_equal(support_rmtree(base), 0);
    fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serialize_layout),
        cmocka_unit_test(test_roundtrip_files),
        cmocka_unit_test(test_predictions_identical_wide_deep),
        cmocka_unit_test(test_predictions_identical_linear),
        cmocka_unit_test(test_predictions_identical_dnn_regressor),
        cmocka_unit_test(test_bad_variables_header),
        cmocka_unit_test(test_bad_index),
        cmocka_unit_test(test_missing_and_extra_tensor),
        cmocka_unit_test(test_checksum_mismatch),
        cmocka_unit_test(test_bad_model_pb),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_corruption_never_crashes),
        cmocka_unit_test(test_bad_export_corpus),
        cmocka_unit_test(test_version_parse),
        cmocka_unit_test(test_version_collision),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_list_ignores_non_versions),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_clean_temp),
        cmocka_unit_test(test_assets),
        cmocka_unit_test(test_disk_full_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
