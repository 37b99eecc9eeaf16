/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of audit.c: the record, and appends to tool_calls/<task>.jsonl
 * (permissions, refusals, cutting, concurrency, torn-line repair). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit.h"
#include "macro.h"
#include "varlink.h"

struct fixture {
        char dir[64];
        int fd;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        strcpy(f->dir, "/tmp/test-audit-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        f->fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        *state = f;
        return f->fd < 0 ? -1 : 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        char cmd[128];
        close(f->fd);
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
                return -1;
        free(f);
        return 0;
}

static char *slurp(int dirfd, const char *name, size_t *ret_len) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        char *buf = malloc((size_t) st.st_size + 1);
        assert_int_equal(pread(fd, buf, (size_t) st.st_size, 0), st.st_size);
        buf[st.st_size] = '\0';
        close(fd);
        *ret_len = (size_t) st.st_size;
        return buf;
}

/* Every line is one JSON object; returns how many. */
static size_t lines_check(const char *buf, size_t n) {
        size_t count = 0;
        const char *p = buf, *end = buf + n;
        assert_true(n == 0 || buf[n - 1] == '\n');
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                assert_non_null(nl);
                assert_true(utf8_valid(p, (size_t) (nl - p)));
                struct json_tokener *tok = json_tokener_new();
                struct json_object *o = json_tokener_parse_ex(tok, p, (int) (nl - p));
                assert_int_equal(json_tokener_get_error(tok), json_tokener_success);
                assert_int_equal(json_tokener_get_parse_end(tok), (size_t) (nl - p));
                assert_true(json_object_is_type(o, json_type_object));
                json_object_put(o);
                json_tokener_free(tok);
                count++;
                p = nl + 1;
        }
        return count;
}

static struct json_object *small_record(int i) {
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "i", json_object_new_int(i));
        json_object_object_add(o, "pad", json_object_new_string("0123456789abcdef0123456789abcdef"));
        return o;
}

static const char *member(struct json_object *o, const char *key) {
        struct json_object *v = NULL;
        assert_true(json_object_object_get_ex(o, key, &v));
        return json_object_get_string(v);
}

static void test_record(void **state) {
        char big[10000];
        memset(big, 'x', sizeof big);
        big[sizeof big - 1] = '\0';
        struct json_object *args = json_object_new_object();
        json_object_object_add(args, "path", json_object_new_string("a/b.txt"));
        json_object_object_add(args, "content", json_object_new_string(big));
        json_object_object_add(args, "n", json_object_new_int(7));
        json_object_object_add(args, "bad", json_object_new_string_len("a\xff\0b", 4));
        struct json_object *deep = json_object_new_array(), *d = deep;
        for (int i = 0; i < AUDIT_DEPTH_MAX + 5; i++) {
                struct json_object *x = json_object_new_array();
                json_object_array_add(d, x);
                d = x;
        }
        json_object_object_add(args, "deep", deep);
        struct json_object *result = json_object_new_object();
        json_object_object_add(result, "outcome", json_object_new_string("refused"));
        json_object_object_add(result, "reason", json_object_new_string("path"));
        json_object_object_add(result, "text", json_object_new_string("é"));

        struct audit_entry e = {
                .task_id = "task-1", .role = "coder", .session = "s1", .skill = "py", .call_id = "c1",
                .tool = "write_artifact", .arguments = args, .result = result, .duration_ms = 12,
                .timestamp_usec = UINT64_C(1700000000123456), .uid = 1000,
        };
        struct json_object *r = audit_record(&e);
        assert_non_null(r);
        assert_string_equal(member(r, "timestamp"), "2023-11-14T22:13:20.123Z");
        assert_string_equal(member(r, "task_id"), "task-1");
        assert_string_equal(member(r, "role"), "coder");
        assert_string_equal(member(r, "session"), "s1");
        assert_string_equal(member(r, "skill"), "py");
        assert_string_equal(member(r, "call_id"), "c1");
        assert_string_equal(member(r, "tool"), "write_artifact");
        assert_string_equal(member(r, "outcome"), "refused");
        assert_string_equal(member(r, "reason"), "path");
        assert_string_equal(member(r, "uid"), "1000");
        assert_string_equal(member(r, "duration_ms"), "12");

        struct json_object *a = NULL, *res = NULL;
        assert_true(json_object_object_get_ex(r, "arguments", &a));
        assert_string_equal(member(a, "path"), "a/b.txt");
        assert_string_equal(member(a, "n"), "7");
        assert_string_equal(member(a, "bad"), "a\xef\xbf\xbd\xef\xbf\xbd" "b");
        const char *c = member(a, "content");
        assert_int_equal(strlen(c), AUDIT_PREVIEW_MAX + strlen("… [9999 bytes]"));
        assert_string_equal(c + AUDIT_PREVIEW_MAX, "… [9999 bytes]");
        assert_true(strstr(json_object_to_json_string(a), "\"[nested too deep]\"") != NULL);
        assert_true(json_object_object_get_ex(r, "result", &res));
        assert_string_equal(member(res, "text"), "é");
        /* The originals are untouched. */
        assert_int_equal(strlen(member(args, "content")), sizeof big - 1);
        json_object_put(r);

        /* Explicit outcome/reason win; no result, no arguments. */
        e.outcome = "ok", e.reason = NULL, e.result = NULL, e.arguments = NULL;
        r = audit_record(&e);
        assert_string_equal(member(r, "outcome"), "ok");
        assert_true(json_object_object_get_ex(r, "reason", &a) && a == NULL);
        json_object_put(r);

        /* A cut never splits a character: "é" is 2 bytes, the cap is odd. */
        char accents[AUDIT_PREVIEW_MAX + 2];
        for (size_t i = 0; i + 1 < sizeof accents; i += 2)
                memcpy(accents + i, "\xc3\xa9", 2);
        accents[sizeof accents - 1] = '\0';
        e.role = accents;
        r = audit_record(&e);
        c = member(r, "role");
        assert_true(utf8_valid(c, strlen(c)));
        assert_non_null(strstr(c, "\xc3\xa9… ["));
        json_object_put(r);
        json_object_put(args);
        json_object_put(result);
}

static void test_append_permissions(void **state) {
        struct fixture *f = *state;
        struct stat st;
        mode_t old = umask(0);

        struct json_object *o = small_record(1);
        assert_int_equal(audit_append(f->fd, "t", o), 0);
        assert_int_equal(fstatat(f->fd, "t.jsonl", &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, 0600);

        /* A wider file is narrowed; a narrower one (0400 from a 0277 umask) too. */
        assert_int_equal(fchmodat(f->fd, "t.jsonl", 0666, 0), 0);
        assert_int_equal(audit_append(f->fd, "t", o), 0);
        assert_int_equal(fstatat(f->fd, "t.jsonl", &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        umask(0277);
        assert_int_equal(audit_append(f->fd, "u", o), 0);
        assert_int_equal(fstatat(f->fd, "u.jsonl", &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        umask(old);

        size_t n;
        char *buf = slurp(f->fd, "t.jsonl", &n);
        assert_string_equal(buf, "{\"i\":1,\"pad\":\"0123456789abcdef0123456789abcdef\"}\n"
                                 "{\"i\":1,\"pad\":\"0123456789abcdef0123456789abcdef\"}\n");
        free(buf);
        json_object_put(o);
}

static void test_append_refusals(void **state) {
        struct fixture *f = *state;
        struct json_object *o = small_record(1);
        char target[128];
        size_t n;

        (void) snprintf(target, sizeof target, "%s/target", f->dir);
        assert_int_equal(symlinkat(target, f->fd, "x.jsonl"), 0);
        assert_int_equal(audit_append(f->fd, "x", o), -ELOOP);
        assert_int_equal(faccessat(f->fd, "target", F_OK, 0), -1); /* not created through the link */

        assert_int_equal(mkfifoat(f->fd, "p.jsonl", 0600), 0);
        int r = audit_append(f->fd, "p", o);
        assert_true(r == -ENXIO || r == -EPERM); /* no reader: ENXIO; never blocks */

        assert_int_equal(mkdirat(f->fd, "d.jsonl", 0700), 0);
        assert_int_equal(audit_append(f->fd, "d", o), -EISDIR);

        /* Another owner's file (we run as root in CI; skip the case otherwise). */
        if (geteuid() == 0) {
                int fd = openat(f->fd, "o.jsonl", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
                assert_true(fd >= 0);
                assert_int_equal(fchown(fd, 65534, 65534), 0);
                close(fd);
                assert_int_equal(audit_append(f->fd, "o", o), -EPERM);
                char *buf = slurp(f->fd, "o.jsonl", &n);
                assert_int_equal(n, 0);
                free(buf);
        }

        const char *bad[] = { "", ".hidden", "a/b", "..", "a b", "x\n", "ü" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(audit_append(f->fd, bad[i], o), -EINVAL);
        assert_int_equal(audit_append(f->fd, NULL, o), -EINVAL);
        assert_int_equal(audit_append(f->fd, "t", NULL), -EINVAL);
        char long_id[AUDIT_TASK_ID_MAX + 2];
        memset(long_id, 'a', sizeof long_id);
        long_id[AUDIT_TASK_ID_MAX + 1] = '\0';
        assert_int_equal(audit_append(f->fd, long_id, o), -EINVAL);
        long_id[AUDIT_TASK_ID_MAX] = '\0';
        assert_true(audit_task_id_valid(long_id));
        assert_true(audit_task_id_valid("run-2024_01.a"));
        assert_int_equal(audit_append(-1, "t", o), -EBADF);
        json_object_put(o);
}

static void test_append_big(void **state) {
        struct fixture *f = *state;
        char s[AUDIT_PREVIEW_MAX];
        memset(s, 'y', sizeof s);
        s[sizeof s - 1] = '\0';

        struct json_object *args = json_object_new_object();
        for (int i = 0; i < 40; i++) {
                char k[16];
                (void) snprintf(k, sizeof k, "k%d", i);
                json_object_object_add(args, k, json_object_new_string(s));
        }
        struct audit_entry e = {
                .task_id = "big", .role = "r", .session = "s", .call_id = "c", .tool = "echo",
                .arguments = args, .outcome = "ok", .timestamp_usec = 1,
        };
        struct json_object *r = audit_record(&e);
        assert_int_equal(audit_append(f->fd, "big", r), 0);
        size_t n;
        char *buf = slurp(f->fd, "big.jsonl", &n);
        assert_true(n <= AUDIT_LINE_MAX);
        assert_int_equal(lines_check(buf, n), 1);
        struct json_object *line = json_tokener_parse(buf), *a = NULL;
        assert_true(json_object_object_get_ex(line, "arguments", &a));
        assert_string_equal(member(a, "cut"), "true");
        assert_true(strtoull(member(a, "bytes"), NULL, 10) > AUDIT_LINE_MAX);
        assert_int_equal(strncmp(member(a, "preview"), "{\"k0\":\"yyy", 10), 0);
        assert_string_equal(member(line, "tool"), "echo");
        json_object_put(line);
        free(buf);

        /* Too long even when cut: a huge member that is not arguments/result. */
        char *huge = malloc(AUDIT_LINE_MAX + 1);
        memset(huge, 'z', AUDIT_LINE_MAX);
        huge[AUDIT_LINE_MAX] = '\0';
        json_object_object_add(r, "extra", json_object_new_string(huge));
        assert_int_equal(audit_append(f->fd, "big", r), -E2BIG);
        free(huge);
        json_object_put(r);
        json_object_put(args);

        /* Invalid UTF-8 handed straight to audit_append is repaired. */
        struct json_object *raw = json_object_new_object();
        json_object_object_add(raw, "x", json_object_new_string_len("\xc0\xaf\xed\xa0\x80", 5));
        assert_int_equal(audit_append(f->fd, "raw", raw), 0);
        buf = slurp(f->fd, "raw.jsonl", &n);
        assert_int_equal(lines_check(buf, n), 1);
        free(buf);
        json_object_put(raw);
}

#define WRITERS 8
#define LINES 200

static void test_append_concurrent(void **state) {
        struct fixture *f = *state;
        pid_t pids[WRITERS];

        for (int w = 0; w < WRITERS; w++) {
                pids[w] = fork();
                assert_true(pids[w] >= 0);
                if (pids[w] == 0) {
                        /* Lines of different sizes, up to 60 KiB, so that
                         * writes cross page boundaries. */
                        char *pad = malloc(60000);
                        memset(pad, 'a' + w, 60000);
                        for (int i = 0; i < LINES; i++) {
                                size_t len = (size_t) (i * 977 + w * 131) % 60000;
                                struct json_object *o = json_object_new_object();
                                json_object_object_add(o, "w", json_object_new_int(w));
                                json_object_object_add(o, "i", json_object_new_int(i));
                                json_object_object_add(o, "pad", json_object_new_string_len(pad, (int) len));
                                int r = audit_append(f->fd, "c", o);
                                json_object_put(o);
                                if (r < 0)
                                        _exit(1);
                        }
                        free(pad);
                        _exit(0);
                }
        }
        for (int w = 0; w < WRITERS; w++) {
                int st;
                assert_int_equal(waitpid(pids[w], &st, 0), pids[w]);
                assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        size_t n;
        char *buf = slurp(f->fd, "c.jsonl", &n);
        assert_int_equal(lines_check(buf, n), WRITERS * LINES);
        free(buf);
}

/* A writer that died mid-line left a tail without its newline: the next
 * append cuts it, so the file holds whole lines only. */
static void test_torn_tail(void **state) {
        struct fixture *f = *state;
        struct json_object *o = small_record(2);
        int fd = openat(f->fd, "torn.jsonl", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_int_equal(write(fd, "{\"a\":1}\n{\"b\":", 13), 13);
        close(fd);
        assert_int_equal(audit_append(f->fd, "torn", o), 0);
        size_t n;
        char *buf = slurp(f->fd, "torn.jsonl", &n);
        assert_string_equal(buf, "{\"a\":1}\n{\"i\":2,\"pad\":\"0123456789abcdef0123456789abcdef\"}\n");
        free(buf);

        /* Only a torn line, no newline at all: cut to nothing. */
        fd = openat(f->fd, "torn2.jsonl", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_int_equal(write(fd, "{\"b\":", 5), 5);
        close(fd);
        assert_int_equal(audit_append(f->fd, "torn2", o), 0);
        buf = slurp(f->fd, "torn2.jsonl", &n);
        assert_int_equal(lines_check(buf, n), 1);
        free(buf);
        json_object_put(o);
}

/* Our own short write (RLIMIT_FSIZE here, ENOSPC in life) is cut back. */
static void test_short_write(void **state) {
        struct fixture *f = *state;
        struct json_object *o = small_record(3);
        assert_int_equal(audit_append(f->fd, "short", o), 0);
        size_t before;
        free(slurp(f->fd, "short.jsonl", &before));

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit rl = { before + 10, before + 10 };
                signal(SIGXFSZ, SIG_IGN);
                if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
                        _exit(2);
                _exit(audit_append(f->fd, "short", o) == -ENOSPC ? 0 : 1);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        size_t after;
        char *buf = slurp(f->fd, "short.jsonl", &after);
        assert_int_equal(after, before);
        assert_int_equal(lines_check(buf, after), 1);
        free(buf);
        json_object_put(o);
}

/* A lock held by someone else (a sandboxed reader can flock a read-only
 * fd) delays the append a little and does not stop it. */
static void test_lock_held(void **state) {
        struct fixture *f = *state;
        struct json_object *o = small_record(4);
        assert_int_equal(audit_append(f->fd, "held", o), 0);
        int fd = openat(f->fd, "held.jsonl", O_RDONLY | O_CLOEXEC);
        assert_int_equal(flock(fd, LOCK_SH), 0);
        assert_int_equal(audit_append(f->fd, "held", o), 0);
        close(fd);
        size_t n;
        char *buf = slurp(f->fd, "held.jsonl", &n);
        assert_int_equal(lines_check(buf, n), 2);
        free(buf);
        json_object_put(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_record),
                cmocka_unit_test_setup_teardown(test_append_permissions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_append_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_append_big, setup, teardown),
                cmocka_unit_test_setup_teardown(test_append_concurrent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
                cmocka_unit_test_setup_teardown(test_short_write, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lock_held, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
