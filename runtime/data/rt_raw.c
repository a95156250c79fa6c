/*
 * rt_raw.c — raw inputs read one way for training and serving: CSV row
 * splitting, cell -> number, labels and weights (strings are trimmed by
 * rt_buf_trim_span, rt_buf.c's; a cell goes into a batch with rt_batch_push_cell,
 * rt_batch.c's). The trainer (trn_reader, trn_feed) and the serving receivers
 * (rt_receiver's CSV row) call these functions and nothing else for these jobs, so a
 * row means the same thing wherever it is read (TensorFlow's answer to
 * training/serving skew: the same code in both input functions).
 * tests/fuzz/fuzz_csv_row.c checks that trainer and server agree on every row.
 */
#include "rt_data.h"
#include "rt_data_internal.h"
#include "rt_core_internal.h"
#include "rt_data_limits.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest number text a cell may hold (after trimming). */

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

long rt_raw_csv_split(const char *row, size_t len, char *out, rt_csv_span *spans, size_t max,
                  rt_err *err)
{
    if (len >= UINT32_MAX) {
        rt_err_set(err, RT_ERR_LIMIT, "row of %zu bytes is too long", len);
        return -1;
    }
    /* The first NUL byte, if any: the field holding it is refused. */
    const char *nul = len ? memchr(row, '\0', len) : NULL;
    size_t nul_at = nul ? (size_t)(nul - row) : len;
    size_t i = 0, o = 0, field = 0;
    for (;;) {
        size_t start = o, q = i;
        while (q < len && is_blank(row[q]))
            q++;
        if (q < len && row[q] == '"') { /* "quoted", blanks before it dropped */
            i = q + 1;
            for (;;) {
                if (i >= len) {
                    rt_err_set(err, RT_ERR_INVALID, "field %zu: unterminated quote", field + 1);
                    return -1;
                }
                if (row[i] == '"') {
                    if (i + 1 < len && row[i + 1] == '"') {
                        out[o++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                out[o++] = row[i++];
            }
            while (i < len && is_blank(row[i]))
                i++;
            if (i < len && row[i] != ',') {
                rt_err_set(err, RT_ERR_INVALID, "field %zu: text after the closing quote",
                           field + 1);
                return -1;
            }
        } else { /* as it is, blanks included (fields are short: a loop
                  * beats memchr + memcpy calls) */
            while (i < len && row[i] != ',')
                out[o++] = row[i++];
        }
        if (nul_at < i) {
            rt_err_set(err, RT_ERR_INVALID, "field %zu: contains a NUL byte", field + 1);
            return -1;
        }
        if (field < max) {
            spans[field].off = (uint32_t)start;
            spans[field].len = (uint32_t)(o - start);
        }
        field++;
        if (i >= len)
            break;
        i++; /* the comma */
    }
    out[o] = '\0';
    return (long)field;
}

rt_status rt_raw_number(const char *s, size_t len, double *v)
{
    while (len && is_blank(*s))
        s++, len--;
    while (len && is_blank(s[len - 1]))
        len--;
    if (len == 0)
        return RT_ERR_NOTFOUND;
    char tmp[RT_NUMBER_MAX + 1];
    if (len > RT_NUMBER_MAX)
        return RT_ERR_INVALID;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    char *end = NULL;
    errno = 0;
    *v = strtod(tmp, &end);
    return end == tmp + len ? RT_OK : RT_ERR_INVALID;
}

rt_status rt_raw_number_error(rt_err *err, size_t field, const char *name, const char *s,
                              size_t len)
{
    while (len && is_blank(*s))
        s++, len--;
    while (len && is_blank(s[len - 1]))
        len--;
    int shown = (int)(len > 40 ? 40 : len);
    if (name)
        return rt_err_set(err, RT_ERR_INVALID, "field %zu (%s): expected a number, got \"%.*s%s\"",
                          field + 1, name, shown, s, len > 40 ? "..." : "");
    return rt_err_set(err, RT_ERR_INVALID, "field %zu: expected a number, got \"%.*s%s\"",
                      field + 1, shown, s, len > 40 ? "..." : "");
}

rt_status rt_raw_label(const Predictd__ModelDef *def, size_t col, const char *s, size_t len,
                       float *out, rt_err *err)
{
    return rt_raw_label_of(def, def->head, col, s, len, out, err);
}

rt_status rt_raw_label_of(const Predictd__ModelDef *def, const Predictd__Head *h, size_t col,
                          const char *s, size_t len, float *out, rt_err *err)
{
    const char *name = col < def->n_raw_columns ? def->raw_columns[col]->name : "?";
    int regression = h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    if (regression || h->n_label_vocabulary == 0) {
        double v = 0;
        if (rt_raw_number(s, len, &v) != RT_OK || !isfinite(v))
            return rt_err_set(err, RT_ERR_INVALID, "label %s: expected a number, got \"%.*s\"",
                              name, (int)(len > 40 ? 40 : len), s);
        if (!regression && (v != floor(v) || v < 0 || v >= (double)h->n_classes))
            return rt_err_set(err, RT_ERR_INVALID, "label %s: class id %g not in [0, %u)", name,
                              v, h->n_classes);
        *out = (float)v;
        return RT_OK;
    }
    if (def->trim_strings)
        s = rt_buf_trim_span(s, &len);
    for (size_t k = 0; k < h->n_label_vocabulary; k++) {
        const char *w = h->label_vocabulary[k];
        if (strlen(w) == len && memcmp(w, s, len) == 0) {
            *out = (float)k;
            return RT_OK;
        }
    }
    return rt_err_set(err, RT_ERR_INVALID, "label %s: \"%.*s\" is not in the label vocabulary",
                      name, (int)(len > 40 ? 40 : len), s);
}

rt_status rt_raw_weight(const Predictd__ModelDef *def, size_t col, const char *s, size_t len,
                        float *out, rt_err *err)
{
    const Predictd__RawColumn *rc = col < def->n_raw_columns ? def->raw_columns[col] : NULL;
    const char *name = rc ? rc->name : "?";
    double v = 0;
    rt_status st = rt_raw_number(s, len, &v);
    if (st == RT_ERR_NOTFOUND && rc && rc->has_default) { /* record_defaults */
        v = rc->default_number;
        st = RT_OK;
    }
    if (st != RT_OK || !isfinite(v) || (float)v > FLT_MAX)
        return rt_err_set(err, RT_ERR_INVALID, "weight %s: expected a number, got \"%.*s\"",
                          name, (int)(len > 40 ? 40 : len), s);
    if (v < 0)
        return rt_err_set(err, RT_ERR_INVALID,
                          "weight %s: %g is negative (example weights must be >= 0)", name, v);
    *out = (float)v;
    return RT_OK;
}

long rt_raw_weight_column(const Predictd__ModelDef *def)
{
    for (size_t j = 0; j < def->n_raw_columns; j++)
        if (def->raw_columns[j]->is_weight)
            return (long)j;
    return -1;
}

size_t rt_raw_label_columns(const Predictd__ModelDef *def, size_t *cols, size_t max)
{
    size_t n = 0;
    for (size_t j = 0; j < def->n_raw_columns; j++)
        if (def->raw_columns[j]->is_label) {
            if (n < max)
                cols[n] = j;
            n++;
        }
    return n;
}
