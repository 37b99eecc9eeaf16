/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for the environment filter (daemon/policy_env.c): the secret
 * name table both ways, name validity, and policy_env_build's exact output,
 * order and dropped list for every rule and refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "policy.h"

static const char *const secret_names[] = {
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SECRET_KEY", "APIKEY", "api_key",
        "MY_API_KEY", "STRIPE_KEY", "MONKEY", "aws_access_key_id", "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN", "AWS_REGION", "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN",
        "NPM_TOKEN", "CI_JOB_TOKEN", "SLACK_BOT_TOKEN", "MYTOKEN", "Bearer_Token",
        "CLIENT_SECRET", "SECRETS_DIR", "DJANGO_SECRET", "PASSWORD", "PGPASSWORD",
        "MYSQL_ROOT_PASSWORD", "DB_PASSWD", "GPG_PASSPHRASE", "SSH_PASSPHRASE_FILE",
        "GOOGLE_APPLICATION_CREDENTIALS", "CREDENTIALS_FILE", "PRIVATE_KEY_PATH",
        "GITHUB_PAT", "HOMEBREW_GITHUB_API_TOKEN", "NPM_AUTH", "OAUTH", "BASIC_AUTH_USER",
        "SESSION_COOKIE", "XDG_SESSION_ID", "DBUS_SESSION_BUS_ADDRESS", "DATABASE_URL",
        "TEST_DATABASE_URL", "SENTRY_DSN", "REDIS_URL", "MONGODB_URI", "SSH_AUTH_SOCK",
        "AZURE_CLIENT_ID", "GCP_PROJECT", "GCLOUD_PROJECT", "HF_HOME", "HUGGINGFACE_HUB_TOKEN",
        "PYPI_PASSWORD", "PYPI_UPLOAD", "TWILIO_SID", "DOCKER_HOST", "VAULT_ADDR",
        "KUBECONFIG", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "ld_preload",
        "GCONV_PATH", "MYSQL_PASS", "DB_PWD", "AZURE_STORAGE_CONNECTION_STRING",
        "HTTP_AUTHORIZATION", "GITHUB_TOKEN_FILE",
};

static const char *const plain_names[] = {
        "PATH", "HOME", "USER", "SHELL", "TMPDIR", "LANG", "LANGUAGE", "LC_ALL",
        "LC_CTYPE", "TERM", "TZ", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "NODE_ENV",
        "GOPATH", "GOFLAGS", "CC", "CXX", "CFLAGS", "LDFLAGS", "RUST_LOG", "RUST_BACKTRACE",
        "CARGO_HOME", "CI", "PWD", "OLDPWD", "EDITOR", "PAGER", "VIRTUAL_ENV",
        "PIP_INDEX_URL", "JAVA_HOME", "MAKEFLAGS", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
        "TOKENIZERS_PARALLELISM", "KEYBOARD_LAYOUT", "NO_COLOR", "COLUMNS", "",
};

static void test_secret_names(void **state) {
        assert_true(ELEMENTSOF(secret_names) >= 40);
        assert_true(ELEMENTSOF(plain_names) >= 20);
        for (size_t i = 0; i < ELEMENTSOF(secret_names); i++)
                if (!policy_env_name_is_secret(secret_names[i]))
                        fail_msg("not taken for a secret: %s", secret_names[i]);
        for (size_t i = 0; i < ELEMENTSOF(plain_names); i++)
                if (policy_env_name_is_secret(plain_names[i]))
                        fail_msg("taken for a secret: %s", plain_names[i]);
        assert_false(policy_env_name_is_secret(NULL));
}

static void test_name_valid(void **state) {
        char name[300];

        assert_true(policy_env_name_valid("PATH"));
        assert_true(policy_env_name_valid("_"));
        assert_true(policy_env_name_valid("a1_B2"));
        assert_true(policy_env_name_valid("_9"));
        assert_false(policy_env_name_valid(NULL));
        assert_false(policy_env_name_valid(""));
        assert_false(policy_env_name_valid("9A"));
        assert_false(policy_env_name_valid("A-B"));
        assert_false(policy_env_name_valid("A=B"));
        assert_false(policy_env_name_valid("A B"));
        assert_false(policy_env_name_valid("A.B"));
        assert_false(policy_env_name_valid("Ä"));
        assert_false(policy_env_name_valid("A\n"));

        memset(name, 'A', sizeof(name));
        name[255] = '\0';
        assert_true(policy_env_name_valid(name));
        name[255] = 'A';
        name[256] = '\0';
        assert_false(policy_env_name_valid(name));
        name[299] = '\0';
        assert_false(policy_env_name_valid(name));
}

static void assert_strv(char **v, const char *const *expect) {
        size_t n = 0;
        while (expect[n])
                n++;
        if (strv_length(v) != n)
                for (size_t i = 0; v[i]; i++)
                        print_message("# got %s\n", v[i]);
        assert_int_equal(strv_length(v), n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(v[i], expect[i]);
}

static const struct env_pair base[] = {
        { "PATH", "/usr/bin:/bin" },
        { "HOME", "/home/u" },
        { "TERM", "dumb" },
        { "TMPDIR", "/tmp" },
};

static void test_build_basic(void **state) {
        const char *const pass[] = { "PYTHONPATH", "OPENAI_API_KEY", "NODE_ENV", "UNSET_NAME" };
        const struct env_pair client[] = {
                { "OPENAI_API_KEY", "sk-live-123" },
                { "NODE_ENV", "production" },
                { "PYTHONPATH", "/src" },
                { "LC_TIME", "C" },
                { "LANG", "de_DE.UTF-8" },
                { "TZ", "Europe/Berlin" },
                { "TERM", "xterm" },             /* base wins, silently */
                { "AWS_SECRET_ACCESS_KEY", "x" }, /* not listed: absent */
                { "EDITOR", "vi" },               /* not listed: absent */
                { "LC_ALL", "C.UTF-8" },
                { "LANGUAGE", "de" },
        };
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(base, ELEMENTSOF(base), pass, ELEMENTSOF(pass),
                                          client, ELEMENTSOF(client), &envp, &dropped), 0);
        assert_strv(envp, (const char *const[]) {
                "PATH=/usr/bin:/bin", "HOME=/home/u", "TERM=dumb", "TMPDIR=/tmp",
                "PYTHONPATH=/src", "NODE_ENV=production",
                "LANG=de_DE.UTF-8", "LANGUAGE=de", "LC_ALL=C.UTF-8", "LC_TIME=C",
                "TZ=Europe/Berlin", NULL });
        assert_strv(dropped, (const char *const[]) { "OPENAI_API_KEY", NULL });
}

static void test_build_base_override(void **state) {
        /* A listed base name is reported as reserved and never overrides. */
        const char *const pass[] = { "PATH", "HOME", "CC" };
        const struct env_pair client[] = {
                { "PATH", "/evil:/usr/bin" },
                { "HOME", "/root" },
                { "CC", "gcc" },
        };
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(base, ELEMENTSOF(base), pass, ELEMENTSOF(pass),
                                          client, ELEMENTSOF(client), &envp, &dropped), 0);
        assert_strv(envp, (const char *const[]) {
                "PATH=/usr/bin:/bin", "HOME=/home/u", "TERM=dumb", "TMPDIR=/tmp", "CC=gcc", NULL });
        assert_strv(dropped, (const char *const[]) { "PATH", "HOME", NULL });
}

static void test_build_invalid_and_secret(void **state) {
        const char *const pass[] = { "A=B", "9X", "", "LD_PRELOAD", "GITHUB_TOKEN", "ok_name", "BAD NAME" };
        const struct env_pair client[] = {
                { "A=B", "1" }, { "9X", "2" }, { "", "3" }, { "LD_PRELOAD", "/tmp/x.so" },
                { "GITHUB_TOKEN", "ghp_x" }, { "ok_name", "" }, { "BAD NAME", "4" },
                { "LC_MY_TOKEN", "5" },   /* LC_* but secret-shaped: not implicit */
                { "LC-X", "6" },          /* not a valid name: not implicit */
        };
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(NULL, 0, pass, ELEMENTSOF(pass),
                                          client, ELEMENTSOF(client), &envp, &dropped), 0);
        assert_strv(envp, (const char *const[]) { "ok_name=", NULL });
        assert_strv(dropped, (const char *const[]) {
                "A=B", "9X", "", "LD_PRELOAD", "GITHUB_TOKEN", "BAD NAME", NULL });
}

static void test_build_listed_secret_unset(void **state) {
        /* A secret-shaped listed name is reported even when the client did not set it. */
        const char *const pass[] = { "STRIPE_SECRET_KEY", "MISSING" };
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(base, 1, pass, ELEMENTSOF(pass), NULL, 0, &envp, &dropped), 0);
        assert_strv(envp, (const char *const[]) { "PATH=/usr/bin:/bin", NULL });
        assert_strv(dropped, (const char *const[]) { "STRIPE_SECRET_KEY", NULL });
}

static void test_build_duplicates(void **state) {
        const struct env_pair dup_base[] = {
                { "PATH", "/first" }, { "HOME", "/h" }, { "PATH", "/second" },
        };
        const char *const pass[] = { "CC", "GH_TOKEN", "CC", "GH_TOKEN", "CFLAGS" };
        const struct env_pair client[] = {
                { "CFLAGS", "-O2" }, { "CC", "clang" }, { "CC", "gcc" },
                { "LANG", "C" }, { "LANG", "fr_FR" }, { "GH_TOKEN", "x" },
        };
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(dup_base, ELEMENTSOF(dup_base), pass, ELEMENTSOF(pass),
                                          client, ELEMENTSOF(client), &envp, &dropped), 0);
        assert_strv(envp, (const char *const[]) {
                "PATH=/first", "HOME=/h", "CC=clang", "CFLAGS=-O2", "LANG=C", NULL });
        assert_strv(dropped, (const char *const[]) { "GH_TOKEN", NULL });
}

static void test_build_locale_listed(void **state) {
        /* A locale name that is also listed comes in pass order, once. */
        const char *const pass[] = { "LC_ALL", "RUST_LOG" };
        const struct env_pair client[] = {
                { "TZ", "UTC" }, { "RUST_LOG", "debug" }, { "LC_ALL", "C" }, { "LC_TERMINAL", "iTerm2" },
        };
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(NULL, 0, pass, ELEMENTSOF(pass),
                                          client, ELEMENTSOF(client), &envp, &dropped), 0);
        assert_strv(envp, (const char *const[]) {
                "LC_ALL=C", "RUST_LOG=debug", "LC_TERMINAL=iTerm2", "TZ=UTC", NULL });
        assert_strv(dropped, (const char *const[]) { NULL });
}

static void test_build_values(void **state) {
        _cleanup_free_ char *big = malloc(POLICY_COMMAND_MAX + 2);
        _cleanup_free_ char *max = malloc(POLICY_COMMAND_MAX + 1);
        _cleanup_free_ char *expect = malloc(POLICY_COMMAND_MAX + 16);
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_non_null(big);
        assert_non_null(max);
        assert_non_null(expect);
        memset(big, 'v', POLICY_COMMAND_MAX + 1);
        big[POLICY_COMMAND_MAX + 1] = '\0';
        memset(max, 'v', POLICY_COMMAND_MAX);
        max[POLICY_COMMAND_MAX] = '\0';

        const char *const pass[] = { "BIG", "MAX", "NL" };
        const struct env_pair client[] = {
                { "BIG", big }, { "MAX", max }, { "NL", "a\nb=c" }, { "TERM", big },
        };
        assert_int_equal(policy_env_build(NULL, 0, pass, ELEMENTSOF(pass),
                                          client, ELEMENTSOF(client), &envp, &dropped), 0);
        snprintf(expect, POLICY_COMMAND_MAX + 16, "MAX=%s", max);
        assert_int_equal(strv_length(envp), 2);
        assert_string_equal(envp[0], expect);
        assert_string_equal(envp[1], "NL=a\nb=c");
        assert_strv(dropped, (const char *const[]) { "BIG", "TERM", NULL });
}

static void test_build_empty(void **state) {
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(NULL, 0, NULL, 0, NULL, 0, &envp, &dropped), 0);
        assert_non_null(envp);
        assert_null(envp[0]);
        assert_non_null(dropped);
        assert_null(dropped[0]);
}

static void test_build_limits(void **state) {
        _cleanup_free_ struct env_pair *many = calloc(POLICY_ENV_ENTRIES_MAX + 1, sizeof(struct env_pair));
        _cleanup_free_ const char **names = calloc(POLICY_ENV_ENTRIES_MAX + 1, sizeof(char *));
        _cleanup_free_ char *storage = malloc((POLICY_ENV_ENTRIES_MAX + 1) * 8);
        _cleanup_strv_free_ char **envp = NULL, **dropped = NULL;
        char **unset = NULL, **unset2 = NULL;

        assert_non_null(many);
        assert_non_null(names);
        assert_non_null(storage);
        for (size_t i = 0; i <= POLICY_ENV_ENTRIES_MAX; i++) {
                snprintf(storage + i * 8, 8, "V%zu", i);
                names[i] = storage + i * 8;
                many[i] = (struct env_pair) { storage + i * 8, "x" };
        }

        /* At the limit: every listed name set, in pass order. */
        assert_int_equal(policy_env_build(NULL, 0, names, POLICY_ENV_ENTRIES_MAX,
                                          many, POLICY_ENV_ENTRIES_MAX, &envp, &dropped), 0);
        assert_int_equal(strv_length(envp), POLICY_ENV_ENTRIES_MAX);
        assert_string_equal(envp[0], "V0=x");
        assert_string_equal(envp[POLICY_ENV_ENTRIES_MAX - 1], "V1023=x");
        assert_int_equal(strv_length(dropped), 0);

        assert_int_equal(policy_env_build(NULL, 0, names, POLICY_ENV_ENTRIES_MAX + 1,
                                          many, 1, &unset, &unset2), -E2BIG);
        assert_int_equal(policy_env_build(NULL, 0, names, 1,
                                          many, POLICY_ENV_ENTRIES_MAX + 1, &unset, &unset2), -E2BIG);
        assert_int_equal(policy_env_build(many, POLICY_ENV_ENTRIES_MAX + 1, NULL, 0,
                                          NULL, 0, &unset, &unset2), -E2BIG);
        assert_null(unset);
        assert_null(unset2);
}

static void test_build_bad_arguments(void **state) {
        const struct env_pair bad_base[] = { { "NOT VALID", "x" } };
        const struct env_pair null_value[] = { { "A", NULL } };
        const struct env_pair null_name[] = { { NULL, "x" } };
        const char *const null_pass[] = { NULL };
        char **envp = NULL, **dropped = NULL;

        assert_int_equal(policy_env_build(bad_base, 1, NULL, 0, NULL, 0, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(null_value, 1, NULL, 0, NULL, 0, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 0, NULL, 0, null_value, 1, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 0, NULL, 0, null_name, 1, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 0, null_pass, 1, NULL, 0, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 1, NULL, 0, NULL, 0, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 0, NULL, 1, NULL, 0, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 0, NULL, 0, NULL, 1, &envp, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 0, NULL, 0, NULL, 0, NULL, &dropped), -EINVAL);
        assert_int_equal(policy_env_build(NULL, 0, NULL, 0, NULL, 0, &envp, NULL), -EINVAL);
        assert_null(envp);
        assert_null(dropped);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_secret_names),
                cmocka_unit_test(test_name_valid),
                cmocka_unit_test(test_build_basic),
                cmocka_unit_test(test_build_base_override),
                cmocka_unit_test(test_build_invalid_and_secret),
                cmocka_unit_test(test_build_listed_secret_unset),
                cmocka_unit_test(test_build_duplicates),
                cmocka_unit_test(test_build_locale_listed),
                cmocka_unit_test(test_build_values),
                cmocka_unit_test(test_build_empty),
                cmocka_unit_test(test_build_limits),
                cmocka_unit_test(test_build_bad_arguments),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
