/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for the credential-exfiltration denylist
 * (daemon/policy_denylist.c): the two corpora in tests/data against the
 * shipped etc/toolsd/denylist.conf (every line's verdict, every mismatch
 * printed), de-obfuscation and splitting outputs, the rule file's errors
 * with FILE:LINE, argument and size errors, the match-limit fail-closed
 * path, and a latency budget.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "denylist.h"
#include "macro.h"

#define RULES SRCDIR "/etc/toolsd/denylist.conf"

static struct denylist *shipped;

static int setup(void **state) {
        _cleanup_free_ char *error = NULL;
        int r = denylist_load_file(RULES, &shipped, &error);
        if (r < 0)
                fprintf(stderr, "# %s\n", error ?: strerror(-r));
        return r < 0 ? -1 : 0;
}

static int teardown(void **state) {
        denylist_free(shipped);
        return 0;
}

static const char *verdict_name(enum denylist_verdict v) {
        return v == DENYLIST_WHOLE ? "whole" : v == DENYLIST_CHAINED ? "chained" : "ok";
}

/* "<NL>" in a corpus line stands for a newline. */
static void unescape_newlines(char *s) {
        char *w = s;
        for (const char *r = s; *r;) {
                if (strncmp(r, "<NL>", 4) == 0) {
                        *w++ = '\n';
                        r += 4;
                } else
                        *w++ = *r++;
        }
        *w = '\0';
}

/* Runs every line of a corpus; with_expect means "EXPECT<TAB>command",
 * otherwise every line must be ok. Returns the number of mismatches and
 * counts the lines in *ret_lines. */
static unsigned run_corpus(const char *path, bool with_expect, unsigned *ret_lines) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned bad = 0, n = 0;
        ssize_t k;

        assert_non_null(f);
        while ((k = getline(&line, &cap, f)) >= 0) {
                if (k > 0 && line[k - 1] == '\n')
                        line[--k] = '\0';
                if (line[0] == '#' || line[0] == '\0')
                        continue;
                const char *want = "ok";
                char *cmd = line;
                if (with_expect) {
                        char *tab = strchr(line, '\t');
                        assert_non_null(tab);
                        *tab = '\0';
                        want = line;
                        cmd = tab + 1;
                        assert_true(strcmp(want, "ok") == 0 || strcmp(want, "whole") == 0 ||
                                    strcmp(want, "chained") == 0);
                }
                unescape_newlines(cmd);
                enum denylist_verdict v;
                const char *rule = NULL;
                assert_int_equal(denylist_check(shipped, cmd, strlen(cmd), &v, &rule), 0);
                n++;
                if (strcmp(verdict_name(v), want) != 0) {
                        bad++;
                        fprintf(stderr, "# MISMATCH %s: expected %s, got %s (%s): %s\n",
                                path + strlen(SRCDIR) + 1, want, verdict_name(v), rule ?: "-", cmd);
                }
        }
        *ret_lines = n;
        return bad;
}

static void test_evasions(void **state) {
        unsigned n, bad = run_corpus(SRCDIR "/tests/data/denylist-evasions.txt", true, &n);
        fprintf(stderr, "# evasions: %u lines, %u mismatches\n", n, bad);
        assert_true(n >= 120);
        assert_int_equal(bad, 0);
}

static void test_benign(void **state) {
        unsigned n, bad = run_corpus(SRCDIR "/tests/data/denylist-benign.txt", false, &n);
        fprintf(stderr, "# benign: %u lines, %u false positives\n", n, bad);
        assert_true(n >= 100);
        assert_int_equal(bad, 0);
}

static void check_rule(const char *cmd, enum denylist_verdict want, const char *want_rule) {
        enum denylist_verdict v = DENYLIST_OK;
        const char *rule = "unset";

        assert_int_equal(denylist_check(shipped, cmd, strlen(cmd), &v, &rule), 0);
        if (v != want || (want_rule ? !rule || strcmp(rule, want_rule) != 0 : rule != NULL))
                fail_msg("%s: got %s (%s), expected %s (%s)", cmd, verdict_name(v), rule ?: "NULL",
                         verdict_name(want), want_rule ?: "NULL");
}

static void test_rule_ids(void **state) {
        check_rule("env", DENYLIST_WHOLE, "env-dump");
        check_rule("ls; env", DENYLIST_CHAINED, "env-dump");
        check_rule("cat .env", DENYLIST_WHOLE, "env-file-read");
        check_rule("cat ~/.aws/credentials", DENYLIST_WHOLE, "aws-credentials");
        check_rule("echo ${!x}", DENYLIST_WHOLE, "bash-indirection");
        check_rule("security dump-keychain", DENYLIST_WHOLE, "macos-keychain");
        check_rule("ls", DENYLIST_OK, NULL);
        check_rule("", DENYLIST_OK, NULL);
        check_rule("   \n\t ", DENYLIST_OK, NULL);
        /* a verdict without the rule id is allowed */
        enum denylist_verdict v;
        assert_int_equal(denylist_check(shipped, "env", 3, &v, NULL), 0);
        assert_int_equal(v, DENYLIST_WHOLE);
        /* len is honoured: only "ls" is checked */
        assert_int_equal(denylist_check(shipped, "ls; env", 2, &v, NULL), 0);
        assert_int_equal(v, DENYLIST_OK);
}

static void test_limits(void **state) {
        enum denylist_verdict v;
        const char *rule;
        _cleanup_free_ char *big = malloc(DENYLIST_COMMAND_MAX + 2);

        assert_non_null(big);
        memset(big, 'a', DENYLIST_COMMAND_MAX + 1);
        big[DENYLIST_COMMAND_MAX + 1] = '\0';
        assert_int_equal(denylist_check(shipped, big, DENYLIST_COMMAND_MAX + 1, &v, &rule), -E2BIG);
        assert_int_equal(denylist_check(shipped, big, DENYLIST_COMMAND_MAX, &v, &rule), 0);
        assert_int_equal(v, DENYLIST_OK);

        /* more subcommands than DENYLIST_PIECES_MAX: refused, not half-checked */
        for (size_t i = 0; i + 1 < DENYLIST_COMMAND_MAX; i += 2)
                big[i] = 'a', big[i + 1] = ';';
        assert_int_equal(denylist_check(shipped, big, DENYLIST_COMMAND_MAX, &v, &rule), 0);
        assert_int_equal(v, DENYLIST_CHAINED);
        assert_string_equal(rule, "split-limit");

        /* nesting deeper than DENYLIST_DEPTH_MAX */
        char deep[256] = "echo ";
        for (unsigned i = 0; i <= DENYLIST_DEPTH_MAX + 1; i++)
                strcat(deep, "$(");
        strcat(deep, "ls");
        assert_int_equal(denylist_check(shipped, deep, strlen(deep), &v, &rule), 0);
        assert_int_equal(v, DENYLIST_CHAINED);
        assert_string_equal(rule, "split-limit");

        /* disguise that needs more rounds than DENYLIST_ROUNDS_MAX */
        char nested[256] = "echo ";
        for (unsigned i = 0; i <= DENYLIST_ROUNDS_MAX + 1; i++)
                strcat(nested, "[");
        strcat(nested, "x");
        for (unsigned i = 0; i <= DENYLIST_ROUNDS_MAX + 1; i++)
                strcat(nested, "]");
        assert_int_equal(denylist_check(shipped, nested, strlen(nested), &v, &rule), 0);
        assert_int_equal(v, DENYLIST_WHOLE);
        assert_string_equal(rule, "deobfuscation-limit");

        assert_int_equal(denylist_check(shipped, "a\0env", 5, &v, &rule), -EINVAL);
        assert_int_equal(denylist_check(NULL, "ls", 2, &v, &rule), -EINVAL);
        assert_int_equal(denylist_check(shipped, NULL, 0, &v, &rule), -EINVAL);
        assert_int_equal(denylist_check(shipped, "ls", 2, NULL, &rule), -EINVAL);
}

static void test_messages(void **state) {
        assert_null(denylist_message(DENYLIST_OK));
        assert_string_equal(denylist_message(DENYLIST_WHOLE),
                            "Refused: command pattern matches credential-exfiltration denylist.");
        assert_string_equal(denylist_message(DENYLIST_CHAINED),
                            "Refused: chained subcommand matches credential-exfiltration denylist.");
        assert_null(denylist_message((enum denylist_verdict) 42));
}

static void deob(const char *in, const char *want) {
        _cleanup_free_ char *out = NULL;
        int r = denylist_deobfuscate(in, strlen(in), &out);
        assert_int_equal(r, 1);
        if (strcmp(out, want) != 0)
                fail_msg("deobfuscate(%s) = [%s], expected [%s]", in, out, want);
}

static void test_deobfuscate(void **state) {
        deob("e''nv", "env");
        deob("e\"\"nv", "env");
        deob("'env'", "env");
        deob("\"e\"n\"v\"", "env");
        deob("e\\nv", "env");
        deob("\\env", "env");
        deob("ls \\\n -l", "ls -l");
        deob("$'\\x65\\x6e\\x76'", "env");
        deob("$'\\145\\156\\166'", "env");
        deob("$'\\u0065nv'", "env");
        deob("$'en\\x00xyz'v", "env");
        deob("$'a\\tb'", "a b");
        deob("$'\\cA'x", "x");
        deob("$\"env\"", "env");
        deob("e$@nv", "env");
        deob("e$*nv", "env");
        deob("e$1nv", "env");
        deob("e${1}nv", "env");
        deob("e$()nv", "env");
        deob("e``nv", "env");
        deob("/usr/bin/[e]nv", "/usr/bin/env");
        deob("[[x]]", "x");
        deob("[ -f x ]", "[ -f x ]");
        deob("cat ${HOME}/.aws", "cat ~/.aws");
        deob("cat \"$HOME\"/.aws", "cat ~/.aws");
        deob("echo $HOMEDIR ${HOMEDIR}", "echo $HOMEDIR $HOMEDIR");
        deob("cat${IFS}.env", "cat .env");
        deob("cat$IFS.env", "cat .env");
        deob("echo ${a}b ${PATH}", "echo ${a}b $PATH");
        deob("echo ${0} $0 $$", "echo $0 $0 $$");
        deob("  a \t  b  ", "a b");
        deob("a\n  b", "a\n b");
        deob("\"a\\\"b\\$c\\xd\"", "ab$cxd");
        deob("it\\'s", "its");
        deob("", "");

        _cleanup_free_ char *out = NULL;
        assert_int_equal(denylist_deobfuscate("x", 1, NULL), -EINVAL);
        assert_int_equal(denylist_deobfuscate(NULL, 0, &out), -EINVAL);
        /* len, not the NUL, ends the input; NUL bytes are dropped */
        assert_int_equal(denylist_deobfuscate("e\0nv", 4, &out), 1);
        assert_string_equal(out, "env");
}

static void split(const char *cmd, const char *const *want, size_t n_want) {
        _cleanup_strv_free_ char **v = NULL;
        int n = denylist_split(cmd, &v);

        assert_true(n >= 0);
        for (size_t i = 0; i < MAX((size_t) n, n_want); i++)
                if (i >= (size_t) n || i >= n_want || strcmp(v[i], want[i]) != 0)
                        fail_msg("split(%s)[%zu] = [%s], expected [%s]", cmd, i,
                                 i < (size_t) n ? v[i] : "(none)", i < n_want ? want[i] : "(none)");
        assert_null(v[n]);
}

#define SPLIT(cmd, ...)                                                         \
        do {                                                                    \
                static const char *const w_[] = { __VA_ARGS__ };                \
                split(cmd, w_, ELEMENTSOF(w_));                                 \
        } while (0)

static void test_split(void **state) {
        SPLIT("a; b && c || d | e & f\ng", "a", "b", "c", "d", "e", "f", "g");
        SPLIT("echo 'a; b' \"c | d\"", "echo 'a; b' \"c | d\"");
        SPLIT("echo a\\;b", "echo a\\;b");
        SPLIT("echo $(env) `id`", "env", "id", "echo $(env) `id`");
        SPLIT("echo \"$(a; b)\"", "a", "b", "echo \"$(a; b)\"");
        SPLIT("echo $(echo $(env))", "env", "echo $(env)", "echo $(echo $(env))");
        SPLIT("(a) { b; }", "a", "{ b", "}");
        SPLIT("sh -c 'a; b'", "sh -c 'a; b'", "a", "b");
        SPLIT("/bin/bash -lc \"x\"", "/bin/bash -lc \"x\"", "x");
        SPLIT("python3 -c 'a; b'", "python3 -c 'a; b'");
        SPLIT("eval 'a;' b", "eval 'a;' b", "a", "b");
        SPLIT("x='a|b' y", "x='a|b' y", "a", "b");
        SPLIT("bash <<< 'env'", "bash <<< 'env'", "env");
        SPLIT("sh -c $'\\x65nv'", "sh -c $'\\x65nv'", "env");
        split(";;  ;", NULL, 0);
        SPLIT("echo 'unterminated; env", "echo 'unterminated; env");
        SPLIT("echo $(unterminated; env", "unterminated", "env", "echo $(unterminated; env");
        SPLIT("cat <<E\nenv\nE\nls", "cat <<E", "ls");
        SPLIT("sh <<E\nenv\nE", "sh <<E", "env");
        SPLIT("cat <<E\n$(id)\nE", "cat <<E", "id");
        SPLIT("cat <<'E'\n$(id)\nE", "cat <<'E'");
        SPLIT("cat <<-E\n\tx\n\tE\ny", "cat <<-E", "y");
        SPLIT("cat <<E\nunterminated; env", "cat <<E");
        SPLIT("cat <<<x; y", "cat <<<x", "x", "y");
        SPLIT("cat << ; y", "cat <<", "y");
        /* found by fuzz-denylist: an unquoted newline inside a piece (the
         * rest of an unterminated $() made the word scanner stop moving */
        SPLIT("a $(b\n\tset\n", "b", "set", "a $(b\n\tset");

        _cleanup_strv_free_ char **v = NULL;
        assert_int_equal(denylist_split(NULL, &v), -EINVAL);
        assert_int_equal(denylist_split("a", NULL), -EINVAL);
        char parens[256] = "";
        for (unsigned i = 0; i <= DENYLIST_DEPTH_MAX + 1; i++)
                strcat(parens, "\"$(");
        assert_int_equal(denylist_split(parens, &v), -ELOOP);
}

static void load_fails(const char *text, const char *want_error) {
        _cleanup_free_ char *error = NULL;
        struct denylist *d = NULL;

        assert_int_equal(denylist_load_string(text, "t.conf", &d, &error), -EINVAL);
        assert_null(d);
        assert_non_null(error);
        if (strcmp(error, want_error) != 0)
                fail_msg("load error [%s], expected [%s]", error, want_error);
}

static void test_load_errors(void **state) {
        load_fails("", "t.conf: no rules");
        load_fails("# only a comment\n\n", "t.conf: no rules");
        load_fails("rule a x\nallow b y\n", "t.conf:2: unknown directive 'allow'");
        load_fails("rule Bad x\n", "t.conf:1: invalid rule name 'Bad'");
        load_fails("rule -a x\n", "t.conf:1: invalid rule name '-a'");
        load_fails("define lower x\n", "t.conf:1: invalid define name 'lower'");
        load_fails("rule a\n", "t.conf:1: rule 'a' has no pattern");
        load_fails("rule a x\nrule a y\n", "t.conf:2: duplicate rule 'a'");
        load_fails("define A x\ndefine A y\n", "t.conf:2: duplicate define 'A'");
        load_fails("\nrule a @{NOPE}x\n", "t.conf:2: unknown define in '@{NOPE}'");
        load_fails("rule a (unclosed\n",
                   "t.conf:1: rule 'a': missing closing parenthesis at offset 9 of the expanded pattern");
        load_fails("define A (\nrule a @{A}\n",
                   "t.conf:2: rule 'a': missing closing parenthesis at offset 5 of the expanded pattern");

        /* expansion past DENYLIST_PATTERN_MAX */
        _cleanup_free_ char *text = NULL;
        _cleanup_free_ char *val = malloc(DENYLIST_PATTERN_MAX / 2 + 1);
        assert_non_null(val);
        memset(val, 'x', DENYLIST_PATTERN_MAX / 2);
        val[DENYLIST_PATTERN_MAX / 2] = '\0';
        assert_true(asprintf(&text, "define A %s\nrule a @{A}@{A}\n", val) > 0);
        load_fails(text, "t.conf:2: pattern longer than 16384 bytes after expansion");

        /* too many rules */
        _cleanup_free_ char *many = NULL;
        size_t sz = 0;
        FILE *m = open_memstream(&many, &sz);
        assert_non_null(m);
        for (unsigned i = 0; i <= DENYLIST_RULES_MAX; i++)
                fprintf(m, "rule r%u x\n", i);
        fclose(m);
        load_fails(many, "t.conf:513: more than 512 rules");

        struct denylist *d = NULL;
        assert_int_equal(denylist_load_string(NULL, "x", &d, NULL), -EINVAL);
        assert_int_equal(denylist_load_string("rule a x", "x", NULL, NULL), -EINVAL);
        /* errors without ret_error still fail */
        assert_int_equal(denylist_load_string("rule a (", "x", &d, NULL), -EINVAL);
        assert_null(d);
}

static void test_load_ok(void **state) {
        _cleanup_free_ char *error = NULL;
        struct denylist *d = NULL;
        enum denylist_verdict v;
        const char *rule;

        /* blanks, CRLF, comments, defines used by defines, (?-i) */
        assert_int_equal(denylist_load_string("  # c\r\n\tdefine W  foo\r\ndefine X @{W}bar \n"
                                              "rule r-1   ^@{X}$\nrule r2 (?-i)^BIG$\n",
                                              "t.conf", &d, &error), 0);
        assert_null(error);
        assert_int_equal(denylist_rule_count(d), 2);
        assert_int_equal(denylist_check(d, "FOOBAR", 6, &v, &rule), 0);
        assert_int_equal(v, DENYLIST_WHOLE);
        assert_string_equal(rule, "r-1");
        assert_int_equal(denylist_check(d, "big", 3, &v, &rule), 0);
        assert_int_equal(v, DENYLIST_OK);
        assert_null(rule);
        assert_int_equal(denylist_check(d, "ls; BIG", 7, &v, &rule), 0);
        assert_int_equal(v, DENYLIST_CHAINED);
        assert_string_equal(rule, "r2");
        denylist_free(d);
        denylist_free(NULL);
        assert_int_equal(denylist_rule_count(NULL), 0);
        assert_true(denylist_rule_count(shipped) >= 30);
}

static void test_load_file_errors(void **state) {
        _cleanup_free_ char *error = NULL;
        struct denylist *d = NULL;
        char path[] = "/tmp/test-denylist-XXXXXX";

        assert_int_equal(denylist_load_file("/nonexistent/denylist.conf", &d, &error), -ENOENT);
        assert_string_equal(error, "/nonexistent/denylist.conf: cannot open: No such file or directory");
        free(TAKE_PTR(error));

        assert_int_equal(denylist_load_file("/tmp", &d, &error), -EBADFD);
        assert_string_equal(error, "/tmp: not a regular file");
        free(TAKE_PTR(error));

        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "rule a x\0y\n", 11), 11);
        assert_int_equal(denylist_load_file(path, &d, &error), -EBADMSG);
        assert_string_equal(strchr(error, ' ') + 1, "file contains a NUL byte");
        free(TAKE_PTR(error));

        assert_int_equal(ftruncate(fd, DENYLIST_FILE_MAX + 1), 0);
        assert_int_equal(denylist_load_file(path, &d, &error), -EFBIG);
        assert_string_equal(strchr(error, ' ') + 1, "file too large");
        free(TAKE_PTR(error));

        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(pwrite(fd, "\n\nrule a [\n", 11, 0), 11);
        assert_int_equal(denylist_load_file(path, &d, &error), -EINVAL);
        _cleanup_free_ char *want = NULL;
        assert_true(asprintf(&want, "%s:3: rule 'a': missing terminating ] for character class at offset 1 of the expanded pattern", path) > 0);
        assert_string_equal(error, want);
        close(fd);
        unlink(path);
        assert_int_equal(denylist_load_file(NULL, &d, NULL), -EINVAL);
}

/* A pattern that backtracks catastrophically runs into the match limit,
 * and that counts as a match. */
static void test_match_limit(void **state) {
        struct denylist *d = NULL;
        enum denylist_verdict v;
        const char *rule;
        char cmd[64];

        assert_int_equal(denylist_load_string("rule slow ^(a+)+$\n", "t", &d, NULL), 0);
        memset(cmd, 'a', sizeof cmd - 2);
        cmd[sizeof cmd - 2] = '!';
        cmd[sizeof cmd - 1] = '\0';
        assert_int_equal(denylist_check(d, cmd, strlen(cmd), &v, &rule), 0);
        assert_int_equal(v, DENYLIST_WHOLE);
        assert_string_equal(rule, "slow");
        denylist_free(d);
}

static double now_us(void);

/* Agents write files with heredocs: a long honest command must pass (the
 * match limits scale with the length), and a refusal at its very end must
 * still be found, all within a bounded time. */
static void test_long(void **state) {
        static const char line[] = "    result = compute(value, options={'retries': 3}) # env set\n";
        _cleanup_free_ char *cmd = malloc(DENYLIST_COMMAND_MAX + 1);
        enum denylist_verdict v;
        const char *rule;
        size_t n = 0;

        assert_non_null(cmd);
        n += sprintf(cmd, "cat > app.py <<'EOF'\n");
        while (n + sizeof line + 64 < DENYLIST_COMMAND_MAX)
                n += sprintf(cmd + n, "%s", line);
        size_t body = n;
        n += sprintf(cmd + n, "EOF\npython3 app.py");

        double t0 = now_us();
        assert_int_equal(denylist_check(shipped, cmd, n, &v, &rule), 0);
        double us = now_us() - t0;
        fprintf(stderr, "# %zu-byte heredoc: %.1f ms (%s)\n", n, us / 1000, rule ?: "ok");
        assert_int_equal(v, DENYLIST_OK);
        assert_true(us < 5e6);

        n = body + sprintf(cmd + body, "EOF\ncat ~/.aws/credentials");
        assert_int_equal(denylist_check(shipped, cmd, n, &v, &rule), 0);
        assert_int_equal(v, DENYLIST_WHOLE);
        assert_string_equal(rule, "aws-credentials");

        n = body + sprintf(cmd + body, "EOF\nprintenv");
        assert_int_equal(denylist_check(shipped, cmd, n, &v, &rule), 0);
        assert_int_equal(v, DENYLIST_CHAINED);
        assert_string_equal(rule, "printenv");
}

static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void test_latency(void **state) {
        static const char *const cmds[] = {
                "git status",
                "pytest -q tests/test_app.py -k 'not slow'",
                "cd src && make -j4 && ./run --config config.yaml | tee out.log",
                "python3 -c \"import json,sys; print(json.load(sys.stdin)['name'])\" < package.json",
        };
        const unsigned rounds = 200;
        enum denylist_verdict v;

        for (size_t c = 0; c < ELEMENTSOF(cmds); c++) {
                double t0 = now_us();
                for (unsigned i = 0; i < rounds; i++)
                        assert_int_equal(denylist_check(shipped, cmds[c], strlen(cmds[c]), &v, NULL), 0);
                double us = (now_us() - t0) / rounds;
                fprintf(stderr, "# check latency %.1f us: %s\n", us, cmds[c]);
                /* generous for valgrind and sanitizers; typical is far less */
                assert_true(us < 50000);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_evasions),
                cmocka_unit_test(test_benign),
                cmocka_unit_test(test_rule_ids),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_messages),
                cmocka_unit_test(test_deobfuscate),
                cmocka_unit_test(test_split),
                cmocka_unit_test(test_load_errors),
                cmocka_unit_test(test_load_ok),
                cmocka_unit_test(test_load_file_errors),
                cmocka_unit_test(test_match_limit),
                cmocka_unit_test(test_latency),
                cmocka_unit_test(test_long),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
