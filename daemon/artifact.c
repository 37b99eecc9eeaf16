/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * write_artifact's path rules, atomic write and content decoder, and
 * read_tool_result's paging through persisted output.
 *
 * Runs in the broker (as the peer's uid, no capabilities) on the model's
 * arguments. Every file operation is relative to a directory fd that was
 * itself opened beneath the artifacts root, one component at a time, so
 * nothing a sandboxed command does to the tree meanwhile (renames, symlink
 * swaps) can move a write outside the root. No logging.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "artifact.h"
#include "macro.h"
#include "varlink.h"

static int refuse(const char **ret_reason, const char *why) {
        if (ret_reason)
                *ret_reason = why;
        return -EPERM;
}

/* ---- the path rules ---- */

static const char *component_check(const char *c, size_t n, size_t index) {
        if (n == 0)
                return "the path has an empty component ('//' or a trailing '/')";
        if (n == 2 && c[0] == '.' && c[1] == '.')
                return "'..' is not allowed in the path";
        if (c[0] == '.')
                return "path components starting with '.' (dotfiles, '.') are not allowed";
        if (n > ARTIFACT_NAME_MAX)
                return "a path component is longer than 255 bytes";
        if (index == 0 && n == 10 && strncasecmp(c, "tool_calls", 10) == 0)
                return "tool_calls/ holds the audit trail and cannot be written";
        return NULL;
}

int artifact_path_check(const char *rel, size_t n, const char **ret_reason) {
        if (!rel || n == 0)
                return refuse(ret_reason, "the path is empty");
        if (n > ARTIFACT_PATH_MAX)
                return refuse(ret_reason, "the path is longer than 1024 bytes");
        if (memchr(rel, '\0', n))
                return refuse(ret_reason, "the path contains a NUL byte");
        if (!utf8_valid(rel, n))
                return refuse(ret_reason, "the path is not valid UTF-8");
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) rel[i] < 0x20 || rel[i] == 0x7f)
                        return refuse(ret_reason, "the path contains a control character");
        if (rel[0] == '/')
                return refuse(ret_reason, "absolute paths are not allowed: give a path relative to the artifacts root");

        size_t start = 0, index = 0;
        for (size_t i = 0; i <= n; i++) {
                if (i < n && rel[i] != '/')
                        continue;
                const char *why = component_check(rel + start, i - start, index);
                if (why)
                        return refuse(ret_reason, why);
                if (++index > ARTIFACT_DEPTH_MAX)
                        return refuse(ret_reason, "the path has more than 32 components");
                start = i + 1;
        }
        return 0;
}

/* ---- the walk ---- */

/* Opens the directory name (one plain component, never "..") in dirfd.
 * For a single component openat2's RESOLVE_* and openat's O_NOFOLLOW say
 * the same; openat is the fallback where openat2 is missing (valgrind). */
static int dir_open_one(int dirfd, const char *name) {
        struct open_how how = {
                .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof how);
        if (fd < 0 && errno == ENOSYS)
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
                return fd;
        /* O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR: tell the model
         * the real reason (the verdict is the same either way). */
        struct stat st;
        int r = negative_errno();
        if (r == -ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                return -ELOOP;
        return r;
}

static int walk_errno(int r, const char **ret_reason) {
        switch (r) {
        case -ELOOP:
                return refuse(ret_reason, "a component of the path is a symbolic link");
        case -ENOTDIR:
        case -EEXIST:
                return refuse(ret_reason, "a parent component of the path is not a directory");
        case -EXDEV:
                return refuse(ret_reason, "the path leaves the artifacts root");
        default:
                return r;
        }
}

static int dir_open_or_make(int dirfd, const char *name) {
        int fd = dir_open_one(dirfd, name);
        if (fd != -ENOENT)
                return fd;
        if (mkdirat(dirfd, name, ARTIFACT_DIR_MODE) < 0 && errno != EEXIST)
                return negative_errno();
        fd = dir_open_one(dirfd, name);
        if (fd >= 0)
                (void) fchmod(fd, ARTIFACT_DIR_MODE);
        return fd;
}

/* Opens the parent directory of path (a checked, NUL-terminated copy),
 * making what is missing; *ret_name points into path at the last component. */
static int parent_open(int root_fd, char *path, const char **ret_name, const char **ret_reason) {
        _cleanup_close_ int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char *p = path, *slash;

        if (fd < 0)
                return negative_errno();
        while ((slash = strchr(p, '/'))) {
                *slash = '\0';
                int next = dir_open_or_make(fd, p);
                *slash = '/';
                if (next < 0)
                        return walk_errno(next, ret_reason);
                closep(&fd);
                fd = next;
                p = slash + 1;
        }
        *ret_name = p;
        return TAKE_FD(fd);
}

/* ---- the write ---- */

static int write_all(int fd, const void *data, size_t n) {
        const char *p = data;
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        return -EIO;
                p += k, n -= (size_t) k;
        }
        return 0;
}

static int temp_create(int dirfd, char name[static 32]) {
        for (int attempt = 0; attempt < 16; attempt++) {
                uint64_t rnd;
                if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
                        return -EIO;
                (void) snprintf(name, 32, ".tmp-%016llx", (unsigned long long) rnd);
                int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0 || errno != EEXIST)
                        return fd < 0 ? negative_errno() : fd;
        }
        return -EEXIST;
}

static int temp_fill_and_rename(int dirfd, const char *tmp, int fd, const char *name, const void *data,
                                size_t n, const char **ret_reason) {
        int r = write_all(fd, data, n);
        if (r < 0)
                return r;
        if (fchmod(fd, ARTIFACT_FILE_MODE) < 0 || fsync(fd) < 0)
                return negative_errno();
        /* rename replaces a symlink at name itself, never its target. */
        if (renameat(dirfd, tmp, dirfd, name) < 0) {
                if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)
                        return refuse(ret_reason, "a directory exists at this path");
                return negative_errno();
        }
        return 0;
}

int artifact_write(int root_fd, const char *rel, size_t rel_len, const void *data, size_t n, uint64_t max,
                   const char **ret_reason) {
        const char *name = NULL;
        char tmp[32];
        int r = artifact_path_check(rel, rel_len, ret_reason);

        if (r < 0)
                return r;
        if (n > max)
                return refuse(ret_reason, "the content is larger than this server allows (MaxArtifactSize=)");
        _cleanup_free_ char *path = strndup(rel, rel_len);
        if (!path)
                return -ENOMEM;
        _cleanup_close_ int dirfd = parent_open(root_fd, path, &name, ret_reason);
        if (dirfd < 0)
                return dirfd;
        _cleanup_close_ int fd = temp_create(dirfd, tmp);
        if (fd < 0)
                return fd;
        r = temp_fill_and_rename(dirfd, tmp, fd, name, data, n, ret_reason);
        if (r < 0) {
                (void) unlinkat(dirfd, tmp, 0);
                return r;
        }
        /* The rename itself must survive a crash too. */
        return fsync(dirfd) < 0 ? negative_errno() : 0;
}

/* ---- content ---- */

int artifact_decode(const char *content, size_t len, const char *encoding, void **ret, size_t *ret_len,
                    const char **ret_reason) {
        bool text = !encoding || strcmp(encoding, "utf-8") == 0 || strcmp(encoding, "utf8") == 0;

        if (!text && strcmp(encoding, "base64") != 0) {
                *ret_reason = "encoding must be \"utf-8\" or \"base64\"";
                return -EINVAL;
        }
        if (!content) {
                *ret_reason = "content is missing";
                return -EINVAL;
        }
        if (!text) {
                int r = base64_decode(content, len, ret, ret_len);

                if (r == -EINVAL)
                        *ret_reason = "base64 content must be a multiple of 4 characters long (with '=' padding)";
                else if (r == -EILSEQ)
                        *ret_reason = "base64 content has a character outside A-Z a-z 0-9 + / (or misplaced '=')";
                else if (r == -EBADMSG)
                        *ret_reason = "base64 content is not canonical (non-zero padding bits)";
                else
                        return r; /* 0, or -ENOMEM */
                return -EINVAL;
        }
        if (!utf8_valid(content, len)) {
                *ret_reason = "content is not valid UTF-8 (use encoding \"base64\" for bytes)";
                return -EINVAL;
        }
        _cleanup_free_ char *out = malloc(len + 1);
        if (!out)
                return -ENOMEM;
        memcpy(out, content, len);
        out[len] = '\0';
        *ret = TAKE_PTR(out);
        *ret_len = len;
        return 0;
}

/* ---- read_tool_result ---- */

bool call_id_valid(const char *id) {
        if (!id || strnlen(id, CALL_ID_LEN + 1) != CALL_ID_LEN)
                return false;
        for (size_t i = 0; i < CALL_ID_LEN; i++)
                if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return true;
}

static int result_open(int dirfd, const char *call_id, const char *stream, const char **ret_reason) {
        char name[CALL_ID_LEN + 16];
        struct stat st;

        if (!call_id_valid(call_id))
                return refuse(ret_reason, "call_id must be a call id as returned by Call (32 hex digits)");
        if (!stream || (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0))
                return refuse(ret_reason, "stream must be \"stdout\" or \"stderr\"");
        (void) snprintf(name, sizeof name, "%s.%s", call_id, stream);
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                *ret_reason = "no output was kept for this call id and stream";
                return -ENOENT;
        }
        if (fd < 0 && errno == ELOOP)
                return refuse(ret_reason, "the persisted output is a symbolic link");
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return refuse(ret_reason, "the persisted output is not a regular file");
        return TAKE_FD(fd);
}

int tool_result_read(int tool_calls_fd, const char *call_id, const char *stream, uint64_t offset,
                     size_t length, void **ret, size_t *ret_len, uint64_t *ret_total, const char **ret_reason) {
        struct stat st;
        size_t got = 0;

        _cleanup_close_ int fd = result_open(tool_calls_fd, call_id, stream, ret_reason);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        uint64_t total = (uint64_t) st.st_size;
        if (offset > total)
                return refuse(ret_reason, "offset is past the end of the output");
        if (length == 0 || length > TOOL_RESULT_PAGE_MAX)
                length = TOOL_RESULT_PAGE_MAX;
        size_t want = (size_t) MIN((uint64_t) length, total - offset);
        _cleanup_free_ char *buf = malloc(want + 1);
        if (!buf)
                return -ENOMEM;
        while (got < want) {
                ssize_t k = pread(fd, buf + got, want - got, (off_t) (offset + got));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break; /* shrank meanwhile */
                got += (size_t) k;
        }
        buf[got] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = got;
        *ret_total = total;
        return 0;
}
