/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The credential-exfiltration denylist of the `shell` profile: a tripwire
 * run over a `/bin/sh -c` string before it is spawned. It is not the
 * boundary (the scrubbed environment, the invisible home directory and the
 * closed network are); see docs/denylist.md.
 *
 * Pure module, run in the broker as the peer's uid with no capabilities.
 */
#pragma once

#include <stddef.h>

/* The caller bounds the command; longer ones get -E2BIG, not a verdict. */
#define DENYLIST_COMMAND_MAX (64U * 1024U)
/* Bounds of the data file. */
#define DENYLIST_FILE_MAX (1024U * 1024U)
#define DENYLIST_RULES_MAX 512U
#define DENYLIST_DEFINES_MAX 64U
#define DENYLIST_PATTERN_MAX (16U * 1024U)
#define DENYLIST_ID_MAX 64U
/* Bounds of the splitter; past them a command is refused (DENYLIST_CHAINED,
 * rule "split-limit") rather than checked in part. */
#define DENYLIST_PIECES_MAX 4096U
#define DENYLIST_DEPTH_MAX 16U
/* De-obfuscation rounds before the result is taken as a fixed point;
 * a command that still changes after them is refused (DENYLIST_WHOLE,
 * rule "deobfuscation-limit"). */
#define DENYLIST_ROUNDS_MAX 8U

struct denylist;

enum denylist_verdict {
        DENYLIST_OK,
        DENYLIST_WHOLE,         /* the whole command string matches a rule */
        DENYLIST_CHAINED,       /* one of its subcommands matches a rule */
};

/* Load and compile a rule file (format in docs/denylist.md). On a syntax or
 * regex error returns -EINVAL and, when ret_error is given, a malloc'd
 * "FILE:LINE: ..." message. */
int denylist_load_file(const char *path, struct denylist **ret, char **ret_error);
int denylist_load_string(const char *text, const char *name, struct denylist **ret, char **ret_error);
void denylist_free(struct denylist *d);
size_t denylist_rule_count(const struct denylist *d);

/* Checks cmd[0..len). *ret_rule (optional) is the matching rule's id, owned
 * by d or static; NULL for DENYLIST_OK. -EINVAL for NULL arguments or an
 * embedded NUL, -E2BIG past DENYLIST_COMMAND_MAX, -ENOMEM. */
int denylist_check(const struct denylist *d, const char *cmd, size_t len,
                   enum denylist_verdict *ret, const char **ret_rule);

/* The refusal text shown to the model; NULL for DENYLIST_OK. */
const char *denylist_message(enum denylist_verdict v);

/* Normal form used for matching: shell quoting, escapes, ANSI-C $'...'
 * strings, empty quote pairs, ${NAME}, $IFS, empty positional parameters
 * and one-character bracket globs removed; $HOME and ${HOME} become '~';
 * blanks collapse. The result never holds ' " \ or NUL and is never longer
 * than the input. Returns 1 when it is a fixed point (deobfuscating it
 * again gives it back), 0 when DENYLIST_ROUNDS_MAX rounds did not reach
 * one, negative errno on failure. */
int denylist_deobfuscate(const char *in, size_t len, char **ret);

/* The subcommands of cmd: split on ; & && | || |& newlines and parentheses
 * outside quotes, plus the bodies of $(...), `...`, of the argument after
 * a -c style option, of eval, and the values of NAME=VALUE words, each
 * split again. Pieces are raw (not de-obfuscated), trimmed, non-empty.
 * Returns the number of pieces; -E2BIG past DENYLIST_PIECES_MAX, -ELOOP
 * past DENYLIST_DEPTH_MAX. */
int denylist_split(const char *cmd, char ***ret);
