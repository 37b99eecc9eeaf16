/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of status_page.c: rendering a broker's page, the seqlock, and
 * the parser root's broker runs over another user's text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "macro.h"
#include "status_page.h"

#define ID "0123456789abcdef0123456789abcdef"

static const struct status_entry entry = {
        .session = ID,
        .skill = "lint",
        .profile = "passive",
        .artifacts_root = "/home/a/run \"1\"",
        .task_id = "t1",
        .run_id = "r1",
        .role = NULL,
        .sandboxed = true,
        .network = false,
        .running_calls = 2,
        .created_usec = 1000000,
        .used_usec = 5000000,
};

static char *render(const struct status_entry *e, size_t n, const struct status_counts *c, size_t size,
                    size_t *ret_len, size_t *ret_listed) {
        char *buf = malloc(size);
        struct status_doc d;
        assert_non_null(buf);
        status_doc_begin(&d, buf, size);
        for (size_t i = 0; i < n; i++)
                (void) status_doc_add(&d, &e[i]);
        assert_int_equal(status_doc_end(&d, c, ret_len), 0);
        assert_true(*ret_len <= size);
        if (ret_listed)
                *ret_listed = d.listed;
        return buf;
}

static int parse(const char *text, size_t len, struct json_object **ret_list, struct status_counts *c) {
        struct json_object *list = json_object_new_array();
        int r = status_page_parse(text, len, 1000, 12000000, list, c);
        *ret_list = list;
        return r;
}

/* Each text is refused whole: nothing appended. */
static void assert_all_refused(const char *const *bad, size_t n) {
        struct status_counts c;
        struct json_object *list;

        for (size_t i = 0; i < n; i++) {
                int r = parse(bad[i], strlen(bad[i]), &list, &c);
                if (r != -EBADMSG)
                        fail_msg("accepted (%d): %s", r, bad[i]);
                assert_int_equal(json_object_array_length(list), 0);
                json_object_put(list);
        }
}

static void test_round_trip(void **state) {
        struct status_counts c = { .sessions = 1, .running_calls = 2, .connections = 3 }, got;
        struct json_object *list, *o;
        size_t len;
        char *text = render(&entry, 1, &c, STATUS_PAGE_TEXT_MAX, &len, NULL);

        assert_int_equal(parse(text, len, &list, &got), 0);
        assert_int_equal(got.sessions, 1);
        assert_int_equal(got.running_calls, 2);
        assert_int_equal(got.connections, 3);
        assert_false(got.truncated);
        assert_int_equal(json_object_array_length(list), 1);
        o = json_object_array_get_idx(list, 0);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "session")), ID);
        /* the uid is the reader's, never the page's */
        assert_int_equal(json_object_get_int64(json_object_object_get(o, "uid")), 1000);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "artifacts_root")), "/home/a/run \"1\"");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "run_id")), "r1");
        assert_null(json_object_object_get(o, "role"));
        assert_int_equal(json_object_get_int64(json_object_object_get(o, "age_seconds")), 11);
        assert_int_equal(json_object_get_int64(json_object_object_get(o, "idle_seconds")), 7);
        assert_int_equal(json_object_get_int64(json_object_object_get(o, "running_calls")), 2);
        assert_null(json_object_object_get(o, "created_usec"));
        json_object_put(list);
        free(text);
}

/* A page lists what fits and says so; the counts stay exact. */
static void test_truncated(void **state) {
        struct status_entry many[64];
        struct status_counts c = { .sessions = 64 }, got;
        struct json_object *list;
        size_t len, listed;

        for (size_t i = 0; i < ELEMENTSOF(many); i++)
                many[i] = entry;
        char *text = render(many, ELEMENTSOF(many), &c, 2048, &len, &listed);
        assert_true(listed > 0 && listed < 64);
        assert_int_equal(parse(text, len, &list, &got), 0);
        assert_true(got.truncated);
        assert_int_equal(got.sessions, 64);
        assert_int_equal(json_object_array_length(list), listed);
        json_object_put(list);
        free(text);

        /* fewer listed than counted is truncated even if the page says not */
        static const char lie[] = "{\"list\":[],\"sessions\":5,\"running_calls\":0,\"connections\":0,\"truncated\":false}";
        assert_int_equal(parse(lie, strlen(lie), &list, &got), 0);
        assert_true(got.truncated);
        json_object_put(list);
}

/* Printable non-ASCII is fine (U+00A0 is the first after C1). */
static void test_printable_utf8(void **state) {
        struct status_entry e = entry;
        struct status_counts c = { .sessions = 1 }, got;
        struct json_object *list;
        size_t len;

        e.skill = "l\xc3\xa9ger \xc2\xa0\xe2\x82\xac";
        e.artifacts_root = "/home/\xc3\xa9t\xc3\xa9";
        char *text = render(&e, 1, &c, STATUS_PAGE_TEXT_MAX, &len, NULL);
        assert_int_equal(parse(text, len, &list, &got), 0);
        assert_int_equal(json_object_array_length(list), 1);
        json_object_put(list);
        free(text);
}

/* An honest broker whose root is called anything still publishes a page
 * that parses: control characters become '?'. */
static void test_control_characters_rendered_printable(void **state) {
        struct status_entry e = entry;
        struct status_counts c = { .sessions = 1 }, got;
        struct json_object *list;
        size_t len;

        e.artifacts_root = "/home/a/x\x1b]0;PWNED\x07\r\xc2\x9b" "2K\x7f";
        e.role = "\x01";
        e.skill = "a\xff\xc3\xe2\x82" "b\xed\xa0\x80\xc3\xa9\xf0\x9f\x98\x80";   /* invalid, truncated, surrogate, then é and an emoji */
        char *text = render(&e, 1, &c, STATUS_PAGE_TEXT_MAX, &len, NULL);
        assert_int_equal(parse(text, len, &list, &got), 0);
        struct json_object *o = json_object_array_get_idx(list, 0);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "artifacts_root")),
                            "/home/a/x?]0;PWNED???2K?");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "role")), "?");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "skill")),
                            "a????b???\xc3\xa9\xf0\x9f\x98\x80");
        json_object_put(list);
        free(text);
}

/* Objects are counted before json-c builds them: a page of "{}," is
 * refused at once, whatever it would cost to parse. */
static void test_object_flood(void **state) {
        size_t n = STATUS_PAGE_TEXT_MAX - 200, len = 0;
        char *text = malloc(STATUS_PAGE_TEXT_MAX);
        struct status_counts c;
        struct json_object *list;

        assert_non_null(text);
        static const char *const floods[] = { "{},", "[],", "[[]],", "1,", "\"\"," };
        for (size_t f = 0; f < ELEMENTSOF(floods); f++) {
                size_t k = strlen(floods[f]);
                len = (size_t) sprintf(text, "{\"list\":[");
                while (len + k < n) {
                        memcpy(text + len, floods[f], k);
                        len += k;
                }
                len += (size_t) sprintf(text + len,
                                        "{}],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false}");
                assert_int_equal(parse(text, len, &list, &c), -EBADMSG);
                json_object_put(list);
        }
        /* nor does an object of many keys */
        len = (size_t) sprintf(text, "{\"list\":[{");
        for (unsigned i = 0; len + 16 < n; i++)
                len += (size_t) sprintf(text + len, "\"%x\":0,", i);
        len += (size_t) sprintf(text + len, "\"z\":0}],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false}");
        assert_int_equal(parse(text, len, &list, &c), -EBADMSG);
        json_object_put(list);

        /* braces inside strings do not count: a path full of them is fine */
        struct status_entry e = entry;
        char path[STATUS_PATH_MAX + 1];
        path[0] = '/';
        memset(path + 1, '{', STATUS_PATH_MAX - 1);
        path[STATUS_PATH_MAX] = '\0';
        e.artifacts_root = path;
        struct status_entry many[60];
        for (size_t i = 0; i < ELEMENTSOF(many); i++)
                many[i] = e;
        struct status_counts want = { .sessions = 60 };
        free(text);
        text = render(many, ELEMENTSOF(many), &want, STATUS_PAGE_TEXT_MAX, &len, NULL);
        assert_int_equal(parse(text, len, &list, &c), 0);
        assert_int_equal(json_object_array_length(list), 60);
        json_object_put(list);
        free(text);
}

static void test_too_small_buffer(void **state) {
        char buf[64];
        struct status_doc d;
        struct status_counts c = {};
        size_t len;

        status_doc_begin(&d, buf, sizeof buf);
        assert_false(status_doc_add(&d, &entry));
        assert_int_equal(status_doc_end(&d, &c, &len), -ENOBUFS);
}

static void test_refused(void **state) {
        static const char *const bad[] = {
                "",
                "null",
                "[]",
                "{}",
                "{\"list\":[],\"sessions\":0,\"running_calls\":0,\"connections\":0}",
                "{\"list\":[],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":0}",
                "{\"list\":[],\"sessions\":-1,\"running_calls\":0,\"connections\":0,\"truncated\":false}",
                "{\"list\":[],\"sessions\":4294967296,\"running_calls\":0,\"connections\":0,\"truncated\":false}",
                "{\"list\":[],\"sessions\":1.5,\"running_calls\":0,\"connections\":0,\"truncated\":false}",
                "{\"list\":{},\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false}",
                "{\"list\":[],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false,\"x\":1}",
                "{\"list\":[],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false}x",
                "{\"list\":[],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false",
                /* nested deeper than a page needs */
                "{\"list\":[[]],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false}",
                "{\"list\":[{\"session\":{}}],\"sessions\":0,\"running_calls\":0,\"connections\":0,\"truncated\":false}",
                /* a session that is not one */
                "{\"list\":[1],\"sessions\":1,\"running_calls\":0,\"connections\":0,\"truncated\":false}",
        };
        struct status_counts c;

        assert_all_refused(bad, ELEMENTSOF(bad));
        assert_int_equal(status_page_parse(NULL, 3, 0, 0, NULL, &c), -EBADMSG);
}

/* One well-formed session, then each field broken in turn. */
#define GOOD_FIELDS                                                                                                \
        "\"skill\":\"s\",\"profile\":\"p\",\"artifacts_root\":\"/r\",\"task_id\":\"t\",\"sandboxed\":true,"     \
        "\"network\":false,\"running_calls\":0,\"created_usec\":1,\"used_usec\":1"
#define DOC(entry) "{\"list\":[" entry "],\"sessions\":1,\"running_calls\":0,\"connections\":0,\"truncated\":false}"

static void test_entry_fields(void **state) {
        static const char *const bad[] = {
                DOC("{\"session\":\"0123456789ABCDEF0123456789abcdef\"," GOOD_FIELDS "}"),      /* upper case */
                DOC("{\"session\":\"0123456789abcdef\"," GOOD_FIELDS "}"),                      /* short */
                DOC("{\"session\":\"0123456789abcdef0123456789abcdeg\"," GOOD_FIELDS "}"),
                DOC("{" GOOD_FIELDS "}"),                                                       /* no id */
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"uid\":0}"),                      /* claims a uid */
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"role\":\"\"}"),                  /* empty */
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"role\":\"a\\u0000b\"}"),         /* NUL */
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"run_id\":7}"),
                DOC("{\"session\":\"" ID "\",\"skill\":\"s\",\"profile\":\"p\",\"artifacts_root\":\"r\","
                    "\"task_id\":\"t\",\"sandboxed\":true,\"network\":false,\"running_calls\":0,"
                    "\"created_usec\":1,\"used_usec\":1}"),                                      /* relative root */
                DOC("{\"session\":\"" ID "\",\"skill\":\"s\",\"profile\":\"p\",\"artifacts_root\":\"/r\","
                    "\"task_id\":\"t\",\"sandboxed\":\"yes\",\"network\":false,\"running_calls\":0,"
                    "\"created_usec\":1,\"used_usec\":1}"),
                DOC("{\"session\":\"" ID "\",\"skill\":\"s\",\"profile\":\"p\",\"artifacts_root\":\"/r\","
                    "\"task_id\":\"t\",\"sandboxed\":true,\"network\":false,\"running_calls\":-1,"
                    "\"created_usec\":1,\"used_usec\":1}"),
                "{\"list\":[{\"session\":\"" ID "\"," GOOD_FIELDS "}],\"sessions\":1,\"running_calls\":0,"
                "\"connections\":0,\"truncated\":false,\"skill\":\"\xff\"}",                    /* not UTF-8 */
                /* what would drive root's terminal: C0, DEL, C1 (raw and escaped) */
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"role\":\"x\\u001b]0;PWNED\\u0007\"}"),
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"role\":\"a\\rb\"}"),
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"run_id\":\"a\x7f\"}"),
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"run_id\":\"a\xc2\x9b" "2K\"}"),
                DOC("{\"session\":\"" ID "\"," GOOD_FIELDS ",\"run_id\":\"a\\u009b2K\"}"),
                DOC("{\"session\":\"" ID "\",\"skill\":\"s\",\"profile\":\"p\",\"artifacts_root\":\"/r\\n1002\","
                    "\"task_id\":\"t\",\"sandboxed\":true,\"network\":false,\"running_calls\":0,"
                    "\"created_usec\":1,\"used_usec\":1}"),
                /* a task id is a bare file name */
                DOC("{\"session\":\"" ID "\",\"skill\":\"s\",\"profile\":\"p\",\"artifacts_root\":\"/r\","
                    "\"task_id\":\"../t\",\"sandboxed\":true,\"network\":false,\"running_calls\":0,"
                    "\"created_usec\":1,\"used_usec\":1}"),
        };
        static const char good[] = DOC("{\"session\":\"" ID "\"," GOOD_FIELDS "}");
        struct status_counts c;
        struct json_object *list;

        assert_int_equal(parse(good, strlen(good), &list, &c), 0);
        assert_int_equal(json_object_array_length(list), 1);
        json_object_put(list);
        assert_all_refused(bad, ELEMENTSOF(bad));
}

static void test_long_strings(void **state) {
        char name[STATUS_NAME_MAX + 2], path[STATUS_PATH_MAX + 2];
        struct status_entry e = entry;
        struct status_counts c = { .sessions = 1 }, got;
        struct json_object *list;
        size_t len;

        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = '\0';
        path[0] = '/';
        memset(path + 1, 'p', sizeof path - 2);
        path[sizeof path - 1] = '\0';

        /* at the bounds: accepted */
        name[STATUS_NAME_MAX] = '\0';
        path[STATUS_PATH_MAX] = '\0';
        e.skill = name;
        e.artifacts_root = path;
        char *text = render(&e, 1, &c, STATUS_PAGE_TEXT_MAX, &len, NULL);
        assert_int_equal(parse(text, len, &list, &got), 0);
        assert_int_equal(json_object_array_length(list), 1);
        json_object_put(list);
        free(text);

        /* one past: refused */
        name[STATUS_NAME_MAX] = 'n';
        text = render(&e, 1, &c, STATUS_PAGE_TEXT_MAX, &len, NULL);
        assert_int_equal(parse(text, len, &list, &got), -EBADMSG);
        json_object_put(list);
        free(text);
        name[STATUS_NAME_MAX] = '\0';
        path[STATUS_PATH_MAX] = 'p';
        text = render(&e, 1, &c, STATUS_PAGE_TEXT_MAX, &len, NULL);
        assert_int_equal(parse(text, len, &list, &got), -EBADMSG);
        json_object_put(list);
        free(text);
}

static void test_seqlock(void **state) {
        struct status_page *p = calloc(1, STATUS_PAGE_SIZE);
        char *buf = malloc(STATUS_PAGE_TEXT_MAX);
        size_t len = 0;

        assert_non_null(p);
        assert_non_null(buf);
        assert_int_equal(status_page_snapshot(p, buf, STATUS_PAGE_TEXT_MAX, &len), -ENODATA);

        status_page_publish(p, "{\"a\":1}", 7);
        assert_int_equal(p->seq % 2, 0);
        assert_int_equal(status_page_snapshot(p, buf, STATUS_PAGE_TEXT_MAX, &len), 0);
        assert_int_equal(len, 7);
        assert_memory_equal(buf, "{\"a\":1}", 7);

        /* a buffer smaller than the text */
        assert_int_equal(status_page_snapshot(p, buf, 6, &len), -EBADMSG);

        /* a writer that never finishes (or a broker that wants to look busy) */
        p->seq |= 1;
        assert_int_equal(status_page_snapshot(p, buf, STATUS_PAGE_TEXT_MAX, &len), -EAGAIN);
        status_page_publish(p, "{}", 2);       /* a writer recovers from its own odd count */
        assert_int_equal(status_page_snapshot(p, buf, STATUS_PAGE_TEXT_MAX, &len), 0);
        assert_int_equal(len, 2);

        /* garbage the broker wrote over its header */
        p->len = STATUS_PAGE_TEXT_MAX + 1;
        assert_int_equal(status_page_snapshot(p, buf, STATUS_PAGE_TEXT_MAX, &len), -EBADMSG);
        p->len = 2;
        p->magic = 0x41414141;
        assert_int_equal(status_page_snapshot(p, buf, STATUS_PAGE_TEXT_MAX, &len), -EBADMSG);
        p->magic = STATUS_PAGE_MAGIC;

        /* an oversized publish is cut to the page */
        char *big = malloc(STATUS_PAGE_TEXT_MAX + 10);
        memset(big, 'x', STATUS_PAGE_TEXT_MAX + 10);
        status_page_publish(p, big, STATUS_PAGE_TEXT_MAX + 10);
        assert_int_equal(p->len, STATUS_PAGE_TEXT_MAX);
        free(big);
        free(buf);
        free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_truncated),
                cmocka_unit_test(test_printable_utf8),
                cmocka_unit_test(test_control_characters_rendered_printable),
                cmocka_unit_test(test_object_flood),
                cmocka_unit_test(test_too_small_buffer),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_entry_fields),
                cmocka_unit_test(test_long_strings),
                cmocka_unit_test(test_seqlock),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
