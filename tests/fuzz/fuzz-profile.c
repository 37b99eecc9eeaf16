/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for command profiles (policy_profile.c). The first byte
 * picks the mode:
 *   even: the rest is profile text; if it loads, a fixed set of argvs is
 *         matched against every profile it defines;
 *   odd:  the rest is an argv (words split on NUL bytes) matched against
 *         the shipped profiles.
 * Either way every verdict is checked: a refusal message is bounded, NUL
 * terminated valid UTF-8 naming the profile; an allow has a shape and flags.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_utf8(const char *s) {
        const unsigned char *u = (const unsigned char *) s;
        while (*u) {
                size_t n = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 : (*u & 0xf0) == 0xe0 ? 3 :
                           (*u & 0xf8) == 0xf0 ? 4 : 0;
                if (n == 0)
                        return false;
                for (size_t k = 1; k < n; k++)
                        if ((u[k] & 0xc0) != 0x80)
                                return false;
                u += n;
        }
        return true;
}

static void check(const struct profile *p, char *const *argv) {
        struct profile_match m;
        size_t argc = 0;

        while (argv[argc])
                argc++;
        assert(profile_match(p, argv, &m) == 0);
        if (m.allowed) {
                assert(m.shape);
                for (size_t i = 0; i < argc; i++)
                        assert(m.path_arg[i] || !m.path_must_exist[i]);
        } else {
                assert(!m.path_arg && !m.path_must_exist);
                assert(strnlen(m.message, POLICY_MESSAGE_MAX) < POLICY_MESSAGE_MAX);
                assert(valid_utf8(m.message));
                assert(strstr(m.message, profile_name(p)));
        }
        profile_match_done(&m);
}

static const char *const fixed[][6] = {
        { "python3", "-m", "py_compile", "x.py", NULL },
        { "python3", "-c", "import os", NULL },
        { "head", "-n", "5", "f", NULL },
        { "ls", NULL },
        { "a", "b", "c", NULL },
        { "x", "-1", "--", "", NULL },
        { "", NULL },
        { NULL },
};

static void fuzz_text(const char *text) {
        struct profile_set *s = NULL;
        char *error = NULL;

        if (profile_set_load_string(text, "fuzz.conf", &s, &error) < 0) {
                assert(!s);
                assert(error && valid_utf8(error));
                assert(strncmp(error, "fuzz.conf:", 10) == 0);
                free(error);
                return;
        }
        assert(!error);
        /* the profiles it defines: names after "profile " at a line start */
        for (const char *l = text; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                char name[65];
                size_t n;

                l += strspn(l, " \t");
                if (strncmp(l, "profile", 7) != 0 || !strchr(" \t", l[7]) || !l[7])
                        continue;
                l += 7 + strspn(l + 7, " \t");
                n = strcspn(l, " \t\n");
                if (n == 0 || n >= sizeof name)
                        continue;
                memcpy(name, l, n);
                name[n] = 0;
                const struct profile *p = profile_set_find(s, name);
                assert(p);
                for (const char *const *sh = profile_shapes(p); *sh; sh++)
                        assert(valid_utf8(*sh));
                for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
                        check(p, (char *const *) fixed[i]);
        }
        profile_set_free(s);
}

static void fuzz_argv(const char *buf, size_t size) {
        static struct profile_set *shipped;
        char *argv[POLICY_ARGV_MAX + 2];
        size_t argc = 0;

        if (!shipped) {
                char *error = NULL;
                if (profile_set_load_dir(SRCDIR "/etc/toolsd/profiles.d", &shipped, &error) < 0)
                        abort();
        }
        /* buf is NUL-terminated one past size: the last word ends there */
        for (size_t i = 0; i < size && argc <= POLICY_ARGV_MAX; i += strlen(buf + i) + 1)
                argv[argc++] = (char *) buf + i;
        argv[argc] = NULL;
        check(profile_set_find(shipped, "passive"), argv);
        check(profile_set_find(shipped, "full"), argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf;

        if (size == 0 || size > 64 * 1024)
                return 0;
        buf = malloc(size);
        if (!buf)
                return 0;
        memcpy(buf, data + 1, size - 1);
        buf[size - 1] = 0;
        if (data[0] & 1)
                fuzz_argv(buf, size - 1);
        else
                fuzz_text(buf);
        free(buf);
        return 0;
}
