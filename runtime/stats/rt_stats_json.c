/*
 * rt_stats_json.c — statistics.json: an rt_stats written as TensorFlow
 * Metadata's DatasetFeatureStatisticsList in proto3 JSON (statistics.proto's
 * own field names, which json_format.Parse accepts; Infinity and NaN as the
 * strings proto3 JSON uses), and read back. What TFDV's message has no field
 * for (quantile cut points, the count of values past the rank histogram,
 * whether the numbers are approximate) goes into custom_stats, so the file
 * still parses as the proto. Layout: docs/data-validation.md.
 */
#include "rt_stats.h"
#include "rt_data_internal.h"
#include "rt_core_internal.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void num(rt_buf *b, double v)
{
    if (isnan(v))
        rt_buf_puts(b, "\"NaN\"");
    else if (isinf(v))
        rt_buf_puts(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else if (v == floor(v) && fabs(v) < 1e15)
        rt_buf_printf(b, "%.0f", v); /* counts and integer values as integers */
    else
        rt_buf_json_double(b, v);
}

static void hist(rt_buf *b, const rt_stats_hist *h, const char *type)
{
    rt_buf_printf(b, "{\"num_nan\": %llu, \"buckets\": [", (unsigned long long)h->num_nan);
    for (size_t k = 0; k < h->n; k++) {
        rt_buf_puts(b, k ? ", {\"low_value\": " : "{\"low_value\": ");
        num(b, h->b[k].low);
        rt_buf_puts(b, ", \"high_value\": ");
        num(b, h->b[k].high);
        rt_buf_puts(b, ", \"sample_count\": ");
        num(b, h->b[k].count);
        rt_buf_puts(b, "}");
    }
    rt_buf_printf(b, "], \"type\": \"%s\"}", type);
}

static void common(rt_buf *b, const rt_feature_stats *f)
{
    rt_buf_printf(b,
                  "\"common_stats\": {\"num_non_missing\": %llu, \"num_missing\": %llu, "
                  "\"min_num_values\": %d, \"max_num_values\": %d, \"avg_num_values\": %d, "
                  "\"tot_num_values\": %llu}",
                  (unsigned long long)f->num_non_missing, (unsigned long long)f->num_missing,
                  f->num_non_missing ? 1 : 0, f->num_non_missing ? 1 : 0,
                  f->num_non_missing ? 1 : 0, (unsigned long long)f->num_non_missing);
}

static const char *type_name(rt_stats_type t)
{
    return t == RT_STATS_INT ? "INT" : t == RT_STATS_FLOAT ? "FLOAT" : "STRING";
}

rt_status rt_stats_write_json(const rt_stats *s, const char *dataset_name, rt_buf *b)
{
    rt_buf_puts(b, "{\"datasets\": [{\"name\": ");
    rt_buf_json_string(b, dataset_name, strlen(dataset_name));
    rt_buf_printf(b, ", \"num_examples\": %llu, \"features\": [",
                  (unsigned long long)s->num_examples);
    for (size_t i = 0; i < s->n; i++) {
        const rt_feature_stats *f = &s->f[i];
        rt_buf_puts(b, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        rt_buf_json_string(b, f->name, strlen(f->name));
        rt_buf_printf(b, ", \"type\": \"%s\", ", type_name(f->type));
        if (f->type != RT_STATS_STRING) {
            rt_buf_puts(b, "\"num_stats\": {");
            common(b, f);
            rt_buf_puts(b, ", \"mean\": ");
            num(b, f->mean);
            rt_buf_puts(b, ", \"std_dev\": ");
            num(b, f->std_dev);
            rt_buf_printf(b, ", \"num_zeros\": %llu, \"min\": ", (unsigned long long)f->num_zeros);
            num(b, f->min);
            rt_buf_puts(b, ", \"median\": ");
            num(b, f->median);
            rt_buf_puts(b, ", \"max\": ");
            num(b, f->max);
            rt_buf_puts(b, ", \"histograms\": [");
            hist(b, &f->standard, "STANDARD");
            rt_buf_puts(b, ", ");
            hist(b, &f->quantile_hist, "QUANTILES");
            rt_buf_puts(b, "]}, \"custom_stats\": [{\"name\": \"quantiles\", \"histogram\": ");
            /* the cut points as point buckets, count = the fraction below */
            rt_stats_bucket cut[RT_STATS_BUCKETS + 1];
            rt_stats_hist ch = {0, RT_STATS_BUCKETS + 1, cut};
            for (int k = 0; k <= RT_STATS_BUCKETS; k++)
                cut[k] = (rt_stats_bucket){f->quantiles[k], f->quantiles[k],
                                           (double)k / RT_STATS_BUCKETS};
            hist(b, &ch, "QUANTILES");
            rt_buf_printf(b, "}, {\"name\": \"num_nan\", \"num\": %llu}, "
                             "{\"name\": \"approximate\", \"num\": %d}]}",
                          (unsigned long long)f->num_nan, f->approximate);
            continue;
        }
        rt_buf_puts(b, "\"string_stats\": {");
        common(b, f);
        rt_buf_printf(b, ", \"unique\": %llu, \"top_values\": [", (unsigned long long)f->unique);
        for (size_t k = 0; k < f->n_values && k < RT_STATS_TOP; k++) {
            rt_buf_puts(b, k ? ", {\"value\": " : "{\"value\": ");
            rt_buf_json_string(b, f->values[k].value, strlen(f->values[k].value));
            rt_buf_printf(b, ", \"frequency\": %llu}", (unsigned long long)f->values[k].count);
        }
        rt_buf_puts(b, "], \"avg_length\": ");
        num(b, f->avg_length);
        rt_buf_puts(b, ", \"rank_histogram\": {\"buckets\": [");
        for (size_t k = 0; k < f->n_values; k++) {
            rt_buf_printf(b, "%s{\"low_rank\": %zu, \"high_rank\": %zu, \"label\": ",
                          k ? ",\n    " : "\n    ", k, k);
            rt_buf_json_string(b, f->values[k].value, strlen(f->values[k].value));
            rt_buf_printf(b, ", \"sample_count\": %llu}", (unsigned long long)f->values[k].count);
        }
        rt_buf_printf(b, "]}}, \"custom_stats\": [{\"name\": \"other_count\", \"num\": %llu}, "
                         "{\"name\": \"unique_at_least\", \"num\": %d}]}",
                      (unsigned long long)f->other_count, f->unique_at_least);
    }
    rt_buf_puts(b, "]}]}\n");
    return rt_buf_failed(b) ? RT_ERR_NOMEM : RT_OK;
}

/* ------------------------------------------------------------- reading */

static int get_num(const cJSON *o, const char *key, double *v)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j) {
        *v = 0; /* proto3: absent is zero */
        return 0;
    }
    if (cJSON_IsNumber(j)) {
        *v = j->valuedouble;
        return 0;
    }
    if (cJSON_IsString(j)) {
        const char *s = j->valuestring;
        if (strcmp(s, "NaN") == 0)
            *v = NAN;
        else if (strcmp(s, "Infinity") == 0)
            *v = INFINITY;
        else if (strcmp(s, "-Infinity") == 0)
            *v = -INFINITY;
        else {
            char *end;
            *v = strtod(s, &end); /* int64 as a string */
            return *end || end == s ? -1 : 0;
        }
        return 0;
    }
    return -1;
}

static int get_u64(const cJSON *o, const char *key, uint64_t *v)
{
    double d;
    if (get_num(o, key, &d) || !(d >= 0) || d > 1.8e19)
        return -1;
    *v = (uint64_t)d;
    return 0;
}

static rt_status bad(rt_err *err, size_t i, const char *what)
{
    return rt_err_set(err, RT_ERR_FORMAT, "statistics.json: datasets[0].features[%zu]: %s", i,
                      what);
}

static rt_status read_hist(const cJSON *h, rt_stats_hist *out, size_t i, rt_err *err)
{
    if (get_u64(h, "num_nan", &out->num_nan))
        return bad(err, i, "histograms: bad num_nan");
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(h, "buckets");
    size_t n = cJSON_IsArray(bs) ? (size_t)cJSON_GetArraySize(bs) : 0;
    if (n > 1u << 16)
        return bad(err, i, "histograms: too many buckets");
    out->b = calloc(n ? n : 1, sizeof *out->b);
    if (!out->b)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    const cJSON *x;
    cJSON_ArrayForEach(x, bs)
    {
        rt_stats_bucket *k = &out->b[out->n];
        if (get_num(x, "low_value", &k->low) || get_num(x, "high_value", &k->high) ||
            get_num(x, "sample_count", &k->count) || !(k->count >= 0) || !(k->low <= k->high))
            return bad(err, i, "histograms: bad bucket");
        if (out->n && k->low < out->b[out->n - 1].high && isfinite(k->low))
            return bad(err, i, "histograms: buckets overlap or are not in order");
        out->n++;
    }
    return RT_OK;
}

static const cJSON *custom(const cJSON *f, const char *name)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(f, "custom_stats"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(x, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return x;
    }
    return NULL;
}

static rt_status read_feature(const cJSON *j, rt_feature_stats *f, size_t i, rt_err *err)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsString(name) || !(f->name = strdup(name->valuestring)))
        return cJSON_IsString(name) ? rt_err_set(err, RT_ERR_NOMEM, "out of memory")
                                    : bad(err, i, "no name");
    const char *t = cJSON_IsString(type) ? type->valuestring : "INT";
    f->type = strcmp(t, "STRING") == 0 || strcmp(t, "BYTES") == 0 ? RT_STATS_STRING
              : strcmp(t, "FLOAT") == 0                           ? RT_STATS_FLOAT
                                                                  : RT_STATS_INT;
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(j, "num_stats");
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(j, "string_stats");
    const cJSON *st = f->type == RT_STATS_STRING ? ss : ns;
    if (!cJSON_IsObject(st))
        return bad(err, i, f->type == RT_STATS_STRING ? "no string_stats" : "no num_stats");
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(st, "common_stats");
    if (get_u64(cs, "num_non_missing", &f->num_non_missing) ||
        get_u64(cs, "num_missing", &f->num_missing))
        return bad(err, i, "bad common_stats");
    rt_status r;
    if (f->type == RT_STATS_STRING) {
        if (get_u64(st, "unique", &f->unique) || get_num(st, "avg_length", &f->avg_length))
            return bad(err, i, "bad unique or avg_length");
        const cJSON *bs = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(st, "rank_histogram"), "buckets");
        size_t n = cJSON_IsArray(bs) ? (size_t)cJSON_GetArraySize(bs) : 0;
        f->values = calloc(n ? n : 1, sizeof *f->values);
        if (!f->values)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        const cJSON *x;
        cJSON_ArrayForEach(x, bs)
        {
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(x, "label");
            double c;
            if (!cJSON_IsString(l) || get_num(x, "sample_count", &c) || !(c >= 0))
                return bad(err, i, "rank_histogram: bad bucket");
            if (!(f->values[f->n_values].value = strdup(l->valuestring)))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            f->values[f->n_values++].count = (uint64_t)c;
        }
        const cJSON *o = custom(j, "other_count"), *u = custom(j, "unique_at_least");
        double d = 0;
        if (o && !get_num(o, "num", &d) && d >= 0)
            f->other_count = (uint64_t)d;
        if (u && !get_num(u, "num", &d))
            f->unique_at_least = d != 0;
        return RT_OK;
    }
    if (get_num(st, "mean", &f->mean) || get_num(st, "std_dev", &f->std_dev) ||
        get_u64(st, "num_zeros", &f->num_zeros) || get_num(st, "min", &f->min) ||
        get_num(st, "max", &f->max) || get_num(st, "median", &f->median))
        return bad(err, i, "bad num_stats");
    const cJSON *h;
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(st, "histograms"))
    {
        const cJSON *ht = cJSON_GetObjectItemCaseSensitive(h, "type");
        int q = cJSON_IsString(ht) && strcmp(ht->valuestring, "QUANTILES") == 0;
        rt_stats_hist *dst = q ? &f->quantile_hist : &f->standard;
        if (dst->b)
            return bad(err, i, "two histograms of one type");
        if ((r = read_hist(h, dst, i, err)) != RT_OK)
            return r;
    }
    f->num_nan = f->standard.num_nan;
    const cJSON *qc = custom(j, "quantiles"), *ap = custom(j, "approximate");
    double d = 0;
    if (ap && !get_num(ap, "num", &d))
        f->approximate = d != 0;
    if (qc) {
        rt_stats_hist cut = {0, 0, NULL};
        if ((r = read_hist(cJSON_GetObjectItemCaseSensitive(qc, "histogram"), &cut, i, err)))
            return r;
        for (size_t k = 0; k <= RT_STATS_BUCKETS && k < cut.n; k++)
            f->quantiles[k] = cut.b[k].low;
        free(cut.b);
    }
    return RT_OK;
}

rt_status rt_stats_parse_json(const char *text, size_t len, rt_stats **out, rt_err *err)
{
    *out = NULL;
    cJSON *root = NULL;
    rt_status st = rt_cfg_parse_json(text, len, &root, err);
    if (st != RT_OK) {
        rt_err_prefix(err, "statistics.json");
        return st;
    }
    const cJSON *ds = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "datasets"), 0);
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(ds, "features");
    rt_stats *s = calloc(1, sizeof *s);
    size_t n = cJSON_IsArray(fs) ? (size_t)cJSON_GetArraySize(fs) : 0;
    if (!s || !(s->f = calloc(n ? n : 1, sizeof *s->f))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (!cJSON_IsObject(ds) || !cJSON_IsArray(fs) || get_u64(ds, "num_examples", &s->num_examples)) {
        st = rt_err_set(err, RT_ERR_FORMAT,
                        "statistics.json: expected {\"datasets\": [{\"num_examples\": N, "
                        "\"features\": [...]}]}");
        goto out;
    }
    const cJSON *f;
    cJSON_ArrayForEach(f, fs)
    {
        s->n++;
        if ((st = read_feature(f, &s->f[s->n - 1], s->n - 1, err)) != RT_OK)
            goto out;
    }
out:
    cJSON_Delete(root);
    if (st != RT_OK)
        rt_stats_free(s);
    else
        *out = s;
    return st;
}
