/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging. Runs in every toolsd process; needs no privilege.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"

static const char *log_ident = "toolsd";
static bool log_to_journal;
static int log_max_level = LOG_INFO;

/* JOURNAL_STREAM is "DEV:INODE" of the journal's stream; it is ours only
 * if it still matches our stderr (a child may inherit a stale one). */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_open(const char *ident) {
        if (ident)
                log_ident = ident;
        log_to_journal = stderr_is_journal();
        const char *lvl = getenv("TOOLSD_LOG_LEVEL");
        if (lvl && strcmp(lvl, "debug") == 0)
                log_max_level = LOG_DEBUG;
}

void log_set_max_level(int level) {
        log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        char buf[2048];
        int saved = errno;
        va_list ap;

        if (error < 0)
                error = -error;
        if (level > log_max_level)
                return -error;

        errno = error; /* for %m */
        va_start(ap, fmt);
        (void) vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);

        if (log_to_journal)
                (void) sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%i", level,
                                       "SYSLOG_IDENTIFIER=%s", log_ident,
                                       "CODE_FILE=%s", file, "CODE_LINE=%i", line, NULL);
        else
                (void) fprintf(stderr, "<%i>%s: %s\n", level, log_ident, buf);
        errno = saved;
        return -error;
}

void log_struct(int level, const char *message, const char *const *fields, size_t n_fields) {
        if (level > log_max_level)
                return;

        if (log_to_journal) {
                struct iovec iov[64];
                char prio[32], msg[1024], ident[64];
                size_t n = 0;

                (void) snprintf(msg, sizeof msg, "MESSAGE=%s", message);
                (void) snprintf(prio, sizeof prio, "PRIORITY=%i", level);
                (void) snprintf(ident, sizeof ident, "SYSLOG_IDENTIFIER=%s", log_ident);
                iov[n++] = (struct iovec) { msg, strlen(msg) };
                iov[n++] = (struct iovec) { prio, strlen(prio) };
                iov[n++] = (struct iovec) { ident, strlen(ident) };
                for (size_t i = 0; i < n_fields && n < ELEMENTSOF(iov); i++)
                        iov[n++] = (struct iovec) { (void *) fields[i], strlen(fields[i]) };
                (void) sd_journal_sendv(iov, (int) n);
                return;
        }

        /* One write per record so concurrent writers don't interleave. */
        char line[4096];
        size_t off = 0;
        int k = snprintf(line, sizeof line, "<%i>%s: %s", level, log_ident, message);
        off = k < 0 ? 0 : MIN((size_t) k, sizeof line - 1);
        for (size_t i = 0; i < n_fields && off < sizeof line - 2; i++) {
                k = snprintf(line + off, sizeof line - off, " %s", fields[i]);
                off = k < 0 ? off : MIN(off + (size_t) k, sizeof line - 2);
        }
        /* Peer-chosen names end up in these fields: no forged lines. */
        for (size_t i = 0; i < off; i++)
                if ((unsigned char) line[i] < 0x20 || line[i] == 0x7f)
                        line[i] = '?';
        line[off++] = '\n';
        (void) fwrite(line, 1, off, stderr);
}

void die(const char *fmt, ...) {
        char buf[2048];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        log_error("%s", buf);
        exit(EXIT_FAILURE);
}
