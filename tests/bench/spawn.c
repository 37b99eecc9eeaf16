/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-spawn: the "direct bwrap" baseline of tests/bench/bench.py. It
 * launches the very command line toolsd runs for a call, the way toolsd's
 * supervisor does (fork + execve, root dir on fd 3, tool_calls on fd 4, the
 * shim's status pipe on fd 5, stdout/stderr pipes read to EOF, wait), with
 * nothing else around it: what a sandboxed call costs without the daemon.
 *
 * Runs as the benchmark's user, unprivileged beyond that; a benchmark
 * helper, not part of toolsd. Driven by bench.py over stdin/stdout:
 *
 *   bench-spawn ROOT -- BWRAP-ARGV...
 *   "one\n"        → "NS BYTES\n"     one launch, its wall time, output bytes
 *   "par P SEC\n"  → "CALLS\n"        P loops launching until SEC elapse
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int root_fd = -1, tc_fd = -1;
static int status_at = 5, seccomp_at = -1;      /* from the argv: --status-fd N, --seccomp N */
static const char *seccomp_file;                /* BENCH_SECCOMP: the program toolsd passes */
static char **cmd;

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Same fd layout and environment as toolsd's child: root on 3, tool_calls
 * on 4, then the seccomp program and the shim's status pipe where the argv
 * says. */
static void child(int out, int err, int status_w) {
        char *envp[] = { "PATH=/usr/bin:/bin", NULL };
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int r = fcntl(root_fd, F_DUPFD_CLOEXEC, 64), t = fcntl(tc_fd, F_DUPFD_CLOEXEC, 64);
        int s = fcntl(status_w, F_DUPFD_CLOEXEC, 64);
        int sc = seccomp_at >= 0 ? open(seccomp_file, O_RDONLY | O_CLOEXEC) : -1;

        if (null < 0 || r < 0 || t < 0 || s < 0 || fchdir(root_fd) < 0 || dup2(null, 0) < 0 ||
            dup2(out, 1) < 0 || dup2(err, 2) < 0 || dup2(r, 3) < 0 || dup2(t, 4) < 0 || dup2(s, status_at) < 0)
                _exit(126);
        if (seccomp_at >= 0 && (sc < 0 || dup2(sc, seccomp_at) < 0))
                _exit(126);
        execve(cmd[0], cmd, envp);
        _exit(127);
}

/* One launch: returns the output bytes read, or -1. */
static long long launch(void) {
        int out[2], err[2], st[2], ws;
        char buf[65536];
        long long bytes = 0;

        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0)
                child(out[1], err[1], st[1]);
        close(out[1]);
        close(err[1]);
        close(st[1]);
        struct pollfd p[2] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN } };
        int open_n = 2;
        while (open_n > 0) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                for (int i = 0; i < 2; i++) {
                        if (p[i].fd < 0 || !p[i].revents)
                                continue;
                        ssize_t n = read(p[i].fd, buf, sizeof buf);
                        if (n > 0) {
                                bytes += n;
                                continue;
                        }
                        if (n < 0 && errno == EINTR)
                                continue;
                        close(p[i].fd);
                        p[i].fd = -1;
                        open_n--;
                }
        }
        (void) !read(st[0], buf, sizeof buf);   /* the shim's "ready\nexit 0\n" */
        close(st[0]);
        while (waitpid(pid, &ws, 0) < 0)
                if (errno != EINTR)
                        return -1;
        return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? bytes : -1;
}

static void par(int n, double sec) {
        uint64_t end = now_ns() + (uint64_t) (sec * 1e9);
        int pfd[2];

        if (pipe(pfd) < 0)
                return;
        for (int i = 0; i < n; i++)
                if (fork() == 0) {
                        long calls = 0;
                        close(pfd[0]);
                        while (now_ns() < end)
                                if (launch() >= 0)
                                        calls++;
                        (void) !write(pfd[1], &calls, sizeof calls);
                        _exit(0);
                }
        close(pfd[1]);
        long total = 0, c;
        while (read(pfd[0], &c, sizeof c) == (ssize_t) sizeof c)
                total += c;
        close(pfd[0]);
        while (wait(NULL) > 0)
                ;
        printf("%ld\n", total);
}

int main(int argc, char *argv[]) {
        char line[256], path[4096];

        if (argc < 4 || strcmp(argv[2], "--") != 0) {
                fprintf(stderr, "usage: bench-spawn ROOT -- ARGV...\n");
                return 2;
        }
        snprintf(path, sizeof path, "%s/tool_calls", argv[1]);
        root_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        tc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0 || tc_fd < 0) {
                perror("bench-spawn: open root");
                return 1;
        }
        cmd = argv + 3;
        for (char **a = cmd; *a && a[1]; a++) {
                if (strcmp(*a, "--status-fd") == 0)
                        status_at = atoi(a[1]);
                else if (strcmp(*a, "--seccomp") == 0)
                        seccomp_at = atoi(a[1]);
        }
        seccomp_file = getenv("BENCH_SECCOMP");
        if (seccomp_at >= 0 && !seccomp_file) {
                fprintf(stderr, "bench-spawn: the argv has --seccomp: set BENCH_SECCOMP\n");
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (fgets(line, sizeof line, stdin)) {
                int n;
                double sec;
                if (strcmp(line, "one\n") == 0) {
                        uint64_t t = now_ns();
                        long long b = launch();
                        printf("%llu %lld\n", (unsigned long long) (now_ns() - t), b);
                } else if (sscanf(line, "par %d %lf", &n, &sec) == 2 && n > 0 && n <= 1024)
                        par(n, sec);
                else
                        printf("error\n");
        }
        return 0;
}
