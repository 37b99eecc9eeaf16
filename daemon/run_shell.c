/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * run_shell: a command, split without a shell, matched against the session's
 * profile, its file arguments checked beneath the artifacts root, then run in
 * the bwrap sandbox (or, where the sandbox is unavailable and the server
 * allows it, as a plain process with every other layer) under the
 * supervisor. Under a `shell` profile the command string instead goes to
 * /bin/sh -c in the same sandbox, once the credential-exfiltration denylist
 * has passed it. The layers behind bwrap (seccomp, loaded by bwrap; Landlock
 * and the rlimits, applied by the exec shim) are in docs/sandbox-layers.md.
 *
 * Runs in the broker as the serving uid. Everything in the arguments is the
 * model's: it is refused here with a result the model can read and act on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-paths.h"
#include "daemon.h"
#include "denylist.h"
#include "log.h"
#include "sandbox.h"
#include "seccomp_filter.h"

#define TEXT_MAX (64u * 1024u)
/* What the text may use before its notes (truncation, no network). */
#define TEXT_BODY (TEXT_MAX - 512u)

int run_shell_spec(const struct server *s, const struct session *sess, struct json_object **ret);
int run_shell_start(struct call *c);
void run_shell_cancel(struct call *c, const char *outcome);

static void jadd(struct json_object *o, const char *key, struct json_object *v) {
        (void) json_object_object_add(o, key, v);
}

int run_shell_spec(const struct server *s, const struct session *sess, struct json_object **ret) {
        const char *const *shapes = profile_shapes(sess->profile);
        const char *name = profile_name(sess->profile);
        size_t len = 0, cap = 8192;
        _cleanup_free_ char *desc = malloc(cap);

        if (!desc)
                return -ENOMEM;
        if (profile_is_shell(sess->profile))
                (void) snprintf(desc, cap,
                                "Run one shell command line with /bin/sh -c in a sandbox%s and return its exit "
                                "code, stdout and stderr. Pipes, redirections and variables work. Files must be "
                                "under the artifacts root (%s), which is the working directory; nothing else is "
                                "writable but /tmp. Commands that read or send credentials are refused.",
                                sess->network ? "" : " without network access", sess->root_path);
        else
                len = (size_t) snprintf(desc, cap,
                                "Run one command in a sandbox%s and return its exit code, stdout and stderr. "
                                "The command is split like a POSIX shell splits words (quotes and backslashes "
                                "work) but is never run by a shell: no pipes, redirections, globs, variables "
                                "or command substitution. Files must be under the artifacts root (%s), which "
                                "is the working directory. Profile '%s' allows only these command shapes:",
                                sess->network ? "" : " without network access", sess->root_path, name);
        for (size_t i = 0; len > 0 && shapes && shapes[i] && len < cap - 256; i++)
                len += (size_t) snprintf(desc + len, cap - len, "%s %s", i ? ";" : "", shapes[i]);
        if (strcmp(name, "passive") == 0 && len < cap - 256)
                (void) snprintf(desc + len, cap - len,
                                ". Commands that run code at import or top level (python3 FILE, python3 -c, "
                                "python3 -m MODULE, node FILE, ruby FILE) are not passive and are refused.");

        struct json_object *spec = json_object_new_object();
        jadd(spec, "name", json_object_new_string("run_shell"));
        jadd(spec, "description", json_object_new_string(desc));
        struct json_object *params = json_tokener_parse(
                "{\"type\":\"object\",\"properties\":{"
                "\"command\":{\"type\":\"string\",\"description\":\"The command line, e.g. "
                "\\\"python3 -m py_compile app.py\\\".\"},"
                "\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
                "\"description\":\"The command as a list of words, instead of command.\"}},"
                "\"additionalProperties\":false}");
        if (params && profile_is_shell(sess->profile))
                /* A list of words means nothing to a shell profile. */
                json_object_object_del(json_object_object_get(params, "properties"), "argv");
        if (!params) {
                json_object_put(spec);
                return -ENOMEM;
        }
        jadd(spec, "parameters", params);
        *ret = spec;
        return 0;
}

/* ---- arguments → argv ---- */

static int args_to_argv(struct call *c, char ***ret_argv, char *why, size_t why_len) {
        struct json_object *cmd = NULL, *av = NULL;
        bool has_cmd = json_object_object_get_ex(c->args, "command", &cmd);
        bool has_av = json_object_object_get_ex(c->args, "argv", &av);
        const char *err = NULL;

        json_object_object_foreach(c->args, k, val) {
                (void) val;
                if (strcmp(k, "command") != 0 && strcmp(k, "argv") != 0) {
                        (void) snprintf(why, why_len, "unknown argument '%.64s': run_shell takes command or argv", k);
                        return -EINVAL;
                }
        }
        if (has_cmd == has_av) {
                (void) snprintf(why, why_len, "give exactly one of command (a string) or argv (a list of strings)");
                return -EINVAL;
        }
        if (has_cmd) {
                if (!json_object_is_type(cmd, json_type_string)) {
                        (void) snprintf(why, why_len, "command must be a string");
                        return -EINVAL;
                }
                if (policy_argv_split_n(json_object_get_string(cmd), (size_t) json_object_get_string_len(cmd),
                                        ret_argv, &err) < 0) {
                        (void) snprintf(why, why_len, "cannot split command: %s", err ? err : "invalid");
                        return -EINVAL;
                }
                return 0;
        }

        if (!json_object_is_type(av, json_type_array) || json_object_array_length(av) == 0 ||
            json_object_array_length(av) > POLICY_ARGV_MAX) {
                (void) snprintf(why, why_len, "argv must be a list of 1 to %d strings", POLICY_ARGV_MAX);
                return -EINVAL;
        }
        size_t n = json_object_array_length(av);
        _cleanup_strv_free_ char **v = calloc(n + 1, sizeof *v);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *w = json_object_array_get_idx(av, i);
                if (!json_object_is_type(w, json_type_string) ||
                    strlen(json_object_get_string(w)) != (size_t) json_object_get_string_len(w) ||
                    (size_t) json_object_get_string_len(w) > POLICY_COMMAND_MAX) {
                        (void) snprintf(why, why_len, "argv[%zu] must be a string without NUL bytes", i);
                        return -EINVAL;
                }
                if (!(v[i] = strdup(json_object_get_string(w))))
                        return -ENOMEM;
        }
        *ret_argv = TAKE_PTR(v);
        return 0;
}

/* Programs are looked up where the sandbox will look: PATH over the
 * read-only /usr the sandbox shares with the host. */
static bool program_exists(const char *name) {
        static const char *const dirs[] = { "/usr/local/bin/", "/usr/bin/", "/bin/" };
        char buf[4096];

        if (strchr(name, '/'))
                return true; /* the shim reports it */
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                if (strlen(dirs[i]) + strlen(name) >= sizeof buf)
                        continue;
                (void) snprintf(buf, sizeof buf, "%s%s", dirs[i], name);
                if (access(buf, X_OK) == 0)
                        return true;
        }
        return false;
}

/* ---- results ---- */

static const char *const network_programs[] = {
        "curl", "wget", "git", "pip", "pip3", "npm", "npx", "yarn", "pnpm", "cargo",
        "go", "ssh", "scp", "rsync", "ping", "nc", "apt", "apt-get", "gem", "bundle", "composer",
};

static bool looks_network(char *const *argv) {
        const char *p = argv[0];
        for (size_t i = 0; i < ELEMENTSOF(network_programs); i++)
                if (strcmp(p, network_programs[i]) == 0)
                        return true;
        /* python3 -m pip install ... */
        return argv[1] && argv[2] && strcmp(argv[1], "-m") == 0 && strcmp(argv[2], "pip") == 0;
}

struct run {
        struct call *call;
        char **argv;
        char **bwrap_argv;
};

static void run_free(struct run *r) {
        strv_free(r->argv);
        strv_free(r->bwrap_argv);
        free(r);
}

static char *text_of(const char *data, size_t n) {
        char *s = NULL;
        if (utf8_sanitize(data ? data : "", data ? n : 0, &s) < 0)
                return NULL;
        return s;
}

static const char *signal_name(int sig) {
        static char buf[16];
        const char *abbrev = sigabbrev_np(sig);
        if (!abbrev)
                return "SIGUNKNOWN";
        (void) snprintf(buf, sizeof buf, "SIG%s", abbrev);
        return buf;
}

/* The largest n' <= n that does not split a UTF-8 sequence of the (valid
 * UTF-8) string s: a cut text must stay valid for the JSON reply. */
static size_t utf8_cut(const char *s, size_t n) {
        while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
                n--;
        return n;
}

/* How much of stdout and stderr the text shows: both, or a fair share of
 * TEXT_BODY each, so that a flood on one stream never hides the other. */
static bool text_shares(const char *out, const char *err, int *ret_out, int *ret_err) {
        const size_t room = TEXT_BODY - 256; /* the header line and the labels */
        size_t no = strlen(out), ne = strlen(err);
        bool cut = no + ne > room;

        if (cut) {
                if (ne <= room / 2)
                        no = room - ne;
                else if (no <= room / 2)
                        ne = room - no;
                else
                        no = ne = room / 2;
                no = utf8_cut(out, no);
                ne = utf8_cut(err, ne);
        }
        *ret_out = (int) no;
        *ret_err = (int) ne;
        return cut;
}

static struct json_object *run_result(struct run *run, struct worker_result *w) {
        struct call *c = run->call;
        struct session *sess = c->session;
        _cleanup_free_ char *out = text_of(w->out, w->out_len);
        _cleanup_free_ char *err = text_of(w->err, w->err_len);
        _cleanup_free_ char *text = malloc(TEXT_MAX);
        const char *outcome, *reason = NULL;
        size_t len = 0;
        int no, ne;

        if (!out || !err || !text)
                return NULL;
        bool cut = text_shares(out, err, &no, &ne);

        /* The body stays within TEXT_BODY so the notes below always fit. A
         * call ended on purpose (cancel, timeout) before the sandbox was up
         * is that, not a setup failure. */
        if (w->setup_failed && !w->ended_by) {
                outcome = "sandbox_error";
                reason = "setup";
                len = (size_t) snprintf(text, TEXT_BODY, "sandbox: could not set up the sandbox: %.*s", ne, err);
        } else if (w->exec_failed) {
                outcome = "not_installed";
                len = (size_t) snprintf(text, TEXT_BODY, "[INFO] tool '%s' not installed", run->argv[0]);
        } else if (w->setup_error[0] && !w->ended_by) {
                outcome = "sandbox_error";
                reason = "exec";
                len = (size_t) snprintf(text, TEXT_BODY, "sandbox: %s: %s", run->argv[0], w->setup_error);
        } else if (w->ended_by && strcmp(w->ended_by, "timeout") == 0) {
                outcome = "timeout";
                len = (size_t) snprintf(text, TEXT_BODY, "sandbox: timeout after %.1f s\nstdout: %.*s\nstderr: %.*s",
                                        c->timeout_ms / 1000.0, no, out, ne, err);
        } else if (w->ended_by && strcmp(w->ended_by, "limit") == 0) {
                outcome = "limit";
                reason = "output";
                len = (size_t) snprintf(text, TEXT_BODY,
                                        "sandbox: output limit of %llu bytes reached; the command was killed\n"
                                        "stdout: %.*s\nstderr: %.*s",
                                        (unsigned long long) sess->limits.output_bytes, no, out, ne, err);
        } else if (w->ended_by) {
                outcome = "cancelled";
                len = (size_t) snprintf(text, TEXT_BODY, "cancelled\nstdout: %.*s\nstderr: %.*s", no, out, ne, err);
        } else if (w->signal) {
                outcome = "signal";
                len = (size_t) snprintf(text, TEXT_BODY, "signal: %s\nstdout: %.*s\nstderr: %.*s",
                                        signal_name(w->signal), no, out, ne, err);
        } else {
                outcome = w->exit_code == 0 ? "ok" : "exit";
                len = (size_t) snprintf(text, TEXT_BODY, "exit_code: %d\nstdout: %.*s\nstderr: %.*s", w->exit_code,
                                        no, out, ne, err);
        }
        if (len >= TEXT_BODY) {
                len = utf8_cut(text, TEXT_BODY - 1);
                text[len] = '\0';
                cut = true;
        }
        if (w->truncated || cut)
                len += (size_t) snprintf(text + len, TEXT_MAX - len,
                                         "\n[output truncated: %llu bytes of stdout, %llu of stderr in all; "
                                         "read_tool_result with call_id %s pages through it]",
                                         (unsigned long long) w->out_total, (unsigned long long) w->err_total, c->id);
        if (strcmp(outcome, "exit") == 0 && !sess->network && looks_network(run->argv))
                (void) snprintf(text + len, TEXT_MAX - len,
                                "\n[INFO] this sandbox has no network access; a command that needs the network "
                                "fails here and retrying will not help.");

        struct json_object *r = result_new(outcome, reason, text, sess->sandboxed);
        if (!w->setup_failed && !w->exec_failed) {
                if (w->signal)
                        jadd(r, "signal", json_object_new_string(signal_name(w->signal)));
                else if (w->exit_code >= 0)
                        jadd(r, "exit_code", json_object_new_int(w->exit_code));
        }
        jadd(r, "stdout", json_object_new_string(out));
        jadd(r, "stderr", json_object_new_string(err));
        jadd(r, "truncated", json_object_new_boolean(w->truncated));
        jadd(r, "cpu_ms", json_object_new_int64((int64_t) w->cpu_ms));
        jadd(r, "max_rss_kb", json_object_new_int64((int64_t) w->max_rss_kb));
        if (sess->dropped_env && sess->dropped_env[0]) {
                struct json_object *a = json_object_new_array();
                for (char **d = sess->dropped_env; *d; d++)
                        (void) json_object_array_add(a, json_object_new_string(*d));
                jadd(r, "dropped_env", a);
        }
        return r;
}

static void run_on_output(void *userdata, const char *stream, const void *data, size_t n) {
        struct run *run = userdata;
        call_chunk(run->call, stream, data, n);
}

static void run_on_exit(void *userdata, struct worker_result *w) {
        struct run *run = userdata;

        /* The shim saw the command itself end; bwrap only passes on 128+N. */
        if (w->status_known) {
                w->exit_code = w->status_exit;
                w->signal = w->status_signal;
        }
        struct call *c = run->call;
        struct json_object *r = run_result(run, w);

        c->worker = NULL;
        run_free(run);
        if (!r)
                r = result_new("sandbox_error", "internal", "toolsd ran out of memory", c->session->sandboxed);
        call_finish(c, r);
}

static const struct worker_ops run_ops = {
        .on_output = run_on_output,
        .on_exit = run_on_exit,
};

/* ---- start ---- */

/* A helper program of ours (toolsd-exec, toolsd-http): beside our own
 * binary in a build tree, else the installed one in libexecdir. Fills buf
 * and returns it, or NULL when neither is executable. */
const char *helper_path(const char *name, char *buf, size_t size) {
        ssize_t n = readlink("/proc/self/exe", buf, size);
        if (n > 0 && (size_t) n < size) {
                buf[n] = '\0';
                char *slash = strrchr(buf, '/');
                if (slash && (size_t) (slash + 1 - buf) + strlen(name) < size) {
                        strcpy(slash + 1, name);
                        if (access(buf, X_OK) == 0)
                                return buf;
                }
        }
        if ((size_t) snprintf(buf, size, "%s/%s", TOOLSD_LIBEXECDIR, name) < size && access(buf, X_OK) == 0)
                return buf;
        return NULL;
}

static const char *exec_shim_path(void) {
        static char path[4096];
        static const char *found;
        static bool done;

        if (!done) {
                found = helper_path("toolsd-exec", path, sizeof path);
                done = true;
        }
        return found;
}

/* The child's fds: the session's root, tool_calls/, the seccomp program
 * (bwrap's --seccomp; in the unsandboxed fallback unused, the shim loads the
 * filter itself), then the shim's status pipe, which the supervisor places
 * right after the passed fds. */
#define CHILD_ROOT_FD 3
#define CHILD_TOOL_CALLS_FD 4
#define CHILD_SECCOMP_FD 5
#define CHILD_STATUS_FD 6

/* The filter of each network mode, compiled once (libseccomp takes about
 * 2 ms). Every call gets a memfd of its own: bwrap reads the fd to EOF, and
 * a shared one (dup'ed fds share the offset) would leave the next call an
 * empty program. */
static struct {
        void *bpf;
        size_t len;
} seccomp_programs[2];

static int seccomp_program(bool network, const void **ret_bpf, size_t *ret_len) {
        typeof(seccomp_programs[0]) *p = &seccomp_programs[network];
        struct stat st;
        int r;

        if (!p->bpf) {
                _cleanup_close_ int fd = -1;
                r = seccomp_filter_build(&(struct seccomp_options) { .network = network }, &fd);
                if (r < 0)
                        return r;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (st.st_size <= 0 || st.st_size > 1024 * 1024)
                        return -EBADMSG;
                _cleanup_free_ void *bpf = malloc((size_t) st.st_size);
                if (!bpf)
                        return -ENOMEM;
                if (pread(fd, bpf, (size_t) st.st_size, 0) != st.st_size)
                        return -EIO;
                p->bpf = TAKE_PTR(bpf);
                p->len = (size_t) st.st_size;
        }
        *ret_bpf = p->bpf;
        *ret_len = p->len;
        return 0;
}

/* A fresh sealed memfd at offset 0 holding the session's seccomp program,
 * for bwrap's --seccomp (worker_spec.pass_fds[2]). The caller closes it
 * once the worker has started. */
int run_shell_seccomp_fd(const struct server *s, bool network, int *ret_fd) {
        const void *bpf = NULL;
        size_t len = 0;
        int r = seccomp_program(network, &bpf, &len);
        if (r < 0)
                return r;

        _cleanup_close_ int fd = memfd_create("toolsd-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        if (write(fd, bpf, len) != (ssize_t) len)
                return -EIO;
        if (lseek(fd, 0, SEEK_SET) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

struct strv_builder {
        char **v;
        size_t n;
        int error;
};

static void sb_add(struct strv_builder *b, const char *a, const char *x) {
        char **v;

        if (b->error < 0)
                return;
        v = reallocarray(b->v, b->n + 3, sizeof *v);
        if (!v) {
                b->error = -ENOMEM;
                return;
        }
        b->v = v;
        v[b->n] = strdup(a);
        v[b->n + 1] = x ? strdup(x) : NULL;
        v[b->n + 2] = NULL;
        if (!v[b->n] || (x && !v[b->n + 1])) {
                b->error = -ENOMEM;
                free(v[b->n]);
                free(v[b->n + 1]);
                v[b->n] = NULL;
                return;
        }
        b->n += x ? 2 : 1;
}

static void sb_add_u(struct strv_builder *b, const char *a, const char *name, unsigned long long v) {
        char buf[64];
        (void) snprintf(buf, sizeof buf, "%s%s%llu", name, *name ? "=" : "", v);
        sb_add(b, a, buf);
}

/* Landlock as the shim applies it (docs/sandbox-layers.md): read everything
 * the sandbox shows, write only under the root, /tmp and /dev, tool_calls/
 * checked read-only, no TCP without network. Unsandboxed, the host's "/"
 * is what "shows", and tool_calls/ has no read-only mount to check. */
static void shim_landlock_args(const struct server *s, const struct session *sess, struct strv_builder *b) {
        bool required = s->config->require_sandbox == REQUIRE_SANDBOX_YES;

        sb_add(b, "--landlock-ro", "/");
        sb_add(b, "--landlock-rw", sess->root_path);
        sb_add(b, "--landlock-rw", "/tmp");
        sb_add(b, "--landlock-rw", "/dev");
        if (sess->sandboxed && sess->tool_calls_fd >= 0) {
                _cleanup_free_ char *tc = NULL;
                if (asprintf(&tc, "%s/tool_calls", sess->root_path) < 0)
                        b->error = -ENOMEM;
                else
                        sb_add(b, "--landlock-ro-under", tc);
        }
        if (!sess->network)
                sb_add(b, "--landlock-deny-tcp", NULL);
        if (required)
                sb_add(b, "--require-landlock", NULL);
}

static int shim_args(const struct server *s, const struct session *sess, char ***ret) {
        const struct session_limits *l = &sess->limits;
        struct strv_builder b = {};

        sb_add_u(&b, "--status-fd", "", CHILD_STATUS_FD);
        sb_add_u(&b, "--rlimit", "cpu", (unsigned long long) l->cpu_seconds);
        sb_add_u(&b, "--rlimit", "as", (unsigned long long) l->memory_bytes);
        sb_add_u(&b, "--rlimit", "fsize", (unsigned long long) l->file_size_bytes);
        sb_add_u(&b, "--rlimit", "nproc", (unsigned long long) l->processes);
        sb_add_u(&b, "--rlimit", "nofile", (unsigned long long) l->open_files);
        shim_landlock_args(s, sess, &b);
        /* Without bwrap nobody else loads the filter. */
        if (!sess->sandboxed)
                sb_add(&b, sess->network ? "--seccomp-network" : "--seccomp-no-network", NULL);
        if (b.error < 0 || !b.v) {
                strv_free(b.v);
                return b.error < 0 ? b.error : -ENOMEM;
        }
        *ret = b.v;
        return 0;
}

/* The argv the supervisor executes for argv in this session: bwrap's, or
 * the shim's directly when unsandboxed. The child must get the session's
 * root at fd 3, tool_calls/ at fd 4, a seccomp memfd from
 * run_shell_seccomp_fd() at fd 5 (pass_fds = { root_fd, tool_calls_fd,
 * seccomp_fd }) and so the shim's status pipe at fd 6. Unsandboxed, fd 5
 * is not read (the shim loads the filter) but still passed, so the status
 * fd stays at 6. Other tools that run a program of ours (http_get's
 * worker) use it too and name it in helpers (host paths; argv names it by
 * sandbox_helper_inside() when sandboxed). */
int run_shell_exec_argv(struct server *s, struct session *sess, char **argv, const char *const *helpers,
                        char ***ret) {
        const char *shim = exec_shim_path();
        _cleanup_strv_free_ char **sargs = NULL;
        int r;

        if (!shim)
                return -ENOENT;
        r = shim_args(s, sess, &sargs);
        if (r < 0)
                return r;

        if (sess->sandboxed) {
                struct sandbox_manifest m = {
                        .bwrap_path = s->config->bwrap_path,
                        .root_path = sess->root_path,
                        .root_fd = CHILD_ROOT_FD,
                        .tool_calls_fd = CHILD_TOOL_CALLS_FD,
                        .share_net = sess->network,
                        .ro_paths = (const char *const *) s->config->ro_paths,
                        .envp = (const char *const *) sess->envp,
                        .argv = (const char *const *) argv,
                        .json_status_fd = -1,
                        .seccomp_fd = CHILD_SECCOMP_FD,
                        .exec_shim = shim,
                        .shim_args = (const char *const *) sargs,
                        .helpers = helpers,
                };
                return sandbox_argv_build(&m, ret);
        }

        struct strv_builder b = {};
        sb_add(&b, shim, NULL);
        for (size_t i = 0; sargs[i]; i++)
                sb_add(&b, sargs[i], NULL);
        sb_add(&b, "--", NULL);
        for (size_t i = 0; argv[i]; i++)
                sb_add(&b, argv[i], NULL);
        if (b.error < 0) {
                strv_free(b.v);
                return b.error;
        }
        *ret = b.v;
        return 0;
}

static struct json_object *check_paths(struct call *c, char **argv, const struct profile_match *m) {
        struct session *sess = c->session;
        char text[1024];

        for (size_t i = 0; argv[i]; i++) {
                enum path_verdict v;
                _cleanup_free_ char *rel = NULL;
                const char *reason = NULL;

                if (!m->path_arg || !m->path_arg[i])
                        continue;
                int r = policy_path_check(sess->root_fd, sess->root_path, argv[i], m->path_must_exist[i], &v, &rel,
                                          &reason);
                if (r < 0)
                        return result_new("sandbox_error", "internal", "toolsd could not check a path",
                                          sess->sandboxed);
                if (v == PATH_OK && policy_path_is_hidden(rel)) {
                        v = PATH_REFUSED;
                        reason = "hidden files (.env, .git, .ssh, ...) are not open to tools";
                }
                if (v != PATH_OK) {
                        _cleanup_free_ char *shown = text_of(argv[i], strnlen(argv[i], 256));
                        (void) snprintf(text, sizeof text, "path not allowed: '%s': %s", shown ? shown : "?",
                                        reason ? reason : "refused");
                        return result_new("refused", "path", text, sess->sandboxed);
                }
        }
        return NULL;
}

/* The shell profile: the denylist checks the string, then /bin/sh -c runs
 * it. A refusal names the denylist and which part matched, never the rule
 * (the model should not learn to walk around it; the log has the rule). */
static struct json_object *shell_argv(struct call *c, char ***ret_argv) {
        struct session *sess = c->session;
        struct json_object *cmd = NULL;
        enum denylist_verdict v;
        const char *rule = NULL;

        if (json_object_object_length(c->args) != 1 || !json_object_object_get_ex(c->args, "command", &cmd) ||
            !json_object_is_type(cmd, json_type_string))
                return result_new("refused", "arguments",
                                  "the shell profile takes one argument, command: a string for /bin/sh -c",
                                  sess->sandboxed);
        const char *str = json_object_get_string(cmd);
        size_t len = (size_t) json_object_get_string_len(cmd);
        if (!c->server->denylist)
                return result_new("refused", "denylist",
                                  "Refused: the credential-exfiltration denylist is not loaded on this server, "
                                  "so the shell profile runs nothing.",
                                  sess->sandboxed);
        int r = denylist_check(c->server->denylist, str, len, &v, &rule);
        if (r == -ENOMEM)
                return NULL;
        if (r < 0)
                return result_new("refused", "arguments",
                                  r == -E2BIG ? "command too long for the shell profile"
                                              : "command must not contain NUL bytes",
                                  sess->sandboxed);
        if (v != DENYLIST_OK) {
                log_info("call %.8s…: shell command refused by denylist rule %s", c->id, rule ? rule : "?");
                return result_new("refused", "denylist", denylist_message(v), sess->sandboxed);
        }
        char **argv = calloc(4, sizeof *argv);
        if (!argv || !(argv[0] = strdup("/bin/sh")) || !(argv[1] = strdup("-c")) || !(argv[2] = strdup(str))) {
                strv_free(argv);
                return NULL;
        }
        *ret_argv = argv;
        return NULL;
}

/* Split, match, check paths: NULL and *ret_argv when the command may run,
 * else the refusal. */
static struct json_object *command_argv(struct call *c, char ***ret_argv, int *ret_error) {
        struct session *sess = c->session;
        _cleanup_strv_free_ char **argv = NULL;
        struct profile_match m = { 0 };
        char why[512];
        int r;

        *ret_error = 0;
        if (profile_is_shell(sess->profile)) {
                struct json_object *refusal = shell_argv(c, &argv);
                if (!refusal && !argv)
                        *ret_error = -ENOMEM;
                *ret_argv = TAKE_PTR(argv);
                return refusal;
        }
        r = args_to_argv(c, &argv, why, sizeof why);
        if (r < 0) {
                *ret_error = r == -ENOMEM ? r : 0;
                return r == -ENOMEM ? NULL : result_new("refused", "arguments", why, sess->sandboxed);
        }
        r = profile_match(sess->profile, argv, &m);
        if (r < 0) {
                *ret_error = r;
                return NULL;
        }
        if (!m.allowed) {
                struct json_object *refusal = result_new("refused", "profile", m.message, sess->sandboxed);
                profile_match_done(&m);
                return refusal;
        }
        struct json_object *refusal = check_paths(c, argv, &m);
        profile_match_done(&m);
        if (refusal)
                return refusal;
        if (!program_exists(argv[0])) {
                char text[512];
                _cleanup_free_ char *shown = text_of(argv[0], strnlen(argv[0], 128));
                (void) snprintf(text, sizeof text, "[INFO] tool '%s' not installed", shown ? shown : "?");
                return result_new("not_installed", NULL, text, sess->sandboxed);
        }
        *ret_argv = TAKE_PTR(argv);
        return NULL;
}

int run_shell_start(struct call *c) {
        struct server *s = c->server;
        struct session *sess = c->session;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_close_ int seccomp_fd = -1;
        int r;

        struct json_object *refusal = command_argv(c, &argv, &r);
        if (r < 0)
                return r;
        if (refusal) {
                call_finish(c, refusal);
                return 0;
        }

        /* Fail closed: a sandbox without its filter is not the one the
         * docs describe. Unsandboxed, the shim loads it (fd 5 unused). */
        r = run_shell_seccomp_fd(s, sess->network, &seccomp_fd);
        if (r < 0) {
                log_error_errno(r, "cannot build the seccomp filter: %m");
                call_finish(c, result_new("sandbox_error", "setup", "toolsd could not build the seccomp filter",
                                          sess->sandboxed));
                return 0;
        }

        struct run *run = calloc(1, sizeof *run);
        if (!run)
                return -ENOMEM;
        run->call = c;
        run->argv = TAKE_PTR(argv);
        r = run_shell_exec_argv(s, sess, run->argv, NULL, &run->bwrap_argv);
        if (r < 0) {
                run_free(run);
                call_finish(c, result_new("sandbox_error", "setup",
                                          r == -ENOENT ? "toolsd-exec is not installed"
                                                       : "cannot build the sandbox command line",
                                          sess->sandboxed));
                return 0;
        }

        int fds[] = { sess->root_fd, sess->tool_calls_fd, seccomp_fd };
        struct worker_spec spec = {
                .argv = run->bwrap_argv,
                .envp = sess->sandboxed ? (char *const[]) { "PATH=/usr/bin:/bin", NULL } : sess->envp,
                .pass_fds = fds,
                .n_pass_fds = ELEMENTSOF(fds),
                .cwd_fd = sess->root_fd,
                .limits = sess->limits,
                .result_bytes = s->config->result_output_bytes,
                .persist_dirfd = sess->tool_calls_fd,
                .persist_name = c->id,
        };
        spec.limits.timeout_ms = c->timeout_ms;
        r = worker_start(s, &spec, &run_ops, run, &c->worker);
        if (r < 0) {
                run_free(run);
                log_error_errno(r, "cannot start a worker: %m");
                call_finish(c, result_new("sandbox_error", "spawn", "toolsd could not start the command",
                                          sess->sandboxed));
                return 0;
        }
        return 0;
}

void run_shell_cancel(struct call *c, const char *outcome) {
        if (c->worker)
                worker_kill(c->worker, outcome);
}
