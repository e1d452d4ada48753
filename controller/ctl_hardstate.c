/* SPDX-License-Identifier: Apache-2.0 */
/* raft-state: the hard state's codec (pure) and its file, read and
 * replaced through common/datadir.h. Format in ctl_hardstate.h. */
#include "controller/ctl_hardstate.h"

#include <string.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/datadir.h"
#include "common/mem.h"

#define CTL_HARDSTATE_CRC_AT (CTL_HARDSTATE_BYTES - 4)

void ctl_hardstate_encode(const struct raft_hard_state *hs,
                          uint8_t out[CTL_HARDSTATE_BYTES])
{
    wire_put_u32be(out, CTL_HARDSTATE_MAGIC);
    out[4] = 0;
    wire_put_u64be(out + 5, hs->term);
    wire_put_u32be(out + 13, hs->vote);
    wire_put_u64be(out + 17, hs->nonce);
    wire_put_u64be(out + 25, hs->readmit_term);
    wire_put_u32be(out + CTL_HARDSTATE_CRC_AT,
                   crc32c(out, CTL_HARDSTATE_CRC_AT));
}

static int ctl_hardstate_check(const struct raft_hard_state *hs,
                               int code,
                               struct err_detail *ed)
{
    if (hs->term >= RAFT_LIMIT || hs->vote > RAFT_MAX_ID ||
        (hs->term == 0 && hs->vote != 0)) {
        return err_set(ed, code, "term %llu vote %u",
                       (unsigned long long)hs->term, hs->vote);
    }
    /* readmitted in a term the member has seen, and only after a loss */
    if (hs->readmit_term > hs->term ||
        (hs->readmit_term != 0 && hs->nonce == 0)) {
        return err_set(ed, code, "readmit term %llu with term %llu nonce %llu",
                       (unsigned long long)hs->readmit_term,
                       (unsigned long long)hs->term,
                       (unsigned long long)hs->nonce);
    }
    return 0;
}

int ctl_hardstate_decode(const uint8_t *p,
                         size_t len,
                         struct raft_hard_state *hs,
                         struct err_detail *ed)
{
    memset(hs, 0, sizeof(*hs));
    if (len != CTL_HARDSTATE_BYTES) {
        return err_set(ed, WEIR_ECORRUPT, "%zu bytes, expected %d", len,
                       CTL_HARDSTATE_BYTES);
    }
    if (wire_get_u32be(p) != CTL_HARDSTATE_MAGIC || p[4] != 0) {
        return err_set(ed, WEIR_ECORRUPT, "bad magic or version %u", p[4]);
    }
    if (crc32c(p, CTL_HARDSTATE_CRC_AT) !=
        wire_get_u32be(p + CTL_HARDSTATE_CRC_AT)) {
        return err_set(ed, WEIR_ECORRUPT, "fails its CRC");
    }
    hs->term = wire_get_u64be(p + 5);
    hs->vote = wire_get_u32be(p + 13);
    hs->nonce = wire_get_u64be(p + 17);
    hs->readmit_term = wire_get_u64be(p + 25);
    if (ctl_hardstate_check(hs, WEIR_ECORRUPT, ed) != 0) {
        memset(hs, 0, sizeof(*hs));
        return WEIR_ECORRUPT;
    }
    return 0;
}

int ctl_hardstate_load(const char *dir,
                       struct raft_hard_state *hs,
                       bool *found,
                       struct err_detail *ed)
{
    char *p = NULL;
    size_t len = 0;
    int rv;

    memset(hs, 0, sizeof(*hs));
    rv = datadir_read(dir, CTL_HARDSTATE_FILE, &p, &len, found, ed);
    if (rv != 0 || !*found) {
        return rv;
    }
    rv = ctl_hardstate_decode((const uint8_t *)p, len, hs, ed);
    mem_free(p);
    if (rv != 0) {
        err_wrap(ed, "%s/%s", dir, CTL_HARDSTATE_FILE);
    }
    return rv;
}

int ctl_hardstate_save(const char *dir,
                       const struct raft_hard_state *hs,
                       struct err_detail *ed)
{
    uint8_t b[CTL_HARDSTATE_BYTES];
    int rv;

    rv = ctl_hardstate_check(hs, WEIR_EINVALID_ARGUMENT, ed);
    if (rv != 0) {
        return rv;
    }
    ctl_hardstate_encode(hs, b);
    return datadir_write(dir, CTL_HARDSTATE_FILE, b, sizeof(b), ed);
}
