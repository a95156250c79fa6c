/*
 * trn_memory.c — what a run will need before anything is allocated, and what
 * the machine can give, so the trainer refuses a model it cannot hold with
 * the figure and the spec key to lower instead of being OOM-killed mid-run.
 *
 * The estimate follows what trn_model.c, trn_ckpt.c, the exporter and the
 * reader really allocate: per parameter tensor the weights, one dense
 * gradient buffer and the optimizer's slots (4 bytes each per value), the
 * touched-row marks and lists of sparse tensors (5 bytes per row), and the
 * image of a checkpoint being restored (weights and slots once more; an
 * export's variables.bin image is smaller); per batch row the DNN input,
 * layer outputs, deltas and dropout masks; the shuffle buffer and the batches
 * queued ahead. All sums saturate at UINT64_MAX: an absurd spec gives an
 * absurd figure, never a wrapped small one.
 */
#include "trn_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows the reader holds besides the shuffle buffer: 4 queued batches, up to 4
 * handed back and not yet freed by the reader thread, the one being filled
 * and the one handed out (trn_reader_default_params). */
#define QUEUED_BATCHES 10
/* A buffered CSV row: record and batch slots, plus per field its offset and
 * length, the number read and its state, its trn_field and about 16 bytes of
 * text. */
#define ROW_BYTES 64
#define FIELD_BYTES 72

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* The spec key that sets a tensor's size, and a few words on it. */
typedef struct share {
    char key[TRN_MEM_KEY_MAX];
    char what[TRN_MEM_KEY_MAX];
    uint64_t bytes;
} share;

static void add_share(share *s, size_t *n, const char *key, const char *what, uint64_t bytes)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(s[i].key, key) == 0) {
            s[i].bytes = sat_add(s[i].bytes, bytes);
            return;
        }
    snprintf(s[*n].key, sizeof s[*n].key, "%s", key);
    snprintf(s[*n].what, sizeof s[*n].what, "%s", what);
    s[*n].bytes = bytes;
    (*n)++;
}

static long fc_find(const Predictd__ModelDef *def, const char *name)
{
    for (size_t i = 0; name && i < def->n_feature_columns; i++)
        if (def->feature_columns[i]->name && strcmp(def->feature_columns[i]->name, name) == 0)
            return (long)i;
    return -1;
}

/* The key of feature column i that sets its number of ids (or values). */
static void column_key(const Predictd__ModelDef *def, long i, uint64_t rows, char *key,
                       char *what)
{
    const Predictd__FeatureColumn *c = def->feature_columns[i];
    const char *k = rt_fc_column_size_key(c->type);
    if (!k && c->categorical_column && *c->categorical_column) {
        long src = fc_find(def, c->categorical_column);
        if (src >= 0 && src != i) {
            column_key(def, src, rows, key, what);
            return;
        }
    }
    if (!k)
        k = "shape";
    snprintf(key, TRN_MEM_KEY_MAX, "feature_columns[%ld].%s", i, k);
    snprintf(what, TRN_MEM_KEY_MAX, "column %.64s, %llu %s", c->name, (unsigned long long)rows,
             c->type == PREDICTD__COLUMN_TYPE__NUMERIC ? "values" : "ids");
}

static const rt_tensor_spec *spec_named(const rt_tensor_spec *s, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(s[i].name, name) == 0)
            return &s[i];
    return NULL;
}

/* Adds one tensor's bytes to e and to the share of its key. */
static void add_tensor(trn_memory *e, share *sh, size_t *nsh, const trn_config *c,
                       const rt_tensor_spec *t, int dnn, int sparse, const char *key,
                       const char *what)
{
    if (!t)
        return;
    float init[TRN_OPT_SLOTS_MAX];
    uint64_t slots = trn_optim_slots(dnn ? &c->dnn_opt : &c->linear_opt, init);
    uint64_t w = sat_mul(t->count, sizeof(float));
    uint64_t sl = sat_mul(w, slots);
    uint64_t aux = sparse ? sat_mul(t->shape[0], 1 + sizeof(uint32_t)) : 0;
    uint64_t img = c->job_dir ? sat_add(w, sl) : 0;
    e->weights = sat_add(e->weights, w);
    e->gradients = sat_add(e->gradients, w);
    e->slots = sat_add(e->slots, sl);
    e->sparse = sat_add(e->sparse, aux);
    e->checkpoint = sat_add(e->checkpoint, img);
    add_share(sh, nsh, key, what,
              sat_add(sat_add(sat_add(w, w), sat_add(sl, aux)), img));
}

rt_status trn_memory_estimate(const Predictd__ModelDef *def, const trn_config *c,
                              trn_memory *e, rt_err *err)
{
    memset(e, 0, sizeof *e);
    if (!def || !def->graph)
        return rt_err_set(err, RT_ERR_INVALID, "memory: ModelDef has no graph");
    rt_tensor_spec *ts = NULL;
    size_t nt = 0;
    rt_status st = rt_graph_tensor_specs(def, &ts, &nt, err);
    if (st)
        return st;
    const Predictd__Graph *gr = def->graph;
    share *sh = calloc(nt + 4, sizeof *sh);
    if (!sh) {
        free(ts);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    size_t nsh = 0;
    char key[TRN_MEM_KEY_MAX], what[TRN_MEM_KEY_MAX];
    for (size_t i = 0; i < gr->n_linear_weights; i++) {
        const rt_tensor_spec *t = spec_named(ts, nt, gr->linear_weights[i]->tensor);
        long fc = fc_find(def, gr->linear_weights[i]->column);
        if (!t || fc < 0)
            continue;
        column_key(def, fc, t->shape[0], key, what);
        int sparse = def->feature_columns[fc]->type != PREDICTD__COLUMN_TYPE__NUMERIC;
        add_tensor(e, sh, &nsh, c, t, 0, sparse, key, what);
    }
    add_tensor(e, sh, &nsh, c, spec_named(ts, nt, gr->linear_bias), 0, 0, "estimator",
               "the linear bias");
    for (size_t i = 0; i < gr->n_embeddings; i++) {
        const rt_tensor_spec *t = spec_named(ts, nt, gr->embeddings[i]->tensor);
        long fc = fc_find(def, gr->embeddings[i]->column);
        bool counted = false; /* a shared table, counted with its first user */
        for (size_t k = 0; k < i; k++)
            counted |= strcmp(gr->embeddings[k]->tensor, gr->embeddings[i]->tensor) == 0;
        if (!t || fc < 0 || counted)
            continue;
        if (t->shape[0] >= t->shape[1]) {
            column_key(def, fc, t->shape[0], key, what);
        } else {
            snprintf(key, sizeof key, "feature_columns[%ld].dimension", fc);
            snprintf(what, sizeof what, "column %.64s, dimension %llu",
                     def->feature_columns[fc]->name, (unsigned long long)t->shape[1]);
        }
        add_tensor(e, sh, &nsh, c, t, 1, 1, key, what);
    }
    /* DNN layers: kernels and biases are sized by the hidden units. */
    const char *units = strncmp(gr->estimator, "DNNLinearCombined", 17) == 0
                            ? "estimator.dnn_hidden_units"
                            : "estimator.hidden_units";
    size_t nl = gr->n_hidden_layers + (gr->logits_layer ? 1 : 0);
    uint64_t dnn_in = 0, outs = 0, widest = 0, most_units = 0;
    for (size_t l = 0; l < nl; l++) {
        const Predictd__DenseLayer *L =
            l < gr->n_hidden_layers ? gr->hidden_layers[l] : gr->logits_layer;
        const rt_tensor_spec *k = spec_named(ts, nt, L->kernel);
        if (!k)
            continue;
        if (l == 0)
            dnn_in = widest = k->shape[0];
        outs = sat_add(outs, k->shape[1]);
        if (k->shape[1] > widest)
            widest = k->shape[1];
        if (l < gr->n_hidden_layers && k->shape[1] > most_units)
            most_units = k->shape[1];
        snprintf(what, sizeof what, "%zu hidden layers, up to %llu units", gr->n_hidden_layers,
                 (unsigned long long)most_units);
        add_tensor(e, sh, &nsh, c, k, 1, 0, units, what);
        add_tensor(e, sh, &nsh, c, spec_named(ts, nt, L->bias), 1, 0, units, what);
    }
    /* Per batch row: DNN input and layer outputs (forward), two deltas and
     * the logits' gradient (backprop), three copies with dropout. */
    size_t ebs = c->n_eval_files == 0 ? 0 : c->eval_batch_size ? c->eval_batch_size : 256;
    size_t rows = c->batch_size > ebs ? c->batch_size : ebs;
    uint64_t ld = gr->logits_dimension ? gr->logits_dimension : 1;
    uint64_t per_row = sat_add(sat_add(sat_mul(2, dnn_in), outs), sat_mul(2, widest));
    per_row = sat_add(per_row, sat_mul(3, ld));
    int bn = 0;
    for (size_t l = 0; l < gr->n_hidden_layers; l++)
        bn |= gr->hidden_layers[l]->batch_norm != NULL;
    if (c->dropout > 0 || bn) /* the training forward's copies (+ normalized values) */
        per_row = sat_add(per_row, sat_mul(bn ? 4 : 3, sat_add(dnn_in, outs)));
    per_row = sat_add(sat_mul(per_row, sizeof(float)), 16 * (uint64_t)def->n_feature_columns);
    e->activations = sat_mul(per_row, rows);
    snprintf(what, sizeof what, "%zu rows", rows);
    add_share(sh, &nsh, c->batch_size >= ebs ? "train.batch_size" : "eval.batch_size", what,
              e->activations);
    /* The reader: the shuffle buffer and queued batches, training and eval. */
    uint64_t row_bytes = sat_add(ROW_BYTES, sat_mul(FIELD_BYTES, def->n_raw_columns));
    uint64_t queued = sat_mul(QUEUED_BATCHES, sat_add(c->batch_size, ebs));
    e->input = sat_mul(sat_add(c->shuffle_buffer_size, queued), row_bytes);
    snprintf(what, sizeof what, "%zu rows", c->shuffle_buffer_size);
    add_share(sh, &nsh, c->shuffle_buffer_size >= queued ? "train.shuffle_buffer_size"
                                                         : "train.batch_size",
              what, e->input);

    e->total = 0;
    uint64_t parts[] = {e->weights, e->gradients, e->slots, e->sparse,
                        e->checkpoint, e->activations, e->input};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        e->total = sat_add(e->total, parts[i]);
    size_t top = 0;
    for (size_t i = 1; i < nsh; i++)
        if (sh[i].bytes > sh[top].bytes)
            top = i;
    if (nsh) {
        snprintf(e->key, sizeof e->key, "%s", sh[top].key);
        snprintf(e->what, sizeof e->what, "%s", sh[top].what);
        e->key_bytes = sh[top].bytes;
    }
    free(sh);
    free(ts);
    return RT_OK;
}

const char *trn_memory_format(uint64_t bytes, char *out, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes == UINT64_MAX) {
        snprintf(out, len, "more than 16 EiB");
        return out;
    }
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof unit / sizeof unit[0]) {
        v /= 1024;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return out;
}

/* The first number after "name" at the start of a line of path, or -1. */
static int64_t read_field(const char *path, const char *name)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[512];
    int64_t v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, n) == 0) {
            char *end;
            long long x = strtoll(line + n, &end, 10);
            if (end != line + n && x >= 0)
                v = x;
            break;
        }
    fclose(f);
    return v;
}

uint64_t trn_memory_available(const char *root, char *source, size_t len)
{
    char path[4096];
    uint64_t best = UINT64_MAX;
    snprintf(source, len, "unknown");
    if (!root)
        root = "";
    snprintf(path, sizeof path, "%s/proc/meminfo", root);
    int64_t kb = read_field(path, "MemAvailable:");
    if (kb >= 0) {
        best = sat_mul((uint64_t)kb, 1024);
        snprintf(source, len, "MemAvailable");
    }
    /* cgroup v2: every level up to the root may set memory.max. */
    char cg[2048];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    if (rt_cgroup_path(path, cg, sizeof cg))
        do {
            char max[4200], cur[4200];
            const char *dir = cg[1] ? cg : "";
            snprintf(max, sizeof max, "%s/sys/fs/cgroup%s/memory.max", root, dir);
            snprintf(cur, sizeof cur, "%s/sys/fs/cgroup%s/memory.current", root, dir);
            int64_t m = read_field(max, ""), u = read_field(cur, ""); /* "max": -1 */
            if (m < 0)
                continue;
            uint64_t room = u < 0 ? (uint64_t)m : u < m ? (uint64_t)(m - u) : 0;
            if (room < best) {
                best = room;
                snprintf(source, len, "cgroup %.200s memory.max minus memory.current", cg);
            }
        } while (rt_cgroup_parent(cg));
    return best;
}

rt_status trn_memory_check(const Predictd__ModelDef *def, const trn_config *c, rt_err *err)
{
    if (c->memory_limit_mb == 0)
        return RT_OK;
    trn_memory e;
    rt_status st = trn_memory_estimate(def, c, &e, err);
    if (st)
        return st;
    char source[256];
    uint64_t limit = c->memory_limit_mb > 0
                         ? sat_mul((uint64_t)c->memory_limit_mb, UINT64_C(1) << 20)
                         : trn_memory_available(NULL, source, sizeof source);
    if (c->memory_limit_mb > 0)
        snprintf(source, sizeof source, "train.memory_limit_mb");
    if (e.total <= limit && e.total != UINT64_MAX)
        return RT_OK;
    char t[32], w[32], g[32], s[32], sp[32], ck[32], a[32], in[32], l[32], k[32];
    return rt_err_set(
        err, RT_ERR_LIMIT,
        "%s: the model needs %s (weights %s, gradients %s, optimizer slots %s, sparse row "
        "marks %s, checkpoint image %s, activations %s, input buffers %s), more than the %s "
        "limit (%s); lower %s (%s: %s of it), or set train.memory_limit_mb "
        "(--memory-limit-mb) to another limit in MiB, 0 for no check",
        e.key, trn_memory_format(e.total, t, sizeof t), trn_memory_format(e.weights, w, sizeof w),
        trn_memory_format(e.gradients, g, sizeof g), trn_memory_format(e.slots, s, sizeof s),
        trn_memory_format(e.sparse, sp, sizeof sp), trn_memory_format(e.checkpoint, ck, sizeof ck),
        trn_memory_format(e.activations, a, sizeof a), trn_memory_format(e.input, in, sizeof in),
        trn_memory_format(limit, l, sizeof l), source, e.key, e.what,
        trn_memory_format(e.key_bytes, k, sizeof k));
}

uint64_t trn_memory_spare(const Predictd__ModelDef *def, const trn_config *c)
{
    trn_memory e;
    if (trn_memory_estimate(def, c, &e, NULL) != RT_OK)
        return 0;
    char source[256];
    uint64_t limit = c->memory_limit_mb > 0
                         ? sat_mul((uint64_t)c->memory_limit_mb, UINT64_C(1) << 20)
                         : trn_memory_available(NULL, source, sizeof source);
    return e.total < limit ? limit - e.total : 0;
}
