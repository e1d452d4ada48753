/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the checkpoint files of a partition log (broker/storage/
 * plog_ckpt.c). Every input is decoded as an offset file (recovery point,
 * fsync-failed note) and as a cleaner checkpoint. Oracles: a refusal is
 * WEIR_ECORRUPT with a message naming the file; an accepted file holds
 * values in range (offsets >= 0, marks ascending, at most the limit), and
 * its values format back to text that decodes to the same values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/plog_ckpt.h"

#define FUZZ_PATH "/fuzz/ckpt"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_refused(int rv, const struct err_detail *ed)
{
    if (rv != WEIR_ECORRUPT || ed->code != rv ||
        strstr(ed->msg, FUZZ_PATH) == NULL) {
        abort();
    }
}

static void fuzz_offset(const char *text, size_t size)
{
    char out[PLOG_CKPT_OFFSET_MAX_LEN];
    struct err_detail ed;
    int64_t v = -1;
    int64_t back = -1;
    size_t len = 0;
    int rv;

    err_detail_clear(&ed);
    rv = plog_ckpt_parse_offset(text, size, FUZZ_PATH, &v, &ed);
    if (rv != 0) {
        fuzz_refused(rv, &ed);
        return;
    }
    if (v < 0 || plog_ckpt_format_offset(v, out, sizeof(out), &len) != 0 ||
        len > size ||
        plog_ckpt_parse_offset(out, len, FUZZ_PATH, &back, &ed) != 0 ||
        back != v) {
        abort();
    }
}

static void fuzz_cleaner(const char *text, size_t size)
{
    static struct plog_ckpt_cleaner c;
    static struct plog_ckpt_cleaner back;
    static char out[PLOG_CKPT_CLEANER_MAX];
    struct err_detail ed;
    size_t len = 0;
    uint32_t i;
    int rv;

    err_detail_clear(&ed);
    rv = plog_ckpt_parse_cleaner(text, size, FUZZ_PATH, &c, &ed);
    if (rv != 0) {
        fuzz_refused(rv, &ed);
        return;
    }
    if (c.clean_offset < 0 || c.n_marks > PLOG_CLEAN_MARKS_MAX) {
        abort();
    }
    for (i = 0; i < c.n_marks; i++) {
        if (c.marks[i].offset < 0 ||
            (i > 0 && c.marks[i].offset <= c.marks[i - 1].offset)) {
            abort();
        }
    }
    memset(&back, 0, sizeof(back));
    if (plog_ckpt_format_cleaner(&c, out, sizeof(out), &len) != 0 ||
        len > size ||
        plog_ckpt_parse_cleaner(out, len, FUZZ_PATH, &back, &ed) != 0 ||
        back.clean_offset != c.clean_offset || back.n_marks != c.n_marks ||
        memcmp(back.marks, c.marks, c.n_marks * sizeof(c.marks[0])) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size > 0 ? size : 1);

    if (copy == NULL) {
        abort();
    }
    /* exactly the bytes decoded, so ASan sees any read past them */
    memcpy(copy, data, size);
    fuzz_offset(copy, size);
    fuzz_cleaner(copy, size);
    free(copy);
    return 0;
}
