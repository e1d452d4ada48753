/* SPDX-License-Identifier: Apache-2.0 */
/* The client's connections, one per (broker address, lane), and the poll()
 * loop that drives them. Lanes keep a long-poll fetch from stalling
 * metadata and produce replies queued behind it on the same socket.
 * A connection that fails is replaced on the next pool_get, except that a
 * failed connect is not retried for a short backoff (the error is
 * returned instead). Closed connections are freed only at the end of
 * pool_poll, outside every callback. Locality: the client's thread. */
#ifndef CLIENT_POOL_H
#define CLIENT_POOL_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/conn.h"
#include "common/clock.h"
#include "common/err.h"

enum pool_lane {
    POOL_LANE_DEFAULT, /* metadata, admin, produce, list offsets */
    POOL_LANE_FETCH,   /* consumer long-poll fetches */
    POOL_LANE_COUNT,
};

#define POOL_RECONNECT_BACKOFF_MS 200

struct pool; /* opaque: pool.c */

/* opts and clock are borrowed for the pool's life. */
WEIR_MUST_CHECK int pool_new(const struct conn_opts *opts,
                             const struct clock *clock,
                             struct pool **out);
void pool_free(struct pool *p);

/* The open connection to host:port on lane, or a new one.
 * Errors: WEIR_ENETWORK (the last connect failed less than the backoff
 * ago, or this one failed at once), WEIR_ENOMEM. */
WEIR_MUST_CHECK int pool_get(struct pool *p,
                             const char *host,
                             uint16_t port,
                             enum pool_lane lane,
                             struct conn **out,
                             struct err_detail *ed);

/* Close every connection to host:port (all lanes), failing what is in
 * flight on them with err and msg. */
void pool_close_addr(
    struct pool *p, const char *host, uint16_t port, int err, const char *msg);

/* Wait up to timeout_ms (-1 = no limit other than request deadlines) for
 * the connections and the caller's extra fds; handle I/O and deadlines
 * (callbacks run here); free closed connections. A signal ends the wait
 * early and sets pool_interrupted. Returns 0, or WEIR_EINVALID_ARGUMENT
 * when called from inside a callback (nested poll). */
int pool_poll(struct pool *p,
              struct pollfd *extra,
              size_t n_extra,
              int timeout_ms);

/* The last pool_poll was cut short by a signal. */
bool pool_interrupted(const struct pool *p);
/* pool_poll is running (we are inside a callback). */
bool pool_in_poll(const struct pool *p);
/* The pool's clock, for callers that stamp deadlines. */
uint64_t pool_now_ms(const struct pool *p);

#endif /* CLIENT_POOL_H */
