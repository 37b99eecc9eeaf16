/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * toolsd.conf: the key table, the value parsers and the inih glue.
 *
 * Runs in the master (root) at start-up, before anything is accepted, and in
 * a broker (the peer's uid, no capabilities). The input is the
 * administrator's file, never a peer's bytes; the parser is strict anyway
 * (unknown section or key, bad or out-of-range value, over-long line: error)
 * because a typo in a security policy must not silently become a default.
 * No logging: errors are returned as "FILE:LINE: [Section] Key=: reason".
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <unistd.h>

#include <ini.h>

#include "config-paths.h"
#include "fileio.h"
#include "macro.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)
#define TIB (GIB * 1024)

/* sun_path less its NUL */
#define SOCKET_PATH_MAX (sizeof_member(struct sockaddr_un, sun_path) - 1)
#define sizeof_member(type, m) sizeof(((type *) NULL)->m)

enum key_kind {
        KEY_PATH,               /* absolute path, malloc'd */
        KEY_NUMBER,             /* decimal in [min, max] */
        KEY_SIZE,               /* size with K/M/G/T in [min, max] */
        KEY_SECONDS_MS,         /* decimal seconds in [min, max], stored as ms */
        KEY_BOOL,
        KEY_REQUIRE_SANDBOX,
        KEY_PATH_LIST,          /* ReadOnlyPaths=: appends; empty resets */
};

/* One row per key: this table is the single source of the defaults, so
 * config_init_defaults() and "Key=" (empty: restore the default) agree. */
struct config_key {
        const char *section;
        const char *name;
        enum key_kind kind;
        size_t offset;
        size_t size;
        uint64_t min, max;      /* numbers; for paths max is the length */
        uint64_t def;           /* numbers and booleans */
        const char *def_str;    /* paths */
};

#define FIELD(f) offsetof(struct toolsd_config, f), sizeof_member(struct toolsd_config, f)

static const struct config_key config_keys[] = {
        { "Daemon", "ListenPath", KEY_PATH, FIELD(listen_path), 0, SOCKET_PATH_MAX, 0, NULL },
        { "Daemon", "ProfilesDirectory", KEY_PATH, FIELD(profiles_dir), 0, PATH_MAX - 1, 0, TOOLSD_PROFILES_DIR },
        { "Daemon", "SkillsDirectory", KEY_PATH, FIELD(skills_dir), 0, PATH_MAX - 1, 0, TOOLSD_SKILLS_DIR },
        { "Daemon", "SessionIdleTimeoutSec", KEY_NUMBER, FIELD(session_idle_timeout_sec), 1, 7 * 86400, 3600, NULL },
        { "Daemon", "BrokerIdleTimeoutSec", KEY_NUMBER, FIELD(broker_idle_timeout_sec), 1, 86400, 60, NULL },

        { "Limits", "MaxMessageSize", KEY_SIZE, FIELD(max_message_bytes), 4 * KIB, GIB, 16 * MIB, NULL },
        { "Limits", "MaxJsonDepth", KEY_NUMBER, FIELD(max_json_depth), 1, 1024, 64, NULL },
        { "Limits", "MaxConnections", KEY_NUMBER, FIELD(max_connections), 1, 1048576, 4096, NULL },
        { "Limits", "MaxConnectionsPerUser", KEY_NUMBER, FIELD(max_connections_per_uid), 1, 1048576, 1024, NULL },
        { "Limits", "MaxSessionsPerUser", KEY_NUMBER, FIELD(max_sessions_per_uid), 1, 1048576, 16384, NULL },
        { "Limits", "MaxCallsPerSession", KEY_NUMBER, FIELD(max_calls_per_session), 1, 1024, 16, NULL },
        { "Limits", "MaxStringSize", KEY_SIZE, FIELD(max_string_bytes), KIB, GIB, MIB, NULL },

        { "Calls", "DefaultTimeoutSec", KEY_SECONDS_MS, FIELD(default_timeout_ms), 1, 86400, 120, NULL },
        { "Calls", "MaxTimeoutSec", KEY_SECONDS_MS, FIELD(max_timeout_ms), 1, 86400, 600, NULL },
        { "Calls", "KillGraceMSec", KEY_NUMBER, FIELD(kill_grace_ms), 0, 60000, 200, NULL },
        { "Calls", "ResultOutputSize", KEY_SIZE, FIELD(result_output_bytes), KIB, GIB, 64 * KIB, NULL },
        { "Calls", "MaxOutputSize", KEY_SIZE, FIELD(max_output_bytes), KIB, TIB, 64 * MIB, NULL },
        { "Calls", "LimitCPU", KEY_NUMBER, FIELD(cpu_seconds), 1, 7 * 86400, 600, NULL },
        { "Calls", "LimitAS", KEY_SIZE, FIELD(memory_bytes), 16 * MIB, 16 * TIB, 4 * GIB, NULL },
        { "Calls", "LimitFSIZE", KEY_SIZE, FIELD(file_size_bytes), 4 * KIB, 16 * TIB, GIB, NULL },
        { "Calls", "LimitNPROC", KEY_NUMBER, FIELD(processes), 1, 4194304, 512, NULL },
        { "Calls", "LimitNOFILE", KEY_NUMBER, FIELD(open_files), 16, 1048576, 1024, NULL },
        { "Calls", "MaxArtifactSize", KEY_SIZE, FIELD(max_write_bytes), KIB, TIB, 16 * MIB, NULL },

        { "Sandbox", "RequireSandbox", KEY_REQUIRE_SANDBOX, FIELD(require_sandbox), 0, 0, REQUIRE_SANDBOX_NO, NULL },
        { "Sandbox", "AllowUnsandboxed", KEY_BOOL, FIELD(allow_unsandboxed), 0, 0, false, NULL },
        { "Sandbox", "AllowNetwork", KEY_BOOL, FIELD(allow_network), 0, 0, true, NULL },
        { "Sandbox", "BubblewrapPath", KEY_PATH, FIELD(bwrap_path), 0, PATH_MAX - 1, 0, "/usr/bin/bwrap" },
        { "Sandbox", "ReadOnlyPaths", KEY_PATH_LIST, FIELD(ro_paths), 0, 0, 0, NULL },

        { "Network", "HttpAllowLoopback", KEY_BOOL, FIELD(http_allow_loopback), 0, 0, false, NULL },
        { "Network", "HttpAllowPrivate", KEY_BOOL, FIELD(http_allow_private), 0, 0, false, NULL },
        { "Network", "HttpMaxRedirects", KEY_NUMBER, FIELD(http_max_redirects), 0, 20, 5, NULL },
        { "Network", "HttpMaxBytes", KEY_SIZE, FIELD(http_max_bytes), KIB, GIB, 10 * MIB, NULL },
};

static const char *const config_sections[] = { "Daemon", "Limits", "Calls", "Sandbox", "Network" };

/* ---- value parsers ------------------------------------------------------ */

/* Exactly n decimal digits at s; no sign, no space (inih trimmed already). */
static int parse_digits(const char *s, size_t n, uint64_t *ret) {
        uint64_t v = 0;

        if (n == 0)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                unsigned d;

                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                d = (unsigned) (s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int parse_uint(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r;

        if (!s)
                return -EINVAL;
        /* syntax before magnitude: "99999999999999999999x" is not a number */
        if (s[strspn(s, "0123456789")] != '\0')
                return -EINVAL;
        r = parse_digits(s, strlen(s), &v);
        if (r < 0)
                return r;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        static const char suffixes[] = "KMGT";
        unsigned shift = 0;
        const char *p;
        uint64_t v;
        size_t n;
        int r;

        if (!s)
                return -EINVAL;
        n = strspn(s, "0123456789");
        if (s[n] != '\0') {
                p = strchr(suffixes, s[n]);
                if (!p || s[n + 1] != '\0')
                        return -EINVAL;
                shift = 10 * (unsigned) (p - suffixes + 1);
        }
        r = parse_digits(s, n, &v);
        if (r < 0)
                return r;
        if (v > (UINT64_MAX >> shift))
                return -ERANGE;
        *ret = v << shift;
        return 0;
}

int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

/* "16M" for 16 MiB: the largest suffix that divides exactly. */
static const char *format_size(uint64_t v, char buf[static 32]) {
        static const char suffixes[] = "TGMK";

        for (unsigned i = 0; v > 0 && i < 4; i++) {
                unsigned shift = 10 * (4 - i);

                if ((v & ((UINT64_C(1) << shift) - 1)) == 0) {
                        snprintf(buf, 32, "%" PRIu64 "%c", v >> shift, suffixes[i]);
                        return buf;
                }
        }
        snprintf(buf, 32, "%" PRIu64, v);
        return buf;
}

/* ---- ReadOnlyPaths= ----------------------------------------------------- */

/* Refused with everything below them: the kernel's views of the host
 * (/proc/1/root is the host's /), the toolsd socket and users' runtime
 * directories (a read-only bind does not stop connect() on a socket), and
 * world-writable trees where anyone can plant a symlink that bwrap would
 * follow. */
static const char *const ro_refused_trees[] = {
        "/proc", "/sys", "/dev", "/run/toolsd", "/run/user", "/var/run", "/tmp", "/var/tmp",
};
/* Refused as a whole, allowed below: the host's root, its configuration and
 * secrets, users' homes, every runtime socket. */
static const char *const ro_refused_exact[] = {
        "/", "/etc", "/home", "/root", "/run", "/var",
};

static bool path_is_refused(const char *p) {
        for (size_t i = 0; i < ELEMENTSOF(ro_refused_exact); i++)
                if (strcmp(p, ro_refused_exact[i]) == 0)
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(ro_refused_trees); i++) {
                size_t n = strlen(ro_refused_trees[i]);

                if (strncmp(p, ro_refused_trees[i], n) == 0 && (p[n] == '\0' || p[n] == '/'))
                        return true;
        }
        return false;
}

/* Collapses "//" and "/./", drops a trailing "/", refuses "..": what is
 * compared against the refused list must be what bwrap will bind. (Symlinks
 * are the caller's to resolve at bind time; this is pure.) */
static int ro_path_normalize(const char *p, char **ret, const char **ret_reason) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0;

        if (p[0] != '/') {
                *ret_reason = "is not an absolute path";
                return -EINVAL;
        }
        out = malloc(strlen(p) + 2);
        if (!out)
                return -ENOMEM;
        for (const char *c = p; *c;) {
                size_t len;

                c += strspn(c, "/");
                len = strcspn(c, "/");
                if (len == 2 && c[0] == '.' && c[1] == '.') {
                        *ret_reason = "has a '..' component";
                        return -EINVAL;
                }
                if (len > 0 && !(len == 1 && c[0] == '.')) {
                        out[n++] = '/';
                        memcpy(out + n, c, len);
                        n += len;
                }
                c += len;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = '\0';
        if (path_is_refused(out)) {
                *ret_reason = "would expose the host";
                return -EINVAL;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* ---- fields ------------------------------------------------------------- */

static void *key_field(struct toolsd_config *c, const struct config_key *k) {
        return (uint8_t *) c + k->offset;
}

static void key_store_number(struct toolsd_config *c, const struct config_key *k, uint64_t v) {
        if (k->size == sizeof(uint32_t)) {
                uint32_t v32 = (uint32_t) v; /* the table's max keeps it in range */
                memcpy(key_field(c, k), &v32, sizeof v32);
        } else
                memcpy(key_field(c, k), &v, sizeof v);
}

static int key_store_path(struct toolsd_config *c, const struct config_key *k, const char *v) {
        char **f = key_field(c, k);
        char *copy = NULL;

        if (v) {
                copy = strdup(v);
                if (!copy)
                        return -ENOMEM;
        }
        free(*f);
        *f = copy;
        return 0;
}

static int ro_paths_reset(struct toolsd_config *c) {
        char **empty = calloc(1, sizeof(char *));

        if (!empty)
                return -ENOMEM;
        strv_free(c->ro_paths);
        c->ro_paths = empty;
        c->n_ro_paths = 0;
        return 0;
}

static int key_set_default(struct toolsd_config *c, const struct config_key *k) {
        switch (k->kind) {
        case KEY_PATH:
                return key_store_path(c, k, k->def_str);
        case KEY_NUMBER:
        case KEY_SIZE:
                key_store_number(c, k, k->def);
                return 0;
        case KEY_SECONDS_MS:
                key_store_number(c, k, k->def * 1000);
                return 0;
        case KEY_BOOL:
                *(bool *) key_field(c, k) = k->def;
                return 0;
        case KEY_REQUIRE_SANDBOX:
                c->require_sandbox = (enum require_sandbox) k->def;
                return 0;
        case KEY_PATH_LIST:
                return ro_paths_reset(c);
        default:
                abort();
        }
}

int config_init_defaults(struct toolsd_config *c) {
        *c = (struct toolsd_config) {};
        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
                int r = key_set_default(c, &config_keys[i]);
                if (r < 0) {
                        config_done(c);
                        return r;
                }
        }
        return 0;
}

void config_done(struct toolsd_config *c) {
        if (!c)
                return;
        free(c->listen_path);
        free(c->profiles_dir);
        free(c->skills_dir);
        free(c->bwrap_path);
        strv_free(c->ro_paths);
        c->listen_path = c->profiles_dir = c->skills_dir = c->bwrap_path = NULL;
        c->ro_paths = NULL;
        c->n_ro_paths = 0;
}

static int strdup_or_null(const char *s, char **ret) {
        *ret = NULL;
        if (s && !(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

/* Deep copy, so a load can fail without leaving half a file applied. */
static int config_copy(struct toolsd_config *dst, const struct toolsd_config *src) {
        size_t n = src->ro_paths ? src->n_ro_paths : 0;

        *dst = *src;
        dst->listen_path = dst->profiles_dir = dst->skills_dir = dst->bwrap_path = NULL;
        dst->ro_paths = NULL;
        dst->n_ro_paths = 0;
        if (strdup_or_null(src->listen_path, &dst->listen_path) < 0 ||
            strdup_or_null(src->profiles_dir, &dst->profiles_dir) < 0 ||
            strdup_or_null(src->skills_dir, &dst->skills_dir) < 0 ||
            strdup_or_null(src->bwrap_path, &dst->bwrap_path) < 0 ||
            !(dst->ro_paths = calloc(n + 1, sizeof(char *))))
                goto oom;
        for (size_t i = 0; i < n; i++) {
                if (!(dst->ro_paths[i] = strdup(src->ro_paths[i])))
                        goto oom;
                dst->n_ro_paths++;
        }
        return 0;
oom:
        config_done(dst);
        return -ENOMEM;
}

/* ---- the parser --------------------------------------------------------- */

struct parse_state {
        struct toolsd_config *config;   /* a copy, committed only on success */
        const char *name;               /* for messages */
        const char *next;               /* the reader's position in the text */
        unsigned line;                  /* the line inih is working on */
        int r;                          /* first failure; stops the reader */
        char *error;
};

/* Records the first failure. section NULL: a line-level message. Returns 0,
 * inih's "handler failed". */
_printf_(4, 5) static int parse_fail(struct parse_state *st, const char *section, const char *key,
                                      const char *fmt, ...) {
        _cleanup_free_ char *reason = NULL;
        va_list ap;
        int r;

        if (st->r < 0)
                return 0;
        va_start(ap, fmt);
        r = vasprintf(&reason, fmt, ap);
        va_end(ap);
        if (r < 0) {
                st->r = -ENOMEM;
                return 0;
        }
        if (section)
                r = asprintf(&st->error, "%s:%u: [%s] %s=: %s", st->name, st->line, section, key, reason);
        else
                r = asprintf(&st->error, "%s:%u: %s", st->name, st->line, reason);
        if (r < 0) {
                st->error = NULL;
                st->r = -ENOMEM;
                return 0;
        }
        st->r = -EINVAL;
        return 0;
}

static int parse_oom(struct parse_state *st) {
        if (st->r == 0)
                st->r = -ENOMEM;
        return 0;
}

static bool section_is_known(const char *s, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(config_sections); i++)
                if (strlen(config_sections[i]) == n && memcmp(config_sections[i], s, n) == 0)
                        return true;
        return false;
}

/* Where inih's line ends: at a ';' after whitespace (an inline comment). */
static size_t line_content_length(const char *l) {
        size_t n = 0;

        for (bool was_space = false; l[n]; n++) {
                if (was_space && l[n] == ';')
                        break;
                was_space = isspace((unsigned char) l[n]);
        }
        while (n > 0 && isspace((unsigned char) l[n - 1]))
                n--;
        return n;
}

/* The checks inih cannot report: an empty "[Bogus]" never reaches the
 * handler, "[Limits] junk" would be taken as [Limits], "Key:Value" as
 * Key=Value. l is trimmed. Failures land in st. */
static void line_check(struct parse_state *st, const char *l) {
        size_t n;

        if (*l == '\0' || *l == '#' || *l == ';')
                return;
        n = line_content_length(l);
        if (*l == '[') {
                if (n < 2 || l[n - 1] != ']' || memchr(l + 1, ']', n - 2) || memchr(l + 1, '[', n - 2))
                        parse_fail(st, NULL, NULL, "expected [Section]");
                else if (!section_is_known(l + 1, n - 2))
                        parse_fail(st, NULL, NULL, "unknown section [%.*s]", (int) (n - 2), l + 1);
                return;
        }
        if (l[strcspn(l, "=:")] != '=' || strcspn(l, "=") >= n)
                parse_fail(st, NULL, NULL, "expected Key=Value, [Section] or a comment");
}

/* inih's ini_reader: hands inih one line, trimmed, or NULL to stop. Debian's
 * inih (r55) has a fixed buffer of num bytes and parses the rest of a
 * longer line as a line of its own; refusing such lines here is what stops
 * "ListenPath=<198 bytes>Key=value" from setting Key. Stripping leading
 * whitespace also turns off inih's multi-line continuations, which would
 * make an indented line a second assignment of the previous key. */
static char *config_reader(char *buf, int num, void *userdata) {
        struct parse_state *st = userdata;
        const char *start, *end;
        size_t n;

        if (st->r < 0 || *st->next == '\0')
                return NULL;
        start = st->next;
        end = strchrnul(start, '\n');
        st->next = *end ? end + 1 : end;
        st->line++;
        if (st->line == 1 && strncmp(start, "\xEF\xBB\xBF", 3) == 0)
                start += 3;
        while (start < end && isspace((unsigned char) *start))
                start++;
        while (end > start && isspace((unsigned char) end[-1]))
                end--;
        n = (size_t) (end - start);
        /* num - 2: the limit inih documents, room for "\n" and NUL */
        if (num < 2 || n > (size_t) num - 2) {
                parse_fail(st, NULL, NULL, "line is longer than %d bytes", MAX(num - 2, 0));
                return NULL;
        }
        memcpy(buf, start, n);
        buf[n] = '\0';
        line_check(st, buf);
        return st->r < 0 ? NULL : buf;
}

static const struct config_key *key_find(const char *section, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++)
                if (strcmp(config_keys[i].section, section) == 0 && strcmp(config_keys[i].name, name) == 0)
                        return &config_keys[i];
        return NULL;
}

static int apply_path(struct parse_state *st, const struct config_key *k, const char *v) {
        if (v[0] != '/')
                return parse_fail(st, k->section, k->name, "'%s' is not an absolute path", v);
        if (strlen(v) > k->max)
                return parse_fail(st, k->section, k->name, "'%s' is longer than %" PRIu64 " bytes", v, k->max);
        if (key_store_path(st->config, k, v) < 0)
                return parse_oom(st);
        return 1;
}

static int apply_number(struct parse_state *st, const struct config_key *k, const char *v) {
        char lo[32], hi[32];
        uint64_t n;
        int r;

        if (k->kind == KEY_SIZE)
                r = parse_size(v, &n);
        else
                r = parse_uint(v, UINT64_MAX, &n);
        if (r == -EINVAL)
                return parse_fail(st, k->section, k->name, "'%s' is not %s", v,
                                  k->kind == KEY_SIZE ? "a size" : "a number");
        if (r < 0 || n < k->min || n > k->max) {
                if (k->kind == KEY_SIZE)
                        return parse_fail(st, k->section, k->name, "'%s' is out of range %s..%s", v,
                                          format_size(k->min, lo), format_size(k->max, hi));
                return parse_fail(st, k->section, k->name, "'%s' is out of range %" PRIu64 "..%" PRIu64, v,
                                  k->min, k->max);
        }
        key_store_number(st->config, k, k->kind == KEY_SECONDS_MS ? n * 1000 : n);
        return 1;
}

static int apply_bool(struct parse_state *st, const struct config_key *k, const char *v) {
        bool b;

        if (parse_bool(v, &b) < 0)
                return parse_fail(st, k->section, k->name, "'%s' is not a boolean", v);
        if (k->kind == KEY_REQUIRE_SANDBOX)
                st->config->require_sandbox = b ? REQUIRE_SANDBOX_YES : REQUIRE_SANDBOX_NO;
        else
                *(bool *) key_field(st->config, k) = b;
        return 1;
}

/* Takes p. -E2BIG past TOOLSD_CONFIG_RO_PATHS_MAX; a duplicate is dropped. */
static int ro_paths_append(struct toolsd_config *c, char *p) {
        char **v;

        for (size_t i = 0; i < c->n_ro_paths; i++)
                if (strcmp(c->ro_paths[i], p) == 0) {
                        free(p);
                        return 0;
                }
        if (c->n_ro_paths >= TOOLSD_CONFIG_RO_PATHS_MAX) {
                free(p);
                return -E2BIG;
        }
        v = reallocarray(c->ro_paths, c->n_ro_paths + 2, sizeof(char *));
        if (!v) {
                free(p);
                return -ENOMEM;
        }
        v[c->n_ro_paths++] = p;
        v[c->n_ro_paths] = NULL;
        c->ro_paths = v;
        return 0;
}

/* Space-separated, appending across lines (systemd style); no quoting, so a
 * path with whitespace cannot be listed. */
static int apply_path_list(struct parse_state *st, const struct config_key *k, const char *v) {
        for (const char *w = v + strspn(v, " \t"); *w; w += strspn(w, " \t")) {
                size_t len = strcspn(w, " \t");
                _cleanup_free_ char *word = strndup(w, len);
                const char *reason = NULL;
                char *norm = NULL;
                int r;

                if (!word)
                        return parse_oom(st);
                w += len;
                r = ro_path_normalize(word, &norm, &reason);
                if (r == -EINVAL)
                        return parse_fail(st, k->section, k->name, "'%s' %s", word, reason);
                if (r < 0)
                        return parse_oom(st);
                r = ro_paths_append(st->config, norm);
                if (r == -E2BIG)
                        return parse_fail(st, k->section, k->name, "more than %d paths",
                                          TOOLSD_CONFIG_RO_PATHS_MAX);
                if (r < 0)
                        return parse_oom(st);
        }
        return 1;
}

/* inih's handler; returns 0 on failure. Scalars: the last assignment wins;
 * an empty value restores the default. */
static int config_handler(void *userdata, const char *section, const char *name, const char *value) {
        struct parse_state *st = userdata;
        const struct config_key *k;

        if (st->r < 0)
                return 0;
        if (!*section)
                return parse_fail(st, NULL, NULL, "%s= is outside of a section", name);
        k = key_find(section, name);
        if (!k)
                return parse_fail(st, section, name, "unknown key");
        if (!*value)
                return key_set_default(st->config, k) < 0 ? parse_oom(st) : 1;

        switch (k->kind) {
        case KEY_PATH:
                return apply_path(st, k, value);
        case KEY_NUMBER:
        case KEY_SIZE:
        case KEY_SECONDS_MS:
                return apply_number(st, k, value);
        case KEY_BOOL:
        case KEY_REQUIRE_SANDBOX:
                return apply_bool(st, k, value);
        case KEY_PATH_LIST:
                return apply_path_list(st, k, value);
        default:
                abort();
        }
}

static int set_error(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
static int set_error(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        if (ret_error && r != -ENOMEM) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

int config_load_string(struct toolsd_config *c, const char *text, const char *name, char **ret_error) {
        struct toolsd_config copy;
        struct parse_state st = { .config = &copy, .name = name ?: "(string)", .next = text };
        int r;

        if (!text)
                return -EINVAL;
        r = config_copy(&copy, c);
        if (r < 0)
                return r;
        r = ini_parse_stream(config_reader, &st, config_handler, &st);
        if (st.r == 0 && r > 0) {
                /* a syntax error inih saw and line_check() did not */
                st.line = (unsigned) r;
                parse_fail(&st, NULL, NULL, "syntax error");
        } else if (st.r == 0 && r < 0)
                st.r = -ENOMEM;
        if (st.r < 0) {
                config_done(&copy);
                if (ret_error && st.error)
                        *ret_error = TAKE_PTR(st.error);
                free(st.error);
                return st.r;
        }
        config_done(c);
        *c = copy;
        return 0;
}

int config_load_file(struct toolsd_config *c, const char *path, bool must_exist, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_file_bounded(path, TOOLSD_CONFIG_FILE_MAX, READ_FILE_REGULAR, &text, &len);
        if (r == -ENOENT && !must_exist)
                return 0;
        if (r == -EBADFD)
                return set_error(ret_error, -EINVAL, "%s: not a regular file", path);
        if (r == -EFBIG)
                return set_error(ret_error, r, "%s: larger than %d bytes", path, TOOLSD_CONFIG_FILE_MAX);
        if (r < 0)
                return set_error(ret_error, r, "%s: %s", path, strerror(-r));
        /* inih would stop at a NUL and ignore the rest of the file */
        if (memchr(text, '\0', len))
                return set_error(ret_error, -EINVAL, "%s: contains a NUL byte", path);
        return config_load_string(c, text, path, ret_error);
}

/* ---- after loading ------------------------------------------------------ */

int config_validate(const struct toolsd_config *c, char **ret_error) {
        char a[32], b[32];

        if (!c->profiles_dir || !c->skills_dir || !c->bwrap_path || !c->ro_paths ||
            c->n_ro_paths > TOOLSD_CONFIG_RO_PATHS_MAX)
                return set_error(ret_error, -EINVAL, "configuration is not initialised");
        if (c->default_timeout_ms > c->max_timeout_ms)
                return set_error(ret_error, -EINVAL, "DefaultTimeoutSec=%" PRIu32 " is greater than MaxTimeoutSec=%" PRIu32,
                                 c->default_timeout_ms / 1000, c->max_timeout_ms / 1000);
        if (c->max_connections_per_uid > c->max_connections)
                return set_error(ret_error, -EINVAL,
                                 "MaxConnectionsPerUser=%" PRIu32 " is greater than MaxConnections=%" PRIu32,
                                 c->max_connections_per_uid, c->max_connections);
        if (c->max_string_bytes > c->max_message_bytes)
                return set_error(ret_error, -EINVAL, "MaxStringSize=%s is greater than MaxMessageSize=%s",
                                 format_size(c->max_string_bytes, a), format_size(c->max_message_bytes, b));
        if (c->result_output_bytes > c->max_output_bytes)
                return set_error(ret_error, -EINVAL, "ResultOutputSize=%s is greater than MaxOutputSize=%s",
                                 format_size(c->result_output_bytes, a), format_size(c->max_output_bytes, b));
        return 0;
}

void config_apply_environment(struct toolsd_config *c, const char *require_sandbox_env) {
        bool b;

        if (!require_sandbox_env || !*require_sandbox_env)
                return;
        /* a typo must not quietly leave the sandbox optional */
        if (parse_bool(require_sandbox_env, &b) < 0 || b)
                c->require_sandbox = REQUIRE_SANDBOX_YES;
}

bool config_unsandboxed_allowed(const struct toolsd_config *c) {
        return c->allow_unsandboxed && c->require_sandbox == REQUIRE_SANDBOX_NO;
}

int config_listen_path(const struct toolsd_config *c, bool user_mode, const char *xdg_runtime_dir, char **ret) {
        char *p;

        if (c->listen_path)
                p = strdup(c->listen_path);
        else if (!user_mode)
                p = strdup(TOOLSD_SYSTEM_LISTEN_PATH);
        else if (!xdg_runtime_dir || xdg_runtime_dir[0] != '/')
                return -ENXIO;
        else if (asprintf(&p, "%s/toolsd/io.toolsd", xdg_runtime_dir) < 0)
                p = NULL;
        if (!p)
                return -ENOMEM;
        if (strlen(p) > SOCKET_PATH_MAX) {
                free(p);
                return -ENAMETOOLONG;
        }
        *ret = p;
        return 0;
}
