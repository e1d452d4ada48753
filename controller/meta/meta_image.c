/* SPDX-License-Identifier: Apache-2.0 */
/* Applying broker, topic and producer-id records to the image, and the
 * topic name index they keep. Every apply first checks the record and
 * allocates what it needs, and only then changes the image, so a refused
 * record or a failed allocation leaves the image as it was: replay after a
 * crash must never see half a record.
 * The name index is an open-addressing hash table of topic ids keyed by
 * name, so creating a topic (and replaying a log of many creations) costs
 * O(1) per name instead of a scan of every topic. Deleted names leave
 * tombstones until the next rebuild; the table is kept at most half full
 * of ids and tombstones, so a probe always ends at an empty slot. */
#include <string.h>

#include "common/mem.h"
#include "controller/meta/meta_image_int.h"

int meta_image_new(struct meta_image **out)
{
    *out = mem_calloc(1, sizeof(**out));
    return *out == NULL ? WEIR_ENOMEM : 0;
}

static void meta_image_free_topic(struct meta_topic_slot *slot)
{
    uint32_t i;

    for (i = 0; i < slot->pub.n_configs; i++) {
        mem_free(slot->pub.configs[i].key);
        mem_free(slot->pub.configs[i].value);
    }
    mem_free(slot->pub.configs);
    mem_free(slot->pub.partitions);
    mem_free(slot->pub.name);
}

void meta_image_free(struct meta_image *img)
{
    uint32_t i;

    if (img == NULL) {
        return;
    }
    for (i = 0; i < img->n_brokers; i++) {
        mem_free(img->brokers[i].host);
        mem_free(img->brokers[i].rack);
        mem_free(img->brokers[i].tls_host);
        mem_free(img->brokers[i].directory_id);
    }
    for (i = 0; i < img->n_topics; i++) {
        meta_image_free_topic(&img->topics[i]);
    }
    meta_image_free_auth(img);
    meta_image_free_tombs(img);
    mem_free(img->brokers);
    mem_free(img->topics);
    mem_free(img->names);
    mem_free(img);
}

uint32_t
meta_image_broker_pos(const struct meta_image *img, int32_t id, bool *found)
{
    uint32_t lo = 0;
    uint32_t hi = img->n_brokers;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (img->brokers[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = lo < img->n_brokers && img->brokers[lo].id == id;
    return lo;
}

struct meta_broker *meta_image_broker_mut(struct meta_image *img, int32_t id)
{
    bool found;
    uint32_t i = meta_image_broker_pos(img, id, &found);

    return found ? &img->brokers[i] : NULL;
}

struct meta_topic_slot *meta_image_topic_mut(struct meta_image *img,
                                             int64_t topic_id)
{
    uint32_t lo = 0;
    uint32_t hi = img->n_topics;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (img->topics[mid].pub.id < topic_id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < img->n_topics && img->topics[lo].pub.id == topic_id) {
        return &img->topics[lo];
    }
    return NULL;
}

#define META_NAMES_EMPTY (-1)
#define META_NAMES_GONE  (-2)
#define META_NAMES_MIN   16

/* FNV-1a, 64-bit. */
static uint64_t meta_image_names_hash(const char *name, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)name[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void
meta_image_names_put(int64_t *slots, uint32_t cap, int64_t id, const char *name)
{
    uint32_t i =
        (uint32_t)meta_image_names_hash(name, strlen(name)) & (cap - 1);

    while (slots[i] != META_NAMES_EMPTY) {
        i = (i + 1) & (cap - 1);
    }
    slots[i] = id;
}

int meta_image_names_reserve(struct meta_image *img)
{
    uint32_t cap = META_NAMES_MIN;
    int64_t *slots;
    uint32_t i;

    if ((uint64_t)(img->names_used + 1) * 2 <= img->names_cap) {
        return 0;
    }
    while (cap < (uint64_t)(img->n_topics + 1) * 4) {
        cap *= 2;
    }
    slots = mem_malloc((size_t)cap * sizeof(slots[0]));
    if (slots == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < cap; i++) {
        slots[i] = META_NAMES_EMPTY;
    }
    for (i = 0; i < img->n_topics; i++) {
        meta_image_names_put(slots, cap, img->topics[i].pub.id,
                             img->topics[i].pub.name);
    }
    mem_free(img->names);
    img->names = slots;
    img->names_cap = cap;
    img->names_used = img->n_topics;
    return 0;
}

void meta_image_names_add(struct meta_image *img, const struct meta_topic *t)
{
    meta_image_names_put(img->names, img->names_cap, t->id, t->name);
    img->names_used++;
}

void meta_image_names_remove(struct meta_image *img, const struct meta_topic *t)
{
    uint32_t mask = img->names_cap - 1;
    uint32_t i =
        (uint32_t)meta_image_names_hash(t->name, strlen(t->name)) & mask;

    while (img->names[i] != t->id) {
        i = (i + 1) & mask;
    }
    img->names[i] = META_NAMES_GONE;
}

struct meta_topic_slot *meta_image_names_find(const struct meta_image *img,
                                              const char *name,
                                              size_t len)
{
    uint32_t mask = img->names_cap - 1;
    uint32_t i;

    if (img->names_cap == 0) {
        return NULL;
    }
    i = (uint32_t)meta_image_names_hash(name, len) & mask;
    for (; img->names[i] != META_NAMES_EMPTY; i = (i + 1) & mask) {
        struct meta_topic_slot *slot;
        if (img->names[i] == META_NAMES_GONE) {
            continue;
        }
        /* the lookup does not change the image */
        slot = meta_image_topic_mut((struct meta_image *)img, img->names[i]);
        if (strlen(slot->pub.name) == len &&
            memcmp(slot->pub.name, name, len) == 0) {
            return slot;
        }
    }
    return NULL;
}

/* A re-registration replaces the old one: new epoch, new address, fenced.
 * It must lead nothing, so the controller moves leadership away first. */
static int meta_image_apply_register(struct meta_image *img,
                                     const struct meta_register_broker *r,
                                     struct err_detail *ed)
{
    struct meta_broker *b;
    bool found;
    uint32_t pos = meta_image_broker_pos(img, r->id, &found);
    char *host;
    char *rack;
    char *dir;

    b = found ? &img->brokers[pos] : NULL;
    if (!img->loading && r->epoch != img->end_offset) {
        return err_set(ed, WEIR_ECORRUPT,
                       "broker %d epoch %lld is not the record's offset",
                       (int)r->id, (long long)r->epoch);
    }
    if (b != NULL && r->epoch <= b->epoch) {
        return err_set(ed, WEIR_ECORRUPT,
                       "broker %d registers with epoch %lld, not above %lld",
                       (int)r->id, (long long)r->epoch, (long long)b->epoch);
    }
    if (b != NULL && b->n_led != 0) {
        return err_set(ed, WEIR_ECORRUPT,
                       "broker %d re-registers while leading %u partitions",
                       (int)r->id, b->n_led);
    }
    if (b == NULL && img->n_brokers >= META_MAX_BROKERS) {
        return err_set(ed, WEIR_ECORRUPT, "more than %d brokers",
                       META_MAX_BROKERS);
    }
    if (b == NULL &&
        mem_grow((void **)&img->brokers, &img->cap_brokers, img->n_brokers + 1,
                 sizeof(img->brokers[0])) != 0) {
        return err_set(ed, WEIR_ENOMEM, "registering broker %d", (int)r->id);
    }
    host = mem_strndup(r->host.ptr, r->host.len);
    rack = mem_strndup(r->rack.len > 0 ? r->rack.ptr : "", r->rack.len);
    dir = mem_strndup(r->directory_id.len > 0 ? r->directory_id.ptr : "",
                      r->directory_id.len);
    if (host == NULL || rack == NULL || dir == NULL) {
        mem_free(host);
        mem_free(rack);
        mem_free(dir);
        return err_set(ed, WEIR_ENOMEM, "registering broker %d", (int)r->id);
    }
    if (b == NULL) {
        memmove(&img->brokers[pos + 1], &img->brokers[pos],
                (size_t)(img->n_brokers - pos) * sizeof(img->brokers[0]));
        img->n_brokers++;
        b = &img->brokers[pos];
        memset(b, 0, sizeof(*b));
        b->id = r->id;
    } else {
        mem_free(b->host);
        mem_free(b->rack);
        mem_free(b->tls_host); /* a BROKER_TLS record follows, if any */
        b->tls_host = NULL;
        b->tls_port = 0;
    }
    /* a new data dir: what its replicas held is gone (both ids known;
     * a first registration with an id after ones without says nothing) */
    if (b->directory_id != NULL && b->directory_id[0] != '\0' &&
        dir[0] != '\0' && strcmp(b->directory_id, dir) != 0) {
        meta_image_mark_empty(img, r->id);
    }
    if (found) {
        mem_free(b->directory_id);
    }
    b->epoch = r->epoch;
    b->host = host;
    b->port = r->port;
    b->rack = rack;
    b->directory_id = dir;
    b->fenced = true;
    return 0;
}

static int meta_image_apply_tls(struct meta_image *img,
                                const struct meta_broker_tls *t,
                                struct err_detail *ed)
{
    struct meta_broker *b = meta_image_broker_mut(img, t->id);
    char *host;

    if (b == NULL || b->epoch != t->epoch) {
        return err_set(ed, WEIR_ECORRUPT,
                       "TLS listener of broker %d epoch %lld: no such "
                       "registration",
                       (int)t->id, (long long)t->epoch);
    }
    host = mem_strndup(t->host.ptr, t->host.len);
    if (host == NULL) {
        return err_set(ed, WEIR_ENOMEM, "broker %d TLS listener", (int)t->id);
    }
    mem_free(b->tls_host);
    b->tls_host = host;
    b->tls_port = t->port;
    return 0;
}

static int meta_image_apply_fence(struct meta_image *img,
                                  const struct meta_broker_ref *f,
                                  bool fence,
                                  struct err_detail *ed)
{
    struct meta_broker *b = meta_image_broker_mut(img, f->id);

    if (b == NULL || b->epoch != f->epoch) {
        return err_set(ed, WEIR_ECORRUPT, "%s of broker %d epoch %lld: %s",
                       fence ? "fence" : "unfence", (int)f->id,
                       (long long)f->epoch,
                       b == NULL ? "not registered" : "not its epoch");
    }
    if (b->fenced == fence) {
        return err_set(ed, WEIR_ECORRUPT, "broker %d is already %s", (int)f->id,
                       fence ? "fenced" : "unfenced");
    }
    if (fence && b->n_led != 0) {
        return err_set(ed, WEIR_ECORRUPT,
                       "broker %d fenced while leading %u partitions",
                       (int)f->id, b->n_led);
    }
    b->fenced = fence;
    return 0;
}

static bool meta_image_name_taken(const struct meta_image *img,
                                  struct meta_str name)
{
    return meta_image_topic_by_name(img, name.ptr, name.len) != NULL;
}

static int meta_image_apply_topic(struct meta_image *img,
                                  const struct meta_create_topic *t,
                                  struct err_detail *ed)
{
    struct meta_topic_slot *slot;
    char *name;

    if (!img->loading && t->topic_id != img->end_offset) {
        return err_set(ed, WEIR_ECORRUPT,
                       "topic id %lld is not the record's offset",
                       (long long)t->topic_id);
    }
    if (meta_image_name_taken(img, t->name)) {
        return err_set(ed, WEIR_ECORRUPT, "topic %.*s exists", (int)t->name.len,
                       t->name.ptr);
    }
    if (img->n_topics > 0 &&
        t->topic_id <= img->topics[img->n_topics - 1].pub.id) {
        return err_set(ed, WEIR_ECORRUPT,
                       "topic id %lld is not above the last one",
                       (long long)t->topic_id);
    }
    if (img->n_topics >= META_MAX_TOPICS) {
        return err_set(ed, WEIR_ECORRUPT, "more than %d topics",
                       META_MAX_TOPICS);
    }
    if (mem_grow((void **)&img->topics, &img->cap_topics, img->n_topics + 1,
                 sizeof(img->topics[0])) != 0 ||
        meta_image_names_reserve(img) != 0) {
        return err_set(ed, WEIR_ENOMEM, "creating a topic");
    }
    name = mem_strndup(t->name.ptr, t->name.len);
    if (name == NULL) {
        return err_set(ed, WEIR_ENOMEM, "creating a topic");
    }
    slot = &img->topics[img->n_topics++];
    memset(slot, 0, sizeof(*slot));
    slot->pub.id = t->topic_id;
    slot->pub.name = name;
    meta_image_names_add(img, &slot->pub);
    return 0;
}

static uint32_t meta_image_config_pos(const struct meta_topic *t,
                                      struct meta_str key,
                                      bool *found)
{
    uint32_t i;
    int cmp = 1;

    for (i = 0; i < t->n_configs; i++) {
        const char *k = t->configs[i].key;
        size_t klen = strlen(k);
        cmp = memcmp(k, key.ptr, klen < key.len ? klen : key.len);
        if (cmp == 0) {
            cmp = klen < key.len ? -1 : klen > key.len ? 1 : 0;
        }
        if (cmp >= 0) {
            break;
        }
    }
    *found = cmp == 0 && i < t->n_configs;
    return i;
}

static int meta_image_apply_config(struct meta_image *img,
                                   const struct meta_topic_config *c,
                                   struct err_detail *ed)
{
    struct meta_topic_slot *slot = meta_image_topic_mut(img, c->topic_id);
    struct meta_config *cfg;
    char *key = NULL;
    char *value;
    bool found;
    uint32_t pos;

    if (slot == NULL) {
        return err_set(ed, WEIR_ECORRUPT, "config for unknown topic id %lld",
                       (long long)c->topic_id);
    }
    pos = meta_image_config_pos(&slot->pub, c->key, &found);
    if (!found && slot->pub.n_configs >= META_MAX_CONFIGS) {
        return err_set(ed, WEIR_ECORRUPT, "topic %s has %d configs already",
                       slot->pub.name, META_MAX_CONFIGS);
    }
    if (!found &&
        mem_grow((void **)&slot->pub.configs, &slot->cap_configs,
                 slot->pub.n_configs + 1, sizeof(slot->pub.configs[0])) != 0) {
        return err_set(ed, WEIR_ENOMEM, "setting a topic config");
    }
    value = mem_strndup(c->value.len > 0 ? c->value.ptr : "", c->value.len);
    key = found ? NULL : mem_strndup(c->key.ptr, c->key.len);
    if (value == NULL || (!found && key == NULL)) {
        mem_free(value);
        mem_free(key);
        return err_set(ed, WEIR_ENOMEM, "setting a topic config");
    }
    cfg = slot->pub.configs;
    if (found) {
        mem_free(cfg[pos].value);
    } else {
        memmove(&cfg[pos + 1], &cfg[pos],
                (size_t)(slot->pub.n_configs - pos) * sizeof(cfg[0]));
        slot->pub.n_configs++;
        cfg[pos].key = key;
    }
    cfg[pos].value = value;
    return 0;
}

static int meta_image_apply_remove(struct meta_image *img,
                                   int64_t topic_id,
                                   struct err_detail *ed)
{
    struct meta_topic_slot *slot = meta_image_topic_mut(img, topic_id);
    uint32_t i;
    uint32_t pos;

    if (slot == NULL) {
        return err_set(ed, WEIR_ECORRUPT, "removing unknown topic id %lld",
                       (long long)topic_id);
    }
    /* the only step that can fail, so it goes first */
    if (meta_image_tomb_add(
            img, topic_id,
            (struct meta_str){slot->pub.name, strlen(slot->pub.name)},
            ed) != 0) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < slot->pub.n_partitions; i++) {
        int32_t leader = slot->pub.partitions[i].leader;
        if (leader != -1) {
            meta_image_broker_mut(img, leader)->n_led--;
        }
    }
    meta_image_names_remove(img, &slot->pub);
    meta_image_free_topic(slot);
    pos = (uint32_t)(slot - img->topics);
    memmove(&img->topics[pos], &img->topics[pos + 1],
            (size_t)(img->n_topics - pos - 1) * sizeof(img->topics[0]));
    img->n_topics--;
    return 0;
}

static int meta_image_apply_pids(struct meta_image *img,
                                 int64_t next,
                                 struct err_detail *ed)
{
    if (next <= img->next_producer_id) {
        return err_set(ed, WEIR_ECORRUPT,
                       "next producer id %lld is not above %lld",
                       (long long)next, (long long)img->next_producer_id);
    }
    img->next_producer_id = next;
    return 0;
}

static int meta_image_apply_one(struct meta_image *img,
                                const struct meta_record *rec,
                                struct err_detail *ed)
{
    switch (rec->type) {
    case META_RECORD_REGISTER_BROKER:
        return meta_image_apply_register(img, &rec->u.reg, ed);
    case META_RECORD_FENCE_BROKER:
        return meta_image_apply_fence(img, &rec->u.fence, true, ed);
    case META_RECORD_UNFENCE_BROKER:
        return meta_image_apply_fence(img, &rec->u.fence, false, ed);
    case META_RECORD_CREATE_TOPIC:
        return meta_image_apply_topic(img, &rec->u.topic, ed);
    case META_RECORD_TOPIC_CONFIG:
        return meta_image_apply_config(img, &rec->u.config, ed);
    case META_RECORD_REMOVE_TOPIC:
        return meta_image_apply_remove(img, rec->u.remove_topic_id, ed);
    case META_RECORD_PARTITION:
        return meta_image_apply_partition(img, &rec->u.part, ed);
    case META_RECORD_PARTITION_CHANGE:
        return meta_image_apply_change(img, &rec->u.change, ed);
    case META_RECORD_PRODUCER_IDS:
        return meta_image_apply_pids(img, rec->u.next_producer_id, ed);
    case META_RECORD_BROKER_TLS:
        return meta_image_apply_tls(img, &rec->u.tls, ed);
    case META_RECORD_USER_SCRAM:
        return meta_image_apply_user(img, &rec->u.user, ed);
    case META_RECORD_REMOVE_USER_SCRAM:
        return meta_image_apply_user_remove(img, &rec->u.user_ref, ed);
    case META_RECORD_ACL:
        return meta_image_apply_acl(img, &rec->u.acl, true, ed);
    case META_RECORD_REMOVE_ACL:
        return meta_image_apply_acl(img, &rec->u.acl, false, ed);
    case META_RECORD_TOPIC_TOMBSTONE:
        return meta_image_apply_tomb(img, &rec->u.tomb, ed);
    case META_RECORD_REPLICAS_EMPTY:
        return meta_image_apply_empty(img, &rec->u.empty, ed);
    }
    return err_set(ed, WEIR_ECORRUPT, "unknown record type %d", (int)rec->type);
}

int meta_image_apply(struct meta_image *img,
                     const struct meta_record *rec,
                     struct err_detail *ed)
{
    int rv;

    if (img->end_offset == INT64_MAX) {
        return err_set(ed, WEIR_ECORRUPT, "metadata log offset overflow");
    }
    rv = meta_record_check(rec, ed);
    if (rv == 0) {
        rv = meta_image_apply_one(img, rec, ed);
    }
    if (rv != 0) {
        if (ed != NULL) {
            err_wrap(ed, "applying %s at offset %lld",
                     meta_record_type_name((int)rec->type),
                     (long long)img->end_offset);
        }
        return rv;
    }
    img->end_offset++;
    return 0;
}
