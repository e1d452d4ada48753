/* SPDX-License-Identifier: Apache-2.0 */
#include "client/client.h"

#include <string.h>

#include "common/mem.h"
#include "common/names.h"
#include "common/scram.h"
#include "common/tls.h"

#ifndef WEIR_VERSION_STRING
#define WEIR_VERSION_STRING "0.0.0"
#endif

const char *weir_version(void)
{
    return WEIR_VERSION_STRING;
}

void weir_client_config_init(struct weir_client_config *cfg)
{
    cfg->bootstrap = WEIR_DEFAULT_BOOTSTRAP;
    cfg->client_id = "weir";
    cfg->connect_timeout_ms = 5000;
    cfg->request_timeout_ms = 30000;
    cfg->max_frame_bytes = 64u * 1024 * 1024;
    cfg->clock = NULL;
    cfg->tls = false;
    cfg->tls_ca = NULL;
    cfg->tls_cert = NULL;
    cfg->tls_key = NULL;
    cfg->sasl_mechanism = NULL;
    cfg->sasl_user = NULL;
    cfg->sasl_password = NULL;
}

/* Copy the SASL settings (the pool's connections borrow the copies). */
static int client_sasl(struct weir_client *c, struct err_detail *ed)
{
    const char *mech =
        c->cfg.sasl_mechanism != NULL ? c->cfg.sasl_mechanism : "SCRAM-SHA-256";

    c->cfg.sasl_mechanism = c->cfg.sasl_password = NULL;
    if (c->cfg.sasl_user == NULL) {
        return 0;
    }
    if (scram_mech_parse(mech) == 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "unknown SASL mechanism '%s' (use SCRAM-SHA-256 or "
                       "SCRAM-SHA-512)",
                       mech);
    }
    if (c->cfg.sasl_user[0] == '\0') {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "empty SASL user name");
    }
    if (c->sasl_password == NULL) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "SASL user '%s' has no password", c->cfg.sasl_user);
    }
    c->sasl_mechanism = mem_strdup(mech);
    c->sasl_user = mem_strdup(c->cfg.sasl_user);
    if (c->sasl_mechanism == NULL || c->sasl_user == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    c->cfg.sasl_mechanism = c->sasl_mechanism;
    c->cfg.sasl_user = c->sasl_user;
    c->conn_opts.sasl_mechanism = c->sasl_mechanism;
    c->conn_opts.sasl_user = c->sasl_user;
    c->conn_opts.sasl_password = c->sasl_password;
    return 0;
}

int weir_client_new(const struct weir_client_config *cfg,
                    struct weir_client **out,
                    struct err_detail *ed)
{
    struct weir_client *c;
    int rv;

    *out = NULL;
    c = mem_calloc(1, sizeof(*c));
    if (c == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    c->cfg = *cfg;
    c->bootstrap = mem_strdup(cfg->bootstrap != NULL ? cfg->bootstrap
                                                     : WEIR_DEFAULT_BOOTSTRAP);
    c->client_id = mem_strdup(cfg->client_id != NULL ? cfg->client_id : "weir");
    if (c->bootstrap == NULL || c->client_id == NULL) {
        rv = err_set(ed, WEIR_ENOMEM, "out of memory");
        goto fail;
    }
    c->cfg.bootstrap = c->bootstrap;
    c->cfg.client_id = c->client_id;
    if (c->cfg.connect_timeout_ms == 0 || c->cfg.request_timeout_ms == 0 ||
        c->cfg.max_frame_bytes < 1024) {
        rv = err_set(ed, WEIR_EINVALID_ARGUMENT,
                     "client timeouts must be positive and max_frame_bytes "
                     "at least 1024");
        goto fail;
    }
    c->clock = cfg->clock != NULL ? cfg->clock : clock_system();
    c->conn_opts.client_id = c->client_id;
    c->conn_opts.connect_timeout_ms = c->cfg.connect_timeout_ms;
    c->conn_opts.max_frame_bytes = c->cfg.max_frame_bytes;
    if (c->cfg.tls) {
        struct tls_files f = {c->cfg.tls_cert, c->cfg.tls_key, c->cfg.tls_ca,
                              false};
        rv = tls_client_ctx(&f, &c->tls, ed);
        if (rv != 0) {
            goto fail;
        }
        c->conn_opts.tls = c->tls;
    }
    /* the file names are not kept */
    c->cfg.tls_ca = c->cfg.tls_cert = c->cfg.tls_key = NULL;
    if (cfg->sasl_user != NULL && cfg->sasl_password != NULL) {
        c->sasl_password = mem_strdup(cfg->sasl_password);
        if (c->sasl_password == NULL) {
            rv = err_set(ed, WEIR_ENOMEM, "out of memory");
            goto fail;
        }
    }
    rv = client_sasl(c, ed);
    if (rv != 0) {
        goto fail;
    }
    if (pool_new(&c->conn_opts, c->clock, &c->pool) != 0) {
        rv = err_set(ed, WEIR_ENOMEM, "out of memory");
        goto fail;
    }
    rv = metadata_new(c->bootstrap, c->pool, c->cfg.request_timeout_ms, &c->md,
                      ed);
    if (rv != 0) {
        goto fail;
    }
    if (c->tls != NULL) {
        metadata_use_tls(c->md);
    }
    *out = c;
    return 0;

fail:
    weir_client_free(c);
    return rv;
}

void weir_client_free(struct weir_client *c)
{
    if (c == NULL) {
        return;
    }
    /* The pool first: failing its pending requests runs callbacks that
     * still touch the metadata cache. */
    pool_free(c->pool);
    metadata_free(c->md);
    tls_ctx_free(c->tls);
    mem_free(c->bootstrap);
    mem_free(c->client_id);
    mem_free(c->sasl_mechanism);
    mem_free(c->sasl_user);
    if (c->sasl_password != NULL) {
        explicit_bzero(c->sasl_password, strlen(c->sasl_password));
        mem_free(c->sasl_password);
    }
    mem_free(c);
}

int client_topic(struct weir_client *c,
                 const char *topic,
                 bool refresh,
                 struct md_topic **out,
                 struct err_detail *ed)
{
    struct md_topic *t;
    int rv;

    *out = NULL;
    rv = names_topic_check(topic, strlen(topic), ed);
    if (rv != 0) {
        return rv;
    }
    t = metadata_want(c->md, topic);
    if (t == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    if (refresh || !t->known) {
        rv = metadata_refresh_sync(c->md, ed);
        if (rv != 0) {
            return rv;
        }
    }
    if (t->err == WEIR_EUNKNOWN_TOPIC_OR_PARTITION) {
        return err_set(ed, t->err, "topic '%s' does not exist", topic);
    }
    if (t->err != 0 || !t->known) {
        return err_set(ed, t->err != 0 ? t->err : WEIR_EUNKNOWN,
                       "topic '%s': %s", topic, t->err_msg);
    }
    *out = t;
    return 0;
}

int weir_client_partition_count(struct weir_client *c,
                                const char *topic,
                                int32_t *count,
                                struct err_detail *ed)
{
    struct md_topic *t;
    int rv = client_topic(c, topic, true, &t, ed);

    *count = rv == 0 ? t->n_partitions : 0;
    return rv;
}
