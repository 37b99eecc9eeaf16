/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of artifact.c: write_artifact's path rules, atomic write and
 * races, the content decoder, and read_tool_result's paging. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "artifact.h"
#include "macro.h"

struct fixture {
        char dir[64];
        char outside[64];
        int root;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        strcpy(f->dir, "/tmp/test-artifact-XXXXXX");
        strcpy(f->outside, "/tmp/test-artifact-out-XXXXXX");
        if (!mkdtemp(f->dir) || !mkdtemp(f->outside))
                return -1;
        f->root = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        *state = f;
        return f->root < 0 ? -1 : 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        char cmd[192];
        close(f->root);
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", f->dir, f->outside);
        if (system(cmd) != 0)
                return -1;
        free(f);
        return 0;
}

static int wr(struct fixture *f, const char *rel, const char *data, const char **reason) {
        return artifact_write(f->root, rel, strlen(rel), data, strlen(data), 1024, reason);
}

static char *slurp_at(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *buf = calloc(1, 65536);
        ssize_t k = read(fd, buf, 65535);
        close(fd);
        assert_true(k >= 0);
        return buf;
}

static size_t dir_entries(const char *path) {
        char cmd[128];
        (void) snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", path);
        FILE *p = popen(cmd, "r");
        unsigned n = 0;
        assert_int_equal(fscanf(p, "%u", &n), 1);
        pclose(p);
        return n;
}

static void refused(const char *rel, size_t n, const char *why) {
        const char *reason = NULL;
        int r = artifact_path_check(rel, n, &reason);
        if (r != -EPERM)
                fail_msg("'%s' accepted", rel);
        if (strcmp(reason, why) != 0)
                fail_msg("'%s': '%s', expected '%s'", rel, reason, why);
}

static void test_path_rules(void **state) {
        const char *dot = "path components starting with '.' (dotfiles, '.') are not allowed";
        const char *dotdot = "'..' is not allowed in the path";
        const char *empty = "the path has an empty component ('//' or a trailing '/')";
        const char *tc = "tool_calls/ holds the audit trail and cannot be written";
        const char *ctl = "the path contains a control character";

        refused("", 0, "the path is empty");
        refused(NULL, 3, "the path is empty");
        refused("/etc/passwd", 11, "absolute paths are not allowed: give a path relative to the artifacts root");
        refused("..", 2, dotdot);
        refused("a/../b", 6, dotdot);
        refused("a/..", 4, dotdot);
        refused(".", 1, dot);
        refused("./a", 3, dot);
        refused(".git/config", 11, dot);
        refused("a/.bashrc", 9, dot);
        refused("a/...", 5, dot);
        refused("a//b", 4, empty);
        refused("a/", 2, empty);
        refused("tool_calls/x.jsonl", 18, tc);
        refused("tool_calls", 10, tc);
        refused("TOOL_CALLS/x", 12, tc);
        refused("a\0b", 3, "the path contains a NUL byte");
        refused("a\nb", 3, ctl);
        refused("a\x7f", 2, ctl);
        refused("\xff.txt", 5, "the path is not valid UTF-8");
        refused("\xc0\xaf", 2, "the path is not valid UTF-8");

        char buf[2048];
        memset(buf, 'a', sizeof buf);
        refused(buf, ARTIFACT_PATH_MAX + 1, "the path is longer than 1024 bytes");
        refused(buf, ARTIFACT_NAME_MAX + 1, "a path component is longer than 255 bytes");
        assert_int_equal(artifact_path_check(buf, ARTIFACT_NAME_MAX, NULL), 0);
        for (size_t i = 1; i < 80; i += 2)
                buf[i] = '/';
        refused(buf, 2 * ARTIFACT_DEPTH_MAX + 1, "the path has more than 32 components");
        assert_int_equal(artifact_path_check(buf, 2 * ARTIFACT_DEPTH_MAX - 1, NULL), 0);

        const char *ok[] = { "a", "a.txt", "dir/sub/file.py", "tool_calls2/x", "x/tool_calls/y", "ü/日本.txt",
                             "a..b", "a.", "-rf" };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (artifact_path_check(ok[i], strlen(ok[i]), NULL) != 0)
                        fail_msg("'%s' refused", ok[i]);
}

static void test_write_basic(void **state) {
        struct fixture *f = *state;
        const char *reason = NULL;
        struct stat st;
        mode_t old = umask(077);

        assert_int_equal(wr(f, "a/b/c.txt", "hello", &reason), 0);
        char *s = slurp_at(f->root, "a/b/c.txt");
        assert_string_equal(s, "hello");
        free(s);
        assert_int_equal(fstatat(f->root, "a/b/c.txt", &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, ARTIFACT_FILE_MODE);
        assert_int_equal(fstatat(f->root, "a/b", &st, 0), 0);
        assert_int_equal(st.st_mode & 07777, ARTIFACT_DIR_MODE);
        umask(old);

        /* Overwrite, empty content, no temp files left. */
        assert_int_equal(wr(f, "a/b/c.txt", "", &reason), 0);
        s = slurp_at(f->root, "a/b/c.txt");
        assert_string_equal(s, "");
        free(s);
        char path[128];
        (void) snprintf(path, sizeof path, "%s/a/b", f->dir);
        assert_int_equal(dir_entries(path), 1);

        /* Size cap: exactly max is fine, one more is refused. */
        char big[1025];
        memset(big, 'x', sizeof big);
        assert_int_equal(artifact_write(f->root, "big", 3, big, 1024, 1024, &reason), 0);
        assert_int_equal(artifact_write(f->root, "big", 3, big, 1025, 1024, &reason), -EPERM);
        assert_string_equal(reason, "the content is larger than this server allows (MaxArtifactSize=)");
        assert_int_equal(artifact_write(f->root, "tool_calls/x", 12, "x", 1, 1024, &reason), -EPERM);
        assert_string_equal(reason, "tool_calls/ holds the audit trail and cannot be written");
        /* Binary data with NULs is written as is. */
        assert_int_equal(artifact_write(f->root, "bin", 3, "a\0b", 3, 1024, &reason), 0);
        assert_int_equal(fstatat(f->root, "bin", &st, 0), 0);
        assert_int_equal(st.st_size, 3);
}

static void test_write_refusals(void **state) {
        struct fixture *f = *state;
        const char *reason = NULL;

        /* Symlinks: escaping or not, as a parent or as a directory to make. */
        assert_int_equal(symlinkat(f->outside, f->root, "out"), 0);
        assert_int_equal(wr(f, "out/x", "x", &reason), -EPERM);
        assert_string_equal(reason, "a component of the path is a symbolic link");
        assert_int_equal(mkdirat(f->root, "real", 0755), 0);
        assert_int_equal(symlinkat("real", f->root, "inside"), 0);
        assert_int_equal(wr(f, "inside/x", "x", &reason), -EPERM);
        assert_string_equal(reason, "a component of the path is a symbolic link");
        assert_int_equal(symlinkat("/", f->root, "slash"), 0);
        assert_int_equal(wr(f, "slash/tmp/x", "x", &reason), -EPERM);
        assert_int_equal(dir_entries(f->outside), 0);

        /* A symlink as the final component is replaced, never followed. */
        char target[128];
        (void) snprintf(target, sizeof target, "%s/victim", f->outside);
        assert_int_equal(symlinkat(target, f->root, "link"), 0);
        assert_int_equal(wr(f, "link", "new", &reason), 0);
        assert_int_equal(dir_entries(f->outside), 0);
        struct stat st;
        assert_int_equal(fstatat(f->root, "link", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));

        /* A file where a directory should be, a directory where the file should be. */
        assert_int_equal(wr(f, "file", "x", &reason), 0);
        assert_int_equal(wr(f, "file/y", "x", &reason), -EPERM);
        assert_string_equal(reason, "a parent component of the path is not a directory");
        assert_int_equal(wr(f, "real", "x", &reason), -EPERM);
        assert_string_equal(reason, "a directory exists at this path");
        char path[128];
        (void) snprintf(path, sizeof path, "%s/real", f->dir);
        assert_int_equal(dir_entries(path), 0); /* temp file removed */
        (void) snprintf(path, sizeof path, "%s", f->dir);

        /* A FIFO in the way of a parent: not a directory, and never opened for I/O. */
        assert_int_equal(mkfifoat(f->root, "fifo", 0600), 0);
        assert_int_equal(wr(f, "fifo/x", "x", &reason), -EPERM);
        assert_int_equal(artifact_write(-1, "x", 1, "x", 1, 10, &reason), -EBADF);
}

/* A thread swaps a parent directory with a symlink to a directory outside
 * the root (renameat2 RENAME_EXCHANGE: "d" always exists, as one or the
 * other) while 1000 writes go to d/f. No write may land outside. */
struct swapper {
        int root;
        atomic_bool stop;
        unsigned long swaps;
};

static void *swap_loop(void *p) {
        struct swapper *s = p;
        while (!atomic_load(&s->stop))
                if (renameat2(s->root, "d", s->root, "d.swap", RENAME_EXCHANGE) == 0) {
                        s->swaps++;
                        (void) usleep(s->swaps % 2 ? 10 : 50); /* mostly a directory */
                }
        return NULL;
}

static void test_symlink_race(void **state) {
        struct fixture *f = *state;
        struct swapper s = { .root = f->root };
        pthread_t t;
        unsigned ok = 0, refusals = 0;

        assert_int_equal(mkdirat(f->root, "d", 0755), 0);
        assert_int_equal(symlinkat(f->outside, f->root, "d.swap"), 0);
        assert_int_equal(pthread_create(&t, NULL, swap_loop, &s), 0);
        for (int i = 0; i < 1000; i++) {
                const char *reason = NULL;
                int r = artifact_write(f->root, "d/sub/f", 7, "data", 4, 100, &reason);
                if (r == 0)
                        ok++;
                else if (r == -EPERM && (strcmp(reason, "a component of the path is a symbolic link") == 0 ||
                                         /* swapped back between the open and the look at why */
                                         strcmp(reason, "a parent component of the path is not a directory") == 0))
                        refusals++;
                else
                        fail_msg("write %d: %d %s", i, r, reason ? reason : "");
        }
        atomic_store(&s.stop, true);
        pthread_join(t, NULL);
        assert_int_equal(ok + refusals, 1000);
        assert_true(s.swaps > 0);
        print_message("# %u written, %u refused, %lu swaps\n", ok, refusals, s.swaps);
        assert_int_equal(dir_entries(f->outside), 0);
}

/* Readers see the old file or the new one, never a part of either. */
struct reader {
        int root;
        atomic_bool stop;
        unsigned long reads, bad;
};

static void *read_loop(void *p) {
        struct reader *r = p;
        char *buf = malloc(10000);
        while (!atomic_load(&r->stop)) {
                int fd = openat(r->root, "atom", O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t n = 0, k;
                while ((k = read(fd, buf + n, 10000 - (size_t) n)) > 0)
                        n += k;
                close(fd);
                r->reads++;
                bool a = n == 1000 && buf[0] == 'A' && buf[999] == 'A';
                bool b = n == 5000 && buf[0] == 'B' && buf[4999] == 'B';
                if (!a && !b)
                        r->bad++;
        }
        free(buf);
        return NULL;
}

static void test_atomic(void **state) {
        struct fixture *f = *state;
        struct reader rd = { .root = f->root };
        char a[1000], b[5000];
        pthread_t t;

        memset(a, 'A', sizeof a);
        memset(b, 'B', sizeof b);
        assert_int_equal(artifact_write(f->root, "atom", 4, a, sizeof a, 10000, NULL), 0);
        assert_int_equal(pthread_create(&t, NULL, read_loop, &rd), 0);
        for (int i = 0; i < 300; i++) {
                bool big = i % 2 == 0;
                assert_int_equal(artifact_write(f->root, "atom", 4, big ? b : a, big ? sizeof b : sizeof a,
                                                10000, NULL),
                                 0);
        }
        atomic_store(&rd.stop, true);
        pthread_join(t, NULL);
        assert_true(rd.reads > 0);
        assert_int_equal(rd.bad, 0);
}

static void dec_ok(const char *in, const char *enc, const char *out, size_t out_len) {
        void *d = NULL;
        size_t n = 0;
        const char *reason = NULL;
        int r = artifact_decode(in, strlen(in), enc, &d, &n, &reason);
        if (r != 0)
                fail_msg("'%s': %s", in, reason);
        assert_int_equal(n, out_len);
        assert_memory_equal(d, out, out_len);
        assert_int_equal(((char *) d)[n], '\0');
        free(d);
}

static void dec_bad(const char *in, const char *enc, const char *why) {
        void *d = NULL;
        size_t n = 0;
        const char *reason = NULL;
        assert_int_equal(artifact_decode(in, in ? strlen(in) : 0, enc, &d, &n, &reason), -EINVAL);
        assert_null(d);
        if (strcmp(reason, why) != 0)
                fail_msg("'%s': '%s', expected '%s'", in, reason, why);
}

static void test_decode(void **state) {
        const char *chars = "base64 content has a character outside A-Z a-z 0-9 + / (or misplaced '=')";
        const char *len = "base64 content must be a multiple of 4 characters long (with '=' padding)";
        const char *canon = "base64 content is not canonical (non-zero padding bits)";

        dec_ok("héllo", NULL, "héllo", 6);
        dec_ok("x", "utf-8", "x", 1);
        dec_ok("", "utf8", "", 0);
        dec_ok("", "base64", "", 0);
        dec_ok("Zg==", "base64", "f", 1);
        dec_ok("Zm8=", "base64", "fo", 2);
        dec_ok("Zm9v", "base64", "foo", 3);
        dec_ok("Zm9vYmFy", "base64", "foobar", 6);
        dec_ok("AP8A", "base64", "\0\xff\0", 3);
        dec_ok("+/+/", "base64", "\xfb\xff\xbf", 3);
        dec_bad("Zg=", "base64", len);
        dec_bad("Zg", "base64", len);
        dec_bad("Zm9v\n", "base64", len);
        dec_bad("Zm9 ", "base64", chars);
        dec_bad("Zm-_", "base64", chars);
        dec_bad("Z===", "base64", chars);
        dec_bad("=Zg=", "base64", chars);
        dec_bad("Zg==Zg==", "base64", chars);
        dec_bad("Zh==", "base64", canon);
        dec_bad("Zm9=", "base64", canon);
        dec_bad("x", "latin1", "encoding must be \"utf-8\" or \"base64\"");
        dec_bad("x", "BASE64", "encoding must be \"utf-8\" or \"base64\"");
        dec_bad("\xff", NULL, "content is not valid UTF-8 (use encoding \"base64\" for bytes)");
        dec_bad(NULL, NULL, "content is missing");
}

static const char *ID = "0123456789abcdef0123456789abcdef";

static void test_result_read(void **state) {
        struct fixture *f = *state;
        const char *reason = NULL;
        void *d = NULL;
        size_t n = 0;
        uint64_t total = 0;
        char name[64];

        (void) snprintf(name, sizeof name, "%s.stdout", ID);
        int fd = openat(f->root, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        char *big = malloc(3 * TOOL_RESULT_PAGE_MAX);
        for (size_t i = 0; i < 3 * TOOL_RESULT_PAGE_MAX; i++)
                big[i] = (char) (i * 7 + i / 251);
        assert_int_equal(write(fd, big, 3 * TOOL_RESULT_PAGE_MAX), 3 * TOOL_RESULT_PAGE_MAX);
        close(fd);

        /* Paging through, default length = the cap. */
        uint64_t off = 0;
        int pages = 0;
        for (;;) {
                assert_int_equal(tool_result_read(f->root, ID, "stdout", off, 0, &d, &n, &total, &reason), 0);
                assert_int_equal(total, 3 * TOOL_RESULT_PAGE_MAX);
                assert_memory_equal(d, big + off, n);
                free(d);
                if (n == 0)
                        break;
                assert_int_equal(n, TOOL_RESULT_PAGE_MAX);
                off += n;
                pages++;
        }
        assert_int_equal(pages, 3);
        assert_int_equal(tool_result_read(f->root, ID, "stdout", 10, 5, &d, &n, &total, &reason), 0);
        assert_int_equal(n, 5);
        assert_memory_equal(d, big + 10, 5);
        free(d);
        assert_int_equal(tool_result_read(f->root, ID, "stdout", total - 2, 100, &d, &n, &total, &reason), 0);
        assert_int_equal(n, 2);
        free(d);
        assert_int_equal(tool_result_read(f->root, ID, "stdout", 0, 10 * TOOL_RESULT_PAGE_MAX, &d, &n, &total,
                                          &reason),
                         0);
        assert_int_equal(n, TOOL_RESULT_PAGE_MAX);
        free(d);
        free(big);

        d = NULL;
        assert_int_equal(tool_result_read(f->root, ID, "stdout", total + 1, 1, &d, &n, &total, &reason), -EPERM);
        assert_string_equal(reason, "offset is past the end of the output");
        assert_null(d);
        assert_int_equal(tool_result_read(f->root, ID, "stderr", 0, 1, &d, &n, &total, &reason), -ENOENT);
        assert_string_equal(reason, "no output was kept for this call id and stream");
        const char *ids[] = { "", "../../etc/passwd", "0123456789abcdef0123456789abcde",
                              "0123456789abcdef0123456789abcdef0", "0123456789ABCDEF0123456789ABCDEF",
                              "0123456789abcdef/123456789abcdef", "..3456789abcdef0123456789abcdef" };
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                assert_int_equal(tool_result_read(f->root, ids[i], "stdout", 0, 1, &d, &n, &total, &reason), -EPERM);
                assert_string_equal(reason, "call_id must be a call id as returned by Call (32 hex digits)");
        }
        assert_int_equal(tool_result_read(f->root, NULL, "stdout", 0, 1, &d, &n, &total, &reason), -EPERM);
        assert_int_equal(tool_result_read(f->root, ID, "jsonl", 0, 1, &d, &n, &total, &reason), -EPERM);
        assert_string_equal(reason, "stream must be \"stdout\" or \"stderr\"");
        assert_int_equal(tool_result_read(f->root, ID, NULL, 0, 1, &d, &n, &total, &reason), -EPERM);

        /* A symlink or a FIFO planted under a valid name. */
        const char *id2 = "ffffffffffffffffffffffffffffffff";
        (void) snprintf(name, sizeof name, "%s.stdout", id2);
        assert_int_equal(symlinkat("/etc/passwd", f->root, name), 0);
        assert_int_equal(tool_result_read(f->root, id2, "stdout", 0, 1, &d, &n, &total, &reason), -EPERM);
        assert_string_equal(reason, "the persisted output is a symbolic link");
        (void) snprintf(name, sizeof name, "%s.stderr", id2);
        assert_int_equal(mkfifoat(f->root, name, 0600), 0);
        assert_int_equal(tool_result_read(f->root, id2, "stderr", 0, 1, &d, &n, &total, &reason), -EPERM);
        assert_string_equal(reason, "the persisted output is not a regular file");
        assert_null(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path_rules),
                cmocka_unit_test_setup_teardown(test_write_basic, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlink_race, setup, teardown),
                cmocka_unit_test_setup_teardown(test_atomic, setup, teardown),
                cmocka_unit_test(test_decode),
                cmocka_unit_test_setup_teardown(test_result_read, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
