/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: net_url_check() on arbitrary bytes, and the address
 * classifier on the first 16 bytes as an IPv6 and 4 as an IPv4 address. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy_net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *url, *scheme = NULL, *host = NULL;
        const char *reason = NULL;
        int port = 0;

        if (size > NET_URL_MAX + 16)
                return 0;
        url = malloc(size + 1);
        if (!url)
                return 0;
        memcpy(url, data, size);
        url[size] = '\0';
        if (net_url_check(url, &scheme, &host, &port, &reason) == 0) {
                /* What was accepted is well-formed: a bounded, non-empty
                 * lower-case host and a valid port. */
                if (!host[0] || strlen(host) > NET_HOST_MAX || port < 1 || port > 65535)
                        abort();
                for (const char *c = host; *c; c++)
                        if (*c >= 'A' && *c <= 'Z')
                                abort();
                if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
                        abort();
                if (strchr(url, '@') && strcspn(url + strlen(scheme) + 3, "/?#") >
                                                (size_t) (strchr(url, '@') - url - (long) strlen(scheme) - 3))
                        abort(); /* an '@' in the authority must have been refused */
        } else if (!reason) {
                abort();
        }
        free(scheme);
        free(host);
        free(url);

        struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
        struct sockaddr_in in = { .sin_family = AF_INET };
        memcpy(&in6.sin6_addr, data, size < 16 ? size : 16);
        memcpy(&in.sin_addr, data, size < 4 ? size : 4);
        (void) net_addr_allowed((struct sockaddr *) &in6, false, false, &reason);
        (void) net_addr_allowed((struct sockaddr *) &in, true, true, &reason);
        return 0;
}
