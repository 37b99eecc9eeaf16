/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for the command splitter (daemon/policy_argv.c): exact argv for
 * quoting, hostile strings that must stay literal, and every refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "policy.h"

#define WORDS_MAX 8

struct split_case {
        const char *cmd;
        const char *words[WORDS_MAX];   /* NULL-terminated; empty = refusal */
        const char *error;              /* the refusal, when words is empty */
};

static const struct split_case cases[] = {
        /* blanks */
        { "ls", { "ls" } },
        { "ls -la /tmp", { "ls", "-la", "/tmp" } },
        { "  ls   -la  ", { "ls", "-la" } },
        { "ls\t-la\tx", { "ls", "-la", "x" } },
        { "ls\n-la\n", { "ls", "-la" } },
        { " \t\n ls \t\n ", { "ls" } },
        /* single quotes */
        { "echo 'a b'", { "echo", "a b" } },
        { "echo 'a\\b'", { "echo", "a\\b" } },
        { "echo '$HOME \"x\" `id`'", { "echo", "$HOME \"x\" `id`" } },
        { "echo 'it'\"'\"'s'", { "echo", "it's" } },
        { "echo 'a\nb'", { "echo", "a\nb" } },
        { "echo 'a\\\nb'", { "echo", "a\\\nb" } },
        /* double quotes */
        { "echo \"a b\"", { "echo", "a b" } },
        { "echo \"a\\\"b\"", { "echo", "a\"b" } },
        { "echo \"\\$HOME\"", { "echo", "$HOME" } },
        { "echo \"\\`x\\`\"", { "echo", "`x`" } },
        { "echo \"a\\\\b\"", { "echo", "a\\b" } },
        { "echo \"a\\nb\"", { "echo", "a\\nb" } },
        { "echo \"a\\\nb\"", { "echo", "ab" } },
        { "echo \"a\nb\"", { "echo", "a\nb" } },
        { "echo \"it's\"", { "echo", "it's" } },
        { "echo \"$HOME\"", { "echo", "$HOME" } },
        /* empty words */
        { "cat ''", { "cat", "" } },
        { "cat \"\"", { "cat", "" } },
        { "'' x", { "", "x" } },
        { "a '' \"\" b", { "a", "", "", "b" } },
        { "a''b", { "ab" } },
        /* backslash outside quotes */
        { "a\\ b", { "a b" } },
        { "a\\\\b", { "a\\b" } },
        { "\\'x\\'", { "'x'" } },
        { "\\\"", { "\"" } },
        { "a\\\nb", { "ab" } },
        { "ls \\\n -l", { "ls", "-l" } },
        { "\\$(id)", { "$(id)" } },
        /* no expansion, no operators */
        { "echo $(rm -rf /)", { "echo", "$(rm", "-rf", "/)" } },
        { "echo \"$(rm -rf /)\"", { "echo", "$(rm -rf /)" } },
        { "echo `rm -rf /`", { "echo", "`rm", "-rf", "/`" } },
        { "cat ~/.ssh/id_rsa", { "cat", "~/.ssh/id_rsa" } },
        { "ls *", { "ls", "*" } },
        { "ls ?.c [ab].h {a,b}", { "ls", "?.c", "[ab].h", "{a,b}" } },
        { "echo $HOME ${PATH}", { "echo", "$HOME", "${PATH}" } },
        { "echo a;b", { "echo", "a;b" } },
        { "echo a ; rm x", { "echo", "a", ";", "rm", "x" } },
        { "a|b a&&b a||b a&", { "a|b", "a&&b", "a||b", "a&" } },
        { "a>b <c 2>&1", { "a>b", "<c", "2>&1" } },
        { "ls # x", { "ls", "#", "x" } },
        { "ls#x", { "ls#x" } },
        { "FOO=bar env", { "FOO=bar", "env" } },
        { "-rf", { "-rf" } },
        /* bytes beyond ASCII pass through */
        { "echo héllo 日本", { "echo", "héllo", "日本" } },
        { "echo '\xff\xfe'", { "echo", "\xff\xfe" } },
        { "echo \x01\x7f", { "echo", "\x01\x7f" } },
        { "echo a\rb", { "echo", "a\rb" } },
        /* refusals */
        { "", {}, "command is empty" },
        { "   ", {}, "command is empty" },
        { "\t\n", {}, "command is empty" },
        { "\\\n", {}, "command is empty" },
        { "echo 'abc", {}, "command has an unterminated single quote" },
        { "'", {}, "command has an unterminated single quote" },
        { "echo \"abc", {}, "command has an unterminated double quote" },
        { "echo \"abc\\\"", {}, "command has an unterminated double quote" },
        { "echo \"a\\", {}, "command has an unterminated double quote" },
        { "echo abc\\", {}, "command ends with a lone backslash" },
        { "\\", {}, "command ends with a lone backslash" },
        { "echo 'it's'", {}, "command has an unterminated single quote" },
};

static void assert_split(size_t i, const struct split_case *c) {
        _cleanup_strv_free_ char **argv = NULL;
        const char *error = NULL;
        int r;

        r = policy_argv_split(c->cmd, &argv, &error);
        if (r != (c->words[0] ? 0 : -EINVAL))
                fail_msg("case %zu: got %d (%s)", i, r, error ?: "no error");
        if (!c->words[0]) {
                assert_int_equal(r, -EINVAL);
                assert_null(argv);
                assert_non_null(error);
                assert_string_equal(error, c->error);
                return;
        }
        assert_int_equal(r, 0);
        assert_null(error);
        size_t n = 0;
        while (c->words[n])
                n++;
        if (strv_length(argv) != n)
                fail_msg("case %zu: got %zu words", i, strv_length(argv));
        for (size_t k = 0; k < n; k++)
                assert_string_equal(argv[k], c->words[k]);
        assert_null(argv[n]);
}

static void test_table(void **state) {
        assert_true(ELEMENTSOF(cases) >= 40);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_split(i, &cases[i]);
}

/* "a a a ..." with n words. */
static char *words_command(size_t n) {
        char *s = malloc(n * 2);
        assert_non_null(s);
        for (size_t i = 0; i < n; i++) {
                s[2 * i] = 'a';
                s[2 * i + 1] = ' ';
        }
        s[n * 2 - 1] = '\0';
        return s;
}

static void test_word_limit(void **state) {
        _cleanup_free_ char *max = words_command(POLICY_ARGV_MAX);
        _cleanup_free_ char *over = words_command(POLICY_ARGV_MAX + 1);
        _cleanup_strv_free_ char **argv = NULL;
        char **unset = (char **) 0x1;
        const char *error = NULL;

        assert_int_equal(policy_argv_split(max, &argv, &error), 0);
        assert_int_equal(strv_length(argv), POLICY_ARGV_MAX);
        assert_string_equal(argv[POLICY_ARGV_MAX - 1], "a");
        assert_null(argv[POLICY_ARGV_MAX]);

        assert_int_equal(policy_argv_split(over, &unset, &error), -EINVAL);
        assert_string_equal(error, "command has too many words");
        assert_ptr_equal(unset, (char **) 0x1);

        /* Many empty words count too. */
        _cleanup_free_ char *empties = malloc(3 * (POLICY_ARGV_MAX + 1) + 1);
        assert_non_null(empties);
        for (size_t i = 0; i <= POLICY_ARGV_MAX; i++)
                memcpy(empties + 3 * i, "'' ", 3);
        empties[3 * (POLICY_ARGV_MAX + 1)] = '\0';
        error = NULL;
        assert_int_equal(policy_argv_split(empties, &unset, &error), -EINVAL);
        assert_string_equal(error, "command has too many words");
}

static void test_length_limit(void **state) {
        _cleanup_free_ char *s = malloc(POLICY_COMMAND_MAX + 2);
        _cleanup_strv_free_ char **argv = NULL;
        char **unset = NULL;
        const char *error = NULL;

        assert_non_null(s);
        /* One word of exactly the maximum length. */
        memset(s, 'x', POLICY_COMMAND_MAX);
        s[POLICY_COMMAND_MAX] = '\0';
        assert_int_equal(policy_argv_split(s, &argv, &error), 0);
        assert_int_equal(strv_length(argv), 1);
        assert_int_equal(strlen(argv[0]), POLICY_COMMAND_MAX);

        s[POLICY_COMMAND_MAX] = 'x';
        s[POLICY_COMMAND_MAX + 1] = '\0';
        assert_int_equal(policy_argv_split(s, &unset, &error), -EINVAL);
        assert_string_equal(error, "command is too long");
        assert_null(unset);

        /* The length is checked before the content: no scan of the rest. */
        error = NULL;
        assert_int_equal(policy_argv_split_n(s, POLICY_COMMAND_MAX + 1, &unset, &error), -EINVAL);
        assert_string_equal(error, "command is too long");
}

static void test_split_n(void **state) {
        _cleanup_strv_free_ char **argv = NULL;
        char **unset = NULL;
        const char *error = NULL;

        /* Not NUL-terminated: only len bytes count. */
        assert_int_equal(policy_argv_split_n("ls -l/etc", 5, &argv, &error), 0);
        assert_int_equal(strv_length(argv), 2);
        assert_string_equal(argv[0], "ls");
        assert_string_equal(argv[1], "-l");

        assert_int_equal(policy_argv_split_n("ls\0 -la", 7, &unset, &error), -EINVAL);
        assert_string_equal(error, "command contains a NUL byte");
        assert_null(unset);
        error = NULL;
        assert_int_equal(policy_argv_split_n("'a\0'", 4, &unset, &error), -EINVAL);
        assert_string_equal(error, "command contains a NUL byte");

        error = NULL;
        assert_int_equal(policy_argv_split_n("", 0, &unset, &error), -EINVAL);
        assert_string_equal(error, "command is empty");

        /* A quote cut off by len is unterminated. */
        error = NULL;
        assert_int_equal(policy_argv_split_n("'ab'", 3, &unset, &error), -EINVAL);
        assert_string_equal(error, "command has an unterminated single quote");
}

static void test_bad_arguments(void **state) {
        char **unset = NULL;
        const char *error = NULL;

        assert_int_equal(policy_argv_split(NULL, &unset, &error), -EINVAL);
        assert_string_equal(error, "command is missing");
        assert_null(unset);
        assert_int_equal(policy_argv_split("ls", NULL, &error), -EINVAL);
        /* ret_error may be NULL. */
        assert_int_equal(policy_argv_split("'", &unset, NULL), -EINVAL);
        assert_null(unset);
}

static void test_long_word(void **state) {
        /* A long quoted word with escapes: every byte accounted for. */
        size_t n = 100000;
        _cleanup_free_ char *s = malloc(n * 2 + 8);
        _cleanup_strv_free_ char **argv = NULL;
        const char *error = NULL;
        char *p = s;

        assert_non_null(s);
        *p++ = '"';
        for (size_t i = 0; i < n; i++) {
                *p++ = '\\';
                *p++ = (i % 2) ? '$' : 'q';
        }
        *p++ = '"';
        *p = '\0';
        assert_int_equal(policy_argv_split(s, &argv, &error), 0);
        assert_int_equal(strv_length(argv), 1);
        /* \$ becomes $, \q stays \q. */
        assert_int_equal(strlen(argv[0]), n / 2 + n);
        assert_memory_equal(argv[0], "\\q$\\q$", 6);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_word_limit),
                cmocka_unit_test(test_length_limit),
                cmocka_unit_test(test_split_n),
                cmocka_unit_test(test_bad_arguments),
                cmocka_unit_test(test_long_word),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
