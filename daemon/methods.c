/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The method table: org.varlink.service and io.toolsd.
 *
 * Runs in the broker as the serving uid. Every call's parameters are first
 * validated against the interface definition (proto/io.toolsd.varlink, the
 * source of truth): an unknown or mistyped member never reaches a handler.
 * Handlers then check values (ranges, paths, names) and name the field they
 * refuse.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "audit.h"
#include "config-paths.h"
#include "daemon.h"
#include "io.toolsd.varlink.h"
#include "log.h"
#include "org.varlink.service.varlink.h"

#define NAME_MAX_LEN 128u
#define TEXT_MAX_LEN 1024u
#define ENV_ENTRIES_MAX 1024u

struct method {
        const char *name;       /* member name */
        int (*fn)(struct conn *c, struct json_object *p);
};

/* ---- small JSON helpers ---- */

static struct json_object *jget(struct json_object *o, const char *key) {
        struct json_object *v = NULL;
        if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return NULL;
        return v;
}

static const char *jstr(struct json_object *o, const char *key) {
        struct json_object *v = jget(o, key);
        return v ? json_object_get_string(v) : NULL;
}

static void jadd(struct json_object *o, const char *key, struct json_object *v) {
        (void) json_object_object_add(o, key, v);
}

static struct json_object *jstrv(char *const *v) {
        struct json_object *a = json_object_new_array();
        for (size_t i = 0; v && v[i]; i++)
                (void) json_object_array_add(a, json_object_new_string(v[i]));
        return a;
}

/* ---- errors ---- */

static void error1(struct conn *c, const char *error, const char *key, struct json_object *value) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        jadd(p, key, value);
        conn_error(c, error, p);
}

void error_invalid_argument(struct conn *c, const char *field, const char *reason) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        jadd(p, "field", json_object_new_string(field));
        jadd(p, "reason", json_object_new_string(reason));
        conn_error(c, "io.toolsd.InvalidArgument", p);
}

void error_limit(struct conn *c, const char *what, uint64_t limit) {
        _cleanup_json_ struct json_object *p = json_object_new_object();
        jadd(p, "what", json_object_new_string(what));
        jadd(p, "limit", json_object_new_int64((int64_t) limit));
        conn_error(c, "io.toolsd.LimitExceeded", p);
}

static void error_no_session(struct conn *c, const char *id) {
        error1(c, "io.toolsd.NoSuchSession", "session", json_object_new_string(id ? id : ""));
}

/* Names, ids and labels from the peer: short, printable, no control bytes. */
static bool text_ok(const char *s, size_t max) {
        size_t n = strlen(s);
        if (n == 0 || n > max)
                return false;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

/* A task id names the transcript file: a bare file name. */
static bool bare_id_ok(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > NAME_MAX_LEN || s[0] == '.' || s[0] == '-')
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* ---- org.varlink.service ---- */

static int method_get_info(struct conn *c, struct json_object *p) {
        _cleanup_json_ struct json_object *r = json_object_new_object();
        jadd(r, "vendor", json_object_new_string("toolsd"));
        jadd(r, "product", json_object_new_string("toolsd"));
        jadd(r, "version", json_object_new_string(TOOLSD_VERSION));
        jadd(r, "url", json_object_new_string("https://github.com/toolsd/toolsd"));
        struct json_object *ifs = json_object_new_array();
        (void) json_object_array_add(ifs, json_object_new_string("org.varlink.service"));
        (void) json_object_array_add(ifs, json_object_new_string("io.toolsd"));
        jadd(r, "interfaces", ifs);
        conn_reply(c, r);
        return 0;
}

static int method_get_interface_description(struct conn *c, struct json_object *p) {
        const char *name = jstr(p, "interface");
        const char *text = NULL;

        if (strcmp(name, "io.toolsd") == 0)
                text = io_toolsd_varlink;
        else if (strcmp(name, "org.varlink.service") == 0)
                text = org_varlink_service_varlink;
        if (!text) {
                error1(c, "org.varlink.service.InterfaceNotFound", "interface", json_object_new_string(name));
                return 0;
        }
        _cleanup_json_ struct json_object *r = json_object_new_object();
        jadd(r, "description", json_object_new_string(text));
        conn_reply(c, r);
        return 0;
}

/* ---- io.toolsd: sessions ---- */

static int skill_limits(struct server *s, struct json_object *lim, struct session_limits *l,
                        const char **ret_field) {
        const struct toolsd_config *cfg = s->config;
        static const struct {
                const char *key;
                size_t off;
                int is32;
        } map[] = {
                { "timeout_ms", offsetof(struct session_limits, timeout_ms), 1 },
                { "cpu_seconds", offsetof(struct session_limits, cpu_seconds), 0 },
                { "memory_bytes", offsetof(struct session_limits, memory_bytes), 0 },
                { "file_size_bytes", offsetof(struct session_limits, file_size_bytes), 0 },
                { "processes", offsetof(struct session_limits, processes), 0 },
                { "open_files", offsetof(struct session_limits, open_files), 0 },
                { "output_bytes", offsetof(struct session_limits, output_bytes), 0 },
        };

        /* timeout_ms is the most a call of the session may ask for; a call
         * that names none gets DefaultTimeoutSec within it (call_start). */
        *l = (struct session_limits) {
                .timeout_ms = cfg->max_timeout_ms,
                .cpu_seconds = cfg->cpu_seconds,
                .memory_bytes = cfg->memory_bytes,
                .file_size_bytes = cfg->file_size_bytes,
                .processes = cfg->processes,
                .open_files = cfg->open_files,
                .output_bytes = cfg->max_output_bytes,
        };
        /* A skill may only lower a limit, never raise one. */
        for (size_t i = 0; i < ELEMENTSOF(map); i++) {
                struct json_object *v = jget(lim, map[i].key);
                if (!v)
                        continue;
                int64_t x = json_object_get_int64(v);
                char *field = (char *) l + map[i].off;
                uint64_t cur = map[i].is32 ? *(uint32_t *) (void *) field : *(uint64_t *) (void *) field;
                if (x <= 0) {
                        *ret_field = map[i].key;
                        return -EINVAL;
                }
                if ((uint64_t) x < cur) {
                        if (map[i].is32)
                                *(uint32_t *) (void *) field = (uint32_t) x;
                        else
                                *(uint64_t *) (void *) field = (uint64_t) x;
                }
        }
        return 0;
}

/* Whether the socket this connection came in on lies beneath root (a
 * canonical path). The path is the listener's, from getsockname() on the
 * connection itself, so it is known under socket activation and in a
 * broker too; its directory is canonicalised before comparing, so "//" or
 * symlinks in --listen change nothing. Unknown (abstract, unnamed) counts
 * as not within. */
static bool socket_within(struct conn *c, const char *root) {
        struct sockaddr_un sa = {};
        socklen_t len = sizeof sa;
        uv_os_fd_t fd;
        char dir[PATH_MAX], real[PATH_MAX];

        if (uv_fileno((uv_handle_t *) &c->pipe, &fd) < 0 || getsockname(fd, (struct sockaddr *) &sa, &len) < 0 ||
            len <= offsetof(struct sockaddr_un, sun_path) || sa.sun_path[0] != '/')
                return false;
        sa.sun_path[MIN((size_t) len - offsetof(struct sockaddr_un, sun_path), sizeof sa.sun_path - 1)] = '\0';
        (void) snprintf(dir, sizeof dir, "%s", sa.sun_path);
        char *slash = strrchr(dir, '/');
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        if (!realpath(dir, real))
                return false;
        size_t rl = strlen(root);
        return strncmp(real, root, rl) == 0 && (real[rl] == '/' || real[rl] == '\0');
}

static int open_root(struct conn *c, const char *path, struct session *sess) {
        struct stat st;
        char proc[64], buf[PATH_MAX];

        if (path[0] != '/' || strlen(path) >= PATH_MAX) {
                error_invalid_argument(c, "artifacts_root", "must be an absolute path");
                return -EINVAL;
        }
        /* Opened once; every later use goes through this fd, so renaming or
         * swapping the path afterwards changes nothing. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                char reason[256];
                (void) snprintf(reason, sizeof reason, "cannot open as a directory: %s", strerror(errno));
                error_invalid_argument(c, "artifacts_root", reason);
                return -EINVAL;
        }
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != c->uid && faccessat(fd, "", W_OK | X_OK, AT_EMPTY_PATH | AT_EACCESS) < 0) {
                error_invalid_argument(c, "artifacts_root", "not owned by nor writable by the caller");
                return -EPERM;
        }
        if (st.st_mode & S_IWOTH) {
                error_invalid_argument(c, "artifacts_root",
                                       "is world-writable: other users could plant files in it");
                return -EPERM;
        }
        (void) snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, buf, sizeof buf - 1);
        if (n <= 0)
                return -errno;
        buf[n] = '\0';
        if (strcmp(buf, "/") == 0) {
                error_invalid_argument(c, "artifacts_root", "must not be /");
                return -EPERM;
        }
        /* The sandbox binds the root read-write: toolsd's own socket must
         * not be inside it. */
        if (socket_within(c, buf)) {
                error_invalid_argument(c, "artifacts_root", "contains toolsd's socket");
                return -EPERM;
        }

        /* tool_calls/ holds the transcript and raw outputs: ours, 0700,
         * read-only inside the sandbox. */
        if (mkdirat(fd, "tool_calls", 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int tc = openat(fd, "tool_calls", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tc < 0) {
                error_invalid_argument(c, "artifacts_root", "tool_calls exists and is not a directory");
                return -EINVAL;
        }
        if (fstat(tc, &st) == 0 && st.st_uid == geteuid())
                (void) fchmod(tc, 0700);

        sess->root_path = strdup(buf);
        if (!sess->root_path)
                return -ENOMEM;
        sess->root_fd = TAKE_FD(fd);
        sess->tool_calls_fd = TAKE_FD(tc);
        return 0;
}

static int session_env(struct conn *c, struct session *sess, struct json_object *skill, struct json_object *env) {
        const struct env_pair base[] = {
                { "PATH", "/usr/local/bin:/usr/bin:/bin" },
                { "HOME", "/tmp" },
                { "TMPDIR", "/tmp" },
                { "SHELL", "/bin/sh" },
                { "USER", NULL },
                { "LOGNAME", NULL },
        };
        struct env_pair b[ELEMENTSOF(base)];
        _cleanup_free_ struct env_pair *client = NULL;
        _cleanup_free_ const char **pass = NULL;
        struct passwd pw, *res = NULL;
        char pwbuf[4096];
        size_t n_client = 0, n_pass = 0;

        memcpy(b, base, sizeof b);
        const char *user = "user";
        if (getpwuid_r(sess->uid, &pw, pwbuf, sizeof pwbuf, &res) == 0 && res)
                user = res->pw_name;
        b[4].value = b[5].value = user;

        if (env) {
                size_t n = (size_t) json_object_object_length(env);
                if (n > ENV_ENTRIES_MAX) {
                        error_limit(c, "env_entries", ENV_ENTRIES_MAX);
                        return -E2BIG;
                }
                client = calloc(n + 1, sizeof *client);
                if (!client)
                        return -ENOMEM;
                json_object_object_foreach(env, k, v) {
                        client[n_client++] = (struct env_pair) { k, json_object_get_string(v) };
                }
        }
        struct json_object *pe = jget(skill, "pass_env");
        if (pe) {
                n_pass = json_object_array_length(pe);
                if (n_pass > ENV_ENTRIES_MAX) {
                        error_limit(c, "pass_env_entries", ENV_ENTRIES_MAX);
                        return -E2BIG;
                }
                pass = calloc(n_pass + 1, sizeof *pass);
                if (!pass)
                        return -ENOMEM;
                for (size_t i = 0; i < n_pass; i++)
                        pass[i] = json_object_get_string(json_object_array_get_idx(pe, i));
        }

        int r = policy_env_build(b, ELEMENTSOF(b), pass, n_pass, client, n_client, &sess->envp,
                                 &sess->dropped_env);
        if (r < 0) {
                error_invalid_argument(c, "env", "cannot build the environment");
                return r;
        }
        return 0;
}

/* Root's broker in system mode: uid 0 with no capability. Since Linux 5.12
 * mapping uid 0 into a user namespace needs CAP_SETFCAP, so bwrap cannot
 * build its sandbox, and falling back would run the model's commands as
 * root with no namespace around them. Only an explicit sandbox:"off" that
 * the administrator allows runs them. */
#define ROOT_BROKER_REASON                                                                                   \
        "a root peer cannot be sandboxed by the system toolsd: its broker runs as uid 0 with no "           \
        "capabilities, and mapping uid 0 into a user namespace needs CAP_SETFCAP; run the agent as an "      \
        "unprivileged user, or use a private toolsd (user mode) as root"

static bool root_broker_unsandboxable(const struct server *s) {
        return !s->sandbox_available && s->uid == 0 && strcmp(s->mode, "system") == 0;
}

static int session_sandbox(struct conn *c, struct session *sess, const char *mode) {
        struct server *s = c->server;
        bool required = s->config->require_sandbox == REQUIRE_SANDBOX_YES;

        if (!mode)
                mode = "auto";
        if (strcmp(mode, "required") == 0)
                required = true;
        else if (strcmp(mode, "off") == 0) {
                /* Honoured only where the admin allows unsandboxed runs. */
                if (!required && s->config->allow_unsandboxed) {
                        sess->sandboxed = false;
                        return 0;
                }
        } else if (strcmp(mode, "auto") != 0) {
                error_invalid_argument(c, "sandbox", "must be \"auto\", \"required\" or \"off\"");
                return -EINVAL;
        }

        char why[256];
        if (s->sandbox_available && (!required || layers_complete(s, why, sizeof why))) {
                sess->sandboxed = true;
                return 0;
        }
        if (s->sandbox_available) {
                error1(c, "io.toolsd.SandboxUnavailable", "reason", json_object_new_string(why));
                return -EPERM;
        }
        if (root_broker_unsandboxable(s)) {
                error1(c, "io.toolsd.SandboxUnavailable", "reason", json_object_new_string(ROOT_BROKER_REASON));
                return -EPERM;
        }
        if (required) {
                char reason[512];
                (void) snprintf(reason, sizeof reason,
                                "the bubblewrap sandbox does not work here (%s); install bubblewrap and "
                                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
                                "user.max_user_namespaces > 0), then check with 'toolsctl doctor'",
                                s->sandbox_detail);
                error1(c, "io.toolsd.SandboxUnavailable", "reason", json_object_new_string(reason));
                return -EPERM;
        }
        sess->sandboxed = false;
        return 0;
}

static int session_skill(struct conn *c, struct session *sess, struct json_object *skill) {
        struct server *s = c->server;
        const char *name = jstr(skill, "name");
        struct json_object *tools = jget(skill, "tools");
        const char *profile = jstr(skill, "profile");
        struct json_object *net = jget(skill, "needs_network");
        const char *field = NULL;
        char buf[256];

        if (!text_ok(name, NAME_MAX_LEN)) {
                error_invalid_argument(c, "skill.name", "must be 1-128 printable characters");
                return -EINVAL;
        }
        sess->skill = strdup(name);
        if (!sess->skill)
                return -ENOMEM;

        size_t n = json_object_array_length(tools);
        for (size_t i = 0; i < n; i++) {
                const char *t = json_object_get_string(json_object_array_get_idx(tools, i));
                enum tool_id id;
                if (!tool_find(t, &id)) {
                        (void) snprintf(buf, sizeof buf, "skill.tools[%zu]", i);
                        error_invalid_argument(c, buf, "no such tool");
                        return -EINVAL;
                }
                sess->tools |= 1u << id;
        }

        sess->profile = profile_set_find(s->profiles, profile ? profile : "passive");
        if (!sess->profile) {
                error_invalid_argument(c, "skill.profile", "no such profile on this server");
                return -EINVAL;
        }
        /* The server decides: a skill that asks for network where policy
         * forbids it gets none, and the reply says so. */
        sess->network = net && json_object_get_boolean(net) && s->config->allow_network;

        if (skill_limits(s, jget(skill, "limits"), &sess->limits, &field) < 0) {
                (void) snprintf(buf, sizeof buf, "skill.limits.%s", field);
                error_invalid_argument(c, buf, "must be a positive integer");
                return -EINVAL;
        }
        return 0;
}

static int method_open_session(struct conn *c, struct json_object *p) {
        struct server *s = c->server;
        struct uid_count *u = server_uid_count(s, c->uid, true);
        const char *task = jstr(p, "task_id"), *run = jstr(p, "run_id"), *role = jstr(p, "role");
        int r;

        if (!u)
                return -ENOMEM;
        if (u->sessions >= s->config->max_sessions_per_uid) {
                error_limit(c, "sessions_per_user", s->config->max_sessions_per_uid);
                return 0;
        }
        if (task && (!bare_id_ok(task) || !audit_task_id_valid(task))) {
                error_invalid_argument(c, "task_id", "must be 1-128 of [A-Za-z0-9._-], not starting with '.' or '-'");
                return 0;
        }
        if (run && !text_ok(run, TEXT_MAX_LEN)) {
                error_invalid_argument(c, "run_id", "must be 1-1024 printable characters");
                return 0;
        }
        if (role && !text_ok(role, NAME_MAX_LEN)) {
                error_invalid_argument(c, "role", "must be 1-128 printable characters");
                return 0;
        }

        struct session *sess = calloc(1, sizeof *sess);
        if (!sess)
                return -ENOMEM;
        sess->uid = c->uid;
        sess->root_fd = sess->tool_calls_fd = -1;
        sess->created_usec = sess->used_usec = now_usec();

        r = session_skill(c, sess, jget(p, "skill"));
        if (r >= 0)
                r = session_sandbox(c, sess, jstr(p, "sandbox"));
        if (r >= 0)
                r = open_root(c, jstr(p, "artifacts_root"), sess);
        if (r >= 0)
                r = session_env(c, sess, jget(p, "skill"), jget(p, "env"));
        if (r >= 0 && ((run && !(sess->run_id = strdup(run))) || (role && !(sess->role = strdup(role)))))
                r = -ENOMEM;
        if (r >= 0)
                r = session_add(s, sess);
        if (r >= 0 && !(sess->task_id = strdup(task ? task : sess->id)))
                r = -ENOMEM;
        if (r < 0) {
                if (sess->hnext || session_find(s, sess->id, sess->uid))
                        session_remove(s, sess);
                session_free(sess);
                /* Refusals have replied already; an internal failure has not. */
                return r == -ENOMEM ? r : 0;
        }

        struct json_object *tools = NULL;
        r = tools_specs(s, sess, &tools);
        if (r < 0)
                return r;
        _cleanup_json_ struct json_object *reply = json_object_new_object();
        jadd(reply, "session", json_object_new_string(sess->id));
        jadd(reply, "tools", tools);
        jadd(reply, "sandboxed", json_object_new_boolean(sess->sandboxed));
        jadd(reply, "backend", json_object_new_string(sess->sandboxed ? "bwrap" : "none"));
        jadd(reply, "profile", json_object_new_string(profile_name(sess->profile)));
        jadd(reply, "network", json_object_new_boolean(sess->network));
        jadd(reply, "dropped_env", jstrv(sess->dropped_env));
        log_info("session %.8s… opened: uid=%u skill=%s profile=%s sandboxed=%s network=%s root=%s",
                 sess->id, (unsigned) sess->uid, sess->skill, profile_name(sess->profile),
                 sess->sandboxed ? "yes" : "no", sess->network ? "yes" : "no", sess->root_path);
        conn_reply(c, reply);
        return 0;
}

static int method_close_session(struct conn *c, struct json_object *p) {
        struct server *s = c->server;
        const char *id = jstr(p, "session");
        struct session *sess = session_find(s, id, c->uid);

        if (!sess) {
                error_no_session(c, id);
                return 0;
        }
        session_remove(s, sess);
        sess->closed = true;
        /* Running calls end as cancelled; the last one frees the session. */
        for (struct call *x = s->calls, *next; x; x = next) {
                next = x->next;
                if (x->session == sess)
                        call_cancel(x, "cancelled");
        }
        log_info("session %.8s… closed by uid=%u", sess->id, (unsigned) c->uid);
        if (sess->running == 0)
                session_free(sess);
        conn_reply(c, NULL);
        return 0;
}

static struct json_object *session_info(const struct session *x, uint64_t now) {
        struct json_object *o = json_object_new_object();
        jadd(o, "session", json_object_new_string(x->id));
        jadd(o, "uid", json_object_new_int64(x->uid));
        jadd(o, "skill", json_object_new_string(x->skill));
        jadd(o, "profile", json_object_new_string(profile_name(x->profile)));
        jadd(o, "artifacts_root", json_object_new_string(x->root_path));
        if (x->run_id)
                jadd(o, "run_id", json_object_new_string(x->run_id));
        jadd(o, "task_id", json_object_new_string(x->task_id));
        if (x->role)
                jadd(o, "role", json_object_new_string(x->role));
        jadd(o, "sandboxed", json_object_new_boolean(x->sandboxed));
        jadd(o, "network", json_object_new_boolean(x->network));
        jadd(o, "running_calls", json_object_new_int64(x->running));
        jadd(o, "age_seconds", json_object_new_int64((int64_t) ((now - x->created_usec) / 1000000u)));
        jadd(o, "idle_seconds", json_object_new_int64((int64_t) ((now - x->used_usec) / 1000000u)));
        return o;
}

/* all_users: root's read-only view across users. 1: root asked; 0: not
 * asked; -EPERM: refused to anyone else, with a reply naming why. In
 * system mode the other users' part comes from their brokers' status pages
 * (broker.c); in user mode there is none. */
static int all_users_asked(struct conn *c, struct json_object *p) {
        struct json_object *v = jget(p, "all_users");
        if (!v || !json_object_get_boolean(v))
                return 0;
        if (c->uid != 0) {
                error_invalid_argument(c, "all_users", "only root (uid 0) may see other users' sessions");
                return -EPERM;
        }
        return 1;
}

static int method_list_sessions(struct conn *c, struct json_object *p) {
        struct server *s = c->server;
        int all = all_users_asked(c, p);
        uint64_t now = now_usec();
        size_t b = 0;

        if (all < 0)
                return 0;
        struct json_object *list = json_object_new_array();
        for (struct session *x = NULL; (x = session_next(s, &b, x));)
                if (x->uid == c->uid)
                        (void) json_object_array_add(list, session_info(x, now));
        _cleanup_json_ struct json_object *r = json_object_new_object();
        jadd(r, "sessions", list);
        if (all) {
                struct json_object *incomplete = json_object_new_array();
                broker_peer_view(s, list, NULL, incomplete);
                jadd(r, "incomplete_uids", incomplete);
        }
        conn_reply(c, r);
        return 0;
}

static int method_list_tools(struct conn *c, struct json_object *p) {
        struct server *s = c->server;
        const char *id = jstr(p, "session");
        struct session *sess = session_find(s, id, c->uid);
        struct json_object *tools;

        if (!sess) {
                error_no_session(c, id);
                return 0;
        }
        int r = tools_specs(s, sess, &tools);
        if (r < 0)
                return r;
        _cleanup_json_ struct json_object *reply = json_object_new_object();
        jadd(reply, "tools", tools);
        conn_reply(c, reply);
        return 0;
}

static int method_call(struct conn *c, struct json_object *p) {
        struct server *s = c->server;
        const char *id = jstr(p, "session");
        struct session *sess = session_find(s, id, c->uid);
        struct json_object *to = jget(p, "timeout_ms");

        if (!sess) {
                error_no_session(c, id);
                return 0;
        }
        /* -1 means "none given" to call_start: a given -1 (or any negative)
         * must be refused like 0, not taken for the default. */
        call_start(c, sess, jstr(p, "tool"), jget(p, "arguments"), to ? MAX(json_object_get_int64(to), 0) : -1);
        return 0;
}

static int method_cancel(struct conn *c, struct json_object *p) {
        const char *id = jstr(p, "call_id");
        struct call *call = call_find(c->server, id, c->uid);

        if (!call) {
                error1(c, "io.toolsd.NoSuchCall", "call_id", json_object_new_string(id));
                return 0;
        }
        call_cancel(call, "cancelled");
        conn_reply(c, NULL);
        return 0;
}

static int method_status(struct conn *c, struct json_object *p) {
        struct server *s = c->server;
        int all = all_users_asked(c, p);
        _cleanup_json_ struct json_object *r = json_object_new_object();
        struct uid_count *u = server_uid_count(s, c->uid, false);
        uint32_t running = 0;

        if (all < 0)
                return 0;
        for (struct call *x = s->calls; x; x = x->next)
                if (x->session->uid == c->uid)
                        running++;
        jadd(r, "version", json_object_new_string(TOOLSD_VERSION));
        jadd(r, "uptime_seconds", json_object_new_int64((int64_t) ((now_usec() - s->start_usec) / 1000000u)));
        jadd(r, "mode", json_object_new_string(s->mode));
        jadd(r, "uid", json_object_new_int64(c->uid));
        jadd(r, "sessions", json_object_new_int64(u ? u->sessions : 0));
        jadd(r, "running_calls", json_object_new_int64(running));
        jadd(r, "connections", json_object_new_int64(u ? u->connections : 0));
        jadd(r, "backend", json_object_new_string(s->sandbox_available ? "bwrap" : "none"));
        jadd(r, "sandbox_available", json_object_new_boolean(s->sandbox_available));
        jadd(r, "require_sandbox", json_object_new_boolean(s->config->require_sandbox == REQUIRE_SANDBOX_YES));
        if (all) {
                struct json_object *users = json_object_new_array(), *me = json_object_new_object();
                jadd(me, "uid", json_object_new_int64(c->uid));
                if (s->ctl_fd >= 0 || s->page)
                        jadd(me, "broker_pid", json_object_new_int64(getpid()));
                jadd(me, "sessions", json_object_new_int64(u ? u->sessions : 0));
                jadd(me, "running_calls", json_object_new_int64(running));
                jadd(me, "connections", json_object_new_int64(u ? u->connections : 0));
                jadd(me, "complete", json_object_new_boolean(true));
                (void) json_object_array_add(users, me);
                broker_peer_view(s, NULL, users, NULL);
                jadd(r, "users", users);
        }
        conn_reply(c, r);
        return 0;
}

void doctor_check(struct json_object *list, const char *name, bool ok, const char *fmt, ...) {
        char detail[512];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
        struct json_object *o = json_object_new_object();
        jadd(o, "name", json_object_new_string(name));
        jadd(o, "ok", json_object_new_boolean(ok));
        jadd(o, "detail", json_object_new_string(detail));
        (void) json_object_array_add(list, o);
}

static long read_long_file(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        long v = -1;
        if (f && fscanf(f, "%ld", &v) != 1)
                v = -1;
        return v;
}

/* This process's capability sets and no_new_privs, as the kernel reports
 * them: a broker must show all zero. */
static void doctor_capabilities(struct server *s, struct json_object *checks) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256], eff[32] = "?", prm[32] = "?", bnd[32] = "?", nnp[8] = "?";

        while (f && fgets(line, sizeof line, f)) {
                (void) (sscanf(line, "CapEff: %31s", eff) || sscanf(line, "CapPrm: %31s", prm) ||
                        sscanf(line, "CapBnd: %31s", bnd) || sscanf(line, "NoNewPrivs: %7s", nnp));
        }
        bool none = strtoull(eff, NULL, 16) == 0 && strtoull(prm, NULL, 16) == 0;
        bool broker = s->ctl_fd >= 0;
        doctor_check(checks, "capabilities", !broker || (none && strtoull(bnd, NULL, 16) == 0 && strcmp(nnp, "1") == 0),
                     "CapEff=%llx CapPrm=%llx CapBnd=%llx NoNewPrivs=%s%s", strtoull(eff, NULL, 16),
                     strtoull(prm, NULL, 16), strtoull(bnd, NULL, 16), nnp,
                     broker ? " (a broker must hold none)" : "");
}

static int method_doctor(struct conn *c, struct json_object *p) {
        struct server *s = c->server;
        struct json_object *checks = json_object_new_array();
        bool required = s->config->require_sandbox == REQUIRE_SANDBOX_YES;
        long userns = read_long_file("/proc/sys/user/max_user_namespaces");
        long clone = read_long_file("/proc/sys/kernel/unprivileged_userns_clone");

        doctor_check(checks, "mode", true, "%s mode, serving uid %u", s->mode, (unsigned) s->uid);
        doctor_check(checks, "sandbox", s->sandbox_available || (!required && !root_broker_unsandboxable(s)), "%s%s",
                     s->sandbox_detail,
                     s->sandbox_available            ? ""
                     : root_broker_unsandboxable(s)  ? " (" ROOT_BROKER_REASON ")"
                     : required                      ? " (RequireSandbox=yes: sessions are refused)"
                                                     : " (commands run unsandboxed; results say sandboxed: false)");
        doctor_check(checks, "bubblewrap", s->bwrap_version[0] != '\0', "%s at %s",
                  s->bwrap_version[0] ? s->bwrap_version : "not found", s->config->bwrap_path);
        doctor_check(checks, "user_namespaces", userns != 0 && clone != 0,
                  "user.max_user_namespaces=%ld%s", userns,
                  clone < 0 ? "" : clone ? ", unprivileged_userns_clone=1" : ", unprivileged_userns_clone=0");
        if (s->bound_path) {
                struct stat st;
                if (stat(s->bound_path, &st) < 0)
                        doctor_check(checks, "socket", false, "%s: %s", s->bound_path, strerror(errno));
                else
                        doctor_check(checks, "socket", (st.st_mode & 0077) == 0 && st.st_uid == s->uid,
                                  "%s mode %04o owner %u", s->bound_path, (unsigned) (st.st_mode & 07777),
                                  (unsigned) st.st_uid);
        } else if (s->ctl_fd >= 0)
                doctor_check(checks, "socket", true, "broker of uid %u: connections come from the master",
                          (unsigned) s->uid);
        else
                doctor_check(checks, "socket", true, "socket passed by systemd (socket activation)");
        doctor_capabilities(s, checks);
        doctor_layers(s, checks);
        doctor_check(checks, "config", true, "%s", s->config_path ? s->config_path : "built-in defaults");
        const char *const *shapes = profile_shapes(profile_set_find(s->profiles, "passive"));
        doctor_check(checks, "profiles", shapes != NULL, "%s (passive: %zu shapes)",
                  s->config->profiles_dir, strv_length((char *const *) shapes));
        doctor_check(checks, "require_sandbox", true, "RequireSandbox=%s, AllowUnsandboxed=%s, AllowNetwork=%s",
                  required ? "yes" : "no", s->config->allow_unsandboxed ? "yes" : "no",
                  s->config->allow_network ? "yes" : "no");

        _cleanup_json_ struct json_object *r = json_object_new_object();
        jadd(r, "checks", checks);
        conn_reply(c, r);
        return 0;
}

/* ---- dispatch ---- */

static const struct method service_methods[] = {
        { "GetInfo", method_get_info },
        { "GetInterfaceDescription", method_get_interface_description },
};

static const struct method toolsd_methods[] = {
        { "OpenSession", method_open_session },
        { "CloseSession", method_close_session },
        { "ListSessions", method_list_sessions },
        { "ListTools", method_list_tools },
        { "Call", method_call },
        { "Cancel", method_cancel },
        { "Status", method_status },
        { "Doctor", method_doctor },
};

static const struct method *method_lookup(const struct method *t, size_t n, const char *member) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(t[i].name, member) == 0)
                        return &t[i];
        return NULL;
}

/* The longest string anywhere in params, except the tool arguments of a
 * Call, which the tool's own schema bounds. */
static bool strings_within(struct json_object *o, size_t max, unsigned depth) {
        if (depth > 256)
                return false;
        switch (json_object_get_type(o)) {
        case json_type_string:
                return (size_t) json_object_get_string_len(o) <= max;
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        if (!strings_within(json_object_array_get_idx(o, i), max, depth + 1))
                                return false;
                return true;
        case json_type_object: {
                json_object_object_foreach(o, k, v) {
                        if (depth == 0 && strcmp(k, "arguments") == 0)
                                continue;
                        if (strlen(k) > max || !strings_within(v, max, depth + 1))
                                return false;
                }
                return true;
        }
        default:
                return true;
        }
}

int methods_dispatch(struct conn *c, struct varlink_call *call) {
        struct server *s = c->server;
        _cleanup_free_ char *iface = NULL;
        _cleanup_free_ char *field = NULL;
        const char *member;
        const struct method *m = NULL;
        struct idl_interface *idl = NULL;
        int r;

        r = varlink_method_split(call->method, &iface, &member);
        if (r < 0)
                return r;
        if (strcmp(iface, "org.varlink.service") == 0) {
                idl = s->idl_service;
                m = method_lookup(service_methods, ELEMENTSOF(service_methods), member);
        } else if (strcmp(iface, "io.toolsd") == 0) {
                idl = s->idl;
                m = method_lookup(toolsd_methods, ELEMENTSOF(toolsd_methods), member);
        } else {
                error1(c, "org.varlink.service.InterfaceNotFound", "interface", json_object_new_string(iface));
                return 0;
        }
        if (!m || !idl_has_method(idl, member)) {
                error1(c, "org.varlink.service.MethodNotFound", "method", json_object_new_string(call->method));
                return 0;
        }
        if (call->upgrade) {
                error1(c, "org.varlink.service.MethodNotImplemented", "method",
                       json_object_new_string(call->method));
                return 0;
        }
        r = idl_validate_method(idl, member, true, call->parameters, &field);
        if (r < 0) {
                error1(c, "org.varlink.service.InvalidParameter", "parameter",
                       json_object_new_string(field ? field : ""));
                return 0;
        }
        if (!strings_within(call->parameters, s->config->max_string_bytes, 0)) {
                error_limit(c, "string_size", s->config->max_string_bytes);
                return 0;
        }
        r = m->fn(c, call->parameters);
        if (r < 0) {
                log_error_errno(r, "%s failed for uid=%u: %m", call->method, (unsigned) c->uid);
                if (!c->call)
                        error1(c, "io.toolsd.InternalError", "reason", json_object_new_string(strerror(-r)));
                return 0;
        }
        return 0;
}
