/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Security decisions as pure functions over plain data: the command splitter,
 * the environment filter, path checks under the artifacts root, and the
 * command-profile matcher.
 *
 * Runs in the broker (as the peer's uid, no capabilities). None of these
 * functions logs or spawns; path checks only open O_PATH descriptors beneath
 * the given root fd. They return 0 on success and negative errno on failure;
 * a refusal is not a failure, it is a verdict with a message. Every input is
 * the model's: all sizes are bounded.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

#define POLICY_ARGV_MAX 4096            /* words in one command */
#define POLICY_COMMAND_MAX (256u * 1024u) /* bytes in one command or word */
#define POLICY_MESSAGE_MAX 1024         /* refusal text */

/* ---- the command splitter (policy_argv.c) ---- */

/* Splits cmd into words by the POSIX shell's quoting rules (single quotes,
 * double quotes with \ escaping only $ ` " \ and newline, backslash outside
 * quotes, backslash-newline joins) with no expansion at all: globs, $VAR,
 * ~, $(...), backticks, and the operators ; | & && || < > stay literal
 * characters inside words; only unquoted blanks (space, tab, newline)
 * separate words. Returns -EINVAL with *ret_error pointing to a static
 * message for an unterminated quote, an empty command, a NUL byte, more
 * than POLICY_ARGV_MAX words or a command longer than POLICY_COMMAND_MAX.
 * The result is a NULL-terminated vector. */
int policy_argv_split(const char *cmd, char ***ret_argv, const char **ret_error);
/* The same over len bytes that need not be NUL-terminated (a JSON string may
 * hold \u0000): an embedded NUL is refused instead of silently ending cmd. */
int policy_argv_split_n(const char *cmd, size_t len, char ***ret_argv, const char **ret_error);

/* ---- the environment filter (policy_env.c) ---- */

#define POLICY_ENV_ENTRIES_MAX 1024     /* entries in base, pass or client */

/* True for names that look like secrets: *_KEY, *_API_KEY, *KEY (as a word
 * suffix), *_TOKEN, *_SECRET, *SECRET*, *PASSWORD*, *PASSWD*, *_PAT,
 * *CREDENTIAL*, DATABASE_URL, SSH_*, AWS_*, STRIPE_*, GITHUB_TOKEN,
 * OPENAI_*, ANTHROPIC_*, GOOGLE_APPLICATION_CREDENTIALS, AZURE_*, ... compared
 * case-insensitively. */
bool policy_env_name_is_secret(const char *name);

/* True for a valid name: [A-Za-z_][A-Za-z0-9_]*, at most 255 bytes. */
bool policy_env_name_valid(const char *name);

struct env_pair {
        const char *name;
        const char *value;
};

/* Builds the environment of a command. base is what toolsd itself sets
 * (PATH, HOME, USER, SHELL, TMPDIR, ...), always kept. From client (the env
 * map given at OpenSession) only these pass: LANG, LC_*, TERM, TZ when not
 * already in base, and the names listed in pass (the skill's pass_env).
 * A listed name that is secret-shaped or invalid is dropped and reported in
 * *ret_dropped (NULL-terminated, possibly empty); a listed name the client
 * did not set is simply absent. A value longer than POLICY_COMMAND_MAX drops
 * its name (reported); a newline in a value is kept (a value may hold
 * anything but NUL). *ret_envp
 * is a NULL-terminated "NAME=value" vector with no duplicate names. */
int policy_env_build(const struct env_pair *base, size_t n_base,
                     const char *const *pass, size_t n_pass,
                     const struct env_pair *client, size_t n_client,
                     char ***ret_envp, char ***ret_dropped);

/* ---- paths under the artifacts root (policy_path.c) ---- */

enum path_verdict {
        PATH_OK,
        PATH_REFUSED,
};

/* Checks that arg names something beneath the artifacts root. root_fd is the
 * root opened O_DIRECTORY; root_path is the absolute path it was opened at.
 * arg is relative to the root or absolute (then it must lie inside
 * root_path). Refused: empty, NUL, a ".." component, an absolute path
 * outside the root, a symlink (at any component) that leaves the root,
 * /proc magic links, anything openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS)
 * refuses. When must_exist is false a missing final component is fine if its
 * parent resolves beneath the root. On PATH_OK *ret_rel is the path relative
 * to the root (malloc'd, "." for the root itself). On PATH_REFUSED
 * *ret_reason points to a static explanation. Returns 0 with the verdict in
 * *ret_verdict, negative errno for an internal failure (ENOMEM). */
int policy_path_check(int root_fd, const char *root_path, const char *arg, bool must_exist,
                      enum path_verdict *ret_verdict, char **ret_rel, const char **ret_reason);

/* True when a path relative to the root has a hidden component (one that
 * starts with '.', e.g. ".env", ".git/config", "a/.ssh/id_rsa"); "." alone
 * (the root) is not hidden. run_shell refuses file arguments that are:
 * hidden files are where projects keep secrets and settings. */
bool policy_path_is_hidden(const char *rel);

/* ---- command profiles (policy_profile.c) ---- */

/* The file format is documented in docs/profiles.md. Programs are matched
 * by argv[0] exactly as written and must be bare names: the sandbox PATH
 * decides what runs, and a path could name a file in the artifacts root.
 *
 * A placeholder in a shape:
 *   <file>    one word naming an existing file beneath the root
 *   <path>    one word naming a file or directory beneath the root (may not exist)
 *             (both: non-empty, not starting with '-'; the matcher only marks
 *             them, the caller checks them with policy_path_check())
 *   <int>     one word of 1-18 decimal digits
 *   <-int>    one word "-N" (head -20)
 *   <word>    any one non-empty word that does not start with '-'
 *   <arg>     any one word
 *   <args>... any number of words (only last)
 *   [x]       an optional literal, alternatives or placeholder
 *   a|b       alternative literals */
#define PROFILE_LINE_MAX 4096           /* bytes in one line of a profile file */
#define PROFILE_SHAPES_MAX 4096         /* shapes (and deny rules) in one profile */
#define PROFILE_INCLUDE_DEPTH_MAX 8     /* nesting of includes */

struct profile_set;     /* every loaded profile */
struct profile;         /* one profile: its shapes, includes resolved */

/* Loads every *.conf in dir, in name order. An error in the files (syntax,
 * limits, duplicate profile, unknown include, include cycle or depth) gives
 * -EINVAL and a malloc'd "FILE:LINE: reason" in *ret_error (may be NULL;
 * the caller frees it); other failures give a negative errno and leave
 * *ret_error alone. Includes are resolved after all files are read. */
int profile_set_load_dir(const char *dir, struct profile_set **ret, char **ret_error);
/* Loads from one text (tests, fuzzing); name stands for the file in errors. */
int profile_set_load_string(const char *text, const char *name, struct profile_set **ret, char **ret_error);
void profile_set_free(struct profile_set *s);

const struct profile *profile_set_find(const struct profile_set *s, const char *name);
const char *profile_name(const struct profile *p);
/* A "shell" profile: run_shell passes the command string to /bin/sh -c in
 * the sandbox after the credential-exfiltration denylist (denylist.h) has
 * checked it; it has no shapes (profile_shapes gives an empty list). */
bool profile_is_shell(const struct profile *p);
/* A NULL-terminated list of the profile's allow shapes as written (for the
 * tool description), includes flattened in place. Owned by the set. */
const char *const *profile_shapes(const struct profile *p);

struct profile_match {
        bool allowed;
        const char *shape;      /* the shape that matched (owned by the set) */
        bool *path_arg;         /* argc flags: argv[i] is a <file>/<path> placeholder */
        bool *path_must_exist;  /* argc flags: <file> (true) or <path> (false) */
                                /* (both flag arrays only when allowed) */
        char message[POLICY_MESSAGE_MAX];
                                /* on refusal: names the profile, quotes the
                                 * argv, gives a "deny" rule's reason, and
                                 * lists the allowed shapes of the same program
                                 * (or the profile's first shapes); UTF-8 */
};

/* Matches argv against the profile. A deny rule of the profile itself (deny
 * rules are not inherited through include) refuses what it matches, unless
 * an allow shape pins strictly more words literally than the best-matching
 * deny rule: "python3 -m py_compile <file>" (3 literal words) beats "deny
 * python3 -m <word> <args>..." (2), while "allow python3 <args>..." (1)
 * would not beat "deny python3 -c <args>..." (2). Among the allow shapes
 * that win, the first in order gives the verdict and the path flags.
 * Returns 0 with the verdict in *ret (free with profile_match_done), negative
 * errno on failure. */
int profile_match(const struct profile *p, char *const *argv, struct profile_match *ret);
void profile_match_done(struct profile_match *m);
