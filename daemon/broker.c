/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The broker's side of system mode: connections arrive from the master over
 * the control socket (fd 3) with SCM_RIGHTS; the broker tells the master
 * when one closes and when it wants to exit.
 *
 * Runs as the peer's uid with no capabilities and no_new_privs, re-executed
 * by the master. Whatever the master sends is checked again here: the fd
 * must be a stream socket whose SO_PEERCRED is this broker's user.
 *
 * Each broker publishes a summary of its sessions on its status page
 * (status_page.h, fd 4 from the master). Root's broker also receives every
 * other broker's page and reads them, read-only, for ListSessions/Status
 * with all_users: text another user wrote, parsed by status_page_parse().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "master.h"
#include "status_page.h"

/* More than the master ever runs at once (1024, two per uid at most). */
#define PEERS_MAX 2048

/* At most this much page text goes into one ListSessions reply (which
 * must stay under the Varlink message limit); the users past it are listed
 * as incomplete. */
#define VIEW_TEXT_BUDGET (8u * 1024u * 1024u)

struct peer_page {
        uid_t uid;
        pid_t pid;
        int pidfd;                      /* readable once the broker has ended */
        const struct status_page *map;  /* read-only, STATUS_PAGE_SIZE */
};

/* A page from the master: a memfd of exactly STATUS_PAGE_SIZE bytes. Maps
 * it (read-write for our own, read-only for a peer's) and closes fd. */
static void *page_map(int fd, bool writable) {
        struct stat st;
        void *m = MAP_FAILED;

        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == (off_t) STATUS_PAGE_SIZE)
                m = mmap(NULL, STATUS_PAGE_SIZE, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
        (void) close(fd);
        return m == MAP_FAILED ? NULL : m;
}

/* Renders our sessions and counts onto our page (server_status_flush). */
static void page_publish(struct server *s) {
        struct status_doc d;
        struct status_counts c = { .sessions = s->n_sessions, .running_calls = s->n_calls, .connections = s->n_conns };
        size_t b = 0, len;

        status_doc_begin(&d, s->page_text, STATUS_PAGE_TEXT_MAX);
        for (struct session *x = NULL; (x = session_next(s, &b, x));) {
                struct status_entry e = {
                        .session = x->id,
                        .skill = x->skill,
                        .profile = profile_name(x->profile),
                        .artifacts_root = x->root_path,
                        .task_id = x->task_id,
                        .run_id = x->run_id,
                        .role = x->role,
                        .sandboxed = x->sandboxed,
                        .network = x->network,
                        .running_calls = x->running,
                        .created_usec = x->created_usec,
                        .used_usec = x->used_usec,
                };
                if (!status_doc_add(&d, &e) && d.full)
                        break;
        }
        if (status_doc_end(&d, &c, &len) == 0)
                status_page_publish(s->page, s->page_text, len);
}

static void page_on_prepare(uv_prepare_t *h) {
        server_status_flush(h->data);
}

static void peer_drop(struct server *s, size_t i) {
        (void) munmap((void *) s->peers[i].map, STATUS_PAGE_SIZE);
        (void) close(s->peers[i].pidfd);
        s->peers[i] = s->peers[--s->n_peers];
}

/* The master's pidfd says it, not the page (whose user could write
 * anything there): readable once the broker has exited. */
static bool peer_ended(const struct peer_page *p) {
        struct pollfd pfd = { p->pidfd, POLLIN, 0 };
        return poll(&pfd, 1, 0) > 0;
}

static void peers_prune(struct server *s) {
        for (size_t i = 0; i < s->n_peers;)
                if (peer_ended(&s->peers[i]))
                        peer_drop(s, i);
                else
                        i++;
}

static void peer_add(struct server *s, const struct master_msg *m, int page_fd, int pidfd) {
        /* Every arrival drops the ended ones: a user who restarts their
         * broker again and again leaves nothing behind here. */
        peers_prune(s);
        if (s->uid != 0 || s->n_peers >= PEERS_MAX ||
            (!s->page_text && !(s->page_text = malloc(STATUS_PAGE_TEXT_MAX))) ||
            (!s->peers && !(s->peers = calloc(PEERS_MAX, sizeof *s->peers)))) {
                (void) close(page_fd);
                (void) close(pidfd);
                return;
        }
        const struct status_page *map = page_map(page_fd, false);
        if (!map) {
                log_warning("broker: the status page of uid=%u is not one", (unsigned) m->uid);
                (void) close(pidfd);
                return;
        }
        s->peers[s->n_peers++] = (struct peer_page) { .uid = m->uid, .pid = m->pid, .pidfd = pidfd, .map = map };
}

void broker_peer_view(struct server *s, struct json_object *sessions, struct json_object *users,
                      struct json_object *incomplete) {
        uint64_t now = now_usec();
        size_t budget = VIEW_TEXT_BUDGET;

        peers_prune(s);
        for (size_t i = 0; i < s->n_peers; i++) {
                struct peer_page *p = &s->peers[i];
                struct status_counts c = {};
                size_t len;
                int r = status_page_snapshot(p->map, s->page_text, STATUS_PAGE_TEXT_MAX, &len);
                if (r == 0 && sessions && len > budget)
                        r = -E2BIG;     /* the reply would outgrow a Varlink message */
                else if (r == 0 && sessions)
                        budget -= len;
                if (r == 0) {
                        _cleanup_json_ struct json_object *list = json_object_new_array();
                        r = list ? status_page_parse(s->page_text, len, p->uid, now, list, &c) : -ENOMEM;
                        for (size_t k = 0; r == 0 && sessions && k < json_object_array_length(list); k++)
                                (void) json_object_array_add(sessions,
                                                             json_object_get(json_object_array_get_idx(list, k)));
                }
                if (r < 0 && r != -ENODATA)
                        log_warning("broker: cannot read the status page of uid=%u pid=%d: %s", (unsigned) p->uid,
                                    (int) p->pid, strerror(-r));
                if ((r < 0 && r != -ENODATA) || c.truncated)
                        if (incomplete)
                                (void) json_object_array_add(incomplete, json_object_new_int64(p->uid));
                if (users) {
                        struct json_object *u = json_object_new_object();
                        (void) json_object_object_add(u, "uid", json_object_new_int64(p->uid));
                        (void) json_object_object_add(u, "broker_pid", json_object_new_int64(p->pid));
                        (void) json_object_object_add(u, "sessions", json_object_new_int64(c.sessions));
                        (void) json_object_object_add(u, "running_calls", json_object_new_int64(c.running_calls));
                        (void) json_object_object_add(u, "connections", json_object_new_int64(c.connections));
                        (void) json_object_object_add(u, "complete",
                                                      json_object_new_boolean((r == 0 || r == -ENODATA) &&
                                                                              !c.truncated));
                        (void) json_object_array_add(users, u);
                }
        }
}

static void broker_tell(struct server *s, char what) {
        if (s->ctl_open)
                (void) send(s->ctl_fd, &what, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void broker_on_conn_closed(struct server *s) {
        broker_tell(s, 'c');
}

static bool broker_idle(const struct server *s) {
        return s->n_conns == 0 && s->n_sessions == 0 && s->n_calls == 0;
}

static void broker_ctl_close(struct server *s) {
        if (!s->ctl_open)
                return;
        s->ctl_open = false;
        uv_close((uv_handle_t *) &s->ctl_poll, NULL);
        (void) close(s->ctl_fd);
        s->ctl_fd = -1;
}

void broker_done(struct server *s) {
        broker_ctl_close(s);
        if (s->page_prepare_on) {
                s->page_prepare_on = false;
                uv_close((uv_handle_t *) &s->page_prepare, NULL);
        }
}

void broker_free(struct server *s) {
        s->on_status = NULL;
        while (s->n_peers > 0)
                peer_drop(s, 0);
        free(s->peers);
        s->peers = NULL;
        if (s->page)
                (void) munmap(s->page, STATUS_PAGE_SIZE);
        s->page = NULL;
        free(s->page_text);
        s->page_text = NULL;
}

static void broker_receive(struct server *s) {
        for (;;) {
                struct master_msg m = {};
                char cbuf[CMSG_SPACE(sizeof(int) * 4)];
                struct iovec iov = { &m, sizeof m };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof cbuf };
                ssize_t n = recvmsg(s->ctl_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0) {
                        /* The master closed our channel (we asked to exit, or
                         * it is going away): serve what we hold, then end. */
                        log_info("broker: the master closed the control socket");
                        broker_ctl_close(s);
                        if (broker_idle(s) || s->exit_asked)
                                server_shutdown(s);
                        return;
                }
                /* The master sends one message per datagram with its
                 * descriptors: CONN with one, PAGE with two. */
                int fds[4];
                size_t nfd = 0;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                                continue;
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < k; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                                if (nfd < ELEMENTSOF(fds))
                                        fds[nfd++] = fd;
                                else
                                        (void) close(fd);
                        }
                }
                bool whole = n == (ssize_t) sizeof m && !(mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC));
                if (whole && m.type == MASTER_MSG_CONN && nfd == 1) {
                        /* A connection that arrives after we asked to exit
                         * is served all the same. */
                        s->exit_asked = false;
                        if (server_adopt(s, fds[0]) < 0)
                                broker_tell(s, 'c');
                        continue;
                }
                if (whole && m.type == MASTER_MSG_PAGE && nfd == 2) {
                        peer_add(s, &m, fds[0], fds[1]);
                        continue;
                }
                /* Cut short (we are out of descriptors) or not a message
                 * of the master's: close what came; a connection the
                 * master counted is uncounted. */
                log_warning("broker: a control message (type %u, %zu fds%s) could not be taken whole", m.type, nfd,
                            mh.msg_flags & MSG_CTRUNC ? ", descriptors cut" : "");
                for (size_t i = 0; i < nfd; i++)
                        (void) close(fds[i]);
                if (m.type == MASTER_MSG_CONN)
                        broker_tell(s, 'c');
        }
}

static void broker_on_ctl(uv_poll_t *h, int status, int events) {
        struct server *s = h->data;
        if (status < 0) {
                broker_ctl_close(s);
                return;
        }
        broker_receive(s);
}

struct status_page *broker_page_take(int fd) {
        struct stat st;

        /* Only a sealed memfd of the page's size; anything else at fd is
         * left alone. */
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t) STATUS_PAGE_SIZE ||
            fcntl(fd, F_GET_SEALS) < 0)
                return NULL;
        return page_map(fd, true);
}

int broker_init(struct server *s, int ctl_fd) {
        s->ctl_fd = ctl_fd;
        s->on_conn_closed = broker_on_conn_closed;
        s->mode = "system";
        s->idle_since_usec = now_usec();

        /* Our page (main() took it); a broker started by hand has none and
         * is served all the same, only root's view does not show it. */
        if (!s->page)
                log_warning("broker: no status page at fd %d; root's view will not show us", MASTER_PAGE_FD);
        else if (!(s->page_text = malloc(STATUS_PAGE_TEXT_MAX)))
                return -ENOMEM;
        /* Root's broker holds a pidfd per other broker (up to 1024 of
         * them) besides its connections. */
        struct rlimit rl;
        if (s->uid == 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < MIN(rl.rlim_max, (rlim_t) 8192)) {
                rl.rlim_cur = MIN(rl.rlim_max, (rlim_t) 8192);
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (s->page) {
                s->on_status = page_publish;
                s->status_dirty = true;
                int r = uv_prepare_init(s->loop, &s->page_prepare);
                if (r < 0)
                        return r;
                s->page_prepare.data = s;
                s->page_prepare_on = true;
                (void) uv_prepare_start(&s->page_prepare, page_on_prepare);
        }
        int r = uv_poll_init(s->loop, &s->ctl_poll, ctl_fd);
        if (r < 0)
                return r;
        s->ctl_poll.data = s;
        s->ctl_open = true;
        return uv_poll_start(&s->ctl_poll, UV_READABLE | UV_DISCONNECT, broker_on_ctl);
}

/* Idle for BrokerIdleTimeoutSec: ask the master to send nothing more; it
 * closes the channel, and we end (see broker_receive). */
void broker_on_idle_timer(struct server *s, uint64_t now) {
        if (!broker_idle(s)) {
                s->idle_since_usec = now;
                return;
        }
        if (!s->ctl_open) {
                server_shutdown(s);
                return;
        }
        if (!s->exit_asked && now - s->idle_since_usec >= (uint64_t) s->config->broker_idle_timeout_sec * 1000000u) {
                log_info("broker: idle for %u s, exiting", s->config->broker_idle_timeout_sec);
                s->exit_asked = true;
                broker_tell(s, 'x');
        }
}
