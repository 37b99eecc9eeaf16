/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The master of system mode (see master.c). Runs as root with four
 * capabilities; never parses a client's bytes.
 */
#pragma once

#include <stdint.h>

#include "config.h"

/* The broker's end of its control socket, in the broker. */
#define MASTER_BROKER_FD 3
/* The broker's status page (status_page.h), a sealed memfd, in the broker. */
#define MASTER_PAGE_FD 4

/* Master → broker, one per datagram on the control socket (SOCK_SEQPACKET).
 * CONN carries a client's connection (uid and pid from its SO_PEERCRED; the
 * broker checks the descriptor itself). PAGE goes to root's broker only:
 * another broker's status page and a pidfd of that broker (uid and pid
 * that broker's); the pidfd, not the page, tells when it is gone. */
enum {
        MASTER_MSG_CONN = 1,
        MASTER_MSG_PAGE = 2,
};

struct master_msg {
        uint32_t type;
        uint32_t uid;
        int32_t pid;
};

struct master_options {
        const struct toolsd_config *config;
        const char *config_path;        /* passed on to brokers */
        const char *self_exe;           /* the image brokers re-execute */
};

/* Keeps CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_SETPCAP (effective,
 * permitted, bounding); drops every other capability. */
int master_drop_privileges(void);

/* Accepts on listen_fd and hands connections to per-uid brokers until
 * SIGTERM/SIGINT; then stops the brokers and returns. */
int master_run(const struct master_options *o, int listen_fd);
