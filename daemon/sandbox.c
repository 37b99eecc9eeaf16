/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Manifest → bubblewrap argv: the one place that says what a tool call can
 * see. Pure: no I/O, no logging, no look at the host (so a test can pin the
 * exact vector); what does not exist on a given host is handled by bwrap's
 * *-try options, not by probing here.
 *
 * Runs in the broker, as the peer's uid with no capabilities; bwrap then
 * only subtracts from that.
 *
 * The command line ends "--", then either the command, or, with an exec
 * shim, "SHIM SHIM_ARGS... -- COMMAND...": the shim parses its own options
 * up to its own "--" and execs what follows, so a command word that looks
 * like an option can never be read as one, by bwrap or by the shim.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sandbox.h"

/* More words than any command the policy lets through (POLICY_ARGV_MAX)
 * plus environment and binds; past it something upstream is broken. */
#define SANDBOX_ARGV_MAX 65536

/* The host's /etc is not bound: only these, each with --ro-bind-try since
 * the host may lack some. Never /etc/shadow, /etc/ssl/private, sudoers,
 * ssh keys, or anything holding a secret. */
static const char *const etc_files[] = {
        "/etc/ld.so.cache",      /* the dynamic linker finds libraries through it */
        "/etc/ld.so.conf",       /* ... and ldconfig -p, some loaders, read these */
        "/etc/ld.so.conf.d",
        "/etc/alternatives",     /* Debian's awk, cc, python, editor... links go through it */
        "/etc/localtime",        /* timestamps in the host's zone, not UTC surprises */
        "/etc/nsswitch.conf",    /* glibc NSS: getpwuid and getaddrinfo need it */
        "/etc/passwd",           /* id, ls -l, getpass, ~ expansion; no hashes (shadow is not bound) */
        "/etc/group",
        "/etc/hosts",            /* "localhost" resolves, even without network */
        "/etc/ssl/certs",        /* TLS trust store; its links point into /usr/share */
        "/etc/ssl/openssl.cnf",  /* OpenSSL refuses some operations without it */
        "/etc/mime.types",       /* Python's mimetypes and friends */
        /* Debian's Python reads its configuration (sitecustomize, distutils
         * defaults) from /etc/python3*; no globbing here, so the versions
         * Debian 12 and its successors ship are listed and -try skips the
         * rest. /etc/ca-certificates holds only update hooks: left out. */
        "/etc/python3",
        "/etc/python3.11",
        "/etc/python3.12",
        "/etc/python3.13",
};

/* Only for network skills: without network there is nothing to resolve, and
 * the host's resolver setup is none of the tool's business. */
static const char *const etc_net_files[] = {
        "/etc/resolv.conf",
};

/* Debian 12 is merged-usr: /bin, /sbin, /lib, /lib64 are links into /usr.
 * Always emitted (a dangling /lib64 harms nothing); /lib32 and /libx32
 * are not, so multilib binaries need a ReadOnlyPaths= entry. */
static const char *const usr_links[][2] = {
        { "usr/bin", "/bin" },
        { "usr/sbin", "/sbin" },
        { "usr/lib", "/lib" },
        { "usr/lib64", "/lib64" },
};

struct argv_builder {
        char **v;
        size_t n, allocated;
        int error;              /* sticky: the first failure */
};

static void add(struct argv_builder *b, const char *s) {
        if (b->error < 0)
                return;
        if (b->n + 1 >= SANDBOX_ARGV_MAX) {
                b->error = -E2BIG;
                return;
        }
        if (b->n + 2 > b->allocated) {
                size_t a = MAX(b->allocated * 2, (size_t) 64);
                char **v = realloc(b->v, a * sizeof *v);
                if (!v) {
                        b->error = -ENOMEM;
                        return;
                }
                b->v = v;
                b->allocated = a;
        }
        b->v[b->n] = strdup(s);
        if (!b->v[b->n]) {
                b->error = -ENOMEM;
                return;
        }
        b->v[++b->n] = NULL;
}

static void add2(struct argv_builder *b, const char *opt, const char *arg) {
        add(b, opt);
        add(b, arg);
}

static void add3(struct argv_builder *b, const char *opt, const char *a1, const char *a2) {
        add(b, opt);
        add(b, a1);
        add(b, a2);
}

static void add_fd(struct argv_builder *b, const char *opt, int fd, const char *dest) {
        char num[16];

        snprintf(num, sizeof num, "%d", fd);    /* bwrap takes the fd as a decimal number */
        add(b, opt);
        add(b, num);
        if (dest)
                add(b, dest);
}

/* Absolute, not "/", no empty, "." or ".." component, no trailing slash:
 * a bind destination must mean exactly one place. */
static bool path_is_canonical(const char *p) {
        if (!p || p[0] != '/' || !p[1] || strlen(p) >= PATH_MAX)
                return false;
        for (p++;; p++) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += n;
                if (!*p)
                        return true;
        }
}

/* p (canonical) is dir or beneath it. */
static bool path_is_under(const char *p, const char *dir) {
        size_t n = strlen(dir);
        return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* Same rule as policy_env_name_valid(); repeated here because this module is
 * built and tested on its own, and bwrap would happily set "A=B" or "". */
static bool env_name_valid(const char *name, size_t n) {
        if (n == 0 || n > 255 || (name[0] >= '0' && name[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(name[i] == '_' || (name[i] >= 'A' && name[i] <= 'Z') ||
                      (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')))
                        return false;
        return true;
}

/* RFC 1123 letters, digits, '-' and '.', not starting with '-', ≤ 64. */
static bool hostname_valid(const char *h) {
        size_t n = strlen(h);
        if (n == 0 || n > 64 || h[0] == '-' || h[0] == '.')
                return false;
        return strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") == n;
}

static bool manifest_valid(const struct sandbox_manifest *m) {
        if (!m || !m->bwrap_path || !*m->bwrap_path || !path_is_canonical(m->root_path) || m->root_fd < 0)
                return false;
        if (!m->argv || !m->argv[0] || !m->argv[0][0])
                return false;
        if (m->hostname && !hostname_valid(m->hostname))
                return false;
        if (m->exec_shim && !path_is_canonical(m->exec_shim))
                return false;
        if (m->shim_args && !m->exec_shim)
                return false;           /* arguments for a shim that is not run */
        for (const char *const *h = m->helpers; h && *h; h++)
                if (!path_is_canonical(*h))
                        return false;
        if (path_is_under(m->root_path, SANDBOX_HELPER_DIR))
                return false;           /* the root's bind would hide the helpers */
        for (const char *const *p = m->ro_paths; p && *p; p++)
                if (!path_is_canonical(*p) || path_is_under(*p, "/tmp") || path_is_under(*p, "/proc") ||
                    path_is_under(*p, "/dev"))
                        return false;   /* bound before these mounts, so they would hide it */
        for (const char *const *e = m->envp; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq || !env_name_valid(*e, (size_t) (eq - *e)))
                        return false;
        }
        return true;
}

const char *sandbox_helper_inside(const char *host, char *buf, size_t size) {
        int n;

        if (!path_is_canonical(host) || !buf)
                return NULL;
        if (path_is_under(host, "/usr"))
                n = snprintf(buf, size, "%s", host);
        else
                n = snprintf(buf, size, SANDBOX_HELPER_DIR "/%s", strrchr(host, '/') + 1);
        return n >= 0 && (size_t) n < size ? buf : NULL;
}

static void add_helper(struct argv_builder *b, const char *host) {
        char inside[PATH_MAX];

        if (path_is_under(host, "/usr"))
                return;                 /* the /usr bind shows it */
        if (!sandbox_helper_inside(host, inside, sizeof inside)) {
                b->error = -EINVAL;
                return;
        }
        add3(b, "--ro-bind", host, inside);
}

static void add_filesystem(struct argv_builder *b, const struct sandbox_manifest *m) {
        add3(b, "--ro-bind", "/usr", "/usr");
        for (size_t i = 0; i < ELEMENTSOF(usr_links); i++)
                add3(b, "--symlink", usr_links[i][0], usr_links[i][1]);
        for (size_t i = 0; i < ELEMENTSOF(etc_files); i++)
                add3(b, "--ro-bind-try", etc_files[i], etc_files[i]);
        if (m->share_net)
                for (size_t i = 0; i < ELEMENTSOF(etc_net_files); i++)
                        add3(b, "--ro-bind-try", etc_net_files[i], etc_net_files[i]);
        for (const char *const *p = m->ro_paths; p && *p; p++)
                add3(b, "--ro-bind-try", *p, *p);

        add2(b, "--proc", "/proc");
        add2(b, "--dev", "/dev");
        add2(b, "--tmpfs", "/tmp");
        /* After the tmpfs, which holds the helpers' mount points and, for a
         * root under /tmp, the root's. */
        if (m->exec_shim)
                add_helper(b, m->exec_shim);
        for (const char *const *h = m->helpers; h && *h; h++)
                add_helper(b, *h);
        add_fd(b, "--bind-fd", m->root_fd, m->root_path);
        if (m->tool_calls_fd >= 0) {
                _cleanup_free_ char *dest = NULL;
                if (asprintf(&dest, "%s/tool_calls", m->root_path) < 0) {
                        b->error = -ENOMEM;
                        return;
                }
                add_fd(b, "--ro-bind-fd", m->tool_calls_fd, dest);
        }
}

static void add_environment(struct argv_builder *b, const struct sandbox_manifest *m) {
        add(b, "--clearenv");
        for (const char *const *e = m->envp; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *name = strndup(*e, (size_t) (eq - *e));
                if (!name) {
                        b->error = -ENOMEM;
                        return;
                }
                add3(b, "--setenv", name, eq + 1);
        }
}

static void add_command(struct argv_builder *b, const struct sandbox_manifest *m) {
        add(b, "--");
        if (m->exec_shim) {
                char inside[PATH_MAX];
                if (!sandbox_helper_inside(m->exec_shim, inside, sizeof inside)) {
                        b->error = -EINVAL;
                        return;
                }
                add(b, inside);
                for (const char *const *a = m->shim_args; a && *a; a++)
                        add(b, *a);
                add(b, "--");
        }
        for (const char *const *a = m->argv; *a; a++)
                add(b, *a);
}

int sandbox_argv_build(const struct sandbox_manifest *m, char ***ret_argv) {
        struct argv_builder b = {};

        if (!ret_argv || !manifest_valid(m))
                return -EINVAL;

        add(&b, m->bwrap_path);
        /* --unshare-all only tries the user namespace; --disable-userns needs
         * one for sure, so ask for it explicitly (bwrap fails if it can't). */
        add(&b, "--unshare-all");
        add(&b, "--unshare-user");
        if (m->share_net)
                add(&b, "--share-net");
        add(&b, "--die-with-parent");
        add(&b, "--new-session");       /* no TIOCSTI into the caller's terminal */
        add(&b, "--disable-userns");    /* no nested namespaces to undo the above */
        add2(&b, "--cap-drop", "ALL");
        add2(&b, "--hostname", m->hostname ?: "toolsd");
        add_filesystem(&b, m);
        add2(&b, "--chdir", m->root_path);
        add_environment(&b, m);
        if (m->json_status_fd >= 0)
                add_fd(&b, "--json-status-fd", m->json_status_fd, NULL);
        if (m->seccomp_fd >= 0)
                add_fd(&b, "--seccomp", m->seccomp_fd, NULL);
        add_command(&b, m);

        if (b.error < 0) {
                strv_free(b.v);
                return b.error;
        }
        *ret_argv = b.v;
        return 0;
}
