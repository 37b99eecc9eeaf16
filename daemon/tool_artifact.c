/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * write_artifact and read_tool_result: the tools that touch files without
 * running a command. Both work through the session's directory fds with
 * artifact.c's rules (no symlink followed, nothing outside the root,
 * nothing written under tool_calls/), and finish before their start
 * returns.
 *
 * Runs in the broker as the serving uid. The arguments have been checked
 * against the schema below (call_start); the rest is the model's and is
 * refused with a result it can read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifact.h"
#include "daemon.h"
#include "log.h"

#define READ_DEFAULT_BYTES (64u * 1024u)

static void jadd(struct json_object *o, const char *key, struct json_object *v) {
        (void) json_object_object_add(o, key, v);
}

static const char *jstr(struct json_object *args, const char *key) {
        struct json_object *v = NULL;
        return json_object_object_get_ex(args, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

static int64_t jint(struct json_object *args, const char *key, int64_t def) {
        struct json_object *v = NULL;
        return json_object_object_get_ex(args, key, &v) && json_object_is_type(v, json_type_int)
                       ? json_object_get_int64(v)
                       : def;
}

static int spec_new(const char *name, const char *desc, const char *params, struct json_object **ret) {
        struct json_object *p = json_tokener_parse(params);
        if (!p)
                return -ENOMEM;
        struct json_object *spec = json_object_new_object();
        jadd(spec, "name", json_object_new_string(name));
        jadd(spec, "description", json_object_new_string(desc));
        jadd(spec, "parameters", p);
        *ret = spec;
        return 0;
}

/* ---- write_artifact ---- */

int write_artifact_spec(const struct server *s, const struct session *sess, struct json_object **ret) {
        uint64_t max = s->config->max_write_bytes;
        char desc[1024], params[1024];

        (void) snprintf(desc, sizeof desc,
                        "Write a file under the artifacts root (%s), replacing it atomically if it exists; "
                        "missing parent directories are created. The path is relative, without '..', "
                        "without components starting with '.', and not under tool_calls/; symbolic links "
                        "are never followed. At most %" PRIu64 " bytes.",
                        sess->root_path, max);
        /* maxLength bounds the base64 text; the decoded size is checked
         * against the byte limit itself. */
        (void) snprintf(params, sizeof params,
                        "{\"type\":\"object\",\"properties\":{"
                        "\"path\":{\"type\":\"string\",\"maxLength\":%" PRIu64 ",\"description\":"
                        "\"Relative path of the file under the artifacts root, e.g. \\\"out/report.md\\\".\"},"
                        "\"content\":{\"type\":\"string\",\"maxLength\":%" PRIu64 ",\"description\":"
                        "\"The file's content: text, or base64 with encoding base64.\"},"
                        "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],\"description\":"
                        "\"How content is encoded (default utf-8).\"}},"
                        "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
                        (uint64_t) ARTIFACT_PATH_MAX, (max + 2) / 3 * 4);
        return spec_new("write_artifact", desc, params, ret);
}

int write_artifact_start(struct call *c) {
        struct session *sess = c->session;
        struct json_object *jc = NULL;
        const char *path = jstr(c->args, "path"), *reason = NULL;
        _cleanup_free_ void *data = NULL;
        size_t n = 0;
        char text[1200];
        int r;

        if (!path || !json_object_object_get_ex(c->args, "content", &jc))
                return -EINVAL; /* the schema requires both */
        r = artifact_decode(json_object_get_string(jc), (size_t) json_object_get_string_len(jc),
                            jstr(c->args, "encoding"), &data, &n, &reason);
        if (r == -EINVAL) {
                (void) snprintf(text, sizeof text, "content: %s", reason);
                call_finish(c, result_new("refused", "arguments", text, sess->sandboxed));
                return 0;
        }
        if (r < 0)
                return r;

        if (n > c->server->config->max_write_bytes) {
                (void) snprintf(text, sizeof text, "content: %zu bytes; write_artifact writes at most %" PRIu64,
                                n, c->server->config->max_write_bytes);
                call_finish(c, result_new("refused", "arguments", text, sess->sandboxed));
                return 0;
        }
        /* The path went through the schema (at most 1024 characters) and
         * artifact_path_check before it is shown back. */
        r = artifact_write(sess->root_fd, path, strlen(path), data, n, c->server->config->max_write_bytes, &reason);
        if (r == -EPERM) {
                (void) snprintf(text, sizeof text, "write_artifact refused: %s", reason);
                call_finish(c, result_new("refused", "path", text, sess->sandboxed));
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "call %s: write_artifact failed: %m", c->id);
                (void) snprintf(text, sizeof text, "write_artifact failed: %s", strerror(-r));
                call_finish(c, result_new("sandbox_error", "io", text, sess->sandboxed));
                return 0;
        }
        (void) snprintf(text, sizeof text, "wrote %zu bytes to %.1024s", n, path);
        struct json_object *res = result_new("ok", NULL, text, sess->sandboxed);
        jadd(res, "path", json_object_new_string(path));
        jadd(res, "bytes", json_object_new_int64((int64_t) n));
        call_finish(c, res);
        return 0;
}

/* ---- read_tool_result ---- */

int read_tool_result_spec(const struct server *s, const struct session *sess, struct json_object **ret) {
        char params[1024];
        (void) snprintf(params, sizeof params,
                        "{\"type\":\"object\",\"properties\":{"
                        "\"call_id\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{32}$\",\"description\":"
                        "\"The call_id of the run_shell call.\"},"
                        "\"stream\":{\"type\":\"string\",\"enum\":[\"stdout\",\"stderr\"],\"description\":"
                        "\"Which output (default stdout).\"},"
                        "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":"
                        "\"Byte offset to start at (default 0).\"},"
                        "\"length\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":%" PRIu64 ",\"description\":"
                        "\"Bytes to read (default %" PRIu64 ").\"}},"
                        "\"required\":[\"call_id\"],\"additionalProperties\":false}",
                        (uint64_t) TOOL_RESULT_PAGE_MAX, (uint64_t) READ_DEFAULT_BYTES);
        return spec_new("read_tool_result",
                        "Read the full output of an earlier run_shell call of this session, a page at a "
                        "time, when its result was truncated. The text starts with a line saying which "
                        "bytes it holds and the offset to read on from.",
                        params, ret);
}

/* The longest prefix of data that does not end inside a UTF-8 sequence, so
 * that a page cut mid-character is still text (the next page starts at the
 * character). */
static size_t utf8_whole(const char *data, size_t n) {
        for (size_t back = 1; back <= 3 && back <= n; back++) {
                unsigned char b = (unsigned char) data[n - back];
                if ((b & 0xc0) == 0x80)
                        continue;
                size_t need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
                return need > back ? n - back : n;
        }
        return n;
}

static struct json_object *page_result(struct call *c, const char *call_id, const char *stream, uint64_t offset,
                                       const char *data, size_t n, uint64_t total) {
        size_t whole = utf8_whole(data, n);
        bool text_ok = utf8_valid(data, whole) && !memchr(data, '\0', whole) && (whole > 0 || n == 0);
        size_t used = text_ok ? whole : n;
        _cleanup_free_ char *b64 = NULL;
        _cleanup_free_ char *text = NULL;
        bool eof = offset + used >= total;
        char head[256], more[64] = "end of output";

        if (!text_ok && base64_encode(data, n, &b64) < 0)
                return NULL;
        if (!eof)
                (void) snprintf(more, sizeof more, "more: read on with offset %" PRIu64, offset + used);
        int hl = snprintf(head, sizeof head, "[%s of call %s: bytes %" PRIu64 "-%" PRIu64 " of %" PRIu64 "%s; %s]\n",
                          stream, call_id, offset, offset + used, total, text_ok ? "" : ", base64", more);
        const char *body = text_ok ? data : b64;
        size_t bl = text_ok ? used : strlen(b64);
        text = malloc((size_t) hl + bl + 1);
        if (!text)
                return NULL;
        memcpy(text, head, (size_t) hl);
        memcpy(text + hl, body, bl);
        text[(size_t) hl + bl] = '\0';

        struct json_object *r = result_new("ok", NULL, text, c->session->sandboxed);
        jadd(r, "offset", json_object_new_int64((int64_t) offset));
        jadd(r, "length", json_object_new_int64((int64_t) used));
        jadd(r, "total", json_object_new_int64((int64_t) total));
        jadd(r, "eof", json_object_new_boolean(eof));
        if (!text_ok)
                jadd(r, "encoding", json_object_new_string("base64"));
        return r;
}

int read_tool_result_start(struct call *c) {
        struct session *sess = c->session;
        const char *id = jstr(c->args, "call_id"), *stream = jstr(c->args, "stream"), *reason = NULL;
        uint64_t offset = (uint64_t) jint(c->args, "offset", 0), total = 0;
        size_t length = (size_t) jint(c->args, "length", READ_DEFAULT_BYTES), n = 0;
        _cleanup_free_ void *data = NULL;
        char text[512];

        if (!id)
                return -EINVAL; /* the schema requires it */
        stream = stream ? stream : "stdout";
        /* Another session's calls (the same root may serve several) are
         * not this session's to read. */
        if (!session_has_call(sess, id)) {
                (void) snprintf(text, sizeof text, "call %s is not a run_shell call of this session", id);
                call_finish(c, result_new("refused", "arguments", text, sess->sandboxed));
                return 0;
        }
        int r = tool_result_read(sess->tool_calls_fd, id, stream, offset, length, &data, &n, &total, &reason);
        if (r == -EPERM || r == -ENOENT) {
                (void) snprintf(text, sizeof text, "read_tool_result refused: %s", reason);
                call_finish(c, result_new("refused", "arguments", text, sess->sandboxed));
                return 0;
        }
        if (r < 0)
                return log_warning_errno(r, "call %s: read_tool_result failed: %m", c->id);
        struct json_object *res = page_result(c, id, stream, offset, data, n, total);
        if (!res)
                return -ENOMEM;
        call_finish(c, res);
        return 0;
}
