/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * toolsd: start-up and the event loop, in each of its three roles.
 *
 * User mode (the default): started by a user or by `systemd --user`, toolsd
 * is one process running as that user, serving only that user's
 * connections. It takes the listening socket from systemd (socket
 * activation) or binds it itself.
 *
 * System mode (--system, as root): this process becomes the master
 * (master.c): it drops to four capabilities and hands each connection to a
 * broker of the peer's uid.
 *
 * Broker (--broker UID, started by the master only): runs as that user with
 * no capabilities and no_new_privs; the same server as user mode, fed by
 * the master over fd 3 instead of a listening socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "config-paths.h"
#include "daemon.h"
#include "denylist.h"
#include "io.toolsd.varlink.h"
#include "log.h"
#include "master.h"
#include "seccomp_filter.h"
#include "org.varlink.service.varlink.h"
#include "sandbox.h"

struct options {
        const char *listen;
        const char *config;
        bool check_config;
        bool system;
        long broker_uid;        /* -1 unless --broker */
};

static void usage(void) {
        printf("Usage: toolsd [OPTIONS]\n\n"
               "Sandboxed tool execution for AI agents, over Varlink.\n\n"
               "  --listen PATH      bind this socket (default: from systemd, else\n"
               "                     $XDG_RUNTIME_DIR/toolsd/io.toolsd, /run/toolsd/io.toolsd for root)\n"
               "  --config FILE      read this configuration file\n"
               "  --check-config     parse the configuration and profiles, then exit\n"
               "  --system           system mode (as root): a master that serves every user\n"
               "                     from a broker running as that user\n"
               "  --version          print the version\n"
               "  -h, --help         this text\n");
}

static int parse_args(int argc, char *argv[], struct options *o) {
        static const struct option opts[] = {
                { "listen", required_argument, NULL, 'l' },
                { "config", required_argument, NULL, 'c' },
                { "check-config", no_argument, NULL, 'C' },
                { "system", no_argument, NULL, 'S' },
                { "broker", required_argument, NULL, 'B' },
                { "version", no_argument, NULL, 'V' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
                switch (c) {
                case 'l':
                        o->listen = optarg;
                        break;
                case 'c':
                        o->config = optarg;
                        break;
                case 'C':
                        o->check_config = true;
                        break;
                case 'S':
                        o->system = true;
                        break;
                case 'B': {
                        char *end;
                        errno = 0;
                        o->broker_uid = strtol(optarg, &end, 10);
                        if (errno || *end || o->broker_uid < 0)
                                return -EINVAL;
                        break;
                }
                case 'V':
                        printf("toolsd %s\n", TOOLSD_VERSION);
                        exit(EXIT_SUCCESS);
                case 'h':
                        usage();
                        exit(EXIT_SUCCESS);
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "toolsd: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

static char *default_path(const char *fmt_user, const char *system, const char *xdg) {
        char buf[4096];
        const char *base = getenv(xdg);

        if (geteuid() == 0)
                return strdup(system);
        if (base && base[0] == '/')
                (void) snprintf(buf, sizeof buf, "%s/%s", base, fmt_user);
        else if (strcmp(xdg, "XDG_CONFIG_HOME") == 0 && getenv("HOME"))
                (void) snprintf(buf, sizeof buf, "%s/.config/%s", getenv("HOME"), fmt_user);
        else
                (void) snprintf(buf, sizeof buf, "/run/user/%u/%s", (unsigned) geteuid(), fmt_user);
        return strdup(buf);
}

static int load_config(struct server *s, const struct options *o, struct toolsd_config *cfg) {
        _cleanup_free_ char *err = NULL;
        int r;

        r = config_init_defaults(cfg);
        if (r < 0)
                return log_error_errno(r, "Cannot initialise the configuration: %m");
        char *path = o->config ? strdup(o->config)
                               : default_path("toolsd/toolsd.conf", TOOLSD_SYSCONFDIR "/toolsd.conf",
                                              "XDG_CONFIG_HOME");
        if (!path)
                return log_error_errno(ENOMEM, "Out of memory");
        s->config_path = path;
        r = config_load_file(cfg, path, o->config != NULL, &err);
        if (r < 0)
                return log_error_errno(r, "Bad configuration: %s", err ? err : strerror(-r));
        config_apply_environment(cfg, getenv("MODULATIO_REQUIRE_SANDBOX"));
        r = config_validate(cfg, &err);
        if (r < 0)
                return log_error_errno(r, "Bad configuration: %s", err ? err : strerror(-r));

        r = profile_set_load_dir(cfg->profiles_dir, &s->profiles, &err);
        if (r < 0)
                return log_error_errno(r, "Bad profiles in %s: %s", cfg->profiles_dir, err ? err : strerror(-r));
        if (!profile_set_find(s->profiles, "passive"))
                return log_error_errno(EINVAL, "No 'passive' profile in %s: the default profile must exist",
                                       cfg->profiles_dir);
        /* The shell profile's denylist sits beside profiles.d; without it
         * that profile runs nothing, a broken one stops the daemon. */
        _cleanup_free_ char *dl = NULL;
        if (asprintf(&dl, "%s/../denylist.conf", cfg->profiles_dir) < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        r = denylist_load_file(dl, &s->denylist, &err);
        if (r == -ENOENT)
                log_warning("No %s: the shell profile refuses every command", dl);
        else if (r < 0)
                return log_error_errno(r, "Bad denylist %s: %s", dl, err ? err : strerror(-r));

        r = idl_parse(io_toolsd_varlink, &s->idl, &err);
        if (r >= 0)
                r = idl_parse(org_varlink_service_varlink, &s->idl_service, &err);
        if (r < 0)
                return log_error_errno(r, "The built-in interface definition does not parse: %s", err);
        return 0;
}

/* Runs argv (no shell) with stdout and stderr into out (NUL-terminated,
 * newlines as spaces) and, when fd3 >= 0, that descriptor as fd 3.
 * Returns the wait status, or -1 when it could not be run. */
static int run_capture(char *const argv[], int fd3, char *out, size_t size) {
        int p[2];

        out[0] = '\0';
        if (pipe2(p, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                (void) dup2(p[1], STDERR_FILENO);
                (void) dup2(p[1], STDOUT_FILENO);
                /* dup2() onto itself would keep close-on-exec. */
                if (fd3 == 3)
                        (void) fcntl(3, F_SETFD, 0);
                else if (fd3 >= 0)
                        (void) dup2(fd3, 3);
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        size_t got = 0;
        for (ssize_t n; pid > 0 && got < size - 1; got += (size_t) n)
                if ((n = read(p[0], out + got, size - 1 - got)) <= 0)
                        break;
        out[got] = '\0';
        for (char *q = out; *q; q++)
                if (*q == '\n')
                        *q = ' ';
        close(p[0]);
        int st = 0;
        return pid > 0 && waitpid(pid, &st, 0) == pid ? st : -1;
}

/* Runs `bwrap --version` and a minimal sandbox, the way calls will, so a
 * broken sandbox is known before the first session asks for it. */
static void probe_sandbox(struct server *s) {
        const char *bwrap = s->config->bwrap_path;
        char buf[128];

        if (access(bwrap, X_OK) < 0) {
                (void) snprintf(s->sandbox_detail, sizeof s->sandbox_detail, "%s: %s", bwrap, strerror(errno));
                return;
        }
        char *version_argv[] = { (char *) bwrap, (char *) "--version", NULL };
        int st = run_capture(version_argv, -1, buf, sizeof buf);
        if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                /* "bubblewrap 0.8.0 " (the newline made a space) */
                size_t n = strlen(buf);
                while (n > 0 && buf[n - 1] == ' ')
                        buf[--n] = '\0';
                (void) snprintf(s->bwrap_version, sizeof s->bwrap_version, "%s", buf);
        }

        const char *argv[] = { "/usr/bin/true", NULL };
        const char *envp[] = { "PATH=/usr/bin", NULL };
        char dir[] = "/tmp/toolsd-probe-XXXXXX";
        if (!mkdtemp(dir)) {
                (void) snprintf(s->sandbox_detail, sizeof s->sandbox_detail, "cannot make a probe directory: %s",
                                strerror(errno));
                return;
        }
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                (void) rmdir(dir);
                return;
        }
        struct sandbox_manifest m = {
                .bwrap_path = bwrap,
                .root_path = dir,
                .root_fd = 3,
                .tool_calls_fd = -1,
                .envp = envp,
                .argv = argv,
                .json_status_fd = -1,
                .seccomp_fd = -1,
        };
        _cleanup_strv_free_ char **bargv = NULL;
        int r = sandbox_argv_build(&m, &bargv);
        if (r < 0) {
                (void) rmdir(dir);
                (void) snprintf(s->sandbox_detail, sizeof s->sandbox_detail, "cannot build the probe: %s",
                                strerror(-r));
                return;
        }
        char err[200];
        st = run_capture(bargv, dfd, err, sizeof err);
        (void) rmdir(dir); /* bwrap binds the fd's path: remove it only now */
        if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                (void) snprintf(s->sandbox_detail, sizeof s->sandbox_detail, "bwrap probe failed: %s",
                                err[0] ? err : "no output");
                return;
        }
        s->sandbox_available = true;
        (void) snprintf(s->sandbox_detail, sizeof s->sandbox_detail, "bwrap sandbox works (%s)",
                        s->bwrap_version[0] ? s->bwrap_version : "bubblewrap");
}

static void notify_status(struct server *s) {
        (void) sd_notifyf(false, "STATUS=%u sessions, %u running calls, %u connections", s->n_sessions, s->n_calls,
                          s->n_conns);
}

/* Called by server_shutdown(): close what main() opened so the loop ends
 * once the last worker is reaped. */
static void on_shutdown(struct server *s) {
        (void) sd_notify(false, "STOPPING=1");
        uv_close((uv_handle_t *) &s->sig_term, NULL);
        uv_close((uv_handle_t *) &s->sig_int, NULL);
        /* Closing the handles restores the default action: a second
         * SIGTERM while calls drain must not kill us half-way. */
        (void) signal(SIGTERM, SIG_IGN);
        (void) signal(SIGINT, SIG_IGN);
        uv_close((uv_handle_t *) &s->idle_timer, NULL);
        if (s->n_calls == 0)
                uv_close((uv_handle_t *) &s->sig_chld, NULL);
}

static void on_signal(uv_signal_t *h, int sig) {
        struct server *s = h->data;

        if (sig == SIGCHLD) {
                supervisor_on_sigchld(s);
                if (s->shutting_down && s->n_calls == 0 && !uv_is_closing((uv_handle_t *) &s->sig_chld))
                        uv_close((uv_handle_t *) &s->sig_chld, NULL);
                return;
        }
        log_info("received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        server_shutdown(s);
}

static void on_idle_timer(uv_timer_t *t) {
        struct server *s = t->data;
        uint64_t now = now_usec();

        session_expire_idle(s, now);
        if (s->ctl_fd >= 0 || s->exit_asked)
                broker_on_idle_timer(s, now);
        if (!s->shutting_down)
                notify_status(s);
        if (sd_watchdog_enabled(false, NULL) > 0)
                (void) sd_notify(false, "WATCHDOG=1");
}

static int listen_socket(struct server *s, const struct options *o) {
        int n = sd_listen_fds(true);

        if (n < 0)
                return log_error_errno(n, "Cannot read the sockets passed by systemd: %m");
        if (n > 1)
                return log_error_errno(EINVAL, "Expected one socket from systemd, got %d", n);
        if (n == 1) {
                if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0)
                        return log_error_errno(EINVAL, "The socket passed by systemd is not a listening Unix stream socket");
                return server_listen(s, NULL);
        }
        if (o->broker_uid >= 0) {
                /* Before the first byte of a client is read. */
                int r = seccomp_broker_load();
                if (r < 0)
                        return log_error_errno(r, "Cannot load the broker's seccomp filter: %m");
                return broker_init(s, MASTER_BROKER_FD);
        }

        _cleanup_free_ char *path = o->listen ? strdup(o->listen)
                                   : s->config->listen_path ? strdup(s->config->listen_path)
                                   : default_path("toolsd/io.toolsd", "/run/toolsd/io.toolsd", "XDG_RUNTIME_DIR");
        if (!path)
                return log_error_errno(ENOMEM, "Out of memory");
        return server_listen(s, path);
}

/* System mode: bind (or take) the socket as root, then become the master. */
static int run_master(struct server *s, const struct options *o) {
        char exe[4096];
        int fd;

        if (geteuid() != 0)
                return log_error_errno(EPERM, "--system needs root: it starts a broker as each user");
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
                return log_error_errno(errno, "Cannot find our own binary: %m");
        exe[n] = '\0';

        int nfds = sd_listen_fds(true);
        if (nfds > 1)
                return log_error_errno(EINVAL, "Expected one socket from systemd, got %d", nfds);
        if (nfds == 1)
                fd = SD_LISTEN_FDS_START;
        else {
                const char *path = o->listen ? o->listen
                                   : s->config->listen_path ? s->config->listen_path : "/run/toolsd/io.toolsd";
                int r = server_bind_path(path, 0666, &fd);
                if (r < 0)
                        return log_error_errno(r, "Failed to bind %s: %m", path);
                s->bound_path = strdup(path);
                log_info("master: listening on %s", path);
        }
        int r = master_drop_privileges();
        if (r < 0)
                return log_error_errno(r, "Cannot drop privileges: %m");

        struct master_options mo = { .config = s->config, .config_path = s->config_path, .self_exe = exe };
        r = master_run(&mo, fd);
        if (s->bound_path)
                (void) unlink(s->bound_path);
        return r;
}

/* What load_config() loaded, for both ways out of main(). */
static void server_free_config(struct server *s, struct toolsd_config *cfg) {
        profile_set_free(s->profiles);
        denylist_free(s->denylist);
        idl_free(s->idl);
        idl_free(s->idl_service);
        config_done(cfg);
        free((char *) s->config_path);
        free(s->bound_path);
        s->bound_path = NULL;
}

int main(int argc, char *argv[]) {
        struct options o = { .broker_uid = -1 };
        struct toolsd_config cfg = {};
        struct server s = { .mode = "user", .uid = geteuid(), .ctl_fd = -1, .on_shutdown = on_shutdown };
        int r;

        if (parse_args(argc, argv, &o) < 0)
                return 2;
        /* Before anything else opens a descriptor: the master's fds 3 and 4
         * are ours alone (no helper, probe or tool inherits them), and fd 4
         * is taken only if it is what the master puts there. */
        if (o.broker_uid >= 0) {
                (void) fcntl(MASTER_BROKER_FD, F_SETFD, FD_CLOEXEC);
                s.page = broker_page_take(MASTER_PAGE_FD);
        }
        log_open(o.broker_uid >= 0 ? "toolsd-broker" : "toolsd");
        if (o.broker_uid >= 0 && (getuid() != (uid_t) o.broker_uid || geteuid() != (uid_t) o.broker_uid))
                return log_error_errno(EPERM, "--broker %ld: not running as that uid", o.broker_uid), 2;
        (void) signal(SIGPIPE, SIG_IGN);
        /* No reload yet: a stray SIGHUP (a closed terminal) must not kill us. */
        (void) signal(SIGHUP, SIG_IGN);
        umask(0077);

        s.config = &cfg;
        if (load_config(&s, &o, &cfg) < 0)
                return EXIT_FAILURE;
        if (o.check_config) {
                printf("configuration and profiles are valid\n");
                return EXIT_SUCCESS;
        }
        if (o.system) {
                r = run_master(&s, &o);
                server_free_config(&s, &cfg);
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        probe_sandbox(&s);
        log_info("%s", s.sandbox_detail);
        if (!s.sandbox_available && cfg.require_sandbox == REQUIRE_SANDBOX_YES)
                log_warning("RequireSandbox=yes and the sandbox does not work: every OpenSession will be refused");

        s.loop = uv_default_loop();
        s.start_usec = now_usec();
        if (session_table_init(&s) < 0 || supervisor_init(&s) < 0)
                return log_error_errno(errno, "Cannot start: %m"), EXIT_FAILURE;

        uv_signal_init(s.loop, &s.sig_term);
        uv_signal_init(s.loop, &s.sig_int);
        uv_signal_init(s.loop, &s.sig_chld);
        s.sig_term.data = s.sig_int.data = s.sig_chld.data = &s;
        uv_signal_start(&s.sig_term, on_signal, SIGTERM);
        uv_signal_start(&s.sig_int, on_signal, SIGINT);
        uv_signal_start(&s.sig_chld, on_signal, SIGCHLD);
        uv_timer_init(s.loop, &s.idle_timer);
        s.idle_timer.data = &s;
        uint64_t every = MIN(60000u, MAX(1000u, cfg.session_idle_timeout_sec * 250u));
        uint64_t wd = 0;
        if (sd_watchdog_enabled(false, &wd) > 0)
                every = MIN(every, MAX(wd / 2000u, 1u));
        if (o.broker_uid >= 0)
                every = 1000;
        uv_timer_start(&s.idle_timer, on_idle_timer, every, every);

        if (listen_socket(&s, &o) < 0)
                return EXIT_FAILURE;

        (void) sd_notify(false, "READY=1");
        notify_status(&s);
        r = uv_run(s.loop, UV_RUN_DEFAULT);

        session_table_done(&s);
        broker_free(&s);
        r = uv_loop_close(s.loop);
        if (r < 0)
                log_warning("event loop closed with handles open: %s", uv_strerror(r));
        server_free_config(&s, &cfg);
        free(s.uids);
        log_info("stopped");
        return EXIT_SUCCESS;
}
