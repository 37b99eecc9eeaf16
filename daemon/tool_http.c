/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * http_get: one GET, fetched by toolsd-http in a sandbox that shares the
 * host's network (and nothing else a run_shell call would not get), never
 * in the broker: libcurl and TLS do not run in the process that holds the
 * sessions.
 *
 * Runs in the broker as the serving uid. The URL is checked here first
 * (net_url_check) so a hopeless call costs no process; the worker checks
 * it again, and every address and redirect, itself. Its one JSON document
 * on stdout becomes the result.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-paths.h"
#include "daemon.h"
#include "log.h"
#include "policy_net.h"
#include "sandbox.h"

#define HTTP_TEXT_MAX (64u * 1024u)     /* of the body, in the text the model reads */
#define HTTP_DOC_SLACK (64u * 1024u)    /* the worker's document around the body */
#define HTTP_KILL_SLACK_MS 2000u        /* the worker times out on its own first */


static void jadd(struct json_object *o, const char *key, struct json_object *v) {
        (void) json_object_object_add(o, key, v);
}

static const char *http_worker_path(void) {
        static char path[4096];
        static const char *found;
        static bool done;

        if (!done) {
                found = helper_path("toolsd-http", path, sizeof path);
                done = true;
        }
        return found;
}

int http_get_spec(const struct server *s, const struct session *sess, struct json_object **ret) {
        const struct toolsd_config *cf = s->config;
        char desc[1024], params[1024];

        (void) snprintf(desc, sizeof desc,
                        "Fetch one URL with an HTTP GET and return its status, content type and body. Only "
                        "http and https; no credentials in the URL; %s%s addresses are refused, on every "
                        "redirect too (at most %u redirects). The body is cut at %" PRIu64 " bytes.%s",
                        cf->http_allow_loopback ? "" : "loopback, ",
                        cf->http_allow_private ? "cloud metadata and other non-public" : "private, link-local, "
                                                                                         "metadata and other "
                                                                                         "non-public",
                        cf->http_max_redirects, cf->http_max_bytes,
                        sess->network ? "" : " This session has no network access: every call is refused.");
        (void) snprintf(params, sizeof params,
                        "{\"type\":\"object\",\"properties\":{"
                        "\"url\":{\"type\":\"string\",\"maxLength\":%d,\"description\":"
                        "\"The http:// or https:// URL.\"},"
                        "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":%" PRIu64 ",\"description\":"
                        "\"Most bytes of body to keep (default and maximum %" PRIu64 ").\"},"
                        "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":%u,\"description\":"
                        "\"Time for the whole fetch, redirects included, in milliseconds.\"}},"
                        "\"required\":[\"url\"],\"additionalProperties\":false}",
                        NET_URL_MAX, cf->http_max_bytes, cf->http_max_bytes, sess->limits.timeout_ms);
        struct json_object *p = json_tokener_parse(params);
        if (!p)
                return -ENOMEM;
        struct json_object *spec = json_object_new_object();
        jadd(spec, "name", json_object_new_string("http_get"));
        jadd(spec, "description", json_object_new_string(desc));
        jadd(spec, "parameters", p);
        *ret = spec;
        return 0;
}

struct fetch {
        struct call *call;
        char **argv;
        char **bwrap_argv;
        uint64_t max_bytes;
};

static void fetch_free(struct fetch *f) {
        strv_free(f->argv);
        strv_free(f->bwrap_argv);
        free(f);
}

static const char *doc_str(struct json_object *doc, const char *key) {
        struct json_object *v = NULL;
        return json_object_object_get_ex(doc, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : "";
}

static int64_t doc_int(struct json_object *doc, const char *key) {
        struct json_object *v = NULL;
        return json_object_object_get_ex(doc, key, &v) ? json_object_get_int64(v) : 0;
}

static size_t utf8_cut(const char *s, size_t n) {
        while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
                n--;
        return n;
}

static struct json_object *result_ok(struct fetch *f, struct json_object *doc) {
        struct session *sess = f->call->session;
        const char *body = doc_str(doc, "body"), *enc = doc_str(doc, "encoding");
        size_t bl = strlen(body), shown = bl > HTTP_TEXT_MAX ? utf8_cut(body, HTTP_TEXT_MAX) : bl;
        int64_t status = doc_int(doc, "status"), bytes = doc_int(doc, "bytes"), redirects = doc_int(doc, "redirects");
        struct json_object *tr = NULL;
        bool truncated = json_object_object_get_ex(doc, "truncated", &tr) && json_object_get_boolean(tr);
        char head[6144];

        /* url and content type are the worker's, already valid UTF-8 */
        int hl = snprintf(head, sizeof head, "HTTP %" PRId64 " from %.4096s\ncontent_type: %.256s\nbytes: %" PRId64
                          "%s%s\n%s\n",
                          status, doc_str(doc, "url"), doc_str(doc, "content_type"), bytes,
                          truncated ? " (cut at max_bytes)" : "", redirects ? " (after redirects)" : "",
                          *enc ? "body (base64):" : "body:");
        _cleanup_free_ char *text = malloc((size_t) hl + shown + 128);
        if (!text)
                return NULL;
        memcpy(text, head, (size_t) hl);
        memcpy(text + hl, body, shown);
        size_t len = (size_t) hl + shown;
        if (shown < bl)
                len += (size_t) snprintf(text + len, 128, "\n[body cut at %u characters of %zu in the text]",
                                         HTTP_TEXT_MAX, bl);
        text[len] = '\0';

        struct json_object *r = result_new("ok", NULL, text, sess->sandboxed);
        jadd(r, "http_status", json_object_new_int64(status));
        jadd(r, "url", json_object_new_string(doc_str(doc, "url")));
        jadd(r, "content_type", json_object_new_string(doc_str(doc, "content_type")));
        jadd(r, "bytes", json_object_new_int64(bytes));
        jadd(r, "redirects", json_object_new_int64(redirects));
        jadd(r, "truncated", json_object_new_boolean(truncated || shown < bl));
        if (*enc)
                jadd(r, "encoding", json_object_new_string(enc));
        return r;
}

static struct json_object *result_error(struct fetch *f, struct json_object *doc) {
        const char *err = doc_str(doc, "error");
        char text[6144];
        const char *outcome = "failed", *reason = "http";

        if (strcmp(err, "refused") == 0) {
                outcome = "refused";
                reason = "network";
        } else if (strcmp(err, "timeout") == 0) {
                outcome = "timeout";
                reason = NULL;
        }
        (void) snprintf(text, sizeof text, "http_get %s: %.512s (%.4096s)", outcome, doc_str(doc, "reason"),
                        doc_str(doc, "url"));
        return result_new(outcome, reason, text, f->call->session->sandboxed);
}

static struct json_object *fetch_result(struct fetch *f, struct worker_result *w) {
        bool sb = f->call->session->sandboxed;

        if (w->ended_by && strcmp(w->ended_by, "timeout") == 0)
                return result_new("timeout", NULL, "http_get: no answer in time", sb);
        if (w->ended_by && strcmp(w->ended_by, "limit") != 0)
                return result_new("cancelled", NULL, "cancelled", sb);
        if (w->exec_failed)
                return result_new("sandbox_error", "setup", "toolsd-http is not installed", sb);
        if (w->setup_failed) {
                char text[1024];
                _cleanup_free_ char *err = NULL;
                if (utf8_sanitize(w->err ? w->err : "", w->err ? MIN(w->err_len, (size_t) 900) : 0, &err) < 0)
                        return NULL;
                (void) snprintf(text, sizeof text, "sandbox: could not set up the sandbox: %s", err);
                return result_new("sandbox_error", "setup", text, sb);
        }

        _cleanup_json_ struct json_object *doc = w->out ? json_tokener_parse(w->out) : NULL;
        if (!doc || !json_object_is_type(doc, json_type_object)) {
                log_warning("call %s: toolsd-http gave no document (exit %d, signal %d)", f->call->id, w->exit_code,
                            w->signal);
                return result_new("sandbox_error", "worker", "http_get: the fetch failed inside toolsd", sb);
        }
        return json_object_object_get_ex(doc, "error", NULL) ? result_error(f, doc) : result_ok(f, doc);
}

static void fetch_on_output(void *userdata, const char *stream, const void *data, size_t n) {
        /* The document is read whole at the end; nothing is streamed. */
}

static void fetch_on_exit(void *userdata, struct worker_result *w) {
        struct fetch *f = userdata;
        struct call *c = f->call;
        struct json_object *r = fetch_result(f, w);

        c->worker = NULL;
        fetch_free(f);
        if (!r)
                r = result_new("sandbox_error", "internal", "toolsd ran out of memory", c->session->sandboxed);
        call_finish(c, r);
}

static const struct worker_ops fetch_ops = {
        .on_output = fetch_on_output,
        .on_exit = fetch_on_exit,
};

static int fetch_argv(struct call *c, const char *worker, const char *url, uint64_t max_bytes, uint32_t timeout_ms,
                      char ***ret) {
        const struct toolsd_config *cf = c->server->config;
        char b[3][32];
        (void) snprintf(b[0], sizeof b[0], "%" PRIu64, max_bytes);
        (void) snprintf(b[1], sizeof b[1], "%u", timeout_ms);
        (void) snprintf(b[2], sizeof b[2], "%u", cf->http_max_redirects);
        const char *v[] = { worker, "--max-bytes", b[0], "--timeout-ms", b[1], "--max-redirects", b[2],
                            cf->http_allow_loopback ? "--allow-loopback" : NULL,
                            cf->http_allow_private ? "--allow-private" : NULL, url };
        char **out = calloc(ELEMENTSOF(v) + 1, sizeof *out);
        size_t k = 0;
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(v); i++)
                if (v[i] && !(out[k++] = strdup(v[i]))) {
                        strv_free(out);
                        return -ENOMEM;
                }
        *ret = out;
        return 0;
}

/* The child's fds are run_shell_exec_argv's: root, tool_calls/, the
 * seccomp program (bwrap loads it; the network variant), then the shim's
 * status pipe. */
static int fetch_spawn(struct call *c, struct fetch *f) {
        struct server *s = c->server;
        struct session *sess = c->session;
        _cleanup_close_ int seccomp_fd = -1;

        int r = run_shell_seccomp_fd(s, sess->network, &seccomp_fd);
        if (r < 0)
                return r;
        int fds[] = { sess->root_fd, sess->tool_calls_fd, seccomp_fd };
        struct worker_spec spec = {
                .argv = f->bwrap_argv,
                .envp = sess->sandboxed ? (char *const[]) { "PATH=/usr/bin:/bin", NULL } : sess->envp,
                .pass_fds = fds,
                .n_pass_fds = ELEMENTSOF(fds),
                .cwd_fd = sess->root_fd,
                .limits = sess->limits,
                .result_bytes = (f->max_bytes + 2) / 3 * 4 + HTTP_DOC_SLACK,
                .persist_dirfd = -1,
                .status_fd = -1,
        };
        spec.limits.timeout_ms = c->timeout_ms + HTTP_KILL_SLACK_MS;
        spec.limits.output_bytes = spec.result_bytes;
        return worker_start(s, &spec, &fetch_ops, f, &c->worker);
}

int http_get_start(struct call *c) {
        struct session *sess = c->session;
        struct json_object *v = NULL;
        const char *url = json_object_object_get_ex(c->args, "url", &v) ? json_object_get_string(v) : NULL;
        const char *reason = NULL, *worker;
        uint64_t max_bytes = c->server->config->http_max_bytes;
        uint32_t timeout_ms = c->timeout_ms;
        char text[1024];
        int r;

        if (!url)
                return -EINVAL; /* the schema requires it */
        if (!sess->network) {
                call_finish(c, result_new("refused", "network",
                                          "http_get refused: this session has no network access (the skill does "
                                          "not ask for it, or the server does not allow it)",
                                          sess->sandboxed));
                return 0;
        }
        if (strlen(url) != (size_t) json_object_get_string_len(v) || net_url_check(url, NULL, NULL, NULL, &reason) < 0) {
                (void) snprintf(text, sizeof text, "http_get refused: %s", reason ? reason : "the URL holds a NUL");
                call_finish(c, result_new("refused", "network", text, sess->sandboxed));
                return 0;
        }
        if (json_object_object_get_ex(c->args, "max_bytes", &v))
                max_bytes = MIN(max_bytes, (uint64_t) json_object_get_int64(v));
        if (json_object_object_get_ex(c->args, "timeout_ms", &v))
                timeout_ms = MIN(timeout_ms, (uint32_t) json_object_get_int64(v));
        if (!(worker = http_worker_path())) {
                call_finish(c, result_new("sandbox_error", "setup", "toolsd-http is not installed", sess->sandboxed));
                return 0;
        }

        struct fetch *f = calloc(1, sizeof *f);
        if (!f)
                return -ENOMEM;
        f->call = c;
        f->max_bytes = max_bytes;
        /* Sandboxed, the worker is run at the path the sandbox shows it at. */
        char inside[PATH_MAX];
        const char *run_as = sess->sandboxed ? sandbox_helper_inside(worker, inside, sizeof inside) : worker;
        const char *const helpers[] = { worker, NULL };
        r = run_as ? fetch_argv(c, run_as, url, max_bytes, timeout_ms, &f->argv) : -EINVAL;
        if (r >= 0)
                r = run_shell_exec_argv(c->server, sess, f->argv, helpers, &f->bwrap_argv);
        if (r >= 0)
                r = fetch_spawn(c, f);
        if (r < 0) {
                fetch_free(f);
                log_error_errno(r, "call %s: cannot start toolsd-http: %m", c->id);
                call_finish(c, result_new("sandbox_error", "spawn", "toolsd could not start the fetch",
                                          sess->sandboxed));
        }
        return 0;
}

void http_get_cancel(struct call *c, const char *outcome) {
        if (c->worker)
                worker_kill(c->worker, outcome);
}
