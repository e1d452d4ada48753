/* SPDX-License-Identifier: Apache-2.0 */
/* Partition choice, pure functions. Keyed records: Kafka's murmur2 (seed
 * 0x9747b28c) of the key bytes, sign bit cleared, modulo the partition
 * count, so a key lands on the same partition number as with Kafka's Java
 * default partitioner. Keyless records: sticky round-robin, staying on one
 * partition until its batch has been handed to the network, then moving
 * to the next partition, which fills batches sooner than per-record
 * round-robin. Locality: any thread (no shared state). */
#ifndef CLIENT_PARTITIONER_H
#define CLIENT_PARTITIONER_H

#include <stddef.h>
#include <stdint.h>

/* Kafka's Utils.murmur2, as a signed 32-bit value. */
int32_t partitioner_murmur2(const void *key, size_t len);

/* Partition for a key among n (n > 0). */
int32_t partitioner_key(const void *key, size_t len, int32_t n);

/* Sticky state for keyless records of one topic. Embed; zero is fine. */
struct partitioner_sticky {
    int32_t current; /* partition keyless records go to now */
};

void partitioner_sticky_init(struct partitioner_sticky *s,
                             uint32_t seed,
                             int32_t n);
/* Partition for the next keyless record (n > 0). */
int32_t partitioner_sticky_next(struct partitioner_sticky *s, int32_t n);
/* A batch of partition p was sent: if keyless records were sticking to p,
 * move to the next partition. */
void partitioner_sticky_batch_sent(struct partitioner_sticky *s,
                                   int32_t p,
                                   int32_t n);

#endif /* CLIENT_PARTITIONER_H */
