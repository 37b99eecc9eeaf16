/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the JSON Schema subset validator (daemon/schema.c): every
 * keyword's accept and refuse paths, the field named in each refusal, null,
 * the model's keys made printable, and schemas outside the subset.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "schema.h"

static const char *const write_schema =
        "{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\",\"maxLength\":8,\"description\":\"p\"},"
        "\"content\":{\"type\":\"string\",\"minLength\":1},"
        "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
        "\"call_id\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{32}$\"},"
        "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":100},"
        "\"ratio\":{\"type\":\"number\",\"minimum\":0},"
        "\"flag\":{\"type\":\"boolean\"},"
        "\"argv\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":3,\"items\":{\"type\":\"string\"}},"
        "\"sub\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},"
        "\"required\":[\"n\"],\"additionalProperties\":false}},"
        "\"required\":[\"path\"],\"additionalProperties\":false}";

/* Validates args (JSON text) against schema (JSON text); returns r and
 * copies the error. */
static int run(const char *schema, const char *args, struct schema_error *err) {
        struct json_object *s = json_tokener_parse(schema);
        struct json_object *a = strcmp(args, "null") == 0 ? NULL : json_tokener_parse(args);
        assert_non_null(s);
        assert_true(a || strcmp(args, "null") == 0);
        int r = schema_validate(s, a, err);
        json_object_put(s);
        json_object_put(a);
        return r;
}

static void expect_ok(const char *args) {
        struct schema_error err;
        int r = run(write_schema, args, &err);
        if (r != 0)
                fail_msg("%s: %d %s: %s", args, r, err.field, err.reason);
}

static void expect_refused(const char *args, const char *field, const char *reason) {
        struct schema_error err;
        assert_int_equal(run(write_schema, args, &err), -EINVAL);
        assert_string_equal(err.field, field);
        assert_string_equal(err.reason, reason);
}

static void test_accepts(void **state) {
        expect_ok("{\"path\":\"a\"}");
        expect_ok("{\"path\":\"12345678\",\"content\":\"x\",\"encoding\":\"base64\"}");
        expect_ok("{\"path\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"}"); /* 8 chars, 16 bytes */
        expect_ok("{\"path\":\"a\",\"call_id\":\"0123456789abcdef0123456789abcdef\"}");
        expect_ok("{\"path\":\"a\",\"offset\":0}");
        expect_ok("{\"path\":\"a\",\"offset\":100,\"ratio\":0.5,\"flag\":false}");
        expect_ok("{\"path\":\"a\",\"argv\":[\"x\",\"y\",\"z\"]}");
        expect_ok("{\"path\":\"a\",\"sub\":{\"n\":3}}");
}

static void test_unknown_field(void **state) {
        expect_refused("{\"path\":\"a\",\"mode\":1}", "mode",
                       "is not a known field (allowed: path, content, encoding, call_id, offset, ratio, flag, argv, "
                       "sub)");
        expect_refused("{\"path\":\"a\",\"sub\":{\"n\":1,\"m\":2}}", "sub.m", "is not a known field (allowed: n)");
        /* The model's key is cut and made printable. */
        expect_refused("{\"path\":\"a\",\"x\\u0001\\u00e9y\":1}", "x???y", "is not a known field (allowed: path, "
                       "content, encoding, call_id, offset, ratio, flag, argv, sub)");
        char args[512], field[128];
        memset(field, 'k', 64);
        field[64] = '\0';
        (void) snprintf(args, sizeof args, "{\"%s%s\":1}", field, "tail-that-is-cut");
        struct schema_error err;
        assert_int_equal(run(write_schema, args, &err), -EINVAL);
        assert_string_equal(err.field, field);
}

static void test_required(void **state) {
        expect_refused("{}", "path", "is required");
        expect_refused("{\"path\":\"a\",\"sub\":{}}", "sub.n", "is required");
}

static void test_types(void **state) {
        expect_refused("[]", "", "must be an object");
        expect_refused("\"x\"", "", "must be an object");
        expect_refused("null", "", "must not be null");
        expect_refused("{\"path\":1}", "path", "must be a string");
        expect_refused("{\"path\":null}", "path", "must not be null");
        expect_refused("{\"path\":\"a\",\"offset\":1.5}", "offset", "must be an integer");
        expect_refused("{\"path\":\"a\",\"offset\":\"1\"}", "offset", "must be an integer");
        expect_refused("{\"path\":\"a\",\"offset\":true}", "offset", "must be an integer");
        expect_refused("{\"path\":\"a\",\"ratio\":\"1\"}", "ratio", "must be a number");
        expect_refused("{\"path\":\"a\",\"flag\":0}", "flag", "must be true or false");
        expect_refused("{\"path\":\"a\",\"argv\":\"ls\"}", "argv", "must be a list");
        expect_refused("{\"path\":\"a\",\"argv\":[\"x\",2]}", "argv[1]", "must be a string");
        expect_refused("{\"path\":\"a\",\"argv\":[null]}", "argv[0]", "must not be null");
        expect_refused("{\"path\":\"a\",\"sub\":[]}", "sub", "must be an object");
}

static void test_bounds(void **state) {
        expect_refused("{\"path\":\"123456789\"}", "path", "must be at most 8 characters");
        expect_refused("{\"path\":\"a\",\"content\":\"\"}", "content", "must be at least 1 characters");
        expect_refused("{\"path\":\"a\",\"offset\":-1}", "offset", "must be at least 0");
        expect_refused("{\"path\":\"a\",\"offset\":101}", "offset", "must be at most 100");
        expect_refused("{\"path\":\"a\",\"offset\":18446744073709551615}", "offset", "must be at most 100");
        expect_refused("{\"path\":\"a\",\"offset\":-9223372036854775808}", "offset", "must be at least 0");
        expect_refused("{\"path\":\"a\",\"ratio\":-0.5}", "ratio", "must be at least 0");
        expect_refused("{\"path\":\"a\",\"argv\":[]}", "argv", "must have at least 1 items");
        expect_refused("{\"path\":\"a\",\"argv\":[\"a\",\"b\",\"c\",\"d\"]}", "argv", "must have at most 3 items");
}

static void test_enum_pattern(void **state) {
        expect_refused("{\"path\":\"a\",\"encoding\":\"latin1\"}", "encoding", "must be one of: utf-8, base64");
        expect_refused("{\"path\":\"a\",\"encoding\":\"utf-8\\u0000\"}", "encoding", "must be one of: utf-8, base64");
        expect_refused("{\"path\":\"a\",\"call_id\":\"0123456789ABCDEF0123456789abcdef\"}", "call_id",
                       "must be 32 lower-case hex digits");
        expect_refused("{\"path\":\"a\",\"call_id\":\"0123456789abcdef0123456789abcde\"}", "call_id",
                       "must be 32 lower-case hex digits");
        expect_refused("{\"path\":\"a\",\"call_id\":\"../../etc/passwd\"}", "call_id",
                       "must be 32 lower-case hex digits");

        struct schema_error err;
        assert_int_equal(run("{\"enum\":[1,2]}", "2", &err), 0);
        assert_int_equal(run("{\"enum\":[1,2]}", "3", &err), -EINVAL);
        assert_string_equal(err.reason, "must be one of: 1, 2");
}

static void test_bad_schema(void **state) {
        static const struct {
                const char *schema, *field;
        } bad[] = {
                { "{\"type\":\"object\",\"oneOf\":[]}", "oneOf" },
                { "{\"type\":\"thing\"}", "type" },
                { "{\"type\":[\"string\"]}", "type" },
                { "{\"type\":\"string\",\"pattern\":\"^a+$\"}", "pattern" },
                { "{\"maxLength\":\"8\"}", "maxLength" },
                { "{\"enum\":[]}", "enum" },
                { "{\"enum\":[null]}", "enum" },
                { "{\"additionalProperties\":{}}", "additionalProperties" },
                { "{\"required\":[1]}", "required" },
                { "{\"properties\":[]}", "properties" },
                { "{\"properties\":{\"a\":{\"items\":{\"x\":1}}}}", "x" },
                { "[]", "(schema)" },
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                struct json_object *s = json_tokener_parse(bad[i].schema);
                struct schema_error err;
                assert_non_null(s);
                assert_int_equal(schema_check(s, &err), -EBADMSG);
                assert_string_equal(err.field, bad[i].field);
                json_object_put(s);
        }
        /* A schema nested too deep is refused before any value is read. */
        char deep[4096] = "";
        size_t len = 0;
        for (int i = 0; i < SCHEMA_DEPTH_MAX + 2; i++)
                len += (size_t) snprintf(deep + len, sizeof deep - len, "{\"items\":");
        len += (size_t) snprintf(deep + len, sizeof deep - len, "{}");
        for (int i = 0; i < SCHEMA_DEPTH_MAX + 2; i++)
                len += (size_t) snprintf(deep + len, sizeof deep - len, "}");
        struct schema_error err;
        assert_int_equal(run(deep, "[]", &err), 0); /* an empty list never descends */
        char nested[128] = "";
        for (int i = 0; i < SCHEMA_DEPTH_MAX + 3; i++) {
                nested[i] = '[';
                nested[2 * (SCHEMA_DEPTH_MAX + 3) - 1 - i] = ']';
        }
        assert_int_equal(run(deep, nested, &err), -EBADMSG);

        struct json_object *s = json_tokener_parse(write_schema);
        assert_int_equal(schema_check(s, &err), 0);
        json_object_put(s);
}

static void test_no_type(void **state) {
        struct schema_error err;
        /* Without a type anything goes, null included; keywords of other
         * types do not apply. */
        assert_int_equal(run("{\"maxLength\":1}", "null", &err), 0);
        assert_int_equal(run("{\"maxLength\":1}", "12345", &err), 0);
        assert_int_equal(run("{\"maxLength\":1}", "\"ab\"", &err), -EINVAL);
        assert_string_equal(err.field, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accepts),   cmocka_unit_test(test_unknown_field),
                cmocka_unit_test(test_required),  cmocka_unit_test(test_types),
                cmocka_unit_test(test_bounds),    cmocka_unit_test(test_enum_pattern),
                cmocka_unit_test(test_bad_schema), cmocka_unit_test(test_no_type),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
