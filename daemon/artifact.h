/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * write_artifact and read_tool_result as functions over directory fds: the
 * path rules, the atomic write beneath the artifacts root, the content
 * decoder, and paging through a call's persisted output.
 *
 * Runs in the broker (as the peer's uid, no capabilities). No logging; a
 * refusal is -EPERM (or -EINVAL for undecodable content, -ENOENT for output
 * that does not exist) with a static reason for the model.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARTIFACT_PATH_MAX 1024          /* bytes in a relative path */
#define ARTIFACT_NAME_MAX 255           /* bytes in one component */
#define ARTIFACT_DEPTH_MAX 32           /* components in a path */
#define ARTIFACT_FILE_MODE 0644         /* artifacts are for the user's other tools to read; */
#define ARTIFACT_DIR_MODE 0755          /* the root's own mode decides who else gets in */
#define TOOL_RESULT_PAGE_MAX (1024u * 1024u) /* bytes read_tool_result returns at once */
#define CALL_ID_LEN 32                  /* call ids are 128 random bits in hex */

/* The path rules, syntax only: rel (rel_len bytes, need not be
 * NUL-terminated) must be non-empty, at most ARTIFACT_PATH_MAX bytes, valid
 * UTF-8 without NUL or control characters, relative, with no empty
 * component (no "//", no trailing '/'), no component starting with '.'
 * (which covers "." and ".."; and dotfiles such as .git/ or .bashrc, which
 * tools would act on), no component over ARTIFACT_NAME_MAX bytes, at most
 * ARTIFACT_DEPTH_MAX components, and a first component other than
 * "tool_calls" (compared case-insensitively: case-folding file systems).
 * Returns 0 or -EPERM with *ret_reason. */
int artifact_path_check(const char *rel, size_t rel_len, const char **ret_reason);

/* Writes data to rel beneath root_fd, atomically: readers see the old file
 * or the new one, never a part. After artifact_path_check():
 *  - n > max is refused;
 *  - each parent directory is opened one component at a time with
 *    openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS), and
 *    made (ARTIFACT_DIR_MODE) when missing. Every symlink is refused, not
 *    only escaping ones: a link inside the root can be swapped for one
 *    outside between a check and a use; an fd-by-fd walk with no symlinks
 *    cannot be raced;
 *  - the data goes to a fresh ".tmp-<random>" file in the parent (O_EXCL,
 *    invisible to write_artifact since dotfiles are refused), is fsync'ed,
 *    chmod'ed to ARTIFACT_FILE_MODE, renamed over rel, and the directory is
 *    fsync'ed. (O_TMPFILE would need /proc or CAP_DAC_READ_SEARCH to link,
 *    and linkat cannot replace a file.) The temp file is removed on every
 *    failure path; only a crash can leave one behind.
 * Modes are set with fchmod, whatever the umask. Files belong to the
 * broker's uid, which in user mode is the session owner.
 * Returns 0; -EPERM with *ret_reason for a refusal (bad path, too big, a
 * symlink, a non-directory parent, a directory in the way); or a negative
 * errno (ENOSPC, EDQUOT, EIO, ...) for a failure. */
int artifact_write(int root_fd, const char *rel, size_t rel_len, const void *data, size_t n, uint64_t max,
                   const char **ret_reason);

/* Decodes write_artifact's content: encoding NULL, "utf-8" or "utf8" takes
 * the string as is; "base64" is RFC 4648 with padding, strictly: no
 * whitespace, no URL alphabet, no non-zero padding bits. *ret is malloc'd
 * (NUL-terminated for convenience, the NUL not counted). Returns 0, -EINVAL
 * with *ret_reason, or -ENOMEM. */
int artifact_decode(const char *content, size_t len, const char *encoding, void **ret, size_t *ret_len,
                    const char **ret_reason);

/* True for exactly CALL_ID_LEN lower-case hex digits: a bare id, which
 * cannot hold '/', "..", or be empty. */
bool call_id_valid(const char *id);

/* Reads up to length bytes (0 or more than TOOL_RESULT_PAGE_MAX: that
 * maximum) at offset of <call_id>.<stream> in tool_calls_fd, the raw
 * output the supervisor persisted; stream is "stdout" or "stderr". The
 * caller checks that call_id belongs to the session. *ret is malloc'd
 * (NUL-terminated, raw bytes), *ret_total the file's size; offset ==
 * total gives 0 bytes (the end). Returns 0; -EPERM with *ret_reason (bad
 * id or stream, offset past the end, not a regular file, a symlink);
 * -ENOENT with *ret_reason when nothing was persisted; or a negative errno. */
int tool_result_read(int tool_calls_fd, const char *call_id, const char *stream, uint64_t offset,
                     size_t length, void **ret, size_t *ret_len, uint64_t *ret_total, const char **ret_reason);
