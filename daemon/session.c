/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The session table: random ids, owner uid, idle expiry.
 *
 * Runs in the broker as the serving uid. Ids are 128 random bits, so one
 * cannot be guessed; lookups also compare the owner, so a session of another
 * uid is indistinguishable from a missing one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

uint64_t now_usec(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

int random_id(char ret[ID_LEN + 1]) {
        static const char hex[] = "0123456789abcdef";
        uint8_t b[ID_LEN / 2];
        size_t got = 0;

        while (got < sizeof b) {
                ssize_t n = getrandom(b + got, sizeof b - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t) n;
        }
        for (size_t i = 0; i < sizeof b; i++) {
                ret[2 * i] = hex[b[i] >> 4];
                ret[2 * i + 1] = hex[b[i] & 15];
        }
        ret[ID_LEN] = '\0';
        return 0;
}

/* The ids are random: their first bytes are a good enough hash. */
static size_t id_hash(const char *id, size_t n_buckets) {
        uint64_t h = 0;
        for (size_t i = 0; i < 16 && id[i]; i++)
                h = h * 31 + (unsigned char) id[i];
        return (size_t) (h & (n_buckets - 1));
}

int session_table_init(struct server *s) {
        s->n_buckets = 256;
        s->buckets = calloc(s->n_buckets, sizeof *s->buckets);
        return s->buckets ? 0 : -ENOMEM;
}

static int table_grow(struct server *s) {
        size_t n = s->n_buckets * 2;
        struct session **b = calloc(n, sizeof *b);
        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_buckets; i++)
                for (struct session *x = s->buckets[i], *next; x; x = next) {
                        next = x->hnext;
                        size_t h = id_hash(x->id, n);
                        x->hnext = b[h];
                        b[h] = x;
                }
        free(s->buckets);
        s->buckets = b;
        s->n_buckets = n;
        return 0;
}

int session_add(struct server *s, struct session *sess) {
        int r;

        if (s->n_sessions >= s->n_buckets && table_grow(s) < 0)
                return -ENOMEM;
        do {
                r = random_id(sess->id);
                if (r < 0)
                        return r;
        } while (session_find(s, sess->id, sess->uid)); /* 2^-128, but cheap */

        size_t h = id_hash(sess->id, s->n_buckets);
        sess->hnext = s->buckets[h];
        s->buckets[h] = sess;
        s->n_sessions++;
        server_status_changed(s);
        struct uid_count *u = server_uid_count(s, sess->uid, true);
        if (u)
                u->sessions++;
        return 0;
}

struct session *session_find(struct server *s, const char *id, uid_t uid) {
        if (!id || strlen(id) != ID_LEN)
                return NULL;
        for (struct session *x = s->buckets[id_hash(id, s->n_buckets)]; x; x = x->hnext)
                if (x->uid == uid && strcmp(x->id, id) == 0)
                        return x;
        return NULL;
}

void session_remove(struct server *s, struct session *sess) {
        struct session **p = &s->buckets[id_hash(sess->id, s->n_buckets)];
        for (; *p; p = &(*p)->hnext)
                if (*p == sess) {
                        *p = sess->hnext;
                        sess->hnext = NULL;
                        s->n_sessions--;
                        server_status_changed(s);
                        struct uid_count *u = server_uid_count(s, sess->uid, false);
                        if (u && u->sessions > 0)
                                u->sessions--;
                        return;
                }
}

void session_free(struct session *sess) {
        if (!sess)
                return;
        free(sess->skill);
        free(sess->task_id);
        free(sess->run_id);
        free(sess->role);
        free(sess->root_path);
        closep(&sess->root_fd);
        closep(&sess->tool_calls_fd);
        strv_free(sess->envp);
        strv_free(sess->dropped_env);
        free(sess->call_ids);
        free(sess);
}

struct session *session_next(struct server *s, size_t *bucket, struct session *prev) {
        if (prev && prev->hnext)
                return prev->hnext;
        for (size_t i = prev ? *bucket + 1 : *bucket; i < s->n_buckets; i++)
                if (s->buckets[i]) {
                        *bucket = i;
                        return s->buckets[i];
                }
        return NULL;
}

void session_expire_idle(struct server *s, uint64_t now) {
        uint64_t idle = (uint64_t) s->config->session_idle_timeout_sec * 1000000u;

        if (idle == 0)
                return;
        for (size_t i = 0; i < s->n_buckets; i++)
                for (struct session *x = s->buckets[i], *next; x; x = next) {
                        next = x->hnext;
                        if (x->running == 0 && now - x->used_usec > idle) {
                                log_info("session %.8s… of uid=%u expired after %u s idle", x->id,
                                         (unsigned) x->uid, s->config->session_idle_timeout_sec);
                                session_remove(s, x);
                                session_free(x);
                        }
                }
}

void session_table_done(struct server *s) {
        for (size_t i = 0; i < s->n_buckets; i++)
                for (struct session *x = s->buckets[i], *next; x; x = next) {
                        next = x->hnext;
                        session_free(x);
                }
        free(s->buckets);
        s->buckets = NULL;
        s->n_buckets = 0;
        s->n_sessions = 0;
}
