/*
 * trn_warm.c — warm starting (TF's WarmStartSettings / warm_start_from):
 * a fresh run's tensors initialized from another model, an export directory
 * (variables.bin, through the runtime's validated reader) or a job dir's
 * newest checkpoint, matched by name and selected by vars_to_warm_start
 * (a POSIX extended regex matched at the start of the name, as TF's
 * re.match). A tensor of a vocabulary column (linear weights, embedding
 * table) whose vocabulary differs is remapped row by row, as TF's
 * var_name_to_vocab_info: a word in both vocabularies takes its old row; a
 * new word, and the out-of-vocabulary buckets, keep the new model's fresh
 * initialization. The vocabularies come from var_name_to_vocab_info, or,
 * from an export, from its own feature columns. Only weights are copied:
 * optimizer slots start fresh and the global step at 0, as TF.
 */
#include "trn_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct source {
    rt_model *exp;              /* an export */
    const Predictd__ModelDef *def; /* its ModelDef (NULL for a checkpoint) */
    trn_ckpt_view ck;           /* or a checkpoint */
    const char *path;
} source;

/* Tensor name's data in the source (unaligned bytes) and its count. */
static const void *src_tensor(const source *s, const char *name, uint64_t *count)
{
    if (s->exp)
        return rt_model_tensor(s->exp, name, count);
    for (size_t i = 0; i < s->ck.n; i++) {
        const trn_ckpt_tensor *t = &s->ck.t[i];
        if (t->name_len == strlen(name) && memcmp(t->name, name, t->name_len) == 0) {
            *count = t->count;
            return t->data;
        }
    }
    return NULL;
}

static rt_status open_source(const char *path, source *s, rt_err *err)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    char pb[4200];
    struct stat sb;
    snprintf(pb, sizeof pb, "%s/model.pb", path);
    if (stat(pb, &sb) == 0) {
        rt_err e;
        if (rt_model_open(path, &s->exp, &e))
            return rt_err_set(err, RT_ERR_FORMAT, "train.warm_start_from: %s", e.msg);
        s->def = rt_model_def(s->exp);
        if (s->def && s->def->graph && s->def->graph->trees) {
            rt_model_close(s->exp);
            s->exp = NULL;
            return rt_err_set(err, RT_ERR_INVALID, "train.warm_start_from: %s is a BoostedTrees "
                              "export: trees cannot warm-start a DNN/linear model (they have "
                              "no weights to copy)", path);
        }
        return RT_OK;
    }
    rt_err e;
    rt_status st = trn_ckpt_view_newest(path, &s->ck, &e);
    if (st == RT_OK && s->ck.trees_bytes > 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "train.warm_start_from: %s is a BoostedTrees "
                        "checkpoint: tree checkpoints cannot warm-start a DNN/linear model "
                        "(they hold trees, no weights to copy)", s->ck.path);
        trn_ckpt_view_free(&s->ck);
        return st;
    }
    if (st == RT_OK)
        return RT_OK;
    if (st == RT_ERR_NOTFOUND || st == RT_ERR_IO)
        return rt_err_set(err, RT_ERR_NOTFOUND, "train.warm_start_from: %s holds neither an "
                          "export (model.pb) nor a checkpoint (model.ckpt-N)", path);
    return rt_err_set(err, st, "train.warm_start_from: %s", e.msg);
}

static void close_source(source *s)
{
    rt_model_close(s->exp);
    trn_ckpt_view_free(&s->ck);
}

/* The categorical column whose ids index the rows of tensor i, or NULL. */
static const Predictd__FeatureColumn *row_column(const trn_model *m, size_t i)
{
    const Predictd__ModelDef *d = m->def;
    long fc = -1;
    if (!m->p[i].sparse)
        return NULL; /* dense: rows are not ids */
    for (size_t k = 0; k < m->n_lin; k++)
        if (m->lin[k].param == i)
            fc = (long)(m->lin[k].grad && m->lin[k].grad->via_source ? m->lin[k].src
                                                                     : m->lin[k].fc);
    for (size_t k = 0; k < m->n_emb; k++)
        if (m->emb[k].param == i)
            fc = (long)m->emb[k].src;
    return fc >= 0 && (size_t)fc < d->n_feature_columns ? d->feature_columns[fc] : NULL;
}

static const Predictd__FeatureColumn *column_named(const Predictd__ModelDef *d, const char *name)
{
    for (size_t k = 0; d && k < d->n_feature_columns; k++)
        if (strcmp(d->feature_columns[k]->name, name) == 0)
            return d->feature_columns[k];
    return NULL;
}

/* A word list: w's own, its file's lines, or the column's vocabulary_list. */
typedef struct wordlist {
    char **w;
    size_t n;
    char *buf; /* a file's contents (w points into it) */
    char **own; /* w when allocated here */
} wordlist;

static rt_status words_of(const trn_words *tw, const Predictd__FeatureColumn *col,
                          const char *assets, const char *what, wordlist *out, rt_err *err)
{
    memset(out, 0, sizeof *out);
    if (tw && tw->n) {
        out->w = tw->words;
        out->n = tw->n;
        return RT_OK;
    }
    if (tw && tw->file) {
        char path[4200];
        if (tw->file[0] == '/' || !assets)
            snprintf(path, sizeof path, "%s", tw->file);
        else
            snprintf(path, sizeof path, "%s/%s", assets, tw->file);
        size_t len;
        rt_err e;
        if (rt_file_read(AT_FDCWD, path, (size_t)1 << 30, 0, &out->buf, &len, &e))
            return rt_err_set(err, RT_ERR_IO, "%s: %s", what, e.msg);
        size_t lines = 1;
        for (size_t i = 0; i < len; i++)
            lines += out->buf[i] == '\n';
        out->own = calloc(lines, sizeof *out->own);
        if (!out->own) {
            free(out->buf);
            out->buf = NULL;
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
        char *p = out->buf, *end = out->buf + len;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            char *e2 = nl ? nl : end;
            if (e2 > p && e2[-1] == '\r')
                e2[-1] = '\0';
            *e2 = '\0';
            out->own[out->n++] = p;
            p = nl ? nl + 1 : end;
        }
        out->w = out->own;
        return RT_OK;
    }
    if (col && col->type == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST) {
        out->w = col->vocabulary;
        out->n = col->n_vocabulary;
        return RT_OK;
    }
    return rt_err_set(err, RT_ERR_INVALID, "%s: no vocabulary given and none known (give it "
                      "in var_name_to_vocab_info)", what);
}

static void words_free(wordlist *w)
{
    free(w->own);
    free(w->buf);
}

static int same_words(const wordlist *a, const wordlist *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->w[i], b->w[i]) != 0)
            return 0;
    return 1;
}

/* Rows of p for the new vocabulary from the old tensor (old_n floats):
 * returns the number of rows copied. */
static rt_status remap(tparam *p, const void *old, uint64_t old_n, const wordlist *nv,
                       const wordlist *ov, int64_t old_size, const char *src, size_t *copied,
                       rt_err *err)
{
    size_t cols = (size_t)p->cols;
    size_t on = old_size > 0 && (size_t)old_size < ov->n ? (size_t)old_size : ov->n;
    if (old_n % cols != 0 || old_n / cols < on)
        return rt_err_set(err, RT_ERR_FORMAT, "train.warm_start_from: tensor %s has %llu values "
                          "in %s: not %zu-wide rows for an old vocabulary of %zu words",
                          p->name, (unsigned long long)old_n, src, cols, on);
    if (nv->n > p->rows)
        return rt_err_set(err, RT_ERR_FORMAT, "train.warm_start_from: tensor %s has %llu rows, "
                          "fewer than its new vocabulary's %zu words", p->name,
                          (unsigned long long)p->rows, nv->n);
    *copied = 0;
    for (size_t r = 0; r < nv->n; r++) {
        for (size_t j = 0; j < on; j++) {
            if (strcmp(nv->w[r], ov->w[j]) != 0)
                continue;
            memcpy(p->data + r * cols, (const unsigned char *)old + j * cols * sizeof(float),
                   cols * sizeof(float));
            (*copied)++;
            break;
        }
    }
    return RT_OK;
}

rt_status trn_warm_start_apply(trn_model *m, const trn_config *c, rt_buf *log, rt_err *err)
{
    const trn_warm_start *w = &c->warm;
    if (!w->from)
        return RT_OK;
    regex_t re;
    char pat[1100];
    snprintf(pat, sizeof pat, "^(%.1000s)", w->vars ? w->vars : ".*");
    int rc = regcomp(&re, pat, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char msg[200];
        regerror(rc, &re, msg, sizeof msg);
        return rt_err_set(err, RT_ERR_INVALID, "train.warm_start_from.vars_to_warm_start: "
                          "\"%.200s\" is not a regular expression: %s", w->vars, msg);
    }
    source s;
    rt_status st = open_source(w->from, &s, err);
    if (st) {
        regfree(&re);
        return st;
    }
    for (size_t k = 0; k < w->n_vocab; k++) {
        size_t i = 0;
        while (i < m->n_params && strcmp(m->p[i].name, w->vocab[k].var) != 0)
            i++;
        if (i == m->n_params) {
            st = rt_err_set(err, RT_ERR_INVALID, "train.warm_start_from.var_name_to_vocab_info:"
                            " \"%.200s\" is not a tensor of this model", w->vocab[k].var);
            goto out;
        }
    }
    size_t copied = 0, remapped = 0, skipped = 0;
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        if (regexec(&re, p->name, 0, NULL, 0) != 0) {
            skipped++;
            continue;
        }
        uint64_t n = 0;
        const void *old = src_tensor(&s, p->name, &n);
        if (!old) {
            st = rt_err_set(err, RT_ERR_NOTFOUND, "train.warm_start_from: tensor %s is not in %s "
                            "(leave it out with vars_to_warm_start)", p->name, w->from);
            goto out;
        }
        const trn_vocab_info *vi = NULL;
        for (size_t k = 0; k < w->n_vocab; k++)
            if (strcmp(w->vocab[k].var, p->name) == 0)
                vi = &w->vocab[k];
        const Predictd__FeatureColumn *col = row_column(m, i);
        const Predictd__FeatureColumn *ocol = col ? column_named(s.def, col->name) : NULL;
        int auto_remap = !vi && col && ocol && col->type == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST &&
                         ocol->type == PREDICTD__COLUMN_TYPE__VOCABULARY_LIST;
        if (vi || auto_remap) {
            wordlist nv, ov;
            char what[400];
            snprintf(what, sizeof what, "train.warm_start_from: tensor %s", p->name);
            st = words_of(vi ? &vi->new_vocab : NULL, col, c->assets_dir, what, &nv, err);
            if (st)
                goto out;
            st = words_of(vi ? &vi->old_vocab : NULL, ocol, c->assets_dir, what, &ov, err);
            if (st) {
                words_free(&nv);
                goto out;
            }
            size_t rows = 0;
            if (!vi && same_words(&nv, &ov) && n == p->count) {
                memcpy(p->data, old, n * sizeof(float)); /* the same vocabulary */
                copied++;
            } else if ((st = remap(p, old, n, &nv, &ov, vi ? vi->old_vocab_size : -1, w->from,
                                   &rows, err)) == RT_OK) {
                remapped++;
            }
            words_free(&nv);
            words_free(&ov);
            if (st)
                goto out;
            continue;
        }
        if (n != p->count) {
            st = rt_err_set(err, RT_ERR_FORMAT, "train.warm_start_from: tensor %s has %llu values "
                            "in %s, %llu (%llu x %llu) in this model: a shape or vocabulary "
                            "change (leave it out with vars_to_warm_start, or give "
                            "var_name_to_vocab_info)", p->name, (unsigned long long)n, w->from,
                            (unsigned long long)p->count, (unsigned long long)p->rows,
                            (unsigned long long)p->cols);
            goto out;
        }
        memcpy(p->data, old, n * sizeof(float));
        copied++;
    }
    if (log)
        rt_buf_printf(log, "Warm-starting from %s (%s): %zu tensors copied, %zu remapped to new "
                      "vocabularies, %zu not selected by vars_to_warm_start", w->from,
                      s.exp ? "an export" : s.ck.path, copied, remapped, skipped);
out:
    regfree(&re);
    close_source(&s);
    return st;
}
