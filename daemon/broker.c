/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The broker's side of system mode: connections arrive from the master over
 * the control socket (fd 3) with SCM_RIGHTS; the broker tells the master
 * when one closes and when it wants to exit.
 *
 * Runs as the peer's uid with no capabilities and no_new_privs, re-executed
 * by the master. Whatever the master sends is checked again here: the fd
 * must be a stream socket whose SO_PEERCRED is this broker's user.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

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

void broker_done(struct server *s) {
        if (!s->ctl_open)
                return;
        s->ctl_open = false;
        uv_close((uv_handle_t *) &s->ctl_poll, NULL);
        (void) close(s->ctl_fd);
        s->ctl_fd = -1;
}

static void broker_ctl_close(struct server *s) {
        broker_done(s);
}

static void broker_receive(struct server *s) {
        for (;;) {
                struct ucred cred;
                char cbuf[CMSG_SPACE(sizeof(int) * 4)];
                struct iovec iov = { &cred, sizeof cred };
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
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                                continue;
                        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < nfd; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                                /* A connection that arrives after we asked to
                                 * exit is served all the same. */
                                s->exit_asked = false;
                                if (server_adopt(s, fd) < 0)
                                        broker_tell(s, 'c');
                        }
                }
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

int broker_init(struct server *s, int ctl_fd) {
        s->ctl_fd = ctl_fd;
        s->on_conn_closed = broker_on_conn_closed;
        s->mode = "system";
        s->idle_since_usec = now_usec();
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
