/* SPDX-License-Identifier: Apache-2.0 */
/* "host:port" addresses: parse (IPv4, [IPv6]:port, or a name resolved with
 * getaddrinfo) and format. */
#ifndef COMMON_NET_ADDR_H
#define COMMON_NET_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/err.h"

/* Split "host:port" into host (without brackets) and port.
 * Errors: WEIR_EINVALID_ARGUMENT naming the text. */
WEIR_MUST_CHECK int addr_split(const char *text,
                               char *host,
                               size_t host_cap,
                               uint16_t *port,
                               struct err_detail *ed);
/* Resolve to a socket address (first result). */
WEIR_MUST_CHECK int addr_parse(const char *text,
                               struct sockaddr_storage *ss,
                               socklen_t *len,
                               struct err_detail *ed);
/* Numeric "ip" and "ip:port" of a socket address. */
void addr_format(const struct sockaddr *sa,
                 socklen_t len,
                 char *ip,
                 size_t ip_cap,
                 char *peer,
                 size_t peer_cap);
/* Local port a socket is bound to (0 on error). */
uint16_t addr_local_port(int fd);

#endif /* COMMON_NET_ADDR_H */
