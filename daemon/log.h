/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging for every toolsd process: to the journal with structured fields
 * when JOURNAL_STREAM says stderr is the journal, else to stderr with <N>
 * priority prefixes (which systemd and most log collectors understand).
 * Only daemon code logs; library code (proto/, policy, sandbox) returns
 * errors.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <syslog.h>

#include "macro.h"

void log_open(const char *ident);
void log_set_max_level(int level);
int log_get_max_level(void);

/* Logs and returns -abs(error) (or 0 when error is 0), so a failure is
 * logged and returned in one line: return log_error_errno(r, "...: %m").
 * %m prints strerror(abs(error)). */
int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

/* A structured record (one per tool call, ...): fields are "KEY=value"
 * strings; under journald they become journal fields, on stderr one line
 * "<N>MESSAGE KEY=value KEY=value". */
void log_struct(int level, const char *message, const char *const *fields, size_t n_fields);

#define log_full_errno(level, error, ...) log_internal(level, error, __FILE__, __LINE__, __VA_ARGS__)
#define log_full(level, ...) (void) log_full_errno(level, 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)

/* For what must not continue (start-up failures): logs and exits 1. */
_noreturn_ void die(const char *fmt, ...) _printf_(1, 2);
