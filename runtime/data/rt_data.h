/*
 * rt_data.h — raw input (runtime/data/): the schema of a model's raw columns
 * (model.proto's generated types), CSV rows split and read into numbers,
 * labels and weights, TFRecord files, tf.Example rows, and the protobuf-c glue.
 * Nothing here knows a compiled graph.
 *
 * May use: core.
 */
#ifndef PREDICTD_RT_DATA_H
#define PREDICTD_RT_DATA_H

#include "rt_core.h"
#include "model.pb-c.h" /* generated from runtime/data/model.proto */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------- TFRecord files (rt_tfrecord.c) */

/*
 * TFRecord files as TensorFlow writes them (uint64 length LE, uint32 masked
 * CRC-32C of the length, the data, uint32 masked CRC-32C of the data), plain
 * or gzip-compressed; the trainer, predict-model evaluate, convert and
 * batch-predict read them here. docs/trainer.md, "Input formats".
 */
typedef enum {
    RT_INPUT_AUTO = 0,      /* told apart by content (rt_tfrecord_sniff) */
    RT_INPUT_CSV,
    RT_INPUT_TFRECORD,
    RT_INPUT_TFRECORD_GZIP,
} rt_input_format;

/* "AUTO", "CSV", "TFRECORD", "TFRECORD_GZIP". */
const char *rt_tfrecord_format_name(rt_input_format f);
/* The format named s (case-insensitive, as rt_tfrecord_format_name spells it):
 * RT_OK, or RT_ERR_INVALID. */
RT_WUR rt_status rt_tfrecord_format_parse(const char *s, rt_input_format *f);
/* What path holds, by content whatever its name: TFRecord (the first 12
 * bytes are a length and its masked CRC) plain or gzip, else CSV. A gzip
 * file that is not TFRecord is RT_ERR_FORMAT. A pipe is not read (that
 * would spend its bytes): CSV, unless the caller's format says otherwise.
 * Thread-safe. */
RT_WUR rt_status rt_tfrecord_sniff(const char *path, rt_input_format *f, rt_err *err);
/* TFRecord's CRC mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t rt_tfrecord_mask(uint32_t crc);

/* A reader of one file's records (gzip recognised by content). One thread. */
typedef struct rt_tfrecord rt_tfrecord;
/* Opens path to read the records that start at stream offsets in
 * [start, end) (end 0: to the end; start must be a record's offset, as
 * rt_tfrecord_cuts gives them; 0 for a gzip file). */
RT_WUR rt_status rt_tfrecord_open(const char *path, uint64_t start, uint64_t end, rt_tfrecord **out,
                           rt_err *err);
/* The next record: *data (valid until the next call) and *len. RT_OK;
 * RT_ERR_NOTFOUND at the end; RT_ERR_FORMAT for a corrupt record ("FILE:
 * offset N: record K: corrupt data (...)", "... truncated ...", "... corrupt
 * length ..."): after corrupt data the next call goes on with the next
 * record, after a corrupt length or a truncated file the file ends. */
RT_WUR rt_status rt_tfrecord_next(rt_tfrecord *r, const uint8_t **data, size_t *len, rt_err *err);
/* The stream offset of the record last returned (or refused), the offset
 * after it, and its number (1 = the first record of the file). */
uint64_t rt_tfrecord_offset(const rt_tfrecord *r);
uint64_t rt_tfrecord_pos(const rt_tfrecord *r);
uint64_t rt_tfrecord_index(const rt_tfrecord *r);
/* How far into the file itself reading has got (for a gzip file the
 * compressed bytes consumed, read-ahead included): progress against the
 * file's size. */
uint64_t rt_tfrecord_file_offset(const rt_tfrecord *r);
void rt_tfrecord_close(rt_tfrecord *r);
/* Byte ranges of a plain TFRecord file cut at record boundaries: *cuts
 * (malloc'd, *n of them, the first 0) are the offsets of the first record at
 * or past each multiple of chunk. Reads only the headers. */
RT_WUR rt_status rt_tfrecord_cuts(const char *path, uint64_t chunk, uint64_t **cuts, size_t *n,
                           rt_err *err);

/* A writer: records go to PATH.tmp-PID; close with commit 1 makes the file
 * (fsync, rename, fsync of the directory), with 0 removes the temp file. */
typedef struct rt_tfrecord_writer rt_tfrecord_writer;
RT_WUR rt_status rt_tfrecord_writer_open(const char *path, int gzip, rt_tfrecord_writer **out,
                                  rt_err *err);
RT_WUR rt_status rt_tfrecord_write(rt_tfrecord_writer *w, const void *data, size_t len, rt_err *err);
RT_WUR rt_status rt_tfrecord_writer_close(rt_tfrecord_writer *w, int commit, rt_err *err);

/* ------------------------------------------- raw inputs, one way (rt_raw.c) */

/*
 * What the trainer and the serving receivers share, so a CSV row means the
 * same to both (docs/feature-columns.md, "Raw inputs"). All thread-safe,
 * no allocation.
 */

/* One field of a split CSV row: bytes [off, off + len) of the output. */
typedef struct rt_csv_span {
    uint32_t off;
    uint32_t len;
} rt_csv_span;

/*
 * One serialized tf.Example as one row of def's raw columns, as
 * tf.io.parse_example reads it with a FixedLenFeature of shape [] per column
 * (rt_example_row.c): text (reset, NUL-terminated) gets the cells, spans[c]
 * (def->n_raw_columns of them) column c's cell, as rt_raw_csv_split gives a CSV
 * row's: bytes as they are, int64 in decimal, float as the shortest text
 * that reads back as the same value. A missing feature is an empty cell (its
 * column's default) or, for a column without default, an error; with
 * targets 0 a label or weight column may be missing. present (may be NULL)
 * gets 1 per column whose feature was there. Errors name the feature
 * ("feature age: expected int64_list (column type int), got float_list").
 */
RT_WUR rt_status rt_example_to_row(const Predictd__ModelDef *def, const uint8_t *bytes, size_t len,
                            int targets, rt_buf *text, rt_csv_span *spans, uint8_t *present,
                            rt_err *err);
/* The reverse, for predict-model convert: the cells of one CSV row of def's
 * raw columns (n_fields spans into text) as a serialized tf.Example in out
 * (reset): a string cell as a bytes_list (its bytes as they are), an int
 * column as an int64_list, a float column as a float_list; an empty cell is
 * left out (its default applies when read). */
RT_WUR rt_status rt_example_from_row(const Predictd__ModelDef *def, const char *text,
                              const rt_csv_span *spans, size_t n_fields, rt_buf *out,
                              rt_err *err);
/* The list kind column rc's feature must have ("bytes_list", ...). */
const char *rt_example_kind(const Predictd__RawColumn *rc);

/*
 * Splits one CSV row row[0..len) (line end already removed) into fields:
 * ',' separated; a field may be "double quoted" ("" is a quote inside, blanks
 * before the opening and after the closing quote are dropped); an unquoted
 * field is kept as it is, blanks included (cells are trimmed when read).
 * Field bytes are copied, unquoted, into out (len + 1 bytes, NUL-terminated
 * after the last field); spans[0..max) get the first max fields. Returns the
 * number of fields (may exceed max), or -1 with err set (RT_ERR_INVALID:
 * "field 3: unterminated quote", "field 3: text after the closing quote",
 * "field 3: contains a NUL byte"; RT_ERR_LIMIT: len >= 4 GiB).
 */
long rt_raw_csv_split(const char *row, size_t len, char *out, rt_csv_span *spans, size_t max,
                  rt_err *err);

/* A numeric cell s[0..len): blanks (space, tab) around it trimmed, then the
 * whole text must be one strtod number (at most 63 characters; "nan" and
 * "inf" included). RT_OK and *v; RT_ERR_NOTFOUND for an empty or all-blank
 * cell (the column's default applies); RT_ERR_INVALID otherwise. */
RT_WUR rt_status rt_raw_number(const char *s, size_t len, double *v);

/* Sets err to the refusal of numeric cell s[0..len) at 0-based position
 * field: 'field 3 (age): expected a number, got "abc"' (name may be NULL;
 * at most 40 bytes of the trimmed cell are quoted). Returns RT_ERR_INVALID. */
rt_status rt_raw_number_error(rt_err *err, size_t field, const char *name, const char *s,
                              size_t len);


/* The label of CSV cell s[0..len) of label column col (raw column index)
 * for def's head: a class id (its index in the head's label vocabulary,
 * after trimming when def->trim_strings; or an integer class id in
 * [0, n_classes) without a vocabulary) or a regression value, in *out.
 * RT_ERR_INVALID names the label column ("label income_bracket: \"x\" is
 * not in the label vocabulary"). Training and predict-model evaluate read
 * labels with it. Thread-safe. */
RT_WUR rt_status rt_raw_label(const Predictd__ModelDef *def, size_t col, const char *s, size_t len,
                       float *out, rt_err *err);
/* rt_raw_label for head h (one of several heads, Graph.heads[k]->head:
 * its type, classes and label vocabulary). Thread-safe. */
RT_WUR rt_status rt_raw_label_of(const Predictd__ModelDef *def, const Predictd__Head *h,
                                 size_t col, const char *s, size_t len, float *out, rt_err *err);

/* The example weight of CSV cell s[0..len) of the weight column col
 * (estimator.weight_column): a finite number >= 0 (an empty cell takes the
 * column's default when the spec gave one). A negative weight or anything
 * else is RT_ERR_INVALID naming the column ("weight w: -1 is negative
 * (example weights must be >= 0)"). Thread-safe. */
RT_WUR rt_status rt_raw_weight(const Predictd__ModelDef *def, size_t col, const char *s, size_t len,
                        float *out, rt_err *err);

/* Raw column index of def's weight column, or -1 (no weight_column). */
long rt_raw_weight_column(const Predictd__ModelDef *def);

/* Raw column indexes of def's label columns, in file order, into cols
 * (room for max); returns how many there are. */
size_t rt_raw_label_columns(const Predictd__ModelDef *def, size_t *cols, size_t max);


/* The part of s[0..*len) without leading/trailing white space (space, \t,
 * \n, \r, \v, \f); updates *len. trim_strings, vocabularies and labels. */
const char *rt_buf_trim_span(const char *s, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_RT_DATA_H */
