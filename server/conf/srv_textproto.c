/*
 * srv_textproto.c — a reader for the protobuf text format, the subset
 * TensorFlow Serving's config files use (ModelServerConfig, MonitoringConfig,
 * BatchingParameters): `name { ... }` / `name < ... >` messages (the `:`
 * before them optional), `name: value` scalars (integers, floats, quoted
 * strings with C escapes, adjacent strings joined, identifiers such as enum
 * names, true and false), `name: [v, v]` lists of scalars, `#` comments,
 * optional `,` or `;` after a field. Repeated fields and map entries
 * (`version_labels { key: "stable" value: 3 }`) are plain repeated fields
 * here; what a field means is the caller's (srv_tfconf.c).
 *
 * The result is a tree of srv_tp_node that keeps, for every field, its line,
 * column and byte offsets in the text, so errors can point at it and
 * predictctl can edit a file in place without touching the rest of it.
 * Strict limits: nesting depth SRV_TP_MAX_DEPTH, SRV_TP_MAX_NODES fields,
 * identifiers up to 128 bytes; the text itself is bounded by the caller.
 */
#include "srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tp_parser {
    const char *s;
    size_t len, pos;
    int line;         /* 1-based line of pos */
    size_t line_off;  /* offset of the first byte of that line */
    size_t n_nodes;
    rt_status node_st; /* why new_node failed */
    rt_err *err;
} tp_parser;

static int col_of(const tp_parser *p, size_t off)
{
    return (int)(off - p->line_off) + 1;
}

/* The dotted path of node n ("model_config_list.config.name"), into buf. */
const char *srv_tp_path(const srv_tp_node *n, char *buf, size_t cap)
{
    const srv_tp_node *chain[SRV_TP_MAX_DEPTH + 2];
    size_t depth = 0;
    for (const srv_tp_node *m = n; m && m->parent && depth < sizeof chain / sizeof chain[0];
         m = m->parent)
        chain[depth++] = m;
    size_t at = 0;
    if (cap)
        buf[0] = '\0';
    while (depth-- > 0 && at + 1 < cap) {
        int k = snprintf(buf + at, cap - at, "%s%s", at ? "." : "", chain[depth]->name);
        if (k < 0)
            break;
        at += (size_t)k;
    }
    return buf;
}

static rt_status fail_at(tp_parser *p, size_t off, const srv_tp_node *in, const char *what)
{
    /* line of off: off is at or after line_off of the current line except
     * when pointing back at a token on an earlier line, so count afresh. */
    int line = 1;
    size_t lo = 0;
    for (size_t i = 0; i < off && i < p->len; i++)
        if (p->s[i] == '\n') {
            line++;
            lo = i + 1;
        }
    char path[256];
    srv_tp_path(in, path, sizeof path);
    return rt_err_set(p->err, RT_ERR_INVALID, "line %d, column %d: %s%s%s", line,
                      (int)(off - lo) + 1, path, path[0] ? ": " : "", what);
}

/* Skips white space and # comments, keeping line and column. */
static void skip_space(tp_parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c == '\n') {
            p->pos++;
            p->line++;
            p->line_off = p->pos;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            p->pos++;
        } else if (c == '#') {
            while (p->pos < p->len && p->s[p->pos] != '\n')
                p->pos++;
        } else {
            break;
        }
    }
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static srv_tp_node *new_node(tp_parser *p, srv_tp_node *parent, const char *name, size_t nlen,
                             size_t off)
{
    if (p->n_nodes >= SRV_TP_MAX_NODES) {
        p->node_st = rt_err_set(p->err, RT_ERR_LIMIT, "line %d, column %d: more than %d fields",
                                p->line, col_of(p, off), SRV_TP_MAX_NODES);
        return NULL;
    }
    srv_tp_node *n = calloc(1, sizeof *n);
    if (n)
        n->name = malloc(nlen + 1);
    if (!n || !n->name) {
        free(n);
        p->node_st = rt_err_set(p->err, RT_ERR_NOMEM, "text format: out of memory");
        return NULL;
    }
    memcpy(n->name, name, nlen);
    n->name[nlen] = '\0';
    n->parent = parent;
    n->line = p->line;
    n->col = col_of(p, off);
    n->name_off = off;
    p->n_nodes++;
    /* appended as the last child */
    if (parent->last)
        parent->last->next = n;
    else
        parent->child = n;
    parent->last = n;
    return n;
}

/* Reads one or more adjacent quoted strings at p->pos into n->text. */
static rt_status read_string(tp_parser *p, srv_tp_node *n)
{
    /* The decoded text is never longer than the quoted source. */
    size_t start = p->pos;
    char *out = malloc(p->len - p->pos + 1);
    size_t o = 0;
    if (!out)
        return rt_err_set(p->err, RT_ERR_NOMEM, "text format: out of memory");
    while (p->pos < p->len && (p->s[p->pos] == '"' || p->s[p->pos] == '\'')) {
        char q = p->s[p->pos];
        size_t open = p->pos++;
        for (;;) {
            if (p->pos >= p->len || p->s[p->pos] == '\n') {
                free(out);
                return fail_at(p, open, n, "string not closed on its line");
            }
            char c = p->s[p->pos];
            if (c == q) {
                p->pos++;
                break;
            }
            if (c != '\\') {
                out[o++] = c;
                p->pos++;
                continue;
            }
            size_t esc = p->pos++;
            if (p->pos >= p->len) {
                free(out);
                return fail_at(p, esc, n, "string not closed on its line");
            }
            c = p->s[p->pos++];
            switch (c) {
            case 'n': out[o++] = '\n'; break;
            case 't': out[o++] = '\t'; break;
            case 'r': out[o++] = '\r'; break;
            case 'a': out[o++] = '\a'; break;
            case 'b': out[o++] = '\b'; break;
            case 'f': out[o++] = '\f'; break;
            case 'v': out[o++] = '\v'; break;
            case '\\': case '\'': case '"': case '?': out[o++] = c; break;
            case 'x': case 'X': {
                int v = 0, k = 0;
                while (k < 2 && p->pos < p->len && rt_buf_hex_digit(p->s[p->pos]) >= 0)
                    v = v * 16 + rt_buf_hex_digit(p->s[p->pos++]), k++;
                if (k == 0) {
                    free(out);
                    return fail_at(p, esc, n, "\\x needs a hexadecimal digit");
                }
                out[o++] = (char)v;
                break;
            }
            case 'u': case 'U': {
                int want = c == 'u' ? 4 : 8;
                unsigned long cp = 0;
                for (int k = 0; k < want; k++) {
                    if (p->pos >= p->len || rt_buf_hex_digit(p->s[p->pos]) < 0) {
                        free(out);
                        return fail_at(p, esc, n, "\\u needs 4 and \\U 8 hexadecimal digits");
                    }
                    cp = cp * 16 + (unsigned long)rt_buf_hex_digit(p->s[p->pos++]);
                }
                if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                    free(out);
                    return fail_at(p, esc, n, "\\u names no Unicode character");
                }
                /* \uXXXX is 6 source bytes for at most 3 output bytes; \U
                 * 10 for 4: the output stays shorter than the source. */
                o += rt_buf_utf8_put(out + o, (uint32_t)cp);
                break;
            }
            default:
                if (c >= '0' && c <= '7') {
                    int v = c - '0', k = 1;
                    while (k < 3 && p->pos < p->len && p->s[p->pos] >= '0' &&
                           p->s[p->pos] <= '7')
                        v = v * 8 + (p->s[p->pos++] - '0'), k++;
                    if (v > 255) {
                        free(out);
                        return fail_at(p, esc, n, "octal escape over \\377");
                    }
                    out[o++] = (char)v;
                    break;
                }
                free(out);
                return fail_at(p, esc, n, "unknown escape in a string");
            }
        }
        n->val_end = p->pos;
        skip_space(p); /* "a" "b" is "ab" */
    }
    out[o] = '\0';
    n->kind = SRV_TP_STRING;
    n->text = out;
    n->len = o;
    n->val_off = start;
    return RT_OK;
}

/* Reads a number or an identifier (enum value, true, false, inf, nan). */
static rt_status read_bare(tp_parser *p, srv_tp_node *n)
{
    size_t start = p->pos;
    char c = p->s[p->pos];
    bool number = (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!number && !is_ident_start(c))
        return fail_at(p, start, n, "expected a value (a number, a quoted string or a name)");
    if (c == '-') {
        p->pos++;
        while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
            p->pos++; /* "- 5" is allowed by protobuf's tokenizer: refuse it, clearer */
        if (p->pos != start + 1)
            return fail_at(p, start, n, "no space allowed after '-'");
    }
    while (p->pos < p->len) {
        char d = p->s[p->pos];
        if (is_ident_char(d) || d == '.') {
            p->pos++;
        } else if ((d == '+' || d == '-') && number && p->pos > start &&
                   (p->s[p->pos - 1] == 'e' || p->s[p->pos - 1] == 'E') &&
                   !(p->pos - start >= 2 && p->s[start] == '0' &&
                     (p->s[start + 1] == 'x' || p->s[start + 1] == 'X'))) {
            p->pos++;
        } else {
            break;
        }
    }
    size_t tlen = p->pos - start;
    if (tlen == 1 && c == '-')
        return fail_at(p, start, n, "'-' must be followed by a number");
    if (tlen > 128)
        return fail_at(p, start, n, "value longer than 128 characters");
    n->text = malloc(tlen + 1);
    if (!n->text)
        return rt_err_set(p->err, RT_ERR_NOMEM, "text format: out of memory");
    memcpy(n->text, p->s + start, tlen);
    n->text[tlen] = '\0';
    n->len = tlen;
    n->kind = number && !(c == '-' && tlen > 1 && is_ident_start(p->s[start + 1]))
                  ? SRV_TP_NUMBER
                  : SRV_TP_IDENT;
    if (c == '-' && n->kind == SRV_TP_IDENT) /* -inf, -nan: numbers */
        n->kind = SRV_TP_NUMBER;
    n->val_off = start;
    n->val_end = p->pos;
    return RT_OK;
}

static rt_status read_scalar(tp_parser *p, srv_tp_node *n)
{
    if (p->pos >= p->len)
        return fail_at(p, p->pos, n, "expected a value, found the end of the file");
    char c = p->s[p->pos];
    if (c == '"' || c == '\'')
        return read_string(p, n);
    return read_bare(p, n);
}

static rt_status read_fields(tp_parser *p, srv_tp_node *msg, char close, int depth);

/* One field (at p->pos, an identifier) of message msg. */
static rt_status read_field(tp_parser *p, srv_tp_node *msg, int depth)
{
    size_t off = p->pos;
    if (p->s[off] == '[')
        return fail_at(p, off, msg, "extensions and Any ([type.name]) are not supported");
    if (!is_ident_start(p->s[off]))
        return fail_at(p, off, msg, "expected a field name");
    while (p->pos < p->len && is_ident_char(p->s[p->pos]))
        p->pos++;
    size_t nlen = p->pos - off;
    if (nlen > 128)
        return fail_at(p, off, msg, "field name longer than 128 characters");
    srv_tp_node *n = new_node(p, msg, p->s + off, nlen, off);
    if (!n)
        return p->node_st;
    skip_space(p);
    bool colon = false;
    if (p->pos < p->len && p->s[p->pos] == ':') {
        colon = true;
        p->pos++;
        skip_space(p);
    }
    if (p->pos < p->len && (p->s[p->pos] == '{' || p->s[p->pos] == '<')) {
        if (depth >= SRV_TP_MAX_DEPTH)
            return fail_at(p, p->pos, n, "nested deeper than the limit");
        char close = p->s[p->pos] == '{' ? '}' : '>';
        n->kind = SRV_TP_MESSAGE;
        n->val_off = p->pos++;
        rt_status st = read_fields(p, n, close, depth + 1);
        if (st != RT_OK)
            return st;
        n->val_end = p->pos; /* after the closing brace */
        return RT_OK;
    }
    if (!colon)
        return fail_at(p, p->pos, n, "expected ':' or '{' after the field name");
    if (p->pos < p->len && p->s[p->pos] == '[') {
        /* name: [v1, v2]: each value a field of its own, as if repeated. */
        size_t open = p->pos++;
        skip_space(p);
        if (p->pos < p->len && p->s[p->pos] == ']') {
            p->pos++;
            n->kind = SRV_TP_LIST_EMPTY;
            n->val_off = open;
            n->val_end = p->pos;
            return RT_OK;
        }
        srv_tp_node *cur = n;
        for (;;) {
            if (p->pos < p->len && (p->s[p->pos] == '{' || p->s[p->pos] == '<'))
                return fail_at(p, p->pos, n, "lists of messages are not supported");
            rt_status st = read_scalar(p, cur);
            if (st != RT_OK)
                return st;
            skip_space(p);
            if (p->pos < p->len && p->s[p->pos] == ']') {
                p->pos++;
                return RT_OK;
            }
            if (p->pos >= p->len || p->s[p->pos] != ',')
                return fail_at(p, open, n, "list not closed with ']'");
            p->pos++;
            skip_space(p);
            if (!(cur = new_node(p, msg, p->s + off, nlen, p->pos)))
                return p->node_st;
        }
    }
    return read_scalar(p, n);
}

static rt_status read_fields(tp_parser *p, srv_tp_node *msg, char close, int depth)
{
    size_t open = p->pos - 1;
    for (;;) {
        skip_space(p);
        if (p->pos >= p->len) {
            if (close)
                return fail_at(p, open, msg, close == '}' ? "'{' is never closed"
                                                          : "'<' is never closed");
            return RT_OK;
        }
        char c = p->s[p->pos];
        if (close && c == close) {
            p->pos++;
            return RT_OK;
        }
        if (c == '}' || c == '>')
            return fail_at(p, p->pos, msg, "unexpected closing bracket");
        rt_status st = read_field(p, msg, depth);
        if (st != RT_OK)
            return st;
        skip_space(p);
        if (p->pos < p->len && (p->s[p->pos] == ',' || p->s[p->pos] == ';'))
            p->pos++;
    }
}

void srv_tp_free(srv_tp_node *n)
{
    while (n) {
        srv_tp_node *next = n->next;
        srv_tp_free(n->child);
        free(n->name);
        free(n->text);
        free(n);
        n = next;
    }
}

rt_status srv_tp_parse(const char *text, size_t len, srv_tp_node **out, rt_err *err)
{
    *out = NULL;
    tp_parser p = {.s = text, .len = len, .line = 1, .err = err};
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\0')
            return fail_at(&p, i, NULL, "NUL byte in the text");
    srv_tp_node *root = calloc(1, sizeof *root);
    if (!root || !(root->name = calloc(1, 1))) {
        free(root);
        return rt_err_set(err, RT_ERR_NOMEM, "text format: out of memory");
    }
    root->kind = SRV_TP_MESSAGE;
    root->line = 1;
    root->col = 1;
    root->val_end = len;
    rt_status st = read_fields(&p, root, 0, 0);
    if (st != RT_OK) {
        srv_tp_free(root);
        return st;
    }
    *out = root;
    return RT_OK;
}

const srv_tp_node *srv_tp_get(const srv_tp_node *msg, const char *name)
{
    for (const srv_tp_node *c = msg ? msg->child : NULL; c; c = c->next)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

rt_status srv_tp_fail(const srv_tp_node *n, rt_err *err, const char *fmt, ...)
{
    char msg[RT_ERR_MAX], path[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    srv_tp_path(n, path, sizeof path);
    return rt_err_set(err, RT_ERR_INVALID, "line %d, column %d: %s%s%s", n ? n->line : 1,
                      n ? n->col : 1, path, path[0] ? ": " : "", msg);
}
