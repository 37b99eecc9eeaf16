/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the command-profile loader and matcher (policy_profile.c):
 * the shipped profiles against a table of argvs, the refusal messages, the
 * precedence of deny rules, and every load error.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"

#define SHIPPED SRCDIR "/etc/toolsd/profiles.d"

static struct profile_set *shipped;

static int setup_shipped(void **state) {
        char *error = NULL;
        int r = profile_set_load_dir(SHIPPED, &shipped, &error);
        if (r < 0) {
                fprintf(stderr, "loading %s: %d %s\n", SHIPPED, r, error ? error : "");
                free(error);
                return -1;
        }
        return 0;
}

static int teardown_shipped(void **state) {
        profile_set_free(shipped);
        shipped = NULL;
        return 0;
}

/* flags: one char per word, '.' not a path, 'F' <file>, 'P' <path>; NULL
 * when refused. */
struct match_case {
        const char *profile;
        const char *argv[8];
        const char *flags;
};

#define A(prof, flags, ...) { prof, { __VA_ARGS__, NULL }, flags }
#define R(prof, ...) { prof, { __VA_ARGS__, NULL }, NULL }

static const struct match_case cases[] = {
        /* passive: python */
        A("passive", "..", "python3", "--version"),
        A("passive", "..", "python3", "-V"),
        A("passive", "...F", "python3", "-m", "py_compile", "x.py"),
        R("passive", "python3", "-m", "py_compile"),
        R("passive", "python3", "-m", "py_compile", "-c"),
        R("passive", "python3", "-m", "py_compile", "a.py", "b.py"),
        R("passive", "python3", "-m", "pip", "install", "x"),
        R("passive", "python3", "-m", "pytest"),
        R("passive", "python3", "-c", "import os"),
        R("passive", "python3", "file.py"),
        R("passive", "python3", "file.py", "--help"),
        R("passive", "python3"),
        R("passive", "python3", "--version", "x"),
        R("passive", "/usr/bin/python3", "--version"),
        R("passive", "./python3", "--version"),
        R("passive", "python", "--version"),
        A("passive", "..", "ruff", "--version"),
        A("passive", "..", "ruff", "check"),
        A("passive", "....", "ruff", "check", "--select", "E"),
        R("passive", "ruff", "format", "x.py"),
        A("passive", ".F", "mypy", "x.py"),
        R("passive", "mypy", "--config-file", "x"),
        A("passive", ".F", "pyflakes", "x.py"),
        R("passive", "pytest"),
        R("passive", "pytest", "-x", "tests"),
        /* passive: javascript */
        A("passive", "..", "node", "--version"),
        A("passive", "..", "node", "-v"),
        A("passive", "..", "npm", "--version"),
        R("passive", "npm", "install"),
        R("passive", "npm", "run", "build"),
        R("passive", "npx", "eslint"),
        R("passive", "node", "app.js"),
        R("passive", "node", "-e", "1"),
        R("passive", "node", "--eval", "1"),
        /* passive: ruby */
        A("passive", "..", "ruby", "--version"),
        A("passive", "..", "ruby", "-v"),
        A("passive", "..F", "ruby", "-c", "x.rb"),
        R("passive", "ruby", "-c", "-e"),
        R("passive", "ruby", "x.rb"),
        R("passive", "ruby", "-e", "puts 1"),
        A("passive", "..", "bundle", "--version"),
        R("passive", "bundle", "exec", "rake"),
        A("passive", ".F", "rubocop", "x.rb"),
        R("passive", "rake"),
        /* passive: go */
        A("passive", "..", "go", "version"),
        A("passive", "..", "go", "vet"),
        A("passive", "...", "go", "vet", "./..."),
        R("passive", "go", "run", "main.go"),
        R("passive", "go", "test", "./..."),
        R("passive", "go", "version", "-m"),
        A("passive", "..F", "gofmt", "-l", "x.go"),
        A("passive", "..F", "gofmt", "-d", "x.go"),
        R("passive", "gofmt", "-w", "x.go"),
        /* passive: files */
        A("passive", ".", "ls"),
        A("passive", "..", "ls", "-la"),
        A("passive", ".P", "ls", "src"),
        A("passive", "..P", "ls", "-la", "src"),
        R("passive", "ls", "-R"),
        R("passive", "ls", "-la", "-R"),
        R("passive", "ls", "a", "b"),
        A("passive", ".F", "cat", "x.txt"),
        R("passive", "cat"),
        R("passive", "cat", "a", "b"),
        R("passive", "cat", "-n", "x"),
        A("passive", ".F", "head", "x.txt"),
        A("passive", "..F", "head", "-20", "x.txt"),
        A("passive", "...F", "head", "-n", "20", "x.txt"),
        R("passive", "head", "-n", "x", "x.txt"),
        R("passive", "head", "-n", "-5", "x.txt"),
        R("passive", "head", "-2x", "x.txt"),
        R("passive", "head", "-1234567890123456789", "x.txt"),
        A("passive", "...F", "tail", "-n", "5", "x.txt"),
        A("passive", ".F", "wc", "x.txt"),
        A("passive", "..F", "wc", "-l", "x.txt"),
        R("passive", "wc", "-m", "x.txt"),
        R("passive", "rm", "-rf", "/"),
        R("passive", "bash", "x.sh"),
        R("passive", "sh", "-c", "ls"),
        R("passive", ""),
        /* full: passive plus running code; passive's denies are not inherited */
        A("full", "..", "python3", "--version"),
        A("full", "...F", "python3", "-m", "py_compile", "x.py"),
        A("full", ".F", "python3", "file.py"),
        A("full", ".F.", "python3", "file.py", "--help"),
        A("full", "...", "python3", "-c", "import x"),
        A("full", "....", "python3", "-c", "print(1)", "arg"),
        R("full", "python3", "-c"),
        A("full", ".....", "python3", "-m", "pytest", "-x", "tests"),
        R("full", "python3", "-m"),
        R("full", "python3", "-I", "x.py"),
        A("full", ".", "pytest"),
        A("full", "...", "pytest", "-k", "foo"),
        A("full", ".F", "node", "app.js"),
        R("full", "node", "-e", "1"),
        A("full", "..", "npm", "install"),
        A("full", "...", "npx", "eslint", "."),
        A("full", ".F.", "ruby", "x.rb", "1"),
        R("full", "ruby", "-e", "1"),
        A("full", "...", "bundle", "exec", "rake"),
        A("full", ".", "rspec"),
        A("full", "..", "rake", "test"),
        A("full", "...", "go", "test", "./..."),
        A("full", "..F", "gofmt", "-w", "x.go"),
        A("full", ".F", "bash", "x.sh"),
        A("full", ".F..", "bash", "x.sh", "a", "b"),
        R("full", "bash", "-c", "ls"),
        R("full", "bash"),
        R("full", "sh", "x.sh"),
        A("full", ".F", "cat", "x"),
        R("full", "rm", "-rf", "/"),
        R("full", "/bin/bash", "x.sh"),
        R("full", "curl", "http://example.com"),
};

static void test_shipped_table(void **state) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct match_case *c = &cases[i];
                const struct profile *p = profile_set_find(shipped, c->profile);
                struct profile_match m;
                size_t argc = 0;

                assert_non_null(p);
                while (c->argv[argc])
                        argc++;
                assert_int_equal(profile_match(p, (char *const *) c->argv, &m), 0);
                if (m.allowed != (c->flags != NULL))
                        fail_msg("case %zu (%s %s ...): expected %s, message: %s", i, c->profile, c->argv[0],
                                 c->flags ? "allowed" : "refused", m.message);
                if (c->flags) {
                        if (strlen(c->flags) != argc)
                                fail_msg("case %zu: flags for %zu words", i, argc);
                        assert_non_null(m.shape);
                        for (size_t k = 0; k < argc; k++) {
                                char got = !m.path_arg[k] ? '.' : m.path_must_exist[k] ? 'F' : 'P';
                                if (got != c->flags[k])
                                        fail_msg("case %zu word %zu: flag %c, expected %c (shape %s)", i, k,
                                                 got, c->flags[k], m.shape);
                        }
                } else {
                        assert_null(m.path_arg);
                        assert_string_not_equal(m.message, "");
                }
                profile_match_done(&m);
        }
}

static void expect_refusal(const char *profile, const char *const *argv, const char *message) {
        const struct profile *p = profile_set_find(shipped, profile);
        struct profile_match m;

        assert_non_null(p);
        assert_int_equal(profile_match(p, (char *const *) argv, &m), 0);
        assert_false(m.allowed);
        assert_string_equal(m.message, message);
        profile_match_done(&m);
}

static void test_messages(void **state) {
        expect_refusal("passive", (const char *[]) { "python3", "-c", "import x", NULL },
                       "command not allowed by profile passive: python3 -c 'import x'\n"
                       "python3 -c runs the given code; not passive\n"
                       "allowed shapes for python3: python3 --version|-V; python3 -m py_compile <file>");
        expect_refusal("passive", (const char *[]) { "python3", "file.py", "--help", NULL },
                       "command not allowed by profile passive: python3 file.py --help\n"
                       "python3 <file> runs the script's top-level code; not passive\n"
                       "allowed shapes for python3: python3 --version|-V; python3 -m py_compile <file>");
        expect_refusal("passive", (const char *[]) { "rm", "-rf", "/", NULL },
                       "command not allowed by profile passive: rm -rf /\n"
                       "allowed shapes in profile passive: python3 --version|-V; python3 -m py_compile <file>; "
                       "ruff --version; ruff check <args>...; mypy <file>; pyflakes <file>; "
                       "node --version|-v; npm --version; ...");
        /* the best deny rule gives the reason: -m beats <file> */
        expect_refusal("passive", (const char *[]) { "python3", "-m", "pip", NULL },
                       "command not allowed by profile passive: python3 -m pip\n"
                       "python3 -m <module> imports and runs the module; not passive\n"
                       "allowed shapes for python3: python3 --version|-V; python3 -m py_compile <file>");
        expect_refusal("full", (const char *[]) { "node", "-e", "1", NULL },
                       "command not allowed by profile full: node -e 1\n"
                       "allowed shapes for node: node --version|-v; node <file> <args>...");
}

static void test_message_quoting(void **state) {
        expect_refusal("passive", (const char *[]) { "cat", "a\nb", "it's", "", "\x1b[31m", "\xff", "é", NULL },
                       "command not allowed by profile passive: cat $'a\\x0ab' 'it'\\''s' '' $'\\x1b[31m' "
                       "$'\\xff' 'é'\n"
                       "allowed shapes for cat: cat <file>");
        expect_refusal("passive", (const char *[]) { "x\x01y", NULL },
                       "command not allowed by profile passive: $'x\\x01y'\n"
                       "allowed shapes in profile passive: python3 --version|-V; python3 -m py_compile <file>; "
                       "ruff --version; ruff check <args>...; mypy <file>; pyflakes <file>; "
                       "node --version|-v; npm --version; ...");
}

static bool valid_utf8(const char *s) {
        const unsigned char *u = (const unsigned char *) s;
        while (*u) {
                size_t n = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 : (*u & 0xf0) == 0xe0 ? 3 : 4;
                for (size_t k = 1; k < n; k++)
                        if ((u[k] & 0xc0) != 0x80)
                                return false;
                u += n;
        }
        return true;
}

static void test_message_bounded(void **state) {
        const struct profile *p = profile_set_find(shipped, "full");
        static char word[POLICY_COMMAND_MAX];
        const char *argv[] = { "cat", word, word, NULL };
        struct profile_match m;

        /* three-byte characters: a cut in the middle would break UTF-8 */
        for (size_t i = 0; i + 3 < sizeof(word); i += 3)
                memcpy(word + i, "\xe2\x82\xac", 3);
        assert_int_equal(profile_match(p, (char *const *) argv, &m), 0);
        assert_false(m.allowed);
        assert_true(strlen(m.message) < POLICY_MESSAGE_MAX);
        assert_true(valid_utf8(m.message));
        assert_non_null(strstr(m.message, "...\nallowed shapes for cat: cat <file>"));
        profile_match_done(&m);

        /* a program with many shapes: the list is cut, never the buffer */
        _cleanup_free_ char *text = NULL;
        struct profile_set *s = NULL;
        size_t len = 0;
        text = malloc(200 * 40 + 32);
        assert_non_null(text);
        len += (size_t) sprintf(text, "profile many\n");
        for (int i = 0; i < 200; i++)
                len += (size_t) sprintf(text + len, "allow prog \xc3\xa9long-option-%03d\n", i);
        assert_int_equal(profile_set_load_string(text, "many.conf", &s, NULL), 0);
        const char *argv2[] = { "prog", NULL };
        assert_int_equal(profile_match(profile_set_find(s, "many"), (char *const *) argv2, &m), 0);
        assert_false(m.allowed);
        /* filled up to the limit, less at most one cut character */
        assert_true(strlen(m.message) <= POLICY_MESSAGE_MAX - 1);
        assert_true(strlen(m.message) >= POLICY_MESSAGE_MAX - 1 - 2);
        assert_true(valid_utf8(m.message));
        assert_string_equal(m.message + strlen(m.message) - 3, "...");
        profile_match_done(&m);
        profile_set_free(s);
}

static void test_empty_and_huge_argv(void **state) {
        const struct profile *p = profile_set_find(shipped, "passive");
        const char *empty[] = { NULL };
        struct profile_match m;

        assert_int_equal(profile_match(p, (char *const *) empty, &m), 0);
        assert_false(m.allowed);
        assert_non_null(strstr(m.message, "passive: (empty command)\n"));
        profile_match_done(&m);

        const char **big = calloc(POLICY_ARGV_MAX + 2, sizeof(char *));
        assert_non_null(big);
        big[0] = "ruff";
        big[1] = "check";
        for (size_t i = 2; i <= POLICY_ARGV_MAX; i++)
                big[i] = "x";
        assert_int_equal(profile_match(p, (char *const *) big, &m), 0);
        assert_false(m.allowed);
        assert_non_null(strstr(m.message, "(more than 4096 words)"));
        profile_match_done(&m);
        big[POLICY_ARGV_MAX] = NULL;    /* exactly the limit is fine */
        assert_int_equal(profile_match(p, (char *const *) big, &m), 0);
        assert_true(m.allowed);
        assert_string_equal(m.shape, "ruff check <args>...");
        profile_match_done(&m);
        free(big);

        assert_int_equal(profile_match(NULL, (char *const *) empty, &m), -EINVAL);
        assert_int_equal(profile_match(p, NULL, &m), -EINVAL);
}

static void test_shapes_list(void **state) {
        const char *const *full = profile_shapes(profile_set_find(shipped, "full"));
        const char *const *passive = profile_shapes(profile_set_find(shipped, "passive"));
        size_t n = 0, np = 0;

        assert_string_equal(profile_name(profile_set_find(shipped, "full")), "full");
        while (passive[np])
                np++;
        /* the include is flattened in place: passive's shapes come first */
        for (; full[n]; n++)
                if (n < np)
                        assert_string_equal(full[n], passive[n]);
        assert_string_equal(full[np], "python3 <file> <args>...");
        assert_string_equal(full[n - 1], "bash <file> <args>...");
        assert_string_equal(passive[0], "python3 --version|-V");
        assert_null(profile_set_find(shipped, "nope"));
        assert_null(profile_set_find(NULL, "full"));
}

static const struct profile *load1(struct profile_set **s, const char *text) {
        char *error = NULL;
        int r = profile_set_load_string(text, "t.conf", s, &error);
        if (r < 0)
                fail_msg("load: %d %s", r, error ? error : "");
        return profile_set_find(*s, "t");
}

static bool allows(const struct profile *p, const char *const *argv, const char **ret_shape) {
        struct profile_match m;
        assert_int_equal(profile_match(p, (char *const *) argv, &m), 0);
        bool a = m.allowed;
        if (ret_shape)
                *ret_shape = m.shape;
        profile_match_done(&m);
        return a;
}

static void test_precedence(void **state) {
        struct profile_set *s = NULL;
        const char *shape;
        const struct profile *p = load1(&s,
                                        "profile t\n"
                                        "allow python3 <args>...\n"
                                        "deny python3 -c <args>... -- no -c\n"
                                        "deny python3 -m <word> <args>... -- no -m\n"
                                        "allow python3 -m py_compile <file>\n"
                                        "allow python3 -c pass\n");
        /* the broad allow (1 literal) loses to the deny (2) */
        assert_false(allows(p, (const char *[]) { "python3", "-c", "x", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "python3", "-m", "pip", NULL }, NULL));
        /* a more literal allow wins, even after a weaker one in order */
        assert_true(allows(p, (const char *[]) { "python3", "-m", "py_compile", "x", NULL }, &shape));
        assert_string_equal(shape, "python3 -m py_compile <file>");
        assert_true(allows(p, (const char *[]) { "python3", "-c", "pass", NULL }, &shape));
        assert_string_equal(shape, "python3 -c pass");
        /* no deny: the first allow in order */
        assert_true(allows(p, (const char *[]) { "python3", "x.py", NULL }, &shape));
        assert_string_equal(shape, "python3 <args>...");
        profile_set_free(s);

        /* a tie goes to the deny rule */
        p = load1(&s, "profile t\nallow a b\ndeny a b -- no\n");
        assert_false(allows(p, (const char *[]) { "a", "b", NULL }, NULL));
        profile_set_free(s);
}

static void test_include_semantics(void **state) {
        struct profile_set *s = NULL;
        const struct profile *p = load1(&s,
                                        "profile base\n"
                                        "allow x <file>\n"
                                        "deny y <args>... -- base says no\n"
                                        "profile c\n"
                                        "allow z\n"
                                        "profile a\ninclude c\n"
                                        "profile b\ninclude c\n"
                                        "profile t\n"
                                        "allow first\n"
                                        "include base\n"
                                        "include a\n"
                                        "include b\n"
                                        "include base\n"
                                        "allow y <args>...\n");
        const char *const *shapes = profile_shapes(p);
        /* order follows the file; a diamond or a repeat adds nothing twice */
        assert_string_equal(shapes[0], "first");
        assert_string_equal(shapes[1], "x <file>");
        assert_string_equal(shapes[2], "z");
        assert_string_equal(shapes[3], "y <args>...");
        assert_null(shapes[4]);
        /* deny rules are not inherited */
        assert_true(allows(p, (const char *[]) { "y", "1", NULL }, NULL));
        assert_false(allows(profile_set_find(s, "base"), (const char *[]) { "y", "1", NULL }, NULL));
        profile_set_free(s);

        /* includes work across texts of one directory and in any order */
        p = load1(&s, "profile t\ninclude later\nprofile later\nallow l\n");
        assert_true(allows(p, (const char *[]) { "l", NULL }, NULL));
        profile_set_free(s);
}

static void test_placeholders(void **state) {
        struct profile_set *s = NULL;
        const char *shape;
        const struct profile *p = load1(&s,
                                        "profile t\n"
                                        "allow a [-x] <path>\n"
                                        "allow b [<int>] <word>\n"
                                        "allow c <arg> [-v|--verbose]\n"
                                        "allow d [<file>]\n"
                                        "allow e   --   <args>...   \n"
                                        "allow f <-int>\n");
        assert_true(allows(p, (const char *[]) { "a", "p", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "a", "-x", "p", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "a", "-x", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "a", "-y", "p", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "a", "", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "b", "12", "w", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "b", "12", NULL }, NULL));      /* <word> = 12 */
        assert_false(allows(p, (const char *[]) { "b", "-w", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "c", "-anything", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "c", "", "--verbose", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "c", "x", "-q", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "d", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "e", "--", NULL }, &shape));
        assert_string_equal(shape, "e -- <args>...");
        assert_true(allows(p, (const char *[]) { "e", "--", "a", "b", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "e", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "f", "-0", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "f", "-", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "f", "--1", NULL }, NULL));
        assert_false(allows(p, (const char *[]) { "f", "1", NULL }, NULL));

        struct profile_match m;
        const char *argv[] = { "d", "x", NULL };
        assert_int_equal(profile_match(p, (char *const *) argv, &m), 0);
        assert_true(m.allowed);
        assert_false(m.path_arg[0]);
        assert_true(m.path_arg[1]);
        assert_true(m.path_must_exist[1]);
        profile_match_done(&m);
        profile_set_free(s);

        /* eight optionals: every way is tried */
        p = load1(&s, "profile t\nallow o [a] [b] [c] [d] [e] [f] [g] [<path>]\n");
        assert_true(allows(p, (const char *[]) { "o", "a", "c", "e", "g", "z", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "o", "h", NULL }, NULL));
        assert_true(allows(p, (const char *[]) { "o", "b", "a", NULL }, NULL)); /* <path> = a */
        assert_false(allows(p, (const char *[]) { "o", "b", "a", "x", NULL }, NULL));
        assert_int_equal(profile_match(p, (char *const *) (const char *[]) { "o", "b", "q", NULL }, &m), 0);
        assert_true(m.allowed);
        assert_false(m.path_arg[1]);
        assert_true(m.path_arg[2]);
        assert_false(m.path_must_exist[2]);
        profile_match_done(&m);
        profile_set_free(s);
}

static void expect_load_error(const char *text, const char *message) {
        struct profile_set *s = (struct profile_set *) 0x1;
        char *error = NULL;

        assert_int_equal(profile_set_load_string(text, "t.conf", &s, &error), -EINVAL);
        assert_ptr_equal(s, (struct profile_set *) 0x1);
        assert_non_null(error);
        assert_string_equal(error, message);
        free(error);
}

static void test_shell_profile(void **state) {
        struct profile_set *s = NULL;
        struct profile_match m;

        assert_int_equal(profile_set_load_string("profile s\nshell\nprofile t\nallow ls\n", "t.conf", &s, NULL), 0);
        const struct profile *p = profile_set_find(s, "s");
        assert_true(profile_is_shell(p));
        assert_false(profile_is_shell(profile_set_find(s, "t")));
        assert_false(profile_is_shell(NULL));
        assert_non_null(profile_shapes(p));
        assert_null(profile_shapes(p)[0]);
        /* matched as a shape list it allows nothing */
        assert_int_equal(profile_match(p, (char *const *) (const char *[]) { "ls", NULL }, &m), 0);
        assert_false(m.allowed);
        profile_match_done(&m);
        profile_set_free(s);
}

static void test_load_errors(void **state) {
        expect_load_error("allow ls\n", "t.conf:1: 'allow' before any 'profile' line in this file");
        expect_load_error("profile t\n\n# c\nfrobnicate ls\n",
                          "t.conf:4: unknown keyword 'frobnicate' (expected profile, include, allow, deny or shell)");
        /* the shell directive: alone in its profile, never included */
        expect_load_error("shell\n", "t.conf:1: 'shell' before any 'profile' line in this file");
        expect_load_error("profile s\nshell x\n", "t.conf:2: 'shell' takes no argument");
        expect_load_error("profile s\nshell\nshell\n", "t.conf:3: 'shell' twice in profile 's'");
        expect_load_error("profile s\nallow ls\nshell\n", "t.conf:3: 'shell' in profile 's', which has shapes");
        expect_load_error("profile s\ndeny ls -- no\nshell\n",
                          "t.conf:3: 'shell' in profile 's', which has shapes");
        expect_load_error("profile s\nshell\ndeny ls -- no\n",
                          "t.conf:3: 'deny' in shell profile 's': a shell profile has no shapes");
        expect_load_error("profile s\nshell\ninclude t\n",
                          "t.conf:3: 'include' in shell profile 's': a shell profile has no shapes");
        expect_load_error("profile s\nshell\nprofile t\ninclude s\n",
                          "t.conf:4: include of shell profile 's', which has no shapes");
        expect_load_error("profile\n", "t.conf:1: 'profile' takes one name");
        expect_load_error("profile a b\n", "t.conf:1: 'profile' takes one name");
        expect_load_error("profile -a\n",
                          "t.conf:1: invalid profile name '-a' (letters, digits, _ - ., at most 64)");
        expect_load_error("profile t\nprofile u\nprofile t\n",
                          "t.conf:3: duplicate profile 't' (first defined at t.conf:1)");
        expect_load_error("profile t\ninclude\n", "t.conf:2: 'include' takes one profile name");
        expect_load_error("profile t\ninclude a/b\n", "t.conf:2: invalid profile name 'a/b'");
        expect_load_error("profile t\nallow ls\ninclude nope\n", "t.conf:3: include of unknown profile 'nope'");
        expect_load_error("profile t\ninclude t\n", "t.conf:2: include cycle: t -> t");
        expect_load_error("profile a\ninclude b\nprofile b\ninclude c\nprofile c\ninclude a\n",
                          "t.conf:6: include cycle: a -> b -> c -> a");
        expect_load_error("profile t\nallow\n", "t.conf:2: a rule needs a shape");
        expect_load_error("profile t\nallow <file>\n", "t.conf:2: a shape must start with a program name");
        expect_load_error("profile t\nallow [ls]\n", "t.conf:2: a shape must start with a program name");
        expect_load_error("profile t\nallow /usr/bin/python3 -V\n",
                          "t.conf:2: program '/usr/bin/python3' must be a bare name: the sandbox PATH decides what runs");
        expect_load_error("profile t\nallow py|./py\n",
                          "t.conf:2: program './py' must be a bare name: the sandbox PATH decides what runs");
        expect_load_error("profile t\nallow a <args>... b\n", "t.conf:2: <args>... must be the last word of a shape");
        expect_load_error("profile t\nallow a [<args>...]\n",
                          "t.conf:2: <args>... cannot be optional: it already matches nothing");
        expect_load_error("profile t\nallow a <args>\n", "t.conf:2: unknown placeholder '<args>'");
        expect_load_error("profile t\nallow a <FILE>\n", "t.conf:2: unknown placeholder '<FILE>'");
        expect_load_error("profile t\nallow a x<file>\n",
                          "t.conf:2: '<' or '>' in 'x<file>': a placeholder stands alone as a word");
        expect_load_error("profile t\nallow a <file>|-\n",
                          "t.conf:2: unknown placeholder '<file>|-'");
        expect_load_error("profile t\nallow a x||y\n", "t.conf:2: empty alternative in 'x||y'");
        expect_load_error("profile t\nallow a |y\n", "t.conf:2: empty alternative in '|y'");
        expect_load_error("profile t\nallow a [x\n", "t.conf:2: '[x': an optional word is written [x]");
        expect_load_error("profile t\nallow a []\n", "t.conf:2: '[]': an optional word is written [x]");
        expect_load_error("profile t\nallow a [[x]]\n", "t.conf:2: stray or nested bracket in '[[x]]'");
        expect_load_error("profile t\nallow a x]\n", "t.conf:2: stray or nested bracket in 'x]'");
        expect_load_error("profile t\nallow a [a] [b] [c] [d] [e] [f] [g] [h] [i]\n",
                          "t.conf:2: a shape has at most 8 optional words");
        expect_load_error("profile t\ndeny a\n", "t.conf:2: 'deny' needs a reason: deny SHAPE -- REASON");
        expect_load_error("profile t\ndeny a --   \n", "t.conf:2: 'deny' needs a reason: deny SHAPE -- REASON");
        expect_load_error("profile t\ndeny -- why\n", "t.conf:2: a rule needs a shape");
        expect_load_error("profile t\nallow a\x01\n", "t.conf:2: control character 0x01");
        expect_load_error("profile t\nallow a\r\n", "t.conf:2: control character 0x0d");
        expect_load_error("profile t\nallow a \xc3\n", "t.conf:2: invalid UTF-8");
        expect_load_error("profile t\nallow a \xc0\xaf\n", "t.conf:2: invalid UTF-8");
        expect_load_error("profile t\nallow a \xed\xa0\x80\n", "t.conf:2: invalid UTF-8");
}

static void test_load_limits(void **state) {
        _cleanup_free_ char *text = malloc(PROFILE_SHAPES_MAX * 16 + 64 * 1024);
        struct profile_set *s = NULL;
        size_t len;

        assert_non_null(text);

        /* a line of exactly the limit loads, one byte more does not */
        len = (size_t) sprintf(text, "profile t\n#");
        memset(text + len, 'x', PROFILE_LINE_MAX - 1);
        strcpy(text + len + PROFILE_LINE_MAX - 1, "\nallow ls\n");
        assert_int_equal(profile_set_load_string(text, "t.conf", &s, NULL), 0);
        profile_set_free(s);
        memset(text + len, 'x', PROFILE_LINE_MAX);
        strcpy(text + len + PROFILE_LINE_MAX, "\nallow ls\n");
        expect_load_error(text, "t.conf:2: line longer than 4096 bytes");

        /* 64 words in a shape */
        len = (size_t) sprintf(text, "profile t\nallow a");
        for (int i = 1; i < 64; i++)
                len += (size_t) sprintf(text + len, " w");
        strcpy(text + len, "\n");
        assert_int_equal(profile_set_load_string(text, "t.conf", &s, NULL), 0);
        profile_set_free(s);
        strcpy(text + len, " w\n");
        expect_load_error(text, "t.conf:2: a shape has at most 64 words");

        /* shapes per profile, own and through includes */
        len = (size_t) sprintf(text, "profile t\n");
        for (int i = 0; i < PROFILE_SHAPES_MAX; i++)
                len += (size_t) sprintf(text + len, "allow a%d\n", i);
        assert_int_equal(profile_set_load_string(text, "t.conf", &s, NULL), 0);
        profile_set_free(s);
        strcpy(text + len, "allow one-more\n");
        expect_load_error(text, "t.conf:4098: more than 4096 shapes in profile 't'");
        len += (size_t) sprintf(text + len, "profile u\ninclude t\nallow one-more\n");
        expect_load_error(text, "t.conf:4100: profile 'u' has more than 4096 shapes with its includes");

        /* include depth: 8 levels load, 9 do not */
        len = 0;
        for (int i = 0; i < 9; i++)
                len += (size_t) sprintf(text + len, "profile p%d\ninclude p%d\n", i, i + 1);
        len += (size_t) sprintf(text + len, "profile p9\nallow deep\n");
        expect_load_error(text, "t.conf:18: includes nested deeper than 8");
        strcpy(strstr(text, "profile p8\n"), "profile p8\nallow deep\n");
        assert_int_equal(profile_set_load_string(text, "t.conf", &s, NULL), 0);
        assert_true(allows(profile_set_find(s, "p0"), (const char *[]) { "deep", NULL }, NULL));
        profile_set_free(s);

        /* an empty text is an empty set */
        assert_int_equal(profile_set_load_string("", "t.conf", &s, NULL), 0);
        assert_null(profile_set_find(s, "t"));
        profile_set_free(s);
}

static void write_file(int dfd, const char *name, const void *data, size_t n) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, n), (ssize_t) n);
        close(fd);
}

static void expect_dir_error(const char *dir, const char *pattern) {
        _cleanup_free_ char *want = NULL;
        struct profile_set *s = NULL;
        char *error = NULL;

        /* each '@' in the pattern stands for the directory */
        want = malloc(strlen(pattern) * (strlen(dir) + 1) + 1);
        assert_non_null(want);
        want[0] = 0;
        for (const char *c = pattern; *c; c++)
                if (*c == '@')
                        strcat(want, dir);
                else
                        strncat(want, c, 1);
        assert_int_equal(profile_set_load_dir(dir, &s, &error), -EINVAL);
        assert_null(s);
        assert_non_null(error);
        assert_string_equal(error, want);
        free(error);
}

static void test_load_dir(void **state) {
        char dir[] = "/tmp/test-profile-XXXXXX";
        struct profile_set *s = NULL;
        char *error = NULL;
        int dfd;

        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);

        /* an empty directory is an empty set */
        assert_int_equal(profile_set_load_dir(dir, &s, &error), 0);
        assert_null(profile_set_find(s, "a"));
        profile_set_free(s);

        /* files are read in name order; an include may name a later file */
        write_file(dfd, "a.conf", "profile a\ninclude b\n", 20);
        write_file(dfd, "b.conf", "profile b\nallow bee\n", 20);
        write_file(dfd, "notes.txt", "garbage", 7);
        write_file(dfd, ".hidden.conf", "garbage", 7);
        assert_int_equal(profile_set_load_dir(dir, &s, &error), 0);
        assert_true(allows(profile_set_find(s, "a"), (const char *[]) { "bee", NULL }, NULL));
        profile_set_free(s);

        /* rules do not carry over from one file to the next */
        write_file(dfd, "c.conf", "allow x\n", 8);
        expect_dir_error(dir, "@/c.conf:1: 'allow' before any 'profile' line in this file");
        write_file(dfd, "c.conf", "profile b\n", 10);
        expect_dir_error(dir, "@/c.conf:1: duplicate profile 'b' (first defined at @/b.conf:1)");
        /* an unknown include is found only after every file is read */
        write_file(dfd, "c.conf", "profile c\ninclude zz\n", 21);
        expect_dir_error(dir, "@/c.conf:2: include of unknown profile 'zz'");
        write_file(dfd, "c.conf", "profile c\nallow a\0b\n", 20);
        expect_dir_error(dir, "@/c.conf:2: NUL byte");

        static char big[1024 * 1024 + 1];
        memset(big, '#', sizeof(big));
        write_file(dfd, "c.conf", big, sizeof(big) - 1);
        expect_dir_error(dir, "@/c.conf:1: line longer than 4096 bytes");
        write_file(dfd, "c.conf", big, sizeof(big));
        expect_dir_error(dir, "@/c.conf: file larger than 1048576 bytes");
        assert_int_equal(unlinkat(dfd, "c.conf", 0), 0);

        assert_int_equal(mkdirat(dfd, "d.conf", 0755), 0);
        expect_dir_error(dir, "@/d.conf: not a regular file");
        assert_int_equal(unlinkat(dfd, "d.conf", AT_REMOVEDIR), 0);

        for (int i = 0; i < 257; i++) {
                char n[32];
                snprintf(n, sizeof n, "f%03d.conf", i);
                write_file(dfd, n, "", 0);
        }
        expect_dir_error(dir, "@: more than 256 *.conf files");
        for (int i = 0; i < 257; i++) {
                char n[32];
                snprintf(n, sizeof n, "f%03d.conf", i);
                assert_int_equal(unlinkat(dfd, n, 0), 0);
        }

        const char *rm[] = { "a.conf", "b.conf", "notes.txt", ".hidden.conf" };
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(unlinkat(dfd, rm[i], 0), 0);
        close(dfd);
        assert_int_equal(rmdir(dir), 0);

        /* a missing directory is an errno, not a message */
        assert_int_equal(profile_set_load_dir(dir, &s, &error), -ENOENT);
        assert_null(error);
        assert_int_equal(profile_set_load_dir(NULL, &s, &error), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shipped_table),
                cmocka_unit_test(test_messages),
                cmocka_unit_test(test_message_quoting),
                cmocka_unit_test(test_message_bounded),
                cmocka_unit_test(test_empty_and_huge_argv),
                cmocka_unit_test(test_shapes_list),
                cmocka_unit_test(test_precedence),
                cmocka_unit_test(test_include_semantics),
                cmocka_unit_test(test_placeholders),
                cmocka_unit_test(test_load_errors),
                cmocka_unit_test(test_shell_profile),
                cmocka_unit_test(test_load_limits),
                cmocka_unit_test(test_load_dir),
        };
        return cmocka_run_group_tests(tests, setup_shipped, teardown_shipped);
}
