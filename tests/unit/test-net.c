/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of policy_net.c: the http_get URL check and address classes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "policy_net.h"

static struct sockaddr_storage addr(const char *s) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        if (strchr(s, ':')) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
                in6->sin6_family = AF_INET6;
                assert_int_equal(inet_pton(AF_INET6, s, &in6->sin6_addr), 1);
        } else {
                struct sockaddr_in *in = (struct sockaddr_in *) &ss;
                in->sin_family = AF_INET;
                assert_int_equal(inet_pton(AF_INET, s, &in->sin_addr), 1);
        }
        return ss;
}

static const struct {
        const char *addr;
        enum net_addr_class cls;
} addr_table[] = {
        { "8.8.8.8", NET_ADDR_PUBLIC },
        { "1.1.1.1", NET_ADDR_PUBLIC },
        { "93.184.216.34", NET_ADDR_PUBLIC },
        { "223.255.255.255", NET_ADDR_PUBLIC },
        { "11.0.0.1", NET_ADDR_PUBLIC },
        { "9.255.255.255", NET_ADDR_PUBLIC },
        { "172.15.255.255", NET_ADDR_PUBLIC },
        { "172.32.0.0", NET_ADDR_PUBLIC },
        { "100.63.255.255", NET_ADDR_PUBLIC },
        { "100.128.0.0", NET_ADDR_PUBLIC },
        { "198.17.255.255", NET_ADDR_PUBLIC },
        { "198.20.0.0", NET_ADDR_PUBLIC },
        { "192.169.0.1", NET_ADDR_PUBLIC },
        { "127.0.0.1", NET_ADDR_LOOPBACK },
        { "127.255.255.254", NET_ADDR_LOOPBACK },
        { "127.1.2.3", NET_ADDR_LOOPBACK },
        { "0.0.0.0", NET_ADDR_UNSPECIFIED },
        { "0.1.2.3", NET_ADDR_UNSPECIFIED },
        { "10.0.0.1", NET_ADDR_PRIVATE },
        { "10.255.255.255", NET_ADDR_PRIVATE },
        { "172.16.0.1", NET_ADDR_PRIVATE },
        { "172.31.255.255", NET_ADDR_PRIVATE },
        { "192.168.1.1", NET_ADDR_PRIVATE },
        { "100.64.0.1", NET_ADDR_PRIVATE },
        { "100.127.255.255", NET_ADDR_PRIVATE },
        { "198.18.0.1", NET_ADDR_PRIVATE },
        { "198.19.255.255", NET_ADDR_PRIVATE },
        { "169.254.0.1", NET_ADDR_LINK_LOCAL },
        { "169.254.169.253", NET_ADDR_LINK_LOCAL },
        { "169.254.169.254", NET_ADDR_METADATA },
        { "100.100.100.200", NET_ADDR_METADATA },
        { "224.0.0.1", NET_ADDR_MULTICAST },
        { "239.255.255.250", NET_ADDR_MULTICAST },
        { "255.255.255.255", NET_ADDR_BROADCAST },
        { "240.0.0.1", NET_ADDR_RESERVED },
        { "255.255.255.254", NET_ADDR_RESERVED },
        { "192.0.0.8", NET_ADDR_RESERVED },
        { "192.88.99.1", NET_ADDR_RESERVED },
        { "192.0.2.1", NET_ADDR_DOCUMENTATION },
        { "198.51.100.7", NET_ADDR_DOCUMENTATION },
        { "203.0.113.255", NET_ADDR_DOCUMENTATION },
        { "2606:4700:4700::1111", NET_ADDR_PUBLIC },
        { "2a00:1450:4001::1", NET_ADDR_PUBLIC },
        { "2001:4860:4860::8888", NET_ADDR_PUBLIC },
        { "::1", NET_ADDR_LOOPBACK },
        { "::", NET_ADDR_UNSPECIFIED },
        { "fc00::1", NET_ADDR_PRIVATE },
        { "fd12:3456::1", NET_ADDR_PRIVATE },
        { "fec0::1", NET_ADDR_PRIVATE },
        { "fe80::1", NET_ADDR_LINK_LOCAL },
        { "febf::1", NET_ADDR_LINK_LOCAL },
        { "ff02::1", NET_ADDR_MULTICAST },
        { "ff0e::1", NET_ADDR_MULTICAST },
        { "fd00:ec2::254", NET_ADDR_METADATA },
        { "::ffff:127.0.0.1", NET_ADDR_LOOPBACK },
        { "::ffff:10.1.2.3", NET_ADDR_PRIVATE },
        { "::ffff:169.254.169.254", NET_ADDR_METADATA },
        { "::ffff:8.8.8.8", NET_ADDR_PUBLIC },
        { "::ffff:0:192.168.0.1", NET_ADDR_PRIVATE },
        { "::127.0.0.1", NET_ADDR_LOOPBACK },
        { "::10.0.0.1", NET_ADDR_PRIVATE },
        { "::2", NET_ADDR_UNSPECIFIED },
        { "64:ff9b::7f00:1", NET_ADDR_LOOPBACK },
        { "64:ff9b::a9fe:a9fe", NET_ADDR_METADATA },
        { "64:ff9b::808:808", NET_ADDR_PUBLIC },
        { "64:ff9b:1::1", NET_ADDR_PRIVATE },
        { "2002:7f00:0001::1", NET_ADDR_LOOPBACK },
        { "2002:c0a8:0101::1", NET_ADDR_PRIVATE },
        { "2002:0808:0808::1", NET_ADDR_PUBLIC },
        { "2001::1", NET_ADDR_TUNNEL },
        { "2001:0:4136:e378:8000:63bf:3fff:fdd2", NET_ADDR_TUNNEL },
        { "2001:10::1", NET_ADDR_RESERVED },
        { "2001:1ff::1", NET_ADDR_RESERVED },
        { "2001:200::1", NET_ADDR_PUBLIC },
        { "2001:db8::1", NET_ADDR_DOCUMENTATION },
        { "3fff::1", NET_ADDR_DOCUMENTATION },
        { "100::1", NET_ADDR_RESERVED },
        { "4000::1", NET_ADDR_RESERVED },
        { "1::1", NET_ADDR_RESERVED },
        { "::ffff:255.255.255.255", NET_ADDR_BROADCAST },
};

static void test_addr_table(void **state) {
        assert_true(ELEMENTSOF(addr_table) >= 60);
        for (size_t i = 0; i < ELEMENTSOF(addr_table); i++) {
                struct sockaddr_storage ss = addr(addr_table[i].addr);
                enum net_addr_class c = net_addr_classify((struct sockaddr *) &ss);
                if (c != addr_table[i].cls)
                        fail_msg("%s: class %d, expected %d", addr_table[i].addr, (int) c,
                                 (int) addr_table[i].cls);
        }
}

static bool allowed(const char *a, bool lo, bool priv, const char **reason) {
        struct sockaddr_storage ss = addr(a);
        return net_addr_allowed((struct sockaddr *) &ss, lo, priv, reason);
}

static void test_addr_allowed(void **state) {
        const char *reason = "unset";

        assert_true(allowed("8.8.8.8", false, false, &reason));
        assert_string_equal(reason, "unset"); /* untouched on success */
        assert_false(allowed("127.0.0.1", false, false, &reason));
        assert_string_equal(reason, "loopback addresses are not allowed (HttpAllowLoopback=)");
        assert_true(allowed("127.0.0.1", true, false, NULL));
        assert_true(allowed("::1", true, false, NULL));
        assert_false(allowed("::1", false, true, NULL));
        assert_false(allowed("10.0.0.1", true, false, &reason));
        assert_string_equal(reason, "private addresses are not allowed (HttpAllowPrivate=)");
        assert_true(allowed("10.0.0.1", false, true, NULL));
        assert_false(allowed("fe80::1", true, false, &reason));
        assert_string_equal(reason, "link-local addresses are not allowed (HttpAllowPrivate=)");
        assert_true(allowed("169.254.1.1", false, true, NULL));
        assert_false(allowed("169.254.169.254", true, true, &reason));
        assert_string_equal(reason, "cloud metadata addresses are never allowed");
        assert_false(allowed("::ffff:169.254.169.254", true, true, NULL));
        assert_false(allowed("0.0.0.0", true, true, &reason));
        assert_string_equal(reason, "the unspecified address is never allowed");
        assert_false(allowed("224.0.0.1", true, true, &reason));
        assert_string_equal(reason, "multicast addresses are never allowed");
        assert_false(allowed("255.255.255.255", true, true, &reason));
        assert_string_equal(reason, "the broadcast address is never allowed");
        assert_false(allowed("192.0.2.1", true, true, &reason));
        assert_string_equal(reason, "documentation addresses are never allowed");
        assert_false(allowed("240.0.0.1", true, true, &reason));
        assert_string_equal(reason, "reserved addresses are never allowed");
        assert_false(allowed("2001::1", true, true, &reason));
        assert_string_equal(reason, "Teredo addresses are never allowed");

        struct sockaddr un = { .sa_family = AF_UNIX };
        assert_int_equal(net_addr_classify(&un), NET_ADDR_BAD_FAMILY);
        assert_false(net_addr_allowed(&un, true, true, &reason));
        assert_string_equal(reason, "only IPv4 and IPv6 addresses are allowed");
        assert_int_equal(net_addr_classify(NULL), NET_ADDR_BAD_FAMILY);
}

static void url_ok(const char *url, const char *scheme, const char *host, int port) {
        char *s = NULL, *h = NULL;
        const char *reason = NULL;
        int p = -1;

        int r = net_url_check(url, &s, &h, &p, &reason);
        if (r != 0)
                fail_msg("%s refused: %s", url, reason);
        assert_string_equal(s, scheme);
        assert_string_equal(h, host);
        assert_int_equal(p, port);
        free(s);
        free(h);
}

static void url_refused(const char *url, const char *why) {
        char *s = NULL, *h = NULL;
        const char *reason = NULL;
        int p = -1;

        int r = net_url_check(url, &s, &h, &p, &reason);
        if (r != -EPERM)
                fail_msg("%s: %d, expected a refusal", url, r);
        assert_null(s);
        assert_null(h);
        assert_int_equal(p, -1);
        if (strcmp(reason, why) != 0)
                fail_msg("%s: reason '%s', expected '%s'", url, reason, why);
}

static void test_url_ok(void **state) {
        url_ok("http://example.com", "http", "example.com", 80);
        url_ok("https://example.com/", "https", "example.com", 443);
        url_ok("HTTPS://Example.COM:8443/a/b?c=d#e", "https", "example.com", 8443);
        url_ok("http://127.0.0.1:1/", "http", "127.0.0.1", 1);
        url_ok("http://[::1]:65535/x", "http", "::1", 65535);
        url_ok("http://[2001:DB8::1]", "http", "2001:db8::1", 80);
        url_ok("http://a_b.example-1.org?q", "http", "a_b.example-1.org", 80);
        url_ok("http://localhost#frag", "http", "localhost", 80);
        url_ok("http://1.2.3.4.example/", "http", "1.2.3.4.example", 80);
        url_ok("http://x/%20%00", "http", "x", 80);
        assert_int_equal(net_url_check("http://x", NULL, NULL, NULL, NULL), 0);
}

static void test_url_refused(void **state) {
        const char *scheme = "only http:// and https:// URLs can be fetched";
        const char *port = "the port must be a number from 1 to 65535";
        const char *numeric = "a numeric host must be a dotted-quad IPv4 address";
        const char *charset = "the host name has a character that is not allowed";

        url_refused("", "the URL is empty");
        url_refused("ftp://example.com/", scheme);
        url_refused("file:///etc/passwd", scheme);
        url_refused("gopher://x/", scheme);
        url_refused("http:/x", scheme);
        url_refused("http:x", scheme);
        url_refused("//example.com", scheme);
        url_refused("httpx://example.com", scheme);
        url_refused("http://user@example.com/", "user names and passwords in URLs are not allowed");
        url_refused("http://user:pw@example.com/", "user names and passwords in URLs are not allowed");
        url_refused("http://evil.com@127.0.0.1/", "user names and passwords in URLs are not allowed");
        url_refused("http://", "the URL has no host");
        url_refused("http:///path", "the URL has no host");
        url_refused("http://:80/", "the URL has no host");
        url_refused("http://a b/", "the URL has a space, control or non-ASCII character (use %-encoding)");
        url_refused("http://a\tb/", "the URL has a space, control or non-ASCII character (use %-encoding)");
        url_refused("http://ex\xc3\xa4mple.com/", "the URL has a space, control or non-ASCII character (use %-encoding)");
        url_refused("http://x/\x7f", "the URL has a space, control or non-ASCII character (use %-encoding)");
        url_refused("http://a\\b@c/", "a backslash in the host part is not allowed");
        url_refused("http://example.com./", "the host name has an empty label");
        url_refused("http://.example.com/", "the host name has an empty label");
        url_refused("http://a..b/", "the host name has an empty label");
        url_refused("http://-a.com/", "the host name starts with '-'");
        url_refused("http://a%2eb/", charset);
        url_refused("http://a!b/", charset);
        url_refused("http://x:/", port);
        url_refused("http://x:0/", port);
        url_refused("http://x:65536/", port);
        url_refused("http://x:123456/", port);
        url_refused("http://x:8a/", port);
        url_refused("http://x:-1/", port);
        url_refused("http://[::1]:/", port);
        url_refused("http://[::1]x/", "junk after the IPv6 address");
        url_refused("http://[::1/", "unterminated IPv6 address");
        url_refused("http://[]/", "not a valid IPv6 address (zone ids are not allowed)");
        url_refused("http://[fe80::1%25eth0]/", "not a valid IPv6 address (zone ids are not allowed)");
        url_refused("http://[1.2.3.4]/", "not a valid IPv6 address");
        url_refused("http://[::g]/", "not a valid IPv6 address");
        url_refused("http://2130706433/", numeric);
        url_refused("http://127.1/", numeric);
        url_refused("http://0x7f.0.0.1/", numeric);
        url_refused("http://0x7f000001/", numeric);
        url_refused("http://127.0.0.01/", numeric);
        url_refused("http://127.0.0.1.2/", numeric);
        url_refused("http://256.0.0.1/", numeric);
        url_refused("http://example.123/", numeric);

        char long_label[128], long_host[300], long_url[NET_URL_MAX + 16];
        (void) snprintf(long_label, sizeof long_label, "http://%064d.com/", 0);
        url_refused(long_label, "a label of the host name is longer than 63 bytes");
        memset(long_host, 'a', sizeof long_host);
        memcpy(long_host, "http://", 7);
        for (size_t i = 7 + 50; i < 7 + 254; i += 51)
                long_host[i] = '.';
        long_host[7 + 254] = '\0';
        url_refused(long_host, "the host name is too long");
        memset(long_url, 'a', sizeof long_url);
        memcpy(long_url, "http://x/", 9);
        long_url[NET_URL_MAX + 1] = '\0';
        url_refused(long_url, "the URL is too long");
        long_url[NET_URL_MAX] = '\0';
        url_ok(long_url, "http", "x", 80);

        const char *reason = NULL;
        assert_int_equal(net_url_check(NULL, NULL, NULL, NULL, &reason), -EPERM);
        assert_string_equal(reason, "the URL is missing");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_addr_table),
                cmocka_unit_test(test_addr_allowed),
                cmocka_unit_test(test_url_ok),
                cmocka_unit_test(test_url_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
