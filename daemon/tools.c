/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tool registry and the life of a call: loadout check, start, streamed
 * chunks, result, cancel.
 *
 * Runs in the broker as the serving uid. A tool's outcome is a Result the
 * model reads (refusals included), never a Varlink error: the run goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "config-paths.h"
#include "daemon.h"
#include "log.h"
#include "sandbox.h"
#include "schema.h"

static void jadd(struct json_object *o, const char *key, struct json_object *v) {
        (void) json_object_object_add(o, key, v);
}

struct json_object *result_new(const char *outcome, const char *reason, const char *text, bool sandboxed) {
        struct json_object *r = json_object_new_object();
        jadd(r, "outcome", json_object_new_string(outcome));
        if (reason)
                jadd(r, "reason", json_object_new_string(reason));
        jadd(r, "text", json_object_new_string(text ? text : ""));
        jadd(r, "sandboxed", json_object_new_boolean(sandboxed));
        jadd(r, "truncated", json_object_new_boolean(false));
        return r;
}

static struct json_object *refused(const struct call *c, const char *reason, const char *text) {
        return result_new("refused", reason, text, c->session->sandboxed);
}

/* ---- echo: runs nothing; checks the plumbing and measures the protocol ---- */

static int echo_spec(const struct server *s, const struct session *sess, struct json_object **ret) {
        *ret = json_tokener_parse(
                "{\"name\":\"echo\",\"description\":\"Returns the given text unchanged. Runs no "
                "command; useful to check the connection.\",\"parameters\":{\"type\":\"object\","
                "\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text to return.\"}},"
                "\"required\":[\"text\"],\"additionalProperties\":false}}");
        return *ret ? 0 : -ENOMEM;
}

static int echo_start(struct call *c) {
        struct json_object *t = NULL;

        if (!json_object_object_get_ex(c->args, "text", &t) || !json_object_is_type(t, json_type_string) ||
            json_object_object_length(c->args) != 1) {
                call_finish(c, refused(c, "arguments", "echo takes exactly one argument: text (a string)"));
                return 0;
        }
        const char *text = json_object_get_string(t);
        call_chunk(c, "stdout", text, (size_t) json_object_get_string_len(t));
        struct json_object *r = result_new("ok", NULL, text, c->session->sandboxed);
        call_finish(c, r);
        return 0;
}

static void echo_cancel(struct call *c, const char *outcome) {
}

/* ---- run_shell ---- */

int run_shell_spec(const struct server *s, const struct session *sess, struct json_object **ret);
int run_shell_start(struct call *c);
void run_shell_cancel(struct call *c, const char *outcome);

/* write_artifact and read_tool_result finish before their start returns. */
static void no_cancel(struct call *c, const char *outcome) {
}

static const struct tool tools[_TOOL_MAX] = {
        [TOOL_ECHO] = { "echo", echo_spec, echo_start, echo_cancel },
        [TOOL_RUN_SHELL] = { "run_shell", run_shell_spec, run_shell_start, run_shell_cancel },
        [TOOL_WRITE_ARTIFACT] = { "write_artifact", write_artifact_spec, write_artifact_start, no_cancel },
        [TOOL_READ_TOOL_RESULT] = { "read_tool_result", read_tool_result_spec, read_tool_result_start, no_cancel },
        [TOOL_HTTP_GET] = { "http_get", http_get_spec, http_get_start, http_get_cancel },
};

const struct tool *tool_find(const char *name, enum tool_id *ret_id) {
        for (size_t i = 0; name && i < _TOOL_MAX; i++)
                if (tools[i].name && strcmp(tools[i].name, name) == 0) {
                        if (ret_id)
                                *ret_id = (enum tool_id) i;
                        return &tools[i];
                }
        return NULL;
}

int tools_specs(const struct server *s, const struct session *sess, struct json_object **ret) {
        struct json_object *list = json_object_new_array();
        for (size_t i = 0; i < _TOOL_MAX; i++) {
                struct json_object *spec;
                if (!(sess->tools & (1u << i)))
                        continue;
                int r = tools[i].spec(s, sess, &spec);
                if (r < 0) {
                        json_object_put(list);
                        return r;
                }
                (void) json_object_array_add(list, spec);
        }
        *ret = list;
        return 0;
}

bool session_has_call(const struct session *sess, const char *id) {
        uint64_t n = MIN(sess->n_call_ids, (uint64_t) sess->cap_call_ids);
        for (uint64_t i = 0; id && i < n; i++)
                if (strcmp(sess->call_ids[i], id) == 0)
                        return true;
        return false;
}

static void session_remember_call(struct session *sess, const char *id) {
        /* Doubling up to the maximum, then a ring over the oldest. */
        if (sess->n_call_ids >= sess->cap_call_ids && sess->cap_call_ids < SESSION_CALL_IDS_MAX) {
                uint32_t cap = sess->cap_call_ids ? MIN(sess->cap_call_ids * 2, SESSION_CALL_IDS_MAX) : 8;
                void *n = reallocarray(sess->call_ids, cap, sizeof *sess->call_ids);
                if (!n)
                        return; /* read_tool_result will not find this call: refused, not unsafe */
                sess->call_ids = n;
                sess->cap_call_ids = cap;
        }
        memcpy(sess->call_ids[sess->n_call_ids % sess->cap_call_ids], id, ID_LEN + 1);
        sess->n_call_ids++;
}

/* ---- calls ---- */

struct call *call_find(struct server *s, const char *id, uid_t uid) {
        for (struct call *c = s->calls; c && id; c = c->next)
                if (c->session->uid == uid && strcmp(c->id, id) == 0)
                        return c;
        return NULL;
}

static void call_free(struct call *c) {
        struct server *s = c->server;
        struct session *sess = c->session;

        if (c->prev)
                c->prev->next = c->next;
        else
                s->calls = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_calls--;
        sess->running--;
        server_status_changed(s);
        sess->used_usec = now_usec();
        if (sess->closed && sess->running == 0)
                session_free(sess);
        json_object_put(c->args);
        free(c);
}

static void call_log(const struct call *c, struct json_object *result, uint64_t ms) {
        char f[8][192];
        struct json_object *o = NULL, *rs = NULL;
        const char *outcome = json_object_object_get_ex(result, "outcome", &o) ? json_object_get_string(o) : "";
        const char *reason = json_object_object_get_ex(result, "reason", &rs) ? json_object_get_string(rs) : "";

        (void) snprintf(f[0], sizeof f[0], "TOOLSD_UID=%u", (unsigned) c->session->uid);
        (void) snprintf(f[1], sizeof f[1], "TOOLSD_SESSION=%s", c->session->id);
        (void) snprintf(f[2], sizeof f[2], "TOOLSD_SKILL=%s", c->session->skill);
        (void) snprintf(f[3], sizeof f[3], "TOOLSD_TOOL=%s", c->tool_name);
        (void) snprintf(f[4], sizeof f[4], "TOOLSD_OUTCOME=%s", outcome);
        (void) snprintf(f[5], sizeof f[5], "TOOLSD_REASON=%s", reason);
        (void) snprintf(f[6], sizeof f[6], "TOOLSD_DURATION_MS=%llu", (unsigned long long) ms);
        (void) snprintf(f[7], sizeof f[7], "TOOLSD_CALL=%s", c->id);
        const char *fields[] = { f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7] };
        log_struct(LOG_INFO, "tool call", fields, ELEMENTSOF(fields));
}

/* The transcript line. A failure is logged, never the caller's problem:
 * the host's record (call_log) has the call either way. */
static void call_audit(const struct call *c, struct json_object *result, uint64_t ms) {
        const struct session *sess = c->session;
        struct audit_entry e = {
                .task_id = sess->task_id,
                .role = sess->role,
                .session = sess->id,
                .skill = sess->skill,
                .call_id = c->id,
                .tool = c->tool_name,
                .arguments = c->args,
                .result = result,
                .duration_ms = ms,
                .uid = sess->uid,
        };
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        e.timestamp_usec = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        _cleanup_json_ struct json_object *rec = audit_record(&e);
        if (!rec) {
                log_error("call %s: cannot build its audit record: out of memory", c->id);
                return;
        }
        int r = audit_append(sess->tool_calls_fd, sess->task_id, rec);
        if (r < 0)
                log_error_errno(r, "call %s: cannot append to tool_calls/%s.jsonl: %m", c->id, sess->task_id);
}

void call_finish(struct call *c, struct json_object *result) {
        uint64_t ms = (now_usec() - c->start_usec) / 1000u;

        if (c->finished) {
                json_object_put(result);
                return;
        }
        c->finished = true;
        jadd(result, "duration_ms", json_object_new_int64((int64_t) ms));
        call_log(c, result, ms);
        call_audit(c, result, ms);

        struct conn *conn = c->conn;
        _cleanup_json_ struct json_object *p = NULL;
        if (conn) {
                p = json_object_new_object();
                jadd(p, "call_id", json_object_new_string(c->id));
                jadd(p, "result", json_object_get(result));
                c->conn = NULL;
                conn->call = NULL;
        }
        json_object_put(result);
        /* Free the call before the reply: the client that reads it, or a
         * pipelined call behind it, must not see it still running (calls
         * per session, Status, the status page published on the way out). */
        call_free(c);
        if (conn) {
                conn_reply(conn, p);
                conn_call_done(conn);
        }
}

void call_chunk(struct call *c, const char *stream, const void *data, size_t n) {
        struct conn *conn = c->conn;
        char *text = NULL;
        bool b64 = false;

        if (!conn || !conn->cur_more || n == 0)
                return;
        /* JSON strings are UTF-8: anything else goes out as base64. */
        if (utf8_valid(data, n) && !memchr(data, '\0', n)) {
                text = strndup(data, n);
        } else {
                b64 = true;
                if (base64_encode(data, n, &text) < 0)
                        text = NULL;
        }
        if (!text)
                return conn_close(conn, "out of memory");

        _cleanup_json_ struct json_object *p = json_object_new_object();
        struct json_object *chunk = json_object_new_object();
        jadd(chunk, "stream", json_object_new_string(stream));
        jadd(chunk, "data", json_object_new_string_len(text, (int) strlen(text)));
        if (b64)
                jadd(chunk, "encoding", json_object_new_string("base64"));
        free(text);
        jadd(p, "call_id", json_object_new_string(c->id));
        jadd(p, "chunk", chunk);
        conn_reply_continues(conn, p);
        if (c->worker && conn_congested(conn))
                worker_pause(c->worker, true);
}

void call_cancel(struct call *c, const char *outcome) {
        if (c->finished)
                return;
        c->tool->cancel(c, outcome);
}

/* The arguments against the schema the model was shown (ListTools). A
 * refusal names the field; a schema outside the validator's subset is a
 * bug here, not the caller's. */
static int call_check_args(struct call *c, struct json_object **ret_refusal) {
        _cleanup_json_ struct json_object *spec = NULL;
        struct json_object *params = NULL;
        struct schema_error err;
        char text[512];

        int r = c->tool->spec(c->server, c->session, &spec);
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(spec, "parameters", &params))
                return -EBADMSG;
        r = schema_validate(params, c->args, &err);
        if (r == -EBADMSG)
                return log_error_errno(r, "tool %s: schema: %s: %s", c->tool->name, err.field, err.reason);
        if (r < 0) {
                (void) snprintf(text, sizeof text, "invalid argument '%s': %s", err.field, err.reason);
                *ret_refusal = refused(c, "arguments", text);
        }
        return 0;
}

void call_start(struct conn *conn, struct session *sess, const char *tool, struct json_object *args,
                int64_t timeout_ms) {
        struct server *s = conn->server;
        enum tool_id id = _TOOL_MAX;
        const struct tool *t = tool_find(tool, &id);

        if (sess->running >= s->config->max_calls_per_session)
                return error_limit(conn, "calls_per_session", s->config->max_calls_per_session);
        if (timeout_ms != -1 && (timeout_ms <= 0 || (uint64_t) timeout_ms > sess->limits.timeout_ms)) {
                char reason[128];
                (void) snprintf(reason, sizeof reason, "must be between 1 and %u (this session's maximum)",
                                sess->limits.timeout_ms);
                return error_invalid_argument(conn, "timeout_ms", reason);
        }

        struct call *c = calloc(1, sizeof *c);
        if (!c || random_id(c->id) < 0) {
                free(c);
                return conn_close(conn, "out of memory");
        }
        c->server = s;
        c->session = sess;
        c->conn = conn;
        c->tool = t;
        (void) snprintf(c->tool_name, sizeof c->tool_name, "%s", tool ? tool : "");
        c->args = args ? json_object_get(args) : json_object_new_object();
        c->start_usec = now_usec();
        c->timeout_ms = timeout_ms > 0 ? (uint32_t) timeout_ms
                                       : MIN(s->config->default_timeout_ms, sess->limits.timeout_ms);
        c->next = s->calls;
        if (s->calls)
                s->calls->prev = c;
        s->calls = c;
        s->n_calls++;
        sess->running++;
        server_status_changed(s);
        sess->used_usec = c->start_usec;
        conn->call = c;

        /* With more, the caller learns the call id at once (to Cancel it). */
        _cleanup_json_ struct json_object *first = json_object_new_object();
        jadd(first, "call_id", json_object_new_string(c->id));
        conn_reply_continues(conn, first);

        /* The loadout is the session's, whatever the client claims. */
        if (!t || !(sess->tools & (1u << id))) {
                char text[512];
                (void) snprintf(text, sizeof text,
                                "tool '%.64s' is not in this session's loadout (skill %.64s)",
                                tool, sess->skill);
                return call_finish(c, refused(c, "not_in_loadout", text));
        }
        if (!json_object_is_type(c->args, json_type_object))
                return call_finish(c, refused(c, "arguments", "arguments must be a JSON object"));
        struct json_object *refusal = NULL;
        if (call_check_args(c, &refusal) < 0)
                return call_finish(c, result_new("sandbox_error", "internal", "toolsd could not check the arguments",
                                                 sess->sandboxed));
        if (refusal)
                return call_finish(c, refusal);
        if (id == TOOL_RUN_SHELL)
                session_remember_call(sess, c->id);
        if (t->start(c) < 0 && !c->finished)
                call_finish(c, result_new("sandbox_error", "internal", "toolsd could not start the tool",
                                          sess->sandboxed));
}
