/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A validator for the JSON Schema subset toolsd's tool specs use, so that
 * what the model is shown (ListTools) is exactly what a call is held to.
 *
 * Runs in the broker (as the peer's uid, no capabilities) on every Call's
 * arguments. Pure: no I/O, no logging, no allocation. No regular
 * expressions: the few "pattern" values toolsd uses are recognised by
 * their exact text and checked by hand.
 */
#pragma once

#include <json-c/json.h>

#define SCHEMA_FIELD_MAX 128            /* bytes of the dotted path in an error */
#define SCHEMA_REASON_MAX 256
#define SCHEMA_DEPTH_MAX 16             /* nesting of a schema */

struct schema_error {
        char field[SCHEMA_FIELD_MAX];   /* "path", "argv[3]", "a.b"; "" for the value itself */
        char reason[SCHEMA_REASON_MAX]; /* "must be a string", "is not a known field", ... */
};

/* Checks value against schema. The subset: "type" (object, string, integer,
 * number, boolean, array), "properties", "required", "additionalProperties"
 * (a boolean), "enum" (strings and integers), "pattern" (only the texts
 * schema knows), "minLength"/"maxLength" (in characters, as JSON Schema
 * counts them), "minimum"/"maximum" (integers), "items", "minItems"/
 * "maxItems"; "description", "title" and "default" are ignored.
 * Returns 0 when value conforms; -EINVAL with *err filled (the field named
 * by its path, keys of the value shown printable and cut); -EBADMSG when
 * the schema itself is outside the subset (a bug in toolsd, not the
 * caller's). */
int schema_validate(struct json_object *schema, struct json_object *value, struct schema_error *err);

/* Checks that schema stays within the subset, without a value: -EBADMSG
 * otherwise, with the offending keyword in *err. */
int schema_check(struct json_object *schema, struct schema_error *err);
