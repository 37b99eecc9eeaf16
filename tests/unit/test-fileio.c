/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for common/fileio.c: the bounded whole-file reader, at and past
 * its cap, on regular files, directories, devices and pipes, with and
 * without READ_FILE_REGULAR, and without leaking an fd on any path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "macro.h"

static char dir[] = "/tmp/test-fileio-XXXXXX";

static size_t fds_open(void) {
        DIR *d = opendir("/proc/self/fd");
        size_t n = 0;

        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

static void write_file(const char *name, const char *data, size_t len) {
        char path[64];
        int fd;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}

static void expect_read(const char *path, size_t max, enum read_file_flags flags, const char *want, size_t want_len) {
        _cleanup_free_ char *text = NULL;
        size_t len = SIZE_MAX;

        assert_int_equal(read_file_bounded(path, max, flags, &text, &len), 0);
        assert_int_equal(len, want_len);
        assert_memory_equal(text, want, len);
        assert_int_equal(text[len], 0);
}

static void expect_refused(const char *path, size_t max, enum read_file_flags flags, int want) {
        char *text = NULL;
        size_t len = SIZE_MAX;

        assert_int_equal(read_file_bounded(path, max, flags, &text, &len), want);
        assert_null(text);
        assert_int_equal(len, SIZE_MAX);
}

static void test_regular(void **state) {
        char path[64];
        size_t before = fds_open();

        snprintf(path, sizeof path, "%s/f", dir);
        write_file("f", "a\0b\n", 4);
        /* NUL bytes are data: kept and counted, the caller decides. */
        expect_read(path, 16, 0, "a\0b\n", 4);
        expect_read(path, 16, READ_FILE_REGULAR, "a\0b\n", 4);

        /* The cap: max bytes is fine, one more is -EFBIG. */
        expect_read(path, 4, READ_FILE_REGULAR, "a\0b\n", 4);
        expect_refused(path, 3, READ_FILE_REGULAR, -EFBIG);
        expect_refused(path, 0, 0, -EFBIG);

        write_file("f", "", 0);
        expect_read(path, 0, READ_FILE_REGULAR, "", 0);
        expect_read(path, 16, 0, "", 0);

        /* Larger than one read() of a pipe-sized buffer. */
        size_t big_len = 300 * 1024;
        _cleanup_free_ char *big = malloc(big_len);
        assert_non_null(big);
        for (size_t i = 0; i < big_len; i++)
                big[i] = (char) ('a' + i % 26);
        write_file("f", big, big_len);
        expect_read(path, big_len, READ_FILE_REGULAR, big, big_len);
        expect_refused(path, big_len - 1, READ_FILE_REGULAR, -EFBIG);

        assert_int_equal(fds_open(), before);
}

static void test_not_regular(void **state) {
        char path[64];
        size_t before = fds_open();

        snprintf(path, sizeof path, "%s/missing", dir);
        expect_refused(path, 16, 0, -ENOENT);
        expect_refused(path, 16, READ_FILE_REGULAR, -ENOENT);

        /* A directory opens; READ_FILE_REGULAR stops it before read(). */
        expect_refused(dir, 16, READ_FILE_REGULAR, -EBADFD);
        expect_refused(dir, 16, 0, -EISDIR);

        expect_refused("/dev/null", 16, READ_FILE_REGULAR, -EBADFD);
        expect_read("/dev/null", 16, 0, "", 0);

        /* A pipe by path, as <(...) gives one. */
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "{}\n", 3), 3);
        snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
        expect_refused(path, 16, READ_FILE_REGULAR, -EBADFD);
        {
                /* Opened while a writer is there, so open() does not wait. */
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                _cleanup_free_ char *text = NULL;
                size_t len;

                assert_true(fd >= 0);
                close(p[1]);
                close(p[0]);
                assert_int_equal(read_fd_bounded(fd, 16, &text, &len), 0);
                assert_int_equal(len, 3);
                assert_string_equal(text, "{}\n");
                close(fd);
        }

        assert_int_equal(fds_open(), before);
}

static void test_fd(void **state) {
        _cleanup_free_ char *text = NULL;
        size_t len = SIZE_MAX;
        char skip[6];
        int p[2];

        /* From where the fd stands, to the end. */
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "hello world", 11), 11);
        close(p[1]);
        assert_int_equal(read(p[0], skip, sizeof skip), 6);
        assert_int_equal(read_fd_bounded(p[0], 5, &text, &len), 0);
        assert_int_equal(len, 5);
        assert_string_equal(text, "world");
        /* At the end: nothing, not an error. */
        free(text);
        text = NULL;
        assert_int_equal(read_fd_bounded(p[0], 5, &text, &len), 0);
        assert_int_equal(len, 0);
        assert_string_equal(text, "");
        close(p[0]);

        /* Past the cap on a pipe: the extra byte is read, then refused. */
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "123456789", 9), 9);
        close(p[1]);
        free(text);
        text = NULL;
        len = SIZE_MAX;
        assert_int_equal(read_fd_bounded(p[0], 8, &text, &len), -EFBIG);
        assert_null(text);
        assert_int_equal(len, SIZE_MAX);
        close(p[0]);

        assert_int_equal(read_fd_bounded(-1, 8, &text, &len), -EBADF);
        /* max + 1 must not wrap. */
        assert_int_equal(read_fd_bounded(STDIN_FILENO, SIZE_MAX, &text, &len), -ENOMEM);
        assert_null(text);
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        char path[64];

        snprintf(path, sizeof path, "%s/f", dir);
        (void) unlink(path);
        return rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_regular),
                cmocka_unit_test(test_not_regular),
                cmocka_unit_test(test_fd),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
