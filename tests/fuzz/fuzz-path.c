/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for policy_path_check: the input is the model's path
 * argument, checked both ways (must exist or not) against a small real tree
 * made once in a temp dir: files, a directory, symlinks inside, symlinks
 * out, a loop. A leading '@' stands for "<root_path>/" so absolute spellings
 * of inside paths get exercised too. Whatever is accepted must be a clean
 * relative path that really resolves beneath the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[] = "/tmp/fuzz-path-XXXXXX";
static char root_path[PATH_MAX];
static int root_fd = -1;

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw) {
        return remove(p);
}

static void cleanup(void) {
        (void) nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void must(bool ok, const char *what) {
        if (!ok) {
                perror(what);
                abort();
        }
}

static void setup_once(void) {
        if (root_fd >= 0)
                return;
        must(mkdtemp(base), "mkdtemp");
        atexit(cleanup);
        snprintf(root_path, sizeof root_path, "%s/root", base);
        must(mkdir(root_path, 0755) == 0, "mkdir");
        root_fd = open(root_path, O_DIRECTORY | O_CLOEXEC);
        must(root_fd >= 0, "open root");
        int fd = openat(root_fd, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        must(fd >= 0, "create file");
        close(fd);
        must(mkdirat(root_fd, "dir", 0755) == 0 && mkdirat(root_fd, "dir/sub", 0755) == 0, "mkdir dir");
        fd = openat(root_fd, "dir/sub/nested.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        must(fd >= 0, "create nested");
        close(fd);
        must(symlinkat("/etc/passwd", root_fd, "out") == 0 && symlinkat("..", root_fd, "up") == 0 &&
                     symlinkat("dir", root_fd, "in") == 0 && symlinkat("dir/../file", root_fd, "back") == 0 &&
                     symlinkat("loop", root_fd, "loop") == 0 && symlinkat("/proc/self/root", root_fd, "proc") == 0,
             "symlinks");
}

static bool clean_rel(const char *rel) {
        if (!*rel || rel[0] == '/' || strlen(rel) >= PATH_MAX)
                return false;
        if (strcmp(rel, ".") == 0)
                return true;
        for (const char *p = rel; *p;) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;       /* "//", "./", trailing '/', ".." */
                p += n;
                if (*p == '/' && !*++p)
                        return false;
        }
        return true;
}

static void check(const char *arg, bool must_exist) {
        enum path_verdict v;
        char *rel = NULL;
        const char *why = NULL;

        int r = policy_path_check(root_fd, root_path, arg, must_exist, &v, &rel, &why);
        if (r < 0)
                abort();            /* no internal failure is expected here */
        if (v == PATH_REFUSED) {
                if (!why || rel)
                        abort();
                return;
        }
        if (v != PATH_OK || !rel || !clean_rel(rel))
                abort();
        if (must_exist) {
                struct open_how how = { .flags = O_PATH | O_CLOEXEC,
                                        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
                int fd = (int) syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
                if (fd < 0)
                        abort();    /* accepted, yet does not resolve beneath */
                close(fd);
        }
        free(rel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > PATH_MAX + 16 || memchr(data, 0, size))
                return 0;
        setup_once();

        bool at = size > 0 && data[0] == '@';
        size_t prefix = at ? strlen(root_path) + 1 : 0;
        char *arg = malloc(prefix + size + 1);
        if (!arg)
                return 0;
        if (at) {
                memcpy(arg, root_path, prefix - 1);
                arg[prefix - 1] = '/';
                data++, size--;
        }
        memcpy(arg + prefix, data, size);
        arg[prefix + size] = '\0';

        check(arg, true);
        check(arg, false);
        free(arg);
        return 0;
}
