/* SPDX-License-Identifier: Apache-2.0 */
/* meta.properties: the identity of a data directory (Kafka keeps the same
 * file). Text, one key=value a line, '#' starts a comment line:
 *   version=1
 *   cluster.id=<id>     the cluster the directory belongs to ("" on a
 *                       broker that has not registered yet)
 *   node.id=<n>         broker only: the --id that made the directory
 *   directory.id=<id>   broker only: made when the directory was first
 *                       used, never changed (a new one = its data is new)
 * Ids are 1..METAPROPS_ID_MAX characters of [A-Za-z0-9_-] (generated ones
 * are 22 characters of base64url, 128 random bits). Unknown keys are kept
 * out of the struct but accepted, so a newer writer's file still opens;
 * anything else off (no version, another version, a key twice, a bad id)
 * refuses the read, since a guessed identity could cost data.
 * Locality: any thread. */
#ifndef COMMON_METAPROPS_H
#define COMMON_METAPROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define METAPROPS_FILE    "meta.properties"
#define METAPROPS_VERSION 1
#define METAPROPS_ID_MAX  64
#define METAPROPS_NEW_ID  22 /* characters of a generated id */

struct metaprops {
    char cluster_id[METAPROPS_ID_MAX + 1];   /* "" = none */
    char directory_id[METAPROPS_ID_MAX + 1]; /* "" = none */
    int64_t node_id;                         /* -1 = none */
};

/* Empty identity: no ids, node id -1. */
void metaprops_init(struct metaprops *p);

/* Is s (len bytes) a valid id? */
bool metaprops_id_valid(const char *s, size_t len);

/* Parse the file's text (untrusted, not NUL-terminated; len bytes) into
 * *out. Errors: WEIR_ECORRUPT naming the line. */
WEIR_MUST_CHECK int metaprops_parse(const char *text,
                                    size_t len,
                                    struct metaprops *out,
                                    struct err_detail *ed);

/* Append the file's text for p to b (keys that are unset are left out).
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int metaprops_format(const struct metaprops *p,
                                     struct weir_buf *b);

/* A stamp: the small files that belong to one cluster (a broker's
 * clean-shutdown epoch, its applied metadata offset) are exactly two lines,
 *   cluster.id=<id>
 *   <key>=<n>          n a decimal in [0, INT64_MAX]
 * (the last newline optional). Parse one (untrusted, len bytes) into
 * cluster and *value. Errors: WEIR_ECORRUPT. */
WEIR_MUST_CHECK int metaprops_parse_stamp(const char *text,
                                          size_t len,
                                          const char *key,
                                          char cluster[METAPROPS_ID_MAX + 1],
                                          int64_t *value,
                                          struct err_detail *ed);
/* A stamp that may carry a second number on a third line,
 *   <key2>=<n2>
 * (the metadata-offset stamp: the offset and the history's chain value
 * there). *value2 is -1 when the third line is absent; key2 NULL means
 * no third line is allowed (metaprops_parse_stamp). Errors:
 * WEIR_ECORRUPT. */
WEIR_MUST_CHECK int metaprops_parse_stamp2(const char *text,
                                           size_t len,
                                           const char *key,
                                           const char *key2,
                                           char cluster[METAPROPS_ID_MAX + 1],
                                           int64_t *value,
                                           int64_t *value2,
                                           struct err_detail *ed);
/* Append a stamp's text to b. Errors: WEIR_EINVALID_ARGUMENT (a bad
 * cluster id or a negative value), WEIR_ENOMEM. */
WEIR_MUST_CHECK int metaprops_format_stamp(const char *cluster,
                                           const char *key,
                                           int64_t value,
                                           struct weir_buf *b);
/* The same with a third line key2=value2, left out when value2 < 0. */
WEIR_MUST_CHECK int metaprops_format_stamp2(const char *cluster,
                                            const char *key,
                                            int64_t value,
                                            const char *key2,
                                            int64_t value2,
                                            struct weir_buf *b);

/* A new random id (OpenSSL RAND_bytes): METAPROPS_NEW_ID characters and a
 * NUL into out. Errors: WEIR_EUNKNOWN (no randomness available). */
WEIR_MUST_CHECK int metaprops_new_id(char out[METAPROPS_NEW_ID + 1],
                                     struct err_detail *ed);

/* Read dir/meta.properties. A missing file is not an error: *found is
 * false and *out empty. Errors: WEIR_EIO, WEIR_ECORRUPT (the message names
 * the file), WEIR_ENOMEM. */
WEIR_MUST_CHECK int metaprops_read(const char *dir,
                                   struct metaprops *out,
                                   bool *found,
                                   struct err_detail *ed);

/* Write dir/meta.properties atomically. Errors: WEIR_EIO, WEIR_ENOMEM. */
WEIR_MUST_CHECK int metaprops_write(const char *dir,
                                    const struct metaprops *p,
                                    struct err_detail *ed);

#endif /* COMMON_METAPROPS_H */
