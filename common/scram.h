/* SPDX-License-Identifier: Apache-2.0 */
/* SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): stored
 * credentials (salt, iteration count, StoredKey, ServerKey; never the
 * password), and both sides of the exchange as pure functions over the
 * messages' bytes:
 *
 *   client-first  "n,,n=USER,r=CNONCE"
 *   server-first  "r=CNONCE SNONCE,s=SALT64,i=ITERATIONS"
 *   client-final  "c=biws,r=CNONCE SNONCE,p=PROOF64"
 *   server-final  "v=SIGNATURE64"   (or "e=ERROR")
 *
 * No channel binding (the client must send "n"). The server checks that
 * the final message carries its nonce (so a final message replayed into
 * another exchange fails) and compares keys in constant time. Every
 * message is parsed with bounds from its length; none is trusted.
 * Locality: any thread. */
#ifndef COMMON_SCRAM_H
#define COMMON_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define SCRAM_MAX_KEY     64 /* SHA-512 */
#define SCRAM_MAX_SALT    64
#define SCRAM_MAX_USER    255  /* bytes of the user name */
#define SCRAM_MAX_MESSAGE 1024 /* longer messages are refused */
#define SCRAM_MIN_ITER    4096 /* RFC 7677 */
#define SCRAM_MAX_ITER    1000000
#define SCRAM_NONCE_BYTES 18 /* random bytes of each side's nonce */

enum scram_mech { SCRAM_SHA_256 = 1, SCRAM_SHA_512 = 2 };

/* "SCRAM-SHA-256" / "SCRAM-SHA-512" -> mech; 0 when unknown. */
enum scram_mech scram_mech_parse(const char *name);
const char *scram_mech_name(enum scram_mech m);

struct scram_cred {
    enum scram_mech mech;
    uint8_t salt[SCRAM_MAX_SALT];
    size_t salt_len;
    uint32_t iterations;
    uint8_t stored_key[SCRAM_MAX_KEY];
    uint8_t server_key[SCRAM_MAX_KEY];
};

/* Credentials for a password (salt: random if salt_len is 0). Errors:
 * WEIR_EINVALID_ARGUMENT (iterations out of range, salt too long). */
WEIR_MUST_CHECK int scram_cred_make(enum scram_mech mech,
                                    const char *password,
                                    const uint8_t *salt,
                                    size_t salt_len,
                                    uint32_t iterations,
                                    struct scram_cred *out,
                                    struct err_detail *ed);

/* ---- server ---------------------------------------------------------- */

enum scram_server_state {
    SCRAM_SERVER_START,
    SCRAM_SERVER_SENT_FIRST,
    SCRAM_SERVER_DONE,  /* authenticated: user holds the name */
    SCRAM_SERVER_FAILED /* final: no more messages */
};

struct scram_server {
    enum scram_server_state state;
    enum scram_mech mech;
    struct scram_cred cred; /* the user's, or a decoy for an unknown one */
    bool known_user;
    char user[SCRAM_MAX_USER + 1];
    char nonce[2 * 64 + 1];               /* client nonce + server nonce */
    char auth_msg[3 * SCRAM_MAX_MESSAGE]; /* first-bare,server-first, */
    size_t auth_len;                      /* ...final-without-proof */
    const char *fixed_nonce;              /* tests: the server nonce */
};

/* Finds a user's credentials for the server; false when unknown. */
typedef bool scram_lookup_fn(void *arg,
                             enum scram_mech mech,
                             const char *user,
                             struct scram_cred *out);

void scram_server_init(struct scram_server *s, enum scram_mech mech);

/* The client's first message -> the server's first (NUL-terminated in
 * out, at most out_cap bytes). An unknown user gets a decoy answer (a
 * salt derived from the name) and fails at the final message, so names
 * cannot be probed. Errors: WEIR_EMALFORMED (with why), state errors. */
WEIR_MUST_CHECK int scram_server_first(struct scram_server *s,
                                       const char *msg,
                                       size_t len,
                                       scram_lookup_fn *lookup,
                                       void *arg,
                                       char *out,
                                       size_t out_cap,
                                       struct err_detail *ed);

/* The client's final message -> the server's final ("v=..."). Errors:
 * WEIR_EMALFORMED, and WEIR_EINVALID_ARGUMENT for a wrong proof, a wrong
 * nonce or an unknown user (one message for all three). */
WEIR_MUST_CHECK int scram_server_final(struct scram_server *s,
                                       const char *msg,
                                       size_t len,
                                       char *out,
                                       size_t out_cap,
                                       struct err_detail *ed);

/* ---- client ---------------------------------------------------------- */

struct scram_client {
    enum scram_mech mech;
    char first_bare[SCRAM_MAX_MESSAGE];
    char cnonce[2 * SCRAM_NONCE_BYTES + 1];
    uint8_t server_sig[SCRAM_MAX_KEY];
    size_t sig_len;
};

/* The client's first message for user (cnonce: random if NULL). */
WEIR_MUST_CHECK int scram_client_first(struct scram_client *c,
                                       enum scram_mech mech,
                                       const char *user,
                                       const char *cnonce,
                                       char *out,
                                       size_t out_cap,
                                       struct err_detail *ed);
/* The server's first message -> the client's final. Checks the server
 * kept the client's nonce and asks for at least SCRAM_MIN_ITER. */
WEIR_MUST_CHECK int scram_client_final(struct scram_client *c,
                                       const char *password,
                                       const char *server_first,
                                       size_t len,
                                       char *out,
                                       size_t out_cap,
                                       struct err_detail *ed);
/* The server's final message: its signature must be the expected one
 * (the server knew the password's keys). */
WEIR_MUST_CHECK int scram_client_verify(struct scram_client *c,
                                        const char *server_final,
                                        size_t len,
                                        struct err_detail *ed);

#endif /* COMMON_SCRAM_H */
