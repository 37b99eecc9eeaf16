/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Landlock for the exec shim (see landlock.h for the contract and
 * docs/sandbox-layers.md for the reasons).
 *
 * Runs in toolsd-exec, as the peer's uid with no capabilities, right before
 * execve() of the tool's command; Landlock needs no privilege, only
 * no_new_privs. Uses the raw syscalls: glibc has no wrappers, and the
 * build host's <linux/landlock.h> may predate the ABI the kernel offers,
 * so the newer constants are spelt out below (values are kernel UAPI).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <linux/landlock.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"
#include "macro.h"

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)           /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)        /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)       /* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)        /* ABI 4 */
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* struct landlock_ruleset_attr as of ABI 6; the kernel takes a prefix. */
struct ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;    /* ABI 4 */
        uint64_t scoped;                /* ABI 6 */
};

#define FS_V1 ((1ULL << 13) - 1)        /* EXECUTE .. MAKE_SYM */
#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
/* The rights that make sense on a non-directory (others give EINVAL). */
#define FS_FILE (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |           \
                 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |           \
                 LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Paths and rule counts come from the broker's own manifest, not the peer,
 * but a bound keeps a broken caller from building an endless ruleset. */
#define LANDLOCK_RULES_MAX 256

int landlock_abi(void) {
        long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        return v > 0 && v < INT_MAX ? (int) v : 0;
}

uint64_t landlock_fs_rights(int abi) {
        uint64_t r = 0;

        if (abi >= 1)
                r |= FS_V1;
        if (abi >= 2)
                r |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                r |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return r;
}

static int add_path(int ruleset, const char *path, uint64_t rights, bool may_be_missing) {
        _cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
        struct stat st;

        if (fd < 0)
                return errno == ENOENT && may_be_missing ? 0 : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                rights &= FS_FILE;

        struct landlock_path_beneath_attr pb = { .allowed_access = rights, .parent_fd = fd };
        if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                return -errno;
        return 0;
}

static int add_paths(int ruleset, const char *const *paths, uint64_t rights, bool may_be_missing,
                     size_t *count) {
        for (const char *const *p = paths; p && *p; p++) {
                if (**p != '/' || ++*count > LANDLOCK_RULES_MAX)
                        return -EINVAL;
                int r = add_path(ruleset, *p, rights, may_be_missing);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool path_beneath(const char *path, const char *root) {
        size_t n = strlen(root);

        if (n == 1)                     /* "/" */
                return path[1] != '\0';
        return strncmp(path, root, n) == 0 && path[n] == '/';
}

/* Landlock rights only add up along a path, so a read-only island inside a
 * read-write root has to come from the mount. Refuse to run without it. */
static int check_ro_under(const char *path, const char *const *rw_paths) {
        _cleanup_free_ char *real = realpath(path, NULL);
        struct statvfs sv;
        bool beneath = false;

        if (!real)
                return -errno;
        for (const char *const *p = rw_paths; p && *p && !beneath; p++) {
                _cleanup_free_ char *root = realpath(*p, NULL);
                if (!root)
                        return -errno;
                beneath = path_beneath(real, root);
        }
        if (!beneath)
                return -EINVAL;
        if (statvfs(real, &sv) < 0)
                return -errno;
        return sv.f_flag & ST_RDONLY ? 0 : -EPERM;
}

static int ruleset_new(int abi, bool deny_tcp) {
        struct ruleset_attr attr = { .handled_access_fs = landlock_fs_rights(abi) };
        size_t size = offsetof(struct ruleset_attr, handled_access_net);

        if (abi >= 4) {
                /* Handled with no rule: every TCP bind and connect denied. */
                if (deny_tcp)
                        attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
                                                  LANDLOCK_ACCESS_NET_CONNECT_TCP;
                size = offsetof(struct ruleset_attr, scoped);
        }
        if (abi >= 6) {
                /* No signals to, no abstract sockets of, anything outside:
                 * with a shared network namespace the host's abstract
                 * sockets (X11, D-Bus, ...) would otherwise be reachable. */
                attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
                size = sizeof attr;
        }
        long fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
        return fd < 0 ? -errno : (int) fd;
}

int landlock_apply(const struct landlock_spec *s, int *ret_abi) {
        _cleanup_close_ int ruleset = -1;
        size_t count = 0;
        int abi, r;

        if (!s)
                return -EINVAL;
        abi = landlock_abi();
        if (abi <= 0)
                return -EOPNOTSUPP;

        for (const char *const *p = s->ro_under_rw; p && *p; p++) {
                if (**p != '/')
                        return -EINVAL;
                r = check_ro_under(*p, s->rw_paths);
                if (r < 0)
                        return r;
        }

        ruleset = ruleset_new(abi, s->deny_tcp);
        if (ruleset < 0)
                return ruleset;
        r = add_paths(ruleset, s->ro_paths, FS_READ, true, &count);
        if (r < 0)
                return r;
        r = add_paths(ruleset, s->rw_paths, landlock_fs_rights(abi), false, &count);
        if (r < 0)
                return r;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
                return -errno;

        if (ret_abi)
                *ret_abi = abi;
        return 0;
}
