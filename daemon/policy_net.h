/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network policy for http_get as pure functions: which URLs may be fetched
 * and which addresses may be connected to.
 *
 * Runs in the broker (as the peer's uid, no capabilities) to check a call's
 * arguments early, and in toolsd-http (inside its network sandbox) on every
 * redirect hop and on every address DNS gave, right before connecting. No
 * I/O, no DNS, no logging; every input is the model's or a remote server's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define NET_URL_MAX 4096                /* bytes in one URL */
#define NET_HOST_MAX 253                /* bytes in one host name (RFC 1035) */

/* Checks an http_get URL: "http" or "https" (any case) followed by "://",
 * an authority with no userinfo ("user@"), a host that is a DNS name
 * (letters, digits, '-', '_' in labels of 1-63 bytes, no trailing dot), a
 * dotted-quad IPv4 address, or a bracketed IPv6 address without a zone id,
 * an optional port 1-65535, then an optional path/query/fragment. Only
 * printable ASCII (0x21-0x7e) anywhere: anything else must be %-encoded.
 * A host whose last label is numeric or hex ("127.1", "0x7f.1",
 * "2130706433") must be a canonical dotted quad, so that no URL parser can
 * read a different address into it.
 * Returns 0 and sets the outputs (scheme and host lower-cased, host without
 * brackets; the port defaults to 80/443); -EPERM with *ret_reason (static)
 * for a refusal; -ENOMEM. Any output pointer may be NULL. */
int net_url_check(const char *url, char **ret_scheme, char **ret_host, int *ret_port,
                  const char **ret_reason);

enum net_addr_class {
        NET_ADDR_PUBLIC,                /* global unicast: always allowed */
        NET_ADDR_LOOPBACK,              /* allowed with allow_loopback */
        NET_ADDR_PRIVATE,               /* RFC 1918, CGNAT, ULA, benchmarking: allow_private */
        NET_ADDR_LINK_LOCAL,            /* 169.254/16, fe80::/10: allow_private */
        NET_ADDR_METADATA,              /* cloud metadata services: never */
        NET_ADDR_UNSPECIFIED,           /* 0.0.0.0/8, ::: never */
        NET_ADDR_MULTICAST,             /* never */
        NET_ADDR_BROADCAST,             /* never */
        NET_ADDR_DOCUMENTATION,         /* never routed: never */
        NET_ADDR_RESERVED,              /* anything else not globally routed: never */
        NET_ADDR_TUNNEL,                /* Teredo: the real peer is hidden: never */
        NET_ADDR_BAD_FAMILY,            /* not AF_INET/AF_INET6: never */
};

/* Classifies an address. IPv4 embedded in IPv6 (mapped ::ffff:0:0/96,
 * compatible ::/96, translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96, 6to4
 * 2002::/16) is classified as the IPv4 address it carries. */
enum net_addr_class net_addr_classify(const struct sockaddr *sa);

/* Whether toolsd-http may connect to sa. Metadata addresses are refused even
 * with allow_private: a config that opens the LAN rarely means to hand out
 * the cloud instance's credentials. On false *ret_reason (may be NULL) is a
 * static explanation. */
bool net_addr_allowed(const struct sockaddr *sa, bool allow_loopback, bool allow_private,
                      const char **ret_reason);
