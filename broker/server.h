/* SPDX-License-Identifier: Apache-2.0 */
/* Start-up and shutdown of a broker whose cfg is filled in. */
#ifndef BROKER_SERVER_H
#define BROKER_SERVER_H

#include "broker/broker.h"

/* Open the data directory and the listener. On failure ed says why; call
 * server_close anyway. */
WEIR_MUST_CHECK int server_open(struct broker *b, struct err_detail *ed);
/* Serve until SIGTERM/SIGINT. */
int server_run(struct broker *b);
/* Flush, answer what waits, close logs cleanly, free. */
void server_close(struct broker *b);

#endif /* BROKER_SERVER_H */
