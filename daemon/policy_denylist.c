/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The credential-exfiltration denylist of the `shell` profile. A rule file
 * (etc/toolsd/denylist.conf) is compiled once into PCRE2 patterns; each
 * command string is then checked whole (raw and de-obfuscated), and every
 * subcommand the splitter finds is checked the same way.
 *
 * This is a tripwire for the obvious and the lazily disguised, not the
 * security boundary: the scrubbed environment, the invisible home directory
 * and the closed network are. It errs towards refusal: a pattern that runs
 * into PCRE2's match limits counts as a match, and so does a command that is
 * nested or disguised past the bounds below.
 *
 * Runs in the broker, as the peer's uid, with no capabilities. Pure apart
 * from reading the rule file in denylist_load_file(); never logs. The
 * command is bounded by DENYLIST_COMMAND_MAX, the pieces by
 * DENYLIST_PIECES_MAX and DENYLIST_DEPTH_MAX, and every match by PCRE2's
 * match and depth limits, so a hostile string costs bounded time.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "denylist.h"
#include "macro.h"

/* PCRE2 counts these per start position. The rules are written to be
 * linear in the subject, so a real command needs a few steps per byte; the
 * limits scale with the subject so a long honest command (a heredoc that
 * writes a file) is not refused, while a crafted one still stops within
 * milliseconds per rule. */
#define MATCH_LIMIT_BASE 100000U
#define MATCH_LIMIT_PER_BYTE 64U
#define DEPTH_LIMIT_BASE 1000U

struct rule {
        char *id;
        pcre2_code *code;
};

struct define {
        char *name;
        char *value;
};

struct denylist {
        struct rule *rules;
        size_t n_rules;
};

/* A growable byte buffer; the callers bound what goes in. */
struct buf {
        char *p;
        size_t n, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n) {
        if (b->n + n + 1 > b->cap) {
                size_t cap = MAX(b->cap * 2, b->n + n + 64);
                char *p = realloc(b->p, cap);
                if (!p)
                        return -ENOMEM;
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->n, s, n);
        b->n += n;
        b->p[b->n] = '\0';
        return 0;
}

/* ---- rule file ---------------------------------------------------------- */

_printf_(4, 5)
static int load_error(char **ret_error, const char *name, unsigned line, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        if (!ret_error)
                return -EINVAL;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (line > 0)
                r = asprintf(ret_error, "%s:%u: %s", name, line, msg);
        else
                r = asprintf(ret_error, "%s: %s", name, msg);
        return r < 0 ? -ENOMEM : -EINVAL;
}

static bool id_valid(const char *s, bool is_define) {
        size_t n = strlen(s);

        if (n == 0 || n > DENYLIST_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = s[i];
                bool ok = is_define ? (isupper(c) || c == '_' || (i > 0 && isdigit(c)))
                                    : (islower(c) || isdigit(c) || (i > 0 && c == '-'));
                if (!ok)
                        return false;
        }
        return true;
}

static const struct define *define_find(const struct define *defs, size_t n, const char *name, size_t len) {
        for (size_t i = 0; i < n; i++)
                if (strlen(defs[i].name) == len && memcmp(defs[i].name, name, len) == 0)
                        return &defs[i];
        return NULL;
}

/* Replaces each @{NAME} with (?:VALUE). On an unknown name or an overlong
 * result returns -EINVAL with *ret_bad pointing at the reference. */
static int expand(const char *s, const struct define *defs, size_t n_defs, char **ret, const char **ret_bad) {
        _cleanup_free_ char *owned = NULL;
        struct buf b = {};
        int r = 0;

        for (const char *p = s; *p && r == 0;) {
                const char *at = strstr(p, "@{");
                const char *end = at ? strchr(at, '}') : NULL;
                if (!at || !end) {
                        r = buf_add(&b, p, strlen(p));
                        break;
                }
                const struct define *d = define_find(defs, n_defs, at + 2, end - at - 2);
                if (!d) {
                        *ret_bad = at;
                        r = -EINVAL;
                        break;
                }
                r = buf_add(&b, p, at - p);
                if (r == 0)
                        r = buf_add(&b, "(?:", 3);
                if (r == 0)
                        r = buf_add(&b, d->value, strlen(d->value));
                if (r == 0)
                        r = buf_add(&b, ")", 1);
                p = end + 1;
        }
        owned = b.p;
        if (r == 0 && b.n > DENYLIST_PATTERN_MAX) {
                *ret_bad = NULL;
                r = -EINVAL;
        }
        if (r < 0)
                return r;
        *ret = owned ? TAKE_PTR(owned) : strdup("");
        return *ret ? 0 : -ENOMEM;
}

static int rule_compile(struct denylist *d, const char *id, const char *pattern,
                        const char *name, unsigned line, char **ret_error) {
        int errcode;
        PCRE2_SIZE erroff;

        for (size_t i = 0; i < d->n_rules; i++)
                if (strcmp(d->rules[i].id, id) == 0)
                        return load_error(ret_error, name, line, "duplicate rule '%s'", id);
        if (d->n_rules >= DENYLIST_RULES_MAX)
                return load_error(ret_error, name, line, "more than %u rules", DENYLIST_RULES_MAX);

        /* Caseless by default: PowerShell, file systems that fold case and
         * the model's spelling all vary; a rule opts out with (?-i). Bytes,
         * never UTF: a command need not be valid UTF-8. */
        pcre2_code *code = pcre2_compile((PCRE2_SPTR) pattern, PCRE2_ZERO_TERMINATED,
                                         PCRE2_CASELESS | PCRE2_NEVER_UTF | PCRE2_NEVER_UCP |
                                         PCRE2_NEVER_BACKSLASH_C,
                                         &errcode, &erroff, NULL);
        if (!code) {
                PCRE2_UCHAR msg[256];
                (void) pcre2_get_error_message(errcode, msg, sizeof msg);
                return load_error(ret_error, name, line, "rule '%s': %s at offset %zu of the expanded pattern",
                                  id, (const char *) msg, (size_t) erroff);
        }
        /* JIT makes a check several times faster; without it (no
         * executable memory, or built with DENYLIST_NO_JIT for valgrind,
         * which cannot follow JIT code) the interpreter gives the same
         * answers. */
#ifndef DENYLIST_NO_JIT
        (void) pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
#endif

        char *dup = strdup(id);
        if (!dup) {
                pcre2_code_free(code);
                return -ENOMEM;
        }
        d->rules[d->n_rules++] = (struct rule) { dup, code };
        return 0;
}

static void defines_free(struct define *defs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(defs[i].name);
                free(defs[i].value);
        }
}

struct loader {
        struct denylist *d;
        struct define defs[DENYLIST_DEFINES_MAX];
        size_t n_defs;
        const char *name;
        char **ret_error;
};

static int load_directive(struct loader *l, unsigned line, const char *kw, const char *id, const char *re) {
        bool is_define = strcmp(kw, "define") == 0;
        _cleanup_free_ char *pattern = NULL;
        const char *bad = NULL;

        if (!is_define && strcmp(kw, "rule") != 0)
                return load_error(l->ret_error, l->name, line, "unknown directive '%s'", kw);
        if (!id_valid(id, is_define))
                return load_error(l->ret_error, l->name, line, "invalid %s name '%s'", kw, id);
        if (*re == '\0')
                return load_error(l->ret_error, l->name, line, "%s '%s' has no pattern", kw, id);

        int r = expand(re, l->defs, l->n_defs, &pattern, &bad);
        if (r == -EINVAL && bad)
                return load_error(l->ret_error, l->name, line, "unknown define in '%.*s'",
                                  (int) strcspn(bad, "}") + 1, bad);
        if (r == -EINVAL)
                return load_error(l->ret_error, l->name, line, "pattern longer than %u bytes after expansion",
                                  DENYLIST_PATTERN_MAX);
        if (r < 0)
                return r;

        if (!is_define)
                return rule_compile(l->d, id, pattern, l->name, line, l->ret_error);

        if (define_find(l->defs, l->n_defs, id, strlen(id)))
                return load_error(l->ret_error, l->name, line, "duplicate define '%s'", id);
        if (l->n_defs >= DENYLIST_DEFINES_MAX)
                return load_error(l->ret_error, l->name, line, "more than %u defines", DENYLIST_DEFINES_MAX);
        char *name = strdup(id);
        if (!name)
                return -ENOMEM;
        l->defs[l->n_defs++] = (struct define) { name, TAKE_PTR(pattern) };
        return 0;
}

/* One line, NUL-terminated and without its newline; modified in place. */
static int load_line(struct loader *l, unsigned line, char *s) {
        static const char blanks[] = " \t\r";
        size_t n = strlen(s);

        while (n > 0 && strchr(blanks, s[n - 1]))
                s[--n] = '\0';
        s += strspn(s, blanks);
        if (*s == '\0' || *s == '#')
                return 0;

        char *kw = s;
        s += strcspn(s, blanks);
        if (*s)
                *s++ = '\0';
        s += strspn(s, blanks);
        char *id = s;
        s += strcspn(s, blanks);
        if (*s)
                *s++ = '\0';
        s += strspn(s, blanks);
        return load_directive(l, line, kw, id, s);
}

static int load_lines(struct loader *l, char *text) {
        unsigned line = 0;

        for (char *s = text, *next; s; s = next) {
                next = strchr(s, '\n');
                if (next)
                        *next++ = '\0';
                int r = load_line(l, ++line, s);
                if (r < 0)
                        return r;
        }
        if (l->d->n_rules == 0)
                return load_error(l->ret_error, l->name, 0, "no rules");
        return 0;
}

int denylist_load_string(const char *text, const char *name, struct denylist **ret, char **ret_error) {
        struct loader l = { .name = name ?: "denylist", .ret_error = ret_error };
        _cleanup_free_ char *copy = NULL;

        if (!text || !ret)
                return -EINVAL;
        if (strlen(text) > DENYLIST_FILE_MAX)
                return load_error(ret_error, l.name, 0, "larger than %u bytes", DENYLIST_FILE_MAX);
        copy = strdup(text);
        l.d = calloc(1, sizeof *l.d);
        if (!copy || !l.d) {
                free(l.d);
                return -ENOMEM;
        }
        l.d->rules = calloc(DENYLIST_RULES_MAX, sizeof *l.d->rules);
        int r = l.d->rules ? load_lines(&l, copy) : -ENOMEM;
        defines_free(l.defs, l.n_defs);
        if (r < 0) {
                denylist_free(l.d);
                return r;
        }
        *ret = l.d;
        return 0;
}

static int read_all(int fd, char **ret) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (st.st_size > (off_t) DENYLIST_FILE_MAX)
                return -EFBIG;

        _cleanup_free_ char *text = malloc(st.st_size + 1);
        size_t n = 0;
        if (!text)
                return -ENOMEM;
        while (n < (size_t) st.st_size) {
                ssize_t k = read(fd, text + n, st.st_size - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += k;
        }
        if (memchr(text, '\0', n))
                return -EBADMSG;
        text[n] = '\0';
        *ret = TAKE_PTR(text);
        return 0;
}

int denylist_load_file(const char *path, struct denylist **ret, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;

        if (!path || !ret)
                return -EINVAL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                int r = -errno;
                (void) load_error(ret_error, path, 0, "cannot open: %s", strerror(-r));
                return r;
        }
        int r = read_all(fd, &text);
        if (r < 0) {
                (void) load_error(ret_error, path, 0, "%s",
                                  r == -EFBIG ? "file too large" :
                                  r == -EBADMSG ? "file contains a NUL byte" :
                                  r == -EBADFD ? "not a regular file" : strerror(-r));
                return r;
        }
        return denylist_load_string(text, path, ret, ret_error);
}

void denylist_free(struct denylist *d) {
        if (!d)
                return;
        for (size_t i = 0; i < d->n_rules; i++) {
                free(d->rules[i].id);
                pcre2_code_free(d->rules[i].code);
        }
        free(d->rules);
        free(d);
}

size_t denylist_rule_count(const struct denylist *d) {
        return d ? d->n_rules : 0;
}

/* ---- de-obfuscation ----------------------------------------------------- */

static bool is_blank(unsigned char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_ident(unsigned char c) {
        return isalnum(c) || c == '_';
}

/* Appends c to an output that never grows past its input: quoting
 * characters and NUL are dropped so the output is a fixed point of a
 * second round, blanks collapse to one space. */
static void emit(struct buf *o, unsigned char c) {
        if (c == '\0' || c == '\'' || c == '"' || c == '\\')
                return;
        if (is_blank(c)) {
                if (o->n == 0 || o->p[o->n - 1] == ' ')
                        return;
                c = ' ';
        }
        o->p[o->n++] = c;
}

static size_t hex_value(const char *s, size_t len, size_t i, size_t max, unsigned *ret) {
        size_t k = 0;
        unsigned v = 0;

        for (; k < max && i + k < len && isxdigit((unsigned char) s[i + k]); k++)
                v = v * 16 + (isdigit((unsigned char) s[i + k]) ? s[i + k] - '0' : (tolower((unsigned char) s[i + k]) - 'a' + 10));
        *ret = v;
        return k;
}

/* s[i] is the character after a backslash inside $'...'; emits what bash
 * makes of the escape and returns the index after it. *ret_nul is set at
 * \0 / \x00: bash ends the string there. */
static size_t ansi_escape(struct buf *o, const char *s, size_t len, size_t i, bool *ret_nul) {
        static const char simple[] = "ntrvfabeE";
        static const char value[] = "\n\t\r\v\f\a\b\033\033";
        unsigned v = 0;
        size_t k;
        const char *p;

        if (s[i] == 'x' || s[i] == 'u' || s[i] == 'U') {
                k = hex_value(s, len, i + 1, s[i] == 'x' ? 2 : s[i] == 'u' ? 4 : 8, &v);
                if (k == 0) {
                        emit(o, s[i]);
                        return i + 1;
                }
                i += 1 + k;
        } else if (s[i] >= '0' && s[i] <= '7') {
                for (k = 0; k < 3 && i < len && s[i] >= '0' && s[i] <= '7'; k++, i++)
                        v = v * 8 + (s[i] - '0');
        } else if (s[i] == 'c') {
                return MIN(i + 2, len);
        } else if ((p = strchr(simple, s[i])) && s[i]) {
                emit(o, value[p - simple]);
                return i + 1;
        } else {
                emit(o, s[i]);
                return i + 1;
        }
        if ((v & 0xff) == 0)
                *ret_nul = true;
        else if (v < 0x80)
                emit(o, v);
        return i;
}

/* Handles '$' at s[i] outside single quotes; returns the next index. */
static size_t dollar(struct buf *o, const char *s, size_t len, size_t i) {
        const char *p = s + i + 1;
        size_t rest = len - i - 1;

        if (rest >= 1 && (strchr("@*", p[0]) || (p[0] >= '1' && p[0] <= '9')) && p[0])
                return i + 2;                   /* empty in sh -c: e$@nv */
        if (rest >= 2 && p[0] == '(' && p[1] == ')')
                return i + 3;
        if (rest >= 1 && p[0] == '{') {
                size_t k = 1;
                while (k < rest && is_ident(p[k]))
                        k++;
                size_t n = k - 1;
                bool positional = n > 0 && strspn(p + 1, "0123456789") >= n && p[1] != '0';
                if (k > 1 && k < rest && p[k] == '}' && positional)
                        return i + 2 + k;               /* e${1}nv */
                if (k > 1 && k < rest && p[k] == '}' && (k + 1 >= rest || !is_ident(p[k + 1]))) {
                        if (n == 4 && strncmp(p + 1, "HOME", 4) == 0)
                                emit(o, '~');
                        else if (n == 3 && strncmp(p + 1, "IFS", 3) == 0)
                                emit(o, ' ');
                        else {
                                emit(o, '$');
                                for (size_t j = 1; j < k; j++)
                                        emit(o, p[j]);
                        }
                        return i + 2 + k;
                }
        }
        if (rest >= 4 && strncmp(p, "HOME", 4) == 0 && (rest == 4 || !is_ident(p[4]))) {
                emit(o, '~');
                return i + 5;
        }
        if (rest >= 3 && strncmp(p, "IFS", 3) == 0 && (rest == 3 || !is_ident(p[3]))) {
                emit(o, ' ');
                return i + 4;
        }
        emit(o, '$');
        return i + 1;
}

/* Outside quotes, at s[i]; returns the next index and may change *q. */
static size_t unquoted(struct buf *o, const char *s, size_t len, size_t i, char *q) {
        char c = s[i];

        if (c == '\\') {
                if (i + 1 < len && s[i + 1] != '\n')
                        emit(o, s[i + 1]);
                return i + 2;
        }
        if (c == '\'' || c == '"') {
                *q = c;
                return i + 1;
        }
        if (c == '$' && i + 1 < len && (s[i + 1] == '\'' || s[i + 1] == '"')) {
                *q = s[i + 1] == '\'' ? 'A' : '"';
                return i + 2;
        }
        if (c == '$')
                return dollar(o, s, len, i);
        if (c == '`' && i + 1 < len && s[i + 1] == '`')
                return i + 2;
        /* [e]nv is a glob that matches only "env" */
        if (c == '[' && i + 2 < len && s[i + 2] == ']' && !strchr("]!^-\\'\" \t\n", s[i + 1])) {
                emit(o, s[i + 1]);
                return i + 3;
        }
        emit(o, c);
        return i + 1;
}

static size_t quoted(struct buf *o, const char *s, size_t len, size_t i, char *q, bool *ansi_nul) {
        char c = s[i];

        if (c == (*q == 'A' ? '\'' : *q)) {
                *q = 0;
                *ansi_nul = false;
                return i + 1;
        }
        if (*q == 'A') {
                if (c == '\\' && i + 1 < len)
                        return ansi_escape(o, s, len, i + 1, ansi_nul);
                if (!*ansi_nul)
                        emit(o, c);
                return i + 1;
        }
        if (*q == '"' && c == '\\' && i + 1 < len) {
                if (strchr("$`\"\\\n", s[i + 1]) && s[i + 1]) {
                        if (s[i + 1] != '\n')
                                emit(o, s[i + 1]);
                        return i + 2;
                }
                return i + 1;
        }
        if (*q == '"' && c == '$')
                return dollar(o, s, len, i);
        if (*q == '"' && c == '`' && i + 1 < len && s[i + 1] == '`')
                return i + 2;
        emit(o, c);
        return i + 1;
}

static void deobfuscate_round(const char *s, size_t len, struct buf *o) {
        bool ansi_nul = false;
        char q = 0;

        o->n = 0;
        for (size_t i = 0; i < len;)
                i = q ? quoted(o, s, len, i, &q, &ansi_nul) : unquoted(o, s, len, i, &q);
        while (o->n > 0 && o->p[o->n - 1] == ' ')
                o->n--;
        o->p[o->n] = '\0';
}

int denylist_deobfuscate(const char *in, size_t len, char **ret) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t n = len;
        int converged = 0;

        if (!in || !ret)
                return -EINVAL;
        a = malloc(len + 1);
        b = malloc(len + 1);
        if (!a || !b)
                return -ENOMEM;
        memcpy(a, in, len);
        a[len] = '\0';

        for (unsigned round = 0; round < DENYLIST_ROUNDS_MAX; round++) {
                struct buf o = { .p = b, .cap = len + 1 };
                deobfuscate_round(a, n, &o);
                bool same = o.n == n && memcmp(a, b, n) == 0;
                char *t = a;
                a = b;
                b = t;
                n = o.n;
                if (same) {
                        converged = 1;
                        break;
                }
        }
        *ret = TAKE_PTR(a);
        return converged;
}

/* ---- splitting ---------------------------------------------------------- */

struct split {
        char **v;
        size_t n;
        int error;
};

static size_t find_paren(struct split *c, const char *s, size_t len, size_t i, unsigned depth);

static size_t skip_single(const char *s, size_t len, size_t i) {
        for (i++; i < len && s[i] != '\''; i++)
                ;
        return MIN(i + 1, len);
}

static size_t skip_ansi(const char *s, size_t len, size_t i) {
        for (i++; i < len && s[i] != '\''; i++)
                if (s[i] == '\\')
                        i++;
        return MIN(i + 1, len);
}

static size_t find_backtick(const char *s, size_t len, size_t i) {
        for (; i < len && s[i] != '`'; i++)
                if (s[i] == '\\')
                        i++;
        return MIN(i, len);
}

/* s[i] is '"'; returns the index after the closing quote. */
static size_t skip_double(struct split *c, const char *s, size_t len, size_t i, unsigned depth) {
        for (i++; i < len && s[i] != '"'; i++) {
                if (s[i] == '\\')
                        i++;
                else if (s[i] == '$' && i + 1 < len && s[i + 1] == '(')
                        i = find_paren(c, s, len, i + 2, depth + 1);
                else if (s[i] == '`')
                        i = find_backtick(s, len, i + 1);
        }
        return MIN(i + 1, len);
}

/* s[i] follows an opening '('; returns the index of the matching ')', or
 * len when there is none. */
static size_t find_paren(struct split *c, const char *s, size_t len, size_t i, unsigned depth) {
        unsigned open = 1;

        if (depth > DENYLIST_DEPTH_MAX) {
                c->error = -ELOOP;
                return len;
        }
        while (i < len) {
                char ch = s[i];
                if (ch == '\\')
                        i += 2;
                else if (ch == '\'')
                        i = skip_single(s, len, i);
                else if (ch == '$' && i + 1 < len && s[i + 1] == '\'')
                        i = skip_ansi(s, len, i + 1);
                else if (ch == '"')
                        i = skip_double(c, s, len, i, depth);
                else if (ch == '`')
                        i = MIN(find_backtick(s, len, i + 1) + 1, len);
                else if (ch == ')' && --open == 0)
                        return i;
                else {
                        if (ch == '(')
                                open++;
                        i++;
                }
        }
        return len;
}

static void split_text(struct split *c, const char *s, size_t len, unsigned depth);
static size_t split_subst(struct split *c, const char *s, size_t len, size_t i, bool backtick, unsigned depth);

/* One level of shell quote removal, for a body that a shell will parse
 * again (sh -c BODY, eval, NAME=VALUE, <<< WORD). Quotes inside the body
 * stay, so its own separators in quotes do not split. */
static int unquote(const char *s, size_t len, struct buf *o) {
        bool ansi_nul = false;
        char q = 0;

        o->p = malloc(len + 1);
        if (!o->p)
                return -ENOMEM;
        for (size_t i = 0; i < len;) {
                char ch = s[i];
                if (q == 0 && (ch == '\'' || ch == '"')) {
                        q = ch;
                        i++;
                } else if (q == 0 && ch == '$' && i + 1 < len && s[i + 1] == '\'') {
                        q = 'A';
                        i += 2;
                } else if (q && ch == (q == 'A' ? '\'' : q)) {
                        q = 0;
                        ansi_nul = false;
                        i++;
                } else if (q == 'A' && ch == '\\' && i + 1 < len) {
                        i = ansi_escape(o, s, len, i + 1, &ansi_nul);
                } else if (ch == '\\' && i + 1 < len && (q == 0 || (q == '"' && strchr("$`\"\\", s[i + 1])))) {
                        o->p[o->n++] = s[i + 1];
                        i += 2;
                } else {
                        if (!ansi_nul)
                                o->p[o->n++] = ch;
                        i++;
                }
        }
        o->p[o->n] = '\0';
        return 0;
}

/* Returns the end of the word that starts at s[i]; with meta, an unquoted
 * ; & | ( ) < > ends it too. */
static size_t word_end_meta(struct split *c, const char *s, size_t len, size_t i, bool meta, unsigned depth) {
        while (i < len && !is_blank(s[i]) && s[i] != '\n' && !(meta && strchr(";&|()<>", s[i]))) {
                if (s[i] == '\\')
                        i += 2;
                else if (s[i] == '\'')
                        i = skip_single(s, len, i);
                else if (s[i] == '$' && i + 1 < len && s[i + 1] == '\'')
                        i = skip_ansi(s, len, i + 1);
                else if (s[i] == '"')
                        i = skip_double(c, s, len, i, depth);
                else
                        i++;
        }
        return MIN(i, len);
}

static size_t word_end(struct split *c, const char *s, size_t len, size_t i, unsigned depth) {
        return word_end_meta(c, s, len, i, false, depth);
}

static bool is_dash_c(const char *w, size_t n) {
        if (n < 2 || n > 8 || w[0] != '-' || !memchr(w, 'c', n))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!isalpha((unsigned char) w[i]))
                        return false;
        return true;
}

/* Programs whose -c option takes a shell command line. */
static bool is_shell(const char *w, size_t n) {
        static const char *const shells[] = {
                "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "fish",
                "csh", "tcsh", "busybox", "su", "runuser", "script",
        };
        const char *slash = memrchr(w, '/', n);

        if (slash) {
                n -= slash + 1 - w;
                w = slash + 1;
        }
        for (size_t i = 0; i < ELEMENTSOF(shells); i++)
                if (strlen(shells[i]) == n && memcmp(shells[i], w, n) == 0)
                        return true;
        return false;
}

static void split_body(struct split *c, const char *s, size_t len, unsigned depth) {
        struct buf b = {};

        if (unquote(s, len, &b) < 0)
                c->error = -ENOMEM;
        else if (b.n > 0)
                split_text(c, b.p, b.n, depth);
        free(b.p);
}

/* Finds what a shell would parse again inside one subcommand: the word
 * after -c once a shell was named (sh -c, sudo bash -lc, xargs sh -c), the
 * word after <<<, everything after eval, and the value of NAME=VALUE
 * (a=printenv; $a). */
static void split_words(struct split *c, const char *s, size_t len, unsigned depth) {
        bool after_c = false, shell = false;

        for (size_t i = 0; i < len && c->error == 0;) {
                /* a piece may hold an unquoted newline: the rest of an
                 * unterminated $( is one piece */
                while (i < len && (is_blank(s[i]) || s[i] == '\n'))
                        i++;
                if (i >= len)
                        break;
                size_t end = word_end(c, s, len, i, depth);
                const char *w = s + i;
                size_t n = end - i;
                size_t name = 0;

                if (n == 4 && memcmp(w, "eval", 4) == 0) {
                        split_body(c, s + end, len - end, depth + 1);
                        return;
                }
                if (after_c)
                        split_body(c, w, n, depth + 1);
                else if (n > 3 && memcmp(w, "<<<", 3) == 0)
                        split_body(c, w + 3, n - 3, depth + 1);
                while (name < n && is_ident(w[name]) && !(name == 0 && isdigit((unsigned char) w[0])))
                        name++;
                if (name > 0 && name + 1 < n && w[name] == '=')
                        split_body(c, w + name + 1, n - name - 1, depth + 1);
                shell = shell || is_shell(w, n);
                after_c = (shell && is_dash_c(w, n)) || (n == 3 && memcmp(w, "<<<", 3) == 0);
                i = MAX(end, i + 1);
        }
}

static void add_piece(struct split *c, const char *s, size_t len, unsigned depth) {
        while (len > 0 && (is_blank(*s) || *s == '\n'))
                s++, len--;
        while (len > 0 && (is_blank(s[len - 1]) || s[len - 1] == '\n'))
                len--;
        if (len == 0 || c->error)
                return;
        if (c->n >= DENYLIST_PIECES_MAX) {
                c->error = -E2BIG;
                return;
        }
        char *p = strndup(s, len);
        if (!p) {
                c->error = -ENOMEM;
                return;
        }
        c->v[c->n++] = p;
        split_words(c, s, len, depth);
}

/* A command substitution's body is split on its own; the enclosing piece
 * keeps its text. s[i] is after the opening '$(' or '`'. */
static size_t split_subst(struct split *c, const char *s, size_t len, size_t i, bool backtick, unsigned depth) {
        size_t end = backtick ? find_backtick(s, len, i) : find_paren(c, s, len, i, depth + 1);

        split_text(c, s + i, end - i, depth + 1);
        return MIN(end + 1, len);
}

static size_t split_double(struct split *c, const char *s, size_t len, size_t i, unsigned depth) {
        for (i++; i < len && s[i] != '"' && c->error == 0; i++) {
                if (s[i] == '\\')
                        i++;
                else if (s[i] == '$' && i + 1 < len && s[i + 1] == '(')
                        i = split_subst(c, s, len, i + 2, false, depth) - 1;
                else if (s[i] == '`')
                        i = split_subst(c, s, len, i + 1, true, depth) - 1;
        }
        return MIN(i + 1, len);
}

/* A pending here-document: its body starts after the next newline. */
struct heredoc {
        char *delim;
        size_t n;
        bool strip_tabs;
        bool shell;
        bool expands;           /* unquoted delimiter: $(...) and `...` run */
};

static bool words_have_shell(struct split *c, const char *s, size_t len, unsigned depth) {
        for (size_t i = 0; i < len;) {
                while (i < len && (is_blank(s[i]) || s[i] == '\n'))
                        i++;
                size_t end = word_end(c, s, len, i, depth);
                if (end > i && is_shell(s + i, end - i))
                        return true;
                i = MAX(end, i + 1);
        }
        return false;
}

/* s[i] follows "<<"; records the delimiter and returns the index after it.
 * The body is commands only when it feeds a shell (sh <<EOF); for cat,
 * python and the like it is data, and only the whole-string rules see it. */
static size_t heredoc_open(struct split *c, const char *s, size_t len, size_t i, size_t start,
                           struct heredoc *h, unsigned depth) {
        struct buf b = {};
        bool strip = i < len && s[i] == '-';

        i += strip;
        while (i < len && is_blank(s[i]))
                i++;
        size_t end = word_end_meta(c, s, len, i, true, depth);
        if (end == i || unquote(s + i, end - i, &b) < 0 || b.n == 0) {
                if (!b.p && end > i)
                        c->error = -ENOMEM;
                free(b.p);
                return end;
        }
        free(h->delim);
        *h = (struct heredoc) {
                .delim = b.p,
                .n = b.n,
                .strip_tabs = strip,
                .shell = words_have_shell(c, s + start, i - start, depth),
                .expands = !memchr(s + i, '\'', end - i) && !memchr(s + i, '"', end - i) &&
                           !memchr(s + i, '\\', end - i),
        };
        return end;
}

/* Splits only the command substitutions of a text that is otherwise data. */
static void split_substitutions(struct split *c, const char *s, size_t len, unsigned depth) {
        for (size_t i = 0; i < len && c->error == 0;) {
                if (s[i] == '\\')
                        i += 2;
                else if (s[i] == '$' && i + 1 < len && s[i + 1] == '(')
                        i = split_subst(c, s, len, i + 2, false, depth);
                else if (s[i] == '`')
                        i = split_subst(c, s, len, i + 1, true, depth);
                else
                        i++;
        }
}

/* s[i] starts the body; returns the index after the delimiter line. */
static size_t heredoc_body(struct split *c, const char *s, size_t len, size_t i, struct heredoc *h, unsigned depth) {
        size_t body = i, body_end = len, next = len;

        while (i < len) {
                const char *nl = memchr(s + i, '\n', len - i);
                size_t e = nl ? (size_t) (nl - s) : len, t = i;
                if (h->strip_tabs)
                        while (t < e && s[t] == '\t')
                                t++;
                if (e - t == h->n && memcmp(s + t, h->delim, h->n) == 0) {
                        body_end = i;
                        next = MIN(e + 1, len);
                        break;
                }
                i = e + 1;
        }
        if (h->shell)
                split_text(c, s + body, body_end - body, depth + 1);
        else if (h->expands)
                split_substitutions(c, s + body, body_end - body, depth);
        free(h->delim);
        *h = (struct heredoc) {};
        return next;
}

static void split_text(struct split *c, const char *s, size_t len, unsigned depth) {
        struct heredoc h = {};
        size_t start = 0, i = 0;

        if (depth > DENYLIST_DEPTH_MAX) {
                c->error = -ELOOP;
                return;
        }
        while (i < len && c->error == 0) {
                char ch = s[i];
                if (ch == '\\')
                        i += 2;
                else if (ch == '\'')
                        i = skip_single(s, len, i);
                else if (ch == '$' && i + 1 < len && s[i + 1] == '\'')
                        i = skip_ansi(s, len, i + 1);
                else if (ch == '"')
                        i = split_double(c, s, len, i, depth);
                else if (ch == '$' && i + 1 < len && s[i + 1] == '(')
                        i = split_subst(c, s, len, i + 2, false, depth);
                else if (ch == '`')
                        i = split_subst(c, s, len, i + 1, true, depth);
                else if (ch == '<' && i + 2 < len && s[i + 1] == '<' && s[i + 2] != '<')
                        i = heredoc_open(c, s, len, i + 2, start, &h, depth);
                else if (ch == '<' && i + 2 < len && s[i + 1] == '<')
                        i += 3;
                else if (ch == '\n' && h.delim) {
                        add_piece(c, s + start, i - start, depth);
                        start = i = heredoc_body(c, s, len, i + 1, &h, depth);
                } else {
                        if (strchr(";&|\n()", ch) && ch) {
                                add_piece(c, s + start, i - start, depth);
                                start = i + 1;
                        }
                        i++;
                }
        }
        free(h.delim);
        if (start < len)
                add_piece(c, s + start, len - start, depth);
}

static int split_len(const char *cmd, size_t len, char ***ret) {
        struct split c = {};

        c.v = calloc(DENYLIST_PIECES_MAX + 1, sizeof(char *));
        if (!c.v)
                return -ENOMEM;
        split_text(&c, cmd, len, 0);
        if (c.error < 0) {
                strv_free(c.v);
                return c.error;
        }
        *ret = c.v;
        return (int) c.n;
}

int denylist_split(const char *cmd, char ***ret) {
        if (!cmd || !ret)
                return -EINVAL;
        size_t len = strlen(cmd);
        if (len > DENYLIST_COMMAND_MAX)
                return -E2BIG;
        return split_len(cmd, len, ret);
}

/* ---- checking ----------------------------------------------------------- */

struct matcher {
        const struct denylist *d;
        pcre2_match_data *md;
        pcre2_match_context *mctx;
};

/* Returns the matching rule's id, or NULL. A match that runs into PCRE2's
 * limits, or fails in any other way, counts as a match: a crafted string
 * must not turn the tripwire off. */
static const char *match_any(const struct matcher *m, const char *s, size_t len) {
        (void) pcre2_set_match_limit(m->mctx, MATCH_LIMIT_BASE + MATCH_LIMIT_PER_BYTE * len);
        (void) pcre2_set_depth_limit(m->mctx, DEPTH_LIMIT_BASE + len);
        for (size_t i = 0; i < m->d->n_rules; i++) {
                int rc = pcre2_match(m->d->rules[i].code, (PCRE2_SPTR) s, len, 0, 0, m->md, m->mctx);
                if (rc != PCRE2_ERROR_NOMATCH)
                        return m->d->rules[i].id;
        }
        return NULL;
}

/* Checks s raw and de-obfuscated; *ret_rule is the rule, or NULL. */
static int check_one(const struct matcher *m, const char *s, size_t len, const char **ret_rule) {
        _cleanup_free_ char *clean = NULL;

        *ret_rule = match_any(m, s, len);
        if (*ret_rule)
                return 0;
        int r = denylist_deobfuscate(s, len, &clean);
        if (r < 0)
                return r;
        if (r == 0) {
                *ret_rule = "deobfuscation-limit";
                return 0;
        }
        if (strlen(clean) != len || memcmp(clean, s, len) != 0)
                *ret_rule = match_any(m, clean, strlen(clean));
        return 0;
}

static int check_pieces(const struct matcher *m, const char *cmd, size_t len, const char **ret_rule) {
        _cleanup_strv_free_ char **pieces = NULL;

        int n = split_len(cmd, len, &pieces);
        if (n == -E2BIG || n == -ELOOP) {
                *ret_rule = "split-limit";
                return 0;
        }
        if (n < 0)
                return n;
        *ret_rule = NULL;
        for (int i = 0; i < n && !*ret_rule; i++) {
                size_t k = strlen(pieces[i]);
                if (k == len && memcmp(pieces[i], cmd, len) == 0)
                        continue;       /* checked whole already */
                int r = check_one(m, pieces[i], k, ret_rule);
                if (r < 0)
                        return r;
        }
        return 0;
}

int denylist_check(const struct denylist *d, const char *cmd, size_t len,
                   enum denylist_verdict *ret, const char **ret_rule) {
        const char *rule = NULL;
        enum denylist_verdict v = DENYLIST_OK;
        int r = -ENOMEM;

        if (!d || !cmd || !ret)
                return -EINVAL;
        if (len > DENYLIST_COMMAND_MAX)
                return -E2BIG;
        if (memchr(cmd, '\0', len))
                return -EINVAL;

        /* Per call, so that a const denylist may be shared. */
        struct matcher m = {
                .d = d,
                .md = pcre2_match_data_create(1, NULL),
                .mctx = pcre2_match_context_create(NULL),
        };
        if (m.md && m.mctx)
                r = check_one(&m, cmd, len, &rule);
        if (r == 0 && rule)
                v = DENYLIST_WHOLE;
        else if (r == 0) {
                r = check_pieces(&m, cmd, len, &rule);
                if (r == 0 && rule)
                        v = DENYLIST_CHAINED;
        }
        pcre2_match_data_free(m.md);
        pcre2_match_context_free(m.mctx);
        if (r < 0)
                return r;
        *ret = v;
        if (ret_rule)
                *ret_rule = rule;
        return 0;
}

const char *denylist_message(enum denylist_verdict v) {
        switch (v) {
        case DENYLIST_WHOLE:
                return "Refused: command pattern matches credential-exfiltration denylist.";
        case DENYLIST_CHAINED:
                return "Refused: chained subcommand matches credential-exfiltration denylist.";
        case DENYLIST_OK:
        default:
                return NULL;
        }
}
