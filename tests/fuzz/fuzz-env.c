/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the environment filter (daemon/policy_env.c). The
 * input is lines: "+NAME" lists NAME in the skill's pass list, anything else
 * is a client entry "NAME=value" (no '=' means an empty value). The first
 * byte is a flag, not a line: when it is odd every client name is listed too, so that secrets are
 * actually asked for. The output must hold every base entry unchanged, no
 * duplicate name, and no secret-shaped or invalid name that is not in base.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LINES_MAX (POLICY_ENV_ENTRIES_MAX + 8)

static const struct env_pair base[] = {
        { "PATH", "/usr/bin:/bin" },
        { "HOME", "/home/u" },
        { "TERM", "dumb" },
        { "TOOLSD_TOKEN", "kept" },     /* secret-shaped, but toolsd's own */
};

static bool in_base(const char *name, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(base); i++)
                if (strlen(base[i].name) == len && memcmp(base[i].name, name, len) == 0)
                        return true;
        return false;
}

static void check_output(char **envp) {
        size_t n = strv_length(envp);

        for (size_t i = 0; i < ELEMENTSOF(base); i++) {
                _cleanup_free_ char *e = NULL;
                if (asprintf(&e, "%s=%s", base[i].name, base[i].value) < 0)
                        abort();
                if (i >= n || strcmp(envp[i], e) != 0)
                        abort();
        }
        for (size_t i = 0; i < n; i++) {
                const char *eq = strchr(envp[i], '=');
                if (!eq)
                        abort();
                _cleanup_free_ char *name = strndup(envp[i], eq - envp[i]);
                if (!name)
                        abort();
                if (!in_base(name, strlen(name)) &&
                    (policy_env_name_is_secret(name) || !policy_env_name_valid(name) ||
                     strlen(eq + 1) > POLICY_COMMAND_MAX))
                        abort();
                for (size_t j = 0; j < i; j++)
                        if (strncmp(envp[j], envp[i], eq - envp[i] + 1) == 0)
                                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = malloc(size + 1);
        _cleanup_free_ struct env_pair *client = calloc(LINES_MAX, sizeof(struct env_pair));
        _cleanup_free_ const char **pass = calloc(2 * LINES_MAX, sizeof(char *));
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;
        size_t n_client = 0, n_pass = 0;
        bool list_all = size > 0 && (data[0] & 1);

        if (!text || !client || !pass)
                abort();
        if (size > 0)
                memcpy(text, data + 1, size - 1);
        text[size > 0 ? size - 1 : 0] = '\0';

        for (char *line = text, *next; line && n_client < LINES_MAX && n_pass < LINES_MAX; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (line[0] == '+') {
                        pass[n_pass++] = line + 1;
                        continue;
                }
                char *eq = strchr(line, '=');
                if (eq)
                        *eq++ = '\0';
                client[n_client++] = (struct env_pair) { line, eq ?: "" };
                if (list_all)
                        pass[n_pass++] = line;
        }

        int r = policy_env_build(base, ELEMENTSOF(base), pass, n_pass, client, n_client, &envp, &dropped);
        if (n_pass > POLICY_ENV_ENTRIES_MAX || n_client > POLICY_ENV_ENTRIES_MAX) {
                if (r != -E2BIG)
                        abort();
                return 0;
        }
        if (r < 0)
                abort();
        check_output(envp);
        return 0;
}
