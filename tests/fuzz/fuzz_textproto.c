/*
 * fuzz_textproto.c — fuzzes the protobuf text-format reader (srv_tp_parse)
 * and TF Serving's three text-format files read through it
 * (srv_tfconf_model_config, srv_tfconf_monitoring, srv_tfconf_batching),
 * plus srv_config_parse on the same text (which tells text format from
 * JSON by content).
 *
 * Input: the file's text. Checked besides the sanitizers: every node's
 * offsets lie inside the text in order (name, then value); its name is the
 * bytes at name_off; its line and column are those of name_off; a message's
 * value starts with '{' or '<' and ends with its closing bracket; a
 * string's value starts with a quote; a number's or identifier's text is
 * its bytes verbatim; every refusal has a message starting "line L, column
 * C" (or naming a limit / memory); a model config read as text gives the
 * same result through srv_config_parse whatever the base directory's
 * absence or presence changes (only base paths).
 */
#include "fz_util.h"
#include "srv.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#define FZ_TP_MAX (64u << 10)

/* Line and column of byte off, counted afresh. */
static void line_col(const char *s, size_t off, int *line, int *col)
{
    int l = 1;
    size_t lo = 0;
    for (size_t i = 0; i < off; i++)
        if (s[i] == '\n')
            l++, lo = i + 1;
    *line = l;
    *col = (int)(off - lo) + 1;
}

static void check_tree(const char *s, size_t len, const srv_tp_node *msg, size_t *count)
{
    size_t prev = msg->val_off;
    for (const srv_tp_node *n = msg->child; n; n = n->next) {
        (*count)++;
        FZ_CHECK(n->parent == msg, "parent link");
        FZ_CHECK(n->name && n->name[0], "nameless field");
        size_t nl = strlen(n->name);
        FZ_CHECK(n->name_off + nl <= len, "name past the end");
        FZ_CHECK(n->name_off >= prev, "fields out of order");
        FZ_CHECK(n->val_off <= n->val_end && n->val_end <= len, "value offsets");
        if (n->kind == SRV_TP_MESSAGE || n->kind == SRV_TP_STRING ||
            n->kind == SRV_TP_NUMBER || n->kind == SRV_TP_IDENT)
            FZ_CHECK(n->val_off >= n->name_off, "value before its name");
        int line, col;
        line_col(s, n->name_off, &line, &col);
        if (!memcmp(s + n->name_off, n->name, nl)) {
            FZ_CHECK(n->line == line && n->col == col, "line/column of the name");
        } else {
            /* the 2nd.. values of a list `f: [a, b]`: named at the value */
            FZ_CHECK(n->name_off == n->val_off, "name bytes differ outside a list");
        }
        switch (n->kind) {
        case SRV_TP_MESSAGE:
            FZ_CHECK(s[n->val_off] == '{' || s[n->val_off] == '<', "message opening");
            FZ_CHECK(n->val_end >= 1 &&
                         s[n->val_end - 1] == (s[n->val_off] == '{' ? '}' : '>'),
                     "message closing");
            FZ_CHECK(n->text == NULL, "message with a text");
            check_tree(s, len, n, count);
            break;
        case SRV_TP_STRING:
            FZ_CHECK(s[n->val_off] == '"' || s[n->val_off] == '\'', "string opening");
            FZ_CHECK(n->text && n->len <= n->val_end - n->val_off, "decoded string longer");
            FZ_CHECK(n->child == NULL, "scalar with children");
            break;
        case SRV_TP_NUMBER:
        case SRV_TP_IDENT:
            FZ_CHECK(n->text && n->len == n->val_end - n->val_off &&
                         !memcmp(n->text, s + n->val_off, n->len),
                     "bare token differs from its bytes");
            FZ_CHECK(n->child == NULL, "scalar with children");
            break;
        case SRV_TP_LIST_EMPTY:
            FZ_CHECK(s[n->val_off] == '[' && s[n->val_end - 1] == ']', "empty list brackets");
            break;
        }
        prev = n->name_off;
    }
}

static void check_refusal(rt_status st, const rt_err *err)
{
    FZ_CHECK(err->msg[0] != '\0', "refusal without a message");
    FZ_CHECK(st == RT_ERR_NOMEM || st == RT_ERR_LIMIT || !strncmp(err->msg, "line ", 5),
             "refusal without a line and column");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_TP_MAX)
        return 0;
    char *text = fz_cstr(data, size);
    if (!text)
        return 0;
    rt_err err;
    err.msg[0] = '\0';
    srv_tp_node *root = NULL;
    rt_status st = srv_tp_parse(text, size, &root, &err);
    fz_note("srv_tp_parse", st, &err);
    if (st == RT_OK) {
        size_t count = 0;
        check_tree(text, size, root, &count);
        FZ_CHECK(count <= SRV_TP_MAX_NODES, "more nodes than the limit");
        srv_tp_free(root);
    } else {
        FZ_CHECK(root == NULL, "refused text returned a tree");
        check_refusal(st, &err);
    }

    cJSON *j = NULL;
    srv_tfconf_map *map = NULL;
    err.msg[0] = '\0';
    st = srv_tfconf_model_config(text, size, &j, &map, &err);
    if (st == RT_OK) {
        FZ_CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "models")), "no models");
        cJSON_Delete(j);
        srv_tfconf_map_free(map);
    } else {
        FZ_CHECK(j == NULL && map == NULL, "refused model config returned");
        check_refusal(st, &err);
    }
    bool enable = false;
    char *path = NULL;
    st = srv_tfconf_monitoring(text, size, &enable, &path, &err);
    if (st == RT_OK)
        FZ_CHECK(path && path[0] == '/', "monitoring path not absolute");
    else
        check_refusal(st, &err);
    free(path);
    st = srv_tfconf_batching(text, size, &j, &map, &err);
    if (st == RT_OK) {
        FZ_CHECK(cJSON_IsObject(j), "batching not an object");
        cJSON_Delete(j);
        srv_tfconf_map_free(map);
    } else {
        check_refusal(st, &err);
    }
    if (srv_tfconf_is_text(text, size)) {
        srv_config *c = NULL;
        st = srv_config_parse(text, size, "/etc/predictd", &c, &err);
        fz_note("srv_config_parse", st, &err);
        if (st == RT_OK) {
            FZ_CHECK(c->n_models >= 1, "text config without a model");
            for (size_t i = 0; i < c->n_models; i++)
                FZ_CHECK(c->models[i].base_path[0] == '/', "relative base path");
            srv_config_free(c);
        } else {
            check_refusal(st, &err);
        }
    }
    free(text);
    return 0;
}
