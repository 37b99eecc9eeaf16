/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for proto/varlink.c: framing, call/reply parsing (malformed
 * input first), builders, method names, UTF-8 and base64 (both ways).
 */

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "varlink.h"

#define STRLEN(s) (sizeof(s) - 1)

/* ---- framing ----------------------------------------------------------- */

static void expect_msg(struct varlink_reader *r, const char *want) {
        const char *m = NULL;
        size_t n = 0;

        assert_int_equal(varlink_reader_next(r, &m, &n), 1);
        assert_int_equal(n, strlen(want));
        assert_memory_equal(m, want, n);
}

static void expect_none(struct varlink_reader *r) {
        const char *m = NULL;
        size_t n = 0;

        assert_int_equal(varlink_reader_next(r, &m, &n), 0);
        assert_null(m);
}

static void test_reader_partial(void **state) {
        struct varlink_reader r;

        varlink_reader_init(&r, 0);
        assert_int_equal(r.max, VARLINK_MESSAGE_MAX_DEFAULT);
        expect_none(&r);
        assert_int_equal(varlink_reader_feed(&r, "{\"meth", 6), 0);
        expect_none(&r);
        assert_int_equal(varlink_reader_feed(&r, "od\":1}", 6), 0);
        expect_none(&r);
        assert_int_equal(varlink_reader_pending(&r), 12);
        assert_int_equal(varlink_reader_feed(&r, "", 0), 0);
        assert_int_equal(varlink_reader_feed(&r, "\0", 1), 0);
        expect_msg(&r, "{\"method\":1}");
        expect_none(&r);
        assert_int_equal(varlink_reader_pending(&r), 0);
        varlink_reader_done(&r);
        assert_null(r.buf);
}

static void test_reader_several(void **state) {
        struct varlink_reader r;
        const char *m;
        size_t n;

        varlink_reader_init(&r, 64);
        assert_int_equal(varlink_reader_feed(&r, "a\0bc\0\0d", 7), 0);
        expect_msg(&r, "a");
        expect_msg(&r, "bc");
        /* An empty message is still a message: the parser refuses it. */
        assert_int_equal(varlink_reader_next(&r, &m, &n), 1);
        assert_int_equal(n, 0);
        assert_int_equal(varlink_call_parse(m, n, 8, &(struct varlink_call) {}), -EBADMSG);
        expect_none(&r);
        assert_int_equal(varlink_reader_pending(&r), 1);
        assert_int_equal(varlink_reader_feed(&r, "e\0", 2), 0);
        expect_msg(&r, "de");
        expect_none(&r);
        varlink_reader_done(&r);
}

static void test_reader_exact_max(void **state) {
        struct varlink_reader r;

        /* 7 bytes and the NUL: exactly max, in one piece and byte by byte. */
        varlink_reader_init(&r, 8);
        assert_int_equal(varlink_reader_feed(&r, "1234567\0", 8), 0);
        expect_msg(&r, "1234567");
        for (const char *p = "abcdefg"; *p; p++)
                assert_int_equal(varlink_reader_feed(&r, p, 1), 0);
        expect_none(&r);
        assert_int_equal(varlink_reader_feed(&r, "\0", 1), 0);
        expect_msg(&r, "abcdefg");
        varlink_reader_done(&r);
}

static void test_reader_over_max(void **state) {
        struct varlink_reader r;
        const char *m;
        size_t n;

        varlink_reader_init(&r, 8);
        assert_int_equal(varlink_reader_feed(&r, "12345678\0", 9), -EMSGSIZE);
        assert_int_equal(varlink_reader_next(&r, &m, &n), -EMSGSIZE);
        varlink_reader_done(&r);

        varlink_reader_init(&r, 8);
        assert_int_equal(varlink_reader_feed(&r, "1234567", 7), 0);
        assert_int_equal(varlink_reader_feed(&r, "8", 1), -EMSGSIZE);
        varlink_reader_done(&r);

        /* The second message is the oversized one: found when it is reached. */
        varlink_reader_init(&r, 8);
        assert_int_equal(varlink_reader_feed(&r, "ab\0" "123456789\0", 13), 0);
        expect_msg(&r, "ab");
        assert_int_equal(varlink_reader_next(&r, &m, &n), -EMSGSIZE);
        varlink_reader_done(&r);
}

/* A peer trickling a huge message byte by byte: with a rescan per feed this
 * would take minutes; it must fail at exactly the max-th byte. */
static void test_reader_trickle(void **state) {
        const size_t max = 4u * 1024u * 1024u;
        struct varlink_reader r;

        varlink_reader_init(&r, max);
        for (size_t i = 0; i < max - 1; i++)
                if (varlink_reader_feed(&r, "x", 1) != 0)
                        fail_msg("feed %zu failed", i);
        assert_int_equal(varlink_reader_pending(&r), max - 1);
        expect_none(&r);
        assert_int_equal(varlink_reader_feed(&r, "x", 1), -EMSGSIZE);
        varlink_reader_done(&r);
}

/* Pipelined messages consumed slowly while more arrive: every message comes
 * out intact across compactions and growth. */
static void test_reader_pipelined(void **state) {
        struct varlink_reader r;
        char want[32], stream[64 * 1024];
        size_t len = 0, fed = 0, got = 0, made = 0;
        unsigned seed = 1;

        for (made = 0; len + 40 < sizeof(stream); made++)
                len += (size_t) snprintf(stream + len, sizeof(stream) - len, "message-%zu", made) + 1;

        varlink_reader_init(&r, 32);
        while (got < made) {
                seed = seed * 1103515245u + 12345u;
                size_t k = MIN((size_t) (seed >> 16) % 97, len - fed);
                assert_int_equal(varlink_reader_feed(&r, stream + fed, k), 0);
                fed += k;
                for (unsigned j = (seed >> 8) % 3; j > 0 || fed == len; j--) {
                        const char *m;
                        size_t n;
                        int q = varlink_reader_next(&r, &m, &n);

                        assert_true(q >= 0);
                        if (q == 0)
                                break;
                        snprintf(want, sizeof(want), "message-%zu", got++);
                        assert_int_equal(n, strlen(want));
                        assert_memory_equal(m, want, n);
                }
        }
        expect_none(&r);
        assert_int_equal(varlink_reader_pending(&r), 0);
        varlink_reader_done(&r);
}

/* ---- call parsing ------------------------------------------------------ */

static int call_parse_str(const char *s, unsigned depth, struct varlink_call *c) {
        return varlink_call_parse(s, strlen(s), depth, c);
}

static void expect_call(const char *s, const char *method, const char *params, bool more, bool oneway, bool upgrade) {
        struct varlink_call c = {};

        assert_int_equal(call_parse_str(s, VARLINK_DEPTH_MAX_DEFAULT, &c), 0);
        assert_string_equal(c.method, method);
        assert_non_null(c.parameters);
        assert_string_equal(json_object_to_json_string_ext(c.parameters, JSON_C_TO_STRING_PLAIN), params);
        assert_int_equal(c.more, more);
        assert_int_equal(c.oneway, oneway);
        assert_int_equal(c.upgrade, upgrade);
        varlink_call_done(&c);
        assert_null(c.method);
        assert_null(c.parameters);
}

static void test_call_valid(void **state) {
        expect_call("{\"method\":\"io.toolsd.Call\"}", "io.toolsd.Call", "{}", false, false, false);
        expect_call("{\"method\":\"io.toolsd.Call\",\"parameters\":null}", "io.toolsd.Call", "{}", false, false, false);
        expect_call("{\"method\":\"io.toolsd.Call\",\"parameters\":{}}", "io.toolsd.Call", "{}", false, false, false);
        expect_call("{\"parameters\":{\"a\":[1,-2,1.5,\"\\u00e9\\ud83d\\ude00\",true,null]},\"method\":\"io.toolsd.Call\"}",
                    "io.toolsd.Call", "{\"a\":[1,-2,1.5,\"\xc3\xa9\xf0\x9f\x98\x80\",true,null]}", false, false, false);
        expect_call("{\"method\":\"io.toolsd.Call\",\"more\":true}", "io.toolsd.Call", "{}", true, false, false);
        expect_call("{\"method\":\"io.toolsd.Call\",\"oneway\":true,\"more\":false}", "io.toolsd.Call", "{}", false, true, false);
        expect_call("{\"method\":\"io.toolsd.Call\",\"upgrade\":true}", "io.toolsd.Call", "{}", false, false, true);
        expect_call(" \t\r\n{ \"method\" : \"org.varlink.service.GetInfo\" }\n ", "org.varlink.service.GetInfo", "{}", false, false, false);
        /* int64 and uint64 limits are stored exactly. */
        expect_call("{\"method\":\"a.b.C\",\"parameters\":{\"a\":-9223372036854775808,\"b\":18446744073709551615,\"c\":1e308,\"d\":-0.0e-400}}",
                    "a.b.C", "{\"a\":-9223372036854775808,\"b\":18446744073709551615,\"c\":1e308,\"d\":-0.0e-400}", false, false, false);
        /* A key that merely looks like a duplicate after escaping is one. */
        expect_call("{\"method\":\"a.b.C\",\"parameters\":{\"a\":1,\"\\u0061b\":2}}", "a.b.C", "{\"a\":1,\"ab\":2}", false, false, false);
}

static const char *const bad_calls[] = {
        "",
        " ",
        "null",
        "[]",
        "[{\"method\":\"a.b.C\"}]",
        "\"a.b.C\"",
        "42",
        "{}",
        "{\"method\":\"a.b.C\"",                              /* truncated */
        "{\"method\":\"a.b.C\"}x",                            /* trailing garbage */
        "{\"method\":\"a.b.C\"}{}",
        "{\"method\":\"a.b.C\"} \f",
        "{\"method\":\"a.b.C\",}",
        "{'method':'a.b.C'}",
        "{\"method\":'a.b.C'}",
        "{method:\"a.b.C\"}",
        "{\"method\":\"a.b.C\"/**/}",
        "{\"method\":\"a.b.C\",\"bogus\":1}",                 /* unknown key */
        "{\"method\":\"a.b.C\",\"Method\":\"a.b.C\"}",
        "{\"method\":\"a.b.C\",\"method\":\"a.b.D\"}",        /* duplicates */
        "{\"method\":\"a.b.C\",\"\\u006dethod\":\"a.b.D\"}",
        "{\"method\":\"a.b.C\",\"method\\u0000x\":\"a.b.D\"}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":1,\"x\":1}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":[{\"y\":1,\"y\":2}]}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\\u0000\":1}}", /* NUL escapes */
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"a\\u0000b\"}}",
        "{\"method\":\"a.b.C\\u0000.D\"}",
        "{\"method\":1}",                                     /* wrong types */
        "{\"method\":null}",
        "{\"method\":[\"a.b.C\"]}",
        "{\"method\":\"a.b.C\",\"parameters\":[]}",
        "{\"method\":\"a.b.C\",\"parameters\":\"\"}",
        "{\"method\":\"a.b.C\",\"parameters\":0}",
        "{\"method\":\"a.b.C\",\"more\":1}",
        "{\"method\":\"a.b.C\",\"more\":null}",
        "{\"method\":\"a.b.C\",\"oneway\":\"true\"}",
        "{\"method\":\"a.b.C\",\"upgrade\":{}}",
        "{\"method\":\"a.b.C\",\"more\":true,\"oneway\":true}", /* contradictory */
        "{\"method\":\"a.b.C\",\"more\":true,\"upgrade\":true}",
        "{\"method\":\"a.b.C\",\"oneway\":true,\"upgrade\":true}",
        "{\"parameters\":{}}",                                /* bad names */
        "{\"method\":\"\"}",
        "{\"method\":\"Call\"}",
        "{\"method\":\"toolsd.Call\"}",
        "{\"method\":\"io.toolsd.call\"}",
        "{\"method\":\"io.toolsd.\"}",
        "{\"method\":\"io.Toolsd.Call\"}",
        "{\"method\":\"io..toolsd.Call\"}",
        "{\"method\":\"io.toolsd-.Call\"}",
        "{\"method\":\"io.toolsd.Ca_ll\"}",
        "{\"method\":\"io.toolsd.Call \"}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":NaN}}",   /* json-c leniencies */
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":Infinity}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":-Infinity}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":1e999}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":-1e999}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":1.}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":01}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":+1}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":.5}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":1e}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":18446744073709551616}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":-9223372036854775809}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":99999999999999999999999999}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\t\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\\ud800\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\\udc00\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\\ud800\\u0041\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\\ud800x\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\\x41\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\xc0\x80\"}}", /* invalid UTF-8 */
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\xed\xa0\x80\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\xf4\x90\x80\x80\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"x\":\"\xe2\x82\"}}",
        "{\"method\":\"a.b.C\",\"parameters\":{\"\xff\":1}}",
        "\xef\xbb\xbf{\"method\":\"a.b.C\"}",
};

static void test_call_malformed(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(bad_calls); i++) {
                struct varlink_call c = { .method = (char *) "untouched" };
                int r = call_parse_str(bad_calls[i], VARLINK_DEPTH_MAX_DEFAULT, &c);

                if (r != -EBADMSG)
                        fail_msg("accepted or wrong error %d: %s", r, bad_calls[i]);
                assert_string_equal(c.method, "untouched");
        }
}

static void test_call_embedded_nul(void **state) {
        static const char m[] = "{\"method\":\"a.b.C\"}\0{\"x\":1}";
        static const char m2[] = "{\"method\":\"a.b.C\0.D\"}";
        struct varlink_call c;

        assert_int_equal(varlink_call_parse(m, STRLEN(m), 8, &c), -EBADMSG);
        assert_int_equal(varlink_call_parse(m2, STRLEN(m2), 8, &c), -EBADMSG);
        /* The same bytes without the NUL part are fine. */
        assert_int_equal(varlink_call_parse(m, strlen(m), 8, &c), 0);
        varlink_call_done(&c);
}

/* Every proper prefix of a valid call is refused. */
static void test_call_truncated(void **state) {
        static const char m[] = "{\"method\":\"io.toolsd.Call\",\"parameters\":{\"a\":[1,\"x\",{\"b\":null}]},\"more\":true}";
        struct varlink_call c;

        for (size_t n = 0; n < STRLEN(m); n++)
                if (varlink_call_parse(m, n, 8, &c) != -EBADMSG)
                        fail_msg("prefix of %zu bytes accepted", n);
        assert_int_equal(varlink_call_parse(m, STRLEN(m), 8, &c), 0);
        varlink_call_done(&c);
}

/* A call whose parameters nest so that the whole message has the given
 * depth (the message object counts as 1), alternating objects and arrays. */
static char *nested_call(unsigned depth) {
        size_t cap = 64 + 8 * (size_t) depth, n;
        char *s = malloc(cap);

        assert_non_null(s);
        n = (size_t) snprintf(s, cap, "{\"method\":\"a.b.C\",\"parameters\":");
        for (unsigned d = 2; d <= depth; d++)
                n += (size_t) snprintf(s + n, cap - n, "%s", d % 2 ? "[" : "{\"k\":");
        n += (size_t) snprintf(s + n, cap - n, "1");
        for (unsigned d = depth; d >= 2; d--)
                n += (size_t) snprintf(s + n, cap - n, "%s", d % 2 ? "]" : "}");
        snprintf(s + n, cap - n, "}");
        return s;
}

static void test_call_depth(void **state) {
        struct varlink_call c;

        for (unsigned max = 2; max <= 70; max += 17) {
                _cleanup_free_ char *ok = nested_call(max);
                _cleanup_free_ char *deep = nested_call(max + 1);

                assert_int_equal(call_parse_str(ok, max, &c), 0);
                varlink_call_done(&c);
                assert_int_equal(call_parse_str(deep, max, &c), -EBADMSG);
        }
        assert_int_equal(call_parse_str("{\"method\":\"a.b.C\"}", 1, &c), 0);
        varlink_call_done(&c);
        assert_int_equal(call_parse_str("{\"method\":\"a.b.C\",\"parameters\":{}}", 1, &c), -EBADMSG);
        assert_int_equal(call_parse_str("{\"method\":\"a.b.C\"}", 0, &c), -EBADMSG);

        /* Deep nesting far beyond the limit is refused without recursion. */
        _cleanup_free_ char *huge = nested_call(100000);
        assert_int_equal(call_parse_str(huge, VARLINK_DEPTH_MAX_DEFAULT, &c), -EBADMSG);
}

/* ---- reply parsing ----------------------------------------------------- */

static void test_reply_parse(void **state) {
        static const char *const bad[] = {
                "[]",
                "{\"parameters\":{}",
                "{\"parameters\":{},\"method\":\"a.b.C\"}",
                "{\"parameters\":[]}",
                "{\"error\":1}",
                "{\"error\":\"NoSuchSession\"}",
                "{\"error\":\"io.toolsd.NoSuchSession\",\"continues\":true}",
                "{\"continues\":\"yes\"}",
                "{\"continues\":true,\"continues\":false}",
                "{\"bogus\":null}",
        };
        struct varlink_reply r;
        const char *s;

        s = "{\"parameters\":{\"a\":\"b\"},\"continues\":true}";
        assert_int_equal(varlink_reply_parse(s, strlen(s), 8, &r), 0);
        assert_null(r.error);
        assert_true(r.continues);
        assert_string_equal(json_object_to_json_string_ext(r.parameters, JSON_C_TO_STRING_PLAIN), "{\"a\":\"b\"}");
        varlink_reply_done(&r);

        s = "{}";
        assert_int_equal(varlink_reply_parse(s, strlen(s), 8, &r), 0);
        assert_null(r.error);
        assert_false(r.continues);
        assert_int_equal(json_object_object_length(r.parameters), 0);
        varlink_reply_done(&r);

        s = "{\"error\":\"io.toolsd.NoSuchSession\",\"parameters\":null,\"continues\":false}";
        assert_int_equal(varlink_reply_parse(s, strlen(s), 8, &r), 0);
        assert_string_equal(r.error, "io.toolsd.NoSuchSession");
        assert_false(r.continues);
        assert_int_equal(json_object_object_length(r.parameters), 0);
        varlink_reply_done(&r);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (varlink_reply_parse(bad[i], strlen(bad[i]), 8, &r) != -EBADMSG)
                        fail_msg("accepted: %s", bad[i]);
}

/* ---- builders ---------------------------------------------------------- */

/* Takes the addresses: the call that fills them is evaluated in the same
 * argument list. */
static void expect_built(int r, char **buf, size_t *len, const char *want) {
        assert_int_equal(r, 0);
        assert_int_equal(*len, strlen(want) + 1);
        assert_memory_equal(*buf, want, *len);
        free(*buf);
}

static void test_builders(void **state) {
        _cleanup_json_ struct json_object *p = NULL;
        char *buf;
        size_t len;

        p = json_tokener_parse("{\"path\":\"a/b\",\"n\":-3,\"f\":0.5,\"s\":\"\xc3\xa9\\n\\\"\",\"l\":[true,null]}");
        assert_non_null(p);

        expect_built(varlink_call_build("io.toolsd.Call", NULL, false, false, &buf, &len), &buf, &len,
                     "{\"method\":\"io.toolsd.Call\",\"parameters\":{}}");
        expect_built(varlink_call_build("io.toolsd.Call", p, true, false, &buf, &len), &buf, &len,
                     "{\"method\":\"io.toolsd.Call\",\"parameters\":{\"path\":\"a/b\",\"n\":-3,\"f\":0.5,"
                     "\"s\":\"\xc3\xa9\\n\\\"\",\"l\":[true,null]},\"more\":true}");
        expect_built(varlink_call_build("io.toolsd.Cancel", NULL, false, true, &buf, &len), &buf, &len,
                     "{\"method\":\"io.toolsd.Cancel\",\"parameters\":{},\"oneway\":true}");
        expect_built(varlink_reply_build(NULL, false, &buf, &len), &buf, &len, "{\"parameters\":{}}");
        expect_built(varlink_reply_build(p, true, &buf, &len), &buf, &len,
                     "{\"parameters\":{\"path\":\"a/b\",\"n\":-3,\"f\":0.5,\"s\":\"\xc3\xa9\\n\\\"\",\"l\":[true,null]},"
                     "\"continues\":true}");
        expect_built(varlink_error_build("io.toolsd.NoSuchSession", NULL, &buf, &len), &buf, &len,
                     "{\"error\":\"io.toolsd.NoSuchSession\",\"parameters\":{}}");

        /* The caller keeps its reference. */
        assert_int_equal(json_object_get_type(p), json_type_object);

        assert_int_equal(varlink_call_build("io.toolsd.call", NULL, false, false, &buf, &len), -EINVAL);
        assert_int_equal(varlink_call_build(NULL, NULL, false, false, &buf, &len), -EINVAL);
        assert_int_equal(varlink_call_build("io.toolsd.Call", NULL, true, true, &buf, &len), -EINVAL);
        assert_int_equal(varlink_error_build("NoSuchSession", NULL, &buf, &len), -EINVAL);
        assert_int_equal(varlink_error_build(NULL, NULL, &buf, &len), -EINVAL);
}

static void expect_build_refused(struct json_object *p) {
        char *buf = NULL;
        size_t len;

        assert_int_equal(varlink_reply_build(p, false, &buf, &len), -EINVAL);
        assert_int_equal(varlink_error_build("a.b.C", p, &buf, &len), -EINVAL);
        assert_int_equal(varlink_call_build("a.b.C", p, false, false, &buf, &len), -EINVAL);
        assert_null(buf);
        json_object_put(p);
}

static void test_builders_refuse(void **state) {
        struct json_object *p;

        expect_build_refused(json_object_new_array());
        expect_build_refused(json_object_new_string("x"));

        p = json_object_new_object();
        json_object_object_add(p, "s", json_object_new_string("\xc0\x80"));
        expect_build_refused(p);

        p = json_object_new_object();
        json_object_object_add(p, "s", json_object_new_string_len("a\0b", 3));
        expect_build_refused(p);

        p = json_object_new_object();
        json_object_object_add(p, "\xff", json_object_new_int(1));
        expect_build_refused(p);

        p = json_object_new_object();
        json_object_object_add(p, "d", json_object_new_double(NAN));
        expect_build_refused(p);

        p = json_object_new_object();
        json_object_object_add(p, "d", json_object_new_double(-INFINITY));
        expect_build_refused(p);

        /* 64 levels in all: message, parameters, 62 more. */
        struct json_object *inner = json_object_new_int(1);
        for (unsigned d = 0; d < VARLINK_DEPTH_MAX_DEFAULT - 2; d++) {
                struct json_object *a = json_object_new_array();
                json_object_array_add(a, inner);
                inner = a;
        }
        p = json_object_new_object();
        json_object_object_add(p, "x", inner);
        char *buf;
        size_t len;
        struct varlink_reply r;
        assert_int_equal(varlink_reply_build(p, false, &buf, &len), 0);
        assert_int_equal(varlink_reply_parse(buf, len - 1, VARLINK_DEPTH_MAX_DEFAULT, &r), 0);
        varlink_reply_done(&r);
        free(buf);
        inner = json_object_new_array();
        json_object_array_add(inner, json_object_get(json_object_object_get(p, "x")));
        json_object_object_add(p, "x", inner);
        expect_build_refused(p);

        /* Too large for a peer to accept. */
        size_t big = VARLINK_MESSAGE_MAX_DEFAULT;
        char *s = malloc(big);
        assert_non_null(s);
        memset(s, 'a', big);
        p = json_object_new_object();
        json_object_object_add(p, "s", json_object_new_string_len(s, (int) big - 20));
        free(s);
        assert_int_equal(varlink_reply_build(p, false, &buf, &len), -EMSGSIZE);
        json_object_put(p);
}

/* What the builders make, the parsers read back unchanged. */
static void test_round_trip(void **state) {
        _cleanup_json_ struct json_object *p = NULL;
        struct varlink_call c;
        struct varlink_reply r;
        char *buf;
        size_t len;

        p = json_tokener_parse("{\"a\":[1,2.5,\"\xf0\x9f\x98\x80/\\\\\",{\"b\":{}}],\"c\":-9223372036854775808}");
        assert_non_null(p);

        assert_int_equal(varlink_call_build("io.toolsd.Call", p, true, false, &buf, &len), 0);
        assert_int_equal(buf[len - 1], 0);
        assert_int_equal(varlink_call_parse(buf, len - 1, VARLINK_DEPTH_MAX_DEFAULT, &c), 0);
        assert_string_equal(c.method, "io.toolsd.Call");
        assert_true(c.more);
        assert_false(c.oneway);
        assert_true(json_object_equal(c.parameters, p));
        varlink_call_done(&c);
        free(buf);

        assert_int_equal(varlink_error_build("io.toolsd.NoSuchSession", p, &buf, &len), 0);
        assert_int_equal(varlink_reply_parse(buf, len - 1, VARLINK_DEPTH_MAX_DEFAULT, &r), 0);
        assert_string_equal(r.error, "io.toolsd.NoSuchSession");
        assert_true(json_object_equal(r.parameters, p));
        varlink_reply_done(&r);
        free(buf);

        assert_int_equal(varlink_reply_build(p, true, &buf, &len), 0);
        assert_int_equal(varlink_reply_parse(buf, len - 1, VARLINK_DEPTH_MAX_DEFAULT, &r), 0);
        assert_null(r.error);
        assert_true(r.continues);
        assert_true(json_object_equal(r.parameters, p));
        varlink_reply_done(&r);
        free(buf);
}

/* ---- names ------------------------------------------------------------- */

static void test_method_names(void **state) {
        static const char *const good[] = {
                "io.toolsd.Call", "org.varlink.service.GetInfo", "a.b.C", "a-b.c.D",
                "a--b.c.D", "io.0.X", "io.toolsd.C0ll", "x1.y2.ZzZ9",
        };
        static const char *const bad[] = {
                "", ".", "Call", "io.Call", "io.toolsd", "io.toolsd.", "io.toolsd.call",
                "1o.toolsd.Call", "-io.toolsd.Call", "io-.toolsd.Call", "io.-toolsd.Call",
                "io..toolsd.Call", ".io.toolsd.Call", "Io.toolsd.Call", "io.tOolsd.Call",
                "io.toolsd.Ca-ll", "io.toolsd.Ca_ll", "io.toolsd.Ca.ll", "io.toolsd.Call.",
                "io.tool sd.Call", "io.toolsd.\xc3\x84", "io_x.toolsd.Call",
        };
        char *iface;
        const char *member;

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!varlink_method_name_valid(good[i]))
                        fail_msg("refused: %s", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (varlink_method_name_valid(bad[i]))
                        fail_msg("accepted: %s", bad[i]);
        assert_false(varlink_method_name_valid(NULL));

        assert_int_equal(varlink_method_split("org.varlink.service.GetInfo", &iface, &member), 0);
        assert_string_equal(iface, "org.varlink.service");
        assert_string_equal(member, "GetInfo");
        free(iface);
        assert_int_equal(varlink_method_split("io.toolsd.Call", NULL, &member), 0);
        assert_string_equal(member, "Call");
        assert_int_equal(varlink_method_split("io.toolsd.Call", NULL, NULL), 0);
        iface = (char *) "untouched";
        assert_int_equal(varlink_method_split("io.toolsd", &iface, &member), -EINVAL);
        assert_string_equal(iface, "untouched");
}

/* ---- UTF-8 and base64 -------------------------------------------------- */

static void test_utf8_valid(void **state) {
        static const char *const good[] = {
                "", "plain ascii, long enough for the 8-byte path", "\x7f", "\xc2\x80", "\xdf\xbf",
                "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
                "\xf4\x8f\xbf\xbf", "caf\xc3\xa9 \xf0\x9f\x98\x80 12345678",
        };
        static const char *const bad[] = {
                "\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf",   /* overlongs */
                "\xf0\x8f\xbf\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",                       /* surrogates */
                "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xff", /* > U+10FFFF */
                "\xc2", "\xe0\xa0", "\xf0\x90\x80", "abcdefgh\xf0\x90\x80", "\xc2\x41",   /* truncated */
                "12345678\xfe-12345678",
        };

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!utf8_valid(good[i], strlen(good[i])))
                        fail_msg("refused #%zu", i);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (utf8_valid(bad[i], strlen(bad[i])))
                        fail_msg("accepted #%zu", i);
        /* NUL is U+0000, valid UTF-8 (utf8_sanitize replaces it anyway). */
        assert_true(utf8_valid("a\0b", 3));
        assert_true(utf8_valid(NULL, 0));
}

static void expect_sanitized(const char *in, size_t n, const char *want) {
        _cleanup_free_ char *out = NULL;

        assert_int_equal(utf8_sanitize(in, n, &out), 0);
        assert_string_equal(out, want);
        assert_true(utf8_valid(out, strlen(out)));
}

#define FFFD "\xef\xbf\xbd"

static void test_utf8_sanitize(void **state) {
        expect_sanitized("", 0, "");
        expect_sanitized(NULL, 0, "");
        expect_sanitized("hello", 5, "hello");
        expect_sanitized("caf\xc3\xa9", 5, "caf\xc3\xa9");
        expect_sanitized("a\0b", 3, "a" FFFD "b");
        expect_sanitized("\0\0", 2, FFFD FFFD);
        expect_sanitized("\xc0\x80", 2, FFFD FFFD);
        expect_sanitized("\xed\xa0\x80", 3, FFFD FFFD FFFD);
        expect_sanitized("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);
        /* A truncated sequence is one replacement and the next byte survives. */
        expect_sanitized("\xe2\x82" "A", 3, FFFD "A");
        expect_sanitized("\xf0\x9f\x98" "\xf0\x9f\x98\x80", 7, FFFD "\xf0\x9f\x98\x80");
        expect_sanitized("x\xf0\x9f\x98", 4, "x" FFFD);
        expect_sanitized("\xff\xfe", 2, FFFD FFFD);
        expect_sanitized("abcdefgh\x80" "ijklmnopq", 18, "abcdefgh" FFFD "ijklmnopq");
        expect_sanitized("\xe0\x80\xaf", 3, FFFD FFFD FFFD);
        expect_sanitized("\xe0\xa0\xc0", 3, FFFD FFFD);

        /* Every single byte and pair: always valid output, never longer
         * than three bytes per input byte. */
        for (unsigned a = 0; a < 256; a++)
                for (unsigned b = 0; b < 256; b += 7) {
                        char in[2] = { (char) a, (char) b };
                        _cleanup_free_ char *out = NULL;

                        assert_int_equal(utf8_sanitize(in, 2, &out), 0);
                        assert_true(utf8_valid(out, strlen(out)));
                        assert_true(strlen(out) <= 6);
                }
}

static void expect_base64(const char *in, const char *want) {
        _cleanup_free_ char *out = NULL;

        assert_int_equal(base64_encode(in, strlen(in), &out), 0);
        assert_string_equal(out, want);
}

static void test_base64(void **state) {
        _cleanup_free_ char *out = NULL;

        /* RFC 4648 section 10. */
        expect_base64("", "");
        expect_base64("f", "Zg==");
        expect_base64("fo", "Zm8=");
        expect_base64("foo", "Zm9v");
        expect_base64("foob", "Zm9vYg==");
        expect_base64("fooba", "Zm9vYmE=");
        expect_base64("foobar", "Zm9vYmFy");

        assert_int_equal(base64_encode("\0\xff\xfe\x3e\x3f", 5, &out), 0);
        assert_string_equal(out, "AP/+Pj8=");
}

static void expect_decoded(const char *in, size_t n, const void *want, size_t want_len) {
        _cleanup_free_ void *out = NULL;
        size_t len = SIZE_MAX;

        assert_int_equal(base64_decode(in, n, &out, &len), 0);
        assert_int_equal(len, want_len);
        assert_non_null(out);
        assert_memory_equal(out, want, len);
        assert_int_equal(((char *) out)[len], 0);
}

static void expect_undecodable(const char *in, size_t n, int want) {
        void *out = NULL;
        size_t len = SIZE_MAX;

        assert_int_equal(base64_decode(in, n, &out, &len), want);
        assert_null(out);
        assert_int_equal(len, SIZE_MAX);
}

static void test_base64_decode(void **state) {
        expect_decoded("", 0, "", 0);
        expect_decoded("Zg==", 4, "f", 1);
        expect_decoded("Zm8=", 4, "fo", 2);
        expect_decoded("Zm9v", 4, "foo", 3);
        expect_decoded("Zm9vYg==", 8, "foob", 4);
        expect_decoded("Zm9vYmE=", 8, "fooba", 5);
        expect_decoded("Zm9vYmFy", 8, "foobar", 6);
        expect_decoded("AP/+Pj8=", 8, "\0\xff\xfe\x3e\x3f", 5);
        expect_decoded("+/+/", 4, "\xfb\xff\xbf", 3);
        /* Empty, with no buffer at all: still a NUL-terminated result. */
        expect_decoded(NULL, 0, "", 0);

        /* Truncated or unpadded: not a multiple of 4. */
        expect_undecodable("Z", 1, -EINVAL);
        expect_undecodable("Zg", 2, -EINVAL);
        expect_undecodable("Zg=", 3, -EINVAL);
        expect_undecodable("Zm9vY", 5, -EINVAL);
        expect_undecodable("Zm9v\n", 5, -EINVAL);
        expect_undecodable("Zm9v\r\n", 6, -EINVAL);

        /* Characters outside the alphabet, whitespace among them. */
        expect_undecodable("Zm9 ", 4, -EILSEQ);
        expect_undecodable(" Zm9", 4, -EILSEQ);
        expect_undecodable("Zm\t9", 4, -EILSEQ);
        expect_undecodable("Zm9v\nZm9", 8, -EILSEQ);
        expect_undecodable("Zm-_", 4, -EILSEQ);        /* URL alphabet */
        expect_undecodable("Zm9\x80", 4, -EILSEQ);
        expect_undecodable("Zm9\xff", 4, -EILSEQ);
        expect_undecodable("Zm\09", 4, -EILSEQ);       /* a NUL inside n */
        expect_undecodable("Zg.=", 4, -EILSEQ);

        /* Misplaced padding. */
        expect_undecodable("====", 4, -EILSEQ);
        expect_undecodable("Z===", 4, -EILSEQ);
        expect_undecodable("=Zg=", 4, -EILSEQ);
        expect_undecodable("Zg=A", 4, -EILSEQ);
        expect_undecodable("Z=g=", 4, -EILSEQ);
        expect_undecodable("Zg==Zg==", 8, -EILSEQ);     /* padding only ends the text */
        expect_undecodable("Zm8=Zm9v", 8, -EILSEQ);

        /* Non-zero bits under the padding: "Zh==" would also be "f". */
        expect_undecodable("Zh==", 4, -EBADMSG);
        expect_undecodable("Zm9=", 4, -EBADMSG);
        expect_undecodable("Zm9vZm9vZ/==", 12, -EBADMSG);

        /* n bounds the read: what follows is never looked at. */
        expect_decoded("Zm9v!!!!", 4, "foo", 3);

        /* Every byte string up to 3 bytes (a sample of them) survives the
         * round trip, and the output never exceeds n / 4 * 3. */
        for (unsigned a = 0; a < 256; a += 3)
                for (unsigned b = 0; b < 256; b += 5)
                        for (size_t len = 0; len <= 3; len++) {
                                uint8_t in[3] = { (uint8_t) a, (uint8_t) b, (uint8_t) (a ^ b) };
                                _cleanup_free_ char *text = NULL;
                                _cleanup_free_ void *back = NULL;
                                size_t n;

                                assert_int_equal(base64_encode(in, len, &text), 0);
                                assert_int_equal(base64_decode(text, strlen(text), &back, &n), 0);
                                assert_int_equal(n, len);
                                assert_true(n <= strlen(text) / 4 * 3);
                                if (len > 0)
                                        assert_memory_equal(back, in, len);
                        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reader_partial),
                cmocka_unit_test(test_reader_several),
                cmocka_unit_test(test_reader_exact_max),
                cmocka_unit_test(test_reader_over_max),
                cmocka_unit_test(test_reader_trickle),
                cmocka_unit_test(test_reader_pipelined),
                cmocka_unit_test(test_call_valid),
                cmocka_unit_test(test_call_malformed),
                cmocka_unit_test(test_call_embedded_nul),
                cmocka_unit_test(test_call_truncated),
                cmocka_unit_test(test_call_depth),
                cmocka_unit_test(test_reply_parse),
                cmocka_unit_test(test_builders),
                cmocka_unit_test(test_builders_refuse),
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_method_names),
                cmocka_unit_test(test_utf8_valid),
                cmocka_unit_test(test_utf8_sanitize),
                cmocka_unit_test(test_base64),
                cmocka_unit_test(test_base64_decode),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
