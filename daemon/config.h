/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * toolsd.conf: server policy and limits (INI, parsed with inih).
 *
 * Pure data and a parser; no logging. Every key, its default and its meaning
 * is documented in etc/toolsd/toolsd.conf and docs/toolsd.conf.5.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The system instance's socket; a user instance's is
 * $XDG_RUNTIME_DIR/toolsd/io.toolsd (see config_listen_path()). */
#define TOOLSD_SYSTEM_LISTEN_PATH "/run/toolsd/io.toolsd"
/* At most this many ReadOnlyPaths= entries. */
#define TOOLSD_CONFIG_RO_PATHS_MAX 64
/* A config file larger than this is refused (-EFBIG). */
#define TOOLSD_CONFIG_FILE_MAX (1024 * 1024)

enum require_sandbox {
        REQUIRE_SANDBOX_NO,     /* fall back to plain processes, said in every result */
        REQUIRE_SANDBOX_YES,    /* refuse sessions when the sandbox does not work */
};

struct toolsd_config {
        /* [Daemon] */
        char *listen_path;                 /* ListenPath=; NULL: the mode's default */
        char *profiles_dir;                /* ProfilesDirectory= */
        char *skills_dir;                  /* SkillsDirectory= */
        uint32_t session_idle_timeout_sec; /* SessionIdleTimeoutSec= */
        uint32_t broker_idle_timeout_sec;  /* BrokerIdleTimeoutSec= system mode: a broker with
                                            * no connection and no session exits */

        /* [Limits] what one peer can make the daemon hold */
        uint64_t max_message_bytes;        /* MaxMessageSize= */
        uint32_t max_json_depth;           /* MaxJsonDepth= */
        uint32_t max_connections;          /* MaxConnections= */
        uint32_t max_connections_per_uid;  /* MaxConnectionsPerUser= */
        uint32_t max_sessions_per_uid;     /* MaxSessionsPerUser= */
        uint32_t max_calls_per_session;    /* MaxCallsPerSession= (concurrent) */
        uint32_t max_string_bytes;         /* MaxStringSize= any one string parameter */

        /* [Calls] per-call defaults and server maxima; a skill may only lower */
        uint32_t default_timeout_ms;       /* DefaultTimeoutSec= (stored in ms) */
        uint32_t max_timeout_ms;           /* MaxTimeoutSec= (stored in ms) */
        uint32_t kill_grace_ms;            /* KillGraceMSec= SIGTERM → SIGKILL */
        uint64_t result_output_bytes;      /* ResultOutputSize= output kept in the reply */
        uint64_t max_output_bytes;         /* MaxOutputSize= persisted raw output cap; past it: outcome limit */
        uint64_t cpu_seconds;              /* LimitCPU= */
        uint64_t memory_bytes;             /* LimitAS= */
        uint64_t file_size_bytes;          /* LimitFSIZE= */
        uint64_t processes;                /* LimitNPROC= */
        uint64_t open_files;               /* LimitNOFILE= */
        uint64_t max_write_bytes;          /* MaxArtifactSize= write_artifact cap */

        /* [Sandbox] */
        enum require_sandbox require_sandbox; /* RequireSandbox= */
        bool allow_unsandboxed;            /* AllowUnsandboxed= honour a client's sandbox "off" */
        bool allow_network;                /* AllowNetwork= may any skill get network */
        char *bwrap_path;                  /* BubblewrapPath= */
        char **ro_paths;                   /* ReadOnlyPaths= extra read-only binds, NULL-terminated
                                            * (never NULL after init/load), normalised */
        size_t n_ro_paths;

        /* [Network] for http_get */
        bool http_allow_loopback;          /* HttpAllowLoopback= */
        bool http_allow_private;           /* HttpAllowPrivate= */
        uint32_t http_max_redirects;       /* HttpMaxRedirects= */
        uint64_t http_max_bytes;           /* HttpMaxBytes= */
};

/* Fills every field with its documented default (strings malloc'd). */
int config_init_defaults(struct toolsd_config *c);

/* Parses path over the current values. A missing file is not an error when
 * !must_exist (returns 0). On a bad line, unknown section or key, or bad
 * value returns -EINVAL and sets *ret_error to a malloc'd
 * "FILE:LINE: [Section] Key=: reason". -errno for an unreadable file.
 * Either every assignment of the file is applied or, on any failure, none is.
 * *ret_error (may be NULL) is set on every failure but -ENOMEM: for -EINVAL,
 * and "FILE: reason" for -errno. Lines longer than inih's buffer (198 bytes
 * after leading whitespace) are refused, not truncated. */
int config_load_file(struct toolsd_config *c, const char *path, bool must_exist, char **ret_error);

/* The same for an in-memory text (tests, fuzzing); name is used in errors. */
int config_load_string(struct toolsd_config *c, const char *text, const char *name, char **ret_error);

/* Cross-field checks after loading (defaults ≤ maxima, ...); -EINVAL with a
 * message naming the keys. */
int config_validate(const struct toolsd_config *c, char **ret_error);

void config_done(struct toolsd_config *c);

/* MODULATIO_REQUIRE_SANDBOX: value is the variable's value (NULL when unset;
 * the caller does the getenv). It can only tighten: "1"/yes/true/on, or any
 * value that is not a recognisable boolean, sets REQUIRE_SANDBOX_YES (fail
 * safe); NULL, "" and a false boolean leave the config as it is. */
void config_apply_environment(struct toolsd_config *c, const char *require_sandbox_env);

/* Whether a client's sandbox opt-out may be honoured: AllowUnsandboxed=yes
 * and not RequireSandbox=yes (which wins). */
bool config_unsandboxed_allowed(const struct toolsd_config *c);

/* The socket path to listen on: ListenPath= if set, else the system path, or
 * in user mode xdg_runtime_dir/toolsd/io.toolsd. -ENXIO when user mode has no
 * absolute xdg_runtime_dir; -ENAMETOOLONG past sockaddr_un's sun_path. */
int config_listen_path(const struct toolsd_config *c, bool user_mode, const char *xdg_runtime_dir, char **ret);

/* Parses "16M", "64K", "1G", "512" (bytes; powers of 1024). -EINVAL/-ERANGE. */
int parse_size(const char *s, uint64_t *ret);
/* Parses a non-negative decimal integer ≤ max. -EINVAL/-ERANGE. */
int parse_uint(const char *s, uint64_t max, uint64_t *ret);
/* Parses yes/no/true/false/1/0/on/off. -EINVAL. */
int parse_bool(const char *s, bool *ret);
