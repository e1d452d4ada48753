/* SPDX-License-Identifier: Apache-2.0 */
/* The quorum's voter set from its option text:
 * "1@HOST:PORT,2@HOST:PORT,3@HOST:PORT". Parsed strictly: ids 1..2^31-1,
 * distinct ids and addresses, 1..RAFT_MAX_VOTERS members, HOST a name, an
 * IPv4 address or a bracketed IPv6 address, PORT 1..65535, no spaces.
 * Pure (inet_pton only; names are not resolved here).
 * Locality: any thread (no state). */
#ifndef CONTROLLER_QUORUM_RAFT_VOTERS_H
#define CONTROLLER_QUORUM_RAFT_VOTERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "controller/quorum/raft.h"

#define RAFT_VOTERS_HOST_MAX 253  /* a DNS name; IPv6 text is shorter */
#define RAFT_VOTERS_TEXT_MAX 4096 /* longer option text is refused */
#define RAFT_VOTERS_ADDR_CAP (RAFT_VOTERS_HOST_MAX + 9) /* [host]:port\0 */

struct raft_voter {
    uint32_t id;                         /* 1..RAFT_MAX_ID */
    char host[RAFT_VOTERS_HOST_MAX + 1]; /* without brackets */
    uint16_t port;                       /* 1..65535 */
    char address[RAFT_VOTERS_ADDR_CAP];  /* "host:port", "[v6]:port" */
};

/* In the order given (which is raft_config's voter order). */
struct raft_voters {
    uint32_t n;
    struct raft_voter v[RAFT_MAX_VOTERS];
};

/* Parse text into out. Errors: WEIR_ECONFIG, ed naming the bad element
 * ("voters: element 2 '2@host:0': port must be 1..65535"). */
WEIR_MUST_CHECK int raft_voters_parse(const char *text,
                                      struct raft_voters *out,
                                      struct err_detail *ed);

/* The voter with this id, or NULL. Borrowed from vs. */
const struct raft_voter *raft_voters_find(const struct raft_voters *vs,
                                          uint32_t id);

#endif /* CONTROLLER_QUORUM_RAFT_VOTERS_H */
