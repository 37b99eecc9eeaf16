/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Varlink wire codec: NUL framing, call/reply parsing and building, UTF-8
 * repair and base64 for tool output.
 *
 * Runs in every toolsd broker (as the peer's uid, no capabilities) on bytes
 * the peer sent, and in toolsctl on bytes the daemon sent. It does no I/O and
 * never logs. Everything here treats its input as hostile: sizes and nesting
 * are bounded, and json-c's leniencies (see json_text_check()) are closed.
 */

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "varlink.h"

#define streq(a, b) (strcmp((a), (b)) == 0)

/* ---- UTF-8 ------------------------------------------------------------ */

#define ASCII_HIGH_BITS UINT64_C(0x8080808080808080)
#define ASCII_LOW_BITS UINT64_C(0x0101010101010101)

/* Number of bytes a well-formed sequence led by c needs after it, with the
 * range its first continuation byte must fall in (Unicode Table 3-7: this is
 * what excludes overlongs, surrogates and code points above U+10FFFF).
 * Returns false for a byte that cannot lead a sequence. */
static bool utf8_lead(uint8_t c, size_t *ret_need, uint8_t *ret_lo, uint8_t *ret_hi) {
        if (c >= 0xC2 && c <= 0xDF) {
                *ret_need = 1, *ret_lo = 0x80, *ret_hi = 0xBF;
        } else if (c >= 0xE0 && c <= 0xEF) {
                *ret_need = 2;
                *ret_lo = c == 0xE0 ? 0xA0 : 0x80;
                *ret_hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
                *ret_need = 3;
                *ret_lo = c == 0xF0 ? 0x90 : 0x80;
                *ret_hi = c == 0xF4 ? 0x8F : 0xBF;
        } else
                return false;
        return true;
}

/* Length of the sequence at s if it is well-formed, else 0. */
static size_t utf8_sequence_len(const uint8_t *s, size_t n) {
        size_t need;
        uint8_t lo, hi;

        if (!utf8_lead(s[0], &need, &lo, &hi) || n - 1 < need)
                return 0;
        if (s[1] < lo || s[1] > hi)
                return 0;
        for (size_t k = 2; k <= need; k++)
                if (s[k] < 0x80 || s[k] > 0xBF)
                        return 0;
        return need + 1;
}

/* Length of the maximal subpart of the ill-formed sequence at s (at least
 * 1): the bytes a decoder replaces with one U+FFFD, as Unicode recommends, so
 * a truncated sequence costs one replacement and the next byte is not eaten. */
static size_t utf8_bad_len(const uint8_t *s, size_t n) {
        size_t need, k = 1;
        uint8_t lo, hi;

        if (!utf8_lead(s[0], &need, &lo, &hi))
                return 1;
        if (k < n && s[k] >= lo && s[k] <= hi) {
                k++;
                while (k <= need && k < n && s[k] >= 0x80 && s[k] <= 0xBF)
                        k++;
        }
        return k;
}

/* Length of the longest valid prefix of [s, s+n); with stop_at_nul a NUL
 * ends it too. ASCII, the common case for tool output, goes 8 bytes a step. */
static size_t utf8_valid_prefix(const uint8_t *s, size_t n, bool stop_at_nul) {
        size_t i = 0;

        while (i < n) {
                while (n - i >= 8) {
                        uint64_t w;

                        memcpy(&w, s + i, sizeof(w));
                        if (w & ASCII_HIGH_BITS)
                                break;
                        if (stop_at_nul && ((w - ASCII_LOW_BITS) & ~w & ASCII_HIGH_BITS))
                                break;
                        i += 8;
                }
                if (i >= n)
                        break;
                if (s[i] < 0x80) {
                        if (s[i] == 0 && stop_at_nul)
                                return i;
                        i++;
                        continue;
                }
                size_t k = utf8_sequence_len(s + i, n - i);
                if (k == 0)
                        return i;
                i += k;
        }
        return i;
}

bool utf8_valid(const void *data, size_t n) {
        if (n == 0)
                return true;
        return utf8_valid_prefix(data, n, false) == n;
}

/* Walks [s, s+n) replacing what is not valid UTF-8 (and NUL) with U+FFFD;
 * writes to out when given, and returns the output length either way. Run
 * once to size the buffer exactly and once to fill it: cheaper than a
 * worst-case 3n allocation, which for a large chunk means fresh pages. */
static size_t utf8_sanitize_pass(const uint8_t *s, size_t n, char *out) {
        size_t i = 0, o = 0;

        for (;;) {
                size_t good = utf8_valid_prefix(s + i, n - i, true);

                if (out)
                        memcpy(out + o, s + i, good);
                o += good;
                i += good;
                if (i >= n)
                        return o;
                if (out)
                        memcpy(out + o, "\xEF\xBF\xBD", 3);
                o += 3;
                i += s[i] == 0 ? 1 : utf8_bad_len(s + i, n - i);
        }
}

int utf8_sanitize(const void *data, size_t n, char **ret_str) {
        const uint8_t *s = data;
        size_t good, len;
        char *out;

        if (n == 0) {
                out = strdup("");
                if (!out)
                        return -ENOMEM;
                *ret_str = out;
                return 0;
        }
        /* At most 3 bytes out per byte in, so this cannot overflow first. */
        if (n > (SIZE_MAX - 1) / 3)
                return -ENOMEM;
        /* Most output is clean: validate it once, then copy. */
        good = utf8_valid_prefix(s, n, true);
        len = good == n ? n : good + utf8_sanitize_pass(s + good, n - good, NULL);
        out = malloc(len + 1);
        if (!out)
                return -ENOMEM;
        memcpy(out, s, good);
        if (good < n)
                (void) utf8_sanitize_pass(s + good, n - good, out + good);
        out[len] = 0;
        *ret_str = out;
        return 0;
}

/* ---- base64 ------------------------------------------------------------ */

int base64_encode(const void *data, size_t n, char **ret_str) {
        static const char table[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const uint8_t *s = data;
        char *out, *o;
        size_t i;

        if (n / 3 >= (SIZE_MAX - 5) / 4)
                return -ENOMEM;
        out = malloc((n + 2) / 3 * 4 + 1);
        if (!out)
                return -ENOMEM;

        for (i = 0, o = out; n - i >= 3; i += 3) {
                uint32_t v = (uint32_t) s[i] << 16 | (uint32_t) s[i + 1] << 8 | s[i + 2];

                *o++ = table[v >> 18];
                *o++ = table[(v >> 12) & 63];
                *o++ = table[(v >> 6) & 63];
                *o++ = table[v & 63];
        }
        if (n - i == 1) {
                *o++ = table[s[i] >> 2];
                *o++ = table[(s[i] & 3) << 4];
                *o++ = '=';
                *o++ = '=';
        } else if (n - i == 2) {
                *o++ = table[s[i] >> 2];
                *o++ = table[(s[i] & 3) << 4 | s[i + 1] >> 4];
                *o++ = table[(s[i + 1] & 15) << 2];
                *o++ = '=';
        }
        *o = 0;
        *ret_str = out;
        return 0;
}

static int base64_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *s, size_t n, void **ret, size_t *ret_len) {
        _cleanup_free_ uint8_t *out = NULL;
        size_t o = 0;

        if (n % 4 != 0)
                return -EINVAL;
        /* At most 3 bytes per 4 characters: n / 4 * 3 < n, no overflow. */
        out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i += 4) {
                /* '=' only ends the last group: "xx==" or "xxx=". */
                size_t pad = i + 4 < n ? 0 : (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=');
                int v[4] = {};

                for (size_t j = 0; j < 4 - pad; j++) {
                        v[j] = base64_value(s[i + j]);
                        if (v[j] < 0)
                                return -EILSEQ;
                }
                uint32_t w = (uint32_t) v[0] << 18 | (uint32_t) v[1] << 12 | (uint32_t) v[2] << 6 | (uint32_t) v[3];
                /* base64_encode() writes zero bits under the padding: only
                 * one text per byte string. */
                if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
                        return -EBADMSG;
                out[o++] = (uint8_t) (w >> 16);
                if (pad < 2)
                        out[o++] = (uint8_t) (w >> 8);
                if (pad < 1)
                        out[o++] = (uint8_t) w;
        }
        out[o] = 0;
        *ret_len = o;
        *ret = TAKE_PTR(out);
        return 0;
}

/* ---- framing ----------------------------------------------------------- */

void varlink_reader_init(struct varlink_reader *r, size_t max_message) {
        *r = (struct varlink_reader) {
                .max = max_message > 0 ? max_message : VARLINK_MESSAGE_MAX_DEFAULT,
        };
}

void varlink_reader_done(struct varlink_reader *r) {
        free(r->buf);
        varlink_reader_init(r, r->max);
}

size_t varlink_reader_pending(const struct varlink_reader *r) {
        return r->len - r->start;
}

/* Finds the NUL ending the first unconsumed message. Only bytes past
 * r->scan are searched, and never more than max of them, so a peer trickling
 * a huge message costs O(n) in all, not O(n²). */
static int reader_find(struct varlink_reader *r, size_t *ret_nul) {
        size_t end = r->start + MIN(r->len - r->start, r->max);
        const char *p;

        p = r->scan < end ? memchr(r->buf + r->scan, 0, end - r->scan) : NULL;
        if (p) {
                r->scan = (size_t) (p - r->buf);
                *ret_nul = r->scan;
                return 1;
        }
        r->scan = end;
        if (end - r->start >= r->max)
                return -EMSGSIZE;
        return 0;
}

/* Makes room for n more bytes. Consumed bytes are dropped only when they
 * are at least as many as the bytes moved, so compaction is amortised O(1)
 * per byte even when the caller holds pipelined messages back. */
static int reader_reserve(struct varlink_reader *r, size_t n) {
        size_t pending = r->len - r->start, cap;
        char *b;

        if (r->start == r->len)
                r->start = r->len = r->scan = 0;
        if (n <= r->cap - r->len)
                return 0;

        if (r->start > 0 && r->start >= pending) {
                memmove(r->buf, r->buf + r->start, pending);
                r->scan -= r->start;
                r->len = pending;
                r->start = 0;
                if (n <= r->cap - r->len)
                        return 0;
        }

        if (n > SIZE_MAX / 2 - r->len)
                return -ENOMEM;
        cap = MAX(MAX(r->cap * 2, r->len + n), (size_t) 4096);
        b = realloc(r->buf, cap);
        if (!b)
                return -ENOMEM;
        r->buf = b;
        r->cap = cap;
        return 0;
}

int varlink_reader_feed(struct varlink_reader *r, const void *data, size_t n) {
        size_t nul;
        int k;

        if (n == 0)
                return 0;
        k = reader_reserve(r, n);
        if (k < 0)
                return k;
        memcpy(r->buf + r->len, data, n);
        r->len += n;

        k = reader_find(r, &nul);
        return k < 0 ? k : 0;
}

int varlink_reader_next(struct varlink_reader *r, const char **ret_msg, size_t *ret_len) {
        size_t nul;
        int k;

        k = reader_find(r, &nul);
        if (k <= 0)
                return k;
        *ret_msg = r->buf + r->start;
        *ret_len = nul - r->start;
        r->start = r->scan = nul + 1;
        return 1;
}

/* ---- names ------------------------------------------------------------- */

static bool ascii_lower_or_digit(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* varlink.org: [a-z]([-]*[a-z0-9])*(\.[a-z0-9]([-]*[a-z0-9])*)+ over
 * [s, s+n). systemd also allows upper case; the spec and we do not. */
static bool interface_name_valid(const char *s, size_t n) {
        size_t labels = 0;

        if (n == 0 || !(s[0] >= 'a' && s[0] <= 'z'))
                return false;
        for (size_t i = 0; i < n; labels++) {
                if (i > 0 && s[i++] != '.')
                        return false;
                if (i >= n || !ascii_lower_or_digit(s[i]))
                        return false;
                while (i < n && (ascii_lower_or_digit(s[i]) || s[i] == '-'))
                        i++;
                if (s[i - 1] == '-')
                        return false;
        }
        return labels >= 2;
}

static bool member_name_valid(const char *s) {
        if (!(s[0] >= 'A' && s[0] <= 'Z'))
                return false;
        for (s++; *s; s++)
                if (!((*s >= 'A' && *s <= 'Z') || ascii_lower_or_digit(*s)))
                        return false;
        return true;
}

bool varlink_method_name_valid(const char *method) {
        const char *dot;

        if (!method)
                return false;
        dot = strrchr(method, '.');
        return dot && interface_name_valid(method, (size_t) (dot - method)) && member_name_valid(dot + 1);
}

int varlink_method_split(const char *method, char **ret_interface, const char **ret_member) {
        char *copy, *dot;

        if (!varlink_method_name_valid(method))
                return -EINVAL;
        if (!ret_interface) {
                /* Nothing to own: the member points into method itself. */
                if (ret_member)
                        *ret_member = strrchr(method, '.') + 1;
                return 0;
        }
        copy = strdup(method);
        if (!copy)
                return -ENOMEM;
        dot = strrchr(copy, '.');
        *dot = 0;
        *ret_interface = copy;
        if (ret_member)
                *ret_member = dot + 1;
        return 0;
}

/* ---- JSON checks ------------------------------------------------------- */

static int hex4(const char *s, size_t n) {
        int v = 0;

        if (n < 4)
                return -1;
        for (size_t k = 0; k < 4; k++) {
                char c = s[k];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (d < 0)
                        return -1;
                v = v << 4 | d;
        }
        return v;
}

/* Scans the string starting at s[*i] (its opening quote). json-c accepts raw
 * control characters, turns unpaired surrogate escapes into U+FFFD and cuts
 * keys at \u0000: refuse all three rather than parse something other than
 * what was sent. */
static int string_check(const char *s, size_t n, size_t *i) {
        size_t j = *i + 1;

        while (j < n && s[j] != '"') {
                if ((uint8_t) s[j] < 0x20)
                        return -EBADMSG;
                if (s[j] != '\\') {
                        j++;
                        continue;
                }
                if (j + 1 >= n)
                        return -EBADMSG;
                if (s[j + 1] != 'u') {
                        j += 2;
                        continue;
                }
                int u = hex4(s + j + 2, n - j - 2);
                if (u <= 0 || (u >= 0xDC00 && u <= 0xDFFF))
                        return -EBADMSG;
                j += 6;
                if (u >= 0xD800 && u <= 0xDBFF) {
                        if (n - j < 6 || s[j] != '\\' || s[j + 1] != 'u')
                                return -EBADMSG;
                        int low = hex4(s + j + 2, n - j - 2);
                        if (low < 0xDC00 || low > 0xDFFF)
                                return -EBADMSG;
                        j += 6;
                }
        }
        if (j >= n)
                return -EBADMSG;
        *i = j + 1;
        return 0;
}

static size_t skip_digits(const char *s, size_t n, size_t i) {
        while (i < n && s[i] >= '0' && s[i] <= '9')
                i++;
        return i;
}

/* Checks the number at s[*i] against RFC 8259 (json-c takes "1.") and keeps
 * integers within what json-c stores exactly (it saturates the rest). */
static int number_check(const char *s, size_t n, size_t *i) {
        size_t b = *i, j = *i, k;
        bool integer = true;
        char buf[24];

        if (s[j] == '-')
                j++;
        if (j < n && s[j] == '0')
                j++;
        else if (j < n && s[j] >= '1' && s[j] <= '9')
                j = skip_digits(s, n, j);
        else
                return -EBADMSG;
        if (j < n && s[j] == '.') {
                integer = false;
                k = skip_digits(s, n, j + 1);
                if (k == j + 1)
                        return -EBADMSG;
                j = k;
        }
        if (j < n && (s[j] == 'e' || s[j] == 'E')) {
                integer = false;
                j++;
                if (j < n && (s[j] == '+' || s[j] == '-'))
                        j++;
                k = skip_digits(s, n, j);
                if (k == j)
                        return -EBADMSG;
                j = k;
        }
        *i = j;
        if (!integer)
                return 0;

        if (j - b >= sizeof(buf))
                return -EBADMSG;
        memcpy(buf, s + b, j - b);
        buf[j - b] = 0;
        errno = 0;
        if (buf[0] == '-')
                (void) strtoll(buf, NULL, 10);
        else
                (void) strtoull(buf, NULL, 10);
        return errno == ERANGE ? -EBADMSG : 0;
}

/* A second pass over text json-c accepted, closing its leniencies (single
 * quotes, NaN/Infinity, see above) and counting the members of all objects:
 * json-c keeps the last of duplicate keys, so fewer keys in the tree than
 * members in the text means a duplicate, which we refuse so that no two
 * readers of a message can disagree on what it says. */
static int json_text_check(const char *s, size_t n, size_t *ret_members) {
        size_t members = 0;
        int r;

        for (size_t i = 0; i < n;) {
                char c = s[i];

                if (c == '"')
                        r = string_check(s, n, &i);
                else if (c == '-' || (c >= '0' && c <= '9'))
                        r = number_check(s, n, &i);
                else if (c == '\'' || c == 'N' || c == 'I')
                        return -EBADMSG;
                else {
                        members += c == ':';
                        i++;
                        r = 0;
                }
                if (r < 0)
                        return r;
        }
        *ret_members = members;
        return 0;
}

static bool json_string_ok(const char *s, size_t n) {
        return n == 0 || utf8_valid_prefix((const uint8_t *) s, n, true) == n;
}

/* Walks a tree: nesting within depth_left, strings UTF-8 without NUL,
 * numbers finite; adds up the keys of all objects. Recursion is bounded by
 * depth_left. */
static int json_tree_check(struct json_object *o, unsigned depth_left, size_t *n_keys) {
        int r;

        switch (json_object_get_type(o)) {
        case json_type_double:
                return isfinite(json_object_get_double(o)) ? 0 : -EBADMSG;
        case json_type_string:
                return json_string_ok(json_object_get_string(o), (size_t) json_object_get_string_len(o)) ? 0 : -EBADMSG;
        case json_type_object:
                if (depth_left == 0)
                        return -EBADMSG;
                *n_keys += (size_t) json_object_object_length(o);
                json_object_object_foreach(o, key, val) {
                        if (!json_string_ok(key, strlen(key)))
                                return -EBADMSG;
                        r = json_tree_check(val, depth_left - 1, n_keys);
                        if (r < 0)
                                return r;
                }
                return 0;
        case json_type_array:
                if (depth_left == 0)
                        return -EBADMSG;
                for (size_t k = 0; k < json_object_array_length(o); k++) {
                        r = json_tree_check(json_object_array_get_idx(o, k), depth_left - 1, n_keys);
                        if (r < 0)
                                return r;
                }
                return 0;
        case json_type_null:
        case json_type_boolean:
        case json_type_int:
                return 0;
        default:
                return -EBADMSG;
        }
}

/* Parses one message into its top-level object, refusing whatever is not
 * exactly one strict JSON object within max_depth. */
static int message_parse(const char *msg, size_t len, unsigned max_depth, struct json_object **ret) {
        _cleanup_json_ struct json_object *obj = NULL;
        struct json_tokener *tok;
        size_t members, keys = 0, end;
        int r;

        if (len == 0 || len > INT_MAX || max_depth == 0 || max_depth >= INT_MAX)
                return -EBADMSG;
        /* json-c's own check lets overlongs, surrogates and > U+10FFFF
         * through, and a NUL would end its input early. */
        if (utf8_valid_prefix((const uint8_t *) msg, len, true) != len)
                return -EBADMSG;

        /* json-c's depth counts one level more than the containers it allows. */
        tok = json_tokener_new_ex((int) max_depth + 1);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        obj = json_tokener_parse_ex(tok, msg, (int) len);
        end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        /* json-c consumes trailing whitespace, so anything left is garbage. */
        if (!obj || end != len || !json_object_is_type(obj, json_type_object))
                return -EBADMSG;

        r = json_text_check(msg, len, &members);
        if (r < 0)
                return r;
        r = json_tree_check(obj, max_depth, &keys);
        if (r < 0)
                return r;
        if (keys != members)
                return -EBADMSG;

        *ret = TAKE_PTR(obj);
        return 0;
}

static int bool_member(struct json_object *v, bool *ret) {
        if (!json_object_is_type(v, json_type_boolean))
                return -EBADMSG;
        *ret = json_object_get_boolean(v);
        return 0;
}

/* parameters may be absent or null; both mean {}. Takes a new reference. */
static int parameters_take(struct json_object *p, struct json_object **ret) {
        *ret = p ? json_object_get(p) : json_object_new_object();
        return *ret ? 0 : -ENOMEM;
}

/* ---- calls and replies ------------------------------------------------- */

int varlink_call_parse(const char *msg, size_t len, unsigned max_depth, struct varlink_call *ret) {
        _cleanup_json_ struct json_object *obj = NULL;
        struct json_object *params = NULL;
        const char *method = NULL;
        bool more = false, oneway = false, upgrade = false;
        char *m;
        int r;

        r = message_parse(msg, len, max_depth, &obj);
        if (r < 0)
                return r;

        /* Keys cannot be duplicated or cut at a NUL here (message_parse), so
         * each name below is matched at most once and exactly. */
        json_object_object_foreach(obj, key, val) {
                if (streq(key, "method")) {
                        if (!json_object_is_type(val, json_type_string))
                                return -EBADMSG;
                        method = json_object_get_string(val);
                } else if (streq(key, "parameters")) {
                        if (val && !json_object_is_type(val, json_type_object))
                                return -EBADMSG;
                        params = val;
                } else if (streq(key, "more"))
                        r = bool_member(val, &more);
                else if (streq(key, "oneway"))
                        r = bool_member(val, &oneway);
                else if (streq(key, "upgrade"))
                        r = bool_member(val, &upgrade);
                else
                        return -EBADMSG;
                if (r < 0)
                        return r;
        }

        if (!varlink_method_name_valid(method))
                return -EBADMSG;
        /* Each asks for a different reply pattern; like systemd, refuse a
         * call that asks for two. */
        if (more + oneway + upgrade > 1)
                return -EBADMSG;

        m = strdup(method);
        if (!m)
                return -ENOMEM;
        r = parameters_take(params, &params);
        if (r < 0) {
                free(m);
                return r;
        }
        *ret = (struct varlink_call) {
                .method = m,
                .parameters = params,
                .more = more,
                .oneway = oneway,
                .upgrade = upgrade,
        };
        return 0;
}

void varlink_call_done(struct varlink_call *c) {
        free(c->method);
        json_object_put(c->parameters);
        *c = (struct varlink_call) {};
}

/* Unknown keys are refused on replies too: the spec leaves replies open,
 * but the client only ever talks to toolsd, and a symmetric codec means a
 * reply that smuggles extra state is caught in tests rather than ignored. */
int varlink_reply_parse(const char *msg, size_t len, unsigned max_depth, struct varlink_reply *ret) {
        _cleanup_json_ struct json_object *obj = NULL;
        struct json_object *params = NULL;
        const char *error = NULL;
        bool continues = false;
        char *e = NULL;
        int r;

        r = message_parse(msg, len, max_depth, &obj);
        if (r < 0)
                return r;

        json_object_object_foreach(obj, key, val) {
                if (streq(key, "error")) {
                        if (!json_object_is_type(val, json_type_string))
                                return -EBADMSG;
                        error = json_object_get_string(val);
                        if (!varlink_method_name_valid(error))
                                return -EBADMSG;
                } else if (streq(key, "parameters")) {
                        if (val && !json_object_is_type(val, json_type_object))
                                return -EBADMSG;
                        params = val;
                } else if (streq(key, "continues")) {
                        r = bool_member(val, &continues);
                        if (r < 0)
                                return r;
                } else
                        return -EBADMSG;
        }
        /* An error ends the call; more replies cannot follow it. */
        if (error && continues)
                return -EBADMSG;

        if (error) {
                e = strdup(error);
                if (!e)
                        return -ENOMEM;
        }
        r = parameters_take(params, &params);
        if (r < 0) {
                free(e);
                return r;
        }
        *ret = (struct varlink_reply) {
                .error = e,
                .parameters = params,
                .continues = continues,
        };
        return 0;
}

void varlink_reply_done(struct varlink_reply *r) {
        free(r->error);
        json_object_put(r->parameters);
        *r = (struct varlink_reply) {};
}

/* ---- builders ---------------------------------------------------------- */

static int member_add(struct json_object *o, const char *key, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int parameters_add(struct json_object *o, struct json_object *parameters) {
        size_t keys = 0;

        if (parameters) {
                if (!json_object_is_type(parameters, json_type_object))
                        return -EINVAL;
                /* The message object is one level, parameters the next. */
                if (json_tree_check(parameters, VARLINK_DEPTH_MAX_DEFAULT - 1, &keys) < 0)
                        return -EINVAL;
                return member_add(o, "parameters", json_object_get(parameters));
        }
        return member_add(o, "parameters", json_object_new_object());
}

static int message_finish(struct json_object *o, char **ret_buf, size_t *ret_len) {
        const char *s;
        size_t n;
        char *buf;

        s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        if (!s)
                return -ENOMEM;
        if (n >= VARLINK_MESSAGE_MAX_DEFAULT)
                return -EMSGSIZE;
        buf = malloc(n + 1);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, s, n);
        buf[n] = 0;
        *ret_buf = buf;
        *ret_len = n + 1;
        return 0;
}

int varlink_call_build(const char *method, struct json_object *parameters,
                       bool more, bool oneway, char **ret_buf, size_t *ret_len) {
        _cleanup_json_ struct json_object *o = NULL;
        int r;

        if (!varlink_method_name_valid(method) || (more && oneway))
                return -EINVAL;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = member_add(o, "method", json_object_new_string(method));
        if (r < 0)
                return r;
        r = parameters_add(o, parameters);
        if (r < 0)
                return r;
        if (more) {
                r = member_add(o, "more", json_object_new_boolean(1));
                if (r < 0)
                        return r;
        }
        if (oneway) {
                r = member_add(o, "oneway", json_object_new_boolean(1));
                if (r < 0)
                        return r;
        }
        return message_finish(o, ret_buf, ret_len);
}

int varlink_reply_build(struct json_object *parameters, bool continues,
                        char **ret_buf, size_t *ret_len) {
        _cleanup_json_ struct json_object *o = NULL;
        int r;

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = parameters_add(o, parameters);
        if (r < 0)
                return r;
        if (continues) {
                r = member_add(o, "continues", json_object_new_boolean(1));
                if (r < 0)
                        return r;
        }
        return message_finish(o, ret_buf, ret_len);
}

int varlink_error_build(const char *error, struct json_object *parameters,
                        char **ret_buf, size_t *ret_len) {
        _cleanup_json_ struct json_object *o = NULL;
        int r;

        if (!varlink_method_name_valid(error))
                return -EINVAL;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = member_add(o, "error", json_object_new_string(error));
        if (r < 0)
                return r;
        r = parameters_add(o, parameters);
        if (r < 0)
                return r;
        return message_finish(o, ret_buf, ret_len);
}
