/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the consumer protocol's bytes (ConsumerSubscription and
 * ConsumerAssignment, client/assignor.h). The input goes to both decoders.
 * Oracles: only WEIR_EMALFORMED or WEIR_ENOMEM on failure, with *out NULL;
 * anything accepted re-encodes and decodes to the same content; a decoded
 * subscription drives the sticky assignor, whose result is valid.
 * Seeds in corpus/consumer_protocol/ come from the writer at the end of
 * this file. From the top of the tree, with a build in build/:
 *   cc -std=c11 -D_DEFAULT_SOURCE -I. -Ibuild \
 *      -DFUZZ_CONSUMER_PROTOCOL_WRITE_SEEDS \
 *      tests/fuzz/fuzz_consumer_protocol.c build/client/libweir_client.a \
 *      build/common/libweir_common.a build/libweir_proto.a \
 *      $(pkg-config --libs libisal inih libprotobuf-c) -o /tmp/seeds
 *   /tmp/seeds tests/fuzz/corpus/consumer_protocol */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/assignor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fuzz_tps_equal(const struct asg_tp *a,
                           size_t na,
                           const struct asg_tp *b,
                           size_t nb)
{
    size_t i;

    if (na != nb) {
        return false;
    }
    for (i = 0; i < na; i++) {
        if (strcmp(a[i].topic, b[i].topic) != 0 ||
            a[i].partition != b[i].partition) {
            return false;
        }
    }
    return true;
}

/* The member gets every partition of the topics it names (at most 4 each)
 * and nothing else. */
static void fuzz_assign(const struct asg_subscription *s)
{
    struct asg_topic *topics;
    struct asg_member m;
    struct asg_result r;
    size_t i;
    size_t n = 0;
    int rv;

    topics = calloc(s->n_topics + 1, sizeof(*topics));
    if (topics == NULL) {
        return;
    }
    for (i = 0; i < s->n_topics; i++) {
        if (i > 0 && strcmp(s->topics[i - 1], s->topics[i]) >= 0) {
            break; /* assign refuses duplicate topics; keep a sorted run */
        }
        topics[n].name = s->topics[i];
        topics[n].partitions = (int32_t)(strlen(s->topics[i]) % 5);
        n++;
    }
    asg_subscription_member(s, "m", &m);
    rv = asg_assign(ASG_STICKY, &m, 1, topics, n, &r);
    if (rv == 0) {
        size_t want = 0;

        for (i = 0; i < n; i++) {
            want += (size_t)topics[i].partitions;
        }
        if (r.n != want) {
            abort();
        }
        asg_results_free(&r, 1);
    } else if (rv != WEIR_ENOMEM) {
        abort();
    }
    free(topics);
}

static void fuzz_subscription(const uint8_t *data, size_t size)
{
    struct asg_subscription *s = (void *)1;
    struct asg_subscription *back = NULL;
    struct weir_buf b;
    size_t i;
    int rv;

    rv = asg_decode_subscription(data, size, &s);
    if (rv != 0) {
        if ((rv != WEIR_EMALFORMED && rv != WEIR_ENOMEM) || s != NULL) {
            abort();
        }
        return;
    }
    buf_init(&b);
    rv = asg_encode_subscription(s->topics, s->n_topics, s->owned, s->n_owned,
                                 s->generation, &b);
    if (rv == 0) {
        rv = asg_decode_subscription(b.data, b.len, &back);
        if (rv == 0) {
            if (back->n_topics != s->n_topics ||
                back->generation != s->generation ||
                !fuzz_tps_equal(back->owned, back->n_owned, s->owned,
                                s->n_owned)) {
                abort();
            }
            for (i = 0; i < s->n_topics; i++) {
                if (strcmp(back->topics[i], s->topics[i]) != 0) {
                    abort();
                }
            }
        }
    }
    if (rv != 0 && rv != WEIR_ENOMEM) {
        abort();
    }
    asg_subscription_free(back);
    buf_fini(&b);
    fuzz_assign(s);
    asg_subscription_free(s);
}

static void fuzz_assignment(const uint8_t *data, size_t size)
{
    struct asg_assignment *a = (void *)1;
    struct asg_assignment *back = NULL;
    struct weir_buf b;
    int rv;

    rv = asg_decode_assignment(data, size, &a);
    if (rv != 0) {
        if ((rv != WEIR_EMALFORMED && rv != WEIR_ENOMEM) || a != NULL) {
            abort();
        }
        return;
    }
    buf_init(&b);
    rv = asg_encode_assignment(a->tps, a->n, &b);
    if (rv == 0) {
        rv = asg_decode_assignment(b.data, b.len, &back);
        if (rv == 0 && !fuzz_tps_equal(back->tps, back->n, a->tps, a->n)) {
            abort();
        }
    }
    if (rv != 0 && rv != WEIR_ENOMEM) {
        abort();
    }
    asg_assignment_free(back);
    buf_fini(&b);
    asg_assignment_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_subscription(data, size);
    fuzz_assignment(data, size);
    return 0;
}

#ifdef FUZZ_CONSUMER_PROTOCOL_WRITE_SEEDS
static void
fuzz_seed_write(const char *dir, const char *name, const struct weir_buf *b)
{
    char path[1024];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(b->data, 1, b->len, f) != b->len ||
        fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    static const char *const topics[] = {"orders", "payments", "t0"};
    static const struct asg_tp owned[] = {
        {"orders", 0}, {"orders", 2}, {"payments", 1}, {"t0", 7}};
    struct weir_buf b;

    if (argc != 2) {
        (void)fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    buf_init(&b);
    if (asg_encode_subscription(topics, 1, NULL, 0, -1, &b) != 0) {
        return 1;
    }
    fuzz_seed_write(argv[1], "subscription-one-topic", &b);
    buf_reset(&b);
    if (asg_encode_subscription(topics, 3, owned, 4, 12, &b) != 0) {
        return 1;
    }
    fuzz_seed_write(argv[1], "subscription-sticky", &b);
    buf_reset(&b);
    if (asg_encode_assignment(owned, 4, &b) != 0) {
        return 1;
    }
    fuzz_seed_write(argv[1], "assignment", &b);
    buf_reset(&b);
    if (asg_encode_assignment(owned, 1, &b) != 0) {
        return 1;
    }
    fuzz_seed_write(argv[1], "assignment-one", &b);
    buf_fini(&b);
    return 0;
}
#endif
