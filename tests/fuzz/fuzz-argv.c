/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the command splitter (daemon/policy_argv.c). Splits
 * the input both as a C string and by length, checks the two agree, checks
 * the result's invariants, and that quoting every word again and splitting
 * that gives the same words back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each word in single quotes, ' written as '\'' */
static char *quote_words(char **argv) {
        size_t len = 1;
        for (char **w = argv; *w; w++)
                len += strlen(*w) * 4 + 3;
        char *s = malloc(len), *p = s;
        if (!s)
                abort();
        for (char **w = argv; *w; w++) {
                *p++ = '\'';
                for (const char *c = *w; *c; c++)
                        if (*c == '\'') {
                                memcpy(p, "'\\''", 4);
                                p += 4;
                        } else
                                *p++ = *c;
                *p++ = '\'';
                *p++ = ' ';
        }
        *p = '\0';
        return s;
}

static void check_invariants(char **argv, size_t size) {
        size_t n = 0, total = 0;

        for (; argv[n]; n++)
                total += strlen(argv[n]);
        if (n == 0 || n > POLICY_ARGV_MAX || total > size)
                abort();
}

static void check_round_trip(char **argv) {
        _cleanup_free_ char *q = quote_words(argv);
        _cleanup_strv_free_ char **again = NULL;
        const char *error = NULL;

        if (strlen(q) > POLICY_COMMAND_MAX)
                return;
        if (policy_argv_split(q, &again, &error) < 0)
                abort();
        for (size_t i = 0; argv[i] || again[i]; i++)
                if (!argv[i] || !again[i] || strcmp(argv[i], again[i]) != 0)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *copy = malloc(size + 1);
        _cleanup_strv_free_ char **argv = NULL, **argv_n = NULL;
        const char *error = NULL, *error_n = NULL;
        int r, r_n;

        if (!copy)
                return 0;
        memcpy(copy, data, size);
        copy[size] = '\0';

        r = policy_argv_split(copy, &argv, &error);
        r_n = policy_argv_split_n((const char *) data, size, &argv_n, &error_n);
        if ((r < 0) != (error != NULL) || (r_n < 0) != (error_n != NULL))
                abort();
        if (!memchr(data, '\0', size) && (r != r_n || (r < 0 && strcmp(error, error_n) != 0)))
                abort();
        if (r < 0)
                return 0;

        check_invariants(argv, strlen(copy));
        if (r_n >= 0)
                check_invariants(argv_n, size);
        check_round_trip(argv);
        return 0;
}
