/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON Schema subset validator (see schema.h).
 *
 * Runs in the broker (as the peer's uid, no capabilities) over every Call's
 * arguments, which are the model's: nothing here allocates, the recursion
 * follows the schema (toolsd's own, at most SCHEMA_DEPTH_MAX deep), not the
 * value, and whatever of the value goes into a message is cut and made
 * printable.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "schema.h"

#define KEY_SHOWN_MAX 64                /* bytes of a value's key put in a message */

struct path {
        char buf[SCHEMA_FIELD_MAX];
        size_t len;
};

static const char *const keywords[] = {
        "type", "description", "title", "default", "properties", "required", "additionalProperties",
        "enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "items", "minItems", "maxItems",
};

/* The patterns toolsd's schemas use, each checked by hand. */
static bool is_call_id(const char *s, size_t n) {
        if (n != 32)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static const struct {
        const char *pattern;
        bool (*match)(const char *s, size_t n);
        const char *reason;
} patterns[] = {
        { "^[0-9a-f]{32}$", is_call_id, "must be 32 lower-case hex digits" },
};

_printf_(3, 4) static int fail(struct schema_error *err, const struct path *p, const char *fmt, ...) {
        va_list ap;

        (void) snprintf(err->field, sizeof err->field, "%s", p->buf);
        va_start(ap, fmt);
        (void) vsnprintf(err->reason, sizeof err->reason, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static int bad_schema(struct schema_error *err, const char *keyword) {
        (void) snprintf(err->field, sizeof err->field, "%.64s", keyword);
        (void) snprintf(err->reason, sizeof err->reason, "the schema uses a keyword or value outside the subset");
        return -EBADMSG;
}

/* Appends ".key" (or "key" at the top) or "[i]"; returns the length to
 * restore. A key is the model's: only printable ASCII, cut. A path too long
 * for the buffer is cut, which only shortens a message. */
static size_t path_push_key(struct path *p, const char *key) {
        size_t old = p->len, k = 0;

        if (p->len > 0 && p->len < sizeof p->buf - 1)
                p->buf[p->len++] = '.';
        for (; key[k] && k < KEY_SHOWN_MAX && p->len < sizeof p->buf - 1; k++)
                p->buf[p->len++] = key[k] >= 0x20 && key[k] < 0x7f ? key[k] : '?';
        p->buf[p->len] = '\0';
        return old;
}

static size_t path_push_index(struct path *p, size_t i) {
        size_t old = p->len;
        int n = snprintf(p->buf + p->len, sizeof p->buf - p->len, "[%zu]", i);
        if (n > 0)
                p->len = MIN(p->len + (size_t) n, sizeof p->buf - 1);
        return old;
}

static void path_pop(struct path *p, size_t old) {
        p->len = old;
        p->buf[old] = '\0';
}

static struct json_object *kw(struct json_object *schema, const char *k) {
        struct json_object *v = NULL;
        return json_object_object_get_ex(schema, k, &v) ? v : NULL;
}

/* 0: absent; 1: *ret set; -EBADMSG: not an integer. */
static int kw_int(struct json_object *schema, const char *k, int64_t *ret, struct schema_error *err) {
        struct json_object *v = kw(schema, k);
        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return bad_schema(err, k);
        *ret = json_object_get_int64(v);
        return 1;
}

static int check_keywords(struct json_object *schema, struct schema_error *err) {
        if (!json_object_is_type(schema, json_type_object))
                return bad_schema(err, "(schema)");
        json_object_object_foreach(schema, k, v) {
                bool known = false;
                (void) v;
                for (size_t i = 0; i < ELEMENTSOF(keywords) && !known; i++)
                        known = strcmp(k, keywords[i]) == 0;
                if (!known)
                        return bad_schema(err, k);
        }
        return 0;
}

/* 1: v is of the type (or v is NULL); 0: not; -EBADMSG: unknown type. */
static int type_matches(const char *type, struct json_object *v, const char **ret_what) {
        static const struct {
                const char *name, *what;
                enum json_type t1, t2;
        } types[] = {
                { "object", "an object", json_type_object, json_type_object },
                { "string", "a string", json_type_string, json_type_string },
                { "integer", "an integer", json_type_int, json_type_int },
                { "number", "a number", json_type_int, json_type_double },
                { "boolean", "true or false", json_type_boolean, json_type_boolean },
                { "array", "a list", json_type_array, json_type_array },
        };
        for (size_t i = 0; i < ELEMENTSOF(types); i++)
                if (strcmp(type, types[i].name) == 0) {
                        *ret_what = types[i].what;
                        return !v || json_object_is_type(v, types[i].t1) || json_object_is_type(v, types[i].t2);
                }
        return -EBADMSG;
}

static int check_type(struct json_object *schema, struct json_object *v, const struct path *p,
                      struct schema_error *err) {
        struct json_object *t = kw(schema, "type");
        const char *what = NULL;

        if (!t)
                return 0;
        if (!json_object_is_type(t, json_type_string))
                return bad_schema(err, "type");
        int r = type_matches(json_object_get_string(t), v, &what);
        if (r < 0)
                return bad_schema(err, "type");
        return r ? 0 : fail(err, p, "must be %s", what);
}

static bool enum_equal(struct json_object *e, struct json_object *v) {
        if (json_object_is_type(e, json_type_string))
                return json_object_is_type(v, json_type_string) &&
                       json_object_get_string_len(e) == json_object_get_string_len(v) &&
                       memcmp(json_object_get_string(e), json_object_get_string(v),
                              (size_t) json_object_get_string_len(e)) == 0;
        return json_object_is_type(v, json_type_int) && json_object_get_int64(e) == json_object_get_int64(v);
}

static int check_enum(struct json_object *schema, struct json_object *v, const struct path *p,
                      struct schema_error *err) {
        struct json_object *e = kw(schema, "enum");
        char list[SCHEMA_REASON_MAX - 32] = "";
        size_t len = 0;
        bool found = false;

        if (!e)
                return 0;
        if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) == 0)
                return bad_schema(err, "enum");
        for (size_t i = 0; i < json_object_array_length(e); i++) {
                struct json_object *x = json_object_array_get_idx(e, i);
                if (!json_object_is_type(x, json_type_string) && !json_object_is_type(x, json_type_int))
                        return bad_schema(err, "enum");
                if (v && enum_equal(x, v))
                        found = true;
                if (len < sizeof list)
                        len += (size_t) snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                                 json_object_get_string(x));
        }
        return !v || found ? 0 : fail(err, p, "must be one of: %s", list);
}

static size_t utf8_chars(const char *s, size_t n) {
        size_t c = 0;
        for (size_t i = 0; i < n; i++)
                c += ((unsigned char) s[i] & 0xc0) != 0x80;
        return c;
}

static int check_string(struct json_object *schema, struct json_object *v, const struct path *p,
                        struct schema_error *err) {
        bool is = v && json_object_is_type(v, json_type_string);
        const char *s = is ? json_object_get_string(v) : NULL;
        size_t n = is ? (size_t) json_object_get_string_len(v) : 0;
        int64_t lim;
        int r;

        if ((r = kw_int(schema, "maxLength", &lim, err)) < 0)
                return r;
        if (r && is && utf8_chars(s, n) > (uint64_t) MAX(lim, 0))
                return fail(err, p, "must be at most %lld characters", (long long) lim);
        if ((r = kw_int(schema, "minLength", &lim, err)) < 0)
                return r;
        if (r && is && lim > 0 && utf8_chars(s, n) < (uint64_t) lim)
                return fail(err, p, "must be at least %lld characters", (long long) lim);

        struct json_object *pat = kw(schema, "pattern");
        if (!pat)
                return 0;
        for (size_t i = 0; json_object_is_type(pat, json_type_string) && i < ELEMENTSOF(patterns); i++)
                if (strcmp(json_object_get_string(pat), patterns[i].pattern) == 0)
                        return !is || patterns[i].match(s, n) ? 0 : fail(err, p, "%s", patterns[i].reason);
        return bad_schema(err, "pattern");
}

static int check_number(struct json_object *schema, struct json_object *v, const struct path *p,
                        struct schema_error *err) {
        bool is = v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
        int64_t lim;
        int r;

        /* An integer past INT64_MAX reads as INT64_MAX: still above any maximum. */
        if ((r = kw_int(schema, "minimum", &lim, err)) < 0)
                return r;
        if (r && is && (json_object_is_type(v, json_type_int) ? json_object_get_int64(v) < lim
                                                              : !(json_object_get_double(v) >= (double) lim)))
                return fail(err, p, "must be at least %lld", (long long) lim);
        if ((r = kw_int(schema, "maximum", &lim, err)) < 0)
                return r;
        if (r && is && (json_object_is_type(v, json_type_int) ? json_object_get_int64(v) > lim
                                                              : !(json_object_get_double(v) <= (double) lim)))
                return fail(err, p, "must be at most %lld", (long long) lim);
        return 0;
}

static int validate(struct json_object *schema, struct json_object *v, struct path *p, struct schema_error *err,
                    unsigned depth);

/* json-c reads JSON null as NULL, which validate() takes for "no value":
 * a null where the schema names a type is refused here. */
static int validate_present(struct json_object *schema, struct json_object *x, struct path *p,
                            struct schema_error *err, unsigned depth) {
        if (x)
                return validate(schema, x, p, err, depth);
        int r = validate(schema, NULL, p, err, depth);
        if (r < 0)
                return r;
        return kw(schema, "type") ? fail(err, p, "must not be null") : 0;
}

/* The names a value may use, for the message about one it may not. */
static void allowed_list(struct json_object *props, char *buf, size_t size) {
        size_t len = 0;
        buf[0] = '\0';
        if (!props)
                return;
        json_object_object_foreach(props, k, x) {
                (void) x;
                if (len < size)
                        len += (size_t) snprintf(buf + len, size - len, "%s%s", len ? ", " : "", k);
        }
}

static int check_object_schema(struct json_object *props, struct json_object *req, struct json_object *addl,
                               struct schema_error *err) {
        if (props && !json_object_is_type(props, json_type_object))
                return bad_schema(err, "properties");
        if (addl && !json_object_is_type(addl, json_type_boolean))
                return bad_schema(err, "additionalProperties");
        if (req && !json_object_is_type(req, json_type_array))
                return bad_schema(err, "required");
        for (size_t i = 0; req && i < json_object_array_length(req); i++)
                if (!json_object_is_type(json_object_array_get_idx(req, i), json_type_string))
                        return bad_schema(err, "required");
        return 0;
}

static int check_unknown(struct json_object *props, struct json_object *v, struct path *p,
                         struct schema_error *err) {
        json_object_object_foreach(v, k, x) {
                (void) x;
                if (!props || !kw(props, k)) {
                        char allowed[SCHEMA_REASON_MAX - 48];
                        allowed_list(props, allowed, sizeof allowed);
                        (void) path_push_key(p, k);
                        return fail(err, p, "is not a known field (allowed: %s)", allowed);
                }
        }
        return 0;
}

static int check_properties(struct json_object *props, struct json_object *v, struct path *p,
                            struct schema_error *err, unsigned depth) {
        json_object_object_foreach(props, k, sub) {
                struct json_object *x = NULL;
                if (v && !json_object_object_get_ex(v, k, &x))
                        continue;
                size_t old = path_push_key(p, k);
                int r = v ? validate_present(sub, x, p, err, depth + 1) : validate(sub, NULL, p, err, depth + 1);
                if (r < 0)
                        return r;
                path_pop(p, old);
        }
        return 0;
}

static int check_object(struct json_object *schema, struct json_object *v, struct path *p, struct schema_error *err,
                        unsigned depth) {
        struct json_object *props = kw(schema, "properties"), *req = kw(schema, "required");
        struct json_object *addl = kw(schema, "additionalProperties");
        bool is = v && json_object_is_type(v, json_type_object);
        int r;

        if ((r = check_object_schema(props, req, addl, err)) < 0)
                return r;
        if (is && addl && !json_object_get_boolean(addl) && (r = check_unknown(props, v, p, err)) < 0)
                return r;
        for (size_t i = 0; is && req && i < json_object_array_length(req); i++) {
                const char *name = json_object_get_string(json_object_array_get_idx(req, i));
                if (!json_object_object_get_ex(v, name, NULL)) {
                        (void) path_push_key(p, name);
                        return fail(err, p, "is required");
                }
        }
        if (!props || (v && !is))
                return 0;
        return check_properties(props, is ? v : NULL, p, err, depth);
}

static int check_array(struct json_object *schema, struct json_object *v, struct path *p, struct schema_error *err,
                       unsigned depth) {
        bool is = v && json_object_is_type(v, json_type_array);
        size_t n = is ? json_object_array_length(v) : 0;
        struct json_object *items = kw(schema, "items");
        int64_t lim;
        int r;

        if ((r = kw_int(schema, "maxItems", &lim, err)) < 0)
                return r;
        if (r && is && n > (uint64_t) MAX(lim, 0))
                return fail(err, p, "must have at most %lld items", (long long) lim);
        if ((r = kw_int(schema, "minItems", &lim, err)) < 0)
                return r;
        if (r && is && lim > 0 && n < (uint64_t) lim)
                return fail(err, p, "must have at least %lld items", (long long) lim);
        if (!items)
                return 0;
        if (!v)
                return validate(items, NULL, p, err, depth + 1);
        for (size_t i = 0; i < n; i++) {
                size_t old = path_push_index(p, i);
                r = validate_present(items, json_object_array_get_idx(v, i), p, err, depth + 1);
                if (r < 0)
                        return r;
                path_pop(p, old);
        }
        return 0;
}

/* v NULL: check the schema alone. */
static int validate(struct json_object *schema, struct json_object *v, struct path *p, struct schema_error *err,
                    unsigned depth) {
        int r;

        if (depth > SCHEMA_DEPTH_MAX)
                return bad_schema(err, "(depth)");
        if ((r = check_keywords(schema, err)) < 0 || (r = check_type(schema, v, p, err)) < 0 ||
            (r = check_enum(schema, v, p, err)) < 0 || (r = check_string(schema, v, p, err)) < 0 ||
            (r = check_number(schema, v, p, err)) < 0 || (r = check_object(schema, v, p, err, depth)) < 0)
                return r;
        return check_array(schema, v, p, err, depth);
}

int schema_validate(struct json_object *schema, struct json_object *value, struct schema_error *err) {
        struct path p = { .len = 0 };

        *err = (struct schema_error) {};
        p.buf[0] = '\0';
        return validate_present(schema, value, &p, err, 0);
}

int schema_check(struct json_object *schema, struct schema_error *err) {
        struct path p = { .len = 0 };
        *err = (struct schema_error) {};
        p.buf[0] = '\0';
        return validate(schema, NULL, &p, err, 0);
}
