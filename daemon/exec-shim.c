/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * toolsd-exec: the last step before a tool's command runs. bwrap runs it
 * inside the sandbox (or the supervisor runs it directly when unsandboxed);
 * it runs as the peer's uid with no capabilities and applies, in order, the
 * resource limits, Landlock, the seccomp filter (only when unsandboxed:
 * inside bwrap the filter is already loaded by bwrap's --seccomp), then
 * execve() of the command.
 *
 * It reports on a status fd so the broker never guesses from exit codes:
 * "landlock ERRNO\n" or "seccomp ERRNO\n" if a layer cannot be applied (and
 * the command does not run), "ready\n" once every layer is in place, then
 * "exec ERRNO\n" if execve() fails, else "exit N\n" or "signal N\n" when the
 * command ends. So the command's
 * own exit 127 is never mistaken for "not installed", and a command killed
 * by a signal is told apart from one that exits 128+N (which is all bwrap's
 * pid 1 can report). The shim stays as the command's parent for that; the
 * status fd is close-on-exec, so the command never sees it.
 *
 *   toolsd-exec [--status-fd N] [--rlimit NAME=VALUE]...
 *               [--landlock-ro PATH]... [--landlock-rw PATH]...
 *               [--landlock-ro-under PATH]... [--landlock-deny-tcp]
 *               [--require-landlock] [--seccomp-network|--seccomp-no-network]
 *               -- COMMAND [ARG]...
 *
 * NAME is cpu, as, fsize, nproc or nofile; core dumps are always off. Any
 * --landlock-* option turns Landlock on; a kernel without it is tolerated
 * (the status says "ready" all the same) unless --require-landlock is given.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock.h"
#include "seccomp_filter.h"

/* Each list is bounded well under Landlock's rule limit. */
#define SHIM_PATHS_MAX 64

static int status_fd = -1;

struct layers {
        const char *ro[SHIM_PATHS_MAX + 1];
        const char *rw[SHIM_PATHS_MAX + 1];
        const char *ro_under[SHIM_PATHS_MAX + 1];
        size_t n_ro, n_rw, n_ro_under;
        bool landlock, deny_tcp, require_landlock;
        int seccomp;            /* -1: not loaded here; 0: no network; 1: network */
};

static void status(const char *what, int err) {
        char buf[64];
        int n = strcmp(what, "ready") != 0 ? snprintf(buf, sizeof buf, "%s %d\n", what, err)
                                            : snprintf(buf, sizeof buf, "%s\n", what);
        if (status_fd >= 0 && n > 0)
                (void) !write(status_fd, buf, (size_t) n);
}

static int parse_u64(const char *s, unsigned long long *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-')
                return -1;
        *ret = v;
        return 0;
}

static int set_rlimit(const char *spec) {
        static const struct {
                const char *name;
                int resource;
        } map[] = {
                { "cpu", RLIMIT_CPU }, { "as", RLIMIT_AS }, { "fsize", RLIMIT_FSIZE },
                { "nproc", RLIMIT_NPROC }, { "nofile", RLIMIT_NOFILE },
        };
        const char *eq = strchr(spec, '=');
        unsigned long long v;

        if (!eq || parse_u64(eq + 1, &v) < 0)
                return -1;
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
                if (strlen(map[i].name) == (size_t) (eq - spec) && strncmp(spec, map[i].name, (size_t) (eq - spec)) == 0) {
                        struct rlimit rl = { .rlim_cur = v, .rlim_max = v };
                        return setrlimit(map[i].resource, &rl);
                }
        return -1;
}

/* Like execvp() but never falls back to running the file with /bin/sh
 * (glibc does for ENOEXEC): nothing runs through a shell by accident. */
static int exec_path(char *const argv[]) {
        extern char **environ;
        const char *path = getenv("PATH");
        char buf[4096];
        int err = ENOENT;

        if (strchr(argv[0], '/')) {
                execve(argv[0], argv, environ);
                return errno;
        }
        if (!path || !*path)
                path = "/usr/bin:/bin";
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, ":");
                if (n > 0 && n + strlen(argv[0]) + 2 <= sizeof buf) {
                        memcpy(buf, p, n);
                        buf[n] = '/';
                        strcpy(buf + n + 1, argv[0]);
                        execve(buf, argv, environ);
                        if (errno != ENOENT && errno != ENOTDIR)
                                err = errno;
                }
                p += n;
                if (*p == ':')
                        p++;
        }
        return err;
}

/* Runs the command as our child; execve()'s errno comes back through a
 * close-on-exec pipe, so silence on it means the exec succeeded. */
static int run(char *const cmd[]) {
        int p[2], e = 0, ws;

        if (pipe2(p, O_CLOEXEC) < 0)
                return 126;
        pid_t pid = fork();
        if (pid < 0)
                return 126;
        if (pid == 0) {
                close(p[0]);
                e = exec_path(cmd);
                (void) !write(p[1], &e, sizeof e);
                _exit(127);
        }
        close(p[1]);
        ssize_t n;
        do
                n = read(p[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
        close(p[0]);
        while (waitpid(pid, &ws, 0) < 0)
                if (errno != EINTR)
                        return 126;
        if (n == (ssize_t) sizeof e) {
                status("exec", e);
                fprintf(stderr, "toolsd-exec: %s: %s\n", cmd[0], strerror(e));
                return e == ENOENT ? 127 : 126;
        }
        if (WIFSIGNALED(ws)) {
                status("signal", WTERMSIG(ws));
                return 128 + WTERMSIG(ws);
        }
        status("exit", WEXITSTATUS(ws));
        return WEXITSTATUS(ws);
}

static int add_path(const char **list, size_t *n, const char *path) {
        if (*n >= SHIM_PATHS_MAX || path[0] != '/')
                return -1;
        list[(*n)++] = path;
        list[*n] = NULL;
        return 0;
}

/* One option at argv[*i]; returns -1 for an unknown or malformed one. */
static int parse_option(int argc, char *argv[], int *i, struct layers *l) {
        const char *o = argv[*i], *arg = *i + 1 < argc ? argv[*i + 1] : NULL;

        if (strcmp(o, "--landlock-deny-tcp") == 0)
                return (void) (l->landlock = l->deny_tcp = true), 0;
        if (strcmp(o, "--require-landlock") == 0)
                return (void) (l->require_landlock = true), 0;
        if (strcmp(o, "--seccomp-network") == 0 || strcmp(o, "--seccomp-no-network") == 0)
                return (void) (l->seccomp = strcmp(o, "--seccomp-network") == 0), 0;
        if (!arg)
                return -1;
        (*i)++;
        if (strcmp(o, "--status-fd") == 0) {
                status_fd = atoi(arg);
                if (fcntl(status_fd, F_SETFD, FD_CLOEXEC) < 0)
                        status_fd = -1;
                return 0;
        }
        if (strcmp(o, "--rlimit") == 0) {
                if (set_rlimit(arg) >= 0)
                        return 0;
                fprintf(stderr, "toolsd-exec: cannot set limit %s: %s\n", arg, strerror(errno));
                return -1;
        }
        l->landlock = true;
        if (strcmp(o, "--landlock-ro") == 0)
                return add_path(l->ro, &l->n_ro, arg);
        if (strcmp(o, "--landlock-rw") == 0)
                return add_path(l->rw, &l->n_rw, arg);
        if (strcmp(o, "--landlock-ro-under") == 0)
                return add_path(l->ro_under, &l->n_ro_under, arg);
        return -1;
}

/* Landlock, then (unsandboxed only) seccomp: after the limits, before
 * "ready". Either failing stops the command; a kernel without Landlock
 * only when it is required. */
static int apply_layers(const struct layers *l) {
        int r;

        if (l->landlock || l->require_landlock) {
                struct landlock_spec spec = {
                        .ro_paths = l->ro,
                        .rw_paths = l->rw,
                        .ro_under_rw = l->ro_under,
                        .deny_tcp = l->deny_tcp,
                };
                r = landlock_apply(&spec, NULL);
                if (r < 0 && (r != -EOPNOTSUPP || l->require_landlock)) {
                        status("landlock", -r);
                        fprintf(stderr, "toolsd-exec: cannot apply Landlock: %s\n", strerror(-r));
                        return -1;
                }
        }
        if (l->seccomp >= 0) {
                r = seccomp_filter_load(&(struct seccomp_options) { .network = l->seccomp == 1 });
                if (r < 0) {
                        status("seccomp", -r);
                        fprintf(stderr, "toolsd-exec: cannot load the seccomp filter: %s\n", strerror(-r));
                        return -1;
                }
        }
        return 0;
}

int main(int argc, char *argv[]) {
        /* The command is our child with our uid: non-dumpable, our
         * /proc/PID/fd (the status pipe) is out of its reach, so it cannot
         * write a forged "exit 0" or "exec 2" there. execve() makes the
         * command itself dumpable again. */
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        struct layers l = { .seccomp = -1 };
        struct rlimit zero = { 0, 0 };
        int i = 1;

        for (; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (parse_option(argc, argv, &i, &l) < 0) {
                        fprintf(stderr, "toolsd-exec: bad argument %s\n", argv[i]);
                        return 126;
                }
        if (i + 1 >= argc) {
                fprintf(stderr, "toolsd-exec: no command\n");
                return 126;
        }
        if (setrlimit(RLIMIT_CORE, &zero) < 0)
                return 126;
        if (apply_layers(&l) < 0)
                return 126;

        status("ready", 0);
        return run(argv + i + 1);
}
