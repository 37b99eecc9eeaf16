/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Status pages: how root's broker sees other users' sessions (system mode,
 * ListSessions/Status with all_users), read-only.
 *
 * The master creates one page per broker: a sealed memfd of
 * STATUS_PAGE_SIZE bytes (it cannot grow or shrink), handed to that broker
 * at MASTER_PAGE_FD and, over its control socket, to root's broker. The
 * broker publishes a JSON summary of its sessions into it (a seqlock
 * guards the text); root's broker snapshots and parses it. The master
 * never reads or writes a page; whether its broker still runs, root's
 * broker learns from a pidfd the master sends with it, not from the page.
 *
 * A page is written by a broker that runs as its user, so everything in it
 * is that user's claim: the reader bounds and checks every field, takes the
 * uid from the master (never from the page), and rebuilds the SessionInfo
 * objects itself. A broker can misreport only its own user.
 *
 * Everything here is pure (memory in, memory out), unit-tested and fuzzed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct json_object;

#define STATUS_PAGE_SIZE (256u * 1024u)
#define STATUS_PAGE_MAGIC 0x53445354u   /* "TSDS" little-endian */

struct status_page {
        uint32_t magic;                 /* STATUS_PAGE_MAGIC once the broker wrote */
        uint32_t reserved0;
        uint64_t seq;                   /* even: stable; odd: being written */
        uint32_t len;                   /* bytes of text in use */
        uint32_t reserved;
        char text[];                    /* a JSON document, not NUL-terminated */
};

#define STATUS_PAGE_TEXT_MAX (STATUS_PAGE_SIZE - sizeof(struct status_page))

/* The bounds a page's fields must keep (those OpenSession enforces, or
 * wider). No string may hold a control character (C0, DEL or C1): what
 * root reads must not drive root's terminal. */
#define STATUS_NAME_MAX 1024u           /* skill, profile, run_id, task_id, role */
#define STATUS_PATH_MAX 4096u           /* artifacts_root */


/* One session as a broker publishes it. Times are CLOCK_MONOTONIC in µs,
 * which every process of the host shares. */
struct status_entry {
        const char *session;            /* 32 lower-case hex digits */
        const char *skill, *profile, *artifacts_root, *task_id;
        const char *run_id, *role;      /* NULL: none */
        bool sandboxed, network;
        uint32_t running_calls;
        uint64_t created_usec, used_usec;
};

struct status_counts {
        uint32_t sessions, running_calls, connections;
        bool truncated;                 /* the page lists fewer sessions than it counts */
};

/* Rendering a page's text: begin, add sessions while they fit, end. */
struct status_doc {
        char *buf;
        size_t size, len;
        size_t listed;
        bool full;
        int error;
};

void status_doc_begin(struct status_doc *d, char *buf, size_t size);
/* Appends one session; false (and nothing appended) once the text would
 * not leave room for the counts, or on a string that cannot be rendered. */
bool status_doc_add(struct status_doc *d, const struct status_entry *e);
/* Closes the document with the counts (truncated set when an add was
 * refused); the length of the text, or a negative errno. */
int status_doc_end(struct status_doc *d, const struct status_counts *c, size_t *ret_len);

/* Writer side (the broker): copies text into the page under the seqlock.
 * len must be at most STATUS_PAGE_TEXT_MAX. */
void status_page_publish(struct status_page *p, const char *text, size_t len);

/* Reader side (root's broker): a consistent copy of the text into buf
 * (size at least STATUS_PAGE_TEXT_MAX), retried a few times when the
 * writer is busy (yielding the CPU in between). 0 and *ret_len; -ENODATA:
 * nothing published yet; -EAGAIN: always busy; -EBADMSG: not a page. */
int status_page_snapshot(const struct status_page *p, char *buf, size_t size, size_t *ret_len);

/* Parses a page's text into SessionInfo objects (appended to sessions, a
 * JSON array; every one gets uid) and the counts. now_usec turns the
 * times into ages. -EBADMSG for anything that is not a well-formed page
 * (checked before json-c builds anything big: objects, arrays and
 * commas at most one per 12 bytes): then nothing is appended. */
int status_page_parse(const char *text, size_t len, uid_t uid, uint64_t now_usec, struct json_object *sessions,
                      struct status_counts *ret);
