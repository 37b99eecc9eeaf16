/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * toolsd-http: the http_get tool's worker. One GET, printed as one JSON
 * document on stdout.
 *
 * Runs as its own process, started by the supervisor inside bwrap with
 * --share-net (the only toolsd process with network), as the peer's uid with
 * no capabilities, so that libcurl and TLS never run in the broker's
 * address space. Its interface can express nothing but a GET: the URL and
 * limits are its only inputs.
 *
 * Every hop is checked the same way: net_url_check() on the URL, libcurl's
 * own parse of it compared with ours, our own getaddrinfo() with every
 * address checked by net_addr_allowed(), the first one pinned with
 * CURLOPT_RESOLVE (no second DNS answer can be used: no rebinding), and an
 * open-socket hook that refuses any address but the pinned one. Redirects
 * are followed here, not by libcurl, so each Location goes through it all.
 * Bodies are not decompressed (no Accept-Encoding): what is counted against
 * the limit is what arrived.
 *
 *   toolsd-http [--max-bytes N] [--timeout-ms N] [--max-redirects N]
 *               [--allow-loopback] [--allow-private] URL
 *
 * Output: {"status", "url" (final), "content_type", "body", "encoding"
 * (only "base64", when the body is not UTF-8 text), "bytes", "truncated",
 * "redirects"} or {"error": "refused"|"timeout"|"failed", "reason", "url",
 * "redirects"}. Exit 0 when a document was printed, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "macro.h"
#include "policy_net.h"
#include "varlink.h"

struct options {
        uint64_t max_bytes;
        uint32_t timeout_ms;
        uint32_t max_redirects;
        bool allow_loopback;
        bool allow_private;
        const char *url;
};

struct hop {
        const struct options *opt;
        char *body;
        size_t len;
        bool truncated;
        struct sockaddr_storage pinned;
        const char *refusal;            /* set by a check: the hop was refused */
        char reason[512];
        long status;
        char *content_type;
        char *location;
};

static uint64_t now_ms(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        struct hop *h = userdata;
        size_t n = size * nmemb, room = (size_t) (h->opt->max_bytes - h->len);

        if (n > room) {
                h->truncated = true;
                n = room;
        }
        if (n > 0) {
                char *b = realloc(h->body, h->len + n + 1);
                if (!b)
                        return 0;
                memcpy(b + h->len, data, n);
                h->body = b;
                h->len += n;
        }
        /* Returning less than given stops the transfer: the limit is hit. */
        return h->truncated ? 0 : size * nmemb;
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b) {
        if (a->sa_family != b->ss_family)
                return false;
        if (a->sa_family == AF_INET) {
                const struct sockaddr_in *x = (const void *) a, *y = (const void *) b;
                return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
        }
        const struct sockaddr_in6 *x = (const void *) a, *y = (const void *) b;
        return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

/* The last word on where a connection goes: libcurl asks us for the socket. */
static curl_socket_t on_open_socket(void *userdata, curlsocktype purpose, struct curl_sockaddr *a) {
        struct hop *h = userdata;
        const char *why = NULL;

        if (!net_addr_allowed(&a->addr, h->opt->allow_loopback, h->opt->allow_private, &why)) {
                h->refusal = why;
                return CURL_SOCKET_BAD;
        }
        if (!same_addr(&a->addr, &h->pinned)) {
                h->refusal = "libcurl tried to connect to an address other than the one checked";
                return CURL_SOCKET_BAD;
        }
        return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static void addr_format(const struct sockaddr *sa, char *buf, size_t n) {
        const void *p = sa->sa_family == AF_INET ? (const void *) &((const struct sockaddr_in *) sa)->sin_addr
                                                 : (const void *) &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (!inet_ntop(sa->sa_family, p, buf, (socklen_t) n))
                (void) snprintf(buf, n, "?");
}

static void curl_freep(char **p) {
        curl_free(*p);
}

/* libcurl must read the URL as we did. */
static const char *url_agree(CURLU *u, const char *url, const char *scheme, const char *host, int port) {
        _cleanup_(curl_freep) char *s = NULL, *h = NULL, *p = NULL;

        if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
                return "libcurl cannot parse the URL";
        if (curl_url_get(u, CURLUPART_SCHEME, &s, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) != CURLUE_OK)
                return "libcurl cannot parse the URL";
        size_t hn = strlen(h);
        const char *hh = h;
        if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']')
                hh = h + 1, hn -= 2;
        if (strcasecmp(s, scheme) != 0 || strlen(host) != hn || strncasecmp(hh, host, hn) != 0 ||
            atoi(p) != port)
                return "the URL is ambiguous (libcurl reads it differently)";
        return NULL;
}

/* Resolves host, refuses when any address is refused, pins the first. */
static int resolve_and_pin(struct hop *h, const char *host, int port, struct curl_slist **ret_resolve) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
        struct addrinfo *res = NULL;
        char ps[8], a[INET6_ADDRSTRLEN];
        const char *why = NULL;

        (void) snprintf(ps, sizeof ps, "%d", port);
        int r = getaddrinfo(host, ps, &hints, &res);
        if (r != 0) {
                (void) snprintf(h->reason, sizeof h->reason, "cannot resolve %s: %s", host, gai_strerror(r));
                return -EHOSTUNREACH;
        }
        for (struct addrinfo *i = res; i; i = i->ai_next)
                if (!net_addr_allowed(i->ai_addr, h->opt->allow_loopback, h->opt->allow_private, &why)) {
                        addr_format(i->ai_addr, a, sizeof a);
                        (void) snprintf(h->reason, sizeof h->reason, "%s resolves to %s: %s", host, a, why);
                        freeaddrinfo(res);
                        return -EPERM;
                }
        memcpy(&h->pinned, res->ai_addr, MIN((size_t) res->ai_addrlen, sizeof h->pinned));
        addr_format(res->ai_addr, a, sizeof a);
        freeaddrinfo(res);

        /* A literal address is not resolved by libcurl: nothing to pin. */
        struct in6_addr lit;
        if (inet_pton(AF_INET, host, &lit) == 1 || inet_pton(AF_INET6, host, &lit) == 1)
                return 0;
        char entry[NET_HOST_MAX + INET6_ADDRSTRLEN + 16];
        bool v6 = h->pinned.ss_family == AF_INET6;
        (void) snprintf(entry, sizeof entry, "%s:%d:%s%s%s", host, port, v6 ? "[" : "", a, v6 ? "]" : "");
        *ret_resolve = curl_slist_append(NULL, entry);
        return *ret_resolve ? 0 : -ENOMEM;
}

static void easy_setup(CURL *c, struct hop *h, CURLU *u, struct curl_slist *resolve, uint64_t left_ms) {
        (void) curl_easy_setopt(c, CURLOPT_CURLU, u);
        (void) curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        (void) curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        (void) curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        (void) curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        (void) curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        (void) curl_easy_setopt(c, CURLOPT_PROXY, "");        /* never from the environment */
        (void) curl_easy_setopt(c, CURLOPT_NETRC, (long) CURL_NETRC_IGNORED);
        (void) curl_easy_setopt(c, CURLOPT_USERAGENT, "toolsd-http/" "0.1");
        (void) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) MAX(left_ms, 1u));
        (void) curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
        (void) curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
        (void) curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, h);
        (void) curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        (void) curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
}

static void hop_reset(struct hop *h) {
        free(h->body);
        free(h->content_type);
        free(h->location);
        h->body = h->content_type = h->location = NULL;
        h->len = 0;
        h->truncated = false;
        h->refusal = NULL;
        h->reason[0] = '\0';
        h->status = 0;
}

static int hop_result(CURL *c, struct hop *h, CURLcode rc) {
        char *ct = NULL, *loc = NULL;

        if (h->refusal) {
                (void) snprintf(h->reason, sizeof h->reason, "%s", h->refusal);
                return -EPERM;
        }
        if (rc == CURLE_OPERATION_TIMEDOUT) {
                (void) snprintf(h->reason, sizeof h->reason, "no complete answer in time");
                return -ETIMEDOUT;
        }
        if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && h->truncated)) {
                (void) snprintf(h->reason, sizeof h->reason, "%s", curl_easy_strerror(rc));
                return -EIO;
        }
        (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->status);
        if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
                h->content_type = strdup(ct);
        if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc)
                h->location = strdup(loc);
        return 0;
}

static void slist_freep(struct curl_slist **l) {
        curl_slist_free_all(*l);
}

static void curlu_freep(CURLU **u) {
        curl_url_cleanup(*u);
}

static void easy_freep(CURL **c) {
        if (*c)
                curl_easy_cleanup(*c);
}

/* One request. 0 with h filled, or <0 with h->reason: -EPERM refused,
 * -ETIMEDOUT, anything else failed. */
static int hop_run(struct hop *h, const char *url, uint64_t left_ms) {
        _cleanup_free_ char *scheme = NULL, *host = NULL;
        _cleanup_(slist_freep) struct curl_slist *resolve = NULL;
        _cleanup_(curlu_freep) CURLU *u = curl_url();
        _cleanup_(easy_freep) CURL *c = curl_easy_init();
        const char *why = NULL;
        int port = 0;

        hop_reset(h);
        if (!u || !c)
                return -ENOMEM;
        int r = net_url_check(url, &scheme, &host, &port, &why);
        if (r == -EPERM || (r >= 0 && (why = url_agree(u, url, scheme, host, port)))) {
                (void) snprintf(h->reason, sizeof h->reason, "%s", why);
                return -EPERM;
        }
        if (r < 0)
                return r;
        r = resolve_and_pin(h, host, port, &resolve);
        if (r < 0)
                return r;
        easy_setup(c, h, u, resolve, left_ms);
        return hop_result(c, h, curl_easy_perform(c));
}

static bool is_redirect(long status) {
        return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

static void jadd(struct json_object *o, const char *k, struct json_object *v) {
        (void) json_object_object_add(o, k, v);
}

static struct json_object *jstr(const char *s) {
        _cleanup_free_ char *clean = NULL;
        if (!s || utf8_sanitize(s, strlen(s), &clean) < 0)
                return NULL;
        return json_object_new_string(clean);
}

static struct json_object *doc_error(int r, const struct hop *h, const char *url, uint32_t redirects) {
        struct json_object *o = json_object_new_object();
        jadd(o, "error", json_object_new_string(r == -EPERM ? "refused" : r == -ETIMEDOUT ? "timeout" : "failed"));
        jadd(o, "reason", jstr(h->reason[0] ? h->reason : strerror(-r)));
        jadd(o, "url", jstr(url));
        jadd(o, "redirects", json_object_new_int((int) redirects));
        return o;
}

static struct json_object *doc_ok(const struct hop *h, const char *url, uint32_t redirects) {
        struct json_object *o = json_object_new_object();
        jadd(o, "status", json_object_new_int((int) h->status));
        jadd(o, "url", jstr(url));
        jadd(o, "content_type", jstr(h->content_type));
        if (h->len == 0 || (utf8_valid(h->body, h->len) && !memchr(h->body, '\0', h->len))) {
                jadd(o, "body", json_object_new_string_len(h->len ? h->body : "", (int) h->len));
        } else {
                _cleanup_free_ char *b64 = NULL;
                if (base64_encode(h->body, h->len, &b64) < 0)
                        return json_object_put(o), NULL;
                jadd(o, "body", json_object_new_string(b64));
                jadd(o, "encoding", json_object_new_string("base64"));
        }
        jadd(o, "bytes", json_object_new_int64((int64_t) h->len));
        jadd(o, "truncated", json_object_new_boolean(h->truncated));
        jadd(o, "redirects", json_object_new_int((int) redirects));
        return o;
}

static struct json_object *fetch(const struct options *opt) {
        struct hop h = { .opt = opt };
        uint64_t deadline = now_ms() + opt->timeout_ms;
        _cleanup_free_ char *url = strdup(opt->url);
        struct json_object *doc = NULL;

        for (uint32_t redirects = 0; url;) {
                uint64_t now = now_ms();
                int r = now >= deadline ? -ETIMEDOUT : hop_run(&h, url, deadline - now);
                if (r == -ETIMEDOUT && !h.reason[0])
                        (void) snprintf(h.reason, sizeof h.reason, "no complete answer in time");
                if (r < 0) {
                        doc = doc_error(r, &h, url, redirects);
                        break;
                }
                if (!is_redirect(h.status) || !h.location) {
                        doc = doc_ok(&h, url, redirects);
                        break;
                }
                if (redirects == opt->max_redirects) {
                        (void) snprintf(h.reason, sizeof h.reason, "more than %u redirects", opt->max_redirects);
                        doc = doc_error(-EPERM, &h, url, redirects);
                        break;
                }
                redirects++;
                free(url);
                url = TAKE_PTR(h.location);
        }
        hop_reset(&h);
        return doc;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || !end || *end || end == s || s[0] == '-' || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_args(int argc, char **argv, struct options *o) {
        static const struct option longopts[] = {
                { "max-bytes", required_argument, NULL, 'b' },
                { "timeout-ms", required_argument, NULL, 't' },
                { "max-redirects", required_argument, NULL, 'r' },
                { "allow-loopback", no_argument, NULL, 'l' },
                { "allow-private", no_argument, NULL, 'p' },
                {},
        };
        uint64_t v;
        int c;

        *o = (struct options) { .max_bytes = 10u << 20, .timeout_ms = 30000, .max_redirects = 5 };
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) >= 0)
                switch (c) {
                case 'b':
                        if (parse_u64(optarg, 1u << 30, &o->max_bytes) < 0)
                                return -EINVAL;
                        break;
                case 't':
                        if (parse_u64(optarg, 3600000, &v) < 0 || v == 0)
                                return -EINVAL;
                        o->timeout_ms = (uint32_t) v;
                        break;
                case 'r':
                        if (parse_u64(optarg, 100, &v) < 0)
                                return -EINVAL;
                        o->max_redirects = (uint32_t) v;
                        break;
                case 'l':
                        o->allow_loopback = true;
                        break;
                case 'p':
                        o->allow_private = true;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind != argc - 1)
                return -EINVAL;
        o->url = argv[optind];
        return 0;
}

int main(int argc, char **argv) {
        struct options opt;

        if (parse_args(argc, argv, &opt) < 0) {
                fprintf(stderr, "usage: %s [--max-bytes N] [--timeout-ms N] [--max-redirects N] "
                                "[--allow-loopback] [--allow-private] URL\n", argv[0]);
                return 2;
        }
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return 1;
        _cleanup_json_ struct json_object *doc = fetch(&opt);
        curl_global_cleanup();
        if (!doc)
                return 1;
        size_t n = 0;
        const char *s = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        if (!s || fwrite(s, 1, n, stdout) != n || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
                return 1;
        return 0;
}
