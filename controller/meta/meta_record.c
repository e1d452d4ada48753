/* SPDX-License-Identifier: Apache-2.0 */
/* Record rules that need no image: ranges, string lengths and characters,
 * distinct ids. The decoder runs them on every record it reads and the
 * encoder before it writes one, so whatever is written can be read back. */
#include "controller/meta/meta_record.h"

#include <string.h>

#include "common/names.h"

static const char *const meta_record_names[] = {
    [META_RECORD_REGISTER_BROKER] = "REGISTER_BROKER",
    [META_RECORD_FENCE_BROKER] = "FENCE_BROKER",
    [META_RECORD_UNFENCE_BROKER] = "UNFENCE_BROKER",
    [META_RECORD_CREATE_TOPIC] = "CREATE_TOPIC",
    [META_RECORD_TOPIC_CONFIG] = "TOPIC_CONFIG",
    [META_RECORD_REMOVE_TOPIC] = "REMOVE_TOPIC",
    [META_RECORD_PARTITION] = "PARTITION",
    [META_RECORD_PARTITION_CHANGE] = "PARTITION_CHANGE",
    [META_RECORD_PRODUCER_IDS] = "PRODUCER_IDS",
    [META_RECORD_BROKER_TLS] = "BROKER_TLS",
    [META_RECORD_USER_SCRAM] = "USER_SCRAM",
    [META_RECORD_REMOVE_USER_SCRAM] = "REMOVE_USER_SCRAM",
    [META_RECORD_ACL] = "ACL",
    [META_RECORD_REMOVE_ACL] = "REMOVE_ACL",
    [META_RECORD_TOPIC_TOMBSTONE] = "TOPIC_TOMBSTONE",
    [META_RECORD_REPLICAS_EMPTY] = "REPLICAS_EMPTY",
};

#define META_RECORD_N_TYPES                                                    \
    (sizeof(meta_record_names) / sizeof(meta_record_names[0]))

const char *meta_record_type_name(int type)
{
    if (type <= 0 || (size_t)type >= META_RECORD_N_TYPES ||
        meta_record_names[type] == NULL) {
        return "UNKNOWN"; /* 16..18 are not used */
    }
    return meta_record_names[type];
}

uint8_t meta_record_version(const struct meta_record *rec)
{
    bool v1 = false;

    switch (rec->type) {
    case META_RECORD_REGISTER_BROKER:
        v1 = rec->u.reg.directory_id.len > 0;
        break;
    case META_RECORD_PARTITION:
        v1 = rec->u.part.elr.n > 0;
        break;
    case META_RECORD_PARTITION_CHANGE:
        v1 = rec->u.change.elr.n > 0;
        break;
    default:
        break;
    }
    return v1 ? META_RECORD_VERSION_V1 : META_RECORD_VERSION;
}

bool meta_ids_has(const struct meta_ids *ids, int32_t id)
{
    uint32_t i;

    for (i = 0; i < ids->n; i++) {
        if (ids->ids[i] == id) {
            return true;
        }
    }
    return false;
}

/* Printable ASCII; spaces only where a value may hold them. */
static int meta_record_check_str(struct meta_str s,
                                 size_t min,
                                 size_t max,
                                 bool spaces,
                                 const char *what,
                                 struct err_detail *ed)
{
    size_t i;

    if (s.len < min || s.len > max) {
        return err_set(ed, WEIR_ECORRUPT, "%s is %zu bytes, expected %zu..%zu",
                       what, s.len, min, max);
    }
    for (i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        if (ch > 0x7e || ch < 0x20 || (ch == 0x20 && !spaces)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "%s has byte 0x%02x at %zu; printable ASCII only",
                           what, ch, i);
        }
    }
    return 0;
}

static int meta_record_check_ids(const struct meta_ids *ids,
                                 uint32_t min,
                                 const char *what,
                                 struct err_detail *ed)
{
    uint32_t i;
    uint32_t j;

    if (ids->n < min || ids->n > META_MAX_REPLICAS) {
        return err_set(ed, WEIR_ECORRUPT, "%s has %u ids, expected %u..%d",
                       what, ids->n, min, META_MAX_REPLICAS);
    }
    for (i = 0; i < ids->n; i++) {
        if (ids->ids[i] < 0) {
            return err_set(ed, WEIR_ECORRUPT, "%s has negative id %d", what,
                           (int)ids->ids[i]);
        }
        for (j = 0; j < i; j++) {
            if (ids->ids[j] == ids->ids[i]) {
                return err_set(ed, WEIR_ECORRUPT, "%s lists broker %d twice",
                               what, (int)ids->ids[i]);
            }
        }
    }
    return 0;
}

static int meta_record_check_broker(const struct meta_broker_ref *b,
                                    struct err_detail *ed)
{
    if (b->id < 0 || b->epoch < 0) {
        return err_set(ed, WEIR_ECORRUPT, "broker id %d epoch %lld: negative",
                       (int)b->id, (long long)b->epoch);
    }
    return 0;
}

static int meta_record_check_register(const struct meta_register_broker *r,
                                      struct err_detail *ed)
{
    struct meta_broker_ref ref = {r->id, r->epoch};
    int rv;

    rv = meta_record_check_broker(&ref, ed);
    if (rv == 0) {
        rv = meta_record_check_str(r->host, 1, META_MAX_HOST_BYTES, false,
                                   "broker host", ed);
    }
    if (rv == 0) {
        rv = meta_record_check_str(r->rack, 0, META_MAX_RACK_BYTES, false,
                                   "broker rack", ed);
    }
    if (rv == 0) {
        rv = meta_record_check_str(r->directory_id, 0, META_MAX_DIR_ID_BYTES,
                                   false, "broker directory id", ed);
    }
    if (rv == 0 && r->port == 0) {
        rv = err_set(ed, WEIR_ECORRUPT, "broker %d has port 0", (int)r->id);
    }
    return rv;
}

static int meta_record_check_tls(const struct meta_broker_tls *t,
                                 struct err_detail *ed)
{
    struct meta_broker_ref ref = {t->id, t->epoch};
    int rv;

    rv = meta_record_check_broker(&ref, ed);
    if (rv == 0) {
        rv = meta_record_check_str(t->host, 1, META_MAX_HOST_BYTES, false,
                                   "broker TLS host", ed);
    }
    if (rv == 0 && t->port == 0) {
        rv = err_set(ed, WEIR_ECORRUPT, "broker %d has TLS port 0", (int)t->id);
    }
    return rv;
}

static int meta_record_check_topic_id(int64_t topic_id, struct err_detail *ed)
{
    if (topic_id < 0) {
        return err_set(ed, WEIR_ECORRUPT, "negative topic id %lld",
                       (long long)topic_id);
    }
    return 0;
}

/* The ISR may be empty (its last member left for the ELR, or for good);
 * the ELR is disjoint from it, so the leader, an ISR member, is never in
 * the ELR. */
static int meta_record_check_leader(int32_t partition,
                                    const struct meta_ids *isr,
                                    const struct meta_ids *elr,
                                    int32_t leader,
                                    int32_t leader_epoch,
                                    int32_t partition_epoch,
                                    uint8_t flags,
                                    struct err_detail *ed)
{
    uint32_t i;
    int rv;

    if (partition < 0 || partition >= META_MAX_PARTITIONS) {
        return err_set(ed, WEIR_ECORRUPT, "partition %d out of range",
                       (int)partition);
    }
    rv = meta_record_check_ids(isr, 0, "ISR", ed);
    if (rv == 0) {
        rv = meta_record_check_ids(elr, 0, "ELR", ed);
    }
    if (rv != 0) {
        return rv;
    }
    for (i = 0; i < elr->n; i++) {
        if (meta_ids_has(isr, elr->ids[i])) {
            return err_set(ed, WEIR_ECORRUPT, "broker %d in both ISR and ELR",
                           (int)elr->ids[i]);
        }
    }
    if (leader != -1 && !meta_ids_has(isr, leader)) {
        return err_set(ed, WEIR_ECORRUPT, "leader %d is not in the ISR",
                       (int)leader);
    }
    if (leader_epoch < 0 || partition_epoch < 0) {
        return err_set(ed, WEIR_ECORRUPT, "negative epoch");
    }
    if ((flags & ~META_PART_FLAGS_ALL) != 0) {
        return err_set(ed, WEIR_ECORRUPT, "unknown partition flags 0x%02x",
                       flags);
    }
    return 0;
}

static int meta_record_check_partition(const struct meta_partition_rec *p,
                                       struct err_detail *ed)
{
    uint32_t i;
    int rv;

    rv = meta_record_check_topic_id(p->topic_id, ed);
    if (rv == 0) {
        rv = meta_record_check_ids(&p->replicas, 1, "replica list", ed);
    }
    if (rv == 0) {
        rv = meta_record_check_leader(p->partition, &p->isr, &p->elr, p->leader,
                                      p->leader_epoch, p->partition_epoch,
                                      p->flags, ed);
    }
    for (i = 0; rv == 0 && i < p->isr.n; i++) {
        if (!meta_ids_has(&p->replicas, p->isr.ids[i])) {
            rv = err_set(ed, WEIR_ECORRUPT, "ISR member %d is not a replica",
                         (int)p->isr.ids[i]);
        }
    }
    for (i = 0; rv == 0 && i < p->elr.n; i++) {
        if (!meta_ids_has(&p->replicas, p->elr.ids[i])) {
            rv = err_set(ed, WEIR_ECORRUPT, "ELR member %d is not a replica",
                         (int)p->elr.ids[i]);
        }
    }
    return rv;
}

static int meta_record_check_change(const struct meta_partition_change *c,
                                    struct err_detail *ed)
{
    int rv = meta_record_check_topic_id(c->topic_id, ed);

    if (rv == 0) {
        rv = meta_record_check_leader(c->partition, &c->isr, &c->elr, c->leader,
                                      c->leader_epoch, c->partition_epoch,
                                      c->flags, ed);
    }
    return rv;
}

static int meta_record_check_name(struct meta_str name, struct err_detail *ed)
{
    struct err_detail why;

    /* names_topic_check reads no further than len, and rejects NULs */
    if (names_topic_check(name.ptr, name.len, &why) != 0) {
        return err_set(ed, WEIR_ECORRUPT, "%s", why.msg);
    }
    return 0;
}

static int meta_record_check_config(const struct meta_topic_config *c,
                                    struct err_detail *ed)
{
    int rv = meta_record_check_topic_id(c->topic_id, ed);

    if (rv == 0) {
        rv = meta_record_check_str(c->key, 1, META_MAX_KEY_BYTES, false,
                                   "config key", ed);
    }
    if (rv == 0) {
        rv = meta_record_check_str(c->value, 0, META_MAX_VALUE_BYTES, true,
                                   "config value", ed);
    }
    return rv;
}

/* SCRAM sends the name as "n=NAME," and would need ',' and '=' escaped
 * (RFC 5802 saslname); refusing them keeps names byte-for-byte the same
 * on the wire, in the image and in the CLI. */
static int meta_record_check_user(const struct meta_user_ref *u,
                                  struct err_detail *ed)
{
    int rv = meta_record_check_str(u->name, 1, SCRAM_MAX_USER, false,
                                   "user name", ed);

    if (rv == 0 && (memchr(u->name.ptr, ',', u->name.len) != NULL ||
                    memchr(u->name.ptr, '=', u->name.len) != NULL)) {
        rv = err_set(ed, WEIR_ECORRUPT, "user name %.*s has ',' or '='",
                     (int)u->name.len, u->name.ptr);
    }
    if (rv == 0 && u->mechanism != SCRAM_SHA_256 &&
        u->mechanism != SCRAM_SHA_512) {
        rv = err_set(ed, WEIR_ECORRUPT, "unknown SCRAM mechanism %u",
                     u->mechanism);
    }
    return rv;
}

static int meta_record_check_scram(const struct meta_user_scram *u,
                                   struct err_detail *ed)
{
    struct meta_user_ref ref = {u->name, u->mechanism};
    size_t key_len = u->mechanism == SCRAM_SHA_512 ? 64 : 32;
    int rv = meta_record_check_user(&ref, ed);

    if (rv != 0) {
        return rv;
    }
    if (u->iterations < SCRAM_MIN_ITER || u->iterations > SCRAM_MAX_ITER) {
        return err_set(ed, WEIR_ECORRUPT, "iterations %u, expected %d..%d",
                       u->iterations, SCRAM_MIN_ITER, SCRAM_MAX_ITER);
    }
    if (u->salt.len < 1 || u->salt.len > SCRAM_MAX_SALT) {
        return err_set(ed, WEIR_ECORRUPT, "salt is %zu bytes, expected 1..%d",
                       u->salt.len, SCRAM_MAX_SALT);
    }
    if (u->stored_key.len != key_len || u->server_key.len != key_len) {
        return err_set(ed, WEIR_ECORRUPT,
                       "stored key %zu and server key %zu bytes, %s needs %zu",
                       u->stored_key.len, u->server_key.len,
                       scram_mech_name((enum scram_mech)u->mechanism), key_len);
    }
    return 0;
}

static int meta_record_check_acl(const struct meta_acl *a,
                                 struct err_detail *ed)
{
    bool cluster = a->resource == ACL_CLUSTER;
    int rv = meta_record_check_str(a->principal, 1, ACL_MAX_NAME, true,
                                   "ACL principal", ed);

    if (rv == 0 && (a->resource < ACL_TOPIC || a->resource > ACL_CLUSTER)) {
        rv = err_set(ed, WEIR_ECORRUPT, "unknown ACL resource type %u",
                     a->resource);
    }
    if (rv == 0 && a->pattern != ACL_LITERAL && a->pattern != ACL_PREFIXED) {
        rv = err_set(ed, WEIR_ECORRUPT, "unknown ACL pattern %u", a->pattern);
    }
    if (rv == 0 && cluster && a->pattern != ACL_LITERAL) {
        rv = err_set(ed, WEIR_ECORRUPT, "a cluster ACL must be literal");
    }
    if (rv == 0) {
        rv = meta_record_check_str(
            a->name, cluster ? 0 : 1, cluster ? 0 : ACL_MAX_NAME, true,
            cluster ? "cluster ACL name" : "ACL resource name", ed);
    }
    if (rv == 0 && (a->op < ACL_READ || a->op > ACL_ALL)) {
        rv = err_set(ed, WEIR_ECORRUPT, "unknown ACL operation %u", a->op);
    }
    if (rv == 0 && a->perm != ACL_ALLOW && a->perm != ACL_DENY) {
        rv = err_set(ed, WEIR_ECORRUPT, "unknown ACL permission %u", a->perm);
    }
    return rv;
}

int meta_record_check(const struct meta_record *rec, struct err_detail *ed)
{
    switch (rec->type) {
    case META_RECORD_REGISTER_BROKER:
        return meta_record_check_register(&rec->u.reg, ed);
    case META_RECORD_FENCE_BROKER:
    case META_RECORD_UNFENCE_BROKER:
        return meta_record_check_broker(&rec->u.fence, ed);
    case META_RECORD_CREATE_TOPIC:
        if (meta_record_check_name(rec->u.topic.name, ed) != 0) {
            return WEIR_ECORRUPT;
        }
        return meta_record_check_topic_id(rec->u.topic.topic_id, ed);
    case META_RECORD_TOPIC_CONFIG:
        return meta_record_check_config(&rec->u.config, ed);
    case META_RECORD_REMOVE_TOPIC:
        return meta_record_check_topic_id(rec->u.remove_topic_id, ed);
    case META_RECORD_PARTITION:
        return meta_record_check_partition(&rec->u.part, ed);
    case META_RECORD_PARTITION_CHANGE:
        return meta_record_check_change(&rec->u.change, ed);
    case META_RECORD_PRODUCER_IDS:
        if (rec->u.next_producer_id <= 0) {
            return err_set(ed, WEIR_ECORRUPT, "next producer id %lld <= 0",
                           (long long)rec->u.next_producer_id);
        }
        return 0;
    case META_RECORD_BROKER_TLS:
        return meta_record_check_tls(&rec->u.tls, ed);
    case META_RECORD_USER_SCRAM:
        return meta_record_check_scram(&rec->u.user, ed);
    case META_RECORD_REMOVE_USER_SCRAM:
        return meta_record_check_user(&rec->u.user_ref, ed);
    case META_RECORD_ACL:
    case META_RECORD_REMOVE_ACL:
        return meta_record_check_acl(&rec->u.acl, ed);
    case META_RECORD_TOPIC_TOMBSTONE:
        if (meta_record_check_name(rec->u.tomb.name, ed) != 0) {
            return WEIR_ECORRUPT;
        }
        return meta_record_check_topic_id(rec->u.tomb.topic_id, ed);
    case META_RECORD_REPLICAS_EMPTY:
        if (rec->u.empty.partition < 0 ||
            rec->u.empty.partition >= META_MAX_PARTITIONS) {
            return err_set(ed, WEIR_ECORRUPT, "partition %d out of range",
                           (int)rec->u.empty.partition);
        }
        if (meta_record_check_ids(&rec->u.empty.ids, 1, "empty replicas", ed) !=
            0) {
            return WEIR_ECORRUPT;
        }
        return meta_record_check_topic_id(rec->u.empty.topic_id, ed);
    }
    return err_set(ed, WEIR_ECORRUPT, "unknown record type %d", (int)rec->type);
}

static bool meta_str_equal(struct meta_str a, struct meta_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static bool meta_bytes_equal(struct meta_bytes a, struct meta_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static bool meta_record_equal_user(const struct meta_user_scram *a,
                                   const struct meta_user_scram *b)
{
    return meta_str_equal(a->name, b->name) && a->mechanism == b->mechanism &&
           a->iterations == b->iterations &&
           meta_bytes_equal(a->salt, b->salt) &&
           meta_bytes_equal(a->stored_key, b->stored_key) &&
           meta_bytes_equal(a->server_key, b->server_key);
}

static bool meta_record_equal_acl(const struct meta_acl *a,
                                  const struct meta_acl *b)
{
    return meta_str_equal(a->principal, b->principal) &&
           a->resource == b->resource && a->pattern == b->pattern &&
           meta_str_equal(a->name, b->name) && a->op == b->op &&
           a->perm == b->perm;
}

static bool meta_ids_equal(const struct meta_ids *a, const struct meta_ids *b)
{
    return a->n == b->n &&
           memcmp(a->ids, b->ids, (size_t)a->n * sizeof(a->ids[0])) == 0;
}

static bool meta_record_equal_part(const struct meta_partition_rec *a,
                                   const struct meta_partition_rec *b)
{
    return a->topic_id == b->topic_id && a->partition == b->partition &&
           meta_ids_equal(&a->replicas, &b->replicas) &&
           meta_ids_equal(&a->isr, &b->isr) && a->leader == b->leader &&
           a->leader_epoch == b->leader_epoch &&
           a->partition_epoch == b->partition_epoch && a->flags == b->flags &&
           meta_ids_equal(&a->elr, &b->elr);
}

static bool meta_record_equal_change(const struct meta_partition_change *a,
                                     const struct meta_partition_change *b)
{
    return a->topic_id == b->topic_id && a->partition == b->partition &&
           meta_ids_equal(&a->isr, &b->isr) && a->leader == b->leader &&
           a->leader_epoch == b->leader_epoch &&
           a->partition_epoch == b->partition_epoch && a->flags == b->flags &&
           meta_ids_equal(&a->elr, &b->elr);
}

bool meta_record_equal(const struct meta_record *a, const struct meta_record *b)
{
    if (a->type != b->type) {
        return false;
    }
    switch (a->type) {
    case META_RECORD_REGISTER_BROKER:
        return a->u.reg.id == b->u.reg.id && a->u.reg.epoch == b->u.reg.epoch &&
               meta_str_equal(a->u.reg.host, b->u.reg.host) &&
               a->u.reg.port == b->u.reg.port &&
               meta_str_equal(a->u.reg.rack, b->u.reg.rack) &&
               meta_str_equal(a->u.reg.directory_id, b->u.reg.directory_id);
    case META_RECORD_FENCE_BROKER:
    case META_RECORD_UNFENCE_BROKER:
        return a->u.fence.id == b->u.fence.id &&
               a->u.fence.epoch == b->u.fence.epoch;
    case META_RECORD_CREATE_TOPIC:
        return a->u.topic.topic_id == b->u.topic.topic_id &&
               meta_str_equal(a->u.topic.name, b->u.topic.name);
    case META_RECORD_TOPIC_CONFIG:
        return a->u.config.topic_id == b->u.config.topic_id &&
               meta_str_equal(a->u.config.key, b->u.config.key) &&
               meta_str_equal(a->u.config.value, b->u.config.value);
    case META_RECORD_REMOVE_TOPIC:
        return a->u.remove_topic_id == b->u.remove_topic_id;
    case META_RECORD_PARTITION:
        return meta_record_equal_part(&a->u.part, &b->u.part);
    case META_RECORD_PARTITION_CHANGE:
        return meta_record_equal_change(&a->u.change, &b->u.change);
    case META_RECORD_PRODUCER_IDS:
        return a->u.next_producer_id == b->u.next_producer_id;
    case META_RECORD_BROKER_TLS:
        return a->u.tls.id == b->u.tls.id && a->u.tls.epoch == b->u.tls.epoch &&
               meta_str_equal(a->u.tls.host, b->u.tls.host) &&
               a->u.tls.port == b->u.tls.port;
    case META_RECORD_USER_SCRAM:
        return meta_record_equal_user(&a->u.user, &b->u.user);
    case META_RECORD_REMOVE_USER_SCRAM:
        return meta_str_equal(a->u.user_ref.name, b->u.user_ref.name) &&
               a->u.user_ref.mechanism == b->u.user_ref.mechanism;
    case META_RECORD_ACL:
    case META_RECORD_REMOVE_ACL:
        return meta_record_equal_acl(&a->u.acl, &b->u.acl);
    case META_RECORD_TOPIC_TOMBSTONE:
        return a->u.tomb.topic_id == b->u.tomb.topic_id &&
               meta_str_equal(a->u.tomb.name, b->u.tomb.name);
    case META_RECORD_REPLICAS_EMPTY:
        return a->u.empty.topic_id == b->u.empty.topic_id &&
               a->u.empty.partition == b->u.empty.partition &&
               a->u.empty.ids.n == b->u.empty.ids.n &&
               memcmp(a->u.empty.ids.ids, b->u.empty.ids.ids,
                      a->u.empty.ids.n * sizeof(int32_t)) == 0;
    }
    return false;
}
