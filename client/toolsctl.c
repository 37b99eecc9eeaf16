/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * toolsctl: the thin command-line client of toolsd.
 *
 * Runs as the invoking user, with that user's rights and no privilege of its
 * own: toolsd decides everything from SO_PEERCRED, so nothing here is a
 * security boundary. It still treats the socket's bytes as untrusted input:
 * replies go through the shared codec (proto/varlink.h) with its 16 MiB
 * message bound, and strings from the peer that end up in an error line are
 * escaped so they cannot drive the terminal.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sysexits.h>
#include <unistd.h>

#include <json-c/json.h>

#include "config-paths.h"
#include "fileio.h"
#include "macro.h"
#include "varlink.h"

#define EXIT_USAGE 2
/* Exit statuses of `run` for failures that are not the command's own,
 * following timeout(1) and env(1). */
#define EXIT_TIMEOUT 124
#define EXIT_NOT_RUN 125
#define EXIT_NOT_FOUND 127
#define EXIT_INTERRUPTED 130

#define SKILL_FILE_MAX (1024u * 1024u)
#define TIMEOUT_SECONDS_MAX 86400.0
#define READ_CHUNK (64u * 1024u)
#define SYSTEM_SOCKET "/run/toolsd/io.toolsd"
#define INTERFACE "io.toolsd"

/* Returned by socket discovery when nothing answered, mapped to
 * EX_UNAVAILABLE by main(). */
#define ERR_NO_DAEMON (-EHOSTDOWN)
/* A Varlink error reply, already printed. */
#define ERR_REMOTE (-EREMOTEIO)

#define streq(a, b) (strcmp((a), (b)) == 0)

enum {
        OPT_SOCKET = 0x100,
        OPT_JSON,
        OPT_SKILL,
        OPT_TOOL,
        OPT_PROFILE,
        OPT_NETWORK,
        OPT_PASS_ENV,
        OPT_ARTIFACTS,
        OPT_TASK,
        OPT_RUN,
        OPT_ROLE,
        OPT_SANDBOX,
        OPT_TIMEOUT,
        OPT_STREAM,
        OPT_VERSION,
        OPT_SESSION,
        OPT_ALL,
        _OPT_MAX,
};
#define OPT_BIT(o) (1u << ((o) - OPT_SOCKET))
#define OPTS_GLOBAL (OPT_BIT(OPT_SOCKET) | OPT_BIT(OPT_JSON))
#define OPTS_SESSION                                                                          \
        (OPT_BIT(OPT_SKILL) | OPT_BIT(OPT_TOOL) | OPT_BIT(OPT_PROFILE) | OPT_BIT(OPT_NETWORK) | \
         OPT_BIT(OPT_PASS_ENV) | OPT_BIT(OPT_ARTIFACTS) | OPT_BIT(OPT_TASK) | OPT_BIT(OPT_RUN) |  \
         OPT_BIT(OPT_ROLE) | OPT_BIT(OPT_SANDBOX))

static const struct option options[] = {
        { "help",      no_argument,       NULL, 'h'           },
        { "version",   no_argument,       NULL, OPT_VERSION   },
        { "socket",    required_argument, NULL, OPT_SOCKET    },
        { "json",      no_argument,       NULL, OPT_JSON      },
        { "skill",     required_argument, NULL, OPT_SKILL     },
        { "tool",      required_argument, NULL, OPT_TOOL      },
        { "profile",   required_argument, NULL, OPT_PROFILE   },
        { "network",   no_argument,       NULL, OPT_NETWORK   },
        { "pass-env",  required_argument, NULL, OPT_PASS_ENV  },
        { "artifacts", required_argument, NULL, OPT_ARTIFACTS },
        { "task",      required_argument, NULL, OPT_TASK      },
        { "run",       required_argument, NULL, OPT_RUN       },
        { "role",      required_argument, NULL, OPT_ROLE      },
        { "sandbox",   required_argument, NULL, OPT_SANDBOX   },
        { "timeout",   required_argument, NULL, OPT_TIMEOUT   },
        { "stream",    no_argument,       NULL, OPT_STREAM    },
        { "session",   required_argument, NULL, OPT_SESSION   },
        { "all",       no_argument,       NULL, OPT_ALL       },
        {}
};

static const char *arg_socket;
static bool arg_json;
static const char *arg_skill_file;
static const char **arg_tools;
static size_t arg_n_tools;
static const char *arg_profile;
static bool arg_network;
static const char **arg_pass_env;
static size_t arg_n_pass_env;
static const char *arg_artifacts;
static const char *arg_task;
static const char *arg_session;
static const char *arg_run;
static const char *arg_role;
static const char *arg_sandbox;
static int64_t arg_timeout_ms = -1;
static bool arg_stream;
static bool arg_all;
static unsigned arg_seen;

/* The socket that answered, for the second connection that cancels. */
static char *socket_used;
/* The signal mask outside of SIGINT handling: ppoll() waits with it. */
static sigset_t wait_mask;
static volatile sig_atomic_t sigint_count;

struct conn {
        int fd;
        struct varlink_reader reader;
};

static void conn_done(struct conn *c) {
        closep(&c->fd);
        c->fd = -1;
        varlink_reader_done(&c->reader);
}

static void varlink_reply_donep(struct varlink_reply *r) {
        varlink_reply_done(r);
}
#define _cleanup_reply_ _cleanup_(varlink_reply_donep)
#define _cleanup_conn_ _cleanup_(conn_done)

/* ---- small helpers ---------------------------------------------------- */

static int loop_write(int fd, const void *buf, size_t n) {
        const char *p = buf;

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

static const char *json_get_string(struct json_object *o, const char *key) {
        struct json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static bool json_get_int(struct json_object *o, const char *key, int64_t *ret) {
        struct json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        *ret = json_object_get_int64(v);
        return true;
}

static bool json_get_bool(struct json_object *o, const char *key) {
        struct json_object *v;

        return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) &&
               json_object_get_boolean(v);
}

static void json_print(struct json_object *o, bool pretty) {
        int flags = JSON_C_TO_STRING_NOSLASHESCAPE | (pretty ? JSON_C_TO_STRING_PRETTY : JSON_C_TO_STRING_PLAIN);

        puts(json_object_to_json_string_ext(o, flags));
        fflush(stdout);
}

/* Parses user-supplied JSON text (a --skill file, call's arguments) with the
 * same depth bound the daemon applies, refusing trailing garbage. */
static int json_parse_object(const char *text, size_t len, struct json_object **ret) {
        struct json_tokener *tok = json_tokener_new_ex(VARLINK_DEPTH_MAX_DEFAULT);
        struct json_object *o;
        size_t end;

        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, text, (int) len);
        end = json_tokener_get_parse_end(tok);
        if (!o && json_tokener_get_error(tok) == json_tokener_continue)
                /* Complete values at the end of input need a terminator. */
                o = json_tokener_parse_ex(tok, "", 1);
        if (json_tokener_get_error(tok) != json_tokener_success)
                o = NULL;
        json_tokener_free(tok);
        if (!o)
                return -EINVAL;
        for (; end < len; end++)
                if (!strchr(" \t\r\n", text[end])) {
                        json_object_put(o);
                        return -EINVAL;
                }
        if (!json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

/* Prints a peer-supplied string, JSON-escaped when it holds control bytes. */
static bool control_at(const unsigned char *p) {
        return *p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f);
}

/* A string from the daemon (or, through root's view, from another user's
 * broker) on a terminal: with a control character anywhere (C0, DEL, or
 * C1, U+0080..U+009F), it is printed quoted with every control character
 * escaped, so nothing can move the cursor, rewrite a line or set a title. */
static void fputs_safe(const char *s, FILE *f) {
        bool plain = true;
        for (const unsigned char *p = (const unsigned char *) s; *p && plain; p++)
                plain = !control_at(p);
        if (plain) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (control_at(p) && *p == 0xc2)
                        fprintf(f, "\\u%04x", *++p);
                else if (control_at(p))
                        fprintf(f, "\\x%02x", *p);
                else if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

/* fputs_safe() padded to width columns (counted in bytes, like printf). */
static void field_print(const char *s, int width) {
        size_t n = strlen(s);
        fputs_safe(s, stdout);
        for (int i = (int) n; i < width; i++)
                putchar(' ');
        putchar(' ');
}

static void varlink_error_print(const char *error, struct json_object *parameters) {
        fputs("toolsctl: ", stderr);
        fputs_safe(error, stderr);
        bool first = true;
        json_object_object_foreach(parameters, key, value) {
                fputs(first ? ": " : " ", stderr);
                first = false;
                fputs_safe(key, stderr);
                fputc('=', stderr);
                if (json_object_is_type(value, json_type_string))
                        fputs_safe(json_object_get_string(value), stderr);
                else
                        fputs(json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN), stderr);
        }
        fputc('\n', stderr);
}

/* ---- connection ------------------------------------------------------- */

static int socket_connect(const char *path) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        while (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                if (errno != EINTR)
                        return -errno;
        return TAKE_FD(fd);
}

static void conn_init(struct conn *c, int fd) {
        c->fd = fd;
        varlink_reader_init(&c->reader, VARLINK_MESSAGE_MAX_DEFAULT);
}

static void no_daemon_print(char **paths, const char **origins, const int *errors, size_t n) {
        fputs("toolsctl: cannot connect to toolsd. Tried:\n", stderr);
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, "  %s (%s): %s\n", paths[i], origins[i], strerror(-errors[i]));
        fputs("Start it with 'systemctl start toolsd.socket' (system-wide) or\n"
              "'systemctl --user start toolsd.socket' (a private instance), or point\n"
              "--socket or $TOOLSD_SOCKET at the socket of a running toolsd.\n",
              stderr);
}

/* Tries, in order: --socket (alone when given, because an explicit choice
 * must not silently reach another daemon), $TOOLSD_SOCKET,
 * $XDG_RUNTIME_DIR/toolsd/io.toolsd, /run/toolsd/io.toolsd. */
static int conn_open(struct conn *ret) {
        char *paths[3] = {};
        const char *origins[3];
        int errors[3];
        size_t n = 0;
        const char *e;
        int fd = -ENOENT;

        if (arg_socket) {
                paths[n] = strdup(arg_socket);
                origins[n++] = "--socket";
        } else {
                e = getenv("TOOLSD_SOCKET");
                if (e && *e) {
                        paths[n] = strdup(e);
                        origins[n++] = "$TOOLSD_SOCKET";
                }
                e = getenv("XDG_RUNTIME_DIR");
                if (e && *e) {
                        if (asprintf(&paths[n], "%s/toolsd/io.toolsd", e) < 0)
                                paths[n] = NULL;
                        origins[n++] = "$XDG_RUNTIME_DIR";
                }
                paths[n] = strdup(SYSTEM_SOCKET);
                origins[n++] = "system";
        }

        size_t i;
        for (i = 0; i < n; i++) {
                fd = paths[i] ? socket_connect(paths[i]) : -ENOMEM;
                errors[i] = fd;
                if (fd >= 0)
                        break;
        }
        if (fd >= 0) {
                socket_used = TAKE_PTR(paths[i]);
                conn_init(ret, fd);
        } else
                no_daemon_print(paths, origins, errors, n);
        for (size_t j = 0; j < n; j++)
                free(paths[j]);
        return fd >= 0 ? 0 : ERR_NO_DAEMON;
}

static int conn_send(struct conn *c, const char *method, struct json_object *parameters, bool more, bool oneway) {
        _cleanup_free_ char *buf = NULL;
        size_t len, off = 0;
        int r;

        r = varlink_call_build(method, parameters, more, oneway, &buf, &len);
        if (r < 0)
                return r;
        while (off < len) {
                ssize_t k = send(c->fd, buf + off, len - off, MSG_NOSIGNAL);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                off += (size_t) k;
        }
        return 0;
}

/* Reads the next reply. Waits with SIGINT deliverable only inside ppoll(),
 * so an interrupt during a streamed call is never lost between a check and
 * the wait: -EINTR then tells the caller to act on it and call again (the
 * buffered bytes stay in the reader). -ECONNRESET when toolsd hung up. */
static int conn_read_reply(struct conn *c, struct varlink_reply *ret) {
        char buf[READ_CHUNK];
        const char *msg;
        size_t len;
        int r;

        for (;;) {
                r = varlink_reader_next(&c->reader, &msg, &len);
                if (r < 0)
                        return r;
                if (r > 0)
                        return varlink_reply_parse(msg, len, VARLINK_DEPTH_MAX_DEFAULT, ret);

                struct pollfd p = { .fd = c->fd, .events = POLLIN };
                if (ppoll(&p, 1, NULL, &wait_mask) < 0)
                        return -errno;
                ssize_t k = read(c->fd, buf, sizeof(buf));
                if (k < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -ECONNRESET;
                r = varlink_reader_feed(&c->reader, buf, (size_t) k);
                if (r < 0)
                        return r;
        }
}

static int conn_error_print(int r) {
        if (r == -ECONNRESET)
                fputs("toolsctl: toolsd closed the connection\n", stderr);
        else if (r == -EMSGSIZE)
                fputs("toolsctl: reply from toolsd exceeds the maximum message size\n", stderr);
        else if (r == -EBADMSG)
                fputs("toolsctl: malformed reply from toolsd\n", stderr);
        else
                fprintf(stderr, "toolsctl: talking to toolsd failed: %s\n", strerror(-r));
        return r;
}

/* One call, one reply. ret_parameters gets a reference the caller puts. */
static int conn_call(struct conn *c, const char *method, struct json_object *parameters,
                     struct json_object **ret_parameters) {
        _cleanup_reply_ struct varlink_reply reply = {};
        int r;

        r = conn_send(c, method, parameters, false, false);
        if (r < 0)
                return conn_error_print(r);
        do
                r = conn_read_reply(c, &reply);
        while (r == -EINTR);
        if (r < 0)
                return conn_error_print(r);
        if (reply.error) {
                varlink_error_print(reply.error, reply.parameters);
                return ERR_REMOTE;
        }
        if (reply.continues)
                return conn_error_print(-EBADMSG);
        if (ret_parameters)
                *ret_parameters = json_object_get(reply.parameters);
        return 0;
}

/* Connects and makes one call; for the verbs that do nothing else. */
static int simple_call(const char *method, struct json_object *parameters, struct json_object **ret_parameters) {
        _cleanup_conn_ struct conn c = { .fd = -1 };
        int r;

        r = conn_open(&c);
        if (r < 0)
                return r;
        return conn_call(&c, method, parameters, ret_parameters);
}

/* ---- results ---------------------------------------------------------- */

static int signal_number(const char *name) {
        if (!name)
                return 0;
        if (strncmp(name, "SIG", 3) == 0)
                name += 3;
        for (int i = 1; i < NSIG; i++) {
                const char *a = sigabbrev_np(i);
                if (a && streq(a, name))
                        return i;
        }
        char *end;
        errno = 0;
        long l = strtol(name, &end, 10);
        if (errno == 0 && *name && !*end && l > 0 && l < NSIG)
                return (int) l;
        return 0;
}

/* The exit status for a tool's result: the command's own for exit and
 * signal (as a shell reports it), timeout(1)'s conventions otherwise. */
static int result_exit_status(struct json_object *result) {
        const char *outcome = json_get_string(result, "outcome");
        int64_t code;

        if (!outcome)
                return EXIT_NOT_RUN;
        if (streq(outcome, "ok"))
                return EXIT_SUCCESS;
        if (streq(outcome, "exit"))
                return json_get_int(result, "exit_code", &code) && code >= 0 && code <= 255 ? (int) code
                                                                                        : EXIT_FAILURE;
        if (streq(outcome, "signal"))
                return 128 + signal_number(json_get_string(result, "signal"));
        if (streq(outcome, "timeout"))
                return EXIT_TIMEOUT;
        if (streq(outcome, "cancelled"))
                return EXIT_INTERRUPTED;
        if (streq(outcome, "not_installed"))
                return EXIT_NOT_FOUND;
        return EXIT_NOT_RUN;
}

static void text_print(const char *text, FILE *f) {
        size_t n = text ? strlen(text) : 0;

        if (n == 0)
                return;
        fputs(text, f);
        if (text[n - 1] != '\n')
                fputc('\n', f);
        fflush(f);
}

/* After a streamed call: the command spoke for itself through the chunks;
 * anything else (refused, timeout, ...) is explained on stderr. */
static void result_report_streamed(struct json_object *result, bool saw_chunk) {
        const char *outcome = json_get_string(result, "outcome");
        const char *s;

        if (outcome && (streq(outcome, "ok") || streq(outcome, "exit") || streq(outcome, "signal"))) {
                if (saw_chunk)
                        return;
                /* No chunks arrived (a tool that does not stream): show the
                 * output the result carries instead. */
                if ((s = json_get_string(result, "stdout")))
                        (void) loop_write(STDOUT_FILENO, s, strlen(s));
                if ((s = json_get_string(result, "stderr")))
                        (void) loop_write(STDERR_FILENO, s, strlen(s));
                return;
        }
        text_print(json_get_string(result, "text"), stderr);
}

static int chunk_write(struct json_object *chunk) {
        const char *stream = json_get_string(chunk, "stream");
        const char *data = json_get_string(chunk, "data");
        const char *encoding = json_get_string(chunk, "encoding");
        int fd = stream && streq(stream, "stdout") ? STDOUT_FILENO : STDERR_FILENO;

        if (!data)
                return 0;
        if (encoding && streq(encoding, "base64")) {
                _cleanup_free_ void *raw = NULL;
                size_t n;
                int r = base64_decode(data, strlen(data), &raw, &n);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return -EINVAL; /* malformed: the caller says so and goes on */
                return loop_write(fd, raw, n);
        }
        if (fd == STDOUT_FILENO)
                fflush(stdout);
        return loop_write(fd, data, strlen(data));
}

/* ---- SIGINT during a streamed call ------------------------------------ */

static void sigint_on_signal(int sig) {
        sigint_count++;
}

static void sigint_arm(struct sigaction *ret_old) {
        struct sigaction sa = { .sa_handler = sigint_on_signal };
        sigset_t block;

        /* No SA_RESTART: the handler only counts, ppoll() returns EINTR. */
        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGINT, &sa, ret_old);
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &block, NULL);
}

static void sigint_disarm(const struct sigaction *old) {
        /* Unblock first: a pending SIGINT lands in our handler, so the
         * session is still closed instead of the process dying here. */
        (void) sigprocmask(SIG_SETMASK, &wait_mask, NULL);
        (void) sigaction(SIGINT, old, NULL);
}

/* Cancel goes on a second connection: the first one is busy with the call,
 * and hanging it up would cancel too but lose the final result. */
static void call_cancel(const char *call_id) {
        _cleanup_conn_ struct conn c = { .fd = -1 };
        _cleanup_json_ struct json_object *p = NULL;
        _cleanup_reply_ struct varlink_reply reply = {};
        int fd;

        if (!arg_json)
                fprintf(stderr, "toolsctl: cancelling call %s\n", call_id);
        fd = socket_connect(socket_used);
        if (fd < 0) {
                fprintf(stderr, "toolsctl: cannot connect to cancel: %s\n", strerror(-fd));
                return;
        }
        conn_init(&c, fd);
        p = json_object_new_object();
        if (!p || json_object_object_add(p, "call_id", json_object_new_string(call_id)) < 0)
                return;
        if (conn_send(&c, "io.toolsd.Cancel", p, false, false) < 0)
                return;
        /* NoSuchCall only means the call ended first; a second ^C (EINTR)
         * stops waiting. */
        if (conn_read_reply(&c, &reply) >= 0 && reply.error && !streq(reply.error, "io.toolsd.NoSuchCall"))
                varlink_error_print(reply.error, reply.parameters);
}

struct stream_state {
        char *call_id;
        bool cancel_sent;
        bool saw_chunk;
        struct json_object *result;
};

static void stream_maybe_cancel(struct stream_state *st) {
        if (sigint_count >= 2) {
                /* Hanging up cancels the call on the server too. */
                fputs("toolsctl: interrupted again, giving up\n", stderr);
                _exit(EXIT_INTERRUPTED);
        }
        if (sigint_count == 1 && st->call_id && !st->cancel_sent) {
                st->cancel_sent = true;
                call_cancel(st->call_id);
        }
}

static int stream_on_reply(struct stream_state *st, struct json_object *params) {
        struct json_object *v;
        const char *id;

        if (arg_json)
                json_print(params, false);
        if (!st->call_id && (id = json_get_string(params, "call_id"))) {
                st->call_id = strdup(id);
                if (!st->call_id)
                        return -ENOMEM;
        }
        if (json_object_object_get_ex(params, "chunk", &v) && json_object_is_type(v, json_type_object)) {
                st->saw_chunk = true;
                if (!arg_json) {
                        int r = chunk_write(v);
                        if (r == -EINVAL)
                                fputs("toolsctl: chunk with invalid base64 data\n", stderr);
                        else if (r < 0)
                                return r;
                }
        }
        if (json_object_object_get_ex(params, "result", &v) && json_object_is_type(v, json_type_object)) {
                json_object_put(st->result);
                st->result = json_object_get(v);
        }
        return 0;
}

/* Makes a streamed Call and reads every reply; ret_result gets the final
 * result. Chunks are written as they come (or printed as JSON lines). */
static int call_stream(struct conn *c, struct json_object *call_params, bool *ret_saw_chunk,
                       struct json_object **ret_result) {
        struct stream_state st = {};
        struct sigaction old;
        int r;

        r = conn_send(c, "io.toolsd.Call", call_params, true, false);
        if (r < 0)
                return conn_error_print(r);
        sigint_arm(&old);
        for (;;) {
                _cleanup_reply_ struct varlink_reply reply = {};

                stream_maybe_cancel(&st);
                r = conn_read_reply(c, &reply);
                if (r == -EINTR)
                        continue;
                if (r < 0) {
                        conn_error_print(r);
                        break;
                }
                if (reply.error) {
                        varlink_error_print(reply.error, reply.parameters);
                        r = ERR_REMOTE;
                        break;
                }
                r = stream_on_reply(&st, reply.parameters);
                if (r < 0) {
                        fprintf(stderr, "toolsctl: writing output failed: %s\n", strerror(-r));
                        break;
                }
                if (!reply.continues)
                        break;
        }
        sigint_disarm(&old);
        free(st.call_id);
        if (r >= 0 && !st.result) {
                fputs("toolsctl: the call ended without a result\n", stderr);
                r = -EBADMSG;
        }
        if (r < 0) {
                json_object_put(st.result);
                return r;
        }
        *ret_saw_chunk = st.saw_chunk;
        *ret_result = st.result;
        return 0;
}

/* ---- building OpenSession --------------------------------------------- */

static int strv_json_add_unique(struct json_object *array, const char *s) {
        size_t n = json_object_array_length(array);

        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(array, i);
                if (json_object_is_type(e, json_type_string) && streq(json_object_get_string(e), s))
                        return 0;
        }
        return json_object_array_add(array, json_object_new_string(s));
}

static int skill_from_file(struct json_object **ret) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        /* Any file, not only regular ones: "-", /dev/stdin and <(...) are pipes. */
        if (streq(arg_skill_file, "-"))
                r = read_fd_bounded(STDIN_FILENO, SKILL_FILE_MAX, &text, &len);
        else
                r = read_file_bounded(arg_skill_file, SKILL_FILE_MAX, 0, &text, &len);
        if (r < 0) {
                fprintf(stderr, "toolsctl: cannot read skill file %s: %s\n", arg_skill_file, strerror(-r));
                return r;
        }
        r = json_parse_object(text, len, ret);
        if (r < 0)
                fprintf(stderr, "toolsctl: skill file %s is not a JSON object\n", arg_skill_file);
        return r;
}

/* The skill: --skill FILE as written, or one made of --tool (default_tool
 * when none), then --profile, --network and --pass-env on top. */
static int skill_build(const char *default_tool, const char *default_profile, struct json_object **ret) {
        _cleanup_json_ struct json_object *skill = NULL;
        struct json_object *pass;
        int r;

        if (arg_skill_file) {
                r = skill_from_file(&skill);
                if (r < 0)
                        return r;
        } else {
                struct json_object *tools = json_object_new_array();
                skill = json_object_new_object();
                if (!skill || !tools || json_object_object_add(skill, "tools", tools) < 0)
                        return -ENOMEM;
                for (size_t i = 0; i < arg_n_tools; i++)
                        if (strv_json_add_unique(tools, arg_tools[i]) < 0)
                                return -ENOMEM;
                if (arg_n_tools == 0 && json_object_array_add(tools, json_object_new_string(default_tool)) < 0)
                        return -ENOMEM;
                if (json_object_object_add(skill, "name", json_object_new_string("toolsctl")) < 0)
                        return -ENOMEM;
                if (!arg_profile && json_object_object_add(skill, "profile",
                                                           json_object_new_string(default_profile)) < 0)
                        return -ENOMEM;
        }
        if (arg_profile && json_object_object_add(skill, "profile", json_object_new_string(arg_profile)) < 0)
                return -ENOMEM;
        if (arg_network && json_object_object_add(skill, "needs_network", json_object_new_boolean(true)) < 0)
                return -ENOMEM;
        if (arg_n_pass_env > 0) {
                if (!json_object_object_get_ex(skill, "pass_env", &pass) ||
                    !json_object_is_type(pass, json_type_array)) {
                        pass = json_object_new_array();
                        if (!pass || json_object_object_add(skill, "pass_env", pass) < 0)
                                return -ENOMEM;
                }
                for (size_t i = 0; i < arg_n_pass_env; i++)
                        if (strv_json_add_unique(pass, arg_pass_env[i]) < 0)
                                return -ENOMEM;
        }
        *ret = TAKE_PTR(skill);
        return 0;
}

/* Values for the skill's pass_env names come from our own environment;
 * toolsd decides which of them reach the command. */
static int env_build(struct json_object *skill, struct json_object **ret) {
        _cleanup_json_ struct json_object *env = json_object_new_object();
        struct json_object *pass;

        if (!env)
                return -ENOMEM;
        if (json_object_object_get_ex(skill, "pass_env", &pass) && json_object_is_type(pass, json_type_array))
                for (size_t i = 0; i < json_object_array_length(pass); i++) {
                        struct json_object *e = json_object_array_get_idx(pass, i);
                        const char *v;
                        if (!json_object_is_type(e, json_type_string))
                                continue;
                        v = getenv(json_object_get_string(e));
                        if (v && json_object_object_add(env, json_object_get_string(e),
                                                        json_object_new_string(v)) < 0)
                                return -ENOMEM;
                }
        *ret = TAKE_PTR(env);
        return 0;
}

static const char *sandbox_mode(void) {
        const char *e;

        if (arg_sandbox)
                return arg_sandbox;
        e = getenv("MODULATIO_REQUIRE_SANDBOX");
        if (e && streq(e, "1"))
                return "required";
        e = getenv("MODULATIO_RUN_SHELL_UNSAFE");
        if (e && streq(e, "1"))
                return "off";
        e = getenv("MODULATIO_SANDBOX_PROFILE");
        if (e && streq(e, "off"))
                return "off";
        return NULL;
}

static int json_add_string_opt(struct json_object *o, const char *key, const char *value) {
        if (!value)
                return 0;
        return json_object_object_add(o, key, json_object_new_string(value));
}

static int open_params_build(const char *default_tool, const char *default_profile, struct json_object **ret) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        _cleanup_json_ struct json_object *skill = NULL, *env = NULL;
        _cleanup_free_ char *root = NULL;
        int r;

        if (!p)
                return -ENOMEM;
        root = realpath(arg_artifacts ?: ".", NULL);
        if (!root) {
                r = -errno;
                fprintf(stderr, "toolsctl: artifacts directory %s: %s\n", arg_artifacts ?: ".", strerror(errno));
                return r;
        }
        r = skill_build(default_tool, default_profile, &skill);
        if (r < 0)
                return r;
        r = env_build(skill, &env);
        if (r < 0)
                return r;
        if (json_object_object_add(p, "skill", TAKE_PTR(skill)) < 0 ||
            json_add_string_opt(p, "artifacts_root", root) < 0 ||
            json_add_string_opt(p, "run_id", arg_run) < 0 || json_add_string_opt(p, "task_id", arg_task) < 0 ||
            json_add_string_opt(p, "role", arg_role) < 0 || json_add_string_opt(p, "sandbox", sandbox_mode()) < 0)
                return -ENOMEM;
        if (json_object_object_length(env) > 0 && json_object_object_add(p, "env", TAKE_PTR(env)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

static int session_open(struct conn *c, const char *default_tool, const char *default_profile,
                        struct json_object **ret_reply) {
        _cleanup_json_ struct json_object *p = NULL;
        int r;

        r = open_params_build(default_tool, default_profile, &p);
        if (r == -ENOMEM)
                fputs("toolsctl: out of memory\n", stderr);
        if (r < 0)
                return r;
        return conn_call(c, "io.toolsd.OpenSession", p, ret_reply);
}

static int session_close(struct conn *c, const char *session) {
        _cleanup_json_ struct json_object *p = json_object_new_object();

        if (!p || json_add_string_opt(p, "session", session) < 0)
                return -ENOMEM;
        return conn_call(c, "io.toolsd.CloseSession", p, NULL);
}

static int call_params_build(const char *session, const char *tool, struct json_object *arguments,
                             struct json_object **ret) {
        _cleanup_json_ struct json_object *p = json_object_new_object();

        if (!p || json_add_string_opt(p, "session", session) < 0 || json_add_string_opt(p, "tool", tool) < 0 ||
            json_object_object_add(p, "arguments", json_object_get(arguments)) < 0)
                return -ENOMEM;
        if (arg_timeout_ms > 0 && json_object_object_add(p, "timeout_ms", json_object_new_int64(arg_timeout_ms)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

/* ---- human output ----------------------------------------------------- */

static void value_print(struct json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_string:
                fputs_safe(json_object_get_string(v), stdout);
                break;
        case json_type_boolean:
                fputs(json_object_get_boolean(v) ? "yes" : "no", stdout);
                break;
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        if (i > 0)
                                fputs(", ", stdout);
                        value_print(json_object_array_get_idx(v, i));
                }
                break;
        case json_type_null:
        case json_type_int:
        case json_type_double:
        case json_type_object:
        default:
                fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                      stdout);
                break;
        }
}

/* Every member as "key: value", so fields added to the interface later show
 * up without a change here. */
static void fields_print(struct json_object *o) {
        int width = 0;

        json_object_object_foreach(o, k1, v1) {
                (void) v1;
                width = MAX(width, (int) MIN(strlen(k1), 40u));
        }
        json_object_object_foreach(o, key, value) {
                printf("%-*s ", width + 1, key);
                value_print(value);
                putchar('\n');
        }
}

static int output(struct json_object *params, void (*human)(struct json_object *)) {
        if (arg_json)
                json_print(params, true);
        else if (human)
                human(params);
        return EXIT_SUCCESS;
}

static void doctor_print(struct json_object *p) {
        struct json_object *checks;

        if (!json_object_object_get_ex(p, "checks", &checks) || !json_object_is_type(checks, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(checks); i++) {
                struct json_object *c = json_object_array_get_idx(checks, i);
                printf("%s ", json_get_bool(c, "ok") ? "[ ok ]" : "[FAIL]");
                fputs_safe(json_get_string(c, "name") ?: "?", stdout);
                fputs(": ", stdout);
                fputs_safe(json_get_string(c, "detail") ?: "", stdout);
                putchar('\n');
        }
}

/* The uids root's view could not read whole, on stderr. */
static void incomplete_print(struct json_object *p) {
        struct json_object *inc;

        if (!json_object_object_get_ex(p, "incomplete_uids", &inc) || !json_object_is_type(inc, json_type_array) ||
            json_object_array_length(inc) == 0)
                return;
        fputs("toolsctl: the list is incomplete for uid", stderr);
        for (size_t i = 0; i < json_object_array_length(inc); i++)
                fprintf(stderr, " %" PRIi64, json_object_get_int64(json_object_array_get_idx(inc, i)));
        fputc('\n', stderr);
}

static void sessions_print(struct json_object *p) {
        struct json_object *list;
        size_t n;

        incomplete_print(p);
        if (!json_object_object_get_ex(p, "sessions", &list) || !json_object_is_type(list, json_type_array) ||
            (n = json_object_array_length(list)) == 0) {
                puts("No sessions.");
                return;
        }
        if (arg_all)
                printf("%-7s ", "UID");
        printf("%-32s %-16s %-10s %-16s %5s %7s %s\n", "SESSION", "SKILL", "PROFILE", "TASK", "CALLS", "AGE",
               "ARTIFACTS");
        for (size_t i = 0; i < n; i++) {
                struct json_object *s = json_object_array_get_idx(list, i);
                int64_t calls = 0, age = 0, uid = -1;
                (void) json_get_int(s, "running_calls", &calls);
                (void) json_get_int(s, "age_seconds", &age);
                (void) json_get_int(s, "uid", &uid);
                if (arg_all)
                        printf("%-7" PRIi64 " ", uid);
                field_print(json_get_string(s, "session") ?: "-", 32);
                field_print(json_get_string(s, "skill") ?: "-", 16);
                field_print(json_get_string(s, "profile") ?: "-", 10);
                field_print(json_get_string(s, "task_id") ?: "-", 16);
                printf("%5" PRIi64 " %6" PRIi64 "s ", calls, age);
                fputs_safe(json_get_string(s, "artifacts_root") ?: "-", stdout);
                puts(json_get_bool(s, "sandboxed") ? "" : " (unsandboxed)");
        }
}

static void tools_print_list(struct json_object *tools) {
        if (!json_object_is_type(tools, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(tools); i++) {
                struct json_object *t = json_object_array_get_idx(tools, i);
                const char *d = json_get_string(t, "description") ?: "";
                field_print(json_get_string(t, "name") ?: "?", 18);
                /* The first line only: descriptions are written for a model. */
                _cleanup_free_ char *line = strndup(d, strcspn(d, "\n"));
                fputs_safe(line ?: "", stdout);
                putchar('\n');
        }
}

static void tools_print(struct json_object *p) {
        struct json_object *tools;

        if (json_object_object_get_ex(p, "tools", &tools))
                tools_print_list(tools);
}

/* The session id alone on stdout, so that S=$(toolsctl open ...) works;
 * what a user must know about it goes to stderr. */
static void open_print(struct json_object *p) {
        struct json_object *dropped;

        puts(json_get_string(p, "session") ?: "");
        if (!json_get_bool(p, "sandboxed"))
                fprintf(stderr, "toolsctl: warning: session is NOT sandboxed (backend %s)\n",
                        json_get_string(p, "backend") ?: "?");
        if (json_object_object_get_ex(p, "dropped_env", &dropped) && json_object_is_type(dropped, json_type_array) &&
            json_object_array_length(dropped) > 0) {
                fputs("toolsctl: environment dropped as secret-shaped: ", stderr);
                for (size_t i = 0; i < json_object_array_length(dropped); i++) {
                        fputs(i ? ", " : "", stderr);
                        fputs_safe(json_object_get_string(json_object_array_get_idx(dropped, i)) ?: "?", stderr);
                }
                fputc('\n', stderr);
        }
}

/* ---- verbs ------------------------------------------------------------ */

static int verb_plain(const char *method, void (*human)(struct json_object *)) {
        _cleanup_json_ struct json_object *p = NULL;
        int r = simple_call(method, NULL, &p);

        return r < 0 ? r : output(p, human);
}

/* --all: root's view across users. */
static int verb_all_users(const char *method, void (*human)(struct json_object *)) {
        _cleanup_json_ struct json_object *q = json_object_new_object(), *p = NULL;

        if (!q)
                return -ENOMEM;
        if (arg_all)
                (void) json_object_object_add(q, "all_users", json_object_new_boolean(true));
        int r = simple_call(method, q, &p);
        return r < 0 ? r : output(p, human);
}

static void status_print(struct json_object *p) {
        struct json_object *users = NULL;

        if (json_object_object_get_ex(p, "users", &users))
                users = json_object_get(users);
        json_object_object_del(p, "users");
        fields_print(p);
        if (!users || !json_object_is_type(users, json_type_array)) {
                json_object_put(users);
                return;
        }
        printf("\n%-7s %-8s %8s %8s %11s\n", "UID", "BROKER", "SESSIONS", "CALLS", "CONNECTIONS");
        for (size_t i = 0; i < json_object_array_length(users); i++) {
                struct json_object *u = json_object_array_get_idx(users, i);
                int64_t uid = -1, pid = 0, sessions = 0, calls = 0, conns = 0;
                (void) json_get_int(u, "uid", &uid);
                (void) json_get_int(u, "broker_pid", &pid);
                (void) json_get_int(u, "sessions", &sessions);
                (void) json_get_int(u, "running_calls", &calls);
                (void) json_get_int(u, "connections", &conns);
                printf("%-7" PRIi64 " %-8" PRIi64 " %8" PRIi64 " %8" PRIi64 " %11" PRIi64 "%s\n", uid, pid, sessions,
                       calls, conns, json_get_bool(u, "complete") ? "" : "  (page unreadable or cut short)");
        }
        json_object_put(users);
}

static int verb_status(char **args, size_t n) {
        return verb_all_users("io.toolsd.Status", status_print);
}

static int verb_doctor(char **args, size_t n) {
        return verb_plain("io.toolsd.Doctor", doctor_print);
}

static int verb_sessions(char **args, size_t n) {
        return verb_all_users("io.toolsd.ListSessions", sessions_print);
}

static int verb_info(char **args, size_t n) {
        return verb_plain("org.varlink.service.GetInfo", fields_print);
}

static int verb_introspect(char **args, size_t n) {
        _cleanup_json_ struct json_object *q = json_object_new_object(), *p = NULL;
        int r;

        if (!q || json_add_string_opt(q, "interface", n > 0 ? args[0] : INTERFACE) < 0)
                return -ENOMEM;
        r = simple_call("org.varlink.service.GetInterfaceDescription", q, &p);
        if (r < 0)
                return r;
        if (arg_json)
                return output(p, NULL);
        text_print(json_get_string(p, "description"), stdout);
        return EXIT_SUCCESS;
}

static int verb_with_session(const char *method, const char *key, const char *value,
                             void (*human)(struct json_object *)) {
        _cleanup_json_ struct json_object *q = json_object_new_object(), *p = NULL;
        int r;

        if (!q || json_add_string_opt(q, key, value) < 0)
                return -ENOMEM;
        r = simple_call(method, q, &p);
        if (r < 0)
                return r;
        return output(p, human);
}

static int verb_close(char **args, size_t n) {
        return verb_with_session("io.toolsd.CloseSession", "session", args[0], NULL);
}

static int verb_tools(char **args, size_t n) {
        return verb_with_session("io.toolsd.ListTools", "session", args[0], tools_print);
}

static int verb_cancel(char **args, size_t n) {
        return verb_with_session("io.toolsd.Cancel", "call_id", args[0], NULL);
}

static int verb_open(char **args, size_t n) {
        _cleanup_conn_ struct conn c = { .fd = -1 };
        _cleanup_json_ struct json_object *p = NULL;
        int r;

        if (!arg_skill_file && arg_n_tools == 0) {
                fputs("toolsctl: open needs --skill FILE or at least one --tool\n", stderr);
                return EXIT_USAGE;
        }
        r = conn_open(&c);
        if (r < 0)
                return r;
        r = session_open(&c, "run_shell", "passive", &p);
        if (r < 0)
                return r;
        return output(p, open_print);
}

static int verb_call(char **args, size_t n) {
        _cleanup_conn_ struct conn c = { .fd = -1 };
        _cleanup_json_ struct json_object *arguments = NULL, *q = NULL, *result = NULL, *p = NULL;
        bool saw_chunk = false;
        int r;

        if (json_parse_object(args[2], strlen(args[2]), &arguments) < 0) {
                fputs("toolsctl: the tool's arguments must be a JSON object\n", stderr);
                return EXIT_USAGE;
        }
        if (call_params_build(args[0], args[1], arguments, &q) < 0)
                return -ENOMEM;
        r = conn_open(&c);
        if (r < 0)
                return r;
        if (arg_stream) {
                r = call_stream(&c, q, &saw_chunk, &result);
                if (r < 0)
                        return r;
                if (!arg_json)
                        result_report_streamed(result, saw_chunk);
                return result_exit_status(result);
        }
        r = conn_call(&c, "io.toolsd.Call", q, &p);
        if (r < 0)
                return r;
        struct json_object *res = NULL; /* borrowed from p */
        (void) json_object_object_get_ex(p, "result", &res);
        if (arg_json)
                json_print(p, true);
        else
                text_print(json_get_string(res, "text"), stdout);
        return result_exit_status(res);
}

static int verb_run(char **args, size_t n) {
        _cleanup_conn_ struct conn c = { .fd = -1 };
        _cleanup_json_ struct json_object *opened = NULL, *arguments = NULL, *argv = NULL, *q = NULL,
                                          *result = NULL;
        _cleanup_free_ char *session = NULL;
        bool saw_chunk = false;
        int r, k;

        arguments = json_object_new_object();
        argv = json_object_new_array();
        if (!arguments || !argv)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (json_object_array_add(argv, json_object_new_string(args[i])) < 0)
                        return -ENOMEM;
        if (json_object_object_add(arguments, "argv", TAKE_PTR(argv)) < 0)
                return -ENOMEM;

        r = conn_open(&c);
        if (r < 0)
                return r;
        r = session_open(&c, "run_shell", "passive", &opened);
        if (r < 0)
                return r;
        session = strdup(json_get_string(opened, "session") ?: "");
        if (!session || call_params_build(session, "run_shell", arguments, &q) < 0)
                return -ENOMEM;
        r = call_stream(&c, q, &saw_chunk, &result);
        /* Close even after a failed call; a dead connection closes the
         * session on the server's side anyway. */
        k = session_close(&c, session);
        if (r < 0)
                return r;
        if (k < 0 && k != ERR_REMOTE && k != -ECONNRESET)
                return k;
        if (!arg_json)
                result_report_streamed(result, saw_chunk);
        return result_exit_status(result);
}

/* ---- log: the transcript, read from the file (no daemon needed) ------- */

#define LOG_LINE_MAX (256u * 1024u) /* the daemon writes at most 64 KiB */

static const char *jfield(struct json_object *o, const char *key) {
        struct json_object *v = NULL;
        return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

/* A copy of s (at most max bytes) with control characters shown as '?':
 * the transcript holds the model's input, which must not drive the
 * terminal. */
static const char *log_clean(const char *s, char *buf, size_t max) {
        size_t k = 0, w = 0;
        for (; s && s[k] && s[k] != '\n' && w < max - 1; k++) {
                if (control_at((const unsigned char *) s + k)) {
                        buf[w++] = '?';
                        k += (unsigned char) s[k] == 0xc2;      /* a C1 control is two bytes */
                } else {
                        buf[w++] = s[k];
                }
        }
        buf[w] = '\0';
        return s ? buf : "?";
}

/* One call in a few lines: when, what, how it ended, what was asked, and
 * the first line of what the model read. */
static void log_entry_print(struct json_object *e) {
        struct json_object *res = NULL, *a = NULL;
        const char *reason = jfield(e, "reason"), *text = NULL, *args = "{}";
        char b[6][161];

        if (json_object_object_get_ex(e, "result", &res))
                text = jfield(res, "text");
        if (json_object_object_get_ex(e, "arguments", &a) && a)
                args = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        printf("%s %s %s%s%s %sms call %s session %s\n", log_clean(jfield(e, "timestamp"), b[0], 64),
               log_clean(jfield(e, "tool"), b[1], 80), log_clean(jfield(e, "outcome"), b[2], 32), reason ? "/" : "",
               reason ? log_clean(reason, b[3], 32) : "", jfield(e, "duration_ms") ?: "?",
               log_clean(jfield(e, "call_id"), b[4], 40), log_clean(jfield(e, "session"), b[5], 40));
        printf("  arguments: %s%s\n", log_clean(args, b[0], 161), strlen(args) > 160 ? " ..." : "");
        printf("  text: %s%s\n", log_clean(text ?: "", b[1], 161),
               text && (strlen(text) > 160 || strchr(text, '\n')) ? " ..." : "");
}

static int log_file_print(int dirfd, const char *name) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_fclose_ FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        ssize_t n;

        if (!f) {
                fprintf(stderr, "toolsctl: tool_calls/%s: %s\n", name, strerror(errno));
                return -errno;
        }
        fd = -1; /* f owns it */
        while ((n = getline(&line, &cap, f)) > 0) {
                if ((size_t) n > LOG_LINE_MAX)
                        continue;
                _cleanup_json_ struct json_object *e = json_tokener_parse(line);
                if (!e || !json_object_is_type(e, json_type_object)) {
                        fprintf(stderr, "toolsctl: tool_calls/%s: a line that is not a JSON object\n", name);
                        continue;
                }
                const char *sess = jfield(e, "session");
                if (arg_session && (!sess || !streq(sess, arg_session)))
                        continue;
                if (arg_json)
                        fputs(line, stdout);
                else
                        log_entry_print(e);
        }
        return 0;
}

static int log_name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int verb_log(char **args, size_t n) {
        _cleanup_free_ char *path = NULL;
        char name[160];
        int r = 0;

        if (asprintf(&path, "%s/tool_calls", arg_artifacts ?: ".") < 0)
                return -ENOMEM;
        _cleanup_close_ int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "toolsctl: %s: %s\n", path, strerror(errno));
                return -errno;
        }
        if (arg_task) {
                if (strchr(arg_task, '/') || strlen(arg_task) > 128) {
                        fputs("toolsctl: --task wants a task id\n", stderr);
                        return -EINVAL;
                }
                (void) snprintf(name, sizeof name, "%s.jsonl", arg_task);
                return log_file_print(dirfd, name);
        }
        /* Every task's transcript, in name order. */
        int dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
                r = -errno;
                if (dfd >= 0)
                        (void) close(dfd);
                return r;
        }
        char **names = NULL;
        size_t k = 0;
        for (struct dirent *de; (de = readdir(d));) {
                size_t l = strlen(de->d_name);
                if (l < 7 || !streq(de->d_name + l - 6, ".jsonl") || de->d_name[0] == '.')
                        continue;
                char **nn = realloc(names, (k + 1) * sizeof *nn);
                if (nn)
                        names = nn;
                if (!nn || !(nn[k] = strdup(de->d_name))) {
                        /* Out of memory: what was collected is freed, nothing printed. */
                        for (size_t i = 0; i < k; i++)
                                free(names[i]);
                        free(names);
                        names = NULL;
                        r = -ENOMEM;
                        break;
                }
                k++;
        }
        (void) closedir(d);
        if (names)
                qsort(names, k, sizeof *names, log_name_cmp);
        for (size_t i = 0; names && i < k; i++) {
                int q = log_file_print(dirfd, names[i]);
                r = r < 0 ? r : q;
                free(names[i]);
        }
        free(names);
        return r < 0 ? r : EXIT_SUCCESS;
}

/* ---- command line ----------------------------------------------------- */

struct verb {
        const char *name;
        size_t min_args, max_args;
        unsigned options;
        /* Stops option parsing at the first non-option (the command). */
        bool until_command;
        int (*run)(char **args, size_t n);
};

static const struct verb verbs[] = {
        { "status",     0, 0,        OPT_BIT(OPT_ALL),                         false, verb_status     },
        { "doctor",     0, 0,        0,                                        false, verb_doctor     },
        { "sessions",   0, 0,        OPT_BIT(OPT_ALL),                         false, verb_sessions   },
        { "info",       0, 0,        0,                                        false, verb_info       },
        { "introspect", 0, 1,        0,                                        false, verb_introspect },
        { "open",       0, 0,        OPTS_SESSION,                             false, verb_open       },
        { "close",      1, 1,        0,                                        false, verb_close      },
        { "tools",      1, 1,        0,                                        false, verb_tools      },
        { "call",       3, 3,        OPT_BIT(OPT_TIMEOUT) | OPT_BIT(OPT_STREAM), false, verb_call     },
        { "cancel",     1, 1,        0,                                        false, verb_cancel     },
        { "run",        1, SIZE_MAX, OPTS_SESSION | OPT_BIT(OPT_TIMEOUT),      true,  verb_run        },
        { "log",        0, 0,        OPT_BIT(OPT_ARTIFACTS) | OPT_BIT(OPT_TASK) | OPT_BIT(OPT_SESSION),
                                                                               false, verb_log        },
};

static void help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n\n"
               "Talk to toolsd, the sandboxed tool-execution daemon.\n\n"
               "Commands:\n"
               "  status [--all]             Show the daemon's state (--all: every user's, root)\n"
               "  doctor                     Check the sandbox backend and the host\n"
               "  sessions [--all]           List your sessions (--all: every user's, root)\n"
               "  open --skill FILE|--tool T...  Open a session, print its id\n"
               "  close SESSION              Close a session\n"
               "  tools SESSION              List a session's tools\n"
               "  call SESSION TOOL JSON     Call a tool with JSON arguments\n"
               "  cancel CALL_ID             Cancel a running call\n"
               "  run [OPTIONS] [--] CMD...  Run one command in a fresh session\n"
               "  log [--task T] [--session S]  Show the transcript under --artifacts DIR\n"
               "  info                       Show the service's Varlink info\n"
               "  introspect [INTERFACE]     Show the Varlink interface description\n\n"
               "Options:\n"
               "  -h --help                  Show this help\n"
               "     --version               Show the version\n"
               "     --socket PATH           Connect to PATH\n"
               "     --json                  Print replies as JSON\n"
               "     --skill FILE            Read the session's Skill from a JSON file\n"
               "     --tool T                A tool of the loadout (repeatable)\n"
               "     --profile P             Command profile (passive, full, shell, ...)\n"
               "     --network               Ask for network access\n"
               "     --pass-env NAME         Pass NAME from this environment (repeatable)\n"
               "     --artifacts DIR         Artifacts root (default: current directory)\n"
               "     --task ID --run ID --role R  Session metadata\n"
               "     --sandbox MODE          auto, required or off\n"
               "     --timeout S             Time limit of the call in seconds\n"
               "     --stream                Stream the call's output (call)\n"
               "     --session S             Only this session's calls (log)\n\n"
               "See toolsctl(1).\n",
               program_invocation_short_name);
}

static int parse_timeout(const char *s) {
        char *end;
        double d;

        errno = 0;
        d = strtod(s, &end);
        if (errno != 0 || end == s || *end || !isfinite(d) || d <= 0 || d > TIMEOUT_SECONDS_MAX)
                return -EINVAL;
        arg_timeout_ms = MAX((int64_t) llround(d * 1000.0), (int64_t) 1);
        return 0;
}

static int parse_option(int c, const char *optarg_) {
        if (c >= OPT_SOCKET && c < _OPT_MAX)
                arg_seen |= OPT_BIT(c);
        switch (c) {
        case 'h':
                help();
                return 0;
        case OPT_VERSION:
                puts("toolsctl " TOOLSD_VERSION);
                return 0;
        case OPT_SOCKET:
                arg_socket = optarg_;
                break;
        case OPT_JSON:
                arg_json = true;
                break;
        case OPT_SKILL:
                arg_skill_file = optarg_;
                break;
        case OPT_TOOL:
                arg_tools[arg_n_tools++] = optarg_;
                break;
        case OPT_PROFILE:
                arg_profile = optarg_;
                break;
        case OPT_NETWORK:
                arg_network = true;
                break;
        case OPT_PASS_ENV:
                arg_pass_env[arg_n_pass_env++] = optarg_;
                break;
        case OPT_ARTIFACTS:
                arg_artifacts = optarg_;
                break;
        case OPT_TASK:
                arg_task = optarg_;
                break;
        case OPT_SESSION:
                arg_session = optarg_;
                break;
        case OPT_RUN:
                arg_run = optarg_;
                break;
        case OPT_ROLE:
                arg_role = optarg_;
                break;
        case OPT_SANDBOX:
                if (!streq(optarg_, "auto") && !streq(optarg_, "required") && !streq(optarg_, "off")) {
                        fprintf(stderr, "toolsctl: --sandbox must be auto, required or off\n");
                        return -EINVAL;
                }
                arg_sandbox = optarg_;
                break;
        case OPT_TIMEOUT:
                if (parse_timeout(optarg_) < 0) {
                        fprintf(stderr, "toolsctl: --timeout wants seconds, more than 0 and at most %.0f\n",
                                TIMEOUT_SECONDS_MAX);
                        return -EINVAL;
                }
                break;
        case OPT_STREAM:
                arg_stream = true;
                break;
        case OPT_ALL:
                arg_all = true;
                break;
        case '?':
                return -EINVAL;
        default:
                return -EINVAL;
        }
        return 1;
}

static int parse_loop(int argc, char **argv, const char *optstring) {
        int c, r;

        while ((c = getopt_long(argc, argv, optstring, options, NULL)) >= 0) {
                r = parse_option(c, optarg);
                if (r <= 0)
                        return r;
        }
        return 1;
}

static int check_options(const struct verb *v) {
        unsigned bad = arg_seen & ~(v->options | OPTS_GLOBAL);

        for (const struct option *o = options; o->name; o++)
                if (o->val >= OPT_SOCKET && (bad & OPT_BIT(o->val))) {
                        fprintf(stderr, "toolsctl: --%s does not apply to '%s'\n", o->name, v->name);
                        return -EINVAL;
                }
        if (arg_skill_file && arg_n_tools > 0) {
                fputs("toolsctl: --skill and --tool exclude each other\n", stderr);
                return -EINVAL;
        }
        return 0;
}

/* Returns 1 with *ret_verb and the verb's positional arguments to run, 0 to
 * exit successfully (--help), negative on a usage error. */
static int parse_argv(int argc, char **argv, const struct verb **ret_verb, char ***ret_args, size_t *ret_n) {
        const struct verb *v = NULL;
        int r, sub_argc;
        char **sub_argv;

        /* Options before the command; then the command's own, which may
         * follow its arguments, except for run, whose command is not ours. */
        r = parse_loop(argc, argv, "+h");
        if (r <= 0)
                return r;
        if (optind >= argc) {
                fputs("toolsctl: missing command; see --help\n", stderr);
                return -EINVAL;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[optind]))
                        v = &verbs[i];
        if (!v) {
                fprintf(stderr, "toolsctl: unknown command '%s'; see --help\n", argv[optind]);
                return -EINVAL;
        }
        sub_argc = argc - optind;
        sub_argv = argv + optind;
        sub_argv[0] = argv[0];
        optind = 0; /* GNU getopt: start over on the new vector */
        r = parse_loop(sub_argc, sub_argv, v->until_command ? "+h" : "h");
        if (r <= 0)
                return r;
        r = check_options(v);
        if (r < 0)
                return r;
        size_t n = (size_t) (sub_argc - optind);
        if (n < v->min_args || n > v->max_args) {
                fprintf(stderr, "toolsctl: wrong number of arguments for '%s'; see --help\n", v->name);
                return -EINVAL;
        }
        *ret_verb = v;
        *ret_args = sub_argv + optind;
        *ret_n = n;
        return 1;
}

int main(int argc, char **argv) {
        _cleanup_free_ const char **tools = NULL, **pass_env = NULL;
        const struct verb *v;
        char **args;
        size_t n;
        int r;

        /* Every repeatable option takes an argument: argc bounds them. */
        tools = arg_tools = calloc((size_t) argc, sizeof(char *));
        pass_env = arg_pass_env = calloc((size_t) argc, sizeof(char *));
        if (!tools || !pass_env)
                return EXIT_FAILURE;
        (void) sigprocmask(SIG_SETMASK, NULL, &wait_mask);

        r = parse_argv(argc, argv, &v, &args, &n);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : EXIT_USAGE;

        r = v->run(args, n);
        free(socket_used);
        if (r == ERR_NO_DAEMON)
                return EX_UNAVAILABLE;
        if (r == -ENOMEM)
                fputs("toolsctl: out of memory\n", stderr);
        return r < 0 ? EXIT_FAILURE : r;
}
