/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the Landlock layer (daemon/landlock.c). Each restriction is
 * applied in a forked child (it cannot be undone), which checks what it can
 * and cannot do and exits non-zero, naming the line, on the first surprise.
 * Running as root makes the point sharper: DAC and the mounts allow every
 * write these tests expect Landlock to refuse. Skipped without Landlock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "landlock.h"
#include "macro.h"

#define CHECK(cond)                                                                     \
        do {                                                                            \
                if (!(cond)) {                                                          \
                        fprintf(stderr, "line %d: %s (errno %s)\n", __LINE__, #cond,    \
                                strerror(errno));                                       \
                        _exit(1);                                                       \
                }                                                                       \
        } while (0)

#define CHECK_ERRNO(call, e) CHECK((call) < 0 && errno == (e))

static int abi;
static char root[] = "/tmp/toolsd-landlock-XXXXXX";
static char outside[PATH_MAX];
static char inside[PATH_MAX];
static char tool_calls[PATH_MAX];

static const char *const ro[] = { "/usr", "/etc", "/does/not/exist", NULL };

static int setup(void **state) {
        abi = landlock_abi();
        print_message("# Landlock ABI of this kernel: %d\n", abi);
        assert_non_null(mkdtemp(root));
        snprintf(inside, sizeof inside, "%s/inside", root);
        snprintf(tool_calls, sizeof tool_calls, "%s/tool_calls", root);
        snprintf(outside, sizeof outside, "%s-outside", root);
        assert_int_equal(mkdir(tool_calls, 0700), 0);
        int fd = open(outside, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static int teardown(void **state) {
        (void) nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        (void) unlink(outside);
        return 0;
}

/* Runs fn in a child; the child's exit status must be 0. */
static void in_child(void (*fn)(void)) {
        int status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                fn();
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_fs_rights(void **state) {
        assert_int_equal(landlock_fs_rights(-1), 0);
        assert_int_equal(landlock_fs_rights(0), 0);
        assert_int_equal(landlock_fs_rights(1), 0x1fff);
        assert_int_equal(landlock_fs_rights(2), 0x3fff);
        assert_int_equal(landlock_fs_rights(3), 0x7fff);
        assert_int_equal(landlock_fs_rights(4), 0x7fff);
        assert_int_equal(landlock_fs_rights(5), 0xffff);
        assert_int_equal(landlock_fs_rights(7), 0xffff);
}

static void refusals_child(void) {
        const char *const rw[] = { root, NULL };
        const char *const missing[] = { "/does/not/exist", NULL };
        const char *const relative[] = { "tmp", NULL };
        const char *const not_under[] = { "/usr", NULL };
        const char *const writable_under[] = { tool_calls, NULL };
        int a = -7;

        CHECK(landlock_apply(NULL, &a) == -EINVAL);
        CHECK(landlock_apply(&(struct landlock_spec) { .rw_paths = missing }, &a) == -ENOENT);
        CHECK(landlock_apply(&(struct landlock_spec) { .rw_paths = relative }, &a) == -EINVAL);
        CHECK(landlock_apply(&(struct landlock_spec) { .ro_paths = relative }, &a) == -EINVAL);
        CHECK(landlock_apply(&(struct landlock_spec) { .rw_paths = rw, .ro_under_rw = not_under }, &a) == -EINVAL);
        CHECK(landlock_apply(&(struct landlock_spec) { .rw_paths = rw, .ro_under_rw = relative }, &a) == -EINVAL);
        CHECK(landlock_apply(&(struct landlock_spec) { .rw_paths = rw, .ro_under_rw = missing }, &a) == -ENOENT);
        /* tool_calls on a writable mount: Landlock alone cannot protect it */
        CHECK(landlock_apply(&(struct landlock_spec) { .rw_paths = rw, .ro_under_rw = writable_under }, &a) == -EPERM);
        CHECK(a == -7);
        /* none of the refusals restricted anything */
        int fd = open(outside, O_WRONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        close(fd);
}

static void test_refusals(void **state) {
        if (abi <= 0)
                skip();
        in_child(refusals_child);
}

static void test_no_landlock(void **state) {
        if (abi > 0)
                skip();
        int a = -7;
        assert_int_equal(landlock_apply(&(struct landlock_spec) { 0 }, &a), -EOPNOTSUPP);
        assert_int_equal(a, -7);
}

static void fs_child(void) {
        const char *const rw[] = { root, NULL };
        const struct landlock_spec spec = { .ro_paths = ro, .rw_paths = rw };
        char sub[PATH_MAX + 16], buf[4];
        int a = -1, fd, status;

        CHECK(landlock_apply(&spec, &a) == 0);
        CHECK(a == abi);

        /* outside the root: refused although the mount and DAC allow it */
        CHECK_ERRNO(open(outside, O_WRONLY | O_CLOEXEC), EACCES);
        CHECK_ERRNO(open("/tmp/toolsd-landlock-new", O_CREAT | O_WRONLY | O_CLOEXEC, 0600), EACCES);
        CHECK_ERRNO(mkdir("/tmp/toolsd-landlock-dir", 0700), EACCES);
        CHECK_ERRNO(unlink(outside), EACCES);
        if (abi >= 3)
                CHECK_ERRNO(truncate(outside, 0), EACCES);
        /* not listed at all: not even readable */
        CHECK_ERRNO(open(outside, O_RDONLY | O_CLOEXEC), EACCES);
        CHECK_ERRNO(open("/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES);
        CHECK_ERRNO(open("/var", O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES);
        /* read-only paths: read and execute, no write */
        CHECK((fd = open("/usr/bin/true", O_RDONLY | O_CLOEXEC)) >= 0 && read(fd, buf, 4) == 4);
        close(fd);
        CHECK((fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC)) >= 0);
        close(fd);
        CHECK_ERRNO(open("/etc/passwd", O_WRONLY | O_CLOEXEC), EACCES);
        pid_t pid = fork();
        if (pid == 0) {
                execl("/usr/bin/true", "true", (char *) NULL);
                _exit(127);
        }
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        /* inside the root: everything */
        CHECK((fd = open(inside, O_CREAT | O_RDWR | O_CLOEXEC, 0600)) >= 0 && write(fd, "abc", 3) == 3);
        CHECK(ftruncate(fd, 1) == 0);
        close(fd);
        snprintf(sub, sizeof sub, "%s/sub", root);
        CHECK(mkdir(sub, 0700) == 0 && rmdir(sub) == 0);
        CHECK(unlink(inside) == 0);
}

static void test_fs(void **state) {
        if (abi <= 0)
                skip();
        in_child(fs_child);
}

/* A loopback listener made before the restriction; the restricted child
 * may neither connect to it nor bind one of its own. */
static void tcp_child(bool deny) {
        const struct landlock_spec spec = { .ro_paths = ro, .deny_tcp = deny };
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof sa;
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        CHECK(l >= 0 && bind(l, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(l, 1) == 0);
        CHECK(getsockname(l, (struct sockaddr *) &sa, &len) == 0);
        CHECK(landlock_apply(&spec, NULL) == 0);

        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        CHECK(c >= 0 && b >= 0);
        if (deny) {
                CHECK_ERRNO(connect(c, (struct sockaddr *) &sa, sizeof sa), EACCES);
                CHECK_ERRNO(bind(b, (struct sockaddr *) &any, sizeof any), EACCES);
        } else {
                CHECK(connect(c, (struct sockaddr *) &sa, sizeof sa) == 0);
                CHECK(bind(b, (struct sockaddr *) &any, sizeof any) == 0);
        }
}
static void tcp_denied_child(void) { tcp_child(true); }
static void tcp_allowed_child(void) { tcp_child(false); }

static void test_tcp(void **state) {
        if (abi < 4)
                skip();
        in_child(tcp_denied_child);
        in_child(tcp_allowed_child);
}

static char abstract_name[64];

static socklen_t abstract_addr(struct sockaddr_un *un, const char *name) {
        *un = (struct sockaddr_un) { .sun_family = AF_UNIX };
        size_t n = strlen(name);
        memcpy(un->sun_path + 1, name, n);      /* leading NUL: abstract */
        return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void scope_child(void) {
        struct sockaddr_un un;
        socklen_t len;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        CHECK(s >= 0);
        CHECK(landlock_apply(&(struct landlock_spec) { .ro_paths = ro }, NULL) == 0);
        /* the test process is outside the domain */
        CHECK_ERRNO(kill(getppid(), 0), EPERM);
        len = abstract_addr(&un, abstract_name);
        CHECK_ERRNO(connect(s, (struct sockaddr *) &un, len), EPERM);
        /* inside the domain both still work (a socket is of the domain it
         * was made in: these two are made after the restriction) */
        CHECK(kill(getpid(), 0) == 0);
        int own = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(own >= 0 && c >= 0);
        char mine[80];
        snprintf(mine, sizeof mine, "%s-inner", abstract_name);
        len = abstract_addr(&un, mine);
        CHECK(bind(own, (struct sockaddr *) &un, len) == 0 && listen(own, 1) == 0);
        CHECK(connect(c, (struct sockaddr *) &un, len) == 0);
}

static void test_scope(void **state) {
        struct sockaddr_un un;
        _cleanup_close_ int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (abi < 6)
                skip();
        snprintf(abstract_name, sizeof abstract_name, "toolsd-landlock-%d", (int) getpid());
        socklen_t len = abstract_addr(&un, abstract_name);
        assert_true(l >= 0);
        assert_int_equal(bind(l, (struct sockaddr *) &un, len), 0);
        assert_int_equal(listen(l, 1), 0);
        in_child(scope_child);
}

/* tool_calls/ on a read-only bind mount, as bwrap sets it up: accepted, and
 * the mount answers EROFS while the rest of the root stays writable. */
static void ro_under_child(void) {
        const char *const rw[] = { root, NULL };
        const char *const under[] = { tool_calls, NULL };
        char p[PATH_MAX + 16];
        int fd;

        if (unshare(CLONE_NEWNS) < 0)
                _exit(77);
        CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
        CHECK(mount(tool_calls, tool_calls, NULL, MS_BIND, NULL) == 0);
        CHECK(mount(NULL, tool_calls, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) == 0);
        CHECK(landlock_apply(&(struct landlock_spec) { .ro_paths = ro, .rw_paths = rw, .ro_under_rw = under }, NULL) == 0);
        snprintf(p, sizeof p, "%s/x.jsonl", tool_calls);
        CHECK_ERRNO(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600), EROFS);
        CHECK((fd = open(inside, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) >= 0);
        close(fd);
        CHECK(unlink(inside) == 0);
}

static void test_ro_under(void **state) {
        int status;

        if (abi <= 0)
                skip();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                ro_under_child();
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                skip();         /* no right to make a mount namespace here */
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
        /* cmocka 1.1.5 prints a skip as "not ok ... # SKIP", which meson
         * counts as a failure: run only the tests this kernel can answer,
         * and say which were left out. */
        const struct CMUnitTest with_landlock[] = {
                cmocka_unit_test(test_fs_rights),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_fs),
                cmocka_unit_test(test_tcp),
                cmocka_unit_test(test_scope),
                cmocka_unit_test(test_ro_under),
        };
        const struct CMUnitTest without_landlock[] = {
                cmocka_unit_test(test_fs_rights),
                cmocka_unit_test(test_no_landlock),
        };
        if (landlock_abi() > 0) {
                printf("# test_no_landlock left out: this kernel has Landlock\n");
                return cmocka_run_group_tests(with_landlock, setup, teardown);
        }
        printf("# Landlock tests left out: this kernel has no Landlock\n");
        return cmocka_run_group_tests(without_landlock, setup, teardown);
}
