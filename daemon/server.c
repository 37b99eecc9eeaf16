/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The listener and the connections: accept, SO_PEERCRED, per-uid limits,
 * NUL framing, replies in call order, back-pressure, hang-up.
 *
 * Runs in the broker (user mode: the whole daemon) as the serving uid with no
 * capabilities it needs. Every byte read here is the peer's: it goes through
 * the bounded varlink_reader and varlink_call_parse before anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#include "log.h"

#define READ_CHUNK (64u * 1024u)
/* Replies a client has not read yet, past which streamed output pauses. */
#define WRITE_HIGH_WATER (4u * 1024u * 1024u)
#define WRITE_LOW_WATER (1u * 1024u * 1024u)

struct write_req {
        uv_write_t req;
        struct conn *conn;
        char *buf;
        size_t len;
};

static void conn_process(struct conn *c);
static void conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void conn_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

struct uid_count *server_uid_count(struct server *s, uid_t uid, bool create) {
        for (size_t i = 0; i < s->n_uids; i++)
                if (s->uids[i].uid == uid)
                        return &s->uids[i];
        if (!create)
                return NULL;
        if (s->n_uids == s->cap_uids) {
                size_t cap = s->cap_uids ? s->cap_uids * 2 : 8;
                struct uid_count *n = reallocarray(s->uids, cap, sizeof *n);
                if (!n)
                        return NULL;
                s->uids = n;
                s->cap_uids = cap;
        }
        s->uids[s->n_uids] = (struct uid_count) { .uid = uid };
        return &s->uids[s->n_uids++];
}

bool conn_congested(const struct conn *c) {
        return c->write_queued > WRITE_HIGH_WATER;
}

static void conn_on_write(uv_write_t *req, int status) {
        struct write_req *w = req->data;
        struct conn *c = w->conn;

        c->write_queued -= w->len;
        free(w->buf);
        free(w);
        if (status < 0 && status != UV_ECANCELED)
                log_debug("connection uid=%u: write failed: %s", (unsigned) c->uid, uv_strerror(status));
        if (c->call && c->call->worker && c->write_queued < WRITE_LOW_WATER)
                worker_pause(c->call->worker, false);
        /* The client caught up: read and answer its calls again. */
        if (!c->closing && c->write_queued < WRITE_LOW_WATER) {
                int r = uv_read_start((uv_stream_t *) &c->pipe, conn_on_alloc, conn_on_read);
                if (r < 0 && r != UV_EALREADY)
                        return conn_close(c, uv_strerror(r));
                conn_process(c);
        }
}

/* Takes buf. */
static void conn_send(struct conn *c, char *buf, size_t len) {
        if (c->closing) {
                free(buf);
                return;
        }
        struct write_req *w = malloc(sizeof *w);
        if (!w) {
                free(buf);
                conn_close(c, "out of memory");
                return;
        }
        *w = (struct write_req) { .conn = c, .buf = buf, .len = len };
        w->req.data = w;
        /* What a reply tells of (a session opened, a call ended) is on the
         * status page before the client can read the reply. */
        server_status_flush(c->server);
        uv_buf_t b = uv_buf_init(buf, (unsigned) len);
        int r = uv_write(&w->req, (uv_stream_t *) &c->pipe, &b, 1, conn_on_write);
        if (r < 0) {
                free(buf);
                free(w);
                conn_close(c, "write failed");
                return;
        }
        c->write_queued += len;
}

void conn_reply(struct conn *c, struct json_object *params) {
        char *buf;
        size_t len;

        if (c->cur_oneway)
                return;
        if (varlink_reply_build(params, false, &buf, &len) < 0)
                return conn_close(c, "cannot build reply");
        conn_send(c, buf, len);
}

void conn_reply_continues(struct conn *c, struct json_object *params) {
        char *buf;
        size_t len;

        if (c->cur_oneway || !c->cur_more)
                return;
        if (varlink_reply_build(params, true, &buf, &len) < 0)
                return conn_close(c, "cannot build reply");
        conn_send(c, buf, len);
}

void conn_error(struct conn *c, const char *error, struct json_object *params) {
        char *buf;
        size_t len;

        if (c->cur_oneway)
                return;
        if (varlink_error_build(error, params, &buf, &len) < 0)
                return conn_close(c, "cannot build reply");
        conn_send(c, buf, len);
}

static void conn_on_close(uv_handle_t *h) {
        struct conn *c = h->data;
        struct server *s = c->server;
        struct uid_count *u = server_uid_count(s, c->uid, false);

        if (u && u->connections > 0)
                u->connections--;
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_conns--;
        server_status_changed(s);
        varlink_reader_done(&c->reader);
        free(c);
        if (s->on_conn_closed)
                s->on_conn_closed(s);
}

static void conn_on_shutdown(uv_shutdown_t *req, int status) {
        struct conn *c = req->data;
        free(req);
        uv_close((uv_handle_t *) &c->pipe, conn_on_close);
}

void conn_close(struct conn *c, const char *why) {
        if (c->closing)
                return;
        c->closing = true;
        if (why)
                log_debug("connection uid=%u pid=%d closed: %s", (unsigned) c->uid, (int) c->pid, why);
        (void) uv_read_stop((uv_stream_t *) &c->pipe);

        /* A client that hangs up cancels its call; the call outlives us. */
        if (c->call) {
                struct call *call = c->call;
                c->call = NULL;
                call->conn = NULL;
                call_cancel(call, "cancelled");
        }

        /* Flush a small final error (limit, malformed message) before
         * closing; a client that reads nothing is not waited for. */
        if (c->write_queued > 0 && c->write_queued < 64 * 1024) {
                uv_shutdown_t *req = malloc(sizeof *req);
                if (req) {
                        req->data = c;
                        if (uv_shutdown(req, (uv_stream_t *) &c->pipe, conn_on_shutdown) == 0)
                                return;
                        free(req);
                }
        }
        uv_close((uv_handle_t *) &c->pipe, conn_on_close);
}

void conn_call_done(struct conn *c) {
        c->call = NULL;
        c->cur_more = c->cur_oneway = false;
        if (!c->closing)
                conn_process(c);
}

/* Handles every whole message buffered, one call at a time: replies go out
 * in call order, so a pipelined call waits for the one before it. */
static void conn_process(struct conn *c) {
        struct server *s = c->server;

        /* call_finish() of a synchronous tool lands here through
         * conn_call_done() while we are still dispatching: the outer loop
         * goes on, no recursion. */
        if (c->processing)
                return;
        c->processing = true;
        /* A client that does not read its replies gets no more answers, and
         * we stop reading its calls, until it catches up: what it can make
         * us queue stays bounded. */
        while (!c->closing && !c->call && !conn_congested(c)) {
                const char *msg;
                size_t len;
                int r = varlink_reader_next(&c->reader, &msg, &len);
                if (r == 0)
                        break;
                if (r < 0) {
                        conn_close(c, "framing error");
                        break;
                }

                struct varlink_call call;
                r = varlink_call_parse(msg, len, s->config->max_json_depth, &call);
                if (r < 0) {
                        /* The protocol says: close, disturb nothing else. */
                        conn_close(c, "malformed message");
                        break;
                }
                c->cur_more = call.more;
                c->cur_oneway = call.oneway;
                r = methods_dispatch(c, &call);
                varlink_call_done(&call);
                if (r < 0) {
                        conn_close(c, "protocol violation");
                        break;
                }
                if (!c->call)
                        c->cur_more = c->cur_oneway = false;
        }
        if (!c->closing && conn_congested(c))
                (void) uv_read_stop((uv_stream_t *) &c->pipe);
        c->processing = false;
}

static void conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
        static char chunk[READ_CHUNK];
        *buf = uv_buf_init(chunk, sizeof chunk);
}

static void conn_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
        struct conn *c = stream->data;
        struct server *s = c->server;

        if (nread == 0)
                return;
        if (nread < 0)
                return conn_close(c, nread == UV_EOF ? "hang-up" : uv_strerror((int) nread));

        int r = varlink_reader_feed(&c->reader, buf->base, (size_t) nread);
        if (r == -EMSGSIZE || varlink_reader_pending(&c->reader) > s->config->max_message_bytes) {
                /* An oversized message, or a client piling up calls behind
                 * a running one: say why, then close. */
                if (!c->call)
                        error_limit(c, "message_size", s->config->max_message_bytes);
                return conn_close(c, "message too large");
        }
        if (r < 0)
                return conn_close(c, "out of memory");
        conn_process(c);
}

static void conn_refuse(struct conn *c, const char *error, struct json_object *params, const char *why) {
        conn_error(c, error, params);
        conn_close(c, why);
}

static struct conn *conn_new(struct server *s) {
        struct conn *c = calloc(1, sizeof *c);
        if (!c) {
                log_error("accept: out of memory");
                return NULL;
        }
        c->server = s;
        c->pipe.data = c;
        c->uid = (uid_t) -1;
        varlink_reader_init(&c->reader, s->config->max_message_bytes);
        (void) uv_pipe_init(s->loop, &c->pipe, 0);
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        server_status_changed(s);
        return c;
}

/* The peer is who SO_PEERCRED says, read from the connection itself (also
 * in a broker: the master's word is not needed). */
static void conn_start(struct conn *c) {
        struct server *s = c->server;
        struct ucred cred;
        socklen_t len = sizeof cred;
        uv_os_fd_t fd;

        if (uv_fileno((uv_handle_t *) &c->pipe, &fd) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred)
                return conn_close(c, "no peer credentials");
        c->uid = cred.uid;
        c->gid = cred.gid;
        c->pid = cred.pid;

        struct uid_count *u = server_uid_count(s, c->uid, true);
        if (!u)
                return conn_close(c, "out of memory");
        u->connections++;

        /* A daemon serves its own uid only (a broker: its user's), not
         * even root. */
        if (c->uid != s->uid) {
                log_notice("refused connection from uid=%u pid=%d: not the daemon's user",
                           (unsigned) c->uid, (int) c->pid);
                return conn_refuse(c, "org.varlink.service.PermissionDenied", NULL, "foreign uid");
        }
        /* Same uid, but a tool of ours: the sandbox must not be able to
         * call back into toolsd (say, for a sandbox:"off" session). */
        _cleanup_close_ int pidfd = -1;
        socklen_t plen = sizeof pidfd;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &plen) < 0)
                pidfd = -1; /* kernels before 6.5: the pid alone */
        int inside = c->pid > 0 ? supervisor_peer_inside_call(c->pid, pidfd) : -ESRCH;
        if (inside != 0) {
                log_warning("refused connection from pid=%d: %s", (int) c->pid,
                            inside > 0 ? "it runs inside a tool call" : "the peer is gone or cannot be inspected");
                return conn_refuse(c, "org.varlink.service.PermissionDenied", NULL, "peer inside a call");
        }
        if (s->n_conns > s->config->max_connections) {
                log_warning("refused connection from uid=%u: %u connections in total",
                            (unsigned) c->uid, s->config->max_connections);
                error_limit(c, "connections", s->config->max_connections);
                return conn_close(c, "connection limit");
        }
        if (u->connections > s->config->max_connections_per_uid) {
                log_warning("refused connection from uid=%u: %u connections for this user",
                            (unsigned) c->uid, s->config->max_connections_per_uid);
                error_limit(c, "connections_per_user", s->config->max_connections_per_uid);
                return conn_close(c, "per-user connection limit");
        }

        int r = uv_read_start((uv_stream_t *) &c->pipe, conn_on_alloc, conn_on_read);
        if (r < 0)
                conn_close(c, uv_strerror(r));
}

static void server_on_connection(uv_stream_t *listener, int status) {
        struct server *s = listener->data;

        if (status < 0) {
                log_warning("accept failed: %s", uv_strerror(status));
                return;
        }
        struct conn *c = conn_new(s);
        if (!c)
                return;
        if (uv_accept(listener, (uv_stream_t *) &c->pipe) < 0)
                return conn_close(c, "accept failed");
        conn_start(c);
}

/* -ENOMEM when no connection was made of fd; any later failure closes the
 * connection the usual way (and so is counted closed once, there). */
int server_adopt(struct server *s, int fd) {
        struct conn *c = conn_new(s);
        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        int r = uv_pipe_open(&c->pipe, fd);
        if (r < 0) {
                close(fd);
                conn_close(c, "cannot adopt the connection");
                return 0;
        }
        conn_start(c);
        return 0;
}

static int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                /* Our umask (0077) must not narrow it: a system socket's
                 * directory has to be reachable by every user. */
                if (mkdir(p, mode) == 0) {
                        if (chmod(p, mode) < 0)
                                return -errno;
                } else if (errno != EEXIST)
                        return -errno;
                *slash = '/';
        }
        return 0;
}

/* A socket file left behind by a dead daemon is removed; a live one is not. */
static int remove_stale_socket(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        memcpy(sa.sun_path, path, strlen(path));
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0)
                return -EADDRINUSE;
        if (errno != ECONNREFUSED)
                return -errno;
        return unlink(path) < 0 ? -errno : 0;
}

int server_bind_path(const char *path, mode_t mode, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path));

        r = mkdir_parents(path, 0755);
        if (r < 0)
                return r;
        r = remove_stale_socket(path);
        if (r < 0)
                return r;

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* User mode: only the owner may even connect (0600). */
        mode_t old = umask(0777 & ~mode);
        r = bind(fd, (struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0)
                return -errno;
        if (chmod(path, mode) < 0)
                return -errno;
        if (listen(fd, SOMAXCONN) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* fd is a listening socket from systemd, or -1 to bind path. */
static int server_listen_fd(struct server *s, int fd) {
        int r = uv_pipe_init(s->loop, &s->listener, 0);
        if (r < 0)
                return r;
        s->listener.data = s;
        r = uv_pipe_open(&s->listener, fd);
        if (r < 0)
                return r;
        r = uv_listen((uv_stream_t *) &s->listener, SOMAXCONN, server_on_connection);
        if (r < 0)
                return r;
        s->listening = true;
        return 0;
}

int server_listen(struct server *s, const char *path) {
        int fd = -1, r;

        if (!path) {
                /* Socket activation: the fd is already bound and listening. */
                r = server_listen_fd(s, 3);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on the socket from systemd: %s",
                                               uv_strerror(r));
                log_info("listening on the socket passed by systemd");
                return 0;
        }

        r = server_bind_path(path, 0600, &fd);
        if (r == -EADDRINUSE)
                return log_error_errno(r, "Another toolsd is already listening on %s", path);
        if (r < 0)
                return log_error_errno(r, "Failed to bind %s: %m", path);
        s->bound_path = strdup(path);
        if (!s->bound_path) {
                close(fd);
                return log_error_errno(ENOMEM, "Out of memory");
        }
        r = server_listen_fd(s, fd);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on %s: %s", path, uv_strerror(r));
        log_info("listening on %s", path);
        return 0;
}

static void server_on_listener_close(uv_handle_t *h) {
}

/* Stops accepting, cancels every call, closes every connection. The loop
 * ends when the last worker has been reaped and every handle is closed. */
void server_shutdown(struct server *s) {
        if (s->shutting_down)
                return;
        s->shutting_down = true;

        if (s->listening) {
                uv_close((uv_handle_t *) &s->listener, server_on_listener_close);
                s->listening = false;
        }
        if (s->bound_path)
                (void) unlink(s->bound_path);

        for (struct call *c = s->calls, *next; c; c = next) {
                next = c->next;
                call_cancel(c, "cancelled");
        }
        for (struct conn *c = s->conns, *next; c; c = next) {
                next = c->next;
                conn_close(c, "shutdown");
        }
        broker_done(s);
        if (s->on_shutdown)
                s->on_shutdown(s);
}
