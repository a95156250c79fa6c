/*
 * rt_example_row.c — one serialized tf.Example read as one row of the spec's
 * raw columns, as tf.io.parse_example reads it with a FixedLenFeature of
 * shape [] per column: the declared type must match the feature's list kind
 * (a "string" column a bytes_list, an "int" column an int64_list, a "float"
 * column a float_list), the list must hold exactly one value, a missing
 * feature (absent, or an empty Feature {} with no value list, which TFX's
 * csv_example_gen writes for a missing value) takes the column's default (an
 * empty cell) or is an error where TensorFlow's would be (no default), features the spec does not name are
 * ignored. The row comes out as CSV's cells (text and spans in the spec's
 * column order), so everything downstream — the trainer's reader, feeder and
 * row cache, batch-predict's instances — handles a record exactly as it
 * handles the CSV line with the same cells: a TFRecord copy of CSV data made
 * by predict-model convert trains to the same bytes.
 */
#include "rt_data.h"
#include "rt_data_internal.h"
#include "rt_core_internal.h"

#include "example.pb-c.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* See rt_internal.h. */
const char *rt_example_kind_name(int kind_case)
{
    switch ((Tensorflow__Feature__KindCase)kind_case) {
    case TENSORFLOW__FEATURE__KIND_BYTES_LIST: return "bytes_list";
    case TENSORFLOW__FEATURE__KIND_FLOAT_LIST: return "float_list";
    case TENSORFLOW__FEATURE__KIND_INT64_LIST: return "int64_list";
    default: return "no value list";
    }
}

/* The list kind a raw column's FixedLenFeature reads. */
static Tensorflow__Feature__KindCase want_kind(const Predictd__RawColumn *rc)
{
    if (rc->dtype == PREDICTD__DTYPE__DT_STRING)
        return TENSORFLOW__FEATURE__KIND_BYTES_LIST;
    return rc->is_int ? TENSORFLOW__FEATURE__KIND_INT64_LIST
                      : TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
}

const char *rt_example_kind(const Predictd__RawColumn *rc)
{
    return rt_example_kind_name(want_kind(rc));
}

/* The shortest decimal text strtod reads back as exactly (double)f. */
static int put_float(rt_buf *b, float f)
{
    double d = (double)f;
    char tmp[40];
    for (int p = 9; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    return rt_buf_puts(b, tmp);
}

rt_status rt_example_to_row(const Predictd__ModelDef *def, const uint8_t *bytes, size_t len,
                            int targets, rt_buf *text, rt_csv_span *spans, uint8_t *present,
                            rt_err *err)
{
    rt_status st = RT_OK;
    size_t n = def->n_raw_columns;
    rt_pb_alloc pa;
    rt_pb_alloc_init(&pa);
    static const uint8_t empty[1] = {0};
    Tensorflow__Example *ex = tensorflow__example__unpack(&pa.a, len, bytes ? bytes : empty);
    if (!ex && pa.failed)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory unpacking %zu bytes", len);
    if (!ex)
        return rt_err_set(err, RT_ERR_INVALID, "not a serialized tf.Example (%zu bytes)", len);
    rt_buf_reset(text);
    size_t nf = ex->features ? ex->features->n_feature : 0;
    for (size_t c = 0; c < n; c++) {
        const Predictd__RawColumn *rc = def->raw_columns[c];
        const Tensorflow__Feature *ft = NULL;
        for (size_t k = 0; k < nf; k++) {
            const Tensorflow__Features__FeatureEntry *e = ex->features->feature[k];
            if (e->key && strcmp(e->key, rc->name) == 0 && e->value) {
                if (ft) {
                    st = rt_err_set(err, RT_ERR_INVALID, "feature %s: given twice", rc->name);
                    goto out;
                }
                ft = e->value;
            }
        }
        if (ft && ft->kind_case == TENSORFLOW__FEATURE__KIND__NOT_SET)
            ft = NULL; /* an empty Feature {} (TFX's missing value): missing, as TF reads it */
        size_t off = text->len;
        if (present)
            present[c] = ft != NULL;
        int target = rc->is_label || rc->is_weight;
        if (!ft) {
            if (!rc->has_default && !rc->unused && (targets || !target)) {
                st = rt_err_set(err, RT_ERR_INVALID, "feature %s: missing (its column has no "
                                "default, as a FixedLenFeature without default_value)",
                                rc->name);
                goto out;
            }
        } else {
            Tensorflow__Feature__KindCase kind = want_kind(rc);
            size_t count = 0;
            switch (ft->kind_case) {
            case TENSORFLOW__FEATURE__KIND_BYTES_LIST: count = ft->bytes_list->n_value; break;
            case TENSORFLOW__FEATURE__KIND_FLOAT_LIST: count = ft->float_list->n_value; break;
            case TENSORFLOW__FEATURE__KIND_INT64_LIST: count = ft->int64_list->n_value; break;
            default: break;
            }
            if (ft->kind_case != kind && !rc->unused) {
                st = rt_err_set(err, RT_ERR_INVALID, "feature %s: expected %s (column type %s), "
                                "got %s", rc->name, rt_example_kind_name(kind),
                                kind == TENSORFLOW__FEATURE__KIND_BYTES_LIST ? "string"
                                : rc->is_int ? "int" : "float",
                                rt_example_kind_name(ft->kind_case));
                goto out;
            }
            if (count != 1 && !rc->unused) {
                st = rt_err_set(err, RT_ERR_INVALID, "feature %s: expected 1 value (a "
                                "FixedLenFeature of shape []), got %zu", rc->name, count);
                goto out;
            }
            if (count >= 1) {
                switch (ft->kind_case) {
                case TENSORFLOW__FEATURE__KIND_BYTES_LIST: {
                    const ProtobufCBinaryData *v = &ft->bytes_list->value[0];
                    if (v->len && memchr(v->data, '\0', v->len)) {
                        st = rt_err_set(err, RT_ERR_INVALID, "feature %s: contains a NUL byte",
                                        rc->name);
                        goto out;
                    }
                    rt_buf_append(text, v->data, v->len);
                    break;
                }
                case TENSORFLOW__FEATURE__KIND_FLOAT_LIST:
                    put_float(text, ft->float_list->value[0]);
                    break;
                case TENSORFLOW__FEATURE__KIND_INT64_LIST:
                    rt_buf_printf(text, "%" PRId64, ft->int64_list->value[0]);
                    break;
                default: break;
                }
            }
        }
        if (text->len - off >= UINT32_MAX || text->len >= UINT32_MAX) {
            st = rt_err_set(err, RT_ERR_LIMIT, "feature %s: too long", rc->name);
            goto out;
        }
        spans[c].off = (uint32_t)off;
        spans[c].len = (uint32_t)(text->len - off);
    }
    rt_buf_append(text, "", 1); /* NUL-terminated, as rt_raw_csv_split's output */
    text->len--;
    if (rt_buf_failed(text))
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
out:
    tensorflow__example__free_unpacked(ex, &pa.a);
    return st;
}

rt_status rt_example_from_row(const Predictd__ModelDef *def, const char *text,
                              const rt_csv_span *spans, size_t n_fields, rt_buf *out,
                              rt_err *err)
{
    size_t n = def->n_raw_columns;
    if (n_fields != n)
        return rt_err_set(err, RT_ERR_INVALID, "expected %zu fields, got %zu", n, n_fields);
    rt_status st = RT_OK;
    Tensorflow__Feature *fts = calloc(n, sizeof *fts);
    Tensorflow__Features__FeatureEntry *ents = calloc(n, sizeof *ents);
    Tensorflow__Features__FeatureEntry **pents = calloc(n, sizeof *pents);
    Tensorflow__BytesList *bl = calloc(n, sizeof *bl);
    Tensorflow__FloatList *fl = calloc(n, sizeof *fl);
    Tensorflow__Int64List *il = calloc(n, sizeof *il);
    ProtobufCBinaryData *bv = calloc(n, sizeof *bv);
    float *fv = calloc(n, sizeof *fv);
    int64_t *iv = calloc(n, sizeof *iv);
    if (!fts || !ents || !pents || !bl || !fl || !il || !bv || !fv || !iv) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t used = 0;
    for (size_t c = 0; c < n; c++) {
        const Predictd__RawColumn *rc = def->raw_columns[c];
        const char *s = text + spans[c].off;
        size_t len = spans[c].len;
        Tensorflow__Feature *ft = &fts[c];
        tensorflow__feature__init(ft);
        if (rc->dtype == PREDICTD__DTYPE__DT_STRING) {
            size_t k = 0;
            while (k < len && (s[k] == ' ' || s[k] == '\t'))
                k++;
            if (k == len)
                continue; /* empty: missing, the default applies when read */
            tensorflow__bytes_list__init(&bl[c]);
            bv[c].data = (uint8_t *)(uintptr_t)s;
            bv[c].len = len;
            bl[c].n_value = 1;
            bl[c].value = &bv[c];
            ft->kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
            ft->bytes_list = &bl[c];
        } else {
            double v = 0;
            rt_status ps = rt_raw_number(s, len, &v);
            if (ps == RT_ERR_NOTFOUND)
                continue; /* empty */
            if (ps != RT_OK) {
                st = rt_raw_number_error(err, c, rc->name, s, len);
                goto out;
            }
            if (rc->is_int) {
                if (v != (double)(int64_t)v) {
                    st = rt_err_set(err, RT_ERR_INVALID, "field %zu (%s): %g is not an integer "
                                    "(an int column becomes an int64_list)", c + 1, rc->name, v);
                    goto out;
                }
                tensorflow__int64_list__init(&il[c]);
                iv[c] = (int64_t)v;
                il[c].n_value = 1;
                il[c].value = &iv[c];
                ft->kind_case = TENSORFLOW__FEATURE__KIND_INT64_LIST;
                ft->int64_list = &il[c];
            } else {
                tensorflow__float_list__init(&fl[c]);
                fv[c] = (float)v;
                fl[c].n_value = 1;
                fl[c].value = &fv[c];
                ft->kind_case = TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
                ft->float_list = &fl[c];
            }
        }
        tensorflow__features__feature_entry__init(&ents[c]);
        ents[c].key = rc->name;
        ents[c].value = ft;
        pents[used++] = &ents[c];
    }
    Tensorflow__Features feats;
    tensorflow__features__init(&feats);
    feats.n_feature = used;
    feats.feature = pents;
    Tensorflow__Example ex;
    tensorflow__example__init(&ex);
    ex.features = &feats;
    size_t size = tensorflow__example__get_packed_size(&ex);
    rt_buf_reset(out);
    if (rt_buf_reserve(out, size + 1) != 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    out->len = tensorflow__example__pack(&ex, (uint8_t *)out->data);
out:
    free(fts);
    free(ents);
    free(pents);
    free(bl);
    free(fl);
    free(il);
    free(bv);
    free(fv);
    free(iv);
    return st;
}
