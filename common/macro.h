/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one cleanup idiom of the project (systemd/bubblewrap style): variables
 * declared _cleanup_free_/_cleanup_close_/... are released when they leave
 * scope; TAKE_PTR/TAKE_FD hand ownership on. Destructors accept NULL/-1.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#undef MIN
#undef MAX
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* Closes and forgets: the variable is -1 afterwards, so a second closep()
 * (or a later poll on it) cannot touch a number the kernel has reused. */
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                *fd = -1;
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Returns the pointer and sets the variable to NULL. */
#define TAKE_PTR(p)                              \
        ({                                       \
                __typeof__(p) _p_ = (p);         \
                (p) = NULL;                      \
                _p_;                             \
        })

#define TAKE_FD(fd)                              \
        ({                                       \
                int _fd_ = (fd);                 \
                (fd) = -1;                       \
                _fd_;                            \
        })

/* json-c objects */
#define _cleanup_json_ _cleanup_(json_object_putp)
struct json_object;
int json_object_put(struct json_object *obj);
static inline void json_object_putp(struct json_object **o) {
        if (*o)
                (void) json_object_put(*o);
}

/* NULL-terminated string vectors */
static inline void strv_free(char **v) {
        if (v) {
                for (char **i = v; *i; i++)
                        free(*i);
                free(v);
        }
}
static inline void strv_freep(char ***v) {
        strv_free(*v);
}
static inline size_t strv_length(char *const *v) {
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
