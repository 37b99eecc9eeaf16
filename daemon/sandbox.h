/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox of one call: a manifest (plain data computed from the session
 * and the call) and a pure function that turns it into a bubblewrap argv.
 *
 * Runs in the broker. sandbox_argv_build() does no I/O; the descriptors it
 * names must be inherited by bwrap (the supervisor clears their CLOEXEC in
 * the child only).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct sandbox_manifest {
        const char *bwrap_path;         /* e.g. "/usr/bin/bwrap" */
        const char *root_path;          /* artifacts root: where it appears inside */
        int root_fd;                    /* the root, bound read-write with --bind-fd */
        int tool_calls_fd;              /* <root>/tool_calls as O_PATH, bound read-only over it; -1: none */
        bool share_net;                 /* --share-net (skill needs_network and policy allows) */
        const char *const *ro_paths;    /* extra read-only binds (toolchain prefixes), NULL-terminated or NULL */
        const char *const *envp;        /* the built environment, "NAME=value", NULL-terminated */
        const char *const *argv;        /* the command, NULL-terminated, argv[0] a name or path */
        int json_status_fd;             /* --json-status-fd; -1: none */
        int seccomp_fd;                 /* --seccomp; -1: none */
        const char *exec_shim;          /* host path of toolsd-exec, run first (see sandbox_helper_inside); NULL: none */
        const char *const *shim_args;   /* arguments for the shim before "--", NULL-terminated or NULL */
        const char *hostname;           /* --hostname; NULL: "toolsd" */
        const char *const *helpers;     /* host paths of our other programs run inside (toolsd-http),
                                         * shown like the shim; NULL-terminated or NULL */
};

/* Where our own programs appear inside the sandbox. An installed one is
 * under /usr, which the sandbox shows read-only: it runs at its own path. One
 * anywhere else (a build tree) is bound read-only at SANDBOX_HELPER_DIR/<its
 * name>, so the sandbox does not show the host's directories above it. */
#define SANDBOX_HELPER_DIR "/tmp/.toolsd"

/* The path inside the sandbox of the helper at host path `host` (canonical,
 * absolute), written to buf; NULL when it does not fit or host is not a
 * canonical absolute path. Pure. */
const char *sandbox_helper_inside(const char *host, char *buf, size_t size);

/* Builds the bwrap argv, in this order: namespaces (--unshare-all
 * --unshare-user, --share-net only when share_net), --die-with-parent,
 * --new-session, --disable-userns, --cap-drop ALL, --hostname, a minimal
 * read-only filesystem (/usr, the merged-usr links /bin /sbin /lib /lib64
 * as symlinks, the /etc files programs need via --ro-bind-try, resolv.conf
 * only with network, the extra ro_paths), --proc /proc, --dev /dev,
 * --tmpfs /tmp, the shim and helpers outside /usr read-only at
 * sandbox_helper_inside(), the root with --bind-fd at root_path, tool_calls
 * read-only over it, --chdir root_path, --clearenv and one --setenv per envp entry,
 * --json-status-fd, --seccomp, "--", then the shim (if any) and the command.
 * Returns a NULL-terminated malloc'd vector, -EINVAL for a manifest that
 * cannot be expressed (relative root_path, an env entry without '=', an
 * empty argv, a ro_path that is not absolute or contains "..", ...). */
int sandbox_argv_build(const struct sandbox_manifest *m, char ***ret_argv);
