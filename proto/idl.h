/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A parser for the Varlink interface definition language and a validator of
 * JSON values against it, so that proto/io.toolsd.varlink is the one source
 * of truth for what a call may carry and what a reply must hold.
 *
 * No I/O, no logging. Returns negative errno on failure.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

struct idl_interface;   /* opaque: a parsed interface */

/* Parses an interface description. On a syntax error returns -EINVAL and, if
 * ret_error is given, a malloc'd message with the line number. */
int idl_parse(const char *text, struct idl_interface **ret, char **ret_error);
void idl_free(struct idl_interface *iface);

/* The interface's name, e.g. "io.toolsd". */
const char *idl_name(const struct idl_interface *iface);

/* True when the interface declares the method (member name, e.g. "Call"). */
bool idl_has_method(const struct idl_interface *iface, const char *method);
/* True when the interface declares the error (member name). */
bool idl_has_error(const struct idl_interface *iface, const char *error);

/* Validates params (a JSON object; NULL means {}) against the method's input
 * (is_input) or output struct: every member known, of its declared type
 * (recursively through named types, arrays, maps, enums, optionals), every
 * non-optional member present and non-null. null for an optional member is
 * the same as absent. On a mismatch returns -EINVAL and, when ret_field is
 * given, a malloc'd dotted path of the offending member ("skill.limits.
 * timeout_ms", "tools[2].name") so the caller can name it in
 * org.varlink.service.InvalidParameter. -ENOENT when the method is unknown. */
int idl_validate_method(const struct idl_interface *iface, const char *method, bool is_input,
                        struct json_object *params, char **ret_field);

/* The same for an error's parameters. */
int idl_validate_error(const struct idl_interface *iface, const char *error,
                       struct json_object *params, char **ret_field);
