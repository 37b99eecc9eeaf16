/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of proto/idl.c: the Varlink IDL parser and the JSON validator,
 * against the real interface and small made-up ones. Runs unprivileged.
 */

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "idl.h"
#include "io.toolsd.varlink.h"
#include "macro.h"

static void idl_freep(struct idl_interface **i) {
        idl_free(*i);
}
#define _cleanup_idl_ _cleanup_(idl_freep)

static struct idl_interface *parse_ok(const char *text) {
        struct idl_interface *iface = NULL;
        _cleanup_free_ char *error = NULL;
        int r = idl_parse(text, &iface, &error);
        if (r < 0)
                fail_msg("parse failed (%d): %s", r, error ? error : "(no message)");
        assert_null(error);
        assert_non_null(iface);
        return iface;
}

static void parse_fails(const char *text, const char *expected_error) {
        struct idl_interface *iface = NULL;
        _cleanup_free_ char *error = NULL;

        assert_int_equal(idl_parse(text, &iface, &error), -EINVAL);
        assert_null(iface);
        assert_non_null(error);
        assert_string_equal(error, expected_error);
}

/* Validates a JSON text; returns the result and, on failure, the field. */
static int check(const struct idl_interface *iface, const char *method, bool in,
                 const char *json, char **ret_field) {
        _cleanup_json_ struct json_object *v = NULL;

        if (json) {
                v = json_tokener_parse(json);
                assert_non_null(v);
        }
        return idl_validate_method(iface, method, in, v, ret_field);
}

static void valid(const struct idl_interface *iface, const char *method, bool in, const char *json) {
        _cleanup_free_ char *field = NULL;
        int r = check(iface, method, in, json, &field);
        if (r < 0)
                fail_msg("%s rejected at '%s': %s", method, field ? field : "?", json);
        assert_null(field);
}

static void invalid(const struct idl_interface *iface, const char *method, bool in,
                    const char *json, const char *expected_field) {
        _cleanup_free_ char *field = NULL;

        assert_int_equal(check(iface, method, in, json, &field), -EINVAL);
        assert_non_null(field);
        assert_string_equal(field, expected_field);
}

/* ---- the real interface ------------------------------------------------ */

static const char open_session_ok[] =
        "{\"skill\": {\"name\": \"web\", \"tools\": [\"run_shell\", \"read_file\"],"
        " \"profile\": \"passive\", \"needs_network\": false, \"pass_env\": [\"LANG\"],"
        " \"limits\": {\"timeout_ms\": 1000, \"memory_bytes\": 1073741824}},"
        " \"artifacts_root\": \"/tmp/a\", \"run_id\": \"r1\", \"env\": {\"LANG\": \"C\"},"
        " \"sandbox\": \"auto\"}";

static void test_toolsd_members(void **state) {
        _cleanup_idl_ struct idl_interface *iface = parse_ok(io_toolsd_varlink);

        assert_string_equal(idl_name(iface), "io.toolsd");
        const char *methods[] = { "OpenSession", "CloseSession", "ListSessions", "ListTools",
                                  "Call", "Cancel", "Status", "Doctor" };
        for (size_t i = 0; i < ELEMENTSOF(methods); i++)
                assert_true(idl_has_method(iface, methods[i]));
        const char *errors[] = { "NoSuchSession", "NoSuchCall", "InvalidArgument",
                                 "SandboxUnavailable", "LimitExceeded" };
        for (size_t i = 0; i < ELEMENTSOF(errors); i++)
                assert_true(idl_has_error(iface, errors[i]));

        /* Namespaces are apart: a type or an error is not a method. */
        assert_false(idl_has_method(iface, "Skill"));
        assert_false(idl_has_method(iface, "NoSuchSession"));
        assert_false(idl_has_error(iface, "Call"));
        assert_false(idl_has_method(iface, "call"));
        assert_false(idl_has_method(iface, ""));
        assert_false(idl_has_method(iface, NULL));
        assert_false(idl_has_method(NULL, "Call"));
        assert_null(idl_name(NULL));
}

static void test_toolsd_open_session(void **state) {
        _cleanup_idl_ struct idl_interface *iface = parse_ok(io_toolsd_varlink);
        _cleanup_free_ char *field = NULL;

        valid(iface, "OpenSession", true, open_session_ok);
        /* Only the required members. */
        valid(iface, "OpenSession", true,
              "{\"skill\": {\"name\": \"s\", \"tools\": []}, \"artifacts_root\": \"/a\"}");
        /* null for an optional member is the same as absent, nested too. */
        valid(iface, "OpenSession", true,
              "{\"skill\": {\"name\": \"s\", \"tools\": [], \"limits\": null, \"profile\": null},"
              " \"artifacts_root\": \"/a\", \"run_id\": null, \"env\": null}");
        valid(iface, "OpenSession", true,
              "{\"skill\": {\"name\": \"s\", \"tools\": [], \"limits\": {\"timeout_ms\": null}},"
              " \"artifacts_root\": \"/a\"}");

        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": []}, \"artifacts_root\": \"/a\","
                " \"bogus\": 1}", "bogus");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": [], \"foo\": true},"
                " \"artifacts_root\": \"/a\"}", "skill.foo");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": [], \"limits\": {\"timeout_ms\": \"x\"}},"
                " \"artifacts_root\": \"/a\"}", "skill.limits.timeout_ms");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": [], \"limits\": {\"timeout_ms\": 1.5}},"
                " \"artifacts_root\": \"/a\"}", "skill.limits.timeout_ms");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": [], \"limits\": {\"timeout_ms\": 2.0}},"
                " \"artifacts_root\": \"/a\"}", "skill.limits.timeout_ms");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"tools\": []}, \"artifacts_root\": \"/a\"}", "skill.name");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": null, \"tools\": []}, \"artifacts_root\": \"/a\"}",
                "skill.name");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": [\"a\", 3]}, \"artifacts_root\": \"/a\"}",
                "skill.tools[1]");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": [\"a\", null]}, \"artifacts_root\": \"/a\"}",
                "skill.tools[1]");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": \"a\"}, \"artifacts_root\": \"/a\"}",
                "skill.tools");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": [], \"needs_network\": 1},"
                " \"artifacts_root\": \"/a\"}", "skill.needs_network");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": []}, \"artifacts_root\": \"/a\","
                " \"env\": {\"A\": \"1\", \"B\": 2}}", "env.B");
        invalid(iface, "OpenSession", true,
                "{\"skill\": {\"name\": \"s\", \"tools\": []}, \"artifacts_root\": \"/a\","
                " \"env\": [\"A=1\"]}", "env");
        invalid(iface, "OpenSession", true, "{\"skill\": [], \"artifacts_root\": \"/a\"}", "skill");
        invalid(iface, "OpenSession", true, "{}", "skill");
        invalid(iface, "OpenSession", true, NULL, "skill");
        invalid(iface, "OpenSession", true, "[]", "parameters");
        invalid(iface, "OpenSession", true, "\"x\"", "parameters");

        /* Without ret_field the verdict is the same. */
        assert_int_equal(check(iface, "OpenSession", true, "{}", NULL), -EINVAL);
        assert_int_equal(check(iface, "OpenSession", true, open_session_ok, NULL), 0);

        /* The input is not the output. */
        invalid(iface, "OpenSession", false, open_session_ok, "skill");

        assert_int_equal(check(iface, "NoSuchMethod", true, "{}", &field), -ENOENT);
        assert_null(field);
        assert_int_equal(check(iface, "Skill", true, "{}", &field), -ENOENT);
        assert_null(field);
}

static void test_toolsd_replies(void **state) {
        _cleanup_idl_ struct idl_interface *iface = parse_ok(io_toolsd_varlink);
        static const char status[] =
                "{\"version\": \"0.1.0\", \"uptime_seconds\": 12, \"mode\": \"user\","
                " \"uid\": 1000, \"sessions\": 0, \"running_calls\": 0, \"connections\": 1,"
                " \"backend\": \"bwrap\", \"sandbox_available\": true, \"require_sandbox\": false}";

        valid(iface, "Status", false, status);
        valid(iface, "Status", true, "{}");
        valid(iface, "Status", true, NULL);
        invalid(iface, "Status", true, "{\"x\": 1}", "x");
        invalid(iface, "Status", false,
                "{\"version\": \"0.1.0\", \"uptime_seconds\": 12, \"mode\": \"user\","
                " \"uid\": 1000, \"sessions\": 0, \"running_calls\": 0, \"connections\": 1,"
                " \"backend\": \"bwrap\", \"sandbox_available\": true}", "require_sandbox");
        invalid(iface, "Status", false,
                "{\"version\": \"0.1.0\", \"uptime_seconds\": \"12\", \"mode\": \"user\","
                " \"uid\": 1000, \"sessions\": 0, \"running_calls\": 0, \"connections\": 1,"
                " \"backend\": \"bwrap\", \"sandbox_available\": true, \"require_sandbox\": false}",
                "uptime_seconds");

        valid(iface, "Call", false, "{\"call_id\": \"c1\"}");
        valid(iface, "Call", false,
              "{\"call_id\": \"c1\", \"result\": {\"outcome\": \"ok\", \"text\": \"hi\","
              " \"exit_code\": 0, \"sandboxed\": true, \"duration_ms\": 3, \"truncated\": false,"
              " \"dropped_env\": [\"AWS_SECRET\"]}}");
        invalid(iface, "Call", false,
                "{\"call_id\": \"c1\", \"result\": {\"outcome\": \"ok\", \"text\": \"hi\","
                " \"sandboxed\": true, \"duration_ms\": 3}}", "result.truncated");
        invalid(iface, "Call", false,
                "{\"call_id\": \"c1\", \"chunk\": {\"stream\": \"stdout\", \"data\": 5}}",
                "chunk.data");
        valid(iface, "Call", true,
              "{\"session\": \"s\", \"tool\": \"run_shell\", \"arguments\": {\"cmd\": [1, {}]}}");
        invalid(iface, "Call", true,
                "{\"session\": \"s\", \"tool\": \"run_shell\", \"arguments\": [1]}", "arguments");
        /* float is not int, but int is float: timeout_ms is an int. */
        invalid(iface, "Call", true, "{\"session\": \"s\", \"tool\": \"t\", \"timeout_ms\": 1e3}",
                "timeout_ms");

        valid(iface, "ListTools", false,
              "{\"tools\": [{\"name\": \"a\", \"description\": \"d\", \"parameters\": {}}]}");
        invalid(iface, "ListTools", false,
                "{\"tools\": [{\"name\": \"a\", \"description\": \"d\", \"parameters\": {}},"
                " {\"name\": \"b\", \"description\": \"d\"}]}", "tools[1].parameters");
        invalid(iface, "ListTools", false,
                "{\"tools\": [{\"name\": \"a\", \"description\": \"d\", \"parameters\": \"{}\"}]}",
                "tools[0].parameters");
        valid(iface, "CloseSession", false, "{}");
        invalid(iface, "CloseSession", false, "{\"session\": \"s\"}", "session");
}

static void test_toolsd_errors(void **state) {
        _cleanup_idl_ struct idl_interface *iface = parse_ok(io_toolsd_varlink);
        _cleanup_json_ struct json_object *ok = json_tokener_parse("{\"what\": \"calls\", \"limit\": 4}");
        _cleanup_json_ struct json_object *bad = json_tokener_parse("{\"what\": \"calls\", \"limit\": \"4\"}");
        _cleanup_free_ char *field = NULL;

        assert_int_equal(idl_validate_error(iface, "LimitExceeded", ok, &field), 0);
        assert_null(field);
        assert_int_equal(idl_validate_error(iface, "LimitExceeded", bad, &field), -EINVAL);
        assert_string_equal(field, "limit");
        free(TAKE_PTR(field));
        assert_int_equal(idl_validate_error(iface, "NoSuchSession", NULL, &field), -EINVAL);
        assert_string_equal(field, "session");
        free(TAKE_PTR(field));
        assert_int_equal(idl_validate_error(iface, "Status", ok, &field), -ENOENT);
        assert_int_equal(idl_validate_error(iface, "Nope", ok, &field), -ENOENT);
        assert_null(field);
}

/* The service interface every Varlink server also implements, read from the
 * source tree (the unit tests get only our own interface embedded). */
static void test_varlink_service(void **state) {
        _cleanup_fclose_ FILE *f = fopen(SRCDIR "/proto/org.varlink.service.varlink", "re");
        _cleanup_free_ char *text = NULL;
        _cleanup_idl_ struct idl_interface *iface = NULL;
        _cleanup_json_ struct json_object *p = json_tokener_parse("{\"parameter\": \"skill\"}");
        size_t n;

        assert_non_null(f);
        text = calloc(1, 65536);
        assert_non_null(text);
        n = fread(text, 1, 65535, f);
        assert_true(n > 0 && n < 65535);
        iface = parse_ok(text);
        assert_string_equal(idl_name(iface), "org.varlink.service");
        assert_true(idl_has_method(iface, "GetInfo"));
        assert_true(idl_has_method(iface, "GetInterfaceDescription"));
        assert_true(idl_has_error(iface, "InvalidParameter"));
        assert_true(idl_has_error(iface, "ExpectedMore"));
        assert_int_equal(idl_validate_error(iface, "InvalidParameter", p, NULL), 0);
        assert_int_equal(idl_validate_error(iface, "PermissionDenied", p, NULL), -EINVAL);
        assert_int_equal(idl_validate_error(iface, "PermissionDenied", NULL, NULL), 0);
        valid(iface, "GetInfo", false,
              "{\"vendor\": \"toolsd\", \"product\": \"toolsd\", \"version\": \"0.1.0\","
              " \"url\": \"https://example.org\", \"interfaces\": [\"io.toolsd\", \"org.varlink.service\"]}");
}

/* ---- the other constructs ---------------------------------------------- */

static const char sample_idl[] =
        "# A test interface.\n"
        "interface org.example.test-idl\n"
        "\n"
        "type Color (red, green, blue)  # an enum\n"
        "type Node (name: string, children: ?[]Node)\n"
        "type Inline (\n"
        "  point: (x: float, y: float),\n"
        "  mode: (fast, slow_now),\n"
        "  set: [string](),\n"
        "  grid: [][]?int,\n"
        "  colors: [string]Color,\n"
        "  opt_list: ?[]?string\n"
        ")\n"
        "method Paint(color: Color, inline: ?Inline, tree: ?Node) -> ()\n"
        "method Empty()->()\n"
        "error Bad ()\n";

static void test_enum(void **state) {
        _cleanup_idl_ struct idl_interface *iface = parse_ok(sample_idl);

        assert_string_equal(idl_name(iface), "org.example.test-idl");
        valid(iface, "Paint", true, "{\"color\": \"red\"}");
        valid(iface, "Paint", true, "{\"color\": \"blue\"}");
        invalid(iface, "Paint", true, "{\"color\": \"Red\"}", "color");
        invalid(iface, "Paint", true, "{\"color\": \"\"}", "color");
        invalid(iface, "Paint", true, "{\"color\": 0}", "color");
        invalid(iface, "Paint", true, "{\"color\": null}", "color");
        invalid(iface, "Paint", true, "{}", "color");
}

static void test_inline_and_containers(void **state) {
        _cleanup_idl_ struct idl_interface *iface = parse_ok(sample_idl);
        static const char ok[] =
                "{\"color\": \"green\", \"inline\": {"
                " \"point\": {\"x\": 1, \"y\": 2.5}, \"mode\": \"slow_now\","
                " \"set\": {\"a\": {}, \"b\": {}}, \"grid\": [[1, null], [], [3]],"
                " \"colors\": {\"sky\": \"blue\"}, \"opt_list\": [\"a\", null]}}";

        valid(iface, "Paint", true, ok);
        valid(iface, "Paint", true,
              "{\"color\": \"red\", \"inline\": {\"point\": {\"x\": 0, \"y\": 0}, \"mode\": \"fast\","
              " \"set\": {}, \"grid\": [], \"colors\": {}}}");

#define INL(point, mode, set, grid, colors)                                              \
        "{\"color\": \"red\", \"inline\": {\"point\": " point ", \"mode\": " mode            \
        ", \"set\": " set ", \"grid\": " grid ", \"colors\": " colors "}}"
        invalid(iface, "Paint", true, INL("{\"x\": 1}", "\"fast\"", "{}", "[]", "{}"),
                "inline.point.y");
        invalid(iface, "Paint", true, INL("{\"x\": true, \"y\": 1}", "\"fast\"", "{}", "[]", "{}"),
                "inline.point.x");
        invalid(iface, "Paint", true, INL("{\"x\": \"1\", \"y\": 1}", "\"fast\"", "{}", "[]", "{}"),
                "inline.point.x");
        invalid(iface, "Paint", true, INL("{\"x\": 1, \"y\": 1, \"z\": 1}", "\"fast\"", "{}", "[]", "{}"),
                "inline.point.z");
        invalid(iface, "Paint", true, INL("{\"x\": 1, \"y\": 1}", "\"slow\"", "{}", "[]", "{}"),
                "inline.mode");
        invalid(iface, "Paint", true, INL("{\"x\": 1, \"y\": 1}", "\"fast\"", "{\"a\": 1}", "[]", "{}"),
                "inline.set.a");
        invalid(iface, "Paint", true,
                INL("{\"x\": 1, \"y\": 1}", "\"fast\"", "{\"a\": {\"b\": 1}}", "[]", "{}"),
                "inline.set.a.b");
        invalid(iface, "Paint", true, INL("{\"x\": 1, \"y\": 1}", "\"fast\"", "[\"a\"]", "[]", "{}"),
                "inline.set");
        invalid(iface, "Paint", true,
                INL("{\"x\": 1, \"y\": 1}", "\"fast\"", "{}", "[[1], [2, 3.5]]", "{}"),
                "inline.grid[1][1]");
        invalid(iface, "Paint", true, INL("{\"x\": 1, \"y\": 1}", "\"fast\"", "{}", "[1]", "{}"),
                "inline.grid[0]");
        invalid(iface, "Paint", true, INL("{\"x\": 1, \"y\": 1}", "\"fast\"", "{}", "[null]", "{}"),
                "inline.grid[0]");
        invalid(iface, "Paint", true,
                INL("{\"x\": 1, \"y\": 1}", "\"fast\"", "{}", "[]", "{\"sea\": \"teal\"}"),
                "inline.colors.sea");
#undef INL
}

static void test_recursion(void **state) {
        _cleanup_idl_ struct idl_interface *iface = parse_ok(sample_idl);
        _cleanup_json_ struct json_object *root = NULL;
        _cleanup_free_ char *field = NULL;
        struct json_object *node;

        valid(iface, "Paint", true,
              "{\"color\": \"red\", \"tree\": {\"name\": \"a\", \"children\": ["
              " {\"name\": \"b\"}, {\"name\": \"c\", \"children\": [{\"name\": \"d\"}]}]}}");
        invalid(iface, "Paint", true,
                "{\"color\": \"red\", \"tree\": {\"name\": \"a\", \"children\": ["
                " {\"name\": \"b\"}, {\"name\": \"c\", \"children\": [{\"nam\": \"d\"}]}]}}",
                "tree.children[1].children[0].nam");

        /* Built by hand: deeper than any parser would let through. Each
         * Node costs two levels (the node and its children array). */
        root = json_object_new_object();
        node = root;
        json_object_object_add(root, "color", json_object_new_string("red"));
        for (int i = 0; i < 100; i++) {
                struct json_object *child = json_object_new_object(), *list = json_object_new_array();
                json_object_object_add(child, "name", json_object_new_string("n"));
                json_object_object_add(child, "children", list);
                if (i == 0)
                        json_object_object_add(node, "tree", child);
                else
                        json_object_array_add(json_object_object_get(node, "children"), child);
                node = child;
        }
        assert_int_equal(idl_validate_method(iface, "Paint", true, root, &field), -EINVAL);
        assert_non_null(field);
        assert_true(strncmp(field, "tree.children[0].children[0].", 29) == 0);
        assert_true(strlen(field) < 64 * 12);
}

static void test_small_syntax(void **state) {
        _cleanup_idl_ struct idl_interface *a = NULL, *b = NULL, *c = NULL;

        /* No members at all, and no trailing newline. */
        a = parse_ok("interface a.b");
        assert_string_equal(idl_name(a), "a.b");
        assert_false(idl_has_method(a, "X"));
        /* Comments and blank lines everywhere, CRLF, tabs, a comment at EOF
         * without newline; a type used before it is defined. */
        b = parse_ok("# c\r\n\r\ninterface\tx.y-z.w # c\r\nmethod M(\r\n# c\r\n a:T # c\r\n)\t->\t(\r\n)\r\n"
                     "type T (v1, v2)\r\n# the end");
        _cleanup_free_ char *field = NULL;
        assert_int_equal(check(b, "M", true, "{\"a\": \"v2\"}", &field), 0);
        assert_int_equal(check(b, "M", true, "{\"a\": \"v3\"}", &field), -EINVAL);
        assert_string_equal(field, "a");
        /* Field names with single underscores and digits; object types. */
        c = parse_ok("interface a.b\nmethod M(a_1: object, B2_c: ?object) -> (x: [string]object)\n");
        valid(c, "M", true, "{\"a_1\": {}, \"B2_c\": {\"k\": [1]}}");
        valid(c, "M", false, "{\"x\": {\"k\": {}}}");
        invalid(c, "M", false, "{\"x\": {\"k\": 1}}", "x.k");
}

static void test_floats(void **state) {
        _cleanup_idl_ struct idl_interface *iface =
                parse_ok("interface a.b\nmethod F(f: float, i: int) -> ()\n");
        _cleanup_json_ struct json_object *p = json_object_new_object();
        _cleanup_free_ char *field = NULL;

        valid(iface, "F", true, "{\"f\": 1, \"i\": 1}");
        valid(iface, "F", true, "{\"f\": -1.5e10, \"i\": -9223372036854775808}");
        valid(iface, "F", true, "{\"f\": 0.0, \"i\": 9223372036854775807}");
        invalid(iface, "F", true, "{\"f\": true, \"i\": 1}", "f");
        invalid(iface, "F", true, "{\"f\": \"1\", \"i\": 1}", "f");
        invalid(iface, "F", true, "{\"f\": 1, \"i\": false}", "i");

        /* JSON has no NaN; json-c can hold one. */
        json_object_object_add(p, "f", json_object_new_double(NAN));
        json_object_object_add(p, "i", json_object_new_int(1));
        assert_int_equal(idl_validate_method(iface, "F", true, p, &field), -EINVAL);
        assert_string_equal(field, "f");
}

/* ---- malformed interfaces ---------------------------------------------- */

static void test_malformed(void **state) {
        parse_fails("", "line 1: expected \"interface\"");
        parse_fails("# only a comment\n", "line 2: expected \"interface\"");
        parse_fails("# doc\nmethod A() -> ()\n", "line 2: expected \"interface\"");
        parse_fails("interfacex a.b\n", "line 1: expected \"interface\"");
        parse_fails("interface\n", "line 2: expected an interface name (e.g. org.example.service)");
        parse_fails("interface ab\n", "line 1: expected an interface name (e.g. org.example.service)");
        parse_fails("interface a..b\n", "line 1: expected an interface name (e.g. org.example.service)");
        parse_fails("interface a.-b\n", "line 1: expected an interface name (e.g. org.example.service)");
        parse_fails("interface a.b-\n", "line 1: expected an interface name (e.g. org.example.service)");
        parse_fails("interface 1a.b\n", "line 1: expected an interface name (e.g. org.example.service)");
        parse_fails("interface a.b\nfunction F() -> ()\n",
                    "line 2: expected \"type\", \"method\" or \"error\"");
        parse_fails("interface a.b\nmethodF() -> ()\n",
                    "line 2: expected \"type\", \"method\" or \"error\"");
        parse_fails("interface a.b!\n", "line 1: expected \"type\", \"method\" or \"error\"");

        /* Unbalanced parentheses. */
        parse_fails("interface a.b\nmethod F(a: int -> ()\n", "line 2: expected \",\" or \")\"");
        parse_fails("interface a.b\nmethod F(a: int) -> (\n", "line 3: expected a field name");
        parse_fails("interface a.b\ntype T (a: (b: int)\nmethod F() -> ()\n",
                    "line 3: expected \",\" or \")\"");
        parse_fails("interface a.b\nmethod F) -> ()\n", "line 2: expected \"(\"");
        parse_fails("interface a.b\nmethod F()) -> ()\n", "line 2: expected \"->\"");
        parse_fails("interface a.b\nmethod F() -> ())\n",
                    "line 2: expected \"type\", \"method\" or \"error\"");
        parse_fails("interface a.b\nmethod F()\n", "line 3: expected \"->\"");
        parse_fails("interface a.b\nmethod F() -> \n", "line 3: expected \"(\"");

        /* Bad names. */
        parse_fails("interface a.b\ntype foo (a: int)\n",
                    "line 2: expected a name after \"type\" (a capital letter, then letters and digits)");
        parse_fails("interface a.b\nmethod do_it() -> ()\n",
                    "line 2: expected a name after \"method\" (a capital letter, then letters and digits)");
        parse_fails("interface a.b\nerror E_1 ()\n",
                    "line 2: expected a name after \"error\" (a capital letter, then letters and digits)");
        parse_fails("interface a.b\nmethod F(a: Str_ing) -> ()\n",
                    "line 2: expected a type (bool, int, float, string, object, a type name, "
                    "\"(\", \"?\", \"[]\" or \"[string]\")");
        parse_fails("interface a.b\nmethod F(a: integer) -> ()\n",
                    "line 2: expected a type (bool, int, float, string, object, a type name, "
                    "\"(\", \"?\", \"[]\" or \"[string]\")");
        parse_fails("interface a.b\nmethod F(a: Missing) -> ()\n", "line 2: unknown type 'Missing'");
        parse_fails("interface a.b\nmethod G() -> ()\nmethod F(a: G) -> ()\n",
                    "line 3: unknown type 'G'");
        parse_fails("interface a.b\nmethod F(_a: int) -> ()\n", "line 2: expected a field name");
        parse_fails("interface a.b\nmethod F(a__b: int) -> ()\n", "line 2: expected a field name");
        parse_fails("interface a.b\nmethod F(a_: int) -> ()\n", "line 2: expected a field name");
        parse_fails("interface a.b\nmethod F(1a: int) -> ()\n", "line 2: expected a field name");

        /* Duplicates. */
        parse_fails("interface a.b\nmethod F(a: int,\n a: string) -> ()\n",
                    "line 3: duplicate field 'a'");
        parse_fails("interface a.b\ntype E (x, y, x)\n", "line 2: duplicate enum value 'x'");
        parse_fails("interface a.b\ntype T ()\nmethod F() -> ()\nerror T ()\n",
                    "line 4: duplicate member 'T'");
        parse_fails("interface a.b\nmethod F() -> ()\nmethod F() -> ()\n",
                    "line 3: duplicate member 'F'");

        /* Type syntax. */
        parse_fails("interface a.b\nmethod F(a: ??int) -> ()\n",
                    "line 2: expected a type after \"?\", not another \"?\"");
        parse_fails("interface a.b\nmethod F(a: ? int) -> ()\n",
                    "line 2: expected a type (bool, int, float, string, object, a type name, "
                    "\"(\", \"?\", \"[]\" or \"[string]\")");
        parse_fails("interface a.b\nmethod F(a: [int]int) -> ()\n",
                    "line 2: expected a type (bool, int, float, string, object, a type name, "
                    "\"(\", \"?\", \"[]\" or \"[string]\")");
        parse_fails("interface a.b\nmethod F(a int) -> ()\n", "line 2: expected \":\" after the field name");
        parse_fails("interface a.b\nmethod F(a: int,) -> ()\n", "line 2: expected a field name");
        parse_fails("interface a.b\ntype E (x, y: int)\n", "line 2: expected \",\" or \")\"");
        parse_fails("interface a.b\ntype T (x: int, y)\n", "line 2: expected \":\" after the field name");
        parse_fails("interface a.b\nmethod F(a, b) -> ()\n", "line 2: expected a struct, not an enum");
        parse_fails("interface a.b\nerror E (a, b)\n", "line 2: expected a struct, not an enum");
        parse_fails("interface a.b\ntype T int\n", "line 2: expected \"(\"");
        parse_fails("interface a.b\ntype T\n", "line 3: expected \"(\"");
        parse_fails("interface a.b\ntype\tT(a: int)\nerror\n", "line 4: expected a name after "
                    "\"error\" (a capital letter, then letters and digits)");
}

static void test_limits(void **state) {
        struct idl_interface *iface = NULL;
        _cleanup_free_ char *error = NULL, *deep = NULL, *big = NULL;
        size_t n = 200;

        /* Nested anonymous structs past the bound. */
        deep = malloc(64 + 6 * n + n + 16);
        assert_non_null(deep);
        char *p = stpcpy(deep, "interface a.b\ntype T (");
        for (size_t i = 0; i < n; i++)
                p = stpcpy(p, "a: (");
        p = stpcpy(p, "a: int");
        for (size_t i = 0; i <= n; i++)
                *p++ = ')';
        *p = '\0';
        assert_int_equal(idl_parse(deep, &iface, &error), -EINVAL);
        assert_string_equal(error, "line 2: types nested too deeply");
        free(TAKE_PTR(error));

        /* []... past the bound. */
        p = stpcpy(deep, "interface a.b\ntype T (a: ");
        for (size_t i = 0; i < n; i++)
                p = stpcpy(p, "[]");
        p = stpcpy(p, "int)");
        assert_int_equal(idl_parse(deep, &iface, &error), -EINVAL);
        assert_string_equal(error, "line 2: types nested too deeply");
        free(TAKE_PTR(error));

        /* Oversized text. */
        big = malloc(2 * 1024 * 1024);
        assert_non_null(big);
        memset(big, ' ', 2 * 1024 * 1024 - 1);
        memcpy(big, "interface a.b\n", 14);
        big[2 * 1024 * 1024 - 1] = '\0';
        assert_int_equal(idl_parse(big, &iface, &error), -E2BIG);
        assert_non_null(error);
        assert_null(iface);

        /* No message wanted: still refused. */
        assert_int_equal(idl_parse("interface", &iface, NULL), -EINVAL);
        assert_int_equal(idl_parse(NULL, &iface, NULL), -EINVAL);
        assert_null(iface);
        idl_free(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_toolsd_members),
                cmocka_unit_test(test_toolsd_open_session),
                cmocka_unit_test(test_toolsd_replies),
                cmocka_unit_test(test_toolsd_errors),
                cmocka_unit_test(test_varlink_service),
                cmocka_unit_test(test_enum),
                cmocka_unit_test(test_inline_and_containers),
                cmocka_unit_test(test_recursion),
                cmocka_unit_test(test_small_syntax),
                cmocka_unit_test(test_floats),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
