/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the toolsd.conf parser (daemon/config.c): defaults, every
 * key, every refusal with its exact message, inih's quirks (over-long lines,
 * continuations, inline comments, "Key:Value"), all-or-nothing loading, the
 * value parsers' edge cases, files, and the shipped etc/toolsd/toolsd.conf
 * uncommented, which must give exactly the defaults.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config-paths.h"
#include "config.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)
#define TIB (GIB * 1024)

static void check_defaults(const struct toolsd_config *c) {
        assert_null(c->listen_path);
        assert_string_equal(c->profiles_dir, TOOLSD_PROFILES_DIR);
        assert_string_equal(c->skills_dir, TOOLSD_SKILLS_DIR);
        assert_int_equal(c->session_idle_timeout_sec, 3600);
        assert_int_equal(c->max_message_bytes, 16 * MIB);
        assert_int_equal(c->max_json_depth, 64);
        assert_int_equal(c->max_connections, 4096);
        assert_int_equal(c->max_connections_per_uid, 1024);
        assert_int_equal(c->max_sessions_per_uid, 16384);
        assert_int_equal(c->max_calls_per_session, 16);
        assert_int_equal(c->max_string_bytes, MIB);
        assert_int_equal(c->default_timeout_ms, 120000);
        assert_int_equal(c->max_timeout_ms, 600000);
        assert_int_equal(c->kill_grace_ms, 200);
        assert_int_equal(c->result_output_bytes, 64 * KIB);
        assert_int_equal(c->max_output_bytes, 64 * MIB);
        assert_int_equal(c->cpu_seconds, 600);
        assert_int_equal(c->memory_bytes, 4 * GIB);
        assert_int_equal(c->file_size_bytes, GIB);
        assert_int_equal(c->processes, 512);
        assert_int_equal(c->open_files, 1024);
        assert_int_equal(c->max_write_bytes, 16 * MIB);
        assert_int_equal(c->require_sandbox, REQUIRE_SANDBOX_NO);
        assert_false(c->allow_unsandboxed);
        assert_true(c->allow_network);
        assert_string_equal(c->bwrap_path, "/usr/bin/bwrap");
        assert_non_null(c->ro_paths);
        assert_null(c->ro_paths[0]);
        assert_int_equal(c->n_ro_paths, 0);
        assert_false(c->http_allow_loopback);
        assert_false(c->http_allow_private);
        assert_int_equal(c->http_max_redirects, 5);
        assert_int_equal(c->http_max_bytes, 10 * MIB);
}

/* Loads text over the defaults; returns the result, *ret_error if asked. */
static int load(struct toolsd_config *c, const char *text, char **ret_error) {
        assert_int_equal(config_init_defaults(c), 0);
        return config_load_string(c, text, "toolsd.conf", ret_error);
}

/* text must fail with exactly want; the config stays at its defaults. */
static void expect_error(const char *text, const char *want) {
        struct toolsd_config c;
        char *error = NULL;

        assert_int_equal(load(&c, text, &error), -EINVAL);
        assert_non_null(error);
        if (strcmp(error, want) != 0)
                fail_msg("got \"%s\"\nwant \"%s\"", error, want);
        check_defaults(&c);
        free(error);
        config_done(&c);
}

static void test_defaults(void **state) {
        struct toolsd_config c;
        char *error = NULL;

        assert_int_equal(config_init_defaults(&c), 0);
        check_defaults(&c);
        assert_int_equal(config_validate(&c, &error), 0);
        assert_null(error);
        config_done(&c);
        config_done(&c); /* idempotent */
}

static void test_empty_text(void **state) {
        struct toolsd_config c;

        assert_int_equal(load(&c, "", NULL), 0);
        check_defaults(&c);
        assert_int_equal(config_load_string(&c, "\n\n# only comments\n; and these\n", "x", NULL), 0);
        check_defaults(&c);
        config_done(&c);
}

static const char every_key[] =
        "[Daemon]\n"
        "ListenPath=/run/t/s\n"
        "ProfilesDirectory=/p\n"
        "SkillsDirectory=/s\n"
        "SessionIdleTimeoutSec=60\n"
        "[Limits]\n"
        "MaxMessageSize=4K\n"
        "MaxJsonDepth=1024\n"
        "MaxConnections=10\n"
        "MaxConnectionsPerUser=9\n"
        "MaxSessionsPerUser=8\n"
        "MaxCallsPerSession=7\n"
        "MaxStringSize=2K\n"
        "[Calls]\n"
        "DefaultTimeoutSec=5\n"
        "MaxTimeoutSec=86400\n"
        "KillGraceMSec=0\n"
        "ResultOutputSize=1K\n"
        "MaxOutputSize=1T\n"
        "LimitCPU=30\n"
        "LimitAS=16M\n"
        "LimitFSIZE=4K\n"
        "LimitNPROC=4194304\n"
        "LimitNOFILE=16\n"
        "MaxArtifactSize=3M\n"
        "[Sandbox]\n"
        "RequireSandbox=yes\n"
        "AllowUnsandboxed=yes\n"
        "AllowNetwork=off\n"
        "BubblewrapPath=/opt/bwrap\n"
        "ReadOnlyPaths=/opt/a /etc/ssl\n"
        "[Network]\n"
        "HttpAllowLoopback=true\n"
        "HttpAllowPrivate=1\n"
        "HttpMaxRedirects=0\n"
        "HttpMaxBytes=1G\n";

static void test_every_key(void **state) {
        struct toolsd_config c;
        char *error = NULL;

        assert_int_equal(load(&c, every_key, &error), 0);
        assert_null(error);
        assert_string_equal(c.listen_path, "/run/t/s");
        assert_string_equal(c.profiles_dir, "/p");
        assert_string_equal(c.skills_dir, "/s");
        assert_int_equal(c.session_idle_timeout_sec, 60);
        assert_int_equal(c.max_message_bytes, 4 * KIB);
        assert_int_equal(c.max_json_depth, 1024);
        assert_int_equal(c.max_connections, 10);
        assert_int_equal(c.max_connections_per_uid, 9);
        assert_int_equal(c.max_sessions_per_uid, 8);
        assert_int_equal(c.max_calls_per_session, 7);
        assert_int_equal(c.max_string_bytes, 2 * KIB);
        assert_int_equal(c.default_timeout_ms, 5000);
        assert_int_equal(c.max_timeout_ms, 86400000);
        assert_int_equal(c.kill_grace_ms, 0);
        assert_int_equal(c.result_output_bytes, KIB);
        assert_int_equal(c.max_output_bytes, TIB);
        assert_int_equal(c.cpu_seconds, 30);
        assert_int_equal(c.memory_bytes, 16 * MIB);
        assert_int_equal(c.file_size_bytes, 4 * KIB);
        assert_int_equal(c.processes, 4194304);
        assert_int_equal(c.open_files, 16);
        assert_int_equal(c.max_write_bytes, 3 * MIB);
        assert_int_equal(c.require_sandbox, REQUIRE_SANDBOX_YES);
        assert_true(c.allow_unsandboxed);
        assert_false(c.allow_network);
        assert_string_equal(c.bwrap_path, "/opt/bwrap");
        assert_int_equal(c.n_ro_paths, 2);
        assert_string_equal(c.ro_paths[0], "/opt/a");
        assert_string_equal(c.ro_paths[1], "/etc/ssl");
        assert_null(c.ro_paths[2]);
        assert_true(c.http_allow_loopback);
        assert_true(c.http_allow_private);
        assert_int_equal(c.http_max_redirects, 0);
        assert_int_equal(c.http_max_bytes, GIB);
        assert_int_equal(config_validate(&c, &error), 0);

        /* every key empty again: back to the defaults */
        assert_int_equal(config_load_string(&c,
                "[Daemon]\nListenPath=\nProfilesDirectory=\nSkillsDirectory=\nSessionIdleTimeoutSec=\n"
                "[Limits]\nMaxMessageSize=\nMaxJsonDepth=\nMaxConnections=\nMaxConnectionsPerUser=\n"
                "MaxSessionsPerUser=\nMaxCallsPerSession=\nMaxStringSize=\n"
                "[Calls]\nDefaultTimeoutSec=\nMaxTimeoutSec=\nKillGraceMSec=\nResultOutputSize=\n"
                "MaxOutputSize=\nLimitCPU=\nLimitAS=\nLimitFSIZE=\nLimitNPROC=\nLimitNOFILE=\nMaxArtifactSize=\n"
                "[Sandbox]\nRequireSandbox=\nAllowUnsandboxed=\nAllowNetwork=\nBubblewrapPath=\nReadOnlyPaths=\n"
                "[Network]\nHttpAllowLoopback=\nHttpAllowPrivate=\nHttpMaxRedirects=\nHttpMaxBytes=\n",
                "toolsd.conf", NULL), 0);
        check_defaults(&c);
        config_done(&c);
}

static void test_last_wins_and_syntax(void **state) {
        struct toolsd_config c;

        /* duplicate scalar: last wins; repeated section; spaces around '=' */
        assert_int_equal(load(&c,
                "[Limits]\nMaxJsonDepth=3\n[Calls]\nLimitCPU=9\n[Limits]\n  MaxJsonDepth  =  5  \n", NULL), 0);
        assert_int_equal(c.max_json_depth, 5);
        assert_int_equal(c.cpu_seconds, 9);
        config_done(&c);

        /* an indented line is a line of its own, not inih's continuation */
        assert_int_equal(load(&c, "[Limits]\nMaxJsonDepth=3\n    MaxCallsPerSession=4\n", NULL), 0);
        assert_int_equal(c.max_json_depth, 3);
        assert_int_equal(c.max_calls_per_session, 4);
        config_done(&c);

        /* inline ';' comment after whitespace; CRLF; a BOM; no final newline */
        assert_int_equal(load(&c, "\xEF\xBB\xBF[Limits]\r\nMaxJsonDepth=7 ; seven\r\n"
                                  "[Sandbox] ; here\nBubblewrapPath=/a;b", NULL), 0);
        assert_int_equal(c.max_json_depth, 7);
        assert_string_equal(c.bwrap_path, "/a;b");
        config_done(&c);

        /* '#' is a comment only at the start of a line */
        expect_error("[Limits]\nMaxJsonDepth=7 # seven\n",
                     "toolsd.conf:2: [Limits] MaxJsonDepth=: '7 # seven' is not a number");
}

static void test_syntax_errors(void **state) {
        expect_error("[Foo]\n", "toolsd.conf:1: unknown section [Foo]");
        expect_error("[Limits]\n[limits]\nMaxJsonDepth=1\n", "toolsd.conf:2: unknown section [limits]");
        expect_error("[Limits]\nFoo=1\n", "toolsd.conf:2: [Limits] Foo=: unknown key");
        expect_error("[Limits]\nmaxjsondepth=1\n", "toolsd.conf:2: [Limits] maxjsondepth=: unknown key");
        expect_error("[Calls]\nMaxJsonDepth=1\n", "toolsd.conf:2: [Calls] MaxJsonDepth=: unknown key");
        expect_error("[Limits]\n=1\n", "toolsd.conf:2: [Limits] =: unknown key");
        expect_error("MaxJsonDepth=1\n", "toolsd.conf:1: MaxJsonDepth= is outside of a section");
        expect_error("[Limits]\n\nMaxJsonDepth\n",
                     "toolsd.conf:3: expected Key=Value, [Section] or a comment");
        expect_error("[Limits]\nMaxJsonDepth:4\n",
                     "toolsd.conf:2: expected Key=Value, [Section] or a comment");
        expect_error("[Limits]\nMaxJsonDepth ;=4\n",
                     "toolsd.conf:2: expected Key=Value, [Section] or a comment");
        expect_error("[Limits\n", "toolsd.conf:1: expected [Section]");
        expect_error("[Limits] junk\n", "toolsd.conf:1: expected [Section]");
        expect_error("[Lim]its]\n", "toolsd.conf:1: expected [Section]");
        expect_error("[[Limits]\n", "toolsd.conf:1: expected [Section]");
        expect_error("[]\n", "toolsd.conf:1: unknown section []");
        expect_error("[ Limits ]\n", "toolsd.conf:1: unknown section [ Limits ]");
        /* the first error is reported, later ones are not */
        expect_error("[Limits]\nMaxJsonDepth=0\nFoo=1\n",
                     "toolsd.conf:2: [Limits] MaxJsonDepth=: '0' is out of range 1..1024");
}

static void test_long_lines(void **state) {
        char line[512], text[1024];
        struct toolsd_config c;

        /* 198 bytes fit (inih's 200 less newline and NUL) */
        memset(line, 'a', sizeof line);
        memcpy(line, "BubblewrapPath=/", 16);
        line[198] = '\0';
        snprintf(text, sizeof text, "[Sandbox]\n%s\n", line);
        assert_int_equal(load(&c, text, NULL), 0);
        assert_int_equal(strlen(c.bwrap_path), 198 - 15);
        config_done(&c);

        /* leading whitespace does not count */
        snprintf(text, sizeof text, "[Sandbox]\n      \t%s   \n", line);
        assert_int_equal(load(&c, text, NULL), 0);
        config_done(&c);

        /* one more is refused, not truncated */
        line[198] = 'a';
        line[199] = '\0';
        snprintf(text, sizeof text, "[Sandbox]\n%s\n", line);
        expect_error(text, "toolsd.conf:2: line is longer than 198 bytes");

        /* what the refusal stops: inih would parse the tail as a line */
        memset(line, 'a', sizeof line);
        memcpy(line, "BubblewrapPath=/", 16);
        memcpy(line + 198, "AllowNetwork=no", 16);
        snprintf(text, sizeof text, "[Sandbox]\n%s\n", line);
        expect_error(text, "toolsd.conf:2: line is longer than 198 bytes");
}

static void test_value_errors(void **state) {
        expect_error("[Limits]\nMaxMessageSize=abc\n",
                     "toolsd.conf:2: [Limits] MaxMessageSize=: 'abc' is not a size");
        expect_error("[Limits]\nMaxMessageSize=1K\n",
                     "toolsd.conf:2: [Limits] MaxMessageSize=: '1K' is out of range 4K..1G");
        expect_error("[Limits]\nMaxMessageSize=1025M\n",
                     "toolsd.conf:2: [Limits] MaxMessageSize=: '1025M' is out of range 4K..1G");
        expect_error("[Limits]\nMaxMessageSize=99999999999999999999\n",
                     "toolsd.conf:2: [Limits] MaxMessageSize=: '99999999999999999999' is out of range 4K..1G");
        expect_error("[Limits]\nMaxMessageSize=-1\n",
                     "toolsd.conf:2: [Limits] MaxMessageSize=: '-1' is not a size");
        expect_error("[Limits]\nMaxJsonDepth=1025\n",
                     "toolsd.conf:2: [Limits] MaxJsonDepth=: '1025' is out of range 1..1024");
        expect_error("[Limits]\nMaxJsonDepth=1K\n",
                     "toolsd.conf:2: [Limits] MaxJsonDepth=: '1K' is not a number");
        expect_error("[Sandbox]\nAllowNetwork=maybe\n",
                     "toolsd.conf:2: [Sandbox] AllowNetwork=: 'maybe' is not a boolean");
        expect_error("[Sandbox]\nRequireSandbox=2\n",
                     "toolsd.conf:2: [Sandbox] RequireSandbox=: '2' is not a boolean");
        expect_error("[Calls]\nMaxTimeoutSec=86401\n",
                     "toolsd.conf:2: [Calls] MaxTimeoutSec=: '86401' is out of range 1..86400");
        expect_error("[Calls]\nDefaultTimeoutSec=0\n",
                     "toolsd.conf:2: [Calls] DefaultTimeoutSec=: '0' is out of range 1..86400");
        expect_error("[Calls]\nDefaultTimeoutSec=4294967296\n",
                     "toolsd.conf:2: [Calls] DefaultTimeoutSec=: '4294967296' is out of range 1..86400");
        expect_error("[Calls]\nKillGraceMSec=60001\n",
                     "toolsd.conf:2: [Calls] KillGraceMSec=: '60001' is out of range 0..60000");
        expect_error("[Calls]\nLimitAS=17T\n",
                     "toolsd.conf:2: [Calls] LimitAS=: '17T' is out of range 16M..16T");
        expect_error("[Network]\nHttpMaxRedirects=21\n",
                     "toolsd.conf:2: [Network] HttpMaxRedirects=: '21' is out of range 0..20");
        expect_error("[Daemon]\nProfilesDirectory=etc/p\n",
                     "toolsd.conf:2: [Daemon] ProfilesDirectory=: 'etc/p' is not an absolute path");
        expect_error("[Sandbox]\nBubblewrapPath=bwrap\n",
                     "toolsd.conf:2: [Sandbox] BubblewrapPath=: 'bwrap' is not an absolute path");

        char text[256];
        snprintf(text, sizeof text, "[Daemon]\nListenPath=/%0107d\n", 0);
        expect_error(text, "toolsd.conf:2: [Daemon] ListenPath=: '/0000000000000000000000000000000000000000"
                           "0000000000000000000000000000000000000000000000000000000000000000000' is longer "
                           "than 107 bytes");
        snprintf(text, sizeof text, "[Daemon]\nListenPath=/%0106d\n", 0);
        struct toolsd_config c;
        assert_int_equal(load(&c, text, NULL), 0);
        assert_int_equal(strlen(c.listen_path), 107);
        config_done(&c);
}

static void test_ro_paths(void **state) {
        struct toolsd_config c;

        assert_int_equal(load(&c,
                "[Sandbox]\nReadOnlyPaths=/opt/a\t//usr/share//doc/  /./srv/x/.\n"
                "ReadOnlyPaths=/opt/a /etc/ssl\n", NULL), 0);
        assert_int_equal(c.n_ro_paths, 4);
        assert_string_equal(c.ro_paths[0], "/opt/a");
        assert_string_equal(c.ro_paths[1], "/usr/share/doc");
        assert_string_equal(c.ro_paths[2], "/srv/x");
        assert_string_equal(c.ro_paths[3], "/etc/ssl");
        assert_null(c.ro_paths[4]);
        /* an empty assignment resets, later ones append again */
        assert_int_equal(config_load_string(&c, "[Sandbox]\nReadOnlyPaths=\nReadOnlyPaths=/b\n", "x", NULL), 0);
        assert_int_equal(c.n_ro_paths, 1);
        assert_string_equal(c.ro_paths[0], "/b");
        assert_null(c.ro_paths[1]);
        config_done(&c);

        expect_error("[Sandbox]\nReadOnlyPaths=/opt relative\n",
                     "toolsd.conf:2: [Sandbox] ReadOnlyPaths=: 'relative' is not an absolute path");
        expect_error("[Sandbox]\nReadOnlyPaths=/opt/../etc\n",
                     "toolsd.conf:2: [Sandbox] ReadOnlyPaths=: '/opt/../etc' has a '..' component");
        expect_error("[Sandbox]\nReadOnlyPaths=/opt/..\n",
                     "toolsd.conf:2: [Sandbox] ReadOnlyPaths=: '/opt/..' has a '..' component");
        expect_error("[Sandbox]\nReadOnlyPaths=/\n",
                     "toolsd.conf:2: [Sandbox] ReadOnlyPaths=: '/' would expose the host");

        static const char *const refused[] = {
                "/", "//", "/.", "/etc", "//etc/", "/./etc/.", "/home", "/root", "/run", "/var",
                "/proc", "/proc/1/root", "/sys", "/sys/kernel", "/dev", "/dev/shm", "/tmp", "/tmp/x",
                "/var/tmp", "/var/run", "/var/run/dbus", "/run/user", "/run/user/1000",
                "/run/toolsd", "/run/toolsd/io.toolsd",
        };
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
                char text[128], want[192];
                snprintf(text, sizeof text, "[Sandbox]\nReadOnlyPaths=%s\n", refused[i]);
                snprintf(want, sizeof want, "toolsd.conf:2: [Sandbox] ReadOnlyPaths=: '%s' would expose the host",
                         refused[i]);
                expect_error(text, want);
        }
        static const char *const allowed[] = {
                "/etc/ssl", "/home/shared", "/root/x", "/run/foo", "/var/lib/x", "/procfs", "/system",
                "/devel", "/tmpx", "/run/users", "/run/toolsd2", "/opt/..x", "/opt/x..", "/...",
        };
        for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
                char text[128];
                snprintf(text, sizeof text, "[Sandbox]\nReadOnlyPaths=%s\n", allowed[i]);
                assert_int_equal(load(&c, text, NULL), 0);
                assert_string_equal(c.ro_paths[0], allowed[i]);
                config_done(&c);
        }
}

static void test_ro_paths_max(void **state) {
        struct toolsd_config c;
        char text[8192];
        size_t n = 0;

        n += (size_t) snprintf(text + n, sizeof text - n, "[Sandbox]\n");
        for (int i = 0; i < TOOLSD_CONFIG_RO_PATHS_MAX; i++)
                n += (size_t) snprintf(text + n, sizeof text - n, "ReadOnlyPaths=/opt/p%d\n", i);
        assert_int_equal(load(&c, text, NULL), 0);
        assert_int_equal(c.n_ro_paths, TOOLSD_CONFIG_RO_PATHS_MAX);
        assert_string_equal(c.ro_paths[63], "/opt/p63");
        assert_null(c.ro_paths[64]);
        /* duplicates do not count */
        assert_int_equal(config_load_string(&c, "[Sandbox]\nReadOnlyPaths=/opt/p0 /opt/p1\n", "x", NULL), 0);
        assert_int_equal(c.n_ro_paths, TOOLSD_CONFIG_RO_PATHS_MAX);
        config_done(&c);

        snprintf(text + n, sizeof text - n, "ReadOnlyPaths=/opt/one-too-many\n");
        expect_error(text, "toolsd.conf:66: [Sandbox] ReadOnlyPaths=: more than 64 paths");
}

static void test_all_or_nothing(void **state) {
        struct toolsd_config c;
        char *error = NULL;

        assert_int_equal(load(&c, "[Sandbox]\nReadOnlyPaths=/opt/a\nBubblewrapPath=/x\n", NULL), 0);
        assert_int_equal(config_load_string(&c,
                "[Sandbox]\nReadOnlyPaths=\nReadOnlyPaths=/opt/b\nBubblewrapPath=/y\nAllowNetwork=no\n"
                "[Limits]\nMaxJsonDepth=2\nMaxJsonDepth=x\n", "other.conf", &error), -EINVAL);
        assert_string_equal(error, "other.conf:8: [Limits] MaxJsonDepth=: 'x' is not a number");
        free(error);
        assert_int_equal(c.n_ro_paths, 1);
        assert_string_equal(c.ro_paths[0], "/opt/a");
        assert_string_equal(c.bwrap_path, "/x");
        assert_true(c.allow_network);
        assert_int_equal(c.max_json_depth, 64);
        /* ret_error may be NULL */
        assert_int_equal(config_load_string(&c, "[Foo]\n", NULL, NULL), -EINVAL);
        assert_int_equal(config_validate(&c, NULL), 0);
        config_done(&c);
}

static void test_validate(void **state) {
        static const struct {
                const char *text;
                const char *want;
        } cases[] = {
                { "[Calls]\nDefaultTimeoutSec=601\n", "DefaultTimeoutSec=601 is greater than MaxTimeoutSec=600" },
                { "[Calls]\nMaxTimeoutSec=60\n", "DefaultTimeoutSec=120 is greater than MaxTimeoutSec=60" },
                { "[Limits]\nMaxConnections=100\n", "MaxConnectionsPerUser=1024 is greater than MaxConnections=100" },
                { "[Limits]\nMaxMessageSize=512K\n", "MaxStringSize=1M is greater than MaxMessageSize=512K" },
                { "[Calls]\nMaxOutputSize=32K\n", "ResultOutputSize=64K is greater than MaxOutputSize=32K" },
                { "[Calls]\nMaxOutputSize=1025\n", "ResultOutputSize=64K is greater than MaxOutputSize=1025" },
        };
        struct toolsd_config c;
        char *error;

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                error = NULL;
                assert_int_equal(load(&c, cases[i].text, NULL), 0);
                assert_int_equal(config_validate(&c, &error), -EINVAL);
                assert_string_equal(error, cases[i].want);
                free(error);
                config_done(&c);
        }
        /* equal is fine */
        assert_int_equal(load(&c, "[Calls]\nDefaultTimeoutSec=600\n[Limits]\nMaxConnectionsPerUser=4096\n"
                                  "MaxStringSize=16M\n", NULL), 0);
        assert_int_equal(config_validate(&c, NULL), 0);
        config_done(&c);
        /* a struct nobody initialised */
        memset(&c, 0, sizeof c);
        error = NULL;
        assert_int_equal(config_validate(&c, &error), -EINVAL);
        assert_string_equal(error, "configuration is not initialised");
        free(error);
}

static void test_parse_size(void **state) {
        uint64_t v = 42;

        assert_int_equal(parse_size("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_size("512", &v), 0);
        assert_int_equal(v, 512);
        assert_int_equal(parse_size("64K", &v), 0);
        assert_int_equal(v, 64 * KIB);
        assert_int_equal(parse_size("16M", &v), 0);
        assert_int_equal(v, 16 * MIB);
        assert_int_equal(parse_size("1G", &v), 0);
        assert_int_equal(v, GIB);
        assert_int_equal(parse_size("2T", &v), 0);
        assert_int_equal(v, 2 * TIB);
        assert_int_equal(parse_size("0016M", &v), 0);
        assert_int_equal(v, 16 * MIB);
        assert_int_equal(parse_size("18446744073709551615", &v), 0);
        assert_int_equal(v, UINT64_MAX);
        assert_int_equal(parse_size("16777215T", &v), 0);
        assert_int_equal(v, UINT64_C(16777215) << 40);

        v = 42;
        assert_int_equal(parse_size("18446744073709551616", &v), -ERANGE);
        assert_int_equal(parse_size("16777216T", &v), -ERANGE);
        assert_int_equal(parse_size("99999999999999999999999K", &v), -ERANGE);
        static const char *const bad[] = {
                "", "K", "M", "-1", "+1", " 1", "1 ", "1 K", "1k", "1KB", "1KK", "1P", "1.5G",
                "0x10", "1e3", "\t", "1\n", "abc", "1K2",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                if (parse_size(bad[i], &v) != -EINVAL)
                        fail_msg("parse_size(\"%s\") was accepted", bad[i]);
        assert_int_equal(parse_size(NULL, &v), -EINVAL);
        assert_int_equal(v, 42); /* untouched on failure */
}

static void test_parse_uint(void **state) {
        uint64_t v = 42;

        assert_int_equal(parse_uint("0", 0, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_uint("007", 10, &v), 0);
        assert_int_equal(v, 7);
        assert_int_equal(parse_uint("10", 10, &v), 0);
        assert_int_equal(v, 10);
        assert_int_equal(parse_uint("18446744073709551615", UINT64_MAX, &v), 0);
        assert_int_equal(v, UINT64_MAX);

        v = 42;
        assert_int_equal(parse_uint("11", 10, &v), -ERANGE);
        assert_int_equal(parse_uint("18446744073709551616", UINT64_MAX, &v), -ERANGE);
        assert_int_equal(parse_uint("99999999999999999999999", UINT64_MAX, &v), -ERANGE);
        static const char *const bad[] = {
                "", "-1", "-0", "+1", " 1", "1 ", "1K", "0x1", "1.0", "1e2", "one", "\t", "99999999999999999999999x",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                if (parse_uint(bad[i], UINT64_MAX, &v) != -EINVAL)
                        fail_msg("parse_uint(\"%s\") was accepted", bad[i]);
        assert_int_equal(parse_uint(NULL, 1, &v), -EINVAL);
        assert_int_equal(v, 42);
}

static void test_parse_bool(void **state) {
        static const char *const yes[] = { "1", "yes", "true", "on", "YES", "True", "ON" };
        static const char *const no[] = { "0", "no", "false", "off", "NO", "False", "Off" };
        static const char *const bad[] = { "", "y", "n", "2", "yes ", " no", "yess", "enable", "-1", "00" };
        bool b;

        for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
                b = false;
                assert_int_equal(parse_bool(yes[i], &b), 0);
                assert_true(b);
        }
        for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
                b = true;
                assert_int_equal(parse_bool(no[i], &b), 0);
                assert_false(b);
        }
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                b = true;
                if (parse_bool(bad[i], &b) != -EINVAL)
                        fail_msg("parse_bool(\"%s\") was accepted", bad[i]);
                assert_true(b);
        }
        assert_int_equal(parse_bool(NULL, &b), -EINVAL);
}

static void write_file(const char *path, const char *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}

static void test_files(void **state) {
        char dir[] = "/tmp/test-config-XXXXXX", path[64], want[128];
        struct toolsd_config c;
        char *error = NULL;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(config_init_defaults(&c), 0);

        snprintf(path, sizeof path, "%s/missing.conf", dir);
        assert_int_equal(config_load_file(&c, path, false, &error), 0);
        assert_null(error);
        assert_int_equal(config_load_file(&c, path, true, &error), -ENOENT);
        snprintf(want, sizeof want, "%s: No such file or directory", path);
        assert_string_equal(error, want);
        free(error);
        error = NULL;

        assert_int_equal(config_load_file(&c, dir, false, &error), -EINVAL);
        snprintf(want, sizeof want, "%s: not a regular file", dir);
        assert_string_equal(error, want);
        free(error);
        error = NULL;

        snprintf(path, sizeof path, "%s/good.conf", dir);
        write_file(path, "[Limits]\nMaxJsonDepth=9\n", 24);
        assert_int_equal(config_load_file(&c, path, true, &error), 0);
        assert_int_equal(c.max_json_depth, 9);

        write_file(path, "[Limits]\nMaxJsonDepth=8\nFoo=1\n", 30);
        assert_int_equal(config_load_file(&c, path, true, &error), -EINVAL);
        snprintf(want, sizeof want, "%s:3: [Limits] Foo=: unknown key", path);
        assert_string_equal(error, want);
        free(error);
        error = NULL;
        assert_int_equal(c.max_json_depth, 9);

        /* a NUL would make inih ignore the rest of the file */
        write_file(path, "[Limits]\nMaxJsonDepth=7\n\0Foo=1\n", 31);
        assert_int_equal(config_load_file(&c, path, true, &error), -EINVAL);
        snprintf(want, sizeof want, "%s: contains a NUL byte", path);
        assert_string_equal(error, want);
        free(error);
        error = NULL;

        char *big = malloc(TOOLSD_CONFIG_FILE_MAX + 1);
        assert_non_null(big);
        memset(big, '\n', TOOLSD_CONFIG_FILE_MAX + 1);
        write_file(path, big, TOOLSD_CONFIG_FILE_MAX);
        assert_int_equal(config_load_file(&c, path, true, NULL), 0);
        write_file(path, big, TOOLSD_CONFIG_FILE_MAX + 1);
        assert_int_equal(config_load_file(&c, path, true, &error), -EFBIG);
        snprintf(want, sizeof want, "%s: larger than 1048576 bytes", path);
        assert_string_equal(error, want);
        free(error);
        free(big);
        assert_int_equal(c.max_json_depth, 9);

        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
        config_done(&c);
}

/* The shipped file with every "#Key=" uncommented must give the defaults,
 * so the file and the code cannot drift apart. */
static void test_shipped_file(void **state) {
        const char *path = SRCDIR "/etc/toolsd/toolsd.conf";
        struct toolsd_config c;
        char *text, *out, *error = NULL;
        unsigned keys = 0;
        FILE *f;
        long n;

        f = fopen(path, "re");
        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        n = ftell(f);
        assert_true(n > 0);
        rewind(f);
        text = calloc((size_t) n + 1, 1);
        out = calloc((size_t) n + 1, 1);
        assert_non_null(text);
        assert_non_null(out);
        assert_int_equal(fread(text, 1, (size_t) n, f), (size_t) n);
        fclose(f);

        /* as shipped: all defaults */
        assert_int_equal(load(&c, text, &error), 0);
        check_defaults(&c);
        config_done(&c);

        char *o = out;
        for (char *l = text; *l;) {
                size_t len = strcspn(l, "\n");
                if (l[0] == '#' && l[1] >= 'A' && l[1] <= 'Z' && memchr(l, '=', len)) {
                        l++, len--;
                        keys++;
                }
                memcpy(o, l, len);
                o += len;
                l += len;
                if (*l == '\n')
                        *o++ = *l++;
        }
        assert_int_equal(keys, 32); /* every key of toolsd.conf(5) */
        assert_int_equal(load(&c, out, &error), 0);
        if (error)
                fail_msg("%s", error);
        check_defaults(&c);
        assert_int_equal(config_validate(&c, NULL), 0);
        config_done(&c);
        free(text);
        free(out);
}

static void test_environment(void **state) {
        static const char *const tighten[] = { "1", "yes", "TRUE", "on", "2", "maybe", " 1" };
        static const char *const keep[] = { "0", "no", "false", "off", "" };
        struct toolsd_config c;

        assert_int_equal(config_init_defaults(&c), 0);
        config_apply_environment(&c, NULL);
        assert_int_equal(c.require_sandbox, REQUIRE_SANDBOX_NO);
        assert_false(config_unsandboxed_allowed(&c)); /* off by default */
        c.allow_unsandboxed = true;
        assert_true(config_unsandboxed_allowed(&c));
        for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
                config_apply_environment(&c, keep[i]);
                assert_int_equal(c.require_sandbox, REQUIRE_SANDBOX_NO);
        }
        for (size_t i = 0; i < sizeof tighten / sizeof tighten[0]; i++) {
                c.require_sandbox = REQUIRE_SANDBOX_NO;
                config_apply_environment(&c, tighten[i]);
                assert_int_equal(c.require_sandbox, REQUIRE_SANDBOX_YES);
        }
        /* it never loosens the file */
        config_apply_environment(&c, "0");
        assert_int_equal(c.require_sandbox, REQUIRE_SANDBOX_YES);
        assert_false(config_unsandboxed_allowed(&c));
        c.require_sandbox = REQUIRE_SANDBOX_NO;
        c.allow_unsandboxed = false;
        assert_false(config_unsandboxed_allowed(&c));
        config_done(&c);
}

static void test_listen_path(void **state) {
        struct toolsd_config c;
        char *p = NULL, dir[128];

        assert_int_equal(config_init_defaults(&c), 0);
        assert_int_equal(config_listen_path(&c, false, NULL, &p), 0);
        assert_string_equal(p, "/run/toolsd/io.toolsd");
        free(p);
        assert_int_equal(config_listen_path(&c, true, "/run/user/1000", &p), 0);
        assert_string_equal(p, "/run/user/1000/toolsd/io.toolsd");
        free(p);
        p = NULL;
        assert_int_equal(config_listen_path(&c, true, NULL, &p), -ENXIO);
        assert_int_equal(config_listen_path(&c, true, "", &p), -ENXIO);
        assert_int_equal(config_listen_path(&c, true, "run/user", &p), -ENXIO);
        snprintf(dir, sizeof dir, "/%0100d", 0);
        assert_int_equal(config_listen_path(&c, true, dir, &p), -ENAMETOOLONG);
        assert_null(p);

        assert_int_equal(config_load_string(&c, "[Daemon]\nListenPath=/srv/t.sock\n", "x", NULL), 0);
        assert_int_equal(config_listen_path(&c, true, NULL, &p), 0);
        assert_string_equal(p, "/srv/t.sock");
        free(p);
        config_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_empty_text),
                cmocka_unit_test(test_every_key),
                cmocka_unit_test(test_last_wins_and_syntax),
                cmocka_unit_test(test_syntax_errors),
                cmocka_unit_test(test_long_lines),
                cmocka_unit_test(test_value_errors),
                cmocka_unit_test(test_ro_paths),
                cmocka_unit_test(test_ro_paths_max),
                cmocka_unit_test(test_all_or_nothing),
                cmocka_unit_test(test_validate),
                cmocka_unit_test(test_parse_size),
                cmocka_unit_test(test_parse_uint),
                cmocka_unit_test(test_parse_bool),
                cmocka_unit_test(test_files),
                cmocka_unit_test(test_shipped_file),
                cmocka_unit_test(test_environment),
                cmocka_unit_test(test_listen_path),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
