/* SPDX-License-Identifier: Apache-2.0 */
#include "common/names.h"

#include <string.h>

static int names_legal_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int names_topic_check(const char *name, size_t len, struct err_detail *ed)
{
    size_t i;

    if (len == 0) {
        return err_set(ed, WEIR_EINVALID_TOPIC, "topic name is empty");
    }
    if (len > NAMES_TOPIC_MAX) {
        return err_set(ed, WEIR_EINVALID_TOPIC,
                       "topic name is %zu characters, the limit is %d", len,
                       NAMES_TOPIC_MAX);
    }
    if ((len == 1 && name[0] == '.') ||
        (len == 2 && name[0] == '.' && name[1] == '.')) {
        return err_set(ed, WEIR_EINVALID_TOPIC,
                       "topic name may not be '.' or '..'");
    }
    for (i = 0; i < len; i++) {
        if (!names_legal_char(name[i])) {
            return err_set(ed, WEIR_EINVALID_TOPIC,
                           "topic name has an illegal character (byte 0x%02x "
                           "at %zu); allowed: A-Z a-z 0-9 . _ -",
                           (unsigned char)name[i], i);
        }
    }
    return 0;
}

bool names_topic_internal(const char *name)
{
    return strcmp(name, NAMES_OFFSETS_TOPIC) == 0;
}
