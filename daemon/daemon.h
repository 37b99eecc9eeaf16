/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The broker's state: the server (listener, connections, sessions, running
 * calls), and the interfaces between its parts. In user mode the broker is
 * the whole daemon, running as the user who started it.
 *
 * Memory rule (libuv): a struct that embeds a handle is freed only in that
 * handle's close callback.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>
#include <uv.h>

#include "config.h"
#include "idl.h"
#include "policy.h"
#include "varlink.h"

#define ID_LEN 32 /* 128 random bits in hex */

struct call;
struct denylist;
struct peer_page;
struct status_page;
struct session;
struct worker;

struct uid_count {
        uid_t uid;
        uint32_t connections;
        uint32_t sessions;
};

struct server {
        uv_loop_t *loop;
        struct toolsd_config *config;
        struct idl_interface *idl;      /* io.toolsd */
        struct idl_interface *idl_service; /* org.varlink.service */
        const char *config_path;        /* for Doctor */
        struct profile_set *profiles;
        struct denylist *denylist;      /* the shell profile's tripwire; NULL: not loaded */
        const char *mode;               /* "user" */
        uid_t uid;                      /* who the daemon runs as */
        uint64_t start_usec;

        uv_pipe_t listener;
        bool listening;
        char *bound_path;               /* unlinked at exit when we bound it */

        uv_signal_t sig_term, sig_int, sig_chld;
        uv_timer_t idle_timer;
        bool shutting_down;

        struct conn *conns;
        uint32_t n_conns;
        struct uid_count *uids;         /* one per uid that has connections or sessions */
        size_t n_uids, cap_uids;

        struct session **buckets;       /* session id → session, chained */
        size_t n_buckets;
        uint32_t n_sessions;

        struct call *calls;             /* running calls, for Cancel and shutdown */
        uint32_t n_calls;

        /* What ListSessions/Status count changed (a session, call or
         * connection came or went); on_status publishes it (system mode:
         * the broker's status page) before the next reply is written and
         * at the end of each loop iteration. */
        bool status_dirty;
        void (*on_status)(struct server *s);

        /* System mode: the broker's control socket to the master. */
        void (*on_conn_closed)(struct server *s);
        void (*on_shutdown)(struct server *s);  /* main.c closes its handles */
        int ctl_fd;
        uv_poll_t ctl_poll;
        bool ctl_open;
        bool exit_asked;
        uint64_t idle_since_usec;
        struct status_page *page;       /* ours, mapped read-write; NULL: none */
        char *page_text;                /* STATUS_PAGE_TEXT_MAX, rendered into */
        uv_prepare_t page_prepare;
        bool page_prepare_on;
        struct peer_page *peers;        /* root's broker: the other brokers' pages */
        size_t n_peers;

        /* The sandbox probe's findings, for OpenSession and Doctor. */
        bool sandbox_available;
        char sandbox_detail[256];
        char bwrap_version[64];
};

struct conn {
        uv_pipe_t pipe;                 /* pipe.data == this */
        struct server *server;
        struct conn *prev, *next;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        struct varlink_reader reader;
        struct call *call;              /* the call this connection waits for */
        bool cur_more, cur_oneway;      /* of the call being answered */
        bool closing;
        bool processing;                /* inside conn_process() */
        size_t write_queued;            /* bytes handed to uv_write, not yet written */
};

/* ---- server.c ---- */
int server_listen(struct server *s, const char *path);
/* Serves a connection accepted elsewhere (a broker's, from the master). */
int server_adopt(struct server *s, int fd);
/* Binds and listens on path (removing a stale socket), with the given mode. */
int server_bind_path(const char *path, mode_t mode, int *ret_fd);
void server_shutdown(struct server *s);
struct uid_count *server_uid_count(struct server *s, uid_t uid, bool create);

/* Replies to the call being answered on c. Each takes ownership of nothing;
 * params may be NULL ({}). Suppressed for oneway calls; continues replies
 * are sent only when the call asked for more. */
void conn_reply(struct conn *c, struct json_object *params);
void conn_reply_continues(struct conn *c, struct json_object *params);
void conn_error(struct conn *c, const char *error, struct json_object *params);
/* The call in progress is done: go on with pipelined messages. */
void conn_call_done(struct conn *c);
/* Ends a connection (protocol violation, limit, shutdown). */
void conn_close(struct conn *c, const char *why);
/* Back-pressure for streamed output: true while the client's unread
 * replies exceed the high-water mark. */
bool conn_congested(const struct conn *c);

/* ---- methods.c ---- */
/* Dispatches one parsed call. Returns <0 when the connection must close. */
int methods_dispatch(struct conn *c, struct varlink_call *call);

void error_invalid_argument(struct conn *c, const char *field, const char *reason);
void error_limit(struct conn *c, const char *what, uint64_t limit);

/* ---- broker.c (system mode) ---- */
/* The status page the master left at fd (a sealed memfd of the page's
 * size), mapped read-write, fd closed; NULL (fd untouched unless it was a
 * memfd-like file) when there is none. Call before anything opens fds. */
struct status_page *broker_page_take(int fd);
int broker_init(struct server *s, int ctl_fd);
void broker_done(struct server *s);
/* After the loop: unmaps the pages, frees what broker_init() took. */
void broker_free(struct server *s);
void broker_on_idle_timer(struct server *s, uint64_t now);
/* Root's broker: every other broker's sessions (SessionInfo objects, added
 * to sessions) and counts (UserStatus objects, added to users; either may
 * be NULL). The uid of a page that could not be read whole, or lists fewer
 * sessions than it counts, is added to incomplete (may be NULL). */
void broker_peer_view(struct server *s, struct json_object *sessions, struct json_object *users,
                      struct json_object *incomplete);

static inline void server_status_changed(struct server *s) {
        s->status_dirty = true;
}

static inline void server_status_flush(struct server *s) {
        if (s->status_dirty && s->on_status) {
                s->status_dirty = false;
                s->on_status(s);
        }
}

/* ---- run_shell.c ---- */
const char *helper_path(const char *name, char *buf, size_t size);
/* The argv that runs argv in the session: bwrap's, or the exec shim's
 * unsandboxed; helpers are our own programs argv runs (host paths). */
int run_shell_exec_argv(struct server *s, struct session *sess, char **argv, const char *const *helpers,
                        char ***ret);
/* A memfd holding the session's seccomp program for bwrap's --seccomp. */
int run_shell_seccomp_fd(const struct server *s, bool network, int *ret_fd);

/* ---- methods.c: Doctor ---- */
void doctor_check(struct json_object *checks, const char *name, bool ok, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* ---- layers.c ---- */
/* Adds one check per sandbox layer to Doctor's list. */
void doctor_layers(struct server *s, struct json_object *checks);
/* False (and why) when a layer RequireSandbox=yes demands is missing. */
bool layers_complete(struct server *s, char *why, size_t n);

/* ---- session.c ---- */
#define SESSION_CALL_IDS_MAX 1024

struct session_limits {
        uint32_t timeout_ms;
        uint64_t cpu_seconds;
        uint64_t memory_bytes;
        uint64_t file_size_bytes;
        uint64_t processes;
        uint64_t open_files;
        uint64_t output_bytes;          /* persisted output cap */
};

struct session {
        char id[ID_LEN + 1];
        struct session *hnext;
        uid_t uid;
        char *skill;
        char *task_id;
        char *run_id;
        char *role;
        char *root_path;
        int root_fd;
        int tool_calls_fd;
        const struct profile *profile;
        uint32_t tools;                 /* bit per enum tool_id */
        bool network;
        bool sandboxed;
        char **envp;                    /* built at open: base + pass-through */
        char **dropped_env;
        struct session_limits limits;
        uint64_t created_usec, used_usec;
        uint32_t running;
        bool closed;                    /* out of the table; freed when running reaches 0 */
        /* The last SESSION_CALL_IDS_MAX run_shell calls, a ring: the calls
         * whose output read_tool_result may read in this session. Grown on
         * demand, so an idle session costs nothing for it. */
        char (*call_ids)[ID_LEN + 1];
        uint32_t cap_call_ids;
        uint64_t n_call_ids;
};

int session_table_init(struct server *s);
void session_table_done(struct server *s);
/* Adds a session (takes it); its id is made here. */
int session_add(struct server *s, struct session *sess);
/* A session of another uid is indistinguishable from a missing one. */
struct session *session_find(struct server *s, const char *id, uid_t uid);
void session_remove(struct server *s, struct session *sess);
void session_free(struct session *sess);
/* Closes sessions idle longer than the timeout that run nothing. */
void session_expire_idle(struct server *s, uint64_t now_usec);
/* Iterates over every session: for (i = 0, x = NULL; (x = session_next(s, &i, x));) */
struct session *session_next(struct server *s, size_t *bucket, struct session *prev);

int random_id(char ret[ID_LEN + 1]);
uint64_t now_usec(void);

/* ---- tools.c ---- */
enum tool_id {
        TOOL_ECHO,
        TOOL_RUN_SHELL,
        TOOL_WRITE_ARTIFACT,
        TOOL_READ_TOOL_RESULT,
        TOOL_HTTP_GET,
        _TOOL_MAX,
};

struct tool {
        const char *name;
        int (*spec)(const struct server *s, const struct session *sess, struct json_object **ret);
        /* Starts the call; the tool calls call_finish() when done, maybe
         * before returning. Returns <0 only for an internal failure. */
        int (*start)(struct call *c);
        void (*cancel)(struct call *c, const char *outcome);
};

const struct tool *tool_find(const char *name, enum tool_id *ret_id);
int tools_specs(const struct server *s, const struct session *sess, struct json_object **ret);
/* Whether id is one of the session's remembered run_shell calls. */
bool session_has_call(const struct session *sess, const char *id);

/* ---- tool_artifact.c, tool_http.c ---- */
int write_artifact_spec(const struct server *s, const struct session *sess, struct json_object **ret);
int write_artifact_start(struct call *c);
int read_tool_result_spec(const struct server *s, const struct session *sess, struct json_object **ret);
int read_tool_result_start(struct call *c);
int http_get_spec(const struct server *s, const struct session *sess, struct json_object **ret);
int http_get_start(struct call *c);
void http_get_cancel(struct call *c, const char *outcome);

/* ---- calls (tools.c) ---- */
struct call {
        char id[ID_LEN + 1];
        struct server *server;
        struct session *session;
        struct conn *conn;              /* NULL once the client hung up */
        struct call *prev, *next;       /* server->calls */
        const struct tool *tool;        /* NULL for a tool this server does not have */
        char tool_name[65];             /* as requested (cut), for the log and the audit */
        struct json_object *args;
        uint64_t start_usec;
        uint32_t timeout_ms;
        bool finished;
        struct worker *worker;
};

/* Starts a Call for connection c. */
void call_start(struct conn *c, struct session *sess, const char *tool, struct json_object *args,
                int64_t timeout_ms);
/* Streams output to the caller (when it asked for more). */
void call_chunk(struct call *c, const char *stream, const void *data, size_t n);
/* Ends the call with its result (takes result). Replies, audits, frees. */
void call_finish(struct call *c, struct json_object *result);
/* Cancels (Cancel, hang-up, CloseSession, shutdown): the tool ends the call
 * with the given outcome. */
void call_cancel(struct call *c, const char *outcome);
struct call *call_find(struct server *s, const char *id, uid_t uid);

struct json_object *result_new(const char *outcome, const char *reason, const char *text, bool sandboxed);

/* ---- supervisor.c ---- */
struct worker_spec {
        char *const *argv;              /* what to execve: bwrap's argv, or the command */
        char *const *envp;
        const int *pass_fds;            /* become fds 3, 4, ... in the child */
        size_t n_pass_fds;
        int cwd_fd;                     /* fchdir before exec; -1: none */
        struct session_limits limits;
        uint64_t result_bytes;          /* output kept in the reply */
        int persist_dirfd;              /* tool_calls/: raw output files; -1: none */
        const char *persist_name;       /* the call id */
        int status_fd;                  /* read end of bwrap's --json-status-fd pipe; -1: none */
};

struct worker_result {
        int exit_code;                  /* -1 when signalled */
        int signal;                     /* 0 unless killed by a signal */
        const char *ended_by;           /* NULL, "timeout", "cancelled", "limit" */
        char *out, *err;                /* what is kept for the reply (malloc'd, raw bytes, NUL-terminated) */
        size_t out_len, err_len;
        uint64_t out_total, err_total;  /* all bytes seen */
        bool truncated;
        uint64_t cpu_ms, max_rss_kb;
        int64_t child_pid;              /* bwrap's report of the command's pid, -1 unknown */
        bool exec_failed;               /* the command was not found/not executable (from the shim/status) */
        bool setup_failed;              /* bwrap itself failed before running the command */
        bool status_known;              /* the shim reported how the command ended: */
        int status_exit;                /*   its exit code, or -1 */
        int status_signal;              /*   the signal that killed it, or 0 */
        char setup_error[256];
};

struct worker_ops {
        void (*on_output)(void *userdata, const char *stream, const void *data, size_t n);
        /* The worker's processes are all gone; r is valid during the call. */
        void (*on_exit)(void *userdata, struct worker_result *r);
};

int worker_start(struct server *s, const struct worker_spec *spec, const struct worker_ops *ops,
                 void *userdata, struct worker **ret);
/* SIGTERM to the group, SIGKILL after the grace; ended_by tells why. */
void worker_kill(struct worker *w, const char *ended_by);
/* Pauses/resumes reading output (back-pressure from a slow client). */
void worker_pause(struct worker *w, bool pause);
/* Reaps children; called on SIGCHLD. */
void supervisor_on_sigchld(struct server *s);
int supervisor_init(struct server *s);
/* 1 when the peer (pid, and its pidfd when the kernel gives one; else -1)
 * descends from one of our running calls, 0 when not, -ESRCH when it is
 * gone or unreadable: a tool must not reach toolsd (to open itself a
 * session on another directory, or one without the sandbox). */
int supervisor_peer_inside_call(pid_t pid, int pidfd);
