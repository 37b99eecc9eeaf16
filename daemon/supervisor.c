/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor: starts a call's process (bwrap, or the exec shim when
 * unsandboxed) in its own process group, reads its output without blocking
 * the loop, enforces the wall-clock limit and the output cap, and kills the
 * whole group on timeout, cancel, hang-up or shutdown.
 *
 * Runs in the broker as the serving uid. The broker is a child subreaper, so
 * a process that leaves its group (setsid, double fork) is reparented here
 * and killed: nothing a call started outlives its result.
 *
 * Cost per call matters (docs/benchmarks.md): the process is started with
 * clone(CLONE_VM|CLONE_VFORK), not fork(), so the broker's memory is never
 * copied; the output buffers grow with the output instead of being
 * allocated whole for every call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

enum { OUT, ERR, _STREAMS };

struct stream {
        uv_pipe_t pipe;
        struct worker *w;
        bool open;
        bool eof;
        char *keep;                     /* the head of the output, for the reply; grown on demand */
        size_t keep_len, keep_size;
        uint64_t total;
        int persist_fd;
};

struct worker {
        struct server *server;
        struct worker *next;            /* all workers of the server */
        const struct worker_ops *ops;
        void *userdata;
        pid_t pid;
        bool exited;
        int wstatus;
        struct rusage ru;
        struct stream s[_STREAMS];
        uv_timer_t timeout, grace;
        unsigned handles_open;
        int status_fd;
        uint64_t result_bytes, output_cap;
        int persist_dirfd;              /* the session's tool_calls/, not ours: the
                                         * session outlives its running calls */
        char persist_name[128];         /* the call id; "" when nothing is persisted */
        bool sandboxed;                 /* runs bwrap: see worker_kill() */
        const char *ended_by;
        bool paused;
        bool done;                      /* on_exit called */
};

static struct worker *workers;

static const char *const stream_names[_STREAMS] = { "stdout", "stderr" };

static void worker_maybe_done(struct worker *w);

static void worker_free(struct worker *w) {
        for (struct worker **p = &workers; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        for (int i = 0; i < _STREAMS; i++) {
                free(w->s[i].keep);
                closep(&w->s[i].persist_fd);
        }
        closep(&w->status_fd);
        free(w);
}

static void worker_release(struct worker *w) {
        if (--w->handles_open == 0)
                worker_free(w);
}

/* A timer's data is its worker, a pipe's is its stream. */
static void timer_on_close(uv_handle_t *h) {
        worker_release(h->data);
}

static void stream_on_close(uv_handle_t *h) {
        struct stream *st = h->data;
        worker_release(st->w);
}

static void worker_close_handle(struct worker *w, uv_handle_t *h) {
        if (!uv_is_closing(h))
                uv_close(h, timer_on_close);
}

static void stream_close(struct stream *st) {
        if (!st->open)
                return;
        st->open = false;
        if (!uv_is_closing((uv_handle_t *) &st->pipe))
                uv_close((uv_handle_t *) &st->pipe, stream_on_close);
}

static void kill_group(struct worker *w, int sig) {
        if (w->pid > 0)
                (void) kill(-w->pid, sig);
}

/* Kills processes reparented to us that are no worker's: whatever left its
 * group (setsid, double fork) while its call ran. */
static void kill_orphans(void) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                char path[300], buf[4096];
                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(path, sizeof path, "/proc/self/task/%s/children", de->d_name);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                /* A full buffer may end in the middle of a pid: drop the
                 * last number rather than kill a wrong one (the rest are
                 * killed on the next SIGCHLD). */
                if ((size_t) n == sizeof buf - 1) {
                        char *last = strrchr(buf, ' ');
                        if (!last)
                                continue;
                        *last = '\0';
                }
                for (char *p = buf, *end; *p; p = end) {
                        long pid = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        bool ours = false;
                        for (struct worker *w = workers; w && !ours; w = w->next)
                                ours = w->pid == pid;
                        if (!ours && pid > 1)
                                (void) kill((pid_t) pid, SIGKILL);
                }
        }
        closedir(d);
}

static void worker_on_grace(uv_timer_t *t) {
        struct worker *w = t->data;
        kill_group(w, SIGKILL);
}

/* SIGKILL to the children of our child, the outer bwrap: that is the
 * sandbox's pid 1, and its death takes the whole PID namespace down at once.
 * Otherwise the namespace dies only after the outer bwrap has, through
 * --die-with-parent: one more hop, several ms on a busy host. The pids are
 * read from our own unreaped child, so they are its live children. */
static void kill_sandbox_init(struct worker *w) {
        char path[64], buf[256];

        (void) snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int) w->pid, (int) w->pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return;
        buf[n] = '\0';
        for (char *p = buf, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 1)
                        (void) kill((pid_t) pid, SIGKILL);
        }
}

void worker_kill(struct worker *w, const char *ended_by) {
        if (w->done)
                return;
        if (!w->ended_by)
                w->ended_by = ended_by;
        if (w->exited)
                return;
        uint32_t grace = w->server->config->kill_grace_ms;
        /* bwrap does not pass SIGTERM on to the command: under bwrap a grace
         * only delays the end. An unsandboxed command gets its grace. */
        if (w->sandboxed) {
                kill_sandbox_init(w);
                kill_group(w, SIGKILL);
                return;
        }
        kill_group(w, SIGTERM);
        if (grace == 0)
                kill_group(w, SIGKILL);
        else
                (void) uv_timer_start(&w->grace, worker_on_grace, grace, 0);
}

static void worker_on_timeout(uv_timer_t *t) {
        worker_kill(t->data, "timeout");
}

/* The raw copy of a stream, tool_calls/ID.stdout or .stderr. Made when the
 * call starts, even if it stays empty: read_tool_result tells "empty" from
 * "nothing kept for this call" by the file's existence. */
static void stream_persist_open(struct stream *st) {
        struct worker *w = st->w;
        char name[sizeof w->persist_name + 16];

        if (!w->persist_name[0])
                return;
        (void) snprintf(name, sizeof name, "%s.%s", w->persist_name, stream_names[st - w->s]);
        st->persist_fd = openat(w->persist_dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

static void stream_persist(struct stream *st, const char *data, size_t n) {
        if (st->persist_fd < 0)
                return;
        while (n > 0) {
                ssize_t k = write(st->persist_fd, data, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        /* A full disk loses the raw copy, not the call. */
                        closep(&st->persist_fd);
                        return;
                }
                data += k;
                n -= (size_t) k;
        }
}

/* Keeps the head of the output for the reply, in a buffer grown as output
 * comes (most calls print a few bytes, the cap is 64 KiB by default). Out
 * of memory keeps less: total > keep_len marks the reply truncated. */
static void stream_keep(struct stream *st, const char *data, size_t n) {
        uint64_t max = st->w->result_bytes;

        if (n == 0 || st->keep_len >= max)
                return;
        size_t take = (size_t) MIN((uint64_t) n, max - st->keep_len);
        if (st->keep_len + take + 1 > st->keep_size) {
                size_t size = MAX(st->keep_size * 2, (size_t) 4096);
                size = MAX(size, st->keep_len + take + 1);
                size = (size_t) MIN((uint64_t) size, max + 1);
                char *k = realloc(st->keep, size);
                if (!k)
                        return;
                st->keep = k;
                st->keep_size = size;
        }
        memcpy(st->keep + st->keep_len, data, take);
        st->keep_len += take;
}

/* One buffer for every read: the loop thread is the only reader and each
 * read is consumed before the next. A pipe gives at most its capacity (64
 * KiB) per read; a 256 KiB buffer with F_SETPIPE_SZ made 4x fewer, larger
 * replies but no faster stream (the cost is per byte: UTF-8 check and JSON
 * escaping) and 1.5 MiB more peak memory (docs/benchmarks.md). */
static void stream_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
        static char chunk[64 * 1024];
        *buf = uv_buf_init(chunk, sizeof chunk);
}

static void stream_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
        struct stream *st = s->data;
        struct worker *w = st->w;

        if (nread == 0)
                return;
        if (nread < 0) {
                st->eof = true;
                stream_close(st);
                return worker_maybe_done(w);
        }

        /* Past the cap, output is counted and dropped: the process is being
         * killed, but until it is gone it may write at full speed, and
         * neither the persisted copy nor the client's stream may grow. */
        uint64_t before = w->s[OUT].total + w->s[ERR].total;
        size_t n = before >= w->output_cap ? 0 : (size_t) MIN((uint64_t) nread, w->output_cap - before);
        st->total += (size_t) nread;
        stream_persist(st, buf->base, n);
        stream_keep(st, buf->base, n);
        if (n > 0 && w->ops->on_output)
                w->ops->on_output(w->userdata, stream_names[st - w->s], buf->base, n);
        if (before + (size_t) nread > w->output_cap)
                worker_kill(w, "limit");
}

void worker_pause(struct worker *w, bool pause) {
        if (w->paused == pause || w->done)
                return;
        w->paused = pause;
        for (int i = 0; i < _STREAMS; i++) {
                if (!w->s[i].open)
                        continue;
                if (pause)
                        (void) uv_read_stop((uv_stream_t *) &w->s[i].pipe);
                else
                        (void) uv_read_start((uv_stream_t *) &w->s[i].pipe, stream_on_alloc, stream_on_read);
        }
}

/* The shim says "ready\n" when the sandbox is set up and, if execve()
 * fails, "exec ERRNO\n"; its fd is close-on-exec, so a successful exec
 * says nothing more. Silence means bwrap failed before the shim ran. */
static void read_status(struct worker *w, struct worker_result *r) {
        char buf[256];
        ssize_t n = w->status_fd >= 0 ? read(w->status_fd, buf, sizeof buf - 1) : -1;

        if (w->status_fd < 0)
                return;
        if (n < 0)
                n = 0;
        buf[n] = '\0';
        if (!strstr(buf, "ready\n")) {
                r->setup_failed = true;
                return;
        }
        const char *x = strstr(buf, "exit "), *sg = strstr(buf, "signal ");
        if (x || sg) {
                r->status_known = true;
                r->status_exit = x ? atoi(x + 5) : -1;
                r->status_signal = sg ? atoi(sg + 7) : 0;
        }
        const char *e = strstr(buf, "exec ");
        if (e) {
                int err = atoi(e + 5);
                r->exec_failed = err == ENOENT || err == ENOTDIR;
                if (!r->exec_failed)
                        (void) snprintf(r->setup_error, sizeof r->setup_error, "cannot execute: %s",
                                        strerror(err));
        }
}

static void worker_maybe_done(struct worker *w) {
        struct worker_result r = { .exit_code = -1, .child_pid = -1 };

        if (w->done || !w->exited || w->s[OUT].open || w->s[ERR].open)
                return;
        w->done = true;

        if (WIFEXITED(w->wstatus))
                r.exit_code = WEXITSTATUS(w->wstatus);
        else if (WIFSIGNALED(w->wstatus))
                r.signal = WTERMSIG(w->wstatus);
        r.ended_by = w->ended_by;
        /* No output, no buffer: the reply gets an empty string. */
        static char empty[1];
        r.out = w->s[OUT].keep ?: empty;
        r.out_len = w->s[OUT].keep_len;
        r.err = w->s[ERR].keep ?: empty;
        r.err_len = w->s[ERR].keep_len;
        r.out[r.out_len] = '\0';
        r.err[r.err_len] = '\0';
        r.out_total = w->s[OUT].total;
        r.err_total = w->s[ERR].total;
        r.truncated = r.out_total > r.out_len || r.err_total > r.err_len;
        r.cpu_ms = (uint64_t) (w->ru.ru_utime.tv_sec + w->ru.ru_stime.tv_sec) * 1000u +
                   (uint64_t) (w->ru.ru_utime.tv_usec + w->ru.ru_stime.tv_usec) / 1000u;
        r.max_rss_kb = (uint64_t) w->ru.ru_maxrss;
        read_status(w, &r);

        w->ops->on_exit(w->userdata, &r);

        uv_timer_stop(&w->timeout);
        uv_timer_stop(&w->grace);
        worker_close_handle(w, (uv_handle_t *) &w->timeout);
        worker_close_handle(w, (uv_handle_t *) &w->grace);
}

static void worker_on_exit(struct worker *w, int wstatus, const struct rusage *ru) {
        w->exited = true;
        w->wstatus = wstatus;
        w->ru = *ru;
        /* Whatever the command left in its group goes with it. */
        kill_group(w, SIGKILL);
        uv_timer_stop(&w->timeout);
        uv_timer_stop(&w->grace);
        worker_maybe_done(w);
}

void supervisor_on_sigchld(struct server *s) {
        for (;;) {
                struct rusage ru;
                int wstatus;
                pid_t pid = wait4(-1, &wstatus, WNOHANG, &ru);
                if (pid <= 0)
                        break;
                for (struct worker *w = workers; w; w = w->next)
                        if (w->pid == pid && !w->exited) {
                                worker_on_exit(w, wstatus, &ru);
                                break;
                        }
        }
        kill_orphans();
}

static int stream_open(struct worker *w, struct stream *st, int fd) {
        st->w = w;
        stream_persist_open(st);
        int r = uv_pipe_init(w->server->loop, &st->pipe, 0);
        if (r < 0)
                return r;
        st->pipe.data = st;
        w->handles_open++;
        st->open = true;
        r = uv_pipe_open(&st->pipe, fd);
        if (r < 0)
                return r;
        return uv_read_start((uv_stream_t *) &st->pipe, stream_on_alloc, stream_on_read);
}

/* The child of clone(CLONE_VM|CLONE_VFORK) runs on this stack, in the
 * broker's memory, while the broker's only thread waits for its execve():
 * one stack does for every spawn. */
static _Alignas(64) char child_stack[32 * 1024];

struct child_args {
        const struct worker_spec *spec;
        int null_fd, out, err, status_w;
};

/* In the child, before exec. It shares the broker's memory: only system
 * calls, no malloc, no stdio, nothing that takes a lock or writes a global
 * (errno is the broker's, which is waiting). Every signal is blocked on
 * entry, so no handler of the broker (libuv's) runs here; they are reset
 * before the mask is cleared. */
static int child_main(void *userdata) {
        const struct child_args *a = userdata;
        const struct worker_spec *spec = a->spec;
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigset_t none;
        int hi[16];
        size_t n = MIN(spec->n_pass_fds, ELEMENTSOF(hi) - 1);

        (void) setpgid(0, 0);
        /* The broker's death ends the call too. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (int sig = 1; sig < NSIG; sig++)
                (void) sigaction(sig, &dfl, NULL);
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);

        if (spec->cwd_fd >= 0 && fchdir(spec->cwd_fd) < 0)
                _exit(126);
        if (dup2(a->null_fd, 0) < 0 || dup2(a->out, 1) < 0 || dup2(a->err, 2) < 0)
                _exit(126);
        /* Move the fds to pass out of the way first, then to 3, 4, ... */
        for (size_t i = 0; i < n; i++)
                if ((hi[i] = fcntl(spec->pass_fds[i], F_DUPFD_CLOEXEC, 64)) < 0)
                        _exit(126);
        hi[n] = a->status_w >= 0 ? fcntl(a->status_w, F_DUPFD_CLOEXEC, 64) : -1;
        for (size_t i = 0; i < n; i++)
                if (dup2(hi[i], 3 + (int) i) < 0)
                        _exit(126);
        if (hi[n] >= 0 && dup2(hi[n], 3 + (int) n) < 0)
                _exit(126);
        (void) syscall(SYS_close_range, 3 + n + (hi[n] >= 0 ? 1 : 0), ~0U, 0);
        execve(spec->argv[0], spec->argv, spec->envp);
        _exit(127);
}

/* /dev/null for the child's stdin, opened once. */
static int null_fd(void) {
        static int fd = -1;
        if (fd < 0)
                fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        return fd;
}

/* Starts the child. No fork(): copying the broker's page tables and taking
 * copy-on-write faults until the child execs was most of the broker's CPU
 * per call, and grew with its size (sessions, fds). The caller resumes once
 * the child has exec'd or died, so the child's setpgid() is done by then. */
static pid_t spawn(const struct worker_spec *spec, int out, int err, int status_w) {
        struct child_args a = {
                .spec = spec, .null_fd = null_fd(), .out = out, .err = err, .status_w = status_w,
        };
        sigset_t all, saved;

        if (a.null_fd < 0)
                return -errno;
        sigfillset(&all);
        if (sigprocmask(SIG_SETMASK, &all, &saved) < 0)
                return -errno;
        pid_t pid = clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
        int e = errno;
        (void) sigprocmask(SIG_SETMASK, &saved, NULL);
        return pid < 0 ? -e : pid;
}

int worker_start(struct server *s, const struct worker_spec *spec, const struct worker_ops *ops, void *userdata,
                 struct worker **ret) {
        int out[2] = { -1, -1 }, err[2] = { -1, -1 }, st[2] = { -1, -1 };
        int r;

        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail;
        }

        pid_t pid = spawn(spec, out[1], err[1], st[1]);
        if (pid < 0) {
                r = pid;
                goto fail;
        }
        closep(&out[1]);
        closep(&err[1]);
        closep(&st[1]);

        struct worker *w = calloc(1, sizeof *w);
        if (!w) {
                (void) kill(-pid, SIGKILL);
                r = -ENOMEM;
                goto fail;
        }
        w->server = s;
        w->ops = ops;
        w->userdata = userdata;
        w->pid = pid;
        w->status_fd = TAKE_FD(st[0]);
        w->s[OUT].persist_fd = w->s[ERR].persist_fd = -1;
        (void) fcntl(w->status_fd, F_SETFL, O_NONBLOCK);
        w->result_bytes = spec->result_bytes;
        w->output_cap = spec->limits.output_bytes;
        w->sandboxed = spec->argv[0] && strcmp(spec->argv[0], s->config->bwrap_path) == 0;
        w->persist_dirfd = spec->persist_dirfd;
        if (spec->persist_dirfd >= 0 && spec->persist_name)
                (void) snprintf(w->persist_name, sizeof w->persist_name, "%s", spec->persist_name);
        w->next = workers;
        workers = w;

        (void) uv_timer_init(s->loop, &w->timeout);
        (void) uv_timer_init(s->loop, &w->grace);
        w->timeout.data = w->grace.data = w;
        w->handles_open += 2;
        (void) uv_timer_start(&w->timeout, worker_on_timeout, spec->limits.timeout_ms, 0);

        r = stream_open(w, &w->s[OUT], TAKE_FD(out[0]));
        if (r >= 0)
                r = stream_open(w, &w->s[ERR], TAKE_FD(err[0]));
        if (r < 0) {
                /* The process runs; kill it and let the normal path end it. */
                log_error("cannot read the output of pid %d: %s", (int) pid, uv_strerror(r));
                worker_kill(w, "cancelled");
        }
        *ret = w;
        return 0;

fail:
        for (int i = 0; i < 2; i++) {
                closep(&out[i]);
                closep(&err[i]);
                closep(&st[i]);
        }
        return r;
}

/* The parent of pid from /proc/PID/stat (the field after the command name,
 * which may itself hold spaces and parentheses). */
static pid_t parent_of(pid_t pid) {
        char path[64], buf[1024];
        (void) snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        int ppid;
        if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
                return -1;
        return (pid_t) ppid;
}

int supervisor_peer_inside_call(pid_t pid, int pidfd) {
        /* SO_PEERCRED's pid is already in our pid namespace; walk up. The
         * peer itself must be readable: one that is gone (it connected and
         * exited, leaving the socket to a sibling) is refused, not waved
         * through. An ancestor we cannot read is not ours: our workers and
         * everything under them run as our uid. Reaching ourselves means
         * an orphan of an unsandboxed call, reparented to us. */
        pid_t self = getpid();
        for (unsigned depth = 0; depth < 256; depth++) {
                if (pid == self)
                        return 1;
                for (struct worker *w = workers; w; w = w->next)
                        if (w->pid == pid)
                                return 1;
                pid_t parent = parent_of(pid);
                if (parent < 0) {
                        if (depth == 0)
                                return -ESRCH;
                        break;
                }
                if (parent <= 1)
                        break;
                pid = parent;
        }
        /* The pid may have been reused while we walked: the pidfd pins the
         * peer, and it must still be alive for the walk to be about it. */
        /* (EPERM: alive, but not ours to signal, e.g. a peer that changed
         * only its effective uid; only ESRCH means gone.) */
        if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 && errno == ESRCH)
                return -ESRCH;
        return 0;
}

int supervisor_init(struct server *s) {
        /* Orphans of our calls come to us, not to init. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return -errno;
        return 0;
}
