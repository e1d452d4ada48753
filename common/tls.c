/* SPDX-License-Identifier: Apache-2.0 */
#include "common/tls.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* A session's slot for the subject of a client certificate that failed
 * verification (OPENSSL_strdup'ed, freed with the session). */
static int tls_refused_idx = -1;
static pthread_once_t tls_refused_once = PTHREAD_ONCE_INIT;

static void tls_refused_free(
    void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent;
    (void)ad;
    (void)idx;
    (void)argl;
    (void)argp;
    OPENSSL_free(ptr);
}

static void tls_refused_init(void)
{
    tls_refused_idx =
        SSL_get_ex_new_index(0, NULL, NULL, NULL, tls_refused_free);
}

static void tls_name_str(X509 *cert, char *out, size_t len)
{
    BIO *bio = BIO_new(BIO_s_mem());
    int n;

    out[0] = '\0';
    if (bio != NULL) {
        (void)X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0,
                                 XN_FLAG_RFC2253);
        n = BIO_read(bio, out, (int)len - 1);
        out[n > 0 ? n : 0] = '\0';
        BIO_free(bio);
    }
}

/* OpenSSL's verdict stands; this only notes whose certificate was
 * refused, so the listener's log line can name it. */
static int tls_verify_note(int ok, X509_STORE_CTX *x)
{
    SSL *ssl;
    X509 *cert;
    char subject[512];
    char *copy;

    if (ok || tls_refused_idx < 0) {
        return ok;
    }
    ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    cert = X509_STORE_CTX_get0_cert(x);
    if (ssl == NULL || cert == NULL ||
        SSL_get_ex_data(ssl, tls_refused_idx) != NULL) {
        return ok;
    }
    tls_name_str(cert, subject, sizeof(subject));
    copy = OPENSSL_strdup(subject);
    if (copy != NULL && SSL_set_ex_data(ssl, tls_refused_idx, copy) != 1) {
        OPENSSL_free(copy);
    }
    return ok;
}

static void tls_server_verify(SSL_CTX *ctx, int mode)
{
    (void)pthread_once(&tls_refused_once, tls_refused_init);
    SSL_CTX_set_verify(ctx, mode, tls_verify_note);
}

static void tls_err_queue(char *out, size_t len)
{
    unsigned long e;
    size_t used = 0;

    out[0] = '\0';
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof(one));
        if (used < len) {
            int n = snprintf(out + used, len - used, "%s%s",
                             used > 0 ? "; " : "", one);
            used += n > 0 ? (size_t)n : 0;
        }
    }
}

static int tls_fail(SSL_CTX *ctx,
                    struct err_detail *ed,
                    const char *what,
                    const char *file)
{
    char why[512];

    tls_err_queue(why, sizeof(why));
    SSL_CTX_free(ctx);
    return err_set(ed, WEIR_ECONFIG, "TLS: %s %s: %s", what,
                   file != NULL ? file : "", why[0] != '\0' ? why : "failed");
}

static int
tls_new_ctx(const SSL_METHOD *m, SSL_CTX **out, struct err_detail *ed)
{
    SSL_CTX *ctx = SSL_CTX_new(m);

    *out = NULL;
    if (ctx == NULL) {
        return tls_fail(NULL, ed, "cannot create a context", NULL);
    }
    /* TLS 1.0 and 1.1 are refused whatever the system's policy says */
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        return tls_fail(ctx, ed, "cannot set the minimum version", NULL);
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    *out = ctx;
    return 0;
}

static int
tls_load_pair(SSL_CTX *ctx, const struct tls_files *f, struct err_detail *ed)
{
    if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1) {
        return tls_fail(ctx, ed, "cannot load the certificate", f->cert);
    }
    if (f->key == NULL ||
        SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1) {
        return tls_fail(ctx, ed, "cannot load the key",
                        f->key != NULL ? f->key : "(none given)");
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        return tls_fail(ctx, ed, "the key does not match the certificate",
                        f->key);
    }
    return 0;
}

int tls_server_ctx(const struct tls_files *f,
                   SSL_CTX **out,
                   struct err_detail *ed)
{
    SSL_CTX *ctx;
    int rv;

    *out = NULL;
    if (f->cert == NULL) {
        return err_set(ed, WEIR_ECONFIG,
                       "TLS: a listener needs a certificate "
                       "and a key (tls-cert, tls-key)");
    }
    rv = tls_new_ctx(TLS_server_method(), &ctx, ed);
    if (rv != 0 || (rv = tls_load_pair(ctx, f, ed)) != 0) {
        return rv;
    }
    if (f->require_client_cert) {
        STACK_OF(X509_NAME) * names;
        if (f->ca == NULL) {
            SSL_CTX_free(ctx);
            return err_set(ed, WEIR_ECONFIG,
                           "TLS: mutual TLS needs a CA to verify clients "
                           "(tls-ca)");
        }
        if (SSL_CTX_load_verify_locations(ctx, f->ca, NULL) != 1) {
            return tls_fail(ctx, ed, "cannot load the CA", f->ca);
        }
        names = SSL_load_client_CA_file(f->ca);
        if (names != NULL) {
            SSL_CTX_set_client_CA_list(ctx, names);
        }
        tls_server_verify(ctx,
                          SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
    }
    *out = ctx;
    return 0;
}

int tls_server_request_client_cert(SSL_CTX *ctx,
                                   const char *ca,
                                   struct err_detail *ed)
{
    STACK_OF(X509_NAME) * names;

    if ((SSL_CTX_get_verify_mode(ctx) & SSL_VERIFY_FAIL_IF_NO_PEER_CERT) != 0) {
        return 0;
    }
    if (ca == NULL) {
        return err_set(ed, WEIR_ECONFIG,
                       "TLS: verifying client certificates needs a CA "
                       "(tls-ca)");
    }
    if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        char why[512];
        tls_err_queue(why, sizeof(why));
        return err_set(ed, WEIR_ECONFIG, "TLS: cannot load the CA %s: %s", ca,
                       why[0] != '\0' ? why : "failed");
    }
    names = SSL_load_client_CA_file(ca);
    if (names != NULL) {
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    tls_server_verify(ctx, SSL_VERIFY_PEER);
    return 0;
}

int tls_client_ctx(const struct tls_files *f,
                   SSL_CTX **out,
                   struct err_detail *ed)
{
    SSL_CTX *ctx;
    int rv;

    *out = NULL;
    rv = tls_new_ctx(TLS_client_method(), &ctx, ed);
    if (rv != 0) {
        return rv;
    }
    if (f->cert != NULL && (rv = tls_load_pair(ctx, f, ed)) != 0) {
        return rv;
    }
    if (f->ca != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, f->ca, NULL) != 1) {
            return tls_fail(ctx, ed, "cannot load the CA", f->ca);
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return tls_fail(ctx, ed, "cannot load the system's CAs", NULL);
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    *out = ctx;
    return 0;
}

void tls_ctx_free(SSL_CTX *ctx)
{
    SSL_CTX_free(ctx);
}

int tls_daemon_ctxs(const char *cert,
                    const char *key,
                    const char *ca,
                    const char *client_auth,
                    SSL_CTX **server,
                    SSL_CTX **client,
                    struct err_detail *ed)
{
    struct tls_files f = {cert, key, ca, false};
    int rv;

    *server = NULL;
    if (client != NULL) {
        *client = NULL;
    }
    if (client_auth == NULL || strcmp(client_auth, "none") == 0) {
        f.require_client_cert = false;
    } else if (strcmp(client_auth, "required") == 0) {
        f.require_client_cert = true;
    } else {
        return err_set(ed, WEIR_ECONFIG,
                       "tls-client-auth: 'none' or 'required', not '%s'",
                       client_auth);
    }
    rv = tls_server_ctx(&f, server, ed);
    if (rv == 0 && client != NULL &&
        (rv = tls_client_ctx(&f, client, ed)) != 0) {
        SSL_CTX_free(*server);
        *server = NULL;
    }
    return rv;
}

SSL *tls_client_new(SSL_CTX *ctx, const char *host)
{
    unsigned char ip[16];
    SSL *ssl = SSL_new(ctx);
    bool is_ip;

    if (ssl == NULL) {
        return NULL;
    }
    is_ip =
        inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    /* SSL_set1_host checks DNS names; an address is matched against the
     * certificate's IP entries instead */
    if (is_ip) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1) {
            SSL_free(ssl);
            return NULL;
        }
    } else if (SSL_set1_host(ssl, host) != 1 ||
               SSL_set_tlsext_host_name(ssl, host) != 1) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

bool tls_peer_verified(SSL *ssl)
{
    X509 *cert = SSL_get_peer_certificate(ssl);
    bool ok = cert != NULL && SSL_get_verify_result(ssl) == X509_V_OK;

    X509_free(cert);
    return ok;
}

void tls_peer_subject(SSL *ssl, char *out, size_t len)
{
    X509 *cert = SSL_get_peer_certificate(ssl);

    out[0] = '\0';
    if (cert == NULL) {
        return;
    }
    tls_name_str(cert, out, len);
    X509_free(cert);
}

const char *tls_refused_subject(SSL *ssl)
{
    const char *s;

    if (tls_refused_idx < 0) {
        return "";
    }
    s = SSL_get_ex_data(ssl, tls_refused_idx);
    return s != NULL ? s : "";
}

void tls_last_error(SSL *ssl, char *out, size_t len)
{
    char q[400];
    long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;

    tls_err_queue(q, sizeof(q));
    if (v != X509_V_OK) {
        (void)snprintf(out, len, "%s (%s)", q[0] != '\0' ? q : "verify failed",
                       X509_verify_cert_error_string(v));
    } else {
        (void)snprintf(out, len, "%s",
                       q[0] != '\0' ? q
                                    : "the peer closed the connection (does it "
                                      "require a client certificate?)");
    }
}
