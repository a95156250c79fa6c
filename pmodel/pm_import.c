/*
 * pm_import.c — predict-model import: a model trained elsewhere (XGBoost's
 * model.json / model.ubj, an ONNX model.onnx) written as a new version
 * directory of an export base, with a serving.json made of --categories and
 * --classes. The bytes of the model are copied as they are, so the daemon
 * serves what it serves from the file dropped into a version directory by
 * hand. The version is named as the exporter names one (the Unix time, or
 * one past the newest version when that is not older; the next integer when
 * taken) and written as it writes one, by the runtime's rt_publish_version
 * (runtime/model/rt_publish.c, which the exporter uses too: pmodel may not
 * link the exporter, docs/design.md): a hidden BASE/.tmp-<version>-<pid>-
 * <rand> directory, every file and the directory fsynced, opened with the
 * runtime's model loader (a model it refuses is refused here, naming the
 * file), then renamed to its integer name without replacing anything and
 * BASE fsynced. On any failure the temp directory is removed: no version is
 * left behind.
 */
#include "pm.h"

#include <fcntl.h>
#include <inttypes.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#define IMPORT_MODEL_MAX ((size_t)1 << 30)    /* bytes of a model file */
#define IMPORT_CATEGORIES_MAX ((size_t)64 << 20)

typedef struct imp_flags {
    char *model, *categories, *inputs, *export_dir;
    rt_setting_list classes, data;
} imp_flags;

#define IF(f, T)                                                                               \
    (offsetof(imp_flags, f) + 0 * sizeof(char[_Generic(((imp_flags *)0)->f, T: 1, default: -1)]))

static const rt_setting FLAGS[] = {
    {.name = "model", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = IF(model, char *),
     .arg = "FILE",
     .help = "the model file: XGBoost's *.json or *.ubj (Booster.save_model), or *.onnx"},
    {.name = "categories", .type = RT_SET_STR, .where = RT_SET_FLAG,
     .offset = IF(categories, char *), .arg = "FILE",
     .help = "a JSON file {\"categories\": {\"feature\": [\"name\", ...], ...}}: the "
             "category names of each categorical feature, in code order"},
    {.name = "inputs", .type = RT_SET_STR, .where = RT_SET_FLAG, .offset = IF(inputs, char *),
     .arg = "FILE",
     .help = "a JSON file {\"inputs\": {\"x\": [\"age\", ...], ...}} (an ONNX model): each "
             "[N, k] graph input fed from k named features, in column order, as serving.json's "
             "\"inputs\" (needed for --data when the graph takes a list input)"},
    {.name = "classes", .type = RT_SET_LIST, .where = RT_SET_FLAG, .hi = PM_MAX_LIST,
     .offset = IF(classes, rt_setting_list), .arg = "A,B,...",
     .help = "the class names, in class-id order (repeatable; comma lists)"},
    {.name = "export-dir", .type = RT_SET_STR, .where = RT_SET_FLAG,
     .offset = IF(export_dir, char *), .arg = "BASE",
     .help = "the export base the new version directory is written into (created if missing)"},
    {.name = "data", .type = RT_SET_LIST, .where = RT_SET_FLAG, .hi = PM_MAX_LIST,
     .offset = IF(data, rt_setting_list), .arg = "FILE.csv",
     .help = "training rows as CSV, each file starting with a header line that names its "
             "columns (every input of the model, in any order; others, e.g. the label, are "
             "ignored): their statistics are written as the version's statistics.json, for "
             "the daemon's skew and drift monitoring (repeatable)"},
};

const pm_command pm_import_command = {
    "import",
    "predict-model import --model FILE [--categories FILE] [--inputs FILE]\n"
    "                     [--classes A,B,...] [--data FILE.csv] --export-dir BASE",
    "Writes a model trained elsewhere — XGBoost's model.json or model.ubj, or an ONNX "
    "model.onnx — as a new version directory BASE/<version>/ holding the model file's bytes "
    "as they are (named model.json, model.ubj or model.onnx by the file's extension) and, "
    "with --categories, --inputs or --classes, a serving.json with \"categories\", "
    "\"inputs\" and \"classes\"; "
    "with --data, a statistics.json of the CSV rows' inputs (as predict-model stats --data "
    "computes them and predict-train writes them), which the daemon's skew and drift "
    "monitoring and the explanations' baselines use as they use a trained export's, and "
    "beside it statistics.crc32c.json, its size and CRC-32C, which the loader checks. "
    "The version is the Unix time, or one past the newest version when that is not older. "
    "The directory is written under a hidden temp name, fsynced, opened with the daemon's "
    "model loader, then renamed into place: a model the daemon would refuse is refused here "
    "and no version is left behind. The temp directories of earlier imports or exports "
    "that were killed are removed first. Prints the new version's path.",
    "Errors name the file and the field (e.g. \"--categories c.json: \\\"categories\\\" "
    "must be an object\", \"model.json: ...\" from the loader).",
    FLAGS,
    sizeof FLAGS / sizeof FLAGS[0],
};

/* The name the model file takes in the version directory, from path's
 * extension; NULL when none fits. */
static const char *model_name(const char *path)
{
    static const char *const names[] = {"model.json", "model.ubj", "model.onnx"};
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(dot, strchr(names[i], '.')) == 0)
            return names[i];
    return NULL;
}

/* The object under key in the JSON file named by flag (path), every member
 * a list, detached into s under key. 0 ok, else 1 with a message naming the
 * flag, the file and the key. */
static int copy_lists(cJSON *s, const char *flag, const char *path, const char *key,
                      const char *shape)
{
    char *text = NULL;
    size_t len = 0;
    rt_err err = {{0}};
    if (rt_file_read(AT_FDCWD, path, IMPORT_CATEGORIES_MAX, 0, &text, &len, &err) != RT_OK) {
        fprintf(stderr, "predict-model import: --%s %s\n", flag, err.msg);
        return 1;
    }
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    cJSON *c = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!j || !cJSON_IsObject(j))
        fprintf(stderr, "predict-model import: --%s %s: not a JSON object\n", flag, path);
    else if (!cJSON_IsObject(c))
        fprintf(stderr, "predict-model import: --%s %s: \"%s\" must be an object %s\n", flag,
                path, key, shape);
    for (const cJSON *k = cJSON_IsObject(c) ? c->child : NULL; k; k = k->next)
        if (!cJSON_IsArray(k)) {
            fprintf(stderr, "predict-model import: --%s %s: \"%s\".\"%s\" must be a list of "
                    "names\n", flag, path, key, k->string);
            c = NULL;
            break;
        }
    int rc = cJSON_IsObject(c) ? 0 : 1;
    if (!rc)
        cJSON_AddItemToObject(s, key, cJSON_DetachItemViaPointer(j, c));
    cJSON_Delete(j);
    return rc;
}

/* serving.json's text from --categories (its "categories" object), --inputs
 * (its "inputs" object) and --classes; *out NULL when none is given. 0 ok,
 * else 1 with a message. */
static int serving_json(const imp_flags *f, char **out)
{
    *out = NULL;
    if (!f->categories && !f->inputs && !f->classes.n)
        return 0;
    cJSON *s = cJSON_CreateObject();
    int rc = s ? 0 : 1;
    if (!rc && f->categories)
        rc = copy_lists(s, "categories", f->categories, "categories",
                        "{\"feature\": [\"name\", ...]}");
    if (!rc && f->inputs)
        rc = copy_lists(s, "inputs", f->inputs, "inputs",
                        "{\"graph input\": [\"feature\", ...]}");
    if (!rc && f->classes.n) {
        cJSON *a = cJSON_AddArrayToObject(s, "classes");
        for (size_t i = 0; a && i < f->classes.n; i++) /* each a comma list */
            for (const char *p = f->classes.v[i], *e; p; p = *e ? e + 1 : NULL) {
                e = p + strcspn(p, ",");
                char *one = strndup(p, (size_t)(e - p));
                cJSON_AddItemToArray(a, cJSON_CreateString(one ? one : ""));
                free(one);
            }
    }
    if (!rc && !(*out = cJSON_PrintUnformatted(s))) {
        fprintf(stderr, "predict-model import: out of memory\n");
        rc = 1;
    }
    cJSON_Delete(s);
    return rc;
}

/* What the check below needs: the flags (--data). */
typedef struct imp_check {
    const imp_flags *f;
} imp_check;

/* The first line of file, without its line end, into *line (malloc'd). */
static rt_status first_line(const char *file, char **line, size_t *len, rt_err *err)
{
    size_t cap = 0;
    *line = NULL;
    FILE *fp = fopen(file, "r");
    if (!fp)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot open: %s", file, strerror(errno));
    ssize_t got = getline(line, &cap, fp);
    fclose(fp);
    if (got <= 0)
        return rt_err_set(err, RT_ERR_INVALID, "%s: no header line", file);
    *len = (size_t)got;
    while (*len && ((*line)[*len - 1] == '\n' || (*line)[*len - 1] == '\r'))
        (*len)--;
    return RT_OK;
}

/* The --data files' header (the first's; the others must repeat it): for
 * each raw column of def its field in the files, or -1 (field[], *nf the
 * header's fields). Every input of the model must be named. */
static rt_status header_fields(const Predictd__ModelDef *def, const rt_setting_list *data,
                               long **field, size_t *nf, rt_err *err)
{
    char *line = NULL, *other = NULL, *text = NULL;
    size_t len = 0, olen = 0;
    rt_csv_span *spans = NULL;
    rt_stats_acc *a = NULL;
    *field = NULL;
    rt_status st = first_line(data->v[0], &line, &len, err);
    for (size_t k = 1; st == RT_OK && k < data->n; k++) {
        if ((st = first_line(data->v[k], &other, &olen, err)) == RT_OK &&
            (olen != len || memcmp(other, line, len) != 0))
            st = rt_err_set(err, RT_ERR_INVALID, "%s: header differs from %s's", data->v[k],
                            data->v[0]);
        free(other);
        other = NULL;
    }
    size_t max = 1;
    for (size_t i = 0; st == RT_OK && i < len; i++)
        max += line[i] == ',';
    if (st == RT_OK && (!(spans = calloc(max, sizeof *spans)) || !(text = malloc(len + 1)) ||
                        !(*field = malloc((def->n_raw_columns + 1) * sizeof **field)) ||
                        !(a = rt_stats_acc_new(def))))
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    long got = st == RT_OK ? rt_raw_csv_split(line, len, text, spans, max, err) : -1;
    if (st == RT_OK && got < 0) {
        st = RT_ERR_INVALID;
        rt_err_prefix(err, "%s: header", data->v[0]);
    }
    for (size_t c = 0; st == RT_OK && c < def->n_raw_columns; c++) {
        const char *name = def->raw_columns[c]->name;
        (*field)[c] = -1;
        for (long k = 0; k < got; k++) {
            size_t hl = spans[k].len;
            const char *h = rt_buf_trim_span(text + spans[k].off, &hl);
            if (hl == strlen(name) && memcmp(h, name, hl) == 0)
                (*field)[c] = k;
        }
    }
    for (size_t i = 0; st == RT_OK && i < rt_stats_acc_inputs(a); i++)
        if ((*field)[rt_stats_acc_column(a, i)] < 0)
            st = rt_err_set(err, RT_ERR_INVALID,
                            "%s: the header names no column \"%s\" (an input of the model)",
                            data->v[0], rt_stats_acc_name(a, i));
    *nf = got > 0 ? (size_t)got : 0;
    if (st != RT_OK) {
        free(*field);
        *field = NULL;
    }
    rt_stats_acc_free(a);
    free(spans);
    free(text);
    free(line);
    return st;
}

/* Writes statistics.json into the version directory dir: the statistics of
 * the --data rows in the inputs of def (rt_file_write: temp + fsync +
 * rename, fsync of dir), and beside it RT_STATS_RECORD, its size and
 * CRC-32C, as model.pb records a trained export's. */
static rt_status write_stats(const char *dir, const Predictd__ModelDef *def, const imp_check *c,
                             rt_err *err)
{
    rt_stats *s = NULL;
    rt_buf b;
    char path[4200];
    long *field = NULL;
    size_t nf = 0;
    rt_buf_init(&b);
    for (size_t i = 0; i < def->n_feature_columns; i++)
        if (def->feature_columns[i]->shape > 1)
            return rt_err_set(err, RT_ERR_UNSUPPORTED,
                              "--data: the model's input \"%s\" is a list of %u numbers; "
                              "statistics are kept of single-valued inputs only (name its "
                              "columns' features with --inputs FILE, {\"inputs\": {\"%s\": "
                              "[\"feature\", ...]}})",
                              def->feature_columns[i]->key, def->feature_columns[i]->shape,
                              def->feature_columns[i]->key);
    rt_status st = header_fields(def, &c->f->data, &field, &nf, err);
    if (st == RT_OK)
        st = pm_stats_of_fields(def, field, nf, (const char *const *)c->f->data.v,
                                c->f->data.n, 1, NULL, NULL, NULL, &s, err);
    free(field);
    if (st != RT_OK)
        rt_err_prefix(err, "--data");
    else if (s->num_examples == 0)
        st = rt_err_set(err, RT_ERR_INVALID, "--data %s: no rows", c->f->data.v[0]);
    else if ((st = rt_stats_write_json(s, "train", &b)) != RT_OK)
        rt_err_set(err, st, "statistics.json: out of memory");
    else {
        snprintf(path, sizeof path, "%s/statistics.json", dir);
        st = rt_file_write(path, b.data, b.len, err);
    }
    if (st == RT_OK) { /* its size and CRC-32C, which the loader checks (rt_model.c) */
        char rec[160];
        int n = snprintf(rec, sizeof rec,
                         "{\"file\": \"statistics.json\", \"size\": %zu, \"crc32c\": %" PRIu32
                         "}\n", b.len, rt_hash_crc32c(0, b.data, b.len));
        snprintf(path, sizeof path, "%s/%s", dir, RT_STATS_RECORD);
        st = rt_file_write(path, rec, (size_t)n, err);
    }
    rt_stats_free(s);
    rt_buf_free(&b);
    return st;
}

/* rt_publish_version's check: the runtime's model loader opens the temp
 * directory as the daemon will open the version; with --data the rows'
 * statistics are added in the model's inputs and the version is opened again
 * (the loader parses statistics.json). */
static rt_status loads(const char *tmp_path, void *arg, rt_err *err)
{
    const imp_check *c = arg;
    rt_model *m = NULL;
    rt_status st = rt_model_open(tmp_path, &m, err);
    if (st != RT_OK)
        rt_err_prefix(err, "the imported version does not load");
    if (st == RT_OK && c->f->data.n) {
        st = write_stats(tmp_path, rt_model_def(m), c, err);
        rt_model_close(m);
        m = NULL;
        if (st == RT_OK && (st = rt_model_open(tmp_path, &m, err)) != RT_OK)
            rt_err_prefix(err, "the imported version with its statistics does not load");
    }
    rt_model_close(m);
    return st;
}

/* Runs import with flags f. */
static int import(const imp_flags *f)
{
    const pm_command *c = &pm_import_command;
    if (!f->model)
        return pm_usage_error(c, "%s", "missing --model FILE");
    if (!f->export_dir)
        return pm_usage_error(c, "%s", "missing --export-dir BASE");
    const char *name = model_name(f->model);
    if (!name)
        return pm_usage_error(c, "--model %s: expected a .json or .ubj (XGBoost) or .onnx file",
                              f->model);
    imp_check chk = {.f = f};
    char *serving = NULL;
    if (serving_json(f, &serving))
        return 1;
    char *model = NULL;
    size_t len = 0;
    rt_err err = {{0}};
    int64_t version = 0;
    rt_status st = rt_file_read(AT_FDCWD, f->model, IMPORT_MODEL_MAX, 0, &model, &len, &err);
    if (st != RT_OK) {
        fprintf(stderr, "predict-model import: --model %s\n", err.msg);
        goto out;
    }
    rt_publish_file files[2] = {{.name = name, .data = model, .len = len},
                                {.name = "serving.json", .data = serving,
                                 .len = serving ? strlen(serving) : 0}};
    /* the temp directories of imports (or exports) killed before they finished */
    size_t gone = 0;
    if (rt_publish_clean_temps(f->export_dir, -1, &gone, &err) != RT_OK)
        fprintf(stderr, "predict-model import: %s (going on)\n", err.msg);
    rt_publish_params pp = {.sync = true, .check = loads, .check_arg = &chk};
    st = rt_publish_version(f->export_dir, files, serving ? 2 : 1, &pp, &version, &err);
    if (st == RT_OK)
        printf("%s/%" PRId64 "\n", f->export_dir, version);
    else
        fprintf(stderr, "predict-model import: --model %s: %s\n", f->model, err.msg);
out:
    free(model);
    free(serving);
    return st == RT_OK ? 0 : 1;
}

int pm_cmd_import(int argc, char **argv)
{
    const pm_command *c = &pm_import_command;
    imp_flags f;
    bool help = false;
    int rc = pm_args_read(c, argc - 1, argv + 1, &f, &help);
    if (rc)
        return rc;
    if (help)
        pm_command_help(c);
    else
        rc = import(&f);
    rt_settings_free(FLAGS, c->n_flags, &f);
    return rc;
}
