/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/addr.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int addr_split(const char *text,
               char *host,
               size_t host_cap,
               uint16_t *port,
               struct err_detail *ed)
{
    const char *colon;
    const char *h = text;
    size_t hlen;
    char *end;
    long p;

    colon = strrchr(text, ':');
    if (colon == NULL || colon[1] == '\0') {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "address '%s' is not HOST:PORT", text);
    }
    hlen = (size_t)(colon - text);
    if (hlen >= 2 && text[0] == '[' && text[hlen - 1] == ']') {
        h = text + 1;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= host_cap) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "address '%s' has no usable host", text);
    }
    p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p < 0 || p > 65535) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "address '%s' has a bad port", text);
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)p;
    return 0;
}

int addr_parse(const char *text,
               struct sockaddr_storage *ss,
               socklen_t *len,
               struct err_detail *ed)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    char host[256];
    char port[8];
    uint16_t pnum;
    int rv;

    rv = addr_split(text, host, sizeof(host), &pnum, ed);
    if (rv != 0) {
        return rv;
    }
    (void)snprintf(port, sizeof(port), "%u", pnum);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    rv = getaddrinfo(host, port, &hints, &res);
    if (rv != 0 || res == NULL) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "cannot resolve '%s': %s",
                       host, gai_strerror(rv));
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

void addr_format(const struct sockaddr *sa,
                 socklen_t len,
                 char *ip,
                 size_t ip_cap,
                 char *peer,
                 size_t peer_cap)
{
    char h[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    (void)len;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in =
            (const struct sockaddr_in *)(const void *)sa;
        (void)inet_ntop(AF_INET, &in->sin_addr, h, sizeof(h));
        port = ntohs(in->sin_port);
        (void)snprintf(peer, peer_cap, "%s:%u", h, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 =
            (const struct sockaddr_in6 *)(const void *)sa;
        (void)inet_ntop(AF_INET6, &in6->sin6_addr, h, sizeof(h));
        port = ntohs(in6->sin6_port);
        (void)snprintf(peer, peer_cap, "[%s]:%u", h, port);
    } else {
        (void)snprintf(peer, peer_cap, "?");
    }
    (void)snprintf(ip, ip_cap, "%s", h);
}

uint16_t addr_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        return 0;
    }
    if (ss.ss_family == AF_INET) {
        return ntohs(((struct sockaddr_in *)(void *)&ss)->sin_port);
    }
    if (ss.ss_family == AF_INET6) {
        return ntohs(((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
    }
    return 0;
}
