/* SPDX-License-Identifier: Apache-2.0 */
#include "common/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum scram_mech scram_mech_parse(const char *name)
{
    if (strcmp(name, "SCRAM-SHA-256") == 0) {
        return SCRAM_SHA_256;
    }
    if (strcmp(name, "SCRAM-SHA-512") == 0) {
        return SCRAM_SHA_512;
    }
    return (enum scram_mech)0;
}

const char *scram_mech_name(enum scram_mech m)
{
    return m == SCRAM_SHA_512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
}

static const EVP_MD *scram_md(enum scram_mech m)
{
    return m == SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
}

static size_t scram_key_len(enum scram_mech m)
{
    return m == SCRAM_SHA_512 ? 64 : 32;
}

static bool scram_hmac(enum scram_mech m,
                       const uint8_t *key,
                       size_t key_len,
                       const void *data,
                       size_t len,
                       uint8_t *out)
{
    unsigned int n = 0;

    return HMAC(scram_md(m), key, (int)key_len, data, len, out, &n) != NULL &&
           n == scram_key_len(m);
}

static bool scram_hash(enum scram_mech m, const uint8_t *data, uint8_t *out)
{
    unsigned int n = 0;

    return EVP_Digest(data, scram_key_len(m), out, &n, scram_md(m), NULL) ==
               1 &&
           n == scram_key_len(m);
}

/* Base64 of len bytes into out (NUL-terminated); false if it won't fit. */
static bool b64_encode(const uint8_t *p, size_t len, char *out, size_t cap)
{
    if (4 * ((len + 2) / 3) + 1 > cap) {
        return false;
    }
    (void)EVP_EncodeBlock((unsigned char *)out, p, (int)len);
    return true;
}

/* Strict base64 (padded, no whitespace) into out; *n its length. */
static bool
b64_decode(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n)
{
    uint8_t tmp[3 * (SCRAM_MAX_MESSAGE / 4) + 3];
    int got;
    size_t pad = 0;
    size_t i;

    if (len == 0 || len % 4 != 0 || len > SCRAM_MAX_MESSAGE) {
        return false;
    }
    for (i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                  (c >= '0' && c <= '9') || c == '+' || c == '/' ||
                  (c == '=' && i >= len - 2);
        if (!ok || (c != '=' && pad > 0)) {
            return false;
        }
        pad += c == '=';
    }
    got = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)len);
    if (got < 0 || (size_t)got < pad || (size_t)got - pad > cap) {
        return false;
    }
    *n = (size_t)got - pad;
    memcpy(out, tmp, *n);
    return true;
}

int scram_cred_make(enum scram_mech mech,
                    const char *password,
                    const uint8_t *salt,
                    size_t salt_len,
                    uint32_t iterations,
                    struct scram_cred *out,
                    struct err_detail *ed)
{
    uint8_t salted[SCRAM_MAX_KEY];
    uint8_t client_key[SCRAM_MAX_KEY];
    size_t kl = scram_key_len(mech);

    memset(out, 0, sizeof(*out));
    if (mech != SCRAM_SHA_256 && mech != SCRAM_SHA_512) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "unknown SCRAM mechanism");
    }
    if (iterations < SCRAM_MIN_ITER || iterations > SCRAM_MAX_ITER ||
        salt_len > SCRAM_MAX_SALT) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "iterations must be %u..%u and the salt at most %u "
                       "bytes",
                       SCRAM_MIN_ITER, SCRAM_MAX_ITER, SCRAM_MAX_SALT);
    }
    out->mech = mech;
    out->iterations = iterations;
    if (salt_len == 0) {
        out->salt_len = 16;
        if (RAND_bytes(out->salt, (int)out->salt_len) != 1) {
            return err_set(ed, WEIR_EINVALID_ARGUMENT, "no random salt");
        }
    } else {
        memcpy(out->salt, salt, salt_len);
        out->salt_len = salt_len;
    }
    if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), out->salt,
                          (int)out->salt_len, (int)iterations, scram_md(mech),
                          (int)kl, salted) != 1 ||
        !scram_hmac(mech, salted, kl, "Client Key", 10, client_key) ||
        !scram_hash(mech, client_key, out->stored_key) ||
        !scram_hmac(mech, salted, kl, "Server Key", 10, out->server_key)) {
        OPENSSL_cleanse(salted, sizeof(salted));
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "key derivation failed");
    }
    OPENSSL_cleanse(salted, sizeof(salted));
    OPENSSL_cleanse(client_key, sizeof(client_key));
    return 0;
}

/* ---- message parsing --------------------------------------------------- */

/* One "x=value" attribute at *pos of msg[0, len): its letter and value. */
static bool scram_attr(const char *msg,
                       size_t len,
                       size_t *pos,
                       char *name,
                       const char **val,
                       size_t *vlen)
{
    size_t i = *pos;
    const char *comma;

    if (len - i < 2 || msg[i + 1] != '=' || msg[i] < 'a' || msg[i] > 'z') {
        return false;
    }
    *name = msg[i];
    *val = msg + i + 2;
    comma = memchr(*val, ',', len - i - 2);
    *vlen = comma != NULL ? (size_t)(comma - *val) : len - i - 2;
    *pos = i + 2 + *vlen + (comma != NULL ? 1 : 0);
    return !(comma != NULL && *pos == len); /* no trailing comma */
}

/* A nonce: printable ASCII except ','. */
static bool scram_nonce_ok(const char *p, size_t n)
{
    size_t i;

    if (n == 0 || n > 2 * 64) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (p[i] < 0x21 || p[i] > 0x7e || p[i] == ',') {
            return false;
        }
    }
    return true;
}

/* saslname -> name: "=2C" is ',', "=3D" is '=', other '=' refused. */
static bool scram_unescape(const char *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        char c = p[i];
        if (c == '=') {
            if (n - i < 3) {
                return false;
            }
            if (p[i + 1] == '2' && p[i + 2] == 'C') {
                c = ',';
            } else if (p[i + 1] == '3' && p[i + 2] == 'D') {
                c = '=';
            } else {
                return false;
            }
            i += 2;
        } else if (c == '\0' || c == ',') {
            return false;
        }
        if (o + 1 >= cap) {
            return false;
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return o > 0;
}

static void scram_nonce(char *out, size_t bytes)
{
    uint8_t r[64];
    size_t i;

    if (RAND_bytes(r, (int)bytes) != 1) {
        memset(r, 0, sizeof(r)); /* the exchange then fails the check */
    }
    for (i = 0; i < bytes; i++) {
        (void)snprintf(out + 2 * i, 3, "%02x", r[i]);
    }
}

/* ---- server ------------------------------------------------------------ */

void scram_server_init(struct scram_server *s, enum scram_mech mech)
{
    memset(s, 0, sizeof(*s));
    s->mech = mech;
    s->state = SCRAM_SERVER_START;
}

static int scram_server_fail(struct scram_server *s,
                             struct err_detail *ed,
                             int code,
                             const char *why)
{
    s->state = SCRAM_SERVER_FAILED;
    OPENSSL_cleanse(&s->cred, sizeof(s->cred));
    return err_set(ed, code, "SCRAM: %s", why);
}

/* Credentials that fit no password, for a name nobody has: the same
 * answer shape (salt stable per name) as a real user's. */
static void scram_decoy(struct scram_server *s)
{
    uint8_t h[SCRAM_MAX_KEY];
    unsigned int n = 0;

    memset(&s->cred, 0, sizeof(s->cred));
    s->cred.mech = s->mech;
    s->cred.iterations = SCRAM_MIN_ITER;
    (void)EVP_Digest(s->user, strlen(s->user), h, &n, EVP_sha256(), NULL);
    memcpy(s->cred.salt, h, 16);
    s->cred.salt_len = 16;
    (void)RAND_bytes(s->cred.stored_key, (int)scram_key_len(s->mech));
}

int scram_server_first(struct scram_server *s,
                       const char *msg,
                       size_t len,
                       scram_lookup_fn *lookup,
                       void *arg,
                       char *out,
                       size_t out_cap,
                       struct err_detail *ed)
{
    char salt64[2 * SCRAM_MAX_SALT];
    const char *bare;
    const char *val;
    size_t vlen;
    size_t pos;
    char name;
    int n;

    if (s->state != SCRAM_SERVER_START) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "unexpected message");
    }
    if (len > SCRAM_MAX_MESSAGE || memchr(msg, '\0', len) != NULL) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "bad first message");
    }
    /* gs2 header: no channel binding, no authorization identity */
    if (len < 3 || msg[0] == 'p') {
        return scram_server_fail(s, ed, WEIR_EMALFORMED,
                                 "channel binding is not supported");
    }
    if ((msg[0] != 'n' && msg[0] != 'y') || msg[1] != ',' || msg[2] != ',') {
        return scram_server_fail(s, ed, WEIR_EMALFORMED,
                                 "bad GS2 header (an authorization identity "
                                 "is not supported)");
    }
    bare = msg + 3;
    len -= 3;
    pos = 0;
    if (!scram_attr(bare, len, &pos, &name, &val, &vlen) || name != 'n' ||
        !scram_unescape(val, vlen, s->user, sizeof(s->user))) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "bad user name");
    }
    if (!scram_attr(bare, len, &pos, &name, &val, &vlen) || name != 'r' ||
        !scram_nonce_ok(val, vlen) ||
        vlen + 2 * SCRAM_NONCE_BYTES >= sizeof(s->nonce)) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "bad client nonce");
    }
    memcpy(s->nonce, val, vlen);
    if (s->fixed_nonce != NULL) {
        (void)snprintf(s->nonce + vlen, sizeof(s->nonce) - vlen, "%s",
                       s->fixed_nonce);
    } else {
        scram_nonce(s->nonce + vlen, SCRAM_NONCE_BYTES);
    }
    /* extensions: a mandatory one ("m=") cannot be honoured */
    while (pos < len) {
        if (!scram_attr(bare, len, &pos, &name, &val, &vlen) || name == 'm') {
            return scram_server_fail(s, ed, WEIR_EMALFORMED,
                                     "unsupported extension");
        }
    }
    s->known_user = lookup != NULL && lookup(arg, s->mech, s->user, &s->cred) &&
                    s->cred.mech == s->mech;
    if (!s->known_user) {
        scram_decoy(s);
    }
    if (!b64_encode(s->cred.salt, s->cred.salt_len, salt64, sizeof(salt64))) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "salt too long");
    }
    n = snprintf(out, out_cap, "r=%s,s=%s,i=%u", s->nonce, salt64,
                 s->cred.iterations);
    if (n < 0 || (size_t)n >= out_cap) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "answer too long");
    }
    /* AuthMessage so far: client-first-bare "," server-first "," */
    n = snprintf(s->auth_msg, sizeof(s->auth_msg), "%.*s,%s,", (int)len, bare,
                 out);
    if (n < 0 || (size_t)n >= sizeof(s->auth_msg)) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "messages too long");
    }
    s->auth_len = (size_t)n;
    s->state = SCRAM_SERVER_SENT_FIRST;
    return 0;
}

int scram_server_final(struct scram_server *s,
                       const char *msg,
                       size_t len,
                       char *out,
                       size_t out_cap,
                       struct err_detail *ed)
{
    uint8_t proof[SCRAM_MAX_KEY];
    uint8_t sig[SCRAM_MAX_KEY];
    uint8_t client_key[SCRAM_MAX_KEY];
    uint8_t stored[SCRAM_MAX_KEY];
    uint8_t cbind[8];
    char sig64[2 * SCRAM_MAX_KEY];
    size_t kl = scram_key_len(s->mech);
    const char *proof_at;
    const char *val;
    size_t without_proof;
    size_t plen = 0;
    size_t clen = 0;
    size_t vlen;
    size_t pos = 0;
    size_t i;
    char name;
    bool ok;

    if (s->state != SCRAM_SERVER_SENT_FIRST) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "unexpected message");
    }
    if (len > SCRAM_MAX_MESSAGE || memchr(msg, '\0', len) != NULL) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "bad final message");
    }
    /* c= (the GS2 header, base64), r= (the whole nonce), ..., p= last */
    if (!scram_attr(msg, len, &pos, &name, &val, &vlen) || name != 'c' ||
        !b64_decode(val, vlen, cbind, sizeof(cbind), &clen) || clen != 3 ||
        (memcmp(cbind, "n,,", 3) != 0 && memcmp(cbind, "y,,", 3) != 0)) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "bad channel binding");
    }
    if (!scram_attr(msg, len, &pos, &name, &val, &vlen) || name != 'r') {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "no nonce");
    }
    /* the nonce must be this exchange's: a final message replayed into
     * another exchange names another server nonce */
    ok = vlen == strlen(s->nonce) && memcmp(val, s->nonce, vlen) == 0;
    proof_at = NULL;
    while (pos < len) {
        size_t at = pos;
        if (!scram_attr(msg, len, &pos, &name, &val, &vlen)) {
            return scram_server_fail(s, ed, WEIR_EMALFORMED, "bad attribute");
        }
        if (name == 'p') {
            if (pos != len) {
                return scram_server_fail(s, ed, WEIR_EMALFORMED,
                                         "the proof must come last");
            }
            proof_at = msg + at;
        }
    }
    if (proof_at == NULL || proof_at == msg ||
        !b64_decode(val, vlen, proof, sizeof(proof), &plen) || plen != kl) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "bad proof");
    }
    without_proof = (size_t)(proof_at - msg) - 1; /* drop the ',' too */
    if (s->auth_len + without_proof >= sizeof(s->auth_msg)) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "messages too long");
    }
    memcpy(s->auth_msg + s->auth_len, msg, without_proof);
    s->auth_len += without_proof;
    /* ClientKey = proof XOR HMAC(StoredKey, AuthMessage); must hash to
     * StoredKey. Compared in constant time. */
    if (!scram_hmac(s->mech, s->cred.stored_key, kl, s->auth_msg, s->auth_len,
                    sig)) {
        return scram_server_fail(s, ed, WEIR_EINVALID_ARGUMENT,
                                 "authentication failed");
    }
    for (i = 0; i < kl; i++) {
        client_key[i] = proof[i] ^ sig[i];
    }
    ok = scram_hash(s->mech, client_key, stored) &&
         CRYPTO_memcmp(stored, s->cred.stored_key, kl) == 0 && ok &&
         s->known_user;
    OPENSSL_cleanse(client_key, sizeof(client_key));
    if (!ok) {
        return scram_server_fail(s, ed, WEIR_EINVALID_ARGUMENT,
                                 "authentication failed");
    }
    if (!scram_hmac(s->mech, s->cred.server_key, kl, s->auth_msg, s->auth_len,
                    sig) ||
        !b64_encode(sig, kl, sig64, sizeof(sig64)) ||
        snprintf(out, out_cap, "v=%s", sig64) >= (int)out_cap) {
        return scram_server_fail(s, ed, WEIR_EMALFORMED, "answer too long");
    }
    OPENSSL_cleanse(&s->cred, sizeof(s->cred));
    s->state = SCRAM_SERVER_DONE;
    return 0;
}

/* ---- client ------------------------------------------------------------ */

int scram_client_first(struct scram_client *c,
                       enum scram_mech mech,
                       const char *user,
                       const char *cnonce,
                       char *out,
                       size_t out_cap,
                       struct err_detail *ed)
{
    char esc[3 * SCRAM_MAX_USER + 1];
    size_t o = 0;
    size_t i;
    int n;

    memset(c, 0, sizeof(*c));
    c->mech = mech;
    if (user[0] == '\0' || strlen(user) > SCRAM_MAX_USER) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "SCRAM: a user name is 1 to %u bytes", SCRAM_MAX_USER);
    }
    for (i = 0; user[i] != '\0'; i++) {
        if (user[i] == ',' || user[i] == '=') {
            o += (size_t)snprintf(esc + o, sizeof(esc) - o, "=%s",
                                  user[i] == ',' ? "2C" : "3D");
        } else {
            esc[o++] = user[i];
        }
    }
    esc[o] = '\0';
    if (cnonce != NULL) {
        (void)snprintf(c->cnonce, sizeof(c->cnonce), "%s", cnonce);
    } else {
        scram_nonce(c->cnonce, SCRAM_NONCE_BYTES);
    }
    n = snprintf(c->first_bare, sizeof(c->first_bare), "n=%s,r=%s", esc,
                 c->cnonce);
    if (n < 0 || (size_t)n >= sizeof(c->first_bare) ||
        snprintf(out, out_cap, "n,,%s", c->first_bare) >= (int)out_cap) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "SCRAM: message too long");
    }
    return 0;
}

int scram_client_final(struct scram_client *c,
                       const char *password,
                       const char *server_first,
                       size_t len,
                       char *out,
                       size_t out_cap,
                       struct err_detail *ed)
{
    struct scram_cred cred;
    char auth[3 * SCRAM_MAX_MESSAGE];
    char without[SCRAM_MAX_MESSAGE];
    char proof64[2 * SCRAM_MAX_KEY];
    uint8_t salt[SCRAM_MAX_SALT];
    uint8_t salted[SCRAM_MAX_KEY];
    uint8_t client_key[SCRAM_MAX_KEY];
    uint8_t sig[SCRAM_MAX_KEY];
    size_t kl = scram_key_len(c->mech);
    const char *nonce = NULL;
    const char *salt64 = NULL;
    const char *val;
    size_t nlen = 0;
    size_t slen = 0;
    size_t salt_len = 0;
    size_t vlen;
    size_t pos = 0;
    size_t i;
    long iter = -1;
    char name;
    int n;

    if (len > SCRAM_MAX_MESSAGE || memchr(server_first, '\0', len) != NULL) {
        return err_set(ed, WEIR_EMALFORMED, "SCRAM: bad server message");
    }
    while (pos < len) {
        if (!scram_attr(server_first, len, &pos, &name, &val, &vlen)) {
            return err_set(ed, WEIR_EMALFORMED, "SCRAM: bad server message");
        }
        if (name == 'r') {
            nonce = val;
            nlen = vlen;
        } else if (name == 's') {
            salt64 = val;
            slen = vlen;
        } else if (name == 'i' && vlen > 0 && vlen <= 7) {
            char num[8];
            memcpy(num, val, vlen);
            num[vlen] = '\0';
            iter = strtol(num, NULL, 10);
        } else if (name == 'm' || name == 'e') {
            return err_set(ed, WEIR_EINVALID_ARGUMENT,
                           "SCRAM: server said %.*s", (int)vlen, val);
        }
    }
    if (nonce == NULL || salt64 == NULL || iter < (long)SCRAM_MIN_ITER ||
        iter > (long)SCRAM_MAX_ITER || nlen <= strlen(c->cnonce) ||
        !scram_nonce_ok(nonce, nlen) ||
        memcmp(nonce, c->cnonce, strlen(c->cnonce)) != 0 ||
        !b64_decode(salt64, slen, salt, sizeof(salt), &salt_len)) {
        return err_set(ed, WEIR_EMALFORMED,
                       "SCRAM: the server's first message is not acceptable "
                       "(nonce, salt or iteration count)");
    }
    if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, (int)salt_len,
                          (int)iter, scram_md(c->mech), (int)kl, salted) != 1 ||
        !scram_hmac(c->mech, salted, kl, "Client Key", 10, client_key) ||
        !scram_hash(c->mech, client_key, cred.stored_key) ||
        !scram_hmac(c->mech, salted, kl, "Server Key", 10, cred.server_key)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "SCRAM: key derivation failed");
    }
    OPENSSL_cleanse(salted, sizeof(salted));
    n = snprintf(without, sizeof(without), "c=biws,r=%.*s", (int)nlen, nonce);
    if (n < 0 || (size_t)n >= sizeof(without) ||
        snprintf(auth, sizeof(auth), "%s,%.*s,%s", c->first_bare, (int)len,
                 server_first, without) >= (int)sizeof(auth) ||
        !scram_hmac(c->mech, cred.stored_key, kl, auth, strlen(auth), sig)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "SCRAM: message too long");
    }
    for (i = 0; i < kl; i++) {
        client_key[i] ^= sig[i]; /* the proof */
    }
    if (!b64_encode(client_key, kl, proof64, sizeof(proof64)) ||
        !scram_hmac(c->mech, cred.server_key, kl, auth, strlen(auth),
                    c->server_sig) ||
        snprintf(out, out_cap, "%s,p=%s", without, proof64) >= (int)out_cap) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "SCRAM: message too long");
    }
    c->sig_len = kl;
    OPENSSL_cleanse(client_key, sizeof(client_key));
    OPENSSL_cleanse(&cred, sizeof(cred));
    return 0;
}

int scram_client_verify(struct scram_client *c,
                        const char *server_final,
                        size_t len,
                        struct err_detail *ed)
{
    uint8_t sig[SCRAM_MAX_KEY];
    const char *val;
    size_t vlen;
    size_t n = 0;
    size_t pos = 0;
    char name;

    if (len > SCRAM_MAX_MESSAGE ||
        !scram_attr(server_final, len, &pos, &name, &val, &vlen)) {
        return err_set(ed, WEIR_EMALFORMED, "SCRAM: bad server final message");
    }
    if (name == 'e') {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "SCRAM: server said %.*s",
                       (int)vlen, val);
    }
    if (name != 'v' || !b64_decode(val, vlen, sig, sizeof(sig), &n) ||
        n != c->sig_len || c->sig_len == 0 ||
        CRYPTO_memcmp(sig, c->server_sig, n) != 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "SCRAM: the server's signature is wrong (it does not "
                       "know this password)");
    }
    return 0;
}
