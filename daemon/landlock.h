/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Landlock layer of the sandbox: the exec shim restricts itself (and so
 * the command it execs) to reading what bwrap made visible and writing only
 * under the artifacts root, /tmp and /dev, whatever the mounts allow. Each
 * right the running kernel's ABI knows is handled; rights a newer ABI adds
 * are dropped on older kernels, never refused (best effort, as the kernel
 * documentation advises). docs/sandbox-layers.md has the why of each rule.
 *
 * Runs in the process to be confined (toolsd-exec, as the peer's uid with
 * no capabilities, inside bwrap or in the unsandboxed fallback) and in
 * Doctor (landlock_abi only). Library code: never logs.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct landlock_spec {
        const char *const *ro_paths;    /* read + execute; NULL-terminated or NULL; missing ones skipped */
        const char *const *rw_paths;    /* every handled right; NULL-terminated or NULL; must exist */
        const char *const *ro_under_rw; /* beneath an rw path, must already be on a read-only mount */
        bool deny_tcp;                  /* ABI >= 4: no TCP bind or connect at all */
};

/* The Landlock ABI version of the running kernel, 0 when it has none
 * (not built, or not in lsm=). */
int landlock_abi(void);

/* Every filesystem right ABI abi knows (0 for abi <= 0). Pure. */
uint64_t landlock_fs_rights(int abi);

/* Sets no_new_privs and restricts the calling process and its future
 * children for good. Landlock cannot take a right back beneath a path that
 * has it, so ro_under_rw entries are not narrowed here: the call checks
 * that the mount already makes them read-only (bwrap's --ro-bind of
 * tool_calls/) and fails with -EPERM otherwise.
 * Returns 0 and the ABI used in *ret_abi (may be NULL), -EOPNOTSUPP when the
 * kernel has no Landlock, -EINVAL for a bad spec, or another negative errno
 * (-ENOENT for a missing rw path). On failure nothing is restricted. */
int landlock_apply(const struct landlock_spec *s, int *ret_abi);
