/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Varlink interface definition parser and JSON validator (see idl.h).
 *
 * Runs in the broker, as the peer's uid with no capabilities, and in
 * toolsctl. The interface text is our own (proto/io.toolsd.varlink, built in),
 * but the JSON validated against it is the peer's: validation allocates
 * nothing on success, recurses at most IDL_DEPTH_MAX levels, and builds the
 * path of the offending member only when it fails.
 *
 * Grammar (https://varlink.org/Interface-Definition), with whitespace and
 * "#" comments allowed between any two tokens:
 *
 *   interface  = "interface" name-of-interface member*
 *   member     = "type" Name struct-or-enum
 *              | "method" Name struct "->" struct
 *              | "error" Name struct
 *   type       = "?" nonopt | nonopt
 *   nonopt     = "[]" type | "[string]" type | element
 *   element    = bool | int | float | string | object | Name | struct-or-enum
 *   struct     = "(" [ field ":" type { "," field ":" type } ] ")"
 *   enum       = "(" field { "," field } ")"
 *
 * "?" and "[]" bind directly to what follows them, as in the reference
 * implementations: "? int" and "[] int" are refused.
 */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idl.h"
#include "macro.h"

/* Our interface is a few KiB; anything this large is not an interface. */
#define IDL_TEXT_MAX (1024u * 1024u)
/* Nesting of types in the text ("[][]?[string](a: (b: int))"). */
#define IDL_PARSE_DEPTH_MAX 64u
/* Nesting of JSON values under validation; named types may be recursive, so
 * the type alone does not bound it. Matches the codec's message depth. */
#define IDL_DEPTH_MAX 64u

enum idl_kind {
        IDL_BOOL,
        IDL_INT,
        IDL_FLOAT,
        IDL_STRING,
        IDL_OBJECT,
        IDL_NAMED,
        IDL_STRUCT,
        IDL_ENUM,
        IDL_ARRAY,
        IDL_MAP,
        IDL_OPTIONAL,
};

struct idl_field {
        char *name;
        struct idl_type *type;
};

struct idl_type {
        enum idl_kind kind;
        unsigned line;
        struct idl_type *inner;           /* ARRAY, MAP, OPTIONAL */
        char *name;                       /* NAMED */
        const struct idl_type *resolved;  /* NAMED: the typedef's struct or enum */
        struct idl_field *fields;         /* STRUCT */
        char **values;                    /* ENUM */
        size_t n;                         /* fields or values */
};

enum idl_member_kind {
        IDL_MEMBER_TYPE,
        IDL_MEMBER_METHOD,
        IDL_MEMBER_ERROR,
};

struct idl_member {
        enum idl_member_kind kind;
        char *name;
        unsigned line;
        struct idl_type *type;    /* TYPE, ERROR; METHOD: input */
        struct idl_type *output;  /* METHOD */
};

struct idl_interface {
        char *name;
        struct idl_member *members;
        size_t n_members;
};

/* ---- data structure ---------------------------------------------------- */

static void type_free(struct idl_type *t) {
        if (!t)
                return;
        type_free(t->inner);
        free(t->name);
        for (size_t i = 0; i < t->n; i++) {
                if (t->kind == IDL_STRUCT) {
                        free(t->fields[i].name);
                        type_free(t->fields[i].type);
                } else
                        free(t->values[i]);
        }
        free(t->fields);
        free(t->values);
        free(t);
}

static void type_freep(struct idl_type **t) {
        type_free(*t);
}
#define _cleanup_type_ _cleanup_(type_freep)

void idl_free(struct idl_interface *iface) {
        if (!iface)
                return;
        for (size_t i = 0; i < iface->n_members; i++) {
                free(iface->members[i].name);
                type_free(iface->members[i].type);
                type_free(iface->members[i].output);
        }
        free(iface->members);
        free(iface->name);
        free(iface);
}

static void idl_freep(struct idl_interface **iface) {
        idl_free(*iface);
}

/* Makes room for one more element in a growing array. */
static int grow(void **array, size_t n, size_t size) {
        /* Doubling keeps appends linear; the text bound keeps n small. */
        if (n == 0 || (n & (n - 1)) == 0) {
                size_t want = n == 0 ? 4 : n * 2;
                void *p = reallocarray(*array, want, size);
                if (!p)
                        return -ENOMEM;
                *array = p;
        }
        return 0;
}

static const struct idl_member *member_find(const struct idl_interface *iface,
                                            enum idl_member_kind kind, const char *name) {
        if (!iface || !name)
                return NULL;
        for (size_t i = 0; i < iface->n_members; i++)
                if (iface->members[i].kind == kind && strcmp(iface->members[i].name, name) == 0)
                        return &iface->members[i];
        return NULL;
}

const char *idl_name(const struct idl_interface *iface) {
        return iface ? iface->name : NULL;
}

bool idl_has_method(const struct idl_interface *iface, const char *method) {
        return member_find(iface, IDL_MEMBER_METHOD, method);
}

bool idl_has_error(const struct idl_interface *iface, const char *error) {
        return member_find(iface, IDL_MEMBER_ERROR, error);
}

/* ---- parser ------------------------------------------------------------ */

struct parser {
        const char *p;
        unsigned line;
        char *error;
};

_printf_(2, 3)
static int parser_fail(struct parser *ps, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(ps->error);
        if (asprintf(&ps->error, "line %u: %s", ps->line, what) < 0) {
                ps->error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

/* Skips blanks, newlines and comments; returns true when any was skipped. */
static bool skip_space(struct parser *ps) {
        const char *start = ps->p;

        for (;;) {
                char c = *ps->p;
                if (c == '\n') {
                        ps->line++;
                        ps->p++;
                } else if (c == ' ' || c == '\t' || c == '\r')
                        ps->p++;
                else if (c == '#') {
                        while (*ps->p && *ps->p != '\n')
                                ps->p++;
                } else
                        return ps->p != start;
        }
}

static bool is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c) {
        return is_alpha(c) || (c >= '0' && c <= '9');
}

/* The length of the word at p made of [A-Za-z0-9_]. */
static size_t word_len(const char *p) {
        size_t n = 0;
        while (is_alnum(p[n]) || p[n] == '_')
                n++;
        return n;
}

static bool word_is(const char *p, size_t n, const char *word) {
        return strlen(word) == n && strncmp(p, word, n) == 0;
}

/* [A-Za-z](_?[A-Za-z0-9])* */
static bool field_name_valid(const char *p, size_t n) {
        if (n == 0 || !is_alpha(p[0]) || p[n - 1] == '_')
                return false;
        for (size_t i = 1; i < n; i++)
                if (p[i] == '_' && p[i - 1] == '_')
                        return false;
        return true;
}

/* [A-Z][A-Za-z0-9]* */
static bool type_name_valid(const char *p, size_t n) {
        if (n == 0 || !(p[0] >= 'A' && p[0] <= 'Z'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!is_alnum(p[i]))
                        return false;
        return true;
}

/* Reverse-domain, two labels at least, labels of [A-Za-z0-9-] that neither
 * begin nor end with "-", the first beginning with a letter. */
static size_t interface_name_len(const char *p) {
        size_t n = 0, labels = 0;

        if (!is_alpha(p[0]))
                return 0;
        for (;;) {
                size_t start = n;
                while (is_alnum(p[n]) || p[n] == '-')
                        n++;
                if (n == start || p[start] == '-' || p[n - 1] == '-')
                        return 0;
                labels++;
                if (p[n] != '.')
                        break;
                n++;
        }
        return labels >= 2 ? n : 0;
}

static int expect_char(struct parser *ps, char c, const char *what) {
        skip_space(ps);
        if (*ps->p != c)
                return parser_fail(ps, "expected %s", what);
        ps->p++;
        return 0;
}

static int parse_type(struct parser *ps, unsigned depth, struct idl_type **ret);
static int parse_struct_or_enum(struct parser *ps, unsigned depth, struct idl_type **ret);

static int type_new(enum idl_kind kind, unsigned line, struct idl_type **ret) {
        struct idl_type *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->kind = kind;
        t->line = line;
        *ret = t;
        return 0;
}

static const struct {
        const char *word;
        enum idl_kind kind;
} builtin_types[] = {
        { "bool", IDL_BOOL },
        { "int", IDL_INT },
        { "float", IDL_FLOAT },
        { "string", IDL_STRING },
        { "object", IDL_OBJECT },
};

/* A builtin, a type name or an inline struct or enum. */
static int parse_element(struct parser *ps, unsigned depth, struct idl_type **ret) {
        size_t n = word_len(ps->p);
        int r;

        if (*ps->p == '(')
                return parse_struct_or_enum(ps, depth, ret);

        for (size_t i = 0; i < ELEMENTSOF(builtin_types); i++)
                if (word_is(ps->p, n, builtin_types[i].word)) {
                        r = type_new(builtin_types[i].kind, ps->line, ret);
                        if (r < 0)
                                return r;
                        ps->p += n;
                        return 0;
                }

        if (!type_name_valid(ps->p, n))
                return parser_fail(ps, "expected a type (bool, int, float, string, object, "
                                   "a type name, \"(\", \"?\", \"[]\" or \"[string]\")");

        _cleanup_type_ struct idl_type *t = NULL;
        r = type_new(IDL_NAMED, ps->line, &t);
        if (r < 0)
                return r;
        t->name = strndup(ps->p, n);
        if (!t->name)
                return -ENOMEM;
        ps->p += n;
        *ret = TAKE_PTR(t);
        return 0;
}

static int parse_type(struct parser *ps, unsigned depth, struct idl_type **ret) {
        _cleanup_type_ struct idl_type *t = NULL;
        enum idl_kind kind;
        int r;

        if (depth >= IDL_PARSE_DEPTH_MAX)
                return parser_fail(ps, "types nested too deeply");

        if (*ps->p == '?') {
                if (ps->p[1] == '?')
                        return parser_fail(ps, "expected a type after \"?\", not another \"?\"");
                kind = IDL_OPTIONAL;
                ps->p += 1;
        } else if (strncmp(ps->p, "[]", 2) == 0) {
                kind = IDL_ARRAY;
                ps->p += 2;
        } else if (strncmp(ps->p, "[string]", 8) == 0) {
                kind = IDL_MAP;
                ps->p += 8;
        } else
                return parse_element(ps, depth + 1, ret);

        r = type_new(kind, ps->line, &t);
        if (r < 0)
                return r;
        r = parse_type(ps, depth + 1, &t->inner);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(t);
        return 0;
}

/* Reads a field or enum name at the current position. */
static int parse_field_name(struct parser *ps, const char **ret, size_t *ret_len) {
        size_t n;

        skip_space(ps);
        n = word_len(ps->p);
        if (!field_name_valid(ps->p, n))
                return parser_fail(ps, "expected a field name");
        *ret = ps->p;
        *ret_len = n;
        ps->p += n;
        return 0;
}

static int struct_add_name(struct parser *ps, struct idl_type *t, const char *name, size_t n) {
        char *s;
        int r;

        for (size_t i = 0; i < t->n; i++) {
                const char *have = t->kind == IDL_STRUCT ? t->fields[i].name : t->values[i];
                if (word_is(name, n, have))
                        return parser_fail(ps, "duplicate %s '%.*s'",
                                           t->kind == IDL_STRUCT ? "field" : "enum value",
                                           (int) MIN(n, 64u), name);
        }

        s = strndup(name, n);
        if (!s)
                return -ENOMEM;
        if (t->kind == IDL_STRUCT) {
                r = grow((void **) &t->fields, t->n, sizeof(*t->fields));
                if (r >= 0)
                        t->fields[t->n] = (struct idl_field) { .name = s };
        } else {
                r = grow((void **) &t->values, t->n, sizeof(*t->values));
                if (r >= 0)
                        t->values[t->n] = s;
        }
        if (r < 0) {
                free(s);
                return r;
        }
        t->n++;
        return 0;
}

/* One item of a struct or enum, after which comes "," or ")". */
static int parse_item(struct parser *ps, unsigned depth, struct idl_type *t,
                      const char *name, size_t n) {
        int r;

        r = struct_add_name(ps, t, name, n);
        if (r < 0)
                return r;
        if (t->kind == IDL_ENUM)
                return 0;

        r = expect_char(ps, ':', "\":\" after the field name");
        if (r < 0)
                return r;
        skip_space(ps);
        return parse_type(ps, depth, &t->fields[t->n - 1].type);
}

/* At "(". The first item decides: a bare name makes an enum, anything else a
 * struct; "()" is the empty struct. */
static int parse_struct_or_enum(struct parser *ps, unsigned depth, struct idl_type **ret) {
        _cleanup_type_ struct idl_type *t = NULL;
        const char *name = NULL;
        size_t n = 0;
        int r;

        r = type_new(IDL_STRUCT, ps->line, &t);
        if (r < 0)
                return r;
        ps->p++;
        skip_space(ps);
        if (*ps->p == ')') {
                ps->p++;
                *ret = TAKE_PTR(t);
                return 0;
        }

        for (bool first = true;; first = false) {
                r = parse_field_name(ps, &name, &n);
                if (r < 0)
                        return r;
                skip_space(ps);
                if (first && (*ps->p == ',' || *ps->p == ')'))
                        t->kind = IDL_ENUM;
                r = parse_item(ps, depth, t, name, n);
                if (r < 0)
                        return r;
                skip_space(ps);
                if (*ps->p == ')')
                        break;
                if (*ps->p != ',')
                        return parser_fail(ps, "expected \",\" or \")\"");
                ps->p++;
        }
        ps->p++;
        *ret = TAKE_PTR(t);
        return 0;
}

static int parse_struct(struct parser *ps, struct idl_type **ret) {
        _cleanup_type_ struct idl_type *t = NULL;
        int r;

        skip_space(ps);
        if (*ps->p != '(')
                return parser_fail(ps, "expected \"(\"");
        r = parse_struct_or_enum(ps, 0, &t);
        if (r < 0)
                return r;
        if (t->kind != IDL_STRUCT)
                return parser_fail(ps, "expected a struct, not an enum");
        *ret = TAKE_PTR(t);
        return 0;
}

static int parse_member_body(struct parser *ps, struct idl_member *m) {
        int r;

        switch (m->kind) {
        case IDL_MEMBER_TYPE:
                skip_space(ps);
                if (*ps->p != '(')
                        return parser_fail(ps, "expected \"(\"");
                return parse_struct_or_enum(ps, 0, &m->type);
        case IDL_MEMBER_ERROR:
                return parse_struct(ps, &m->type);
        case IDL_MEMBER_METHOD:
                r = parse_struct(ps, &m->type);
                if (r < 0)
                        return r;
                skip_space(ps);
                if (strncmp(ps->p, "->", 2) != 0)
                        return parser_fail(ps, "expected \"->\"");
                ps->p += 2;
                return parse_struct(ps, &m->output);
        default:
                return -EINVAL;
        }
}

static int parse_member(struct parser *ps, struct idl_interface *iface) {
        static const char *const keywords[] = {
                [IDL_MEMBER_TYPE] = "type",
                [IDL_MEMBER_METHOD] = "method",
                [IDL_MEMBER_ERROR] = "error",
        };
        struct idl_member m = { .line = ps->line };
        size_t n = word_len(ps->p), i;
        int r;

        for (i = 0; i < ELEMENTSOF(keywords); i++)
                if (word_is(ps->p, n, keywords[i]))
                        break;
        if (i == ELEMENTSOF(keywords))
                return parser_fail(ps, "expected \"type\", \"method\" or \"error\"");
        m.kind = (enum idl_member_kind) i;
        ps->p += n;
        if (!skip_space(ps))
                return parser_fail(ps, "expected a blank after \"%s\"", keywords[i]);

        n = word_len(ps->p);
        if (!type_name_valid(ps->p, n))
                return parser_fail(ps, "expected a name after \"%s\" (a capital letter, "
                                   "then letters and digits)", keywords[i]);
        for (size_t j = 0; j < iface->n_members; j++)
                if (word_is(ps->p, n, iface->members[j].name))
                        return parser_fail(ps, "duplicate member '%.*s'", (int) MIN(n, 64u), ps->p);

        r = grow((void **) &iface->members, iface->n_members, sizeof(*iface->members));
        if (r < 0)
                return r;
        m.name = strndup(ps->p, n);
        if (!m.name)
                return -ENOMEM;
        ps->p += n;
        /* Owned by iface from here on, so a failure below frees it too. */
        iface->members[iface->n_members++] = m;
        return parse_member_body(ps, &iface->members[iface->n_members - 1]);
}

static int parse_interface_line(struct parser *ps, struct idl_interface *iface) {
        size_t n;

        skip_space(ps);
        n = word_len(ps->p);
        if (!word_is(ps->p, n, "interface"))
                return parser_fail(ps, "expected \"interface\"");
        ps->p += n;
        if (!skip_space(ps))
                return parser_fail(ps, "expected a blank after \"interface\"");
        n = interface_name_len(ps->p);
        if (n == 0)
                return parser_fail(ps, "expected an interface name (e.g. org.example.service)");
        iface->name = strndup(ps->p, n);
        if (!iface->name)
                return -ENOMEM;
        ps->p += n;
        return 0;
}

/* Points every named type at its typedef, now that all are known. */
static int resolve_type(struct parser *ps, const struct idl_interface *iface, struct idl_type *t) {
        const struct idl_member *m;
        int r;

        if (!t)
                return 0;
        if (t->kind == IDL_NAMED) {
                m = member_find(iface, IDL_MEMBER_TYPE, t->name);
                if (!m) {
                        ps->line = t->line;
                        return parser_fail(ps, "unknown type '%.64s'", t->name);
                }
                t->resolved = m->type;
        }
        r = resolve_type(ps, iface, t->inner);
        if (r < 0)
                return r;
        for (size_t i = 0; t->kind == IDL_STRUCT && i < t->n; i++) {
                r = resolve_type(ps, iface, t->fields[i].type);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int resolve_all(struct parser *ps, const struct idl_interface *iface) {
        int r;

        for (size_t i = 0; i < iface->n_members; i++) {
                r = resolve_type(ps, iface, iface->members[i].type);
                if (r < 0)
                        return r;
                r = resolve_type(ps, iface, iface->members[i].output);
                if (r < 0)
                        return r;
        }
        return 0;
}

int idl_parse(const char *text, struct idl_interface **ret, char **ret_error) {
        _cleanup_(idl_freep) struct idl_interface *iface = NULL;
        struct parser ps = { .p = text, .line = 1 };
        int r;

        if (!text || !ret)
                return -EINVAL;
        if (strnlen(text, IDL_TEXT_MAX + 1) > IDL_TEXT_MAX) {
                if (ret_error)
                        *ret_error = strdup("interface description too large");
                return -E2BIG;
        }

        iface = calloc(1, sizeof(*iface));
        if (!iface)
                return -ENOMEM;

        r = parse_interface_line(&ps, iface);
        while (r >= 0) {
                skip_space(&ps);
                if (*ps.p == '\0')
                        break;
                r = parse_member(&ps, iface);
        }
        if (r >= 0)
                r = resolve_all(&ps, iface);
        if (r < 0) {
                if (ret_error && ps.error)
                        *ret_error = TAKE_PTR(ps.error);
                free(ps.error);
                return r;
        }

        *ret = TAKE_PTR(iface);
        return 0;
}

/* ---- validator --------------------------------------------------------- */

/* The way from the parameters to the value under check, kept on the stack
 * and spelled out only when a check fails. */
struct path {
        const struct path *parent;
        const char *key;   /* member or map key, or NULL for an index */
        size_t index;
};

static size_t path_write(const struct path *p, char *buf) {
        char index[32];
        const char *s;
        size_t n, len;

        if (!p)
                return 0;
        n = path_write(p->parent, buf);
        if (p->key) {
                if (p->parent) {
                        if (buf)
                                buf[n] = '.';
                        n++;
                }
                s = p->key;
        } else {
                (void) snprintf(index, sizeof(index), "[%zu]", p->index);
                s = index;
        }
        len = strlen(s);
        if (buf)
                memcpy(buf + n, s, len);
        return n + len;
}

static int path_fail(const struct path *p, char **ret_field) {
        char *s;
        size_t n;

        if (!ret_field)
                return -EINVAL;
        if (!p) {
                /* The parameters themselves are not an object. */
                s = strdup("parameters");
                if (!s)
                        return -ENOMEM;
                *ret_field = s;
                return -EINVAL;
        }
        n = path_write(p, NULL);
        s = malloc(n + 1);
        if (!s)
                return -ENOMEM;
        n = path_write(p, s);
        s[n] = '\0';
        *ret_field = s;
        return -EINVAL;
}

static int validate_value(const struct idl_type *t, struct json_object *v, unsigned depth,
                          const struct path *p, char **ret_field);

static int validate_struct(const struct idl_type *t, struct json_object *v, unsigned depth,
                           const struct path *p, char **ret_field) {
        int r;

        if (!json_object_is_type(v, json_type_object))
                return path_fail(p, ret_field);

        json_object_object_foreach(v, key, val) {
                bool known = false;
                (void) val;
                for (size_t i = 0; i < t->n && !known; i++)
                        known = strcmp(t->fields[i].name, key) == 0;
                if (!known)
                        return path_fail(&(struct path) { .parent = p, .key = key }, ret_field);
        }

        for (size_t i = 0; i < t->n; i++) {
                struct json_object *field = NULL;
                const struct path fp = { .parent = p, .key = t->fields[i].name };

                /* Absent and null alike leave field NULL. */
                (void) json_object_object_get_ex(v, t->fields[i].name, &field);
                r = validate_value(t->fields[i].type, field, depth + 1, &fp, ret_field);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int validate_enum(const struct idl_type *t, struct json_object *v,
                         const struct path *p, char **ret_field) {
        const char *s;

        if (!json_object_is_type(v, json_type_string))
                return path_fail(p, ret_field);
        s = json_object_get_string(v);
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->values[i], s) == 0)
                        return 0;
        return path_fail(p, ret_field);
}

static int validate_array(const struct idl_type *t, struct json_object *v, unsigned depth,
                          const struct path *p, char **ret_field) {
        size_t n;
        int r;

        if (!json_object_is_type(v, json_type_array))
                return path_fail(p, ret_field);
        n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
                const struct path ep = { .parent = p, .index = i };
                r = validate_value(t->inner, json_object_array_get_idx(v, i), depth + 1, &ep,
                                   ret_field);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int validate_map(const struct idl_type *t, struct json_object *v, unsigned depth,
                        const struct path *p, char **ret_field) {
        int r;

        if (!json_object_is_type(v, json_type_object))
                return path_fail(p, ret_field);
        json_object_object_foreach(v, key, val) {
                const struct path ep = { .parent = p, .key = key };
                r = validate_value(t->inner, val, depth + 1, &ep, ret_field);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool is_number(struct json_object *v) {
        if (json_object_is_type(v, json_type_int))
                return true;
        /* JSON has no NaN or infinity, though json-c reads them. */
        return json_object_is_type(v, json_type_double) && isfinite(json_object_get_double(v));
}

static int validate_value(const struct idl_type *t, struct json_object *v, unsigned depth,
                          const struct path *p, char **ret_field) {
        bool ok;

        if (depth > IDL_DEPTH_MAX)
                return path_fail(p, ret_field);
        if (t->kind == IDL_OPTIONAL) {
                if (!v)
                        return 0;
                t = t->inner;
        }
        if (!v)
                return path_fail(p, ret_field);
        if (t->kind == IDL_NAMED)
                t = t->resolved;

        switch (t->kind) {
        case IDL_BOOL:
                ok = json_object_is_type(v, json_type_boolean);
                break;
        case IDL_INT:
                ok = json_object_is_type(v, json_type_int);
                break;
        case IDL_FLOAT:
                ok = is_number(v);
                break;
        case IDL_STRING:
                ok = json_object_is_type(v, json_type_string);
                break;
        case IDL_OBJECT:
                ok = json_object_is_type(v, json_type_object);
                break;
        case IDL_STRUCT:
                return validate_struct(t, v, depth, p, ret_field);
        case IDL_ENUM:
                return validate_enum(t, v, p, ret_field);
        case IDL_ARRAY:
                return validate_array(t, v, depth, p, ret_field);
        case IDL_MAP:
                return validate_map(t, v, depth, p, ret_field);
        case IDL_OPTIONAL:   /* "??T" is refused by the parser */
        case IDL_NAMED:      /* typedefs are structs or enums */
        default:
                ok = false;
                break;
        }
        return ok ? 0 : path_fail(p, ret_field);
}

static int validate_params(const struct idl_type *t, struct json_object *params,
                           char **ret_field) {
        _cleanup_json_ struct json_object *empty = NULL;

        if (!params) {
                empty = json_object_new_object();
                if (!empty)
                        return -ENOMEM;
                params = empty;
        }
        return validate_struct(t, params, 0, NULL, ret_field);
}

int idl_validate_method(const struct idl_interface *iface, const char *method, bool is_input,
                        struct json_object *params, char **ret_field) {
        const struct idl_member *m = member_find(iface, IDL_MEMBER_METHOD, method);

        if (!m)
                return -ENOENT;
        return validate_params(is_input ? m->type : m->output, params, ret_field);
}

int idl_validate_error(const struct idl_interface *iface, const char *error,
                       struct json_object *params, char **ret_field) {
        const struct idl_member *m = member_find(iface, IDL_MEMBER_ERROR, error);

        if (!m)
                return -ENOENT;
        return validate_params(m->type, params, ret_field);
}
