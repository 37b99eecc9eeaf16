/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Command profiles: the allowlist of argv shapes a run_shell command must
 * match, loaded from the admin's profiles.d and matched against the model's
 * argv. The file format is described in docs/profiles.md.
 *
 * Runs in the broker (as the peer's uid, no capabilities). Loading reads the
 * admin's files; matching is a pure function of the loaded set and the argv:
 * it never touches the filesystem, it only marks which words the caller must
 * put through policy_path_check().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"

#define PROFILE_NAME_MAX 64
#define PROFILE_FILE_MAX (1024u * 1024u)
#define PROFILE_FILES_MAX 256
#define PROFILE_SET_MAX 256             /* profiles in one set */
#define SHAPE_WORDS_MAX 64
#define SHAPE_OPTIONALS_MAX 8           /* the matcher tries 2^n ways */
#define INT_DIGITS_MAX 18               /* fits in int64 */
#define SHOWN_ARGV_MAX 256              /* bytes of the argv quoted in a refusal */
#define SHOWN_PROGRAM_MAX 64
#define SHOWN_SHAPES_MAX 8              /* shapes listed when the program is unknown */

enum elem_kind {
        ELEM_LITERAL,
        ELEM_FILE,
        ELEM_PATH,
        ELEM_INT,
        ELEM_NEG_INT,
        ELEM_WORD,
        ELEM_ARG,
        ELEM_ARGS,
};

struct elem {
        enum elem_kind kind;
        bool optional;
        unsigned opt_bit;       /* which bit of a way's mask says it was taken */
        char **alts;            /* ELEM_LITERAL: the alternatives */
};

struct shape {
        char *text;             /* as written, blanks collapsed */
        char *reason;           /* deny rules only */
        struct elem *elems;
        size_t n_elems;
        size_t min_words, max_words;
};

/* A profile's allow lines and includes in file order: the order of its
 * flattened shapes follows it. */
struct item {
        bool is_include;
        size_t index;           /* into shapes, or into the set's profiles */
        char *include;          /* the name as written */
        const char *file;
        unsigned line;
};

struct profile {
        char *name;
        const char *file;
        unsigned line;
        bool shell;             /* "shell": a /bin/sh -c string, no shapes */
        struct shape *shapes;   /* own allow shapes */
        size_t n_shapes, cap_shapes;
        struct shape *denies;   /* own deny rules; never inherited */
        size_t n_denies, cap_denies;
        struct item *items;
        size_t n_items, cap_items;
        const struct shape **flat; /* allow shapes with includes, in order */
        size_t n_flat;
        const char **flat_text; /* NULL-terminated */
};

struct profile_set {
        struct profile **profiles;
        size_t n_profiles;
        char **files;           /* names for error messages, owned here */
        size_t n_files;
};

static const struct {
        const char *word;
        enum elem_kind kind;
} placeholders[] = {
        { "<file>", ELEM_FILE },
        { "<path>", ELEM_PATH },
        { "<int>", ELEM_INT },
        { "<-int>", ELEM_NEG_INT },
        { "<word>", ELEM_WORD },
        { "<arg>", ELEM_ARG },
        { "<args>...", ELEM_ARGS },
};

/* ---- small helpers ---- */

static bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static int grow(void *p, size_t *cap, size_t want, size_t size) {
        void **a = p;
        if (want <= *cap)
                return 0;
        size_t n = MAX(want, *cap * 2);
        n = MAX(n, (size_t) 8);
        void *q = reallocarray(*a, n, size);
        if (!q)
                return -ENOMEM;
        *a = q;
        *cap = n;
        return 0;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid:
 * overlongs, surrogates and values above U+10FFFF are invalid. */
static size_t utf8_len(const unsigned char *s, size_t n, uint32_t *ret_cp) {
        size_t len;
        uint32_t cp, min;

        if (n == 0)
                return 0;
        if (s[0] < 0x80) {
                *ret_cp = s[0];
                return 1;
        }
        if ((s[0] & 0xe0) == 0xc0)
                len = 2, cp = s[0] & 0x1f, min = 0x80;
        else if ((s[0] & 0xf0) == 0xe0)
                len = 3, cp = s[0] & 0x0f, min = 0x800;
        else if ((s[0] & 0xf8) == 0xf0)
                len = 4, cp = s[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (n < len)
                return 0;
        for (size_t k = 1; k < len; k++) {
                if ((s[k] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret_cp = cp;
        return len;
}

static bool is_control(uint32_t cp) {
        return cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* Next blank-separated word of [*s, end): its start and length; false at the end. */
static bool next_word(const char **s, const char *end, const char **ret_w, size_t *ret_n) {
        const char *p = *s;
        while (p < end && is_blank(*p))
                p++;
        if (p == end)
                return false;
        const char *w = p;
        while (p < end && !is_blank(*p))
                p++;
        *ret_w = w;
        *ret_n = (size_t) (p - w);
        *s = p;
        return true;
}

/* ---- freeing ---- */

static void shape_done(struct shape *s) {
        for (size_t i = 0; i < s->n_elems; i++)
                strv_free(s->elems[i].alts);
        free(s->elems);
        free(s->text);
        free(s->reason);
}

static void profile_free(struct profile *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n_shapes; i++)
                shape_done(&p->shapes[i]);
        for (size_t i = 0; i < p->n_denies; i++)
                shape_done(&p->denies[i]);
        for (size_t i = 0; i < p->n_items; i++)
                free(p->items[i].include);
        free(p->shapes);
        free(p->denies);
        free(p->items);
        free(p->flat);
        free(p->flat_text);
        free(p->name);
        free(p);
}

static inline void profile_freep(struct profile **p) {
        profile_free(*p);
}

void profile_set_free(struct profile_set *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_profiles; i++)
                profile_free(s->profiles[i]);
        free(s->profiles);
        for (size_t i = 0; i < s->n_files; i++)
                free(s->files[i]);
        free(s->files);
        free(s);
}

static inline void profile_set_freep(struct profile_set **s) {
        profile_set_free(*s);
}

/* ---- parsing ---- */

struct parser {
        struct profile_set *set;
        const char *file;
        unsigned line;
        struct profile *cur;
        size_t cap_profiles;
        char **error;
};

/* Sets *ret_error to "WHERE: what" (a load stops at its first error, so it
 * is set once); returns -EINVAL (-ENOMEM if the message cannot be built). */
_printf_(3, 0)
static int verror(char **ret_error, const char *where, const char *fmt, va_list ap) {
        _cleanup_free_ char *what = NULL;
        char *m;

        if (!ret_error)
                return -EINVAL;
        if (vasprintf(&what, fmt, ap) < 0 || asprintf(&m, "%s: %s", where, what) < 0)
                return -ENOMEM;
        *ret_error = m;
        return -EINVAL;
}

_printf_(3, 4)
static int error_at(char **ret_error, const char *where, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = verror(ret_error, where, fmt, ap);
        va_end(ap);
        return r;
}

_printf_(4, 5)
static int error_line(char **ret_error, const char *file, unsigned line, const char *fmt, ...) {
        _cleanup_free_ char *where = NULL;
        va_list ap;
        int r;

        if (ret_error && asprintf(&where, "%s:%u", file, line) < 0)
                return -ENOMEM;
        va_start(ap, fmt);
        r = verror(ret_error, where, fmt, ap);
        va_end(ap);
        return r;
}

#define parse_error(p, ...) error_line((p)->error, (p)->file, (p)->line, __VA_ARGS__)

static bool name_valid(const char *w, size_t n) {
        if (n == 0 || n > PROFILE_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = w[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                          (i > 0 && (c == '_' || c == '-' || c == '.'));
                if (!ok)
                        return false;
        }
        return true;
}

static int parse_literal(struct parser *p, const char *w, size_t n, const char *word, size_t wn,
                         struct elem *e) {
        _cleanup_strv_free_ char **alts = NULL;
        size_t n_alts = 0;

        for (size_t i = 0; i <= n; i++)
                if (i == n || w[i] == '|')
                        n_alts++;
        alts = calloc(n_alts + 1, sizeof(char *));
        if (!alts)
                return -ENOMEM;
        for (size_t k = 0, start = 0, i = 0; i <= n; i++) {
                if (i < n && w[i] != '|')
                        continue;
                if (i == start)
                        return parse_error(p, "empty alternative in '%.*s'", (int) wn, word);
                alts[k] = strndup(w + start, i - start);
                if (!alts[k++])
                        return -ENOMEM;
                start = i + 1;
        }
        if (memchr(w, '<', n) || memchr(w, '>', n))
                return parse_error(p, "'<' or '>' in '%.*s': a placeholder stands alone as a word",
                                   (int) wn, word);
        e->kind = ELEM_LITERAL;
        e->alts = TAKE_PTR(alts);
        return 0;
}

static int parse_elem(struct parser *p, const char *word, size_t wn, struct elem *e) {
        const char *w = word;
        size_t n = wn;

        *e = (struct elem) {};
        if (w[0] == '[') {
                if (n < 3 || w[n - 1] != ']')
                        return parse_error(p, "'%.*s': an optional word is written [x]", (int) wn, word);
                w++;
                n -= 2;
                e->optional = true;
        }
        if (memchr(w, '[', n) || memchr(w, ']', n))
                return parse_error(p, "stray or nested bracket in '%.*s'", (int) wn, word);
        if (w[0] != '<')
                return parse_literal(p, w, n, word, wn, e);
        for (size_t i = 0; i < ELEMENTSOF(placeholders); i++)
                if (strlen(placeholders[i].word) == n && memcmp(placeholders[i].word, w, n) == 0) {
                        e->kind = placeholders[i].kind;
                        if (e->kind == ELEM_ARGS && e->optional)
                                return parse_error(p, "<args>... cannot be optional: it already matches nothing");
                        return 0;
                }
        return parse_error(p, "unknown placeholder '%.*s'", (int) wn, word);
}

static int shape_check(struct parser *p, const struct shape *s) {
        const struct elem *first = &s->elems[0];

        if (first->kind != ELEM_LITERAL || first->optional)
                return parse_error(p, "a shape must start with a program name");
        for (char **a = first->alts; *a; a++)
                if (strchr(*a, '/'))
                        return parse_error(p, "program '%s' must be a bare name: the sandbox PATH decides what runs",
                                           *a);
        for (size_t i = 0; i + 1 < s->n_elems; i++)
                if (s->elems[i].kind == ELEM_ARGS)
                        return parse_error(p, "<args>... must be the last word of a shape");
        return 0;
}

/* Parses the words of [s, end) into *ret. */
static int parse_shape(struct parser *p, const char *s, const char *end, struct shape *ret) {
        _cleanup_free_ struct elem *elems = NULL;
        _cleanup_free_ char *text = NULL;
        struct shape shape = {};
        const char *w;
        size_t wn, text_len = 0;
        unsigned n_opt = 0;
        int r;

        elems = calloc(SHAPE_WORDS_MAX, sizeof(struct elem));
        text = malloc((size_t) (end - s) + 1);
        if (!elems || !text)
                return -ENOMEM;
        shape.elems = elems;
        while (next_word(&s, end, &w, &wn)) {
                if (shape.n_elems == SHAPE_WORDS_MAX) {
                        r = parse_error(p, "a shape has at most %d words", SHAPE_WORDS_MAX);
                        goto fail;
                }
                r = parse_elem(p, w, wn, &elems[shape.n_elems]);
                if (r < 0)
                        goto fail;
                struct elem *e = &elems[shape.n_elems++];
                if (e->optional) {
                        if (n_opt == SHAPE_OPTIONALS_MAX) {
                                r = parse_error(p, "a shape has at most %d optional words", SHAPE_OPTIONALS_MAX);
                                goto fail;
                        }
                        e->opt_bit = n_opt++;
                } else if (e->kind != ELEM_ARGS)
                        shape.min_words++;
                if (text_len > 0)
                        text[text_len++] = ' ';
                memcpy(text + text_len, w, wn);
                text_len += wn;
        }
        if (shape.n_elems == 0) {
                r = parse_error(p, "a rule needs a shape");
                goto fail;
        }
        r = shape_check(p, &shape);
        if (r < 0)
                goto fail;
        text[text_len] = 0;
        shape.max_words = elems[shape.n_elems - 1].kind == ELEM_ARGS ? SIZE_MAX : shape.n_elems;
        shape.elems = reallocarray(elems, shape.n_elems, sizeof(struct elem));
        if (!shape.elems) {
                shape.elems = elems;
                r = -ENOMEM;
                goto fail;
        }
        elems = NULL;
        shape.text = TAKE_PTR(text);
        *ret = shape;
        return 0;
fail:
        shape.elems = NULL;
        for (size_t i = 0; i < shape.n_elems; i++)
                strv_free(elems[i].alts);
        return r;
}

static struct profile *set_lookup(const struct profile_set *s, const char *name, size_t *ret_index) {
        for (size_t i = 0; i < s->n_profiles; i++)
                if (streq(s->profiles[i]->name, name)) {
                        if (ret_index)
                                *ret_index = i;
                        return s->profiles[i];
                }
        return NULL;
}

static int parse_profile_line(struct parser *p, const char *rest, const char *end) {
        _cleanup_(profile_freep) struct profile *np = NULL;
        _cleanup_free_ char *name = NULL;
        const char *w, *extra;
        size_t wn, xn;

        if (!next_word(&rest, end, &w, &wn) || next_word(&rest, end, &extra, &xn))
                return parse_error(p, "'profile' takes one name");
        if (!name_valid(w, wn))
                return parse_error(p, "invalid profile name '%.*s' (letters, digits, _ - ., at most %d)",
                                   (int) wn, w, PROFILE_NAME_MAX);
        name = strndup(w, wn);
        if (!name)
                return -ENOMEM;
        const struct profile *old = set_lookup(p->set, name, NULL);
        if (old)
                return parse_error(p, "duplicate profile '%s' (first defined at %s:%u)", name, old->file,
                                   old->line);
        if (p->set->n_profiles == PROFILE_SET_MAX)
                return parse_error(p, "more than %d profiles", PROFILE_SET_MAX);
        if (grow(&p->set->profiles, &p->cap_profiles, p->set->n_profiles + 1, sizeof(struct profile *)) < 0)
                return -ENOMEM;
        np = calloc(1, sizeof(struct profile));
        if (!np)
                return -ENOMEM;
        np->name = TAKE_PTR(name);
        np->file = p->file;
        np->line = p->line;
        p->cur = np;
        p->set->profiles[p->set->n_profiles++] = TAKE_PTR(np);
        return 0;
}

static int add_item(struct parser *p, bool is_include, size_t index, char *include) {
        struct profile *c = p->cur;

        if (c->n_items >= 2 * PROFILE_SHAPES_MAX)
                return parse_error(p, "too many lines in profile '%s'", c->name);
        if (grow(&c->items, &c->cap_items, c->n_items + 1, sizeof(struct item)) < 0)
                return -ENOMEM;
        c->items[c->n_items++] = (struct item) {
                .is_include = is_include,
                .index = index,
                .include = include,
                .file = p->file,
                .line = p->line,
        };
        return 0;
}

static int parse_include_line(struct parser *p, const char *rest, const char *end) {
        const char *w, *extra;
        size_t wn, xn;
        char *name;
        int r;

        if (!next_word(&rest, end, &w, &wn) || next_word(&rest, end, &extra, &xn))
                return parse_error(p, "'include' takes one profile name");
        if (!name_valid(w, wn))
                return parse_error(p, "invalid profile name '%.*s'", (int) wn, w);
        name = strndup(w, wn);
        if (!name)
                return -ENOMEM;
        r = add_item(p, true, 0, name);
        if (r < 0)
                free(name);
        return r;
}

static int parse_allow_line(struct parser *p, const char *rest, const char *end) {
        struct profile *c = p->cur;
        struct shape s;
        int r;

        if (c->n_shapes == PROFILE_SHAPES_MAX)
                return parse_error(p, "more than %d shapes in profile '%s'", PROFILE_SHAPES_MAX, c->name);
        r = parse_shape(p, rest, end, &s);
        if (r < 0)
                return r;
        r = add_item(p, false, c->n_shapes, NULL);
        if (r >= 0)
                r = grow(&c->shapes, &c->cap_shapes, c->n_shapes + 1, sizeof(struct shape));
        if (r < 0) {
                shape_done(&s);
                return r;
        }
        c->shapes[c->n_shapes++] = s;
        return 0;
}

static int parse_deny_line(struct parser *p, const char *rest, const char *end) {
        struct profile *c = p->cur;
        const char *s = rest, *w, *sep = NULL;
        size_t wn;
        struct shape shape;
        int r;

        /* the first word "--" ends the shape: a deny shape cannot hold "--" */
        while (next_word(&s, end, &w, &wn))
                if (wn == 2 && memcmp(w, "--", 2) == 0) {
                        sep = w;
                        break;
                }
        const char *reason = sep ? sep + 2 : end;
        while (reason < end && is_blank(*reason))
                reason++;
        if (reason == end)
                return parse_error(p, "'deny' needs a reason: deny SHAPE -- REASON");
        if (c->n_denies == PROFILE_SHAPES_MAX)
                return parse_error(p, "more than %d deny rules in profile '%s'", PROFILE_SHAPES_MAX, c->name);
        r = parse_shape(p, rest, sep, &shape);
        if (r < 0)
                return r;
        shape.reason = strndup(reason, (size_t) (end - reason));
        if (!shape.reason || grow(&c->denies, &c->cap_denies, c->n_denies + 1, sizeof(struct shape)) < 0) {
                shape_done(&shape);
                return -ENOMEM;
        }
        c->denies[c->n_denies++] = shape;
        return 0;
}

/* "shell": the profile runs the command string as /bin/sh -c after the
 * denylist check. Alone in its profile: shapes and a shell cannot both
 * decide. */
static int parse_shell_line(struct parser *p, const char *rest, const char *end) {
        const char *w;
        size_t wn;

        if (next_word(&rest, end, &w, &wn))
                return parse_error(p, "'shell' takes no argument");
        if (p->cur->n_items > 0 || p->cur->n_denies > 0)
                return parse_error(p, "'shell' in profile '%s', which has shapes", p->cur->name);
        if (p->cur->shell)
                return parse_error(p, "'shell' twice in profile '%s'", p->cur->name);
        p->cur->shell = true;
        return 0;
}

/* Refuses control characters (tab is a blank) and invalid UTF-8: what the
 * files say ends up in messages to the model and in JSON. */
static int check_line_bytes(struct parser *p, const char *s, size_t n) {
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t l = utf8_len((const unsigned char *) s + i, n - i, &cp);
                if (l == 0)
                        return parse_error(p, "invalid UTF-8");
                if (is_control(cp) && cp != '\t')
                        return parse_error(p, "control character 0x%02x", (unsigned) cp);
                i += l;
        }
        return 0;
}

static int parse_line(struct parser *p, const char *s, size_t n) {
        const char *end = s + n, *kw;
        size_t kn;
        int r;

        r = check_line_bytes(p, s, n);
        if (r < 0)
                return r;
        while (end > s && is_blank(end[-1]))
                end--;
        if (!next_word(&s, end, &kw, &kn) || kw[0] == '#')
                return 0;
        if (kn == 7 && memcmp(kw, "profile", 7) == 0)
                return parse_profile_line(p, s, end);
        if (!((kn == 7 && memcmp(kw, "include", 7) == 0) || (kn == 5 && memcmp(kw, "allow", 5) == 0) ||
              (kn == 4 && memcmp(kw, "deny", 4) == 0) || (kn == 5 && memcmp(kw, "shell", 5) == 0)))
                return parse_error(p, "unknown keyword '%.*s' (expected profile, include, allow, deny or shell)",
                                   (int) kn, kw);
        if (!p->cur)
                return parse_error(p, "'%.*s' before any 'profile' line in this file", (int) kn, kw);
        if (kw[0] == 's')
                return parse_shell_line(p, s, end);
        if (p->cur->shell)
                return parse_error(p, "'%.*s' in shell profile '%s': a shell profile has no shapes",
                                   (int) kn, kw, p->cur->name);
        if (kw[0] == 'i')
                return parse_include_line(p, s, end);
        if (kw[0] == 'a')
                return parse_allow_line(p, s, end);
        return parse_deny_line(p, s, end);
}

static int parse_text(struct parser *p, const char *text, size_t len) {
        size_t pos = 0;
        int r;

        p->cur = NULL;
        for (p->line = 1; pos < len; p->line++) {
                const char *eol = memchr(text + pos, '\n', len - pos);
                size_t n = eol ? (size_t) (eol - (text + pos)) : len - pos;
                if (n > PROFILE_LINE_MAX)
                        return parse_error(p, "line longer than %d bytes", PROFILE_LINE_MAX);
                if (memchr(text + pos, 0, n))
                        return parse_error(p, "NUL byte");
                r = parse_line(p, text + pos, n);
                if (r < 0)
                        return r;
                pos += n + (eol ? 1 : 0);
        }
        return 0;
}

/* ---- resolving includes ---- */

struct flattener {
        const struct profile_set *set;
        struct profile *root;
        size_t cap;
        bool *visited;
        size_t stack[PROFILE_INCLUDE_DEPTH_MAX + 1];
        size_t depth;           /* includes on the stack below the root */
        char **error;
};

static int cycle_error(struct flattener *f, const struct item *it) {
        char chain[(PROFILE_NAME_MAX + 4) * (PROFILE_INCLUDE_DEPTH_MAX + 2)] = "";
        size_t k = 0;

        while (f->stack[k] != it->index)
                k++;
        for (; k <= f->depth; k++) {
                strcat(chain, f->set->profiles[f->stack[k]]->name);
                strcat(chain, " -> ");
        }
        strcat(chain, f->set->profiles[it->index]->name);
        return error_line(f->error, it->file, it->line, "include cycle: %s", chain);
}

static int flatten(struct flattener *f, const struct profile *p) {
        struct profile *root = f->root;
        int r;

        for (size_t i = 0; i < p->n_items; i++) {
                const struct item *it = &p->items[i];
                if (!it->is_include) {
                        if (root->n_flat == PROFILE_SHAPES_MAX)
                                return error_line(f->error, it->file, it->line,
                                                  "profile '%s' has more than %d shapes with its includes",
                                                  root->name, PROFILE_SHAPES_MAX);
                        if (grow(&root->flat, &f->cap, root->n_flat + 1, sizeof(struct shape *)) < 0)
                                return -ENOMEM;
                        root->flat[root->n_flat++] = &p->shapes[it->index];
                        continue;
                }
                for (size_t k = 0; k <= f->depth; k++)
                        if (f->stack[k] == it->index)
                                return cycle_error(f, it);
                if (f->visited[it->index])
                        continue;       /* a diamond: its shapes are in already */
                if (f->depth == PROFILE_INCLUDE_DEPTH_MAX)
                        return error_line(f->error, it->file, it->line, "includes nested deeper than %d",
                                          PROFILE_INCLUDE_DEPTH_MAX);
                f->visited[it->index] = true;
                f->stack[++f->depth] = it->index;
                r = flatten(f, f->set->profiles[it->index]);
                f->depth--;
                if (r < 0)
                        return r;
        }
        return 0;
}

static int resolve(struct profile_set *s, char **ret_error) {
        _cleanup_free_ bool *visited = NULL;
        int r;

        /* unknown names first, so their message does not depend on order */
        for (size_t i = 0; i < s->n_profiles; i++)
                for (size_t k = 0; k < s->profiles[i]->n_items; k++) {
                        struct item *it = &s->profiles[i]->items[k];
                        if (it->is_include && !set_lookup(s, it->include, &it->index))
                                return error_line(ret_error, it->file, it->line,
                                                  "include of unknown profile '%s'", it->include);
                        if (it->is_include && s->profiles[it->index]->shell)
                                return error_line(ret_error, it->file, it->line,
                                                  "include of shell profile '%s', which has no shapes",
                                                  it->include);
                }
        visited = calloc(MAX(s->n_profiles, (size_t) 1), sizeof(bool));
        if (!visited)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_profiles; i++) {
                struct profile *p = s->profiles[i];
                struct flattener f = { .set = s, .root = p, .visited = visited, .error = ret_error };

                memset(visited, 0, s->n_profiles * sizeof(bool));
                visited[i] = true;
                f.stack[0] = i;
                r = flatten(&f, p);
                if (r < 0)
                        return r;
                p->flat_text = calloc(p->n_flat + 1, sizeof(char *));
                if (!p->flat_text)
                        return -ENOMEM;
                for (size_t k = 0; k < p->n_flat; k++)
                        p->flat_text[k] = p->flat[k]->text;
        }
        return 0;
}

/* ---- loading ---- */

static int set_new(struct profile_set **ret) {
        struct profile_set *s = calloc(1, sizeof(struct profile_set));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int set_add_file(struct profile_set *s, const char *name, const char **ret) {
        char **f = reallocarray(s->files, s->n_files + 1, sizeof(char *));
        if (!f)
                return -ENOMEM;
        s->files = f;
        f[s->n_files] = strdup(name);
        if (!f[s->n_files])
                return -ENOMEM;
        *ret = f[s->n_files++];
        return 0;
}

int profile_set_load_string(const char *text, const char *name, struct profile_set **ret, char **ret_error) {
        _cleanup_(profile_set_freep) struct profile_set *s = NULL;
        struct parser p = { .error = ret_error };
        int r;

        if (!text || !name || !ret)
                return -EINVAL;
        r = set_new(&s);
        if (r < 0)
                return r;
        p.set = s;
        r = set_add_file(s, name, &p.file);
        if (r < 0)
                return r;
        r = parse_text(&p, text, strlen(text));
        if (r < 0)
                return r;
        r = resolve(s, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static bool conf_name(const char *n) {
        size_t l = strlen(n);
        return n[0] != '.' && l > 5 && streq(n + l - 5, ".conf");
}

/* The sorted *.conf names in the directory (the order files are read in). */
static int list_conf(int dfd, char ***ret, size_t *ret_n) {
        _cleanup_strv_free_ char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *d;
        int fd, r = 0;

        fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                r = negative_errno();
                close(fd);
                return r;
        }
        while ((errno = 0, de = readdir(d))) {
                if (!conf_name(de->d_name))
                        continue;
                if (n == PROFILE_FILES_MAX) {
                        r = -E2BIG;
                        break;
                }
                if (grow(&names, &cap, n + 2, sizeof(char *)) < 0 || !(names[n] = strdup(de->d_name))) {
                        r = -ENOMEM;
                        break;
                }
                names[++n] = NULL;
        }
        if (r == 0 && errno != 0)
                r = negative_errno();
        closedir(d);
        if (r < 0)
                return r;
        if (n > 0)
                qsort(names, n, sizeof(char *), name_cmp);
        *ret = TAKE_PTR(names);
        *ret_n = n;
        return 0;
}

/* Reads a whole profile file into buf (PROFILE_FILE_MAX + 1 bytes). */
static int read_conf(int dfd, const char *name, const char *path, char *buf, size_t *ret_len,
                     char **ret_error) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        size_t len = 0;

        /* O_NONBLOCK: a FIFO dropped into the directory must not hang us */
        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return error_at(ret_error, path, "not a regular file");
        for (;;) {
                ssize_t k = read(fd, buf + len, PROFILE_FILE_MAX + 1 - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > PROFILE_FILE_MAX)
                        return error_at(ret_error, path, "file larger than %u bytes", PROFILE_FILE_MAX);
        }
        *ret_len = len;
        return 0;
}

int profile_set_load_dir(const char *dir, struct profile_set **ret, char **ret_error) {
        _cleanup_(profile_set_freep) struct profile_set *s = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int dfd = -1;
        struct parser p = { .error = ret_error };
        size_t n = 0;
        int r;

        if (!dir || !ret)
                return -EINVAL;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        r = list_conf(dfd, &names, &n);
        if (r == -E2BIG)
                return error_at(ret_error, dir, "more than %d *.conf files", PROFILE_FILES_MAX);
        if (r < 0)
                return r;
        r = set_new(&s);
        buf = malloc(PROFILE_FILE_MAX + 1);
        if (r < 0 || !buf)
                return -ENOMEM;
        p.set = s;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                size_t len = 0;

                if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
                        return -ENOMEM;
                r = set_add_file(s, path, &p.file);
                if (r < 0)
                        return r;
                r = read_conf(dfd, names[i], p.file, buf, &len, ret_error);
                if (r < 0)
                        return r;
                r = parse_text(&p, buf, len);
                if (r < 0)
                        return r;
        }
        r = resolve(s, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

const struct profile *profile_set_find(const struct profile_set *s, const char *name) {
        if (!s || !name)
                return NULL;
        return set_lookup(s, name, NULL);
}

bool profile_is_shell(const struct profile *p) {
        return p && p->shell;
}

const char *profile_name(const struct profile *p) {
        return p->name;
}

const char *const *profile_shapes(const struct profile *p) {
        return p->flat_text;
}

/* ---- matching ---- */

static bool all_digits(const char *s) {
        size_t n = strspn(s, "0123456789");
        return n > 0 && n <= INT_DIGITS_MAX && s[n] == 0;
}

static bool elem_matches(const struct elem *e, const char *w) {
        switch (e->kind) {
        case ELEM_LITERAL:
                for (char **a = e->alts; *a; a++)
                        if (streq(*a, w))
                                return true;
                return false;
        case ELEM_FILE:
        case ELEM_PATH:
        case ELEM_WORD:
                /* a word starting with '-' would be read as an option */
                return w[0] != 0 && w[0] != '-';
        case ELEM_INT:
                return all_digits(w);
        case ELEM_NEG_INT:
                return w[0] == '-' && all_digits(w + 1);
        case ELEM_ARG:
        case ELEM_ARGS:
                return true;
        default:
                return false;
        }
}

struct way {
        char *const *argv;
        size_t argc;
        int best;               /* most literal words over all ways, -1: no way */
        uint32_t best_mask;     /* the optionals that way took */
};

/* Tries every way the shape can cover argv[j..] from element i on. Shapes
 * have at most SHAPE_OPTIONALS_MAX optionals, so at most 2^8 ways. */
static void walk(const struct shape *s, size_t i, size_t j, int lits, uint32_t mask, struct way *w) {
        if (i == s->n_elems || s->elems[i].kind == ELEM_ARGS) {
                if ((i < s->n_elems || j == w->argc) && lits > w->best) {
                        w->best = lits;
                        w->best_mask = mask;
                }
                return;
        }
        const struct elem *e = &s->elems[i];
        if (j < w->argc && elem_matches(e, w->argv[j]))
                walk(s, i + 1, j + 1, lits + (e->kind == ELEM_LITERAL),
                     e->optional ? mask | 1u << e->opt_bit : mask, w);
        if (e->optional)
                walk(s, i + 1, j, lits, mask, w);
}

/* The number of words the shape pins literally on its best way over argv,
 * or -1 when it does not match. */
static int shape_match(const struct shape *s, char *const *argv, size_t argc, uint32_t *ret_mask) {
        struct way w = { .argv = argv, .argc = argc, .best = -1 };

        if (argc < s->min_words || argc > s->max_words || !elem_matches(&s->elems[0], argv[0]))
                return -1;
        walk(s, 0, 0, 0, 0, &w);
        if (ret_mask)
                *ret_mask = w.best_mask;
        return w.best;
}

static void fill_path_flags(const struct shape *s, uint32_t mask, size_t argc, bool *path_arg,
                            bool *must_exist) {
        size_t j = 0;

        for (size_t i = 0; i < s->n_elems && j < argc; i++) {
                const struct elem *e = &s->elems[i];
                if (e->kind == ELEM_ARGS)
                        break;
                if (e->optional && !(mask & (1u << e->opt_bit)))
                        continue;
                if (e->kind == ELEM_FILE || e->kind == ELEM_PATH) {
                        path_arg[j] = true;
                        must_exist[j] = e->kind == ELEM_FILE;
                }
                j++;
        }
}

/* ---- refusal messages ---- */

struct msgbuf {
        char *buf;
        size_t len;
        size_t limit;           /* bytes of text; buf holds limit + 1 */
        bool truncated;
};

/* Appends s, cutting at a UTF-8 boundary when full; after a cut nothing more
 * is appended, so a message never has a hole in it. */
static void mb_put(struct msgbuf *m, const char *s, size_t n) {
        if (m->truncated)
                return;
        if (n > m->limit - m->len) {
                n = m->limit - m->len;
                while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
                        n--;
                m->truncated = true;
        }
        memcpy(m->buf + m->len, s, n);
        m->len += n;
        m->buf[m->len] = 0;
}

static void mb_puts(struct msgbuf *m, const char *s) {
        mb_put(m, s, strlen(s));
}

static bool word_is_plain(const char *w) {
        if (!*w)
                return false;
        for (const char *c = w; *c; c++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%^", *c))
                        return false;
        return true;
}

/* True when w is valid UTF-8 without control characters. */
static bool word_is_printable(const char *w) {
        size_t n = strlen(w);
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t l = utf8_len((const unsigned char *) w + i, n - i, &cp);
                if (l == 0 || is_control(cp))
                        return false;
                i += l;
        }
        return true;
}

/* Shows a word the way a shell user would type it: bare, in single quotes,
 * or, when it holds control characters or invalid UTF-8, as $'...' with
 * \xHH escapes, so the message stays one readable UTF-8 line per part. */
static void mb_quote(struct msgbuf *m, const char *w) {
        size_t n = strlen(w);

        if (word_is_plain(w)) {
                mb_put(m, w, n);
                return;
        }
        if (word_is_printable(w)) {
                mb_puts(m, "'");
                for (const char *q; (q = strchr(w, '\'')); w = q + 1) {
                        mb_put(m, w, (size_t) (q - w));
                        mb_puts(m, "'\\''");
                }
                mb_puts(m, w);
                mb_puts(m, "'");
                return;
        }
        mb_puts(m, "$'");
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t l = utf8_len((const unsigned char *) w + i, n - i, &cp);
                char esc[8];
                if (l == 0 || is_control(cp)) {
                        for (size_t k = 0; k < MAX(l, (size_t) 1); k++) {
                                snprintf(esc, sizeof esc, "\\x%02x", (unsigned char) w[i + k]);
                                mb_puts(m, esc);
                        }
                        i += MAX(l, (size_t) 1);
                        continue;
                }
                if (w[i] == '\\' || w[i] == '\'')
                        mb_puts(m, "\\");
                mb_put(m, w + i, l);
                i += l;
        }
        mb_puts(m, "'");
}

/* Quotes argv (or its first word only) into m, at most max bytes, "..."
 * marking a cut. */
static void mb_argv(struct msgbuf *m, char *const *argv, size_t argc, size_t max) {
        char buf[SHOWN_ARGV_MAX + 1];
        struct msgbuf a = { .buf = buf, .limit = MIN(max, (size_t) SHOWN_ARGV_MAX) };

        buf[0] = 0;
        for (size_t i = 0; i < argc && !a.truncated; i++) {
                if (i > 0)
                        mb_puts(&a, " ");
                mb_quote(&a, argv[i]);
        }
        mb_put(m, buf, a.len);
        if (a.truncated)
                mb_puts(m, "...");
}

static bool shape_is_for(const struct shape *s, const char *program) {
        return elem_matches(&s->elems[0], program);
}

static void mb_nearest(struct msgbuf *m, const struct profile *p, char *const *argv, size_t argc) {
        size_t shown = 0;

        if (argc > 0)
                for (size_t i = 0; i < p->n_flat; i++) {
                        if (!shape_is_for(p->flat[i], argv[0]))
                                continue;
                        if (shown++ == 0) {
                                mb_puts(m, "\nallowed shapes for ");
                                mb_argv(m, argv, 1, SHOWN_PROGRAM_MAX);
                                mb_puts(m, ": ");
                        } else
                                mb_puts(m, "; ");
                        mb_puts(m, p->flat[i]->text);
                }
        if (shown > 0)
                return;
        if (p->n_flat == 0) {
                mb_puts(m, "\nprofile ");
                mb_puts(m, p->name);
                mb_puts(m, " allows no commands");
                return;
        }
        mb_puts(m, "\nallowed shapes in profile ");
        mb_puts(m, p->name);
        mb_puts(m, ": ");
        for (size_t i = 0; i < MIN(p->n_flat, (size_t) SHOWN_SHAPES_MAX); i++) {
                if (i > 0)
                        mb_puts(m, "; ");
                mb_puts(m, p->flat[i]->text);
        }
        if (p->n_flat > SHOWN_SHAPES_MAX)
                mb_puts(m, "; ...");
}

static void refusal_message(struct profile_match *ret, const struct profile *p, char *const *argv, size_t argc,
                            const struct shape *deny) {
        /* three bytes stay free for the "..." of a cut */
        struct msgbuf m = { .buf = ret->message, .limit = POLICY_MESSAGE_MAX - 1 - 3 };

        ret->message[0] = 0;
        mb_puts(&m, "command not allowed by profile ");
        mb_puts(&m, p->name);
        mb_puts(&m, ": ");
        if (argc == 0)
                mb_puts(&m, "(empty command)");
        else if (argc > POLICY_ARGV_MAX)
                mb_puts(&m, "(more than 4096 words)");
        else
                mb_argv(&m, argv, argc, SHOWN_ARGV_MAX);
        if (deny) {
                mb_puts(&m, "\n");
                mb_puts(&m, deny->reason);
        }
        mb_nearest(&m, p, argv, argc > POLICY_ARGV_MAX ? 0 : argc);
        if (m.truncated) {
                m.limit += 3;
                m.truncated = false;
                mb_puts(&m, "...");
        }
}

/* ---- the verdict ---- */

static int allow_match(const struct shape *s, char *const *argv, size_t argc, struct profile_match *ret) {
        uint32_t mask = 0;

        (void) shape_match(s, argv, argc, &mask);
        ret->path_arg = calloc(argc, sizeof(bool));
        ret->path_must_exist = calloc(argc, sizeof(bool));
        if (!ret->path_arg || !ret->path_must_exist) {
                profile_match_done(ret);
                return -ENOMEM;
        }
        fill_path_flags(s, mask, argc, ret->path_arg, ret->path_must_exist);
        ret->allowed = true;
        ret->shape = s->text;
        return 0;
}

int profile_match(const struct profile *p, char *const *argv, struct profile_match *ret) {
        const struct shape *deny = NULL;
        int deny_lits = -1;
        size_t argc;

        if (!p || !argv || !ret)
                return -EINVAL;
        for (argc = 0; argv[argc] && argc <= POLICY_ARGV_MAX; argc++)
                ;
        *ret = (struct profile_match) {};
        if (argc == 0 || argc > POLICY_ARGV_MAX) {
                refusal_message(ret, p, argv, argc, NULL);
                return 0;
        }
        /* The deny rule pinning the most words literally; an allow shape
         * beats it only by pinning strictly more. */
        for (size_t i = 0; i < p->n_denies; i++) {
                int l = shape_match(&p->denies[i], argv, argc, NULL);
                if (l > deny_lits) {
                        deny_lits = l;
                        deny = &p->denies[i];
                }
        }
        for (size_t i = 0; i < p->n_flat; i++)
                if (shape_match(p->flat[i], argv, argc, NULL) > deny_lits)
                        return allow_match(p->flat[i], argv, argc, ret);
        refusal_message(ret, p, argv, argc, deny);
        return 0;
}

void profile_match_done(struct profile_match *m) {
        if (!m)
                return;
        free(m->path_arg);
        free(m->path_must_exist);
        m->path_arg = m->path_must_exist = NULL;
        m->allowed = false;
        m->shape = NULL;
}
