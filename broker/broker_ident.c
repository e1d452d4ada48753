/* SPDX-License-Identifier: Apache-2.0 */
/* The broker data dir's identity files (broker_ident.h says which and
 * why). Anything that does not parse refuses the start and names the file:
 * a guessed identity or history could let the wrong controller's metadata
 * delete data. The one exception is the clean-shutdown marker, whose only
 * safe default (-1, "not clean") is also what a damaged one means. */
#include "broker/broker_ident.h"

#include <stdio.h>
#include <string.h>

#include "common/datadir.h"
#include "common/mem.h"
#include "common/trace.h"

/* dir/name's number (and the optional second one, key2), or -1 when the
 * file is missing or of another cluster than id's. */
static int broker_ident_read_num(const struct broker_ident *id,
                                 const char *name,
                                 const char *key,
                                 const char *key2,
                                 int64_t *out,
                                 int64_t *out2,
                                 bool *found,
                                 struct err_detail *ed)
{
    char cluster[METAPROPS_ID_MAX + 1];
    char *text = NULL;
    size_t len = 0;
    int64_t v = -1;
    int64_t v2 = -1;
    int rv;

    *out = *out2 = -1;
    rv = datadir_read(id->dir, name, &text, &len, found, ed);
    if (rv == 0 && *found &&
        (rv = metaprops_parse_stamp2(text, len, key, key2, cluster, &v, &v2,
                                     ed)) != 0) {
        err_wrap(ed, "%s/%s", id->dir, name);
    }
    mem_free(text);
    if (rv == 0 && *found && strcmp(cluster, id->props.cluster_id) == 0) {
        *out = v;
        *out2 = v2;
    }
    return rv;
}

static int broker_ident_write_num(const struct broker_ident *id,
                                  const char *name,
                                  const char *key,
                                  int64_t v,
                                  const char *key2,
                                  int64_t v2,
                                  struct err_detail *ed)
{
    struct weir_buf b;
    int rv;

    buf_init(&b);
    rv = metaprops_format_stamp2(id->props.cluster_id, key, v, key2, v2, &b);
    if (rv != 0) {
        rv = err_set(ed, rv, "writing %s/%s: %s", id->dir, name,
                     rv == WEIR_ENOMEM ? "out of memory" : "no cluster id yet");
    } else {
        rv = datadir_write(id->dir, name, b.data, b.len, ed);
    }
    buf_fini(&b);
    return rv;
}

static int broker_ident_props(struct broker_ident *id,
                              int64_t node_id,
                              struct err_detail *ed)
{
    bool found;
    int rv;

    rv = metaprops_read(id->dir, &id->props, &found, ed);
    if (rv != 0) {
        return rv;
    }
    if (found && id->props.node_id != node_id) {
        return err_set(ed, WEIR_ECONFIG,
                       "data dir %s belongs to broker %lld (node.id in %s), "
                       "not to --id %lld",
                       id->dir, (long long)id->props.node_id, METAPROPS_FILE,
                       (long long)node_id);
    }
    if (found && id->props.directory_id[0] != '\0') {
        return 0;
    }
    /* new, or partition logs from before identities: made once, here */
    id->props.node_id = node_id;
    rv = metaprops_new_id(id->props.directory_id, ed);
    if (rv == 0) {
        rv = metaprops_write(id->dir, &id->props, ed);
    }
    if (rv == 0) {
        trace_info("broker",
                   "event=data_dir_identity_created dir=%s node_id=%lld "
                   "directory_id=%s",
                   id->dir, (long long)node_id, id->props.directory_id);
    }
    return rv;
}

/* Read and durably remove the marker: a crash from here on must not find
 * it again and claim a clean stop. */
static int broker_ident_take_clean(struct broker_ident *id,
                                   struct err_detail *ed)
{
    struct err_detail ped;
    int64_t none;
    bool found;
    int rv;

    id->previous_epoch = -1;
    err_detail_clear(&ped);
    rv = broker_ident_read_num(id, BROKER_IDENT_CLEAN_FILE, "broker.epoch",
                               NULL, &id->previous_epoch, &none, &found, &ped);
    if (rv == WEIR_ECORRUPT) {
        trace_warn("broker",
                   "event=clean_shutdown_marker_unreadable msg=\"%s\"",
                   ped.msg);
        id->previous_epoch = -1;
    } else if (rv != 0) {
        *ed = ped;
        return rv;
    }
    if (!found) {
        return 0;
    }
    return datadir_remove(id->dir, BROKER_IDENT_CLEAN_FILE, ed);
}

int broker_ident_open(struct broker_ident *id,
                      const char *dir,
                      int64_t node_id,
                      struct err_detail *ed)
{
    bool found;
    int rv;

    memset(id, 0, sizeof(*id));
    id->dir = dir;
    metaprops_init(&id->props);
    rv = broker_ident_props(id, node_id, ed);
    if (rv == 0) {
        rv = broker_ident_take_clean(id, ed);
    }
    if (rv == 0) {
        rv = broker_ident_read_num(
            id, BROKER_IDENT_APPLIED_FILE, "metadata.end_offset",
            "metadata.chain", &id->applied_end, &id->applied_chain, &found, ed);
    }
    if (id->applied_end <= 0) {
        id->applied_end = 0;
        id->applied_chain = -1;
    }
    if (rv == WEIR_ECORRUPT) {
        err_wrap(ed, "remove the file to start without the check it "
                     "carries");
    }
    return rv;
}

int broker_ident_set_cluster(struct broker_ident *id,
                             const char *cluster_id,
                             struct err_detail *ed)
{
    struct metaprops p = id->props;
    int rv;

    (void)snprintf(p.cluster_id, sizeof(p.cluster_id), "%s", cluster_id);
    rv = metaprops_write(id->dir, &p, ed);
    if (rv == 0) {
        id->props = p;
        id->applied_end = 0; /* any stored offset was of another cluster */
        id->applied_chain = -1;
    }
    return rv;
}

int broker_ident_set_applied(struct broker_ident *id,
                             int64_t end_offset,
                             int64_t chain,
                             struct err_detail *ed)
{
    int rv;

    if (end_offset < id->applied_end ||
        (end_offset == id->applied_end &&
         (chain < 0 || chain == id->applied_chain))) {
        return 0;
    }
    rv = broker_ident_write_num(id, BROKER_IDENT_APPLIED_FILE,
                                "metadata.end_offset", end_offset,
                                "metadata.chain", chain, ed);
    if (rv == 0) {
        id->applied_end = end_offset;
        id->applied_chain = chain;
    }
    return rv;
}

int broker_ident_mark_clean(const struct broker_ident *id,
                            int64_t broker_epoch,
                            struct err_detail *ed)
{
    return broker_ident_write_num(id, BROKER_IDENT_CLEAN_FILE, "broker.epoch",
                                  broker_epoch, NULL, -1, ed);
}
