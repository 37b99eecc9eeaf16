/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A bounded whole-file reader. No logging: the callers word the errors.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"

int read_fd_bounded(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;

        if (max == SIZE_MAX)
                return -ENOMEM;
        /* One byte more than allowed: reading it is how "too large" shows. */
        buf = malloc(max + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, buf + n, max + 1 - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max)
                        return -EFBIG;
        }
        buf[n] = '\0';
        *ret_len = n;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_file_bounded(const char *path, size_t max, enum read_file_flags flags, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (flags & READ_FILE_REGULAR) {
                struct stat sb;

                if (fstat(fd, &sb) < 0)
                        return -errno;
                if (!S_ISREG(sb.st_mode))
                        return -EBADFD;
        }
        return read_fd_bounded(fd, max, ret, ret_len);
}
