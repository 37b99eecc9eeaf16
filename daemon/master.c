/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The master: the only privileged code of toolsd (system mode).
 *
 * Runs as root with CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_SETPCAP only
 * (bounding set too); SETPCAP is there solely so a broker's bounding set can
 * be emptied before it runs. It accepts connections, reads SO_PEERCRED,
 * starts one broker per uid (as that user, no capabilities, no_new_privs,
 * re-executed for a fresh address space) and hands each connection to it
 * with SCM_RIGHTS. It never reads a byte a client sends: the only bytes it
 * writes to a client are fixed error replies when a limit refuses it.
 *
 * Brokers are only semi-trusted: the one message a broker sends here is a
 * one-byte "a connection of mine closed", which can only lower its own
 * uid's count.
 *
 * Root's administrative view (ListSessions/Status with all_users): each
 * broker gets a status page, a memfd the master creates and seals at a
 * fixed size, and root's broker gets every other broker's page with a
 * pidfd of that broker. The master never reads or writes a page.
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cap-ng.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "master.h"
#include "status_page.h"

#define BROKERS_MAX 1024
#define RESTARTS_MAX 5          /* abnormal broker ends per uid ... */
#define RESTART_WINDOW_SEC 30   /* ... within this window refuse that uid for as long */
#define BROKERS_PER_UID_MAX 2   /* the serving one, and one on its way out */
#define EXIT_GRACE_USEC (5u * 1000000u) /* a broker that said it exits, and has not, is killed */

struct broker {
        uid_t uid;
        pid_t pid;                      /* 0: slot free or broker gone */
        int ctl;                        /* our end of the control socket */
        int page;                       /* its status page (a sealed memfd); -1: none */
        int pidfd;                      /* sent with the page; -1: none */
        bool page_pending;              /* root's serving broker does not have the page yet */
        uint32_t conns;                 /* counted until the broker is reaped */
        bool exiting;                   /* asked to exit: hand it nothing more */
        uint64_t kill_at_usec;          /* exiting: SIGKILL if still alive then */
};

/* Abnormal ends per uid, to stop a crash loop. */
struct restarts {
        uid_t uid;
        unsigned count;
        time_t window_start;
};

static struct broker brokers[BROKERS_MAX];
static struct restarts restarts[BROKERS_MAX];
static uint32_t n_conns_total;
/* Held so that a connection can still be accepted (and refused) when every
 * other descriptor is in use; otherwise the listening socket would stay
 * readable and poll() would spin. */
static int reserve_fd = -1;
/* Out of descriptors with no reserve left: the listening socket is not
 * polled (it would stay readable, and poll() would spin) until a broker is
 * reaped and the reserve can be taken again. */
static bool accept_paused;
/* Brokers get the soft limit toolsd was started with, not ours. */
static struct rlimit nofile_start;

static uint64_t mono_sec(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec;
}

/* The only bytes the master writes to a client: a fixed Varlink error,
 * sent without waiting, then the connection is closed. */
static void refuse(int fd, const char *error, const char *what, uint64_t limit) {
        char msg[256];
        int n;

        if (what)
                n = snprintf(msg, sizeof msg, "{\"error\":\"%s\",\"parameters\":{\"what\":\"%s\",\"limit\":%llu}}",
                             error, what, (unsigned long long) limit);
        else
                n = snprintf(msg, sizeof msg, "{\"error\":\"%s\",\"parameters\":{}}", error);
        if (n > 0 && (size_t) n < sizeof msg)
                (void) send(fd, msg, (size_t) n + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        close(fd);
}

/* Brokers of a uid, exiting ones included, and the connections they hold:
 * a broker that says it exits (the user can make it say anything) still
 * counts until it is reaped. */
static void uid_totals(uid_t uid, size_t *ret_brokers, uint32_t *ret_conns) {
        size_t n = 0;
        uint32_t c = 0;
        for (size_t i = 0; i < BROKERS_MAX; i++)
                if (brokers[i].pid > 0 && brokers[i].uid == uid) {
                        n++;
                        c += brokers[i].conns;
                }
        *ret_brokers = n;
        *ret_conns = c;
}

static struct broker *broker_find(uid_t uid) {
        for (size_t i = 0; i < BROKERS_MAX; i++)
                if (brokers[i].pid > 0 && brokers[i].uid == uid && !brokers[i].exiting)
                        return &brokers[i];
        return NULL;
}

static struct restarts *restarts_of(uid_t uid, bool create) {
        struct restarts *free_slot = NULL;
        for (size_t i = 0; i < BROKERS_MAX; i++) {
                if (restarts[i].count > 0 && restarts[i].uid == uid)
                        return &restarts[i];
                if (!free_slot && restarts[i].count == 0)
                        free_slot = &restarts[i];
        }
        if (!create || !free_slot)
                return NULL;
        *free_slot = (struct restarts) { .uid = uid, .window_start = (time_t) mono_sec() };
        return free_slot;
}

static bool crash_looping(uid_t uid) {
        struct restarts *r = restarts_of(uid, false);
        if (!r)
                return false;
        if (mono_sec() - (uint64_t) r->window_start > RESTART_WINDOW_SEC) {
                r->count = 0;
                return false;
        }
        return r->count >= RESTARTS_MAX;
}

/* In the forked child: become the user, for good, then re-execute. */
_noreturn_ static void broker_exec(const struct master_options *o, const struct passwd *pw, int ctl, int page,
                                   pid_t master) {
        char name[64], uidarg[32];
        char *argv[8];
        size_t k = 0;

        /* The master blocks these for its signalfd; the mask survives
         * execve(), and a broker that never sees SIGCHLD never reaps. */
        sigset_t none;
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        /* Out of the way first (either may sit on the other's number), then
         * into place: dup2() to a different number clears close-on-exec. */
        int c = fcntl(ctl, F_DUPFD_CLOEXEC, MASTER_PAGE_FD + 1), p = fcntl(page, F_DUPFD_CLOEXEC, MASTER_PAGE_FD + 1);
        if (c < 0 || p < 0 || dup2(c, MASTER_BROKER_FD) < 0 || dup2(p, MASTER_PAGE_FD) < 0)
                _exit(126);
        (void) syscall(SYS_close_range, MASTER_PAGE_FD + 1, ~0U, 0);
        /* Only now, with nothing above fd 4 left: lowered earlier, the
         * dups above could not find a free descriptor under the limit. */
        if (nofile_start.rlim_cur > 0)
                (void) setrlimit(RLIMIT_NOFILE, &nofile_start);

        /* setgroups(initgroups), setgid, setuid; then no capability in any
         * set, bounding and ambient included. */
        capng_clear(CAPNG_SELECT_ALL);
        if (capng_change_id((int) pw->pw_uid, (int) pw->pw_gid,
                            CAPNG_DROP_SUPP_GRP | CAPNG_INIT_SUPP_GRP | CAPNG_CLEAR_BOUNDING |
                                    CAPNG_CLEAR_AMBIENT) < 0)
                _exit(126);
        if (getuid() != pw->pw_uid || geteuid() != pw->pw_uid || getgid() != pw->pw_gid)
                _exit(126);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(126);
        /* After the uid change, which clears it; and if the master is
         * already gone, so are we. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != master)
                _exit(126);

        (void) snprintf(name, sizeof name, "toolsd: broker uid=%u", (unsigned) pw->pw_uid);
        (void) snprintf(uidarg, sizeof uidarg, "%u", (unsigned) pw->pw_uid);
        argv[k++] = name;
        argv[k++] = (char *) "--broker";
        argv[k++] = uidarg;
        if (o->config_path) {
                argv[k++] = (char *) "--config";
                argv[k++] = (char *) o->config_path;
        }
        argv[k] = NULL;

        char home[4200], user[300], logname[300];
        (void) snprintf(home, sizeof home, "HOME=%s", pw->pw_dir);
        (void) snprintf(user, sizeof user, "USER=%s", pw->pw_name);
        (void) snprintf(logname, sizeof logname, "LOGNAME=%s", pw->pw_name);
        char *envp[8] = { home, user, logname, (char *) "PATH=/usr/local/bin:/usr/bin:/bin" };
        size_t e = 4;
        static char journal[128], require[64], level[64];
        const char *v;
        if ((v = getenv("JOURNAL_STREAM")) && strlen(v) < 100) {
                (void) snprintf(journal, sizeof journal, "JOURNAL_STREAM=%s", v);
                envp[e++] = journal;
        }
        if ((v = getenv("MODULATIO_REQUIRE_SANDBOX")) && strlen(v) < 32) {
                (void) snprintf(require, sizeof require, "MODULATIO_REQUIRE_SANDBOX=%s", v);
                envp[e++] = require;
        }
        if ((v = getenv("TOOLSD_LOG_LEVEL")) && strlen(v) < 32) {
                (void) snprintf(level, sizeof level, "TOOLSD_LOG_LEVEL=%s", v);
                envp[e++] = level;
        }
        envp[e] = NULL;

        /* A fresh address space: nothing of the master's memory survives. */
        execve(o->self_exe, argv, envp);
        _exit(127);
}

/* A fixed-size page the broker can write and never grow or shrink (so a
 * broker cannot use it to take memory), nor unseal. */
static int page_new(void) {
        _cleanup_close_ int fd = memfd_create("toolsd-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || ftruncate(fd, STATUS_PAGE_SIZE) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static int send_msg(int ctl, const struct master_msg *m, const int *fds, size_t n_fds) {
        char cbuf[CMSG_SPACE(2 * sizeof(int))] = {};
        struct iovec iov = { (void *) m, sizeof *m };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = CMSG_SPACE(n_fds * sizeof(int)) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        if (n_fds == 0 || n_fds > 2)
                return -EINVAL;
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
        return sendmsg(ctl, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -errno : 0;
}

/* The broker serving uid 0 (not one on its way out), or NULL. */
static struct broker *root_broker(void) {
        for (size_t i = 0; i < BROKERS_MAX; i++)
                if (brokers[i].pid > 0 && brokers[i].uid == 0 && !brokers[i].exiting && brokers[i].ctl >= 0)
                        return &brokers[i];
        return NULL;
}

/* Gives root's broker every page it does not have yet, page and pidfd in
 * one message. Stops at a full socket; the poll loop waits for POLLOUT on
 * root's control socket while any is pending (pages_pending()), so a
 * page is never lost to a busy root broker. */
static void pages_flush(void) {
        struct broker *r = root_broker();
        if (!r)
                return;
        for (size_t i = 0; i < BROKERS_MAX; i++) {
                struct broker *b = &brokers[i];
                if (b->pid <= 0 || !b->page_pending)
                        continue;
                struct master_msg m = { MASTER_MSG_PAGE, b->uid, b->pid };
                int fds[2] = { b->page, b->pidfd };
                int k = send_msg(r->ctl, &m, fds, 2);
                if (k == -EAGAIN)
                        return;
                if (k < 0)
                        log_warning("master: cannot give root's broker the page of uid=%u: %s", (unsigned) b->uid,
                                    strerror(-k));
                b->page_pending = false;
        }
}

static bool pages_pending(void) {
        for (size_t i = 0; i < BROKERS_MAX; i++)
                if (brokers[i].pid > 0 && brokers[i].page_pending)
                        return true;
        return false;
}

/* NULL with errno set: ENOENT (no passwd entry), EUSERS (no free slot),
 * EMFILE/ENFILE (out of descriptors), or what fork() said. */
static struct broker *broker_start(const struct master_options *o, uid_t uid) {
        struct passwd pw, *res = NULL;
        char buf[16384];
        int sv[2];

        /* A uid with no passwd entry is nobody we can run as; a lookup
         * that failed (out of descriptors, say) is not "no entry". */
        /* NSS opens files: out of descriptors it reports "no entry"
         * like a missing user, so the reserve makes room for it. */
        closep(&reserve_fd);
        int lookup = getpwuid_r(uid, &pw, buf, sizeof buf, &res);
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (lookup != 0 && lookup != ENOENT && lookup != ESRCH) {
                log_warning("master: cannot look up uid=%u: %s", (unsigned) uid, strerror(lookup));
                errno = lookup;
                return NULL;
        }
        if (!res) {
                log_warning("master: refused uid=%u: no passwd entry", (unsigned) uid);
                errno = ENOENT;
                return NULL;
        }
        struct broker *b = NULL;
        for (size_t i = 0; i < BROKERS_MAX && !b; i++)
                if (brokers[i].pid == 0)
                        b = &brokers[i];
        if (!b) {
                errno = EUSERS;
                return NULL;
        }
        _cleanup_close_ int page = page_new();
        if (page < 0) {
                log_warning("master: cannot create a status page for uid=%u: %s", (unsigned) uid, strerror(-page));
                errno = -page;
                return NULL;
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                int e = errno;
                log_warning("master: cannot start a broker for uid=%u: socketpair: %s", (unsigned) uid, strerror(e));
                errno = e;
                return NULL;
        }

        pid_t master = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                close(sv[0]);
                close(sv[1]);
                errno = e;
                return NULL;
        }
        if (pid == 0)
                broker_exec(o, &pw, sv[1], page, master);
        close(sv[1]);
        /* Our child, not yet reaped: the pid cannot have been reused. */
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                log_warning("master: no pidfd for broker pid=%d: %m; root's view will not show uid=%u", (int) pid,
                            (unsigned) uid);
        *b = (struct broker) { .uid = uid, .pid = pid, .ctl = sv[0], .page = TAKE_FD(page), .pidfd = pidfd,
                               .page_pending = uid != 0 && pidfd >= 0 };
        log_info("master: started broker pid=%d for uid=%u (%s)", (int) pid, (unsigned) uid, pw.pw_name);
        /* A new root broker gets every live page (after the connection
         * that started it: master_on_accept flushes once it is handed). */
        if (uid == 0)
                for (size_t i = 0; i < BROKERS_MAX; i++)
                        if (brokers[i].pid > 0 && brokers[i].uid != 0 && brokers[i].pidfd >= 0)
                                brokers[i].page_pending = true;
        return b;
}

/* Hands the connection over; the broker checks SO_PEERCRED itself too. */
static int broker_send(struct broker *b, int fd, const struct ucred *cred) {
        struct master_msg m = { MASTER_MSG_CONN, cred->uid, cred->pid };
        return send_msg(b->ctl, &m, &fd, 1);
}

static uint64_t mono_usec(void);

static void master_on_accept(const struct master_options *o, int lfd) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        const struct toolsd_config *cfg = o->config;

        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && reserve_fd < 0) {
                log_warning("master: out of file descriptors; not accepting until a broker ends");
                accept_paused = true;
                return;
        }
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
                struct rlimit rl = {};
                (void) getrlimit(RLIMIT_NOFILE, &rl);
                log_warning("master: out of file descriptors (limit %llu); refusing a connection",
                            (unsigned long long) rl.rlim_cur);
                closep(&reserve_fd);
                fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd >= 0)
                        refuse(fd, "io.toolsd.LimitExceeded", "open_files", rl.rlim_cur);
                reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                return;
        }
        if (fd < 0)
                return;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred) {
                close(fd);
                return;
        }
        if (n_conns_total >= cfg->max_connections)
                return refuse(fd, "io.toolsd.LimitExceeded", "connections", cfg->max_connections);
        if (crash_looping(cred.uid)) {
                log_warning("master: refused uid=%u: its broker keeps failing", (unsigned) cred.uid);
                return refuse(fd, "io.toolsd.LimitExceeded", "broker_restarts", RESTARTS_MAX);
        }

        struct broker *b = broker_find(cred.uid);
        size_t nb;
        uint32_t nc;
        uid_totals(cred.uid, &nb, &nc);
        if (nc >= cfg->max_connections_per_uid) {
                log_warning("master: refused uid=%u: %u connections", (unsigned) cred.uid, nc);
                return refuse(fd, "io.toolsd.LimitExceeded", "connections_per_user", cfg->max_connections_per_uid);
        }
        if (!b && nb >= BROKERS_PER_UID_MAX) {
                log_warning("master: refused uid=%u: its previous broker has not exited yet", (unsigned) cred.uid);
                return refuse(fd, "io.toolsd.LimitExceeded", "brokers_per_user", BROKERS_PER_UID_MAX);
        }
        if (!b && !(b = broker_start(o, cred.uid))) {
                if (errno == EMFILE || errno == ENFILE) {
                        struct rlimit rl = {};
                        (void) getrlimit(RLIMIT_NOFILE, &rl);
                        return refuse(fd, "io.toolsd.LimitExceeded", "open_files", rl.rlim_cur);
                }
                return refuse(fd, "org.varlink.service.PermissionDenied", NULL, 0);
        }

        int r = broker_send(b, fd, &cred);
        if (r < 0 && r != -EAGAIN) {
                /* The broker died and is not reaped yet: retire it and hand
                 * the connection to a fresh one. */
                log_warning("master: cannot hand a connection to broker pid=%d: %s; starting another",
                            (int) b->pid, strerror(-r));
                b->exiting = true;
                b->kill_at_usec = mono_usec() + EXIT_GRACE_USEC;
                closep(&b->ctl);
                uid_totals(cred.uid, &nb, &nc);
                b = nb < BROKERS_PER_UID_MAX ? broker_start(o, cred.uid) : NULL;
                r = b ? broker_send(b, fd, &cred) : -EBUSY;
        }
        if (r < 0) {
                log_warning("master: cannot hand a connection over for uid=%u: %s", (unsigned) cred.uid,
                            strerror(-r));
                return refuse(fd, "io.toolsd.LimitExceeded", "broker_busy", 0);
        }
        b->conns++;
        n_conns_total++;
        close(fd);
        pages_flush();
}

/* One byte per message: 'c' a connection closed, 'x' I want to exit. */
static void master_on_broker(struct broker *b) {
        char m[16];
        ssize_t n = recv(b->ctl, m, sizeof m, MSG_DONTWAIT);

        if (n == 1 && m[0] == 'c' && b->conns > 0) {
                b->conns--;
                n_conns_total--;
        } else if ((n == 1 && m[0] == 'x') || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                /* Exiting, gone, or a broken channel (which would keep
                 * poll() waking): new connections go to a new broker.
                 * Its connections stay counted until it is reaped, and it
                 * gets a few seconds to end. */
                b->exiting = true;
                b->kill_at_usec = mono_usec() + EXIT_GRACE_USEC;
                closep(&b->ctl);
        }
}

static void master_reap(void) {
        int ws;
        pid_t pid;

        while ((pid = waitpid(-1, &ws, WNOHANG)) > 0)
                for (size_t i = 0; i < BROKERS_MAX; i++) {
                        struct broker *b = &brokers[i];
                        if (b->pid != pid)
                                continue;
                        bool clean = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
                        if (clean)
                                log_info("master: broker pid=%d uid=%u exited", (int) pid, (unsigned) b->uid);
                        else if (WIFSIGNALED(ws))
                                log_warning("master: broker pid=%d uid=%u killed by signal %d", (int) pid,
                                            (unsigned) b->uid, WTERMSIG(ws));
                        else
                                log_warning("master: broker pid=%d uid=%u failed with status %d", (int) pid,
                                            (unsigned) b->uid, WEXITSTATUS(ws));
                        if (!clean) {
                                struct restarts *r = restarts_of(b->uid, true);
                                if (r)
                                        r->count++;
                        }
                        n_conns_total -= MIN(n_conns_total, b->conns);
                        closep(&b->ctl);
                        /* Root's broker sees the end on its own pidfd. */
                        closep(&b->page);
                        closep(&b->pidfd);
                        *b = (struct broker) { .ctl = -1, .page = -1, .pidfd = -1 };
                        if (reserve_fd < 0)
                                reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                        accept_paused = reserve_fd < 0;
                }
}

int master_drop_privileges(void) {
        capng_clear(CAPNG_SELECT_ALL);
        if (capng_updatev(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET, CAP_SETUID, CAP_SETGID,
                          CAP_KILL, CAP_SETPCAP, -1) < 0)
                return -EINVAL;
        if (capng_apply(CAPNG_SELECT_ALL) < 0)
                return -EPERM;
        return 0;
}

static size_t n_live_brokers(void) {
        size_t n = 0;
        for (size_t i = 0; i < BROKERS_MAX; i++)
                n += brokers[i].pid > 0;
        return n;
}

static uint64_t mono_usec(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* Sends WATCHDOG=1 when due; returns poll()'s timeout until the next one
 * (-1: no watchdog). A master stuck anywhere in its loop stops pinging. */
static int watchdog_ping(uint64_t wd_usec, uint64_t *next) {
        if (wd_usec == 0)
                return -1;
        uint64_t now = mono_usec(), every = MAX(wd_usec / 2, 1000u);
        if (now >= *next) {
                (void) sd_notify(false, "WATCHDOG=1");
                *next = now + every;
        }
        return (int) MIN((*next - now + 999u) / 1000u, (uint64_t) INT32_MAX);
}

int master_run(const struct master_options *o, int listen_fd) {
        sigset_t mask;
        struct pollfd pfd[2 + BROKERS_MAX];
        struct broker *slot[2 + BROKERS_MAX];
        bool stopping = false;

        for (size_t i = 0; i < BROKERS_MAX; i++)
                brokers[i].ctl = brokers[i].page = brokers[i].pidfd = -1;
        /* Up to three descriptors per broker (control socket, page, pidfd)
         * and the connections in flight: raise the soft limit to the hard
         * one (poll(), not select(), so a large limit is fine). */
        (void) getrlimit(RLIMIT_NOFILE, &nofile_start);
        struct rlimit raised = { nofile_start.rlim_max, nofile_start.rlim_max };
        if (nofile_start.rlim_cur < nofile_start.rlim_max && setrlimit(RLIMIT_NOFILE, &raised) < 0)
                log_warning("master: cannot raise the open file limit: %m");
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        _cleanup_close_ int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                return log_error_errno(errno, "master: signalfd: %m");

        /* Watchdog: ping at half the period; poll() wakes up for it. */
        uint64_t wd_usec = 0, next_ping = 0;
        if (sd_watchdog_enabled(false, &wd_usec) <= 0)
                wd_usec = 0;
        size_t told_brokers = 0;
        uint32_t told_conns = 0;
        (void) sd_notify(false, "READY=1\nSTATUS=master: 0 brokers, 0 connections");
        for (;;) {
                size_t n = 0;
                pfd[n++] = (struct pollfd) { sfd, POLLIN, 0 };
                bool accepting = !stopping && !accept_paused;
                if (accepting)
                        pfd[n++] = (struct pollfd) { listen_fd, POLLIN, 0 };
                struct broker *root = pages_pending() ? root_broker() : NULL;
                for (size_t i = 0; i < BROKERS_MAX; i++)
                        if (brokers[i].pid > 0 && brokers[i].ctl >= 0) {
                                slot[n] = &brokers[i];
                                pfd[n++] = (struct pollfd) { brokers[i].ctl,
                                                             POLLIN | (&brokers[i] == root ? POLLOUT : 0), 0 };
                        }
                if (stopping && n_live_brokers() == 0)
                        break;
                size_t first = accepting ? 2 : 1;
                int timeout = watchdog_ping(wd_usec, &next_ping);
                uint64_t now = mono_usec();
                for (size_t i = 0; i < BROKERS_MAX; i++) {
                        struct broker *b = &brokers[i];
                        if (b->pid <= 0 || !b->exiting)
                                continue;
                        if (now >= b->kill_at_usec) {
                                log_warning("master: broker pid=%d uid=%u said it exits and did not; killing it",
                                            (int) b->pid, (unsigned) b->uid);
                                (void) kill(b->pid, SIGKILL);
                                b->kill_at_usec = UINT64_MAX;
                        } else if (b->kill_at_usec != UINT64_MAX) {
                                int left = (int) MIN((b->kill_at_usec - now + 999u) / 1000u, (uint64_t) INT32_MAX);
                                timeout = timeout < 0 ? left : MIN(timeout, left);
                        }
                }
                if (poll(pfd, n, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "master: poll: %m");
                }
                if (pfd[0].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si) {
                                if (si.ssi_signo == SIGCHLD)
                                        continue;
                                if (!stopping) {
                                        log_info("master: shutting down");
                                        (void) sd_notify(false, "STOPPING=1");
                                        stopping = true;
                                        for (size_t i = 0; i < BROKERS_MAX; i++)
                                                if (brokers[i].pid > 0)
                                                        (void) kill(brokers[i].pid, SIGTERM);
                                }
                        }
                        master_reap();
                }
                for (size_t i = first; i < n; i++) {
                        if (pfd[i].revents & POLLOUT)
                                pages_flush();
                        if (pfd[i].revents & ~POLLOUT)
                                master_on_broker(slot[i]);
                }
                if (accepting && !stopping && (pfd[1].revents & POLLIN))
                        master_on_accept(o, listen_fd);
                /* Only changes: sd_notify() blocks when the manager's
                 * queue is full, and the master must not. */
                size_t nb = n_live_brokers();
                if (nb != told_brokers || n_conns_total != told_conns) {
                        told_brokers = nb;
                        told_conns = n_conns_total;
                        (void) sd_notifyf(false, "STATUS=master: %zu brokers, %u connections", nb, n_conns_total);
                }
        }
        return 0;
}
