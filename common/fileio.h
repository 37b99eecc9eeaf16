/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a whole small file (a config file, a skill file) into memory,
 * with a size cap fixed by the caller. Shared by toolsd and toolsctl.
 */
#pragma once

#include <stddef.h>

enum read_file_flags {
        /* Refuse anything but a regular file (-EBADFD): a directory, a FIFO,
         * a device. Checked with fstat() on the opened fd, so nothing can be
         * swapped in between the check and the read. */
        READ_FILE_REGULAR = 1 << 0,
};

/* Reads all of fd, from where it stands to the end, at most max bytes.
 * *ret is malloc'd (max + 1 bytes, NUL-terminated; NUL bytes in the data
 * are kept and counted in *ret_len). Returns 0; -EFBIG when there is more
 * than max; -ENOMEM; or read()'s -errno. EINTR is retried. */
int read_fd_bounded(int fd, size_t max, char **ret, size_t *ret_len);

/* Opens path (O_RDONLY|O_CLOEXEC|O_NOCTTY) and reads it with
 * read_fd_bounded(). Returns what that returns, open()'s or fstat()'s
 * -errno (-ENOENT for a missing file), or -EBADFD for a file that
 * READ_FILE_REGULAR refuses. */
int read_file_bounded(const char *path, size_t max, enum read_file_flags flags, char **ret, size_t *ret_len);
