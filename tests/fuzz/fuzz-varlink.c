/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for proto/varlink.c: the input is a byte stream from a
 * peer, fed to a reader in pieces whose sizes derive from the data; every
 * message is parsed as a call and as a reply, and whatever parses is built
 * again and must parse back to the same thing. The raw input also goes
 * through utf8_sanitize (output must be valid UTF-8 without NUL),
 * base64_encode (and back through base64_decode to the same bytes), and
 * base64_decode as if it were a peer's base64 (what it accepts must
 * encode back to exactly the input: the decoder is canonical).
 */

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DEPTH 16u

static void check_call(const char *m, size_t n) {
        struct varlink_call c, c2;
        char *buf;
        size_t len;
        int r;

        if (varlink_call_parse(m, n, FUZZ_DEPTH, &c) < 0)
                return;
        assert(varlink_method_name_valid(c.method));
        assert(c.more + c.oneway + c.upgrade <= 1);

        if (!c.upgrade) {
                r = varlink_call_build(c.method, c.parameters, c.more, c.oneway, &buf, &len);
                assert(r == 0);
                assert(buf[len - 1] == 0 && strlen(buf) == len - 1);
                assert(varlink_call_parse(buf, len - 1, FUZZ_DEPTH, &c2) == 0);
                assert(strcmp(c.method, c2.method) == 0);
                assert(c.more == c2.more && c.oneway == c2.oneway);
                assert(json_object_equal(c.parameters, c2.parameters));
                varlink_call_done(&c2);
                free(buf);
        }

        r = varlink_reply_build(c.parameters, c.more, &buf, &len);
        assert(r == 0);
        free(buf);
        varlink_call_done(&c);
}

static void check_reply(const char *m, size_t n) {
        struct varlink_reply p, p2;
        char *buf;
        size_t len;
        int r;

        if (varlink_reply_parse(m, n, FUZZ_DEPTH, &p) < 0)
                return;
        if (p.error)
                r = varlink_error_build(p.error, p.parameters, &buf, &len);
        else
                r = varlink_reply_build(p.parameters, p.continues, &buf, &len);
        assert(r == 0);
        assert(varlink_reply_parse(buf, len - 1, FUZZ_DEPTH, &p2) == 0);
        assert(!p.error == !p2.error);
        assert(!p.error || strcmp(p.error, p2.error) == 0);
        assert(p.continues == p2.continues);
        assert(json_object_equal(p.parameters, p2.parameters));
        varlink_reply_done(&p2);
        varlink_reply_done(&p);
        free(buf);
}

static void check_text(const uint8_t *data, size_t size) {
        char *s;

        assert(utf8_sanitize(data, size, &s) == 0);
        assert(utf8_valid(s, strlen(s)));
        assert(strlen(s) <= 3 * size);
        if (utf8_valid(data, size) && !memchr(data, 0, size))
                assert(strlen(s) == size && memcmp(s, data, size) == 0);
        free(s);

        assert(base64_encode(data, size, &s) == 0);
        assert(strlen(s) == (size + 2) / 3 * 4);
        void *back;
        size_t back_len;
        assert(base64_decode(s, strlen(s), &back, &back_len) == 0);
        assert(back_len == size && memcmp(back, data, size) == 0);
        free(back);
        free(s);

        if (base64_decode((const char *) data, size, &back, &back_len) == 0) {
                assert(back_len <= size / 4 * 3);
                assert(base64_encode(back, back_len, &s) == 0);
                assert(strlen(s) == size && memcmp(s, data, size) == 0);
                free(s);
                free(back);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct varlink_reader r;
        uint32_t seed = 0;
        size_t max, fed = 0;

        check_text(data, size);
        if (size < 2)
                return 0;

        /* The first two bytes choose the message limit and piece sizes, so
         * both the -EMSGSIZE path and splits inside tokens are reached. */
        max = 16 + (size_t) data[0] * 16;
        seed = data[1];
        data += 2, size -= 2;

        varlink_reader_init(&r, max);
        while (fed < size) {
                seed = seed * 1103515245u + 12345u;
                size_t k = 1 + (seed >> 16) % 67;
                if (k > size - fed)
                        k = size - fed;
                if (varlink_reader_feed(&r, data + fed, k) < 0)
                        break;
                fed += k;

                for (;;) {
                        const char *m;
                        size_t n;
                        int q = varlink_reader_next(&r, &m, &n);

                        if (q <= 0)
                                break;
                        assert(n < max);
                        check_call(m, n);
                        check_reply(m, n);
                }
        }
        assert(varlink_reader_pending(&r) <= size);
        varlink_reader_done(&r);
        return 0;
}
