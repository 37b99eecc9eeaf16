/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the session table (daemon/session.c), which runs in the
 * broker as the serving uid: ids, owner checks, removal, idle expiry,
 * iteration and growth. A minimal struct server stands in for the daemon;
 * server_uid_count() (server.c) is reproduced here so the per-uid session
 * counts can be checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon.h"
#include "log.h"

#define UID_A 1000
#define UID_B 1001

/* The same contract as server.c's. */
struct uid_count *server_uid_count(struct server *s, uid_t uid, bool create) {
        for (size_t i = 0; i < s->n_uids; i++)
                if (s->uids[i].uid == uid)
                        return &s->uids[i];
        if (!create)
                return NULL;
        if (s->n_uids == s->cap_uids) {
                size_t cap = s->cap_uids ? s->cap_uids * 2 : 8;
                struct uid_count *n = reallocarray(s->uids, cap, sizeof *n);
                if (!n)
                        return NULL;
                s->uids = n;
                s->cap_uids = cap;
        }
        s->uids[s->n_uids] = (struct uid_count) { .uid = uid };
        return &s->uids[s->n_uids++];
}

struct fixture {
        struct toolsd_config cfg;
        struct server s;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        if (!f)
                return -1;
        f->cfg.session_idle_timeout_sec = 10;
        f->s.config = &f->cfg;
        f->s.ctl_fd = -1;
        if (session_table_init(&f->s) < 0) {
                free(f);
                return -1;
        }
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        session_table_done(&f->s);
        free(f->s.uids);
        free(f);
        return 0;
}

static struct session *new_session(uid_t uid, uint64_t used) {
        struct session *x = calloc(1, sizeof *x);
        assert_non_null(x);
        x->uid = uid;
        x->root_fd = -1;
        x->tool_calls_fd = -1;
        x->used_usec = used;
        x->skill = strdup("test");
        return x;
}

static uint32_t sessions_of(struct server *s, uid_t uid) {
        struct uid_count *u = server_uid_count(s, uid, false);
        return u ? u->sessions : 0;
}

static void test_id_format(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        struct session *a = new_session(UID_A, 0), *b = new_session(UID_A, 0);

        assert_int_equal(session_add(s, a), 0);
        assert_int_equal(session_add(s, b), 0);
        assert_int_equal(strlen(a->id), ID_LEN);
        assert_int_equal(strspn(a->id, "0123456789abcdef"), ID_LEN);
        assert_int_equal(strspn(b->id, "0123456789abcdef"), ID_LEN);
        assert_string_not_equal(a->id, b->id);
        assert_int_equal(s->n_sessions, 2);
        assert_int_equal(sessions_of(s, UID_A), 2);
}

static void test_random_id_distinct(void **state) {
        char seen[64][ID_LEN + 1];
        (void) state;

        for (size_t i = 0; i < 64; i++) {
                assert_int_equal(random_id(seen[i]), 0);
                assert_int_equal(strlen(seen[i]), ID_LEN);
                for (size_t j = 0; j < i; j++)
                        assert_string_not_equal(seen[i], seen[j]);
        }
}

static void test_find_owner_only(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        struct session *a = new_session(UID_A, 0), *b = new_session(UID_B, 0);

        assert_int_equal(session_add(s, a), 0);
        assert_int_equal(session_add(s, b), 0);
        assert_ptr_equal(session_find(s, a->id, UID_A), a);
        assert_ptr_equal(session_find(s, b->id, UID_B), b);
        /* Another uid's session looks exactly like a missing one. */
        assert_null(session_find(s, a->id, UID_B));
        assert_null(session_find(s, b->id, UID_A));
        assert_null(session_find(s, b->id, 0));
        assert_int_equal(sessions_of(s, UID_A), 1);
        assert_int_equal(sessions_of(s, UID_B), 1);
}

static void test_find_malformed(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        struct session *a = new_session(UID_A, 0);
        char id[ID_LEN + 2];

        assert_int_equal(session_add(s, a), 0);
        assert_null(session_find(s, NULL, UID_A));
        assert_null(session_find(s, "", UID_A));
        /* A prefix, the id plus one byte, and a changed last byte. */
        memcpy(id, a->id, ID_LEN - 1);
        id[ID_LEN - 1] = '\0';
        assert_null(session_find(s, id, UID_A));
        memcpy(id, a->id, ID_LEN);
        id[ID_LEN] = '0';
        id[ID_LEN + 1] = '\0';
        assert_null(session_find(s, id, UID_A));
        id[ID_LEN] = '\0';
        id[ID_LEN - 1] = id[ID_LEN - 1] == 'f' ? '0' : 'f';
        assert_null(session_find(s, id, UID_A));
        assert_null(session_find(s, "ffffffffffffffffffffffffffffffff", UID_A));
}

static void test_remove(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        struct session *a = new_session(UID_A, 0), *b = new_session(UID_A, 0);

        assert_int_equal(session_add(s, a), 0);
        assert_int_equal(session_add(s, b), 0);
        session_remove(s, a);
        assert_null(session_find(s, a->id, UID_A));
        assert_ptr_equal(session_find(s, b->id, UID_A), b);
        assert_int_equal(s->n_sessions, 1);
        assert_int_equal(sessions_of(s, UID_A), 1);
        /* Removing it twice changes nothing. */
        session_remove(s, a);
        assert_int_equal(s->n_sessions, 1);
        assert_int_equal(sessions_of(s, UID_A), 1);
        session_free(a);
        session_free(NULL);
}

static void test_expire(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        const uint64_t sec = 1000000u, now = 1000 * sec;
        struct session *old = new_session(UID_A, now - 11 * sec);
        struct session *busy = new_session(UID_A, now - 100 * sec);
        struct session *fresh = new_session(UID_B, now - 9 * sec);
        struct session *edge = new_session(UID_B, now - 10 * sec);
        char old_id[ID_LEN + 1];

        busy->running = 1;
        assert_int_equal(session_add(s, old), 0);
        assert_int_equal(session_add(s, busy), 0);
        assert_int_equal(session_add(s, fresh), 0);
        assert_int_equal(session_add(s, edge), 0);
        memcpy(old_id, old->id, sizeof old_id);

        session_expire_idle(s, now);
        /* Idle longer than the timeout and running nothing: gone (freed). */
        assert_null(session_find(s, old_id, UID_A));
        assert_ptr_equal(session_find(s, busy->id, UID_A), busy);
        assert_ptr_equal(session_find(s, fresh->id, UID_B), fresh);
        assert_ptr_equal(session_find(s, edge->id, UID_B), edge);
        assert_int_equal(s->n_sessions, 3);
        assert_int_equal(sessions_of(s, UID_A), 1);
        assert_int_equal(sessions_of(s, UID_B), 2);
}

static void test_expire_disabled(void **state) {
        struct fixture *f = *state;
        struct session *a = new_session(UID_A, 0);

        f->cfg.session_idle_timeout_sec = 0;
        assert_int_equal(session_add(&f->s, a), 0);
        session_expire_idle(&f->s, UINT64_MAX / 2);
        assert_ptr_equal(session_find(&f->s, a->id, UID_A), a);
}

static size_t count_all(struct server *s, uid_t only, bool filter) {
        size_t n = 0, i = 0;
        for (struct session *x = NULL; (x = session_next(s, &i, x));)
                n += !filter || x->uid == only;
        return n;
}

static void test_next_empty(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        assert_int_equal(count_all(s, 0, false), 0);
}

static void test_next_each_once(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        struct session *x[40];

        for (size_t i = 0; i < 40; i++) {
                x[i] = new_session(i % 2 ? UID_B : UID_A, 0);
                assert_int_equal(session_add(s, x[i]), 0);
        }
        size_t seen[40] = {}, i = 0;
        for (struct session *y = NULL; (y = session_next(s, &i, y));)
                for (size_t k = 0; k < 40; k++)
                        seen[k] += y == x[k];
        for (size_t k = 0; k < 40; k++)
                assert_int_equal(seen[k], 1);
        assert_int_equal(count_all(s, UID_A, true), 20);
        assert_int_equal(count_all(s, UID_B, true), 20);
}

static void test_growth(void **state) {
        struct server *s = &((struct fixture *) *state)->s;
        enum { N = 5000 };
        struct session **x = calloc(N, sizeof *x);

        assert_non_null(x);
        assert_int_equal(s->n_buckets, 256);
        for (size_t i = 0; i < N; i++) {
                x[i] = new_session(i % 3 ? UID_A : UID_B, 0);
                assert_int_equal(session_add(s, x[i]), 0);
        }
        assert_int_equal(s->n_sessions, N);
        assert_true(s->n_buckets > 256);
        assert_true(s->n_buckets >= N);
        /* Still a power of two: the hash masks with n_buckets - 1. */
        assert_int_equal(s->n_buckets & (s->n_buckets - 1), 0);
        for (size_t i = 0; i < N; i++) {
                assert_ptr_equal(session_find(s, x[i]->id, x[i]->uid), x[i]);
                assert_null(session_find(s, x[i]->id, x[i]->uid == UID_A ? UID_B : UID_A));
        }
        assert_int_equal(count_all(s, 0, false), N);
        assert_int_equal(sessions_of(s, UID_B), (N + 2) / 3);
        assert_int_equal(sessions_of(s, UID_A), N - (N + 2) / 3);

        /* Remove every other one; the rest are still found. */
        for (size_t i = 0; i < N; i += 2) {
                session_remove(s, x[i]);
                assert_null(session_find(s, x[i]->id, x[i]->uid));
                session_free(x[i]);
        }
        assert_int_equal(s->n_sessions, N / 2);
        for (size_t i = 1; i < N; i += 2)
                assert_ptr_equal(session_find(s, x[i]->id, x[i]->uid), x[i]);
        assert_int_equal(count_all(s, 0, false), N / 2);
        free(x);
}

int main(void) {
        log_set_max_level(LOG_WARNING);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_id_format, setup, teardown),
                cmocka_unit_test_setup_teardown(test_random_id_distinct, setup, teardown),
                cmocka_unit_test_setup_teardown(test_find_owner_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_find_malformed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
                cmocka_unit_test_setup_teardown(test_expire, setup, teardown),
                cmocka_unit_test_setup_teardown(test_expire_disabled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_next_empty, setup, teardown),
                cmocka_unit_test_setup_teardown(test_next_each_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_growth, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
