/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the seccomp layer (daemon/seccomp.c): the exported program's
 * shape, then the filter loaded in a forked child against a table of probes
 * (each denied family fails with EPERM, clone3 with ENOSYS, allowed calls
 * still work, a foreign ABI is killed), then the same program handed to the
 * real bwrap with --seccomp and probed from python3 inside.
 *
 * Probes use arguments the kernel would reject with another errno (or accept
 * harmlessly), so EPERM can only come from the filter; the unfiltered
 * baseline is checked too where no capability check could answer EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <pthread.h>
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
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "seccomp_filter.h"

#define BWRAP "/usr/bin/bwrap"
#define PYTHON "/usr/bin/python3"

static int ret_errno(long r) {
        return r < 0 ? -errno : 0;
}

/* A raw clone that might succeed (no filter): the new child leaves at once. */
static int reap_clone(long r) {
        if (r == 0)
                _exit(0);
        if (r < 0)
                return -errno;
        (void) waitpid((pid_t) r, NULL, __WALL);
        return 0;
}

static int p_keyctl(void) { return ret_errno(syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0)); }
static int p_add_key(void) { return ret_errno(syscall(SYS_add_key, NULL, NULL, NULL, 0, 0)); }
static int p_request_key(void) { return ret_errno(syscall(SYS_request_key, NULL, NULL, NULL, 0)); }
static int p_io_uring(void) { return ret_errno(syscall(SYS_io_uring_setup, 0, NULL)); }
static int p_perf(void) { return ret_errno(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0)); }
static int p_bpf(void) { return ret_errno(syscall(SYS_bpf, -1, NULL, 0)); }
static int p_userfaultfd(void) { return ret_errno(syscall(SYS_userfaultfd, ~0)); }
static int p_kexec(void) { return ret_errno(syscall(SYS_kexec_load, 0, 0, NULL, ~0UL)); }
static int p_mount(void) { return ret_errno(syscall(SYS_mount, "none", "/nonexistent-toolsd", "tmpfs", 0, NULL)); }
static int p_umount(void) { return ret_errno(syscall(SYS_umount2, "/nonexistent-toolsd", 0)); }
static int p_pivot_root(void) { return ret_errno(syscall(SYS_pivot_root, "/nonexistent-toolsd", "/nonexistent-toolsd")); }
static int p_unshare(void) { return ret_errno(syscall(SYS_unshare, 0)); }
static int p_setns(void) { return ret_errno(syscall(SYS_setns, -1, 0)); }
static int p_open_tree(void) { return ret_errno(syscall(SYS_open_tree, -1, "", 0)); }
static int p_ptrace(void) { return ret_errno(syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0)); }
static int p_vm_readv(void) { return ret_errno(syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, 0)); }
static int p_pers_bsd(void) { return ret_errno(syscall(SYS_personality, 0x0006 /* PER_BSD */)); }
static int p_pers_norandom(void) { return ret_errno(syscall(SYS_personality, ADDR_NO_RANDOMIZE)); }
static int p_pers_almost_query(void) { return ret_errno(syscall(SYS_personality, 0xfffffffeUL)); }
static int p_pers_query(void) { return ret_errno(syscall(SYS_personality, 0xffffffffUL)); }
static int p_pers_query_high(void) { return ret_errno(syscall(SYS_personality, ~0UL)); }
static int p_pers_linux(void) { return ret_errno(syscall(SYS_personality, PER_LINUX)); }
static int p_clone_newuser(void) { return reap_clone(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)); }
static int p_clone_newnet(void) { return reap_clone(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)); }
static int p_clone3(void) {
        uint64_t args[11] = { 0 };      /* struct clone_args, exit_signal at [4] */
        args[4] = SIGCHLD;
        return reap_clone(syscall(SYS_clone3, args, sizeof args));
}
static int p_fork(void) { return reap_clone(fork()); }

static int sock(long domain, int type, int proto) {
        long fd = syscall(SYS_socket, domain, type | SOCK_CLOEXEC, proto);
        if (fd < 0)
                return -errno;
        close((int) fd);
        return 0;
}
static int p_af_unix(void) { return sock(AF_UNIX, SOCK_STREAM, 0); }
static int p_af_inet(void) { return sock(AF_INET, SOCK_STREAM, 0); }
static int p_af_inet6(void) { return sock(AF_INET6, SOCK_DGRAM, 0); }
static int p_af_vsock(void) { return sock(40 /* AF_VSOCK */, SOCK_STREAM, 0); }
static int p_af_vsock_high(void) { return sock((long) (UINT64_C(1) << 32 | 40), SOCK_STREAM, 0); }
static int p_af_unix_high(void) { return sock((long) (UINT64_C(1) << 32 | AF_UNIX), SOCK_STREAM, 0); }
static int p_af_packet(void) { return sock(AF_PACKET, SOCK_RAW, 0); }
static int p_af_alg(void) { return sock(38 /* AF_ALG */, SOCK_SEQPACKET, 0); }
static int p_af_huge(void) { return sock(1000, SOCK_STREAM, 0); }
static int p_af_negative(void) { return sock(-1, SOCK_STREAM, 0); }
static int p_nl_route(void) { return sock(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE); }
static int p_nl_diag(void) { return sock(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG); }
static int p_nl_uevent(void) { return sock(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT); }
static int p_nl_audit(void) { return sock(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT); }
static int pair(int domain) {
        int sv[2];
        if (socketpair(domain, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        close(sv[0]);
        close(sv[1]);
        return 0;
}
static int p_pair_unix(void) { return pair(AF_UNIX); }
static int p_pair_inet(void) { return pair(AF_INET); }
static int p_pair_netlink(void) { return pair(AF_NETLINK); }

/* The pty's slave becomes our controlling terminal (setsid first): the one
 * case where the kernel itself lets TIOCSTI through to an unprivileged
 * caller, i.e. the case the filter must close. */
static int pty_slave = -1;

static int open_pty(void) {
        _cleanup_close_ int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        struct termios t;

        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
                return -errno;
        (void) setsid();
        pty_slave = open(ptsname(master), O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (pty_slave < 0 || tcgetattr(pty_slave, &t) < 0)
                return -errno;
        cfmakeraw(&t);
        if (tcsetattr(pty_slave, TCSANOW, &t) < 0)
                return -errno;
        TAKE_FD(master);        /* kept open for the child's life */
        return 0;
}

/* -EEXIST: the ioctl "failed" but a byte still reached the input queue. */
static int tiocsti(unsigned long cmd) {
        char c = 'x', buf;
        if (syscall(SYS_ioctl, pty_slave, cmd, &c) == 0)
                return 0;
        int e = -errno;
        if (read(pty_slave, &buf, 1) == 1)
                return -EEXIST;
        return e;
}
static int p_tiocsti(void) { return tiocsti(TIOCSTI); }
static int p_tiocsti_high(void) { return tiocsti((unsigned long) (UINT64_C(1) << 32 | TIOCSTI)); }
static int p_tiocsti_all_high(void) { return tiocsti((unsigned long) (UINT64_C(0xffffffff) << 32 | TIOCSTI)); }
static int p_tioclinux(void) {
        char sub = 0;
        return ret_errno(syscall(SYS_ioctl, pty_slave, TIOCLINUX, &sub));
}
static int p_tiocgwinsz(void) {
        struct winsize ws;
        return ret_errno(ioctl(pty_slave, TIOCGWINSZ, &ws));
}

static int p_files(void) {
        _cleanup_close_ int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        char buf[4];
        if (fd < 0)
                return -errno;
        if (write(fd, "abc", 3) != 3 || pread(fd, buf, 3, 0) != 3)
                return -EIO;
        return memcmp(buf, "abc", 3) == 0 ? 0 : -EIO;
}
static int p_exec_true(void) {
        int status;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                execl("/usr/bin/true", "true", (char *) NULL);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}
static void *thread_main(void *arg) { return arg; }
static int p_thread(void) {
        pthread_t t;
        int r = pthread_create(&t, NULL, thread_main, NULL);
        if (r != 0)
                return -r;
        return -pthread_join(t, NULL);
}

#define ALLOW 0
#define ANY_BUT_EPERM 1         /* result depends on the host; only not the filter's */

struct probe {
        const char *name;
        int (*fn)(void);
        int offline;            /* expected with network=false */
        int online;             /* expected with network=true */
        bool baseline;          /* unfiltered it cannot be EPERM: checked */
};

static const struct probe probes[] = {
        { "keyctl", p_keyctl, -EPERM, -EPERM, true },
        { "add_key", p_add_key, -EPERM, -EPERM, true },
        { "request_key", p_request_key, -EPERM, -EPERM, true },
        { "io_uring_setup", p_io_uring, -EPERM, -EPERM, false },
        { "perf_event_open", p_perf, -EPERM, -EPERM, false },
        { "bpf", p_bpf, -EPERM, -EPERM, false },
        { "userfaultfd", p_userfaultfd, -EPERM, -EPERM, false },
        { "kexec_load", p_kexec, -EPERM, -EPERM, false },
        { "mount", p_mount, -EPERM, -EPERM, false },
        { "umount2", p_umount, -EPERM, -EPERM, false },
        { "pivot_root", p_pivot_root, -EPERM, -EPERM, false },
        { "unshare", p_unshare, -EPERM, -EPERM, true },
        { "setns", p_setns, -EPERM, -EPERM, true },
        { "open_tree", p_open_tree, -EPERM, -EPERM, true },
        { "process_vm_readv", p_vm_readv, -EPERM, -EPERM, true },
        { "personality(PER_BSD)", p_pers_bsd, -EPERM, -EPERM, true },
        { "personality(ADDR_NO_RANDOMIZE)", p_pers_norandom, -EPERM, -EPERM, true },
        { "personality(0xfffffffe)", p_pers_almost_query, -EPERM, -EPERM, false },
        { "personality(query)", p_pers_query, ALLOW, ALLOW, true },
        { "personality(~0UL)", p_pers_query_high, ALLOW, ALLOW, true },
        { "personality(PER_LINUX)", p_pers_linux, ALLOW, ALLOW, true },
        { "clone(CLONE_NEWUSER)", p_clone_newuser, -EPERM, -EPERM, false },
        { "clone(CLONE_NEWNET)", p_clone_newnet, -EPERM, -EPERM, false },
        { "clone3", p_clone3, -ENOSYS, -ENOSYS, true },
        { "fork", p_fork, ALLOW, ALLOW, true },
        { "pthread_create", p_thread, ALLOW, ALLOW, true },
        { "exec /usr/bin/true", p_exec_true, ALLOW, ALLOW, true },
        { "open/write/read", p_files, ALLOW, ALLOW, true },
        { "socket(AF_UNIX)", p_af_unix, ALLOW, ALLOW, true },
        { "socket(AF_UNIX | 1 << 32)", p_af_unix_high, ALLOW, ALLOW, true },
        { "socket(AF_INET)", p_af_inet, -EPERM, ALLOW, true },
        { "socket(AF_INET6)", p_af_inet6, -EPERM, ANY_BUT_EPERM, true },
        { "socket(AF_VSOCK)", p_af_vsock, -EPERM, -EPERM, true },
        { "socket(AF_VSOCK | 1 << 32)", p_af_vsock_high, -EPERM, -EPERM, true },
        { "socket(AF_PACKET)", p_af_packet, -EPERM, -EPERM, false },
        { "socket(AF_ALG)", p_af_alg, -EPERM, -EPERM, true },
        { "socket(1000)", p_af_huge, -EPERM, -EPERM, true },
        { "socket(-1)", p_af_negative, -EPERM, -EPERM, true },
        { "socket(NETLINK_ROUTE)", p_nl_route, ALLOW, ALLOW, true },
        { "socket(NETLINK_SOCK_DIAG)", p_nl_diag, -EPERM, -EPERM, true },
        { "socket(NETLINK_KOBJECT_UEVENT)", p_nl_uevent, -EPERM, -EPERM, true },
        { "socket(NETLINK_AUDIT)", p_nl_audit, -EPERM, -EPERM, true },
        { "socketpair(AF_UNIX)", p_pair_unix, ALLOW, ALLOW, true },
        { "socketpair(AF_INET)", p_pair_inet, -EPERM, -EPERM, true },
        { "socketpair(AF_NETLINK)", p_pair_netlink, -EPERM, -EPERM, true },
        { "ioctl(TIOCGWINSZ)", p_tiocgwinsz, ALLOW, ALLOW, true },
        { "ioctl(TIOCSTI)", p_tiocsti, -EPERM, -EPERM, false },
        { "ioctl(TIOCSTI | 1 << 32)", p_tiocsti_high, -EPERM, -EPERM, false },
        { "ioctl(TIOCSTI | 0xffffffff << 32)", p_tiocsti_all_high, -EPERM, -EPERM, false },
        { "ioctl(TIOCLINUX)", p_tioclinux, -EPERM, -EPERM, true },
        { "ptrace(PTRACE_TRACEME)", p_ptrace, -EPERM, -EPERM, false },
};

/* Runs every probe in a forked child (with the filter when o is set) and
 * collects the results through a pipe. */
static void run_probes(const struct seccomp_options *o, int results[]) {
        int p[2], status;
        size_t n = ELEMENTSOF(probes) * sizeof(int);

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int res[ELEMENTSOF(probes)];
                close(p[0]);
                if (open_pty() < 0)
                        _exit(2);
                if (o && seccomp_filter_load(o) < 0)
                        _exit(3);
                for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                        res[i] = (o || probes[i].baseline) ? probes[i].fn() : 0;
                _exit(write(p[1], res, n) == (ssize_t) n ? 0 : 4);
        }
        close(p[1]);
        assert_int_equal(read(p[0], results, n), (ssize_t) n);
        close(p[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void check_probes(bool network) {
        const struct seccomp_options o = { .network = network };
        int res[ELEMENTSOF(probes)];
        int failed = 0;

        run_probes(&o, res);
        for (size_t i = 0; i < ELEMENTSOF(probes); i++) {
                int want = network ? probes[i].online : probes[i].offline;
                bool ok = want == ANY_BUT_EPERM ? res[i] != -EPERM : res[i] == want;
                if (!ok) {
                        print_error("%s (network=%d): got %s, want %s\n", probes[i].name, network,
                                    strerror(-res[i]), want == ANY_BUT_EPERM ? "not EPERM" : strerror(-want));
                        failed++;
                }
        }
        assert_int_equal(failed, 0);
}

static void test_probes_offline(void **state) {
        check_probes(false);
}

static void test_probes_online(void **state) {
        check_probes(true);
}

/* Without the filter the same probes must not answer EPERM, or the test
 * above would pass for the wrong reason. */
static void test_probes_baseline(void **state) {
        int res[ELEMENTSOF(probes)];
        int failed = 0;

        run_probes(NULL, res);
        for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                if (probes[i].baseline && res[i] == -EPERM) {
                        print_error("%s: EPERM without the filter\n", probes[i].name);
                        failed++;
                }
        assert_int_equal(failed, 0);
}

static void test_build_shape(void **state) {
        const struct seccomp_options off = { .network = false }, on = { .network = true };
        _cleanup_close_ int a = -1, b = -1;
        struct stat sa, sb;

        assert_int_equal(seccomp_filter_build(&off, &a), 0);
        assert_int_equal(seccomp_filter_build(&on, &b), 0);
        assert_int_equal(fstat(a, &sa), 0);
        assert_int_equal(fstat(b, &sb), 0);
        /* whole struct sock_filter entries, and within BPF_MAXINSNS */
        assert_true(sa.st_size > 0 && sa.st_size % 8 == 0 && sa.st_size / 8 <= 4096);
        assert_true(sb.st_size > 0 && sb.st_size % 8 == 0 && sb.st_size / 8 <= 4096);
        assert_true(sa.st_size != sb.st_size);  /* network changes two domain rules */
        assert_int_equal(lseek(a, 0, SEEK_CUR), 0);
        assert_int_equal(fcntl(a, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        assert_int_equal(fcntl(a, F_GET_SEALS),
                         F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
        assert_int_equal(write(a, "x", 1), -1);
        assert_int_equal(errno, EPERM);
}

static void test_refusals(void **state) {
        const struct seccomp_options o = { 0 };
        int fd = -7;

        assert_int_equal(seccomp_filter_build(NULL, &fd), -EINVAL);
        assert_int_equal(seccomp_filter_build(&o, NULL), -EINVAL);
        assert_int_equal(fd, -7);               /* untouched on failure */
        assert_int_equal(seccomp_filter_load(NULL), -EINVAL);
        assert_non_null(strstr(seccomp_describe(), "TIOCSTI"));
}

/* A syscall through another ABI (x32 here) is killed, not failed: the
 * filter's numbers are the native ones. */
static void test_foreign_abi_killed(void **state) {
#if defined(__x86_64__)
        const struct seccomp_options o = { 0 };
        int status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                if (seccomp_filter_load(&o) < 0)
                        _exit(3);
                (void) syscall(0x40000000L | 39 /* x32 getpid */);
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSYS);
#else
        skip();
#endif
}

/* The program as bwrap loads it (--seccomp 3, after its own setup): python3
 * inside the sandbox prints "name errno" per probe; 0 is success. */
static const char bwrap_script[] =
        "import ctypes, os, socket, subprocess, threading, fcntl, termios, tty\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def sc(nr, *a):\n"
        "    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])\n"
        "    if r == 0 and nr == %d: os._exit(0)\n"
        "    return 0 if r >= 0 else ctypes.get_errno()\n"
        "def sock(*a):\n"
        "    try: socket.socket(*a).close(); return 0\n"
        "    except OSError as e: return e.errno\n"
        "out = []\n"
        "out.append(('keyctl', sc(%d, 0, -3, 0)))\n"
        "out.append(('mount', sc(%d, 0, 0, 0, 0, 0)))\n"
        "out.append(('unshare', sc(%d, 0)))\n"
        "out.append(('setns', sc(%d, -1, 0)))\n"
        "out.append(('personality', sc(%d, 6)))\n"
        "out.append(('io_uring_setup', sc(%d, 0, 0)))\n"
        "out.append(('bpf', sc(%d, -1, 0, 0)))\n"
        "out.append(('ptrace', sc(%d, 0, 0, 0, 0)))\n"
        "out.append(('clone_newuser', sc(%d, 0x10000000 | 17, 0, 0, 0, 0)))\n"
        "out.append(('af_inet', sock(socket.AF_INET, socket.SOCK_STREAM)))\n"
        "out.append(('af_vsock', sock(40, socket.SOCK_STREAM)))\n"
        "out.append(('nl_diag', sock(socket.AF_NETLINK, socket.SOCK_RAW, 4)))\n"
        "out.append(('af_unix', sock(socket.AF_UNIX, socket.SOCK_STREAM)))\n"
        "try: os.setsid()\n"
        "except OSError: pass\n"
        "m, s = os.openpty()\n"
        "fcntl.ioctl(s, termios.TIOCSCTTY, 0)\n"
        "tty.setraw(s)\n"
        "os.set_blocking(s, False)\n"
        "try: fcntl.ioctl(s, termios.TIOCSTI, b'x'); r = 0\n"
        "except OSError as e: r = e.errno\n"
        "out.append(('tiocsti', r))\n"
        "try: os.read(s, 1); r = 1\n"
        "except BlockingIOError: r = 0\n"
        "out.append(('tiocsti_pushed', r))\n"
        "out.append(('exec_true', subprocess.run(['/usr/bin/true']).returncode))\n"
        "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        "out.append(('thread', 0))\n"
        "print(''.join('%%s %%d\\n' %% x for x in out), end='')\n";

static const char bwrap_expected[] =
        "keyctl 1\nmount 1\nunshare 1\nsetns 1\npersonality 1\nio_uring_setup 1\nbpf 1\n"
        "ptrace 1\nclone_newuser 1\naf_inet 1\naf_vsock 1\nnl_diag 1\naf_unix 0\n"
        "tiocsti 1\ntiocsti_pushed 0\nexec_true 0\nthread 0\n";

static int run_bwrap(int seccomp_fd, const char *script, char *out, size_t size) {
        const char *argv[] = {
                BWRAP, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
                "--disable-userns", "--cap-drop", "ALL",
                "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
                "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                "--seccomp", "3", "--", PYTHON, "-c", script, NULL,
        };
        int p[2], status;
        ssize_t n;
        size_t len = 0;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                /* dup2 onto itself would leave CLOEXEC set */
                if (seccomp_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(seccomp_fd, 3) < 0)
                        _exit(126);
                if (dup2(p[1], 1) < 0)
                        _exit(126);
                execv(BWRAP, (char **) argv);
                _exit(127);
        }
        close(p[1]);
        while (len + 1 < size && (n = read(p[0], out + len, size - 1 - len)) > 0)
                len += (size_t) n;
        out[len] = '\0';
        close(p[0]);
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_bwrap(void **state) {
        const struct seccomp_options o = { .network = false };
        _cleanup_close_ int fd = -1;
        char script[8192], out[4096];

        if (access(BWRAP, X_OK) < 0 || access(PYTHON, X_OK) < 0)
                skip();
        assert_int_equal(seccomp_filter_build(&o, &fd), 0);
        /* bwrap that cannot make namespaces here says so before the script */
        if (run_bwrap(fd, "pass", out, sizeof out) != 0)
                skip();
        close(TAKE_FD(fd));

        assert_int_equal(seccomp_filter_build(&o, &fd), 0);
        int n = snprintf(script, sizeof script, bwrap_script, SYS_clone, SYS_keyctl, SYS_mount,
                         SYS_unshare, SYS_setns, SYS_personality, SYS_io_uring_setup, SYS_bpf,
                         SYS_ptrace, SYS_clone);
        assert_true(n > 0 && (size_t) n < sizeof script);
        assert_int_equal(run_bwrap(fd, script, out, sizeof out), 0);
        assert_string_equal(out, bwrap_expected);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_build_shape),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_probes_baseline),
                cmocka_unit_test(test_probes_offline),
                cmocka_unit_test(test_probes_online),
                cmocka_unit_test(test_foreign_abi_killed),
                cmocka_unit_test(test_bwrap),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
