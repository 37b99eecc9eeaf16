/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command splitter: turns the model's run_shell string into an argv by
 * the POSIX shell's quoting rules and nothing else. No expansion of any kind
 * happens here and the result never reaches a shell, so $VAR, $(...),
 * backticks, ~, globs, braces, ; | & < > and # are plain bytes of a word; the
 * profile matcher then sees exactly what execve() will get.
 *
 * Runs in the broker, as the peer's uid, with no capabilities. Pure: no I/O,
 * no logging. One pass over the input, so time and memory are linear in its
 * length, which is bounded by POLICY_COMMAND_MAX.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "policy.h"

enum quote {
        QUOTE_NONE,
        QUOTE_SINGLE,
        QUOTE_DOUBLE,
};

struct splitter {
        const char *p;          /* next input byte */
        const char *end;
        char *word;             /* the word being built; never longer than the input */
        size_t word_len;
        bool in_word;           /* a word has started (possibly empty: '' or "") */
        char **argv;
        size_t n_argv;
        size_t n_alloc;
        const char *error;      /* static message for -EINVAL */
};

static void splitter_done(struct splitter *s) {
        free(s->word);
        for (size_t i = 0; i < s->n_argv; i++)
                free(s->argv[i]);
        free(s->argv);
}

static int splitter_fail(struct splitter *s, const char *message) {
        s->error = message;
        return -EINVAL;
}

/* Ends the current word, if one has started, and appends it to argv. */
static int splitter_end_word(struct splitter *s) {
        if (!s->in_word)
                return 0;
        if (s->n_argv >= POLICY_ARGV_MAX)
                return splitter_fail(s, "command has too many words");

        /* One slot more than the words for the terminating NULL. */
        if (s->n_argv + 2 > s->n_alloc) {
                size_t n = MIN(MAX(s->n_alloc * 2, (size_t) 16), (size_t) POLICY_ARGV_MAX + 1);
                char **a = realloc(s->argv, n * sizeof(char *));
                if (!a)
                        return -ENOMEM;
                s->argv = a;
                s->n_alloc = n;
        }

        char *w = strndup(s->word, s->word_len);
        if (!w)
                return -ENOMEM;
        s->argv[s->n_argv++] = w;
        s->argv[s->n_argv] = NULL;
        s->word_len = 0;
        s->in_word = false;
        return 0;
}

static void splitter_add(struct splitter *s, char c) {
        s->word[s->word_len++] = c;
        s->in_word = true;
}

/* Outside quotes: blanks separate words, a backslash quotes the next byte
 * (and backslash-newline disappears), quotes open. */
static int splitter_step_unquoted(struct splitter *s, enum quote *q) {
        char c = *s->p++;

        switch (c) {
        case ' ':
        case '\t':
        case '\n':
                return splitter_end_word(s);
        case '\\':
                if (s->p >= s->end)
                        return splitter_fail(s, "command ends with a lone backslash");
                c = *s->p++;
                if (c != '\n')
                        splitter_add(s, c);
                return 0;
        case '\'':
                s->in_word = true;
                *q = QUOTE_SINGLE;
                return 0;
        case '"':
                s->in_word = true;
                *q = QUOTE_DOUBLE;
                return 0;
        default:
                splitter_add(s, c);
                return 0;
        }
}

/* Inside double quotes a backslash only escapes $ ` " \ and newline (which
 * it removes); before anything else it is an ordinary byte. */
static void splitter_step_double(struct splitter *s, enum quote *q) {
        char c = *s->p++;

        if (c == '"') {
                *q = QUOTE_NONE;
                return;
        }
        if (c == '\\' && s->p < s->end) {
                char n = *s->p;
                if (n == '\n') {
                        s->p++;
                        return;
                }
                if (memchr("$`\"\\", n, 4)) {
                        s->p++;
                        c = n;
                }
        }
        splitter_add(s, c);
}

static int splitter_run(struct splitter *s) {
        enum quote q = QUOTE_NONE;
        int r;

        while (s->p < s->end) {
                switch (q) {
                case QUOTE_NONE:
                        r = splitter_step_unquoted(s, &q);
                        if (r < 0)
                                return r;
                        break;
                case QUOTE_SINGLE:
                        if (*s->p == '\'')
                                q = QUOTE_NONE;
                        else
                                splitter_add(s, *s->p);
                        s->p++;
                        break;
                case QUOTE_DOUBLE:
                        splitter_step_double(s, &q);
                        break;
                default:
                        return splitter_fail(s, "internal error: bad quote state");
                }
        }

        if (q == QUOTE_SINGLE)
                return splitter_fail(s, "command has an unterminated single quote");
        if (q == QUOTE_DOUBLE)
                return splitter_fail(s, "command has an unterminated double quote");

        r = splitter_end_word(s);
        if (r < 0)
                return r;
        if (s->n_argv == 0)
                return splitter_fail(s, "command is empty");
        return 0;
}

int policy_argv_split_n(const char *cmd, size_t len, char ***ret_argv, const char **ret_error) {
        struct splitter s = {};
        int r;

        if (!ret_argv)
                return -EINVAL;

        if (!cmd)
                r = splitter_fail(&s, "command is missing");
        else if (len > POLICY_COMMAND_MAX)
                r = splitter_fail(&s, "command is too long");
        else if (memchr(cmd, '\0', len))
                r = splitter_fail(&s, "command contains a NUL byte");
        else {
                s.p = cmd;
                s.end = cmd + len;
                s.word = malloc(len + 1);
                r = s.word ? splitter_run(&s) : -ENOMEM;
        }
        if (r < 0) {
                if (r == -EINVAL && ret_error)
                        *ret_error = s.error;
                splitter_done(&s);
                return r;
        }

        free(s.word);
        *ret_argv = s.argv;
        return 0;
}

int policy_argv_split(const char *cmd, char ***ret_argv, const char **ret_error) {
        /* Never scan past the limit: the command may be huge. */
        size_t len = cmd ? strnlen(cmd, (size_t) POLICY_COMMAND_MAX + 1) : 0;
        return policy_argv_split_n(cmd, len, ret_argv, ret_error);
}
