/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of policy_path_check (daemon/policy_path.c) against real files
 * in a private temporary directory: plain and nested files, absolute paths,
 * "..", symlinks leaving the root, /proc magic links, missing files and
 * parents, odd spellings, and a race against a renamer swapping a directory
 * for a symlink to "/".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"

static char base[] = "/tmp/test-path-XXXXXX";
static char root_path[PATH_MAX];
static int root_fd = -1;

static void make_file(const char *rel) {
        int fd = openat(root_fd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "x\n", 2), 2);
        close(fd);
}

static int setup(void **state) {
        char p[PATH_MAX + 64];

        if (!mkdtemp(base))
                return -1;
        snprintf(root_path, sizeof root_path, "%s/root", base);
        if (mkdir(root_path, 0755) < 0)
                return -1;
        snprintf(p, sizeof p, "%s/outside", base);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return -1;
        close(fd);
        root_fd = open(root_path, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root_fd < 0)
                return -1;

        make_file("file");
        if (mkdirat(root_fd, "dir", 0755) < 0 || mkdirat(root_fd, "dir/sub", 0755) < 0)
                return -1;
        make_file("dir/sub/nested.txt");

        snprintf(p, sizeof p, "/proc/self/fd/%d", root_fd);
        if (symlinkat("/etc/passwd", root_fd, "out") < 0 ||
            symlinkat("../outside", root_fd, "up") < 0 ||
            symlinkat("chain2", root_fd, "chain1") < 0 ||
            symlinkat("dir/sub/nested.txt", root_fd, "chain2") < 0 ||
            symlinkat("dir/../file", root_fd, "reldotdot") < 0 ||
            symlinkat("missing-target", root_fd, "dangling") < 0 ||
            symlinkat("loop", root_fd, "loop") < 0 ||
            symlinkat(p, root_fd, "procfd") < 0 ||
            symlinkat("/", root_fd, "slash") < 0 ||
            symlinkat("dir", root_fd, "dirlink") < 0)
                return -1;
        return 0;
}

/* Valgrind 3.19 does not know openat2 and fails it with ENOSYS; the checker
 * then (rightly) reports an internal failure, so main() leaves out what
 * needs the kernel. (Not cmocka's skip(): 1.1.5 prints it to TAP as
 * "not ok", which meson counts as a failure.) */
static bool have_openat2(void) {
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
        int fd = (int) syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof how);
        if (fd < 0)
                return errno != ENOSYS;
        close(fd);
        return true;
}
static void test_no_openat2(void **state) {
        enum path_verdict v = 99;
        char *rel = NULL;
        const char *why = NULL;

        /* no fallback to a racy walk: an internal failure, not a verdict */
        assert_int_equal(policy_path_check(root_fd, root_path, "file", true, &v, &rel, &why), -ENOSYS);
        assert_int_equal(v, 99);
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw) {
        return remove(p);
}

static int teardown(void **state) {
        if (root_fd >= 0)
                close(root_fd);
        return nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs the check and asserts it succeeded with the given verdict; returns
 * rel (to free) on PATH_OK, the reason on refusal through *reason. */
static char *check(const char *arg, bool must_exist, enum path_verdict want, const char **reason) {
        enum path_verdict v = 99;
        char *rel = NULL;
        const char *why = NULL;

        assert_int_equal(policy_path_check(root_fd, root_path, arg, must_exist, &v, &rel, &why), 0);
        assert_int_equal(v, want);
        if (want == PATH_OK) {
                assert_non_null(rel);
                assert_null(why);
        } else {
                assert_null(rel);
                assert_non_null(why);
        }
        if (reason)
                *reason = why;
        return rel;
}

static void assert_ok(const char *arg, bool must_exist, const char *want_rel) {
        char *rel = check(arg, must_exist, PATH_OK, NULL);
        assert_string_equal(rel, want_rel);
        free(rel);
}

static void assert_refused(const char *arg, bool must_exist, const char *want_reason) {
        const char *why;
        check(arg, must_exist, PATH_REFUSED, &why);
        assert_string_equal(why, want_reason);
}

#define ESCAPES "escapes the artifacts root (a symlink or mount leads outside)"
#define OUTSIDE "absolute path outside the artifacts root"
#define DOTDOT "'..' is not allowed"
#define NOENT "no such file under the artifacts root"
#define NOTDIR "a path component is not a directory"
#define NOPARENT "parent directory does not exist under the artifacts root"

static void test_plain(void **state) {
        assert_ok("file", true, "file");
        assert_ok("file", false, "file");
        assert_ok("dir", true, "dir");
        assert_ok("dir/sub/nested.txt", true, "dir/sub/nested.txt");
}

static void test_absolute_inside(void **state) {
        char p[PATH_MAX + 64];

        snprintf(p, sizeof p, "%s/dir/sub/nested.txt", root_path);
        assert_ok(p, true, "dir/sub/nested.txt");
        snprintf(p, sizeof p, "/%s//dir/./sub//nested.txt", root_path);
        assert_ok(p, true, "dir/sub/nested.txt");
        snprintf(p, sizeof p, "%s", root_path);
        assert_ok(p, true, ".");
        snprintf(p, sizeof p, "%s/", root_path);
        assert_ok(p, true, ".");
        snprintf(p, sizeof p, "%s/.", root_path);
        assert_ok(p, true, ".");
}

static void test_absolute_outside(void **state) {
        char p[PATH_MAX + 64];

        assert_refused("/etc/passwd", true, OUTSIDE);
        assert_refused("/etc/passwd", false, OUTSIDE);
        assert_refused("/", true, OUTSIDE);
        assert_refused("/proc/self/root/etc/passwd", true, OUTSIDE);
        /* a sibling sharing the root's name as a prefix is not inside */
        snprintf(p, sizeof p, "%sx/file", root_path);
        assert_refused(p, false, OUTSIDE);
        snprintf(p, sizeof p, "%s/outside", base);
        assert_refused(p, true, OUTSIDE);
        /* the /proc spelling of the root itself is not accepted either */
        snprintf(p, sizeof p, "/proc/self/fd/%d/file", root_fd);
        assert_refused(p, true, OUTSIDE);
}

static void test_root_itself(void **state) {
        assert_ok(".", true, ".");
        assert_ok("./", true, ".");
        assert_ok(".//./.", false, ".");
}

static void test_dotdot(void **state) {
        char p[PATH_MAX + 64];

        assert_refused("..", true, DOTDOT);
        assert_refused("..", false, DOTDOT);
        assert_refused("a/../b", false, DOTDOT);
        assert_refused("dir/..", true, DOTDOT);
        assert_refused("dir/../file", true, DOTDOT);
        assert_refused("../outside", true, DOTDOT);
        snprintf(p, sizeof p, "%s/../outside", root_path);
        assert_refused(p, true, DOTDOT);
        /* names that merely contain dots are fine */
        assert_ok("...", false, "...");
        assert_ok("..x", false, "..x");
        assert_ok("x..", false, "x..");
        assert_ok(".hidden", false, ".hidden");
}

static void test_symlinks_out(void **state) {
        assert_refused("out", true, ESCAPES);
        assert_refused("out", false, ESCAPES);
        assert_refused("up", true, ESCAPES);
        assert_refused("up", false, ESCAPES);
        assert_refused("slash/etc/passwd", true, ESCAPES);
        assert_refused("slash/etc/nonexistent", false, ESCAPES);
        assert_refused("slash", false, ESCAPES);
        /* an absolute symlink to the root's own /proc alias is still absolute */
        assert_refused("procfd", true, ESCAPES);
        assert_refused("procfd/file", false, ESCAPES);
}

static void test_symlinks_in(void **state) {
        assert_ok("chain1", true, "chain1");
        assert_ok("chain2", true, "chain2");
        assert_ok("reldotdot", true, "reldotdot");
        assert_ok("dirlink/sub/nested.txt", true, "dirlink/sub/nested.txt");
        assert_ok("dirlink/sub/new", false, "dirlink/sub/new");
}

static void test_dangling(void **state) {
        assert_refused("dangling", true, NOENT);
        /* its target would be created inside the root */
        assert_ok("dangling", false, "dangling");
        assert_refused("loop", true, "too many symlinks, or a /proc magic link");
        assert_refused("loop", false, "too many symlinks, or a /proc magic link");
}

static void test_magic_link(void **state) {
        enum path_verdict v;
        char *rel = NULL;
        const char *why = NULL;
        int fd = open("/proc/self", O_DIRECTORY | O_CLOEXEC);

        assert_true(fd >= 0);
        /* a root where magic links live: /proc/self/root jumps to "/" */
        assert_int_equal(policy_path_check(fd, "/proc/self", "root/etc/passwd", true, &v, &rel, &why), 0);
        assert_int_equal(v, PATH_REFUSED);
        assert_string_equal(why, "too many symlinks, or a /proc magic link");
        assert_int_equal(policy_path_check(fd, "/proc/self", "cwd", true, &v, &rel, &why), 0);
        assert_int_equal(v, PATH_REFUSED);
        assert_string_equal(why, "too many symlinks, or a /proc magic link");
        assert_null(rel);
        close(fd);
}

static void test_missing(void **state) {
        char p[PATH_MAX + 64];

        assert_refused("new.txt", true, NOENT);
        assert_ok("new.txt", false, "new.txt");
        assert_ok("dir/sub/new.txt", false, "dir/sub/new.txt");
        snprintf(p, sizeof p, "%s/dir/new.txt", root_path);
        assert_ok(p, false, "dir/new.txt");
        assert_refused("nodir/new.txt", false, NOPARENT);
        assert_refused("nodir/new.txt", true, NOENT);
        assert_refused("dir/nodir/deeper/new.txt", false, NOPARENT);
        assert_refused("file/new.txt", false, NOTDIR);
        assert_refused("file/new.txt", true, NOTDIR);
        assert_refused("file/x/y", false, NOTDIR);
        assert_refused("file/", true, NOTDIR);
        assert_refused("file/", false, NOTDIR);
        assert_refused("file/.", false, NOTDIR);
        assert_refused("chain1/", true, NOTDIR);
        assert_ok("dirlink/", true, "dirlink");
        assert_ok("newdir/", false, "newdir");
}

static void test_odd_spellings(void **state) {
        assert_ok("./file", true, "file");
        assert_ok(".//dir//sub/./nested.txt", true, "dir/sub/nested.txt");
        assert_ok("dir/", true, "dir");
        assert_ok("dir///", true, "dir");
        assert_ok("dir/./sub/", false, "dir/sub");
        assert_ok("././new", false, "new");
}

static void test_long(void **state) {
        char *p = malloc(PATH_MAX + 2);

        assert_non_null(p);
        memset(p, 'a', PATH_MAX + 1);
        p[PATH_MAX + 1] = '\0';
        assert_refused(p, false, "path too long");
        p[PATH_MAX] = '\0';
        assert_refused(p, false, "path too long");
        /* short enough overall, but one component longer than NAME_MAX */
        p[NAME_MAX + 1] = '\0';
        assert_refused(p, false, "path too long");
        /* many short components: the kernel's limit applies */
        for (size_t i = 1; i < PATH_MAX - 1; i += 2)
                p[i] = '/';
        p[PATH_MAX - 1] = '\0';
        assert_refused(p, false, NOPARENT);
        free(p);
}

static void test_empty_and_errors(void **state) {
        enum path_verdict v = 99;
        char *rel = NULL;
        const char *why = NULL;

        assert_refused("", true, "empty path");
        assert_refused("", false, "empty path");
        assert_int_equal(policy_path_check(-1, root_path, "file", true, &v, &rel, &why), -EINVAL);
        assert_int_equal(policy_path_check(root_fd, NULL, "file", true, &v, &rel, &why), -EINVAL);
        assert_int_equal(policy_path_check(root_fd, "relative", "file", true, &v, &rel, &why), -EINVAL);
        assert_int_equal(policy_path_check(root_fd, root_path, NULL, true, &v, &rel, &why), -EINVAL);
        assert_int_equal(policy_path_check(root_fd, root_path, "file", true, NULL, &rel, &why), -EINVAL);
        assert_int_equal(policy_path_check(root_fd, root_path, "file", true, &v, NULL, &why), -EINVAL);
        assert_int_equal(policy_path_check(root_fd, root_path, "file", true, &v, &rel, NULL), -EINVAL);
        /* outputs untouched on failure */
        assert_int_equal(v, 99);
        assert_null(rel);
        assert_null(why);
}

/* A directory the peer may not search: only checkable without root's
 * CAP_DAC_OVERRIDE, so a child drops to nobody first. */
static void test_permission_denied(void **state) {
        assert_int_equal(mkdirat(root_fd, "private", 0700), 0);
        make_file("private/secret");

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                enum path_verdict v;
                char *rel = NULL;
                const char *why = NULL;

                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(2);
                if (policy_path_check(root_fd, root_path, "private/secret", true, &v, &rel, &why) < 0 ||
                    v != PATH_REFUSED || strcmp(why, "permission denied") != 0)
                        _exit(3);
                if (policy_path_check(root_fd, root_path, "private/new", false, &v, &rel, &why) < 0 ||
                    v != PATH_REFUSED || strcmp(why, "permission denied") != 0)
                        _exit(4);
                if (policy_path_check(root_fd, root_path, "private", true, &v, &rel, &why) < 0 || v != PATH_OK)
                        _exit(5);
                free(rel);
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- the race ---- */

static atomic_bool race_stop;
static atomic_ulong race_swaps;
static int race_fd = -1;

static void *race_swapper(void *arg) {
        while (!atomic_load(&race_stop)) {
                if (renameat2(race_fd, "d", race_fd, "alt", RENAME_EXCHANGE) == 0)
                        atomic_fetch_add(&race_swaps, 1);
                /* Give the checker settled moments too, even on a loaded
                 * machine, so both outcomes occur. */
                sched_yield();
        }
        return NULL;
}

static void test_race(void **state) {
        char rp[PATH_MAX + 64];
        struct stat inside;
        unsigned ok = 0, refused = 0;
        pthread_t t;

        snprintf(rp, sizeof rp, "%s/race", base);
        assert_int_equal(mkdir(rp, 0755), 0);
        race_fd = open(rp, O_DIRECTORY | O_CLOEXEC);
        assert_true(race_fd >= 0);
        assert_int_equal(mkdirat(race_fd, "d", 0755), 0);
        assert_int_equal(mkdirat(race_fd, "d/etc", 0755), 0);
        int f = openat(race_fd, "d/etc/passwd", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(f >= 0);
        assert_int_equal(fstat(f, &inside), 0);
        close(f);
        assert_int_equal(symlinkat("/", race_fd, "alt"), 0);

        atomic_store(&race_stop, false);
        assert_int_equal(pthread_create(&t, NULL, race_swapper, NULL), 0);
        while (atomic_load(&race_swaps) < 100)
                sched_yield();

        /* At least 10000 checks, and on until both outcomes were seen
         * (bounded: a machine this busy fails the last asserts). */
        for (unsigned i = 0; i < 200000 && (i < 10000 || ok == 0 || refused == 0); i++) {
                bool must_exist = i % 2 == 0;
                const char *arg = must_exist ? "d/etc/passwd" : "d/etc/new";
                enum path_verdict v;
                char *rel = NULL;
                const char *why = NULL;

                assert_int_equal(policy_path_check(race_fd, rp, arg, must_exist, &v, &rel, &why), 0);
                if (v == PATH_REFUSED) {
                        /* The kernel answers EAGAIN to RESOLVE_BENEATH while
                         * renames race; past the retries that is a refusal. */
                        if (strcmp(why, ESCAPES) != 0)
                                assert_string_equal(why, "the path kept changing during the check");
                        refused++;
                        continue;
                }
                ok++;
                assert_string_equal(rel, arg);
                if (must_exist) {
                        /* whatever it names now, opened beneath it is never the host's */
                        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC,
                                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
                        int fd = (int) syscall(SYS_openat2, race_fd, rel, &how, sizeof how);
                        if (fd >= 0) {
                                struct stat st;
                                assert_int_equal(fstat(fd, &st), 0);
                                assert_int_equal(st.st_ino, inside.st_ino);
                                assert_int_equal(st.st_dev, inside.st_dev);
                                close(fd);
                        } else
                                assert_int_equal(errno, EXDEV);
                }
                free(rel);
        }

        atomic_store(&race_stop, true);
        assert_int_equal(pthread_join(t, NULL), 0);
        close(race_fd);
        /* both states were seen, so the race was real */
        assert_true(ok > 0);
        assert_true(refused > 0);
}

static void test_hidden(void **state) {
        static const char *const hidden[] = { ".env", ".git/config", "a/.ssh/id_rsa", "src/.cache", "..x",
                                              ".", /* handled below */ };
        static const char *const plain[] = { "a.txt", "src/app.py", "a/b/c", "x.", "a..b", "dir/x.env" };

        for (size_t i = 0; i < ELEMENTSOF(hidden) - 1; i++)
                assert_true(policy_path_is_hidden(hidden[i]));
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                assert_false(policy_path_is_hidden(plain[i]));
        assert_false(policy_path_is_hidden("."));       /* the root itself */
        assert_false(policy_path_is_hidden(""));
        assert_true(policy_path_is_hidden("a//.b"));
}

static void add_tests(struct CMUnitTest *all, size_t *n, const struct CMUnitTest *t, size_t k) {
        memcpy(all + *n, t, k * sizeof *t);
        *n += k;
}

int main(void) {
        static const struct CMUnitTest always[] = {
                cmocka_unit_test(test_hidden),
                cmocka_unit_test(test_absolute_outside),
                cmocka_unit_test(test_empty_and_errors),
        };
        static const struct CMUnitTest kernel[] = {
                cmocka_unit_test(test_plain),
                cmocka_unit_test(test_absolute_inside),
                cmocka_unit_test(test_root_itself),
                cmocka_unit_test(test_dotdot),
                cmocka_unit_test(test_symlinks_out),
                cmocka_unit_test(test_symlinks_in),
                cmocka_unit_test(test_dangling),
                cmocka_unit_test(test_magic_link),
                cmocka_unit_test(test_missing),
                cmocka_unit_test(test_odd_spellings),
                cmocka_unit_test(test_long),
                cmocka_unit_test(test_race),
        };
        static const struct CMUnitTest as_root[] = {
                cmocka_unit_test(test_permission_denied),
        };
        static const struct CMUnitTest no_kernel[] = {
                cmocka_unit_test(test_no_openat2),
        };
        struct CMUnitTest all[ELEMENTSOF(always) + ELEMENTSOF(kernel) + ELEMENTSOF(as_root)];
        size_t n = 0;

        add_tests(all, &n, always, ELEMENTSOF(always));
        if (have_openat2()) {
                add_tests(all, &n, kernel, ELEMENTSOF(kernel));
                if (geteuid() == 0)
                        add_tests(all, &n, as_root, ELEMENTSOF(as_root));
                else
                        printf("# test_permission_denied left out: needs root to drop to nobody\n");
        } else {
                printf("# tests that need openat2 left out: ENOSYS (valgrind?)\n");
                add_tests(all, &n, no_kernel, ELEMENTSOF(no_kernel));
        }
        return _cmocka_run_group_tests("test-path", all, n, setup, teardown);
}
