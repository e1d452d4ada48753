/* SPDX-License-Identifier: Apache-2.0 */
/* libweir: the Weir client library, public API. A client (weir_client.h)
 * holds the bootstrap list, the metadata cache and the broker connections;
 * producers (weir_producer.h) and consumers (weir_consumer.h) hang off a
 * client; admin calls (weir_admin.h) use it directly. Everything runs on
 * the caller's thread: I/O happens only inside calls that poll, and
 * callbacks run there too. Errors are enum weir_err codes (common/err.h);
 * every fallible call also fills a struct err_detail (may be NULL) with a
 * message for humans.
 * Locality: one thread per client and its producers and consumers. */
#ifndef CLIENT_WEIR_H
#define CLIENT_WEIR_H

#include "client/weir_admin.h"
#include "client/weir_client.h"
#include "client/weir_consumer.h"
#include "client/weir_producer.h"

#endif /* CLIENT_WEIR_H */
