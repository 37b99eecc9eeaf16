/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit trail: builds a call's record and appends it as one line to
 * <artifacts_root>/tool_calls/<task-id>.jsonl.
 *
 * Runs in the broker (as the peer's uid, no capabilities). The directory
 * tool_calls/ is opened by the broker at OpenSession (0700) and is
 * read-only inside every sandbox, so only the broker writes here. No
 * logging: errors are returned to call_finish(), which logs them.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "macro.h"
#include "varlink.h"

#define CUT_PREVIEW_MAX 1024            /* bytes of arguments/result kept in a cut line */

static void jadd(struct json_object *o, const char *key, struct json_object *v) {
        (void) json_object_object_add(o, key, v);
}

/* Backs off from a cut inside a multi-byte character. */
static size_t utf8_boundary(const char *s, size_t n) {
        size_t k = n;
        while (k > 0 && n - k < 3 && ((unsigned char) s[k] & 0xC0) == 0x80)
                k--;
        return k;
}

/* A JSON string of s (n bytes), valid UTF-8, cut to cap bytes of input. */
static struct json_object *string_cut(const char *s, size_t n, size_t cap) {
        _cleanup_free_ char *clean = NULL;
        size_t keep = n > cap ? utf8_boundary(s, cap) : n;

        if (utf8_sanitize(s, keep, &clean) < 0)
                return NULL;
        if (keep == n)
                return json_object_new_string(clean);

        size_t m = strlen(clean);
        _cleanup_free_ char *t = malloc(m + 64);
        if (!t)
                return NULL;
        (void) snprintf(t, m + 64, "%s… [%zu bytes]", clean, n);
        return json_object_new_string(t);
}

static struct json_object *copy_cut(struct json_object *o, unsigned depth, size_t cap);

static struct json_object *object_copy(struct json_object *o, unsigned depth, size_t cap) {
        _cleanup_json_ struct json_object *c = json_object_new_object();
        if (!c)
                return NULL;
        json_object_object_foreach(o, key, val) {
                _cleanup_free_ char *k = NULL;
                size_t kn = strlen(key);
                if (utf8_sanitize(key, kn > cap ? utf8_boundary(key, cap) : kn, &k) < 0)
                        return NULL;
                struct json_object *v = copy_cut(val, depth - 1, cap);
                if (!v && val)
                        return NULL;
                jadd(c, k, v);
        }
        return TAKE_PTR(c);
}

static struct json_object *array_copy(struct json_object *o, unsigned depth, size_t cap) {
        _cleanup_json_ struct json_object *c = json_object_new_array();
        if (!c)
                return NULL;
        for (size_t i = 0, n = json_object_array_length(o); i < n; i++) {
                struct json_object *val = json_object_array_get_idx(o, i);
                struct json_object *v = copy_cut(val, depth - 1, cap);
                if ((!v && val) || json_object_array_add(c, v) < 0)
                        return NULL;
        }
        return TAKE_PTR(c);
}

/* A deep copy with every string cut and made valid UTF-8. Scalars other
 * than strings are shared (json-c counts references). */
static struct json_object *copy_cut(struct json_object *o, unsigned depth, size_t cap) {
        switch (json_object_get_type(o)) {
        case json_type_null:
                return NULL;
        case json_type_string:
                return string_cut(json_object_get_string(o), (size_t) json_object_get_string_len(o), cap);
        case json_type_object:
                return depth == 0 ? json_object_new_string("[nested too deep]") : object_copy(o, depth, cap);
        case json_type_array:
                return depth == 0 ? json_object_new_string("[nested too deep]") : array_copy(o, depth, cap);
        case json_type_boolean:
        case json_type_int:
        case json_type_double:
        default:
                return json_object_get(o);
        }
}

static struct json_object *field(const char *s) {
        return s ? string_cut(s, strlen(s), AUDIT_PREVIEW_MAX) : NULL;
}

static int timestamp_format(uint64_t usec, char ret[static 32]) {
        time_t t = (time_t) (usec / 1000000u);
        struct tm tm;
        if (!gmtime_r(&t, &tm))
                return -EINVAL;
        size_t k = strftime(ret, 32, "%Y-%m-%dT%H:%M:%S", &tm);
        if (k == 0 || k > 20)
                return -EINVAL;
        (void) snprintf(ret + k, 32 - k, ".%03uZ", (unsigned) (usec / 1000u % 1000u));
        return 0;
}

static const char *result_string(struct json_object *result, const char *key) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(result, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

struct json_object *audit_record(const struct audit_entry *e) {
        char ts[32];
        _cleanup_json_ struct json_object *r = json_object_new_object();

        if (!r || timestamp_format(e->timestamp_usec, ts) < 0)
                return NULL;
        const char *outcome = e->outcome ? e->outcome : result_string(e->result, "outcome");
        const char *reason = e->reason ? e->reason : result_string(e->result, "reason");
        struct json_object *args = copy_cut(e->arguments, AUDIT_DEPTH_MAX, AUDIT_PREVIEW_MAX);
        struct json_object *res = copy_cut(e->result, AUDIT_DEPTH_MAX, AUDIT_PREVIEW_MAX);

        jadd(r, "timestamp", json_object_new_string(ts));
        jadd(r, "task_id", field(e->task_id));
        jadd(r, "role", field(e->role));
        jadd(r, "session", field(e->session));
        jadd(r, "skill", field(e->skill));
        jadd(r, "uid", json_object_new_int64((int64_t) e->uid));
        jadd(r, "call_id", field(e->call_id));
        jadd(r, "tool", field(e->tool));
        jadd(r, "arguments", args);
        jadd(r, "outcome", field(outcome));
        jadd(r, "reason", field(reason));
        jadd(r, "duration_ms", json_object_new_int64((int64_t) MIN(e->duration_ms, (uint64_t) INT64_MAX)));
        jadd(r, "result", res);
        if ((!args && e->arguments) || (!res && e->result))
                return NULL;
        return TAKE_PTR(r);
}

bool audit_task_id_valid(const char *id) {
        size_t n = id ? strnlen(id, AUDIT_TASK_ID_MAX + 1) : 0;

        if (n == 0 || n > AUDIT_TASK_ID_MAX || id[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
                      (id[i] >= '0' && id[i] <= '9') || id[i] == '.' || id[i] == '_' || id[i] == '-'))
                        return false;
        return true;
}

/* {"cut": true, "bytes": N, "preview": "..."} in place of a too-big member. */
static struct json_object *cut_member(struct json_object *v) {
        size_t n = 0;
        const char *s = json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        struct json_object *c = json_object_new_object();
        if (!c || !s)
                return c;
        jadd(c, "cut", json_object_new_boolean(true));
        jadd(c, "bytes", json_object_new_int64((int64_t) n));
        jadd(c, "preview", string_cut(s, n, CUT_PREVIEW_MAX));
        return c;
}

/* The record as one line with its newline: cut when too long, repaired
 * when not UTF-8 (a record that did not come from audit_record()). */
static int line_format(struct json_object *record, char **ret, size_t *ret_len) {
        const int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
        _cleanup_json_ struct json_object *fixed = NULL;
        size_t n = 0;
        const char *s = json_object_to_json_string_length(record, flags, &n);

        if (s && !utf8_valid(s, n)) {
                fixed = copy_cut(record, AUDIT_DEPTH_MAX + 2, AUDIT_LINE_MAX);
                s = fixed ? json_object_to_json_string_length(fixed, flags, &n) : NULL;
        }
        if (s && n + 1 > AUDIT_LINE_MAX && json_object_is_type(record, json_type_object)) {
                struct json_object *src = fixed ? fixed : record;
                _cleanup_json_ struct json_object *small = json_object_new_object();
                if (!small)
                        return -ENOMEM;
                json_object_object_foreach(src, key, val) {
                        bool big = strcmp(key, "arguments") == 0 || strcmp(key, "result") == 0;
                        jadd(small, key, big ? cut_member(val) : json_object_get(val));
                }
                json_object_put(fixed);
                fixed = TAKE_PTR(small);
                s = json_object_to_json_string_length(fixed, flags, &n);
        }
        if (!s)
                return -ENOMEM;
        if (n + 1 > AUDIT_LINE_MAX)
                return -E2BIG;
        char *line = malloc(n + 1);
        if (!line)
                return -ENOMEM;
        memcpy(line, s, n);
        line[n] = '\n';
        *ret = line;
        *ret_len = n + 1;
        return 0;
}

static int transcript_open(int dirfd, const char *task_id) {
        char name[AUDIT_TASK_ID_MAX + 8];
        struct stat st;

        (void) snprintf(name, sizeof name, "%s.jsonl", task_id);
        /* O_RDWR: the tail repair reads. O_NONBLOCK: a FIFO planted here
         * must not hang the broker. */
        _cleanup_close_ int fd = openat(dirfd, name,
                                        O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                                        0600);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
                return -EPERM;
        if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

#define LOCK_TRIES 100                  /* × 1 ms: brokers hold it for microseconds */

/* The writers' lock is tool_calls/.lock, mode 0200, not the transcript: a
 * sandboxed command could flock() the transcript (it may read it), but it
 * can open the lock file neither for reading (mode) nor for writing (the
 * read-only mount), and flock() needs an open file. So only brokers ever
 * hold it, briefly, and waiting for it cannot be made to hang. Every
 * writer takes it: the tail repair never races an append. */
static int lock_take(int dirfd) {
        _cleanup_close_ int fd = openat(dirfd, ".lock", O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0200);
        struct stat st;

        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
                return -EPERM;
        if ((st.st_mode & 07777) != 0200 && fchmod(fd, 0200) < 0)
                return negative_errno();
        /* Bounded all the same (this runs on the broker's loop): an
         * unsandboxed command (no read-only mount) could open the lock file
         * and hold it. */
        for (int i = 0; i < LOCK_TRIES; i++) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return TAKE_FD(fd);
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return negative_errno();
                (void) usleep(1000);
        }
        return -EWOULDBLOCK;
}

/* Under the lock: cuts a tail that lacks its newline (a writer died in the
 * middle of its write). Lines are at most AUDIT_LINE_MAX, so the last
 * newline is within that window unless the file is not ours to judge.
 * Returns the size after the repair. */
static int tail_repair(int fd, off_t *ret_size) {
        struct stat st;
        char last;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        *ret_size = st.st_size;
        if (st.st_size == 0)
                return 0;
        if (pread(fd, &last, 1, st.st_size - 1) != 1)
                return -EIO;
        if (last == '\n')
                return 0;

        size_t window = (size_t) MIN((off_t) AUDIT_LINE_MAX, st.st_size);
        _cleanup_free_ char *buf = malloc(window);
        if (!buf)
                return -ENOMEM;
        off_t start = st.st_size - (off_t) window;
        if (pread(fd, buf, window, start) != (ssize_t) window)
                return -EIO;
        char *nl = memrchr(buf, '\n', window);
        if (!nl && start > 0)
                return 0; /* a line longer than ours can be: leave it */
        off_t cut = nl ? start + (nl - buf) + 1 : 0;
        if (ftruncate(fd, cut) < 0)
                return negative_errno();
        *ret_size = cut;
        return 0;
}

int audit_append(int tool_calls_fd, const char *task_id, struct json_object *record) {
        _cleanup_free_ char *line = NULL;
        size_t len = 0;
        off_t before = -1;
        int r;

        if (!audit_task_id_valid(task_id) || !record)
                return -EINVAL;
        r = line_format(record, &line, &len);
        if (r < 0)
                return r;
        /* Held by someone for a second (only an unsandboxed command can):
         * append whole all the same, but repair and cut nothing. */
        _cleanup_close_ int lock = lock_take(tool_calls_fd);
        if (lock < 0 && lock != -EWOULDBLOCK)
                return lock;
        _cleanup_close_ int fd = transcript_open(tool_calls_fd, task_id);
        if (fd < 0)
                return fd;
        if (lock < 0 || tail_repair(fd, &before) < 0)
                before = -1;

        ssize_t k;
        do
                k = write(fd, line, len);
        while (k < 0 && errno == EINTR);
        if (k == (ssize_t) len)
                return 0;
        r = k < 0 ? negative_errno() : -ENOSPC;
        /* We hold the lock: nobody else appended meanwhile. */
        if (k > 0 && before >= 0)
                (void) ftruncate(fd, before);
        return r;
}
