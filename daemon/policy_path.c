/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Path checks under the artifacts root: is this argument of the model's a
 * path beneath the session's root, and what is it relative to the root?
 *
 * Runs in the broker, as the peer's uid with no capabilities. It opens only
 * O_PATH descriptors beneath the root fd and closes them again; it never
 * logs.
 *
 * The verdict is the kernel's: openat2(2) with RESOLVE_BENEATH walks the
 * path itself, so a symlink swapped in during the check cannot make us say
 * yes to something outside (no stat-then-open race in this file). Callers
 * must still open the returned relative path with openat2(RESOLVE_BENEATH)
 * themselves: a verdict is about one moment, the open is about the next.
 *
 * Resolve flags, and why:
 *   RESOLVE_BENEATH        absolute symlinks and ".." that climb above the
 *                          root fail with EXDEV; symlinks that stay inside
 *                          are fine (a final symlink too, so no O_NOFOLLOW).
 *   RESOLVE_NO_MAGICLINKS  /proc/<pid>/fd/N, /proc/<pid>/root, ... jump
 *                          anywhere regardless of the lookup root.
 *   no RESOLVE_NO_XDEV     the root's owner may have mounts beneath it (a
 *                          bind-mounted dataset, a tmpfs scratch dir); a
 *                          mount beneath the root is still beneath the root,
 *                          and the model cannot create mounts on the host.
 *   no RESOLVE_NO_SYMLINKS symlinks inside the root are ordinary artifacts
 *                          (venvs, build trees).
 *
 * Without openat2 (kernel < 5.6, or valgrind) the check fails with -ENOSYS:
 * there is deliberately no fallback to a component-by-component walk in user
 * space, which is exactly the racy check this file exists to avoid.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy.h"

#define PATH_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
/* EAGAIN means a rename or mount raced with a ".." inside a symlink's
 * target; the kernel wants us to retry. Bounded, so a hostile renamer
 * cannot make us spin. */
#define PATH_EAGAIN_TRIES 16

static int openat2_beneath(int root_fd, const char *rel, int extra_flags) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC | (unsigned) extra_flags,
                .resolve = PATH_RESOLVE,
        };
        int fd = -EAGAIN;

        for (unsigned i = 0; i < PATH_EAGAIN_TRIES && fd == -EAGAIN; i++) {
                fd = (int) syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
                if (fd < 0)
                        fd = negative_errno();
        }
        return fd;
}

/* The length of the component p starts with (p past any slashes). */
static size_t component_len(const char *p) {
        return strcspn(p, "/");
}

static const char *skip_slashes(const char *p) {
        return p + strspn(p, "/");
}

static bool component_is(const char *p, size_t n, const char *s) {
        return n == strlen(s) && memcmp(p, s, n) == 0;
}

/* True when any component of p is "..". */
static bool has_dotdot(const char *p) {
        for (p = skip_slashes(p); *p; p = skip_slashes(p + component_len(p)))
                if (component_is(p, component_len(p), ".."))
                        return true;
        return false;
}

/* If p lies inside the (absolute) root path, returns where the part below
 * it starts (possibly ""), comparing component by component so "//" and
 * "./" in either do not matter and "/rootx" is not inside "/root". */
static const char *strip_root(const char *p, const char *root) {
        for (;;) {
                root = skip_slashes(root);
                p = skip_slashes(p);
                while (component_is(p, component_len(p), "."))
                        p = skip_slashes(p + 1);
                if (!*root)
                        return p;
                size_t n = component_len(root);
                if (component_len(p) != n || memcmp(p, root, n) != 0)
                        return NULL;
                root += n;
                p += n;
        }
}

/* Collapses "//", drops "." components and trailing slashes; "" becomes
 * ".". p holds no ".." and is not absolute (already stripped). */
static int normalize(const char *p, char **ret) {
        char *out = malloc(strlen(p) + 2);
        if (!out)
                return -ENOMEM;

        size_t k = 0;
        for (p = skip_slashes(p); *p; p = skip_slashes(p + component_len(p))) {
                size_t n = component_len(p);
                if (component_is(p, n, "."))
                        continue;
                if (k > 0)
                        out[k++] = '/';
                memcpy(out + k, p, n);
                k += n;
        }
        if (k == 0)
                out[k++] = '.';
        out[k] = '\0';
        *ret = out;
        return 0;
}

/* Maps an openat2 error to a refusal; NULL when it is an internal failure. */
static const char *refusal_for(int r, bool is_parent) {
        switch (r) {
        case -EXDEV:
                return "escapes the artifacts root (a symlink or mount leads outside)";
        case -ELOOP:
                return "too many symlinks, or a /proc magic link";
        case -ENOENT:
                return is_parent ? "parent directory does not exist under the artifacts root"
                                 : "no such file under the artifacts root";
        case -ENOTDIR:
                return "a path component is not a directory";
        case -EACCES:
        case -EPERM:
                return "permission denied";
        case -ENAMETOOLONG:
                return "path too long";
        case -EAGAIN:
                return "the path kept changing during the check";
        default:
                return NULL;
        }
}

/* The final component does not exist: fine when its parent directory
 * resolves beneath the root. rel is normalized and not ".". */
static int check_parent(int root_fd, const char *rel, const char **ret_reason) {
        const char *slash = strrchr(rel, '/');
        _cleanup_free_ char *parent = slash ? strndup(rel, (size_t) (slash - rel)) : strdup(".");
        if (!parent)
                return -ENOMEM;

        _cleanup_close_ int fd = openat2_beneath(root_fd, parent, O_DIRECTORY);
        if (fd >= 0) {
                *ret_reason = NULL;
                return 0;
        }
        *ret_reason = refusal_for(fd, true);
        return *ret_reason ? 0 : fd;
}

/* True when arg ends in "/" or "/.": the kernel then wants a directory, and
 * normalizing must not lose that ("file/" is not "file"). */
static bool wants_directory(const char *arg) {
        size_t n = strlen(arg);
        return n > 0 && (arg[n - 1] == '/' || (arg[n - 1] == '.' && (n == 1 || arg[n - 2] == '/')));
}

/* Resolves rel beneath the root; 0 with *ret_reason NULL when it is fine,
 * 0 with a reason for a refusal, negative errno for an internal failure. */
static int resolve(int root_fd, const char *rel, bool must_exist, bool dir, const char **ret_reason) {
        _cleanup_close_ int fd = openat2_beneath(root_fd, rel, dir ? O_DIRECTORY : 0);
        if (fd >= 0) {
                *ret_reason = NULL;
                return 0;
        }
        if (fd == -ENOENT && !must_exist && strcmp(rel, ".") != 0)
                return check_parent(root_fd, rel, ret_reason);

        *ret_reason = refusal_for(fd, false);
        return *ret_reason ? 0 : fd;
}

/* The checks that need no file system; NULL when arg passes them. */
static const char *refuse_syntax(const char *root_path, const char *arg, const char **ret_below) {
        if (!*arg)
                return "empty path";
        if (strnlen(arg, PATH_MAX) >= PATH_MAX)
                return "path too long";
        if (has_dotdot(arg))
                return "'..' is not allowed";

        *ret_below = arg;
        if (arg[0] == '/') {
                *ret_below = strip_root(arg, root_path);
                if (!*ret_below)
                        return "absolute path outside the artifacts root";
        }
        return NULL;
}

int policy_path_check(int root_fd, const char *root_path, const char *arg, bool must_exist,
                      enum path_verdict *ret_verdict, char **ret_rel, const char **ret_reason) {
        const char *reason, *below = NULL;
        _cleanup_free_ char *rel = NULL;
        int r;

        if (root_fd < 0 || !root_path || root_path[0] != '/' || !arg || !ret_verdict || !ret_rel ||
            !ret_reason)
                return -EINVAL;

        reason = refuse_syntax(root_path, arg, &below);
        if (!reason) {
                r = normalize(below, &rel);
                if (r < 0)
                        return r;
                r = resolve(root_fd, rel, must_exist, wants_directory(arg), &reason);
                if (r < 0)
                        return r;
        }

        if (reason) {
                *ret_verdict = PATH_REFUSED;
                *ret_reason = reason;
                return 0;
        }
        *ret_verdict = PATH_OK;
        *ret_rel = TAKE_PTR(rel);
        return 0;
}

bool policy_path_is_hidden(const char *rel) {
        /* Any component that starts with '.', but "." (the root) itself. */
        for (const char *p = rel; p && *p;) {
                size_t n = strcspn(p, "/");
                if (p[0] == '.' && !(n == 1))
                        return true;
                p += n;
                while (*p == '/')
                        p++;
        }
        return false;
}
