/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp layer of the sandbox: a deny list over a default-allow filter,
 * built with libseccomp. Each denied call fails with EPERM (clone3 with
 * ENOSYS, so libc falls back to clone(), whose flags the filter can see), so
 * a tool gets an error it can report instead of a SIGSYS. A foreign
 * architecture (i386 via int 0x80, x32) is killed: this filter cannot vouch
 * for its syscall numbers. docs/sandbox-layers.md lists every rule and why.
 *
 * Runs in the broker (build, as the peer's uid with no capabilities; bwrap
 * loads the program after its own setup) or in the process to be confined
 * (load: tests and the unsandboxed fallback). Library code: never logs.
 *
 * Not named seccomp.h: daemon/ is on the include path, and that name would
 * shadow libseccomp's <seccomp.h>.
 */
#pragma once

#include <stdbool.h>

struct seccomp_options {
        bool network;   /* allow AF_INET/AF_INET6 sockets (skill has network) */
};

/* Builds the filter and exports it as a classic BPF program (an array of
 * struct sock_filter, what bwrap's --seccomp FD reads to EOF) into a sealed
 * memfd, MFD_CLOEXEC, offset 0. The caller clears CLOEXEC in the child that
 * execs bwrap. Returns 0, or a negative errno (-EINVAL for a NULL argument). */
int seccomp_filter_build(const struct seccomp_options *o, int *ret_memfd);

/* Loads the same filter into the calling thread (sets no_new_privs first).
 * Returns 0 or a negative errno. Irreversible. */
int seccomp_filter_load(const struct seccomp_options *o);

/* One line for Doctor and the docs: what the filter denies and how. */
const char *seccomp_describe(void);

/* Loads the broker's own filter into the calling process (system mode):
 * EPERM for kexec, modules, bpf, perf, ptrace and process_vm_*, keyrings,
 * io_uring, userfaultfd and host administration; everything bwrap needs
 * to build a sandbox stays allowed. Needs no_new_privs (the broker has it). */
int seccomp_broker_load(void);
