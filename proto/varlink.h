/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Varlink wire codec: NUL-framed JSON messages, calls and replies.
 *
 * Shared by toolsd (every process that speaks to a peer) and toolsctl. It does
 * no I/O and never logs: the caller feeds it bytes it read and writes the
 * bytes it builds. Every function returns 0 or a positive count on success
 * and a negative errno on failure; ret_* outputs are set only on success.
 * Input is the peer's: every size and nesting depth is bounded.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

/* Like systemd's varlink: one message is at most 16 MiB. */
#define VARLINK_MESSAGE_MAX_DEFAULT (16u * 1024u * 1024u)
#define VARLINK_DEPTH_MAX_DEFAULT 64u

/* A byte buffer that collects a stream and hands out NUL-terminated messages.
 * One read may hold half a message or several. */
struct varlink_reader {
        char *buf;
        size_t len;     /* bytes held */
        size_t start;   /* offset of the first unconsumed byte */
        size_t cap;
        size_t max;     /* largest message, NUL included */
        size_t scan;    /* [start, scan) is known to hold no NUL: each byte is searched once */
};

/* max_message 0 means VARLINK_MESSAGE_MAX_DEFAULT. */
void varlink_reader_init(struct varlink_reader *r, size_t max_message);
void varlink_reader_done(struct varlink_reader *r);

/* Appends n bytes. -EMSGSIZE when the unconsumed bytes hold no NUL within
 * max bytes (the peer sent an oversized message); -ENOMEM. */
int varlink_reader_feed(struct varlink_reader *r, const void *data, size_t n);

/* Hands out the next whole message (without its NUL) in *ret_msg and *ret_len;
 * the pointer stays valid until the next feed or next call. Returns 1 when a
 * message was returned, 0 when more bytes are needed, -EMSGSIZE as above. */
int varlink_reader_next(struct varlink_reader *r, const char **ret_msg, size_t *ret_len);

/* Unconsumed bytes held (for bounding buffered pipelined input). */
size_t varlink_reader_pending(const struct varlink_reader *r);

/* A parsed call. parameters is never NULL: absent, null and {} all give an
 * empty object. The struct owns its members. */
struct varlink_call {
        char *method;
        struct json_object *parameters;
        bool more;
        bool oneway;
        bool upgrade;
};

/* Parses one message as a call. -EBADMSG for anything that is not a valid
 * call: invalid JSON or UTF-8, trailing bytes, nesting deeper than max_depth,
 * a non-object, a key other than method/parameters/more/oneway/upgrade, a
 * member of the wrong type, a missing or malformed method name, an embedded
 * NUL. The protocol says the connection is then closed. Stricter than json-c
 * alone: also refused are duplicate keys at any level, \u0000 and unpaired
 * surrogate escapes, integers outside int64/uint64 (json-c would saturate),
 * non-finite numbers, and more together with oneway or upgrade. Trailing JSON
 * whitespace is allowed (RFC 8259). */
int varlink_call_parse(const char *msg, size_t len, unsigned max_depth, struct varlink_call *ret);
void varlink_call_done(struct varlink_call *c);

/* A parsed reply (client side). parameters is never NULL. error is NULL for
 * a successful reply. */
struct varlink_reply {
        char *error;
        struct json_object *parameters;
        bool continues;
};

int varlink_reply_parse(const char *msg, size_t len, unsigned max_depth, struct varlink_reply *ret);
void varlink_reply_done(struct varlink_reply *r);

/* Builders. Each returns a malloc'd buffer holding the JSON text followed by
 * its terminating NUL; *ret_len counts the NUL. parameters may be NULL (sent
 * as {}); the builders do not take ownership of it. What they build, the
 * parsers above accept with the default limits: -EINVAL for a malformed
 * method or error name, parameters that are not an object, nest deeper than
 * VARLINK_DEPTH_MAX_DEFAULT or hold a string that is not UTF-8 or holds a
 * NUL, or a non-finite number; -EMSGSIZE beyond VARLINK_MESSAGE_MAX_DEFAULT. */
int varlink_call_build(const char *method, struct json_object *parameters,
                       bool more, bool oneway, char **ret_buf, size_t *ret_len);
int varlink_reply_build(struct json_object *parameters, bool continues,
                        char **ret_buf, size_t *ret_len);
int varlink_error_build(const char *error, struct json_object *parameters,
                        char **ret_buf, size_t *ret_len);

/* True for a well-formed fully-qualified method name ("io.toolsd.Call"):
 * an interface name (reverse-domain, lower-case labels) and a CamelCase
 * member. Splits it when ret_* are given (pointers into a copy the caller
 * frees with free(*ret_interface)). */
bool varlink_method_name_valid(const char *method);
int varlink_method_split(const char *method, char **ret_interface, const char **ret_member);

/* Output that is not guaranteed UTF-8 must not be put in a JSON string
 * as is. Returns true when [data, data+n) is valid UTF-8 (no overlongs,
 * no surrogates, nothing above U+10FFFF). */
bool utf8_valid(const void *data, size_t n);

/* Copies data into a NUL-terminated UTF-8 string, replacing every invalid
 * sequence with U+FFFD and NUL bytes with U+FFFD as well. */
int utf8_sanitize(const void *data, size_t n, char **ret_str);

/* Standard base64 (RFC 4648, with padding) for lossless binary output. */
int base64_encode(const void *data, size_t n, char **ret_str);

/* Decodes n characters of s as base64_encode() writes them, strictly: RFC
 * 4648 alphabet with '=' padding, no whitespace, no URL alphabet, no
 * non-zero bits under the padding, so each byte string has exactly one
 * text. *ret gets at most n / 4 * 3 bytes, malloc'd and NUL-terminated (the
 * NUL not counted in *ret_len). Returns 0; -EINVAL when n is not a multiple
 * of 4 (unpadded or truncated); -EILSEQ for a character outside A-Z a-z 0-9
 * + / or a misplaced '='; -EBADMSG for non-zero padding bits; -ENOMEM. */
int base64_decode(const char *s, size_t n, void **ret, size_t *ret_len);
