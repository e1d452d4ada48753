/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the metadata log (ctl_log*.c only): the layout of struct ctl_log
 * and the helpers its files share. Two views of one directory:
 *   entries  what is durable: every frame after the snapshot, as Raft
 *            entries (index, term, type, data), kept in memory too;
 *   records  what is applied: the records of the entries applied to the
 *            image since the snapshot, as brokers fetch them, and their
 *            chain values.
 * A single controller (ctl_log_open) applies each entry as it appends it;
 * a quorum member (ctl_log_raft_open) applies entries once committed.
 * Locality: the controller loop thread. */
#ifndef CONTROLLER_CTL_LOG_INT_H
#define CONTROLLER_CTL_LOG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "controller/ctl_chain.h"
#include "controller/ctl_log.h"
#include "controller/ctl_log_frame.h"
#include "controller/meta/meta_image.h"
#include "controller/quorum/raft.h"

/* One durable entry after the snapshot. */
struct ctl_log_ent {
    uint64_t index;
    uint64_t term;
    uint64_t file_at; /* its frame's first byte in metadata.log */
    size_t data_at;   /* its data in ent_data */
    uint32_t len;
    uint8_t type; /* enum raft_entry_type */
};

struct ctl_log {
    char *dir;
    char *log_path;
    char *snap_path;
    int fd;              /* metadata.log, O_RDWR */
    uint64_t file_bytes; /* end of the last whole frame */
    bool raft;           /* apply on commit (ctl_log_raft_open) */
    uint32_t n_voters;   /* raft: the voter ids, in raft_config order */
    uint32_t voters[RAFT_MAX_VOTERS];
    /* records: applied */
    int64_t start;       /* first offset held (snapshot end) */
    int64_t end;         /* next offset */
    struct weir_buf mem; /* u32be length | record, for every held record */
    uint32_t *pos;       /* pos[i]: where record start + i begins in mem */
    uint32_t n_pos;
    uint32_t cap_pos;
    struct ctl_chain chain; /* values from a tail before the snapshot on */
    /* entries: durable */
    uint64_t snap_index; /* the snapshot's last entry (0: none) */
    uint64_t snap_term;
    uint64_t admitted[RAFT_MAX_VOTERS]; /* readmission table at applied */
    uint64_t applied;                   /* last entry applied to the image */
    struct ctl_log_ent *ents;
    uint32_t n_ents;
    uint32_t cap_ents;
    struct weir_buf ent_data;
    int64_t next_off; /* offset after the last NORMAL entry held */
};

/* ctl_log.c */
char *ctl_log_path(const char *dir, const char *name);
int ctl_log_slurp(const char *path,
                  bool missing_ok,
                  uint8_t **out,
                  size_t *len,
                  struct err_detail *ed);
int ctl_log_write_all(int fd,
                      const uint8_t *p,
                      size_t n,
                      uint64_t at,
                      const char *path,
                      struct err_detail *ed);
/* Forget every held record (the next one is at offset start). */
void ctl_log_forget(struct ctl_log *l, int64_t start);
uint64_t ctl_log_last_index(const struct ctl_log *l);
uint64_t ctl_log_last_term(const struct ctl_log *l);
/* Hold one more entry (copies data). Errors: WEIR_ENOMEM. */
int ctl_log_ent_push(struct ctl_log *l,
                     const struct raft_entry *e,
                     uint64_t file_at);
/* Forget entries from ents[k] on. */
void ctl_log_ent_cut(struct ctl_log *l, uint32_t k);
/* Apply entry ents[k] to img (NORMAL: records, held as applied; READMIT:
 * the readmission table). Errors: WEIR_ECORRUPT, WEIR_ENOMEM. */
int ctl_log_apply_ent(struct ctl_log *l,
                      uint32_t k,
                      struct meta_image *img,
                      struct err_detail *ed);

/* ctl_log_load.c */
int ctl_log_open_mode(const char *dir,
                      bool raft,
                      const uint32_t *voters,
                      uint32_t n_voters,
                      struct ctl_log **out,
                      struct meta_image **img,
                      struct ctl_log_stats *stats,
                      struct err_detail *ed);

/* ctl_log_snapshot.c */
/* The snapshot body (chain values, then the image) into *img; sets the
 * chain. Errors: WEIR_ECORRUPT, WEIR_ENOMEM. */
int ctl_log_load_snapshot(struct ctl_log *l,
                          const uint8_t *p,
                          size_t len,
                          struct meta_image **img,
                          struct err_detail *ed);
/* Write the snapshot of img (applied through index: index is the applied
 * index, or past the last entry when sealing) as the entry at index/term,
 * then rewrite metadata.log with the entries after it. A single
 * controller writes no Raft head (the file as before Raft). */
int ctl_log_snapshot_as(struct ctl_log *l,
                        const struct meta_image *img,
                        uint64_t index,
                        uint64_t term,
                        struct err_detail *ed);

#endif /* CONTROLLER_CTL_LOG_INT_H */
