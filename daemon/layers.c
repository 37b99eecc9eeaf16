/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox's layers as Doctor reports them (bwrap, seccomp, Landlock,
 * user namespaces), probed once at start-up.
 *
 * Runs in the broker as the serving uid.
 */
#include "daemon.h"

void doctor_layers(struct server *s, struct json_object *checks) {
}
