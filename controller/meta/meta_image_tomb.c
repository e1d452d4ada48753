/* SPDX-License-Identifier: Apache-2.0 */
/* Tombstones of removed topics. REMOVE_TOPIC leaves one (id + name) and a
 * snapshot carries them as TOPIC_TOMBSTONE records, so a removal is still
 * explicit for a broker that only ever sees the snapshot: brokers delete a
 * topic's logs on an explicit removal of its id and never because a topic
 * is missing from the metadata. The set is bounded (META_MAX_TOMBSTONES,
 * oldest forgotten first); a forgotten removal costs disk (the logs stay
 * as strays), never data. Removals are rare, so the set is a plain array
 * in removal order and lookups are linear. */
#include <string.h>

#include "common/mem.h"
#include "controller/meta/meta_image_int.h"

const struct meta_tombstone *meta_image_tombstone(const struct meta_image *img,
                                                  int64_t topic_id)
{
    uint32_t i;

    for (i = 0; i < img->n_tombs; i++) {
        if (img->tombs[i].topic_id == topic_id) {
            return &img->tombs[i];
        }
    }
    return NULL;
}

uint32_t meta_image_tombstone_count(const struct meta_image *img)
{
    return img->n_tombs;
}

const struct meta_tombstone *
meta_image_tombstone_at(const struct meta_image *img, uint32_t i)
{
    return i < img->n_tombs ? &img->tombs[i] : NULL;
}

int meta_image_tomb_add(struct meta_image *img,
                        int64_t topic_id,
                        struct meta_str name,
                        struct err_detail *ed)
{
    char *copy = mem_strndup(name.ptr, name.len);

    if (copy == NULL ||
        (img->n_tombs < META_MAX_TOMBSTONES &&
         mem_grow((void **)&img->tombs, &img->cap_tombs, img->n_tombs + 1,
                  sizeof(img->tombs[0])) != 0)) {
        mem_free(copy);
        return err_set(ed, WEIR_ENOMEM, "remembering removed topic %lld",
                       (long long)topic_id);
    }
    if (img->n_tombs == META_MAX_TOMBSTONES) {
        mem_free(img->tombs[0].name);
        memmove(&img->tombs[0], &img->tombs[1],
                (size_t)(img->n_tombs - 1) * sizeof(img->tombs[0]));
        img->n_tombs--;
    }
    img->tombs[img->n_tombs].topic_id = topic_id;
    img->tombs[img->n_tombs].name = copy;
    img->n_tombs++;
    return 0;
}

int meta_image_apply_tomb(struct meta_image *img,
                          const struct meta_topic_tombstone *rec,
                          struct err_detail *ed)
{
    /* in a log, only REMOVE_TOPIC may remove: a bare tombstone there
     * would delete logs without a removal having happened */
    if (!img->loading) {
        return err_set(ed, WEIR_ECORRUPT,
                       "tombstone of topic id %lld outside a snapshot",
                       (long long)rec->topic_id);
    }
    if (meta_image_topic_mut(img, rec->topic_id) != NULL ||
        meta_image_tombstone(img, rec->topic_id) != NULL) {
        return err_set(ed, WEIR_ECORRUPT,
                       "tombstone of topic id %lld: the id is a topic or a "
                       "tombstone already",
                       (long long)rec->topic_id);
    }
    if (img->n_tombs >= META_MAX_TOMBSTONES) {
        return err_set(ed, WEIR_ECORRUPT, "more than %d tombstones",
                       META_MAX_TOMBSTONES);
    }
    return meta_image_tomb_add(img, rec->topic_id, rec->name, ed);
}

void meta_image_free_tombs(struct meta_image *img)
{
    uint32_t i;

    for (i = 0; i < img->n_tombs; i++) {
        mem_free(img->tombs[i].name);
    }
    mem_free(img->tombs);
    img->tombs = NULL;
    img->n_tombs = img->cap_tombs = 0;
}

bool meta_image_tombs_equal(const struct meta_image *a,
                            const struct meta_image *b)
{
    uint32_t i;

    if (a->n_tombs != b->n_tombs) {
        return false;
    }
    for (i = 0; i < a->n_tombs; i++) {
        if (a->tombs[i].topic_id != b->tombs[i].topic_id ||
            strcmp(a->tombs[i].name, b->tombs[i].name) != 0) {
            return false;
        }
    }
    return true;
}

int meta_image_check_tombs(const struct meta_image *img, struct err_detail *ed)
{
    uint32_t i;
    uint32_t j;

    if (img->n_tombs > META_MAX_TOMBSTONES) {
        return err_set(ed, WEIR_ECORRUPT, "%u tombstones", img->n_tombs);
    }
    for (i = 0; i < img->n_tombs; i++) {
        if (meta_image_topic(img, img->tombs[i].topic_id) != NULL) {
            return err_set(ed, WEIR_ECORRUPT,
                           "topic id %lld is live and a tombstone",
                           (long long)img->tombs[i].topic_id);
        }
        for (j = 0; j < i; j++) {
            if (img->tombs[j].topic_id == img->tombs[i].topic_id) {
                return err_set(ed, WEIR_ECORRUPT,
                               "tombstone of topic id %lld twice",
                               (long long)img->tombs[i].topic_id);
            }
        }
    }
    return 0;
}
