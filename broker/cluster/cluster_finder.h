/* SPDX-License-Identifier: Apache-2.0 */
/* Which controller quorum member a broker (or the CLI) talks to: a list of
 * host:port addresses (--controller a,b,c), the current one, and where to
 * go next. A NOT_CONTROLLER answer naming the active controller moves to
 * it (added to the list if new); one without a name, a failed connection
 * or a timeout moves to the next address; a good answer stays. An address
 * whose call timed out is passed over, and hints naming it are ignored,
 * for CLUSTER_FINDER_SHUN_MS unless it answers: a member that died
 * silently (a host gone) is still named by the others until they elect a
 * new one, and each call to it costs a whole timeout. Moves made
 * without a good answer since the last one count: past one round of the
 * list they wait a backoff that doubles up to a bound, with jitter from a
 * seeded state, so two members naming each other (a stale hint) cannot
 * make a busy loop. Pure: no clock (times are arguments), no sockets, no
 * randomness but the seed. Locality: its owner's thread. */
#ifndef BROKER_CLUSTER_CLUSTER_FINDER_H
#define BROKER_CLUSTER_CLUSTER_FINDER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define CLUSTER_FINDER_MAX_CONFIGURED 16 /* addresses in --controller */
#define CLUSTER_FINDER_MAX_ADDRS      32 /* with those learned from hints */
#define CLUSTER_FINDER_ADDR_CAP       300
/* an address whose call timed out is passed over (and hints naming it
 * ignored) for this long, unless it answers */
#define CLUSTER_FINDER_SHUN_MS 2000

enum cluster_finder_reason {
    CLUSTER_FINDER_HINT,        /* NOT_CONTROLLER naming the active one */
    CLUSTER_FINDER_NOT_ACTIVE,  /* NOT_CONTROLLER naming no one */
    CLUSTER_FINDER_UNREACHABLE, /* connection failed or closed */
    CLUSTER_FINDER_TIMEOUT,     /* a call passed its deadline */
};

struct cluster_finder {
    char addrs[CLUSTER_FINDER_MAX_ADDRS][CLUSTER_FINDER_ADDR_CAP];
    uint32_t n;            /* addresses in addrs */
    uint32_t n_configured; /* the first n_configured came from the list */
    uint32_t next_learned; /* slot a hint replaces once addrs is full */
    uint32_t cur;          /* index of the address in use */
    uint32_t moves;        /* moves since the last good answer */
    uint64_t backoff_ms;   /* the next backoff before jitter */
    uint64_t backoff_min_ms;
    uint64_t backoff_max_ms;
    uint64_t rng;           /* xorshift64* state, never 0 */
    uint64_t not_before_ms; /* no call to cur before this time */
    /* per address: passed over until this time (0: not); set when it
     * failed, cleared when it answers */
    uint64_t shun_until_ms[CLUSTER_FINDER_MAX_ADDRS];
};

/* What a report changed. */
struct cluster_finder_move {
    bool moved;                         /* cur changed */
    char from[CLUSTER_FINDER_ADDR_CAP]; /* the address left */
    enum cluster_finder_reason reason;
    uint64_t delay_ms; /* wait this long before calling the new address */
};

/* Parse list ("host:port[,host:port...]", spaces around elements allowed)
 * and start at its first address. backoff_max_ms >= backoff_min_ms > 0.
 * Errors: WEIR_ECONFIG naming the bad element (empty, not host:port, port
 * 0, too long, listed twice, more than CLUSTER_FINDER_MAX_CONFIGURED). */
WEIR_MUST_CHECK int cluster_finder_init(struct cluster_finder *f,
                                        const char *list,
                                        uint64_t backoff_min_ms,
                                        uint64_t backoff_max_ms,
                                        uint64_t seed,
                                        struct err_detail *ed);

/* The address to call now; valid until the next report. */
const char *cluster_finder_current(const struct cluster_finder *f);
/* Time before which the current address should not be called (0: any). */
uint64_t cluster_finder_not_before(const struct cluster_finder *f);

/* A good answer (anything but NOT_CONTROLLER) came from addr: stay, and
 * forget the moves and the backoff. A report about an address that is not
 * the current one is stale and ignored (so are the reports below). */
void cluster_finder_on_success(struct cluster_finder *f, const char *addr);
/* addr answered NOT_CONTROLLER; hint is the active controller's address
 * it named (NULL or "": none). A hint naming addr itself is taken as
 * none. */
void cluster_finder_on_not_controller(struct cluster_finder *f,
                                      const char *addr,
                                      const char *hint,
                                      uint64_t now_ms,
                                      struct cluster_finder_move *out);
/* addr could not be reached, or a call to it timed out (timeout). */
void cluster_finder_on_failure(struct cluster_finder *f,
                               const char *addr,
                               bool timeout,
                               uint64_t now_ms,
                               struct cluster_finder_move *out);

/* "hint", "not_active", "unreachable", "timeout" (for traces). */
const char *cluster_finder_reason_name(enum cluster_finder_reason r);

#endif /* BROKER_CLUSTER_CLUSTER_FINDER_H */
