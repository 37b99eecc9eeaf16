/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the credential-exfiltration denylist
 * (daemon/policy_denylist.c). The input is a command string, checked
 * against the shipped etc/toolsd/denylist.conf. Properties:
 *  - denylist_check never fails on a bounded NUL-free command, and its
 *    verdict and rule id agree;
 *  - denylist_deobfuscate never grows its input, never leaves ' " \ or NUL,
 *    and its result, when it says it reached one, is a fixed point;
 *  - denylist_split yields non-empty, trimmed pieces within the bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "denylist.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct denylist *rules;

static void check_deobfuscate(const char *s, size_t n) {
        _cleanup_free_ char *once = NULL, *twice = NULL;

        int r = denylist_deobfuscate(s, n, &once);
        if (r < 0)
                abort();
        size_t k = strlen(once);
        if (k > n || strpbrk(once, "'\"\\"))
                abort();
        if (k > 0 && (once[0] == ' ' || once[k - 1] == ' ' || strstr(once, "  ")))
                abort();
        if (r == 1 && (denylist_deobfuscate(once, k, &twice) != 1 || strcmp(once, twice) != 0))
                abort();
}

static void check_split(const char *s) {
        _cleanup_strv_free_ char **v = NULL;

        int n = denylist_split(s, &v);
        if (n == -E2BIG || n == -ELOOP)
                return;
        if (n < 0 || (size_t) n > DENYLIST_PIECES_MAX || strv_length(v) != (size_t) n)
                abort();
        for (int i = 0; i < n; i++) {
                size_t k = strlen(v[i]);
                if (k == 0 || strchr(" \t", v[i][0]) || strchr(" \t", v[i][k - 1]))
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        enum denylist_verdict v;
        const char *rule = NULL;

        if (!rules && denylist_load_file(SRCDIR "/etc/toolsd/denylist.conf", &rules, NULL) < 0)
                abort();
        if (size > DENYLIST_COMMAND_MAX)
                return 0;

        _cleanup_free_ char *s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';

        int r = denylist_check(rules, s, size, &v, &rule);
        if (memchr(s, '\0', size)) {
                if (r != -EINVAL)
                        abort();
        } else if (r < 0 || (v == DENYLIST_OK) != (rule == NULL) ||
                   (v != DENYLIST_OK) != (denylist_message(v) != NULL))
                abort();

        check_deobfuscate(s, size);
        check_split(s);
        return 0;
}
