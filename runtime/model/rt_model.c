/*
 * rt_model.c — opens and validates an export (model.pb + variables.bin +
 * assets/) and binds the compiled graph to the tensors, read into private
 * memory at load (never a shared mapping of the file).
 *
 * A version directory without model.pb may hold XGBoost's model.json
 * instead (rt_xgb_model.c): it opens as the same rt_model, a BoostedTrees
 * ensemble without variables (or an ONNX model.onnx), with the training
 * statistics of a statistics.json beside it when there is one (predict-model
 * import --data writes it).
 *
 * Nothing from the files is trusted: every length, offset, count and
 * checksum is checked before use, and a refusal names the file and the
 * problem. The byte layout and the rules are in docs/export-format.md.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"

#include <cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL_PB_MAX ((size_t)256 << 20) /* model.pb size cap */
#define XGB_JSON_MAX ((size_t)1 << 30)   /* model.json size cap */

/* One tensor of the index, resolved against the variables bytes. */
typedef struct tensor_ref {
    const char *name;  /* points into the ModelDef */
    const float *data; /* points into the variables bytes */
    uint64_t count;    /* floats */
    uint64_t offset, length;
    const Predictd__TensorInfo *info;
} tensor_ref;

struct rt_model {
    Predictd__ModelDef *def;
    const uint8_t *vars; /* the aligned copy below */
    size_t vars_len;
    void *copy;          /* free(copy) when set */
    tensor_ref *refs;    /* [n_refs] sorted by name */
    size_t n_refs;
    rt_graph *graph;
    rt_stats *stats;     /* statistics.json, or NULL */
    rt_onnx *onnx;       /* model.onnx's network, or NULL */
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

int rt_model_version_parse(const char *name, int64_t *version)
{
    if (!name || !name[0])
        return 0;
    if (name[0] == '0' && name[1] != '\0')
        return 0;
    uint64_t v = 0;
    for (const char *p = name; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        unsigned d = (unsigned)(*p - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (version)
        *version = (int64_t)v;
    return 1;
}

/* "[3, 4]" into buf. */
static const char *shape_str(char *buf, size_t cap, const uint64_t *dims, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    int w = snprintf(buf, cap, "[");
    used = w > 0 ? (size_t)w : 0;
    for (size_t i = 0; i < n && used < cap; i++) {
        w = snprintf(buf + used, cap - used, "%s%" PRIu64, i ? ", " : "", dims[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

/* Unpacks model.pb bytes and checks the format version. */
static rt_status unpack_def(const uint8_t *pb, size_t len, Predictd__ModelDef **out, rt_err *err)
{
    *out = NULL;
    if (len == 0)
        return rt_err_set(err, RT_ERR_FORMAT, "model.pb: file is empty");
    if (len > MODEL_PB_MAX)
        return rt_err_set(err, RT_ERR_LIMIT, "model.pb: %zu bytes exceeds the limit of %zu",
                          len, MODEL_PB_MAX);
    rt_pb_alloc pa;
    rt_pb_alloc_init(&pa);
    Predictd__ModelDef *def = predictd__model_def__unpack(&pa.a, len, pb);
    if (!def && pa.failed)
        return rt_err_set(err, RT_ERR_NOMEM, "model.pb: out of memory unpacking %zu bytes", len);
    if (!def)
        return rt_err_set(err, RT_ERR_FORMAT, "model.pb: not a valid ModelDef protobuf");
    if (def->format_version != RT_FORMAT_VERSION) {
        rt_status st = rt_err_set(err, RT_ERR_UNSUPPORTED,
                                  "model.pb: format_version %" PRIu32
                                  " is not supported (this build reads %u)",
                                  def->format_version, RT_FORMAT_VERSION);
        predictd__model_def__free_unpacked(def, NULL);
        return st;
    }
    *out = def;
    return RT_OK;
}

static int ref_by_name(const void *a, const void *b)
{
    return strcmp(((const tensor_ref *)a)->name, ((const tensor_ref *)b)->name);
}

static int ref_by_offset(const void *a, const void *b)
{
    const tensor_ref *x = *(const tensor_ref *const *)a, *y = *(const tensor_ref *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->length < y->length ? -1 : x->length > y->length;
}

static const tensor_ref *find_ref(const rt_model *m, const char *name)
{
    tensor_ref key = {.name = name};
    if (m->n_refs == 0)
        return NULL;
    return bsearch(&key, m->refs, m->n_refs, sizeof *m->refs, ref_by_name);
}

/* The variables.bin header against the file size and the index. */
static rt_status check_header(const rt_model *m, rt_err *err)
{
    const uint8_t *h = m->vars;
    size_t size = m->vars_len;
    if (size == 0)
        return rt_err_set(err, RT_ERR_FORMAT, "variables.bin: file is empty");
    if (size < RT_VARS_HEADER)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: %zu bytes is too small for the %u-byte header "
                          "(truncated?)", size, RT_VARS_HEADER);
    if (memcmp(h, RT_VARS_MAGIC, 8) != 0)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: bad magic (not a predictd variables file)");
    uint32_t version = le32(h + 8);
    if (version != RT_VARS_VERSION)
        return rt_err_set(err, RT_ERR_UNSUPPORTED,
                          "variables.bin: version %" PRIu32 " is not supported (this build "
                          "reads %u)", version, RT_VARS_VERSION);
    uint32_t crc = rt_hash_crc32c(0, h, 24), stored = le32(h + 24);
    if (crc != stored)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: header checksum mismatch (stored 0x%08" PRIx32
                          ", computed 0x%08" PRIx32 ")", stored, crc);
    uint64_t size_field = le64(h + 16);
    if (size_field != (uint64_t)size)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: header says the file has %" PRIu64
                          " bytes but it has %zu (truncated or extended?)", size_field, size);
    if (m->def->variables_size != (uint64_t)size)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: model.pb says variables_size %" PRIu64
                          " but the file has %zu bytes", m->def->variables_size, size);
    uint32_t count = le32(h + 12);
    if ((size_t)count != m->def->n_tensors)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: header counts %" PRIu32
                          " tensors but the model.pb index has %zu", count, m->def->n_tensors);
    return RT_OK;
}

/* One index entry: dtype, shape, length, offset, bounds. */
static rt_status check_entry(const rt_model *m, size_t i, tensor_ref *r, rt_err *err)
{
    const Predictd__TensorInfo *ti = m->def->tensors[i];
    char sb[128];
    if (!ti->name || !ti->name[0])
        return rt_err_set(err, RT_ERR_FORMAT, "model.pb: tensors[%zu]: empty name", i);
    const char *nm = ti->name;
    if (ti->dtype != PREDICTD__DTYPE__DT_FLOAT)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "model.pb: tensor \"%s\": dtype %d is not DT_FLOAT", nm, (int)ti->dtype);
    if (ti->n_shape == 0 || ti->n_shape > 8)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "model.pb: tensor \"%s\": rank %zu is not supported (1..8)", nm,
                          ti->n_shape);
    uint64_t count = 1;
    for (size_t d = 0; d < ti->n_shape; d++) {
        if (ti->shape[d] != 0 && count > UINT64_MAX / 4 / ti->shape[d])
            return rt_err_set(err, RT_ERR_FORMAT, "model.pb: tensor \"%s\": shape %s overflows",
                              nm, shape_str(sb, sizeof sb, ti->shape, ti->n_shape));
        count *= ti->shape[d];
    }
    if (ti->length != count * 4)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "model.pb: tensor \"%s\": length %" PRIu64
                          " bytes does not match shape %s (%" PRIu64 " bytes)",
                          nm, ti->length, shape_str(sb, sizeof sb, ti->shape, ti->n_shape),
                          count * 4);
    if (ti->offset % RT_VARS_ALIGN != 0)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: tensor \"%s\": offset %" PRIu64
                          " is not a multiple of %u", nm, ti->offset, RT_VARS_ALIGN);
    if (ti->offset < RT_VARS_HEADER)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: tensor \"%s\": offset %" PRIu64
                          " lies inside the %u-byte header", nm, ti->offset, RT_VARS_HEADER);
    uint64_t size = (uint64_t)m->vars_len;
    if (ti->offset > size || ti->length > size - ti->offset)
        return rt_err_set(err, RT_ERR_FORMAT,
                          "variables.bin: tensor \"%s\": offset %" PRIu64 " + length %" PRIu64
                          " is past the end of the file (%" PRIu64 " bytes)",
                          nm, ti->offset, ti->length, size);
    r->name = nm;
    r->data = (const float *)(const void *)(m->vars + ti->offset);
    r->count = count;
    r->offset = ti->offset;
    r->length = ti->length;
    r->info = ti;
    return RT_OK;
}

/* Every entry, then duplicates, overlaps and checksums. */
static rt_status check_index(rt_model *m, rt_err *err)
{
    rt_status st = RT_OK;
    const tensor_ref **order = NULL;
    size_t n = m->def->n_tensors;
    if (n == 0)
        return RT_OK;
    m->refs = calloc(n, sizeof *m->refs);
    order = calloc(n, sizeof *order);
    if (!m->refs || !order) {
        st = rt_err_set(err, RT_ERR_NOMEM, "variables.bin: out of memory for %zu tensors", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        st = check_entry(m, i, &m->refs[i], err);
        if (st != RT_OK)
            goto out;
    }
    m->n_refs = n;
    qsort(m->refs, n, sizeof *m->refs, ref_by_name);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(m->refs[i - 1].name, m->refs[i].name) == 0) {
            st = rt_err_set(err, RT_ERR_FORMAT,
                            "model.pb: tensor \"%s\" appears twice in the index", m->refs[i].name);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &m->refs[i];
    qsort(order, n, sizeof *order, ref_by_offset);
    for (size_t i = 1; i < n; i++) {
        const tensor_ref *a = order[i - 1], *b = order[i];
        if (b->offset < a->offset + a->length) { /* no overflow: both are inside the file */
            st = rt_err_set(err, RT_ERR_FORMAT,
                            "variables.bin: tensors \"%s\" (offset %" PRIu64 ", %" PRIu64
                            " bytes) and \"%s\" (offset %" PRIu64 ") overlap",
                            a->name, a->offset, a->length, b->name, b->offset);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const tensor_ref *r = order[i]; /* file order: sequential reads */
        uint32_t crc = rt_hash_crc32c(0, m->vars + r->offset, (size_t)r->length);
        if (crc != r->info->crc32c) {
            st = rt_err_set(err, RT_ERR_FORMAT,
                            "variables.bin: tensor \"%s\": checksum mismatch (stored 0x%08" PRIx32
                            ", computed 0x%08" PRIx32 ")", r->name, r->info->crc32c, crc);
            goto out;
        }
    }
out:
    free(order);
    return st;
}

/* The index must hold exactly the tensors the graph needs, with their shapes. */
static rt_status check_against_graph(const rt_model *m, rt_err *err)
{
    rt_tensor_spec *specs = NULL;
    size_t ns = 0;
    unsigned char *used = NULL;
    char sa[128], sb[128];
    rt_status st = rt_graph_tensor_specs(m->def, &specs, &ns, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "model.pb");
        goto out;
    }
    used = calloc(m->n_refs ? m->n_refs : 1, 1);
    if (!used) {
        st = rt_err_set(err, RT_ERR_NOMEM, "model.pb: out of memory");
        goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        const rt_tensor_spec *s = &specs[i];
        const tensor_ref *r = find_ref(m, s->name);
        if (!r) {
            st = rt_err_set(err, RT_ERR_FORMAT,
                            "model.pb: tensor \"%s\" needed by the graph is missing from the "
                            "index", s->name);
            goto out;
        }
        const Predictd__TensorInfo *ti = r->info;
        int same = ti->n_shape == s->rank;
        for (size_t d = 0; same && d < s->rank; d++)
            same = ti->shape[d] == s->shape[d];
        if (!same) {
            st = rt_err_set(err, RT_ERR_FORMAT,
                            "model.pb: tensor \"%s\": shape %s does not match the graph's %s",
                            s->name, shape_str(sa, sizeof sa, ti->shape, ti->n_shape),
                            shape_str(sb, sizeof sb, s->shape, s->rank));
            goto out;
        }
        used[r - m->refs] = 1;
    }
    for (size_t i = 0; i < m->n_refs; i++) {
        if (!used[i]) {
            st = rt_err_set(err, RT_ERR_FORMAT,
                            "model.pb: tensor \"%s\" is in the index but not used by the graph",
                            m->refs[i].name);
            goto out;
        }
    }
out:
    free(used);
    free(specs);
    return st;
}

static const float *model_lookup(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    const rt_model *m = ctx;
    const tensor_ref *r = name ? find_ref(m, name) : NULL;
    if (!r) {
        rt_err_set(err, RT_ERR_NOTFOUND, "tensor \"%s\" is not in the export",
                   name ? name : "(null)");
        return NULL;
    }
    if (r->count != count) {
        rt_err_set(err, RT_ERR_FORMAT,
                   "tensor \"%s\" has %" PRIu64 " values but the graph needs %" PRIu64, name,
                   r->count, count);
        return NULL;
    }
    return r->data;
}

/* Shared tail of both openers: m->def and m->vars are set. */
static rt_status finish_open(rt_model *m, const char *assets_dir, rt_err *err)
{
    rt_status st;
    if (!host_is_little_endian())
        return rt_err_set(err, RT_ERR_UNSUPPORTED,
                          "variables.bin: little-endian tensors need a little-endian host");
    if ((st = check_header(m, err)) != RT_OK)
        return st;
    if ((st = check_index(m, err)) != RT_OK)
        return st;
    if ((st = check_against_graph(m, err)) != RT_OK)
        return st;
    st = rt_graph_build(m->def, model_lookup, m, assets_dir, &m->graph, err);
    if (st != RT_OK)
        rt_err_prefix(err, "model.pb");
    return st;
}

void rt_model_close(rt_model *m)
{
    if (!m)
        return;
    rt_graph_free(m->graph);
    rt_stats_free(m->stats);
    rt_onnx_free(m->onnx);
    free(m->refs);
    free(m->copy);
    if (m->def)
        rt_spec_modeldef_free(m->def);
    free(m);
}

const rt_graph *rt_model_graph(const rt_model *m)
{
    return m ? m->graph : NULL;
}

const Predictd__ModelDef *rt_model_def(const rt_model *m)
{
    return m ? m->def : NULL;
}

rt_status rt_model_open_buffers(const void *model_pb, size_t pb_len, const void *vars,
                                size_t vars_len, rt_model **out, rt_err *err)
{
    rt_status st;
    rt_model *m = NULL;
    if (!out)
        return rt_err_set(err, RT_ERR_INVALID, "rt_model_open_buffers: out is NULL");
    *out = NULL;
    if ((!model_pb && pb_len) || (!vars && vars_len))
        return rt_err_set(err, RT_ERR_INVALID, "rt_model_open_buffers: NULL buffer");
    m = calloc(1, sizeof *m);
    if (!m)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if ((st = unpack_def(model_pb, pb_len, &m->def, err)) != RT_OK ||
        (st = rt_spec_add_regression_signature(m->def, err)) != RT_OK)
        goto out;
    if (vars_len > 0) {
        if (vars_len > SIZE_MAX - RT_VARS_ALIGN) {
            st = rt_err_set(err, RT_ERR_LIMIT, "variables.bin: %zu bytes is too large", vars_len);
            goto out;
        }
        size_t cap = (vars_len + RT_VARS_ALIGN - 1) / RT_VARS_ALIGN * RT_VARS_ALIGN;
        m->copy = aligned_alloc(RT_VARS_ALIGN, cap);
        if (!m->copy) {
            st = rt_err_set(err, RT_ERR_NOMEM, "variables.bin: out of memory for %zu bytes",
                            vars_len);
            goto out;
        }
        memcpy(m->copy, vars, vars_len);
        m->vars = m->copy;
    }
    m->vars_len = vars_len;
    st = finish_open(m, NULL, err);
out:
    if (st != RT_OK)
        rt_model_close(m);
    else
        *out = m;
    return st;
}

/* Reads variables.bin into private, aligned memory (an empty file is left to
 * check_header). Not mapped: a mapping would follow the file, so bytes changed in
 * place (dd conv=notrunc, cp over, rsync --inplace) would change the answers
 * of a version validated at load, and a file truncated in place would kill
 * the process with SIGBUS. The checksums are computed over this copy, so
 * what serves is exactly what was validated. */
static rt_status read_vars(rt_model *m, int dfd, rt_err *err)
{
    rt_status st = rt_file_read_aligned(dfd, "variables.bin", SIZE_MAX, RT_VARS_ALIGN, &m->copy,
                                        &m->vars_len, err);
    m->vars = m->copy;
    return st;
}

/* A model trained elsewhere: the record predict-model import writes of its
 * statistics.json (RT_STATS_RECORD), {"file": "statistics.json", "size": N,
 * "crc32c": C}, into *size and *crc; *have false when there is none (a
 * statistics.json written by hand). A record that does not parse, or names
 * another file, is refused naming it. */
static rt_status read_stats_record(int dfd, bool *have, uint64_t *size, uint32_t *crc,
                                   rt_err *err)
{
    *have = false;
    if (faccessat(dfd, RT_STATS_RECORD, F_OK, 0) != 0)
        return RT_OK;
    char *text = NULL;
    size_t len = 0;
    rt_status st = rt_file_read(dfd, RT_STATS_RECORD, 4096, 0, &text, &len, err);
    if (st != RT_OK)
        return st;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "file"),
                *n = cJSON_GetObjectItemCaseSensitive(j, "size"),
                *c = cJSON_GetObjectItemCaseSensitive(j, "crc32c");
    bool size_ok = cJSON_IsNumber(n) && n->valuedouble >= 0 && n->valuedouble <= 9e15 &&
                   n->valuedouble == (double)(uint64_t)n->valuedouble;
    bool crc_ok = cJSON_IsNumber(c) && c->valuedouble >= 0 && c->valuedouble <= 4294967295.0 &&
                  c->valuedouble == (double)(uint32_t)c->valuedouble;
    if (!cJSON_IsObject(j) || cJSON_GetArraySize(j) != 3 || !cJSON_IsString(f) ||
        strcmp(f->valuestring, "statistics.json") != 0 || !size_ok || !crc_ok)
        st = rt_err_set(err, RT_ERR_FORMAT,
                        "%s: expected {\"file\": \"statistics.json\", \"size\": bytes, "
                        "\"crc32c\": checksum} (as predict-model import writes it)",
                        RT_STATS_RECORD);
    else {
        *have = true;
        *size = (uint64_t)n->valuedouble;
        *crc = (uint32_t)c->valuedouble;
    }
    cJSON_Delete(j);
    return st;
}

/* statistics.json when model.pb records one: its size and CRC-32C must
 * match (the export's integrity check covers it), then it must parse. A
 * version of a model trained elsewhere (no model.pb, recorded false) has
 * the record predict-model import writes beside it (read_stats_record), or
 * none: its statistics.json, when present, must match the record, then
 * parse. */
static rt_status read_stats(rt_model *m, int dfd, bool recorded, rt_err *err)
{
    bool have = false;
    uint64_t want_size = 0;
    uint32_t want_crc = 0;
    if (!recorded) {
        rt_status rs = read_stats_record(dfd, &have, &want_size, &want_crc, err);
        if (rs != RT_OK)
            return rs;
        if (have && faccessat(dfd, "statistics.json", F_OK, 0) != 0)
            return rt_err_set(err, RT_ERR_FORMAT, "statistics.json: missing, where %s records "
                              "it", RT_STATS_RECORD);
    }
    if (!recorded && faccessat(dfd, "statistics.json", F_OK, 0) != 0)
        return RT_OK;
    if (recorded && m->def->statistics_size == 0)
        return RT_OK;
    char *text = NULL;
    size_t len = 0;
    rt_status st = rt_file_read(dfd, "statistics.json", (size_t)256 << 20, 0, &text, &len, err);
    if (st != RT_OK)
        return st;
    uint32_t crc = rt_hash_crc32c(0, text, len);
    if (!recorded && have && len != want_size)
        st = rt_err_set(err, RT_ERR_FORMAT, "statistics.json: %zu bytes, %s records %" PRIu64,
                        len, RT_STATS_RECORD, want_size);
    else if (!recorded && have && crc != want_crc)
        st = rt_err_set(err, RT_ERR_FORMAT,
                        "statistics.json: checksum mismatch (%s stores 0x%08" PRIx32
                        ", computed 0x%08" PRIx32 ")",
                        RT_STATS_RECORD, want_crc, crc);
    else if (!recorded)
        st = rt_stats_parse_json(text, len, &m->stats, err);
    else if (len != m->def->statistics_size)
        st = rt_err_set(err, RT_ERR_FORMAT,
                        "statistics.json: %zu bytes, model.pb records %" PRIu64, len,
                        m->def->statistics_size);
    else if (crc != m->def->statistics_crc32c)
        st = rt_err_set(err, RT_ERR_FORMAT,
                        "statistics.json: checksum mismatch (stored 0x%08" PRIx32
                        ", computed 0x%08" PRIx32 ")",
                        m->def->statistics_crc32c, crc);
    else
        st = rt_stats_parse_json(text, len, &m->stats, err);
    free(text);
    return st;
}

const rt_stats *rt_model_stats(const rt_model *m)
{
    return m ? m->stats : NULL;
}

/* A directory holding TensorFlow's saved_model.pb (or .pbtxt) instead of
 * model.pb: says what it is and what predictd serves, in place of
 * "model.pb: cannot open". */
static void saved_model_note(int dfd, const char *dir, rt_err *err)
{
    const char *pb = faccessat(dfd, "saved_model.pb", F_OK, 0) == 0      ? "saved_model.pb"
                     : faccessat(dfd, "saved_model.pbtxt", F_OK, 0) == 0 ? "saved_model.pbtxt"
                                                                         : NULL;
    if (pb)
        rt_err_set(err, RT_ERR_NOTFOUND,
                   "%s is a TensorFlow SavedModel (%s), not a predictd export: predictd serves "
                   "the exports predict-train writes (model.pb + variables.bin, "
                   "docs/export-format.md); train the model with predict-train, or serve the "
                   "SavedModel with TensorFlow Serving",
                   dir, pb);
}

/* A version directory without model.pb holding a model trained elsewhere:
 * XGBoost's model.json, model.ubj or model.bst. */
static bool other_format(int dfd)
{
    return faccessat(dfd, "model.json", F_OK, 0) == 0 ||
           faccessat(dfd, "model.ubj", F_OK, 0) == 0 || faccessat(dfd, "model.bst", F_OK, 0) == 0 ||
           faccessat(dfd, "model.onnx", F_OK, 0) == 0;
}

/* An ONNX model (model.onnx, and serving.json when present): the network
 * (rt_onnx_read) and the ModelDef of its inputs and outputs
 * (rt_onnx_to_modeldef); rt_forward runs the network. */
static rt_status open_onnx(rt_model *m, int dfd, rt_err *err)
{
    char *data = NULL, *serving = NULL;
    size_t len = 0, slen = 0;
    rt_status st = rt_file_read(dfd, "model.onnx", RT_ONNX_MAX_BYTES, 0, &data, &len, err);
    if (!st && faccessat(dfd, "serving.json", F_OK, 0) == 0)
        st = rt_file_read(dfd, "serving.json", (size_t)64 << 20, 0, &serving, &slen, err);
    if (!st)
        st = rt_onnx_read("model.onnx", data, len, &m->onnx, err);
    if (!st)
        st = rt_onnx_to_modeldef(m->onnx, serving, slen, &m->def, err);
    free(data);
    free(serving);
    if (!st)
        st = rt_spec_add_regression_signature(m->def, err);
    if (!st && (st = rt_graph_build(m->def, rt_onnx_lookup, m->onnx, NULL, &m->graph, err)) != RT_OK)
        rt_err_prefix(err, "model.onnx");
    if (!st)
        st = rt_onnx_bind(m->onnx, m->graph, err);
    return st;
}

/* XGBoost's model.json, else model.ubj (and serving.json when present) as m's ModelDef and
 * graph (rt_xgb_to_modeldef): no variables (statistics: read_stats). */
static rt_status open_xgb(rt_model *m, int dfd, rt_err *err)
{
    if (faccessat(dfd, "model.json", F_OK, 0) != 0 && faccessat(dfd, "model.ubj", F_OK, 0) != 0 &&
        faccessat(dfd, "model.onnx", F_OK, 0) == 0)
        return open_onnx(m, dfd, err);
    const char *file = faccessat(dfd, "model.json", F_OK, 0) == 0  ? "model.json"
                       : faccessat(dfd, "model.ubj", F_OK, 0) == 0 ? "model.ubj"
                                                                    : NULL;
    if (!file)
        return rt_err_set(err, RT_ERR_UNSUPPORTED,
                          "model.bst: XGBoost's legacy binary format is not read yet: save the "
                          "model as JSON (booster.save_model(\"model.json\"), "
                          "docs/models-from-elsewhere.md)");
    char *text = NULL, *serving = NULL;
    size_t len = 0, slen = 0;
    rt_xgb_link link = RT_XGB_LINK_NONE;
    rt_status st = rt_file_read(dfd, file, XGB_JSON_MAX, 0, &text, &len, err);
    if (!st && faccessat(dfd, "serving.json", F_OK, 0) == 0)
        st = rt_file_read(dfd, "serving.json", (size_t)64 << 20, 0, &serving, &slen, err);
    if (!st)
        st = rt_xgb_to_modeldef(file, text, len, serving, slen, &m->def, &link, err);
    free(text);
    free(serving);
    if (!st)
        st = rt_spec_add_regression_signature(m->def, err);
    if (!st)
        st = check_against_graph(m, err);
    if (!st && (st = rt_graph_build(m->def, model_lookup, m, NULL, &m->graph, err)) != RT_OK)
        rt_err_prefix(err, "%s", file);
    if (!st)
        rt_xgb_graph_set(m->graph, link);
    return st;
}

rt_status rt_model_open(const char *dir, rt_model **out, rt_err *err)
{
    rt_status st;
    rt_model *m = NULL;
    char *pb = NULL;
    size_t pb_len = 0;
    int dfd = -1;
    char assets[4096];
    if (!out || !dir)
        return rt_err_set(err, RT_ERR_INVALID, "rt_model_open: NULL argument");
    *out = NULL;
    int w = snprintf(assets, sizeof assets, "%s/assets", dir);
    if (w < 0 || (size_t)w >= sizeof assets)
        return rt_err_set(err, RT_ERR_LIMIT, "export directory path is too long");
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                          "cannot open export directory %s: %s", dir, strerror(errno));
    m = calloc(1, sizeof *m);
    if (!m) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (faccessat(dfd, "model.pb", F_OK, 0) != 0 && other_format(dfd)) {
        if ((st = open_xgb(m, dfd, err)) == RT_OK)
            st = read_stats(m, dfd, false, err);
        goto out;
    }
    if ((st = rt_file_read(dfd, "model.pb", MODEL_PB_MAX, 0, &pb, &pb_len, err)) != RT_OK) {
        if (st == RT_ERR_NOTFOUND)
            saved_model_note(dfd, dir, err);
        goto out;
    }
    if ((st = unpack_def((const uint8_t *)pb, pb_len, &m->def, err)) != RT_OK ||
        (st = rt_spec_add_regression_signature(m->def, err)) != RT_OK)
        goto out;
    if ((st = read_vars(m, dfd, err)) != RT_OK)
        goto out;
    if ((st = read_stats(m, dfd, true, err)) != RT_OK)
        goto out;
    st = finish_open(m, assets, err);
out:
    free(pb);
    if (dfd >= 0)
        close(dfd);
    if (st != RT_OK)
        rt_model_close(m);
    else
        *out = m;
    return st;
}

const float *rt_model_tensor(const rt_model *m, const char *name, uint64_t *count)
{
    const tensor_ref *r = (m && name) ? find_ref(m, name) : NULL;
    if (count)
        *count = r ? r->count : 0;
    return r ? r->data : NULL;
}
