/*
 * pm_convert.c — predict-model convert: CSV data of a spec's columns to
 * TFRecord files of tf.Example (plain or gzip), and TFRecord back to CSV,
 * with the types the spec (or an export's raw columns) gives: a string
 * column becomes a bytes_list holding the cell's bytes as they are, an int
 * column an int64_list, a float column a float_list, an empty cell is left
 * out (its default applies when read). The runtime's rt_example_from_row /
 * rt_example_to_row do the work, the ones the trainer and batch-predict read
 * records with, so the trainer reading the TFRecord copy sees the CSV's
 * cells. The output is written atomically.
 */
#include "pm.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/* convert's flags (pm_args_read) */
typedef struct conv_flags {
    char *dir, *spec, *to, *output;
    rt_setting_list input;
    size_t skip;
} conv_flags;

#define CF(f, T)                                                                               \
    (offsetof(conv_flags, f) +                                                                 \
     0 * sizeof(char[_Generic(((conv_flags *)0)->f, T: 1, default: -1)]))

static const rt_setting FLAGS[] = {
    {.name = "dir", .aliases = "model-dir", .type = RT_SET_STR, .where = RT_SET_FLAG,
     .offset = CF(dir, char *), .arg = "EXPORT",
     .help = "the export whose raw columns the data has (or --spec)"},
    {.name = "spec", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = CF(spec, char *),
     .arg = "SPEC.json", .help = "the trainer spec whose columns the data has (or --dir)"},
    {.name = "input", .type = RT_SET_LIST, .where = RT_SET_FLAG, .hi = PM_MAX_LIST,
     .offset = CF(input, rt_setting_list), .arg = "FILES",
     .help = "input files (repeatable; comma lists and globs)"},
    {.name = "to", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = CF(to, char *),
     .arg = "FORMAT",
     .help = "tfrecord, tfrecord-gzip (tf-record, tf-record-gzip, TF_RECORD, TF_RECORD_GZIP) "
             "or csv"},
    {.name = "output", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = CF(output, char *),
     .arg = "FILE", .help = "the file written (atomically)"},
    {.name = "skip-header-lines", .type = RT_SET_SIZE, .where = RT_SET_FLAG, .lo = 0,
     .hi = 1000000, .offset = CF(skip, size_t), .arg = "N",
     .help = "lines skipped at the top of each CSV file"},
};

const pm_command pm_convert_command = {
    "convert",
    "predict-model convert (--dir EXPORT | --spec SPEC.json) --input FILE[,GLOB]...\n"
    "                      --to tfrecord|tfrecord-gzip|csv --output FILE\n"
    "                      [--skip-header-lines N]",
    "Converts data files of the spec's columns (the export's raw columns with --dir) between "
    "CSV and TFRecord files of tf.Example records, as TFX's ExampleGen writes them: a string "
    "column becomes a bytes_list (the cell's bytes as they are), an int column an "
    "int64_list, a float column a float_list; an empty cell is left out (its default applies "
    "when read). Each input file's format is told by its content (CSV, TFRecord, gzip "
    "TFRecord); --to csv writes the records' cells back as CSV rows.",
    "Errors name FILE:LINE or FILE: record N and the column or feature.",
    FLAGS,
    sizeof FLAGS / sizeof FLAGS[0],
};

/* The model part of spec file path as a ModelDef (other top-level keys are
 * the trainer's). */
static Predictd__ModelDef *load_spec(const char *path)
{
    static const char *const model_keys[] = {"columns", "unused_columns", "label",
                                             "feature_columns", "estimator", "trim_strings",
                                             "export", NULL};
    char *text = NULL;
    size_t len = 0;
    rt_err err = {{0}};
    Predictd__ModelDef *def = NULL;
    if (rt_file_read(AT_FDCWD, path, 64u << 20, 0, &text, &len, &err) != RT_OK) {
        fprintf(stderr, "predict-model convert: --spec %s\n", err.msg);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j) {
        fprintf(stderr, "predict-model convert: --spec %s: not JSON\n", path);
        return NULL;
    }
    const char *others[64];
    size_t n = 0;
    for (const cJSON *k = j->child; k && n < 63; k = k->next) {
        int mine = 0;
        for (size_t i = 0; model_keys[i]; i++)
            mine |= k->string && strcmp(k->string, model_keys[i]) == 0;
        if (!mine && k->string)
            others[n++] = k->string;
    }
    others[n] = NULL;
    if (rt_spec_to_modeldef(j, others, &def, &err) != RT_OK)
        fprintf(stderr, "predict-model convert: --spec %s: %s\n", path, err.msg);
    cJSON_Delete(j);
    return def;
}

/* Appends one CSV cell, quoted when it must be. */
static void put_cell(rt_buf *b, const char *s, size_t n)
{
    int quote = 0;
    for (size_t i = 0; i < n; i++)
        quote |= s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    if (!quote) {
        rt_buf_append(b, s, n);
        return;
    }
    rt_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            rt_buf_append(b, "\"", 1);
        rt_buf_append(b, s + i, 1);
    }
    rt_buf_append(b, "\"", 1);
}

typedef struct conv {
    const Predictd__ModelDef *def;
    int to_csv, gzip;
    rt_tfrecord_writer *w;
    rt_buf csv;     /* --to csv: the whole output */
    rt_buf text, ex;
    rt_csv_span *spans;
    uint64_t rows;
} conv;

static rt_status convert_file(conv *cv, const char *path, size_t skip_header, rt_err *err)
{
    rt_input_format f;
    rt_status st = rt_tfrecord_sniff(path, &f, err);
    if (st)
        return st;
    pm_in *in = NULL;
    int records = f != RT_INPUT_CSV;
    size_t ncol = cv->def->n_raw_columns;
    if ((st = pm_in_open(path, records ? PM_IN_TFRECORD : PM_IN_CSV, 0, 0, skip_header, &in,
                         err)))
        return st;
    for (;;) {
        const uint8_t *data;
        size_t len;
        uint64_t where;
        st = pm_in_next(in, &data, &len, &where, err);
        if (st == RT_ERR_NOTFOUND) {
            st = RT_OK;
            break;
        }
        if (st)
            break;
        if (records) {
            st = rt_example_to_row(cv->def, data, len, 1, &cv->text, cv->spans, NULL, err);
            if (st) {
                rt_err_prefix(err, "%s: record %llu", path, (unsigned long long)where);
                break;
            }
        } else {
            rt_buf_reset(&cv->text);
            if (rt_buf_reserve(&cv->text, len + 1) != 0) {
                st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                break;
            }
            long nf =
                rt_raw_csv_split((const char *)data, len, cv->text.data, cv->spans, ncol, err);
            if (nf >= 0 && (size_t)nf != ncol)
                rt_err_set(err, RT_ERR_INVALID, "expected %zu fields, got %ld", ncol, nf);
            if (nf < 0 || (size_t)nf != ncol) {
                rt_err_prefix(err, "%s:%llu", path, (unsigned long long)where);
                st = RT_ERR_INVALID;
                break;
            }
            cv->text.len = len;
        }
        if (cv->to_csv) {
            for (size_t c = 0; c < ncol; c++) {
                if (c)
                    rt_buf_append(&cv->csv, ",", 1);
                put_cell(&cv->csv, cv->text.data + cv->spans[c].off, cv->spans[c].len);
            }
            rt_buf_append(&cv->csv, "\n", 1);
            if (rt_buf_failed(&cv->csv)) {
                st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                break;
            }
        } else {
            st = rt_example_from_row(cv->def, cv->text.data, cv->spans, ncol, &cv->ex, err);
            if (st) {
                rt_err_prefix(err, "%s:%llu", path, (unsigned long long)where);
                break;
            }
            if ((st = rt_tfrecord_write(cv->w, cv->ex.data, cv->ex.len, err)))
                break;
        }
        cv->rows++;
    }
    pm_in_close(in);
    return st;
}

/* Runs convert with flags f (read alone by the table; checked together
 * here). */
static int convert(const conv_flags *f)
{
    const pm_command *c = &pm_convert_command;
    if (!f->dir == !f->spec)
        return pm_usage_error(c, "%s", "give --dir EXPORT or --spec SPEC.json (one of them)");
    if (!f->input.n)
        return pm_usage_error(c, "%s", "missing --input FILE");
    if (!f->output)
        return pm_usage_error(c, "%s", "missing --output FILE");
    const char *to = f->to, *output = f->output;
    size_t skip_header = f->skip;
    pm_in_format tf = PM_IN_CSV;
    int to_csv = to && strcmp(to, "csv") == 0;
    if (!to || (!to_csv && (pm_in_format_parse(to, &tf) != 0 ||
                            (tf != PM_IN_TFRECORD && tf != PM_IN_TFRECORD_GZIP))))
        return pm_usage_error(c, "--to \"%s\": expected tfrecord, tfrecord-gzip or csv",
                              to ? to : "");
    rt_model *m = NULL;
    Predictd__ModelDef *own = NULL;
    const Predictd__ModelDef *def = NULL;
    if (f->dir) {
        if (!(m = pm_open_model(f->dir, NULL)))
            return 1;
        def = rt_model_def(m);
    } else {
        if (!(own = load_spec(f->spec)))
            return 1;
        def = own;
    }
    conv cv;
    memset(&cv, 0, sizeof cv);
    cv.def = def;
    cv.to_csv = to_csv;
    rt_buf_init(&cv.csv);
    rt_buf_init(&cv.text);
    rt_buf_init(&cv.ex);
    rt_err err = {{0}};
    char **files = NULL;
    size_t n_files = 0;
    int rc = 1;
    rt_status st = pm_expand_inputs((const char *const *)f->input.v, f->input.n, &files, &n_files,
                                    &err);
    cv.spans = calloc(def->n_raw_columns + 1, sizeof *cv.spans);
    if (st == RT_OK && !cv.spans)
        st = rt_err_set(&err, RT_ERR_NOMEM, "out of memory");
    if (st == RT_OK && !to_csv)
        st = rt_tfrecord_writer_open(output, tf == PM_IN_TFRECORD_GZIP, &cv.w, &err);
    for (size_t i = 0; st == RT_OK && i < n_files; i++)
        st = convert_file(&cv, files[i], skip_header, &err);
    if (!to_csv) {
        rt_status cs = rt_tfrecord_writer_close(cv.w, st == RT_OK, st == RT_OK ? &err : NULL);
        if (st == RT_OK)
            st = cs;
    } else if (st == RT_OK) {
        st = rt_file_write(output, cv.csv.data ? cv.csv.data : "", cv.csv.len, &err);
    }
    if (st == RT_OK) {
        fprintf(stderr, "predict-model convert: %llu rows from %zu file%s to %s\n",
                (unsigned long long)cv.rows, n_files, n_files == 1 ? "" : "s", output);
        rc = 0;
    } else {
        fprintf(stderr, "predict-model convert: %s\n", err.msg);
    }
    for (size_t i = 0; i < n_files; i++)
        free(files[i]);
    free(files);
    free(cv.spans);
    rt_buf_free(&cv.csv);
    rt_buf_free(&cv.text);
    rt_buf_free(&cv.ex);
    rt_spec_modeldef_free(own);
    rt_model_close(m);
    return rc;
}

int pm_cmd_convert(int argc, char **argv)
{
    const pm_command *c = &pm_convert_command;
    conv_flags f;
    bool help = false;
    int rc = pm_args_read(c, argc - 1, argv + 1, &f, &help);
    if (rc)
        return rc;
    if (help) {
        pm_command_help(c);
        rt_settings_free(FLAGS, c->n_flags, &f);
        return 0;
    }
    rc = convert(&f);
    rt_settings_free(FLAGS, c->n_flags, &f);
    return rc;
}
