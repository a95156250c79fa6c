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

#define VERSION_TRIES 1000         /* next integers tried when a version exists */
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

/* write(2) all of buf, retrying short writes and EINTR. */
static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Creates dfd/name with the given bytes (or a copy of src_path), fsynced. */
static rt_status write_file_at(int dfd, const char *label, const char *name, const void *data,
                               size_t len, const char *src_path, int sync, rt_err *err)
{
    rt_status st = RT_OK;
    int src = -1;
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: create: %s", label, strerror(errno));
    if (data || !src_path) {
        if (write_all(fd, data, len) != 0) {
            st = rt_err_set(err, RT_ERR_IO, "%s: write: %s", label, strerror(errno));
            goto out;
        }
    } else {
        uint8_t buf[65536];
        struct stat sb;
        src = open(src_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO cannot block */
        if (src < 0) {
            st = rt_err_set(err, RT_ERR_IO, "%s: cannot open source %s: %s", label, src_path,
                            strerror(errno));
            goto out;
        }
        if (fstat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            st = rt_err_set(err, RT_ERR_IO, "%s: source %s is not a regular file", label,
                            src_path);
            goto out;
        }
        for (;;) {
            ssize_t r = read(src, buf, sizeof buf);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                st = rt_err_set(err, RT_ERR_IO, "%s: read %s: %s", label, src_path,
                                strerror(errno));
                goto out;
            }
            if (r == 0)
                break;
            if (write_all(fd, buf, (size_t)r) != 0) {
                st = rt_err_set(err, RT_ERR_IO, "%s: write: %s", label, strerror(errno));
                goto out;
            }
        }
    }
    if (sync && fsync(fd) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: fsync: %s", label, strerror(errno));
        goto out;
    }
out:
    if (src >= 0)
        close(src);
    if (close(fd) != 0 && st == RT_OK)
        st = rt_err_set(err, RT_ERR_IO, "%s: close: %s", label, strerror(errno));
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

/* Opens (creating when missing) directory `name` (len bytes) inside dfd;
 * fsyncs dfd after creating it when sync. -1 with errno on failure. */
static int open_subdir(int dfd, const char *name, size_t len, int sync)
{
    char comp[256];
    if (len >= sizeof comp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(comp, name, len);
    comp[len] = '\0';
    if (mkdirat(dfd, comp, 0755) == 0) {
        if (sync && fsync(dfd) != 0)
            return -1;
    } else if (errno != EEXIST) {
        return -1;
    }
    return openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Writes one asset at its relative path under the assets directory afd. */
static rt_status write_asset(int afd, const exp_asset *a, int sync, rt_err *err)
{
    rt_status st = RT_OK;
    char label[320];
    snprintf(label, sizeof label, "assets/%s", a->name);
    int dfd = dup(afd);
    if (dfd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: dup: %s", label, strerror(errno));
    const char *c = a->name;
    for (const char *slash; (slash = strchr(c, '/')) != NULL; c = slash + 1) {
        int sub = open_subdir(dfd, c, (size_t)(slash - c), sync);
        if (sub < 0) {
            st = rt_err_set(err, RT_ERR_IO, "%s: directory: %s", label, strerror(errno));
            goto out;
        }
        close(dfd);
        dfd = sub;
    }
    st = write_file_at(dfd, label, c, a->data, a->len, a->src_path, sync, err);
    if (st == RT_OK && sync && fsync(dfd) != 0)
        st = rt_err_set(err, RT_ERR_IO, "%s: fsync of its directory: %s", label,
                        strerror(errno));
out:
    close(dfd);
    return st;
}

/* Writes the assets/ directory inside the temp dir tfd. */
static rt_status write_assets(int tfd, const exp_params *p, rt_err *err)
{
    rt_status st = RT_OK;
    if (p->n_assets == 0)
        return RT_OK;
    if (!p->assets)
        return rt_err_set(err, RT_ERR_INVALID, "assets: NULL list");
    if (mkdirat(tfd, "assets", 0755) != 0)
        return rt_err_set(err, RT_ERR_IO, "assets: mkdir: %s", strerror(errno));
    int afd = openat(tfd, "assets", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (afd < 0)
        return rt_err_set(err, RT_ERR_IO, "assets: open: %s", strerror(errno));
    for (size_t i = 0; i < p->n_assets && st == RT_OK; i++) {
        const exp_asset *a = &p->assets[i];
        if (!asset_name_ok(a->name)) {
            st = rt_err_set(err, RT_ERR_INVALID,
                            "assets[%zu]: name \"%.64s\" must be a relative path without "
                            "\".\" or \"..\" parts", i, a->name ? a->name : "(null)");
            break;
        }
        if (!a->data && !a->src_path && a->len) {
            st = rt_err_set(err, RT_ERR_INVALID, "assets/%s: no data and no source path",
                            a->name);
            break;
        }
        st = write_asset(afd, a, p->sync, err);
    }
    if (st == RT_OK && p->sync && fsync(afd) != 0)
        st = rt_err_set(err, RT_ERR_IO, "assets: fsync: %s", strerror(errno));
    close(afd);
    return st;
}

/* rename(2) that never replaces an existing target. -1 with errno (EEXIST
 * when the target exists). */
static int rename_noreplace(int dfd, const char *from, const char *to)
{
    if (renameat2(dfd, from, dfd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    /* File systems without RENAME_NOREPLACE: check, then rename. A racing
     * writer could still win in between; renaming onto a non-empty version
     * directory fails with ENOTEMPTY, which we treat as "exists". */
    struct stat sb;
    if (fstatat(dfd, to, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    if (renameat(dfd, from, dfd, to) == 0)
        return 0;
    if (errno == ENOTEMPTY)
        errno = EEXIST;
    return -1;
}

/* The default version: the Unix time now, or one past the newest existing
 * version if that is not older (several exports in one second), so a new
 * export is always the newest and retention never removes it. */
static rt_status default_version(const char *base, int64_t *version, rt_err *err)
{
    int64_t *have = NULL;
    size_t n = 0;
    rt_status st = exp_list_versions(base, &have, &n, err);
    if (st != RT_OK)
        return st;
    int64_t v = (int64_t)time(NULL);
    if (n > 0 && have[n - 1] >= v)
        v = have[n - 1] < INT64_MAX ? have[n - 1] + 1 : have[n - 1];
    free(have);
    *version = v;
    return RT_OK;
}

rt_status exp_write(const char *base, Predictd__ModelDef *def, const exp_tensor *tensors,
                    size_t n, const exp_params *p, exp_result *res, rt_err *err)
{
    rt_status st;
    exp_params defaults = exp_default_params();
    exp_blobs blobs = {0};
    char tmp[96], name[32];
    int bfd = -1, tfd = -1, have_tmp = 0;
    if (!p)
        p = &defaults;
    if (res)
        memset(res, 0, sizeof *res);
    if (p->version < 0)
        return rt_err_set(err, RT_ERR_INVALID, "version %" PRId64 " is negative", p->version);
    if (!base || strlen(base) + 22 > sizeof res->path) /* "/" + 20 digits + NUL */
        return rt_err_set(err, RT_ERR_LIMIT, "export base path is missing or too long");
    int64_t version = p->version;

    if ((st = exp_serialize(def, tensors, n, p, &blobs, err)) != RT_OK)
        goto out;
    if ((bfd = exp_open_base(base, 1, &st, err)) < 0)
        goto out;
    if (version == 0 && (st = default_version(base, &version, err)) != RT_OK)
        goto out;
    if (p->clean_temp)
        (void)exp_clean_temp(base, STALE_TEMP_SECS, NULL, NULL);

    if (exp_temp_name(tmp, sizeof tmp, version) != 0) {
        st = rt_err_set(err, RT_ERR_LIMIT, "temp name too long");
        goto out;
    }
    if (mkdirat(bfd, tmp, 0755) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "export base %s: mkdir %s: %s", base, tmp,
                        strerror(errno));
        goto out;
    }
    have_tmp = 1;
    tfd = openat(bfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tfd < 0) {
        st = rt_err_set(err, RT_ERR_IO, "export base %s: open %s: %s", base, tmp,
                        strerror(errno));
        goto out;
    }
    if ((st = write_file_at(tfd, "model.pb", "model.pb", blobs.model_pb, blobs.model_pb_len,
                            NULL, p->sync, err)) != RT_OK)
        goto out;
    if ((st = write_file_at(tfd, "variables.bin", "variables.bin", blobs.vars, blobs.vars_len,
                            NULL, p->sync, err)) != RT_OK)
        goto out;
    if (p->statistics &&
        (st = write_file_at(tfd, "statistics.json", "statistics.json", p->statistics,
                            p->statistics_len, NULL, p->sync, err)) != RT_OK)
        goto out;
    if ((st = write_assets(tfd, p, err)) != RT_OK)
        goto out;
    if (p->sync && fsync(tfd) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "export directory %s: fsync: %s", tmp, strerror(errno));
        goto out;
    }

    int tries = 0;
    for (;;) {
        snprintf(name, sizeof name, "%" PRId64, version);
        if (rename_noreplace(bfd, tmp, name) == 0)
            break;
        if (errno != EEXIST || ++tries >= VERSION_TRIES || version == INT64_MAX) {
            st = rt_err_set(err, errno == EEXIST ? RT_ERR_EXISTS : RT_ERR_IO,
                            "export base %s: rename %s to %s: %s", base, tmp, name,
                            strerror(errno));
            goto out;
        }
        version++; /* taken: the next integer (see exp.h) */
    }
    have_tmp = 0;
    if (p->sync && fsync(bfd) != 0) {
        /* Its durability is in doubt: take the version back out. */
        st = rt_err_set(err, RT_ERR_IO, "export base %s: fsync: %s", base, strerror(errno));
        if (renameat(bfd, name, bfd, tmp) == 0)
            have_tmp = 1;
        goto out;
    }
    if (res) {
        res->version = version;
        int w = snprintf(res->path, sizeof res->path, "%s/%s", base, name);
        if (w < 0 || (size_t)w >= sizeof res->path)
            res->path[0] = '\0';
    }
out:
    if (tfd >= 0)
        close(tfd);
    if (have_tmp)
        (void)rt_file_rmtree_at(bfd, tmp);
    if (bfd >= 0)
        close(bfd);
    exp_blobs_free(&blobs);
    return st;
}
