/* SPDX-License-Identifier: Apache-2.0 */
/* TLS contexts (OpenSSL) for listeners and outgoing connections: TLS 1.2
 * at least, 1.3 preferred; certificate, key and CA from files; the server
 * may require a client certificate (mutual TLS), whose subject is then the
 * connection's principal. Hostname checks are per connection
 * (tls_client_new). Locality: any thread; a context is shared read-only. */
#ifndef COMMON_TLS_H
#define COMMON_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

struct tls_files {
    const char *cert;         /* PEM certificate chain; NULL = none (client) */
    const char *key;          /* PEM private key of cert */
    const char *ca;           /* PEM CA bundle to verify the peer; NULL = the
                                 system's default paths (client) */
    bool require_client_cert; /* server: mutual TLS */
};

/* A listener's context: cert and key are required. Errors:
 * WEIR_ECONFIG (a file cannot be read or does not match; the message
 * names the file and OpenSSL's reason), WEIR_ENOMEM. */
WEIR_MUST_CHECK int
tls_server_ctx(const struct tls_files *f, SSL_CTX **out, struct err_detail *ed);
/* An outgoing connection's context: the peer is always verified (ca, or
 * the default paths); cert and key, if given, are presented to servers
 * that ask. Errors as tls_server_ctx. */
WEIR_MUST_CHECK int
tls_client_ctx(const struct tls_files *f, SSL_CTX **out, struct err_detail *ed);
void tls_ctx_free(SSL_CTX *ctx);

/* Make a listener's context ask every client for a certificate and verify
 * it against ca, without requiring one: a client that presents none still
 * connects, one whose certificate does not verify is refused in the
 * handshake. No-op on a context that already requires one. Errors:
 * WEIR_ECONFIG (ca missing or unreadable). */
WEIR_MUST_CHECK int tls_server_request_client_cert(SSL_CTX *ctx,
                                                   const char *ca,
                                                   struct err_detail *ed);

/* A daemon's contexts from its tls-cert, tls-key, tls-ca and
 * tls-client-auth ("none" or "required") options: the listener's, and
 * (client != NULL) one for its own outgoing connections, presenting the
 * same certificate. On error nothing is left allocated. Errors:
 * WEIR_ECONFIG, WEIR_ENOMEM. */
WEIR_MUST_CHECK int tls_daemon_ctxs(const char *cert,
                                    const char *key,
                                    const char *ca,
                                    const char *client_auth,
                                    SSL_CTX **server,
                                    SSL_CTX **client,
                                    struct err_detail *ed);

/* A client session for host (checked against the certificate's names or
 * IP addresses; also sent as SNI when it is a name). NULL on failure. */
SSL *tls_client_new(SSL_CTX *ctx, const char *host);

/* True when the peer presented a certificate and it verified. */
bool tls_peer_verified(SSL *ssl);

/* The peer certificate's subject ("CN=...,O=..."), or "" without one. */
void tls_peer_subject(SSL *ssl, char *out, size_t len);

/* On a listener's session: the subject of the client certificate that
 * failed verification, or "" (none failed). Valid while ssl lives. */
const char *tls_refused_subject(SSL *ssl);

/* Why the last TLS call failed, for messages: OpenSSL's error queue (which
 * is emptied) and, after a failed verification, the reason. */
void tls_last_error(SSL *ssl, char *out, size_t len);

#endif /* COMMON_TLS_H */
