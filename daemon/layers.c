/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox's layers as Doctor reports them (seccomp, Landlock, the shell
 * profile's denylist, and one line with the state of every layer), each
 * with what a missing one means. bwrap and user namespaces have their own
 * checks in methods.c; their state comes from the start-up probe.
 *
 * Runs in the broker as the serving uid. Probing Landlock is one syscall,
 * building the seccomp filter a few milliseconds: cheap enough to do per
 * Doctor call, and a Doctor that reports the kernel as it is now is worth
 * more than a cached answer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "denylist.h"
#include "landlock.h"
#include "macro.h"
#include "seccomp_filter.h"


/* What an ABI below the newest that toolsd uses leaves to the other layers. */
static const char *landlock_gaps(int abi) {
        if (abi < 3)
                return "; lacks truncate control (ABI 3), TCP rules (ABI 4) and signal/abstract-socket scoping "
                       "(ABI 6)";
        if (abi < 4)
                return "; lacks TCP rules (ABI 4: seccomp and the network namespace still cover no-network "
                       "skills) and signal/abstract-socket scoping (ABI 6)";
        if (abi < 6)
                return "; lacks signal/abstract-socket scoping (ABI 6)";
        return "";
}

static bool seccomp_works(void) {
        _cleanup_close_ int fd = -1;
        return seccomp_filter_build(&(struct seccomp_options) { .network = false }, &fd) >= 0;
}

void doctor_layers(struct server *s, struct json_object *checks) {
        bool required = s->config->require_sandbox == REQUIRE_SANDBOX_YES;
        int abi = landlock_abi();
        bool seccomp = seccomp_works();

        if (abi > 0)
                doctor_check(checks, "landlock", true, "abi %d: writes only under the artifacts root, /tmp and /dev%s",
                      abi, landlock_gaps(abi));
        else
                doctor_check(checks, "landlock", !required, "unavailable (kernel without Landlock, or not in lsm=)%s",
                      required ? " (RequireSandbox=yes: every call is refused)"
                               : "; writes are confined by the mounts only");
        doctor_check(checks, "seccomp", seccomp || !required, "%s%s",
              seccomp ? "available: " : "cannot build the filter",
              seccomp ? seccomp_describe() : " (every call is refused)");
        if (s->denylist)
                doctor_check(checks, "denylist", true, "%zu rules (a tripwire for the shell profile, not the boundary)",
                      denylist_rule_count(s->denylist));
        else
                doctor_check(checks, "denylist", !profile_set_find(s->profiles, "shell"),
                      "not loaded: the shell profile refuses every command");
        doctor_check(checks, "layers", (s->sandbox_available && abi > 0 && seccomp) || !required,
              "bwrap namespaces: %s; seccomp: %s; landlock: %s; rlimits: on; process-group kill: on",
              s->sandbox_available ? "on" : "off (unsandboxed fallback)",
              seccomp ? (s->sandbox_available ? "on (loaded by bwrap)" : "on (loaded by toolsd-exec)") : "off",
              abi > 0 ? "on" : "off");
}

/* RequireSandbox=yes means every layer: a kernel without Landlock, or a
 * filter that cannot be built, refuses sessions up front rather than each
 * call later. */
bool layers_complete(struct server *s, char *why, size_t n) {
        if (landlock_abi() <= 0) {
                (void) snprintf(why, n, "this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK, lsm=landlock)");
                return false;
        }
        if (!seccomp_works()) {
                (void) snprintf(why, n, "the seccomp filter cannot be built (libseccomp, CONFIG_SECCOMP_FILTER)");
                return false;
        }
        return true;
}
