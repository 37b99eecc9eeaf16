/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp deny list of the sandbox (see seccomp_filter.h for the contract and
 * docs/sandbox-layers.md for each rule's reason).
 *
 * Runs in the broker as the peer's uid with no capabilities (building and
 * exporting needs no privilege), or in the process to be confined (load).
 *
 * Every comparison on an argument the kernel reads as a 32-bit int (ioctl
 * cmd, socket domain and protocol, personality) looks at the low 32 bits
 * only, with SCMP_CMP_MASKED_EQ: a plain 64-bit compare is what let
 * TIOCSTI | 1ULL << 32 through Flatpak's filter (CVE-2019-10063). libseccomp
 * allows one comparison per argument per rule and rules of one syscall are
 * OR-ed, so "not in this set" is spelt as a union of masked rules.
 */
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>

#include "macro.h"
#include "seccomp_filter.h"

#define DENY SCMP_ACT_ERRNO(EPERM)
#define LOW32 UINT64_C(0xffffffff)

/* Domains below this are listed one by one; any value with a bit at or
 * above it set is denied bit by bit. Above AF_MAX (46) with room to grow. */
#define DOMAIN_ENUM_LIMIT 64
#define DOMAIN_ENUM_BITS 6

static inline void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}
#define _cleanup_seccomp_ _cleanup_(seccomp_releasep)

/* Denied outright, whatever the arguments. Names the running arch lacks
 * (iopl on arm64) are skipped. */
static const char *const deny_always[] = {
        /* kernel keyrings: shared with the host user, not namespaced */
        "keyctl", "add_key", "request_key",
        /* io_uring: a second syscall interface seccomp cannot see into */
        "io_uring_setup", "io_uring_enter", "io_uring_register",
        /* reading or steering other processes */
        "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
        /* large kernel attack surface no tool needs */
        "perf_event_open", "bpf", "userfaultfd",
        /* namespaces and mounts: bwrap has set them up already */
        "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
        "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
        "mount_setattr",
        /* kernel administration: needs capabilities we never have; denying
         * it costs nothing and survives a capability leak */
        "kexec_load", "kexec_file_load", "init_module", "finit_module",
        "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
        "open_by_handle_at", "syslog", "iopl", "ioperm",
};

static int add_deny_always(scmp_filter_ctx ctx) {
        for (size_t i = 0; i < ELEMENTSOF(deny_always); i++) {
                int nr = seccomp_syscall_resolve_name(deny_always[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue;
                int r = seccomp_rule_add(ctx, DENY, nr, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* TIOCSTI pushes bytes into the terminal's input queue, TIOCLINUX can do the
 * same on a virtual console through selection paste: either lets a tool type
 * commands into the shell that started toolsd (CVE-2017-5226). --new-session
 * already detaches the controlling terminal; this covers an inherited tty fd. */
static int add_ioctl_rules(scmp_filter_ctx ctx) {
        static const uint64_t cmds[] = { TIOCSTI, TIOCLINUX };

        for (size_t i = 0; i < ELEMENTSOF(cmds); i++) {
                int r = seccomp_rule_add(ctx, DENY, SCMP_SYS(ioctl), 1,
                                         SCMP_A1(SCMP_CMP_MASKED_EQ, LOW32, cmds[i]));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Denies every value of a 32-bit argument whose low 32 bits have a bit at
 * position >= from set, i.e. every value >= 1 << from (one rule per bit).
 * extra: an optional second comparison on another argument, AND-ed. */
static int deny_high_bits(scmp_filter_ctx ctx, int nr, unsigned arg, unsigned from,
                          const struct scmp_arg_cmp *extra) {
        for (unsigned b = from; b < 32; b++) {
                struct scmp_arg_cmp c[2] = {
                        { .arg = arg, .op = SCMP_CMP_MASKED_EQ,
                          .datum_a = UINT64_C(1) << b, .datum_b = UINT64_C(1) << b },
                };
                unsigned n = 1;
                if (extra)
                        c[n++] = *extra;
                int r = seccomp_rule_add_array(ctx, DENY, nr, n, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool domain_allowed(unsigned domain, bool network, bool pair) {
        switch (domain) {
        case AF_UNIX:
                return true;
        case AF_INET:
        case AF_INET6:
                return network && !pair;
        case AF_NETLINK:
                /* NETLINK_ROUTE only (the protocol rule below): glibc's
                 * getaddrinfo(AI_ADDRCONFIG), ip, ifconfig read it; without
                 * CAP_NET_ADMIN it cannot change anything. sock_diag, audit,
                 * uevent and the rest stay shut. */
                return !pair;
        default:
                return false;
        }
}

/* socket() and socketpair(): only the families a tool needs, by the low 32
 * bits of the domain (the kernel reads an int). Everything else, AF_VSOCK
 * (host services), AF_PACKET, AF_BLUETOOTH, AF_ALG and families not yet
 * invented included, gets EPERM. */
static int add_socket_rules(scmp_filter_ctx ctx, int nr, bool network, bool pair) {
        int r;

        for (unsigned d = 0; d < DOMAIN_ENUM_LIMIT; d++) {
                if (domain_allowed(d, network, pair))
                        continue;
                r = seccomp_rule_add(ctx, DENY, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, d));
                if (r < 0)
                        return r;
        }
        r = deny_high_bits(ctx, nr, 0, DOMAIN_ENUM_BITS, NULL);
        if (r < 0 || pair)
                return r;

        /* AF_NETLINK with any protocol but NETLINK_ROUTE (0). */
        const struct scmp_arg_cmp netlink = SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, AF_NETLINK);
        return deny_high_bits(ctx, nr, 2, 0, &netlink);
}

/* New namespaces would undo what bwrap set up (and are the entry point of
 * most user-namespace kernel bugs). clone3() passes its flags in memory the
 * filter cannot read, so it gets ENOSYS: glibc >= 2.34 then falls back to
 * clone(), whose flags are checked here (what Flatpak and Docker do).
 * CLONE_NEWTIME exists only for clone3/unshare (in clone() its bit is part
 * of the exit signal), and both are denied whole. */
static int add_clone_rules(scmp_filter_ctx ctx) {
        static const uint64_t flags[] = {
                CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
        };
#if defined(__s390__) || defined(__s390x__)
        const unsigned arg = 1;         /* clone(stack, flags, ...) there */
#else
        const unsigned arg = 0;
#endif
        int r;

        for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
                struct scmp_arg_cmp c = {
                        .arg = arg, .op = SCMP_CMP_MASKED_EQ,
                        .datum_a = flags[i], .datum_b = flags[i],
                };
                r = seccomp_rule_add_array(ctx, DENY, SCMP_SYS(clone), 1, &c);
                if (r < 0)
                        return r;
        }
        r = seccomp_syscall_resolve_name("clone3");
        if (r == __NR_SCMP_ERROR)
                return 0;
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), r, 0);
}

/* personality(): only PER_LINUX (0) and the query 0xffffffff. Other values
 * turn off ASLR (ADDR_NO_RANDOMIZE), make data executable
 * (READ_IMPLIES_EXEC) or change the syscall ABI. The kernel reads an
 * unsigned int; "low 32 bits not 0 and not all ones" is: bit 31 clear and
 * some other bit set, or bit 31 set and some other bit clear. */
static int add_personality_rules(scmp_filter_ctx ctx) {
        const uint64_t b31 = UINT64_C(1) << 31;

        for (unsigned b = 0; b < 31; b++) {
                const uint64_t bit = UINT64_C(1) << b;
                int r = seccomp_rule_add(ctx, DENY, SCMP_SYS(personality), 1,
                                         SCMP_A0(SCMP_CMP_MASKED_EQ, b31 | bit, bit));
                if (r < 0)
                        return r;
                r = seccomp_rule_add(ctx, DENY, SCMP_SYS(personality), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, b31 | bit, b31));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int filter_new(const struct seccomp_options *o, scmp_filter_ctx *ret) {
        _cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
        int r;

        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        /* Native arch only (seccomp_init's default); a syscall from another
         * ABI is killed, not failed: EPERM from every call, exit included,
         * would leave a 32-bit program spinning. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)      /* kernel < 4.14 (or valgrind): kill the thread */
                r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_THREAD);
        if (r < 0)
                return r;

        r = add_deny_always(ctx);
        if (r >= 0)
                r = add_ioctl_rules(ctx);
        if (r >= 0)
                r = add_socket_rules(ctx, SCMP_SYS(socket), o->network, false);
        if (r >= 0)
                r = add_socket_rules(ctx, SCMP_SYS(socketpair), o->network, true);
        if (r >= 0)
                r = add_clone_rules(ctx);
        if (r >= 0)
                r = add_personality_rules(ctx);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(ctx);
        return 0;
}

int seccomp_filter_build(const struct seccomp_options *o, int *ret_memfd) {
        _cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (!o || !ret_memfd)
                return -EINVAL;
        r = filter_new(o, &ctx);
        if (r < 0)
                return r;

        fd = memfd_create("toolsd-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* bwrap refuses a program that is not whole sock_filter entries. */
        if (st.st_size <= 0 || st.st_size % 8 != 0)
                return -EIO;
        /* Nobody, us included, changes the program after this. */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
                return -errno;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;

        *ret_memfd = TAKE_FD(fd);
        return 0;
}

int seccomp_filter_load(const struct seccomp_options *o) {
        _cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
        int r;

        if (!o)
                return -EINVAL;
        r = filter_new(o, &ctx);
        if (r < 0)
                return r;
        /* libseccomp sets no_new_privs itself (SCMP_FLTATR_CTL_NNP). */
        return seccomp_load(ctx);
}

const char *seccomp_describe(void) {
        return "deny-list over default allow, native arch only (other ABIs killed); EPERM for: "
               "keyctl add_key request_key, io_uring_*, ptrace process_vm_* pidfd_getfd, "
               "perf_event_open bpf userfaultfd, mount umount2 pivot_root chroot unshare setns "
               "and the new mount API, kexec_* *_module reboot swap* acct quotactl "
               "open_by_handle_at syslog iopl ioperm, ioctl TIOCSTI/TIOCLINUX (low 32 bits), "
               "clone with CLONE_NEW*, personality other than PER_LINUX/query, "
               "socket families other than AF_UNIX, AF_NETLINK/NETLINK_ROUTE and "
               "(with network) AF_INET/AF_INET6; ENOSYS for clone3";
}

/* The broker's own filter (system mode). It is inherited by bwrap, which
 * still has to create namespaces, mount and pivot_root for each call, so it
 * denies only what neither the broker nor bwrap's set-up ever needs: the
 * kernel's module, kexec and BPF surfaces, other processes' memory,
 * keyrings, io_uring, userfaultfd, perf and host administration (but not
 * sethostname: bwrap --hostname names its own UTS namespace). The
 * sandbox's own, stricter filter is loaded by bwrap on top of it. */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define SANITIZER_BUILD 1
#else
#define SANITIZER_BUILD 0
#endif

int seccomp_broker_load(void) {
        static const char *const deny[] = {
                "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
                "bpf", "perf_event_open", "userfaultfd", "ptrace", "process_vm_readv",
                "process_vm_writev", "keyctl", "add_key", "request_key", "io_uring_setup",
                "io_uring_enter", "io_uring_register", "acct", "swapon", "swapoff", "reboot",
                "syslog", "quotactl", "open_by_handle_at", "lookup_dcookie", "settimeofday",
                "clock_settime", "clock_adjtime", "adjtimex",
                "iopl", "ioperm", "nfsservctl", "vhangup",
        };
        _cleanup_seccomp_ scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r;

        if (!ctx)
                return -ENOMEM;
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_THREAD);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(deny); i++) {
                int nr = seccomp_syscall_resolve_name(deny[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* not on this architecture */
                /* LeakSanitizer stops the world with ptrace at exit: a
                 * sanitizer build (the tests' ASan pass, never a release)
                 * keeps it. */
                if (SANITIZER_BUILD && strcmp(deny[i], "ptrace") == 0)
                        continue;
                r = seccomp_rule_add(ctx, DENY, nr, 0);
                if (r < 0)
                        return r;
        }
        return seccomp_load(ctx);
}
