/*
 * exp_write.c — serializes a ModelDef and its tensors into model.pb +
 * variables.bin bytes, and writes them as an export directory atomically
 * (hidden temp dir, fsync, rename(2) with RENAME_NOREPLACE, fsync the base).
 * Layout: docs/export-format.md.
 */
#include "exp_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MODEL_PB_MAX ((size_t)256 << 20)
#define STALE_TEMP_SECS 3600

exp_params exp_default_params(void)
{
    exp_params p;
    memset(&p, 0, sizeof p);
    p.version = 0;
    p.check_graph = 1;
    p.sync = 1;
    p.clean_temp = 1;
    return p;
}

void exp_blobs_free(exp_blobs *b)
{
    if (!b)
        return;
    free(b->model_pb);
    free(b->vars);
    memset(b, 0, sizeof *b);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void free_index(Predictd__ModelDef *def)
{
    for (size_t i = 0; i < def->n_tensors; i++)
        if (def->tensors[i])
            protobuf_c_message_free_unpacked(&def->tensors[i]->base, NULL);
    free(def->tensors);
    def->tensors = NULL;
    def->n_tensors = 0;
}

/* Bytes of one tensor, overflow-checked. */
static rt_status tensor_bytes(const exp_tensor *t, size_t i, uint64_t *bytes, rt_err *err)
{
    if (!t->name || !t->name[0])
        return rt_err_set(err, RT_ERR_INVALID, "tensors[%zu]: empty name", i);
    if (t->rank < 1 || t->rank > 2)
        return rt_err_set(err, RT_ERR_INVALID, "tensor \"%s\": rank %" PRIu32 " (must be 1 or 2)",
                          t->name, t->rank);
    uint64_t count = 1;
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->shape[d] != 0 && count > UINT64_MAX / 4 / t->shape[d])
            return rt_err_set(err, RT_ERR_LIMIT, "tensor \"%s\": shape overflows", t->name);
        count *= t->shape[d];
    }
    if (count && !t->data)
        return rt_err_set(err, RT_ERR_INVALID, "tensor \"%s\": NULL data", t->name);
    *bytes = count * 4;
    return RT_OK;
}

/* The tensors must be exactly those the graph needs, with the same shapes. */
static rt_status check_graph(const Predictd__ModelDef *def, const exp_tensor *t, size_t n,
                             rt_err *err)
{
    rt_tensor_spec *specs = NULL;
    size_t ns = 0;
    rt_status st = rt_graph_tensor_specs(def, &specs, &ns, err);
    if (st != RT_OK)
        return st;
    for (size_t i = 0; i < ns && st == RT_OK; i++) {
        size_t j = 0;
        while (j < n && strcmp(t[j].name, specs[i].name) != 0)
            j++;
        if (j == n) {
            st = rt_err_set(err, RT_ERR_INVALID, "tensor \"%s\" needed by the graph is missing",
                            specs[i].name);
            break;
        }
        int same = t[j].rank == specs[i].rank;
        for (uint32_t d = 0; same && d < t[j].rank; d++)
            same = t[j].shape[d] == specs[i].shape[d];
        if (!same)
            st = rt_err_set(err, RT_ERR_INVALID, "tensor \"%s\": shape does not match the graph",
                            specs[i].name);
    }
    if (st == RT_OK && ns != n)
        st = rt_err_set(err, RT_ERR_INVALID,
                        "%zu tensors given but the graph needs %zu (extra tensors?)", n, ns);
    free(specs);
    return st;
}

rt_status exp_serialize(Predictd__ModelDef *def, const exp_tensor *tensors, size_t n,
                        const exp_params *p, exp_blobs *out, rt_err *err)
{
    rt_status st = RT_OK;
    exp_params defaults = exp_default_params();
    uint64_t *offsets = NULL;
    Predictd__TensorInfo **index = NULL;
    size_t built = 0;
    if (!def || !out || (n && !tensors))
        return rt_err_set(err, RT_ERR_INVALID, "exp_serialize: NULL argument");
    memset(out, 0, sizeof *out);
    if (!p)
        p = &defaults;
    if (n > UINT32_MAX)
        return rt_err_set(err, RT_ERR_LIMIT, "%zu tensors exceeds the format's limit", n);

    /* Layout: header, then each tensor at the next 64-byte boundary. */
    offsets = calloc(n ? n : 1, sizeof *offsets);
    if (!offsets)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    uint64_t end = RT_VARS_HEADER;
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = 0;
        if ((st = tensor_bytes(&tensors[i], i, &bytes, err)) != RT_OK)
            goto out;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(tensors[j].name, tensors[i].name) == 0) {
                st = rt_err_set(err, RT_ERR_INVALID, "tensor \"%s\" given twice",
                                tensors[i].name);
                goto out;
            }
        }
        uint64_t off = (end + RT_VARS_ALIGN - 1) / RT_VARS_ALIGN * RT_VARS_ALIGN;
        if (off < end || bytes > UINT64_MAX - off || off + bytes > (uint64_t)SIZE_MAX / 2) {
            st = rt_err_set(err, RT_ERR_LIMIT, "tensor \"%s\": variables.bin would be too large",
                            tensors[i].name);
            goto out;
        }
        offsets[i] = off;
        end = off + bytes;
    }
    if (p->check_graph && (st = check_graph(def, tensors, n, err)) != RT_OK)
        goto out;
    def->statistics_size = p->statistics ? (uint64_t)p->statistics_len : 0;
    def->statistics_crc32c =
        p->statistics ? rt_hash_crc32c(0, p->statistics, p->statistics_len) : 0;

    size_t size = (size_t)end;
    size_t cap = (size + RT_VARS_ALIGN - 1) / RT_VARS_ALIGN * RT_VARS_ALIGN;
    out->vars = aligned_alloc(RT_VARS_ALIGN, cap);
    index = calloc(n ? n : 1, sizeof *index);
    if (!out->vars || !index) {
        st = rt_err_set(err, RT_ERR_NOMEM, "variables.bin: out of memory for %zu bytes", size);
        goto out;
    }
    memset(out->vars, 0, cap);
    out->vars_len = size;
    memcpy(out->vars, RT_VARS_MAGIC, 8);
    put_le32(out->vars + 8, RT_VARS_VERSION);
    put_le32(out->vars + 12, (uint32_t)n);
    put_le64(out->vars + 16, (uint64_t)size);
    put_le32(out->vars + 24, rt_hash_crc32c(0, out->vars, 24));

    for (size_t i = 0; i < n; i++) {
        const exp_tensor *t = &tensors[i];
        uint64_t bytes = 4;
        for (uint32_t d = 0; d < t->rank; d++)
            bytes *= t->shape[d];
        uint8_t *dst = out->vars + offsets[i];
        /* Little-endian on disk: a byte copy on the little-endian hosts we
         * support (the reader refuses big-endian hosts). */
        if (bytes)
            memcpy(dst, t->data, (size_t)bytes);
        Predictd__TensorInfo *ti = malloc(sizeof *ti);
        if (!ti) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        predictd__tensor_info__init(ti);
        index[built++] = ti;
        ti->name = strdup(t->name);
        ti->shape = malloc(t->rank * sizeof *ti->shape);
        if (!ti->name || !ti->shape) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        ti->n_shape = t->rank;
        memcpy(ti->shape, t->shape, t->rank * sizeof *ti->shape);
        ti->dtype = PREDICTD__DTYPE__DT_FLOAT;
        ti->offset = offsets[i];
        ti->length = bytes;
        ti->crc32c = rt_hash_crc32c(0, dst, (size_t)bytes);
    }

    free_index(def);
    def->tensors = index;
    def->n_tensors = n;
    index = NULL;
    built = 0;
    def->variables_size = (uint64_t)size;
    if (def->format_version == 0)
        def->format_version = RT_FORMAT_VERSION;

    size_t pb_len = predictd__model_def__get_packed_size(def);
    if (pb_len > MODEL_PB_MAX) {
        st = rt_err_set(err, RT_ERR_LIMIT, "model.pb: %zu bytes exceeds the limit of %zu",
                        pb_len, MODEL_PB_MAX);
        goto out;
    }
    out->model_pb = malloc(pb_len ? pb_len : 1);
    if (!out->model_pb) {
        st = rt_err_set(err, RT_ERR_NOMEM, "model.pb: out of memory");
        goto out;
    }
    out->model_pb_len = predictd__model_def__pack(def, out->model_pb);
out:
    for (size_t i = 0; i < built; i++)
        protobuf_c_message_free_unpacked(&index[i]->base, NULL);
    free(index);
    free(offsets);
    if (st != RT_OK)
        exp_blobs_free(out);
    return st;
}

/* A relative path under assets/: components not empty, ".", ".."; no
 * leading or trailing '/', no control characters or '\\'; at most 255 bytes
 * (the runtime's rule for vocabulary_file). */
static int asset_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 255 || s[0] == '/' || s[n - 1] == '/')
        return 0;
    for (const char *c = s; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)c[i] < 0x20 || c[i] == '\\')
                return 0;
        c += len;
        if (*c == '/')
            c++;
    }
    return 1;
}

/* The version directory's files: model.pb, variables.bin, statistics.json
 * when given, each asset as assets/<name> (names checked here, where they
 * come from the caller). *names holds the assets' joined names. */
static rt_status export_files(const exp_blobs *b, const exp_params *p, rt_publish_file **out,
                              size_t *n, char **names, rt_err *err)
{
    *out = NULL;
    *names = NULL;
    *n = 0;
    if (p->n_assets && !p->assets)
        return rt_err_set(err, RT_ERR_INVALID, "assets: NULL list");
    size_t room = 0;
    for (size_t i = 0; i < p->n_assets; i++) {
        const exp_asset *a = &p->assets[i];
        if (!asset_name_ok(a->name))
            return rt_err_set(err, RT_ERR_INVALID,
                              "assets[%zu]: name \"%.64s\" must be a relative path without "
                              "\".\" or \"..\" parts", i, a->name ? a->name : "(null)");
        if (!a->data && !a->src_path && a->len)
            return rt_err_set(err, RT_ERR_INVALID, "assets/%s: no data and no source path",
                              a->name);
        room += strlen("assets/") + strlen(a->name) + 1;
    }
    rt_publish_file *f = calloc(3 + p->n_assets, sizeof *f);
    char *buf = malloc(room ? room : 1);
    if (!f || !buf) {
        free(f);
        free(buf);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    f[k++] = (rt_publish_file){.name = "model.pb", .data = b->model_pb, .len = b->model_pb_len};
    f[k++] = (rt_publish_file){.name = "variables.bin", .data = b->vars, .len = b->vars_len};
    if (p->statistics)
        f[k++] = (rt_publish_file){.name = "statistics.json", .data = p->statistics,
                                   .len = p->statistics_len};
    char *w = buf;
    for (size_t i = 0; i < p->n_assets; i++) {
        const exp_asset *a = &p->assets[i];
        int len = sprintf(w, "assets/%s", a->name);
        f[k++] = (rt_publish_file){.name = w, .data = a->data, .len = a->len,
                                   .src_path = a->src_path};
        w += len + 1;
    }
    *out = f;
    *n = k;
    *names = buf;
    return RT_OK;
}

rt_status exp_write(const char *base, Predictd__ModelDef *def, const exp_tensor *tensors,
                    size_t n, const exp_params *p, exp_result *res, rt_err *err)
{
    rt_status st;
    exp_params defaults = exp_default_params();
    exp_blobs blobs = {0};
    rt_publish_file *files = NULL;
    char *names = NULL;
    size_t nf = 0;
    if (!p)
        p = &defaults;
    if (res)
        memset(res, 0, sizeof *res);
    if (p->version < 0)
        return rt_err_set(err, RT_ERR_INVALID, "version %" PRId64 " is negative", p->version);
    if (!base || strlen(base) + 22 > sizeof res->path) /* "/" + 20 digits + NUL */
        return rt_err_set(err, RT_ERR_LIMIT, "export base path is missing or too long");

    if ((st = exp_serialize(def, tensors, n, p, &blobs, err)) != RT_OK)
        goto out;
    if ((st = export_files(&blobs, p, &files, &nf, &names, err)) != RT_OK)
        goto out;
    if (p->clean_temp)
        (void)exp_clean_temp(base, STALE_TEMP_SECS, NULL, NULL);
    rt_publish_params pp = {.version = p->version, .sync = p->sync != 0};
    int64_t version = 0;
    if ((st = rt_publish_version(base, files, nf, &pp, &version, err)) != RT_OK)
        goto out;
    if (res) {
        res->version = version;
        int w = snprintf(res->path, sizeof res->path, "%s/%" PRId64, base, version);
        if (w < 0 || (size_t)w >= sizeof res->path)
            res->path[0] = '\0';
    }
out:
    free(files);
    free(names);
    exp_blobs_free(&blobs);
    return st;
}
