/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Status pages (see status_page.h): rendering, the seqlock, and the
 * parser root's broker runs over text another user's broker wrote.
 *
 * Runs in brokers (no capabilities). No I/O: the page is plain memory here
 * (a shared mapping of the memfd in the daemon, a buffer in the tests).
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "macro.h"
#include "status_page.h"

#define DOC_HEAD "{\"list\":["
#define DOC_TAIL_MAX 128u       /* "],\"sessions\":N,...}" with three 10-digit counts */
#define SNAPSHOT_TRIES 8

void status_doc_begin(struct status_doc *d, char *buf, size_t size) {
        *d = (struct status_doc) { .buf = buf, .size = size };
        if (!buf || size < sizeof DOC_HEAD + DOC_TAIL_MAX) {
                d->error = -ENOBUFS;
                return;
        }
        memcpy(buf, DOC_HEAD, sizeof DOC_HEAD - 1);
        d->len = sizeof DOC_HEAD - 1;
}

static void jset(struct json_object *o, const char *key, struct json_object *v) {
        (void) json_object_object_add(o, key, v);
}

static bool control_at(const unsigned char *p) {
        return *p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f);
}

/* No C0 control, DEL or C1 control (U+0080..U+009F, UTF-8 C2 80..C2 9F):
 * root prints these strings on a terminal. */
static bool printable(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (control_at(p))
                        return false;
        return true;
}

/* The length of the valid UTF-8 sequence at p (1-4), or 0: an invalid
 * lead byte, a missing continuation, an overlong form, a surrogate or a
 * code point past U+10FFFF. */
static size_t utf8_len(const unsigned char *p) {
        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                return (p[1] & 0xc0) == 0x80 ? 2 : 0;
        if (p[0] >= 0xe0 && p[0] <= 0xef) {
                if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
                        return 0;
                if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f))
                        return 0;
                return 3;
        }
        if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
                        return 0;
                if ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
                        return 0;
                return 4;
        }
        return 0;
}

/* s as a JSON string, each control character (a C1 one is two bytes) and
 * each byte of an invalid UTF-8 sequence replaced by '?': a directory may
 * be called anything (the root's path comes from the kernel), and an
 * honest broker's page must still parse. */
static struct json_object *printable_string(const char *s) {
        _cleanup_free_ char *t = strdup(s);
        if (!t)
                return NULL;
        char *w = t;
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                size_t n = utf8_len(p);
                if (n == 0 || control_at(p)) {
                        *w++ = '?';
                        p += n ? n : 1;
                } else {
                        memcpy(w, p, n);
                        w += n;
                        p += n;
                }
        }
        *w = '\0';
        return json_object_new_string(t);
}

bool status_doc_add(struct status_doc *d, const struct status_entry *e) {
        if (d->error < 0 || d->full)
                return false;
        if (!e->session || !e->skill || !e->profile || !e->artifacts_root || !e->task_id)
                return false;

        _cleanup_json_ struct json_object *o = json_object_new_object();
        if (!o)
                return false;
        jset(o, "session", json_object_new_string(e->session));
        jset(o, "skill", printable_string(e->skill));
        jset(o, "profile", printable_string(e->profile));
        jset(o, "artifacts_root", printable_string(e->artifacts_root));
        jset(o, "task_id", printable_string(e->task_id));
        if (e->run_id)
                jset(o, "run_id", printable_string(e->run_id));
        if (e->role)
                jset(o, "role", printable_string(e->role));
        jset(o, "sandboxed", json_object_new_boolean(e->sandboxed));
        jset(o, "network", json_object_new_boolean(e->network));
        jset(o, "running_calls", json_object_new_int64(e->running_calls));
        jset(o, "created_usec", json_object_new_int64((int64_t) MIN(e->created_usec, (uint64_t) INT64_MAX)));
        jset(o, "used_usec", json_object_new_int64((int64_t) MIN(e->used_usec, (uint64_t) INT64_MAX)));

        size_t n;
        const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                          &n);
        if (!s)
                return false;
        size_t sep = d->listed > 0;
        if (d->len + sep + n + DOC_TAIL_MAX > d->size) {
                d->full = true;
                return false;
        }
        if (sep)
                d->buf[d->len++] = ',';
        memcpy(d->buf + d->len, s, n);
        d->len += n;
        d->listed++;
        return true;
}

int status_doc_end(struct status_doc *d, const struct status_counts *c, size_t *ret_len) {
        if (d->error < 0)
                return d->error;
        int n = snprintf(d->buf + d->len, d->size - d->len,
                         "],\"sessions\":%" PRIu32 ",\"running_calls\":%" PRIu32 ",\"connections\":%" PRIu32
                         ",\"truncated\":%s}",
                         c->sessions, c->running_calls, c->connections,
                         d->full || c->truncated || d->listed < c->sessions ? "true" : "false");
        if (n < 0 || (size_t) n >= d->size - d->len)
                return -ENOBUFS;
        d->len += (size_t) n;
        *ret_len = d->len;
        return 0;
}

/* The classic seqlock: an odd count while the text changes, release on the
 * way out so a reader that sees the even count sees the text it covers.
 * The text itself is copied with plain stores; a reader that raced them
 * sees the count change and retries. */
void status_page_publish(struct status_page *p, const char *text, size_t len) {
        uint64_t seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);

        len = MIN(len, (size_t) STATUS_PAGE_TEXT_MAX);
        seq |= 1;       /* odd, whatever a previous writer of ours left */
        __atomic_store_n(&p->seq, seq, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        memcpy(p->text, text, len);
        __atomic_store_n(&p->len, (uint32_t) len, __ATOMIC_RELAXED);
        __atomic_store_n(&p->magic, STATUS_PAGE_MAGIC, __ATOMIC_RELAXED);
        __atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELEASE);
}

int status_page_snapshot(const struct status_page *p, char *buf, size_t size, size_t *ret_len) {
        for (unsigned t = 0; t < SNAPSHOT_TRIES; t++) {
                if (t > 0)
                        (void) sched_yield();   /* let a writer on this CPU finish */
                uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
                if (s1 & 1)
                        continue;
                if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != STATUS_PAGE_MAGIC)
                        return s1 == 0 ? -ENODATA : -EBADMSG;
                uint32_t len = __atomic_load_n(&p->len, __ATOMIC_RELAXED);
                if (len > STATUS_PAGE_TEXT_MAX || len > size)
                        return -EBADMSG;
                /* The writer may be changing the text under us: copy it
                 * byte by byte with relaxed loads (no torn reads that a
                 * compiler could assume away), then check the count. */
                for (uint32_t i = 0; i < len; i++)
                        buf[i] = __atomic_load_n(&p->text[i], __ATOMIC_RELAXED);
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) == s1) {
                        *ret_len = len;
                        return 0;
                }
        }
        return -EAGAIN;
}

/* ---- parsing another user's text ---- */

static bool bare_id(const char *s) {
        return s[0] != '.' && s[0] != '-' &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(s);
}

/* Values outside strings, bounded before json-c allocates one for each:
 * "{},", "[]," or "1," take 2 or 3 bytes of text and far more memory once
 * parsed. Every object, array and comma counts; a real session entry holds
 * at most 15 of them in more than 180 bytes, so len/12 (and some slack for
 * the document around the list) is never reached by a real page. */
static bool values_within(const char *text, size_t len) {
        size_t max = len / 12 + 16, n = 0;
        bool in_string = false;

        for (size_t i = 0; i < len; i++) {
                char ch = text[i];
                if (in_string) {
                        if (ch == '\\')
                                i++;
                        else if (ch == '"')
                                in_string = false;
                } else if (ch == '"') {
                        in_string = true;
                } else if ((ch == '{' || ch == '[' || ch == ',') && ++n > max) {
                        return false;
                }
        }
        return true;
}

static bool get_string(struct json_object *o, const char *key, size_t max, bool optional, const char **ret) {
        struct json_object *v;
        if (!json_object_object_get_ex(o, key, &v)) {
                *ret = NULL;
                return optional;
        }
        if (!json_object_is_type(v, json_type_string))
                return false;
        const char *s = json_object_get_string(v);
        size_t n = (size_t) json_object_get_string_len(v);
        if (n == 0 || n > max || strlen(s) != n || !printable(s))
                return false;   /* empty, too long, an embedded NUL, a control character */
        *ret = s;
        return true;
}

static bool get_uint(struct json_object *o, const char *key, uint64_t max, uint64_t *ret) {
        struct json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        errno = 0;
        int64_t x = json_object_get_int64(v);
        if (errno != 0 || x < 0 || (uint64_t) x > max)
                return false;
        *ret = (uint64_t) x;
        return true;
}

static bool get_bool(struct json_object *o, const char *key, bool *ret) {
        struct json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_boolean))
                return false;
        *ret = json_object_get_boolean(v);
        return true;
}

static bool only_keys(struct json_object *o, const char *const *keys, size_t n) {
        json_object_object_foreach(o, k, v) {
                (void) v;
                bool known = false;
                for (size_t i = 0; i < n && !known; i++)
                        known = strcmp(k, keys[i]) == 0;
                if (!known)
                        return false;
        }
        return true;
}

static bool session_id_valid(const char *s) {
        return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

static struct json_object *entry_parse(struct json_object *e, uid_t uid, uint64_t now_usec) {
        static const char *const keys[] = { "session", "skill", "profile", "artifacts_root", "task_id", "run_id",
                                            "role", "sandboxed", "network", "running_calls", "created_usec",
                                            "used_usec" };
        const char *id, *skill, *profile, *root, *task, *run, *role;
        bool sandboxed, network;
        uint64_t running, created, used;

        if (!json_object_is_type(e, json_type_object) || !only_keys(e, keys, ELEMENTSOF(keys)))
                return NULL;
        if (!get_string(e, "session", 32, false, &id) || !session_id_valid(id) ||
            !get_string(e, "skill", STATUS_NAME_MAX, false, &skill) ||
            !get_string(e, "profile", STATUS_NAME_MAX, false, &profile) ||
            !get_string(e, "artifacts_root", STATUS_PATH_MAX, false, &root) || root[0] != '/' ||
            !get_string(e, "task_id", STATUS_NAME_MAX, false, &task) || !bare_id(task) ||
            !get_string(e, "run_id", STATUS_NAME_MAX, true, &run) ||
            !get_string(e, "role", STATUS_NAME_MAX, true, &role) || !get_bool(e, "sandboxed", &sandboxed) ||
            !get_bool(e, "network", &network) || !get_uint(e, "running_calls", UINT32_MAX, &running) ||
            !get_uint(e, "created_usec", INT64_MAX, &created) || !get_uint(e, "used_usec", INT64_MAX, &used))
                return NULL;

        /* Rebuilt from the checked values: nothing of the page's own
         * objects reaches root's client. */
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        jset(o, "session", json_object_new_string(id));
        jset(o, "uid", json_object_new_int64((int64_t) uid));
        jset(o, "skill", json_object_new_string(skill));
        jset(o, "profile", json_object_new_string(profile));
        jset(o, "artifacts_root", json_object_new_string(root));
        if (run)
                jset(o, "run_id", json_object_new_string(run));
        jset(o, "task_id", json_object_new_string(task));
        if (role)
                jset(o, "role", json_object_new_string(role));
        jset(o, "sandboxed", json_object_new_boolean(sandboxed));
        jset(o, "network", json_object_new_boolean(network));
        jset(o, "running_calls", json_object_new_int64((int64_t) running));
        jset(o, "age_seconds", json_object_new_int64((int64_t) (now_usec > created ? (now_usec - created) / 1000000u : 0)));
        jset(o, "idle_seconds", json_object_new_int64((int64_t) (now_usec > used ? (now_usec - used) / 1000000u : 0)));
        return o;
}

int status_page_parse(const char *text, size_t len, uid_t uid, uint64_t now_usec, struct json_object *sessions,
                      struct status_counts *ret) {
        static const char *const keys[] = { "list", "sessions", "running_calls", "connections", "truncated" };

        if (!text || !sessions || !ret || len == 0 || len > STATUS_PAGE_TEXT_MAX ||
            !values_within(text, len))
                return -EBADMSG;

        /* All a page needs: the document, its list, a session (json-c counts
         * one more). */
        struct json_tokener *tok = json_tokener_new_ex(4);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        _cleanup_json_ struct json_object *doc = json_tokener_parse_ex(tok, text, (int) len);
        bool whole = json_tokener_get_error(tok) == json_tokener_success && json_tokener_get_parse_end(tok) == len;
        json_tokener_free(tok);
        if (!doc || !whole || !json_object_is_type(doc, json_type_object) || !only_keys(doc, keys, ELEMENTSOF(keys)))
                return -EBADMSG;

        struct status_counts c = {};
        uint64_t n_sess, n_run, n_conn;
        struct json_object *list;
        if (!get_uint(doc, "sessions", UINT32_MAX, &n_sess) || !get_uint(doc, "running_calls", UINT32_MAX, &n_run) ||
            !get_uint(doc, "connections", UINT32_MAX, &n_conn) || !get_bool(doc, "truncated", &c.truncated) ||
            !json_object_object_get_ex(doc, "list", &list) || !json_object_is_type(list, json_type_array))
                return -EBADMSG;
        c.sessions = (uint32_t) n_sess;
        c.running_calls = (uint32_t) n_run;
        c.connections = (uint32_t) n_conn;

        size_t n = json_object_array_length(list);
        _cleanup_json_ struct json_object *out = json_object_new_array();
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *o = entry_parse(json_object_array_get_idx(list, i), uid, now_usec);
                if (!o)
                        return -EBADMSG;
                (void) json_object_array_add(out, o);
        }
        for (size_t i = 0; i < n; i++)
                (void) json_object_array_add(sessions, json_object_get(json_object_array_get_idx(out, i)));
        if (n < c.sessions)
                c.truncated = true;
        *ret = c;
        return 0;
}
