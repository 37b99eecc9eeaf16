/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network policy for http_get: the URL check and the address classifier.
 *
 * Runs in the broker (as the peer's uid, no capabilities) and in toolsd-http
 * inside its sandbox. Pure: no I/O, no DNS, no logging. The URL grammar is
 * deliberately narrower than RFC 3986 so that our parser and libcurl's can
 * only agree (toolsd-http also compares the two).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "policy_net.h"

/* ---- URLs ---- */

static bool url_char_ok(char c) {
        return c > 0x20 && c < 0x7f;
}

static bool host_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_';
}

/* A last label of digits or "0x..." would be read as a number by URL
 * parsers (WHATWG) and by inet_aton: it must then be a canonical dotted quad. */
static bool host_looks_numeric(const char *h, size_t n) {
        const char *last = h;
        for (size_t i = 0; i < n; i++)
                if (h[i] == '.')
                        last = h + i + 1;
        size_t m = (size_t) (h + n - last);
        if (m >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X'))
                return true;
        for (size_t i = 0; i < m; i++)
                if (last[i] < '0' || last[i] > '9')
                        return false;
        return true;
}

static const char *dns_name_check(const char *h, size_t n) {
        size_t label = 0;

        if (n == 0)
                return "the URL has no host";
        if (n > NET_HOST_MAX)
                return "the host name is too long";
        for (size_t i = 0; i < n; i++) {
                if (h[i] == '.') {
                        if (label == 0)
                                return "the host name has an empty label";
                        label = 0;
                } else if (!host_char_ok(h[i])) {
                        return "the host name has a character that is not allowed";
                } else if (++label > 63) {
                        return "a label of the host name is longer than 63 bytes";
                }
        }
        if (label == 0)
                return "the host name has an empty label";
        if (h[0] == '-')
                return "the host name starts with '-'";
        return NULL;
}

/* Splits "host[:port]" / "[v6][:port]" and checks both parts. */
static const char *authority_check(const char *a, size_t n, bool https, char *host, int *ret_port) {
        const char *h = a, *p = NULL;
        size_t hn = n;

        if (memchr(a, '@', n))
                return "user names and passwords in URLs are not allowed";
        if (n > 0 && a[0] == '[') {
                const char *close = memchr(a, ']', n);
                if (!close)
                        return "unterminated IPv6 address";
                h = a + 1, hn = (size_t) (close - a) - 1;
                if (close + 1 < a + n) {
                        if (close[1] != ':')
                                return "junk after the IPv6 address";
                        p = close + 2;
                }
                if (hn == 0 || hn >= INET6_ADDRSTRLEN || memchr(h, '%', hn))
                        return "not a valid IPv6 address (zone ids are not allowed)";
                memcpy(host, h, hn);
                host[hn] = '\0';
                struct in6_addr a6;
                if (inet_pton(AF_INET6, host, &a6) != 1)
                        return "not a valid IPv6 address";
        } else {
                const char *colon = memchr(a, ':', n);
                if (colon) {
                        hn = (size_t) (colon - a);
                        p = colon + 1;
                }
                const char *why = dns_name_check(h, hn);
                if (why)
                        return why;
                memcpy(host, h, hn);
                host[hn] = '\0';
                struct in_addr a4;
                if (host_looks_numeric(h, hn) && inet_pton(AF_INET, host, &a4) != 1)
                        return "a numeric host must be a dotted-quad IPv4 address";
        }
        for (char *c = host; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                        *c = (char) (*c - 'A' + 'a');

        int port = https ? 443 : 80;
        if (p) {
                size_t pn = (size_t) (a + n - p);
                if (pn == 0 || pn > 5)
                        return "the port must be a number from 1 to 65535";
                port = 0;
                for (size_t i = 0; i < pn; i++) {
                        if (p[i] < '0' || p[i] > '9')
                                return "the port must be a number from 1 to 65535";
                        port = port * 10 + (p[i] - '0');
                }
                if (port < 1 || port > 65535)
                        return "the port must be a number from 1 to 65535";
        }
        *ret_port = port;
        return NULL;
}

static const char *url_parse(const char *url, bool *ret_https, char *host, int *ret_port) {
        size_t n = strnlen(url, NET_URL_MAX + 1), skip;

        if (n == 0)
                return "the URL is empty";
        if (n > NET_URL_MAX)
                return "the URL is too long";
        for (size_t i = 0; i < n; i++)
                if (!url_char_ok(url[i]))
                        return "the URL has a space, control or non-ASCII character (use %-encoding)";
        if (strncasecmp(url, "http://", 7) == 0)
                skip = 7, *ret_https = false;
        else if (strncasecmp(url, "https://", 8) == 0)
                skip = 8, *ret_https = true;
        else
                return "only http:// and https:// URLs can be fetched";

        const char *a = url + skip;
        size_t an = strcspn(a, "/?#");
        if (memchr(a, '\\', an))
                return "a backslash in the host part is not allowed";
        return authority_check(a, an, *ret_https, host, ret_port);
}

int net_url_check(const char *url, char **ret_scheme, char **ret_host, int *ret_port,
                  const char **ret_reason) {
        char host[NET_HOST_MAX + 1];
        bool https = false;
        int port = 0;

        const char *why = url ? url_parse(url, &https, host, &port) : "the URL is missing";
        if (why) {
                if (ret_reason)
                        *ret_reason = why;
                return -EPERM;
        }
        _cleanup_free_ char *s = strdup(https ? "https" : "http");
        _cleanup_free_ char *h = strdup(host);
        if (!s || !h)
                return -ENOMEM;
        if (ret_scheme)
                *ret_scheme = TAKE_PTR(s);
        if (ret_host)
                *ret_host = TAKE_PTR(h);
        if (ret_port)
                *ret_port = port;
        return 0;
}

/* ---- addresses ---- */

struct v4_range {
        uint32_t net;
        unsigned bits;
        enum net_addr_class cls;
};

#define V4(a, b, c, d) (((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((uint32_t) (c) << 8) | (uint32_t) (d))

/* Most specific first: the first match wins. */
static const struct v4_range v4_ranges[] = {
        { V4(169, 254, 169, 254), 32, NET_ADDR_METADATA },      /* AWS, GCP, Azure, ... */
        { V4(100, 100, 100, 200), 32, NET_ADDR_METADATA },      /* Alibaba Cloud */
        { V4(255, 255, 255, 255), 32, NET_ADDR_BROADCAST },
        { V4(0, 0, 0, 0), 8, NET_ADDR_UNSPECIFIED },            /* "this network" */
        { V4(10, 0, 0, 0), 8, NET_ADDR_PRIVATE },
        { V4(100, 64, 0, 0), 10, NET_ADDR_PRIVATE },            /* CGNAT */
        { V4(127, 0, 0, 0), 8, NET_ADDR_LOOPBACK },
        { V4(169, 254, 0, 0), 16, NET_ADDR_LINK_LOCAL },
        { V4(172, 16, 0, 0), 12, NET_ADDR_PRIVATE },
        { V4(192, 0, 0, 0), 24, NET_ADDR_RESERVED },            /* IETF protocol assignments */
        { V4(192, 0, 2, 0), 24, NET_ADDR_DOCUMENTATION },
        { V4(192, 88, 99, 0), 24, NET_ADDR_RESERVED },          /* 6to4 relay anycast (deprecated) */
        { V4(192, 168, 0, 0), 16, NET_ADDR_PRIVATE },
        { V4(198, 18, 0, 0), 15, NET_ADDR_PRIVATE },            /* benchmarking */
        { V4(198, 51, 100, 0), 24, NET_ADDR_DOCUMENTATION },
        { V4(203, 0, 113, 0), 24, NET_ADDR_DOCUMENTATION },
        { V4(224, 0, 0, 0), 4, NET_ADDR_MULTICAST },
        { V4(240, 0, 0, 0), 4, NET_ADDR_RESERVED },
};

static enum net_addr_class classify_v4(uint32_t a) {
        for (size_t i = 0; i < ELEMENTSOF(v4_ranges); i++) {
                uint32_t mask = v4_ranges[i].bits == 0 ? 0 : ~UINT32_C(0) << (32 - v4_ranges[i].bits);
                if ((a & mask) == v4_ranges[i].net)
                        return v4_ranges[i].cls;
        }
        return NET_ADDR_PUBLIC;
}

static uint32_t v4_at(const uint8_t *b) {
        return V4(b[0], b[1], b[2], b[3]);
}

static bool prefix_is(const uint8_t *a, const uint8_t *p, unsigned bits) {
        for (unsigned i = 0; i < bits; i++)
                if (((a[i / 8] ^ p[i / 8]) >> (7 - i % 8)) & 1)
                        return false;
        return true;
}

struct v6_range {
        uint8_t net[16];
        unsigned bits;
        enum net_addr_class cls;
};

/* Checked after the IPv4-carrying forms; the first match wins. */
static const struct v6_range v6_ranges[] = {
        { { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128, NET_ADDR_METADATA }, /* AWS fd00:ec2::254 */
        { { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, NET_ADDR_PRIVATE },   /* local-use NAT64 */
        { { 0x01, 0x00 }, 64, NET_ADDR_RESERVED },                          /* discard-only */
        { { 0x20, 0x01, 0x00, 0x00 }, 32, NET_ADDR_TUNNEL },                /* Teredo */
        { { 0x20, 0x01, 0x00, 0x00 }, 23, NET_ADDR_RESERVED },              /* IETF protocol assignments */
        { { 0x20, 0x01, 0x0d, 0xb8 }, 32, NET_ADDR_DOCUMENTATION },
        { { 0x3f, 0xff, 0x00, 0x00 }, 20, NET_ADDR_DOCUMENTATION },
        { { 0xfc }, 7, NET_ADDR_PRIVATE },                                   /* unique local */
        { { 0xfe, 0x80 }, 10, NET_ADDR_LINK_LOCAL },
        { { 0xfe, 0xc0 }, 10, NET_ADDR_PRIVATE },                            /* site-local (deprecated) */
        { { 0xff }, 8, NET_ADDR_MULTICAST },
        { { 0x20 }, 3, NET_ADDR_PUBLIC },                                    /* global unicast */
};

static enum net_addr_class classify_v6(const uint8_t *a) {
        static const uint8_t zero[16] = { 0 };
        static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
        static const uint8_t translated[12] = { [8] = 0xff, [9] = 0xff };
        static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

        if (memcmp(a, zero, 15) == 0)
                return a[15] == 1 ? NET_ADDR_LOOPBACK : a[15] == 0 ? NET_ADDR_UNSPECIFIED : classify_v4(v4_at(a + 12));
        if (memcmp(a, mapped, 12) == 0 || memcmp(a, translated, 12) == 0 || memcmp(a, nat64, 12) == 0 ||
            memcmp(a, zero, 12) == 0)
                return classify_v4(v4_at(a + 12));
        if (a[0] == 0x20 && a[1] == 0x02)
                return classify_v4(v4_at(a + 2));                            /* 6to4 */
        for (size_t i = 0; i < ELEMENTSOF(v6_ranges); i++)
                if (prefix_is(a, v6_ranges[i].net, v6_ranges[i].bits))
                        return v6_ranges[i].cls;
        return NET_ADDR_RESERVED;
}

enum net_addr_class net_addr_classify(const struct sockaddr *sa) {
        if (!sa)
                return NET_ADDR_BAD_FAMILY;
        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
                return classify_v4(ntohl(in->sin_addr.s_addr));
        }
        if (sa->sa_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
                return classify_v6(in6->sin6_addr.s6_addr);
        }
        return NET_ADDR_BAD_FAMILY;
}

static const char *class_reason(enum net_addr_class c) {
        switch (c) {
        case NET_ADDR_PUBLIC:
                return NULL;
        case NET_ADDR_LOOPBACK:
                return "loopback addresses are not allowed (HttpAllowLoopback=)";
        case NET_ADDR_PRIVATE:
                return "private addresses are not allowed (HttpAllowPrivate=)";
        case NET_ADDR_LINK_LOCAL:
                return "link-local addresses are not allowed (HttpAllowPrivate=)";
        case NET_ADDR_METADATA:
                return "cloud metadata addresses are never allowed";
        case NET_ADDR_UNSPECIFIED:
                return "the unspecified address is never allowed";
        case NET_ADDR_MULTICAST:
                return "multicast addresses are never allowed";
        case NET_ADDR_BROADCAST:
                return "the broadcast address is never allowed";
        case NET_ADDR_DOCUMENTATION:
                return "documentation addresses are never allowed";
        case NET_ADDR_RESERVED:
                return "reserved addresses are never allowed";
        case NET_ADDR_TUNNEL:
                return "Teredo addresses are never allowed";
        case NET_ADDR_BAD_FAMILY:
        default:
                return "only IPv4 and IPv6 addresses are allowed";
        }
}

bool net_addr_allowed(const struct sockaddr *sa, bool allow_loopback, bool allow_private,
                      const char **ret_reason) {
        enum net_addr_class c = net_addr_classify(sa);
        bool ok = c == NET_ADDR_PUBLIC || (c == NET_ADDR_LOOPBACK && allow_loopback) ||
                  ((c == NET_ADDR_PRIVATE || c == NET_ADDR_LINK_LOCAL) && allow_private);

        if (!ok && ret_reason)
                *ret_reason = class_reason(c);
        return ok;
}
