/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit trail: one JSON line per tool call in
 * <artifacts_root>/tool_calls/<task-id>.jsonl.
 *
 * Runs in the broker (as the peer's uid, no capabilities), at the end of
 * every call (call_finish). No logging; errors are returned.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#define AUDIT_PREVIEW_MAX 4096          /* bytes kept of one string in arguments/result */
#define AUDIT_LINE_MAX (64u * 1024u)    /* bytes in one line, newline included */
#define AUDIT_DEPTH_MAX 16              /* nesting copied from arguments/result */
#define AUDIT_TASK_ID_MAX 128           /* bytes in a task id (it names the file) */

struct audit_entry {
        const char *task_id;
        const char *role;
        const char *session;            /* session id */
        const char *skill;
        const char *call_id;
        const char *tool;
        struct json_object *arguments;  /* as the client sent them (borrowed) */
        const char *outcome;            /* NULL: taken from result's "outcome" */
        const char *reason;             /* NULL: taken from result's "reason" */
        struct json_object *result;     /* the Result (borrowed), may be NULL */
        uint64_t duration_ms;
        uint64_t timestamp_usec;        /* CLOCK_REALTIME, when the call ended */
        uid_t uid;
};

/* Builds the record: every field above, "timestamp" as RFC 3339 UTC with
 * milliseconds, arguments and result deep-copied with every string cut to
 * AUDIT_PREVIEW_MAX bytes (on a character boundary, marked "… [N bytes]"),
 * nesting cut at AUDIT_DEPTH_MAX, and every string and key made valid UTF-8
 * (invalid sequences and NULs become U+FFFD). NULL on ENOMEM. */
struct json_object *audit_record(const struct audit_entry *e);

/* True for a task id that can name the file: 1-AUDIT_TASK_ID_MAX bytes of
 * [A-Za-z0-9._-], not starting with '.'. */
bool audit_task_id_valid(const char *task_id);

/* Appends record as one line to <task_id>.jsonl under tool_calls_fd.
 *
 * The file is opened O_RDWR|O_APPEND|O_NOFOLLOW|O_NONBLOCK, created 0600 and
 * chmod'ed back to 0600 if it is wider; a symlink (-ELOOP), a non-regular
 * file or a file of another owner (-EPERM) is refused. A line longer than
 * AUDIT_LINE_MAX has its arguments and result replaced by a preview of
 * their serialization and their sizes, so that every line goes out in one
 * write(2): with O_APPEND a single write to a regular file is never
 * interleaved with another process's.
 *
 * Torn lines: every writer holds an exclusive flock on tool_calls/.lock
 * (mode 0200, which a sandboxed command can open neither for reading nor,
 * on its read-only mount, for writing, so it cannot hold the lock and stall
 * the broker; an unsandboxed command, which has no read-only mount, could,
 * so the wait is bounded to 100 ms, after which the line is appended
 * whole without any repair). Under it, a tail without its newline (left by a writer that
 * died mid-write) is cut off before appending, and a short write of our
 * own (ENOSPC, EFBIG) is cut back, so the file holds whole lines only.
 *
 * Returns 0, -EINVAL for a bad task id, -E2BIG when even the cut record is
 * too long, or a negative errno. No fsync: a crashed process loses nothing
 * that write(2) accepted; only a crash of the machine could. */
int audit_append(int tool_calls_fd, const char *task_id, struct json_object *record);
