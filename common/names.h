/* SPDX-License-Identifier: Apache-2.0 */
/* Topic name rules: 1..249 characters from [A-Za-z0-9._-], and neither "."
 * nor "..". Paths on disk are built only from names that pass this check,
 * so no name can reach outside the data directory. */
#ifndef COMMON_NAMES_H
#define COMMON_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define NAMES_TOPIC_MAX 249

/* 0 if valid, else WEIR_EINVALID_TOPIC with a message saying why. */
WEIR_MUST_CHECK int
names_topic_check(const char *name, size_t len, struct err_detail *ed);

/* Topics the brokers keep for themselves (__consumer_offsets): hidden
 * from listings unless asked for, and closed to clients' writes. */
#define NAMES_OFFSETS_TOPIC "__consumer_offsets"
bool names_topic_internal(const char *name);

#endif /* COMMON_NAMES_H */
